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
          (77, 67, 45)]           # K % 8 != 0: only h1, h4_3xtf32 and h6_3xtf32 serve it (the other TMA rungs refuse it)
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
    """The padded copy of B, TF32's B^T and 3xTF32's split parts are cached and grown: a smaller shape
    after a larger one and a larger one after it still get fresh, correct copies."""
    for shape in [(300, 257, 264), (129, 33, 72), (520, 1001, 520)]:
        for name in ["h4", "h6", "h7", "h4_tf32", "h6_tf32", "h4_3xtf32", "h6_3xtf32"]:
            verdict = LAB.check(name, *shape)
            assert verdict.ok, str(verdict)


PERSISTENT = ["h4", "h5", "h6", "h7", "h4_tf32", "h6_tf32", "h6_3xtf32"]   # the rungs whose blocks walk several tiles each


@needs_gpu
@needs_hopper
@pytest.mark.parametrize("name", PERSISTENT)
def test_persistent_rungs_are_bitwise_repeatable(name):
    """Each output tile is summed by one warpgroup in K order, whichever block takes it: the same bits on
    every run (2000 x 3000 x 1000: 16 x 12 tiles on 132 SMs, ragged on both edges). h7 splits the 60 tiles
    past the first round over all 132 blocks (7.3 k-iterations each of a tile's 16) and adds the pieces
    in block order: the same bits too."""
    import numpy as np
    A, B = LAB.random_inputs(name, 2000, 3000, 1000, np.random.default_rng(5))
    first = LAB.matmul(name, A, B)
    for _ in range(3):
        assert np.array_equal(first, LAB.matmul(name, A, B), equal_nan=True)


@needs_gpu
@needs_hopper
@pytest.mark.parametrize("name", PERSISTENT)
def test_nan_and_inf_in_the_inputs_reach_c_where_float64_puts_them(name):
    """A NaN in A poisons its row of C; an Inf in B makes its column infinite (NaN where it meets the
    NaN row); every other element stays finite. The epilogue (h6's shared-memory chunks included)
    moves them unchanged."""
    import numpy as np
    M, N, K = 300, 520, 264
    A, B = LAB.random_inputs(name, M, N, K, np.random.default_rng(9))
    A[17, 40] = np.nan
    B[100, 257] = np.inf
    out = LAB.matmul(name, A, B)
    ref = A.astype(np.float64) @ B.astype(np.float64)
    assert np.array_equal(np.isnan(out), np.isnan(ref)), np.argwhere(np.isnan(out) != np.isnan(ref))[:5]
    assert np.array_equal(np.isposinf(out), np.isposinf(ref)) and np.array_equal(np.isneginf(out), np.isneginf(ref))
    assert np.isnan(ref[17]).all() and np.isinf(np.delete(ref[:, 257], 17)).all()


