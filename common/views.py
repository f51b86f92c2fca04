"""What a lab's walkthrough notebook shows, as functions of the Lab: the notebooks print or display
what these return, and the lab's tests run them without a GPU. The lab's choices come from its
table: INNER_LOOPS {name: (kernel, variant)}, CHECK_SHAPES, HIERARCHY (common.hierarchy).

    arch_for(lab, live, record=None)   "sm_90": this GPU's; without one, the recorded GPU's, else sm_90
    recorded(lab)                  -> (record, path): the newest results/<short>-bench_*.json, or (None, None)
    banner(lab, live, gpu_ok, gpu_text, record, path, arch)   the walkthrough's first words: live, or
                                   recorded, and then on which GPU, when, at which commit
    provenance(lab, record, path)  one line: the record's GPU, date, commit and file
    build_rows(lab, arch), build_table(lab, arch)   ptxas per entry point beside the hierarchy model's
                                   estimate, and the occupancy the real count gives
    estimate_vs_ptxas(lab, archs), estimate_vs_ptxas_table(lab, archs)   the estimate against ptxas
    check_all(lab, shapes=None)    -> lab.check's verdicts, every kernel and variant (needs a GPU)
    sass_table(lab, arch)          static opcode counts per entry point (common.targets.sass_counts)
    inner_loops(lab, arch, names=None) -> {name: the main loop's SASS, condensed}, from INNER_LOOPS
    measure(lab, sizes, out_dir=None)  -> (record, path): `make bench`'s measurement at `sizes`, its
                                   files written to notebook_dir(lab) (reports/notebook/, ignored by git)
    ladder_charts(lab, record)     -> PNG paths: common.plots.ladder_chart per ladder, in notebook_dir(lab)
    probe_outputs(lab, live, measure=False) -> ({entry: output}, where from) or (None, why not): the lab's
                                   fragment probe as recorded on this GPU's architecture, run now
                                   (lab.module("probe")) with measure=True or no such record; without
                                   a GPU, the newest results/fragments-probe_*.json
    probe_verdicts(outputs)        -> one PASS/FAIL line per probe entry point (fragments.check_probe)
"""
import contextlib
import io
from argparse import Namespace
from pathlib import Path

import numpy as np

from . import build as nvbuild
from . import fragments, hierarchy, records, report, sass, sass_loops

DEFAULT_ARCH = "sm_90"                       # the arch of the recorded results' GPU, when there is nothing else
SASS_COLUMNS = ["FFMA", "LDS", "LDS.128", "LDG", "LDG.128", "STS", "STS.128", "BAR", "HMMA", "LDSM", "LDGSTS",
                "LDL/STL"]


def notebook_dir(lab):
    """What a notebook writes: the lab's reports/notebook/ (reports/ is ignored by git), never results/."""
    return lab.reports_dir / "notebook"


def arch_for(lab, live, record=None):
    if live:
        return lab.gpu_arch()
    arch = (record or {}).get("gpu", {}).get("arch")
    return arch if arch in nvbuild.ALL_ARCHS else DEFAULT_ARCH


def recorded(lab):
    return records.newest(lab.results_dir, f"{lab.short}-bench_*.json")


def _root(lab):
    return lab.dir.parents[1]


def provenance(lab, record, path):
    """records.provenance with the file named from the repository's root."""
    return records.provenance(record, path, root=_root(lab))


def banner(lab, live, gpu_ok, gpu_text, record, path, arch):
    """Markdown: what the numbers below are. Recorded results say whose GPU, date and commit."""
    if live:
        return f"**Live.** Every measurement below runs now on **{gpu_text}**; kernels are built for {arch}."
    if gpu_ok:
        head = f"**GPU not used** (`USE_GPU = False`): {gpu_text} is here."
    else:
        head = f"**No GPU here:** {gpu_text.rstrip('.')}."
    if record is None:
        return head + (f" No recorded results either (`results/{lab.short}-bench_*.json`): the measurement cells "
                       f"print nothing. SASS and registers are compiled here for {arch}.")
    return (head + " **The measurements below are recorded, not measured now**: "
            f"{records.provenance(record, path, root=_root(lab))}. "
            f"SASS and registers are compiled here for {arch}, that GPU's architecture.")


# --- build: registers ------------------------------------------------------------------------

def _kernels(lab, arch):
    return [k for k in lab.all_kernels if lab.build_arch(k, arch)]


