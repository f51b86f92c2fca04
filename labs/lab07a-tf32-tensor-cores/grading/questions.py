"""Lab 7a's "check your understanding" questions: TF32 numerics, the ldmatrix .b16 trick, the swizzle.
Data for common/grading (common.grading.questions.Question). No predictions: they need a recorded
bench run of this lab (results/lab07a-bench_*.json), and a reference that scores on it.

Every expected value is computed from the course's models, never typed: common.precision (the TF32
tolerance), common.fragments (the m16n8k8 TF32 layout and ldmatrix on 32-bit data), common.banks with
this lab's models.py (k2's shared accesses). This module imports nothing of grading/parts.py.
"""
import math
from pathlib import Path

import numpy as np

from common import fragments as F
from common.grading.questions import Question
from common.precision import PRECISIONS, TF32_ROUNDED, TF32_TRUNCATED

ANSWERS_INTRO = ("The course's models answer every question: common/precision.py (the TF32 bound), "
                 "common/fragments.py (lane maps, ldmatrix on FP32 data), common/banks.py with the lab's "
                 "models.py; notebooks/lab07a_tf32.ipynb shows each of them.")
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


QUESTIONS = [
    Question("tf32_mantissa_bits", "How many explicit mantissa bits does a TF32 value keep (FP32 keeps 23)?",
             lambda: round(-math.log2(TF32_ROUNDED)) - 1, "precision.TF32_ROUNDED = 2^-(bits + 1)"),
    Question("tf32_rounded_operand_error",
             "k2..k7 round each operand to the nearest TF32 (cvt.rn / cvt.rna.tf32.f32): the largest relative "
             "error of one rounded operand (a number, e.g. 0.001)",
             lambda: TF32_ROUNDED, "precision.TF32_ROUNDED", rel_tol=0.01),
    Question("tf32_truncated_product_error",
             "With TF32_ROUND = 0 the tensor core truncates both operands: the bound on the relative error of "
             "one product a~ b~ (before any addition)",
             lambda: 2 * TF32_TRUNCATED + TF32_TRUNCATED ** 2, "(1 + e)^2 - 1 with e = precision.TF32_TRUNCATED",
             rel_tol=0.01),
    Question("tf32_tolerance_k2048",
             "The lab's bound for one element at K = 2048 when the kernel rounds, per unit of (|A||B|)_ij",
             lambda: float(TF32.tolerance(2048, 1.0, TF32_ROUNDED)), "precision.tolerance(2048, 1, TF32_ROUNDED)",
             rel_tol=0.02),
    Question("fp16_largest_finite", "The largest finite FP16 value: TF32 inputs above it become infinities "
                                    "in a kernel that goes through FP16",
             lambda: float(np.finfo(np.float16).max), "numpy.finfo(float16).max", rel_tol=0.001),
    Question("fp16_fails_because",
             "FP16 keeps as many significand bits as TF32. What does it lack that makes the lab's test reject "
             "a kernel that silently computes in FP16 (one word)?",
             lambda: "range", "5 exponent bits against TF32's 8; the inputs span 2^-20 .. 2^20", kind="words",
             accept=("exponent range", "exponent", "dynamic range", "exponent bits")),
    Question("ldmatrix_floats_per_row", "ldmatrix .b16 reads 16 bytes per row address: how many FP32 (TF32) "
                                        "values is that?",
             lambda: sum(1 for c in range(4) if F.simulate_ldmatrix_b32(lambda l: (0, 0), 1)[(c, 0)] is not None),
             "fragments.simulate_ldmatrix_b32: lanes 0..3 of one row"),
    Question("ldmatrix_lane_of_a_10_5",
             "k4: which lane receives A[10][5] of a 16 x 8 A fragment from ldmatrix.x4 (lane l addresses row "
             "l % 16, float4 group l / 16)?",
             lambda: _ldmatrix_owner(10, 5)[0], "fragments.simulate_ldmatrix_b32 with ldmatrix_tf32_a_x4_address"),
    Question("ldmatrix_register_of_a_10_5", "...and in which of its four registers (0..3)?",
             lambda: _ldmatrix_owner(10, 5)[1], "the same; it is the mma's a3 = A[g+8][t+4]"),
    Question("ldmatrix_supplier_of_a_13_6",
             "k4: which lane supplies the row address that A[13][6] of the fragment is read through?",
             lambda: _supplier(13, 6), "fragments.ldmatrix_tf32_a_x4_address"),
    Question("b_trans_whole_values",
             "Does ldmatrix .x2.trans on the B tile (Bs[k][n], FP32) put whole FP32 values in registers (yes / no)?",
             lambda: "yes" if not F.ldmatrix_b32_mismatches(lambda l: (l % 8, 4 * ((l // 8) % 2)), "m16n8k8.tf32.b", 2,
                                                               trans=True) else "no",
             "fragments.ldmatrix_b32_mismatches(..., trans=True): halves of two different values", kind="words"),
    Question("k2_b_read_conflict_unswizzled",
             "k2's B fragment load (b0 = Bs[t][g]) without the XOR swizzle: the n-way bank conflict",
             lambda: _conflict("k2 B fragment LDS, no swizzle"), "banks with models.BANK_ACCESSES"),
    Question("k4_ldsm_conflict_unswizzled",
             "k4's A ldmatrix.x4 (rows of 128 bytes) without the swizzle: the n-way conflict in each 8-row phase",
             lambda: _conflict("k4 A fragment LDSM.x4, no swizzle"), "banks.analyze_ldmatrix with models.BANK_ACCESSES"),
]

QUESTION_IDS = [q.id for q in QUESTIONS]
