// h4_3xtf32.cu: FP32 accuracy from TF32 wgmma (3xTF32), h4_tf32's persistent warp-specialized design
// with split operands and partial sums promoted to FP32 registers.
//
//   C (FP32, M x N) = A (FP32, M x K) . B (FP32, K x N), all row-major, with errors at FP32's level
//   (common/precision.py, "fp32_3xtf32", derives the bound the checks use).
//   Entry points:
//     sgemm_h4_3xtf32 (int M, int N, int K, const __grid_constant__ CUtensorMap tmAbig,
//                      const __grid_constant__ CUtensorMap tmAsmall, const __grid_constant__ CUtensorMap tmBbig,
//                      const __grid_constant__ CUtensorMap tmBsmall, float* C, const float* A, float* a_parts,
//                      int pitch, unsigned* ready_count, int first_band)
//     split_h4_3xtf32 (int M, int N, int K, const float* A, const float* B, float* a_parts,
//                      float* bt_parts, int pitch, int a_rows, unsigned* ready_count, int bands)
//         a_parts:  A_big (M x K, row pitch `pitch` floats), then A_small at a_parts + M pitch
//         bt_parts: Bt_big = big(B)^T (N x K, pitch `pitch`), then Bt_small at bt_parts + N pitch
//   Tensor maps, all FP32 with CU_TENSOR_MAP_SWIZZLE_128B, K contiguous (K-major):
//     tmAbig, tmAsmall:  dims (K, M), box (32, BM), row pitch `pitch` floats
//     tmBbig, tmBsmall:  dims (K, N), box (32, BN), row pitch `pitch` floats
//   Launch (the hook, per call, both timed): split_h4_3xtf32 with block (32, 8) on a 1-D grid of
//     ceil(K / T) ceil(a_rows / T) + ceil(K / T) ceil(N / T) blocks (one T x T tile each, T = SPLIT_TILE:
//     A's first, then B's), pitch = K rounded up to 4 floats; then sgemm_h4_3xtf32 with THREADS = 384 on a
//     persistent grid (min(#SMs, tiles), 1, 1), SMEM_BYTES dynamic. a_rows = min(M, first_band GROUP BM):
//     the bands of A the first wave of tiles reads (launch.py, split_share); ready_count: a counter a band
//     (bands = ceil(M / (GROUP BM))), which the pass zeroes and the GEMM's splitter warps count.
//   Shapes:  any M, N, K >= 1 (the split writes every part at a padded pitch: TMA's 16-byte rule
//            holds for any K).
//   Build:   sm_90a only.
//
// The idea (lab 7a's k8 explains it for mma.sync). Each FP32 operand is split into two TF32 numbers,
// x = big + small: big = tf32(x), small = tf32(x - big) (x - big is exact in FP32), so that
//     a b ~ big_a big_b + big_a small_b + small_a big_b
// to about 2^-21 |a b| (small_a small_b and the split's own remainders are below that). Each product
// is exact in the tensor core; what is left is its accumulation, which aligns and truncates: over a
// long K its error grows with K, towards zero. So each wgmma chain covers KCHUNK of K only, from zero,
// and is then added with FADD (rounded to nearest) into FP32 running sums held in registers, and
// restarted: the error of a result is that of a KCHUNK chain plus FP32's rounding of the K / KCHUNK
// promotions, whatever K is.
//
// What it changes in h4_tf32:
// 1. The split is a pass of its own on the device, like h4_tf32's transpose of B and counted in the
//    call's time: A -> A_big, A_small; B -> Bt_big, Bt_small, transposed (TF32 wgmma reads only K-major
//    operands, so B needs that pass anyway, and the split rides on it). big rounds to the nearest TF32
//    (ties away, k8's integer form), small is x - big rounded by cvt.rna; both have their low 13 bits
//    zero, so the tensor core reads them exactly. Inf and NaN propagate as in FP32: a finite x is
//    clamped to the largest TF32 number first, an Inf or NaN to +-1, so big is finite and an Inf's
//    small = x (k8's split_tf32 says why).
//    Why not split in the GEMM, as k8 does: wgmma reads B from shared memory only, so a split B has to
//    be stored split; the pass reads A and B once and writes each twice, a memory-bound pass (at
//    4096^3, 384 MB at 3-4 TB/s: 0.1 ms beside a GEMM of over 1 ms; its share falls as 1 / size).
// 2. Four TMA boxes per stage (A_big, A_small, Bt_big, Bt_small) and an expect_tx of their sum.
// 3. Per 8-deep slice three wgmma into one chain: small.big, big.small, then big.big, k8's order (the
//    small products join the chain before the big one of their slice, while the sum is smaller).
//    The first wgmma of a chain has scale-d = 0 (D = A B): the chain restarts from zero with no
//    register written.
// 4. Promotion: a chain is h4_tf32's K loop over CHUNK_TILES stages (wait_group 1 inside, each stage
//    released one stage late), closed by wait_group 0, which must precede any read of the chain's
//    registers; then the stage is released and 64 FADDs add the chain to the running sums.
//    The two consumers close their chains half a chunk apart (consumer 1's first chain of each tile is
//    half as long), so that while one drains its wgmma pipe and adds, the other's wgmmas keep the
//    tensor core busy.
// 5. Half h4_tf32's tile: the running sums double the accumulators, 64 chain + 64 running floats per
//    thread for a 64 x 128 consumer tile; 128 + 128 for h4_tf32's 64 x 256 would not fit (Registers,
//    below).
// 6. A's split overlapped with the multiply (OVERLAP = 1). The pass is bound by DRAM and the GEMM by the
//    tensor core, so the pass splits all of B but only the bands of A the first wave of tiles reads (a
//    band: the GROUP x BM rows of A a raster band of tiles reads; at 4096^3 the first), and the producer
//    warpgroup's three idle warps split A's other bands inside the GEMM, in raster order, while the
//    consumers multiply. Each band has a counter in global memory: a splitter warp fences its stores
//    (fence.proxy.async.global: generic stores, then another block's TMA reads) and adds 1 with release;
//    the TMA thread, before the first load of a tile in a band, waits with acquire loads until every
//    splitter warp of the grid has counted in, and fences. The band is needed a wave or more after the
//    splitters start on it, so the wait is rarely felt; the grid is one block an SM, all resident, so the
//    splitters always run (a count that never comes traps after 10 s). The parts are bit for bit the
//    pass's (the same split_tf32). B stays whole in the pass: its split is a transpose, and done by the
//    splitter warps it came too late for the second wave (lab NOTES: measured, 7 % slower).
//
// Tiles and why: BM x BN = 128 x 128 (two consumer warpgroups, each m64n128k8), BK = 32 floats (one
// 128-byte swizzle row, as h4_tf32), four 16 KB boxes a stage = 64 KB, STAGES = 3 (192 KB + 1 KB for
// the alignment; 4 would not fit 227 KB). KCHUNK = 64 (k8's: 24 chained wgmma per chain, 2 stages;
// its header gives the model behind it), GROUP = 8. The split pass: SPLIT_TILE = 64 (a 64 x 64 tile a
// block, 16 KB of reads in flight: the pass is bound by DRAM, and a 32 x 32 tile's 4 KB kept it at
// about 2.5 TB/s).
// Registers: ptxas allocates the whole kernel within __launch_bounds__(384, 1)'s 168 a thread, and the
// consumers' 64 + 64 accumulators fit there with no spill; a 128 x 256 tile (128 + 128) or a third
// consumer warpgroup (128 a thread) would not. The splitter warps live within the producer's 40
// registers: SPLIT_UNROLL = 4 loads in flight a lane (8 measured no faster).
//
// What to look for in SASS (sgemm_h4_3xtf32): HGMMA.64x128x8.F32.TF32, 12 in the stage loop (3 per
// 8-deep slice, 4 slices), the first with the scale-d predicate (UP0), the rest accumulating;
// WARPGROUP.DEPBAR.LE gsb0, 0x1 in the stage loop and 0x0 once at a chain's end, followed by the
// promotion's 64 FADDs (the consumers' only FADDs); UTMALDG.2D, 4 per stage (the producer's loop is
// unrolled: a multiple of 4); SYNCS.* (mbarriers); USETMAXREG.DEALLOC and .TRY_ALLOC; no local memory.
// The splitter warps, after USETMAXREG.DEALLOC: SPLIT_UNROLL LDG.E.EF (evict-first) before the first of
// 2 SPLIT_UNROLL STG.E.EF, SPLIT_UNROLL FADDs (x - big); FENCE.VIEW.ASYNC.G and REDG.E.ADD.STRONG.GPU (a
// band's counter), and the TMA thread's LDG.E.STRONG.GPU, NANOSLEEP (the wait) and FENCE.VIEW.ASYNC.G.
// split_h4_3xtf32 (a thread splits E = SPLIT_TILE^2 / 256 elements of A, or E of B: 2E in the code): per
// element FSETP and FSEL (the clamp's limit: 1 for Inf and NaN), 2 FMNMX (the clamp), IADD3 and LOP3
// (big's rounding), FADD (x - big), then cvt.rna as FSETP (finite?), IADD and LOP3; one LDG and two STG
// (big and small) per element, and for B's transpose two STS and two LDS; one more STG, in a loop of
// its own (block 0 zeroes the band counters); no tensor core.
// tests/test_3xtf32.py checks these counts. ptxas must not warn C7509-C7511.

