"""Lab 7's model data: what the course's models (common/hierarchy.py, common/banks.py, the
notebooks' views) need to know about this lab's kernels and cannot read from their sources.
The table (lab.py) imports these names; every number that a kernel file declares is read from it
(common.tiling), never restated here.

    HIERARCHY         {kernel: facts}: the hierarchy model's facts (common.hierarchy.tiling_of says
                      which): the implicit warp strip of v3..v6, the transposed A tile, the shared
                      row strides that carry the pads, the vector width, tensor-core and copy modes
    BANK_ACCESSES     {name: common.banks.SharedAccess}: one warp instruction each of the kernels'
                      shared loads and stores (and what-ifs: without the pad, swizzled)
    BANK_MAIN_LOOPS   {kernel: [(access, instructions per warp and phase, "ld" / "st")]}: one phase of
                      each ncu-measured kernel's main loop as nvcc 13 compiles it for sm_90
    INNER_LOOPS       {name: (kernel, variant)}: the main loops the walkthrough shows
    CHECK_SHAPES      the walkthrough's check cell: a scalar-only, an FP32 vec and an FP16 vec shape
    The access functions, each returning one warp's addresses (bytes from the tile start):
      v5_as_read, v5_bs_read, v5_as_row_read, v5_as_store, v5_bs_store, v6_as_read, v6_bs_read,
      v6_as_store, bs_row_store, v7_as_read, v7_bs_read, v7_as_store, t2_a_fragment_rows,
      t2_b_fragment_rows, t2_as_store, t2_bs_store
"""
from pathlib import Path

from common.banks import SharedAccess, xor_swizzle
from common.tiling import Tiling

KERNELS = Path(__file__).resolve().parent / "kernels"

# ---------------------------------------------------------------------------------------------
# The hierarchy model (common/hierarchy.py): what the sources cannot say
# ---------------------------------------------------------------------------------------------
# BM, BN, BK, WM, WN, WNITER, TM, TN, THREADS and STAGES come from each .cu file.
HIERARCHY = {
    "v3": dict(BK="T", warp="rows", note="one output per thread; a warp is 2 rows x 16 columns of the tile"),
    "v4": dict(warp="rows", note="8 outputs in a column per thread; a warp is 32 columns of one thread row"),
    "v5": dict(warp="rows", note="8x8 per thread, numbered row by row: a warp is a 16 x 128 strip"),
    "v6": dict(warp="rows", vector=4, a_transposed=True, a_ld="AS_LD",
               note="v5 with float4 loads and As[BK][BM+4]: LDS.128"),
    "v7": dict(vector=4, a_transposed=True, a_ld="AS_LD", prefetch="V7_PREFETCH",
               note="64 x 64 warp tiles, 4 strips of 8x4 per lane"),
    "t1": dict(BK="TILE", WM="TILE", WN="TILE", mma="m16n16k16", copy="none",
               note="WMMA from global memory: no shared tile, no reuse"),
    "t2": dict(mma="m16n16k16", a_ld="LDA_S", b_ld="LDB_S",
               note="shared tile, rows padded by 8 halves; 4 A + 2 B fragments per 8 MMAs"),
    # t3's scalar variant copies B through registers (guarded 2-byte loads), not with cp.async:
    # another tiling, so the model describes the vec entry point only
    "t3": dict(mma="m16n16k16", copy="cp.async", a_ld="LDA_S", b_ld="LDB_S", variants=["vec"],
               note="t2 with cp.async into STAGES buffers"),
    # past the chapter: swizzled tiles (no pads), STAGES-deep cp.async pipelines
    "v8": dict(vector=4, a_transposed=True, copy="cp.async", variants=["vec"],
               note="v7's warp tiles fed by a STAGES-deep cp.async pipeline into XOR-swizzled tiles"),
    "t4": dict(mma="m16n16k16", copy="cp.async", variants=["vec"],
               note="mma.sync m16n8k16 fed by ldmatrix from XOR-swizzled tiles, STAGES deep"),
    "cutlass": dict(mma="m16n16k16", copy="cp.async",
                    note="CUTLASS's sm80 multistage GEMM: t4's structure, written by NVIDIA"),
}

