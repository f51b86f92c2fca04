"""k8 (3xTF32): what its header claims about the compiled code, on every architecture without a GPU, and
on a GPU what its split pass writes and what FP32 claims about Inf and NaN. (Its results on the odd
shapes, with alpha and beta, are in test_gpu.py: it is a row of the lab's table; its bound is
common/precision.py's fp32_3xtf32.)

k8 runs as two kernels (kernels/k8_3xtf32.cu, launch.py): a split pass writes the big and small TF32
parts of A and B once, in tiles; the GEMM loads them as data. The SASS tests below hold the GEMM to
that: no split instruction in it, B by ldmatrix, and a main loop of under 3 instructions per HMMA
(k8's first form, which split every element at each fragment load, ran 5.7)."""
import importlib

import numpy as np
import pytest

from common import targets
from common.build import ALL_ARCHS
from common.errors import CourseError
from common.testing import assert_inf_meets_large_operands_as_in_fp32, lab_of, needs_cuobjdump, needs_gpu

LAB = lab_of(__file__)
K8 = LAB.kernel("k8")
P = K8.tiling.params
MI, NJ, STEPS = P["WM"] // 16, P["WN"] // 8, P["BK"] // 8
GEMMS = ("vec", "scalar")
LAUNCH = importlib.import_module(f"{LAB.package}.launch")


def test_k8_builds_for_every_architecture_without_spills():
    res = LAB.build([K8], ALL_ARCHS)
    assert {"sm_80", "sm_86", "sm_89", "sm_90", "sm_120"} <= {arch for _, arch in res}
    for (name, arch), entries in res.items():
        assert set(K8.all_entries.values()) <= set(entries), (arch, sorted(entries))
        for entry, r in entries.items():
            assert r["spill_stores"] == r["spill_loads"] == r["stack"] == 0, f"{entry} on {arch}: {r}"


def test_the_default_tiles_fit_every_gpu_of_the_course():
    """96 KB of dynamic shared memory: under the 99 KB a block may have on sm_86, sm_89 and sm_120."""
    assert K8.shared_bytes == P["STAGES"] * 2 * (P["BM"] + P["BN"]) * P["BK"] * 4 <= 99 * 1024


@pytest.fixture(scope="module", params=["sm_80", "sm_90"] if "sm_90" in ALL_ARCHS else ALL_ARCHS[:1])
def sass(request):
    """(arch, {"k8/vec": opcodes, ...}, {"k8/vec": main loop lines, ...}) of k8's default build."""
    from common.sass import disassemble, kernel_listing
    from common.sass_loops import main_loop
    needs_cuobjdump()
    arch = request.param
    counts = targets.sass_counts(LAB, arch, [K8])
    text = disassemble(LAB.cubin(K8, arch))
    loops = {f"k8/{v}": main_loop(kernel_listing(text, K8.entries[v])) for v in GEMMS}
    return arch, {c["kernel"]: c["opcodes"] for c in counts.values()}, loops


def loop_ops(lines):
    """{opcode: count} of main-loop lines ('/*1a40*/ @P5 LDSM.16.M88.4 R4, [R2+0x400]'), never-executed
    @!PT placeholders left out, as common.sass counts them."""
    from common.sass_loops import _parse
    out = {}
    for p in (_parse(l) for l in lines):
        if p and not p[1].startswith("@!PT"):
            out[p[2]] = out.get(p[2], 0) + 1
    return out


def count(ops, prefix):
    return sum(n for op, n in ops.items() if op == prefix or op.startswith(prefix + "."))


@pytest.mark.parametrize("v", GEMMS)
def test_three_tf32_mma_per_fragment_pair_and_k8_step(sass, v):
    """3 x (BK/8) x MI x NJ HMMA in the unrolled tile loop: small.big, big.small, big.big; no other kind;
    none in the split pass."""
    arch, ops, loops = sass
    o = ops[f"k8/{v}"]
    assert o.get("HMMA.1688.F32.TF32", 0) == 3 * STEPS * MI * NJ, o
    assert not any(op.startswith("HMMA") and op != "HMMA.1688.F32.TF32" for op in o), o
    assert loop_ops(loops[f"k8/{v}"]).get("HMMA.1688.F32.TF32", 0) == 3 * STEPS * MI * NJ
    assert count(ops["k8/split"], "HMMA") == 0


