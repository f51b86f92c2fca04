// h6_3xtf32.cu: 3xTF32 (FP32 accuracy from TF32 wgmma) on h6_tf32's transposed product: B is split in
// registers, so only A needs a split pass, and that pass no longer transposes anything.
//
//   C (FP32, M x N) = A (FP32, M x K) . B (FP32, K x N), all row-major, with errors at FP32's level
//   (common/precision.py, "fp32_3xtf32", as h4_3xtf32).
//   Entry points:
//     sgemm_h6_3xtf32 (int M, int N, int K, const __grid_constant__ CUtensorMap tmAbig,
//                      const __grid_constant__ CUtensorMap tmAsmall, const __grid_constant__ CUtensorMap tmB,
//                      const __grid_constant__ CUtensorMap tmC)
//     split_h6_3xtf32 (int M, int K, const float* A, float* a_parts, int pitch)
//         a_parts: A_big (M x K, row pitch `pitch` floats), then A_small at a_parts + M pitch
//   Tensor maps, FP32, CU_TENSOR_MAP_SWIZZLE_128B:
//     tmAbig, tmAsmall: dims (K, M), box (32, BM), row pitch `pitch` floats (h4_3xtf32's A maps)
//     tmB: dims (N, K), box (32, 32): B as stored (N contiguous), BN / 32 boxes a stage (h6_tf32's)
//     tmC: dims (N, M), box (STORE_COLS, STORE_ROWS) = (32, 64) (h6's)
//   Launch (the hook, per call, all timed): split_h6_3xtf32 with block (32, 8) on a 1-D grid of
//     ceil(K / T) ceil(M / T) blocks (T = SPLIT_TILE), pitch = K rounded up to 4 floats; then sgemm_h6_3xtf32 with
//     THREADS = 384 on a persistent grid of min(#SMs, tiles) blocks, SMEM_BYTES dynamic. B (N % 4) and
//     C (N % 4, or C not 16-byte aligned) go through h6_tf32's padded scratch buffers.
//   Shapes:  any M, N, K >= 1 (A is read only through its parts, at a padded pitch; B's pitch is N).
//   Build:   sm_90a only.
//
// The idea. h4_3xtf32 splits A and B in a pass of its own before the GEMM: A -> A_big, A_small and
// B -> Bt_big, Bt_small, transposed, because TF32 wgmma reads shared-memory operands K-major only and
// a split B can only be read in its split form. At 4096^3 that pass reads 128 MB and writes 256 MB,
// about 11 % of the call. h6_tf32 showed the way around B's transpose: compute C^T = B^T A^T, with
// wgmma's A operand (B^T) in registers, loaded by LDS from B's tile as TMA wrote it. A value in a
// register can be split there, with no pass at all: each thread loads its raw B fragment and splits
// it with split_tf32 (hopper_ptx.cuh: the same function, the same rounding, as h4_3xtf32's pass, so
// both rungs see the same big and small parts). A stays wgmma's descriptor operand (A^T is K-major
// as TMA loads A), so its two parts must be in shared memory: a split pass for A alone remains, in
// place, without a transpose: 64 MB read and 128 MB written at 4096^3 (192 MB, half of h4_3xtf32's).
//
// What it takes from each:
//   h6_tf32: the producer (TMA of B as stored, four 32-column boxes a stage), the B^T fragment's
//     layout and its swizzled LDS offsets, C^T's epilogue through shared-memory chunks and TMA stores.
//   h4_3xtf32: per 8-deep slice three wgmma into one chain, small.big, big.small, then big.big
//     (here A_small^T with B_big^T, A_big^T with B_small^T, A_big^T with B_big^T), the first of a chain
//     with scale-d = 0; chains of KCHUNK closed by wait_group 0 and added with FADD into FP32 running
//     sums; consumer 1's first chain of each tile half a chunk long, so the two consumers promote at
//     different times.
// Inf and NaN: split_tf32 gives an Inf or NaN x big = +-1 and small = x: an Inf or NaN in B reaches C
// through big(A) . small(B), never as Inf x 0, and no product of finite parts overflows (k8's split).
//
// Tiles and why. 128 chain + 128 running floats a thread do not fit (h6_tf32's m64n256k8 would need
// them), so the wgmma is m64n128k8 (wgmma_tf32_rs_n128): a consumer covers 64 columns n of C and all
// BM = 128 rows m of the block, BN = 128 with two consumers; 64 chain + 64 running floats a thread, as
// h4_3xtf32. BK = 32 floats, one 128-byte swizzle row. A stage: A_big and A_small 128 x 32 (16 KB
// each), B 32 x 128 (16 KB, four boxes) = 48 KB; 4 stages and the epilogue's chunk pairs (2 x 16 KB)
// are 225 KB with the alignment (static_assert below). KCHUNK = 64, GROUP = 8: h4_3xtf32's.
// The fragments. A slice's 3 wgmmas read big (twice) and small, 8 registers; they may not change until
// the slice's group has completed. A whole stage's fragments double-buffered, as h6_tf32 does, would be
// 64 registers beside the 128 sums: more than the consumer can hold. So each slice is its own commit
// group and the buffers alternate by slice (j % 2, static: a stage has an even number of slices):
// wgmma_wait<1> after slice j's commit means slice j-1's group is done before slice j+1 refills its
// buffer. 16 registers; at most two slices (6 wgmma) of a consumer in flight, the other consumer's
// beside them. A stage is released after slice 0 of the next stage has waited (then the whole stage
// is done), or at a chain's end after wait_group 0.
//
// What to look for in SASS (sgemm_h6_3xtf32): HGMMA.64x128x8.F32.TF32 with a register A operand (R...,
// then gdesc), 12 in the stage loop (4 slices x 3), one with the scale-d predicate; LDS, 16 a stage
// (4 slices x 4 values), each followed by its split (FSETP and FSEL for the clamp's limit, then the
// FMNMX pair); WARPGROUP.DEPBAR.LE gsb0, 0x1 after each slice (4) and 0x0 once at a chain's end, then
// the promotion's 64 FADD (the other 16 FADD are the split's x - big, one per fragment value);
// UTMALDG.2D, 6 a stage (A_big, A_small, 4 B boxes; ptxas unrolls the producer: a multiple of 6); in
// the epilogue STS (one per value: 64), FENCE.VIEW.ASYNC.S, named BAR.SYNC (2 a step) and UTMASTG (2
// steps x 2 chunks); no STG; USETMAXREG; no local memory.
// Registers: ptxas fits the whole kernel in __launch_bounds__(384, 1)'s 168 without a spill (64 chain +
// 64 sums + 16 fragments). ptxas must not warn C7509-C7511.
// split_h6_3xtf32 (a thread splits SPLIT_TILE^2 / 256 elements of A): per element FSEL, 2 FMNMX, one FADD,
// one LDG and two STG; no STS or LDS. tests/test_h6_3xtf32.py checks these.

