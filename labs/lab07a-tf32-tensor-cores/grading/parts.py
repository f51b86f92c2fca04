"""Lab 7a's grading table: four rungs of the ladder, what is graded, how many points, and what each
known-wrong kernel must lose. Data only: common/grading reads it (common/grading/spec.py says what
each name means).

    PARTS     k2 (the XOR swizzle of the shared tiles), k3 (the cp.async pipeline: prologue, wait,
              issue, commit), k4 (the ldmatrix address of the A fragment), k6 (the float2 epilogue)
    REGIONS   each solution region and the stub the workspace keeps in its place (so it compiles)
    WRONG     the known-wrong kernels (wrong/*.patch) and the checks each must fail
    GIVEN     k1, the rung before the first graded one, copied whole into the workspace to read
    SHAPES    the awkward shapes "correct" runs, keyed by the kernels' precision (tf32_tensor)

A later rung repeats the earlier rungs' code (k3 has k2's swizzle; k4 and k6 have k2's swizzle and
k3's pipeline): there it is a region too, so the workspace never holds an earlier part's answer. The
swizzle's stub is the plain layout (right, and slower: the student brings their k2 swizzle); the
pipeline's stub is nothing (the student brings their k3).

Why k2 has no static check. A swizzle shows in no instruction: the SASS of a swizzled and a plain
tile differ only in a few integer ops, and the stub (every element at word 0) still issues the same
HMMA, LDS and STS. What a swizzle buys is shared-memory wavefronts, which only the GPU (ncu, or the
time it takes) sees; the bank model of models.py predicts them (4-way conflicts without it, none
with it). So k2 is graded on the GPU: right results (a swizzle that is no permutation, or differs
between the store and the load, is wrong), no races, the reference's bank conflicts per shared load
counted by ncu (a swizzle that is a permutation but leaves conflicts loses it; CONFLICT_SHAPE says
why speed alone cannot tell), and the speed of the reference. race-free, conflicts and fast require
correct: the untouched workspace scores zero.
k3's stubs leave no cp.async: the workspace fails cp-async (LDGSTS, DEPBAR, HMMA) and all that
requires it. k4's region holds the ldmatrix call itself: the stub leaves the A fragment zero, so the
workspace has no LDSM. k6's region is the vec entry's store: the stub stores nothing there, so the
workspace has no STG.E.64 (float2-store) and wrong results.
"""
from common.grading.spec import Check, Part, Region, Wrong

# ---------------------------------------------------------------------------------------------
# Thresholds and shapes
# ---------------------------------------------------------------------------------------------
SPEED_PCT = 75              # a correct kernel at >= 75 % of the reference's speed gets the point
TIMING_SIZE = 2048          # M = N = K of the timing: every block runs its interior path
TIMING_BUDGET_S = 0.25
CHECK_ROWS = 256
GPU_TIMEOUT_S = 120
SANITIZER_TIMEOUT_S = 300

# 1x1x1, partial tiles on every side, K not a multiple of 4 or of BK, tall and skinny, full interior
# tiles. The inputs are drawn over 2^-20 .. 2^20 (common.precision, tf32_tensor): a kernel that goes
# through FP16 meets infinities and zeros, one that computes in BF16 is 8x off at small K.
TF32_SHAPES = [(1, 1, 1), (17, 33, 9), (127, 129, 132), (129, 127, 64), (128, 130, 128), (257, 129, 513),
               (1000, 3, 520), (300, 200, 40)]
SHAPES = {"tf32_tensor": TF32_SHAPES}
SANITIZE_SHAPES = [(130, 260, 104), (33, 65, 24)]


# ---------------------------------------------------------------------------------------------
# Parts and checks
# ---------------------------------------------------------------------------------------------

def _gpu_checks(gate):
    """race-free needs `gate` first: a kernel that does nothing is trivially free of races."""
    return (Check("correct", 3, "right on every shape and variant, and again on fresh inputs after timing",
                  "correct", needs_gpu=True),
            Check("race-free", 1, "compute-sanitizer racecheck finds no shared-memory hazard", "race-free",
                  needs_gpu=True, requires=gate),
            Check("fast", 1, f"at least {SPEED_PCT} % of the reference's speed at {TIMING_SIZE}³, same run", "fast",
                  needs_gpu=True, requires="correct"))


_COMPUTES = Check("computes", 1, "tensor cores fed from shared memory: HMMA and LDSM", "computes-tensor")