# ---------------------------------------------------------------------------------------------
# The bank model (common/banks.py): the kernels' shared accesses, one warp instruction each,
# byte offsets from the tile start. Defaults are the kernels' constants, read from their files;
# warp 0, step k = 0 unless given. F = 4 bytes (float), H = 2 bytes (half).
# ---------------------------------------------------------------------------------------------
F, H = 4, 2
V5, V6, V7, T2 = (Tiling.of(KERNELS / f) for f in ("v5_2d_blocktiling.cu", "v6_vectorized.cu", "v7_warptiling.cu",
                                                     "t2_wmma_smem.cu"))
V5_PER_ROW = V5.value("BN") // V5.value("TN")      # 16 thread columns: threads numbered row by row
V6_PER_ROW = V6.value("BN") // V6.value("TN")



def v5_as_read(k=0, i=0, BK=V5.value("BK"), TM=V5.value("TM"), threads_per_row=V5_PER_ROW, warp=0):
    """v5's regM[i] = As[threadRow*TM + i][k], As[BM][BK]: the 16 lanes of a thread row read one word
    (broadcast); the warp's two thread rows are TM*BK = 64 words apart: the same bank."""
    out = []
    for lane in range(32):
        thread_row = (32 * warp + lane) // threads_per_row
        out.append(((thread_row * TM + i) * BK + k) * F)
    return out


def v5_bs_read(k=0, j=0, BN=V5.value("BN"), TN=V5.value("TN"), threads_per_row=V5_PER_ROW, warp=0):
    """v5's regN[j] = Bs[k][threadCol*TN + j]: 16 thread columns TN = 8 words apart (4-way: banks
    repeat every 32 words); the second half warp repeats the first (broadcast)."""
    return [(k * BN + ((32 * warp + lane) % threads_per_row) * TN + j) * F for lane in range(32)]


