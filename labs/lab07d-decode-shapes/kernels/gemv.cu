// gemv.cu -- lab 7d: decode's shape, a GEMV that is won or lost on bytes (chapter 8, section 8)
//
// C (M x N, FP32) = A (M x K) . B (K x N), row-major, FP32 accumulation, for M = 1 .. 16 (any M
// works: blockIdx.y walks groups of BM = 16 rows). One template, two element types: the FP16 entry
// points read half the bytes of the FP32 ones, and at M = 1 bytes are all that matters.
//
// Entry points (T = fp32 / fp16, MT = rows of A per pass = 1, 4, 8, 16):
//   gemv_<T>_m<MT>_vec      N % 4 == 0 (fp32) / N % 8 == 0 (fp16): every row of B 16-byte aligned,
//                           weights read with one 128-bit load per thread per row
//   gemv_<T>_m<MT>_scalar   any N: the same loop with element loads (slow; for odd N only)
// M dispatch (the driver's job): the smallest MT >= M, i.e. M = 1 -> m1, 2..4 -> m4, 5..8 -> m8,
// 9.. -> m16. Any entry point is correct for any M (a block loops over its BM = 16 rows in passes of
// MT, reading its weights once per pass), so the choice is speed only: accumulators cost MT x VEC
// registers, and FFMAs per weight byte grow with MT.
// Launch: 1-D block of THREADS = WARPS * 32 = 256, grid (ceil(N / BN), ceil(M / BM), 1), no dynamic
// shared memory (static: the epilogue's per-warp partial sums).
// Shapes: any M, N, K >= 1. A and C rows need no alignment; A is read with vector loads only when
// K % U == 0 (U = rows per step, see ku_for; decided inside the kernel, warp-uniform), else element
// by element.
//
// The idea. Every weight is used by M outputs only, so at M = 1 the kernel does 2 FLOP per weight:
// it is a memory copy with arithmetic on the side, and its speed is the bandwidth it reaches. Three
// things decide that:
//  1. Each weight is read exactly once, with 128-bit loads (LDG.E.128), in whole 32-byte sectors.
//     A block owns BN = 32 consecutive columns of B for ALL of K: per row, BN / VEC threads read
//     one 16-byte group each (fp32: 8 threads x 16 B = 128 B; fp16: 4 threads x 16 B = 64 B).
//  2. Enough bytes in flight. Little's law: 4 TB/s x ~1 us of DRAM latency is ~4 MB in flight on
//     the GPU, ~30 KB per SM. With BN = 32, N = 4096 gives only 128 blocks, one per SM; so each
//     thread issues KU = 8 independent 16-byte loads before it uses any (8 x 16 B x 256 threads =
//     32 KB per block), and there is no __syncthreads in the K loop that would drain them.
//  3. The rows of A cost nothing. A thread owns KU consecutive rows of B per step, so the MT x KU
//     values of A it needs are MT contiguous runs: one or two vector loads each (L1/L2 hits: A is
//     small and every block reads the same A). No shared memory in the K loop at all. All of a
//     step's loads, weights and A, are issued before its first FFMA, and none sits under a branch:
//     a load of row m under `if (m < rows)` stays in its basic block, waits for row m - 1's FFMAs,
//     and the step then costs MT L2 latencies (rows past M read row M - 1 instead; never stored).
// Per step a thread therefore does KU LDG.E.128 of weights, MT vector loads of A, and
// MT x KU x VEC FFMA. At M = 16 in FP16 that is 128 FFMA per 16 weight bytes: an SM moving its
// share of 4 TB/s (about 15 B per clock) then needs ~120 of its 128 FFMA lanes per clock, so
// M = 16 FP16 sits at the FFMA roof, not the memory roof: for FP16 at M >= 9 use gemv_fp16_tc.cu.
// Registers: MT x VEC accumulators + MT x KU values of A + KU x VEC weights must fit in 255, so the
// rows per step drop with MT: KU (8) for MT <= 4, 4 for MT = 8 (and fp32 MT = 16), 2 for fp16 MT = 16.
//
// Reduction, fixed order (bitwise repeatable): the THREADS / (BN / VEC) "row threads" that share a
// column group each hold partial sums; shuffle-xor down the lanes of a warp (3 steps fp16, 2 fp32),
// then one shared-memory slot per warp, summed in warp order by one thread per output.
//
// SASS to look for (make sass): in the _vec K loop, KU LDG.E.128 of B (fp16: also HADD2.F32 or
// F2F-free conversions, 2 per half2), LDG.E.128 / LDG.E.64 of A, MT x KU x VEC FFMA, no BAR.SYNC,
// no LDS/STS (shared memory appears only in the epilogue: STS, BAR.SYNC, LDS), SHFL.BFLY in the
// epilogue, no LDL/STL. ncu: dram__bytes_read.sum per second against the copy bandwidth; the
// long_scoreboard stall should dominate (waiting on DRAM is the job).

