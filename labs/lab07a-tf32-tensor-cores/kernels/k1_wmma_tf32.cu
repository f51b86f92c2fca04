// k1_wmma_tf32.cu -- lab 7a, k1: lab 7's warp-tiled kernel (v7) on the TF32 tensor cores via WMMA
//
// C = alpha * A * B + beta * C, row-major FP32 in and out, any M, N, K >= 1.
// Entry points (one template, as v7):
//   tf32gemm_k1_vec     K % 4 == 0 and N % 4 == 0: float4 global loads wherever a group lies inside
//   tf32gemm_k1_scalar  any shape: scalar global loads
// Launch: 1-D block of THREADS = (BM/WM)*(BN/WN)*32 = 128 threads, grid (ceil(N/BN), ceil(M/BM)),
//         static shared memory only (SMEM_BYTES 0; 16.5 KB).
// beta == 0 never reads C. Numerics: every element is rounded to TF32 (wmma::__float_to_tf32, i.e.
// cvt.rna.tf32.f32: relative error <= 2^-11) once, when it is stored into shared memory.
//
// What k1 changes in v7: only the math and the stores. Loads (global -> registers -> shared, A
// transposed into As[k][m]), the 128 x 128 x 16 block tile, the 4 warps of 64 x 64 and the two
// barriers per tile are v7's. The warp's 64 x 64 x 16 outer-product step, 16 x 8 x 16 FFMA per lane,
// becomes 4 x 4 accumulator fragments of 16 x 16 and, per k8 step, 4 A and 4 B fragments loaded with
// wmma::load_matrix_sync and 16 wmma::mma_sync (m16n16k8, precision::tf32): each mma_sync is two
// HMMA.1688.F32.TF32. As[k][m] is A^T, so A's fragments are read col_major with ldm = BM + 4.
// The accumulators' lane layout is opaque in WMMA, so the epilogue goes through shared memory:
// each warp stores a fragment to a 16 x 20 staging area and its lanes write C row by row (guarded).
//
// SASS to look for: HMMA.1688.F32.TF32 (32 per BK = 16 tile per warp), no FFMA in the main loop,
// LDS for the fragment loads (WMMA has no ldmatrix path for tf32), the rounding once per element before
// the shared stores; STS + LDS + STG in the epilogue.

#include <mma.h>
using namespace nvcuda;

#ifndef BM
#define BM 128      // block tile rows: 2 warp tiles of WM = 64 (v7)
#endif
#ifndef BN
#define BN 128      // block tile columns: 2 warp tiles of WN = 64 (v7)
#endif
#ifndef BK
#define BK 16       // K-slice per phase: two WMMA k8 steps (v7's BK)
#endif
#ifndef WM
#define WM 64       // warp tile rows: 4 WMMA fragments of 16
#endif
#ifndef WN
#define WN 64       // warp tile columns: 4 WMMA fragments of 16
#endif

#define THREADS ((BM / WM) * (BN / WN) * 32)
#define SMEM_BYTES 0

