// k8_permuted_columns.cu -- lab 7a, k8: past the worklog. lab 7's t4 pipeline on TF32, and B
// fragments by 128-bit loads because the columns of an mma may be any columns of C.
//
// C = alpha * A * B + beta * C, row-major FP32 in and out, TF32 tensor cores, FP32 accumulation.
// Entry points (one template):
//   tf32gemm_k8_vec     K % 4 == 0 and N % 4 == 0 (rows of A, B, C 16-byte aligned)
//   tf32gemm_k8_scalar  any M, N, K >= 1
// Launch: 1-D block of THREADS = (BM/WM)*(BN/WN)*32 threads (256), grid (ceil(N/BN), ceil(M/BM))
//         remapped inside the kernel in GROUP-row bands (as k5), dynamic shared memory SMEM_BYTES
//         (= STAGES * (BM*BK + BK*BN) * 4 = 96 KB by default: it fits the 99 KB of sm_86/89/120).
// beta == 0 never reads C. Numerics as k2..k7 (TF32_ROUND, tf32_common.cuh).
//
// Why a k8. On the H200 k7 keeps the tensor pipe busy about 57 % of the time: with 8 warps per SM
// each warp waits for its own shared loads (LDSM, LDS, then the TF32 conversion) before its HMMAs.
// k8 changes three things, all of them about what a warp does between two HMMAs:
//  1. B fragments by LDS.128. An m16n8k8 B fragment gives lane (g, t) = (lane / 4, lane % 4) the
//     values B[k + t][n(g)] and B[k + t + 4][n(g)], where n(g) is the g-th column of that mma. Those
//     8 columns need not be neighbours in C: the mma does not know which columns of C they are.
//     k7 takes columns 8j .. 8j + 7 for mma j (j = 0..NJ-1 of a warp tile), so lane g needs column
//     8j + g of every j: NJ scattered floats, 2 NJ LDS.32 per k8 step. k8 takes columns
//     c * NJ + j for the mma column c of mma j, so lane g needs columns g*NJ .. g*NJ + NJ - 1 of row
//     k + t: NJ neighbouring floats, NJ / 4 LDS.128, and as many for row k + t + 4. With NJ = 8:
//     4 LDS.128 instead of 16 LDS.32 per k8 step.
//     The accumulators follow: d0, d1 of mma j at C columns (2t) NJ + j and (2t + 1) NJ + j, so a
//     lane owns 2 NJ neighbouring columns of each of its rows: the epilogue stores float4s (STG.E.128).
//  2. A swizzle for those reads. A quarter warp (8 lanes, one wavefront of 128 bytes) of an LDS.128
//     reads rows t = 0..3 at float4 groups 2g + h, g in {2q, 2q+1}. Group x of row r is stored at
//     x ^ f(r % 4), f(r) = (r & 1) | (r & 2) << 1 (0, 1, 4, 5): the 8 lanes' groups {2g + h} ^ f(t)
//     are 8 different groups of one 128-byte line, no conflict; the XOR stays inside an aligned line
//     of 8 groups, so the cp.async stores (8 lanes, 8 consecutive groups) stay conflict-free too.
//     A keeps k4..k7's swizzle and ldmatrix .b16 loads.
//  3. t4's pipeline: STAGES cp.async buffers (any count, one barrier per tile), and the fragments of
//     the next k8 step loaded (and converted) while the HMMAs of this one run: two register sets,
//     the loads interleaved between the rows of MMAs; the last step of a tile loads step 0 of the
//     next tile, after the tile's barrier, so the pipeline never drains between tiles.
// Tiles (defaults): block 128 x 256, 8 warps (2 x 4) of 64 x 64 (MI = 4 m16 x NJ = 8 n8 mma per k8
// step: 4 LDSM.x4 + 4 LDS.128 for 32 HMMA), BK = 16 (two k8 steps per barrier), STAGES = 4.
//
// SASS to look for (make sass): HMMA.1688.F32.TF32, LDSM.16.M88.4 for A, LDS.128 for B (no LDS.32 in
// the main loop), LDGSTS, one BAR.SYNC per tile, STG.E.128 in the vec epilogue, no LDL/STL.

#ifndef BM
#define BM 128      // block tile rows: 2 warp rows
#endif
#ifndef BN
#define BN 256      // block tile columns: 4 warp columns of 64
#endif
#ifndef BK
#define BK 16       // K depth of one stage: two k8 steps per barrier; an A row is 4 float4 groups
#endif
#ifndef WM
#define WM 64       // warp tile rows: 4 m16 fragments (one LDSM.x4 each per k8 step)
#endif
#ifndef WN
#define WN 64       // warp tile columns: 8 n8 mma, 8 neighbouring columns per lane: 2 LDS.128 per row
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

