"""The lab's table and the dispatcher's rules, checked without a GPU: the sweep's shape sets hold what
issue 14 asks for, every rule names a row, and the dispatcher picks what the README says it picks."""
import math

import pytest

from common import sweep
from common.testing import lab_of

LAB = lab_of(__file__)
DISPATCH = LAB.module("dispatch")
SMS = 132                          # the H200 the README's thresholds were measured on
FP32, FP16 = "fp32", "fp16_tensor"


def test_the_shape_sets_hold_the_issues_shapes():
    sets = sweep.shape_sets(LAB)
    assert set(sets) >= {"square", "decode", "skinny", "small-k", "split-k"}
    every = {s for ss in sets.values() for s in ss}
    wanted = {(m, n, n) for m in (1, 4, 16, 64) for n in (4096, 8192)}
    wanted |= {(8192, 16, 8192), (128, 128, 65536), (4096, 4096, 64), (4096, 4096, 4096)}
    assert wanted <= every, wanted - every


def test_shapes_resolve_by_set_name_by_list_and_literally():
    assert [s for _, s in sweep.resolve_shapes(LAB, "split-k")] == sweep.shape_sets(LAB)["split-k"]
    got = sweep.resolve_shapes(LAB, "decode,1x4096x4096,7x9x11")
    assert got[0] == ("decode", (1, 4096, 4096)) and got[-1] == ("given", (7, 9, 11))
    assert len(got) == len(sweep.shape_sets(LAB)["decode"]) + 1          # each shape once


def test_decode_is_memory_bound_and_the_square_compute_bound_on_the_roofline():
    peak, copy = {FP32: 67.0, FP16: 990.0}, 4260.0                      # H200: TFLOP/s, GB/s
    for p in (FP32, FP16):
        assert sweep.bound(1, 8192, 8192, p, peak[p], copy)[0] == "memory"
        assert sweep.bound(4096, 4096, 4096, p, peak[p], copy)[0] == "compute"
    # at M = 1 a weight is 2 FLOP: FP16 moves 1 byte per FLOP, FP32 2
    assert sweep.intensity(1, 8192, 8192, FP16) == pytest.approx(1.0, rel=1e-3)
    assert sweep.intensity(1, 8192, 8192, FP32) == pytest.approx(0.5, rel=1e-3)
    assert sweep.bytes_moved(1, 8192, 8192, FP16) == 2 * (8192 + 8192 * 8192) + 4 * 8192


def test_every_dispatch_rule_names_rows_of_the_lab_and_the_last_catches_every_shape():
    for name, when, test, kernels in LAB.table.DISPATCH:
        assert when and callable(test)
        for prec, k in kernels.items():
            assert LAB.kernel(k).precision == prec, (name, k)
    last = LAB.table.DISPATCH[-1]
    assert set(last[3]) == {FP32, FP16}


