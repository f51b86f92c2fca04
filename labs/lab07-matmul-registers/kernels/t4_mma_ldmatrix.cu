// t4_mma_ldmatrix.cu: t3's pipeline written by hand: mma.sync + ldmatrix, an XOR-swizzled shared
// tile instead of padding, a STAGES-deep cp.async pipeline, register double buffering, and block
// rasterization. Chapter 8, "What cuBLAS does that we do not", as code.
//
//   C (FP32, M x N) = A (FP16, M x K) . B (FP16, K x N), all row-major, FP32 accumulation.
//   Entry points: hgemm_t4_vec     N % 8 == 0: A and B tiles copied with 16-byte cp.async
//                 hgemm_t4_scalar  any N:      A by cp.async, B by guarded 2-byte loads
//   Argument list (int M, int N, int K, const half* A, const half* B, float* C), C = A B.
//   Launch:  1-D block of THREADS = (BM/WM)*(BN/WN)*32 threads (256 by default),
//            grid = (ceil(N/BN), ceil(M/BM), 1), dynamic shared memory SMEM_BYTES
//            (= STAGES * (BM*BK + BK*BN) * 2 = 98,304 bytes by default: above 48 KB, so the launcher
//            raises CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES first; it fits the 99 KB of
//            sm_86/89/120). The kernel remaps blockIdx itself (rasterization, below).
//   Shapes:  any M >= 1, N >= 1; K >= 8 with K % 8 == 0 (16-byte rows of A; the driver refuses others).
//
// What it adds over t3.
//  1. mma.sync.aligned.m16n8k16 in inline PTX instead of WMMA. WMMA's 16x16x16 is two of these; with
//     the PTX instruction we know which lane holds which element (the PTX ISA's figures for m16n8k16), so we
//     can choose the shared-memory layout and load fragments with ldmatrix ourselves.
//  2. ldmatrix.sync.aligned.m8n8.x4: one instruction loads four 8x8 half matrices; lane l gives the
//     address of row l%8 of matrix l/8 (a 16-byte row) and receives exactly the (g, 2t) elements an
//     mma fragment wants. A (row-major, k contiguous) needs no transpose: one .x4 per 16x16 A
//     fragment (a0..a7). B is row-major K x N in shared memory (n contiguous), but the mma wants
//     B "col" (k pairs in a register): ldmatrix .x4.trans transposes on the way, one instruction
//     per 16 k x 16 n, i.e. the B fragments of two n8 tiles. Lane addresses: below.
//  3. No padding: an XOR swizzle of 16-byte chunks. Shared memory has 32 banks of 4 bytes, so 128
//     consecutive bytes hit every bank once; call the 8 16-byte slots of a 128-byte line "bank
//     groups" 0..7 (bank group of byte address a = (a / 16) % 8). An 8x8 ldmatrix matrix reads 8
//     rows of 16 bytes: it is one wavefront (conflict-free) iff its 8 row addresses fall in 8
//     different bank groups. Unswizzled, a row of B is BN*2 = 512 bytes (a multiple of 128), so 8
//     consecutive k rows at the same n all sit in the same bank group: an 8-way conflict. A row of
//     A with BK = 32 is 64 bytes: rows r and r+2 collide, a 4-way conflict. The swizzle stores
//     logical 16-byte chunk c of row r at chunk  c ^ f(r)  of the same row, with
//         f(r) = r % 8                         rows of >= 8 chunks (B always; A when BK >= 64)
//         f(r) = (r / 2) % 4                   rows of 4 chunks (A when BK = 32)
//     Rows of >= 8 chunks: bank group = (r*CPR + (c ^ (r%8))) % 8 = (c % 8) ^ (r % 8) (CPR a multiple
//     of 8), so 8 consecutive rows at one c give 8 different groups. Rows of 4 chunks: two rows share
//     a 128-byte line, bank group = 4*(r%2) + (c ^ ((r/2)%4)): r%2 picks the half, (r/2)%4 takes 4
//     different values over 8 consecutive rows, so again 8 different groups. The XOR only permutes
//     chunks inside a row (inside an aligned group of 8 chunks), so the cp.async stores, whose 8
//     consecutive lanes write 8 consecutive logical chunks (one 128-byte line's worth), still hit
//     8 different groups: stores and ldmatrix reads are both conflict-free, and no byte is wasted.
//  4. STAGES-deep cp.async pipeline (the chapter's t3: 2) with one barrier per BK tile, not t3's two.
//     Prologue: tiles 0 .. STAGES-2, one commit group each. Tile t+STAGES-1 is issued (and a group
//     committed, empty past the end) at the first k-step of tile t. At the last k-step of tile t the
//     thread waits with cp.async.wait_group STAGES-2 (STAGES+t groups committed; the group of tile
//     t+1 is older than the STAGES-2 newest, so it has landed) and then __syncthreads(): tile t+1
//     has landed for every thread, AND every warp has loaded its last fragments of tile t (they were
//     loaded one k-step earlier, above the barrier). The copies issued after that barrier, at the
//     first k-step of tile t+1, go into tile t's buffer: no second barrier is needed.
//  5. Register double buffering: the fragments of 16-deep k-step kk+1 are loaded with ldmatrix while
//     the mma.sync of step kk run (two sets of fragment registers), interleaved: A fragment i and B
//     pair i of step kk+1 just before row i of step kk's MMAs, so that the shared-memory loads are
//     spread over the step rather than queued as one burst. At the last step of a tile the "next"
//     fragments come from the next stage, after the barrier: the pipeline never drains between
//     tiles. BK / 16 must be even so that the register set of step 0 is the same every tile.
//  6. Block rasterization: blocks are issued in order of the linear id blockIdx.y*gridDim.x +
//     blockIdx.x; the kernel maps that id onto tiles so that GROUP consecutive block rows are walked
//     column by column. The blocks resident at one time then share their A rows (GROUP of them) and
//     B columns, and more of their tiles are found in L2. GROUP = 1 is plain row-major order.
//
// Tiles and why (defaults): block 128 x 256, 8 warps (2 x 4) of 64 x 64. Per 16-deep step a warp
// issues 4 ldmatrix.x4 for A (four m16 tiles), 4 ldmatrix.x4.trans for B (eight n8 tiles) and
// 4 x 8 = 32 mma.sync: 8 shared loads of 512 bytes for 32 MMAs (t3's 64 x 32 WMMA warp: 6 fragment
// loads for 16 HMMA). Each thread holds 128 FP32 accumulators and up to 2 x 32 fragment registers, so
// one block of 8 warps fills an SM's register file (low occupancy on purpose, as v7). BK = 32
// (two k-steps per barrier), STAGES = 4: three tiles in flight while one is read, 24 KB a stage.
//
// Edges. 16-byte chunks are wholly inside or outside (K % 8 == 0; N % 8 == 0 for vec); chunks outside
// are zero-filled by cp.async (src-size 0: reads nothing, writes 16 zero bytes). Tiles wholly inside
// skip the guards (decided per tile). The scalar variant loads B with guarded 2-byte loads and one
// 16-byte shared store per chunk (same swizzle). Epilogue straight from the accumulators: lane
// (g, t) owns C[g][2t, 2t+1] and C[g+8][2t, 2t+1] of each 16 x 8 tile, stored as float2 (vec: N is
// even, so the pair is 8-byte aligned and both or neither are inside) or as guarded scalars (scalar).
// Each 4-lane quad writes 32 contiguous bytes: whole sectors.
//
// What to look for in SASS (make sass): HMMA.16816.F32 (32 per k-step per warp), LDSM.16.M88.4 (A)
// and LDSM.16.MT88.4 (B, transposed), LDGSTS.E.BYPASS.LTC128B.128 for the copies (the zero-fill
// forms on the guarded path carry a trailing !PT), LDGDEPBAR per commit, DEPBAR.LE SB0, STAGES-2 per
// wait, one BAR.SYNC per tile in the main loop, STG.E.64 in the vec epilogue, no LDL/STL. The only
// LDS are never-executed `@!PT LDS RZ, [RZ]` placeholders before groups of LDGSTS (as in t3); the
// scalar variant adds LDG.E.U16 + STS.128 for B. In ncu: zero bank conflicts for LDSM and LDGSTS
// (sm__sass_l1tex_data_bank_conflicts_pipe_lsu_mem_shared_op_ldsm / _op_ldgsts), exactly 4 shared
// wavefronts per LDSM.x4, and sm__pipe_tensor_op_hmma_cycles_active for how busy the tensor pipe is.
// COPY_WARPS=4 lets only warps 0-3 (one per SM sub-partition) issue the copies, so the other warp of
// each sub-partition never stops its mma.sync for them: +1.5 % at BK=64 on the H200, a tuning
// parameter. T4_PROBE=1..4 take parts of the work away to measure what bounds the kernel (make bounds, common/bounds.py).