#define THREADS ((BM / WM) * (BN / WN) * 32)
#define SMEM_BYTES (STAGES * (BM * BK + BK * BN) * sizeof(float))

#include "tf32_common.cuh"

namespace k8 {

constexpr int safe_div(int a, int b) { return b > 0 ? a / b : 0; }

constexpr int WARPS_N = safe_div(BN, WN);
constexpr int MI = WM / 16;                     // m16 fragments per warp tile
constexpr int NJ = WN / 8;                      // n8 mma per warp tile = neighbouring columns per lane
constexpr int KSTEPS = BK / 8;                  // k8 steps per stage
constexpr int A_STAGE = BM * BK;                // floats per A buffer
constexpr int B_STAGE = BK * BN;                // floats per B buffer
constexpr int A_GROUPS = BK / 4;                // float4 groups in an A row
constexpr int B_GROUPS = BN / 4;                // float4 groups in a B row
constexpr int A_SWZ_DIV = A_GROUPS >= 8 ? 1 : safe_div(8, A_GROUPS);   // rows sharing a 128-byte line
constexpr int A_SWZ_MASK = (A_GROUPS >= 8 ? 8 : A_GROUPS) - 1;         // groups permuted within it
constexpr int A_ROW_STEP = safe_div(THREADS, A_GROUPS);  // rows between one thread's A chunks
constexpr int B_ROW_STEP = safe_div(THREADS, B_GROUPS);  // k-rows between one thread's B chunks

static_assert(BM > 0 && BN > 0 && BK > 0 && WM > 0 && WN > 0 && STAGES > 0 && GROUP > 0,
              "k8: every tile parameter must be positive");
static_assert(BM % WM == 0 && BN % WN == 0, "k8: the block tile must split into whole warp tiles");
static_assert(WM % 16 == 0, "k8: WM must be a multiple of 16, the M of one mma");
static_assert(WN % 32 == 0, "k8: WN must be a multiple of 32: a lane's WN/8 columns must be whole float4s");
static_assert(THREADS >= 32 && THREADS <= 1024, "k8: (BM/WM)*(BN/WN) warps must be 1..32");
static_assert(BK % 16 == 0, "k8: BK must be a multiple of 16: an even number of k8 steps per stage (two register sets)");
static_assert((A_GROUPS & (A_GROUPS - 1)) == 0, "k8: BK must be 16, 32, 64, ...: a power of two (the A swizzle XORs group indices)");
static_assert(BN % 32 == 0, "k8: BN must be a multiple of 32: the B swizzle permutes 8 groups of 4 columns");
static_assert(STAGES >= 2 && STAGES <= 8, "k8: STAGES must be 2..8 (one buffer read, at least one being filled)");
static_assert((BM * BK / 4) % THREADS == 0, "k8: the A tile's float4 groups must split evenly over THREADS");
static_assert((BK * BN / 4) % THREADS == 0, "k8: the B tile's float4 groups must split evenly over THREADS");
static_assert(THREADS % A_GROUPS == 0 && A_ROW_STEP % 8 == 0,
              "k8: a thread's A chunks must be a multiple of 8 rows apart (same swizzle: one hoisted offset)");
static_assert(THREADS % B_GROUPS == 0 && B_ROW_STEP % 4 == 0,
              "k8: a thread's B chunks must be a multiple of 4 k-rows apart (same swizzle: one hoisted offset)");
static_assert(MI * NJ * 4 <= 128, "k8: more than 128 accumulators per lane, with two fragment sets, cannot stay in 255 registers");
static_assert(MIN_BLOCKS >= 1 && MIN_BLOCKS * THREADS <= 2048, "k8: MIN_BLOCKS resident blocks must fit an SM's 2048 threads");
static_assert(SMEM_BYTES <= 227 * 1024, "k8: shared memory above the 227 KB a block may have on sm_90 "
              "(sm_86/89/120: 99 KB; the launcher checks the device)");

// As[BM][BK]: k4..k7's swizzle. Float4 group q = k / 4 of row m is stored at q ^ ((m / DIV) & MASK).
__device__ __forceinline__ int a_off(int m, int k)
{
    return m * BK + ((((k >> 2) ^ ((m / A_SWZ_DIV) & A_SWZ_MASK))) << 2) + (k & 3);
}
// Bs[BK][BN]: float4 group x = n / 4 of row k is stored at x ^ f(k % 4), f = 0, 1, 4, 5 (item 2).
__device__ __forceinline__ int b_swz(int k) { return (k & 1) | ((k & 2) << 1); }
__device__ __forceinline__ int b_off(int k, int n)
{
    return k * BN + ((((n >> 2) ^ b_swz(k))) << 2) + (n & 3);
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
    const float* Bs0 = smem + STAGES * A_STAGE;                   // B buffers
    const uint32_t bs0 = smem_u32(Bs0);

    // Copies (k5..k7): every A chunk of this thread has the same column and swizzle, rows A_ROW_STEP
    // apart; every B chunk the same column, k-rows B_ROW_STEP apart (a multiple of 4: same f).
    const int a_m = tid / A_GROUPS, a_k = (tid % A_GROUPS) * 4;
    const int b_k = tid / B_GROUPS, b_n = (tid % B_GROUPS) * 4;
    const uint32_t a_dst = as0 + a_off(a_m, a_k) * sizeof(float);
    const uint32_t b_dst = bs0 + b_off(b_k, b_n) * sizeof(float);
    const float* a_src = A + (size_t)(bm + a_m) * K + a_k;
    const float* b_src = B + (size_t)b_k * N + bn + b_n;
    const int a_rowstep = A_ROW_STEP * K;       // floats between a thread's A chunks (as k7: int offsets,
    const int b_rowstep = B_ROW_STEP * N;       // 32-bit registers; matrices below 2^31 elements)
    auto issue = [&](int s, int kt) {
        const int k0 = kt * BK;
        if constexpr (VEC) {
            if (inside && k0 + BK <= K) {       // interior tile: no guards
                const float* ap = a_src + k0;
                const float* bp = b_src + (size_t)k0 * N;
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
                                ok ? b_src + (size_t)k0 * N + i * b_rowstep : B, ok);
                }
            }
        } else {
            // any shape: element by element, guarded (the same swizzled positions)
#pragma unroll 4
            for (int i = 0; i < BM * BK / THREADS; ++i) {
                const int e = tid + i * THREADS, m = e / BK, k = e % BK;
                const bool ok = bm + m < M && k0 + k < K;
                cp_async_4(as0 + (s * A_STAGE + a_off(m, k)) * sizeof(float),
                           ok ? A + (size_t)(bm + m) * K + k0 + k : A, ok);
            }
#pragma unroll 4
            for (int i = 0; i < BK * BN / THREADS; ++i) {
                const int e = tid + i * THREADS, k = e / BN, n = e % BN;
                const bool ok = k0 + k < K && bn + n < N;
                cp_async_4(bs0 + (s * B_STAGE + b_off(k, n)) * sizeof(float),
                           ok ? B + (size_t)(k0 + k) * N + bn + n : B, ok);
            }
        }
    };

    // Fragment addresses. A (k4..k7): lane l reads row wm0 + l % 16 at group (kk/4 + l/16) ^ swz,
    // = (kk/4) ^ a_x with a lane constant a_x; the m16 fragments are 16 rows apart (same swizzle).
    const int a_row = wm0 + lane % 16;
    const uint32_t a_lane = as0 + a_row * BK * sizeof(float);
    const int a_x = (lane / 16) ^ ((a_row / A_SWZ_DIV) & A_SWZ_MASK);
    // B (item 1): lane (g, t) reads float4 groups (wn0 + NJ g) / 4 + h, h < NJ / 4, of rows kk + t and
    // kk + t + 4; both rows are t mod 4, so one swizzled offset per h serves every k8 step.
    int b_lane[NJ / 4];                          // float offsets into a B buffer (row t)
