// c5_wide_epilogue.cu -- lab 7b, c5: c4 + the wide axpby epilogue (a permuted MMA thread layout)
//
// C = alpha * A * B + beta * C, row-major FP32, A is M x K, B is K x N, C is M x N, any M, N, K >= 1.
// With beta == 0, C is never read (it may hold NaN).
// Entry points (one template): cute_sgemm_c5_vec    K % 4 == 0 and N % 4 == 0: 128-bit copies and C access
//                              cute_sgemm_c5_scalar any shape: 32-bit cp.async, C per element
// Launch: 1-D block of THREADS = THR_M * THR_N = 256, grid (ceil(N / BN), ceil(M / BM)), SMEM_BYTES of
// dynamic shared memory (96 KB by default: above 48 KB the runtime raises the kernel's limit first).
//
// What c5 adds over c4: which outputs a thread owns. In c1..c4 the MMA's 16 x 16 threads own C
// elements 16 apart in n (thread n-index t, values t, t+16, ..., t+112), so each of its 64 results is
// its own 32-bit store. c5 passes make_tiled_mma a permutation of the N mode, PermN, a layout
// BEGIN SOLUTION c5-perm-formula: PermN as a CuTe shape : stride
//     PermN = (THR_N, 4, BN / (4 THR_N)) : (4, 1, 4 THR_N)      (16,4,2):(4,1,64) by default
// END SOLUTION c5-perm-formula
// read as "the MMA's n-index x lands on column PermN(x)": thread t's 8 values move from columns
// t + 16 j to 4 t + {0,1,2,3} and 64 + 4 t + {0,1,2,3}, two groups of four adjacent columns. C is row-major
// (n contiguous), so a row of a thread's outputs is two aligned float4: the epilogue moves them with
// AutoVectorizingCopy, which picks the widest access both layouts allow: LDG.E.128 / STG.E.128. (The
// worklog permutes its M mode: its C is column-major, ours is row-major; see cute_sgemm.cuh.)
// The same permutation makes the B operand reads 128-bit: sB (BN, BK) is n-contiguous, and a thread's
// 8 n values at one k are now two float4, 2 LDS.128 per k instead of 8 LDS. The A reads were already
// LDS.128 along k: the compiler merges a thread's 4 consecutive k of one row of the k-major sA tile into
// one load (its rows are 16 bytes aligned; c4's swizzle moves whole 16-byte chunks).
//
// Tiles: the worklog's 128 x 128 x 32 block tile, 3 stages, 16 x 16 threads of 8 x 8 outputs each.
// `make tune` searches the CTA tile, the thread layout, BK, STAGES and four knobs past the worklog, all
// off by default (tuning.py; the README's "Tuning" has what they did on the H200):
//   GROUP       block rasterization (cute_sgemm::raster): GROUP block rows walked together
//   MIN_BLOCKS  the second __launch_bounds__ argument: 2 asks ptxas for at most 128 registers
//   A_MMAJOR    1: sA m-major, (BM, BK) : (1, BM) under an XOR swizzle (SwizzleAM), filled by 4-byte
//               cp.async (a 16-byte copy cannot transpose) and read as LDS.128 along m after the MMA
//               permutes M as it permutes N: lab 7's v8 layout, fewer live A registers per thread
//   FMA_ORDER   the order of a k-block's FFMA (cute_sgemm::outer_product)
// and one that changes what the kernel is given (c7_packed_a.cu sets it; its header says why):
//   A_PACKED    1: A arrives transposed, K x M with m contiguous (c7 packs it so before the product), and
//               travels like B: 16-byte cp.async along m into sA (BM, BK, STAGES) : (1, BM, BM BK), the
//               layout of sB, no swizzle (a warp writes 4 k-rows of 128 bytes, reads 2 addresses of one);
//               the scalar entry copies 4 bytes, m fastest. Needs A_MMAJOR = 1 (the MMA's permuted M).
//
// SASS to look for: in the main loop FFMA, LDS.128 (2 for A and 2 for B per k; 8 scalar LDS per tile are
// the next tile's first k-block of A, loaded after the barrier, which cannot merge), LDGSTS.E.BYPASS
// .LTC128B.128 (vec) or LDGSTS.E.LTC128B (scalar), LDGDEPBAR, DEPBAR.LE SB0, one BAR.SYNC per tile; in the
// epilogue LDG.E.128 and STG.E.128 (vec). No LDL/STL. ncu: shared-load wavefronts per instruction
// (make ncu-table) against the bank model (models.py). With A_MMAJOR = 1 the A copies are LDGSTS.E.LTC128B
// (4 bytes) in both entry points, and A is read by LDS.128 at one k instead of along k.

