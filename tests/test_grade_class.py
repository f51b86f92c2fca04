"""`make grade-class` without Slurm (no GPU needed): a class graded one worker per submission.

The class of tests/conftest.py (the reference, the untouched workspace, two known-wrong v5 kernels,
one as a .tar.gz) is graded once, NOGPU, PARTS=v5,questions. Each student must score exactly what
`make grade` gives the same workspace alone; a second run grades nothing; a submission that crashes
the grader, hangs, writes outside its folder, or comes as an unsafe archive costs only itself and
is reported; SLURM=print prints scripts bash accepts.
"""
import csv
import io
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path
from types import SimpleNamespace

import pytest

from common.errors import CourseError
from common.grading import classroom, sandbox, slurm, submissions


def _alone(tools, ws, tmp_path, name):
    out = tmp_path / f"{name}.json"
    proc = tools.course("grade", "--lab", tools.lab_dir, "--workspace", ws, "--no-gpu", "--parts", tools.parts,
                        "--seed", tools.seed, "--json", out, env={"GRADE_BUILD": str(tmp_path / f"build-{name}")})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads(out.read_text())


def test_each_student_scores_in_the_class_what_make_grade_gives_them_alone(local_class, small_class,
                                                                            grade_class_tools, tmp_path):
    tools = grade_class_tools
    got = tools.scores_by_check(local_class.data)
    assert set(got) == set(small_class.sources)
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(max_workers=2) as pool:
        alones = dict(zip(small_class.sources, pool.map(lambda kv: _alone(tools, kv[1], tmp_path, kv[0]),
                                                        small_class.sources.items())))
    for name, alone in alones.items():
        status, score, checks = got[name]
        assert status == "graded", (name, local_class.stdout)
        assert score == alone["score"], (name, score, alone["score"])
        want = {f"{p['part']}:{c['check']}": (c["status"], c["points"]) for p in alone["parts"] for c in p["checks"]}
        assert checks == want, name
    # the scores differ, so the comparison can fail: full marks, zero on v5, and two ways to lose points
    ref, untouched = got["reference"], got["untouched"]
    assert ref[1] == local_class.data["summary"]["graded_max"] > 0
    assert all(pts == 0 for col, (st, pts) in untouched[2].items() if col.startswith("v5:"))
    assert got["v5_fp16_math"][2]["v5:computes"] == ("fail", 0)
    assert got["v5_acc_in_local_memory"][2]["v5:registers"] == ("fail", 0)
    assert got["v5_acc_in_local_memory"][2]["v5:computes"][0] == "pass"


def test_progress_is_one_line_per_submission_and_the_end_is_a_table_and_the_paths(local_class):
    lines = local_class.stdout.splitlines()
    progress = [l for l in lines if l.startswith("[")]
    assert len(progress) == 4 and {l.split()[0] for l in progress} == {f"[{i}/4]" for i in range(1, 5)}
    assert all(re.search(r"\d+\.\d s(  |$)", l) for l in progress), progress     # the seconds, then any flag
    assert all(len(l) <= 100 for l in progress), "one short line each: a flag's sentence is in class.html"
    assert any(l.split()[:4] == ["student", "status", "score", "of"] for l in lines)
    assert "time per submission: mean" in local_class.stdout
    for f in ("class.html", "class.csv", "class.json"):
        assert str(local_class.out / f) in local_class.stdout and (local_class.out / f).is_file()


def test_the_summary_tables_note_is_a_few_whole_words():
    """The note column had the copy flag's sentence cut at 70 characters ("...lines of the lab's")."""
    from common.grading.classreport import NOTE_CHARS, _note
    long_flag = "its graded regions repeat 31 of the 31 distinctive lines of the lab's reference kernels line for line"
    assert _note({"reason": "", "flags": long_flag, "copied": long_flag}) == "copied?"
    crash = "the grader's worker failed (exit status 1): TypeError: unsupported operand type(s) for *: 'int' and 'function'"
    note = _note({"reason": crash, "flags": long_flag, "copied": long_flag})
    assert len(note) <= NOTE_CHARS and note.endswith("...; copied?") and note.startswith("the grader's worker failed")
    assert _note({"reason": "did not finish in 30 s (TIMEOUT=30); killed", "flags": ""}) == \
        "did not finish in 30 s (TIMEOUT=30); killed"


