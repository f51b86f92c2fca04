// h3_warp_specialized.cu: h2 split into a TMA producer and two wgmma consumer warpgroups.
//
//   C (FP32, M x N) = A (FP16, M x K) . B (FP16, K x N), all row-major, FP32 accumulation.
//   Entry point: hgemm_h3_ws (int M, int N, int K, const __grid_constant__ CUtensorMap tmA,
//                             const __grid_constant__ CUtensorMap tmB, float* C)
//   Tensor maps as h2: tmA FP16 dims (K, M) box (64, BM); tmB FP16 dims (N, K) box (64, BK);
//     both CU_TENSOR_MAP_SWIZZLE_128B. Odd pitches: the launch hook pads, as for h2.
//   Launch:  THREADS = 384 (3 warpgroups), grid = (ceil(N / BN), ceil(M / BM)), SMEM_BYTES dynamic.
//   Shapes:  any M, N, K >= 1 (with h2's padded copy when K % 8 or N % 8 is not 0).
//   Build:   sm_90a only.
//
// What it adds over h2. In h2 the same warps issue the loads and the MMAs, and a __syncthreads
// per tile tells the loading thread that a buffer is free: every warp stops there, and the tensor
// core idles while the slowest warp catches up. Here the roles are split (warp specialization):
//   warpgroup 0, the producer: one thread loops over the K tiles. For tile t it waits until stage
//     t % STAGES is EMPTY (an mbarrier that each consumer warpgroup arrives on once it is done with
//     the stage), arms the stage's FULL barrier with the bytes to expect (TX_BYTES, as in h2), and
//     issues the TMA loads.
//   warpgroups 1 and 2, the consumers: each owns BM / 2 rows of the block tile. For tile t, wait
//     on FULL, issue the wgmmas, commit, wait_group 1 (tile t-1 done), arrive on EMPTY of tile
//     t-1's stage. No block-wide barrier anywhere in the main loop: the producer runs up to
//     STAGES tiles ahead, each consumer runs at its own pace.
// setmaxnreg: the producer needs a few registers, the consumers many (accumulators), but a kernel
// gets one register count for all its threads. setmaxnreg.dec lowers the producer warpgroup to 40
// a thread and setmaxnreg.inc raises each consumer to 232, within the SM's 64 K registers:
// 128 x 40 + 256 x 232 = 64,512.
//
// The mbarrier phases. Stage s is filled for tiles s, s + STAGES, s + 2 STAGES, ...; every fill
// completes one phase of FULL[s] (phases 0, 1, 2, ... of parity 0, 1, 0, ...), every release by
// both consumers one phase of EMPTY[s] (EMPTY counts 2 arrivals: one thread per consumer warpgroup,
// after its wait_group showed the stage's wgmmas done). A wait names a parity and returns once the
// barrier has left the phase of that parity (PTX ISA, mbarrier.try_wait.parity): on a barrier
// still in phase 0, a wait on parity 1 returns at once (the phase "before" it counts as
// complete). The producer waits on EMPTY[s] before EVERY fill, the first round included (no
// special case): full_parity(t) and empty_parity(t) are the parities of those waits for tile t.
//
// Tiles and why: BM x BN = 128 x 128 (each consumer a 64 x 128 m64n128k16 tile: 64 accumulators
// a thread), BK = 64, STAGES = 4 (128 KB). h4 takes the larger 128 x 256 tile.
//
// What to look for in SASS: SYNCS.PHASECHK.TRANS64.TRYWAIT (FULL and EMPTY waits),
// SYNCS.ARRIVE.TRANS64 (arrive.expect_tx), SYNCS.ARRIVE.TRANS64.A1T0 (plain arrivals on EMPTY),
// UTMALDG.2D, USETMAXREG.DEALLOC.CTAPOOL / USETMAXREG.TRY_ALLOC.CTAPOOL (setmaxnreg.dec / .inc),
// HGMMA.64x128x16.F32, and BAR.SYNC only once, after the mbarrier inits. ptxas must not warn
// C7509-C7511.

#include "hopper_ptx.cuh"

#ifndef BM
#define BM 128      // block tile rows: 64 for each of the two consumers
#endif
#ifndef BN
#define BN 128      // block tile columns = the wgmma's N
#endif
#ifndef BK
#define BK 64       // one 128-byte swizzle row of halves
#endif
#ifndef STAGES
#define STAGES 4    // stages the producer may run ahead
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
static_assert(SMEM_BYTES <= 232448, "dynamic shared memory at most 227 KB");

