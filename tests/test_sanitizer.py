"""compute-sanitizer's command line, what a missing sanitizer says, and how make sanitize runs each
tool: a run that hangs is stopped and the launch it was in named, a tool's own environment comes
from the lab's table (no GPU needed).

The parser is tested on real sanitizer output (clean runs and planted bugs) in
labs/lab07-matmul-registers/tests/test_profiling_fixtures.py."""
import pytest

from common import sanitizer
from common.errors import CourseError


@pytest.mark.parametrize("tool", sanitizer.TOOLS)
def test_every_tool_fails_the_run_on_a_finding_and_prints_enough(tool):
    argv = sanitizer.command("compute-sanitizer", tool, ["python3", "lab07.py", "profile", "--sanitize-run"])
    assert argv[argv.index("--tool") + 1] == tool
    assert argv[argv.index("--error-exitcode") + 1] == "1"
    assert int(argv[argv.index("--print-limit") + 1]) >= 100
    assert argv[-4:] == ["python3", "lab07.py", "profile", "--sanitize-run"]


def test_racecheck_reports_one_finding_per_race():
    argv = sanitizer.command("compute-sanitizer", "racecheck", ["prog"])
    assert argv[argv.index("--racecheck-report") + 1] == "analysis"
    assert "--racecheck-report" not in sanitizer.command("compute-sanitizer", "memcheck", ["prog"])


def test_memcheck_padding_puts_a_guard_after_every_allocation():
    argv = sanitizer.command("compute-sanitizer", "memcheck", ["prog"], padding=65536)
    assert argv[argv.index("--padding") + 1] == "65536" and argv[-1] == "prog"
    assert "--padding" not in sanitizer.command("compute-sanitizer", "memcheck", ["prog"])
    with pytest.raises(ValueError):       # a memcheck option: the other tools would refuse it
        sanitizer.command("compute-sanitizer", "racecheck", ["prog"], padding=65536)


def test_padding_is_used_only_when_the_sanitizer_lists_it(tmp_path):
    """Detected from `compute-sanitizer --help` (its line reads `--padding arg (=0) ...`)."""
    for name, listed in (("new", True), ("old", False)):
        exe = tmp_path / name
        help_line = "  --padding arg (=0)   Size in bytes for padding buffer" if listed else "  --leak-check arg"
        exe.write_text(f"#!/bin/sh\necho '{help_line}'\n")
        exe.chmod(0o755)
        assert sanitizer.supports_padding(str(exe)) is listed
    assert sanitizer.supports_padding(str(tmp_path / "missing")) is False


def test_unknown_tool_is_refused():
    with pytest.raises(ValueError):
        sanitizer.command("compute-sanitizer", "leakcheck", ["prog"])


def test_missing_sanitizer_says_where_it_comes_from(monkeypatch):
    monkeypatch.setattr(sanitizer.shutil, "which", lambda name: None)
    monkeypatch.setattr(sanitizer.os.path, "isfile", lambda path: False)
    with pytest.raises(CourseError) as e:
        sanitizer.find_sanitizer()
    assert "compute-sanitizer is not installed" in e.value.message and "CUDA toolkit" in e.value.hint


def test_a_run_without_a_summary_has_not_finished():
    found = sanitizer.parse("the program crashed before the sanitizer could print anything\n", "memcheck", ["k"])
    assert not found.finished and not found.clean


def test_a_report_is_owned_by_the_first_known_kernel_it_names():
    report = "Invalid __global__ write of size 4 bytes\nat sgemm_v6_vec+0x1a0 in v6.cu:88"
    assert sanitizer.owner(report, ["sgemm_v6", "sgemm_v6_vec"]) == "sgemm_v6_vec"   # whole names only
    assert sanitizer.owner(report, ["hgemm_t3"]) == "sgemm_v6_vec"                   # any 'at NAME+0x..'
    assert sanitizer.owner("Invalid __global__ write of size 4 bytes", ["k"]) is None


