"""What `make tune` searches for c5 (kernels/c5_wide_epilogue.cu) on this GPU: data for
common.targets.Tuning, plus c5's static_asserts written once more in Python so that a configuration
the kernel would refuse is rejected before anything is compiled (CuTe takes 20-40 s of nvcc each).

    DEFAULTS               c5's parameters as its .cu file defines them (read from the file, not restated)
    derived(params)        THREADS, SMEM_BYTES, the accumulators per thread, B_COLS, as c5 computes them
    reason_illegal(params) -> None, or the sentence of the first c5 static_assert that params break
                           (the same checks, in the same order, as the .cu file)
    candidates()           -> [params]: {} (the worklog's configuration) first, then the sweep
    tag(params)            a stable name: c5t_128x256x16_16x16_s3_g8_b1_ak_o0

The sweep (_PLAN): the CTA tile (128 x 128, 128 x 256, 256 x 128), the MMA thread layout (16 x 16 and
32 x 8 threads of 256; 16 x 8 and 8 x 16 of 128), BK 8 / 16 / 32, STAGES 2 / 3 / 4 and rasterization
(GROUP 1 / 8). Why these: lab 7's v8 on the H200 is issue-bound (README of lab 7: 90 % of its issued
instructions are FFMA and it still stops near cuBLAS), so what pays is fewer non-FFMA instructions per
FFMA: a thread tile of 8 x 16 (128 accumulators; 4 LDS.128 of B and 2 of A per 128 FFMA) rather than
c5's 8 x 8, at 8 warps per SM (one 256-thread block of ~250 registers per thread).
"""
import itertools
from pathlib import Path

from common.tiling import Tiling

C5 = Path(__file__).resolve().parent / "kernels" / "c5_wide_epilogue.cu"
PARAMS = ("BM", "BN", "BK", "STAGES", "THR_M", "THR_N", "GROUP", "MIN_BLOCKS", "A_MMAJOR", "A_PACKED", "FMA_ORDER")
SMEM_LIMIT = 227 * 1024          # the sm_90 opt-in maximum per block, as c5's last static_assert


def _defaults():
    t = Tiling.of(C5)
    return {name: int(t.value(name)) for name in PARAMS}


DEFAULTS = _defaults()


