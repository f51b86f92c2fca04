"""Fixtures shared by the tests of `make grade-class` (test_grade_class.py, test_grade_class_slurm.py,
and the browser test of the class report): one small class, graded once per session.

    grade_class_lab     lab 7 (the graded lab these tests use); grade_class_tools: course(), scores_by_check()
    small_class         a folder of 4 submissions: the reference solution, the untouched workspace,
                        and two known-wrong kernels of part v5 (one of them as a .tar.gz), built with
                        the grade-selftest machinery; .sources holds each as a folder
    local_class         that class graded here (`python -m common grade-class`, NOGPU, PARTS=v5,questions,
                        seed CLASS_SEED): .out (the OUT folder: class.json, class.csv, class.html,
                        students/), .data (class.json), .stdout. Read only. Under pytest-xdist both
                        are made once for all workers (a lock file), not once per worker
"""
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path
from types import SimpleNamespace

import pytest

ROOT = Path(__file__).resolve().parents[1]
CLASS_PARTS = "v5,questions"
CLASS_SEED = 12345
CLASS_WRONG = ("v5_fp16_math", "v5_acc_in_local_memory")    # lose points without a GPU: scores differ


def course(*args, env=None, timeout=600):
    """`python -m common ...` from the repository root, as the Makefiles run it."""
    e = dict(os.environ)
    e.update(env or {})
    return subprocess.run([sys.executable, "-m", "common", *map(str, args)], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout, env=e)


def _need_nvcc():
    from common.build import find_nvcc
    from common.errors import CourseError
    try:
        find_nvcc()
    except CourseError as e:
        pytest.skip(f"grading compiles kernels: {e.message}")


@pytest.fixture(scope="session")
def grade_class_lab():
    from common.lab import load
    return load(ROOT / "labs" / "lab07-matmul-registers")


@contextlib.contextmanager
def _once(tmp_path_factory, what):
    """A folder made once per test run: under pytest-xdist (make test runs a test file per worker) the
    workers share it, the first one makes it while the others wait (a lock file); `ready` says it is
    done. Without xdist it is this session's own."""
    import fcntl
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent                         # the run's folder, above every worker's own
    root = base / f"grade-class-{what}"
    with open(base / f"grade-class-{what}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield root, (root / "ready").exists()
        root.mkdir(parents=True, exist_ok=True)
        (root / "ready").touch()


@pytest.fixture(scope="session")
def small_class(grade_class_lab, tmp_path_factory):
    from common.testing import needs_cuobjdump
    _need_nvcc()
    needs_cuobjdump()                     # the static checks read SASS: without it they say "skipped"
    from common.grading import classroom
    from common.grading.spec import Grading
    g = Grading(grade_class_lab)
    wanted = ("reference", "untouched") + CLASS_WRONG
    with _once(tmp_path_factory, "class") as (root, ready):
        folder = root / "submissions"
        if not ready:
            made = classroom.demo(g, root / "all", quiet=True)
            names = {m.name for m in made}
            assert set(wanted) <= names, f"the lab lost a known-wrong kernel: {sorted(names)}"
            folder.mkdir()
            for name in wanted:
                src = root / "all" / name
                if name == CLASS_WRONG[-1]:
                    with tarfile.open(folder / f"{name}.tar.gz", "w:gz") as tf:
                        tf.add(src, arcname=name)          # alice.tar.gz holding alice/...
                else:
                    shutil.copytree(src, folder / name)
    return SimpleNamespace(folder=folder, sources={n: root / "all" / n for n in wanted}, root=root, g=g)


@pytest.fixture(scope="session")
def local_class(small_class, tmp_path_factory):
    """Read only: a test that runs grade-class again copies .out first."""
    with _once(tmp_path_factory, "local") as (root, ready):
        out = root / "out"
        if not ready:
            proc = course("grade-class", "--lab", ROOT / "labs" / "lab07-matmul-registers", "--submissions",
                          small_class.folder, "--out", out, "--no-gpu", "--parts", CLASS_PARTS, "--seed", CLASS_SEED)
            assert proc.returncode == 0, proc.stdout + proc.stderr
            (root / "stdout.txt").write_text(proc.stdout)
    return SimpleNamespace(out=out, data=json.loads((out / "class.json").read_text()),
                           stdout=(root / "stdout.txt").read_text())


def scores_by_check(class_json):
    """{student: (status, score, {part:check: (status, points)})}: what two class runs must agree on."""
    return {s["name"]: (s["status"], s["score"],
                        {col: (c["status"], c["points"]) if c else None for col, c in s["checks"].items()})
            for s in class_json["students"]}


@pytest.fixture(scope="session")
def grade_class_tools():
    """What the grade-class tests call: course(), scores_by_check(), and the class's parts and seed."""
    return SimpleNamespace(course=course, scores_by_check=scores_by_check, parts=CLASS_PARTS, seed=CLASS_SEED,
                           wrong=CLASS_WRONG, root=ROOT, lab_dir=ROOT / "labs" / "lab07-matmul-registers")
