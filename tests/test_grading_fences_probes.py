"""Two lab-agnostic check kinds of the grader, on synthetic data (no GPU):

  cp-async-fence (common/grading/fences.py): a SASS loop that issues cp.async must wait (DEPBAR), have
      a barrier (BAR.SYNC), and pass the barrier between each wait and the next shared load, round the loop;
  probe (common/grading/hostprobe.py): a lab's host program built around a student's file (PROBE_KERNEL,
      host pass only), run, and judged by the lab's verdict;
  bank-conflicts (common/grading/bankcheck.py, a GPU kind): its verdict on synthetic counts, and how it
      reads ncu's CSV (a fake ncu that prints two launches) or says that ncu is missing.
"""
import shutil
from types import SimpleNamespace

import pytest

from common.errors import CourseError
from common.grading import fences, hostprobe


PROLOGUE = ["LDGSTS.E.BYPASS.LTC128B.128 [R3], desc[UR4][R4.64]", "LDGDEPBAR", "DEPBAR.LE SB0, 0x1",
            "BAR.SYNC.DEFER_BLOCKING 0x0"]


def _listing(body, start=0x100, prologue=True):
    """SASS lines at consecutive addresses, then a branch back to the first: one loop; before it, a
    prologue that copies, waits and passes a barrier (unless prologue=False)."""
    head = [f"/*{0x10 * (i + 1):04x}*/ {op} ;" for i, op in enumerate(PROLOGUE if prologue else [])]
    lines = [f"/*{start + 0x10 * i:04x}*/ {op} ;" for i, op in enumerate(body)]
    end = start + 0x10 * len(body)
    return (["/*0000*/ MOV R1, c[0x0][0x28] ;"] + head + lines
            + [f"/*{end:04x}*/ @P0 BRA 0x{start:x} ;", f"/*{end + 0x10:04x}*/ EXIT ;"])


GOOD = ["LDGSTS.E.BYPASS.LTC128B.128 [R3], desc[UR4][R4.64]", "LDGDEPBAR", "FFMA R8, R9, R10, R8",
        "LDS.128 R12, [R2]", "FFMA R8, R12, R10, R8", "DEPBAR.LE SB0, 0x1", "BAR.SYNC.DEFER_BLOCKING 0x0",
        "LDS.128 R12, [R2+0x10]", "FFMA R8, R12, R10, R8"]


def test_a_pipeline_that_waits_then_fences_before_its_reads_passes():
    assert fences.problems(_listing(GOOD)) == []


def test_a_loop_without_copies_is_not_judged():
    assert fences.problems(_listing(["LDS R1, [R2]", "FFMA R3, R1, R1, R3"])) == []


def test_a_loop_that_never_waits_for_its_copies_fails():
    body = [op for op in GOOD if not op.startswith("DEPBAR")]
    (problem,) = fences.problems(_listing(body))
    assert "never waits" in problem and "DEPBAR" in problem


def test_a_loop_without_a_barrier_fails():
    body = [op for op in GOOD if not op.startswith("BAR")]
    (problem,) = fences.problems(_listing(body))
    assert "no barrier" in problem
    # the symptom, not lab 7b's question own_copies_only (whose copies a thread's wait covers)
    assert "own" not in problem and "this thread" not in problem, problem


def test_a_barrier_before_the_wait_leaves_the_next_load_unfenced():
    body = GOOD[:5] + ["BAR.SYNC.DEFER_BLOCKING 0x0", "DEPBAR.LE SB0, 0x1"] + GOOD[7:]
    (problem,) = fences.problems(_listing(body))
    assert "LDS.128 at 0x170" in problem and "DEPBAR at 0x160" in problem and "before any barrier" in problem


def test_the_scan_goes_round_the_loop_from_the_wait():
    # the wait is the loop's last instruction; the first load at the loop's top is unfenced
    body = ["LDS R1, [R2]", "LDGSTS.E [R3], desc[UR4][R4.64]", "BAR.SYNC.DEFER_BLOCKING 0x0", "DEPBAR.LE SB0, 0x1"]
    (problem,) = fences.problems(_listing(body))
    assert "LDS at 0x100" in problem
    body = ["BAR.SYNC.DEFER_BLOCKING 0x0", "LDS R1, [R2]", "LDGSTS.E [R3], desc[UR4][R4.64]", "DEPBAR.LE SB0, 0x1"]
    assert fences.problems(_listing(body)) == []


