// layouts.cu -- lab 7b: the layouts of c4 and c5, printed on the host with the real CuTe headers.
//
//   nvcc -std=c++17 --expt-relaxed-constexpr -I<cutlass include> -o build/layouts tools/layouts.cu
//   build/layouts            (the notebook and tests/test_models.py build and run it: models.layouts())
//
// CuTe's layouts are ordinary C++ values, usable in host code: cute::print_layout draws a 2-D layout
// as a grid (row m, column k: the element offset). The program prints, for the default tile
// (BM = BN = 128, BK = 32, 16 x 16 threads):
//   1. the first 4 rows of sA, plain (c3) and under Swizzle<1,2,3> (c4, c5): print_layout's grid, then
//      the same grid as bank numbers (offset % 32), one line per row: "banks plain|swizzled m: ..."
//   2. the tiled MMA's partition of C for lanes 0..31: "mma plain|permuted lane: (m,n) ..." for the
//      lane's 8 values along n at i = 0 (c4: 16 apart; c5 with PermN: two groups of 4)
//   3. the tiled copies' first element per lane: "copy A lane: m k" and "copy B lane: n k"
//   4. every offset of the swizzled sA's first 8 rows: "offsets swizzled m: ..."
// The layout expressions are the kernels' (tests/test_models.py checks the text is the same).
#include <cstdio>
#include <cute/tensor.hpp>

using namespace cute;

constexpr int BM = 128, BN = 128, BK = 32, THR_M = 16, THR_N = 16, THREADS = THR_M * THR_N;
using TileM = Int<BM>;
using TileN = Int<BN>;
using TileK = Int<BK>;

using SwizzleA = Swizzle<1, 2, 3>;
using PermN = Layout<Shape<Int<THR_N>, _4, Int<BN / (4 * THR_N)>>, Stride<_4, _1, Int<4 * THR_N>>>;
using MmaPlain = decltype(make_tiled_mma(UniversalFMA<float, float, float>{},
    Layout<Shape<Int<THR_M>, Int<THR_N>, _1>, Stride<Int<THR_N>, _1, _0>>{}));
using MmaPermuted = decltype(make_tiled_mma(UniversalFMA<float, float, float>{},
    Layout<Shape<Int<THR_M>, Int<THR_N>, _1>, Stride<Int<THR_N>, _1, _0>>{},
    Tile<TileM, PermN, TileK>{}));
using CopyA = decltype(make_tiled_copy(Copy_Atom<UniversalCopy<uint128_t>, float>{},
    make_layout(make_shape(Int<THREADS / (BK / 4)>{}, Int<BK / 4>{}), LayoutRight{}),
    make_layout(make_shape(_1{}, _4{}))));
using CopyB = decltype(make_tiled_copy(Copy_Atom<UniversalCopy<uint128_t>, float>{},
    make_layout(make_shape(Int<BN / 4>{}, Int<THREADS / (BN / 4)>{})),
    make_layout(make_shape(_4{}, _1{}))));

template <class L>
void banks(const char* name, L const& layout, int rows)
{
    for (int m = 0; m < rows; ++m) {
        printf("banks %s %d:", name, m);
        for (int k = 0; k < BK; ++k) printf(" %d", int(layout(m, k)) % 32);
        printf("\n");
    }
}

template <class Mma>
void mma_lanes(const char* name)
{
    Mma mma;
    Tensor cC = make_identity_tensor(make_shape(TileM{}, TileN{}));      // (m, n) of every element of C
    for (int lane = 0; lane < 32; ++lane) {
        Tensor t = mma.get_slice(lane).partition_C(cC);                  // (MMA, MMA_M, MMA_N)
        printf("mma %s %d:", name, lane);
        for (int j = 0; j < size<2>(t); ++j) printf(" (%d,%d)", int(get<0>(t(0, 0, j))), int(get<1>(t(0, 0, j))));
        printf("\n");
    }
}

int main()
{
    auto plain = make_layout(make_shape(_4{}, TileK{}), make_stride(TileK{}, _1{}));        // sA, rows 0..3
    auto swizzled = composition(SwizzleA{}, plain);
    printf("# sA rows 0..3, plain (c3): print_layout, element offsets\n");
    print_layout(plain);
    printf("# sA rows 0..3 under Swizzle<1,2,3> (c4, c5)\n");
    print_layout(swizzled);
    banks("plain", plain, 4);
    banks("swizzled", swizzled, 4);

    mma_lanes<MmaPlain>("plain");
    mma_lanes<MmaPermuted>("permuted");

    Tensor cA = make_identity_tensor(make_shape(TileM{}, TileK{}));
    Tensor cB = make_identity_tensor(make_shape(TileN{}, TileK{}));
    for (int lane = 0; lane < 32; ++lane) {
        Tensor a = CopyA{}.get_slice(lane).partition_S(cA);             // (CPY, CPY_M, CPY_K)
        Tensor b = CopyB{}.get_slice(lane).partition_S(cB);             // (CPY, CPY_N, CPY_K)
        printf("copy A %d: %d %d\n", lane, int(get<0>(a(0))), int(get<1>(a(0))));
        printf("copy B %d: %d %d\n", lane, int(get<0>(b(0))), int(get<1>(b(0))));
    }
    auto sA8 = composition(SwizzleA{}, make_layout(make_shape(_8{}, TileK{}), make_stride(TileK{}, _1{})));
    for (int m = 0; m < 8; ++m) {
        printf("offsets swizzled %d:", m);
        for (int k = 0; k < BK; ++k) printf(" %d", int(sA8(m, k)));
        printf("\n");
    }
    return 0;
}
