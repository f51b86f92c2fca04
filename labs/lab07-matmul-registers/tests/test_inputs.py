"""Bad input gets one clear message that names the problem and the fix (no GPU needed)."""
import numpy as np
import pytest

from common.lab import check_shape, validate
from common.testing import lab_of
from common.errors import CourseError
from common.testing import GPU_OK

LAB = lab_of(__file__)

f32 = np.ones((4, 4), np.float32)


def refused(*args):
    with pytest.raises(CourseError) as e:
        validate(*args)
    return str(e.value)


def test_wrong_dtype_names_the_fix():
    msg = refused(LAB.kernels["v6"], f32.astype(np.float64), f32)
    assert "float64" in msg and "astype(np.float32)" in msg


def test_fp16_kernel_refuses_fp32_inputs():
    assert "float16" in refused(LAB.kernels["t3"], f32, f32)


def test_mismatched_shapes():
    assert "A's columns must equal B's rows" in refused(LAB.kernels["v4"], np.ones((3, 5), np.float32), f32)


def test_non_contiguous_input():
    assert "np.ascontiguousarray" in refused(LAB.kernels["v5"], np.ones((8, 4), np.float32)[::2], f32)


def test_not_a_matrix():
    assert "2" in refused(LAB.kernels["v3"], np.ones(4, np.float32), f32)
    assert "numpy array" in refused(LAB.kernels["v3"], [[1.0]], f32)


def test_empty_dimension():
    assert "at least 1" in refused(LAB.kernels["v7"], np.ones((0, 4), np.float32), f32)


def test_32_bit_overflow_is_refused():
    with pytest.raises(CourseError, match="32-bit"):
        check_shape(LAB.kernels["v7"], 65536, 65536, 4)


def test_fp16_needs_k_multiple_of_8():
    A = np.ones((16, 12), np.float16)
    B = np.ones((12, 16), np.float16)
    assert "multiple of 8" in refused(LAB.kernels["t2"], A, B)


def test_unknown_kernel():
    with pytest.raises(CourseError, match="choose one of"):
        LAB.kernel("v9")


@pytest.mark.skipif(GPU_OK, reason="this machine has a GPU")
def test_without_a_gpu_matmul_says_a_gpu_is_needed():
    with pytest.raises(CourseError) as e:
        LAB.matmul("v6", f32, f32)
    assert "GPU" in str(e.value) or "PyCUDA" in str(e.value)
