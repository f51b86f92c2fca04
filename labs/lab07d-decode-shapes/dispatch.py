"""The dispatcher: gemm(A, B) picks a kernel and its parameters per shape, from the rules of one
table (lab.py, DISPATCH; first match wins), and says which rule fired.

    C, choice = gemm(A, B)              FP32 or FP16 A (M x K) and B (K x N), numpy; C is FP32
    choice = plan(precision, M, N, K, sms=None, arch=None)   the choice alone (no GPU needed when both are given;
                                        without a GPU the H200's: 132 SMs, sm_90)
    choice.rule, .when, .kernel, .variant, .splits, .label   "gemm[split-k: splitk_fp32/vec, splits=132]"
    check(precision, M, N, K, rng=None) -> (Verdict, choice): gemm against the float64 reference
    missing_runtime(row)                the Python module a row's launch needs and this machine lacks, or None
                                        (on a GPU, plan() skips such a rule: lab.py's RUNTIME_NEEDS)
    splits_for(k, M, N, K, sms)         a split-K row's rule, else ceil(sms / tiles), at most K / MIN_K_PER_SPLIT
    shape_facts(precision, M, N, K, sms) -> the `s` a rule's predicate sees (M, N, K, sms, tiles, splits)

Why a dispatcher at all: no one kernel is fast at every shape. At M = 1 a GEMM is a GEMV whose
speed is bytes per second; when M x N gives fewer output tiles than the GPU has SMs, most SMs idle
unless K is split; only when the tiles fill the GPU does lab 7's tiled kernel win. cuBLAS makes the
same choices with heuristics of its own; here they are five lines of lab.py that the README explains.
"""
import math
from dataclasses import dataclass
from pathlib import Path

from common.errors import CourseError
from common.precision import precision as _precision

H200_SMS = 132          # plan(...) without a GPU and without sms or arch: the GPU the thresholds were measured on
H200_ARCH = "sm_90"


def _lab():
    from common.lab import load
    return load(Path(__file__).resolve().parent)


def _table():
    return _lab().table


@dataclass(frozen=True)
class Shape:
    """What a rule's predicate sees."""
    M: int
    N: int
    K: int
    sms: int
    tiles: int            # output tiles of the precision's split-K kernel
    splits: int           # splits_for(...) at this shape


@dataclass(frozen=True)
class Choice:
    rule: str             # the rule's name ("gemv", "split-k", ...)
    when: str             # its condition, in words
    kernel: object        # the Kernel row that runs (split-K: with its splits fixed)
    variant: str
    splits: int           # 0 unless the kernel is split-K
    shape: Shape

    @property
    def label(self):
        s = f", splits={self.splits}" if self.splits else ""
        v = f"/{self.variant}" if self.variant else ""          # a one-entry row (lab 7c's h4) has none
        return f"gemm[{self.rule}: {self.kernel.base_name}{v}{s}]"

    def __str__(self):
        s = self.shape
        return f"{s.M}x{s.N}x{s.K}: rule {self.rule!r} ({self.when}) -> {self.label[5:-1]}"


def splitk_row(prec):
    """The split-K row of a precision (the one the `split-k` rule names)."""
    name = next(r[3][prec] for r in _table().DISPATCH if r[0] == "split-k" and prec in r[3])
    return _lab().kernel(name)


def splits_for(k, M, N, K, sms):
    """The split-K rule (launch.splits_for: the hook uses the same function)."""
    from . import launch
    return launch.splits_for(k, M, N, K, sms)


def shape_facts(prec, M, N, K, sms):
    k = splitk_row(prec)
    bm, bn = k.tile
    return Shape(M, N, K, sms, math.ceil(M / bm) * math.ceil(N / bn), splits_for(k, M, N, K, sms))


def plan(prec, M, N, K, sms=None, arch=None):
    """The rule that fires for this precision and shape, and the row, variant and splits it picks, on
    a GPU of `sms` SMs and architecture `arch` (default: this GPU's, else the H200's)."""
    from . import launch
    prec = _precision(prec).name
    live = False                          # choosing for this machine's GPU: its Python must launch the row too
    if sms is None or arch is None:
        from common.device import gpu_status
        gpu = gpu_status()[0]
        if sms is None:
            sms = launch._gpu_sms() if gpu else H200_SMS
        if arch is None:
            arch, live = (_lab().gpu_arch(), True) if gpu else (H200_ARCH, False)
    s = shape_facts(prec, M, N, K, sms)
    for name, when, test, kernels in _table().DISPATCH:
        if prec not in kernels or not test(s):
            continue
        k = _lab().bind(_lab().kernel(kernels[prec]))      # a name, or a row of lab.py's own
        if _lab().build_arch(k, arch) is None:
            continue                      # a kernel this GPU cannot run (sm_90a only): the next rule
        if live and missing_runtime(k):
            continue                      # ... or that this Python cannot launch (lab 7c's h4 without cuda-python)
        splits = 0
        if k.launch_hook is not None and hasattr(k.launch_hook, "reduce"):
            splits = launch.splits_of(k, M, N, K, sms)     # a row's fixed split, else its rule (or split-k's)
            k = launch.with_splits(k, splits)
        if k.refusal(M, N, K):
            continue                      # a rule whose kernel cannot take the shape: the next rule
        return Choice(name, when, k, k.variant_for(M, N, K), splits, s)
    raise CourseError(f"no rule of lab.py's DISPATCH serves {prec} {M}x{N}x{K}",
                      hint="the last rule should match every shape (lab 7's tiled kernel)")


def missing_runtime(k):
    """The Python module row k's launch needs and this machine lacks (lab.py's RUNTIME_NEEDS), or None."""
    import importlib.util
    module = _table().RUNTIME_NEEDS.get(k.base_name) if hasattr(_table(), "RUNTIME_NEEDS") else None
    try:
        return module if module and importlib.util.find_spec(module) is None else None
    except ModuleNotFoundError:               # the parent package (cuda) is not there either
        return module


_PRECISION_OF_DTYPE = {"float32": "fp32", "float16": "fp16_tensor"}


def gemm(A, B, verbose=False):
    """C = A B (FP32 out) with the kernel the rules pick; returns (C, choice). FP32 A and B multiply
    on FFMA, FP16 ones on tensor cores (or FFMA in the M = 1 GEMV), always with FP32 accumulation."""
    import numpy as np
    dt = np.asarray(A).dtype.name
    if dt not in _PRECISION_OF_DTYPE:
        raise CourseError(f"gemm takes float32 or float16 matrices, got {dt}",
                          hint="convert with A.astype(np.float32) (or np.float16)")
    (M, K), N = np.shape(A), np.shape(B)[-1]
    choice = plan(_PRECISION_OF_DTYPE[dt], M, N, K)
    if verbose:
        print(choice)
    return _lab().matmul(choice.kernel, A, B, choice.variant), choice


def check(prec, M, N, K, rng=None):
    """gemm on fresh random inputs against the float64 reference, with the chosen kernel's bound."""
    import numpy as np
    from common import check as checking
    p = _precision(prec)
    rng = rng or np.random.default_rng()
    A, B = p.random_inputs(M, N, K, rng)
    C, choice = gemm(A, B)
    ref, abs_ref = checking.reference(*p.reference_inputs(A, B))
    tol = choice.kernel.prec.tolerance(K, abs_ref, choice.kernel.roundoff)
    return checking.compare(C, ref, tol, label=f"{choice.label} {M}x{N}x{K}"), choice
