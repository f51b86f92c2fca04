// tx.cu -- the grader's probe of a stage's expect_tx count: the student's TX_BYTES (h2 or h3) printed
// with the tile it was built for (-DBM=..., -DBN=...: grading/probes.py builds every tile the kernel allows and judges).
//
//   nvcc -std=c++17 -I<kernels> -DPROBE_KERNEL='"h2_tma_mbarrier.cu"' [-DBN=64] -o probe tx.cu
//
// Output: tx BM BN BK TX_BYTES
#ifndef __CUDA_ARCH__
#include PROBE_KERNEL
#include <cstdio>

int main()
{
    printf("tx %d %d %d %lld\n", BM, BN, BK, (long long)TX_BYTES);
    return 0;
}
#endif
