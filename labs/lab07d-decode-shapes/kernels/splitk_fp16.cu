// splitk_fp16.cu -- lab 7d: split-K on tensor cores (WMMA + cp.async), FP16 in, FP32 accumulate
//
// C (FP32, M x N) = A (FP16, M x K) . B (FP16, K x N), row-major, any M, N, K >= 1.
// The same split as splitk_fp32.cu (read its header first): blockIdx.z = split, each split owns a
// BK-aligned range of K, writes its partial tile to workspace[z][M][N] (FP32), and
// splitk_fp16_reduce adds the partials in a fixed order. The block tile is lab 7's t3: cp.async
// into a STAGES-deep ring of shared buffers, 8 warps of 64 x 32 doing WMMA m16n16k16.
//
// Entry points:
//   splitk_fp16_vec     K % 8 == 0 and N % 8 == 0: every tile chunk of 8 halves (16 bytes) copied
//                       with cp.async (zero-filled outside the matrix)
//   splitk_fp16_scalar  any shape: the same ring, filled by guarded 2-byte loads and 16-byte
//                       shared stores (synchronous); for odd K or N only
//       (int M, int N, int K, const __half* A, const __half* B, float* C, int splits, float* workspace)
//     Launch: 1-D block of THREADS = 256, grid (ceil(N / BN), ceil(M / BM), splits), DYNAMIC shared
//     memory SMEM_BYTES (56,832 B by default: above 48 KB, the launcher must raise
//     CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES first). workspace: splits * M * N floats;
//     C is neither read nor written.
//   splitk_fp16_fused_vec, splitk_fp16_fused_scalar  the main kernel and the reduce in one launch,
//     for a grid of at most one block per SM (launch.py; splitk_reduce.cuh says why); same arguments,
//     C written, workspace = the partials then 2 counters. The same bits as the two launches.
//   splitk_fp16_reduce  (int M, int N, int splits, const float* workspace, float* C)
//     Launch: 1-D block of REDUCE_THREADS = 256, grid (ceil(M * N / REDUCE_THREADS), 1, 1);
//     z ascending, bitwise repeatable. Always run it (for splits = 1 it is a copy).
// What it costs: splits x M x N x 4 bytes of workspace written and read once (2 MB at 128 x 128 x
// 32 splits: well under a microsecond of bandwidth), and one more launch where the grid is larger
// than one wave (the fused entries do without it otherwise). An atomicAdd epilogue would
// skip both but needs a zeroed C and gives order-dependent (not repeatable) low bits: not provided.
//
// Tiles (defaults): BM x BN = 128 x 128, BK = 32 (two WMMA k-steps per tile), 8 warps of
// WM x WN = 64 x 32 (4 x 2 fragments: per k-step 4 A and 2 B fragment loads for 8 mma_sync),
// STAGES = 3: two tiles in flight while one is computed. Shared rows padded by 8 halves
// (16 bytes): WMMA wants ldm a multiple of 8 halves, cp.async 16-byte aligned rows, and the pad
// moves consecutive fragment rows to different banks.
//
// SASS to look for: LDGSTS.E.BYPASS.128 (cp.async, 16 B; zero-fill copies carry a trailing !PT),
// LDGDEPBAR per commit, DEPBAR.LE SB0, 0x1 for wait_prior(STAGES - 2), LDSM for the fragments,
// HMMA.16816.F32 (two per mma_sync), two BAR.SYNC per tile; no LDL/STL. The scalar path shows
// LDG.E.U16 + STS.128 instead of LDGSTS.

#include <cuda_fp16.h>
#include <cuda_pipeline.h>
#include <mma.h>

#include "fp16_common.cuh"   // gather8
#include "splitk_reduce.cuh"  // the ordered reduce

#ifndef BM
#define BM 128      // block tile rows: at 128 x 128 the whole output is one tile
#endif
#ifndef BN
#define BN 128      // block tile columns
#endif
#ifndef BK
#define BK 32       // K per tile: two 16-deep WMMA steps; split boundaries are multiples of BK
#endif
#ifndef WM
#define WM 64       // warp tile rows: 4 A fragments, each used WN / 16 times
#endif
#ifndef WN
#define WN 32       // warp tile columns: 2 B fragments, each used WM / 16 times
#endif
#ifndef STAGES
#define STAGES 3    // shared buffers in the cp.async ring: STAGES - 1 tiles in flight
#endif

