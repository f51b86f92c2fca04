"""What `make tune` searches for c5 (kernels/c5_wide_epilogue.cu) on this GPU: data for
common.measure.Tuning. What is legal is c5's own static_asserts, asked of the compiler before anything is
built (one compile of the parameter lines for the whole sweep; CuTe takes 20-40 s of nvcc per build).

    DEFAULTS               c5's parameters as its .cu file defines them (read from the file, not restated)
    reason_illegal(params) -> None, or the sentence of the first c5 static_assert that params break
                           (common/legality.py)
    candidates()           -> [params]: {} (the worklog's configuration) first, then the sweep
    tag(params)            a stable name: c5t_128x256x16_16x16_s3_g8_b1_ak_o0

The sweep (_PLAN): the CTA tile (128 x 128, 128 x 256, 256 x 128), the MMA thread layout (16 x 16 and
32 x 8 threads of 256; 16 x 8 and 8 x 16 of 128), BK 8 / 16 / 32, STAGES 2 / 3 / 4 and rasterization
(GROUP 1 / 8). Why these: lab 7's v8 on the H200 is issue-bound (90 % of its issued instructions are
FFMA and it still stops near cuBLAS), so what pays is fewer non-FFMA instructions per FFMA: a thread
tile of 8 x 16 (128 accumulators; 4 LDS.128 of B and 2 of A per 128 FFMA) rather than c5's 8 x 8, at
8 warps per SM (one 256-thread block of ~250 registers per thread).
"""
import itertools
from pathlib import Path

from common.legality import Legality
from common.tiling import Tiling

C5 = Path(__file__).resolve().parent / "kernels" / "c5_wide_epilogue.cu"
PARAMS = ("BM", "BN", "BK", "STAGES", "THR_M", "THR_N", "GROUP", "MIN_BLOCKS", "A_MMAJOR", "A_PACKED", "FMA_ORDER")
DEFAULTS = {k: v for k, v in Tiling.of(C5).params.items() if k in PARAMS}
reason_illegal = Legality(C5)


# The plan, from the H200 rounds of tuning (the lab's NOTES.md has their numbers).
# Round 1 searched tile, threads, BK, STAGES, GROUP: the best, 128 x 256, reached 84-86 % of cuBLAS against
# 80 % for the defaults; ncu showed 206 registers (8 warps per SM) and 0.7 cycles of dispatch_stall per
# instruction (lab 7's v7: 0.2). Round 2 added what changes the register allocation: lab 7's v8 layout of
# A (A_MMAJOR = 1: m-major, 4-byte copies, 8 A operands per k instead of 8 rows x 4 k), MIN_BLOCKS and
# the FFMA order. A_MMAJOR = 1 won: 95 % at 2048^3 on the 128 x 128 tile. Round 3: the round-2 leaders,
# all timed at both sizes (the first five entries). Round 4: the last three. Round 5 (a timing of the
# crosses): GROUP = 8 at MIN_BLOCKS = 2, 98.1 % at 4096^3 against 97.5.
# Each entry: (BM, BN, THR_M, THR_N), BKs, STAGES, GROUPs, MIN_BLOCKS, A_MMAJORs, FMA_ORDERs.
_PLAN = [
    ((128, 128, 16, 16), (32, 16), (3,), (1,), (1,), (1,), (0,)),
    ((128, 128, 16, 16), (32,), (3,), (1, 8), (2,), (1,), (0,)),     # GROUP 8: round 5
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
    plan = []
    for (BM, BN, TM, TN), bks, stages, groups, minb, amaj, orders in _PLAN:
        for BK, STAGES, GROUP, MINB, AM, ORDER in itertools.product(bks, stages, groups, minb, amaj, orders):
            plan.append(dict(BM=BM, BN=BN, BK=BK, STAGES=STAGES, THR_M=TM, THR_N=TN, GROUP=GROUP, MIN_BLOCKS=MINB,
                             A_MMAJOR=AM, FMA_ORDER=ORDER))
    out = []
    for p, why in zip(plan, reason_illegal.check(plan)):
        if why or all(p[k] == DEFAULTS[k] for k in p):
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
