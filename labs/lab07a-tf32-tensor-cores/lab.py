"""Lab 7a, TF32 tensor cores: an FP32 GEMM (C = alpha A B + beta C, FP32 in and out) moved onto the
TF32 tensor cores in seven measured rungs, after the worklog "Optimising fp32 GEMM on A100". The
lab's table: data, no code (common/lab.py says how every target reads it).

Each rung's tile parameters live in its .cu file; the rows say what the source cannot: entry points,
shape rules, how the kernel rounds its inputs (the tolerance depends on it), the worklog's claim.
"""
from common.bounds import Bounds
from common.headers import cutlass_include
from common.kernels import ALPHA_BETA, Kernel
from common.lab import load
from common.precision import TF32_ROUNDED, TF32_SPLIT, TF32_TRUNCATED
from common.measure import Tuning

from .launch import PreSplit
from .models import BANK_ACCESSES, BANK_MAIN_LOOPS  # noqa: F401  (the bank model's data)
from .tuning import candidates, reason_illegal

TITLE = "Lab 7a, TF32 tensor cores: the worklog's seven rungs on mma.sync"
SHORT = "lab07a"
NEEDS = "TF32 tensor cores (mma.sync and WMMA on .tf32), cp.async"   # why no row runs on sm_75


def _vec4(M, N, K):       # float4 rows: every row of A, B and C starts 16-byte aligned
    return "vec" if K % 4 == 0 and N % 4 == 0 else "scalar"


def _rounding(tiling):
    """k2..k7 round each operand to the nearest TF32 when TF32_ROUND = 1 (the default), else the tensor
    core drops the low 13 mantissa bits: the error bound per input doubles (common/precision.py)."""
    return TF32_ROUNDED if tiling.has("TF32_ROUND") and tiling.value("TF32_ROUND") else TF32_TRUNCATED


def _row(name, source, title, claim, roundoff=_rounding):
    return Kernel(name, source, {"vec": f"tf32gemm_{name}_vec", "scalar": f"tf32gemm_{name}_scalar"}, "tf32_tensor",
                  choose=_vec4, args=ALPHA_BETA, input_roundoff=roundoff, title=title, claim=claim)


TF32 = [
    _row("k1", "k1_wmma_tf32.cu", "lab 7's warp tiling with WMMA TF32 fragments (m16n16k8)",
         "the worklog's first step: this alone doubles FP32's speed", roundoff=TF32_ROUNDED),
    _row("k2", "k2_mma_swizzle.cu", "mma.sync m16n8k8 in PTX (with XOR-swizzled tiles, 1-D warp strips)",
         "the cautionary rung: B reloaded for every A sub-tile, little reuse (worklog: 33 % of cuBLAS)"),
    _row("k3", "k3_cp_async.cu", "k2 + a cp.async pipeline of STAGES tiles",
         "the loads of the next tiles fly while this one computes (worklog: 43 %)"),
    _row("k4", "k4_ldmatrix_2d_warps.cu", "k3 + 2-D warp tiles: 8 warps of 64 x 64 (A fragments by ldmatrix .b16)",
         "a TF32 value is two 16-bit halves: ldmatrix.x4 delivers the A fragment (worklog: 50 % -> 80 %)"),
    _row("k5", "k5_raster_hoist.cu", "k4 + block rasterization (and hoisted address arithmetic)",
         "neighbouring blocks share A and B panels in L2 (worklog: 85 %)"),
    _row("k6", "k6_float2_stores.cu", "k5 + float2 stores of the accumulators",
         "each lane's accumulator pairs are adjacent in C: STG.E.64 (worklog: 90 %)"),
    _row("k7", "k7_unroll_xor_stages.cu", "k6 + full unrolling (with the XOR stage toggle), B fragments a k-step ahead",
         "the worklog's final kernel: level with cuBLAS on an A100 (98-100 %)"),
    # the yardstick, not a rung: NVIDIA CUTLASS's Ampere TF32 GEMM, the same instruction as k2..k7, from
    # the headers of the nvidia-cutlass wheel (common/headers.py finds them at build time)
    Kernel("cutlass", "cutlass_tf32_mma_sync.cu", {"": "tf32gemm_cutlass"}, "tf32_tensor",
           rules=((lambda M, N, K: K % 4 == 0, "K to be a multiple of 4 (rows of A are copied as float4)"),
                  (lambda M, N, K: N % 4 == 0, "N to be a multiple of 4 (rows of B and C are copied as float4)")),
           args=ALPHA_BETA, input_roundoff=TF32_ROUNDED, include_dirs=(cutlass_include,),
           nvcc_flags=("--expt-relaxed-constexpr",), yardstick=True,
           title="NVIDIA CUTLASS's own Ampere TF32 GEMM: mma.sync m16n8k8, 128x256x16, 3 stages",
           claim="the yardstick: what NVIDIA's library reaches with k7's instruction on this GPU"),
]

