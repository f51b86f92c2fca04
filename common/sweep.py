"""The shape sweep: `make bench SHAPES=decode` times every kernel of each ladder at the M x N x K shapes
a lab names (not only squares), with cuBLAS of the same precision, and says for each shape which roof
binds it and, where it is memory, how close each kernel gets to this GPU's measured copy bandwidth.

    sweep(lab, args)                 the target (args.shapes, args.kernel, args.ladder); prints a table
                                     per ladder, writes results/<lab>-sweep_<gpu>_<date>_<commit>.json
                                     (a run of fewer shapes, kernels or ladders: <lab>-sweep-<what>_..., record_stem)
    resolve_shapes(lab, spec)        "decode", "decode,split-k", "all", "1x4096x4096" -> [(set, (M, N, K))]
    bytes_moved(M, N, K, prec)       the bytes the product must move: A and B read once, C (FP32) written once
    intensity(M, N, K, prec)         2 M N K / bytes_moved: FLOP per byte at best
    bound(M, N, K, prec, peak_tflops, copy_gbs) -> ("memory" | "compute", roof TFLOP/s), by
                                     common.roofline.attainable with the measured copy bandwidth as the slope
    copy_bandwidth(nbytes=1 GiB)     -> (GB/s, Timing): a device-to-device copy, read + write counted
    ShapeMeasurer(lab, facts)        .rows(ladder, entries, M, N, K): cuBLAS first, then each entry,
                                     each checked after its timing loop (as measure.Measurer, for M x N x K)
    main(argv)                       `python -m common.sweep --lab L --shapes decode [--kernel gemm]`

What it reads from the lab's table (all optional but SHAPE_SETS):
    SHAPE_SETS      {name: [(M, N, K), ...]}: the named sets
    SHAPES_DEFAULT  the set(s) timed when none is named ("all" if absent)
    SERVES          {kernel: (predicate(M, N, K), "in words")}: the shapes a row is timed at (a row not
                    named: every shape its own rules allow)
    SWEEP_EXTRA     {set: {ladder: [Kernel]}}: rows timed on that set's shapes only
    DISPATCHERS     {name: "module:function"}: function(precision, M, N, K, sms) returns a choice with
                    .kernel (a row), .variant and .label; the sweep times the choice as row `name`
A row's launch_hook may have describe(kernel, M, N, K, sms) -> text ("splits=132"): shown with its name.

Timing as the course times (common/timing.py): CUDA events, L2 flushed before every repetition,
warm-ups, the median; the output poisoned with NaN before the loop and the last repetition's result
checked against the float64 reference afterwards, with the kernel's own bound (common/precision.py).
"""
import argparse
import datetime
import re
import sys

import numpy as np

from . import check as checking
from . import report
from .errors import CourseError
from .precision import precision
from .roofline import attainable

BASELINE = "cuBLAS"
COPY_BYTES = 1 << 30
TIMING = ("CUDA events, interleaved: each repetition runs cuBLAS and every entry once in a random order, "
          "L2 flushed before each; 2 warm-up rounds, median of 10-50 repetitions")


# --- shapes and bytes ------------------------------------------------------------------------

def shape_sets(lab):
    sets = lab.option("SHAPE_SETS")
    if not sets:
        raise CourseError(f"{lab.name} names no shapes to sweep", hint="its table (lab.py) has no SHAPE_SETS")
    return {name: [tuple(int(x) for x in s) for s in shapes] for name, shapes in sets.items()}


def resolve_shapes(lab, spec=None):
    """[(set name, (M, N, K))], each shape once, in the order named. spec: set names and/or MxNxK
    shapes, comma-separated; "all" is every set."""
    sets = shape_sets(lab)
    spec = spec or lab.option("SHAPES_DEFAULT", "all")
    out, seen = [], set()
    for item in [x.strip() for x in str(spec).split(",") if x.strip()]:
        if item == "all":
            pairs = [(n, s) for n, ss in sets.items() for s in ss]
        elif item in sets:
            pairs = [(item, s) for s in sets[item]]
        elif re.fullmatch(r"\d+x\d+x\d+", item):
            pairs = [("given", tuple(int(x) for x in item.split("x")))]
        else:
            raise CourseError(f"{item!r} is neither a shape set of {lab.name} nor a shape MxNxK",
                              hint=f"sets: {', '.join(sets)}, all; or e.g. 1x4096x4096")
        for name, s in pairs:
            if s not in seen:
                seen.add(s)
                out.append((name, s))
    return out


