"""A lab under the profilers: what the chapter says the profiler should show, as tables.

    make ncu-table            the lab's FFMA kernels (precision fp32) and cuBLAS SGEMM at 2048^3: time,
                              throughput, occupancy, shared loads per FFMA against the chapter's model,
                              shared wavefronts and bank conflicts, the top stall reasons; after a
                              kernel, NAME:tuned, the build `make tune` recorded for this GPU, if any
    make ncu-tensor           its tensor-core kernels and cuBLAS of the same precision: Speed of Light,
                              tensor pipes, memory, occupancy; NAME:tuned rows as in ncu-table
    make ncu KERNEL=v7        the full ncu report of one kernel, for the Nsight Compute GUI, and where
                              its warp-state samples fall per SASS instruction (common/ncu_source.py)
    make sanitize             compute-sanitizer memcheck, racecheck, synccheck, initcheck over every
                              kernel and variant on small awkward shapes; any finding fails

What a lab's table may set: NCU_TABLE and NCU_TENSOR (kernel names; default: by precision),
PROFILE_SIZE, SANITIZE_SHAPES, SANITIZE_ENV ({tool: ({VARIABLE: value}, why)}: the environment one
tool's run gets, the reason printed under the table). cuBLAS is profiled as `cublas-<precision>`.
Each tool's run is stopped after SANITIZE_TIMEOUT_S: a kernel that never returns fails `make
sanitize` with the launch it was in, instead of hanging it.

Contents, in order:
  1. What is profiled: the lists of kernels, the profile size, the sanitizer's shapes.
  2. The profile mode (`python -m common profile --lab L --kernel v6`): the program ncu runs. It
     launches the kernel once as a warm-up and once more to be profiled, then exits.
     `python -m common profile --lab L --sanitize-run` is the program compute-sanitizer runs.
  3. The targets: one ncu process per kernel, raw CSV kept under reports/ncu/, tables printed.

Every ncu run uses --clock-control none: the GPU runs at its own clocks, as in `make bench`.
Our kernels are picked by name (--kernel-name ENTRY --launch-skip 1 --launch-count 1: the warm-up is
the skipped match). A kernel whose launch hook runs helper entry points (Kernel.helpers: a split pass
before the GEMM, a reduce after it) is profiled over the whole marked call: every launch of the
variant's entry and the helpers in it (--profile-from-start off, a regex of their names, at most one
launch of each), one row each, the helper's named in brackets ("h4_3xtf32 [split]") and given no
TFLOP/s. At some sizes such a hook does not launch the variant's entry at all: the rows are then the
helpers'.
cuBLAS's kernel names are not known in advance, and one call may launch more than one kernel, so
for cuBLAS the profile mode marks the profiled call with cuProfilerStart/Stop and ncu runs with
--profile-from-start off: every kernel of that one call is profiled.
"""
import os
import re
import subprocess
import sys

import numpy as np

from . import check as checking
from . import ncu, report, sanitizer
from . import ncu_metrics as nm
from .errors import CourseError
from .precision import PRECISIONS, precision

# ---------------------------------------------------------------------------------------------
# 1. What is profiled
# ---------------------------------------------------------------------------------------------

CUBLAS_PREFIX = "cublas-"
CUBLAS_MAX_KERNELS = 4        # kernels one cuBLAS call may launch (all of them are profiled)
PROFILE_SIZE = 2048           # M = N = K: every kernel runs its fast path, the GPU is full

# Small, awkward shapes: partial tiles on every side, a 1x1 output, K not a multiple of the
# block's K step, a full interior tile (130x260x104 has one). Kernels that need K % 8 == 0, and
# vector variants, take only the shapes their rules allow (sanitize_plan).
SANITIZE_SHAPES = [(130, 260, 104), (96, 136, 48), (200, 264, 72), (128, 132, 36), (33, 65, 24),
                   (257, 129, 40), (1, 1, 8), (17, 33, 9)]

# memcheck's guard after every allocation (compute-sanitizer --padding, in bytes). A, B and C are
# separate allocations that cudaMalloc places back to back: without a guard, a read just past the
# end of A lands in B, valid memory, and memcheck reports nothing (the first H200 capture of
# broken_kernels.cu showed exactly that). 64 KiB is more than a whole 128-row tile of A at the
# shapes above (128 x 104 floats = 52 KB), so even an access a full tile past the end of a buffer
# lands in the guard, not in the next buffer.
MEMCHECK_PADDING = 64 * 1024

# One tool's run over every entry point and shape takes seconds to a few minutes (racecheck is the
# slowest); a run still going after this long has a launch that never returned.
SANITIZE_TIMEOUT_S = 900


def cublas_name(prec):
    return CUBLAS_PREFIX + precision(prec).name


def cublas_precision(name):
    """'cublas-fp32' -> the Precision, or None for a lab kernel's name."""
    if not name.startswith(CUBLAS_PREFIX):
        return None
    return PRECISIONS.get(name[len(CUBLAS_PREFIX):])


def cublas_label(name):
    return cublas_precision(name).baseline


