// k8_3xtf32.cu -- lab 7a, k8: FP32 accuracy from the TF32 tensor cores (3xTF32), operands split up front
//
// C = alpha * A * B + beta * C, row-major FP32 in and out, errors at FP32's level (not TF32's).
// Entry points (two kernels, launched one after the other by lab 7a's launch.py, the row's launch hook):
//   tf32gemm_k8_split   the split pass: A and B -> their TF32 big and small parts, in tiles (item 1)
//   tf32gemm_k8_vec     the GEMM on the split tiles; C by float2 (the lab picks it for K, N multiples of 4;
//                       it needs only N even)
//   tf32gemm_k8_scalar  the GEMM on the split tiles, any M, N, K >= 1 (C element by element)
// Launch. 1. split: SPLIT_THREADS threads, grid ((Mp + Np) / SPLIT_TILE, ceil(Kp / SPLIT_TILE)), where
//         Mp, Np, Kp are M, N, K rounded up to BM, BN, BK; it writes 2 Mp Kp floats of A's tiles and
//         2 Np Kp floats of B's tiles into two device buffers that the hook keeps between calls.
//         2. GEMM: as k7: 1-D block of THREADS = (BM/WM)*(BN/WN)*32, grid (ceil(N/BN), ceil(M/BM))
//         remapped in GROUP-row bands, dynamic shared memory SMEM_BYTES; its A and B are those buffers.
//         A call's time (bench, grade) covers both: a library call gets A and B as they are, too.
//
// The idea. A TF32 operand keeps 11 of FP32's 24 significant bits, so one TF32 product is off by up to
// 2^-10 relative. Split each operand into two TF32 numbers, x = big + small: big = tf32(x), and
// small = tf32(x - big) holds the next 11 bits (x - big is exact in FP32). Then
//     a b = big_a big_b + big_a small_b + small_a big_b + small_a small_b   (+ a 2^-23 remainder each)
// and the last product is below 2^-22 |a b|: three TF32 products give a b to about FP32's accuracy.
// Each TF32 x TF32 product has at most 22 significant bits: exact in the tensor core's FP32 sum.
// common/precision.py (fp32_3xtf32) derives the bound the checks use.
//
// What k8 changes in k7:
// 1. The split is a pass of its own, before the GEMM. Split where the fragments are loaded (k8's first
//    form), each element costs 5 ALU instructions (2 FMNMX, IADD3, LOP3, FADD) every time a warp
//    loads it, and 2 or 4 warps load each one: 5.7 instructions per HMMA in the main loop against k7's
//    4.0. Here tf32gemm_k8_split splits every element of A and B once, into global memory, and the
//    GEMM loads big and small parts as plain data: its main loop holds no split instruction at all.
//    The pass reads A and B once and writes twice their size: some 4 % of the GEMM's time at 4096^3,
//    2 % at 8192^3 (an estimate from the bytes it moves).
// 2. The split tiles are laid out for the GEMM's copies. For block row r of A and k-tile kt, one
//    contiguous block of 2 BM BK floats: the BM x BK big parts, then the BM x BK small parts, each row
//    k-contiguous. B the same per block column, but transposed (BN rows of n, each k-contiguous), so
//    that B's fragments come by ldmatrix as A's do: the mma's b0 = B[t][g] is element (g, t) of an
//    8 x 4 block of the transposed tile, which is what ldmatrix gives lane (g, t); one LDSM.x4 loads
//    two n8 fragments (k7 needs 4 LDS for them). The pass pads M, N and K with zeros to whole tiles:
//    the GEMM copies whole blocks with no guard, a thread's 16-byte chunks at constant offsets from one
//    pointer, and a padded k adds 0 x 0 products, as the zero-filled copies of k7 do. The copies are
//    predicated (no branch around them), so that a tile's k8 steps are one basic block and ptxas can
//    load the second step's fragments while the first step's mma run.
// 3. Three mma.sync per (m16, n8) fragment pair and k8 step: small.big and big.small first, then
//    big.big, each pass over the MI accumulators of one B fragment, so that MI consecutive mma are
//    independent. The small products go in before the big one of their step, while the sum they join
//    is smaller by one product: fewer of their bits are shifted out when they are added.
// 4. Promotion. The tensor core adds into its FP32 accumulator by aligning and truncating (not
//    rounding): over a long K the error grows with K, toward zero. So an mma chain runs over KCHUNK of
//    K only, starting from zero; then it is added to a running sum in FP32 registers with FADD (round
//    to nearest) and restarted. The error of a chain stays that of KCHUNK, the FADDs err like FFMA.
// 5. Smaller warp tiles: the running sums double the accumulator registers, so a warp computes
//    64 x 32 (64 chain + 64 running floats per lane) where k7's 64 x 64 would need 256: the block is
//    128 x 128, 8 warps, at most 255 registers each. A stage holds four tiles (A and B, big and small):
//    32 KB at BK = 16, and 3 stages (96 KB, under the 99 KB that sm_86/89/120 allow a block) keep two
//    tiles in flight while one is multiplied. 3 is not a power of two: the stage index wraps by a compare.
// 6. B's fragments a k8 step ahead: k7's item 4 applied here (+12 % on an H100: 69.4 / 71.0 TFLOP/s at
//    4096^3 / 8192^3 against 62.2 / 63.6 before, 1.35x / 1.41x cuBLAS SGEMM; lab NOTES). A step loads
//    the next step's B fragments (big and small) into a second register set while its own HMMAs run,
//    across the tile boundary too: a tile's last step loads its A fragments, waits for the next tile and
//    passes the tile's one barrier, loads the next tile's step-0 B fragments, then runs its HMMAs, and
//    the chain is promoted after them as before. A's fragments are loaded at the top of each step, as in
//    k7. The second set costs registers: the vec entry has 240 (was 224) on sm_80..89, no spills.
// The arithmetic is k8's first form's, to the bit: the same split (split_tf32), the same mma order, the
// same chains of KCHUNK; the tolerance and `make accuracy` apply unchanged. Everything else is k7:
// ldmatrix, swizzled tiles (one swizzle for all four), the cp.async pipeline, the k8 loop unrolled,
// GROUP rasterization, float2 stores. Every FP32 input is split, the largest too; Inf and NaN propagate
// as in FP32 (split_tf32 says how).
//
// SASS to look for. The GEMM's main loop: 3 x (BK/8) x MI x NJ = 96 HMMA.1688.F32.TF32 per tile (48 per
// k8 step), (BK/8) x (2 MI + NJ) = 24 LDSM and no LDS, A_CHUNKS + B_CHUNKS = 8 predicated
// LDGSTS.E.BYPASS.128 at immediate offsets, one BAR.SYNC among the last k8 step's HMMAs (after the
// DEPBAR of the wait) with the next tile's NJ step-0 B LDSM after it (item 6), no FMNMX; the promotion's
// MI x NJ x 4 = 64 FADDs (and the chain's zeroing, CS2R) behind a branch taken once per KCHUNK. About 2.8
// instructions per HMMA in the loop, 1.8 in a tile without promotion (sm_80..90; sm_120 adds a NOP
// between HMMAs).
// STG.E.64 in the vec epilogue; no local memory. The split pass: per element FSETP and FSEL (the clamp's
// limit, 1 for Inf and NaN), its 2 FMNMX, the integer rounding and one FADD, once; LDS/STS of B's
// transpose, one BAR.SYNC.

