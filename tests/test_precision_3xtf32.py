"""The 3xTF32 tolerance (common/precision.py, fp32_3xtf32): it holds for a bit-exact numpy model of the
split and of tensor-core accumulation, and it is not vacuous: 1xTF32 results break it.

The model: TF32 rounding by bit masks (as cvt.rn / cvt.rna), the split big = tf32(x),
small = tf32(x - big), the three products exact (float64 holds a 22-bit product exactly), summed either
exactly (float64) or the way a tensor core may: in FP32, each addition truncated toward zero, the
small products first, optionally promoted to an FP32 running sum every KC of K."""
import numpy as np
import pytest

from common.precision import (PRECISIONS, TF32_MAX, TF32_SPLIT, precision, tf32_round, tf32_split,
                              tf32_truncate)

P3 = precision("fp32_3xtf32")
# the course's odd shapes (lab 7a's GPU tests), M x N x K
SHAPES = [(1, 1, 1), (1, 300, 77), (17, 33, 9), (127, 129, 132), (129, 127, 64), (128, 130, 128),
          (257, 129, 513), (1000, 3, 520), (2, 301, 40), (5, 7, 2048), (300, 300, 1), (256, 256, 4)]
SMALL_K = [s for s in SHAPES if s[2] <= 64]


def draw(rows, cols, rng, kind):
    """Inputs over wide ranges: uniform(-1, 1); per-row magnitudes 2^-20..2^20 (the course's TF32
    draw); every element log-uniform over 1e-3..1e3 with random signs (the accuracy study's)."""
    if kind == "uniform":
        x = rng.uniform(-1, 1, (rows, cols))
    elif kind == "rows":
        x = rng.uniform(-1, 1, (rows, cols)) * np.exp2(rng.integers(-20, 21, (rows, 1)))
    else:
        x = rng.choice([-1.0, 1.0], (rows, cols)) * 10.0 ** rng.uniform(-3, 3, (rows, cols))
    return x.astype(np.float32)


def exact_3xtf32(A, B, ties="even", small="round"):
    (Ab, As), (Bb, Bs) = tf32_split(A, ties, small), tf32_split(B, ties, small)
    f = [x.astype(np.float64) for x in (Ab, As, Bb, Bs)]
    with np.errstate(invalid="ignore"):
        return f[1] @ f[2] + f[0] @ f[3] + f[0] @ f[2]


def _truncate_to_fp32(s):
    """float64 -> the float32 nearest to zero of the two around it (a truncating adder's result)."""
    f = s.astype(np.float32)
    over = np.abs(f.astype(np.float64)) > np.abs(s)
    f[over] = np.nextafter(f[over], np.float32(0))
    return f


def tensor_core_3xtf32(A, B, chunk=None):
    """Every addition truncated to FP32, product by product, in the kernel's order per k: small.big,
    big.small, big.big; with chunk, a chain restarts from zero every `chunk` k and is added to an FP32
    running sum, rounded to nearest (FADD)."""
    (Ab, As), (Bb, Bs) = tf32_split(A, small="truncate"), tf32_split(B, small="truncate")   # as k8
    f = [x.astype(np.float64) for x in (Ab, As, Bb, Bs)]
    M, K = A.shape
    acc = np.zeros((M, B.shape[1]), np.float32)
    total = np.zeros_like(acc)
    for k in range(K):
        for a, b in ((f[1], f[2]), (f[0], f[3]), (f[0], f[2])):
            acc = _truncate_to_fp32(acc.astype(np.float64) + np.outer(a[:, k], b[k, :]))
        if chunk and (k + 1) % chunk == 0:
            total, acc = (total + acc).astype(np.float32), np.zeros_like(acc)
    return (total + acc).astype(np.float64)


