"""What the chapter claims about the compiled code, checked in SASS for every architecture.

Static counts: an instruction in a loop counts once. Where the compiler departs from the
chapter's per-k-step counts, `make sass` shows both; these tests check only what must hold
whatever the compiler does."""
import pytest

from common.testing import lab_of
from common.build import ALL_ARCHS
from common.sass import find_cuobjdump
from common import targets

LAB = lab_of(__file__)

try:
    find_cuobjdump()
    HAVE_CUOBJDUMP, WHY = True, ""
except Exception as e:  # CourseError with the fix in it
    HAVE_CUOBJDUMP, WHY = False, str(e)

pytestmark = pytest.mark.skipif(not HAVE_CUOBJDUMP, reason=f"needs cuobjdump: {WHY}")


class Counts(dict):
    """{kernel label: SASS counts} of one architecture (.arch)."""
    arch = None


@pytest.fixture(scope="module", params=ALL_ARCHS)
def sass(request):
    counts = Counts((c["kernel"], c) for c in targets.sass_counts(LAB, request.param).values())
    counts.arch = request.param
    return counts


def built_or_skip(sass, *names):
    """Skip, with the row's reason, when one of the kernels is not built for this architecture."""
    for name in names:
        why = LAB.kernel(name).unsupported(sass.arch)
        if why:
            assert not any(key.split("/")[0] == name for key in sass), f"{name} was built for {sass.arch}"
            pytest.skip(why)


def test_every_fp32_kernel_uses_ffma(sass):
    for k in [k for k in LAB.ladders["fp32"] if LAB.build_arch(k, sass.arch)]:
        for v in k.variants:
            assert sass[k.label(v)]["FFMA"] > 0


def test_v6_and_v7_read_both_operands_with_128_bit_shared_loads(sass):
    # v6: regM and regN are 8 floats each per k step, BK = 8: 128 floats, 32 LDS.128.
    # v7: regM 8 floats and regN 16 per k step, BK = 16: 384 floats, 96 LDS.128.
    for name, floats in (("v6", (8 + 8) * 8), ("v7", (8 + 16) * 16)):
        for v in ("vec", "scalar"):
            c = sass[f"{name}/{v}"]
            assert c["LDS.128"] * 4 >= floats, f"{name}/{v}: {c['LDS.128']} LDS.128"
            assert c["LDS"] == 0, f"{name}/{v} still has {c['LDS']} narrow shared loads"


def test_shared_loads_per_ffma_fall_from_v4_to_v5_and_never_rise_to_v6_and_v7(sass):
    """The chapter's model says 9/8 -> 16/64 -> 4/64. nvcc vectorizes v5's As reads across the
    unrolled k loop by itself (a row of As[BM][BK] holds 8 consecutive k), so statically v5
    already issues v6's count; `make sass` shows it and README.md explains it."""
    def ratio(key):
        c = sass[key]
        return (c["LDS"] + c["LDS.128"]) / c["FFMA"]
    assert ratio("v4") > ratio("v5") >= ratio("v6/vec") >= ratio("v7/vec")
    assert ratio("v6/vec") <= sass_model("v6") and ratio("v7/vec") <= sass_model("v7")


def sass_model(name):
    return LAB.kernels[name].model["smem_loads_per_ffma"]


def test_no_kernel_touches_local_memory(sass):
    for key, c in sass.items():
        assert c["LDL/STL"] == 0, f"{key}: {c['LDL/STL']} LDL/STL"


def test_t1_uses_tensor_cores_without_shared_memory(sass):
    c = sass["t1"]
    assert c["HMMA"] > 0
    assert c["LDS"] == c["LDS.128"] == c["LDSM"] == c["STS"] == c["STS.128"] == 0


def test_wmma_16x16x16_is_two_hmma_16816(sass):
    """On Turing (sm_75), which has no m16n8k16, it is four HMMA.1688 (m16n8k8) instead."""
    want, per_wmma = ("HMMA.1688.F32", 4) if sass.arch == "sm_75" else ("HMMA.16816.F32", 2)
    for key, c in sass.items():
        if key.startswith("t"):
            hmma = {op: n for op, n in c["opcodes"].items() if op.startswith("HMMA")}
            assert set(hmma) == {want}, f"{key}: {hmma}"
            assert sum(hmma.values()) % per_wmma == 0


