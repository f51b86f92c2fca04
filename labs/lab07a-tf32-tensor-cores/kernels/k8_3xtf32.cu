// k8_3xtf32.cu -- lab 7a, k8: FP32 accuracy from the TF32 tensor cores (3xTF32), partial sums promoted
//
// C = alpha * A * B + beta * C, row-major FP32 in and out, errors at FP32's level (not TF32's).
// Entry points (one template):
//   tf32gemm_k8_vec     K % 4 == 0 and N % 4 == 0 (rows of A, B, C 16-byte aligned)
//   tf32gemm_k8_scalar  any M, N, K >= 1
// Launch: as k7: 1-D block of THREADS = (BM/WM)*(BN/WN)*32, grid (ceil(N/BN), ceil(M/BM)) remapped in
//         GROUP-row bands, dynamic shared memory SMEM_BYTES.
//
// The idea. A TF32 operand keeps 11 of FP32's 24 significant bits, so one TF32 product is off by up to
// 2^-10 relative. Split each operand into two TF32 numbers, x = big + small: big = tf32(x), and
// small = tf32(x - big) holds the next 11 bits (x - big is exact in FP32). Then
//     a b = big_a big_b + big_a small_b + small_a big_b + small_a small_b   (+ a 2^-23 remainder each)
// and the last product is below 2^-22 |a b|: three TF32 products give a b to about FP32's accuracy.
// Each TF32 x TF32 product has at most 22 significant bits: exact in the tensor core's FP32 sum.
// common/precision.py (fp32_3xtf32) derives the bound the checks use.
//
// What k8 changes in k7:
// 1. The split at the fragment load: every A and B element loaded from shared memory becomes a big
//    and a small register (split_tf32 below: a clamp, an integer rounding, an FADD). Shared memory
//    still holds plain FP32; the split costs a few ALU instructions per element and no extra loads.
// 2. Three mma.sync per (m16, n8) fragment pair and k8 step: small.big and big.small first, then
//    big.big, each pass over the MI accumulators of one B fragment, so that MI consecutive mma are
//    independent. The small products go in before the big one of their step, while the sum they join
//    is smaller by one product: fewer of their bits are shifted out when they are added.
// 3. Promotion. The tensor core adds into its FP32 accumulator by aligning and truncating (not
//    rounding): over a long K the error grows with K, toward zero. So an mma chain runs over KCHUNK of
//    K only, starting from zero; then it is added to a running sum in FP32 registers with FADD (round
//    to nearest) and restarted. The error of a chain stays that of KCHUNK, the FADDs err like FFMA.
// 4. Smaller warp tiles: the running sums double the accumulator registers, so a warp computes
//    64 x 32 (64 chain + 64 running floats per lane) where k7's 64 x 64 would need 256: the block is
//    128 x 128, 8 warps, at most 255 registers each.
// Everything else is k7: ldmatrix A fragments, swizzled tiles, cp.async pipeline with the XOR stage
// toggle, full unrolling of the k8 loop, GROUP rasterization, float2 stores.
// Every FP32 input is split, the largest too; Inf and NaN propagate as in FP32 (split_tf32 says how).
//
// SASS to look for: 3 x (BK/8) x MI x NJ HMMA.1688.F32.TF32 per tile (48 per k8 step), three times
// k7's per step of a warp tile this size; per split element two FMNMX (the clamp), an IADD3 and a LOP3
// (the rounding) and an FADD (x - big), on every architecture; the promotion's MI x NJ x 4 = 64 FADDs
// once per KCHUNK, behind a branch; STG.E.64 in the epilogue; no local memory.