def ncu_table_names(lab):
    """make ncu-table: the table's NCU_TABLE, else every FFMA (fp32) kernel and cuBLAS SGEMM."""
    names = lab.option("NCU_TABLE")
    if names is None:
        names = [k.name for k in lab.own() if k.precision == "fp32"]
        names += [cublas_name("fp32")] if names else []
    return names


def _kernel_named(lab, name, n=PROFILE_SIZE):
    """A row of the table by name. NAME:tuned is the build `make tune` recorded for this GPU and n^3's
    size class (common.measure.tuned_named: a CourseError if there is none)."""
    from .measure import TUNED, tuned_named
    if name.endswith(TUNED):
        from .device import gpu_facts
        return tuned_named(lab, name, gpu_facts(), n)
    return lab.kernel(name)


def tuned_names(lab, names, n):
    """NAME:tuned after each NAME of `names` for which `make tune` recorded a build for this GPU at n^3."""
    from .measure import TUNED, tuned_named
    from .device import gpu_facts
    facts, out = gpu_facts(), []
    for name in names:
        out.append(name)
        if not cublas_precision(name) and lab.ladder_of(lab.kernel(name)):
            try:
                tuned_named(lab, name + TUNED, facts, n)
                out.append(name + TUNED)
            except CourseError:
                pass
    return out


def ncu_tensor_names(lab):
    """make ncu-tensor: NCU_TENSOR, else every tensor-core kernel and cuBLAS of each such precision."""
    names = lab.option("NCU_TENSOR")
    if names is None:
        ks = [k for k in lab.own() if k.precision != "fp32"]
        names = [k.name for k in ks] + [cublas_name(p) for p in dict.fromkeys(k.precision for k in ks)]
    return names


def profile_names(lab):
    return ncu_table_names(lab) + ncu_tensor_names(lab)


def ncu_dir(lab):
    return lab.reports_dir / "ncu"


def sanitize_dir(lab):
    return lab.reports_dir / "sanitize"


def _label(k, variant):
    return k.label(variant)


def sanitize_shapes(lab):
    return lab.option("SANITIZE_SHAPES", SANITIZE_SHAPES)


def sanitized_rows(lab):
    """What `make sanitize` checks: the lab's own rows, and the other builds of them that the lab
    launches (its table's SANITIZE_ALSO: a dispatcher's re-tiled rows, say), each once."""
    rows, seen = [], set()
    for k in lab.own() + [lab.bind(k) for k in lab.option("SANITIZE_ALSO", [])]:
        if k.name not in seen:
            seen.add(k.name)
            rows.append(k)
    return rows


def _row_named(lab, name):
    for k in sanitized_rows(lab):
        if k.name == name:
            return k
    return lab.kernel(name)


def sanitize_plan(lab, kernels=None):
    """[(kernel, variant, entry, [shapes])] for every entry point: the shapes it may run."""
    plan = []
    for k in kernels or sanitized_rows(lab):
        for v, entry in k.entries.items():
            shapes = [s for s in sanitize_shapes(lab) if k.serves(v, *s)]
            plan.append((k, v, entry, shapes))
    return plan


def _scope(names):
    """'' for the whole list, '_v6-t3' for a subset: a partial run never overwrites a full one's files."""
    return "" if not names else "_" + "-".join(_file_safe(n) for n in names)


def _file_safe(name):
    """A kernel name as part of a file name: v8:tuned -> v8-tuned."""
    return name.replace(":", "-")


def _kernels_option(text, allowed):
    if not text:
        return None
    names = [n.strip() for n in text.split(",") if n.strip()]
    for n in names:
        if n not in allowed:
            raise CourseError(f"there is no kernel {n!r} here", hint=f"choose from {', '.join(allowed)}")
    return names


# ---------------------------------------------------------------------------------------------
# 2. The profile mode: the programs ncu and compute-sanitizer run
# ---------------------------------------------------------------------------------------------

def profile(lab, args):
    """`python -m common profile --lab L ...`: the program the profilers run."""
    if args.sanitize_run:
        return sanitize_run(lab, _kernels_option(args.kernels, [k.name for k in sanitized_rows(lab)]))
    if not args.kernel:
        raise CourseError("profile needs --kernel NAME (or --sanitize-run)",
                          hint=f"names: {', '.join(profile_names(lab))}")
    launch_for_profiler(lab, args.kernel, args.variant, args.size)


def launch_for_profiler(lab, name, variant=None, n=PROFILE_SIZE):
    """Fresh random inputs, one warm-up launch, one profiled launch, synchronize, done."""
    from common.device import init_gpu
    init_gpu()                              # CourseError, not a traceback, without a GPU or PyCUDA
    import pycuda.driver as cuda
    M = N = K = n
    rng = np.random.default_rng()
    prec = cublas_precision(name)
    if prec is not None:
        from .cublas import Cublas
        gemm = prec.cublas(Cublas())
        A, B = prec.random_inputs(M, N, K, rng)
        run, label = (lambda a, b, c: gemm(M, N, K, a, b, c)), cublas_label(name)
    else:
        from .lab import check_shape
        k = _kernel_named(lab, name, n)
        check_shape(k, M, N, K)
        variant = k.variant_for(M, N, K) if variant is None else variant
        lab.build([k], [lab.gpu_arch()])
        run, label = lab.launcher(k, M, N, K, variant), f"{_label(k, variant)} ({k.entries.get(variant)})"
        A, B = lab.random_inputs(k, M, N, K, rng)
    a, b, c = cuda.to_device(A), cuda.to_device(B), cuda.mem_alloc(M * N * 4)
    try:
        cuda.memset_d32(c, checking.NAN_BITS, M * N)
        run(a, b, c)                        # warm-up: the launch ncu skips
        cuda.Context.synchronize()
        with ncu.profiler_range():
            run(a, b, c)                    # the profiled launch
            cuda.Context.synchronize()
    except cuda.Error as e:
        raise CourseError(f"{label} failed on the GPU at {M}x{N}x{K}: {e}",
                          hint="run `make sanitize` to find the bad access") from None
    finally:
        a.free(); b.free(); c.free()
    print(f"profile: {label} at {M}x{N}x{K}: one warm-up launch, then the profiled one")


