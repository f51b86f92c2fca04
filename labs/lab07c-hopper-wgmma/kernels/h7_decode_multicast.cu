// h7_decode_multicast.cu: h6 in clusters of CLUSTER blocks along N that share each A tile by TMA
// multicast: the decode kernel (M = 64 tokens, every block needs the same 64 rows of A).
//
//   C (FP32, M x N) = A (FP16, M x K) . B (FP16, K x N), all row-major, FP32 accumulation.
//   Entry point: hgemm_h7_decode (int M, int N, int K, const __grid_constant__ CUtensorMap tmA,
//                                 const __grid_constant__ CUtensorMap tmB, float* C, int splits,
//                                 float* workspace)
//   Tensor maps: tmA FP16 dims (K, M) box (64, BM / CLUSTER): each block fetches one slice of the
//     A tile's rows; tmB as h4. Launch: THREADS = (CONSUMERS + 1) * 128; the kernel declares
//     __cluster_dims__(CLUSTER, 1, 1); a persistent grid of CLUSTER x min(clusters that fit at once,
//     groups x splits), groups = ceil(M / BM) x ceil(ceil(N / BN) / CLUSTER). SMEM_BYTES dynamic.
//     splits and workspace as h6 (the hook, launch.py tma_decode, picks one wave of splits).
//   Shapes:  any M, N, K >= 1 (h2's padded copy when K % 8 or N % 8 is not 0). Build: sm_90a only.
//
// What it adds over h6. h6 measured why a split alone does not pay at 64 x 4096^2: with 64 x 64
// tiles every block pulls as many bytes of A through L2 as of weights (64 rows of A, 64 columns of
// B, per 64-deep slice), and the SMs' share of L2 bandwidth, not their count, binds. Here the
// CLUSTER blocks of a cluster take adjacent tile columns of one tile row (tn = CLUSTER g + rank),
// the same K range, and so the same A tile. Block r fetches rows [r BM / CLUSTER, (r + 1) BM /
// CLUSTER) of it with .multicast::cluster: one TMA read lands in the same shared-memory offset of
// every block and signals every block's FULL barrier. Per stage a block pulls 8 KB of weights and
// 8 / CLUSTER KB of A instead of 8 + 8. The price is h5's: a stage may be refilled only when the
// consumers of ALL the cluster's blocks are done with it, so EMPTY[s] counts CONSUMERS x CLUSTER
// arrivals, each consumer arriving on every block's barrier; a cluster barrier after the inits and
// one before exit. A block whose tile column is past N (the last group) still fetches and
// multicasts its slice of A, and skips its epilogue. The split and its ticket reduce are h6's.
// Tiles and why: 64 x 64 per block (BM = 64, one consumer, BN = 64), CLUSTER = 4, STAGES = 8:
// 16 KB a stage, 128 KB in flight per SM. A slice is BM / CLUSTER = 16 rows: whole 8-row swizzle
// atoms, so each slice starts on a 1024-byte boundary and the 128-byte swizzle agrees.
//
// What to look for in SASS: UTMALDG.2D.MULTICAST (A) beside UTMALDG.2D (B), UCGABAR_ARV /
// UCGABAR_WAIT, the remote arrivals (SYNCS.ARRIVE...A1T0 on a mapa address), HGMMA.64x64x16.F32,
// and h6's ticket (ATOMG), fences (MEMBAR) and strong loads of the partials. No C7509-C7518.

#include "hopper_ptx.cuh"

#ifndef BM
#define BM 64       // block tile rows: one consumer of 64 (decode's M)
#endif
#ifndef BN
#define BN 64       // block tile columns = the wgmma's N: narrow, so that 4096 columns are 64 tiles
#endif
#ifndef BK
#define BK 64       // one 128-byte swizzle row of halves
#endif
#ifndef STAGES
#define STAGES 8    // stages the producer may run ahead: 8 x 16 KB in flight per SM
#endif
#ifndef CONSUMERS
#define CONSUMERS 1 // consumer warpgroups, each BM / CONSUMERS rows
#endif
#ifndef CLUSTER
#define CLUSTER 4   // blocks per cluster, along N: each fetches 1 / CLUSTER of the shared A tile
#endif
#ifndef SPLIT_COUNTERS
#define SPLIT_COUNTERS 4096   // ticket counters at the workspace's start (h6)
#endif