def test_never_executed_placeholders_are_not_loads():
    body = GOOD[:7] + ["@!PT LDS RZ, [RZ]"] + GOOD[7:]
    body[6], body[7] = body[7], body[6]        # the placeholder between the wait and the barrier
    assert fences.problems(_listing(body)) == []


# ---------------------------------------------------------------------------------------------
# hostprobe: a real nvcc build of a tiny probe around a tiny "kernel" (no CuTe, a few seconds)
# ---------------------------------------------------------------------------------------------

KERNEL = """
#ifndef WIDTH
#define WIDTH 4
#endif
constexpr int table[4] = {0, 1, 2, WIDTH};
__global__ void student_kernel(float* x) { x[threadIdx.x] = table[threadIdx.x % 4]; }
"""
PROGRAM = """
#ifndef __CUDA_ARCH__
#include PROBE_KERNEL
#include <cstdio>
int main() { for (int i = 0; i < 4; ++i) printf("%d\\n", table[i]); return 0; }
#endif
"""


def _verdict(outputs):
    for defines, text in outputs:
        values = [int(x) for x in text.split()]
        if values != sorted(set(values)):
            return False, f"with {defines or 'the defaults'}: {values} is not increasing"
    return True, ""


@pytest.fixture
def probe_lab(tmp_path, monkeypatch):
    if not shutil.which("nvcc"):
        pytest.skip("nvcc is not on the PATH")
    (tmp_path / "grading" / "probes").mkdir(parents=True)
    (tmp_path / "grading" / "probes" / "table.cu").write_text(PROGRAM)
    (tmp_path / "ws").mkdir()
    student = tmp_path / "ws" / "kernel.cu"
    student.write_text(KERNEL)
    probes = {("p", "table"): hostprobe.Probe("table.cu", _verdict, builds=({}, {"WIDTH": 2}))}
    lab = SimpleNamespace(module=lambda name: SimpleNamespace(PROBES=probes), _include_dirs=lambda row: [],
                          kernels_dir=tmp_path)
    g = SimpleNamespace(lab=lab, dir=tmp_path / "grading", build_dir=tmp_path / "build")
    (tmp_path / "grading" / "probes.py").write_text("# the table is given by the fixture\n")
    compiled = SimpleNamespace(row=SimpleNamespace(nvcc_flags=()), source=student, cubin=tmp_path / "build" / "k.cubin")
    return g, compiled, student


def test_a_probe_runs_every_build_and_its_verdict_names_the_failing_one(probe_lab):
    g, compiled, student = probe_lab
    part, check = SimpleNamespace(name="p"), SimpleNamespace(name="table")
    ok, reason = hostprobe.run(g, part, check, compiled)
    assert not ok and "{'WIDTH': 2}" in reason            # WIDTH = 2 repeats a value; the default passes
    student.write_text(KERNEL.replace("WIDTH};", "3 + WIDTH};"))
    assert hostprobe.run(g, part, check, compiled) == (True, "")


def test_a_copy_of_a_probed_file_in_another_folder_is_served_from_the_cache(probe_lab, tmp_path, monkeypatch):
    """COURSE_CUBIN_CACHE holds the probes' binaries too (the graders build them in temporary folders):
    the same student file elsewhere runs the cached binary, no nvcc; another file is built."""
    from common import build
    g, compiled, student = probe_lab
    monkeypatch.setenv("COURSE_CUBIN_CACHE", str(tmp_path / "cache"))
    calls = []
    real = build.run_nvcc
    monkeypatch.setattr(hostprobe, "run_nvcc", lambda cmd, about=None: calls.append(cmd) or real(cmd, about))
    part, check = SimpleNamespace(name="p"), SimpleNamespace(name="table")
    first = hostprobe.run(g, part, check, compiled)
    assert len(calls) == 2                                 # two builds: the defaults and WIDTH = 2
    other = tmp_path / "elsewhere" / "kernel.cu"
    other.parent.mkdir()
    other.write_text(student.read_text())
    moved = SimpleNamespace(row=compiled.row, source=other, cubin=tmp_path / "build2" / "k.cubin")
    assert hostprobe.run(g, part, check, moved) == first and len(calls) == 2
    other.write_text(KERNEL.replace("WIDTH};", "3 + WIDTH};"))
    assert hostprobe.run(g, part, check, moved) == (True, "") and len(calls) == 4


