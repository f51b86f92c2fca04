// h7_stream_k.cu: h6 with a stream-K tail: the tiles left over after the last full round of the
// persistent grid are shared out by k-iterations, so no SM sits idle at the end.
//
//   C (FP32, M x N) = A (FP16, M x K) . B (FP16, K x N), all row-major, FP32 accumulation.
//   Entry point: hgemm_h7_stream_k (int M, int N, int K, const __grid_constant__ CUtensorMap tmA,
//                                   const __grid_constant__ CUtensorMap tmB,
//                                   const __grid_constant__ CUtensorMap tmC,
//                                   int dp_tiles, unsigned* flags, float* partials, unsigned epoch)
//   Tensor maps as h6 (tmC: C in 32 x 64 boxes, 128-byte swizzle, a padded scratch C when N % 4).
//   dp_tiles: how many tiles are walked whole, as h6 walks them (tiles, or a multiple of the grid);
//   flags: CONSUMERS x gridDim.x unsigned; partials: gridDim.x x BM x BN floats; epoch: a number the
//   launch hook changes at every launch (1, 2, 3, ..., never 0). One launch at a time per workspace
//   (launches in one stream; a CUDA graph would replay one epoch, and a stale flag would pass).
//   Launch:  THREADS = 384, SMEM_BYTES dynamic, one block per SM; grid = #SMs when stream-K is on,
//            min(#SMs, tiles) when it is off (the hook's rule: launch.py, stream_k_plan).
//   Shapes:  any M, N, K >= 1 (h2's padded copy of B when K % 8 or N % 8 is not 0).
//   Build:   sm_90a only.
//
// What it changes in h6: which block computes which k-iterations of which tile, and a fix-up.
// The tail. h6's G = 132 blocks walk T tiles in rounds of G; when G does not divide T the last round
// leaves SMs idle. 128 x 256 tiles, BK = 64, on the H200's 132 SMs:
//   2048^3:  128 tiles, 32 k-iterations each: one round of 128 blocks; 4 SMs idle (97.0 % busy).
//   4096^3:  512 tiles, 64 each: 3 full rounds and 116 tiles; 4 rounds of time for 3.88 (97.0 %).
//   8192^3: 2048 tiles, 128 each: 15 full rounds and 68 tiles; 16 rounds for 15.52 (97.0 %).
// h7 walks the full rounds as h6 does (dp_tiles = 0, 396, 1980 of them) and gives every block an equal
// share of the rest's k-iterations: 128 x 32 / 132 = 31.0, 116 x 64 / 132 = 56.2, 68 x 128 / 132 =
// 65.9. A block's time goes from 32 to 31.0, from 256 to 248.2, from 2048 to 1985.9 k-iterations: at
// most 3.1 % faster at each size. Estimate (not measured): the fix-up below moves a 128 KB partial
// tile through L2 twice (written by one block, read by another), about 1 us each at an SM's share of
// L2 bandwidth, against a tile's main loop of about 16 / 33 / 66 us at 2048^3 / 4096^3 / 8192^3 (the
// H200 near 1000 TFLOP/s). A block writes at most one partial and reads one or two, once per launch:
// expect +1 to +2 % over h6 at 4096^3, +2 to +3 % at 8192^3, and a loss at 2048^3, where every block
// pays the fix-up on a 16 us tile for 3 % of balance. Measured (H100, 2026-12-05, % of cuBLAS): h7
// 72.7 / 91.9 / 103.5 against h6's 100.2 / 99.3 / 101.2, so launch.py's stream_k_plan keeps stream-K
// off where the last round is at least half full (SK_TAIL_MAX), as at all three squares; it is on where
// most SMs would idle in the last round. Taken apart at 4096^3 (H100, 2026-12-07; NOTES.md, "h7's
// stream-K taken apart"): with no fix-up at all, stream-K on still costs 3.8 points (blocks at spread
// k-offsets read 27 MB more from DRAM), the partials' bytes 2.6 more, the flags and fences 1.0.
//
// The split (h7_schedule.cuh, shared by producer, consumers and a host probe of the tests). The S =
// T - dp_tiles "stream-K tiles" (tiles dp_tiles, dp_tiles + 1, ..., rasterized by tile_coords as all
// tiles are) hold S KT iterations; block b takes the contiguous range [b S KT / G, (b + 1) S KT / G),
// cut at tile boundaries into segments (tile, k0, k1). The pipeline runs through segments as h6's
// runs through tiles: the producer loads k-slices k0 .. k1 - 1, the consumers zero their
// accumulators at each segment's start, the stage and phase counters run on.
//
// The fix-up. A block's range is contiguous, so only its first segment can start inside a tile
// (k0 > 0): a block holds at most one partial tile. That block is a "contributor": its consumers
// store their raw accumulators to its workspace slot (thread t of consumer c, float4 q of its
// registers at float4 index q x 256 + 128 c + t: each warp store is 512 contiguous bytes), each
// thread fences (__threadfence), the warpgroup meets at its named barrier, and its thread 0 stores
// flags[CONSUMERS b + c] = epoch with release semantics. It writes no C for that segment. The block
// whose segment starts the tile (k0 = 0) is its "finalizer": after its main loop, for each later
// block whose first segment is in this tile (h7_schedule.cuh's next_contributor, in increasing
// order), each consumer's thread 0 spins on an acquire load until that flag equals epoch (a
// nanosleep between tries; after 10 s of %globaltimer it traps rather than hangs), the warpgroup
// meets at its barrier, and every thread adds the contributor's values (its own c, t, read from L2
// by __ldcg) to its accumulators. Then h6's epilogue. The additions happen in the same order on
// every run: C is bitwise repeatable for a given grid.
// No deadlock: all G blocks are resident (G <= #SMs, one block per SM), a contributor publishes its
// partial before it waits for anything, and a finalizer waits only for blocks numbered above it.
// No reset: a flag holds the epoch of the launch that last wrote it; the hook's epoch never repeats
// (within 2^32 - 1 launches) and the flags are zeroed when the workspace is allocated.
//
// Tiles and why: h6's, unchanged (128 x 256 x 64, 4 stages, GROUP 16, two 8 KB chunk buffers per
// consumer: 225 KB). The partials live in global memory (the L2: 132 x 128 KB = 16.5 MB of its 50 MB),
// since no shared memory is left.
//
// What to look for in SASS: h6's main loop and epilogue (HGMMA.64x256x16.F32, UTMALDG, 8 UTMASTG
// and UTMACMDFLUSH, 64 STS.64); the contributor's 32 STG.E.128.STRONG.GPU (__stcg: L2, not L1),
// MEMBAR.SC.GPU (__threadfence) and the flag's release (MEMBAR.ALL.GPU, then STG.E.STRONG.GPU); the
// finalizer's spin (LDG.E.STRONG.GPU then CCTL.IVALL: the acquire; NANOSLEEP; CS2R SR_GLOBALTIMERLO),
// its 32 LDG.E.128.STRONG.GPU (__ldcg) and 128 FADD; no CALL (no 64-bit division: h7_schedule.cuh),
// no local memory, and ptxas's C7515 (wgmma serialized) absent.
// What to look for in ncu: sm__cycles_active.avg against h6's at 4096^3 (the idle SMs of the last
// round gone: SM active cycles even across SMs), sm__pipe_tensor_op_hmma_cycles_active, and the
// time the finalizers spend in the spin (SourceCounters' stall samples on the NANOSLEEP line).