# --- h7: the stream-K tail on the device ------------------------------------------------------------
def _cdiv(a, b):
    return -(-a // b)


def h7_plan(M, N, K):
    """(grid, dp_tiles, tiles, the most contributors one tile's finalizer adds) of h7 at this shape on
    this GPU: the hook's plan, and the split in exact integers (test_h7_stream_k.py checks the kernel's
    header against the same model)."""
    launch = LAB.module("launch")
    k = LAB.kernel("h7")
    (bm, bn), kt = k.tile, _cdiv(K, k.tiling.value("BK"))
    tiles = _cdiv(M, bm) * _cdiv(N, bn)
    grid, dp = launch.stream_k_plan(tiles, kt, launch._sm_count())
    total = (tiles - dp) * kt
    starts = [b * total // grid for b in range(grid + 1)]
    inside = {}
    for b in range(grid):
        if starts[b + 1] > starts[b] and starts[b] % kt:
            inside[starts[b] // kt] = inside.get(starts[b] // kt, 0) + 1
    return grid, dp, tiles, max(inside.values(), default=0)


def three_way_shape():
    """3 tile rows (M = 300: the last 44 rows) and n tile columns (the last 100 wide), K = 2048 (32
    k-iterations a tile), n chosen so that the tiles past the full rounds, S, give each block 4 to 10
    iterations: every stream-K tile is split over 3 or more blocks."""
    sms = LAB.module("launch")._sm_count()
    n = next(n for n in range(1, 10 * sms) if sms / 8 <= (3 * n) % sms < sms / 3)
    return 300, 256 * (n - 1) + 100, 2048


def ragged_tail_shape():
    """17 tile rows (GROUP = 16: the last band is the one ragged row, 5 rows of C) and n columns (the
    last 100 wide), with the S tiles past the full rounds all in that last row; K large enough that
    stream-K is on (S KT >= 4 SMs): each tile's k-iterations are spread over dozens of blocks."""
    sms = LAB.module("launch")._sm_count()
    n = next(n for n in range(2, 10 * sms) if 0 < (17 * n) % sms <= n)
    s = (17 * n) % sms
    return 16 * 128 + 5, 256 * (n - 1) + 100, 64 * _cdiv(4 * sms, s)


@needs_gpu
@needs_hopper
def test_h7_adds_a_tile_split_over_three_or_more_blocks_correctly():
    M, N, K = three_way_shape()
    grid, dp, tiles, most = h7_plan(M, N, K)
    assert dp < tiles and most >= 2, (M, N, K, grid, dp, tiles, most)     # stream-K on, 2+ contributors
    verdict = LAB.check("h7", M, N, K)
    assert verdict.ok, str(verdict)
    verdict = LAB.check_exact("h7", M, N, K)     # small integers: a k-range added twice or never is off by >= 1
    assert verdict.ok, str(verdict)


@needs_gpu
@needs_hopper
def test_h7_fixes_up_tiles_on_the_ragged_edges_of_c():
    """Every stream-K tile is in the last tile row (5 rows of C), the last one also in the last, 100-wide,
    tile column: the partials hold zeros past the edges (TMA's fill), the epilogue's TMA store clips."""
    M, N, K = ragged_tail_shape()
    grid, dp, tiles, most = h7_plan(M, N, K)
    assert 0 < tiles - dp <= _cdiv(N, 256) and most >= 2, (M, N, K, grid, dp, tiles, most)
    verdict = LAB.check("h7", M, N, K)
    assert verdict.ok, str(verdict)


@pytest.fixture
def stream_k_forced(monkeypatch):
    """h7 with stream-K on wherever the SMs do not divide the tiles, however few k-iterations a block
    gets (most blocks nothing at the small shapes: empty ranges the finalizers must step over) and
    however full the last round."""
    launch = LAB.module("launch")
    monkeypatch.setattr(launch, "MIN_SK_ITERS", 0)
    monkeypatch.setattr(launch, "SK_TAIL_MAX", 1.0)
    launch._PREPARED.clear()
    yield
    launch._PREPARED.clear()


@needs_gpu
@needs_hopper
@pytest.mark.parametrize("shape", [s for s in SHAPES if s[2] % 8 == 0], ids=lambda s: "x".join(map(str, s)))
def test_h7_with_stream_k_forced_matches_float64_on_every_odd_shape(stream_k_forced, shape):
    verdict = LAB.check("h7", *shape)
    assert verdict.ok, str(verdict)


@needs_gpu
@needs_hopper
def test_h7_with_stream_k_forced_moves_nan_and_inf_through_the_partials(stream_k_forced):
    """300 x 520 x 264 forced: 9 tiles x 5 k-iterations over all the SMs, each tile summed from 5 blocks'
    pieces; a NaN or an Inf in one piece reaches C where float64 puts it."""
    import numpy as np
    M, N, K = 300, 520, 264
    A, B = LAB.random_inputs("h7", M, N, K, np.random.default_rng(9))
    A[17, 40] = np.nan
    B[100, 257] = np.inf
    out = LAB.matmul("h7", A, B)
    ref = A.astype(np.float64) @ B.astype(np.float64)
    assert np.array_equal(np.isnan(out), np.isnan(ref)), np.argwhere(np.isnan(out) != np.isnan(ref))[:5]
    assert np.array_equal(np.isposinf(out), np.isposinf(ref)) and np.array_equal(np.isneginf(out), np.isneginf(ref))


@needs_gpu
@needs_hopper
def test_h7_stays_correct_launch_after_launch_across_shapes():
    """The flags are never reset: each launch waits for its own epoch. Two stream-K shapes in turn, three
    times, and a shape with stream-K off between them: stale flags of an earlier launch must never pass."""
    shapes = [three_way_shape(), (2000, 3000, 1000), (300, 520, 264)]
    assert h7_plan(*shapes[1])[1] < h7_plan(*shapes[1])[2]              # 2000 x 3000 x 1000: stream-K on
    for _ in range(3):
        for shape in shapes:
            verdict = LAB.check("h7", *shape)
            assert verdict.ok, f"{shape}: {verdict}"