def derived(p):
    """c5's derived constants for the parameters p (a full dict: DEFAULTS updated)."""
    d = dict(p)
    d["THREADS"] = p["THR_M"] * p["THR_N"]
    d["SMEM_BYTES"] = p["STAGES"] * (p["BM"] * p["BK"] + p["BN"] * p["BK"]) * 4
    d["ACCUMULATORS"] = (p["BM"] // p["THR_M"]) * (p["BN"] // p["THR_N"]) if p["THR_M"] and p["THR_N"] else 0
    d["B_COLS"] = min(p["BN"], d["THREADS"])
    return d


def reason_illegal(params):
    """None if c5's static_asserts accept params (changes to DEFAULTS), else the first assert's sentence."""
    p = dict(DEFAULTS, **params)
    if min(p[k] for k in ("BM", "BN", "BK", "THR_M", "THR_N")) <= 0:
        return "c5: every tile parameter must be positive"
    d = derived(p)
    T, BM, BN, BK = d["THREADS"], p["BM"], p["BN"], p["BK"]
    ok_div = lambda a, b: b > 0 and a % b == 0
    checks = [
        (T % 32 == 0 and T <= 1024, "c5: THR_M * THR_N must be whole warps, at most 1024 threads"),
        (BM % p["THR_M"] == 0 and BN % p["THR_N"] == 0,
         "c5: the MMA threads must tile the block tile (BM % THR_M == 0, BN % THR_N == 0)"),
        (d["ACCUMULATORS"] <= 128, "c5: at most 128 accumulators per thread (more do not fit 255 registers)"),
        (BK >= 8 and BK & (BK - 1) == 0,
         "c5: BK must be a power of two, at least 8 (the swizzle XORs bit log2(BK) into bit 2)"),
        (ok_div(T, BK // 4) and ok_div(BM, T // (BK // 4)),
         "c5: the A tile's 16-byte chunks must split evenly over THREADS"),
        (ok_div(T, BN // 4) and ok_div(BK, T // (BN // 4)),
         "c5: the B tile's 16-byte chunks must split evenly over THREADS"),
        (ok_div(T, BK) and ok_div(BM, T // BK),
         "c5: the scalar A copy needs THREADS % BK == 0 and BM % (THREADS / BK) == 0"),
        (ok_div(BN, d["B_COLS"]) and ok_div(BK, T // d["B_COLS"]),
         "c5: the scalar B copy needs BN % min(BN, THREADS) == 0 and whole k-rows per pass"),
        (2 <= p["STAGES"] <= 8, "c5: STAGES must be 2..8 (one buffer computed on, at least one being filled)"),
        (BN % (4 * p["THR_N"]) == 0, "c5: BN must be a multiple of 4 * THR_N (a thread's n values come in groups of 4)"),
        (p["GROUP"] >= 1, "c5: GROUP (block rows per raster group) must be at least 1"),
        (p["MIN_BLOCKS"] >= 1 and p["MIN_BLOCKS"] * T <= 2048, "c5: MIN_BLOCKS resident blocks must fit an SM's 2048 threads"),
        (p["A_MMAJOR"] in (0, 1), "c5: A_MMAJOR is 0 (k-major sA) or 1 (m-major sA)"),
        (p["A_MMAJOR"] == 0 or (BM % 32 == 0 and BM % (4 * p["THR_M"]) == 0),
         "c5: A_MMAJOR = 1 needs BM % 32 == 0 and BM % (4 * THR_M) == 0 (whole swizzled chunks, m in groups of 4)"),
        (p["A_PACKED"] == 0 or (p["A_PACKED"] == 1 and p["A_MMAJOR"] == 1 and ok_div(T, BK) and ok_div(BM, 4 * (T // BK))),
         "c5: A_PACKED = 1 needs A_MMAJOR = 1, THREADS % BK == 0 and BM % (4 * THREADS / BK) == 0 (a k per thread)"),
        (0 <= p["FMA_ORDER"] <= 2, "c5: FMA_ORDER is 0 (cute::gemm), 1 (n outer) or 2 (m outer)"),
        (d["SMEM_BYTES"] <= SMEM_LIMIT, "c5: STAGES x (BM + BN) x BK floats exceed 227 KB, the most a block may use "
                                        "(sm_86/89/120 give 99 KB; the launcher checks the device)"),
    ]
    for ok, why in checks:
        if not ok:
            return why
    return None


# The plan, from two H200 rounds (results/lab07b-tune_nvidia-h200_2026-12-01_*.json, README "Tuning").
# Round 1 searched tile, threads, BK, STAGES, GROUP: the best, 128 x 256, reached 84-86 % of cuBLAS against
# 80 % for the defaults; ncu showed 206 registers (8 warps per SM) and 0.7 cycles of dispatch_stall per
# instruction (lab 7's v7: 0.2). Round 2 added what changes the register allocation: lab 7's v8 layout of
# A (A_MMAJOR = 1: m-major, 4-byte copies, 8 A operands per k instead of 8 rows x 4 k), MIN_BLOCKS and
# the FFMA order. A_MMAJOR = 1 won: 95 % at 2048^3 on the 128 x 128 tile. Round 3: the round-2 leaders,
# all timed at both sizes (the first five entries). Round 4: the last three. Round 5 (a timing of the
# crosses, results/lab07b-c5-cross_*_701a02a.json): GROUP = 8 at MIN_BLOCKS = 2, 98.1 % at 4096^3 against 97.5.
# Each entry: (BM, BN, THR_M, THR_N), BKs, STAGES, GROUPs, MIN_BLOCKS, A_MMAJORs, FMA_ORDERs.
_PLAN = [
    ((128, 128, 16, 16), (32, 16), (3,), (1,), (1,), (1,), (0,)),
    ((128, 128, 16, 16), (32,), (3,), (1, 8), (2,), (1,), (0,)),     # GROUP 8: round 5 (2026-12-02)
    ((128, 256, 16, 16), (32, 16), (3,), (1,), (1,), (1,), (0,)),
    ((128, 256, 16, 16), (8,), (3,), (8,), (1,), (1,), (0,)),
    ((128, 256, 16, 16), (32,), (3,), (1,), (1,), (0,), (2,)),
    # Round 4: what round 3 left untried. v8's 8 x 16 outputs per thread (128 accumulators) with A m-major,
    # in 128-thread blocks of 128 x 128, two per SM (MIN_BLOCKS = 2: 8 warps, as v8, but two blocks whose
    # barriers do not wait for each other), and the 256-thread 128 x 256 tile at deeper BK.
    ((128, 128, 16, 8), (16,), (3, 4), (8,), (2,), (1,), (0,)),
    ((128, 128, 16, 8), (32,), (3,), (8,), (2,), (1,), (0,)),           # 96 KB: two per SM
    ((128, 128, 8, 16), (16, 32), (3,), (8,), (2,), (1,), (0,)),
    ((128, 256, 16, 16), (16,), (4,), (8,), (1,), (1,), (0,)),
]


def _sweep():
    out = []
    for (BM, BN, TM, TN), bks, stages, groups, minb, amaj, orders in _PLAN:
        for BK, STAGES, GROUP, MINB, AM, ORDER in itertools.product(bks, stages, groups, minb, amaj, orders):
            p = dict(BM=BM, BN=BN, BK=BK, STAGES=STAGES, THR_M=TM, THR_N=TN, GROUP=GROUP, MIN_BLOCKS=MINB,
                     A_MMAJOR=AM, FMA_ORDER=ORDER)
            if reason_illegal(p) or all(p[k] == DEFAULTS[k] for k in p):
                continue            # the defaults come first, as {}
            out.append({k: v for k, v in p.items() if v != DEFAULTS[k]})
    return out


def candidates():
    """{} (the file's defaults: the worklog's 128 x 128 x 32 kernel) first, then the sweep."""
    return [dict()] + _sweep()


def tag(p, prefix="c5t"):
    """A stable, readable name for a candidate: c5t_128x256x16_16x16_s3_g8_b1_ak_o0."""
    q = dict(DEFAULTS, **p)
    return "%s_%dx%dx%d_%dx%d_s%d_g%d_b%d_%s_o%d" % (prefix, q["BM"], q["BN"], q["BK"], q["THR_M"], q["THR_N"],
                                                     q["STAGES"], q["GROUP"], q["MIN_BLOCKS"],
                                                     "am" if q["A_MMAJOR"] else "ak", q["FMA_ORDER"])
