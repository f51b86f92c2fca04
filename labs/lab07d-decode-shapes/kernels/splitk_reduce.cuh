// splitk_reduce.cuh -- lab 7d: the ordered reduce that every two-kernel split-K row runs after its
// main kernel (splitk_fp32, splitk_fp16, splitk_v8), so that each kernel file shows only its split.
//
//   splitk::reduce<kThreads, kUnroll, kVec>(M, N, splits, workspace, C)
//       kVec elements of C per thread (1, or 4 by float4 when M N % 4 == 0; else 4 one by one):
//       C[i] = ((ws[0][i] + ws[1][i]) + ws[2][i]) + ..., z ascending.
//       The same additions in the same order on every run: C is bitwise repeatable for a given
//       number of splits. kUnroll loads are issued before they are added (independent addresses,
//       all in flight); the additions keep their order. For splits = 1 it is a copy.
//       Launch (by the including file's entry point): 1-D blocks of kThreads, grid
//       ceil(M * N / (kThreads * kVec)) (launch.py reads REDUCE_VEC from the kernel's file).
//
// SASS to look for: kUnroll LDG.E.CONSTANT (.128 with kVec = 4) per group of splits, then chains of
// FADD, one STG per element (STG.E.128).
#pragma once

namespace splitk {

template <int kThreads, int kUnroll, int kVec>
__device__ __forceinline__ void reduce(int M, int N, int splits, const float* __restrict__ workspace,
                                       float* __restrict__ C)
{
    static_assert(kUnroll >= 1 && kUnroll <= 32, "splitk::reduce: 1 to 32 loads in flight per thread");
    static_assert(kVec == 1 || kVec == 4, "splitk::reduce: a thread adds 1 element or 4 (one float4)");
    const size_t MN = (size_t)M * N;
    const size_t i = ((size_t)blockIdx.x * kThreads + threadIdx.x) * kVec;
    if (i >= MN) return;
    if (kVec == 4 && MN % 4 == 0) {           // every split's slice 16-byte aligned: float4 loads
        const float4* p = reinterpret_cast<const float4*>(workspace + i);
        const size_t step = MN / 4;
        float4 s = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        int z = 0;
        for (; z + kUnroll <= splits; z += kUnroll) {
            float4 v[kUnroll];
#pragma unroll
            for (int j = 0; j < kUnroll; ++j) v[j] = __ldg(p + (size_t)(z + j) * step);
#pragma unroll
            for (int j = 0; j < kUnroll; ++j) { s.x += v[j].x; s.y += v[j].y; s.z += v[j].z; s.w += v[j].w; }
        }
        for (; z < splits; ++z) {
            const float4 v = __ldg(p + (size_t)z * step);
            s.x += v.x; s.y += v.y; s.z += v.z; s.w += v.w;
        }
        *reinterpret_cast<float4*>(C + i) = s;
        return;
    }
#pragma unroll
    for (int e = 0; e < kVec; ++e) {          // one element, or the 4 of a group when M N % 4 != 0
        if (i + e >= MN) return;
        const float* p = workspace + i + e;
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
        C[i + e] = s;
    }
}

}  // namespace splitk
