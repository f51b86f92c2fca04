"""The hierarchy model: occupancy as cuda_occupancy.h computes it, and the chapter's ratios (no GPU)."""
import pytest

from common import hierarchy as h
from common.errors import CourseError


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


@pytest.mark.parametrize("name,loads_per_fma", [("v3", 2.0), ("v4", 9 / 8), ("v5", 16 / 64), ("v6", 4 / 64),
                                                ("v7", 6 / 128)])
def test_shared_loads_per_fma_are_the_chapters(name, loads_per_fma):
    assert h.traffic(h.PRESETS[name])["loads_per_fma"] == pytest.approx(loads_per_fma)


def test_v5_global_intensity_is_32_flop_per_byte():
    """Chapter 8, section 3: 128 x 128 with BK = 8, nothing from L2: 32 FLOP/B."""
    assert h.traffic(h.PRESETS["v5"])["global_flop_per_byte"] == pytest.approx(32)


def test_a_square_warp_tile_reads_less_shared_memory_per_output():
    """Chapter 8, section 5: v6's warp reads 16 + 128 values for 2048 outputs, v7's 64 + 64 for 4096."""
    v6, v7 = h.traffic(h.PRESETS["v6"]), h.traffic(h.PRESETS["v7"])
    assert v6["bytes_per_output_warp"] == pytest.approx(4 * 144 / 2048)
    assert v7["bytes_per_output_warp"] == pytest.approx(4 * 128 / 4096)
    assert v7["bytes_per_output_warp"] < v6["bytes_per_output_warp"]


def test_t2_reuses_fragments_from_registers():
    t1, t2 = h.traffic(h.PRESETS["t1"]), h.traffic(h.PRESETS["t2"])
    assert t2["shared_loads"] == 6 and t2["math_instructions"] == 16    # 4 A + 2 B per 8 WMMA (16 HMMA.16816)
    assert t2["shared_bytes_per_fma"] < t1["shared_bytes_per_fma"] / 2


def test_register_estimate_terms_for_v5():
    regs, parts = h.estimate_registers(h.PRESETS["v5"])
    assert parts["accumulators"] == 64 and parts["operands"] == 2 * 16 and parts["staging"] == 8
    assert 90 <= regs <= 140            # the chapter: "expect around 100"


def test_prefetch_keeps_the_staging_registers_live():
    plain, pre = h.estimate_registers(h.PRESETS["v7"])[0], h.estimate_registers(h.preset("v7", prefetch=True))[0]
    assert pre > plain


def test_every_preset_is_a_consistent_tiling():
    for t in h.PRESETS.values():
        t.check()


def test_changing_a_preset_recomputes_threads():
    t = h.preset("v7", BM=64)
    assert t.threads == 64 and t.WM == 64


def test_inconsistent_tiling_is_refused():
    with pytest.raises(CourseError):
        h.preset("v7", TN=3)          # 32 lanes x 8 x 3 x 4 do not cover 64 x 64


def test_registers_from_ptxas_takes_the_report_compile_cubin_returns():
    report = {"sgemm_v6_vec": {"registers": 127}, "sgemm_v6_scalar": {"registers": 119}}
    assert h.registers_from_ptxas(report) == 127
    assert h.registers_from_ptxas(report, "sgemm_v6_scalar") == 119
    assert h.registers_from_ptxas({"registers": 40}) == 40


def test_explore_row_with_real_registers():
    row = h.explore(h.PRESETS["v5"], "sm_86", registers=128)
    assert row["registers_source"] == "ptxas" and row["blocks_per_sm"] == 2
    assert row["occupancy"] == pytest.approx(1 / 3)
    assert row["binding"] == "registers"


def test_kernel_define_names_map_to_tiling_fields():
    t = h.preset("v7", V7_PREFETCH=1)
    assert t.prefetch and t.stages == 2 and t.shared_bytes() == 33280     # ptxas: 33280 bytes smem
    assert h.preset("t3", STAGES=3).stages == 3


def test_a_tile_too_big_for_255_registers_spills_but_still_runs():
    row = h.explore(h.preset("v7", TM=16, WM=128, BM=256), "sm_90")
    assert row["registers_estimate"] > 255 and row["spills_expected"]
    assert row["blocks_per_sm"] >= 1


def test_t1_fragments_come_from_global_memory():
    assert h.traffic(h.PRESETS["t1"])["loads_from"] == "global"
    assert h.traffic(h.PRESETS["t2"])["loads_from"] == "shared"
