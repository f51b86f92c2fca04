"""What `make tune` searches for k7 (kernels/k7_unroll_xor_stages.cu) on this GPU: data for
common.targets.Tuning, plus k7's static_asserts written once more in Python so that a configuration
the kernel would refuse is rejected before anything is compiled.

    DEFAULTS              k7's parameters as its .cu file defines them (read from the file, not restated)
    derived(params)       THREADS, SMEM_BYTES, MI, NJ, A_GROUPS, ... as k7 computes them
    reason_illegal(params) -> None, or the sentence of the first k7 static_assert that params break
                          (the same checks, in the same order, as the .cu file)
    candidates(truncate=False) -> [params]: {} (the taught configuration) first, then the sweep
    tag(params)           a stable name: k7t_256x128x32_64x64_s2_b1_g8_r1

Why this sweep (scratch/tf32 round 1 and 2 on the H200): k7 is latency-bound, not bandwidth-bound.
Its TFLOP/s tracked resident warps (4 warps per SM: 75 TFLOP/s; 8 warps: 121..145 at 4096^3), about one
HMMA every 30 clocks per warp whatever the tile. So the sweep centres on more warps per SM: 32 x 64 and
64 x 32 warp tiles (64 accumulators, <= 128 registers) in 512-thread blocks or as two 256-thread
blocks (MIN_BLOCKS = 2), against the 64 x 64 tiles at 8 warps, with BK 16 / 32 and STAGES 2 / 4.
Round 2's best at 4096^3 was BM = BN = 128, BK = 32, 64 x 64 warps, STAGES = 2: 188 TFLOP/s (46 % of
cuBLAS TF32 in the same run) against 176 for the defaults.
"""
import itertools
from pathlib import Path

from common.tiling import Tiling

K7 = Path(__file__).resolve().parent / "kernels" / "k7_unroll_xor_stages.cu"
PARAMS = ("BM", "BN", "BK", "WM", "WN", "STAGES", "GROUP", "MIN_BLOCKS", "TF32_ROUND")
SMEM_LIMIT = 227 * 1024          # the sm_90 opt-in maximum per block, as k7's last static_assert


def _defaults():
    t = Tiling.of(K7)
    return {name: int(t.value(name)) for name in PARAMS}


DEFAULTS = _defaults()


def derived(p):
    """k7's constexprs for the parameters p (a full dict: DEFAULTS updated)."""
    div = lambda a, b: a // b if b > 0 else 0
    d = dict(p)
    d["THREADS"] = div(p["BM"], p["WM"]) * div(p["BN"], p["WN"]) * 32
    d["SMEM_BYTES"] = p["STAGES"] * (p["BM"] * p["BK"] + p["BK"] * p["BN"]) * 4
    d["MI"], d["NJ"] = p["WM"] // 16, p["WN"] // 8
    d["A_GROUPS"], d["B_GROUPS"] = p["BK"] // 4, p["BN"] // 4
    d["A_ROW_STEP"] = div(d["THREADS"], d["A_GROUPS"])
    d["B_ROW_STEP"] = div(d["THREADS"], d["B_GROUPS"])
    return d


