"""`make accuracy`: how far from the exact product a GEMM lands as K grows, for cuBLAS and a lab's rows.

    make accuracy [QUICK=1] [KS=256,4096] [SIZE=512]
    (python -m common accuracy --lab <lab> [--quick] [--ks ...] [--size M])

    DISTRIBUTIONS                    "normal": N(0, 1); "wide": magnitudes log-uniform over 1e-3..1e3,
                                     random signs (a wide exponent range inside one dot product)
    draw(kind, rows, cols, rng)      float32 inputs of one distribution
    relative_errors(C, ref, abs_ref) -> {"max", "rms"} of |C - ref| / (|A|.|B|), element by element
    study_rows(lab)                  the lab's ACCURACY_ROWS as rows of its table, or builds of them with
                                     other parameters (CourseError if none)
    parse_ks(text), ks_for(args)     the K values to study
    composed_3xtf32(blas)            three cuBLAS TF32 GEMMs of the split operands, as one call
                                     (M, N, K, a, b, c) on device pointers (common.precision: tf32x3_cublas)
    composed_3xtf32_presplit(blas)   the same, its operands split at the first call only: the three GEMMs
                                     alone, a benchmark's row (tf32x3_cublas_presplit)
    summary_tables(record)           the printed tables: per distribution, each method at each K
    accuracy_chart(record, path)     error vs K, log-log, one line per method, a panel per distribution

Why relative to |A|.|B|. An element of C can be near zero by cancellation while its terms are large;
its error is set by the terms, so every bound of common/precision.py is a multiple of |A|.|B|. Dividing
by it makes one number per element that is comparable across K, inputs and methods; the max says what a
check with that bound must allow, the RMS what a typical element sees.

The methods: cuBLAS SGEMM (FFMA), cuBLAS TF32 (one pass), the same split a 3xTF32 kernel does, as three
cuBLAS TF32 calls accumulated with beta = 1 (split on the device), and each row the lab declares
(ACCURACY_ROWS in its table). Each at M = N = SIZE (512) and each K, on fresh inputs of each
distribution, against the float64 product of the same float32 inputs (numpy's BLAS, on every core:
17 GFLOP at K = 65536). The table gives, per method and K, the max and RMS error as multiples of cuBLAS
SGEMM's on the same inputs; the record keeps every number, the bound each method is checked with, and
the GPU, commit and date. Writes results/<lab>-accuracy_<gpu>_<date>_<commit>.json and its .png
(-2, -3, ... for another study the same day at the same commit: no record is overwritten).
Needs a GPU; --quick stops at K = 4096.
"""
import datetime
from pathlib import Path

import numpy as np

from . import report
from .check import reference         # (A.B, |A|.|B|) in float64, from the float32 inputs
from .errors import CourseError
from .precision import precision

DISTRIBUTIONS = {"normal": "N(0, 1)", "wide": "log-uniform 1e-3..1e3, random signs"}
FULL_KS = (256, 1024, 4096, 16384, 65536)
QUICK_KS = (256, 1024, 4096)
BASE = "fp32"                                    # the precision whose cuBLAS call every ratio is to
CUBLAS_METHODS = ("fp32", "tf32_tensor", "tf32x3_cublas", "fp32_bf16x9")   # precisions whose cuBLAS call is a
# method; an optional one (cuBLAS's FP32 emulation) is left out, saying why, where this cuBLAS or GPU lacks it
MAX_K = 1 << 20


def draw(kind, rows, cols, rng):
    """float32 inputs: N(0, 1), or magnitudes 10^uniform(-3, 3) with random signs."""
    if kind == "normal":
        x = rng.standard_normal((rows, cols), dtype=np.float32)
    elif kind == "wide":
        x = (rng.choice(np.array([-1.0, 1.0], np.float32), (rows, cols))
             * np.power(np.float32(10), rng.uniform(-3, 3, (rows, cols)).astype(np.float32)))
    else:
        raise CourseError(f"there is no distribution {kind!r}", hint=f"one of {', '.join(DISTRIBUTIONS)}")
    return np.ascontiguousarray(x, dtype=np.float32)


