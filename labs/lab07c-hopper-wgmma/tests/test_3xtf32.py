"""h4_3xtf32 (3xTF32 on wgmma): what its header claims about the compiled code and about its launch,
checked without a GPU; a numpy model of its arithmetic (the split, three truncating wgmma per 8-deep
slice, chains promoted every KCHUNK, consumer 1's half-chunk offset) against the course's bound and
against FP32; and on a Hopper GPU the split pass bit for bit, Inf and NaN, and the issue's accuracy bar
against cuBLAS SGEMM. (Its results on the odd shapes are in test_gpu.py: it is a row of the table.)"""
import itertools
import re

import numpy as np
import pytest

from common.precision import TF32_SPLIT, precision, tf32_split
from common.sass import disassemble, kernel_listing
from common.testing import GPU_OK, GPU_TEXT, assert_inf_meets_large_operands_as_in_fp32, lab_of, needs_cuobjdump, needs_gpu

LAB = lab_of(__file__)
launch = LAB.module("launch")                          # the module whose hooks the table names
ROW = LAB.kernel("h4_3xtf32")
RUNGS = ["h4_3xtf32", "h6_3xtf32"]                     # the GPU tests below run both (h6_3xtf32: test_h6_3xtf32.py)
P = ROW.tiling.params
SLICES = P["BK"] // 8                                   # 8-deep wgmma slices per stage
P3 = precision("fp32_3xtf32")
ARCH = LAB.gpu_arch() if GPU_OK else None
needs_hopper = pytest.mark.skipif(GPU_OK and ARCH != "sm_90",
                                  reason=f"lab 7c's kernels need an sm_90 GPU (H100, H200): this one is {GPU_TEXT}")


# --- the table ----------------------------------------------------------------------------------

def test_the_row_is_checked_with_the_3xtf32_bound_and_takes_any_k():
    assert ROW.precision == "fp32_3xtf32" and ROW.roundoff == TF32_SPLIT
    assert LAB.ladder_precision("3xtf32").baseline == "cuBLAS SGEMM"
    assert LAB.option("EXTRA_BASELINES")["3xtf32"] == ["tf32_tensor", "tf32x3_cublas", "tf32x3_cublas_presplit", "fp32_bf16x9"]
    for shape in [(1, 1, 1), (77, 67, 45), (129, 3, 1001)]:
        assert ROW.refusal(*shape) is None, shape
    assert ROW.helpers == {"split": "split_h4_3xtf32"}


def test_the_tile_parameters_fit_the_registers_and_shared_memory():
    """Two consumers of 64 x BN (BN / 2 chain + BN / 2 running floats a thread), 4 boxes a stage."""
    assert (ROW.threads, ROW.tile) == (384, (128, 128))
    assert ROW.shared_bytes == P["STAGES"] * 4 * 128 * P["BK"] * 4 + 1024 <= 227 * 1024
    assert P["KCHUNK"] % P["BK"] == 0


def test_the_accuracy_study_has_one_pass_the_rung_and_the_rung_without_promotion():
    from common import accuracy
    rows = accuracy.study_rows(LAB)
    assert [k.name for k in rows] == ["h4_tf32", "h4_3xtf32", "h4_3xtf32[KCHUNK131072]", "h6_3xtf32"]
    # consumer 1's first chain is half a KCHUNK: 65536, the study's largest K, is still one chain
    assert rows[2].tiling.params["KCHUNK"] // 2 >= accuracy.FULL_KS[-1]


# --- the compiled code --------------------------------------------------------------------------

@pytest.fixture(scope="module")
def listing():
    needs_cuobjdump()
    LAB.build([ROW], ["sm_90"])                        # Hopper rows build for sm_90a (lab.py)
    text = disassemble(LAB.cubin(ROW, "sm_90"))
    return {v: [re.sub(r"^/\*[0-9a-f]+\*/\s*", "", line).rstrip(" ;") for line in kernel_listing(text, e)]
            for v, e in ROW.all_entries.items()}      # the instructions without their addresses


def ops(lines, prefix):
    return [line for line in lines if re.match(r"(@!?U?P\w+\s+)?" + re.escape(prefix), line)]


