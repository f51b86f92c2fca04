"""What lab 7's notebooks show, as functions over the kernel table, the drivers and common/.
The notebooks in ../../notebooks/ call these and print or display what they return; the lab's
tests run them without a GPU (tests/test_views.py).

    arch_for(live, record=None)    "sm_90": this GPU's; without one, the recorded GPU's, else sm_90
    recorded()                     -> (record, path): the newest results/lab07-bench_*.json, or (None, None)
    banner(live, gpu_ok, gpu_text, record, path, arch)   the walkthrough's first words: live, or
                                   recorded, and then on which GPU, when, at which commit
    build_rows(arch), build_table(arch)          ptxas per entry point beside the hierarchy model's
                                   estimate, and the occupancy the real count gives
    estimate_vs_ptxas(archs), estimate_vs_ptxas_table(archs)   the estimate against ptxas, per arch
    check_all(shapes=CHECK_SHAPES) -> lab07.check's verdicts, every kernel and variant (needs a GPU)
    sass_table(arch)               static opcode counts per entry point (targets.sass_counts)
    INNER_LOOPS, inner_loops(arch) -> {name: the main loop's SASS, condensed} for v5, v6, t2 (and v7, t3)
    measure(sizes)                 -> (record, path): `make bench`'s measurement at `sizes`, its files
                                      written to reports/notebook/ (ignored by git), not results/
    ladder_charts(record)          -> PNG paths: common.plots.ladder_chart per ladder, in reports/notebook/
    probe_outputs(live)            -> ({entry: output}, where from) or (None, why not): the fragment
                                      probe run now on a GPU, else the newest results/fragments-probe_*.json
    probe_verdicts(outputs)        -> one PASS/FAIL line per probe entry point (fragments.check_probe)
"""
import contextlib
import io
from argparse import Namespace

import numpy as np

import lab07
from lab07 import BUILD_DIR, FP16, FP32, KERNELS, LAB, REPORTS_DIR, RESULTS_DIR
from common import build as nvbuild
from common import fragments, hierarchy, records, report, sass, sass_loops

NOTEBOOK_DIR = REPORTS_DIR / "notebook"      # what a notebook writes (reports/ is ignored by git)
DEFAULT_ARCH = "sm_90"                       # the arch of the recorded results' GPU, when there is nothing else
CHECK_SHAPES = [(257, 129, 512), (130, 260, 104), (96, 384, 1000)]   # scalar-only, FP32 vec, FP16 vec shapes
# The entry points a hierarchy preset describes: t3's scalar variant copies B through registers
# (guarded 2-byte loads) instead of cp.async, a different tiling (tests/test_models_vs_lab.py agrees).
DESCRIBED = {"t3": ["vec"]}
# The main loops the walkthrough shows side by side: name -> (kernel, variant)
INNER_LOOPS = {"v5": ("v5", ""), "v6": ("v6", "vec"), "v7": ("v7", "vec"), "t2": ("t2", "vec"), "t3": ("t3", "vec")}


def arch_for(live, record=None):
    if live:
        return lab07.gpu_arch()
    arch = (record or {}).get("gpu", {}).get("arch")
    return arch if arch in nvbuild.ALL_ARCHS else DEFAULT_ARCH


def recorded():
    return records.newest(RESULTS_DIR, "lab07-bench_*.json")


def banner(live, gpu_ok, gpu_text, record, path, arch):
    """Markdown: what the numbers below are. Recorded results say whose GPU, date and commit."""
    if live:
        return f"**Live.** Every measurement below runs now on **{gpu_text}**; kernels are built for {arch}."
    if gpu_ok:
        head = f"**GPU not used** (`USE_GPU = False`): {gpu_text} is here."
    else:
        head = f"**No GPU here:** {gpu_text.rstrip('.')}."
    if record is None:
        return head + (" No recorded results either (`results/lab07-bench_*.json`): the measurement cells "
                       f"print nothing. SASS and registers are compiled here for {arch}.")
    return (head + " **The measurements below are recorded, not measured now**: "
            f"{records.provenance(record, path, root=LAB.parents[1])}. "
            f"SASS and registers are compiled here for {arch}, that GPU's architecture.")


