// v3_tiled.cu -- lab 7, v3: the shared-memory tiled SGEMM of chapter 7 (the baseline of this lab)
//
// C = A * B, row-major FP32, A is M x K, B is K x N, C is M x N, any M, N, K >= 1.
// Launch: 1D block of THREADS = 256 threads, grid = (ceil(N / 16), ceil(M / 16), 1).
//
// The idea (chapter 7): a block computes a T x T tile of C. For each T-wide slice of K it copies a
// T x T tile of A and one of B into shared memory, one element per thread, waits, and every thread
// then runs a T-long dot product out of shared memory. Each global value is read once per block
// instead of once per thread: a T-fold cut in global traffic.
//
// Why it is still slow (chapter 8, section 1): every FFMA in the inner loop needs two shared loads,
// As[ty][k] and Bs[k][tx]. An SM issues four warp-wide FFMAs per cycle but only one warp-wide shared
// load, so shared memory, not arithmetic, sets the pace. v4..v7 fix that ratio with registers.
//
// Edge handling, the same in every kernel of this lab: a block first checks once whether its whole
// output tile lies inside C, and per K-slice whether the slice lies inside K. If so, it takes a path
// with no bounds checks at all; only edge tiles pay for the guards. Guarded loads zero-fill the
// out-of-range elements of the shared tiles, so the compute loop never needs a guard: a zero in A or
// B adds nothing to the sum.
//
// SASS to look for (cuobjdump -sass): 16 FFMA in the loop, each fed by shared loads. The compiler
// sees that As[ty][0..15] is one contiguous row of 64 bytes and usually reads it with LDS.128 (4 of
// them); Bs[k][tx] walks a column and stays 16 scalar LDS. So expect about 20 shared loads per 16
// FFMA, not the 32 of the chapter's per-FMA model. Two BAR.SYNC per K-slice.

constexpr int T = 16;            // tile edge: a 16 x 16 tile of C per block; 16 floats = 64 bytes of a row
constexpr int THREADS = T * T;   // 256 threads, one per output of the tile, used as a 16 x 16 grid
constexpr int BM = T, BN = T;    // the block's tile of C (the runtime reads these for the grid)

static_assert(BM * BN == THREADS, "v3: one thread per element of the T x T tile");

extern "C" __global__ void __launch_bounds__(THREADS)
sgemm_v3_tiled(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B,
               float* __restrict__ C)
{
    // As[ty][tx]: 16 x 16, row-major. A warp (32 threads) covers rows ty, ty + 1 (16 columns each):
    // in the loop below it reads As[ty][k] and As[ty + 1][k], two words 16 banks apart (broadcast
    // within each half-warp), and Bs[k][0..15], 16 consecutive banks read by both halves
    // (broadcast): no bank conflicts.
    __shared__ float As[T][T];
    __shared__ float Bs[T][T];

    const int tx = threadIdx.x % T;            // column in the tile (fast index: coalesced loads)
    const int ty = threadIdx.x / T;            // row in the tile
    const int row = blockIdx.y * T + ty;       // this thread's output C[row][col]
    const int col = blockIdx.x * T + tx;

    // Checked once: does this block's whole output tile lie inside C?
    const bool blockInside = (int)(blockIdx.y + 1) * T <= M && (int)(blockIdx.x + 1) * T <= N;

    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += T) {
        if (blockInside && k0 + T <= K) {      // interior tile: no guards (uniform branch per block)
            As[ty][tx] = A[row * K + k0 + tx];
            Bs[ty][tx] = B[(k0 + ty) * N + col];
        } else {                               // edge tile: guarded, zero-fill outside the matrix
            As[ty][tx] = (row < M && k0 + tx < K) ? A[row * K + k0 + tx] : 0.0f;
            Bs[ty][tx] = (k0 + ty < K && col < N) ? B[(k0 + ty) * N + col] : 0.0f;
        }
        __syncthreads();                       // the tiles are complete before anyone reads them

#pragma unroll
        for (int k = 0; k < T; ++k)
            acc += As[ty][k] * Bs[k][tx];      // two shared loads per FMA: the ratio v4 attacks
        __syncthreads();                       // everyone is done reading before the next overwrite
    }
    if (row < M && col < N)
        C[row * N + col] = acc;
}
