// Does a compute-sanitizer tool keep a grid's blocks resident together? (lab 7d's fused split-K entries
// wait at a grid barrier for every block of their grid; under racecheck one never finished.)
// Each block's thread 0 arrives on a global counter, then waits until every block has arrived, for at
// most LIMIT_NS of the GPU's global timer. A block that gives up writes -1, one that saw them all its
// index + 1. Run it bare and under each tool (scripts/device/README.md):
//   nvcc -arch=sm_90 -o /tmp/probe grid-barrier-probe.cu && /tmp/probe [threads] [shared KB]
//   compute-sanitizer --tool racecheck /tmp/probe 384 129
// (default 128 threads and no dynamic shared memory; lab 7d's wgmma_splitk: 384 threads, 129 KB).
// Prints one line: the blocks either "all met" or "k of n gave up".
#include <cstdio>
#include <cstdlib>

#define LIMIT_NS 5000000000ull   // 5 s: far beyond a resident grid's few microseconds

__device__ unsigned long long now_ns() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

__global__ void probe(unsigned* arrived, int* out, int words) {
    extern __shared__ int dyn[];               // `words` of dynamic shared memory, each written once
    __shared__ int mine;                       // shared memory, so that racecheck has something to track
    if (threadIdx.x == 0) mine = blockIdx.x + 1;
    for (int i = threadIdx.x; i < words; i += blockDim.x) dyn[i] = i;
    __syncthreads();
    if (threadIdx.x == 0) {
        atomicAdd(arrived, 1u);
        const unsigned long long t0 = now_ns();
        while (atomicAdd(arrived, 0u) < gridDim.x)
            if (now_ns() - t0 > LIMIT_NS) { out[blockIdx.x] = -1; return; }
        out[blockIdx.x] = mine;
    }
}

int main(int argc, char** argv) {
    const int blocks = 6;                      // lab 7d's third sanitizer shape: 3 x 2 blocks
    const int threads = argc > 1 ? atoi(argv[1]) : 128, smem = (argc > 2 ? atoi(argv[2]) : 0) * 1024;
    cudaFuncSetAttribute(probe, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
    unsigned* arrived; int* out; int host[blocks];
    cudaMalloc(&arrived, sizeof(unsigned)); cudaMalloc(&out, blocks * sizeof(int));
    cudaMemset(arrived, 0, sizeof(unsigned)); cudaMemset(out, 0, blocks * sizeof(int));
    probe<<<blocks, threads, smem>>>(arrived, out, smem / 4);
    cudaError_t e = cudaDeviceSynchronize();
    cudaMemcpy(host, out, sizeof(host), cudaMemcpyDeviceToHost);
    int gave_up = 0;
    for (int i = 0; i < blocks; ++i) gave_up += host[i] == -1;
    if (e != cudaSuccess) printf("probe: %s\n", cudaGetErrorString(e));
    else if (gave_up) printf("probe: %d of %d blocks gave up waiting for the others\n", gave_up, blocks);
    else printf("probe: all %d blocks met at the barrier (%d threads, %d KB of dynamic shared memory each)\n",
                blocks, threads, smem / 1024);
    return 0;
}
