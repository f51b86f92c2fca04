// cutlass_tf32_mma_sync.cu: the yardstick for k7. NVIDIA CUTLASS's own Ampere GEMM on the TF32 tensor
// cores (the "sm80 multistage" tensor-op kernel of CUTLASS 2.x, from the nvidia-cutlass wheel's headers),
// built from the ideas of the worklog's ladder: mma.sync.m16n8k8 TF32, swizzled shared tiles, a cp.async
// pipeline of STAGES buffers, 64 x 64 warp tiles, fragments double-buffered. We write none of its main
// loop: this file picks its tile shapes and launches it with the lab's interface, so that `make bench`
// can say how far k7 is from what NVIDIA's library does with the same instruction on the same GPU.
//
//   C (FP32, M x N) = alpha A (FP32, M x K) . B (FP32, K x N) + beta C, all row-major, FP32 accumulation.
//   Entry point: tf32gemm_cutlass (int M, int N, int K, float alpha, const float* A, const float* B,
//                                  float beta, float* C); beta == 0 never reads C (CUTLASS's epilogue
//                                  skips the source when beta is zero).
//   Launch: 1-D block of THREADS = (BM/WM)*(BN/WN)*32, grid (ceil(N/BN), ceil(M/BM)), SMEM_BYTES dynamic.
//   Shapes: any M >= 1; K and N multiples of 4 (CUTLASS copies rows of A and B as 16-byte chunks).
//   Numerics: every operand is rounded to the nearest TF32 as its fragment is loaded (CUTLASS's
//   PreferredRoundingMode: round to nearest on sm_90+, half-ulp-and-truncate below), so the tolerance
//   is the rounded one, 2^-11 per operand, like k2..k7's default.
//
// Tiles (defaults): block 128 x 256 x 16, 8 warps of 64 x 64, 3 stages: one of CUTLASS's own Ampere
// TF32 configurations, 72 KB of shared memory, so it runs on every GPU of the course. On the H200 at
// 4096^3 it reached 53.8 % of cuBLAS TF32, BK=32 53.3 %, and B given k-contiguous (both operands by
// ldmatrix) 55.7 % (make bounds KERNEL=cutlass; lab README, "A yardstick").
//
// Block order: as lab 7's cutlass_mma_sync.cu, CUTLASS's bands of 8 tile columns on the course's grid.
//
// What to look for in SASS (make sass): HMMA.1688.F32.TF32; A by LDSM (CUTLASS's ldmatrix on 32-bit
// data, as k4's trick), B by LDS (row-major B cannot use ldmatrix without shuffles); LDGSTS; set the
// counts beside k7's.
#ifndef BM
#define BM 128      // block tile rows
#endif
#ifndef BN
#define BN 256      // block tile columns
#endif
#ifndef BK
#define BK 16       // K depth of one stage: two 8-deep mma k-steps
#endif
#ifndef WM
#define WM 64       // warp tile rows
#endif
#ifndef WN
#define WN 64       // warp tile columns
#endif
#ifndef STAGES
#define STAGES 3    // shared buffers: STAGES-1 tiles in flight while one is read
#endif
#ifndef GROUP
#define GROUP 8     // rasterization: tile columns per band (CUTLASS's identity swizzle uses 8)
#endif
#ifndef CUTLASS_PROBE
#define CUTLASS_PROBE 0   // make bounds KERNEL=cutlass: 1 reads B as column-major (k contiguous), the
#endif                    // layout CUTLASS is fastest on: both operands by ldmatrix. Its results are
                          // WRONG by design (B is given row-major); only its time means something.

#define THREADS ((BM / WM) * (BN / WN) * 32)
#define SMEM_BYTES (STAGES * (BM * BK + BK * BN) * sizeof(float))   // A and B stages, no padding

static_assert(WM % 16 == 0 && WN % 8 == 0 && BK % 8 == 0, "warp tiles are made of m16n8k8 mma tiles");

#include "../../lab07-matmul-registers/kernels/cutlass_reference.cuh"

// mma.sync.m16n8k8 on TF32, FP32 operands copied as float4; C = alpha A B + beta C
extern "C" __global__ void __launch_bounds__(THREADS)
tf32gemm_cutlass(int M, int N, int K, float alpha, const float* A, const float* B, float beta, float* C)
{
    cutlass_reference::gemm<float, 4, cutlass::gemm::GemmShape<16, 8, 8>>(M, N, K, alpha, A, B, beta, C);
}
