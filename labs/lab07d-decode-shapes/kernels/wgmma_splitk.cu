// wgmma_splitk.cu: split-K on Hopper. Lab 7c's TMA + wgmma pipeline (a producer warpgroup, mbarrier
// FULL / EMPTY stages, consumer warpgroups on wgmma) handed one range of K per block, its FP32 partial
// tile written to a workspace and added by lab 7d's ordered reduce (splitk_reduce.cuh), in split order.
//
//   C (FP32, M x N) = A (FP16, M x K) . B (FP16, K x N), all row-major, FP32 accumulation.
//   Entry points (the split-K protocol of splitk_fp16.cu, with A and B as TMA maps):
//     hgemm_wgmma_splitk        (int M, int N, int K, const __grid_constant__ CUtensorMap tmA,
//                                const __grid_constant__ CUtensorMap tmB, float* C, int splits, float* workspace)
//         block z writes its partial tile to workspace[z] (splits x M x N floats); C is not touched
//     hgemm_wgmma_splitk_fused  the same arguments: the main kernel, a barrier over the grid, and this
//         block's slice of the same ordered reduce into C (splitk_reduce.cuh, finish_in_one_launch_part):
//         for a grid of at most one block per SM. workspace = the partials, then 2 zeroed counters.
//     wgmma_splitk_reduce       (int M, int N, int splits, const float* workspace, float* C)
//         C[i] = ws[0][i] + ws[1][i] + ... in z order (splitk::reduce, as splitk_fp16_reduce)
//   Tensor maps as lab 7c's h4: tmA FP16 dims (K, M) box (64, BM); tmB FP16 dims (N, K) box (64, BK);
//     both CU_TENSOR_MAP_SWIZZLE_128B (launch.py, TmaSplitK, builds them with lab 7c's code; a padded
//     copy of B when N % 8).
//   Launch:  grid (ceil(N / BN), ceil(M / BM), splits), THREADS = (BM / 64 + 1) x 128, SMEM_BYTES
//            dynamic; then the reduce, grid ceil(M N / REDUCE_THREADS) x REDUCE_THREADS, on the same
//            stream; or the fused entry alone when the grid has at most one block per SM (launch.uses_fused).
//   Shapes:  any M, N >= 1; K a multiple of 8 (A's TMA pitch). Built for sm_90a only (HOPPER_STUB: a
//            trap elsewhere). Bitwise repeatable for a given number of splits; the fused entry gives
//            the same bits as the two launches (the same additions in the same order).
//
// Why. At 128 x 128 x 65536 and 256 x 256 x 32768 the output is 1 and 4 tiles of 128 x 128: one block
// per tile would use 1 and 4 of the H200's 132 SMs. splitk_fp16 splits K over 132 blocks but runs
// mma.sync on a 3-stage cp.async ring: 22.2 and 30.7 us against cuBLAS's 15.8 and 16.5 (70.8 and
// 53.9 %). Both shapes are 32 MB of A and B: a plain read of 32 MB, timed as every row is, takes
// 11.3 us (NOTES, "FP16 at M = 64 on Hopper"), so the kernel has to stream A and B at nearly the
// copy bandwidth on every SM, and then add the partials in little more than the 4 us cuBLAS leaves.
// This file is wgmma_decode's lesson (bytes in flight, one TMA thread, no ldmatrix) put on split-K.
//
// Tiles and why, in bytes and blocks (H200: 132 SMs):
//   BM x BN = 64 x 128. Each tile reads its BM rows of A and BN columns of B over all of K, and each
//     split of it writes a BM x BN FP32 partial that the reduce reads back: both go through L2. The
//     partials are what the tile decides. At 128 x 128 x 65536 a 128 x 128 tile took 128 splits (128 x
//     64 KB = 8 MB of partials written and read back, for 32 MB of A and B); 64 x 128 takes 2 tiles x 64
//     splits, 4 MB of partials, and reads B twice from L2 (48 MB of L2 traffic, 32 MB from DRAM: the two
//     tiles of a split run at once). Measured on an H100 (NOTES, "64 x 128 tiles"): 94.3 % of cuBLAS
//     HGEMM against 82.3 % at 128 x 128 x 65536, 87.2 % against 83.7 % at 256 x 256 x 32768; 128 x 64 (A
//     read twice) 93.6 / 85.2 %, 64 x 64 (both twice) 92.6 / 71.6 %. Spreading the reduce's loads over
//     more threads made it slower (NOTES): the partials' bytes in L2 are the cost, not their latency.
//   Blocks: floor(SMs / tiles) splits (lab.py's rule, never more than one block per SM: the fused
//     form's grid barrier needs every block resident), trimmed so that no split is empty: K = 65536 is
//     1024 slices of 64; 66 splits would leave 2 empty, so 64 splits of 16 slices (384 KB of A and B a
//     block), 128 blocks. 256 x 256 x 32768: 8 tiles x 16 splits of 32 slices, 128 blocks.
//   BK = 64: one 128-byte swizzle row of halves (lab 7c). Split boundaries are whole BK slices.
//   STAGES = 6 of 24 KB (8 KB of A, 16 KB of B): 144 KB in flight per SM (wgmma_decode streamed best
//     with 96-128 KB in flight: 6 or 8 stages of 16 KB; 4 x 16 KB lost 18 points). Measured at 64 x 128
//     on an H100 (NOTES, "64 x 128 tiles"), % of cuBLAS HGEMM at 128 x 128 x 65536 / 256 x 256 x 32768:
//     STAGES 3: 91.1 / 77.0, 4: 94.0 / 87.3, 6: 93.6 / 92.3, 8: 93.4 / 92.9. A block that streams 32
//     slices (the second shape) gains from more in flight; one of 16 slices does not care. 145 KB of the
//     227 KB a block may have.
//   CONSUMERS = BM / 64 = 1 warpgroup of m64n128k16 (64 accumulators a thread) + 1 producer warpgroup:
//     256 threads. The multiplies are not the limit: 64 x 128 x 1024 is 16.8 MFLOP, 2.2 us of one SM's
//     7.5 TFLOP/s, against ~11 us to stream its 384 KB. (BM = 128: two consumer warpgroups, 384 threads.)
//
// The pipeline is wgmma_decode's without the cluster: thread 0 of the producer warpgroup issues one
// TMA box of A (64 x BM) and BN / 64 boxes of B (64 x 64) per slice onto FULL[s], after waiting on
// EMPTY[s] (count CONSUMERS) from the slice STAGES earlier; each consumer waits on FULL[s], issues 4
// wgmmas (k = 16 each), commits, waits until the previous slice's group is done and releases that
// slice's stage. A block with an empty K range (splits > slices) writes a zero partial. The epilogue
// stores the accumulators straight to workspace[z] (store_acc_64xN: float2, guarded at the edges).
// The fused form: the producer warpgroup has exited by then, so the consumers alone (named barrier
// 1, CONSUMER_THREADS threads) fence their stores, arrive on the grid's counter, wait for every block, add their
// slice of the tile in z order (FUSED_UNROLL float4 loads from L2 in flight a thread) and hand the
// counters back.
//
// What to look for in SASS (tests/test_wgmma_splitk.py checks it): HGMMA.64x128x16.F32 (4 per slice)
// after a SYNCS.PHASECHK.TRANS64.TRYWAIT on the stage; UTMALDG.2D in the producer; STG.E.64 of the
// partial tile; one BAR.SYNC (the prologue's) in the two-launch entry, named BAR.SYNC in the fused
// one, with ATOMG (the arrival, the exit), NANOSLEEP in the spin and LDG.E.128.STRONG.GPU (__ldcg) of
// the partials; the reduce entry LDG + FADD only. No LDL / STL anywhere: ptxas must not spill.