LAUNCHED = re.compile(r"^sanitize-run: launched (\S+) (\d+)x(\d+)x(\d+)\s*$", re.M)


def sanitize_run(lab, names=None):
    """Every entry point on each of its sanitizer shapes, once, synchronizing after each launch.
    C is poisoned with a memset first and A, B come from the host, so initcheck sees every input
    initialised. Prints one 'sanitize-run: launched ENTRY MxNxK' line per launch that completed."""
    from common.device import init_gpu
    init_gpu()
    import pycuda.driver as cuda
    kernels = [_row_named(lab, n) for n in names] if names else sanitized_rows(lab)
    lab.build(kernels, [lab.gpu_arch()])
    rng = np.random.default_rng()
    for k, v, entry, shapes in sanitize_plan(lab, kernels):
        for (M, N, K) in shapes:
            A, B = lab.random_inputs(k, M, N, K, rng)
            a, b, c = cuda.to_device(A), cuda.to_device(B), cuda.mem_alloc(M * N * 4)
            try:
                cuda.memset_d32(c, checking.NAN_BITS, M * N)
                lab.launcher(k, M, N, K, v)(a, b, c)
                cuda.Context.synchronize()
            except cuda.Error as e:
                print(f"sanitize-run: FAILED {entry} {M}x{N}x{K}: {e}", flush=True)
                raise CourseError(f"{entry} failed at {M}x{N}x{K}: {e}",
                                  hint="the sanitizer's report above says where") from None
            finally:
                a.free(); b.free(); c.free()
            print(f"sanitize-run: launched {entry} {M}x{N}x{K}", flush=True)


# ---------------------------------------------------------------------------------------------
# 3. The targets
# ---------------------------------------------------------------------------------------------

def needs_gpu(target, lab):
    """The GPU's architecture, or one line saying this target needs a GPU (checked before ncu)."""
    from .measure import needs_gpu as facts_or_error
    return facts_or_error(target, lab)["arch"]


def program(lab, *args):
    """The argv that runs `python -m common profile --lab L ...` from the repository root."""
    return [sys.executable, "-m", "common", "profile", "--lab", str(lab.dir), *args]


def profile_program(lab, name, n, variant=None):
    """The argv of the profile mode for one kernel (what ncu runs)."""
    argv = program(lab, "--kernel", name)
    if variant:
        argv += ["--variant", variant]
    return argv + ["--size", str(n)]


def ncu_argv(lab, ncu_exe, name, n, **options):
    """The ncu command for one kernel of the lab, or for cuBLAS (see the module docstring)."""
    if cublas_precision(name):
        return ncu.command(ncu_exe, profile_program(lab, name, n), profile_from_start=False,
                           launch_count=CUBLAS_MAX_KERNELS, **options)
    k = _kernel_named(lab, name, n)
    variant = k.variant_for(n, n, n)
    if k.helpers:
        # A launch hook that runs helper entry points before, after or instead of the variant's: every
        # launch of the marked call among those entries (a split pass and its GEMM: both rows)
        entries = (k.entries[variant], *k.helpers.values())
        names = "|".join(re.escape(e) for e in entries)
        return ncu.command(ncu_exe, profile_program(lab, name, n, variant), kernel=f"regex:^({names})$",
                           profile_from_start=False, launch_count=len(entries), **options)
    return ncu.command(ncu_exe, profile_program(lab, name, n, variant), kernel=k.entries[variant],
                       launch_skip=1, launch_count=1, **options)


def _collect(lab, target, table, names, metrics_for, n):
    """Run ncu once per kernel; keep the raw output; return the parsed launches."""
    arch = needs_gpu(target, lab)
    exe = ncu.find_ncu()
    metrics = metrics_for(arch)
    lab.build([_kernel_named(lab, x, n) for x in names if not cublas_precision(x)], [arch])
    out_dir = ncu_dir(lab)
    out_dir.mkdir(parents=True, exist_ok=True)
    LAB = lab.dir
    launches, failures, files = [], [], []
    for i, name in enumerate(names):
        report.progress(i, len(names), f"ncu: {name} at {n}^3")
        stem = out_dir / f"{table}_{_file_safe(name)}_{arch}"
        try:
            run = ncu.run(ncu_argv(lab, exe, name, n, metrics=metrics), cwd=lab.dir.parents[1], what=name)
        except CourseError as e:
            if getattr(e, "run", None):
                stem.with_suffix(".log").write_text(e.run.log())
            if isinstance(e, ncu.CountersUnavailable):
                raise
            failures.append(f"{name}: {e.message} (log: {stem.with_suffix('.log').relative_to(LAB)})")
            continue
        stem.with_suffix(".log").write_text(run.log())
        stem.with_suffix(".csv").write_text("\n".join(ncu.csv_lines(run.stdout)) + "\n")
        files.append(str(stem.with_suffix(".csv").relative_to(LAB)))
        found = ncu.parse_csv(run.stdout)
        if not found:
            failures.append(f"{name}: ncu printed no CSV rows (log: {stem.with_suffix('.log').relative_to(LAB)})")
        launches += [(name, launch, run.argv) for launch in found]
    report.progress(len(names), len(names), "ncu: done")
    return arch, exe, launches, failures, files


