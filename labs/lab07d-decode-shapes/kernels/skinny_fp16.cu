// skinny_fp16.cu -- lab 7d: the FP16 decode kernel. Weights streamed through a cp.async ring while
// the tensor cores work, and split-K reduced inside the kernel, in a fixed order (chapter 8, section 8)
//
// C (FP32, M x N) = A (FP16, M x K) . B (FP16, K x N), row-major, FP32 accumulation, for few rows:
// BM = 16 MT rows per block (MT = 1, 2, 4: M up to 16, 32, 64; any M runs, blockIdx.y walks groups
// of BM rows). B is the weight matrix, read once; A is the few tokens, read by every block from L2.
//
// Entry points:
//   skinny_fp16_vec     K % 8 == 0 and N % 8 == 0: every 16-byte chunk of A and B copied with
//                       cp.async (LDGSTS), zero-filled outside the matrices or the block's K range
//   skinny_fp16_scalar  any M, N, K >= 1: the same ring filled by guarded 2-byte loads and 16-byte
//                       shared stores (synchronous: for odd N or K only)
//       (int M, int N, int K, const __half* A, const __half* B, float* C, int splits, float* workspace)
// Launch: 1-D block of THREADS = WARPS_K * (BN / WN) * 32, grid (ceil(N / BN), ceil(M / BM), splits),
//   DYNAMIC shared memory SMEM_BYTES (above 48 KB: the launcher raises the function's limit).
//   workspace: splits x tiles x BM x BN floats, then `tiles` unsigned counters (layout below) that
//   are ZERO before the first launch; every launch leaves them zero again. One launch: no reduce kernel.
//
// Why a new kernel. Decode (M = 1 to 64) is memory-bound in FP16 up to M ~ 230 (README), so the
// only question is whether the weights stream at the copy bandwidth. The lab's other FP16 kernels
// lose bytes in flight in three ways: gemv_fp16_tc loads B into registers, so a warp's loads stop
// while its mma wait for them, and N = 4096 gives it 64 blocks for 132 SMs; splitk_fp16 computes a
// 64-row tile at M = 16 and pays a second (reduce) launch and a round trip of the workspace through
// memory. Here:
//  1. B streams through a STAGES-deep ring of shared buffers filled by 16-byte cp.async
//     (cp.async.cg: L2 only, the weights are used once). While a stage is multiplied, the next
//     STAGES - 1 are in flight: (STAGES - 1) x BK x BN x 2 bytes per block (48 KB by default), and no
//     warp's arithmetic stops the copies. One __syncthreads per stage (the t4 scheme: wait for
//     stage t, barrier, refill the buffer stage t - 1 used, compute stage t). A's BM x BK tile
//     rides in the same stages (rows past M zero-filled: no memory is read for them).
//  2. mma.sync m16n8k16 fed by ldmatrix, as lab 7's t4: .x4 gives one 16 x 16 A fragment, .x4.trans
//     two 16 x 8 B fragments of row-major B. Shared rows are not padded: 16-byte chunk c of row r
//     sits at chunk c ^ (r % 8) of the row (rows of BK / 8 and BN / 8 chunks, multiples of 8), so
//     the 8 rows an 8 x 8 ldmatrix matrix reads, and the 8 chunks 8 lanes copy, fall in 8 different
//     bank groups: no conflicts (t4's header has the arithmetic).
//  3. The block's tile is BM = 16 MT rows: a build per M class (MT = 1, 2, 4: the dispatcher's rows),
//     so M = 16 does not pay for 64 rows. A warp holds all BM rows and WN columns (MT x WN / 8 mma
//     per 16-deep step, MT x WN / 2 accumulators: 64 per thread in the course's builds).
//  4. The WARPS_K warps of a column group split each stage's K: warp wk takes rows
//     [wk BK / WARPS_K, (wk + 1) BK / WARPS_K) of every stage. At the end their partial tiles are
//     added through shared memory in warp order (warp 0 stores, warp 1 adds, ...): a fixed order.
//  5. Split-K across blocks: blockIdx.z = split, each split a BK-aligned range of K (ceil(K tiles /
//     splits) tiles; the last may be short or empty), so N = 4096 (64 column tiles of 64) still
//     gives every SM a block. The splits are reduced INSIDE the kernel, deterministically: each
//     block writes its partial BM x BN tile to the workspace, __threadfence(), and takes a ticket
//     (atomicAdd on its output tile's counter). The block that draws the last ticket (splits - 1)
//     adds the partials in split order, ws[0] + ws[1] + ... (its own from shared memory: the same
//     bits), writes C, and resets the counter to 0 for the next launch. Which block is last varies
//     from run to run, the order of the additions does not: C is bitwise repeatable for a given
//     number of splits, with one launch and no reduce kernel; the partials (splits x BM x BN x 4
//     bytes per tile, 16 KB a split at M = 64) stay in L2. An atomicAdd into C would need C zeroed
//     first and give order-dependent low bits. splits = 1: no workspace traffic, the block writes C.
//
// Workspace layout (floats): partial[tile][split][BM][BN] (tiles = gridDim.x * gridDim.y, tile =
// blockIdx.y * gridDim.x + blockIdx.x), then `tiles` unsigned counters. The launcher (launch.py)
// allocates it once per shape and zeroes it once.
//
// Tiles (defaults: the M <= 16 build). MT = 1, BN = 64, WN = 64: one warp column, per 16-deep step
// 1 ldmatrix.x4 of A, 4 ldmatrix.x4.trans of B, 8 mma; WARPS_K = 4 warps on K, BK = 128 (32 rows of
// K per warp per stage: two steps), STAGES = 4: 3 stages of 16 KB of weights in flight per block,
// 80 KB of shared memory. BN = 64 because N = 8192 then gives 128 column tiles, one wave of one block
// per SM without any split; at N = 4096 the split doubles the grid. MT = 2 / 4 (the M <= 32 / 64
// builds) take WN = 64 / 32: at most 64 accumulators per thread (the static_assert allows 128).
// REGDB = 1 adds t4's register double buffer: the fragments of the next step are loaded while this
// step's mma run, and the last step of a stage issues its mma before it waits for the next stage.
// The M <= 64 build uses it (its warps do 4 times the mma of the M <= 16 build); at M <= 32 it
// measured level or 1 % slower (more registers, nothing left to hide), so the default is off.
//
// SASS to look for (make sass): LDGSTS.E.BYPASS.128 (cp.async 16 B; the zero-fill forms on guarded
// tiles carry a trailing !PT), LDGDEPBAR per commit and DEPBAR.LE SB0 per wait, LDSM.16.M88.4 (A) and
// LDSM.16.MT88.4 (B), HMMA.16816.F32, one BAR.SYNC per stage in the K loop; in the epilogue STS.64 /
// LDS.64 of the warp sums, MEMBAR.SC.GPU + CCTL.IVALL (the __threadfence), one ATOMG.E.ADD (the
// ticket), LDG.E.128.STRONG.GPU (the partials, read through L2 with __ldcg), STG.E.128 (partials and
// C); no LDL/STL. The scalar entry shows LDG.E.U16 + STS.128 instead of LDGSTS. ncu:
// dram__bytes_read.sum.per_second against the copy bandwidth; long_scoreboard stalls should be few
// (the copies are asynchronous), barrier stalls are the waits for the next stage.

