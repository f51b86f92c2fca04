"""ncu's command line and its failures, each turned into one clear message (no GPU needed).

The error texts are ncu 2025.3.1's own (fixtures/ncu-2025.3.1/err_nvgpuctrperm_strings.txt, and the
LibraryNotLoaded line recorded on a virtualized GPU host, tooling-facts 1.9). The CSV parser is
tested on real ncu output in labs/lab07-matmul-registers/tests/test_profiling_fixtures.py."""
from pathlib import Path

import pytest

from common import ncu
from common.errors import CourseError

REFERENCE = Path(__file__).parent / "fixtures" / "ncu-2025.3.1"
PERMISSION_TEXTS = [l for l in (REFERENCE / "err_nvgpuctrperm_strings.txt").read_text().splitlines() if l.strip()]
LIBRARY_NOT_LOADED_TEXT = "Failed to initialize the profiler: LibraryNotLoaded"


@pytest.mark.parametrize("text", PERMISSION_TEXTS, ids=["with device number", "without"])
def test_counter_permission_error_says_run_as_root_or_set_the_driver_option(text):
    printed = "==ERROR== " + text.replace("%u", "0")
    error = ncu.failure(f"==PROF== Connected to process 4242\n{printed}\n", returncode=1)
    assert isinstance(error, ncu.CountersUnavailable)
    assert "ERR_NVGPUCTRPERM" in error.message and "\n" not in error.message
    assert "root" in error.hint and "NVreg_RestrictProfilingToAdminUsers=0" in error.hint


def test_missing_profiler_library_falls_back_to_sass_and_bench():
    error = ncu.failure(f"==ERROR== {LIBRARY_NOT_LOADED_TEXT}\n", returncode=1)
    assert isinstance(error, ncu.CountersUnavailable)
    assert "hardware counters are unavailable on this machine" in error.message
    assert "make sass" in error.hint and "make bench" in error.hint


def test_permission_error_wins_even_when_the_program_exits_zero():
    assert isinstance(ncu.failure("==ERROR== " + PERMISSION_TEXTS[1], returncode=0), ncu.CountersUnavailable)


def test_any_other_ncu_error_line_is_quoted_with_the_kernel_name():
    line = "==ERROR== (whatever ncu reports)"      # not a recorded text: any ==ERROR== line will do
    error = ncu.failure(f"{line}\n", returncode=1, what="v6")
    assert isinstance(error, CourseError) and not isinstance(error, ncu.CountersUnavailable)
    assert "v6" in error.message and "(whatever ncu reports)" in error.message


def test_missing_ncu_says_where_it_comes_from(monkeypatch):
    monkeypatch.setattr(ncu.shutil, "which", lambda name: None)
    monkeypatch.setattr(ncu.os.path, "isfile", lambda path: False)
    with pytest.raises(CourseError) as e:
        ncu.find_ncu()
    assert "ncu" in e.value.message and "not installed" in e.value.message
    assert "CUDA toolkit" in e.value.hint and "make sass" in e.value.hint


@pytest.mark.parametrize("options", [dict(), dict(kernel="sgemm_v6_vec", launch_skip=1),
                                     dict(profile_from_start=False, launch_count=4),
                                     dict(section_set="full", export="r.ncu-rep"), dict(page="details")])
def test_every_command_leaves_the_clocks_alone(options):
    argv = ncu.command("ncu", ["python3", "lab07.py"], metrics=["gpu__time_duration.sum"], **options)
    assert argv[argv.index("--clock-control") + 1] == "none"
    assert argv[-2:] == ["python3", "lab07.py"]


def test_kernel_filter_skip_and_count_reach_ncu():
    argv = ncu.command("ncu", ["prog"], kernel="sgemm_v6_vec", launch_skip=1, launch_count=1,
                       metrics=["a.sum", "b.ratio"])
    joined = " ".join(argv)
    assert "--kernel-name sgemm_v6_vec" in joined and "--launch-skip 1" in joined and "--launch-count 1" in joined
    assert "--metrics a.sum,b.ratio" in joined and "--csv --page raw --print-units base" in joined


def test_profiling_from_a_marked_range():
    argv = ncu.command("ncu", ["prog"], profile_from_start=False, launch_count=4)
    assert argv[argv.index("--profile-from-start") + 1] == "off"
    assert "--kernel-name" not in argv and "--launch-skip" not in argv


@pytest.mark.parametrize("text,value", [("1,234", 1234), ("3.5", 3.5), ("n/a", None), ("", None),
                                        ("(256, 1, 1)", "(256, 1, 1)")])
def test_numbers_lose_their_thousands_separators(text, value):
    assert ncu.number(text) == value


def test_units_convert_and_unknown_units_are_refused():
    assert ncu.to_microseconds(2500, "nsecond") == pytest.approx(2.5)
    assert ncu.to_gigabytes_per_second(3.2, "Tbyte/second") == pytest.approx(3200)
    assert ncu.to_megahertz(1779345349.66, "hz") == pytest.approx(1779.345)    # --print-units base
    assert ncu.to_megahertz(1.98e9, "cycle/second") == pytest.approx(1980)
    assert ncu.to_megahertz(1.755, "cycle/nsecond") == pytest.approx(1755)
    assert ncu.to_megahertz(1.98, "GHz") == pytest.approx(1980) and ncu.to_megahertz(None, "Hz") is None
    with pytest.raises(CourseError, match="clock rate"):
        ncu.to_megahertz(1, "furlong/fortnight")