#include <cuda_fp16.h>

// BEGIN PARAMETERS
// ---- tile parameters (override with -D for a tuning sweep) -------------------------------------
#ifndef BM
#define BM 128      // block tile rows: 2 warp rows; each B chunk copied to shared is used by 2 warps
#endif
#ifndef BN
#define BN 256      // block tile columns: 4 warp columns; each A chunk is used by 4 warps
#endif
#ifndef BK
#define BK 32       // K depth of one stage: two 16-deep mma k-steps per barrier
#endif
#ifndef WM
#define WM 64       // warp tile rows: four m16 A fragments per k-step, each used by 8 mma
#endif
#ifndef WN
#define WN 64       // warp tile columns: eight n8 B fragments per k-step, each used by 4 mma
#endif
#ifndef STAGES
#define STAGES 4    // shared buffers: STAGES-1 tiles in flight while one is read
#endif
#ifndef GROUP
#define GROUP 8     // rasterization: block rows walked together, column by column
#endif
#ifndef COPY_WARPS
#define COPY_WARPS ((BM / WM) * (BN / WN))   // warps that issue the copies (the first ones; default all)
#endif
// What bounds t4 (make bounds, common/bounds.py): builds that leave out one part of the work. Their results are WRONG
// by design; only their times mean anything. 0: the kernel. 1: no copies after the prologue (every
// tile multiplies whatever the buffers hold). 2: no mma.sync (copies, barriers, ldmatrix only: the
// fragments are XORed into one register written to C, since ptxas deletes an ldmatrix nobody reads).
// 3: as 1, and no barrier either. 4: the copies but no wait and no barrier (a race, on purpose).
#ifndef T4_PROBE
#define T4_PROBE 0
#endif

