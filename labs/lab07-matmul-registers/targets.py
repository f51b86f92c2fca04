"""The Make targets of lab 7: build, bench, sass, tune, selfcheck. Each prints a short aligned
table and writes its full data to a file (reports/ for build and sass, results/ for timings)."""
import datetime
import re
from pathlib import Path

import numpy as np

import lab07
from lab07 import BUILD_DIR, FP16, FP32, KERNELS, LADDERS, REPORTS_DIR, RESULTS_DIR
from common import build as nvbuild
from common import check as checking
from common import report, sass as sassmod
from common.errors import CourseError


def _entries(k):
    return [(v, e) for v, e in k.entries.items()]


# --- make build ------------------------------------------------------------------------------

def build(args):
    archs = nvbuild.resolve_archs(args.arch)
    kernels = FP32 + FP16
    report.progress(0, 1, f"compiling {len(kernels)} kernels for {', '.join(archs)}")
    res = lab07.build(kernels, archs)
    report.progress(1, 1, "compiled")
    rows, spills = [], []
    for k in kernels:
        for a in archs:
            for v, entry in _entries(k):
                r = res[(k.name, a)].get(entry)
                if r is None:
                    raise CourseError(f"{k.source} has no entry point {entry} for {a}",
                                      hint="the kernel table in lab07.py and the .cu file disagree")
                spilled = r["spill_stores"] + r["spill_loads"] > 0 or r["stack"] > 0
                rows.append({"kernel": k.name + (f"/{v}" if v else ""), "entry": entry, "arch": a, **r,
                             "flag": "SPILLS!" if spilled else ""})
                if spilled:
                    spills.append(f"{entry} ({a})")
    cols = [("kernel", "kernel", ""), ("arch", "arch", ""), ("registers", "regs", "d"),
            ("spill_stores", "spill st B", "d"), ("spill_loads", "spill ld B", "d"),
            ("smem", "static smem B", "d"), ("stack", "stack B", "d"), ("flag", "", "")]
    print(report.table(rows, cols, title=f"Lab 7 kernels: registers, spills, shared memory (-Xptxas -v)"))
    dyn = [k for k in kernels if k.shared_bytes]
    for k in dyn:
        print(f"  {k.name} also takes {k.shared_bytes} B of dynamic shared memory per block")
    path = report.write_json(REPORTS_DIR / "build.json", {"archs": archs, "kernels": rows})
    print(f"full data: {path.relative_to(lab07.LAB)}")
    if spills:
        print("\n" + "!" * 72 + f"\n!! SPILLS to local memory in: {', '.join(spills)}\n"
              "!! registers ran out: accumulators live in slow local memory (LDL/STL in `make sass`)\n" + "!" * 72)


# --- make sass -------------------------------------------------------------------------------

def sass_counts(arch, kernels=None):
    """{entry: family counts} for every entry point of `kernels`, built for `arch`."""
    kernels = kernels or FP32 + FP16
    lab07.build(kernels, [arch])
    out = {}
    for k in kernels:
        counts = sassmod.opcode_counts(sassmod.disassemble(k.cubin(BUILD_DIR, arch)))
        for v, entry in _entries(k):
            if entry not in counts:
                raise CourseError(f"{entry} is missing from the SASS of {k.source}")
            out[entry] = {"kernel": k.name + (f"/{v}" if v else ""), "opcodes": dict(counts[entry]),
                          **sassmod.family_counts(counts[entry])}
    return out


def sass(args):
    archs = nvbuild.resolve_archs(args.arch)
    if args.arch is None and len(archs) > 1:
        archs = archs[:1]
        print(f"(no GPU here: showing {archs[0]}; ARCH=sm_XY picks another, ARCH=all shows every one)")
    record = {}
    for arch in archs:
        counts = sass_counts(arch)
        record[arch] = counts
        rows = list(counts.values())
        cols = [("kernel", "kernel", "")] + [(c, c, "d") for c in sassmod.COLUMNS]
        print(report.table(rows, cols, title=f"\nStatic SASS opcode counts, {arch} (cuobjdump -sass; each instruction counted once)"))
        model_rows = []
        for k in FP32:
            for v, entry in _entries(k):
                c = counts[entry]
                loads = c["LDS"] + c["LDS.128"]
                model_rows.append({"kernel": c["kernel"], "model": k.model["smem_loads_per_ffma"],
                                   "measured": loads / c["FFMA"] if c["FFMA"] else None,
                                   "LDS": c["LDS"], "LDS.128": c["LDS.128"], "FFMA": c["FFMA"]})
        print(report.table(model_rows, [("kernel", "kernel", ""), ("model", "chapter: loads/FFMA", ".4f"),
                                        ("measured", "SASS: (LDS+LDS.128)/FFMA", ".4f"),
                                        ("LDS", "LDS", "d"), ("LDS.128", "LDS.128", "d"), ("FFMA", "FFMA", "d")],
                           title="\nShared-load instructions per FFMA: the chapter's model against the compiled code"))
    print("\nWhy the two columns differ: README.md, 'Reading make sass'.")
    path = report.write_json(REPORTS_DIR / "sass.json", record)
    print(f"full data (every opcode): {path.relative_to(lab07.LAB)}")


