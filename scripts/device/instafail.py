"""pytest plugin (scripts/device/make-test.sh loads it), writing under $OUT as each test ends, so a run
cut by a time limit keeps what it learnt:
  failures.txt    each failure's report, the moment it happens
  durations.tsv   seconds, outcome and node id of every test phase that took 1 s or more: where a
                  GPU session's minutes go (sort -rn durations.tsv | head)"""
import os

SLOW_S = 1.0


def _out(name):
    return os.path.join(os.environ.get("OUT", "."), name)


def pytest_runtest_logreport(report):
    if report.failed:
        with open(_out("failures.txt"), "a") as f:
            f.write(f"===== {report.nodeid} ({report.when})\n{report.longreprtext[-6000:]}\n")
    if report.duration >= SLOW_S:
        with open(_out("durations.tsv"), "a") as f:
            f.write(f"{report.duration:.1f}\t{report.outcome}\t{report.when}\t{report.nodeid}\n")
