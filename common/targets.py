"""The Make targets every lab has: build, bench, sass, tune, selfcheck. Each takes a Lab, prints a
short aligned table and writes its full data to a file (reports/ for build and sass, results/ for
timings). `python -m common <target> --lab labs/<lab>` runs one (common/__main__.py).

What each reads from the lab's table (common.lab):
    build      every row (registers, spills, shared memory, on every architecture asked for);
               ARCHS_WITHOUT_GPU: the architectures built when there is no GPU and no ARCH is given
    bench      LADDERS, BENCH_SIZES (default 1024, 2048, 4096), EXTRA_BASELINES {ladder: [precision]}
    sass       every row, and each build `make tune` recorded for a GPU of the architecture shown
               ("v8[STAGES4] (tuned: NVIDIA H200 large)"); rows with model["smem_loads_per_ffma"] get
               the loads-per-FFMA table
    tune       TUNING {ladder: Tuning(kernel, candidates, illegal, sizes)}; the best per GPU and size
               class is recorded in results/<lab>-tuned_<gpu>.json, and bench times it as "name (tuned)";
               the profilers take it as NAME:tuned (make ncu-table adds that row where there is one)
    selfcheck  SELFCHECK_SHAPES, every variant of every row on each shape it serves
"""
import datetime
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

import numpy as np

from . import build as nvbuild
from . import check as checking
from . import register_banks, report, sass as sassmod
from .errors import CourseError
from .precision import precision

BASELINE = "cuBLAS"
DEFAULT_SIZES = [1024, 2048, 4096]
SELFCHECK_SHAPES = [(1, 1, 8), (17, 33, 16), (130, 260, 104), (257, 129, 512), (300, 200, 8), (96, 385, 1000)]


def gpu_needed(lab=None):
    """The GPUs a lab's own kernels run on, in words: 'an NVIDIA GPU of sm_80 or newer', or 'an NVIDIA
    Hopper GPU (sm_90)' for a lab whose every row is built for sm_90a only."""
    rows = lab.own() if lab is not None else []
    if rows and all(k.archs for k in rows):
        lowest = min((a for k in rows for a in k.archs), key=lambda a: int(re.sub(r"\D", "", a)))
        number = re.sub(r"\D", "", lowest)
        if lowest.endswith("a"):          # sm_90a: that architecture's GPUs only
            return f"an NVIDIA {'Hopper ' if number == '90' else ''}GPU (sm_{number})"
        return f"an NVIDIA GPU of sm_{number} or newer"
    return "an NVIDIA GPU of sm_80 or newer"


def walkthrough_notebook(lab):
    """The lab's notebook (notebooks/<lab's short name>_*.ipynb), as a path from the repository root, or None."""
    from .notebooks import NOTEBOOKS_DIR
    found = sorted(NOTEBOOKS_DIR.glob(f"{lab.short}_*.ipynb")) if lab is not None else []
    return f"notebooks/{found[0].name}" if found else None


def needs_gpu(target, lab=None, command=None):
    """This GPU's facts, or one short message: which target needs a GPU (of which architecture), and
    what works without one. command: what to call it in that message when it is not `make <target>`
    (a lab's tool script)."""
    from .device import gpu_status
    ok, why = gpu_status()
    if not ok:
        where = f" {lab.dir.relative_to(lab.dir.parents[1])}/results/" if lab else " the lab's results/"
        notebook = walkthrough_notebook(lab)
        shows = f" and {notebook} shows them" if notebook else ""
        raise CourseError(f"`{command or 'make ' + target}` needs an NVIDIA GPU, and cannot use one here: {why}",
                          hint=f"run it on a machine with {gpu_needed(lab)}; the numbers recorded "
                               f"on one are in{where}{shows}; `make`, `make sass` and `make test` work here")
    from .device import gpu_facts
    return gpu_facts()


def _shown(lab, path):
    try:
        return str(Path(path).relative_to(lab.dir))
    except ValueError:
        return str(path)


# --- make build ------------------------------------------------------------------------------

