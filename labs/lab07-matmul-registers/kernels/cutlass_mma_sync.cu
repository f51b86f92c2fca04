// cutlass_mma_sync.cu: the yardstick for t4. NVIDIA CUTLASS's own Ampere GEMM (the "sm80 multistage"
// tensor-op kernel of CUTLASS 2.x, from the nvidia-cutlass wheel's headers) built from the same ideas
// as t4: mma.sync.m16n8k16 fed by ldmatrix, XOR-swizzled shared tiles, a cp.async pipeline of
// STAGES buffers, 64 x 64 warp tiles, fragments double-buffered. We write none of its main loop: this
// file only picks its tile shapes and launches it with the course's interface, so that `make bench`
// can say how far t4 is from what NVIDIA's library does with the same instruction on the same GPU.
//
//   C (FP32, M x N) = A (FP16, M x K) . B (FP16, K x N), all row-major, FP32 accumulation.
//   Entry point: hgemm_cutlass  (int M, int N, int K, const half* A, const half* B, float* C)
//   Launch: 1-D block of THREADS = (BM/WM)*(BN/WN)*32, grid (ceil(N/BN), ceil(M/BM)), SMEM_BYTES dynamic.
//   Shapes: any M >= 1; K and N multiples of 8 (CUTLASS copies rows of A and B as 16-byte chunks).
//
// Tiles (defaults): block 128 x 256 x 32, 8 warps of 64 x 64, 3 stages: one of CUTLASS's own Ampere
// configurations, 72 KB of shared memory, so it runs on every GPU of the course (sm_86/89/120 give a
// block 99 KB). On the H200 at 4096^3 it reached 63.8 % of cuBLAS HGEMM, CUTLASS's deeper BK=64 tile
// (144 KB) 64.7 %, and neither passed 65 % with B given k-contiguous (make bounds KERNEL=cutlass;
// lab README, "A yardstick").
//
// Block order: CUTLASS's identity swizzle walks the output in bands of 8 tile columns, row after row
// inside a band, so that the blocks resident together share their B columns in L2. Its grid has idle
// blocks when 8 does not divide the tile columns; CourseRaster (cutlass_reference.cuh, which lab 7a's
// TF32 yardstick shares) walks the same order on the course's grid, one block per tile.
//
// What to look for in SASS (make sass): HMMA.16816.F32, LDSM.16.M88.4 (A), LDSM.16.MT88.4 (B,
// transposed), LDGSTS.E.BYPASS.LTC128B.128, one BAR.SYNC per k-tile; set its counts beside t4's.
#include <cuda_fp16.h>

#ifndef BM
#define BM 128      // block tile rows
#endif
#ifndef BN
#define BN 256      // block tile columns
#endif
#ifndef BK
#define BK 32       // K depth of one stage: two 16-deep mma k-steps
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
#define SMEM_BYTES (STAGES * (BM * BK + BK * BN) * sizeof(half))   // A and B stages, no padding

static_assert(WM % 16 == 0 && WN % 8 == 0 && BK % 16 == 0, "warp tiles are made of m16n8k16 mma tiles");

#include "cutlass_reference.cuh"

// mma.sync.m16n8k16, FP16 operands copied as 8-half (16-byte) chunks; C = 1 * A B + 0 * C
extern "C" __global__ void __launch_bounds__(THREADS)
hgemm_cutlass(int M, int N, int K, const half* A, const half* B, float* C)
{
    cutlass_reference::gemm<cutlass::half_t, 8, cutlass::gemm::GemmShape<16, 8, 16>>(
        M, N, K, 1.0f, reinterpret_cast<const cutlass::half_t*>(A), reinterpret_cast<const cutlass::half_t*>(B), 0.0f, C);
}
