// desc.cu -- the grader's probe of the wgmma descriptors: the student's desc_k_major and desc_mn_major
// (hopper_ptx.cuh beside the student's h1 file, which includes it) called on the host for a set of
// shared-memory addresses and panel sizes, the 64-bit values printed (grading/probes.py decodes them).
//
//   nvcc -std=c++17 -I<kernels> -DPROBE_KERNEL='"h1_wgmma_cp_async.cu"' -o probe desc.cu
//
// The kernel file is included in the host pass only (#ifndef __CUDA_ARCH__): no device code is built.
// Output, one line per call:
//   k <addr> <descriptor>                 desc_k_major(addr)
//   mn <addr> <panel_bytes> <descriptor>  desc_mn_major(addr, panel_bytes)
#ifndef __CUDA_ARCH__
#include PROBE_KERNEL
#include <cstdio>

int main()
{
    // tile starts (1024-aligned), k-slices 32 bytes apart, the second 64-row half, a far stage
    const uint32_t addrs[] = {0x0400u, 0x0420u, 0x2440u, 0x8c60u, 0x18800u, 0x30c00u};
    const uint32_t panels[] = {8192u, 4096u, 16384u};
    for (uint32_t a : addrs)
        printf("k %u %llu\n", a, (unsigned long long)desc_k_major(a));
    for (uint32_t a : addrs)
        for (uint32_t p : panels)
            printf("mn %u %u %llu\n", a, p, (unsigned long long)desc_mn_major(a, p));
    return 0;
}
#endif