def test_the_csv_has_a_row_per_student_a_column_per_check_and_the_total(local_class, small_class):
    rows = list(csv.DictReader(io.StringIO((local_class.out / "class.csv").read_text())))
    data = local_class.data
    assert [r["student"] for r in rows] == sorted(small_class.sources)
    cols = [c["column"] for c in data["checks"]]
    assert cols[0] == "v5:computes" and len(cols) == len({c for c in cols})
    for r, s in zip(rows, data["students"]):
        assert int(r["total"]) == s["score"] == sum(int(r[c]) for c in cols if r[c] != "")
        assert r["v5:correct"] == ""                  # needs a GPU: not graded, not zero
    # NOGPU: every student out of the same points, the class's "of" theirs, and no GPU check scored
    graded = [s for s in data["students"] if s["status"] == "graded"]
    assert {s["graded_max"] for s in graded} == {data["summary"]["graded_max"]}, [s["graded_max"] for s in graded]
    gpu_checks = {f"{p.name}:{c.name}" for p in small_class.g.parts for c in p.checks if getattr(c, "needs_gpu", False)}
    for rate in data["pass_rates"]:
        if rate["column"] in gpu_checks:
            assert rate["passed"] == rate["failed"] == 0 and rate["rate"] is None, rate


def test_the_html_report_is_self_contained_and_links_every_students_page(local_class):
    page = (local_class.out / "class.html").read_text()
    assert "<svg" in page and "Pass rate per check" in page and "Most common reasons" in page
    assert "http://" not in page.replace('xmlns="http://www.w3.org/2000/svg"', "") and "https://" not in page
    for s in local_class.data["students"]:
        assert f"href='students/{s['name']}.html'" in page
        student = (local_class.out / "students" / f"{s['name']}.html").read_text()
        assert "class.html" in student and "score" in student
    reasons = local_class.data["reasons"]
    assert reasons and reasons[0]["count"] >= 1 and all(e["students"] for e in reasons)
    assert any("FP16" in e["example"] for e in reasons)


def test_a_second_run_grades_nothing_and_merge_alone_rewrites_the_same_report(local_class, small_class,
                                                                               grade_class_tools, tmp_path):
    tools = grade_class_tools
    out = shutil.copytree(local_class.out, tmp_path / "out")      # the shared one stays as it is
    jsons = {p: p.stat().st_mtime_ns for p in (out / "students").glob("*.json")}
    proc = tools.course("grade-class", "--lab", tools.lab_dir, "--submissions", small_class.folder, "--out",
                        out, "--no-gpu", "--parts", tools.parts)       # the seed comes from the manifest
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "4 kept from an earlier run" in proc.stdout and "0 to grade" in proc.stdout
    assert proc.stdout.count("kept (graded before)") == 4
    assert {p: p.stat().st_mtime_ns for p in jsons} == jsons
    merged = tools.course("grade-class", "--lab", tools.lab_dir, "--out", out, "--merge")
    assert merged.returncode == 0, merged.stdout + merged.stderr
    again = json.loads((out / "class.json").read_text())
    assert tools.scores_by_check(again) == tools.scores_by_check(local_class.data)


# ---------------------------------------------------------------------------------------------
# Submissions that misbehave: a worker that crashes, one that hangs, one that writes outside
# ---------------------------------------------------------------------------------------------

FAKE_NVCC = """#!/bin/bash
# the test's nvcc: does what the source's marker says, then runs the real one (a run without a source
# last, such as the course's `nvcc --version`, is the real one's: grep would read --version as its option)
src="${@: -1}"
[ -f "$src" ] || exec REAL "$@"
if grep -q GRADECLASS_TEST_HANG "$src" 2>/dev/null; then sleep 120; fi
if grep -q GRADECLASS_TEST_CRASH "$src" 2>/dev/null; then kill -9 $PPID; sleep 5; exit 1; fi
for target in $(grep -o 'GRADECLASS_TEST_WRITE=[^ ]*' "$src" 2>/dev/null | cut -d= -f2); do
  echo written > "$target" 2>/dev/null || true
done
exec REAL "$@"
"""


def _marked(ref, folder, marker):
    shutil.copytree(ref, folder)
    v5 = folder / "v5_2d_blocktiling.cu"
    v5.write_text(f"// {marker}\n" + v5.read_text())
    return folder


# the adversarial class's --timeout: the hang is cut off after it, and the good submission must finish
# within it. Alone, a submission grades (NOGPU, v5) in about 5 s; under `make test` on the H200 (16
# workers beside GPU tests) the good one took over 10 s, so 10 s accused an honest student of hanging.
HANG_TIMEOUT_S = 30