def _value(m, name):
    """A metric's number, or None (missing, n/a, or text)."""
    v = m.get(name)
    return v if isinstance(v, (int, float)) else None


def _label_of(lab, name, entry, n=PROFILE_SIZE):
    if cublas_precision(name):
        return cublas_label(name)
    k = _kernel_named(lab, name, n)
    label = _label(k, next((v for v, e in k.entries.items() if e == entry), None))
    helper = next((h for h, e in k.helpers.items() if e == entry), None)
    return label + (f" [{helper}]" if helper else "") + (" (tuned)" if k.name != k.base_name and name != k.name else "")


def _part_of_the_gemm(lab, name, entry, n):
    """Whether a launch of `entry` is one of a kernel's helper launches (part of the GEMM, so that no
    TFLOP/s can be worked out from n^3 and its time alone)."""
    return not cublas_precision(name) and entry in _kernel_named(lab, name, n).helpers.values()


def _common_columns(lab, name, launch, n):
    m, u = launch.metrics, launch.units
    # --print-units base: a duration is in nanoseconds unless the units row says otherwise
    us = ncu.to_microseconds(_value(m, nm.DURATION), u.get(nm.DURATION) or "nsecond")
    registers = _value(m, nm.REGISTERS)
    stalls = nm.top_stalls(m, 3)
    return {"kernel": _label_of(lab, name, launch.kernel, n), "entry": launch.kernel, "time_us": us,
            "tflops": None if not us or _part_of_the_gemm(lab, name, launch.kernel, n) else 2.0 * n ** 3 / (us * 1e-6) / 1e12,
            "sm_mhz": ncu.to_megahertz(_value(m, nm.SM_CLOCK), u.get(nm.SM_CLOCK) or "cycle/second"),
            "sm_pct": _value(m, nm.SM_PCT), "memory_pct": _value(m, nm.MEMORY_PCT), "dram_pct": _value(m, nm.DRAM_PCT),
            "registers": None if registers is None else int(registers),
            "smem_per_block_kb": _kb(_value(m, nm.SMEM_STATIC), _value(m, nm.SMEM_DYNAMIC)),
            "occupancy_theoretical_pct": _value(m, nm.OCCUPANCY_THEORETICAL),
            "occupancy_achieved_pct": _value(m, nm.OCCUPANCY_ACHIEVED),
            "warp_cycles_per_issue": _value(m, nm.WARP_LATENCY),
            "top_stalls": ", ".join(f"{r} {v:.1f}" for r, v in stalls) or None,
            "stalls": dict(stalls)}


def _kb(static, dynamic):
    return None if static is None and dynamic is None else ((static or 0) + (dynamic or 0)) / 1024


def _millions(v):
    return v / 1e6 if isinstance(v, (int, float)) else None


def _shared_columns(m):
    ld_excess, ld_ideal = nm.excess_wavefronts(m, "ld")
    st_excess, st_ideal = nm.excess_wavefronts(m, "st")
    return {"lds_inst_M": _millions(m.get(nm.LDS_INST)), "ldsm_inst_M": _millions(m.get(nm.LDSM_INST)),
            "lds_unique_bytes_per_lane": nm.shared_load_unique_bytes_per_lane(m),
            "ld_wavefronts_M": _millions(m.get(nm.LD_WAVEFRONTS)), "ld_ideal_M": _millions(ld_ideal),
            "ld_excess_pct": nm.pct_of(ld_excess, ld_ideal),
            "ld_bank_conflicts_M": _millions(m.get(nm.LD_BANK_CONFLICTS)),
            "st_wavefronts_M": _millions(m.get(nm.ST_WAVEFRONTS)), "st_ideal_M": _millions(st_ideal),
            "st_excess_pct": nm.pct_of(st_excess, st_ideal),
            "st_bank_conflicts_M": _millions(m.get(nm.ST_BANK_CONFLICTS))}


def fp32_row(lab, name, launch, n, chip=None):
    """One kernel's row of `make ncu-table`, from its profiled launch."""
    m = launch.metrics
    k = lab.kernels.get(name.split(":")[0])             # NAME:tuned has NAME's model
    return {**_common_columns(lab, name, launch, n), **_shared_columns(m),
            "ffma_thread_inst_M": _millions(m.get(nm.FFMA_THREAD_INST)),
            "fma_pipe_pct": _value(m, nm.FMA_PIPE_PCT),
            "lds_per_warp_ffma": nm.shared_loads_per_warp_ffma(m),
            "model_lds_per_ffma": k.model.get("smem_loads_per_ffma") if k else None}


