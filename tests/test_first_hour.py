"""A new student's first hour, from a fresh clone: the rough edges found by trying the course, each
pinned. The Makefiles are run for real in a small course made in a temporary folder (the top
Makefile and mk/lab.mk, two labs, a stand-in for Python that records what it was asked), or with
`make -n` in this checkout; nothing here compiles a kernel."""
import json
import os
import re
import shutil
import subprocess
import sys
from io import StringIO
from pathlib import Path
from types import SimpleNamespace

import pytest

from common import notebooks
from common.errors import CourseError
from common.lab import all_lab_dirs, load

ROOT = Path(__file__).resolve().parents[1]
needs_make = pytest.mark.skipif(shutil.which("make") is None, reason="needs GNU make")

# a stand-in for $(PYTHON): logs its arguments; `-m common workspace --dest D` makes D with a file in
# it, `-m common build` prints a register table, `-m pytest` says what it was given
FAKE_PYTHON = r"""#!/bin/sh
echo "$*" >> "$FAKE_LOG"
[ "$1" = "-m" ] || exit 1
if [ "$2" = common ]; then
  target=$3; dest=""; prev=""
  for a in "$@"; do [ "$prev" = "--dest" ] && dest=$a; prev=$a; done
  case $target in
    workspace) mkdir -p "$dest" && echo made > "$dest/v5.cu" ;;
    build) echo "kernel  arch   regs"; echo "k1      sm_90    40"; echo "full data: reports/build.json" ;;
  esac
elif [ "$2" = pytest ]; then
  echo "pytest was given: $*"
  echo "GRADE_GPU_LOCK=${GRADE_GPU_LOCK:-unset} $([ -f "${GRADE_GPU_LOCK:-/nonexistent}" ] && echo a-file)" >> "$FAKE_LOG"
  case "$*" in *"not gpu_timed"*) exit ${FAKE_UNTIMED_STATUS:-0};; *gpu_timed*) exit ${FAKE_TIMED_STATUS:-0};; esac
fi
"""


@pytest.fixture
def course(tmp_path):
    """A course of two labs: alpha has graded exercises (grading/parts.py), beta has none; both built."""
    root = tmp_path / "course"
    (root / "mk").mkdir(parents=True)
    shutil.copy(ROOT / "Makefile", root / "Makefile")
    for mk in ("lab.mk", "tests.mk"):
        shutil.copy(ROOT / "mk" / mk, root / "mk" / mk)
    for name, graded in (("lab01-alpha", True), ("lab02-beta", False)):
        lab = root / "labs" / name
        (lab / "build").mkdir(parents=True)
        (lab / "build" / "k1.cubin").write_text("")
        (lab / "lab.py").write_text("LADDERS = {}\n")
        (lab / "Makefile").write_text("include ../../mk/lab.mk\n")
        if graded:
            (lab / "grading").mkdir()
            (lab / "grading" / "parts.py").write_text("")
    python = tmp_path / "python"
    python.write_text(FAKE_PYTHON)
    python.chmod(0o755)
    log = tmp_path / "python.log"

    def make(*args, cwd=root, env=None):
        env = {**os.environ, "FAKE_LOG": str(log), **(env or {})}
        env.pop("MAKEFLAGS", None)
        p = subprocess.run(["make", "--no-print-directory", f"PYTHON={python}", *args], cwd=cwd, env=env,
                           capture_output=True, text=True, timeout=60)
        return p.returncode, p.stdout + p.stderr
    return SimpleNamespace(root=root, make=make, log=log,
                           calls=lambda: log.read_text().splitlines() if log.exists() else [])


@needs_make
def test_make_clean_with_lab_cleans_only_that_lab(course):
    status, out = course.make("clean", "LAB=lab01")
    assert status == 0, out
    assert not (course.root / "labs" / "lab01-alpha" / "build").exists()
    assert (course.root / "labs" / "lab02-beta" / "build" / "k1.cubin").exists()


