"""Lab 7c, Hopper: wgmma, TMA, mbarriers and warp specialization, FP16 and TF32 at cuBLAS speed on
an H100 / H200. The lab's table: data (common/lab.py says how every target reads it).

Every row is built for sm_90a only (wgmma and setmaxnreg exist only there): on an sm_90 GPU the
course builds and runs them for sm_90a, on any other GPU they are skipped, saying why. Each rung's
tile parameters live in its .cu file; the rows say what the source cannot: entry points, shape
rules, how a TMA kernel is launched (launch.py: tensor maps, persistent grids, clusters), the claim.
"""
from common.kernels import Kernel
from common.measure import Tuning
from common.lab import load
from common.precision import TF32_SPLIT, TF32_TRUNCATED

from . import tuning
from .launch import (split_a_registers_persistent, split_persistent, tf32_persistent, tf32_registers_persistent,
                     tma_clusters, tma_grid, tma_persistent, tma_persistent_store, tma_stream_k)

TITLE = "Lab 7c, Hopper: wgmma, TMA, mbarriers, warp specialization (sm_90a)"
SHORT = "lab07c"

HOPPER = ("sm_90a",)
HOPPER_NEEDS = "wgmma, TMA and setmaxnreg, sm_90a features: a Hopper GPU (H100, H200)"

# TMA describes A with a row pitch of K elements, which must be a multiple of 16 bytes.
K_MULTIPLE_OF_8 = (lambda M, N, K: K % 8 == 0,
                   "K to be a multiple of 8 (A is read by TMA, whose row pitch, K halves, must be a multiple of 16 bytes)")
K_MULTIPLE_OF_4 = (lambda M, N, K: K % 4 == 0,
                   "K to be a multiple of 4 (A is read by TMA, whose row pitch, K floats, must be a multiple of 16 bytes)")


def _tma(name, source, entry, hook, title, claim):
    return Kernel(name, source, {"": entry}, "fp16_tensor", archs=HOPPER, needs=HOPPER_NEEDS, rules=(K_MULTIPLE_OF_8,),
                  launch_hook=hook, title=title, claim=claim)


# lab 7's t4 with its copies moved to TMA: the multiply stays mma.sync, so this row prices the copy
# engine alone (and h1, next, wgmma alone with t4's cp.async copies).
T4_TMA = _tma("t4_tma", "t4_tma.cu", "hgemm_t4_tma", tma_grid,
              "lab 7's t4 (mma.sync + ldmatrix) with TMA copies: one thread, 1 + BN/64 loads per tile, mbarriers",
              "the copy engine alone does not pay under mma.sync: t4's copies cost it 13 % (lab 7's make "
              "bounds), TMA's cost more; what wgmma changes is the ldmatrix side")

FP16 = [
    Kernel("h1", "h1_wgmma_cp_async.cu", {"": "hgemm_h1_wgmma"}, "fp16_tensor", archs=HOPPER, needs=HOPPER_NEEDS,
           title="wgmma m64n128k16 from swizzled shared memory, one warpgroup, cp.async loads",
           claim="the tensor core reads both operands from shared memory by descriptor: no ldmatrix, "
                 "no fragments; any M, N, K (guarded loads where K or N is not a multiple of 8)"),
    _tma("h2", "h2_tma_mbarrier.cu", "hgemm_h2_tma", tma_grid,
         "h1 + TMA loads (one thread, one instruction per box) into a 4-stage mbarrier pipeline",
         "the copy engine swizzles, zero-fills the edges and counts bytes on an mbarrier; "
         "one wgmma group stays in flight across tiles"),
    _tma("h3", "h3_warp_specialized.cu", "hgemm_h3_ws", tma_grid,
         "h2 split into a TMA producer warpgroup and two consumer warpgroups, setmaxnreg",
         "FULL and EMPTY mbarriers per stage replace the block barrier: no __syncthreads in the main loop"),
    _tma("h4", "h4_persistent.cu", "hgemm_h4_persistent", tma_persistent,
         "h3 persistent (one block per SM), rasterized tile order, 128 x 256 tiles (m64n256k16)",
         "the producer fills the next tile's stages while the consumers store this one; "
         "GROUP tile rows per band keep A and B panels in L2"),
    _tma("h5", "h5_cluster_multicast.cu", "hgemm_h5_cluster", tma_clusters,
         "h4 in 2-block clusters that share each B tile by TMA multicast",
         "a third less L2-to-SM traffic per block, paid for with cross-block mbarrier arrivals"),
    _tma("h6", "h6_tma_store.cu", "hgemm_h6_tma_store", tma_persistent_store,
         "h4 with its epilogue through shared memory: 64 x 32 chunks, swizzled, stored by TMA",
         "the consumers write C into shared memory and go back to the tensor core while the copy "
         "engine stores it; no thread writes global memory"),
    _tma("h7", "h7_stream_k.cu", "hgemm_h7_stream_k", tma_stream_k,
         "h6 with a stream-K tail: the tiles past the last full round shared out by k-iterations",
         "no SM idles in the last round: every block gets an equal share of the leftover tiles' "
         "k-iterations, and a tile split across blocks is summed by the block that starts it, in a fixed order"),
]