#define THREADS ((CONSUMERS + 1) * 128)
#define SMEM_BYTES (STAGES * (BM * BK + BK * BN) * sizeof(half) + 1024)

static_assert(BK == 64, "BK must be 64: one 128-byte swizzle row of halves");
static_assert(BM % (64 * CONSUMERS) == 0 && BM <= 256, "each consumer owns a multiple of 64 rows; BM <= 256 (one TMA box)");
static_assert(BN == 64 || BN == 128 || BN == 256, "BN is a wgmma N: 64, 128 or 256");
static_assert((BM / 64 / CONSUMERS) * (BN / 2) <= 128, "a consumer's accumulators must fit in 232 registers");
static_assert(CONSUMERS == 1 || CONSUMERS == 2, "1 or 2 consumer warpgroups (register budget)");
static_assert(STAGES >= 2, "STAGES >= 2");
static_assert(CLUSTER == 1 || CLUSTER == 2 || CLUSTER == 4 || CLUSTER == 8, "CLUSTER: 1, 2, 4 or 8 blocks (portable cluster sizes)");
static_assert((BM / CLUSTER) % 8 == 0, "each block's slice of A must be whole 8-row swizzle atoms (BM / CLUSTER a multiple of 8)");
static_assert(SMEM_BYTES <= 232448, "dynamic shared memory at most 227 KB");
static_assert(SPLIT_COUNTERS >= 1, "SPLIT_COUNTERS: ticket counters at the start of the workspace");

[[maybe_unused]] constexpr int MI = BM / 64 / CONSUMERS;      // m64 blocks per consumer
[[maybe_unused]] constexpr int A_TILE = BM * BK * 2;
[[maybe_unused]] constexpr int A_SLICE_ROWS = BM / CLUSTER;   // rows of A each block fetches
[[maybe_unused]] constexpr int B_PANEL = BK * 64 * 2;
[[maybe_unused]] constexpr int STAGE_BYTES = A_TILE + BK * BN * 2;
[[maybe_unused]] constexpr int CONSUMER_REGS = CONSUMERS == 2 ? 232 : 240;
[[maybe_unused]] constexpr int PRODUCER_REGS = 40;

// Cluster work unit -> (tile row, group of CLUSTER tile columns, split z, its K slices [t0, t1)).
__device__ __forceinline__ void unit_range(int unit, int splits, int groups_n, int KT,
                                           int& tm, int& g, int& z, int& t0, int& t1) {
    const int group = unit / splits;
    z = unit - group * splits;
    tm = group / groups_n;
    g = group - tm * groups_n;
    const int per = (KT + splits - 1) / splits;
    t0 = min(KT, z * per);
    t1 = min(KT, t0 + per);
}

__device__ __forceinline__ void consumer_barrier(int c) {
    if (c == 0) asm volatile("bar.sync 1, 128;\n" ::: "memory");     // immediate ids (see h6)
    else        asm volatile("bar.sync 2, 128;\n" ::: "memory");
}
static_assert(CONSUMERS <= 2, "consumer_barrier names barriers 1 and 2");