#define THREADS ((BM / WM) * (BN / WN) * 32)                         // one warp per warp tile: 256
#define SMEM_BYTES (STAGES * (BM * (BK + 8) + BK * (BN + 8)) * sizeof(__half))   // A ring, then B ring

static_assert(WM % 16 == 0 && WN % 16 == 0, "splitk_fp16: the warp tile must be whole 16 x 16 WMMA tiles");
static_assert(BM % WM == 0 && BN % WN == 0, "splitk_fp16: the block tile must be whole warp tiles");
static_assert(BK % 16 == 0, "splitk_fp16: BK must be a multiple of 16, the depth of one WMMA step");
static_assert(BN % 8 == 0, "splitk_fp16: BN must be whole 8-half chunks");
static_assert(THREADS <= 1024, "splitk_fp16: at most 32 warps per block");
static_assert(STAGES >= 2 && STAGES <= 8, "splitk_fp16: 2 to 8 stages (__pipeline_wait_prior counts at most 8 groups)");
static_assert(SMEM_BYTES <= 227 * 1024, "splitk_fp16: shared memory above the 227 KB any GPU gives a block");
static_assert((BM / WM) * (BN / WN) * 16 * 20 * 4 <= SMEM_BYTES,
              "splitk_fp16: the epilogue's per-warp 16 x 20 float staging areas must fit in the ring");

