// k4_ldmatrix_2d_warps.cu -- lab 7a, k4: square warp tiles, and A fragments by ldmatrix
//
// C = alpha * A * B + beta * C, row-major FP32 in and out, TF32 tensor cores, FP32 accumulation.
// Entry points (one template):
//   tf32gemm_k4_vec     K % 4 == 0 and N % 4 == 0 (rows of A and B 16-byte aligned): 16-byte cp.async
//   tf32gemm_k4_scalar  any M, N, K >= 1: 4-byte cp.async per element
// Launch: 1-D block of THREADS = (BM/WM)*(BN/WN)*32 = 256 threads, grid (ceil(N/BN), ceil(M/BM)),
//         dynamic shared memory SMEM_BYTES = 96 KB by default (the launcher raises the 48 KB limit).
// beta == 0 never reads C. Numerics: TF32_ROUND = 1 rounds every operand to the nearest TF32 at its
// fragment load (sm_90+: cvt.rn.tf32.f32, sm_80..89: cvt.rna; <= 2^-11 relative), TF32_ROUND = 0
// lets the tensor core truncate the FP32 bits (< 2^-10). See tf32_common.cuh and the lab's NOTES.
//
// What k4 adds over k3 (two ideas that the worklog measured together):
// 1. 2-D warp tiling. k3's warps each own a 32 x 128 strip and re-read every B fragment once per A
//    sub-tile. Here a warp owns a WM x WN = 64 x 64 square: per k8 step it loads WM/16 = 4 A fragments
//    and WN/8 = 8 B fragments once each and issues 4 x 8 = 32 mma (k3: 2 A + 32 B loads for 32 mma).
//    8 warps in a 4 x 2 grid make a 256 x 128 block tile (the worklog's 256 x 32 x 128).
// 2. ldmatrix for A. A TF32 value is two 16-bit halves, so ldmatrix.x4 .b16 on the FP32 tile moves
//    four 8 x 4 FP32 blocks; with lane l addressing row l % 16, float4 group (l / 16) of the k8 step,
//    register j of lane (g = l/4, t = l%4) holds exactly the mma A fragment: a0 = A[g][t],
//    a1 = A[g+8][t], a2 = A[g][t+4], a3 = A[g+8][t+4]. One LDSM replaces four LDS. B cannot use it:
//    its fragment wants B[t][g] (k = t) and ldmatrix gives lane (g, t) the element [g][t] of the rows it
//    was pointed at, i.e. k = g; the .trans form transposes 16-bit halves, not 32-bit values. So B stays
//    on scalar LDS (b0 = Bs[t][g], b1 = Bs[t+4][g]).
//
// Shared tiles as k3: As[BM][BK] with its float4 groups XOR-swizzled by row, Bs[BK][BN] with column
// n stored at n ^ ((k % 4) * 8): the ldmatrix phases (8 rows x 16 bytes), the B fragment loads
// (4 k-rows x 8 columns) and the cp.async writes are all conflict-free. STAGES = 2 as the worklog.
//
// SASS to look for: LDSM.16.M88.4 (4 per k8 step per warp), LDS (16 per k8 step), HMMA.1688.F32.TF32
// (32 per k8 step), LDGSTS.E.BYPASS.128 (vec) / LDGSTS.E (scalar), one BAR.SYNC per BK tile, scalar STG.E
// in the epilogue. ncu: smsp__inst_executed_op_ldsm, l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.

#ifndef BM
#define BM 256      // block tile rows: 4 warp tiles of 64; each B value in shared memory feeds 4 warps
#endif
#ifndef BN
#define BN 128      // block tile columns: 2 warp tiles of 64; a multiple of 32 for the B swizzle
#endif
#ifndef BK
#define BK 32       // K depth of one tile: 4 mma k8 steps; an A row is 128 bytes = 8 swizzled groups
#endif
#ifndef WM
#define WM 64       // warp tile rows: 4 m16 fragments, each reused by the 8 n8 fragments
#endif
#ifndef WN
#define WN 64       // warp tile columns: 8 n8 fragments; 64 x 64 = 128 accumulators per lane
#endif
#ifndef STAGES
#define STAGES 2    // shared buffers: the next tile's cp.async runs while this one is computed
#endif
#ifndef TF32_ROUND
#define TF32_ROUND 1  // 1: round operands to the nearest TF32 (sm_90: one F2FP each); 0: truncate
#endif