#include <cuda_fp16.h>

#include "fp16_common.cuh"   // gather8, mma16816

// ---- parameters (override with -D; the dispatcher's rows do) ---------------------------------------
#ifndef MT
#define MT 1        // m16 tiles per block: BM = 16 MT rows of A (1, 2, 4: one build per M class)
#endif
#ifndef BN
#define BN 64       // columns of B per block: N = 8192 -> 128 column tiles (one wave on 132 SMs), 4096 -> 64
#endif
#ifndef WN
#define WN (BN < 128 / MT ? BN : 128 / MT)   // columns per warp: MT x WN / 2 <= 64 accumulators per thread
#endif
#ifndef BK
#define BK 128      // K rows per stage: 16 KB of weights; 32 per warp with WARPS_K = 4 (two mma steps)
#endif
#ifndef WARPS_K
#define WARPS_K 4   // warps splitting each stage's K (their sums meet in shared memory at the end)
#endif
#ifndef STAGES
#define STAGES 4    // shared buffers in the ring: STAGES - 1 = 3 stages (48 KB of weights) in flight
#endif
#ifndef REGDB
#define REGDB 0     // 1: register double buffer (next step's fragments loaded during this step's mma)
#endif

#define BM (16 * MT)                                      // block tile rows
#define WARPS_N (BN / WN)                                 // warp columns
#define THREADS (WARPS_K * WARPS_N * 32)
#define SMEM_BYTES (STAGES * (BM * BK + BK * BN) * 2)     // A stages, then B stages, halves, no padding
#define LDS (BN + 8)                                      // floats per row of the epilogue's sum tile