@pytest.mark.parametrize("prec,shape,rule,kernel,variant", [
    (FP32, (1, 4096, 4096), "gemv", "gemv_fp32", "m1_vec"),
    (FP32, (3, 8192, 8192), "gemv", "gemv_fp32", "m4_vec"),
    (FP32, (4, 4097, 4096), "gemv", "gemv_fp32", "m4_scalar"),
    (FP16, (1, 4096, 4096), "gemv", "gemv_fp16", "m1_vec"),
    (FP16, (1, 8192, 8192), "skinny", "skinny_fp16", "vec"),         # more than 4096^2 weights
    (FP16, (1, 8190, 8192), "gemv", "gemv_fp16", "m1_scalar"),       # rows not 16-byte chunks
    (FP16, (2, 4096, 4096), "skinny", "skinny_fp16", "vec"),
    (FP16, (2, 4097, 4096), "gemv", "gemv_fp16", "m4_scalar"),
    (FP16, (5, 4096, 4096), "skinny", "skinny_fp16", "vec"),
    (FP16, (16, 8192, 8192), "skinny", "skinny_fp16", "vec"),
    (FP16, (17, 8192, 8192), "skinny", "skinny_fp16", "vec"),        # 128 tiles: no split, and 17 rows
    (FP16, (64, 4096, 4096), "wgmma-split", "wgmma_decode", ""),     # Hopper (the default arch, sm_90)
    (FP16, (33, 4096, 4096), "wgmma-split", "wgmma_decode", ""),
    (FP16, (32, 4096, 4096), "wgmma-split", "wgmma_decode", ""),
    (FP16, (48, 2048, 2048), "wgmma-split", "wgmma_decode", ""),
    (FP16, (64, 1024, 4096), "wgmma-split", "wgmma_decode", ""),
    (FP16, (64, 4224, 4096), "wgmma-split", "wgmma_decode", ""),     # 66 tiles x 2 = 132 blocks: one wave
    (FP16, (64, 4232, 4096), "wgmma", "wgmma_decode", ""),           # 67 tiles: two blocks each would not fit
    (FP16, (64, 8192, 8192), "wgmma", "wgmma_decode", ""),
    (FP16, (48, 8192, 8192), "wgmma", "wgmma_decode", ""),
    (FP16, (40, 8192, 8192), "skinny", "skinny_fp16", "vec"),        # the unsplit build lost with few rows
    (FP16, (32, 8192, 8192), "skinny", "skinny_fp16", "vec"),
    (FP16, (64, 520, 8192), "skinny", "skinny_fp16", "vec"),         # 9 tiles: unmeasured for wgmma_decode
    (FP16, (64, 16384, 4096), "skinny", "skinny_fp16", "vec"),       # 256 tiles: more than one wave
    (FP32, (64, 520, 8192), "few-rows", "splitk_v8", "vec"),         # the 64 x 128 build: few weights
    (FP32, (64, 4096, 1024), "few-rows", "splitk_v8", "vec"),
    (FP16, (16, 8191, 8192), "few-rows", "splitk_fp16", "scalar"),
    (FP16, (16, 4096, 1024), "skinny", "skinny_fp16", "vec"),
    (FP16, (16, 4096, 1020), "gemv-tc", "gemv_fp16_tc", "vec"),       # K not whole chunks, too short for 8 splits
    (FP32, (128, 128, 65536), "split-k", "splitk_fp32", "vec"),
    (FP16, (128, 128, 65536), "split-k-wgmma", "wgmma_splitk", ""),  # Hopper: split-K on wgmma (sm_89: below)
    (FP16, (256, 256, 32768), "split-k-wgmma", "wgmma_splitk", ""),
    (FP32, (8192, 16, 8192), "few-cols", "splitk_fp32", "vec"),
    (FP16, (8192, 16, 8192), "narrow-wgmma", "h4", ""),
    (FP32, (8192, 64, 8192), "narrow", "splitk_v8", "vec"),
    (FP16, (8192, 64, 8192), "narrow-wgmma", "h4", ""),
    (FP16, (1024, 64, 8192), "narrow", "splitk_fp16", "vec"),        # too few rows for h4's 128-row tiles
    (FP32, (8192, 16, 2048), "narrow", "splitk_v8", "vec"),       # K too short for 16 splits, long enough for 8
    (FP32, (16, 4096, 4096), "gemv", "gemv_fp32", "m16_vec"),
    (FP32, (17, 8192, 8192), "few-rows", "splitk_v8", "vec"),
    (FP32, (64, 8192, 8192), "few-rows", "splitk_v8", "vec"),
    (FP32, (33, 4096, 4095), "few-rows", "splitk_v8", "scalar"),
    (FP16, (64, 4096, 4100), "few-rows", "splitk_fp16", "scalar"),
    (FP16, (65, 4096, 4096), "split-k-wgmma", "wgmma_splitk", ""),    # 32 tiles: 4 splits of 128 blocks
    (FP16, (65, 4096, 4100), "split-k", "splitk_fp16", "scalar"),     # K not whole 16-byte chunks: no TMA
    (FP32, (4096, 4096, 4096), "tiles", "v8", "vec"),
    (FP16, (4096, 4096, 4096), "tiles-wgmma", "h4", ""),
    (FP16, (4096, 4096, 64), "small-k-wgmma", "h6", ""),             # C's stores outweigh the multiplies
    (FP16, (4096, 4096, 256), "small-k-wgmma", "h6", ""),
    (FP16, (4096, 4096, 512), "small-k-wgmma", "h6", ""),
    (FP16, (4096, 4096, 576), "tiles-wgmma", "h4", ""),
    (FP16, (4096, 4100, 4096), "tiles", "t4", "scalar"),              # N not whole 16-byte chunks
    (FP32, (4096, 4096, 64), "tiles", "v8", "vec"),
    (FP32, (64, 64, 256), "gemv", "gemv_fp32", "m16_vec"),  # M <= 64: a GEMV, whatever K
    (FP32, (65, 64, 256), "tiles", "v8", "vec"),           # K too short to split
])
def test_the_dispatcher_picks_by_the_tables_rules(prec, shape, rule, kernel, variant):
    c = DISPATCH.plan(prec, *shape, sms=SMS)
    assert (c.rule, c.kernel.base_name, c.variant) == (rule, kernel, variant), str(c)
    assert c.label.startswith(f"gemm[{rule}: {kernel}{'/' + variant if variant else ''}")