namespace splitk_fp16 {

using fp16::gather8;
using namespace nvcuda;

constexpr int T16 = 16;
constexpr int WARPS_N = BN / WN;
constexpr int FM = WM / T16, FN = WN / T16;
constexpr int LDA = BK + 8, LDB = BN + 8;          // padded shared rows, halves
constexpr int A_STAGE = BM * LDA, B_STAGE = BK * LDB;
constexpr int CH = 8;                               // halves per 16-byte chunk
constexpr int A_CPR = BK / CH, B_CPR = BN / CH;     // chunks per tile row
constexpr int A_CHUNKS = BM * A_CPR, B_CHUNKS = BK * B_CPR;
constexpr int A_ITERS = (A_CHUNKS + THREADS - 1) / THREADS;
constexpr int B_ITERS = (B_CHUNKS + THREADS - 1) / THREADS;
constexpr int LDC = T16 + 4;                        // staging row of an edge fragment, floats
static_assert((A_STAGE * 2) % 128 == 0 && (B_STAGE * 2) % 128 == 0, "every buffer 128-byte aligned");

using FragA = wmma::fragment<wmma::matrix_a, T16, T16, T16, __half, wmma::row_major>;
using FragB = wmma::fragment<wmma::matrix_b, T16, T16, T16, __half, wmma::row_major>;
using FragC = wmma::fragment<wmma::accumulator, T16, T16, T16, float>;

extern __shared__ __align__(128) unsigned char smem_raw[];

// Copy tile [k0, k0 + BK) of A (rows bm..) and B (columns bn..) into one stage. ke: end of this
// split's K range (only the last split's last tile reaches past it).
template <bool VEC, bool CHECKED>
__device__ __forceinline__ void issue_tile(__half* As_s, __half* Bs_s, const __half* __restrict__ A,
                                           const __half* __restrict__ B, int M, int N, int K,
                                           int bm, int bn, int k0, int ke, int tid)
{
#pragma unroll
    for (int it = 0; it < A_ITERS; ++it) {
        const int c = tid + it * THREADS;
        if (A_CHUNKS % THREADS != 0 && c >= A_CHUNKS) break;
        const int r = c / A_CPR, k = (c % A_CPR) * CH;
        __half* dst = As_s + r * LDA + k;
        const __half* src = A + (size_t)(bm + r) * K + k0 + k;
        if constexpr (VEC) {
            if (!CHECKED || (bm + r < M && k0 + k < ke)) __pipeline_memcpy_async(dst, src, 16);
            else __pipeline_memcpy_async(dst, A, 16, 16);          // zero-fill: reads nothing
        } else {
            const bool row = !CHECKED || bm + r < M;
            *reinterpret_cast<uint4*>(dst) = row ? gather8(src, CHECKED ? ke - k0 - k : CH) : make_uint4(0, 0, 0, 0);
        }
    }
#pragma unroll
    for (int it = 0; it < B_ITERS; ++it) {
        const int c = tid + it * THREADS;
        if (B_CHUNKS % THREADS != 0 && c >= B_CHUNKS) break;
        const int r = c / B_CPR, n = (c % B_CPR) * CH;
        __half* dst = Bs_s + r * LDB + n;
        const __half* src = B + (size_t)(k0 + r) * N + bn + n;
        if constexpr (VEC) {
            if (!CHECKED || (k0 + r < ke && bn + n < N)) __pipeline_memcpy_async(dst, src, 16);
            else __pipeline_memcpy_async(dst, B, 16, 16);
        } else {
            const bool row = !CHECKED || k0 + r < ke;
            *reinterpret_cast<uint4*>(dst) = row ? gather8(src, CHECKED ? N - bn - n : CH) : make_uint4(0, 0, 0, 0);
        }
    }
}

template <bool VEC>
__device__ __forceinline__ void splitk_body(int M, int N, int K, const __half* __restrict__ A,
                                            const __half* __restrict__ B, int splits, float* __restrict__ ws)
{
    __half* As = reinterpret_cast<__half*>(smem_raw);
    __half* Bs = As + STAGES * A_STAGE;
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int warp_m = warp / WARPS_N, warp_n = warp % WARPS_N;
    const int bm = blockIdx.y * BM, bn = blockIdx.x * BN;
    const bool inside = bm + BM <= M && bn + BN <= N;

    const int tiles = (K + BK - 1) / BK;
    const int per = (tiles + splits - 1) / splits;
    const int t0 = min(tiles, (int)blockIdx.z * per), t1 = min(tiles, t0 + per);
    const int ke = min(K, t1 * BK);
    const int n_t = t1 - t0;

    FragC acc[FM][FN];
#pragma unroll
    for (int i = 0; i < FM; ++i)
#pragma unroll
        for (int j = 0; j < FN; ++j) wmma::fill_fragment(acc[i][j], 0.0f);

    auto issue = [&](int stage, int t) {
        const int k0 = (t0 + t) * BK;
        __half* a = As + stage * A_STAGE;
        __half* b = Bs + stage * B_STAGE;
        if (inside && k0 + BK <= ke) issue_tile<VEC, false>(a, b, A, B, M, N, K, bm, bn, k0, ke, tid);
        else                         issue_tile<VEC, true>(a, b, A, B, M, N, K, bm, bn, k0, ke, tid);
    };

#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < n_t) issue(s, s);
        __pipeline_commit();
    }
    int rs = 0, wsg = STAGES - 1;
    for (int t = 0; t < n_t; ++t) {
        if (t + STAGES - 1 < n_t) issue(wsg, t + STAGES - 1);
        __pipeline_commit();
        __pipeline_wait_prior(STAGES - 1);       // tile t (group t) has landed, for this thread
        __syncthreads();                         // ... and for all
        const __half* a_w = As + rs * A_STAGE + warp_m * WM * LDA;
        const __half* b_w = Bs + rs * B_STAGE + warp_n * WN;
#pragma unroll
        for (int kk = 0; kk < BK; kk += T16) {
            FragA fa[FM];
            FragB fb[FN];
#pragma unroll
            for (int i = 0; i < FM; ++i) wmma::load_matrix_sync(fa[i], a_w + i * T16 * LDA + kk, LDA);
#pragma unroll
            for (int j = 0; j < FN; ++j) wmma::load_matrix_sync(fb[j], b_w + kk * LDB + j * T16, LDB);
#pragma unroll
            for (int i = 0; i < FM; ++i)
#pragma unroll
                for (int j = 0; j < FN; ++j) wmma::mma_sync(acc[i][j], fa[i], fb[j], acc[i][j]);
        }
        __syncthreads();                         // stage rs free: a later issue refills it
        rs = rs + 1 == STAGES ? 0 : rs + 1;
        wsg = wsg + 1 == STAGES ? 0 : wsg + 1;
    }
    __pipeline_wait_prior(0);
    __syncthreads();                             // the ring becomes the epilogue's staging area

