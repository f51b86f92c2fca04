"""A lab is a folder: its table (lab.py), kernels/*.cu, results/, tests/. This module reads one.

    lab = load("labs/lab07-matmul-registers")     the Lab (cached per folder)
    lab.kernels {name: Kernel}, lab.ladders {ladder: [Kernel]}, lab.kernel("v6")
    lab.ladder_precision(ladder)                  the Precision every row of a ladder is compared in
    lab.option("BENCH_SIZES", default)            any other name of the table, or the default
    lab.build(kernels, archs)                     nvcc every stale (kernel, arch); ptxas resources
    lab.cubin(k, arch)                            where `make` puts k's cubin for a GPU of arch
    lab.gpu_arch()                                this GPU's sm_XY (CourseError without one)
    lab.build_arch(kernel, arch)                  the arch a kernel is built for on `arch` (sm_90 -> sm_90a
                                                  for Hopper-only rows), or None: it cannot run there
    lab.launcher(k, M, N, K, variant=None, alpha=1, beta=0)   -> run(a, b, c) on device pointers
    lab.matmul(name, A, B, variant=None, C=None, alpha=1, beta=0)   numpy in, numpy out (C poisoned)
    lab.random_inputs(k, M, N, K, rng), lab.check(name, M, N, K, ...)   -> common.check.Verdict
    lab.check_exact(name, M, N, K, ...)   the same on small integers, bit for bit (long sums; common.precision)
    validate(k, A, B), check_shape(k, M, N, K)    one clear message per input a kernel cannot take

The table module. A lab's `lab.py` is plain data, loaded as `<package>.lab` of a package made for the
folder (so its own modules import each other with `from . import x`, and two labs never collide):
    TITLE           "Lab 7, Matmul II: register blocking, warp tiling, tensor cores"
    NEEDS           why the lab's rows need their min_arch, for rows that do not say it themselves
    LADDERS         {"fp32": [Kernel, ...], "fp16": [...]}: every row of the lab, in ladder order
    and optionally BENCH_SIZES, SELFCHECK_SHAPES, SANITIZE_SHAPES, NCU_TABLES, TUNING, EXTRA_BASELINES,
    BANK_ACCESSES, COMPARISONS, INNER_LOOPS, ... (each target's docstring names what it reads).
"""
import functools
import importlib
import importlib.util
import re
import sys
import types
from dataclasses import replace
from pathlib import Path

import numpy as np

from . import build as nvbuild
from . import check as checking
from .errors import CourseError, NotOnThisGPU
from .kernels import Kernel, load_function
from .precision import precision

ROOT = Path(__file__).resolve().parents[1]
INT32_MAX = 2 ** 31 - 1


def _package_name(folder):
    return "labs_" + re.sub(r"\W", "_", folder.name)


