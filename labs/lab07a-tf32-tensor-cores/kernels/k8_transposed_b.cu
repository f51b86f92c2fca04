// k8_transposed_b.cu -- lab 7a, k8: past the worklog. B transposed on its way into shared memory,
// so that ldmatrix feeds both operands, and lab 7's t4 pipeline (register double buffering).
//
// C = alpha * A * B + beta * C, row-major FP32 in and out, TF32 tensor cores, FP32 accumulation.
// Entry points (one template):
//   tf32gemm_k8_vec     K % 4 == 0 and N % 4 == 0 (rows of A and C 16-byte aligned)
//   tf32gemm_k8_scalar  any M, N, K >= 1
// Launch: 1-D block of THREADS = (BM/WM)*(BN/WN)*32 threads (256), grid (ceil(N/BN), ceil(M/BM))
//         remapped inside the kernel in GROUP-row bands (as k5), dynamic shared memory SMEM_BYTES
//         (= STAGES * (BM + BN) * BK * 4 = 96 KB by default: it fits the 99 KB of sm_86/89/120).
// beta == 0 never reads C. Numerics as k2..k7 (TF32_ROUND, tf32_common.cuh).
//
// Why a k8. k7 loads its A fragments with ldmatrix (k4's trick: a TF32 value is two 16-bit halves)
// but its B fragments with 16 LDS.32 per k8 step: an mma's B fragment gives lane (g, t) the pair
// B[t][g], B[t + 4][g], two k-rows of one column, and row-major B keeps columns, not k, together.
// ldmatrix hands a lane element [l / 4][l % 4] of an 8 x 4 block, so it would deliver that pair if
// the block's rows were columns of B: if B sat in shared memory TRANSPOSED, Bt[n][k], exactly like A.
// (A first try kept B row-major and read it with LDS.128 through a permutation of C's columns: the
// loads were 4x fewer, but a 128-bit load holds 4 columns of one k-row while the mma needs pairs of
// k-rows in neighbouring registers; ptxas spent 78 moves per 64 HMMA re-pairing them and it ran 16 %
// slower than k7.)
//  1. B transposed by the copy. A 16-byte cp.async cannot transpose, so B travels by 4-byte cp.async
//     (LDGSTS.E, as lab 7's v8 copies its A): each lane of a warp copies one element, the warp a
//     4 k x 8 n block (4 rows x 32 bytes of B: whole sectors). In Bt[n][k], float4 group q = k / 4
//     of row n is stored at q ^ (n % 8) (k7's A swizzle with n for m): the warp's 32 writes hit 32
//     different banks (8 rows at 8 different groups, 4 k in each), and the 8 rows an ldmatrix matrix
//     reads at one group sit in 8 different groups: both conflict-free.
//  2. ldmatrix.x4 for B: matrices (n 0-7, k 0-3), (n 0-7, k 4-7), (n 8-15, k 0-3), (n 8-15, k 4-7) of
//     Bt are b0, b1 of one n8 tile and b0, b1 of the next, in the register order the mma wants: 4
//     LDSM.x4 per k8 step replace 16 LDS.32, and no register moves.
//  3. t4's pipeline: STAGES cp.async buffers (any count, one barrier per tile), and the fragments of
//     the next k8 step loaded (and converted) while the HMMAs of this one run: two register sets,
//     the loads interleaved between the rows of MMAs; the last step of a tile loads step 0 of the
//     next tile, after the tile's barrier, so the pipeline never drains between tiles.
// Tiles (defaults): block 256 x 128 (k7's), 8 warps (4 x 2) of 64 x 64 (4 m16 x 8 n8 mma per k8 step:
// 4 + 4 LDSM.x4 for 32 HMMA), BK = 16 (two k8 steps per barrier), STAGES = 4. Per tile a thread issues
// 4 LDGSTS.128 for A and 8 LDGSTS.32 for B.
//
// SASS to look for (make sass): HMMA.1688.F32.TF32, LDSM.16.M88.4 for both operands and no LDS in the
// main loop, LDGSTS.E.BYPASS.LTC128B.128 (A) and LDGSTS.E (B, 4 bytes), one BAR.SYNC per tile,
// STG.E.64 in the vec epilogue, no LDL/STL.

