// splitk_reduce.cuh -- lab 7d: the ordered reduce that every two-kernel split-K row runs after its
// main kernel (splitk_fp32, splitk_fp16, splitk_v8, wgmma_splitk), so that each kernel file shows only its split.
//
//   splitk::reduce<kThreads, kUnroll>(M, N, splits, workspace, C)
//       one thread per element of C: C[i] = ((ws[0][i] + ws[1][i]) + ws[2][i]) + ..., z ascending.
//       The same additions in the same order on every run: C is bitwise repeatable for a given
//       number of splits. kUnroll loads are issued before they are added (independent addresses,
//       all in flight); the additions keep their order. For splits = 1 it is a copy.
//       Launch (by the including file's entry point): 1-D blocks of kThreads, grid ceil(M * N / kThreads).
//
//   The one-launch form for grids of one wave (grid_barrier, reduce_tile_slice) is at the end, and after
//   it the same for the part of a block that is left in a warp-specialized kernel (finish_in_one_launch_part).
//
// SASS to look for: kUnroll LDG.E.CONSTANT per group of splits, then a chain of FADD, one STG. In the
// one-launch form (sm_90): MEMBAR.SC.GPU for the fence, ATOMG.E.ADD.STRONG.GPU for the arrival,
// LDG.E.STRONG.GPU + CCTL.IVALL (the acquire load, L1 invalidated) and NANOSLEEP in the spin, and the
// partials read by LDG.E.128.STRONG.GPU (__ldcg: from L2, never a stale L1 line).
#pragma once

// The reduce's parameters (a split-K file's tiling reads them here: common/tiling.py follows "..." includes).
#ifndef REDUCE_THREADS
#define REDUCE_THREADS 256   // reduce kernel: one output element per thread
#endif
#ifndef REDUCE_UNROLL
#define REDUCE_UNROLL 16     // reduce kernel: partial sums loaded before they are added, per thread
#endif
static_assert(REDUCE_THREADS % 32 == 0 && REDUCE_THREADS <= 1024, "splitk_reduce: REDUCE_THREADS must be whole warps");

namespace splitk {

// p[0] + p[MN] + p[2 MN] + ... (splits terms), added in that order from 0.0f, kUnroll loads in flight.
// kFromL2: the partials were written by other blocks of this same launch (the one-launch form), so
// they are read from L2 (__ldcg); otherwise through the read-only path (__ldg).
template <int kUnroll, bool kFromL2>
__device__ __forceinline__ float sum_splits(const float* p, size_t MN, int splits)
{
    static_assert(kUnroll >= 1 && kUnroll <= 32, "splitk: 1 to 32 loads in flight per thread");
    auto load = [&](int z) { return kFromL2 ? __ldcg(p + (size_t)z * MN) : __ldg(p + (size_t)z * MN); };
    float s = 0.0f;
    int z = 0;
    for (; z + kUnroll <= splits; z += kUnroll) {
        float v[kUnroll];
#pragma unroll
        for (int j = 0; j < kUnroll; ++j) v[j] = load(z + j);
#pragma unroll
        for (int j = 0; j < kUnroll; ++j) s += v[j];
    }
    for (; z < splits; ++z) s += load(z);
    return s;
}

template <int kThreads, int kUnroll>
__device__ __forceinline__ void reduce(int M, int N, int splits, const float* __restrict__ workspace,
                                       float* __restrict__ C)
{
    const size_t MN = (size_t)M * N;
    const size_t i = (size_t)blockIdx.x * kThreads + threadIdx.x;
    if (i >= MN) return;
    C[i] = sum_splits<kUnroll, false>(workspace + i, MN, splits);
}

// ---- One launch instead of two: the reduce inside the main kernel, for a grid of one wave --------
//
// grid_barrier(counters, total): every block of the grid arrives, then waits until all `total` have.
//   Each thread fences its partial's stores (GPU scope), the block meets, and thread 0 fences again
//   (what makes its arrival a release for the whole block's stores in the PTX memory model, as
//   CUTLASS's grid barrier does: a fence, then the add) before it adds one to counters[0] and
//   spins on an acquire load until it reads `total`; the block barrier then orders the block's reads
//   of the other blocks' partials after it. Safe only when every block of the grid is resident at
//   once: the launcher runs this path only for grid <= SMs (one block per SM can always be
//   resident). A wait of 10 s (the GPU's global timer) traps rather than hangs.
// leave(counters, total): after the reduce, the last block to leave zeroes both counters, so the
//   next launch finds them at zero (they are zeroed once when the workspace is allocated).
// reduce_tile_slice<V, TBM, TBN, NT>(M, N, splits, workspace, C): block (x, y, z) adds, in z order as
//   reduce() does, slice z of the TBM x TBN tile at block (x, y): C comes out bitwise the same as the
//   two-launch path's. V = 4: float4 loads and stores (N % 4 == 0); V = 1: per element.
// One thread per block: this block's arrival, then the spin until all `total` blocks have arrived.
__device__ __forceinline__ void arrive_and_wait(unsigned* counters, unsigned total)
{
    __threadfence();            // the release: the block's stores, met at the barrier, before the arrival
    atomicAdd(counters, 1u);
    unsigned seen;
    unsigned long long start, now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    for (;;) {
        asm volatile("ld.acquire.gpu.global.u32 %0, [%1];\n" : "=r"(seen) : "l"(counters) : "memory");
        if (seen >= total) break;
        __nanosleep(100);
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
        if (now - start > 10000000000ull) __trap();   // 10 s and a block never came: fail, do not hang
    }
}

// The last block to leave zeroes both counters (one thread per block calls it).
__device__ __forceinline__ void hand_back(unsigned* counters, unsigned total)
{
    if (atomicAdd(counters + 1, 1u) == total - 1) {
        counters[0] = 0u;                          // every block is past its wait: no one reads them now
        counters[1] = 0u;
    }
}

__device__ __forceinline__ void grid_barrier(unsigned* counters, unsigned total)
{
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) arrive_and_wait(counters, total);
    __syncthreads();
}

