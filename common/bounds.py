"""`make bounds`: what bounds a kernel, measured by taking parts of its work away.

    make bounds KERNEL=t4 [SIZE=4096] [BK=32,64]     (python -m common bounds --lab <lab> --kernel t4)

A lab declares the kernels that have such builds in its table:

    BOUNDS = {"t4": Bounds("T4_PROBE", {1: "no copies after the prologue", 2: "no mma.sync"},
                           ladder="fp16", bk=(32, 64))}

The kernel's .cu file reads the switch (-DT4_PROBE=n, 0 = the kernel itself) and leaves out what the
probe's name says. Every build is timed like `make bench` (interleaved with cuBLAS of the ladder's
precision, L2 flushed, median), so their ratios are of one run. The probe builds compute wrong results
by design: the table says WRONG (by design), and only their times mean something. What to read:

    no copies   what the rest (shared loads + math) reaches with the same warps: the ceiling of the
                structure, whatever the copies do
    no math     how fast the copies, barriers and shared loads move the tiles with nothing to wait for
    the kernel against "no copies": what feeding the tiles costs (issue slots, the shared-memory port
                the copies write through, the waits)

Writes results/<lab>-<kernel>-bounds_<gpu>_<date>_<commit>.json. Needs a GPU.
"""
import datetime
from dataclasses import dataclass

from . import report
from .errors import CourseError


@dataclass(frozen=True)
class Bounds:
    """One kernel's probe builds: `switch` is the -D macro its .cu reads, `probes` {n: what build n leaves
    out} (n >= 1; 0 is the kernel), `ladder` the ladder whose cuBLAS it is timed against, `bk` the BK
    values each build is made with by default (() = the file's own)."""
    switch: str
    probes: dict
    ladder: str
    bk: tuple = ()


def _table(lab):
    table = lab.option("BOUNDS", {})
    if not table:
        raise CourseError(f"{lab.name} has no bounds builds",
                          hint="labs with them: " + (", ".join(_labs_with_bounds()) or "none"))
    return table


def _labs_with_bounds():
    from .lab import all_lab_dirs, load
    return [d.name for d in all_lab_dirs() if load(d).option("BOUNDS")]


def builds(lab, name, bk=None):
    """[(bk, probe, row)]: the kernel and each of its probe builds, for each BK (None: the file's own)."""
    table = _table(lab)
    if name is None:
        name = next(iter(table))
    if name not in table:
        raise CourseError(f"{lab.name}'s make bounds knows no kernel {name!r}",
                          hint="KERNEL=" + " or KERNEL=".join(table))
    spec = table[name]
    base = lab.bind(lab.kernel(name))
    bks = [int(b) for b in bk.split(",")] if bk else list(spec.bk) or [None]
    out = []
    for b in bks:
        for probe in (0, *sorted(spec.probes)):
            p = {k: v for k, v in (("BK", b), (spec.switch, probe))
                 if v is not None and (not base.tiling.has(k) or v != base.tiling.value(k))}
            out.append((b, probe, base.with_params(**p) if p else base))
    return spec, out


def bounds(lab, args):
    from .measure import Measurer, needs_gpu, slug
    spec, rows_to_time = builds(lab, args.kernel, getattr(args, "bk", None))   # a wrong KERNEL or BK first
    facts = needs_gpu("bounds", lab)
    name = rows_to_time[0][2].base_name
    size = args.size or 4096
    lab.build([k for _, _, k in rows_to_time], [facts["arch"]])
    rows = Measurer(lab, facts).rows(spec.ladder, [k for _, _, k in rows_to_time], size)
    by_name = {r["kernel"]: r for r in rows}
    what = {0: "the kernel", **spec.probes}
    table = [{"bk": b if b is not None else (k.tiling.value("BK") if k.tiling.has("BK") else ""),
              "build": what[p], "tflops": by_name[k.name]["tflops"],
              "pct_of_cublas": by_name[k.name]["pct_of_cublas"],
              "result": "correct" if by_name[k.name]["check_ok"] else ("WRONG (by design)" if p else "WRONG")}
             for b, p, k in rows_to_time]
    cublas = by_name.get("cuBLAS", {})
    print(report.table(table, [("bk", "BK", None), ("build", "build", None), ("tflops", "TFLOP/s", ".1f"),
                               ("pct_of_cublas", "% of cuBLAS", ".1f"), ("result", "result", None)],
                       title=f"{name} at {size}^3 on {facts['name']}: cuBLAS "
                             f"{cublas.get('tflops', float('nan')):.1f} TFLOP/s in the same run"))
    info = report.run_info(lab.dir)
    path = lab.results_dir / (f"{lab.short}-{name}-bounds_{slug(facts['name'])}_"
                              f"{datetime.date.today().isoformat()}_{info['commit'][:7]}.json")
    report.write_json(path, {"what": f"{lab.short}-{name}-bounds", "gpu": facts, "run": info, "size": size,
                             "switch": spec.switch, "probes": what, "table": table, "rows": rows})
    print(f"\nfull data: {path.relative_to(lab.dir)}")
