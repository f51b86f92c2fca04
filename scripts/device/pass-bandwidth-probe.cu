// pass-bandwidth-probe.cu: how fast can a split pass run on P SMs only? A question for the design "the pass
// beside the GEMM" (lab 7c NOTES, its last section), whose cost to the GEMM is bytes / (bandwidth of one SM).
// Not a test and not part of the course: a measurement to make once on the GPU machine.
//
//   nvcc -O3 -arch=sm_90 -o /tmp/pass-probe scripts/device/pass-bandwidth-probe.cu && /tmp/pass-probe [N]
//
// The work is h4_3xtf32's split of B (K x N -> big and small parts of B^T, N x K) at N = K (default 4096):
// 64 x 64 units, each read once and written twice through a padded shared tile, so 12 bytes move per
// element. Two launches of it:
//   all SMs     the course's pass as it is launched: one 256-thread block a unit, as many blocks as units
//   P blocks    P blocks of 1024 threads (four units at once, 133 KB of shared memory: one block an SM), the
//               units shared out by a stride: the pass of the design, on P SMs while the GEMM has the rest
//   P blocks, counted   the same, each unit's warps then counting in on a counter a k-slab as h4_3xtf32's pass
//               beside the GEMM did (4877353: fence.proxy.async.global, __threadfence, a release add): "in
//               order" fences a unit's stores before the unit's next loads go out; "next loads first" issues
//               the next unit's loads, then fences and counts the unit before (the question of lab 7c NOTES,
//               "The pass beside the GEMM, built and measured": what do the fences cost the pass?)
// Each timed with CUDA events, median of 15 after 3 warm-ups, the L2 flushed before each (a memset of twice
// its size, outside the events); the table gives GB/s and GB/s an SM.
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>

#define CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
    fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e)); exit(1); } } while (0)

constexpr int T = 64;                       // a unit: 64 x 64 floats
constexpr int SUB_FLOATS = 2 * T * (T + 1); // a unit's big and small tiles, padded

__device__ __forceinline__ void split(float x, float& hi, float& lo) {
    hi = __uint_as_float(__float_as_uint(x) & 0xffffe000u);   // a stand-in for split_tf32: same traffic
    lo = x - hi;
}

// A unit's warps count in on its k-slab's counter: each lane's stores fenced (to the async proxy, then to
// the GPU), then one release add a warp: h4_3xtf32's count_in in 4877353.
__device__ __forceinline__ void count_in(unsigned* counter) {
    asm volatile("fence.proxy.async.global;" ::: "memory");
    __threadfence();
    __syncwarp();
    if (threadIdx.x == 0) asm volatile("red.release.gpu.global.add.u32 [%0], 1;" :: "l"(counter) : "memory");
}

// One unit by 256 threads (32 x 8): tile rows k0.., columns n0.. of B, written transposed, in two halves
// (its loads; its split and stores) so that the counted pass can send the next unit's loads out before
// this unit's count.
__device__ __forceinline__ void unit_load(const float* __restrict__ B, int K, int N, int u, float (&v)[T / 8][T / 32]) {
    const int kt = K / T, k0 = (u % kt) * T, n0 = (u / kt) * T;
#pragma unroll
    for (int i = 0; i < T / 8; ++i)
#pragma unroll
        for (int j = 0; j < T / 32; ++j)
            asm volatile("ld.global.f32 %0, [%1];" : "=f"(v[i][j]) : "l"(B + (size_t)(k0 + threadIdx.y + 8 * i) * N + n0 + threadIdx.x + 32 * j) : "memory");
}
__device__ __forceinline__ void unit_store(float* __restrict__ bt, int K, int N, int u, const float (&v)[T / 8][T / 32],
                                           float* big, float* small, int bar) {
    const int kt = K / T, k0 = (u % kt) * T, n0 = (u / kt) * T;
    const int x = threadIdx.x, y = threadIdx.y;
#pragma unroll
    for (int i = 0; i < T / 8; ++i)
#pragma unroll
        for (int j = 0; j < T / 32; ++j) {
            float hi, lo;
            split(v[i][j], hi, lo);
            big[(y + 8 * i) * (T + 1) + x + 32 * j] = hi;
            small[(y + 8 * i) * (T + 1) + x + 32 * j] = lo;
        }
    asm volatile("bar.sync %0, 256;" :: "r"(bar) : "memory");
#pragma unroll
    for (int i = 0; i < T / 8; ++i)
#pragma unroll
        for (int j = 0; j < T / 32; ++j) {
            const int n = n0 + y + 8 * i, k = k0 + x + 32 * j;
            bt[(size_t)n * K + k] = big[(x + 32 * j) * (T + 1) + y + 8 * i];
            bt[((size_t)N + n) * K + k] = small[(x + 32 * j) * (T + 1) + y + 8 * i];
        }
    asm volatile("bar.sync %0, 256;" :: "r"(bar) : "memory");   // the tiles are read: the next unit may write
}

