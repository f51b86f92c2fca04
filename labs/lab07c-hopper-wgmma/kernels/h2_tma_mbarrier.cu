// h2_tma_mbarrier.cu: h1 with its tiles brought in by the Tensor Memory Accelerator (TMA) and a
// pipeline of mbarriers.
//
//   C (FP32, M x N) = A (FP16, M x K) . B (FP16, K x N), all row-major, FP32 accumulation.
//   Entry point: hgemm_h2_tma (int M, int N, int K, const __grid_constant__ CUtensorMap tmA,
//                              const __grid_constant__ CUtensorMap tmB, float* C)
//   Tensor maps (made on the host, common/tensor_maps.py), both CU_TENSOR_MAP_SWIZZLE_128B:
//     tmA: FP16, dims (K, M) innermost first, box (64, BM): one A tile per load
//     tmB: FP16, dims (N, K), box (64, BK): one 64-column panel of a B tile per load
//   Launch:  THREADS = 128 (one warpgroup), grid = (ceil(N / BN), ceil(M / BM)), SMEM_BYTES dynamic.
//   Shapes:  any M, N, K >= 1 that a tensor map can describe: each row's pitch in bytes a
//            multiple of 16 (K % 8 == 0 for A, N % 8 == 0 for B). For other K or N the launch hook
//            copies the operand once into a buffer with a padded pitch (dims stay K, N: TMA's
//            out-of-bounds fill supplies the zeros past the edge).
//   Build:   sm_90a only.
//
// What it adds over h1. In h1 all 128 threads computed addresses, issued 16 cp.async each per tile
// and XOR-swizzled the destinations by hand. Here ONE thread issues one instruction per box
// (cp.async.bulk.tensor.2d: 1 for A, BN / 64 for B): the TMA unit walks the box, fetches it, writes
// it into shared memory already in the 128-byte swizzle (the tensor map says so), fills whatever
// lies outside the matrix with zeros (so no edge code at all in the loads), and reports the bytes
// it wrote to an mbarrier. An mbarrier is a 64-bit shared-memory object with an arrival count and a
// transaction (byte) count: the phase completes when both reach zero, and waiters spin on its
// phase parity. Each stage has one "full" barrier: the issuing thread arrives once with
// expect_tx(TX_BYTES), the bytes its loads of that stage will write; TMA's completed bytes finish
// the phase; everyone waits on it, naming the parity of the phase it waits for (full_parity(t)).
// A wait returns once the barrier has left the phase of that parity: a parity one phase behind
// returns at once, one ahead waits for a phase that may never come.
//
// The loop keeps one wgmma group running across tiles: issue tile t's wgmmas, commit, then
// wait_group 1, which returns when tile t-1's group is done, while tile t's is still running.
// A __syncthreads then tells thread 0 that all four warps are past that wait, so tile t-1's buffer
// is free, and thread 0 refills it with tile t-1+STAGES. (h3 replaces this barrier by "empty"
// mbarriers and a dedicated producer warp.)
//
// Tiles and why: 128 x 128 x 64 as h1; STAGES = 4 (4 x 32 KB): TMA latency is long (~1 us) and
// one thread can keep 3 tiles in flight for free.
//
// What to look for in SASS: UTMALDG.2D (TMA loads, 1 + BN/64 per tile), SYNCS.EXCH.64 (mbarrier
// init), SYNCS.ARRIVE.TRANS64 (arrive.expect_tx), SYNCS.PHASECHK.TRANS64.TRYWAIT (the wait loop),
// no LDGSTS and no LDG in the main loop; HGMMA.64x128x16.F32 and WARPGROUP.DEPBAR.LE gsb0, 0x1
// (wait_group 1); one BAR.SYNC per tile. ptxas must not warn C7509-C7511.

#include "hopper_ptx.cuh"

#ifndef BM
#define BM 128      // block tile rows: two m64 wgmmas per k-slice
#endif
#ifndef BN
#define BN 128      // block tile columns = the wgmma's N
#endif
#ifndef BK
#define BK 64       // one 128-byte swizzle row of halves = TMA's widest swizzled box
#endif
#ifndef STAGES
#define STAGES 4    // tiles in flight: TMA latency needs several
#endif

#define THREADS 128
#define SMEM_BYTES (STAGES * (BM * BK + BK * BN) * sizeof(half) + 1024)   // + 1024: atom alignment

