// v8_pipelined.cuh -- lab 7, v8: v7 plus a cp.async pipeline, register double buffering, a swizzled
// shared layout, block rasterization and an alpha/beta epilogue (chapter 8, section 8).
// This header is the kernel: its parameters, their rules and its body. v8_pipelined.cu holds v8's two
// entry points; lab 7d's split-K (splitk_v8.cu) runs the same body on a range of K, which is why the
// body takes the range's length K and A's row stride lda apart (v8's entry points pass lda = K).
//
// C = alpha * A * B + beta * C, row-major FP32, A is M x K, B is K x N, any M, N, K >= 1; with
// beta == 0, C is never read (it may hold NaN).
//
// What v8 adds over v7:
// 1. A STAGES-deep cp.async pipeline: tiles t+1 .. t+STAGES-1 travel global -> shared, without
//    passing through registers, while tile t is computed; one wait_group + barrier per tile. A 16-byte
//    copy cannot transpose, so A (stored As[k][m], as in v7) is copied 4 bytes at a time (cuBLAS's
//    own SGEMM does the same); B in 16-byte chunks (sgemm_v8_vec) or 4-byte ones (sgemm_v8_scalar).
// 2. Register double buffering: the operands of step k+1 load while step k's FFMAs run, across the
//    tile boundary too.
// 3. An XOR swizzle of As: chunk c (4 floats) of row k is stored at chunk c ^ (k % 8). A warp's copy
//    (8 consecutive k of 4 rows) then covers 32 banks instead of 8, and the LDS.128 reads, which walk
//    an aligned group of 8 chunks, stay conflict-free. Bs needs no swizzle.
// 4. Rasterization (GROUP): the block number walks GROUP block rows down before one column right, so
//    the blocks resident together share their A and B panels in L2. GROUP = 1 is launch order.
// 5. A fast loop: the tiles whose copy target is a whole interior tile run in a loop of their own with
//    unchecked copies, one basic block per tile, so ptxas schedules the LDGSTS among the FFMA.
// 6. Addresses in bytes: A's eight read offsets (one per k % 8) are byte offsets, so each LDS.128 is
//    [offset + stage base + immediate], with no shift-and-add per step.
// The FFMAs of a step go down the rows for column j and back up for column j + 1, so consecutive
// FFMAs share an A register (operand reuse, fewer register-bank conflicts). MAXREG > 0, a tuning
// parameter, caps the registers with __maxnreg__ instead of __launch_bounds__.
//
// Tiles (defaults: the H200 tuning's best): a 128 x 256 block, BK = 8, 2 x 4 warps of 64 x 64 (256
// threads); a lane owns 8 x 16 outputs: TM = 8 rows in two groups of 4, 32 rows apart, and WNITER = 4
// strips of TN = 4 columns. 128 accumulators: one block of 8 warps per SM. STAGES = 3: 36 KB.
//
// What to look for in SASS, per BK = 8 tile, in each of the two main loops (the fast one has no BRA
// but its back edge): 1024 FFMA; 48 LDS.128 (2 of A + 4 of B per k), no scalar LDS and no STS;
// 4 LDGSTS.E (A) and 2 LDGSTS.E.BYPASS.128 (B, vec) or 8 LDGSTS.E (B, scalar); LDGDEPBAR, DEPBAR.LE
// SB0, 0x1 (wait_group(STAGES - 2)); one BAR.SYNC; no LDL/STL. Epilogue: LDG.E.128 and STG.E.128 (vec).
// The `@!PT LDS RZ, [RZ]` before each group of LDGSTS are never-executed placeholders, not loads.
#pragma once

#include <cstdint>
#include <type_traits>

// BEGIN PARAMETERS
// ---- tile parameters (chapter names) -----------------------------------------------------------

