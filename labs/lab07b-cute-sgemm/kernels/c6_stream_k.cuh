// c6_stream_k.cuh -- lab 7b, c6: c5 (its tuned form) + a stream-K tail: the last wave's tiles shared out
// evenly over every resident block, so that no SM idles while others finish the wave.
// This header is the kernel: its parameters and its bodies. c6_stream_k.cu holds its entry points (and
// says how to launch them); c7_packed_a.cu runs the same bodies on a packed A.
//
// Why. c5 runs one 128 x 128 tile per block, two blocks per SM: 264 tiles at a time on the H200's 132
// SMs. At 4096^3 there are 1024 tiles: three full waves and a fourth of 232, in which 32 SMs run one
// block and 100 run two: the kernel takes 4 waves' time for 3.88 waves of work. Stream-K (Osama et al.,
// PPoPP 2023) cuts the iteration space (tiles x k-tiles) into equal shares instead of whole tiles.
//
// The schedule (the host picks dp_tiles and workers; launch.py, StreamK):
//   blocks 0 .. dp_tiles-1    data-parallel: one whole tile each, exactly c5 (c5's raster order)
//   blocks dp_tiles + w       worker w of `workers` (the blocks that fit on the GPU at once): the k-tile
//                             iterations [start(w), start(w+1)) of the remaining tiles, I of them:
//                             start(w) = w q + min(w, r), q = I / workers, r = I % workers (one 32-bit
//                             division per block)
// A worker's share is a few segments: the end of one tile, whole tiles, the start of another. For a
// segment that ends its tile, the worker is the tile's owner: it waits for the workers before it that
// hold the tile's earlier k-tiles, adds their partial tiles to its own in worker order, and stores C.
// A segment that stops before its tile's end is written as a partial tile to workspace[w], then
// flags[w] is set: each partial has one reader, who clears the flag, and C is bitwise repeatable on one
// GPU (though not equal bit for bit to c5, which adds a tile's k-tiles in one chain). The partial is
// computed first: a worker that first waited for its predecessor would chain the waits through the
// whole GPU. Waiting is safe: an owner waits only for smaller block numbers, blocks start in
// block-number order, and no worker waits before its partial is out; a wait of 10 s traps.
// SPLIT_LAUNCH (read by the host): where the shape divides the tile, the whole tiles run as a launch of
// their own with no edge path (c5's tile_range<VEC, EVEN = true>, allocated by ptxas as c5 alone), and
// with SPLIT_LAUNCH = 2 (the default) the workers too.
//
// Tiles: the tuned c5 of the H200 (128 x 128 x 32, 3 stages, 256 threads of 8 x 8 outputs; A_MMAJOR = 1,
// MIN_BLOCKS = 2, GROUP = 8), MIN_BLOCKS = 1 where two blocks do not fit an SM (below).
//
// SASS to look for: c5's main loop (FFMA, LDS.128, LDGSTS, one BAR.SYNC per tile) once; a partial
// written as STG.E.128.STRONG.GPU (__stcg), then MEMBAR.SC.GPU (__threadfence) and the flag's release
// (MEMBAR.ALL.GPU, STG.E.STRONG.GPU); the owner's wait LDG.E.STRONG.GPU (acquire) and NANOSLEEP, the
// partial read back as LDG.E.128.STRONG.GPU (__ldcg: from L2). No atomics, no LDL/STL.
#pragma once

#ifndef A_MMAJOR
#define A_MMAJOR 1  // c5's tuned layout of A on the H200: m-major, lab 7's v8
#endif
// Blocks per SM: two (at most 128 registers each: 16 warps) where two of c5's 96 KB blocks fit an SM's
// shared memory, Hopper and the data-centre Blackwells (228 KB). sm_80 (164 KB) and sm_86, sm_89, sm_120
// (100 KB) hold one, and asking ptxas for two there would only cap the registers (c6 spilled 44-52
// bytes on sm_86 and sm_89 that way): one block, with the registers c6 needs (212-234).
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ < 900 || __CUDA_ARCH__ >= 1200)
#define C6_BLOCKS_PER_SM 1
#else
#define C6_BLOCKS_PER_SM 2
#endif
#ifndef MIN_BLOCKS
#define MIN_BLOCKS C6_BLOCKS_PER_SM
#endif
#ifndef GROUP
#define GROUP 8     // rasterization: 8 block rows walked together
#endif
#ifndef SPLIT_LAUNCH
#define SPLIT_LAUNCH 2 // read by the host (launch.py): 1 runs an even shape's whole tiles as a launch of their own;
#endif                 // 2 also its workers, as cute_sgemm_c6_workers; 0: one launch

