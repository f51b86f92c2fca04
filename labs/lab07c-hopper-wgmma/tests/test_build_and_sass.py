"""What lab 7c claims about its compiled code, checked without a GPU: every rung builds for sm_90a (and
for nothing else) without spills, ptxas never serializes a wgmma, and each rung's one idea is
visible in SASS (static counts: an instruction in a loop counts once). Also the table's own
promises: a clear refusal on a GPU that is not Hopper, and on a K that TMA cannot describe."""
import re

import pytest

from common import targets
from common.build import ALL_ARCHS
from common.errors import CourseError
from common.lab import check_shape
from common.sass import disassemble, kernel_listing
from common.testing import build_for_every_arch, lab_of, needs_cuobjdump

LAB = lab_of(__file__)
FP16 = ["h1", "h2", "h3", "h4", "h5", "h6", "h7"]
TF32 = ["h4_tf32", "h6_tf32", "h4_3xtf32", "h6_3xtf32"]   # TF32 wgmma: one pass (h4, h6) and 3xTF32 (tests/test_3xtf32.py,
                                                            # tests/test_h6_3xtf32.py)
ANY_K = ["h4_3xtf32", "h6_3xtf32"]   # TMA reads A only through its split parts, at a padded pitch
RUNGS = FP16 + TF32                  # the wgmma rungs
TMA = RUNGS[1:]                      # every rung from h2 on loads by TMA through mbarriers
BUILT = ["t4_tma"] + RUNGS           # every row of this lab's own: t4_tma keeps lab 7's mma.sync
SPECIALIZED = ["h3", "h4", "h5", "h6", "h7"] + TF32
# ptxas's "wgmma ... serialized" performance warnings: with one, ptxas waits after every wgmma (4x slower)
SERIALIZED = re.compile(r"C75(09|10|11)|wgmma[^\n]*serializ", re.I)


def test_the_table_has_every_rung_and_lab_7s_t4_to_compare():
    assert [k.name for k in LAB.ladders["fp16"]] == ["t4", "t4_tma"] + FP16
    assert [k.name for k in LAB.ladders["tf32"]] == ["h4_tf32", "h6_tf32"]
    assert [k.name for k in LAB.ladders["3xtf32"]] == ["k8", "h4_3xtf32", "h6_3xtf32"]
    assert LAB.kernel("k8").lab == "lab07a-tf32-tensor-cores"
    assert LAB.kernel("t4").lab == "lab07-matmul-registers"
    assert [k.name for k in LAB.own()] == BUILT


def test_every_rung_is_built_for_sm_90a_and_for_no_other_architecture():
    for name in BUILT:
        k = LAB.kernel(name)
        assert LAB.build_arch(k, "sm_90") == "sm_90a", name
        for arch in ALL_ARCHS:
            if arch != "sm_90":
                assert LAB.build_arch(k, arch) is None, f"{name} would be built for {arch}"


@pytest.mark.parametrize("arch", ["sm_80", "sm_86", "sm_89", "sm_120"])
def test_every_row_says_why_it_skips_a_gpu_that_is_not_hopper(arch):
    """The skip a student on another GPU reads names what is missing and which GPU has it."""
    for k in LAB.own():
        why = k.unsupported(arch)
        assert why and "sm_90a" in why and "Hopper GPU (H100, H200)" in why, f"{k.name} on {arch}: {why}"


def test_every_rung_builds_for_sm_90a_without_spills():
    res = build_for_every_arch(LAB)
    assert sorted(res) == sorted((name, "sm_90a") for name in BUILT)
    assert set(res[("h4_3xtf32", "sm_90a")]) == {"sgemm_h4_3xtf32", "split_h4_3xtf32"}   # the split pass too
    assert set(res[("h6_3xtf32", "sm_90a")]) == {"sgemm_h6_3xtf32", "split_h6_3xtf32"}   # A's split pass
    for (name, arch), entries in res.items():
        for entry, r in entries.items():
            assert r["spill_stores"] == r["spill_loads"] == r["stack"] == 0, f"{entry} on {arch}: {r}"


