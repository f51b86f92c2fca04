"""Lab 7's "check your understanding" questions and predictions: data for common/grading.

    QUESTIONS        id, text, the model's answer (a function of common.hierarchy / common.roofline),
                     tolerance, a hint (what to look at on a wrong answer), and for the questions that
                     ask why, the key ideas the reason must name (common.grading.questions.Question)
    PREDICTIONS      numbers about v8, the rung after the graded ones, derived from its header and the
                     chapter's models: computed here, graded within 15 % (Prediction with `expected`)
    ANSWERS_INTRO

The expected values are computed, never typed: if a model changes, the answer key changes with it
(a test pins the chapter's own numbers: 9/8, 0.25, 92 FLOP/B, 33 %, 32 FLOP/B). They live here, in
the grader's data, and nowhere a student reads before submitting: not in the workspace, not in the
lab's README, not in `make grade`'s output (a wrong answer gets the hint, never the value). This
module imports nothing of the lab's grading/parts.py, nor it this one.
"""
from pathlib import Path

from common import hierarchy as H
from common import roofline as R
from common.grading.questions import Prediction, Question

ANSWERS_INTRO = ("Derive each answer from the kernels and the chapter; the hierarchy explorer and `make sass` "
                 "let you check your reasoning. Where a question has a `_why` key, write your reason in a "
                 "sentence: it is graded too (it must name what decides the answer). The predictions are "
                 "about v8, which is not graded: read its header, derive, then measure.")


def _tiling(name, **changes):
    """The hierarchy model's Tiling of one of this lab's kernels (common.hierarchy.tiling)."""
    from common.lab import load
    return H.tiling(load(Path(__file__).resolve().parents[1]), name, **changes)


def _traffic(name, key, **changes):
    return H.traffic(_tiling(name, **changes))[key]


def _occupancy(arch, threads, registers, tiling):
    return H.occupancy(arch, threads, registers, smem_static=_tiling(tiling).shared_bytes())


