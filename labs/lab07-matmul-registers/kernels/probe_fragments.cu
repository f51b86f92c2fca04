// probe_fragments.cu: which lane holds which element, measured through the real instructions.
//
//   nvcc -cubin -O3 -std=c++17 -arch=sm_90 -Xptxas -v probe_fragments.cu
//   Every entry point is launched with ONE warp: grid (1,1,1), block (32,1,1), no dynamic shared memory.
//   Python side: common/fragments.py (the model, the output layouts, the comparisons);
//   tests/test_fragments_gpu.py runs the probes and asserts that every lane matches the model.
//
// The idea. Fill a tile with "tags": element (r, c) holds a number from which (r, c) can be read
// back (r*16 + c and the like: small integers, exact in f16, tf32 and f32). Move the tile into
// registers with the instruction under test, and have every lane write out what its registers
// hold. The model (common/fragments.py, from the PTX ISA) predicts each lane's tags; the test
// compares. No layout formula is used here beyond the addressing a real kernel uses, so the
// probe can tell the model wrong.
//
//   probe_ldmatrix   ldmatrix .x1/.x2/.x4, with and without .trans: raw registers. Lanes whose
//                    address the instruction should ignore point at "poison" rows, so if the
//                    hardware used them, it shows.
//   probe_mma_f16    mma.sync.m16n8k16.row.col.f32.f16.f16.f32: the A and B fragments as loaded by
//                    ldmatrix with the standard addressing (below), then D = A.S for
//                    selector matrices S (D's element (r, n) is A's element (r, n) or (r, n+8)) and
//                    D = I.B (D's element (k, n) is B's element (k, n)). D's values are tags, so each
//                    lane's D registers say where the model's C/D layout puts them.
//   probe_mma_tf32   mma.sync.m16n8k8.row.col.f32.tf32.tf32.f32, the same way. TF32 operands are
//                    32-bit, so ldmatrix (a b16 instruction) moves pairs of halves: an 8x8 b16 matrix
//                    is an 8x4 matrix of 32-bit values, and lane l gets element [l/4][l%4] of it.
//   probe_wmma       nvcuda::wmma::load_matrix_sync of tag tiles; each lane writes x[0..num_elements).
//                    WMMA leaves this layout unspecified: the probe shows it, the model predicts nothing.
//
// Output layouts are in common/fragments.py (PROBE_SIZES, LDMATRIX_VARIANTS, WMMA_FRAGMENTS).
// Needs sm_80 or newer (mma.m16n8k16 with f32 accumulation, ldmatrix, tf32).

#include <cuda_fp16.h>
#include <mma.h>

// The 32-bit shared-memory address ldmatrix wants (a .shared window offset, not a generic pointer).
__device__ __forceinline__ unsigned smem_addr(const void* p)
{
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ unsigned short f16_bits(float v)   // v is a small integer: exact in f16
{
    return __half_as_ushort(__float2half_rn(v));
}

// ---- ldmatrix -------------------------------------------------------------------------------

// The "memory" clobber: the asm reads shared memory through an integer address the compiler cannot
// follow, so the tile's stores must not be moved past it.
template <int NUM, bool TRANS>
__device__ __forceinline__ void ldmatrix(unsigned (&r)[4], unsigned addr)
{
    r[0] = r[1] = r[2] = r[3] = 0xFFFFFFFFu;   // registers an .x1/.x2 does not write stay all-ones
    if constexpr (NUM == 1 && !TRANS)
        asm volatile("ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%0}, [%1];\n" : "=r"(r[0]) : "r"(addr) : "memory");
    else if constexpr (NUM == 2 && !TRANS)
        asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];\n"
                     : "=r"(r[0]), "=r"(r[1]) : "r"(addr) : "memory");
    else if constexpr (NUM == 4 && !TRANS)
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr) : "memory");
    else if constexpr (NUM == 1 && TRANS)
        asm volatile("ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16 {%0}, [%1];\n" : "=r"(r[0]) : "r"(addr) : "memory");
    else if constexpr (NUM == 2 && TRANS)
        asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];\n"
                     : "=r"(r[0]), "=r"(r[1]) : "r"(addr) : "memory");
    else
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr) : "memory");
}

// Rows 0..31: the rows the lanes may address, element c of row R = R*8 + c. Rows 32..39: poison,
// 0x8000 | (R*8 + c). Lane l supplies row l if it is one of the 8*NUM lanes that supply addresses,
// else poison row 32 + l%8 (a valid address: on sm_80+ the hardware ignores it, and if it did
// not, the poison tag would show in the output).
template <int NUM, bool TRANS>
__device__ __forceinline__ void ldmatrix_case(const unsigned short (*tile)[8], unsigned* out, int variant)
{
    const int lane = threadIdx.x;
    const int row = lane < 8 * NUM ? lane : 32 + lane % 8;
    unsigned r[4];
    ldmatrix<NUM, TRANS>(r, smem_addr(&tile[row][0]));
    for (int j = 0; j < 4; ++j) out[(variant * 32 + lane) * 4 + j] = r[j];
}

