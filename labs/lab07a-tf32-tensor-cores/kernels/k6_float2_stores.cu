// k6_float2_stores.cu -- lab 7a, k6: k5 + float2 stores of the accumulators
//
// C = alpha * A * B + beta * C, row-major FP32 in and out, TF32 tensor cores, FP32 accumulation.
// Entry points (one template):
//   tf32gemm_k6_vec     K % 4 == 0 and N % 4 == 0 (rows of A, B, C 16-byte aligned)
//   tf32gemm_k6_scalar  any M, N, K >= 1
// Launch: 1-D block of THREADS = (BM/WM)*(BN/WN)*32 = 256 threads, grid (ceil(N/BN), ceil(M/BM))
//         remapped in GROUP-row bands (k5), dynamic shared memory SMEM_BYTES = 96 KB by default.
// beta == 0 never reads C. Numerics: TF32_ROUND = 1 rounds every operand to the nearest TF32 at its
// fragment load (sm_90+: cvt.rn.tf32.f32, sm_80..89: cvt.rna; <= 2^-11 relative), TF32_ROUND = 0
// lets the tensor core truncate the FP32 bits (< 2^-10). See tf32_common.cuh and the lab's NOTES.
//
// What k6 adds over k5: the epilogue. The mma accumulator layout gives lane (g, t) the pairs
// C[g][2t, 2t+1] and C[g+8][2t, 2t+1] of every 16 x 8 fragment: two neighbours in one row. So each
// pair leaves as one 8-byte store (STG.E.64) instead of two STG.E (and, with beta != 0, is read with
// one LDG.E.64): half the store instructions, 128 -> 64 per lane. A quad of lanes (same g) writes
// 32 contiguous bytes, a full sector. In the vec entry the pair is 8-byte aligned (N % 4 == 0, 2t even)
// and wholly inside or outside C; the scalar entry keeps the guarded 4-byte stores. The worklog also
// tried staging through shared memory for float4 stores and found no gain over float2.
//
// SASS to look for: STG.E.64 (64 per lane per tile of C) and, for beta != 0, LDG.E.64; the main loop
// is k5's.

#ifndef BM
#define BM 256      // block tile rows: 4 warp tiles of 64 (the worklog's 256 x 32 x 128)
#endif
#ifndef BN
#define BN 128      // block tile columns: 2 warp tiles of 64; a multiple of 32 for the B swizzle
#endif
#ifndef BK
#define BK 32       // K depth of one tile: 4 mma k8 steps, an A row is 8 swizzled float4 groups
#endif
#ifndef WM
#define WM 64       // warp tile rows: 4 m16 fragments (one LDSM.x4 each per k8 step)
#endif
#ifndef WN
#define WN 64       // warp tile columns: 8 n8 fragments; 128 accumulators per lane
#endif
#ifndef STAGES
#define STAGES 2    // shared buffers: the next tile's cp.async runs while this one is computed
#endif
#ifndef GROUP
#define GROUP 8     // raster band: 8 block rows are walked column by column, sharing B tiles in L2
#endif
#ifndef TF32_ROUND
#define TF32_ROUND 1  // 1: round operands to the nearest TF32 (sm_90: one F2FP each); 0: truncate
#endif

#define THREADS ((BM / WM) * (BN / WN) * 32)
#define SMEM_BYTES (STAGES * (BM * BK + BK * BN) * sizeof(float))

#include "tf32_common.cuh"

