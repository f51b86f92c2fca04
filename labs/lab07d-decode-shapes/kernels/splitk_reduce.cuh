// splitk_reduce.cuh -- lab 7d: the ordered reduce that every two-kernel split-K row runs after its
// main kernel (splitk_fp32, splitk_fp16, splitk_v8), so that each kernel file shows only its split.
//
//   splitk::reduce<kThreads, kUnroll>(M, N, splits, workspace, C)
//       one thread per element of C: C[i] = ((ws[0][i] + ws[1][i]) + ws[2][i]) + ..., z ascending.
//       The same additions in the same order on every run: C is bitwise repeatable for a given
//       number of splits. kUnroll loads are issued before they are added (independent addresses,
//       all in flight); the additions keep their order. For splits = 1 it is a copy.
//       Launch (by the including file's entry point): 1-D blocks of kThreads, grid ceil(M * N / kThreads).
//
// SASS to look for: kUnroll LDG.E.CONSTANT per group of splits, then a chain of FADD, one STG.
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

template <int kThreads, int kUnroll>
__device__ __forceinline__ void reduce(int M, int N, int splits, const float* __restrict__ workspace,
                                       float* __restrict__ C)
{
    static_assert(kUnroll >= 1 && kUnroll <= 32, "splitk::reduce: 1 to 32 loads in flight per thread");
    const size_t MN = (size_t)M * N;
    const size_t i = (size_t)blockIdx.x * kThreads + threadIdx.x;
    if (i >= MN) return;
    const float* p = workspace + i;
    float s = 0.0f;
    int z = 0;
    for (; z + kUnroll <= splits; z += kUnroll) {
        float v[kUnroll];
#pragma unroll
        for (int j = 0; j < kUnroll; ++j) v[j] = __ldg(p + (size_t)(z + j) * MN);
#pragma unroll
        for (int j = 0; j < kUnroll; ++j) s += v[j];
    }
    for (; z < splits; ++z) s += __ldg(p + (size_t)z * MN);
    C[i] = s;
}

}  // namespace splitk
