#!/usr/bin/env python3
"""What bounds t4 (or v8): the kernel timed beside builds that leave one part of its work out.

    make bounds [SIZE=4096] [KERNEL=v8]   (python3 bounds.py --size 4096 --kernel t4, the course's Python)

Each build is the kernel with -DT4_PROBE=n (kernels/t4_mma_ldmatrix.cu) or -DV8_PROBE=n
(kernels/v8_pipelined.cu): 1 no copies after the prologue, 2 no mma.sync (t4 only), 3 no copies and
no barrier, 4 copies without the wait and the barrier (t4 only). Their results are wrong by design
(the table says WRONG); only their times mean something. Timed like make bench (interleaved with
cuBLAS of the kernel's precision, L2 flushed, median), so the ratios are of the same run:

    no copies  -> what ldmatrix + mma.sync alone reach with 8 warps: the ceiling of this structure
    no mma     -> how fast the copies, barriers and ldmatrix move the tiles with nothing to wait for
    the gap between t4 and "no copies" is what feeding the tiles costs (issue slots, the shared-memory
    port the copies write through, waits); between "no copies" and "no copies, no barrier" what the
    per-tile barrier costs.

Writes results/lab07-<kernel>-bounds_<gpu>_<date>_<commit>.json. Needs a GPU.
"""
import argparse
import datetime
import re
from pathlib import Path

from common import report
from common.errors import CourseError, user_errors

LAB = Path(__file__).resolve().parent
PROBES = {0: "the kernel", 1: "no copies after the prologue", 2: "no mma.sync",
          3: "no copies, no barrier", 4: "copies, no wait, no barrier"}
# kernel -> (its -D switch, the probes it has, its ladder, the BK values to probe by default)
KERNELS = {"t4": ("T4_PROBE", (0, 1, 2, 3, 4), "fp16", "32,64"),
           "v8": ("V8_PROBE", (0, 1, 3), "fp32", "8")}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=4096)
    ap.add_argument("--kernel", default="t4", help="t4 (default) or v8")
    ap.add_argument("--bk", default=None, help="BK values to probe, comma-separated (default: t4 32,64; v8 8)")
    args = ap.parse_args()
    if args.kernel not in KERNELS:
        raise CourseError(f"make bounds knows no kernel {args.kernel!r}", hint=f"KERNEL={' or KERNEL='.join(KERNELS)}")
    switch, probes, ladder, bks = KERNELS[args.kernel]
    from common.lab import load
    from common.targets import needs_gpu, Measurer
    lab = load(LAB)
    facts = needs_gpu("bounds", lab)
    base = lab.bind(lab.kernel(args.kernel))
    builds = []
    for bk in (int(b) for b in (args.bk or bks).split(",")):
        for probe in probes:
            p = {k: v for k, v in (("BK", bk), (switch, probe)) if v != base.tiling.value(k)}
            builds.append((bk, probe, base.with_params(**p) if p else base))
    lab.build([k for _, _, k in builds], [facts["arch"]])
    rows = Measurer(lab, facts).rows(ladder, [k for _, _, k in builds], args.size)
    by_name = {r["kernel"]: r for r in rows}
    table = [{"bk": bk, "build": PROBES[probe], "tflops": by_name[k.name]["tflops"],
              "pct_of_cublas": by_name[k.name]["pct_of_cublas"],
              "result": "correct" if by_name[k.name]["check_ok"] else "WRONG (by design)" if probe else "WRONG"}
             for bk, probe, k in builds]
    cublas = by_name.get("cuBLAS", {})
    print(report.table(table, [("bk", "BK", "d"), ("build", "build", None), ("tflops", "TFLOP/s", ".1f"),
                               ("pct_of_cublas", "% of cuBLAS", ".1f"), ("result", "result", None)],
                       title=f"{args.kernel} at {args.size}^3 on {facts['name']}: cuBLAS "
                             f"{cublas.get('tflops', float('nan')):.1f} TFLOP/s in the same run"))
    info = report.run_info(LAB)
    slug = re.sub(r"[^a-z0-9]+", "-", facts["name"].lower()).strip("-")
    path = LAB / "results" / f"lab07-{args.kernel}-bounds_{slug}_{datetime.date.today().isoformat()}_{info['commit'][:7]}.json"
    report.write_json(path, {"what": f"lab07-{args.kernel}-bounds", "gpu": facts, "run": info, "size": args.size,
                             "probes": {p: PROBES[p] for p in probes}, "table": table, "rows": rows})
    print(f"\nfull data: {path.relative_to(LAB)}")


if __name__ == "__main__":
    with user_errors():
        main()
