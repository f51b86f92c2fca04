// v7_warptiling.cu -- lab 7, v7: warp tiling (chapter 8, section 5)
//
// C = A * B, row-major FP32, A is M x K, B is K x N, C is M x N, any M, N, K >= 1.
// Launch: 1D block of THREADS = (BM/WM)*(BN/WN)*32 threads (128 by default),
//         grid = (ceil(N / BN), ceil(M / BM), 1).
// Two entry points, chosen once per launch by the driver, exactly as in v6:
//   sgemm_v7_vec     only when K % 4 == 0 and N % 4 == 0 (A, B, C 16-byte aligned): float4 global
//                    loads and stores wherever a group of 4 lies inside the matrix.
//   sgemm_v7_scalar  any shape: scalar global loads and stores.
//
// What v7 adds over v6: an explicit warp tile. In v6 threads are numbered across the block tile row
// by row, so a warp owns a 16 x 128 strip and reads 16 + 128 values from shared memory per k. What
// a warp reads per k is the perimeter of its region, what it computes is the area; for a fixed
// area a square has the smallest perimeter. So v7 gives each warp a WM x WN = 64 x 64 square:
// 64 + 64 values per k for 4096 outputs (v6's warp: 144 values for 2048).
//
// Inside the warp tile: WNITER = 4 vertical strips of WN / WNITER = 16 columns. In every strip a
// lane owns a TM x TN = 8 x 4 block: lane / 4 picks its 8 rows, lane % 4 its 4 columns. So a lane
// owns 8 rows x (4 strips x 4 columns) = 128 outputs and per k loads 8 values of A (two LDS.128)
// and 4 x 4 values of B (four LDS.128): 6 shared loads per 128 FFMA (v6: 4 per 64).
//
//   warp tile 64 x 64, lanes L0..L31 (each cell is an 8 x 4 block, repeated in all 4 strips)
//            strip 0 (cols 0..15)       strip 1 (16..31)  strip 2     strip 3
//   rows  0..7   L0  L1  L2  L3           L0 .. L3          L0 .. L3    L0 .. L3
//   rows  8..15  L4  L5  L6  L7           L4 .. L7          ...
//   ...
//   rows 56..63  L28 L29 L30 L31          L28 .. L31
//
// Bank conflicts: per k a warp's four Bs reads each cover 64 contiguous bytes (lanes with the same
// lane % 4 share an address: broadcast): conflict-free, where v6's Bs reads were 4 wavefronts each.
// The As reads are 8 distinct 16-byte chunks 32 bytes apart: 2 wavefronts per LDS.128.
//
// BK = 16 (v6: 8): with 128 threads instead of 256 each thread must load 4 groups of 4 floats of
// each tile per phase either way; BK = 16 halves the number of phases and barriers per FLOP.
// Registers: 128 accumulators + 8 + 16 operands + addresses. nvcc 13 uses about 200-215 per thread
// (-Xptxas -v): it also loads step k + 1's 24 operands while step k's FFMAs run. That is 2 blocks of
// 128 threads per SM, 8 warps: low occupancy on purpose (section 3). Squeezing to 168 registers for
// 3 blocks makes ptxas spill, and __launch_bounds__ overrides -maxrregcount.
//
// SASS to look for, per phase of BK = 16: 2048 FFMA, 96 LDS.128 (2 on As + 4 on Bs per k, no
// scalar LDS), 16 STS (A transposed, 4 groups x 4) + 4 STS.128 (B), 8 LDG.E.128 in the interior
// path of sgemm_v7_vec, 2 BAR.SYNC, no LDL/STL. nvcc may reorder the LDS.128 of step k + 1 into the
// FFMAs of step k (software pipelining); the counts stay.
//
// Tuning sweep: every tile parameter can be overridden on the command line, e.g.
//   nvcc -cubin -O3 -arch=sm_90 -DBK=8 -DV7_PREFETCH=1 v7_warptiling.cu
// static_asserts below reject illegal combinations. V7_PREFETCH=1 double-buffers the shared tiles:
// it loads the next tile from global memory into registers before computing the current one and
// stores it to the other buffer afterwards, so the load latency hides behind the math at the cost
// of 4 x (A + B groups) more registers and twice the shared memory (one barrier per tile).
// The default build (no -D flags) is the chapter's kernel.