#define THREADS ((BM / WM) * (BN / WN) * 32)                              // one warp per warp tile
#define COPY_THREADS (COPY_WARPS * 32)
#define SMEM_BYTES (STAGES * (BM * BK + BK * BN) * sizeof(half))   // A stages, then B stages

static_assert(BM > 0 && BN > 0 && BK > 0 && WM > 0 && WN > 0, "BM, BN, BK, WM and WN must be positive integers");
static_assert(WM % 16 == 0, "WM must be a multiple of 16: a warp tile is made of m16 mma tiles");
static_assert(WN % 16 == 0, "WN must be a multiple of 16: one ldmatrix.x4.trans loads two n8 B tiles");
static_assert(BM % WM == 0 && BN % WN == 0, "the block tile BM x BN must be a whole number of warp tiles");
static_assert(WM * WN <= 64 * 64,
              "a warp tile above 4096 outputs needs more than 128 accumulators per thread plus "
              "double-buffered fragments: more than 255 registers, so ptxas would spill");
static_assert(BK == 32 || BK % 64 == 0,
              "BK must be 32 (a row of A is 4 chunks: swizzle (r/2)%4) or a multiple of 64 (rows of A "
              "a multiple of 8 chunks: swizzle r%8); both make BK/16 even for the register double buffer");