#ifndef BM
#define BM 128      // block tile rows: 2 warp tiles of WM = 64; As rows of 128 floats start at bank 0
#endif
#ifndef BN
#define BN 256      // block tile columns: 4 warp tiles of WN = 64; each A value feeds 4 warps
#endif
#ifndef BK
#define BK 8        // K-slice per tile: a multiple of 8 (8 lanes copy 8 consecutive k of one A row)
#endif
#ifndef WM
#define WM 64       // warp tile rows: 8 lane rows x TM; a square warp tile minimizes reads per k
#endif
#ifndef WN
#define WN 64       // warp tile columns: WNITER strips of 16
#endif
#ifndef WNITER
#define WNITER 4    // strips per warp tile: 4 lane columns x TN = 16 columns each
#endif
#ifndef TM
#define TM 8        // thread tile rows: two LDS.128 of As row k, 32 rows apart
#endif
#ifndef TN
#define TN 4        // thread tile columns per strip: one LDS.128 of Bs row k per strip
#endif
#ifndef STAGES
#define STAGES 3    // shared buffers: 2 tiles in flight while one is computed; 36 KB per block
#endif
#ifndef GROUP
#define GROUP 8     // block rows walked together by the rasterization; 1 = launch order (off)
#endif
// What bounds v8 (make bounds KERNEL=v8): builds that leave part of the work out; their results are
// WRONG by design, only their times mean something. 0: the kernel. 1: no copies after the prologue.
// 3: no copies and no barrier either. (No "no FFMA" build yet: ptxas deletes shared loads nobody reads;
// t4's and lab 7a's k7's no-math probes keep theirs by XORing the loaded values into C.)
#ifndef V8_PROBE
#define V8_PROBE 0
#endif
#ifndef MAXREG
#define MAXREG 0    // > 0: __maxnreg__(MAXREG) instead of __launch_bounds__: ptxas allocates under a cap
#endif

#define THREADS ((BM / WM) * (BN / WN) * 32)                                   // threads per block
#define SMEM_BYTES (STAGES * (BK * BM + BK * BN) * sizeof(float))            // dynamic, bytes

// Safe division for derived constants, so that a bad -D set fails on a static_assert message below
// rather than on "division by zero in constant expression".
constexpr int v8_div(int a, int b) { return b > 0 ? a / b : 0; }

constexpr int WARPS_N = v8_div(BN, WN);        // warpRow = warp / WARPS_N, warpCol = warp % WARPS_N
constexpr int WSUBN = v8_div(WN, WNITER);      // 16 columns per strip
constexpr int LANES_N = v8_div(WSUBN, TN);     // 4 lanes across a strip (lane % 4)
constexpr int LANES_M = v8_div(32, LANES_N);   // 8 lanes down the warp tile (lane / 4)
constexpr int A_LD = BM;                       // row length of As (floats)
constexpr int A_STAGE = BK * A_LD;             // floats per A buffer
constexpr int B_STAGE = BK * BN;               // floats per B buffer
constexpr int A_WARPS = THREADS / 32;          // warps of the block (each copies whole chunks of A)
constexpr int A_CPER = v8_div(8, A_WARPS);      // chunks of one group of 8 a warp copies (1 with 8 warps)
constexpr int A_GROUPS8 = BM / 32;             // groups of 8 chunks (32 rows) down the A tile
constexpr int A_PER_THREAD = v8_div(BM * BK, THREADS);     // 4-byte copies of A per thread per tile
constexpr int B_S_COLW = BN < THREADS ? BN : THREADS;      // scalar B copy: threads across a row
constexpr int B_S_COLS = v8_div(BN, B_S_COLW);             // copies across a row per thread
constexpr int B_S_ROW_STEP = v8_div(THREADS, B_S_COLW);    // Bs rows between a thread's copies
constexpr int B_CHUNKS_PER_ROW = BN / 4;                   // 16-byte chunks in a Bs row
constexpr int B_VEC_PER_THREAD = v8_div(BK * BN / 4, THREADS);   // 16-byte copies of B per thread
constexpr int B_VEC_ROW_STEP = v8_div(THREADS, B_CHUNKS_PER_ROW);  // Bs rows between them
constexpr int B_SCALAR_PER_THREAD = v8_div(BK * BN, THREADS);      // 4-byte copies (scalar entry)

static_assert(BM > 0 && BN > 0 && BK > 0 && WM > 0 && WN > 0 && WNITER > 0 && TM > 0 && TN > 0,
              "v8: every tile parameter must be positive");