#include <cuda_fp16.h>

// ---- tile parameters -----------------------------------------------------------------------------
#ifndef BN
#define BN 32       // columns of B per block: N = 4096 -> 128 blocks ~ one per SM of 132
#endif
#ifndef BM
#define BM 16       // rows of A (and C) per block; blockIdx.y walks groups of BM rows
#endif
#ifndef KU
#define KU 8        // rows of B per thread per step: 8 independent 16-byte loads in flight
#endif

#ifndef WARPS
#define WARPS 8     // warps per block: 256 threads = 64 (fp16) or 32 (fp32) row threads per column group
#endif

#define THREADS (WARPS * 32)
#define SMEM_BYTES 0    // static shared memory only (the epilogue's per-warp partial sums)

static_assert(BN > 0 && BM > 0 && KU > 0 && WARPS > 0, "gemv: BN, BM, KU, WARPS must be positive");
static_assert(THREADS <= 1024, "gemv: at most 32 warps per block");
static_assert(WARPS * BM * BN * 4 <= 48 * 1024,
              "gemv: the epilogue's per-warp partial sums (WARPS x 16 rows x BN floats) must fit in 48 KB of static shared memory");
static_assert(BN % 8 == 0, "gemv: BN must be a multiple of 8 (whole 16-byte groups of fp16 and of fp32)");
static_assert(BN / 4 <= 32 && 32 % (BN / 4) == 0,
              "gemv: the BN / 4 fp32 column threads of a row must divide a warp (BN = 8, 16, 32, 64, 128)");
static_assert(BM % 16 == 0, "gemv: BM must be a multiple of 16, the largest MT pass");
static_assert(KU == 1 || KU == 2 || KU == 4 || KU == 8 || KU == 16, "gemv: KU must be 1, 2, 4, 8 or 16 (A is read as KU-element vectors)");

