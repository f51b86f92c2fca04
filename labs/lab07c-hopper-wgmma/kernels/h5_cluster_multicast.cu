// h5_cluster_multicast.cu: h4 in clusters of two blocks that share one B tile by TMA multicast.
//
//   C (FP32, M x N) = A (FP16, M x K) . B (FP16, K x N), all row-major, FP32 accumulation.
//   Entry point: hgemm_h5_cluster (int M, int N, int K, const __grid_constant__ CUtensorMap tmA,
//                                  const __grid_constant__ CUtensorMap tmB, float* C)
//   Tensor maps as h4: tmA FP16 dims (K, M) box (64, BM); tmB FP16 dims (N, K) box (64, BK);
//     both CU_TENSOR_MAP_SWIZZLE_128B. Odd pitches: the launch hook pads, as for h2.
//   Launch:  THREADS = 384; the kernel declares __cluster_dims__(2, 1, 1), so an ordinary launch
//            makes clusters of 2 consecutive blocks; a persistent grid of 2 x (the number of
//            clusters that fit at once: cuOccupancyMaxActiveClusters, 66 on a 132-SM H200 if every
//            GPC pairs up) blocks, at most 2 x ceil(ceil(M / BM) / 2) * ceil(N / BN).
//            SMEM_BYTES dynamic.
//   Shapes:  any M, N, K >= 1 (h2's padded copy when K % 8 or N % 8 is not 0).
//   Build:   sm_90a only.
//
// What it adds over h4. A thread-block cluster is a group of blocks on neighbouring SMs (one GPC)
// that can read, write and arrive on each other's shared memory (the "distributed shared memory").
// The two blocks of a cluster here take vertically adjacent output tiles, rows 2p and 2p+1 of
// tile column n: they need the same B tile. Instead of each fetching all of it from L2, block r
// fetches half the B panels (2r, 2r+1) with TMA's .multicast::cluster form, which writes the box
// into the same shared-memory offset of both blocks and signals both blocks' FULL barriers. Per
// stage a block now pulls 16 KB of A + 16 KB of B through L2 instead of 16 + 32 KB: a third less
// L2-to-SM traffic. Whether that buys time depends on whether L2 was the limit: when the tensor
// pipe is already the bottleneck (as for h4 on the H200), the same time at a lower L2 load and
// power is what to expect; on a part or a shape where L2 bandwidth binds, multicast is the fix.
// The price is cross-block synchronization:
//   * FULL[s] of each block still expects the whole stage (48 KB), now from three TMA loads of
//     which one was issued by the other block. The other block's bytes may even arrive before
//     this block's own arrive.expect_tx: the transaction count goes negative, and the phase cannot
//     complete while the producer's arrival is still missing.
//   * A stage may be refilled only when the consumers of BOTH blocks are done with it (the refill
//     writes into both). EMPTY[s] therefore counts 2 x 2 arrivals: each consumer warpgroup arrives
//     on its own block's EMPTY[s] and on the partner's (mapa + mbarrier.arrive.shared::cluster).
//   * Both blocks must have initialized their barriers before either multicasts (cluster_sync
//     after the inits), and neither may exit while the partner can still arrive on its barriers
//     (cluster_sync at the end, which is why the idle producer threads stay to the end).
// Both blocks walk the same list of tile pairs, so their stage and phase counters agree.
//
// Tiles and why: 128 x 256 per block (a 256 x 256 pair), BK = 64, STAGES = 4, as h4. GROUP = 16
// tile rows (8 pairs) per raster band.
//
// What to look for in SASS: UTMALDG.2D.MULTICAST (B halves) next to UTMALDG.2D (A),
// SYNCS.ARRIVE.TRANS64.RED.A1T0 (the arrive on a cluster address, local or remote), UCGABAR_ARV /
// UCGABAR_WAIT (the two cluster barriers), HGMMA.64x256x16.F32; no MEMBAR in the main loop (a
// .release.cluster arrive would put a MEMBAR.ALL.GPU before each). No C7509-C7511 warnings.
// What to look for in ncu: lts__throughput.avg.pct_of_peak_sustained_elapsed well below h4's at
// the same sm__pipe_tensor_op_hmma_cycles_active (tensor pipe busy).

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
#define GROUP 16    // tile rows per raster band (8 cluster pairs)
#endif
#ifndef CONSUMERS
#define CONSUMERS 2 // consumer warpgroups, each BM / CONSUMERS rows
#endif

#define CLUSTER 2   // blocks per cluster, along M (fixed: the kernel declares __cluster_dims__(2, 1, 1))
#define THREADS ((CONSUMERS + 1) * 128)
#define SMEM_BYTES (STAGES * (BM * BK + BK * BN) * sizeof(half) + 1024)