// BEGIN PARAMETERS
#ifndef BM
#define BM 128      // block tile rows: 2 warp tiles of 64
#endif
#ifndef BN
#define BN 128      // block tile columns: 4 warp tiles of 32
#endif
// BK: 16 = 2 unrolled k8 steps per tile. A stage holds 2 (BM + BN) BK floats (big and small parts):
// BK = 32 would need 64 KB a stage, two stages 128 KB (sm_80 and sm_90 only)
#ifndef BK
#define BK 16       // K depth of one tile: 2 unrolled k8 steps
#endif
#ifndef WM
#define WM 64       // warp tile rows: 4 m16 fragments (two LDSM.x4 each per k8 step: big, small)
#endif
#ifndef WN
#define WN 32       // warp tile columns: 4 n8 fragments (two per LDSM.x4); 64 chain + 64 running accumulators
#endif
#ifndef STAGES
#define STAGES 3    // shared buffers of 32 KB: 96 KB, two tiles in flight while one is multiplied
#endif
#ifndef GROUP
#define GROUP 8     // raster band: 8 block rows are walked column by column, sharing B tiles in L2
#endif
#ifndef MIN_BLOCKS
#define MIN_BLOCKS 1  // blocks per SM the register allocation must allow (__launch_bounds__ 2nd argument)
#endif
// KCHUNK: 24 chained mma per accumulator (3 per k8 step), then 64 FADDs per lane: 1 FADD per 6 HMMA of a
// warp. A numpy model of truncating accumulation (one truncation per mma) puts chains of 128 at 2-4x the
// error of FP32 FFMA at K = 256, chains of 64 at 1-2x, chains of 32 below it; DeepGEMM promotes its FP8
// sums every 128 of K. `make accuracy` measures 64 beside a build whose chain is all of K.
#ifndef KCHUNK
#define KCHUNK 64   // K of one mma chain before it is promoted to the FP32 running sum (a multiple of BK)
#endif

