"""The grader on a real GPU (about two minutes on an H200; skipped without a GPU).

One batch, as `make grade-selftest` runs it: the reference solution must score full marks (every
correctness, racecheck and speed check included), the untouched workspace zero on every code
part, and each known-wrong kernel (its patch applied to the reference) must lose at least the checks
the lab's grading/parts.py WRONG names, for the reason it names. These assertions fail if the grader
lets a bug through. Run with -s to see the three reports; the JSON goes to reports/grade/selftest_gpu.json.
"""
import pytest

from common import grading
from common.grading import grader
from common.grading.spec import Grading
from common.testing import GPU_OK, GPU_TEXT, lab_of, needs_gpu

pytestmark = needs_gpu

LAB = lab_of(__file__)
G = Grading(LAB)


@pytest.fixture(scope="module")
def run():
    if not GPU_OK:
        pytest.skip(f"needs a CUDA GPU: {GPU_TEXT}")
    problems, reports, env = grading.run_selftest(LAB, gpu=True, progress=True)
    return {"problems": problems, "reports": reports, "env": env, "ref": reports[0], "untouched": reports[1],
            "wrong": dict(zip([w.patch for w in G.wrong], reports[2:]))}


def test_the_reference_solution_scores_full_marks_on_the_gpu(run):
    ref = run["ref"]
    lost = [f"{c.part} {c.check}: {c.reason}" for c in ref.lost() if c.part != "predictions"]
    assert not lost, "\n".join(lost)
    for p in G.code_parts:
        for c in ref.part(p.name).checks:
            assert c.status == grader.PASS, f"{p.name} {c.check} was {c.status}: {c.reason}"


def test_the_reference_runs_at_the_speed_of_the_reference(run):
    """The same kernel, timed twice in one run: the ratio is the grader's noise, far from SPEED_PCT."""
    for p in G.code_parts:
        t = run["ref"].result(p.name, "fast").details
        assert 80 <= t["pct_of_reference"] <= 125, f"{p.name}: {t}"


def test_the_untouched_workspace_scores_zero_on_the_gpu(run):
    for p in run["untouched"].parts:
        assert p.points == 0, f"{p.name}: {[c.check for c in p.checks if c.status == grader.PASS]}"
        assert run["untouched"].result(p.name, "correct").status == grader.FAIL


@pytest.mark.parametrize("wrong", G.wrong, ids=[w.name for w in G.wrong])
def test_a_known_wrong_kernel_loses_its_points_on_the_gpu(run, wrong):
    r = run["wrong"][wrong.patch]
    lost = {c.check for c in r.lost()}
    must = set(wrong.lose_here) | set(wrong.lose_on_gpu)
    assert must <= lost, f"{wrong.patch} kept {sorted(must - lost)}: " + "; ".join(r.lost_lines())
    key = r.result(wrong.part, wrong.key_check)
    assert wrong.reason.lower() in key.reason.lower(), f"{wrong.key_check}: {key.reason}"
    assert r.part(wrong.part).points < G.part(wrong.part).max_points


def test_the_selftest_finds_no_surprise(run):
    assert run["problems"] == []
