"""Bench records read back: the JSON a lab's `make bench` writes, as tables, charts and the
chapter's comparisons. No GPU needed: this is how a notebook shows recorded results.

    newest(directory, pattern)         -> (record, path) of the newest record, or (None, None)
    provenance(record, path=None)      -> "NVIDIA H200 (sm_90), measured 2026-11-30 16:35 UTC, commit 0d64cf0, ..."
    ladders(record), sizes(record)     the ladders ("fp32", "fp16") and sizes it holds
    ladder_info(record, ladder, lab=None) -> {precision, title, baseline_mode, baseline, peak_tflops, yardsticks}:
                                          the record's "ladders" entry (records before it: the
                                          precision of the ladder's first kernel in the lab's table)
    result(record, ladder, kernel, size) -> one result dict (tflops, pct_of_cublas, pct_of_peak, ...)
    ladder_table(record, ladder)       -> text: TFLOP/s and % of cuBLAS per size, as `make bench` prints it
    series(record, ladder)             -> ({kernel: [TFLOP/s per size]}, sizes): plots.ladder_chart's input
    checks(record, size=None)          -> the verdict lines the bench recorded after timing
    tflops_vs_size(record)             -> matplotlib Figure: one line per kernel, one panel per ladder
    comparisons(record, size=None, lab=None, ratios=None) -> rows: each ladder's best kernel against
                                          its baseline, then the baseline ratios between ladders
                                          (ratios, default the lab's BASELINE_RATIOS: [("fp16", "fp32")])
    comparisons_table(record, size=None, lab=None, ratios=None)   the same as text
    predictions_rows(record, predictions, size=None, lab=None) / predictions_table(...)
                                          a student's predictions against the record: each key is a
                                          kernel (its % of cuBLAS, same precision) or a ratio of two
                                          ladders' baselines, by their cuBLAS names ("HGEMM/SGEMM")
                                          or by the ladders' names ("fp16/fp32")

The record's shape ({"gpu": facts, "run": {commit, date}, "sizes", "ladders": {ladder: {precision,
title, baseline_mode, peak_tflops}}, "results": [{ladder, kernel, variant, size, tflops,
pct_of_cublas, pct_of_peak, check, ...}]}) is common/targets.py's bench_report.
"""
import json
from pathlib import Path

from . import report
from .precision import PRECISIONS

BASELINE = "cuBLAS"                          # the kernel name of the baseline in every ladder


def newest_record(directory, pattern="*-bench_*.json"):
    """The newest record in `directory` (by the date in its content, then the file's time), or (None, None)."""
    files = sorted(Path(directory).glob(pattern), key=lambda p: p.stat().st_mtime)
    if not files:
        return None, None
    records = [(json.loads(p.read_text()), p) for p in files]
    records.sort(key=lambda rp: (rp[0].get("run", {}).get("date", ""), rp[1].stat().st_mtime))
    return records[-1]


def newest(directory, pattern="*-bench_*.json"):
    """The newest record in `directory` by its recorded date."""
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


def _precision_of(record, ladder, lab):
    """A record without "ladders" (before 2026-12): the precision of the ladder's first kernel in
    the lab's table, else of the lab's ladder of that name; None without a lab."""
    if lab is None:
        return None
    for name in kernels(record, ladder):
        k = lab.kernels.get(name.split("[")[0])
        if k is not None:
            return k.prec
    return lab.ladder_precision(ladder) if ladder in getattr(lab, "ladders", {}) else None


def ladder_info(record, ladder, lab=None):
    """{precision, title, baseline_mode, baseline, peak_tflops, yardsticks} of one ladder of the record.
    baseline is the short name comparisons use: "cuBLAS SGEMM" (the precision's cuBLAS call)."""
    info = dict((record.get("ladders") or {}).get(ladder) or {})
    prec = PRECISIONS.get(info.get("precision"))
    if not info:
        prec = _precision_of(record, ladder, lab)
        peaks = record.get("gpu", {}).get("peaks") or {}
        info = {"precision": prec.name if prec else None, "title": prec.title if prec else ladder,
                "baseline_mode": record.get("cublas", {}).get(f"{ladder}_mode") or (prec.cublas_mode if prec else BASELINE),
                "peak_tflops": prec.peak(peaks) if prec else None}
    info.setdefault("title", prec.title if prec else ladder)
    info.setdefault("baseline_mode", prec.cublas_mode if prec else BASELINE)
    info.setdefault("peak_tflops", None)
    if "yardsticks" not in info:          # a record written before rows could be yardsticks: ask the table
        rows = (getattr(lab, "ladders", None) or {}).get(ladder, [])
        info["yardsticks"] = [k.name for k in rows if getattr(k, "yardstick", False)]
    info["baseline"] = prec.baseline if prec else f"{BASELINE} {ladder}"
    return info


