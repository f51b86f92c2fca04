"""Precisions: everything that depends on what a kernel multiplies, in one table.

    PRECISIONS["fp32"], ["fp16_tensor"], ["tf32_tensor"], ["bf16_tensor"]   Precision rows
    PRECISIONS["fp32_3xtf32"], ["tf32x3_cublas"]   FP32 from three TF32 products: a kernel, and
                                    three cuBLAS TF32 calls (see "3xTF32" below), the split included;
    PRECISIONS["tf32x3_cublas_presplit"]   the same three calls on operands split beforehand (timing only)
    PRECISIONS["fp32_bf16x9"]       cuBLAS's own FP32 emulation (BF16x9), a baseline only; optional:
                                    a cuBLAS or GPU without it is skipped, saying why (p.optional)
    precision(name)                 -> the row; CourseError naming the choices
    p.input_dtype, p.element_bytes  what A and B hold on the device (numpy dtype; BF16 as uint16 bits)
    p.random_inputs(M, N, K, rng)   -> (A, B) ready to upload: fresh uniform(-1, 1) data, rounded
    p.integer_inputs(M, N, K, rng)  -> (A, B) of small integers, whose product every row computes
                                    exactly (see "Small integers" below): the check of long sums
    p.reference_inputs(A, B)        -> (A, B) as float64 values the kernel sees (BF16 bits decoded)
    p.tolerance(K, abs_ref, input_roundoff=None)   the per-element bound, see below
    p.peak(peaks)                   this precision's peak from device.peak_tflops(facts) (3xTF32: a
                                    third of TF32's, three products per result)
    p.cublas(blas)                  the bound cuBLAS call (M, N, K, a, b, c) of the same precision
    tf32_round(x), tf32_truncate(x), tf32_split(x)   numpy models of the TF32 roundings and the split
    p.title, p.cublas_mode, p.baseline      what tables and charts print ("cuBLAS SGEMM")

Why the tolerances. For any order of summation, a length-K dot product computed in floating point
with unit roundoff u obeys |fl(x.y) - x.y| <= gamma_K |x|.|y|, gamma_K = K u / (1 - K u) (Higham,
Accuracy and Stability of Numerical Algorithms, 2nd ed., eq. 3.5). The reference is the float64
product of the inputs as the kernel receives them, so only the kernel's own arithmetic is measured:

  fp32         FFMA, u = 2^-24 (round to nearest). Inputs uniform in (-1, 1): a typical |a b| is 1/4,
               so the bound is about K^2 u / 4, a fraction of one product at K ~ 1000: a kernel that
               drops or repeats a single product is caught there, a wrong tile at any K.
  fp16_tensor  FP16 inputs (exact products in FP32), FP32 accumulation inside the MMA with the
               products aligned to the largest exponent and truncated, not rounded (Fasi, Higham,
               Mikaitis, Pranesh, "Numerical behavior of NVIDIA tensor cores", PeerJ CS 2021):
               up to one FP32 ulp (2u) per addition plus one bit of alignment: 4u = 2^-22 per step.
  bf16_tensor  the same accumulation as fp16_tensor (BF16 products are exact in FP32 too).
  tf32_tensor  FP32 inputs that the tensor core reads as TF32 (10 explicit mantissa bits). Each
               input is off by at most 2^-11 relative when the kernel rounds it (cvt.rna.tf32.f32),
               2^-10 when the hardware drops the low 13 bits; a product of two such inputs is off by
               at most (1 + e)^2 - 1 = 2e + e^2. Then the same accumulation as fp16_tensor:
               bound = (2e + e^2 + gamma_K(2^-22)) |A|.|B|. The input term does not grow with K: it
               is what makes TF32 results differ from FP32 ones at K = 1 already. A kernel row says
               which rounding its kernel does (Kernel.input_roundoff); the default is truncation,
               the looser of the two.

  fp32_3xtf32  FP32 in and out from three TF32 tensor-core products per k (NVIDIA calls it 3xTF32).
               Each operand is split x = big + small, big = tf32(x), small = tf32(x - big), where tf32
               rounds to the nearest TF32 (11 significant bits). Work it out in units of FP32's last
               place at x's exponent, v = 2^(E-23) with 2^E <= |x| < 2^(E+1): x is an integer number
               of v's, big one of 2^13 v (TF32's ulp at that exponent), so r = x - big is an integer
               n of v's with |n| <= 2^12 (half TF32's ulp): r is exact in FP32 (13 bits at most).
               small keeps 11 bits of n: exact for |n| < 2^11; for 2^11 <= |n| < 2^12 one bit goes,
               an error of at most 1 v, whether that bit is rounded or dropped: a kernel may hand
               x - big to the tensor core raw and let it truncate. So |x - big - small| <= v <=
               2^-23 |x| (ties away, to even, or truncated alike), and |small| <= 2^12 v <= 2^-11 |x|.
               The kernel computes big_a big_b + big_a small_b + small_a big_b, whose distance from
               a b is
                   a db + b da - da db + small_a small_b    (da = a - big_a - small_a, db likewise)
               <= (2^-23 + 2^-23 + 2^-46 + 2^-22) |a||b| = (2^-21 + 2^-46) |a||b|,
               which the form above covers with e = 2^-22 (2e + e^2 = 2^-21 + 2^-44): three products
               lose no more than one product of inputs off by 2^-22. Each product is exact: a TF32 x
               TF32 product has at most 22 significant bits, FP32 holds 24.
               The accumulation: 3K products instead of K, added by the tensor core as fp16_tensor's
               (truncating, 4u = 2^-22 per step, the model of Fasi et al. above); the terms sum to at
               most (1 + 2^-11)^2 (1 + 2^-10) |A|.|B| < (1 + 2^-8) |A|.|B|, so
                   bound = (2e + e^2 + (1 + 2^-8) gamma_3K(2^-22)) |A|.|B|,   e = 2^-22.
               A kernel that promotes its partial sums (an MMA chain over KC of K from zero, then an FP32
               FADD into a running sum, rounded to nearest: u = 2^-24) errs at most
               gamma_3KC(2^-22) + gamma_(K/KC - 1)(2^-24) relative (each chain's error is relative to
               its own terms, and the chains' terms sum to the whole), at most gamma_3K(2^-22) for
               every 1 <= KC <= K: the bound holds for any chunk; promotion makes the result better. Three
               cuBLAS TF32 calls accumulated through beta = 1 (tf32x3_cublas) add two FP32 roundings of
               2^-24 to three chains of K: inside the same bound. What the bound cannot do is tell
               3xTF32 from 1xTF32 at large K: a worst case grows like K, a typical error like sqrt(K);
               1xTF32's input rounding breaks it at small K (below a hundred or so, where most of the
               course's odd shapes are); `make accuracy` measures the typical error at every K.

  fp32_bf16x9  cuBLAS's FP32 emulation (CUBLAS_COMPUTE_32F_EMULATED_16BFX9, cuBLAS 12.9 on): each FP32
               operand is cut into three BF16 parts x = x0 + x1 + x2 (8 significant bits each: exact
               for FP32's 24, |x1| <= 2^-8 |x|, |x2| <= 2^-16 |x|), and the parts' products are summed
               on the BF16 tensor cores. With all nine products the split costs nothing; dropping the
               three smallest (x1 y2, x2 y1, x2 y2) costs at most (2^-24 + 2^-24 + 2^-32) |x y|, which the
               input form covers with e = 2^-24 (2e + e^2 >= 2^-23 + 2^-32). The accumulation is the
               tensor core's, 2^-22 a step, over at most 9K products. This bound is the check a cuBLAS
               result must pass; NVIDIA does not publish the algorithm, so it is the widest of the two
               readings. Where this cuBLAS has no emulation for the GPU it runs native FP32, far inside.

Small integers: what the bounds cannot see at long K. The bounds above are worst cases and grow like K,
while a sum of random products of both signs grows like the square root of its length. At
128 x 128 x 65536 the FP16 bound is about 260 (the worst error measured on an H100 was 1.8e-3), and a
kernel that drops a whole split of 1024 products (typically 11 off) passes. Inputs drawn from
{-2, -1, 1, 2} close that gap without a new bound: every product is an integer of magnitude at most 4,
and every partial sum, in any order, any split and any grouping, an integer of magnitude at most 4K.
Below 2^24 that is exact in FP32, and it stays exact inside a tensor core, which aligns its addends to
the largest of them (at most 4K < 2^24, so a 24-bit significand still reaches the units place) and then
truncates nothing. The inputs are exact in every type here (FP16, BF16 and TF32 hold small integers;
3xTF32's big part is the whole value and its small part zero). So a right kernel gives the float64
product bit for bit, and one product dropped, repeated or misplaced is an error of at least 1
(integer_inputs; Lab.check_exact). Zero is left out, so that every product counts. The random inputs
stay the check of precision: small integers are as exact in BF16 as in FP32.

A kernel that computes in a narrower type than it claims fails these bounds: BF16 inputs (8 bits) are
off by 2^-9, four times TF32's truncation; FP16 has TF32's mantissa but not its range, so the TF32
inputs are drawn over a wide range of magnitudes (2^-20 to 2^20, `wide_range`), which FP16 turns
into zeros and infinities.
"""
from dataclasses import dataclass