def per_mma_3xtf32(A, B, chunk=None):
    """As tensor_core_3xtf32, with one truncation per mma (8 products and the accumulator summed, then
    truncated to FP32): the hardware's alignment is finer than a truncation per product."""
    (Ab, As), (Bb, Bs) = tf32_split(A, small="truncate"), tf32_split(B, small="truncate")
    f = [x.astype(np.float64) for x in (Ab, As, Bb, Bs)]
    K = A.shape[1]
    acc = np.zeros((A.shape[0], B.shape[1]), np.float32)
    total = np.zeros_like(acc)
    for k0 in range(0, K, 8):
        for a, b in ((f[1], f[2]), (f[0], f[3]), (f[0], f[2])):
            acc = _truncate_to_fp32(acc.astype(np.float64) + a[:, k0:k0 + 8] @ b[k0:k0 + 8, :])
        if chunk and (k0 + 8) % chunk == 0:
            total, acc = (total + acc).astype(np.float32), np.zeros_like(acc)
    return (total + acc).astype(np.float64)


def ratio(C, A, B, prec=P3, roundoff=None):
    """max |C - A.B| / tolerance over the elements: <= 1 passes."""
    A64, B64 = A.astype(np.float64), B.astype(np.float64)
    tol = prec.tolerance(A.shape[1], np.abs(A64) @ np.abs(B64), roundoff)
    return float(np.max(np.abs(C - A64 @ B64) / tol))


@pytest.mark.parametrize("ties", ["even", "away"])
def test_tf32_rounding_keeps_10_mantissa_bits_and_errs_at_most_half_an_ulp(ties):
    x = draw(200, 200, np.random.default_rng(1), "wide")
    r = tf32_round(x, ties)
    assert not np.any(r.view(np.uint32) & 0x1FFF)
    rel = np.abs(r.astype(np.float64) - x) / np.abs(x)
    assert rel.max() <= 2.0 ** -11 and rel.max() > 0.9 * 2.0 ** -11
    t = tf32_truncate(x)
    assert np.all(np.abs(t) <= np.abs(x)) and (np.abs(t.astype(np.float64) - x) / np.abs(x)).max() < 2.0 ** -10


def test_tf32_rounding_ties_as_the_instructions_do():
    one, ulp = 1.0, 2.0 ** -10
    ties = np.array([one + ulp / 2, one + 1.5 * ulp], np.float32)        # halfway cases
    assert list(tf32_round(ties, "even")) == [one, one + 2 * ulp]
    assert list(tf32_round(ties, "away")) == [one + ulp, one + 2 * ulp]
    special = np.array([np.inf, -np.inf, np.nan], np.float32)
    assert np.array_equal(tf32_round(special), special, equal_nan=True)


@pytest.mark.parametrize("small_mode", ["round", "truncate"])
@pytest.mark.parametrize("ties", ["even", "away"])
def test_the_split_is_exact_to_2_to_the_minus_23(ties, small_mode):
    """|x - big - small| <= 2^-23 |x| (the module's derivation), reached, whether small is rounded or
    truncated; x - big exact in FP32."""
    x = draw(300, 300, np.random.default_rng(2), "wide")
    big, small = tf32_split(x, ties, small_mode)
    assert not np.any(big.view(np.uint32) & 0x1FFF) and not np.any(small.view(np.uint32) & 0x1FFF)
    x64 = x.astype(np.float64)
    assert np.array_equal((x - big).astype(np.float64), x64 - big)          # the remainder is exact
    rel = np.abs(x64 - big - small) / np.abs(x64)
    assert rel.max() <= 2.0 ** -23 and rel.max() > 2.0 ** -25
    assert (np.abs(small) / np.abs(x64)).max() <= 2.0 ** -11


def test_a_product_of_two_tf32_values_is_exact_in_fp32():
    rng = np.random.default_rng(3)
    a, b = tf32_round(draw(1, 100000, rng, "wide")), tf32_round(draw(1, 100000, rng, "wide"))
    assert np.array_equal((a * b).astype(np.float64), a.astype(np.float64) * b)


