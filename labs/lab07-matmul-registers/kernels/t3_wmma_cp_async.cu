// t3_wmma_cp_async.cu: t2 with asynchronous copies (cp.async) into a multi-buffered block tile.
//
//   C (FP32, M x N) = A (FP16, M x K) . B (FP16, K x N), all row-major, FP32 accumulation.
//   Entry points: hgemm_t3_cp_async_vec     N % 8 == 0: A and B tiles copied with 16-byte cp.async
//                 hgemm_t3_cp_async_scalar  any N:      A by cp.async, B by guarded 2-byte loads
//   Launch:  THREADS = (BM/WM)*(BN/WN)*32 threads (1D; 256 by default),
//            grid = (ceil(N/BN), ceil(M/BM)); blockIdx.x walks N, blockIdx.y walks M.
//   Shapes:  any M >= 1, N >= 1; K >= 8 with K % 8 == 0 (the driver refuses other K).
//   Shared memory is DYNAMIC. Bytes to pass at launch (A stages first, then B stages):
//
//       smem_bytes = STAGES * (BM * (BK + 8) + BK * (BN + 8)) * 2
//
//     = 37,888 for the defaults. Above 48 KB (49,152) the launcher must first raise the limit with
//     cuFuncSetAttribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, smem_bytes).
//   Tuning: BM, BN, BK, WM, WN, STAGES can be overridden with -D (defaults: the chapter's design,
//     128, 128, 32, 64, 32, 2); the static_asserts below say which combinations are legal.
//
// What it adds over t2. In t2 every phase is "copy, wait, compute, wait": while a tile travels
// from global memory the tensor cores idle, and while they compute nobody is loading. Here the
// shared tile has STAGES buffers, and the copies for later phases are in flight while the warps
// compute on the current one. What makes that possible is cp.async (CUDA C++:
// __pipeline_memcpy_async): a 16-byte copy from global to shared memory that the thread issues and
// does not wait for. It does not pass through registers, so the thread goes straight on to its
// fragment loads and mma_syncs. Copies are grouped with __pipeline_commit(), and
// __pipeline_wait_prior(n) waits until at most n of this thread's groups are still in flight. The
// main loop, as in the chapter (for STAGES = 2 it is exactly the chapter's):
//
//   prologue: issue tiles 0 .. STAGES-2, one commit each
//   for t in 0 .. tiles-1:
//       issue tile t+STAGES-1 into the buffer that tile t-1 used   (if it exists)
//       commit                       (always, even empty: keeps the group count arithmetic simple)
//       wait_prior(STAGES-1)         (groups committed: t+STAGES; tile t is group t, so at most the
//                                     STAGES-1 newer ones may still be in flight: tile t has landed)
//       __syncthreads()              (... for every thread's copies, not just mine)
//       compute on buffer t % STAGES
//       __syncthreads()              (nobody reads buffer t % STAGES any more: iteration t+1 refills
//                                     it. Drop this barrier and the next copy overwrites a tile some
//                                     warp is still reading: the classic multi-buffering race.)
//
// Tiles and why (defaults): block tile 128 x 128, BK = 32, 8 warps of 64 x 32 as in t2: per 16-deep
// step a warp loads 4 A and 2 B fragments and does 8 mma_sync. Shared rows padded by 8 halves for
// the reasons t2 gives (WMMA wants ldm a multiple of 8 halves and 32-byte aligned fragment pointers;
// cp.async wants 16-byte aligned rows; the pad breaks the bank conflicts of fragment loads). Dynamic
// shared memory because STAGES = 3 or 4, or BK = 64, need more than the 48 KB a static array may use.
//
// Edges. Copy chunks (8 halves) are wholly inside or wholly outside (K % 8 == 0; N % 8 == 0 for vec).
// Chunks outside are zero-filled by cp.async itself: the zero-fill form (src-size 0) reads nothing
// and writes 16 zero bytes. A phase wholly inside the matrices skips the guards (decided per phase).
// The scalar variant copies B with synchronous guarded 2-byte loads into the same buffers; the
// barriers above cover those stores too. Epilogue as t2: interior 16x16 fragments go straight to
// global memory with store_matrix_sync, edge fragments (and all fragments of the scalar variant)
// are staged per warp in the tile memory and written with guarded scalar stores.
//
// What to look for in SASS (make sass): LDGSTS.E.BYPASS.128 (cp.async.cg, 16 bytes) for the copies
// (the zero-fill ones carry a trailing `!PT` operand), LDGDEPBAR for each commit and
// DEPBAR.LE SB0, 0x1 for wait_prior(1); no LDG.E.128 + STS.128 pairs for the tiles (that was t2)
// except B's LDG.E.U16 + STS.128 in the scalar variant; LDSM for the fragment loads and
// HMMA.16816.F32, two per mma_sync, as in t2; two BAR.SYNC per phase. ptxas puts never-executed
// `@!PT LDS RZ, [RZ]` placeholders before groups of LDGSTS: they are not shared loads (the
// predicate is always false); the real LDS and STS.64 are the epilogue's staging.