def test_only_t3_t4_and_v8_copy_with_cp_async(sass):
    if sass.arch == "sm_75":
        pytest.skip("sm_75 has no cp.async: t4 and v8 are not built there, and t3 falls back to ordinary "
                    "loads (test_t3_has_no_cp_async_on_turing_and_its_row_says_so)")
    for v in ("vec", "scalar"):
        for name in ("t3", "t4", "v8"):
            assert sass[f"{name}/{v}"]["LDGSTS"] > 0 and sass[f"{name}/{v}"]["DEPBAR"] > 0, f"{name}/{v}"
        assert sass[f"t2/{v}"]["LDGSTS"] == 0
        for name in ("v6", "v7"):
            assert sass[f"{name}/{v}"]["LDGSTS"] == 0
    assert sass["t1"]["LDGSTS"] == 0


def test_t4_feeds_hand_placed_mma_from_ldmatrix_and_ldmatrix_trans(sass):
    """A by ldmatrix.x4 (LDSM.16.M88.4), B (row-major K x N) by ldmatrix .trans (LDSM.16.MT88),
    mma.sync m16n8k16 (HMMA.16816.F32); no shared loads of another kind in the main loop."""
    built_or_skip(sass, "t4")
    for v in ("vec", "scalar"):
        ops = sass[f"t4/{v}"]["opcodes"]
        assert ops.get("HMMA.16816.F32", 0) > 0, ops
        assert ops.get("LDSM.16.M88.4", 0) > 0, ops
        assert any(op.startswith("LDSM.16.MT88") for op in ops), ops


def test_the_cutlass_yardstick_is_built_from_t4s_instructions(sass):
    """The yardstick row is CUTLASS's Ampere GEMM: the same HMMA.16816.F32, LDSM.16.M88.4 for A,
    LDSM.16.MT88 for row-major B, and cp.async copies as t4, so that its time measures what a library
    makes of the same instruction; no local memory."""
    built_or_skip(sass, "cutlass")
    ops = sass["cutlass"]["opcodes"]
    assert ops.get("HMMA.16816.F32", 0) > 0 and ops.get("LDSM.16.M88.4", 0) > 0, ops
    assert any(op.startswith("LDSM.16.MT88") for op in ops), ops
    assert sass["cutlass"]["LDGSTS"] > 0 and sass["cutlass"]["LDL/STL"] == 0


@pytest.mark.parametrize("sass", ["sm_90"], indirect=True)
def test_cutlass_bounds_probe_reads_b_without_the_transpose(sass):
    """make bounds KERNEL=cutlass: CUTLASS_PROBE=1 takes B as column-major (k contiguous), so B's
    fragments come by ldmatrix without .trans; the mma count stays the same."""
    from common.sass import disassemble, opcode_counts
    probe = LAB.bind(LAB.kernel("cutlass")).with_params(CUTLASS_PROBE=1)
    LAB.build([probe], ["sm_90"])
    ops = opcode_counts(disassemble(probe.cubin(LAB.build_dir_of(probe), "sm_90")))["hgemm_cutlass"]
    base = sass["cutlass"]["opcodes"]
    assert not any(op.startswith("LDSM.16.MT88") for op in ops), ops
    assert ops.get("LDSM.16.M88.4", 0) > base.get("LDSM.16.M88.4", 0)
    assert ops.get("HMMA.16816.F32", 0) == base.get("HMMA.16816.F32", 0) > 0


def test_v8_keeps_v7s_128_bit_shared_reads(sass):
    built_or_skip(sass, "v8")
    for v in ("vec", "scalar"):
        c = sass[f"v8/{v}"]
        assert c["LDS.128"] > 0 and c["FFMA"] > 0, c


