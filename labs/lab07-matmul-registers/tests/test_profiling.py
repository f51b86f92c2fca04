"""The profiler targets: what they profile, how they call ncu, and what they say without a GPU.

No GPU needed. The parsing of real ncu and sanitizer output is in test_profiling_fixtures.py."""
import subprocess
import sys
from collections import Counter

import pytest

from common import profiling
from common.sanitizer import TOOLS, Findings
from common.testing import GPU_OK, lab_of

LAB = lab_of(__file__)
ROOT = LAB.dir.parents[1]
COURSE = [sys.executable, "-m", "common"]

TARGETS = [("ncu-table", []), ("ncu-tensor", []), ("ncu", ["KERNEL=v7"]), ("sanitize", [])]


def test_the_tables_profile_every_kernel_of_the_lab_and_its_cublas_baseline():
    assert profiling.ncu_table_names(LAB) == [k.name for k in LAB.ladders["fp32"]] + ["cublas-fp32"]
    assert profiling.ncu_tensor_names(LAB) == [k.name for k in LAB.ladders["fp16"]] + ["cublas-fp16_tensor"]


def test_every_entry_point_is_sanitized_on_shapes_its_rules_allow():
    plan = profiling.sanitize_plan(LAB)
    assert {entry for _, _, entry, _ in plan} == {e for k in LAB.all_kernels for e in k.entries.values()}
    for k, v, entry, shapes in plan:
        assert len(shapes) >= 2, f"{entry} runs on {len(shapes)} shape(s) only"
        for s in shapes:
            assert k.refusal(*s) is None
            assert k.serves(v, *s)


def test_sanitizer_shapes_cover_partial_tiles_and_k_not_a_multiple_of_8():
    assert any(K % 8 for _, _, K in profiling.sanitize_shapes(LAB))
    assert (1, 1, 8) in profiling.sanitize_shapes(LAB)
    assert all(M % 128 or N % 128 for M, N, _ in profiling.sanitize_shapes(LAB))   # every shape has an edge tile


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
    biggest = max(k.tile[0] * K * k.prec.element_bytes
                  for k in LAB.all_kernels for _, _, K in profiling.sanitize_shapes(LAB))
    assert profiling.MEMCHECK_PADDING > biggest


@pytest.mark.parametrize("name", [n for n in profiling.profile_names(LAB) if not profiling.cublas_precision(n)])
def test_lab_kernels_are_profiled_by_entry_name_skipping_the_warm_up(name):
    k = LAB.kernels[name]
    variant = k.variant_for(2048, 2048, 2048)
    argv = profiling.ncu_argv(LAB, "ncu", name, 2048, metrics=["gpu__time_duration.sum"])
    assert argv[argv.index("--clock-control") + 1] == "none"
    assert argv[argv.index("--kernel-name") + 1] == k.entries[variant]
    assert argv[argv.index("--launch-skip") + 1] == "1" and argv[argv.index("--launch-count") + 1] == "1"
    program = argv[argv.index(sys.executable):]
    chosen = ["--variant", variant] if variant else []       # one-variant kernels: the child picks ""
    assert program[1:] == ["-m", "common", "profile", "--lab", str(LAB.dir), "--kernel", name, *chosen, "--size", "2048"]


@pytest.mark.parametrize("name", [n for n in profiling.profile_names(LAB) if profiling.cublas_precision(n)])
def test_cublas_is_profiled_from_the_marked_call_only(name):
    argv = profiling.ncu_argv(LAB, "ncu", name, 2048, metrics=["gpu__time_duration.sum"])
    assert argv[argv.index("--profile-from-start") + 1] == "off"
    assert "--kernel-name" not in argv and "--launch-skip" not in argv


