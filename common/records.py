"""Bench records read back: the JSON a lab's `make bench` writes, as tables, charts and the
chapter's comparisons. No GPU needed: this is how a notebook shows recorded results.

    newest(directory, pattern)         -> (record, path) of the newest record, or (None, None)
    provenance(record, path=None)      -> "NVIDIA H200 (sm_90), measured 2026-11-30 16:35 UTC, commit 0d64cf0, ..."
    ladders(record), sizes(record)     the ladders ("fp32", "fp16") and sizes it holds
    result(record, ladder, kernel, size) -> one result dict (tflops, pct_of_cublas, pct_of_peak, ...)
    ladder_table(record, ladder)       -> text: TFLOP/s and % of cuBLAS per size, as `make bench` prints it
    series(record, ladder)             -> ({kernel: [TFLOP/s per size]}, sizes): plots.ladder_chart's input
    checks(record, size=None)          -> the verdict lines the bench recorded after timing
    tflops_vs_size(record)             -> matplotlib Figure: one line per kernel, one panel per ladder
    comparisons(record, size=None)     -> rows: best FP32 kernel vs cuBLAS SGEMM, best FP16 kernel vs
                                          cuBLAS HGEMM, cuBLAS HGEMM vs cuBLAS SGEMM
    comparisons_table(record, size=None)   the same as text
    predictions_rows(record, predictions, size=None) / predictions_table(...)
                                          a student's predictions against the record: each key is a
                                          kernel (its % of cuBLAS, same precision) or HGEMM_OVER_SGEMM

The record's shape ({"gpu": facts, "run": {commit, date}, "sizes", "results": [{ladder, kernel,
variant, size, tflops, pct_of_cublas, pct_of_peak, check, ...}]}) is report.py's and the lab's bench.
"""
from pathlib import Path

from . import report
from .roofline import newest_record

BASELINE = "cuBLAS"                          # the kernel name of the baseline in every ladder
HGEMM_OVER_SGEMM = "HGEMM/SGEMM"             # predictions key: cuBLAS FP16 TFLOP/s over cuBLAS FP32
LADDER_TITLES = {"fp32": "FP32 SGEMM (CUDA cores)", "fp16": "FP16 in, FP32 accumulate (tensor cores)"}


def newest(directory, pattern="*-bench_*.json"):
    """The newest record in `directory` by its recorded date (roofline.newest_record)."""
    return newest_record(directory, pattern)


def provenance(record, path=None, root=None):
    """One line: which GPU, when, which commit, which file (relative to `root` if given). What a
    notebook shows at the top."""
    gpu, run = record.get("gpu", {}), record.get("run", {})
    date = run.get("date", "?").replace("T", " ").replace("+00:00", " UTC")
    commit = (run.get("commit") or "unknown")[:7]
    if run.get("dirty_tree"):
        commit += " (with uncommitted changes)"
    where = ""
    if path is not None:
        p = Path(path)
        if root is not None and p.resolve().is_relative_to(Path(root).resolve()):
            p = p.resolve().relative_to(Path(root).resolve())
        where = f", file {p}"
    driver = f", driver {gpu['driver']}" if gpu.get("driver") else ""
    return f"{gpu.get('name', '?')} ({gpu.get('arch', '?')}{driver}), measured {date}, commit {commit}{where}"


def ladders(record):
    seen = []
    for r in record["results"]:
        if r["ladder"] not in seen:
            seen.append(r["ladder"])
    return seen


def sizes(record):
    return record.get("sizes") or sorted({r["size"] for r in record["results"]})


def kernels(record, ladder):
    """The ladder's kernels in recorded order, the baseline first."""
    names = []
    for r in record["results"]:
        if r["ladder"] == ladder and r["kernel"] not in names:
            names.append(r["kernel"])
    return sorted(names, key=lambda n: n != BASELINE)


def result(record, ladder, kernel, size):
    for r in record["results"]:
        if (r["ladder"], r["kernel"], r["size"]) == (ladder, kernel, size):
            return r
    return None


def _value(record, ladder, kernel, size, key):
    r = result(record, ladder, kernel, size)
    return None if r is None else r.get(key)


def ladder_table(record, ladder):
    """TFLOP/s and % of cuBLAS at every size, % of peak at the largest: `make bench`'s table."""
    ns = sizes(record)
    rows = []
    for k in kernels(record, ladder):
        row = {"kernel": k}
        for n in ns:
            row[f"tf{n}"] = _value(record, ladder, k, n, "tflops")
            row[f"pc{n}"] = _value(record, ladder, k, n, "pct_of_cublas")
        row["peak"] = _value(record, ladder, k, ns[-1], "pct_of_peak")
        spreads = [_value(record, ladder, k, n, "spread_pct") for n in ns]
        row["spread"] = max(spreads) if None not in spreads else None
        oks = [_value(record, ladder, k, n, "check_ok") for n in ns]
        row["ok"] = "-" if all(o is None for o in oks) else ("PASS" if all(oks) else "FAIL")
        rows.append(row)
    cols = [("kernel", "kernel", "")]
    for n in ns:
        cols += [(f"tf{n}", f"{n}³ TFLOP/s", ".1f"), (f"pc{n}", "% cuBLAS", ".1f")]
    cols += [("peak", f"% peak@{ns[-1]}", ".1f")]
    if any(r["spread"] is not None for r in rows):
        cols += [("spread", "spread %", ".1f")]          # (p90 - p10) / median of the timed runs
    cols += [("ok", "check", "")]
    modes = record.get("cublas", {})
    mode = modes.get("fp32_mode" if ladder == "fp32" else "fp16_mode", "cuBLAS")
    peaks = record.get("gpu", {}).get("peaks") or {}
    peak = peaks.get("fp32" if ladder == "fp32" else "fp16_tensor")
    title = f"{LADDER_TITLES.get(ladder, ladder)}; baseline {mode}" + \
        (f"; peak {peak:.1f} TFLOP/s" if peak else "; no peak table for this GPU")
    if ladder == "fp16" and peak and peaks.get("note"):
        title += f" ({peaks['note']})"
    return report.table(rows, cols, title=title)