static_assert(MT == 1 || MT == 2 || MT == 4, "skinny_fp16: MT must be 1, 2 or 4 (BM = 16, 32, 64 rows)");
static_assert(BN % 64 == 0, "skinny_fp16: BN must be a multiple of 64: rows of B of 8k chunks for the r % 8 swizzle");
static_assert(BK % 64 == 0, "skinny_fp16: BK must be a multiple of 64: rows of A of 8k chunks for the r % 8 swizzle");
static_assert(WN % 16 == 0 && BN % WN == 0,
              "skinny_fp16: WN must be a multiple of 16 (ldmatrix.x4.trans loads 16 columns) dividing BN");
static_assert(MT * WN <= 256, "skinny_fp16: MT x WN / 2 accumulators per thread must be at most 128 (registers)");
static_assert(BK % (16 * WARPS_K) == 0, "skinny_fp16: each of the WARPS_K warps takes whole 16-deep steps of a stage");
static_assert(THREADS <= 1024, "skinny_fp16: at most 32 warps per block");
static_assert(STAGES >= 2 && STAGES <= 8, "skinny_fp16: 2 to 8 stages (cp.async.wait_group takes a small count)");
static_assert(SMEM_BYTES <= 227 * 1024, "skinny_fp16: shared memory above the 227 KB any GPU gives a block");
static_assert(BM * LDS * 4 + 16 <= SMEM_BYTES,
              "skinny_fp16: the epilogue's BM x (BN + 8) float tile and the ticket flag must fit in the ring");

namespace skinny {

using fp16::gather8;
using fp16::mma16816;

constexpr int CPR_A = BK / 8, CPR_B = BN / 8;              // 16-byte chunks per row of the A / B tile
constexpr int A_CHUNKS = BM * CPR_A, B_CHUNKS = BK * CPR_B;
constexpr int A_ITERS = (A_CHUNKS + THREADS - 1) / THREADS;
constexpr int B_ITERS = (B_CHUNKS + THREADS - 1) / THREADS;
constexpr int A_STAGE = BM * BK * 2, B_STAGE = BK * BN * 2;   // bytes
constexpr int KW = BK / WARPS_K;                           // K rows of a stage per warp
constexpr int KSTEPS = KW / 16;                            // 16-deep mma steps per warp per stage
constexpr int NT = WN / 8;                                 // n8 tiles per warp
constexpr int TILE = BM * BN;                              // floats of one partial tile

// Chunk c of row r of a tile whose rows are CPR chunks (a multiple of 8): at c ^ (r % 8).
template <int CPR>
__device__ __forceinline__ int swz(int r, int c) { return r * CPR + (c ^ (r & 7)); }

__device__ __forceinline__ unsigned smem_u32(const void* p) { return static_cast<unsigned>(__cvta_generic_to_shared(p)); }

__device__ __forceinline__ void cp16(unsigned dst, const void* src) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(src) : "memory");
}
__device__ __forceinline__ void cp16_zero(unsigned dst, const void* any) {   // src-size 0: reads nothing, writes 16 zeros
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, 0;\n" ::"r"(dst), "l"(any) : "memory");
}
__device__ __forceinline__ void cp_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory"); }