#define THREADS ((BM / WM) * (BN / WN) * 32)
#define SMEM_BYTES (STAGES * (BM * BK + BK * BN) * sizeof(float))

#include "tf32_common.cuh"

namespace k4 {

constexpr int safe_div(int a, int b) { return b > 0 ? a / b : 0; }

constexpr int WARPS_N = safe_div(BN, WN);
constexpr int MI = WM / 16;                     // m16 fragments per warp tile
constexpr int NJ = WN / 8;                      // n8 fragments per warp tile
constexpr int A_STAGE = BM * BK;                // floats per A buffer
constexpr int B_STAGE = BK * BN;                // floats per B buffer
constexpr int A_GROUPS = BK / 4;                // float4 groups in an A row
constexpr int A_SWZ_DIV = A_GROUPS >= 8 ? 1 : safe_div(8, A_GROUPS);   // rows that share a 128-byte line
constexpr int A_SWZ_MASK = (A_GROUPS >= 8 ? 8 : A_GROUPS) - 1;         // groups permuted within a line

static_assert(BM > 0 && BN > 0 && BK > 0 && WM > 0 && WN > 0 && STAGES > 0,
              "k4: every tile parameter must be positive");
static_assert(BM % WM == 0 && BN % WN == 0, "k4: the block tile must split into whole warp tiles");
static_assert(WM % 16 == 0, "k4: WM must be a multiple of 16, the M of one mma");
static_assert(WN % 8 == 0, "k4: WN must be a multiple of 8, the N of one mma");
static_assert(THREADS >= 32 && THREADS <= 1024, "k4: (BM/WM)*(BN/WN) warps must be 1..32");
static_assert(BK % 8 == 0, "k4: BK must be a multiple of 8, the K of one mma");
static_assert((A_GROUPS & (A_GROUPS - 1)) == 0, "k4: BK must be 8, 16, 32, 64, ...: a power of two (the A swizzle XORs group indices)");
static_assert(BN % 32 == 0, "k4: BN must be a multiple of 32: the B swizzle permutes 8 groups of 4 columns");
static_assert(STAGES >= 2 && STAGES <= 8, "k4: STAGES must be 2..8 (one tile computed while the next load)");
static_assert((BM * BK / 4) % THREADS == 0, "k4: the A tile's float4 groups must split evenly over THREADS");
static_assert((BK * BN / 4) % THREADS == 0, "k4: the B tile's float4 groups must split evenly over THREADS");
static_assert(MI * NJ * 4 <= 160, "k4: more than 160 accumulators per lane cannot stay in 255 registers");
static_assert(SMEM_BYTES <= 227 * 1024, "k4: shared memory above the 227 KB a block may have on sm_90 "
              "(sm_86/89/120: 99 KB; the launcher checks the device)");

// Shared-memory float offsets of element (m, k) of an A buffer and (k, n) of a B buffer.
// BEGIN SOLUTION k4-swizzle: a_off(m, k) and b_off(k, n), your k2 swizzle for this BK
__device__ __forceinline__ int a_off(int m, int k)
{
    return m * BK + ((((k >> 2) ^ ((m / A_SWZ_DIV) & A_SWZ_MASK))) << 2) + (k & 3);
}
__device__ __forceinline__ int b_off(int k, int n)
{
    return k * BN + (n ^ ((k & 3) << 3));
}
// END SOLUTION k4-swizzle

extern __shared__ __align__(128) float smem[];

// Issue the copies of tile k0 into buffer s. FULL: the tile lies wholly inside A and B (no guards).
template <bool VEC, bool FULL>
__device__ __forceinline__ void load_tile(float* As, float* Bs, const float* __restrict__ A,
                                          const float* __restrict__ B, int M, int N, int K,
                                          int bm, int bn, int k0, int tid)
{
    if constexpr (VEC) {
#pragma unroll
        for (int i = 0; i < BM * BK / 4 / THREADS; ++i) {
            const int c = tid + i * THREADS;
            const int m = c / A_GROUPS, k = (c % A_GROUPS) * 4;
            const bool ok = FULL || (bm + m < M && k0 + k < K);
            cp_async_16(smem_u32(As + a_off(m, k)), ok ? A + (bm + m) * K + k0 + k : A, ok);
        }
#pragma unroll
        for (int i = 0; i < BK * BN / 4 / THREADS; ++i) {
            const int c = tid + i * THREADS;
            const int k = c / (BN / 4), n = (c % (BN / 4)) * 4;
            const bool ok = FULL || (k0 + k < K && bn + n < N);
            cp_async_16(smem_u32(Bs + b_off(k, n)), ok ? B + (k0 + k) * N + bn + n : B, ok);
        }
    } else {
#pragma unroll 4
        for (int i = 0; i < BM * BK / THREADS; ++i) {
            const int e = tid + i * THREADS;
            const int m = e / BK, k = e % BK;
            const bool ok = FULL || (bm + m < M && k0 + k < K);
            cp_async_4(smem_u32(As + a_off(m, k)), ok ? A + (bm + m) * K + k0 + k : A, ok);
        }
#pragma unroll 4
        for (int i = 0; i < BK * BN / THREADS; ++i) {
            const int e = tid + i * THREADS;
            const int k = e / BN, n = e % BN;
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

    // Prologue: tiles 0 .. STAGES-2 in flight, one commit group each (empty past the end).
    // BEGIN SOLUTION k4-prologue: tiles 0 .. STAGES-2 in flight, one commit group each
#pragma unroll 1
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < ktiles) issue(s, s);
        cp_async_commit();
    }
    // END SOLUTION k4-prologue

#pragma unroll 1
    for (int kt = 0; kt < ktiles; ++kt) {
        // Groups committed so far: kt + STAGES - 1; tile kt is group kt, so at most STAGES - 2 may
        // still fly. The barrier then also says every warp finished tile kt - 1, whose buffer the
        // copy below refills.
        // BEGIN SOLUTION k4-wait-and-issue: wait for tile kt, then issue tile kt+STAGES-1 and commit
        cp_async_wait<STAGES - 2>();
        __syncthreads();
        const int kn = kt + STAGES - 1;
        if (kn < ktiles) issue(kn % STAGES, kn);
        cp_async_commit();
        // END SOLUTION k4-wait-and-issue

        const int s = kt % STAGES;
        const float* as = As + s * A_STAGE;
        const float* bs = Bs + s * B_STAGE;
#pragma unroll 1
        for (int kk = 0; kk < BK; kk += 8) {    // kept rolled here; k7 unrolls it
            uint32_t a[MI][4], b[NJ][2];
#pragma unroll
            for (int i = 0; i < MI; ++i) {
                // BEGIN SOLUTION k4-ldmatrix-a: the shared address this lane gives ldmatrix_x4 for A fragment i (which row, which float4 group), and the call
                // lane l points at row l % 16 of the fragment, float4 group l / 16 of this k8 step
                const int m = wm0 + i * 16 + (lane % 16);
                ldmatrix_x4(a[i], smem_u32(as + a_off(m, kk + (lane / 16) * 4)));
                // END SOLUTION k4-ldmatrix-a
#pragma unroll
                for (int r = 0; r < 4; ++r) a[i][r] = tf32_operand(__uint_as_float(a[i][r]));
            }
#pragma unroll
            for (int j = 0; j < NJ; ++j) {
                const int n = wn0 + j * 8 + g;
                b[j][0] = tf32_operand(bs[b_off(kk + t, n)]);
                b[j][1] = tf32_operand(bs[b_off(kk + t + 4, n)]);
            }
#pragma unroll
            for (int i = 0; i < MI; ++i)
#pragma unroll
                for (int j = 0; j < NJ; ++j) mma_tf32_16x8x8(acc[i][j], a[i], b[j]);
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

}  // namespace k4

extern "C" __global__ void __launch_bounds__(THREADS)
tf32gemm_k4_vec(int M, int N, int K, float alpha, const float* __restrict__ A,
                const float* __restrict__ B, float beta, float* __restrict__ C)
{
    k4::body<true>(M, N, K, alpha, A, B, beta, C);
}

extern "C" __global__ void __launch_bounds__(THREADS)
tf32gemm_k4_scalar(int M, int N, int K, float alpha, const float* __restrict__ A,
                   const float* __restrict__ B, float beta, float* __restrict__ C)
{
    k4::body<false>(M, N, K, alpha, A, B, beta, C);
}
