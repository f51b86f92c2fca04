"""What lab 7d claims about the compiled code, checked on every architecture without a GPU: no spills,
and each kernel's idea visible in SASS (static counts: an instruction in a loop counts once)."""
import pytest

from common.build import ALL_ARCHS
from common.testing import build_for_every_arch, lab_of, needs_cuobjdump

LAB = lab_of(__file__)
GEMV = ["gemv_fp32", "gemv_fp16"]


def test_every_kernel_builds_for_every_architecture_without_spills():
    res = build_for_every_arch(LAB)
    assert {name for name, _ in res} == {k.name for k in LAB.own()}
    for (name, arch), entries in res.items():
        for entry, r in entries.items():
            assert r["spill_stores"] == r["spill_loads"] == r["stack"] == 0, f"{entry} on {arch}: {r}"


def test_the_dispatchers_own_rows_build_without_spills():
    """The rows of lab.py's DISPATCH with other parameters (few-rows, few-cols, narrow, the deep GEMV):
    their .cu static_asserts accept the parameters and ptxas keeps everything in registers (sm_90,
    the GPU they were chosen on; the defaults build for every architecture above)."""
    rows = {id(k): LAB.bind(k) for _, _, _, ks in LAB.table.DISPATCH for k in ks.values() if not isinstance(k, str)}
    res = LAB.build(list(rows.values()), ["sm_90"])
    assert len(res) == len(rows) >= 9
    for (name, arch), entries in res.items():
        for entry, r in entries.items():
            assert r["spill_stores"] == r["spill_loads"] == r["stack"] == 0, f"{name} {entry} on {arch}: {r}"


def test_the_table_names_every_entry_point_of_the_kernels():
    """Every row's entries (and split-K's reduce) are in its cubin: the table and the .cu agree."""
    res = build_for_every_arch(LAB)
    for k in LAB.own():
        for arch in ALL_ARCHS:
            if LAB.build_arch(k, arch) is None:      # sm_75: lab 7d's rows say why (lab.py, NEEDS)
                continue
            entries = res[(k.name, arch)]
            reduce = getattr(k.launch_hook, "reduce", None)       # skinny_fp16 has none: it reduces itself
            fused = [e for _, e in getattr(k.launch_hook, "fused", ())]   # splitk_v8's one-launch entries
            wanted = list(k.entries.values()) + ([reduce] if reduce else []) + fused
            assert set(wanted) <= set(entries), f"{k.name} on {arch}: missing {set(wanted) - set(entries)}"


@pytest.fixture(scope="module", params=["sm_80", "sm_90"])
def sass(request):
    needs_cuobjdump()
    kernels = LAB.own()
    LAB.build(kernels, [request.param])
    from common import sass as sassmod
    out = {}
    for k in kernels:
        counts = sassmod.opcode_counts(sassmod.disassemble(k.cubin(LAB.build_dir, request.param)))
        for entry, c in counts.items():
            out[entry] = {"opcodes": dict(c), **sassmod.family_counts(c)}
    return out


def test_gemv_reads_the_weights_with_128_bit_loads(sass):
    for name in GEMV:
        for v, entry in LAB.kernel(name).entries.items():
            if v.endswith("_vec"):
                assert sass[entry]["LDG.128"] > 0, f"{entry}: no LDG.E.128"


def test_gemv_scalar_entries_load_the_weights_element_by_element(sass):
    """The scalar path is for odd N: 2- or 4-byte loads of B (it may still read A in vectors)."""
    for name in GEMV:
        for v, entry in LAB.kernel(name).entries.items():
            if v.endswith("_scalar"):
                assert sass[entry]["LDG"] > 0, entry


def test_gemv_keeps_the_k_loop_free_of_shared_memory(sass):
    """Shared memory only in the epilogue: one store and one load site per output sum, few barriers.
    (Static counts cannot see the loop; a K loop through shared memory would need many more.)"""
    for name in GEMV:
        for entry in LAB.kernel(name).entries.values():
            assert sass[entry]["BAR"] <= 4, f"{entry}: {sass[entry]['BAR']} BAR"
            assert sass[entry]["LDGSTS"] == 0 and sass[entry]["LDSM"] == 0, entry


def test_the_tensor_core_gemv_uses_mma_m16n8k16_and_byte_permutes(sass):
    for entry in LAB.kernel("gemv_fp16_tc").entries.values():
        ops = sass[entry]["opcodes"]
        assert ops.get("HMMA.16816.F32", 0) > 0, f"{entry}: {ops}"
        assert sum(n for op, n in ops.items() if op.startswith("PRMT")) > 0, entry
    assert sass["gemv_fp16_tc_vec"]["LDG.128"] > 0