def test_a_probe_that_does_not_compile_says_so_with_the_compilers_line(probe_lab):
    g, compiled, student = probe_lab
    student.write_text(KERNEL.replace("constexpr int table", "constexpr int tabel"))
    ok, reason = hostprobe.run(g, SimpleNamespace(name="p"), SimpleNamespace(name="table"), compiled)
    assert not ok and "does not compile" in reason and "table" in reason


def test_a_probe_check_without_a_table_entry_is_a_clear_error(probe_lab):
    g, compiled, _ = probe_lab
    with pytest.raises(CourseError, match="PROBES"):
        hostprobe.probe_for(g, "p", "other")


# ---------------------------------------------------------------------------------------------
# bank-conflicts (common/grading/bankcheck.py): the verdict, and measure() against a fake ncu
# ---------------------------------------------------------------------------------------------

from common.grading import bankcheck  # noqa: E402

CHECK = SimpleNamespace(shape=(1024, 1024, 1024), threshold=0.01)


def _m(conflicts, loads):
    return {bankcheck.CONFLICTS: conflicts, bankcheck.LOADS: loads}


def test_conflicts_at_the_references_level_pass_and_more_fail_with_the_numbers():
    ref = _m(500, 400_000)                                   # 0.00125 per load
    assert bankcheck.verdict({"student": _m(2_000, 400_000), "reference": ref}, CHECK)[0] == "pass"
    status, reason, _ = bankcheck.verdict({"student": _m(10_400, 400_000), "reference": ref}, CHECK)
    assert status == "fail" and "10,400 shared-load bank conflicts in 400,000 shared loads" in reason
    assert "0.0260 per load" in reason and "0.0013" in reason and "1024x1024x1024" in reason


def test_not_measured_skipped_and_errors_are_told_apart():
    assert bankcheck.verdict(None, CHECK)[0] == "fail"
    assert bankcheck.verdict({"skipped": "no ncu"}, CHECK) == ("skipped", "no ncu", {})
    assert bankcheck.verdict({"error": "ncu failed"}, CHECK)[:2] == ("fail", "ncu failed")
    status, reason, _ = bankcheck.verdict({"student": _m(0, 0), "reference": _m(0, 10)}, CHECK)
    assert status == "fail" and "no shared loads" in reason


FAKE_NCU = '''#!/bin/sh
echo "==PROF== Connected to process"
echo '"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","{c}","{l}"'
echo '"","","","","","","","","","","","","inst"'
echo '"0","1","python","h","k_vec","1","7","(256, 1, 1)","(8, 8, 1)","0","9.0","{s_c}","{s_l}"'
echo '"1","1","python","h","k_vec","1","7","(256, 1, 1)","(8, 8, 1)","0","9.0","{r_c}","{r_l}"'
'''


def _fake_lab():
    kernel = SimpleNamespace(entries={"vec": "k_vec"}, variant_for=lambda M, N, K: "vec")
    return SimpleNamespace(kernel=lambda name: kernel, dir="/nowhere")


