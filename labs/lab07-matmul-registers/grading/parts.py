"""Lab 7's grading table: what is graded, how many points, and what each known-wrong kernel must lose.
Data only: common/grading reads it (common/grading/spec.py says what each name means).

    PARTS          the code parts (one reference kernel each, with its solution regions), each with
                   its checks and their points; the questions and predictions are in questions.py
    REGIONS        solution region id -> the stub the workspace keeps in its place (so it compiles)
    WRONG          the known-wrong kernels (wrong/*.patch) and the checks each must fail
    SPEED_PCT, TIMING_SIZE, SHAPES, SANITIZE_SHAPES, ...

A region is marked in the reference kernel itself (kernels/*.cu), one comment line each side:

    // BEGIN SOLUTION v4-inner-loop: per k, one Bs value b reused for the TM = 8 acc[i]
    ...the reference code...
    // END SOLUTION v4-inner-loop

`make workspace` replaces it with `// TODO(v4-inner-loop): <the same text>` and the stub below.
A stub never computes anything: the untouched workspace compiles, runs, and scores zero on every
code part (its static checks fail because the work is missing, its results are wrong).

Check kinds (common/grading/static.py and grader.py implement them):
    computes-fp32   every entry point has FFMA and no FP16 arithmetic or conversion (HFMA2, HADD2,
                    F2FP, F2F.F16, HMMA; a constant move `HFMA2.MMA R, -RZ, RZ, ..` is not math)
    computes-tensor every entry point has HMMA (tensor cores) and LDSM (fragments from shared memory)
    cp-async        every entry point has LDGSTS (cp.async) and DEPBAR (waits for it) and HMMA
    registers       no spills and no stack frame (ptxas -v), no LDL/STL in SASS
    lds128          regM and regN come from 128-bit shared loads: LDS.128 and no narrow LDS
    float4-global   the vec entry has 128-bit global loads; the scalar entry has none (its rows are
                    not 16-byte aligned)
    correct         GPU: every variant on every shape within the tolerance of common.precision,
                    nothing written outside C, no NaN from reading past A or B; and after timing,
                    fresh inputs in the same buffers give the right result again
    race-free       GPU: compute-sanitizer racecheck finds no hazard on small shapes
    fast            GPU: at least SPEED_PCT % of the reference kernel's speed, same GPU, same run
"""
from common.grading.spec import Check, Part, Region, Wrong

# ---------------------------------------------------------------------------------------------
# Thresholds and shapes (data, not code: change them here)
# ---------------------------------------------------------------------------------------------
SPEED_PCT = 75              # a correct kernel at >= 75 % of the reference's speed gets the point
# M = N = K for the timing: every kernel runs its interior path and the GPU is full. (The grader's
# tests on a simulated GPU set GRADE_TIMING_SIZE small; nothing else should.)
TIMING_SIZE = 2048
TIMING_BUDGET_S = 0.25      # per kernel and round; reference and student interleaved (common.timing), two rounds' worth
CHECK_ROWS = 256            # rows of C compared with float64 after timing (all of C is scanned for NaN)
GPU_TIMEOUT_S = 120         # one part's GPU run; a kernel that hangs (a barrier in divergent code) is cut off
SANITIZER_TIMEOUT_S = 300

# Awkward shapes, per precision: 1x1, partial tiles on every side, K not a multiple of BK, tall and
# skinny, and full interior tiles. Every variant runs every shape it serves (vec: K, N multiples of 4).
FP32_SHAPES = [(1, 1, 1), (17, 33, 9), (64, 4, 37), (130, 260, 100), (257, 129, 513), (128, 130, 128),
               (300, 200, 8), (96, 384, 1000)]
FP16_SHAPES = [(1, 1, 8), (17, 33, 16), (130, 260, 104), (257, 129, 512), (128, 136, 128), (300, 200, 40),
               (96, 385, 1000)]
SHAPES = {"fp32": FP32_SHAPES, "fp16_tensor": FP16_SHAPES}
# racecheck is slow: two small shapes, several phases each, interior and edge blocks
SANITIZE_SHAPES = [(130, 260, 104), (33, 65, 24)]


# ---------------------------------------------------------------------------------------------
# Parts and checks
# ---------------------------------------------------------------------------------------------

def _gpu_checks(gate="computes"):
    """`gate`: the static check that says the part's work is there; a kernel that does nothing is
    trivially free of races, so race-free needs it (the untouched workspace scores zero)."""
    return (Check("correct", 3, "right on every shape and variant, and again on fresh inputs after timing",
                  "correct", needs_gpu=True),
            Check("race-free", 1, "compute-sanitizer racecheck finds no shared-memory hazard", "race-free",
                  needs_gpu=True, requires=gate),
            Check("fast", 1, f"at least {SPEED_PCT} % of the reference's speed at {TIMING_SIZE}³, same run", "fast",
                  needs_gpu=True, requires="correct"))


_COMPUTES_FP32 = Check("computes", 1, "the loop is there: FFMA in every entry point, no FP16 math", "computes-fp32")
_REGISTERS = Check("registers", 1, "accumulators and operands in registers: no spills, no LDL/STL", "registers",
                   requires="computes")

