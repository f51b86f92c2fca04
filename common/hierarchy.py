"""Hierarchy model: what a GEMM tiling costs in registers, occupancy and memory traffic. No GPU needed.

    Tiling(BM, BN, BK, WM, WN, WNITER, TM, TN, threads, vector=1, dtype_bytes=4, ...)   one tiling
      .check() (CourseError if inconsistent), .shared_bytes(), .WMITER, .warps, .k_step
    tiling_of(kernel, facts, **changes)   a kernel row's Tiling: its source's parameters (common.tiling)
                                     plus the model facts the source cannot say (see below)
    tiling(lab, "v7", BK=8), tilings(lab)   the same for a lab's kernels, facts from its table's HIERARCHY
    facts(lab, k), modelled(lab), described_variants(lab, k)   the facts; the kernels that have them
    ARCHS, arch_limits(arch, facts)  per-architecture occupancy limits (cuda_occupancy.h, CUDA 13.0)
    estimate_registers(t)            -> (registers per thread, {term: registers}): the formula below
    occupancy(arch, threads, registers, smem_static, smem_dynamic) -> Occupancy (blocks/SM, %, binding limit)
    traffic(t)                       -> dict: FMAs, shared loads and bytes per FMA, bytes per output, FLOP/B
    explore(t, arch, registers=None) -> one flat dict, the explorer's row (estimate or real registers)
    registers_from_ptxas(resources, entry=None) -> the real count from build.compile_cubin's report
    compare_with_ptxas(t, resources, arch)      -> estimate against ptxas, and occupancy with each

Units: "per k step" means one step of the inner loop: depth 1 for FFMA tilings (one outer product),
depth 16 for tensor-core tilings (one m16n16k16 fragment step). Bytes per output are per unit of K,
so FFMA and tensor tilings compare directly.
"""
from dataclasses import dataclass, replace
from math import ceil

from .errors import CourseError

# ---------------------------------------------------------------------------------------------
# Per-architecture limits. Source: CUDA 13.0 include/cuda_occupancy.h (cudaOccMaxBlocksPerMultiprocessor,
# cudaOccSMemAllocationGranularity, cudaOccRegAllocationGranularity, cudaOccAlignUpShmemSizeVoltaPlus,
# cudaOccSubPartitionsPerMultiprocessor) and the device properties it is fed (tooling-facts 4.1).
# ---------------------------------------------------------------------------------------------
KB = 1024
_COMMON = dict(max_threads_per_block=1024, registers_per_sm=65536, registers_per_block=65536,
               max_registers_per_thread=255, register_granularity=256, subpartitions=4,
               smem_granularity=128, smem_reserved_per_block=1 * KB, smem_per_block_default=48 * KB)
ARCHS = {
    # sm_75 (Turing): 1024 threads and 16 blocks per SM, shared memory allocated in 256-byte steps with no
    # per-block reserve, carveouts of 32 or 64 KB, a block may opt in to all 64 KB (the T4's device query)
    "sm_75": dict(_COMMON, max_threads_per_sm=1024, max_blocks_per_sm=16, smem_per_sm=64 * KB,
                  smem_granularity=256, smem_reserved_per_block=0,
                  smem_per_block_optin=64 * KB, carveouts_kb=(32, 64)),
    "sm_80": dict(_COMMON, max_threads_per_sm=2048, max_blocks_per_sm=32, smem_per_sm=164 * KB,
                  smem_per_block_optin=166912, carveouts_kb=(0, 8, 16, 32, 64, 100, 132, 164)),
    "sm_86": dict(_COMMON, max_threads_per_sm=1536, max_blocks_per_sm=16, smem_per_sm=100 * KB,
                  smem_per_block_optin=101376, carveouts_kb=(0, 8, 16, 32, 64, 100)),
    "sm_89": dict(_COMMON, max_threads_per_sm=1536, max_blocks_per_sm=24, smem_per_sm=100 * KB,
                  smem_per_block_optin=101376, carveouts_kb=(0, 8, 16, 32, 64, 100)),
    "sm_90": dict(_COMMON, max_threads_per_sm=2048, max_blocks_per_sm=32, smem_per_sm=228 * KB,
                  smem_per_block_optin=232448, carveouts_kb=(0, 8, 16, 32, 64, 100, 132, 164, 196, 228)),
    # sm_120: 24 blocks per SM in cuda_occupancy.h 13.0 and current CCCL (an older cudax copy said 32)
    "sm_120": dict(_COMMON, max_threads_per_sm=1536, max_blocks_per_sm=24, smem_per_sm=100 * KB,
                   smem_per_block_optin=101376, carveouts_kb=(0, 8, 16, 32, 64, 100)),
}