def relative_errors(C, ref, abs_ref):
    """max and RMS over the elements of |C - ref| / (|A|.|B|); a NaN or Inf in C is an infinite error."""
    C64 = np.asarray(C, dtype=np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        e = np.abs(C64 - ref) / abs_ref
    e[~np.isfinite(C64)] = np.inf
    return {"max": float(np.max(e)), "rms": float(np.sqrt(np.mean(np.square(e))))}


def bound(prec, K, roundoff=None):
    """The per-element bound a check allows, relative to |A|.|B| (common/precision.py)."""
    return float(prec.tolerance(K, np.ones(1), roundoff)[0] - np.finfo(np.float32).tiny)


def parse_ks(text):
    """'256,4096' -> [256, 4096]; a CourseError for anything else."""
    out = []
    for item in (text or "").split(","):
        item = item.strip()
        if not item:
            continue
        if not item.isdigit() or not 1 <= int(item) <= MAX_K:
            raise CourseError(f"KS: cannot read {item!r}", hint=f"K values from 1 to {MAX_K}, a comma list (KS=256,4096)")
        out.append(int(item))
    if not out:
        raise CourseError("KS is empty", hint="a comma list of K values, e.g. KS=256,4096,65536")
    return sorted(set(out))


def ks_for(args):
    if getattr(args, "ks", None):
        return parse_ks(args.ks)
    return list(QUICK_KS if getattr(args, "quick", False) else FULL_KS)


def study_rows(lab):
    """The rows of the lab's table the study measures beside cuBLAS (its ACCURACY_ROWS): kernel names, or
    (name, {parameter: value}) for a build of a row with other parameters (a build that never promotes)."""
    names = lab.option("ACCURACY_ROWS")
    if not names:
        raise CourseError(f"{lab.name} declares no rows for the accuracy study",
                          hint="its table (lab.py) needs ACCURACY_ROWS = [kernel names, or (name, {PARAM: value})]")
    rows = []
    for entry in names:
        name, params = (entry, {}) if isinstance(entry, str) else entry
        rows.append(lab.kernel(name).with_params(**params))
    return rows


def methods(lab, rows):
    """[{name, precision, roundoff, kernel}] in table order: cuBLAS's methods, then the lab's rows."""
    out = [{"name": precision(p).baseline, "precision": precision(p), "roundoff": None, "kernel": None}
           for p in CUBLAS_METHODS]
    out += [{"name": k.name, "precision": k.prec, "roundoff": k.roundoff, "kernel": k} for k in rows]
    return out


# --- three cuBLAS TF32 calls -------------------------------------------------------------------

_SPLIT_SOURCE = r"""
// x -> big = tf32(x) (ties away), small = tf32(x - big): both with their low 13 bits zero, so that any
// TF32 GEMM reads them exactly. A finite x is clamped to the largest TF32 first; an Inf or NaN x has
// big = +-1 and small = x (common.precision.tf32_split says why: Inf times a TF32 number, whose small
// part is 0, stays Inf, and no product of finite parts overflows)
extern "C" __global__ void split_tf32(const float* __restrict__ x, float* __restrict__ big,
                                      float* __restrict__ small, unsigned long long n)
{
    const float TF32_MAX = __uint_as_float(0x7F7FE000u);
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x) {
        const float v = x[i];
        unsigned b, s;
        const float limit = fabsf(v) < __uint_as_float(0x7F800000u) ? TF32_MAX : 1.0f;
        asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(b) : "f"(fminf(fmaxf(v, -limit), limit)));
        b &= 0xFFFFE000u;
        const float r = v - __uint_as_float(b);
        asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(s) : "f"(r));
        big[i] = __uint_as_float(b);
        small[i] = __uint_as_float(s & 0xFFFFE000u);
    }
}
"""


class _Composed:
    """C = small_A big_B + big_A small_B + big_A big_B: the split on the device, then three cuBLAS TF32
    GEMMs, the last two accumulating into C with beta = 1 (the small products first, as a fused kernel
    adds them). Scratch for the four parts is kept and grown as needed."""

    def __init__(self, blas):
        import ctypes
        import pycuda.driver as cuda
        from pycuda.compiler import SourceModule
        self.blas, self.cuda, self.ctypes = blas, cuda, ctypes
        self.split = SourceModule(_SPLIT_SOURCE, no_extern_c=True).get_function("split_tf32")
        self.split.prepare("PPPQ")
        self.parts, self.words = None, 0
        self.one, self.zero = ctypes.c_float(1.0), ctypes.c_float(0.0)

    def _scratch(self, words):
        if words > self.words:
            self.parts = [self.cuda.mem_alloc(4 * words) for _ in range(4)]
            self.words = words
        return self.parts

    def _gemm(self, M, N, K, a, b, c, beta):
        from .cublas import CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_GEMM_DEFAULT, CUBLAS_OP_N, CUDA_R_32F
        blas = self.blas
        blas._ok(blas.lib.cublasGemmEx(blas.handle, CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, self.ctypes.byref(self.one),
                                       int(b), CUDA_R_32F, N, int(a), CUDA_R_32F, K, self.ctypes.byref(beta),
                                       int(c), CUDA_R_32F, N, CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_GEMM_DEFAULT),
                 "cublasGemmEx (3xTF32)")

    def split_into(self, parts, M, N, K, a, b):
        """A's and B's big and small parts into parts = (a_big, a_small, b_big, b_small)."""
        a_big, a_small, b_big, b_small = parts
        for x, big, small, n in ((a, a_big, a_small, M * K), (b, b_big, b_small, K * N)):
            self.split.prepared_call((min((n + 255) // 256, 4096), 1, 1), (256, 1, 1), int(x), big, small, n)

    def products(self, parts, M, N, K, c):
        """The three TF32 GEMMs of split parts into C (the small products first)."""
        a_big, a_small, b_big, b_small = parts
        self._gemm(M, N, K, a_small, b_big, c, self.zero)
        self._gemm(M, N, K, a_big, b_small, c, self.one)
        self._gemm(M, N, K, a_big, b_big, c, self.one)

    def __call__(self, M, N, K, a, b, c):
        parts = self._scratch(max(M * K, K * N))
        self.split_into(parts, M, N, K, a, b)
        self.products(parts, M, N, K, c)


class _PreSplit:
    """The composition with its operands split beforehand: the first call on (a, b) splits them into
    parts of its own (not the composition's scratch, which its split-included row, timed in the same
    interleaved loop, rewrites on every call), and every call runs the three GEMMs only. What a caller that keeps its operands
    split pays per product; a benchmark row, made anew for each set of inputs (measure.Measurer builds
    its calls per timing loop), since it cannot see when the data behind a and b change."""

    def __init__(self, composed):
        self.composed, self.key, self.parts = composed, None, None

    def __call__(self, M, N, K, a, b, c):
        key = (int(a), int(b), M, N, K)
        if key != self.key:
            words = max(M * K, K * N)
            self.parts = [self.composed.cuda.mem_alloc(4 * words) for _ in range(4)]
            self.composed.split_into(self.parts, M, N, K, a, b)
            self.key = key
        self.composed.products(self.parts, M, N, K, c)


def composed_3xtf32(blas):
    """The three-call composition bound to this cuBLAS handle (one per handle, its scratch reused)."""
    if getattr(blas, "_composed_3xtf32", None) is None:
        blas._composed_3xtf32 = _Composed(blas)
    return blas._composed_3xtf32


def composed_3xtf32_presplit(blas):
    """The three calls on operands split once, before the first call (_PreSplit): a new one per call
    of this function, so that no split outlives the inputs it was made from."""
    return _PreSplit(composed_3xtf32(blas))


# --- the study ---------------------------------------------------------------------------------

def measure_one(run, M, N, A, B, ref, abs_ref):
    """Upload, run(a, b, c) once on a NaN-poisoned C, and the errors of what came back."""
    import pycuda.driver as cuda
    from .check import NAN_BITS
    a, b, c = cuda.to_device(A), cuda.to_device(B), cuda.mem_alloc(M * N * 4)
    try:
        cuda.memset_d32(c, NAN_BITS, M * N)
        run(a, b, c)
        out = np.empty((M, N), np.float32)
        cuda.memcpy_dtoh(out, c)
    finally:
        a.free(); b.free(); c.free()
    return relative_errors(out, ref, abs_ref)


def accuracy(lab, args):
    from .measure import needs_gpu, slug
    ks = ks_for(args)                              # the arguments first: told with or without a GPU
    size = getattr(args, "size", None) or 512
    if size < 1:
        raise CourseError(f"SIZE={size}: M = N must be at least 1", hint="SIZE=512 is the default")
    rows = study_rows(lab)
    for k in rows:
        for K in ks:
            why = k.refusal(size, size, K)
            if why:
                raise CourseError(f"{k.name} cannot take {size}x{size}x{K}: {why}", hint="choose KS it serves")
    facts = needs_gpu("accuracy", lab)
    lab.build(rows, [facts["arch"]])
    from .cublas import Cublas
    from .measure import cublas_unavailable
    blas = Cublas()
    studied = []
    for m in methods(lab, rows):
        why = m["kernel"] is None and cublas_unavailable(m["precision"], blas)
        if why:
            print(f"skipping {m['name']}: {why}")
        else:
            studied.append(m)
    rng = np.random.default_rng()
    results, steps = [], len(DISTRIBUTIONS) * len(ks)
    for d, kind in enumerate(DISTRIBUTIONS):
        for i, K in enumerate(ks):
            report.progress(d * len(ks) + i + 1, steps, f"{DISTRIBUTIONS[kind]}, K = {K}: float64 reference")
            A, B = draw(kind, size, K, rng), draw(kind, K, size, rng)
            ref, abs_ref = reference(A, B)
            for m in studied:
                if m["kernel"] is None:
                    call = m["precision"].cublas(blas)
                    run = (lambda a, b, c, call=call: call(size, size, K, a, b, c))
                else:
                    run = lab.launcher(m["kernel"], size, size, K)
                errs = measure_one(run, size, size, A, B, ref, abs_ref)
                limit = bound(m["precision"], K, m["roundoff"])
                results.append({"distribution": kind, "method": m["name"], "M": size, "N": size, "K": K, **errs,
                                "bound": limit, "within_bound": errs["max"] <= limit})
    info = report.run_info(lab.dir)
    record = {"what": f"{lab.short}-accuracy", "lab": lab.name, "gpu": facts, "run": info,
              "cublas": {"library": blas.path, "version": blas.version},
              "distributions": DISTRIBUTIONS, "ks": ks, "size": size, "baseline": precision(BASE).baseline,
              "methods": {m["name"]: m["precision"].cublas_mode if m["kernel"] is None else m["kernel"].title
                          for m in studied},
              "metric": "|C - ref| / (|A|.|B|) per element, ref the float64 product of the float32 inputs",
              "results": results}
    print(f"\nGPU: {facts['name']} ({facts['arch']}); commit {info['commit'][:10]}"
          f"{' (uncommitted changes)' if info['dirty_tree'] else ''}")
    print("\n" + summary_tables(record))
    day = datetime.date.today().isoformat()
    stem = f"{lab.short}-accuracy_{slug(facts['name'])}_{day}_{info['commit'][:7]}"
    base, n = lab.results_dir / stem, 1
    while base.with_suffix(".json").exists():     # another study the same day at the same commit: kept
        n += 1
        base = lab.results_dir / f"{stem}-{n}"
    path = report.write_json(base.with_suffix(".json"), record)
    chart = accuracy_chart(record, base.with_suffix(".png"))
    print(f"\nfull data: {_shown(lab, path)}; chart: {_shown(lab, chart)}")
    outside = [r for r in results if not r["within_bound"]]
    if outside:
        raise CourseError("some results were outside their bound:\n  " + "\n  ".join(
            f"{r['method']} {r['distribution']} K={r['K']}: max {r['max']:.2e} > {r['bound']:.2e}" for r in outside),
                          hint="a method erred more than common/precision.py allows: run `make test` for it")
    return record


def _shown(lab, path):
    path = Path(path)
    return path.relative_to(lab.dir) if path.is_relative_to(lab.dir) else path


def _ratio(x, base):
    if base == 0:
        return "exact" if x == 0 else "inf"
    r = x / base
    return f"{r:.1f}x" if r < 100 else f"{r:.0f}x"


def summary_tables(record):
    """One table per distribution: a row per method, a column per K; cuBLAS SGEMM's row gives its max and
    RMS error (relative to |A|.|B|), every other row its max and RMS as multiples of SGEMM's."""
    base = record["baseline"]
    out = []
    for kind, words in record["distributions"].items():
        res = [r for r in record["results"] if r["distribution"] == kind]
        ks = [k for k in record["ks"] if any(r["K"] == k for r in res)]
        names = list(dict.fromkeys(r["method"] for r in res))
        at = {(r["method"], r["K"]): r for r in res}
        rows = []
        for name in names:
            row = {"method": name}
            for K in ks:
                r, b = at.get((name, K)), at.get((base, K))
                if r is None:
                    row[K] = "-"
                elif name == base or b is None:
                    row[K] = f"{r['max']:.1e} / {r['rms']:.1e}"
                else:
                    row[K] = f"{_ratio(r['max'], b['max'])} / {_ratio(r['rms'], b['rms'])}"
                if r is not None and not r["within_bound"]:
                    row[K] += " !"
            rows.append(row)
        out.append(report.table(rows, [("method", "method", None)] + [(K, f"K = {K}", None) for K in ks],
                                title=f"{words}, {record['size']} x {record['size']} x K: max / RMS error, "
                                      f"{base} as |C - ref| / |A|.|B|, the others as multiples of it"))
    out.append("(! : over the method's bound, common/precision.py)" if any(
        not r["within_bound"] for r in record["results"]) else "every result within its method's bound")
    return "\n\n".join(out)


def accuracy_chart(record, path):
    """Two panels (one per distribution): max error (solid) and RMS (dashed) vs K, log-log, a color per method."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker  # noqa: F401  (matplotlib.ticker.NullLocator below)
    from . import writes
    kinds = list(record["distributions"])
    fig, axes = plt.subplots(1, len(kinds), figsize=(5.2 * len(kinds), 4.2), sharey=True, squeeze=False)
    for ax, kind in zip(axes[0], kinds):
        res = [r for r in record["results"] if r["distribution"] == kind]
        for i, name in enumerate(dict.fromkeys(r["method"] for r in res)):
            pts = sorted((r["K"], r["max"], r["rms"]) for r in res if r["method"] == name)
            color = f"C{i}"
            ax.loglog([p[0] for p in pts], [p[1] for p in pts], "-o", color=color, ms=3, label=f"{name} (max)")
            ax.loglog([p[0] for p in pts], [p[2] for p in pts], "--", color=color, lw=1)
        ax.set_title(record["distributions"][kind], fontsize=10)
        ks = sorted({r["K"] for r in res})
        ax.set_xticks(ks)
        ax.set_xticklabels([str(k) for k in ks], fontsize=8)
        ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
        ax.set_xlabel("K")
        ax.grid(True, which="major", lw=0.3)
    axes[0][0].set_ylabel("error / (|A|.|B|): max (solid), RMS (dashed)")
    axes[0][0].legend(fontsize=7, loc="upper left")
    gpu = (record.get("gpu") or {}).get("name", "")
    fig.suptitle(f"{record['lab']}: error vs float64, {record['size']} x {record['size']} x K, {gpu}", fontsize=10)
    fig.tight_layout()
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=130)
    writes.note(path)
    plt.close(fig)
    return Path(path)