@needs_make
def test_workspace_from_the_top_keeps_an_existing_one_and_makes_the_others(course):
    ws = course.root / "ws"
    (course.root / "labs" / "lab02-beta" / "grading").mkdir()
    (course.root / "labs" / "lab02-beta" / "grading" / "parts.py").write_text("")   # two graded labs
    (ws / "lab01-alpha").mkdir(parents=True)
    (ws / "lab01-alpha" / "mine.cu").write_text("my work")
    status, out = course.make("workspace", f"WORKSPACE={ws}")
    assert status == 0, out
    assert (ws / "lab01-alpha" / "mine.cu").read_text() == "my work" and "kept" in out
    assert (ws / "lab02-beta" / "v5.cu").exists()                 # the next lab's is made all the same
    assert not any("lab01-alpha" in c for c in course.calls())    # the existing one was not asked for
    status, out = course.make("workspace", f"WORKSPACE={ws}", "FORCE=1")   # FORCE=1: the lab's own make decides
    assert status == 0 and any("--dest " + str(ws / "lab01-alpha") in c and "--force" in c for c in course.calls())


@needs_make
def test_the_labs_own_workspaces_are_made_where_each_lab_keeps_them(course):
    status, out = course.make("workspace")
    assert status == 0, out
    assert (course.root / "labs" / "lab01-alpha" / "workspace" / "v5.cu").exists()
    assert not (course.root / "labs" / "lab02-beta" / "workspace").exists()   # no exercises, nothing made


@needs_make
def test_workspace_given_at_the_top_is_the_folder_itself_when_one_lab_has_exercises(course):
    ws = course.root / "ws"
    status, out = course.make("workspace", "WORKSPACE=ws")
    assert status == 0, out
    assert (ws / "v5.cu").exists() and not (ws / "lab01-alpha").exists()
    course.make("grade", "WORKSPACE=ws", "LAB=lab01")
    assert any(f"--workspace {ws} " in c + " " for c in course.calls() if " grade " in c)


@needs_make
def test_workspace_at_the_top_names_a_folder_per_lab_in_this_course():
    """This course has two graded labs: WORKSPACE=ws is ws/<lab> for each; with LAB= one, ws itself."""
    def dests(*args):
        out = subprocess.run(["make", "-n", "--no-print-directory", "PYTHON=python3", *args], cwd=ROOT,
                             capture_output=True, text=True, timeout=60).stdout
        return re.findall(r"--(?:dest|workspace) (\S+)", out)
    graded = [d.name for d in all_lab_dirs() if (d / "grading" / "parts.py").exists()]
    assert dests("grade", "WORKSPACE=/tmp/ws", f"LAB={graded[0]}") == ["/tmp/ws"]
    if len(graded) > 1:
        assert dests("grade", "WORKSPACE=/tmp/ws") == [f"/tmp/ws/{g}" for g in graded]


@needs_make
def test_grade_from_the_top_grades_the_labs_with_a_workspace_and_names_the_others(course):
    """`make grade` from the top, several graded labs: one without a workspace no longer stops it before
    the next (a student who made only lab 7d's never had it graded); the skipped are named, with the
    command that makes each. None at all is an error; one lab (LAB=) is its own grade's to refuse."""
    (course.root / "labs" / "lab02-beta" / "grading").mkdir()
    (course.root / "labs" / "lab02-beta" / "grading" / "parts.py").write_text("")
    (course.root / "labs" / "lab02-beta" / "workspace").mkdir()
    status, out = course.make("grade")
    assert status == 0, out
    grades = [c for c in course.calls() if c.startswith("-m common grade ")]
    assert len(grades) == 1 and "labs/lab02-beta --workspace" in grades[0], grades
    assert "lab01-alpha: skipped, there is no workspace at" in out
    assert "make workspace LAB=lab01-alpha makes it" in out and "not graded (no workspace): lab01-alpha" in out
    shutil.rmtree(course.root / "labs" / "lab02-beta" / "workspace")
    status, out = course.make("grade")
    assert status == 2 and "error: no lab has a workspace to grade" in out and "what to do: make workspace" in out
    course.log.unlink()
    course.make("grade", "LAB=lab01")
    assert any(c.startswith("-m common grade --lab") and "lab01-alpha" in c for c in course.calls())


