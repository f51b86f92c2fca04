// h4_tf32.cu: h4's persistent, warp-specialized design on TF32 tensor cores (FP32 in, FP32 out).
//
//   C (FP32, M x N) = A (FP32, M x K) . B (FP32, K x N), all row-major; products in TF32 (the
//   tensor core reads the top 19 bits of each FP32 input: 10 mantissa bits), FP32 accumulation.
//   Entry points:
//     sgemm_h4_tf32 (int M, int N, int K, const __grid_constant__ CUtensorMap tmA,
//                    const __grid_constant__ CUtensorMap tmBt, float* C)
//     transpose_h4_tf32 (int rows, int cols, const float* in, float* out, int out_pitch)
//         out (cols x rows, row pitch out_pitch floats) = in^T (in: rows x cols, row-major)
//   Tensor maps, both FP32 with CU_TENSOR_MAP_SWIZZLE_128B:
//     tmA:  dims (K, M), box (32, BM): A as stored (K contiguous: K-major)
//     tmBt: dims (K, N), box (32, BN): B^T, N x K with K contiguous (K-major), see below
//   Launch (the hook, per call, both timed): transpose_h4_tf32 with block (32, 8), grid
//     (ceil(N / 32), ceil(K / 32)), in = B (K x N), out = Bt (pitch: K rounded up to 4 floats);
//     then sgemm_h4_tf32 with THREADS = 384 on a persistent grid (min(#SMs, tiles), 1, 1),
//     SMEM_BYTES dynamic.
//   Shapes:  any M, N, K >= 1 (K % 4 != 0: the hook copies A to a padded pitch, as h2 does).
//   Build:   sm_90a only.
//
// What it adds over h4. wgmma's TF32 form, m64nNk8, has no transpose immediates: both operands
// must be K-major in shared memory (only the 16-bit types can read an MN-major B). Row-major B
// (K x N) is MN-major, so the launch hook transposes it once on the device into Bt (N x K,
// row-major = K-major for wgmma) before the GEMM, and the timing counts that transpose: it reads
// and writes K x N floats once, a memory-bound pass (at 4096^3, 128 MB at 3-4 TB/s: 35-45 us
// beside a GEMM of about 0.35 ms). We chose the transpose over a K-major copy kept between calls
// because a library call gets B as it is; a model that reuses B would store it transposed once
// and skip this step (the lab can time both: with and without the transpose launch).
// With both operands K-major everything is the FP16 A-operand layout: a 128-byte row holds 32
// floats, so BK = 32 and one TMA box per operand per stage (BN = 256 rows of B^T is one box); the
// k-th 8-deep slice starts 32 bytes further into the rows (desc_k_major, like A in h1-h4).
//
// Tiles and why: BM x BN = 128 x 256, BK = 32 floats (128 bytes), STAGES = 4: 48 KB a stage, the
// same bytes per stage as h4 (half the K depth: a float is twice a half). GROUP = 8.
//
// What to look for in SASS: HGMMA.64x256x8.F32.TF32 (4 per stage per consumer), UTMALDG.2D (2 per
// stage), SYNCS.*, USETMAXREG; the transpose is LDG/STS/LDS/STG only. ptxas must not warn
// C7509-C7511.

#include "hopper_ptx.cuh"

// BEGIN PARAMETERS
#ifndef BM
#define BM 128      // block tile rows: 64 for each of the two consumers
#endif
#ifndef BN
#define BN 256      // block tile columns = the wgmma's N (the widest, m64n256k8)
#endif
#ifndef BK
#define BK 32       // one 128-byte swizzle row of floats
#endif
#ifndef STAGES
#define STAGES 4    // stages the producer may run ahead
#endif
#ifndef GROUP
#define GROUP 8     // tile rows per raster band (L2 reuse of B panels)
#endif
#ifndef CONSUMERS
#define CONSUMERS 2 // consumer warpgroups, each BM / CONSUMERS rows
#endif

#define THREADS ((CONSUMERS + 1) * 128)
#define SMEM_BYTES (STAGES * (BM * BK + BK * BN) * sizeof(float) + 1024)

static_assert(BK == 32, "BK must be 32: one 128-byte swizzle row of floats");
static_assert(BM % (64 * CONSUMERS) == 0 && BM <= 256, "each consumer owns a multiple of 64 rows; BM <= 256 (one TMA box)");
static_assert(BN == 128 || BN == 256, "BN is a wgmma N: 128 or 256 (one TMA box of B^T rows)");
static_assert((BM / 64 / CONSUMERS) * (BN / 2) <= 128, "a consumer's accumulators must fit in 232 registers");
static_assert(CONSUMERS == 1 || CONSUMERS == 2, "1 or 2 consumer warpgroups (register budget)");
static_assert(STAGES >= 2, "STAGES >= 2");
static_assert(GROUP >= 1, "GROUP >= 1");
static_assert(SMEM_BYTES <= 232448, "dynamic shared memory at most 227 KB");
// END PARAMETERS

[[maybe_unused]] constexpr int MI = BM / 64 / CONSUMERS;      // m64 blocks per consumer
[[maybe_unused]] constexpr int A_TILE = BM * BK * 4;
[[maybe_unused]] constexpr int STAGE_BYTES = A_TILE + BN * BK * 4;
[[maybe_unused]] constexpr int CONSUMER_REGS = CONSUMERS == 2 ? 232 : 240;
[[maybe_unused]] constexpr int PRODUCER_REGS = 40;

