"""Lab 7's "check your understanding" questions and predictions: data for common/grading.

    QUESTIONS        id, text, the model's answer (a function of common.hierarchy / common.roofline),
                     tolerance; numbers or a few words (common.grading.questions.Question)
    PREDICTIONS      % of cuBLAS at PREDICTION_SIZE per kernel, and HGEMM / SGEMM (Prediction)
    PREDICTION_SIZE, PREDICTION_FACTOR, ANSWERS_INTRO

The expected values are computed, never typed: if a model changes, the answer key changes with it
(a test pins the chapter's own numbers: 9/8, 0.25, 92 FLOP/B, 33 %, 32 FLOP/B). This module imports
nothing of the lab's grading/parts.py, nor it this one.
"""
from pathlib import Path

from common import hierarchy as H
from common import roofline as R
from common.grading.questions import Prediction, Question

PREDICTION_SIZE = 4096      # the chapter's predictions are for 4096^3
PREDICTION_FACTOR = 2.0     # a prediction within a factor of 2 of the measurement scores
ANSWERS_INTRO = ("The course's models answer every question: common/hierarchy.py, common/roofline.py and the "
                 "hierarchy explorer. The predictions are the chapter's section 9; Boehm's ratios are for "
                 "another card.")


def _tiling(name, **changes):
    """The hierarchy model's Tiling of one of this lab's kernels (common.hierarchy.tiling)."""
    from common.lab import load
    return H.tiling(load(Path(__file__).resolve().parents[1]), name, **changes)


def _traffic(name, key, **changes):
    return H.traffic(_tiling(name, **changes))[key]


def _occupancy(arch, threads, registers, tiling):
    return H.occupancy(arch, threads, registers, smem_static=_tiling(tiling).shared_bytes())