import numpy as np

from .errors import CourseError


def _gamma(K, u):
    return K * u / (1.0 - K * u)


def bf16_bits(x):
    """float32 values rounded to BF16 (nearest even), as uint16 bit patterns."""
    b = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = (b + 0x7FFF + ((b >> 16) & 1)) >> 16
    return rounded.astype(np.uint16)


def bf16_values(bits):
    """uint16 BF16 bit patterns as float64 values."""
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32).astype(np.float64)


@dataclass(frozen=True)
class Precision:
    name: str                   # the key: "fp32", "fp16_tensor", ...
    title: str                  # how tables name it
    input_dtype: type           # numpy dtype of A and B on the device
    unit_roundoff: float        # per accumulation step (see the module docstring)
    input_roundoff: float       # per input, relative (0: the kernel gets the inputs exactly)
    peak_key: str               # key in device.peak_tflops(facts)
    cublas_call: str            # method of common.cublas.Cublas
    cublas_mode: str            # the baseline's math mode, as every table says it
    baseline: str = "cuBLAS"    # the baseline's short name in a table: "cuBLAS SGEMM"
    wide_range: bool = False    # draw inputs over 2^-20 .. 2^20 (see the module docstring)
    products_per_k: int = 1     # tensor-core products per k and output: 3 for 3xTF32
    optional: bool = False      # a cuBLAS call this cuBLAS or GPU may lack: probed before use, skipped saying why

    @property
    def element_bytes(self):
        return np.dtype(self.input_dtype).itemsize

    @property
    def ladder_title(self):
        return self.title

    def _draw(self, rows, cols, rng):
        x = rng.uniform(-1.0, 1.0, size=(rows, cols))
        if self.wide_range:
            x *= np.exp2(rng.integers(-20, 21, size=(rows, 1)))   # one magnitude per row of A / B
        return x

    def to_device_values(self, x):
        """float64 values -> what A or B holds on the device."""
        if self.name == "bf16_tensor":
            return bf16_bits(x.astype(np.float32))
        return x.astype(self.input_dtype)

    def random_inputs(self, M, N, K, rng):
        """A (M x K) and B (K x N), fresh draws every call: never reused, never zeros."""
        return (self.to_device_values(self._draw(M, K, rng)), self.to_device_values(self._draw(K, N, rng)))

    def integer_inputs(self, M, N, K, rng):
        """A (M x K) and B (K x N) drawn from {-2, -1, 1, 2}, ready to upload: a right kernel computes
        their product exactly (module docstring, "Small integers"), for K up to INTEGER_K_MAX."""
        if K > INTEGER_K_MAX:
            raise CourseError(f"K = {K}: with inputs up to 2 a partial sum can reach 4K, past 2^24, where FP32 "
                              f"stops holding every integer, so the result need not be exact",
                              hint=f"check K <= {INTEGER_K_MAX} with small integers, longer K with random inputs")
        values = np.array([-2.0, -1.0, 1.0, 2.0])
        return (self.to_device_values(rng.choice(values, size=(M, K))),
                self.to_device_values(rng.choice(values, size=(K, N))))

    def reference_inputs(self, A, B):
        """The inputs as float64 values (what the kernel multiplies, before its own rounding)."""
        if self.name == "bf16_tensor":
            return bf16_values(A), bf16_values(B)
        return A.astype(np.float64), B.astype(np.float64)

    def tolerance(self, K, abs_ref, input_roundoff=None):
        """Per-element bound on |C - ref| (module docstring). abs_ref = |A|.|B| in float64."""
        e = self.input_roundoff if input_roundoff is None else input_roundoff
        n = self.products_per_k
        growth = 1.0 if n == 1 else 1.0 + 2.0 ** -8      # the small parts' products add to the sum of |terms|
        return ((2 * e + e * e + growth * _gamma(n * K, self.unit_roundoff)) * abs_ref
                + np.finfo(np.float32).tiny)

    def peak(self, peaks):
        """TFLOP/s of results: a 3xTF32 GEMM does three tensor-core products per FP32 one, so its
        ceiling is a third of the TF32 peak."""
        value = (peaks or {}).get(self.peak_key)
        return value / self.products_per_k if value else value

    def cublas(self, blas):
        """A method of common.cublas.Cublas, or "module:function" of common returning the call for blas
        (a composition of several cuBLAS calls: tf32x3_cublas)."""
        if ":" in self.cublas_call:
            import importlib
            module, function = self.cublas_call.split(":")
            return getattr(importlib.import_module(f"{__package__}.{module}"), function)(blas)
        return getattr(blas, self.cublas_call)