// BEGIN PARAMETERS
#ifndef BM
#define BM 128      // block tile rows: 2 warp tiles of 64
#endif
#ifndef BN
#define BN 128      // block tile columns: 4 warp tiles of 32; a multiple of 32 for the B swizzle
#endif
// BK: k7 has 32 (4 unrolled k8 steps); with the split fragments 4 steps in flight need more than 255
// registers and spill on sm_80..90, so 2 steps per tile and twice the stages
#ifndef BK
#define BK 16       // K depth of one tile: 2 unrolled k8 steps
#endif
#ifndef WM
#define WM 64       // warp tile rows: 4 m16 fragments (one LDSM.x4 each per k8 step)
#endif
#ifndef WN
#define WN 32       // warp tile columns: 4 n8 fragments; 64 chain + 64 running accumulators per lane
#endif
#ifndef STAGES
#define STAGES 4    // shared buffers, a power of two (mask toggle): 4 x 16 KB, as deep in K as k7's 2 x 32
#endif
#ifndef GROUP
#define GROUP 8     // raster band: 8 block rows are walked column by column, sharing B tiles in L2
#endif
#ifndef MIN_BLOCKS
#define MIN_BLOCKS 1  // blocks per SM the register allocation must allow (__launch_bounds__ 2nd argument)
#endif
// KCHUNK: 24 chained mma per accumulator (3 per k8 step), then 64 FADDs per lane: 1 FADD per 6 HMMA of a
// warp. A numpy model of truncating accumulation (one truncation per mma) puts chains of 128 at 2-4x the
// error of FP32 FFMA at K = 256, chains of 64 at 1-2x, chains of 32 below it; DeepGEMM promotes its FP8
// sums every 128 of K. `make accuracy` measures 64 beside a build whose chain is all of K.
#ifndef KCHUNK
#define KCHUNK 64   // K of one mma chain before it is promoted to the FP32 running sum (a multiple of BK)
#endif

#define THREADS ((BM / WM) * (BN / WN) * 32)
#define SMEM_BYTES (STAGES * (BM * BK + BK * BN) * sizeof(float))
// END PARAMETERS

#define TF32_ROUND 1    // tf32_common.cuh asks; k8 rounds its operands itself (split_tf32), not through it
#include "tf32_common.cuh"

