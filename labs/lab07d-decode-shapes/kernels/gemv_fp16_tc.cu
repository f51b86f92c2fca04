// gemv_fp16_tc.cu -- lab 7d: the FP16 GEMV on tensor cores, for M = 9 .. 16 (chapter 8, section 8)
//
// C (FP32, M x N) = A (FP16, M x K) . B (FP16, K x N), row-major, FP32 accumulation, any M, N, K >= 1
// (blockIdx.y walks groups of BM = 16 rows of A; the kernel is meant for 9 <= M <= 16).
// Entry points:
//   gemv_fp16_tc_vec     N % 8 == 0: each weight read once with a 128-bit load (LDG.E.128)
//   gemv_fp16_tc_scalar  any N: element loads of the weights
// Launch: 1-D block of THREADS = WARPS * 32 = 512, grid (ceil(N / BN), ceil(M / BM), 1), no dynamic
// shared memory (static: 32 KB for the cross-warp sums).
//
// What it adds over gemv.cu. gemv.cu does the products with FFMA: at M = 16 that is 16 FFMA per
// weight, 128 per 16-byte load, plus a conversion of every weight and of every value of A it uses,
// and an SM moving its share of ~4 TB/s (15 bytes per clock) runs out of issue slots before the
// memory runs out of bandwidth. One mma.sync m16n8k16 does 16 x 8 x 16 multiply-adds: at M = 16 the
// A fragment is the 16 rows of A, the B fragment 16 rows x 8 columns of weights, and the products
// cost a handful of instructions per 64 bytes of weights.
//
// The trick: the B fragment wants, in each 32-bit register, two weights of the SAME column and
// neighbouring k (rows 2t, 2t+1 of the 16 x 8 block, column g = lane / 4, t = lane % 4), but a
// 128-bit load of row-major B gives 8 neighbouring COLUMNS of one row. Two freedoms fix that
// without shared memory or ldmatrix:
//   * the columns of one mma need not be neighbours in C: lane (g, t) loads columns 8g .. 8g + 7
//     of rows k0 + {2t, 2t+1, 2t+8, 2t+9} (four LDG.E.128, each warp load = 4 rows x 128 bytes),
//     and mma number c (c = 0..7) takes column 8g + c as its "column g": 8 mma per 16 rows cover the
//     warp's 64 columns;
//   * the two halves for one register come from two rows' loads: __byte_perm (PRMT) picks the low
//     (c even) or high (c odd) halves of the same word of both rows: 16 PRMT per 8 mma.
// The A fragment (rows g, g + 8; k0 + 2t, +1, +8, +9) is read from global memory (L1/L2 hits: all
// blocks read the same 16 x K values), 4 x 32 bits per step, with clamped addresses instead of
// branches so that all loads of an iteration are in flight at once. Output of mma c at (row, col 2t + i)
// belongs to C column 8 (2t + i) + c.
//
// Tiles: BN = 64 columns per block (8 lane groups x 8 halves: the fragment layout fixes it), 16
// warps per block share those columns and split K (warp w takes 16-row steps w, w + 16, ...), two
// steps per loop iteration: 8 independent 16-byte loads per thread in flight, 64 KB per block.
// N = 4096 gives only 64 blocks (half the SMs, each pulling twice its share of the bandwidth),
// N = 8192 gives 128.
// Cross-warp sums in a fixed order through 8 shared slots of 16 x 64 floats: warps 0-7 store,
// warps 8-15 add (slot w % 8), then each output is the sum of the 8 slots in order: bitwise repeatable.
//
// SASS to look for: in the K loop LDG.E.128.CONSTANT (8 per iteration), PRMT (32), HMMA.16816.F32
// (16), LDG.E of A (8); no LDS/STS/BAR in the loop; no LDL/STL.

#include <cuda_fp16.h>

#include "fp16_common.cuh"   // gather8, mma16816

