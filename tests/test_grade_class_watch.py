"""`make grade-class` tells a submission's writes from everyone else's (common/grading/classroom.py's
Watch, common/writes.py's journal). A build, a benchmark or another grading job that writes into the
lab while a class is graded blames no student; a write that no process of the course explains (what a
misbehaving submission's tools do) is still laid at the door of the workers running.

The unit tests drive a Watch by hand over a lab folder of their own; the last one grades a small class
(NOGPU) while the course's own build compiles kernels into the graded lab's build/ folder beside it.
"""
import json
import os
import py_compile
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from types import SimpleNamespace

import pytest

from common import report, writes
from common.grading import classroom

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def watched(tmp_path):
    lab = tmp_path / "lab"
    for d in ("kernels", "build/sm_90", "results", "grading/__pycache__", "reports"):
        (lab / d).mkdir(parents=True)
    (lab / "kernels" / "k.cu").write_text("// a reference kernel\n")
    (lab / "build" / "sm_90" / "k.cubin").write_bytes(b"cubin v1")
    (lab / "grading" / "parts.py").write_text("PARTS = []\n")
    subs = tmp_path / "subs"
    (subs / "alice").mkdir(parents=True)
    (subs / "alice" / "k.cu").write_text("// alice\n")
    plan = SimpleNamespace(lab=str(lab), submissions=str(subs), out=str(tmp_path / "out"))
    w = classroom.Watch(plan, tmp_path / "work")
    return SimpleNamespace(lab=lab, subs=subs, watch=w)


def _while_grading(w, action):
    w.watch.begin("alice")
    action()
    return w.watch.end("alice")


def test_a_change_no_process_of_the_course_explains_is_laid_at_the_running_workers_door(watched):
    target = watched.subs / "alice" / ".." / "bob.txt"
    found = _while_grading(watched, lambda: (watched.lab / "kernels" / "k.cu").write_text("// changed\n"))
    assert found == [f"changed {watched.lab / 'kernels' / 'k.cu'}"]
    found = _while_grading(watched, lambda: (watched.lab / "build" / "sm_90" / "x.cubin").write_bytes(b"mine"))
    assert found == [f"created {watched.lab / 'build' / 'sm_90' / 'x.cubin'}"]
    found = _while_grading(watched, lambda: target.resolve().write_text("hi"))
    assert any("bob.txt" in f for f in found)


def test_the_course_writing_its_records_and_cubins_beside_a_worker_blames_nobody(watched):
    def bench_and_build():
        report.write_json(watched.lab / "results" / "lab-bench_gpu_date.json", {"tflops": 1.0})
        cubin = watched.lab / "build" / "sm_90" / "k.cubin"
        part = cubin.with_name(".k.cubin.1.part")
        writes.note_temporary(part)          # what common/build.py notes before nvcc writes its -o file
        part.write_bytes(b"cubin v2")
        os.replace(part, cubin)
        writes.note(cubin)
    assert _while_grading(watched, bench_and_build) == []


def test_a_folder_the_course_makes_for_its_file_blames_nobody_and_a_students_folder_is_caught(watched):
    """The legality cache (common/legality.py) makes build/legality/ the first time a tuner asks: on the
    H200 a class graded beside the tests was told it had "created .../build/legality/"."""
    cache = watched.lab / "build" / "legality" / "k-0123.json"

    def legality_cache():
        tmp = cache.with_suffix(".77.tmp")
        writes.note_temporary(tmp)          # noted before the folder is made, as the course does
        cache.parent.mkdir()
        tmp.write_text("{}")
        tmp.replace(cache)
        writes.note(cache)
    assert _while_grading(watched, legality_cache) == []
    mine = watched.lab / "build" / "mine"
    assert _while_grading(watched, lambda: mine.mkdir()) == [f"created {mine}/"]


def test_a_note_that_comes_just_after_the_snapshot_still_explains_the_write(watched):
    path = watched.lab / "results" / "late.json"

    def write_then_note_later():
        path.write_text("{}")
        threading.Timer(classroom.NOTE_GRACE_S / 5, writes.note, args=(path,)).start()
    assert _while_grading(watched, write_then_note_later) == []


def test_a_file_rewritten_with_the_same_bytes_is_no_change(watched):
    cubin = watched.lab / "build" / "sm_90" / "k.cubin"

    def rebuild_same():
        cubin.unlink()
        cubin.write_bytes(b"cubin v1")       # a new inode, new times, the same bytes
    assert _while_grading(watched, rebuild_same) == []


def test_a_write_the_course_notes_inside_a_grading_worker_is_not_excused(watched, monkeypatch):
    monkeypatch.setenv(writes.WORKER_VAR, "alice")
    path = watched.lab / "results" / "laundered.json"
    found = _while_grading(watched, lambda: report.write_json(path, {"x": 1}))
    assert found == [f"created {path}"]