PRECISIONS = {p.name: p for p in [
    Precision("fp32", "FP32 (FFMA)", np.float32, 2.0 ** -24, 0.0, "fp32", "sgemm",
              "cuBLAS SGEMM, FP32 FFMA (TF32 off)", "cuBLAS SGEMM"),
    Precision("fp16_tensor", "FP16 in, FP32 accumulate (tensor cores)", np.float16, 2.0 ** -22, 0.0,
              "fp16_tensor", "hgemm", "cuBLAS GemmEx, FP16 in, FP32 accumulate and out", "cuBLAS HGEMM"),
    Precision("tf32_tensor", "FP32 in and out, TF32 tensor cores", np.float32, 2.0 ** -22, 2.0 ** -10,
              "tf32_tensor", "tf32gemm", "cuBLAS GemmEx, FP32 in and out, CUBLAS_COMPUTE_32F_FAST_TF32",
              "cuBLAS TF32", wide_range=True),
    Precision("bf16_tensor", "BF16 in, FP32 accumulate (tensor cores)", np.uint16, 2.0 ** -22, 0.0,
              "bf16_tensor", "bf16gemm", "cuBLAS GemmEx, BF16 in, FP32 accumulate and out", "cuBLAS BF16"),
    # FP32-accurate from the TF32 tensor cores: the baseline is FP32 itself (cuBLAS SGEMM), the peak a third
    # of the tensor cores' TF32 one (three products per FP32 product)
    Precision("fp32_3xtf32", "FP32 in and out, 3xTF32 tensor cores (big + small split)", np.float32, 2.0 ** -22,
              2.0 ** -22, "tf32_tensor", "sgemm", "cuBLAS SGEMM, FP32 FFMA (TF32 off)", "cuBLAS SGEMM",
              wide_range=True, products_per_k=3),
    Precision("tf32x3_cublas", "FP32 in and out, three cuBLAS TF32 GEMMs of the split operands", np.float32,
              2.0 ** -22, 2.0 ** -22, "tf32_tensor", "accuracy:composed_3xtf32",
              "3 x cuBLAS GemmEx COMPUTE_32F_FAST_TF32 (big.big + big.small + small.big, beta = 1), "
              "split on the device", "cuBLAS 3xTF32 (3 calls)", wide_range=True, products_per_k=3),
    Precision("tf32x3_cublas_presplit", "FP32 in and out, three cuBLAS TF32 GEMMs of operands split beforehand",
              np.float32, 2.0 ** -22, 2.0 ** -22, "tf32_tensor", "accuracy:composed_3xtf32_presplit",
              "3 x cuBLAS GemmEx COMPUTE_32F_FAST_TF32 as tf32x3_cublas, the split made once before the timing",
              "cuBLAS 3xTF32 (3 calls, pre-split)", wide_range=True, products_per_k=3),
    # cuBLAS's FP32 emulation on the BF16 tensor cores, a baseline for the FP32-accurate rows (see above)
    Precision("fp32_bf16x9", "FP32 in and out, cuBLAS's FP32 emulation (BF16x9)", np.float32, 2.0 ** -22,
              2.0 ** -24, "bf16_tensor", "sgemm_bf16x9",
              "cuBLAS GemmEx, FP32 in and out, CUBLAS_COMPUTE_32F_EMULATED_16BFX9, emulation strategy EAGER "
              "(native FP32 where this cuBLAS has no emulation for the GPU)", "cuBLAS FP32 emulated (BF16x9)",
              wide_range=True, products_per_k=9, optional=True),
]}

