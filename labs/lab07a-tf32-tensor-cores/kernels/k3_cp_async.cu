// k3_cp_async.cu -- lab 7a, k3: k2 + a cp.async multi-stage pipeline
//
// C = alpha * A * B + beta * C, row-major FP32 in and out, TF32 tensor cores, FP32 accumulation.
// Entry points (one template):
//   tf32gemm_k3_vec     K % 4 == 0 and N % 4 == 0: 16-byte cp.async (LDGSTS.E.BYPASS.128)
//   tf32gemm_k3_scalar  any M, N, K >= 1: 4-byte cp.async per element (LDGSTS.E)
// Launch: 1-D block of THREADS = (BM/WM)*(BN/WN)*32 = 128 threads, grid (ceil(N/BN), ceil(M/BM)),
//         dynamic shared memory SMEM_BYTES = STAGES x 16 KB (48 KB by default).
// beta == 0 never reads C. Numerics: TF32_ROUND = 1 rounds every operand to the nearest TF32 at its
// fragment load (sm_90+: cvt.rn.tf32.f32, sm_80..89: cvt.rna; <= 2^-11 relative), TF32_ROUND = 0
// lets the tensor core truncate the FP32 bits (< 2^-10). See tf32_common.cuh and the lab's NOTES.
//
// What k3 adds over k2: the tiles travel by cp.async, global -> shared without passing registers,
// into STAGES buffers. While the warps compute on tile kt, the copies of tiles kt+1 .. kt+STAGES-1
// are in flight. Copies are grouped per tile (cp.async.commit_group); cp.async.wait_group STAGES-2
// waits until tile kt has landed. The loop needs one barrier per tile:
//
//   prologue: issue tiles 0 .. STAGES-2, one commit each
//   for kt:  wait_group(STAGES-2); __syncthreads()       tile kt is in (everyone's copies), and every
//                                                        warp has finished tile kt-1
//            issue tile kt+STAGES-1 into buffer (kt+STAGES-1) % STAGES   (tile kt-1's, free now)
//            commit (even when empty: the group count stays one per iteration)
//            compute on buffer kt % STAGES
//
// Edges: a 16-byte copy lies wholly inside or wholly outside the matrix (K % 4 == 0, N % 4 == 0);
// outside ones use the zero-fill form (src-size 0: reads nothing, writes zeros). Everything else,
// the 1-D warp strips, the swizzles and the B reloads, is k2's: k3 changes only how tiles arrive.
//
// SASS to look for: LDGSTS.E.BYPASS.128 (vec) or LDGSTS.E (scalar) instead of LDG + STS,
// LDGDEPBAR per commit, DEPBAR.LE SB0 before the barrier, one BAR.SYNC per tile; the math is k2's.

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
#ifndef STAGES
#define STAGES 3    // shared buffers: 2 tiles in flight while one is computed (16 KB per stage)
#endif
#ifndef TF32_ROUND
#define TF32_ROUND 1  // 1: round operands to the nearest TF32 (sm_90: one F2FP each); 0: truncate
#endif

#define THREADS ((BM / WM) * (BN / WN) * 32)
#define SMEM_BYTES (STAGES * (BM * BK + BK * BN) * sizeof(float))

#include "tf32_common.cuh"

