// k7_unroll_xor_stages.cu -- lab 7a, k7: the worklog's final kernel, and one step past it (item 4)
//
// C = alpha * A * B + beta * C, row-major FP32 in and out, TF32 tensor cores, FP32 accumulation.
// Entry points (one template):
//   tf32gemm_k7_vec     K % 4 == 0 and N % 4 == 0 (rows of A, B, C 16-byte aligned)
//   tf32gemm_k7_scalar  any M, N, K >= 1
// Launch: 1-D block of THREADS = (BM/WM)*(BN/WN)*32 threads, grid (ceil(N/BN), ceil(M/BM)) remapped
//         inside the kernel in GROUP-row bands (as k5), dynamic shared memory SMEM_BYTES.
// beta == 0 never reads C. Numerics: TF32_ROUND = 1 rounds every operand to the nearest TF32 at its
// fragment load (sm_90+: cvt.rn.tf32.f32, sm_80..89: cvt.rna; <= 2^-11 relative), TF32_ROUND = 0
// lets the tensor core truncate the FP32 bits (< 2^-10). See tf32_common.cuh and the lab's NOTES.
//
// What k7 adds over k6: nothing new in the algorithm; the compiler gets a loop it can schedule.
// 1. The k8 loop inside a tile is fully unrolled (#pragma unroll). Every shared-memory offset in it
//    is then a constant added to a hoisted per-lane base (LDSM/LDS [R + imm]), and ptxas can issue
//    the ldmatrix of step kk + 8 while the 32 HMMA of step kk run (software pipelining).
// 2. The stage bookkeeping is a mask toggle instead of "tile index % STAGES": read and write stage
//    advance as s = (s + 1) & (STAGES - 1), which for the worklog's STAGES = 2 is s ^= 1. STAGES must
//    therefore be a power of two.
// 3. With the loop unrolled, the next tile's cp.async need not go out right after the barrier, where
//    every warp issues them at once while the tensor pipe idles: they are issued behind the HMMAs of
//    the first k8 step instead (one commit group per tile as before, so the wait arithmetic of k3 holds).
// 4. The B fragments of the next k8 step are loaded into a second register set while this step's
//    HMMAs run, across the tile boundary too: a tile's last step loads its A fragments, waits for the
//    next tile and passes the barrier, loads the next tile's step-0 B fragments, then runs its HMMAs.
//    The one barrier per tile thus sits at the last step, with HMMAs left to issue around it. A's
//    fragments are not double-buffered: with both, k7 ran at 171.8 TFLOP/s against 192.6 without
//    either (4096^3; the extra 16 registers a thread were too many). B's alone gain 4.6 % / 5.8 % at
//    4096^3 / 8192^3 on an H100 (make compare).
// Everything else is k6: 2-D warp tiles, ldmatrix A fragments, swizzled tiles, cp.async pipeline,
// GROUP rasterization, float2 (STG.E.64) stores of the accumulators.
//
// SASS to look for: no IMAD/LOP3 address arithmetic between the LDSM / LDS of the main loop, only
// immediates; HMMA.1688.F32.TF32 (BK/8 x MI x NJ per tile) interleaved with the next step's LDSM; B's
// 2 NJ LDS per step issued a step ahead of the HMMAs that read them; one BAR.SYNC in the loop, among
// the last step's HMMAs (after the DEPBAR of the wait), with the next tile's step-0 LDS after it,
// between the HMMAs that remain, and one before the loop; STG.E.64 in the epilogue.

// BEGIN PARAMETERS
#ifndef BM
#define BM 256      // block tile rows: 4 warp tiles of 64 (the worklog's 256 x 32 x 128)
#endif
#ifndef BN
#define BN 128      // block tile columns: 2 warp tiles of 64; a multiple of 32 for the B swizzle
#endif
#ifndef BK
#define BK 32       // K depth of one tile: 4 unrolled k8 steps, an A row is 8 swizzled float4 groups
#endif
#ifndef WM
#define WM 64       // warp tile rows: 4 m16 fragments (one LDSM.x4 each per k8 step)
#endif
#ifndef WN
#define WN 64       // warp tile columns: 8 n8 fragments; 128 accumulators per lane
#endif
#ifndef STAGES
#define STAGES 2    // shared buffers, a power of two (mask toggle); 2 = the worklog's double buffer
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
// What bounds k7 (make bounds KERNEL=k7, common/bounds.py): builds that leave out one part of the work.
// Their results are WRONG by design; only their times mean something. 1: no copies after the prologue
// (every tile is the prologue's), 2: no mma.sync (the fragments are still loaded and converted),
// 3: no copies and no wait or barrier in the loop. 0: k7. (Probe 2 XORs the fragments into one register
// written to C, so that ptxas keeps their loads: an LOP3 per few fragments instead of 32 HMMA a step.)
#ifndef K7_PROBE
#define K7_PROBE 0
#endif