QUESTIONS = [
    # v4 and v5 as built here: their headers state the counts (the chapter's 9/8 and 0.25), so the
    # questions ask for a tile the lab never builds, derived the same way (a test pins both models)
    Question("v4_half_rows_loads_per_fma",
             "v4 with half as many rows of C per thread as the lab's v4 (same loop otherwise): shared-memory load "
             "instructions per FMA in one thread's inner loop",
             lambda: _traffic("v4", "loads_per_fma", TM=4), "hierarchy.traffic(tiling(lab, 'v4', TM=4))['loads_per_fma']",
             rel_tol=0.01, hint="one k step of the loop: which loads does a thread issue, and how many FFMA use them?",
             why=((5, "five"), (4, "four")),
             why_model="Per k a thread loads TM = 4 values of As and 1 of Bs, 5 loads, for 4 FMAs: 5/4."),
    Question("v5_half_rows_loads_per_fma",
             "v5 with half as many rows of C per thread as the lab's v5 (its columns unchanged): shared-memory load "
             "instructions per FMA, scalar loads",
             lambda: _traffic("v5", "loads_per_fma", TM=4), "hierarchy.traffic(tiling(lab, 'v5', TM=4))", rel_tol=0.01,
             hint="per k, how many values of A and of B does a thread need, and how many products do they make?",
             why=((12, "twelve"), (32, "thirty two")),
             why_model="Per k a thread loads TM + TN = 4 + 8 = 12 values and makes TM x TN = 32 FMAs from them: 12/32."),
    Question("v7_loads_per_fma", "v7: shared-memory load instructions per FMA, with LDS.128",
             lambda: _traffic("v7", "loads_per_fma"), "hierarchy.traffic(tiling(lab, 'v7'))", rel_tol=0.01,
             hint="count the LDS.128 of one k step in v7's SASS (or its loop), and the FFMA beside them",
             why=((6, "six"), (128,)),
             why_model="Per k: 2 LDS.128 for the 8 A values and 4 for the 16 B values of the strips, 6 loads "
                       "for 8 x 16 = 128 FMAs."),
    Question("v7_wn32_loads_per_fma",
             "v7 with WN = 32 and WNITER = 2 (a make tune candidate: 8 warps of 64 x 32): load instructions per FMA",
             lambda: _traffic("v7", "loads_per_fma", WN=32, WNITER=2),
             "hierarchy.traffic(tiling(lab, 'v7', WN=32, WNITER=2))", rel_tol=0.01,
             hint="a narrower warp tile: how many B values per k does a thread hold now, and how many FMAs?"),
    Question("v5_registers_estimate",
             "The hierarchy model's register estimate per thread for v5 (accumulators + operands + staging + "
             "overhead: the explorer shows each term)",
             lambda: H.estimate_registers(_tiling("v5"))[0], "hierarchy.estimate_registers(tiling(lab, 'v5'))",
             rel_tol=0.10, hint="add the terms: acc is TM x TN, the operands TM + TN, the staging of the loads"),
    Question("v7_accumulators", "v7: accumulator registers per thread",
             lambda: H.estimate_registers(_tiling("v7"))[1]["accumulators"],
             "TM x TN x WNITER x WMITER, hierarchy.estimate_registers",
             hint="the outputs one thread owns: its rows times its columns over all strips"),
    Question("v5_occupancy_sm86_pct",
             "v5 at 128 registers per thread (256 threads, 8 KB of shared memory) on an sm_86 GPU: occupancy, "
             "in % of the SM's warps",
             lambda: 100 * _occupancy("sm_86", 256, 128, "v5").fraction,
             "hierarchy.occupancy('sm_86', 256, 128, smem)", abs_tol=1.0,
             hint="the register file of an sm_86 SM, the registers of one block, and the SM's warp limit"),
    Question("v7_blocks_per_sm_sm90", "v7 at 208 registers per thread (128 threads) on sm_90: resident blocks per SM",
             lambda: _occupancy("sm_90", 128, 208, "v7").blocks_per_sm, "hierarchy.occupancy('sm_90', 128, 208, smem)",
             hint="each limit in turn (registers, shared memory, threads, blocks): the smallest wins"),
    Question("v7_occupancy_limit", "...and which resource limits it (one word)?",
             lambda: _occupancy("sm_90", 128, 208, "v7").binding[0], "hierarchy.occupancy(...).binding",
             kind="words", accept=("register", "register file", "regs"),
             hint="compute what each resource alone would allow",
             why=((26624, "26 k", "26k"), (65536, "64 k", "64k")),
             why_model="A block needs 208 x 128 = 26624 registers and the SM has 65536: only 2 blocks fit, "
                       "while shared memory alone would allow more."),
    Question("v6_warp_bytes_per_output",
             "v6: bytes of shared memory a warp reads per output, per unit of K (its 16 x 128 strip, each value once)",
             lambda: _traffic("v6", "bytes_per_output_warp"), "hierarchy.traffic(...)['bytes_per_output_warp']",
             rel_tol=0.01, hint="the values of A and B a warp's strip needs per k, in bytes, over its outputs"),
    Question("v7_warp_bytes_per_output", "v7: the same for its 64 x 64 warp tile",
             lambda: _traffic("v7", "bytes_per_output_warp"), "hierarchy.traffic(...)['bytes_per_output_warp']",
             rel_tol=0.01, hint="the same count for a square warp tile: rows plus columns, over rows times columns"),
    Question("v5_global_flop_per_byte",
             "v5's 128 x 128 block tile: FLOP per byte of A and B read from global memory if nothing hits in L2",
             lambda: _traffic("v5", "global_flop_per_byte"), "hierarchy.traffic(...)['global_flop_per_byte']",
             rel_tol=0.01, hint="per k step of the block: the FLOP of its outputs, the bytes of the A and B slices",
             why=((256, "bm + bn", "both tile"), ("4 byte", "four byte", "sizeof float", "4 b")),
             why_model="Per unit of K the block does 2 x 128 x 128 FLOP and reads BM + BN = 256 floats of "
                       "4 bytes each: 32768 / 1024 = 32."),
    Question("ridge_fp16_geforce",
             "A GPU with 61.7 TFLOP/s of FP16 tensor throughput and 672 GB/s of DRAM bandwidth: its ridge point, FLOP/B",
             lambda: R.roofs({"peaks": {"fp32": None, "fp16_tensor": 61.7}, "memory_bandwidth_gbs": 672})["ridge_fp16_tensor"],
             "roofline.roofs(...): peak / bandwidth", rel_tol=0.02,
             hint="the intensity at which the bandwidth roof meets the compute roof; mind the units"),
    Question("ridge_fp32_h200", "An H200: 66.9 TFLOP/s FP32 (FFMA) and 4.8 TB/s: its FP32 ridge point, FLOP/B",
             lambda: R.roofs({"peaks": {"fp32": 66.9, "fp16_tensor": None}, "memory_bandwidth_gbs": 4800})["ridge_fp32"],
             "roofline.roofs(...): peak / bandwidth", rel_tol=0.02,
             hint="the intensity at which the bandwidth roof meets the compute roof; mind the units"),
    Question("t2_a_fragment_reuse",
             "t2: how many mma_sync use each A fragment a warp loads from shared memory (per 16-deep step)?",
             lambda: _tiling("t2").WN // 16, "WN / 16 of tiling(lab, 't2')",
             hint="the loop of mma_sync: for one a[i], how many j?",
             why=((32, "wn"), ("b fragment", "frag n", "fragn")),
             why_model="The warp's tile is WN = 32 columns wide, so it holds 2 B fragments of 16 columns and "
                       "each A fragment meets both."),
    # not t3 as built: its header and loop state wait_prior(STAGES - 1) for the issue-then-wait order
    Question("t3_wait_prior_issue_after_wait",
             "t3 with STAGES = 4, its main loop reordered so that the copy of a later tile is issued and committed "
             "after the wait (and before the compute): the n of __pipeline_wait_prior(n)",
             lambda: 4 - 2, "the groups committed when the wait runs (t .. t + STAGES - 2) less the one that must land",
             hint="count the groups committed when the wait runs, and which group holds the tile the warps compute next",
             why=(("in flight", "pending", "outstanding", "not landed"), ("tile t", "current tile", "oldest")),
             why_model="When the wait runs, tiles t, t+1 and t+2 are committed (t+3 is issued after it); tile t "
                       "must have landed, so at most 2 groups may stay in flight."),
    Question("outer_product_view",
             "Which view of matrix multiply lets a thread reuse every loaded value for several FMAs (two words)?",
             lambda: "outer product", "section 1", kind="words",
             accept=("outer products", "outer product view", "outerproduct"),
             hint="the views of C = A B as sums: of dot products, of columns, of rank-1 matrices"),
]