@pytest.fixture(scope="module")
def adversarial(small_class, grade_class_tools, tmp_path_factory):
    """A class of misbehaving submissions beside one good one, graded one at a time, no sandbox
    (ISOLATE=none: a write outside is then possible, and must be detected)."""
    from common.build import find_nvcc
    root = tmp_path_factory.mktemp("adversarial")
    fake = root / "bin" / "nvcc"
    fake.parent.mkdir()
    fake.write_text(FAKE_NVCC.replace("REAL", find_nvcc()))
    fake.chmod(0o755)
    subs = root / "submissions"
    subs.mkdir()
    ref = small_class.sources["reference"]
    shutil.copytree(ref, subs / "good")
    crash = _marked(ref, root / "crash", "GRADECLASS_TEST_CRASH")
    with tarfile.open(subs / "crash.tgz", "w:gz") as tf:
        tf.add(crash, arcname=".")
    _marked(ref, subs / "hang", "GRADECLASS_TEST_HANG")
    target = subs / "good" / "from_writer.txt"            # into another student's folder
    _marked(ref, subs / "writer", f"GRADECLASS_TEST_WRITE={target}")
    with tarfile.open(subs / "climber.tar.gz", "w:gz") as tf:
        data = b"// nothing to see\n"
        info = tarfile.TarInfo("../../escaped.cu")
        info.size = len(data)
        tf.addfile(info, io.BytesIO(data))
    shutil.copytree(ref, subs / "linker")
    (subs / "linker" / "v5_2d_blocktiling.cu").unlink()
    (subs / "linker" / "v5_2d_blocktiling.cu").symlink_to(small_class.g.kernel_files()["v5"])
    cheat = shutil.copytree(ref, subs / "includer")
    (cheat / "v5_2d_blocktiling.cu").write_text('#include "../../../labs/lab07-matmul-registers/kernels/'
                                                'v5_2d_blocktiling.cu"\n')
    out = root / "out"
    tools = grade_class_tools
    proc = tools.course("grade-class", "--lab", tools.lab_dir, "--submissions", subs, "--out", out, "--no-gpu",
                        "--parts", tools.parts, "--seed", tools.seed, "--jobs", 1, "--timeout", HANG_TIMEOUT_S,
                        "--isolate", "none", env={"PATH": f"{fake.parent}:{os.environ['PATH']}"})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    data = json.loads((out / "class.json").read_text())
    return SimpleNamespace(proc=proc, data=data, rows={s["name"]: s for s in data["students"]}, target=target,
                           fake=fake, root=root, out=out, subs=subs)


def test_a_crash_and_a_hang_cost_only_their_own_submission(adversarial, local_class):
    rows = adversarial.rows
    assert rows["crash"]["status"] == "crashed" and "signal 9" in rows["crash"]["reason"]
    assert rows["hang"]["status"] == "timed out" and f"{HANG_TIMEOUT_S} s" in rows["hang"]["reason"]
    assert rows["hang"]["seconds"] < 2 * HANG_TIMEOUT_S
    ref = next(s for s in local_class.data["students"] if s["name"] == "reference")
    assert rows["good"]["status"] == "graded" and rows["good"]["score"] == ref["score"]
    assert rows["writer"]["status"] == "graded" and rows["writer"]["score"] == ref["score"]
    page = (adversarial.out / "students" / "crash.html").read_text()
    assert "crashed" in page and "End of the worker" in page
    assert "crashed" in adversarial.proc.stdout and "timed out" in adversarial.proc.stdout


def test_an_archive_that_climbs_out_a_link_out_and_an_include_of_the_reference_are_refused(adversarial):
    rows = adversarial.rows
    assert rows["climber"]["status"] == "refused" and "climbs out" in rows["climber"]["reason"]
    assert not (adversarial.root / "escaped.cu").exists() and not (adversarial.root.parent / "escaped.cu").exists()
    assert rows["linker"]["status"] == "refused" and "symbolic link" in rows["linker"]["reason"]
    assert rows["includer"]["status"] == "refused" and "outside the workspace" in rows["includer"]["reason"]
    assert adversarial.data["summary"]["refused"] == 3


def test_a_submission_that_writes_outside_its_folder_is_reported(adversarial):
    rows = adversarial.rows
    assert adversarial.target.exists(), "the fake nvcc did not write (without a sandbox it can)"
    assert any(str(adversarial.target) in w for w in rows["writer"]["outside_writes"]), rows["writer"]
    assert "wrote outside its folder" in rows["writer"]["flags"]
    for name in ("good", "hang", "crash"):
        assert not any(str(adversarial.target) in w for w in rows[name]["outside_writes"]), name
    assert "wrote outside its folder" in adversarial.proc.stdout
    assert "wrote outside" in (adversarial.out / "class.html").read_text()


