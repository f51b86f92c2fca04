// cute_sgemm.cuh -- lab 7b: what every rung shares, so that each kernel file shows only its own idea.
//
//   cute_sgemm::raster(group, bm, bn)         block rasterization: the block's tile coordinates (m, n)
//   cute_sgemm::raster_of(pid, gx, gy, group, bm, bn)   the same for tile number pid of a gx x gy grid
//   cute_sgemm::store_c_scalar(...)           C = alpha acc + beta C per element, predicated at the edges;
//                                             with beta == 0 C is never read
//   cute_sgemm::store_c_rows_vec(...)         the same with 128-bit loads and stores (c5's wide epilogue),
//                                             for a block wholly inside C
//   cute_sgemm::outer_product<ORDER>(a, b, c) c(m, n) += a(m) b(n) in a chosen order: 0 is cute::gemm's
//                                             (a "kinked serpentine": pairs of rows, the columns back and
//                                             forth), 1 columns outer (lab 7's v8), 2 rows outer (v7)
//
// Row-major everywhere. The course's matrices are A (M x K), B (K x N), C (M x N), row-major. The
// worklog's kernel is column-major "nn"; a row-major matrix is the column-major view of its transpose,
// so the worklog computes C^T = B^T A^T. We instead write the row-major layouts directly:
//     mA (M, K) : (K, 1)      A as it lies in memory, k contiguous
//     mB (N, K) : (1, N)      B viewed as (N, K), so that K is the right-hand mode of both operands
//                             (as in the worklog); n contiguous
//     mC (M, N) : (N, 1)      n contiguous
// The worklog's "A" (its contiguous-M operand) is our B; its "B" (the K-contiguous operand, the tile
// that gets the swizzle) is our A. The README's section "Row-major, and the worklog's nn" has the table.
#pragma once
#include <cute/tensor.hpp>

namespace cute_sgemm {
using namespace cute;

// Rasterization: blocks launch in blockIdx order, x fastest. With group > 1 the linear block number
// walks `group` block rows down before moving one column right, so blocks resident together share A
// and B panels in L2. group == 1 is launch order.
// raster_of: the same walk for tile number pid of a gx x gy grid of tiles (a kernel that numbers its
// tiles itself: c6's stream-K).
__device__ __forceinline__ void raster_of(int pid, int gx, int gy, int group, int& bm, int& bn)
{
    bm = pid / gx;
    bn = pid % gx;
    if (group > 1) {
        const int per_group = group * gx;
        const int first = (pid / per_group) * group;
        const int rows = min(gy - first, group);
        const int r = pid % per_group;
        bm = first + r % rows;
        bn = r / rows;
    }
}

// (Written out, not raster_of on blockIdx: with group = 1 that divides the block number where this
// reads blockIdx, and c5's A_MMAJOR = 1 build then compiled to 160 / 168 registers instead of 150 / 128.)
__device__ __forceinline__ void raster(int group, int& bm, int& bn)
{
    bm = blockIdx.y;
    bn = blockIdx.x;
    if (group > 1) {
        const int pid = blockIdx.y * gridDim.x + blockIdx.x;
        const int per_group = group * gridDim.x;
        const int first = (pid / per_group) * group;
        const int rows = min(static_cast<int>(gridDim.y) - first, group);
        const int r = pid % per_group;
        bm = first + r % rows;
        bn = r / rows;
    }
}

// C = alpha * acc + beta * C, one element at a time, only where the coordinate lies inside C.
//   tCrC  (MMA, MMA_M, MMA_N)  the accumulators          tCgC  (MMA, MMA_M, MMA_N)  the block's C
//   tCcC  (MMA, MMA_M, MMA_N)  (m, n) of each within the block tile; residue = (M - m0, N - n0)
template <class TR, class TG, class TC, class Res>
__device__ __forceinline__ void store_c_scalar(TR const& tCrC, TG& tCgC, TC const& tCcC, Res const& residue,
                                               float alpha, float beta)
{
    if (beta == 0.0f) {                       // C may hold NaN: never read it
        CUTE_UNROLL
        for (int i = 0; i < size(tCrC); ++i)
            if (elem_less(tCcC(i), residue)) tCgC(i) = alpha * tCrC(i);
    } else {
        CUTE_UNROLL
        for (int i = 0; i < size(tCrC); ++i)
            if (elem_less(tCcC(i), residue)) tCgC(i) = alpha * tCrC(i) + beta * tCgC(i);
    }
}

// The wide epilogue for a block wholly inside C: row by row (mode MMA_M), the thread's values of one
// row go through a small register fragment with AutoVectorizingCopy, which issues the widest access
// the two layouts allow: 128 bits when the thread's n values come in contiguous, aligned groups of 4
// (c5's permuted layout; the row start is 16-byte aligned because N % 4 == 0).
template <class TR, class TG>
__device__ __forceinline__ void store_c_rows_vec(TR const& tCrC, TG& tCgC, float alpha, float beta)
{
    CUTE_UNROLL
    for (int m = 0; m < size<1>(tCrC); ++m) {
        Tensor row = make_fragment_like(tCrC(_, m, _));              // (MMA, MMA_N) registers
        if (beta == 0.0f) {
            CUTE_UNROLL
            for (int i = 0; i < size(row); ++i) row(i) = alpha * tCrC(_, m, _)(i);
        } else {
            copy(AutoVectorizingCopy{}, tCgC(_, m, _), row);          // LDG.E.128
            CUTE_UNROLL
            for (int i = 0; i < size(row); ++i) row(i) = alpha * tCrC(_, m, _)(i) + beta * row(i);
        }
        copy(AutoVectorizingCopy{}, row, tCgC(_, m, _));              // STG.E.128
    }
}

// One k-block's outer product. The arithmetic is the same in every order; ptxas allocates registers and
// schedules the FFMA differently, and in an issue-bound kernel the operand-register bank conflicts that
// follow (ncu: dispatch_stall) are worth several percent. A knob for the tuner (c5's FMA_ORDER).
//   a (MMA, MMA_M)   b (MMA, MMA_N)   c (MMA, MMA_M, MMA_N)
template <int ORDER, class TMma, class TA, class TB, class TC>
__device__ __forceinline__ void outer_product(TMma const& mma, TA const& a, TB const& b, TC& c)
{
    if constexpr (ORDER == 0) {
        gemm(mma, a, b, c);
    } else if constexpr (ORDER == 1) {
        CUTE_UNROLL
        for (int n = 0; n < size<1>(b); ++n)
            CUTE_UNROLL
            for (int m = 0; m < size<1>(a); ++m) c(0, m, n) = fmaf(a(0, m), b(0, n), c(0, m, n));
    } else {
        CUTE_UNROLL
        for (int m = 0; m < size<1>(a); ++m)
            CUTE_UNROLL
            for (int n = 0; n < size<1>(b); ++n) c(0, m, n) = fmaf(a(0, m), b(0, n), c(0, m, n));
    }
}

}  // namespace cute_sgemm
