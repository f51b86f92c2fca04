"""Lab 7b's grading table: two rungs of the CuTe ladder, what is graded, how many points, and what each
known-wrong kernel must lose. Data only: common/grading reads it (common/grading/spec.py says what each
name means; grading/probes.py holds the two host probes' verdicts).

    PARTS     c4 (the Swizzle<B, M, S> of sA, and the fence of the pipeline rotation) and c5 (the
              permutation of the tiled MMA's N mode, in CuTe's layout algebra)
    REGIONS   each solution region and what the workspace keeps in its place (so it compiles)
    WRONG     the known-wrong kernels (wrong/*.patch) and the checks each must lose
    SHAPES    the awkward shapes "correct" runs, keyed by the kernels' precision (fp32)

Why these rungs. The workspace holds c4 and c5 only, each with every region cut: c4 is c3 (the
previous rung: the same pipeline, no swizzle) plus the spec of the swizzle in its header; c5 is c4
plus the spec of the permutation. A region that carries one part's answer is cut from every
workspace file that has it: c5 keeps c4's swizzle and fences as TODOs too (its swizzle's stub is the
identity, right but slower, so c5's part does not hang on c4's), and the swizzle's formula is cut
from c4's and c5's comments. tests/test_grading.py checks that no workspace file holds an answer.

How each idea is graded:
  swizzle  "banks" (probe, no GPU): the student's file is included in a host program
           (probes/c4_sa_layout.cu) that prints CuTe's own SmemLayoutA, every (m, k, stage), for
           BK = 32 and 64; probes.py checks it is a permutation of each stage, keeps each 16-byte chunk
           whole, and that the worklog's 32-bit reads (lanes 0-15 row m, 16-31 row m+1) and the
           16-byte copies are free of bank conflicts in the course's bank model (common/banks.py).
           On the GPU: "conflicts", measured: ncu's shared-load bank conflicts per load of the student's
           kernel against the reference's (bankcheck.py); and correct (a swizzle is a layout of the copy
           and the MMA alike in CuTe: a wrong one shows as wrong elements only if it is no permutation).
  fence    "fence" (cp-async-fence, no GPU): in SASS, the main loop waits for its copies (DEPBAR),
           then passes a barrier (BAR.SYNC) before its next shared load. On the GPU: race-free
           (racecheck) and correct (a fence in the wrong place reads the wrong tile).
  permute  "layout" (probe, no GPU): probes/c5_mma_partition.cu prints CuTe's partition of C and of
           sB by the student's TiledMma (a map that is not one-to-one does not even compile: CuTe's
           make_tiled_mma asserts "Non-injective Layout"); probes.py checks every element of C is computed once, each
           thread's values of a row are aligned groups of 4 adjacent columns (float4), and warp 0's
           reads of sB are conflict-free. "float4-global" (SASS): the vec entry loads C by LDG.E.128.
The gates: correct requires banks (c4) or layout (c5), race-free requires fence (c4) or layout (c5),
fast requires correct, so the untouched workspace (identity swizzle, no fences, no permutation)
scores zero; c4's conflicts needs no gate: the identity swizzle keeps c3's conflicts, which it fails.
"""
from common.grading.spec import Check, Part, Region, Wrong

# ---------------------------------------------------------------------------------------------
# Thresholds and shapes
# ---------------------------------------------------------------------------------------------
SPEED_PCT = 75              # a correct kernel at >= 75 % of the reference's speed gets the point
TIMING_SIZE = 2048          # M = N = K of the timing: 256 blocks of 128 x 128, every one interior
TIMING_BUDGET_S = 0.25
CHECK_ROWS = 256
GPU_TIMEOUT_S = 180         # CuTe's kernels build in half a minute; the run itself takes seconds
SANITIZER_TIMEOUT_S = 300

# 1x1x1, partial tiles on every side, K not a multiple of 4 (the scalar entry) or of BK, tall and
# skinny, several k-tiles (K = 513: 17 tiles, so the pipeline rotates through all 3 buffers 5 times;
# a fence in the wrong place shows there), and whole interior tiles.
FP32_SHAPES = [(1, 1, 1), (17, 33, 9), (127, 129, 132), (129, 127, 64), (128, 128, 512), (257, 129, 513),
               (1000, 3, 520), (256, 260, 64)]
