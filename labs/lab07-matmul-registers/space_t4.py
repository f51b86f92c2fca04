"""Tuning space of lab 7's t4 (kernels/t4_mma_ldmatrix.cu), for the course's autotuner.

    DEFAULTS                 the .cu file's #ifndef values
    candidates()             -> list of parameter dicts (full: every parameter named), ~30 configs
    reason_illegal(params)   -> None if the .cu's static_asserts accept params, else the sentence
    threads(p), smem_bytes(p) the THREADS and SMEM_BYTES macros of the .cu

reason_illegal mirrors every static_assert in the .cu, in the same order; the sentences are the
same. Shared memory above the device's opt-in limit (99 KB on sm_86/89/120, 227 KB on sm_90) is a
run-time matter for the launcher, not a compile-time one: only the 227 KB assert is mirrored.
"""

DEFAULTS = dict(BM=128, BN=256, BK=32, WM=64, WN=64, STAGES=4, GROUP=8)
NAMES = ("BM", "BN", "BK", "WM", "WN", "STAGES", "GROUP")
# COPY_WARPS (warps that issue the copies) defaults to every warp, so it depends on the tile: only
# candidates that set it name it; copy_warps(p) gives its value.
# Ablation switches of the .cu (not tuned; candidates() leaves them at 1): T4_SWIZZLE=0 pads rows by
# 8 halves instead of swizzling, T4_REGDB=0 drops the register double buffer.
ABLATIONS = dict(T4_SWIZZLE=1, T4_REGDB=1)


def _full(p):
    q = dict(DEFAULTS, **ABLATIONS)
    q.update(p)
    return q


