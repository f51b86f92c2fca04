"""Lab 7a's grading table: two rungs of the ladder, what is graded, how many points, and what each
known-wrong kernel must lose. Data only: common/grading reads it (common/grading/spec.py says what
each name means).

    PARTS     k2 (the XOR swizzle of the shared tiles) and k4 (the ldmatrix address of the A fragment)
    REGIONS   each solution region and the stub the workspace keeps in its place (so it compiles)
    WRONG     the known-wrong kernels (wrong/*.patch) and the checks each must fail
    SHAPES    the awkward shapes "correct" runs, keyed by the kernels' precision (tf32_tensor)

The regions are marked in the reference kernels (kernels/k2_mma_swizzle.cu, kernels/k4_ldmatrix_2d_warps.cu):

    // BEGIN SOLUTION k2-swizzle: a_off(m, k) and b_off(k, n), ...
    ...the reference code...
    // END SOLUTION k2-swizzle

Why k2 has no static check. A swizzle shows in no instruction: the SASS of a swizzled and a plain
tile differ only in a few integer ops, and the stub (every element at word 0) still issues the same
HMMA, LDS and STS. What a swizzle buys is shared-memory wavefronts, which only the GPU (ncu, or the
time it takes) sees; the bank model of models.py predicts them (4-way conflicts without it, none
with it) and the notebook shows them. So k2 is graded on the GPU: right results (a swizzle that is no
permutation, or differs between the store and the load, is wrong), no races, and the speed of the
reference (a swizzle that is a permutation but leaves conflicts loses it). race-free and fast
require correct: the untouched workspace scores zero.
k4's region holds the ldmatrix call itself: the stub leaves the A fragment zero, so the workspace
has no LDSM, fails computes-tensor, and everything that requires it.
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
            Check("fast", 1, f"at least {SPEED_PCT} % of the reference's speed at {TIMING_SIZE}³, same run "
                             "(a swizzle that leaves bank conflicts loses it)", "fast",
                  needs_gpu=True, requires="correct"))


PARTS = [
    Part("k2", "k2 XOR-swizzled shared tiles: a_off and b_off (the worklog's swizzling)", kernel="k2",
         regions=("k2-swizzle",), checks=_gpu_checks(gate="correct")),
    Part("k4", "k4 A fragments by ldmatrix .b16: each lane's row address (the worklog's ldmatrix trick)",
         kernel="k4", regions=("k4-ldmatrix-a",),
         checks=(Check("computes", 1, "tensor cores fed from shared memory: HMMA and LDSM", "computes-tensor"),
                 Check("registers", 1, "accumulators and fragments in registers: no spills, no LDL/STL", "registers",
                       requires="computes")) + _gpu_checks(gate="computes")),
]


# ---------------------------------------------------------------------------------------------
# Regions: what `make workspace` leaves where the reference code was
# ---------------------------------------------------------------------------------------------

REGIONS = [
    Region("k2-swizzle", "k2",
           stub="__device__ __forceinline__ int a_off(int m, int k) { return 0; }   // placeholder: every element at word 0\n"
                "__device__ __forceinline__ int b_off(int k, int n) { return 0; }   // placeholder",
           hint="Header point 2 and the bank explorer (notebooks/lab07a_tf32.ipynb): A_SWZ_DIV, A_SWZ_MASK; "
                "float4 groups must stay whole (the STS.128)."),
    Region("k4-ldmatrix-a", "k4",
           stub="a[i][0] = a[i][1] = a[i][2] = a[i][3] = 0u;   // placeholder: no A fragment (acc stays 0)",
           hint="ldmatrix_x4 in tf32_common.cuh: lane l supplies row l % 8 of matrix l / 8, and register j "
                "must be a_j of the mma (m16n8k8 TF32 layout in the same file). As is swizzled: use a_off."),
]


# ---------------------------------------------------------------------------------------------
# Known-wrong kernels: grading/wrong/*.patch, each a diff of the reference kernel with ONE bug
# ---------------------------------------------------------------------------------------------

WRONG = [
    Wrong("k2_unswizzled_b_tile.patch", "k2", "the B tile without its XOR swizzle: right, but 4-way bank conflicts",
          lose_here=(), lose_on_gpu=("fast",), reason="reference's speed", max_diff_lines=1),
    Wrong("k4_ldmatrix_wrong_lane_rows.patch", "k4", "ldmatrix matrices in reading order: a1 and a2 swapped",
          lose_here=(), lose_on_gpu=("correct", "fast"), reason="wrong element", max_diff_lines=2),
    Wrong("k4_fp16_operands.patch", "k4", "every operand rounded through FP16 before the TF32 mma",
          lose_here=(), lose_on_gpu=("correct", "fast"), reason="for shape", max_diff_lines=2),
]
