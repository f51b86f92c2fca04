// t1_wmma_global.cu: tensor cores, fed straight from global memory.
//
//   C (FP32, M x N) = A (FP16, M x K) . B (FP16, K x N), all row-major, FP32 accumulation.
//   Entry point: hgemm_t1_wmma_global
//   Launch:      128 threads (1D), grid = (ceil(N/32), ceil(M/32)); blockIdx.x walks N, blockIdx.y walks M.
//   Shapes:      any M >= 1, N >= 1; K >= 8 with K % 8 == 0 (the driver refuses other K).
//
// The idea. This is the tensor-core version of chapter 7's naive kernel. One warp owns one 16x16
// tile of C and walks K in 16-deep steps: wmma::load_matrix_sync pulls a 16x16 fragment of A and
// one of B out of global memory, wmma::mma_sync multiplies them into a 16x16 FP32 accumulator.
// There is no shared memory and no reuse beyond what L1 and L2 happen to catch: every mma_sync
// waits for its own global loads. The 4 warps of a block (2 x 2, a 32x32 block tile) share nothing
// but the caches; the block is only a way to hand out warps.
//
// The lesson inside: WMMA hides the layout; here is how to see it.
//   A fragment is the warp's share of a 16x16 tile: each lane holds `num_elements` values in
//   frag.x[], and which (row, col) of the tile each x[i] is, is deliberately left unspecified
//   (it differs between GPU generations). For interior tiles that does not matter: load_matrix_sync
//   and store_matrix_sync know the map. At the edges it does. load_matrix_sync reads all 16x16
//   values, so a tile that crosses the end of the matrix would read past it, and it also has
//   alignment rules (below) that some shapes break. The fix is to fill the fragment ourselves,
//   element by element, with a guarded load per element (0 outside the matrix). For that we need
//   the map, and we can measure it at run time: load_matrix_sync a 16x16 "coordinate matrix"
//   whose element (r, c) holds r*16 + c into a fragment of the same type. Afterwards
//   where.x[i] == 16*r + c tells this lane that its x[i] is element (r, c). The values 0..255 are
//   exact in FP16 (11-bit significand) and in FP32. The coordinate matrices live in global memory
//   as __device__ constants, built at compile time (a constexpr function makes the FP16 bit
//   patterns), so the trick needs no shared memory and no setup from the host. The accumulator
//   gets the same treatment for the guarded stores of edge tiles.
//   (A fragment may have more slots than the tile has elements: matrix_a and matrix_b fragments
//   have 16 halves per lane, 512 slots for 256 elements, a leftover of Volta's layout. The
//   coordinate matrix names every slot all the same, filling them all is harmless, and on sm_80+
//   ptxas drops the loads of the 8 slots per lane that the m16n8k16 instructions never read.)
//
// When may load_matrix_sync / store_matrix_sync touch global memory directly? (CUDA C++
// Programming Guide, warp matrix functions) The pointer must be 256-bit (32-byte) aligned and ldm,
// the row stride in elements, a multiple of 8 for __half and of 4 for float. cudaMalloc'd bases are
// 256-byte aligned, and our tile origins sit at rows and columns that are multiples of 16:
//   A tile at (row0, k0): byte offset 2*(row0*K + k0). K % 8 == 0 makes 2*row0*K a multiple of
//       256 and 2*k0 is a multiple of 32; ldm = K is a multiple of 8. Legal whenever the tile
//       is inside, i.e. row0 + 16 <= M and k0 + 16 <= K.
//   B tile at (k0, col0): byte offset 2*(k0*N + col0), always a multiple of 32, but ldm = N must
//       be a multiple of 8. So B goes direct only when N % 8 == 0 and col0 + 16 <= N; for other N
//       every B step is filled element by element. (This is not pedantry: the hardware loads
//       fragment pairs of halves with 4-byte loads, which fault on odd rows when N is odd.)
//   The K remainder: K % 16 == 8 leaves a last step whose columns of A (rows of B) k0+8..k0+15
//       are outside; that step is filled element by element, zeros beyond K.
//   C tile at (row0, col0): byte offset 4*(row0*N + col0), a multiple of 64; ldm = N must be a
//       multiple of 4 (float). Stored direct when inside and N % 4 == 0, else element by element.
// The choice is made once per warp (and once for the K remainder), so the interior warps run a
// loop with no guards at all.
//
// What to look for in SASS (make sass): HMMA.16816.F32, two per 16x16x16 mma_sync (sm_80+ tensor
// cores natively do m16n8k16, so WMMA's 16x16x16 is two of them); the fragment loads are LDG.E
// (32-bit, two halves each: 4 per lane for A, 4 for B) in the interior loop, and 16-bit LDG.E.U16
// in the edge loops. B is row-major in memory but the tensor core wants pairs along K, so each B
// load is followed by MOVM.16.MT88, an in-register 8x8 transpose: WMMA hiding a layout again. And
// no LDS, LDSM or STS at all: this kernel never touches shared memory.

