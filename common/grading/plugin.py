"""`make grade`: pytest runs common/grading/checks.py over the workspace (one test per check), quietly;
what the student reads is the score report.

    ScorePlugin(g, options)   parametrizes checks.py with the lab's parts, grades the workspace once
                              (the `report` fixture asks it), keeps the Report
    run_grade(g, args)        -> exit status: 0 when the grading ran, whatever the score; 2 when it
                              could not. A CourseError (no workspace, no nvcc) is raised as itself.

pytest's own output (progress dots, "40 failed, 18 skipped") is kept back: a lost point is a failed
test there, which is not an error of the run. It is printed only when the grader itself failed (a
fixture error, a crash inside a check), with the line that says so.
"""
import contextlib
import io
import sys
from pathlib import Path

from ..errors import CourseError
from ..report import make_command
from . import grader

CHECKS_FILE = Path(__file__).resolve().parent / "checks.py"


class ScorePlugin:
    def __init__(self, g, options):
        self.g = g
        self.grading_options = options
        self.report = None
        self.error = None            # a CourseError the grading raised
        self.crashes = []            # checks that ended in an exception of the grader's own

    def pytest_generate_tests(self, metafunc):
        if {"part", "check"} <= set(metafunc.fixturenames):
            wanted = self.grading_options.get("parts")
            pairs = [(p.name, c.name) for p in self.g.parts if not wanted or p.name in wanted for c in p.checks]
            metafunc.parametrize("part,check", pairs, ids=[f"{p}:{c}" for p, c in pairs])

    def grade(self, selected):
        o = self.grading_options
        try:
            env = grader.environment(self.g, gpu=o.get("gpu"), arch=o.get("arch"), seed=o.get("seed"))
            job = grader.workspace_job(self.g, o["workspace"], parts=selected or o.get("parts"))
            self.report = grader.grade_many(self.g, [job], env, progress=o.get("progress", True))[0]
        except CourseError as e:
            self.error = e
            raise
        return self.report

    def pytest_runtest_makereport(self, item, call):
        e = call.excinfo
        if e is not None and not e.errisinstance(pytest_outcomes()) and self.error is None:
            self.crashes.append(f"{item.nodeid}: {e.typename}: {e.value}")


def pytest_outcomes():
    import pytest
    return (pytest.fail.Exception, pytest.skip.Exception)


def run_grade(g, args, pytest_args=()):
    import pytest
    ws = Path(args.workspace).expanduser().resolve() if args.workspace else g.lab.dir / "workspace"
    if not ws.is_dir():
        raise CourseError(f"there is no workspace at {ws}",
                          hint=f"create one with `{make_command('workspace')}`, or give yours with WORKSPACE=path")
    parts = [p.strip() for p in args.parts.split(",") if p.strip()] if args.parts else None
    for p in parts or []:
        g.part(p)                     # CourseError naming the parts
    options = {"workspace": str(ws), "arch": args.arch, "gpu": False if args.no_gpu else None,
               "seed": args.seed, "parts": parts}
    plugin = ScorePlugin(g, options)
    # -s: the grader's own progress ("[grade] compiling ...") reaches stderr as it happens; pytest's
    # output on stdout is still kept back (redirected below)
    argv = [str(CHECKS_FILE), "-q", "-s", "-p", "no:cacheprovider", "--rootdir", str(CHECKS_FILE.parent),
            "-o", "addopts=", "--import-mode=importlib", "--tb=short", *pytest_args]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        status = int(pytest.main(argv, plugins=[plugin]))
    if plugin.error is not None:
        raise plugin.error
    if plugin.report is None or plugin.crashes or status not in (0, 1):
        sys.stdout.write(out.getvalue())
        what = "; ".join(plugin.crashes[:3]) if plugin.crashes else "see pytest's output above"
        print(f"grade: the grader itself failed ({what})", file=sys.stderr)
        return 2
    print(plugin.report.text())
    path = grader.write_json(g, plugin.report, args.json)
    print(f"JSON report (for teachers): {path}")
    return 0