static_assert(BN % 64 == 0, "BN must be a multiple of 64: B rows must be a multiple of 8 chunks for "
                            "the r%8 swizzle to stay inside the row");
static_assert(THREADS <= 1024, "too many warps: (BM/WM)*(BN/WN) must be at most 32");
static_assert(COPY_WARPS >= 1 && COPY_WARPS <= THREADS / 32, "COPY_WARPS must be between 1 and the number of warps");
static_assert((BM * BK / 8) % COPY_THREADS == 0, "every copying thread copies the same number of 16-byte A "
                                                 "chunks: BM*BK/8 must be a multiple of 32*COPY_WARPS");
static_assert((BK * BN / 8) % COPY_THREADS == 0, "every copying thread copies the same number of 16-byte B "
                                                 "chunks: BK*BN/8 must be a multiple of 32*COPY_WARPS");
static_assert(THREADS * (WM * WN / 32 + 2 * (WM / 16 * 4 + WN / 8 * 2) + 40) <= 65536,
              "registers: THREADS x (WM*WN/32 accumulators + double-buffered fragments + about 40) "
              "must fit the 65,536 registers of an SM, or __launch_bounds__ forces spills");
static_assert(STAGES >= 2, "STAGES must be at least 2: one buffer read, one being filled");
static_assert(STAGES <= 8, "STAGES must be at most 8 (cp.async.wait_group keeps a small count)");
static_assert(SMEM_BYTES <= 227 * 1024,
              "shared memory above 227 KB, the most any supported GPU gives a block "
              "(sm_86/89/120 give 99 KB; the launcher checks the device)");
static_assert(GROUP >= 1, "GROUP (block rows per raster group) must be at least 1");
static_assert(COPY_THREADS % (BK / 8) == 0 && COPY_THREADS % (BN / 8) == 0,
              "a thread's chunks keep one column");   // (A_ROW_STEP, B_ROW_STEP below: whole rows)
// END PARAMETERS