QUESTIONS = [
    Question("v4_loads_per_fma",
             "v4 (section 2): shared-memory load instructions per FMA in the chapter's model (per k: the As "
             "loads and the one Bs load, over the FMAs)",
             lambda: _traffic("v4", "loads_per_fma"), "hierarchy.traffic(tiling(lab, 'v4'))['loads_per_fma']", rel_tol=0.01),
    Question("v5_loads_per_fma", "v5 (section 3): shared-memory load instructions per FMA, scalar loads",
             lambda: _traffic("v5", "loads_per_fma"), "hierarchy.traffic(tiling(lab, 'v5'))", rel_tol=0.01),
    Question("v7_loads_per_fma", "v7 (section 5): shared-memory load instructions per FMA, with LDS.128",
             lambda: _traffic("v7", "loads_per_fma"), "hierarchy.traffic(tiling(lab, 'v7'))", rel_tol=0.01),
    Question("v7_wn32_loads_per_fma",
             "v7 with WN = 32 and WNITER = 2 (a make tune candidate: 8 warps of 64 x 32): load instructions per FMA",
             lambda: _traffic("v7", "loads_per_fma", WN=32, WNITER=2),
             "hierarchy.traffic(tiling(lab, 'v7', WN=32, WNITER=2))", rel_tol=0.01),
    Question("v5_registers_estimate",
             "The hierarchy model's register estimate per thread for v5 (accumulators + operands + staging + "
             "overhead: the explorer shows each term)",
             lambda: H.estimate_registers(_tiling("v5"))[0], "hierarchy.estimate_registers(tiling(lab, 'v5'))",
             rel_tol=0.10),
    Question("v7_accumulators", "v7: accumulator registers per thread",
             lambda: H.estimate_registers(_tiling("v7"))[1]["accumulators"],
             "TM x TN x WNITER x WMITER, hierarchy.estimate_registers"),
    Question("v5_occupancy_sm86_pct",
             "v5 at 128 registers per thread (256 threads, 8 KB of shared memory) on an sm_86 GPU: occupancy, "
             "in % of the SM's warps",
             lambda: 100 * _occupancy("sm_86", 256, 128, "v5").fraction,
             "hierarchy.occupancy('sm_86', 256, 128, smem)", abs_tol=1.0),
    Question("v7_blocks_per_sm_sm90", "v7 at 208 registers per thread (128 threads) on sm_90: resident blocks per SM",
             lambda: _occupancy("sm_90", 128, 208, "v7").blocks_per_sm, "hierarchy.occupancy('sm_90', 128, 208, smem)"),
    Question("v7_occupancy_limit", "...and which resource limits it (one word)?",
             lambda: _occupancy("sm_90", 128, 208, "v7").binding[0], "hierarchy.occupancy(...).binding",
             kind="words", accept=("register", "register file", "regs")),
    Question("v6_warp_bytes_per_output",
             "v6: bytes of shared memory a warp reads per output, per unit of K (its 16 x 128 strip, each value once)",
             lambda: _traffic("v6", "bytes_per_output_warp"), "hierarchy.traffic(...)['bytes_per_output_warp']",
             rel_tol=0.01),
    Question("v7_warp_bytes_per_output", "v7: the same for its 64 x 64 warp tile",
             lambda: _traffic("v7", "bytes_per_output_warp"), "hierarchy.traffic(...)['bytes_per_output_warp']",
             rel_tol=0.01),
    Question("v5_global_flop_per_byte",
             "v5's 128 x 128 block tile: FLOP per byte of A and B read from global memory if nothing hits in L2",
             lambda: _traffic("v5", "global_flop_per_byte"), "hierarchy.traffic(...)['global_flop_per_byte']",
             rel_tol=0.01),
    Question("ridge_fp16_geforce",
             "A GPU with 61.7 TFLOP/s of FP16 tensor throughput and 672 GB/s of DRAM bandwidth: its ridge point, FLOP/B",
             lambda: R.roofs({"peaks": {"fp32": None, "fp16_tensor": 61.7}, "memory_bandwidth_gbs": 672})["ridge_fp16_tensor"],
             "roofline.roofs(...): peak / bandwidth", rel_tol=0.02),
    Question("ridge_fp32_h200", "An H200: 66.9 TFLOP/s FP32 (FFMA) and 4.8 TB/s: its FP32 ridge point, FLOP/B",
             lambda: R.roofs({"peaks": {"fp32": 66.9, "fp16_tensor": None}, "memory_bandwidth_gbs": 4800})["ridge_fp32"],
             "roofline.roofs(...): peak / bandwidth", rel_tol=0.02),
    Question("t2_a_fragment_reuse",
             "t2: how many mma_sync use each A fragment a warp loads from shared memory (per 16-deep step)?",
             lambda: _tiling("t2").WN // 16, "WN / 16 of tiling(lab, 't2')"),
    Question("t3_wait_prior_stages3", "t3 with STAGES = 3: the n of __pipeline_wait_prior(n) in the main loop",
             lambda: 3 - 1, "the groups that may still be in flight: STAGES - 1"),
    Question("outer_product_view",
             "Which view of matrix multiply lets a thread reuse every loaded value for several FMAs (two words)?",
             lambda: "outer product", "section 1", kind="words",
             accept=("outer products", "outer product view", "outerproduct")),
]

QUESTION_IDS = [q.id for q in QUESTIONS]


# ---------------------------------------------------------------------------------------------
# Predictions
# ---------------------------------------------------------------------------------------------

PREDICTIONS = [Prediction(k, f"{k}: % of cuBLAS SGEMM (FP32, TF32 off)", "fp32") for k in ("v4", "v5", "v6", "v7")] + \
              [Prediction(k, f"{k}: % of cuBLAS HGEMM (FP16 in, FP32 accumulate)", "fp16") for k in ("t1", "t2", "t3")] + \
              [Prediction("hgemm_over_sgemm", "cuBLAS HGEMM TFLOP/s / cuBLAS SGEMM TFLOP/s: what FP16 is worth",
                          unit="x", ratio=("fp16", "fp32"))]

PREDICTION_IDS = [p.id for p in PREDICTIONS]
