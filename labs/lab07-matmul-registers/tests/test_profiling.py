"""The profiler targets: what they profile, how they call ncu, and what they say without a GPU.

No GPU needed. The parsing of real ncu and sanitizer output is in test_profiling_fixtures.py."""
import subprocess
import sys
from collections import Counter

import pytest

import lab07
import profiling
from common.sanitizer import TOOLS, Findings
from conftest import GPU_OK, LAB

TARGETS = [("ncu-table", []), ("ncu-tensor", []), ("ncu", ["KERNEL=v7"]), ("sanitize", [])]


def test_the_tables_profile_every_kernel_of_the_lab_and_its_cublas_baseline():
    assert profiling.NCU_TABLE == [k.name for k in lab07.FP32] + ["cublas-sgemm"]
    assert profiling.NCU_TENSOR == [k.name for k in lab07.FP16] + ["cublas-hgemm"]


def test_every_entry_point_is_sanitized_on_shapes_its_rules_allow():
    plan = profiling.sanitize_plan()
    assert {entry for _, _, entry, _ in plan} == {e for k in lab07.FP32 + lab07.FP16 for e in k.entries.values()}
    for k, v, entry, shapes in plan:
        assert len(shapes) >= 2, f"{entry} runs on {len(shapes)} shape(s) only"
        for s in shapes:
            assert k.refusal(*s) is None
            assert v != "vec" or k.variant_for(*s) == "vec"


def test_sanitizer_shapes_cover_partial_tiles_and_k_not_a_multiple_of_8():
    assert any(K % 8 for _, _, K in profiling.SANITIZE_SHAPES)
    assert (1, 1, 8) in profiling.SANITIZE_SHAPES
    assert all(M % 128 or N % 128 for M, N, _ in profiling.SANITIZE_SHAPES)   # every shape has an edge tile


@pytest.mark.parametrize("listed", [True, False])
def test_memcheck_runs_with_a_guard_after_every_buffer_when_the_sanitizer_has_one(monkeypatch, listed):
    """Without --padding, A, B and C lie back to back and a read past the end of A lands in B unseen."""
    monkeypatch.setattr(profiling.sanitizer, "supports_padding", lambda exe: listed)
    for tool in TOOLS:
        argv = profiling.sanitizer_argv("compute-sanitizer", tool, ["prog"])
        padded = tool == "memcheck" and listed
        assert ("--padding" in argv) == padded, tool
        if padded:
            assert int(argv[argv.index("--padding") + 1]) == profiling.MEMCHECK_PADDING


def test_the_guard_is_wider_than_a_whole_tile_of_a_at_every_sanitizer_shape():
    biggest = max(k.tile[0] * K * (4 if k.dtype == "fp32" else 2)
                  for k in lab07.FP32 + lab07.FP16 for _, _, K in profiling.SANITIZE_SHAPES)
    assert profiling.MEMCHECK_PADDING > biggest


@pytest.mark.parametrize("name", [n for n in profiling.PROFILE_NAMES if n not in profiling.CUBLAS])
def test_lab_kernels_are_profiled_by_entry_name_skipping_the_warm_up(name):
    k = lab07.KERNELS[name]
    variant = k.variant_for(2048, 2048, 2048)
    argv = profiling.ncu_argv("ncu", name, 2048, metrics=["gpu__time_duration.sum"])
    assert argv[argv.index("--clock-control") + 1] == "none"
    assert argv[argv.index("--kernel-name") + 1] == k.entries[variant]
    assert argv[argv.index("--launch-skip") + 1] == "1" and argv[argv.index("--launch-count") + 1] == "1"
    program = argv[argv.index(sys.executable):]
    chosen = ["--variant", variant] if variant else []       # one-variant kernels: the child picks ""
    assert program[1:] == [str(LAB / "lab07.py"), "profile", "--kernel", name, *chosen, "--size", "2048"]


@pytest.mark.parametrize("name", list(profiling.CUBLAS))
def test_cublas_is_profiled_from_the_marked_call_only(name):
    argv = profiling.ncu_argv("ncu", name, 2048, metrics=["gpu__time_duration.sum"])
    assert argv[argv.index("--profile-from-start") + 1] == "off"
    assert "--kernel-name" not in argv and "--launch-skip" not in argv


@pytest.mark.skipif(GPU_OK, reason="this machine has a GPU")
@pytest.mark.parametrize("target,extra", TARGETS, ids=[t for t, _ in TARGETS])
def test_without_a_device_each_target_stops_with_one_line_saying_it_needs_one(target, extra):
    proc = subprocess.run(["make", "-s", "-C", str(LAB), target, f"PYTHON={sys.executable}", *extra],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0
    first = proc.stderr.splitlines()[0]
    assert first.startswith(f"error: `make {target}` needs an NVIDIA GPU"), proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.skipif(GPU_OK, reason="this machine has a GPU")
def test_without_a_device_the_profile_mode_says_what_is_missing():
    proc = subprocess.run([sys.executable, str(LAB / "lab07.py"), "profile", "--kernel", "v6"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and proc.stderr.startswith("error: ") and "Traceback" not in proc.stderr


def test_ncu_without_a_kernel_name_says_how_to_give_one():
    proc = subprocess.run([sys.executable, str(LAB / "profiling.py"), "ncu"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "KERNEL=" in proc.stderr


def test_an_unknown_kernel_is_refused_before_anything_runs():
    proc = subprocess.run([sys.executable, str(LAB / "profiling.py"), "ncu-table", "--kernels", "v6,v9"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "'v9'" in proc.stderr


# --- the sanitize summary: every problem names its kernel and its tool --------------------------

def _results(plan, **findings):
    """Every tool clean and every launch done, except the Findings given by tool name."""
    launched = {entry: len(shapes) for _, _, entry, shapes in plan}
    out = {}
    for tool in TOOLS:
        f = findings.get(tool) or Findings(tool, total_errors=0)
        out[tool] = (f, launched, 0 if f.clean else 1, f"reports/sanitize/{tool}.txt")
    return out


def test_a_clean_run_has_no_problems_and_says_clean_everywhere():
    plan = profiling.sanitize_plan()
    rows, problems = profiling.summarize(plan, _results(plan))
    assert problems == []
    assert all(r[t] == "clean" for r in rows for t in TOOLS)


def test_a_race_names_the_kernel_and_the_tool():
    plan = profiling.sanitize_plan()
    race = Findings("racecheck", errors=Counter({"sgemm_v7_vec": 3}), total_errors=3)
    rows, problems = profiling.summarize(plan, _results(plan, racecheck=race))
    assert len(problems) == 1 and problems[0].startswith("racecheck: sgemm_v7_vec: 3 errors")
    row = next(r for r in rows if r["entry"] == "sgemm_v7_vec")
    assert row["racecheck"] == "3 errors" and row["memcheck"] == "clean"


def test_a_run_that_stopped_early_is_not_clean():
    plan = profiling.sanitize_plan()
    results = _results(plan)
    found, launched, _, log = results["memcheck"]
    first = plan[0][2]
    results["memcheck"] = (Findings("memcheck"), {first: launched[first]}, 1, log)   # no summary, one kernel ran
    rows, problems = profiling.summarize(plan, results)
    assert any(p.startswith("memcheck: did not finish") for p in problems)
    assert any("printed no summary" in p for p in problems)
    assert next(r for r in rows if r["entry"] == plan[-1][2])["memcheck"].startswith("ran 0/")