#include <cuda_fp16.h>
#include <cuda_pipeline.h>
#include <mma.h>

using namespace nvcuda;

// ---- tile parameters (override with -D for a tuning sweep) -------------------------------------
#ifndef BM
#define BM 128      // block tile rows: each A value copied to shared memory is used by BN/WN warps
#endif
#ifndef BN
#define BN 128      // block tile columns: each B value is used by BM/WM warps
#endif
#ifndef BK
#define BK 32       // K depth of one phase (two 16-deep WMMA steps); deeper = fewer barriers, more smem
#endif
#ifndef WM
#define WM 64       // warp tile rows: 4 A fragments per k step, each reused WN/16 times
#endif
#ifndef WN
#define WN 32       // warp tile columns: 2 B fragments per k step, each reused WM/16 times
#endif
#ifndef STAGES
#define STAGES 2    // shared-memory buffers: STAGES-1 tiles in flight while one is computed on
#endif
#define THREADS ((BM / WM) * (BN / WN) * 32)   // one warp per warp tile

static_assert(WM % 16 == 0 && WN % 16 == 0, "the warp tile WM x WN must be made of 16x16 WMMA tiles");
static_assert(BM % WM == 0 && BN % WN == 0, "the block tile BM x BN must be a whole number of warp tiles");
static_assert(BK % 16 == 0, "BK must be a multiple of 16, the K depth of one WMMA step");
static_assert(THREADS <= 1024, "too many warps: (BM/WM)*(BN/WN) must be at most 32");
static_assert(STAGES >= 2, "STAGES must be at least 2: one buffer computed on, one being filled");
static_assert(STAGES <= 8, "STAGES must be at most 8: __pipeline_wait_prior counts at most 8 groups");