TF32 = [
    # the tensor core reads the top 19 bits of each FP32 input (no cvt.rna in the kernel): truncation
    Kernel("h4_tf32", "h4_tf32.cu", {"": "sgemm_h4_tf32"}, "tf32_tensor", archs=HOPPER, needs=HOPPER_NEEDS,
           rules=(K_MULTIPLE_OF_4,),
           launch_hook=tf32_persistent, input_roundoff=TF32_TRUNCATED,
           title="h4's design on TF32 wgmma (m64n256k8), B transposed on the device first",
           claim="TF32 wgmma reads only K-major operands: each call transposes B (counted in its time), "
                 "then runs h4's persistent warp-specialized GEMM"),
    Kernel("h6_tf32", "h6_tf32.cu", {"": "sgemm_h6_tf32"}, "tf32_tensor", archs=HOPPER, needs=HOPPER_NEEDS,
           rules=(K_MULTIPLE_OF_4,),
           launch_hook=tf32_registers_persistent, input_roundoff=TF32_TRUNCATED,
           title="TF32 without the transpose: C^T = B^T A^T, B's fragments loaded into registers, h6's epilogue",
           claim="wgmma takes its A operand from registers, which load from any layout: row-major B needs no "
                 "transpose pass, and C^T goes to its place in C through h6's shared-memory chunks"),
]

# FP32 accuracy from the TF32 tensor cores (lab 7a's k8 explains the split and the promotion); any K:
# the split pass writes every part at a pitch TMA can describe
THREE_X = [
    Kernel("h4_3xtf32", "h4_3xtf32.cu", {"": "sgemm_h4_3xtf32"}, "fp32_3xtf32", archs=HOPPER, needs=HOPPER_NEEDS,
           launch_hook=split_persistent, input_roundoff=TF32_SPLIT, helpers={"split": "split_h4_3xtf32"},
           title="h4_tf32 on big + small TF32 parts split on the device, 3 wgmma per step, sums promoted to FP32",
           claim="FP32's accuracy at tensor-core speed: a split pass (counted in the time), then 128 x 128 "
                 "tiles whose wgmma chains are added to FP32 registers every KCHUNK of K; the pass splits the "
                 "rows of A the first wave reads, the GEMM's idle producer warps the rest"),
    Kernel("h6_3xtf32", "h6_3xtf32.cu", {"": "sgemm_h6_3xtf32"}, "fp32_3xtf32", archs=HOPPER, needs=HOPPER_NEEDS,
           launch_hook=split_a_registers_persistent, input_roundoff=TF32_SPLIT, helpers={"split": "split_h6_3xtf32"},
           title="h4_3xtf32's arithmetic on h6_tf32's C^T = B^T A^T: B split in registers, only A split by a pass",
           claim="B's fragments are loaded raw and split where they sit, so the split pass handles A alone, "
                 "untransposed (half h4_3xtf32's bytes); m64n128k8 chains promoted every KCHUNK, h6's TMA-store epilogue"),
]

# lab 7's best mma.sync kernel in the same table: what wgmma is worth over it on the same GPU; lab 7a's
# k8 beside the 3xTF32 rung likewise
LAB7 = load("lab07-matmul-registers")
LAB7A = load("lab07a-tf32-tensor-cores")
LADDERS = {"fp16": [LAB7.kernel("t4"), T4_TMA] + FP16, "tf32": TF32, "3xtf32": [LAB7A.kernel("k8")] + THREE_X}
# 3xtf32's baseline is cuBLAS SGEMM (the rung's precision); cuBLAS TF32 and the same split done with
# three cuBLAS TF32 calls are timed beside it, the split timed with them and made beforehand
EXTRA_BASELINES = {"3xtf32": ["tf32_tensor", "tf32x3_cublas", "tf32x3_cublas_presplit", "fp32_bf16x9"]}
# make accuracy (common/accuracy.py): error vs K beside cuBLAS's, for 1xTF32 (h4_tf32), the 3xTF32 rung,
# and the rung built with one wgmma chain over all of K up to 65536 (consumer 1's first chain is half a
# KCHUNK): what the promotion buys; then h6_3xtf32, the same arithmetic with B split in registers
ACCURACY_ROWS = ["h4_tf32", "h4_3xtf32", ("h4_3xtf32", {"KCHUNK": 131072}), "h6_3xtf32"]
BENCH_SIZES = [2048, 4096, 8192]
SELFCHECK_SHAPES = [(1, 1, 8), (127, 129, 136), (129, 127, 64), (1000, 3, 520), (300, 520, 1000), (256, 256, 256)]
# the third: h7's stream-K on (33 tiles x 17 k-iterations over 132 SMs, each tile summed from 4-5 blocks);
# the fourth: h4_3xtf32's splitter warps at work (162 tiles on 132 SMs: A's second band, 76 rows, split
# inside the GEMM; launch.split_share)
SANITIZE_SHAPES = [(127, 129, 136), (300, 520, 1000), (300, 2600, 1088), (1100, 2200, 200)]
# make tune: h4 and h4_tf32 over tile x STAGES x GROUP (tuning.py says why those); the compiler says which
# candidates their static_asserts accept before anything is built
TUNING = {"fp16": Tuning("h4", tuning.candidates_fp16, illegal=tuning.reason_illegal["fp16"], sizes=(4096, 8192)),
          "tf32": Tuning("h4_tf32", tuning.candidates_tf32, illegal=tuning.reason_illegal["tf32"], sizes=(4096, 8192))}
