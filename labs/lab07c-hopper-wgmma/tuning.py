"""What `make tune` searches for lab 7c's persistent rungs on this GPU: h4 (FP16) and h4_tf32 (TF32), data
for common.measure.Tuning. What is legal is each kernel's own static_asserts, asked of the compiler before
anything is built (common/legality.py).

    KERNELS                 {ladder: the kernel file tuned}
    reason_illegal[ladder]  params -> None, or the sentence of the first static_assert the params break
    candidates_fp16(), candidates_tf32()
                            -> [params]: {} (the file's defaults, the taught configuration) first, then the sweep

The sweep, and why each axis:
- The block tile: 128 x 256 (the taught one: two consumers of 64 x 256, one m64n256 wgmma each per
  k-step), 256 x 128 (cuBLAS's choice on the H200 for this problem: nvjet ..._256x128_64x4_...; each
  consumer issues two m64n128 wgmmas per k-step, reading B twice) and 128 x 128 (half the accumulators
  and smem per stage: room for 6 stages, and 4x as many tiles, which evens out the last wave).
- STAGES: as deep as the 227 KB allow (3 and 4 at 48 KB a stage; up to 6 at 32 KB).
- GROUP, the raster band: 4 to 32 tile rows. It decides how many distinct A and B bytes a wave of 132
  tiles reads from DRAM, and so how many hits the L2 gets.
At 4096^3 a 128 x 256 tile gives 512 tiles, 3.9 waves of 132 SMs; at 8192^3, 2048 tiles (15.5 waves).
"""
import itertools
from pathlib import Path

from common.legality import Legality
from common.tiling import Tiling

HERE = Path(__file__).resolve().parent / "kernels"
KERNELS = {"fp16": HERE / "h4_persistent.cu", "tf32": HERE / "h4_tf32.cu"}
reason_illegal = {ladder: Legality(path) for ladder, path in KERNELS.items()}
TILES = ((128, 256), (256, 128), (128, 128))
STAGES = (3, 4, 5, 6)
GROUPS = (4, 8, 16, 32)


def _sweep(ladder):
    path, legal = KERNELS[ladder], reason_illegal[ladder]
    defaults = Tiling.of(path).params
    grid = [dict(BM=bm, BN=bn, STAGES=s, GROUP=g) for (bm, bn), s, g in itertools.product(TILES, STAGES, GROUPS)]
    return [p for p, why in zip(grid, legal.check(grid))
            if why is None and any(p[k] != defaults[k] for k in p)]     # the defaults come first, as {}


def candidates_fp16():
    """{} first (h4 as the lab teaches it), then every legal tile x STAGES x GROUP of the sweep."""
    return [dict()] + _sweep("fp16")


def candidates_tf32():
    """{} first (h4_tf32 as the lab teaches it), then the same sweep on TF32's 32-float k-slices."""
    return [dict()] + _sweep("tf32")