namespace t3 {

constexpr int TILE = 16;                      // WMMA m16n16k16
constexpr int WARPS_N = BN / WN;
constexpr int FRAG_M = WM / TILE;             // A fragments per warp per k step
constexpr int FRAG_N = WN / TILE;             // B fragments per warp per k step
constexpr int PAD = 8;                        // halves added to each shared row: see t2's header
constexpr int LDA_S = BK + PAD;               // shared row stride of the A tile, halves
constexpr int LDB_S = BN + PAD;               // shared row stride of the B tile, halves
constexpr int A_STAGE = BM * LDA_S;           // halves per A buffer
constexpr int B_STAGE = BK * LDB_S;           // halves per B buffer
constexpr int SMEM_BYTES = STAGES * (BM * (BK + 8) + BK * (BN + 8)) * 2;   // the launcher's formula
constexpr int LDC_S = TILE + 4;               // staging row of an edge accumulator: 20 floats
constexpr int CHUNK = 8;                      // halves per 16-byte copy
constexpr int A_CHUNKS_PER_ROW = BK / CHUNK;
constexpr int B_CHUNKS_PER_ROW = BN / CHUNK;
constexpr int A_CHUNKS = BM * BK / CHUNK;
constexpr int B_CHUNKS = BK * BN / CHUNK;
constexpr int A_ITERS = (A_CHUNKS + THREADS - 1) / THREADS;   // chunks per thread per phase
constexpr int B_ITERS = (B_CHUNKS + THREADS - 1) / THREADS;

static_assert(SMEM_BYTES == STAGES * (A_STAGE + B_STAGE) * 2, "layout: A stages, then B stages");
static_assert(LDA_S % 8 == 0 && LDB_S % 8 == 0,
              "WMMA: ldm of __half fragments a multiple of 8 (also keeps 16-row steps 32-byte aligned)");
static_assert((A_STAGE * 2) % 128 == 0 && (B_STAGE * 2) % 128 == 0,
              "every A and B buffer starts 128-byte aligned (fragment pointers need 32)");
static_assert(SMEM_BYTES <= 227 * 1024,
              "shared memory above 227 KB, the most any supported GPU gives a block "
              "(sm_86/89/120 give 99 KB; the launcher checks the device)");
static_assert((THREADS / 32) * TILE * LDC_S * 4 <= SMEM_BYTES,
              "the epilogue's per-warp 16x20-float staging areas must fit in the tile buffers");

using FragA = wmma::fragment<wmma::matrix_a, TILE, TILE, TILE, __half, wmma::row_major>;
using FragB = wmma::fragment<wmma::matrix_b, TILE, TILE, TILE, __half, wmma::row_major>;
using FragC = wmma::fragment<wmma::accumulator, TILE, TILE, TILE, float>;

extern __shared__ __align__(128) unsigned char smem_raw[];

// Issue one phase's copies: A[bm.., k0..] -> As_s (BM x BK), B[k0.., bn..] -> Bs_s (BK x BN).
// CHECKED = false only for phases wholly inside the matrices.
template <bool CHECKED, bool VEC_B>
__device__ __forceinline__ void issue_tile(__half* __restrict__ As_s, __half* __restrict__ Bs_s,
                                           const __half* __restrict__ A, const __half* __restrict__ B,
                                           int M, int N, int K, int bm, int bn, int k0, int tid) {
#pragma unroll
    for (int it = 0; it < A_ITERS; ++it) {
        const int c = tid + it * THREADS;
        if (A_CHUNKS % THREADS != 0 && c >= A_CHUNKS) break;
        const int r = c / A_CHUNKS_PER_ROW, k = (c % A_CHUNKS_PER_ROW) * CHUNK;
        __half* dst = As_s + r * LDA_S + k;
        if (!CHECKED || (bm + r < M && k0 + k < K))
            __pipeline_memcpy_async(dst, A + (bm + r) * K + k0 + k, 16);
        else
            __pipeline_memcpy_async(dst, A, 16, 16);   // zero-fill: reads nothing, writes 16 zero bytes
    }
#pragma unroll
    for (int it = 0; it < B_ITERS; ++it) {
        const int c = tid + it * THREADS;
        if (B_CHUNKS % THREADS != 0 && c >= B_CHUNKS) break;
        const int r = c / B_CHUNKS_PER_ROW, n = (c % B_CHUNKS_PER_ROW) * CHUNK;
        __half* dst = Bs_s + r * LDB_S + n;
        if (VEC_B) {
            if (!CHECKED || (k0 + r < K && bn + n < N))
                __pipeline_memcpy_async(dst, B + (k0 + r) * N + bn + n, 16);
            else
                __pipeline_memcpy_async(dst, B, 16, 16);
        } else {
            // N % 8 != 0: B rows are not 16-byte aligned, so no 16-byte cp.async. Eight synchronous
            // 2-byte loads, packed in pairs, one 16-byte shared store.
            const unsigned short* Bu = reinterpret_cast<const unsigned short*>(B) + (k0 + r) * N + bn + n;
            unsigned int w[4];
#pragma unroll
            for (int p = 0; p < 4; ++p) {
                const bool in0 = !CHECKED || (k0 + r < K && bn + n + 2 * p < N);
                const bool in1 = !CHECKED || (k0 + r < K && bn + n + 2 * p + 1 < N);
                const unsigned int lo = in0 ? Bu[2 * p] : 0u;
                const unsigned int hi = in1 ? Bu[2 * p + 1] : 0u;
                w[p] = lo | (hi << 16);
            }
            *reinterpret_cast<uint4*>(dst) = make_uint4(w[0], w[1], w[2], w[3]);
        }
    }
}

template <bool VEC_B>
__device__ __forceinline__ void hgemm_t3_body(int M, int N, int K, const __half* __restrict__ A,
                                              const __half* __restrict__ B, float* __restrict__ C) {
    __half* As = reinterpret_cast<__half*>(smem_raw);   // [STAGES][BM][LDA_S]
    __half* Bs = As + STAGES * A_STAGE;                  // [STAGES][BK][LDB_S]

    const int tid = threadIdx.x;
    const int warp = tid / 32, lane = tid % 32;
    const int warp_m = warp / WARPS_N, warp_n = warp % WARPS_N;
    const int bm = blockIdx.y * BM, bn = blockIdx.x * BN;
    const bool block_inside = bm + BM <= M && bn + BN <= N;
    const int k_tiles = (K + BK - 1) / BK;

    FragC acc[FRAG_M][FRAG_N];
#pragma unroll
    for (int i = 0; i < FRAG_M; ++i)
#pragma unroll
        for (int j = 0; j < FRAG_N; ++j) wmma::fill_fragment(acc[i][j], 0.0f);

    auto issue = [&](int stage, int kt) {
        const int k0 = kt * BK;
        __half* As_s = As + stage * A_STAGE;
        __half* Bs_s = Bs + stage * B_STAGE;
        if (block_inside && k0 + BK <= K) issue_tile<false, VEC_B>(As_s, Bs_s, A, B, M, N, K, bm, bn, k0, tid);
        else                              issue_tile<true, VEC_B>(As_s, Bs_s, A, B, M, N, K, bm, bn, k0, tid);
    };

    // Prologue: tiles 0 .. STAGES-2 in flight, one commit group each (empty groups past the end).
    // BEGIN SOLUTION t3-prologue: issue tiles 0 .. STAGES-2, one __pipeline_commit() each
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < k_tiles) issue(s, s);
        __pipeline_commit();
    }
    // END SOLUTION t3-prologue

    int read_stage = 0;             // buffer of tile t
    int write_stage = STAGES - 1;   // buffer of tile t + STAGES - 1 = the one tile t - 1 used
    for (int t = 0; t < k_tiles; ++t) {
        // BEGIN SOLUTION t3-issue-and-wait: start tile t+STAGES-1, commit, wait until tile t has landed
        if (t + STAGES - 1 < k_tiles) issue(write_stage, t + STAGES - 1);
        __pipeline_commit();
        __pipeline_wait_prior(STAGES - 1);   // this thread's copies of tile t have landed
        __syncthreads();                     // ...and every other thread's
        // END SOLUTION t3-issue-and-wait

        const __half* As_w = As + read_stage * A_STAGE + warp_m * WM * LDA_S;   // this warp's rows
        const __half* Bs_w = Bs + read_stage * B_STAGE + warp_n * WN;           // this warp's columns
        // BEGIN SOLUTION t3-fragment-loop: your t2's fragment loop, on this stage's As_w and Bs_w
#pragma unroll
        for (int kk = 0; kk < BK; kk += TILE) {
            FragA a[FRAG_M];
            FragB b[FRAG_N];
#pragma unroll
            for (int i = 0; i < FRAG_M; ++i) wmma::load_matrix_sync(a[i], As_w + i * TILE * LDA_S + kk, LDA_S);
#pragma unroll
            for (int j = 0; j < FRAG_N; ++j) wmma::load_matrix_sync(b[j], Bs_w + kk * LDB_S + j * TILE, LDB_S);
#pragma unroll
            for (int i = 0; i < FRAG_M; ++i)
#pragma unroll
                for (int j = 0; j < FRAG_N; ++j) wmma::mma_sync(acc[i][j], a[i], b[j], acc[i][j]);
        }
        // END SOLUTION t3-fragment-loop
        // BEGIN SOLUTION t3-release: free buffer read_stage for the next copy, advance both stages
        __syncthreads();                     // buffer read_stage is free: the next iteration refills it

        read_stage = (read_stage + 1 == STAGES) ? 0 : read_stage + 1;
        write_stage = (write_stage + 1 == STAGES) ? 0 : write_stage + 1;
        // END SOLUTION t3-release
    }
    // Only empty groups can still be pending here; wait for them anyway before the tile memory is
    // reused, so the epilogue's safety does not depend on that argument.
    __pipeline_wait_prior(0);

    // Epilogue (as t2). The loop's last barrier means every warp is done with the tiles, so each
    // warp may use 16 x LDC_S floats of them (32-byte aligned) as a private staging area.
    float* stage = reinterpret_cast<float*>(smem_raw) + warp * TILE * LDC_S;