extern "C" __global__ void __launch_bounds__(32) probe_ldmatrix(unsigned* __restrict__ out)
{
    __shared__ __align__(16) unsigned short tile[40][8];   // 40 rows of 16 bytes
    for (int i = threadIdx.x; i < 40 * 8; i += 32) {
        const int R = i / 8;
        tile[R][i % 8] = static_cast<unsigned short>(R < 32 ? i : (0x8000 | i));
    }
    __syncwarp();
    // variants in the order of fragments.LDMATRIX_VARIANTS
    ldmatrix_case<1, false>(tile, out, 0);
    ldmatrix_case<2, false>(tile, out, 1);
    ldmatrix_case<4, false>(tile, out, 2);
    ldmatrix_case<1, true>(tile, out, 3);
    ldmatrix_case<2, true>(tile, out, 4);
    ldmatrix_case<4, true>(tile, out, 5);
}

// ---- mma.sync m16n8k16, f16 inputs, f32 accumulation -----------------------------------------

__device__ __forceinline__ void mma_16816(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1)
{
    const float c = 0.0f;   // C = 0: D is the product alone
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%10, %11, %12, %13};\n"
                 : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1),
                   "f"(c), "f"(c), "f"(c), "f"(c));
}

extern "C" __global__ void __launch_bounds__(32) probe_mma_f16(unsigned* __restrict__ out)
{
    // Tiles as a real kernel keeps them: A row-major As[m][k]; B K-major Bs[k][n] (n contiguous).
    __shared__ __align__(16) unsigned short As[16][16];   // A[r][k] = r*16 + k
    __shared__ __align__(16) unsigned short Id[16][16];   // the 16x16 identity
    __shared__ __align__(16) unsigned short Bs[16][8];    // B[k][n] = k*8 + n
    __shared__ __align__(16) unsigned short S0[16][8];    // S0[k][n] = (k == n)
    __shared__ __align__(16) unsigned short S1[16][8];    // S1[k][n] = (k == n + 8)
    const int lane = threadIdx.x;
    for (int i = lane; i < 256; i += 32) {
        const int r = i / 16, k = i % 16;
        As[r][k] = f16_bits(static_cast<float>(i));
        Id[r][k] = f16_bits(r == k ? 1.0f : 0.0f);
    }
    for (int i = lane; i < 128; i += 32) {
        const int k = i / 8, n = i % 8;
        Bs[k][n] = f16_bits(static_cast<float>(i));
        S0[k][n] = f16_bits(k == n ? 1.0f : 0.0f);
        S1[k][n] = f16_bits(k == n + 8 ? 1.0f : 0.0f);
    }
    __syncwarp();

    // Standard addressing: A .x4 lane l -> &As[l%16][(l/16)*8] gives a0a1,
    // a2a3, a4a5, a6a7; B .x2.trans lane l -> &Bs[l%16][0] gives b0b1, b2b3 (lanes 16-31 repeat
    // lanes 0-15's addresses, which .x2 ignores).
    const int arow = lane % 16, acol = (lane / 16) * 8, brow = lane % 16;
    unsigned a[4], id[4], b[4], s0[4], s1[4];
    ldmatrix<4, false>(a, smem_addr(&As[arow][acol]));
    ldmatrix<4, false>(id, smem_addr(&Id[arow][acol]));
    ldmatrix<2, true>(b, smem_addr(&Bs[brow][0]));
    ldmatrix<2, true>(s0, smem_addr(&S0[brow][0]));
    ldmatrix<2, true>(s1, smem_addr(&S1[brow][0]));

    float d0[4], d1[4], d2[4];
    mma_16816(d0, a, s0[0], s0[1]);    // D[r][n] = A[r][n]
    mma_16816(d1, a, s1[0], s1[1]);    // D[r][n] = A[r][n + 8]
    mma_16816(d2, id, b[0], b[1]);     // D[k][n] = B[k][n]

    unsigned* o = out + lane * 18;     // fragments.MMA_F16_WORDS
    for (int j = 0; j < 4; ++j) o[j] = a[j];
    o[4] = b[0];
    o[5] = b[1];
    for (int j = 0; j < 4; ++j) {
        o[6 + j] = __float_as_uint(d0[j]);
        o[10 + j] = __float_as_uint(d1[j]);
        o[14 + j] = __float_as_uint(d2[j]);
    }
}

// ---- mma.sync m16n8k8, tf32 inputs, f32 accumulation -----------------------------------------

