"""`make compare`: a kernel beside other builds of itself, in rounds, against cuBLAS in the same run.

    make compare KERNEL=c6 BUILDS='GROUP=16;GROUP=4,STAGES=4' [SIZES=4096,8192] [ROUNDS=3]
    (python -m common compare --lab <lab> --kernel c6 --builds ... --sizes ... --rounds ...)

BUILDS is a ';'-separated list of builds, each a ','-separated list of the kernel's tunable parameters
(the #ifndef defaults of its .cu file): the kernel is rebuilt with each. Every round times cuBLAS of the
kernel's precision, the kernel and each build interleaved (common/timing.py: L2 flushed, median), and
checks every result against the float64 reference after its timing: a build that computes wrongly is
reported, not timed past. A change worth less than cuBLAS's own spread between runs shows only over
several rounds, so the table gives each build's range of % of cuBLAS across rounds.

This is how an idea is tried before it becomes a kernel's default: its results file names the commit,
and the builds can be timed again from it. Writes results/<lab>-<kernel>-compare_<gpu>_<date>_<commit>.json.
Needs a GPU.
"""
import datetime

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


def summary(rows, names):
    """Per build: the median TFLOP/s of its rounds, and the lowest and highest % of cuBLAS."""
    out = []
    for name in names:
        mine = [r for r in rows if r["kernel"] == name]
        for size in sorted({r["size"] for r in mine}):
            at = [r for r in mine if r["size"] == size]
            tf = sorted(r["tflops"] for r in at)
            pct = [r["pct_of_cublas"] for r in at]
            out.append({"build": name, "size": size, "rounds": len(at), "tflops": tf[len(tf) // 2],
                        "pct_min": min(pct), "pct_max": max(pct),
                        "check": "PASS" if all(r["check_ok"] for r in at) else "FAIL"})
    return out


def compare(lab, args):
    from .targets import BASELINE, Measurer, needs_gpu, _slug
    facts = needs_gpu("compare", lab)
    if not args.kernel:
        raise CourseError("make compare needs KERNEL=name", hint="one of: " + ", ".join(k.name for k in lab.all_kernels))
    base = lab.bind(lab.kernel(args.kernel))
    builds = [base] + [base.with_params(**p) for p in parse_builds(args.builds)]
    sizes = [int(s) for s in args.sizes.split(",")] if args.sizes else [4096]
    rounds = args.rounds or 3
    ladder = lab.ladder_of(base)
    lab.build(builds, [facts["arch"]])
    m = Measurer(lab, facts)
    rows = []
    for size in sizes:
        for r in range(rounds):
            report.progress(r + 1, rounds, f"{size}^3, round {r + 1} of {rounds}")
            for row in m.rows(ladder, builds, size):
                rows.append({**row, "round": r})
    names = [BASELINE] + [k.name for k in builds]
    table = summary(rows, names)
    print(report.table(table, [("build", "build", None), ("size", "size", None), ("rounds", "rounds", None),
                               ("tflops", "TFLOP/s", ".1f"), ("pct_min", "% cuBLAS min", ".1f"),
                               ("pct_max", "% cuBLAS max", ".1f"), ("check", "check", None)],
                       title=f"{base.name} and its builds on {facts['name']}, interleaved with cuBLAS, {rounds} rounds"))
    info = report.run_info(lab.dir)
    path = lab.results_dir / (f"{lab.short}-{base.name}-compare_{_slug(facts['name'])}_"
                              f"{datetime.date.today().isoformat()}_{info['commit'][:7]}.json")
    report.write_json(path, {"what": f"{lab.short}-{base.name}-compare", "gpu": facts, "run": info,
                             "builds": {k.name: k.defines for k in builds}, "sizes": sizes, "rounds": rounds,
                             "table": table, "rows": rows})
    print(f"\nfull data: {path.relative_to(lab.dir)}")
