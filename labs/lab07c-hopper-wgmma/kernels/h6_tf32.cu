// h6_tf32.cu: TF32 without h4_tf32's transpose of B: C^T = B^T A^T, with B read into registers.
//
//   C (FP32, M x N) = A (FP32, M x K) . B (FP32, K x N), all row-major; products in TF32 (the tensor
//   core reads the top 19 bits of each FP32 input), FP32 accumulation.
//   Entry point: sgemm_h6_tf32 (int M, int N, int K, const __grid_constant__ CUtensorMap tmA,
//                               const __grid_constant__ CUtensorMap tmB, const __grid_constant__ CUtensorMap tmC)
//   Tensor maps, FP32, CU_TENSOR_MAP_SWIZZLE_128B:
//     tmA: dims (K, M), box (32, BM): A as stored (K contiguous)
//     tmB: dims (N, K), box (32, 32): B as stored (N contiguous), BN / 32 boxes a stage
//     tmC: dims (N, M), box (STORE_COLS, STORE_ROWS) = (32, 64), as h6's
//   Launch:  THREADS = 384, a persistent grid of min(#SMs, tiles) blocks, SMEM_BYTES dynamic. The hook
//            copies B (N % 4) or C (N % 4) through padded scratch buffers when TMA cannot describe them.
//   Shapes:  M, N >= 1; K a multiple of 4 (A's row pitch for TMA). Build: sm_90a only.
//
// The problem h4_tf32 pays for. wgmma's TF32 form reads both operands from shared memory only if they
// are K-major (K contiguous): no transpose bit for 32-bit types. Row-major A is; row-major B (N
// contiguous) is not, so h4_tf32 transposes B on the device before every GEMM: at 4096^3 a pass of
// 128 MB, about 8 % of the call (NOTES.md: 90.6 % of cuBLAS TF32 with it, level without it).
// The way out: wgmma can take its A operand from registers instead, and a register can be loaded
// from any layout. So compute the transposed product, C^T (N x M) = B^T (N x K) . A^T (K x M):
//   * wgmma's A operand is B^T. Each thread loads its 4 values per 8-deep slice from B's tile in
//     shared memory (as TMA wrote it: rows of k, 32 floats of n each, swizzled) with LDS: the
//     fragment layout of hopper_ptx.cuh's wgmma_tf32_rs_n256 asks, per thread, for n = 16 warp +
//     lane / 4 (+ 8) and k = lane % 4 (+ 4).
//   * wgmma's B operand is A^T, 8 x 256 per slice, read by descriptor: "K-major B" means each of its
//     256 columns (our rows m) has its 8 k values contiguous, which is exactly A's tile as TMA loads
//     it. The descriptor is h4_tf32's (desc_k_major).
//   * The accumulators hold C^T: register d[j] of a thread is row n = 16 warp + lane / 4 + 8 ((j/2)%2)
//     of the consumer's 64, column m = 8 (j/4) + 2 (lane % 4) + j % 2 of the block's 256. The epilogue
//     writes each value to its place in C through shared memory (h6's 64 x 32 chunks, TMA stores):
//     the transpose happens on the way out, 4 bytes a value, instead of in a pass over B.
// The price: 16 LDS a thread per 32-deep stage (2-way bank conflicts: rows k and k ^ 1 of the tile
// meet, see tests/test_h6_epilogue.py), and the fragments' registers (two stages' worth, 32).
//
// Tiles and why. One wgmma is m64n256k8: a consumer covers 64 columns n of C and all 256 rows m of
// the block, so BM x BN = 256 x 128 with two consumers (h4_tf32: 128 x 256, the same 128 KB of
// accumulators). BK = 32 floats, one 128-byte swizzle row. A stage: A 256 x 32 (32 KB, one box),
// B 32 x 128 (16 KB, four 32-column boxes): 48 KB, 4 stages. The epilogue: per consumer one pair of
// 8 KB chunks (its two 32-column halves); 4 x 48 + 2 x 16 + 1 = 225 KB. GROUP = 8 tile rows per
// band (8 x 256 rows of A against ~16 x 128 columns of B per wave).
// The fragments are double-buffered across stages: stage it's loads go to buffer it % 2 while
// stage it-1's wgmmas may still read buffer (it-1) % 2; wgmma_wait<1> after each commit means the
// group that read a buffer two stages ago is done before the buffer is loaded again.
//
// What to look for in SASS: HGMMA.64x256x8.F32.TF32 with a register A operand (R..., not a
// descriptor: 4 per stage per consumer), LDS (16 per stage), UTMALDG.2D (1 + BN / 32 per stage),
// in the epilogue STS (one per value, conflict-free), FENCE.VIEW.ASYNC.S, named BAR.SYNC, UTMASTG; no
// STG, no transpose kernel. ptxas must not warn C7509-C7511 (a serialized wgmma: it would mean it
// could not prove the fragment registers are left alone while a wgmma reads them).

#include "hopper_ptx.cuh"

#ifndef BM
#define BM 256      // block tile rows of C = the wgmma's N (m64n256k8)
#endif
#ifndef BN
#define BN 128      // block tile columns of C: 64 (the wgmma's M) for each of the two consumers
#endif
#ifndef STAGES
#define STAGES 4    // stages the producer may run ahead
#endif
#ifndef GROUP
#define GROUP 8     // tile rows per raster band
#endif

#define BK 32       // one 128-byte swizzle row of floats
#define CONSUMERS 2
#define THREADS ((CONSUMERS + 1) * 128)

