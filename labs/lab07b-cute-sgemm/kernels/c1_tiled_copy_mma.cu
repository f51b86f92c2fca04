// c1_tiled_copy_mma.cu -- lab 7b, c1: a CuTe tiled copy (global -> shared) and a 16 x 16 UniversalFMA tiled MMA
//
// C = alpha * A * B + beta * C, row-major FP32, A is M x K, B is K x N, C is M x N, any M, N, K >= 1.
// With beta == 0, C is never read (it may hold NaN).
// Entry points (one template): cute_sgemm_c1_vec    K % 4 == 0 and N % 4 == 0: 16-byte global loads
//                              cute_sgemm_c1_scalar any shape: 4-byte loads
// Launch: 1-D block of THREADS = THR_M * THR_N = 256, grid (ceil(N / BN), ceil(M / BM)), SMEM_BYTES of
// dynamic shared memory (32 KB).
//
// The idea: the worklog's skeleton, with CuTe doing the index arithmetic. Every matrix is a Tensor (a
// pointer and a layout, shape : stride), and every step is a partition of one:
//   local_tile        the block's tiles: gA (BM, BK, k_tiles), gB (BN, BK, k_tiles), gC (BM, BN)
//   TiledCopy         which thread copies which elements of a tile: tAgA / tAsA (CPY, CPY_M, CPY_K)
//   TiledMMA          which thread multiplies which: tCsA (MMA, MMA_M, MMA_K), tCgC (MMA, MMA_M, MMA_N)
//   gemm(mma, a, b, c)  the outer product of the thread's fragments: 8 x 8 FFMA per k-block
// The tile is the worklog's: 128 x 128 x 32, 16 x 16 threads, each owning 8 x 8 outputs 16 apart in
// both m and n. The copy goes through registers (UniversalCopy: LDG, then STS), so the whole block
// waits for its global loads before it can compute: two barriers per tile, nothing overlapped.
//
// SASS to look for: LDG.E.128 + STS.128 (vec) or LDG.E + STS (scalar) for the tiles; in the k loop
// FFMA with LDS.128 for A (nvcc merges a thread's 4 consecutive k of one k-major A row into one load)
// and 8 scalar LDS per k for B (a thread's 8 n values are 16 columns apart); two BAR.SYNC per tile;
// STG.E in the epilogue. No LDL/STL.

#ifndef BM
#define BM 128      // block tile rows: 8 per thread x THR_M = 16
#endif
#ifndef BN
#define BN 128      // block tile columns: 8 per thread x THR_N = 16
#endif
#ifndef BK
#define BK 32       // k-slice per tile: a 128-byte row of the k-major sA tile
#endif
#ifndef THR_M
#define THR_M 16    // MMA threads along M
#endif
#ifndef THR_N
#define THR_N 16    // MMA threads along N, the fast index: a warp is 2 m-rows x 16 n-columns of threads
#endif

#define THREADS (THR_M * THR_N)                                        // threads per block
#define SMEM_BYTES ((BM * BK + BN * BK) * sizeof(float))                 // dynamic, bytes

#include "cute_sgemm.cuh"

