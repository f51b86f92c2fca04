// cutlass_mma_sync.cu: the yardstick for t4. NVIDIA CUTLASS's own Ampere GEMM (the "sm80 multistage"
// tensor-op kernel of CUTLASS 2.x, from the nvidia-cutlass wheel's headers) built from the same ideas
// as t4: mma.sync.m16n8k16 fed by ldmatrix, XOR-swizzled shared tiles, a cp.async pipeline of
// STAGES buffers, 64 x 64 warp tiles, fragments double-buffered. We write none of its main loop: this
// file only picks its tile shapes and launches it with the course's interface, so that `make bench`
// can say how far t4 is from what NVIDIA's library does with the same instruction on the same GPU.
//
//   C (FP32, M x N) = A (FP16, M x K) . B (FP16, K x N), all row-major, FP32 accumulation.
//   Entry point: hgemm_cutlass  (int M, int N, int K, const half* A, const half* B, float* C)
//   Launch: 1-D block of THREADS = (BM/WM)*(BN/WN)*32, grid (ceil(N/BN), ceil(M/BM)), SMEM_BYTES dynamic.
//   Shapes: any M >= 1; K and N multiples of 8 (CUTLASS copies rows of A and B as 16-byte chunks).
//
// Tiles (defaults): block 128 x 256 x 32, 8 warps of 64 x 64, 3 stages: one of CUTLASS's own Ampere
// configurations, 72 KB of shared memory, so it runs on every GPU of the course (sm_86/89/120 give a
// block 99 KB). On the H200 at 4096^3 it reached 63.8 % of cuBLAS HGEMM, CUTLASS's deeper BK=64 tile
// (144 KB) 64.7 %, and neither passed 65 % with B given k-contiguous (make bounds KERNEL=cutlass;
// lab README, "A yardstick").
//
// Block order: CUTLASS's identity swizzle walks the output in bands of 8 tile columns, row after row
// inside a band, so that the blocks resident together share their B columns in L2. Its grid has idle
// blocks when 8 does not divide the tile columns; CourseRaster below walks the same order on the
// course's grid, one block per tile.
//
// What to look for in SASS (make sass): HMMA.16816.F32, LDSM.16.M88.4 (A), LDSM.16.MT88.4 (B,
// transposed), LDGSTS.E.BYPASS.LTC128B.128, one BAR.SYNC per k-tile; set its counts beside t4's.
#include <cuda_fp16.h>

#include <cutlass/epilogue/thread/linear_combination.h>
#include <cutlass/gemm/kernel/default_gemm.h>

#ifndef BM
#define BM 128      // block tile rows
#endif
#ifndef BN
#define BN 256      // block tile columns
#endif
#ifndef BK
#define BK 32       // K depth of one stage: two 16-deep mma k-steps
#endif
#ifndef WM
#define WM 64       // warp tile rows
#endif
#ifndef WN
#define WN 64       // warp tile columns
#endif
#ifndef STAGES
#define STAGES 3    // shared buffers: STAGES-1 tiles in flight while one is read
#endif
#ifndef GROUP
#define GROUP 8     // rasterization: tile columns per band (CUTLASS's identity swizzle uses 8)
#endif
#ifndef CUTLASS_PROBE
#define CUTLASS_PROBE 0   // make bounds KERNEL=cutlass: 1 reads B as column-major (k contiguous), the
#endif                    // layout CUTLASS is fastest on: both operands by ldmatrix. Its results are
                          // WRONG by design (B is given row-major); only its time means something.

#define THREADS ((BM / WM) * (BN / WN) * 32)
#define SMEM_BYTES (STAGES * (BM * BK + BK * BN) * sizeof(half))   // A and B stages, no padding

static_assert(BM % WM == 0 && BN % WN == 0, "the block tile must be a whole number of warp tiles");
static_assert(WM % 16 == 0 && WN % 8 == 0 && BK % 16 == 0, "warp tiles are made of m16n8k16 mma tiles");
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

using Gemm = typename cutlass::gemm::kernel::DefaultGemm<
    cutlass::half_t, cutlass::layout::RowMajor, 8,            // A: row-major, 8-half (16-byte) copies
    cutlass::half_t, LayoutB, 8,                              // B: row-major (ldmatrix .trans)
    float, cutlass::layout::RowMajor, float,                  // C and the accumulators
    cutlass::arch::OpClassTensorOp, cutlass::arch::Sm80,      // mma.sync, Ampere's pipeline
    cutlass::gemm::GemmShape<BM, BN, BK>, cutlass::gemm::GemmShape<WM, WN, BK>,
    cutlass::gemm::GemmShape<16, 8, 16>,                      // mma.sync.m16n8k16
    cutlass::epilogue::thread::LinearCombination<float, 4, float, float>,   // C = 1 * AB + 0 * C, float4
    CourseRaster, STAGES, false, cutlass::arch::OpMultiplyAdd>::GemmKernel;

static_assert(Gemm::kThreadCount == THREADS, "THREADS must be what CUTLASS launches per block");
static_assert(sizeof(typename Gemm::SharedStorage) <= SMEM_BYTES,
              "SMEM_BYTES must hold CUTLASS's shared storage (main loop or epilogue, whichever is larger)");

}  // namespace cutlass_reference

extern "C" __global__ void __launch_bounds__(THREADS)
hgemm_cutlass(int M, int N, int K, const half* A, const half* B, float* C)
{
    using namespace cutlass_reference;
    extern __shared__ __align__(16) unsigned char smem[];
    const GemmCoord problem(M, N, K), tiles(gridDim.y, gridDim.x, 1);
    const typename Gemm::Params params(problem, tiles,
                                       {(cutlass::half_t*)A, K}, {(cutlass::half_t*)B, CUTLASS_PROBE == 1 ? K : N},
                                       {C, N}, {C, N}, {1.0f, 0.0f});
    Gemm{}(params, *reinterpret_cast<typename Gemm::SharedStorage*>(smem));
}