def _make_here(*args, cwd=ROOT):
    """This checkout's make, run for real with this Python (nothing that compiles)."""
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "COURSE_TOP_LAB")}
    p = subprocess.run(["make", "--no-print-directory", f"PYTHON={sys.executable}", *args], cwd=cwd, env=env,
                       capture_output=True, text=True, timeout=120)
    return p.returncode, p.stdout + p.stderr


@needs_make
def test_next_steps_printed_from_the_top_name_the_lab_and_work_when_followed(tmp_path):
    """From the top, `make grade-class` without LAB= runs for every lab, each with SUBMISSIONS/<lab>:
    the demo's "next:" line lacked LAB= and, followed, found no lab07-matmul-registers folder."""
    ws, demo = tmp_path / "ws", tmp_path / "demo"
    status, out = _make_here("workspace", "LAB=lab07d", f"WORKSPACE={ws}")
    assert status == 0, out
    assert f"then `make grade LAB=lab07d WORKSPACE={ws}`" in out, out
    status, out = _make_here("-n", "grade", "LAB=lab07d", f"WORKSPACE={ws}")
    assert status == 0 and f"--workspace {ws} " in out, out
    status, out = _make_here("grade-class-demo", "LAB=lab07d", f"DEST={demo}")
    assert status == 0, out
    follow = re.search(r"next: (make grade-class LAB=lab07d SUBMISSIONS=\S+)", out)
    assert follow and follow.group(1).endswith(f"SUBMISSIONS={demo}"), out
    status, out = _make_here("-n", *follow.group(1).split()[1:])
    assert status == 0 and f"--submissions {demo} " in out and "lab07d-decode-shapes" in out, out
    status, out = _make_here("-C", "labs/lab07d-decode-shapes", "workspace", f"WORKSPACE={tmp_path / 'mine'}")
    assert f"then `make grade WORKSPACE={tmp_path / 'mine'}`" in out, out      # in the lab's folder: no LAB=


@needs_make
@pytest.mark.parametrize("target", ["grade", "grade-class", "sass", "build"])
def test_an_arch_the_course_does_not_build_for_is_refused_by_each_target_that_takes_it(target, tmp_path):
    """ARCH=bogus crashed the grader inside pytest (a traceback, "the grader itself failed"); ARCH=sm_99
    was graded as the student's compile error ("nvcc fatal: Unsupported gpu architecture"). Both are
    refused at once, naming the architectures there are."""
    for arch, words in (("bogus", "ARCH='bogus' is not an architecture name"),
                        ("sm_99", "ARCH=sm_99 is not an architecture the course builds for")):
        status, out = _make_here("-C", "labs/lab07d-decode-shapes", target, f"ARCH={arch}", "PARTS=gemv",
                                 f"WORKSPACE={tmp_path}", f"SUBMISSIONS={tmp_path}")
        assert status == 2 and words in out and "sm_90a" in out, out
        assert "Traceback" not in out and "compile" not in out and "grader itself failed" not in out


@needs_make
@pytest.mark.parametrize("lab_dir", all_lab_dirs(), ids=lambda d: d.name)
def test_a_labs_help_names_its_own_parts_and_what_its_ncu_table_profiles(lab_dir):
    """make help in lab 7d showed lab 7's PARTS=v4,v6 and "FFMA kernels and cuBLAS SGEMM"."""
    from common.grading.spec import Grading, has_grading
    from common.profiling import ncu_table_names
    lab = load(lab_dir)
    status, out = _make_here("-C", str(lab_dir), "help")
    assert status == 0 and out.startswith(lab.title), out
    if has_grading(lab):
        assert "graded parts (PARTS=): " + ", ".join(p.name for p in Grading(lab).parts) in out
    assert "ncu-table profiles: " + (", ".join(ncu_table_names(lab)) or "nothing in this lab") in out
    assert "PARTS=v4,v6" not in out and "FFMA kernels and cuBLAS SGEMM" not in out
    assert "make grade-class SUBMISSIONS=dir" in out                    # the course's text, after the lab's


