"""Lab 7d's "check your understanding" questions (each with a reason, graded) and its computed
predictions. Data for common/grading (common.grading.questions: Question, Prediction).

Every expected value is computed from the lab itself, never typed: the kernels' tiles (lab.py's rows,
read from the .cu files), the split rule the launcher uses (launch.splits_of), the copy bandwidth of the
sweep record the README quotes, numpy's element sizes. This module imports nothing of grading/parts.py.

Why the predictions' tolerance is 15 % (Prediction.rel_tol): each has near misses that a student who
skips one step of the derivation lands on, and every one of them is at least 20 % away:
  gemv_fp16_floor_us    reading the weights once at the copy bandwidth. Counting 4-byte weights
                        (FP32) doubles it; counting the copy's read + write as bytes the GEMV moves
                        halves it; 6144^2 taken as 36 MB instead of 37.7 M is 4.5 % (passes: a
                        rounding, not a mistake).
  skinny_partials_kib   the partial tiles one launch writes: splits x tiles x BM x BN x 4 bytes. The
                        ceiling instead of the floor in the one-wave rule gives 5 splits (+25 %); only
                        the splits that are not last (3 of 4) gives -25 %; FP16 partials halve it.
  prefill_flop_per_byte 2 M N K FLOP over the bytes of A, B and C at 256 x 1024 x 1024, where the
                        weights no longer dominate: "about M" (the rule for decode, which NOTES.md
                        states) is 75 % high; leaving out C is +40 %, leaving out A +17 %; FP32
                        weights -42 %; a multiply-add as 1 FLOP halves it.
"""
import json
from pathlib import Path

import numpy as np

from common.grading.questions import Prediction, Question

LAB_DIR = Path(__file__).resolve().parents[1]
H200_SMS = 132
COPY_RECORD = "lab07d-sweep_nvidia-h200_2026-12-01_7283a6f.json"   # the sweep the README's tables quote

ANSWERS_INTRO = ("Work each answer out from the kernels' headers (gemv.cu, skinny_fp16.cu), lab.py's rows and "
                 "launch.py's split rule, and the README's measured copy bandwidth; give every reason in a sentence.")


def _lab():
    from common.lab import load
    return load(LAB_DIR)


def _copy_gbs():
    return json.loads((LAB_DIR / "results" / COPY_RECORD).read_text())["copy"]["gbs"]


def _gemv_floor_us(M, N, K, dtype):
    return N * K * np.dtype(dtype).itemsize / (_copy_gbs() * 1e9) * 1e6