#include "hopper_ptx.cuh"

#ifndef BM
#define BM 128      // block tile rows: 64 for each of the two consumer warpgroups
#endif
#ifndef BN
#define BN 128      // block tile columns = the wgmma's N (m64n128k8): 64 chain + 64 running floats a thread
#endif
#ifndef BK
#define BK 32       // one 128-byte swizzle row of floats
#endif
#ifndef STAGES
#define STAGES 3    // four 16 KB boxes a stage: 3 stages = 192 KB
#endif
#ifndef KCHUNK
#define KCHUNK 64   // K of one wgmma chain before it is added to the FP32 running sums (a multiple of BK)
#endif
#ifndef GROUP
#define GROUP 8     // tile rows per raster band (L2 reuse of B panels)
#endif
#ifndef SPLIT_TILE
#define SPLIT_TILE 64   // the split pass's tile: 64 x 64, 16 KB of loads in flight a block (32: 4 KB)
#endif
#ifndef OVERLAP
#define OVERLAP 1   // 1: the pass splits the bands of A the first wave reads, the GEMM's idle warps the rest (item 6)
#endif
#ifndef SPLIT_UNROLL
#define SPLIT_UNROLL 4  // loads a splitter lane has in flight (runs of 32 x SPLIT_UNROLL columns of A)
#endif

