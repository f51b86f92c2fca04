"""`make compare`: a kernel beside other builds of itself, in rounds, against cuBLAS in the same run.

    make compare KERNEL=c6 BUILDS='GROUP=16;GROUP=4,STAGES=4' [SIZES=4096,8192] [ROUNDS=3]
    make compare KERNEL=wgmma_decode BUILDS='KSPLIT=1' SIZES=64x8192x8192,64x4096x4096
    (python -m common compare --lab <lab> --kernel c6 --builds ... --sizes ... --rounds ...)

SIZES are squares (4096) or M x N x K shapes (64x8192x8192), a comma list.

BUILDS is a ';'-separated list of builds, each a ','-separated list of the kernel's tunable parameters
(the #ifndef defaults of its .cu file): the kernel is rebuilt with each. Every round times cuBLAS of the
kernel's precision, the kernel and each build interleaved (common/timing.py: L2 flushed, median), and
checks every result against the float64 reference after its timing: a build that computes wrongly is
reported, not timed past. A change worth less than cuBLAS's own spread between runs shows only over
several rounds, so the table gives each build's median and range of % of cuBLAS across rounds, and the
rounds in which it was ahead.

This is how an idea is tried before it becomes a kernel's default: its results file names the commit,
and the builds can be timed again from it. Writes results/<lab>-<kernel>-compare_<gpu>_<date>_<commit>.json
(-2, -3, ... for another comparison the same day at the same commit: no file is overwritten).
Needs a GPU.
"""
import datetime
from dataclasses import replace

from . import report
from .errors import CourseError


def parse_builds(text):
    """'A=1;B=2,C=3' -> [{'A': '1'}, {'B': '2', 'C': '3'}]; a CourseError for anything else."""
    builds = []
    for part in (text or "").split(";"):
        part = part.strip()
        if not part:
            continue
        params = {}
        for item in part.split(","):
            name, eq, value = item.strip().partition("=")
            if not eq or not name.strip().isidentifier() or not value.strip():
                raise CourseError(f"BUILDS: cannot read {item.strip()!r} in {part!r}",
                                  hint="write NAME=value, several joined by ',', builds separated by ';' "
                                       "(BUILDS='GROUP=16;GROUP=4,STAGES=4')")
            params[name.strip()] = value.strip()
        builds.append(params)
    if not builds:
        raise CourseError("make compare needs BUILDS: the parameter sets to time beside the kernel",
                          hint="e.g. make compare KERNEL=c6 BUILDS='GROUP=16'")
    return builds


def parse_shapes(text):
    """'4096,64x8192x8192' -> [(4096, 4096, 4096), (64, 8192, 8192)]; a CourseError for anything else."""
    out = []
    for item in (text or "4096").split(","):
        parts = item.strip().lower().split("x")
        if len(parts) not in (1, 3) or not all(p.isdigit() and int(p) > 0 for p in parts):
            raise CourseError(f"SIZES: cannot read {item.strip()!r}",
                              hint="a square's side (4096) or M x N x K (64x8192x8192), a comma list")
        dims = [int(p) for p in parts]
        out.append(tuple(dims * 3 if len(dims) == 1 else dims))
    return out


def summary(rows, names):
    """Per build: the median TFLOP/s of its rounds; the median, lowest and highest % of cuBLAS; and in how
    many rounds it was faster than cuBLAS (each round's ratio is to cuBLAS timed in that round)."""
    out = []
    for name in names:
        mine = [r for r in rows if r["kernel"] == name]
        for size in list(dict.fromkeys(r["size"] for r in mine)):
            at = [r for r in mine if r["size"] == size]
            tf = sorted(r["tflops"] for r in at)
            pct = sorted(r["pct_of_cublas"] for r in at)
            mid = len(pct) // 2
            out.append({"build": name, "size": size, "rounds": len(at), "tflops": tf[mid],
                        "pct_median": pct[mid] if len(pct) % 2 else (pct[mid - 1] + pct[mid]) / 2,
                        "pct_min": pct[0], "pct_max": pct[-1], "rounds_ahead": sum(p > 100.0 for p in pct),
                        "check": "PASS" if all(r["check_ok"] for r in at) else "FAIL"})
    return out


