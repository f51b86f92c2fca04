// h6_split_k.cu: h4 with K split across its persistent blocks, for shapes with fewer output tiles
// than SMs (decode: M = 64 rows of tokens times a 4096 x 4096 weight matrix is 64 tiles of 64 x 64).
//
//   C (FP32, M x N) = A (FP16, M x K) . B (FP16, K x N), all row-major, FP32 accumulation.
//   Entry point: hgemm_h6_split_k (int M, int N, int K, const __grid_constant__ CUtensorMap tmA,
//                                  const __grid_constant__ CUtensorMap tmB, float* C, int splits,
//                                  float* workspace)
//   Tensor maps as h4. Launch: THREADS = (CONSUMERS + 1) * 128, a persistent grid of
//   min(#SMs, tiles x splits) blocks; SMEM_BYTES dynamic. splits = 1: h4 exactly (workspace unused).
//   workspace (splits > 1): SPLIT_COUNTERS unsigned ticket counters, all zero before the launch (and
//   zero again after it), then tiles x CONSUMERS x splits partial slabs of 128 x (BM / 64 /
//   CONSUMERS) x (BN / 2) floats. The launch hook (launch.py, tma_split_k) picks the split.
//   Shapes:  any M, N, K >= 1 (h2's padded copy when K % 8 or N % 8 is not 0). Build: sm_90a only.
//
// What it adds over h4. h4's blocks walk output tiles; this kernel's walk work units, (tile, z)
// for z < splits, and unit z of a tile multiplies only K slices [z T, (z + 1) T) of BK, T =
// ceil(ceil(K / BK) / splits). The producer and the consumers agree on the unit list, so h4's
// stage and phase counters run on unchanged; a unit whose range is empty issues no slice and
// waits on nothing. At 64 x 4096^2 with 64 x 64 tiles, h4 has 64 tiles for 132 SMs; 2 splits
// put 128 SMs to work, each streaming half as many weights.
//   The reduce is in the kernel, as skinny_fp16's (lab 7d): each consumer warpgroup writes its
// partial accumulators, in its own register order (thread t's values contiguous), to its slab,
// fences, and takes a ticket from its (tile, consumer) counter. The one that draws the last
// ticket adds all the slabs in split order 0, 1, 2, ... (its own read back too), so C is the same
// bits on every run for a given split, and writes C; it then zeroes the counter for the next
// launch. One launch, no reduce kernel.
// Tiles: h4's parameters and defaults (lab 7d's dispatcher builds 64 x 64 tiles, 1 consumer, 8 stages).
//
// What to look for in SASS: h4's (HGMMA, UTMALDG, SYNCS), plus the epilogue's ATOMG.E.ADD (the
// ticket), MEMBAR (the fences), BAR.SYNC with a named barrier for the consumer warpgroup, and
// LDG.E.STRONG.GPU (the partials read past L1).

#include "hopper_ptx.cuh"

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

#ifndef SPLIT_COUNTERS
#define SPLIT_COUNTERS 4096   // ticket counters at the workspace's start: tiles x CONSUMERS when split
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
static_assert(SPLIT_COUNTERS >= 1, "SPLIT_COUNTERS: ticket counters at the start of the workspace");

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

// Work unit -> (tile, its K slices [t0, t1)): the splits of one tile are consecutive units.
__device__ __forceinline__ void unit_range(int unit, int splits, int KT, int& tile, int& z, int& t0, int& t1) {
    tile = unit / splits;
    z = unit - tile * splits;
    const int per = (KT + splits - 1) / splits;
    t0 = min(KT, z * per);
    t1 = min(KT, t0 + per);
}

// The 128 threads of consumer warpgroup c, and no one else (the producer never waits here).
__device__ __forceinline__ void consumer_barrier(int c) {
    if (c == 0) asm volatile("bar.sync 1, 128;\n" ::: "memory");     // immediate ids: ptxas reserves
    else        asm volatile("bar.sync 2, 128;\n" ::: "memory");     // only these (a register id: all 16)
}
static_assert(CONSUMERS <= 2, "consumer_barrier names barriers 1 and 2");

