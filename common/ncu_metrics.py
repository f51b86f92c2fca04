"""Which Nsight Compute metrics to ask for on which chip, and the quantities derived from them.

    CHIPS                          sm_XY -> the chip name `ncu --chips` uses (ga100, ga102, ad102, gh100, gb202)
    chip_for(arch)                 'sm_90' -> 'gh100'; CourseError for an architecture with no table here
    STALL_REASONS[chip]            the warp-stall reasons ncu 2025.3 has on that chip
    fp32_metrics(arch)             duration, throughput, occupancy, shared loads and stores, FFMA, stalls
    tensor_metrics(arch)           duration, throughput, occupancy, tensor pipes, memory, stalls
    shared_loads_per_warp_ffma(m)  shared-load warp instructions / (FFMA thread instructions / 32)
    shared_load_unique_bytes_per_lane(m)  distinct bytes per lane per shared load (after broadcast)
    excess_wavefronts(m, "ld")     shared wavefronts beyond the ideal after broadcast, and that ideal
    top_stalls(m, n)               [(reason, warp cycles per issued instruction), ...], largest first
    pct_of(part, whole)            a percentage, None when either is missing

`m` is one profiled launch's {metric name: value} (see common.ncu.parse_csv).

Why per chip: ncu stops with an error on a metric the chip does not have, and the names differ.
Every metric requested here exists on its chip in ncu 2025.3.1's `--query-metrics` output
(tests/fixtures/ncu-2025.3.1/metric_availability.tsv) or is named in its stock section files
(launch__*, gpu__time_duration, gpu__dram_throughput, sm__maximum_warps_per_active_cycle_pct are
collectable everywhere but not listed by --query-metrics); tests/test_ncu_metrics.py checks both.

What ncu's shared-memory byte counters count. sm__sass_data_bytes_mem_shared_op_ld is NOT
"32 lanes x access size": it counts each distinct address once per instruction, i.e. the bytes left
after broadcast (lanes reading the same word share one read). Measured on the H200: v6's LDS.128s
read As[k][trow*8..] and Bs[k][tcol*8..]; a warp's 32 lanes have only 2 distinct trow (2 distinct
16-byte chunks = 32 bytes) and 16 distinct tcol (256 bytes), and ncu reports (32 + 256) / 2
instructions = 144 bytes per LDS.128: 4.5 per lane, not 16. So the per-lane figure of the table is
"unique bytes per lane", and equals the access width (4, 8, 16) only when no two lanes share an
address. The _st and _ldsm counters have the same description ("bytes required"); in this lab's
kernels no two lanes of a store or an ldmatrix share an address, so for them it makes no difference.

The ideal wavefront count. One shared-memory wavefront moves at most 128 bytes, so
ideal = unique bytes / 128: the fewest wavefronts that could deliver the bytes left after
broadcast (the ideal AFTER broadcast). It is a lower bound, not what a conflict-free kernel gets:
the hardware serves a 64-bit access in two half-warp phases and a 128-bit one in four quarter-warp
phases (two of them merged when the lanes' addresses repeat in pairs), each at least one wavefront,
and the ideal is summed over instructions, not rounded up per instruction. So a kernel whose lanes
share addresses shows an excess with no bank conflict at all (v6: 5 wavefronts per LDS.128 against
an ideal of 1.125). common/banks.py models the phases and the conflicts per instruction; the
fixture tests check its prediction against ncu's wavefronts. It also assumes full warps (a partly
predicated-off warp still costs at least one wavefront). The bank-conflict counters are shown
beside it; they are known to count some other traffic as conflicts.
"""
from .errors import CourseError

CHIPS = {"sm_80": "ga100", "sm_86": "ga102", "sm_89": "ad102", "sm_90": "gh100", "sm_120": "gb202"}

WAVEFRONT_BYTES = 128     # one shared-memory wavefront: 32 banks x 4 bytes

# Warp-stall reasons, the `<reason>` of smsp__average_warps_issue_stalled_<reason>_per_issue_active
# (ncu 2025.3.1 --query-metrics). mio_throttle_pipe_mio (ga102, ad102, gb202) is a part of
# mio_throttle, so it is left out: the reasons below add up to the warp latency per issued instruction.
_COMMON_STALLS = ("barrier", "branch_resolving", "dispatch_stall", "drain", "lg_throttle", "long_scoreboard",
                  "math_pipe_throttle", "membar", "mio_throttle", "misc", "no_instruction", "not_selected",
                  "selected", "short_scoreboard", "sleeping", "tex_throttle", "wait")