# --- make bench ------------------------------------------------------------------------------

def _slug(name):
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


def bench(args, kernels_by_ladder=None, sizes=None, stem="lab07-bench", out_dir=None):
    """Time both ladders against cuBLAS; the record and charts go to out_dir (default results/)."""
    from common.cublas import Cublas
    from common.device import gpu_facts
    from common.timing import L2Flusher, time_gpu

    facts = gpu_facts()               # a clear error here when there is no GPU
    import pycuda.driver as cuda
    arch = facts["arch"]
    sizes = sizes or [int(s) for s in args.sizes.split(",")]
    ladders = kernels_by_ladder or {n: LADDERS[n] for n in (["fp32", "fp16"] if args.ladder == "both" else [args.ladder])}
    report.progress(0, 1, f"building for {arch}")
    lab07.build([k for ks in ladders.values() for k in ks], [arch])
    blas = Cublas()
    flusher = L2Flusher(facts["l2_bytes"])
    peaks = facts["peaks"]
    rng = np.random.default_rng()
    results, failures = [], []
    steps = sum(len(sizes) * (len(ks) + 1) for ks in ladders.values())
    step = 0
    for ladder, kernels in ladders.items():
        dtype = np.float32 if ladder == "fp32" else np.float16
        base_name = "cuBLAS"
        blas_call = blas.sgemm if ladder == "fp32" else blas.hgemm
        peak = peaks["fp32"] if ladder == "fp32" else peaks["fp16_tensor"]
        kind = "fp32" if ladder == "fp32" else "fp16_tensor"
        for n in sizes:
            M = N = K = n
            flops = 2.0 * M * N * K
            A = checking.random_matrix(M, K, dtype, rng)
            B = checking.random_matrix(K, N, dtype, rng)
            report.progress(step, steps, f"{ladder} {n}^3: float64 reference on the CPU")
            ref, abs_ref = checking.reference(A, B)
            tol = checking.tolerance(K, abs_ref, kind)
            a, b, c = cuda.to_device(A), cuda.to_device(B), cuda.mem_alloc(M * N * 4)
            Cout = np.empty((M, N), np.float32)
            cublas_ms = None
            for k in [None] + list(kernels):
                step += 1
                name = base_name if k is None else k.name
                report.progress(step, steps, f"{ladder} {n}^3: {name}")
                if k is None:
                    run = (lambda: blas_call(M, N, K, a, b, c))
                    variant = ""
                else:
                    variant = k.variant_for(M, N, K)
                    launch = lab07.launcher(k, M, N, K, variant)
                    run = (lambda: launch(a, b, c))
                cuda.memset_d32(c, checking.NAN_BITS, M * N)
                t = time_gpu(run, flusher)
                cuda.memcpy_dtoh(Cout, c)          # the result of the last timed repetition
                v = checking.compare(Cout, ref, tol, label=f"{name} {n}^3")
                if not v.ok:
                    failures.append(str(v))
                if k is None:
                    cublas_ms = t.median_ms
                tf = t.tflops(flops)
                results.append({"ladder": ladder, "kernel": name, "variant": variant, "size": n, **t.as_dict(),
                                "tflops": tf, "pct_of_peak": 100 * tf / peak if peak else None,
                                "pct_of_cublas": 100 * cublas_ms / t.median_ms, "check": str(v), "check_ok": v.ok})
            a.free(); b.free(); c.free()
    _bench_report(results, facts, sizes, ladders, blas, failures, stem, out_dir or RESULTS_DIR)
    if failures:
        raise CourseError("some results were wrong after timing:\n  " + "\n  ".join(failures),
                          hint="run `make test` for the kernel that failed")
    return results


