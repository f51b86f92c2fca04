"""What the course's tests share (pytest imports every test file by its path, so nothing else is
shared between test folders):

    GPU_OK, GPU_TEXT      is there a usable CUDA GPU here, and what it is (or why not)
    needs_gpu             a pytest mark: skip, saying why, where there is no GPU
    lab_of(path)          the Lab whose folder holds `path` (a test file's __file__)
    needs_cuobjdump()     skip, saying why, where cuobjdump -sass is missing
    legality_drift(rules, record)  the recorded parameter sets that a kernel's static_asserts
                          (common.legality) judge legal where the record says illegal, or the reverse
    assert_inf_meets_large_operands_as_in_fp32(matmul, M, N, K, rng)   an FP32-in, FP32-out GEMM (a 3xTF32
                          one, say) puts C's NaNs and Infs where float64 does when an Inf meets operands of
                          1e3 to 1e9
    sheet_claim_tests(lab, claims, fine, breaks)   the two tests of a lab's test_readme_claims.py: each
                          sentence of the sheet that compares rungs holds on its table's record, and a
                          synthetic record that contradicts it is caught (common.readme_tables.Claim)
"""
from pathlib import Path

import pytest

from .device import gpu_status
from .lab import load

GPU_OK, GPU_TEXT = gpu_status()
needs_gpu = pytest.mark.skipif(not GPU_OK, reason=f"needs a CUDA GPU: {GPU_TEXT}")


def lab_of(path):
    """The lab a file belongs to: the nearest folder above it with a lab.py."""
    for d in Path(path).resolve().parents:
        if (d / "lab.py").exists():
            return load(d)
    raise LookupError(f"{path} is not inside a lab folder")


def needs_cuobjdump():
    from .errors import CourseError
    from .sass import find_cuobjdump
    try:
        find_cuobjdump()
    except CourseError as e:
        pytest.skip(f"needs cuobjdump: {e.message}")


def case_id(name, variant, shape, extra=""):
    return f"{name}{'-' + variant if variant else ''}-{'x'.join(map(str, shape))}{extra}"


def gpu_cases(kernels, shapes):
    """[(name, variant, shape)] for pytest.mark.parametrize: every variant of every kernel on every
    shape it serves (the vec/scalar rule is the row's), with readable ids."""
    cases = [(k.name, v, s) for k in kernels for v, s in k.cases(shapes)]
    return cases, [case_id(*c) for c in cases]


def build_for_every_arch(lab, kernels=None):
    """{(name, arch): ptxas resources} for the lab's own kernels on every architecture the course
    supports (and sm_90a for Hopper-only rows), compiled here: no GPU needed."""
    from .build import ALL_ARCHS
    return lab.build(kernels or lab.own(), ALL_ARCHS)


def legality_drift(rules, record):
    """[(params, recorded why, the compiler's why)] where a kernel's static_asserts (rules: a
    common.legality.Legality) and the record (a fixture of {params, why}) disagree on whether the
    parameters are legal. (The sentences may be reworded in the kernel; which sets pass may not drift.)
    Sets that name a parameter the kernel no longer has (a switch taken out) are left out."""
    import json
    probes = [p for p in json.loads(Path(record).read_text())["probes"] if set(p["params"]) <= set(rules.parameters)]
    got = rules.check([p["params"] for p in probes])
    return [(p["params"], p["why"], why) for p, why in zip(probes, got) if (p["why"] is None) != (why is None)]


def assert_inf_meets_large_operands_as_in_fp32(matmul, M, N, K, rng):
    """An Inf of either sign (in A's first column, then in B's first row) meeting operands of 1e3 to 1e9 of
    either sign: C = matmul(A, B) (float32 arrays) must have its NaNs, +Infs and -Infs where float64's
    product has them. Why these operands: a 3xTF32 split gives an operand a small part of up to 2^-11 of
    it, and the Inf's big part times that small part must not overflow to an Inf of the small part's sign,
    which need not be the operand's (common/precision.py, tf32_split)."""
    import numpy as np
    for inf_in in ("A", "B"):
        A = (rng.choice([-1.0, 1.0], (M, K)) * 10.0 ** rng.uniform(3, 9, (M, K))).astype(np.float32)
        B = (rng.choice([-1.0, 1.0], (K, N)) * 10.0 ** rng.uniform(3, 9, (K, N))).astype(np.float32)
        if inf_in == "A":
            A[:, 0] = np.where(np.arange(M) % 2, np.inf, -np.inf)
        else:
            B[0, :] = np.where(np.arange(N) % 2, np.inf, -np.inf)
        with np.errstate(invalid="ignore", over="ignore"):
            ref = A.astype(np.float64) @ B.astype(np.float64)
        got = np.asarray(matmul(A, B), dtype=np.float64)
        wrong = np.argwhere((np.isnan(got) != np.isnan(ref)) | (np.isposinf(got) != np.isposinf(ref))
                            | (np.isneginf(got) != np.isneginf(ref)))
        assert not len(wrong), (f"an Inf in {inf_in} meeting operands of 1e3..1e9: C's NaN/Inf pattern differs "
                                f"from float64's at {len(wrong)} places, first (row, col) {wrong[:5].tolist()}")


def sheet_claim_tests(lab, claims, fine, breaks, ids=None):
    """The tests of a lab's sentences that compare rungs (common.readme_tables.Claim), for the lab's
    tests/test_readme_claims.py to bind at module level. `fine()`: {spec: figures} on which every claim
    holds; `breaks[id]`: (kernel, value), the change to those figures that makes the claim untrue (a
    test that cannot fail is no test). `ids`: one per claim (default: the claim's name)."""
    from .readme_tables import contradiction
    ids = list(ids or [c.name for c in claims])

    @pytest.mark.parametrize("claim", claims, ids=ids)
    def test_the_sheet_says_only_what_its_tables_show(claim):
        problem = contradiction(lab, claim)
        assert problem is None, problem

    @pytest.mark.parametrize("claim,cid", list(zip(claims, ids)), ids=ids)
    def test_a_record_that_contradicts_a_sentence_is_caught(claim, cid):
        fig = fine()[claim.spec]
        assert claim.holds(fig, claim.at), f"the synthetic figures should bear out '{claim.sentence}'"
        kernel, value = breaks[cid]
        fig[kernel] = {at: value for at in fig[kernel]}
        assert not claim.holds(fig, claim.at), f"{kernel} at {value} % should make '{claim.sentence}' untrue"

    return test_the_sheet_says_only_what_its_tables_show, test_a_record_that_contradicts_a_sentence_is_caught
