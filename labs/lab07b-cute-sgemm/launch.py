"""How lab 7b launches c6 (stream-K): which tiles run whole, how many blocks share the rest, and the
workspace of partial tiles they hand each other (c6_stream_k.cu's header says what the kernel does).

    StreamK()                   c6's launch_hook (common/kernels.py): the schedule per shape, worked out
                                once, then each call is one launch (two with SPLIT_LAUNCH, below)
    schedule(tiles, k_tiles, workers)  -> (dp_tiles, workers): the rule below, on its own (tests)
    splits(k, M, N, K, dp_tiles)       -> whether the whole tiles get a launch of their own (tests)
    release()                   free the cached workspaces
    PackA()                     c7's launch_hook: A transposed into a workspace (c7's pack entry), then
                                StreamK on it

The rule. workers = the blocks that fit on the GPU at once (SMs x resident blocks per SM: 264 for c6 on
the H200). With tiles % workers == 0 every wave is full: all tiles run whole (no workers). Otherwise the
whole waves run whole and the last, partial wave's tiles are shared by all workers; when that tail is
less than half a wave and there is a whole wave before it, one whole wave joins the tail, so that no
worker's share is a sliver of a tile (many partials to add for one tile) but each is 0.5-1.5 tiles.

Two launches (c6's SPLIT_LAUNCH = 1; 0 is one launch, 2 the default, below). When the shape divides
the tile (BM | M, BN | N, BK | K) and there are whole tiles, they run first as cute_sgemm_c6_tiles on
a grid of dp_tiles blocks: c5's loop with no edge path, in a kernel of its own. Then the workers run as
c6's vec entry on a grid of `workers` blocks with first_block = dp_tiles. One stream: the second launch starts when the first
has finished, and its blocks fill the GPU at once (there are as many as fit).
SPLIT_LAUNCH = 2: the same, with the workers in an entry point of their own, cute_sgemm_c6_workers
(no edge path either; c6_stream_k.cu says what else it changes).
(Tried and left out, results/lab07b-c6-compare_*_8ded15d.json: the workers first and the whole tiles
beside them on a second stream, so that the tiles' blocks would fill each SM as a worker left it:
96.6-96.8 % of cuBLAS at 4096^3 against 100.2-100.3 % for SPLIT_LAUNCH = 2 in the same run.)
"""
import math
from dataclasses import dataclass

import numpy as np

from common.workspaces import Workspaces

_workspaces = Workspaces()   # (workers, tile floats) -> partials, then the flags (common/workspaces.py)
_plans = {}        # (entry function, M, N, K) -> _Plan
_packed = Workspaces(keep=2)   # (M, K) -> c7's packed A, K x M floats (256 MB at 8192^2: two kept at most)
_packs = {}        # id(entry function) -> its cubin's pack entry, prepared once


def schedule(tiles, k_tiles, workers):
    """(dp_tiles, workers) for `tiles` output tiles of `k_tiles` k-tiles on `workers` resident blocks."""
    if workers <= 1 or tiles % workers == 0:
        return tiles, 0
    tail = tiles % workers
    if tiles > workers and 2 * tail < workers:
        tail += workers
    if tail * k_tiles >= 2**31:                            # the kernel counts the shared iterations in an int
        return tiles, 0
    return tiles - tail, min(workers, tail * k_tiles)      # no worker without a k-tile


def release():
    _workspaces.release()
    _packed.release()
    _plans.clear()
    _packs.clear()


def resident_blocks(func, k):
    """Blocks of c6 that fit on the GPU at once: SMs x the occupancy of its ptxas registers and shared
    memory (common/hierarchy.py, cuda_occupancy.h's rules). An estimate that is off only balances the
    shares less well: correctness does not depend on it."""
    from common.device import gpu_facts
    from common.errors import CourseError
    from common.hierarchy import occupancy
    facts = gpu_facts()
    try:
        per_sm = occupancy(facts["arch"], k.threads, func.num_regs, func.shared_size_bytes, k.shared_bytes,
                           facts=facts).blocks_per_sm
    except CourseError:                        # an architecture the occupancy table does not know yet
        per_sm = 1
    return facts["sms"] * max(1, per_sm)


def splits(k, M, N, K, dp_tiles):
    """Do the whole tiles run as a launch of their own? SPLIT_LAUNCH on, whole tiles to run, and a shape
    that divides the tile (the tiles entry has no edge path)."""
    return bool(k.tiling.value("SPLIT_LAUNCH")) and dp_tiles > 0 and divides(k, M, N, K)


def divides(k, M, N, K):
    """Does the shape divide the tile (BM | M, BN | N, BK | K): may the tiles and workers entries run it?"""
    bm, bn = k.tile
    return M % bm == 0 and N % bn == 0 and K % k.tiling.value("BK") == 0


