"""make compare (common/compare.py) without a GPU: how BUILDS is read, what a misspelt one says, the
summary of rounds, and the message on a machine without a GPU."""
import subprocess
import sys
from pathlib import Path

import pytest

from common import compare
from common.device import gpu_status
from common.errors import CourseError
from common.lab import load

ROOT = Path(__file__).resolve().parents[1]


def test_builds_are_split_on_semicolons_and_their_parameters_on_commas():
    assert compare.parse_builds("A_MMAJOR=1; GROUP=16,STAGES=4 ;") == [
        {"A_MMAJOR": "1"}, {"GROUP": "16", "STAGES": "4"}]


@pytest.mark.parametrize("text", ["GROUP", "GROUP=", "=4", "2X=1", "GROUP=1,,STAGES=2"])
def test_a_build_that_cannot_be_read_says_how_to_write_one(text):
    with pytest.raises(CourseError, match="cannot read") as e:
        compare.parse_builds(text)
    assert "NAME=value" in e.value.hint


def test_no_builds_is_refused_with_an_example():
    with pytest.raises(CourseError, match="needs BUILDS"):
        compare.parse_builds(" ; ")


def test_a_parameter_the_kernel_does_not_have_is_named_with_the_ones_it_has():
    lab = load(ROOT / "labs" / "lab07b-cute-sgemm")
    with pytest.raises(CourseError, match="has no parameter NO_SUCH") as e:
        lab.bind(lab.kernel("c6")).with_params(**compare.parse_builds("NO_SUCH=1")[0])
    assert "GROUP" in e.value.hint


def test_the_median_of_an_even_count_of_rounds_is_the_mean_of_the_middle_two():
    rows = [{"kernel": "c6", "size": 4096, "tflops": 50.0, "pct_of_cublas": p, "check_ok": True}
            for p in (99.0, 100.0, 101.0, 104.0)]
    assert compare.summary(rows, ["c6"])[0]["pct_median"] == 100.5


def test_the_summary_gives_each_builds_median_and_range_over_rounds():
    rows = [{"kernel": k, "size": 4096, "tflops": t, "pct_of_cublas": p, "check_ok": ok}
            for k, t, p, ok in [("cuBLAS", 50.0, 100.0, True), ("cuBLAS", 51.0, 100.0, True),
                                ("cuBLAS", 50.5, 100.0, True), ("c6", 50.1, 99.4, True),
                                ("c6", 51.2, 100.4, True), ("c6", 50.6, 100.1, False)]]
    table = {r["build"]: r for r in compare.summary(rows, ["cuBLAS", "c6"])}
    assert table["c6"]["rounds"] == 3 and table["c6"]["tflops"] == 50.6
    assert (table["c6"]["pct_min"], table["c6"]["pct_max"]) == (99.4, 100.4)
    assert table["c6"]["pct_median"] == 100.1 and table["c6"]["rounds_ahead"] == 2
    assert table["cuBLAS"]["rounds_ahead"] == 0          # level with itself is not ahead
    assert table["c6"]["check"] == "FAIL" and table["cuBLAS"]["check"] == "PASS"


@pytest.mark.skipif(gpu_status()[0], reason="this machine has a GPU")
def test_without_a_gpu_make_compare_says_so_in_one_message():
    r = subprocess.run([sys.executable, "-m", "common", "compare", "--lab", "labs/lab07b-cute-sgemm", "--kernel", "c6",
                        "--builds", "GROUP=16"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode != 0
    assert "compare" in r.stderr + r.stdout and "GPU" in r.stderr + r.stdout
    assert "Traceback" not in r.stderr


def test_sizes_are_squares_or_shapes():
    assert compare.parse_shapes("4096, 64x8192x8192") == [(4096, 4096, 4096), (64, 8192, 8192)]
    assert compare.parse_shapes(None) == [(4096, 4096, 4096)]
    for bad in ("64x8192", "0", "4k", "64x-1x8"):
        with pytest.raises(CourseError, match="SIZES"):
            compare.parse_shapes(bad)