def tensor_row(lab, name, launch, n, chip):
    """One kernel's row of `make ncu-tensor`."""
    m, u = launch.metrics, launch.units
    return {**_common_columns(lab, name, launch, n), **_shared_columns(m),
            "tensor_all_pct": _value(m, nm.tensor_all_pct(chip)), "tensor_fp_pct": _value(m, nm.tensor_fp_pct(chip)),
            "hmma_inst_M": _millions(m.get(nm.tensor_fp_inst(chip))),
            "dram_gb_per_s": ncu.to_gigabytes_per_second(_value(m, nm.DRAM_BYTES_PER_S),
                                                         u.get(nm.DRAM_BYTES_PER_S) or "byte/second"),
            "l1_hit_pct": _value(m, nm.L1_HIT_PCT), "l2_hit_pct": _value(m, nm.L2_HIT_PCT)}


K = ("kernel", "kernel", "")
FP32_TABLES = [
    ("time, throughput, occupancy", [
        K, ("time_us", "time us", ".1f"), ("tflops", "TFLOP/s", ".1f"), ("sm_mhz", "SM MHz", ".0f"),
        ("sm_pct", "SM %", ".1f"), ("dram_pct", "DRAM %", ".1f"), ("fma_pipe_pct", "FMA pipe %", ".1f"), ("registers", "regs", "d"),
        ("occupancy_theoretical_pct", "occ. theor. %", ".1f"), ("occupancy_achieved_pct", "occ. achieved %", ".1f")]),
    # ncu's shared-load bytes are counted after broadcast (common/ncu_metrics.py explains, with v6's
    # numbers): hence "unique B/lane" (not the access width) and an ideal that is a lower bound.
    ("shared memory. LDS/FFMA = shared-load warp instructions / (FFMA thread instructions / 32), beside\n"
     "the chapter's model; unique B/lane = shared-load bytes after broadcast / (32 x LDS): 4, 8, 16 for\n"
     "LDS.32, .64, .128 only if no two lanes read the same address (less: broadcasts); ideal\n"
     "wavefronts = unique bytes / 128, the ideal after broadcast (a lower bound: LDS.64/.128 are served\n"
     "in half/quarter-warp phases of at least one wavefront each, so broadcasts leave an excess without\n"
     "any bank conflict; common/banks.py predicts the phases); excess = (measured - ideal) / ideal; bank\n"
     "conflicts as ncu counts them (known to count other traffic too). M = millions", [
        K, ("lds_inst_M", "LDS M", ".2f"), ("ffma_thread_inst_M", "FFMA thr. M", ".1f"),
        ("lds_per_warp_ffma", "LDS/FFMA", ".4f"), ("model_lds_per_ffma", "model", ".4f"),
        ("lds_unique_bytes_per_lane", "unique B/lane", ".1f"), ("ld_wavefronts_M", "ld wavefr. M", ".2f"),
        ("ld_excess_pct", "excess %", "+.1f"),
        ("ld_bank_conflicts_M", "ld confl. M", ".2f"), ("st_excess_pct", "st excess %", "+.1f"),
        ("st_bank_conflicts_M", "st confl. M", ".2f")]),
    ("where the warps wait: warp cycles per issued instruction, in total and for the top 3 stall reasons", [
        K, ("warp_cycles_per_issue", "cycles/issue", ".1f"), ("top_stalls", "top stall reasons", "")]),
]
TENSOR_TABLES = [
    ("Speed of Light and tensor pipes (tensor FP = the HMMA part, % of peak over active cycles)", [
        K, ("time_us", "time us", ".1f"), ("tflops", "TFLOP/s", ".1f"), ("sm_mhz", "SM MHz", ".0f"),
        ("sm_pct", "SM %", ".1f"), ("tensor_all_pct", "tensor %", ".1f"), ("tensor_fp_pct", "tensor FP %", ".1f"),
        ("hmma_inst_M", "tensor FP inst. M", ".2f"), ("memory_pct", "memory %", ".1f"), ("dram_pct", "DRAM %", ".1f")]),
    ("memory and occupancy (shared: LDS + LDSM wavefronts against the ideal after broadcast, unique bytes / 128,\n"
     "as in make ncu-table)", [
        K, ("dram_gb_per_s", "DRAM GB/s", ".0f"), ("l1_hit_pct", "L1 hit %", ".1f"), ("l2_hit_pct", "L2 hit %", ".1f"),
        ("ld_excess_pct", "smem ld excess %", "+.1f"), ("ld_bank_conflicts_M", "ld confl. M", ".2f"),
        ("registers", "regs", "d"), ("smem_per_block_kb", "smem KB/block", ".1f"),
        ("occupancy_theoretical_pct", "occ. theor. %", ".1f"), ("occupancy_achieved_pct", "occ. achieved %", ".1f")]),
    ("where the warps wait: warp cycles per issued instruction, in total and for the top 3 stall reasons", [
        K, ("warp_cycles_per_issue", "cycles/issue", ".1f"), ("top_stalls", "top stall reasons", "")]),
]


