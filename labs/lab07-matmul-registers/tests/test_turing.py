"""Lab 7 on Turing (sm_75, Colab's Tesla T4), tested without a T4.

What runs there: the chapter's rungs (v3-v7, t1-t3); v8, t4 and the CUTLASS yardstick need sm_80 and
their rows say why; t3 runs without its cp.async, and its row says that too.

Here (no GPU): the sm_75 builds carry their PTX when asked (COURSE_EMBED_PTX=sm_75), t3's PTX for
compute_75 has no cp.async, the T4's peaks and occupancy limits are known, the bench table shows a
row's note, and the grader's selftest holds on sm_75's SASS (t3's static checks read sm_80's).
On a GPU (the H200 under `make test`): the sm_75 builds, PTX inside, JIT-compiled by the driver and run
on the grader's awkward shapes against float64 with the course's tolerances; and the grader's whole
selftest graded for sm_75 the same way. A newer GPU runs sm_75's code, not a T4's timing: the speed
checks compare the student's kernel with the reference on one GPU, which holds on any GPU.
"""
import re
import subprocess

import numpy as np
import pytest

from common import hierarchy, records, sass
from common.build import compile_cubin
from common.device import peak_tflops
from common.grading import grader, selftest
from common.grading.spec import Grading
from common.kernels import skipped_on
from common.precision import PRECISIONS
from common.roofline import bandwidth_gbs
from common.testing import lab_of, needs_gpu

LAB = lab_of(__file__)
TURING = "sm_75"
ROWS = [k for k in LAB.all_kernels if LAB.build_arch(k, TURING)]
PARTS = LAB.module("grading.parts")
T4 = {"name": "Tesla T4", "arch": TURING, "sms": 40, "sm_clock_max_mhz": 1590.0}


def test_the_chapters_rungs_are_the_rows_built_for_turing():
    assert [k.name for k in ROWS] == ["v3", "v4", "v5", "v6", "v7", "t1", "t2", "t3"]
    lines = skipped_on(LAB.all_kernels, [TURING])
    assert len(lines) == 3 and all(line.startswith("sm_75: ") and "sm_80 or newer" in line for line in lines), lines
    assert [line.split()[1] for line in lines] == ["v8", "t4", "cutlass"]


# --- the PTX path, checked here ----------------------------------------------------------------

def _cuobjdump(*args):
    exe, env = sass.find_cuobjdump()
    return subprocess.run([exe, *args], capture_output=True, text=True, env=env, check=True).stdout


@pytest.fixture(scope="module")
def with_ptx(tmp_path_factory):
    """Every Turing row built for sm_75 with its PTX, in a folder of the test's own."""
    out = tmp_path_factory.mktemp("sm75_ptx")
    mp = pytest.MonkeyPatch()
    mp.setenv("COURSE_EMBED_PTX", TURING)
    try:
        built = {k.name: (out / f"{k.name}.cubin",
                          compile_cubin(k.path, out / f"{k.name}.cubin", TURING, k.defines, flags=k.nvcc_flags,
                                        include_dirs=LAB._include_dirs(k)))
                 for k in ROWS}
    finally:
        mp.undo()
    return built


def test_builds_with_ptx_live_apart_from_the_plain_ones(monkeypatch):
    """build/sm_75/ holds the plain cubins `make` builds, build/sm_75_ptx/ those with the PTX: the two
    never overwrite each other (pytest's workers build both at once)."""
    plain = LAB.cubin("t3", TURING)
    monkeypatch.setenv("COURSE_EMBED_PTX", TURING)
    assert LAB.cubin("t3", TURING) == plain.parent.with_name("sm_75_ptx") / plain.name
    assert LAB.cubin("t3", "sm_90") == plain.parent.with_name("sm_90") / plain.name


def test_turing_builds_carry_sm_75_sass_and_compute_75_ptx(with_ptx):
    sass.find_cuobjdump()
    plain = LAB.build(ROWS, [TURING])
    for name, (path, resources) in with_ptx.items():
        listing = _cuobjdump("-lelf", "-lptx", str(path))
        assert ".sm_75.cubin" in listing and ".sm_75.ptx" in listing, f"{name}: {listing}"
        assert _cuobjdump("-ptx", str(path)).count(".target sm_75") >= 1, name
        assert resources == plain[(name, TURING)], f"{name}: the PTX build's ptxas report differs"


