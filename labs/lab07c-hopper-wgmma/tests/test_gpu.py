"""Lab 7c on a Hopper GPU: every rung against the float64 reference on shapes that cut every tile edge.

C is poisoned with NaN before each launch (common.lab.matmul), so an element a kernel never writes
fails. The shapes: one row and one column, partial tiles on every side (127, 129), tall and skinny
both ways, N not a multiple of 8 (the launch hook copies B to a padded pitch for TMA), K from 8 (a
single half-empty k-slice) to past several pipeline rounds, and full tiles. On a GPU that is not
sm_90 these tests are skipped, saying why; elsewhere `make test` runs the CPU tests alone."""
import pytest

from common.testing import GPU_OK, GPU_TEXT, gpu_cases, lab_of, needs_gpu

LAB = lab_of(__file__)
ARCH = LAB.gpu_arch() if GPU_OK else None
needs_hopper = pytest.mark.skipif(GPU_OK and ARCH != "sm_90",
                                  reason=f"lab 7c's kernels need an sm_90 GPU (H100, H200): this one is {GPU_TEXT}")

SHAPES = [(1, 1, 8), (1, 127, 136), (127, 1, 520), (127, 129, 136), (129, 127, 520), (129, 129, 8),
          (1000, 3, 520), (3, 1000, 520), (4099, 129, 136), (300, 520, 1000), (256, 512, 256),
          (77, 67, 45)]           # K % 8 != 0: only h1 serves it (the TMA rungs refuse it, see lab.py)
CASES, IDS = gpu_cases(LAB.own(), SHAPES)


@needs_gpu
@needs_hopper
@pytest.mark.parametrize("name,variant,shape", CASES, ids=IDS)
def test_rung_matches_float64_reference(name, variant, shape):
    verdict = LAB.check(name, *shape, variant=variant)
    assert verdict.ok, str(verdict)


@needs_gpu
@needs_hopper
@pytest.mark.parametrize("name", [k.name for k in LAB.own()])
def test_rung_matches_at_a_full_benchmark_size(name):
    """2048^3: every SM busy, persistent blocks walking several tiles each, full raster bands."""
    verdict = LAB.check(name, 2048, 2048, 2048)
    assert verdict.ok, str(verdict)


@needs_gpu
@needs_hopper
def test_the_hook_reuses_its_scratch_buffers_across_shapes():
    """The padded copy of B and TF32's B^T are cached and grown: a smaller shape after a larger one
    and a larger one after it still get fresh, correct copies."""
    for shape in [(300, 257, 264), (129, 33, 72), (520, 1001, 520)]:
        for name in ["h4", "h4_tf32"]:
            verdict = LAB.check(name, *shape)
            assert verdict.ok, str(verdict)
