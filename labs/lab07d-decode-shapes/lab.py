"""Lab 7d, decode shapes: the shapes cuBLAS handles and squares do not. A GEMV for decode (M = 1 to
16, where the game is bytes), split-K for small M x N and long K, a shape sweep that times every
kernel at the shapes it is for, and a dispatcher that picks one per shape. The lab's table: data,
no code (common/lab.py says how every target reads it; the README says why each row is here).

Each kernel's tile parameters live in its .cu file (common/tiling.py reads them); the rows say only
what the source cannot: entry points, how a shape picks one, the argument list, the launch.
"""
from dataclasses import replace

from common import profiling
from common.kernels import Kernel
from common.lab import load

from .launch import SplitK, TmaSplitK, wgmma_clusters, with_splits

TITLE = "Lab 7d, Decode shapes: GEMV, split-K, a shape sweep and a dispatcher"
SHORT = "lab07d"
NEEDS = "cp.async and mma.sync.m16n8k16 in its split-K and tensor paths; checked on sm_80 and newer only"

# ---------------------------------------------------------------------------------------------
# The kernel table
# ---------------------------------------------------------------------------------------------
# GEMV: one entry point per MT (rows of A per pass over the weights) and load width. Any entry is
# correct for any M (gemv.cu's header); the smallest MT >= M is the fast one: MT x VEC accumulators,
# and M = 1 must not pay for 16 rows.
GEMV_MT = (1, 4, 8, 16)


def _gemv_choose(vec):
    """vec = elements per 16-byte load (4 FP32, 8 FP16): N % vec == 0 keeps every row of B aligned."""
    def choose(M, N, K):
        mt = next(m for m in GEMV_MT if M <= m or m == GEMV_MT[-1])
        return f"m{mt}_{'vec' if N % vec == 0 else 'scalar'}"
    return choose


def _gemv_entries(prec):
    return {f"m{mt}_{v}": f"gemv_{prec}_m{mt}_{v}" for mt in GEMV_MT for v in ("vec", "scalar")}


def _vec4(M, N, K):       # float4 rows of A and B (split-K FP32)
    return "vec" if K % 4 == 0 and N % 4 == 0 else "scalar"


def _vec8(M, N, K):       # 16-byte chunks of 8 halves in rows of A and B (cp.async in split-K FP16)
    return "vec" if K % 8 == 0 and N % 8 == 0 else "scalar"


def _vec8_b(M, N, K):     # 8 halves: every row of B (the weights) 16-byte aligned
    return "vec" if N % 8 == 0 else "scalar"


# split-K's entry points take two more arguments (common/kernels.py knows the names); C is written
# by the second, reduce kernel, which the hook launches after the main one (launch.py).
SPLITK_ARGS = ("M", "N", "K", "A", "B", "C", "splits", "workspace")