class Lab:
    def __init__(self, folder):
        self.dir = Path(folder).resolve()
        table_file = self.dir / "lab.py"
        if not table_file.exists():
            raise CourseError(f"{self.dir} is not a lab: it has no lab.py (the kernel table)",
                              hint="a lab is a folder with lab.py and kernels/; see README.md, 'Adding a lab'")
        self.package = _package_name(self.dir)
        if self.package not in sys.modules:
            pkg = types.ModuleType(self.package)
            pkg.__path__ = [str(self.dir)]
            pkg.__file__ = str(self.dir / "__init__.py")
            sys.modules[self.package] = pkg
        try:
            self.table = importlib.import_module(f"{self.package}.lab")
        except (ImportError, SyntaxError, NameError, AttributeError) as e:
            raise CourseError(f"{table_file} could not be loaded: {type(e).__name__}: {e}",
                              hint="the lab's table (or a module it imports) has an error; python -c "
                                   f"'import common.lab as l; l.load(\"{self.dir}\")' shows the traceback") from e
        self.name = self.dir.name
        self.title = getattr(self.table, "TITLE", self.name)
        self.short = getattr(self.table, "SHORT", self.name.split("-")[0])
        self.kernels_dir = self.dir / "kernels"
        self.build_dir = self.dir / "build"
        self.results_dir = self.dir / "results"
        self.reports_dir = self.dir / "reports"
        self.ladders = {}
        for ladder, rows in self.table.LADDERS.items():
            self.ladders[ladder] = [self.bind(k) for k in rows]
        self.kernels = {k.name: k for rows in self.ladders.values() for k in rows}

    def __repr__(self):
        return f"Lab({self.name})"

    def bind(self, k):
        """A row of this lab's table with its source's full path (rows from another lab keep theirs)."""
        if k.path:
            return k
        return replace(k, path=str(self.kernels_dir / k.source), lab=self.name,
                       needs=k.needs or self.option("NEEDS", ""))

    def module(self, name):
        """One of the lab's own Python modules (probe.py, grading/parts.py, ...), imported."""
        return importlib.import_module(f"{self.package}.{name}")

    def option(self, name, default=None):
        return getattr(self.table, name, default)

    @property
    def all_kernels(self):
        return list(self.kernels.values())

    def own(self, kernels=None):
        """The rows whose source is in this lab (a ladder may show another lab's kernel)."""
        return [k for k in (kernels or self.all_kernels) if k.lab == self.name]

    def kernel(self, name):
        if isinstance(name, Kernel):
            return name
        if name not in self.kernels:
            raise CourseError(f"there is no kernel {name!r} in {self.name}", hint=f"choose one of {', '.join(self.kernels)}")
        return self.kernels[name]

    def ladder_of(self, k):
        return next((ladder for ladder, rows in self.ladders.items() if k.base_name in [r.name for r in rows]), None)

    def ladder_precision(self, ladder):
        return precision(self.option("LADDER_PRECISION", {}).get(ladder) or self.ladders[ladder][0].precision)

    # --- building ------------------------------------------------------------------------------
    @staticmethod
    def build_arch(k, arch):
        if k.unsupported(arch):
            return None
        return arch if not k.archs or arch in k.archs else arch + "a"

    @staticmethod
    def _include_dirs(k):
        return [d() if callable(d) else d for d in k.include_dirs]

    def build(self, kernels, archs, jobs=None, progress=None):
        """Compile every (kernel, arch) pair that is stale; returns {(name, arch): ptxas resources}.
        A kernel that cannot run on an arch (Kernel.archs) is left out of that arch's build.
        progress(done, total, what) is called as each pair is done (compiled, or found up to date)."""
        from concurrent.futures import ThreadPoolExecutor, as_completed
        import os
        pairs = [(k, self.build_arch(k, a)) for k in kernels for a in archs]
        pairs = [(k, a) for k, a in pairs if a]
        with ThreadPoolExecutor(max_workers=jobs or os.cpu_count() or 2) as pool:
            futures = {(k.name, a): pool.submit(nvbuild.compile_cubin, k.path, k.cubin(k.build_dir, a), a,
                                                k.defines, flags=k.nvcc_flags, include_dirs=self._include_dirs(k))
                       for k, a in pairs}
            if progress:
                names = {f: key for key, f in futures.items()}
                for done, f in enumerate(as_completed(names), 1):
                    progress(done, len(names), f"built {names[f][0]} for {names[f][1]}")
            return {key: f.result() for key, f in futures.items()}

    def build_dir_of(self, k):
        """Where a row's cubins go: Kernel.build_dir (its own lab's build/; a borrowed row builds where it lives)."""
        return self.kernel(k).build_dir

    def cubin(self, k, arch):
        """Where `make` puts kernel k's cubin for a GPU of `arch` (sm_90 -> sm_90a for Hopper-only rows):
        the one place the course computes a cubin's path."""
        k = self.kernel(k)
        ba = self.build_arch(k, arch)
        if ba is None:
            raise NotOnThisGPU(f"{k.name} is not built for {arch}: {k.unsupported(arch)}",
                              hint="its lab's README says which GPUs it needs")
        return k.cubin(k.build_dir, ba)

    def gpu_arch(self):
        from .device import init_gpu
        cc = init_gpu().compute_capability()
        return f"sm_{cc[0]}{cc[1]}"

    # --- running -------------------------------------------------------------------------------
    def launcher(self, k, M, N, K, variant=None, alpha=1.0, beta=0.0):
        """The function that launches kernel k at M x N x K on device pointers (a, b, c)."""
        k = self.kernel(k)
        variant = k.variant_for(M, N, K) if variant is None else variant
        if variant not in k.entries:
            raise CourseError(f"{k.name} has no variant {variant!r}", hint=f"variants: {', '.join(k.entries)}")
        gpu = self.gpu_arch()
        arch = self.build_arch(k, gpu)
        if arch is None:
            raise NotOnThisGPU(f"{k.unsupported(gpu)}, and this GPU is {gpu}",
                              hint="its lab's README says which GPUs it needs; the other labs run here")
        check_shared_memory(k)
        func = load_function(str(self.cubin(k, arch)), k.entries[variant], k.shared_bytes, k.signature)
        return k.bound_launch(func, M, N, K, alpha=alpha, beta=beta)

    def random_inputs(self, k, M, N, K, rng):
        return self.kernel(k).prec.random_inputs(M, N, K, rng)

    def matmul(self, name, A, B, variant=None, C=None, alpha=1.0, beta=0.0):
        """C = alpha A B + beta C on the GPU with one of the lab's kernels (C = A B for kernels without
        alpha and beta). The output is float32; it is poisoned with NaN before the launch unless C is
        given (beta != 0), so any element the kernel does not write comes back as NaN."""
        k = self.kernel(name)
        M, N, K = validate(k, A, B)
        if not k.has_alpha_beta and (alpha != 1.0 or beta != 0.0):
            raise CourseError(f"{k.name} computes C = A B: it takes no alpha or beta", hint="use alpha=1, beta=0")
        if C is not None and (C.shape != (M, N) or C.dtype != np.float32):
            raise CourseError(f"C must be a {M}x{N} float32 array, got {C.shape} {C.dtype}",
                              hint="pass C=np.zeros((M, N), np.float32) or leave it out")
        arch = self.gpu_arch()               # a clear error here when there is no GPU
        import pycuda.driver as cuda
        self.build([k], [arch])
        run = self.launcher(k, M, N, K, variant, alpha=alpha, beta=beta)
        a, b = cuda.to_device(A), cuda.to_device(B)
        c = cuda.to_device(np.ascontiguousarray(C)) if C is not None else cuda.mem_alloc(M * N * 4)
        try:
            if C is None:
                cuda.memset_d32(c, checking.NAN_BITS, M * N)
            run(a, b, c)
            out = np.empty((M, N), np.float32)
            cuda.memcpy_dtoh(out, c)   # synchronizes: a launch error surfaces here
        except cuda.Error as e:
            raise CourseError(f"{k.name} failed on the GPU at {M}x{N}x{K}: {e}",
                              hint="run `make sanitize` to find the bad access") from None
        finally:
            a.free(); b.free(); c.free()
        return out

    def check(self, name, M, N, K, variant=None, rng=None, alpha=1.0, beta=0.0):
        """Fresh random A and B (and C when beta != 0: then C is read; with beta == 0 it holds NaN,
        which a kernel that reads it would spread): the result against the float64 reference."""
        k = self.kernel(name)
        rng = rng or np.random.default_rng()
        A, B = self.random_inputs(k, M, N, K, rng)
        C0 = None
        if k.has_alpha_beta:
            C0 = (rng.uniform(-1, 1, size=(M, N)).astype(np.float32) if beta != 0.0
                  else np.full((M, N), np.nan, np.float32))
        C = self.matmul(k, A, B, variant, C=C0, alpha=alpha, beta=beta)
        ref, abs_ref = checking.reference(*k.prec.reference_inputs(A, B))
        tol = k.prec.tolerance(K, abs_ref, k.roundoff)
        if k.has_alpha_beta:
            ref = alpha * ref + (beta * C0.astype(np.float64) if beta != 0.0 else 0.0)
            # alpha scales the product's error; alpha * acc, beta * C and their sum are three FP32
            # roundings (u = 2^-24 each), at most 2u (|alpha| |A||B| + |beta C|) together
            tol = abs(alpha) * tol + (2.0 ** -23) * (abs(alpha) * abs_ref
                                                     + (abs(beta) * np.abs(C0) if beta != 0.0 else 0.0))
        v = variant if variant is not None else k.variant_for(M, N, K)
        extra = f" alpha={alpha:g} beta={beta:g}" if k.has_alpha_beta else ""
        return checking.compare(C, ref, tol, label=f"{k.label(v)} {M}x{N}x{K}{extra}")

    def check_exact(self, name, M, N, K, variant=None, rng=None):
        """Fresh small-integer A and B (Precision.integer_inputs), C poisoned: every partial sum is exact,
        so the result must equal the float64 product bit for bit. The check of long sums: at large K a
        kernel that drops or repeats a split of random products stays inside check()'s worst-case bound."""
        k = self.kernel(name)
        A, B = k.prec.integer_inputs(M, N, K, rng or np.random.default_rng())
        C = self.matmul(k, A, B, variant)
        ref, _ = checking.reference(*k.prec.reference_inputs(A, B))
        v = variant if variant is not None else k.variant_for(M, N, K)
        return checking.compare(C, ref, 0.0, label=f"{k.label(v)} {M}x{N}x{K} small integers, exact")


