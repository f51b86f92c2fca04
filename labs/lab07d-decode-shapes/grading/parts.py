"""Lab 7d's grading table: two code parts, what is graded, how many points, and what each known-wrong
kernel must lose. Data only: common/grading reads it (common/grading/spec.py says what each name
means; common/grading/measures.py the two measured kinds).

    PARTS     gemv (the step of gemv.cu's K loop: the weights' loads in flight), splits
              (skinny_fp16.cu's split-K reduction inside the kernel: ordered, bitwise repeatable) and
              dispatch (dispatch_rules.toml: the FP32 dispatcher's rules, graded on hidden shapes)
    REGIONS   each solution region and the stub the workspace keeps in its place (so it compiles)
    WRONG     the known-wrong kernels (wrong/*.patch) and the checks each must fail
    SHAPES    the awkward shapes "correct" runs (each part has its own)
    RULES_*   the dispatch part's families, tile, hidden shape classes and sanity properties
              (common/grading/rules.py says what each means)

The regions are marked in the reference kernels:
    kernels/gemv.cu          // BEGIN SOLUTION gemv-step: ...              (the body of gemv::step)
    kernels/skinny_fp16.cu   // BEGIN SOLUTION skinny-ordered-splits: ...  (the end of skinny_body)

What is graded, and why each check can see its mistake:
  gemv    bytes-in-flight (static): the SASS of every entry point issues at least 64 bytes of global
          loads per thread before an FFMA could use them (the reference: 160 in the FP32 M = 1 entry,
          8 weight rows of 16 bytes and 8 values of A; one row at a time: 20). correct (GPU): every
          shape of GEMV_SHAPES, odd N and K among them, against float64. bandwidth (GPU): 1 x 8192 x
          8192 in FP32 (268 MB of weights) at >= 75 % of a device copy of as many bytes, timed in the
          same run (the reference measured 101.8 % on the H200, README; one 16-byte load in flight per
          thread is an eighth of the reference's bytes in flight, and Little's law says the bandwidth
          follows: far below 75 %).
  splits  ordered-reduce (static): no floating-point atomics (RED.E.ADD.F32...), an integer atomic
          (the arrival counter) in the SASS, and after it loads (LDG) and adds (FADD) of the partials. correct (GPU): SPLIT_SHAPES, each with 1 to 16 splits by the
          row's one-wave rule. bitwise (GPU): 16 x 1024 x 16384 (16 tiles, 8 splits on 132 SMs), the
          same inputs 20 times: every run the same bits, and the reference's bits (the spec fixes the
          order: split 0, 1, 2, ...). With 8 splits the order matters (with 2, a + b = b + a).
  dispatch  sane (no GPU): on 12 shapes drawn from the grading seed (RULES_HIDDEN: 3 per class), every
          shape has a plan and RULES_SANE holds (a few rows of A never go to a 128-row tile; few tiles
          and a long K give at least half the SMs a block; split-K launches at most two waves). speed
          (GPU): the same shapes timed with the student's plan, the reference rules' plan and cuBLAS
          SGEMM, interleaved; the student's results checked; the geometric mean of reference time over
          student time at least 85 % (the reference against itself: 100 % within the timing's noise,
          a few %; a plan that sends 128 x 128 x 65536 to one tile is 10-100x slower on that shape).
The untouched workspace: gemv's stub accumulates nothing (no FFMA, no loads: bytes-in-flight fails,
C is zero); splits' stub returns before the partials meet (no atomic: ordered-reduce fails; C is never
written when splits > 1); dispatch's stub has no rules. bandwidth and bitwise require correct, speed
requires sane.
"""
import math
from pathlib import Path

from common.grading.spec import Check, Part, Region, Wrong

# ---------------------------------------------------------------------------------------------
# Thresholds and shapes
# ---------------------------------------------------------------------------------------------
TIMING_SIZE = 1024          # the re-check after timing runs at 1024^3 (both kernels serve any shape)
TIMING_BUDGET_S = 0.25
CHECK_ROWS = 256
GPU_TIMEOUT_S = 180
SANITIZER_TIMEOUT_S = 300

IN_FLIGHT_BYTES = 64        # per thread, before math: 4 weight rows of 16 bytes (the reference: 8 + A)
BANDWIDTH_PCT = 75          # of a device-to-device copy (read + write counted); the reference: ~100 %
BANDWIDTH_SHAPE = (1, 8192, 8192)
BITWISE_SHAPE = (16, 1024, 16384)   # skinny_fp16 (BM 16, BN 64): 16 tiles, floor(132 / 16) = 8 splits

