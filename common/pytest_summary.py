"""`make test`'s quiet report, a pytest plugin (`pytest -p common.pytest_summary`; `make test V=1` runs
pytest without it).

    no letter per passed or skipped test: a failure's F and E still show, and its traceback in full
    one line per lab (and one for the course's own tests/): passed, failed, skipped, errors
    one line saying which GPU the GPU tests used, or why they skipped
    counts_by_lab(stats) -> {folder: {outcome: n}}   what those lines show (tests read it)
"""
import pytest

OUTCOMES = ("passed", "failed", "error", "skipped", "xfailed", "xpassed")


def where(nodeid):
    """The lab a test belongs to (its folder under labs/), or 'tests' for the course's own tests."""
    parts = nodeid.split("::")[0].replace("\\", "/").split("/")
    if len(parts) > 2 and parts[0] == "labs":
        return parts[1]
    return parts[0] if len(parts) > 1 else "tests"


@pytest.hookimpl(tryfirst=True)
def pytest_report_teststatus(report, config):
    """A passed or skipped test prints nothing (it is counted); the rest keep pytest's own letters."""
    if hasattr(report, "wasxfail"):
        return None
    if report.when == "call" and report.passed:
        return "passed", "", ""
    if report.skipped:
        return "skipped", "", ""
    return None


def counts_by_lab(stats):
    """{folder: {outcome: tests}} from the terminal reporter's stats (each test counted once per outcome)."""
    seen, out = set(), {}
    for outcome in OUTCOMES:
        for rep in stats.get(outcome, []):
            nodeid = getattr(rep, "nodeid", None)
            if not nodeid or (outcome, nodeid) in seen:
                continue
            seen.add((outcome, nodeid))
            counts = out.setdefault(where(nodeid), {})
            counts[outcome] = counts.get(outcome, 0) + 1
    return out


def lines(counts):
    """The per-lab lines, aligned: 'lab07-matmul-registers   412 passed  20 skipped'."""
    if not counts:
        return []
    width = max(len(name) for name in counts)
    out = []
    for name in sorted(counts, key=lambda n: (n == "tests", n)):
        c = counts[name]
        out.append(f"{name:<{width}}  " + "  ".join(f"{c[o]:4d} {o}" for o in OUTCOMES if c.get(o)))
    return out


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    tr = terminalreporter
    counts = counts_by_lab(tr.stats)
    for line in lines(counts):
        tr.write_line(line)
    from common.testing import GPU_TEXT
    skipped = sum(c.get("skipped", 0) for c in counts.values())
    tr.write_line(f"GPU: {GPU_TEXT}" + (f"; `make test V=1` lists the {skipped} skipped tests and why" if skipped else ""))
