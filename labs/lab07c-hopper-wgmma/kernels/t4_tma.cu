// t4_tma.cu: lab 7's t4 (mma.sync fed by ldmatrix from 128-byte-swizzled tiles, register double
// buffering, rasterization) with its copies done by TMA instead of cp.async. The one change
// between this file and t4 is who moves the tiles: the multiply is t4's, instruction for instruction.
//
//   C (FP32, M x N) = A (FP16, M x K) . B (FP16, K x N), all row-major, FP32 accumulation.
//   Entry point: hgemm_t4_tma (int M, int N, int K, const __grid_constant__ CUtensorMap tmA,
//                              const __grid_constant__ CUtensorMap tmB, float* C)
//   Tensor maps (launch.py, as for h2): tmA box (64, BM), tmB box (64, BK), both SWIZZLE_128B.
//   Launch:  THREADS = (BM/WM)*(BN/WN)*32 (256), grid = (ceil(N / BN), ceil(M / BM)), SMEM_BYTES
//            dynamic; the kernel remaps blockIdx itself (t4's rasterization, GROUP block rows).
//   Shapes:  any M, N >= 1, K % 8 == 0 (A's row pitch for TMA); N % 8 != 0 goes through the hook's
//            padded copy of B. Edges need no code: TMA writes zeros outside the matrices.
//   Build:   sm_90a (the lab's rows); elsewhere HOPPER_STUB makes it a trap, like the h-rungs.
//
// Why this rung. `make bounds` in lab 7 timed t4 on the H200 without its copies: 527 TFLOP/s against
// t4's 456 and cuBLAS's 727 (the same run), although the data path alone (t4 without its mma.sync)
// runs in less than half of t4's time. So feeding the tiles costs t4 13 % without being a bandwidth
// limit, and the question is whether the copy engine buys that back: here one thread issues
// 1 + BN/64 TMA loads per tile and no other thread copies anything.
// The answer, measured on the H200: no. With t4's
// 128 x 256 tile this kernel ran 426 TFLOP/s at 4096^3, with 256 x 128 (two B panels per tile instead
// of four: the default here) 448, against t4's 456 in the same run. Taking the copies' instructions
// out of the warps did not help: the tiles must still be written into the shared memory that every
// ldmatrix reads, and TMA writes them too. wgmma (h1 on) changes that side instead: it reads its
// operands from shared memory itself, with no ldmatrix and no fragments in registers.
//
// What changes, against t4:
//  1. Copies. Thread 0 arms the stage's "full" mbarrier with the stage's bytes (arrive.expect_tx)
//     and issues one cp.async.bulk.tensor per box: the A tile (BM rows of 64 halves) and BN/64 panels
//     of B (BK rows of 64 halves each). TMA writes them in the 128-byte swizzle (chunk c of row r at
//     c ^ (r % 8): t4's own swizzle for rows of 8 chunks) and counts the bytes on the mbarrier.
//  2. Waits. cp.async.wait_group becomes a wait on the stage's mbarrier phase, by every thread. The
//     block barrier per tile stays, for the other direction: it tells thread 0 that every warp has
//     issued its last ldmatrix of a buffer before TMA refills it (t4's scheme; lab 7c's h3 replaces
//     it with "empty" mbarriers and a producer warp, which t4's 221 registers do not leave room for:
//     a ninth warp puts three warps on one sub-partition and caps every thread at 168 registers).
//  3. B's layout. A B stage is BN/64 panels of [BK rows][128 bytes] (TMA's widest swizzled box),
//     not one [BK][BN] array: element (k, n) sits in panel n / 64, row k, chunk ((n % 64) / 8) ^ (k % 8).
//     The ldmatrix lane addresses follow; the fragments they return are t4's.
//  BK = 64 (one swizzled row of A per k-tile, as TMA's box allows), STAGES = 4 (192 KB: sm_90 only);
//  block 256 x 128 (8 warps of 64 x 64, t4's warp tile): 2 TMA panels of B per tile, measured 5 %
//  faster than t4's 128 x 256 here (4 panels).
//
// What to look for in SASS: UTMALDG.2D (1 + BN/64 per tile, one thread), SYNCS.ARRIVE.TRANS64 and
// SYNCS.PHASECHK.TRANS64.TRYWAIT (the mbarrier), no LDGSTS; t4's HMMA.16816.F32, LDSM.16.M88.4 and
// LDSM.16.MT88.4, one BAR.SYNC per tile; no LDL/STL.

#include "hopper_ptx.cuh"

