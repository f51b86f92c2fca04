// fp16_common.cuh -- lab 7d: the device helpers the FP16 kernels share (gemv_fp16_tc, splitk_fp16,
// skinny_fp16), so that each kernel file shows only its own idea.
//
//   fp16::gather8(p, valid)        8 halves p[0 .. valid) packed in a uint4 for one 16-byte store,
//                                  zeros after (valid <= 0 reads nothing): the edge of a row that is
//                                  not whole 16-byte chunks
//   fp16::mma16816(d, a, b)        d += a . b, one mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
//                                  (fragment layout: the PTX ISA's m16n8k16 figures)
#pragma once
#include <cuda_fp16.h>

namespace fp16 {

__device__ __forceinline__ uint4 gather8(const __half* __restrict__ p, int valid)
{
    const unsigned short* u = reinterpret_cast<const unsigned short*>(p);
    unsigned w[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        const unsigned lo = 2 * i < valid ? u[2 * i] : 0u;
        const unsigned hi = 2 * i + 1 < valid ? u[2 * i + 1] : 0u;
        w[i] = lo | (hi << 16);
    }
    return make_uint4(w[0], w[1], w[2], w[3]);
}

// D (16 x 8, FP32) += A (16 x 16, row) . B (16 x 8, col); lane (g, t) = (lane / 4, lane % 4) holds
// a0..a3 = A[g][2t..], A[g+8][2t..], A[g][2t+8..], A[g+8][2t+8..] (two halves each), b0, b1 =
// B[2t..][g], B[2t+8..][g], and d0..d3 = C[g][2t], C[g][2t+1], C[g+8][2t], C[g+8][2t+1].
__device__ __forceinline__ void mma16816(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2])
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

}  // namespace fp16
