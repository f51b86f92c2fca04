"""The row type of a lab's kernel table, and how a row is built, loaded and launched.

    Kernel(...)                    one row: name, source, entry points per variant, precision,
                                   shape rules, argument list, the chapter's claim and model numbers
    kernel.tiling                  its parameters, read from the .cu file (common.tiling): .params,
    kernel.threads, .tile, .shared_bytes   threads per block, (BM, BN), dynamic shared bytes
    kernel.with_params(BK=8)       the same source rebuilt with other parameters (tuning)
    kernel.with_defines(BK=8)      the same, for a row not bound to its lab yet (a table naming a
                                   build: its .cu static_asserts the values when it is built)
    kernel.build_dir               the build/ folder of the lab whose kernels/ holds its source
    kernel.cubin(build_dir, arch)  its cubin for `arch` in build_dir: build_dir/arch/<stem>[__<tag>].cubin
                                   (Lab.cubin(k, arch) is the one call for where `make` puts it)
    kernel.variant_for(M, N, K)    which entry point serves a shape (e.g. 'vec' or 'scalar')
    kernel.cases(shapes)           -> [(variant, (M, N, K))]: every variant on every shape it serves
    kernel.refusal(M, N, K)        None, or the rule a shape breaks (in words)
    kernel.unsupported(arch)       None, or why it cannot run on arch (Kernel.archs, .min_arch, .needs)
    kernel.arch_note(arch)         what it loses on arch though it runs ('cp.async falls back ...'), or ''
    skipped_on(kernels, archs)     one line per reason some rows cannot run on some of archs
    kernel.launch(func, M, N, K, a, b, c, alpha=1, beta=0)   one launch on the default stream
    load_function(cubin, entry, shared_bytes, signature)     PyCUDA function from a cubin (cached)
    sibling(func, entry, shared_bytes, signature)            another entry point of func's cubin (a
                                   launch hook that runs two kernels of one source: lab 7b's c6)

Argument lists (Kernel.args), named from this vocabulary: M N K, splits, dp_tiles, workers and
first_block (int: split-K's splits; stream-K's whole tiles, the blocks that share the rest, and the
block number of the grid's first block), alpha and beta (float),
A B C and workspace (device pointers). The two the course's kernels use:
    ABC         (int M, int N, int K, const T* A, const T* B, float* C)           C = A B
    ALPHA_BETA  (int M, int N, int K, float alpha, const T* A, const T* B, float beta, float* C)
A row whose kernel needs something else (a tensor map by value, a cluster launch) gives `launch_hook`:
hook(kernel, func, M, N, K, a, b, c, alpha, beta, stream) does the launch.
The default launch: a 1-D block of `threads`, grid (ceil(N / BN), ceil(M / BM)), `shared_bytes`.
"""
import functools
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, Optional

from .errors import CourseError
from .precision import precision as _precision
from .tiling import Tiling

ABC = ("M", "N", "K", "A", "B", "C")
ALPHA_BETA = ("M", "N", "K", "alpha", "A", "B", "beta", "C")
_ARG_TYPES = {"M": "i", "N": "i", "K": "i", "splits": "i", "alpha": "f", "beta": "f",
              "A": "P", "B": "P", "C": "P", "workspace": "P", "dp_tiles": "i", "workers": "i",
              "first_block": "i"}


def _always(M, N, K):
    return ""