#include "hopper_ptx.cuh"

#ifndef BM
#define BM 128      // block tile rows of C = the wgmma's N (m64n128k8)
#endif
#ifndef BN
#define BN 128      // block tile columns of C: 64 (the wgmma's M) for each of the two consumers
#endif
#ifndef STAGES
#define STAGES 4    // 48 KB a stage
#endif
#ifndef KCHUNK
#define KCHUNK 64   // K of one wgmma chain before it is added to the FP32 running sums (a multiple of BK)
#endif
#ifndef GROUP
#define GROUP 8     // tile rows per raster band
#endif
#ifndef SPLIT_TILE
#define SPLIT_TILE 64   // the split pass's tile: 64 x 64, 16 KB of loads in flight a block (32: 4 KB)
#endif

#define BK 32       // one 128-byte swizzle row of floats
#define CONSUMERS 2
#define THREADS ((CONSUMERS + 1) * 128)

constexpr int STORE_COLS = 32;                    // a chunk of C: 32 floats wide (one swizzle row)
constexpr int STORE_ROWS = 64;                    // ... and 64 rows high
constexpr int CHUNK_BYTES = STORE_ROWS * STORE_COLS * 4;

#define SMEM_BYTES (STAGES * (2 * BM * BK + BK * BN) * sizeof(float) + CONSUMERS * 2 * CHUNK_BYTES + 1024)

static_assert(BM == 128, "BM is the wgmma's N: 128 (wgmma_tf32_rs_n128); 64 chain + 64 running floats a thread");
static_assert(BN == 64 * CONSUMERS, "each consumer owns 64 columns of C: the wgmma's M");
static_assert(BM % STORE_ROWS == 0, "the epilogue stores BM / STORE_ROWS steps of 64 rows");
static_assert((BK / 8) % 2 == 0, "the fragment buffers alternate by slice: an even number of slices a stage");
static_assert(STAGES >= 2, "STAGES >= 2");
static_assert(KCHUNK >= BK && KCHUNK % BK == 0, "KCHUNK must be a multiple of BK: a chain ends at a stage's end");
static_assert(GROUP >= 1, "GROUP >= 1");
static_assert(SMEM_BYTES <= 232448, "dynamic shared memory at most 227 KB (the stages and the chunk pairs)");