def test_t3_has_no_cp_async_on_turing_and_its_row_says_so(sass):
    """sm_75 has no cp.async: __pipeline_memcpy_async compiles to an ordinary load and store (LDG, STS),
    so t3 runs there without copies in flight; its row's note says so, and make bench shows the note."""
    if sass.arch != "sm_75":
        pytest.skip("about sm_75 only")
    for v in ("vec", "scalar"):
        c = sass[f"t3/{v}"]
        assert c["LDGSTS"] == c["DEPBAR"] == 0 and c["LDG.128"] > 0 and c["STS.128"] > 0, c
    assert "cp.async" in LAB.kernel("t3").arch_note("sm_75")


def test_t2_copies_tiles_with_16_byte_loads(sass):
    assert sass["t2/vec"]["LDG.128"] > 0 and sass["t2/vec"]["STS.128"] > 0


@pytest.mark.parametrize("sass", ["sm_90"], indirect=True)
def test_register_banks_v7s_float4_epilogue_and_v8s_ffma_order(sass):
    """README, 'Register banks' (sm_90, where ncu measured it): v7/vec's float4 stores of C tie each
    accumulator quad to the parity of the B quad it is multiplied with, so most of its FFMA read two
    registers of one bank; v7/scalar stores per element and has few; v8's FFMA order has fewer than v7/vec.
    Other architectures' ptxas schedule differently (make sass ARCH=...), so only sm_90 is held to it."""
    banks = {k: c["register_banks"]["pct_conflicting"] for k, c in sass.items() if c.get("register_banks")}
    assert banks["v7/vec"] > 3 * banks["v7/scalar"], banks
    assert banks["v8/vec"] < banks["v7/vec"] / 2, banks


@pytest.mark.parametrize("sass", ["sm_90"], indirect=True)
def test_t4_bounds_builds_leave_out_what_they_say(sass):
    """make bounds (common/bounds.py) times t4 beside builds without parts of its work: T4_PROBE=1 keeps only
    the prologue's copies (fewer LDGSTS, the barrier kept), 2 has no HMMA, 3 neither copies nor a
    barrier in the loop. The default build is t4 itself. The no-mma build keeps its ldmatrix (ptxas
    deletes an ldmatrix whose registers nobody reads: the build XORs them into C instead)."""
    from common.sass import disassemble, opcode_counts
    base = LAB.bind(LAB.kernel("t4"))
    builds = {p: base.with_params(T4_PROBE=p) for p in (1, 2, 3)}
    LAB.build(list(builds.values()), ["sm_90"])
    ops = {p: opcode_counts(disassemble(k.cubin(LAB.build_dir_of(k), "sm_90")))["hgemm_t4_vec"]
           for p, k in builds.items()}
    t4 = sass["t4/vec"]["opcodes"]
    ldgsts = lambda c: sum(n for op, n in c.items() if op.startswith("LDGSTS"))   # noqa: E731
    assert 0 < ldgsts(ops[1]) < ldgsts(t4) and ops[1].get("BAR.SYNC.DEFER_BLOCKING", 0) > 0, ops[1]
    assert ops[2].get("HMMA.16816.F32", 0) == 0 and ldgsts(ops[2]) == ldgsts(t4), ops[2]
    ldsm = lambda c: sum(n for op, n in c.items() if op.startswith("LDSM"))   # noqa: E731
    assert ldsm(ops[2]) == ldsm(t4) > 0, "the no-mma build must keep every ldmatrix"
    assert ops[3].get("BAR.SYNC.DEFER_BLOCKING", 0) < t4.get("BAR.SYNC.DEFER_BLOCKING", 0), ops[3]