def test_t3s_turing_code_has_no_cp_async(with_ptx):
    """compute_75's PTX of t3: __pipeline_memcpy_async became an ordinary load and store. That is the
    code the H200 runs through its JIT: the T4's, not an sm_80 path in disguise."""
    ptx = _cuobjdump("-ptx", str(with_ptx["t3"][0]))
    assert "cp.async" not in ptx and "ld.global" in ptx and "st.shared" in ptx
    assert "wmma.mma.sync" in ptx and not re.search(r"(?<![.\w])mma\.sync", ptx)   # WMMA only, no mma.m16n8k16


# --- the T4 in the tables ----------------------------------------------------------------------

def test_the_t4s_peaks_are_its_data_sheets():
    """T4 data sheet: 8.1 TFLOP/s FP32, 65 TFLOP/s FP16 with FP32 accumulation; no BF16 or TF32."""
    p = peak_tflops(T4)
    assert p["fp32"] == pytest.approx(8.14, abs=0.01) and p["fp16_tensor"] == pytest.approx(65.1, abs=0.1)
    assert p["bf16_tensor"] is None and p["tf32_tensor"] is None
    assert PRECISIONS["fp32"].peak(p) == p["fp32"] and PRECISIONS["fp16_tensor"].peak(p) == p["fp16_tensor"]
    geforce = peak_tflops({**T4, "name": "NVIDIA GeForce RTX 2080", "sms": 46, "sm_clock_max_mhz": 1710.0})
    assert geforce["fp16_tensor"] == pytest.approx(geforce["fp32"] * 4)       # FP32 accumulation at half rate
    assert bandwidth_gbs({"name": "Tesla T4"}) == (320.0, "data sheet (Tesla T4)")


def test_occupancy_on_turing_uses_its_limits():
    """sm_75: 1024 threads, 16 blocks and 64 KB of shared memory per SM, 64 KB per block at most."""
    lim = hierarchy.arch_limits(TURING)
    assert (lim["max_threads_per_sm"], lim["max_blocks_per_sm"], lim["smem_per_sm"]) == (1024, 16, 64 * 1024)
    v5 = hierarchy.occupancy(TURING, 256, 118, 8192, 0)
    assert v5.blocks_per_sm == 2 and "registers" in v5.binding, v5        # 120 x 32 x 8 warps = 30 K registers
    t3 = hierarchy.occupancy(TURING, 256, 123, 0, LAB.kernel("t3").shared_bytes)
    assert t3.blocks_per_sm == 1, t3                                       # 37 KB of 64: one block
    assert hierarchy.occupancy(TURING, 128, 32, 0, 65 * 1024).blocks_per_sm == 0
    t1 = hierarchy.occupancy(TURING, 128, 63, 0, 0)            # no shared memory: it limits nothing
    assert t1.blocks_per_sm == 8 and "shared memory" not in t1.binding and t1.limits["shared memory"] == 16, t1


def test_the_bench_table_shows_what_a_kernel_loses_on_this_gpu():
    rows = [{"ladder": "fp16", "kernel": name, "size": 1024, "tflops": tf, "pct_of_cublas": pc, "pct_of_peak": pk,
             "check_ok": True, **({"note": note} if note is not None else {})}
            for name, tf, pc, pk, note in (("cuBLAS", 40.0, 100.0, 61.4, ""), ("t2", 20.0, 50.0, 30.7, ""),
                                           ("t3", 22.0, 55.0, 33.8, LAB.kernel("t3").arch_note(TURING)))]
    record = {"gpu": {**T4, "peaks": peak_tflops(T4)}, "sizes": [1024], "results": rows,
              "ladders": {"fp16": {"precision": "fp16_tensor", "peak_tflops": peak_tflops(T4)["fp16_tensor"]}}}
    table = records.ladder_table(record, "fp16")
    assert "note (this GPU)" in table and "no cp.async on sm_75" in table, table
    t3 = next(line for line in table.splitlines() if line.startswith("t3"))
    assert "no cp.async" in t3
    assert "peak 65.1 TFLOP/s" in table
    plain = records.ladder_table({**record, "results": [{k: v for k, v in r.items() if k != "note"} for r in rows]}, "fp16")
    assert "note" not in plain