SHAPES = {"fp32": FP32_SHAPES}
# c4's "conflicts": ncu's l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld per shared-load instruction,
# the student's against the reference's in the same run. In the compiled c4 the swizzle matters for the 8
# 32-bit A loads per warp and tile that nvcc does not merge into LDS.128 (k-block 0 after the barrier):
# 8 of the 320 shared loads of a tile, each one extra wavefront when they conflict: 0.025 per load,
# and ncu measured 1.11 M conflicts in 42.99 M loads for c3 (0.026) against 0.05 M for c4 (0.001) at
# 2048³ (the lab's README). The allowance, 0.01 per load, is 40 % of what the swizzle removes and ten
# times the reference's residue: a kernel that keeps half the conflicts fails, noise does not. 1024³:
# 64 blocks of 32 k-tiles, the same per-load ratio as 2048³ at an eighth of ncu's replay time.
CONFLICT_SHAPE = (1024, 1024, 1024)
CONFLICT_ALLOWANCE = 0.01

# racecheck: interior and edge blocks, 4 and 13 k-tiles (the rotation runs), both entry points
SANITIZE_SHAPES = [(130, 260, 128), (33, 65, 24), (128, 128, 416)]


# ---------------------------------------------------------------------------------------------
# Parts and checks
# ---------------------------------------------------------------------------------------------

PARTS = [
    Part("c4", "c4: the Swizzle<B, M, S> of sA, and the fence of the pipeline rotation", kernel="c4",
         regions=("c4-swizzle-why", "c4-swizzle", "c4-fence-prologue", "c4-fence"),
         checks=(Check("banks", 2, "CuTe's sA of your file (BK = 32 and 64): a permutation of each stage, 16-byte "
                                   "chunks whole, no bank conflict in the 32-bit MMA reads or the 16-byte copies",
                       "probe"),
                 Check("fence", 1, "SASS: the main loop waits for its copies (DEPBAR), then a barrier, before its "
                                   "next shared load", "cp-async-fence"),
                 Check("correct", 2, "right on every shape and variant, and again on fresh inputs after timing",
                       "correct", needs_gpu=True, requires="banks"),
                 Check("race-free", 1, "compute-sanitizer racecheck finds no shared-memory hazard", "race-free",
                       needs_gpu=True, requires="fence"),
                 Check("conflicts", 1, f"ncu at {CONFLICT_SHAPE[0]}³: shared-load bank conflicts per load at most the "
                                       f"reference's + {CONFLICT_ALLOWANCE}", "bank-conflicts", needs_gpu=True,
                       shape=CONFLICT_SHAPE, threshold=CONFLICT_ALLOWANCE),
                 Check("fast", 1, f"at least {SPEED_PCT} % of the reference's speed at {TIMING_SIZE}³, same run",
                       "fast", needs_gpu=True, requires="correct"))),
    Part("c5", "c5: the permutation of the tiled MMA's N mode (float4 epilogue), in CuTe's algebra", kernel="c5",
         regions=("c5-perm-formula", "c5-swizzle", "c5-perm", "c5-fence-prologue", "c5-fence"),
         checks=(Check("layout", 2, "CuTe's partition of C and sB by your TiledMma: each element once, a thread's "
                                    "values of a row in aligned groups of 4 columns, warp 0's sB reads conflict-free",
                       "probe"),
                 Check("float4-global", 1, "vec: 128-bit loads of C in the epilogue (LDG.E.128); scalar: none",
                       "float4-global"),
                 Check("correct", 2, "right on every shape and variant, and again on fresh inputs after timing",
                       "correct", needs_gpu=True, requires="layout"),
                 Check("race-free", 1, "compute-sanitizer racecheck finds no shared-memory hazard", "race-free",
                       needs_gpu=True, requires="layout"),
                 Check("fast", 1, f"at least {SPEED_PCT} % of the reference's speed at {TIMING_SIZE}³, same run",
                       "fast", needs_gpu=True, requires="correct"))),
]


# ---------------------------------------------------------------------------------------------
# Regions: what `make workspace` leaves where the reference code was
# ---------------------------------------------------------------------------------------------

_SWIZZLE_SPEC = """\
// With sA's offset o = BK m + k (k in the low log2(BK) bits, m above them; each stage is BM BK floats),
// choose B, M and S so that
//   1. the MMA's 32-bit reads conflict no more: at one k, lanes 0-15 read row m and lanes 16-31 row
//      m + 1 (m even); their two words must fall in different banks;
//   2. every 16-byte chunk (4 floats, k = 4c .. 4c+3 of one row) stays whole and 16-byte aligned:
//      the 16-byte cp.async writes it as one piece (CuTe refuses to compile a copy that cannot);
//   3. the 16-byte copies stay conflict-free, and no element leaves its stage;
//   4. it holds for every BK the static_asserts allow (the grader builds BK = 32 and BK = 64):
//      write B, M, S as expressions of BK where they depend on it.
// Say here which bits move where, and why each of B, M, S has its value."""

