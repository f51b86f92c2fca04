"""Lab 7b on the GPU: every rung and variant against a float64 reference, C = alpha A B + beta C.

Shapes: a 1x1x1 product, partial tiles on every side (127, 129), K odd or not a multiple of 4 (the
scalar variant), K smaller than one k-tile, tall-skinny and short-wide, full tiles. The output is
poisoned with NaN first; with beta = 0 the C the kernel gets holds NaN, so a kernel that reads it
anyway fails. The tolerance is FP32's bound from common/precision.py (gamma_K |A||B| plus the
rounding of alpha and beta)."""
import pytest

from common.testing import gpu_cases, lab_of, needs_gpu

LAB = lab_of(__file__)

SHAPES = [(1, 1, 1), (1, 300, 77), (17, 33, 9), (127, 129, 131), (129, 127, 64), (128, 130, 128),
          (257, 129, 513), (1000, 3, 520), (4099, 3, 64), (2, 3001, 40), (5, 7, 2048), (512, 512, 512),
          (300, 300, 1), (256, 256, 4), (384, 640, 100)]
CASES, IDS = gpu_cases(LAB.own(), SHAPES)
AB_SHAPES = [(1, 1, 1), (127, 129, 131), (256, 260, 64), (512, 512, 96)]
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


@needs_gpu
@pytest.mark.parametrize("params", [dict(BN=256, BK=16), dict(BN=256, BK=8, A_MMAJOR=1),
                                    dict(BN=256, BK=16, A_MMAJOR=1, FMA_ORDER=1),
                                    dict(A_MMAJOR=1, MIN_BLOCKS=2, GROUP=8)],   # the H200's tuned best
                         ids=lambda p: "_".join(f"{k}{v}" for k, v in p.items()))
def test_tuning_configurations_of_c5_are_correct(params):
    """What `make tune` may pick is checked by the tuner after timing; these are checked here on
    awkward shapes and on shapes that divide the tile, both variants, beta = 0 and beta != 0."""
    k = LAB.kernel("c5").with_params(**params)
    for shape, beta in (((257, 259, 515), 0.0), ((300, 516, 129), 0.5), ((129, 131, 67), 0.0),
                        ((512, 512, 320), 0.5), ((512, 512, 64), 0.0)):
        for variant in k.variants:
            if k.serves(variant, *shape):
                verdict = LAB.check(k, *shape, variant=variant, alpha=1.25, beta=beta)
                assert verdict.ok, str(verdict)


@needs_gpu
@pytest.mark.parametrize("shape,beta", [((4096, 2048, 200), 0.0), ((4097, 2050, 99), 0.5), ((2176, 2176, 512), 0.0),
                                        ((3000, 3100, 333), -1.0), ((2560, 2560, 64), 0.5), ((4096, 4096, 256), 0.0)], ids=lambda x: "x".join(map(str, x)) if isinstance(x, tuple) else str(x))
@pytest.mark.parametrize("name", ["c6", "c7"])
def test_c6_whole_tiles_and_a_shared_tail_on_large_shapes(shape, beta, name):
    """Shapes with more tiles than resident blocks: whole tiles, then the stream-K tail (the small
    shapes above run all of their tiles shared). c7 is c6 on A packed."""
    for variant in ("vec", "scalar"):
        if LAB.kernel(name).serves(variant, *shape):
            verdict = LAB.check(name, *shape, variant=variant, alpha=1.25, beta=beta)
            assert verdict.ok, str(verdict)


@needs_gpu
@pytest.mark.parametrize("split", [1, 2])
@pytest.mark.parametrize("shape", [(2560, 2560, 64), (4096, 4096, 256)], ids=lambda s: "x".join(map(str, s)))
def test_c6_runs_the_whole_tiles_of_an_even_shape_in_a_launch_of_their_own(shape, split):
    """SPLIT_LAUNCH: where the shape divides the tile and some tiles run whole, the vec launch is two:
    c6's tiles entry, then the workers (launch.py): c6's vec entry (1) or its workers entry (2).
    Checked against float64 above; here, that it happened."""
    import importlib
    launch = importlib.import_module(f"{LAB.package}.launch")
    launch.release()
    k = LAB.kernel("c6").with_params(SPLIT_LAUNCH=split)
    verdict = LAB.check(k, *shape, variant="vec", alpha=1.25, beta=0.5)
    assert verdict.ok, str(verdict)
    plans = [p for (_, *mnk), p in launch._plans.items() if tuple(mnk) == shape]
    assert plans, "c6's launch made no plan for this shape"
    p = plans[0]
    assert launch.splits(k, *shape, p.dp_tiles) == (p.tiles is not None)
    if p.dp_tiles > 0:                          # every GPU of the course has whole tiles at these shapes
        assert p.tiles is not None and p.tail[2] == p.dp_tiles   # the workers' grid starts after them
        assert (p.workers_entry is not None) == (split == 2 and p.workers > 0)


@needs_gpu
@pytest.mark.parametrize("split", [0, 1, 2])
def test_c6_is_bitwise_repeatable_in_each_launch_form(split):
    """Each form runs the same shares and adds the partials in the same order: the same bits on every run
    (2560 x 2560 x 64: whole tiles and a shared tail on every GPU of the course)."""
    import numpy as np
    k = LAB.kernel("c6").with_params(SPLIT_LAUNCH=split)
    A, B = LAB.random_inputs(k, 2560, 2560, 64, np.random.default_rng(11))
    first = LAB.matmul(k, A, B)
    for _ in range(3):
        assert np.array_equal(first, LAB.matmul(k, A, B))


@needs_gpu
@pytest.mark.parametrize("shape", [(4096, 2048, 200), (257, 259, 515), (1000, 3, 520)], ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("name", ["c6", "c7"])
def test_c6_is_bitwise_repeatable(shape, name):
    """Each partial tile is added by its owner in worker order: the same bits on every run (the flags
    each launch leaves zero make the second run the same as the first)."""
    import numpy as np
    k = LAB.kernel(name)
    A, B = LAB.random_inputs(k, *shape, np.random.default_rng(7))
    first = LAB.matmul(name, A, B)
    for _ in range(3):
        assert np.array_equal(first, LAB.matmul(name, A, B))


@needs_gpu
@pytest.mark.parametrize("shape", [(1024, 1024, 256), (4096, 4096, 256), (2560, 2560, 64)], ids=lambda s: "x".join(map(str, s)))
def test_c7_runs_every_shape_that_divides_the_tile_in_its_tiles_and_workers_entries(shape):
    """c7's edge entries hold one block per SM (c7_packed_a.cu says why); a shape that divides the tile
    runs its whole tiles (if any) in the tiles entry and its shared tiles in the workers entry, whose shares
    are made for the workers entry's two blocks per SM (launch.py, workers_entry_always)."""
    import importlib
    launch = importlib.import_module(f"{LAB.package}.launch")
    launch.release()
    verdict = LAB.check("c7", *shape, variant="vec", alpha=1.25, beta=0.5)
    assert verdict.ok, str(verdict)
    plans = [p for (_, *mnk), p in launch._plans.items() if tuple(mnk) == shape]
    assert len(plans) == 1
    p = plans[0]
    assert (p.tiles is not None) == (p.dp_tiles > 0)
    assert (p.workers_entry is not None) == (p.workers > 0)
    assert (shape[0], shape[2]) in launch._packed                         # A packed, M x K