def build_rows(lab, arch):
    """One row per entry point: ptxas's registers, spills and shared memory, the model's estimate
    (kernels the hierarchy model describes) and the occupancy ptxas's count gives on `arch`
    (hierarchy.occupancy, as cuda_occupancy.h)."""
    kernels = _kernels(lab, arch)
    res = lab.build(kernels, [arch])
    rows = []
    for k in kernels:
        ba = lab.build_arch(k, arch)
        est = hierarchy.estimate_registers(hierarchy.tiling(lab, k.name))[0] if hierarchy.facts(lab, k) else None
        for v, entry in k.entries.items():
            r = res[(k.name, ba)][entry]
            occ = hierarchy.occupancy(arch, k.threads, r["registers"], r["smem"], k.shared_bytes)
            rows.append({"kernel": k.label(v), "registers": r["registers"], "estimate": est,
                         "spills": r["spill_stores"] + r["spill_loads"], "smem": r["smem"], "dyn_smem": k.shared_bytes,
                         "blocks": occ.blocks_per_sm, "occupancy": occ.fraction, "binding": ", ".join(occ.binding)})
    return rows


def build_table(lab, arch):
    return report.table(build_rows(lab, arch), [
        ("kernel", "kernel", ""), ("registers", "regs (ptxas)", "d"), ("estimate", "regs (model)", "d"),
        ("spills", "spill B", "d"), ("smem", "static smem B", "d"), ("dyn_smem", "dynamic smem B", "d"),
        ("blocks", "blocks/SM", "d"), ("occupancy", "occupancy", ".0%"), ("binding", "limited by", "")],
        title=f"{lab.title.split(':')[0]} kernels on {arch}: ptxas -v, the hierarchy model's estimate, "
              "occupancy with ptxas's count")


def estimate_vs_ptxas(lab, archs):
    """Per kernel the model describes: the estimate, ptxas's count on each arch (the largest over
    the variants its tiling describes), and the worst relative difference."""
    kernels = hierarchy.modelled(lab)
    res = lab.build(kernels, archs)
    rows = []
    for k in kernels:
        est = hierarchy.estimate_registers(hierarchy.tiling(lab, k.name))[0]
        row = {"kernel": k.name, "estimate": est}
        worst = 0.0
        for a in archs:
            ba = lab.build_arch(k, a)
            if ba is None:
                row[a] = None
                continue
            real = max(res[(k.name, ba)][k.entries[v]]["registers"] for v in hierarchy.described_variants(lab, k))
            row[a] = real
            worst = max(worst, abs(est - real) / real)
        row["worst"] = worst
        rows.append(row)
    return rows


def estimate_vs_ptxas_table(lab, archs):
    cols = [("kernel", "kernel", ""), ("estimate", "estimate", "d")] + [(a, f"ptxas {a}", "d") for a in archs]
    cols.append(("worst", "worst |est - ptxas| / ptxas", ".0%"))
    return report.table(estimate_vs_ptxas(lab, archs), cols,
                        title="Registers per thread: the hierarchy model's estimate against ptxas")


# --- test ------------------------------------------------------------------------------------

def check_all(lab, shapes=None):
    """lab.check on every kernel and variant at each shape the variant serves (needs a GPU), the kernels
    this GPU can run (on a T4: not those that need sm_80). shapes: default the lab's CHECK_SHAPES (else
    its SELFCHECK_SHAPES)."""
    shapes = shapes or lab.option("CHECK_SHAPES") or lab.option("SELFCHECK_SHAPES") or [(257, 129, 512)]
    arch = lab.gpu_arch()
    return [lab.check(k, M, N, K, variant=v) for k in lab.own() if lab.build_arch(k, arch)
            for v, (M, N, K) in k.cases(shapes)]


# --- SASS ------------------------------------------------------------------------------------

def sass_table(lab, arch):
    from .targets import sass_counts
    rows = list(sass_counts(lab, arch).values())
    return report.table(rows, [("kernel", "kernel", "")] + [(c, c, "d") for c in SASS_COLUMNS],
                        title=f"Static SASS opcode counts on {arch} (cuobjdump -sass; an instruction in a loop counts once)")


def inner_loops(lab, arch, names=None):
    """{name: the main loop's lines, condensed}: memory, barrier, branch and HMMA lines verbatim,
    other runs folded into counts (common.sass_loops). names: keys of the lab's INNER_LOOPS."""
    table = lab.option("INNER_LOOPS", {})
    out, texts = {}, {}
    for name in names or table:
        kname, variant = table[name]
        k = lab.kernel(kname)
        lab.build([k], [arch])
        cubin = lab.cubin(k, arch)
        if cubin not in texts:
            texts[cubin] = sass.disassemble(cubin)
        listing = sass.kernel_listing(texts[cubin], k.entries[variant])
        out[name] = sass_loops.condense(sass_loops.main_loop(listing))
    return out


# --- measure ---------------------------------------------------------------------------------