def test_a_race_in_a_device_function_is_owned_by_its_source_file():
    """Recorded on the H200 (the grader's racecheck batch): racecheck names the templated body
    `void sgemm_v6_body<(bool)1>(int, ...)`, not the entry point; the file tells whose it is."""
    from pathlib import Path
    text = (Path(__file__).resolve().parents[1] / "labs" / "lab07-matmul-registers" / "tests" / "fixtures"
            / "grader_racecheck_batch_h200.txt").read_text()
    found = sanitizer.parse(text, "racecheck", ["sgemm_v6_vec", "sgemm_v6_scalar"],
                            {"v6_missing_syncthreads.cu": "v6"})
    assert set(found.errors) == set(found.warnings) == {"v6 (v6_missing_syncthreads.cu)"}
    assert found.total_errors == sum(found.errors.values()) == 3
    without_files = sanitizer.parse(text, "racecheck", ["sgemm_v6_vec"])
    assert set(without_files.errors) == {"sgemm_v6_body"}


# --- make sanitize's runs: a hang is stopped and named; a tool's own environment -------------------

def _plan():
    """Two entry points, two and one shapes: the order sanitize_run launches them in."""
    from types import SimpleNamespace
    k = SimpleNamespace(label=lambda v: f"k/{v}")
    return [(k, "vec", "k_vec", [(8, 8, 8), (16, 8, 8)]), (k, "scalar", "k_scalar", [(1, 1, 8)])]


def _clean_results(plan, **override):
    from common.sanitizer import TOOLS, Findings
    launched = {entry: len(shapes) for _, _, entry, shapes in plan}
    out = {tool: (Findings(tool, total_errors=0), launched, 0, f"reports/sanitize/{tool}.txt") for tool in TOOLS}
    out.update(override)
    return out


def test_a_run_killed_at_its_timeout_names_the_launch_it_was_in():
    from common import profiling
    from common.sanitizer import Findings
    plan = _plan()
    hung = (Findings("racecheck"), {"k_vec": 1}, None, "reports/sanitize/racecheck.txt")   # one launch done, no summary
    rows, problems = profiling.summarize(plan, _clean_results(plan, racecheck=hung), timeout_s=7)
    assert any(p.startswith("racecheck: stopped after 7 s, in the launch of k_vec 16x8x8") for p in problems), problems
    assert not any("printed no summary" in p for p in problems)     # said once, as the stop it was
    assert next(r for r in rows if r["entry"] == "k_vec")["racecheck"] == "ran 1/2"
    assert profiling.next_launch(plan, {"k_vec": 2}) == "k_scalar 1x1x8"
    assert profiling.next_launch(plan, {"k_vec": 2, "k_scalar": 1}) is None


def test_run_tool_kills_a_run_past_its_timeout_with_what_it_started_and_keeps_its_output(tmp_path):
    import subprocess
    import sys
    import time
    from common import profiling
    pid_file = tmp_path / "child.pid"
    prog = (f"import subprocess, sys, time; c = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); "
            f"open({str(pid_file)!r}, 'w').write(str(c.pid)); print('sanitize-run: launched k_vec 8x8x8', flush=True); "
            f"time.sleep(60)")
    t0 = time.monotonic()
    text, status = profiling.run_tool([sys.executable, "-c", prog], tmp_path, None, timeout_s=2)
    assert status is None and time.monotonic() - t0 < 20
    assert "sanitize-run: launched k_vec 8x8x8" in text
    child = int(pid_file.read_text())
    gone = subprocess.run(["ps", "-o", "stat=", "-p", str(child)], capture_output=True, text=True).stdout.strip()
    assert gone in ("", "Z"), f"the program's own child {child} is still running: {gone}"
    text, status = profiling.run_tool([sys.executable, "-c", "print('done')"], tmp_path, None, timeout_s=20)
    assert (text, status) == ("done\n", 0)


def test_a_tools_environment_comes_from_the_labs_table_with_its_reason():
    from types import SimpleNamespace
    from common import profiling
    table = SimpleNamespace(SANITIZE_ENV={"racecheck": ({"TWO_LAUNCHES": "1"}, "racecheck sees shared memory only")})
    lab = SimpleNamespace(option=lambda name, default=None: getattr(table, name, default))
    assert profiling.tool_env(lab, "racecheck") == ({"TWO_LAUNCHES": "1"}, "racecheck sees shared memory only")
    assert profiling.tool_env(lab, "memcheck") == ({}, "")
    bare = SimpleNamespace(option=lambda name, default=None: default)
    assert profiling.tool_env(bare, "racecheck") == ({}, "")
