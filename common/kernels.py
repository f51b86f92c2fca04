"""The row type of a lab's kernel table, and how a row is built, loaded and launched.

    Kernel(...)                    one row: name, source, entry points per variant, launch shape,
                                   shape rules, the chapter's claim and model numbers
    kernel.cubin(build_dir, arch)  where `make` puts its cubin
    kernel.variant_for(M, N, K)    which entry point serves a shape (e.g. 'vec' or 'scalar')
    kernel.refusal(M, N, K)        None, or the rule a shape breaks (in words)
    kernel.launch(func, M, N, K, a, b, c)   grid and block from the row, one launch on stream 0
    load_function(cubin, entry, shared_bytes)  PyCUDA function from a cubin (cached)

Every kernel of the course has the signature
    (int M, int N, int K, const T* A, const T* B, float* C)   C = A . B, row-major
and is launched with a 1-D block of `threads` and grid (ceil(N/BN), ceil(M/BM)).
"""
import functools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

from .errors import CourseError


def _always(M, N, K):
    return ""


@dataclass(frozen=True)
class Kernel:
    name: str                       # short name used everywhere: "v6", "t3"
    source: str                     # file name under the lab's kernels/
    entries: dict                   # variant -> extern "C" entry point; variant "" when there is one
    dtype: str                      # "fp32" or "fp16": the input type
    threads: int                    # threads per block (1-D)
    tile: tuple                     # (BM, BN): the block's tile of C
    title: str = ""                 # what the kernel is, in a few words
    claim: str = ""                 # what the chapter says about it
    model: dict = field(default_factory=dict)   # the chapter's numbers (loads per FMA, ...)
    choose: Callable = _always      # (M, N, K) -> variant
    rules: tuple = ()               # ((predicate(M,N,K) -> bool, "rule in words"), ...) must all hold
    defines: dict = field(default_factory=dict)  # -D values (tuning builds); {} = the file's defaults
    shared_bytes: int = 0           # dynamic shared memory per block
    tag: str = ""                   # distinguishes tuning builds of one source

    @property
    def variants(self):
        return list(self.entries)

    def cubin(self, build_dir, arch):
        stem = Path(self.source).stem + (f"__{self.tag}" if self.tag else "")
        return Path(build_dir) / arch / f"{stem}.cubin"

    def refusal(self, M, N, K):
        for ok, text in self.rules:
            if not ok(M, N, K):
                return f"{self.name} needs {text} (got M={M}, N={N}, K={K})"
        return None

    def variant_for(self, M, N, K):
        return self.choose(M, N, K)

    def grid(self, M, N):
        bm, bn = self.tile
        return ((N + bn - 1) // bn, (M + bm - 1) // bm, 1)

    def launch(self, func, M, N, K, a, b, c, stream=None):
        import numpy as np
        func.prepared_async_call(self.grid(M, N), (self.threads, 1, 1), stream,
                                 np.int32(M), np.int32(N), np.int32(K), a, b, c,
                                 shared_size=self.shared_bytes)


@functools.lru_cache(maxsize=None)
def _module(cubin):
    import pycuda.driver as cuda
    try:
        return cuda.module_from_file(cubin)
    except cuda.Error as e:
        raise CourseError(f"could not load {cubin}: {e}",
                          hint="rebuild for this GPU with `make` (the cubin must match the GPU's architecture)") from None


@functools.lru_cache(maxsize=None)
def load_function(cubin, entry, shared_bytes=0):
    """A prepared PyCUDA function for `entry` in `cubin`, allowed `shared_bytes` of dynamic smem."""
    import pycuda.driver as cuda
    if not Path(cubin).exists():
        raise CourseError(f"{cubin} has not been built", hint="run `make` in the lab folder first")
    func = _module(str(cubin)).get_function(entry)
    if shared_bytes > 48 * 1024:
        func.set_attribute(cuda.function_attribute.MAX_DYNAMIC_SHARED_SIZE_BYTES, shared_bytes)
    func.prepare("iiiPPP")
    return func
