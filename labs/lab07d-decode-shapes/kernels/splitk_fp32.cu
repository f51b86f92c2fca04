// splitk_fp32.cu -- lab 7d: split-K, for when M x N is too small to fill the GPU (chapter 8, section 8)
//
// C (M x N) = A (M x K) . B (K x N), row-major FP32, FFMA on CUDA cores, any M, N, K >= 1.
// At 128 x 128 x 65536 the output is ONE 128 x 128 block tile: an ordinary GEMM runs one block on
// one of 132 SMs, for the whole of K. Split-K cuts K into `splits` ranges and gives each its own
// block (blockIdx.z): `splits` SMs work at once, each writes a partial tile, and a second small
// kernel adds the partials. At M x N = one tile the SM count predicts a speed-up of about `splits`
// (up to 132), minus the reduction.
//
// Entry points:
//   splitk_fp32_vec     K % 4 == 0 and N % 4 == 0: float4 (LDG.E.128) loads of A and B, float4
//                       stores of the partials
//   splitk_fp32_scalar  any shape: element loads and stores
//       (int M, int N, int K, const float* A, const float* B, float* C, int splits, float* workspace)
//     Launch: 1-D block of THREADS = 256, grid (ceil(N / BN), ceil(M / BM), splits), SMEM_BYTES = 0
//     (static shared memory, 8 KB). C is not touched (neither read nor written): the partial tile of
//     split z goes to workspace[z][M][N], which must hold splits * M * N floats. Every block writes
//     all of its in-bounds tile, zeros if its K range is empty, so the reduce may read it all.
//   splitk_fp32_fused_vec, splitk_fp32_fused_scalar  the main kernel and the reduce in one launch,
//     for a grid of at most one block per SM (launch.py; splitk_reduce.cuh says why); same arguments,
//     C written, workspace = the partials then 2 counters.
//   splitk_fp32_reduce  (int M, int N, int splits, const float* workspace, float* C)
//     Launch: 1-D block of REDUCE_THREADS = 256, grid (ceil(M * N / REDUCE_THREADS), 1, 1), no shared
//     memory. C[i] = ((ws[0][i] + ws[1][i]) + ws[2][i]) + ... : the same order on every run, so
//     the result is bitwise repeatable. Run it after the main kernel on the same stream, also for
//     splits = 1 (it is then a copy).
// What it costs: the workspace (splits x M x N x 4 bytes, 2 MB at 128 x 128 x 32 splits), written
// once and read once, plus one extra launch (a few us). An atomicAdd epilogue (each block adds its
// partial tile into a zeroed C) would save the second kernel and the workspace but needs C zeroed
// first (a memset, which also breaks "C may hold NaN") and makes the order of the additions, and so
// the last bits of C, depend on which block finishes first: not provided here.
//
// Split ranges: K is cut into ceil(K / BK) tiles and split z gets tiles [z * T, (z + 1) * T),
// T = ceil(tiles / splits): every boundary is a multiple of BK, so no tile straddles two splits,
// and only the last split's last tile can be partial. splits > tiles leaves the last splits empty.
//
// The block tile (v6's, with v7's conflict-free thread layout): BM x BN = 128 x 128, BK = 8,
// 256 threads, each computes TM x TN = 8 x 8 outputs as two 4 x 4 groups in each direction: rows
// ty*4 + {0..3} and 64 + ty*4 + {0..3}, columns tx*4 + {0..3} and 64 + tx*4 + {0..3} (ty = tid / 16,
// tx = tid % 16). A warp then reads, per k, two 16-byte runs of As (2 distinct ty: broadcast) and
// 16 consecutive float4 of Bs: both conflict-free LDS.128. A is stored transposed (As[k][m]).
// Double-buffered through registers: the next tile's global loads are issued before this tile's
// FFMAs, then stored to the other shared buffer: one barrier per tile.
//
// SASS to look for: per tile 512 FFMA, 32 LDS.128 (4 per k), 2 LDG.E.128 + 4 STS (A, transposed)
// and 1 STS.128 (B) in the interior path of _vec, one BAR.SYNC; STG.E.128 in the epilogue; no LDL/STL.
// In the reduce: one LDG per split, FADD chain, one STG.

#include "splitk_reduce.cuh"   // the ordered reduce

#ifndef BM
#define BM 128      // block tile rows: with BN = 128 the benchmark's 128 x 128 output is one tile
#endif
#ifndef BN
#define BN 128      // block tile columns
#endif
#ifndef BK
#define BK 8        // K per tile: A tile 128 x 8 = 256 float4 = one per thread, B tile the same
#endif
#ifndef TM
#define TM 8        // thread tile rows: two groups of 4, BM / 2 apart
#endif
#ifndef TN
#define TN 8        // thread tile columns: two groups of 4, BN / 2 apart
#endif

