"""Lab 7b's model data (no GPU, no code the runtime runs): the shared-memory accesses of the rungs, for
the bank model of common/banks.py, the notebook, and the ncu check of the swizzle.

    swizzle(offset, B, M, S)        CuTe's Swizzle<B, M, S> on an element offset (cute/swizzle.hpp)
    sa_offset(m, k, swizzled)       element (m, k) of the k-major A tile, stage 0: BK m + k, then
                                    Swizzle<1, 2, log2(BK) - 2> when swizzled (c4, c5)
    sb_offset(n, k)                 element (n, k) of the n-major B tile: BN k + n
    mma_mn(t, i, j, permuted)       the (m, n) of thread t's value (i, j) in the tiled MMA (c5: permuted N)
    bank_grid(rows, swizzled)       [[bank of sA(m, k) for k in 0..BK-1] for m in rows]: the grid the
                                    notebook prints beside the host program's cute::print_layout
    BANK_ACCESSES                   {name: common.banks.SharedAccess}: one warp instruction each
    BANK_MAIN_LOOPS                 {kernel: [(access, instructions per warp and tile, "ld" / "st")]}

The mirrors are checked against CuTe itself: tools/layouts.cu prints the same layouts and thread
partitions with the real headers, and tests/test_models.py compares them number by number.
"""
from pathlib import Path

from common.banks import SharedAccess
from common.tiling import Tiling

KERNELS = Path(__file__).resolve().parent / "kernels"
C4 = Tiling.of(KERNELS / "c4_swizzle.cu")
BM, BN, BK, THR_M, THR_N = (int(C4.value(n)) for n in ("BM", "BN", "BK", "THR_M", "THR_N"))
THREADS = THR_M * THR_N
SW_B, SW_M, SW_S = 1, 2, (BK.bit_length() - 1) - 2      # Swizzle<1, 2, log2(BK) - 2>: <1,2,3> for BK = 32


def swizzle(o, B=SW_B, M=SW_M, S=SW_S):
    """Swizzle<B, M, S>: the B bits of o from bit M + S, shifted down by S, XORed into o."""
    mask = ((1 << B) - 1) << (M + S)
    return o ^ ((o & mask) >> S)


def sa_offset(m, k, swizzled=True):
    return swizzle(m * BK + k) if swizzled else m * BK + k


def sb_offset(n, k):
    return k * BN + n