def series(record, ladder):
    """({kernel: [TFLOP/s per size]}, sizes), the baseline first: what plots.ladder_chart draws."""
    ns = sizes(record)
    return {k: [_value(record, ladder, k, n, "tflops") for n in ns] for k in kernels(record, ladder)}, ns


def checks(record, size=None):
    """The correctness verdicts the bench recorded (after its timing loop), at one size (default: the largest)."""
    size = size or sizes(record)[-1]
    return [f"{r['ladder']}: {r.get('check', r['kernel'] + ' (no check recorded)')}"
            for r in record["results"] if r["size"] == size]


def tflops_vs_size(record):
    """TFLOP/s against matrix size, one panel per ladder, one line per kernel; cuBLAS dashed."""
    from matplotlib.figure import Figure
    names = ladders(record)
    fig = Figure(figsize=(5.2 * len(names), 3.8))
    axes = fig.subplots(1, len(names), squeeze=False)[0]
    for ax, ladder in zip(axes, names):
        data, ns = series(record, ladder)
        for k, ys in data.items():
            style = dict(color="0.3", ls="--", lw=1.5) if k == BASELINE else dict(marker="o", ms=4)
            ax.plot(ns, [y if y is not None else float("nan") for y in ys], label=k, **style)
        ax.set_xscale("log", base=2)
        ax.set_xticks(ns)
        ax.set_xticklabels([f"{n}³" for n in ns])
        ax.set_xlabel("M = N = K")
        ax.set_ylabel("TFLOP/s")
        ax.set_ylim(bottom=0)
        ax.set_title(LADDER_TITLES.get(ladder, ladder), fontsize=9)
        ax.grid(True, lw=0.3, alpha=0.5)
        ax.legend(fontsize=7, ncol=2)
    fig.suptitle(f"{record.get('gpu', {}).get('name', '?')}: TFLOP/s against size", fontsize=10)
    fig.tight_layout()
    return fig


def comparisons(record, size=None):
    """The chapter's comparisons at one size (default: the largest): the best FP32 kernel against
    cuBLAS SGEMM (the chapter's exam), the best FP16 kernel against cuBLAS HGEMM, and cuBLAS HGEMM
    against cuBLAS SGEMM (what FP16 inputs are worth before any quantization)."""
    size = size or sizes(record)[-1]
    rows = []

    def best(ladder):
        rs = [r for r in record["results"] if r["ladder"] == ladder and r["size"] == size and r["kernel"] != BASELINE]
        return max(rs, key=lambda r: r["tflops"]) if rs else None

    for ladder, base_name in (("fp32", "cuBLAS SGEMM"), ("fp16", "cuBLAS HGEMM")):
        b, base = best(ladder), result(record, ladder, BASELINE, size)
        if b and base:
            rows.append({"comparison": f"best {ladder.upper()} kernel ({b['kernel']}) / {base_name}", "size": size,
                         "a": b["tflops"], "b": base["tflops"], "ratio": b["tflops"] / base["tflops"]})
    h, s = result(record, "fp16", BASELINE, size), result(record, "fp32", BASELINE, size)
    if h and s:
        rows.append({"comparison": "cuBLAS HGEMM / cuBLAS SGEMM", "size": size, "a": h["tflops"], "b": s["tflops"],
                     "ratio": h["tflops"] / s["tflops"]})
    return rows


def comparisons_table(record, size=None):
    rows = comparisons(record, size)
    return report.table(rows, [("comparison", "comparison", ""), ("size", "size", "d"), ("a", "TFLOP/s", ".1f"),
                               ("b", "against TFLOP/s", ".1f"), ("ratio", "ratio", ".2f")])


def measured(record, key, size):
    """What a predictions key stands for, measured: a kernel's % of cuBLAS (same precision), or
    cuBLAS HGEMM TFLOP/s over cuBLAS SGEMM TFLOP/s for HGEMM_OVER_SGEMM. None if not recorded."""
    if key == HGEMM_OVER_SGEMM:
        h, s = result(record, "fp16", BASELINE, size), result(record, "fp32", BASELINE, size)
        return h["tflops"] / s["tflops"] if h and s else None
    for r in record["results"]:
        if r["kernel"] == key and r["size"] == size:
            return r.get("pct_of_cublas")
    return None


def predictions_rows(record, predictions, size=None):
    """One row per prediction: what it is, predicted, measured, measured - predicted."""
    size = size or sizes(record)[-1]
    rows = []
    for key, guess in predictions.items():
        got = measured(record, key, size)
        what = "cuBLAS HGEMM / SGEMM (x)" if key == HGEMM_OVER_SGEMM else f"{key}: % of cuBLAS"
        diff = got - guess if (got is not None and guess is not None) else None
        rows.append({"quantity": what, "size": size, "predicted": guess, "measured": got, "off_by": diff})
    return rows


def predictions_table(record, predictions, size=None):
    rows = predictions_rows(record, predictions, size)
    text = report.table(rows, [("quantity", "quantity", ""), ("size", "size", "d"), ("predicted", "you said", ".1f"),
                               ("measured", "measured", ".1f"), ("off_by", "measured - said", "+.1f")])
    if all(r["predicted"] is None for r in rows):
        text += "\n(no predictions entered: fill in the dict before the measurement cell and run again)"
    return text
