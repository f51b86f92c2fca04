"""How lab 7d launches split-K: the main kernel into a workspace, then the ordered reduce into C
(splitk_fp32/fp16), or one kernel that reduces its splits itself (skinny_fp16).

    SplitK(reduce, splits=0, rule=None, fused=())   a row's launch_hook (common/kernels.py): splits = 0
                                  picks them by `rule` (M, N, K, sms, tiles) -> splits when the row has one,
                                  else by the split-k rule (splits_for); a number fixes them. reduce=None:
                                  no reduce kernel, the main kernel's last block per tile adds the partials
                                  (its workspace ends in zeroed ticket counters, below). fused: ((variant,
                                  entry), ...) of a main kernel that also reduces, used when the grid fits
                                  in one wave (uses_fused), else the two launches
    with_splits(row, s)           the same row with s splits, named "splitk_fp32[splits=s]" (same cubin)
    splits_of(row, M, N, K, sms)  the splits a row launches with at this shape
    splits_for(row, M, N, K, sms) the row's rule, else the split-k rule: ceil(sms / tiles), at most
                                  K / MIN_K_PER_SPLIT
    release()                     free every cached workspace (after a synchronize)

The two launches, on the stream the runtime gives (one after the other, so the reduce sees the
partials; nothing else to synchronize):
    main    grid (ceil(N / BN), ceil(M / BM), splits), THREADS, the file's SMEM_BYTES; split z writes
            its partial tile to workspace[z] (splits x M x N floats); C is not touched
    reduce  grid (ceil(M N / REDUCE_THREADS)), REDUCE_THREADS; C[i] = ws[0][i] + ws[1][i] + ... in z order:
            the same additions in the same order on every run, so C is bitwise repeatable
The workspace is allocated once per (M, N, splits) and kept for the next call at that shape (a timing
loop allocates nothing); the few most recent shapes are kept, older ones freed.

With `fused` (splitk_v8_fused_*, splitk_fp32_fused_*, splitk_fp16_fused_*), a grid of at most one block per SM runs as one launch:
the main kernel, a barrier over the grid, and each block's slice of the same ordered reduce (the
splitk_reduce.cuh header says why the barrier needs the whole grid resident, and one block per SM
always is). Its workspace is splits x M x N floats then 2 counters, zeroed once; C comes out bitwise
the same as from the two launches. A larger grid takes the two launches. (Under MPS with an SM limit
the device's SM count overstates what a process gets: set LAB07D_NO_FUSED=1 there.)

TmaSplitK (a SplitK) is the same protocol for wgmma_splitk, whose A and B are TMA maps (lab 7c's code
builds them, as for wgmma_decode): main kernel and reduce, or the fused entry where the grid fits in
one wave, launched with the driver (cuLaunchKernel) on the caller's stream; same workspaces.

With reduce=None (skinny_fp16.cu's header says why) there is one launch, grid (ceil(N / BN), ceil(M / BM),
splits): each split writes its partial BM x BN tile to partial[tile][z] and draws a ticket from its tile's
counter; the last adds the partials in z order, writes C and zeroes the counter. Its workspace is
splits x tiles x BM x BN floats then `tiles` unsigned counters, zeroed once when it is allocated and
left zeroed by every launch that completes; one per (tiles, splits, BM x BN) layout, never shared with
the two-kernel rows (their partials would overwrite the counters).
"""
import functools
import math
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable, Optional

import numpy as np

from common.workspaces import Workspaces

KEEP_WORKSPACES = 8        # workspaces kept allocated, the oldest freed first. An interleaved
                           # timing (common/timing.py) cycles through every row it times: with more split
                           # rows than this at one shape, each call would allocate inside its own timing
                           # (measured: splitk_fp32 at 132 splits took 248 us instead of 66 in a timing of six
                           # split counts with 4 kept: results/lab07d-splitk-more-splits-thrashed_*.json)