__device__ __forceinline__ void unit(const float* __restrict__ B, float* __restrict__ bt, int K, int N, int u,
                                     float* big, float* small, int bar) {
    float v[T / 8][T / 32];
    unit_load(B, K, N, u, v);
    unit_store(bt, K, N, u, v, big, small, bar);
}

// P blocks, each unit counted in on its k-slab (u % (K / T): the units of one k-slab share a counter).
// next_first: the next unit's loads go out before this unit's fence and count.
__global__ void __launch_bounds__(1024, 1) pass_on_p_counted(const float* B, float* bt, int K, int N, int units,
                                                             unsigned* counters, int next_first) {
    extern __shared__ float tiles[];
    const int z = threadIdx.z, stride = gridDim.x * 4, kt = K / T;
    float* big = tiles + z * SUB_FLOATS;
    float v[T / 8][T / 32];
    int u = blockIdx.x * 4 + z;
    if (u < units) unit_load(B, K, N, u, v);
    for (; u < units; u += stride) {
        unit_store(bt, K, N, u, v, big, big + T * (T + 1), 1 + z);
        if (next_first) {
            if (u + stride < units) unit_load(B, K, N, u + stride, v);
            count_in(&counters[u % kt]);
        } else {
            count_in(&counters[u % kt]);
            if (u + stride < units) unit_load(B, K, N, u + stride, v);
        }
    }
}

__global__ void __launch_bounds__(256) pass_all_sms(const float* B, float* bt, int K, int N) {
    __shared__ float tiles[SUB_FLOATS];
    unit(B, bt, K, N, blockIdx.x, tiles, tiles + T * (T + 1), 0);
}

__global__ void __launch_bounds__(1024, 1) pass_on_p(const float* B, float* bt, int K, int N, int units) {
    extern __shared__ float tiles[];
    const int z = threadIdx.z;
    float* big = tiles + z * SUB_FLOATS;
    for (int u = blockIdx.x * 4 + z; u < units; u += gridDim.x * 4)
        unit(B, bt, K, N, u, big, big + T * (T + 1), 1 + z);
}

static void* flush_buffer;                  // twice the L2: a memset of it leaves none of the pass's data there
static size_t flush_bytes;

template <class F> float median_ms(F launch) {
    cudaEvent_t a, b;
    CHECK(cudaEventCreate(&a)); CHECK(cudaEventCreate(&b));
    for (int i = 0; i < 3; ++i) launch();
    std::vector<float> t;
    for (int i = 0; i < 15; ++i) {
        CHECK(cudaMemsetAsync(flush_buffer, i, flush_bytes));
        CHECK(cudaEventRecord(a)); launch(); CHECK(cudaEventRecord(b)); CHECK(cudaEventSynchronize(b));
        float ms; CHECK(cudaEventElapsedTime(&ms, a, b)); t.push_back(ms);
    }
    CHECK(cudaGetLastError());
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
}

