"""Roofline: each kernel's measured TFLOP/s at its arithmetic intensity, under the GPU's roofs.

    bandwidth_gbs(facts) -> (GB/s, how it was found)   DRAM peak: a given figure, else 2 x memory
                                                  clock x bus width, else BANDWIDTH_GBS by name
    roofs(facts) -> {"fp32", "fp16_tensor", ... (TFLOP/s, one per precision's peak key), "bandwidth"
                     (TB/s), "ridge_fp32", "ridge_fp16_tensor", ... (FLOP/B)}
    attainable(intensity, peak_tflops, bandwidth_tbs) -> TFLOP/s: min(peak, intensity x bandwidth)
    newest_record(directory, pattern)  -> (record dict, path) of the newest bench JSON, or (None, None)
    kernel_intensities(lab)            -> {kernel: FLOP/B} for the lab's kernels the hierarchy model describes
    points(record, size=None, intensities=None, lab=None) -> one row per kernel: ladder, kernel, size,
                                                  tflops, intensity, roof, pct_of_roof, bound ("memory"/"compute")
    plot(record, size=None, path=None, intensities=None, lab=None) -> matplotlib Figure (PNG if path)

Intensity is FLOP per byte of DRAM traffic. For a kernel it is the hierarchy model's
global_flop_per_byte (common.hierarchy.traffic): every block reads its A and B panels from DRAM,
nothing hits in L2. That is the worst case, so a point can sit above the bandwidth roof: L2 hits
made its real intensity higher. The bench record is what a lab's bench target writes
({"gpu": facts, "sizes": [...], "results": [{"ladder", "kernel", "size", "tflops", ...}]}).
"""
from pathlib import Path

from . import hierarchy, records, writes
from .device import peak_tflops
from .precision import PRECISIONS
from .records import newest_record  # noqa: F401  (part of this module's interface)

# Peak DRAM bandwidth, GB/s, from the vendors' data sheets; used when the record has no memory
# clock and bus width. Longest matching name wins.
BANDWIDTH_GBS = {
    "H200": 4800, "H100 SXM": 3350, "H100 PCIe": 2000, "H100": 3350,
    "A100-SXM4-80GB": 2039, "A100-SXM4-40GB": 1555, "A100 80GB PCIe": 1935, "A100": 1555,
    "RTX 3090": 936, "RTX 4090": 1008, "RTX 5090": 1792, "L40S": 864, "A40": 696, "Tesla T4": 320,
}


def bandwidth_gbs(facts):
    """(GB/s, source). Order: facts["memory_bandwidth_gbs"]; 2 x memory clock x bus width / 8
    (double data rate: two transfers per clock, as CUDA reports the clock); the table by name."""
    if facts.get("memory_bandwidth_gbs"):
        return float(facts["memory_bandwidth_gbs"]), "given"
    clock, bus = facts.get("memory_clock_max_mhz"), facts.get("memory_bus_bits")
    if clock and bus:
        return 2 * clock * 1e6 * bus / 8 / 1e9, f"2 x {clock:.0f} MHz x {bus} bits / 8"
    name = facts.get("name", "")
    hits = [k for k in BANDWIDTH_GBS if k.lower() in name.lower()]
    if hits:
        key = max(hits, key=len)
        return float(BANDWIDTH_GBS[key]), f"data sheet ({key})"
    return None, "unknown"


def roofs(facts):
    """Compute roofs (TFLOP/s) and the bandwidth roof (TB/s) of the GPU in `facts`, and the ridge
    points: the intensity at which a kernel stops being memory-bound."""
    peaks = facts.get("peaks") or peak_tflops(facts)
    bw, source = bandwidth_gbs(facts)
    tbs = bw / 1000 if bw else None
    keys = list(dict.fromkeys(p.peak_key for p in PRECISIONS.values()))
    out = {k: peaks.get(k) for k in keys}
    out.update(bandwidth=tbs, bandwidth_source=source, note=peaks.get("note", ""))
    for k in keys:
        out[f"ridge_{k}"] = out[k] / tbs if out[k] and tbs else None
    return out


def attainable(intensity, peak_tflops, bandwidth_tbs):
    """The roofline: TFLOP/s = min(peak, intensity [FLOP/B] x bandwidth [TB/s])."""
    return min(peak_tflops, intensity * bandwidth_tbs)


def kernel_intensities(lab):
    """FLOP/B if nothing hits in L2 (hierarchy.traffic), per kernel of the lab the model describes."""
    return {n: hierarchy.traffic(t)["global_flop_per_byte"] for n, t in hierarchy.tilings(lab).items()}


def _peak_key(record, ladder, lab):
    prec = PRECISIONS.get(records.ladder_info(record, ladder, lab)["precision"])
    return prec.peak_key if prec else None


