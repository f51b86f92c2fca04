// k2_mma_swizzle.cu -- lab 7a, k2: mma.sync in inline PTX, XOR-swizzled tiles, 1-D warp strips
//
// C = alpha * A * B + beta * C, row-major FP32 in and out, TF32 tensor cores, FP32 accumulation.
// Entry points (one template):
//   tf32gemm_k2_vec     K % 4 == 0 and N % 4 == 0: float4 global loads, STS.128
//   tf32gemm_k2_scalar  any M, N, K >= 1: scalar guarded global loads
// Launch: 1-D block of THREADS = (BM/WM)*(BN/WN)*32 = 128 threads, grid (ceil(N/BN), ceil(M/BM)),
//         dynamic shared memory SMEM_BYTES = 16 KB.
// beta == 0 never reads C. Numerics: TF32_ROUND = 1 rounds every operand to the nearest TF32 at its
// fragment load (sm_90+: cvt.rn.tf32.f32, sm_80..89: cvt.rna; <= 2^-11 relative), TF32_ROUND = 0
// lets the tensor core truncate the FP32 bits (< 2^-10). See tf32_common.cuh and the lab's NOTES.
//
// What k2 changes in k1 (the worklog's "generalised kernel"; the cautionary rung):
// 1. The tensor core is driven directly: mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 (one
//    HMMA.1688.F32.TF32) with the documented register layout (g = lane / 4, t = lane % 4):
//    a0 = A[g][t], a1 = A[g+8][t], a2 = A[g][t+4], a3 = A[g+8][t+4]; b0 = B[t][g], b1 = B[t+4][g];
//    c0, c1 = C[g][2t, 2t+1], c2, c3 = C[g+8][2t, 2t+1]. The accumulators are plain registers, so the
//    epilogue writes C straight from them (no staging), and alpha/beta cost nothing extra.
// 2. XOR swizzles instead of padding. As[BM][BK] is row-major (no transpose) and float4 group q of
//    row m is stored at group q ^ ((m / 2) % 4) (BK = 16: two rows share a 128-byte line), so the A
//    fragment loads (rows g, columns t) hit 32 different banks; Bs[BK][BN] stores column n of row k at
//    n ^ ((k % 4) * 8), so the B fragment loads (rows t, columns g) do too, and STS.128 stays legal.
// 3. The worklog's 1-D warp layout: a 128 x 128 x 16 block tile, 4 warps, each a 32 x 128 strip of C.
//    Per k8 step a warp walks its 2 A sub-tiles (16 x 8) and, for each, all 16 B sub-tiles (8 x 8) of
//    the strip: the source loads (and rounds) every B fragment twice, 8 + 64 LDS for 32 mma. That is
//    the flaw the worklog kept "as a caution": little reuse per shared load. k4 fixes it with square
//    warp tiles. (nvcc may merge the two loads of a B fragment, same address and no store between: the
//    strip then still needs 40 shared loads per 32 mma where k4 needs 4 LDSM + 16 LDS.)
// Loads go global -> registers -> shared as in k1 (one buffer, two barriers per tile); k3 adds cp.async.
//
// SASS to look for: HMMA.1688.F32.TF32 (32 per k8 step per warp), LDS per k8 step (72 as written, 40
// if nvcc merged the B reloads; conflict-free: ncu l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld
// near 0), the rounding (F2FP.TF32 on sm_90) after each LDS, LDG.E.128 + STS.128 for the tiles,
// STG.E in the epilogue.

#ifndef BM
#define BM 128      // block tile rows: 4 warp strips of 32
#endif
#ifndef BN
#define BN 128      // block tile columns: every warp spans all of them (WN = BN)
#endif
#ifndef BK
#define BK 16       // K depth of one tile: 2 mma k8 steps; an A row is 64 bytes = 4 float4 groups
#endif
#ifndef WM
#define WM 32       // warp strip rows: 2 m16 sub-tiles
#endif
#ifndef WN
#define WN 128      // warp strip columns: 16 n8 sub-tiles, each reloaded for every m16 sub-tile
#endif
#ifndef TF32_ROUND
#define TF32_ROUND 1  // 1: round operands to the nearest TF32 (sm_90: one F2FP each); 0: truncate
#endif

#define THREADS ((BM / WM) * (BN / WN) * 32)
#define SMEM_BYTES ((BM * BK + BK * BN) * sizeof(float))

#include "tf32_common.cuh"

