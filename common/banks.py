"""Bank model: how many shared-memory wavefronts one warp instruction costs, and why. No GPU needed.

    bank_of(address) -> 0..31                     (address / 4) % 32
    analyze(addresses, width, merge=True) -> Access   a warp's LDS/STS: 32 byte addresses (None:
                                                  inactive lane), width 4, 8 or 16 bytes per lane
    analyze_ldmatrix(row_addresses) -> Access     an ldmatrix: 8, 16 or 32 row addresses of 16 bytes
    xor_swizzle(address, line_bytes=128)          the 16-byte chunk index XOR the row (line) index
    SharedAccess(function, kwargs, instruction, width, what)   one warp instruction of a lab's kernel:
                                                  .addresses(), .evaluate(merge) -> Access
    A lab's accesses live in its table (lab 7: models.py): BANK_ACCESSES {name: SharedAccess} and
    BANK_MAIN_LOOPS {kernel: [(access name, instructions per phase, "ld" or "st")]}:
    accesses(lab), evaluate(lab, name), access_rows(lab, prefix="")   the accesses -> Access / rows
    main_loops(lab), predict_kernel(lab, kernel)  per kernel, one phase of the main loop: shared
                                                  instructions and wavefronts, loads and stores, to
                                                  compare with ncu's wavefronts per instruction

The model, and where it comes from
  Shared memory has 32 banks of 4 bytes; bank = (address / 4) % 32. Each wavefront (one pass of
  the shared-memory pipeline, 128 bytes) serves, per bank, one 4-byte word. Lanes that read the
  same word share it (broadcast: free). Two lanes that need different words of the same bank
  need two wavefronts (a 2-way bank conflict). CUDA C++ Programming Guide, "Shared Memory"
  (compute capability 5.x and later).
  Wider accesses are split into phases of 128 bytes, because a wavefront returns at most 128
  bytes (one 4-byte register per lane per pass):
    4 bytes:  the whole warp in one phase.
    8 bytes:  two phases, lanes 0-15 and 16-31 (half warps).
    16 bytes: four phases, lanes 0-7, 8-15, 16-23, 24-31 (quarter warps).
  Bank conflicts are counted inside each phase; each phase costs at least one wavefront. So a
  full warp's conflict-free LDS.32 / LDS.64 / LDS.128 costs 1 / 2 / 4 wavefronts, the "ideal"
  counts Nsight Compute's documentation uses (tooling-facts 1.4, 5).
  Merging (merge=True): two phases are served as one when the warp's addresses repeat in pairs,
  i.e. for every active lane i, lane i^1 is inactive or has the same address (or the same with
  lane i^2). For 8 bytes the two half warps merge; for 16 bytes the two quarters of each half warp
  merge, and the halves never do. Source: an NVIDIA engineer's answer on the NVIDIA developer forum
  ("Unexpected shared memory bank conflict", thread 77228, for compute capability 7.x: "LDS.128
  requires 4 requests per instruction ... if the guidelines are met the requests/instruction should
  reduce from 4 to 2") and later third-party measurements on Ampere (code.hitori.moe, "CUDA shared
  memory access mechanism with vectorized instructions"). Not re-measured here: the lab's ncu run
  (l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum) decides; merge=False gives the plain
  phase model to compare.
  ldmatrix: each 8x8 matrix is one phase (its 8 row addresses, 16 bytes each = 128 bytes); .x1,
  .x2, .x4 cost 1, 2, 4 wavefronts when conflict-free.
  Stores follow the same rule; two lanes writing the same word cost one access (one of them wins).
"""
from dataclasses import dataclass
from typing import Callable

from .errors import CourseError

BANKS = 32
BANK_BYTES = 4
WAVEFRONT_BYTES = 128