#define C5_BODY_ONLY   // c5's body and parameters, without its entry points
#include "c5_wide_epilogue.cu"

namespace c6 {
using namespace cute;

// The accumulators of one thread, as float4 groups: a partial tile is ACC4 x THREADS float4, the
// thread's group i at [i * THREADS + tid], so that a warp writes and reads 512 contiguous bytes.
constexpr int ACC = (BM / THR_M) * (BN / THR_N);
constexpr int ACC4 = ACC / 4;
static_assert(ACC % 4 == 0, "c6: a thread's accumulators are moved as float4");

// The first k-tile iteration of worker w's share (iterations counted over the shared tiles; the host
// keeps their number below 2^31).
__device__ __forceinline__ int share_start(int w, int iters, int workers)
{
    const int q = iters / workers, r = iters % workers;   // one 32-bit division, the same for every w
    return w * q + min(w, r);
}

// The partial tile of worker w: the thread's accumulators, then (thread 0) the flag, released.
// WIDE: a float4 store per group (STG.E.128), which asks ptxas for 4 accumulators in 4 consecutive,
// aligned registers; else 4 scalar stores to the same addresses (the workers entry: see there).
template <bool WIDE = true, class TR>
__device__ __forceinline__ void publish(TR const& acc, float4* part, unsigned* flag)
{
    CUTE_UNROLL
    for (int i = 0; i < ACC4; ++i) {
        if constexpr (WIDE) {
            __stcg(part + i * THREADS + threadIdx.x, make_float4(acc(4 * i), acc(4 * i + 1), acc(4 * i + 2), acc(4 * i + 3)));
        } else {
            float* q = reinterpret_cast<float*>(part + i * THREADS + threadIdx.x);
            __stcg(q, acc(4 * i)); __stcg(q + 1, acc(4 * i + 1)); __stcg(q + 2, acc(4 * i + 2)); __stcg(q + 3, acc(4 * i + 3));
        }
    }
    __threadfence();                          // this thread's partial is visible GPU-wide ...
    __syncthreads();                          // ... for every thread of the block, before the flag
    if (threadIdx.x == 0) {
        asm volatile("st.release.gpu.global.u32 [%0], %1;\n" ::"l"(flag), "r"(1u) : "memory");
    }
}

// Wait until worker w's flag is set (thread 0; acquire), then clear it: the partial is read once.
__device__ __forceinline__ void wait_for(unsigned* flag)
{
    if (threadIdx.x == 0) {
        long long t0 = clock64();
        unsigned v = 0;
        for (;;) {
            asm volatile("ld.acquire.gpu.global.u32 %0, [%1];\n" : "=r"(v) : "l"(flag) : "memory");
            if (v) break;
            __nanosleep(64);
            if (clock64() - t0 > 20000000000LL) __trap();   // ~10 s: a worker that never came
        }
        *flag = 0u;                           // for the next launch (same stream: it starts after this one)
    }
    __syncthreads();
}

// The owner of a tile: wait for each worker before w whose share reaches into the tile (it starts at
// shared k-tile tile_begin), nearest first, and add its partial to the accumulators, in that order.
template <class TR>
__device__ __forceinline__ void add_earlier_partials(TR& acc, float4 const* parts, unsigned* flags, int w,
                                                     int tile_begin, int iters, int workers)
{
    for (int v = w - 1; v >= 0 && share_start(v + 1, iters, workers) > tile_begin; --v) {
        if (share_start(v, iters, workers) == share_start(v + 1, iters, workers)) continue;   // empty share
        wait_for(flags + v);
        const float4* p = parts + static_cast<size_t>(v) * ACC4 * THREADS + threadIdx.x;
        CUTE_UNROLL
        for (int i = 0; i < ACC4; ++i) {
            const float4 q = __ldcg(p + i * THREADS);
            acc(4 * i) += q.x; acc(4 * i + 1) += q.y; acc(4 * i + 2) += q.z; acc(4 * i + 3) += q.w;
        }
    }
}

template <bool VEC>
__device__ __forceinline__ void body(int M, int N, int K, float alpha, const float* A, const float* B, float beta,
                                     float* C, int dp_tiles, int workers, int first_block, float* workspace)
{
    const int gx = (N + BN - 1) / BN, gy = (M + BM - 1) / BM;
    const int k_tiles = (K + BK - 1) / BK;
    const int b = first_block + blockIdx.x;
    auto store = [&](auto const& acc, auto& gC, auto const& thr, int m_left, int n_left, bool inside) {
        c5::store_tile<VEC>(acc, gC, thr, m_left, n_left, inside, alpha, beta);
    };
    const bool whole = b < dp_tiles;          // a data-parallel block: one whole tile, as c5
    const int w = b - dp_tiles;               // else worker w
    float4* const parts = reinterpret_cast<float4*>(workspace);
    unsigned* const flags = reinterpret_cast<unsigned*>(workspace + static_cast<size_t>(max(workers, 0)) * BM * BN);
    const int iters = (gx * gy - dp_tiles) * k_tiles;
    const int s0 = whole ? 0 : share_start(w, iters, workers);
    const int s1 = whole ? 0 : share_start(w + 1, iters, workers);
    // The partial first: the share's last segment, when it stops inside its tile. Its owner, the next
    // worker, waits for it, so it must not wait behind this worker's own waits (that would chain every
    // worker to the one before it). Then the segments that end their tiles, in order: only they wait.
    const bool has_partial = !whole && s1 > s0 && s1 % k_tiles != 0;
    const int owned_end = has_partial ? max(s0, (s1 - 1) / k_tiles * k_tiles) : s1;
    int it = s0;
    // One call site of c5's tile product (one copy of its main loop in the binary), in a loop over
    // the block's segments: k-tiles [kt0, kt1) of tile `tile` (numbered from the first shared tile).
    for (int step = 0;; ++step) {
        int tile, kt0, kt1;
        if (whole) {
            if (step > 0) break;
            tile = b - dp_tiles; kt0 = 0; kt1 = k_tiles;
        } else if (step == 0 && has_partial) {
            tile = owned_end / k_tiles;
            kt0 = owned_end % k_tiles;
            kt1 = s1 - tile * k_tiles;
        } else {
            if (it >= owned_end) break;
            tile = it / k_tiles;
            kt0 = it % k_tiles;
            kt1 = k_tiles;                    // owned segments end their tile (owned_end is a tile boundary)
            it = (tile + 1) * k_tiles;
        }
        const int tile_begin = tile * k_tiles;
        int bm, bn;
        cute_sgemm::raster_of(dp_tiles + tile, gx, gy, GROUP, bm, bn);
        if (step > 0) __syncthreads();        // the previous segment's reads of shared memory are done
        c5::tile_range<VEC>(M, N, K, A, B, C, bm, bn, kt0, kt1,
            [&](auto& acc, auto& gC, auto const& thr, int m_left, int n_left, bool inside) {
                if (kt1 < k_tiles) {          // the tile goes on in the next worker: a partial
                    publish(acc, parts + static_cast<size_t>(w) * ACC4 * THREADS, flags + w);
                    return;
                }
                // The owner (a whole tile's block has no one before it)
                add_earlier_partials(acc, parts, flags, whole ? 0 : w, tile_begin, iters, workers);
                store(acc, gC, thr, m_left, n_left, inside);
            });
    }
}

// The whole tiles of a shape that divides the tile (BM | M, BN | N, BK | K), block b the raster order's
// tile b: c5's product with no edge path (EVEN) and its wide epilogue.
__device__ __forceinline__ void whole_tiles(int M, int N, int K, float alpha, const float* A, const float* B,
                                            float beta, float* C)
{
    int bm, bn;
    cute_sgemm::raster_of(blockIdx.x, N / BN, M / BM, GROUP, bm, bn);
    c5::tile_range<true, true>(M, N, K, A, B, C, bm, bn, 0, K / BK,
        [&](auto const& acc, auto& gC, auto const& thr, int m_left, int n_left, bool inside) {
            c5::store_tile<true>(acc, gC, thr, m_left, n_left, inside, alpha, beta);
        });
}

}  // namespace c6