namespace c1 {
using namespace cute;

constexpr int B_COLS = BN < THREADS ? BN : THREADS;   // scalar B copy: threads across a row

static_assert(BM > 0 && BN > 0 && BK > 0 && THR_M > 0 && THR_N > 0, "c1: every tile parameter must be positive");
static_assert(THREADS % 32 == 0 && THREADS <= 1024, "c1: THR_M * THR_N must be whole warps, at most 1024 threads");
static_assert(BM % THR_M == 0 && BN % THR_N == 0, "c1: the MMA threads must tile the block tile (BM % THR_M == 0, BN % THR_N == 0)");
static_assert((BM / THR_M) * (BN / THR_N) <= 128, "c1: at most 128 accumulators per thread (more do not fit 255 registers)");
static_assert(BK % 4 == 0, "c1: BK must be a multiple of 4 (A is copied in 16-byte chunks along k)");
static_assert(THREADS % (BK / 4) == 0 && BM % (THREADS / (BK / 4)) == 0, "c1: the A tile's 16-byte chunks must split evenly over THREADS");
static_assert(THREADS % (BN / 4) == 0 && BK % (THREADS / (BN / 4)) == 0, "c1: the B tile's 16-byte chunks must split evenly over THREADS");
static_assert(THREADS % BK == 0 && BM % (THREADS / BK) == 0, "c1: the scalar A copy needs THREADS % BK == 0 and BM % (THREADS / BK) == 0");
static_assert(BN % B_COLS == 0 && BK % (THREADS / B_COLS) == 0, "c1: the scalar B copy needs BN % min(BN, THREADS) == 0 and whole k-rows per pass");
static_assert(SMEM_BYTES <= 227 * 1024, "c1: (BM + BN) x BK floats exceed 227 KB, the most a block may use "
                                        "(sm_86/89/120 give 99 KB; the launcher checks the device)");

using TileM = Int<BM>;
using TileN = Int<BN>;
using TileK = Int<BK>;

// Shared memory, one layout per operand (the layouts' cosize is the allocation: SMEM_BYTES is checked
// against it below).
//   sA (BM, BK) : (BK, 1)   k contiguous, as A lies in global memory
//   sB (BN, BK) : (1, BN)   n contiguous, as B lies in global memory
using SmemLayoutA = decltype(make_layout(make_shape(TileM{}, TileK{}), make_stride(TileK{}, _1{})));
using SmemLayoutB = decltype(make_layout(make_shape(TileN{}, TileK{}), make_stride(_1{}, TileN{})));
static_assert(SMEM_BYTES == (cosize_v<SmemLayoutA> + cosize_v<SmemLayoutB>) * sizeof(float),
              "c1: SMEM_BYTES must be what the two shared layouts occupy");

// The tiled copies global -> shared: a thread layout and the values each thread moves per copy atom.
// UniversalCopy<uint128_t> is a plain 16-byte load or store (vec: LDG.E.128, STS.128); uint32_t one
// float (scalar: any K, N). The thread layouts run along the contiguous mode, so a warp reads whole
// 128-byte lines: A rows k-first, B rows n-first.
template <bool VEC>
struct Copies;

template <>
struct Copies<true> {
    // A: (THREADS / (BK/4), BK/4) threads, k fastest, x (1, 4) values: 8 threads per 128-byte row of A.
    using A = decltype(make_tiled_copy(Copy_Atom<UniversalCopy<uint128_t>, float>{},
        make_layout(make_shape(Int<THREADS / (BK / 4)>{}, Int<BK / 4>{}), LayoutRight{}),
        make_layout(make_shape(_1{}, _4{}))));
    // B: (BN/4, THREADS / (BN/4)) threads, n fastest, x (4, 1) values: a warp reads 512 bytes of a B row.
    using B = decltype(make_tiled_copy(Copy_Atom<UniversalCopy<uint128_t>, float>{},
        make_layout(make_shape(Int<BN / 4>{}, Int<THREADS / (BN / 4)>{})),
        make_layout(make_shape(_4{}, _1{}))));
};

template <>
struct Copies<false> {
    using A = decltype(make_tiled_copy(Copy_Atom<UniversalCopy<uint32_t>, float>{},
        make_layout(make_shape(Int<THREADS / BK>{}, Int<BK>{}), LayoutRight{}),
        make_layout(make_shape(_1{}, _1{}))));
    using B = decltype(make_tiled_copy(Copy_Atom<UniversalCopy<uint32_t>, float>{},
        make_layout(make_shape(Int<B_COLS>{}, Int<THREADS / B_COLS>{})),
        make_layout(make_shape(_1{}, _1{}))));
};

// The tiled MMA: UniversalFMA (one FFMA by one thread) tiled over THR_M x THR_N threads, n the fast
// index (thread t: m-index t / THR_N, n-index t % THR_N). Partitioning the 128 x 128 tile repeats the
// 16 x 16 thread tile 8 x 8 times: thread t owns rows t/16 + 16 i, columns t%16 + 16 j, 64 accumulators.
using TiledMma = decltype(make_tiled_mma(UniversalFMA<float, float, float>{},
    Layout<Shape<Int<THR_M>, Int<THR_N>, _1>, Stride<Int<THR_N>, _1, _0>>{}));

template <bool VEC>
__device__ __forceinline__ void body(int M, int N, int K, float alpha, const float* A, const float* B,
                                     float beta, float* C)
{
    const int bm = blockIdx.y, bn = blockIdx.x;           // the block's tile of C

    Tensor mA = make_tensor(make_gmem_ptr(A), make_shape(M, K), make_stride(K, _1{}));   // (M, K)
    Tensor mB = make_tensor(make_gmem_ptr(B), make_shape(N, K), make_stride(_1{}, N));   // (N, K)
    Tensor mC = make_tensor(make_gmem_ptr(C), make_shape(M, N), make_stride(N, _1{}));   // (M, N)
    auto tiler = make_shape(TileM{}, TileN{}, TileK{});
    auto coord = make_coord(bm, bn, _);
    Tensor gA = local_tile(mA, tiler, coord, Step<_1, X, _1>{});     // (BM, BK, k_tiles)
    Tensor gB = local_tile(mB, tiler, coord, Step<X, _1, _1>{});     // (BN, BK, k_tiles)
    Tensor gC = local_tile(mC, tiler, coord, Step<_1, _1, X>{});     // (BM, BN)

    extern __shared__ float4 smem_raw[];
    float* smem = reinterpret_cast<float*>(smem_raw);
    Tensor sA = make_tensor(make_smem_ptr(smem), SmemLayoutA{});                          // (BM, BK)
    Tensor sB = make_tensor(make_smem_ptr(smem + cosize_v<SmemLayoutA>), SmemLayoutB{});   // (BN, BK)

    // Copies global -> shared, partitioned per thread, and the (m, k) / (n, k) coordinate of each element
    // (an identity tensor partitioned the same way) to predicate them at the edges of the matrices.
    typename Copies<VEC>::A copy_a;
    typename Copies<VEC>::B copy_b;
    auto thr_a = copy_a.get_slice(threadIdx.x);
    auto thr_b = copy_b.get_slice(threadIdx.x);
    Tensor tAgA = thr_a.partition_S(gA);                                   // (CPY, CPY_M, CPY_K, k_tiles)
    Tensor tAsA = thr_a.partition_D(sA);                                   // (CPY, CPY_M, CPY_K)
    Tensor tBgB = thr_b.partition_S(gB);                                   // (CPY, CPY_N, CPY_K, k_tiles)
    Tensor tBsB = thr_b.partition_D(sB);                                   // (CPY, CPY_N, CPY_K)
    Tensor tAcA = thr_a.partition_S(make_identity_tensor(make_shape(TileM{}, TileK{})));   // (CPY, CPY_M, CPY_K)
    Tensor tBcB = thr_b.partition_S(make_identity_tensor(make_shape(TileN{}, TileK{})));   // (CPY, CPY_N, CPY_K)
    const int m_left = M - bm * BM, n_left = N - bn * BN;
    const bool inside = m_left >= BM && n_left >= BN;
    const int k_tiles = (K + BK - 1) / BK;

    // Tile t: global -> registers -> shared. A block wholly inside the matrices copies unpredicated; at
    // an edge the registers are zeroed and only the copies whose first element lies inside the matrix
    // are made (copy_if), so the tile is zero-padded and the MMA multiplies zeros there.
    Tensor tArA = make_fragment_like(tAsA);                                // (CPY, CPY_M, CPY_K)
    Tensor tBrB = make_fragment_like(tBsB);                                // (CPY, CPY_N, CPY_K)
    auto load_tile = [&](int t) {
        const int k_left = K - t * BK;
        if (inside && k_left >= BK) {
            copy(copy_a, tAgA(_, _, _, t), tArA);
            copy(copy_b, tBgB(_, _, _, t), tBrB);
        } else {
            auto pa = cute::lazy::transform(tAcA, [&](auto c) { return elem_less(c, make_coord(m_left, k_left)); });
            auto pb = cute::lazy::transform(tBcB, [&](auto c) { return elem_less(c, make_coord(n_left, k_left)); });
            clear(tArA);
            clear(tBrB);
            copy_if(copy_a, pa, tAgA(_, _, _, t), tArA);
            copy_if(copy_b, pb, tBgB(_, _, _, t), tBrB);
        }
        copy(copy_a, tArA, tAsA);
        copy(copy_b, tBrB, tBsB);
    };

    // The MMA's view: each thread's values of A, B and C. The registers hold one k-block (not BK):
    // the k mode of the shared partitions is (MMA, MMA_M, MMA_K = BK).
    TiledMma mma;
    auto thr_mma = mma.get_slice(threadIdx.x);
    Tensor tCsA = thr_mma.partition_A(sA);                 // (MMA, MMA_M, MMA_K)
    Tensor tCsB = thr_mma.partition_B(sB);                 // (MMA, MMA_N, MMA_K)
    Tensor tCgC = thr_mma.partition_C(gC);                 // (MMA, MMA_M, MMA_N)
    Tensor tCrA = make_tensor<float>(make_shape(size<0>(tCsA), size<1>(tCsA), _1{}));   // (MMA, MMA_M, 1)
    Tensor tCrB = make_tensor<float>(make_shape(size<0>(tCsB), size<1>(tCsB), _1{}));   // (MMA, MMA_N, 1)
    Tensor tCrC = thr_mma.make_fragment_C(tCgC);           // (MMA, MMA_M, MMA_N)
    clear(tCrC);

    // Main loop: the whole block loads a tile, waits for it, computes it k-block by k-block (load the
    // thread's 8 A and 8 B values from shared memory, 64 FFMA), and waits again before the next tile
    // may overwrite it. Two barriers per tile; the loads of tile t+1 start only after tile t is done.
    for (int t = 0; t < k_tiles; ++t) {
        load_tile(t);
        __syncthreads();
        CUTE_UNROLL
        for (int k = 0; k < BK; ++k) {
            copy(tCsA(_, _, k), tCrA(_, _, 0));
            copy(tCsB(_, _, k), tCrB(_, _, 0));
            gemm(mma, tCrA(_, _, 0), tCrB(_, _, 0), tCrC);
        }
        __syncthreads();
    }

    // Epilogue: C = alpha acc + beta C per element, predicated (a thread's columns are 16 apart).
    Tensor tCcC = thr_mma.partition_C(make_identity_tensor(make_shape(TileM{}, TileN{})));   // (MMA, MMA_M, MMA_N)
    cute_sgemm::store_c_scalar(tCrC, tCgC, tCcC, make_coord(m_left, n_left), alpha, beta);
}

}  // namespace c1

extern "C" __global__ void __launch_bounds__(THREADS)
cute_sgemm_c1_vec(int M, int N, int K, float alpha, const float* A, const float* B, float beta, float* C)
{
    c1::body<true>(M, N, K, alpha, A, B, beta, C);
}

extern "C" __global__ void __launch_bounds__(THREADS)
cute_sgemm_c1_scalar(int M, int N, int K, float alpha, const float* A, const float* B, float beta, float* C)
{
    c1::body<false>(M, N, K, alpha, A, B, beta, C);
}