namespace gemv {

template <typename T> struct elem;
template <> struct elem<float> {
    static constexpr int VEC = 4;   // elements per 16-byte load
    __device__ static float to_f(float x) { return x; }
};
template <> struct elem<__half> {
    static constexpr int VEC = 8;
    __device__ static float to_f(__half x) { return __half2float(x); }
};

// Rows of B per thread per step: KU, fewer for large MT, so that MT*VEC accumulators, MT*U values of
// A and U*VEC weights stay within 255 registers.
template <int MT, int VEC> struct ku_for {
    static constexpr int value = (MT * VEC >= 128 && KU > 2) ? 2 : (MT >= 8 && KU > 4) ? 4 : KU;
};

// v[0..VEC) = B[row][col .. col + VEC), as floats; `valid` columns exist (VEC = all).
template <typename T, bool VEC_B>
__device__ __forceinline__ void load_b(float* v, const T* __restrict__ p, int valid)
{
    constexpr int VEC = elem<T>::VEC;
    if constexpr (VEC_B) {
        const uint4 q = __ldg(reinterpret_cast<const uint4*>(p));   // LDG.E.128
        if constexpr (sizeof(T) == 4) {
            v[0] = __uint_as_float(q.x); v[1] = __uint_as_float(q.y);
            v[2] = __uint_as_float(q.z); v[3] = __uint_as_float(q.w);
        } else {
            const unsigned w[4] = {q.x, q.y, q.z, q.w};
#pragma unroll
            for (int i = 0; i < 4; ++i) {
                __half2 h = *reinterpret_cast<const __half2*>(&w[i]);
                float2 f = __half22float2(h);
                v[2 * i] = f.x; v[2 * i + 1] = f.y;
            }
        }
    } else {
#pragma unroll
        for (int i = 0; i < VEC; ++i) v[i] = i < valid ? elem<T>::to_f(p[i]) : 0.0f;
    }
}

// a[0..U) = A[row][k .. k + U) as floats. VEC_A: one vector load of U elements (aligned: K % U == 0
// and k % U == 0); `valid` elements exist.
template <typename T, int U, bool VEC_A>
__device__ __forceinline__ void load_a(float* a, const T* __restrict__ p, int valid)
{
    if constexpr (VEC_A) {
        constexpr int BYTES = U * (int)sizeof(T);
        if constexpr (BYTES >= 16) {
#pragma unroll
            for (int c = 0; c < BYTES / 16; ++c) {
                const uint4 q = __ldg(reinterpret_cast<const uint4*>(p) + c);
                const unsigned w[4] = {q.x, q.y, q.z, q.w};
#pragma unroll
                for (int i = 0; i < 4; ++i) {
                    if constexpr (sizeof(T) == 4) {
                        a[c * 4 + i] = __uint_as_float(w[i]);
                    } else {
                        float2 f = __half22float2(*reinterpret_cast<const __half2*>(&w[i]));
                        a[c * 8 + 2 * i] = f.x; a[c * 8 + 2 * i + 1] = f.y;
                    }
                }
            }
        } else if constexpr (BYTES == 8) {
            const uint2 q = __ldg(reinterpret_cast<const uint2*>(p));
            const unsigned w[2] = {q.x, q.y};
#pragma unroll
            for (int i = 0; i < 2; ++i) {
                if constexpr (sizeof(T) == 4) {
                    a[i] = __uint_as_float(w[i]);
                } else {
                    float2 f = __half22float2(*reinterpret_cast<const __half2*>(&w[i]));
                    a[2 * i] = f.x; a[2 * i + 1] = f.y;
                }
            }
        } else {
#pragma unroll
            for (int i = 0; i < U; ++i) a[i] = elem<T>::to_f(p[i]);
        }
    } else {
#pragma unroll
        for (int i = 0; i < U; ++i) a[i] = i < valid ? elem<T>::to_f(p[i]) : 0.0f;
    }
}

// One step: rows k .. k + U of B (U = ku_for<MT, VEC>) for this thread's column group, all MT rows of A.
// FULL: all U rows exist (interior); else guarded by K.
template <typename T, int MT, bool VEC_B, bool VEC_A, bool FULL>
__device__ __forceinline__ void step(float (&acc)[MT][elem<T>::VEC], const T* __restrict__ A,
                                     const T* __restrict__ B, int N, int K, int m0, int rows,
                                     int k, int col, int cvalid)
{
    constexpr int VEC = elem<T>::VEC;
    constexpr int U = ku_for<MT, VEC>::value;
    // BEGIN SOLUTION gemv-step: rows k .. k + U of B (load_b) and the MT x U values of A (load_a), all in flight before the first fmaf into acc; in the tail (FULL false) only K - k rows exist
    const int kvalid = FULL ? U : K - k;
    float b[U][VEC];
#pragma unroll
    for (int u = 0; u < U; ++u) {   // all U weight loads first: U x 16 bytes in flight per thread
        if (FULL || u < kvalid) load_b<T, VEC_B>(b[u], B + (size_t)(k + u) * N + col, cvalid);
        else {
#pragma unroll
            for (int i = 0; i < VEC; ++i) b[u][i] = 0.0f;
        }
    }
    // Then all MT x U values of A, before any FFMA: no branch between the loads, so they are in
    // flight together (a load under `if (m < rows)` would wait for the FFMAs of row m - 1, one L2
    // latency per row). Rows past M read row M - 1 instead: finite values whose sums are never stored.
    float a[MT][U];
#pragma unroll
    for (int m = 0; m < MT; ++m) {
        const T* pa = A + (size_t)(m0 + min(m, rows - 1)) * K + k;
        if (FULL) load_a<T, U, VEC_A>(a[m], pa, U);
        else      load_a<T, U, false>(a[m], pa, kvalid);
    }
#pragma unroll
    for (int m = 0; m < MT; ++m)
#pragma unroll
        for (int u = 0; u < U; ++u)
#pragma unroll
            for (int i = 0; i < VEC; ++i) acc[m][i] = fmaf(a[m][u], b[u][i], acc[m][i]);
    // END SOLUTION gemv-step
}

template <typename T, int MT, bool VEC_B>
__device__ __forceinline__ void gemv_body(int M, int N, int K, const T* __restrict__ A,
                                          const T* __restrict__ B, float* __restrict__ C)
{
    constexpr int VEC = elem<T>::VEC;
    constexpr int U = ku_for<MT, VEC>::value;
    constexpr int COLT = BN / VEC;              // threads across the block's columns (8 fp32, 4 fp16)
    constexpr int ROWT = THREADS / COLT;        // row threads: 32 (fp32), 64 (fp16)
    constexpr int STEP = ROWT * U;              // rows of B the block consumes per step
    static_assert(THREADS % COLT == 0 && 32 % COLT == 0, "gemv: column threads must tile a warp");

    __shared__ float part[WARPS][MT][BN];       // per-warp partial sums, epilogue only

    const int tid = threadIdx.x;
    const int tx = tid % COLT;                  // column group
    const int ty = tid / COLT;                  // row thread: owns rows ty*U .. ty*U+U-1 of each step
    const int lane = tid % 32, warp = tid / 32;
    const int col = blockIdx.x * BN + tx * VEC;
    const int cvalid = N - col;                 // columns of this group inside B (>= VEC: all)
    const bool vec_a = (K % U) == 0;            // A rows aligned to U elements: vector loads of A

    for (int m0 = blockIdx.y * BM; m0 < min(M, (int)(blockIdx.y + 1) * BM); m0 += MT) {
        const int rows = min(MT, M - m0);
        float acc[MT][VEC];
#pragma unroll
        for (int m = 0; m < MT; ++m)
#pragma unroll
            for (int i = 0; i < VEC; ++i) acc[m][i] = 0.0f;

        if (cvalid > 0) {                       // a column group wholly right of N reads nothing
            int k = ty * U;
            if (vec_a) {
                for (; k + U <= K; k += STEP) step<T, MT, VEC_B, true, true>(acc, A, B, N, K, m0, rows, k, col, cvalid);
            } else {
                for (; k + U <= K; k += STEP) step<T, MT, VEC_B, false, true>(acc, A, B, N, K, m0, rows, k, col, cvalid);
            }
            if (k < K) step<T, MT, VEC_B, false, false>(acc, A, B, N, K, m0, rows, k, col, cvalid);
        }

        // Sum over the row threads of a warp (lanes with the same tx): butterfly, fixed order.
#pragma unroll
        for (int off = COLT; off < 32; off *= 2)
#pragma unroll
            for (int m = 0; m < MT; ++m)
#pragma unroll
                for (int i = 0; i < VEC; ++i) acc[m][i] += __shfl_xor_sync(0xffffffffu, acc[m][i], off);
        if (lane < COLT) {
#pragma unroll
            for (int m = 0; m < MT; ++m)
#pragma unroll
                for (int i = 0; i < VEC; ++i) part[warp][m][tx * VEC + i] = acc[m][i];
        }
        __syncthreads();
        for (int o = tid; o < MT * BN; o += THREADS) {   // one thread per output, warps in order
            const int m = o / BN, c = o % BN;
            const int n = blockIdx.x * BN + c;
            if (m < rows && n < N) {
                float s = 0.0f;
#pragma unroll
                for (int w = 0; w < WARPS; ++w) s += part[w][m][c];
                C[(size_t)(m0 + m) * N + n] = s;
            }
        }
        __syncthreads();                        // part[] is reused by the next pass
    }
}

}  // namespace gemv

