// tf32_common.cuh -- lab 7a: the device helpers the TF32 rungs k2..k7 share (k1 uses WMMA only).
//
//   tf32_operand(x)        FP32 -> the 32-bit register an mma operand slot takes (rounded or raw)
//   mma_tf32_16x8x8(d,a,b) d += a . b, one mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32
//   ldmatrix_x4(r, addr)   four 8 x 8 b16 matrices from shared memory (LDSM.16.M88.4)
//   cp_async_16 / _4       global -> shared copies that bypass registers (LDGSTS), zero-fill form
//   cp_async_commit / cp_async_wait<N>   group bookkeeping (LDGDEPBAR / DEPBAR.LE SB0, N)
//   smem_u32(p)            a generic pointer into shared memory as the 32-bit address PTX wants
//
// Each kernel file defines TF32_ROUND (1 or 0) in its parameter block before including this file.
// A kernel file is still one idea: what is here is plumbing every rung from k2 on uses unchanged.

#pragma once
#include <cstdint>

#ifndef TF32_ROUND
#error "define TF32_ROUND (1: round operands to the nearest TF32, 0: truncate) before tf32_common.cuh"
#endif

// An FP32 value enters the tensor core as TF32: sign, 8 exponent bits, the top 10 mantissa bits.
// TF32_ROUND = 1: round to the nearest TF32, relative error <= 2^-11 per operand.
//     sm_90 and newer: cvt.rn.tf32.f32 (ties to even), one native F2FP.TF32.F32.PACK_B.
//     sm_80..sm_89:    cvt.rna.tf32.f32 (ties away; the only rounding cvt those targets have), which
//                      ptxas emulates: FSETP (Inf/NaN test) + predicated IMAD.IADD (add 0x1000).
// TF32_ROUND = 0: pass the FP32 bits; the tensor core ignores the low 13 mantissa bits, i.e. it
//     truncates toward zero: relative error < 2^-10 per operand, no instruction at all.
// TF32_OPERAND, if defined, names a replacement __device__ function float -> uint32_t. It exists for
// the grader's known-wrong kernels only (one rounds through FP16 or BF16 instead).
__device__ __forceinline__ uint32_t tf32_operand(float x)
{
#if defined(TF32_OPERAND)
    return TF32_OPERAND(x);
#elif TF32_ROUND && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    uint32_t r;
    asm("cvt.rn.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
    return r;
#elif TF32_ROUND
    uint32_t r;
    asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
    return r;
#else
    return __float_as_uint(x);
#endif
}

// d[0..3] += A(16 x 8, row) . B(8 x 8, col). Fragment layout (g = lane / 4, t = lane % 4):
//   a0 = A[g][t], a1 = A[g+8][t], a2 = A[g][t+4], a3 = A[g+8][t+4]
//   b0 = B[t][g], b1 = B[t+4][g]
//   d0 = C[g][2t], d1 = C[g][2t+1], d2 = C[g+8][2t], d3 = C[g+8][2t+1]
__device__ __forceinline__ void mma_tf32_16x8x8(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2])
{
    asm volatile(
        "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
        "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

__device__ __forceinline__ uint32_t smem_u32(const void* p)
{
    return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// Four 8 x 8 matrices of 16-bit elements; lane l gives the address of row l % 8 of matrix l / 8
// (16 bytes, 16-byte aligned). Register j of lane l receives row l / 4, halves 2(l % 4) and
// 2(l % 4) + 1 of matrix j: on FP32 data that is the 32-bit element [l / 4][l % 4] of an 8 x 4 block.
__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], uint32_t addr)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}

// 16 bytes global -> shared, L1 bypassed (.cg). valid == false: reads nothing, writes 16 zero bytes
// (src-size 0); src must still be a legal address expression, so callers pass the matrix base.
__device__ __forceinline__ void cp_async_16(uint32_t dst, const void* src, bool valid)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n"
                 :: "r"(dst), "l"(src), "r"(valid ? 16 : 0) : "memory");
}

// 4 bytes global -> shared (.ca: the only cache mode legal for 4-byte copies); zero-fill as above.
__device__ __forceinline__ void cp_async_4(uint32_t dst, const void* src, bool valid)
{
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n"
                 :: "r"(dst), "l"(src), "r"(valid ? 4 : 0) : "memory");
}

__device__ __forceinline__ void cp_async_commit()
{
    asm volatile("cp.async.commit_group;\n" ::: "memory");
}

// Wait until at most N of this thread's committed groups are still in flight.
template <int N>
__device__ __forceinline__ void cp_async_wait()
{
    asm volatile("cp.async.wait_group %0;\n" :: "n"(N) : "memory");
}