PARTS = [
    Part("v4", "v4 inner loop: 1D register blocking", kernel="v4", regions=("v4-inner-loop",),
         checks=(_COMPUTES_FP32, _REGISTERS) + _gpu_checks()),
    Part("v5", "v5 outer product: 8x8 per thread, regM x regN", kernel="v5",
         regions=("v5-outer-product",), checks=(_COMPUTES_FP32, _REGISTERS) + _gpu_checks()),
    Part("v6", "v6 float4 loads and the transposed A tile", kernel="v6",
         regions=("v6-float4-load", "v6-transposed-store", "v6-float4-operands", "v6-outer-product"),
         checks=(_COMPUTES_FP32, _REGISTERS,
                 Check("lds128", 1, "regM and regN come from LDS.128, no narrow LDS", "lds128"),
                 Check("float4-global", 1, "vec: 128-bit global loads; scalar: none (rows not 16-byte aligned)",
                       "float4-global")) + _gpu_checks()),
    Part("v7", "v7 warp-tile indexing", kernel="v7",
         regions=("v7-float4-load", "v7-transposed-store", "v7-warp-indices", "v7-strip-operands",
                  "v7-outer-product"),
         checks=(_COMPUTES_FP32, _REGISTERS,
                 Check("lds128", 1, "regM and regN come from LDS.128, no narrow LDS", "lds128")) + _gpu_checks()),
    Part("t2", "t2 fragment loop: 4 A and 2 B fragments, 8 mma_sync per step", kernel="t2",
         regions=("t2-fragment-loop",),
         checks=(Check("computes", 1, "tensor cores fed from shared memory: HMMA and LDSM", "computes-tensor"),
                 _REGISTERS) + _gpu_checks()),
    Part("t3", "t3 cp.async pipeline: prologue, issue-commit-wait, release", kernel="t3",
         regions=("t3-prologue", "t3-issue-and-wait", "t3-fragment-loop", "t3-release"),
         checks=(Check("cp-async", 1, "tiles copied with cp.async (LDGSTS) and waited for (DEPBAR), then HMMA",
                       "cp-async"),
                 Check("registers", 1, "accumulators and operands in registers: no spills, no LDL/STL", "registers",
                       requires="cp-async")) + _gpu_checks(gate="cp-async")),
]


# ---------------------------------------------------------------------------------------------
# Regions: what `make workspace` leaves where the reference code was
# ---------------------------------------------------------------------------------------------

REGIONS = [
    Region("v4-inner-loop", "v4",
           hint="Count, per k, the shared loads and the FFMA one thread issues: one B value serves how many "
                "accumulators? `make sass` then shows the ratio (LDS against FFMA in the loop). Until then acc stays 0."),
    Region("v5-outer-product", "v5",
           hint="Per k a thread needs TM values of A and TN of B, each loaded once into registers, then every "
                "pair multiplied: how many loads, how many FMAs? Compare with the hierarchy explorer's "
                "loads per FMA for v5. Until then acc stays 0."),
    Region("v6-float4-load", "v6", stub="return make_float4(p[0], p[1], p[2], p[3]);   // placeholder: 4 scalar loads",
           hint="When is p 16-byte aligned? Only then may one LDG.E.128 replace four LDG.E; the SASS of each "
                "entry point shows which loads you got."),
    Region("v6-transposed-store", "v6",
           hint="The four values of ra[g] are 4 consecutive k of one row of A; As is [k][m]. Until then As is never "
                "written."),
    Region("v6-float4-operands", "v6", stub="float regM[TM] = {}, regN[TN] = {};   // placeholder: zeros",
           hint="With As transposed, a thread's TM values of A for one k are contiguous, like its TN values of B: "
                "how many LDS.128 per k, then? `make sass` should show no narrow LDS left."),
    Region("v6-outer-product", "v6", hint="Your v5 outer product. Until then acc stays 0."),
    Region("v7-outer-product", "v7", hint="Your v5 outer product, over the strips. Until then acc stays 0."),
    Region("v7-float4-load", "v7", stub="return make_float4(p[0], p[1], p[2], p[3]);   // placeholder: 4 scalar loads",
           hint="Your v6 load4: the same rule of alignment."),
    Region("v7-transposed-store", "v7", hint="Your v6 transposed store, into stage s. Until then As is never written."),
    Region("v7-warp-indices", "v7",
           stub="const int mOff = 0, nOff = 0;   // placeholder: every thread takes the first block",
           hint="Draw the block tile as warps of WM x WN, and one warp's strip as LANES_N lanes across: which "
                "lane owns which 8 x 4 block? Every block of the warp tile must have exactly one owner."),
    Region("v7-strip-operands", "v7", stub="float regM[TM] = {}, regN[WNITER * TN] = {};   // placeholder: zeros",
           hint="A thread's columns are WNITER strips, WSUBN apart; aRead and bRead point at row 0 of this stage. "
                "Count the LDS.128 per k in `make sass` against your answer to v7_loads_per_fma."),
    Region("t2-fragment-loop", "t2",
           hint="Per 16-deep step, which fragments does one warp need, and how many times is each used? The "
                "SASS should show LDSM feeding HMMA and no global loads in the loop. Until then acc stays 0."),
    Region("t3-prologue", "t3",
           hint="How many tiles must be in flight before the first wait, if the loop keeps STAGES-1 in flight? "
                "One commit per tile, even past the last."),
    Region("t3-issue-and-wait", "t3",
           hint="Count the groups committed when the wait runs, and find the one that holds what the warps "
                "compute next. Which threads' copies does __pipeline_wait_prior wait for?"),
    Region("t3-fragment-loop", "t3", hint="Your t2 fragment loop, reading this stage's As_w and Bs_w."),
    Region("t3-release", "t3", hint="Who may still read buffer read_stage? Then move read_stage and write_stage on."),
]