def arch_limits(arch, facts=None):
    """The table's limits for `arch`, with a real GPU's values (common.device.gpu_facts) on top."""
    if arch not in ARCHS:
        raise CourseError(f"no occupancy table for {arch}", hint=f"use one of {', '.join(ARCHS)}")
    lim = dict(ARCHS[arch])
    for ours, theirs in (("registers_per_sm", "registers_per_sm"), ("max_threads_per_sm", "threads_per_sm"),
                         ("smem_per_block_optin", "shared_per_block_optin")):
        if facts and facts.get(theirs):
            lim[ours] = facts[theirs]
    lim["max_warps_per_sm"] = lim["max_threads_per_sm"] // 32
    return lim


# ---------------------------------------------------------------------------------------------
# Tilings
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Tiling:
    """A GEMM tiling in the chapter's names.

    BM x BN x BK   block tile of C, and the K depth of one shared-memory phase
    WM x WN        the region of C one warp owns (v3..v6 have no explicit warp tile: it is the strip
                   their row-by-row thread numbering gives a warp, e.g. 16 x 128 for v5 and v6)
    WNITER         strips of WN/WNITER columns per warp tile (v7: 4); WMITER follows from the rest
    TM x TN        thread tile per strip (FFMA tilings); ignored for tensor-core tilings
    threads        threads per block
    vector         elements per shared-load instruction: 1 (LDS) or 4 (LDS.128 of floats)
    mma            None for FFMA; "m16n16k16" for a tensor-core tiling built of 16x16 fragments
                   (one WMMA m16n16k16 is two mma.m16n8k16, an A fragment is one ldmatrix.x4)
    copy           how tiles travel global -> shared: "registers" (load, then store), "cp.async"
                   (no registers), or "none" (no shared tile: fragments straight from global, t1)
    prefetch       the next tile's global loads stay in registers during the math (v7 V7_PREFETCH=1)
    stages         shared buffers per operand (double buffering: 2)
    a_transposed   As stored [BK][BM] (v6, v7) instead of [BM][BK]
    a_pad, b_pad   elements added to each shared row of As and Bs (bank-conflict padding)
    """
    name: str
    BM: int
    BN: int
    BK: int
    WM: int
    WN: int
    threads: int
    WNITER: int = 1
    TM: int = 1
    TN: int = 1
    vector: int = 1
    dtype_bytes: int = 4
    mma: str = None
    copy: str = "registers"
    prefetch: bool = False
    stages: int = 1
    a_transposed: bool = False
    a_pad: int = 0
    b_pad: int = 0
    note: str = ""

    @property
    def warps(self):
        return self.threads // 32

    @property
    def WMITER(self):
        """Strips along M (Boehm's WMITER): the warp tile's outputs over 32 lanes' TM x TN x WNITER."""
        if self.mma:
            return 1
        return max(1, (self.WM * self.WN) // (32 * self.TM * self.TN * self.WNITER))

    @property
    def k_step(self):
        """Depth of one inner-loop step: 1 for an outer product of FFMAs, 16 for a fragment step."""
        return 16 if self.mma else 1

    def shared_bytes(self):
        """Shared memory per block: As and Bs with their padding, times the number of stages."""
        if self.copy == "none":
            return 0
        a = self.BK * (self.BM + self.a_pad) if self.a_transposed else self.BM * (self.BK + self.a_pad)
        b = self.BK * (self.BN + self.b_pad)
        return self.stages * (a + b) * self.dtype_bytes

    def check(self):
        """Raise CourseError if the numbers do not describe a tiling (students edit these)."""
        def need(ok, text):
            if not ok:
                raise CourseError(f"tiling {self.name or '?'}: {text}", hint="change the tile sizes")
        need(min(self.BM, self.BN, self.BK, self.WM, self.WN, self.threads, self.WNITER, self.TM, self.TN) > 0,
             "every size must be positive")
        need(self.threads % 32 == 0, "threads must be a whole number of warps")
        need(self.BM % self.WM == 0 and self.BN % self.WN == 0, "the block tile must split into whole warp tiles")
        need((self.BM // self.WM) * (self.BN // self.WN) == self.warps,
             f"(BM/WM) x (BN/WN) = {(self.BM // self.WM) * (self.BN // self.WN)} warp tiles but {self.warps} warps")
        if self.mma:
            need(self.WM % 16 == 0 and self.WN % 16 == 0 and self.BK % 16 == 0,
                 "tensor-core warp tiles and BK are multiples of 16")
        else:
            need(self.WM * self.WN == 32 * self.TM * self.TN * self.WNITER * self.WMITER,
                 "32 lanes x TM x TN x WNITER x WMITER must cover the warp tile exactly once")
        return self


# ---------------------------------------------------------------------------------------------
# A kernel's tiling, derived from its source
# ---------------------------------------------------------------------------------------------
# The source says what it can (common.tiling reads BM, BN, BK, WM, WN, WNITER, TM, TN, THREADS,
# STAGES); the lab's model facts say the rest: a lab's table has HIERARCHY = {kernel name: facts},
# or a row gives Kernel(hierarchy=facts). The facts (all optional):
#   BM, BN, BK, WM, WN, WNITER, TM, TN, threads, stages, prefetch, vector   a number, or the name
#                  of the source constant that holds it ("TILE", "V7_PREFETCH")
#   warp="rows"    no explicit warp tile: threads are numbered row by row over a BN/TN-wide grid of
#                  thread tiles, so a warp owns a strip (v5: 2 thread rows x 16 = 16 x 128)
#   a_ld, b_ld     the source constant that is the row stride of the shared As / Bs tile (in
#                  elements): the pads are a_ld - BM (a_transposed) or a_ld - BK, and b_ld - BN
#   a_transposed, mma, copy, note   as the Tiling fields
#   variants       the entry points the tiling describes (default: all of them)
_SOURCE_NAME = {"BM": "BM", "BN": "BN", "BK": "BK", "WM": "WM", "WN": "WN", "WNITER": "WNITER", "TM": "TM",
                "TN": "TN", "threads": "THREADS", "stages": "STAGES"}
_NUMBERS = set(_SOURCE_NAME) | {"prefetch", "vector", "a_ld", "b_ld", "a_pad", "b_pad"}
_FACTS = _NUMBERS | {"warp", "a_transposed", "mma", "copy", "note", "variants"}


def _facts_of(k, facts):
    facts = dict(k.hierarchy if facts is None else facts)
    unknown = sorted(set(facts) - _FACTS)
    if unknown:
        raise CourseError(f"{k.name}: unknown hierarchy fact(s) {', '.join(unknown)}",
                          hint=f"the facts common.hierarchy reads: {', '.join(sorted(_FACTS))}")
    return facts


def tiling_of(k, facts=None, **changes):
    """The hierarchy Tiling of kernel row `k` (bound to a lab): its source's parameters (with the
    row's -D defines) plus the model facts (default: k.hierarchy). `changes` change it: a field
    (BK=8, vector=1) or a source parameter (V7_PREFETCH=1, STAGES=3). A change to a parameter the
    source declares goes to the source, so what it derives follows (AS_LD = BM + 4, STAGES). With
    any change, threads follow the warp tiles: one warp per WM x WN tile."""
    from .tiling import Tiling as SourceTiling
    facts = _facts_of(k, facts)
    src = k.tiling
    overrides, direct = {}, {}
    for name, value in changes.items():
        spec = facts.get(name, _SOURCE_NAME.get(name))
        if isinstance(spec, str) and name in _NUMBERS and src.has(spec) and (
                spec == _SOURCE_NAME.get(name) or spec in src.constants.tunable):
            overrides[spec] = int(value)
        elif name in _FACTS or name == "a_pad" or name == "b_pad":
            direct[name] = value
        elif src.has(name):
            overrides[name] = int(value)
        else:
            raise CourseError(f"{k.name} has no parameter {name}",
                              hint=f"change a tiling field ({', '.join(sorted(_NUMBERS))}) or one of its source's "
                                   f"parameters ({', '.join(src.constants.tunable) or 'none'})")
    src = SourceTiling.of(src.source, {**src.overrides, **overrides})

    def read(field, default=None):
        if field in direct:
            return direct[field]
        spec = facts.get(field, _SOURCE_NAME.get(field))
        if isinstance(spec, str) and field in _NUMBERS:
            if src.has(spec):
                return src.value(spec)
            if field in facts:
                raise CourseError(f"{k.source} does not define {spec} (the model reads {field} from it)",
                                  hint="fix the lab's HIERARCHY facts or the kernel file")
            return default
        return spec if field in facts else default

    t = {f: read(f) for f in ("BM", "BN", "BK", "WM", "WN", "threads")}
    t.update(WNITER=read("WNITER", 1), TM=read("TM", 1), TN=read("TN", 1), vector=read("vector", 1),
             stages=read("stages", 1), prefetch=bool(read("prefetch", False)),
             a_transposed=bool(read("a_transposed", False)), mma=read("mma"), copy=read("copy", "registers"),
             note=read("note", ""))
    if facts.get("warp") == "rows" and (t["WM"] is None or t["WN"] is None):
        per_row = t["BN"] // t["TN"]                     # thread tiles across the block tile
        strip = (t["TM"], 32 * t["TN"]) if per_row >= 32 else ((32 // per_row) * t["TM"], t["BN"])
        t["WM"] = t["WM"] if t["WM"] is not None else strip[0]
        t["WN"] = t["WN"] if t["WN"] is not None else strip[1]
    missing = [f for f in ("BM", "BN", "BK", "WM", "WN", "threads") if t[f] is None]
    if missing:
        raise CourseError(f"{k.name}: the model needs {', '.join(missing)}, and neither {k.source} nor the lab's "
                          "HIERARCHY facts say", hint="give them as facts (a number or a source constant's name)")
    a_ld, b_ld = read("a_ld"), read("b_ld")
    t["a_pad"] = direct.get("a_pad", a_ld - (t["BM"] if t["a_transposed"] else t["BK"]) if a_ld else 0)
    t["b_pad"] = direct.get("b_pad", b_ld - t["BN"] if b_ld else 0)
    if changes and "threads" not in direct and t["WM"] and t["WN"] and t["BM"] % t["WM"] == 0 and t["BN"] % t["WN"] == 0:
        t["threads"] = (t["BM"] // t["WM"]) * (t["BN"] // t["WN"]) * 32
    return Tiling(name=k.name, dtype_bytes=k.prec.element_bytes, **t).check()


def facts(lab, k):
    """The model facts of one of the lab's kernels: the table's HIERARCHY[name], else the row's own."""
    k = lab.kernel(k) if isinstance(k, str) else k
    return lab.option("HIERARCHY", {}).get(k.base_name, k.hierarchy)


def modelled(lab):
    """The lab's kernels the hierarchy model describes (those with facts), in table order."""
    return [k for k in lab.all_kernels if facts(lab, k)]


def tiling(lab, name, **changes):
    """tiling_of one of the lab's kernels with its facts: tiling(lab, "v7", BK=8)."""
    k = lab.kernel(name)
    if not facts(lab, k):
        raise CourseError(f"the hierarchy model has no facts for {k.name}",
                          hint=f"it describes {', '.join(x.name for x in modelled(lab)) or 'none'} (HIERARCHY in the lab's table)")
    return tiling_of(k, facts(lab, k), **changes)


def tilings(lab):
    """{name: Tiling} for every kernel of the lab the model describes."""
    return {k.name: tiling_of(k, facts(lab, k)) for k in modelled(lab)}


def described_variants(lab, k):
    """The entry points (variants) of k that its tiling describes (facts' "variants", default all)."""
    k = lab.kernel(k) if isinstance(k, str) else k
    return list(facts(lab, k).get("variants", k.variants))


# ---------------------------------------------------------------------------------------------
# Registers: an estimate, to be compared with ptxas
# ---------------------------------------------------------------------------------------------
# The formula (tooling-facts 4.3, with the staging term made explicit): registers live at the
# busiest point of the inner loop.
#   accumulators  TM*TN*WMITER*WNITER floats (FFMA), or WM*WN/32 floats per lane (tensor cores:
#                 the warp's C tile spread over its 32 lanes)
#   operands      FFMA: the TM*WMITER + TN*WNITER values of A and B for one k, TWICE: once the k
#                 loop is unrolled, ptxas loads step k+1's operands while step k's FMAs run (the
#                 instruction-level parallelism of chapter 8, section 3), so two sets are live.
#                 Tensor cores: 4 registers per 16x16 FP16 fragment (256 halves / 32 lanes / 2 per
#                 register), WM/16 of A and WN/16 of B, once: nvcc 13 does not double-buffer
#                 WMMA fragments in lab 7's kernels (ptxas says so).
#   staging       the tile copy through registers: (BM*BK + BK*BN)/threads elements per thread
#                 per phase (0 for cp.async, which bypasses registers). Without prefetch the copy
#                 is done before the math starts, so staging and operands are not live together:
#                 max(operands, staging). With prefetch (v7's V7_PREFETCH=1) they add up.
#   overhead      OVERHEAD registers for pointers (64-bit: two registers each), indices, loop
#                 counters, M, N, K and guards (tooling-facts 4.3: "about 20-35").
# The constants were fitted once against nvcc 13.0's ptxas on lab 7's kernels for sm_80..sm_120:
# every default kernel within 16 % of ptxas (the lab's test allows max(8 registers, 20 %)), and
# ptxas itself varies that much between architectures for one source (v6: 107 on sm_120, 127 on
# sm_86). Tuning variants with bigger tiles are off by more (ptxas keeps more live than the
# formula counts: t3 with WN = 64 takes 223-246 against 188), which is the point of showing both.
# ptxas allocates what it needs; occupancy() then rounds each warp's registers
# up to 256. Over 255 per thread means spills to local memory.
OVERHEAD = 28
FFMA_OPERAND_SETS = 2


def estimate_registers(t):
    """(registers per thread, {"accumulators", "operands", "staging", "overhead"}) for tiling t."""
    if t.mma:
        acc = t.WM * t.WN // 32                       # fp32 accumulators per lane
        regs_per_frag = 16 * 16 * t.dtype_bytes // 32 // 4   # 16x16 halves over 32 lanes: 4 registers
        operands = (t.WM // 16 + t.WN // 16) * regs_per_frag
    else:
        acc = t.TM * t.TN * t.WMITER * t.WNITER
        operands = FFMA_OPERAND_SETS * (t.TM * t.WMITER + t.TN * t.WNITER)
    staging = 0
    if t.copy == "registers":
        staging = ceil((t.BM * t.BK + t.BK * t.BN) * t.dtype_bytes / 4 / t.threads)
    live = operands + staging if t.prefetch else max(operands, staging)
    parts = {"accumulators": acc, "operands": operands, "staging": staging, "overhead": OVERHEAD}
    return acc + live + OVERHEAD, parts


def registers_from_ptxas(resources, entry=None):
    """The register count from build.compile_cubin's report: {entry: {"registers": ..}} or one entry's
    dict. With several entries (vec/scalar variants) and no `entry`, the largest count."""
    if "registers" in resources:
        return resources["registers"]
    if entry is not None:
        return resources[entry]["registers"]
    return max(r["registers"] for r in resources.values())


# ---------------------------------------------------------------------------------------------
# Occupancy, as cuda_occupancy.h computes it (cudaOccMaxActiveBlocksPerMultiprocessor)
# ---------------------------------------------------------------------------------------------

@dataclass
class Occupancy:
    arch: str
    threads: int
    registers: int
    smem_bytes: int                 # static + dynamic, as the kernel asks
    blocks_per_sm: int
    warps_per_sm: int
    max_warps_per_sm: int
    limits: dict                    # blocks per SM allowed by each resource
    binding: list                   # the resources whose limit is the result
    registers_per_warp: int         # allocated: rounded up to 256
    smem_per_block: int             # allocated: + 1 KB reserved, rounded up to 128 B
    carveout: int                   # shared memory per SM the calculation used
    why_zero: str = ""

    @property
    def fraction(self):
        return self.warps_per_sm / self.max_warps_per_sm

    def __str__(self):
        if self.blocks_per_sm == 0:
            return f"{self.arch}: the block does not fit ({self.why_zero})"
        blocks = f"{self.blocks_per_sm} block{'s' if self.blocks_per_sm != 1 else ''}"
        return (f"{self.arch}: {blocks} x {ceil(self.threads / 32)} warps = {self.warps_per_sm}/"
                f"{self.max_warps_per_sm} warps ({100 * self.fraction:.0f} %), limited by {', '.join(self.binding)}")


def _round_up(x, m):
    return -(-x // m) * m


def occupancy(arch, threads, registers, smem_static=0, smem_dynamic=0, carveout_percent=None, facts=None):
    """Blocks per SM for a launch of `threads` with `registers` per thread and the given shared memory.

    cuda_occupancy.h step by step (tooling-facts 4.2):
      warps:     floor(max warps per SM / warps per block)
      registers: each warp gets R*32 rounded up to 256 registers; the 64K registers are split over
                 4 sub-partitions (SMSPs), so floor(16384 / per-warp) warps fit per SMSP, x4 per SM,
                 then divided by warps per block. 0 if the block needs more than 64K registers
                 (checked with warps rounded up to a multiple of 4, as the hardware does) or R > 255.
      shared:    per block: static + dynamic + 1 KB reserved, rounded up to 128 B. The SM's carveout
                 is the preferred one (default: the maximum) if one block fits in it, else the
                 smallest carveout step that holds one block. 0 if over the per-block limit
                 (48 KB without opt-in, the opt-in maximum if dynamic memory asks for more).
      blocks:    the architecture's maximum resident blocks per SM.
    """
    lim = arch_limits(arch, facts)
    W = ceil(threads / 32)
    limits, why = {}, ""
    # warps
    limits["warps"] = lim["max_warps_per_sm"] // W if threads <= lim["max_threads_per_block"] else 0
    if limits["warps"] == 0:
        why = f"{threads} threads per block is over the limit"
    # registers
    per_warp = _round_up(registers * 32, lim["register_granularity"])
    hardware_check = per_warp * _round_up(W, lim["subpartitions"])   # warps rounded up to 4, as the hardware checks
    if registers > lim["max_registers_per_thread"] or hardware_check > lim["registers_per_block"]:
        limits["registers"] = 0
        why = why or f"{registers} registers x {threads} threads is over the 64K registers of a block"
    elif per_warp == 0:
        limits["registers"] = 10 ** 9
    else:
        per_smsp = (lim["registers_per_sm"] // lim["subpartitions"]) // per_warp
        limits["registers"] = per_smsp * lim["subpartitions"] // W
    # shared memory
    smem = smem_static + smem_dynamic
    smem_alloc = _round_up(smem + lim["smem_reserved_per_block"], lim["smem_granularity"])
    per_block_max = lim["smem_per_block_optin"] if smem > lim["smem_per_block_default"] else lim["smem_per_block_default"]
    steps = [s * KB for s in lim["carveouts_kb"]]
    pref = lim["smem_per_sm"] if carveout_percent is None else lim["smem_per_sm"] * carveout_percent // 100
    pref = next((s for s in steps if s >= pref), steps[-1])          # aligned up to a carveout step
    carveout = pref if pref >= smem_alloc else next((s for s in steps if s >= smem_alloc), 0)
    if smem_alloc > per_block_max + lim["smem_reserved_per_block"] or carveout == 0:
        limits["shared memory"] = 0
        why = why or f"{smem} B of shared memory is over the per-block limit of {per_block_max} B"
    else:     # no shared memory at all (sm_75 reserves none per block): it limits nothing
        limits["shared memory"] = carveout // smem_alloc if smem_alloc else lim["max_blocks_per_sm"]
    limits["blocks"] = lim["max_blocks_per_sm"]
    blocks = min(limits.values())
    binding = [k for k, v in limits.items() if v == blocks]
    return Occupancy(arch=arch, threads=threads, registers=registers, smem_bytes=smem, blocks_per_sm=blocks,
                     warps_per_sm=blocks * W, max_warps_per_sm=lim["max_warps_per_sm"], limits=limits,
                     binding=binding, registers_per_warp=per_warp, smem_per_block=smem_alloc, carveout=carveout,
                     why_zero=why if blocks == 0 else "")


# ---------------------------------------------------------------------------------------------
# Traffic: shared loads per FMA, bytes per output, global intensity
# ---------------------------------------------------------------------------------------------

def traffic(t):
    """Per k step of one warp, and the ratios the chapter uses. Keys:

    fma_per_step            multiply-adds per warp per k step (WM*WN*k_step)
    math_instructions       FFMA, or HMMA.16816 (= mma.m16n8k16) instructions per warp per step
    loads_from              "shared", or "global" for a tiling with no shared tile (t1)
    shared_loads            shared-load instructions per warp per step: LDS / LDS.128 per thread
                            (every lane issues the same ones), or ldmatrix.x4 per 16x16 fragment
                            (t1: its WMMA fragment loads, from global memory)
    loads_per_fma           shared loads per math instruction: v5 0.25, v6 4/64, v7 6/128
    shared_bytes_per_fma    bytes the lanes request from shared memory per multiply-add
    bytes_per_output_thread / _warp / _block   bytes per output per unit of K: what one thread
                            requests (no broadcast), what its warp needs once each (perfect
                            broadcast), what the block brings in from global memory
    global_flop_per_byte    FLOP per byte of A and B read from global if nothing hits in L2
                            (the block tile's reuse only; t1 has none beyond its warp tile)
    """
    b = t.dtype_bytes
    fma = t.WM * t.WN * t.k_step
    if t.mma:
        loads = t.WM // 16 + t.WN // 16                      # one ldmatrix.x4 per 16x16 fragment
        requested = (t.WM + t.WN) * t.k_step * b             # ldmatrix moves each element once
        math = (t.WM // 16) * (t.WN // 8)                    # m16n8k16 instructions
        thread_view = None                                   # no thread tile
    else:
        m_vals, n_vals = t.TM * t.WMITER, t.TN * t.WNITER    # values a thread reads per k
        loads = t.WMITER * ceil(t.TM / t.vector) + t.WNITER * ceil(t.TN / t.vector)
        requested = 32 * (m_vals + n_vals) * b
        math = m_vals * n_vals                               # FFMA per thread = per warp (warp instructions)
        thread_view = b * (m_vals + n_vals) / (m_vals * n_vals)
    if t.copy == "none":   # fragments from global: the warp tile is all the reuse there is
        block_view, intensity = None, 2 * t.WM * t.WN / ((t.WM + t.WN) * b)
    else:
        block_view, intensity = b * (t.BM + t.BN) / (t.BM * t.BN), 2 * t.BM * t.BN / ((t.BM + t.BN) * b)
    return {
        "loads_from": "global" if t.copy == "none" else "shared",
        "fma_per_step": fma,
        "math_instructions": math,
        "shared_loads": loads,
        "loads_per_fma": loads / math,
        "shared_bytes_per_fma": requested / fma,
        "bytes_per_output_thread": thread_view,
        "bytes_per_output_warp": b * (t.WM + t.WN) / (t.WM * t.WN),
        "bytes_per_output_block": block_view,
        "global_flop_per_byte": intensity,
    }


def explore(t, arch, registers=None, facts=None):
    """Everything about tiling t on arch in one flat dict. `registers`: a real count (ptxas), or
    None to use the estimate. An estimate over 255 means ptxas would cap it at 255 and spill the
    rest to local memory: occupancy is computed with 255 and spills_expected says so."""
    t.check()
    est, parts = estimate_registers(t)
    regs = est if registers is None else registers
    smem_static = 0 if t.copy == "cp.async" else t.shared_bytes()     # cp.async tiles: dynamic shared memory
    occ = occupancy(arch, t.threads, min(regs, 255), smem_static, t.shared_bytes() - smem_static, facts=facts)
    return {"name": t.name, "arch": arch, "threads": t.threads, "registers_estimate": est,
            "registers": regs, "registers_source": "estimate" if registers is None else "ptxas",
            **{f"reg_{k}": v for k, v in parts.items()}, "spills_expected": regs > 255,
            "smem_bytes": t.shared_bytes(), "blocks_per_sm": occ.blocks_per_sm, "warps_per_sm": occ.warps_per_sm,
            "occupancy": occ.fraction, "binding": ", ".join(occ.binding),
            **{f"limit_{k.replace(' ', '_')}": v for k, v in occ.limits.items()}, **traffic(t)}


def compare_with_ptxas(t, resources, arch, entry=None):
    """The estimate against ptxas's count for tiling t: the difference, and both occupancies."""
    est, _ = estimate_registers(t)
    real = registers_from_ptxas(resources, entry)
    smem_static = 0 if t.copy == "cp.async" else t.shared_bytes()
    dyn = t.shared_bytes() - smem_static
    return {"name": t.name, "arch": arch, "estimate": est, "ptxas": real, "difference": est - real,
            "relative": (est - real) / real,
            "occupancy_estimate": occupancy(arch, t.threads, est, smem_static, dyn),
            "occupancy_ptxas": occupancy(arch, t.threads, real, smem_static, dyn)}