_plans = {}                # (main function, M, N, K, hook) -> _Plan
_workspaces = Workspaces(keep=KEEP_WORKSPACES)   # (M, N, splits), ("ticket", tiles, splits, tile floats)
                           # or ("fused", M, N, splits) -> DeviceAllocation (common/workspaces.py)


@dataclass(frozen=True)
class SplitK:
    """launch_hook of a split-K row: `reduce` is the reduce kernel's entry point in the row's .cu file,
    or None for a kernel that reduces its splits itself (one launch, ticket counters in the workspace)."""
    reduce: Optional[str]
    splits: int = 0        # 0: the rule at each shape
    rule: Optional[Callable] = None   # (M, N, K, sms, tiles) -> splits; None: ceil(sms / tiles) (splits_for)
    fused: tuple = ()                 # ((variant, entry), ...): main + reduce in one launch (uses_fused)

    def __call__(self, k, func, M, N, K, a, b, c, alpha, beta, stream):
        key = (id(func), M, N, K, self)        # the hook too: a row without `fused` launches otherwise
        plan = _plans.get(key)
        if plan is None:
            plan = _plans[key] = _Plan(k, func, M, N, K, splits_of(k, M, N, K))
        plan.run(a, b, c, stream)

    def describe(self, k, M, N, K, sms=None):
        """What the sweep shows beside the row's name: "splits=132"."""
        return f"splits={splits_of(k, M, N, K, sms)}"


def with_splits(row, splits):
    """The row with a fixed number of splits (the same source and cubin: only the launch differs)."""
    if splits < 1:
        raise ValueError(f"splits must be at least 1, got {splits}")
    tag = row.name[len(row.base_name) + 1:-1] if row.name != row.base_name else ""     # its parameters, if any
    return replace(row, name=f"{row.base_name}[{tag + ', ' if tag else ''}splits={splits}]",
                   launch_hook=replace(row.launch_hook, splits=int(splits)))


def uses_fused(k, grid, sms):
    """Whether row k runs its one-launch form for this grid: it has one, the grid is at most one block
    per SM (every block resident at once, which its grid barrier needs), and LAB07D_NO_FUSED is unset."""
    import os
    return (bool(getattr(k.launch_hook, "fused", None)) and grid[0] * grid[1] * grid[2] <= sms
            and not os.environ.get("LAB07D_NO_FUSED"))


def _gpu_sms():
    import pycuda.driver as cuda
    from common.device import init_gpu
    return init_gpu().get_attribute(cuda.device_attribute.MULTIPROCESSOR_COUNT)


def splits_of(k, M, N, K, sms=None):
    """The splits row k launches with at M x N x K: its own fixed number, else the dispatcher's rule."""
    fixed = getattr(k.launch_hook, "splits", 0)
    if fixed:
        return fixed
    return splits_for(k, M, N, K, sms if sms is not None else _gpu_sms())


