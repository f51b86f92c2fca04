// v6_vectorized.cu -- lab 7, v6: 16-byte loads and a transposed A tile (chapter 8, section 4)
//
// C = A * B, row-major FP32, A is M x K, B is K x N, C is M x N, any M, N, K >= 1.
// Launch: 1D block of THREADS = 256 threads, grid = (ceil(N / 128), ceil(M / 128), 1).
// Two entry points, chosen once per launch by the driver:
//   sgemm_v6_vec     only when K % 4 == 0 and N % 4 == 0 (and A, B, C 16-byte aligned, as
//                    cudaMalloc gives): then every row of A, B and C starts on a 16-byte boundary
//                    and a group of 4 floats starting at a column multiple of 4 can move as one float4.
//   sgemm_v6_scalar  any shape: the same kernel with scalar global loads and stores.
//
// What v6 adds over v5 (same 128 x 128 x 8 tiles, same 8 x 8 outputs per thread, same mapping):
// one instruction moves 16 bytes wherever it can, because instruction issue is itself a limit.
//   - Global loads as float4: per phase each thread loads one group of 4 consecutive floats of A and
//     one of B (v5: 4 + 4 scalar loads). A warp reads 16 rows x 32 bytes of A and 512 contiguous
//     bytes of B: every 32-byte sector fetched is used whole.
//   - A stored transposed, As[BK][BM]: for a fixed k a thread's 8 values of A are contiguous, so
//     regM is two LDS.128; regN (contiguous in Bs already) is two more. 4 shared loads per 64 FFMA.
//   - VEC stores C with float4 where all 4 columns are inside.
// Edges: a block whose C tile and K-slice lie inside takes an unguarded path (float4 in VEC);
// otherwise a group of 4 that lies fully inside still moves as one float4 (VEC), and a group that
// crosses the edge is loaded element by element with guards, zero-filling the rest. With
// K % 4 == 0 and N % 4 == 0 a group never crosses the K or N edge, only lies inside or outside.
//
// SASS to look for (cuobjdump -sass), per phase of 8 k: 512 FFMA and 32 LDS.128 (4 per k: 2 from
// As feeding regM, 2 from Bs feeding regN), no scalar LDS, no LDL/STL. Global side: VEC has
// LDG.E.128 (2 in the interior path, more in the edge path), STS x4 (the transposed A group) and
// one STS.128 (the B group); the scalar variant has LDG.E (scalar). Compare with v5: nvcc 13 already
// turned v5's loads into LDS.128 by merging across k (its As reads are 2-way bank conflicts, v6's
// are not), so the inner loops are close; what v6 changes most is the cost of each phase's copy:
// 2 LDG.128 + 4 STS + 1 STS.128 instead of 8 LDG + 8 STS and their address arithmetic.
// Bank conflicts: the As reads are broadcasts (a warp has only two thread rows); the Bs reads of
// the 16 thread columns are 32 bytes apart, so columns 0,4,8,12 hit the same banks: 4 wavefronts
// per LDS.128 where 2 would do. v7's warp tile removes this. The transposed stores are made
// conflict-free by padding each As row by 4 floats (see AS_LD).

constexpr int BM = 128;  // block tile rows: 16 thread rows x TM
constexpr int BN = 128;  // block tile columns: 16 thread columns x TN; a B row slice is 512 bytes
constexpr int BK = 8;    // K-slice per phase: a row of the A slice is 8 floats = two float4 groups
constexpr int TM = 8;    // thread tile rows: regM[8] = two LDS.128 from a row of the transposed As
constexpr int TN = 8;    // thread tile columns: regN[8] = two LDS.128 from a row of Bs
constexpr int THREADS = (BM / TM) * (BN / TN);   // 256: thread t owns rows 8*(t/16), cols 8*(t%16)

// As is stored transposed, [BK][AS_LD]: As[k][m] = A[cRow + m][k0 + k]. Row length BM + 4: the 4
// transposed scalar stores of a warp write 16 rows m x 2 column groups; with a row length of 132
// (= 4 mod 32 banks) the two groups land 16 banks apart, so all 32 stores hit distinct banks
// (length 128 would put both groups in the same bank: 2-way). 132 floats = 528 bytes keeps every
// row 16-byte aligned for LDS.128.
constexpr int AS_LD = BM + 4;
constexpr int A_GROUPS = BM * BK / 4 / THREADS;  // 1 float4 of A per thread per phase
constexpr int B_GROUPS = BK * BN / 4 / THREADS;  // 1 float4 of B per thread per phase
constexpr int A_ROW_STEP = THREADS / (BK / 4);   // 128 rows between a thread's A groups
constexpr int B_ROW_STEP = THREADS / (BN / 4);   // 8 rows between a thread's B groups