__device__ __forceinline__ void st_shared16(unsigned dst, uint4 v) {
    asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};\n" ::"r"(dst), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w)
                 : "memory");
}
__device__ __forceinline__ void ldsm_x4(unsigned (&r)[4], unsigned addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr));
}
__device__ __forceinline__ void ldsm_x4_trans(unsigned (&b0)[2], unsigned (&b1)[2], unsigned addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(b0[0]), "=r"(b0[1]), "=r"(b1[0]), "=r"(b1[1]) : "r"(addr));
}


extern __shared__ __align__(128) unsigned char smem_raw[];

// One stage's copies: A[bm .. bm + BM)[k0 .. k0 + BK) and B[k0 .. k0 + BK)[bn .. bn + BN), swizzled.
// ke = end of the block's K range. CHECKED = false only when the whole tile is inside (decided per
// tile and per matrix: at M = 1, A is always checked and B almost never).
template <bool VEC, bool CHECKED>
__device__ __forceinline__ void copy_a(unsigned sA, const __half* __restrict__ A, int M, int K, int bm, int k0,
                                       int ke, int tid) {
#pragma unroll (VEC ? A_ITERS : 1)      // scalar: 8 loads in flight per thread, not 8 x A_ITERS registers
    for (int it = 0; it < A_ITERS; ++it) {
        const int c = tid + it * THREADS;
        if (A_CHUNKS % THREADS != 0 && c >= A_CHUNKS) break;
        const int r = c / CPR_A, ch = c % CPR_A;
        const unsigned dst = sA + swz<CPR_A>(r, ch) * 16;
        const int row = bm + r, k = k0 + ch * 8;
        const __half* src = A + (size_t)row * K + k;
        if constexpr (VEC) {
            if (!CHECKED || (row < M && k < ke)) cp16(dst, src);
            else cp16_zero(dst, A);
        } else {
            st_shared16(dst, gather8(src, !CHECKED ? 8 : row < M ? ke - k : 0));
        }
    }
}

template <bool VEC, bool CHECKED>
__device__ __forceinline__ void copy_b(unsigned sB, const __half* __restrict__ B, int N, int bn, int k0, int ke,
                                       int tid) {
#pragma unroll (VEC ? B_ITERS : 1)
    for (int it = 0; it < B_ITERS; ++it) {
        const int c = tid + it * THREADS;
        if (B_CHUNKS % THREADS != 0 && c >= B_CHUNKS) break;
        const int r = c / CPR_B, ch = c % CPR_B;
        const unsigned dst = sB + swz<CPR_B>(r, ch) * 16;
        const int k = k0 + r, col = bn + ch * 8;
        const __half* src = B + (size_t)k * N + col;
        if constexpr (VEC) {
            if (!CHECKED || (k < ke && col < N)) cp16(dst, src);
            else cp16_zero(dst, B);
        } else {
            st_shared16(dst, gather8(src, !CHECKED ? 8 : k < ke ? N - col : 0));
        }
    }
}

