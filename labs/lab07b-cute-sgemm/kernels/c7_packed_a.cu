// c7_packed_a.cu -- lab 7b, c7: c6 with A packed first: transposed once, so that both operands travel
// by 16-byte copies
//
// C = alpha * A * B + beta * C, row-major FP32, A is M x K, B is K x N, C is M x N, any M, N, K >= 1.
// With beta == 0, C is never read (it may hold NaN).
// Entry points: cute_sgemm_c7_pack_a  A (M x K) -> At (K x M): the packing, before every product
//   (const float* A, float* At, int M, int K); grid (ceil(K / PACK_TILE), ceil(M / PACK_TILE)),
//   blocks of PACK_TILE x 8 threads
//               cute_sgemm_c7_vec, _scalar, _tiles, _workers: c6's four (c6_stream_k.cu), reading At where
//   c6 reads A. vec needs M % 4 == 0 and N % 4 == 0 (the 16-byte copies of At's and B's rows; K is free).
// Launch (launch.py, PackA): the pack into a workspace of K x M floats, then c6's launch on it.
//
// Why. In C = A B with both row-major, B is the easy operand: a k-row of B is n-contiguous in memory
// and in sB, so one 16-byte cp.async moves 4 of the values a thread multiplies together. A is the
// transposed one: the outer product wants A m-contiguous per k, and memory has it k-contiguous. Tuned
// c5 and c6 (A_MMAJOR = 1, lab 7's v8 layout) transpose it on the way into shared memory, by 4-byte
// cp.async: 16 per thread per tile (B takes 4), each with an address of its own, and a 4-byte cp.async
// cannot bypass L1 (cp.async.ca, LDGSTS.E.LTC128B), so all of them pass through the L1TEX unit. ncu saw
// what that costs (README, "Where the last percent is"): the memory stalls v8 nearly lacks
// (long_scoreboard, mio_throttle, lg_throttle) and 3 % fewer instructions issued per cycle.
//
// Packing is the oldest answer of dense linear algebra (GotoBLAS packs both operands into the layout its
// inner kernel reads): pay once for a copy of A in the order the loop wants, here A transposed, K x M.
// Then A travels exactly as B: 16-byte cp.async along m that bypass L1 (cp.async.cg), into sA (BM, BK,
// STAGES) : (1, BM, BM BK), sB's layout. The pack reads and writes A once, 8 bytes per element of A; the
// product reads A once per block column (N / BN times). On the H200 at 4096^3 the pack takes 36 us of
// 2.58 ms (1.4 %), at 8192^3 0.15 of 20.2 ms.
//
// Tiles: c6's (c5's tuned 128 x 128 x 32, 3 stages, 256 threads of 8 x 8 outputs, two blocks per SM
// where they fit, GROUP = 8 rasterization, the stream-K tail); the pack: PACK_TILE x PACK_TILE floats
// through shared memory.
//
// SASS to look for: in the tiles entry's main loop (make sass) 8 LDGSTS.E.BYPASS.LTC128B.128 per tile (4
// for A, 4 for B) and no 4-byte LDGSTS (c6: 16 LDGSTS.E.LTC128B + 4); the loop is 2232 instructions a
// tile against c6's 2289. The static register-bank model counts 39.7 % of its FFMA as conflicting
// against c6's 14.2 %, and yet it is 5 % faster: what held c6 back was the copies, not the banks.
// The pack: LDG.E and STS, BAR.SYNC, LDS and STG.E, one of each per element and thread.

#ifndef PACK_TILE
#define PACK_TILE 32   // the pack's tile: PACK_TILE x PACK_TILE floats, a warp per row of it
#endif
#ifndef A_PACKED
#define A_PACKED 1     // c5's tile product reads A as K x M (c5_wide_epilogue.cu); c7 is nothing else
#endif
#include "c6_stream_k.cuh"   // c6's parameters and bodies

static_assert(A_PACKED == 1, "c7: A_PACKED must be 1 (the launch packs A; without it c7 is c6)");
static_assert(PACK_TILE == 32, "c7: the pack maps a warp onto one PACK_TILE-float row of its tile");

// At = A transposed: a PACK_TILE x PACK_TILE tile of A is read row by row (a warp reads 128 contiguous
// bytes of a row of A), then written column by column of the shared tile as rows of At (128 contiguous
// bytes of a row of At). The +1 column: a column of the shared tile falls on 32 different banks.
extern "C" __global__ void __launch_bounds__(PACK_TILE * 8)
cute_sgemm_c7_pack_a(const float* __restrict__ A, float* __restrict__ At, int M, int K)
{
    __shared__ float tile[PACK_TILE][PACK_TILE + 1];
    const int k0 = blockIdx.x * PACK_TILE, m0 = blockIdx.y * PACK_TILE;
    for (int i = threadIdx.y; i < PACK_TILE; i += 8) {
        const int m = m0 + i, k = k0 + threadIdx.x;
        if (m < M && k < K) tile[i][threadIdx.x] = A[static_cast<size_t>(m) * K + k];
    }
    __syncthreads();
    for (int i = threadIdx.y; i < PACK_TILE; i += 8) {
        const int k = k0 + i, m = m0 + threadIdx.x;
        if (k < K && m < M) At[static_cast<size_t>(k) * M + m] = tile[threadIdx.x][i];
    }
}

// The edge entries: c6's body with A packed, one block per SM. At two (128 registers) ptxas spilled 28 bytes of
// the segment loop's state in the vec entry; c6's allocation happened to fit. They serve the shapes that do
// not divide the tile; those that do run the tiles and workers entries below (launch.py, PackA), which fit
// two blocks per SM without a spill.
extern "C" __global__ void __launch_bounds__(THREADS, 1)
cute_sgemm_c7_vec(int M, int N, int K, float alpha, const float* At, const float* B, float beta, float* C,
                  int dp_tiles, int workers, int first_block, float* workspace)
{
    c6::body<true>(M, N, K, alpha, At, B, beta, C, dp_tiles, workers, first_block, workspace);
}

extern "C" __global__ void __launch_bounds__(THREADS, 1)
cute_sgemm_c7_scalar(int M, int N, int K, float alpha, const float* At, const float* B, float beta, float* C,
                     int dp_tiles, int workers, int first_block, float* workspace)
{
    c6::body<false>(M, N, K, alpha, At, B, beta, C, dp_tiles, workers, first_block, workspace);
}

extern "C" __global__ void __launch_bounds__(THREADS, MIN_BLOCKS)
cute_sgemm_c7_tiles(int M, int N, int K, float alpha, const float* At, const float* B, float beta, float* C)
{
    c6::whole_tiles(M, N, K, alpha, At, B, beta, C);
}

extern "C" __global__ void __launch_bounds__(THREADS, MIN_BLOCKS)
cute_sgemm_c7_workers(int M, int N, int K, float alpha, const float* At, const float* B, float beta, float* C,
                      int dp_tiles, int workers, float* workspace)
{
    c6::workers_only(M, N, K, alpha, At, B, beta, C, dp_tiles, workers, workspace);
}