def splits_for(k, M, N, K, sms):
    """The row's own rule (its hook's `rule`, lab.py), given tiles = ceil(M / BM) x ceil(N / BN) of
    row k (its .cu says BM, BN); without one, ceil(sms / tiles) splits, so every SM gets a tile, but
    no split shorter than the table's MIN_K_PER_SPLIT (nor fewer than 1)."""
    from common.lab import load
    bm, bn = k.tile
    tiles = math.ceil(M / bm) * math.ceil(N / bn)
    rule = getattr(k.launch_hook, "rule", None)
    if rule is not None:
        return max(1, int(rule(M, N, K, sms, tiles)))
    by_k = max(1, K // load(Path(k.path).parents[1]).option("MIN_K_PER_SPLIT", 256))
    return max(1, min(math.ceil(sms / tiles), by_k))


def _workspace(key):
    """The workspace for `key`: (M, N, splits) of a two-kernel row (splits x M x N floats),
    ("ticket", tiles, splits, tile_floats) of a row that reduces itself (partials, then zeroed counters),
    or ("fused", M, N, splits) of a one-launch split (partials, then 2 zeroed counters)."""
    if key in _workspaces:
        return _workspaces[key]
    if key[0] == "ticket":                             # partials, then one counter per tile
        _, tiles, splits, tile_floats = key
        words, counters = splits * tiles * tile_floats + tiles, True
    elif key[0] == "fused":                            # partials, then the grid's two counters
        _, M, N, splits = key
        words, counters = splits * M * N + 2, True
    else:
        M, N, splits = key
        words, counters = splits * M * N, False
    return _workspaces.get(key, words, zeroed=counters)   # the counters must start at zero


def release():
    """Free the cached workspaces and forget the plans (a test that wants the memory back)."""
    _workspaces.release()
    _plans.clear()


class _Plan:
    """One shape's launches (main and reduce, or the main kernel alone), worked out once: a timed call
    does only the launches."""

    def __init__(self, k, func, M, N, K, splits):
        from common.kernels import load_function
        from common.lab import load
        lab = load(Path(k.path).parents[1])
        cubin = str(lab.cubin(k, lab.gpu_arch()))
        t = k.tiling
        bm, bn = k.tile
        self.grid = (math.ceil(N / bn), math.ceil(M / bm), splits)
        self.block, self.shared = (k.threads, 1, 1), k.shared_bytes
        self.func, self.reduce = func, None
        if k.launch_hook.reduce is None:               # one launch; partials and tickets in the workspace
            self.ws_key = ("ticket", self.grid[0] * self.grid[1], splits, bm * bn)
        elif (fused := self._fused_entry(k, func, cubin)) and uses_fused(k, self.grid, _gpu_sms()):
            self.func = load_function(cubin, fused, k.shared_bytes, k.signature)   # partials, barrier, reduce
            self.ws_key = ("fused", M, N, splits)
        else:
            rt = t.value("REDUCE_THREADS")
            self.rgrid, self.rblock = (math.ceil(M * N / rt), 1, 1), (rt, 1, 1)
            self.reduce = load_function(cubin, k.launch_hook.reduce, 0, "iiiPP")
            self.ws_key = (M, N, splits)
        self.splits = splits
        self.values = {"M": np.int32(M), "N": np.int32(N), "K": np.int32(K), "splits": np.int32(splits)}
        self.names = k.args
        self.MN = (np.int32(M), np.int32(N))

    @staticmethod
    def _fused_entry(k, func, cubin):
        """The one-launch entry point of the variant `func` is (load_function caches, so the runtime's
        function for a variant is the same object), or None."""
        from common.kernels import load_function
        fused = dict(k.launch_hook.fused)
        for v, e in k.entries.items():
            if v in fused and load_function(cubin, e, k.shared_bytes, k.signature) is func:
                return fused[v]
        return None

    def run(self, a, b, c, stream):
        v = self.values
        ws = _workspace(self.ws_key)               # kept, or again if KEEP_WORKSPACES newer ones came
        v["A"], v["B"], v["C"], v["workspace"] = a, b, c, ws
        self.func.prepared_async_call(self.grid, self.block, stream, *[v[x] for x in self.names],
                                      shared_size=self.shared)
        if self.reduce is not None:
            self.reduce.prepared_async_call(self.rgrid, self.rblock, stream, *self.MN, v["splits"], ws, c)


# --- wgmma_decode: lab 7c's TMA launch on a grid of clusters along K -----------------------------
@functools.lru_cache(maxsize=None)
def _lab7c_launch():
    from common.lab import load
    return load("lab07c-hopper-wgmma").module("launch")


def wgmma_clusters(kernel, func, M, N, K, a, b, c, alpha, beta, stream):
    """wgmma_decode: grid (ceil(N / BN) KSPLIT, ceil(M / BM)), the KSPLIT blocks of a cluster (the shape
    is compiled in, __cluster_dims__) side by side along x; the tensor maps are lab 7c's (its launch.py,
    tma_launch, prepares them once per shape and pointers)."""
    bm, bn = kernel.tile
    grid = (-(-N // bn) * kernel.tiling.value("KSPLIT"), -(-M // bm))
    _lab7c_launch().tma_launch(kernel, M, N, K, a, b, c, stream, grid)


# --- wgmma_splitk: the split-K protocol on a kernel that takes A and B as TMA maps -----------------
@dataclass(frozen=True)
class TmaSplitK(SplitK):
    """launch_hook of wgmma_splitk: SplitK's splits (fixed, or `rule`), workspace and ordered reduce, or
    its one-launch `fused` entry where the grid is at most one block per SM (uses_fused); A and B as
    lab 7c's tensor maps (A in boxes of 64 x BM, B of BK x 64, 128-byte swizzle; B copied to a padded
    pitch first when N % 8, inside the call). Everything but the workspace pointer is worked out once per
    (row, cubin, shape, pointers, stream), in lab 7c's cache of prepared launches; the workspace is looked
    up at every call (a newer shape may have evicted it, as in _Plan.run)."""

    def __call__(self, k, func, M, N, K, a, b, c, alpha, beta, stream):
        l7c = _lab7c_launch()
        cubin = l7c.cubin_for(k, func)
        l7c._run(k, cubin, M, N, K, a, b, c, stream, lambda: _tma_splitk_steps(k, cubin, M, N, K, a, b, c, stream))


def tma_splitk_grid(k, M, N, splits):
    bm, bn = k.tile
    return (-(-N // bn), -(-M // bm), splits)


def _tma_splitk_steps(k, cubin, M, N, K, a, b, c, stream):
    """[copy B to a padded pitch if N % 8,] the main kernel (or the fused one), [the reduce]: lab 7c's
    maps, functions and cuLaunchKernel. The workspace argument is a ctypes pointer that the first step
    points at the workspace again at every call (prepared_launch packs its address, not its value)."""
    import ctypes
    from common import tensor_maps as tm
    l7c = _lab7c_launch()
    splits = splits_of(k, M, N, K)
    grid = tma_splitk_grid(k, M, N, splits)
    bm, _ = k.tile
    bk = k.tiling.value("BK")
    hook = k.launch_hook
    entry = k.entries[k.variants[0]]
    fused = dict(hook.fused).get(k.variants[0]) if uses_fused(k, grid, _gpu_sms()) else None
    steps, b = [], int(b)
    pb = tm.padded_pitch(N, np.float16)
    if pb != N:                                   # TMA needs a 16-byte row pitch: B through a padded copy
        dst = l7c._scratch("B padded", K * pb * 2)
        steps.append(l7c._copy_step(dst, pb * 2, b, N * 2, N * 2, K, stream))
        b = dst
    tmA = l7c._map(int(a), "float16", M, K, bm, l7c.SWIZZLE_HALVES, K)
    tmB = l7c._map(b, "float16", K, N, bk, l7c.SWIZZLE_HALVES, pb)
    ws_key = ("fused", M, N, splits) if fused else (M, N, splits)
    ws = ctypes.c_void_p(0)

    def refresh():
        ws.value = int(_workspace(ws_key))        # kept, or again if KEEP_WORKSPACES newer ones came
    steps.append(refresh)
    f = l7c.function(k, fused or entry, k.shared_bytes, cubin)
    s = l7c._stream(stream)
    steps.append(l7c.prepared_launch(f, grid, (k.threads,), [*l7c._ints(M, N, K), tmA, tmB, l7c._ptr(c),
                                                             *l7c._ints(splits), ws], k.shared_bytes, s))
    if not fused:
        rt = k.tiling.value("REDUCE_THREADS")
        r = l7c.function(k, hook.reduce, 0, cubin)
        steps.append(l7c.prepared_launch(r, (-(-M * N // rt),), (rt,), [*l7c._ints(M, N, splits), ws, l7c._ptr(c)],
                                         0, s))
    return steps