// ---- tile parameters (chapter names) -----------------------------------------------------------

#ifndef BM
#define BM 128      // block tile rows: 2 warp tiles of WM = 64
#endif
#ifndef BN
#define BN 128      // block tile columns: 2 warp tiles of WN = 64; a Bs row is 512 bytes
#endif
#ifndef BK
#define BK 16       // K-slice per phase: A slice 128 x 16 = 512 float4 groups = 4 per thread
#endif
#ifndef WM
#define WM 64       // warp tile rows: 8 lane rows x TM; a square warp tile minimizes reads per k
#endif
#ifndef WN
#define WN 64       // warp tile columns: WNITER strips of 16
#endif
#ifndef WNITER
#define WNITER 4    // strips per warp tile: 4 lane columns x TN = 16 columns each
#endif
#ifndef TM
#define TM 8        // thread tile rows per strip: regM[8] = two LDS.128 from As row k
#endif
#ifndef TN
#define TN 4        // thread tile columns per strip: regN[4] of each strip = one LDS.128
#endif
#ifndef V7_PREFETCH
#define V7_PREFETCH 0   // 1: double-buffered shared tiles, next tile's global loads before the math
#endif

// Safe division for derived constants, so that a bad -D set fails on a static_assert message below
// rather than on "division by zero in constant expression".
constexpr int v7_div(int a, int b) { return b > 0 ? a / b : 0; }

constexpr int WARPS_M = v7_div(BM, WM);        // 2 warp tiles down the block tile
constexpr int WARPS_N = v7_div(BN, WN);        // 2 warp tiles across: warpRow = warp / 2, warpCol = warp % 2
constexpr int THREADS = WARPS_M * WARPS_N * 32;   // 128: one warp per 64 x 64 square
constexpr int WSUBN = v7_div(WN, WNITER);      // 16 columns per strip
constexpr int LANES_N = v7_div(WSUBN, TN);     // 4 lanes across a strip (lane % 4)
constexpr int LANES_M = v7_div(32, LANES_N);   // 8 lanes down the warp tile (lane / 4)
constexpr int STAGES = V7_PREFETCH ? 2 : 1;    // shared buffers per operand

// As is stored transposed, [BK][AS_LD]: As[k][m] = A[cRow + m][k0 + k]. Row length BM + 4: a warp's
// transposed scalar stores write 8 rows m x 4 column groups; with length 128 (= 0 mod 32 banks) the
// 4 groups of a row would share a bank (4-way conflict); with 132 (= 4 mod 32) they land 16 banks
// apart, pairing up (2-way). 132 floats = 528 bytes keeps each row 16-byte aligned for LDS.128.
constexpr int AS_LD = BM + 4;
constexpr int A_GROUPS = v7_div(BM * BK / 4, THREADS);   // 4 float4 groups of A per thread per phase
constexpr int B_GROUPS = v7_div(BK * BN / 4, THREADS);   // 4 float4 groups of B per thread per phase
constexpr int A_ROW_STEP = v7_div(THREADS, BK / 4);      // 32 rows between a thread's A groups
constexpr int B_ROW_STEP = v7_div(THREADS, BN / 4);      // 4 rows between a thread's B groups
constexpr int SMEM_BYTES = STAGES * (BK * AS_LD + BK * BN) * 4;   // 16.5 KB default, 33 KB prefetch

static_assert(BM > 0 && BN > 0 && BK > 0 && WM > 0 && WN > 0 && WNITER > 0 && TM > 0 && TN > 0,
              "v7: every tile parameter must be positive");
