"""Tuning search space for lab 7's v7 (v7_warptiling.cu) and v8 (v8_pipelined.cu).

    candidates(kernel="v8")          yields parameter dicts {BM, BN, BK, WM, WN, WNITER, TM, TN,
                                     STAGES, GROUP} (and MAXREG on a few), all legal, about 60
    reason_illegal(p, kernel="v8")   None if the .cu file's static_asserts accept p, else the
                                     sentence of the first one that fails (same order, same words)
    derived(p, kernel="v8")          {"THREADS": ..., "SMEM_BYTES": ...} as the .cu macros compute
    defines(p, kernel="v8")          the -DNAME=value flags that build p
    DEFAULTS[kernel]                 the parameters a build without -D flags gets

v7 has no cp.async pipeline and no rasterization: its STAGES is 1 (V7_PREFETCH=0) or 2
(V7_PREFETCH=1, register-staged double buffer) and its GROUP is always 1. v8's feature switches
SWIZZLE, APAD, REGDB, LANEMAP, ACOPY, FMAORDER, FASTLOOP, MAXREG may be given too (file defaults 1, 0, 1, 0, 0,
2, 1, 0).

The space is small on purpose (the GPU time is scarce): four block shapes that keep a lane's
8 x 16 accumulator tile of v7 (128 FP32 accumulators, 6 LDS.128 per 128 FFMA), three with a
smaller thread tile for more warps per SM, each with the BK / STAGES pairs whose shared memory
still lets the intended number of blocks share an SM (228 KB per SM on the H200).
"""

PARAMS = ("BM", "BN", "BK", "WM", "WN", "WNITER", "TM", "TN", "STAGES", "GROUP")
SWITCHES = ("SWIZZLE", "APAD", "REGDB", "LANEMAP", "ACOPY", "FMAORDER", "FASTLOOP", "MAXREG")

DEFAULTS = {
    "v7": dict(BM=128, BN=128, BK=16, WM=64, WN=64, WNITER=4, TM=8, TN=4, STAGES=1, GROUP=1),
    "v8": dict(BM=128, BN=256, BK=8, WM=64, WN=64, WNITER=4, TM=8, TN=4, STAGES=3, GROUP=8,
               SWIZZLE=1, APAD=0, REGDB=1, LANEMAP=0, ACOPY=0, FMAORDER=2, FASTLOOP=1, MAXREG=0),
}

SMEM_PER_SM = 228 * 1024          # H200 (sm_90): shared memory per SM, bytes
SMEM_PER_BLOCK_MAX = 227 * 1024   # the most one block may use (sm_90)


def _div(a, b):
    return a // b if b > 0 else 0


def _full(p, kernel):
    q = dict(DEFAULTS[kernel])
    q.update(p)
    return q


def derived(p, kernel="v8"):
    q = _full(p, kernel)
    threads = _div(q["BM"], q["WM"]) * _div(q["BN"], q["WN"]) * 32
    if kernel == "v7":
        smem = q["STAGES"] * (q["BK"] * (q["BM"] + 4) + q["BK"] * q["BN"]) * 4
    else:
        smem = q["STAGES"] * (q["BK"] * (q["BM"] + q["APAD"]) + q["BK"] * q["BN"]) * 4
    return {"THREADS": threads, "SMEM_BYTES": smem}


def defines(p, kernel="v8"):
    q = dict(p)
    if kernel == "v7":
        stages = q.pop("STAGES", 1)
        q.pop("GROUP", None)
        q["V7_PREFETCH"] = 1 if stages == 2 else 0
    return [f"-D{k}={v}" for k, v in q.items()]