def test_make_ncu_tensor_profiles_the_split_pass_and_the_gemm_both():
    """The split pass is a launch of the call: ncu takes every launch of the marked call among the GEMM's
    entry and the split's (two rows: "h4_3xtf32 [split]", no TFLOP/s, and "h4_3xtf32"), not only the
    first, which was the pass (NOTES.md, the knob sweeps)."""
    from common import profiling
    argv = profiling.ncu_argv(LAB, "ncu", "h4_3xtf32", 4096, metrics=["gpu__time_duration.sum"])
    assert argv[argv.index("--launch-count") + 1] == "2" and argv[argv.index("--profile-from-start") + 1] == "off"
    pattern = argv[argv.index("--kernel-name") + 1][len("regex:"):]
    assert all(re.fullmatch(pattern, e) for e in ("sgemm_h4_3xtf32", "split_h4_3xtf32"))


def test_twelve_tf32_wgmma_per_stage_one_of_them_starting_a_chain(listing):
    """3 wgmma (small.big, big.small, big.big) per 8-deep slice, SLICES slices a stage, in one loop body;
    the chain's first has the scale-d predicate (D = A B), the rest accumulate."""
    hg = ops(listing[""], "HGMMA")
    assert len(hg) == 3 * SLICES == 12, hg
    assert all(line.startswith("HGMMA.64x128x8.F32.TF32 ") for line in hg), hg[:2]
    assert sum(bool(re.search(r",\s*!?UP\d", line)) for line in hg) == 1, hg


def test_four_tma_boxes_per_stage(listing):
    """A_big, A_small, Bt_big, Bt_small: ptxas unrolls the producer's loop, so a multiple of 4."""
    n = len(ops(listing[""], "UTMALDG.2D"))
    assert n > 0 and n % 4 == 0, n


def _regions(lines):
    """The consumers' instructions and the producer warpgroup's (from its USETMAXREG.DEALLOC on, to the
    end: ptxas lays the consumers' branch out first)."""
    start = next(i for i, line in enumerate(lines) if line.startswith("USETMAXREG.DEALLOC"))
    return lines[:start], lines[start:]


def test_the_promotion_is_64_fadds_after_the_chain_is_waited_for(listing):
    """wgmma_wait<1> inside a chain, wait<0> once at its end, then BN / 2 FADDs, the consumers' only ones."""
    lines, _ = _regions(listing[""])
    waits = [i for i, line in enumerate(lines) if line.startswith("WARPGROUP.DEPBAR.LE")]
    assert [lines[i].split()[-2:] for i in waits] == [["gsb0,", "0x1"], ["gsb0,", "0x0"]], [lines[i] for i in waits]
    fadds = [i for i, line in enumerate(lines) if line.startswith("FADD")]
    assert len(fadds) == P["BN"] // 2 and min(fadds) > waits[1], (len(fadds), waits)


def test_the_splitter_warps_split_as_the_header_says(listing):
    """The producer warpgroup's splitter warps (OVERLAP), U = SPLIT_UNROLL: A's rows in runs of U evict-first
    loads, all issued before the first split's stores, U FADDs (x - big) and 2 U evict-first stores; a
    proxy fence and a release add on the band's counter; the TMA thread's wait: acquire loads, nanosleep,
    and its own proxy fence. Nothing in local memory (the producer has 40 registers)."""
    _, prod = _regions(listing[""])
    u = P["SPLIT_UNROLL"]
    loads = [i for i, line in enumerate(prod) if re.match(r"(@!?P\w+\s+)?LDG\.E\.EF", line)]
    stores = [i for i, line in enumerate(prod) if re.match(r"(@!?P\w+\s+)?STG\.E\.EF", line)]
    assert len(loads) == u and len(stores) == 2 * u and max(loads) < min(stores), (loads, stores)
    assert len(ops(prod, "FADD")) == u and not ops(prod, "STS") and not ops(prod, "LDS")
    assert len(ops(prod, "FENCE.VIEW.ASYNC.G")) == 2 and len(ops(prod, "REDG.E.ADD.STRONG.GPU")) == 1
    assert ops(prod, "LDG.E.STRONG.GPU") and ops(prod, "NANOSLEEP")
    assert not ops(prod, "LDL") and not ops(prod, "STL")


