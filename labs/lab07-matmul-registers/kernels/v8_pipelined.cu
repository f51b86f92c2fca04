// v8_pipelined.cu -- lab 7, v8: the entry points. The kernel itself (its idea, tiles, parameters,
// rules and body) is v8_pipelined.cuh, which lab 7d's split-K includes too.
//
// Launch: 1D block of THREADS = (BM/WM)*(BN/WN)*32 threads (256 by default),
//         grid = (ceil(N / BN), ceil(M / BM), 1), SMEM_BYTES of DYNAMIC shared memory
//         (36 KB by default; above 48 KB the launcher raises the per-kernel limit first).
//   sgemm_v8_vec     only when K % 4 == 0 and N % 4 == 0 (the rule of v6/v7; the body itself needs only
//                    N % 4 == 0): B copied in 16-byte cp.async chunks, C written as float4.
//   sgemm_v8_scalar  any shape: B copied with 4-byte cp.async, C read and written per element.
// -DNAME=value overrides a parameter (make tune); V8_PROBE=1 or 3 are make bounds' builds that leave
// work out (v8_pipelined.cuh says what): their results are wrong by design, only their times count.

#include "v8_pipelined.cuh"

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