def test_ptxas_never_serializes_a_wgmma():
    """C7509-C7511: ptxas could not prove the wgmma pipeline safe and inserted a wait after each one."""
    build_for_every_arch(LAB)
    for name in RUNGS:
        k = LAB.kernel(name)
        log = k.cubin(LAB.build_dir, "sm_90a").with_suffix(".ptxas.log")
        assert log.exists(), f"{log} is missing: common/build.py writes it beside every cubin"
        bad = [line for line in log.read_text().splitlines() if SERIALIZED.search(line)]
        assert not bad, f"{name}: " + "\n".join(bad)


@pytest.fixture(scope="module")
def sass():
    needs_cuobjdump()
    return {c["kernel"]: c for c in targets.sass_counts(LAB, "sm_90", LAB.own()).values()}


@pytest.fixture(scope="module")
def listings():
    """Full SASS lines per rung: the opcode counts drop wgmma's lower-case shape (64x256x16)."""
    needs_cuobjdump()
    build_for_every_arch(LAB)        # cached when built; a test run alone (or its xdist worker) builds
    out = {}
    for name in RUNGS:
        k = LAB.kernel(name)
        text = disassemble(k.cubin(LAB.build_dir, "sm_90a"))
        out[name] = kernel_listing(text, k.entries[""])
    return out


def count(sass, name, prefix):
    return sum(n for op, n in sass[name]["opcodes"].items() if op.startswith(prefix))


def test_every_rung_multiplies_with_wgmma_and_never_with_mma_sync(sass):
    for name in RUNGS:
        assert count(sass, name, "HGMMA") > 0, f"{name}: no HGMMA"
        assert sass[name]["HMMA"] == 0 and sass[name]["LDSM"] == 0, f"{name}: mma.sync or ldmatrix"
        assert count(sass, name, "WARPGROUP.ARRIVE") > 0, f"{name}: no wgmma.fence"


def test_fp16_rungs_multiply_fp16_and_the_tf32_rungs_tf32(listings):
    for name in FP16:
        hg = [line for line in listings[name] if "HGMMA" in line]
        assert hg and all("x16" in line and "TF32" not in line for line in hg), f"{name}: {hg[:2]}"
    for name in TF32:
        hg = [line for line in listings[name] if "HGMMA" in line]
        assert hg and all(".TF32" in line and "x8" in line for line in hg), f"{name}: {hg[:2]}"


def test_the_tile_grows_to_m64n256_from_h4_on(listings):
    for name in ["h1", "h2", "h3"]:
        assert any("HGMMA.64x128x16" in line for line in listings[name]), name
    for name in ["h4", "h5", "h6", "h7", "h4_tf32", "h6_tf32"]:    # the 3xTF32 rungs: 128 x 128 (running sums)
        assert any("HGMMA.64x256x" in line for line in listings[name]), name


def test_t4_tma_is_t4s_mma_sync_fed_by_tma_alone(sass):
    """The row's one idea: t4's multiply (HMMA.16816 from LDSM, and LDSM.16.MT88 for B) with every copy
    a TMA load under an mbarrier, no cp.async, no wgmma, one block barrier per tile."""
    c = sass["t4_tma"]
    assert count(sass, "t4_tma", "HMMA.16816.F32") > 0 and count(sass, "t4_tma", "LDSM.16.MT88") > 0, c["opcodes"]
    assert count(sass, "t4_tma", "UTMALDG.2D") > 0 and c["LDGSTS"] == 0, c["opcodes"]
    assert count(sass, "t4_tma", "SYNCS.ARRIVE.TRANS64") > 0 and count(sass, "t4_tma", "SYNCS.PHASECHK") > 0
    assert count(sass, "t4_tma", "HGMMA") == 0
    assert count(sass, "t4_tma", "BAR.SYNC") == 2, c["opcodes"]      # after the mbarrier init, once per tile