QUESTION_IDS = [q.id for q in QUESTIONS]


# ---------------------------------------------------------------------------------------------
# Predictions: v8, the rung after the graded ones, derived from its header (BM, BN, BK, STAGES) and
# the chapter's models. Computed here, graded within REL_TOL.
# ---------------------------------------------------------------------------------------------

# Why 15 %: each answer is exact arithmetic on v8's header (BM = 128, BN = 256, BK = 8, STAGES = 3),
# and the mistakes on the way are at least 20 % off: its tile's FLOP per byte (42.7) against a
# 128 x 128 tile's (32, -25 %) or FLOP counted as one per FMA (21.3, -50 %); its shared memory with
# STAGES = 5 (60 KB) against 4 or 6 stages (-20 %, +20 %), the default 3 (-40 %), bytes counted as
# floats (-75 %) or only one operand's tiles (-33 % or -67 %); its global traffic at 4096³ (3.22 GB) against v7's tile
# (4.29 GB, +33 %), only one operand (-33 % or -67 %) or floats for bytes (-75 %). A 15 % band accepts
# rounding and GiB for GB (3.0 GiB is -7 %) and rejects every one of them; a guess of the order of
# magnitude lands in it about one time in eight. None of the three numbers is printed in the lab's
# texts, kernels or notebooks (tests/test_grade_exercises.py looks).
REL_TOL = 0.15


def _v8(key):
    return _traffic("v8", key)


def _v8_shared_bytes(stages):
    t = _tiling("v8")
    return stages * t.BK * (t.BM + t.BN) * 4          # A and B tiles of one stage, FP32, no padding (XOR swizzle)


def _v8_global_gb(size=4096):
    return 2 * size ** 3 / _v8("global_flop_per_byte") / 1e9


PREDICTIONS = [
    Prediction("v8_global_flop_per_byte",
               "v8's block tile: FLOP per byte of A and B read from global memory if nothing hits in L2",
               expected=lambda: _v8("global_flop_per_byte"), rel_tol=REL_TOL, unit="FLOP/B",
               hint="v8's BM and BN: the FLOP of one k step of the block against the bytes it reads"),
    Prediction("v8_stages5_shared_bytes", "v8 built with STAGES = 5: its dynamic shared memory per block, in bytes",
               expected=lambda: _v8_shared_bytes(5), rel_tol=REL_TOL, unit="B",
               hint="the A and B tiles of one stage (BM, BN, BK of v8's header), their padding if any, times the stages"),
    Prediction("v8_global_gb_4096",
               "v8 at M = N = K = 4096: GB (10^9 bytes) of A and B read from global memory if nothing hits in L2",
               expected=_v8_global_gb, rel_tol=REL_TOL, unit="GB",
               hint="how many times each block tile reads its slices of A and B, and how many blocks there are"),
]

PREDICTION_IDS = [p.id for p in PREDICTIONS]