def test_inf_and_nan_propagate_through_the_three_products_as_in_fp32():
    """Inf times a TF32 number (small part 0) must stay Inf: an Inf or NaN splits into big = +-1 and
    small = x; a finite x beyond TF32's range into big = +-TF32_MAX and a finite small."""
    big, small = tf32_split(np.array([np.inf, -np.inf, np.nan, 1.0, 3.402e38], np.float32))
    assert list(big[:3]) == [1.0, -1.0, -1.0] and big[3] == 1.0
    assert np.isposinf(small[0]) and np.isneginf(small[1]) and np.isnan(small[2]) and small[3] == 0.0
    assert big[4] == TF32_MAX and np.float64(big[4]) + small[4] == pytest.approx(np.float64(np.float32(3.402e38)), rel=2.0 ** -22)
    a = np.array([[np.inf, 1.0], [-np.inf, 1.0], [np.nan, 1.0], [np.inf, 1.0], [np.inf, -np.inf]], np.float32)
    b = np.array([[1.0, 0.0, -np.inf], [2.0, 2.0, 2.0]], np.float32)     # 1.0: a TF32 number, small part 0
    with np.errstate(invalid="ignore", over="ignore"):
        want = a.astype(np.float64) @ b.astype(np.float64)
        got = exact_3xtf32(a, b)
    assert np.array_equal(np.isnan(got), np.isnan(want))
    assert np.array_equal(got[~np.isnan(want)], want[~np.isnan(want)])
    assert np.isposinf(got[0, 0]) and np.isneginf(got[1, 0]) and np.isposinf(got[1, 2])


def fp32_products_3xtf32(a, b, split=lambda x: tf32_split(x, "away")):
    """One dot product a . b as a tensor core forms it: each of the three products per k (small.big,
    big.small, big.big) rounded to FP32, so that it overflows to Inf as FP32 does, and summed in FP32.
    split: x -> (big, small), the course's by default."""
    (ab, as_), (bb, bs) = split(a), split(b)
    total = np.float32(0)
    with np.errstate(invalid="ignore", over="ignore"):
        for k in range(a.size):
            for x, y in ((as_[k], bb[k]), (ab[k], bs[k]), (ab[k], bb[k])):
                total = np.float32(total + np.float32(x * y))
    return total


def test_an_inf_meets_operands_of_every_size_as_in_fp32():
    """Each finite operand x (1e-30 to 1e38, either sign, some TF32 numbers, 0) times +-Inf and NaN, in
    either operand, and beside it a finite product: the FP32 products' 3xTF32 gives what FP32 does.
    With big = +-TF32_MAX for an Inf (the split's first form), big_inf x small_x overflowed to an Inf
    of small_x's sign for |x| above about 2^11, and met big_inf x big_x's Inf of the other sign: NaN
    (lab 7c's h6_3xtf32, rows of 1e4 and more, on an H100, 2026-12-06)."""
    rng = np.random.default_rng(11)
    xs = np.concatenate([rng.choice([-1.0, 1.0], 400) * 10.0 ** rng.uniform(-30, 38, 400),
                         [0.0, -0.0, 1.0, -3.0, 4096.0, 2.0 ** 20 + 1, 3.4e38]]).astype(np.float32)
    xs = xs[np.isfinite(xs)]
    for special in (np.inf, -np.inf, np.nan):
        for x in xs:
            with np.errstate(invalid="ignore", over="ignore"):
                want = np.float32(x * special)
            for a, b in (([x, 0.5], [special, 2.0]), ([special, 0.5], [x, 2.0])):
                got = fp32_products_3xtf32(np.array(a, np.float32), np.array(b, np.float32))
                assert np.isnan(got) == np.isnan(want) and (np.isnan(want) or got == want), (x, special, got)
    for s, t in ((np.inf, np.inf), (np.inf, -np.inf), (-np.inf, -np.inf)):    # Inf x Inf
        got = fp32_products_3xtf32(np.array([s], np.float32), np.array([t], np.float32))
        assert got == np.float32(s * t), (s, t, got)