#define THREADS ((BM / WM) * (BN / WN) * 32)
#define SMEM_BYTES (STAGES * 2 * (BM + BN) * BK * sizeof(float))
// the split pass: one SPLIT_TILE x SPLIT_TILE tile of A or B per block, SPLIT_TILE / 8 elements a thread
#define SPLIT_TILE 32
#define SPLIT_THREADS (SPLIT_TILE * 8)
// END PARAMETERS

#define TF32_ROUND 1    // tf32_common.cuh asks; k8 rounds its operands itself (split_tf32), not through it
#include "tf32_common.cuh"

namespace k8 {

// BEGIN PARAMETERS
constexpr int safe_div(int a, int b) { return b > 0 ? a / b : 0; }

constexpr int WARPS_N = safe_div(BN, WN);
constexpr int MI = WM / 16;                     // m16 fragments per warp tile
constexpr int NJ = WN / 8;                      // n8 fragments per warp tile
constexpr int A_TILE = BM * BK;                 // floats of one part (big or small) of an A tile
constexpr int B_TILE = BN * BK;                 // ... of a B tile (BN rows of n, k-contiguous)
constexpr int A_BLOCK = 2 * A_TILE;             // big, then small: one k-tile of a block row, in
constexpr int B_BLOCK = 2 * B_TILE;             // global memory and in a stage alike
constexpr int STAGE = A_BLOCK + B_BLOCK;        // floats per shared buffer
constexpr int GROUPS = BK / 4;                  // float4 groups in a tile row
constexpr int SWZ_DIV = GROUPS >= 8 ? 1 : safe_div(8, GROUPS);   // rows sharing a 128-byte line
constexpr int SWZ_MASK = (GROUPS >= 8 ? 8 : GROUPS) - 1;         // groups permuted within it
constexpr int ROW_STEP = safe_div(THREADS, GROUPS);              // rows between one thread's chunks
constexpr int A_CHUNKS = safe_div(A_BLOCK / 4, THREADS);         // 16-byte copies per thread and tile
constexpr int B_CHUNKS = safe_div(B_BLOCK / 4, THREADS);
constexpr int CHUNK_TILES = safe_div(KCHUNK, BK);                // K-tiles per mma chain

static_assert(BM > 0 && BN > 0 && BK > 0 && WM > 0 && WN > 0 && STAGES > 0 && GROUP > 0,
              "k8: every tile parameter must be positive");
static_assert(BM % WM == 0 && BN % WN == 0, "k8: the block tile must split into whole warp tiles");
static_assert(WM % 16 == 0, "k8: WM must be a multiple of 16, the M of one mma");
static_assert(WN % 16 == 0, "k8: WN must be a multiple of 16: one LDSM.x4 loads two n8 B fragments");
static_assert(THREADS >= 32 && THREADS <= 1024, "k8: (BM/WM)*(BN/WN) warps must be 1..32");
static_assert(BK % 8 == 0, "k8: BK must be a multiple of 8, the K of one mma");
static_assert((GROUPS & (GROUPS - 1)) == 0, "k8: BK must be 8, 16, 32, 64, ...: a power of two (the swizzle XORs group indices)");
static_assert(BM % SPLIT_TILE == 0 && BN % SPLIT_TILE == 0,
              "k8: BM and BN must be multiples of SPLIT_TILE (32): a block of the split pass is all A or all B");
static_assert(STAGES >= 2 && STAGES <= 8, "k8: STAGES must be 2..8 (one buffer is read while the others fill)");
static_assert(A_BLOCK / 4 % THREADS == 0 && B_BLOCK / 4 % THREADS == 0,
              "k8: the float4 groups of a tile's big and small parts must split evenly over THREADS");
static_assert(THREADS % GROUPS == 0 && ROW_STEP % 8 == 0,
              "k8: a thread's chunks must be a multiple of 8 rows apart (same swizzle: constant offsets)");
static_assert(KCHUNK >= BK && KCHUNK % BK == 0, "k8: KCHUNK must be a multiple of BK: chains end at a tile's end");
static_assert(MI * NJ * 4 <= 80, "k8: more than 80 accumulators per lane (twice: chain and running sum) "
              "cannot stay in 255 registers");
static_assert(MIN_BLOCKS >= 1 && MIN_BLOCKS * THREADS <= 2048, "k8: MIN_BLOCKS resident blocks must fit an SM's 2048 threads");
static_assert(SMEM_BYTES <= 227 * 1024, "k8: shared memory above the 227 KB a block may have on sm_90 "
              "(sm_86/89/120: 99 KB; the launcher checks the device)");
// END PARAMETERS

// x -> (big, small) with x = big + small to 2^-23 |x| as the tensor core reads them (common/precision.py
// derives it). big: x rounded to the nearest TF32 (ties away, as cvt.rna) by adding half of TF32's last
// place to FP32's bits and clearing the 13 below it: the integer form of what ptxas emits for cvt.rna on
// sm_80..89, and big's low bits are zero, as x - big must see big's TF32 value. small = x - big is exact
// in FP32 and needs no conversion: the tensor core drops its low 13 bits, and truncating x - big (13
// significant bits at most) to TF32's 11 errs no more than rounding it would (one FP32 ulp of x).
// Inf and NaN: a finite x is clamped to the largest TF32 number, +-(2 - 2^-10) 2^127, so big is finite;
// an Inf or NaN x to +-1 (limit), so big = +-1 and small = x - big is x itself. Every Inf among the
// three products is then an Inf small part times a part of the other operand with that operand's sign:
// Inf as in FP32, or NaN where FP32 gives NaN too (Inf x 0, Inf - Inf). Why 1 and not TF32_MAX: big_inf
// times the other operand's small part (up to 2^-11 of it) would overflow for any operand above about
// 2^11, to an Inf of small's sign, which need not be the operand's: NaN where FP32 gives Inf
// (common/precision.py, tf32_split). (Unclamped, big = Inf and small = NaN; with small = 0 instead,
// Inf x small_b = Inf x 0 = NaN for every b that is a TF32 number already.)
__device__ __forceinline__ void split_tf32(float x, uint32_t& big, uint32_t& small)
{
    const float TF32_MAX = __uint_as_float(0x7F7FE000u);            // (2 - 2^-10) 2^127
    const float limit = fabsf(x) < __uint_as_float(0x7F800000u) ? TF32_MAX : 1.0f;   // Inf, NaN: 1
    const float clamped = fminf(fmaxf(x, -limit), limit);           // a NaN clamps to -limit
    const uint32_t b = (__float_as_uint(clamped) + 0x1000u) & 0xFFFFE000u;
    big = b;
    small = __float_as_uint(x - __uint_as_float(b));
}

// 16 bytes global -> shared as cp_async_16, issued only where ok (a predicated LDGSTS, no branch)
__device__ __forceinline__ void cp_async_16_if(uint32_t dst, const void* src, bool ok)
{
    asm volatile("{\n .reg .pred p;\n setp.ne.b32 p, %2, 0;\n @p cp.async.cg.shared.global [%0], [%1], 16;\n}\n"
                 :: "r"(dst), "l"(src), "r"(static_cast<int>(ok)) : "memory");
}

__device__ __forceinline__ int round_up(int x, int to) { return (x + to - 1) / to * to; }

// Element (r, k) of a tile part (r < BM or BN, k < BK), swizzled as k7's A: float4 group k / 4 of row r
// moves to group (k / 4) ^ ((r / SWZ_DIV) & SWZ_MASK), so that the 8 rows an ldmatrix matrix reads lie
// in 8 different 16-byte bank groups. Both parts of A and B use it (B's rows are its n).
__device__ __forceinline__ int tile_off(int r, int k)
{
    return r * BK + ((((k >> 2) ^ ((r / SWZ_DIV) & SWZ_MASK))) << 2) + (k & 3);
}

// ---------------------------------------------------------------------------------------------------
// The split pass. Row r, column k of an operand (A: row m; B: row n, column k, i.e. B transposed) goes to
// block (r / ROWS) * ktiles + k / BK of 2 ROWS BK floats: big at (r % ROWS) BK + k % BK, small ROWS BK
// floats further (ROWS = BM for A, BN for B). Global memory is not swizzled: the GEMM's copies do that.
template <int ROWS>
__device__ __forceinline__ void store_split(float* __restrict__ out, int r, int k, int ktiles, float x)
{
    uint32_t big, small;
    split_tf32(x, big, small);
    float* p = out + (static_cast<size_t>(r / ROWS) * ktiles + k / BK) * (2 * ROWS * BK) + (r % ROWS) * BK + k % BK;
    p[0] = __uint_as_float(big);
    p[ROWS * BK] = __uint_as_float(small);
}

__device__ __forceinline__ void split_pass(int M, int N, int K, const float* __restrict__ A,
                                           const float* __restrict__ B, float* __restrict__ As,
                                           float* __restrict__ Bs)
{
    __shared__ float t[SPLIT_TILE][SPLIT_TILE + 1];   // B's transpose (+1: conflict-free columns)
    const int Mp = round_up(M, BM), Kp = round_up(K, BK), ktiles = Kp / BK;
    const int tx = threadIdx.x % SPLIT_TILE, ty = threadIdx.x / SPLIT_TILE;
    const int r0 = blockIdx.x * SPLIT_TILE, k0 = blockIdx.y * SPLIT_TILE;
    constexpr int PER_THREAD = SPLIT_TILE * SPLIT_TILE / SPLIT_THREADS;
    if (r0 < Mp) {
        // A: a warp reads 32 consecutive k of row m and writes them to the same row of the blocks
#pragma unroll
        for (int i = 0; i < PER_THREAD; ++i) {
            const int m = r0 + ty + i * (SPLIT_THREADS / SPLIT_TILE), k = k0 + tx;
            const float x = m < M && k < K ? A[static_cast<size_t>(m) * K + k] : 0.0f;   // zero padding
            if (k < Kp) store_split<BM>(As, m, k, ktiles, x);
        }
    } else {
        // B: read 32 consecutive n of row k, write 32 consecutive k of row n (through the shared tile)
        const int n0 = r0 - Mp;
#pragma unroll
        for (int i = 0; i < PER_THREAD; ++i) {
            const int k = k0 + ty + i * (SPLIT_THREADS / SPLIT_TILE), n = n0 + tx;
            t[ty + i * (SPLIT_THREADS / SPLIT_TILE)][tx] = k < K && n < N ? B[static_cast<size_t>(k) * N + n] : 0.0f;
        }
        __syncthreads();                        // the block's branch is uniform: every thread is here
#pragma unroll
        for (int i = 0; i < PER_THREAD; ++i) {
            const int n = n0 + ty + i * (SPLIT_THREADS / SPLIT_TILE), k = k0 + tx;
            if (k < Kp) store_split<BN>(Bs, n, k, ktiles, t[tx][ty + i * (SPLIT_THREADS / SPLIT_TILE)]);
        }
    }
}

// ---------------------------------------------------------------------------------------------------
// The GEMM on the split tiles (As, Bs: what split_pass wrote for this M, N, K).
extern __shared__ __align__(128) float smem[];

template <bool VEC>
__device__ __forceinline__ void body(int M, int N, int K, float alpha, const float* __restrict__ As,
                                     const float* __restrict__ Bs, float beta, float* __restrict__ C)
{
    const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
    const int g = lane / 4, t = lane % 4;
    const int wm0 = (warp / WARPS_N) * WM, wn0 = (warp % WARPS_N) * WN;

    // Rasterization (k5): linear block id -> (block row, block column), GROUP block rows at a time.
    const int grid_n = gridDim.x, grid_m = gridDim.y;
    const int pid = blockIdx.y * grid_n + blockIdx.x;
    const int band = pid / (GROUP * grid_n);
    const int first_m = band * GROUP;
    const int rows = min(grid_m - first_m, GROUP);
    const int in_band = pid - band * GROUP * grid_n;
    const int bm = (first_m + in_band % rows) * BM;
    const int bn = (in_band / rows) * BN;

    const bool inside = bm + BM <= M && bn + BN <= N;
    const int ktiles = (K + BK - 1) / BK;

    // Copies (item 2): a stage is [A big | A small | B big | B small], the blocks of global memory as
    // they are, each row swizzled. Thread tid copies floats 4 tid + 4 i THREADS of a block: always
    // group tid % GROUPS, rows tid / GROUPS + i ROW_STEP, and ROW_STEP is a whole swizzle period, so
    // chunk i lands 16 i THREADS bytes after chunk 0. Source and destination: a pointer + immediates.
    const uint32_t s0 = smem_u32(smem);
    const uint32_t a_dst = s0 + tile_off(tid / GROUPS, (tid % GROUPS) * 4) * sizeof(float);
    const uint32_t b_dst = a_dst + A_BLOCK * sizeof(float);
    const float* a_src = As + static_cast<size_t>(bm / BM) * ktiles * A_BLOCK + 4 * tid;
    const float* b_src = Bs + static_cast<size_t>(bn / BN) * ktiles * B_BLOCK + 4 * tid;

    // Hoisted fragment addresses (k5). A: lane l reads row wm0 + l % 16, group (kk/4 + l/16) ^ swz, and
    // (kk/4 + l/16) ^ swz == (kk/4) ^ a_x with a lane constant a_x. B (n rows, k-contiguous): matrix
    // l / 8 of an LDSM.x4 is rows n + 8 (l / 16), k-group kk/4 + (l / 8) % 2: registers b0, b1 of the
    // n8 fragment at n, then b0, b1 of the one at n + 8.
    const int a_row = wm0 + lane % 16;
    const uint32_t a_lane = s0 + a_row * BK * sizeof(float);
    const int a_x = (lane / 16) ^ ((a_row / SWZ_DIV) & SWZ_MASK);
    const int b_row = wn0 + lane % 8 + 8 * (lane / 16);
    const uint32_t b_lane = s0 + (A_BLOCK + b_row * BK) * sizeof(float);
    const int b_x = ((lane / 8) % 2) ^ ((b_row / SWZ_DIV) & SWZ_MASK);

    float acc[MI][NJ][4] = {};                  // the mma chain of this KCHUNK (from zero)
    float sum[MI][NJ][4] = {};                  // the running FP32 sum the chains are promoted into

    // No guards: the split pass padded every block. The copies are predicated, not branched around
    // (`ok`: there is a tile left to fetch), so that a tile's two k8 steps are one basic block and ptxas
    // can issue the second step's LDSM among the first step's HMMA.
    const float* a_next = a_src;                // the next block to fetch of this block row of A ...
    const float* b_next = b_src;                // ... and of this block column of B
    auto issue = [&](int s, bool ok) {
#pragma unroll
        for (int i = 0; i < A_CHUNKS; ++i)
            cp_async_16_if(a_dst + (s * STAGE + i * 4 * THREADS) * sizeof(float), a_next + i * 4 * THREADS, ok);
#pragma unroll
        for (int i = 0; i < B_CHUNKS; ++i)
            cp_async_16_if(b_dst + (s * STAGE + i * 4 * THREADS) * sizeof(float), b_next + i * 4 * THREADS, ok);
        a_next += A_BLOCK;
        b_next += B_BLOCK;
    };

#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        issue(s, s < ktiles);
        cp_async_commit();
    }

