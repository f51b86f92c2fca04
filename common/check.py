"""Checking a GEMM result: float64 reference, a tolerance that grows with K, a one-line verdict.

    random_matrix(rows, cols, dtype, rng)   fresh uniform(-1, 1) data (never zeros)
    reference(A, B)                   -> (A.B, |A|.|B|) in float64, from the inputs as given
    tolerance(K, abs_ref, kind)       -> per-element bound; kind "fp32" (FFMA) or "fp16_tensor"
    compare(C, ref, tol, label)       -> Verdict(ok, worst, bad, ...); str(v) is the verdict line
    NAN_BITS                          the 32-bit pattern outputs are poisoned with before a run

Why these tolerances. For any order of summation, a length-K dot product computed in floating
point with unit roundoff u obeys |fl(x.y) - x.y| <= gamma_K |x|.|y|, gamma_K = K u / (1 - K u)
(Higham, Accuracy and Stability of Numerical Algorithms, 2nd ed., eq. 3.5): one rounding per
multiply-add at most, wherever the additions happen. So a correct FP32 kernel can never exceed
gamma_K(2^-24) |A|.|B| element by element, whatever its tiling. For inputs uniform in (-1, 1) a typical
product |a b| is 1/4, and the bound is about K^2 u / 4: 6 % of one product at K = 1000, all of it
at K = 4096. So a kernel that drops, repeats or misplaces a single product is caught for K up to
about two thousand, and a wrong tile (many products) at any K.

Tensor cores (FP16 inputs, FP32 accumulation): products of FP16 values are exact in FP32, but
inside an MMA the products are aligned to the largest exponent and added with truncation rather
than round-to-nearest (Fasi, Higham, Mikaitis, Pranesh, "Numerical behavior of NVIDIA tensor
cores", PeerJ CS 2021). Truncation costs up to one FP32 ulp (2u) per addition instead of half an
ulp, and the alignment can drop one more bit of the smaller terms, so we allow 4u = 2^-22 per
step: gamma_K(2^-22) |A|.|B|, with A and B the FP16-rounded inputs, so that only accumulation
error is measured, never the rounding of the inputs.
"""
from dataclasses import dataclass

import numpy as np

NAN_BITS = 0x7FC00000     # a quiet NaN: any element the kernel fails to write stays NaN

UNIT_ROUNDOFF = {"fp32": 2.0 ** -24, "fp16_tensor": 2.0 ** -22}


def random_matrix(rows, cols, dtype, rng):
    """Uniform(-1, 1) values, rounded to `dtype`. A new draw every call: never reuse, never zeros."""
    return rng.uniform(-1.0, 1.0, size=(rows, cols)).astype(dtype)


def reference(A, B):
    """The exact product of the inputs as stored (float64), and |A|.|B| for the error bound."""
    A64, B64 = A.astype(np.float64), B.astype(np.float64)
    return A64 @ B64, np.abs(A64) @ np.abs(B64)


def tolerance(K, abs_ref, kind):
    u = UNIT_ROUNDOFF[kind]
    gamma = K * u / (1.0 - K * u)
    return gamma * abs_ref + np.finfo(np.float32).tiny


@dataclass
class Verdict:
    ok: bool
    label: str
    bad: int              # elements over tolerance, NaN or infinite
    unwritten: int        # elements still NaN (the poison): never written
    worst_index: tuple
    worst_error: float
    worst_tol: float
    worst_got: float
    worst_want: float

    def __str__(self):
        head = "PASS" if self.ok else "FAIL"
        s = (f"{head} {self.label}: worst |err| {self.worst_error:.2e} at {self.worst_index} "
             f"(tol {self.worst_tol:.2e})")
        if not self.ok:
            s += (f", got {self.worst_got:.6g} want {self.worst_want:.6g}; {self.bad} bad element(s)"
                  + (f", {self.unwritten} never written (still NaN)" if self.unwritten else ""))
        return s


def compare(C, ref, tol, label=""):
    """Every element within its tolerance, none left NaN. Reports the element nearest to failing
    (largest err/tol) when all pass, the worst offender when not."""
    C64 = C.astype(np.float64)
    err = np.abs(C64 - ref)
    nonfinite = ~np.isfinite(C64)
    err[nonfinite] = np.inf
    over = err > tol
    ratio = np.where(nonfinite, np.inf, err / tol)
    idx = np.unravel_index(int(np.argmax(ratio)), ratio.shape) if ratio.size else (0, 0)
    bad = int(np.count_nonzero(over | nonfinite))
    return Verdict(ok=bad == 0, label=label, bad=bad, unwritten=int(np.count_nonzero(np.isnan(C64))),
                   worst_index=tuple(int(i) for i in idx), worst_error=float(err[idx]),
                   worst_tol=float(tol[idx]), worst_got=float(C64[idx]), worst_want=float(ref[idx]))
