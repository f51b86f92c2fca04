// splitk_v8.cu -- lab 7d: split-K on lab 7's v8, the course's fastest FFMA kernel
//
// C (M x N) = A (M x K) . B (K x N), row-major FP32, FFMA on CUDA cores, any M, N, K >= 1.
// splitk_fp32.cu teaches the split on v6's simple tile; this file puts the same split on v8
// (lab 7's v8_pipelined.cuh: cp.async pipeline, register double buffering, swizzled A, rasterized
// blocks), for the shapes where the split matters AND the FFMAs do: at 64 x 4096 x 4096 the
// weights are 64 MB (16 us of copy) but the 2.1 GFLOP are 40-some us of FFMA, so the kernel that
// runs it must be the fast one. Nothing of v8 is rewritten: its body takes a range of K (its
// length K and the full row stride lda of A), and this file hands each split its range:
//     split z: tiles [z * T, (z + 1) * T) of BK, T = ceil(ceil(K / BK) / splits)   (as splitk_fp32)
//     sgemm_v8_body(M, N, range length, lda = K, alpha = 1, A + k0, B + k0 * N, beta = 0, workspace[z])
// beta = 0: v8 never reads its C, so the workspace needs no clearing. An empty range (splits >
// tiles) runs no tile and writes zeros, so the reduce may read every partial.
//
// Entry points (the tile parameters are v8's: BM, BN, BK, WM, WN, ..., STAGES, GROUP; -DNAME=value
// overrides them, and v8's static_asserts check them):
//   splitk_v8_vec      N % 4 == 0 (and K % 4 == 0, the rule of v8's vec entry): 16-byte cp.async of B
//   splitk_v8_scalar   any shape
//       (int M, int N, int K, const float* A, const float* B, float* C, int splits, float* workspace)
//     Launch: 1-D block of THREADS, grid (ceil(N / BN), ceil(M / BM), splits), SMEM_BYTES of dynamic
//     shared memory (v8's; above 48 KB the launcher raises the limit). workspace: splits * M * N
//     floats; C is neither read nor written.
//   splitk_v8_reduce   (int M, int N, int splits, const float* workspace, float* C): the ordered
//     reduce (splitk_reduce.cuh), grid ceil(M * N / REDUCE_THREADS): C is bitwise repeatable.
//   splitk_v8_fused_vec, splitk_v8_fused_scalar   the main kernel and the reduce in one launch, for
//     a grid of at most one block per SM (below); same arguments, C written, workspace + 2 counters.
//
// SASS to look for: v8's (per BK = 8 tile of the default block, 1024 FFMA, 48 LDS.128, LDGSTS.E for
// A and LDGSTS.E.BYPASS.128 for B, DEPBAR, one BAR.SYNC; no LDL/STL), plus one IMAD for the range.

#include "../../lab07-matmul-registers/kernels/v8_pipelined.cuh"   // v8's parameters, rules and body
#include "splitk_reduce.cuh"   // the ordered reduce

template <bool VEC>
__device__ __forceinline__ void splitk_v8_body(int M, int N, int K, const float* __restrict__ A,
                                               const float* __restrict__ B, int splits,
                                               float* __restrict__ workspace)
{
    const int tiles = (K + BK - 1) / BK;
    const int per = (tiles + splits - 1) / splits;            // tiles of K per split
    const int k0 = min(K, static_cast<int>(blockIdx.z) * per * BK);
    const int k1 = min(K, k0 + per * BK);
    float* const partial = workspace + static_cast<size_t>(blockIdx.z) * M * N;
    sgemm_v8_body<VEC>(M, N, k1 - k0, K, 1.0f, A + k0, B + static_cast<size_t>(k0) * N, 0.0f, partial);
}

extern "C" __global__ void __launch_bounds__(THREADS)
splitk_v8_vec(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B,
              float* __restrict__ C, int splits, float* __restrict__ workspace)
{
    (void)C;
    splitk_v8_body<true>(M, N, K, A, B, splits, workspace);
}

extern "C" __global__ void __launch_bounds__(THREADS)
splitk_v8_scalar(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B,
                 float* __restrict__ C, int splits, float* __restrict__ workspace)
{
    (void)C;
    splitk_v8_body<false>(M, N, K, A, B, splits, workspace);
}

// One launch (splitk_v8_fused_*), where the whole grid fits in one wave (grid <= SMs: the few-rows
// rule's one-wave split): each block computes its partial as above, the grid meets at a barrier
// (splitk::grid_barrier), and block (x, y, z) then adds slice z of tile (x, y) over every split, in
// z order: the same sums as splitk_v8_reduce, without its launch. workspace: splits * M * N floats,
// then 2 counters, zero when the launch starts (the launcher zeroes them once; each launch leaves them
// zero). The tile a block reduces need not be the one it computed (v8 rasterizes its tiles): the
// barrier is over the whole grid, so every partial is written before any is read.
template <bool VEC>
__device__ __forceinline__ void splitk_v8_fused(int M, int N, int K, const float* __restrict__ A,
                                                const float* __restrict__ B, float* __restrict__ C,
                                                int splits, float* __restrict__ workspace)
{
    splitk_v8_body<VEC>(M, N, K, A, B, splits, workspace);
    splitk::finish_in_one_launch<VEC ? 4 : 1, BM, BN, THREADS, REDUCE_UNROLL>(M, N, splits, workspace, C);
}

extern "C" __global__ void __launch_bounds__(THREADS)
splitk_v8_fused_vec(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B,
                    float* __restrict__ C, int splits, float* __restrict__ workspace)
{
    splitk_v8_fused<true>(M, N, K, A, B, C, splits, workspace);
}

extern "C" __global__ void __launch_bounds__(THREADS)
splitk_v8_fused_scalar(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B,
                       float* __restrict__ C, int splits, float* __restrict__ workspace)
{
    splitk_v8_fused<false>(M, N, K, A, B, C, splits, workspace);
}

// C[i] = sum over z ascending of workspace[z][i] (splitk_reduce.cuh): bitwise repeatable.
extern "C" __global__ void __launch_bounds__(REDUCE_THREADS)
splitk_v8_reduce(int M, int N, int splits, const float* __restrict__ workspace, float* __restrict__ C)
{
    splitk::reduce<REDUCE_THREADS, REDUCE_UNROLL>(M, N, splits, workspace, C);
}
