// KNOWN-WRONG KERNEL (grading/wrong/v5_fp16_math.cu): kernels/v5_2d_blocktiling.cu with one deliberate bug.
// The bug: each product is computed in FP16 (both operands rounded to half, multiplied in half) where the lab
// asks for FP32.
// The grader must take off: computes (SASS: FP16 math in an FP32 kernel) and registers with it, here; correct
// and fast on a GPU. See grading/parts.py WRONG; the lines marked BUG differ.
// v5_2d_blocktiling.cu -- lab 7, v5: 2D register blocking (chapter 8, section 3)
//
// C = A * B, row-major FP32, A is M x K, B is K x N, C is M x N, any M, N, K >= 1.
// Launch: 1D block of THREADS = 256 threads, grid = (ceil(N / 128), ceil(M / 128), 1).
//
// What v5 adds over v4: each thread owns a TM x TN = 8 x 8 block of C, not a column of 8. Per step
// k it reads 8 values of A's column (regM) and 8 of B's row (regN) into registers and does their
// outer product: 64 FMAs from 16 loads, 0.25 loads per FMA (v4: 1.125). Shared memory stops being
// the limit; the price is registers (64 accumulators + 16 operands + addresses, about 100-130 per
// thread), so only 2 blocks of 256 threads fit on an SM. Instruction-level parallelism (64
// independent FMAs per k) hides latency instead of occupancy (Volkov).
//
// Tile shapes: 256 threads x 64 outputs = a 128 x 128 block tile (BM x BN). BK = 8 keeps the two
// shared tiles at 2 x 4 KB. Each phase the block copies 128 x 8 of A and 8 x 128 of B: 1024
// elements each, so every thread loads 4 of each in a strided loop (consecutive threads take
// consecutive addresses: coalesced). As stays [BM][BK], not transposed, as in the chapter; v6
// transposes it.
//
// SASS to look for: 512 FFMA per phase (8 k x 64), no LDL/STL. The chapter's model is 16 scalar
// LDS per 64 FFMA (128 per phase). nvcc 13 does better on its own, with 32 LDS.128 per phase and no
// scalar LDS: Bs[k][threadCol*8 + 0..7] is 32 contiguous, 16-byte-aligned bytes (two LDS.128 per
// k), and after full unrolling each As row [0..7] is contiguous too, so it reads As by rows (two
// LDS.128 per row, each holding 4 k at once). Another compiler may keep the scalar loads; v6 gets
// the LDS.128 by design. Bank conflicts: a warp's two thread rows read As rows 8 apart (256 bytes,
// same banks): 2 wavefronts per LDS.128. The 16 thread columns read Bs 32 bytes apart, so columns
// 0,4,8,12 share banks: 4 wavefronts where 2 would do (v6 keeps this, v7 removes it).

#include <cuda_fp16.h>   // BUG: half precision in an FP32 kernel
constexpr int BM = 128;  // block tile rows: 16 thread rows x TM
constexpr int BN = 128;  // block tile columns: 16 thread columns x TN
constexpr int BK = 8;    // K-slice per phase: As and Bs are 4 KB each
constexpr int TM = 8;    // thread tile rows: regM[8], reused across the 8 columns
constexpr int TN = 8;    // thread tile columns: regN[8], reused across the 8 rows
constexpr int THREADS = (BM / TM) * (BN / TN);   // 256: thread t owns rows 8*(t/16), cols 8*(t%16)
constexpr int A_STRIDE = THREADS / BK;   // 32: rows of A between one thread's 4 loads
constexpr int B_STRIDE = THREADS / BN;   // 2: rows of B between one thread's 4 loads

static_assert((BM / TM) * (BN / TN) == THREADS, "v5: threads x (TM x TN) must cover BM x BN exactly");
static_assert(THREADS % BK == 0 && (BM * BK) % THREADS == 0,
              "v5: the A slice (BM x BK) must split into whole rows per pass of the block");
