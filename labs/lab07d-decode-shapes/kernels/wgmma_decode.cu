// wgmma_decode.cu: FP16 decode at M = 17..64 on Hopper. lab 7c's TMA + wgmma pipeline, with K split
// across the blocks of a thread-block cluster and the partial tiles added through distributed
// shared memory: no workspace, no ticket, no second kernel.
//
//   C (FP32, M x N) = A (FP16, M x K) . B (FP16, K x N), all row-major, FP32 accumulation.
//   Entry point: hgemm_wgmma_decode(int M, int N, int K, const __grid_constant__ CUtensorMap tmA,
//                                   const __grid_constant__ CUtensorMap tmB, float* C)
//   Tensor maps as lab 7c's h4: tmA FP16 dims (K, M) box (64, BM); tmB FP16 dims (N, K) box (64, BK);
//     both CU_TENSOR_MAP_SWIZZLE_128B (launch.py, wgmma_clusters, builds them with lab 7c's code).
//   Launch:  grid (ceil(N / BN) * KSPLIT, ceil(M / BM)), THREADS = 256, SMEM_BYTES dynamic;
//            clusters of KSPLIT consecutive blocks along x (compiled in: __cluster_dims__).
//   Shapes:  any M, N >= 1; K a multiple of 8 (A's TMA pitch). Built for sm_90a only.
//
// Why. At 64 x 4096 x 4096 the output is 64 tiles of 64 x 64: lab 7c's h4 built that way runs on
// 64 of the 132 SMs, and each of them must pull 1 MB (all of A and its 64 columns of B) through
// its own port. cuBLAS (ncu: nvjet_sm90_hss_64x32_64x16_1x2, 128 blocks in clusters of 2) gives
// every weight byte to one of 128 SMs. Here the KSPLIT blocks of a cluster share one output tile
// and each takes 1 / KSPLIT of K: 64 tiles x 2 = 128 blocks, and each SM pulls 512 KB. Where the
// tiles alone fill the SMs (N = 8192: 128 tiles) the dispatcher builds it with KSPLIT = 1: no cluster.
//
// The reduction. The consumer warpgroup's warp w holds rows 16 w .. 16 w + 15 of the tile (wgmma's
// accumulator layout, hopper_ptx.cuh). Those rows belong to cluster rank w / (4 / KSPLIT): every
// other rank sends its copy of them there by st.async (16-byte stores into that block's shared
// memory, each counted as 16 bytes on that block's mbarrier `partials`) and exits; the owner waits
// on its own mbarrier, adds the KSPLIT partial rows in rank order 0, 1, ... and stores them. The
// order never changes, so C is bitwise repeatable. A cluster's blocks run at the same time by
// construction, so nobody waits for a block that has not started; an arrive at the top and a
// wait before the first remote store make sure the owner's mbarrier is initialised before bytes
// land on it. (The first version ended with a cluster barrier instead, release / acquire: at
// 64 x 4096 x 4096 the reduction then cost 0.9 us of 14.1; with st.async, 0.56 us of 13.7, both
// against a build without the reduction.)
//
// Tiles and why: BM = 64 (one consumer warpgroup, one m64 wgmma: decode has at most 64 rows),
// BN = 64 (N = 4096 gives 64 tiles; BN = 128 with KSPLIT = 4 would give as many blocks, but only 30
// clusters of 4 fit on the H200 at once: two waves, 74 % of cuBLAS against 102 %), BK = 64 (one
// 128-byte swizzle row), STAGES = 8: 8 x 16 KB = 128 KB in flight per SM (lab 7d's README: depth is
// what a streaming kernel needs; h4 with 4 stages took 23 us where 8 took 15.8).
//
// What to look for in SASS: HGMMA.64x64x16.F32 (4 per slice, after a SYNCS.PHASECHK wait on the
// stage), UTMALDG.2D in the producer, and in the epilogue UCGABAR_ARV / UCGABAR_WAIT (the arrive at
// the top, the wait before the remote stores) and STAS.128, st.async into the owner's shared memory.
// No BAR.SYNC after the prologue, no LDL / STL.

