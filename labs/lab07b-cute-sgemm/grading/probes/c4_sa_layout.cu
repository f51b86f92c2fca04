// c4_sa_layout.cu -- the grader's probe of c4's shared A tile: CuTe's SmemLayoutA of the student's file,
// evaluated on the CPU and printed, every element of every stage (grading/probes.py judges it).
//
//   nvcc -std=c++17 --expt-relaxed-constexpr -I<cutlass include> -I<kernels> -DPROBE_KERNEL='"c4_swizzle.cu"'
//        [-DBK=64] -o probe c4_sa_layout.cu
//
// The kernel file is included in the host pass only (#ifndef __CUDA_ARCH__): nvcc compiles no device
// code, so a probe takes seconds. Output:
//   tile BM BK STAGES THR_M THR_N
//   sA s m: offset(m, 0, s) offset(m, 1, s) ... offset(m, BK-1, s)      one line per stage s and row m
#ifndef __CUDA_ARCH__
#include PROBE_KERNEL
#include <cstdio>

int main()
{
    using namespace cute;
    c4::SmemLayoutA sA{};
    printf("tile %d %d %d %d %d\n", BM, BK, STAGES, THR_M, THR_N);
    for (int s = 0; s < STAGES; ++s)
        for (int m = 0; m < BM; ++m) {
            printf("sA %d %d:", s, m);
            for (int k = 0; k < BK; ++k) printf(" %d", int(sA(m, k, s)));
            printf("\n");
        }
    return 0;
}
#endif