def test_under_bubblewrap_writes_into_the_lab_or_other_submissions_do_not_happen(adversarial, small_class,
                                                                                 grade_class_tools, tmp_path):
    ok, _, why = sandbox.probe()
    if not ok:
        pytest.skip(f"no sandbox to test here: {why}")
    tools = grade_class_tools
    subs = tmp_path / "subs"
    (subs / ".another").mkdir(parents=True)              # a folder beside the submissions (hidden from it)
    into_lab = tools.lab_dir / "grading" / "from_writer.txt"
    beside = subs / ".another" / "from_writer.txt"
    in_tmp = tmp_path / "in_tmp.txt"                     # /tmp stays writable: proves the test's nvcc ran
    _marked(small_class.sources["reference"], subs / "writer",
            f"GRADECLASS_TEST_WRITE={into_lab} GRADECLASS_TEST_WRITE={beside} GRADECLASS_TEST_WRITE={in_tmp}")
    try:
        proc = tools.course("grade-class", "--lab", tools.lab_dir, "--submissions", subs, "--out", tmp_path / "out",
                            "--no-gpu", "--parts", tools.parts, "--seed", tools.seed, "--isolate", "bwrap",
                            env={"PATH": f"{adversarial.fake.parent}:{os.environ['PATH']}"})
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert "isolation: bwrap" in proc.stdout
        row = json.loads((tmp_path / "out" / "students" / "writer.json").read_text())
        assert row["status"] == "graded" and row["isolation"] == "bwrap", row
        assert in_tmp.exists(), "the test's nvcc did not run inside the sandbox"
        assert not into_lab.exists(), "bwrap let the worker write into the lab"
        assert not beside.exists(), "bwrap let the worker write beside the submissions"
    finally:
        into_lab.unlink(missing_ok=True)


# ---------------------------------------------------------------------------------------------
# Archives, includes, seeds, the demo class: no grading needed
# ---------------------------------------------------------------------------------------------

def _tar(path, members):
    with tarfile.open(path, "w") as tf:
        for info, data in members:
            tf.addfile(info, io.BytesIO(data) if data is not None else None)
    return submissions.Submission(path.stem, path, "tar")


def _info(name, kind=tarfile.REGTYPE, size=0, link=""):
    i = tarfile.TarInfo(name)
    i.type, i.size, i.linkname = kind, size, link
    return i


@pytest.mark.parametrize("name,info,words", [
    ("abs", _info("/etc/cron.d/x", size=1), "absolute path"),
    ("dots", _info("ws/../../x", size=1), "climbs out"),
    ("sym", _info("ws/v5.cu", tarfile.SYMTYPE, link="../../../etc/passwd"), "symbolic link"),
    ("symabs", _info("ws/v5.cu", tarfile.SYMTYPE, link="/etc/passwd"), "symbolic link"),
    ("hard", _info("ws/v5.cu", tarfile.LNKTYPE, link="../outside"), "climbs out"),
    ("dev", _info("ws/null", tarfile.CHRTYPE), "device"),
    ("fifo", _info("ws/pipe", tarfile.FIFOTYPE), "device"),
])
def test_unsafe_archive_members_are_refused_whole(small_class, tmp_path, name, info, words):
    data = b"x" * info.size if info.isfile() else None
    sub = _tar(tmp_path / f"{name}.tar", [(info, data)])
    with pytest.raises(submissions.Refused, match=words):
        submissions.stage(small_class.g, sub, tmp_path / "stage")
    assert not list((tmp_path / "stage" / "files").rglob("*"))


def test_a_zip_that_climbs_out_is_refused_and_a_good_zip_is_unpacked_through_its_top_folder(small_class, tmp_path):
    bad = tmp_path / "bad.zip"
    with zipfile.ZipFile(bad, "w") as z:
        z.writestr("../evil.cu", "x")
    with pytest.raises(submissions.Refused, match="climbs out"):
        submissions.stage(small_class.g, submissions.Submission("bad", bad, "zip"), tmp_path / "s1")
    good = tmp_path / "good.zip"
    ref = small_class.sources["reference"]
    with zipfile.ZipFile(good, "w") as z:
        for f in ref.iterdir():
            z.write(f, f"good/{f.name}")
    ws = submissions.stage(small_class.g, submissions.Submission("good", good, "zip"), tmp_path / "s2")
    assert (ws / "v5_2d_blocktiling.cu").read_text() == (ref / "v5_2d_blocktiling.cu").read_text()