def test_split_k_gives_every_sm_a_tile_at_128x128x65536():
    """One 128 x 128 output tile: ceil(132 / 1) = 132 splits, one per SM (the README's prediction)."""
    c = DISPATCH.plan(FP32, 128, 128, 65536, sms=SMS)
    assert c.splits == SMS and c.kernel.name == f"splitk_fp32[splits={SMS}]"
    assert c.shape.tiles == 1


def test_split_k_splits_are_ceil_sms_over_tiles_and_never_shorter_than_the_minimum():
    k = LAB.kernel("splitk_fp32")
    bm, bn = k.tile
    for M, N, K in [(8192, 16, 8192), (256, 256, 32768), (16, 4096, 4096), (1, 1, 300), (128, 128, 1024)]:
        tiles = math.ceil(M / bm) * math.ceil(N / bn)
        want = max(1, min(math.ceil(SMS / tiles), K // LAB.table.MIN_K_PER_SPLIT))
        assert DISPATCH.splits_for(k, M, N, K, SMS) == want


def test_split_k_runs_in_one_launch_only_where_its_grid_fits_in_one_wave(monkeypatch):
    """launch.py: the one-launch form's grid barrier needs every block resident, so it runs only when
    the grid has at most one block per SM; the few-rows rule's one-wave split always does."""
    launch = LAB.module("launch")
    few = LAB.bind(LAB.table.SPLITK_V8_FEW_ROWS)
    c = DISPATCH.plan(FP32, 64, 4096, 4096, sms=SMS)
    assert c.kernel.base_name == "splitk_v8" and c.kernel.launch_hook.fused == few.launch_hook.fused
    tiles = math.ceil(64 / few.tile[0]) * math.ceil(4096 / few.tile[1])
    assert launch.uses_fused(c.kernel, (tiles, 1, c.splits), SMS)
    assert launch.uses_fused(few, (SMS, 1, 1), SMS) and not launch.uses_fused(few, (SMS + 1, 1, 1), SMS)
    assert launch.uses_fused(LAB.kernel("splitk_fp16"), (1, 1, 2), SMS)           # FP16's split has it too
    assert not launch.uses_fused(LAB.kernel("gemv_fp16"), (1, 1, 1), SMS)         # a row without a split has none
    c = DISPATCH.plan(FP32, 128, 128, 65536, sms=SMS)                              # split-k: 132 blocks
    assert c.kernel.base_name == "splitk_fp32" and launch.uses_fused(c.kernel, (1, 1, c.splits), SMS)
    assert not launch.uses_fused(LAB.bind(LAB.table.SPLITK_FP32_NARROW), (64, 1, 8), SMS)   # 512 blocks: two launches
    monkeypatch.setenv("LAB07D_NO_FUSED", "1")
    assert not launch.uses_fused(few, (8, 1, 16), SMS)


def test_the_split_count_follows_the_gpus_sm_count():
    assert DISPATCH.plan(FP16, 128, 128, 65536, sms=84, arch="sm_89").splits == 84      # an RTX 4090-sized GPU
    assert DISPATCH.plan(FP16, 128, 128, 65536, sms=170, arch="sm_89").splits == 170
    # Hopper's wgmma_splitk: one block per SM in whole 64-deep slices (1024 of them), no split empty
    # (2 tiles of 64 x 128 at 128 x 128)
    assert DISPATCH.plan(FP16, 128, 128, 65536, sms=132, arch="sm_90").splits == 64      # 16 slices each
    assert DISPATCH.plan(FP16, 128, 128, 65536, sms=114, arch="sm_90").splits == 57      # an H100 PCIe: 18 slices
    assert DISPATCH.plan(FP16, 128, 128, 65536, sms=170, arch="sm_90").splits == 79      # 13 slices each


def test_every_sweep_shape_gets_a_choice_whose_kernel_takes_it():
    for _, shape in sweep.resolve_shapes(LAB, "all"):
        for prec in (FP32, FP16):
            c = DISPATCH.plan(prec, *shape, sms=SMS)
            assert c.kernel.refusal(*shape) is None, str(c)
            assert c.kernel.serves(c.variant, *shape)


def test_the_sweep_times_gemv_only_at_decode_shapes_and_split_k_without_the_split_at_split_k_shapes():
    names = lambda ladder, set_name, shape: [e["name"] for e in sweep.entries(LAB, ladder, set_name, *shape, SMS)]
    assert names("fp16", "decode", (1, 8192, 8192)) == ["gemv_fp16", "gemv_fp16_tc", "splitk_fp16", "skinny_fp16",
                                                        "t4", "gemm"]
    assert "gemv_fp32" not in names("fp32", "square", (4096, 4096, 4096))
    assert names("fp32", "split-k", (128, 128, 65536)) == ["splitk_fp32", "splitk_v8", "v8",
                                                         "splitk_fp32[splits=1]", "gemm"]
    only = [e["name"] for e in sweep.entries(LAB, "fp32", "decode", 1, 4096, 4096, SMS, wanted=["gemm"])]
    assert only == ["gemm"]


def test_split_k_rows_show_their_splits_in_the_sweep():
    labels = [e["label"] for e in sweep.entries(LAB, "fp32", "split-k", 128, 128, 65536, SMS)]
    assert "splitk_fp32/vec (splits=132)" in labels
    assert "splitk_fp32[splits=1]/vec" in labels


def test_gemv_variants_pick_the_smallest_pass_that_holds_m():
    k = LAB.kernel("gemv_fp16")
    assert [k.variant_for(m, 64, 64) for m in (1, 2, 4, 5, 8, 9, 16, 17, 64)] == \
        ["m1_vec", "m4_vec", "m4_vec", "m8_vec", "m8_vec", "m16_vec", "m16_vec", "m16_vec", "m16_vec"]
    assert k.variant_for(1, 4100, 64) == "m1_scalar"        # N % 8 != 0: rows of B not 16-byte aligned
    assert LAB.kernel("gemv_fp32").variant_for(1, 4100, 64) == "m1_vec"   # N % 4 == 0 is enough for FP32


def test_the_dispatchers_own_rows_keep_their_tile_and_their_fixed_split():
    """few-rows / few-cols / narrow: the row's parameters reach the build (its tile) and its fixed
    split reaches the launch, instead of the split-k rule's ceil(SMs / tiles)."""
    c = DISPATCH.plan(FP32, 64, 8192, 8192, sms=SMS)          # v8's tile, one block per SM: 132 // 16 tiles
    assert c.kernel.tile == (64, 512) and c.splits == 8 and "BM64_BN512" in c.kernel.name
    assert DISPATCH.plan(FP32, 64, 4096, 4096, sms=SMS).splits == 16                 # 132 // 8 tiles
    assert DISPATCH.plan(FP32, 64, 4096, 4096, sms=84).splits == 10
    c = DISPATCH.plan(FP32, 64, 520, 8192, sms=SMS)            # at most 4096 x 2048 weights: 64 x 128 tiles
    assert c.kernel.tile == (64, 128) and c.splits == 132 // 5 and "WN32" in c.kernel.name
    c = DISPATCH.plan(FP32, 8192, 16, 8192, sms=SMS)
    assert c.kernel.tile == (128, 16) and c.splits == 16
    c = DISPATCH.plan(FP16, 8192, 64, 8192, sms=SMS, arch="sm_89")   # (Hopper: lab 7c's h4, 128 x 64)
    assert c.kernel.tile == (128, 64) and c.splits == 4
    c = DISPATCH.plan(FP16, 8192, 64, 8192, sms=SMS, arch="sm_90")
    assert c.kernel.tile == (128, 64) and c.kernel.tiling.params["STAGES"] == 8 and c.kernel.lab == "lab07c-hopper-wgmma"
    c = DISPATCH.plan(FP16, 64, 4096, 4096, sms=SMS, arch="sm_90")   # two blocks per 64 x 64 tile, a cluster
    assert c.kernel.tile == (64, 64) and c.kernel.tiling.value("KSPLIT") == 2 and c.kernel.tiling.params["STAGES"] == 8
    c = DISPATCH.plan(FP16, 64, 8192, 8192, sms=SMS, arch="sm_90")   # 128 tiles: one block each
    assert c.kernel.tile == (64, 64) and c.kernel.tiling.value("KSPLIT") == 1
    assert DISPATCH.plan(FP16, 2, 4097, 4096, sms=SMS).kernel.tiling.params["KU"] == 16
    assert DISPATCH.plan(FP16, 1, 4096, 4096, sms=SMS).kernel.tiling.params["KU"] == 8    # M = 1: the file's own


@pytest.mark.parametrize("M,mt", [(1, 1), (16, 1), (17, 2), (32, 2), (33, 4), (64, 4)])
def test_skinny_takes_the_build_of_ms_class(M, mt):
    """M = 16 does not pay for 64 rows: the rule picks the 16-, 32- or 64-row build (off Hopper: there
    M > 32 goes to wgmma_decode)."""
    c = DISPATCH.plan(FP16, M, 8192, 8192, sms=SMS, arch="sm_89")
    assert c.kernel.base_name == "skinny_fp16" and c.kernel.tiling.params["MT"] == mt, str(c)
    assert c.kernel.tile[0] == 16 * mt


@pytest.mark.parametrize("sms,M,N,K,want", [
    (132, 16, 8192, 8192, 1),       # 128 column tiles of 64: one wave without a split
    (132, 16, 4096, 4096, 2),       # 64 tiles: two splits fill 128 SMs
    (132, 64, 4096, 4096, 2),
    (132, 2, 1024, 4096, 8),        # 16 tiles
    (132, 2, 1024, 1024, 4),        # ... but no split shorter than MIN_K_PER_SPLIT
    (132, 16, 65536, 4096, 1),      # more tiles than SMs
    (84, 16, 4096, 4096, 1),        # an 84-SM GPU: 64 tiles, one wave already
    (170, 16, 2048, 8192, 5),
])
def test_skinny_splits_keep_one_block_per_sm_by_the_gpus_sm_count(sms, M, N, K, want):
    """skinny_fp16's rule (lab.py _one_wave): floor(SMs / tiles), at least 1, at most K / MIN_K_PER_SPLIT.
    (An Ada GPU: on Hopper 64 x 4096^2 goes to the wgmma rule.)"""
    c = DISPATCH.plan(FP16, M, N, K, sms=sms, arch="sm_89")
    assert c.kernel.base_name == "skinny_fp16" and c.splits == want, str(c)
    bm, bn = c.kernel.tile
    tiles = math.ceil(M / bm) * math.ceil(N / bn)
    assert c.splits == max(1, min(sms // tiles, K // LAB.table.MIN_K_PER_SPLIT))


@pytest.mark.parametrize("arch,rules", [("sm_90", ("wgmma-split", "wgmma", "narrow-wgmma", "tiles-wgmma")),
                                        ("sm_80", ("skinny", "skinny", "narrow", "tiles")),
                                        ("sm_86", ("skinny", "skinny", "narrow", "tiles")),
                                        ("sm_89", ("skinny", "skinny", "narrow", "tiles")),
                                        ("sm_120", ("skinny", "skinny", "narrow", "tiles"))])
def test_the_hopper_only_rules_fire_on_hopper_and_are_skipped_elsewhere(arch, rules):
    """wgmma_decode and lab 7c's h4 are built for sm_90a only: on any other GPU the dispatcher takes
    the next rule (skinny_fp16, split-K, lab 7's t4)."""
    for shape, rule in zip([(64, 4096, 4096), (64, 8192, 8192), (8192, 64, 8192), (4096, 4096, 4096)], rules):
        c = DISPATCH.plan(FP16, *shape, sms=SMS, arch=arch)
        assert c.rule == rule, str(c)
        assert LAB.build_arch(c.kernel, arch) is not None


def test_a_rule_whose_row_this_python_cannot_launch_is_skipped_on_a_gpu(monkeypatch):
    """On a Hopper GPU without cuda-python, wgmma_decode (and h4) cannot be launched: TMA's tensor maps
    need it. The dispatcher must take skinny_fp16 instead of failing (a student's .venv does not install
    cuda-python; lab 7c's README says how)."""
    import importlib.util
    import common.device
    wd = DISPATCH.plan(FP16, 64, 4096, 4096, sms=SMS, arch="sm_90").kernel
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name.startswith("cuda") else real(name, *a))
    assert DISPATCH.missing_runtime(wd) == "cuda.bindings"
    assert DISPATCH.missing_runtime(DISPATCH.plan(FP16, 4096, 4096, 4096, sms=SMS, arch="sm_90").kernel) == "cuda.bindings"
    assert DISPATCH.missing_runtime(LAB.kernel("skinny_fp16")) is None
    monkeypatch.setattr(common.device, "gpu_status", lambda: (True, "an H200 (simulated)"))
    monkeypatch.setattr(LAB, "gpu_arch", lambda: "sm_90")
    assert DISPATCH.plan(FP16, 64, 4096, 4096, sms=SMS).rule == "skinny"
    assert DISPATCH.plan(FP16, 4096, 4096, 4096, sms=SMS).rule == "tiles"
    assert DISPATCH.plan(FP16, 64, 4096, 4096, sms=SMS, arch="sm_90").rule == "wgmma-split"    # asked, not live


def test_make_sanitize_checks_every_build_the_dispatcher_launches():
    """The dispatcher's re-tiled rows are other builds of the table's kernels with the same entry
    names: the sanitizer's plan has each once, and a run that launched an entry point fewer times
    than all its builds' shapes together is reported as unfinished."""
    from common import profiling
    from common.sanitizer import parse
    plan = profiling.sanitize_plan(LAB)
    planned = {k.name for k, _, _, _ in plan}
    assert all(k.path for k, _, _, _ in plan)      # bound: make sanitize builds them (lab 7c's h4 where it lives)
    assert {k.lab for k, _, _, _ in plan} == {LAB.name, "lab07c-hopper-wgmma"}
    for _, _, _, rows in LAB.option("DISPATCH"):
        for k in rows.values():
            assert (k if isinstance(k, str) else k.name) in planned | {"v8", "t4"}
    entry = "splitk_fp32_vec"
    shapes = [len(s) for k, v, e, s in plan if e == entry]
    assert len(shapes) >= 2 and all(shapes)
    found = parse("========= ERROR SUMMARY: 0 errors\n", "memcheck", [e for _, _, e, _ in plan], {})
    launched = {e: 10 ** 6 for _, _, e, _ in plan}
    launched[entry] = shapes[0]                      # only the first build's shapes ran
    rows, problems = profiling.summarize(plan, {"memcheck": (found, launched, 0, "log")})
    assert any(f"did not finish {entry}" in p or entry in p for p in problems), problems
    assert any(r["entry"] == entry and r["memcheck"].startswith(f"ran {shapes[0]}/{sum(shapes)}") for r in rows)


def test_only_a_full_sweep_is_named_as_the_record():
    """The notebook and the README read the newest lab07d-sweep_*.json: a run of the default shapes,
    every kernel and ladder. A narrower run (SHAPES=split-k, KERNEL=gemm, LADDER=fp16) is named for
    what it timed, so it never stands in for the whole sweep."""
    import argparse
    from common.sweep import record_stem
    every = list(LAB.ladders)
    assert record_stem(LAB, argparse.Namespace(shapes=None), None, every) == "lab07d-sweep"
    assert record_stem(LAB, argparse.Namespace(shapes="all"), None, every) == "lab07d-sweep"
    assert record_stem(LAB, argparse.Namespace(shapes="split-k"), None, every) == "lab07d-sweep-split-k"
    assert record_stem(LAB, argparse.Namespace(shapes="decode"), ["gemm"], every) == "lab07d-sweep-decode-gemm"
    assert record_stem(LAB, argparse.Namespace(shapes="1x4096x4096"), None, ["fp16"]) == "lab07d-sweep-1x4096x4096-fp16"


def test_wgmma_decodes_launch_puts_a_clusters_blocks_side_by_side_along_x(monkeypatch):
    """The hook's grid (no GPU: lab 7c's launch is replaced by a recorder): ceil(N / 64) tiles times
    KSPLIT blocks along x, ceil(M / 64) along y; the unsplit build one block per tile."""
    launch = LAB.module("launch")
    grids = []

    class Recorder:
        @staticmethod
        def tma_launch(kernel, M, N, K, a, b, c, stream, grid):
            grids.append(grid)
    monkeypatch.setattr(launch, "_lab7c_launch", lambda: Recorder)
    split, wide = LAB.bind(LAB.table.WGMMA_DECODE_SPLIT), LAB.bind(LAB.table.WGMMA_DECODE_WIDE)
    launch.wgmma_clusters(split, None, 64, 4096, 4096, 0, 0, 0, 1.0, 0.0, None)
    launch.wgmma_clusters(split, None, 65, 4097, 8, 0, 0, 0, 1.0, 0.0, None)
    launch.wgmma_clusters(wide, None, 64, 8192, 8192, 0, 0, 0, 1.0, 0.0, None)
    assert grids == [(128, 1), (2 * 65, 2), (128, 1)]


def test_every_sanitizer_tool_runs_the_one_launch_forms_over_several_splits(monkeypatch):
    """make sanitize runs each split-K row as launched under all four tools (no SANITIZE_ENV), and its
    K = 1032 shape gives every one-launch row several splits, so the grid barrier and the reduce over
    splits are under racecheck too (wgmma_splitk's one-launch form: NOTES.md, 64 x 128 tiles)."""
    from common import profiling
    launch = LAB.module("launch")
    monkeypatch.delenv("LAB07D_NO_FUSED", raising=False)
    assert all(profiling.tool_env(LAB, t) == ({}, "") for t in ("memcheck", "racecheck", "synccheck", "initcheck"))
    M, N, K = (130, 260, 1032)
    assert (M, N, K) in LAB.table.SANITIZE_SHAPES
    for k in [k for k in LAB.all_kernels if getattr(k.launch_hook, "fused", None)]:
        assert launch.splits_for(k, M, N, K, 132) >= 2, k.name
    w = LAB.bind(LAB.table.WGMMA_SPLITK)
    s = launch.splits_for(w, M, N, K, 132)
    grid = launch.tma_splitk_grid(w, M, N, s)
    assert s >= 2 and launch.uses_fused(w, grid, 132), (s, grid)
