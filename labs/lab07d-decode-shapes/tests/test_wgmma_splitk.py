"""Hopper's dispatch for long and short K, checked without a GPU: wgmma_splitk (split-K on TMA + wgmma,
kernels/wgmma_splitk.cu) builds for sm_90a without spills and its SASS shows its idea, its launch hook
hands the kernel the maps, grid, workspace and reduce its header describes (the driver faked), and the
dispatcher sends the sweep's split-K shapes to it and the small-K shapes to lab 7c's h6 on Hopper only,
falling back to the next rule elsewhere and where cuda-python is missing. The GPU tests (test_gpu.py)
check the results."""
import ctypes
import math
from dataclasses import replace
from pathlib import Path

import pytest

from common import sweep
from common.testing import lab_of, needs_cuobjdump

LAB = lab_of(__file__)
DISPATCH = LAB.module("dispatch")
LAUNCH = LAB.module("launch")
SMS = 132
FP16, FP32 = "fp16_tensor", "fp32"
ROW = LAB.bind(LAB.table.WGMMA_SPLITK)
ENTRY, FUSED, REDUCE = "hgemm_wgmma_splitk", "hgemm_wgmma_splitk_fused", "wgmma_splitk_reduce"
HOPPER_ONLY = {"wgmma_splitk", "wgmma_decode", "h4", "h6"}


# --- the row and its file ------------------------------------------------------------------------
def test_the_rows_tile_is_half_the_one_the_dispatchers_tiles_count():
    """shape_facts counts `tiles` with the split-k rule's row (splitk_fp16, 128 x 128); wgmma_splitk's
    tile is 64 x 128 (half the partials to add: the file's header), so its own tiles are at most twice
    those, and the split-k-wgmma rule's 2 tiles <= SMs still leaves every one of its tiles an SM."""
    assert LAB.kernel("splitk_fp16").tile == (128, 128) and ROW.tile == (64, 128)
    assert ROW.tiling.value("BK") == LAB.table.WGMMA_BK == 64
    assert ROW.threads == 256                                      # a producer + 1 consumer warpgroup
    stage = (64 * 64 + 64 * 128) * 2
    assert stage == 24 * 1024 and ROW.tiling.value("STAGES") * stage == 144 * 1024   # in flight per SM
    assert ROW.shared_bytes == 6 * stage + 1024 <= 227 * 1024
    assert ROW.args == LAB.table.SPLITK_ARGS and ROW.archs == ("sm_90a",)
    assert ROW.launch_hook.reduce == REDUCE and dict(ROW.launch_hook.fused) == {"": FUSED}


def test_the_row_is_built_for_sm_90a_only():
    assert LAB.build_arch(ROW, "sm_90") == "sm_90a"
    for arch in ("sm_80", "sm_86", "sm_89", "sm_120"):
        assert LAB.build_arch(ROW, arch) is None and "sm_90a" in ROW.unsupported(arch)


@pytest.fixture(scope="module")
def built():
    return LAB.build([ROW], ["sm_90"])


def test_it_builds_for_sm_90a_without_spills_and_with_every_entry(built):
    assert list(built) == [(ROW.name, "sm_90a")]
    entries = built[(ROW.name, "sm_90a")]
    assert set(entries) == {ENTRY, FUSED, REDUCE}
    for entry, r in entries.items():
        assert r["spill_stores"] == r["spill_loads"] == r["stack"] == 0, f"{entry}: {r}"


@pytest.mark.parametrize("arch", ["sm_80", "sm_120"])
def test_the_file_compiles_to_its_stub_off_hopper(tmp_path, arch):
    """HOPPER_STUB: on any other target the two GEMM entries are a trap, so the file builds everywhere
    (as lab 7c's rungs and wgmma_decode do); the plain reduce is the same code as splitk_fp16's."""
    from common.build import compile_cubin
    res = compile_cubin(Path(ROW.path), tmp_path / f"w_{arch}.cubin", arch, {}, flags=ROW.nvcc_flags,
                        include_dirs=LAB._include_dirs(ROW))
    assert set(res) == {ENTRY, FUSED, REDUCE}