#include <cuda_fp16.h>
#include <mma.h>
#include <utility>

using namespace nvcuda;

#define THREADS 128          // 4 warps, arranged 2 x 2

namespace t1 {

constexpr int TILE = 16;     // one WMMA tile: 16x16 of C, 16-deep steps in K
constexpr int BM = 32;       // block tile = 2 x 2 warp tiles of 16x16
constexpr int BN = 32;
static_assert((BM / TILE) * (BN / TILE) * 32 == THREADS, "one warp per 16x16 tile of the 32x32 block tile");

using FragA = wmma::fragment<wmma::matrix_a, TILE, TILE, TILE, __half, wmma::row_major>;
using FragB = wmma::fragment<wmma::matrix_b, TILE, TILE, TILE, __half, wmma::row_major>;
using FragC = wmma::fragment<wmma::accumulator, TILE, TILE, TILE, float>;

// ---- the coordinate matrices: element (r, c) holds r*16 + c -------------------------------------

// FP16 bit pattern of a small non-negative integer n (0..255): n = 1.m x 2^e with e = floor(log2 n),
// biased exponent e + 15, and the bits of n below its leading 1 shifted up into the 10-bit mantissa.
constexpr unsigned short fp16_bits_of_small_int(int n) {
    if (n == 0) return 0;
    int e = 0;
    while ((n >> (e + 1)) != 0) ++e;
    return static_cast<unsigned short>(((e + 15) << 10) | ((n - (1 << e)) << (10 - e)));
}
static_assert(fp16_bits_of_small_int(1) == 0x3C00 && fp16_bits_of_small_int(255) == 0x5BF8,
              "FP16 encoding of 1.0 and 255.0");

struct alignas(32) HalfCoords { __half v[TILE * TILE]; };   // 32-byte aligned: load_matrix_sync's rule
struct alignas(32) FloatCoords { float v[TILE * TILE]; };

template <int... I>
constexpr HalfCoords make_half_coords(std::integer_sequence<int, I...>) {
    return HalfCoords{{__half(__half_raw{fp16_bits_of_small_int(I)})...}};
}
template <int... I>
constexpr FloatCoords make_float_coords(std::integer_sequence<int, I...>) {
    return FloatCoords{{static_cast<float>(I)...}};
}

__device__ const HalfCoords kCoordHalf = make_half_coords(std::make_integer_sequence<int, TILE * TILE>{});
__device__ const FloatCoords kCoordFloat = make_float_coords(std::make_integer_sequence<int, TILE * TILE>{});

// ---- guarded element-wise fills and stores ------------------------------------------------------

// frag <- the 16x16 tile at (row0, col0) of a rows x cols row-major FP16 matrix P (row stride ld),
// element by element; 0 outside the matrix. `where` is a fragment of the same type loaded from
// kCoordHalf: where.x[i] = 16*r + c names the tile element that x[i] holds in this lane.
template <class Frag>
__device__ __forceinline__ void fill_guarded(Frag& frag, const Frag& where, const __half* __restrict__ P,
                                             int rows, int cols, int ld, int row0, int col0) {
#pragma unroll
    for (int i = 0; i < Frag::num_elements; ++i) {
        const int rc = __half2int_rz(where.x[i]);        // exact: 0..255
        const int r = row0 + (rc >> 4);
        const int c = col0 + (rc & 15);
        frag.x[i] = (r < rows && c < cols) ? P[r * ld + c] : __float2half(0.0f);
    }
}

// The 16x16 tile at (row0, col0) of C <- acc, element by element, skipping what is outside M x N.
__device__ __forceinline__ void store_guarded(float* __restrict__ C, const FragC& acc, int M, int N,
                                              int row0, int col0) {
    FragC where;
    wmma::load_matrix_sync(where, kCoordFloat.v, TILE, wmma::mem_row_major);
#pragma unroll
    for (int i = 0; i < FragC::num_elements; ++i) {
        const int rc = static_cast<int>(where.x[i]);
        const int r = row0 + (rc >> 4);
        const int c = col0 + (rc & 15);
        if (r < M && c < N) C[r * N + c] = acc.x[i];
    }
}

}  // namespace t1