namespace k6 {

constexpr int safe_div(int a, int b) { return b > 0 ? a / b : 0; }

constexpr int WARPS_N = safe_div(BN, WN);
constexpr int MI = WM / 16;                     // m16 fragments per warp tile
constexpr int NJ = WN / 8;                      // n8 fragments per warp tile
constexpr int A_STAGE = BM * BK;                // floats per A buffer
constexpr int B_STAGE = BK * BN;                // floats per B buffer
constexpr int A_GROUPS = BK / 4;                // float4 groups in an A row
constexpr int B_GROUPS = BN / 4;                // float4 groups in a B row
constexpr int A_SWZ_DIV = A_GROUPS >= 8 ? 1 : safe_div(8, A_GROUPS);   // rows sharing a 128-byte line
constexpr int A_SWZ_MASK = (A_GROUPS >= 8 ? 8 : A_GROUPS) - 1;         // groups permuted within it
constexpr int A_ROW_STEP = safe_div(THREADS, A_GROUPS);  // rows between one thread's A chunks
constexpr int B_ROW_STEP = safe_div(THREADS, B_GROUPS);  // k-rows between one thread's B chunks

static_assert(BM > 0 && BN > 0 && BK > 0 && WM > 0 && WN > 0 && STAGES > 0 && GROUP > 0,
              "k6: every tile parameter must be positive");
static_assert(BM % WM == 0 && BN % WN == 0, "k6: the block tile must split into whole warp tiles");
static_assert(WM % 16 == 0, "k6: WM must be a multiple of 16, the M of one mma");
static_assert(WN % 8 == 0, "k6: WN must be a multiple of 8, the N of one mma");
static_assert(THREADS >= 32 && THREADS <= 1024, "k6: (BM/WM)*(BN/WN) warps must be 1..32");
static_assert(BK % 8 == 0, "k6: BK must be a multiple of 8, the K of one mma");
static_assert((A_GROUPS & (A_GROUPS - 1)) == 0, "k6: BK must be 8, 16, 32, 64, ...: a power of two (the A swizzle XORs group indices)");
static_assert(BN % 32 == 0, "k6: BN must be a multiple of 32: the B swizzle permutes 8 groups of 4 columns");
static_assert(WN % 32 == 0 || BN == WN, "k6: WN must be a multiple of 32 (warp columns aligned to the B swizzle)");
static_assert(STAGES >= 2 && STAGES <= 8, "k6: STAGES must be 2..8 (one tile computed while the next loads)");
static_assert((BM * BK / 4) % THREADS == 0, "k6: the A tile's float4 groups must split evenly over THREADS");
static_assert((BK * BN / 4) % THREADS == 0, "k6: the B tile's float4 groups must split evenly over THREADS");
static_assert(THREADS % A_GROUPS == 0 && A_ROW_STEP % 8 == 0,
              "k6: a thread's A chunks must be a multiple of 8 rows apart (same swizzle: one hoisted offset)");
static_assert(THREADS % B_GROUPS == 0 && B_ROW_STEP % 4 == 0,
              "k6: a thread's B chunks must be a multiple of 4 k-rows apart (same swizzle: one hoisted offset)");
static_assert(MI * NJ * 4 <= 160, "k6: more than 160 accumulators per lane cannot stay in 255 registers");
static_assert(SMEM_BYTES <= 227 * 1024, "k6: shared memory above the 227 KB a block may have on sm_90 "
              "(sm_86/89/120: 99 KB; the launcher checks the device)");

// BEGIN SOLUTION k6-swizzle: a_off(m, k) and b_off(k, n), your k2 swizzle for this BK
__device__ __forceinline__ int a_off(int m, int k)
{
    return m * BK + ((((k >> 2) ^ ((m / A_SWZ_DIV) & A_SWZ_MASK))) << 2) + (k & 3);
}
__device__ __forceinline__ int b_off(int k, int n)
{
    return k * BN + (n ^ ((k & 3) << 3));
}
// END SOLUTION k6-swizzle

extern __shared__ __align__(128) float smem[];

template <bool VEC>
__device__ __forceinline__ void body(int M, int N, int K, float alpha, const float* __restrict__ A,
                                     const float* __restrict__ B, float beta, float* __restrict__ C)
{
    const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
    const int g = lane / 4, t = lane % 4;
    const int wm0 = (warp / WARPS_N) * WM, wn0 = (warp % WARPS_N) * WN;

    // Rasterization (k5): linear block id -> (block row, block column), GROUP block rows at a time.
    const int grid_n = gridDim.x, grid_m = gridDim.y;
    const int pid = blockIdx.y * grid_n + blockIdx.x;
    const int band = pid / (GROUP * grid_n);
    const int first_m = band * GROUP;
    const int rows = min(grid_m - first_m, GROUP);
    const int in_band = pid - band * GROUP * grid_n;
    const int bm = (first_m + in_band % rows) * BM;
    const int bn = (in_band / rows) * BN;

    const bool inside = bm + BM <= M && bn + BN <= N;
    const int ktiles = (K + BK - 1) / BK;

    const uint32_t as0 = smem_u32(smem);                          // A buffers, bytes
    const uint32_t bs0 = as0 + STAGES * A_STAGE * sizeof(float);  // B buffers, bytes

    // Hoisted copy addresses (k5): every A chunk of this thread has the same column and swizzle,
    // rows A_ROW_STEP apart; every B chunk the same column, k-rows B_ROW_STEP apart.
    const int a_m = tid / A_GROUPS, a_k = (tid % A_GROUPS) * 4;
    const int b_k = tid / B_GROUPS, b_n = (tid % B_GROUPS) * 4;
    const uint32_t a_dst = as0 + a_off(a_m, a_k) * sizeof(float);
    const uint32_t b_dst = bs0 + b_off(b_k, b_n) * sizeof(float);
    const float* a_src = A + (bm + a_m) * K + a_k;
    const float* b_src = B + b_k * N + bn + b_n;

    // BEGIN SOLUTION k6-hoisted-a: your k4 ldmatrix address, hoisted (k5): a_lane, this lane's row; a_x, its group
    // Hoisted fragment addresses (k5). A: lane l reads row wm0 + l % 16, group (kk/4 + l/16) ^ swz,
    // and (kk/4 + l/16) ^ swz == (kk/4) ^ a_x with a lane constant a_x.
    const int a_row = wm0 + lane % 16;
    const uint32_t a_lane = as0 + a_row * BK * sizeof(float);
    const int a_x = (lane / 16) ^ ((a_row / A_SWZ_DIV) & A_SWZ_MASK);
    // END SOLUTION k6-hoisted-a
    // B: column wn0 + 8 j + g lands at wn0 + 8 (j ^ t) + g, and j ^ t takes 4 values per lane
    // (j % 4 ^ t, plus 4 (j / 4)).
    const float* Bs = smem + STAGES * A_STAGE;
    int b_lane[4];                              // float offsets into a B buffer
#pragma unroll
    for (int r = 0; r < 4; ++r) b_lane[r] = t * BN + wn0 + 8 * (r ^ t) + g;

    float acc[MI][NJ][4] = {};

    const int a_rowstep = A_ROW_STEP * K;       // floats between a thread's A chunks in global memory
    const int b_rowstep = B_ROW_STEP * N;       // ... and B chunks
    auto issue = [&](int s, int kt) {
        const int k0 = kt * BK;
        if constexpr (VEC) {
            if (inside && k0 + BK <= K) {       // interior tile: no guards, pointer + constant stride
                const float* ap = a_src + k0;
                const float* bp = b_src + k0 * N;
#pragma unroll
                for (int i = 0; i < BM * BK / 4 / THREADS; ++i)
                    cp_async_16(a_dst + (s * A_STAGE + i * A_ROW_STEP * BK) * sizeof(float), ap + i * a_rowstep, true);
#pragma unroll
                for (int i = 0; i < BK * BN / 4 / THREADS; ++i)
                    cp_async_16(b_dst + (s * B_STAGE + i * B_ROW_STEP * BN) * sizeof(float), bp + i * b_rowstep, true);
            } else {
#pragma unroll
                for (int i = 0; i < BM * BK / 4 / THREADS; ++i) {
                    const bool ok = bm + a_m + i * A_ROW_STEP < M && k0 + a_k < K;
                    cp_async_16(a_dst + (s * A_STAGE + i * A_ROW_STEP * BK) * sizeof(float),
                                ok ? a_src + i * a_rowstep + k0 : A, ok);
                }
#pragma unroll
                for (int i = 0; i < BK * BN / 4 / THREADS; ++i) {
                    const bool ok = k0 + b_k + i * B_ROW_STEP < K && bn + b_n < N;
                    cp_async_16(b_dst + (s * B_STAGE + i * B_ROW_STEP * BN) * sizeof(float),
                                ok ? b_src + k0 * N + i * b_rowstep : B, ok);
                }
            }
        } else {
            // any shape: element by element, guarded
#pragma unroll 4
            for (int i = 0; i < BM * BK / THREADS; ++i) {
                const int e = tid + i * THREADS, m = e / BK, k = e % BK;
                const bool ok = bm + m < M && k0 + k < K;
                cp_async_4(as0 + (s * A_STAGE + a_off(m, k)) * sizeof(float), ok ? A + (bm + m) * K + k0 + k : A, ok);
            }
#pragma unroll 4
            for (int i = 0; i < BK * BN / THREADS; ++i) {
                const int e = tid + i * THREADS, k = e / BN, n = e % BN;
                const bool ok = k0 + k < K && bn + n < N;
                cp_async_4(bs0 + (s * B_STAGE + b_off(k, n)) * sizeof(float), ok ? B + (k0 + k) * N + bn + n : B, ok);
            }
        }
    };

    // BEGIN SOLUTION k6-prologue: tiles 0 .. STAGES-2 in flight, one commit group each
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < ktiles) issue(s, s);
        cp_async_commit();
    }
    // END SOLUTION k6-prologue