@pytest.mark.skipif(GPU_OK, reason="this machine has a GPU")
@pytest.mark.parametrize("target,extra", TARGETS, ids=[t for t, _ in TARGETS])
def test_without_a_device_each_target_stops_with_one_line_saying_it_needs_one(target, extra):
    proc = subprocess.run(["make", "-s", "-C", str(LAB.dir), target, f"PYTHON={sys.executable}", *extra],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0
    first = proc.stderr.splitlines()[0]
    assert first.startswith(f"error: `make {target}` needs an NVIDIA GPU"), proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.skipif(GPU_OK, reason="this machine has a GPU")
def test_without_a_device_the_profile_mode_says_what_is_missing():
    proc = subprocess.run(COURSE + ["profile", "--lab", str(LAB.dir), "--kernel", "v6"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and proc.stderr.startswith("error: ") and "Traceback" not in proc.stderr


def test_ncu_without_a_kernel_name_says_how_to_give_one():
    proc = subprocess.run(COURSE + ["ncu", "--lab", str(LAB.dir)], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "KERNEL=" in proc.stderr


@pytest.mark.parametrize("kernels,named", [("v6,v9", "'v9'"), ("v9:tuned", "'v9:tuned'")])
def test_an_unknown_kernel_is_refused_before_anything_runs(kernels, named):
    proc = subprocess.run(COURSE + ["ncu-table", "--lab", str(LAB.dir), "--kernels", kernels], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and named in proc.stderr


@pytest.mark.parametrize("kernel", ["v9:tuned", "cublas-fp32:tuned"])
def test_make_ncu_refuses_a_tuned_name_that_names_no_kernel_of_the_lab(kernel):
    proc = subprocess.run(COURSE + ["ncu", "--lab", str(LAB.dir), "--kernel", kernel], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and f"'{kernel}'" in proc.stderr and "Traceback" not in proc.stderr


def test_name_tuned_without_a_record_for_this_gpu_says_to_run_make_tune():
    from common.errors import CourseError
    from common.measure import tuned_named
    with pytest.raises(CourseError) as e:
        tuned_named(LAB, "v8:tuned", {"name": "A GPU nobody tuned on"}, 2048)
    assert "A GPU nobody tuned on" in e.value.message and "make tune" in e.value.hint


def test_name_tuned_is_the_recorded_build_of_that_kernel(monkeypatch):
    from common import measure
    monkeypatch.setattr(measure, "tuned_kernel", lambda lab, ladder, facts, size: LAB.kernel("v8").with_params(STAGES=2))
    assert measure.tuned_named(LAB, "v8:tuned", {"name": "x"}, 4096).name == "v8[STAGES2]"
    with pytest.raises(measure.CourseError):            # the record's build is v8's, not v7's
        measure.tuned_named(LAB, "v7:tuned", {"name": "x"}, 4096)


# --- the sanitize summary: every problem names its kernel and its tool --------------------------

def _results(plan, **findings):
    """Every tool clean and every launch done, except the Findings given by tool name."""
    launched = {}
    for _, _, entry, shapes in plan:    # a build of SANITIZE_ALSO shares its row's entry names
        launched[entry] = launched.get(entry, 0) + len(shapes)
    out = {}
    for tool in TOOLS:
        f = findings.get(tool) or Findings(tool, total_errors=0)
        out[tool] = (f, launched, 0 if f.clean else 1, f"reports/sanitize/{tool}.txt")
    return out


def test_a_clean_run_has_no_problems_and_says_clean_everywhere():
    plan = profiling.sanitize_plan(LAB)
    rows, problems = profiling.summarize(plan, _results(plan))
    assert problems == []
    assert all(r[t] == "clean" for r in rows for t in TOOLS)


def test_a_race_names_the_kernel_and_the_tool():
    plan = profiling.sanitize_plan(LAB)
    race = Findings("racecheck", errors=Counter({"sgemm_v7_vec": 3}), total_errors=3)
    rows, problems = profiling.summarize(plan, _results(plan, racecheck=race))
    assert len(problems) == 1 and problems[0].startswith("racecheck: sgemm_v7_vec: 3 errors")
    row = next(r for r in rows if r["entry"] == "sgemm_v7_vec")
    assert row["racecheck"] == "3 errors" and row["memcheck"] == "clean"


def test_a_run_that_stopped_early_is_not_clean():
    plan = profiling.sanitize_plan(LAB)
    results = _results(plan)
    found, launched, _, log = results["memcheck"]
    first = plan[0][2]
    results["memcheck"] = (Findings("memcheck"), {first: launched[first]}, 1, log)   # no summary, one kernel ran
    rows, problems = profiling.summarize(plan, results)
    assert any(p.startswith("memcheck: did not finish") for p in problems)
    assert any("printed no summary" in p for p in problems)
    assert next(r for r in rows if r["entry"] == plan[-1][2])["memcheck"].startswith("ran 0/")