def print_tables(rows, tables, title):
    print(title)
    for i, (what, cols) in enumerate(tables, 1):
        print()
        print(report.table(rows, cols, title=f"{i}/{len(tables)} {what}"))
    for r in rows:
        if r["kernel"].startswith("cuBLAS"):
            print(f"\n{r['kernel']} ran {r['entry']}")


def _profile_table(lab, args, target, table, names, metrics_for, tables, row_for, scope=""):
    n = args.size or lab.option("PROFILE_SIZE", PROFILE_SIZE)
    arch, exe, launches, failures, files = _collect(lab, target, table, names, metrics_for, n)
    chip = nm.chip_for(arch)
    rows = [row_for(lab, name, launch, n, chip) for name, launch, _ in launches]
    from .device import gpu_facts
    facts = gpu_facts()
    version = ncu.ncu_version(exe)
    modes = "; ".join(cublas_precision(x).cublas_mode for x in names if cublas_precision(x))
    title = (f"\nncu {version} on {facts['name']} ({arch}, chip {chip}), M = N = K = {n}; one profiled launch per "
             f"kernel after a warm-up; GPU clocks not locked (--clock-control none); {modes or 'no cuBLAS row'}")
    LAB = lab.dir
    if rows:
        print_tables(rows, tables, title)
    if chip == "gh100" and table == "tensor":
        print("\nnote: on sm_90 the tensor FP counters count HMMA, HGMMA (wgmma, which cuBLAS uses) and HFMA2.MMA "
              "(register moves, not math); `make sass` counts HMMA exactly")
    record = {"what": f"make {target}", "gpu": facts, "run": report.run_info(LAB), "ncu": version, "chip": chip,
              "size": n, "clock_control": "none", "rows": rows, "raw_csv": files, "failures": failures,
              "launches": [{"name": name, "kernel": launch.kernel, "command": argv, "metrics": launch.metrics,
                            "units": launch.units} for name, launch, argv in launches]}
    path = report.write_json(ncu_dir(lab) / f"{table}_{arch}{scope}.json", record)
    print(f"\nfull data: {path.relative_to(LAB)}; raw ncu CSV: {', '.join(files) or 'none'}")
    if failures:
        raise CourseError("ncu failed on some kernels:\n  " + "\n  ".join(failures),
                          hint="each .log under reports/ncu/ holds the command and everything ncu printed")
    return rows


def _nothing_to_profile(lab, target, names):
    if not names:
        raise CourseError(f"{lab.name} has no kernels for `make {target}`",
                          hint="ncu-table profiles FFMA (fp32) kernels, ncu-tensor tensor-core ones")


def _chosen_names(lab, args, target, allowed):
    """The kernels a profiling table runs: KERNELS= (checked against the table's names and NAME:tuned
    before anything runs), else the table's names with NAME:tuned after NAME where this GPU has a record."""
    from .measure import TUNED
    _nothing_to_profile(lab, target, allowed)
    chosen = _kernels_option(args.kernels, allowed + [a + TUNED for a in allowed if not cublas_precision(a)])
    needs_gpu(target, lab)
    n = args.size or lab.option("PROFILE_SIZE", PROFILE_SIZE)
    return chosen, chosen or tuned_names(lab, allowed, n)


def ncu_table(lab, args):
    chosen, names = _chosen_names(lab, args, "ncu-table", ncu_table_names(lab))
    return _profile_table(lab, args, "ncu-table", "fp32", names, nm.fp32_metrics, FP32_TABLES,
                          fp32_row, _scope(chosen))


def ncu_tensor(lab, args):
    chosen, names = _chosen_names(lab, args, "ncu-tensor", ncu_tensor_names(lab))
    return _profile_table(lab, args, "ncu-tensor", "tensor", names, nm.tensor_metrics, TENSOR_TABLES,
                          tensor_row, _scope(chosen))


SUMMARY_COLUMNS = [K, ("time_us", "time us", ".1f"), ("tflops", "TFLOP/s", ".1f"), ("sm_pct", "SM %", ".1f"),
                   ("memory_pct", "memory %", ".1f"), ("registers", "regs", "d"),
                   ("occupancy_achieved_pct", "occ. achieved %", ".1f"), ("top_stalls", "top stall reasons", "")]