def test_warp_specialized_with_setmaxnreg(listing):
    assert ops(listing[""], "USETMAXREG.DEALLOC") and ops(listing[""], "USETMAXREG.TRY_ALLOC")
    assert ops(listing[""], "SYNCS.ARRIVE.TRANS64") and ops(listing[""], "SYNCS.PHASECHK")


def test_the_split_pass_is_the_header_says(listing):
    """E = SPLIT_TILE^2 / 256 elements of A and E of B a thread: per element the clamp's limit (FSEL: 1 for
    Inf and NaN), its two FMNMX and one FADD (x - big); one LDG and two STG (big and small), and one STG in
    a loop of its own (block 0 zeroes the GEMM's band counters); B's transpose
    through shared memory (two STS, two LDS an element); no tensor core. Each part's E loads are plain
    LDG (not .CONSTANT, which ptxas would sink among the stores) and all go out before its first store."""
    s, e = listing["split"], P["SPLIT_TILE"] ** 2 // 256
    assert len(ops(s, "FMNMX")) == 2 * len(ops(s, "FADD")) == 2 * len(ops(s, "FSEL")) == 4 * e
    assert len(ops(s, "LDG")) == 2 * e and len(ops(s, "STG")) == 4 * e + 1    # + 1: block 0 zeroes the band counters
    assert len(ops(s, "STS")) == len(ops(s, "LDS")) == 2 * e
    assert not [l for l in ops(s, "LDG") if "CONSTANT" in l]
    kinds = [m.group(1) for l in s for m in [re.search(r"\b(LDG|STG|STS)\.", l)] if m]
    runs = [(k, len(list(g))) for k, g in itertools.groupby(kinds)]
    assert [n for k, n in runs if k == "LDG"] == [e, e], runs      # each part's loads go out together
    assert not ops(s, "HGMMA") and not ops(s, "HMMA")


# --- the launch (the hook's arithmetic, with the driver faked) ------------------------------------

@pytest.mark.parametrize("shape", [(1, 1, 1), (77, 67, 45), (300, 520, 1000), (4096, 4096, 4096)],
                         ids=lambda s: "x".join(map(str, s)))
