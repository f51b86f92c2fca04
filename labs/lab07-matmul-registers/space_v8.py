"""Tuning search space of lab 7's v8 (kernels/v8_pipelined.cu, its body and rules in v8_pipelined.cuh).

    candidates()        parameter dicts {BM, BN, BK, WM, WN, WNITER, TM, TN, STAGES, GROUP} (and MAXREG
                        on a few), the file's defaults first, each one that v8 accepts: about 60
    reason_illegal(p)   None if v8's static_asserts accept p, else the sentence of the first that fails,
                        asked of the compiler (common/legality.py: one compile for a whole batch)
    name(p)             a short stable name: v8_128x256x8_w64x64i4_t8x4_s3_g8 (+ _MAXREG224 for MAXREG=224)
    DEFAULTS            the parameters a build without -D flags gets, read from the .cu file

The rules live once, in v8_pipelined.cuh: this file chooses what to try, the kernel says what is legal.
The space is small on purpose (GPU time is scarce): four block shapes that keep a lane's 8 x 16
accumulator tile of v7 (128 FP32 accumulators, 6 LDS.128 per 128 FFMA), three with a smaller thread
tile for more warps per SM, each with the BK / STAGES pairs whose shared memory still lets the intended
number of blocks share an SM (228 KB per SM on the H200).
"""
from pathlib import Path

from common.legality import Legality
from common.tiling import Tiling

V8 = Path(__file__).resolve().parent / "kernels" / "v8_pipelined.cu"
PARAMS = ("BM", "BN", "BK", "WM", "WN", "WNITER", "TM", "TN", "STAGES", "GROUP")
DEFAULTS = Tiling.of(V8).params
reason_illegal = Legality(V8.with_suffix(".cuh"))


def _shape(BM, BN, WM, WN, WNITER, TM, TN):
    return dict(BM=BM, BN=BN, WM=WM, WN=WN, WNITER=WNITER, TM=TM, TN=TN)


# Block shapes: (shape, [(BK, STAGES), ...]). Thread tile 8 x 16 unless noted.
_SHAPES = [
    # v7's block: 4 warps of 64 x 64, 2 blocks per SM at <= 113 KB each
    (_shape(128, 128, 64, 64, 4, 8, 4), [(8, 3), (8, 4), (16, 2), (16, 3), (16, 4), (32, 3)]),
    # 8 warps, 1 block per SM (registers): 128 x 256 and cuBLAS's 256 x 128
    (_shape(128, 256, 64, 64, 4, 8, 4), [(8, 2), (8, 3), (8, 4), (8, 5), (16, 3), (16, 4)]),
    (_shape(256, 128, 64, 64, 4, 8, 4), [(8, 3), (8, 4), (8, 5), (16, 3)]),
    # 2 warps of 64 x 64: 64 threads per block, 4 blocks per SM
    (_shape(64, 128, 64, 64, 4, 8, 4), [(8, 4), (16, 3), (16, 4)]),
    (_shape(128, 64, 64, 64, 4, 8, 4), [(16, 3), (16, 4)]),
    # a lane's 8 x 16 as 2 strips of 8 columns (two LDS.128 per strip)
    (_shape(128, 128, 64, 64, 2, 8, 8), [(16, 3)]),
    (_shape(128, 256, 64, 64, 2, 8, 8), [(8, 3)]),
    # a lane's 16 x 8 (4 LDS.128 of A, 2 of B per k): warp tile 128 x 32
    (_shape(128, 128, 128, 32, 2, 16, 4), [(16, 3)]),
    # smaller thread tiles (64 accumulators, fewer registers, more warps per SM)
    (_shape(128, 64, 64, 32, 2, 8, 4), [(16, 3)]),
    (_shape(128, 128, 32, 64, 4, 4, 4), [(16, 4)]),
]
# GROUP values tried on the leaders (the others use 8): v7's block, and the 8-warp tiles at the depths
# that led with the fast loop. On the H200 GROUP = 1, launch order, was once the best at every size,
# so the leaders get GROUP 1 and 2 besides 4 and 16.
_GROUP_SHAPES = [dict(_shape(128, 128, 64, 64, 4, 8, 4), BK=16, STAGES=3),
                 dict(_shape(128, 256, 64, 64, 4, 8, 4), BK=8, STAGES=3),
                 dict(_shape(128, 256, 64, 64, 4, 8, 4), BK=8, STAGES=4),
                 dict(_shape(128, 256, 64, 64, 4, 8, 4), BK=8, STAGES=5),
                 dict(_shape(128, 256, 64, 64, 4, 8, 4), BK=16, STAGES=3),
                 dict(_shape(128, 256, 64, 64, 2, 8, 8), BK=8, STAGES=3),
                 dict(_shape(256, 128, 64, 64, 4, 8, 4), BK=8, STAGES=3)]
_GROUPS_EXTRA = [1, 2, 4, 16]
# Register caps (MAXREG, __maxnreg__) on the two leading depths at GROUP 8 and 1: under a cap below its
# own choice ptxas allocates and schedules the same source otherwise; which cap wins moves with the
# source (224 and 232 have each led on the H200), so the tuner's measurement decides.
_MAXREG_SHAPES = [dict(_shape(128, 256, 64, 64, 4, 8, 4), BK=8, STAGES=s, GROUP=g) for s in (3, 4) for g in (8, 1)]
_MAXREGS = [224, 232]


def _plan():
    """Every configuration the plan names, in order, the defaults first (duplicates included)."""
    yield {k: DEFAULTS[k] for k in PARAMS}
    for shape, pairs in _SHAPES:
        for bk, stages in pairs:
            yield dict(shape, BK=bk, STAGES=stages, GROUP=8)
    for shape in _GROUP_SHAPES:
        for g in _GROUPS_EXTRA:
            yield dict(shape, GROUP=g)
    for shape in _MAXREG_SHAPES:
        for r in _MAXREGS:
            yield dict(shape, MAXREG=r)


def candidates():
    """The plan's configurations that v8 accepts, each once, the file's defaults first."""
    plan, seen = [], set()
    for p in _plan():
        key = tuple(sorted(p.items()))
        if key not in seen:
            seen.add(key)
            plan.append(p)
    return [p for p, why in zip(plan, reason_illegal.check(plan)) if why is None]


def name(p):
    q = dict(DEFAULTS, **p)
    s = (f"v8_{q['BM']}x{q['BN']}x{q['BK']}_w{q['WM']}x{q['WN']}i{q['WNITER']}"
         f"_t{q['TM']}x{q['TN']}_s{q['STAGES']}_g{q['GROUP']}")
    return s + "".join(f"_{k}{q[k]}" for k in DEFAULTS if k not in PARAMS and q[k] != DEFAULTS[k])


if __name__ == "__main__":
    cs = candidates()
    print(f"v8: {len(cs)} candidates")
    for p in cs:
        t = Tiling.of(V8, p)
        print(f"  {name(p):44s} threads {t.threads:4d}  smem {t.shared_bytes:7,d}")