def bytes_moved(M, N, K, prec):
    """A (M x K) and B (K x N) read once in the input type, C (M x N, FP32) written once."""
    e = precision(prec).element_bytes
    return e * (M * K + K * N) + 4 * M * N


def intensity(M, N, K, prec):
    return 2.0 * M * N * K / bytes_moved(M, N, K, prec)


def bound(M, N, K, prec, peak_tflops, copy_gbs):
    """Which roof binds at this shape, and the roof (TFLOP/s): the roofline with this GPU's compute
    peak and its measured copy bandwidth as the slope."""
    ai, tbs = intensity(M, N, K, prec), copy_gbs / 1000.0
    if not peak_tflops:
        return "memory" if ai < 50 else "compute", None        # no peak table: a rough ridge
    roof = attainable(ai, peak_tflops, tbs)
    return ("memory" if ai * tbs < peak_tflops else "compute"), roof


def copy_bandwidth(nbytes=COPY_BYTES):
    """A device-to-device copy of nbytes (four times any L2 we know), timed as a kernel is: GB/s
    counting the read and the write, and the Timing."""
    import pycuda.driver as cuda
    from .timing import time_gpu
    src, dst = cuda.mem_alloc(nbytes), cuda.mem_alloc(nbytes)
    try:
        cuda.memset_d32(src, 0x3F800000, nbytes // 4)
        t = time_gpu(lambda: cuda.memcpy_dtod_async(dst, src, nbytes), None, budget_s=0.3)
    finally:
        src.free(); dst.free()
    return 2 * nbytes / (t.median_ms * 1e-3) / 1e9, t


# --- what is timed at a shape ----------------------------------------------------------------

def serves(lab, k, M, N, K):
    if k.refusal(M, N, K):
        return False
    rule = lab.option("SERVES", {}).get(k.base_name)
    return rule is None or bool(rule[0](M, N, K))


def _dispatchers(lab):
    out = {}
    for name, ref in lab.option("DISPATCHERS", {}).items():
        module, _, fn = ref.partition(":")
        out[name] = getattr(lab.module(module), fn)
    return out


def _describe(k, M, N, K, sms):
    d = getattr(k.launch_hook, "describe", None)
    return d(k, M, N, K, sms) if d else ""


def entries(lab, ladder, set_name, M, N, K, sms, wanted=None):
    """[{name, kernel, variant, label, rule}] timed at this shape for this ladder: the rows that
    serve it, the set's extra rows, then each dispatcher's choice. wanted: names to keep (None: all)."""
    prec = lab.ladder_precision(ladder)
    extra = [lab.bind(k) for k in lab.option("SWEEP_EXTRA", {}).get(set_name, {}).get(ladder, [])]
    out = []
    for k in list(lab.ladders[ladder]) + extra:
        if wanted and k.name not in wanted and k.base_name not in wanted:
            continue
        if not serves(lab, k, M, N, K):
            continue
        v = k.variant_for(M, N, K)
        more = _describe(k, M, N, K, sms)
        out.append({"name": k.name, "kernel": k, "variant": v, "rule": None,
                    "label": k.label(v) + (f" ({more})" if more and "[" not in k.name else "")})
    for name, fn in _dispatchers(lab).items():
        if wanted and name not in wanted:
            continue
        c = fn(prec.name, M, N, K, sms)
        out.append({"name": name, "kernel": c.kernel, "variant": c.variant, "rule": getattr(c, "rule", None),
                    "label": c.label})
    return out


class ShapeMeasurer:
    """The bench's Measurer (common/targets.py: interleaved timing, one output buffer each, checked
    after the timing) at any M x N x K, and the sweep's columns: bound, bytes moved, GB/s, % of copy."""

    def __init__(self, lab, facts, copy_gbs):
        from .measure import Measurer
        self.m, self.lab, self.facts, self.copy_gbs = Measurer(lab, facts), lab, facts, copy_gbs
        self.blas = self.m.blas

    def rows(self, ladder, shape_entries, M, N, K, set_name="", progress=None, budget_s=0.5):
        prec = self.lab.ladder_precision(ladder)
        peak = prec.peak(self.facts["peaks"])
        which, roof = bound(M, N, K, prec, peak, self.copy_gbs)
        moved, flops = bytes_moved(M, N, K, prec), 2.0 * M * N * K
        out = []
        for e, t, v, cublas_ms in self.m.measure(prec, list(shape_entries), M, N, K, progress, budget_s=budget_s):
            k = e["kernel"]
            gbs = moved / (t.median_ms * 1e-3) / 1e9
            out.append({"ladder": ladder, "set": set_name, "shape": f"{M}x{N}x{K}", "M": M, "N": N, "K": K,
                        "kernel": e["name"], "label": e.get("label", f"{BASELINE} ({prec.baseline})"),
                        "variant": e["variant"], "rule": e.get("rule"),
                        **t.as_dict(), "tflops": t.tflops(flops), "bound": which, "roof_tflops": roof,
                        "intensity": flops / moved, "bytes": moved, "gbs": gbs,
                        "pct_of_copy": 100 * gbs / self.copy_gbs if which == "memory" else None,
                        "pct_of_peak": 100 * t.tflops(flops) / peak if peak else None,
                        "pct_of_cublas": 100 * cublas_ms / t.median_ms, "check": str(v), "check_ok": v.ok,
                        **({"params": k.tiling.params} if k is not None and k.tag else {})})
        return out


# --- the target ------------------------------------------------------------------------------

COLUMNS = [("shape", "M x N x K", ""), ("bound", "bound", ""), ("label", "kernel", ""),
           ("us", "us", ".1f"), ("tflops", "TFLOP/s", ".2f"), ("gbs_shown", "GB/s", ".0f"),
           ("pct_of_copy", "% copy", ".1f"), ("pct_of_cublas", "% cuBLAS", ".1f"), ("verdict", "check", "")]


def table(record, ladder):
    rows = [{**r, "us": r["median_ms"] * 1e3, "gbs_shown": r["gbs"] if r["bound"] == "memory" else None,
             "verdict": "PASS" if r["check_ok"] else "FAIL"} for r in record["results"] if r["ladder"] == ladder]
    info = record["ladders"][ladder]
    copy = record["copy"]["gbs"]
    return report.table(rows, COLUMNS, title=(
        f"{ladder}: {info['title']}; baseline {info['baseline_mode']}\n"
        f"GB/s counts A and B read once and C (FP32) written once, shown where the roofline (peak "
        f"{info['peak_tflops'] or 0:.0f} TFLOP/s, copy {copy:.0f} GB/s) says memory binds"))


def dispatcher_summary(record):
    """Per dispatcher and ladder: the worst % of cuBLAS over the shapes, and where."""
    lines = []
    names = sorted({r["kernel"] for r in record["results"] if r["rule"] is not None})
    for name in names:
        for ladder in record["ladders"]:
            rs = [r for r in record["results"] if r["kernel"] == name and r["ladder"] == ladder]
            if rs:
                worst = min(rs, key=lambda r: r["pct_of_cublas"])
                lines.append(f"{name} ({ladder}): {len(rs)} shapes, at least {worst['pct_of_cublas']:.0f} % of cuBLAS "
                             f"(worst {worst['shape']}, {worst['label']})")
    return "\n".join(lines)


def record_stem(lab, args, wanted=None, ladders=None):
    """<lab>-sweep for a run of the lab's default shapes, every kernel and every ladder: the record the
    notebook and the README read (the newest <lab>-sweep_*.json). A narrower run is named for what it
    timed, <lab>-sweep-<shapes>[-<kernels>][-<ladders>], so it never stands in for the whole sweep."""
    from .measure import slug
    spec = getattr(args, "shapes", None) or ""
    default = lab.option("SHAPES_DEFAULT", "all")
    parts = []
    if spec and spec != default:
        parts.append(spec)
    if wanted:
        parts.append(",".join(wanted))
    if ladders and list(ladders) != list(lab.ladders):
        parts.append(",".join(ladders))
    tag = slug("-".join(parts))[:60].strip("-")
    return f"{lab.short}-sweep" + (f"-{tag}" if tag else "")


def sweep(lab, args):
    """Time the ladders at the named shapes against cuBLAS of the same precision; print a table
    per ladder and write the record to the lab's results/."""
    from .measure import ladder_info, needs_gpu, slug
    facts = needs_gpu("bench", lab)
    arch, sms = facts["arch"], facts["sms"]
    shapes = resolve_shapes(lab, getattr(args, "shapes", None))
    wanted = [x.strip() for x in (getattr(args, "kernel", None) or "").split(",") if x.strip()] or None
    ld = getattr(args, "ladder", None)
    ladders = list(lab.ladders) if ld in (None, "", "all", "both") else ld.split(",")
    for n in ladders:
        if n not in lab.ladders:
            raise CourseError(f"{lab.name} has no ladder {n!r}", hint=f"ladders: {', '.join(lab.ladders)}")
    plan = {(ladder, s): entries(lab, ladder, set_name, *s, sms, wanted)
            for ladder in ladders for set_name, s in shapes}
    plan = {key: [e for e in es if lab.build_arch(e["kernel"], arch)] for key, es in plan.items()}
    if wanted and not any(plan.values()):
        raise CourseError(f"nothing named {', '.join(wanted)} serves these shapes",
                          hint=f"kernels: {', '.join(lab.kernels)}; dispatchers: {', '.join(lab.option('DISPATCHERS', {}))}")
    unique = {}
    for es in plan.values():
        for e in es:
            k = e["kernel"]
            unique.setdefault(str(lab.cubin(k, arch)), k)
    report.progress(0, 1, f"building {len(unique)} cubins for {arch}")
    lab.build(list(unique.values()), [arch])
    copy_gbs, copy_t = copy_bandwidth()
    print(f"device-to-device copy of {COPY_BYTES / 2**30:.0f} GiB: {copy_gbs:.0f} GB/s counting read + write "
          f"(spread {copy_t.spread_pct:.1f} %)")
    m = ShapeMeasurer(lab, facts, copy_gbs)
    set_of = dict((s, n) for n, s in shapes)
    steps, step = sum(len(es) + 1 for es in plan.values()), [0]
    results = []
    for (ladder, s), es in plan.items():
        def progress(name, ladder=ladder, s=s):
            step[0] += 1
            report.progress(step[0], steps, f"{ladder} {'x'.join(map(str, s))}: {name}")
        results += m.rows(ladder, es, *s, set_name=set_of[s], progress=progress)
    failures = [r["check"] for r in results if not r["check_ok"]]
    info = report.run_info(lab.dir)
    day = datetime.date.today().isoformat()
    record = {"what": f"{lab.short}-sweep", "lab": lab.name, "gpu": facts, "run": info,
              "shape_sets": {n: [list(s) for s in ss] for n, ss in shape_sets(lab).items()},
              "shapes": [{"set": n, "shape": list(s)} for n, s in shapes],
              "copy": {"bytes": COPY_BYTES, "gbs": copy_gbs, "spread_pct": copy_t.spread_pct,
                       "how": "cuMemcpyDtoDAsync, read + write counted, median of the timed repetitions"},
              "ladders": {x: ladder_info(lab, x, facts) for x in ladders},
              "cublas": {"library": m.blas.path, "version": m.blas.version},
              "timing": TIMING, "results": results, "failures": failures}
    print(f"\nGPU: {facts['name']} ({arch}), {sms} SMs, max {facts['sm_clock_max_mhz']:.0f} MHz; "
          f"commit {info['commit'][:10]}{' (uncommitted changes)' if info['dirty_tree'] else ''}")
    for ladder in ladders:
        print("\n" + table(record, ladder))
    summary = dispatcher_summary(record)
    if summary:
        print("\n" + summary)
    path = report.write_json(lab.results_dir / f"{record_stem(lab, args, wanted, ladders)}_{slug(facts['name'])}_{day}_"
                                               f"{info['commit'][:7]}.json", record)
    try:
        shown = path.relative_to(lab.dir)
    except ValueError:
        shown = path
    print(f"full data: {shown}")
    if failures:
        raise CourseError("some results were wrong after timing:\n  " + "\n  ".join(failures),
                          hint="run `make test` for the kernel that failed")
    return record


def main(argv=None):
    """Until the CLI has it: python -m common.sweep --lab labs/<lab> [--shapes S] [--kernel K] [--ladder L]."""
    from .errors import user_errors
    from .lab import load
    p = argparse.ArgumentParser(prog="python -m common.sweep", description=__doc__.split("\n\n")[0])
    p.add_argument("--lab", required=True)
    p.add_argument("--shapes", default=None, help="set names and/or MxNxK, comma-separated; 'all'")
    p.add_argument("--kernel", default=None, help="kernels or dispatchers to time (default: all), comma-separated")
    p.add_argument("--ladder", default=None)
    args = p.parse_args(argv)
    with user_errors():
        sweep(load(args.lab), args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