#include "../../lab07c-hopper-wgmma/kernels/hopper_ptx.cuh"

#ifndef BN
#define BN 64       // block tile columns = the wgmma's N
#endif
#ifndef STAGES
#define STAGES 8    // K slices in flight per block
#endif
#ifndef KSPLIT
#define KSPLIT 2    // blocks per cluster, each 1 / KSPLIT of K for the same output tile
#endif

#define BM 64       // one consumer warpgroup, one m64 wgmma: decode's rows
#define BK 64       // one 128-byte swizzle row of halves
#define THREADS 256 // warpgroup 0: the TMA producer; warpgroup 1: the consumer
#define SMEM_BYTES (STAGES * (BM * BK + BK * BN) * 2 + (KSPLIT > 1 ? BM * BN * 4 : 0) + 1024)

static_assert(BN == 64 || BN == 128 || BN == 256, "BN is a wgmma N: 64, 128 or 256");
static_assert(KSPLIT == 1 || KSPLIT == 2 || KSPLIT == 4, "KSPLIT: 1, 2 or 4 blocks per cluster (4 warps own the rows)");
static_assert(STAGES >= 2, "STAGES >= 2");
static_assert(SMEM_BYTES <= 232448, "dynamic shared memory at most 227 KB");

[[maybe_unused]] constexpr int A_TILE = BM * BK * 2;
[[maybe_unused]] constexpr int B_PANEL = BK * 64 * 2;
[[maybe_unused]] constexpr int STAGE_BYTES = A_TILE + BK * BN * 2;
[[maybe_unused]] constexpr int ACC = BN / 2;                 // accumulators per consumer thread
[[maybe_unused]] constexpr int WARPS_PER_OWNER = 4 / KSPLIT; // consumer warps whose rows a rank stores
[[maybe_unused]] constexpr int SLOT_FLOATS = 32 * ACC;      // one warp's accumulators: 16 rows x BN

#if KSPLIT > 1
#define DECODE_CLUSTER CLUSTER_DIMS(KSPLIT, 1, 1)
#else
#define DECODE_CLUSTER
#endif

extern "C" __global__ void __launch_bounds__(THREADS, 1) DECODE_CLUSTER
hgemm_wgmma_decode(int M, int N, int K, const __grid_constant__ CUtensorMap tmA,
                   const __grid_constant__ CUtensorMap tmB, float* __restrict__ C) {
#if HOPPER_STUB
    __trap();                                            // not an sm_90a build: see hopper_ptx.cuh
#else
    extern __shared__ unsigned char smem_raw[];
    __shared__ __align__(8) uint64_t full[STAGES], empty[STAGES], partials;
    unsigned char* smem = reinterpret_cast<unsigned char*>(
        (reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));
    [[maybe_unused]] float* red = reinterpret_cast<float*>(smem + STAGES * STAGE_BYTES);  // partials sent here

    const int rank = KSPLIT > 1 ? (int)cluster_ctarank() : 0;
    const int tn = blockIdx.x / KSPLIT, tm = blockIdx.y;
    const int KT = (K + BK - 1) / BK;                    // K slices of the whole problem
    const int per = (KT + KSPLIT - 1) / KSPLIT;
    const int t0 = min(KT, rank * per), n = min(KT, t0 + per) - t0;   // this block's slices
    const int wg = threadIdx.x / 128, tid = threadIdx.x % 128;

    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(&full[s], 1);
            mbar_init(&empty[s], 1);
        }
        mbar_init(&partials, 1);                         // the other ranks' rows of this block's tile
        mbar_fence_init();
    }
    __syncthreads();
    if constexpr (KSPLIT > 1) cluster_arrive_relaxed();   // "this block has started"

    if (wg == 0) {                                       // ---- producer ----
        setmaxnreg_dec<40>();
        if (tid == 0) {
            for (int i = 0; i < n; ++i) {
                const int s = i % STAGES, t = t0 + i;
                if (i >= STAGES) mbar_wait(&empty[s], ((i / STAGES) - 1) & 1);
                unsigned char* a = smem + s * STAGE_BYTES;
                mbar_arrive_tx(&full[s], STAGE_BYTES);
                tma_load_2d(a, &tmA, t * BK, tm * BM, &full[s]);
#pragma unroll
                for (int p = 0; p < BN / 64; ++p)
                    tma_load_2d(a + A_TILE + p * B_PANEL, &tmB, tn * BN + p * 64, t * BK, &full[s]);
            }
        }
        if constexpr (KSPLIT > 1) cluster_wait();   // pairs the arrive at the top
        return;
    }
    // ---- consumer ----
    setmaxnreg_inc<232>();
    float acc[ACC];