#ifndef BM
#define BM 256      // block tile rows: 4 warp rows of 64 (k7's tile)
#endif
#ifndef BN
#define BN 128      // block tile columns: 2 warp columns; B's 4-byte copies grow with BN
#endif
#ifndef BK
#define BK 16       // K depth of one stage: two k8 steps per barrier; an A row is 4 float4 groups
#endif
#ifndef WM
#define WM 64       // warp tile rows: 4 m16 fragments (one LDSM.x4 each per k8 step)
#endif
#ifndef WN
#define WN 64       // warp tile columns: 8 n8 fragments (one LDSM.x4 per pair per k8 step)
#endif
#ifndef STAGES
#define STAGES 4    // shared buffers: STAGES-1 tiles in flight while one is read
#endif
#ifndef GROUP
#define GROUP 8     // raster band: 8 block rows are walked column by column, sharing B tiles in L2
#endif
#ifndef MIN_BLOCKS
#define MIN_BLOCKS 1  // blocks per SM the register allocation must allow (__launch_bounds__ 2nd argument)
#endif
#ifndef TF32_ROUND
#define TF32_ROUND 1  // 1: round operands to the nearest TF32 (sm_90: one F2FP each); 0: truncate
#endif
// Ablation switch (not a tuning parameter; the default is the kernel this file teaches):
#ifndef K8_REGDB
#define K8_REGDB 1    // 0: one fragment set: each k8 step loads its fragments, then computes (k7's way)
#endif

#define THREADS ((BM / WM) * (BN / WN) * 32)
#define SMEM_BYTES (STAGES * (BM + BN) * BK * sizeof(float))   // A stages, then Bt stages

#include "tf32_common.cuh"

namespace k8 {

constexpr int safe_div(int a, int b) { return b > 0 ? a / b : 0; }

constexpr int WARPS_N = safe_div(BN, WN);
constexpr int MI = WM / 16;                     // m16 fragments per warp tile
constexpr int NJ = WN / 8;                      // n8 fragments per warp tile
constexpr int KSTEPS = BK / 8;                  // k8 steps per stage
constexpr int A_STAGE = BM * BK;                // floats per A buffer
constexpr int B_STAGE = BN * BK;                // floats per Bt buffer
constexpr int GROUPS = BK / 4;                  // float4 groups in a row of A or of Bt
constexpr int SWZ_DIV = GROUPS >= 8 ? 1 : safe_div(8, GROUPS);   // rows sharing a 128-byte line
constexpr int SWZ_MASK = (GROUPS >= 8 ? 8 : GROUPS) - 1;          // groups permuted within it
constexpr int A_ROW_STEP = safe_div(THREADS, GROUPS);  // rows between one thread's A chunks
// B copies: a warp copies a 4 k x 8 n block; the warps of a block cover BN columns, then more k.
constexpr int B_BLOCKS_N = BN / 8;              // 8-column blocks across the tile

static_assert(BM > 0 && BN > 0 && BK > 0 && WM > 0 && WN > 0 && STAGES > 0 && GROUP > 0,
              "k8: every tile parameter must be positive");
static_assert(BM % WM == 0 && BN % WN == 0, "k8: the block tile must split into whole warp tiles");
static_assert(WM % 16 == 0, "k8: WM must be a multiple of 16, the M of one mma");
static_assert(WN % 16 == 0, "k8: WN must be a multiple of 16: one ldmatrix.x4 loads two n8 B fragments");
static_assert(THREADS >= 32 && THREADS <= 1024, "k8: (BM/WM)*(BN/WN) warps must be 1..32");
static_assert(BK % 16 == 0, "k8: BK must be a multiple of 16: an even number of k8 steps per stage (two register sets)");
static_assert((GROUPS & (GROUPS - 1)) == 0, "k8: BK must be 16, 32, 64, ...: a power of two (the swizzle XORs group indices)");
static_assert(STAGES >= 2 && STAGES <= 8, "k8: STAGES must be 2..8 (one buffer read, at least one being filled)");
static_assert((BM * BK / 4) % THREADS == 0, "k8: the A tile's float4 groups must split evenly over THREADS");
static_assert(THREADS % GROUPS == 0 && A_ROW_STEP % 8 == 0,
              "k8: a thread's A chunks must be a multiple of 8 rows apart (same swizzle: one hoisted offset)");
static_assert(BN % 8 == 0 && B_BLOCKS_N % (THREADS / 32) == 0,
              "k8: BN / 8 must be a multiple of the warps: each warp copies whole 4 k x 8 n blocks of B");
static_assert(MI * NJ * 4 <= 128, "k8: more than 128 accumulators per lane, with two fragment sets, cannot stay in 255 registers");
static_assert(MIN_BLOCKS >= 1 && MIN_BLOCKS * THREADS <= 2048, "k8: MIN_BLOCKS resident blocks must fit an SM's 2048 threads");
static_assert(SMEM_BYTES <= 227 * 1024, "k8: shared memory above the 227 KB a block may have on sm_90 "
              "(sm_86/89/120: 99 KB; the launcher checks the device)");

// As[BM][BK] and Bt[BN][BK]: float4 group q = k / 4 of row r is stored at q ^ ((r / DIV) & MASK)
// (k4..k7's A swizzle, for both operands).
__device__ __forceinline__ int swz_off(int r, int k)
{
    return r * BK + ((((k >> 2) ^ ((r / SWZ_DIV) & SWZ_MASK))) << 2) + (k & 3);
}

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
    const uint32_t bs0 = as0 + STAGES * A_STAGE * sizeof(float);  // Bt buffers, bytes