def test_the_grader_reads_t3s_cp_async_in_sm_80s_sass_on_turing():
    assert grader.sass_arch(LAB.kernel("t3"), TURING) == "sm_80"
    assert grader.sass_arch(LAB.kernel("t3"), "sm_90") == "sm_90"
    assert all(grader.sass_arch(LAB.kernel(n), TURING) == TURING for n in ("v4", "v5", "v6", "v7", "t2"))


def test_the_graders_selftest_holds_on_turings_sass(tmp_path):
    """No GPU: the reference scores every static check for sm_75, the untouched workspace none, each
    known-wrong kernel loses what its row says it must (selftest.expectations)."""
    sass.find_cuobjdump()
    g = Grading(LAB)
    env = grader.environment(g, gpu=False, arch=TURING, seed=1, work=tmp_path)
    reports = grader.grade_many(g, selftest.jobs(g, env.work / "selftest"), env, progress=False)
    assert not selftest.expectations(g, reports, env)
    assert reports[0].meta["arch"] == TURING


# --- on a GPU: sm_75's code, JIT-compiled from its PTX --------------------------------------------

@pytest.fixture
def as_turing(monkeypatch):
    """The lab builds for sm_75 with the PTX inside and loads those builds: the driver JIT-compiles
    sm_75's PTX for this GPU."""
    monkeypatch.setenv("COURSE_EMBED_PTX", TURING)
    monkeypatch.setattr(LAB, "gpu_arch", lambda: TURING)


CASES = [(k.name, v, s) for k in ROWS for v, s in k.cases(PARTS.SHAPES[k.precision])]


@needs_gpu
@pytest.mark.parametrize("name,variant,shape", CASES,
                         ids=[f"{n}{'-' + v if v else ''}-{'x'.join(map(str, s))}" for n, v, s in CASES])
def test_turing_code_matches_float64_through_the_jit(as_turing, name, variant, shape):
    verdict = LAB.check(name, *shape, variant=variant, rng=np.random.default_rng(75))
    assert verdict.ok, str(verdict)
    cubin = LAB.cubin(name, TURING)
    assert cubin.parent.name == "sm_75_ptx" and ".sm_75.ptx" in _cuobjdump("-lptx", str(cubin)), \
        f"{name} did not run from sm_75's PTX"


@needs_gpu
def test_the_graders_selftest_holds_on_turings_code_through_the_jit(as_turing, tmp_path):
    """The whole selftest graded for sm_75 on this GPU: the reference full marks (correct, race-free,
    fast), the untouched workspace zero, every known-wrong kernel losing what it must."""
    g = Grading(LAB)
    env = grader.environment(g, gpu=True, arch=TURING, seed=75, work=tmp_path)
    reports = grader.grade_many(g, selftest.jobs(g, env.work / "selftest"), env, progress=True)
    problems = selftest.expectations(g, reports, env)
    unexplained = [p for p in problems if not any(f"wrong/{patch}:" in p for patch in TURING_CANNOT_CATCH)]
    assert not unexplained, "\n".join(unexplained)
    for w, r in zip(g.wrong, reports[2:]):      # each exception is Turing's, not the grader's: right on sm_75
        if w.patch in TURING_CANNOT_CATCH:
            assert r.result(w.part, "correct").status == grader.PASS, r.lost_lines()


# Known-wrong kernels whose bug does not exist on Turing's hardware, and why. The selftest on sm_75's code
# may not see them lose; the test above checks that they are indeed right there.
TURING_CANNOT_CATCH = {
    "t3_waits_for_too_few.patch": "sm_75 has no cp.async: each copy has landed when its thread moves on, so "
                                  "the barrier after the wait orders every copy before the reads, whatever "
                                  "the wait's count",
}


# --- on a T4: what it cannot run is skipped, with the row's reason --------------------------------

def test_a_kernel_this_gpu_cannot_run_is_refused_with_its_reason(monkeypatch):
    from common.errors import NotOnThisGPU
    monkeypatch.setattr(LAB, "gpu_arch", lambda: TURING)
    with pytest.raises(NotOnThisGPU, match="v8 needs sm_80 or newer: cp.async stages, and this GPU is sm_75"):
        LAB.launcher("v8", 256, 256, 256)
    with pytest.raises(NotOnThisGPU, match="needs sm_80 or newer"):
        LAB.cubin("t4", TURING)