    float* W = ws + (size_t)blockIdx.z * M * N;
    float* stage = reinterpret_cast<float*>(smem_raw) + warp * T16 * LDC;
#pragma unroll
    for (int i = 0; i < FM; ++i) {
#pragma unroll
        for (int j = 0; j < FN; ++j) {
            const int r0 = bm + warp_m * WM + i * T16, c0 = bn + warp_n * WN + j * T16;
            if (r0 >= M || c0 >= N) continue;    // warp-uniform
            if (VEC && r0 + T16 <= M && c0 + T16 <= N) {
                // N % 8 == 0: pointer 32-byte aligned, ldm a multiple of 16 bytes
                wmma::store_matrix_sync(W + (size_t)r0 * N + c0, acc[i][j], N, wmma::mem_row_major);
            } else {
                wmma::store_matrix_sync(stage, acc[i][j], LDC, wmma::mem_row_major);
                __syncwarp();
#pragma unroll
                for (int q = 0; q < T16 * T16 / 32; ++q) {
                    const int r = q * 2 + lane / T16, c = lane % T16;
                    if (r0 + r < M && c0 + c < N) W[(size_t)(r0 + r) * N + c0 + c] = stage[r * LDC + c];
                }
                __syncwarp();
            }
        }
    }
}

}  // namespace splitk_fp16

extern "C" __global__ void __launch_bounds__(THREADS)
splitk_fp16_vec(int M, int N, int K, const __half* __restrict__ A, const __half* __restrict__ B,
                float* __restrict__ C, int splits, float* __restrict__ workspace)
{
    (void)C;
    splitk_fp16::splitk_body<true>(M, N, K, A, B, splits, workspace);
}

// minBlocks = 1: without it ptxas may cap the registers to fit two blocks per SM and spill the scalar
// path's guarded 2-byte loads; one block per SM is what split-K runs anyway.
extern "C" __global__ void __launch_bounds__(THREADS, 1)
splitk_fp16_scalar(int M, int N, int K, const __half* __restrict__ A, const __half* __restrict__ B,
                   float* __restrict__ C, int splits, float* __restrict__ workspace)
{
    (void)C;
    splitk_fp16::splitk_body<false>(M, N, K, A, B, splits, workspace);
}

// The same in one launch, where the grid has at most one block per SM (launch.py): the main body,
// then splitk_reduce.cuh's grid barrier and this block's slice of the ordered reduce (float4 where
// N % 8 == 0, as the vec entry requires).
extern "C" __global__ void __launch_bounds__(THREADS)
splitk_fp16_fused_vec(int M, int N, int K, const __half* __restrict__ A, const __half* __restrict__ B,
                      float* __restrict__ C, int splits, float* __restrict__ workspace)
{
    splitk_fp16::splitk_body<true>(M, N, K, A, B, splits, workspace);
    splitk::finish_in_one_launch<4, BM, BN, THREADS, REDUCE_UNROLL>(M, N, splits, workspace, C);
}

extern "C" __global__ void __launch_bounds__(THREADS, 1)
splitk_fp16_fused_scalar(int M, int N, int K, const __half* __restrict__ A, const __half* __restrict__ B,
                         float* __restrict__ C, int splits, float* __restrict__ workspace)
{
    splitk_fp16::splitk_body<false>(M, N, K, A, B, splits, workspace);
    splitk::finish_in_one_launch<1, BM, BN, THREADS, REDUCE_UNROLL>(M, N, splits, workspace, C);
}

// C[i] = sum over z of workspace[z][i], z ascending (splitk_reduce.cuh): bitwise repeatable.
extern "C" __global__ void __launch_bounds__(REDUCE_THREADS)
splitk_fp16_reduce(int M, int N, int splits, const float* __restrict__ workspace, float* __restrict__ C)
{
    splitk::reduce<REDUCE_THREADS, REDUCE_UNROLL>(M, N, splits, workspace, C);
}