def test_the_hook_splits_into_padded_parts_and_maps_each(monkeypatch, shape):
    M, N, K = shape
    got = {"scratch": {}, "maps": [], "launches": []}
    bases = {"A split": 1 << 20, "B split, transposed": 1 << 36, "A band counters": 1 << 44}

    def scratch(purpose, nbytes):
        got["scratch"][purpose] = nbytes
        return bases[purpose]

    def tmap(ptr, dtype, rows, cols, box_rows, box_cols, pitch):
        got["maps"].append((ptr, dtype, rows, cols, box_rows, box_cols, pitch))
        return f"map{len(got['maps'])}"

    def prepared(f, grid, block, args, smem, stream):
        got["launches"].append((f, grid, block, args, smem))
        return lambda: None

    monkeypatch.setattr(launch, "cubin_for", lambda kernel, func: "cubin")
    monkeypatch.setattr(launch, "function", lambda kernel, entry, smem, cubin=None: entry)
    monkeypatch.setattr(launch, "_scratch", scratch)
    monkeypatch.setattr(launch, "_map", tmap)
    monkeypatch.setattr(launch, "prepared_launch", prepared)
    monkeypatch.setattr(launch, "_ints", lambda *xs: list(xs))
    monkeypatch.setattr(launch, "_ptr", lambda x: ("ptr", int(x)))
    monkeypatch.setattr(launch, "_sm_count", lambda: 132)
    monkeypatch.setattr(launch, "_PREPARED", {})
    launch.split_persistent(ROW, None, M, N, K, 11, 22, 33, 1.0, 0.0, None)

    pk = -(-K // 4) * 4                                    # 16-byte rows for TMA
    a2, b2 = bases["A split"], bases["B split, transposed"]
    bands = -(-M // (P["GROUP"] * 128))
    assert got["scratch"] == {"A split": 2 * M * pk * 4, "B split, transposed": 2 * N * pk * 4,
                              "A band counters": 4 * bands}
    assert got["maps"] == [(a2, "float32", M, K, 128, 32, pk), (a2 + M * pk * 4, "float32", M, K, 128, 32, pk),
                           (b2, "float32", N, K, 128, 32, pk), (b2 + N * pk * 4, "float32", N, K, 128, 32, pk)]
    (split, sgrid, sblock, sargs, ssmem), (gemm, grid, block, args, smem) = got["launches"]
    assert split == "split_h4_3xtf32" and sblock == (32, 8) and ssmem == 0
    t = P["SPLIT_TILE"]
    tiles = -(-M // 128) * -(-N // 128)
    _, first_band = launch.split_share(ROW, M, N, min(tiles, 132))
    a_rows = min(M, first_band * P["GROUP"] * 128)
    assert (M, N, K) != (4096, 4096, 4096) or (a_rows, first_band, bands) == (1024, 1, 4)
    assert sgrid == (-(-K // t) * (-(-a_rows // t) + -(-N // t)),)        # a t x t tile of A or B per block
    counts = ("ptr", bases["A band counters"])
    assert sargs == [M, N, K, ("ptr", 11), ("ptr", 22), ("ptr", a2), ("ptr", b2), pk, a_rows, counts, bands]
    assert gemm == "sgemm_h4_3xtf32" and grid == (min(tiles, 132),) and block == (384,)
    assert args == [M, N, K, "map1", "map2", "map3", "map4", ("ptr", 33), ("ptr", 11), ("ptr", a2), pk, counts,
                    first_band] and smem == ROW.shared_bytes


@pytest.mark.parametrize("shape, share", [((4096, 4096, 4096), (4, 1)), ((8192, 8192, 8192), (8, 1)),
                                          ((2100, 2500, 301), (3, 1)), ((8192, 256, 512), (8, 8)),
                                          ((1100, 2200, 200), (2, 1)), ((300, 520, 1000), (1, 1)), ((1, 1, 1), (1, 1))],
                         ids=lambda s: "x".join(map(str, s)))
def test_the_pass_splits_the_bands_the_first_wave_reads_and_the_gemm_the_rest(shape, share):
    """(bands of A, the first band the GEMM splits). The first wave of 132 tiles reads band 0 (8 tile rows,
    at least 17 tile columns); 8192 x 256: a band is 16 tiles, so the first wave reads all 8 bands and the
    GEMM splits none. With OVERLAP = 0 the pass splits every band."""
    M, N, _ = shape
    grid = min(-(-M // 128) * -(-N // 128), 132)
    assert launch.split_share(ROW, M, N, grid) == share
    assert launch.split_share(ROW.with_params(OVERLAP=0), M, N, grid) == (share[0], share[0])


# --- a numpy model of the arithmetic --------------------------------------------------------------

def _truncate_to_fp32(s):
    """float64 -> the float32 nearest to zero of the two around it (a truncating adder)."""
    f = s.astype(np.float32)
    over = np.abs(f.astype(np.float64)) > np.abs(s)
    f[over] = np.nextafter(f[over], np.float32(0))
    return f


def model(A, B, kchunk=P["KCHUNK"], bk=P["BK"], stagger=True, consumers_own="rows"):
    """The rung's arithmetic: the split pass (ties away, small rounded), per 8-deep slice small.big,
    big.small, big.big each added to the chain and truncated to FP32 (one wgmma), a chain of KCHUNK
    (rows 64..127 of each 128-row tile: consumer 1, first chain half a chunk shorter) added to the FP32
    running sum, rounded to nearest. consumers_own="cols": h6_3xtf32, which computes C^T, so that its
    consumers own 64 columns of each 128-column tile of C (consumer 1's chains offset there); the same
    products in the same order per element."""
    (Ab, As), (Bb, Bs) = tf32_split(A, "away", "round"), tf32_split(B, "away", "round")
    a_big, a_small, b_big, b_small = (x.astype(np.float64) for x in (Ab, As, Bb, Bs))
    products = ((a_small, b_big), (a_big, b_small), (a_big, b_big))
    if consumers_own == "cols":       # C^T = B^T A^T: B^T's parts are wgmma's first operand
        C_T = _chains(B.T, [(b.T, a.T) for a, b in products], kchunk, bk, stagger)
        return C_T.T
    return _chains(A, products, kchunk, bk, stagger)


def _chains(A, products, kchunk, bk, stagger):
    """The chains and the promotion over rows of the first operand (consumer c: rows 64 c.. of each 128)."""
    M, K = A.shape
    N = products[0][1].shape[1]
    out = np.zeros((M, N))
    tiles = kchunk // bk
    for c in (0, 1):
        rows = np.nonzero((np.arange(M) % 128) // 64 == c)[0]
        ends = list(range((tiles - (c * (tiles // 2) if stagger else 0)) * bk, K, kchunk)) + [K]
        total, start = np.zeros((rows.size, N), np.float32), 0
        for end in ends:
            chain = np.zeros_like(total)
            for k0 in range(start, end, 8):
                s = slice(k0, min(k0 + 8, end))
                for a, b in products:
                    chain = _truncate_to_fp32(chain.astype(np.float64) + a[rows, s] @ b[s, :])
            total, start = (total + chain).astype(np.float32), end
        out[rows] = total
    return out


def ffma(A, B):
    """FP32 FFMA in order of k, rounded to nearest: the CUDA-core GEMM's arithmetic."""
    A64, B64 = A.astype(np.float64), B.astype(np.float64)
    acc = np.zeros((A.shape[0], B.shape[1]), np.float32)
    for k in range(A.shape[1]):
        acc = (acc + np.outer(A64[:, k], B64[k, :])).astype(np.float32)
    return acc.astype(np.float64)


def draw(kind, rows, cols, rng):
    if kind == "normal":
        return rng.standard_normal((rows, cols)).astype(np.float32)
    return (rng.choice([-1.0, 1.0], (rows, cols)) * 10.0 ** rng.uniform(-3, 3, (rows, cols))).astype(np.float32)


def errors(C, A, B):
    A64, B64 = A.astype(np.float64), B.astype(np.float64)
    e = np.abs(C - A64 @ B64) / (np.abs(A64) @ np.abs(B64))
    return np.array([e.max(), np.sqrt(np.mean(e ** 2))])


@pytest.mark.parametrize("own", ["rows", "cols"])        # h4_3xtf32's consumers, h6_3xtf32's
@pytest.mark.parametrize("shape", [(1, 1, 1), (17, 33, 9), (130, 20, 77), (129, 31, 300), (200, 8, 1000),
                                   (20, 130, 77)], ids=lambda s: "x".join(map(str, s)))
def test_the_model_is_within_the_3xtf32_bound(shape, own):
    M, N, K = shape
    rng = np.random.default_rng(list(shape))
    for kind in ("normal", "wide"):
        A, B = draw(kind, M, K, rng), draw(kind, K, N, rng)
        A64, B64 = A.astype(np.float64), B.astype(np.float64)
        tol = P3.tolerance(K, np.abs(A64) @ np.abs(B64), ROW.roundoff)
        assert np.all(np.abs(model(A, B, consumers_own=own) - A64 @ B64) <= tol), kind


@pytest.mark.parametrize("own", ["rows", "cols"])
@pytest.mark.parametrize("kind", ["normal", "wide"])
def test_in_the_model_promotion_keeps_the_error_at_fp32s_as_k_grows(kind, own):
    """The issue's bar in the model: max and RMS within 3x FFMA's at K = 256 and 4096 (the bench's is 5x
    cuBLAS SGEMM's), while one chain over all of K is past 5x at 4096 and grows with K."""
    rng = np.random.default_rng(44)
    whole = {}
    for K in (256, 4096):
        A, B = draw(kind, 128, K, rng), draw(kind, K, 24 if own == "rows" else 136, rng)
        base = errors(ffma(A, B), A, B)
        assert np.all(errors(model(A, B, consumers_own=own), A, B) <= 3 * base), K
        whole[K] = errors(model(A, B, kchunk=1 << 20, stagger=False, consumers_own=own), A, B) / base
    assert np.all(whole[4096] > 5) and np.all(whole[4096] > whole[256])


# --- on a Hopper GPU ---------------------------------------------------------------------------------

@needs_gpu
@needs_hopper
def test_the_split_pass_is_the_course_split_bit_for_bit():
    """A -> A_big, A_small (pitch K rounded up to 4), B -> Bt_big, Bt_small (transposed): each part equal to
    common.precision.tf32_split(x, ties="away") bit for bit, Inf, -0 and FP32's largest included; a NaN
    gives a finite big and a NaN small. K = 45: a padded pitch; 37 x 70 cuts the pass's tiles."""
    import pycuda.driver as cuda
    from common.kernels import load_function
    M, N, K = 37, 70, 45
    pk = 48
    rng = np.random.default_rng(9)
    A, B = draw("wide", M, K, rng), draw("wide", K, N, rng)
    special = np.array([np.inf, -np.inf, np.nan, 0.0, -0.0, 3.4028235e38, -3e-30, 1.0], np.float32)
    A.ravel()[:special.size], B.ravel()[-special.size:] = special, special
    LAB.build([ROW], ["sm_90"])
    split = load_function(str(LAB.cubin(ROW, "sm_90")), ROW.helpers["split"], 0, "iiiPPPPiiPi")
    a, b = cuda.to_device(A), cuda.to_device(B)
    a2, b2 = cuda.to_device(np.full(2 * M * pk, 7.0, np.float32)), cuda.to_device(np.full(2 * N * pk, 7.0, np.float32))
    flags = cuda.to_device(np.full(1, 5, np.uint32))
    split.prepared_call((launch.split_grid(M, N, K, P["SPLIT_TILE"]), 1, 1), (32, 8, 1), M, N, K, a, b, a2, b2, pk,
                        M, flags, 1)
    assert cuda.from_device(flags, (1,), np.uint32)[0] == 0             # the GEMM's band counter, zeroed
    got_a, got_b = cuda.from_device(a2, (2, M, pk), np.float32), cuda.from_device(b2, (2, N, pk), np.float32)
    for x, parts in ((A, got_a), (B.T, got_b)):
        want = tf32_split(np.ascontiguousarray(x), ties="away")
        same = ~np.isnan(x)
        for part, w in zip(parts, want):
            assert np.array_equal(part[:, :K][same].view(np.uint32), w[same].view(np.uint32))
        assert np.all(np.isfinite(parts[0][:, :K][~same])) and np.all(np.isnan(parts[1][:, :K][~same]))
        assert np.all(parts[:, :, K:] == 7.0)            # the padding is never written (TMA never reads it)


@needs_gpu
@needs_hopper
@pytest.mark.parametrize("shape", [(2100, 2500, 301), (4096, 4096, 256)], ids=lambda s: "x".join(map(str, s)))
def test_the_gemms_own_split_is_the_pass_bit_for_bit(shape):
    """Where the GEMM's splitter warps split A's later bands (OVERLAP; 2100 x 2500: bands 1 and 2, the last
    52 rows, K = 301 not a multiple of 4), C equals, bit for bit, that of the build whose pass splits all
    of A, and passes the check against float64; a band read before its counter is complete would show here
    as stale parts (the buffers are reused from the call before, on other inputs)."""
    M, N, K = shape
    bands, first_band = launch.split_share(ROW, M, N, 132)
    assert first_band < bands
    rng = np.random.default_rng(7)
    whole = ROW.with_params(OVERLAP=0)
    for _ in range(2):                                  # twice: the second call's scratch holds the first's parts
        A, B = draw("wide", M, K, rng), draw("normal", K, N, rng)
        got, want = LAB.matmul(ROW, A, B), LAB.matmul(whole, A, B)
        assert np.array_equal(got.view(np.uint32), want.view(np.uint32))
    verdict = LAB.check(ROW, M, N, K)
    assert verdict.ok, str(verdict)


@needs_gpu
@needs_hopper
@pytest.mark.parametrize("name", RUNGS)
@pytest.mark.parametrize("shape", [(3, 5, 7), (129, 130, 132)], ids=lambda s: "x".join(map(str, s)))
def test_inf_and_nan_propagate_as_in_fp32(shape, name):
    """Inf times a TF32 number (small part 0, e.g. 1.0) must stay Inf, not become Inf x 0 = NaN."""
    M, N, K = shape
    rng = np.random.default_rng(3)
    A = rng.uniform(-1, 1, (M, K)).astype(np.float32)
    B = rng.uniform(0.5, 1, (K, N)).astype(np.float32)
    B[0, :] = 1.0
    A[0, 0], A[1, 0], A[2, K // 2] = np.inf, -np.inf, np.nan
    got = LAB.matmul(name, A, B).astype(np.float64)
    assert np.isposinf(got[0]).all() and np.isneginf(got[1]).all() and np.isnan(got[2]).all()
    assert np.isfinite(got[3:]).all()
    # and in B, which h6_3xtf32 splits in registers: Inf times a TF32 number of A (row 3 of A: 1.0)
    A, B = rng.uniform(-1, 1, (M, K)).astype(np.float32), rng.uniform(0.5, 1, (K, N)).astype(np.float32)
    A[:, 0] = 1.0
    B[0, 0], B[0, 1], B[K // 2, 2 % N] = np.inf, -np.inf, np.nan
    got = LAB.matmul(name, A, B).astype(np.float64)
    ref = A.astype(np.float64) @ B.astype(np.float64)
    assert np.array_equal(np.isnan(got), np.isnan(ref)) and np.array_equal(np.isposinf(got), np.isposinf(ref))
    assert np.array_equal(np.isneginf(got), np.isneginf(ref))
    # an Inf meeting operands of 1e3 to 1e9, either sign (common/testing.py says why)
    assert_inf_meets_large_operands_as_in_fp32(lambda A, B: LAB.matmul(name, A, B), M, N, K, rng)


@needs_gpu
@needs_hopper
@pytest.mark.parametrize("name", RUNGS)
@pytest.mark.parametrize("kind", ["normal", "wide"])
def test_max_and_rms_error_within_5x_cublas_sgemms_as_k_grows(kind, name):
    """The issue's accuracy bar, at 256 x 256 and K = 256 and 16384 (make accuracy goes to 65536)."""
    from common import accuracy
    from common.check import reference
    from common.cublas import Cublas
    blas, rng, M = Cublas(), np.random.default_rng(), 256
    for K in (256, 16384):
        A, B = accuracy.draw(kind, M, K, rng), accuracy.draw(kind, K, M, rng)
        ref, abs_ref = reference(A, B)
        sgemm = accuracy.measure_one(lambda a, b, c: blas.sgemm(M, M, K, a, b, c), M, M, A, B, ref, abs_ref)
        ours = accuracy.measure_one(LAB.launcher(name, M, M, K), M, M, A, B, ref, abs_ref)
        for what in ("max", "rms"):
            assert ours[what] <= 5 * sgemm[what], (K, what, ours, sgemm)


@needs_gpu
@needs_hopper
@pytest.mark.parametrize("name", RUNGS)
def test_a_long_k_adds_every_product_exactly_once(name):
    """Small integers (common/precision.py, "Small integers"): big is the whole value, small is zero, and
    every partial sum is exact, so C must be the float64 product bit for bit. At K = 65536 the 3xTF32
    bound, which grows like K, would let a k-chunk dropped or promoted twice pass."""
    verdict = LAB.check_exact(name, 256, 384, 65536)
    assert verdict.ok, str(verdict)


@needs_gpu
@needs_hopper
@pytest.mark.parametrize("name", RUNGS)
@pytest.mark.parametrize("shape", [(1, 1, 1), (2, 3, 5), (65, 129, 33), (128, 128, 96), (130, 260, 2049)],
                         ids=lambda s: "x".join(map(str, s)))
def test_any_k_and_chains_of_every_length(shape, name):
    """K below one 8-deep slice, a chain cut short by K (consumer 1's half chunk, then the tail), K one
    past a multiple of KCHUNK: each against the float64 reference with the 3xTF32 bound, C poisoned."""
    verdict = LAB.check(name, *shape)
    assert verdict.ok, str(verdict)
