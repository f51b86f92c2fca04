// t2_wmma_smem.cu: tensor cores fed from a shared-memory block tile, fragments reused from registers.
//
//   C (FP32, M x N) = A (FP16, M x K) . B (FP16, K x N), all row-major, FP32 accumulation.
//   Entry points: hgemm_t2_smem_vec     N % 8 == 0: B tile copied with 16-byte loads
//                 hgemm_t2_smem_scalar  any N:      B tile copied with guarded 2-byte loads
//   Launch:  256 threads (1D), grid = (ceil(N/128), ceil(M/128)); blockIdx.x walks N, blockIdx.y M.
//   Shapes:  any M >= 1, N >= 1; K >= 8 with K % 8 == 0 (the driver refuses other K). Both variants
//            copy A with 16-byte loads, which K % 8 == 0 makes legal.
//   Shared:  18,944 bytes, static: As[128][32+8] + Bs[32][128+8] halves.
//
// What it adds over t1. t1 fetched every fragment from global memory for one mma_sync. Here the
// chapter's hierarchy returns one level up:
//   block tile BM x BN = 128 x 128, BK = 32: each phase the 256 threads copy a 128x32 tile of A and
//     a 32x128 tile of B into shared memory (512 + 512 chunks of 8 halves, 2 + 2 per thread), and
//     every value copied is then read by 4 warps (A) or 2 warps (B).
//   warp tile WM x WN = 64 x 32: the 8 warps sit 2 (along M) x 4 (along N). Per 16-deep k step a
//     warp loads 4 A fragments (its 64 rows) and 2 B fragments (its 32 columns) from shared memory
//     and does all 4 x 2 = 8 mma_sync on them: each A fragment is used twice and each B fragment
//     four times from registers. 6 fragment loads per 8 MMAs, where t1 needed 16.
//   The 8 accumulators (64x32 floats, 64 registers per lane) live in registers for the whole K loop.
// Each phase is "copy, wait, compute, wait": while the tiles load, the tensor cores idle. t3 fixes
// that.
//
// Why each shared row is padded by 8 halves (16 bytes).
//   WMMA's rule for shared memory is the same as for global: the fragment pointer 256-bit (32-byte)
//   aligned and ldm a multiple of 8 halves. The 16-byte copies also need every row start 16-byte
//   aligned. 8 halves is the smallest pad that keeps ldm a multiple of 8 (so every 16th row, where
//   fragments start, stays 32-byte aligned) and every row 16-byte aligned.
//   What the pad buys: a fragment load (LDSM, ldmatrix) reads 8x8 sub-tiles, 8 rows of 16 bytes at a
//   time, and is conflict-free only if those 8 row pieces fall in different banks (32 banks of 4
//   bytes: addresses 128 bytes apart share a bank). Unpadded, Bs rows are 256 bytes: all 8 rows start in the same banks, an
//   8-way conflict on every B fragment load; As rows are 64 bytes: rows 0,2,4,6 collide, 4-way.
//   Padded, the row strides are 80 and 272 bytes: 8 consecutive rows start at 8 different 16-byte
//   offsets modulo 128, no conflict. The cost is 8/40 and 8/136 of the tile memory.
//
// Edges. A copy chunk (8 halves) is either wholly inside or wholly outside the matrix (K % 8 == 0;
// N % 8 == 0 for the vec variant), so chunks outside are zero-filled and zeros multiply into nothing.
// Whether a phase can skip the guards is decided once per phase (block wholly inside M x N and
// k0 + BK <= K), so interior phases run unguarded copies. Epilogue: a 16x16 accumulator that lies
// wholly inside C goes straight to global memory with store_matrix_sync (legal: the pointer is a
// multiple of 64 bytes and ldm = N a multiple of 4 when N % 8 == 0); an edge fragment, or any
// fragment of the scalar variant, goes through a per-warp 16x16 float area of shared memory (the
// tile buffers, free after the loop's last barrier) and out with guarded scalar stores.
//
// What to look for in SASS (make sass): HMMA.16816.F32, two per mma_sync (32 per phase per warp);
// fragment loads from shared are LDSM (A: LDSM.16.M88.4; B, stored k-major, LDSM.16.MT88.4, the
// transposing form): 12 per phase per warp. The copies are 16-byte global loads, spelled
// LDG.E.128.CONSTANT because A and B are const __restrict__, and STS.128 (the scalar variant loads
// B with LDG.E.U16.CONSTANT and still stores STS.128); each copy appears twice, once guarded and
// once not. Two BAR.SYNC per phase; no LDGSTS (that is t3). The plain LDS and STS.64 belong to the
// epilogue's staging of edge fragments, not to the main loop.

#include <cuda_fp16.h>
#include <mma.h>

using namespace nvcuda;

#define THREADS 256          // 8 warps

