#!/usr/bin/env python3
"""Lab 7, Matmul II: register blocking, warp tiling, tensor cores. The lab's driver.

Contents, in the order of the handout:
  1. The kernel table: every kernel of the lab, its launch shape, its rules, the chapter's claim.
  2. Running one kernel:  matmul("v6", A, B) -> C   (numpy in, numpy out, inputs validated)
  3. Checking one kernel: check("v6", M, N, K)      (fresh random data, float64 reference)
  4. The Make targets:    build, bench, sass, tune  (python3 lab07.py --help)

Every target reads the same table; adding a kernel is one .cu file in kernels/ and one row here.
"""
import argparse
import math
import sys
from pathlib import Path

import numpy as np

LAB = Path(__file__).resolve().parent
sys.path.insert(0, str(LAB.parents[1]))          # the repository root, for `common`

from common import build as nvbuild                # noqa: E402
from common import check as checking               # noqa: E402
from common.errors import CourseError, user_errors  # noqa: E402
from common.kernels import Kernel, load_function   # noqa: E402

KERNELS_DIR = LAB / "kernels"
BUILD_DIR = LAB / "build"
RESULTS_DIR = LAB / "results"
REPORTS_DIR = LAB / "reports"

# ---------------------------------------------------------------------------------------------
# 1. The kernel table
# ---------------------------------------------------------------------------------------------
# Shape rules are predicates on (M, N, K); `choose` picks the variant a shape runs.


def _vec4(M, N, K):       # float4 rows: every row of A and B starts 16-byte aligned
    return "vec" if K % 4 == 0 and N % 4 == 0 else "scalar"


def _vec8_b(M, N, K):     # 8 halves: every row of B starts 16-byte aligned
    return "vec" if N % 8 == 0 else "scalar"


K_MULTIPLE_OF_8 = (lambda M, N, K: K % 8 == 0, "K to be a multiple of 8 (rows of A are copied as 16-byte chunks of 8 halves)")


def t3_shared_bytes(BM=128, BN=128, BK=32, STAGES=2, **_):
    """STAGES buffers of A (BM x BK) and B (BK x BN) halves, each row padded by 8 halves."""
    return STAGES * (BM * (BK + 8) + BK * (BN + 8)) * 2


FP32 = [
    Kernel("v3", "v3_tiled.cu", {"": "sgemm_v3_tiled"}, "fp32", threads=256, tile=(16, 16),
           title="shared-memory tiles, T = 16",
           claim="the baseline: one FMA per two shared loads",
           model={"smem_loads_per_ffma": 2.0}),
    Kernel("v4", "v4_1d_blocktiling.cu", {"": "sgemm_v4_1d_blocktiling"}, "fp32", threads=512, tile=(64, 64),
           title="1D register blocking, TM = 8",
           claim="9 shared loads per 8 FMAs; Boehm measured 36 % of cuBLAS",
           model={"smem_loads_per_ffma": 9 / 8}),
    Kernel("v5", "v5_2d_blocktiling.cu", {"": "sgemm_v5_2d_blocktiling"}, "fp32", threads=256, tile=(128, 128),
           title="2D register blocking, 8x8 per thread",
           claim="16 shared loads per 64 FMAs; ~100 registers, 2 blocks per SM",
           model={"smem_loads_per_ffma": 16 / 64}),
    Kernel("v6", "v6_vectorized.cu", {"vec": "sgemm_v6_vec", "scalar": "sgemm_v6_scalar"}, "fp32",
           threads=256, tile=(128, 128), choose=_vec4,
           title="float4 loads, transposed A tile, LDS.128",
           claim="4 LDS.128 per 64 FMAs; 16-byte global loads when K and N are multiples of 4",
           model={"smem_loads_per_ffma": 4 / 64}),
    Kernel("v7", "v7_warptiling.cu", {"vec": "sgemm_v7_vec", "scalar": "sgemm_v7_scalar"}, "fp32",
           threads=128, tile=(128, 128), choose=_vec4,
           title="warp tiling, 64x64 per warp",
           claim="6 LDS.128 per 128 FMAs; the warp reads the perimeter of a square",
           model={"smem_loads_per_ffma": 6 / 128}),
]

FP16 = [
    Kernel("t1", "t1_wmma_global.cu", {"": "hgemm_t1_wmma_global"}, "fp16", threads=128, tile=(32, 32),
           rules=(K_MULTIPLE_OF_8,),
           title="WMMA, fragments from global memory",
           claim="tensor cores fed straight from global: every mma_sync waits for its loads"),
    Kernel("t2", "t2_wmma_smem.cu", {"vec": "hgemm_t2_smem_vec", "scalar": "hgemm_t2_smem_scalar"}, "fp16",
           threads=256, tile=(128, 128), rules=(K_MULTIPLE_OF_8,), choose=_vec8_b,
           title="128x128 tile in shared memory, 8 warps of 64x32",
           claim="each A fragment used twice, each B fragment four times, from registers"),
    Kernel("t3", "t3_wmma_cp_async.cu", {"vec": "hgemm_t3_cp_async_vec", "scalar": "hgemm_t3_cp_async_scalar"},
           "fp16", threads=256, tile=(128, 128), rules=(K_MULTIPLE_OF_8,), choose=_vec8_b,
           shared_bytes=t3_shared_bytes(),
           title="t2 + cp.async double buffering",
           claim="the copies of phase t+1 fly while phase t computes"),
]