def mma_mn(t, i=0, j=0, permuted=False):
    """Thread t's value (i, j) of the block tile: m = t / THR_N + THR_M i; n = t % THR_N + THR_N j, or with
    c5's PermN = (THR_N, 4, BN / (4 THR_N)) : (4, 1, 4 THR_N): n = 4 (t % THR_N) + j % 4 + 4 THR_N (j / 4)."""
    m = t // THR_N + THR_M * i
    n = 4 * (t % THR_N) + j % 4 + 4 * THR_N * (j // 4) if permuted else t % THR_N + THR_N * j
    return m, n


def bank_grid(rows=range(4), swizzled=True):
    return [[sa_offset(m, k, swizzled) % 32 for k in range(BK)] for m in rows]


# --- one warp instruction each (warp 0, 4-byte floats: byte address = 4 x offset) --------------

def a_read_lds32(swizzled=True, k=0, i=0):
    """The worklog's operand read of A: lane l loads sA(m, k) for its value i, 32 bits."""
    return [4 * sa_offset(mma_mn(l, i)[0], k, swizzled) for l in range(32)]


def a_read_lds128(swizzled=True, k=0, i=0):
    """What nvcc compiles it to: lane l loads sA(m, k .. k+3) as one LDS.128 (k % 4 == 0)."""
    return [4 * sa_offset(mma_mn(l, i)[0], k, swizzled) for l in range(32)]


def b_read_lds32(k=0, j=0):
    """c1..c4: lane l loads sB(n, k) of its value j, 32 bits (its n values are 16 apart)."""
    return [4 * sb_offset(mma_mn(l, 0, j)[1], k) for l in range(32)]


def b_read_lds128(k=0, j=0):
    """c5: lane l loads sB(n .. n+3, k), its values j .. j+3 (j % 4 == 0) of the permuted layout."""
    return [4 * sb_offset(mma_mn(l, 0, j, permuted=True)[1], k) for l in range(32)]


def a_copy_store(swizzled=True, i=0):
    """The 16-byte cp.async of the A tile: thread t writes chunk t % (BK/4) of row t / (BK/4) (+ i rows)."""
    per_row = BK // 4
    return [4 * sa_offset(l // per_row + i * THREADS // per_row, 4 * (l % per_row), swizzled) for l in range(32)]


def b_copy_store(i=0):
    """The 16-byte cp.async of the B tile: thread t writes columns 4 (t % (BN/4)) .. +3 of k-row t / (BN/4)."""
    per_row = BN // 4
    return [4 * sb_offset(4 * (l % per_row), l // per_row + i * THREADS // per_row) for l in range(32)]


BANK_ACCESSES = {
    "A read LDS.32, plain (c3)": SharedAccess(a_read_lds32, {"swizzled": False}, "LDS", 4,
                                              "rows m, m+1 of column k: 32 floats apart, one bank"),
    "A read LDS.32, Swizzle<1,2,3> (c4)": SharedAccess(a_read_lds32, {}, "LDS", 4,
                                                       "row m+1's column k moved 4 banks"),
    "A read LDS.128, plain (c3)": SharedAccess(a_read_lds128, {"swizzled": False}, "LDS.128", 16,
                                               "what nvcc emits: half warps never share a wavefront"),
    "A read LDS.128, Swizzle<1,2,3> (c4)": SharedAccess(a_read_lds128, {}, "LDS.128", 16, "the same, swizzled"),
    "B read LDS.32 (c1-c4)": SharedAccess(b_read_lds32, {}, "LDS", 4, "16 consecutive floats, broadcast to both half warps"),
    "B read LDS.128 (c5)": SharedAccess(b_read_lds128, {}, "LDS.128", 16, "16 consecutive float4, each read by 2 lanes"),
    "A copy 16-byte, plain (c3)": SharedAccess(a_copy_store, {"swizzled": False}, "STS.128", 16, "4 rows of 128 bytes"),
    "A copy 16-byte, Swizzle<1,2,3> (c4)": SharedAccess(a_copy_store, {}, "STS.128", 16, "odd rows' chunks swapped"),
    "B copy 16-byte": SharedAccess(b_copy_store, {}, "STS.128", 16, "512 consecutive bytes"),
}

# One k-tile (BK = 32) per warp, as nvcc compiles c3 / c4 (make sass): A 8 rows x 8 LDS.128 along k
# (64), B 8 LDS per k (256), and the copies: BM BK / 4 / THREADS = 4 16-byte chunks of A, 4 of B per thread.
BANK_MAIN_LOOPS = {
    "c3": [("A read LDS.128, plain (c3)", 64, "ld"), ("B read LDS.32 (c1-c4)", 256, "ld"),
           ("A copy 16-byte, plain (c3)", 4, "st"), ("B copy 16-byte", 4, "st")],
    "c4": [("A read LDS.128, Swizzle<1,2,3> (c4)", 64, "ld"), ("B read LDS.32 (c1-c4)", 256, "ld"),
           ("A copy 16-byte, Swizzle<1,2,3> (c4)", 4, "st"), ("B copy 16-byte", 4, "st")],
    "c5": [("A read LDS.128, Swizzle<1,2,3> (c4)", 64, "ld"), ("B read LDS.128 (c5)", 64, "ld"),
           ("A copy 16-byte, Swizzle<1,2,3> (c4)", 4, "st"), ("B copy 16-byte", 4, "st")],
}