@pytest.mark.parametrize("params", [dict(BM=128), dict(BN=64), dict(STAGES=4), dict(STAGES=8)])
def test_the_other_tilings_its_header_allows_build_without_spills(params):
    k = LAB.bind(ROW.with_params(**params))
    for (name, arch), entries in LAB.build([k], ["sm_90"]).items():
        for entry, r in entries.items():
            assert r["spill_stores"] == r["spill_loads"] == r["stack"] == 0, f"{name} {entry}: {r}"


@pytest.fixture(scope="module")
def sass(built):
    needs_cuobjdump()
    from common import sass as sassmod
    counts = sassmod.opcode_counts(sassmod.disassemble(ROW.cubin(LAB.build_dir, "sm_90a")))
    return {e: (dict(c), sassmod.family_counts(c)) for e, c in counts.items()}


def test_the_main_kernel_is_tma_into_wgmma_and_stores_its_partial_tile(sass):
    """HGMMA m64n128k16 (4 per 64-deep slice) after mbarrier waits, TMA loads in the producer, the
    partial tile stored as float2 (STG.E.64), one block barrier (the prologue's), no atomics: the
    reduce is another kernel."""
    ops, fam = sass[ENTRY]
    assert ops.get("HGMMA.64x128x16.F32", 0) >= 4, ops
    assert fam["UTMALDG"] > 0 and ops.get("SYNCS.PHASECHK.TRANS64.TRYWAIT", 0) > 0, ops
    assert fam["STG.64"] > 0, ops
    assert fam["BAR"] == 1, ops
    assert not any(op.startswith(("ATOM", "RED")) for op in ops), ops
    assert fam["HMMA"] == 0 and fam["LDSM"] == 0 and fam["LDGSTS"] == 0, ops     # no mma.sync, ldmatrix, cp.async


def test_the_fused_entry_is_the_same_pipeline_then_the_grid_barrier_and_the_reduce(sass):
    """The same HGMMA and TMA; then the consumers' named barrier (BAR.SYNC with a thread count), one
    arrival and one hand-back (ATOMG), the acquire spin with NANOSLEEP, the partials read from L2
    (STRONG.GPU loads: __ldcg) and added."""
    (ops, fam), (main, main_fam) = sass[FUSED], sass[ENTRY]
    assert fam["HGMMA"] == main_fam["HGMMA"] and fam["UTMALDG"] == main_fam["UTMALDG"], ops
    assert fam["BAR"] > 1, ops
    assert sum(n for op, n in ops.items() if op.startswith("ATOMG")) >= 2, ops
    assert ops.get("NANOSLEEP", 0) >= 1 and ops.get("FADD", 0) > 0, ops
    assert any(op.startswith("LDG") and "STRONG" in op and "128" in op for op in ops), ops


def test_the_reduce_is_loads_and_adds(sass):
    ops, fam = sass[REDUCE]
    assert fam["BAR"] == 0 and ops.get("FADD", 0) > 0 and fam["LDG"] > 0, ops
    assert not any(op.startswith(("RED", "ATOM")) for op in ops), ops


def test_no_entry_touches_local_memory(sass):
    for entry, (ops, fam) in sass.items():
        assert fam["LDL/STL"] == 0, f"{entry}: {ops}"


# --- the splits ------------------------------------------------------------------------------------
@pytest.mark.parametrize("sms", [78, 114, 132, 170])
@pytest.mark.parametrize("M,N,K", [(128, 128, 65536), (256, 256, 32768), (130, 264, 8192), (65, 4096, 4096),
                                   (384, 384, 4096), (128, 128, 520), (1, 8, 1 << 20)])
