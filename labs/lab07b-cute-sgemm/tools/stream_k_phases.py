"""Where c6's time goes: its two launches timed apart, beside cuBLAS and the whole c6, on a GPU.

    .venv/bin/python labs/lab07b-cute-sgemm/tools/stream_k_phases.py [SIZE ...]      (default 4096)

(from the project's root, with the course's .venv: its .pth makes `common` importable)

c6 with SPLIT_LAUNCH runs a shape that divides its tile as two launches (launch.py): the whole tiles
(cute_sgemm_c6_tiles, dp_tiles blocks), then the workers, who share the last wave's tiles (c6's vec entry
with SPLIT_LAUNCH = 1, cute_sgemm_c6_workers with 2). This times, interleaved and with L2 flushed
(common/timing.py):

    cuBLAS                 cuBLAS SGEMM of the same shape
    c6 [split 1], [2]      both launches, as `make bench` runs them
    tiles                  the first launch alone
    workers [1], [2]       the second launch alone, each form (its output is not a GEMM's: the whole
                           tiles are not computed; the hand-over between workers runs as always)

and works out what the workers would take at the tiles launch's pace (its ms per wave of resident
blocks, times the waves the shared tiles make),
    ideal workers = tiles ms x shared tiles / dp_tiles,
so that "workers / ideal" is what the stream-K tail costs beyond its share of the work (its extra
segments, the hand-over, its own loop, the launch). Writes results/lab07b-c6-phases_<gpu>_<date>_<commit>.json.
"""
import datetime
import math
import sys

import numpy as np

from common import report
from common.errors import CourseError, user_errors
from common.lab import load


def phases(lab, n):
    import pycuda.driver as cuda
    from common.cublas import Cublas
    from common.device import gpu_facts
    from common.precision import precision
    from common.timing import L2Flusher, time_interleaved
    import importlib
    launch = importlib.import_module(f"{lab.package}.launch")
    facts = gpu_facts()
    builds = {s: lab.kernel("c6").with_params(SPLIT_LAUNCH=s) for s in (1, 2)}
    lab.build(list(builds.values()), [facts["arch"]])
    rng = np.random.default_rng(5)
    A, B = lab.random_inputs(builds[1], n, n, n, rng)
    a, b = cuda.to_device(A), cuda.to_device(B)
    c = cuda.mem_alloc(n * n * 4)
    blas = Cublas()
    prec = precision("fp32")
    runs = {"cuBLAS": lambda: prec.cublas(blas)(n, n, n, a, b, c)}
    plans = {}
    for s, k in builds.items():
        full = lab.launcher(k, n, n, n, "vec", alpha=1.0, beta=0.0)
        full(a, b, c)                                   # makes the plan
        runs[f"c6 [split {s}]"] = (lambda full=full: full(a, b, c))
        plans[s] = [p for (_, *mnk), p in launch._plans.items() if tuple(mnk) == (n, n, n)][-1]
    p1, p2 = plans[1], plans[2]
    if p1.tiles is None or p1.workers == 0:
        raise CourseError(f"{n}^3 runs as one launch on this GPU (no whole tiles, or no tail to share)",
                          hint="choose a size whose tiles are not whole waves, e.g. 4096")
    runs["tiles"] = lambda: p1.run_tiles(a, b, c, 1.0, 0.0, None)
    runs["workers [1]"] = lambda: p1.run_rest(a, b, c, 1.0, 0.0, None)
    runs["workers [2]"] = lambda: p2.run_rest(a, b, c, 1.0, 0.0, None)
    timings = time_interleaved(runs, L2Flusher(facts["l2_bytes"]))
    resident = launch.resident_blocks(p1.func, builds[1])
    tiles = math.ceil(n / 128) ** 2
    shared_tiles = tiles - p1.dp_tiles
    ideal = timings["tiles"].median_ms * shared_tiles / p1.dp_tiles
    rows = []
    for name, t in timings.items():
        rows.append({"run": name, "median_ms": t.median_ms, "spread_pct": t.spread_pct,
                     "pct_of_cublas": 100 * timings["cuBLAS"].median_ms / t.median_ms
                     if not name.startswith(("tiles", "workers")) else None,
                     "workers_over_ideal": t.median_ms / ideal if name.startswith("workers") else None})
    a.free(); b.free(); c.free()
    return facts, {"size": n, "tiles": tiles, "dp_tiles": p1.dp_tiles, "shared_tiles": shared_tiles,
                   "workers": p1.workers, "resident_blocks": resident, "ideal_workers_ms": ideal, "rows": rows}


def main(argv):
    from common.measure import needs_gpu, slug
    lab = load("lab07b-cute-sgemm")
    needs_gpu(None, lab, command="tools/stream_k_phases.py")
    try:
        sizes = [int(x) for x in argv] or [4096]
    except ValueError:
        raise CourseError(f"stream_k_phases.py takes sizes (whole numbers), not {' '.join(argv)!r}",
                          hint="e.g. stream_k_phases.py 4096 8192") from None
    out, facts = [], None
    for n in sizes:
        facts, rec = phases(lab, n)
        out.append(rec)
        print(report.table(rec["rows"], [("run", "run", None), ("median_ms", "ms", ".3f"),
                                          ("spread_pct", "spread %", ".1f"), ("pct_of_cublas", "% cuBLAS", ".1f"),
                                          ("workers_over_ideal", "/ ideal", ".3f")],
                           title=f"c6 at {n}^3: {rec['dp_tiles']} whole tiles, {rec['shared_tiles']} shared by "
                                 f"{rec['workers']} workers; ideal workers {rec['ideal_workers_ms']:.3f} ms"))
    info = report.run_info(lab.dir)
    path = lab.results_dir / (f"{lab.short}-c6-phases_{slug(facts['name'])}_{datetime.date.today().isoformat()}_"
                              f"{info['commit'][:7]}.json")
    report.write_json(path, {"what": f"{lab.short}-c6-phases", "gpu": facts, "run": info, "sizes": out})
    print(f"\nfull data: {path.relative_to(lab.dir)}")


if __name__ == "__main__":
    with user_errors():
        main(sys.argv[1:])
