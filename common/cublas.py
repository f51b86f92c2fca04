"""cuBLAS through ctypes, the baseline every benchmark is measured against, in the same run.

    blas = Cublas()                          loads libcublas, creates a handle on the current
                                             (PyCUDA primary) context, default stream
    blas.sgemm(M, N, K, a, b, c)             FP32 in, FP32 FFMA compute: TF32 is OFF
    blas.hgemm(M, N, K, a, b, c)             FP16 in, FP32 compute and output (cublasGemmEx)
    blas.tf32gemm(M, N, K, a, b, c)          FP32 in and out, TF32 tensor cores (COMPUTE_32F_FAST_TF32)
    blas.bf16gemm(M, N, K, a, b, c)          BF16 in, FP32 compute and output
    blas.sgemm_bf16x9(M, N, K, a, b, c)      FP32 in and out, cuBLAS's FP32 emulation on the BF16 tensor
                                             cores (BF16x9), asked for eagerly (cuBLAS 12.9 and later)
    blas.version, blas.path                  said in every record (the math modes: common.precision)
    blas.unavailable(call)                   None, or why this library lacks a call (the emulation)

Why ctypes: PyCUDA has no cuBLAS binding, and the maintained Python bindings would bring a second
CUDA stack (and their own context handling) for two functions. cuBLAS works on whatever context is
current, so creating the handle after `pycuda.autoprimaryctx` puts it on the same primary context
as our kernels; both use stream 0, so CUDA events time them the same way.

Row-major trick: cuBLAS is column-major. A row-major M x N matrix C is, read column-major, C^T
(N x M). Since C^T = B^T . A^T, we ask cuBLAS for the column-major product of "B" (N x K, ld N)
and "A" (K x M, ld K), with m = N, n = M: no transposes and no copies.
"""
import ctypes
import ctypes.util
import glob
import os
import sys

from .errors import CourseError

CUBLAS_OP_N = 0
CUBLAS_DEFAULT_MATH = 0          # no TF32: SGEMM stays FP32 FFMA unless NVIDIA_TF32_OVERRIDE says otherwise
CUDA_R_32F, CUDA_R_16F, CUDA_R_16BF = 0, 2, 14
CUBLAS_COMPUTE_32F = 68          # FP32 accumulation (not _FAST_TF32, not 16F)
CUBLAS_COMPUTE_32F_FAST_TF32 = 77   # FP32 in and out, the products on the TF32 tensor cores
CUBLAS_COMPUTE_32F_EMULATED_16BFX9 = 78   # FP32 in and out, each operand as 3 BF16 parts, 9 BF16 products
CUBLAS_EMULATION_STRATEGY_EAGER = 2  # emulate wherever this cuBLAS can (DEFAULT / PERFORMANT: only where faster)
CUBLAS_GEMM_DEFAULT = -1


def _candidates():
    if os.environ.get("CUBLAS_LIBRARY"):
        yield os.environ["CUBLAS_LIBRARY"]
    for root in sys.path:
        for pattern in ("nvidia/cu13/lib/libcublas.so.*", "nvidia/cublas/lib/libcublas.so.*"):
            yield from sorted(glob.glob(os.path.join(root, pattern)), reverse=True)
    found = ctypes.util.find_library("cublas")
    if found:
        yield found
    for home in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if home:
            yield from sorted(glob.glob(os.path.join(home, "lib64", "libcublas.so*")), reverse=True)


def _load():
    tried = []
    for path in _candidates():
        if path in tried:
            continue
        tried.append(path)
        try:
            return ctypes.CDLL(path), path
        except OSError:
            continue
    raise CourseError("cuBLAS (libcublas) was not found",
                      hint="install the CUDA toolkit or `pip install nvidia-cublas`, "
                           "or set CUBLAS_LIBRARY=/path/to/libcublas.so")


