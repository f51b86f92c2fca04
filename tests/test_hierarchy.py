"""The hierarchy model: occupancy as cuda_occupancy.h computes it, and a kernel's tiling derived from
its source plus the lab's facts, on a kernel file written here (no GPU). Lab 7's kernels against the
chapter's ratios and ptxas: labs/lab07-matmul-registers/tests/test_models_vs_lab.py."""
import pytest

from common import hierarchy as h
from common.errors import CourseError
from common.kernels import Kernel


def test_worked_example_256_threads_128_registers():
    """tooling-facts 4.2: 4096 registers per warp, 4 warps per SMSP, 16 warps, 2 blocks."""
    for arch, pct in (("sm_86", 33.3), ("sm_89", 33.3), ("sm_120", 33.3), ("sm_80", 25.0), ("sm_90", 25.0)):
        occ = h.occupancy(arch, threads=256, registers=128)
        assert occ.registers_per_warp == 4096
        assert (occ.blocks_per_sm, occ.warps_per_sm) == (2, 16), arch
        assert 100 * occ.fraction == pytest.approx(pct, abs=0.1), arch
        assert occ.binding == ["registers"]


def test_127_registers_round_up_to_the_same_allocation_as_128():
    assert h.occupancy("sm_90", 256, 127).registers_per_warp == 4096
    assert h.occupancy("sm_90", 256, 127).blocks_per_sm == 2


def test_registers_are_split_over_four_subpartitions():
    # 168 registers: 5376 per warp -> 3 warps per SMSP (16384 / 5376), 12 per SM. A 128-thread block
    # (4 warps) fits 3 times; without the split 65536 / 5376 = 12.19 warps would give the same 3,
    # but 96 threads (3 warps) shows the split: 12 // 3 = 4 blocks.
    assert h.occupancy("sm_90", 128, 168).blocks_per_sm == 3
    assert h.occupancy("sm_90", 96, 168).blocks_per_sm == 4
    # 200 registers: 6400 per warp, 2 per SMSP, 8 per SM: v7's 128 threads fit twice
    assert h.occupancy("sm_90", 128, 200).blocks_per_sm == 2


def test_a_block_over_64k_registers_does_not_fit():
    occ = h.occupancy("sm_86", 1024, 72)
    assert occ.blocks_per_sm == 0 and "registers" in occ.why_zero
    assert h.occupancy("sm_86", 1024, 64).blocks_per_sm == 1


def test_shared_memory_adds_1_kb_reserved_and_rounds_to_128_bytes():
    occ = h.occupancy("sm_90", 256, 32, smem_static=8320)
    assert occ.smem_per_block == 9344                      # 8320 + 1024 = 9344 = 73 x 128
    occ = h.occupancy("sm_90", 256, 32, smem_static=8321)
    assert occ.smem_per_block == 9472


def test_shared_memory_can_bind():
    # 48 KB static on a 100 KB SM: (49152 + 1024) -> 2 blocks
    occ = h.occupancy("sm_86", 128, 32, smem_static=48 * 1024)
    assert occ.blocks_per_sm == 2 and occ.binding == ["shared memory"]
    # the same on sm_90's 228 KB carveout: 4 blocks
    assert h.occupancy("sm_90", 128, 32, smem_static=48 * 1024).blocks_per_sm == 4


def test_dynamic_shared_memory_over_the_opt_in_limit_does_not_fit():
    assert h.occupancy("sm_86", 256, 64, smem_dynamic=100 * 1024).blocks_per_sm == 0
    assert h.occupancy("sm_90", 256, 64, smem_dynamic=100 * 1024).blocks_per_sm == 2


def test_a_smaller_carveout_preference_limits_shared_memory():
    # 10 KB per block; prefer 25 % of 228 KB = 57 KB -> the 64 KB step: 6 blocks, not 20
    occ = h.occupancy("sm_90", 64, 32, smem_static=10 * 1024 - 1024, carveout_percent=25)
    assert occ.carveout == 64 * 1024 and occ.limits["shared memory"] == 6


def test_max_blocks_and_max_warps_per_arch():
    assert h.occupancy("sm_86", 32, 16).blocks_per_sm == 16        # 16 resident blocks on GA10x
    assert h.occupancy("sm_89", 32, 16).blocks_per_sm == 24
    assert h.occupancy("sm_90", 32, 16).blocks_per_sm == 32
    assert h.occupancy("sm_86", 1024, 32).binding[0] == "warps"    # 48 warps: one 32-warp block


def test_real_gpu_facts_override_the_table():
    occ = h.occupancy("sm_90", 256, 64, facts={"threads_per_sm": 1024})
    assert occ.max_warps_per_sm == 32 and occ.blocks_per_sm == 4


def test_unknown_arch_is_a_course_error():
    with pytest.raises(CourseError):
        h.occupancy("sm_70", 256, 64)


def test_registers_from_ptxas_takes_the_report_compile_cubin_returns():
    report = {"sgemm_v6_vec": {"registers": 127}, "sgemm_v6_scalar": {"registers": 119}}
    assert h.registers_from_ptxas(report) == 127
    assert h.registers_from_ptxas(report, "sgemm_v6_scalar") == 119
    assert h.registers_from_ptxas({"registers": 40}) == 40


# A kernel's tiling: its source's parameters and the facts the source cannot say -------------------