def _fp32_products_gemm(split):
    """C = A B, each element formed as fp32_products_3xtf32 forms it, with `split`."""
    return lambda A, B: np.array([[fp32_products_3xtf32(A[i], B[:, j], split) for j in range(B.shape[1])]
                                  for i in range(A.shape[0])], np.float32)


def test_the_gpu_tests_inf_check_passes_the_split_and_fails_its_first_form():
    """common.testing.assert_inf_meets_large_operands_as_in_fp32, which the 3xTF32 rows' GPU tests call:
    a GEMM of FP32 products with the course's split passes it; with the split's first form (an Inf split
    into big = +-TF32_MAX, small = x) it fails, as h6_3xtf32 did on the H100."""
    from common.testing import assert_inf_meets_large_operands_as_in_fp32

    def first_form(x):
        big, small = tf32_split(x, "away")
        inf = np.isinf(x)
        return np.where(inf, np.sign(x) * TF32_MAX, big).astype(np.float32), np.where(inf, x, small).astype(np.float32)

    assert_inf_meets_large_operands_as_in_fp32(_fp32_products_gemm(lambda x: tf32_split(x, "away")), 3, 5, 7,
                                               np.random.default_rng(3))
    with pytest.raises(AssertionError, match="NaN/Inf pattern differs"):
        assert_inf_meets_large_operands_as_in_fp32(_fp32_products_gemm(first_form), 3, 5, 7, np.random.default_rng(3))


def test_the_split_in_k8s_integer_form_is_the_models_ties_away():
    """k8 rounds big as (bits(clamp(x)) + 0x1000) & ~0x1FFF: bit for bit tf32_split(x, "away")'s big."""
    x = np.concatenate([draw(1, 200000, np.random.default_rng(4), "wide").ravel(),
                        np.array([3.4e38, -3.4e38, 1.5, -2.5 * 2.0 ** -10, 0.0], np.float32)])
    clamped = np.clip(x, -TF32_MAX, TF32_MAX).astype(np.float32)
    k8_big = ((clamped.view(np.uint32).astype(np.uint64) + 0x1000) & 0xFFFFE000).astype(np.uint32)
    big, _ = tf32_split(x, "away")
    assert np.array_equal(k8_big, big.view(np.uint32))


def test_the_split_roundoff_covers_the_dropped_terms():
    """2e + e^2 with e = 2^-22 covers 2^-21 + 2^-46, the derived per-product error."""
    e = TF32_SPLIT
    assert 2 * e + e * e >= 2.0 ** -21 + 2.0 ** -46 and P3.input_roundoff == e
    assert PRECISIONS["tf32x3_cublas"].tolerance(100, np.ones(1)) == P3.tolerance(100, np.ones(1))


@pytest.mark.parametrize("kind", ["uniform", "rows", "wide"])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_the_3xtf32_bound_holds_for_the_exact_model(shape, kind):
    rng = np.random.default_rng([*shape, ["uniform", "rows", "wide"].index(kind)])
    M, N, K = shape
    A, B = draw(M, K, rng, kind), draw(K, N, rng, kind)
    for ties, small in (("even", "round"), ("away", "round"), ("even", "truncate"), ("away", "truncate")):
        assert ratio(exact_3xtf32(A, B, ties, small), A, B) <= 1.0


@pytest.mark.parametrize("chunk", [None, 4, 32])
@pytest.mark.parametrize("shape", [(17, 33, 9), (64, 48, 132), (31, 40, 300), (1, 300, 77)],
                         ids=lambda s: "x".join(map(str, s)))
def test_the_3xtf32_bound_holds_for_truncating_accumulation_promoted_or_not(shape, chunk):
    rng = np.random.default_rng(7)
    M, N, K = shape
    A, B = draw(M, K, rng, "uniform"), draw(K, N, rng, "uniform")
    assert ratio(tensor_core_3xtf32(A, B, chunk), A, B) <= 1.0


