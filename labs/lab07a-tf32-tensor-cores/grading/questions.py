"""Lab 7a's "check your understanding" questions: TF32 numerics, the ldmatrix .b16 trick, the swizzle;
and predictions derived from the graded rungs' headers. Data for common/grading
(common.grading.questions.Question, Prediction).

Each question has a hint (what to look at on a wrong answer: never the value, never the model call);
the ones with `why` ask for a reason that must name their key ideas. The predictions are computed
from the kernel files' own constants (common.tiling reads them) and graded within 15 % (REL_TOL says
why); their values appear nowhere a student reads before submitting.

Every expected value is computed from the course's models, never typed: common.precision (the TF32
tolerance), common.fragments (the m16n8k8 TF32 layout and ldmatrix on 32-bit data), common.banks with
this lab's models.py (k2's shared accesses). This module imports nothing of grading/parts.py.
"""
import math
from pathlib import Path

import numpy as np

from common import fragments as F
from common.grading.questions import Prediction, Question
from common.precision import PRECISIONS, TF32_ROUNDED, TF32_TRUNCATED, bf16_bits, bf16_values
from common.tiling import Tiling

ANSWERS_INTRO = ("Derive each answer from the kernels, the TF32 format and the mma's fragment layouts; the "
                 "notebook's fragment and bank explorers let you check your reasoning. Where a question has "
                 "a `_why` key, write your reason in a sentence: it is graded too. The predictions follow "
                 "from the graded rungs' headers: derive them, then look at the SASS or the profile.")
KERNELS = Path(__file__).resolve().parents[1] / "kernels"
TF32 = PRECISIONS["tf32_tensor"]


def _models():
    from common.lab import load
    return load(Path(__file__).resolve().parents[1]).module("models")


def _ldmatrix_owner(row, col):
    """(lane, register) that k4's ldmatrix.x4 gives A[row][col] of one 16x8 fragment."""
    got = F.simulate_ldmatrix_b32(F.ldmatrix_tf32_a_x4_address, 4)
    return next(k for k, v in got.items() if v == (row, col))


def _supplier(row, col):
    """The lane whose row address covers A[row][col] in k4's ldmatrix.x4."""
    return next(l for l in range(32) if F.ldmatrix_tf32_a_x4_address(l) == (row, col - col % 4))


def _conflict(name):
    return _models().BANK_ACCESSES[name].evaluate().ways


def _bf16_rounding_error():
    """The largest |bf16(x) - x| / |x| over FP32 values x in [1, 2) one FP32 step below each midpoint
    between BF16 neighbours (where rounding to nearest moves a value furthest): computed by the course's
    BF16 rounding, not typed."""
    import numpy as np
    k = np.arange(128, dtype=np.float64)
    x = (1.0 + (k + 0.5) / 128.0 - 2.0 ** -23).astype(np.float32)
    return float(np.max(np.abs(bf16_values(bf16_bits(x)) - x.astype(np.float64)) / x.astype(np.float64)))