@needs_make
def test_make_test_is_quiet_a_line_per_lab_and_the_details_on_request(course):
    status, out = course.make("test")
    assert status == 0, out
    assert "built labs/lab01-alpha" in out and "built labs/lab02-beta" in out
    assert "regs" not in out                                          # the register tables: V=1
    pytest_args = next(c for c in course.calls() if c.startswith("-m pytest"))
    assert "-p common.pytest_summary" in pytest_args and "-q" in pytest_args.split()
    status, out = course.make("test", "V=1")
    assert "regs" in out and "sm_90" in out
    assert "-p common.pytest_summary" not in [c for c in course.calls() if c.startswith("-m pytest")][-1]
    status, out = course.make("-C", "labs/lab01-alpha", "test")          # a lab's own make test: as quiet
    assert status == 0, out
    assert "-p common.pytest_summary" in [c for c in course.calls() if c.startswith("-m pytest")][-1]


@needs_make
@pytest.mark.parametrize("where", ["top", "lab"])
def test_make_test_times_kernels_after_the_other_tests_holding_the_gpu_lock(course, where):
    """Two pytest runs: all but gpu_timed, then gpu_timed with GRADE_GPU_LOCK naming a file (the labs'
    self-tests take turns on the GPU). A failure in either fails make test; the second runs anyway;
    "no test selected" (5) in the second is no failure."""
    def run(untimed=0, timed=0):
        course.log.unlink(missing_ok=True)
        args = ("-C", "labs/lab01-alpha", "test") if where == "lab" else ("test",)
        status, out = course.make(*args, env={"FAKE_UNTIMED_STATUS": str(untimed), "FAKE_TIMED_STATUS": str(timed)})
        calls = course.calls()
        runs = [i for i, c in enumerate(calls) if c.startswith("-m pytest")]
        return status, out, [(calls[i], calls[i + 1]) for i in runs]
    status, out, runs = run()
    assert status == 0, out
    assert len(runs) == 2, runs
    (first, lock1), (second, lock2) = runs
    assert "-m not gpu_timed" in first and lock1.startswith("GRADE_GPU_LOCK=unset")
    assert "-m gpu_timed" in second and lock2.endswith(" a-file"), lock2
    assert "one lab's GPU phase at a time" in out
    assert run(untimed=1)[0] != 0 and len(run(untimed=1)[2]) == 2     # the timed tests run after a failure too
    assert run(timed=1)[0] != 0
    assert run(timed=5)[0] == 0                                         # none selected: a lab without exercises


def test_the_tests_marked_gpu_timed_are_the_graders_gpu_suites():
    """What make test runs second, alone on the GPU, is exactly each graded lab's test_grading_gpu.py
    (gpu_suite's pytestmark, taken by `import *`): none lost to neither run, none timed beside others."""
    p = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-m", "gpu_timed",
                        "-p", "no:cacheprovider", "tests", "labs"], cwd=ROOT, capture_output=True, text=True,
                       timeout=300, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert p.returncode == 0, p.stdout + p.stderr
    files = {line.split("::")[0] for line in p.stdout.splitlines() if "::" in line}
    graded = {f"labs/{d.name}/tests/test_grading_gpu.py" for d in all_lab_dirs() if (d / "grading" / "parts.py").exists()}
    assert files == graded


@needs_make
def test_a_failed_build_is_printed_whole_and_stops_make_test(course, tmp_path):
    python = tmp_path / "python"
    python.write_text(FAKE_PYTHON.replace('build) echo "kernel', 'build) echo "nvcc: error in k1.cu" >&2; exit 2; echo "kernel'))
    status, out = course.make("test")
    assert status != 0 and "nvcc: error in k1.cu" in out and "make build failed" in out
    assert not any(c.startswith("-m pytest") for c in course.calls())