@pytest.mark.parametrize("line,ok", [
    ('#include <cuda_fp16.h>', True), ('#include <mma.h>', True), ('#include "mine.cuh"', True),
    ('#include "/etc/passwd"', False), ('  #  include "../kernels/v5_2d_blocktiling.cu"', False),
    ('#include KERNEL_FILE', False), ('#include <v6_vectorized.cu>', False), ('#include "v6_vectorized.cu"', False),
    ('// #include "/etc/passwd"', True), ('/* #include <v6_vectorized.cu> */', True),
    # what the preprocessor reads as #include too: a digraph, a comment inside, a continued line
    ('%:include <v6_vectorized.cu>', False), ('#/**/include <v6_vectorized.cu>', False),
    ('# /* a comment\n over two lines */ include "/etc/passwd"', False), ('#inc\\\nlude <v6_vectorized.cu>', False),
    ('#include /* why not */ "mine.cuh" // mine', True),
    ('#include_next "/etc/passwd"', False), ('#import <v6_vectorized.cu>', False),
    ('??=include <v6_vectorized.cu>', False),
])
def test_includes_may_name_the_workspace_and_system_headers_not_the_reference_kernels(small_class, tmp_path, line, ok):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "mine.cuh").write_text("// a header of the student's own\n")
    (ws / "v5_2d_blocktiling.cu").write_text(f"{line}\n__global__ void k() {{}}\n")
    if ok:
        submissions.check_includes(small_class.g, ws)
    else:
        with pytest.raises(submissions.Refused):
            submissions.check_includes(small_class.g, ws)


def test_two_submissions_of_one_name_and_an_empty_folder_are_errors_that_say_what_to_do(tmp_path):
    (tmp_path / "alice").mkdir()
    (tmp_path / "alice.tar.gz").write_bytes(b"")
    with pytest.raises(CourseError, match="two submissions are named alice"):
        submissions.find(tmp_path)
    (tmp_path / "empty").mkdir()
    with pytest.raises(CourseError, match="holds no submissions"):
        submissions.find(tmp_path / "empty")


def test_one_seed_for_the_class_or_one_per_student_derived_from_the_name():
    plan = classroom.Plan(lab="l", submissions="s", out="o", seed=7)
    assert plan.seed_for("alice") == plan.seed_for("bob") == 7
    plan.seed_policy = "student"
    a, b = plan.seed_for("alice"), plan.seed_for("bob")
    assert a != b and a == classroom.student_seed(7, "alice") and 0 <= a < 2 ** 31
    assert classroom.student_seed(8, "alice") != a


def test_the_demo_class_is_the_reference_the_untouched_workspace_and_each_known_wrong_kernel(small_class):
    g = small_class.g
    folders = sorted(p.name for p in (small_class.root / "all").iterdir())
    assert folders == sorted(["reference", "untouched"] + [w.name for w in g.wrong])
    assert len(folders) >= 10
    ref = small_class.root / "all" / "reference"
    for w in g.wrong:
        ws = small_class.root / "all" / w.name
        differ = [f.name for f in ref.iterdir() if f.is_file() and f.read_text() != (ws / f.name).read_text()]
        assert differ == [g.kernel_files()[w.part].name], (w.name, differ)


def test_the_worker_environment_is_scrubbed_and_its_home_is_its_own(tmp_path):
    env = sandbox.worker_env(tmp_path, environ={"PATH": "/usr/bin", "AWS_SECRET_ACCESS_KEY": "x", "HOME": "/root",
                                                "SSH_AUTH_SOCK": "/tmp/s", "CUDA_VISIBLE_DEVICES": "1"})
    assert "AWS_SECRET_ACCESS_KEY" not in env and "SSH_AUTH_SOCK" not in env
    assert env["HOME"].startswith(str(tmp_path)) and env["TMPDIR"].startswith(str(tmp_path))
    assert env["GRADE_BUILD"].startswith(str(tmp_path)) and env["CUDA_VISIBLE_DEVICES"] == "1"


# ---------------------------------------------------------------------------------------------
# SLURM=print, and SLURM=1 where there is no sbatch
# ---------------------------------------------------------------------------------------------

