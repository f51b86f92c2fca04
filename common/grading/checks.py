"""The tests `make grade` runs: one per check of every part, against the student's workspace.

pytest collects this file only through plugin.run_grade (what `python -m common grade` does): the
ScorePlugin gives the lab's parts (it parametrizes `part, check`) and grades the workspace once. A
check that needs a GPU on a machine without one is a skip that says so; a lost check is a failure
whose message is the reason. Not named test_*.py: the course's own test run must not grade a workspace.
"""
import pytest

from common.grading import grader


def _plugin(config):
    for plugin in config.pluginmanager.get_plugins():
        if hasattr(plugin, "grading_options"):
            return plugin
    raise pytest.UsageError("common/grading/checks.py runs through `python -m common grade --lab <lab>` (make grade)")


@pytest.fixture(scope="session")
def report(request):
    plugin = _plugin(request.config)
    selected = []                             # the parts whose checks survived -k / deselection
    for item in request.session.items:
        callspec = getattr(item, "callspec", None)
        if callspec and callspec.params.get("part") not in selected:
            selected.append(callspec.params["part"])
    return plugin.grade(selected)


def test_check(report, part, check):
    r = report.result(part, check)
    if r.status in (grader.NEEDS_GPU, grader.SKIPPED):
        pytest.skip(r.reason)
    if r.status != grader.PASS:
        pytest.fail(f"-{r.max_points} {r.reason}", pytrace=False)