static_assert(BM % WM == 0 && BN % WN == 0, "v8: the block tile (BM x BN) must split into whole warp tiles (WM x WN)");
static_assert(THREADS <= 1024, "v8: (BM/WM)*(BN/WN) warps must fit in one block (at most 32 warps)");
static_assert(WN % WNITER == 0, "v8: WN must split into WNITER strips of equal width");
static_assert(WSUBN % TN == 0, "v8: a strip (WN/WNITER columns) must split into lane columns of TN");
static_assert(LANES_N >= 1 && 32 % LANES_N == 0, "v8: lanes across a strip (WN/WNITER/TN) must divide 32");
static_assert(WM == TM * LANES_M, "v8: WM must equal TM * (32 / (WN/WNITER/TN)): the 32 lanes must cover the warp tile exactly once");
static_assert(TM % 4 == 0 && TN % 4 == 0, "v8: TM and TN must be multiples of 4 (operands are read with LDS.128)");
static_assert(LANES_M % 8 == 0, "v8: at least 8 lane rows (WN/WNITER/TN <= 4), so that one A read covers whole groups of 8 chunks that the XOR permutes among themselves");
static_assert(BM % 32 == 0, "v8: BM must be a multiple of 32 (As rows start at bank 0 and hold whole groups of 8 chunks for the XOR)");
static_assert(BK % 8 == 0, "v8: BK must be a multiple of 8 (8 lanes copy 8 consecutive k of one A row)");
static_assert(BN % 4 == 0, "v8: BN must be a multiple of 4 (B is copied in 16-byte chunks)");
static_assert(THREADS <= 256 && 8 % (THREADS / 32) == 0, "v8: 1, 2, 4 or 8 warps (each warp copies whole chunks of one group of 8 chunks of A)");
static_assert(BN % THREADS == 0 || THREADS % BN == 0, "v8: BN and THREADS must divide one another (the scalar B copy walks whole rows)");
static_assert((BM * BK) % THREADS == 0, "v8: THREADS must divide BM*BK (each thread copies the same number of A elements)");
static_assert((BK * BN / 4) % THREADS == 0, "v8: THREADS must divide BK*BN/4 (each thread copies the same number of B chunks)");
static_assert(THREADS % B_CHUNKS_PER_ROW == 0, "v8: THREADS must be a multiple of BN/4 (a thread's B chunks share one column)");
static_assert(STAGES >= 2 && STAGES <= 8, "v8: STAGES must be 2..8 (one buffer computed on, at least one being filled)");
static_assert(GROUP >= 1, "v8: GROUP (block rows per raster group) must be at least 1");
static_assert(MAXREG == 0 || (MAXREG >= 128 && MAXREG <= 255), "v8: MAXREG is 0 (no cap) or a register cap of 128..255");
static_assert(TM * WNITER * TN + 2 * (TM + WNITER * TN) <= 224,
              "v8: accumulators plus two operand sets must leave room for addresses in 255 registers");
static_assert(SMEM_BYTES <= 227 * 1024,
              "v8: STAGES x (BK*BM + BK*BN) floats exceed 227 KB, the most a block may use "
              "(sm_86/89/120 give 99 KB; the launcher checks the device)");
// END PARAMETERS

// ---- cp.async (PTX), 4 and 16 bytes, zero-filling when the source does not exist ---------------

__device__ __forceinline__ uint32_t smem_addr(const void* p)
{
    return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// 4-byte copy through L1 (cp.async.cg takes only 16). src_bytes 0: reads nothing, writes 0.
__device__ __forceinline__ void cp_async_4(uint32_t dst, const float* src, bool valid)
{
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n"
                 :: "r"(dst), "l"(src), "r"(valid ? 4 : 0) : "memory");
}

// 16-byte copy bypassing L1 (each chunk is used once per block).
__device__ __forceinline__ void cp_async_16(uint32_t dst, const float* src, bool valid)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n"
                 :: "r"(dst), "l"(src), "r"(valid ? 16 : 0) : "memory");
}

__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }

template <int N_PENDING>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" :: "n"(N_PENDING) : "memory"); }

// ---- the kernel body, shared by both entry points ----------------------------------------------