#pragma unroll 1
    for (int kt = 0; kt < ktiles; ++kt) {
        // BEGIN SOLUTION k6-wait-and-issue: wait for tile kt, then issue tile kt+STAGES-1 and commit
        cp_async_wait<STAGES - 2>();            // tile kt has landed (this thread's copies) ...
        __syncthreads();                        // ... everyone's, and tile kt-1's buffer is free again
        const int kn = kt + STAGES - 1;
        if (kn < ktiles) issue(kn % STAGES, kn);
        cp_async_commit();
        // END SOLUTION k6-wait-and-issue

        const int rs = kt % STAGES;
        const uint32_t a_st = a_lane + rs * A_STAGE * sizeof(float);
        const float* b_st = Bs + rs * B_STAGE;
#pragma unroll 1
        for (int kk = 0; kk < BK; kk += 8) {    // kept rolled; k7 unrolls it
            uint32_t a[MI][4], b[NJ][2];
            const uint32_t a_k8 = a_st + (((kk / 4) ^ a_x) << 4);
#pragma unroll
            for (int i = 0; i < MI; ++i) {
                ldmatrix_x4(a[i], a_k8 + i * 16 * BK * sizeof(float));
#pragma unroll
                for (int r = 0; r < 4; ++r) a[i][r] = tf32_operand(__uint_as_float(a[i][r]));
            }
#pragma unroll
            for (int j = 0; j < NJ; ++j) {
                const float* p = b_st + b_lane[j % 4] + kk * BN + 32 * (j / 4);
                b[j][0] = tf32_operand(p[0]);
                b[j][1] = tf32_operand(p[4 * BN]);
            }
#pragma unroll
            for (int i = 0; i < MI; ++i)
#pragma unroll
                for (int j = 0; j < NJ; ++j) mma_tf32_16x8x8(acc[i][j], a[i], b[j]);
        }
    }

    // Epilogue (k6): the two accumulators of a lane that sit side by side in C go out as one float2.
