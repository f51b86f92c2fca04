"""Two lab-agnostic check kinds of the grader, on synthetic data (no GPU):

  cp-async-fence (common/grading/fences.py): a SASS loop that issues cp.async must wait (DEPBAR), have
      a barrier (BAR.SYNC), and pass the barrier between each wait and the next shared load, round the loop;
  probe (common/grading/hostprobe.py): a lab's host program built around a student's file (PROBE_KERNEL,
      host pass only), run, and judged by the lab's verdict.
"""
import shutil
from types import SimpleNamespace

import pytest

from common.errors import CourseError
from common.grading import fences, hostprobe


def _listing(body, start=0x100):
    """SASS lines at consecutive addresses, then a branch back to the first: one loop."""
    lines = [f"/*{start + 0x10 * i:04x}*/ {op} ;" for i, op in enumerate(body)]
    end = start + 0x10 * len(body)
    return ["/*0000*/ MOV R1, c[0x0][0x28] ;"] + lines + [f"/*{end:04x}*/ @P0 BRA 0x{start:x} ;", f"/*{end + 0x10:04x}*/ EXIT ;"]


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


def test_a_probe_that_does_not_compile_says_so_with_the_compilers_line(probe_lab):
    g, compiled, student = probe_lab
    student.write_text(KERNEL.replace("constexpr int table", "constexpr int tabel"))
    ok, reason = hostprobe.run(g, SimpleNamespace(name="p"), SimpleNamespace(name="table"), compiled)
    assert not ok and "does not compile" in reason and "table" in reason


def test_a_probe_check_without_a_table_entry_is_a_clear_error(probe_lab):
    g, compiled, _ = probe_lab
    with pytest.raises(CourseError, match="PROBES"):
        hostprobe.probe_for(g, "p", "other")
