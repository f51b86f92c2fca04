"""The grader's GPU worker, its CPU side: `judge()` (common/grading/gpu.py) and the verdict the parent
draws from it (grader._correct, grader.case_reason), fed synthetic results for every kernel row of
every graded code part of every lab. No GPU: the results are made here from the same inputs the worker
would upload, so a bug in the worker's arithmetic (a tolerance built from the wrong field of the row,
a mask that misses the poison) fails CI instead of failing a whole lab on the first GPU that runs it.

Each row meets six results: exact, within tolerance, one element over it, a NaN computed from the
guards, a row never written, and a word written past the end of C; then the re-check after timing
(judge on a subset of rows) and the parent's verdict over all of them.
"""
from types import SimpleNamespace

import numpy as np
import pytest

from common.check import NAN_BITS
from common.grading import gpu, grader
from common.grading.spec import Grading, has_grading
from common.lab import all_lab_dirs, load

GUARD_NAN_BITS = 0x7FC0BAD0        # a NaN the kernel computed (from the NaN around A and B), not the poison


def _graded_rows():
    out = []
    for d in all_lab_dirs():
        lab = load(d)
        if not has_grading(lab):
            continue
        g = Grading(lab)
        for part in g.code_parts:
            if not part.kernel:          # a part graded without a kernel of its own (a dispatcher's rules)
                continue
            out.append(pytest.param(lab, g, part, id=f"{lab.short}-{part.name}"))
    return out


ROWS = _graded_rows()


def test_every_lab_with_exercises_is_covered_here():
    graded = {load(d).short for d in all_lab_dirs() if has_grading(load(d))}
    assert graded and {p.values[0].short for p in ROWS} == graded


def _problem(k, shape, rng):
    M, N, K = shape
    A, B = k.prec.random_inputs(M, N, K, rng)
    return SimpleNamespace(k=k, A=A, B=B, K=K, M=M, N=N)


def _exact_and_tol(prob):
    """The float64 product the worker compares with, and the per-element tolerance it allows."""
    k = prob.k
    A, B = k.prec.reference_inputs(prob.A, prob.B)
    A64, B64 = A.astype(np.float64), B.astype(np.float64)
    ref, abs_ref = A64 @ B64, np.abs(A64) @ np.abs(B64)
    return ref, k.prec.tolerance(prob.K, abs_ref, k.roundoff)


def _shape(g, part):
    """The largest of the part's shapes that has at least two rows and two columns (every case below
    needs a second row to leave alone)."""
    shapes = [s for s in g.shapes_for(part) if s[0] >= 2 and s[1] >= 2]
    return max(shapes, key=lambda s: s[0] * s[1])


@pytest.mark.parametrize("lab,g,part", ROWS)
def test_judge_gives_each_synthetic_result_its_verdict_and_reason(lab, g, part):
    k = lab.kernel(part.kernel)
    rng = np.random.default_rng(7)
    prob = _problem(k, _shape(g, part), rng)
    ref, tol = _exact_and_tol(prob)
    M, N = ref.shape
    label = f"{k.name} {M}x{N}x{prob.K}"

    def judged(C, before=0, after=0, rows=None, when=""):
        return gpu.judge(prob, C.astype(np.float32), before, after, label, rows=rows, when=when)

    exact = ref.astype(np.float32)
    r = judged(exact)
    assert r["ok"], r["verdict"]
    assert r["unwritten"] == r["computed_nan"] == r["bad"] == 0

    # within tolerance: every element moved by half of its own bound (float32 rounding of the moved
    # value adds at most half an ulp, far below the bound's floor of K ulps)
    signs = rng.choice([-1.0, 1.0], size=ref.shape)
    near = ref + 0.5 * tol * signs
    r = judged(near)
    assert r["ok"], r["verdict"]

    i, j = M // 2, N // 3
    wrong = exact.copy()
    wrong[i, j] = ref[i, j] + 3 * tol[i, j] + 1e-3 * abs(ref[i, j]) + 1e-30
    r = judged(wrong)
    assert not r["ok"] and r["bad"] == 1 and r["worst_index"] == [i, j], r
    reason = grader.case_reason(r)
    assert f"({i}, {j})" in reason and str(M) in reason

    nan = exact.copy()
    nan.view(np.uint32)[i, j] = GUARD_NAN_BITS
    r = judged(nan)
    assert not r["ok"] and r["computed_nan"] == 1 and r["unwritten"] == 0 and r["first_nan"] == [i, j], r
    assert "NaN" in grader.case_reason(r) and f"({i}, {j})" in grader.case_reason(r)

    unwritten = exact.copy()
    unwritten.view(np.uint32)[M - 1, :] = NAN_BITS
    r = judged(unwritten)
    assert not r["ok"] and r["unwritten"] == N and r["computed_nan"] == 0 and r["first_unwritten"] == [M - 1, 0], r
    assert "never wrote" in grader.case_reason(r) and f"({M - 1}, 0)" in grader.case_reason(r)

    r = judged(exact, after=3)
    assert not r["ok"] and r["outside_after"] == 3, r
    assert "outside C" in grader.case_reason(r) and "after its end" in grader.case_reason(r)
    r = judged(exact, before=1)
    assert not r["ok"] and "before its start" in grader.case_reason(r)

    # the re-check after timing compares some rows only: a wrong row among them fails, one outside passes
    rows = np.array([0, i])
    r = judged(wrong, rows=rows, when="after timing")
    assert not r["ok"] and r["worst_index"] == [i, j] and r["rows_checked"] == 2, r
    assert "after timing" in grader.case_reason(r)
    assert judged(wrong, rows=np.array([0, M - 1]))["ok"]

    # the parent's verdict over a whole run: right only when every case and both re-checks are
    ok_case = judged(exact)
    run = {"cases": [ok_case, ok_case], "after_timing": ok_case, "fresh": ok_case, "crash": None}
    assert grader._correct(run)[0] == grader.PASS
    for bad in (judged(wrong), judged(nan), judged(unwritten), judged(exact, after=1)):
        status, why, _ = grader._correct({**run, "cases": [ok_case, bad]})
        assert status == grader.FAIL and why.startswith(grader.case_reason(bad)), why
    status, why, _ = grader._correct({**run, "fresh": judged(wrong, rows=rows, when="after timing, on fresh inputs")})
    assert status == grader.FAIL and "no cached result" in why
    assert grader._correct({**run, "fresh": None})[0] == grader.FAIL