def test_the_split_is_one_wave_in_whole_slices_with_no_empty_split(sms, M, N, K):
    """floor(SMs / tiles) at most, so every block is resident (the fused form's grid barrier), none
    shorter than MIN_K_PER_SPLIT; then as few splits as give the same slices per split, so none is empty."""
    bm, bn = ROW.tile
    tiles = math.ceil(M / bm) * math.ceil(N / bn)
    s = LAUNCH.splits_for(ROW, M, N, K, sms)
    slices = math.ceil(K / 64)
    per = math.ceil(slices / s)
    assert 1 <= s <= max(1, sms // tiles) and tiles * s <= max(sms, tiles)
    assert s == 1 or K // s >= LAB.table.MIN_K_PER_SPLIT
    assert (s - 1) * per < slices <= s * per                         # the last split has work
    assert LAUNCH.uses_fused(ROW, LAUNCH.tma_splitk_grid(ROW, M, N, s), sms) == (tiles * s <= sms)


def test_the_sweeps_split_k_shapes_get_128_blocks_on_the_h200():
    assert LAUNCH.splits_for(ROW, 128, 128, 65536, SMS) == 64            # 2 tiles x 64: 16 slices of 64 each
    assert LAUNCH.splits_for(ROW, 256, 256, 32768, SMS) == 16            # 8 tiles x 16: 32 slices each


# --- the hook, with the driver faked ---------------------------------------------------------------
@pytest.fixture
def faked(monkeypatch):
    """lab 7c's launch helpers replaced by recorders: no driver, no GPU. Workspaces are numbers."""
    l7c = LAUNCH._lab7c_launch()
    log, ws = [], {"next": 0x100000}

    def workspace(key):
        log.append(("workspace", key))
        return ws["next"]
    monkeypatch.setattr(l7c, "function", lambda kernel, entry, smem, cubin=None: ("f", entry, smem))
    monkeypatch.setattr(l7c, "cubin_for", lambda kernel, func=None: Path("wgmma_splitk.cubin"))
    monkeypatch.setattr(l7c, "_scratch", lambda purpose, nbytes: log.append(("scratch", purpose, nbytes)) or 0x4000)
    monkeypatch.setattr(l7c, "_map", lambda ptr, dtype, rows, cols, box_rows, box_cols, pitch:
                        ("map", ptr, dtype, rows, cols, box_rows, box_cols, pitch))
    monkeypatch.setattr(l7c, "_copy_step", lambda *a: (lambda: log.append(("copy",) + a[:-1])))

    def prepared(f, grid, block, args, smem, stream):
        def go():
            vals = [a.value if isinstance(a, (ctypes.c_void_p, ctypes.c_int32)) else a for a in args]
            log.append(("launch", f[1], tuple(grid), tuple(block), smem, vals))
        return go
    monkeypatch.setattr(l7c, "prepared_launch", prepared)
    monkeypatch.setattr(LAUNCH, "_gpu_sms", lambda: SMS)
    monkeypatch.setattr(LAUNCH, "_workspace", workspace)
    monkeypatch.delenv("LAB07D_NO_FUSED", raising=False)
    l7c._PREPARED.clear()
    yield l7c, log, ws
    l7c._PREPARED.clear()


def _launches(log):
    return [e for e in log if e[0] == "launch"]


def test_the_hook_launches_the_fused_entry_on_one_wave_with_lab_7cs_maps(faked):
    _, log, _ = faked
    M, N, K = 128, 128, 65536
    ROW.launch_hook(ROW, None, M, N, K, 0x1000, 0x2000, 0x3000, 1.0, 0.0, None)
    (launch,) = _launches(log)
    _, entry, grid, block, smem, args = launch
    assert (entry, grid, block, smem) == (FUSED, (1, 2, 64), (256,), ROW.shared_bytes)
    assert args[:3] == [M, N, K]
    assert args[3] == ("map", 0x1000, "float16", M, K, 64, 64, K)         # A: boxes of 64 (K) x BM rows
    assert args[4] == ("map", 0x2000, "float16", K, N, 64, 64, N)         # B: boxes of 64 columns x BK rows
    assert args[5:] == [0x3000, 64, 0x100000]                             # C, splits, the workspace
    assert ("workspace", ("fused", M, N, 64)) in log                      # partials, then 2 zeroed counters
    assert not any(e[0] in ("copy", "scratch") for e in log)


def test_the_hook_takes_the_main_kernel_and_the_reduce_when_the_grid_is_two_waves(faked):
    """Fixed splits beyond one block per SM (with_splits): the fused form's grid barrier would wait for
    blocks that cannot start, so the main kernel writes the partials and the reduce adds them."""
    _, log, _ = faked
    M, N, K = 256, 256, 32768
    k = LAUNCH.with_splits(ROW, 40)                                       # 8 tiles x 40 = 320 blocks
    k.launch_hook(k, None, M, N, K, 0x1000, 0x2000, 0x3000, 1.0, 0.0, None)
    main, reduce = _launches(log)
    assert main[1:4] == (ENTRY, (2, 4, 40), (256,)) and main[5][5:] == [0x3000, 40, 0x100000]
    assert reduce[1:5] == (REDUCE, (math.ceil(M * N / 256),), (256,), 0)
    assert reduce[5] == [M, N, 40, 0x100000, 0x3000]                      # M, N, splits, workspace, C
    assert ("workspace", (M, N, 40)) in log


def test_lab07d_no_fused_turns_the_one_launch_off(faked, monkeypatch):
    _, log, _ = faked
    monkeypatch.setenv("LAB07D_NO_FUSED", "1")
    ROW.launch_hook(ROW, None, 128, 128, 65536, 0x1000, 0x2000, 0x3000, 1.0, 0.0, None)
    assert [e[1] for e in _launches(log)] == [ENTRY, REDUCE]


@pytest.mark.parametrize("N", [1, 129, 4100])
def test_the_hook_pads_b_when_its_pitch_is_not_16_bytes(faked, N):
    """N % 8: B is copied to a pitch of N rounded up to 8 halves first (same stream, inside the call);
    the map keeps N columns, so TMA's out-of-bounds fill gives the zeros past the edge."""
    _, log, _ = faked
    M, K, pb = 300, 1000, (N + 7) // 8 * 8
    ROW.launch_hook(ROW, None, M, N, K, 0x1000, 0x2000, 0x3000, 1.0, 0.0, None)
    assert ("scratch", "B padded", K * pb * 2) in log
    steps = [e for e in log if e[0] in ("copy", "launch")]
    assert steps[0] == ("copy", 0x4000, pb * 2, 0x2000, N * 2, N * 2, K)
    assert steps[1][5][4] == ("map", 0x4000, "float16", K, N, 64, 64, pb)


def test_a_replayed_call_looks_the_workspace_up_again(faked):
    """The launch is prepared once per shape and pointers; the workspace may have been freed and
    allocated again (KEEP_WORKSPACES newer shapes), so every call points the kernel at the current one."""
    _, log, ws = faked
    ROW.launch_hook(ROW, None, 128, 128, 65536, 0x1000, 0x2000, 0x3000, 1.0, 0.0, None)
    ws["next"] = 0x900000
    ROW.launch_hook(ROW, None, 128, 128, 65536, 0x1000, 0x2000, 0x3000, 1.0, 0.0, None)
    first, second = _launches(log)
    assert first[5][-1] == 0x100000 and second[5][-1] == 0x900000


def test_the_sweep_shows_the_rows_splits():
    labels = [e["label"] for e in sweep.entries(LAB, "fp16", "split-k", 128, 128, 65536, SMS)]
    assert "wgmma_splitk (splits=64)" in labels, labels
    names = [e["name"] for e in sweep.entries(LAB, "fp16", "small-k", 4096, 4096, 64, SMS)]
    assert "h4" in names and "h6" in names, names


# --- the dispatcher ---------------------------------------------------------------------------------
HOPPER_PLAN = {  # the sweep's FP16 shapes on an H200 (sm_90, 132 SMs): rule, row
    (128, 128, 65536): ("split-k-wgmma", "wgmma_splitk"), (256, 256, 32768): ("split-k-wgmma", "wgmma_splitk"),
    (4096, 4096, 64): ("small-k-wgmma", "h6"), (4096, 4096, 256): ("small-k-wgmma", "h6"),
    (2048, 2048, 2048): ("tiles-wgmma", "h4"), (4096, 4096, 4096): ("tiles-wgmma", "h4"),
    (8192, 16, 8192): ("narrow-wgmma", "h4"), (8192, 64, 8192): ("narrow-wgmma", "h4"),
    (64, 4096, 4096): ("wgmma-split", "wgmma_decode"), (64, 8192, 8192): ("wgmma", "wgmma_decode"),
}


def test_every_sweep_shape_is_planned_on_hopper_as_the_notes_say():
    shapes = {s for _, s in sweep.resolve_shapes(LAB, "all")}
    assert set(HOPPER_PLAN) - shapes == set()
    for shape in shapes:
        c = DISPATCH.plan(FP16, *shape, sms=SMS, arch="sm_90")
        if shape in HOPPER_PLAN:
            assert (c.rule, c.kernel.base_name) == HOPPER_PLAN[shape], str(c)
        assert c.kernel.refusal(*shape) is None and c.kernel.serves(c.variant, *shape), str(c)
    assert DISPATCH.plan(FP16, 128, 128, 65536, sms=SMS, arch="sm_90").label == \
        "gemm[split-k-wgmma: wgmma_splitk, splits=64]"


@pytest.mark.parametrize("arch", ["sm_80", "sm_86", "sm_89", "sm_120"])
def test_no_other_gpu_gets_a_hopper_row(arch):
    for _, shape in sweep.resolve_shapes(LAB, "all"):
        c = DISPATCH.plan(FP16, *shape, sms=SMS, arch=arch)
        assert c.kernel.base_name not in HOPPER_ONLY and LAB.build_arch(c.kernel, arch), str(c)
    assert DISPATCH.plan(FP16, 128, 128, 65536, sms=SMS, arch=arch).rule == "split-k"
    assert DISPATCH.plan(FP16, 4096, 4096, 64, sms=SMS, arch=arch).rule == "tiles"


def test_the_fp32_dispatcher_is_the_same_on_hopper():
    """The new rules are FP16's: FP32 keeps its rows (>= 83 % of cuBLAS on the sweep, NOTES)."""
    for _, shape in sweep.resolve_shapes(LAB, "all"):
        a, b = (DISPATCH.plan(FP32, *shape, sms=SMS, arch=x) for x in ("sm_90", "sm_89"))
        assert (a.rule, a.kernel.name, a.variant) == (b.rule, b.kernel.name, b.variant), (str(a), str(b))


def test_the_small_k_rule_stops_at_its_threshold_and_at_odd_chunks():
    T = LAB.table.SMALL_K
    assert T % 64 == 0
    assert DISPATCH.plan(FP16, 4096, 4096, T, sms=SMS, arch="sm_90").kernel.base_name == "h6"
    assert DISPATCH.plan(FP16, 4096, 4096, T + 64, sms=SMS, arch="sm_90").kernel.base_name == "h4"
    assert DISPATCH.plan(FP16, 4096, 4100, 64, sms=SMS, arch="sm_90").rule == "tiles"     # N not whole chunks


def test_without_cuda_python_a_hopper_gpu_takes_the_next_rule(monkeypatch):
    """On an H200 whose Python lacks cuda-python (TMA maps), wgmma_splitk and h6 cannot be launched:
    the dispatcher takes split-K on mma.sync and lab 7's t4, as it does for h4 and wgmma_decode."""
    import importlib.util
    import common.device
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name.startswith("cuda") else real(name, *a))
    assert DISPATCH.missing_runtime(ROW) == "cuda.bindings"
    assert DISPATCH.missing_runtime(LAB.table.H6_TILES) == "cuda.bindings"
    monkeypatch.setattr(common.device, "gpu_status", lambda: (True, "an H200 (simulated)"))
    monkeypatch.setattr(LAB, "gpu_arch", lambda: "sm_90")
    c = DISPATCH.plan(FP16, 128, 128, 65536, sms=SMS)
    assert (c.rule, c.kernel.base_name, c.splits) == ("split-k", "splitk_fp16", 132), str(c)
    assert DISPATCH.plan(FP16, 4096, 4096, 64, sms=SMS).rule == "tiles"
    assert DISPATCH.plan(FP16, 4096, 4096, 64, sms=SMS, arch="sm_90").rule == "small-k-wgmma"    # asked, not live


def test_make_sanitize_plans_the_new_rows():
    from common import profiling
    planned = {k.name for k, _, _, _ in profiling.sanitize_plan(LAB)}
    assert {ROW.name, "h6"} <= planned, planned


def test_the_two_launch_and_fused_forms_are_one_row_for_the_gpu_test():
    """test_gpu.py compares the fused entry's bits with the two launches' through a copy of the row
    without `fused` (and another name: prepared launches are cached by name)."""
    two = replace(ROW, name=ROW.name + "[two launches]", launch_hook=replace(ROW.launch_hook, fused=()))
    assert not LAUNCH.uses_fused(two, (1, 1, 128), SMS) and LAUNCH.uses_fused(ROW, (1, 1, 128), SMS)
    assert isinstance(two.launch_hook, LAUNCH.TmaSplitK)