namespace k2 {

constexpr int safe_div(int a, int b) { return b > 0 ? a / b : 0; }

constexpr int WARPS_N = safe_div(BN, WN);
constexpr int MI = WM / 16;                     // m16 sub-tiles per warp strip
constexpr int NJ = WN / 8;                      // n8 sub-tiles per warp strip
constexpr int A_GROUPS = BK / 4;                // float4 groups in an A row
constexpr int A_SWZ_DIV = A_GROUPS >= 8 ? 1 : safe_div(8, A_GROUPS);   // rows sharing a 128-byte line
constexpr int A_SWZ_MASK = (A_GROUPS >= 8 ? 8 : A_GROUPS) - 1;         // groups permuted within it

static_assert(BM > 0 && BN > 0 && BK > 0 && WM > 0 && WN > 0, "k2: every tile parameter must be positive");
static_assert(BM % WM == 0 && BN % WN == 0, "k2: the block tile must split into whole warp strips");
static_assert(WM % 16 == 0, "k2: WM must be a multiple of 16, the M of one mma");
static_assert(WN % 8 == 0, "k2: WN must be a multiple of 8, the N of one mma");
static_assert(THREADS >= 32 && THREADS <= 1024, "k2: (BM/WM)*(BN/WN) warps must be 1..32");
static_assert(BK % 8 == 0, "k2: BK must be a multiple of 8, the K of one mma");
static_assert((A_GROUPS & (A_GROUPS - 1)) == 0, "k2: BK must be 8, 16, 32, 64, ...: a power of two (the A swizzle XORs group indices)");
static_assert(BN % 32 == 0, "k2: BN must be a multiple of 32: the B swizzle permutes 8 groups of 4 columns");
static_assert((BM * BK / 4) % THREADS == 0, "k2: the A tile's float4 groups must split evenly over THREADS");
static_assert((BK * BN / 4) % THREADS == 0, "k2: the B tile's float4 groups must split evenly over THREADS");
static_assert(MI * NJ * 4 <= 160, "k2: more than 160 accumulators per lane cannot stay in 255 registers");
static_assert(SMEM_BYTES <= 48 * 1024, "k2: one buffer of A and B should stay within the default 48 KB");

// BEGIN SOLUTION k2-swizzle: a_off(m, k) and b_off(k, n), the float offsets of A[m][k] and B[k][n] in the XOR-swizzled tiles
__device__ __forceinline__ int a_off(int m, int k)
{
    return m * BK + ((((k >> 2) ^ ((m / A_SWZ_DIV) & A_SWZ_MASK))) << 2) + (k & 3);
}
__device__ __forceinline__ int b_off(int k, int n)
{
    return k * BN + (n ^ ((k & 3) << 3));
}
// END SOLUTION k2-swizzle

extern __shared__ __align__(128) float smem[];

// Global -> registers -> shared for the tile at k0. FULL: wholly inside A and B (no guards).
template <bool VEC, bool FULL>
__device__ __forceinline__ void load_tile(float* As, float* Bs, const float* __restrict__ A,
                                          const float* __restrict__ B, int M, int N, int K,
                                          int bm, int bn, int k0, int tid)
{
    if constexpr (VEC) {
        constexpr int AI = BM * BK / 4 / THREADS, BI = BK * BN / 4 / THREADS;
        float4 ra[AI], rb[BI];
#pragma unroll
        for (int i = 0; i < AI; ++i) {           // all loads first: they are in flight together
            const int c = tid + i * THREADS, m = c / A_GROUPS, k = (c % A_GROUPS) * 4;
            ra[i] = (FULL || (bm + m < M && k0 + k < K))
                        ? *reinterpret_cast<const float4*>(A + (bm + m) * K + k0 + k)
                        : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        }
#pragma unroll
        for (int i = 0; i < BI; ++i) {
            const int c = tid + i * THREADS, k = c / (BN / 4), n = (c % (BN / 4)) * 4;
            rb[i] = (FULL || (k0 + k < K && bn + n < N))
                        ? *reinterpret_cast<const float4*>(B + (k0 + k) * N + bn + n)
                        : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        }
#pragma unroll
        for (int i = 0; i < AI; ++i) {
            const int c = tid + i * THREADS, m = c / A_GROUPS, k = (c % A_GROUPS) * 4;
            *reinterpret_cast<float4*>(As + a_off(m, k)) = ra[i];
        }
#pragma unroll
        for (int i = 0; i < BI; ++i) {
            const int c = tid + i * THREADS, k = c / (BN / 4), n = (c % (BN / 4)) * 4;
            *reinterpret_cast<float4*>(Bs + b_off(k, n)) = rb[i];
        }
    } else {
        constexpr int AI = BM * BK / THREADS, BI = BK * BN / THREADS;
#pragma unroll 4
        for (int i = 0; i < AI; ++i) {
            const int e = tid + i * THREADS, m = e / BK, k = e % BK;
            As[a_off(m, k)] = (FULL || (bm + m < M && k0 + k < K)) ? A[(bm + m) * K + k0 + k] : 0.0f;
        }
#pragma unroll 4
        for (int i = 0; i < BI; ++i) {
            const int e = tid + i * THREADS, k = e / BN, n = e % BN;
            Bs[b_off(k, n)] = (FULL || (k0 + k < K && bn + n < N)) ? B[(k0 + k) * N + bn + n] : 0.0f;
        }
    }
}

template <bool VEC>
__device__ __forceinline__ void body(int M, int N, int K, float alpha, const float* __restrict__ A,
                                     const float* __restrict__ B, float beta, float* __restrict__ C)
{
    float* As = smem;                           // [BM][BK], swizzled
    float* Bs = smem + BM * BK;                 // [BK][BN], swizzled

    const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
    const int g = lane / 4, t = lane % 4;
    const int wm0 = (warp / WARPS_N) * WM, wn0 = (warp % WARPS_N) * WN;
    const int bm = blockIdx.y * BM, bn = blockIdx.x * BN;
    const bool inside = bm + BM <= M && bn + BN <= N;
    const int ktiles = (K + BK - 1) / BK;

    float acc[MI][NJ][4] = {};

#pragma unroll 1
    for (int kt = 0; kt < ktiles; ++kt) {
        const int k0 = kt * BK;
        if (inside && k0 + BK <= K) load_tile<VEC, true>(As, Bs, A, B, M, N, K, bm, bn, k0, tid);
        else                        load_tile<VEC, false>(As, Bs, A, B, M, N, K, bm, bn, k0, tid);
        __syncthreads();                        // the tile is complete

#pragma unroll 1
        for (int kk = 0; kk < BK; kk += 8) {
#pragma unroll
            for (int i = 0; i < MI; ++i) {
                const int m = wm0 + i * 16 + g;
                uint32_t a[4];
                a[0] = tf32_operand(As[a_off(m, kk + t)]);
                a[1] = tf32_operand(As[a_off(m + 8, kk + t)]);
                a[2] = tf32_operand(As[a_off(m, kk + t + 4)]);
                a[3] = tf32_operand(As[a_off(m + 8, kk + t + 4)]);
#pragma unroll
                for (int j = 0; j < NJ; ++j) {  // the whole B strip again for every A sub-tile
                    const int n = wn0 + j * 8 + g;
                    uint32_t b[2];
                    b[0] = tf32_operand(Bs[b_off(kk + t, n)]);
                    b[1] = tf32_operand(Bs[b_off(kk + t + 4, n)]);
                    mma_tf32_16x8x8(acc[i][j], a, b);
                }
            }
        }
        __syncthreads();                        // everyone is done before the tile is overwritten
    }

    // Epilogue: acc[i][j][2h + c] is C[row0 + 8h][col0 + c]; scalar, predicated stores.
#pragma unroll
    for (int i = 0; i < MI; ++i)
#pragma unroll
        for (int j = 0; j < NJ; ++j)
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const int row = bm + wm0 + i * 16 + g + 8 * h;
                const int col = bn + wn0 + j * 8 + 2 * t;
#pragma unroll
                for (int c = 0; c < 2; ++c) {
                    if (inside || (row < M && col + c < N)) {
                        float* p = C + row * N + col + c;
                        const float v = alpha * acc[i][j][2 * h + c];
                        *p = beta == 0.0f ? v : v + beta * *p;
                    }
                }
            }
}

}  // namespace k2

extern "C" __global__ void __launch_bounds__(THREADS)
tf32gemm_k2_vec(int M, int N, int K, float alpha, const float* __restrict__ A,
                const float* __restrict__ B, float beta, float* __restrict__ C)
{
    k2::body<true>(M, N, K, alpha, A, B, beta, C);
}

extern "C" __global__ void __launch_bounds__(THREADS)
tf32gemm_k2_scalar(int M, int N, int K, float alpha, const float* __restrict__ A,
                   const float* __restrict__ B, float beta, float* __restrict__ C)
{
    k2::body<false>(M, N, K, alpha, A, B, beta, C);
}
