"""Tuning search space of lab 7's t4 (kernels/t4_mma_ldmatrix.cu), for the course's autotuner.

    DEFAULTS                 the .cu file's #ifndef values (read from the file)
    candidates()             -> list of parameter dicts (full: every tuned parameter named), ~30 configs
    reason_illegal(params)   -> None if t4's static_asserts accept params, else the sentence of the first
                                that fails, asked of the compiler (common/legality.py), never restated here
    tag(p)                   the parameters that differ from DEFAULTS, e.g. BK64_STAGES3

Shared memory above the device's opt-in limit (99 KB on sm_86/89/120, 227 KB on sm_90) is a run-time
matter for the launcher, not a compile-time one: the kernel asserts only the 227 KB.
"""
from pathlib import Path

from common.legality import Legality
from common.tiling import Tiling

T4 = Path(__file__).resolve().parent / "kernels" / "t4_mma_ldmatrix.cu"
NAMES = ("BM", "BN", "BK", "WM", "WN", "STAGES", "GROUP")
DEFAULTS = {k: v for k, v in Tiling.of(T4).params.items() if k in NAMES}
# COPY_WARPS (warps that issue the copies) defaults to every warp, so it depends on the tile: only
# candidates that set it name it. T4_PROBE (make bounds' builds) is not tuned.
reason_illegal = Legality(T4)


def _plan():
    """Block tiles of 4 or 8 warps of 64 x 64 (plus two of 64 x 32), BK 32/64, 2-6 stages, GROUP 1-32."""
    c = []
    for bm, bn in ((128, 256), (256, 128)):            # 8 warps of 64 x 64, one block per SM
        for bk, st in ((32, 3), (32, 4), (32, 5), (64, 3), (64, 4)):
            c.append(dict(BM=bm, BN=bn, BK=bk, WM=64, WN=64, STAGES=st, GROUP=8))
    for bk, st in ((32, 4), (32, 6), (64, 3), (64, 4)):  # 4 warps of 64 x 64: two blocks per SM
        c.append(dict(BM=128, BN=128, BK=bk, WM=64, WN=64, STAGES=st, GROUP=8))
    c.append(dict(BM=64, BN=256, BK=32, WM=64, WN=64, STAGES=4, GROUP=8))
    for g in (1, 2, 4, 16, 32):                         # rasterization width
        c.append(dict(BM=128, BN=256, BK=32, WM=64, WN=64, STAGES=4, GROUP=g))
    c.append(dict(BM=128, BN=256, BK=32, WM=64, WN=64, STAGES=2, GROUP=8))   # ablation: 2 stages
    c.append(dict(BM=128, BN=128, BK=32, WM=64, WN=32, STAGES=4, GROUP=8))   # 8 warps of 64 x 32
    c.append(dict(BM=128, BN=128, BK=64, WM=64, WN=32, STAGES=3, GROUP=8))
    # BK = 64 (half the barriers per k: the best of the first H200 tune) with other raster widths,
    # and two 4-warp blocks per SM (each block's prologue and epilogue hidden by the other's loop).
    for g in (4, 16):
        c.append(dict(BM=128, BN=256, BK=64, WM=64, WN=64, STAGES=4, GROUP=g))
        c.append(dict(BM=128, BN=128, BK=64, WM=64, WN=64, STAGES=3, GROUP=g))   # 96 KB: 2 per SM
    c.append(dict(BM=256, BN=128, BK=64, WM=64, WN=64, STAGES=4, GROUP=16))
    # Copies issued by warps 0-3 only (one per SM sub-partition), so that the other warp of each keeps
    # its mma.sync going: the best 8-warp tiles of the H200's earlier tunes, with COPY_WARPS = 4.
    for bk, st in ((32, 4), (64, 3), (64, 4)):
        c.append(dict(BM=128, BN=256, BK=bk, WM=64, WN=64, STAGES=st, GROUP=8, COPY_WARPS=4))
    return c


def candidates():
    """The plan's configurations, each once; every one must be legal (the plan is written by hand, so an
    illegal entry is a mistake in it, said with the kernel's reason)."""
    out = []
    for p in _plan():
        p = dict(DEFAULTS, **p)
        if p not in out:
            out.append(p)
    for p, why in zip(out, reason_illegal.check(out)):
        assert why is None, (p, why)
    return out


def tag(p):
    """Short name of a configuration: the parameters that differ from the file's, e.g. BK64_STAGES3."""
    ref, mine = Tiling.of(T4).params, Tiling.of(T4, p)
    parts = [f"{n}{v}" for n, v in mine.params.items() if n != "COPY_WARPS" and v != ref[n]]
    if mine.value("COPY_WARPS") != mine.threads // 32:
        parts.append(f"COPY_WARPS{mine.value('COPY_WARPS')}")
    return "_".join(parts) or "default"


if __name__ == "__main__":
    for p in candidates():
        t = Tiling.of(T4, p)
        print(f"{tag(p):28s} threads {t.threads:4d}  smem {t.shared_bytes:7,d}")
    print(len(candidates()), "candidates")