    // The fragments of one k8 step (st: the stage to read, kk: the step's k in the tile), big and small
    // parts. Every offset is a constant once the step loop is unrolled. B: two n8 fragments per LDSM.x4.
    auto load_a = [&](uint32_t (&big)[MI][4], uint32_t (&small)[MI][4], int st, int kk) {
        const uint32_t a_k8 = a_lane + st * STAGE * sizeof(float) + (((kk / 4) ^ a_x) << 4);
#pragma unroll
        for (int i = 0; i < MI; ++i) {
            ldmatrix_x4(big[i], a_k8 + i * 16 * BK * sizeof(float));
            ldmatrix_x4(small[i], a_k8 + (A_TILE + i * 16 * BK) * sizeof(float));
        }
    };
    auto load_b = [&](uint32_t (&big)[NJ / 2][4], uint32_t (&small)[NJ / 2][4], int st, int kk) {
        const uint32_t b_k8 = b_lane + st * STAGE * sizeof(float) + (((kk / 4) ^ b_x) << 4);
#pragma unroll
        for (int jj = 0; jj < NJ / 2; ++jj) {
            ldmatrix_x4(big[jj], b_k8 + jj * 16 * BK * sizeof(float));
            ldmatrix_x4(small[jj], b_k8 + (B_TILE + jj * 16 * BK) * sizeof(float));
        }
    };

