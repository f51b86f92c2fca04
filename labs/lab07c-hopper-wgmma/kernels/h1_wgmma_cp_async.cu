// h1_wgmma_cp_async.cu: Hopper's warpgroup MMA (wgmma) fed from shared memory by descriptors.
//
//   C (FP32, M x N) = A (FP16, M x K) . B (FP16, K x N), all row-major, FP32 accumulation.
//   Entry point: hgemm_h1_wgmma (int M, int N, int K, const half* A, const half* B, float* C)
//   Launch:  THREADS = 128 (one warpgroup), grid = (ceil(N / BN), ceil(M / BM)),
//            dynamic shared memory SMEM_BYTES (above 48 KB: the launcher raises the limit).
//   Shapes:  any M, N, K >= 1. 16-byte cp.async when K % 8 == 0 and N % 8 == 0 (rows of 16-byte
//            chunks); other shapes take guarded 2-byte loads for every tile (slow but correct).
//   Build:   sm_90a only: -gencode arch=compute_90a,code=sm_90a (wgmma is an sm_90a feature).
//
// What it adds over lab 7's t3 (WMMA + cp.async). On Hopper, mma.sync (and WMMA, built on it)
// peaks near 646 TFLOP/s on the H200: each warp feeds the tensor core from its own registers, and
// the fragment loads (LDSM) cost issue slots and register bandwidth. wgmma is the Hopper way: the 4
// warps of a warpgroup issue ONE instruction, m64nNk16, that multiplies a 64 x 16 slice of A by a
// 16 x N slice of B, both read by the tensor core straight from shared memory, and accumulates
// into a 64 x N FP32 tile spread over the warpgroup's registers (N/2 per thread). The instruction
// is asynchronous: issue several, commit them as a group, and wait for the group before touching
// the accumulators (wgmma_wait) or overwriting the shared tiles they read.
//
// The operands are described, not loaded: a 64-bit descriptor gives the start address of the
// shared tile, two strides and a swizzle mode (see hopper_ptx.cuh for the bit layout). We store
// both tiles in the 128-byte swizzle (chunk c of 128-byte row r goes to chunk c ^ (r % 8)), the
// layout TMA will write for us in h2:
//   A tile, BM x BK = 128 x 64 halves: row m is one 128-byte row: K-major ("no transpose").
//     Rows [64 i, 64 i + 64) start 8192 i bytes in, k-slice j 32 j bytes into the rows
//     (desc_k_major).
//   B tile, BK x BN = 64 x 128 halves, row-major as in memory: N contiguous, so MN-major
//     ("transposed", tnsp-b = 1). Stored as BN / 64 panels of 64 columns; in a panel, K-row k is
//     a 128-byte row, so a panel is BK * 128 bytes; k-slice j starts 2048 j bytes in
//     (desc_mn_major). Which stride goes in which field: hopper_ptx.cuh.
// One k-slice of a block tile is then BM / 64 = 2 wgmma m64n128k16, one per 64-row half; 128 FP32
// accumulators a thread (two halves of 64).
//
// Loads: as t3, STAGES buffers filled by cp.async 16-byte copies (LDGSTS), one commit group per
// tile, written into the swizzled layout by computing the XOR per chunk. The copies write through
// the generic proxy and wgmma reads through the async proxy: fence.proxy.async before the barrier
// that publishes a tile. The loop is t3's: copy tile t + STAGES - 1, wait for tile t, compute it
// (issue, commit, wait for the group: wgmma runs while no one waits, but here we wait at once),
// barrier before the buffer is refilled. h2 keeps one wgmma group in flight across tiles.
//
// Tiles and why: BM x BN = 128 x 128, BK = 64 (exactly one 128-byte swizzle row of halves).
// STAGES = 3: 3 x 32 KB = 96 KB of shared memory, two tiles in flight while one is computed.
//
// What to look for in SASS: HGMMA.64x128x16.F32 (8 per tile: 4 k-slices x 2 halves; the last of
// the group carries gsb0), WARPGROUP.ARRIVE (wgmma.fence), WARPGROUP.DEPBAR.LE gsb0, 0x0
// (wgmma.wait_group 0); LDGSTS.E.BYPASS.128 for the copies, LDGDEPBAR / DEPBAR.LE SB0 for commit /
// wait; LDG.E.U16 + STS.128 for the odd-shape path; FENCE.VIEW.ASYNC.S for the proxy fence; no
// LDSM and no HMMA (the LDS are ptxas's never-executed `@!PT LDS` placeholders next to LDGSTS, as
// in lab 7's t3). ptxas must not warn C7509-C7511 ("wgmma ... serialized"): it would then wait
// after every wgmma.