def test_gemv_fp16_on_ffma_never_touches_the_tensor_cores(sass):
    for entry in LAB.kernel("gemv_fp16").entries.values():
        assert sass[entry]["HMMA"] == 0 and sass[entry]["FFMA"] > 0, entry


def test_splitk_fp32_is_the_ffma_tile_with_128_bit_shared_loads(sass):
    for entry in LAB.kernel("splitk_fp32").entries.values():
        assert sass[entry]["FFMA"] >= 512 and sass[entry]["LDS.128"] > 0, entry
    assert sass["splitk_fp32_vec"]["LDG.128"] > 0
    assert sass["splitk_fp32_vec"]["opcodes"].get("STG.E.128", 0) > 0


def test_splitk_fp16_copies_with_cp_async_and_multiplies_on_tensor_cores(sass):
    assert sass["splitk_fp16_vec"]["LDGSTS"] > 0 and sass["splitk_fp16_vec"]["DEPBAR"] > 0
    assert sass["splitk_fp16_scalar"]["LDGSTS"] == 0
    for entry in LAB.kernel("splitk_fp16").entries.values():
        assert sass[entry]["HMMA"] > 0, entry


def test_splitk_v8_is_v8s_pipelined_tile(sass):
    """The split runs v8's body unchanged: A and B by cp.async (4-byte A copies, 16-byte B copies in
    the vec entry), DEPBAR waits, one barrier per tile, LDS.128 operands, and no STS (A never passes
    through registers)."""
    for entry in LAB.kernel("splitk_v8").entries.values():
        c = sass[entry]
        assert c["FFMA"] >= 1024, f"{entry}: one unrolled BK = 8 tile of 128 x 256 is 1024 FFMA, got {c['FFMA']}"
        assert c["LDGSTS"] > 0 and c["DEPBAR"] > 0 and c["BAR"] > 0 and c["LDS.128"] > 0, f"{entry}: {c}"
        assert c["STS"] == 0, f"{entry}: {c['STS']} STS"
    assert any(op.startswith("LDGSTS") and "128" in op for op in sass["splitk_v8_vec"]["opcodes"])


@pytest.mark.parametrize("name", ["splitk_v8", "splitk_fp32", "splitk_fp16"])
def test_the_one_launch_form_is_the_same_tile_then_a_grid_barrier_and_the_reduce(sass, name):
    """splitk_v8_fused_*, splitk_fp32_fused_*, splitk_fp16_fused_*: the main kernel's FFMA (HMMA), then one atomic arrival (RED on sm_80, whose result
    is unused; ATOMG on sm_90) and an acquire spin with
    NANOSLEEP (splitk_reduce.cuh's grid_barrier), then the partials read from L2 (STRONG.GPU loads:
    __ldcg) and added, and the counters handed back by an atomic."""
    for v, entry in LAB.kernel(name).launch_hook.fused:
        c, main = sass[entry], sass[LAB.kernel(name).entries[v]]
        assert c["FFMA"] == main["FFMA"], f"{entry}: {c['FFMA']} FFMA against the main kernel's {main['FFMA']}"
        assert c["HMMA"] == main["HMMA"], f"{entry}: {c['HMMA']} HMMA against the main kernel's {main['HMMA']}"
        ops = c["opcodes"]
        assert sum(n for op, n in ops.items() if op.startswith(("ATOM", "RED"))) >= 2, f"{entry}: {ops}"   # RED: no result
        assert ops.get("NANOSLEEP", 0) >= 1 and ops.get("FADD", 0) > 0, f"{entry}: {ops}"
        assert any(op.startswith("LDG") and "STRONG" in op for op in ops), f"{entry}: {ops}"


@pytest.mark.parametrize("entry", ["splitk_fp32_reduce", "splitk_fp16_reduce", "splitk_v8_reduce"])
def test_the_reduce_is_loads_and_adds_without_barriers_or_atomics(sass, entry):
    ops = sass[entry]["opcodes"]
    assert sass[entry]["BAR"] == 0
    assert not any(op.startswith(("RED", "ATOM")) for op in ops), f"{entry}: {ops}"
    assert ops.get("FADD", 0) > 0, entry


def test_no_kernel_touches_local_memory(sass):
    for entry, c in sass.items():
        assert c["LDL/STL"] == 0, f"{entry}: {c['LDL/STL']} LDL/STL"