template <bool VEC>
__device__ __forceinline__ void skinny_body(int M, int N, int K, const __half* __restrict__ A,
                                            const __half* __restrict__ B, float* __restrict__ C, int splits,
                                            float* ws) {
    const unsigned sA0 = smem_u32(smem_raw), sB0 = sA0 + STAGES * A_STAGE;
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int wk = warp % WARPS_K, wn = warp / WARPS_K;
    const int bm = blockIdx.y * BM, bn = blockIdx.x * BN;
    const bool a_rows_in = bm + BM <= M, b_cols_in = bn + BN <= N;

    // This split's K range: whole BK tiles [t0, t1), ending at ke.
    const int k_tiles = (K + BK - 1) / BK;
    const int per = (k_tiles + splits - 1) / splits;
    const int t0 = min(k_tiles, (int)blockIdx.z * per), t1 = min(k_tiles, t0 + per);
    const int nt = t1 - t0, ke = min(K, t1 * BK);

    auto issue = [&](int stage, int t) {
        const int k0 = (t0 + t) * BK;
        const bool k_in = k0 + BK <= ke;
        const unsigned sA = sA0 + stage * A_STAGE, sB = sB0 + stage * B_STAGE;
        if (a_rows_in && k_in) copy_a<VEC, false>(sA, A, M, K, bm, k0, ke, tid);
        else                   copy_a<VEC, true>(sA, A, M, K, bm, k0, ke, tid);
        if (b_cols_in && k_in) copy_b<VEC, false>(sB, B, N, bn, k0, ke, tid);
        else                   copy_b<VEC, true>(sB, B, N, bn, k0, ke, tid);
    };

    // ldmatrix lane addresses, bytes inside a stage. A (.x4): lane l -> row l % 16 of an m16 tile,
    // logical chunk (first k of the step) / 8 + l / 16; m16 tile i is 16 rows further (same swizzle).
    // B (.x4.trans): lane l -> k row l % 16 of the step, chunk (first column of n8 pair p) / 8 + l / 16;
    // the steps are 16 rows apart (same swizzle). Matrices 0-3: b0b1 / b2b3 of n8 tiles 2p, 2p + 1.
    unsigned a_off[KSTEPS], b_off[NT / 2];
#pragma unroll
    for (int s = 0; s < KSTEPS; ++s)
        a_off[s] = swz<CPR_A>(lane % 16, (wk * KW + 16 * s) / 8 + lane / 16) * 16;
#pragma unroll
    for (int p = 0; p < NT / 2; ++p)
        b_off[p] = swz<CPR_B>(lane % 16, (wn * WN + 16 * p) / 8 + lane / 16) * 16 + wk * KW * CPR_B * 16;

    float acc[MT][NT][4];
#pragma unroll
    for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int j = 0; j < NT; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.0f;

    // Prologue: stages 0 .. STAGES - 2 in flight, one commit group each (empty past the end).
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < nt) issue(s, s);
        cp_commit();
    }
    // Fragments of 16-deep step s of the stage at sA / sB into register set `set`.
    unsigned fa[2][MT][4], fb[2][NT][2];
    auto load_frags = [&](int set, unsigned sA, unsigned sB, int s) {
#pragma unroll
        for (int i = 0; i < MT; ++i) ldsm_x4(fa[set][i], sA + a_off[s] + i * 16 * CPR_A * 16);
#pragma unroll
        for (int p = 0; p < NT / 2; ++p)
            ldsm_x4_trans(fb[set][2 * p], fb[set][2 * p + 1], sB + b_off[p] + s * 16 * CPR_B * 16);
    };
    auto mma_step = [&](int set) {
#pragma unroll
        for (int i = 0; i < MT; ++i)
#pragma unroll
            for (int j = 0; j < NT; ++j) mma16816(acc[i][j], fa[set][i], fb[set][j]);
    };
    int rd = 0, wr = STAGES - 1;
    if (!REGDB) {
        for (int t = 0; t < nt; ++t) {
            cp_wait<STAGES - 2>();      // stage t has landed for this thread (STAGES - 1 + t groups committed)
            __syncthreads();            // ... for every thread, and every warp is done with stage t - 1's buffer
            if (t + STAGES - 1 < nt) issue(wr, t + STAGES - 1);
            cp_commit();                // always, even empty: the wait count stays fixed
            wr = wr + 1 == STAGES ? 0 : wr + 1;
            const unsigned sA = sA0 + rd * A_STAGE, sB = sB0 + rd * B_STAGE;
#pragma unroll
            for (int s = 0; s < KSTEPS; ++s) {
                load_frags(0, sA, sB, s);
                mma_step(0);
            }
            rd = rd + 1 == STAGES ? 0 : rd + 1;
        }
    } else if (nt > 0) {
        // Register double buffer (t4's scheme): the fragments of the next step are loaded while this
        // step's mma run. The last step of a stage issues its mma first, then waits for stage t + 1
        // (barrier: every warp has also loaded its last fragments of stage t, so the copies issued at
        // the top of the next iteration may refill stage t's buffer), then loads stage t + 1's first step.
        cp_wait<STAGES - 2>();
        __syncthreads();
        load_frags(0, sA0, sB0, 0);
        for (int t = 0; t < nt; ++t) {
            if (t + STAGES - 1 < nt) issue(wr, t + STAGES - 1);   // the buffer stage t - 1 used
            cp_commit();
            wr = wr + 1 == STAGES ? 0 : wr + 1;
            const int rn = rd + 1 == STAGES ? 0 : rd + 1;
            const unsigned sA = sA0 + rd * A_STAGE, sB = sB0 + rd * B_STAGE;
#pragma unroll
            for (int s = 0; s < KSTEPS; ++s) {
                if (s + 1 < KSTEPS) {
                    load_frags((s + 1) % 2, sA, sB, s + 1);
                    mma_step(s % 2);
                } else {
                    mma_step(s % 2);
                    cp_wait<STAGES - 2>();          // stage t + 1 has landed (STAGES + t groups committed)
                    __syncthreads();
                    if (t + 1 < nt) load_frags((s + 1) % 2, sA0 + rn * A_STAGE, sB0 + rn * B_STAGE, 0);
                }
            }
            if (KSTEPS % 2) {               // odd steps per stage: the next stage starts in set 1; move it to 0
#pragma unroll
                for (int i = 0; i < MT; ++i)
#pragma unroll
                    for (int e = 0; e < 4; ++e) fa[0][i][e] = fa[1][i][e];
#pragma unroll
                for (int j = 0; j < NT; ++j) fb[0][j][0] = fb[1][j][0], fb[0][j][1] = fb[1][j][1];
            }
            rd = rn;
        }
    }
    cp_wait<0>();
    __syncthreads();                // the ring becomes the epilogue's sum tile

    // The WARPS_K partial tiles of each column group, added in warp order: lane (g, q) holds rows
    // g, g + 8 and columns 2q, 2q + 1 of every 16 x 8 tile. Rows of LDS = BN + 8 floats: the 4 rows
    // of a half-warp's float2 stores fall in different banks.
    float* sum = reinterpret_cast<float*>(smem_raw);
    int& s_last = *reinterpret_cast<int*>(sum + BM * LDS);   // no static shared memory: the launcher's
                                                            // SMEM_BYTES is all the block uses
    const int g = lane / 4, q = lane % 4;
