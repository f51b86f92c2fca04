// c4_swizzle.cu -- lab 7b, c4: c3 + an XOR swizzle, Swizzle<B, M, S>, on the k-major tile (the worklog's B
// tile, our A)
//
// C = alpha * A * B + beta * C, row-major FP32, A is M x K, B is K x N, C is M x N, any M, N, K >= 1.
// With beta == 0, C is never read (it may hold NaN).
// Entry points (one template): cute_sgemm_c4_vec    K % 4 == 0 and N % 4 == 0: 16-byte cp.async
//                              cute_sgemm_c4_scalar any shape: 4-byte cp.async
// Launch: 1-D block of THREADS = THR_M * THR_N = 256, grid (ceil(N / BN), ceil(M / BM)), SMEM_BYTES of
// dynamic shared memory (96 KB by default).
//
// What c4 adds over c3: sA = composition(SwizzleA, (BM, BK, STAGES) : (BK, 1, BM BK)). The
// worklog's kernel is column-major; its k-contiguous operand tile is its "B". In the row-major mapping
// (cute_sgemm.cuh) that operand is our A, so the swizzle goes on sA.
//
// The conflict. In the MMA layout lanes 0-15 of a warp share an m-row and lanes 16-31 the next one.
// At one k, a 32-bit read of sA by the warp touches two words, rows m and m+1 of the same column k:
// offsets 32 m + k and 32 (m+1) + k, 32 floats apart, the same bank: a 2-way conflict (the 16 lanes
// of a row share their word, a broadcast, which is free).
//
// Swizzle<B, M, S> acts on the element offset o: it takes the B bits of o starting at bit M + S, shifts
// them right by S and XORs them into the bits starting at bit M.
// BEGIN SOLUTION c4-swizzle-why: which B, M and S, and why (the spec below says what they must do)
// With sA's offset o = 32 m + k (k in bits 0-4, m from bit 5; the stage in bits 12 and up is untouched):
//     B = 1  one bit is moved: bit 5, the lowest bit of m (odd rows against even rows)
//     S = 3  it goes 3 bits down, to bit 2: the bit that picks a 16-byte chunk's half of an 8-float
//            group; so (m, k) lives at 32 m + (k ^ 4 (m & 1)): odd rows swap neighbouring chunks
//     M = 2  bits 0 and 1 (k % 4) never change: a 16-byte chunk, 4 floats, stays whole and 16-byte
//            aligned. The 16-byte cp.async writes one chunk per thread; were single floats moved
//            (M = 0, the worklog's first idea), a chunk's floats would land apart and the copy could
//            no longer be one 128-bit instruction: with Swizzle<1,0,5> nvcc stops at CuTe's static
//            assertion "In CopyAtom, dst layout doesn't vectorize into registers".
// Rows m and m+1 now put column k in banks k and k ^ 4: the 32-bit read is conflict-free. The copies
// stay conflict-free: a row is still 32 different banks. For other BK the swizzle moves the bit
// log2(BK), m's lowest, the same way: Swizzle<1, 2, log2(BK) - 2>.
// END SOLUTION c4-swizzle-why
//
// What nvcc makes of it: the A reads are LDS.128 along k (c1's header), and in the bank model a
// 128-bit read's half warps never share a wavefront, so rows m and m+1 did not conflict to begin
// with. The swizzle is what the worklog's 32-bit reads need; ncu (`make ncu-table`) says what it
// changes in this build (README, "The swizzle, in the bank model and in ncu").
//
// SASS to look for: as c3, plus a LOP3.LUT or two for the XORed addresses (most fold into immediates).

#ifndef BM
#define BM 128      // block tile rows: 8 per thread x THR_M = 16
#endif
#ifndef BN
#define BN 128      // block tile columns: 8 per thread x THR_N = 16
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

#define THREADS (THR_M * THR_N)                                        // threads per block
#define SMEM_BYTES (STAGES * (BM * BK + BN * BK) * sizeof(float))      // dynamic, bytes

#include "cute_sgemm.cuh"