#pragma unroll
    for (int i = 0; i < FRAG_M; ++i) {
#pragma unroll
        for (int j = 0; j < FRAG_N; ++j) {
            const int r0 = bm + warp_m * WM + i * TILE;
            const int c0 = bn + warp_n * WN + j * TILE;
            if (r0 >= M || c0 >= N) continue;                 // fragment wholly outside C (warp-uniform)
            if (VEC_B && r0 + TILE <= M && c0 + TILE <= N) {
                // pointer a multiple of 64 bytes, ldm = N a multiple of 8: store_matrix_sync's rules hold
                wmma::store_matrix_sync(C + r0 * N + c0, acc[i][j], N, wmma::mem_row_major);
            } else {
                wmma::store_matrix_sync(stage, acc[i][j], LDC_S, wmma::mem_row_major);
                __syncwarp();
#pragma unroll
                for (int q = 0; q < TILE * TILE / 32; ++q) {  // half a warp per row: coalesced
                    const int r = q * 2 + lane / TILE, c = lane % TILE;
                    if (r0 + r < M && c0 + c < N) C[(r0 + r) * N + c0 + c] = stage[r * LDC_S + c];
                }
                __syncwarp();   // the next fragment may overwrite the staging area
            }
        }
    }
}

}  // namespace t3

extern "C" __global__ void __launch_bounds__(THREADS)
hgemm_t3_cp_async_vec(int M, int N, int K, const __half* __restrict__ A, const __half* __restrict__ B,
                      float* __restrict__ C) {
    t3::hgemm_t3_body<true>(M, N, K, A, B, C);
}

extern "C" __global__ void __launch_bounds__(THREADS)
hgemm_t3_cp_async_scalar(int M, int N, int K, const __half* __restrict__ A, const __half* __restrict__ B,
                         float* __restrict__ C) {
    t3::hgemm_t3_body<false>(M, N, K, A, B, C);
}