STALL_REASONS = {
    "ga100": _COMMON_STALLS + ("imc_miss",),
    "ga102": _COMMON_STALLS + ("imc_miss",),
    "ad102": _COMMON_STALLS + ("imc_miss",),
    "gh100": _COMMON_STALLS + ("imc_miss", "gmma"),
    "gb202": _COMMON_STALLS,                       # no imc_miss on sm_120
}
NOT_STALLS = ("selected", "not_selected")           # issuing, or ready and passed over: not waiting

# The tensor pipe's FP16 (HMMA) part has a different name on each generation. On gh100 the hmma
# counters also count HFMA2.MMA, which ptxas uses as a register move: count HMMA in `make sass`.
_TENSOR_FP = {   # chip -> (busy-cycles metric base, instruction metric base)
    "ga100": ("sm__pipe_tensor_op_hmma_cycles_active", "sm__inst_executed_pipe_tensor_op_hmma"),
    "ga102": ("sm__pipe_tensor_op_hmma_cycles_active", "sm__inst_executed_pipe_tensor_op_hmma"),
    "ad102": ("sm__pipe_tensor_op_hmma_cycles_active_v2", "sm__inst_executed_pipe_tensor_op_hmma_v2"),
    "gh100": ("sm__pipe_tensor_op_hmma_cycles_active", "sm__inst_executed_pipe_tensor_op_hmma"),
    "gb202": ("sm__pipe_tensor_subpipe_hmma_cycles_active", "sm__inst_executed_pipe_tensor_subpipe_hmma"),
}
_TENSOR_ALL = {chip: "sm__pipe_tensor_cycles_active" for chip in _TENSOR_FP}
_TENSOR_ALL["ad102"] = "sm__pipe_tensor_cycles_active_v2"    # the unsuffixed one is deprecated on ad102

# Metric names. Keys are what the derived quantities and tables use.
DURATION = "gpu__time_duration.sum"
SM_PCT = "sm__throughput.avg.pct_of_peak_sustained_elapsed"
MEMORY_PCT = "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"
DRAM_PCT = "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed"
DRAM_BYTES_PER_S = "dram__bytes.sum.per_second"
SM_CLOCK = "gpc__cycles_elapsed.avg.per_second"              # the SM clock while the kernel ran (not locked)
REGISTERS = "launch__registers_per_thread"
SMEM_STATIC = "launch__shared_mem_per_block_static"
SMEM_DYNAMIC = "launch__shared_mem_per_block_dynamic"
OCCUPANCY_ACHIEVED = "sm__warps_active.avg.pct_of_peak_sustained_active"
OCCUPANCY_THEORETICAL = "sm__maximum_warps_per_active_cycle_pct"
LDS_INST = "smsp__sass_inst_executed_op_shared_ld.sum"        # warp-level LDS + LD-to-shared
STS_INST = "smsp__sass_inst_executed_op_shared_st.sum"
LDSM_INST = "smsp__sass_inst_executed_op_ldsm.sum"
LD_BYTES = "sm__sass_data_bytes_mem_shared_op_ld.sum"         # LDS/LD bytes after broadcast (distinct addresses)
ST_BYTES = "sm__sass_data_bytes_mem_shared_op_st.sum"
LDSM_BYTES = "sm__sass_data_bytes_mem_shared_op_ldsm.sum"
LD_WAVEFRONTS = "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"   # LDS, LD and LDSM
ST_WAVEFRONTS = "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum"
LD_BANK_CONFLICTS = "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"
ST_BANK_CONFLICTS = "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum"
FFMA_THREAD_INST = "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum"
FMA_PIPE_PCT = "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active"
WARP_LATENCY = "smsp__average_warp_latency_per_inst_issued.ratio"   # warp cycles per issued instruction
L1_HIT_PCT = "l1tex__t_sector_hit_rate.pct"
L2_HIT_PCT = "lts__t_sector_hit_rate.pct"


def stall_metric(reason):
    return f"smsp__average_warps_issue_stalled_{reason}_per_issue_active.ratio"


def tensor_all_pct(chip):
    return f"{_TENSOR_ALL[chip]}.avg.pct_of_peak_sustained_active"


def tensor_fp_pct(chip):
    return f"{_TENSOR_FP[chip][0]}.avg.pct_of_peak_sustained_active"


def tensor_fp_inst(chip):
    return f"{_TENSOR_FP[chip][1]}.sum"