#pragma unroll
    for (int h = 0; h < NJ / 4; ++h) b_lane[h] = t * BN + ((((wn0 + NJ * g) / 4 + h) ^ b_swz(t)) << 2);

    float acc[MI][NJ][4] = {};
    uint32_t fa[2][MI][4];                       // two register sets (item 3)
    uint32_t fb[2][NJ][2];

    auto load_a = [&](int set, int i, int stage, int kk) {
        ldmatrix_x4(fa[set][i], a_lane + stage * A_STAGE * sizeof(float) + i * 16 * BK * sizeof(float)
                                    + ((((kk * 8) / 4) ^ a_x) << 4));
#pragma unroll
        for (int r = 0; r < 4; ++r) fa[set][i][r] = tf32_operand(__uint_as_float(fa[set][i][r]));
    };
    // B float4 h of both rows: columns NJ g + 4h .. + 3 of the warp tile = mma 4h .. 4h + 3.
    auto load_b = [&](int set, int h, int stage, int kk) {
        const float* p = Bs0 + stage * B_STAGE + b_lane[h] + kk * 8 * BN;
        const float4 lo = *reinterpret_cast<const float4*>(p);
        const float4 hi = *reinterpret_cast<const float4*>(p + 4 * BN);
        fb[set][4 * h + 0][0] = tf32_operand(lo.x); fb[set][4 * h + 0][1] = tf32_operand(hi.x);
        fb[set][4 * h + 1][0] = tf32_operand(lo.y); fb[set][4 * h + 1][1] = tf32_operand(hi.y);
        fb[set][4 * h + 2][0] = tf32_operand(lo.z); fb[set][4 * h + 2][1] = tf32_operand(hi.z);
        fb[set][4 * h + 3][0] = tf32_operand(lo.w); fb[set][4 * h + 3][1] = tf32_operand(hi.w);
    };
    // One k8 step on register set cur; with `load`, step nkk of buffer nstage goes into set nxt in
    // between: A fragment i and B float4 pair i just before row i of the MMAs.
    auto mma_step = [&](int cur, bool load, int nxt, int nstage, int nkk) {
        if (load) {
#pragma unroll
            for (int h = MI; h < NJ / 4; ++h) load_b(nxt, h, nstage, nkk);   // only when NJ / 4 > MI
        }
#pragma unroll
        for (int i = 0; i < MI; ++i) {
            if (load) {
                load_a(nxt, i, nstage, nkk);
                if (i < NJ / 4) load_b(nxt, i, nstage, nkk);
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
#pragma unroll
    for (int i = 0; i < MI; ++i) load_a(0, i, 0, 0);
#pragma unroll
    for (int h = 0; h < NJ / 4; ++h) load_b(0, h, 0, 0);

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
            if (kk == KSTEPS - 1) {
                // STAGES + kt groups committed; tile kt+1's is older than the STAGES-2 newest. The
                // barrier also orders every warp's last reads of tile kt before the copies into its
                // buffer at kk = 0 of tile kt+1.
                cp_async_wait<STAGES - 2>();
                __syncthreads();
                rs = (rs + 1 == STAGES) ? 0 : rs + 1;
            }
            mma_step(kk % 2, kk < KSTEPS - 1 || kt + 1 < ktiles, (kk + 1) % 2, rs, (kk + 1) % KSTEPS);
        }
    }
    cp_async_wait<0>();            // only empty groups can be pending; leave no copy in flight

    // Epilogue (item 1): lane (g, t) holds, for each row, C columns wn0 + 2t NJ .. + 2 NJ - 1: d0 of
    // mma j is column 2t NJ + j, d1 column (2t + 1) NJ + j. They go out as float4s.
#pragma unroll
    for (int i = 0; i < MI; ++i)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int row = bm + wm0 + i * 16 + g + 8 * h;
            const int col0 = bn + wn0 + 2 * t * NJ;
            float* p = C + (size_t)row * N + col0;
#pragma unroll
            for (int q = 0; q < 2 * NJ / 4; ++q) {
                float v[4];
#pragma unroll
                for (int e = 0; e < 4; ++e) {
                    const int o = 4 * q + e;            // column col0 + o
                    v[e] = alpha * (o < NJ ? acc[i][o][2 * h] : acc[i][o - NJ][2 * h + 1]);
                }
                const int col = col0 + 4 * q;
                if constexpr (VEC) {
                    // N % 4 == 0 and col % 4 == 0: the float4 is wholly inside or wholly outside
                    if (inside || (row < M && col < N)) {
                        float4 o4 = make_float4(v[0], v[1], v[2], v[3]);
                        if (beta != 0.0f) {
                            const float4 c = *reinterpret_cast<const float4*>(p + 4 * q);
                            o4.x += beta * c.x; o4.y += beta * c.y; o4.z += beta * c.z; o4.w += beta * c.w;
                        }
                        *reinterpret_cast<float4*>(p + 4 * q) = o4;
                    }
                } else {
#pragma unroll
                    for (int e = 0; e < 4; ++e)
                        if (row < M && col + e < N)
                            p[4 * q + e] = beta == 0.0f ? v[e] : v[e] + beta * p[4 * q + e];
                }
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