GIVEN = ["v3"]      # the rung before v4, whole: the workspace's given/ (read it; it is not graded)


# ---------------------------------------------------------------------------------------------
# Known-wrong kernels: grading/wrong/*.patch, each a diff of the reference kernel with ONE bug
# (its lines say BUG; `BUG [effect]` is what the simulated GPU of the grader's tests makes of it)
# ---------------------------------------------------------------------------------------------

WRONG = [
    Wrong("v6_missing_syncthreads.patch", "v6", "no __syncthreads() between the math and the next tile's stores",
          lose_here=(), lose_on_gpu=("race-free",), reason="racecheck", max_diff_lines=1),
    Wrong("v4_edge_guard_off_by_one.patch", "v4", "row <= M in the store guard: writes one row past C",
          lose_here=(), lose_on_gpu=("correct", "fast"), reason="outside C", max_diff_lines=1),
    Wrong("v6_wrong_transposed_index.patch", "v6", "the transposed store swaps two k rows of each group",
          lose_here=(), lose_on_gpu=("correct", "fast"), reason="wrong element", max_diff_lines=2),
    Wrong("v5_reads_past_k.patch", "v5", "the A tile's zero-fill ignores K: reads past the end of a row",
          lose_here=(), lose_on_gpu=("correct", "fast"), reason="NaN", max_diff_lines=1),
    Wrong("v6_unaligned_float4.patch", "v6", "float4 global loads in the scalar variant too (rows not 16-byte aligned)",
          lose_here=("float4-global",), lose_on_gpu=("correct", "fast"), reason="LDG", max_diff_lines=4),
    Wrong("v5_caches_result.patch", "v5", "skips the work when called again with the same pointers and shape",
          lose_here=(), lose_on_gpu=("correct", "fast"), reason="after timing", max_diff_lines=30),
    Wrong("v5_fp16_math.patch", "v5", "multiplies in FP16 where FP32 is asked",
          lose_here=("computes", "registers"), lose_on_gpu=("correct", "fast"), reason="FP16", max_diff_lines=4),
    Wrong("v5_acc_in_local_memory.patch", "v5", "acc indexed at run time (a loop not unrolled): local memory",
          lose_here=("registers",), lose_on_gpu=(), reason="local memory", max_diff_lines=2),
    Wrong("v4_same_a_row.patch", "v4", "the row of As does not move with i: 7 of every 8 rows wrong",
          lose_here=(), lose_on_gpu=("correct", "fast"), reason="wrong element", max_diff_lines=1),
    Wrong("v7_lane_map_transposed.patch", "v7", "lane / LANES_N and lane % LANES_N swapped: blocks overlap",
          lose_here=(), lose_on_gpu=("correct", "fast"), reason="for shape | illegal memory access", max_diff_lines=2),
    Wrong("v7_strip_offset_missing.patch", "v7", "every strip reads strip 0's B values (no w * WSUBN)",
          lose_here=(), lose_on_gpu=("correct", "fast"), reason="wrong element", max_diff_lines=1),
    Wrong("t2_a_fragments_same_rows.patch", "t2", "every A fragment from the warp's first 16 rows",
          lose_here=(), lose_on_gpu=("correct", "fast"), reason="wrong element", max_diff_lines=1),
    # kk columns right runs past the columns the tile's copy wrote: what is there decides the symptom, wrong
    # values or NaN (seen both ways on the H200: sm_90 code, and sm_75 code through the JIT)
    Wrong("t2_b_k_offset_as_column.patch", "t2", "the B fragment of step kk taken kk columns right, not kk rows down",
          lose_here=(), lose_on_gpu=("correct", "fast"), reason="wrong element | NaN at", max_diff_lines=1),
    Wrong("t2_a_from_global.patch", "t2", "A fragments loaded from global memory, not from the shared tile",
          lose_here=(), lose_on_gpu=("correct", "fast"), reason="for shape", max_diff_lines=1),
    Wrong("t3_waits_for_too_few.patch", "t3", "__pipeline_wait_prior(STAGES): tile t read before it has landed",
          lose_here=(), lose_on_gpu=("correct", "fast"), reason="for shape", max_diff_lines=1),
    Wrong("t3_write_stage_stuck.patch", "t3", "write_stage never advanced: tiles copied into one buffer",
          lose_here=(), lose_on_gpu=("correct", "fast"), reason="for shape", max_diff_lines=1),
]
