// h7_schedule.cu -- the tests' probe of h7's work split: h7_schedule.cuh, the header the kernel's
// producer and consumers walk, compiled for the host and printed for every block.
//
//   nvcc -std=c++17 -I<lab>/kernels -o probe h7_schedule.cu
//   stdin: one case a line, "tiles KT G dp"
//   stdout, per case: "case tiles KT G dp", then per block b "block b begin end" (its stream-K range),
//   one "unit b tile k0 k1" per unit in walking order, and after a stream-K tile's k0 == 0 unit
//   "wait b tile b' b'' ..." (the contributors its finalizer adds, in order; none: just "wait b tile").
#include <cstdio>

#include "h7_schedule.cuh"

int main()
{
    StreamK s;
    while (scanf("%d %d %d %d", &s.tiles, &s.KT, &s.G, &s.dp) == 4) {
        printf("case %d %d %d %d\n", s.tiles, s.KT, s.G, s.dp);
        for (int b = 0; b < s.G; ++b) {
            printf("block %d %d %d\n", b, s.sk_begin(b), s.sk_begin(b + 1));
            Walk w(s, b);
            SkUnit u;
            while (w.next(u)) {
                printf("unit %d %d %d %d\n", b, u.tile, u.k0, u.k1);
                if (u.k0 == 0 && u.tile >= s.dp) {
                    printf("wait %d %d", b, u.tile);
                    for (int b2 = s.next_contributor(u.tile, b + 1); b2 >= 0; b2 = s.next_contributor(u.tile, b2 + 1))
                        printf(" %d", b2);
                    printf("\n");
                }
            }
        }
    }
    return 0;
}