#pragma unroll
    for (int i = 0; i < MI; ++i)
#pragma unroll
        for (int j = 0; j < NJ; ++j)
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const int row = bm + wm0 + i * 16 + g + 8 * h;
                const int col = bn + wn0 + j * 8 + 2 * t;
                float* p = C + row * N + col;
                float2 v = make_float2(alpha * acc[i][j][2 * h], alpha * acc[i][j][2 * h + 1]);
                if constexpr (VEC) {
                    // BEGIN SOLUTION k6-float2-epilogue: C[row][col], C[row][col+1] as one float2 (and one float2 read if beta != 0)
                    // N % 4 == 0 and col even: col < N means col + 1 < N, and p is 8-byte aligned
                    if (inside || (row < M && col < N)) {
                        if (beta != 0.0f) {
                            const float2 c = *reinterpret_cast<const float2*>(p);
                            v.x += beta * c.x;
                            v.y += beta * c.y;
                        }
                        *reinterpret_cast<float2*>(p) = v;
                    }
                    // END SOLUTION k6-float2-epilogue
                } else {
                    if (row < M && col < N)     p[0] = beta == 0.0f ? v.x : v.x + beta * p[0];
                    if (row < M && col + 1 < N) p[1] = beta == 0.0f ? v.y : v.y + beta * p[1];
                }
            }
}

}  // namespace k6

extern "C" __global__ void __launch_bounds__(THREADS)
tf32gemm_k6_vec(int M, int N, int K, float alpha, const float* __restrict__ A,
                const float* __restrict__ B, float beta, float* __restrict__ C)
{
    k6::body<true>(M, N, K, alpha, A, B, beta, C);
}

extern "C" __global__ void __launch_bounds__(THREADS)
tf32gemm_k6_scalar(int M, int N, int K, float alpha, const float* __restrict__ A,
                   const float* __restrict__ B, float beta, float* __restrict__ C)
{
    k6::body<false>(M, N, K, alpha, A, B, beta, C);
}