def check_shared_memory(k):
    """The kernel's dynamic shared memory fits this GPU's per-block limit (the kernel files' static_asserts
    allow Hopper's 227 KB; sm_86, sm_89 and sm_120 give 99 KB), or one message saying what to change."""
    if k.shared_bytes <= 48 * 1024:
        return
    import pycuda.driver as cuda
    from .device import init_gpu
    limit = init_gpu().get_attribute(cuda.device_attribute.MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)
    if k.shared_bytes > limit:
        raise CourseError(f"{k.name} needs {k.shared_bytes / 1024:.1f} KB of shared memory per block; this GPU allows "
                          f"{limit / 1024:.1f} KB", hint="choose a smaller tile or fewer STAGES (make tune skips it)")


@functools.lru_cache(maxsize=None)
def _load(folder):
    return Lab(folder)


def load(folder):
    """The Lab in `folder` (a path, or a name under labs/)."""
    p = Path(folder)
    if not p.exists() and (ROOT / "labs" / str(folder)).exists():
        p = ROOT / "labs" / str(folder)
    if not p.exists():
        raise CourseError(f"there is no lab {folder}", hint=f"labs: {', '.join(x.name for x in all_lab_dirs())}")
    return _load(p.resolve())


def all_lab_dirs():
    return sorted(p.parent for p in (ROOT / "labs").glob("*/lab.py"))