@dataclass(frozen=True)
class Kernel:
    name: str                       # short name used everywhere: "v6", "t3"
    source: str                     # file name under the lab's kernels/
    entries: dict                   # variant -> extern "C" entry point; variant "" when there is one
    precision: str                  # key of common.precision.PRECISIONS: "fp32", "fp16_tensor", ...
    title: str = ""                 # what the kernel is, in a few words
    claim: str = ""                 # what the chapter says about it
    model: dict = field(default_factory=dict)   # the chapter's numbers (loads per FMA, ...)
    choose: Callable = _always      # (M, N, K) -> variant
    rules: tuple = ()               # ((predicate(M,N,K) -> bool, "rule in words"), ...) must all hold
    defines: dict = field(default_factory=dict)  # -D values (tuning builds); {} = the file's defaults
    tag: str = ""                   # distinguishes tuning builds of one source
    args: tuple = ABC               # the entry points' argument list (see the module docstring)
    input_roundoff: object = None   # TF32 kernels: precision.TF32_ROUNDED or TF32_TRUNCATED, or a
                                    # function of the tiling (a parameter switches the rounding)
    archs: tuple = ()               # architectures it is built for; () = every one the course supports
                                    # from min_arch on
    min_arch: str = "sm_80"         # the oldest it runs on: Turing (sm_75) only where the row says so
    needs: str = ""                 # why not older, in words ("cp.async and mma.m16n8k16"): shown where
                                    # a build, a bench or a grade skips the kernel
    arch_notes: dict = field(default_factory=dict)  # arch -> what the kernel loses there though it runs
                                    # ("cp.async falls back to ordinary loads"): bench and build tables
    nvcc_flags: tuple = ()          # more nvcc flags (e.g. -DCUTE_...); include dirs below
    include_dirs: tuple = ()        # paths, or callables returning one (found at build time)
    launch_hook: Optional[Callable] = None
    helpers: dict = field(default_factory=dict)     # name -> entry point the launch hook runs beside the
                                    # chosen variant's (never chosen itself); built, counted and checked
                                    # for spills with the variants: `make`, `make sass`
    hierarchy: dict = field(default_factory=dict)   # model-only facts for common.hierarchy
    yardstick: bool = False         # not a rung: a library's kernel timed beside the ladder for comparison
                                    # (CUTLASS's own); never the ladder's "best kernel" in a comparison
    path: str = ""                  # the source's full path: set by the Lab that holds the row
    lab: str = ""                   # the name of that lab

    # --- parameters, read from the source ------------------------------------------------------
    @property
    def tiling(self):
        if not self.path:
            raise CourseError(f"kernel {self.name} is not bound to a lab",
                              hint="rows are bound when common.lab.load(folder) reads the lab's table")
        return Tiling.of(self.path, self.defines)

    @property
    def threads(self):
        return self.tiling.threads

    @property
    def tile(self):
        return self.tiling.tile

    @property
    def shared_bytes(self):
        return self.tiling.shared_bytes

    @property
    def prec(self):
        return _precision(self.precision)

    @property
    def roundoff(self):
        """The input rounding the tolerance allows for (None: the precision's own)."""
        r = self.input_roundoff
        return r(self.tiling) if callable(r) else r

    @property
    def has_alpha_beta(self):
        return "alpha" in self.args and "beta" in self.args

    def with_params(self, **params):
        """This kernel rebuilt with other parameters: v7.with_params(BK=8) is 'v7[BK8]'. Parameters
        equal to the file's defaults are left out of the name (and the defaults alone are the row)."""
        if not params:
            return self
        tunable = self.tiling.constants.tunable
        unknown = [p for p in params if p not in tunable]
        if unknown:
            raise CourseError(f"{self.name} has no parameter {', '.join(unknown)}",
                              hint=f"its parameters: {', '.join(tunable) or 'none'}")
        defaults = Tiling.of(self.path).params
        merged = {k: v for k, v in {**self.defines, **params}.items() if str(v) != str(defaults.get(k))}
        base = self.name.split("[")[0]
        if not merged:
            return replace(self, name=base, defines={}, tag="")
        tag = "_".join(f"{k}{v}" for k, v in merged.items())
        return replace(self, name=f"{base}[{tag}]", defines=merged, tag=tag)

    def with_defines(self, **params):
        """with_params for a row in a lab's table, before the lab is loaded (there is no tiling to
        check the names against yet): named the same way, 'splitk_fp32[BM64]'."""
        tag = "_".join(f"{k}{v}" for k, v in params.items())
        return replace(self, name=f"{self.name}[{tag}]", defines=dict(params), tag=tag)

    @property
    def base_name(self):
        return self.name.split("[")[0]

    # --- variants and shapes -------------------------------------------------------------------
    @property
    def variants(self):
        return list(self.entries)

    @property
    def all_entries(self):
        """Variants and helpers: {label suffix: entry point}, what the build and SASS reports list."""
        return {**self.entries, **self.helpers}

    @property
    def fallback(self):
        """The variant that serves every shape the rules allow ('scalar', or the only one)."""
        return "scalar" if "scalar" in self.entries else (self.variants[0] if len(self.entries) == 1 else None)

    def label(self, variant=None):
        return self.name + (f"/{variant}" if variant else "")

    @property
    def build_dir(self):
        """Where `make` puts this row's cubins: build/ of the lab whose kernels/ folder holds its source
        (a row one lab borrows from another builds where it lives)."""
        if not self.path:
            raise CourseError(f"kernel {self.name} is not bound to a lab",
                              hint="rows are bound when common.lab.load(folder) reads the lab's table")
        return Path(self.path).parents[1] / "build"

    def cubin(self, build_dir, arch):
        """The cubin for `arch` under build_dir (the kernel's own build_dir, or a grader's). Builds that
        carry their PTX (common.build.embeds_ptx) live in <arch>_ptx/, apart from the plain ones."""
        from .build import embeds_ptx
        stem = Path(self.source).stem + (f"__{self.tag}" if self.tag else "")
        return Path(build_dir) / (f"{arch}_ptx" if embeds_ptx(arch) else arch) / f"{stem}.cubin"

    def refusal(self, M, N, K):
        for ok, text in self.rules:
            if not ok(M, N, K):
                return f"{self.name} needs {text} (got M={M}, N={N}, K={K})"
        return None

    def variant_for(self, M, N, K):
        return self.choose(M, N, K)

    def serves(self, variant, M, N, K):
        """Would `variant` run correctly at this shape? The chosen one does, and the fallback always."""
        return self.refusal(M, N, K) is None and (variant == self.variant_for(M, N, K) or variant == self.fallback)

    def cases(self, shapes):
        """[(variant, (M, N, K))]: every variant on every shape it serves."""
        return [(v, tuple(s)) for v in self.variants for s in shapes if self.serves(v, *s)]

    def builds_for(self, arch):
        return self.unsupported(arch) is None

    def unsupported(self, arch):
        """None when the row runs on `arch` (sm_90 for a row built for sm_90a), else why not, in words."""
        from .build import arch_number
        if self.archs:
            if arch in self.archs or arch + "a" in self.archs:
                return None
            return f"{self.name} runs only on {', '.join(self.archs)}" + (f": {self.needs}" if self.needs else "")
        if arch_number(arch) < arch_number(self.min_arch):
            return f"{self.name} needs {self.min_arch} or newer: {self.needs or 'it is not written for older GPUs'}"
        return None

    def arch_note(self, arch):
        """What the kernel loses on `arch` though it runs there ('' when nothing)."""
        return self.arch_notes.get(arch, "")

    # --- launching -----------------------------------------------------------------------------
    @property
    def signature(self):
        try:
            return "".join(_ARG_TYPES[a] for a in self.args)
        except KeyError as e:
            raise CourseError(f"{self.name}: unknown argument {e} in its argument list",
                              hint=f"arguments: {', '.join(_ARG_TYPES)}") from None

    def grid(self, M, N):
        bm, bn = self.tile
        return ((N + bn - 1) // bn, (M + bm - 1) // bm, 1)

    def launch(self, func, M, N, K, a, b, c, stream=None, alpha=1.0, beta=0.0, extra=None):
        """One launch. For timing loops use bound_launch: it does the Python work once."""
        self.bound_launch(func, M, N, K, alpha, beta, stream, extra)(a, b, c)

    def bound_launch(self, func, M, N, K, alpha=1.0, beta=0.0, stream=None, extra=None):
        """run(a, b, c): the launch with grid, block, shared memory and scalars worked out now, so
        that a timed call does nothing in Python but the launch itself (CUDA events around it would
        otherwise time the host's work too)."""
        import numpy as np
        if self.launch_hook is not None:
            return lambda a, b, c: self.launch_hook(self, func, M, N, K, a, b, c, alpha, beta, stream)
        grid, block, shared = self.grid(M, N), (self.threads, 1, 1), self.shared_bytes
        values = {"M": np.int32(M), "N": np.int32(N), "K": np.int32(K), "alpha": np.float32(alpha),
                  "beta": np.float32(beta), **(extra or {})}
        names = self.args
        call = func.prepared_async_call

        def run(a, b, c):
            values["A"], values["B"], values["C"] = a, b, c
            call(grid, block, stream, *[values[x] for x in names], shared_size=shared)
        return run


def skipped_on(kernels, archs):
    """One line per reason the rows cannot run on some of `archs` (Kernel.unsupported), rows sharing
    a reason on one line: 'sm_75: v8, t4 need sm_80 or newer: cp.async stages'. [] when all run."""
    groups = {}
    for k in kernels:
        missing = [a for a in archs if k.unsupported(a)]
        if missing:
            why = k.unsupported(missing[0])[len(k.name) + 1:]
            groups.setdefault((", ".join(missing), why), []).append(k.name)
    plural = lambda why: why.replace("needs ", "need ", 1).replace("runs only", "run only", 1)   # noqa: E731
    return [f"{where}: {', '.join(names)} {plural(why) if len(names) > 1 else why}"
            for (where, why), names in groups.items()]


@functools.lru_cache(maxsize=None)
def _module(cubin, mtime):
    import pycuda.driver as cuda
    try:
        return cuda.module_from_file(cubin)
    except cuda.Error as e:
        raise CourseError(f"could not load {cubin}: {e}",
                          hint="rebuild for this GPU with `make` (the cubin must match the GPU's architecture)") from None


@functools.lru_cache(maxsize=None)
def load_function(cubin, entry, shared_bytes=0, signature="iiiPPP"):
    """A prepared PyCUDA function for `entry` in `cubin`, allowed `shared_bytes` of dynamic smem."""
    import os
    import pycuda.driver as cuda
    if not Path(cubin).exists():
        raise CourseError(f"{cubin} has not been built", hint="run `make` in the lab folder first")
    func = _module(str(cubin), os.path.getmtime(cubin)).get_function(entry)
    # Over 48 KB a block's shared memory needs the kernel's opt-in, and the 48 KB count the static
    # __shared__ arrays too: 48 KB of dynamic memory plus a 1 KB static array fails to launch without it.
    if shared_bytes + getattr(func, "shared_size_bytes", 0) > 48 * 1024:
        func.set_attribute(cuda.function_attribute.MAX_DYNAMIC_SHARED_SIZE_BYTES, shared_bytes)
    if re.fullmatch(r"[iPf]+", signature):
        func.prepare(signature)
    _cubin_of[id(func)] = str(cubin)      # load_function's cache keeps func alive: its id stays its own
    return func


_cubin_of = {}


def sibling(func, entry, shared_bytes=0, signature="iiiPPP"):
    """The prepared function `entry` of the cubin that `func` (from load_function) came from."""
    if id(func) not in _cubin_of:
        raise CourseError(f"no cubin is known for the function that should hold a sibling {entry!r}",
                          hint="load the first function with common.kernels.load_function")
    return load_function(_cubin_of[id(func)], entry, shared_bytes, signature)