# A swizzle's worth is bank conflicts, and on an H200 the unswizzled B tile still runs at about 81 % of
# k2's speed (2026-12-04): "fast" alone cannot tell it from the swizzle. So k2 also has its conflicts
# counted by ncu, per shared load, against the reference's at CONFLICT_SHAPE. The bank model (models.py)
# gives the swizzled tiles no conflict and the plain B tile 4-way conflicts on every B fragment load, a
# quarter or more of the loop's shared loads: at least 0.75 extra wavefronts per load. 0.05 per load
# above the reference allows for the edge tiles' partial loads and stays 15x below that.
CONFLICT_SHAPE = (1024, 1024, 1024)
CONFLICT_ALLOWANCE = 0.05

PARTS = [
    Part("k2", "k2 XOR-swizzled shared tiles: a_off and b_off", kernel="k2",
         regions=("k2-swizzle",),
         checks=_gpu_checks(gate="correct") + (
             Check("conflicts", 1, f"ncu at {CONFLICT_SHAPE[0]}³: shared-load bank conflicts per load at most the "
                                   f"reference's + {CONFLICT_ALLOWANCE}", "bank-conflicts", needs_gpu=True,
                   requires="correct", shape=CONFLICT_SHAPE, threshold=CONFLICT_ALLOWANCE),)),
    Part("k3", "k3 cp.async pipeline of STAGES tiles: the prologue, the wait, the issue, one commit per tile",
         kernel="k3", regions=("k3-swizzle", "k3-prologue", "k3-wait-and-issue"),
         checks=(Check("cp-async", 1, "tiles copied with cp.async (LDGSTS) and waited for (DEPBAR), then HMMA",
                       "cp-async"),
                 Check("registers", 1, "accumulators and fragments in registers: no spills, no LDL/STL", "registers",
                       requires="cp-async")) + _gpu_checks(gate="cp-async")),
    Part("k4", "k4 A fragments by ldmatrix .b16: each lane's row address",
         kernel="k4", regions=("k4-swizzle", "k4-prologue", "k4-wait-and-issue", "k4-ldmatrix-a"),
         checks=(_COMPUTES,
                 Check("registers", 1, "accumulators and fragments in registers: no spills, no LDL/STL", "registers",
                       requires="computes")) + _gpu_checks(gate="computes")),
    Part("k6", "k6 the epilogue: each lane's two neighbouring accumulators as one float2 store",
         kernel="k6", regions=("k6-swizzle", "k6-hoisted-a", "k6-prologue", "k6-wait-and-issue",
                                       "k6-float2-epilogue"),
         checks=(_COMPUTES,
                 Check("float2-store", 1, "vec: 64-bit stores of C (STG.E.64); scalar: none (pairs not 8-byte aligned)",
                       "float2-store", requires="computes")) + _gpu_checks(gate="computes")),
]

GIVEN = ["k1"]      # the rung before k2, whole: the workspace's given/ (read it; it is not graded)


# ---------------------------------------------------------------------------------------------
# Regions: what `make workspace` leaves where the reference code was
# ---------------------------------------------------------------------------------------------

_PLAIN = ("__device__ __forceinline__ int a_off(int m, int k) { return m * BK + k; }   // placeholder: no swizzle\n"
          "__device__ __forceinline__ int b_off(int k, int n) { return k * BN + n; }   // placeholder: no swizzle")
_SWIZZLE_AGAIN = ("Your k2 swizzle, for this rung's BK. Until then the plain layout below is right but conflicted: "
                  "ncu's shared-memory wavefronts per request (or the bank explorer) show how far.")
_PIPELINE_AGAIN = "Your k3 pipeline, unchanged. Until then no tile is copied."