#include "../../lab07c-hopper-wgmma/kernels/hopper_ptx.cuh"
#include "splitk_reduce.cuh"  // the ordered reduce, and its one-launch form for a part of the block

#ifndef BM
#define BM 64       // block tile rows: 64 for each consumer warpgroup (128: two of them)
#endif
#ifndef BN
#define BN 128      // block tile columns = the wgmma's N
#endif
#ifndef STAGES
#define STAGES 6    // K slices in flight per block: 6 x 24 KB
#endif
#ifndef FUSED_UNROLL
#define FUSED_UNROLL 32   // the fused reduce: float4 partials loaded before they are added, per thread
#endif

#define BK 64                          // one 128-byte swizzle row of halves
#define CONSUMERS (BM / 64)            // consumer warpgroups, 64 rows each
#define THREADS ((CONSUMERS + 1) * 128)
#define SMEM_BYTES (STAGES * (BM * BK + BK * BN) * 2 + 1024)

static_assert(BM == 64 || BM == 128, "BM is 64 or 128: one or two consumer warpgroups of 64 rows (one TMA box)");
static_assert(BN == 64 || BN == 128, "BN is a wgmma N, 64 or 128: BN / 2 accumulators + the fused reduce's loads in 232 registers");
static_assert(STAGES >= 2, "STAGES >= 2");
static_assert(((BM * BK + BK * BN) * 2) % 1024 == 0, "every stage starts on a 1024-byte boundary (the 128-byte swizzle's atom)");
static_assert(SMEM_BYTES <= 232448, "dynamic shared memory at most 227 KB");
static_assert(FUSED_UNROLL >= 1 && FUSED_UNROLL <= 32, "FUSED_UNROLL: 1 to 32 loads in flight per thread");

