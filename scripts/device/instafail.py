"""pytest plugin (scripts/device/make-test.sh loads it): each failure's report appended to
$OUT/failures.txt the moment it happens, so a run cut by a time limit keeps its tracebacks."""
import os


def pytest_runtest_logreport(report):
    if report.failed:
        with open(os.path.join(os.environ.get("OUT", "."), "failures.txt"), "a") as f:
            f.write(f"===== {report.nodeid} ({report.when})\n{report.longreprtext[-6000:]}\n")