// __launch_bounds__(THREADS, 1): one block per SM is all the register budget must allow (MT = 16
// needs the registers; more blocks per SM come for free when MT is small). Without minBlocks = 1
// ptxas may cap the registers to fit more blocks and spill (seen on sm_120 for MT = 8).
#define GEMV_ENTRY(NAME, T, MT, VEC_B)                                                             \
    extern "C" __global__ void __launch_bounds__(THREADS, 1)                                       \
    NAME(int M, int N, int K, const T* __restrict__ A, const T* __restrict__ B, float* __restrict__ C) \
    { gemv::gemv_body<T, MT, VEC_B>(M, N, K, A, B, C); }

GEMV_ENTRY(gemv_fp32_m1_vec, float, 1, true)
GEMV_ENTRY(gemv_fp32_m4_vec, float, 4, true)
GEMV_ENTRY(gemv_fp32_m8_vec, float, 8, true)
GEMV_ENTRY(gemv_fp32_m16_vec, float, 16, true)
GEMV_ENTRY(gemv_fp32_m1_scalar, float, 1, false)
GEMV_ENTRY(gemv_fp32_m4_scalar, float, 4, false)
GEMV_ENTRY(gemv_fp32_m8_scalar, float, 8, false)
GEMV_ENTRY(gemv_fp32_m16_scalar, float, 16, false)

GEMV_ENTRY(gemv_fp16_m1_vec, __half, 1, true)
GEMV_ENTRY(gemv_fp16_m4_vec, __half, 4, true)
GEMV_ENTRY(gemv_fp16_m8_vec, __half, 8, true)
GEMV_ENTRY(gemv_fp16_m16_vec, __half, 16, true)
GEMV_ENTRY(gemv_fp16_m1_scalar, __half, 1, false)
GEMV_ENTRY(gemv_fp16_m4_scalar, __half, 4, false)
GEMV_ENTRY(gemv_fp16_m8_scalar, __half, 8, false)
GEMV_ENTRY(gemv_fp16_m16_scalar, __half, 16, false)