[[maybe_unused]] constexpr int A_TILE = BM * BK * 4;        // 16 KB: one A part (big or small)
[[maybe_unused]] constexpr int B_PANEL = BK * 32 * 4;       // 4 KB: 32 k rows of 32 floats of n
[[maybe_unused]] constexpr int STAGE_BYTES = 2 * A_TILE + BK * BN * 4;
[[maybe_unused]] constexpr int CHUNK_TILES = KCHUNK / BK;   // stages per chain
[[maybe_unused]] constexpr int CONSUMER_REGS = 232;
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

// Byte offset, in a swizzled tile of 128-byte rows, of the float at (row, col) (h6_tf32's).
__device__ __forceinline__ uint32_t swizzled(int row, int col) {
    return row * 128 + ((((col >> 2) ^ row) & 7) << 4) + ((col & 3) << 2);
}

// One 8-deep slice of one consumer: its B^T fragment (4 values at b_rows + off[v]) split into `big` and
// `small`, then the slice's three wgmmas into the chain, committed as one group.
__device__ __forceinline__ void consume_slice(float (&chain)[BM / 2], uint32_t (&big)[4], uint32_t (&small)[4],
                                              uint32_t b_rows, const uint32_t (&off)[4], uint32_t a_big,
                                              uint32_t a_small, int scale_d) {
#pragma unroll
    for (int v = 0; v < 4; ++v) {
        float b, s;
        split_tf32(__uint_as_float(ld_shared_u32(b_rows + off[v])), b, s);
        big[v] = __float_as_uint(b);
        small[v] = __float_as_uint(s);
    }
    wgmma_fence();                                   // the fragments (and the chain) are written
    wgmma_tf32_rs_n128(chain, big, desc_k_major(a_small), scale_d);   // small(A) . big(B): D = or +=
    wgmma_tf32_rs_n128(chain, small, desc_k_major(a_big), 1);         // big(A) . small(B)
    wgmma_tf32_rs_n128(chain, big, desc_k_major(a_big), 1);           // big(A) . big(B)
    wgmma_commit();
}

