"""How fast a kernel's main loop runs, apart from its wave quantization and its start and finish:
c6's whole tiles, lab 7's v8 and cuBLAS SGEMM on shapes of exactly 1 and 3 waves, over K. On a GPU.

    .venv/bin/python labs/lab07b-cute-sgemm/tools/wave_pace.py [--builds 'NAME=v,...;...'] [K ...]
                                                         (K: default 512 ... 8192)

--builds adds c6 built with other parameters (the syntax of `make compare`'s BUILDS), each on shapes of
exactly 1 and 3 of its own waves: whether a build is faster in its main loop or only in its tail.

(from the project's root, with the course's .venv: its .pth makes `common` importable)

A shape of exactly w waves gives every resident block the same work, so no SM idles at the end and
the time is w tiles' worth per block slot. For each kernel and each w, t(K) is timed at several K
(interleaved, L2 flushed, medians: common/timing.py) and fitted by least squares as

    t(K) = fixed + pace x K

`pace` (ms per 4096 of K, per wave) is the main loop's speed; `fixed` is what does not grow with K:
the launch, each block's pipeline fill and epilogue, the waves' changeover. c6 runs its whole tiles
alone on such shapes (launch.py: no tail to share), so its rows are cute_sgemm_c6_tiles's loop. cuBLAS
is timed on each kernel's own shapes. The shapes come from this GPU (SMs x resident blocks of each
kernel), so they differ from one GPU to another. Writes results/lab07b-wave-pace_<gpu>_<date>_<commit>.json.
"""
import datetime
import math
import sys

import numpy as np

from common import report
from common.errors import CourseError, user_errors
from common.lab import load

KS = (512, 1024, 2048, 4096, 8192)
WAVES = (1, 3)


def grid_of(tiles):
    """(rows, columns) of tiles with rows x columns == tiles, as square as the divisors allow."""
    rows = max(d for d in range(1, math.isqrt(tiles) + 1) if tiles % d == 0)
    return rows, tiles // rows


def fit(points):
    """Least squares t = fixed + pace K over [(K, ms)]: (fixed in us, pace in ms per 4096 of K)."""
    K = np.array([p[0] for p in points], float)
    t = np.array([p[1] for p in points], float)
    pace, fixed = np.polyfit(K, t, 1)
    return fixed * 1e3, pace * 4096


def kernels(lab, lab7, builds=()):
    """[(label, lab, kernel)]: c6, each build of c6 (dicts of parameters), v8."""
    c6 = lab.kernel("c6")
    out = [("c6 (whole tiles)", lab, c6)]
    out += [(f"{k.name} (whole tiles)", lab, k) for k in (c6.with_params(**b) for b in builds)]
    return out + [("v8", lab7, lab7.kernel("v8"))]


def shapes(lab, lab7, facts, builds=()):
    """[(kernel label, lab, kernel, waves, M, N)]: c6 (and its builds) and v8 at exactly w waves of their tiles."""
    import importlib
    from common.kernels import load_function
    launch = importlib.import_module(f"{lab.package}.launch")
    out = []
    for label, L, k in kernels(lab, lab7, builds):
        func = load_function(str(L.cubin(k, facts["arch"])), k.entries["vec"], k.shared_bytes, k.signature)
        resident = launch.resident_blocks(func, k)
        bm, bn = k.tile
        for w in WAVES:
            rows, cols = grid_of(w * resident)
            out.append((label, L, k, w, rows * bm, cols * bn))
    return out