[[maybe_unused]] constexpr int MI = BM / 64 / CONSUMERS;      // m64 blocks per consumer
[[maybe_unused]] constexpr int A_TILE = BM * BK * 2;
[[maybe_unused]] constexpr int B_PANEL = BK * 64 * 2;
[[maybe_unused]] constexpr int B_TILE = BK * BN * 2;
[[maybe_unused]] constexpr int STAGE_STRIDE = A_TILE + B_TILE;  // bytes from one stage's buffer to the next
[[maybe_unused]] constexpr int CONSUMER_REGS = CONSUMERS == 2 ? 232 : 240;
[[maybe_unused]] constexpr int PRODUCER_REGS = 40;

// The numbers the pipeline's mbarriers run on (host and device: the grader evaluates them).
// BEGIN SOLUTION h3-tx: TX_BYTES, what a stage's arrive.expect_tx must announce: your answer to h2's TX_BYTES
[[maybe_unused]] constexpr uint32_t TX_BYTES = (BM * BK + (BN / 64) * (64 * BK)) * sizeof(half);   // A's box + B's panels
// END SOLUTION h3-tx
// BEGIN SOLUTION h3-parity: full_parity(t) and empty_parity(t): the parities the consumers' FULL wait and the producer's EMPTY wait name for tile t (any STAGES)
__host__ __device__ constexpr uint32_t full_parity(int t) { return (t / STAGES) & 1; }   // the (t / STAGES)-th fill
// fill j = t / STAGES of a stage needs release j - 1 of it: parity (j - 1) & 1, which for j = 0 is
// the parity of the phase "before" phase 0, so the first round passes at once
__host__ __device__ constexpr uint32_t empty_parity(int t) { return ((t / STAGES) & 1) ^ 1; }
// END SOLUTION h3-parity

extern "C" __global__ void __launch_bounds__(THREADS, 1)
hgemm_h3_ws(int M, int N, int K, const __grid_constant__ CUtensorMap tmA,
            const __grid_constant__ CUtensorMap tmB, float* __restrict__ C) {
#if HOPPER_STUB
    __trap();                                            // not an sm_90a build: see hopper_ptx.cuh
#else
    extern __shared__ unsigned char smem_raw[];
    __shared__ __align__(8) uint64_t full[STAGES], empty[STAGES];
    unsigned char* smem = reinterpret_cast<unsigned char*>(
        (reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));

    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
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
            for (int t = 0; t < KT; ++t) {
                const int s = t % STAGES;
                mbar_wait(&empty[s], empty_parity(t));
                unsigned char* a = smem + s * STAGE_STRIDE;
                mbar_arrive_tx(&full[s], TX_BYTES);
                tma_load_2d(a, &tmA, t * BK, m0, &full[s]);
#pragma unroll
                for (int p = 0; p < BN / 64; ++p)
                    tma_load_2d(a + A_TILE + p * B_PANEL, &tmB, n0 + p * 64, t * BK, &full[s]);
            }
        }
    } else {                                         // ---- consumers ----
        setmaxnreg_inc<CONSUMER_REGS>();
        const int c = wg - 1;                        // rows [c * BM / CONSUMERS, ...) of the tile
        float acc[MI][BN / 2];
#pragma unroll
        for (int i = 0; i < MI; ++i)
#pragma unroll
            for (int j = 0; j < BN / 2; ++j) acc[i][j] = 0.f;

        for (int t = 0; t < KT; ++t) {
            const int s = t % STAGES;
            mbar_wait(&full[s], full_parity(t));
            const uint32_t a_s = smem_addr(smem + s * STAGE_STRIDE) + c * MI * 8192, b_s = smem_addr(smem + s * STAGE_STRIDE) + A_TILE;
            wgmma_fence();
#pragma unroll
            for (int j = 0; j < BK / 16; ++j) {
                const uint64_t db = desc_mn_major(b_s + j * 2048, B_PANEL);
#pragma unroll
                for (int i = 0; i < MI; ++i)
                    wgmma_f16<BN>(acc[i], desc_k_major(a_s + i * 8192 + j * 32), db, 1);
            }
            wgmma_commit();
            wgmma_wait<1>();                         // tile t-1's wgmmas are done
            if (t > 0 && tid == 0) mbar_arrive(&empty[(t - 1) % STAGES]);
        }
        wgmma_wait<0>();
#pragma unroll
        for (int i = 0; i < MI; ++i) keep_in_regs(acc[i]);
#pragma unroll
        for (int i = 0; i < MI; ++i)
            store_acc_64xN<BN>(acc[i], C, M, N, m0 + (c * MI + i) * 64, n0, tid);
    }
#endif
}