# ---------------------------------------------------------------------------------------------
# Inputs
# ---------------------------------------------------------------------------------------------

def validate(k, A, B):
    """Refuse, with one clear message each, every input the kernel cannot take."""
    want = np.dtype(k.prec.input_dtype)
    for nm, X in (("A", A), ("B", B)):
        if not isinstance(X, np.ndarray):
            raise CourseError(f"{nm} is a {type(X).__name__}, not a numpy array", hint=f"pass np.asarray({nm}, dtype=np.{want.name})")
        if X.ndim != 2:
            raise CourseError(f"{nm} has {X.ndim} dimension(s); a matrix has 2", hint=f"reshape {nm} to (rows, cols)")
        if X.dtype != want:
            hint = (f"convert with common.precision.bf16_bits({nm})" if k.precision == "bf16_tensor"
                    else f"convert with {nm}.astype(np.{want.name})")
            raise CourseError(f"{nm} is {X.dtype}, but {k.name} multiplies {want.name} matrices", hint=hint)
        if not X.flags.c_contiguous:
            raise CourseError(f"{nm} is not C-contiguous (a transposed view or a slice?); the kernels read row-major memory",
                              hint=f"pass np.ascontiguousarray({nm})")
    (M, K), (K2, N) = A.shape, B.shape
    if K != K2:
        raise CourseError(f"A is {M}x{K} and B is {K2}x{N}: A's columns must equal B's rows",
                          hint="for C = A.B, A is M x K and B is K x N")
    return check_shape(k, M, N, K)


def check_shape(k, M, N, K):
    """The shape rules alone: sizes, 32-bit offsets, and the kernel's own rules."""
    if min(M, N, K) <= 0:
        raise CourseError(f"M={M}, N={N}, K={K}: every dimension must be at least 1", hint="pass non-empty matrices")
    if max(M * K, K * N, M * N) > INT32_MAX:
        raise CourseError(f"{M}x{N}x{K} has more than 2^31 - 1 elements in one matrix: the kernels index with 32-bit ints",
                          hint="split the product into blocks of fewer than 2^31 elements each")
    why = k.refusal(M, N, K)
    if why:
        raise CourseError(why, hint="choose a shape that meets the kernel's rules (the lab's table, lab.py, lists them)")
    return M, N, K