namespace k3 {

constexpr int safe_div(int a, int b) { return b > 0 ? a / b : 0; }

constexpr int WARPS_N = safe_div(BN, WN);
constexpr int MI = WM / 16;                     // m16 sub-tiles per warp strip
constexpr int NJ = WN / 8;                      // n8 sub-tiles per warp strip
constexpr int A_STAGE = BM * BK;                // floats per A buffer
constexpr int B_STAGE = BK * BN;                // floats per B buffer
constexpr int A_GROUPS = BK / 4;                // float4 groups in an A row
constexpr int A_SWZ_DIV = A_GROUPS >= 8 ? 1 : safe_div(8, A_GROUPS);   // rows sharing a 128-byte line
constexpr int A_SWZ_MASK = (A_GROUPS >= 8 ? 8 : A_GROUPS) - 1;         // groups permuted within it

static_assert(BM > 0 && BN > 0 && BK > 0 && WM > 0 && WN > 0, "k3: every tile parameter must be positive");
static_assert(BM % WM == 0 && BN % WN == 0, "k3: the block tile must split into whole warp strips");
static_assert(WM % 16 == 0, "k3: WM must be a multiple of 16, the M of one mma");
static_assert(WN % 8 == 0, "k3: WN must be a multiple of 8, the N of one mma");
static_assert(THREADS >= 32 && THREADS <= 1024, "k3: (BM/WM)*(BN/WN) warps must be 1..32");
static_assert(BK % 8 == 0, "k3: BK must be a multiple of 8, the K of one mma");
static_assert((A_GROUPS & (A_GROUPS - 1)) == 0, "k3: BK must be 8, 16, 32, 64, ...: a power of two (the A swizzle XORs group indices)");
static_assert(BN % 32 == 0, "k3: BN must be a multiple of 32: the B swizzle permutes 8 groups of 4 columns");
static_assert((BM * BK / 4) % THREADS == 0, "k3: the A tile's float4 groups must split evenly over THREADS");
static_assert((BK * BN / 4) % THREADS == 0, "k3: the B tile's float4 groups must split evenly over THREADS");
static_assert(MI * NJ * 4 <= 160, "k3: more than 160 accumulators per lane cannot stay in 255 registers");
static_assert(STAGES >= 2 && STAGES <= 8, "k3: STAGES must be 2..8 (one tile computed while the next loads)");
static_assert(SMEM_BYTES <= 227 * 1024, "k3: shared memory above the 227 KB a block may have on sm_90 "
              "(sm_86/89/120: 99 KB; the launcher checks the device)");

// BEGIN SOLUTION k3-swizzle: a_off(m, k) and b_off(k, n), your k2 swizzle for this BK
__device__ __forceinline__ int a_off(int m, int k)
{
    return m * BK + ((((k >> 2) ^ ((m / A_SWZ_DIV) & A_SWZ_MASK))) << 2) + (k & 3);
}
__device__ __forceinline__ int b_off(int k, int n)
{
    return k * BN + (n ^ ((k & 3) << 3));
}
// END SOLUTION k3-swizzle

extern __shared__ __align__(128) float smem[];

// Issue the copies of the tile at k0 into buffers As, Bs. FULL: wholly inside A and B (no guards).
template <bool VEC, bool FULL>
__device__ __forceinline__ void load_tile(float* As, float* Bs, const float* __restrict__ A,
                                          const float* __restrict__ B, int M, int N, int K,
                                          int bm, int bn, int k0, int tid)
{
    if constexpr (VEC) {
#pragma unroll
        for (int i = 0; i < BM * BK / 4 / THREADS; ++i) {
            const int c = tid + i * THREADS, m = c / A_GROUPS, k = (c % A_GROUPS) * 4;
            const bool ok = FULL || (bm + m < M && k0 + k < K);
            cp_async_16(smem_u32(As + a_off(m, k)), ok ? A + (bm + m) * K + k0 + k : A, ok);
        }
#pragma unroll
        for (int i = 0; i < BK * BN / 4 / THREADS; ++i) {
            const int c = tid + i * THREADS, k = c / (BN / 4), n = (c % (BN / 4)) * 4;
            const bool ok = FULL || (k0 + k < K && bn + n < N);
            cp_async_16(smem_u32(Bs + b_off(k, n)), ok ? B + (k0 + k) * N + bn + n : B, ok);
        }
    } else {
#pragma unroll 4
        for (int i = 0; i < BM * BK / THREADS; ++i) {
            const int e = tid + i * THREADS, m = e / BK, k = e % BK;
            const bool ok = FULL || (bm + m < M && k0 + k < K);
            cp_async_4(smem_u32(As + a_off(m, k)), ok ? A + (bm + m) * K + k0 + k : A, ok);
        }
#pragma unroll 4
        for (int i = 0; i < BK * BN / THREADS; ++i) {
            const int e = tid + i * THREADS, k = e / BN, n = e % BN;
            const bool ok = FULL || (k0 + k < K && bn + n < N);
            cp_async_4(smem_u32(Bs + b_off(k, n)), ok ? B + (k0 + k) * N + bn + n : B, ok);
        }
    }
}

template <bool VEC>
__device__ __forceinline__ void body(int M, int N, int K, float alpha, const float* __restrict__ A,
                                     const float* __restrict__ B, float beta, float* __restrict__ C)
{
    float* As = smem;                           // [STAGES][BM][BK], swizzled
    float* Bs = smem + STAGES * A_STAGE;        // [STAGES][BK][BN], swizzled

    const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
    const int g = lane / 4, t = lane % 4;
    const int wm0 = (warp / WARPS_N) * WM, wn0 = (warp % WARPS_N) * WN;
    const int bm = blockIdx.y * BM, bn = blockIdx.x * BN;
    const bool inside = bm + BM <= M && bn + BN <= N;
    const int ktiles = (K + BK - 1) / BK;

    float acc[MI][NJ][4] = {};

    auto issue = [&](int s, int kt) {
        const int k0 = kt * BK;
        float* as = As + s * A_STAGE;
        float* bs = Bs + s * B_STAGE;
        if (inside && k0 + BK <= K) load_tile<VEC, true>(as, bs, A, B, M, N, K, bm, bn, k0, tid);
        else                        load_tile<VEC, false>(as, bs, A, B, M, N, K, bm, bn, k0, tid);
    };

    // BEGIN SOLUTION k3-prologue: tiles 0 .. STAGES-2 in flight, one commit group each
#pragma unroll 1
    for (int s = 0; s < STAGES - 1; ++s) {      // prologue: tiles 0 .. STAGES-2 in flight
        if (s < ktiles) issue(s, s);
        cp_async_commit();
    }
    // END SOLUTION k3-prologue

#pragma unroll 1
    for (int kt = 0; kt < ktiles; ++kt) {
        // BEGIN SOLUTION k3-wait-and-issue: wait for tile kt, then issue tile kt+STAGES-1 and commit
        cp_async_wait<STAGES - 2>();            // committed: kt + STAGES - 1 groups; tile kt is group kt
        __syncthreads();                        // everyone's copies landed; tile kt-1 is free
        const int kn = kt + STAGES - 1;
        if (kn < ktiles) issue(kn % STAGES, kn);
        cp_async_commit();
        // END SOLUTION k3-wait-and-issue

        const float* As_s = As + (kt % STAGES) * A_STAGE;
        const float* Bs_s = Bs + (kt % STAGES) * B_STAGE;
#pragma unroll 1
        for (int kk = 0; kk < BK; kk += 8) {
#pragma unroll
            for (int i = 0; i < MI; ++i) {
                const int m = wm0 + i * 16 + g;
                uint32_t a[4];
                a[0] = tf32_operand(As_s[a_off(m, kk + t)]);
                a[1] = tf32_operand(As_s[a_off(m + 8, kk + t)]);
                a[2] = tf32_operand(As_s[a_off(m, kk + t + 4)]);
                a[3] = tf32_operand(As_s[a_off(m + 8, kk + t + 4)]);
#pragma unroll
                for (int j = 0; j < NJ; ++j) {  // the whole B strip again for every A sub-tile
                    const int n = wn0 + j * 8 + g;
                    uint32_t b[2];
                    b[0] = tf32_operand(Bs_s[b_off(kk + t, n)]);
                    b[1] = tf32_operand(Bs_s[b_off(kk + t + 4, n)]);
                    mma_tf32_16x8x8(acc[i][j], a, b);
                }
            }
        }
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

}  // namespace k3

extern "C" __global__ void __launch_bounds__(THREADS)
tf32gemm_k3_vec(int M, int N, int K, float alpha, const float* __restrict__ A,
                const float* __restrict__ B, float beta, float* __restrict__ C)
{
    k3::body<true>(M, N, K, alpha, A, B, beta, C);
}

extern "C" __global__ void __launch_bounds__(THREADS)
tf32gemm_k3_scalar(int M, int N, int K, float alpha, const float* __restrict__ A,
                   const float* __restrict__ B, float beta, float* __restrict__ C)
{
    k3::body<false>(M, N, K, alpha, A, B, beta, C);
}