# FP32 GEMV: 1 x 1, odd N (the scalar entries), K not a multiple of the step (the tail), every MT
# class (M = 1, 3, 5, 16, 17 rows: a partial pass), inputs over 2^-20 .. 2^20 (common.precision).
GEMV_SHAPES = [(1, 1, 1), (1, 33, 17), (2, 129, 4097), (3, 8, 64), (5, 257, 1000), (16, 64, 4096),
               (17, 130, 999), (1, 4096, 4096)]
# skinny_fp16: splits from its one-wave rule, floor(132 / tiles) capped by K / 256: 1 x 64 x 4096 -> 16,
# 16 x 128 x 2048 -> 8, 3 x 100 x 3000 -> 11 (odd N: the scalar entry), 17 x 136 x 1032 -> 4 (two
# row tiles), 33 x 520 x 777 -> 3 (odd K), 1 x 8 x 8 -> 1, 64 x 4096 x 512 -> 1. A shape whose N and K
# are multiples of 8 runs both entries, one after the other in the same workspace: a kernel that leaves
# its counters set is caught there (the second launch writes nothing). BITWISE_SHAPE's layout is one no
# correctness shape uses, so the reference's run there starts from a clean workspace.
SPLIT_SHAPES = [(1, 64, 4096), (16, 128, 2048), (3, 100, 3000), (17, 136, 1032), (33, 520, 777), (1, 8, 8),
                (64, 4096, 512)]
SHAPES = {"fp32": GEMV_SHAPES, "fp16_tensor": SPLIT_SHAPES}


# ---------------------------------------------------------------------------------------------
# Parts and checks
# ---------------------------------------------------------------------------------------------
RULES_SPEED_PCT = 85           # of the course's rules' speed, geometric mean over the hidden shapes

_CORRECT = Check("correct", 3, "right on every shape and variant, and again on fresh inputs after timing",
                 "correct", needs_gpu=True)

PARTS = [
    Part("gemv", "the GEMV's K step: the weights' loads in flight before the math (gemv.cu)", kernel="gemv_fp32",
         regions=("gemv-step",), shapes=tuple(GEMV_SHAPES),
         checks=(Check("in-flight", 1, f"at least {IN_FLIGHT_BYTES} bytes of global loads per thread issued before "
                                       "the math that uses them (SASS)", "bytes-in-flight", threshold=IN_FLIGHT_BYTES),
                 _CORRECT,
                 Check("bandwidth", 2, f"at least {BANDWIDTH_PCT} % of the copy bandwidth at "
                                       f"{'x'.join(map(str, BANDWIDTH_SHAPE))} (FP32), same run",
                       "bandwidth", needs_gpu=True, requires="correct", shape=BANDWIDTH_SHAPE,
                       threshold=BANDWIDTH_PCT))),
    Part("splits", "split-K reduced in the kernel, in split order: bitwise repeatable (skinny_fp16.cu)",
         kernel="skinny_fp16", regions=("skinny-ordered-splits",), shapes=tuple(SPLIT_SHAPES),
         checks=(Check("ordered", 1, "no floating-point atomics; an atomic counter says which block comes last (SASS)",
                       "ordered-reduce"),
                 _CORRECT,
                 Check("bitwise", 2, f"the same bits on 20 runs at {'x'.join(map(str, BITWISE_SHAPE))}, and those of "
                                     "adding the splits in split order", "bitwise", needs_gpu=True, requires="correct",
                       shape=BITWISE_SHAPE))),
    Part("dispatch", "the FP32 dispatcher's rules: which family and how many splits per shape (dispatch_rules.toml)",
         rules="dispatch_rules.toml", regions=("dispatch-rules",),
         checks=(Check("sane", 1, "every hidden shape gets a plan, and no plan leaves most SMs idle, puts a few rows "
                                  "in a 128-row tile or splits past two waves", "rules-sane"),
                 Check("speed", 3, f"at least {RULES_SPEED_PCT} % of the course's rules' speed on the hidden shapes "
                                   "(geometric mean; cuBLAS SGEMM timed beside), results checked", "rules-speed",
                       needs_gpu=True, requires="sane", threshold=RULES_SPEED_PCT))),
]



# ---------------------------------------------------------------------------------------------
# The dispatcher's rules (dispatch_rules.toml; common/grading/rules.py)
# ---------------------------------------------------------------------------------------------
def _row(name, splits=0):
    from common.lab import load
    lab = load(Path(__file__).resolve().parents[1])
    k = lab.kernel(name)
    return lab.module("launch").with_splits(k, splits) if splits else k


RULES_FAMILIES = {"gemv": lambda splits: _row("gemv_fp32"), "splitk": lambda splits: _row("splitk_fp32", splits),
                  "tiles": lambda splits: _row("v8")}