def build_rows(lab, archs, kernels=None):
    kernels = kernels or lab.all_kernels
    res = lab.build(kernels, archs)
    rows = []
    for k in kernels:
        for a in archs:
            ba = lab.build_arch(k, a)
            if ba is None:
                continue
            for v, entry in k.all_entries.items():
                r = res[(k.name, ba)].get(entry)
                if r is None:
                    raise CourseError(f"{k.source} has no entry point {entry} for {ba}",
                                      hint="the kernel table (lab.py) and the .cu file disagree")
                spilled = r["spill_stores"] + r["spill_loads"] > 0 or r["stack"] > 0
                rows.append({"kernel": k.label(v), "entry": entry, "arch": ba, **r,
                             "dynamic_smem": k.shared_bytes, "flag": "SPILLS!" if spilled else ""})
    return rows


def build(lab, args):
    asked = getattr(args, "arch", None)
    archs = nvbuild.resolve_archs(asked)
    if not asked and len(archs) > 1 and lab.option("ARCHS_WITHOUT_GPU"):
        # no GPU here, no ARCH: a lab whose kernels compile slowly names the architectures its default
        # build takes (its tests may compile the others); ARCH=all still builds all five
        archs = list(lab.option("ARCHS_WITHOUT_GPU"))
        print(f"(no GPU here: building {lab.name} for {', '.join(archs)} only, as its table asks; ARCH=all builds all five)")
    kernels = lab.all_kernels
    report.progress(0, 1, f"compiling {len(kernels)} kernels of {lab.name} for {', '.join(archs)}")
    rows = build_rows(lab, archs, kernels)
    report.progress(1, 1, "compiled")
    cols = [("kernel", "kernel", ""), ("arch", "arch", ""), ("registers", "regs", "d"),
            ("spill_stores", "spill st B", "d"), ("spill_loads", "spill ld B", "d"),
            ("smem", "static smem B", "d"), ("dynamic_smem", "dynamic smem B", "d"), ("stack", "stack B", "d"),
            ("flag", "", "")]
    print(report.table(rows, cols, title=f"{lab.title}: registers, spills, shared memory (-Xptxas -v)"))
    path = report.write_json(lab.reports_dir / "build.json", {"archs": archs, "kernels": rows})
    print(f"full data: {_shown(lab, path)}")
    spills = [f"{r['entry']} ({r['arch']})" for r in rows if r["flag"]]
    if spills:
        print("\n" + "!" * 72 + f"\n!! SPILLS to local memory in: {', '.join(spills)}\n"
              "!! registers ran out: accumulators live in slow local memory (LDL/STL in `make sass`)\n" + "!" * 72)
    return rows


# --- make sass -------------------------------------------------------------------------------

def sass_counts(lab, arch, kernels=None, notes=None, progress=None):
    """{entry: family counts} for every entry point of `kernels` that builds for `arch`. A build with
    parameters is keyed by its entry and its parameters (sgemm_v8_vec[STAGES4]); notes {kernel name:
    text} are appended to the rows' labels. progress(i, n, what): each kernel built, then disassembled."""
    kernels = [k for k in (kernels or lab.all_kernels) if lab.build_arch(k, arch)]
    lab.build(kernels, [arch], progress=progress)
    out = {}
    for i, k in enumerate(kernels, 1):
        if progress:
            progress(i, len(kernels), f"disassembling {k.name} ({arch})")
        text = sassmod.disassemble(k.cubin(lab.build_dir_of(k), lab.build_arch(k, arch)))
        counts, banks = sassmod.opcode_counts(text), register_banks.ffma_bank_conflicts(text)
        note = f" ({notes[k.name]})" if notes and k.name in notes else ""
        for v, entry in k.all_entries.items():
            if entry not in counts:
                raise CourseError(f"{entry} is missing from the SASS of {k.source}")
            out[entry + k.name[len(k.base_name):]] = {
                "kernel": k.label(v) + note, "opcodes": dict(counts[entry]), **sassmod.family_counts(counts[entry]),
                "register_banks": banks.get(entry)}
    return out


def sass_progress(n, arch, stream=None):
    """What `make sass` says while it compiles and disassembles (a first run compiles every kernel: a
    minute for CuTe's): on a terminal, one status line rewritten per kernel; in a log, one line."""
    import sys
    stream = stream or sys.stderr
    if stream.isatty() and not os.environ.get("CI"):
        def show(i, total, what):
            print(f"\r\033[K[{i}/{total}] {what}", end="", file=stream, flush=True)
            if what.startswith("disassembling") and i == total:
                print("\r\033[K", end="", file=stream, flush=True)
        return show
    print(f"compiling (where stale) and disassembling {n} kernels for {arch} ...", file=stream, flush=True)
    return None