#define THREADS ((BM / WM) * (BN / WN) * 32)
#define SMEM_BYTES (STAGES * (BM * BK + BK * BN) * sizeof(float))
// END PARAMETERS

#include "tf32_common.cuh"

namespace k7 {

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

static_assert(BM > 0 && BN > 0 && BK > 0 && WM > 0 && WN > 0 && STAGES > 0 && GROUP > 0,
              "k7: every tile parameter must be positive");
static_assert(BM % WM == 0 && BN % WN == 0, "k7: the block tile must split into whole warp tiles");
static_assert(WM % 16 == 0, "k7: WM must be a multiple of 16, the M of one mma");
static_assert(WN % 8 == 0, "k7: WN must be a multiple of 8, the N of one mma");
static_assert(THREADS >= 32 && THREADS <= 1024, "k7: (BM/WM)*(BN/WN) warps must be 1..32");
static_assert(BK % 8 == 0, "k7: BK must be a multiple of 8, the K of one mma");
static_assert((A_GROUPS & (A_GROUPS - 1)) == 0, "k7: BK must be 8, 16, 32, 64, ...: a power of two (the A swizzle XORs group indices)");
static_assert(BN % 32 == 0, "k7: BN must be a multiple of 32: the B swizzle permutes 8 groups of 4 columns");
static_assert(WN % 32 == 0 || BN == WN, "k7: WN must be a multiple of 32 (warp columns aligned to the B swizzle)");
static_assert(STAGES >= 2 && STAGES <= 8 && (STAGES & (STAGES - 1)) == 0,
              "k7: STAGES must be 2, 4 or 8: the stage index advances by a mask toggle");
static_assert((BM * BK / 4) % THREADS == 0, "k7: the A tile's float4 groups must split evenly over THREADS");
static_assert((BK * BN / 4) % THREADS == 0, "k7: the B tile's float4 groups must split evenly over THREADS");
static_assert(THREADS % A_GROUPS == 0 && A_ROW_STEP % 8 == 0,
              "k7: a thread's A chunks must be a multiple of 8 rows apart (same swizzle: one hoisted offset)");
static_assert(THREADS % B_GROUPS == 0 && B_ROW_STEP % 4 == 0,
              "k7: a thread's B chunks must be a multiple of 4 k-rows apart (same swizzle: one hoisted offset)");
static_assert(MI * NJ * 4 <= 160, "k7: more than 160 accumulators per lane cannot stay in 255 registers");
static_assert(MIN_BLOCKS >= 1 && MIN_BLOCKS * THREADS <= 2048, "k7: MIN_BLOCKS resident blocks must fit an SM's 2048 threads");
static_assert(SMEM_BYTES <= 227 * 1024, "k7: shared memory above the 227 KB a block may have on sm_90 "
              "(sm_86/89/120: 99 KB; the launcher checks the device)");
// END PARAMETERS

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

    float acc[MI][NJ][4] = {};
    uint32_t sink = 0;                          // K7_PROBE = 2: what the loaded fragments feed instead of mma

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

    // The fragments of one k8 step (st: the stage to read, kk: the step's k in the tile), converted to
    // TF32 as they are loaded. Every offset is a constant once the step loop is unrolled.
    auto load_a = [&](uint32_t (&a)[MI][4], int st, int kk) {
        const uint32_t a_k8 = a_lane + st * A_STAGE * sizeof(float) + (((kk / 4) ^ a_x) << 4);
#pragma unroll
        for (int i = 0; i < MI; ++i) {
            ldmatrix_x4(a[i], a_k8 + i * 16 * BK * sizeof(float));
#pragma unroll
            for (int r = 0; r < 4; ++r) a[i][r] = tf32_operand(__uint_as_float(a[i][r]));
        }
    };
    auto load_b = [&](uint32_t (&b)[NJ][2], int st, int kk) {
        const float* b_k8 = Bs + st * B_STAGE + kk * BN;
#pragma unroll
        for (int j = 0; j < NJ; ++j) {
            const float* p = b_k8 + b_lane[j % 4] + 32 * (j / 4);
            b[j][0] = tf32_operand(p[0]);
            b[j][1] = tf32_operand(p[4 * BN]);
        }
    };