#ifndef BM
#define BM 256      // block tile rows: 4 warp rows (t4 has 2: its 128 x 256 tile measured slower here)
#endif
#ifndef BN
#define BN 128      // block tile columns: 2 warp columns, 2 TMA panels of B per tile
#endif
#ifndef BK
#define BK 64       // one 128-byte swizzle row of A: TMA's widest swizzled box
#endif
#ifndef WM
#define WM 64
#endif
#ifndef WN
#define WN 64
#endif
#ifndef STAGES
#define STAGES 4
#endif
#ifndef GROUP
#define GROUP 8     // rasterization: block rows walked together, column by column (t4's)
#endif

#define THREADS ((BM / WM) * (BN / WN) * 32)
#define SMEM_BYTES (STAGES * (BM * BK + BK * BN) * 2 + 1024)   // + 1024: 1024-byte swizzle atoms

static_assert(BK == 64, "BK must be 64: a TMA box row with the 128-byte swizzle is at most 64 halves");
static_assert(BM % WM == 0 && BN % WN == 0 && WM % 16 == 0 && WN % 16 == 0, "whole m16 / n16 warp tiles");
static_assert(BN % 64 == 0 && BM <= 256 && BK <= 256, "B panels of 64 columns; a TMA box side is at most 256");
static_assert(WM * WN <= 64 * 64, "at most 128 accumulators per thread (t4's limit)");
static_assert(STAGES >= 2, "STAGES >= 2");
static_assert(SMEM_BYTES <= 227 * 1024, "shared memory above the 227 KB an sm_90 block may have: fewer STAGES");
static_assert(GROUP >= 1, "GROUP >= 1");

namespace t4tma {

[[maybe_unused]] constexpr int WARPS_N = BN / WN;
[[maybe_unused]] constexpr int MT = WM / 16, NT = WN / 8, KSTEPS = BK / 16;
[[maybe_unused]] constexpr int A_TILE = BM * BK * 2;            // bytes: BM rows of 128 bytes
[[maybe_unused]] constexpr int B_PANEL = BK * 64 * 2;           // one 64-column panel: BK rows of 128 bytes
[[maybe_unused]] constexpr int STAGE_BYTES = A_TILE + BK * BN * 2;
static_assert(KSTEPS % 2 == 0, "register double buffer: an even number of k-steps per tile");

__device__ __forceinline__ void ldsm_x4(unsigned (&r)[4], unsigned addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr));
}
__device__ __forceinline__ void ldsm_x4_trans(unsigned& r0, unsigned& r1, unsigned& r2, unsigned& r3, unsigned addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3) : "r"(addr));
}
__device__ __forceinline__ void mma16816(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

}  // namespace t4tma