def test_measure_reads_the_students_launch_then_the_references(tmp_path, monkeypatch):
    from common import ncu as ncumod
    fake = tmp_path / "ncu"
    fake.write_text(FAKE_NCU.format(c=bankcheck.CONFLICTS, l=bankcheck.LOADS, s_c="10,400", s_l="400,000",
                                    r_c="500", r_l="400,000"))
    fake.chmod(0o755)
    monkeypatch.setattr(ncumod, "find_ncu", lambda: str(fake))
    items = [{"id": "0-c4", "part": "c4", "kernel": "c4", "cubin": "s.cubin", "reference_cubin": "r.cubin"}]
    got = bankcheck.measure(_fake_lab(), items, {"c4": (64, 64, 64)}, tmp_path / "logs", timeout=30)
    assert got["0-c4"]["student"] == _m(10400, 400000) and got["0-c4"]["reference"] == _m(500, 400000)
    assert (tmp_path / "logs" / "0-c4.log").exists()
    argv = (tmp_path / "logs" / "0-c4.log").read_text().splitlines()[0]
    assert "--kernel-name k_vec" in argv and bankcheck.CONFLICTS in argv and "common.grading.bankcheck" in argv


# a fake ncu for several items: one student, reference pair of launches per --spec it is given, each
# pair's counts from the spec's "fake" field; FAIL_WHEN_MANY in the environment makes a run over more
# than one item fail (the per-item runs then take over), SHORT drops the last launch
FAKE_NCU_MANY = '''#!/usr/bin/env python3
import json, os, sys
specs = [sys.argv[i + 1] for i, a in enumerate(sys.argv) if a == "--spec"]
if os.environ.get("FAIL_WHEN_MANY") and len(specs) > 1:
    print("==ERROR== An error was reported by the driver", file=sys.stderr)
    sys.exit(9)
print("==PROF== Connected to process")
print('"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","C","L"'
      .replace('"C","L"', '"%s","%s"' % (os.environ["CONFLICTS"], os.environ["LOADS"])))
print('"","","","","","","","","","","","","inst"')
rows = []
for spec in specs:
    it = json.load(open(spec))
    for conflicts in it["fake"]:
        rows.append((it["entry"], conflicts))
if os.environ.get("SHORT"):
    rows = rows[:-1]
for n, (entry, conflicts) in enumerate(rows):
    print('"%d","1","python","h","%s","1","7","(256, 1, 1)","(8, 8, 1)","0","9.0","%d","1000"' % (n, entry, conflicts))
print(" ".join(sys.argv), file=open(os.environ["ARGV_LOG"], "a"))
'''


def _many(tmp_path, monkeypatch, **env):
    from common import ncu as ncumod
    fake = tmp_path / "ncu"
    fake.write_text(FAKE_NCU_MANY)
    fake.chmod(0o755)
    monkeypatch.setattr(ncumod, "find_ncu", lambda: str(fake))
    for k, v in dict(CONFLICTS=bankcheck.CONFLICTS, LOADS=bankcheck.LOADS, ARGV_LOG=str(tmp_path / "argv"), **env).items():
        monkeypatch.setenv(k, v)
    kernels = {"c4": SimpleNamespace(entries={"vec": "c4_vec"}, variant_for=lambda M, N, K: "vec"),
               "k2": SimpleNamespace(entries={"vec": "k2_vec"}, variant_for=lambda M, N, K: "vec")}
    lab = SimpleNamespace(kernel=lambda name: kernels[name], dir="/nowhere")
    items = [{"id": f"{i}-{k}", "part": k, "kernel": k, "entry": f"{k}_vec", "fake": [10 * i + 1, 10 * i + 2]}
             for i, k in enumerate(("c4", "c4", "k2"))]
    got = bankcheck.measure(lab, items, {"c4": (64, 64, 64), "k2": (32, 32, 32)}, tmp_path / "logs", timeout=30)
    runs = (tmp_path / "argv").read_text().splitlines() if (tmp_path / "argv").exists() else []
    return got, runs


def test_one_ncu_run_measures_every_item_and_pairs_its_launches_in_order(tmp_path, monkeypatch):
    got, runs = _many(tmp_path, monkeypatch)
    assert len(runs) == 1 and runs[0].count("--spec") == 3 and "regex:^(c4_vec|k2_vec)$" in runs[0]
    assert "--launch-count 6" in runs[0]
    assert [(got[i]["student"][bankcheck.CONFLICTS], got[i]["reference"][bankcheck.CONFLICTS])
            for i in ("0-c4", "1-c4", "2-k2")] == [(1, 2), (11, 12), (21, 22)]
    assert got["2-k2"]["shape"] == [32, 32, 32]