extern "C" __global__ void __launch_bounds__(THREADS, 1)
sgemm_h6_3xtf32(int M, int N, int K, const __grid_constant__ CUtensorMap tmAbig,
                const __grid_constant__ CUtensorMap tmAsmall, const __grid_constant__ CUtensorMap tmB,
                const __grid_constant__ CUtensorMap tmC) {
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
        if (tid == 0) {
            int it = 0;                              // K slices issued since the block started
            for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
                int tm, tn;
                tile_coords(tile, tiles_m, tiles_n, tm, tn);
                for (int t = 0; t < KT; ++t, ++it) {
                    const int s = it % STAGES;
                    if (it >= STAGES) mbar_wait(&empty[s], ((it / STAGES) - 1) & 1);
                    unsigned char* st = smem + s * STAGE_BYTES;
                    mbar_arrive_tx(&full[s], STAGE_BYTES);           // A_big, A_small and B's boxes
                    tma_load_2d(st, &tmAbig, t * BK, tm * BM, &full[s]);
                    tma_load_2d(st + A_TILE, &tmAsmall, t * BK, tm * BM, &full[s]);
#pragma unroll
                    for (int p = 0; p < BN / 32; ++p)
                        tma_load_2d(st + 2 * A_TILE + p * B_PANEL, &tmB, tn * BN + p * 32, t * BK, &full[s]);
                }
            }
        }
    } else {                                         // ---- consumers ----
        setmaxnreg_inc<CONSUMER_REGS>();
        const int c = wg - 1;
        const int warp = tid / 32, lane = tid % 32, g = lane / 4, q = lane % 4;
        // This thread's B^T fragment (h6_tf32's): n = c 64 + 16 warp + g (+ 8), in B panel 2 c + warp / 2
        // at column 16 (warp % 2) + g (+ 8); k = q (+ 4) of each 8-deep slice.
        const int col = 16 * (warp % 2) + g;
        const uint32_t off[4] = {swizzled(q, col), swizzled(q, col + 8), swizzled(q + 4, col), swizzled(q + 4, col + 8)};
        const uint32_t panel = (2 * c + warp / 2) * B_PANEL;
        // consumer 1 closes its chains half a chunk after consumer 0 (h4_3xtf32's item 4)
        const int first_chunk = CHUNK_TILES - c * (CHUNK_TILES / 2);
        unsigned char* pair = smem + STAGES * STAGE_BYTES + c * 2 * CHUNK_BYTES;   // chunks nq = 0, 1
        float chain[BM / 2], sum[BM / 2];
        uint32_t big[2][4], small[2][4];             // slice j's fragments in buffer j % 2
#pragma unroll
        for (int j = 0; j < BM / 2; ++j) chain[j] = 0.f;             // never read: scale-d = 0 starts a chain
        int it = 0;
        for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
            int tm, tn;
            tile_coords(tile, tiles_m, tiles_n, tm, tn);
#pragma unroll
            for (int j = 0; j < BM / 2; ++j) sum[j] = 0.f;

            for (int t0 = 0, len = first_chunk; t0 < KT; t0 += len, len = CHUNK_TILES) {
                const int end = min(t0 + len, KT);
                for (int t = t0; t < end; ++t, ++it) {              // one chain
                    const int s = it % STAGES;
                    mbar_wait(&full[s], (it / STAGES) & 1);
                    const uint32_t a_big = smem_addr(smem + s * STAGE_BYTES), a_small = a_big + A_TILE;
                    const uint32_t b_tile = a_big + 2 * A_TILE + panel;
#pragma unroll
                    for (int j = 0; j < BK / 8; ++j) {               // 8-deep slices: B rows 8 j.., A 32 j bytes in
                        consume_slice(chain, big[j % 2], small[j % 2], b_tile + j * 8 * 128, off,
                                      a_big + j * 32, a_small + j * 32, j > 0 || t > t0);
                        wgmma_wait<1>();             // slice j-1's group is done: its buffer may be refilled
                        if (j == 0 && t > t0 && tid == 0) mbar_arrive(&empty[(it - 1) % STAGES]);
                    }
                }
                wgmma_wait<0>();                     // the whole chain is done: its registers may be read
                if (tid == 0) mbar_arrive(&empty[(it - 1) % STAGES]);   // the chain's last stage
                keep_in_regs(chain);
#pragma unroll
                for (int j = 0; j < BM / 2; ++j) sum[j] += chain[j];     // the promotion: FADD, rounded
            }

            // ---- the epilogue (h6_tf32's): C^T's values to their places in C, BM / 64 steps of 64 rows ----
            // Warps 0, 1 hold columns 0..31 of the consumer's 64 (chunk nq = 0), warps 2, 3 columns
            // 32..63 (nq = 1): each step fills both chunks of the pair, one per half of the warpgroup.
            unsigned char* mine = pair + (warp / 2) * CHUNK_BYTES;
            const int cc0 = 16 * (warp % 2) + g;                    // column in the chunk (+ 8: h)
#pragma unroll
            for (int mq = 0; mq < BM / STORE_ROWS; ++mq) {
                if (tid == 0) bulk_wait_read<0>();   // the last step's two stores are done reading the pair
                named_bar_sync(1 + c, 128);
#pragma unroll
                for (int jj = 0; jj < 32; ++jj) {
                    const int j = 32 * mq + jj;                       // sum[j]: row 8 (j / 4) + 2 q + j % 2 of C's BM
                    const int r = 8 * (jj / 4) + 2 * q + (j % 2);     // ... row r of this step's chunk
                    st_shared_f32(smem_addr(mine) + swizzled(r, cc0 + 8 * ((j / 2) % 2)), sum[j]);
                }
                fence_proxy_async();
                named_bar_sync(1 + c, 128);
                if (tid == 0) {
                    const int row0 = tm * BM + mq * STORE_ROWS;
#pragma unroll
                    for (int nq = 0; nq < 2; ++nq) {
                        const int col0 = tn * BN + c * 64 + nq * STORE_COLS;
                        if (row0 < M && col0 < N) tma_store_2d(&tmC, col0, row0, pair + nq * CHUNK_BYTES);
                    }
                    bulk_commit();
                }
            }
        }
        if (tid == 0) bulk_wait<0>();                // every store finished before the block exits
    }
#endif
}

// The split pass, A only: one SPLIT_TILE x SPLIT_TILE tile of A per block of 32 x 8 threads, A -> A_big,
// A_small in place (rows m, columns k; padded pitch), split_tf32 and SplitTile as h4_3xtf32's pass. Rows
// of 32 consecutive k per warp: coalesced reads and writes, no shared memory (nothing is transposed).
extern "C" __global__ void __launch_bounds__(256)
split_h6_3xtf32(int M, int K, const float* __restrict__ A, float* __restrict__ a_parts, int pitch) {
    using Tile = SplitTile<SPLIT_TILE>;
    const int k_tiles = (K + SPLIT_TILE - 1) / SPLIT_TILE;
    const int k0 = (blockIdx.x % k_tiles) * SPLIT_TILE, m0 = (blockIdx.x / k_tiles) * SPLIT_TILE;
    Tile t;
    t.load_split(A, M, K, m0, k0);
    t.store_parts(a_parts, M, pitch, m0, k0);
}