namespace t4 {

constexpr int WARPS_N = BN / WN;
constexpr int MT = WM / 16;                  // m16 tiles per warp: A fragments per k-step
constexpr int NT = WN / 8;                   // n8 tiles per warp: B fragments per k-step
constexpr int KSTEPS = BK / 16;              // mma k-steps per stage
constexpr int CPR_A = BK / 8;                // 16-byte chunks per row of the A tile (4 or 8k)
constexpr int CPR_B = BN / 8;                // chunks per row of the B tile (8k)
constexpr int LDA_C = CPR_A;                 // row stride of the A tile, chunks (swizzled: no padding)
constexpr int LDB_C = CPR_B;                 // row stride of the B tile, chunks
constexpr int A_STAGE_BYTES = BM * LDA_C * 16;
constexpr int B_STAGE_BYTES = BK * LDB_C * 16;
constexpr int A_ITERS = BM * BK / 8 / COPY_THREADS;   // A chunks per thread per stage
constexpr int B_ITERS = BK * BN / 8 / COPY_THREADS;

static_assert(SMEM_BYTES == STAGES * (A_STAGE_BYTES + B_STAGE_BYTES), "layout: A stages, then B stages");
static_assert(KSTEPS % 2 == 0, "register double buffer: an even number of k-steps per stage");

// The swizzle: logical chunk c of row r lives at chunk c ^ f(r) of row r (bank arithmetic above).
// Returns the chunk index inside the tile.
template <int CPR>
__device__ __forceinline__ int swizzle(int r, int c) {
    if constexpr (CPR >= 8) return r * CPR + (c ^ (r & 7));
    else                         return r * CPR + (c ^ ((r >> 1) & 3));   // CPR == 4
}

__device__ __forceinline__ unsigned smem_u32(const void* p) {
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// 16-byte global -> shared copy that bypasses L1 (.cg). src_bytes = 0: no read, 16 zero bytes written.
__device__ __forceinline__ void cp_async16(unsigned dst, const void* src, int src_bytes) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes)
                 : "memory");
}
__device__ __forceinline__ void cp_async16(unsigned dst, const void* src) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(src) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {   // at most N of this thread's groups still in flight
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

__device__ __forceinline__ void ldmatrix_x4(unsigned (&r)[4], unsigned addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr));
}
__device__ __forceinline__ void ldmatrix_x4_trans(unsigned& r0, unsigned& r1, unsigned& r2, unsigned& r3,
                                                  unsigned addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3) : "r"(addr));
}
// D = A . B + D, A 16x16 (row), B 16x8 (col), FP16 in, FP32 accumulate.
__device__ __forceinline__ void mma_16816(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

extern __shared__ __align__(128) unsigned char smem_raw[];

// One thread's share of the copies. Its A chunks are rows a_row + it * A_ROW_STEP of the tile at
// logical chunk a_c (likewise for B), so the sources of a stage are one pointer plus multiples of a
// stride, and the pointers move by BK columns of A / BK rows of B per tile.
constexpr int A_ROW_STEP = COPY_THREADS / CPR_A;   // tile rows between a thread's A chunks
constexpr int B_ROW_STEP = COPY_THREADS / CPR_B;

struct Copier {
    const __half* a_src;   // A[bm + a_row][k0 + 8 a_c] of the next tile to issue
    const __half* b_src;   // B[k0 + b_row][bn + 8 b_c]
    int a_rows_left;       // M - bm - a_row: chunk it is inside iff it * A_ROW_STEP < a_rows_left
    int a_k;               // k0 + 8 a_c: inside iff < K
    int b_k;               // k0 + b_row: chunk it inside iff b_k + it * B_ROW_STEP < K
    int b_cols_left;       // N - bn - 8 b_c
    int a_row, a_c, b_row, b_c;
};

// Issue one stage's copies: A[bm.., k0..] -> sA (BM x BK), B[k0.., bn..] -> sB (BK x BN), swizzled.
// CHECKED = false only for tiles wholly inside the matrices.
template <bool CHECKED, bool VEC_B>
__device__ __forceinline__ void issue_tile(unsigned sA, unsigned sB, const Copier& cp, const __half* A,
                                           const __half* B, int N, int K) {
#pragma unroll
    for (int it = 0; it < A_ITERS; ++it) {
        const unsigned dst = sA + swizzle<CPR_A>(cp.a_row + it * A_ROW_STEP, cp.a_c) * 16;
        const __half* src = cp.a_src + (size_t)it * A_ROW_STEP * K;
        if (!CHECKED) cp_async16(dst, src);
        else if (it * A_ROW_STEP < cp.a_rows_left && cp.a_k < K) cp_async16(dst, src, 16);
        else cp_async16(dst, A, 0);
    }
#pragma unroll (VEC_B ? B_ITERS : 1)
    for (int it = 0; it < B_ITERS; ++it) {
        const unsigned dst = sB + swizzle<CPR_B>(cp.b_row + it * B_ROW_STEP, cp.b_c) * 16;
        const __half* src = cp.b_src + (size_t)it * B_ROW_STEP * N;
        const bool row_in = !CHECKED || cp.b_k + it * B_ROW_STEP < K;
        if (VEC_B) {
            if (!CHECKED) cp_async16(dst, src);
            else if (row_in && cp.b_cols_left > 0) cp_async16(dst, src, 16);
            else cp_async16(dst, B, 0);
        } else {
            // N % 8 != 0: rows of B are not 16-byte aligned. Eight guarded 2-byte loads, packed in
            // pairs, one 16-byte shared store (synchronous; the tile barrier orders it like a copy).
            // Not unrolled over chunks: 8 loads in flight per thread, not 8 * B_ITERS registers.
            const unsigned short* Bu = reinterpret_cast<const unsigned short*>(src);
            unsigned w[4];
#pragma unroll
            for (int p = 0; p < 4; ++p) {
                const bool in0 = !CHECKED || (row_in && 2 * p < cp.b_cols_left);
                const bool in1 = !CHECKED || (row_in && 2 * p + 1 < cp.b_cols_left);
                const unsigned lo = in0 ? Bu[2 * p] : 0u;
                const unsigned hi = in1 ? Bu[2 * p + 1] : 0u;
                w[p] = lo | (hi << 16);
            }
            asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};\n" ::"r"(dst), "r"(w[0]), "r"(w[1]),
                         "r"(w[2]), "r"(w[3]) : "memory");
        }
    }
}