extern "C" __global__ void __launch_bounds__(THREADS)
hgemm_t1_wmma_global(int M, int N, int K, const __half* __restrict__ A, const __half* __restrict__ B,
                     float* __restrict__ C) {
    using namespace t1;
    const int warp = threadIdx.x / 32;
    const int row0 = blockIdx.y * BM + (warp / 2) * TILE;   // this warp's 16x16 tile of C
    const int col0 = blockIdx.x * BN + (warp % 2) * TILE;
    if (row0 >= M || col0 >= N) return;   // tile entirely outside; warp-uniform, and t1 has no barriers

    FragC acc;
    wmma::fill_fragment(acc, 0.0f);
    FragA a;
    FragB b;

    const bool a_direct = row0 + TILE <= M;                  // (K % 8 == 0 is the driver's promise)
    const bool b_direct = (N % 8 == 0) && col0 + TILE <= N;  // ldm = N must be a multiple of 8
    const int k_full = K & ~(TILE - 1);                      // steps k0 < k_full lie wholly inside K

    if (a_direct && b_direct) {
        // Interior warp: the hot loop, no guards. Unrolled so that the loads of later steps can be
        // issued while earlier steps wait: the only latency hiding this kernel has.
#pragma unroll 4
        for (int k0 = 0; k0 < k_full; k0 += TILE) {
            wmma::load_matrix_sync(a, A + row0 * K + k0, K);
            wmma::load_matrix_sync(b, B + k0 * N + col0, N);
            wmma::mma_sync(acc, a, b, acc);
        }
    } else {
        // Edge warp (M or N edge, or N % 8 != 0): learn the fragment maps once, then fill whichever
        // operand cannot be loaded directly element by element.
        FragA where_a;
        FragB where_b;
        wmma::load_matrix_sync(where_a, kCoordHalf.v, TILE);
        wmma::load_matrix_sync(where_b, kCoordHalf.v, TILE);
        for (int k0 = 0; k0 < k_full; k0 += TILE) {
            if (a_direct) wmma::load_matrix_sync(a, A + row0 * K + k0, K);
            else          fill_guarded(a, where_a, A, M, K, K, row0, k0);
            if (b_direct) wmma::load_matrix_sync(b, B + k0 * N + col0, N);
            else          fill_guarded(b, where_b, B, K, N, N, k0, col0);
            wmma::mma_sync(acc, a, b, acc);
        }
    }

    if (k_full < K) {
        // K % 16 == 8: the last step is half outside K, for every warp. Zeros beyond K in both
        // operands, so the missing products are exactly 0.
        FragA where_a;
        FragB where_b;
        wmma::load_matrix_sync(where_a, kCoordHalf.v, TILE);
        wmma::load_matrix_sync(where_b, kCoordHalf.v, TILE);
        fill_guarded(a, where_a, A, M, K, K, row0, k_full);
        fill_guarded(b, where_b, B, K, N, N, k_full, col0);
        wmma::mma_sync(acc, a, b, acc);
    }

    if (row0 + TILE <= M && col0 + TILE <= N && N % 4 == 0)
        wmma::store_matrix_sync(C + row0 * N + col0, acc, N, wmma::mem_row_major);
    else
        store_guarded(C, acc, M, N, row0, col0);
}
