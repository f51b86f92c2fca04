"""The FP32 ladder on the GPU: every kernel and variant against a float64 reference on awkward shapes."""
import pytest

from common.testing import lab_of
from common.testing import needs_gpu

LAB = lab_of(__file__)

# The shapes, then K or N not a multiple of 4, then tall and skinny.
SHAPES = [(1, 1, 1), (1, 300, 77), (17, 33, 9), (64, 64, 64), (130, 260, 100), (257, 129, 513),
          (300, 200, 1), (96, 384, 1000),
          (128, 130, 128), (129, 128, 126), (127, 129, 131), (64, 4, 37), (33, 65, 3),
          (4099, 3, 64), (2, 3001, 40), (5, 7, 2048),
          (257, 263, 515)]   # N odd: the scalar variant with whole 128 x 256 blocks, so v8's fast loop runs

CASES = [(k.name, v, s) for k in LAB.ladders["fp32"] for v, s in k.cases(SHAPES)]   # vec only where its rule holds


@needs_gpu
@pytest.mark.parametrize("name,variant,shape", CASES, ids=[f"{n}{'-' + v if v else ''}-{'x'.join(map(str, s))}" for n, v, s in CASES])
def test_fp32_kernel_matches_float64_reference(name, variant, shape):
    verdict = LAB.check(name, *shape, variant=variant)
    assert verdict.ok, str(verdict)


@needs_gpu
@pytest.mark.parametrize("name", [k.name for k in LAB.ladders["fp32"]])
def test_fp32_kernel_takes_the_vector_path_only_when_rows_are_16_byte_aligned(name):
    k = LAB.kernels[name]
    if len(k.variants) == 1:
        pytest.skip(f"{name} has one variant")
    assert k.variant_for(256, 256, 256) == "vec"
    assert k.variant_for(256, 256, 255) == "scalar" and k.variant_for(256, 258, 256) == "scalar"
    # the automatic choice gives correct results on both sides of the rule
    for shape in [(200, 256, 64), (200, 254, 64), (200, 256, 66)]:
        verdict = LAB.check(name, *shape)
        assert verdict.ok, str(verdict)


ALPHA_BETA_ROWS = [k.name for k in LAB.ladders["fp32"] if k.has_alpha_beta]
AB_SHAPES = [(1, 1, 1), (127, 129, 131), (129, 127, 64), (256, 260, 64), (1000, 3, 517)]


@needs_gpu
@pytest.mark.parametrize("name", ALPHA_BETA_ROWS)
@pytest.mark.parametrize("alpha,beta", [(1.5, 0.5), (-0.75, 0.0), (1.0, -2.0)])
def test_alpha_and_beta_every_variant(name, alpha, beta):
    """C = alpha A B + beta C; with beta = 0 the C the kernel is given holds NaN, so a kernel that
    reads C anyway (0 x NaN is NaN) fails."""
    k = LAB.kernels[name]
    for v, shape in k.cases(AB_SHAPES):
        verdict = LAB.check(name, *shape, variant=v, alpha=alpha, beta=beta)
        assert verdict.ok, str(verdict)