def threads(p):
    p = _full(p)
    return (p["BM"] // p["WM"]) * (p["BN"] // p["WN"]) * 32


def copy_warps(p):
    p = _full(p)
    return p.get("COPY_WARPS", threads(p) // 32)


def smem_bytes(p):
    p = _full(p)
    pad = 8 - 8 * p["T4_SWIZZLE"]
    return p["STAGES"] * (p["BM"] * (p["BK"] + pad) + p["BK"] * (p["BN"] + pad)) * 2


def reason_illegal(params):
    p = _full(params)
    BM, BN, BK, WM, WN, STAGES, GROUP = (p[n] for n in NAMES)
    if min(BM, BN, BK, WM, WN) < 1:   # the .cu would divide by zero before any static_assert
        return "BM, BN, BK, WM and WN must be positive integers"
    if WM % 16:
        return "WM must be a multiple of 16: a warp tile is made of m16 mma tiles"
    if WN % 16:
        return "WN must be a multiple of 16: one ldmatrix.x4.trans loads two n8 B tiles"
    if BM % WM or BN % WN:
        return "the block tile BM x BN must be a whole number of warp tiles"
    if WM * WN > 64 * 64:
        return ("a warp tile above 4096 outputs needs more than 128 accumulators per thread plus "
                "double-buffered fragments: more than 255 registers, so ptxas would spill")
    if not (BK == 32 or BK % 64 == 0):
        return ("BK must be 32 (a row of A is 4 chunks: swizzle (r/2)%4) or a multiple of 64 (rows of A "
                "a multiple of 8 chunks: swizzle r%8); both make BK/16 even for the register double buffer")
    if BN % 64:
        return ("BN must be a multiple of 64: B rows must be a multiple of 8 chunks for "
                "the r%8 swizzle to stay inside the row")
    T = threads(p)
    if T > 1024:
        return "too many warps: (BM/WM)*(BN/WN) must be at most 32"
    CW = copy_warps(p)
    if not 1 <= CW <= T // 32:
        return "COPY_WARPS must be between 1 and the number of warps"
    CT = 32 * CW
    if (BM * BK // 8) % CT:
        return ("every copying thread copies the same number of 16-byte A chunks: BM*BK/8 must be a "
                "multiple of 32*COPY_WARPS")
    if (BK * BN // 8) % CT:
        return ("every copying thread copies the same number of 16-byte B chunks: BK*BN/8 must be a "
                "multiple of 32*COPY_WARPS")
    if T * (WM * WN // 32 + 2 * (WM // 16 * 4 + WN // 8 * 2) + 40) > 65536:
        return ("registers: THREADS x (WM*WN/32 accumulators + double-buffered fragments + about 40) "
                "must fit the 65,536 registers of an SM, or __launch_bounds__ forces spills")
    if STAGES < 2:
        return "STAGES must be at least 2: one buffer read, one being filled"
    if STAGES > 8:
        return "STAGES must be at most 8 (cp.async.wait_group keeps a small count)"
    if smem_bytes(p) > 227 * 1024:
        return ("shared memory above 227 KB, the most any supported GPU gives a block "
                "(sm_86/89/120 give 99 KB; the launcher checks the device)")
    if GROUP < 1:
        return "GROUP (block rows per raster group) must be at least 1"
    if CT % (BK // 8) or CT % (BN // 8):
        return "a thread's chunks keep one column"
    return None


def candidates():
    """Block tiles of 4 or 8 warps of 64 x 64 (plus two of 64 x 32), BK 32/64, 2-6 stages, GROUP 1-32."""
    c = []
    for bm, bn in ((128, 256), (256, 128)):            # 8 warps of 64 x 64, one block per SM
        for bk, st in ((32, 3), (32, 4), (32, 5), (64, 3), (64, 4)):
            c.append(dict(BM=bm, BN=bn, BK=bk, WM=64, WN=64, STAGES=st, GROUP=8))
    for bk, st in ((32, 4), (32, 6), (64, 3), (64, 4)):  # 4 warps of 64 x 64: two blocks per SM
        c.append(dict(BM=128, BN=128, BK=bk, WM=64, WN=64, STAGES=st, GROUP=8))
    c.append(dict(BM=64, BN=256, BK=32, WM=64, WN=64, STAGES=4, GROUP=8))
    for g in (1, 2, 4, 16, 32):                         # rasterization width
        c.append(dict(BM=128, BN=256, BK=32, WM=64, WN=64, STAGES=4, GROUP=g))
    c.append(dict(BM=128, BN=256, BK=32, WM=64, WN=64, STAGES=2, GROUP=8))   # ablation: 2 stages
    c.append(dict(BM=128, BN=128, BK=32, WM=64, WN=32, STAGES=4, GROUP=8))   # 8 warps of 64 x 32
    c.append(dict(BM=128, BN=128, BK=64, WM=64, WN=32, STAGES=3, GROUP=8))
    # BK = 64 (half the barriers per k: the best of the first H200 tune) with other raster widths,
    # and two 4-warp blocks per SM (each block's prologue and epilogue hidden by the other's loop).
    for g in (4, 16):
        c.append(dict(BM=128, BN=256, BK=64, WM=64, WN=64, STAGES=4, GROUP=g))
        c.append(dict(BM=128, BN=128, BK=64, WM=64, WN=64, STAGES=3, GROUP=g))   # 96 KB: 2 per SM
    c.append(dict(BM=256, BN=128, BK=64, WM=64, WN=64, STAGES=4, GROUP=16))
    # Copies issued by warps 0-3 only (one per SM sub-partition), so that the other warp of each keeps
    # its mma.sync going: the best 8-warp tiles of the H200's earlier tunes, with COPY_WARPS = 4.
    for bk, st in ((32, 4), (64, 3), (64, 4)):
        c.append(dict(BM=128, BN=256, BK=bk, WM=64, WN=64, STAGES=st, GROUP=8, COPY_WARPS=4))
    out = []
    for p in c:
        p = dict(DEFAULTS, **p)
        assert reason_illegal(p) is None, (p, reason_illegal(p))
        if p not in out:
            out.append(p)
    return out


def tag(p):
    """Short name of a configuration: the parameters that differ from DEFAULTS, e.g. BK64_STAGES3."""
    p = _full(p)
    ref = dict(DEFAULTS, **ABLATIONS)
    parts = [f"{n}{p[n]}" for n in ref if p[n] != ref[n]]
    if copy_warps(p) != threads(p) // 32:
        parts.append(f"COPY_WARPS{copy_warps(p)}")
    return "_".join(parts) or "default"


if __name__ == "__main__":
    for p in candidates():
        print(f"{tag(p):28s} threads {threads(p):4d}  smem {smem_bytes(p):7,d}")
    print(len(candidates()), "candidates")