#define CONSUMERS 2 // consumer warpgroups, 64 rows each
#define THREADS ((CONSUMERS + 1) * 128)
#define SMEM_BYTES (STAGES * 2 * (BM * BK + BN * BK) * sizeof(float) + 1024)

static_assert(BK == 32, "BK must be 32: one 128-byte swizzle row of floats");
static_assert(BM == 64 * CONSUMERS, "BM must be 128: one m64 block for each of the two consumers");
static_assert(BN == 128, "BN must be 128: the consumer's chain and running sums (2 x BN / 2 floats) must fit "
                         "its registers");
static_assert(STAGES >= 2, "STAGES >= 2");
static_assert(KCHUNK >= BK && KCHUNK % BK == 0, "KCHUNK must be a multiple of BK: a chain ends at a stage's end");
static_assert(GROUP >= 1, "GROUP >= 1");
static_assert(OVERLAP == 0 || OVERLAP == 1, "OVERLAP is 0 or 1");
static_assert(SMEM_BYTES <= 232448, "dynamic shared memory at most 227 KB");

[[maybe_unused]] constexpr int A_TILE = BM * BK * 4;            // one A part (big or small) of a stage
[[maybe_unused]] constexpr int B_TILE = BN * BK * 4;            // one Bt part
[[maybe_unused]] constexpr int STAGE_BYTES = 2 * A_TILE + 2 * B_TILE;
[[maybe_unused]] constexpr int CHUNK_TILES = KCHUNK / BK;      // stages per chain
[[maybe_unused]] constexpr int CONSUMER_REGS = 232;
[[maybe_unused]] constexpr int PRODUCER_REGS = 40;
[[maybe_unused]] constexpr int SPLITTERS = 3;                   // the producer warpgroup's warps 1-3
[[maybe_unused]] constexpr int BAND_ROWS = GROUP * BM;          // rows of A a raster band reads