extern "C" __global__ void __launch_bounds__(THREADS)
hgemm_t4_tma(int M, int N, int K, const __grid_constant__ CUtensorMap tmA,
             const __grid_constant__ CUtensorMap tmB, float* __restrict__ C) {
#if HOPPER_STUB
    __trap();
#else
    using namespace t4tma;
    extern __shared__ unsigned char smem_raw[];
    __shared__ __align__(8) uint64_t full[STAGES];
    unsigned char* smem = reinterpret_cast<unsigned char*>(
        (reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));
    const unsigned s0 = smem_addr(smem);

    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int warp_m = warp / WARPS_N, warp_n = warp % WARPS_N;

    // t4's rasterization: GROUP block rows walked column by column.
    const int gx = gridDim.x, gy = gridDim.y;
    const int pid = blockIdx.y * gx + blockIdx.x;
    const int first_row = (pid / (GROUP * gx)) * GROUP;
    const int rows_here = min(gy - first_row, GROUP);
    const int in_group = pid % (GROUP * gx);
    const int bm = (first_row + in_group % rows_here) * BM, bn = (in_group / rows_here) * BN;
    const int k_tiles = (K + BK - 1) / BK;

    auto issue = [&](int kt) {                 // thread 0: tile kt into stage kt % STAGES
        unsigned char* a = smem + (kt % STAGES) * STAGE_BYTES;
        uint64_t* bar = &full[kt % STAGES];
        mbar_arrive_tx(bar, STAGE_BYTES);      // full boxes are always written (zeros outside)
        tma_load_2d(a, &tmA, kt * BK, bm, bar);
#pragma unroll
        for (int p = 0; p < BN / 64; ++p) tma_load_2d(a + A_TILE + p * B_PANEL, &tmB, bn + p * 64, kt * BK, bar);
    };
    if (tid == 0) {
        for (int s = 0; s < STAGES; ++s) mbar_init(&full[s], 1);
        mbar_fence_init();
    }
    __syncthreads();
    if (tid == 0)
        for (int s = 0; s < STAGES - 1 && s < k_tiles; ++s) issue(s);

    // ldmatrix lane addresses inside a stage (t4's, on the 128-byte swizzle).
    // A, .x4: row warp_m*WM + 16 i + l%16, chunk 2 kk + l/16; the m16 tiles differ by 16 rows (f unchanged).
    unsigned a_off[KSTEPS];
#pragma unroll
    for (int kk = 0; kk < KSTEPS; ++kk) {
        const int r = warp_m * WM + lane % 16;
        a_off[kk] = r * 128 + (((2 * kk + lane / 16) ^ (r & 7)) << 4);
    }
    // B, .x4.trans: k row l%16 of the step, n chunk (warp_n*WN + 16 p)/8 + l/16, in its panel.
    unsigned b_off[NT / 2];
#pragma unroll
    for (int p = 0; p < NT / 2; ++p) {
        const int c = (warp_n * WN + 16 * p) / 8 + lane / 16, k = lane % 16;
        b_off[p] = A_TILE + (c / 8) * B_PANEL + k * 128 + (((c % 8) ^ (k & 7)) << 4);
    }

    float acc[MT][NT][4];
#pragma unroll
    for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int j = 0; j < NT; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.0f;

    unsigned fa[2][MT][4], fb[2][NT][2];
    auto load_a = [&](int set, int i, unsigned st, int kk) { ldsm_x4(fa[set][i], st + a_off[kk] + i * 16 * 128); };
    auto load_b = [&](int set, int p, unsigned st, int kk) {
        ldsm_x4_trans(fb[set][2 * p][0], fb[set][2 * p][1], fb[set][2 * p + 1][0], fb[set][2 * p + 1][1],
                      st + b_off[p] + kk * 16 * 128);
    };
    // t4's k-step: MT x NT mma.sync on set `cur`, the next step's fragments loaded in between.
    auto mma_step = [&](int cur, bool load, int nxt, unsigned st, int nkk) {
        if (load) {
#pragma unroll
            for (int p = MT; p < NT / 2; ++p) load_b(nxt, p, st, nkk);
        }
#pragma unroll
        for (int i = 0; i < MT; ++i) {
            if (load) {
                load_a(nxt, i, st, nkk);
                if (i < NT / 2) load_b(nxt, i, st, nkk);
            }
#pragma unroll
            for (int jj = 0; jj < NT; ++jj) {
                const int j = (i % 2) ? NT - 1 - jj : jj;
                mma16816(acc[i][j], fa[cur][i], fb[cur][j]);
            }
        }
    };

    int stage = 0;
    unsigned st = s0;
    mbar_wait(&full[0], 0);
#pragma unroll
    for (int i = 0; i < MT; ++i) load_a(0, i, st, 0);
#pragma unroll
    for (int p = 0; p < NT / 2; ++p) load_b(0, p, st, 0);

    for (int t = 0; t < k_tiles; ++t) {
#pragma unroll
        for (int kk = 0; kk < KSTEPS; ++kk) {
            // Refill the buffer tile t-1 used: every warp is past the barrier that freed it.
            if (kk == 0 && tid == 0 && t + STAGES - 1 < k_tiles) issue(t + STAGES - 1);
            if (kk == KSTEPS - 1) {
                // This warp's last ldmatrix of tile t was issued during step KSTEPS-2. Wait for tile
                // t+1, then the barrier: after it, every warp is done with tile t's buffer.
                stage = (stage + 1 == STAGES) ? 0 : stage + 1;
                st = s0 + stage * STAGE_BYTES;
                if (t + 1 < k_tiles) mbar_wait(&full[stage], ((t + 1) / STAGES) & 1);
                __syncthreads();
            }
            mma_step(kk % 2, kk < KSTEPS - 1 || t + 1 < k_tiles, (kk + 1) % 2, st, (kk + 1) % KSTEPS);
        }
    }

    // t4's epilogue: lane (g, t) owns rows g, g+8 and columns 2t, 2t+1 of every 16 x 8 tile.
    const int g = lane / 4, tq = lane % 4;
    const bool pairs = N % 2 == 0;
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
                if (pairs && col + 1 < N) {
                    *reinterpret_cast<float2*>(Crow + col) = make_float2(v0, v1);
                } else {
                    if (col < N) Crow[col] = v0;
                    if (col + 1 < N) Crow[col + 1] = v1;
                }
            }
        }
    }
#endif
}
