"""The checker must pass correct float32 results and catch every kind of wrong one."""
import numpy as np

from common import check


def _problem(M, N, K, dtype=np.float32, seed=None):
    rng = np.random.default_rng(seed)
    A, B = check.random_matrix(M, K, dtype, rng), check.random_matrix(K, N, dtype, rng)
    ref, abs_ref = check.reference(A, B)
    return A, B, ref, abs_ref


def test_random_inputs_are_fresh_and_never_zero():
    rng = np.random.default_rng()
    A1, A2 = check.random_matrix(64, 64, np.float32, rng), check.random_matrix(64, 64, np.float32, rng)
    assert not np.array_equal(A1, A2)
    assert np.count_nonzero(A1) == A1.size


def test_float32_products_in_any_summation_order_pass():
    A, B, ref, abs_ref = _problem(50, 60, 1000)
    tol = check.tolerance(1000, abs_ref, "fp32")
    blocked = sum(A[:, k:k + 8] @ B[k:k + 8, :] for k in range(0, 1000, 8)).astype(np.float32)   # tiled order
    for C in (A @ B, blocked):
        assert check.compare(C, ref, tol).ok


def test_one_missing_product_is_caught():
    A, B, ref, abs_ref = _problem(40, 40, 1000)
    C = (A @ B).copy()
    # what an off-by-one in a K loop does: one product of typical size (|a b| >= its mean, 1/4) lost
    k = int(np.argmax(np.abs(A[7, :] * B[:, 9]) >= 0.25))
    C[7, 9] -= A[7, k] * B[k, 9]
    v = check.compare(C, ref, check.tolerance(1000, abs_ref, "fp32"))
    assert not v.ok and v.worst_index == (7, 9) and v.bad == 1


def test_an_unwritten_element_is_caught_and_named():
    A, B, ref, abs_ref = _problem(16, 16, 16)
    C = (A @ B).copy()
    C[3, 4] = np.float32("nan")
    v = check.compare(C, ref, check.tolerance(16, abs_ref, "fp32"))
    assert not v.ok and v.unwritten == 1 and "never written" in str(v)


def test_fp16_tolerance_is_wider_than_fp32_and_grows_with_k():
    one = np.ones((1, 1))
    assert check.tolerance(64, one, "fp16_tensor") > check.tolerance(64, one, "fp32")
    assert check.tolerance(4096, one, "fp32") > check.tolerance(64, one, "fp32")


def test_fp16_reference_uses_the_rounded_inputs():
    A, B, ref, _ = _problem(8, 8, 64, dtype=np.float16)
    assert np.allclose(ref, A.astype(np.float64) @ B.astype(np.float64), rtol=0, atol=0)


def test_verdict_line_reads_as_a_sentence():
    A, B, ref, abs_ref = _problem(8, 8, 8)
    s = str(check.compare(A @ B, ref, check.tolerance(8, abs_ref, "fp32"), label="v6 8x8x8"))
    assert s.startswith("PASS v6 8x8x8: worst |err|") and "tol" in s


# Small integers: the exact check of long sums (common/precision.py, "Small integers")

def _split_sums(A, B, splits, drop=None):
    """What a split-K kernel computes: each split's partial in float32, the partials added in split
    order in float32; `drop` leaves one split out (a kernel whose last block never wrote its partial)."""
    K = A.shape[1]
    edges = np.linspace(0, K, splits + 1).astype(int)
    A32, B32 = A.astype(np.float32), B.astype(np.float32)
    C = np.zeros((A.shape[0], B.shape[1]), np.float32)
    for s in range(splits):
        if s != drop:
            C += A32[:, edges[s]:edges[s + 1]] @ B32[edges[s]:edges[s + 1], :]
    return C


