"""The tests `make grade` runs: one per check of every part, against the student's workspace.

Run it through `python3 grading/grade.py` (what `make grade` does): that passes the workspace and
prints the score report after the tests. A check that needs a GPU on a machine without one is a
skip that says so; a lost check is a failure whose message is the reason.

This file is deliberately not named test_*.py: the course's own test run must not grade a workspace.
"""
import os
import sys
from pathlib import Path

import pytest

LAB = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(LAB), str(LAB.parents[1])]

from grading import grader                  # noqa: E402
from grading import parts as P              # noqa: E402

CHECKS = [(p.name, c.name) for p in P.all_parts() for c in p.checks]


def _options(config):
    """The options grade.py passed (its plugin), or the defaults for a bare `pytest grading/checks.py`."""
    for plugin in config.pluginmanager.get_plugins():
        if hasattr(plugin, "lab07_grade_options"):
            return plugin, plugin.lab07_grade_options
    return None, {"workspace": os.environ.get("LAB07_WORKSPACE", str(LAB / "workspace"))}


@pytest.fixture(scope="session")
def report(request):
    plugin, opts = _options(request.config)
    selected = []                             # the parts whose checks survived -k / deselection
    for item in request.session.items:
        callspec = getattr(item, "callspec", None)
        if callspec and callspec.params.get("part") not in selected:
            selected.append(callspec.params["part"])
    env = grader.environment(gpu=opts.get("gpu"), arch=opts.get("arch"), seed=opts.get("seed"))
    job = grader.workspace_job(opts["workspace"], parts=selected or None)
    rep = grader.grade_many([job], env)[0]
    if plugin is not None:
        plugin.report = rep
    return rep


@pytest.mark.parametrize("part,check", CHECKS, ids=[f"{p}:{c}" for p, c in CHECKS])
def test_check(report, part, check):
    r = report.result(part, check)
    if r.status in (grader.NEEDS_GPU, grader.SKIPPED):
        pytest.skip(r.reason)
    if r.status != grader.PASS:
        pytest.fail(f"-{r.max_points} {r.reason}", pytrace=False)