def _reason_v7(q):
    BM, BN, BK, WM, WN, WNITER, TM, TN = (q[k] for k in PARAMS[:8])
    if q["STAGES"] not in (1, 2):
        return "v7: STAGES is 1 (V7_PREFETCH=0) or 2 (V7_PREFETCH=1)"
    if q["GROUP"] != 1:
        return "v7: no rasterization (GROUP must be 1)"
    if not all(x > 0 for x in (BM, BN, BK, WM, WN, WNITER, TM, TN)):
        return "v7: every tile parameter must be positive"
    threads = derived(q, "v7")["THREADS"]
    wsubn = _div(WN, WNITER)
    lanes_n = _div(wsubn, TN)
    lanes_m = _div(32, lanes_n)
    if not (BM % WM == 0 and BN % WN == 0):
        return "v7: the block tile (BM x BN) must split into whole warp tiles (WM x WN)"
    if threads > 1024:
        return "v7: (BM/WM)*(BN/WN) warps must fit in one block (at most 32 warps)"
    if WN % WNITER:
        return "v7: WN must split into WNITER strips of equal width"
    if wsubn % TN:
        return "v7: a strip (WN/WNITER columns) must split into lane columns of TN"
    if not (lanes_n >= 1 and 32 % lanes_n == 0):
        return "v7: lanes across a strip (WN/WNITER/TN) must divide 32"
    if WM != TM * lanes_m:
        return ("v7: WM must equal TM * (32 / (WN/WNITER/TN)): the 32 lanes must cover the warp "
                "tile exactly once")
    if TM % 4 or TN % 4:
        return "v7: TM and TN must be multiples of 4 (regM, regN are read with LDS.128)"
    if BK % 4 or BN % 4:
        return "v7: BK and BN must be multiples of 4 (tile rows are loaded as float4 groups)"
    if (BM * BK) % (4 * threads):
        return "v7: THREADS * 4 must divide BM*BK (each thread loads whole float4 groups of A)"
    if (BK * BN) % (4 * threads):
        return "v7: THREADS * 4 must divide BK*BN (each thread loads whole float4 groups of B)"
    if threads % (BK // 4):
        return "v7: THREADS must be a multiple of BK/4 (a thread's A groups share one column)"
    if threads % (BN // 4):
        return "v7: THREADS must be a multiple of BN/4 (a thread's B groups share one column)"
    if TM * WNITER * TN > 192:
        return "v7: more than 192 accumulators per thread cannot stay in 255 registers"
    if derived(q, "v7")["SMEM_BYTES"] > 48 * 1024:
        return ("v7: static shared memory (STAGES x (BK*(BM+4) + BK*BN) floats) is limited to "
                "48 KB")
    return None


def _reason_v8(q):
    BM, BN, BK, WM, WN, WNITER, TM, TN, STAGES, GROUP = (q[k] for k in PARAMS)
    SWIZZLE, APAD, REGDB, LANEMAP, ACOPY, FMAORDER, FASTLOOP, MAXREG = (q[k] for k in SWITCHES)
    d = derived(q, "v8")
    threads, smem = d["THREADS"], d["SMEM_BYTES"]
    wsubn = _div(WN, WNITER)
    lanes_n = _div(wsubn, TN)
    lanes_m = _div(32, lanes_n)
    # the static_asserts of v8_pipelined.cu, in file order
    if not all(x > 0 for x in (BM, BN, BK, WM, WN, WNITER, TM, TN)):
        return "v8: every tile parameter must be positive"
    if not (BM % WM == 0 and BN % WN == 0):
        return "v8: the block tile (BM x BN) must split into whole warp tiles (WM x WN)"
    if threads > 1024:
        return "v8: (BM/WM)*(BN/WN) warps must fit in one block (at most 32 warps)"
    if WN % WNITER:
        return "v8: WN must split into WNITER strips of equal width"
    if wsubn % TN:
        return "v8: a strip (WN/WNITER columns) must split into lane columns of TN"
    if not (lanes_n >= 1 and 32 % lanes_n == 0):
        return "v8: lanes across a strip (WN/WNITER/TN) must divide 32"
    if WM != TM * lanes_m:
        return ("v8: WM must equal TM * (32 / (WN/WNITER/TN)): the 32 lanes must cover the warp "
                "tile exactly once")
    if TM % 4 or TN % 4:
        return "v8: TM and TN must be multiples of 4 (operands are read with LDS.128)"
    if lanes_m % 8:
        return ("v8: at least 8 lane rows (WN/WNITER/TN <= 4), so that one A read covers whole "
                "groups of 8 chunks that the XOR permutes among themselves")
    if BM % 32:
        return ("v8: BM must be a multiple of 32 (As rows start at bank 0 and hold whole groups "
                "of 8 chunks for the XOR)")
    if BK % 8:
        return "v8: BK must be a multiple of 8 (8 lanes copy 8 consecutive k of one A row)"
    if BN % 4:
        return "v8: BN must be a multiple of 4 (B is copied in 16-byte chunks)"
    if not (threads <= 256 and 8 % (threads // 32) == 0):
        return ("v8: 1, 2, 4 or 8 warps (each warp copies whole chunks of one group of 8 chunks "
                "of A)")
    if not (BN % threads == 0 or threads % BN == 0):
        return ("v8: BN and THREADS must divide one another (the scalar B copy walks whole rows)")
    if (BM * BK) % threads:
        return ("v8: THREADS must divide BM*BK (each thread copies the same number of A "
                "elements)")
    if (BK * BN // 4) % threads:
        return ("v8: THREADS must divide BK*BN/4 (each thread copies the same number of B "
                "chunks)")
    if threads % (BN // 4):
        return "v8: THREADS must be a multiple of BN/4 (a thread's B chunks share one column)"
    if not (2 <= STAGES <= 8):
        return "v8: STAGES must be 2..8 (one buffer computed on, at least one being filled)"
    if GROUP < 1:
        return "v8: GROUP (block rows per raster group) must be at least 1"
    if SWIZZLE not in (0, 1):
        return "v8: SWIZZLE is 0 (plain or padded rows) or 1 (XOR)"
    if REGDB not in (0, 1):
        return "v8: REGDB is 0 or 1"
    if ACOPY not in (0, 1):
        return "v8: ACOPY is 0 (4-byte cp.async) or 1 (through registers)"
    if ACOPY and (BM // 16) % (threads // 32):
        return ("v8: with ACOPY = 1, BM/16 must be a multiple of the warp count (a warp copies 16 rows "
                "x 8 k)")
    if FMAORDER not in (0, 1, 2, 3):
        return "v8: FMAORDER is 0 (row-major), 1 (column-major), 2 or 3 (the same, serpentine)"
    if LANEMAP not in (0, 1):
        return "v8: LANEMAP is 0 (v7's lane layout) or 1 (paired lanes)"
    if FASTLOOP not in (0, 1):
        return "v8: FASTLOOP is 0 (one main loop) or 1 (interior tiles in a loop of their own)"
    if not (MAXREG == 0 or 128 <= MAXREG <= 255):
        return "v8: MAXREG is 0 (no cap) or a register cap of 128..255"
    if not (APAD >= 0 and APAD % 4 == 0):
        return "v8: APAD must be a multiple of 4 floats (As rows stay 16-byte aligned for LDS.128)"
    if SWIZZLE and APAD:
        return "v8: the XOR swizzle needs unpadded rows (APAD = 0)"
    if TM * WNITER * TN + 2 * (TM + WNITER * TN) > 224:
        return ("v8: accumulators plus two operand sets must leave room for addresses in 255 "
                "registers")
    if smem > SMEM_PER_BLOCK_MAX:
        return ("v8: STAGES x (BK*(BM+APAD) + BK*BN) floats exceed 227 KB, the most a block may "
                "use (sm_86/89/120 give 99 KB; the launcher checks the device)")
    return None


def reason_illegal(p, kernel="v8"):
    """None when the .cu file would compile p, else the failing static_assert's sentence."""
    unknown = set(p) - set(PARAMS) - (set(SWITCHES) if kernel == "v8" else set())
    if unknown:
        return f"{kernel}: unknown parameter(s) {sorted(unknown)}"
    q = _full(p, kernel)
    return _reason_v7(q) if kernel == "v7" else _reason_v8(q)


def _shape(BM, BN, WM, WN, WNITER, TM, TN):
    return dict(BM=BM, BN=BN, WM=WM, WN=WN, WNITER=WNITER, TM=TM, TN=TN)


# Block shapes: (shape, [(BK, STAGES), ...]) for v8. Thread tile 8 x 16 unless noted.
_V8_SHAPES = [
    # v7's block: 4 warps of 64 x 64, 2 blocks per SM at <= 113 KB each
    (_shape(128, 128, 64, 64, 4, 8, 4), [(8, 3), (8, 4), (16, 2), (16, 3), (16, 4), (32, 3)]),
    # 8 warps, 1 block per SM (registers): 128 x 256 and cuBLAS's 256 x 128
    (_shape(128, 256, 64, 64, 4, 8, 4), [(8, 2), (8, 3), (8, 4), (8, 5), (16, 3), (16, 4)]),
    (_shape(256, 128, 64, 64, 4, 8, 4), [(8, 3), (8, 4), (8, 5), (16, 3)]),
    # 2 warps of 64 x 64: 64 threads per block, 4 blocks per SM
    (_shape(64, 128, 64, 64, 4, 8, 4), [(8, 4), (16, 3), (16, 4)]),
    (_shape(128, 64, 64, 64, 4, 8, 4), [(16, 3), (16, 4)]),
    # a lane's 8 x 16 as 2 strips of 8 columns (two LDS.128 per strip)
    (_shape(128, 128, 64, 64, 2, 8, 8), [(16, 3)]),
    (_shape(128, 256, 64, 64, 2, 8, 8), [(8, 3)]),
    # a lane's 16 x 8 (4 LDS.128 of A, 2 of B per k): warp tile 128 x 32
    (_shape(128, 128, 128, 32, 2, 16, 4), [(16, 3)]),
    # smaller thread tiles (64 accumulators, fewer registers, more warps per SM)
    (_shape(128, 64, 64, 32, 2, 8, 4), [(16, 3)]),
    (_shape(128, 128, 32, 64, 4, 4, 4), [(16, 4)]),
]
# GROUP values tried on the leaders (the others use 8): v7's block, and the 8-warp tiles at the depths
# that led with the fast loop. On the H200 (results/lab07-tune_*_63c9117.json) GROUP = 1, launch order,
# was the best at every size, so the leaders get GROUP 1 and 2 besides 4 and 16.
_V8_GROUP_SHAPES = [dict(_shape(128, 128, 64, 64, 4, 8, 4), BK=16, STAGES=3),
                    dict(_shape(128, 256, 64, 64, 4, 8, 4), BK=8, STAGES=3),
                    dict(_shape(128, 256, 64, 64, 4, 8, 4), BK=8, STAGES=4),
                    dict(_shape(128, 256, 64, 64, 4, 8, 4), BK=8, STAGES=5),
                    dict(_shape(128, 256, 64, 64, 4, 8, 4), BK=16, STAGES=3),
                    dict(_shape(128, 256, 64, 64, 2, 8, 8), BK=8, STAGES=3),
                    dict(_shape(256, 128, 64, 64, 4, 8, 4), BK=8, STAGES=3)]
_V8_GROUPS_EXTRA = [1, 2, 4, 16]
# Register caps (MAXREG, __maxnreg__) on the two leading depths at GROUP 8 and 1: under a cap below its
# own choice ptxas allocates and schedules the same source otherwise. On the H200 which cap wins moved
# with the source: 224 before v8's byte offsets (104.8 % of cuBLAS at 4096^3 against 103.1 %,
# results/lab07-v8-maxreg_*.json), 232 with 4 stages after them (106.0 %, lab07-tune_*_24783b3.json).
_V8_MAXREG_SHAPES = [dict(_shape(128, 256, 64, 64, 4, 8, 4), BK=8, STAGES=s, GROUP=g) for s in (3, 4) for g in (8, 1)]
_V8_MAXREGS = [224, 232]

_V7_SHAPES = [
    (_shape(128, 128, 64, 64, 4, 8, 4), [(8, 1), (16, 1), (8, 2), (16, 2)]),
    (_shape(128, 64, 64, 32, 2, 8, 4), [(16, 1), (16, 2)]),
]


def candidates(kernel="v8"):
    """Legal parameter dicts for `kernel`, the file's default first."""
    seen = []

    def emit(p):
        key = tuple(sorted(p.items()))
        if key in seen or reason_illegal(p, kernel) is not None:
            return None
        seen.append(key)
        return p

    base = {k: DEFAULTS[kernel][k] for k in PARAMS}
    if emit(dict(base)):
        yield dict(base)
    shapes = _V8_SHAPES if kernel == "v8" else _V7_SHAPES
    group = 8 if kernel == "v8" else 1
    for shape, pairs in shapes:
        for bk, stages in pairs:
            p = dict(shape, BK=bk, STAGES=stages, GROUP=group)
            if emit(p):
                yield p
    if kernel == "v8":
        for shape in _V8_GROUP_SHAPES:
            for g in _V8_GROUPS_EXTRA:
                p = dict(shape, GROUP=g)
                if emit(p):
                    yield p
        for shape in _V8_MAXREG_SHAPES:
            for r in _V8_MAXREGS:
                p = dict(shape, MAXREG=r)
                if emit(p):
                    yield p


def name(p, kernel="v8"):
    q = _full(p, kernel)
    s = (f"{kernel}_{q['BM']}x{q['BN']}x{q['BK']}_w{q['WM']}x{q['WN']}i{q['WNITER']}"
         f"_t{q['TM']}x{q['TN']}_s{q['STAGES']}_g{q['GROUP']}")
    if kernel == "v8" and tuple(q[k] for k in SWITCHES) != tuple(DEFAULTS["v8"][k] for k in SWITCHES):
        s += f"_sw{q['SWIZZLE']}p{q['APAD']}r{q['REGDB']}l{q['LANEMAP']}a{q['ACOPY']}f{q['FMAORDER']}"
        if q["FASTLOOP"] != DEFAULTS["v8"]["FASTLOOP"]:
            s += f"x{q['FASTLOOP']}"
        if q["MAXREG"]:
            s += f"m{q['MAXREG']}"
    return s


if __name__ == "__main__":
    for kern in ("v8", "v7"):
        cs = list(candidates(kern))
        print(f"{kern}: {len(cs)} candidates")
        for p in cs:
            print("  ", name(p, kern), derived(p, kern))