def pace(lab, lab7, Ks, builds=()):
    import pycuda.driver as cuda
    from common.check import NAN_BITS, compare, random_matrix, reference, tolerance
    from common.cublas import Cublas
    from common.device import gpu_facts
    from common.precision import precision
    from common.timing import L2Flusher, time_interleaved
    facts = gpu_facts()
    for _, L, k in kernels(lab, lab7, builds):
        L.build([k], [facts["arch"]])
    cases = shapes(lab, lab7, facts, builds)
    blas, prec, flusher = Cublas(), precision("fp32"), L2Flusher(facts["l2_bytes"])
    rng = np.random.default_rng()
    times = {}                                      # (run, waves) -> [(K, ms)]
    shape_of = {}                                   # (run, waves) -> (M, N)
    for i, K in enumerate(Ks):
        report.progress(i, len(Ks), f"K = {K}: {len(cases)} shapes, each beside cuBLAS")
        runs, buffers = {}, []
        for label, L, k, w, M, N in cases:
            A, B = random_matrix(M, K, np.float32, rng), random_matrix(K, N, np.float32, rng)
            a, b, c = cuda.to_device(A), cuda.to_device(B), cuda.mem_alloc(M * N * 4)
            buffers += [a, b, c]
            run = L.launcher(k, M, N, K, "vec")
            if K == Ks[0]:                          # once per shape: the kernel computes this shape
                cuda.memset_d32(c, NAN_BITS, M * N)
                run(a, b, c)
                C = np.empty((M, N), np.float32)
                cuda.memcpy_dtoh(C, c)
                ref, abs_ref = reference(A, B)
                verdict = compare(C, ref, tolerance(K, abs_ref, "fp32"), f"{label} {M}x{N}x{K}")
                if not verdict.ok:
                    raise CourseError(str(verdict), hint="the tests (make test) say more; nothing was timed")
            blas_run = f"cuBLAS on {label}'s shapes"
            runs[(label, w)] = (lambda run=run, a=a, b=b, c=c: run(a, b, c))
            runs[(blas_run, w)] = (lambda M=M, N=N, K=K, a=a, b=b, c=c: prec.cublas(blas)(M, N, K, a, b, c))
            shape_of[(label, w)] = shape_of[(blas_run, w)] = (M, N)
        for key, t in time_interleaved(runs, flusher, max_reps=30).items():
            times.setdefault(key, []).append((K, t.median_ms))
        for x in buffers:
            x.free()
    report.progress(len(Ks), len(Ks), "done")
    rows = []
    for (label, w), points in times.items():
        fixed_us, ms = fit(points)
        M, N = shape_of[(label, w)]
        flop_per_wave = 2.0 * M * N * 4096 / w
        rows.append({"run": label, "waves": w, "M": M, "N": N, "fixed_us": fixed_us,
                     "ms_per_wave_per_4096_k": ms / w, "tflops_of_pace": flop_per_wave / (ms / w * 1e-3) / 1e12,
                     "points_ms": {str(K): t for K, t in points}})
    for r in rows:                                  # the kernel's pace against cuBLAS's on the same shapes
        if not r["run"].startswith("cuBLAS"):
            other = next(x for x in rows if x["run"] == f"cuBLAS on {r['run']}'s shapes" and x["waves"] == r["waves"])
            r["pace_pct_of_cublas"] = 100 * other["ms_per_wave_per_4096_k"] / r["ms_per_wave_per_4096_k"]
    return facts, rows


def main(argv):
    from common.measure import needs_gpu, slug
    lab, lab7 = load("lab07b-cute-sgemm"), load("lab07-matmul-registers")
    builds = []
    if argv and argv[0].split("=")[0] == "--builds":
        from common.compare import parse_builds
        if "=" in argv[0]:
            text, argv = argv[0].split("=", 1)[1], argv[1:]
        elif len(argv) > 1:
            text, argv = argv[1], argv[2:]
        else:
            raise CourseError("--builds needs a value", hint="e.g. --builds 'BN=256,THR_N=32,MIN_BLOCKS=1'")
        builds = parse_builds(text)
    try:
        Ks = [int(x) for x in argv] or list(KS)
    except ValueError:
        raise CourseError(f"wave_pace.py takes values of K (whole numbers), not {' '.join(argv)!r}",
                          hint="e.g. wave_pace.py 1024 2048 4096") from None
    if len(Ks) < 2 or any(K < 32 or K % 32 for K in Ks):
        raise CourseError("wave_pace.py needs at least two values of K, each a multiple of 32 (c6's BK)",
                          hint="e.g. wave_pace.py 1024 2048 4096")
    needs_gpu(None, lab, command="tools/wave_pace.py")
    facts, rows = pace(lab, lab7, Ks, builds)
    rows.sort(key=lambda r: (r["waves"], r["run"].startswith("cuBLAS"), r["run"]))
    print(report.table(rows, [("run", "run", None), ("waves", "waves", "d"), ("M", "M", "d"), ("N", "N", "d"),
                              ("fixed_us", "fixed us", ".1f"), ("ms_per_wave_per_4096_k", "ms / wave / 4096 k", ".4f"),
                              ("tflops_of_pace", "TFLOP/s of pace", ".1f"), ("pace_pct_of_cublas", "pace % cuBLAS", ".1f")],
                       title=f"main-loop pace on {facts['name']}: t(K) = fixed + pace K, K in {Ks}"))
    info = report.run_info(lab.dir)
    path = lab.results_dir / (f"{lab.short}-wave-pace_{slug(facts['name'])}_{datetime.date.today().isoformat()}_"
                              f"{info['commit'][:7]}.json")
    report.write_json(path, {"what": f"{lab.short}-wave-pace", "gpu": facts, "run": info, "ks": Ks, "rows": rows})
    print(f"\nfull data: {path.relative_to(lab.dir)}")


if __name__ == "__main__":
    with user_errors():
        main(sys.argv[1:])