def test_the_quiet_report_counts_per_lab_and_prints_failures_in_full(tmp_path):
    tests = tmp_path / "labs" / "lab01-alpha" / "tests"
    tests.mkdir(parents=True)
    (tests / "test_a.py").write_text("import pytest\n"
                                     "def test_ok(): pass\n"
                                     "def test_wrong(): assert 2 + 2 == 5, 'arithmetic'\n"
                                     "@pytest.mark.skip(reason='needs a GPU')\n"
                                     "def test_gpu(): pass\n")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_b.py").write_text("def test_one(): pass\ndef test_two(): pass\n")
    p = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rfE", "-o", "console_output_style=classic",
                        "-p", "common.pytest_summary", "-p", "no:cacheprovider", "tests", "labs"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=120,
                       env={**os.environ, "PYTHONPATH": str(ROOT)})
    out = p.stdout
    assert p.returncode == 1
    assert re.search(r"^lab01-alpha\s+1 passed\s+1 failed\s+1 skipped$", out, re.M), out
    assert re.search(r"^tests\s+2 passed$", out, re.M), out
    assert "assert 2 + 2 == 5" in out and "AssertionError: arithmetic" in out      # the failure, whole
    assert "needs a GPU" not in out                                 # a skip's reason: V=1 (-ra) shows it
    progress = [l for l in out.splitlines() if re.fullmatch(r"[.sF]+", l.strip() or "x")]
    assert progress == ["F"], out                                   # no letter per passed or skipped test


def test_the_quiet_report_names_each_lab_by_its_folder():
    from common.pytest_summary import where
    assert where("labs/lab07b-cute-sgemm/tests/test_x.py::test_y[c6]") == "lab07b-cute-sgemm"
    assert where("tests/test_records.py::test_z") == "tests"


# --- git and pip leave the checkout clean ----------------------------------------------------

@pytest.mark.skipif(shutil.which("git") is None or not (ROOT / ".git").exists(), reason="needs a git checkout")
@pytest.mark.parametrize("lab", [d.name for d in all_lab_dirs()])
def test_every_labs_workspace_is_ignored_by_git(lab):
    for path in (f"labs/{lab}/workspace/v5_vectorized.cu", f"labs/{lab}/workspace.old/answers.toml",
                 f"labs/{lab}/workspace.old-2/answers.toml"):
        assert subprocess.run(["git", "check-ignore", "-q", path], cwd=ROOT).returncode == 0, path


def _pyproject():
    text = (ROOT / "pyproject.toml").read_text()
    try:
        import tomllib
    except ImportError:
        try:
            import tomli as tomllib
        except ImportError:
            pytest.skip("needs tomllib (Python 3.11) or tomli to read pyproject.toml")
    return tomllib.loads(text)


def test_pip_install_of_the_checkout_leaves_no_egg_info_behind():
    """setuptools writes <name>.egg-info into the source folder; hatchling builds in a folder of its own.
    The course installs nothing of its own: the wheel is empty (bypass-selection)."""
    build = _pyproject()["build-system"]
    assert build["build-backend"] == "hatchling.build" and any(r.startswith("hatchling") for r in build["requires"])
    assert _pyproject()["tool"]["hatch"]["build"]["targets"]["wheel"]["bypass-selection"] is True


def test_building_the_wheel_writes_nothing_into_the_checkout(tmp_path):
    pytest.importorskip("hatchling", reason="hatchling is fetched by pip at install time; not installed here")
    src = tmp_path / "src"
    src.mkdir()
    shutil.copy(ROOT / "pyproject.toml", src / "pyproject.toml")
    for d in ("common", "labs"):
        (src / d).mkdir()
    before = sorted(p.name for p in src.iterdir())
    p = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                        "-w", str(tmp_path / "wheel"), str(src)], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert sorted(p.name for p in src.iterdir()) == before


# --- messages: the argument first, then the GPU --------------------------------------------------

@pytest.fixture
def no_gpu(monkeypatch):
    monkeypatch.setattr("common.device.gpu_status", lambda: (False, "this machine has no GPU (test)"))


@pytest.mark.parametrize("target", ["compare", "bounds"])
def test_a_wrong_kernel_is_told_before_the_gpu_is_looked_for(target, no_gpu):
    lab = load("lab07-matmul-registers")
    args = SimpleNamespace(kernel="zzz", builds="BK=8", sizes=None, rounds=None, size=None, bk=None)
    if target == "compare":
        from common.compare import compare as run
    else:
        from common.bounds import bounds as run
    with pytest.raises(CourseError) as e:
        run(lab, args)
    assert "zzz" in e.value.message and "GPU" not in e.value.message
    assert "t4" in (e.value.hint or "")                            # the kernels it does know


