// c5_mma_partition.cu -- the grader's probe of c5's tiled MMA: CuTe's partition of the block tile of C
// (and of the B tile) by the student's TiledMma, evaluated on the CPU and printed (grading/probes.py
// judges it).
//
//   nvcc -std=c++17 --expt-relaxed-constexpr -I<cutlass include> -I<kernels> -DPROBE_KERNEL='"c5_wide_epilogue.cu"'
//        -o probe c5_mma_partition.cu
//
// The kernel file is included in the host pass only (#ifndef __CUDA_ARCH__): no device code is compiled.
// Output:
//   tile BM BN BK THR_M THR_N
//   C t i: n n n ...      thread t's values (0, i, j) of partition_C: row m, then the column n of each j
//   B t: n n n ...        warp 0's lanes t: the column n of each of their B values (0, j, 0) at k = 0
#ifndef __CUDA_ARCH__
#include PROBE_KERNEL
#include <cstdio>

int main()
{
    using namespace cute;
    c5::TiledMma mma;
    printf("tile %d %d %d %d %d\n", BM, BN, BK, THR_M, THR_N);
    Tensor cC = make_identity_tensor(make_shape(Int<BM>{}, Int<BN>{}));      // (m, n) of every element of C
    Tensor cB = make_identity_tensor(make_shape(Int<BN>{}, Int<BK>{}));      // (n, k) of every element of sB
    for (int t = 0; t < THR_M * THR_N; ++t) {
        Tensor c = mma.get_slice(t).partition_C(cC);                         // (MMA, MMA_M, MMA_N)
        for (int i = 0; i < size<1>(c); ++i) {
            printf("C %d %d:", t, int(get<0>(c(0, i, 0))));
            for (int j = 0; j < size<2>(c); ++j) printf(" %d,%d", int(get<0>(c(0, i, j))), int(get<1>(c(0, i, j))));
            printf("\n");
        }
    }
    for (int t = 0; t < 32; ++t) {
        Tensor b = mma.get_slice(t).partition_B(cB);                         // (MMA, MMA_N, MMA_K)
        printf("B %d:", t);
        for (int j = 0; j < size<1>(b); ++j) printf(" %d,%d", int(get<0>(b(0, j, 0))), int(get<1>(b(0, j, 0))));
        printf("\n");
    }
    return 0;
}
#endif