// BEGIN PARAMETERS
#ifndef BM
#define BM 128      // block tile rows: 8 per thread x THR_M = 16
#endif
#ifndef BN
#define BN 128      // block tile columns: 8 per thread x THR_N = 16, in groups of 4 (PermN)
#endif
#ifndef BK
#define BK 32       // k-slice per tile: a 128-byte row of the k-major sA tile; a power of two >= 8
#endif
#ifndef STAGES
#define STAGES 3    // shared buffers: 2 tiles in flight while one is computed (32 KB each)
#endif
#ifndef THR_M
#define THR_M 16    // MMA threads along M
#endif
#ifndef THR_N
#define THR_N 16    // MMA threads along N, the fast index: a warp is 2 m-rows x 16 n-columns of threads
#endif
#ifndef GROUP
#define GROUP 1     // block rows walked together by the rasterization; 1 = launch order
#endif
#ifndef MIN_BLOCKS
#define MIN_BLOCKS 1 // blocks per SM that __launch_bounds__ asks ptxas to fit (2: at most 128 registers)
#endif
#ifndef A_MMAJOR
#define A_MMAJOR 0  // 0: sA k-major (the worklog's); 1: sA m-major, transposed by 4-byte copies (lab 7's v8)
#endif
#ifndef A_PACKED
#define A_PACKED 0  // 1: A is given as K x M, m contiguous (c7): 16-byte copies of A along m
#endif
#ifndef FMA_ORDER
#define FMA_ORDER 0 // order of a k-block's FFMA: 0 cute::gemm's, 1 n outer (v8), 2 m outer (v7); tuning only
#endif

#define THREADS (THR_M * THR_N)                                        // threads per block
#define SMEM_BYTES (STAGES * (BM * BK + BN * BK) * sizeof(float))      // dynamic, bytes
// END PARAMETERS

#include "cute_sgemm.cuh"