def test_a_test_that_meets_such_a_kernel_is_skipped_with_the_reason(tmp_path):
    """The course's conftest.py turns NotOnThisGPU into a skip: on a T4, `make test` skips v8's GPU tests
    with v8's reason instead of failing them. (Checked in a throwaway test under the course's root.)"""
    import sys
    folder = LAB.build_dir / "conftest-check"        # build/ is ignored by git; the root conftest applies
    folder.mkdir(parents=True, exist_ok=True)
    test = folder / "test_not_on_this_gpu.py"
    test.write_text("from common.errors import NotOnThisGPU\n\n"
                    "def test_v8_on_a_t4():\n    raise NotOnThisGPU('v8 needs sm_80 or newer: cp.async stages')\n\n"
                    "def test_a_real_failure():\n    assert False\n")
    try:
        run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", str(test)],
                             capture_output=True, text=True, cwd=LAB.dir.parents[1], timeout=120)
    finally:
        test.unlink()
    assert "1 failed, 1 skipped" in run.stdout, run.stdout + run.stderr
    assert "v8 needs sm_80 or newer: cp.async stages" in run.stdout, run.stdout


def test_the_fragment_explorer_on_a_t4_shows_the_probe_recorded_elsewhere(tmp_path, monkeypatch):
    """The probe needs sm_80 (mma.m16n8k16): on a T4 the explorer says so and shows the recorded probe."""
    import json
    from types import SimpleNamespace
    from common import fragments, views
    from common.errors import NotOnThisGPU

    def refuse():
        raise NotOnThisGPU("the fragment probe needs sm_80 or newer (mma.m16n8k16 and TF32 mma); this is sm_75")
    lab_dir = tmp_path / "labs" / "lab07"
    (lab_dir / "results").mkdir(parents=True)
    lab = SimpleNamespace(dir=lab_dir, results_dir=lab_dir / "results", gpu_arch=lambda: TURING,
                          module=lambda name: SimpleNamespace(run_all=refuse))
    monkeypatch.setattr("common.device.gpu_status", lambda: (True, "Tesla T4 (sm_75)"))
    assert views.probe_outputs(lab, True) == (None, "the fragment probe needs sm_80 or newer (mma.m16n8k16 and "
                                                    "TF32 mma); this is sm_75")
    outputs = {e: fragments.model_probe_output(e).tolist()
               for e in ("probe_ldmatrix", "probe_mma_f16", "probe_mma_tf32")}    # WMMA's layout: no model
    (lab.results_dir / "fragments-probe_h200_2026-11-30_x.json").write_text(json.dumps(
        {"gpu": {"name": "NVIDIA H200", "arch": "sm_90"}, "run": {"date": "2026-11-30"}, "outputs": outputs}))
    got, source = views.probe_outputs(lab, True)
    assert "needs sm_80" in source and "recorded on another GPU" in source and "NVIDIA H200" in source, source
    assert all(line.startswith("PASS") for line in views.probe_verdicts(got))


def test_the_grade_report_says_where_t3s_sass_was_read(tmp_path):
    """A student on a T4 whose `make sass` shows no LDGSTS is told why the cp.async check reads sm_80."""
    from common.grading import grade_workspace, make_workspace
    from common.measure import gpu_needed
    ws = tmp_path / "ws"
    make_workspace(LAB, ws, solution=True)
    report = grade_workspace(LAB, ws, parts=["t3"], gpu=False, arch=TURING, work=tmp_path / "work")
    assert report.result("t3", "cp-async").status == grader.PASS
    assert "t3: SASS read for sm_80, where what it teaches shows (sm_75: no cp.async on sm_75" in report.text()
    assert "SASS read for" not in grade_workspace(LAB, ws, parts=["t3"], gpu=False, arch="sm_90",
                                                  work=tmp_path / "work90").text()
    assert gpu_needed(LAB) == "an NVIDIA GPU of sm_75 or newer (v8, t4, cutlass: sm_80)"