def sass(lab, args):
    archs = nvbuild.resolve_archs(getattr(args, "arch", None))
    if getattr(args, "arch", None) is None and len(archs) > 1:
        archs = [a for a in archs if a == "sm_90"] or archs[:1]
        print(f"(no GPU here: showing {archs[0]}; ARCH=sm_XY picks another, ARCH=all shows every one)")
    record = {}
    for arch in archs:
        tuned = tuned_builds(lab, arch)
        kernels = lab.all_kernels + [k for k, _ in tuned.values()]
        counts = sass_counts(lab, arch, kernels, notes={name: note for name, (_, note) in tuned.items()},
                             progress=sass_progress(len(kernels), arch))
        record[arch] = counts
        columns = [c for c in sassmod.COLUMNS if any(r[c] for r in counts.values())] or sassmod.COLUMNS
        cols = [("kernel", "kernel", "")] + [(c, c, "d") for c in columns]
        print(report.table(list(counts.values()), cols,
                           title=f"\nStatic SASS opcode counts, {arch} (cuobjdump -sass; each instruction counted once)"))
        bank_rows = [{"kernel": r["kernel"], **r["register_banks"]} for r in counts.values()
                     if r.get("register_banks") and r["register_banks"]["ffma"]]
        if bank_rows:
            print(report.table(bank_rows, [("kernel", "kernel", ""), ("ffma", "FFMA", "d"),
                                           ("bank_conflicts", "bank-conflicting FFMA", "d"),
                                           ("pct_conflicting", "% of FFMA", ".1f"),
                                           ("three_reads", "3 bank reads", "d")],
                               title="\nFFMA register-bank conflicts (static; model: 2 banks, the reuse cache; "
                                     "common/register_banks.py)"))
        model_rows = []
        for k in lab.all_kernels:
            if "smem_loads_per_ffma" not in k.model or not lab.build_arch(k, arch):
                continue
            for v, entry in k.entries.items():
                c = counts[entry]
                loads = c["LDS"] + c["LDS.128"]
                model_rows.append({"kernel": c["kernel"], "model": k.model["smem_loads_per_ffma"],
                                   "measured": loads / c["FFMA"] if c["FFMA"] else None,
                                   "LDS": c["LDS"], "LDS.128": c["LDS.128"], "FFMA": c["FFMA"]})
        if model_rows:
            print(report.table(model_rows, [("kernel", "kernel", ""), ("model", "chapter: loads/FFMA", ".4f"),
                                            ("measured", "SASS: (LDS+LDS.128)/FFMA", ".4f"),
                                            ("LDS", "LDS", "d"), ("LDS.128", "LDS.128", "d"), ("FFMA", "FFMA", "d")],
                               title="\nShared-load instructions per FFMA: the chapter's model against the compiled code"))
            print("\nWhy the two columns differ: the lab README, 'Reading make sass'.")
    path = report.write_json(lab.reports_dir / "sass.json", record)
    print(f"full data (every opcode): {_shown(lab, path)}")
    return record


# --- make bench ------------------------------------------------------------------------------

def _slug(name):
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


def ladder_info(lab, ladder, facts=None):
    """What a record says about one ladder: its precision, title, baseline, peak, and its yardstick rows."""
    p = lab.ladder_precision(ladder)
    return {"precision": p.name, "title": p.title, "baseline_mode": p.cublas_mode,
            "peak_tflops": p.peak((facts or {}).get("peaks")),
            "yardsticks": [k.name for k in lab.ladders.get(ladder, []) if k.yardstick]}