#pragma unroll 1
    for (int w = 0; w < WARPS_K; ++w) {
        if (wk == w) {
#pragma unroll
            for (int i = 0; i < MT; ++i)
#pragma unroll
                for (int j = 0; j < NT; ++j)
#pragma unroll
                    for (int h = 0; h < 2; ++h) {
                        float2* p = reinterpret_cast<float2*>(sum + (i * 16 + g + 8 * h) * LDS + wn * WN + j * 8 + 2 * q);
                        float2 v = make_float2(acc[i][j][2 * h], acc[i][j][2 * h + 1]);
                        if (w > 0) { const float2 o = *p; v = make_float2(o.x + v.x, o.y + v.y); }
                        *p = v;
                    }
        }
        __syncthreads();
    }

    // C, or this split's partial tile and the ticket. Each thread handles float4s q4 = tid, tid + THREADS, ...
    constexpr int C4 = BN / 4;
    auto store_c = [&](int r, int c, float4 v) {
        const int row = bm + r, col = bn + c;
        if (row >= M) return;
        float* dst = C + (size_t)row * N + col;
        if (VEC) {
            if (col < N) *reinterpret_cast<float4*>(dst) = v;   // N % 8 == 0: the float4 is wholly in or out
        } else {
            if (col < N) dst[0] = v.x;
            if (col + 1 < N) dst[1] = v.y;
            if (col + 2 < N) dst[2] = v.z;
            if (col + 3 < N) dst[3] = v.w;
        }
    };
    if (splits == 1) {
        for (int q4 = tid; q4 < TILE / 4; q4 += THREADS) {
            const int r = q4 / C4, c = (q4 % C4) * 4;
            store_c(r, c, *reinterpret_cast<const float4*>(sum + r * LDS + c));
        }
        return;
    }
    // BEGIN SOLUTION skinny-ordered-splits: this split's partial tile to the workspace, and the block that comes last for its tile adds all the splits' partials in split order 0, 1, 2, ... into C, leaving the workspace ready for the next launch
    const int tiles = gridDim.x * gridDim.y, tile = blockIdx.y * gridDim.x + blockIdx.x;
    float* part = ws + (size_t)tile * splits * TILE;                     // partial[tile][0]
    unsigned* counter = reinterpret_cast<unsigned*>(ws + (size_t)tiles * splits * TILE) + tile;
    for (int q4 = tid; q4 < TILE / 4; q4 += THREADS) {
        const int r = q4 / C4, c = (q4 % C4) * 4;
        reinterpret_cast<float4*>(part + (size_t)blockIdx.z * TILE)[q4] =
            *reinterpret_cast<const float4*>(sum + r * LDS + c);
    }
    __threadfence();                // this thread's partial is visible GPU-wide before the ticket is drawn
    __syncthreads();
    if (tid == 0) s_last = atomicAdd(counter, 1u) == (unsigned)(splits - 1);
    __syncthreads();
    if (!s_last) return;
    __threadfence();                // the last block: every other split's partial is now visible (read via L2)
    for (int q4 = tid; q4 < TILE / 4; q4 += THREADS) {
        const int r = q4 / C4, c = (q4 % C4) * 4;
        const float4 own = *reinterpret_cast<const float4*>(sum + r * LDS + c);
        float4 s = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        for (int z = 0; z < splits; ++z) {                                 // split order: 0, 1, 2, ...
            const float4 v = z == (int)blockIdx.z ? own : __ldcg(reinterpret_cast<const float4*>(part + (size_t)z * TILE) + q4);
            s = z == 0 ? v : make_float4(s.x + v.x, s.y + v.y, s.z + v.z, s.w + v.w);
        }
        store_c(r, c, s);
    }
    if (tid == 0) *counter = 0u;    // zero again for the next launch (the kernel boundary orders it)
    // END SOLUTION skinny-ordered-splits
}

}  // namespace skinny

extern "C" __global__ void __launch_bounds__(THREADS)
skinny_fp16_vec(int M, int N, int K, const __half* __restrict__ A, const __half* __restrict__ B,
                float* __restrict__ C, int splits, float* workspace) {
    skinny::skinny_body<true>(M, N, K, A, B, C, splits, workspace);
}

extern "C" __global__ void __launch_bounds__(THREADS)
skinny_fp16_scalar(int M, int N, int K, const __half* __restrict__ A, const __half* __restrict__ B,
                   float* __restrict__ C, int splits, float* workspace) {
    skinny::skinny_body<false>(M, N, K, A, B, C, splits, workspace);
}