__device__ __forceinline__ void leave(unsigned* counters, unsigned total)
{
    __syncthreads();
    if (threadIdx.x == 0) hand_back(counters, total);
}

template <int V, int TBM, int TBN, int NT, int kUnroll>
__device__ __forceinline__ void reduce_tile_slice_by(int M, int N, int splits, const float* workspace, float* C,
                                                     int thread)
{
    static_assert(V == 1 || V == 4, "reduce_tile_slice: per element or float4");
    static_assert(TBN % V == 0, "reduce_tile_slice: whole float4 groups per tile row");
    constexpr int ROW_GROUPS = TBN / V, GROUPS = TBM * ROW_GROUPS;
    const int bm = blockIdx.y * TBM, bn = blockIdx.x * TBN;
    const int per = (GROUPS + splits - 1) / splits;
    const int lo = static_cast<int>(blockIdx.z) * per, hi = min(GROUPS, lo + per);
    const size_t MN = (size_t)M * N;
    for (int g = lo + thread; g < hi; g += NT) {
        const int row = bm + g / ROW_GROUPS, col = bn + (g % ROW_GROUPS) * V;
        if (row >= M || col >= N) continue;        // V = 4: N % 4 == 0, so all four or none
        const float* p = workspace + (size_t)row * N + col;
        if constexpr (V == 4) {
            float4 s = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            int z = 0;
            for (; z + kUnroll <= splits; z += kUnroll) {
                float4 v[kUnroll];
#pragma unroll
                for (int j = 0; j < kUnroll; ++j) v[j] = __ldcg(reinterpret_cast<const float4*>(p + (size_t)(z + j) * MN));
#pragma unroll
                for (int j = 0; j < kUnroll; ++j) { s.x += v[j].x; s.y += v[j].y; s.z += v[j].z; s.w += v[j].w; }
            }
            for (; z < splits; ++z) {
                const float4 v = __ldcg(reinterpret_cast<const float4*>(p + (size_t)z * MN));
                s.x += v.x; s.y += v.y; s.z += v.z; s.w += v.w;
            }
            *reinterpret_cast<float4*>(C + (size_t)row * N + col) = s;
        } else {
            C[(size_t)row * N + col] = sum_splits<kUnroll, true>(p, MN, splits);
        }
    }
}

template <int V, int TBM, int TBN, int NT, int kUnroll>
__device__ __forceinline__ void reduce_tile_slice(int M, int N, int splits, const float* workspace, float* C)
{
    reduce_tile_slice_by<V, TBM, TBN, NT, kUnroll>(M, N, splits, workspace, C, static_cast<int>(threadIdx.x));
}

// The end of a one-launch split-K entry point, after its main body wrote partial z of its tile: the
// grid barrier, this block's slice of the reduce, and the counters handed back. workspace holds the
// splits x M x N partials, then the 2 counters.
template <int V, int TBM, int TBN, int NT, int kUnroll>
__device__ __forceinline__ void finish_in_one_launch(int M, int N, int splits, float* workspace, float* C)
{
    unsigned* const counters = reinterpret_cast<unsigned*>(workspace + static_cast<size_t>(splits) * M * N);
    const unsigned total = gridDim.x * gridDim.y * gridDim.z;
    grid_barrier(counters, total);
    reduce_tile_slice<V, TBM, TBN, NT, kUnroll>(M, N, splits, workspace, C);
    leave(counters, total);
}

// ---- The same for part of a block: a warp-specialized kernel (wgmma_splitk.cu) -----------------------
// Its producer warpgroup has exited by the time the partial tile is written, so the block barrier
// (bar.sync 0, every thread of the block) is not the tool: the NT threads that remain, numbered
// `thread` = 0 .. NT - 1, synchronise on named barrier kBar (bar.sync kBar, NT) and share the slice.
// The same barrier, the same slice and the same additions in the same order as above.
template <int kBar, int kThreads>
__device__ __forceinline__ void named_barrier()
{
    static_assert(kBar >= 1 && kBar < 16 && kThreads % 32 == 0, "splitk: a named barrier 1..15 of whole warps");
    asm volatile("bar.sync %0, %1;\n" :: "n"(kBar), "n"(kThreads) : "memory");
}

template <int kBar, int V, int TBM, int TBN, int NT, int kUnroll>
__device__ __forceinline__ void finish_in_one_launch_part(int M, int N, int splits, float* workspace, float* C,
                                                          int thread)
{
    unsigned* const counters = reinterpret_cast<unsigned*>(workspace + static_cast<size_t>(splits) * M * N);
    const unsigned total = gridDim.x * gridDim.y * gridDim.z;
    __threadfence();                               // this thread's partial, visible to the whole GPU
    named_barrier<kBar, NT>();
    if (thread == 0) arrive_and_wait(counters, total);
    named_barrier<kBar, NT>();
    reduce_tile_slice_by<V, TBM, TBN, NT, kUnroll>(M, N, splits, workspace, C, thread);
    named_barrier<kBar, NT>();
    if (thread == 0) hand_back(counters, total);
}

}  // namespace splitk
