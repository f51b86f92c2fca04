// v8_pipelined.cu -- lab 7, v8: v7 plus a cp.async pipeline, register double buffering, a swizzled
// shared layout, block rasterization and an alpha/beta epilogue (chapter 8, section 8)
//
// C = alpha * A * B + beta * C, row-major FP32, A is M x K, B is K x N, C is M x N, any M, N, K >= 1.
// With beta == 0, C is never read (it may hold NaN).
// Launch: 1D block of THREADS = (BM/WM)*(BN/WN)*32 threads (256 by default),
//         grid = (ceil(N / BN), ceil(M / BM), 1), SMEM_BYTES of DYNAMIC shared memory
//         (36 KB by default; above 48 KB the launcher raises the per-kernel limit first).
// Two entry points from one template, as in v6 and v7:
//   sgemm_v8_vec     only when K % 4 == 0 and N % 4 == 0 (the rule of v6/v7; this kernel itself
//                    needs only N % 4 == 0): B copied in 16-byte cp.async chunks, C written as float4.
//   sgemm_v8_scalar  any shape: B copied with 4-byte cp.async, C read and written per element.
// The body is also lab 7d's split-K tile (labs/lab07d-decode-shapes/kernels/splitk_v8.cu includes
// this file with V8_BODY_ONLY, which leaves these entry points out): it takes the length of its K
// range and A's row stride (lda) apart, and the entry points pass lda = K.
//
// What v8 adds over v7, one switch each, so that every piece can be measured on its own:
//
// 1. A STAGES-deep cp.async pipeline (STAGES = 2..4). v7 loads a tile into registers, then stores it
//    into shared memory: the thread waits for its global loads before it can do anything with
//    them. cp.async copies global -> shared without passing through registers and without
//    waiting; tiles t+1 .. t+STAGES-1 are in flight while tile t is computed. One barrier per tile:
//        prologue: copy tiles 0 .. STAGES-2, one commit group each
//        wait_group(STAGES-2) + barrier: tile 0 has landed, for every thread
//        for each tile t:
//            copy tile t+STAGES-1 into buffer (t-1) % STAGES; commit (empty groups keep the count)
//            k = 0 .. BK-1: outer products; before the last k: wait_group(STAGES-2) + barrier
//        Groups committed when tile t ends: t+STAGES; tile t+1 is group t+1, so at most the
//        STAGES-2 newer ones may still be in flight. The same barrier says every thread has read
//        its last operands of tile t, so buffer t % STAGES may be refilled by the next copy.
//
//    The A layout. v7 stores A transposed, As[k][m], so that a thread's TM rows at one k are
//    consecutive floats (LDS.128 along M). A 16-byte cp.async cannot transpose: it copies 4
//    consecutive floats of one A row, i.e. 4 values of k. Keeping A k-contiguous would turn the
//    2 LDS.128 per k of A into 8 scalar LDS (or cost 4x the operand registers). So v8 copies A
//    with 4-byte cp.async (cp.async.ca ... 4), one float each, scattered into the transposed tile:
//    BM*BK/THREADS LDGSTS per thread per tile (4 against 1024 FFMA for the default tile, 16
//    against 2048 for v7's) instead of a quarter of that: under 1 % more instructions, and the
//    inner loop is v7's. This is also what cuBLAS's own SGEMM on this GPU
//    does (cutlass_80_simt_sgemm_..._align1: 4-byte copies). B keeps v7's layout, Bs[k][n], and
//    is copied in 16-byte chunks (sgemm_v8_vec) or 4-byte ones (sgemm_v8_scalar).
//    ACOPY = 1 is the other scheme: A transposed through registers, as v7 with V7_PREFETCH does
//    (LDG.128 of tile t+1 issued when tile t starts, 4 STS.32 per group before tile t's last
//    step), B still by cp.async. A then has only one tile in flight, and A_VEC float4 registers
//    more (1 for the default tile, 4 for v7's), but its shared-memory stores are plain conflict-free STS
//    instead of 4-byte LDGSTS that gather from 4 rows of A.
//
// 2. Register double buffering (REGDB = 1): the operands of step k+1 (regM, regN) are loaded
//    into a second register set while step k's FFMAs run, across the tile boundary too (step 0
//    of tile t+1 is loaded, after the barrier, while step BK-1 of tile t computes).
//
// 3. A swizzled shared layout (SWIZZLE = 1), conflict-free for the copies and the LDS.128 reads.
//    Banks: 32 banks of 4 bytes; a 16-byte chunk covers 4 banks; a row of As is BM = 128 floats,
//    a multiple of 32 banks, so every row starts at bank 0 and chunk c of a row covers banks
//    4 (c % 8) .. 4 (c % 8) + 3.
//    Copies of A: a warp's 32 lanes copy 4 consecutive rows m (one chunk c = m / 4) x 8
//    consecutive k (lane % 8), so that each reads 32 consecutive bytes of one A row in global
//    memory (4 full sectors). Stored plainly at As[k][m], all 8 k's of one m share a bank: 8-way.
//    The swizzle stores chunk c of row k at chunk position c ^ (k % 8): element (k, m) lives at
//        As[k][ 4 * ((m / 4) ^ (k % 8)) + m % 4 ]
//    The 8 k's of one chunk now land on chunks c ^ 0 .. c ^ 7, 8 different values mod 8, times
//    the 4 values of m % 4: 32 different banks. Reads of A (see 4.): at a fixed k, the lanes of
//    one phase read consecutive chunks of one aligned group of 8; XOR with k % 8 permutes them
//    within the same 8, so they stay in different banks. The XOR only touches the low 3 bits of
//    the chunk index, so it never leaves the row; the reader keeps one address per k % 8.
//    Bs needs no XOR: a warp's 16-byte copies write 512 contiguous bytes (4 wavefronts, the
//    minimum) and its LDS.128 reads 4 consecutive chunks: the identity is already conflict-free.
//    SWIZZLE = 0 instead pads each As row by APAD floats (APAD = 4 is v7's padding): with this
//    copy pattern, rows that start 4 banks apart are conflict-free too, at 256 bytes per stage.
//    SWIZZLE = 0, APAD = 0 is the plain layout, with its 8-way conflicted copies (ablation only).
//
// 4. Operand reads that pair up (LANEMAP = 1). Bank conflicts are not the whole cost of an
//    LDS.128: it is served in phases of 8 lanes (8 x 16 B = 128 B, one wavefront each when
//    conflict-free). The two quarter-warps of a half warp are served together when the lanes
//    pair up on addresses (lane i^1, or lane i^2, reads what lane i reads); the halves never
//    merge. So an LDS.128 costs 2 wavefronts at best and 4 when lanes do not pair. v7's lane
//    layout (row = lane / 4, column = lane % 4) pairs for A (lanes i, i^1 share rows) but not
//    for B (every lane of a quarter reads another column): per k 2 x 2 + 4 x 4 = 20 wavefronts,
//    3.33 per LDS.128. LANEMAP = 1 takes a lane's column from lane bits 1-2 and its row from
//    bits 0, 3, 4: lanes i, i^1 share B columns, lanes i, i^2 share A rows; both pair, 12
//    wavefronts per k, 2 per LDS.128. Shared memory serves one wavefront per clock per SM, and
//    4 warps (one per scheduler) issue their 128 FFMA of a step in 128 clocks: 80 of those
//    clocks are operand reads with v7's layout, 48 with LANEMAP = 1, before the copies' share.
//    Where the shared-memory pipe is not what limits the kernel, fewer wavefronts buy nothing;
//    the default is the tuner's pick (LANEMAP = 0), LANEMAP = 1 the layout to try where it is.
//    A thread's TM = 8 rows are two groups of 4, 32 rows apart (LANES_M * 4), not 8 consecutive
//    rows as in v7: then the lanes of a phase read consecutive chunks, inside one aligned group
//    of 8 that the XOR permutes, and group 1 is group 0's address plus an immediate.
//
// 5. FMAORDER: the order in which the source writes a step's FFMAs. Same arithmetic; ptxas
//    allocates registers and schedules differently for each. An FFMA reads three registers, and
//    the register file serves them from two banks (even and odd register numbers, as
//    microbenchmarks of Volta and later found): three reads, or two from one bank, cost the warp
//    an extra cycle (ncu counts it as dispatch_stall) unless an operand comes from the reuse cache
//    (`.reuse` in SASS: the previous instruction flagged that register in that operand slot).
//    A column of the outer product is a chain of TM FFMA sharing one B register; the first FFMA
//    of the next chain shares nothing with the last one of this chain, unless the rows turn
//    around: FMAORDER 2 walks the rows down for column j and back up for column j + 1, so two
//    chains meet on the same A register. 0 is row-major (v7), 1 column-major, 3 row-major with the
//    columns turning around. On the H200 at 4096^3, interleaved with cuBLAS: 1 49.1 TFLOP/s, 2 50.2,
//    0 48.0, 3 48.1; `make sass` prints the static count of bank-conflicting FFMA per kernel.
//
// 6. Block rasterization (GROUP): blocks are launched in blockIdx order, x fastest; remapped, the
//    linear block number walks down GROUP block rows before moving one block column right, so
//    the blocks resident at one time share their A panels (GROUP of them) and their B panels.
//    GROUP = 1 is v7's order.
//
// 7. Epilogue: C = alpha * acc + beta * C with float4 loads and stores (sgemm_v8_vec), per-element
//    otherwise; beta == 0 skips the loads of C.
//
// 8. A fast loop (FASTLOOP = 1). With one main loop, each tile starts with a branch (is the tile to
//    copy whole and inside?) and a block of address arithmetic and LDGSTS of its own, which both
//    warps of a scheduler enter together after the barrier, with no FFMA to issue in between: ncu
//    put 9 % of v8's samples there, and without copies v8 ran 10 % faster. So the tiles whose copy
//    target is a whole interior tile run first, in a loop whose copies are unchecked and
//    unconditional: one basic block a tile, the LDGSTS scheduled among the FFMA. The last STAGES-1
//    tiles and edge blocks take the checked loop. On the H200: 98 -> 103 % of cuBLAS (lab README,
//    "What bounds v8"), for 25 more registers.
//
// 9. Addresses the hardware adds itself. A's eight read offsets (one per k % 8) are kept in bytes,
//    so each LDS.128 of A is [offset + stage base + immediate], not a LEA per step on a float index:
//    1130 -> 1119 instructions a tile, 103.6 -> 104.8 % of cuBLAS at 4096^3 on the H200.
//    MAXREG > 0 (a tuning switch) caps the registers with __maxnreg__: ptxas then allocates and
//    schedules the same source otherwise; `make tune` decides (STAGES=4 MAXREG=232: 105-106 %).
//
// Tiles and threads (defaults: the best configuration of the tuning sweep on the H200). Warp and
// lane tiles are v7's: warps of 64 x 64, a lane owns 8 x 16 outputs in WNITER = 4 strips. The
// block is 128 x 256, 2 x 4 warps, 256 threads: with 128 accumulators per thread the register
// file holds one such block of 8 warps per SM, the same 8 warps as two of v7's 128 x 128 blocks, but each A value
// copied to shared memory feeds 4 warps instead of 2, so a warp issues half the 4-byte A copies
// per FFMA. BK = 8 keeps the unrolled main loop short; STAGES = 3 is 36 KB. v7's block is
// -DBN=128 -DBK=16. The tuner overrides any parameter with -DNAME=value; the static_asserts say
// which combinations are legal.
//
// What to look for in SASS, per tile of BK = 8 (default), in each of the two main loops (the fast
// one has no BRA but its back edge): 1024 FFMA; 48 LDS.128 (2 of A + 4 of B
// per k), no scalar LDS and no STS in the main loop; 4 LDGSTS.E (A, 4 bytes) and 2
// LDGSTS.E.BYPASS.128 (B, sgemm_v8_vec) or 8 LDGSTS.E (sgemm_v8_scalar); LDGDEPBAR per commit,
// DEPBAR.LE SB0, 0x1 for wait_group(STAGES - 2) (STAGES = 3); one BAR.SYNC; no LDL/STL. In the
// epilogue LDG.E.128 and STG.E.128 (vec). ptxas puts never-executed `@!PT LDS RZ, [RZ]`
// placeholders before each group of LDGSTS (as in t3): they are not loads. In ncu: l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld
// 0; l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld / smsp__inst_executed_op_shared_ld 3.33
// with LANEMAP = 0 (as v7), about 2 with LANEMAP = 1; smsp__inst_executed_op_ldgsts.sum = 6 per
// warp per tile (sgemm_v8_vec). The 4-byte A copies also show in
// l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ldgsts even with the swizzle (a warp's copy
// gathers 4 rows of A); SWIZZLE = 0, APAD = 0 raises that count by the 8-way store conflicts.

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
#ifndef SWIZZLE
#define SWIZZLE 1   // 1: As chunk c of row k stored at c ^ (k % 8); 0: plain rows + APAD floats
#endif
#ifndef APAD
#define APAD 0      // floats of padding per As row when SWIZZLE = 0 (4 = v7's padding)
#endif
#ifndef REGDB
#define REGDB 1     // 1: operands of step k+1 loaded while step k computes; 0: load, then compute
#endif
#ifndef ACOPY
#define ACOPY 0     // A's way into As: 0: 4-byte cp.async (STAGES deep); 1: LDG.128 + 4 STS (1 ahead)
#endif
#ifndef FMAORDER
#define FMAORDER 2  // order of a step's FFMAs: 0 row-major (v7), 1 column-major, 2 / 3 the same, serpentine
#endif
// What bounds v8 (make bounds KERNEL=v8): builds that leave part of the work out; their results are
// WRONG by design, only their times mean something. 0: the kernel. 1: no copies after the prologue.
// 3: no copies and no barrier either. (No "no FFMA" build yet: ptxas deletes shared loads nobody reads;
// t4's and lab 7a's k7's no-math probes keep theirs by XORing the loaded values into C.)
#ifndef V8_PROBE
#define V8_PROBE 0
#endif
#ifndef FASTLOOP
#define FASTLOOP 1  // 1: interior tiles in a loop of their own, copies unchecked and branch-free; 0: one loop
#endif
#ifndef LANEMAP
#define LANEMAP 0   // 1: lane pairs share B columns and A rows (LDS.128 phases merge); 0: v7's lanes
#endif
#ifndef MAXREG
#define MAXREG 0    // > 0: __maxnreg__(MAXREG) instead of __launch_bounds__: ptxas allocates under a cap
#endif