class Measurer:
    """One GPU session's measuring kit: cuBLAS, the L2 flusher, fresh inputs per size. `rows(...)`
    times cuBLAS of the ladder's precision first, then each kernel, and checks each result after
    its timing loop against the float64 reference."""

    def __init__(self, lab, facts):
        from .cublas import Cublas
        from .timing import L2Flusher
        self.lab, self.facts = lab, facts
        self.blas = Cublas()
        self.flusher = L2Flusher(facts["l2_bytes"])
        self.rng = np.random.default_rng()

    def measure(self, prec, entries, M, N, K, progress=None, deadline=None, budget_s=1.0, group=None):
        """[(entry, Timing, Verdict, cuBLAS ms)] for cuBLAS of `prec` and each entry ({"name", "kernel",
        "variant"}; kernel None = a cuBLAS call of entry["precision"]), timed interleaved (common.timing
        says why), each with its own output buffer, poisoned first and checked after the timing against
        the float64 reference. With `group`, entries are timed `group` at a time, each group with cuBLAS
        again, and with a deadline (time.monotonic()) the groups after it are left out."""
        import time
        import pycuda.driver as cuda
        from .timing import time_interleaved
        lab = self.lab
        A, B = prec.random_inputs(M, N, K, self.rng)
        ref, abs_ref = checking.reference(*prec.reference_inputs(A, B))
        a, b = cuda.to_device(A), cuda.to_device(B)
        base = {"name": BASELINE, "kernel": None, "variant": "", "precision": prec}
        entries = list(entries)
        group = group or max(len(entries), 1)
        out, Cout, cs = [], np.empty((M, N), np.float32), {}
        try:
            for g in range(0, max(len(entries), 1), group):
                if deadline is not None and g and time.monotonic() > deadline:
                    print(f"time budget spent: {len(entries) - g} row(s) at {M}x{N}x{K} not timed")
                    break
                chunk = list(enumerate([base] + entries[g:g + group]))     # keyed by position: names may repeat
                runs, tols = {}, {}
                for i, e in chunk:
                    if progress:
                        progress(e.get("label", e["name"]))
                    c = cs[i] = cuda.mem_alloc(M * N * 4)
                    cuda.memset_d32(c, checking.NAN_BITS, M * N)
                    k = e["kernel"]
                    if k is None:
                        call = precision(e.get("precision", prec)).cublas(self.blas)
                        runs[i] = (lambda call=call, c=c: call(M, N, K, a, b, c))
                        tols[i] = precision(e.get("precision", prec)).tolerance(K, abs_ref)
                    else:
                        launch = lab.launcher(k, M, N, K, e["variant"])
                        runs[i] = (lambda launch=launch, c=c: launch(a, b, c))
                        tols[i] = k.prec.tolerance(K, abs_ref, k.roundoff)
                timings = time_interleaved(runs, self.flusher, budget_s=budget_s)
                for i, e in chunk[1:] if g else chunk:     # a later group's cuBLAS is for its ratios only
                    cuda.memcpy_dtoh(Cout, cs[i])           # the result of its last timed repetition
                    v = checking.compare(Cout, ref, tols[i], label=f"{e.get('label', e['name'])} {M}x{N}x{K}")
                    out.append((e, timings[i], v, timings[0].median_ms))
                for c in cs.values():
                    c.free()
                cs.clear()
        finally:
            a.free(); b.free()
            for c in cs.values():
                c.free()
        return out

    def rows(self, ladder, kernels, n, extra_baselines=(), progress=None, deadline=None, budget_s=1.0):
        """The bench's result rows of one ladder at M = N = K = n: cuBLAS of the ladder's precision,
        the extra baselines, then the kernels (measure() says how they are timed and checked)."""
        prec = self.lab.ladder_precision(ladder)
        peak = prec.peak(self.facts["peaks"])
        entries = [{"name": precision(x).baseline, "kernel": None, "variant": "", "precision": precision(x)}
                   for x in extra_baselines]
        entries += [{"name": k.name, "kernel": k, "variant": k.variant_for(n, n, n)} for k in kernels]
        flops = 2.0 * n ** 3
        out = []
        for e, t, v, cublas_ms in self.measure(prec, entries, n, n, n, progress, deadline, budget_s,
                                               group=6 if deadline is not None else None):
            k, tf = e["kernel"], t.tflops(flops)
            out.append({"ladder": ladder, "kernel": e["name"], "variant": e["variant"], "size": n, **t.as_dict(),
                        "tflops": tf, "pct_of_peak": 100 * tf / peak if peak else None,
                        "pct_of_cublas": 100 * cublas_ms / t.median_ms, "check": str(v), "check_ok": v.ok,
                        **({"params": k.tiling.params} if k is not None and k.tag else {})})
        return out