def test_slurm_print_prints_an_array_script_and_a_merge_script_that_bash_accepts(small_class, grade_class_tools,
                                                                                 tmp_path):
    lab = grade_class_tools.lab_dir
    proc = subprocess.run(["make", "-s", "-C", str(lab), "grade-class", f"SUBMISSIONS={small_class.folder}",
                           f"OUT={tmp_path / 'out'}", "SLURM=print", "PARTITION=gpu", "ACCOUNT=course42",
                           "TIME=01:30:00", "EXTRA_SBATCH=--qos=short --mem=16G", "SEED=5"],
                          capture_output=True, text=True, env={**os.environ, "PYTHON": sys.executable})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert not (tmp_path / "out").exists(), "SLURM=print must write nothing"
    chunks = proc.stdout.split("# ---- ")
    grade = chunks[1].split("\n", 1)[1]
    merge = chunks[2].split("\n", 1)[1]
    for text in (grade, merge):
        script = tmp_path / "s.sh"
        script.write_text(text)
        check = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True)
        assert check.returncode == 0, check.stderr + text
        assert text.startswith("#!/bin/bash\n") and "#SBATCH --partition=gpu" in text
        assert "#SBATCH --account=course42" in text and "#SBATCH --qos=short" in text and "#SBATCH --mem=16G" in text
    assert "#SBATCH --array=0-3\n" in grade and "#SBATCH --gres=gpu:1" in grade and "#SBATCH --time=01:30:00" in grade
    assert '--task "$SLURM_ARRAY_TASK_ID"' in grade and "--merge" in merge and "--gres" not in merge
    assert "--dependency=afterany:<array job id>" in chunks[3]


def test_slurm_print_with_nogpu_asks_for_no_gpu(small_class, grade_class_tools, tmp_path):
    proc = grade_class_tools.course("grade-class", "--lab", grade_class_tools.lab_dir, "--submissions",
                                    small_class.folder, "--out", tmp_path / "o", "--slurm", "print", "--no-gpu")
    assert proc.returncode == 0, proc.stderr
    assert "--gres" not in proc.stdout and "#SBATCH --array=0-3" in proc.stdout


def test_slurm_without_sbatch_says_where_to_run_it(small_class, tmp_path, monkeypatch):
    monkeypatch.setattr(slurm.shutil, "which", lambda name: None)
    args = SimpleNamespace(submissions=str(small_class.folder), out=str(tmp_path / "o"), parts=None, seed=1,
                           seeds=None, no_gpu=True, arch=None, timeout=None, isolate=None, slurm="1", force=False)
    plan = classroom.make_plan(small_class.g, args)
    with pytest.raises(CourseError, match="sbatch is not on the PATH") as e:
        slurm.run(small_class.g, plan, args, plan.subs(), [], 900)
    assert "SLURM=print" in e.value.hint


# ---------------------------------------------------------------------------------------------
# The GPU path through grade-class, on the simulated GPU (common/grading/simgpu)
# ---------------------------------------------------------------------------------------------

