"""Check your understanding: the chapter's questions, each answer checked against the course's models.

    QUESTIONS                 id, text, the model's answer (a function of common.hierarchy /
                              common.roofline), tolerance; numbers or a few words
    question.grade(raw)       -> (ok, reason): raw is what answers.toml holds
    PREDICTIONS               % of cuBLAS at PREDICTION_SIZE per kernel, and HGEMM / SGEMM
    measured_from_record(rec) -> {id: value}: the predictions' measurements from a bench record
    grade_prediction(p, raw, measured) -> (ok, reason)

Answers may be numbers (0.25), fractions as text ("9/8"), a number with a unit or a % after it
("33 %", "2 blocks"), or words for the few word questions ("registers"). The expected values are
computed, never typed: if a model changes, the answer key changes with it (a test pins the
chapter's own numbers: 9/8, 0.25, 92 FLOP/B, 33 %, 32 FLOP/B).
"""
import re
from dataclasses import dataclass
from typing import Callable

from common import hierarchy as H
from common import roofline as R

from .parts import PREDICTION_FACTOR, PREDICTION_SIZE


def _traffic(name, key, **changes):
    return H.traffic(H.preset(name, **changes))[key]


def _occupancy(arch, threads, registers, tiling):
    t = H.preset(tiling)
    return H.occupancy(arch, threads, registers, smem_static=t.shared_bytes())


@dataclass(frozen=True)
class Question:
    id: str
    text: str
    expected: Callable
    model: str                      # where the answer comes from (the hint on a wrong answer)
    kind: str = "number"            # "number" or "words"
    rel_tol: float = 0.0
    abs_tol: float = 0.0
    accept: tuple = ()              # words: other accepted answers (normalized)
    points: int = 1

    def tolerance_text(self):
        if self.kind == "words":
            return "words, any case"
        if self.rel_tol:
            return f"within {100 * self.rel_tol:g} %"
        if self.abs_tol:
            return f"within ± {self.abs_tol:g}"
        return "exact"

    def answer(self):
        return self.expected()

    def grade(self, raw):
        """(ok, reason). raw: the TOML value (number or string), or None when missing."""
        if raw is None or (isinstance(raw, str) and raw.strip().upper() in ("", "TODO")):
            return False, "not answered"
        want = self.answer()
        if self.kind == "words":
            got = normalize_words(str(raw))
            ok = got in {normalize_words(w) for w in (want, *self.accept)}
            return ok, "" if ok else f"{raw!r} is not the answer (model: {self.model})"
        got = parse_number(raw)
        if got is None:
            return False, f"{raw!r} is not a number (write e.g. 0.25, \"9/8\" or \"33 %\")"
        tol = max(self.abs_tol, self.rel_tol * abs(want))
        ok = abs(got - want) <= tol + 1e-12 * max(1.0, abs(want))
        return ok, "" if ok else f"{raw!r} is not {self.tolerance_text()} of the model's value (model: {self.model})"


_NUMBER = re.compile(r"^\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*(?:/\s*((?:\d+\.?\d*|\.\d+)))?\s*(?:%|[A-Za-z][A-Za-z /]*)?\s*$")


def parse_number(raw):
    """A float from 0.25, 1, "9/8", "33 %", "2 blocks"; None if it is not one (booleans are not)."""
    if isinstance(raw, bool):
        return None
    if isinstance(raw, (int, float)):
        return float(raw)
    m = _NUMBER.match(str(raw))
    if not m:
        return None
    value = float(m.group(1))
    if m.group(2) is not None:
        den = float(m.group(2))
        if den == 0:
            return None
        value /= den
    return value


def normalize_words(text):
    t = re.sub(r"[-_]", " ", str(text).lower())
    t = re.sub(r"[^a-z0-9 ]", "", t)
    words = [w for w in t.split() if w not in ("the", "a", "an")]
    return " ".join(words)