static_assert((BM / TM) * (BN / TN) == THREADS, "v6: threads x (TM x TN) must cover BM x BN exactly");
static_assert(TM % 4 == 0 && TN % 4 == 0, "v6: regM and regN are read as float4 (LDS.128)");
static_assert(BK % 4 == 0 && BN % 4 == 0, "v6: tile rows must split into float4 groups");
static_assert((BM * BK) % (4 * THREADS) == 0 && (BK * BN) % (4 * THREADS) == 0,
              "v6: THREADS * 4 must divide BM*BK and BK*BN (whole float4 groups per thread)");
static_assert(THREADS % (BK / 4) == 0 && THREADS % (BN / 4) == 0,
              "v6: a thread's successive groups must stay in the same column");
static_assert(AS_LD % 4 == 0, "v6: As rows must stay 16-byte aligned for LDS.128");
static_assert((BK * AS_LD + BK * BN) * 4 <= 48 * 1024, "v6: static shared memory is limited to 48 KB");

// ---- global memory helpers: a group is 4 consecutive floats p[0..3] of one row ----------------

template <bool VEC>
__device__ __forceinline__ float4 load4(const float* __restrict__ p)
{
    // BEGIN SOLUTION v6-float4-load: VEC: p[0..3] as one float4 (LDG.E.128); else 4 floats
    if constexpr (VEC)
        return *reinterpret_cast<const float4*>(p);   // LDG.E.128: p is 16-byte aligned
    else
        return make_float4(p[0], p[1], p[2], p[3]);
    // END SOLUTION v6-float4-load
}

// Edge version, for a row that exists: only `valid` elements from p on exist (may be <= 0 or >= 4).
// Missing elements read as 0. A group fully inside still takes one float4 in VEC.
template <bool VEC>
__device__ __forceinline__ float4 load4_guarded(const float* __restrict__ p, int valid)
{
    if (valid <= 0) return make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (valid >= 4) return load4<VEC>(p);
    return make_float4(p[0], valid > 1 ? p[1] : 0.0f, valid > 2 ? p[2] : 0.0f, 0.0f);
}

template <bool VEC>
__device__ __forceinline__ void store4(float* __restrict__ p, float4 v)
{
    if constexpr (VEC) {
        *reinterpret_cast<float4*>(p) = v;              // STG.E.128
    } else {
        p[0] = v.x; p[1] = v.y; p[2] = v.z; p[3] = v.w;
    }
}

template <bool VEC>
__device__ __forceinline__ void store4_guarded(float* __restrict__ p, float4 v, int valid)
{
    if (valid >= 4) { store4<VEC>(p, v); return; }
    if (valid > 0) p[0] = v.x;
    if (valid > 1) p[1] = v.y;
    if (valid > 2) p[2] = v.z;
}

// ---- the kernel body, shared by both entry points ----------------------------------------------