def measure(lab, sizes=(1024, 2048, 4096), out_dir=None):
    """`make bench` at `sizes`, every ladder, cuBLAS in the same run (common.targets.bench). Its JSON
    and charts go to out_dir (default notebook_dir(lab)) instead of results/, so a notebook run
    leaves the recorded results alone. Prints nothing unless it fails; returns (record, path)."""
    from . import targets
    out = out_dir or notebook_dir(lab)
    out.mkdir(parents=True, exist_ok=True)
    stem = f"{lab.short}-notebook"
    log = io.StringIO()
    try:
        with contextlib.redirect_stdout(log), contextlib.redirect_stderr(log):
            targets.bench(lab, Namespace(ladder="all", sizes=",".join(map(str, sizes))), sizes=list(sizes),
                          stem=stem, out_dir=out)
    except BaseException:
        print(log.getvalue())
        raise
    return records.newest(out, f"{stem}_*.json")


def ladder_charts(lab, record, out_dir=None):
    """The ladder chart of each ladder in `record` (the chart `make bench` draws), as PNG files."""
    from .plots import ladder_chart
    out = out_dir or notebook_dir(lab)
    paths = []
    for ladder in records.ladders(record):
        series, sizes = records.series(record, ladder)
        peak = records.ladder_info(record, ladder, lab)["peak_tflops"]
        paths.append(ladder_chart(series, sizes, out / f"ladder_{ladder}.png", baseline=records.BASELINE,
                                  title=f"{lab.title.split(':')[0]}, {ladder} ladder on {record['gpu'].get('name', '?')} "
                                        f"({record.get('run', {}).get('date', '?')[:10]})",
                                  ceiling=("peak", peak) if peak else None))
    return paths


# --- fragments -------------------------------------------------------------------------------

def probe_outputs(lab, live, results_dir=None, measure=False, arch=None):
    """The fragment probe's outputs, as ({entry: array}, where from) or (None, why not). The layouts
    are fixed by the architecture, so a probe recorded on this GPU's architecture is read, not run
    again (the probe compiles a kernel and starts CUDA in the notebook's process: on a GPU busy with
    other work that took minutes); measure=True runs it now (the lab's probe.run_all), and so does a
    GPU with no record of its architecture. Without a GPU: the newest results/fragments-probe_*.json."""
    rec, path = records.newest(results_dir or lab.results_dir, "fragments-probe_*.json")
    if live:
        arch = arch or lab.gpu_arch()
        mine = _newest_of_arch(results_dir or lab.results_dir, "fragments-probe_*.json", arch)
        if measure or mine[0] is None:
            from .device import gpu_status
            from .errors import NotOnThisGPU
            try:
                return lab.module("probe").run_all(), f"measured now on {gpu_status()[1]}"
            except NotOnThisGPU as e:     # a T4: no mma.m16n8k16 to probe; show the recorded probe
                if rec is None:
                    return None, e.message
                return _probe_arrays(rec), (f"{e.message}; recorded on another GPU: "
                                            f"{records.provenance(rec, path, root=_root(lab))}")
        rec, path = mine
        return _probe_arrays(rec), (f"recorded on this GPU's architecture ({arch}; the layouts are the "
                                    f"architecture's): {records.provenance(rec, path, root=_root(lab))}")
    if rec is None:
        return None, ("no probe results recorded yet (results/fragments-probe_*.json): on a machine with a GPU, "
                      "`python3 probe.py` in the lab folder measures and saves them")
    return _probe_arrays(rec), f"recorded: {records.provenance(rec, path, root=_root(lab))}"


def _probe_arrays(rec):
    return {e: np.asarray(v, dtype=fragments.PROBE_DTYPES[e]) for e, v in rec["outputs"].items()}


def _newest_of_arch(directory, pattern, arch):
    """The newest record of `pattern` measured on a GPU of `arch`, or (None, None)."""
    import json
    found = []
    for p in sorted(Path(directory).glob(pattern)):
        try:
            rec = json.loads(p.read_text())
        except (OSError, ValueError):
            continue
        if rec.get("gpu", {}).get("arch") == arch:
            found.append((rec.get("run", {}).get("date", ""), p.name, rec, p))
    return (found[-1][2], found[-1][3]) if found else (None, None)


def probe_verdicts(outputs):
    """One line per probe: PASS if every lane holds what the model says (WMMA: every element held)."""
    lines = []
    for entry, out in outputs.items():
        bad = fragments.check_probe(entry, out)
        what = "every element held by some lane" if entry == "probe_wmma" else "every lane matches the model"
        lines.append(f"{'PASS' if not bad else 'FAIL'} {entry}: "
                     + (what if not bad else f"{len(bad)} mismatches, first: {bad[0]}"))
    return lines