[[maybe_unused]] constexpr int A_TILE = BM * BK * 2;
[[maybe_unused]] constexpr int B_PANEL = BK * 64 * 2;
[[maybe_unused]] constexpr int STAGE_BYTES = A_TILE + BK * BN * 2;
[[maybe_unused]] constexpr int CONSUMER_THREADS = CONSUMERS * 128;
[[maybe_unused]] constexpr int CONSUMER_REGS = CONSUMERS == 2 ? 232 : 240;
[[maybe_unused]] constexpr int PRODUCER_REGS = 40;
[[maybe_unused]] constexpr int FINISH_BAR = 1;    // the consumers' named barrier (0 is __syncthreads)

namespace wgmma_splitk {

// The main kernel: this block's K range of tile (blockIdx.y, blockIdx.x) into workspace[blockIdx.z].
// Returns true in the consumer threads (they go on to the fused form's reduce), false in the producer.
__device__ __forceinline__ bool partial_tile(int M, int N, int K, const CUtensorMap* tmA, const CUtensorMap* tmB,
                                             int splits, float* __restrict__ ws) {
#if HOPPER_STUB
    __trap();                                            // not an sm_90a build: see hopper_ptx.cuh
    return false;
#else
    extern __shared__ unsigned char smem_raw[];
    __shared__ __align__(8) uint64_t full[STAGES], empty[STAGES];
    unsigned char* smem = reinterpret_cast<unsigned char*>(
        (reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));

    const int tn = blockIdx.x, tm = blockIdx.y;
    const int KT = (K + BK - 1) / BK;                    // K slices of the whole problem
    const int per = (KT + splits - 1) / splits;          // ... of one split (splitk_fp16's cut)
    const int t0 = min(KT, (int)blockIdx.z * per), n = min(KT, t0 + per) - t0;   // this block's slices
    const int wg = threadIdx.x / 128, tid = threadIdx.x % 128;

    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(&full[s], 1);
            mbar_init(&empty[s], CONSUMERS);
        }
        mbar_fence_init();
    }
    __syncthreads();

    if (wg == 0) {                                       // ---- producer ----
        setmaxnreg_dec<PRODUCER_REGS>();
        if (tid == 0) {
            for (int i = 0; i < n; ++i) {
                const int s = i % STAGES, t = t0 + i;
                if (i >= STAGES) mbar_wait(&empty[s], ((i / STAGES) - 1) & 1);
                unsigned char* a = smem + s * STAGE_BYTES;
                mbar_arrive_tx(&full[s], STAGE_BYTES);
                tma_load_2d(a, tmA, t * BK, tm * BM, &full[s]);
#pragma unroll
                for (int p = 0; p < BN / 64; ++p)
                    tma_load_2d(a + A_TILE + p * B_PANEL, tmB, tn * BN + p * 64, t * BK, &full[s]);
            }
        }
        return false;
    }
    // ---- consumers: warpgroup c owns rows 64 c .. 64 c + 63 of the tile ----
    setmaxnreg_inc<CONSUMER_REGS>();
    const int c = wg - 1;
    float acc[BN / 2];