@pytest.mark.parametrize("sass", ["sm_90"], indirect=True)
def test_v8_bounds_builds_leave_out_what_they_say(sass):
    """make bounds KERNEL=v8: V8_PROBE=1 keeps only the prologue's copies, 3 drops the loop's barrier too;
    both keep every FFMA of the kernel."""
    from common.sass import disassemble, opcode_counts
    base = LAB.bind(LAB.kernel("v8"))
    builds = {p: base.with_params(V8_PROBE=p) for p in (1, 3)}
    LAB.build(list(builds.values()), ["sm_90"])
    ops = {p: opcode_counts(disassemble(k.cubin(LAB.build_dir_of(k), "sm_90")))["sgemm_v8_vec"]
           for p, k in builds.items()}
    v8 = sass["v8/vec"]["opcodes"]
    ldgsts = lambda c: sum(n for op, n in c.items() if op.startswith("LDGSTS"))   # noqa: E731
    assert 0 < ldgsts(ops[1]) < ldgsts(v8), ops[1]
    assert ops[1].get("FFMA", 0) == ops[3].get("FFMA", 0) == v8.get("FFMA", 0)
    assert ops[3].get("BAR.SYNC.DEFER_BLOCKING", 0) < v8.get("BAR.SYNC.DEFER_BLOCKING", 0), ops[3]


def v8_loop_bodies(k, entry="sgemm_v8_vec"):
    """The instruction texts ('FFMA R1, R2, R3, R1', predicates kept) of each loop of a v8 build's sm_90
    SASS with a whole tile's FFMA in it, in address order: the fast loop first when there is one."""
    from common.sass import disassemble, kernel_listing
    from common.sass_loops import loops
    listing = kernel_listing(disassemble(k.cubin(LAB.build_dir_of(k), "sm_90")), entry)
    out = []
    for start, end in loops(listing):
        body = [l.split("*/", 1)[1].strip().rstrip(" ;") for l in listing
                if start <= int(l.split("*/")[0].strip("/* "), 16) <= end]
        if sum(opcode(t) == "FFMA" for t in body) >= 1024:
            out.append([t for t in body if t])
    return out


def opcode(text):
    """'@!P5 BRA 0x1a40' -> 'BRA', 'LDGSTS.E [R1], ...' -> 'LDGSTS.E'."""
    parts = text.split()
    return (parts[1] if parts and parts[0].startswith("@") else parts[0]) if parts else ""


@pytest.mark.parametrize("sass", ["sm_90"], indirect=True)
def test_v8_fast_loop_is_one_basic_block_with_its_copies(sass):
    """v8's fast loop: the interior tiles' loop has its 6 copies among its 1024 FFMA and no branch but its
    back edge; the checked loop after it still has the branches."""
    base = LAB.bind(LAB.kernel("v8"))
    LAB.build([base], ["sm_90"])
    fast, checked = ([opcode(t) for t in body] for body in v8_loop_bodies(base))
    assert sum(o.startswith("LDGSTS") for o in fast) == 6 and sum(o == "BRA" for o in fast) == 1
    assert sum(o == "BRA" for o in checked) > 1


@pytest.mark.parametrize("sass", ["sm_90"], indirect=True)
def test_v8_fast_loop_computes_no_shared_load_address(sass):
    """A's read offsets are kept in bytes (one per k % 8, the XOR's eight), so each LDS.128 of A in the
    fast loop addresses [offset + stage base + immediate] itself. What the loop still computes as an LDS
    address is B's row base, once per tile (before, also a LEA for A at every step: 7 such registers
    and 1130 instructions a tile, against 2 and 1119). MAXREG=224 builds with __maxnreg__ instead of
    __launch_bounds__, under that cap."""
    import re
    base = LAB.bind(LAB.kernel("v8"))
    capped = base.with_params(MAXREG=224)
    res = LAB.build([base, capped], ["sm_90"])
    assert max(r["registers"] for r in res[(capped.name, "sm_90")].values()) <= 224
    fast = v8_loop_bodies(base)[0]
    assert sum(opcode(t) == "FFMA" for t in fast) == 1024              # the fast loop: one tile
    written = set()
    for t in fast:
        m = re.match(r"^(?:@!?P\w+\s+)?(\w+)(?:\.\S+)?\s+(R\d+)", t)
        if m and not m.group(1).startswith(("LDS", "ST", "LDGSTS", "BAR", "BRA")):
            written.add(m.group(2))
    lds_addr = [re.search(r"\[(R\d+)", t).group(1) for t in fast if t.startswith("LDS") and "[R" in t]
    computed = set(lds_addr) & written
    assert lds_addr and len(computed) <= 2, sorted(computed)