KERNELS = {k.name: k for k in FP32 + FP16}
LADDERS = {"fp32": FP32, "fp16": FP16}


def v7_with(**p):
    """v7 rebuilt with other tile parameters (the tuning sweep). Keys: BM BN BK WM WN WNITER TM TN V7_PREFETCH."""
    full = {"BM": 128, "BN": 128, "BK": 16, "WM": 64, "WN": 64, "WNITER": 4, "TM": 8, "TN": 4, "V7_PREFETCH": 0, **p}
    tag = "_".join(f"{k}{v}" for k, v in p.items())
    threads = (full["BM"] // full["WM"]) * (full["BN"] // full["WN"]) * 32
    base = KERNELS["v7"]
    return Kernel(f"v7[{tag}]", base.source, base.entries, "fp32", threads=threads, tile=(full["BM"], full["BN"]),
                  choose=_vec4, defines=dict(p), tag=tag, title=base.title)


def t3_with(**p):
    """t3 rebuilt with other tile parameters or pipeline depth. Keys: BM BN BK WM WN STAGES."""
    full = {"BM": 128, "BN": 128, "BK": 32, "WM": 64, "WN": 32, "STAGES": 2, **p}
    tag = "_".join(f"{k}{v}" for k, v in p.items())
    threads = (full["BM"] // full["WM"]) * (full["BN"] // full["WN"]) * 32
    base = KERNELS["t3"]
    return Kernel(f"t3[{tag}]", base.source, base.entries, "fp16", threads=threads, tile=(full["BM"], full["BN"]),
                  rules=base.rules, choose=_vec8_b, defines=dict(p), tag=tag,
                  shared_bytes=t3_shared_bytes(**full), title=base.title)


def kernel(name):
    if isinstance(name, Kernel):
        return name
    if name not in KERNELS:
        raise CourseError(f"there is no kernel {name!r}", hint=f"choose one of {', '.join(KERNELS)}")
    return KERNELS[name]


# ---------------------------------------------------------------------------------------------
# 2. Building and running one kernel
# ---------------------------------------------------------------------------------------------

def build(kernels, archs, jobs=None):
    """Compile every (kernel, arch) pair that is stale; returns {(name, arch): ptxas resources}."""
    from concurrent.futures import ThreadPoolExecutor
    import os
    pairs = [(k, a) for k in kernels for a in archs]
    with ThreadPoolExecutor(max_workers=jobs or os.cpu_count() or 2) as pool:
        futures = {(k.name, a): pool.submit(nvbuild.compile_cubin, KERNELS_DIR / k.source,
                                            k.cubin(BUILD_DIR, a), a, k.defines) for k, a in pairs}
        return {key: f.result() for key, f in futures.items()}


def gpu_arch():
    from common.device import init_gpu
    cc = init_gpu().compute_capability()
    return f"sm_{cc[0]}{cc[1]}"


INT32_MAX = 2 ** 31 - 1


def validate(k, A, B):
    """Refuse, with one clear message each, every input the kernels cannot take."""
    want = np.float32 if k.dtype == "fp32" else np.float16
    for nm, X in (("A", A), ("B", B)):
        if not isinstance(X, np.ndarray):
            raise CourseError(f"{nm} is a {type(X).__name__}, not a numpy array", hint=f"pass np.asarray({nm}, dtype=np.{want.__name__})")
        if X.ndim != 2:
            raise CourseError(f"{nm} has {X.ndim} dimension(s); a matrix has 2", hint=f"reshape {nm} to (rows, cols)")
        if X.dtype != want:
            raise CourseError(f"{nm} is {X.dtype}, but {k.name} multiplies {np.dtype(want).name} matrices",
                              hint=f"convert with {nm}.astype(np.{np.dtype(want).name})")
        if not X.flags.c_contiguous:
            raise CourseError(f"{nm} is not C-contiguous (a transposed view or a slice?); the kernels read row-major memory",
                              hint=f"pass np.ascontiguousarray({nm})")
    (M, K), (K2, N) = A.shape, B.shape
    if K != K2:
        raise CourseError(f"A is {M}x{K} and B is {K2}x{N}: A's columns must equal B's rows",
                          hint="for C = A.B, A is M x K and B is K x N")
    return check_shape(k, M, N, K)


def check_shape(k, M, N, K):
    """The shape rules alone: sizes, 32-bit offsets, and the kernel's own rules."""
    if min(M, N, K) <= 0:
        raise CourseError(f"M={M}, N={N}, K={K}: every dimension must be at least 1", hint="pass non-empty matrices")
    if max(M * K, K * N, M * N) > INT32_MAX:
        raise CourseError(f"{M}x{N}x{K} has more than 2^31 - 1 elements in one matrix: the kernels index with 32-bit ints",
                          hint="split the product into blocks of fewer than 2^31 elements each")
    why = k.refusal(M, N, K)
    if why:
        raise CourseError(why, hint="choose a shape that meets the kernel's rules (see the table in lab07.py)")
    return M, N, K


def launcher(k, M, N, K, variant=None):
    """The function that launches kernel k at shape M x N x K on device pointers (a, b, c)."""
    variant = k.variant_for(M, N, K) if variant is None else variant
    if variant not in k.entries:
        raise CourseError(f"{k.name} has no variant {variant!r}", hint=f"variants: {', '.join(k.entries)}")
    func = load_function(str(k.cubin(BUILD_DIR, gpu_arch())), k.entries[variant], k.shared_bytes)
    return lambda a, b, c: k.launch(func, M, N, K, a, b, c)


def matmul(name, A, B, variant=None):
    """C = A . B on the GPU with one of the lab's kernels. C is float32; it is poisoned with NaN
    before the launch, so any element the kernel does not write comes back as NaN."""
    k = kernel(name)
    M, N, K = validate(k, A, B)
    arch = gpu_arch()                 # a clear error here when there is no GPU
    import pycuda.driver as cuda
    build([k], [arch])
    run = launcher(k, M, N, K, variant)
    a, b, c = cuda.to_device(A), cuda.to_device(B), cuda.mem_alloc(M * N * 4)
    try:
        cuda.memset_d32(c, checking.NAN_BITS, M * N)
        run(a, b, c)
        C = np.empty((M, N), np.float32)
        cuda.memcpy_dtoh(C, c)   # synchronizes: a launch error surfaces here
    except cuda.Error as e:
        raise CourseError(f"{k.name} failed on the GPU at {M}x{N}x{K}: {e}",
                          hint="run `make sanitize` to find the bad access") from None
    finally:
        a.free(); b.free(); c.free()
    return C


# ---------------------------------------------------------------------------------------------
# 3. Checking one kernel
# ---------------------------------------------------------------------------------------------

def random_inputs(k, M, N, K, rng):
    dtype = np.float32 if k.dtype == "fp32" else np.float16
    return checking.random_matrix(M, K, dtype, rng), checking.random_matrix(K, N, dtype, rng)


def tolerance_kind(k):
    return "fp32" if k.dtype == "fp32" else "fp16_tensor"


def check(name, M, N, K, variant=None, rng=None):
    """Fresh random A and B, the kernel's C against the float64 product: a Verdict."""
    k = kernel(name)
    rng = rng or np.random.default_rng()
    A, B = random_inputs(k, M, N, K, rng)
    C = matmul(k, A, B, variant)
    ref, abs_ref = checking.reference(A, B)
    v = variant if variant is not None else k.variant_for(M, N, K)
    return checking.compare(C, ref, checking.tolerance(K, abs_ref, tolerance_kind(k)),
                            label=f"{k.name}{'/' + v if v else ''} {M}x{N}x{K}")


# ---------------------------------------------------------------------------------------------
# 4. The Make targets (their code lives in targets.py; this is the entry point)
# ---------------------------------------------------------------------------------------------

def main(argv=None):
    import targets
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="target", required=True)
    p = sub.add_parser("build", help="compile every kernel; registers, spills and shared memory")
    p.add_argument("--arch", default=None, help="sm_XY, a comma list, or 'all' (default: this GPU's, or all)")
    p = sub.add_parser("bench", help="TFLOP/s, %% of peak and %% of cuBLAS at 1024, 2048, 4096")
    p.add_argument("--sizes", default="1024,2048,4096")
    p.add_argument("--ladder", choices=["fp32", "fp16", "both"], default="both")
    p = sub.add_parser("sass", help="opcode counts per kernel from cuobjdump -sass")
    p.add_argument("--arch", default=None)
    p = sub.add_parser("tune", help="time other tile parameters of v7 and t3 at 4096^3")
    p.add_argument("--size", type=int, default=4096)
    p = sub.add_parser("selfcheck", help="every kernel and variant on a few awkward shapes")
    p = sub.add_parser("profile", help="the program ncu runs: one warm-up launch, one profiled (profiling.py)")
    p.add_argument("--kernel", default=None, help="v3..v7, t1..t3, cublas-sgemm, cublas-hgemm")
    p.add_argument("--variant", default=None, help="default: the one the size selects")
    p.add_argument("--size", type=int, default=2048, help="M = N = K")
    p.add_argument("--sanitize-run", action="store_true", help="every kernel on small shapes, for compute-sanitizer")
    p.add_argument("--kernels", default=None, help="with --sanitize-run: a comma list (default: all)")
    args = parser.parse_args(argv)
    with user_errors():
        if args.target == "profile":
            import profiling
            return profiling.profile(args)
        getattr(targets, args.target)(args)


if __name__ == "__main__":
    sys.path.insert(0, str(LAB))
    main()