def v5_as_row_read(k0=0, i=0, BK=V5.value("BK"), TM=V5.value("TM"), threads_per_row=V5_PER_ROW, warp=0):
    """v5 as nvcc 13 compiles it: after unrolling k, As[threadRow*TM + i][k0 .. k0+3] is one LDS.128
    (4 values of k at once). The warp's two thread rows are TM*BK*4 = 256 bytes apart: same banks,
    but in different half warps, which are served separately anyway."""
    return [(((32 * warp + lane) // threads_per_row * TM + i) * BK + k0) * F for lane in range(32)]


def v5_as_store(r=0, BK=V5.value("BK"), warp=0):
    """v5's copy As[aRow + r][aCol] = A[..], aRow = t / BK, aCol = t % BK: 32 consecutive words."""
    return [((32 * warp + lane) // BK * BK + r * BK + (32 * warp + lane) % BK) * F for lane in range(32)]


def v5_bs_store(r=0, BN=V5.value("BN"), warp=0):
    """v5's copy Bs[bRow + r][bCol] = B[..], bRow = t / BN, bCol = t % BN: 32 consecutive words."""
    return [(((32 * warp + lane) // BN + r) * BN + (32 * warp + lane) % BN) * F for lane in range(32)]


def bs_row_store(BN=V6.value("BN"), warp=0):
    """v6's and v7's STS.128 of a float4 of B: thread t writes Bs[t / (BN/4)][(t % (BN/4))*4 ..]: a warp
    covers 512 consecutive bytes, a quarter warp one 128-byte line."""
    return [((32 * warp + lane) // (BN // 4) * BN + ((32 * warp + lane) % (BN // 4)) * 4) * F for lane in range(32)]


def v6_as_read(k=0, i=0, AS_LD=V6.value("AS_LD"), TM=V6.value("TM"), threads_per_row=V6_PER_ROW, warp=0):
    """v6's LDS.128 of As[k][threadRow*TM + i .. +3] from the transposed As[BK][AS_LD]: two distinct
    16-byte chunks per warp (two thread rows), each read by 16 lanes."""
    return [(k * AS_LD + ((32 * warp + lane) // threads_per_row) * TM + i) * F for lane in range(32)]


def v6_bs_read(k=0, j=0, BN=V6.value("BN"), TN=V6.value("TN"), threads_per_row=V6_PER_ROW, warp=0):
    """v6's LDS.128 of Bs[k][threadCol*TN + j .. +3]: 16 chunks 32 bytes apart; in each quarter warp
    lanes 0 and 4 (1 and 5, ...) are 128 bytes apart: the same banks, 2-way."""
    return [(k * BN + ((32 * warp + lane) % threads_per_row) * TN + j) * F for lane in range(32)]


def v6_as_store(j=0, AS_LD=V6.value("AS_LD"), BK=V6.value("BK"), warp=0):
    """v6's transposed store of a float4 of A: thread t holds A[row t/(BK/4)][cols (t%(BK/4))*4 ..]
    and writes component j to As[col + j][row] (scalar STS). AS_LD = 132 (the kernel's BM + 4)
    puts the two column groups of a warp 16 banks apart; 128 would make them collide (2-way)."""
    out = []
    for lane in range(32):
        t = 32 * warp + lane
        row, col = t // (BK // 4), (t % (BK // 4)) * 4
        out.append(((col + j) * AS_LD + row) * F)
    return out


def v7_as_read(k=0, i=0, AS_LD=V7.value("AS_LD"), TM=V7.value("TM"), lanes_n=V7.value("LANES_N"), WM=V7.value("WM"),
               warp_row=0):
    """v7's LDS.128 of As[k][warpRow*WM + (lane/4)*TM + i ..]: 8 chunks 32 bytes apart, each read
    by the 4 lanes of one lane row (pairs repeat: the quarter warps of each half merge)."""
    return [(k * AS_LD + warp_row * WM + (lane // lanes_n) * TM + i) * F for lane in range(32)]


def v7_bs_read(k=0, strip=0, BN=V7.value("BN"), TN=V7.value("TN"), lanes_n=V7.value("LANES_N"), WN=V7.value("WN"),
               WSUBN=V7.value("WSUBN"), warp_col=0):
    """v7's LDS.128 of Bs[k][warpCol*WN + strip*WSUBN + (lane%4)*TN ..]: 4 consecutive chunks
    (64 bytes), each read by 8 lanes."""
    return [(k * BN + warp_col * WN + strip * WSUBN + (lane % lanes_n) * TN) * F for lane in range(32)]


def v7_as_store(j=0, AS_LD=V7.value("AS_LD"), BK=V7.value("BK"), warp=0):
    """v7's transposed store (BK = 16: 4 column groups per row of A): groups 0 and 2 (1 and 3) are
    2*AS_LD*4 words apart, the same bank with AS_LD = 132: 2-way (128 would make it 4-way)."""
    return v6_as_store(j=j, AS_LD=AS_LD, BK=BK, warp=warp)


def t2_a_fragment_rows(row_halves=T2.value("LDA_S"), swizzle=False):
    """The 32 row addresses of an ldmatrix.x4 of a 16x16 A fragment at the top-left of As (row
    length row_halves: 40 = BK + 8 padded, 32 unpadded). Lane l: &As[l%16][(l/16)*8]. With
    swizzle=True the tile is unpadded and xor_swizzle'd on 128-byte lines."""
    out = []
    for lane in range(32):
        a = ((lane % 16) * row_halves + (lane // 16) * 8) * H
        out.append(xor_swizzle(a, max(128, row_halves * H)) if swizzle else a)
    return out


def t2_b_fragment_rows(row_halves=T2.value("LDB_S"), swizzle=False):
    """The 32 row addresses of an ldmatrix.x4.trans of a 16x16 B fragment from Bs[k][n] (row length
    row_halves: 136 = BN + 8 padded, 128 unpadded): lane l: &Bs[l%16][(l/16)*8], 8 k-rows per phase."""
    out = []
    for lane in range(32):
        a = ((lane % 16) * row_halves + (lane // 16) * 8) * H
        out.append(xor_swizzle(a, max(128, row_halves * H)) if swizzle else a)
    return out


def t2_as_store(row_halves=T2.value("LDA_S"), swizzle=False, BK=T2.value("BK"), warp=0):
    """t2's STS.128 of the A tile: chunk c = thread, row c/(BK/8), 8 halves at column (c%(BK/8))*8.
    Padded 80-byte rows make lane 7's chunk (row 1, bytes 128..143) share banks with lane 0's."""
    out = []
    for lane in range(32):
        c = 32 * warp + lane
        a = ((c // (BK // 8)) * row_halves + (c % (BK // 8)) * 8) * H
        out.append(xor_swizzle(a, max(128, row_halves * H)) if swizzle else a)
    return out


def t2_bs_store(row_halves=T2.value("LDB_S"), BN=T2.value("BN"), warp=0):
    """t2's STS.128 of the B tile: chunk c = thread, row c/(BN/8), 8 halves at column (c%(BN/8))*8."""
    per_row = BN // 8
    return [(((32 * warp + lane) // per_row) * row_halves + ((32 * warp + lane) % per_row) * 8) * H
            for lane in range(32)]


# name -> SharedAccess(function, kwargs, instruction, bytes per lane, what it shows)
BANK_ACCESSES = {
    "v5 As[row][k] read":            SharedAccess(v5_as_read, {}, "LDS", 4, "two thread rows 64 words apart: broadcast, yet 2-way"),
    "v5 Bs[k][col] read":            SharedAccess(v5_bs_read, {}, "LDS", 4, "16 columns 8 words apart: 4-way"),
    "v5 As rows LDS.128 (compiled)": SharedAccess(v5_as_row_read, {}, "LDS.128", 16, "nvcc reads 4 k at once: 2 chunks, 256 B apart"),
    "v5 Bs[k][n] LDS.128 (compiled)": SharedAccess(v6_bs_read, {}, "LDS.128", 16, "nvcc merges regN: as v6"),
    "v5 As store":                   SharedAccess(v5_as_store, {}, "STS", 4, "32 consecutive words"),
    "v5 Bs store":                   SharedAccess(v5_bs_store, {}, "STS", 4, "32 consecutive words"),
    "v6 As[k][m] LDS.128":           SharedAccess(v6_as_read, {}, "LDS.128", 16, "two chunks, each read by 16 lanes"),
    "v6 Bs[k][n] LDS.128":           SharedAccess(v6_bs_read, {}, "LDS.128", 16, "chunks 32 B apart: 2-way in each quarter"),
    "v6 As store, rows of 132":      SharedAccess(v6_as_store, {}, "STS", 4, "the kernel's padded layout"),
    "v6 As store, rows of 128":      SharedAccess(v6_as_store, {"AS_LD": 128}, "STS", 4, "without the pad"),
    "v6/v7 Bs STS.128 store":        SharedAccess(bs_row_store, {}, "STS.128", 16, "512 consecutive bytes"),
    "v7 As[k][m] LDS.128":           SharedAccess(v7_as_read, {}, "LDS.128", 16, "8 chunks 32 B apart"),
    "v7 Bs[k][n] LDS.128":           SharedAccess(v7_bs_read, {}, "LDS.128", 16, "4 consecutive chunks"),
    "v7 As store, rows of 132":      SharedAccess(v7_as_store, {}, "STS", 4, "BK = 16: four column groups"),
    "v7 As store, rows of 128":      SharedAccess(v7_as_store, {"AS_LD": 128}, "STS", 4, "without the pad"),
    "t2 A fragment, rows of 40":     SharedAccess(t2_a_fragment_rows, {}, "LDSM.x4", 16, "padded by 8 halves"),
    "t2 A fragment, rows of 32":     SharedAccess(t2_a_fragment_rows, {"row_halves": 32}, "LDSM.x4", 16, "unpadded"),
    "t2 A fragment, swizzled":       SharedAccess(t2_a_fragment_rows, {"row_halves": 32, "swizzle": True}, "LDSM.x4", 16, "unpadded, XOR swizzle"),
    "t2 B fragment, rows of 136":    SharedAccess(t2_b_fragment_rows, {}, "LDSM.x4.trans", 16, "padded by 8 halves"),
    "t2 B fragment, rows of 128":    SharedAccess(t2_b_fragment_rows, {"row_halves": 128}, "LDSM.x4.trans", 16, "unpadded"),
    "t2 B fragment, swizzled":       SharedAccess(t2_b_fragment_rows, {"row_halves": 128, "swizzle": True}, "LDSM.x4.trans", 16, "unpadded, XOR swizzle"),
    "t2 As store, rows of 40":       SharedAccess(t2_as_store, {}, "STS.128", 16, "the pad costs the stores"),
    "t2 As store, rows of 32":       SharedAccess(t2_as_store, {"row_halves": 32}, "STS.128", 16, "unpadded"),
    "t2 As store, swizzled":         SharedAccess(t2_as_store, {"row_halves": 32, "swizzle": True}, "STS.128", 16, "unpadded, XOR swizzle"),
    "t2 Bs store, rows of 136":      SharedAccess(t2_bs_store, {}, "STS.128", 16, "padded: rows 272 bytes apart"),
}


# One phase (one BK slice) of each kernel's main loop, per warp, as nvcc 13 compiles it for sm_90
# (cuobjdump -sass: v5's scalar loads become LDS.128, see its kernel header): (access, instructions,
# "ld" or "st"). Epilogues and edge paths are left out; at the bench sizes they are a small part.
# t3 copies with cp.async (LDGSTS, counted by ncu apart from STS), so only its loads are listed.
BANK_MAIN_LOOPS = {
    "v5": [("v5 As rows LDS.128 (compiled)", 16, "ld"), ("v5 Bs[k][n] LDS.128 (compiled)", 16, "ld"),
           ("v5 As store", 4, "st"), ("v5 Bs store", 4, "st")],
    "v6": [("v6 As[k][m] LDS.128", 16, "ld"), ("v6 Bs[k][n] LDS.128", 16, "ld"),
           ("v6 As store, rows of 132", 4, "st"), ("v6/v7 Bs STS.128 store", 1, "st")],
    "v7": [("v7 As[k][m] LDS.128", 32, "ld"), ("v7 Bs[k][n] LDS.128", 64, "ld"),
           ("v7 As store, rows of 132", 16, "st"), ("v6/v7 Bs STS.128 store", 4, "st")],
    "t2": [("t2 A fragment, rows of 40", 8, "ld"), ("t2 B fragment, rows of 136", 4, "ld"),
           ("t2 As store, rows of 40", 2, "st"), ("t2 Bs store, rows of 136", 2, "st")],
    "t3": [("t2 A fragment, rows of 40", 8, "ld"), ("t2 B fragment, rows of 136", 4, "ld")],
}


# ---------------------------------------------------------------------------------------------
# The walkthrough (notebooks/lab07_walkthrough.ipynb, through common/views.py)
# ---------------------------------------------------------------------------------------------
INNER_LOOPS = {"v5": ("v5", ""), "v6": ("v6", "vec"), "v7": ("v7", "vec"), "t2": ("t2", "vec"), "t3": ("t3", "vec")}
CHECK_SHAPES = [(257, 129, 512), (130, 260, 104), (96, 384, 1000)]   # scalar-only, FP32 vec, FP16 vec
