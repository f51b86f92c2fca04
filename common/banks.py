"""Bank model: how many shared-memory wavefronts one warp instruction costs, and why. No GPU needed.

    bank_of(address) -> 0..31                     (address / 4) % 32
    analyze(addresses, width, merge=True) -> Access   a warp's LDS/STS: 32 byte addresses (None:
                                                  inactive lane), width 4, 8 or 16 bytes per lane
    analyze_ldmatrix(row_addresses) -> Access     an ldmatrix: 8, 16 or 32 row addresses of 16 bytes
    xor_swizzle(address, line_bytes=128)          the 16-byte chunk index XOR the row (line) index
    LAB_ACCESSES, lab_accesses()                  lab 7's shared accesses by name -> Access rows
    evaluate(name)                                one LAB_ACCESSES entry -> Access
    MAIN_LOOPS, predict_kernel(kernel)            per kernel, one phase of the main loop: shared
                                                  instructions and wavefronts, loads and stores, to
                                                  compare with ncu's wavefronts per instruction
    The lab's accesses, each a function returning one warp's addresses (bytes from the tile start):
      v5_as_read, v5_bs_read, v5_as_row_read, v5_as_store, v5_bs_store, v6_as_read, v6_bs_read,
      v6_as_store, bs_row_store, v7_as_read, v7_bs_read, v7_as_store, t2_a_fragment_rows,
      t2_b_fragment_rows, t2_as_store, t2_bs_store

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
# Lab 7's shared-memory accesses: one warp instruction each, byte offsets from the tile start.
# Defaults are the kernels' constants; warp 0, step k = 0 unless given. F = 4 bytes (float),
# H = 2 bytes (half).
# ---------------------------------------------------------------------------------------------
F, H = 4, 2


def v5_as_read(k=0, i=0, BK=8, TM=8, threads_per_row=16, warp=0):
    """v5's regM[i] = As[threadRow*TM + i][k], As[BM][BK]: the 16 lanes of a thread row read one word
    (broadcast); the warp's two thread rows are TM*BK = 64 words apart: the same bank."""
    out = []
    for lane in range(32):
        thread_row = (32 * warp + lane) // threads_per_row
        out.append(((thread_row * TM + i) * BK + k) * F)
    return out


def v5_bs_read(k=0, j=0, BN=128, TN=8, threads_per_row=16, warp=0):
    """v5's regN[j] = Bs[k][threadCol*TN + j]: 16 thread columns TN = 8 words apart (4-way: banks
    repeat every 32 words); the second half warp repeats the first (broadcast)."""
    return [(k * BN + ((32 * warp + lane) % threads_per_row) * TN + j) * F for lane in range(32)]


