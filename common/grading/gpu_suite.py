"""The grader graded on a real GPU: the tests every lab with exercises runs under `make test` (skipped,
with the reason, where there is no GPU). A lab's tests/test_grading_gpu.py imports them:

    from common.grading.gpu_suite import *   # noqa: F401,F403

and they bind to the lab that holds that file. One batch per lab, as `make grade-selftest` runs it:
  - the reference solution scores full marks (correctness, racecheck and speed included);
  - it runs at the reference's own speed within the grader's noise (the same kernel, timed twice);
  - the untouched workspace scores zero on every code part, and is wrong on the GPU;
  - each known-wrong kernel (its patch applied to the reference) loses at least the checks its
    WRONG row names, the first of them for the reason it names, and so scores below the part's maximum;
  - the self-test's own expectations hold (selftest.expectations: nothing unexpected).
The JSON of the batch goes to the lab's reports/grade/selftest_gpu.json.

They time kernels (the "fast" and "bandwidth" checks compare the student's kernel with the reference
in one run), so they are marked gpu_timed: `make test` runs them after every other test, with
GRADE_GPU_LOCK set, so that one lab's GPU phase runs at a time and nothing else shares the GPU with it
(on the H200, 16 pytest workers beside lab 7a's selftest timed its reference at 125 % of itself).
"""
import pytest

from . import grader, selftest
from .spec import Grading
from ..testing import GPU_OK, GPU_TEXT, lab_of

pytestmark = pytest.mark.gpu_timed      # a lab's `import *` takes the mark with the tests
_RUNS = {}


def _grading(path):
    return Grading(lab_of(path))


def pytest_generate_tests(metafunc):
    if "wrong" in metafunc.fixturenames:
        g = _grading(metafunc.module.__file__)
        metafunc.parametrize("wrong", g.wrong, ids=[w.name for w in g.wrong])


@pytest.fixture(scope="module")
def graded(request):
    """(Grading, the batch's results) for the lab of the test file: run once per file."""
    if not GPU_OK:
        pytest.skip(f"needs a CUDA GPU: {GPU_TEXT}")
    g = _grading(request.module.__file__)
    arch = g.lab.gpu_arch()
    cannot = [g.lab.kernel(p.kernel).unsupported(arch) for p in g.code_parts if p.kernel]
    if any(cannot):                  # a T4 and lab 7a: the parts' kernels need sm_80
        pytest.skip(f"this GPU ({arch}) cannot run this lab's graded kernels: {next(filter(None, cannot))}")
    if g.lab.dir not in _RUNS:
        problems, reports, env = selftest.run(g, gpu=True, progress=True)
        _RUNS[g.lab.dir] = {"problems": problems, "ref": reports[0], "untouched": reports[1],
                            "wrong": dict(zip([w.patch for w in g.wrong], reports[2:]))}
    return g, _RUNS[g.lab.dir]


def test_the_reference_solution_scores_full_marks_on_the_gpu(graded):
    g, run = graded
    lost = [f"{c.part} {c.check}: {c.reason}" for c in run["ref"].lost() if c.part != "predictions"]
    assert not lost, "\n".join(lost)
    for p in g.code_parts:
        for c in run["ref"].part(p.name).checks:
            assert c.status == grader.PASS, f"{p.name} {c.check} was {c.status}: {c.reason}"


def test_the_reference_runs_at_the_speed_of_the_reference(graded):
    """The same kernel timed twice in one run: the ratio is the grader's noise, far from SPEED_PCT."""
    g, run = graded
    for p in g.code_parts:
        if not any(c.kind == "fast" for c in p.checks):
            continue
        t = run["ref"].result(p.name, next(c.name for c in p.checks if c.kind == "fast")).details
        assert 80 <= t["pct_of_reference"] <= 125, f"{p.name}: {t}"


def test_the_untouched_workspace_scores_zero_on_the_gpu(graded):
    g, run = graded
    for p in run["untouched"].parts:
        assert p.points == 0, f"{p.name}: {[c.check for c in p.checks if c.status == grader.PASS]}"


def test_a_known_wrong_kernel_loses_its_points_on_the_gpu(graded, wrong):
    g, run = graded
    r = run["wrong"][wrong.patch]
    lost = {c.check for c in r.lost()}
    must = set(wrong.lose_here) | set(wrong.lose_on_gpu)
    assert must <= lost, f"{wrong.patch} kept {sorted(must - lost)}: " + "; ".join(r.lost_lines())
    if wrong.key_check:
        key = r.result(wrong.part, wrong.key_check)
        assert wrong.said_in(key.reason), f"{wrong.key_check}: {key.reason}"
    assert r.part(wrong.part).points < g.part(wrong.part).max_points


def test_the_selftest_finds_no_surprise(graded):
    g, run = graded
    assert run["problems"] == []