def bench_stem(lab, ladders):
    """<lab>-bench for a run of every ladder: the record the grader's reference predictions and the
    notebooks read (the newest <lab>-bench_*.json). A run of some ladders (LADDER=fp16) is
    <lab>-bench-<ladders>, so it never stands in for the lab's record."""
    return f"{lab.short}-bench" + ("" if list(ladders) == list(lab.ladders) else f"-{'-'.join(ladders)}")


def bench(lab, args, kernels_by_ladder=None, sizes=None, stem=None, out_dir=None):
    """Time the ladders against cuBLAS of the same precision; the record and charts go to out_dir
    (default: the lab's results/). Where `make tune` recorded a best configuration for this GPU,
    that build is one more row ("v8 (tuned)"), said so in the output."""
    facts = needs_gpu("bench", lab)
    arch = facts["arch"]
    sizes = sizes or ([int(s) for s in args.sizes.split(",")] if getattr(args, "sizes", None)
                      else lab.option("BENCH_SIZES", DEFAULT_SIZES))
    tuned = {}
    if kernels_by_ladder is None:
        wanted = getattr(args, "ladder", None)
        names = list(lab.ladders) if wanted in (None, "", "all", "both") else wanted.split(",")
        stem = stem or bench_stem(lab, names)
        for n in names:
            if n not in lab.ladders:
                raise CourseError(f"{lab.name} has no ladder {n!r}", hint=f"ladders: {', '.join(lab.ladders)}")
        kernels_by_ladder = {n: list(lab.ladders[n]) for n in names}
        for n in names:
            tuned[n] = {size: tuned_kernel(lab, n, facts, size) for size in sizes}
            for size, k in tuned[n].items():
                if k is not None:
                    print(f"{n} {size}^3: also timing {k.name}, the best configuration `make tune` recorded "
                          f"for this GPU (a {shape_class(size)} square)")
    stem = stem or f"{lab.short}-bench"
    runnable = {}
    for ladder, ks in kernels_by_ladder.items():
        keep = []
        for k in ks:
            if lab.build_arch(k, arch) is None:
                print(f"skipping {k.name}: it runs only on {', '.join(k.archs)}, this GPU is {arch}")
            else:
                keep.append(k)
        runnable[ladder] = keep
    report.progress(0, 1, f"building for {arch}")
    lab.build([k for ks in runnable.values() for k in ks] +
              [k for t in tuned.values() for k in t.values() if k is not None], [arch])
    m = Measurer(lab, facts)
    extra = lab.option("EXTRA_BASELINES", {})
    steps = sum(len(sizes) * (len(ks) + 2 + len(extra.get(ld, []))) for ld, ks in runnable.items())
    step = [0]
    results = []
    for ladder, kernels in runnable.items():
        for n in sizes:
            best = tuned.get(ladder, {}).get(n)
            rows_k = kernels + ([best] if best is not None else [])

            def progress(name, ladder=ladder, n=n):
                step[0] += 1
                report.progress(step[0], steps, f"{ladder} {n}^3: {name}")
            rows = m.rows(ladder, rows_k, n, extra.get(ladder, []), progress)
            for r in rows:
                if best is not None and r["kernel"] == best.name:
                    r["kernel"], r["tuned"] = f"{best.base_name} (tuned)", best.name
            results += rows
    failures = [r["check"] for r in results if not r["check_ok"]]
    record = bench_report(lab, results, facts, sizes, list(runnable), m.blas, failures, stem, out_dir or lab.results_dir)
    if failures:
        raise CourseError("some results were wrong after timing:\n  " + "\n  ".join(failures),
                          hint="run `make test` for the kernel that failed")
    return record