REGIONS = [
    Region("k2-swizzle", "k2",
           stub="__device__ __forceinline__ int a_off(int m, int k) { return 0; }   // placeholder: every element at word 0\n"
                "__device__ __forceinline__ int b_off(int k, int n) { return 0; }   // placeholder",
           hint="Run the bank explorer on the B fragment load (b0 = Bs[t][g]) of the plain layout: which lanes share a "
                "bank? A permutation of each row's 4-float groups that depends on the row separates them; the STS.128 "
                "needs each group of 4 to stay whole."),
    Region("k3-swizzle", "k3", stub=_PLAIN, hint=_SWIZZLE_AGAIN),
    Region("k3-prologue", "k3",
           hint="Count the commit groups: the wait in the loop lets STAGES-2 stay in flight, so how many tiles must be "
                "in flight before the first iteration? A group is committed even when there is no tile to copy."),
    Region("k3-wait-and-issue", "k3",
           hint="Two questions decide the order: which group is tile kt, and whose reads must have finished before a "
                "buffer is refilled? In SASS: LDGDEPBAR per commit, DEPBAR.LE SB0 with the count you wait for."),
    Region("k4-swizzle", "k4", stub=_PLAIN, hint=_SWIZZLE_AGAIN),
    Region("k4-prologue", "k4", hint=_PIPELINE_AGAIN),
    Region("k4-wait-and-issue", "k4", hint=_PIPELINE_AGAIN),
    Region("k4-ldmatrix-a", "k4",
           stub="a[i][0] = a[i][1] = a[i][2] = a[i][3] = 0u;   // placeholder: no A fragment (acc stays 0)",
           hint="Draw the 16 x 8 fragment as four 8 x 4 blocks: which block must arrive in register j (the mma's "
                "a_j layout)? ldmatrix.x4 gives register j the rows addressed by lanes 8j..8j+7; the fragments "
                "model prints the lane that receives each element."),
    Region("k6-swizzle", "k6", stub=_PLAIN, hint=_SWIZZLE_AGAIN),
    Region("k6-hoisted-a", "k6",
           stub="const uint32_t a_lane = as0;   // placeholder: every lane at row 0\nconst int a_x = 0;   // placeholder",
           hint="Your k4 ldmatrix address, split into what depends on the lane (once, here) and what depends on kk "
                "(in the loop: ((kk / 4) ^ a_x) << 4). The XOR of the group with the row's swizzle is the same "
                "for every kk: why?"),
    Region("k6-prologue", "k6", hint=_PIPELINE_AGAIN),
    Region("k6-wait-and-issue", "k6", hint=_PIPELINE_AGAIN),
    Region("k6-float2-epilogue", "k6",
           hint="Which two accumulators of a lane are neighbours in one row of C (the accumulator layout of "
                "m16n8k8)? Why is their address 8-byte aligned in this entry and not in the scalar one? In SASS: "
                "STG.E.64 instead of pairs of STG.E."),
]


# ---------------------------------------------------------------------------------------------
# Known-wrong kernels: grading/wrong/*.patch, each a diff of the reference kernel with ONE bug
# ---------------------------------------------------------------------------------------------

WRONG = [
    Wrong("k2_unswizzled_b_tile.patch", "k2", "the B tile without its XOR swizzle: right, but 4-way bank conflicts",
          lose_here=(), lose_on_gpu=("conflicts",), reason="bank conflicts", max_diff_lines=1),
    Wrong("k2_swizzle_splits_float4.patch", "k2", "the XOR permutes floats, not float4 groups: STS.128 misaligned",
          lose_here=(), lose_on_gpu=("correct", "fast"), reason="crashed", max_diff_lines=1),
    Wrong("k4_ldmatrix_wrong_lane_rows.patch", "k4", "ldmatrix matrices in reading order: a1 and a2 swapped",
          lose_here=(), lose_on_gpu=("correct", "fast"), reason="wrong element", max_diff_lines=2),
    Wrong("k4_fp16_operands.patch", "k4", "every operand rounded through FP16 before the TF32 mma",
          lose_here=(), lose_on_gpu=("correct", "fast"), reason="for shape", max_diff_lines=2),
    Wrong("k3_no_wait.patch", "k3", "no cp.async wait before the barrier: tiles read while still in flight",
          lose_here=("cp-async", "registers"), lose_on_gpu=("correct", "fast"), reason="DEPBAR", max_diff_lines=1),
    Wrong("k3_prologue_one_tile.patch", "k3", "the prologue issues one tile, not STAGES-1: tile 1 never arrives",
          lose_here=(), lose_on_gpu=("correct", "fast"), reason="for shape", max_diff_lines=1),
    Wrong("k6_float2_in_scalar.patch", "k6", "float2 stores in the scalar entry too (pairs not 8-byte aligned)",
          lose_here=("float2-store",), lose_on_gpu=("correct", "fast"), reason="STG.E.64", max_diff_lines=2),
    Wrong("k6_pair_swapped.patch", "k6", "the pair stored in the wrong order: neighbouring columns swapped",
          lose_here=(), lose_on_gpu=("correct", "fast"), reason="wrong element", max_diff_lines=1),
]