@pytest.mark.parametrize("v", GEMMS)
def test_the_gemm_splits_nothing_and_promotes_once_per_chain(sass, v):
    """The GEMM has no split left in it: no FMNMX (the clamp) and no conversion anywhere in it; its
    FADDs are the promotion's MI x NJ x 4 (one per accumulator); no local memory."""
    arch, ops, loops = sass
    o = ops[f"k8/{v}"]
    assert count(o, "FMNMX") == 0, o
    assert o.get("FADD", 0) == MI * NJ * 4, o
    assert not any(op.startswith(("F2FP", "F2F")) for op in o), o
    assert not any(op.startswith(("LDL", "STL")) for op in o), o


@pytest.mark.parametrize("v", GEMMS)
def test_both_operands_big_and_small_come_by_ldmatrix(sass, v):
    """Per k8 step 2 MI LDSM.x4 for A (big and small) and NJ for B (two n8 fragments each, big and small),
    no plain LDS of a fragment; the copies are 16-byte cp.async past L1, (A_CHUNKS + B_CHUNKS) a tile."""
    arch, ops, loops = sass
    lo = loop_ops(loops[f"k8/{v}"])
    assert count(lo, "LDSM") == STEPS * (2 * MI + NJ), lo
    assert count(lo, "LDS") == 0, lo
    copies = {op: n for op, n in lo.items() if op.startswith("LDGSTS")}
    assert copies == {"LDGSTS.E.BYPASS.128": 2 * (P["BM"] + P["BN"]) * P["BK"] // 4 // K8.threads}, copies
    assert count(lo, "BAR.SYNC") == 1, lo


@pytest.mark.parametrize("v", GEMMS)
def test_the_main_loop_costs_under_3_instructions_per_hmma(sass, v):
    """The loop with the HMMAs (common.sass_loops.main_loop, the promotion's block included): k8's first
    form, which split at the fragment loads, took 5.7 instructions per HMMA (k7: 4.0); now about 2.8."""
    arch, ops, loops = sass
    lo = loop_ops(loops[f"k8/{v}"])
    per_hmma = sum(lo.values()) / lo["HMMA.1688.F32.TF32"]
    assert per_hmma < 3.0, (round(per_hmma, 2), lo)


def test_the_split_pass_splits_each_element_once(sass):
    """Per element: the clamp's limit (FSEL: 1 for Inf and NaN), its two FMNMX and one FADD (x - big), no
    conversion instruction (the rounding
    is an integer add and a mask); SPLIT_TILE^2 / SPLIT_THREADS elements per thread for A and as many for
    B (two branches); B goes through shared memory (LDS, STS, one barrier)."""
    arch, ops, loops = sass
    o = ops["k8/split"]
    per_thread = K8.tiling.value("SPLIT_TILE") ** 2 // K8.tiling.value("SPLIT_THREADS")
    assert o.get("FMNMX", 0) == 2 * 2 * per_thread and o.get("FSEL", 0) == 2 * per_thread, o
    assert o.get("FADD", 0) == 2 * per_thread, o
    assert not any(op.startswith("F2FP") for op in o), o
    assert count(o, "STS") > 0 and count(o, "LDS") > 0 and count(o, "BAR.SYNC") == 1, o
    assert not any(op.startswith(("LDL", "STL")) for op in o), o


def test_promotion_chains_end_at_tile_ends():
    assert P["KCHUNK"] % P["BK"] == 0 and P["KCHUNK"] >= P["BK"]


def test_the_split_buffers_hold_whole_tiles():
    """launch.split_words: A's big and small parts padded to BM x BK tiles, B's to BN x BK."""
    bm, bn, bk = P["BM"], P["BN"], P["BK"]
    assert LAUNCH.split_words(K8, 1, 1, 1) == (2 * bm * bk, 2 * bn * bk)
    assert LAUNCH.split_words(K8, bm + 1, 2 * bn, bk + 1) == (2 * 2 * bm * 2 * bk, 2 * 2 * bn * 2 * bk)


@pytest.mark.parametrize("shape,says", [((0, 5, 5), "at least 1"), ((5, 5, 65535 * 32 + 1), "65535")])
def test_the_launch_refuses_what_it_cannot_run_in_words(shape, says):
    """Checked before anything touches the GPU: M, N, K >= 1; the split pass walks K on the grid's y."""
    with pytest.raises(CourseError) as e:
        LAUNCH._Plan(K8, None, *shape)
    assert says in e.value.message


@needs_gpu
@pytest.mark.parametrize("shape", [(130, 70, 40), (1, 300, 17), (256, 128, 64)], ids=lambda s: "x".join(map(str, s)))
def test_the_split_pass_writes_big_and_small_parts_in_tiles(shape):
    """After a call, the buffers hold what the header says: per block row of A (block column of B) and
    k-tile, BM x BK big parts then BM x BK small parts, k-contiguous (B transposed), zero past M, N, K;
    big = x rounded to TF32 (ties away), small = x - big."""
    import pycuda.driver as cuda
    from common.precision import tf32_round
    M, N, K = shape
    bm, bn, bk = P["BM"], P["BN"], P["BK"]
    rng = np.random.default_rng(5)
    A = rng.uniform(-1, 1, (M, K)).astype(np.float32)
    B = rng.uniform(-1, 1, (K, N)).astype(np.float32)
    LAB.matmul("k8", A, B)
    kp = -(-K // bk) * bk

    def tiles(X, rows):              # X: R x K (A, or B transposed) -> the layout the GEMM copies
        R = -(-X.shape[0] // rows) * rows
        Xp = np.zeros((R, kp), np.float32)
        Xp[:X.shape[0], :K] = X
        big = tf32_round(Xp, ties="away")
        small = (Xp - big).astype(np.float32)
        parts = np.stack([big, small]).reshape(2, R // rows, rows, kp // bk, bk)
        return parts.transpose(1, 3, 0, 2, 4).ravel()

    for name, X, rows in (("A", A, bm), ("B", B.T, bn)):
        want = tiles(X, rows)
        got = np.empty_like(want)
        cuda.memcpy_dtoh(got, LAUNCH._buffers[name][0])     # the buffer may be larger: its start
        assert np.array_equal(got.view(np.uint32), want.view(np.uint32)), name


@needs_gpu
def test_the_buffers_grow_and_every_shape_still_checks():
    """A smaller shape after a larger one reuses the buffers; a larger one grows them (and drops the
    prepared launches that pointed at the old ones)."""
    LAUNCH.release()
    for shape in [(300, 200, 100), (17, 33, 9), (700, 650, 300), (300, 200, 100)]:
        verdict = LAB.check("k8", *shape, alpha=1.25, beta=0.5)
        assert verdict.ok, str(verdict)
        a_words, b_words = LAUNCH.split_words(K8, *shape)
        assert LAUNCH._buffers["A"][1] >= a_words and LAUNCH._buffers["B"][1] >= b_words
    assert LAUNCH._buffers["A"][1] == LAUNCH.split_words(K8, 700, 650, 300)[0]


@needs_gpu
def test_a_long_k_adds_every_product_exactly_once():
    """Small integers (common/precision.py, "Small integers"): big is the whole value, small is zero, and
    every partial sum is exact, so C must be the float64 product bit for bit. At K = 65536 the 3xTF32
    bound, which grows like K, would let a promotion chain dropped or added twice pass."""
    verdict = LAB.check_exact("k8", 256, 384, 65536)
    assert verdict.ok, str(verdict)


@needs_gpu
@pytest.mark.parametrize("shape", [(3, 5, 7), (129, 130, 132)], ids=lambda s: "x".join(map(str, s)))
def test_inf_and_nan_propagate_as_in_fp32(shape):
    """Inf times a TF32 number (small part 0, e.g. 1.0) must stay Inf, not become Inf x 0 = NaN."""
    M, N, K = shape
    rng = np.random.default_rng(3)
    A = rng.uniform(-1, 1, (M, K)).astype(np.float32)
    B = np.abs(rng.uniform(0.5, 1, (K, N))).astype(np.float32)
    B[0, :] = 1.0                                       # exact TF32: its small part is 0
    A[0, 0], A[1, 0], A[2, K // 2] = np.inf, -np.inf, np.nan
    with np.errstate(invalid="ignore", over="ignore"):
        want = A.astype(np.float64) @ B.astype(np.float64)
    got = LAB.matmul("k8", A, B).astype(np.float64)
    assert np.array_equal(np.isnan(got), np.isnan(want))
    assert np.array_equal(np.isposinf(got), np.isposinf(want)) and np.array_equal(np.isneginf(got), np.isneginf(want))
    assert np.isposinf(got[0]).all() and np.isneginf(got[1]).all() and np.isnan(got[2]).all()
    # an Inf meeting operands of 1e3 to 1e9, either sign (common/testing.py says why)
    assert_inf_meets_large_operands_as_in_fp32(lambda A, B: LAB.matmul("k8", A, B), M, N, K, rng)