constexpr int STORE_COLS = 32;                    // a chunk of C: 32 floats wide (one swizzle row)
constexpr int STORE_ROWS = 64;                    // ... and 64 rows high
constexpr int CHUNK_BYTES = STORE_ROWS * STORE_COLS * 4;

#define SMEM_BYTES (STAGES * (BM * BK + BK * BN) * sizeof(float) + CONSUMERS * 2 * CHUNK_BYTES + 1024)

static_assert(BM == 256, "BM is the wgmma's N: 256 (wgmma_tf32_rs_n256)");
static_assert(BN == 64 * CONSUMERS, "each consumer owns 64 columns of C: the wgmma's M");
static_assert(STAGES >= 2, "STAGES >= 2");
static_assert(GROUP >= 1, "GROUP >= 1");
static_assert(SMEM_BYTES <= 232448, "dynamic shared memory at most 227 KB (the stages and the chunk pairs)");

[[maybe_unused]] constexpr int A_TILE = BM * BK * 4;        // 32 KB: 256 rows of 128 bytes
[[maybe_unused]] constexpr int B_PANEL = BK * 32 * 4;       // 4 KB: 32 k rows of 32 floats of n
[[maybe_unused]] constexpr int STAGE_BYTES = A_TILE + BK * BN * 4;
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

// Byte offset, in a swizzled tile of 128-byte rows, of the float at (row, col): piece (col / 4) of the
// row moves to piece (col / 4) ^ (row % 8) (hopper_ptx.cuh, the 128-byte swizzle).
__device__ __forceinline__ uint32_t swizzled(int row, int col) {
    return row * 128 + ((((col >> 2) ^ row) & 7) << 4) + ((col & 3) << 2);
}

// One stage of one consumer: the B^T fragments of its 4 slices into buffer `fr`, then 4 wgmmas.
__device__ __forceinline__ void consume_stage(float (&acc)[128], uint32_t (&fr)[BK / 8][4], uint32_t b_tile,
                                              const uint32_t (&off)[4], uint32_t a_tile) {
#pragma unroll
    for (int j = 0; j < BK / 8; ++j)
#pragma unroll
        for (int v = 0; v < 4; ++v) fr[j][v] = ld_shared_u32(b_tile + j * 8 * 128 + off[v]);
    wgmma_fence();                                   // the fragments (and the accumulators) are written
#pragma unroll
    for (int j = 0; j < BK / 8; ++j)
        wgmma_tf32_rs_n256(acc, fr[j], desc_k_major(a_tile + j * 32), 1);
    wgmma_commit();
}

extern "C" __global__ void __launch_bounds__(THREADS, 1)
sgemm_h6_tf32(int M, int N, int K, const __grid_constant__ CUtensorMap tmA,
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
                    mbar_arrive_tx(&full[s], STAGE_BYTES);
                    tma_load_2d(st, &tmA, t * BK, tm * BM, &full[s]);
#pragma unroll
                    for (int p = 0; p < BN / 32; ++p)
                        tma_load_2d(st + A_TILE + p * B_PANEL, &tmB, tn * BN + p * 32, t * BK, &full[s]);
                }
            }
        }
    } else {                                         // ---- consumers ----
        setmaxnreg_inc<CONSUMER_REGS>();
        const int c = wg - 1;
        const int warp = tid / 32, lane = tid % 32, g = lane / 4, q = lane % 4;
        // This thread's B^T fragment: n = c 64 + 16 warp + g (+ 8), in B panel 2 c + warp / 2 at column
        // 16 (warp % 2) + g (+ 8); k = q (+ 4) of each 8-deep slice. Offsets within a slice's 8 rows:
        const int col = 16 * (warp % 2) + g;
        const uint32_t off[4] = {swizzled(q, col), swizzled(q, col + 8), swizzled(q + 4, col), swizzled(q + 4, col + 8)};
        const uint32_t panel = (2 * c + warp / 2) * B_PANEL;
        unsigned char* pair = smem + STAGES * STAGE_BYTES + c * 2 * CHUNK_BYTES;   // chunks nq = 0, 1
        uint32_t fr[2][BK / 8][4];
        int it = 0;
        for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
            int tm, tn;
            tile_coords(tile, tiles_m, tiles_n, tm, tn);
            float acc[128];
#pragma unroll
            for (int j = 0; j < 128; ++j) acc[j] = 0.f;

            for (int t = 0; t < KT; ++t, ++it) {
                const int s = it % STAGES;
                mbar_wait(&full[s], (it / STAGES) & 1);
                const uint32_t a_tile = smem_addr(smem + s * STAGE_BYTES);
                const uint32_t b_tile = a_tile + A_TILE + panel;
                if (it & 1) consume_stage(acc, fr[1], b_tile, off, a_tile);   // two buffers: see the header
                else        consume_stage(acc, fr[0], b_tile, off, a_tile);
                wgmma_wait<1>();                     // slice it-1's wgmmas are done
                if (t > 0 && tid == 0) mbar_arrive(&empty[(it - 1) % STAGES]);
            }
            wgmma_wait<0>();
            if (tid == 0) mbar_arrive(&empty[(it - 1) % STAGES]);   // the tile's last slice
            keep_in_regs(acc);

            // ---- the epilogue: C^T's values to their places in C, four steps of 64 rows ----
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
                    const int j = 32 * mq + jj;                       // d[j]: row 8 (j / 4) + 2 q + j % 2 of C's 256
                    const int r = 8 * (jj / 4) + 2 * q + (j % 2);     // ... row r of this step's chunk
                    st_shared_f32(smem_addr(mine) + swizzled(r, cc0 + 8 * ((j / 2) % 2)), acc[j]);
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