def test_skinny_streams_weights_with_cp_async_into_ldmatrix_and_mma(sass):
    """skinny_fp16: 16-byte cp.async of the weights (vec), waits on the copy groups, ldmatrix (.x4 and
    .x4.trans) into mma.sync m16n8k16; the scalar entry fills the same ring with element loads."""
    vec, scalar = sass["skinny_fp16_vec"], sass["skinny_fp16_scalar"]
    assert vec["LDGSTS"] > 0 and vec["DEPBAR"] > 0, vec["opcodes"]
    assert scalar["LDGSTS"] == 0 and scalar["STS.128"] > 0
    for c in (vec, scalar):
        ops = c["opcodes"]
        assert ops.get("HMMA.16816.F32", 0) > 0, ops
        assert ops.get("LDSM.16.M88.4", 0) > 0 and ops.get("LDSM.16.MT88.4", 0) > 0, ops


def test_skinny_reduces_its_splits_with_one_ticket_and_no_reduce_kernel(sass):
    """One atomic per block (the ticket: static count 1), a fence before it, and no second kernel."""
    for entry in LAB.kernel("skinny_fp16").entries.values():
        ops = sass[entry]["opcodes"]
        atomics = {op: n for op, n in ops.items() if op.startswith(("ATOM", "RED"))}
        assert sum(atomics.values()) == 1 and all(op.startswith("ATOMG.E.ADD") for op in atomics), atomics
        assert any(op.startswith("MEMBAR") for op in ops), entry
    assert not any("reduce" in entry for entry in sass if entry.startswith("skinny"))


def test_skinnys_m_class_builds_keep_the_claims_in_sass():
    """The dispatcher's 32- and 64-row builds of skinny_fp16 (sm_90, where they were chosen): the same
    instructions as the default build, and no local memory."""
    needs_cuobjdump()
    from common import sass as sassmod
    rows = [LAB.bind(k) for _, _, _, ks in LAB.table.DISPATCH for k in ks.values()
            if not isinstance(k, str) and k.base_name == "skinny_fp16"]
    assert {k.tiling.params["MT"] for k in rows} == {1, 2, 4}
    LAB.build(rows, ["sm_90"])
    for k in rows:
        counts = sassmod.opcode_counts(sassmod.disassemble(k.cubin(LAB.build_dir, "sm_90")))
        for entry, c in counts.items():
            fam = sassmod.family_counts(c)
            assert c.get("HMMA.16816.F32", 0) > 0 and fam["LDSM"] > 0, f"{k.name} {entry}"
            assert fam["LDL/STL"] == 0, f"{k.name} {entry}: {fam['LDL/STL']} LDL/STL"
            assert (fam["LDGSTS"] > 0) == entry.endswith("_vec"), f"{k.name} {entry}"


def test_wgmma_decode_multiplies_by_wgmma_and_reduces_through_the_clusters_shared_memory():
    """wgmma_decode (sm_90a, the dispatcher's two builds): HGMMA from TMA-filled stages (UTMALDG, mbarrier
    waits), one block barrier (the prologue's); the split build sends partial rows by st.async (STAS.128)
    after the cluster wait, with no atomics, no workspace and no second kernel; the unsplit build has
    neither cluster barrier nor remote store. No local memory in either."""
    needs_cuobjdump()
    from common import sass as sassmod
    for k, split in ((LAB.table.WGMMA_DECODE_SPLIT, True), (LAB.table.WGMMA_DECODE_WIDE, False)):
        k = LAB.bind(k)
        LAB.build([k], ["sm_90"])
        counts = sassmod.opcode_counts(sassmod.disassemble(k.cubin(LAB.build_dir, "sm_90a")))
        assert list(counts) == ["hgemm_wgmma_decode"]
        ops = counts["hgemm_wgmma_decode"]
        assert ops.get("HGMMA.64x64x16.F32", 0) >= 4 and ops.get("UTMALDG.2D", 0) > 0, ops
        assert ops.get("SYNCS.PHASECHK.TRANS64.TRYWAIT", 0) > 0, ops
        assert sum(n for op, n in ops.items() if op.startswith("BAR.")) == 1, ops
        assert not any(op.startswith(("ATOM", "RED")) for op in ops), ops
        assert (ops.get("STAS.128", 0) > 0) == split and (ops.get("UCGABAR_WAIT", 0) > 0) == split, ops
        assert sassmod.family_counts(ops)["LDL/STL"] == 0
