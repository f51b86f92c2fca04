// parity.cu -- the grader's probe of the mbarrier phase parities: the student's full_parity(t) (h2, h3)
// and, with -DPROBE_EMPTY=1, empty_parity(t) (h3), for tiles 0 .. 5 STAGES - 1 (grading/probes.py runs
// them through its model of the pipeline, at STAGES = 4 and 3).
//
//   nvcc -std=c++17 -I<kernels> -DPROBE_KERNEL='"h3_warp_specialized.cu"' -DPROBE_EMPTY=1 [-DSTAGES=3] -o probe parity.cu
//
// Output: stages STAGES, then one line per tile: t full_parity(t) [empty_parity(t)]
#ifndef __CUDA_ARCH__
#include PROBE_KERNEL
#include <cstdio>

int main()
{
    printf("stages %d\n", STAGES);
    for (int t = 0; t < 5 * STAGES; ++t) {
#if PROBE_EMPTY
        printf("%d %lld %lld\n", t, (long long)full_parity(t), (long long)empty_parity(t));
#else
        printf("%d %lld\n", t, (long long)full_parity(t));
#endif
    }
    return 0;
}
#endif