def test_the_gpu_checks_run_inside_the_workers_on_a_simulated_gpu(small_class, grade_class_tools, tmp_path):
    """Without --no-gpu the worker grades correctness, races and speed in its own GPU sub-workers
    (here numpy behind pycuda, and a fake compute-sanitizer): through the sandbox and the scrubbed
    environment, the reference keeps every GPU point and a kernel that reads past K loses `correct`."""
    from common.grading import simgpu
    tools = grade_class_tools
    fake = simgpu.write_sanitizer(tmp_path / "bin")
    subs = tmp_path / "subs"
    subs.mkdir()
    shutil.copytree(small_class.sources["reference"], subs / "reference")
    shutil.copytree(small_class.root / "all" / "v5_reads_past_k", subs / "v5_reads_past_k")
    env = {"PYTHONPATH": os.pathsep.join([str(simgpu.PATH), os.environ.get("PYTHONPATH", "")]),
           "GRADE_TIMING_SIZE": "192", "PATH": f"{fake.parent}:{os.environ['PATH']}"}
    proc = tools.course("grade-class", "--lab", tools.lab_dir, "--submissions", subs, "--out", tmp_path / "out",
                        "--parts", "v5", "--seed", tools.seed, "--arch", "sm_90", env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = {s["name"]: s for s in json.loads((tmp_path / "out" / "class.json").read_text())["students"]}
    ref, wrong = rows["reference"], rows["v5_reads_past_k"]
    assert ref["status"] == "graded" and ref["pending"] == 0 and ref["score"] == ref["graded_max"] == 7, ref
    assert {col: c["status"] for col, c in ref["checks"].items()} == {f"v5:{c}": "pass" for c in
                                                                      ("computes", "registers", "correct",
                                                                       "race-free", "fast")}
    assert wrong["checks"]["v5:correct"]["status"] == "fail" and "NaN" in wrong["checks"]["v5:correct"]["reason"]
    assert wrong["checks"]["v5:fast"] == {"status": "fail", "points": 0, "reason": "needs correct first"}
    assert wrong["score"] <= ref["score"] - 4        # correct (3) and fast (1) lost


def test_with_a_gpu_the_class_builds_each_graded_labs_reference_kernels_first(tmp_path, monkeypatch):
    """prebuild, for every lab with exercises: the kernels of its code parts, and for a part graded by its
    rules every kernel those rules may launch (lab 7d's dispatcher has no kernel of its own: on the H200
    the class stopped at "there is no kernel ''"; then its workers built splitk_fp32 and were blamed)."""
    from common.grading import rules
    from common.grading.spec import Grading, has_grading
    from common.lab import all_lab_dirs, load
    for d in all_lab_dirs():
        lab = load(d)
        if not has_grading(lab):
            continue
        g = Grading(lab)
        built = []
        monkeypatch.setattr(type(lab), "build", lambda self, kernels, archs: built.append(([k.name for k in kernels], archs)))
        plan = SimpleNamespace(no_gpu=False, arch="sm_90", parts=None, out_dir=tmp_path / lab.short)
        classroom.prebuild(g, plan, gpus=[0])
        want = sorted({p.kernel for p in g.code_parts if p.kernel})
        if any(not p.kernel for p in g.code_parts):
            assert len(want) < len(g.code_parts)                           # a rules part names no kernel
        if any(p.rules for p in g.parts):
            want += [k.name for k in rules.kernels(g) if k.base_name not in want]
        assert built == [(want, ["sm_90"])], lab.short
        if lab.short == "lab07d":                                           # the dispatcher's three families
            assert {"gemv_fp32", "splitk_fp32", "v8"} <= {n.split("[")[0] for n in want}


def test_workers_that_share_a_gpu_take_turns_on_it(tmp_path, monkeypatch):
    """gpu.turn: links to one GPU's lock file (one per worker, as grade-class makes them) exclude each
    other, so a submission is never timed or profiled beside another; without the variable, no lock."""
    import fcntl
    from common.grading import gpu as gpumod
    lock = classroom.gpu_lock(tmp_path, "0")
    lock.touch()
    mine, theirs = tmp_path / "a" / "gpu.lock", tmp_path / "b" / "gpu.lock"
    for link in (mine, theirs):
        link.parent.mkdir()
        os.link(lock, link)
    monkeypatch.setenv(gpumod.LOCK_VAR, str(mine))

    def busy():
        with open(theirs, "rb") as f:
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return True
            fcntl.flock(f, fcntl.LOCK_UN)
            return False
    with gpumod.turn():
        assert busy()
    assert not busy()
    monkeypatch.delenv(gpumod.LOCK_VAR)
    with gpumod.turn():
        assert not busy()


def test_the_wait_for_a_turn_is_its_own_phase_not_the_grading_phase_s(tmp_path, monkeypatch):
    """A worker queued behind another on a shared GPU: the seconds it waits for the lock go to
    gpu.LOCK_WAIT, and the phase that waited (a rules part's, inside "checks and reports") keeps only
    its own work, so a selftest's phase times say where grading spends its time, not where it queued."""
    import fcntl
    import threading
    import time
    from types import SimpleNamespace
    from common.grading import gpu as gpumod
    from common.grading.grader import timed
    lock = tmp_path / "gpu.lock"
    lock.touch()
    monkeypatch.setenv(gpumod.LOCK_VAR, str(lock))
    env = SimpleNamespace(phases={})
    held = open(lock, "rb")
    fcntl.flock(held, fcntl.LOCK_EX)                       # another worker's turn, released 0.6 s later
    threading.Timer(0.6, lambda: fcntl.flock(held, fcntl.LOCK_UN)).start()
    try:
        with timed(env, "checks and reports"):
            time.sleep(0.2)                                # work before the GPU part
            with gpumod.turn(env.phases):
                pass
    finally:
        held.close()
    waited = env.phases[gpumod.LOCK_WAIT]
    assert waited >= 0.3                                   # 0.6 s held, 0.2 s of them spent working
    assert 0.15 <= env.phases["checks and reports"] < 0.35  # the 0.2 s of work, not the 0.6 s of the block
    with timed(env, "checks and reports"), gpumod.turn(env.phases):   # no one else: no wait added
        pass
    assert env.phases[gpumod.LOCK_WAIT] - waited < 0.1


def test_a_class_with_more_workers_than_gpus_grades_each_on_its_turn(small_class, grade_class_tools, tmp_path):
    """Two workers on one (simulated) GPU: both graded on it, as each would be alone (on the H200, lab 7a's
    class with JOBS=4 on its one GPU cost the reference a 'fast' point, timed beside another submission,
    and a known-wrong kernel a bank-conflict point, when two ncu runs met)."""
    from common.grading import simgpu
    tools = grade_class_tools
    fake = simgpu.write_sanitizer(tmp_path / "bin")
    smi = fake.parent / "nvidia-smi"
    smi.write_text("#!/bin/sh\n[ \"$1\" = -L ] && echo 'GPU 0: a simulated GPU (UUID: GPU-0)' && exit 0\nexit 9\n")
    smi.chmod(0o755)
    subs = tmp_path / "subs"
    subs.mkdir()
    shutil.copytree(small_class.sources["reference"], subs / "reference")
    shutil.copytree(small_class.sources["reference"], subs / "twin")
    env = {"PYTHONPATH": os.pathsep.join([str(simgpu.PATH), os.environ.get("PYTHONPATH", "")]),
           "GRADE_TIMING_SIZE": "192", "PATH": f"{fake.parent}:{os.environ['PATH']}", "CUDA_VISIBLE_DEVICES": "0"}
    proc = tools.course("grade-class", "--lab", tools.lab_dir, "--submissions", subs, "--out", tmp_path / "out",
                        "--parts", "v5", "--seed", tools.seed, "--arch", "sm_90", "--jobs", 2, "--isolate", "none",
                        env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = json.loads((tmp_path / "out" / "class.json").read_text())["students"]
    assert [(r["name"], r["status"], r["score"]) for r in rows] == [("reference", "graded", 7), ("twin", "graded", 7)]
    for r in rows:
        record = json.loads((tmp_path / "out" / "students" / f"{r['name']}.json").read_text())
        assert record["gpu_id"] == "0"
        assert record["timeout"] == 2 * classroom.DEFAULT_TIMEOUT_GPU      # its turn may wait for the other's


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
@pytest.mark.parametrize("where", ["lab", "top"])
def test_a_shells_own_out_variable_is_not_the_classs_output_folder(where, tmp_path):
    """OUT= on make's command line names the class's folder; an OUT the shell exports (some CI and cloud
    machines set one) is left alone, or a class would be written into that machine's folder."""
    root = Path(__file__).resolve().parents[1]
    lab = root / "labs" / "lab07-matmul-registers"
    cmd = ["make", "-n", "-C", str(lab if where == "lab" else root), "grade-class", "SUBMISSIONS=/tmp/subs"]
    cmd += ["LAB=lab07"] if where == "top" else []
    run = lambda extra, env: subprocess.run(cmd + extra, capture_output=True, text=True,
                                            env={**os.environ, **env}).stdout
    assert "--out" not in run([], {"OUT": str(tmp_path / "machine")})
    assert f"--out {tmp_path / 'class'}" in run([f"OUT={tmp_path / 'class'}"], {"OUT": str(tmp_path / "machine")})


def test_a_submission_that_repeats_the_reference_regions_is_flagged_for_the_teacher(local_class, small_class, tmp_path):
    """The demo class's "reference" is the lab's reference kernels: the class report says so beside its
    score, without deducting anything; the untouched workspace and a known-wrong kernel (the reference
    with one bug) show what a partial match gives. A workspace with its own code in most regions is not flagged."""
    from common.grading import workspace as W
    flags = {s["name"]: s["flags"] for s in local_class.data["students"]}
    assert "copied?" in flags["reference"] and "no points deducted" in flags["reference"]
    assert not flags["untouched"]
    by = {s["name"]: s["score"] for s in local_class.data["students"]}
    assert by["reference"] == local_class.data["summary"]["graded_max"]          # flagged, not docked
    # half of the reference's answer lines rewritten (as a student's own code would differ): no flag
    own = tmp_path / "own"
    shutil.copytree(small_class.sources["reference"], own)
    answers = W.answer_lines(small_class.g)
    lines = [l for ls in answers.values() for l in ls]
    for f in own.glob("*.cu"):
        text = f.read_text().split("\n")
        f.write_text("\n".join(l + " ;" if W._norm(l) in lines[::2] else l for l in text))   # code of its own
    assert W.copy_report(small_class.g, own) == ""
    assert "copied?" in W.copy_report(small_class.g, small_class.sources["reference"])