// K is the length of the product this block computes; lda is the distance between A's rows (K for
// the whole GEMM that v8's entry points run). They differ only when a caller hands the body a range
// of a longer K: lab 7d's split-K (splitk_v8.cu) passes A + k0, B + k0 * N, the range's length and
// the full K as lda. Nothing else changes: B's and C's rows are N apart either way.
template <bool VEC>
__device__ __forceinline__ void sgemm_v8_body(int M, int N, int K, int lda, float alpha,
                                              const float* __restrict__ A, const float* __restrict__ B,
                                              float beta, float* __restrict__ C)
{
    extern __shared__ __align__(16) float smem[];
    float* const As = smem;                       // STAGES x [BK][A_LD], transposed, swizzled
    float* const Bs = smem + STAGES * A_STAGE;    // STAGES x [BK][BN]

    // Rasterization: the linear block number walks GROUP block rows down, then one column right.
    int bRow = blockIdx.y, bCol = blockIdx.x;
    if constexpr (GROUP > 1) {
        const int pid = blockIdx.y * gridDim.x + blockIdx.x;
        const int perGroup = GROUP * gridDim.x;                  // blocks in one raster group
        const int firstRow = (pid / perGroup) * GROUP;
        const int rows = min(static_cast<int>(gridDim.y) - firstRow, GROUP);   // last group may be short
        const int r = pid % perGroup;
        bRow = firstRow + r % rows;
        bCol = r / rows;
    }
    const int cRow = bRow * BM;
    const int cCol = bCol * BN;
    const int tid = threadIdx.x;

    // Compute mapping (v7's, with a thread's TM rows in TM/4 groups of 4, LANES_M*4 rows apart).
    const int warp = tid / 32, lane = tid % 32;
    const int warpRow = warp / WARPS_N;
    const int warpCol = warp % WARPS_N;
    const int tRow = lane / LANES_N;              // v7's lane layout: row = lane / 4, column = lane % 4
    const int tCol = lane % LANES_N;
    const int mOff = warpRow * WM + tRow * 4;     // first row of group 0; group i adds i*LANES_M*4
    const int nOff = warpCol * WN + tCol * TN;    // first column of strip 0; strip w adds w*WSUBN
    const int aChunk = mOff / 4;                  // As chunk of group 0 (before the XOR)

    // Copy mapping of A (3. in the header). A warp copies one chunk (4 rows) x 8 consecutive k
    // per instruction: lane % 8 is k, lane / 8 the row within the chunk. Copy j of this thread is
    // row aM + 32 g + 4 A_WARPS c, k = 8 kh + aK (c, g, kh: constants of j after unrolling), so a
    // thread's source addresses differ by multiples of lda (one IMAD.WIDE each) and its shared
    // offsets by immediates plus one register per c.
    const int aK = tid % 8, aM = tid / 8;
    int aDstOff[A_CPER];                          // As element offset of copy c (k = aK, g = kh = 0)
#pragma unroll
    for (int c = 0; c < A_CPER; ++c) {
        const int l = warp + A_WARPS * c;         // chunk within its group of 8 (low 3 bits)
        aDstOff[c] = aK * A_LD + 4 * (l ^ aK) + lane / 8;
    }
    // Copy mapping of B (vec): chunk column bC, rows bK + j * B_VEC_ROW_STEP.
    const int bK = tid / B_CHUNKS_PER_ROW, bC = (tid % B_CHUNKS_PER_ROW) * 4;
    // Copy mapping of B (scalar): column bN + (j % B_S_COLS) * THREADS, row bKs + (j / B_S_COLS) * B_S_ROW_STEP.
    const int bN = tid % B_S_COLW, bKs = tid / B_S_COLW;

    const bool blockInside = cRow + BM <= M && cCol + BN <= N;
    const float* const gA = A + static_cast<size_t>(cRow + aM) * lda + aK;   // copy 0 of A, k0 = 0
    const float* const gBv = B + static_cast<size_t>(bK) * N + cCol + bC;  // copy 0 of B (vec)
    const float* const gBs = B + static_cast<size_t>(bKs) * N + cCol + bN; // copy 0 of B (scalar)
    const int aRowsLeft = M - cRow - aM;          // copy j of A exists if its row offset is below
    const uint32_t sA = smem_addr(As), sB = smem_addr(Bs);

    // Issue the copies of the tile starting at k0 into buffer s. CHECKED = false: wholly inside.
    auto issueTile = [&](int s, int k0, auto checked) {
        constexpr bool CHECKED = decltype(checked)::value;
        const uint32_t aDst = sA + s * (A_STAGE * 4);
        const uint32_t bDst = sB + s * (B_STAGE * 4);
        const float* const pA = gA + k0;
#pragma unroll
        for (int j = 0; j < A_PER_THREAD; ++j) {
            const int c = j % A_CPER, g = (j / A_CPER) % A_GROUPS8, kh = j / (A_CPER * A_GROUPS8);
            const int dm = 32 * g + 4 * A_WARPS * c;   // row offset from aM
            const float* src = pA + static_cast<size_t>(dm) * lda + 8 * kh;
            const uint32_t dst = aDst + 4 * (aDstOff[c] + 8 * kh * A_LD + 32 * g);
            if constexpr (CHECKED) {
                const bool ok = dm < aRowsLeft && k0 + 8 * kh + aK < K;
                cp_async_4(dst, ok ? src : A, ok);
            } else {
                cp_async_4(dst, src, true);
            }
        }
        if constexpr (VEC) {
            const float* const pB = gBv + static_cast<size_t>(k0) * N;
#pragma unroll
            for (int j = 0; j < B_VEC_PER_THREAD; ++j) {
                const int k = bK + j * B_VEC_ROW_STEP;
                const float* src = pB + static_cast<size_t>(j * B_VEC_ROW_STEP) * N;
                const uint32_t dst = bDst + 4 * (k * BN + bC);
                if constexpr (CHECKED) {
                    const bool ok = k0 + k < K && cCol + bC < N;   // N % 4 == 0: all 4 or none
                    cp_async_16(dst, ok ? src : B, ok);
                } else {
                    cp_async_16(dst, src, true);
                }
            }
        } else {
            const float* const pB = gBs + static_cast<size_t>(k0) * N;
#pragma unroll
            for (int j = 0; j < B_SCALAR_PER_THREAD; ++j) {
                const int dn = (j % B_S_COLS) * THREADS, dk = (j / B_S_COLS) * B_S_ROW_STEP;
                const float* src = pB + static_cast<size_t>(dk) * N + dn;
                const uint32_t dst = bDst + 4 * ((bKs + dk) * BN + bN + dn);
                if constexpr (CHECKED) {
                    const bool ok = k0 + bKs + dk < K && cCol + bN + dn < N;
                    cp_async_4(dst, ok ? src : B, ok);
                } else {
                    cp_async_4(dst, src, true);
                }
            }
        }
    };
    auto issue = [&](int s, int k0) {
        if (blockInside && k0 + BK <= K)          // uniform across the block
            issueTile(s, k0, std::false_type{});
        else
            issueTile(s, k0, std::true_type{});
    };

    float acc[TM][WNITER * TN] = {};              // 128 accumulators
    float regM[2][TM], regN[2][WNITER * TN];      // two operand sets: step k's, step k+1's

    // The byte offset of this thread's A chunk at each k % 8 (the XOR makes eight of them): kept in
    // bytes, so that each read is [offset + stage base + immediate] (an LDS address of its own)
    // rather than a shift-and-add (LEA) per step on a float index.
    int aReadByte[8];
#pragma unroll
    for (int x = 0; x < 8; ++x) aReadByte[x] = 16 * (aChunk ^ x);

    // Operands of step k from buffer pointers (a, b) into set d: TM/4 + WNITER*TN/4 LDS.128.
    auto loadOperands = [&](int d, const float* a, const float* b, int k) {
        const char* const ak = reinterpret_cast<const char*>(a) + aReadByte[k & 7];
#pragma unroll
        for (int i = 0; i < TM / 4; ++i) {
            // group i is LANES_M chunks further on; LANES_M % 8 == 0 keeps it clear of the XOR bits
            const float4 v = *reinterpret_cast<const float4*>(ak + 4 * (k * A_LD + i * LANES_M * 4));
            regM[d][4 * i] = v.x; regM[d][4 * i + 1] = v.y; regM[d][4 * i + 2] = v.z; regM[d][4 * i + 3] = v.w;
        }
#pragma unroll
        for (int w = 0; w < WNITER; ++w)
#pragma unroll
            for (int j = 0; j < TN; j += 4) {
                const float4 v = *reinterpret_cast<const float4*>(b + k * BN + nOff + w * WSUBN + j);
                regN[d][w * TN + j] = v.x;     regN[d][w * TN + j + 1] = v.y;
                regN[d][w * TN + j + 2] = v.z; regN[d][w * TN + j + 3] = v.w;
            }
    };

    // One step: TM x WNITER*TN FFMA, column by column, the rows down for column j and back up for
    // column j + 1: consecutive FFMAs share an A register (the order only changes what ptxas makes).
    auto outerProduct = [&](int d) {
#pragma unroll
        for (int j = 0; j < WNITER * TN; ++j)
#pragma unroll
            for (int ii = 0; ii < TM; ++ii) {
                const int i = (j % 2) ? TM - 1 - ii : ii;
                acc[i][j] += regM[d][i] * regN[d][j];
            }
    };

    const int numTiles = (K + BK - 1) / BK;       // >= 1 since K >= 1

    // Prologue: tiles 0 .. STAGES-2 in flight, one group each (empty groups past the last tile).
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < numTiles) issue(s, s * BK);
        cp_async_commit();
    }
    cp_async_wait<STAGES - 2>();
    __syncthreads();                              // tile 0 is in buffer 0, for every thread

    int readStage = 0;                            // buffer of tile t
    int writeStage = STAGES - 1;                  // buffer that tile t + STAGES - 1 goes to
    const float* aRead = As;
    const float* bRead = Bs;
    loadOperands(0, aRead, bRead, 0);

    // One tile: the copies of tile t + STAGES - 1, then BK steps. FAST: that tile is known to be whole
    // and inside the matrices, so its copies go out unchecked and unconditionally: no branch, and
    // the tile is one basic block that ptxas can schedule as a whole (the fast loop below).
    auto tile = [&](int t, auto fast) {
        constexpr bool FAST = decltype(fast)::value;
        // buffer writeStage held tile t-1: every thread finished reading it before the last barrier
        constexpr bool NOCOPY = V8_PROBE == 1 || V8_PROBE == 3;
        if constexpr (FAST) {
            if constexpr (!NOCOPY) issueTile(writeStage, (t + STAGES - 1) * BK, std::false_type{});
        } else {
            if (t + STAGES - 1 < numTiles && !NOCOPY) issue(writeStage, (t + STAGES - 1) * BK);
        }
        cp_async_commit();
        writeStage = writeStage + 1 == STAGES ? 0 : writeStage + 1;

#pragma unroll
        for (int k = 0; k < BK; ++k) {
            if (k == BK - 1) {
                // step BK-1's operands are in registers: tile t's buffer is no longer read
                if (V8_PROBE < 3) {
                    cp_async_wait<STAGES - 2>();
                    __syncthreads();          // tile t+1 has landed for all; all have read tile t
                }
                readStage = readStage + 1 == STAGES ? 0 : readStage + 1;
                aRead = As + readStage * A_STAGE;
                bRead = Bs + readStage * B_STAGE;
            }
            // step k+1 (step 0 of tile t+1 after the barrier) while step k computes
            loadOperands((k + 1) % 2, aRead, bRead, (k + 1) % BK);
            outerProduct(k % 2);
        }
    };
    int t = 0;
    {
        // The fast loop: the tiles whose copy target (tile t + STAGES - 1) is whole and inside; the
        // last STAGES - 1 tiles and edge blocks take the checked loop below.
        const int fastEnd = blockInside ? max(K / BK - (STAGES - 1), 0) : 0;
#pragma unroll 1
        for (; t < fastEnd; ++t) tile(t, std::true_type{});
    }