# --- build: registers ------------------------------------------------------------------------

def _described(k, resources):
    return {v: resources[k.entries[v]] for v in DESCRIBED.get(k.name, k.variants)}


def build_rows(arch):
    """One row per entry point: ptxas's registers, spills and shared memory, the model's estimate
    and the occupancy ptxas's count gives on `arch` (hierarchy.occupancy, as cuda_occupancy.h)."""
    res = lab07.build(FP32 + FP16, [arch])
    rows = []
    for k in FP32 + FP16:
        t = hierarchy.PRESETS.get(k.name)
        est = hierarchy.estimate_registers(t)[0] if t else None
        for v, entry in k.entries.items():
            r = res[(k.name, arch)][entry]
            occ = hierarchy.occupancy(arch, k.threads, r["registers"], r["smem"], k.shared_bytes)
            rows.append({"kernel": k.name + (f"/{v}" if v else ""), "registers": r["registers"], "estimate": est,
                         "spills": r["spill_stores"] + r["spill_loads"], "smem": r["smem"], "dyn_smem": k.shared_bytes,
                         "blocks": occ.blocks_per_sm, "occupancy": occ.fraction, "binding": ", ".join(occ.binding)})
    return rows


def build_table(arch):
    return report.table(build_rows(arch), [
        ("kernel", "kernel", ""), ("registers", "regs (ptxas)", "d"), ("estimate", "regs (model)", "d"),
        ("spills", "spill B", "d"), ("smem", "static smem B", "d"), ("dyn_smem", "dynamic smem B", "d"),
        ("blocks", "blocks/SM", "d"), ("occupancy", "occupancy", ".0%"), ("binding", "limited by", "")],
        title=f"Lab 7 kernels on {arch}: ptxas -v, the hierarchy model's estimate, occupancy with ptxas's count")


def estimate_vs_ptxas(archs):
    """Per kernel: the estimate, ptxas's count on each arch (the largest over the variants the
    preset describes), and the worst relative difference."""
    res = lab07.build(FP32 + FP16, archs)
    rows = []
    for k in FP32 + FP16:
        est = hierarchy.estimate_registers(hierarchy.PRESETS[k.name])[0]
        row = {"kernel": k.name, "estimate": est}
        worst = 0.0
        for a in archs:
            real = max(r["registers"] for r in _described(k, res[(k.name, a)]).values())
            row[a] = real
            worst = max(worst, abs(est - real) / real)
        row["worst"] = worst
        rows.append(row)
    return rows


def estimate_vs_ptxas_table(archs):
    cols = [("kernel", "kernel", ""), ("estimate", "estimate", "d")] + [(a, f"ptxas {a}", "d") for a in archs]
    cols.append(("worst", "worst |est - ptxas| / ptxas", ".0%"))
    return report.table(estimate_vs_ptxas(archs), cols,
                        title="Registers per thread: the hierarchy model's estimate against ptxas")


# --- test ------------------------------------------------------------------------------------

def check_all(shapes=CHECK_SHAPES):
    """lab07.check on every kernel and variant at each shape the variant serves (needs a GPU)."""
    out = []
    for k in FP32 + FP16:
        for v in k.variants:
            for M, N, K in shapes:
                if v == "vec" and k.variant_for(M, N, K) != "vec":
                    continue                   # vec needs aligned rows; scalar takes any shape
                out.append(lab07.check(k.name, M, N, K, variant=v))
    return out


# --- SASS ------------------------------------------------------------------------------------

SASS_COLUMNS = ["FFMA", "LDS", "LDS.128", "LDG", "LDG.128", "STS", "STS.128", "BAR", "HMMA", "LDSM", "LDGSTS",
                "LDL/STL"]