def result(record, ladder, kernel, size):
    for r in record["results"]:
        if (r["ladder"], r["kernel"], r["size"]) == (ladder, kernel, size):
            return r
    return None


def _value(record, ladder, kernel, size, key):
    r = result(record, ladder, kernel, size)
    return None if r is None else r.get(key)


def ladder_table(record, ladder, lab=None):
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
        oks = [o for o in (_value(record, ladder, k, n, "check_ok") for n in ns) if o is not None]
        row["ok"] = "-" if not oks else ("PASS" if all(oks) else "FAIL")    # a row timed at some sizes only
        row["note"] = _value(record, ladder, k, ns[-1], "note") or ""     # what it loses on this GPU
        rows.append(row)
    cols = [("kernel", "kernel", "")]
    for n in ns:
        cols += [(f"tf{n}", f"{n}³ TFLOP/s", ".1f"), (f"pc{n}", "% cuBLAS", ".1f")]
    cols += [("peak", f"% peak@{ns[-1]}", ".1f")]
    if any(r["spread"] is not None for r in rows):
        cols += [("spread", "spread %", ".1f")]          # (p90 - p10) / median of the timed runs
    cols += [("ok", "check", "")]
    if any(r["note"] for r in rows):
        cols += [("note", "note (this GPU)", "")]
    info = ladder_info(record, ladder, lab)
    peaks = record.get("gpu", {}).get("peaks") or {}
    peak = info["peak_tflops"]
    title = f"{info['title']}; baseline {info['baseline_mode']}" + \
        (f"; peak {peak:.1f} TFLOP/s" if peak else "; no peak table for this GPU")
    if peak and peaks.get("note") and "tensor" in (info.get("precision") or ""):
        title += f" ({peaks['note']})"           # the note is about the tensor-core peaks
    return report.table(rows, cols, title=title) + clock_line(record, ladder)


def clock_line(record, ladder):
    """"\nSM clock while timed: 2048³ 1980 MHz, 4096³ 1755 MHz (1650-1980)" (median, range of
    nvidia-smi's samples during each size's timing: common/clocks.py); "" for a record without them."""
    from .clocks import clock_text
    per_size = {}
    for r in record["results"]:
        if r.get("ladder") == ladder and r.get("sm_clock"):
            per_size.setdefault(r["size"], r["sm_clock"])
    if not per_size:
        return ""
    return "\nSM clock while timed: " + ", ".join(f"{n}³ {clock_text(c)}" for n, c in sorted(per_size.items()))


def series(record, ladder):
    """({kernel: [TFLOP/s per size]}, sizes), the baseline first: what plots.ladder_chart draws."""
    ns = sizes(record)
    return {k: [_value(record, ladder, k, n, "tflops") for n in ns] for k in kernels(record, ladder)}, ns


def checks(record, size=None):
    """The correctness verdicts the bench recorded (after its timing loop), at one size (default: the largest)."""
    size = size or sizes(record)[-1]
    return [f"{r['ladder']}: {r.get('check', r['kernel'] + ' (no check recorded)')}"
            for r in record["results"] if r["size"] == size]


def tflops_vs_size(record, lab=None):
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
        ax.set_title(ladder_info(record, ladder, lab)["title"], fontsize=9)
        ax.grid(True, lw=0.3, alpha=0.5)
        ax.legend(fontsize=7, ncol=2)
    fig.suptitle(f"{record.get('gpu', {}).get('name', '?')}: TFLOP/s against size", fontsize=10)
    fig.tight_layout()
    return fig


def _best(record, ladder, size, lab=None):
    """The ladder's fastest kernel at `size`: not cuBLAS (nor an extra cuBLAS row), and not a yardstick (a library's kernel)."""
    from .precision import PRECISIONS
    skip = set(ladder_info(record, ladder, lab)["yardsticks"]) | {BASELINE} | {p.baseline for p in PRECISIONS.values()}
    rs = [r for r in record["results"] if r["ladder"] == ladder and r["size"] == size and r["kernel"] not in skip]
    return max(rs, key=lambda r: r["tflops"]) if rs else None


