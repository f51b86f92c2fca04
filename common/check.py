"""Checking a GEMM result: float64 reference, a tolerance that grows with K, a one-line verdict.

    random_matrix(rows, cols, dtype, rng)   fresh uniform(-1, 1) data (never zeros)
    reference(A, B)                   -> (A.B, |A|.|B|) in float64, from the inputs as given
    tolerance(K, abs_ref, precision)  -> per-element bound (common.precision says why)
    compare(C, ref, tol, label)       -> Verdict(ok, worst, bad, ...); str(v) is the verdict line
    compare(C, ref, 0, label)         an exact check: small-integer inputs (common.precision, "Small integers")
    NAN_BITS                          the 32-bit pattern outputs are poisoned with before a run

The bounds and their justification live with the precisions, in common/precision.py: one table for
FP32 FFMA, FP16, BF16 and TF32 tensor cores.
"""
from dataclasses import dataclass

import numpy as np

NAN_BITS = 0x7FC00000     # a quiet NaN: any element the kernel fails to write stays NaN



def random_matrix(rows, cols, dtype, rng):
    """Uniform(-1, 1) values, rounded to `dtype`. A new draw every call: never reuse, never zeros."""
    return rng.uniform(-1.0, 1.0, size=(rows, cols)).astype(dtype)


def reference(A, B):
    """The exact product of the inputs as stored (float64), and |A|.|B| for the error bound."""
    A64, B64 = A.astype(np.float64), B.astype(np.float64)
    return A64 @ B64, np.abs(A64) @ np.abs(B64)


def tolerance(K, abs_ref, kind, input_roundoff=None):
    """The bound of precision `kind` ("fp32", "fp16_tensor", ... or a Precision)."""
    from .precision import precision
    return precision(kind).tolerance(K, abs_ref, input_roundoff)


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
    tol = np.broadcast_to(np.asarray(tol, dtype=np.float64), err.shape)
    over = err > tol
    if tol.any():
        ratio = np.where(nonfinite, np.inf, err / tol)
    else:                               # an exact check (tol 0): the worst is the largest error
        ratio = err
    idx = np.unravel_index(int(np.argmax(ratio)), ratio.shape) if ratio.size else (0, 0)
    bad = int(np.count_nonzero(over | nonfinite))
    return Verdict(ok=bad == 0, label=label, bad=bad, unwritten=int(np.count_nonzero(np.isnan(C64))),
                   worst_index=tuple(int(i) for i in idx), worst_error=float(err[idx]),
                   worst_tol=float(tol[idx]), worst_got=float(C64[idx]), worst_want=float(ref[idx]))