namespace c5 {
using namespace cute;

// BEGIN PARAMETERS
constexpr int log2i(int x) { return x <= 1 ? 0 : 1 + log2i(x / 2); }
constexpr int B_COLS = BN < THREADS ? BN : THREADS;   // scalar B copy: threads across a row

static_assert(BM > 0 && BN > 0 && BK > 0 && THR_M > 0 && THR_N > 0, "c5: every tile parameter must be positive");
static_assert(THREADS % 32 == 0 && THREADS <= 1024, "c5: THR_M * THR_N must be whole warps, at most 1024 threads");
static_assert(BM % THR_M == 0 && BN % THR_N == 0, "c5: the MMA threads must tile the block tile (BM % THR_M == 0, BN % THR_N == 0)");
static_assert((BM / THR_M) * (BN / THR_N) <= 128, "c5: at most 128 accumulators per thread (more do not fit 255 registers)");
static_assert(BK >= 8 && (BK & (BK - 1)) == 0, "c5: BK must be a power of two, at least 8 (the swizzle works on the bits of the offset)");
static_assert(THREADS % (BK / 4) == 0 && BM % (THREADS / (BK / 4)) == 0, "c5: the A tile's 16-byte chunks must split evenly over THREADS");
static_assert(THREADS % (BN / 4) == 0 && BK % (THREADS / (BN / 4)) == 0, "c5: the B tile's 16-byte chunks must split evenly over THREADS");
static_assert(THREADS % BK == 0 && BM % (THREADS / BK) == 0, "c5: the scalar A copy needs THREADS % BK == 0 and BM % (THREADS / BK) == 0");
static_assert(BN % B_COLS == 0 && BK % (THREADS / B_COLS) == 0, "c5: the scalar B copy needs BN % min(BN, THREADS) == 0 and whole k-rows per pass");
static_assert(STAGES >= 2 && STAGES <= 8, "c5: STAGES must be 2..8 (one buffer computed on, at least one being filled)");
static_assert(BN % (4 * THR_N) == 0, "c5: BN must be a multiple of 4 * THR_N (a thread's n values come in groups of 4)");
static_assert(GROUP >= 1, "c5: GROUP (block rows per raster group) must be at least 1");
static_assert(MIN_BLOCKS >= 1 && MIN_BLOCKS * THREADS <= 2048, "c5: MIN_BLOCKS resident blocks must fit an SM's 2048 threads");
static_assert(A_MMAJOR == 0 || A_MMAJOR == 1, "c5: A_MMAJOR is 0 (k-major sA) or 1 (m-major sA)");
static_assert(A_MMAJOR == 0 || (BM % 32 == 0 && BM % (4 * THR_M) == 0),
              "c5: A_MMAJOR = 1 needs BM % 32 == 0 and BM % (4 * THR_M) == 0 (whole swizzled chunks, m in groups of 4)");
static_assert(A_PACKED == 0 || (A_PACKED == 1 && A_MMAJOR == 1 && THREADS % BK == 0 && BM % (4 * (THREADS / BK)) == 0),
              "c5: A_PACKED = 1 needs A_MMAJOR = 1, THREADS % BK == 0 and BM % (4 * THREADS / BK) == 0 (a k per thread)");
static_assert(FMA_ORDER >= 0 && FMA_ORDER <= 2, "c5: FMA_ORDER is 0 (cute::gemm), 1 (n outer) or 2 (m outer)");
static_assert(SMEM_BYTES <= 227 * 1024, "c5: STAGES x (BM + BN) x BK floats exceed 227 KB, the most a block may use "
                                        "(sm_86/89/120 give 99 KB; the launcher checks the device)");
// END PARAMETERS

using TileM = Int<BM>;
using TileN = Int<BN>;
using TileK = Int<BK>;
using Stages = Int<STAGES>;

// Shared memory, one layout per operand, the stage as a third mode (the layouts' cosize is the
// allocation: SMEM_BYTES is checked against it below).
//   sA (BM, BK, STAGES) : (BK, 1, BM BK)  k contiguous, as A lies in global memory, under c4's SwizzleA
//                                          (c4's header explains it)
//   sB (BN, BK, STAGES) : (1, BN, BN BK)  n contiguous, as B lies in global memory
//   A_MMAJOR = 1, a tuning knob past the worklog: sA (BM, BK, STAGES) : (1, BM, BM BK), m contiguous, under
//   SwizzleAM: k's low bits XOR the 16-byte chunk index along m, lab 7's v8 layout. A 16-byte copy cannot transpose, so A then travels by 4-byte cp.async
//   (a warp: 32 consecutive k of one row), and the MMA permutes M as it permutes N: a thread's A values
//   at one k are two float4 along m, its register pressure that of v8 (8 + 16 operands per k).
// BEGIN SOLUTION c5-swizzle: c4's SwizzleA, and SwizzleAM of the A_MMAJOR = 1 build (c4's exercise, not c5's)
using SwizzleA = Swizzle<1, 2, log2i(BK) - 2>;
using SwizzleAM = Swizzle<3, 2, log2i(BM) - 2>;
// END SOLUTION c5-swizzle
using SmemLayoutAK = decltype(composition(SwizzleA{},
    make_layout(make_shape(TileM{}, TileK{}, Stages{}), make_stride(TileK{}, _1{}, Int<BM * BK>{}))));
using SmemLayoutAM = decltype(composition(SwizzleAM{},
    make_layout(make_shape(TileM{}, TileK{}, Stages{}), make_stride(_1{}, TileM{}, Int<BM * BK>{}))));
using SmemLayoutAP = decltype(make_layout(make_shape(TileM{}, TileK{}, Stages{}),     // A_PACKED = 1: sB's layout
                                          make_stride(_1{}, TileM{}, Int<BM * BK>{})));
using SmemLayoutA = cute::conditional_t<A_PACKED == 1, SmemLayoutAP,
                                        cute::conditional_t<A_MMAJOR == 1, SmemLayoutAM, SmemLayoutAK>>;
using SmemLayoutB = decltype(make_layout(make_shape(TileN{}, TileK{}, Stages{}),
                                         make_stride(_1{}, TileN{}, Int<BN * BK>{})));
static_assert(SMEM_BYTES == (cosize_v<SmemLayoutA> + cosize_v<SmemLayoutB>) * sizeof(float),
              "c5: SMEM_BYTES must be what the two shared layouts occupy");

// The tiled copies global -> shared: a thread layout and the values each thread moves per copy atom.
// vec: 16-byte cp.async (cp.async.cg: L2 only, LDGSTS.E.BYPASS.128), zero-filling outside the matrix;
// scalar (any K, N): 4-byte cp.async.ca per element. The thread layouts run along the contiguous mode,
// so a warp reads whole 128-byte lines: A rows k-first, B rows n-first.
template <bool VEC>
struct Copies;

// A_PACKED = 1, A given as K x M: the thread layout spans all BK rows of the tile, so each thread copies
// at one k only, and its copies lie at constant distances along m from one runtime address. (With
// fewer threads along k, each thread also steps along k by a multiple of M, a runtime distance: ptxas
// kept more addresses and c7 spilled.) This one, the scalar entry's: (THREADS / BK, BK) threads, m
// fastest, 4 bytes each.
using CopyA32M = decltype(make_tiled_copy(Copy_Atom<SM80_CP_ASYNC_CACHEALWAYS_ZFILL<uint32_t>, float>{},
    make_layout(make_shape(Int<THREADS / BK>{}, Int<BK>{})),
    make_layout(make_shape(_1{}, _1{}))));

// A by 4-byte copies, k fastest: the scalar entry's copy, and both entries' when A_MMAJOR = 1.
using CopyA32 = decltype(make_tiled_copy(Copy_Atom<SM80_CP_ASYNC_CACHEALWAYS_ZFILL<uint32_t>, float>{},
    make_layout(make_shape(Int<THREADS / BK>{}, Int<BK>{}), LayoutRight{}),
    make_layout(make_shape(_1{}, _1{}))));

template <>
struct Copies<true> {
    // A: (THREADS / (BK/4), BK/4) threads, k fastest, x (1, 4) values: 8 threads per 128-byte row of A.
    using A128 = decltype(make_tiled_copy(Copy_Atom<SM80_CP_ASYNC_CACHEGLOBAL_ZFILL<uint128_t>, float>{},
        make_layout(make_shape(Int<THREADS / (BK / 4)>{}, Int<BK / 4>{}), LayoutRight{}),
        make_layout(make_shape(_1{}, _4{}))));
    // A_PACKED = 1: (THREADS / BK, BK) threads, m fastest, x (4, 1) values: a thread's copies of a tile
    // are along m at one k (CopyA32M says why); a warp reads 4 k-rows of 128 contiguous bytes.
    using A128M = decltype(make_tiled_copy(Copy_Atom<SM80_CP_ASYNC_CACHEGLOBAL_ZFILL<uint128_t>, float>{},
        make_layout(make_shape(Int<THREADS / BK>{}, Int<BK>{})),
        make_layout(make_shape(_4{}, _1{}))));
    using A = cute::conditional_t<A_PACKED == 1, A128M, cute::conditional_t<A_MMAJOR == 1, CopyA32, A128>>;
    // B: (BN/4, THREADS / (BN/4)) threads, n fastest, x (4, 1) values: a warp reads 512 bytes of a B row.
    using B = decltype(make_tiled_copy(Copy_Atom<SM80_CP_ASYNC_CACHEGLOBAL_ZFILL<uint128_t>, float>{},
        make_layout(make_shape(Int<BN / 4>{}, Int<THREADS / (BN / 4)>{})),
        make_layout(make_shape(_4{}, _1{}))));
};

template <>
struct Copies<false> {
    using A = cute::conditional_t<A_PACKED == 1, CopyA32M, CopyA32>;
    using B = decltype(make_tiled_copy(Copy_Atom<SM80_CP_ASYNC_CACHEALWAYS_ZFILL<uint32_t>, float>{},
        make_layout(make_shape(Int<B_COLS>{}, Int<THREADS / B_COLS>{})),
        make_layout(make_shape(_1{}, _1{}))));
};

// The tiled MMA: UniversalFMA (one FFMA by one thread) tiled over THR_M x THR_N threads, n the fast
// index (thread t: m-index t / THR_N, n-index t % THR_N); N permuted by PermN (the header says why).
// Partitioning the 128 x 128 tile repeats the 16 x 16 thread tile 8 x 8 times: 64 accumulators per thread.
// BEGIN SOLUTION c5-perm: PermN (and PermM, the same for M, used only when A_MMAJOR = 1), CuTe Layouts
using PermN = Layout<Shape<Int<THR_N>, _4, Int<BN / (4 * THR_N)>>, Stride<_4, _1, Int<4 * THR_N>>>;
using PermM = Layout<Shape<Int<THR_M>, _4, Int<BM / (4 * THR_M)>>, Stride<_4, _1, Int<4 * THR_M>>>;   // A_MMAJOR = 1
// END SOLUTION c5-perm
using TiledMma = decltype(make_tiled_mma(UniversalFMA<float, float, float>{},
    Layout<Shape<Int<THR_M>, Int<THR_N>, _1>, Stride<Int<THR_N>, _1, _0>>{},
    Tile<cute::conditional_t<A_MMAJOR == 1, PermM, TileM>, PermN, TileK>{}));

// A as an (M, K) tensor: row-major, k contiguous; with A_PACKED = 1 (c7) given as K x M, m contiguous.
__device__ __forceinline__ auto a_tensor(const float* A, int M, int K)
{
    if constexpr (A_PACKED == 1) return make_tensor(make_gmem_ptr(A), make_shape(M, K), make_stride(_1{}, M));
    else                         return make_tensor(make_gmem_ptr(A), make_shape(M, K), make_stride(K, _1{}));
}

// The product of block tile (bm, bn) over the k-tiles [kt0, kt1) of K (c5 itself: all of them), then
// finish(acc, gC, thr_mma, m_left, n_left, inside): the accumulators, the tile of C, the MMA's thread
// slice, the rows and columns of C left from the tile's corner, and whether the tile lies wholly inside.
// c6 (stream-K) calls it with part of K and its own finish.
// EVEN (c6's whole-tile entry): the caller guarantees BM | M, BN | N and BK | K, so every copy is whole
// and unpredicated: no edge test at any tile, and ptxas allocates a main loop with no edge path in it.
// (`inside` is then true at run time; finish still gets it as a value: with the constant, ptxas
// allocated the same loop differently, 26 % of its FFMA with register-bank conflicts against 14 %.)
template <bool VEC, bool EVEN = false, class Finish>
__device__ __forceinline__ void tile_range(int M, int N, int K, const float* A, const float* B, float* C,
                                           int bm, int bn, int kt0, int kt1, Finish&& finish)
{
    Tensor mA = a_tensor(A, M, K);                                                       // (M, K)
    Tensor mB = make_tensor(make_gmem_ptr(B), make_shape(N, K), make_stride(_1{}, N));   // (N, K)
    Tensor mC = make_tensor(make_gmem_ptr(C), make_shape(M, N), make_stride(N, _1{}));   // (M, N)
    auto tiler = make_shape(TileM{}, TileN{}, TileK{});
    auto coord = make_coord(bm, bn, _);
    Tensor gA = local_tile(mA, tiler, coord, Step<_1, X, _1>{});     // (BM, BK, k_tiles)
    Tensor gB = local_tile(mB, tiler, coord, Step<X, _1, _1>{});     // (BN, BK, k_tiles)
    Tensor gC = local_tile(mC, tiler, coord, Step<_1, _1, X>{});     // (BM, BN)

    extern __shared__ float4 smem_raw[];
    float* smem = reinterpret_cast<float*>(smem_raw);
    Tensor sA = make_tensor(make_smem_ptr(smem), SmemLayoutA{});                          // (BM, BK, STAGES)
    Tensor sB = make_tensor(make_smem_ptr(smem + cosize_v<SmemLayoutA>), SmemLayoutB{});   // (BN, BK, STAGES)

    // Copies global -> shared, partitioned per thread, and the (m, k) / (n, k) coordinate of each element
    // (an identity tensor partitioned the same way) to predicate them at the edges of the matrices.
    typename Copies<VEC>::A copy_a;
    typename Copies<VEC>::B copy_b;
    auto thr_a = copy_a.get_slice(threadIdx.x);
    auto thr_b = copy_b.get_slice(threadIdx.x);
    Tensor tAgA = thr_a.partition_S(gA);                                   // (CPY, CPY_M, CPY_K, k_tiles)
    Tensor tAsA = thr_a.partition_D(sA);                                   // (CPY, CPY_M, CPY_K, STAGES)
    Tensor tBgB = thr_b.partition_S(gB);                                   // (CPY, CPY_N, CPY_K, k_tiles)
    Tensor tBsB = thr_b.partition_D(sB);                                   // (CPY, CPY_N, CPY_K, STAGES)
    Tensor tAcA = thr_a.partition_S(make_identity_tensor(make_shape(TileM{}, TileK{})));   // (CPY, CPY_M, CPY_K)
    Tensor tBcB = thr_b.partition_S(make_identity_tensor(make_shape(TileN{}, TileK{})));   // (CPY, CPY_N, CPY_K)
    const int m_left = M - bm * BM, n_left = N - bn * BN;
    const bool inside = m_left >= BM && n_left >= BN;
    // Tile t into buffer s. A block wholly inside the matrices copies unpredicated; at an edge each
    // 16-byte (vec) or 4-byte (scalar) copy is predicated on its first element's coordinate, and a
    // false predicate zero-fills (cp.async with src-size 0), so the MMA multiplies zeros there.
    auto load_tile = [&](int t, int s) {
        const int k_left = K - t * BK;
        if (EVEN || (inside && k_left >= BK)) {
            copy(copy_a, tAgA(_, _, _, t), tAsA(_, _, _, s));
            copy(copy_b, tBgB(_, _, _, t), tBsB(_, _, _, s));
        } else {
            auto pa = cute::lazy::transform(tAcA, [&](auto c) { return elem_less(c, make_coord(m_left, k_left)); });
            auto pb = cute::lazy::transform(tBcB, [&](auto c) { return elem_less(c, make_coord(n_left, k_left)); });
            Tensor dA = tAsA(_, _, _, s);
            Tensor dB = tBsB(_, _, _, s);
            copy_if(copy_a, pa, tAgA(_, _, _, t), dA);
            copy_if(copy_b, pb, tBgB(_, _, _, t), dB);
        }
    };

    // The MMA's view: each thread's values of A, B and C. The register sets hold 2 k-blocks (not BK):
    // the k mode of the shared partitions is (MMA, MMA_M, MMA_K = BK, STAGES).
    TiledMma mma;
    auto thr_mma = mma.get_slice(threadIdx.x);
    Tensor tCsA = thr_mma.partition_A(sA);                 // (MMA, MMA_M, MMA_K, STAGES)
    Tensor tCsB = thr_mma.partition_B(sB);                 // (MMA, MMA_N, MMA_K, STAGES)
    Tensor tCgC = thr_mma.partition_C(gC);                 // (MMA, MMA_M, MMA_N)
    Tensor tCrA = make_tensor<float>(make_shape(size<0>(tCsA), size<1>(tCsA), _2{}));   // (MMA, MMA_M, 2)
    Tensor tCrB = make_tensor<float>(make_shape(size<0>(tCsB), size<1>(tCsB), _2{}));   // (MMA, MMA_N, 2)
    Tensor tCrC = thr_mma.make_fragment_C(tCgC);           // (MMA, MMA_M, MMA_N)
    clear(tCrC);

    // Prologue: tiles 0 .. STAGES-2 in flight, one commit group each (empty when K is short, so that
    // "wait until at most STAGES-2 groups are pending" always means "the next tile has landed").
    CUTE_UNROLL
    for (int s = 0; s < STAGES - 1; ++s) {
        if (kt0 + s < kt1) load_tile(kt0 + s, s);
        cp_async_fence();
    }
    // BEGIN SOLUTION c5-fence-prologue: c4's prologue fence
    cp_async_wait<STAGES - 2>();
    __syncthreads();
    // END SOLUTION c5-fence-prologue
    int read = 0, write = STAGES - 1;
    copy(tCsA(_, _, 0, read), tCrA(_, _, 0));             // k-block 0 of tile 0 into register set 0
    copy(tCsB(_, _, 0, read), tCrB(_, _, 0));

    // Main loop. Tile t+STAGES-1 is copied into the buffer tile t-1 left; then per k-block: load the
    // next k-block into the other register set, and multiply this one (gemm: the outer product of
    // the thread's 8 A and 8 B values, 64 FFMA). One barrier per tile.
    for (int t = kt0; t < kt1; ++t) {
        if (t + STAGES - 1 < kt1) load_tile(t + STAGES - 1, write);
        cp_async_fence();
        CUTE_UNROLL
        for (int k = 0; k < BK; ++k) {
            if (k == BK - 1) {   // tile t+1 has landed for everyone, and everyone holds tile t's last
                                 // k-block in registers: tile t's buffer is free for the next copy
                // BEGIN SOLUTION c5-fence: c4's fence of the rotation
                cp_async_wait<STAGES - 2>();
                __syncthreads();
                // END SOLUTION c5-fence
                write = read;
                read = (read + 1 == STAGES) ? 0 : read + 1;
            }
            const int kn = (k + 1) % BK;   // k-block k+1: of this tile, or (k = BK-1) the next tile's first
            copy(tCsA(_, _, kn, read), tCrA(_, _, (k + 1) & 1));
            copy(tCsB(_, _, kn, read), tCrB(_, _, (k + 1) & 1));
            cute_sgemm::outer_product<FMA_ORDER>(mma, tCrA(_, _, k & 1), tCrB(_, _, k & 1), tCrC);
        }
    }

    finish(tCrC, tCgC, thr_mma, m_left, n_left, inside);
}

// C = alpha acc + beta C for one block tile: 128-bit rows inside C (vec), per element at its edges.
template <bool VEC, class TR, class TG, class Thr>
__device__ __forceinline__ void store_tile(TR const& tCrC, TG& tCgC, Thr const& thr_mma, int m_left, int n_left,
                                           bool inside, float alpha, float beta)
{
    if (VEC && inside) {
        cute_sgemm::store_c_rows_vec(tCrC, tCgC, alpha, beta);
    } else {
        Tensor tCcC = thr_mma.partition_C(make_identity_tensor(make_shape(TileM{}, TileN{})));
        cute_sgemm::store_c_scalar(tCrC, tCgC, tCcC, make_coord(m_left, n_left), alpha, beta);
    }
}

template <bool VEC>
__device__ __forceinline__ void body(int M, int N, int K, float alpha, const float* A, const float* B,
                                     float beta, float* C)
{
    int bm, bn;
    cute_sgemm::raster(GROUP, bm, bn);
    tile_range<VEC>(M, N, K, A, B, C, bm, bn, 0, (K + BK - 1) / BK,
                    [&](auto const& acc, auto& gC, auto const& thr, int m_left, int n_left, bool inside) {
                        store_tile<VEC>(acc, gC, thr, m_left, n_left, inside, alpha, beta);
                    });
}

}  // namespace c5

#ifndef C5_BODY_ONLY   // c6_stream_k.cu includes this file for its body, with its own entry points
extern "C" __global__ void __launch_bounds__(THREADS, MIN_BLOCKS)
cute_sgemm_c5_vec(int M, int N, int K, float alpha, const float* A, const float* B, float beta, float* C)
{
    c5::body<true>(M, N, K, alpha, A, B, beta, C);
}

extern "C" __global__ void __launch_bounds__(THREADS, MIN_BLOCKS)
cute_sgemm_c5_scalar(int M, int N, int K, float alpha, const float* A, const float* B, float beta, float* C)
{
    c5::body<false>(M, N, K, alpha, A, B, beta, C);
}
#endif