def ncu_full(lab, args):
    """`make ncu KERNEL=name`: the full set (--set full) into one report file for the GUI. Any kernel
    of the lab's own (not only the tables' rows), cuBLAS by its profile name."""
    name = args.kernel
    names = profile_names(lab)
    names += [k.name for k in lab.own() if k.name not in names]
    if not name:
        raise CourseError("make ncu needs KERNEL=<name>", hint=f"e.g. make ncu KERNEL={names[0] if names else 'name'}; "
                                                                f"names: {', '.join(names)}")
    from .measure import TUNED
    base = name[:-len(TUNED)] if name.endswith(TUNED) else None
    if name not in names and not (base in names and not cublas_precision(base)):
        raise CourseError(f"there is no kernel {name!r} to profile",
                          hint=f"names: {', '.join(names)} (NAME{TUNED}: the build `make tune` recorded for this GPU)")
    n = args.size or lab.option("PROFILE_SIZE", PROFILE_SIZE)
    arch = needs_gpu("ncu", lab)
    exe = ncu.find_ncu()
    if not cublas_precision(name):
        lab.build([_kernel_named(lab, name, n)], [arch])
    LAB = lab.dir
    ncu_dir(lab).mkdir(parents=True, exist_ok=True)
    out = ncu_dir(lab) / f"{_file_safe(name)}_{arch}_{n}.ncu-rep"
    report.progress(0, 1, f"ncu --set full: {name} at {n}^3 (a minute or two: about 40 passes)")
    run = ncu.run(ncu_argv(lab, exe, name, n, section_set="full", export=out), cwd=lab.dir.parents[1], what=name)
    out.with_suffix(".log").write_text(run.log())
    report.progress(1, 1, "ncu: done")
    raw = ncu.run([exe, "--import", str(out), "--csv", "--page", "raw", "--print-units", "base"], what=str(out))
    rows = [_common_columns(lab, name, launch, n) for launch in ncu.parse_csv(raw.stdout)]
    print(report.table(rows, SUMMARY_COLUMNS, title=f"\n{name} at {n}^3 on {arch} (key values; everything else is in the report)"))
    _source_summary(exe, out, LAB)
    print(f"\nreport: {out.relative_to(LAB)}  (open it in the Nsight Compute GUI: ncu-ui {out.relative_to(LAB)})")


def _source_summary(exe, rep, root):
    """The report's warp-state samples per SASS instruction (common/ncu_source.py), printed and written
    next to it as <report>.source.txt; a report without them gets one line saying why, not an error."""
    from . import ncu_source
    try:
        src = ncu.run([exe, "--import", str(rep), "--csv", "--page", "source", "--print-source", "sass"], what=str(rep))
        text = ncu_source.report(ncu_source.summarize(src.stdout))
    except (ValueError, CourseError) as e:
        print(f"\n(no per-instruction samples: {e})")
        return
    path = rep.with_suffix(".source.txt")
    path.write_text(text + "\n")
    print("\nwhere the samples fall, per SASS instruction (" + str(path.relative_to(root)) + "):\n" + text)


# --- make sanitize ---------------------------------------------------------------------------

def launched_entries(text):
    """{entry: launches completed} from a sanitize-run's output."""
    counts = {}
    for m in LAUNCHED.finditer(text):
        counts[m.group(1)] = counts.get(m.group(1), 0) + 1
    return counts


def run_tool(argv, cwd, env, timeout_s):
    """(output, exit status) of one compute-sanitizer run; a run still going after timeout_s is killed
    with everything it started (its own process group) and its exit status is None: what it printed
    until then is kept, so its last 'sanitize-run: launched' line says how far it got."""
    import signal
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout_s)
        return out + err, proc.returncode
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        return out + err, None


def next_launch(plan, launched):
    """'ENTRY MxNxK': the first launch of the plan that did not complete (sanitize_run's order), or None."""
    seen = {}
    for _, _, entry, shapes in plan:
        for M, N, K in shapes:
            seen[entry] = seen.get(entry, 0) + 1
            if seen[entry] > launched.get(entry, 0):
                return f"{entry} {M}x{N}x{K}"
    return None


def tool_env(lab, tool):
    """({VARIABLE: value}, why) that `tool`'s run gets from the lab's SANITIZE_ENV, or ({}, "")."""
    variables, why = lab.option("SANITIZE_ENV", {}).get(tool, ({}, ""))
    return dict(variables), why


def _assignments(variables):
    """['NAME=value', ...]: an environment as a shell command line would set it."""
    return [f"{k}={v}" for k, v in variables.items()]


def summarize(plan, results, timeout_s=SANITIZE_TIMEOUT_S):
    """The summary table's rows, and one line per problem.
    plan: sanitize_plan(); results: {tool: (Findings, launched entries, exit status, log name)}; an
    exit status of None is a run killed after timeout_s (run_tool)."""
    rows, problems = [], []
    need = {}                           # launches expected per entry point: two builds of one kernel
    for _, _, entry, shapes in plan:    # (a re-tiled row) share its entry names
        need[entry] = need.get(entry, 0) + len(shapes)
    for k, v, entry, shapes in plan:
        row = {"kernel": _label(k, v), "entry": entry, "shapes": len(shapes)}
        for tool, (found, launched, _, _) in results.items():
            status, done = found.status(entry), launched.get(entry, 0)
            if done < need[entry]:      # the run stopped: say how far it got, and what it found
                status = f"ran {done}/{need[entry]}" + ("" if status == "clean" else f", {status}")
            row[tool] = status
        rows.append(row)
    known = {entry for _, _, entry, _ in plan}
    for tool, (found, launched, returncode, log) in results.items():
        for owner, errors, warnings in found.problems():
            if owner not in known:
                rows.append({"kernel": "(no lab kernel)", "entry": owner or "(none named)", "shapes": None,
                             **{t: "" for t in results}, tool: found.status(owner)})
            problems.append(f"{tool}: {owner or 'a report naming no kernel'}: {found.status(owner)} (see {log})")
        not_run = sorted({entry for _, _, entry, _ in plan if launched.get(entry, 0) < need[entry]})
        if not_run:
            problems.append(f"{tool}: did not finish {', '.join(not_run)} (see {log})")
        if returncode is None:
            problems.append(f"{tool}: stopped after {timeout_s} s, in the launch of {next_launch(plan, launched)}: "
                            f"a kernel that never returns (a barrier or a wait that nobody completes)? (see {log})")
        elif not found.finished:
            problems.append(f"{tool}: compute-sanitizer printed no summary: it did not finish (see {log})")
        elif returncode != 0 and not found.problems() and not not_run:
            problems.append(f"{tool}: the run exited with status {returncode} (see {log})")
    return rows, problems