// Tile index -> (tile row, tile column): bands of GROUP tile rows, column by column within a band.
__device__ __forceinline__ void tile_coords(int tile, int tiles_m, int tiles_n, int& tm, int& tn) {
    const int band = tile / (GROUP * tiles_n);
    const int first = band * GROUP;
    const int rows = min(GROUP, tiles_m - first);        // the last band may be narrower
    const int in_band = tile - band * GROUP * tiles_n;
    tm = first + in_band % rows;
    tn = in_band / rows;
}

// A producer thread's wait for `count` arrivals on a band's counter (acquire: the splitters' stores are
// visible to this thread after it). A count that never comes (a bug, or a grid larger than the SMs, whose
// later blocks would wait for splitters that cannot start) traps after 10 s rather than hangs.
__device__ __forceinline__ void wait_count(const unsigned* counter, unsigned count) {
    spin_acquire_while<256>(counter, [=](unsigned v) { return v < count; });
}

// The splitter warps (OVERLAP) split what the pass left out while the consumers multiply what it split:
// A's rows of bands [first_band, bands) into A_big and A_small, band by band in raster order. All the
// grid's splitter warps share a band, each warp taking every (gridDim.x SPLITTERS)-th run of 32
// SPLIT_UNROLL columns of a row, and count themselves in on the band's counter when done: each lane fences
// its stores before the TMA reads of other blocks, and lane 0 adds with release semantics. A run's loads
// are evict-first and all go out before its first split (the loads in flight are the copy's bandwidth);
// the stores are evict-first too (the parts are read a wave later, by then out of L2).
__device__ __forceinline__ void count_in(unsigned* counter) {
    fence_proxy_async_global();
    __threadfence();
    __syncwarp();
    if (threadIdx.x % 32 == 0) red_release_gpu_add_u32(counter, 1);
}

// A's rows of one band [r0, r1) in runs of 32 SPLIT_UNROLL columns, no transpose.
__device__ __forceinline__ void split_a_rows(const float* __restrict__ A, float* __restrict__ a_parts, int M,
                                             int K, int pitch, int r0, int r1, int warp, int warps) {
    constexpr int U = SPLIT_UNROLL, RUN = 32 * U;
    const int lane = threadIdx.x % 32;
    const int runs = (K + RUN - 1) / RUN, units = (r1 - r0) * runs;
    for (int u = warp; u < units; u += warps) {
        const int r = r0 + u / runs, c = (u % runs) * RUN + lane;
        const float* src = A + (size_t)r * K + c;
        float x[U];
#pragma unroll
        for (int j = 0; j < U; ++j) x[j] = c + 32 * j < K ? __ldcs(src + 32 * j) : 0.f;
        float* big = a_parts + (size_t)r * pitch + c;
        float* small = big + (size_t)M * pitch;
#pragma unroll
        for (int j = 0; j < U; ++j)
            if (c + 32 * j < K) {
                float hi, lo;
                split_tf32(x[j], hi, lo);
                __stcs(big + 32 * j, hi);
                __stcs(small + 32 * j, lo);
            }
    }
}