    // Main loop. One barrier per tile, at its last k8 step: B(kt) (B(-1) is before the loop). A step
    // loads its A fragments, then the B fragments of the next step into the other register set, then
    // runs its HMMAs (item 4); at a tile's last step the next step is step 0 of the next tile, loaded
    // after B(kt). Why one barrier per tile is enough:
    //  - tile kt's stage is read only between B(kt-1) (its step-0 B fragments are loaded right after
    //    it) and B(kt) (its last A fragments are loaded right before it);
    //  - issue() in tile kt writes tile kt+STAGES-1 into the stage of tile kt-1, after B(kt-1), by
    //    which every warp has read tile kt-1;
    //  - at B(kt) this thread has committed tiles 0 .. kt+STAGES-1 (one group each, in order), so
    //    wait<STAGES-2> has tiles 0 .. kt+1 landed for it, and B(kt) for every thread. Hence, when a
    //    tile is one k8 step (BK = 8), its copies go out before that wait rather than behind its HMMAs.
    constexpr int STEPS = BK / 8;               // k8 steps per tile: 1 or even (BK is a power of two)
    uint32_t b[2][NJ][2];                       // B fragments of step s in set s % 2
    int rs = 0, ws = STAGES - 1;                // read and write stage: mask toggles
    if (K7_PROBE != 3) {
        cp_async_wait<STAGES - 2>();            // tile 0 has landed (this thread's copies) ...
        __syncthreads();                        // ... everyone's: B(-1)
    }
    load_b(b[0], 0, 0);
#pragma unroll 1
    for (int kt = 0; kt < ktiles; ++kt) {
        const bool more = kt + STAGES - 1 < ktiles && K7_PROBE != 1 && K7_PROBE != 3;
        auto copy_ahead = [&] {                 // tile kt+STAGES-1 into the stage of tile kt-1 (item 3)
            if (more) issue(ws, kt + STAGES - 1);
            cp_async_commit();
        };
#pragma unroll
        for (int s = 0; s < STEPS; ++s) {       // fully unrolled: set indices and offsets are constants
            const int kk = 8 * s, cur = s % 2, nxt = cur ^ 1;
            uint32_t a[MI][4];
            load_a(a, rs, kk);
            if (s + 1 < STEPS) {
                load_b(b[nxt], rs, kk + 8);
            } else {
                if (STEPS == 1) copy_ahead();   // BK = 8: before the wait (see above)
                if (K7_PROBE != 3) {
                    cp_async_wait<STAGES - 2>();    // tile kt+1 has landed (this thread's copies) ...
                    __syncthreads();                // ... everyone's, and no warp reads tile kt any more: B(kt)
                }
                // The last tile loads too, with no branch (a branch kept ptxas from moving these loads'
                // conversions behind the HMMAs below): its own stage again, into registers never used.
                load_b(b[nxt], kt + 1 < ktiles ? (rs + 1) & (STAGES - 1) : rs, 0);
            }
#pragma unroll
            for (int j = 0; j < NJ; ++j) {
#pragma unroll
                for (int i = 0; i < MI; ++i)
                    if (K7_PROBE != 2) mma_tf32_16x8x8(acc[i][j], a[i], b[cur][j]);
                if (K7_PROBE == 2) sink ^= b[cur][j][0] ^ b[cur][j][1];
            }
            if (K7_PROBE == 2) {                // keep the A fragments alive too (ptxas drops dead LDSM)
#pragma unroll
                for (int i = 0; i < MI; ++i) sink ^= a[i][0] ^ a[i][1] ^ a[i][2] ^ a[i][3];
            }
            if (s == 0 && STEPS > 1) copy_ahead();  // behind the first step's HMMAs (item 3)
        }
        if constexpr (STEPS == 1) {             // BK = 8: the next tile's step 0 went to set 1, move it to 0
#pragma unroll
            for (int j = 0; j < NJ; ++j) { b[0][j][0] = b[1][j][0]; b[0][j][1] = b[1][j][1]; }
        }
        rs = (rs + 1) & (STAGES - 1);
        ws = (ws + 1) & (STAGES - 1);
    }

    if (K7_PROBE == 2) acc[0][0][0] = __uint_as_float(sink);
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

}  // namespace k7

extern "C" __global__ void __launch_bounds__(THREADS, MIN_BLOCKS)
tf32gemm_k7_vec(int M, int N, int K, float alpha, const float* __restrict__ A,
                const float* __restrict__ B, float beta, float* __restrict__ C)
{
    k7::body<true>(M, N, K, alpha, A, B, beta, C);
}

extern "C" __global__ void __launch_bounds__(THREADS, MIN_BLOCKS)
tf32gemm_k7_scalar(int M, int N, int K, float alpha, const float* __restrict__ A,
                   const float* __restrict__ B, float beta, float* __restrict__ C)
{
    k7::body<false>(M, N, K, alpha, A, B, beta, C);
}
