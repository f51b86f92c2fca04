"""Lab 7, Matmul II: register blocking, warp tiling, tensor cores. The lab's table: data, no code.

Every target of the course reads it (common/lab.py says how; `make help` lists the targets):
the kernels in ladder order, their shape rules and the chapter's claims, and what the lab's
benchmarks, profilers, notebooks and grader use. Each kernel's tile parameters live in its .cu file
(read by common/tiling.py); the rows here say only what the source cannot.

Adding a kernel is one .cu file in kernels/ and one row here.
"""
from common.bounds import Bounds
from common.headers import cutlass_include
from common.kernels import ALPHA_BETA, Kernel
from common.measure import Tuning

from . import space_t4, space_v8
from .models import BANK_ACCESSES, BANK_MAIN_LOOPS, CHECK_SHAPES, HIERARCHY, INNER_LOOPS  # noqa: F401

TITLE = "Lab 7, Matmul II: register blocking, warp tiling, tensor cores"
SHORT = "lab07"

# ---------------------------------------------------------------------------------------------
# The kernel table
# ---------------------------------------------------------------------------------------------
# Shape rules are predicates on (M, N, K); `choose` picks the variant a shape runs.


def _vec4(M, N, K):       # float4 rows: every row of A and B starts 16-byte aligned
    return "vec" if K % 4 == 0 and N % 4 == 0 else "scalar"


def _vec8_b(M, N, K):     # 8 halves: every row of B starts 16-byte aligned
    return "vec" if N % 8 == 0 else "scalar"


# The chapter's rungs (v3-v7, t1-t3) run on Turing too (sm_75: Colab's T4): WMMA's m16n16k16 is four
# Turing mma.m16n8k8. v8, t4 and the CUTLASS yardstick need sm_80 (their rows say why).
TURING = "sm_75"
T3_ON_TURING = "no cp.async on sm_75: ordinary loads, no copy in flight while a tile computes"

K_MULTIPLE_OF_8 = (lambda M, N, K: K % 8 == 0, "K to be a multiple of 8 (rows of A are copied as 16-byte chunks of 8 halves)")
N_MULTIPLE_OF_8 = (lambda M, N, K: N % 8 == 0, "N to be a multiple of 8 (rows of B are copied as 16-byte chunks of 8 halves)")

FP32 = [
    Kernel("v3", "v3_tiled.cu", {"": "sgemm_v3_tiled"}, "fp32",
           title="shared-memory tiles, T = 16",
           claim="the baseline: one FMA per two shared loads", min_arch=TURING,
           model={"smem_loads_per_ffma": 2.0}),
    Kernel("v4", "v4_1d_blocktiling.cu", {"": "sgemm_v4_1d_blocktiling"}, "fp32",
           title="1D register blocking, TM = 8",
           claim="9 shared loads per 8 FMAs; Boehm measured 36 % of cuBLAS", min_arch=TURING,
           model={"smem_loads_per_ffma": 9 / 8}),
    Kernel("v5", "v5_2d_blocktiling.cu", {"": "sgemm_v5_2d_blocktiling"}, "fp32",
           title="2D register blocking, 8x8 per thread",
           claim="16 shared loads per 64 FMAs; ~100 registers, 2 blocks per SM", min_arch=TURING,
           model={"smem_loads_per_ffma": 16 / 64}),
    Kernel("v6", "v6_vectorized.cu", {"vec": "sgemm_v6_vec", "scalar": "sgemm_v6_scalar"}, "fp32", choose=_vec4,
           title="float4 loads, transposed A tile, LDS.128",
           claim="4 LDS.128 per 64 FMAs; 16-byte global loads when K and N are multiples of 4", min_arch=TURING,
           model={"smem_loads_per_ffma": 4 / 64}),
    Kernel("v7", "v7_warptiling.cu", {"vec": "sgemm_v7_vec", "scalar": "sgemm_v7_scalar"}, "fp32", choose=_vec4,
           title="warp tiling, 64x64 per warp",
           claim="6 LDS.128 per 128 FMAs; the warp reads the perimeter of a square", min_arch=TURING,
           model={"smem_loads_per_ffma": 6 / 128}),
    # past the chapter (its section 8): what cuBLAS does that v7 does not
    Kernel("v8", "v8_pipelined.cu", {"vec": "sgemm_v8_vec", "scalar": "sgemm_v8_scalar"}, "fp32", choose=_vec4,
           args=ALPHA_BETA,
           title="v7 + a cp.async pipeline (with a swizzled A tile, double-buffered operands, rasterized blocks)",
           claim="the steps of section 8 on the CUDA cores: past cuBLAS SGEMM on Hopper",
           needs="cp.async stages",
           model={"smem_loads_per_ffma": 6 / 128}),
]