template <bool VEC_B>
__device__ __forceinline__ void hgemm_t4_body(int M, int N, int K, const __half* __restrict__ A,
                                              const __half* __restrict__ B, float* __restrict__ C) {
    const unsigned sA0 = smem_u32(smem_raw);                      // [STAGES][BM x BK] swizzled
    const unsigned sB0 = sA0 + STAGES * A_STAGE_BYTES;            // [STAGES][BK x BN] swizzled

    const int tid = threadIdx.x;
    const int warp = tid / 32, lane = tid % 32;
    const int warp_m = warp / WARPS_N, warp_n = warp % WARPS_N;
    const bool copier = COPY_WARPS == THREADS / 32 || warp < COPY_WARPS;   // this warp issues copies

    // Rasterization: linear launch order -> (block row, block column), GROUP block rows at a time.
    const int gx = gridDim.x, gy = gridDim.y;
    const int pid = blockIdx.y * gx + blockIdx.x;
    const int group_size = GROUP * gx;                            // blocks in one raster group
    const int first_row = (pid / group_size) * GROUP;
    const int rows_here = min(gy - first_row, GROUP);             // the last group may be shorter
    const int in_group = pid % group_size;
    const int block_row = first_row + in_group % rows_here;
    const int block_col = in_group / rows_here;
    const int bm = block_row * BM, bn = block_col * BN;

    const bool block_inside = bm + BM <= M && bn + BN <= N;
    const int k_tiles = (K + BK - 1) / BK;

    // ldmatrix lane addresses (byte offsets inside a stage), see NOTES.md for the table.
    // A, .x4: lane l -> row l%16 of the m16 tile, logical chunk 2*kk + l/16 (k 0..7 or 8..15).
    //   registers: matrix 0 = rows 0-7 k 0-7 = a0a1, 1 = rows 8-15 k 0-7 = a2a3, 2 = a4a5, 3 = a6a7.
    //   The m16 tiles of one warp differ by 16 rows, which leaves f(r) unchanged: one offset per kk.
    unsigned a_off[KSTEPS];
#pragma unroll
    for (int kk = 0; kk < KSTEPS; ++kk)
        a_off[kk] = swizzle<CPR_A>(warp_m * WM + lane % 16, 2 * kk + lane / 16) * 16;
    // B, .x4.trans: lane l -> k row l%16 of the k-step, logical chunk (n0 of the pair)/8 + l/16.
    //   registers: matrix 0 = k 0-7 of n-tile 2p = b0b1, 1 = k 8-15 = b2b3, 2, 3 = the same for 2p+1.
    //   The k-steps differ by 16 rows (f unchanged): one offset per pair of n8 tiles.
    unsigned b_off[NT / 2];
#pragma unroll
    for (int p = 0; p < NT / 2; ++p)
        b_off[p] = swizzle<CPR_B>(lane % 16, (warp_n * WN + 16 * p) / 8 + lane / 16) * 16;

    float acc[MT][NT][4];
#pragma unroll
    for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int j = 0; j < NT; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.0f;

    Copier cp;
    cp.a_row = tid / CPR_A; cp.a_c = tid % CPR_A;
    cp.b_row = tid / CPR_B; cp.b_c = tid % CPR_B;
    cp.a_src = A + (size_t)(bm + cp.a_row) * K + cp.a_c * 8;
    cp.b_src = B + (size_t)cp.b_row * N + bn + cp.b_c * 8;
    cp.a_rows_left = M - bm - cp.a_row;
    cp.a_k = cp.a_c * 8;
    cp.b_k = cp.b_row;
    cp.b_cols_left = N - bn - cp.b_c * 8;
    // Issue the next tile (tiles are issued in order) into buffer `stage`, then advance the sources.
    int k_next = 0;
    auto issue = [&](int stage) {
        const unsigned sA = sA0 + stage * A_STAGE_BYTES, sB = sB0 + stage * B_STAGE_BYTES;
        if (block_inside && k_next + BK <= K) issue_tile<false, VEC_B>(sA, sB, cp, A, B, N, K);
        else                                  issue_tile<true, VEC_B>(sA, sB, cp, A, B, N, K);
        k_next += BK;
        cp.a_src += BK; cp.a_k += BK;
        cp.b_src += (size_t)BK * N; cp.b_k += BK;
    };

    unsigned sink = 0;       // T4_PROBE = 2: what the fragments feed instead of mma.sync (written to C)
    unsigned fa[2][MT][4];   // A fragments, two sets (register double buffer)
    unsigned fb[2][NT][2];   // B fragments
    // Fragment loads: A fragment i (rows 16i..16i+15 of the warp tile) and B pair p (n8 tiles 2p, 2p+1)
    // of k-step kk from the stage at sA / sB into register set `set`.
    auto load_a = [&](int set, int i, unsigned sA, int kk) {
        ldmatrix_x4(fa[set][i], sA + a_off[kk] + i * 16 * LDA_C * 16);
    };
    auto load_b = [&](int set, int p, unsigned sB, int kk) {
        ldmatrix_x4_trans(fb[set][2 * p][0], fb[set][2 * p][1], fb[set][2 * p + 1][0], fb[set][2 * p + 1][1],
                          sB + b_off[p] + kk * 16 * LDB_C * 16);
    };
    // One k-step: the MT x NT mma.sync on register set `cur`. With `load`, the fragments of the next
    // k-step (k-step nkk of the stage at sA / sB, into set nxt) are loaded in between: A fragment i and
    // B pair i just before row i of the MMAs, so the loads are spread over the step instead of
    // arriving at the shared-memory pipe as one burst (and ptxas needs fewer live registers).
    auto mma_step = [&](int cur, bool load, int nxt, unsigned sA, unsigned sB, int nkk) {
        if (load) {
#pragma unroll
            for (int p = MT; p < NT / 2; ++p) load_b(nxt, p, sB, nkk);   // B pairs beyond MT (WN > 4 WM / 2)
        }
#pragma unroll
        for (int i = 0; i < MT; ++i) {
            if (load) {
                load_a(nxt, i, sA, nkk);
                if (i < NT / 2) load_b(nxt, i, sB, nkk);
            }
#pragma unroll
            for (int jj = 0; jj < NT; ++jj) {
                const int j = (i % 2) ? NT - 1 - jj : jj;   // serpentine: reuse the last B fragment
                if (T4_PROBE != 2) mma_16816(acc[i][j], fa[cur][i], fb[cur][j]);
            }
        }
        if (T4_PROBE == 2) {       // the fragments feed one register instead, or ptxas drops their LDSM
#pragma unroll
            for (int i = 0; i < MT; ++i) sink ^= fa[cur][i][0] ^ fa[cur][i][1] ^ fa[cur][i][2] ^ fa[cur][i][3];
#pragma unroll
            for (int j = 0; j < NT; ++j) sink ^= fb[cur][j][0] ^ fb[cur][j][1];
        }
    };

    // Prologue: tiles 0 .. STAGES-2 in flight, one commit group each (empty groups past the end).
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < k_tiles && copier) issue(s);
        cp_async_commit();
    }
    cp_async_wait<STAGES - 2>();   // tile 0 has landed (for this thread) ...
    __syncthreads();               // ... and for every thread

    int read_stage = 0;              // buffer of tile t
    int write_stage = STAGES - 1;    // buffer of tile t + STAGES - 1 (= the one tile t - 1 used)
    unsigned sA = sA0, sB = sB0;     // read_stage's buffers
    // Tile t+1 has landed (for every thread), and every warp is done reading tile t: move on.
    auto next_stage = [&]() {
        if (T4_PROBE < 3) {
            cp_async_wait<STAGES - 2>();
            __syncthreads();
        }
        read_stage = (read_stage + 1 == STAGES) ? 0 : read_stage + 1;
        sA = sA0 + read_stage * A_STAGE_BYTES;
        sB = sB0 + read_stage * B_STAGE_BYTES;
    };
    // k-step 0's fragments, before the loop