INTEGER_K_MAX = 2 ** 22 - 1   # integer_inputs: 4K < 2^24, every partial sum exact in FP32

TF32_ROUNDED = 2.0 ** -11      # Kernel.input_roundoff of a kernel that rounds with cvt.rna.tf32.f32
TF32_TRUNCATED = 2.0 ** -10    # ... of one that lets the tensor core drop the low mantissa bits
TF32_SPLIT = 2.0 ** -22        # ... of a 3xTF32 kernel (big + small, small.small dropped): see above

_TF32_MASK = np.uint32(0xFFFFE000)    # sign, exponent, the top 10 mantissa bits


def tf32_truncate(x):
    """float32 values with the low 13 mantissa bits cleared: what a tensor core reads of raw FP32."""
    b = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    return (b & _TF32_MASK).view(np.float32)


def tf32_round(x, ties="even"):
    """float32 values rounded to the nearest TF32 (cvt.rn.tf32.f32: ties to even; ties="away":
    cvt.rna), low 13 bits zero. Inf and NaN pass unchanged; a value within half a TF32 ulp of FP32's
    largest rounds to Inf, as the hardware does."""
    x = np.ascontiguousarray(x, dtype=np.float32)
    b = x.view(np.uint32).astype(np.uint64)
    add = 0x1000 if ties == "away" else 0xFFF + ((b >> 13) & 1)
    r = ((b + add) & 0xFFFFE000).astype(np.uint32).view(np.float32)
    return np.where(np.isfinite(x), r, x).astype(np.float32)


