"""How lab 7a launches k8: its split pass, then the GEMM on what the pass wrote (the row's launch_hook,
common/kernels.py). kernels/k8_3xtf32.cu's header says what the two kernels do and why.

    PreSplit()              k8's launch_hook: the cubin's split entry (the row's helper "split") writes
                            the big and small TF32 parts of A and B, in the GEMM's tiles, into two
                            device buffers kept here; then the chosen GEMM entry (vec or scalar) runs on
                            them. Both go to the caller's stream, one after the other: a call's time
                            (bench, grade) covers the split, as a library call would get A and B as they are.
    split_words(k, M, N, K) -> (floats of A's tiles, floats of B's tiles): 2 Mp Kp and 2 Np Kp, where
                            Mp, Np, Kp are M, N, K rounded up to the kernel's BM, BN, BK
    release()               free the buffers (after a synchronize)

The buffers only grow: a call that needs more than they hold frees them (after a synchronize: a launch in
flight may still read them) and allocates the new size, so a timed loop allocates nothing. 8192^3 needs
2 x 2 x 8192^2 floats of each operand's parts: 1 GiB in all. Per call the Python work is two prepared
launches, worked out once per (function, M, N, K): common.timing's events bracket the hook, Python included.
One k8 call at a time: two calls in flight on different streams would share the buffers (the course
runs one stream).
"""
import math
from dataclasses import dataclass

import numpy as np

from common.errors import CourseError

MAX_GRID_Y = 65535          # CUDA's limit on gridDim.y: the split pass walks K on it, the GEMM M

_buffers = {}               # "A", "B" -> (allocation, floats)
_plans = {}                 # (id(GEMM function), M, N, K) -> _Plan


def split_words(k, M, N, K):
    """Floats of the split tiles of A and of B for kernel row `k` (its BM, BN, BK) at M x N x K."""
    bm, bn = k.tile
    bk = k.tiling.value("BK")
    kp = math.ceil(K / bk) * bk
    return 2 * math.ceil(M / bm) * bm * kp, 2 * math.ceil(N / bn) * bn * kp


def release():
    import pycuda.driver as cuda
    if _buffers:
        cuda.Context.synchronize()
    for buf, _ in _buffers.values():
        buf.free()
    _buffers.clear()
    _plans.clear()


def _buffer(name, words, M, N, K):
    """The device buffer `name` with room for `words` floats (grown, never shrunk)."""
    import pycuda.driver as cuda
    held = _buffers.get(name)
    if held is not None and held[1] >= words:
        return int(held[0])
    if held is not None:
        cuda.Context.synchronize()              # a launch in flight may still read the old one
        held[0].free()
        del _buffers[name]
        _plans.clear()                          # prepared launches point at the old buffer
    try:
        buf = cuda.mem_alloc(words * 4)
    except cuda.MemoryError:
        raise CourseError(f"k8 at {M}x{N}x{K}: no room on the GPU for the split {name} "
                          f"({words * 4 / 2**30:.2f} GiB: {name}'s big and small TF32 parts, padded to whole tiles)",
                          hint="k8 keeps A's and B's split parts beside A, B and C: choose a smaller shape, "
                               "or free device memory") from None
    _buffers[name] = (buf, words)
    return int(buf)


class _Plan:
    def __init__(self, k, func, M, N, K):
        from common.kernels import sibling
        if min(M, N, K) < 1:
            raise CourseError(f"k8 cannot run M={M}, N={N}, K={K}: M, N and K must be at least 1",
                              hint="an empty product has nothing to compute: leave the call out")
        tile = k.tiling.value("SPLIT_TILE")
        bm, bn = k.tile
        bk = k.tiling.value("BK")
        mp, np_, kp = math.ceil(M / bm) * bm, math.ceil(N / bn) * bn, math.ceil(K / bk) * bk
        self.split_grid = ((mp + np_) // tile, math.ceil(kp / tile), 1)
        self.grid = k.grid(M, N)
        if self.split_grid[1] > MAX_GRID_Y or self.grid[1] > MAX_GRID_Y:
            raise CourseError(f"k8 at {M}x{N}x{K}: a grid above CUDA's {MAX_GRID_Y} blocks in y "
                              f"(split pass: K / {tile} = {self.split_grid[1]}, GEMM: M / {bm} = {self.grid[1]})",
                              hint=f"K up to {MAX_GRID_Y * tile}, M up to {MAX_GRID_Y * bm}")
        a_words, b_words = split_words(k, M, N, K)
        self.at = _buffer("A", a_words, M, N, K)
        self.bt = _buffer("B", b_words, M, N, K)
        self.split = sibling(func, k.helpers["split"], 0, "iiiPPPP")
        self.split_block = (k.tiling.value("SPLIT_THREADS"), 1, 1)
        self.func, self.block, self.shared = func, (k.threads, 1, 1), k.shared_bytes
        self.mnk = (np.int32(M), np.int32(N), np.int32(K))

    def __call__(self, a, b, c, alpha, beta, stream):
        self.split.prepared_async_call(self.split_grid, self.split_block, stream, *self.mnk, a, b, self.at, self.bt)
        self.func.prepared_async_call(self.grid, self.block, stream, *self.mnk, np.float32(alpha), self.at, self.bt,
                                      np.float32(beta), c, shared_size=self.shared)


@dataclass(frozen=True)
class PreSplit:
    """k8's launch: the split pass, then the GEMM entry `func` on the split tiles (module docstring)."""

    def __call__(self, k, func, M, N, K, a, b, c, alpha, beta, stream):
        key = (id(func), M, N, K)
        p = _plans.get(key)
        if p is None:
            p = _Plan(k, func, M, N, K)
            # _Plan may have grown a buffer, which clears _plans: store it after
            _plans[key] = p
        p(a, b, c, alpha, beta, stream)
