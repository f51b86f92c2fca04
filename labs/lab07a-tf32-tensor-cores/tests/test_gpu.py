"""Lab 7a on the GPU: every rung and variant against a float64 reference, C = alpha A B + beta C.

The inputs are drawn over magnitudes 2^-20 .. 2^20 (common/precision.py, tf32_tensor): TF32 keeps
FP32's exponent, so a correct kernel passes; a kernel that went through FP16 (same mantissa, five
exponent bits) turns them into zeros and infinities and fails. The bound allows each rung's own
input rounding (cvt.rna: 2^-11, truncation: 2^-10) plus FP32 accumulation growing with K."""
import pytest

from common.testing import gpu_cases, lab_of, needs_gpu

LAB = lab_of(__file__)

# 1x1x1, partial tiles on every side, K not a multiple of 4 or of BK, tall and skinny, full tiles.
SHAPES = [(1, 1, 1), (1, 300, 77), (17, 33, 9), (127, 129, 132), (129, 127, 64), (128, 130, 128),
          (257, 129, 513), (1000, 3, 520), (4099, 3, 64), (2, 3001, 40), (5, 7, 2048), (512, 512, 512),
          (300, 300, 1), (256, 256, 4)]   # many outputs at tiny K: the input rounding dominates (BF16 shows)
CASES, IDS = gpu_cases(LAB.own(), SHAPES)
AB_SHAPES = [(1, 1, 1), (127, 129, 131), (256, 260, 64)]
AB_CASES, AB_IDS = gpu_cases(LAB.own(), AB_SHAPES)


@needs_gpu
@pytest.mark.parametrize("name,variant,shape", CASES, ids=IDS)
def test_rung_matches_float64_reference(name, variant, shape):
    verdict = LAB.check(name, *shape, variant=variant)
    assert verdict.ok, str(verdict)


@needs_gpu
@pytest.mark.parametrize("alpha,beta", [(1.5, 0.5), (-0.75, 0.0), (1.0, -2.0)])
@pytest.mark.parametrize("name,variant,shape", AB_CASES, ids=AB_IDS)
def test_alpha_and_beta(name, variant, shape, alpha, beta):
    """With beta = 0 the C the kernel gets holds NaN: a kernel that reads it anyway fails."""
    verdict = LAB.check(name, *shape, variant=variant, alpha=alpha, beta=beta)
    assert verdict.ok, str(verdict)


# The yardstick's rule (K and N multiples of 4) leaves it few of SHAPES: these keep its rule and vary
# the rest: M = 1, odd M around a tile, partial tiles in N and K, tall and skinny, wide, K = 4.
CUTLASS_SHAPES = [(1, 4, 4), (3, 1024, 1028), (127, 132, 36), (129, 260, 100), (4099, 4, 64), (255, 516, 2052)]


@needs_gpu
@pytest.mark.parametrize("alpha,beta", [(1.0, 0.0), (1.5, 0.5), (-0.75, 0.0)])
@pytest.mark.parametrize("shape", CUTLASS_SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_the_cutlass_yardstick_on_odd_m_and_partial_tiles(shape, alpha, beta):
    """beta = 0 hands it NaN in C: CUTLASS's epilogue must not read C then."""
    assert LAB.kernel("cutlass").refusal(*shape) is None
    verdict = LAB.check("cutlass", *shape, alpha=alpha, beta=beta)
    assert verdict.ok, str(verdict)


@needs_gpu
def test_the_truncating_build_passes_its_own_looser_bound():
    k = LAB.kernel("k7").with_params(TF32_ROUND=0)
    assert k.roundoff == 2.0 ** -10
    verdict = LAB.check(k, 257, 129, 513)
    assert verdict.ok, str(verdict)