#include "h7_schedule.cuh"
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
#define GROUP 16    // tile rows per raster band (h4's)
#endif
#ifndef CONSUMERS
#define CONSUMERS 2 // consumer warpgroups, each BM / CONSUMERS rows
#endif

constexpr int STORE_COLS = 32;                    // a chunk: 32 floats wide (one 128-byte swizzle row)
constexpr int STORE_ROWS = 64;                    // ... and a wgmma's 64 rows high
constexpr int CHUNK_BYTES = STORE_ROWS * STORE_COLS * 4;

#define THREADS ((CONSUMERS + 1) * 128)
#define SMEM_BYTES (STAGES * (BM * BK + BK * BN) * sizeof(half) + CONSUMERS * 2 * CHUNK_BYTES + 1024)

static_assert(BK == 64, "BK must be 64: one 128-byte swizzle row of halves");
static_assert(BM % (64 * CONSUMERS) == 0 && BM <= 256, "each consumer owns a multiple of 64 rows; BM <= 256 (one TMA box)");
static_assert(BN == 64 || BN == 128 || BN == 256, "BN is a wgmma N: 64, 128 or 256");
static_assert((BM / 64 / CONSUMERS) * (BN / 2) <= 128, "a consumer's accumulators must fit in 232 registers");
static_assert(CONSUMERS == 1 || CONSUMERS == 2, "1 or 2 consumer warpgroups (register budget)");
static_assert(STAGES >= 2, "STAGES >= 2");
static_assert(GROUP >= 1, "GROUP >= 1");
static_assert(SMEM_BYTES <= 232448, "dynamic shared memory at most 227 KB (the stages and the chunk buffers)");
static_assert(((BM / 64 / CONSUMERS) * (BN / STORE_COLS)) % 2 == 0,
              "an even number of chunks per tile, so the two buffers alternate across tiles");

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