extern "C" __global__ void __launch_bounds__(THREADS, 1)
sgemm_h4_3xtf32(int M, int N, int K, const __grid_constant__ CUtensorMap tmAbig,
                const __grid_constant__ CUtensorMap tmAsmall, const __grid_constant__ CUtensorMap tmBbig,
                const __grid_constant__ CUtensorMap tmBsmall, float* __restrict__ C,
                const float* __restrict__ A, float* __restrict__ a_parts, int pitch,
                unsigned* __restrict__ ready_count, int first_band) {
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
        // ready_count[b]: how many splitter warps are done with A's band b (OVERLAP)
        const int bands = (M + BAND_ROWS - 1) / BAND_ROWS;
        const unsigned all = gridDim.x * SPLITTERS;
        if (tid == 0) {
            int it = 0;                              // K slices issued since the block started
            int ready = first_band - 1;              // the bands below first_band: split by the pass
            for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
                int tm, tn;
                tile_coords(tile, tiles_m, tiles_n, tm, tn);
                if (tm / GROUP > ready) {            // a band the splitter warps write: wait for all of them
                    ready = tm / GROUP;
                    wait_count(&ready_count[ready], all);
                    fence_proxy_async_global();      // their generic stores, before this block's TMA reads
                }
                for (int t = 0; t < KT; ++t, ++it) {
                    const int s = it % STAGES;
                    if (it >= STAGES) mbar_wait(&empty[s], ((it / STAGES) - 1) & 1);
                    unsigned char* st = smem + s * STAGE_BYTES;
                    mbar_arrive_tx(&full[s], STAGE_BYTES);           // the four boxes' bytes
                    tma_load_2d(st, &tmAbig, t * BK, tm * BM, &full[s]);
                    tma_load_2d(st + A_TILE, &tmAsmall, t * BK, tm * BM, &full[s]);
                    tma_load_2d(st + 2 * A_TILE, &tmBbig, t * BK, tn * BN, &full[s]);
                    tma_load_2d(st + 2 * A_TILE + B_TILE, &tmBsmall, t * BK, tn * BN, &full[s]);
                }
            }
        } else if (tid >= 32) {                      // the splitter warps
            const int warp = blockIdx.x * SPLITTERS + tid / 32 - 1;
            for (int b = first_band; b < bands; ++b) {
                split_a_rows(A, a_parts, M, K, pitch, b * BAND_ROWS, min(M, (b + 1) * BAND_ROWS), warp, all);
                count_in(&ready_count[b]);
            }
        }
    } else {                                         // ---- consumers ----
        setmaxnreg_inc<CONSUMER_REGS>();
        const int c = wg - 1;
        // consumer 1 closes its chains half a chunk after consumer 0 (item 4 of the header)
        const int first_chunk = CHUNK_TILES - c * (CHUNK_TILES / 2);
        float chain[BN / 2], sum[BN / 2];
#pragma unroll
        for (int j = 0; j < BN / 2; ++j) chain[j] = 0.f;             // never read: scale-d = 0 starts a chain
        int it = 0;
        for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
            int tm, tn;
            tile_coords(tile, tiles_m, tiles_n, tm, tn);
#pragma unroll
            for (int j = 0; j < BN / 2; ++j) sum[j] = 0.f;

            for (int t0 = 0, len = first_chunk; t0 < KT; t0 += len, len = CHUNK_TILES) {
                const int end = min(t0 + len, KT);
                for (int t = t0; t < end; ++t, ++it) {              // one chain: h4_tf32's K loop
                    const int s = it % STAGES;
                    mbar_wait(&full[s], (it / STAGES) & 1);
                    const uint32_t base = smem_addr(smem + s * STAGE_BYTES);
                    const uint32_t a_big = base + c * 8192, a_small = a_big + A_TILE;
                    const uint32_t b_big = base + 2 * A_TILE, b_small = b_big + B_TILE;
                    wgmma_fence();
#pragma unroll
                    for (int j = 0; j < BK / 8; ++j) {               // 8-deep slices, 32 bytes apart
                        wgmma_tf32<BN>(chain, desc_k_major(a_small + j * 32), desc_k_major(b_big + j * 32),
                                       j > 0 || t > t0);            // scale-d = 0: the chain's first
                        wgmma_tf32<BN>(chain, desc_k_major(a_big + j * 32), desc_k_major(b_small + j * 32), 1);
                        wgmma_tf32<BN>(chain, desc_k_major(a_big + j * 32), desc_k_major(b_big + j * 32), 1);
                    }
                    wgmma_commit();
                    wgmma_wait<1>();                 // slice it-1's wgmmas are done
                    if (t > t0 && tid == 0) mbar_arrive(&empty[(it - 1) % STAGES]);
                }
                wgmma_wait<0>();                     // the whole chain is done: its registers may be read
                if (tid == 0) mbar_arrive(&empty[(it - 1) % STAGES]);   // the chain's last stage
                keep_in_regs(chain);
#pragma unroll
                for (int j = 0; j < BN / 2; ++j) sum[j] += chain[j];     // the promotion: FADD, rounded
            }
            store_acc_64xN<BN>(sum, C, M, N, tm * BM + c * 64, tn * BN, tid);
        }
    }