def _skinny_partials_kib(M, N, K, sms=H200_SMS):
    lab = _lab()
    k = lab.kernel("skinny_fp16")
    launch = lab.module("launch")
    bm, bn = k.tile
    tiles = -(-M // bm) * -(-N // bn)
    splits = launch.splits_of(k, M, N, K, sms)
    return splits * tiles * bm * bn * np.dtype(np.float32).itemsize / 1024


def _flop_per_byte(M, N, K, dtype):
    e = np.dtype(dtype).itemsize
    return 2 * M * N * K / (e * (M * K + K * N) + 4 * M * N)


PREDICTIONS = [
    Prediction("gemv_fp16_floor_us",
               "The FP16 GEMV at 1 x 6144 x 6144: the fewest microseconds it can take, reading each weight once "
               "at the device copy bandwidth the README's sweep measured on the H200",
               expected=lambda: _gemv_floor_us(1, 6144, 6144, np.float16), unit="us",
               hint="the bytes of the weights, and what the sweep's copy bandwidth counts"),
    Prediction("skinny_partials_kib",
               "skinny_fp16 (the default build) at 16 x 2048 x 16384 on the H200's 132 SMs: the KiB of partial "
               "tiles one launch writes to its workspace",
               expected=lambda: _skinny_partials_kib(16, 2048, 16384), unit="KiB",
               hint="the row's tile (lab.py, skinny_fp16.cu's header), its split rule (lab.py, _one_wave), and "
                    "which splits write a partial"),
    Prediction("prefill_flop_per_byte",
               "The FP16 product at 256 x 1024 x 1024 (a prefill chunk: 256 tokens through a 1024 x 1024 layer): "
               "FLOP per byte of DRAM traffic (A and B read once in FP16, C written once in FP32)",
               expected=lambda: _flop_per_byte(256, 1024, 1024, np.float16), unit="FLOP/B",
               hint="the bytes of each of the three matrices, and how many FLOP one multiply-add is"),
]

QUESTIONS = [
    Question("own_partial_first_repeatable",
             "skinny_fp16's last block starts its sum from its own partial tile (at hand in shared memory), then "
             "adds the other splits' partials, split 0 first. At 8 splits, is C bitwise the same on every run "
             "(yes / no)?",
             lambda: "no", "the ticket decides the last block at run time", kind="words",
             why=(("order", "sequence"), ("changes", "varies", "differs", "different", "random", "depends",
                                         "nondeterministic", "non deterministic")),
             why_model="Which split draws the last ticket changes from run to run, so the order of the "
                       "floating-point additions changes, and rounding depends on the order.",
             hint="which block draws the last ticket, and whether float addition is associative"),
    Question("own_partial_first_two_splits",
             "The same kernel at exactly 2 splits: is C bitwise the same on every run (yes / no)?",
             lambda: "yes", "a + b == b + a in IEEE arithmetic", kind="words",
             why=(("commutative", "commutes", "commute", "b + a", "b+a"),),
             why_model="With two terms the sum is own + other, which is other + own: float addition is "
                       "commutative (only associativity fails), so the bits do not depend on who is last.",
             hint="what changes when only two numbers are added"),
    Question("atomic_c_before_launch",
             "A split-K that adds each split's partial tile into C with atomicAdd: what must every element of "
             "C hold before the launch (one word)?",
             lambda: "zero", "the atomics add to what is there", kind="words", accept=("zeros", "zeroes", "0", "0.0"),
             why=(("adds to", "added to", "accumulate", "accumulates", "sum into", "adds onto", "plus"),),
             why_model="Each atomicAdd adds to what C already holds, so C must start at zero: a memset, another "
                       "launch, another pass over C's bytes.",
             hint="what an atomicAdd does with the value already in memory"),
    Question("fp16_over_fp32_gemv_m1",
             "At 1 x 8192 x 8192, how many times faster than the FP32 GEMV can the FP16 one be, at best "
             "(a number)?",
             lambda: np.dtype(np.float32).itemsize / np.dtype(np.float16).itemsize, "bytes per element: 4 / 2",
             rel_tol=0.05,
             why=(("byte", "bytes", "bandwidth", "memory bound", "memory"),),
             why_model="At M = 1 the GEMV is memory bound: its time is the bytes of the weights over the bandwidth, "
                       "and FP16 weights are half the bytes.",
             hint="what the GEMV's time is at M = 1"),
    Question("gemv_m1_limit",
             "The FP32 GEMV at 1 x 8192 x 8192 on the H200: is it limited by DRAM or by FFMA throughput (one word: "
             "dram / ffma)?",
             lambda: "dram", "0.5 FLOP/B against a ridge of ~16 FLOP/B", kind="words",
             accept=("memory", "bandwidth", "dram bandwidth", "memory bandwidth"),
             why=(("intensity", "flop per byte", "flops per byte", "flop/byte", "flop/b", "ridge"),),
             why_model="2 FLOP per 4-byte weight is 0.5 FLOP per byte, far below the roofline's ridge "
                       "(67 TFLOP/s over 4.3 TB/s, ~16 FLOP/B): arithmetic intensity decides.",
             hint="the roofline model, with the H200's FFMA peak and memory bandwidth"),
    Question("littles_law_mb",
             "To stream 4.2 TB/s when a DRAM access takes 0.8 us, how many MB must be requested and not yet "
             "returned, across the whole GPU (a number)?",
             lambda: 4.2e12 * 0.8e-6 / 1e6, "Little's law: in flight = rate x latency", rel_tol=0.05, unit="MB",
             why=(("latency", "little", "littles"), ("times", "multiplied", "product", "x")),
             why_model="Little's law: bytes in flight = bandwidth x latency = 4.2e12 B/s x 0.8e-6 s = 3.4 MB.",
             hint="gemv.cu's header, point 2"),
]

QUESTION_IDS = [q.id for q in QUESTIONS]
