"""c6's stream-K schedule, checked without a GPU: launch.py's rule and the kernel's share arithmetic,
mirrored here in Python (c6_stream_k.cu, body()), cover every k-tile of every tile exactly once, give
each worker at most one partial tile to hand on, computed before the worker waits for anything, and
make every owner wait only for earlier blocks (so the waits neither chain nor deadlock). And the SASS of c6's hand-off."""
import importlib
import math

import pytest

from common import targets
from common.testing import lab_of, needs_cuobjdump

LAB = lab_of(__file__)
launch = importlib.import_module(f"{LAB.package}.launch")


def _segments(tiles, k_tiles, dp_tiles, workers):
    """Every block's segments (tile, kt0, kt1) in the order c6's body() runs them: a worker's partial
    (the end of its share, when that stops inside a tile) first, then the segments that end their tiles."""
    blocks = [[(t, 0, k_tiles)] for t in range(dp_tiles)]
    iters = (tiles - dp_tiles) * k_tiles
    q, r = divmod(iters, max(workers, 1))    # no workers: the kernel never calls share_start
    start = lambda w: w * q + min(w, r)   # noqa: E731  (share_start)
    for w in range(workers):
        s0, s1 = start(w), start(w + 1)
        has_partial = s1 > s0 and s1 % k_tiles != 0
        owned_end = max(s0, (s1 - 1) // k_tiles * k_tiles) if has_partial else s1
        segs = []
        if has_partial:
            tile = owned_end // k_tiles
            segs.append((dp_tiles + tile, owned_end % k_tiles, s1 - tile * k_tiles))
        it = s0
        while it < owned_end:
            tile = it // k_tiles
            segs.append((dp_tiles + tile, it % k_tiles, k_tiles))
            it = (tile + 1) * k_tiles
        blocks.append(segs)
    return blocks


SHAPES = [(4096, 4096, 4096), (8192, 8192, 8192), (2048, 2048, 2048), (3072, 4224, 4096), (1, 1, 1), (17, 33, 9),
          (4097, 2050, 99), (4096, 2048, 200), (128, 128, 65536), (300, 300, 1), (2176, 2176, 512)]


@pytest.mark.parametrize("resident", [264, 132, 114, 84, 1])   # H200, one block per SM, A100-like, a small GPU
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_schedule_covers_every_k_tile_once_with_one_partial_per_worker(shape, resident):
    M, N, K = shape
    tiles, k_tiles = math.ceil(M / 128) * math.ceil(N / 128), math.ceil(K / 32)
    dp, workers = launch.schedule(tiles, k_tiles, resident)
    assert 0 <= dp <= tiles and 0 <= workers <= resident and (workers > 0 or dp == tiles)
    blocks = _segments(tiles, k_tiles, dp, workers)
    covered = {}
    for b, segs in enumerate(blocks):
        assert sum(kt1 < k_tiles for _, _, kt1 in segs) <= 1, (b, segs)          # one partial at most ...
        assert all(kt1 == k_tiles for _, _, kt1 in segs[1:]), (b, segs)         # ... run before any wait
        for t, kt0, kt1 in segs:
            assert 0 <= kt0 < kt1 <= k_tiles
            for kt in range(kt0, kt1):
                assert (t, kt) not in covered, (t, kt)
                covered[(t, kt)] = b
    assert len(covered) == tiles * k_tiles
    for t in range(tiles):
        owner = covered[(t, k_tiles - 1)]
        assert all(covered[(t, kt)] <= owner for kt in range(k_tiles))          # waits only for earlier blocks


def test_schedule_at_4096_cubed_on_the_h200_is_three_whole_waves_and_a_shared_tail():
    assert launch.schedule(1024, 128, 264) == (792, 264)      # 232 tiles shared by 264 blocks
    assert launch.schedule(792, 128, 264) == (792, 0)         # whole waves: c5's schedule
    assert launch.schedule(289, 16, 264) == (0, 264)          # a thin tail joins the wave before it


@pytest.fixture(scope="module")
def sass():
    needs_cuobjdump()
    return {c["kernel"]: c for c in targets.sass_counts(LAB, "sm_90", [LAB.kernel("c6")]).values()}


@pytest.mark.parametrize("v", ["vec", "scalar"])
def test_c6_keeps_c5s_main_loop_and_hands_partials_on_through_l2(sass, v):
    c = sass[f"c6/{v}"]
    ops = c["opcodes"]
    assert c["FFMA"] >= 64 * 32 and c["LDL/STL"] == 0
    assert ops.get("NANOSLEEP", 0) > 0                                         # the owner's wait
    assert any(op.startswith("LDG") and "STRONG.GPU" in op for op in ops), ops  # acquire and __ldcg loads
    assert any(op.startswith("MEMBAR") for op in ops), ops                     # the release before the flag
    assert not any(op.startswith(("ATOM", "RED")) for op in ops), ops          # no atomics: an ordered sum
    # the shares take one 32-bit division, inline: no CALL to the 64-bit division routine that the
    # first form (w * I / workers in 64 bits) called at every share_start, in the owner's wait loop too
    assert not any(op.startswith("CALL") for op in ops), ops


@pytest.mark.parametrize("shape,dp,expected", [
    ((4096, 4096, 4096), 792, True),        # 1024 tiles: three whole waves in the tiles launch, then the workers
    ((4096, 4096, 4096), 0, False),         # nothing whole to run (a GPU whose workers take every tile)
    ((4096, 4096, 4004), 792, False),       # K not a multiple of BK: the tiles entry has no k-edge path
    ((4096, 4100, 4096), 792, False),       # N not a multiple of BN
    ((4100, 4096, 4096), 792, False),       # M not a multiple of BM
])
def test_whole_tiles_get_a_launch_of_their_own_only_where_the_shape_divides_the_tile(shape, dp, expected):
    k = LAB.kernel("c6").with_params(SPLIT_LAUNCH=1)
    assert k.tile == (128, 128) and k.tiling.value("BK") == 32
    assert launch.splits(k, *shape, dp) is expected
    assert launch.splits(k.with_params(SPLIT_LAUNCH=0), *shape, dp) is False       # one launch


def test_c6s_tiles_entry_is_c5s_loop_without_an_edge_path(sass):
    t = sass["c6/tiles"]
    ops = t["opcodes"]
    assert t["FFMA"] >= 64 * 32 and t["LDL/STL"] == 0
    assert "NANOSLEEP" not in ops and not any("STRONG.GPU" in op for op in ops)   # no hand-off: whole tiles only
    # no edge path: one set of copies per tile (c6's vec entry has the unpredicated and the predicated set)
    vec = sass["c6/vec"]["opcodes"]
    copies = lambda o: sum(n for op, n in o.items() if op.startswith("LDGSTS"))   # noqa: E731
    assert 0 < copies(ops) < copies(vec), (copies(ops), copies(vec))
    assert ops.get("STG.E.128", 0) > 0, ops                                      # c5's wide epilogue


def _segment(w, j, iters, workers, k_tiles):
    """c6_stream_k.cu's segment(): segment j of worker w's share as (tile, kt0, kt1), None past the last."""
    q, r = divmod(iters, workers)
    s0, s1 = w * q + min(w, r), (w + 1) * q + min(w + 1, r)
    has_partial = s1 > s0 and s1 % k_tiles != 0
    owned_end = max(s0, (s1 - 1) // k_tiles * k_tiles) if has_partial else s1
    if has_partial:
        if j == 0:
            tile = owned_end // k_tiles
            return tile, owned_end % k_tiles, s1 - tile * k_tiles
        j -= 1
    tile = s0 // k_tiles + j
    if s0 >= owned_end or tile * k_tiles >= owned_end:
        return None
    return tile, (s0 % k_tiles if j == 0 else 0), k_tiles


@pytest.mark.parametrize("resident", [264, 132, 114, 84, 1])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_the_workers_entry_enumerates_the_segments_body_runs(shape, resident):
    """SPLIT_LAUNCH = 2: cute_sgemm_c6_workers numbers a worker's segments (segment(w, j)) instead of
    walking them as body() does; both must give every worker the same segments in the same order."""
    M, N, K = shape
    tiles, k_tiles = math.ceil(M / 128) * math.ceil(N / 128), math.ceil(K / 32)
    dp, workers = launch.schedule(tiles, k_tiles, resident)
    blocks = _segments(tiles, k_tiles, dp, workers)
    iters = (tiles - dp) * k_tiles
    for w in range(workers):
        segs, j = [], 0
        while (seg := _segment(w, j, iters, workers, k_tiles)) is not None:
            segs.append((dp + seg[0], seg[1], seg[2]))
            j += 1
        assert segs == blocks[dp + w], (w, segs, blocks[dp + w])


def test_c6s_workers_entry_hands_partials_on_without_an_edge_path(sass):
    t = sass["c6/workers"]
    ops = t["opcodes"]
    assert t["FFMA"] >= 64 * 32 and t["LDL/STL"] == 0
    assert ops.get("NANOSLEEP", 0) > 0 and any("STRONG.GPU" in op for op in ops)   # the hand-off of body()
    assert not any(op.startswith(("ATOM", "RED", "CALL")) for op in ops), ops
    copies = lambda o: sum(n for op, n in o.items() if op.startswith("LDGSTS"))   # noqa: E731
    assert copies(ops) == copies(sass["c6/tiles"]["opcodes"]), ops               # the tiles entry's copies


class _Recorder:
    """A stand-in for a prepared PyCUDA function: records each launch (grid, block, arguments, shared)."""

    def __init__(self, name, calls):
        self.name, self.calls = name, calls

    def prepared_async_call(self, grid, block, stream, *args, shared_size):
        self.calls.append((self.name, grid, block, stream, tuple(args), shared_size))


def _plan(dp_tiles, workers, tiles, workers_entry, calls):
    """A launch plan as _Plan makes it for 4096^3 on a GPU of `workers` resident blocks, with recording
    functions in place of the GPU's (no GPU needed: what is checked is what gets launched, and how)."""
    import numpy as np
    p = object.__new__(launch._Plan)
    p.func = _Recorder("vec", calls)
    p.tiles = _Recorder("tiles", calls) if tiles else None
    p.workers_entry = _Recorder("workers", calls) if workers_entry else None
    p.dp_tiles, p.workers = dp_tiles, workers
    p.block, p.shared, p.ws = (256, 1, 1), 98304, "WS"
    p.head = (np.int32(4096),) * 3
    first = dp_tiles if tiles else 0
    p.grid = (dp_tiles + workers - first, 1, 1)
    p.tail = (np.int32(dp_tiles), np.int32(workers), np.int32(first))
    return p


@pytest.mark.parametrize("form", ["one launch", "split 1", "split 2"])
def test_the_hook_launches_what_each_form_says_with_the_kernels_argument_lists(form, monkeypatch):
    """The argument lists of c6_stream_k.cu's header, in order: (M, N, K, alpha, A, B, beta, C) for the
    tiles entry; + (dp_tiles, workers, workspace) for the workers entry; + (dp_tiles, workers,
    first_block, workspace) for the vec entry."""
    calls = []
    p = _plan(792, 264, form != "one launch", form == "split 2", calls)
    func = object()
    monkeypatch.setitem(launch._plans, (id(func), 4096, 4096, 4096), p)
    launch.StreamK()(None, func, 4096, 4096, 4096, "a", "b", "c", 1.5, 0.5, "s")
    head = (4096, 4096, 4096, 1.5, "a", "b", 0.5, "c")
    blocks = {"one launch": [("vec", 792 + 264, head + (792, 264, 0, "WS"))],
              "split 1": [("tiles", 792, head), ("vec", 264, head + (792, 264, 792, "WS"))],
              "split 2": [("tiles", 792, head), ("workers", 264, head + (792, 264, "WS"))]}[form]
    assert [(n, g[0], tuple(a)) for n, g, _, _, a, _ in calls] == blocks
    assert all(b == (256, 1, 1) and st == "s" and sh == 98304 for _, _, b, st, _, sh in calls)
