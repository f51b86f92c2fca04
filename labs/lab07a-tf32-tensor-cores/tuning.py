"""What `make tune` searches for k7 (kernels/k7_unroll_xor_stages.cu) on this GPU: data for
common.measure.Tuning. What is legal is k7's own static_asserts, asked of the compiler.

    DEFAULTS              k7's parameters as its .cu file defines them (read from the file, not restated)
    reason_illegal(params) -> None, or the sentence of the first k7 static_assert that params break
                          (common/legality.py: one compile for a whole batch, cached)
    candidates(truncate=False) -> [params]: {} (the taught configuration) first, then the sweep
    tag(params)           a stable name: k7t_256x128x32_64x64_s2_b1_g8_r1

Why this sweep: k7 is latency-bound, not bandwidth-bound. On the H200 its TFLOP/s tracked resident
warps (4 warps per SM: 75 TFLOP/s; 8 warps: 121..145 at 4096^3), about one HMMA every 30 clocks per
warp whatever the tile. So the sweep centres on more warps per SM: 32 x 64 and 64 x 32 warp tiles (64
accumulators, <= 128 registers) in 512-thread blocks or as two 256-thread blocks (MIN_BLOCKS = 2),
against the 64 x 64 tiles at 8 warps, with BK 16 / 32 and STAGES 2 / 4. The best at 4096^3 was
BM = BN = 128, BK = 32, 64 x 64 warps, STAGES = 2: 188 TFLOP/s (46 % of cuBLAS TF32 in the same run)
against 176 for the defaults.
"""
import itertools
from pathlib import Path

from common.legality import Legality
from common.tiling import Tiling

K7 = Path(__file__).resolve().parent / "kernels" / "k7_unroll_xor_stages.cu"
PARAMS = ("BM", "BN", "BK", "WM", "WN", "STAGES", "GROUP", "MIN_BLOCKS", "TF32_ROUND")
DEFAULTS = {k: v for k, v in Tiling.of(K7).params.items() if k in PARAMS}
reason_illegal = Legality(K7)


def _sweep():
    grid = [dict(BM=BM, BN=BN, BK=BK, WM=WM, WN=WN, STAGES=STAGES, MIN_BLOCKS=MINB)
            for BM, BN, BK, (WM, WN), STAGES, MINB in itertools.product(
                (128, 256), (128, 256), (16, 32), ((64, 64), (32, 64), (64, 32)), (2, 4), (1, 2))]
    out = []
    for p, why in zip(grid, reason_illegal.check(grid)):
        if why:
            continue
        t = Tiling.of(K7, p)
        T, MINB = t.threads, p["MIN_BLOCKS"]
        regs_cap = 65536 // (T * MINB)          # registers per thread the launch bounds allow
        need = 200 if p["WM"] * p["WN"] == 4096 else 110   # accumulators + fragments + addresses (ptxas)
        if regs_cap < need or T < 128:
            continue                            # would spill: the tune target would reject it anyway
        if MINB * (t.shared_bytes + 1024) > 228 * 1024:
            continue                            # the blocks MIN_BLOCKS asks for would not fit one SM
        if MINB == 2 and 65536 // (2 * T) >= 255:
            continue                            # two blocks fit anyway: MIN_BLOCKS = 2 changes nothing
        if all(p[k] == DEFAULTS[k] for k in p):
            continue                            # the defaults come first, as {}
        out.append(p)
    return out + [dict(GROUP=16), dict(GROUP=4)]


def candidates(truncate=False):
    """{} first (the file's defaults: the taught kernel), then the sweep, all rounding to TF32
    (TF32_ROUND = 1: the lab's numerics). truncate=True adds the 16-warp configurations with
    TF32_ROUND = 0 (the tensor core truncates: a looser tolerance, 2^-10 per input; the row's
    rounding follows the parameter, so the tune target checks each against its own bound)."""
    out = [dict()] + _sweep()
    if truncate:
        out += [dict(p, TF32_ROUND=0) for p in _sweep()
                if Tiling.of(K7, p).threads * p.get("MIN_BLOCKS", 1) == 512]
    return out


def tag(p, prefix="k7t"):
    """A stable, readable name for a candidate: k7t_256x128x32_64x64_s2_b1_g8_r1."""
    q = dict(DEFAULTS, **p)
    name = "%s_%dx%dx%d_%dx%d_s%d_b%d_g%d_r%d" % (prefix, q["BM"], q["BN"], q["BK"], q["WM"], q["WN"], q["STAGES"],
                                              q["MIN_BLOCKS"], q["GROUP"], q["TF32_ROUND"])
    return name