namespace k8 {

// BEGIN PARAMETERS
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
constexpr int CHUNK_TILES = safe_div(KCHUNK, BK);        // K-tiles per mma chain

static_assert(BM > 0 && BN > 0 && BK > 0 && WM > 0 && WN > 0 && STAGES > 0 && GROUP > 0,
              "k8: every tile parameter must be positive");
static_assert(BM % WM == 0 && BN % WN == 0, "k8: the block tile must split into whole warp tiles");
static_assert(WM % 16 == 0, "k8: WM must be a multiple of 16, the M of one mma");
static_assert(WN % 8 == 0, "k8: WN must be a multiple of 8, the N of one mma");
static_assert(THREADS >= 32 && THREADS <= 1024, "k8: (BM/WM)*(BN/WN) warps must be 1..32");
static_assert(BK % 8 == 0, "k8: BK must be a multiple of 8, the K of one mma");
static_assert((A_GROUPS & (A_GROUPS - 1)) == 0, "k8: BK must be 8, 16, 32, 64, ...: a power of two (the A swizzle XORs group indices)");
static_assert(BN % 32 == 0, "k8: BN must be a multiple of 32: the B swizzle permutes 8 groups of 4 columns");
static_assert(WN % 32 == 0 || BN == WN, "k8: WN must be a multiple of 32 (warp columns aligned to the B swizzle)");
static_assert(STAGES >= 2 && STAGES <= 8 && (STAGES & (STAGES - 1)) == 0,
              "k8: STAGES must be 2, 4 or 8: the stage index advances by a mask toggle");
static_assert((BM * BK / 4) % THREADS == 0, "k8: the A tile's float4 groups must split evenly over THREADS");
static_assert((BK * BN / 4) % THREADS == 0, "k8: the B tile's float4 groups must split evenly over THREADS");
static_assert(THREADS % A_GROUPS == 0 && A_ROW_STEP % 8 == 0,
              "k8: a thread's A chunks must be a multiple of 8 rows apart (same swizzle: one hoisted offset)");
static_assert(THREADS % B_GROUPS == 0 && B_ROW_STEP % 4 == 0,
              "k8: a thread's B chunks must be a multiple of 4 k-rows apart (same swizzle: one hoisted offset)");
static_assert(KCHUNK >= BK && KCHUNK % BK == 0, "k8: KCHUNK must be a multiple of BK: chains end at a tile's end");
static_assert(MI * NJ * 4 <= 80, "k8: more than 80 accumulators per lane (twice: chain and running sum) "
              "cannot stay in 255 registers");
static_assert(MIN_BLOCKS >= 1 && MIN_BLOCKS * THREADS <= 2048, "k8: MIN_BLOCKS resident blocks must fit an SM's 2048 threads");
static_assert(SMEM_BYTES <= 227 * 1024, "k8: shared memory above the 227 KB a block may have on sm_90 "
              "(sm_86/89/120: 99 KB; the launcher checks the device)");
// END PARAMETERS

// x -> (big, small) with x = big + small to 2^-23 |x| as the tensor core reads them (common/precision.py
// derives it). big: x rounded to the nearest TF32 (ties away, as cvt.rna) by adding half of TF32's last
// place to FP32's bits and clearing the 13 below it: the integer form of what ptxas emits for cvt.rna on
// sm_80..89, and big's low bits are zero, as x - big must see big's TF32 value. small = x - big is exact
// in FP32 and needs no conversion: the tensor core drops its low 13 bits, and truncating x - big (13
// significant bits at most) to TF32's 11 errs no more than rounding it would (one FP32 ulp of x).
// Inf and NaN: x is first clamped to the largest TF32 number, +-(2 - 2^-10) 2^127, so big is finite and
// small = x - big is x itself (+-Inf, or NaN). Every product that meets an Inf then meets a finite part
// of the other operand, nonzero unless that operand is 0: Inf propagates as in FP32 (NaN where it meets
// 0 or an Inf of the other sign, as in FP32); a NaN stays NaN. (Unclamped, big = Inf and small = NaN;
// with small = 0 instead, Inf x small_b = Inf x 0 = NaN for every b that is a TF32 number already.)
__device__ __forceinline__ void split_tf32(float x, uint32_t& big, uint32_t& small)
{
    const float TF32_MAX = __uint_as_float(0x7F7FE000u);            // (2 - 2^-10) 2^127
    const float clamped = fminf(fmaxf(x, -TF32_MAX), TF32_MAX);     // a NaN clamps to -TF32_MAX
    const uint32_t b = (__float_as_uint(clamped) + 0x1000u) & 0xFFFFE000u;
    big = b;
    small = __float_as_uint(x - __uint_as_float(b));
}

__device__ __forceinline__ int a_off(int m, int k)
{
    return m * BK + ((((k >> 2) ^ ((m / A_SWZ_DIV) & A_SWZ_MASK))) << 2) + (k & 3);
}
__device__ __forceinline__ int b_off(int k, int n)
{
    return k * BN + (n ^ ((k & 3) << 3));
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
    const uint32_t bs0 = as0 + STAGES * A_STAGE * sizeof(float);  // B buffers, bytes

    // Hoisted copy addresses (k5): every A chunk of this thread has the same column and swizzle,
    // rows A_ROW_STEP apart; every B chunk the same column, k-rows B_ROW_STEP apart.
    const int a_m = tid / A_GROUPS, a_k = (tid % A_GROUPS) * 4;
    const int b_k = tid / B_GROUPS, b_n = (tid % B_GROUPS) * 4;
    const uint32_t a_dst = as0 + a_off(a_m, a_k) * sizeof(float);
    const uint32_t b_dst = bs0 + b_off(b_k, b_n) * sizeof(float);
    const float* a_src = A + (bm + a_m) * K + a_k;
    const float* b_src = B + b_k * N + bn + b_n;

    // Hoisted fragment addresses (k5). A: lane l reads row wm0 + l % 16, group (kk/4 + l/16) ^ swz,
    // and (kk/4 + l/16) ^ swz == (kk/4) ^ a_x with a lane constant a_x. B: column wn0 + 8 j + g lands
    // at wn0 + 8 (j ^ t) + g, and j ^ t takes 4 values per lane (j % 4 ^ t, plus 4 (j / 4)).
    const int a_row = wm0 + lane % 16;
    const uint32_t a_lane = as0 + a_row * BK * sizeof(float);
    const int a_x = (lane / 16) ^ ((a_row / A_SWZ_DIV) & A_SWZ_MASK);
    const float* Bs = smem + STAGES * A_STAGE;
    int b_lane[4];                              // float offsets into a B buffer
#pragma unroll
    for (int r = 0; r < 4; ++r) b_lane[r] = t * BN + wn0 + 8 * (r ^ t) + g;

    float acc[MI][NJ][4] = {};                  // the mma chain of this KCHUNK (from zero)
    float sum[MI][NJ][4] = {};                  // the running FP32 sum the chains are promoted into

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

#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < ktiles) issue(s, s);
        cp_async_commit();
    }