FP16 = [
    Kernel("t1", "t1_wmma_global.cu", {"": "hgemm_t1_wmma_global"}, "fp16_tensor", rules=(K_MULTIPLE_OF_8,),
           title="WMMA, fragments from global memory",
           claim="tensor cores fed straight from global: every mma_sync waits for its loads", min_arch=TURING),
    Kernel("t2", "t2_wmma_smem.cu", {"vec": "hgemm_t2_smem_vec", "scalar": "hgemm_t2_smem_scalar"}, "fp16_tensor",
           rules=(K_MULTIPLE_OF_8,), choose=_vec8_b,
           title="128x128 tile in shared memory, 8 warps of 64x32",
           claim="each A fragment used twice, each B fragment four times, from registers", min_arch=TURING),
    Kernel("t3", "t3_wmma_cp_async.cu", {"vec": "hgemm_t3_cp_async_vec", "scalar": "hgemm_t3_cp_async_scalar"},
           "fp16_tensor", rules=(K_MULTIPLE_OF_8,), choose=_vec8_b,
           title="t2 + cp.async double buffering",
           claim="the copies of phase t+1 fly while phase t computes", min_arch=TURING,
           arch_notes={TURING: T3_ON_TURING}),
    Kernel("t4", "t4_mma_ldmatrix.cu", {"vec": "hgemm_t4_vec", "scalar": "hgemm_t4_scalar"},
           "fp16_tensor", rules=(K_MULTIPLE_OF_8,), choose=_vec8_b,
           title="t3 with mma.sync + ldmatrix by hand (XOR-swizzled tiles, 4 stages, 64x64 warp tiles)",
           claim="section 8 on the tensor cores: no padding, fragments double-buffered, up to the mma.sync ceiling",
           needs="cp.async stages and mma.sync.m16n8k16"),
    # the yardstick, not a rung: NVIDIA CUTLASS's Ampere GEMM with t4's instruction, from the headers of
    # the nvidia-cutlass wheel (lab 7b's setup installs it; common/headers.py finds it at build time)
    Kernel("cutlass", "cutlass_mma_sync.cu", {"": "hgemm_cutlass"}, "fp16_tensor",
           rules=(K_MULTIPLE_OF_8, N_MULTIPLE_OF_8), include_dirs=(cutlass_include,),
           nvcc_flags=("--expt-relaxed-constexpr",), yardstick=True,
           title="NVIDIA CUTLASS's own Ampere GEMM: mma.sync + ldmatrix, 128x256x32, 3 stages",
           claim="the yardstick: what NVIDIA's library reaches with t4's instruction on this GPU",
           needs="CUTLASS's Ampere GEMM: cp.async and mma.sync.m16n8k16"),
]

LADDERS = {"fp32": FP32, "fp16": FP16}



# ---------------------------------------------------------------------------------------------
# What the targets read besides the rows
# ---------------------------------------------------------------------------------------------
BENCH_SIZES = [1024, 2048, 4096, 8192]
BASELINE_RATIOS = [("fp16", "fp32")]        # make bench prints cuBLAS HGEMM / cuBLAS SGEMM: what FP16 is worth

# make tune: v8 and t4, the kernels past the chapter, over the spaces of space_v8.py and space_t4.py;
# before anything is built, the compiler says which candidates the kernels' static_asserts accept. v7 and t3
# keep their chapter parameters; `make tune` once searched them (results/lab07-tune_*_c0a0ad3.json).
TUNING = {
    "fp32": Tuning("v8", space_v8.candidates, illegal=space_v8.reason_illegal, sizes=(2048, 4096, 8192)),
    "fp16": Tuning("t4", space_t4.candidates, illegal=space_t4.reason_illegal, sizes=(4096, 8192)),
}

# make sanitize checks the rows and, once each, these builds: the parameters past the defaults that
# change what the kernel does rather than how big it is, t4 with only warps 0-3 copying (make tune's
# best on the H200, results/lab07-tuned_nvidia-h200.json), at both BK.
SANITIZE_ALSO = [FP16[-1].with_defines(COPY_WARPS=4), FP16[-1].with_defines(BK=64, STAGES=3, COPY_WARPS=4)]

# make bounds (common/bounds.py): t4 and v8 beside builds that leave part of their work out; each
# kernel's header says what its -D switch removes. t4 at both of make tune's BK, v8 at its own.
BOUNDS = {
    "t4": Bounds("T4_PROBE", {1: "no copies after the prologue", 2: "no mma.sync", 3: "no copies, no barrier",
                              4: "copies, no wait, no barrier"}, ladder="fp16", bk=(32, 64)),
    "v8": Bounds("V8_PROBE", {1: "no copies after the prologue", 3: "no copies, no barrier"}, ladder="fp32"),
    # the yardstick at CUTLASS's two Ampere depths, and with B k-contiguous (ldmatrix without .trans)
    "cutlass": Bounds("CUTLASS_PROBE", {1: "B column-major (k contiguous)"}, ladder="fp16", bk=(32, 64)),
}