@pytest.mark.parametrize("lab,g,part", ROWS)
def test_the_tolerance_the_worker_uses_is_the_rows_own(lab, g, part):
    """The bug of 2026-12-04: the worker passed the row's input_roundoff (for lab 7a a function of the
    tiling) to the tolerance, where Kernel.roundoff resolves it; it crashed on the GPU alone."""
    k = lab.kernel(part.kernel)
    prob = _problem(k, (3, 4, 5), np.random.default_rng(1))
    ref, tol = _exact_and_tol(prob)
    r = gpu.judge(prob, ref.astype(np.float32), 0, 0, "x")
    assert r["ok"] and np.isfinite(r["tol"]) and r["tol"] > 0
    assert r["tol"] == pytest.approx(float(tol[tuple(r["worst_index"])]))


def test_every_lab_with_exercises_runs_its_grade_selftest_on_the_gpu_under_make_test():
    """Each graded lab's tests/test_grading_gpu.py takes the suite of common/grading/gpu_suite.py
    (reference full marks, untouched zero, each known-wrong kernel loses what it must)."""
    missing = []
    for d in all_lab_dirs():
        lab = load(d)
        if not has_grading(lab):
            continue
        f = lab.dir / "tests" / "test_grading_gpu.py"
        if not f.exists() or "from common.grading.gpu_suite import *" not in f.read_text():
            missing.append(lab.short)
    assert not missing, f"labs with exercises but no GPU selftest under make test: {missing}"


def test_the_gpu_suite_collects_a_test_per_known_wrong_kernel_and_skips_without_a_gpu():
    import subprocess
    import sys
    from common.testing import GPU_OK
    from tests.conftest import ROOT
    for d in all_lab_dirs():
        lab = load(d)
        if not has_grading(lab):
            continue
        f = lab.dir / "tests" / "test_grading_gpu.py"
        out = subprocess.run([sys.executable, "-m", "pytest", "-q", "--collect-only", "-p", "no:xdist", str(f)],
                             cwd=ROOT, capture_output=True, text=True)
        assert out.returncode == 0, out.stdout + out.stderr
        n_wrong = len(Grading(lab).wrong)
        assert out.stdout.count("test_a_known_wrong_kernel_loses_its_points_on_the_gpu[") == n_wrong, out.stdout


@pytest.mark.parametrize("lab,g,part", ROWS[:1])
def test_a_wrong_result_is_described_by_where_it_is_wrong_never_by_the_model(lab, g, part):
    """Every other row of C wrong: the reason names the rows' pattern (the symptom), and no kernel or
    function of the reference."""
    k = lab.kernel(part.kernel)
    prob = _problem(k, _shape(g, part), np.random.default_rng(3))
    ref, tol = _exact_and_tol(prob)
    C = ref.astype(np.float32)
    C[1::2, :] += np.float32(1.0) + 10 * tol[1::2, :].astype(np.float32)
    r = gpu.judge(prob, C, 0, 0, f"{k.name} x")
    assert not r["ok"] and r["pattern"]["rows"] == ref.shape[0] // 2
    reason = grader.case_reason(r)
    assert "odd rows" in reason, reason
    assert gpu.judge(prob, ref.astype(np.float32), 0, 0, "x")["pattern"] is None


def test_loading_a_labs_grading_refuses_a_probe_check_without_its_program(monkeypatch):
    """Said once, in the loader (spec.Grading): a probe check needs its PROBES row and its program."""
    from common.errors import CourseError
    from common.grading import hostprobe
    lab = next(load(d) for d in all_lab_dirs() if has_grading(load(d)) and
               any(c.kind == "probe" for p in Grading(load(d)).code_parts for c in p.checks))
    Grading(lab)                                     # as committed: every probe has its program
    monkeypatch.setattr(hostprobe, "probe_for", lambda g, part, check: hostprobe.Probe("missing.cu", lambda r: (True, "")))
    with pytest.raises(CourseError, match="no program probes/missing.cu"):
        Grading(lab)