// Thread 0 of a finalizer's consumer: until the contributor's flag holds this launch's epoch. The
// acquire load orders the warpgroup's reads of the partial (after the named barrier that follows) after
// it. A contributor that never comes (a bug, or a grid larger than the SMs) traps after 10 s.
__device__ __forceinline__ void wait_for_flag(const unsigned* flag, unsigned epoch) {
    spin_acquire_while<64>(flag, [=](unsigned v) { return v != epoch; });
}

extern "C" __global__ void __launch_bounds__(THREADS, 1)
hgemm_h7_stream_k(int M, int N, int K, const __grid_constant__ CUtensorMap tmA,
                  const __grid_constant__ CUtensorMap tmB, const __grid_constant__ CUtensorMap tmC,
                  int dp_tiles, unsigned* flags, float* partials, unsigned epoch) {
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
    const StreamK sk{tiles, KT, static_cast<int>(gridDim.x), dp_tiles};   // the same split in every warpgroup

    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(&full[s], 1);
            mbar_init(&empty[s], CONSUMERS);
        }
        mbar_fence_init();
    }
    __syncthreads();

    if (wg == 0) {                                   // ---- producer: h6's, over segments ----
        setmaxnreg_dec<PRODUCER_REGS>();
        if (tid == 0) {
            int it = 0;                              // K slices issued since the block started
            Walk walk(sk, blockIdx.x);
            SkUnit u;
            while (walk.next(u)) {                   // whole tiles, then this block's stream-K segments
                int tm, tn;
                tile_coords(u.tile, tiles_m, tiles_n, tm, tn);
                for (int t = u.k0; t < u.k1; ++t, ++it) {
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
        unsigned char* chunks = smem + STAGES * STAGE_BYTES + c * 2 * CHUNK_BYTES;   // this consumer's two
        const int warp = tid / 32, lane = tid % 32;
        int it = 0;
        Walk walk(sk, blockIdx.x);
        SkUnit u;
        while (walk.next(u)) {
            int tm, tn;
            tile_coords(u.tile, tiles_m, tiles_n, tm, tn);
            float acc[MI][BN / 2];
#pragma unroll
            for (int i = 0; i < MI; ++i)
#pragma unroll
                for (int j = 0; j < BN / 2; ++j) acc[i][j] = 0.f;

            // h4's main loop over the segment's k-slices, counted from 0: written as t = k0 .. k1 - 1,
            // ptxas 13.0 serializes the wgmmas (C7515: "non wgmma instructions defining accumulator registers").
            for (int x = 0; x < u.k1 - u.k0; ++x, ++it) {
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
                if (x > 0 && tid == 0) mbar_arrive(&empty[(it - 1) % STAGES]);
            }
            wgmma_wait<0>();
            if (tid == 0) mbar_arrive(&empty[(it - 1) % STAGES]);   // the segment's last slice
#pragma unroll
            for (int i = 0; i < MI; ++i) keep_in_regs(acc[i]);

            // ---- stream-K: a contributor hands its partial over; a finalizer adds the others' ----
            // float4 q of thread t of consumer c sits at float4 index q * THREADS_C + 128 c + t of a slot.
            constexpr int THREADS_C = CONSUMERS * 128;
            if (u.k0 > 0) {                          // this block's first segment, inside the tile
                float4* slot = reinterpret_cast<float4*>(partials + (size_t)blockIdx.x * (BM * BN)) + c * 128 + tid;
#pragma unroll
                for (int i = 0; i < MI; ++i)
#pragma unroll
                    for (int q = 0; q < BN / 8; ++q)
                        __stcg(slot + (i * (BN / 8) + q) * THREADS_C,
                               make_float4(acc[i][4 * q], acc[i][4 * q + 1], acc[i][4 * q + 2], acc[i][4 * q + 3]));
                __threadfence();                     // this thread's partial, visible GPU-wide ...
                named_bar_sync(1 + c, 128);          // ... for all 128 threads ...
                if (tid == 0) st_release_gpu_u32(flags + blockIdx.x * CONSUMERS + c, epoch);   // ... then the flag
                continue;                            // no C from this segment: the finalizer writes it
            }
            if (u.tile >= dp_tiles) {                // the tile's k0 = 0 segment: add the rest, in block order
                for (int b2 = sk.next_contributor(u.tile, blockIdx.x + 1); b2 >= 0;
                     b2 = sk.next_contributor(u.tile, b2 + 1)) {
                    if (tid == 0) wait_for_flag(flags + b2 * CONSUMERS + c, epoch);
                    named_bar_sync(1 + c, 128);      // the acquire before every thread's reads
                    const float4* slot = reinterpret_cast<const float4*>(partials + (size_t)b2 * (BM * BN)) + c * 128 + tid;
#pragma unroll
                    for (int i = 0; i < MI; ++i)
#pragma unroll
                        for (int q = 0; q < BN / 8; ++q) {
                            const float4 v = __ldcg(slot + (i * (BN / 8) + q) * THREADS_C);
                            acc[i][4 * q] += v.x;
                            acc[i][4 * q + 1] += v.y;
                            acc[i][4 * q + 2] += v.z;
                            acc[i][4 * q + 3] += v.w;
                        }
                }
            }

            // ---- h6's epilogue: chunks of 64 x 32 floats through shared memory to TMA ----
            // Register acc[i][4 q' + 2 h + e] (q' = 4 q + jj) is row warp * 16 + lane / 4 + 8 h,
            // column 8 q' + 2 (lane % 4) + e of the consumer's 64 x BN (hopper_ptx.cuh, wgmma).
#pragma unroll
            for (int i = 0; i < MI; ++i) {
                const int row0 = tm * BM + (c * MI + i) * 64;
#pragma unroll
                for (int q = 0; q < BN / STORE_COLS; ++q) {
                    unsigned char* buf = chunks + (q % 2) * CHUNK_BYTES;
                    if (tid == 0) bulk_wait_read<1>();   // the store that read buf two chunks ago is done
                    named_bar_sync(1 + c, 128);
#pragma unroll
                    for (int jj = 0; jj < STORE_COLS / 8; ++jj) {
#pragma unroll
                        for (int h = 0; h < 2; ++h) {
                            const int r = warp * 16 + lane / 4 + 8 * h;          // row in the chunk
                            const int piece = (2 * jj + (lane % 4) / 2) ^ (r % 8);   // 16-byte piece, swizzled
                            const int j = 4 * (4 * q + jj) + 2 * h;
                            st_shared_f2(smem_addr(buf) + r * 128 + piece * 16 + (lane % 2) * 8,
                                         acc[i][j], acc[i][j + 1]);
                        }
                    }
                    fence_proxy_async();
                    named_bar_sync(1 + c, 128);
                    const int col0 = tn * BN + q * STORE_COLS;
                    if (tid == 0 && row0 < M && col0 < N) tma_store_2d(&tmC, col0, row0, buf);
                    if (tid == 0) bulk_commit();         // an empty group when skipped: the count stays even
                }
            }
        }
        if (tid == 0) bulk_wait<0>();                // every store finished before the block exits
    }
#endif
}