int main(int argc, char** argv) {
    const int n = argc > 1 ? atoi(argv[1]) : 4096;
    if (n < T || n % T) { fprintf(stderr, "N must be a multiple of %d\n", T); return 2; }
    const int K = n, N = n, units = (K / T) * (N / T);
    cudaDeviceProp p; CHECK(cudaGetDeviceProperties(&p, 0));
    flush_bytes = 2 * (size_t)p.l2CacheSize;
    CHECK(cudaMalloc(&flush_buffer, flush_bytes));
    float *B, *bt;
    CHECK(cudaMalloc(&B, (size_t)K * N * 4)); CHECK(cudaMalloc(&bt, (size_t)2 * K * N * 4));
    std::vector<float> h((size_t)K * N);
    for (size_t i = 0; i < h.size(); ++i) h[i] = (float)((i * 2654435761u) % 1000003) / 1000003.f - 0.5f;
    CHECK(cudaMemcpy(B, h.data(), h.size() * 4, cudaMemcpyHostToDevice));
    const size_t smem = 4 * SUB_FLOATS * sizeof(float);
    CHECK(cudaFuncSetAttribute(pass_on_p, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    const double bytes = 12.0 * K * N;
    printf("%s, %d SMs; B split of %d x %d: %.0f MB a pass\n", p.name, p.multiProcessorCount, K, N, bytes / 1e6);
    printf("%-34s %9s %9s %12s\n", "launch", "us", "GB/s", "GB/s an SM");
    float ms = median_ms([&] { pass_all_sms<<<units, dim3(32, 8)>>>(B, bt, K, N); });
    printf("%-34s %9.1f %9.0f %12.1f\n", "all SMs, 256 a block", ms * 1e3, bytes / ms / 1e6, bytes / ms / 1e6 / p.multiProcessorCount);
    const int ps[] = {8, 16, 24, 32, 48, 64, 96, 132};
    for (int P : ps) {
        if (P > p.multiProcessorCount) continue;
        ms = median_ms([&] { pass_on_p<<<P, dim3(32, 8, 4), smem>>>(B, bt, K, N, units); });
        char name[32]; snprintf(name, sizeof name, "P = %d, 1024 a block", P);
        printf("%-34s %9.1f %9.0f %12.1f\n", name, ms * 1e3, bytes / ms / 1e6, bytes / ms / 1e6 / P);
    }
    unsigned* counters;
    CHECK(cudaMalloc(&counters, (K / T) * sizeof(unsigned)));
    CHECK(cudaFuncSetAttribute(pass_on_p_counted, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    for (int next_first = 0; next_first < 2; ++next_first)
        for (int P : {16, 32, 48, 132}) {
            if (P > p.multiProcessorCount) continue;
            ms = median_ms([&] { pass_on_p_counted<<<P, dim3(32, 8, 4), smem>>>(B, bt, K, N, units, counters, next_first); });
            char name[48]; snprintf(name, sizeof name, "P = %d, counted, %s", P, next_first ? "next loads first" : "in order");
            printf("%-34s %9.1f %9.0f %12.1f\n", name, ms * 1e3, bytes / ms / 1e6, bytes / ms / 1e6 / P);
        }
    // the parts must be B's split, transposed (a check that the probe measured the work it says)
    std::vector<float> o((size_t)2 * K * N);
    CHECK(cudaMemcpy(o.data(), bt, o.size() * 4, cudaMemcpyDeviceToHost));
    size_t bad = 0;
    for (int k = 0; k < K; k += 97)
        for (int c = 0; c < N; c += 89) {
            const float x = h[(size_t)k * N + c];
            const float hi = o[(size_t)c * K + k], lo = o[((size_t)N + c) * K + k];
            if (hi + lo != x) ++bad;
        }
    printf("check: %s\n", bad ? "WRONG parts" : "parts add up to B, transposed");
    return bad ? 1 : 0;
}