__device__ __forceinline__ void mma_1688_tf32(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1)
{
    const float c = 0.0f;
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%10, %11, %12, %13};\n"
                 : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1),
                   "f"(c), "f"(c), "f"(c), "f"(c));
}

extern "C" __global__ void __launch_bounds__(32) probe_mma_tf32(unsigned* __restrict__ out)
{
    // 32-bit tiles. A row-major As[m][k] (16x8: a row is 32 bytes = two 16-byte ldmatrix rows);
    // B N-major Bn[n][k] (k contiguous), the "col" layout the instruction names.
    __shared__ __align__(16) float As[16][8];   // A[r][k] = r*8 + k
    __shared__ __align__(16) float Js[16][8];   // J[m][k] = (m % 8 == k)
    __shared__ __align__(16) float Bn[8][8];    // Bn[n][k] = B[k][n] = k*8 + n
    __shared__ __align__(16) float In[8][8];    // the 8x8 identity (symmetric: layout does not matter)
    const int lane = threadIdx.x;
    for (int i = lane; i < 128; i += 32) {
        const int m = i / 8, k = i % 8;
        As[m][k] = static_cast<float>(i);
        Js[m][k] = (m % 8 == k) ? 1.0f : 0.0f;
    }
    for (int i = lane; i < 64; i += 32) {
        const int n = i / 8, k = i % 8;
        Bn[n][k] = static_cast<float>(k * 8 + n);
        In[n][k] = (n == k) ? 1.0f : 0.0f;
    }
    __syncwarp();

    // A: .x4, lane l -> &As[l%16][(l/16)*4]: matrices (rows 0-7 | 8-15) x (k 0-3 | 4-7) = a0..a3.
    // B: .x2, lane l -> &Bn[l%8][((l/8)%2)*4]: matrices k 0-3 and 4-7 of n 0-7 = b0, b1.
    const int arow = lane % 16, acol = (lane / 16) * 4;
    const int brow = lane % 8, bcol = ((lane / 8) % 2) * 4;
    unsigned a[4], j[4], b[4], id[4];
    ldmatrix<4, false>(a, smem_addr(&As[arow][acol]));
    ldmatrix<4, false>(j, smem_addr(&Js[arow][acol]));
    ldmatrix<2, false>(b, smem_addr(&Bn[brow][bcol]));
    ldmatrix<2, false>(id, smem_addr(&In[brow][bcol]));

    float d0[4], d1[4];
    mma_1688_tf32(d0, a, id[0], id[1]);   // D[r][n] = A[r][n]
    mma_1688_tf32(d1, j, b[0], b[1]);     // D[m][n] = B[m % 8][n]

    unsigned* o = out + lane * 14;        // fragments.MMA_TF32_WORDS
    for (int q = 0; q < 4; ++q) o[q] = a[q];
    o[4] = b[0];
    o[5] = b[1];
    for (int q = 0; q < 4; ++q) {
        o[6 + q] = __float_as_uint(d0[q]);
        o[10 + q] = __float_as_uint(d1[q]);
    }
}

// ---- WMMA: the layout the API does not specify ------------------------------------------------

using namespace nvcuda;

template <typename Frag>
__device__ __forceinline__ void write_fragment(const Frag& f, float* out, int which)
{
    float* o = out + (which * 32 + threadIdx.x) * 16;     // fragments.WMMA_SLOTS
    for (int i = 0; i < 16; ++i)
        o[i] = i < Frag::num_elements ? static_cast<float>(f.x[i]) : -1.0f;
}

extern "C" __global__ void __launch_bounds__(32) probe_wmma(float* __restrict__ out)
{
    __shared__ __align__(32) __half Trow[16][16];   // element (r, c) at [r][c]: r*16 + c
    __shared__ __align__(32) __half Tcol[16][16];   // element (r, c) at [c][r]: r*16 + c
    __shared__ __align__(32) float Facc[16][16];    // element (r, c) at [r][c]: r*16 + c
    for (int i = threadIdx.x; i < 256; i += 32) {
        const int r = i / 16, c = i % 16;
        Trow[r][c] = __float2half_rn(static_cast<float>(i));
        Tcol[c][r] = __float2half_rn(static_cast<float>(i));
        Facc[r][c] = static_cast<float>(i);
    }
    __syncwarp();

    wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> a;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::row_major> b_row;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::col_major> b_col;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    wmma::load_matrix_sync(a, &Trow[0][0], 16);
    wmma::load_matrix_sync(b_row, &Trow[0][0], 16);
    wmma::load_matrix_sync(b_col, &Tcol[0][0], 16);
    wmma::load_matrix_sync(acc, &Facc[0][0], 16, wmma::mem_row_major);
    // in the order of fragments.WMMA_FRAGMENTS
    write_fragment(a, out, 0);
    write_fragment(b_row, out, 1);
    write_fragment(b_col, out, 2);
    write_fragment(acc, out, 3);
}