def bench_report(lab, results, facts, sizes, ladders, blas, failures, stem, out_dir):
    """Print the tables (common/records.py formats them, for the notebooks too), write the JSON
    record and the charts."""
    from . import records
    from .plots import ladder_chart
    info = report.run_info(lab.dir)
    day = datetime.date.today().isoformat()
    record = {"what": stem, "lab": lab.name, "gpu": facts, "run": info, "sizes": sizes,
              "ladders": {ld: ladder_info(lab, ld, facts) for ld in ladders},
              "cublas": {"library": blas.path, "version": blas.version},
              "timing": "CUDA events, interleaved: each repetition runs cuBLAS and every kernel once in a random "
                        "order, L2 flushed before each; 2 warm-up rounds, median of 10-50 repetitions",
              "results": results, "failures": failures}
    print(f"\nGPU: {facts['name']} ({facts['arch']}), {facts['sms']} SMs, max {facts['sm_clock_max_mhz']:.0f} MHz, "
          f"driver {facts.get('driver', '?')}; commit {info['commit'][:10]}{' (uncommitted changes)' if info['dirty_tree'] else ''}")
    for ladder in ladders:
        print("\n" + records.ladder_table(record, ladder))
    for a, b in lab.option("BASELINE_RATIOS", []):
        if a in ladders and b in ladders:
            ratios = "  ".join(f"{n}³: {records.result(record, a, BASELINE, n)['tflops'] / records.result(record, b, BASELINE, n)['tflops']:.1f}x"
                               for n in sizes)
            print(f"\n{lab.ladder_precision(a).baseline} / {lab.ladder_precision(b).baseline} "
                  f"(what the narrower inputs are worth): {ratios}")
    print("\n" + records.comparisons_table(record, lab=lab))
    base = Path(out_dir) / f"{stem}_{_slug(facts['name'])}_{day}_{info['commit'][:7]}"
    path = report.write_json(base.with_suffix(".json"), record)
    charts = []
    for ladder in ladders:
        series, ns = records.series(record, ladder)
        peak = record["ladders"][ladder]["peak_tflops"]
        charts.append(ladder_chart(series, ns, f"{base}_{ladder}.png", baseline=BASELINE,
                                   title=f"{lab.title.split(':')[0]}, {ladder} ladder on {facts['name']} ({day})",
                                   ceiling=("peak", peak) if peak else None))
    print(f"full data: {_shown(lab, path)}; charts: {', '.join(_shown(lab, c) for c in charts)}")
    return record


# --- make tune ------------------------------------------------------------------------------

@dataclass(frozen=True)
class Tuning:
    """What `make tune` searches for one ladder (a lab's TUNING = {ladder: Tuning(...)}).
    kernel      the row whose parameters are searched ("v8")
    candidates  parameter dicts ({} = the file's defaults, the taught configuration), or a callable
                returning them
    illegal     params -> None, or why the configuration breaks the kernel's static_asserts: checked
                before anything is compiled (common.legality.Legality asks the compiler, all at once)
    sizes       the squares it is timed at; the best per size class is recorded (of a class timed at
                two sizes, the first size's best)"""
    kernel: str
    candidates: object
    illegal: Optional[Callable] = None
    sizes: tuple = (4096,)

    def configs(self):
        c = self.candidates() if callable(self.candidates) else self.candidates
        return [dict(p) for p in c]


def shape_class(n):
    """The size class a square's best configuration is recorded under."""
    return "small" if n < 1536 else ("medium" if n < 3072 else "large")


def tuned_path(lab, facts):
    return lab.results_dir / f"{lab.short}-tuned_{_slug(facts['name'])}.json"


def tuned_kernel(lab, ladder, facts, size=4096):
    """The best configuration `make tune` recorded for this GPU, ladder and size class, as a row, or None."""
    best = (_read_json(tuned_path(lab, facts)).get("best") or {}).get(ladder, {}).get(shape_class(size))
    return _tuned_row(lab, best)


def _tuned_row(lab, best):
    """A recorded best ({kernel, params, ...}) as a row of the lab's table, or None (no parameters: the
    defaults won; a kernel or parameter the table no longer has)."""
    if not best or not best.get("params"):
        return None
    base = lab.kernels.get(best.get("kernel"))
    if base is None:
        return None
    try:
        return base.with_params(**best["params"])
    except CourseError:
        return None


TUNED = ":tuned"            # NAME:tuned, for the profilers: the build `make tune` recorded for this GPU


def tuned_builds(lab, arch):
    """{name: (row, note)}: each distinct build `make tune` recorded in results/ for a GPU of `arch`,
    noted with the GPUs and size classes it won ("tuned: NVIDIA H200 large"). No GPU needed."""
    found = {}
    for path in sorted(lab.results_dir.glob(f"{lab.short}-tuned_*.json")):
        record = _read_json(path)
        if record.get("arch") != arch:
            continue
        for classes in (record.get("best") or {}).values():
            for cls, best in classes.items():
                k = _tuned_row(lab, best)
                if k is not None:
                    found.setdefault(k.name, (k, []))[1].append(f"{record.get('gpu', path.stem)} {cls}")
    return {name: (k, "tuned: " + ", ".join(where)) for name, (k, where) in found.items()}