#pragma unroll
    for (int j = 0; j < BN / 2; ++j) acc[j] = 0.f;
    for (int i = 0; i < n; ++i) {
        const int s = i % STAGES;
        mbar_wait(&full[s], (i / STAGES) & 1);
        const uint32_t base = smem_addr(smem + s * STAGE_BYTES);
        const uint32_t a_s = base + c * 8192, b_s = base + A_TILE;     // 64 rows x 128 bytes of A a consumer
        wgmma_fence();
#pragma unroll
        for (int j = 0; j < BK / 16; ++j)
            wgmma_f16<BN>(acc, desc_k_major(a_s + j * 32), desc_mn_major(b_s + j * 2048, B_PANEL), 1);
        wgmma_commit();
        wgmma_wait<1>();                                 // slice i-1's wgmmas are done
        if (i > 0 && tid == 0) mbar_arrive(&empty[(i - 1) % STAGES]);
    }
    wgmma_wait<0>();
    keep_in_regs(acc);
    // the partial tile, as splitk_fp16 writes it: split z's slice of the workspace, C untouched
    store_acc_64xN<BN>(acc, ws + (size_t)blockIdx.z * M * N, M, N, tm * BM + c * 64, tn * BN, tid);
    return true;
#endif
}

}  // namespace wgmma_splitk

extern "C" __global__ void __launch_bounds__(THREADS, 1)
hgemm_wgmma_splitk(int M, int N, int K, const __grid_constant__ CUtensorMap tmA,
                   const __grid_constant__ CUtensorMap tmB, float* __restrict__ C, int splits,
                   float* __restrict__ workspace) {
    (void)C;
    wgmma_splitk::partial_tile(M, N, K, &tmA, &tmB, splits, workspace);
}

// The same in one launch, for a grid of at most one block per SM (launch.py): the partial tile, then
// the consumers' grid barrier and their slice of the ordered reduce (float4 where N % 4 == 0).
extern "C" __global__ void __launch_bounds__(THREADS, 1)
hgemm_wgmma_splitk_fused(int M, int N, int K, const __grid_constant__ CUtensorMap tmA,
                         const __grid_constant__ CUtensorMap tmB, float* __restrict__ C, int splits,
                         float* __restrict__ workspace) {
#if !HOPPER_STUB
    if (!wgmma_splitk::partial_tile(M, N, K, &tmA, &tmB, splits, workspace)) return;   // the producer
    const int t = threadIdx.x - 128;                     // 0 .. CONSUMER_THREADS - 1
    if (N % 4 == 0)
        splitk::finish_in_one_launch_part<FINISH_BAR, 4, BM, BN, CONSUMER_THREADS, FUSED_UNROLL>(M, N, splits, workspace, C, t);
    else
        splitk::finish_in_one_launch_part<FINISH_BAR, 1, BM, BN, CONSUMER_THREADS, FUSED_UNROLL>(M, N, splits, workspace, C, t);
#else
    __trap();
#endif
}

// C[i] = sum over z of workspace[z][i], z ascending (splitk_reduce.cuh): bitwise repeatable.
extern "C" __global__ void __launch_bounds__(REDUCE_THREADS)
wgmma_splitk_reduce(int M, int N, int splits, const float* __restrict__ workspace, float* __restrict__ C)
{
    splitk::reduce<REDUCE_THREADS, REDUCE_UNROLL>(M, N, splits, workspace, C);
}