#define THREADS ((BM / WM) * (BN / WN) * 32)                                   // threads per block
#define SMEM_BYTES (STAGES * (BK * (BM + APAD) + BK * BN) * sizeof(float))     // dynamic, bytes

// Safe division for derived constants, so that a bad -D set fails on a static_assert message below
// rather than on "division by zero in constant expression".
constexpr int v8_div(int a, int b) { return b > 0 ? a / b : 0; }

constexpr int WARPS_N = v8_div(BN, WN);        // warpRow = warp / WARPS_N, warpCol = warp % WARPS_N
constexpr int WSUBN = v8_div(WN, WNITER);      // 16 columns per strip
constexpr int LANES_N = v8_div(WSUBN, TN);     // 4 lanes across a strip (lane % 4)
constexpr int LANES_M = v8_div(32, LANES_N);   // 8 lanes down the warp tile (lane / 4)
constexpr int v8_log2(int x) { return x <= 1 ? 0 : 1 + v8_log2(x / 2); }
constexpr int LOG_LANES_N = v8_log2(LANES_N);   // lane bits that pick the column (LANEMAP = 1)
constexpr int A_LD = BM + APAD;                // row length of As (floats)
constexpr int A_STAGE = BK * A_LD;             // floats per A buffer
constexpr int B_STAGE = BK * BN;               // floats per B buffer
constexpr int A_WARPS = THREADS / 32;          // warps of the block (each copies whole chunks of A)
constexpr int A_CPER = v8_div(8, A_WARPS);      // chunks of one group of 8 a warp copies (1 with 8 warps)
constexpr int A_GROUPS8 = BM / 32;             // groups of 8 chunks (32 rows) down the A tile
constexpr int A_PER_THREAD = v8_div(BM * BK, THREADS);     // 4-byte copies of A per thread per tile
constexpr int A_RB = v8_div(BM / 16, A_WARPS);             // ACOPY = 1: 16-row blocks per warp
constexpr int A_VEC = A_RB * (BK / 8);                    // ACOPY = 1: float4 groups of A per thread
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
static_assert(SWIZZLE == 0 || SWIZZLE == 1, "v8: SWIZZLE is 0 (plain or padded rows) or 1 (XOR)");
static_assert(REGDB == 0 || REGDB == 1, "v8: REGDB is 0 or 1");
static_assert(ACOPY == 0 || ACOPY == 1, "v8: ACOPY is 0 (4-byte cp.async) or 1 (through registers)");
static_assert(ACOPY == 0 || (BM / 16) % (THREADS / 32) == 0,
              "v8: with ACOPY = 1, BM/16 must be a multiple of the warp count (a warp copies 16 rows x 8 k)");