def _one_wave(M, N, K, sms, tiles):
    """As many splits as keep the grid within one block per SM, floor(SMs / tiles), at least 1, none
    shorter than MIN_K_PER_SPLIT. skinny_fp16's split (README, "The FP16 decode kernel"): its blocks
    carry 48 KB of weights in flight each, so one per SM saturates DRAM; a second wave, or a split
    more, only adds partial tiles to reduce (H200: N = 8192, 128 tiles -> 1; N = 4096, 64 tiles -> 2).
    Also the FP32 few-rows split (splitk_v8 with 64 x 512 tiles: 8 warps of 255 registers, one block
    per SM; N = 4096 -> 16 splits, N = 8192 -> 8)."""
    return max(1, min(sms // tiles, K // MIN_K_PER_SPLIT))

GEMV_FP32 = Kernel("gemv_fp32", "gemv.cu", _gemv_entries("fp32"), "fp32", choose=_gemv_choose(4),
                   title="GEMV on FFMA: 128-bit weight loads, each weight read once, A from L1/L2",
                   claim="M = 1 is a copy with arithmetic on the side: its speed is the bandwidth it reaches")
GEMV_FP16 = Kernel("gemv_fp16", "gemv.cu", _gemv_entries("fp16"), "fp16_tensor", choose=_gemv_choose(8),
                   title="the same GEMV on FP16 weights (FP32 FFMA, FP32 out)",
                   claim="half the bytes of FP32; at M = 16 it runs out of FFMA issue slots, not bandwidth")
GEMV_FP16_TC = Kernel("gemv_fp16_tc", "gemv_fp16_tc.cu", {"vec": "gemv_fp16_tc_vec", "scalar": "gemv_fp16_tc_scalar"},
                      "fp16_tensor", choose=_vec8_b,
                      title="the FP16 GEMV on tensor cores: mma.sync m16n8k16 fed straight from 128-bit loads",
                      claim="16 rows of A cost a handful of instructions per 64 weight bytes: M = 16 stays on the memory roof")
SPLITK_FP32 = Kernel("splitk_fp32", "splitk_fp32.cu", {"vec": "splitk_fp32_vec", "scalar": "splitk_fp32_scalar"},
                     "fp32", choose=_vec4, args=SPLITK_ARGS,
                     launch_hook=SplitK("splitk_fp32_reduce", fused=(("vec", "splitk_fp32_fused_vec"),
                                                                     ("scalar", "splitk_fp32_fused_scalar"))),
                     title="split-K on FFMA: v6's 128 x 128 tile, K cut into `splits` ranges, an ordered reduce",
                     claim="one output tile on one SM becomes `splits` tiles on `splits` SMs")
SPLITK_FP16 = Kernel("splitk_fp16", "splitk_fp16.cu", {"vec": "splitk_fp16_vec", "scalar": "splitk_fp16_scalar"},
                     "fp16_tensor", choose=_vec8, args=SPLITK_ARGS,
                     launch_hook=SplitK("splitk_fp16_reduce", fused=(("vec", "splitk_fp16_fused_vec"),
                                                                     ("scalar", "splitk_fp16_fused_scalar"))),
                     title="split-K on tensor cores: t3's WMMA tile with cp.async, the same ordered reduce",
                     claim="the same split on tensor cores; it lands on the memory roof, so the SM count's "
                           "speed-up is not reached (57x of 132x at 128 x 128 x 65536 on the H200)")
# splitk_v8's one-launch entry points (main kernel + reduce), taken where the grid fits in one wave.
SPLITK_V8_FUSED = (("vec", "splitk_v8_fused_vec"), ("scalar", "splitk_v8_fused_scalar"))
SPLITK_V8 = Kernel("splitk_v8", "splitk_v8.cu", {"vec": "splitk_v8_vec", "scalar": "splitk_v8_scalar"},
                   "fp32", choose=_vec4, args=SPLITK_ARGS,
                   launch_hook=SplitK("splitk_v8_reduce", fused=SPLITK_V8_FUSED),
                   title="split-K on lab 7's v8: its pipelined, swizzled tile, handed one range of K per split",
                   claim="where the split is needed and the FFMAs dominate (M = 64), the split must sit on the fast tile")
SKINNY_FP16 = Kernel("skinny_fp16", "skinny_fp16.cu", {"vec": "skinny_fp16_vec", "scalar": "skinny_fp16_scalar"},
                     "fp16_tensor", choose=_vec8, args=SPLITK_ARGS, launch_hook=SplitK(None, rule=_one_wave),
                     title="the FP16 decode kernel: weights streamed through a cp.async ring into mma.sync, "
                           "split-K reduced in the kernel by a ticket, in split order",
                     claim="bytes stay in flight while the tensor cores work, and one launch does the split: "
                           "M = 1 to 64 stream the weights at the copy bandwidth")

LAB7 = load("lab07-matmul-registers")      # lab 7's best kernel of each precision, for the squares
LAB7C = load("lab07c-hopper-wgmma")        # Hopper's TMA + wgmma kernels, for one decode rule
WGMMA_DECODE = Kernel("wgmma_decode", "wgmma_decode.cu", {"": "hgemm_wgmma_decode"}, "fp16_tensor",
                      archs=("sm_90a",), rules=(LAB7C.option("K_MULTIPLE_OF_8"),), launch_hook=wgmma_clusters,
                      title="FP16 decode on Hopper: lab 7c's TMA + wgmma pipeline, K split over a cluster, "
                            "the partial tiles added through distributed shared memory",
                      claim="64 x 4096^2 needs 128 SMs, not 64: the blocks of a cluster share a tile and "
                            "each reads 1 / KSPLIT of K, with no workspace and no second kernel")
# FP16 split-K on Hopper: one block per SM (floor(SMs / tiles) splits), trimmed to whole BK = 64
# slices with no empty split (the file's header: 64 x 128 tiles, 2 tiles x 64 splits of 16 slices at
# 128 x 128 x 65536, not 66 with 2 empty). WGMMA_BK is the file's BK (a test checks).
WGMMA_BK = 64


def _wgmma_one_wave(M, N, K, sms, tiles):
    """_one_wave's splits (floor(SMs / tiles), none shorter than MIN_K_PER_SPLIT, at least 1), then as
    few as cut K's slices as finely: ceil(slices / ceil(slices / s))."""
    s = _one_wave(M, N, K, sms, tiles)
    slices = max(1, -(-K // WGMMA_BK))
    return -(-slices // -(-slices // s))


WGMMA_SPLITK = Kernel("wgmma_splitk", "wgmma_splitk.cu", {"": "hgemm_wgmma_splitk"}, "fp16_tensor",
                      archs=("sm_90a",), rules=(LAB7C.option("K_MULTIPLE_OF_8"),), args=SPLITK_ARGS,
                      launch_hook=TmaSplitK("wgmma_splitk_reduce", rule=_wgmma_one_wave,
                                            fused=(("", "hgemm_wgmma_splitk_fused"),)),
                      title="split-K on Hopper: lab 7c's TMA + wgmma pipeline, one range of K per block, "
                            "the same ordered reduce, in one launch",
                      claim="few output tiles and a long K: 128 blocks of 64 x 128 stream A and B through 4 x 24 KB "
                            "TMA stages into wgmma; the partials are added in split order, bitwise repeatable")
LADDERS = {
    "fp32": [GEMV_FP32, SPLITK_FP32, SPLITK_V8, LAB7.kernel("v8")],
    "fp16": [GEMV_FP16, GEMV_FP16_TC, SPLITK_FP16, SKINNY_FP16, LAB7.kernel("t4")],
}
SELFCHECK_SHAPES = [(1, 1, 1), (1, 33, 17), (2, 129, 4097), (3, 8, 64), (15, 257, 1000), (16, 64, 4096),
                    (17, 130, 999), (128, 128, 8192)]

# ---------------------------------------------------------------------------------------------
# The shape sweep (common/sweep.py): `make bench SHAPES=decode`
# ---------------------------------------------------------------------------------------------
DECODE = [(m, n, n) for n in (4096, 8192) for m in (1, 4, 16, 64)]
BENCH_SWEEP = True          # `make bench` here is the shape sweep (all sets; SHAPES=decode picks one)
SHAPE_SETS = {
    "square": [(2048, 2048, 2048), (4096, 4096, 4096)],
    "decode": DECODE,                                       # a token (or 4, 16, 64) through a weight matrix
    "skinny": [(8192, 16, 8192), (8192, 64, 8192)],         # the transposed problem: N small, M large
    "small-k": [(4096, 4096, 64), (4096, 4096, 256)],       # C dominates the bytes: a rank-64 update
    "split-k": [(128, 128, 65536), (256, 256, 32768)],      # M x N = one (four) tiles, K long
}
SHAPES_DEFAULT = "all"

# The shapes a row is timed at in the sweep (any shape its rules allow runs correctly, but a GEMV at
# 4096^3 would time 256 passes over the weights and teach nothing). Rows not named: every shape.
SERVES = {
    "gemv_fp32": (lambda M, N, K: M <= 64, "M <= 64"),
    "gemv_fp16": (lambda M, N, K: M <= 64, "M <= 64"),
    "gemv_fp16_tc": (lambda M, N, K: M <= 64, "M <= 64"),
    "skinny_fp16": (lambda M, N, K: M <= 64, "M <= 64"),
}

# Rows timed on one set's shapes only: split-K without the split, the comparison the SM count predicts;
# on Hopper (sm_90a rows: skipped elsewhere) the split on wgmma, and lab 7c's h4 and h6 at small K,
# where the small-k-wgmma rule picks h6 for its overlapped stores (lab 7c's h4 is the rule's old row).
SWEEP_EXTRA = {"split-k": {"fp32": [with_splits(SPLITK_FP32, 1)],
                           "fp16": [with_splits(SPLITK_FP16, 1), WGMMA_SPLITK]},
               "small-k": {"fp16": [LAB7C.kernel("h4"), LAB7C.kernel("h6")]}}

# ---------------------------------------------------------------------------------------------
# The dispatcher (dispatch.py): gemm(A, B) -> (C, the rule that fired). First match wins.
# ---------------------------------------------------------------------------------------------
# Each rule: (name, the condition in words, predicate(s), {precision: kernel}); a rule whose kernel
# this GPU cannot run (a Hopper-only row elsewhere) is skipped. `s` has M, N, K,
# sms (this GPU's SM count), tiles (output tiles of the split-K kernel: ceil(M / BM) ceil(N / BN))
# and splits (splits_for: ceil(sms / tiles), at most K / MIN_K_PER_SPLIT). A rule that names no
# kernel (a name, or a row) for a precision is skipped for it. The thresholds are the H200's (README):
# re-derive them from `make bench SHAPES=all` on another GPU.
MIN_K_PER_SPLIT = 256      # a split shorter than this pays its prologue, epilogue and partial tile for little

# The dispatcher's own rows: the same split-K kernels with other tiles and a fixed split, and the FP16
# GEMV with deeper loads. Found by timing tiles x splits at the shapes the first rules missed (H200,
# 2026-12-01, README "How the dispatcher's rows were chosen"): a 64-row tile when A has few rows, a
# 16- or 64-column tile when B has few columns, and more splits than ceil(SMs / tiles), because these
# blocks are small (128 threads, or 32) and several share an SM.
def _retiled(row, splits=0, **params):
    """The row built with other parameters (-DNAME=value; its .cu static_asserts them) and, for split-K,
    a fixed number of splits. Named like Kernel.with_params: splitk_fp32[BM64, splits=8]."""
    r = row.with_defines(**params)
    return with_splits(r, splits) if splits else r


# FP32 at M <= 64: split-K on v8's tile (splitk_v8), 64 x 512 blocks of 8 warps, one per SM, the
# one-wave split. Chosen by timing v8's tiles x splits at 64 x 4096^2 and 64 x 8192^2 (H200,
# 2026-12-01, README "split-K on v8", results/lab07d-splitk-v8-search_*.json); the v6-tile row it
# replaced (splitk_fp32[BM64], 8 splits) reached 84 %.
SPLITK_V8_FEW_ROWS = replace(_retiled(SPLITK_V8, BM=64, BN=512),
                             launch_hook=SplitK("splitk_v8_reduce", rule=_one_wave, fused=SPLITK_V8_FUSED))
# ... and with at most 4096 x 2048 weights the 64 x 128 tile of 4 warps of 64 x 32 (WN = 32): a
# 512-wide tile there leaves most SMs idle or wastes columns (64 x 520 x 8192: 57 against 30 us;
# results/lab07d-small-few-rows_*.json, the second call of the review).
SPLITK_V8_FEW_ROWS_SMALL = replace(_retiled(SPLITK_V8, BM=64, BN=128, WN=32, WNITER=2),
                                   launch_hook=SplitK("splitk_v8_reduce", rule=_one_wave, fused=SPLITK_V8_FUSED))
SPLITK_FP32_FEW_COLS = _retiled(SPLITK_FP32, 16, BN=16)
SPLITK_FP32_NARROW = _retiled(SPLITK_V8, 8, BN=64, WN=64)      # v8's tile, 128 x 64: 2 warps
GEMV_FP16_DEEP = _retiled(GEMV_FP16, KU=16)
GEMV_FP32_DEEP = _retiled(GEMV_FP32, KU=16)     # twice the bytes in flight per thread (the FP16 row's build)
SPLITK_FP16_FEW_ROWS = _retiled(SPLITK_FP16, 8, BM=64, BN=256)
SPLITK_FP16_FEW_COLS = _retiled(SPLITK_FP16, 4, BN=16, WM=32, WN=16)
SPLITK_FP16_NARROW = _retiled(SPLITK_FP16, 4, BN=64)
# skinny_fp16 per M class: the file's defaults are the M <= 16 build (MT = 1); 32 and 64 rows of A
# per block for M <= 32 and M <= 64, the latter with 2 warps on K (a 64 x 32 warp tile, 4 k-steps a
# stage) and the register double buffer. Splits by its own rule (_one_wave), not fixed. Chosen by
# timing tiles x splits beside cuBLAS (H200, 2026-12-01: README, results/lab07d-skinny-search_*.json).
SKINNY_FP16_M32 = _retiled(SKINNY_FP16, MT=2)
SKINNY_FP16_M64 = _retiled(SKINNY_FP16, MT=4, WARPS_K=2, REGDB=1)
# FP16 at 17 <= M <= 64 on Hopper: wgmma_decode (lab 7c's TMA + wgmma pipeline on 64 x 64 tiles, 8
# stages). Where two blocks per tile still fit in one wave (2 ceil(N / 64) <= SMs: N <= 4224 on the
# H200), the two blocks of a cluster split K and add their halves through distributed shared memory:
# 64 x 4096^2 in 13.7 us, 102.6 % of cuBLAS, where lab 7c's h4 with the same tile took 15.9 on 64
# SMs; at 17..32 rows the same build beat skinny_fp16 at N = 4096 (102.6 against 92.8 %). Wider N
# has enough tiles for every SM without a split (64 x 8192^2: 98.1 %, skinny_fp16 96.6 %); with fewer
# rows the unsplit build lost (33 x 8192^2: 76 %), so 33..47 rows stay on skinny_fp16 there. H200,
# 2026-12-02: README "FP16 at M = 64 on Hopper", results/lab07d-wgmma-decode_*.json. sm_90a only:
# the dispatcher skips these rules on other GPUs.
WGMMA_DECODE_SPLIT = WGMMA_DECODE                         # the file's defaults: KSPLIT = 2
WGMMA_DECODE_WIDE = _retiled(WGMMA_DECODE, KSPLIT=1)
# FP16 tiles on Hopper: lab 7c's h4 (persistent, TMA + wgmma, 128 x 256), 94-97 % of cuBLAS at 2048^3
# and 4096^3 where lab 7's t4 (mma.sync) reaches 62-67 %; and with 128 x 64 tiles, 8 stages, for
# N <= 64 (8192 x 64 x 8192: 95.3 %, 8192 x 16 x 8192: 90.5 %; split-K on t3's tile 60-66 %).
# results/lab07d-h4-shapes_*.json.
H4_TILES = LAB7C.kernel("h4")
H4_NARROW = LAB7C.kernel("h4").with_params(BN=64, STAGES=8)
# FP16 at small K on Hopper: lab 7c's h6 (h4 with its epilogue through shared memory and TMA stores,
# which overlap one tile's stores with the next tile's loads and multiplies). Per output element the
# multiplies cost 2 K FLOP and the store 4 bytes of FP32 C: the store takes longer than the multiplies
# while 4 / BW > 2 K / P, K < 2 P / BW = 2 x 990 TFLOP/s / 4.2 TB/s ~ 470 on the H200 (P the dense FP16
# peak, BW the copy bandwidth; at h4's reached 690 TFLOP/s, K < 330). At 4096 x 4096 x 64 C is 64 MB of
# 65 MB moved, and h4, whose consumers store from registers while the tensor core waits, reached 77 %
# of cuBLAS; at K = 256, 85 %. So h6 takes K <= SMALL_K; SMALL_K = 512 is that estimate rounded up to
# whole 64-deep slices, TO BE CONFIRMED on the H200 (NOTES, "Hopper dispatch for small and long K").
H6_TILES = LAB7C.kernel("h6")
SMALL_K = 512
# Rows whose launch needs a module `make test` does not install: h4's TMA maps come from NVIDIA's
# cuda-python (lab 7c's README). Where it is missing, the dispatcher on a GPU takes the next rule.
RUNTIME_NEEDS = {"h4": "cuda.bindings", "h6": "cuda.bindings", "wgmma_decode": "cuda.bindings",
                 "wgmma_splitk": "cuda.bindings"}


def _chunks(s):
    """N and K multiples of 8: rows of A and B are whole 16-byte chunks (skinny_fp16's cp.async entry)."""
    return s.N % 8 == 0 and s.K % 8 == 0


def _long_enough(row):
    """K gives each of the row's fixed splits at least MIN_K_PER_SPLIT."""
    return lambda s: s.K >= row.launch_hook.splits * MIN_K_PER_SPLIT


# First match wins. Rules and thresholds from the H200 (results/lab07d-sweep_*.json and the README).
DISPATCH = [
    ("gemv", "M <= 4 in FP32, at most 4096 x 4096 weights: the GEMV with 16 loads in flight per thread",
     lambda s: s.M <= 4 and s.N * s.K <= 4096 * 4096, {"fp32": GEMV_FP32_DEEP}),
    ("gemv", "M <= 16 in FP32: a GEMV reads each weight once", lambda s: s.M <= 16,
     {"fp32": "gemv_fp32"}),
    ("gemv", "M = 1 in FP16, at most 4096 x 4096 weights (or rows not 16-byte chunks): the GEMV, "
     "nothing to fill or reduce", lambda s: s.M == 1 and (s.N * s.K <= 4096 * 4096 or not _chunks(s)),
     {"fp16_tensor": "gemv_fp16"}),
    ("skinny", "M <= 16 in FP16, N and K multiples of 8: weights streamed into mma, splits = floor(SMs / tiles)",
     lambda s: s.M <= 16 and _chunks(s), {"fp16_tensor": SKINNY_FP16}),
    ("wgmma-split", "17 <= M <= 64 in FP16 on Hopper, N >= 1024, two blocks per 64-column tile fit on the SMs, "
     "N and K multiples of 8: TMA + wgmma, K split over 2-block clusters, partials added in shared memory",
     lambda s: 16 < s.M <= 64 and s.N >= 1024 and 2 * -(-s.N // 64) <= s.sms and _chunks(s),
     {"fp16_tensor": WGMMA_DECODE_SPLIT}),
    ("wgmma", "48 <= M <= 64 in FP16 on Hopper, 64-column tiles for at most every SM, N and K multiples of 8: "
     "the same without the split",
     lambda s: 48 <= s.M <= 64 and s.N >= 1024 and -(-s.N // 64) <= s.sms and _chunks(s),
     {"fp16_tensor": WGMMA_DECODE_WIDE}),
    ("skinny", "17 <= M <= 32 in FP16, N and K multiples of 8: the same with 32-row tiles",
     lambda s: s.M <= 32 and _chunks(s), {"fp16_tensor": SKINNY_FP16_M32}),
    ("skinny", "33 <= M <= 64 in FP16, N and K multiples of 8: the same with 64-row tiles",
     lambda s: s.M <= 64 and _chunks(s), {"fp16_tensor": SKINNY_FP16_M64}),
    ("gemv", "2 <= M <= 4 in FP16 (odd N or K): the GEMV with 16 loads in flight per thread", lambda s: s.M <= 4,
     {"fp16_tensor": GEMV_FP16_DEEP}),
    ("few-rows", "M <= 64 in FP32, K >= 1024, at most 4096 x 2048 weights: split-K on v8's tile, 64 x 128, "
     "splits = floor(SMs / tiles)", lambda s: s.M <= 64 and s.K >= 1024 and s.N * s.K <= 4096 * 2048,
     {"fp32": SPLITK_V8_FEW_ROWS_SMALL}),
    ("few-rows", "M <= 64 in FP32 and K >= 2048: split-K on v8's tile, 64 x 512, splits = floor(SMs / tiles)",
     lambda s: s.M <= 64 and s.K >= 2048, {"fp32": SPLITK_V8_FEW_ROWS}),
    ("few-rows", "M <= 64 in FP16 and K long (odd N or K): split-K with a 64-row tile, 8 splits",
     lambda s: s.M <= 64 and _long_enough(SPLITK_FP16_FEW_ROWS)(s), {"fp16_tensor": SPLITK_FP16_FEW_ROWS}),
    ("gemv", "M <= 64 in FP32, K short: the GEMV", lambda s: s.M <= 64,
     {"fp32": "gemv_fp32"}),
    ("gemv-tc", "5 <= M <= 16 in FP16 (odd N or K), K short: the tensor-core GEMV", lambda s: s.M <= 16,
     {"fp16_tensor": "gemv_fp16_tc"}),
    ("narrow-wgmma", "N <= 64 and M >= 2048 in FP16 on Hopper, N and K multiples of 8: lab 7c's h4 with "
     "128 x 64 tiles and 8 stages", lambda s: s.N <= 64 and s.M >= 2048 and _chunks(s), {"fp16_tensor": H4_NARROW}),
    ("few-cols", "N <= 16 and K long, FP32: split-K with a 16-column tile, 16 splits",
     lambda s: s.N <= 16 and _long_enough(SPLITK_FP32_FEW_COLS)(s), {"fp32": SPLITK_FP32_FEW_COLS}),
    ("few-cols", "N <= 16 and K long, FP16: split-K with a 16-column tile, 4 splits",
     lambda s: s.N <= 16 and _long_enough(SPLITK_FP16_FEW_COLS)(s), {"fp16_tensor": SPLITK_FP16_FEW_COLS}),
    ("narrow", "N <= 64 and K long: split-K with a 64-column tile (FP32 on v8's, 8 splits; FP16 4)",
     lambda s: s.N <= 64 and _long_enough(SPLITK_FP32_NARROW)(s),
     {"fp32": SPLITK_FP32_NARROW, "fp16_tensor": SPLITK_FP16_NARROW}),
    ("split-k-wgmma", "at most half as many 128 x 128 tiles as SMs, K >= 2 MIN_K_PER_SPLIT, FP16 on Hopper, N and "
     "K multiples of 8: split-K on TMA + wgmma, splits = floor(SMs / tiles) in whole 64-deep slices, one launch",
     lambda s: 2 * s.tiles <= s.sms and s.K >= 2 * MIN_K_PER_SPLIT and _chunks(s), {"fp16_tensor": WGMMA_SPLITK}),
    ("split-k", "M x N fills fewer tiles than SMs and K is long: splits = ceil(SMs / tiles)", lambda s: s.splits >= 2,
     {"fp32": "splitk_fp32", "fp16_tensor": "splitk_fp16"}),
    ("small-k-wgmma", f"K <= {SMALL_K}, FP16 on Hopper, N and K multiples of 8: lab 7c's h6, C's stores by TMA "
     "overlapped with the next tile's loads", lambda s: s.K <= SMALL_K and _chunks(s), {"fp16_tensor": H6_TILES}),
    ("tiles-wgmma", "enough output tiles to fill the GPU, FP16 on Hopper, N and K multiples of 8: lab 7c's h4",
     lambda s: _chunks(s), {"fp16_tensor": H4_TILES}),
    ("tiles", "enough output tiles to fill the GPU: lab 7's best kernel", lambda s: True,
     {"fp32": "v8", "fp16_tensor": "t4"}),
]
DISPATCHERS = {"gemm": "dispatch:plan"}   # the sweep times gemm(A, B) as one more row (KERNEL=gemm: only it)

# make sanitize checks the table's rows and, once each, the other builds the dispatcher launches.
SANITIZE_ALSO = [k for _, _, _, rows in DISPATCH for k in rows.values() if isinstance(k, Kernel)]
# ... on the course's shapes and one whose K splits: at the course's (K <= 104) every split-K row runs one
# split (_one_wave: K // 256 = 0), so the reduce over splits was never under the sanitizer; 130 x 260 x 1032
# is several tiles of 4 splits each (a multiple of 8 for the TMA rows; 2026-12-05). Every tool runs each row
# as the dispatcher launches it: the one-launch forms where the grid fits one wave.
SANITIZE_SHAPES = profiling.SANITIZE_SHAPES + [(130, 260, 1032)]
