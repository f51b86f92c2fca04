"""How lab 7b launches c6 (stream-K): which tiles run whole, how many blocks share the rest, and the
workspace of partial tiles they hand each other (c6_stream_k.cu's header says what the kernel does).

    StreamK(launches=None)      c6's launch_hook (common/kernels.py): the schedule per shape, worked out
                                once, then each call is one launch, or two (below); launches=1 or 2
                                forces one way (2 falls back to 1 where it cannot run)
    schedule(tiles, k_tiles, workers)  -> (dp_tiles, workers): the rule below, on its own (tests)
    release()                   free the cached workspaces

The rule. workers = the blocks that fit on the GPU at once (SMs x resident blocks per SM: 264 for c6 on
the H200). With tiles % workers == 0 every wave is full: all tiles run whole (no workers). Otherwise the
whole waves run whole and the last, partial wave's tiles are shared by all workers; when that tail is
less than half a wave and there is a whole wave before it, one whole wave joins the tail, so that no
worker's share is a sliver of a tile (many partials to add for one tile) but each is 0.5-1.5 tiles.

Two launches (sm_90 and newer, with NVIDIA's cuda-python bindings; README, "c6 in two launches"). In
one kernel, c6's whole tiles run 1.4 % slower than c5's own kernel: the workers' code shares its 128
registers. So where it can, the hook runs the same schedule as two grids: the whole tiles by
cute_sgemm_c6_whole_* (c5's code alone, blocks 0 .. dp_tiles-1 of the schedule), then c6 itself with
tail_only = 1 (its first dp_tiles blocks return at once), launched with programmatic stream
serialization, so that its workers take the SMs as the first grid's blocks leave them, as the
one-kernel tail does. Before sm_90, or without the bindings, it is one launch.
"""
import math
from dataclasses import dataclass
from typing import Optional
from pathlib import Path

import numpy as np

from common.kernels import load_function
from common.workspaces import Workspaces

_workspaces = Workspaces()   # (workers, tile floats) -> partials, then the flags (common/workspaces.py)
_plans = {}        # (entry function, M, N, K) -> _Plan


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
    _plans.clear()


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


@dataclass(frozen=True)
class StreamK:
    """c6's launch: one grid (dp_tiles + workers blocks), or the whole tiles and the tail as two."""
    launches: Optional[int] = None      # None: two where they can run; 1 or 2: that many (2 needs sm_90+)

    def __call__(self, k, func, M, N, K, a, b, c, alpha, beta, stream):
        key = (id(func), M, N, K, self.launches)
        p = _plans.get(key)
        if p is None:
            p = _plans[key] = _Plan(k, func, M, N, K, self.launches)
        p.run(a, b, c, alpha, beta, stream)


def _two_launches_possible(arch):
    """PDL needs sm_90 or newer and a driver launch with attributes (cuda.bindings): (possible, why not)."""
    if int(arch[3:].rstrip("a")) < 90:
        return False, f"{arch} has no programmatic dependent launch (sm_90 and newer)"
    try:
        import cuda.bindings.driver  # noqa: F401
    except ImportError:
        return False, "NVIDIA's cuda-python bindings are not installed (pip install cuda-bindings)"
    return True, ""


class _Plan:
    def __init__(self, k, func, M, N, K, launches):
        from common.device import gpu_facts
        bm, bn = k.tile
        tiles = math.ceil(M / bm) * math.ceil(N / bn)
        k_tiles = math.ceil(K / k.tiling.value("BK"))
        self.dp_tiles, self.workers = schedule(tiles, k_tiles, resident_blocks(func, k))
        self.grid = (self.dp_tiles + self.workers, 1, 1)
        self.block, self.shared = (k.threads, 1, 1), k.shared_bytes
        w = max(self.workers, 1)                   # partials, then flags: zero at first, left zero by each launch
        self.ws = _workspaces.get((w, bm * bn), w * bm * bn + w, zeroed=True)
        self.func, self.M, self.N, self.K = func, M, N, K
        arch = gpu_facts()["arch"]
        possible, self.why_one = _two_launches_possible(arch)
        self.launch_count = 2 if launches != 1 and possible and self.dp_tiles > 0 and self.workers > 0 else 1
        if self.launch_count == 2:
            variant = k.variant_for(M, N, K)
            cubin = str(k.cubin(Path(k.path).parents[1] / "build", arch))
            self.whole = load_function(cubin, f"cute_sgemm_c6_whole_{variant}", k.shared_bytes, "iiifPPfP")
            self.tail_func = _driver_function(cubin, k.entries[variant], k.shared_bytes)
            self._tails = {}

    def run(self, a, b, c, alpha, beta, stream):
        M, N, K = np.int32(self.M), np.int32(self.N), np.int32(self.K)
        if self.launch_count == 1:
            self.func.prepared_async_call(self.grid, self.block, stream, M, N, K, np.float32(alpha), a, b,
                                          np.float32(beta), c, np.int32(self.dp_tiles), np.int32(self.workers),
                                          self.ws, np.int32(0), shared_size=self.shared)
            return
        # Two: blocks 0 .. dp_tiles-1 as c6_whole's grid, then the same schedule's kernel with tail_only = 1
        # (its first dp_tiles blocks return at once), launched to start before the first grid ends.
        self.whole.prepared_async_call((self.dp_tiles, 1, 1), self.block, stream, M, N, K, np.float32(alpha),
                                       a, b, np.float32(beta), c, shared_size=self.shared)
        key = (int(a), int(b), int(c), float(alpha), float(beta), int(stream.handle) if stream else 0)
        tail = self._tails.get(key)
        if tail is None:
            args = (self.M, self.N, self.K, float(alpha), a, b, float(beta), c, self.dp_tiles, self.workers, self.ws, 1)
            tail = self._tails[key] = tm().Launch(self.tail_func, self.grid, self.block, args, self.shared, key[-1],
                                                  after_previous=True)
        tail()


def tm():
    from common import tensor_maps
    return tensor_maps


_functions = {}


def _driver_function(cubin, entry, smem):
    """The tail's entry point loaded through the driver (a PyCUDA function cannot be launched with
    attributes); once per cubin and entry."""
    import os
    key = (cubin, os.path.getmtime(cubin), entry)
    if key not in _functions:
        f = tm().Module(cubin).function(entry)
        if smem > 48 * 1024:
            tm().set_dynamic_smem(f, smem)
        _functions[key] = f
    return _functions[key]