def tuned_named(lab, name, facts, size):
    """The row NAME:tuned stands for on this GPU at size^3 (make tune's record for NAME's ladder and the
    size class), or a CourseError that says what to run."""
    base = lab.kernel(name[:-len(TUNED)])
    ladder = lab.ladder_of(base)
    k = tuned_kernel(lab, ladder, facts, size) if ladder else None
    if k is None or k.base_name != base.name:
        raise CourseError(f"`make tune` recorded no configuration of {base.name} for {facts['name']} "
                          f"at {size}^3 ({shape_class(size)} squares)",
                          hint=f"run `make tune` on this GPU first, or profile {base.name} itself")
    return k


def _read_json(path):
    import json
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


def merge_tuned(recorded, best):
    """The tuned record after a run: the classes this run timed take its best, the others keep what
    an earlier run recorded (`make tune SIZE=4096` must not forget the 2048^3 winner)."""
    merged = {ladder: dict(classes) for ladder, classes in (recorded.get("best") or {}).items()}
    for ladder, classes in best.items():
        merged.setdefault(ladder, {}).update(classes)
    return merged


def _as_tuning(spec):
    return spec if isinstance(spec, Tuning) else Tuning(spec[0], spec[1])


def tune_candidates(lab, ladder, spec, arch, jobs=None):
    """(kept rows, rejected [(name, why)]): illegal configurations are refused before compiling,
    the rest compiled in parallel, and any that spills or fails to compile is rejected."""
    from concurrent.futures import ThreadPoolExecutor
    import os
    base = lab.kernel(spec.kernel)
    rows, rejected = [], []
    configs = spec.configs()
    if hasattr(spec.illegal, "check"):     # common.legality.Legality: one compile for the whole batch
        spec.illegal.check([p for p in configs if p])
    for p in configs:
        why = spec.illegal(p) if spec.illegal and p else None
        k = base.with_params(**p) if p else base
        if why:
            rejected.append((k.name, f"illegal: {why}"))
        else:
            rows.append(k)
    build_arch = lab.build_arch(base, arch)

    def compile_one(k):
        try:
            res = lab.build([k], [arch], jobs=1)[(k.name, build_arch)]
        except CourseError as e:
            return k, f"did not compile: {e.message.splitlines()[-1][:160]}"
        spilled = [e for e, r in res.items() if r["spill_stores"] or r["spill_loads"] or r["stack"]]
        return k, (f"spills in {', '.join(spilled)}" if spilled else None)

    from .lab import check_shared_memory
    kept, done = [], 0
    with ThreadPoolExecutor(max_workers=jobs or os.cpu_count() or 2) as pool:
        for k, why in pool.map(compile_one, rows):
            done += 1
            report.progress(done, len(rows), f"{ladder}: compiled {k.name}")
            if not why:
                try:
                    check_shared_memory(k)
                except CourseError as e:
                    why = e.message
            if why:
                rejected.append((k.name, why))
            else:
                kept.append(k)
    return kept, rejected