def sass_table(arch):
    import targets
    rows = list(targets.sass_counts(arch).values())
    return report.table(rows, [("kernel", "kernel", "")] + [(c, c, "d") for c in SASS_COLUMNS],
                        title=f"Static SASS opcode counts on {arch} (cuobjdump -sass; an instruction in a loop counts once)")


def inner_loops(arch, names=None):
    """{name: the main loop's lines, condensed}: memory, barrier, branch and HMMA lines verbatim,
    other runs folded into counts (common.sass_loops)."""
    out, texts = {}, {}
    for name in names or INNER_LOOPS:
        kname, variant = INNER_LOOPS[name]
        k = KERNELS[kname]
        lab07.build([k], [arch])
        cubin = k.cubin(BUILD_DIR, arch)
        if cubin not in texts:
            texts[cubin] = sass.disassemble(cubin)
        listing = sass.kernel_listing(texts[cubin], k.entries[variant])
        out[name] = sass_loops.condense(sass_loops.main_loop(listing))
    return out


# --- measure ---------------------------------------------------------------------------------

def measure(sizes=(1024, 2048, 4096)):
    """`make bench` at `sizes`, both ladders, cuBLAS in the same run (targets.bench). Its JSON and
    charts go to reports/notebook/ instead of results/, so a notebook run leaves the recorded results
    alone. Prints nothing unless it fails; returns (record, path)."""
    import targets
    NOTEBOOK_DIR.mkdir(parents=True, exist_ok=True)
    log = io.StringIO()
    try:
        with contextlib.redirect_stdout(log), contextlib.redirect_stderr(log):
            targets.bench(Namespace(ladder="both", sizes=",".join(map(str, sizes))), sizes=list(sizes),
                          stem="lab07-notebook", out_dir=NOTEBOOK_DIR)
    except BaseException:
        print(log.getvalue())
        raise
    return records.newest(NOTEBOOK_DIR, "lab07-notebook_*.json")


def ladder_charts(record):
    """The ladder chart of each ladder in `record` (the chart `make bench` draws), as PNG files."""
    from common.plots import ladder_chart
    paths = []
    peaks = record.get("gpu", {}).get("peaks") or {}
    for ladder in records.ladders(record):
        series, sizes = records.series(record, ladder)
        peak = peaks.get("fp32" if ladder == "fp32" else "fp16_tensor")
        paths.append(ladder_chart(series, sizes, NOTEBOOK_DIR / f"ladder_{ladder}.png", baseline=records.BASELINE,
                                  title=f"Lab 7 {ladder.upper()} ladder on {record['gpu'].get('name', '?')} "
                                        f"({record.get('run', {}).get('date', '?')[:10]})",
                                  ceiling=("peak", peak) if peak else None))
    return paths


# --- fragments -------------------------------------------------------------------------------

def probe_outputs(live):
    """The fragment probe's outputs: measured now on a GPU (probe.run_all), else the newest
    results/fragments-probe_*.json. Returns ({entry: array}, where from) or (None, why not)."""
    if live:
        import probe
        from common.device import gpu_status
        return probe.run_all(), f"measured now on {gpu_status()[1]}"
    rec, path = records.newest(RESULTS_DIR, "fragments-probe_*.json")
    if rec is None:
        return None, ("no probe results recorded yet (results/fragments-probe_*.json): on a machine with a GPU, "
                      "`python3 probe.py` in the lab folder measures and saves them")
    outputs = {e: np.asarray(v, dtype=fragments.PROBE_DTYPES[e]) for e, v in rec["outputs"].items()}
    return outputs, f"recorded: {records.provenance(rec, path, root=LAB.parents[1])}"


def probe_verdicts(outputs):
    """One line per probe: PASS if every lane holds what the model says (WMMA: every element held)."""
    lines = []
    for entry, out in outputs.items():
        bad = fragments.check_probe(entry, out)
        what = "every element held by some lane" if entry == "probe_wmma" else "every lane matches the model"
        lines.append(f"{'PASS' if not bad else 'FAIL'} {entry}: "
                     + (what if not bad else f"{len(bad)} mismatches, first: {bad[0]}"))
    return lines