REGIONS = [
    Region("c4-swizzle-why", "c4", stub=_SWIZZLE_SPEC,
           hint="Write o in binary for rows m and m + 1 at the same k: which bit differs? Which bits may "
                "change without splitting a 16-byte chunk?"),
    Region("c4-swizzle", "c4",
           stub="using SwizzleA = Swizzle<0, 2, 3>;   // placeholder: B = 0 moves no bit: c3's plain tile",
           hint="Swizzle<B, M, S> XORs bits M+S .. M+S+B-1 of the offset into bits M .. M+B-1 (the header). "
                "common/banks.py's analyze() prices one warp's 32 addresses: try your choice on rows m, m + 1."),
    Region("c4-fence-prologue", "c4",
           hint="Before the loop reads the first tile, every element of it must have landed, whoever copied "
                "it: read what CuTe's cp_async_wait<n>() promises (cute/arch/copy_sm80.hpp), and whose "
                "copies it counts."),
    Region("c4-fence", "c4",
           hint="Who wrote the tile read next, and who may still read the buffer that the next iteration's "
                "copy overwrites? On a GPU, `make grade` runs racecheck on your kernel and names both "
                "accesses of a race."),
    Region("c5-perm-formula", "c5"),
    Region("c5-swizzle", "c5",
           stub="using SwizzleA = Swizzle<0, 2, 3>;    // placeholder: no swizzle; put c4's answer here (c5 is "
                "right without it, only slower)\n"
                "using SwizzleAM = Swizzle<0, 2, 3>;   // placeholder (A_MMAJOR = 1 only): the m-major tile's swizzle"),
    Region("c5-perm", "c5",
           stub="using PermN = TileN;   // placeholder: no permutation: c4's partition, columns 16 apart\n"
                "using PermM = TileM;   // placeholder (A_MMAJOR = 1 only: M permuted as N is)",
           hint="A CuTe Layout from the MMA's n-index x to the column PermN(x): the thread index is the fastest "
                "mode of x, then the value index j. Which column should value j of thread t land on?"),
    Region("c5-fence-prologue", "c5", hint="c4's prologue fence (your answer there)."),
    Region("c5-fence", "c5", hint="c4's fence of the rotation (your answer there)."),
]


# ---------------------------------------------------------------------------------------------
# Known-wrong kernels: grading/wrong/*.patch, each a diff of the reference kernel with ONE bug
# ---------------------------------------------------------------------------------------------

WRONG = [
    Wrong("c4_swizzle_misses_row_bit.patch", "c4",
          "Swizzle<2,3,3> (a common CuTe swizzle): moves m's bits 1-2, rows m and m+1 still share a bank",
          lose_here=("banks",), lose_on_gpu=("correct", "conflicts"), reason="2-way bank conflicts", max_diff_lines=1),
    Wrong("c4_swizzle_fixed_shift.patch", "c4",
          "Swizzle<1,2,3> typed as constants: right for BK = 32 only (at 64 it moves a bit of k)",
          lose_here=("banks",), lose_on_gpu=("correct",), reason="BK = 64", max_diff_lines=1),
    Wrong("c4_fence_no_barrier.patch", "c4",
          "the rotation waits for the thread's own copies, but no barrier",
          lose_here=("fence",), lose_on_gpu=("race-free",), reason="no barrier", max_diff_lines=1),
    Wrong("c4_fence_barrier_before_wait.patch", "c4",
          "the barrier before the wait: the next tile is read before the others' copies land",
          lose_here=("fence",), lose_on_gpu=("race-free",), reason="before any barrier", max_diff_lines=2),
    Wrong("c4_no_prologue_fence.patch", "c4",
          "the rotation fenced, the prologue not: k-block 0 of tile 0 read before it has landed",
          lose_here=("fence",), lose_on_gpu=("race-free",), reason="first shared load", max_diff_lines=0),
    Wrong("c4_rotation_after_next_read.patch", "c4",
          "the fence and rotation after the next k-block's read: k-block 0 read from the old buffer",
          lose_here=(), lose_on_gpu=("correct", "fast"), reason="wrong element", max_diff_lines=14),
    Wrong("c5_perm_strides_swapped.patch", "c5",
          "PermN's strides (1, THR_N, 4 THR_N): the identity, columns 16 apart as in c4",
          lose_here=("layout", "float4-global"), lose_on_gpu=("correct",), reason="groups of 4", max_diff_lines=1),
    Wrong("c5_perm_not_one_to_one.patch", "c5",
          "PermN's last stride THR_N instead of 4 THR_N: columns 16..63 twice, 80..127 never (CuTe refuses it)",
          lose_here=("layout", "float4-global"), lose_on_gpu=("correct",), reason="Non-injective", max_diff_lines=1),
    Wrong("c5_perm_eight_adjacent.patch", "c5",
          "each thread 8 adjacent columns, (THR_N, 4, 2) : (8, 1, 4): float4 stores, 2-way conflicts on sB",
          lose_here=("layout",), lose_on_gpu=(), reason="bank conflicts", max_diff_lines=1),
]