#endif
}

// The split pass (split_tf32, SplitTile: hopper_ptx.cuh): one SPLIT_TILE x SPLIT_TILE tile per block of
// 32 x 8 threads. Blocks [0, ceil(K/T) ceil(M/T)) split a tile of A in place (same layout, padded
// pitch); the rest split a tile of B and transpose it through a T x (T + 1) shared tile, so that reads
// and writes are coalesced rows (the pad column avoids bank conflicts), as h4_tf32's transpose.
extern "C" __global__ void __launch_bounds__(256)
split_h4_3xtf32(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B,
                float* __restrict__ a_parts, float* __restrict__ bt_parts, int pitch, int a_rows,
                unsigned* __restrict__ ready_count, int bands) {
    constexpr int T = SPLIT_TILE;
    static_assert(2 * T * (T + 1) * sizeof(float) <= 48 * 1024,
                  "SPLIT_TILE: the two shared tiles are static, 48 KB at most");
    using Tile = SplitTile<T>;
    __shared__ float tile_big[T][T + 1], tile_small[T][T + 1];
    const int k_tiles = (K + T - 1) / T, a_blocks = k_tiles * ((a_rows + T - 1) / T);
    int b = blockIdx.x;
    if (b == 0)                                             // the GEMM's band counters, before it starts
#pragma unroll 1
        for (int i = threadIdx.y * 32 + threadIdx.x; i < bands; i += 256) ready_count[i] = 0;
    Tile t;
    if (b < a_blocks) {                                     // A's first a_rows rows: rows m, columns k, both ways
        const int k0 = (b % k_tiles) * T, m0 = (b / k_tiles) * T;
        t.load_split(A, a_rows, K, m0, k0);
        t.store_parts(a_parts, M, pitch, m0, k0);
        return;
    }
    b -= a_blocks;                                          // B (K x N) -> Bt (N x K)
    const int k0 = (b % k_tiles) * T, n0 = (b / k_tiles) * T;
    t.load_split(B, K, N, k0, n0);
#pragma unroll
    for (int i = 0; i < Tile::R; ++i)
#pragma unroll
        for (int j = 0; j < Tile::C; ++j) {
            const int y = threadIdx.y + 8 * i, x = threadIdx.x + 32 * j;     // tile row k0 + y, column n0 + x
            tile_big[y][x] = t.big[i][j];
            tile_small[y][x] = t.small[i][j];
        }
    __syncthreads();
#pragma unroll
    for (int i = 0; i < Tile::R; ++i)
#pragma unroll
        for (int j = 0; j < Tile::C; ++j) {
            const int y = threadIdx.y + 8 * i, x = threadIdx.x + 32 * j;
            const int n = n0 + y, k = k0 + x;                                 // Bt row n, column k
            if (n < N && k < K) {
                bt_parts[(size_t)n * pitch + k] = tile_big[x][y];
                bt_parts[((size_t)N + n) * pitch + k] = tile_small[x][y];
            }
        }
}