#include "hopper_ptx.cuh"

#ifndef BM
#define BM 128      // block tile rows: two m64 wgmmas per k-slice, each B value used twice
#endif
#ifndef BN
#define BN 128      // block tile columns = the wgmma's N (m64n128k16)
#endif
#ifndef BK
#define BK 64       // K depth of one tile: one 128-byte swizzled row of halves
#endif
#ifndef STAGES
#define STAGES 3    // shared buffers: tiles t+1, t+2 copy while tile t computes
#endif

#define THREADS 128                                                   // one warpgroup
#define SMEM_BYTES (STAGES * (BM * BK + BK * BN) * sizeof(half) + 1024)  // + 1024: align to an atom

static_assert(BK == 64, "BK must be 64: one 128-byte swizzle row of halves per tile row");
static_assert(BM % 64 == 0 && BM <= 256, "BM is a multiple of 64 (wgmma's M), at most 4 of them");
static_assert(BN == 64 || BN == 128 || BN == 256, "BN is a wgmma N: 64, 128 or 256");
static_assert((BM / 64) * (BN / 2) <= 128, "accumulators (BM/64 * BN/2 a thread) must fit in registers");
static_assert(STAGES >= 2, "STAGES >= 2: at least one tile copies while one computes");
static_assert((BM * BK / 8) % THREADS == 0 && (BK * BN / 8) % THREADS == 0,
              "the 16-byte chunks of a tile divide evenly among the 128 threads");

[[maybe_unused]] constexpr int A_TILE = BM * BK * 2;          // bytes
[[maybe_unused]] constexpr int B_TILE = BK * BN * 2;
[[maybe_unused]] constexpr int STAGE_BYTES = A_TILE + B_TILE;
static_assert(A_TILE % 1024 == 0 && B_TILE % 1024 == 0, "tiles start on 1024-byte swizzle atoms");

// 16 bytes (8 halves) of a row of src into shared memory at dst. `vec`: the whole chunk is in
// bounds and 16-byte aligned, so one cp.async; `any_in`: some of it is in bounds.
__device__ __forceinline__ void copy_chunk(uint32_t dst, const half* src, int valid, bool vec) {
    if (vec) {
        int src_bytes = valid > 0 ? 16 : 0;  // 0: cp.async reads nothing and writes 16 zeros
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n"
                     :: "r"(dst), "l"(src), "r"(src_bytes) : "memory");
    } else {                                 // odd shapes: element by element, zeros past the edge
        uint32_t w[4];
#pragma unroll
        for (int e = 0; e < 4; ++e) {
            unsigned short lo = e * 2 < valid ? __half_as_ushort(src[e * 2]) : 0;
            unsigned short hi = e * 2 + 1 < valid ? __half_as_ushort(src[e * 2 + 1]) : 0;
            w[e] = lo | (uint32_t)hi << 16;
        }
        asm volatile("st.shared.v4.u32 [%0], {%1, %2, %3, %4};\n"
                     :: "r"(dst), "r"(w[0]), "r"(w[1]), "r"(w[2]), "r"(w[3]) : "memory");
    }
}