// ---- SPLIT_LAUNCH = 2: the workers of a shape that divides the tile, in an entry point of their own ----
namespace c6 {
// Segment j of worker w's share, in body()'s order (the partial first, then the segments that end their
// tiles): false when the share has fewer than j + 1 segments.
__device__ __forceinline__ bool segment(int w, int j, int iters, int workers, int k_tiles, int& tile, int& kt0, int& kt1)
{
    const int s0 = share_start(w, iters, workers), s1 = share_start(w + 1, iters, workers);
    const bool has_partial = s1 > s0 && s1 % k_tiles != 0;
    const int owned_end = has_partial ? max(s0, (s1 - 1) / k_tiles * k_tiles) : s1;
    if (has_partial) {
        if (j == 0) {
            tile = owned_end / k_tiles;
            kt0 = owned_end % k_tiles;
            kt1 = s1 - tile * k_tiles;
            return true;
        }
        --j;
    }
    tile = s0 / k_tiles + j;
    if (s0 >= owned_end || tile * k_tiles >= owned_end) return false;
    kt0 = j == 0 ? s0 % k_tiles : 0;
    kt1 = k_tiles;
    return true;
}

// A value ptxas must read again where the source reads it (volatile), instead of keeping it in a register.
__device__ __forceinline__ int reread(int const* p) { return *reinterpret_cast<volatile int const*>(p); }
__device__ __forceinline__ int block_index() { int x; asm volatile("mov.u32 %0, %%ctaid.x;" : "=r"(x)); return x; }

// Worker w = blockIdx.x of `workers`, after the whole tiles (dp_tiles of them) have run in
// cute_sgemm_c6_tiles; BM | M, BN | N and BK | K. The same shares, segments and hand-over as body(),
// with c5's loop without an edge path (make sass: 2317 instructions a tile against the vec entry's
// 2444, 20 copies against 40). Two things keep it at 128 registers without a spill; both forms
// without them spilled 8-32 bytes:
// - the only state carried across a segment's product is its index j, in shared memory (one int per
//   thread, no thread writes another's); after the product the segment is worked out again from j,
//   the block index and the arguments, by reads ptxas must redo (reread, block_index) instead of
//   keeping the share's bounds in registers through the loop;
// - the partial goes out as 4 scalar stores per group (publish<false>): a float4 store asks for the
//   accumulators in aligned register quads.
// What it bought on the H200 (tools/stream_k_phases.py): the workers' launch at 4096^3 in 0.631 ms
// against 0.636 with c6's vec entry (1.045 and 1.054 of the whole tiles' pace).
__device__ __forceinline__ void workers_only(int M, int N, int K, float alpha, const float* A, const float* B,
                                             float beta, float* C, int dp_tiles, int workers, float* workspace)
{
    __shared__ int segment_of[THREADS];        // j, per thread: no thread writes another's
    const int gx = N / BN, gy = M / BM, k_tiles = K / BK;
    const int iters = (gx * gy - dp_tiles) * k_tiles;
    segment_of[threadIdx.x] = 0;
    for (;;) {
        const int j = reread(segment_of + threadIdx.x);
        int tile, kt0, kt1;
        if (!segment(block_index(), j, iters, workers, k_tiles, tile, kt0, kt1)) break;
        int bm, bn;
        cute_sgemm::raster_of(dp_tiles + tile, gx, gy, GROUP, bm, bn);
        if (j > 0) __syncthreads();            // the previous segment's reads of shared memory are done
        c5::tile_range<true, true>(M, N, K, A, B, C, bm, bn, kt0, kt1,
            [&](auto& acc, auto& gC, auto const& thr, int m_left, int n_left, bool inside) {
                const int w = block_index();
                const int shared_iters = (N / BN) * (M / BM) * (K / BK) - dp_tiles * (K / BK);
                int t, k0, k1;
                segment(w, reread(segment_of + threadIdx.x), shared_iters, workers, K / BK, t, k0, k1);
                float4* const parts = reinterpret_cast<float4*>(workspace);
                unsigned* const flags = reinterpret_cast<unsigned*>(workspace + static_cast<size_t>(workers) * BM * BN);
                if (k1 < K / BK) {             // the tile goes on in the next worker: a partial
                    publish<false>(acc, parts + static_cast<size_t>(w) * ACC4 * THREADS, flags + w);
                    return;
                }
                add_earlier_partials(acc, parts, flags, w, t * (K / BK), shared_iters, workers);
                c5::store_tile<true>(acc, gC, thr, m_left, n_left, inside, alpha, beta);
            });
        // j + 1, with j read again: in c7 (A_PACKED) ptxas kept j through the product and spilled it
        segment_of[threadIdx.x] = (A_PACKED == 1 ? reread(segment_of + threadIdx.x) : j) + 1;
    }
}
}  // namespace c6