#ifndef BN
#define BN 64       // columns per block: 8 lane groups x 8 halves of one 128-bit load; fixed by the fragment
#endif
#ifndef BM
#define BM 16       // rows of A per block: the M of one mma.m16n8k16
#endif
#ifndef WARPS
#define WARPS 16    // warps per block, splitting K: 16 x 32 threads x 8 loads x 16 B = 64 KB in flight
#endif
#ifndef KSTEPS
#define KSTEPS 2    // 16-row steps per warp per loop iteration (loads issued before any mma)
#endif

#define THREADS (WARPS * 32)
#define SMEM_BYTES 0    // static: 8 slots x BM x BN floats = 32 KB

static_assert(BN == 64, "gemv_fp16_tc: BN must be 64 (8 groups of lanes x 8 halves per 128-bit load)");
static_assert(BM == 16, "gemv_fp16_tc: BM must be 16, the M of mma.m16n8k16");
static_assert(WARPS % 8 == 0 && WARPS <= 32, "gemv_fp16_tc: WARPS must be 8, 16, 24 or 32 (8 shared slots)");
static_assert(KSTEPS >= 1 && KSTEPS <= 4, "gemv_fp16_tc: KSTEPS 1 to 4 (4 x 4 registers of weights each)");

namespace gemv_tc {

constexpr int SLOTS = 8;


// Two halves A[row][k], A[row][k + 1] packed (low = k). Never a branch, never out of bounds: the
// caller clamps row to M - 1 (rows past M are computed and never stored), and k past K is clamped
// here (those columns of A meet rows of B that read as zero, and the values read are finite).
template <bool PAIR>
__device__ __forceinline__ unsigned load_a2(const __half* __restrict__ A_row, int K, int k)
{
    if (PAIR)   // K even, k even: one aligned 32-bit load
        return __ldg(reinterpret_cast<const unsigned*>(A_row + min(k, K - 2)));
    const unsigned short* u = reinterpret_cast<const unsigned short*>(A_row);
    const unsigned lo = __ldg(u + min(k, K - 1));
    const unsigned hi = __ldg(u + min(k + 1, K - 1));
    return lo | (hi << 16);
}

// 8 halves of row k of B from column col; zeros for a missing row or columns.
template <bool VEC>
__device__ __forceinline__ uint4 load_b8(const __half* __restrict__ B, int N, int K, int k, int col)
{
    if (k >= K || col >= N) return make_uint4(0, 0, 0, 0);
    const __half* p = B + (size_t)k * N + col;
    if (VEC) return __ldg(reinterpret_cast<const uint4*>(p));   // N % 8 == 0: whole group inside
    return fp16::gather8(p, N - col);
}

__device__ __forceinline__ unsigned word(const uint4& q, int i)
{
    return i == 0 ? q.x : i == 1 ? q.y : i == 2 ? q.z : q.w;
}

template <bool VEC, bool PAIR>
__device__ __forceinline__ void k_loop(float (&acc)[8][4], const __half* __restrict__ A,
                                       const __half* __restrict__ B, int M, int N, int K,
                                       int m0, int col, int warp, int g, int t)
{
    constexpr int STRIDE = WARPS * 16;             // rows between a warp's consecutive steps
    const __half* a_lo = A + (size_t)min(m0 + g, M - 1) * K;       // fragment rows g and g + 8
    const __half* a_hi = A + (size_t)min(m0 + g + 8, M - 1) * K;
    for (int k0 = warp * 16; k0 < K; k0 += KSTEPS * STRIDE) {
        uint4 q[KSTEPS][4];
        unsigned a[KSTEPS][4];
#pragma unroll
        for (int s = 0; s < KSTEPS; ++s) {         // all weight loads first, then all of A
            const int kb = k0 + s * STRIDE;
            q[s][0] = load_b8<VEC>(B, N, K, kb + 2 * t, col);
            q[s][1] = load_b8<VEC>(B, N, K, kb + 2 * t + 1, col);
            q[s][2] = load_b8<VEC>(B, N, K, kb + 2 * t + 8, col);
            q[s][3] = load_b8<VEC>(B, N, K, kb + 2 * t + 9, col);
        }
#pragma unroll
        for (int s = 0; s < KSTEPS; ++s) {
            const int kb = k0 + s * STRIDE;
            a[s][0] = load_a2<PAIR>(a_lo, K, kb + 2 * t);
            a[s][1] = load_a2<PAIR>(a_hi, K, kb + 2 * t);
            a[s][2] = load_a2<PAIR>(a_lo, K, kb + 2 * t + 8);
            a[s][3] = load_a2<PAIR>(a_hi, K, kb + 2 * t + 8);
        }
#pragma unroll
        for (int s = 0; s < KSTEPS; ++s) {
            if (k0 + s * STRIDE >= K) break;       // warp-uniform
#pragma unroll
            for (int c = 0; c < 8; ++c) {
                const unsigned sel = (c & 1) ? 0x7632u : 0x5410u;   // high or low halves of both words
                const unsigned b[2] = {__byte_perm(word(q[s][0], c / 2), word(q[s][1], c / 2), sel),
                                       __byte_perm(word(q[s][2], c / 2), word(q[s][3], c / 2), sel)};
                fp16::mma16816(acc[c], a[s], b);
            }
        }
    }
}

template <bool VEC>
__device__ __forceinline__ void gemv_tc_body(int M, int N, int K, const __half* __restrict__ A,
                                             const __half* __restrict__ B, float* __restrict__ C)
{
    __shared__ float slot[SLOTS][BM][BN];
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int g = lane / 4, t = lane % 4;
    const int m0 = blockIdx.y * BM;
    const int bn = blockIdx.x * BN;
    const int col = bn + 8 * g;

    float acc[8][4];
#pragma unroll
    for (int c = 0; c < 8; ++c)
#pragma unroll
        for (int i = 0; i < 4; ++i) acc[c][i] = 0.0f;

    if (K % 2 == 0) k_loop<VEC, true>(acc, A, B, M, N, K, m0, col, warp, g, t);
    else            k_loop<VEC, false>(acc, A, B, M, N, K, m0, col, warp, g, t);

    // acc[c][i]: row g + 8 (i / 2), column 8 (2t + i % 2) + c of the block's 64.
#pragma unroll
    for (int r = 0; r < WARPS / SLOTS; ++r) {
        if (warp / SLOTS == r) {
            float (*s)[BN] = slot[warp % SLOTS];
#pragma unroll
            for (int c = 0; c < 8; ++c)
#pragma unroll
                for (int i = 0; i < 4; ++i) {
                    float& d = s[g + 8 * (i / 2)][8 * (2 * t + i % 2) + c];
                    d = r == 0 ? acc[c][i] : d + acc[c][i];
                }
        }
        __syncthreads();
    }
    for (int o = tid; o < BM * BN; o += THREADS) {
        const int m = o / BN, c = o % BN;
        if (m0 + m < M && bn + c < N) {
            float sum = 0.0f;
#pragma unroll
            for (int w = 0; w < SLOTS; ++w) sum += slot[w][m][c];
            C[(size_t)(m0 + m) * N + bn + c] = sum;
        }
    }
}

}  // namespace gemv_tc

extern "C" __global__ void __launch_bounds__(THREADS, 1)
gemv_fp16_tc_vec(int M, int N, int K, const __half* __restrict__ A, const __half* __restrict__ B,
                 float* __restrict__ C)
{
    gemv_tc::gemv_tc_body<true>(M, N, K, A, B, C);
}

extern "C" __global__ void __launch_bounds__(THREADS, 1)
gemv_fp16_tc_scalar(int M, int N, int K, const __half* __restrict__ A, const __half* __restrict__ B,
                    float* __restrict__ C)
{
    gemv_tc::gemv_tc_body<false>(M, N, K, A, B, C);
}