    int rs = 0, ws = STAGES - 1;                // read and write stage: mask toggles
#pragma unroll 1
    for (int kt = 0; kt < ktiles; ++kt) {
        cp_async_wait<STAGES - 2>();            // tile kt has landed (this thread's copies) ...
        __syncthreads();                        // ... everyone's, and buffer ws is free again
        const bool more = kt + STAGES - 1 < ktiles;

        const uint32_t a_st = a_lane + rs * A_STAGE * sizeof(float);
        const float* b_st = Bs + rs * B_STAGE;
#pragma unroll
        for (int kk = 0; kk < BK; kk += 8) {   // fully unrolled: offsets below become immediates
            uint32_t a_big[MI][4], a_small[MI][4];
            const uint32_t a_k8 = a_st + (((kk / 4) ^ a_x) << 4);
#pragma unroll
            for (int i = 0; i < MI; ++i) {
                uint32_t raw[4];
                ldmatrix_x4(raw, a_k8 + i * 16 * BK * sizeof(float));
#pragma unroll
                for (int r = 0; r < 4; ++r) split_tf32(__uint_as_float(raw[r]), a_big[i][r], a_small[i][r]);
            }
            // B fragment by B fragment, as k7 (fewer live registers): for each, three passes over the MI
            // accumulators, the small products first (item 2 above); the MI mma of a pass are independent
#pragma unroll
            for (int j = 0; j < NJ; ++j) {
                const float* p = b_st + b_lane[j % 4] + kk * BN + 32 * (j / 4);
                uint32_t b_big[2], b_small[2];
                split_tf32(p[0], b_big[0], b_small[0]);
                split_tf32(p[4 * BN], b_big[1], b_small[1]);
#pragma unroll
                for (int i = 0; i < MI; ++i) mma_tf32_16x8x8(acc[i][j], a_small[i], b_big);
#pragma unroll
                for (int i = 0; i < MI; ++i) mma_tf32_16x8x8(acc[i][j], a_big[i], b_small);
#pragma unroll
                for (int i = 0; i < MI; ++i) mma_tf32_16x8x8(acc[i][j], a_big[i], b_big);
            }
            // the next tile's copies go out behind the first step's HMMAs (as k7)
            if (kk == 0) {
                if (more) issue(ws, kt + STAGES - 1);
                cp_async_commit();
            }
        }
        // promotion (item 3 above): the chain ends with every CHUNK_TILES-th tile, and with the last
        if ((kt + 1) % CHUNK_TILES == 0 || kt + 1 == ktiles) {
#pragma unroll
            for (int i = 0; i < MI; ++i)
#pragma unroll
                for (int j = 0; j < NJ; ++j)
#pragma unroll
                    for (int r = 0; r < 4; ++r) {
                        sum[i][j][r] += acc[i][j][r];
                        acc[i][j][r] = 0.0f;
                    }
        }
        rs = (rs + 1) & (STAGES - 1);
        ws = (ws + 1) & (STAGES - 1);
    }

    // Epilogue (k6): the two running sums of a lane that sit side by side in C go out as one float2.
#pragma unroll
    for (int i = 0; i < MI; ++i)
#pragma unroll
        for (int j = 0; j < NJ; ++j)
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const int row = bm + wm0 + i * 16 + g + 8 * h;
                const int col = bn + wn0 + j * 8 + 2 * t;
                float* p = C + row * N + col;
                float2 v = make_float2(alpha * sum[i][j][2 * h], alpha * sum[i][j][2 * h + 1]);
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