def test_a_noted_file_that_is_then_overwritten_is_still_caught(watched):
    path = watched.lab / "results" / "r.json"

    def write_then_tamper():
        report.write_json(path, {"x": 1})
        path.write_text('{"x": 2}\n')
    assert _while_grading(watched, write_then_tamper) == [f"created {path}"]


def test_pythons_bytecode_cache_of_an_unchanged_source_is_not_a_write(watched):
    src = watched.lab / "grading" / "parts.py"
    found = _while_grading(watched, lambda: py_compile.compile(str(src), doraise=True))
    assert found == []
    forged = watched.lab / "grading" / "__pycache__" / f"parts.{sys.implementation.cache_tag}.pyc"
    found = _while_grading(watched, lambda: forged.write_bytes(b"\0" * 32))
    assert found == [f"changed {forged}"]


def test_the_journal_reads_whole_lines_only_and_skips_workers(tmp_path):
    j = tmp_path / "w.jsonl"
    journal = writes.Journal(j)
    f = tmp_path / "a"
    f.write_text("a")
    writes.note(f, j)
    with open(j, "a") as fh:
        fh.write('{"path": "' + str(tmp_path / "b"))       # a line still being written
    assert journal.explains(f.resolve(), writes.digest(f))
    assert not journal.explains(tmp_path / "b", None)
    with open(j, "a") as fh:
        fh.write('", "digest": null, "worker": null}\n')
    assert journal.explains(tmp_path / "b", "anything")


def test_the_journal_takes_the_lines_of_the_minutes_before_it_was_made(tmp_path, monkeypatch):
    """A build that began before the class noted its nvcc scratch file then: its rename, seen by the
    class as a removal, is explained (CI caught it once). Lines older than LOOKBACK_S, a worker's lines
    and a line cut by where the look back starts are not taken."""
    import json as _json
    import time as _time
    j = tmp_path / "w.jsonl"
    part, old, theirs = tmp_path / ".k.cubin.1.2.part", tmp_path / ".k.cubin.3.4.part", tmp_path / ".x.part"
    writes.note_temporary(part, j)
    with open(j, "a") as fh:
        fh.write(_json.dumps({"path": str(old.resolve()), "digest": None, "worker": None,
                              "time": _time.time() - writes.LOOKBACK_S - 60}) + "\n")
    monkeypatch.setenv(writes.WORKER_VAR, "alice")
    writes.note_temporary(theirs, j)
    monkeypatch.delenv(writes.WORKER_VAR)
    journal = writes.Journal(j)
    assert journal.explains(part.resolve(), None)
    assert not journal.explains(old.resolve(), None)
    assert not journal.explains(theirs.resolve(), None)
    assert not writes.Journal(j, lookback_s=0).explains(part.resolve(), None)
    monkeypatch.setattr(writes, "LOOKBACK_BYTES", j.stat().st_size - 10)     # starts inside the first line
    assert not writes.Journal(j).explains(part.resolve(), None)


def test_a_concurrent_build_of_the_graded_lab_accuses_no_student(small_class, grade_class_tools, tmp_path):
    """A class graded (NOGPU, one worker at a time) while the course's build compiles kernels into the
    same lab's build/ folder the whole time: no row says it wrote outside its folder."""
    from common.build import find_nvcc
    find_nvcc()
    tools = grade_class_tools
    lab = small_class.g.lab
    subs = tmp_path / "subs"
    subs.mkdir()
    for name in ("reference", "untouched"):
        shutil.copytree(small_class.sources[name], subs / name)
    scratch = lab.build_dir / f"concurrent-test-{os.getpid()}"
    src = Path(lab.kernel("v3").path)
    stop = threading.Event()
    built = []
    builder = (f"import sys; from common.build import compile_cubin\n"
               f"compile_cubin({str(src)!r}, sys.argv[1], 'sm_80', force=True)\n")

    def build_loop():
        i = 0
        while not stop.is_set():
            out = scratch / f"v3_{i}.cubin"
            subprocess.run([sys.executable, "-c", builder, str(out)], cwd=ROOT, check=False,
                           env={**os.environ, "PYTHONPATH": os.pathsep.join(
                               filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))})
            if out.exists():
                built.append(out)
            i += 1
    t = threading.Thread(target=build_loop, daemon=True)
    t.start()
    try:
        proc = tools.course("grade-class", "--lab", lab.dir, "--submissions", subs, "--out", tmp_path / "out",
                            "--no-gpu", "--parts", tools.parts, "--seed", tools.seed, "--jobs", 1,
                            "--isolate", "none")
    finally:
        stop.set()
        t.join(timeout=120)
        shutil.rmtree(scratch, ignore_errors=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert built, "the concurrent build wrote no cubin while the class was graded"
    data = json.loads((tmp_path / "out" / "class.json").read_text())
    for s in data["students"]:
        row = json.loads((tmp_path / "out" / "students" / f"{s['name']}.json").read_text())
        assert row["status"] == "graded" and row["outside_writes"] == [], row["outside_writes"][:5]
    assert "wrote outside" not in proc.stdout