def test_truncation_errs_more_than_round_to_nearest_and_promotion_helps():
    """The model's premise, on same-signed inputs where truncation's bias adds up: a chain promoted
    every 32 of K errs less than one chain over all of K."""
    rng = np.random.default_rng(8)
    A, B = rng.uniform(0.5, 1, (8, 1024)).astype(np.float32), rng.uniform(0.5, 1, (1024, 8)).astype(np.float32)
    ref = A.astype(np.float64) @ B.astype(np.float64)
    long_chain = np.abs(tensor_core_3xtf32(A, B) - ref).max()
    promoted = np.abs(tensor_core_3xtf32(A, B, chunk=32) - ref).max()
    assert promoted < long_chain / 4
    assert ratio(tensor_core_3xtf32(A, B), A, B) <= 1.0


@pytest.mark.parametrize("kind", ["uniform", "rows", "wide"])
@pytest.mark.parametrize("shape", SMALL_K, ids=lambda s: "x".join(map(str, s)))
def test_1xtf32_breaks_the_3xtf32_bound_where_input_rounding_shows(shape, kind):
    """Not vacuous: one rounded (or truncated) TF32 product per k fails it, on every small-K shape
    with more than a handful of outputs (at 1 x 1 x 1 a product may round exactly by chance)."""
    M, N, K = shape
    if M * N < 100:
        pytest.skip("too few outputs for a rounding error to be certain")
    rng = np.random.default_rng(11)
    A, B = draw(M, K, rng, kind), draw(K, N, rng, kind)
    for r in (tf32_round, tf32_truncate):
        one_pass = r(A).astype(np.float64) @ r(B).astype(np.float64)
        assert ratio(one_pass, A, B) > 1.0, r.__name__
        # ... while it passes its own precision's bound (the comparison is fair)
        assert ratio(one_pass, A, B, precision("tf32_tensor"), 2.0 ** -10) <= 1.0


def test_the_3xtf32_bound_is_far_below_tf32s_at_small_k():
    abs_ref = np.ones(1)
    for K in (1, 8, 64):
        assert P3.tolerance(K, abs_ref) * 8 < precision("tf32_tensor").tolerance(K, abs_ref, 2.0 ** -11)


def test_the_3xtf32_ceiling_is_a_third_of_the_tf32_peak():
    peaks = {"tf32_tensor": 494.0, "fp32": 67.0}
    assert P3.peak(peaks) == pytest.approx(494.0 / 3) and precision("tf32_tensor").peak(peaks) == 494.0
    assert precision("fp32").peak(peaks) == 67.0 and P3.peak({}) is None


def test_shorter_mma_chains_err_less_and_k8s_default_is_near_fp32_in_the_model():
    """k8's header: in the per-mma truncation model at K = 256, chains of 64 (its KCHUNK) err within 3x
    FP32 FFMA's RMS, chains of 128 more, one chain over all of K most."""
    from common.lab import load
    kchunk = load("lab07a-tf32-tensor-cores").kernel("k8").tiling.params["KCHUNK"]
    rng = np.random.default_rng(12)
    A, B = rng.standard_normal((48, 256)).astype(np.float32), rng.standard_normal((256, 48)).astype(np.float32)
    A64, B64 = A.astype(np.float64), B.astype(np.float64)
    ref, abs_ref = A64 @ B64, np.abs(A64) @ np.abs(B64)
    ffma = np.zeros((48, 48), np.float32)
    for k in range(256):                                    # FFMA: one rounding to nearest per product
        ffma = (ffma + np.outer(A64[:, k], B64[k, :])).astype(np.float32)

    def rms(C):
        return float(np.sqrt(np.mean(((C - ref) / abs_ref) ** 2)))
    ours, longer, whole = (rms(per_mma_3xtf32(A, B, c)) for c in (kchunk, 2 * kchunk, None))
    assert ours < longer < whole
    assert ours <= 3 * rms(ffma.astype(np.float64))