def sanitizer_argv(exe, tool, program):
    """The compute-sanitizer command of `make sanitize` for one tool; capture_fixtures.sh runs
    broken_kernels.cu with it too. memcheck gets the guard when this compute-sanitizer has --padding."""
    padding = MEMCHECK_PADDING if tool == "memcheck" and sanitizer.supports_padding(exe) else 0
    return sanitizer.command(exe, tool, program, padding=padding)


def sanitize(lab, args):
    own = sanitized_rows(lab)
    names = _kernels_option(args.kernels, [k.name for k in own])
    arch = needs_gpu("sanitize", lab)
    exe = sanitizer.find_sanitizer()
    kernels = [_row_named(lab, x) for x in names] if names else own
    kernels = [k for k in kernels if lab.build_arch(k, arch)]
    lab.build(kernels, [arch])
    plan = sanitize_plan(lab, kernels)
    entries = [entry for _, _, entry, _ in plan]
    prog = program(lab, "--sanitize-run")
    if names:
        prog += ["--kernels", ",".join(k.name for k in kernels)]
    LAB = lab.dir
    SANITIZE_DIR = sanitize_dir(lab)
    SANITIZE_DIR.mkdir(parents=True, exist_ok=True)
    results, envs = {}, {}
    timeout_s = lab.option("SANITIZE_TIMEOUT_S", SANITIZE_TIMEOUT_S)
    for i, tool in enumerate(sanitizer.TOOLS):
        report.progress(i, len(sanitizer.TOOLS), f"compute-sanitizer --tool {tool}: {len(entries)} entry points")
        argv = sanitizer_argv(exe, tool, prog)
        extra, why = tool_env(lab, tool)
        if extra:
            envs[tool] = {"variables": extra, "why": why}
        text, status = run_tool(argv, lab.dir.parents[1], {**os.environ, "PYTHONUNBUFFERED": "1", **extra}, timeout_s)
        log = SANITIZE_DIR / f"{tool}_{arch}{_scope(names)}.txt"
        said = f"killed after {timeout_s} s" if status is None else f"exit status {status}"
        log.write_text(f"$ {' '.join([*_assignments(extra), *argv])}\n# {said}\n{text}")
        results[tool] = (sanitizer.parse(text, tool, entries, {k.source: k.name for k in kernels}),
                         launched_entries(text), status,
                         str(log.relative_to(LAB)))
    report.progress(len(sanitizer.TOOLS), len(sanitizer.TOOLS), "compute-sanitizer: done")
    rows, problems = summarize(plan, results, timeout_s)
    shapes = ", ".join("x".join(map(str, s)) for s in sanitize_shapes(lab))
    cols = [K, ("entry", "entry point", ""), ("shapes", "shapes", "d")] + [(t, t, "") for t in sanitizer.TOOLS]
    padding = MEMCHECK_PADDING if sanitizer.supports_padding(exe) else 0
    guard = (f"memcheck with --padding {padding} (a guard after every buffer)" if padding
             else "memcheck WITHOUT --padding (this compute-sanitizer lacks it): an access just past one buffer "
                  "may land in the next and go unseen")
    print(report.table(rows, cols, title=f"\ncompute-sanitizer {sanitizer.sanitizer_version(exe)} on {arch}; "
                                         f"shapes (MxNxK, each where the kernel's rules allow): {shapes}; {guard}"))
    for tool, e in envs.items():
        print(f"{tool} ran with {' '.join(_assignments(e['variables']))}: {e['why']}")
    record = {"what": "make sanitize", "run": report.run_info(LAB), "arch": arch, "shapes": sanitize_shapes(lab),
              "sanitizer": sanitizer.sanitizer_version(exe), "memcheck_padding": padding,
              "timeout_s": timeout_s, "environment": envs, "rows": rows, "problems": problems,
              "logs": {t: r[3] for t, r in results.items()},
              "totals": {t: {"errors": r[0].total_errors, "warnings": r[0].total_warnings} for t, r in results.items()}}
    path = report.write_json(SANITIZE_DIR / f"sanitize_{arch}{_scope(names)}.json", record)
    print(f"\nfull data: {path.relative_to(LAB)}; the sanitizer's own reports: "
          f"reports/sanitize/<tool>_{arch}{_scope(names)}.txt")
    if problems:
        raise CourseError("compute-sanitizer found problems:\n  " + "\n  ".join(problems),
                          hint="each report names the source line (the kernels are built with -lineinfo)")
    print("sanitize: clean: no kernel has a finding under any of the four tools")
    return rows


TARGETS = {"ncu-table": ncu_table, "ncu-tensor": ncu_tensor, "ncu": ncu_full, "sanitize": sanitize}