@pytest.mark.parametrize("lab_dir", all_lab_dirs(), ids=lambda d: d.name)
def test_the_no_gpu_message_names_the_labs_gpu_and_only_notebooks_that_exist(lab_dir, no_gpu):
    from common.measure import needs_gpu
    lab = load(lab_dir)
    with pytest.raises(CourseError) as e:
        needs_gpu("bench", lab)
    hint = e.value.hint
    for name in re.findall(r"notebooks/[\w.-]+\.ipynb", hint):
        assert (ROOT / name).exists(), f"the message names {name}, which does not exist"
    if all(k.archs and all(a.startswith("sm_90") for a in k.archs) for k in lab.own()):
        assert "sm_90" in hint and not re.search(r"sm_[78]\d", hint), hint
    else:
        assert re.search(r"an NVIDIA GPU of sm_\d+ or newer", hint), hint


def test_lab_7c_is_said_to_need_a_hopper_gpu(no_gpu):
    from common.measure import gpu_needed
    assert gpu_needed(load("lab07c-hopper-wgmma")) == "an NVIDIA Hopper GPU (sm_90)"
    assert re.match(r"an NVIDIA GPU of sm_\d+ or newer", gpu_needed(load("lab07-matmul-registers")))


# --- make sass says what it is doing ----------------------------------------------------------

class _Terminal(StringIO):
    def isatty(self):
        return True


def test_make_sass_shows_progress_a_line_per_kernel_on_a_terminal_and_one_line_in_a_log(monkeypatch):
    from common.targets import sass_progress
    monkeypatch.delenv("CI", raising=False)
    log = StringIO()
    assert sass_progress(12, "sm_90", log) is None
    assert log.getvalue().count("\n") == 1 and "12 kernels for sm_90" in log.getvalue()
    tty = _Terminal()
    show = sass_progress(12, "sm_90", tty)
    show(1, 12, "built c1 for sm_90")
    show(12, 12, "disassembling c7 (sm_90)")
    assert "[1/12] built c1 for sm_90" in tty.getvalue() and "\r" in tty.getvalue()


def test_make_build_shows_each_kernel_on_a_terminal_and_only_its_start_and_end_in_a_log(monkeypatch, tmp_path):
    """Lab 7b's first `make` spent 50 s on "[0/1] compiling 9 kernels" with nothing after it."""
    import sys
    from types import SimpleNamespace
    from common import targets
    monkeypatch.delenv("CI", raising=False)
    lab = load("lab07-matmul-registers")
    monkeypatch.setattr("common.build.compile_cubin", lambda *a, **kw: {})
    monkeypatch.setattr(targets, "build_rows", lambda lab, archs, kernels, progress=None: [
        progress(i, 3, f"built k{i} for sm_90") for i in (1, 2, 3)] and [])
    monkeypatch.setattr("common.report.write_json", lambda path, data: tmp_path / "build.json")
    for stream, per_kernel in ((StringIO(), False), (_Terminal(), True)):
        monkeypatch.setattr(sys, "stderr", stream)
        targets.build(lab, SimpleNamespace(arch="sm_90"))
        text = stream.getvalue()
        assert ("built k2 for sm_90" in text) == per_kernel, text
        assert "compiling" in text and "compiled" in text


def test_a_build_reports_each_kernel_as_it_is_done(monkeypatch):
    lab = load("lab07-matmul-registers")
    monkeypatch.setattr("common.build.compile_cubin", lambda *a, **kw: {})
    seen = []
    kernels = lab.own()[:3]
    lab.build(kernels, ["sm_90", "sm_86"], progress=lambda i, n, what: seen.append((i, n, what)))
    assert [i for i, _, _ in seen] == [1, 2, 3, 4, 5, 6] and all(n == 6 for _, n, _ in seen)
    assert {w for _, _, w in seen} == {f"built {k.name} for {a}" for k in kernels for a in ("sm_90", "sm_86")}
