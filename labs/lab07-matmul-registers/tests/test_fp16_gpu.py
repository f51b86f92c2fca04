"""The tensor-core ladder on the GPU: FP16 inputs, FP32 accumulation, against float64 products of
the FP16-rounded inputs (so only accumulation error is measured; see common/check.py for the
tolerance and why it is wider than FP32's)."""
import numpy as np
import pytest

from common.testing import lab_of
from common import check as checking
from common.testing import needs_gpu

LAB = lab_of(__file__)

# The FP32 test shapes with K moved to a multiple of 8; N not a multiple of 8; K % 16 == 8;
# tall and skinny.
SHAPES = [(1, 1, 8), (1, 300, 80), (17, 33, 16), (64, 64, 64), (130, 260, 104), (257, 129, 512),
          (300, 200, 8), (96, 384, 1000),
          (64, 65, 64), (129, 131, 136), (33, 7, 24), (64, 64, 72), (128, 136, 40),
          (4099, 3, 64), (2, 3001, 40), (5, 7, 2048)]

CASES = [(k.name, v, s) for k in LAB.ladders["fp16"] for v, s in k.cases(SHAPES)]   # vec only where its rule holds


@needs_gpu
@pytest.mark.parametrize("name,variant,shape", CASES, ids=[f"{n}{'-' + v if v else ''}-{'x'.join(map(str, s))}" for n, v, s in CASES])
def test_fp16_kernel_matches_float64_reference(name, variant, shape):
    verdict = LAB.check(name, *shape, variant=variant)
    assert verdict.ok, str(verdict)


# The yardstick's rule (K and N multiples of 8) leaves it few of SHAPES: these keep its rule and vary
# the rest: M = 1, odd M around a 128-row tile, partial tiles in N and K, tall and skinny, wide.
CUTLASS_SHAPES = [(1, 8, 8), (3, 1024, 1032), (127, 136, 40), (129, 264, 72), (4099, 8, 64), (255, 520, 2056)]


@needs_gpu
@pytest.mark.parametrize("shape", CUTLASS_SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_the_cutlass_yardstick_on_odd_m_and_partial_tiles(shape):
    assert LAB.kernel("cutlass").refusal(*shape) is None
    verdict = LAB.check("cutlass", *shape)
    assert verdict.ok, str(verdict)


@pytest.fixture(scope="module")
def big_problem():
    rng = np.random.default_rng()
    n = 4096
    A = checking.random_matrix(n, n, np.float16, rng)
    B = checking.random_matrix(n, n, np.float16, rng)
    ref, abs_ref = checking.reference(A, B)
    return A, B, ref, checking.tolerance(n, abs_ref, "fp16_tensor")


@needs_gpu
@pytest.mark.parametrize("name", [k.name for k in LAB.ladders["fp16"]])
def test_fp16_kernel_at_4096_cubed(name, big_problem):
    A, B, ref, tol = big_problem
    C = LAB.matmul(name, A, B)
    verdict = checking.compare(C, ref, tol, label=f"{name} 4096^3")
    assert verdict.ok, str(verdict)


# make tune's t4 builds that change which warps copy (COPY_WARPS) and how deep a stage is: every
# shape and variant, like the default build (the tuner checks its winners only at the timed size).
T4_BUILDS = [dict(COPY_WARPS=4), dict(COPY_WARPS=4, BK=64, STAGES=3)]
T4_CASES = [(p, v, s) for p in T4_BUILDS for v, s in LAB.kernel("t4").cases(SHAPES)]


@needs_gpu
@pytest.mark.parametrize("params,variant,shape", T4_CASES,
                         ids=[f"{'_'.join(f'{a}{b}' for a, b in p.items())}-{v}-{'x'.join(map(str, s))}"
                              for p, v, s in T4_CASES])
def test_t4_tuning_builds_match_float64_reference(params, variant, shape):
    k = LAB.bind(LAB.kernel("t4")).with_params(**params)
    verdict = LAB.check(k, *shape, variant=variant)
    assert verdict.ok, str(verdict)