def v5_as_row_read(k0=0, i=0, BK=8, TM=8, threads_per_row=16, warp=0):
    """v5 as nvcc 13 compiles it: after unrolling k, As[threadRow*TM + i][k0 .. k0+3] is one LDS.128
    (4 values of k at once). The warp's two thread rows are TM*BK*4 = 256 bytes apart: same banks,
    but in different half warps, which are served separately anyway."""
    return [(((32 * warp + lane) // threads_per_row * TM + i) * BK + k0) * F for lane in range(32)]


def v5_as_store(r=0, BK=8, warp=0):
    """v5's copy As[aRow + r][aCol] = A[..], aRow = t / BK, aCol = t % BK: 32 consecutive words."""
    return [((32 * warp + lane) // BK * BK + r * BK + (32 * warp + lane) % BK) * F for lane in range(32)]


def v5_bs_store(r=0, BN=128, warp=0):
    """v5's copy Bs[bRow + r][bCol] = B[..], bRow = t / BN, bCol = t % BN: 32 consecutive words."""
    return [(((32 * warp + lane) // BN + r) * BN + (32 * warp + lane) % BN) * F for lane in range(32)]


def bs_row_store(BN=128, warp=0):
    """v6's and v7's STS.128 of a float4 of B: thread t writes Bs[t / (BN/4)][(t % (BN/4))*4 ..]: a warp
    covers 512 consecutive bytes, a quarter warp one 128-byte line."""
    return [((32 * warp + lane) // (BN // 4) * BN + ((32 * warp + lane) % (BN // 4)) * 4) * F for lane in range(32)]


def v6_as_read(k=0, i=0, AS_LD=132, TM=8, threads_per_row=16, warp=0):
    """v6's LDS.128 of As[k][threadRow*TM + i .. +3] from the transposed As[BK][AS_LD]: two distinct
    16-byte chunks per warp (two thread rows), each read by 16 lanes."""
    return [(k * AS_LD + ((32 * warp + lane) // threads_per_row) * TM + i) * F for lane in range(32)]


def v6_bs_read(k=0, j=0, BN=128, TN=8, threads_per_row=16, warp=0):
    """v6's LDS.128 of Bs[k][threadCol*TN + j .. +3]: 16 chunks 32 bytes apart; in each quarter warp
    lanes 0 and 4 (1 and 5, ...) are 128 bytes apart: the same banks, 2-way."""
    return [(k * BN + ((32 * warp + lane) % threads_per_row) * TN + j) * F for lane in range(32)]


def v6_as_store(j=0, AS_LD=132, BK=8, warp=0):
    """v6's transposed store of a float4 of A: thread t holds A[row t/(BK/4)][cols (t%(BK/4))*4 ..]
    and writes component j to As[col + j][row] (scalar STS). AS_LD = 132 (the kernel's BM + 4)
    puts the two column groups of a warp 16 banks apart; 128 would make them collide (2-way)."""
    out = []
    for lane in range(32):
        t = 32 * warp + lane
        row, col = t // (BK // 4), (t % (BK // 4)) * 4
        out.append(((col + j) * AS_LD + row) * F)
    return out


def v7_as_read(k=0, i=0, AS_LD=132, TM=8, lanes_n=4, WM=64, warp_row=0):
    """v7's LDS.128 of As[k][warpRow*WM + (lane/4)*TM + i ..]: 8 chunks 32 bytes apart, each read
    by the 4 lanes of one lane row (pairs repeat: the quarter warps of each half merge)."""
    return [(k * AS_LD + warp_row * WM + (lane // lanes_n) * TM + i) * F for lane in range(32)]


def v7_bs_read(k=0, strip=0, BN=128, TN=4, lanes_n=4, WN=64, WSUBN=16, warp_col=0):
    """v7's LDS.128 of Bs[k][warpCol*WN + strip*WSUBN + (lane%4)*TN ..]: 4 consecutive chunks
    (64 bytes), each read by 8 lanes."""
    return [(k * BN + warp_col * WN + strip * WSUBN + (lane % lanes_n) * TN) * F for lane in range(32)]


def v7_as_store(j=0, AS_LD=132, BK=16, warp=0):
    """v7's transposed store (BK = 16: 4 column groups per row of A): groups 0 and 2 (1 and 3) are
    2*AS_LD*4 words apart, the same bank with AS_LD = 132: 2-way (128 would make it 4-way)."""
    return v6_as_store(j=j, AS_LD=AS_LD, BK=BK, warp=warp)


def t2_a_fragment_rows(row_halves=40, swizzle=False):
    """The 32 row addresses of an ldmatrix.x4 of a 16x16 A fragment at the top-left of As (row
    length row_halves: 40 = BK + 8 padded, 32 unpadded). Lane l: &As[l%16][(l/16)*8]. With
    swizzle=True the tile is unpadded and xor_swizzle'd on 128-byte lines."""
    out = []
    for lane in range(32):
        a = ((lane % 16) * row_halves + (lane // 16) * 8) * H
        out.append(xor_swizzle(a, max(128, row_halves * H)) if swizzle else a)
    return out


def t2_b_fragment_rows(row_halves=136, swizzle=False):
    """The 32 row addresses of an ldmatrix.x4.trans of a 16x16 B fragment from Bs[k][n] (row length
    row_halves: 136 = BN + 8 padded, 128 unpadded): lane l: &Bs[l%16][(l/16)*8], 8 k-rows per phase."""
    out = []
    for lane in range(32):
        a = ((lane % 16) * row_halves + (lane // 16) * 8) * H
        out.append(xor_swizzle(a, max(128, row_halves * H)) if swizzle else a)
    return out


def t2_as_store(row_halves=40, swizzle=False, BK=32, warp=0):
    """t2's STS.128 of the A tile: chunk c = thread, row c/(BK/8), 8 halves at column (c%(BK/8))*8.
    Padded 80-byte rows make lane 7's chunk (row 1, bytes 128..143) share banks with lane 0's."""
    out = []
    for lane in range(32):
        c = 32 * warp + lane
        a = ((c // (BK // 8)) * row_halves + (c % (BK // 8)) * 8) * H
        out.append(xor_swizzle(a, max(128, row_halves * H)) if swizzle else a)
    return out


def t2_bs_store(row_halves=136, BN=128, warp=0):
    """t2's STS.128 of the B tile: chunk c = thread, row c/(BN/8), 8 halves at column (c%(BN/8))*8."""
    per_row = BN // 8
    return [(((32 * warp + lane) // per_row) * row_halves + ((32 * warp + lane) % per_row) * 8) * H
            for lane in range(32)]


# name -> (function, kwargs, kind, width, what it shows)
LAB_ACCESSES = {
    "v5 As[row][k] read":            (v5_as_read, {}, "LDS", 4, "two thread rows 64 words apart: broadcast, yet 2-way"),
    "v5 Bs[k][col] read":            (v5_bs_read, {}, "LDS", 4, "16 columns 8 words apart: 4-way"),
    "v5 As rows LDS.128 (compiled)": (v5_as_row_read, {}, "LDS.128", 16, "nvcc reads 4 k at once: 2 chunks, 256 B apart"),
    "v5 Bs[k][n] LDS.128 (compiled)": (v6_bs_read, {}, "LDS.128", 16, "nvcc merges regN: as v6"),
    "v5 As store":                   (v5_as_store, {}, "STS", 4, "32 consecutive words"),
    "v5 Bs store":                   (v5_bs_store, {}, "STS", 4, "32 consecutive words"),
    "v6 As[k][m] LDS.128":           (v6_as_read, {}, "LDS.128", 16, "two chunks, each read by 16 lanes"),
    "v6 Bs[k][n] LDS.128":           (v6_bs_read, {}, "LDS.128", 16, "chunks 32 B apart: 2-way in each quarter"),
    "v6 As store, rows of 132":      (v6_as_store, {}, "STS", 4, "the kernel's padded layout"),
    "v6 As store, rows of 128":      (v6_as_store, {"AS_LD": 128}, "STS", 4, "without the pad"),
    "v6/v7 Bs STS.128 store":        (bs_row_store, {}, "STS.128", 16, "512 consecutive bytes"),
    "v7 As[k][m] LDS.128":           (v7_as_read, {}, "LDS.128", 16, "8 chunks 32 B apart"),
    "v7 Bs[k][n] LDS.128":           (v7_bs_read, {}, "LDS.128", 16, "4 consecutive chunks"),
    "v7 As store, rows of 132":      (v7_as_store, {}, "STS", 4, "BK = 16: four column groups"),
    "v7 As store, rows of 128":      (v7_as_store, {"AS_LD": 128}, "STS", 4, "without the pad"),
    "t2 A fragment, rows of 40":     (t2_a_fragment_rows, {}, "LDSM.x4", 16, "padded by 8 halves"),
    "t2 A fragment, rows of 32":     (t2_a_fragment_rows, {"row_halves": 32}, "LDSM.x4", 16, "unpadded"),
    "t2 A fragment, swizzled":       (t2_a_fragment_rows, {"row_halves": 32, "swizzle": True}, "LDSM.x4", 16, "unpadded, XOR swizzle"),
    "t2 B fragment, rows of 136":    (t2_b_fragment_rows, {}, "LDSM.x4.trans", 16, "padded by 8 halves"),
    "t2 B fragment, rows of 128":    (t2_b_fragment_rows, {"row_halves": 128}, "LDSM.x4.trans", 16, "unpadded"),
    "t2 B fragment, swizzled":       (t2_b_fragment_rows, {"row_halves": 128, "swizzle": True}, "LDSM.x4.trans", 16, "unpadded, XOR swizzle"),
    "t2 As store, rows of 40":       (t2_as_store, {}, "STS.128", 16, "the pad costs the stores"),
    "t2 As store, rows of 32":       (t2_as_store, {"row_halves": 32}, "STS.128", 16, "unpadded"),
    "t2 As store, swizzled":         (t2_as_store, {"row_halves": 32, "swizzle": True}, "STS.128", 16, "unpadded, XOR swizzle"),
    "t2 Bs store, rows of 136":      (t2_bs_store, {}, "STS.128", 16, "padded: rows 272 bytes apart"),
}


def evaluate(name, merge=True):
    """The Access of one LAB_ACCESSES entry."""
    fn, kwargs, kind, width, _ = LAB_ACCESSES[name]
    addresses = fn(**kwargs)
    return analyze_ldmatrix(addresses) if kind.startswith("LDSM") else analyze(addresses, width, merge)


def lab_accesses(merge=True):
    """Every LAB_ACCESSES entry as a row for report.table: name, instruction, wavefronts, ideal,
    conflicts, ways, what it shows."""
    rows = []
    for name, (_, _, kind, _, what) in LAB_ACCESSES.items():
        a = evaluate(name, merge)
        rows.append({"access": name, "instruction": kind, "wavefronts": a.wavefronts, "ideal": a.ideal,
                     "phases": a.phases, "conflicts": a.conflicts, "ways": a.ways, "what": what})
    return rows


# One phase (one BK slice) of each kernel's main loop, per warp, as nvcc 13 compiles it for sm_90
# (cuobjdump -sass: v5's scalar loads become LDS.128, see its kernel header): (access, instructions,
# "ld" or "st"). Epilogues and edge paths are left out; at the bench sizes they are a small part.
# t3 copies with cp.async (LDGSTS, counted by ncu apart from STS), so only its loads are listed.
MAIN_LOOPS = {
    "v5": [("v5 As rows LDS.128 (compiled)", 16, "ld"), ("v5 Bs[k][n] LDS.128 (compiled)", 16, "ld"),
           ("v5 As store", 4, "st"), ("v5 Bs store", 4, "st")],
    "v6": [("v6 As[k][m] LDS.128", 16, "ld"), ("v6 Bs[k][n] LDS.128", 16, "ld"),
           ("v6 As store, rows of 132", 4, "st"), ("v6/v7 Bs STS.128 store", 1, "st")],
    "v7": [("v7 As[k][m] LDS.128", 32, "ld"), ("v7 Bs[k][n] LDS.128", 64, "ld"),
           ("v7 As store, rows of 132", 16, "st"), ("v6/v7 Bs STS.128 store", 4, "st")],
    "t2": [("t2 A fragment, rows of 40", 8, "ld"), ("t2 B fragment, rows of 136", 4, "ld"),
           ("t2 As store, rows of 40", 2, "st"), ("t2 Bs store, rows of 136", 2, "st")],
    "t3": [("t2 A fragment, rows of 40", 8, "ld"), ("t2 B fragment, rows of 136", 4, "ld")],
}


def predict_kernel(kernel, merge=True):
    """Per warp and main-loop phase: {"ld": {...}, "st": {...}} with instructions, wavefronts, the
    no-conflict ideal and wavefronts per instruction. Compare wavefronts per instruction with ncu:
    l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum / (smsp__inst_executed_op_shared_ld.sum +
    smsp__inst_executed_op_ldsm.sum), and the _st / shared_st pair for stores."""
    out = {}
    for name, count, op in MAIN_LOOPS[kernel]:
        a = evaluate(name, merge)
        d = out.setdefault(op, {"instructions": 0, "wavefronts": 0, "ideal": 0, "accesses": []})
        d["instructions"] += count
        d["wavefronts"] += count * a.wavefronts
        d["ideal"] += count * a.ideal
        d["accesses"].append((name, count, a.wavefronts))
    for d in out.values():
        d["per_instruction"] = d["wavefronts"] / d["instructions"]
    return out