def table_row(lab, name):
    """A kernel of the lab's ladders, or another row its table names (a dispatcher's build, say)."""
    from .kernels import Kernel
    if name in lab.kernels:
        return lab.bind(lab.kernel(name))
    rows = {}
    for value in vars(lab.table).values():
        if isinstance(value, Kernel):
            rows.setdefault(value.base_name, value)
    if name not in rows:
        raise CourseError(f"{lab.name} has no kernel {name!r}",
                          hint="one of: " + ", ".join(list(lab.kernels) + [n for n in rows if n not in lab.kernels]))
    k = lab.bind(rows[name])
    return replace(k, name=k.base_name, defines={}, tag="") if k.tag else k    # the file's defaults


def compare(lab, args):
    from .measure import BASELINE, Measurer, needs_gpu, slug
    # the arguments first: a wrong KERNEL, BUILDS, SIZES or ROUNDS is told so here, with or without a GPU
    if not args.kernel:
        raise CourseError("make compare needs KERNEL=name", hint="one of: " + ", ".join(k.name for k in lab.all_kernels))
    base = table_row(lab, args.kernel)
    builds = [base] + [base.with_params(**p) for p in parse_builds(args.builds)]
    shapes = parse_shapes(args.sizes)
    rounds = 3 if args.rounds is None else args.rounds
    if rounds < 1:
        raise CourseError(f"ROUNDS={rounds}: a comparison needs at least one round", hint="ROUNDS=3 is the default")
    prec = lab.ladder_precision(lab.ladder_of(base)) if lab.ladder_of(base) else base.prec
    for M, N, K in shapes:
        refused = [why for k in builds for why in [k.refusal(M, N, K)] if why]
        if refused:
            raise CourseError(refused[0], hint="choose SIZES the kernel serves")
    facts = needs_gpu("compare", lab)
    lab.build(builds, [facts["arch"]])
    m = Measurer(lab, facts)
    rows = []
    for M, N, K in shapes:
        size = f"{M}x{N}x{K}" if not M == N == K else M
        for r in range(rounds):
            report.progress(r + 1, rounds, f"{M} x {N} x {K}, round {r + 1} of {rounds}")
            entries = [{"name": k.name, "kernel": k, "variant": k.variant_for(M, N, K)} for k in builds]
            for e, t, v, cublas_ms in m.measure(prec, entries, M, N, K):
                rows.append({"kernel": e["name"], "variant": e["variant"], "size": size, "round": r,
                             **t.as_dict(), "tflops": t.tflops(2.0 * M * N * K),
                             "pct_of_cublas": 100 * cublas_ms / t.median_ms, "check": str(v), "check_ok": v.ok})
    names = [BASELINE] + [k.name for k in builds]
    table = summary(rows, names)
    print(report.table(table, [("build", "build", None), ("size", "size", None), ("rounds", "rounds", None),
                               ("tflops", "TFLOP/s", ".1f"), ("pct_median", "% cuBLAS median", ".1f"),
                               ("pct_min", "min", ".1f"), ("pct_max", "max", ".1f"),
                               ("rounds_ahead", "rounds ahead", "d"), ("check", "check", None)],
                       title=f"{base.name} and its builds on {facts['name']}, interleaved with cuBLAS, {rounds} rounds"))
    info = report.run_info(lab.dir)
    stem = (f"{lab.short}-{base.name}-compare_{slug(facts['name'])}_"
            f"{datetime.date.today().isoformat()}_{info['commit'][:7]}")
    path, n = lab.results_dir / f"{stem}.json", 1
    while path.exists():                      # a second comparison the same day at the same commit
        n += 1
        path = lab.results_dir / f"{stem}-{n}.json"
    report.write_json(path, {"what": f"{lab.short}-{base.name}-compare", "gpu": facts, "run": info,
                             "builds": {k.name: k.defines for k in builds}, "shapes": shapes, "rounds": rounds,
                             "table": table, "rows": rows})
    print(f"\nfull data: {path.relative_to(lab.dir)}")