def tune(lab, args):
    """Search each ladder's TUNING space on this GPU: refuse illegal configurations before compiling,
    compile the rest in parallel, reject spills, time the survivors against cuBLAS in the same run
    (with --budget seconds, stop timing when it is spent), record every result, and the best per
    ladder and size class for this GPU (`make bench` then times it too)."""
    import time
    facts = needs_gpu("tune", lab)
    arch = facts["arch"]
    tuning = lab.option("TUNING", {})
    if not tuning:
        raise CourseError(f"{lab.name} has nothing to tune", hint="its table (lab.py) has no TUNING")
    wanted = getattr(args, "ladder", None)
    if wanted:
        names = [w.strip() for w in wanted.split(",") if w.strip()]
        unknown = [w for w in names if w not in tuning]
        if unknown:
            raise CourseError(f"{lab.name} tunes no ladder {', '.join(unknown)}",
                              hint=f"LADDER= one of {', '.join(tuning)} (or leave it out for all)")
        tuning = {ld: spec for ld, spec in tuning.items() if ld in names}
    budget = getattr(args, "budget", None)
    deadline = time.monotonic() + budget if budget else None
    m = Measurer(lab, facts)
    results, rejected_all, best = [], {}, {}
    for ladder, spec in tuning.items():
        spec = _as_tuning(spec)
        kept, rejected = tune_candidates(lab, ladder, spec, arch)
        rejected_all[ladder] = rejected
        print(f"{ladder}: {len(kept)} configurations of {spec.kernel} to time, {len(rejected)} refused"
              + "".join(f"\n  refused {n}: {why}" for n, why in rejected))
        sizes = [args.size] if getattr(args, "size", None) else list(spec.sizes)
        for n in sizes:
            count = [0]

            def progress(name, n=n, ladder=ladder):
                count[0] += 1
                report.progress(count[0], len(kept) + 1, f"tune {ladder} {n}^3: {name}")
            rows = m.rows(ladder, kept, n, progress=progress, deadline=deadline, budget_s=0.3)
            results += rows
            ok = [r for r in rows if r["kernel"] != BASELINE and r["check_ok"]]
            if ok:
                top = max(ok, key=lambda r: r["tflops"])
                k = next(k for k in kept if k.name == top["kernel"])
                # a class timed at two sizes (4096^3 and 8192^3 are both "large") keeps the first
                # size's winner: the sizes come in the order the lab's Tuning lists them
                best.setdefault(ladder, {}).setdefault(shape_class(n), {
                    "kernel": k.base_name, "params": k.defines, "tflops": top["tflops"],
                    "pct_of_cublas": top["pct_of_cublas"], "size": n})
                shown = sorted(ok, key=lambda r: -r["tflops"])[:8]
                base_row = next(r for r in rows if r["kernel"] == BASELINE)
                print(report.table([base_row] + shown, [("kernel", "configuration", ""), ("tflops", "TFLOP/s", ".1f"),
                                                        ("pct_of_cublas", "% cuBLAS", ".1f"),
                                                        ("spread_pct", "spread %", ".1f"), ("check", "check", "")],
                                   title=f"\n{ladder} at {n}^3: the best {len(shown)} of {len(ok)} "
                                         f"({lab.ladder_precision(ladder).cublas_mode})"))
            bad = [r["check"] for r in rows if not r["check_ok"]]
            for line in bad:
                print(f"  WRONG RESULT: {line}")
    failures = [r["check"] for r in results if not r["check_ok"]]
    stem = f"{lab.short}-tune"
    info = report.run_info(lab.dir)
    base = lab.results_dir / f"{stem}_{_slug(facts['name'])}_{datetime.date.today().isoformat()}_{info['commit'][:7]}"
    path = report.write_json(base.with_suffix(".json"), {
        "what": stem, "lab": lab.name, "gpu": facts, "run": info, "results": results, "failures": failures,
        "refused": rejected_all, "best": best, "budget_s": budget,
        "ladders": {ld: ladder_info(lab, ld, facts) for ld in tuning}})
    for classes in best.values():
        for b in classes.values():
            b["from"] = _shown(lab, path)
    record = merge_tuned(_read_json(tuned_path(lab, facts)), best)
    tuned = report.write_json(tuned_path(lab, facts), {"gpu": facts["name"], "arch": arch, "run": info,
                                                        "best": record, "from": _shown(lab, path)})
    for ladder, classes in best.items():
        for cls, b in classes.items():
            print(f"best {ladder} ({cls} squares, timed at {b['size']}^3): {b['kernel']} {b['params'] or '(the default)'}: "
                  f"{b['tflops']:.1f} TFLOP/s, {b['pct_of_cublas']:.1f} % of cuBLAS")
    print(f"full data: {_shown(lab, path)}; the best, for `make bench` on this GPU: {_shown(lab, tuned)}")
    return best


# --- make selfcheck --------------------------------------------------------------------------

def selfcheck(lab, args):
    bad = 0
    for k in lab.own():
        for v, (M, N, K) in k.cases(lab.option("SELFCHECK_SHAPES", SELFCHECK_SHAPES)):
            verdict = lab.check(k, M, N, K, variant=v)
            bad += not verdict.ok
            print(verdict)
    if bad:
        raise CourseError(f"{bad} check(s) failed")
