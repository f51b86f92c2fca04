"""How lab 7d launches split-K: the main kernel into a workspace, then the ordered reduce into C.

    SplitK(reduce, splits=0)      a row's launch_hook (common/kernels.py): splits = 0 picks them by the
                                  dispatcher's rule (dispatch.splits_for); a number fixes them
    with_splits(row, s)           the same row with s splits, named "splitk_fp32[splits=s]" (same cubin)
    splits_of(row, M, N, K, sms)  the splits a row launches with at this shape
    splits_for(row, M, N, K, sms) the dispatcher's rule: ceil(sms / tiles), at most K / MIN_K_PER_SPLIT
    release()                     free every cached workspace (after a synchronize)

The two launches, on the stream the runtime gives (one after the other, so the reduce sees the
partials; nothing else to synchronize):
    main    grid (ceil(N / BN), ceil(M / BM), splits), THREADS, the file's SMEM_BYTES; split z writes
            its partial tile to workspace[z] (splits x M x N floats); C is not touched
    reduce  grid (ceil(M N / REDUCE_THREADS)), REDUCE_THREADS; C[i] = ws[0][i] + ws[1][i] + ... in z order:
            the same additions in the same order on every run, so C is bitwise repeatable
The workspace is allocated once per (M, N, splits) and kept for the next call at that shape (a timing
loop allocates nothing); the few most recent shapes are kept, older ones freed.
"""
import math
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

KEEP_WORKSPACES = 4        # shapes whose workspace stays allocated (a sweep moves on shape by shape)

_plans = {}                # (cubin, entry, M, N, K, splits) -> _Plan
_workspaces = {}           # (M, N, splits) -> DeviceAllocation, in insertion (= age) order


@dataclass(frozen=True)
class SplitK:
    """launch_hook of a split-K row: `reduce` is the reduce kernel's entry point in the row's .cu file."""
    reduce: str
    splits: int = 0        # 0: the dispatcher's rule at each shape

    def __call__(self, k, func, M, N, K, a, b, c, alpha, beta, stream):
        key = (id(func), M, N, K, self.splits)
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
                   launch_hook=SplitK(row.launch_hook.reduce, int(splits)))


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
    """ceil(sms / tiles) splits, so every SM gets a tile, but no split shorter than the table's
    MIN_K_PER_SPLIT (nor fewer than 1). tiles = ceil(M / BM) x ceil(N / BN) of split-K row k (its .cu
    says BM, BN)."""
    from common.lab import load
    bm, bn = k.tile
    tiles = math.ceil(M / bm) * math.ceil(N / bn)
    by_k = max(1, K // load(Path(k.path).parents[1]).option("MIN_K_PER_SPLIT", 256))
    return max(1, min(math.ceil(sms / tiles), by_k))


def _workspace(M, N, splits):
    import pycuda.driver as cuda
    key = (M, N, splits)
    ws = _workspaces.get(key)
    if ws is None:
        while len(_workspaces) >= KEEP_WORKSPACES:
            cuda.Context.synchronize()                 # no launch may still use what is freed
            _workspaces.pop(next(iter(_workspaces))).free()
        ws = _workspaces[key] = cuda.mem_alloc(splits * M * N * 4)
    return ws


def release():
    """Free the cached workspaces and forget the plans (a test that wants the memory back)."""
    import pycuda.driver as cuda
    if _workspaces:
        cuda.Context.synchronize()
    for ws in _workspaces.values():
        ws.free()
    _workspaces.clear()
    _plans.clear()


class _Plan:
    """One shape's two launches, worked out once: a timed call does only the two launches."""

    def __init__(self, k, func, M, N, K, splits):
        from common.kernels import load_function
        from common.lab import load
        lab = load(Path(k.path).parents[1])
        arch = lab.build_arch(k, lab.gpu_arch())
        cubin = str(k.cubin(lab.build_dir_of(k), arch))
        t = k.tiling
        bm, bn = k.tile
        self.grid = (math.ceil(N / bn), math.ceil(M / bm), splits)
        self.block, self.shared = (k.threads, 1, 1), k.shared_bytes
        rt = t.value("REDUCE_THREADS")
        self.rgrid, self.rblock = (math.ceil(M * N / rt), 1, 1), (rt, 1, 1)
        self.func, self.reduce = func, load_function(cubin, k.launch_hook.reduce, 0, "iiiPP")
        self.ws_key = (M, N, splits)
        self.splits = splits
        self.values = {"M": np.int32(M), "N": np.int32(N), "K": np.int32(K), "splits": np.int32(splits)}
        self.names = k.args
        self.MN = (np.int32(M), np.int32(N))

    def run(self, a, b, c, stream):
        v = self.values
        ws = _workspaces.get(self.ws_key)
        if ws is None:                             # freed when KEEP_WORKSPACES newer shapes came
            ws = _workspace(*self.ws_key)
        v["A"], v["B"], v["C"], v["workspace"] = a, b, c, ws
        self.func.prepared_async_call(self.grid, self.block, stream, *[v[x] for x in self.names],
                                      shared_size=self.shared)
        self.reduce.prepared_async_call(self.rgrid, self.rblock, stream, *self.MN, v["splits"], ws, c)