    // Main loop: k7's, B fragments a step ahead (item 6). One barrier per tile, at its last k8 step: B(kt)
    // (B(-1) is before the loop). A step loads its A fragments (big, small), then the B fragments (big,
    // small) of the next step into the other register set, then runs its HMMAs; at a tile's last step the
    // next step is step 0 of the next tile, loaded after B(kt). Why one barrier per tile is enough (as k7):
    //  - tile kt's stage is read only between B(kt-1) (its step-0 B fragments are loaded right after
    //    it) and B(kt) (its last A fragments are loaded right before it);
    //  - issue() in tile kt writes tile kt+STAGES-1 into the stage of tile kt-1, after B(kt-1), by
    //    which every warp has read tile kt-1;
    //  - at B(kt) this thread has committed tiles 0 .. kt+STAGES-1 (one group each, in order, empty ones
    //    past the last tile), so wait<STAGES-2> has tiles 0 .. kt+1 landed for it, and B(kt) for every
    //    thread. Hence, when a tile is one k8 step (BK = 8), its copies go out before that wait rather
    //    than behind its HMMAs.
    // Promotion: the B fragments loaded for the next tile are registers apart from the chain; the chain
    // of tile kt still ends with its last step's HMMAs, and is promoted before tile kt+1's first.
    constexpr int STEPS = BK / 8;               // k8 steps per tile: 1 or even (BK is a power of two)
    uint32_t b_big[2][NJ / 2][4], b_small[2][NJ / 2][4];   // B fragments of step s in set s % 2
    int rs = 0, ws = STAGES - 1;                // read and write stage, each wrapping to 0 after STAGES - 1
    cp_async_wait<STAGES - 2>();                // tile 0 has landed (this thread's copies) ...
    __syncthreads();                            // ... everyone's: B(-1)
    load_b(b_big[0], b_small[0], 0, 0);
#pragma unroll 1
    for (int kt = 0; kt < ktiles; ++kt) {
        const int next = rs == STAGES - 1 ? 0 : rs + 1;    // the stage of tile kt+1
        auto copy_ahead = [&] {                 // tile kt+STAGES-1 into the stage of tile kt-1
            issue(ws, kt + STAGES - 1 < ktiles);
            cp_async_commit();
        };
#pragma unroll
        for (int s = 0; s < STEPS; ++s) {       // fully unrolled: set indices and offsets are constants
            const int kk = 8 * s, cur = s % 2, nxt = cur ^ 1;
            uint32_t a_big[MI][4], a_small[MI][4];
            load_a(a_big, a_small, rs, kk);
            if (s + 1 < STEPS) {
                load_b(b_big[nxt], b_small[nxt], rs, kk + 8);
            } else {
                if (STEPS == 1) copy_ahead();   // BK = 8: before the wait (see above)
                cp_async_wait<STAGES - 2>();    // tile kt+1 has landed (this thread's copies) ...
                __syncthreads();                // ... everyone's, and no warp reads tile kt any more: B(kt)
                // The last tile loads too, with no branch (as k7): its own stage again (no copy writes
                // it any more), into registers never used.
                load_b(b_big[nxt], b_small[nxt], kt + 1 < ktiles ? next : rs, 0);
            }
            // for each B fragment three passes over the MI accumulators, the small products first
            // (item 3 above); the MI mma of a pass are independent
#pragma unroll
            for (int j = 0; j < NJ; ++j) {
                const int jj = j / 2, h = j % 2;
                const uint32_t bb[2] = {b_big[cur][jj][2 * h], b_big[cur][jj][2 * h + 1]};
                const uint32_t bs[2] = {b_small[cur][jj][2 * h], b_small[cur][jj][2 * h + 1]};
#pragma unroll
                for (int i = 0; i < MI; ++i) mma_tf32_16x8x8(acc[i][j], a_small[i], bb);
#pragma unroll
                for (int i = 0; i < MI; ++i) mma_tf32_16x8x8(acc[i][j], a_big[i], bs);
#pragma unroll
                for (int i = 0; i < MI; ++i) mma_tf32_16x8x8(acc[i][j], a_big[i], bb);
            }
            if (s == 0 && STEPS > 1) copy_ahead();  // behind the first step's HMMAs (as k7)
        }
        if constexpr (STEPS == 1) {             // BK = 8: the next tile's step 0 went to set 1, move it to 0
#pragma unroll
            for (int jj = 0; jj < NJ / 2; ++jj)
#pragma unroll
                for (int r = 0; r < 4; ++r) {
                    b_big[0][jj][r] = b_big[1][jj][r];
                    b_small[0][jj][r] = b_small[1][jj][r];
                }
        }
        // promotion (item 4 above): the chain ends with every CHUNK_TILES-th tile, and with the last
        if ((kt + 1) % CHUNK_TILES == 0 || kt + 1 == ktiles) {
#pragma unroll
            for (int i = 0; i < MI; ++i)
#pragma unroll
                for (int j = 0; j < NJ; ++j)
#pragma unroll
                    for (int r = 0; r < 4; ++r) {
                        sum[i][j][r] += acc[i][j][r];
                        acc[i][j][r] = 0.0f;
                    }
        }
        rs = next;
        ws = ws == STAGES - 1 ? 0 : ws + 1;
    }