#define THREADS ((BM / TM) * (BN / TN))   // 256: one thread per 8 x 8 outputs
#define SMEM_BYTES 0                       // static: 2 x (BK x BM + BK x BN) floats = 16 KB

static_assert(TM == 8 && TN == 8, "splitk_fp32: the thread layout is two 4 x 4 groups in each direction (TM = TN = 8)");
static_assert(BM % 8 == 0 && BN % 8 == 0, "splitk_fp32: BM and BN must be multiples of 8 (two halves of 4-row groups)");
static_assert(THREADS <= 1024 && THREADS % 32 == 0, "splitk_fp32: (BM/TM)*(BN/TN) must be a whole number of warps, at most 1024");
static_assert(BK % 4 == 0, "splitk_fp32: BK must be a multiple of 4 (A tile rows are float4 groups)");
static_assert((BM * BK / 4) % THREADS == 0 && (BK * BN / 4) % THREADS == 0,
              "splitk_fp32: each thread loads whole float4 groups of the A and B tiles");
static_assert(THREADS % (BK / 4) == 0 && THREADS % (BN / 4) == 0,
              "splitk_fp32: a thread's A (B) groups must share one column of the tile");
static_assert(2 * (BK * BM + BK * BN) * 4 <= 48 * 1024, "splitk_fp32: static shared memory is limited to 48 KB");

namespace splitk_fp32 {

constexpr int TX = BN / TN;                        // 16 thread columns
constexpr int A_GROUPS = BM * BK / 4 / THREADS;    // float4 groups of A per thread per tile (1)
constexpr int B_GROUPS = BK * BN / 4 / THREADS;    // ... of B (1)
constexpr int A_ROW_STEP = THREADS / (BK / 4);     // rows between a thread's A groups
constexpr int B_ROW_STEP = THREADS / (BN / 4);

// p[0..3] of a row that exists, `valid` of them inside the matrix (missing ones read as 0).
template <bool VEC>
__device__ __forceinline__ float4 load4(const float* __restrict__ p, int valid)
{
    if (valid >= 4) {
        if constexpr (VEC) return __ldg(reinterpret_cast<const float4*>(p));
        else               return make_float4(p[0], p[1], p[2], p[3]);
    }
    return make_float4(valid > 0 ? p[0] : 0.0f, valid > 1 ? p[1] : 0.0f, valid > 2 ? p[2] : 0.0f, 0.0f);
}

template <bool VEC>
__device__ __forceinline__ void splitk_body(int M, int N, int K, const float* __restrict__ A,
                                            const float* __restrict__ B, int splits,
                                            float* __restrict__ ws)
{
    __shared__ __align__(16) float As[2][BK][BM];   // transposed: As[k][m]
    __shared__ __align__(16) float Bs[2][BK][BN];

    const int tid = threadIdx.x;
    const int tx = tid % TX, ty = tid / TX;
    const int bm = blockIdx.y * BM, bn = blockIdx.x * BN;

    // This split's K range [kb, ke), tile-aligned.
    const int tiles = (K + BK - 1) / BK;
    const int per = (tiles + splits - 1) / splits;
    const int t0 = min(tiles, (int)blockIdx.z * per), t1 = min(tiles, t0 + per);
    const int ke = min(K, t1 * BK);
    const bool rows_inside = bm + BM <= M && bn + BN <= N;

    // Loader coordinates: A group = row a_r (+ A_ROW_STEP i), columns a_c .. a_c + 3 of the tile.
    const int a_r = tid / (BK / 4), a_c = (tid % (BK / 4)) * 4;
    const int b_r = tid / (BN / 4), b_c = (tid % (BN / 4)) * 4;

    float4 ra[A_GROUPS], rb[B_GROUPS];
    auto fetch = [&](int k0) {
        const bool full = rows_inside && k0 + BK <= ke;
#pragma unroll
        for (int i = 0; i < A_GROUPS; ++i) {
            const int r = bm + a_r + i * A_ROW_STEP, k = k0 + a_c;
            if (full)        ra[i] = load4<VEC>(A + (size_t)r * K + k, 4);
            else if (r < M)  ra[i] = load4<VEC>(A + (size_t)r * K + k, ke - k);
            else             ra[i] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        }
#pragma unroll
        for (int i = 0; i < B_GROUPS; ++i) {
            const int k = k0 + b_r + i * B_ROW_STEP, c = bn + b_c;
            if (full)        rb[i] = load4<VEC>(B + (size_t)k * N + c, 4);
            else if (k < ke) rb[i] = load4<VEC>(B + (size_t)k * N + c, N - c);
            else             rb[i] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        }
    };
    auto stash = [&](int buf) {
#pragma unroll
        for (int i = 0; i < A_GROUPS; ++i) {
            const int m = a_r + i * A_ROW_STEP;
            As[buf][a_c + 0][m] = ra[i].x; As[buf][a_c + 1][m] = ra[i].y;
            As[buf][a_c + 2][m] = ra[i].z; As[buf][a_c + 3][m] = ra[i].w;
        }
#pragma unroll
        for (int i = 0; i < B_GROUPS; ++i)
            *reinterpret_cast<float4*>(&Bs[buf][b_r + i * B_ROW_STEP][b_c]) = rb[i];
    };

    float acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;

    int buf = 0;
    if (t0 < t1) { fetch(t0 * BK); stash(0); }
    __syncthreads();
    for (int t = t0; t < t1; ++t) {
        if (t + 1 < t1) fetch((t + 1) * BK);     // next tile in flight during this tile's FFMAs
#pragma unroll
        for (int k = 0; k < BK; ++k) {
            float a[TM], b[TN];
            *reinterpret_cast<float4*>(&a[0]) = *reinterpret_cast<const float4*>(&As[buf][k][ty * 4]);
            *reinterpret_cast<float4*>(&a[4]) = *reinterpret_cast<const float4*>(&As[buf][k][BM / 2 + ty * 4]);
            *reinterpret_cast<float4*>(&b[0]) = *reinterpret_cast<const float4*>(&Bs[buf][k][tx * 4]);
            *reinterpret_cast<float4*>(&b[4]) = *reinterpret_cast<const float4*>(&Bs[buf][k][BN / 2 + tx * 4]);
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
        }
        if (t + 1 < t1) stash(buf ^ 1);          // the other buffer: nobody reads it this tile
        __syncthreads();                         // next tile visible; this buffer free for t + 2
        buf ^= 1;
    }

    // Partial tile -> workspace[z]: all in-bounds elements, zeros for an empty split.
    float* W = ws + (size_t)blockIdx.z * M * N;
#pragma unroll
    for (int i = 0; i < TM; ++i) {
        const int r = bm + (i < 4 ? ty * 4 + i : BM / 2 + ty * 4 + i - 4);
        if (r >= M) continue;
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int c = bn + h * (BN / 2) + tx * 4;
            float* p = W + (size_t)r * N + c;
            const float4 v = make_float4(acc[i][4 * h], acc[i][4 * h + 1], acc[i][4 * h + 2], acc[i][4 * h + 3]);
            if (VEC && c + 4 <= N) {
                *reinterpret_cast<float4*>(p) = v;   // STG.E.128: N % 4 == 0, c % 4 == 0
            } else {
                if (c + 0 < N) p[0] = v.x;
                if (c + 1 < N) p[1] = v.y;
                if (c + 2 < N) p[2] = v.z;
                if (c + 3 < N) p[3] = v.w;
            }
        }
    }
}

}  // namespace splitk_fp32