static_assert(BK == 64, "BK must be 64: TMA's 128-byte swizzle limits a box row to 128 bytes");
static_assert(BM % 64 == 0 && BM <= 256, "BM is a multiple of 64, at most 256 (a TMA box side)");
static_assert(BN == 64 || BN == 128 || BN == 256, "BN is a wgmma N: 64, 128 or 256");
static_assert((BM / 64) * (BN / 2) <= 128, "accumulators must fit in registers");
static_assert(STAGES >= 2, "STAGES >= 2");

[[maybe_unused]] constexpr int A_TILE = BM * BK * 2;
[[maybe_unused]] constexpr int B_PANEL = BK * 64 * 2;         // one 64-column panel of B: BK rows of 128 bytes
[[maybe_unused]] constexpr int B_TILE = BK * BN * 2;
[[maybe_unused]] constexpr int STAGE_STRIDE = A_TILE + B_TILE;  // bytes from one stage's buffer to the next

// The two numbers the pipeline's mbarriers run on (host and device: the grader evaluates them).
// BEGIN SOLUTION h2-tx: TX_BYTES, what a stage's arrive.expect_tx must announce (any BM, BN the static_asserts allow)
[[maybe_unused]] constexpr uint32_t TX_BYTES = (BM * BK + (BN / 64) * (64 * BK)) * sizeof(half);   // A's box + B's panels
// END SOLUTION h2-tx
// BEGIN SOLUTION h2-parity: full_parity(t), the parity tile t's wait on its stage's FULL barrier names (any STAGES)
__host__ __device__ constexpr uint32_t full_parity(int t) { return (t / STAGES) & 1; }   // the (t / STAGES)-th fill
// END SOLUTION h2-parity

extern "C" __global__ void __launch_bounds__(THREADS)
hgemm_h2_tma(int M, int N, int K, const __grid_constant__ CUtensorMap tmA,
             const __grid_constant__ CUtensorMap tmB, float* __restrict__ C) {
#if HOPPER_STUB
    __trap();                                            // not an sm_90a build: see hopper_ptx.cuh
#else
    extern __shared__ unsigned char smem_raw[];
    __shared__ __align__(8) uint64_t full[STAGES];
    unsigned char* smem = reinterpret_cast<unsigned char*>(
        (reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));

    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    const int KT = (K + BK - 1) / BK;

    auto issue = [&](int kt) {                  // thread 0: tile kt into stage kt % STAGES
        unsigned char* a = smem + (kt % STAGES) * STAGE_STRIDE;
        uint64_t* bar = &full[kt % STAGES];
        mbar_arrive_tx(bar, TX_BYTES);        // full boxes are always written (zeros outside)
        tma_load_2d(a, &tmA, kt * BK, m0, bar);
#pragma unroll
        for (int p = 0; p < BN / 64; ++p) tma_load_2d(a + A_TILE + p * B_PANEL, &tmB, n0 + p * 64, kt * BK, bar);
    };

    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s) mbar_init(&full[s], 1);
        mbar_fence_init();
    }
    __syncthreads();
    if (threadIdx.x == 0)
        for (int s = 0; s < STAGES && s < KT; ++s) issue(s);

    float acc[BM / 64][BN / 2];
#pragma unroll
    for (int h = 0; h < BM / 64; ++h)
#pragma unroll
        for (int j = 0; j < BN / 2; ++j) acc[h][j] = 0.f;

    for (int t = 0; t < KT; ++t) {
        mbar_wait(&full[t % STAGES], full_parity(t));
        const uint32_t a_s = smem_addr(smem + (t % STAGES) * STAGE_STRIDE), b_s = a_s + A_TILE;
        wgmma_fence();
#pragma unroll
        for (int j = 0; j < BK / 16; ++j) {
            const uint64_t db = desc_mn_major(b_s + j * 2048, B_PANEL);
#pragma unroll
            for (int h = 0; h < BM / 64; ++h)
                wgmma_f16<BN>(acc[h], desc_k_major(a_s + h * 8192 + j * 32), db, 1);
        }
        wgmma_commit();
        wgmma_wait<1>();                       // tile t-1's group is done; tile t's still runs
        __syncthreads();                       // ... in all four warps: its buffer is free
        if (threadIdx.x == 0 && t >= 1 && t - 1 + STAGES < KT) issue(t - 1 + STAGES);
    }
    wgmma_wait<0>();
#pragma unroll
    for (int h = 0; h < BM / 64; ++h) keep_in_regs(acc[h]);

#pragma unroll
    for (int h = 0; h < BM / 64; ++h)
        store_acc_64xN<BN>(acc[h], C, M, N, m0 + h * 64, n0, threadIdx.x);
#endif
}