    // A copies (k5..k7): every chunk of this thread has the same column and swizzle, rows
    // A_ROW_STEP apart. Vec only; the scalar variant copies element by element.
    const int a_m = tid / GROUPS, a_k = (tid % GROUPS) * 4;
    const uint32_t a_dst = as0 + swz_off(a_m, a_k) * sizeof(float);
    const float* a_src = A + (size_t)(bm + a_m) * K + a_k;
    const int a_rowstep = A_ROW_STEP * K;       // int offsets, as k7 (matrices below 2^31 elements)
    // B copies (item 1): warp w copies 4 k x 8 n blocks: columns 8 (w + WARPS r) .. + 7 of the tile,
    // k-rows 4 q .. 4 q + 3, for r < R = B_BLOCKS_N / WARPS and q < BK / 4; copy i = q R + r. Lane l
    // takes column l % 8 and k-row l / 8 of each block, so one base pointer and compile-time
    // strides give every source, and the swizzle, which depends on the column mod 8 and on q, one
    // lane constant.
    constexpr int WARPS = THREADS / 32;
    constexpr int R = B_BLOCKS_N / WARPS;
    const int b_n = 8 * warp + lane % 8, b_k = lane / 8;
    const float* b_src = B + (size_t)b_k * N + bn + b_n;
    const uint32_t b_dst = bs0 + (b_n * BK + b_k) * sizeof(float);
    const int b_x = (b_n / SWZ_DIV) & SWZ_MASK;

    auto issue = [&](int s, int kt) {
        const int k0 = kt * BK;
        const bool full = inside && k0 + BK <= K;
        if constexpr (VEC) {
#pragma unroll
            for (int i = 0; i < BM * BK / 4 / THREADS; ++i) {
                const bool ok = full || (bm + a_m + i * A_ROW_STEP < M && k0 + a_k < K);
                cp_async_16(a_dst + (s * A_STAGE + i * A_ROW_STEP * BK) * sizeof(float),
                            ok ? a_src + i * a_rowstep + k0 : A, ok);
            }
        } else {
#pragma unroll 4
            for (int i = 0; i < BM * BK / THREADS; ++i) {
                const int e = tid + i * THREADS, m = e / BK, k = e % BK;
                const bool ok = bm + m < M && k0 + k < K;
                cp_async_4(as0 + (s * A_STAGE + swz_off(m, k)) * sizeof(float),
                           ok ? A + (size_t)(bm + m) * K + k0 + k : A, ok);
            }
        }
        // Bt: 4-byte copies that transpose (both variants: a 4-byte copy needs no alignment)
        const float* bp = b_src + (size_t)k0 * N;
#pragma unroll
        for (int q = 0; q < BK / 4; ++q)
#pragma unroll
            for (int r = 0; r < R; ++r) {
                const uint32_t dst = b_dst + (s * B_STAGE + 8 * WARPS * r * BK + ((q ^ b_x) << 2)) * sizeof(float);
                const bool ok = full || (k0 + b_k + 4 * q < K && bn + b_n + 8 * WARPS * r < N);
                cp_async_4(dst, ok ? bp + 4 * q * N + 8 * WARPS * r : B, ok);
            }
    };