TF32_MAX = float(np.array(0x7F7FE000, np.uint32).view(np.float32))    # (2 - 2^-10) 2^127


def tf32_split(x, ties="even", small="round"):
    """(big, small): big = tf32(x), small = x - big rounded to TF32 (small="truncate": its low bits
    dropped, as a tensor core reads raw x - big), both float32 with TF32 values; x - big is exact in
    FP32 (see "fp32_3xtf32" above). A finite x is clamped to +-TF32_MAX first, so big is finite.

    An Inf or NaN x splits into big = +-1 (x's sign; -1 for a NaN, as fmaxf(NaN, -1) gives) and
    small = x. Why 1: a 3xTF32 GEMM multiplies big_x by the other operand's small part, up to 2^-11 of
    that operand. With big_x = +-TF32_MAX (this split's first form) that product overflows wherever
    the operand exceeds about 2^11, to an Inf of small's sign, which need not be the operand's: Inf +
    -Inf = NaN where FP32 gives Inf. With +-1 no product of finite parts overflows: every Inf comes
    from an Inf small part times a part of the other operand that has that operand's sign, so it is
    the Inf FP32 gives, or NaN where FP32 gives NaN too (Inf x 0, Inf - Inf, NaN). (big = Inf, small
    = 0 fails the other way: Inf x small_b = Inf x 0 = NaN whenever b is a TF32 number already.)"""
    x = np.ascontiguousarray(x, dtype=np.float32)
    finite = np.isfinite(x)
    with np.errstate(invalid="ignore"):
        unit = np.where(np.isnan(x), np.float32(-1.0), np.copysign(np.float32(1.0), x))   # a NaN: -1, as
        clamped = np.where(finite, np.clip(x, -TF32_MAX, TF32_MAX), unit)                   # fmaxf(NaN, -1)
        big = tf32_round(clamped.astype(np.float32), ties)
        rest = np.where(finite, x - big, np.float32(0)).astype(np.float32)
    rest = tf32_truncate(rest) if small == "truncate" else tf32_round(rest, ties)
    return big, np.where(finite, rest, x).astype(np.float32)


def precision(name):
    if isinstance(name, Precision):
        return name
    if name not in PRECISIONS:
        raise CourseError(f"there is no precision {name!r}", hint=f"choose one of {', '.join(PRECISIONS)}")
    return PRECISIONS[name]