namespace t2 {

constexpr int BM = 128, BN = 128, BK = 32;   // block tile and K depth of one phase
constexpr int WM = 64, WN = 32;              // warp tile
constexpr int TILE = 16;                     // WMMA m16n16k16
constexpr int WARPS_N = BN / WN;             // 4 warps along N, 2 along M
constexpr int FRAG_M = WM / TILE;            // 4 A fragments per warp per k step
constexpr int FRAG_N = WN / TILE;            // 2 B fragments
constexpr int PAD = 8;                       // halves added to each shared row (see the header)
constexpr int LDA_S = BK + PAD;              // 40 halves = 80 bytes
constexpr int LDB_S = BN + PAD;              // 136 halves = 272 bytes
constexpr int LDC_S = TILE + 4;              // staging row for an edge accumulator: 20 floats
constexpr int CHUNK = 8;                     // halves per 16-byte copy
constexpr int A_CHUNKS_PER_ROW = BK / CHUNK; // 4
constexpr int B_CHUNKS_PER_ROW = BN / CHUNK; // 16
constexpr int A_ITERS = BM * BK / CHUNK / THREADS;   // 2 chunks of A per thread per phase
constexpr int B_ITERS = BK * BN / CHUNK / THREADS;   // 2 chunks of B
constexpr int SMEM_HALVES = BM * LDA_S + BK * LDB_S;

static_assert((BM / WM) * (BN / WN) * 32 == THREADS, "one warp per warp tile");
static_assert(BM * BK % (CHUNK * THREADS) == 0 && BK * BN % (CHUNK * THREADS) == 0,
              "every thread copies the same number of 16-byte chunks");
static_assert(LDA_S % 8 == 0 && LDB_S % 8 == 0, "WMMA: ldm of __half fragments a multiple of 8");
static_assert((THREADS / 32) * TILE * LDC_S * 4 <= SMEM_HALVES * 2,
              "the epilogue's per-warp staging areas fit in the tile buffers");

using FragA = wmma::fragment<wmma::matrix_a, TILE, TILE, TILE, __half, wmma::row_major>;
using FragB = wmma::fragment<wmma::matrix_b, TILE, TILE, TILE, __half, wmma::row_major>;
using FragC = wmma::fragment<wmma::accumulator, TILE, TILE, TILE, float>;

// One phase's copy: A[bm.., k0..] -> As (128 x 32), B[k0.., bn..] -> Bs (32 x 128), through registers.
// CHECKED = false only for phases wholly inside the matrices. All loads are issued before the first
// store, so each thread has its 4 (vec) global loads in flight together.
template <bool CHECKED, bool VEC_B>
__device__ __forceinline__ void copy_tiles(__half* __restrict__ As, __half* __restrict__ Bs,
                                           const __half* __restrict__ A, const __half* __restrict__ B,
                                           int M, int N, int K, int bm, int bn, int k0, int tid) {
    uint4 ra[A_ITERS], rb[B_ITERS];
#pragma unroll
    for (int it = 0; it < A_ITERS; ++it) {
        const int c = tid + it * THREADS;
        const int r = c / A_CHUNKS_PER_ROW, k = (c % A_CHUNKS_PER_ROW) * CHUNK;
        if (!CHECKED || (bm + r < M && k0 + k < K))
            ra[it] = *reinterpret_cast<const uint4*>(A + (bm + r) * K + k0 + k);
        else
            ra[it] = make_uint4(0u, 0u, 0u, 0u);
    }
#pragma unroll
    for (int it = 0; it < B_ITERS; ++it) {
        const int c = tid + it * THREADS;
        const int r = c / B_CHUNKS_PER_ROW, n = (c % B_CHUNKS_PER_ROW) * CHUNK;
        if (VEC_B) {
            if (!CHECKED || (k0 + r < K && bn + n < N))
                rb[it] = *reinterpret_cast<const uint4*>(B + (k0 + r) * N + bn + n);
            else
                rb[it] = make_uint4(0u, 0u, 0u, 0u);
        } else {
            // N % 8 != 0: B rows are not 16-byte aligned. Eight 2-byte loads, packed in pairs.
            const unsigned short* Bu = reinterpret_cast<const unsigned short*>(B) + (k0 + r) * N + bn + n;
            unsigned int w[4];
#pragma unroll
            for (int p = 0; p < 4; ++p) {
                const bool in0 = !CHECKED || (k0 + r < K && bn + n + 2 * p < N);
                const bool in1 = !CHECKED || (k0 + r < K && bn + n + 2 * p + 1 < N);
                const unsigned int lo = in0 ? Bu[2 * p] : 0u;
                const unsigned int hi = in1 ? Bu[2 * p + 1] : 0u;
                w[p] = lo | (hi << 16);
            }
            rb[it] = make_uint4(w[0], w[1], w[2], w[3]);
        }
    }
#pragma unroll
    for (int it = 0; it < A_ITERS; ++it) {
        const int c = tid + it * THREADS;
        const int r = c / A_CHUNKS_PER_ROW, k = (c % A_CHUNKS_PER_ROW) * CHUNK;
        *reinterpret_cast<uint4*>(As + r * LDA_S + k) = ra[it];
    }
#pragma unroll
    for (int it = 0; it < B_ITERS; ++it) {
        const int c = tid + it * THREADS;
        const int r = c / B_CHUNKS_PER_ROW, n = (c % B_CHUNKS_PER_ROW) * CHUNK;
        *reinterpret_cast<uint4*>(Bs + r * LDB_S + n) = rb[it];
    }
}

template <bool VEC_B>
__device__ __forceinline__ void hgemm_t2_body(int M, int N, int K, const __half* __restrict__ A,
                                              const __half* __restrict__ B, float* __restrict__ C) {
    __shared__ __align__(128) __half smem[SMEM_HALVES];
    __half* As = smem;                  // [BM][LDA_S]
    __half* Bs = smem + BM * LDA_S;     // [BK][LDB_S]; BM*LDA_S*2 = 10240 bytes keeps it 128-aligned

    const int tid = threadIdx.x;
    const int warp = tid / 32, lane = tid % 32;
    const int warp_m = warp / WARPS_N, warp_n = warp % WARPS_N;
    const int bm = blockIdx.y * BM, bn = blockIdx.x * BN;
    const bool block_inside = bm + BM <= M && bn + BN <= N;

    FragC acc[FRAG_M][FRAG_N];
#pragma unroll
    for (int i = 0; i < FRAG_M; ++i)
#pragma unroll
        for (int j = 0; j < FRAG_N; ++j) wmma::fill_fragment(acc[i][j], 0.0f);

    const __half* As_w = As + warp_m * WM * LDA_S;   // this warp's 64 rows of the A tile
    const __half* Bs_w = Bs + warp_n * WN;           // this warp's 32 columns of the B tile

    for (int k0 = 0; k0 < K; k0 += BK) {
        if (block_inside && k0 + BK <= K) copy_tiles<false, VEC_B>(As, Bs, A, B, M, N, K, bm, bn, k0, tid);
        else                              copy_tiles<true, VEC_B>(As, Bs, A, B, M, N, K, bm, bn, k0, tid);
        __syncthreads();   // the tiles are complete, for every warp

        // BEGIN SOLUTION t2-fragment-loop: per 16-deep step kk: 4 A, 2 B fragments, 8 mma_sync
#pragma unroll
        for (int kk = 0; kk < BK; kk += TILE) {
            FragA a[FRAG_M];
            FragB b[FRAG_N];
#pragma unroll
            for (int i = 0; i < FRAG_M; ++i) wmma::load_matrix_sync(a[i], As_w + i * TILE * LDA_S + kk, LDA_S);
#pragma unroll
            for (int j = 0; j < FRAG_N; ++j) wmma::load_matrix_sync(b[j], Bs_w + kk * LDB_S + j * TILE, LDB_S);
#pragma unroll
            for (int i = 0; i < FRAG_M; ++i)
#pragma unroll
                for (int j = 0; j < FRAG_N; ++j) wmma::mma_sync(acc[i][j], a[i], b[j], acc[i][j]);
        }
        // END SOLUTION t2-fragment-loop
        __syncthreads();   // nobody reads the tiles any more: the next phase may overwrite them
    }

    // Epilogue. The loop's last barrier means every warp is done with As/Bs, so each warp may use
    // 16 x LDC_S floats of them (1,280 bytes, 32-byte aligned) as its staging area; only this warp
    // touches it, so __syncwarp is all the synchronisation needed.
    float* stage = reinterpret_cast<float*>(smem) + warp * TILE * LDC_S;
#pragma unroll
    for (int i = 0; i < FRAG_M; ++i) {
#pragma unroll
        for (int j = 0; j < FRAG_N; ++j) {
            const int r0 = bm + warp_m * WM + i * TILE;
            const int c0 = bn + warp_n * WN + j * TILE;
            if (r0 >= M || c0 >= N) continue;                 // fragment wholly outside C (warp-uniform)
            if (VEC_B && r0 + TILE <= M && c0 + TILE <= N) {
                wmma::store_matrix_sync(C + r0 * N + c0, acc[i][j], N, wmma::mem_row_major);
            } else {
                wmma::store_matrix_sync(stage, acc[i][j], LDC_S, wmma::mem_row_major);
                __syncwarp();
#pragma unroll
                for (int t = 0; t < TILE * TILE / 32; ++t) {   // half a warp per row: coalesced
                    const int r = t * 2 + lane / TILE, c = lane % TILE;
                    if (r0 + r < M && c0 + c < N) C[(r0 + r) * N + c0 + c] = stage[r * LDC_S + c];
                }
                __syncwarp();   // the next fragment may overwrite the staging area
            }
        }
    }
}

}  // namespace t2

extern "C" __global__ void __launch_bounds__(THREADS)
hgemm_t2_smem_vec(int M, int N, int K, const __half* __restrict__ A, const __half* __restrict__ B,
                  float* __restrict__ C) {
    t2::hgemm_t2_body<true>(M, N, K, A, B, C);
}

extern "C" __global__ void __launch_bounds__(THREADS)
hgemm_t2_smem_scalar(int M, int N, int K, const __half* __restrict__ A, const __half* __restrict__ B,
                     float* __restrict__ C) {
    t2::hgemm_t2_body<false>(M, N, K, A, B, C);
}