// Tile index -> (tile row, tile column): bands of GROUP tile rows, column by column within a band.
__device__ __forceinline__ void tile_coords(int tile, int tiles_m, int tiles_n, int& tm, int& tn) {
    const int band = tile / (GROUP * tiles_n);
    const int first = band * GROUP;
    const int rows = min(GROUP, tiles_m - first);        // the last band may be narrower
    const int in_band = tile - band * GROUP * tiles_n;
    tm = first + in_band % rows;
    tn = in_band / rows;
}

extern "C" __global__ void __launch_bounds__(THREADS, 1)
sgemm_h4_tf32(int M, int N, int K, const __grid_constant__ CUtensorMap tmA,
                    const __grid_constant__ CUtensorMap tmBt, float* __restrict__ C) {
#if HOPPER_STUB
    __trap();                                            // not an sm_90a build: see hopper_ptx.cuh
#else
    extern __shared__ unsigned char smem_raw[];
    __shared__ __align__(8) uint64_t full[STAGES], empty[STAGES];
    unsigned char* smem = reinterpret_cast<unsigned char*>(
        (reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));

    const int tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN, tiles = tiles_m * tiles_n;
    const int KT = (K + BK - 1) / BK;
    const int wg = threadIdx.x / 128, tid = threadIdx.x % 128;

    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(&full[s], 1);
            mbar_init(&empty[s], CONSUMERS);
        }
        mbar_fence_init();
    }
    __syncthreads();

    if (wg == 0) {                                   // ---- producer ----
        setmaxnreg_dec<PRODUCER_REGS>();
        if (tid == 0) {
            int it = 0;                              // K slices issued since the block started
            for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
                int tm, tn;
                tile_coords(tile, tiles_m, tiles_n, tm, tn);
                for (int t = 0; t < KT; ++t, ++it) {
                    const int s = it % STAGES;
                    if (it >= STAGES) mbar_wait(&empty[s], ((it / STAGES) - 1) & 1);
                    unsigned char* a = smem + s * STAGE_BYTES;
                    mbar_arrive_tx(&full[s], STAGE_BYTES);
                    tma_load_2d(a, &tmA, t * BK, tm * BM, &full[s]);
                    tma_load_2d(a + A_TILE, &tmBt, t * BK, tn * BN, &full[s]);
                }
            }
        }
    } else {                                         // ---- consumers ----
        setmaxnreg_inc<CONSUMER_REGS>();
        const int c = wg - 1;
        int it = 0;
        for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
            int tm, tn;
            tile_coords(tile, tiles_m, tiles_n, tm, tn);
            float acc[MI][BN / 2];
#pragma unroll
            for (int i = 0; i < MI; ++i)
#pragma unroll
                for (int j = 0; j < BN / 2; ++j) acc[i][j] = 0.f;

            for (int t = 0; t < KT; ++t, ++it) {
                const int s = it % STAGES;
                mbar_wait(&full[s], (it / STAGES) & 1);
                const uint32_t base = smem_addr(smem + s * STAGE_BYTES);
                const uint32_t a_s = base + c * MI * 8192, b_s = base + A_TILE;
                wgmma_fence();
#pragma unroll
                for (int j = 0; j < BK / 8; ++j) {       // 8-deep slices, 32 bytes apart
                    const uint64_t db = desc_k_major(b_s + j * 32);
#pragma unroll
                    for (int i = 0; i < MI; ++i)
                        wgmma_tf32<BN>(acc[i], desc_k_major(a_s + i * 8192 + j * 32), db, 1);
                }
                wgmma_commit();
                wgmma_wait<1>();                     // slice it-1's wgmmas are done
                if (t > 0 && tid == 0) mbar_arrive(&empty[(it - 1) % STAGES]);
            }
            wgmma_wait<0>();
            if (tid == 0) mbar_arrive(&empty[(it - 1) % STAGES]);   // the tile's last slice
#pragma unroll
            for (int i = 0; i < MI; ++i) keep_in_regs(acc[i]);
#pragma unroll
            for (int i = 0; i < MI; ++i)
                store_acc_64xN<BN>(acc[i], C, M, N, tm * BM + (c * MI + i) * 64, tn * BN, tid);
        }
    }
#endif
}

// B (rows x cols) -> Bt (cols x rows, pitch out_pitch), through a 32 x 33 shared tile so that both
// the reads and the writes are coalesced rows (the pad column avoids bank conflicts).
extern "C" __global__ void __launch_bounds__(256)
transpose_h4_tf32(int rows, int cols, const float* __restrict__ in, float* __restrict__ out, int out_pitch) {
    __shared__ float tile[32][33];
    const int c0 = blockIdx.x * 32, r0 = blockIdx.y * 32;
    for (int y = threadIdx.y; y < 32; y += 8) {
        const int r = r0 + y, c = c0 + threadIdx.x;
        if (r < rows && c < cols) tile[y][threadIdx.x] = in[(size_t)r * cols + c];
    }
    __syncthreads();
    for (int y = threadIdx.y; y < 32; y += 8) {
        const int c = c0 + y, r = r0 + threadIdx.x;       // out row c, column r
        if (c < cols && r < rows) out[(size_t)c * out_pitch + r] = tile[threadIdx.x][y];
    }
}