    // Epilogue (k6): the two running sums of a lane that sit side by side in C go out as one float2.
#pragma unroll
    for (int i = 0; i < MI; ++i)
#pragma unroll
        for (int j = 0; j < NJ; ++j)
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const int row = bm + wm0 + i * 16 + g + 8 * h;
                const int col = bn + wn0 + j * 8 + 2 * t;
                float* p = C + row * N + col;
                float2 v = make_float2(alpha * sum[i][j][2 * h], alpha * sum[i][j][2 * h + 1]);
                if constexpr (VEC) {
                    // N % 4 == 0 and col even: col < N means col + 1 < N, and p is 8-byte aligned
                    if (inside || (row < M && col < N)) {
                        if (beta != 0.0f) {
                            const float2 c = *reinterpret_cast<const float2*>(p);
                            v.x += beta * c.x;
                            v.y += beta * c.y;
                        }
                        *reinterpret_cast<float2*>(p) = v;
                    }
                } else {
                    if (row < M && col < N)     p[0] = beta == 0.0f ? v.x : v.x + beta * p[0];
                    if (row < M && col + 1 < N) p[1] = beta == 0.0f ? v.y : v.y + beta * p[1];
                }
            }
}

}  // namespace k8

extern "C" __global__ void __launch_bounds__(SPLIT_THREADS)
tf32gemm_k8_split(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B,
                  float* __restrict__ As, float* __restrict__ Bs)
{
    k8::split_pass(M, N, K, A, B, As, Bs);
}

extern "C" __global__ void __launch_bounds__(THREADS, MIN_BLOCKS)
tf32gemm_k8_vec(int M, int N, int K, float alpha, const float* __restrict__ As,
                const float* __restrict__ Bs, float beta, float* __restrict__ C)
{
    k8::body<true>(M, N, K, alpha, As, Bs, beta, C);
}

extern "C" __global__ void __launch_bounds__(THREADS, MIN_BLOCKS)
tf32gemm_k8_scalar(int M, int N, int K, float alpha, const float* __restrict__ As,
                   const float* __restrict__ Bs, float beta, float* __restrict__ C)
{
    k8::body<false>(M, N, K, alpha, As, Bs, beta, C);
}