extern "C" __global__ void CLUSTER_DIMS(CLUSTER, 1, 1) __launch_bounds__(THREADS, 1)
hgemm_h7_decode(int M, int N, int K, const __grid_constant__ CUtensorMap tmA,
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

    const int tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN;
    const int groups_n = (tiles_n + CLUSTER - 1) / CLUSTER;
    const int units = tiles_m * groups_n * splits;
    const int KT = (K + BK - 1) / BK;
    const int wg = threadIdx.x / 128, tid = threadIdx.x % 128;
    const uint32_t rank = cluster_ctarank();
    const int first_unit = cluster_id_x(), unit_step = nclusters_x();

    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(&full[s], 1);
            mbar_init(&empty[s], CONSUMERS * CLUSTER);
        }
        mbar_fence_init();
    }
    cluster_sync();                                      // every block's barriers exist

    if (wg == 0) {                                       // ---- producer ----
        setmaxnreg_dec<PRODUCER_REGS>();
        if (tid == 0) {
            int it = 0;
            for (int unit = first_unit; unit < units; unit += unit_step) {
                int tm, g, z, t0, t1;
                unit_range(unit, splits, groups_n, KT, tm, g, z, t0, t1);
                const int tn = g * CLUSTER + rank;       // may be past the last tile column: zeros
                for (int t = t0; t < t1; ++t, ++it) {
                    const int s = it % STAGES;
                    if (it >= STAGES) mbar_wait(&empty[s], ((it / STAGES) - 1) & 1);
                    unsigned char* a = smem + s * STAGE_BYTES;
                    mbar_arrive_tx(&full[s], STAGE_BYTES);
                    tma_load_2d_multicast(a + rank * A_SLICE_ROWS * 128, &tmA, t * BK,
                                          tm * BM + rank * A_SLICE_ROWS, &full[s], (1u << CLUSTER) - 1);
#pragma unroll
                    for (int p = 0; p < BN / 64; ++p)
                        tma_load_2d(a + A_TILE + p * B_PANEL, &tmB, tn * BN + p * 64, t * BK, &full[s]);
                }
            }
        }
    } else {                                             // ---- consumers ----
        setmaxnreg_inc<CONSUMER_REGS>();
        const int c = wg - 1;
        constexpr int SLAB = 128 * MI * (BN / 2);
        unsigned* const counters = reinterpret_cast<unsigned*>(workspace);
        float* const partials = workspace + SPLIT_COUNTERS;
        int it = 0;
        for (int unit = first_unit; unit < units; unit += unit_step) {
            int tm, g, z, t0, t1;
            unit_range(unit, splits, groups_n, KT, tm, g, z, t0, t1);
            const int tn = g * CLUSTER + rank;
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
                wgmma_wait<1>();
                if (t > t0 && tid < CLUSTER) mbar_arrive_cluster(&empty[(it - 1) % STAGES], tid);
            }
            wgmma_wait<0>();
            if (t1 > t0 && tid < CLUSTER) mbar_arrive_cluster(&empty[(it - 1) % STAGES], tid);  // every block
#pragma unroll
            for (int i = 0; i < MI; ++i) keep_in_regs(acc[i]);
            if (tn >= tiles_n)
                continue;                                // a padding block: it only shared its A slice
            if (splits > 1) {                            // h6's ticket reduce, per (tile, consumer)
                const size_t pair = ((size_t)tm * tiles_n + tn) * CONSUMERS + c;
                float* const mine = partials + ((pair * splits + z) * 128 + tid) * (MI * (BN / 2));
#pragma unroll
                for (int i = 0; i < MI; ++i)
#pragma unroll
                    for (int j = 0; j < BN / 2; j += 4)
                        *reinterpret_cast<float4*>(mine + i * (BN / 2) + j) =
                            make_float4(acc[i][j], acc[i][j + 1], acc[i][j + 2], acc[i][j + 3]);
                __threadfence();
                consumer_barrier(c);
                if (tid == 0) ticket[c] = atomicAdd(&counters[pair], 1u);
                consumer_barrier(c);
                if (ticket[c] != static_cast<unsigned>(splits - 1))
                    continue;
                __threadfence();
                const float* const first = partials + (pair * splits * 128 + tid) * (MI * (BN / 2));
#pragma unroll
                for (int i = 0; i < MI; ++i)
#pragma unroll
                    for (int j = 0; j < BN / 2; ++j) acc[i][j] = 0.f;
                for (int zz = 0; zz < splits; ++zz) {
                    const float* p = first + (size_t)zz * SLAB;
#pragma unroll
                    for (int i = 0; i < MI; ++i)
#pragma unroll
                        for (int j = 0; j < BN / 2; j += 4) {
                            const float4 v = __ldcg(reinterpret_cast<const float4*>(p + i * (BN / 2) + j));
                            acc[i][j] += v.x; acc[i][j + 1] += v.y; acc[i][j + 2] += v.z; acc[i][j + 3] += v.w;
                        }
                }
                if (tid == 0) counters[pair] = 0;
            }
#pragma unroll
            for (int i = 0; i < MI; ++i)
                store_acc_64xN<BN>(acc[i], C, M, N, tm * BM + (c * MI + i) * 64, tn * BN, tid);
        }
    }
    __syncwarp();                                        // the producer warp reconverges first
    cluster_sync();                                      // no arrivals may target an exited block
#endif
}