    // Fragment addresses. A (k4..k7): lane l reads row wm0 + l % 16 at group (kk/4 + l/16) ^ swz =
    // (kk/4) ^ a_x; the m16 fragments are 16 rows apart (same swizzle).
    const int a_row = wm0 + lane % 16;
    const uint32_t a_lane = as0 + a_row * BK * sizeof(float);
    const int a_x = (lane / 16) ^ ((a_row / SWZ_DIV) & SWZ_MASK);
    // Bt (item 2): lane l gives row wn0 + 16 p + 8 (l / 16) + l % 8 (matrix j = l / 8: n half j / 2)
    // at group kk/4 + (l / 8) % 2 (k 0-3 or 4-7); pairs p are 16 rows apart (same swizzle).
    const int b_row = wn0 + 8 * (lane / 16) + lane % 8;
    const uint32_t b_lane = bs0 + b_row * BK * sizeof(float);
    const int b_fx = ((lane / 8) % 2) ^ ((b_row / SWZ_DIV) & SWZ_MASK);

    float acc[MI][NJ][4] = {};
    uint32_t fa[2][MI][4];                       // two register sets (item 3)
    uint32_t fb[2][NJ][2];

    auto load_a = [&](int set, int i, int stage, int kk) {
        ldmatrix_x4(fa[set][i], a_lane + (stage * A_STAGE + i * 16 * BK) * sizeof(float)
                                    + ((((kk * 8) / 4) ^ a_x) << 4));
#pragma unroll
        for (int r = 0; r < 4; ++r) fa[set][i][r] = tf32_operand(__uint_as_float(fa[set][i][r]));
    };
    auto load_b = [&](int set, int p, int stage, int kk) {   // n8 fragments 2p and 2p + 1
        uint32_t r[4];
        ldmatrix_x4(r, b_lane + (stage * B_STAGE + p * 16 * BK) * sizeof(float) + ((((kk * 8) / 4) ^ b_fx) << 4));
        fb[set][2 * p][0] = tf32_operand(__uint_as_float(r[0]));
        fb[set][2 * p][1] = tf32_operand(__uint_as_float(r[1]));
        fb[set][2 * p + 1][0] = tf32_operand(__uint_as_float(r[2]));
        fb[set][2 * p + 1][1] = tf32_operand(__uint_as_float(r[3]));
    };
    // One k8 step on register set cur; with `load`, step nkk of buffer nstage goes into set nxt in
    // between: A fragment i and B pair i just before row i of the MMAs.
    auto mma_step = [&](int cur, bool load, int nxt, int nstage, int nkk) {
        if (load) {
#pragma unroll
            for (int p = MI; p < NJ / 2; ++p) load_b(nxt, p, nstage, nkk);   // only when NJ / 2 > MI
        }
#pragma unroll
        for (int i = 0; i < MI; ++i) {
            if (load) {
                load_a(nxt, i, nstage, nkk);
                if (i < NJ / 2) load_b(nxt, i, nstage, nkk);
            }
#pragma unroll
            for (int jj = 0; jj < NJ; ++jj) {
                const int j = (i % 2) ? NJ - 1 - jj : jj;   // serpentine: the last B fragment again
                mma_tf32_16x8x8(acc[i][j], fa[cur][i], fb[cur][j]);
            }
        }
    };

    // Prologue: tiles 0 .. STAGES-2 in flight, one commit group each (empty groups past the end).
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < ktiles) issue(s, s);
        cp_async_commit();
    }
    cp_async_wait<STAGES - 2>();   // tile 0 has landed (this thread's copies) ...
    __syncthreads();               // ... and everyone's
    int rs = 0, ws = STAGES - 1;   // read and write stage
    if (K8_REGDB) {
#pragma unroll
        for (int i = 0; i < MI; ++i) load_a(0, i, 0, 0);
#pragma unroll
        for (int p = 0; p < NJ / 2; ++p) load_b(0, p, 0, 0);
    }