// Tile kt of A (rows m0..) and B (columns n0..) into stage buffer `base` (1024-byte aligned).
__device__ __forceinline__ void load_tile(uint32_t base, const half* A, const half* B, int M, int N,
                                          int K, int m0, int n0, int kt, bool vec_ok) {
    const int k0 = kt * BK;
#pragma unroll
    for (int it = 0; it < BM * BK / 8 / THREADS; ++it) {
        const int i = threadIdx.x + it * THREADS;
        const int r = i / (BK / 8), c = i % (BK / 8);           // row of A, 16-byte chunk in the row
        const int gm = m0 + r, gk = k0 + c * 8;
        const int valid = gm < M ? min(8, K - gk) : 0;
        const half* src = valid > 0 ? A + (size_t)gm * K + gk : A;
        copy_chunk(base + r * 128 + ((c ^ (r & 7)) << 4), src, valid, vec_ok);
    }
    const uint32_t bbase = base + A_TILE;
#pragma unroll
    for (int it = 0; it < BK * BN / 8 / THREADS; ++it) {
        const int i = threadIdx.x + it * THREADS;
        const int k = i / (BN / 8), cn = i % (BN / 8);          // K-row of B, chunk along N
        const int p = cn / 8, c = cn % 8;                        // 64-column panel, chunk in panel
        const int gk = k0 + k, gn = n0 + cn * 8;
        const int valid = gk < K ? min(8, N - gn) : 0;
        const half* src = valid > 0 ? B + (size_t)gk * N + gn : B;
        copy_chunk(bbase + p * (BK * 128) + k * 128 + ((c ^ (k & 7)) << 4), src, valid, vec_ok);
    }
}

extern "C" __global__ void __launch_bounds__(THREADS)
hgemm_h1_wgmma(int M, int N, int K, const half* __restrict__ A, const half* __restrict__ B,
               float* __restrict__ C) {
#if HOPPER_STUB
    __trap();                                            // not an sm_90a build: see hopper_ptx.cuh
#else
    extern __shared__ unsigned char smem_raw[];
    const uint32_t smem = (smem_addr(smem_raw) + 1023) & ~1023u;   // swizzle atoms: 1024-aligned

    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    const int KT = (K + BK - 1) / BK;
    const bool vec_ok = (K % 8 == 0) && (N % 8 == 0);

    float acc[BM / 64][BN / 2];
#pragma unroll
    for (int h = 0; h < BM / 64; ++h)
#pragma unroll
        for (int j = 0; j < BN / 2; ++j) acc[h][j] = 0.f;

#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < KT) load_tile(smem + s * STAGE_BYTES, A, B, M, N, K, m0, n0, s, vec_ok);
        asm volatile("cp.async.commit_group;\n" ::: "memory");
    }

    for (int t = 0; t < KT; ++t) {
        const int nt = t + STAGES - 1;                 // refill the buffer tile t-1 used
        if (nt < KT) load_tile(smem + (nt % STAGES) * STAGE_BYTES, A, B, M, N, K, m0, n0, nt, vec_ok);
        asm volatile("cp.async.commit_group;\n" ::: "memory");
        asm volatile("cp.async.wait_group %0;\n" :: "n"(STAGES - 1) : "memory");  // tile t landed
        fence_proxy_async();                           // ... and is visible to the async proxy
        __syncthreads();                               // ... for every thread's chunks

        const uint32_t a_s = smem + (t % STAGES) * STAGE_BYTES, b_s = a_s + A_TILE;
        wgmma_fence();
#pragma unroll
        for (int j = 0; j < BK / 16; ++j) {
            const uint64_t db = desc_mn_major(b_s + j * 2048, BK * 128);
#pragma unroll
            for (int h = 0; h < BM / 64; ++h)
                wgmma_f16<BN>(acc[h], desc_k_major(a_s + h * 8192 + j * 32), db, 1);
        }
        wgmma_commit();
        wgmma_wait<0>();
#pragma unroll
        for (int h = 0; h < BM / 64; ++h) keep_in_regs(acc[h]);
        __syncthreads();                               // nobody reads this buffer any more
    }

#pragma unroll
    for (int h = 0; h < BM / 64; ++h)
        store_acc_64xN<BN>(acc[h], C, M, N, m0 + h * 64, n0, threadIdx.x);
#endif
}