#pragma unroll
    for (int j = 0; j < ACC; ++j) acc[j] = 0.f;
    for (int i = 0; i < n; ++i) {
        const int s = i % STAGES;
        mbar_wait(&full[s], (i / STAGES) & 1);
        const uint32_t base = smem_addr(smem + s * STAGE_BYTES), b_s = base + A_TILE;
        wgmma_fence();
#pragma unroll
        for (int j = 0; j < BK / 16; ++j)
            wgmma_f16<BN>(acc, desc_k_major(base + j * 32), desc_mn_major(b_s + j * 2048, B_PANEL), 1);
        wgmma_commit();
        wgmma_wait<1>();                                 // slice i-1's wgmmas are done
        if (i > 0 && tid == 0) mbar_arrive(&empty[(i - 1) % STAGES]);
    }
    wgmma_wait<0>();
    keep_in_regs(acc);

    if constexpr (KSPLIT == 1) {
        store_acc_64xN<BN>(acc, C, M, N, tm * BM, tn * BN, tid);
    } else {
        const int warp = tid / 32, lane = tid % 32, owner = warp / WARPS_PER_OWNER;
        // this warp's slot for source rank r in its owner's `red`
        float* const mine = red + (warp % WARPS_PER_OWNER) * SLOT_FLOATS + lane * 4;
        constexpr uint32_t RECEIVED = (KSPLIT - 1) * WARPS_PER_OWNER * SLOT_FLOATS * 4;   // bytes
        if (tid == 0) mbar_arrive_tx(&partials, RECEIVED);
        cluster_wait();                                  // every block of the cluster has started
        if (owner != rank) {
#pragma unroll
            for (int q = 0; q < ACC / 4; ++q)
                st_async_cluster_f4(mine + rank * WARPS_PER_OWNER * SLOT_FLOATS + q * 128, &partials, owner,
                                    make_float4(acc[4 * q], acc[4 * q + 1], acc[4 * q + 2], acc[4 * q + 3]));
            return;
        }
        mbar_wait(&partials, 0);                         // the other ranks' partials have landed
        {
#pragma unroll
            for (int q = 0; q < ACC / 4; ++q) {
                float4 sum = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll
                for (int r = 0; r < KSPLIT; ++r) {       // rank order: the same additions every run
                    const float4 p = r == rank
                        ? make_float4(acc[4 * q], acc[4 * q + 1], acc[4 * q + 2], acc[4 * q + 3])
                        : *reinterpret_cast<const float4*>(mine + r * WARPS_PER_OWNER * SLOT_FLOATS + q * 128);
                    if (r == 0) sum = p;
                    else { sum.x += p.x; sum.y += p.y; sum.z += p.z; sum.w += p.w; }
                }
                acc[4 * q] = sum.x; acc[4 * q + 1] = sum.y; acc[4 * q + 2] = sum.z; acc[4 * q + 3] = sum.w;
            }
            store_acc_64xN<BN>(acc, C, M, N, tm * BM, tn * BN, tid);   // this warp's 16 rows
        }
    }
#endif
}
