"""The Make targets every lab has: build, bench, sass, tune, selfcheck. Each takes a Lab, prints a
short aligned table and writes its full data to a file (reports/ for build and sass, results/ for
timings). `python -m common <target> --lab labs/<lab>` runs one (common/__main__.py). How they
measure (the GPU check, Measurer, the tuner's machinery and its record) is common/measure.py.

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
    help       the lab's own lines of `make help`: its kernels, graded parts and what its ncu tables profile
"""
import datetime
import os
from pathlib import Path

from . import build as nvbuild
from . import register_banks, report, sass as sassmod
from .errors import CourseError
from .kernels import skipped_on
from .measure import (BASELINE, Measurer, as_tuning, ladder_info, merge_tuned, needs_gpu, read_json, shape_class,
                      slug, source_sha, stale_tuned, tune_candidates, tuned_builds, tuned_kernel, tuned_path)

DEFAULT_SIZES = [1024, 2048, 4096]
SELFCHECK_SHAPES = [(1, 1, 8), (17, 33, 16), (130, 260, 104), (257, 129, 512), (300, 200, 8), (96, 385, 1000)]


def _shown(lab, path):
    try:
        return str(Path(path).relative_to(lab.dir))
    except ValueError:
        return str(path)


# --- make help -------------------------------------------------------------------------------

def lab_help(lab):
    """The lab's own lines of `make help`, above mk/lab.mk's text (which is the same for every lab):
    the names its targets take (KERNEL=, PARTS=) and what its ncu-table and ncu-tensor profile."""
    from .grading.spec import Grading, has_grading
    from .profiling import ncu_table_names, ncu_tensor_names
    print(lab.title)
    print(f"  kernels (KERNEL=, KERNELS=): {', '.join(k.name for k in lab.own())}")
    print("  graded parts (PARTS=): " + (", ".join(p.name for p in Grading(lab).parts) if has_grading(lab)
                                         else "none, this lab has no graded exercises"))
    for target, names in (("ncu-table", ncu_table_names(lab)), ("ncu-tensor", ncu_tensor_names(lab))):
        print(f"  {target} profiles: {', '.join(names) or 'nothing in this lab'}")
    print()


# --- make build ------------------------------------------------------------------------------

def build_rows(lab, archs, kernels=None, progress=None):
    kernels = kernels or lab.all_kernels
    res = lab.build(kernels, archs, progress=progress)
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
                             "dynamic_smem": k.shared_bytes, "flag": "SPILLS!" if spilled else "",
                             "note": k.arch_note(a)})
    return rows


def build(lab, args):
    asked = getattr(args, "arch", None)
    archs = nvbuild.resolve_archs(asked)
    if not asked and len(archs) > 1 and lab.option("ARCHS_WITHOUT_GPU"):
        # no GPU here, no ARCH: a lab whose kernels compile slowly names the architectures its default
        # build takes (its tests may compile the others); ARCH=all still builds every one
        archs = list(lab.option("ARCHS_WITHOUT_GPU"))
        print(f"(no GPU here: building {lab.name} for {', '.join(archs)} only, as its table asks; ARCH=all builds every one)")
    kernels = lab.all_kernels
    report.progress(0, 1, f"compiling {len(kernels)} kernels of {lab.name} for {', '.join(archs)}")
    # each (kernel, arch) as it is done, on a terminal: CuTe's rungs take half a minute each
    rows = build_rows(lab, archs, kernels, progress=lambda i, n, what: report.progress(i, n + 1, what, transient=True))
    report.progress(1, 1, "compiled")
    cols = [("kernel", "kernel", ""), ("arch", "arch", ""), ("registers", "regs", "d"),
            ("spill_stores", "spill st B", "d"), ("spill_loads", "spill ld B", "d"),
            ("smem", "static smem B", "d"), ("dynamic_smem", "dynamic smem B", "d"), ("stack", "stack B", "d"),
            ("flag", "", "")] + ([("note", "note", "")] if any(r["note"] for r in rows) else [])
    print(report.table(rows, cols, title=f"{lab.title}: registers, spills, shared memory (-Xptxas -v)"))
    for line in skipped_on(kernels, archs):
        print(f"not built for {line}")
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
        text = sassmod.disassemble(lab.cubin(k, arch))
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
                elif (note := stale_tuned(lab, n, facts, size)):
                    print(note)
    stem = stem or f"{lab.short}-bench"
    runnable = {}
    for ladder, ks in kernels_by_ladder.items():
        keep = []
        for k in ks:
            if lab.build_arch(k, arch) is None:
                print(f"skipping {k.name} on this GPU ({arch}): {k.unsupported(arch)[len(k.name) + 1:]}")
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
            notes = {k.name: k.arch_note(arch) for k in rows_k if k.arch_note(arch)}
            for r in rows:
                if notes:       # what a kernel loses on this GPU though it runs (the table's note column)
                    r["note"] = notes.get(r["kernel"], "")
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
    base = Path(out_dir) / f"{stem}_{slug(facts['name'])}_{day}_{info['commit'][:7]}"
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
    cannot = {ld: lab.kernel(as_tuning(spec).kernel).unsupported(arch) for ld, spec in tuning.items()}
    if all(cannot.values()):
        raise CourseError(f"nothing {lab.name} tunes runs on this GPU ({facts['name']}, {arch}): "
                          + "; ".join(cannot.values()),
                          hint="run `make tune` on a GPU the kernel is written for; `make bench` here times the rungs that run")
    for ld, why in cannot.items():
        if why:
            print(f"{ld}: not tuned on this GPU: {why}")
    tuning = {ld: spec for ld, spec in tuning.items() if not cannot[ld]}
    budget = getattr(args, "budget", None)
    deadline = time.monotonic() + budget if budget else None
    m = Measurer(lab, facts)
    results, rejected_all, best = [], {}, {}
    for ladder, spec in tuning.items():
        spec = as_tuning(spec)
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
                    "pct_of_cublas": top["pct_of_cublas"], "size": n,
                    "source_sha": source_sha(lab.kernel(k.base_name))})
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
    base = lab.results_dir / f"{stem}_{slug(facts['name'])}_{datetime.date.today().isoformat()}_{info['commit'][:7]}"
    path = report.write_json(base.with_suffix(".json"), {
        "what": stem, "lab": lab.name, "gpu": facts, "run": info, "results": results, "failures": failures,
        "refused": rejected_all, "best": best, "budget_s": budget,
        "ladders": {ld: ladder_info(lab, ld, facts) for ld in tuning}})
    for classes in best.values():
        for b in classes.values():
            b["from"] = _shown(lab, path)
    record = merge_tuned(read_json(tuned_path(lab, facts)), best)
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
