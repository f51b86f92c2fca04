// cutlass_reference.cuh: what the yardstick rows share (lab 7's cutlass_mma_sync.cu, FP16, and lab 7a's
// cutlass_tf32_mma_sync.cu, TF32): NVIDIA CUTLASS's sm80 multistage GEMM at kernel level, launched on
// the course's grid. The including file defines the tile parameters (BM BN BK WM WN STAGES GROUP
// CUTLASS_PROBE) and THREADS and SMEM_BYTES from them; this header only instantiates CUTLASS with them.
#pragma once

#include <type_traits>

#include <cutlass/epilogue/thread/linear_combination.h>
#include <cutlass/gemm/kernel/default_gemm.h>

static_assert(BM % WM == 0 && BN % WN == 0, "the block tile must be a whole number of warp tiles");
static_assert(STAGES >= 3, "CUTLASS's multistage main loop needs at least 3 stages");
static_assert(SMEM_BYTES <= 227 * 1024, "shared memory above 227 KB, the most any supported GPU gives a block");
static_assert(GROUP >= 1, "GROUP must be at least 1");
static_assert(CUTLASS_PROBE == 0 || CUTLASS_PROBE == 1, "CUTLASS_PROBE is 0 (the kernel) or 1 (B column-major)");

namespace cutlass_reference {

using cutlass::gemm::GemmCoord;
using LayoutB = typename std::conditional<CUTLASS_PROBE == 1, cutlass::layout::ColumnMajor,
                                          cutlass::layout::RowMajor>::type;

// The course launches grid (ceil(N/BN), ceil(M/BM)). Number the blocks in launch order and walk the
// tiles in bands of GROUP columns, each band row by row: CUTLASS's order, without idle blocks.
struct CourseRaster {
    CUTLASS_HOST_DEVICE CourseRaster() {}
    CUTLASS_HOST_DEVICE static int get_log_tile(GemmCoord) { return 0; }
    CUTLASS_DEVICE static GemmCoord get_tile_offset(int)
    {
        const int tiles_n = gridDim.x, tiles_m = gridDim.y;
        const int b = blockIdx.y * tiles_n + blockIdx.x;
        const int band = b / (tiles_m * GROUP);
        const int width = min(GROUP, tiles_n - band * GROUP);   // the last band may be narrower
        const int r = b - band * tiles_m * GROUP;
        return GemmCoord(r / width, band * GROUP + r % width, 0);
    }
};

// Element: cutlass::half_t or float (TF32 math: CUTLASS rounds each operand to TF32 in registers);
// kAlign: elements per 16-byte copy; MmaShape: the mma.sync instruction's m x n x k.
template <class Element, int kAlign, class MmaShape>
using Gemm = typename cutlass::gemm::kernel::DefaultGemm<
    Element, cutlass::layout::RowMajor, kAlign,               // A: row-major, 16-byte copies
    Element, LayoutB, kAlign,                                 // B: row-major (the probe: column-major)
    float, cutlass::layout::RowMajor, float,                  // C and the accumulators
    cutlass::arch::OpClassTensorOp, cutlass::arch::Sm80,      // mma.sync, Ampere's pipeline
    cutlass::gemm::GemmShape<BM, BN, BK>, cutlass::gemm::GemmShape<WM, WN, BK>, MmaShape,
    cutlass::epilogue::thread::LinearCombination<float, 4, float, float>,   // alpha AB + beta C, float4
    CourseRaster, STAGES, false, cutlass::arch::OpMultiplyAdd>::GemmKernel;

// One block's tile: C = alpha A B + beta C (beta == 0: C is not read; CUTLASS's epilogue skips it).
template <class Element, int kAlign, class MmaShape>
__device__ __forceinline__ void gemm(int M, int N, int K, float alpha, const Element* A, const Element* B,
                                     float beta, float* C)
{
    using G = Gemm<Element, kAlign, MmaShape>;
    static_assert(G::kThreadCount == THREADS, "THREADS must be what CUTLASS launches per block");
    static_assert(sizeof(typename G::SharedStorage) <= SMEM_BYTES,
                  "SMEM_BYTES must hold CUTLASS's shared storage (main loop or epilogue, whichever is larger)");
    extern __shared__ __align__(16) unsigned char smem[];
    const GemmCoord problem(M, N, K), tiles(gridDim.y, gridDim.x, 1);
    const typename G::Params params(problem, tiles, {const_cast<Element*>(A), K},
                                    {const_cast<Element*>(B), CUTLASS_PROBE == 1 ? K : N},
                                    {C, N}, {C, N}, {alpha, beta});
    G{}(params, *reinterpret_cast<typename G::SharedStorage*>(smem));
}

}  // namespace cutlass_reference