template <bool VEC>
__device__ __forceinline__ void sgemm_v6_body(int M, int N, int K, const float* __restrict__ A,
                                              const float* __restrict__ B, float* __restrict__ C)
{
    __shared__ __align__(16) float As[BK][AS_LD];    // transposed: As[k][m], 8 x 132 floats
    __shared__ __align__(16) float Bs[BK][BN];       // Bs[k][n], 8 x 128 floats

    const int cRow = blockIdx.y * BM;
    const int cCol = blockIdx.x * BN;
    const int tid = threadIdx.x;

    // Compute mapping (as v5): thread owns rows threadRow*8 + 0..7, columns threadCol*8 + 0..7.
    const int threadRow = tid / (BN / TN);           // 0..15
    const int threadCol = tid % (BN / TN);           // 0..15

    // Load mapping: group g of A is row aRow + g*A_ROW_STEP, columns aCol..aCol+3 of the slice;
    // a warp covers 16 rows x 2 groups. Group g of B is row bRow + g*B_ROW_STEP, columns
    // bCol..bCol+3; a warp covers 32 groups = one 512-byte row segment.
    const int aRow = tid / (BK / 4), aCol = (tid % (BK / 4)) * 4;
    const int bRow = tid / (BN / 4), bCol = (tid % (BN / 4)) * 4;

    const float* Ablk = A + cRow * K;                // this block's rows of A
    const float* Bblk = B + cCol;                    // this block's columns of B
    const bool blockInside = cRow + BM <= M && cCol + BN <= N;

    // Where this thread reads its operands in shared memory: one row of As / Bs per k.
    const float* aRead = &As[0][threadRow * TM];
    const float* bRead = &Bs[0][threadCol * TN];

    float acc[TM][TN] = {};
    float4 ra[A_GROUPS], rb[B_GROUPS];

    for (int k0 = 0; k0 < K; k0 += BK) {
        // 1. global -> registers
        if (blockInside && k0 + BK <= K) {           // interior: no guards
#pragma unroll
            for (int g = 0; g < A_GROUPS; ++g)
                ra[g] = load4<VEC>(Ablk + (aRow + g * A_ROW_STEP) * K + k0 + aCol);
#pragma unroll
            for (int g = 0; g < B_GROUPS; ++g)
                rb[g] = load4<VEC>(Bblk + (k0 + bRow + g * B_ROW_STEP) * N + bCol);
        } else {                                     // edge: guarded, zero-filled
#pragma unroll
            for (int g = 0; g < A_GROUPS; ++g) {
                const int r = aRow + g * A_ROW_STEP;
                ra[g] = cRow + r < M ? load4_guarded<VEC>(Ablk + r * K + k0 + aCol, K - (k0 + aCol))
                                     : make_float4(0.0f, 0.0f, 0.0f, 0.0f);   // row below A
            }
#pragma unroll
            for (int g = 0; g < B_GROUPS; ++g) {
                const int r = k0 + bRow + g * B_ROW_STEP;
                rb[g] = r < K ? load4_guarded<VEC>(Bblk + r * N + bCol, N - (cCol + bCol))
                             : make_float4(0.0f, 0.0f, 0.0f, 0.0f);           // row past K
            }
        }
        // 2. registers -> shared: A transposed (4 scalar STS), B as is (one STS.128)
        // BEGIN SOLUTION v6-transposed-store: ra[g] = A[row r][k aCol..aCol+3] into As[k][m]
#pragma unroll
        for (int g = 0; g < A_GROUPS; ++g) {
            const int r = aRow + g * A_ROW_STEP;
            As[aCol + 0][r] = ra[g].x;
            As[aCol + 1][r] = ra[g].y;
            As[aCol + 2][r] = ra[g].z;
            As[aCol + 3][r] = ra[g].w;
        }
        // END SOLUTION v6-transposed-store
#pragma unroll
        for (int g = 0; g < B_GROUPS; ++g)
            *reinterpret_cast<float4*>(&Bs[bRow + g * B_ROW_STEP][bCol]) = rb[g];
        __syncthreads();

        // 3. outer products: per k, 4 LDS.128 feed 64 FFMA
#pragma unroll
        for (int k = 0; k < BK; ++k) {
            // BEGIN SOLUTION v6-float4-operands: regM[8], regN[8] from As[k], Bs[k] as float4 (LDS.128)
            float regM[TM], regN[TN];
#pragma unroll
            for (int i = 0; i < TM; i += 4) {
                const float4 v = *reinterpret_cast<const float4*>(aRead + k * AS_LD + i);
                regM[i] = v.x; regM[i + 1] = v.y; regM[i + 2] = v.z; regM[i + 3] = v.w;
            }
#pragma unroll
            for (int j = 0; j < TN; j += 4) {
                const float4 v = *reinterpret_cast<const float4*>(bRead + k * BN + j);
                regN[j] = v.x; regN[j + 1] = v.y; regN[j + 2] = v.z; regN[j + 3] = v.w;
            }
            // END SOLUTION v6-float4-operands
            // BEGIN SOLUTION v6-outer-product: your v5 outer product: acc += regM x regN
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j)
                    acc[i][j] += regM[i] * regN[j];
            // END SOLUTION v6-outer-product
        }
        __syncthreads();                             // before the next phase overwrites As, Bs
    }

    // 4. epilogue: each row of the thread tile is two groups of 4 columns
    const int col0 = cCol + threadCol * TN;
#pragma unroll
    for (int i = 0; i < TM; ++i) {
        const int row = cRow + threadRow * TM + i;
        if (!blockInside && row >= M) break;         // rows grow with i: the rest are below C too
        float* c = C + row * N + col0;
#pragma unroll
        for (int j = 0; j < TN; j += 4) {
            const float4 v = make_float4(acc[i][j], acc[i][j + 1], acc[i][j + 2], acc[i][j + 3]);
            if (blockInside)
                store4<VEC>(c + j, v);
            else
                store4_guarded<VEC>(c + j, v, N - (col0 + j));
        }
    }
}

extern "C" __global__ void __launch_bounds__(THREADS)
sgemm_v6_vec(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B,
             float* __restrict__ C)
{
    sgemm_v6_body<true>(M, N, K, A, B, C);
}

extern "C" __global__ void __launch_bounds__(THREADS)
sgemm_v6_scalar(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B,
                float* __restrict__ C)
{
    sgemm_v6_body<false>(M, N, K, A, B, C);
}