def baseline_ratio(record, a, b, size):
    """cuBLAS TFLOP/s of ladder a over ladder b at `size`, or None if either is not recorded."""
    x, y = result(record, a, BASELINE, size), result(record, b, BASELINE, size)
    return x["tflops"] / y["tflops"] if x and y else None


def comparisons(record, size=None, lab=None, ratios=None):
    """The chapter's comparisons at one size (default: the largest): each ladder's best kernel
    against its own baseline (fp32: the chapter's exam), then each ratio (a, b) of two ladders'
    baselines (fp16 over fp32: what FP16 inputs are worth before any quantization). ratios: default
    the lab's BASELINE_RATIOS."""
    size = size or sizes(record)[-1]
    if ratios is None:
        ratios = lab.option("BASELINE_RATIOS", []) if lab is not None else []
    rows = []
    for ladder in ladders(record):
        b, base = _best(record, ladder, size, lab), result(record, ladder, BASELINE, size)
        if b and base:
            rows.append({"comparison": f"best {ladder.upper()} kernel ({b['kernel']}) / "
                                       f"{ladder_info(record, ladder, lab)['baseline']}",
                         "size": size, "a": b["tflops"], "b": base["tflops"], "ratio": b["tflops"] / base["tflops"]})
    for a, b in ratios:
        x, y = result(record, a, BASELINE, size), result(record, b, BASELINE, size)
        if x and y:
            rows.append({"comparison": f"{ladder_info(record, a, lab)['baseline']} / {ladder_info(record, b, lab)['baseline']}",
                         "size": size, "a": x["tflops"], "b": y["tflops"], "ratio": x["tflops"] / y["tflops"]})
    return rows


def comparisons_table(record, size=None, lab=None, ratios=None):
    rows = comparisons(record, size, lab, ratios)
    return report.table(rows, [("comparison", "comparison", ""), ("size", "size", "d"), ("a", "TFLOP/s", ".1f"),
                               ("b", "against TFLOP/s", ".1f"), ("ratio", "ratio", ".2f")])


def _ratio_ladders(record, key, lab):
    """The ladders (a, b) a ratio key names: "HGEMM/SGEMM" (their baselines' cuBLAS names) or
    "fp16/fp32" (the ladders' names); None if the key is no ratio of this record's ladders."""
    if key.count("/") != 1:
        return None
    x, y = (part.strip() for part in key.split("/"))
    by_name = {}
    for ladder in ladders(record):
        by_name[ladder] = ladder
        by_name[ladder_info(record, ladder, lab)["baseline"].split()[-1]] = ladder
    return (by_name[x], by_name[y]) if x in by_name and y in by_name else None


def measured(record, key, size, lab=None):
    """What a predictions key stands for, measured: a kernel's % of cuBLAS (same precision), or a
    ratio of two ladders' cuBLAS TFLOP/s ("HGEMM/SGEMM"). None if not recorded."""
    pair = _ratio_ladders(record, key, lab)
    if pair:
        return baseline_ratio(record, *pair, size)
    for r in record["results"]:
        if r["kernel"] == key and r["size"] == size:
            return r.get("pct_of_cublas")
    return None


def predictions_rows(record, predictions, size=None, lab=None):
    """One row per prediction: what it is, predicted, measured, measured - predicted."""
    size = size or sizes(record)[-1]
    rows = []
    for key, guess in predictions.items():
        got = measured(record, key, size, lab)
        pair = _ratio_ladders(record, key, lab)
        what = (f"{ladder_info(record, pair[0], lab)['baseline']} / {ladder_info(record, pair[1], lab)['baseline']} (x)"
                if pair else f"{key}: % of cuBLAS")
        diff = got - guess if (got is not None and guess is not None) else None
        rows.append({"quantity": what, "size": size, "predicted": guess, "measured": got, "off_by": diff})
    return rows


def predictions_table(record, predictions, size=None, lab=None):
    rows = predictions_rows(record, predictions, size, lab)
    text = report.table(rows, [("quantity", "quantity", ""), ("size", "size", "d"), ("predicted", "you said", ".1f"),
                               ("measured", "measured", ".1f"), ("off_by", "measured - said", "+.1f")])
    if all(r["predicted"] is None for r in rows):
        text += "\n(no predictions entered: fill in the dict before the measurement cell and run again)"
    return text
