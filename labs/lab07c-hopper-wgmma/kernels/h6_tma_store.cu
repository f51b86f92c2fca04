// h6_tma_store.cu: h4 with its epilogue through shared memory and TMA stores, so that the consumers
// hand C to the copy engine and go on to the next tile's multiplies.
//
//   C (FP32, M x N) = A (FP16, M x K) . B (FP16, K x N), all row-major, FP32 accumulation.
//   Entry point: hgemm_h6_tma_store (int M, int N, int K, const __grid_constant__ CUtensorMap tmA,
//                                    const __grid_constant__ CUtensorMap tmB,
//                                    const __grid_constant__ CUtensorMap tmC)
//   Tensor maps: tmA and tmB as h4. tmC: C, FP32 dims (N, M), box (STORE_COLS, STORE_ROWS) =
//     (32, 64), CU_TENSOR_MAP_SWIZZLE_128B. TMA needs C's row pitch (N floats) to be a multiple of
//     16 bytes: when N % 4 != 0 the launch hook hands the kernel a scratch C with a padded pitch and
//     copies it into C afterwards, inside what is timed (as it pads B for h2-h5).
//   Launch:  as h4: THREADS = 384, a persistent grid of min(#SMs, tiles) blocks, SMEM_BYTES dynamic.
//   Shapes:  any M, N, K >= 1 (h2's padded copy of B when K % 8 or N % 8 is not 0).
//   Build:   sm_90a only.
//
// What it changes in h4: the epilogue, nothing else.
// h4's consumers write their accumulators from registers straight to global memory: 64 x 256 FP32
// values a warpgroup, 128 KB a tile. Meanwhile nobody multiplies: the producer has already filled
// the next tile's stages, but the tensor core waits for the consumers to come back. Every block has
// the same work per tile, so all 132 reach their epilogue at nearly the same moment and 132 x 128 KB
// of stores hit the memory system together; the store instructions queue (ncu's `lg_throttle`
// stall) and the consumers wait in them. FP32 C is a large share of the traffic: at 4096^3, C is
// 64 MB against 2 x 32 MB of A and B.
// h6 writes each consumer's 64 x 256 accumulators into shared memory, 64 x 32 floats (8 KB, one
// "chunk") at a time, and one thread of the warpgroup gives each chunk to TMA with one instruction
// (cp.async.bulk.tensor ... global.shared::cta). Writing shared memory is fast and never waits on
// DRAM; the copy engine streams the chunks out while the warpgroup is already back in the next
// tile's main loop. Two chunk buffers per consumer: while TMA reads one, the threads fill the other.
// TMA clips at the matrix edges: the epilogue has no guards, the tile at the corner included.
//
// The chunk buffer's layout is the 128-byte swizzle (hopper_ptx.cuh): a row of 32 floats is 128
// bytes, and 16-byte piece p of row r is stored at piece p ^ (r % 8). A warp's float2 store writes
// 8 rows x 32 bytes, in two half-warp passes of 4 rows each. Unswizzled, the 4 rows of a pass would
// all hit the same 8 banks: 4-way conflicts, 8 wavefronts for 256 bytes. Swizzled, rows r and r ^ 1
// still share their two pieces (p ^ (r % 8) with p = 2 jj, 2 jj + 1 gives the same pair): 2-way,
// 4 wavefronts where 2 is the least possible. Removing that would take each lane choosing its n8
// block by its row (jj ^ (r % 4)), that is, selecting among 4 registers at run time; at 64 KB a
// consumer per tile the conflict costs about 1000 cycles of shared-memory bandwidth per tile, 1.5 % of
// a 4096^3 tile's main loop, and it is paid while the copy engine and the producer keep working.
//
// The handshakes, per chunk and warpgroup (bulk groups belong to the thread that issued them, so one
// thread, tid 0, issues every store and does every wait):
//   1. tid 0: bulk_wait_read<1>: at most one store (the previous chunk's, in the other buffer) may
//      still be reading; the one that read this buffer two chunks ago is done.
//   2. named barrier of the warpgroup: nobody writes the buffer before step 1.
//   3. every thread: float2 stores of its accumulators into the buffer; fence_proxy_async, so the
//      copy engine (the "async proxy") sees them.
//   4. named barrier: all writes fenced. tid 0: tma_store_2d, bulk_commit.
// At the very end each tid 0 waits for all its stores (bulk_wait<0>) before the block may exit.
//
// Tiles and why: h4's, 128 x 256 x 64, 4 stages (192 KB), GROUP 16. The chunk buffers take 2 x 2 x
// 8 KB = 32 KB more: 225 KB of the 227 KB a block may have. STORE_COLS = 32 floats is one 128-byte
// swizzle row, the widest box row the swizzle allows; STORE_ROWS = 64 is one consumer's rows.
//
// What to look for in SASS: h4's main loop unchanged (HGMMA.64x256x16.F32, SYNCS waits); in the
// epilogue UTMASTG (the TMA store) with UTMACMDFLUSH (commit), STS.64 into the chunks, named
// BAR.SYNC (barrier 1 and 2), and no STG: no thread writes global memory itself.
// What to look for in ncu: the `lg_throttle` stall gone; sm__pipe_tensor_op_hmma_cycles_active
// higher than h4's at 4096^3, where the epilogue is the larger share of a tile.

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

extern "C" __global__ void __launch_bounds__(THREADS, 1)
hgemm_h6_tma_store(int M, int N, int K, const __grid_constant__ CUtensorMap tmA,
                   const __grid_constant__ CUtensorMap tmB, const __grid_constant__ CUtensorMap tmC) {
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

    if (wg == 0) {                                   // ---- producer (h4's) ----
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
        unsigned char* chunks = smem + STAGES * STAGE_BYTES + c * 2 * CHUNK_BYTES;   // this consumer's two
        const int warp = tid / 32, lane = tid % 32;
        int it = 0;
        for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
            int tm, tn;
            tile_coords(tile, tiles_m, tiles_n, tm, tn);
            float acc[MI][BN / 2];
#pragma unroll
            for (int i = 0; i < MI; ++i)
#pragma unroll
                for (int j = 0; j < BN / 2; ++j) acc[i][j] = 0.f;

            for (int t = 0; t < KT; ++t, ++it) {     // h4's main loop
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

            // ---- the epilogue: chunks of 64 x 32 floats through shared memory to TMA ----
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