#pragma unroll 1
    for (; t < numTiles; ++t) tile(t, std::false_type{});
    cp_async_wait<0>();                           // no copy may still target shared memory at exit

    // Epilogue: row group i, row r, strip w: TN columns = TN/4 groups of 4.
#pragma unroll
    for (int i = 0; i < TM; ++i) {
        const int row = cRow + mOff + (i / 4) * (LANES_M * 4) + i % 4;
        if (!blockInside && row >= M) continue;
        float* c = C + static_cast<size_t>(row) * N + cCol + nOff;
#pragma unroll
        for (int w = 0; w < WNITER; ++w)
#pragma unroll
            for (int j = 0; j < TN; j += 4) {
                const int n = w * TN + j;         // index into acc[i][...]
                const int off = w * WSUBN + j;    // column offset from the thread's first column
                float4 v = make_float4(alpha * acc[i][n], alpha * acc[i][n + 1],
                                       alpha * acc[i][n + 2], alpha * acc[i][n + 3]);
                if constexpr (VEC) {
                    if (blockInside || cCol + nOff + off < N) {   // N % 4 == 0: all 4 or none
                        float4* p = reinterpret_cast<float4*>(c + off);
                        if (beta != 0.0f) {
                            const float4 o = *p;
                            v.x += beta * o.x; v.y += beta * o.y; v.z += beta * o.z; v.w += beta * o.w;
                        }
                        *p = v;
                    }
                } else {
                    const int valid = blockInside ? 4 : N - (cCol + nOff + off);
                    const float vs[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
                    for (int e = 0; e < 4; ++e)
                        if (e < valid) {
                            float r = vs[e];
                            if (beta != 0.0f) r += beta * c[off + e];
                            c[off + e] = r;
                        }
                }
            }
    }
}
