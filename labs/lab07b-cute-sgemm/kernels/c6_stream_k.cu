// c6_stream_k.cu -- lab 7b, c6: the entry points. The kernel itself (its idea, schedule, tiles and
// bodies) is c6_stream_k.cuh, which c7 includes too.
//
// C = alpha * A * B + beta * C, row-major FP32, A is M x K, B is K x N, C is M x N, any M, N, K >= 1.
// With beta == 0, C is never read (it may hold NaN).
// Entry points: cute_sgemm_c6_vec    K % 4 == 0 and N % 4 == 0 (c5's vec)
//               cute_sgemm_c6_scalar any shape
//   (int M, int N, int K, float alpha, const float* A, const float* B, float beta, float* C,
//    int dp_tiles, int workers, int first_block, float* workspace)
//               cute_sgemm_c6_tiles  whole tiles only, BM | M, BN | N and BK | K (SPLIT_LAUNCH, c6_stream_k.cuh)
//   (int M, int N, int K, float alpha, const float* A, const float* B, float beta, float* C)
// Launch: 1-D grid of dp_tiles + workers blocks of THREADS, SMEM_BYTES of dynamic shared memory (c5's),
//   first_block = 0. workspace: workers x BM x BN floats (one partial tile per worker), then `workers`
//   flags, zero before the first launch; every launch leaves them zero.
//               cute_sgemm_c6_workers the workers alone, BM | M, BN | N and BK | K (SPLIT_LAUNCH = 2)
//   (int M, int N, int K, float alpha, const float* A, const float* B, float beta, float* C,
//    int dp_tiles, int workers, float* workspace)
//   SPLIT_LAUNCH = 1 and a shape that divides the tile: two launches on one stream, cute_sgemm_c6_tiles
//   on a grid of dp_tiles blocks (tile b of the raster order each), then cute_sgemm_c6_vec on a grid of
//   `workers` blocks with first_block = dp_tiles (block b of the grid is block first_block + b above).
//   SPLIT_LAUNCH = 2 (the default): the same, with cute_sgemm_c6_workers on the grid of `workers` blocks.

#include "c6_stream_k.cuh"

extern "C" __global__ void __launch_bounds__(THREADS, MIN_BLOCKS)
cute_sgemm_c6_vec(int M, int N, int K, float alpha, const float* A, const float* B, float beta, float* C,
                  int dp_tiles, int workers, int first_block, float* workspace)
{
    c6::body<true>(M, N, K, alpha, A, B, beta, C, dp_tiles, workers, first_block, workspace);
}

extern "C" __global__ void __launch_bounds__(THREADS, MIN_BLOCKS)
cute_sgemm_c6_scalar(int M, int N, int K, float alpha, const float* A, const float* B, float beta, float* C,
                     int dp_tiles, int workers, int first_block, float* workspace)
{
    c6::body<false>(M, N, K, alpha, A, B, beta, C, dp_tiles, workers, first_block, workspace);
}

extern "C" __global__ void __launch_bounds__(THREADS, MIN_BLOCKS)
cute_sgemm_c6_tiles(int M, int N, int K, float alpha, const float* A, const float* B, float beta, float* C)
{
    c6::whole_tiles(M, N, K, alpha, A, B, beta, C);
}

extern "C" __global__ void __launch_bounds__(THREADS, MIN_BLOCKS)
cute_sgemm_c6_workers(int M, int N, int K, float alpha, const float* A, const float* B, float beta, float* C,
                      int dp_tiles, int workers, float* workspace)
{
    c6::workers_only(M, N, K, alpha, A, B, beta, C, dp_tiles, workers, workspace);
}