RULES_WITH_SPLITS = ("splitk",)
RULES_TILE = (128, 128)        # splitk_fp32's tile: what `tiles` counts (v8's is 128 x 256)
RULES_SMS = 132                # the H200's: the hidden shapes are judged for it without a GPU
RULES_PER_CLASS = 3            # timed on a GPU: 12 shapes
RULES_SANE_PER_CLASS = 50      # checked without a GPU: 200 shapes (a property must hold on all of them)
# Where hidden shapes are drawn (log-uniform in each range, N and K multiples of 8 half of the time):
RULES_HIDDEN = [
    ("decode", (1, 16), (1024, 8192), (1024, 8192)),          # a few rows of A through wide weights
    ("few-tiles", (32, 256), (32, 512), (8192, 65536)),      # 1 to 8 output tiles, long K
    ("middle", (17, 128), (1024, 4096), (1024, 8192)),       # one row of tiles: 8 to 32 tiles
    ("many-tiles", (1024, 4096), (1024, 4096), (512, 4096)), # enough tiles for every SM
]
RULES_SPLIT_MAX = lambda s: max(1, s.K // 256)   # lab.py's MIN_K_PER_SPLIT: shorter splits cost more than they give
RULES_SANE = [
    ("rows-in-tiles", lambda s: s.M <= 4 and s.N * s.K >= 1 << 22, lambda s, p: p.family != "tiles",
     "a few rows of A in a 128-row tile: nearly all of its FFMAs multiply padding, and the weights stream "
     "only as fast as a tile computes"),
    ("idle-sms", lambda s: s.M > 16 and 4 * s.tiles <= s.sms and s.K >= 8192,
     lambda s, p: p.splits * s.tiles >= min(s.sms // 2, s.tiles * RULES_SPLIT_MAX(s)),
     "few output tiles and a long K: blocks for fewer than half the SMs, the rest idle for all of K"),
    ("waves", lambda s: True, lambda s, p: p.family != "splitk" or s.tiles * p.splits <= 2 * s.sms,
     "more split-K blocks than two waves on the SMs: every split past one wave only adds a partial tile "
     "to write and add"),
]

# ---------------------------------------------------------------------------------------------
# Regions: what `make workspace` leaves where the reference code was
# ---------------------------------------------------------------------------------------------
REGIONS = [
    Region("gemv-step", "gemv",
           stub="(void)A; (void)B;   // placeholder: nothing is loaded or accumulated (C comes out zero)",
           hint="Count the bytes one thread has in flight before its first FFMA (`make sass`, the K loop): the "
                "header's Little's-law arithmetic says how many it needs."),
    Region("dispatch-rules", "dispatch", stub="",
           hint="Time a few shapes of each kind with `make bench` (the sweep) and look at which row wins where; "
                "count the blocks each plan launches against the SM count."),
    Region("skinny-ordered-splits", "splits",
           stub="return;   // placeholder: the partial tiles never meet (C is not written when splits > 1)",
           hint="Run the same launch twice and compare C bit for bit: which block finishes last is not "
                "yours to choose, the order of the additions is."),
]


# ---------------------------------------------------------------------------------------------
# Known-wrong kernels: grading/wrong/*.patch, each a diff of the reference kernel with ONE bug
# ---------------------------------------------------------------------------------------------
WRONG = [
    Wrong("gemv_one_row_at_a_time.patch", "gemv", "one weight row loaded, used, then the next: one load in flight",
          lose_here=("in-flight",), lose_on_gpu=("bandwidth",), reason="bytes of global loads", max_diff_lines=11),
    Wrong("gemv_tail_reads_past_k.patch", "gemv", "the last step loads all U rows, past the end of B",
          lose_here=(), lose_on_gpu=("correct", "bandwidth"), reason="read past the end", max_diff_lines=1),
    Wrong("skinny_atomicadd_into_c.patch", "splits", "each split atomicAdds its partial tile into C",
          lose_here=("ordered",), lose_on_gpu=("correct", "bitwise"), reason="floating-point atomics",
          max_diff_lines=6),
    Wrong("skinny_last_block_own_first.patch", "splits", "the last block starts from its own partial tile",
          lose_here=(), lose_on_gpu=("bitwise",), reason="order", max_diff_lines=5),
    Wrong("skinny_counter_left_set.patch", "splits", "the tile's ticket counter is never zeroed again",
          lose_here=(), lose_on_gpu=("correct", "bitwise"), reason="never wrote", max_diff_lines=0),
    Wrong("rules_tiles_before_split.patch", "dispatch", "a rule for the tiled kernel ahead of split-K: long K on few tiles",
          lose_here=("sane",), lose_on_gpu=("speed",), reason="the rest idle", max_diff_lines=3),
    Wrong("rules_splits_ignore_tiles.patch", "dispatch", "splits = the SM count, whatever the tiles",
          lose_here=("sane",), lose_on_gpu=("speed",), reason="two waves", max_diff_lines=1),
]