class _Plan:
    def __init__(self, k, func, M, N, K, workers_entry_always=False):
        from common.kernels import sibling
        bm, bn = k.tile
        tiles = math.ceil(M / bm) * math.ceil(N / bn)
        k_tiles = math.ceil(K / k.tiling.value("BK"))
        # workers_entry_always (c7): where the shape divides the tile, the workers entry runs the shared tiles
        # even with no whole tiles before them, and the shares are made for its occupancy, not func's
        always = (workers_entry_always and "vec" in k.entries and "workers" in k.helpers and divides(k, M, N, K)
                  and k.tiling.value("SPLIT_LAUNCH") == 2
                  and sibling(func, k.entries["vec"], k.shared_bytes, k.signature) is func)
        occupant = sibling(func, k.helpers["workers"], k.shared_bytes, "iiifPPfPiiP") if always else func
        resident = resident_blocks(occupant, k)
        self.dp_tiles, self.workers = schedule(tiles, k_tiles, resident)
        self.func = func                           # the entry point this plan was made for
        self.block, self.shared = (k.threads, 1, 1), k.shared_bytes
        w = max(self.workers, 1)                   # partials, then flags: zero at first, left zero by each launch
        self.ws = _workspaces.get((w, bm * bn), w * bm * bn + w, zeroed=True)
        self.head = (np.int32(M), np.int32(N), np.int32(K))
        # the tiles entry serves the vec entry's launches only: a scalar launch stays one kernel
        self.tiles = self.workers_entry = None
        if "vec" in k.entries and splits(k, M, N, K, self.dp_tiles):
            vec = sibling(func, k.entries["vec"], k.shared_bytes, k.signature)
            if vec is func:
                self.tiles = sibling(func, k.helpers["tiles"], k.shared_bytes, "iiifPPfP")
                if k.tiling.value("SPLIT_LAUNCH") == 2 and self.workers > 0:
                    self.workers_entry = sibling(func, k.helpers["workers"], k.shared_bytes, "iiifPPfPiiP")
        elif always and self.workers > 0:        # no whole tiles: the workers entry alone
            self.workers_entry = occupant
        first = self.dp_tiles if self.tiles is not None else 0
        self.grid = (self.dp_tiles + self.workers - first, 1, 1)
        self.tail = (np.int32(self.dp_tiles), np.int32(self.workers), np.int32(first))

    def run_tiles(self, a, b, c, alpha, beta, stream):
        """The split launch's first kernel: the whole tiles (self.tiles is not None)."""
        self.tiles.prepared_async_call((self.dp_tiles, 1, 1), self.block, stream, *self.head, np.float32(alpha), a, b,
                                       np.float32(beta), c, shared_size=self.shared)

    def run_rest(self, a, b, c, alpha, beta, stream):
        """The rest: the workers after run_tiles (the workers entry, or func from first_block on), or with no
        split the one launch of func over every block."""
        if self.workers_entry is not None:
            self.workers_entry.prepared_async_call((self.workers, 1, 1), self.block, stream, *self.head,
                                                   np.float32(alpha), a, b, np.float32(beta), c, *self.tail[:2],
                                                   self.ws, shared_size=self.shared)
        else:
            self.func.prepared_async_call(self.grid, self.block, stream, *self.head, np.float32(alpha), a, b,
                                          np.float32(beta), c, *self.tail, self.ws, shared_size=self.shared)


@dataclass(frozen=True)
class StreamK:
    """c6's launch: grid dp_tiles + workers, the workspace appended to c5's arguments.
    workers_entry_always: c7's (_Plan says what it changes)."""
    workers_entry_always: bool = False

    def __call__(self, k, func, M, N, K, a, b, c, alpha, beta, stream):
        key = (id(func), M, N, K)
        p = _plans.get(key)
        if p is None:
            p = _plans[key] = _Plan(k, func, M, N, K, self.workers_entry_always)
        if p.tiles is not None:
            p.run_tiles(a, b, c, alpha, beta, stream)
            if p.workers == 0:
                return
        p.run_rest(a, b, c, alpha, beta, stream)


@dataclass(frozen=True)
class PackA:
    """c7's launch: the pack entry writes A transposed (K x M) into a workspace, then c6's launch
    (StreamK) runs c7's entry points on it. Both on the same stream: the product starts after the pack.
    The pack's blocks are PACK_TILE x 8 threads, one per PACK_TILE x PACK_TILE tile of A (c7_packed_a.cu)."""

    def __call__(self, k, func, M, N, K, a, b, c, alpha, beta, stream):
        from common.kernels import sibling
        pack = _packs.get(id(func))
        if pack is None:
            pack = _packs[id(func)] = sibling(func, k.helpers["pack"], 0, "PPii")
        tile = int(k.tiling.value("PACK_TILE"))
        at = _packed.get((M, K), M * K)
        grid = (math.ceil(K / tile), math.ceil(M / tile), 1)
        pack.prepared_async_call(grid, (tile, 8, 1), stream, a, at, np.int32(M), np.int32(K))
        StreamK(workers_entry_always=True)(k, func, M, N, K, at, b, c, alpha, beta, stream)