static_assert(THREADS % BN == 0 && (BK * BN) % THREADS == 0,
              "v5: the B slice (BK x BN) must split into whole rows per pass of the block");

extern "C" __global__ void __launch_bounds__(THREADS)
sgemm_v5_2d_blocktiling(int M, int N, int K, const float* __restrict__ A,
                        const float* __restrict__ B, float* __restrict__ C)
{
    // As[BM][BK] = [128][8]: row r holds A[cRow + r][k0 .. k0 + 7] (4 KB).
    // Bs[BK][BN] = [8][128]: row k holds B[k0 + k][cCol .. cCol + 127] (4 KB).
    __shared__ __align__(16) float As[BM][BK];
    __shared__ __align__(16) float Bs[BK][BN];

    const int cRow = blockIdx.y * BM;
    const int cCol = blockIdx.x * BN;

    // Compute mapping, row by row: thread t owns C-tile rows threadRow*8 + 0..7 and columns
    // threadCol*8 + 0..7. A warp is 2 thread rows x 16 thread columns: a 16 x 128 strip (v7 changes
    // this to a square).
    const int threadRow = threadIdx.x / (BN / TN);   // 0..15
    const int threadCol = threadIdx.x % (BN / TN);   // 0..15

    // Load mapping: pass p writes As[aRow + p*32][aCol] and Bs[bRow + p*2][bCol], p = 0..3.
    // A: a warp reads 4 rows x 8 floats (32-byte pieces); B: 32 consecutive floats of one row.
    const int aRow = threadIdx.x / BK, aCol = threadIdx.x % BK;
    const int bRow = threadIdx.x / BN, bCol = threadIdx.x % BN;

    const bool blockInside = cRow + BM <= M && cCol + BN <= N;

    float acc[TM][TN] = {};
    float regM[TM], regN[TN];

    for (int k0 = 0; k0 < K; k0 += BK) {
        if (blockInside && k0 + BK <= K) {   // interior: no guards
#pragma unroll
            for (int r = 0; r < BM; r += A_STRIDE)
                As[aRow + r][aCol] = A[(cRow + aRow + r) * K + k0 + aCol];
#pragma unroll
            for (int r = 0; r < BK; r += B_STRIDE)
                Bs[bRow + r][bCol] = B[(k0 + bRow + r) * N + cCol + bCol];
        } else {                             // edge: zero-fill what lies outside A or B
#pragma unroll
            for (int r = 0; r < BM; r += A_STRIDE) {
                const int gr = cRow + aRow + r, gk = k0 + aCol;
                As[aRow + r][aCol] = (gr < M && gk < K) ? A[gr * K + gk] : 0.0f;
            }
#pragma unroll
            for (int r = 0; r < BK; r += B_STRIDE) {
                const int gk = k0 + bRow + r, gc = cCol + bCol;
                Bs[bRow + r][bCol] = (gk < K && gc < N) ? B[gk * N + gc] : 0.0f;
            }
        }
        __syncthreads();

#pragma unroll
        for (int k = 0; k < BK; ++k) {
#pragma unroll
            for (int i = 0; i < TM; ++i) regM[i] = As[threadRow * TM + i][k];   // 8 loads
#pragma unroll
            for (int j = 0; j < TN; ++j) regN[j] = Bs[k][threadCol * TN + j];   // 8 loads
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j)
                    acc[i][j] += __half2float(__float2half(regM[i]) * __float2half(regN[j]));   // BUG: FP16
        }
        __syncthreads();
    }

    const bool colsInside = cCol + BN <= N;
#pragma unroll
    for (int i = 0; i < TM; ++i) {
        const int row = cRow + threadRow * TM + i;
        if (row >= M) break;                 // rows only grow with i
#pragma unroll
        for (int j = 0; j < TN; ++j) {
            const int col = cCol + threadCol * TN + j;
            if (colsInside || col < N)
                C[row * N + col] = acc[i][j];
        }
    }
}
