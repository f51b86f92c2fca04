"""compute-sanitizer's command line and what a missing sanitizer says (no GPU needed).

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
