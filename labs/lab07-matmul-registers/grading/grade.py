#!/usr/bin/env python3
"""`make grade` and `make grade-selftest`.

    python3 grading/grade.py [--workspace DIR] [--parts v4,v6,questions] [--arch sm_XY] [--no-gpu]
                             [--json FILE] [--seed N] [-- extra pytest arguments]
        pytest runs grading/checks.py (one test per check); then the score report: points per part,
        one line per lost check with its reason; the JSON for teachers goes to --json (default
        reports/grade/<workspace folder>.json). Exit status 0 when the grading ran, whatever the
        score; 2 when it could not (no workspace, no nvcc).
    python3 grading/grade.py selftest [--no-gpu] [--json FILE]
        the grader graded: the reference solution must score full marks, the untouched workspace
        zero on every code part, each known-wrong kernel (grading/wrong/) must lose what parts.WRONG
        says. Prints all three and exits 1 on any surprise.
"""
import argparse
import sys
from pathlib import Path

LAB = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(LAB), str(LAB.parents[1])]

from common.errors import CourseError, user_errors   # noqa: E402


class ScorePlugin:
    """Carries the options into grading/checks.py and prints the report at the end of the session."""

    def __init__(self, options):
        self.lab07_grade_options = options
        self.report = None
        self.json_path = None

    def pytest_report_header(self, config):
        o = self.lab07_grade_options
        return f"lab 7 grade: workspace {o['workspace']}"

    def pytest_terminal_summary(self, terminalreporter):
        from grading import grader
        if self.report is None:
            return
        terminalreporter.write_line("")
        for line in self.report.text().splitlines():
            terminalreporter.write_line(line)
        self.json_path = grader.write_json(self.report, self.lab07_grade_options.get("json"))
        terminalreporter.write_line(f"JSON report (for teachers): {self.json_path}")


def run_grade(args, pytest_args=()):
    import pytest
    ws = Path(args.workspace).expanduser().resolve()
    if not ws.is_dir():
        raise CourseError(f"there is no workspace at {ws}",
                          hint="create one with `make workspace`, or give yours with WORKSPACE=path")
    options = {"workspace": str(ws), "arch": args.arch, "gpu": False if args.no_gpu else None,
               "seed": args.seed, "json": args.json}
    plugin = ScorePlugin(options)
    argv = [str(LAB / "grading" / "checks.py"), "-q", "-p", "no:cacheprovider", "--rootdir", str(LAB / "grading"),
            "-o", "addopts=", "--tb=no", "-rN", *pytest_args]
    if args.parts:
        wanted = [p.strip() for p in args.parts.split(",") if p.strip()]
        argv += ["-k", " or ".join(f"{p}:" for p in wanted)]
    status = pytest.main(argv, plugins=[plugin])
    if plugin.report is None:
        print("grade: the grading did not run (see pytest's output above)", file=sys.stderr)
        return 2
    return 0 if int(status) in (0, 1) else int(status)


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    extra = []
    if "--" in argv:
        i = argv.index("--")
        argv, extra = argv[:i], argv[i + 1:]
    if argv and argv[0] == "selftest":
        ap = argparse.ArgumentParser(prog="grade.py selftest")
        ap.add_argument("--no-gpu", action="store_true")
        ap.add_argument("--json", default=None)
        args = ap.parse_args(argv[1:])
        with user_errors():
            from grading import selftest
            problems, _, _ = selftest.run(gpu=False if args.no_gpu else None, json_path=args.json)
        return 1 if problems else 0
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workspace", default=str(LAB / "workspace"))
    ap.add_argument("--parts", default=None, help="a comma list of parts (default: all)")
    ap.add_argument("--arch", default=None, help="SASS for this architecture (default: the GPU's, or sm_90)")
    ap.add_argument("--no-gpu", action="store_true", help="grade only what needs no GPU")
    ap.add_argument("--seed", type=int, default=None, help="the inputs' seed (default: fresh; GRADE_SEED too)")
    ap.add_argument("--json", default=None, help="where the JSON report goes")
    args = ap.parse_args(argv)
    with user_errors():
        return run_grade(args, extra)


if __name__ == "__main__":
    sys.exit(main())