def test_where_the_run_over_all_items_fails_each_item_is_measured_alone(tmp_path, monkeypatch):
    got, runs = _many(tmp_path, monkeypatch, FAIL_WHEN_MANY="1")
    assert [r.count("--spec") for r in runs] == [1, 1, 1]          # the failed run wrote no argv line
    assert got["1-c4"]["student"][bankcheck.CONFLICTS] == 11 and got["2-k2"]["reference"][bankcheck.CONFLICTS] == 22
    assert "driver" in (tmp_path / "logs" / "all.log").read_text()


def test_launches_that_do_not_pair_with_the_items_are_not_guessed_at(tmp_path, monkeypatch):
    got, runs = _many(tmp_path, monkeypatch, SHORT="1")
    assert [r.count("--spec") for r in runs] == [3, 1, 1, 1]
    assert all("error" in got[i] and "not the 2 expected" in got[i]["error"] for i in got)
    assert "expected the launches" in (tmp_path / "logs" / "all.log").read_text()


def test_measure_without_ncu_is_skipped_with_the_reason(tmp_path, monkeypatch):
    from common import ncu as ncumod

    def missing():
        raise CourseError("ncu is not installed")
    monkeypatch.setattr(ncumod, "find_ncu", missing)
    items = [{"id": "0-c4", "part": "c4", "kernel": "c4"}]
    got = bankcheck.measure(_fake_lab(), items, {"c4": (64, 64, 64)}, tmp_path, timeout=30)
    assert "not installed" in got["0-c4"]["skipped"]


def test_the_first_load_after_the_prologues_copies_needs_a_wait_and_a_barrier():
    prologue = ["LDGSTS.E.BYPASS.LTC128B.128 [R3], desc[UR4][R4.64]", "LDGDEPBAR"]
    fenced = ["DEPBAR.LE SB0, 0x1", "BAR.SYNC.DEFER_BLOCKING 0x0", "LDS.128 R12, [R2]"]
    listing = lambda pre: ["/*0000*/ MOV R1, c[0x0][0x28] ;"] + [f"/*{0x10 * (i + 1):04x}*/ {op} ;"
                                                                  for i, op in enumerate(pre)] + _listing(GOOD, 0x400, prologue=False)[1:]
    assert fences.problems(listing(prologue + fenced)) == []
    (problem,) = fences.problems(listing(prologue + ["LDS.128 R12, [R2]"]))
    assert "first shared load" in problem and "before any wait and barrier" in problem
    (problem,) = fences.problems(listing(prologue + ["DEPBAR.LE SB0, 0x1", "LDS.128 R12, [R2]"]))
    assert "before a barrier after the wait" in problem


def test_a_probe_binary_busy_for_a_moment_is_run_again_and_another_error_is_not(monkeypatch, tmp_path):
    """ETXTBSY (a child forked by another thread still holds the binary open) is tried again; any other
    OSError, or ETXTBSY every time, is raised."""
    import errno
    tries = []

    def busy_once(argv, **kw):
        tries.append(argv)
        if len(tries) == 1:
            raise OSError(errno.ETXTBSY, "Text file busy")
        return "ran"
    monkeypatch.setattr(hostprobe.subprocess, "run", busy_once)
    assert hostprobe._run(tmp_path / "probe") == "ran" and len(tries) == 2
    monkeypatch.setattr(hostprobe.subprocess, "run", lambda argv, **kw: (_ for _ in ()).throw(OSError(errno.ETXTBSY, "busy")))
    with pytest.raises(OSError):
        hostprobe._run(tmp_path / "probe", tries=2)
    monkeypatch.setattr(hostprobe.subprocess, "run", lambda argv, **kw: (_ for _ in ()).throw(OSError(errno.ENOENT, "gone")))
    with pytest.raises(OSError, match="gone"):
        hostprobe._run(tmp_path / "probe")