def points(record, size=None, intensities=None, lab=None):
    """A row per kernel at one size (default: the largest): its measured TFLOP/s, its intensity
    (`intensities`, default the lab's), the roof there, how close it gets, and which roof binds.
    Kernels without an intensity (cuBLAS: its tiling is not ours to know) get intensity None."""
    r = roofs(record["gpu"])
    size = size or max(x["size"] for x in record["results"])
    if intensities is None:
        intensities = kernel_intensities(lab) if lab is not None else {}
    keys = {ladder: _peak_key(record, ladder, lab) for ladder in records.ladders(record)}
    rows = []
    for x in record["results"]:
        if x["size"] != size:
            continue
        peak = r.get(keys[x["ladder"]]) if keys[x["ladder"]] else None
        ai = intensities.get(x["kernel"])
        roof = attainable(ai, peak, r["bandwidth"]) if ai and peak and r["bandwidth"] else None
        bound = None
        if roof is not None:
            bound = "memory" if ai * r["bandwidth"] < peak else "compute"
        rows.append({"ladder": x["ladder"], "kernel": x["kernel"], "size": size, "tflops": x["tflops"],
                     "intensity": ai, "roof": roof, "pct_of_roof": 100 * x["tflops"] / roof if roof else None,
                     "peak": peak, "bound": bound})
    return rows


def compulsory_intensity(size, element_bytes):
    """FLOP/B if A, B and C each crossed DRAM once (C written in fp32): the best any kernel can do."""
    n = size
    return 2 * n ** 3 / (2 * n * n * element_bytes + n * n * 4)


def plot(record, size=None, path=None, intensities=None, lab=None):
    """Log-log roofline of one bench record: each ladder's compute roof, the bandwidth slope, each
    kernel's point, cuBLAS as a horizontal line per ladder. Returns the Figure; saves a PNG if
    `path` is given."""
    from matplotlib.figure import Figure     # no pyplot: no global state, Agg when saving

    r = roofs(record["gpu"])
    rows = points(record, size, intensities, lab)
    size = rows[0]["size"] if rows else size
    names = records.ladders(record)
    infos = {ladder: records.ladder_info(record, ladder, lab) for ladder in names}
    fig = Figure(figsize=(7.5, 4.8))
    ax = fig.subplots()
    lo, hi = 0.5, 2000.0
    bw = r["bandwidth"]
    palette = ["tab:blue", "tab:orange", "tab:green", "tab:purple", "tab:brown"]
    colors = {ladder: palette[i % len(palette)] for i, ladder in enumerate(names)}
    drawn = set()
    for ladder in names:
        key = _peak_key(record, ladder, lab)
        peak = r.get(key) if key else None
        label = f"{ladder} peak"
        if not peak or key in drawn:
            continue
        if bw:
            xs = [lo, peak / bw, hi]
            ax.plot(xs, [attainable(x, peak, bw) for x in xs], color=colors[ladder], lw=1.5)
        else:
            ax.axhline(peak, color=colors[ladder], lw=1.5)
        drawn.add(key)
        ax.text(hi, peak, f" {label} {peak:.0f}", color=colors[ladder], fontsize=8, va="bottom", ha="right")
    for row in rows:
        c = colors.get(row["ladder"], "k")
        if row["intensity"]:
            ax.plot(row["intensity"], row["tflops"], "o", color=c, ms=6)
            ax.annotate(row["kernel"], (row["intensity"], row["tflops"]), textcoords="offset points",
                        xytext=(5, -3), fontsize=8, color=c)
        else:
            ax.axhline(row["tflops"], color=c, lw=0.8, ls=":")
            ax.text(lo, row["tflops"], f" {row['kernel']} {row['ladder']} {row['tflops']:.0f}", color=c,
                    fontsize=7, va="bottom")
    if size:
        for ladder in names:
            prec = PRECISIONS.get(infos[ladder]["precision"])
            if prec is None:
                continue
            x = compulsory_intensity(size, prec.element_bytes)
            ax.axvline(x, color=colors[ladder], lw=0.6, ls="--", alpha=0.6)
            ax.text(x, 0.06, f"{ladder}: A, B, C once ", color=colors[ladder], fontsize=7, rotation=90,
                    ha="right", va="bottom", transform=ax.get_xaxis_transform())
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_xlabel("arithmetic intensity, FLOP per DRAM byte (block-tile reuse only, no L2 hits)")
    ax.set_ylabel("TFLOP/s")
    gpu = record["gpu"].get("name", "?")
    bw_text = f"{bw:.2f} TB/s ({r['bandwidth_source']})" if bw else "bandwidth unknown"
    ax.set_title(f"Roofline, {gpu}, {size}³; DRAM {bw_text}", fontsize=9)
    if r["note"]:
        ax.text(0.01, 0.01, f"tensor peak: {r['note']}", transform=ax.transAxes, fontsize=7, color="0.4")
    ax.grid(True, which="both", lw=0.3, alpha=0.5)
    fig.tight_layout()
    if path:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, dpi=130)
        writes.note(path)
    return fig