QUESTIONS = [
    Question("tf32_mantissa_bits", "How many explicit mantissa bits does a TF32 value keep (FP32 keeps 23)?",
             lambda: round(-math.log2(TF32_ROUNDED)) - 1, "precision.TF32_ROUNDED = 2^-(bits + 1)",
             hint="the 19-bit format's three fields, and which of them FP32 keeps whole",
             why=(("exponent",), ("sign",)),
             why_model="TF32 keeps the sign and FP32's 8 exponent bits, and 10 of its 23 mantissa bits: 1 + 8 + 10."),
    # asked for BF16, which no kernel of the lab uses: the headers of k2..k7 state TF32's own 2^-11
    Question("bf16_rounded_operand_error",
             "k2..k7 round each FP32 operand to the nearest TF32. A BF16 tensor-core GEMM rounds each operand to "
             "the nearest BF16 instead: the largest relative error of one rounded operand (a number, e.g. 0.001)",
             _bf16_rounding_error, "precision.bf16_bits over FP32 values just below the midpoints", rel_tol=0.01,
             hint="the spacing of BF16 values relative to their size, and how far rounding can move a value",
             why=((7, "seven"), ("half", 0.5, "1/2")),
             why_model="With 7 stored mantissa bits the spacing is 2^-7 of the value, and rounding to nearest "
                       "moves it by at most half of that: 2^-8."),
    Question("tf32_truncated_product_error",
             "With TF32_ROUND = 0 the tensor core truncates both operands: the bound on the relative error of "
             "one product a~ b~ (before any addition)",
             lambda: 2 * TF32_TRUNCATED + TF32_TRUNCATED ** 2, "(1 + e)^2 - 1 with e = precision.TF32_TRUNCATED",
             rel_tol=0.01, hint="one truncated operand's bound e; the product of two is off by (1 + e)^2"),
    Question("tf32_tolerance_k2048",
             "The lab's bound for one element at K = 2048 when the kernel rounds, per unit of (|A||B|)_ij",
             lambda: float(TF32.tolerance(2048, 1.0, TF32_ROUNDED)), "precision.tolerance(2048, 1, TF32_ROUNDED)",
             rel_tol=0.02, hint="the operands' rounding plus the accumulation's, as the lab's precision model adds them"),
    Question("fp16_largest_finite", "The largest finite FP16 value: TF32 inputs above it become infinities "
                                    "in a kernel that goes through FP16",
             lambda: float(np.finfo(np.float16).max), "numpy.finfo(float16).max", rel_tol=0.001,
             hint="FP16's largest exponent and a mantissa of all ones"),
    Question("fp16_fails_because",
             "FP16 keeps as many significand bits as TF32. What does it lack that makes the lab's test reject "
             "a kernel that silently computes in FP16 (one word)?",
             lambda: "range", "5 exponent bits against TF32's 8; the inputs span 2^-20 .. 2^20", kind="words",
             accept=("exponent range", "exponent", "dynamic range", "exponent bits"),
             hint="the inputs the grader draws, and what FP16 does with the largest and the smallest of them",
             why=((5, "five"), ("infinity", "infinities", "inf", "overflow", "overflows", 65504)),
             why_model="FP16 has 5 exponent bits: inputs near 2^20 overflow to infinity (above 65504) and the "
                       "smallest flush to zero."),
    Question("ldmatrix_floats_per_row", "ldmatrix .b16 reads 16 bytes per row address: how many FP32 (TF32) "
                                        "values is that?",
             lambda: sum(1 for c in range(4) if F.simulate_ldmatrix_b32(lambda l: (0, 0), 1)[(c, 0)] is not None),
             "fragments.simulate_ldmatrix_b32: lanes 0..3 of one row", hint="the size of one FP32 value"),
    Question("ldmatrix_lane_of_a_10_5",
             "k4: which lane receives A[10][5] of a 16 x 8 A fragment from ldmatrix.x4 (lane l addresses row "
             "l % 16, float4 group l / 16)?",
             lambda: _ldmatrix_owner(10, 5)[0], "fragments.simulate_ldmatrix_b32 with ldmatrix_tf32_a_x4_address",
             hint="which 8 x 4 block holds the element, which register that block lands in, and ldmatrix's rule: "
                  "row r of a matrix goes to lanes 4r .. 4r+3, one 4-byte piece each"),
    Question("ldmatrix_register_of_a_10_5", "...and in which of its four registers (0..3)?",
             lambda: _ldmatrix_owner(10, 5)[1], "the same; it is the mma's a3 = A[g+8][t+4]",
             hint="the order of the four 8 x 4 blocks in the mma's A fragment"),
    Question("ldmatrix_supplier_of_a_13_6",
             "k4: which lane supplies the row address that A[13][6] of the fragment is read through?",
             lambda: _supplier(13, 6), "fragments.ldmatrix_tf32_a_x4_address",
             hint="the row and the float4 group of the element, and the address rule in the question above"),
    Question("b_trans_whole_values",
             "Does ldmatrix .x2.trans on the B tile (Bs[k][n], FP32) put whole FP32 values in registers (yes / no)?",
             lambda: "yes" if not F.ldmatrix_b32_mismatches(lambda l: (l % 8, 4 * ((l // 8) % 2)), "m16n8k8.tf32.b", 2,
                                                               trans=True) else "no",
             "fragments.ldmatrix_b32_mismatches(..., trans=True): halves of two different values", kind="words",
             hint="what .trans transposes: 16-bit elements, so where do the two halves of one FP32 value go?"),
    Question("k2_b_read_conflict_unswizzled",
             "k2's B fragment load (b0 = Bs[t][g]) without the XOR swizzle: the n-way bank conflict",
             lambda: _conflict("k2 B fragment LDS, no swizzle"), "banks with models.BANK_ACCESSES",
             hint="the bank of Bs[t][g] for every lane of the warp (g = lane / 4, t = lane % 4): which lanes share one?",
             why=((128, "bn"), (32, "thirty two")),
             why_model="The four lanes with the same g read rows t = 0..3 of Bs, BN = 128 floats apart, a multiple "
                       "of the 32 banks: the same bank four times."),
    Question("k4_ldsm_conflict_unswizzled",
             "k4's A ldmatrix.x4 (rows of 128 bytes) without the swizzle: the n-way conflict in each 8-row phase",
             lambda: _conflict("k4 A fragment LDSM.x4, no swizzle"), "banks.analyze_ldmatrix with models.BANK_ACCESSES",
             hint="the banks each of the 8 row addresses of one phase covers",
             why=((32, "thirty two"), (4, "four", "16 byte", "16 b")),
             why_model="Rows 128 bytes apart start 32 banks apart, i.e. at the same bank; each 16-byte row piece "
                       "covers the same 4 banks, so all eight rows of a phase collide."),
]

QUESTION_IDS = [q.id for q in QUESTIONS]


# ---------------------------------------------------------------------------------------------
# Predictions: derived from the graded rungs' headers (common.tiling reads the kernel files)
# ---------------------------------------------------------------------------------------------

def _const(file, name):
    return int(Tiling.of(KERNELS / file).value(name))


def _k3_shared_bytes(stages):
    f = "k3_cp_async.cu"
    return stages * (_const(f, "BM") * _const(f, "BK") + _const(f, "BK") * _const(f, "BN")) * 4


def _k6_stg64_in_grid(size=4096):
    """Warp-level STG.E.64 of k6's epilogue at size³ (vec entry): blocks x warps x stores per lane."""
    f = "k6_float2_stores.cu"
    bm, bn, wm, wn = (_const(f, n) for n in ("BM", "BN", "WM", "WN"))
    blocks = (size // bm) * (size // bn)
    return blocks * (bm // wm) * (bn // wn) * (wm // 16) * (wn // 8) * 2     # two rows (g, g + 8) per m16n8 fragment


def _k4_mma_in_grid(size=4096):
    """mma.sync m16n8k8 (warp instructions) k4 executes at size³: one per 16 x 8 x 8 block of the product."""
    return (size // 16) * (size // 8) * (size // 8)


# Why 15 %: every answer is exact arithmetic on a header's constants or the mma's shape, and the near
# misses are at least 20 % away: k3's shared memory with STAGES = 5 (80 KB) against 4 or 6 stages
# (-20 %, +20 %), the default 3 (-40 %) or 2-byte elements (-50 %); k6's warp-level STG.E.64 at 4096³
# (262144) against scalar stores (2x), stores counted per lane (32x) or one row per fragment (-50 %);
# k4's mma count at 4096³ (2^26) against m16n8k4 (2x), m16n8k16 (-50 %) or FMAs (1024x). 15 % accepts
# rounding (6.7e7) and rejects all of them; a guess of the order of magnitude rarely lands inside.
# None of the three numbers is printed in the lab's texts or kernels (tests/test_grade_exercises.py
# looks): the default configuration's numbers are (48 KB, 64 stores per lane, 128 accumulators).
REL_TOL = 0.15

PREDICTIONS = [
    Prediction("k3_stages5_shared_bytes", "k3 built with STAGES = 5: its dynamic shared memory per block, in bytes",
               expected=lambda: _k3_shared_bytes(5), rel_tol=REL_TOL, unit="B",
               hint="one stage's A and B tiles in bytes (BM, BN, BK of k3's header), times the stages"),
    Prediction("k6_stg64_in_grid_4096",
               "k6 at M = N = K = 4096, beta = 0: STG.E.64 warp instructions its epilogue executes in the whole grid",
               expected=_k6_stg64_in_grid, rel_tol=REL_TOL, unit="instructions",
               hint="the values of C, how many one lane stores per STG.E.64, and how many lanes one warp "
                    "instruction serves"),
    Prediction("k4_mma_in_grid_4096", "k4 at M = N = K = 4096: mma.sync instructions (per warp) executed in the whole grid",
               expected=_k4_mma_in_grid, rel_tol=REL_TOL, unit="instructions",
               hint="the M, N and K of one TF32 mma.sync, and the M, N, K of the product"),
]

PREDICTION_IDS = [p.id for p in PREDICTIONS]
