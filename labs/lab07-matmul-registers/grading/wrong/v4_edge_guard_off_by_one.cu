// KNOWN-WRONG KERNEL (grading/wrong/v4_edge_guard_off_by_one.cu): kernels/v4_1d_blocktiling.cu with one
// deliberate bug.
// The bug: the store guard says row <= M, so edge blocks write row M, one row past the end of C.
// The grader must take off: correct (on a GPU: the grader's guard zone after C changes), and fast with it.
// See grading/parts.py WRONG; the lines marked BUG differ.
// v4_1d_blocktiling.cu -- lab 7, v4: 1D register blocking (chapter 8, section 2)
//
// C = A * B, row-major FP32, A is M x K, B is K x N, C is M x N, any M, N, K >= 1.
// Launch: 1D block of THREADS = 512 threads, grid = (ceil(N / 64), ceil(M / 64), 1).
//
// What v4 adds over v3: each thread computes TM = 8 outputs stacked in one column of C instead of
// one. Per step k it reads one value of B into a register and reuses it for all 8 outputs; the 8
// A values it pairs with are the same for every thread of the warp, so each of those shared loads
// is a broadcast. 9 loads per 8 FMAs (1.125 per FMA) instead of v3's 2.
//
// Tile shapes: the block owns a 64 x 64 tile of C (BM x BN), each phase copies a 64 x 8 slice of A
// and an 8 x 64 slice of B (BK = 8), one element of each per thread, and 512 threads x 8 outputs
// cover the 64 x 64 tile exactly. Edge handling as in v3: one "is this tile inside?" check per block
// and K-slice, guards and zero-fill only on edge tiles.
//
// SASS to look for: 64 FFMA per phase (8 k x 8 outputs), the 8 accumulators in registers (no
// LDL/STL). The chapter's model is 8 LDS of A + 1 LDS of B per k: 72 loads per 64 FFMA. nvcc 13
// does better on its own: after full unrolling, row As[threadRow*8 + i][0..7] is 32 contiguous
// bytes, so it fetches each of the 8 rows with two LDS.128 (each a broadcast holding 4 k at once):
// 16 LDS.128 + 8 LDS of Bs per 64 FFMA. Another compiler may keep the 64 scalar LDS of the model.

constexpr int BM = 64;   // block tile rows: 64 = 8 thread rows x TM
constexpr int BN = 64;   // block tile columns: 64 threads across, 2 warps per row of threads
constexpr int BK = 8;    // K-slice per phase: 64 x 8 = 512 A elements = one per thread
constexpr int TM = 8;    // outputs per thread, one column: 8 FMAs per value of B read
constexpr int THREADS = (BM / TM) * BN;   // 512: thread t owns rows 8*(t/64) + 0..7, column t%64

static_assert((BM / TM) * BN == THREADS, "v4: threads x TM outputs must cover BM x BN exactly");
static_assert(BM * BK == THREADS, "v4: each thread loads exactly one element of the A slice");
static_assert(BK * BN == THREADS, "v4: each thread loads exactly one element of the B slice");

extern "C" __global__ void __launch_bounds__(THREADS)
sgemm_v4_1d_blocktiling(int M, int N, int K, const float* __restrict__ A,
                        const float* __restrict__ B, float* __restrict__ C)
{
    // As[BM][BK] = [64][8]: row r holds A[cRow + r][k0 .. k0 + 7]; 512 floats, thread t writes As[t].
    // Bs[BK][BN] = [8][64]: row k holds B[k0 + k][cCol .. cCol + 63]; thread t writes Bs[t].
    __shared__ float As[BM][BK];
    __shared__ float Bs[BK][BN];

    const int cRow = blockIdx.y * BM;            // top-left corner of this block's C tile
    const int cCol = blockIdx.x * BN;

    // Compute mapping: a warp is 32 consecutive columns of one thread row, so all its lanes read the
    // same As word (broadcast) and 32 consecutive Bs words (32 banks, conflict-free).
    const int threadCol = threadIdx.x % BN;      // 0..63
    const int threadRow = threadIdx.x / BN;      // 0..7: owns tile rows threadRow*TM + 0..7

    // Load mapping: consecutive threads take consecutive columns, so a warp's global reads are
    // 4 rows x 32 bytes of A and 32 consecutive floats (128 bytes) of B.
    const int aRow = threadIdx.x / BK, aCol = threadIdx.x % BK;   // As[aRow][aCol]
    const int bRow = threadIdx.x / BN, bCol = threadIdx.x % BN;   // Bs[bRow][bCol]

    const bool blockInside = cRow + BM <= M && cCol + BN <= N;

    float acc[TM] = {};                          // 8 accumulators: registers, fully unrolled below
    for (int k0 = 0; k0 < K; k0 += BK) {
        if (blockInside && k0 + BK <= K) {       // interior: no guards
            As[aRow][aCol] = A[(cRow + aRow) * K + k0 + aCol];
            Bs[bRow][bCol] = B[(k0 + bRow) * N + cCol + bCol];
        } else {                                 // edge: zero-fill what lies outside A or B
            As[aRow][aCol] = (cRow + aRow < M && k0 + aCol < K) ? A[(cRow + aRow) * K + k0 + aCol] : 0.0f;
            Bs[bRow][bCol] = (k0 + bRow < K && cCol + bCol < N) ? B[(k0 + bRow) * N + cCol + bCol] : 0.0f;
        }
        __syncthreads();

#pragma unroll
        for (int k = 0; k < BK; ++k) {
            const float b = Bs[k][threadCol];    // one load of B...
#pragma unroll
            for (int i = 0; i < TM; ++i)         // ...reused TM = 8 times
                acc[i] += As[threadRow * TM + i][k] * b;   // same word for the whole warp: broadcast
        }
        __syncthreads();
    }

    const int col = cCol + threadCol;
#pragma unroll
    for (int i = 0; i < TM; ++i) {
        const int row = cRow + threadRow * TM + i;
        if (row <= M && col < N)                 // BUG: row M is past the end of C
            C[row * N + col] = acc[i];
    }
}