static_assert(BM % WM == 0 && BN % WN == 0, "v7: the block tile (BM x BN) must split into whole warp tiles (WM x WN)");
static_assert(THREADS <= 1024, "v7: (BM/WM)*(BN/WN) warps must fit in one block (at most 32 warps)");
static_assert(WN % WNITER == 0, "v7: WN must split into WNITER strips of equal width");
static_assert(WSUBN % TN == 0, "v7: a strip (WN/WNITER columns) must split into lane columns of TN");
static_assert(LANES_N >= 1 && 32 % LANES_N == 0, "v7: lanes across a strip (WN/WNITER/TN) must divide 32");
static_assert(WM == TM * LANES_M, "v7: WM must equal TM * (32 / (WN/WNITER/TN)): the 32 lanes must cover the warp tile exactly once");
static_assert(TM % 4 == 0 && TN % 4 == 0, "v7: TM and TN must be multiples of 4 (regM, regN are read with LDS.128)");
static_assert(BK % 4 == 0 && BN % 4 == 0, "v7: BK and BN must be multiples of 4 (tile rows are loaded as float4 groups)");
static_assert((BM * BK) % (4 * THREADS) == 0, "v7: THREADS * 4 must divide BM*BK (each thread loads whole float4 groups of A)");
static_assert((BK * BN) % (4 * THREADS) == 0, "v7: THREADS * 4 must divide BK*BN (each thread loads whole float4 groups of B)");
static_assert(THREADS % (BK / 4) == 0, "v7: THREADS must be a multiple of BK/4 (a thread's A groups share one column)");
static_assert(THREADS % (BN / 4) == 0, "v7: THREADS must be a multiple of BN/4 (a thread's B groups share one column)");
static_assert(TM * WNITER * TN <= 192, "v7: more than 192 accumulators per thread cannot stay in 255 registers");
static_assert(SMEM_BYTES <= 48 * 1024, "v7: static shared memory (STAGES x (BK*(BM+4) + BK*BN) floats) is limited to 48 KB");

// ---- global memory helpers: a group is 4 consecutive floats p[0..3] of one row (as in v6) -------

template <bool VEC>
__device__ __forceinline__ float4 load4(const float* __restrict__ p)
{
    // BEGIN SOLUTION v7-float4-load: your v6 load4: VEC: p[0..3] as one float4; else 4 floats
    if constexpr (VEC)
        return *reinterpret_cast<const float4*>(p);   // LDG.E.128: p is 16-byte aligned
    else
        return make_float4(p[0], p[1], p[2], p[3]);
    // END SOLUTION v7-float4-load
}

// Edge version, for a row that exists: only `valid` elements from p on exist (may be <= 0 or >= 4).
// Missing elements read as 0. A group fully inside still takes one float4 in VEC.
template <bool VEC>
__device__ __forceinline__ float4 load4_guarded(const float* __restrict__ p, int valid)
{
    if (valid <= 0) return make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (valid >= 4) return load4<VEC>(p);
    return make_float4(p[0], valid > 1 ? p[1] : 0.0f, valid > 2 ? p[2] : 0.0f, 0.0f);
}

template <bool VEC>
__device__ __forceinline__ void store4(float* __restrict__ p, float4 v)
{
    if constexpr (VEC) {
        *reinterpret_cast<float4*>(p) = v;              // STG.E.128
    } else {
        p[0] = v.x; p[1] = v.y; p[2] = v.z; p[3] = v.w;
    }
}

template <bool VEC>
__device__ __forceinline__ void store4_guarded(float* __restrict__ p, float4 v, int valid)
{
    if (valid >= 4) { store4<VEC>(p, v); return; }
    if (valid > 0) p[0] = v.x;
    if (valid > 1) p[1] = v.y;
    if (valid > 2) p[2] = v.z;
}

// ---- the kernel body, shared by both entry points ----------------------------------------------