#pragma unroll
    for (int i = 0; i < MT; ++i) load_a(0, i, sA, 0);
#pragma unroll
    for (int p = 0; p < NT / 2; ++p) load_b(0, p, sB, 0);

    for (int t = 0; t < k_tiles; ++t) {
#pragma unroll
        for (int kk = 0; kk < KSTEPS; ++kk) {
            if (kk == 0) {
                // Refill the buffer tile t-1 used (every warp is past the barrier that freed it).
                if (t + STAGES - 1 < k_tiles && copier && T4_PROBE != 1 && T4_PROBE != 3)
                    issue(write_stage);
                cp_async_commit();   // always, even empty: keeps the wait_group arithmetic fixed
                write_stage = (write_stage + 1 == STAGES) ? 0 : write_stage + 1;
            }
            // The last k-step loads the next tile's step 0: first wait for it (and free tile t's
            // buffer: every warp's ldmatrix of tile t is above this barrier, the copy into that
            // buffer at kk == 0 of tile t+1 below it).
            if (kk == KSTEPS - 1) next_stage();
            mma_step(kk % 2, kk < KSTEPS - 1 || t + 1 < k_tiles, (kk + 1) % 2, sA, sB, (kk + 1) % KSTEPS);
        }
    }
    cp_async_wait<0>();   // only empty groups can be pending; leave no copy in flight at exit

    if (T4_PROBE == 2) acc[0][0][0] = __uint_as_float(sink);
    // Epilogue: lane (g, t) owns rows g, g+8 and columns 2t, 2t+1 of every 16 x 8 tile.
    const int g = lane / 4, tq = lane % 4;