def test_h1_copies_with_cp_async_and_tma_loads_from_h2_on(sass):
    assert sass["h1"]["LDGSTS"] > 0 and count(sass, "h1", "UTMALDG") == 0
    for name in TMA:
        assert count(sass, name, "UTMALDG") > 0, f"{name}: no TMA load"
        assert sass[name]["LDGSTS"] == 0, f"{name}: still cp.async"


def test_mbarriers_from_h2_on(sass):
    assert count(sass, "h1", "SYNCS") == 0
    for name in TMA:
        assert count(sass, name, "SYNCS.ARRIVE.TRANS64") > 0, f"{name}: no mbarrier arrive"
        assert count(sass, name, "SYNCS.PHASECHK") > 0, f"{name}: no mbarrier wait"


def test_warp_specialized_rungs_move_registers_with_setmaxnreg(sass):
    for name in ["h1", "h2"]:
        assert count(sass, name, "USETMAXREG") == 0, name
    for name in SPECIALIZED:
        assert count(sass, name, "USETMAXREG.DEALLOC") > 0 and count(sass, name, "USETMAXREG.TRY_ALLOC") > 0, name


def test_h5_multicasts_b_across_its_cluster(sass):
    assert sass["h5"]["opcodes"].get("UTMALDG.2D.MULTICAST", 0) > 0
    assert count(sass, "h5", "UCGABAR") > 0                      # the cluster barriers
    for name in ["h2", "h3", "h4", "h6", "h7"] + TF32:
        assert sass[name]["opcodes"].get("UTMALDG.2D.MULTICAST", 0) == 0, name


def test_h6_stores_c_by_tma_alone_through_swizzled_chunks(sass, listings):
    """h6's one idea: no thread writes global memory; each consumer writes its accumulators into shared
    memory (STS.64, never a generic ST), fences them for the copy engine and meets its warpgroup at a
    named barrier (bar.sync 1 + consumer, 128 threads), and one thread stores each 64 x 32 chunk by TMA
    (UTMASTG) and commits it. Every rung before it stores C from registers (STG) and never by TMA."""
    c = sass["h6"]
    chunks = 256 // 32                                   # BN / STORE_COLS, unrolled: once each in SASS
    assert count(sass, "h6", "UTMASTG") == chunks and count(sass, "h6", "UTMACMDFLUSH") == chunks, c["opcodes"]
    assert count(sass, "h6", "STG") == 0 and count(sass, "h6", "ST.") == 0, c["opcodes"]
    assert count(sass, "h6", "STS.64") == chunks * 8, c["opcodes"]    # 4 n8 blocks x 2 row halves per chunk
    assert count(sass, "h6", "FENCE.VIEW.ASYNC.S") >= chunks, c["opcodes"]
    named = [line for line in listings["h6"] if "BAR.SYNC" in line and "0x80" in line]
    assert len(named) == 2 * chunks, named[:3]           # before the writes and after the fence, per chunk
    for name in ["h2", "h3", "h4", "h5", "h4_tf32"]:
        assert count(sass, name, "UTMASTG") == 0 and count(sass, name, "STG") > 0, name


def test_no_rung_touches_local_memory(sass):
    for name, c in sass.items():
        assert c["LDL/STL"] == 0, f"{name}: {c['LDL/STL']} LDL/STL"


def test_a_gpu_that_is_not_hopper_gets_a_clear_refusal(monkeypatch):
    monkeypatch.setattr(LAB, "gpu_arch", lambda: "sm_86")
    for name in BUILT:
        with pytest.raises(CourseError) as e:
            LAB.launcher(name, 256, 256, 256)
        assert "sm_90a" in e.value.message and "sm_86" in e.value.message, e.value.message
        assert e.value.hint