namespace c4 {
using namespace cute;

constexpr int log2i(int x) { return x <= 1 ? 0 : 1 + log2i(x / 2); }
constexpr int B_COLS = BN < THREADS ? BN : THREADS;   // scalar B copy: threads across a row

static_assert(BM > 0 && BN > 0 && BK > 0 && THR_M > 0 && THR_N > 0, "c4: every tile parameter must be positive");
static_assert(THREADS % 32 == 0 && THREADS <= 1024, "c4: THR_M * THR_N must be whole warps, at most 1024 threads");
static_assert(BM % THR_M == 0 && BN % THR_N == 0, "c4: the MMA threads must tile the block tile (BM % THR_M == 0, BN % THR_N == 0)");
static_assert((BM / THR_M) * (BN / THR_N) <= 128, "c4: at most 128 accumulators per thread (more do not fit 255 registers)");
static_assert(BK >= 8 && (BK & (BK - 1)) == 0, "c4: BK must be a power of two, at least 8 (the swizzle works on the bits of the offset)");
static_assert(THREADS % (BK / 4) == 0 && BM % (THREADS / (BK / 4)) == 0, "c4: the A tile's 16-byte chunks must split evenly over THREADS");
static_assert(THREADS % (BN / 4) == 0 && BK % (THREADS / (BN / 4)) == 0, "c4: the B tile's 16-byte chunks must split evenly over THREADS");
static_assert(THREADS % BK == 0 && BM % (THREADS / BK) == 0, "c4: the scalar A copy needs THREADS % BK == 0 and BM % (THREADS / BK) == 0");
static_assert(BN % B_COLS == 0 && BK % (THREADS / B_COLS) == 0, "c4: the scalar B copy needs BN % min(BN, THREADS) == 0 and whole k-rows per pass");
static_assert(STAGES >= 2 && STAGES <= 8, "c4: STAGES must be 2..8 (one buffer computed on, at least one being filled)");
static_assert(SMEM_BYTES <= 227 * 1024, "c4: STAGES x (BM + BN) x BK floats exceed 227 KB, the most a block may use "
                                        "(sm_86/89/120 give 99 KB; the launcher checks the device)");

using TileM = Int<BM>;
using TileN = Int<BN>;
using TileK = Int<BK>;
using Stages = Int<STAGES>;

// Shared memory, one layout per operand, the stage as a third mode (the layouts' cosize is the
// allocation: SMEM_BYTES is checked against it below).
//   sA (BM, BK, STAGES) : (BK, 1, BM BK)  k contiguous, as A lies in global memory, under SwizzleA
//                                          (the header says what it must do)
//   sB (BN, BK, STAGES) : (1, BN, BN BK)  n contiguous, as B lies in global memory
// BEGIN SOLUTION c4-swizzle: SwizzleA, a Swizzle<B, M, S> for every BK the static_asserts allow
using SwizzleA = Swizzle<1, 2, log2i(BK) - 2>;
// END SOLUTION c4-swizzle
using SmemLayoutA = decltype(composition(SwizzleA{},
    make_layout(make_shape(TileM{}, TileK{}, Stages{}), make_stride(TileK{}, _1{}, Int<BM * BK>{}))));
using SmemLayoutB = decltype(make_layout(make_shape(TileN{}, TileK{}, Stages{}),
                                         make_stride(_1{}, TileN{}, Int<BN * BK>{})));
static_assert(SMEM_BYTES == (cosize_v<SmemLayoutA> + cosize_v<SmemLayoutB>) * sizeof(float),
              "c4: SMEM_BYTES must be what the two shared layouts occupy");

// The tiled copies global -> shared: a thread layout and the values each thread moves per copy atom.
// vec: 16-byte cp.async (cp.async.cg: L2 only, LDGSTS.E.BYPASS.128), zero-filling outside the matrix;
// scalar (any K, N): 4-byte cp.async.ca per element. The thread layouts run along the contiguous mode,
// so a warp reads whole 128-byte lines: A rows k-first, B rows n-first.
template <bool VEC>
struct Copies;

template <>
struct Copies<true> {
    // A: (THREADS / (BK/4), BK/4) threads, k fastest, x (1, 4) values: 8 threads per 128-byte row of A.
    using A = decltype(make_tiled_copy(Copy_Atom<SM80_CP_ASYNC_CACHEGLOBAL_ZFILL<uint128_t>, float>{},
        make_layout(make_shape(Int<THREADS / (BK / 4)>{}, Int<BK / 4>{}), LayoutRight{}),
        make_layout(make_shape(_1{}, _4{}))));
    // B: (BN/4, THREADS / (BN/4)) threads, n fastest, x (4, 1) values: a warp reads 512 bytes of a B row.
    using B = decltype(make_tiled_copy(Copy_Atom<SM80_CP_ASYNC_CACHEGLOBAL_ZFILL<uint128_t>, float>{},
        make_layout(make_shape(Int<BN / 4>{}, Int<THREADS / (BN / 4)>{})),
        make_layout(make_shape(_4{}, _1{}))));
};

template <>
struct Copies<false> {
    using A = decltype(make_tiled_copy(Copy_Atom<SM80_CP_ASYNC_CACHEALWAYS_ZFILL<uint32_t>, float>{},
        make_layout(make_shape(Int<THREADS / BK>{}, Int<BK>{}), LayoutRight{}),
        make_layout(make_shape(_1{}, _1{}))));
    using B = decltype(make_tiled_copy(Copy_Atom<SM80_CP_ASYNC_CACHEALWAYS_ZFILL<uint32_t>, float>{},
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
    const int k_tiles = (K + BK - 1) / BK;

    // Tile t into buffer s. A block wholly inside the matrices copies unpredicated; at an edge each
    // 16-byte (vec) or 4-byte (scalar) copy is predicated on its first element's coordinate, and a
    // false predicate zero-fills (cp.async with src-size 0), so the MMA multiplies zeros there.
    auto load_tile = [&](int t, int s) {
        const int k_left = K - t * BK;
        if (inside && k_left >= BK) {
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
        if (s < k_tiles) load_tile(s, s);
        cp_async_fence();
    }
    // BEGIN SOLUTION c4-fence-prologue: tile 0 must have landed for every thread before anyone reads it
    cp_async_wait<STAGES - 2>();
    __syncthreads();
    // END SOLUTION c4-fence-prologue
    int read = 0, write = STAGES - 1;
    copy(tCsA(_, _, 0, read), tCrA(_, _, 0));             // k-block 0 of tile 0 into register set 0
    copy(tCsB(_, _, 0, read), tCrB(_, _, 0));

    // Main loop. Tile t+STAGES-1 is copied into the buffer tile t-1 left; then per k-block: load the
    // next k-block into the other register set, and multiply this one (gemm: the outer product of
    // the thread's 8 A and 8 B values, 64 FFMA). One barrier per tile.
    for (int t = 0; t < k_tiles; ++t) {
        if (t + STAGES - 1 < k_tiles) load_tile(t + STAGES - 1, write);
        cp_async_fence();
        CUTE_UNROLL
        for (int k = 0; k < BK; ++k) {
            if (k == BK - 1) {   // tile t+1 has landed for everyone, and everyone holds tile t's last
                                 // k-block in registers: tile t's buffer is free for the next copy
                // BEGIN SOLUTION c4-fence: make both halves of the comment above true before the rotation
                cp_async_wait<STAGES - 2>();
                __syncthreads();
                // END SOLUTION c4-fence
                write = read;
                read = (read + 1 == STAGES) ? 0 : read + 1;
            }
            const int kn = (k + 1) % BK;   // k-block k+1: of this tile, or (k = BK-1) the next tile's first
            copy(tCsA(_, _, kn, read), tCrA(_, _, (k + 1) & 1));
            copy(tCsB(_, _, kn, read), tCrB(_, _, (k + 1) & 1));
            gemm(mma, tCrA(_, _, k & 1), tCrB(_, _, k & 1), tCrC);
        }
    }

    // Epilogue: C = alpha acc + beta C per element, predicated (a thread's columns are 16 apart).
    Tensor tCcC = thr_mma.partition_C(make_identity_tensor(make_shape(TileM{}, TileN{})));   // (MMA, MMA_M, MMA_N)
    cute_sgemm::store_c_scalar(tCrC, tCgC, tCcC, make_coord(m_left, n_left), alpha, beta);
}

}  // namespace c4

extern "C" __global__ void __launch_bounds__(THREADS)
cute_sgemm_c4_vec(int M, int N, int K, float alpha, const float* A, const float* B, float beta, float* C)
{
    c4::body<true>(M, N, K, alpha, A, B, beta, C);
}

extern "C" __global__ void __launch_bounds__(THREADS)
cute_sgemm_c4_scalar(int M, int N, int K, float alpha, const float* A, const float* B, float beta, float* C)
{
    c4::body<false>(M, N, K, alpha, A, B, beta, C);
}