static_assert(FMAORDER >= 0 && FMAORDER <= 3, "v8: FMAORDER is 0 (row-major), 1 (column-major), 2 or 3 (the same, serpentine)");
static_assert(LANEMAP == 0 || LANEMAP == 1, "v8: LANEMAP is 0 (v7's lane layout) or 1 (paired lanes)");
static_assert(FASTLOOP == 0 || FASTLOOP == 1, "v8: FASTLOOP is 0 (one main loop) or 1 (interior tiles in a loop of their own)");
static_assert(MAXREG == 0 || (MAXREG >= 128 && MAXREG <= 255), "v8: MAXREG is 0 (no cap) or a register cap of 128..255");
static_assert(APAD >= 0 && APAD % 4 == 0, "v8: APAD must be a multiple of 4 floats (As rows stay 16-byte aligned for LDS.128)");
static_assert(SWIZZLE == 0 || APAD == 0, "v8: the XOR swizzle needs unpadded rows (APAD = 0)");
static_assert(TM * WNITER * TN + 2 * (TM + WNITER * TN) <= 224,
              "v8: accumulators plus two operand sets must leave room for addresses in 255 registers");
static_assert(SMEM_BYTES <= 227 * 1024,
              "v8: STAGES x (BK*(BM+APAD) + BK*BN) floats exceed 227 KB, the most a block may use "
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
    // Lane layout (see 5. in the header). LANEMAP = 1: the column comes from lane bits 1-2, the row
    // from bit 0 and bits 3-4, so lanes i and i^1 share their B columns and lanes i and i^2 share
    // their A rows. LANEMAP = 0: v7's row = lane / 4, column = lane % 4.
    const int tRow = LANEMAP ? ((lane & 1) | ((lane >> (1 + LOG_LANES_N)) << 1)) : lane / LANES_N;
    const int tCol = LANEMAP ? ((lane >> 1) & (LANES_N - 1)) : lane % LANES_N;
    const int mOff = warpRow * WM + tRow * 4;     // first row of group 0; group i adds i*LANES_M*4
    const int nOff = warpCol * WN + tCol * TN;    // first column of strip 0; strip w adds w*WSUBN
    const int aChunk = mOff / 4;                  // As chunk of group 0 (before the XOR)

    // Copy mapping of A (see 3. in the header). A warp copies one chunk (4 rows) x 8 consecutive k
    // per instruction: lane % 8 is k, lane / 8 the row within the chunk. Copy j of this thread is
    // row aM + 32 g + 4 A_WARPS c, k = 8 kh + aK (c, g, kh: constants of j after unrolling), so a
    // thread's source addresses differ by multiples of lda (one IMAD.WIDE each) and its shared
    // offsets by immediates plus one register per c.
    const int aK = tid % 8, aM = tid / 8;
    int aDstOff[A_CPER];                          // As element offset of copy c (k = aK, g = kh = 0)
#pragma unroll
    for (int c = 0; c < A_CPER; ++c) {
        const int l = warp + A_WARPS * c;         // chunk within its group of 8 (low 3 bits)
        aDstOff[c] = aK * A_LD + (SWIZZLE ? 4 * (l ^ aK) : 4 * l) + lane / 8;
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
        for (int j = 0; j < (ACOPY ? 0 : A_PER_THREAD); ++j) {
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

    // ACOPY = 1: A goes global -> registers (LDG.128, a tile ahead) -> As (4 STS.32, transposed).
    // A warp loads 16 rows x 2 float4 groups (8 consecutive k): lane % 16 is the row, lane / 16
    // the group, so the four STS of a group hit k % 8 = 4 (lane / 16) + i: 8 chunk positions
    // x 4 rows of a chunk, 32 banks. Group j of this thread: 16-row block aRb + A_WARPS (j % A_RB),
    // group pair j / A_RB.
    float4 ra[ACOPY ? A_VEC : 1];
    auto loadA = [&](int k0) {
#pragma unroll
        for (int j = 0; j < (ACOPY ? A_VEC : 0); ++j) {
            const int m = 16 * (warp + A_WARPS * (j % A_RB)) + lane % 16;
            const int k = 8 * (j / A_RB) + 4 * (lane / 16);
            const float* p = A + static_cast<size_t>(cRow + m) * lda + k0 + k;
            if (blockInside && k0 + BK <= K) {
                ra[j] = VEC ? *reinterpret_cast<const float4*>(p) : make_float4(p[0], p[1], p[2], p[3]);
            } else {
                const int valid = cRow + m < M ? K - (k0 + k) : 0;   // elements of the group that exist
                float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
                if (VEC && valid >= 4) v = *reinterpret_cast<const float4*>(p);
                else {
                    if (valid > 0) v.x = p[0];
                    if (valid > 1) v.y = p[1];
                    if (valid > 2) v.z = p[2];
                    if (valid > 3) v.w = p[3];
                }
                ra[j] = v;
            }
        }
    };
    auto storeA = [&](int s) {
        float* const as = As + s * A_STAGE;
#pragma unroll
        for (int j = 0; j < (ACOPY ? A_VEC : 0); ++j) {
            const int m = 16 * (warp + A_WARPS * (j % A_RB)) + lane % 16;
            const int k = 8 * (j / A_RB) + 4 * (lane / 16);
            const float v[4] = {ra[j].x, ra[j].y, ra[j].z, ra[j].w};
#pragma unroll
            for (int i = 0; i < 4; ++i) {
                const int kk = k + i;
                as[kk * A_LD + (SWIZZLE ? ((((m >> 2) ^ (kk & 7)) << 2) | (m & 3)) : m)] = v[i];
            }
        }
    };

    float acc[TM][WNITER * TN] = {};              // 128 accumulators
    float regM[2][TM], regN[2][WNITER * TN];      // two operand sets (the second unused if REGDB = 0)

    // The byte offset of this thread's A chunk at each k % 8 (the XOR makes eight of them): kept in
    // bytes, so that each read is [offset + stage base + immediate] (an LDS address of its own)
    // rather than a shift-and-add (LEA) per step on a float index.
    int aReadByte[SWIZZLE ? 8 : 1];
#pragma unroll
    for (int x = 0; x < (SWIZZLE ? 8 : 1); ++x) aReadByte[x] = 16 * (SWIZZLE ? (aChunk ^ x) : aChunk);

    // Operands of step k from buffer pointers (a, b) into set d: TM/4 + WNITER*TN/4 LDS.128.
    auto loadOperands = [&](int d, const float* a, const float* b, int k) {
        const char* const ak = reinterpret_cast<const char*>(a) + aReadByte[SWIZZLE ? (k & 7) : 0];
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

    // One step: TM x WNITER*TN FFMA. The order only changes how ptxas schedules and allocates
    // (operand reuse, register banks); the tuner tries both.
    auto outerProduct = [&](int d) {
        if constexpr (FMAORDER == 0) {
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < WNITER * TN; ++j)
                    acc[i][j] += regM[d][i] * regN[d][j];
        } else if constexpr (FMAORDER == 1) {
#pragma unroll
            for (int j = 0; j < WNITER * TN; ++j)
#pragma unroll
                for (int i = 0; i < TM; ++i)
                    acc[i][j] += regM[d][i] * regN[d][j];
        } else if constexpr (FMAORDER == 2) {   // column-major, serpentine: columns j, j+1 share an A
#pragma unroll
            for (int j = 0; j < WNITER * TN; ++j)
#pragma unroll
                for (int ii = 0; ii < TM; ++ii) {
                    const int i = (j % 2) ? TM - 1 - ii : ii;
                    acc[i][j] += regM[d][i] * regN[d][j];
                }
        } else {                                // row-major, serpentine: rows i, i+1 share a B
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int jj = 0; jj < WNITER * TN; ++jj) {
                    const int j = (i % 2) ? WNITER * TN - 1 - jj : jj;
                    acc[i][j] += regM[d][i] * regN[d][j];
                }
        }
    };

    const int numTiles = (K + BK - 1) / BK;       // >= 1 since K >= 1

    // Prologue: tiles 0 .. STAGES-2 in flight, one group each (empty groups past the last tile).
    if constexpr (ACOPY) {
        loadA(0);
        storeA(0);                                // made visible by the barrier below
    }
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
    if constexpr (REGDB) loadOperands(0, aRead, bRead, 0);

    // One tile: the copies of tile t + STAGES - 1, then BK steps. FAST: that tile is known to be whole
    // and inside the matrices, so its copies go out unchecked and unconditionally: no branch, and
    // the tile is one basic block that ptxas can schedule as a whole (FASTLOOP below).
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
        const bool moreA = ACOPY && t + 1 < numTiles && !NOCOPY;
        if (moreA) loadA((t + 1) * BK);           // in flight during this tile's math
        writeStage = writeStage + 1 == STAGES ? 0 : writeStage + 1;

#pragma unroll
        for (int k = 0; k < BK; ++k) {
            if constexpr (REGDB) {
                if (k == BK - 1) {
                    // step BK-1's operands are in registers: tile t's buffer is no longer read.
                    // ACOPY = 1: tile t+1's A into its buffer, which nobody reads before the barrier
                    if (moreA) storeA(readStage + 1 == STAGES ? 0 : readStage + 1);
                    if (V8_PROBE < 3) {
                        cp_async_wait<STAGES - 2>();
                        __syncthreads();      // tile t+1 has landed for all; all have read tile t
                    }
                    readStage = readStage + 1 == STAGES ? 0 : readStage + 1;
                    aRead = As + readStage * A_STAGE;
                    bRead = Bs + readStage * B_STAGE;
                }
                // step k+1 (step 0 of tile t+1 after the barrier) while step k computes
                loadOperands((k + 1) % 2, aRead, bRead, (k + 1) % BK);
                outerProduct(k % 2);
            } else {
                loadOperands(0, aRead, bRead, k);
                outerProduct(0);
            }
        }
        if constexpr (!REGDB) {
            if (moreA) storeA(readStage + 1 == STAGES ? 0 : readStage + 1);
            if (V8_PROBE < 3) {
                cp_async_wait<STAGES - 2>();
                __syncthreads();
            }
            readStage = readStage + 1 == STAGES ? 0 : readStage + 1;
            aRead = As + readStage * A_STAGE;
            bRead = Bs + readStage * B_STAGE;
        }
    };
    int t = 0;
    if constexpr (FASTLOOP && !ACOPY) {
        // FASTLOOP = 1: the tiles whose copy target (tile t + STAGES - 1) is whole and inside, in a
        // loop of their own; the last STAGES - 1 tiles and edge blocks take the checked loop below.
        // (ACOPY = 1 stages A through registers, loaded a tile ahead: it keeps the one checked loop.)
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

#ifndef V8_BODY_ONLY       // a file that includes this one for the body (splitk_v8.cu) skips the entries
// MAXREG > 0 caps the registers per thread (the two qualifiers cannot be combined). Below the count
// ptxas picks on its own, the cap changes how it allocates and schedules, not only how many it uses.
#if MAXREG > 0
#define V8_BOUNDS __maxnreg__(MAXREG)
#else
#define V8_BOUNDS __launch_bounds__(THREADS)
#endif
extern "C" __global__ void V8_BOUNDS
sgemm_v8_vec(int M, int N, int K, float alpha, const float* __restrict__ A, const float* __restrict__ B,
             float beta, float* __restrict__ C)
{
    sgemm_v8_body<true>(M, N, K, K, alpha, A, B, beta, C);
}

extern "C" __global__ void V8_BOUNDS
sgemm_v8_scalar(int M, int N, int K, float alpha, const float* __restrict__ A, const float* __restrict__ B,
                float beta, float* __restrict__ C)
{
    sgemm_v8_body<false>(M, N, K, K, alpha, A, B, beta, C);
}
#endif  // V8_BODY_ONLY
