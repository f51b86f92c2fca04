// h7_schedule.cuh: h7's work split (stream-K), the same code on the host and the device, so that the
// kernel's producer, its consumers and a host probe (tests/test_h7_stream_k.py) all read one schedule.
//
//   StreamK{tiles, KT, G, dp}    T output tiles of KT k-iterations each, G blocks; the first dp tiles
//                                are data-parallel (dp = T, or a multiple of G), the other T - dp are
//                                "stream-K tiles", whose (T - dp) KT iterations are shared by all G blocks
//   s.sk_begin(b)                block b's first stream-K iteration, b (T - dp) KT / G rounded down:
//                                [sk_begin(b), sk_begin(b + 1)) is its range
//   Walk w(s, b); w.next(u)      block b's units in order, u = {tile, k0, k1}: its data-parallel tiles
//                                b, b + G, ... (all of K), then its range cut at tile boundaries (segments)
//   s.next_contributor(tile, b2) the smallest block >= b2 whose first segment is a k0 > 0 piece of `tile`
//                                (a stream-K tile), or -1: the blocks a tile's finalizer (its k0 == 0
//                                segment) waits for and adds, in increasing order
//
// Why a block has at most one partial: its range is contiguous, so only its first segment can start
// inside a tile (k0 > 0); every later one starts a tile at k0 = 0. A tile's k0 == 0 segment belongs to
// exactly one block; the blocks after it whose ranges start inside the tile hold the rest of it.
// 32-bit arithmetic: b (T - dp) KT / G = b q + (b r) / G with q, r the quotient and remainder of
// (T - dp) KT by G, exact, and no product passes 2^31 while (T - dp) KT < 2^31 and G < 46341 (the
// launch hook checks the first; a 64-bit division would be a called subroutine in SASS, and a call
// in the consumers' loop makes ptxas serialize the wgmmas: C7515).
#pragma once

struct SkUnit {
    int tile, k0, k1;           // a tile's k-iterations [k0, k1)
};

struct StreamK {
    int tiles, KT, G, dp;       // T tiles, KT k-iterations a tile, G blocks, dp data-parallel tiles

    __host__ __device__ inline int sk_begin(int b) const {
        const int total = (tiles - dp) * KT, q = total / G, r = total % G;
        return b * q + (b * r) / G;
    }
    __host__ __device__ inline int next_contributor(int tile, int b2) const {
        const int end = (tile - dp + 1) * KT;                      // past the tile's last iteration
        for (; b2 < G; ++b2) {
            const int lo = sk_begin(b2);
            if (lo >= end) return -1;                              // ranges start in order: none further
            if (sk_begin(b2 + 1) > lo) return b2;                  // a block with an empty range holds nothing
        }
        return -1;
    }
};

struct Walk {
    StreamK s;
    int dp_next;                // the next data-parallel tile of this block
    int pos, end;               // the rest of its stream-K range

    __host__ __device__ inline Walk(const StreamK& s_, int b) : s(s_), dp_next(b), pos(s_.sk_begin(b)), end(s_.sk_begin(b + 1)) {}

    __host__ __device__ inline bool next(SkUnit& u) {
        if (dp_next < s.dp) {
            u.tile = dp_next, u.k0 = 0, u.k1 = s.KT;
            dp_next += s.G;
            return true;
        }
        if (pos >= end) return false;
        const int j = pos / s.KT;
        u.tile = s.dp + j;
        u.k0 = pos - j * s.KT;
        u.k1 = min(s.KT, u.k0 + (end - pos));
        pos += u.k1 - u.k0;
        return true;
    }
};
