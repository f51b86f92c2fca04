"""Lab 7a's model data (no GPU, no code the runtime runs): the shared-memory accesses of k2 and k4,
for the bank model of common/banks.py and the notebook's bank explorer.

    a_off(m, k, BK, swizzle), b_off(k, n, BN, swizzle)   the kernels' float offsets in As and Bs
                                   (k2..k7 share them; swizzle=False: plain row-major, as a check)
    BANK_ACCESSES     {name: common.banks.SharedAccess}: one warp instruction each
    BANK_MAIN_LOOPS   {kernel: [(access, instructions per warp and BK tile, "ld" / "st")]}

The offsets mirror a_off / b_off of kernels/k2_mma_swizzle.cu (and k4's, the same code); the tile
sizes are read from the kernel files. tests/test_models.py checks the mirror against the file text
and that the swizzled accesses are conflict-free while the plain ones are not.
"""
from pathlib import Path

from common.banks import SharedAccess
from common.tiling import Tiling

KERNELS = Path(__file__).resolve().parent / "kernels"
K2 = Tiling.of(KERNELS / "k2_mma_swizzle.cu")
K4 = Tiling.of(KERNELS / "k4_ldmatrix_2d_warps.cu")
K2_BK, K2_BN, K2_THREADS = (int(K2.value(n)) for n in ("BK", "BN", "THREADS"))
K4_BK, K4_BN = int(K4.value("BK")), int(K4.value("BN"))


def a_off(m, k, BK, swizzle=True):
    """As[BM][BK], row-major; float4 group q = k / 4 of row m is stored at q ^ ((m / DIV) & MASK):
    DIV rows share one 128-byte line (BK = 16: 2 rows), MASK + 1 groups are permuted within it."""
    groups = BK // 4
    div = 1 if groups >= 8 else 8 // groups
    mask = (8 if groups >= 8 else groups) - 1
    q = (k >> 2) ^ ((m // div) & mask) if swizzle else k >> 2
    return m * BK + (q << 2) + (k & 3)


def b_off(k, n, BN, swizzle=True):
    """Bs[BK][BN], row-major; column n of row k is stored at n ^ ((k % 4) * 8): the 4 k-rows a B
    fragment reads land 8 banks apart, and float4 groups (n % 4 == 0) stay whole."""
    return k * BN + ((n ^ ((k & 3) << 3)) if swizzle else n)


def _lanes():
    return [(lane // 4, lane % 4) for lane in range(32)]


def a_fragment_read(BK=K2_BK, swizzle=True, reg=0):
    """k2..k3: a0..a3 by scalar LDS. Register reg of lane (g, t): A[g + 8 (reg % 2)][t + 4 (reg // 2)]."""
    return [4 * a_off(g + 8 * (reg % 2), t + 4 * (reg // 2), BK, swizzle) for g, t in _lanes()]


def b_fragment_read(BN=K2_BN, swizzle=True, reg=0):
    """k2..k7: b0 = Bs[t][g], b1 = Bs[t + 4][g], one LDS each (n8 fragment 0 of the warp)."""
    return [4 * b_off(t + 4 * reg, g, BN, swizzle) for g, t in _lanes()]


def a_tile_store(BK=K2_BK, swizzle=True, i=0, threads=K2_THREADS):
    """The A tile's STS.128 (k2) or 16-byte cp.async (k3+): thread c writes group c % (BK/4) of row c / (BK/4)."""
    groups = BK // 4
    return [4 * a_off((c + i * threads) // groups, ((c + i * threads) % groups) * 4, BK, swizzle) for c in range(32)]


def b_tile_store(BN=K2_BN, swizzle=True, i=0, threads=K2_THREADS):
    """The B tile's STS.128: thread c writes columns 4 (c % (BN/4)) .. +3 of k-row c / (BN/4)."""
    groups = BN // 4
    return [4 * b_off((c + i * threads) // groups, ((c + i * threads) % groups) * 4, BN, swizzle) for c in range(32)]


def a_ldmatrix_rows(BK=K4_BK, swizzle=True):
    """k4+: the 32 row addresses of ldmatrix.x4 for one A fragment: lane l -> &As[l % 16][(l / 16) * 4]."""
    return [4 * a_off(l % 16, (l // 16) * 4, BK, swizzle) for l in range(32)]


BANK_ACCESSES = {
    "k2 A fragment LDS (a0)":          SharedAccess(a_fragment_read, {}, "LDS", 4, "rows g, columns t: swizzled, 32 banks"),
    "k2 A fragment LDS, no swizzle":   SharedAccess(a_fragment_read, {"swizzle": False}, "LDS", 4, "rows 16 words apart: 8 banks"),
    "k2 B fragment LDS (b0)":          SharedAccess(b_fragment_read, {}, "LDS", 4, "k-rows t, columns g: swizzled, 32 banks"),
    "k2 B fragment LDS, no swizzle":   SharedAccess(b_fragment_read, {"swizzle": False}, "LDS", 4, "4 k-rows 128 words apart: 8 banks"),
    "k2 A tile STS.128":               SharedAccess(a_tile_store, {}, "STS.128", 16, "4 groups of a row, permuted"),
    "k2 A tile STS.128, no swizzle":   SharedAccess(a_tile_store, {"swizzle": False}, "STS.128", 16, "512 consecutive bytes"),
    "k2 B tile STS.128":               SharedAccess(b_tile_store, {}, "STS.128", 16, "a row's groups, permuted"),
    "k2 B tile STS.128, no swizzle":   SharedAccess(b_tile_store, {"swizzle": False}, "STS.128", 16, "512 consecutive bytes"),
    "k4 A fragment LDSM.x4":           SharedAccess(a_ldmatrix_rows, {}, "LDSM.x4", 16, "8 rows of 128 B, groups swizzled"),
    "k4 A fragment LDSM.x4, no swizzle": SharedAccess(a_ldmatrix_rows, {"swizzle": False}, "LDSM.x4", 16, "8 rows 128 B apart: one bank group"),
    "k4 B fragment LDS (b0)":          SharedAccess(b_fragment_read, {"BN": K4_BN}, "LDS", 4, "as k2"),
}

# One BK tile per warp, as nvcc compiles k2 (NOTES: the B fragments are loaded once per k8 step and
# reused by both A sub-tiles): 2 k8 steps x (8 A + 32 B) LDS; 4 + 4 STS.128 per thread for the tiles.
_K2_LOOP = [("A fragment LDS", 16, "ld"), ("B fragment LDS", 64, "ld"), ("A tile STS.128", 4, "st"),
            ("B tile STS.128", 4, "st")]
BANK_MAIN_LOOPS = {
    "k2": [(f"k2 {name}" if "STS" in name else f"k2 {name} ({'a0' if name[0] == 'A' else 'b0'})", n, op)
           for name, n, op in _K2_LOOP],
    "k2, no swizzle": [(f"k2 {name}, no swizzle", n, op) for name, n, op in _K2_LOOP],
}