def test_a_k_that_tma_cannot_describe_is_refused_in_words():
    for name in [n for n in TMA if n not in ANY_K] + ["t4_tma"]:
        with pytest.raises(CourseError, match="multiple of"):
            check_shape(LAB.kernel(name), 128, 128, 100 if name not in TF32 else 102)
    assert check_shape(LAB.kernel("h1"), 77, 67, 45) == (77, 67, 45)   # h1's guarded loads take any K
    # h4_3xtf32's split pass writes its parts at a padded pitch: TMA never reads A or B as they are;
    # h6_3xtf32's splits A likewise, and B's pitch is N (a padded copy when N % 4)
    for name in ANY_K:
        assert check_shape(LAB.kernel(name), 77, 67, 45) == (77, 67, 45), name


def test_h6_tf32_reads_b_into_registers_and_never_transposes_it(sass, listings):
    """h6_tf32's idea in SASS: its HGMMA takes A from registers (an R operand where h4_tf32 has a shared-
    memory descriptor), loaded by LDS, 16 per stage (4 slices x 4 values) in each of the two unrolled
    halves; C leaves by TMA store through STS, one per accumulator value (128 = 4 steps x 32); no STG;
    and its cubin has no transpose kernel (h4_tf32's has transpose_h4_tf32)."""
    hg = [line for line in listings["h6_tf32"] if "HGMMA" in line]
    assert hg and all(re.search(r"HGMMA\.64x256x8\.F32\.TF32 R\d+, R\d+, gdesc", line) for line in hg), hg[:2]
    old = [line for line in listings["h4_tf32"] if "HGMMA" in line]
    assert all(re.search(r"HGMMA\.\S+ R\d+, gdesc", line) for line in old), old[:2]
    c = sass["h6_tf32"]
    assert count(sass, "h6_tf32", "LDS") == 2 * 16 and count(sass, "h6_tf32", "HGMMA") == 2 * 4, c["opcodes"]
    assert count(sass, "h6_tf32", "STS") == 128 and count(sass, "h6_tf32", "STG") == 0, c["opcodes"]
    assert count(sass, "h6_tf32", "UTMASTG") == 8, c["opcodes"]          # 4 steps x the pair of chunks
    k = LAB.kernel("h6_tf32")
    text = disassemble(k.cubin(LAB.build_dir, "sm_90a"))
    assert "transpose" not in text and "transpose_h4_tf32" in disassemble(LAB.kernel("h4_tf32").cubin(LAB.build_dir, "sm_90a"))


def test_h6_3xtf32_splits_b_in_registers_and_stores_c_by_tma(sass, listings):
    """h6_3xtf32's ideas in SASS (tests/test_h6_3xtf32.py has the rest): HGMMA.64x128x8.F32.TF32 with a
    register A operand (the split B^T fragment) and A's part by descriptor, 12 per stage (3 per slice x 4
    slices) in one loop body; LDS of the raw fragments (16), TMA loads, TMA stores (2 steps x 2 chunks)
    through STS (64), no STG; under __launch_bounds__(384, 1) the whole kernel fits ptxas's 168 registers
    without spills (test_every_rung_builds_for_sm_90a_without_spills) and no wgmma is serialized
    (test_ptxas_never_serializes_a_wgmma)."""
    hg = [line for line in listings["h6_3xtf32"] if "HGMMA" in line]
    assert len(hg) == 12 and all(re.search(r"HGMMA\.64x128x8\.F32\.TF32 R\d+, R\d+, gdesc", line) for line in hg), hg[:2]
    c = sass["h6_3xtf32"]
    assert count(sass, "h6_3xtf32", "LDS") == 16 and count(sass, "h6_3xtf32", "STS") == 64, c["opcodes"]
    assert count(sass, "h6_3xtf32", "UTMALDG.2D") % 6 == 0 and count(sass, "h6_3xtf32", "UTMALDG.2D") > 0, c["opcodes"]
    assert count(sass, "h6_3xtf32", "UTMASTG") == 4 and count(sass, "h6_3xtf32", "STG") == 0, c["opcodes"]
    res = build_for_every_arch(LAB)[("h6_3xtf32", "sm_90a")]["sgemm_h6_3xtf32"]
    assert res["registers"] <= 168 and res["spill_stores"] == res["spill_loads"] == 0, res