def bank_of(address):
    return (address // BANK_BYTES) % BANKS


@dataclass
class Access:
    """One warp instruction's cost in the bank model."""
    width: int              # bytes per lane (ldmatrix: 16 per row)
    wavefronts: int         # what it costs
    ideal: int              # what a full warp of this width costs with no conflict: 1, 2, 4 (ldmatrix: matrices)
    phases: int             # phases after the split and the merges; each costs at least one wavefront
    conflicts: int          # wavefronts - phases: the passes bank conflicts add
    ways: int               # the worst n-way conflict in any phase (1: none)
    unique_bytes: int       # distinct bytes the warp touches (broadcasts counted once)
    detail: list            # per phase: (lanes, {bank: [distinct word addresses]})

    def __str__(self):
        verdict = "no conflict" if self.conflicts == 0 else f"{self.ways}-way conflict, {self.conflicts} extra"
        return (f"{self.wavefronts} wavefront{'s' if self.wavefronts != 1 else ''} "
                f"(ideal {self.ideal}, {self.phases} phase{'s' if self.phases != 1 else ''}; {verdict})")


def _words(address, width):
    """The 4-byte words one lane's access covers (16 bytes: 4 words, in 4 consecutive banks)."""
    if address % width:
        raise ValueError(f"address {address} is not aligned to the access width {width}")
    return [address // BANK_BYTES + i for i in range(max(1, width // BANK_BYTES))]


def _phase_cost(lanes, addresses, width):
    """Wavefronts for one phase: per bank, the number of distinct words the phase needs."""
    per_bank = {}
    for lane in lanes:
        for word in _words(addresses[lane], width):
            per_bank.setdefault(word % BANKS, set()).add(word * BANK_BYTES)
    ways = max((len(w) for w in per_bank.values()), default=0)
    return ways, {b: sorted(w) for b, w in sorted(per_bank.items())}


def _pairs_repeat(addresses, xor, lanes):
    """True if for every active lane i in `lanes`, lane i^xor is inactive or has the same address."""
    return all(addresses[i ^ xor] is None or addresses[i ^ xor] == addresses[i]
               for i in lanes if addresses[i] is not None)


def _phases(addresses, width, merge):
    """Lists of active lanes served together, after the split by width and the pair merges."""
    size = {4: 32, 8: 16, 16: 8}[width]
    groups = [list(range(s, s + size)) for s in range(0, 32, size)]
    if merge and width in (8, 16):
        everyone = list(range(32))
        if _pairs_repeat(addresses, 1, everyone) or _pairs_repeat(addresses, 2, everyone):
            groups = [groups[i] + groups[i + 1] for i in range(0, len(groups), 2)]   # 16 B: within half warps
    return [[l for l in g if addresses[l] is not None] for g in groups]


def analyze(addresses, width=4, merge=True):
    """Wavefronts and conflicts of one warp instruction. addresses: 32 byte addresses in shared
    memory (None for an inactive lane); width: 4, 8 or 16 bytes per lane."""
    if len(addresses) != 32:
        raise ValueError("a warp has 32 lanes: give 32 addresses (None for an inactive lane)")
    if width not in (4, 8, 16):
        raise ValueError("width is 4, 8 or 16 bytes")
    detail, wavefronts, phases, ways = [], 0, 0, 1
    for lanes in _phases(addresses, width, merge):
        if not lanes:
            continue
        w, banks = _phase_cost(lanes, addresses, width)
        detail.append((lanes, banks))
        wavefronts += w
        phases += 1
        ways = max(ways, w)
    unique = {word for a in addresses if a is not None for word in _words(a, width)}
    return Access(width=width, wavefronts=wavefronts, ideal=32 * width // WAVEFRONT_BYTES, phases=phases,
                  conflicts=wavefronts - phases, ways=ways, unique_bytes=len(unique) * BANK_BYTES, detail=detail)


def analyze_ldmatrix(row_addresses):
    """An ldmatrix .x1/.x2/.x4: the 8, 16 or 32 row addresses (16 bytes each) of lanes 0.. in order.
    Each 8x8 matrix (8 consecutive lanes' rows) is one phase."""
    n = len(row_addresses)
    if n not in (8, 16, 32):
        raise ValueError("ldmatrix takes 8, 16 or 32 row addresses (.x1, .x2, .x4)")
    detail, wavefronts, ways = [], 0, 1
    for m in range(n // 8):
        lanes = list(range(8 * m, 8 * m + 8))
        w, banks = _phase_cost(lanes, row_addresses, 16)
        detail.append((lanes, banks))
        wavefronts += w
        ways = max(ways, w)
    unique = {word for a in row_addresses for word in _words(a, 16)}
    return Access(width=16, wavefronts=wavefronts, ideal=n // 8, phases=n // 8, conflicts=wavefronts - n // 8,
                  ways=ways, unique_bytes=len(unique) * BANK_BYTES, detail=detail)


def xor_swizzle(address, line_bytes=128):
    """Swizzled address: within each 128-byte group, the 16-byte chunk index (address bits 4-6) is
    XORed with the index of the address's line (address // line_bytes) mod 8. With line_bytes =
    the tile's row length (at least 128), 8 consecutive rows put the same logical chunk in 8
    different bank groups, so a column of 16-byte pieces (an ldmatrix phase) is conflict-free,
    while a row stays a permutation of itself (row-wise stores stay conflict-free). This is
    CUTLASS's Swizzle<3, 4, 3> for 128-byte lines; bits 0-3 (inside a chunk) never change."""
    if line_bytes < WAVEFRONT_BYTES or line_bytes % WAVEFRONT_BYTES:
        raise ValueError("line_bytes must be a multiple of 128")
    line = address // line_bytes
    return address ^ ((line % 8) << 4)


# ---------------------------------------------------------------------------------------------
# A lab's accesses: its table's BANK_ACCESSES and BANK_MAIN_LOOPS
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class SharedAccess:
    """One warp instruction of a kernel, as the lab describes it: a function returning the 32 byte
    addresses (ldmatrix: its row addresses) called with `kwargs`, the instruction ("LDS", "STS.128",
    "LDSM.x4" ...: LDSM means ldmatrix), the bytes per lane, and what it shows."""
    function: Callable
    kwargs: dict
    instruction: str
    width: int
    what: str = ""

    def addresses(self):
        return self.function(**self.kwargs)

    def evaluate(self, merge=True):
        a = self.addresses()
        return analyze_ldmatrix(a) if self.instruction.startswith("LDSM") else analyze(a, self.width, merge)


def accesses(lab):
    """{name: SharedAccess}: the lab's BANK_ACCESSES (empty if it has none)."""
    return lab.option("BANK_ACCESSES", {})


def access(lab, name):
    table = accesses(lab)
    if name not in table:
        raise CourseError(f"{lab.name} has no shared access {name!r}",
                          hint=f"its BANK_ACCESSES: {', '.join(table) or 'none'}")
    return table[name]


def evaluate(lab, name, merge=True):
    """The Access (wavefronts, conflicts) of one of the lab's BANK_ACCESSES."""
    return access(lab, name).evaluate(merge)


def access_rows(lab, merge=True, prefix=""):
    """Every BANK_ACCESSES entry (whose name starts with `prefix`) as a row for report.table:
    access, instruction, wavefronts, ideal, phases, conflicts, ways, what it shows."""
    rows = []
    for name, acc in accesses(lab).items():
        if not name.startswith(prefix):
            continue
        a = acc.evaluate(merge)
        rows.append({"access": name, "instruction": acc.instruction, "wavefronts": a.wavefronts, "ideal": a.ideal,
                     "phases": a.phases, "conflicts": a.conflicts, "ways": a.ways, "what": acc.what})
    return rows


def main_loops(lab):
    """{kernel: [(access name, instructions per warp and phase, "ld" or "st")]}: BANK_MAIN_LOOPS,
    one phase of each kernel's main loop as the lab's compiler compiles it."""
    return lab.option("BANK_MAIN_LOOPS", {})


def predict_kernel(lab, kernel, merge=True):
    """Per warp and main-loop phase: {"ld": {...}, "st": {...}} with instructions, wavefronts, the
    no-conflict ideal and wavefronts per instruction. Compare wavefronts per instruction with ncu:
    l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum / (smsp__inst_executed_op_shared_ld.sum +
    smsp__inst_executed_op_ldsm.sum), and the _st / shared_st pair for stores."""
    loops = main_loops(lab)
    if kernel not in loops:
        raise CourseError(f"{lab.name} has no main loop for {kernel} in BANK_MAIN_LOOPS",
                          hint=f"it has {', '.join(loops) or 'none'}")
    out = {}
    for name, count, op in loops[kernel]:
        a = evaluate(lab, name, merge)
        d = out.setdefault(op, {"instructions": 0, "wavefronts": 0, "ideal": 0, "accesses": []})
        d["instructions"] += count
        d["wavefronts"] += count * a.wavefronts
        d["ideal"] += count * a.ideal
        d["accesses"].append((name, count, a.wavefronts))
    for d in out.values():
        d["per_instruction"] = d["wavefronts"] / d["instructions"]
    return out