def test_small_integer_inputs_reach_every_kernel_exactly_whatever_its_input_type():
    from common.precision import PRECISIONS, tf32_round, tf32_split
    rng = np.random.default_rng(3)
    for p in PRECISIONS.values():
        A, B = p.integer_inputs(9, 11, 13, rng)
        for x in p.reference_inputs(A, B):
            assert set(np.unique(x)) == {-2.0, -1.0, 1.0, 2.0}, p.name     # exact, and never zero
        if p.input_dtype is np.float32:          # TF32 holds them; 3xTF32's small part is zero
            assert np.array_equal(tf32_round(A), A) and not tf32_split(A)[1].any()


def test_a_dropped_split_at_long_k_passes_the_worst_case_bound_but_not_the_exact_check():
    from common.precision import precision
    p = precision("fp16_tensor")
    rng = np.random.default_rng(5)
    M, N, K, splits = 16, 16, 65536, 64           # lab 7d's 128 x 128 x 65536 plan on an H100: 64 splits
    A, B = p.random_inputs(M, N, K, rng)
    ref, abs_ref = check.reference(A, B)
    tol = check.tolerance(K, abs_ref, "fp16_tensor")
    assert check.compare(_split_sums(A, B, splits), ref, tol).ok
    # the hole: 1024 products missing from every element, inside a bound that grows like K
    assert check.compare(_split_sums(A, B, splits, drop=17), ref, tol).ok
    A, B = p.integer_inputs(M, N, K, rng)
    ref, _ = check.reference(*p.reference_inputs(A, B))
    right = _split_sums(A, B, splits)
    assert np.array_equal(right, ref) and check.compare(right, ref, 0.0).ok
    v = check.compare(_split_sums(A, B, splits, drop=17), ref, 0.0, label="splitk 16x16x65536 small integers, exact")
    assert not v.ok and v.bad > M * N // 2 and v.worst_error >= 1 and "FAIL" in str(v), str(v)


def test_one_product_counted_twice_at_long_k_is_caught_exactly_where_it_happened():
    from common.precision import precision
    p = precision("fp32")
    rng = np.random.default_rng(6)
    A, B = p.integer_inputs(8, 8, 65536, rng)
    ref, _ = check.reference(A, B)
    C = _split_sums(A, B, 7)
    C[2, 5] += A[2, 40000] * B[40000, 5]
    v = check.compare(C, ref, 0.0)
    assert not v.ok and v.bad == 1 and v.worst_index == (2, 5) and v.worst_error in (1.0, 2.0, 4.0)


def test_integer_inputs_refuse_a_k_whose_sums_could_leave_fp32s_integers():
    import pytest
    from common.errors import CourseError
    from common.precision import INTEGER_K_MAX, precision
    assert 4 * INTEGER_K_MAX < 2 ** 24 <= 4 * (INTEGER_K_MAX + 1)
    with pytest.raises(CourseError, match="past 2\\^24") as e:
        precision("fp32").integer_inputs(1, 1, INTEGER_K_MAX + 1, np.random.default_rng())
    assert "random inputs" in e.value.hint


def test_check_exact_feeds_the_kernel_small_integers_and_wants_every_bit(monkeypatch):
    """Lab.check_exact's CPU side, with numpy standing in for the GPU."""
    from pathlib import Path
    from common.lab import load
    lab = load(Path(__file__).resolve().parents[1] / "labs" / "lab07d-decode-shapes")   # its split-K rows
    seen = {}

    def matmul(name, A, B, variant=None):
        seen["values"] = set(np.unique(lab.kernel(name).prec.reference_inputs(A, B)[0]))
        return _split_sums(*lab.kernel(name).prec.reference_inputs(A, B), 5, drop=seen.get("drop"))
    monkeypatch.setattr(lab, "matmul", matmul)
    v = lab.check_exact("splitk_fp16", 33, 40, 20000)
    assert v.ok and seen["values"] == {-2.0, -1.0, 1.0, 2.0} and "small integers, exact" in str(v)
    seen["drop"] = 4
    v = lab.check_exact("splitk_fp16", 33, 40, 20000)
    assert not v.ok and "FAIL" in str(v) and "tol 0.00e+00" in str(v)