static_assert(BK == 64, "BK must be 64: one 128-byte swizzle row of halves");
static_assert(BM % (64 * CONSUMERS) == 0 && BM <= 256, "each consumer owns a multiple of 64 rows; BM <= 256 (one TMA box)");
static_assert(BN == 64 || BN == 128 || BN == 256, "BN is a wgmma N: 64, 128 or 256");
static_assert((BM / 64 / CONSUMERS) * (BN / 2) <= 128, "a consumer's accumulators must fit in 232 registers");
static_assert(CONSUMERS == 1 || CONSUMERS == 2, "1 or 2 consumer warpgroups (register budget)");
static_assert(STAGES >= 2, "STAGES >= 2");
static_assert(GROUP >= 2 && GROUP % 2 == 0, "GROUP counts tile rows in whole cluster pairs");
static_assert(BN / 64 % 2 == 0, "the B panels split evenly between the two blocks of a cluster");
static_assert(SMEM_BYTES <= 232448, "dynamic shared memory at most 227 KB");

[[maybe_unused]] constexpr int MI = BM / 64 / CONSUMERS;      // m64 blocks per consumer
[[maybe_unused]] constexpr int A_TILE = BM * BK * 2;
[[maybe_unused]] constexpr int B_PANEL = BK * 64 * 2;
[[maybe_unused]] constexpr int STAGE_BYTES = A_TILE + BK * BN * 2;
[[maybe_unused]] constexpr int CONSUMER_REGS = CONSUMERS == 2 ? 232 : 240;
[[maybe_unused]] constexpr int PRODUCER_REGS = 40;

// Pair index -> (pair row, tile column): bands of GROUP / 2 pair rows, column by column in a band.
__device__ __forceinline__ void pair_coords(int pair, int pairs_m, int tiles_n, int& pm, int& tn) {
    constexpr int G = GROUP / 2;
    const int band = pair / (G * tiles_n);
    const int first = band * G;
    const int rows = min(G, pairs_m - first);
    const int in_band = pair - band * G * tiles_n;
    pm = first + in_band % rows;
    tn = in_band / rows;
}

extern "C" __global__ void CLUSTER_DIMS(CLUSTER, 1, 1) __launch_bounds__(THREADS, 1)
hgemm_h5_cluster(int M, int N, int K, const __grid_constant__ CUtensorMap tmA,
                 const __grid_constant__ CUtensorMap tmB, float* __restrict__ C) {
#if HOPPER_STUB
    __trap();                                            // not an sm_90a build: see hopper_ptx.cuh
#else
    extern __shared__ unsigned char smem_raw[];
    __shared__ __align__(8) uint64_t full[STAGES], empty[STAGES];
    unsigned char* smem = reinterpret_cast<unsigned char*>(
        (reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));

    const int tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN;
    const int pairs_m = (tiles_m + 1) / 2, pairs = pairs_m * tiles_n;
    const int KT = (K + BK - 1) / BK;
    const int wg = threadIdx.x / 128, tid = threadIdx.x % 128;
    const uint32_t rank = cluster_ctarank();             // 0 or 1: which tile of the pair
    const int first_pair = cluster_id_x(), pair_step = nclusters_x();

    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(&full[s], 1);
            mbar_init(&empty[s], CONSUMERS * CLUSTER);
        }
        mbar_fence_init();
    }
    cluster_sync();                                      // both blocks' barriers exist

    if (wg == 0) {                                       // ---- producer ----
        setmaxnreg_dec<PRODUCER_REGS>();
        if (tid == 0) {
            int it = 0;
            for (int pair = first_pair; pair < pairs; pair += pair_step) {
                int pm, tn;
                pair_coords(pair, pairs_m, tiles_n, pm, tn);
                const int tm = 2 * pm + rank;            // may be past the last tile row: zeros
                for (int t = 0; t < KT; ++t, ++it) {
                    const int s = it % STAGES;
                    if (it >= STAGES) mbar_wait(&empty[s], ((it / STAGES) - 1) & 1);
                    unsigned char* a = smem + s * STAGE_BYTES;
                    mbar_arrive_tx(&full[s], STAGE_BYTES);
                    tma_load_2d(a, &tmA, t * BK, tm * BM, &full[s]);
#pragma unroll
                    for (int q = 0; q < BN / 128; ++q) {  // this block's half of the B panels
                        const int p = rank * (BN / 128) + q;
                        tma_load_2d_multicast(a + A_TILE + p * B_PANEL, &tmB, tn * BN + p * 64, t * BK,
                                              &full[s], 0x3);
                    }
                }
            }
        }
    } else {                                             // ---- consumers ----
        setmaxnreg_inc<CONSUMER_REGS>();
        const int c = wg - 1;
        int it = 0;
        for (int pair = first_pair; pair < pairs; pair += pair_step) {
            int pm, tn;
            pair_coords(pair, pairs_m, tiles_n, pm, tn);
            const int tm = 2 * pm + rank;
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
                wgmma_wait<1>();
                if (t > 0 && tid < CLUSTER) mbar_arrive_cluster(&empty[(it - 1) % STAGES], tid);
            }
            wgmma_wait<0>();
            if (tid < CLUSTER) mbar_arrive_cluster(&empty[(it - 1) % STAGES], tid);  // both blocks
#pragma unroll
            for (int i = 0; i < MI; ++i) keep_in_regs(acc[i]);
#pragma unroll
            for (int i = 0; i < MI; ++i)
                store_acc_64xN<BN>(acc[i], C, M, N, tm * BM + (c * MI + i) * 64, tn * BN, tid);
        }
    }
    __syncwarp();                                        // the producer warp reconverges first
    cluster_sync();                                      // no arrivals may target an exited block
#endif
}