def chip_for(arch):
    base = arch.rstrip("a")       # sm_90a is gh100 too
    if base not in CHIPS:
        raise CourseError(f"there is no ncu metric table for {arch} (only {', '.join(CHIPS)})",
                          hint="`make ncu KERNEL=v7` collects the full set on any GPU; "
                               "or add the chip to common/ncu_metrics.py")
    return CHIPS[base]


_SPEED_OF_LIGHT = [DURATION, SM_PCT, MEMORY_PCT, DRAM_PCT, SM_CLOCK]
_LAUNCH = [REGISTERS, SMEM_STATIC, SMEM_DYNAMIC, OCCUPANCY_THEORETICAL, OCCUPANCY_ACHIEVED]
_SHARED = [LDS_INST, LDSM_INST, STS_INST, LD_BYTES, LDSM_BYTES, ST_BYTES, LD_WAVEFRONTS, ST_WAVEFRONTS,
           LD_BANK_CONFLICTS, ST_BANK_CONFLICTS]


def _stalls(chip):
    return [WARP_LATENCY] + [stall_metric(r) for r in STALL_REASONS[chip]]


def fp32_metrics(arch):
    """What `make ncu-table` collects: the FP32 ladder's story in shared loads, FFMAs and stalls."""
    chip = chip_for(arch)
    return _SPEED_OF_LIGHT + _LAUNCH + _SHARED + [FFMA_THREAD_INST, FMA_PIPE_PCT] + _stalls(chip)


def tensor_metrics(arch):
    """What `make ncu-tensor` collects: Speed of Light, tensor pipes, memory, occupancy, stalls."""
    chip = chip_for(arch)
    return (_SPEED_OF_LIGHT + [DRAM_BYTES_PER_S, L1_HIT_PCT, L2_HIT_PCT] + _LAUNCH
            + [tensor_all_pct(chip), tensor_fp_pct(chip), tensor_fp_inst(chip)]
            + _SHARED + _stalls(chip))


# --- derived quantities ----------------------------------------------------------------------

def _get(m, name):
    v = m.get(name)
    return v if isinstance(v, (int, float)) else None


def pct_of(part, whole):
    return None if part is None or not whole else 100.0 * part / whole


def shared_loads_per_warp_ffma(m):
    """Warp-level shared-load instructions per warp-level FFMA: smsp__sass_inst_executed_op_shared_ld
    / (smsp__sass_thread_inst_executed_op_ffma_pred_on / 32). Both sides count what one thread does
    once per warp, so this is also a thread's loads per FFMA: the chapter's ratio."""
    lds, ffma = _get(m, LDS_INST), _get(m, FFMA_THREAD_INST)
    return None if lds is None or not ffma else lds / (ffma / 32.0)


def shared_load_unique_bytes_per_lane(m):
    """Distinct bytes per lane per shared-load instruction (LDS, LD), averaged: LD_BYTES / (32 x LDS).
    Not the access width: LD_BYTES counts bytes after broadcast (see the module docstring), so a
    warp whose lanes share addresses comes out below 4/8/16 (v6/vec: 4.5 with LDS.128 only)."""
    nbytes, lds = _get(m, LD_BYTES), _get(m, LDS_INST)
    return None if nbytes is None or not lds else nbytes / (32.0 * lds)


def excess_wavefronts(m, op="ld"):
    """(excess, ideal) shared wavefronts for loads ("ld": LDS, LD and LDSM) or stores ("st").
    ideal = unique bytes (after broadcast) / 128: a lower bound (see the module docstring)."""
    if op == "ld":
        wavefronts, lds, ldsm = _get(m, LD_WAVEFRONTS), _get(m, LD_BYTES), _get(m, LDSM_BYTES)
        nbytes = None if lds is None or ldsm is None else lds + ldsm
    elif op == "st":
        wavefronts, nbytes = _get(m, ST_WAVEFRONTS), _get(m, ST_BYTES)
    else:
        raise ValueError(f"op must be 'ld' or 'st', not {op!r}")
    if wavefronts is None or nbytes is None:
        return None, None
    ideal = nbytes / WAVEFRONT_BYTES
    return wavefronts - ideal, ideal


def top_stalls(m, n=3):
    """The n largest stall reasons present in m, as (reason, warp cycles per issued instruction)."""
    prefix, suffix = "smsp__average_warps_issue_stalled_", "_per_issue_active.ratio"
    found = [(name[len(prefix):-len(suffix)], v) for name, v in m.items()
             if name.startswith(prefix) and name.endswith(suffix) and isinstance(v, (int, float))]
    found = [(r, v) for r, v in found if r not in NOT_STALLS and r != "mio_throttle_pipe_mio"]
    return sorted(found, key=lambda rv: -rv[1])[:n]