extern "C" __global__ void __launch_bounds__(THREADS, 1)
hgemm_h6_split_k(int M, int N, int K, const __grid_constant__ CUtensorMap tmA,
                 const __grid_constant__ CUtensorMap tmB, float* __restrict__ C, int splits,
                 float* __restrict__ workspace) {
#if HOPPER_STUB
    __trap();                                            // not an sm_90a build: see hopper_ptx.cuh
#else
    extern __shared__ unsigned char smem_raw[];
    __shared__ __align__(8) uint64_t full[STAGES], empty[STAGES];
    __shared__ unsigned ticket[CONSUMERS];
    unsigned char* smem = reinterpret_cast<unsigned char*>(
        (reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));

    const int tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN, tiles = tiles_m * tiles_n;
    const int KT = (K + BK - 1) / BK;
    const int units = tiles * splits;
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
            for (int unit = blockIdx.x; unit < units; unit += gridDim.x) {
                int tile, z, t0, t1, tm, tn;
                unit_range(unit, splits, KT, tile, z, t0, t1);
                tile_coords(tile, tiles_m, tiles_n, tm, tn);
                for (int t = t0; t < t1; ++t, ++it) {
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
        constexpr int SLAB = 128 * MI * (BN / 2);   // floats of one consumer's partial tile
        unsigned* const counters = reinterpret_cast<unsigned*>(workspace);
        float* const partials = workspace + SPLIT_COUNTERS;
        int it = 0;
        for (int unit = blockIdx.x; unit < units; unit += gridDim.x) {
            int tile, z, t0, t1, tm, tn;
            unit_range(unit, splits, KT, tile, z, t0, t1);
            tile_coords(tile, tiles_m, tiles_n, tm, tn);
            float acc[MI][BN / 2];
#pragma unroll
            for (int i = 0; i < MI; ++i)
#pragma unroll
                for (int j = 0; j < BN / 2; ++j) acc[i][j] = 0.f;

            for (int t = t0; t < t1; ++t, ++it) {
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
                if (t > t0 && tid == 0) mbar_arrive(&empty[(it - 1) % STAGES]);
            }
            wgmma_wait<0>();                         // unconditional: a wait in a divergent path serializes
            if (t1 > t0 && tid == 0)                 // every wgmma (ptxas C7518); an empty range released none
                mbar_arrive(&empty[(it - 1) % STAGES]);   // the unit's last slice
#pragma unroll
            for (int i = 0; i < MI; ++i) keep_in_regs(acc[i]);
            if (splits > 1) {
                // this warpgroup's partial -> slab z of (tile, c); then a ticket
                const size_t pair = (size_t)tile * CONSUMERS + c;
                float* const mine = partials + ((pair * splits + z) * 128 + tid) * (MI * (BN / 2));
#pragma unroll
                for (int i = 0; i < MI; ++i)
#pragma unroll
                    for (int j = 0; j < BN / 2; j += 4)
                        *reinterpret_cast<float4*>(mine + i * (BN / 2) + j) =
                            make_float4(acc[i][j], acc[i][j + 1], acc[i][j + 2], acc[i][j + 3]);
                __threadfence();                     // the slab is visible before the ticket is
                consumer_barrier(c);
                if (tid == 0) ticket[c] = atomicAdd(&counters[pair], 1u);
                consumer_barrier(c);
                if (ticket[c] != static_cast<unsigned>(splits - 1))
                    continue;                        // another unit of this tile finishes it
                __threadfence();                     // every other slab is visible now
                const float* const first = partials + (pair * splits * 128 + tid) * (MI * (BN / 2));
#pragma unroll
                for (int i = 0; i < MI; ++i)
#pragma unroll
                    for (int j = 0; j < BN / 2; ++j) acc[i][j] = 0.f;
                for (int zz = 0; zz < splits; ++zz) {      // split order: the same bits every run
                    const float* p = first + (size_t)zz * SLAB;
#pragma unroll
                    for (int i = 0; i < MI; ++i)
#pragma unroll
                        for (int j = 0; j < BN / 2; j += 4) {
                            const float4 v = __ldcg(reinterpret_cast<const float4*>(p + i * (BN / 2) + j));
                            acc[i][j] += v.x; acc[i][j + 1] += v.y; acc[i][j + 2] += v.z; acc[i][j + 3] += v.w;
                        }
                }
                if (tid == 0) counters[pair] = 0;    // ready for the next launch
            }
#pragma unroll
            for (int i = 0; i < MI; ++i)
                store_acc_64xN<BN>(acc[i], C, M, N, tm * BM + (c * MI + i) * 64, tn * BN, tid);
        }
    }
#endif
}