def _bench_report(results, facts, sizes, ladders, blas, failures, stem, out_dir):
    """Print the tables (common/records.py formats them, for the notebooks too), write the JSON
    record and the charts."""
    from common import records
    from common.cublas import Cublas
    from common.plots import ladder_chart
    info = report.run_info(lab07.LAB)
    day = datetime.date.today().isoformat()
    record = {"what": stem, "gpu": facts, "run": info, "sizes": sizes,
              "cublas": {"library": blas.path, "version": blas.version,
                         "fp32_mode": Cublas.SGEMM_MODE, "fp16_mode": Cublas.HGEMM_MODE},
              "timing": "CUDA events, 3 warm-ups, median of 10-50 repetitions, L2 flushed before each",
              "results": results, "failures": failures}
    print(f"\nGPU: {facts['name']} ({facts['arch']}), {facts['sms']} SMs, max {facts['sm_clock_max_mhz']:.0f} MHz, "
          f"driver {facts.get('driver', '?')}; commit {info['commit'][:10]}{' (uncommitted changes)' if info['dirty_tree'] else ''}")
    for ladder in ladders:
        print("\n" + records.ladder_table(record, ladder))
    if "fp32" in ladders and "fp16" in ladders:
        ratios = "  ".join(f"{n}³: {records.result(record, 'fp16', 'cuBLAS', n)['tflops'] / records.result(record, 'fp32', 'cuBLAS', n)['tflops']:.1f}x"
                           for n in sizes)
        print(f"\ncuBLAS HGEMM / cuBLAS SGEMM (what FP16 inputs are worth): {ratios}")
    base = Path(out_dir) / f"{stem}_{_slug(facts['name'])}_{day}_{info['commit'][:7]}"
    path = report.write_json(base.with_suffix(".json"), record)
    charts = []
    for ladder in ladders:
        series, ns = records.series(record, ladder)
        peak = facts["peaks"]["fp32" if ladder == "fp32" else "fp16_tensor"]
        charts.append(ladder_chart(series, ns, f"{base}_{ladder}.png", baseline=records.BASELINE,
                                   title=f"Lab 7 {ladder.upper()} ladder on {facts['name']} ({day})",
                                   ceiling=("peak", peak) if peak else None))
    print(f"full data: {_shown(path)}; charts: {', '.join(_shown(c) for c in charts)}")


def _shown(path):
    """A path as the student finds it from the lab folder."""
    try:
        return str(path.relative_to(lab07.LAB))
    except ValueError:
        return str(path)


# --- make tune -------------------------------------------------------------------------------

# The chapter's parameters first; then one change at a time, then the best pairs.
V7_CANDIDATES = [dict(), dict(V7_PREFETCH=1), dict(BK=8), dict(BK=8, V7_PREFETCH=1),
                 dict(WM=64, WN=32, WNITER=2), dict(WM=64, WN=32, WNITER=2, V7_PREFETCH=1),
                 dict(BM=64, WM=32, TM=4), dict(BM=256), dict(BM=256, BK=8, V7_PREFETCH=1)]
T3_CANDIDATES = [dict(), dict(STAGES=3), dict(STAGES=4), dict(BK=64), dict(BK=64, STAGES=3),
                 dict(WN=64), dict(WN=64, STAGES=3), dict(WN=64, STAGES=4), dict(WN=64, BK=64, STAGES=3),
                 dict(BN=256, WN=64, STAGES=3), dict(BM=256, WM=64, WN=64, STAGES=3)]


def tune(args):
    """Other tile parameters for v7 and t3, timed against cuBLAS at one size in the same run."""
    ladders = {"fp32": [lab07.v7_with(**p) if p else KERNELS["v7"] for p in V7_CANDIDATES],
               "fp16": [lab07.t3_with(**p) if p else KERNELS["t3"] for p in T3_CANDIDATES]}
    # a candidate that does not compile (a static_assert) is reported and skipped
    from common.device import gpu_facts
    arch = gpu_facts()["arch"]
    for ladder, ks in ladders.items():
        keep = []
        for k in ks:
            try:
                lab07.build([k], [arch])
                keep.append(k)
            except CourseError as e:
                print(f"skipping {k.name}: {e.message.splitlines()[0]}")
        ladders[ladder] = keep
    bench(args, kernels_by_ladder=ladders, sizes=[args.size], stem="lab07-tune")


# --- make selfcheck --------------------------------------------------------------------------

SELFCHECK_SHAPES = [(1, 1, 8), (17, 33, 16), (130, 260, 104), (257, 129, 512), (300, 200, 8), (96, 385, 1000)]


def selfcheck(args):
    bad = 0
    for k in FP32 + FP16:
        for v in k.variants:
            for (M, N, K) in SELFCHECK_SHAPES:
                if v == "vec" and k.variant_for(M, N, K) != "vec":
                    continue
                verdict = lab07.check(k.name, M, N, K, variant=v)
                bad += not verdict.ok
                print(verdict)
    if bad:
        raise CourseError(f"{bad} check(s) failed")