class Cublas:

    def __init__(self):
        from .device import init_gpu
        init_gpu()
        if os.environ.get("NVIDIA_TF32_OVERRIDE", "0") not in ("", "0"):
            raise CourseError("NVIDIA_TF32_OVERRIDE is set: cuBLAS SGEMM could use TF32 tensor cores",
                              hint="unset NVIDIA_TF32_OVERRIDE; the FP32 baseline must be FP32")
        self.lib, self.path = _load()
        self.handle = ctypes.c_void_p()
        self._ok(self.lib.cublasCreate_v2(ctypes.byref(self.handle)), "cublasCreate")
        self._ok(self.lib.cublasSetMathMode(self.handle, CUBLAS_DEFAULT_MATH), "cublasSetMathMode")
        v = ctypes.c_int()
        self._ok(self.lib.cublasGetVersion_v2(self.handle, ctypes.byref(v)), "cublasGetVersion")
        self.version = v.value
        self._one, self._zero = ctypes.c_float(1.0), ctypes.c_float(0.0)
        i, p = ctypes.c_int, ctypes.c_void_p
        self.lib.cublasSgemm_v2.argtypes = [p, i, i, i, i, i, p, p, i, p, i, p, p, i]
        self.lib.cublasGemmEx.argtypes = [p, i, i, i, i, i, p, p, i, i, p, i, i, p, p, i, i, i, i]

    @staticmethod
    def _ok(status, what):
        if status != 0:
            raise CourseError(f"{what} failed with cuBLAS status {status}",
                              hint="check that the GPU works (nvidia-smi) and that cuBLAS matches the driver")

    def sgemm(self, M, N, K, a, b, c):
        """C (M x N) = A (M x K) . B (K x N), all row-major FP32 device pointers."""
        self._ok(self.lib.cublasSgemm_v2(self.handle, CUBLAS_OP_N, CUBLAS_OP_N, N, M, K,
                                         ctypes.byref(self._one), int(b), N, int(a), K,
                                         ctypes.byref(self._zero), int(c), N), "cublasSgemm")

    def _gemm_ex(self, M, N, K, a, b, c, in_type, compute):
        self._ok(self.lib.cublasGemmEx(self.handle, CUBLAS_OP_N, CUBLAS_OP_N, N, M, K,
                                       ctypes.byref(self._one), int(b), in_type, N, int(a), in_type, K,
                                       ctypes.byref(self._zero), int(c), CUDA_R_32F, N,
                                       compute, CUBLAS_GEMM_DEFAULT), "cublasGemmEx")

    def hgemm(self, M, N, K, a, b, c):
        """C (M x N, FP32) = A (M x K, FP16) . B (K x N, FP16), FP32 accumulation, row-major."""
        self._gemm_ex(M, N, K, a, b, c, CUDA_R_16F, CUBLAS_COMPUTE_32F)

    def tf32gemm(self, M, N, K, a, b, c):
        """C = A . B, FP32 in and out, products on the TF32 tensor cores, FP32 accumulation."""
        self._gemm_ex(M, N, K, a, b, c, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32)

    def bf16gemm(self, M, N, K, a, b, c):
        """C (FP32) = A (BF16) . B (BF16), FP32 accumulation, row-major."""
        self._gemm_ex(M, N, K, a, b, c, CUDA_R_16BF, CUBLAS_COMPUTE_32F)

    def unavailable(self, call):
        """None, or why this library cannot make `call` (one of the methods here) at all."""
        if call == "sgemm_bf16x9" and not hasattr(self.lib, "cublasSetEmulationStrategy"):
            return f"this cuBLAS ({self.version}) has no FP32 emulation (cublasSetEmulationStrategy)"
        return None

    def sgemm_bf16x9(self, M, N, K, a, b, c):
        """C = A . B, FP32 in and out, with CUBLAS_COMPUTE_32F_EMULATED_16BFX9 on a handle of its own whose
        emulation strategy is EAGER: cuBLAS splits each FP32 operand into three BF16 parts and sums nine
        BF16 tensor-core products wherever it has kernels for that on this GPU (NVIDIA introduced it for
        Blackwell); where it has none it runs native FP32, and the row then times SGEMM again. The
        handle of its own keeps the strategy away from every other call."""
        if getattr(self, "_emulation_handle", None) is None:
            why = self.unavailable("sgemm_bf16x9")
            if why:
                raise CourseError(why, hint="cuBLAS 12.9 or later has it; the rows without it are still measured")
            h = ctypes.c_void_p()
            self._ok(self.lib.cublasCreate_v2(ctypes.byref(h)), "cublasCreate")
            self._ok(self.lib.cublasSetEmulationStrategy(h, CUBLAS_EMULATION_STRATEGY_EAGER),
                     "cublasSetEmulationStrategy")
            self._emulation_handle = h
        self._ok(self.lib.cublasGemmEx(self._emulation_handle, CUBLAS_OP_N, CUBLAS_OP_N, N, M, K,
                                       ctypes.byref(self._one), int(b), CUDA_R_32F, N, int(a), CUDA_R_32F, K,
                                       ctypes.byref(self._zero), int(c), CUDA_R_32F, N,
                                       CUBLAS_COMPUTE_32F_EMULATED_16BFX9, CUBLAS_GEMM_DEFAULT),
                 "cublasGemmEx (FP32 emulated, BF16x9)")