template <bool VEC>
__device__ __forceinline__ void sgemm_v7_body(int M, int N, int K, const float* __restrict__ A,
                                              const float* __restrict__ B, float* __restrict__ C)
{
    __shared__ __align__(16) float As[STAGES][BK][AS_LD];   // transposed: As[s][k][m]
    __shared__ __align__(16) float Bs[STAGES][BK][BN];      // Bs[s][k][n]

    const int cRow = blockIdx.y * BM;
    const int cCol = blockIdx.x * BN;
    const int tid = threadIdx.x;

    // Compute mapping: which warp tile, and which 8 x 4 block of each strip.
    const int warp = tid / 32, lane = tid % 32;
    // BEGIN SOLUTION v7-warp-indices: warpRow, warpCol, tRowInWarp, tColInWarp; mOff, nOff
    const int warpRow = warp / WARPS_N;           // chapter: warp / 2
    const int warpCol = warp % WARPS_N;           // chapter: warp % 2
    const int tRowInWarp = lane / LANES_N;        // chapter: lane / 4 -> rows tRowInWarp*8 + 0..7
    const int tColInWarp = lane % LANES_N;        // chapter: lane % 4 -> cols tColInWarp*4 + 0..3 of each strip
    const int mOff = warpRow * WM + tRowInWarp * TM;   // first tile row this thread owns
    const int nOff = warpCol * WN + tColInWarp * TN;   // first tile column (strip 0) this thread owns
    // END SOLUTION v7-warp-indices

    // Load mapping (as v6): group g of A is tile row aRow + g*A_ROW_STEP, slice columns aCol..aCol+3;
    // a warp covers 8 rows x 4 groups = 8 x 64 bytes. Group g of B is slice row bRow + g*B_ROW_STEP,
    // tile columns bCol..bCol+3; a warp covers one 512-byte row segment.
    const int aRow = tid / (BK / 4), aCol = (tid % (BK / 4)) * 4;
    const int bRow = tid / (BN / 4), bCol = (tid % (BN / 4)) * 4;

    const float* Ablk = A + cRow * K;             // this block's rows of A
    const float* Bblk = B + cCol;                 // this block's columns of B
    const bool blockInside = cRow + BM <= M && cCol + BN <= N;

    float acc[TM][WNITER * TN] = {};              // 128 accumulators, all in registers
    float4 ra[A_GROUPS], rb[B_GROUPS];            // the next tile's groups, staged in registers

    // global -> registers for the slice starting at k0 (unguarded if the whole tile is inside)
    auto loadTile = [&](int k0) {
        if (blockInside && k0 + BK <= K) {
#pragma unroll
            for (int g = 0; g < A_GROUPS; ++g)
                ra[g] = load4<VEC>(Ablk + (aRow + g * A_ROW_STEP) * K + k0 + aCol);
#pragma unroll
            for (int g = 0; g < B_GROUPS; ++g)
                rb[g] = load4<VEC>(Bblk + (k0 + bRow + g * B_ROW_STEP) * N + bCol);
        } else {
#pragma unroll
            for (int g = 0; g < A_GROUPS; ++g) {
                const int r = aRow + g * A_ROW_STEP;
                ra[g] = cRow + r < M ? load4_guarded<VEC>(Ablk + r * K + k0 + aCol, K - (k0 + aCol))
                                     : make_float4(0.0f, 0.0f, 0.0f, 0.0f);   // row below A
            }
#pragma unroll
            for (int g = 0; g < B_GROUPS; ++g) {
                const int r = k0 + bRow + g * B_ROW_STEP;
                rb[g] = r < K ? load4_guarded<VEC>(Bblk + r * N + bCol, N - (cCol + bCol))
                             : make_float4(0.0f, 0.0f, 0.0f, 0.0f);           // row past K
            }
        }
    };

    // registers -> shared buffer s: A transposed (4 scalar STS per group), B as is (STS.128)
    auto storeTile = [&](int s) {
        // BEGIN SOLUTION v7-transposed-store: your v6 transposed store, into stage s: As[s][k][m]
#pragma unroll
        for (int g = 0; g < A_GROUPS; ++g) {
            const int r = aRow + g * A_ROW_STEP;
            As[s][aCol + 0][r] = ra[g].x;
            As[s][aCol + 1][r] = ra[g].y;
            As[s][aCol + 2][r] = ra[g].z;
            As[s][aCol + 3][r] = ra[g].w;
        }
        // END SOLUTION v7-transposed-store
#pragma unroll
        for (int g = 0; g < B_GROUPS; ++g)
            *reinterpret_cast<float4*>(&Bs[s][bRow + g * B_ROW_STEP][bCol]) = rb[g];
    };

    // BK outer products out of shared buffer s: per k, TM/4 + WNITER*TN/4 LDS.128 feed
    // TM * WNITER * TN FFMA (2 + 4 feed 128 by default).
    auto computeTile = [&](int s) {
        const float* aRead = &As[s][0][mOff];
        const float* bRead = &Bs[s][0][nOff];
#pragma unroll
        for (int k = 0; k < BK; ++k) {
            // BEGIN SOLUTION v7-strip-operands: regM[TM] from As[k], regN: TN of Bs[k] per strip w
            float regM[TM], regN[WNITER * TN];
#pragma unroll
            for (int i = 0; i < TM; i += 4) {
                const float4 v = *reinterpret_cast<const float4*>(aRead + k * AS_LD + i);
                regM[i] = v.x; regM[i + 1] = v.y; regM[i + 2] = v.z; regM[i + 3] = v.w;
            }
#pragma unroll
            for (int w = 0; w < WNITER; ++w)
#pragma unroll
                for (int j = 0; j < TN; j += 4) {
                    const float4 v = *reinterpret_cast<const float4*>(bRead + k * BN + w * WSUBN + j);
                    regN[w * TN + j] = v.x;     regN[w * TN + j + 1] = v.y;
                    regN[w * TN + j + 2] = v.z; regN[w * TN + j + 3] = v.w;
                }
            // END SOLUTION v7-strip-operands
            // BEGIN SOLUTION v7-outer-product: your v5 outer product, over all WNITER strips
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < WNITER * TN; ++j)
                    acc[i][j] += regM[i] * regN[j];
            // END SOLUTION v7-outer-product
        }
    };

    const int numTiles = (K + BK - 1) / BK;       // >= 1 since K >= 1
    if constexpr (V7_PREFETCH) {
        // Double buffer: tile t lives in buffer t % 2. One barrier per tile suffices: the stores
        // into buffer (t+1) % 2 happen after this thread's compute of tile t, and every thread
        // finished reading that buffer (tile t-1) before the barrier that ended iteration t-1.
        loadTile(0);
        storeTile(0);
        __syncthreads();
        for (int t = 0; t < numTiles; ++t) {
            const int cur = t & 1;
            const bool more = t + 1 < numTiles;   // uniform across the block
            if (more) loadTile((t + 1) * BK);     // in flight during the math below
            computeTile(cur);
            if (more) storeTile(cur ^ 1);
            __syncthreads();
        }
    } else {
        // The chapter's kernel: load, wait, compute, wait.
        for (int t = 0; t < numTiles; ++t) {
            loadTile(t * BK);
            storeTile(0);
            __syncthreads();                      // the tile is complete before anyone reads it
            computeTile(0);
            __syncthreads();                      // everyone is done reading before it is overwritten
        }
    }

    // Epilogue: row i, strip w of the thread tile is TN columns = TN/4 groups of 4.
#pragma unroll
    for (int i = 0; i < TM; ++i) {
        const int row = cRow + mOff + i;
        if (!blockInside && row >= M) break;      // rows grow with i: the rest are below C too
        float* c = C + row * N + cCol + nOff;
#pragma unroll
        for (int w = 0; w < WNITER; ++w)
#pragma unroll
            for (int j = 0; j < TN; j += 4) {
                const int n = w * TN + j;         // index into acc[i][...]
                const int off = w * WSUBN + j;    // column offset from the thread's first column
                const float4 v = make_float4(acc[i][n], acc[i][n + 1], acc[i][n + 2], acc[i][n + 3]);
                if (blockInside)
                    store4<VEC>(c + off, v);
                else
                    store4_guarded<VEC>(c + off, v, N - (cCol + nOff + off));
            }
    }
}

extern "C" __global__ void __launch_bounds__(THREADS)
sgemm_v7_vec(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B,
             float* __restrict__ C)
{
    sgemm_v7_body<true>(M, N, K, A, B, C);
}

extern "C" __global__ void __launch_bounds__(THREADS)
sgemm_v7_scalar(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B,
                float* __restrict__ C)
{
    sgemm_v7_body<false>(M, N, K, A, B, C);
}