#pragma unroll 1
    for (int kt = 0; kt < ktiles; ++kt) {
#pragma unroll
        for (int kk = 0; kk < KSTEPS; ++kk) {
            if (kk == 0) {
                // Refill the buffer tile kt-1 used: every warp passed the barrier that freed it.
                if (kt + STAGES - 1 < ktiles) issue(ws, kt + STAGES - 1);
                cp_async_commit();         // always, even empty: the wait arithmetic stays fixed
                ws = (ws + 1 == STAGES) ? 0 : ws + 1;
            }
            // Tile kt+1 has landed for every thread, and every warp has read its last fragments of
            // tile kt: STAGES + kt groups are committed and tile kt+1's is older than the STAGES-2
            // newest; the barrier orders those reads before the copies into tile kt's buffer at
            // kk = 0 of tile kt+1. With two register sets the last step's fragments were loaded one
            // step earlier, so the barrier comes before its MMAs (which then load tile kt+1's step 0).
            auto next_stage = [&]() {
                cp_async_wait<STAGES - 2>();
                __syncthreads();
                rs = (rs + 1 == STAGES) ? 0 : rs + 1;
            };
            if (K8_REGDB) {
                if (kk == KSTEPS - 1) next_stage();
                mma_step(kk % 2, kk < KSTEPS - 1 || kt + 1 < ktiles, (kk + 1) % 2, rs, (kk + 1) % KSTEPS);
            } else {
                // ablation: load this step's fragments, compute, and only then the barrier
#pragma unroll
                for (int i = 0; i < MI; ++i) load_a(0, i, rs, kk);
#pragma unroll
                for (int p = 0; p < NJ / 2; ++p) load_b(0, p, rs, kk);
                mma_step(0, false, 0, rs, 0);
                if (kk == KSTEPS - 1) next_stage();
            }
        }
    }
    cp_async_wait<0>();            // only empty groups can be pending; leave no copy in flight

    // Epilogue (k6): the two accumulators of a lane that sit side by side in C go out as one float2.
#pragma unroll
    for (int i = 0; i < MI; ++i)
#pragma unroll
        for (int j = 0; j < NJ; ++j)
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const int row = bm + wm0 + i * 16 + g + 8 * h;
                const int col = bn + wn0 + j * 8 + 2 * t;
                float* p = C + (size_t)row * N + col;
                float2 v = make_float2(alpha * acc[i][j][2 * h], alpha * acc[i][j][2 * h + 1]);
                if constexpr (VEC) {
                    // N % 4 == 0 and col even: col < N means col + 1 < N, and p is 8-byte aligned
                    if (inside || (row < M && col < N)) {
                        if (beta != 0.0f) {
                            const float2 c = *reinterpret_cast<const float2*>(p);
                            v.x += beta * c.x;
                            v.y += beta * c.y;
                        }
                        *reinterpret_cast<float2*>(p) = v;
                    }
                } else {
                    if (row < M && col < N)     p[0] = beta == 0.0f ? v.x : v.x + beta * p[0];
                    if (row < M && col + 1 < N) p[1] = beta == 0.0f ? v.y : v.y + beta * p[1];
                }
            }
}

}  // namespace k8

extern "C" __global__ void __launch_bounds__(THREADS, MIN_BLOCKS)
tf32gemm_k8_vec(int M, int N, int K, float alpha, const float* __restrict__ A,
                const float* __restrict__ B, float beta, float* __restrict__ C)
{
    k8::body<true>(M, N, K, alpha, A, B, beta, C);
}

extern "C" __global__ void __launch_bounds__(THREADS, MIN_BLOCKS)
tf32gemm_k8_scalar(int M, int N, int K, float alpha, const float* __restrict__ A,
                   const float* __restrict__ B, float beta, float* __restrict__ C)
{
    k8::body<false>(M, N, K, alpha, A, B, beta, C);
}