namespace k1 {

constexpr int safe_div(int a, int b) { return b > 0 ? a / b : 0; }

constexpr int WARPS_N = safe_div(BN, WN);
constexpr int FM = WM / 16, FN = WN / 16;        // WMMA fragments per warp tile
constexpr int AS_LD = BM + 4;                    // As[k][m] row: v7's padding, 16-byte rows
constexpr int LDC_S = 20;                        // staging row of an accumulator fragment (floats)
constexpr int A_GROUPS = safe_div(BM * BK / 4, THREADS);
constexpr int B_GROUPS = safe_div(BK * BN / 4, THREADS);
constexpr int A_ROW_STEP = safe_div(THREADS, BK / 4);
constexpr int B_ROW_STEP = safe_div(THREADS, BN / 4);

static_assert(BM > 0 && BN > 0 && BK > 0 && WM > 0 && WN > 0, "k1: every tile parameter must be positive");
static_assert(BM % WM == 0 && BN % WN == 0, "k1: the block tile must split into whole warp tiles");
static_assert(WM % 16 == 0 && WN % 16 == 0, "k1: the warp tile must be made of 16 x 16 WMMA fragments");
static_assert(BK % 8 == 0, "k1: BK must be a multiple of 8, the K of one m16n16k8 TF32 mma_sync");
static_assert(THREADS >= 32 && THREADS <= 1024, "k1: (BM/WM)*(BN/WN) warps must be 1..32");
static_assert(BN % 4 == 0 && BM % 4 == 0, "k1: BM and BN must be multiples of 4 (16-byte shared rows)");
static_assert((BM * BK) % (4 * THREADS) == 0, "k1: each thread loads whole float4 groups of A");
static_assert((BK * BN) % (4 * THREADS) == 0, "k1: each thread loads whole float4 groups of B");
static_assert(THREADS % (BK / 4) == 0, "k1: THREADS must be a multiple of BK/4 (a thread's A groups share a column)");
static_assert(THREADS % (BN / 4) == 0, "k1: THREADS must be a multiple of BN/4 (a thread's B groups share a column)");
static_assert(FM * FN * 8 <= 160, "k1: more than 160 accumulators per lane cannot stay in registers");
static_assert((BK * AS_LD + BK * BN) * 4 <= 48 * 1024, "k1: static shared memory is limited to 48 KB");
static_assert((THREADS / 32) * 16 * LDC_S <= BK * AS_LD, "k1: the epilogue's per-warp staging must fit in As");

template <bool VEC>
__device__ __forceinline__ float4 load4(const float* __restrict__ p)
{
    if constexpr (VEC) return *reinterpret_cast<const float4*>(p);
    else return make_float4(p[0], p[1], p[2], p[3]);
}

// `valid` elements from p on exist (may be <= 0 or >= 4); the others read as 0.
template <bool VEC>
__device__ __forceinline__ float4 load4_guarded(const float* __restrict__ p, int valid)
{
    if (valid <= 0) return make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (valid >= 4) return load4<VEC>(p);
    return make_float4(p[0], valid > 1 ? p[1] : 0.0f, valid > 2 ? p[2] : 0.0f, 0.0f);
}

__device__ __forceinline__ float4 to_tf32(float4 v)
{
    return make_float4(wmma::__float_to_tf32(v.x), wmma::__float_to_tf32(v.y),
                       wmma::__float_to_tf32(v.z), wmma::__float_to_tf32(v.w));
}

using FragA = wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::col_major>;
using FragB = wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, wmma::row_major>;
using FragC = wmma::fragment<wmma::accumulator, 16, 16, 8, float>;

template <bool VEC>
__device__ __forceinline__ void body(int M, int N, int K, float alpha, const float* __restrict__ A,
                                     const float* __restrict__ B, float beta, float* __restrict__ C)
{
    __shared__ __align__(128) float As[BK][AS_LD];   // transposed: As[k][m] = A[cRow + m][k0 + k]
    __shared__ __align__(128) float Bs[BK][BN];

    const int cRow = blockIdx.y * BM, cCol = blockIdx.x * BN;
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int wm0 = (warp / WARPS_N) * WM, wn0 = (warp % WARPS_N) * WN;
    const int aRow = tid / (BK / 4), aCol = (tid % (BK / 4)) * 4;
    const int bRow = tid / (BN / 4), bCol = (tid % (BN / 4)) * 4;
    const float* Ablk = A + cRow * K;
    const float* Bblk = B + cCol;
    const bool blockInside = cRow + BM <= M && cCol + BN <= N;

    FragC acc[FM][FN];
#pragma unroll
    for (int i = 0; i < FM; ++i)
#pragma unroll
        for (int j = 0; j < FN; ++j) wmma::fill_fragment(acc[i][j], 0.0f);

    const int numTiles = (K + BK - 1) / BK;
#pragma unroll 1
    for (int t = 0; t < numTiles; ++t) {
        const int k0 = t * BK;
        float4 ra[A_GROUPS], rb[B_GROUPS];
        if (blockInside && k0 + BK <= K) {
#pragma unroll
            for (int g = 0; g < A_GROUPS; ++g) ra[g] = load4<VEC>(Ablk + (aRow + g * A_ROW_STEP) * K + k0 + aCol);
#pragma unroll
            for (int g = 0; g < B_GROUPS; ++g) rb[g] = load4<VEC>(Bblk + (k0 + bRow + g * B_ROW_STEP) * N + bCol);
        } else {
#pragma unroll
            for (int g = 0; g < A_GROUPS; ++g) {
                const int r = aRow + g * A_ROW_STEP;
                ra[g] = cRow + r < M ? load4_guarded<VEC>(Ablk + r * K + k0 + aCol, K - (k0 + aCol))
                                     : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            }
#pragma unroll
            for (int g = 0; g < B_GROUPS; ++g) {
                const int r = k0 + bRow + g * B_ROW_STEP;
                rb[g] = r < K ? load4_guarded<VEC>(Bblk + r * N + bCol, N - (cCol + bCol))
                             : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            }
        }
#pragma unroll
        for (int g = 0; g < A_GROUPS; ++g) {
            const int r = aRow + g * A_ROW_STEP;
            const float4 v = to_tf32(ra[g]);
            As[aCol + 0][r] = v.x; As[aCol + 1][r] = v.y; As[aCol + 2][r] = v.z; As[aCol + 3][r] = v.w;
        }
#pragma unroll
        for (int g = 0; g < B_GROUPS; ++g)
            *reinterpret_cast<float4*>(&Bs[bRow + g * B_ROW_STEP][bCol]) = to_tf32(rb[g]);
        __syncthreads();

        // the FFMA loop of v7, replaced: per k8 step FM A and FN B fragments, FM x FN mma_sync
#pragma unroll
        for (int kk = 0; kk < BK; kk += 8) {
            FragA a[FM];
            FragB b[FN];
#pragma unroll
            for (int i = 0; i < FM; ++i) wmma::load_matrix_sync(a[i], &As[kk][wm0 + 16 * i], AS_LD);
#pragma unroll
            for (int j = 0; j < FN; ++j) wmma::load_matrix_sync(b[j], &Bs[kk][wn0 + 16 * j], BN);
#pragma unroll
            for (int i = 0; i < FM; ++i)
#pragma unroll
                for (int j = 0; j < FN; ++j) wmma::mma_sync(acc[i][j], a[i], b[j], acc[i][j]);
        }
        __syncthreads();
    }

    // Epilogue through a per-warp 16 x 20 staging area in As (every warp is past the last barrier).
    float* stage = &As[0][0] + warp * 16 * LDC_S;
#pragma unroll
    for (int i = 0; i < FM; ++i)
#pragma unroll
        for (int j = 0; j < FN; ++j) {
            const int r0 = cRow + wm0 + 16 * i, c0 = cCol + wn0 + 16 * j;
            if (r0 >= M || c0 >= N) continue;    // fragment wholly outside C (warp-uniform)
            wmma::store_matrix_sync(stage, acc[i][j], LDC_S, wmma::mem_row_major);
            __syncwarp();
#pragma unroll
            for (int q = 0; q < 8; ++q) {        // half a warp per row: 64-byte segments
                const int r = 2 * q + lane / 16, c = lane % 16;
                if (r0 + r < M && c0 + c < N) {
                    float* p = C + (r0 + r) * N + c0 + c;
                    const float v = alpha * stage[r * LDC_S + c];
                    *p = beta == 0.0f ? v : v + beta * *p;
                }
            }
            __syncwarp();                        // the next fragment overwrites the staging area
        }
}

}  // namespace k1

extern "C" __global__ void __launch_bounds__(THREADS)
tf32gemm_k1_vec(int M, int N, int K, float alpha, const float* __restrict__ A,
                const float* __restrict__ B, float beta, float* __restrict__ C)
{
    k1::body<true>(M, N, K, alpha, A, B, beta, C);
}

extern "C" __global__ void __launch_bounds__(THREADS)
tf32gemm_k1_scalar(int M, int N, int K, float alpha, const float* __restrict__ A,
                   const float* __restrict__ B, float beta, float* __restrict__ C)
{
    k1::body<false>(M, N, K, alpha, A, B, beta, C);
}