WARP_TILED = """
#ifndef BM
#define BM 128      // block tile rows
#endif
#ifndef BN
#define BN 128
#endif
#ifndef BK
#define BK 16
#endif
#ifndef WM
#define WM 64
#endif
#ifndef WN
#define WN 64
#endif
#ifndef WNITER
#define WNITER 4
#endif
#ifndef TM
#define TM 8
#endif
#ifndef TN
#define TN 4
#endif
#ifndef PREFETCH
#define PREFETCH 0
#endif
constexpr int THREADS = (BM / WM) * (BN / WN) * 32;
constexpr int STAGES = PREFETCH ? 2 : 1;
constexpr int AS_LD = BM + 4;
"""

ROW_BY_ROW = """
constexpr int TILE = 16;
constexpr int BM = 128, BN = 128;
constexpr int TM = 8, TN = 8;
constexpr int THREADS = (BM / TM) * (BN / TN);
constexpr int PAD = 8;
constexpr int LDA = TILE + PAD;
"""


def kernel(tmp_path, text, precision="fp32", **row):
    path = tmp_path / "k.cu"
    path.write_text(text)
    return Kernel("k", "k.cu", {"": "k"}, precision, path=str(path), **row)


def test_a_tiling_reads_its_parameters_from_the_source(tmp_path):
    t = h.tiling_of(kernel(tmp_path, WARP_TILED), {"vector": 4, "a_transposed": True, "a_ld": "AS_LD"})
    assert (t.BM, t.BN, t.BK, t.WM, t.WN, t.WNITER, t.TM, t.TN, t.threads) == (128, 128, 16, 64, 64, 4, 8, 4, 128)
    assert (t.vector, t.a_pad, t.stages, t.dtype_bytes) == (4, 4, 1, 4)
    assert t.shared_bytes() == 16 * (132 + 128) * 4


def test_a_rows_defines_are_the_tilings(tmp_path):
    """A tuning build (Kernel.with_params) is modelled as built."""
    t = h.tiling_of(kernel(tmp_path, WARP_TILED).with_params(BK=8), {})
    assert t.BK == 8 and t.name == "k[BK8]"


def test_a_change_goes_to_the_source_so_what_it_derives_follows(tmp_path):
    k = kernel(tmp_path, WARP_TILED)
    facts = {"a_transposed": True, "a_ld": "AS_LD", "prefetch": "PREFETCH"}
    t = h.tiling_of(k, facts, BM=64)
    assert t.threads == 64 and t.WM == 64 and t.a_pad == 4          # AS_LD = BM + 4 followed
    t = h.tiling_of(k, facts, PREFETCH=1)                            # a source parameter by its own name
    assert t.prefetch and t.stages == 2
    assert h.tiling_of(k, facts, prefetch=True).stages == 2          # the field, through its source name


def test_with_changes_threads_follow_the_warp_tiles(tmp_path):
    t = h.tiling_of(kernel(tmp_path, ROW_BY_ROW), {"BK": "TILE", "warp": "rows"}, WM=32)
    assert t.threads == 4 * 1 * 32 and t.WMITER == 2


def test_an_inconsistent_tiling_is_refused(tmp_path):
    with pytest.raises(CourseError, match="cover the warp tile"):
        h.tiling_of(kernel(tmp_path, WARP_TILED), {}, TN=3)      # 32 lanes x 8 x 3 x 4 do not cover 64 x 64


def test_threads_numbered_row_by_row_give_a_warp_strip(tmp_path):
    """No warp tile in the source: 16 thread tiles across, so a warp is 2 thread rows = 16 x 128."""
    t = h.tiling_of(kernel(tmp_path, ROW_BY_ROW), {"BK": "TILE", "warp": "rows", "a_ld": "LDA"})
    assert (t.BK, t.WM, t.WN, t.threads, t.a_pad) == (16, 16, 128, 256, 8)


def test_facts_default_to_the_rows_own(tmp_path):
    k = kernel(tmp_path, ROW_BY_ROW, hierarchy={"BK": "TILE", "warp": "rows"})
    assert h.tiling_of(k).WN == 128


def test_a_tensor_core_tiling_takes_the_precisions_element_size(tmp_path):
    t = h.tiling_of(kernel(tmp_path, WARP_TILED, precision="fp16_tensor"), {"mma": "m16n16k16", "copy": "cp.async"})
    assert t.dtype_bytes == 2 and t.k_step == 16


def test_what_neither_the_source_nor_the_facts_say_is_an_error(tmp_path):
    with pytest.raises(CourseError, match="BK"):
        h.tiling_of(kernel(tmp_path, ROW_BY_ROW), {"warp": "rows"})
    with pytest.raises(CourseError, match="does not define NOPE"):
        h.tiling_of(kernel(tmp_path, ROW_BY_ROW), {"BK": "NOPE", "warp": "rows"})
    with pytest.raises(CourseError, match="unknown hierarchy fact"):
        h.tiling_of(kernel(tmp_path, ROW_BY_ROW), {"BK": "TILE", "warp": "rows", "swizzle": True})
    with pytest.raises(CourseError, match="no parameter"):
        h.tiling_of(kernel(tmp_path, WARP_TILED), {}, NOPE=3)


def test_explore_row_with_real_registers(tmp_path):
    t = h.tiling_of(kernel(tmp_path, ROW_BY_ROW), {"BK": "TILE", "warp": "rows"})
    row = h.explore(t, "sm_86", registers=128)
    assert row["registers_source"] == "ptxas" and row["blocks_per_sm"] == 2
    assert row["occupancy"] == pytest.approx(1 / 3)
    assert row["binding"] == "registers"