# FP32 accuracy on the TF32 tensor cores: each operand split into two TF32 parts, three products (3xTF32)
THREE_X = [
    # launch.py's PreSplit: the split entry writes A's and B's big and small parts first (in the call's time)
    Kernel("k8", "k8_3xtf32.cu", {"vec": "tf32gemm_k8_vec", "scalar": "tf32gemm_k8_scalar"}, "fp32_3xtf32",
           choose=_vec4, args=ALPHA_BETA, input_roundoff=TF32_SPLIT, launch_hook=PreSplit(),
           helpers={"split": "tf32gemm_k8_split"},
           title="k7 on big + small TF32 operands split once by a pass before it, 3 mma.sync per step, "
                 "partial sums promoted to FP32",
           claim="FP32's accuracy faster than cuBLAS SGEMM: three TF32 products cost less than one FFMA GEMM"),
]

# The FP32 baselines in the same table: cuBLAS SGEMM (TF32 off) and lab 7's best FP32 kernel.
LAB7 = load("lab07-matmul-registers")
LADDERS = {"tf32": [LAB7.kernel("v8")] + TF32, "3xtf32": THREE_X}
LADDER_PRECISION = {"tf32": "tf32_tensor"}       # the ladder's baseline: cuBLAS TF32, not v8's SGEMM
# cuBLAS SGEMM timed in the same run, as one more row; 3xtf32's baseline is SGEMM (k8's precision), beside
# cuBLAS TF32, the same split done with three cuBLAS TF32 calls (the split timed with them, then made beforehand),
# and cuBLAS's own FP32 emulation (BF16x9; skipped, saying why, where this cuBLAS or GPU has none)
EXTRA_BASELINES = {"tf32": ["fp32"], "3xtf32": ["tf32_tensor", "tf32x3_cublas", "tf32x3_cublas_presplit", "fp32_bf16x9"]}
# make accuracy (common/accuracy.py): the fused rows whose error is measured beside cuBLAS's, K = 256..65536,
# and k8 built with one mma chain over all of K (no promotion): what the promotion buys
ACCURACY_ROWS = ["k7", "k8", ("k8", {"KCHUNK": 65536})]
BENCH_SIZES = [1024, 2048, 4096, 8192]
SELFCHECK_SHAPES = [(1, 1, 1), (17, 33, 9), (127, 129, 132), (129, 127, 64), (1000, 3, 520), (256, 260, 64)]
# make tune: k7's defaults ({}) first, then the sweep of tuning.py; illegal = k7's static_asserts (the compiler's word)
TUNING = {"tf32": Tuning("k7", candidates, illegal=reason_illegal, sizes=(4096,))}
# make bounds (common/bounds.py): k7 beside builds without its copies, its mma.sync or its barrier
# (K7_PROBE, the kernel's header): how far the structure itself is from cuBLAS TF32
BOUNDS = {"k7": Bounds("K7_PROBE", {1: "no copies after the prologue", 2: "no mma.sync",
                                    3: "no copies, no barrier"}, ladder="tf32"),
          # the yardstick at two depths, and with B k-contiguous: both operands by ldmatrix, no LDS of B
          "cutlass": Bounds("CUTLASS_PROBE", {1: "B column-major (k contiguous)"}, ladder="tf32", bk=(16, 32))}