extern "C" __global__ void __launch_bounds__(THREADS)
splitk_fp32_vec(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B,
                float* __restrict__ C, int splits, float* __restrict__ workspace)
{
    (void)C;
    splitk_fp32::splitk_body<true>(M, N, K, A, B, splits, workspace);
}

extern "C" __global__ void __launch_bounds__(THREADS)
splitk_fp32_scalar(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B,
                   float* __restrict__ C, int splits, float* __restrict__ workspace)
{
    (void)C;
    splitk_fp32::splitk_body<false>(M, N, K, A, B, splits, workspace);
}

// The same in one launch, where the grid has at most one block per SM (launch.py): the main body,
// then splitk_reduce.cuh's grid barrier and this block's slice of the ordered reduce. workspace:
// the splits x M x N partials, then 2 counters (zero at the start; left zero). Same bits as the two.
extern "C" __global__ void __launch_bounds__(THREADS)
splitk_fp32_fused_vec(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B,
                      float* __restrict__ C, int splits, float* __restrict__ workspace)
{
    splitk_fp32::splitk_body<true>(M, N, K, A, B, splits, workspace);
    splitk::finish_in_one_launch<4, BM, BN, THREADS, REDUCE_UNROLL>(M, N, splits, workspace, C);
}

extern "C" __global__ void __launch_bounds__(THREADS)
splitk_fp32_fused_scalar(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B,
                         float* __restrict__ C, int splits, float* __restrict__ workspace)
{
    splitk_fp32::splitk_body<false>(M, N, K, A, B, splits, workspace);
    splitk::finish_in_one_launch<1, BM, BN, THREADS, REDUCE_UNROLL>(M, N, splits, workspace, C);
}

// C[i] = sum over z of workspace[z][i], z ascending (splitk_reduce.cuh): bitwise repeatable.
extern "C" __global__ void __launch_bounds__(REDUCE_THREADS)
splitk_fp32_reduce(int M, int N, int splits, const float* __restrict__ workspace, float* __restrict__ C)
{
    splitk::reduce<REDUCE_THREADS, REDUCE_UNROLL>(M, N, splits, workspace, C);
}
