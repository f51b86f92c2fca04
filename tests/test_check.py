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