QUESTIONS = [
    Question("v4_loads_per_fma",
             "v4 (section 2): shared-memory load instructions per FMA in the chapter's model (per k: the As "
             "loads and the one Bs load, over the FMAs)",
             lambda: _traffic("v4", "loads_per_fma"), "hierarchy.traffic(preset('v4'))['loads_per_fma']", rel_tol=0.01),
    Question("v5_loads_per_fma", "v5 (section 3): shared-memory load instructions per FMA, scalar loads",
             lambda: _traffic("v5", "loads_per_fma"), "hierarchy.traffic(preset('v5'))", rel_tol=0.01),
    Question("v7_loads_per_fma", "v7 (section 5): shared-memory load instructions per FMA, with LDS.128",
             lambda: _traffic("v7", "loads_per_fma"), "hierarchy.traffic(preset('v7'))", rel_tol=0.01),
    Question("v7_wn32_loads_per_fma",
             "v7 with WN = 32 and WNITER = 2 (a make tune candidate: 8 warps of 64 x 32): load instructions per FMA",
             lambda: _traffic("v7", "loads_per_fma", WN=32, WNITER=2),
             "hierarchy.traffic(preset('v7', WN=32, WNITER=2))", rel_tol=0.01),
    Question("v5_registers_estimate",
             "The hierarchy model's register estimate per thread for v5 (accumulators + operands + staging + "
             "overhead: the explorer shows each term)",
             lambda: H.estimate_registers(H.preset("v5"))[0], "hierarchy.estimate_registers(preset('v5'))",
             rel_tol=0.10),
    Question("v7_accumulators", "v7: accumulator registers per thread",
             lambda: H.estimate_registers(H.preset("v7"))[1]["accumulators"],
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
             lambda: H.preset("t2").WN // 16, "WN / 16 of preset('t2')"),
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

@dataclass(frozen=True)
class Prediction:
    id: str                   # a kernel of lab 7, or "hgemm_over_sgemm"
    text: str
    ladder: str = ""          # "fp32" or "fp16": the kernel's cuBLAS baseline
    unit: str = "% of cuBLAS"


PREDICTIONS = [Prediction(k, f"{k}: % of cuBLAS SGEMM (FP32, TF32 off)", "fp32") for k in ("v4", "v5", "v6", "v7")] + \
              [Prediction(k, f"{k}: % of cuBLAS HGEMM (FP16 in, FP32 accumulate)", "fp16") for k in ("t1", "t2", "t3")] + \
              [Prediction("hgemm_over_sgemm", "cuBLAS HGEMM TFLOP/s / cuBLAS SGEMM TFLOP/s: what FP16 is worth", unit="x")]

PREDICTION_IDS = [p.id for p in PREDICTIONS]


def measured_from_record(record, size=PREDICTION_SIZE):
    """{prediction id: value} from a bench record (targets.bench's JSON), at `size` if it has it,
    else its largest size. Returns (values, size used)."""
    sizes = sorted({r["size"] for r in record.get("results", [])})
    if not sizes:
        return {}, None
    use = size if size in sizes else sizes[-1]
    rows = {(r["ladder"], r["kernel"]): r for r in record["results"] if r["size"] == use}
    out = {}
    for p in PREDICTIONS:
        if p.ladder:
            r = rows.get((p.ladder, p.id))
            if r and r.get("pct_of_cublas") is not None:
                out[p.id] = float(r["pct_of_cublas"])
    s, h = rows.get(("fp32", "cuBLAS")), rows.get(("fp16", "cuBLAS"))
    if s and h and s.get("tflops"):
        out["hgemm_over_sgemm"] = float(h["tflops"]) / float(s["tflops"])
    return out, use


def grade_prediction(p, raw, measured):
    """(ok, reason): within PREDICTION_FACTOR of the measurement (either way)."""
    if raw is None or (isinstance(raw, str) and raw.strip().upper() in ("", "TODO")):
        return False, "not predicted"
    got = parse_number(raw)
    if got is None:
        return False, f"{raw!r} is not a number"
    if measured is None:
        return False, "no measurement to compare with"
    if got <= 0:
        return False, f"{raw!r}: a prediction must be positive"
    ratio = measured / got
    ok = 1 / PREDICTION_FACTOR <= ratio <= PREDICTION_FACTOR
    return ok, "" if ok else (f"predicted {got:g} {p.unit}, measured {measured:.3g}: off by {max(ratio, 1 / ratio):.1f}x "
                              f"(within {PREDICTION_FACTOR:g}x scores)")
