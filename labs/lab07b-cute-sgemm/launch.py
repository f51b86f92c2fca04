"""How lab 7b launches c6 (stream-K): which tiles run whole, how many blocks share the rest, and the
workspace of partial tiles they hand each other (c6_stream_k.cu's header says what the kernel does).

    StreamK()                   c6's launch_hook (common/kernels.py): the schedule per shape, worked out
                                once, then each call is one launch
    schedule(tiles, k_tiles, workers)  -> (dp_tiles, workers): the rule below, on its own (tests)
    release()                   free the cached workspaces

The rule. workers = the blocks that fit on the GPU at once (SMs x resident blocks per SM: 264 for c6 on
the H200). With tiles % workers == 0 every wave is full: all tiles run whole (no workers). Otherwise the
whole waves run whole and the last, partial wave's tiles are shared by all workers; when that tail is
less than half a wave and there is a whole wave before it, one whole wave joins the tail, so that no
worker's share is a sliver of a tile (many partials to add for one tile) but each is 0.5-1.5 tiles.
"""
import math
from dataclasses import dataclass

import numpy as np

_workspaces = {}   # (workers, tile floats) -> DeviceAllocation: partials, then zeroed flags
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


def _workspace(workers, tile_floats):
    import pycuda.driver as cuda
    key = (workers, tile_floats)
    ws = _workspaces.get(key)
    if ws is None:
        words = workers * tile_floats + workers
        ws = cuda.mem_alloc(words * 4)
        cuda.memset_d32(ws, 0, words)          # the flags must start at zero; each launch leaves them so
        _workspaces[key] = ws
    return ws


def release():
    import pycuda.driver as cuda
    if _workspaces:
        cuda.Context.synchronize()
    for ws in _workspaces.values():
        ws.free()
    _workspaces.clear()
    _plans.clear()


class _Plan:
    def __init__(self, k, func, M, N, K):
        from common.device import init_gpu, resident_blocks
        import pycuda.driver as cuda
        bm, bn = k.tile
        tiles = math.ceil(M / bm) * math.ceil(N / bn)
        k_tiles = math.ceil(K / k.tiling.value("BK"))
        sms = init_gpu().get_attribute(cuda.device_attribute.MULTIPROCESSOR_COUNT)
        resident = sms * resident_blocks(func, k.threads, k.shared_bytes)
        self.dp_tiles, self.workers = schedule(tiles, k_tiles, resident)
        self.grid = (self.dp_tiles + self.workers, 1, 1)
        self.block, self.shared = (k.threads, 1, 1), k.shared_bytes
        self.ws = _workspace(max(self.workers, 1), bm * bn)
        self.head = (np.int32(M), np.int32(N), np.int32(K))
        self.tail = (np.int32(self.dp_tiles), np.int32(self.workers))


@dataclass(frozen=True)
class StreamK:
    """c6's launch: grid dp_tiles + workers, the workspace appended to c5's arguments."""

    def __call__(self, k, func, M, N, K, a, b, c, alpha, beta, stream):
        key = (id(func), M, N, K)
        p = _plans.get(key)
        if p is None:
            p = _plans[key] = _Plan(k, func, M, N, K)
        func.prepared_async_call(p.grid, p.block, stream, *p.head, np.float32(alpha), a, b, np.float32(beta), c,
                                 *p.tail, p.ws, shared_size=p.shared)