def reason_illegal(params):
    """None if k7's static_asserts accept params (changes to DEFAULTS), else the first assert's sentence."""
    p = dict(DEFAULTS, **params)
    if min(p[k] for k in ("BM", "BN", "BK", "WM", "WN", "STAGES", "GROUP")) <= 0:
        return "k7: every tile parameter must be positive"
    d = derived(p)
    T = d["THREADS"]
    checks = [
        (p["BM"] % p["WM"] == 0 and p["BN"] % p["WN"] == 0, "k7: the block tile must split into whole warp tiles"),
        (p["WM"] % 16 == 0, "k7: WM must be a multiple of 16, the M of one mma"),
        (p["WN"] % 8 == 0, "k7: WN must be a multiple of 8, the N of one mma"),
        (32 <= T <= 1024, "k7: (BM/WM)*(BN/WN) warps must be 1..32"),
        (p["BK"] % 8 == 0, "k7: BK must be a multiple of 8, the K of one mma"),
        ((d["A_GROUPS"] & (d["A_GROUPS"] - 1)) == 0,
         "k7: BK must be 8, 16, 32, 64, ...: a power of two (the A swizzle XORs group indices)"),
        (p["BN"] % 32 == 0, "k7: BN must be a multiple of 32: the B swizzle permutes 8 groups of 4 columns"),
        (p["WN"] % 32 == 0 or p["BN"] == p["WN"], "k7: WN must be a multiple of 32 (warp columns aligned to the B swizzle)"),
        (2 <= p["STAGES"] <= 8 and (p["STAGES"] & (p["STAGES"] - 1)) == 0,
         "k7: STAGES must be 2, 4 or 8: the stage index advances by a mask toggle"),
        (T > 0 and (p["BM"] * p["BK"] // 4) % T == 0, "k7: the A tile's float4 groups must split evenly over THREADS"),
        (T > 0 and (p["BK"] * p["BN"] // 4) % T == 0, "k7: the B tile's float4 groups must split evenly over THREADS"),
        (T % d["A_GROUPS"] == 0 and d["A_ROW_STEP"] % 8 == 0,
         "k7: a thread's A chunks must be a multiple of 8 rows apart (same swizzle: one hoisted offset)"),
        (T % d["B_GROUPS"] == 0 and d["B_ROW_STEP"] % 4 == 0,
         "k7: a thread's B chunks must be a multiple of 4 k-rows apart (same swizzle: one hoisted offset)"),
        (d["MI"] * d["NJ"] * 4 <= 160, "k7: more than 160 accumulators per lane cannot stay in 255 registers"),
        (p["MIN_BLOCKS"] >= 1 and p["MIN_BLOCKS"] * T <= 2048,
         "k7: MIN_BLOCKS resident blocks must fit an SM's 2048 threads"),
        (d["SMEM_BYTES"] <= SMEM_LIMIT, "k7: shared memory above the 227 KB a block may have on sm_90 "
                                        "(sm_86/89/120: 99 KB; the launcher checks the device)"),
    ]
    for ok, why in checks:
        if not ok:
            return why
    return None


def _sweep():
    out = []
    for BM, BN, BK, (WM, WN), STAGES, MINB in itertools.product(
            (128, 256), (128, 256), (16, 32), ((64, 64), (32, 64), (64, 32)), (2, 4), (1, 2)):
        p = dict(BM=BM, BN=BN, BK=BK, WM=WM, WN=WN, STAGES=STAGES, MIN_BLOCKS=MINB)
        if reason_illegal(p):
            continue
        d = derived(dict(DEFAULTS, **p))
        T = d["THREADS"]
        regs_cap = 65536 // (T * MINB)          # registers per thread the launch bounds allow
        need = 200 if WM * WN == 4096 else 110  # accumulators + fragments + addresses (ptxas, round 1)
        if regs_cap < need or T < 128:
            continue                            # would spill: the tune target would reject it anyway
        if MINB * (d["SMEM_BYTES"] + 1024) > 228 * 1024:
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
                if derived(dict(DEFAULTS, **p))["THREADS"] * p.get("MIN_BLOCKS", 1) == 512]
    return out


def tag(p, prefix="k7t"):
    """A stable, readable name for a candidate: k7t_256x128x32_64x64_s2_b1_g8_r1."""
    q = dict(DEFAULTS, **p)
    name = "%s_%dx%dx%d_%dx%d_s%d_b%d_g%d_r%d" % (prefix, q["BM"], q["BN"], q["BK"], q["WM"], q["WN"], q["STAGES"],
                                              q["MIN_BLOCKS"], q["GROUP"], q["TF32_ROUND"])
    return name