#pragma unroll
    for (int i = 0; i < MT; ++i) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int row = bm + warp_m * WM + i * 16 + g + 8 * h;
            if (row >= M) continue;
            float* Crow = C + (size_t)row * N;
#pragma unroll
            for (int j = 0; j < NT; ++j) {
                const int col = bn + warp_n * WN + j * 8 + 2 * tq;
                const float v0 = acc[i][j][2 * h], v1 = acc[i][j][2 * h + 1];
                if (VEC_B) {
                    if (col < N) *reinterpret_cast<float2*>(Crow + col) = make_float2(v0, v1);   // N even
                } else {
                    if (col < N) Crow[col] = v0;
                    if (col + 1 < N) Crow[col + 1] = v1;
                }
            }
        }
    }
}

}  // namespace t4

extern "C" __global__ void __launch_bounds__(THREADS)
hgemm_t4_vec(int M, int N, int K, const __half* __restrict__ A, const __half* __restrict__ B,
             float* __restrict__ C) {
    t4::hgemm_t4_body<true>(M, N, K, A, B, C);
}

extern "C" __global__ void __launch_bounds__(THREADS)
hgemm_t4_scalar(int M, int N, int K, const __half* __restrict__ A, const __half* __restrict__ B,
                float* __restrict__ C) {
    t4::hgemm_t4_body<false>(M, N, K, A, B, C);
}
