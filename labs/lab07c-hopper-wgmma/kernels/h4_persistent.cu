// h4_persistent.cu: h3 as a persistent kernel walking 128 x 256 tiles in a rasterized order.
//
//   C (FP32, M x N) = A (FP16, M x K) . B (FP16, K x N), all row-major, FP32 accumulation.
//   Entry point: hgemm_h4_persistent (int M, int N, int K, const __grid_constant__ CUtensorMap tmA,
//                                     const __grid_constant__ CUtensorMap tmB, float* C)
//   Tensor maps as h2/h3: tmA FP16 dims (K, M) box (64, BM); tmB FP16 dims (N, K) box (64, BK);
//     both CU_TENSOR_MAP_SWIZZLE_128B. Odd pitches: the launch hook pads, as for h2.
//   Launch:  THREADS = 384, a PERSISTENT grid: (min(#SMs, tiles), 1, 1) with tiles =
//            ceil(M / BM) * ceil(N / BN); SMEM_BYTES dynamic (one block per SM).
//   Shapes:  any M, N, K >= 1 (h2's padded copy when K % 8 or N % 8 is not 0).
//   Build:   sm_90a only.
//
// What it adds over h3.
// 1. Persistent blocks: one block per SM loops over output tiles (tile = blockIdx.x, then
//    += gridDim.x). The producer never stops between tiles: while the consumers store tile i's
//    accumulators, it is already filling the stages with tile i+1's first K slices, so the next
//    tile's MMAs start at once instead of after a block launch and a pipeline fill. The stage and
//    phase counters run on across tiles (`it` counts K slices since the block started).
// 2. Rasterized order: tile index -> (tile row, tile column) goes down GROUP tile rows before it
//    moves one tile column right, so the ~132 tiles in flight at any time share GROUP rows of A
//    and about 132 / GROUP columns of B: those panels stay in L2 (50 MB) instead of being fetched
//    from HBM once per tile.
// 3. The larger 128 x 256 tile: each consumer runs m64n256k16, the widest wgmma (128 accumulators a
//    thread). Per 16-deep slice a consumer's wgmma reads 64 x 16 halves of A and 16 x 256 of B
//    (10 KB) from shared memory for 64 x 256 x 16 multiply-adds: 39 bytes per 1000 MACs, where
//    h3's m64n128k16 reads 6 KB for half the MACs (47 per 1000). The fewer bytes per MAC, the
//    less the tensor core waits on shared memory.
// Tiles and why: BM x BN = 128 x 256 (two consumers of 64 x 256), BK = 64, STAGES = 4: 4 x 48 KB =
// 192 KB of the 227 KB. GROUP = 16 tile rows per raster band: the wave then spans about as many rows
// of A (16 x 128) as columns of B (8 x 256), the fewest distinct bytes per k-slice.
//
// What to look for in SASS: as h3, with HGMMA.64x256x16.F32; the main loop between the two
// SYNCS.PHASECHK waits has 4 HGMMA and no BAR.SYNC. ptxas must not warn C7509-C7511.
// What to look for in ncu: sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed
// (the tensor pipe busy: this design's ceiling), lts__throughput (L2 load), and
// gpc__cycles_elapsed.avg.per_second: the H200 lowers its SM clock under sustained FP16 GEMM load
// (power), so compare cycles, or interleave with the baseline when timing.

#include <cuda_fp16.h>     // half (SMEM_BYTES)
#include "hopper_ptx.cuh"

// BEGIN PARAMETERS
#ifndef BM
#define BM 128      // block tile rows: 64 for each of the two consumers
#endif
#ifndef BN
#define BN 256      // block tile columns = the wgmma's N (the widest, m64n256k16)
#endif
#ifndef BK
#define BK 64       // one 128-byte swizzle row of halves
#endif
#ifndef STAGES
#define STAGES 4    // stages the producer may run ahead
#endif
#ifndef GROUP
#define GROUP 16    // tile rows per raster band: 16 x 128 rows of A ~ 8 x 256 columns of B per wave
#endif
#ifndef CONSUMERS
#define CONSUMERS 2 // consumer warpgroups, each BM / CONSUMERS rows
#endif

#define THREADS ((CONSUMERS + 1) * 128)
#define SMEM_BYTES (STAGES * (BM * BK + BK * BN) * sizeof(half) + 1024)

static_assert(BK == 64, "BK must be 64: one 128-byte swizzle row of halves");
static_assert(BM % (64 * CONSUMERS) == 0 && BM <= 256, "each consumer owns a multiple of 64 rows; BM <= 256 (one TMA box)");
static_assert(BN == 64 || BN == 128 || BN == 256, "BN is a wgmma N: 64, 128 or 256");
static_assert((BM / 64 / CONSUMERS) * (BN / 2) <= 128, "a consumer's accumulators must fit in 232 registers");
static_assert(CONSUMERS == 1 || CONSUMERS == 2, "1 or 2 consumer warpgroups (register budget)");
static_assert(STAGES >= 2, "STAGES >= 2");
static_assert(GROUP >= 1, "GROUP >= 1");
static_assert(SMEM_BYTES <= 232448, "dynamic shared memory at most 227 KB");
// END PARAMETERS

[[maybe_unused]] constexpr int MI = BM / 64 / CONSUMERS;      // m64 blocks per consumer
[[maybe_unused]] constexpr int A_TILE = BM * BK * 2;
[[maybe_unused]] constexpr int B_PANEL = BK * 64 * 2;
[[maybe_unused]] constexpr int STAGE_BYTES = A_TILE + BK * BN * 2;
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
hgemm_h4_persistent(int M, int N, int K, const __grid_constant__ CUtensorMap tmA,
                    const __grid_constant__ CUtensorMap tmB, float* __restrict__ C) {
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
#pragma unroll
                    for (int p = 0; p < BN / 64; ++p)
                        tma_load_2d(a + A_TILE + p * B_PANEL, &tmB, tn * BN + p * 64, t * BK, &full[s]);
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
                for (int j = 0; j < BK / 16; ++j) {
                    const uint64_t db = desc_mn_major(b_s + j * 2048, B_PANEL);
#pragma unroll
                    for (int i = 0; i < MI; ++i)
                        wgmma_f16<BN>(acc[i], desc_k_major(a_s + i * 8192 + j * 32), db, 1);
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
