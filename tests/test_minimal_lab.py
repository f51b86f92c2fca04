"""The claim of the runtime redesign: a lab is a folder plus one table. A minimal lab -- one kernel
file, one table, a one-line Makefile, one test file -- is built in a temporary folder, and the
course's own targets work for it with no edit to common/: build, its tests (on the simulated GPU
where there is no real one), sass, and its graded workspace."""
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from common.testing import needs_cuobjdump

ROOT = Path(__file__).resolve().parents[1]

KERNEL = textwrap.dedent("""\
    // tiny.cu -- the smallest lab's only kernel: one thread per element of C, a K loop.
    #ifndef BM
    #define BM 8        // block tile rows
    #endif
    #ifndef BN
    #define BN 32       // block tile columns: one warp across
    #endif
    #define THREADS (BM * BN)
    #define SMEM_BYTES 0
    static_assert(THREADS <= 1024, "one thread per element of the BM x BN tile");

    extern "C" __global__ void __launch_bounds__(THREADS)
    tiny_gemm(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C)
    {
        const int row = blockIdx.y * BM + threadIdx.x / BN, col = blockIdx.x * BN + threadIdx.x % BN;
        if (row >= M || col >= N) return;
        float acc = 0.f;
        // BEGIN SOLUTION tiny-loop: acc = the dot product of row `row` of A and column `col` of B
        for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];
        // END SOLUTION tiny-loop
        C[row * N + col] = acc;
    }
    """)

TABLE = textwrap.dedent("""\
    \"\"\"The smallest lab: one kernel.\"\"\"
    from common.kernels import Kernel

    TITLE = "Tiny lab: one kernel"
    LADDERS = {"fp32": [Kernel("k1", "tiny.cu", {"": "tiny_gemm"}, "fp32", title="one thread per output")]}
    BENCH_SIZES = [256]
    """)

PARTS = textwrap.dedent("""\
    from common.grading.spec import Check, Part, Region

    PARTS = [Part("k1", "the K loop", kernel="k1", regions=("tiny-loop",),
                  checks=(Check("computes", 1, "FFMA in the entry point, no FP16 math", "computes-fp32"),
                          Check("registers", 1, "no spills", "registers", requires="computes"),
                          Check("correct", 3, "right on every shape", "correct", needs_gpu=True)))]
    REGIONS = [Region("tiny-loop", "k1", hint="the dot product of a row of A and a column of B")]
    WRONG = []
    SHAPES = {"fp32": [(1, 1, 1), (17, 33, 9), (64, 40, 31)]}
    """)

TEST = textwrap.dedent("""\
    import pytest
    from common.testing import lab_of, needs_gpu

    LAB = lab_of(__file__)


    def test_the_table_reads_the_tile_from_the_kernel_file():
        k = LAB.kernel("k1")
        assert (k.threads, k.tile, k.shared_bytes) == (256, (8, 32), 0)


    @needs_gpu
    @pytest.mark.parametrize("shape", [(1, 1, 1), (17, 33, 9), (64, 40, 31)])
    def test_k1_matches_float64(shape):
        v = LAB.check("k1", *shape)
        assert v.ok, str(v)
    """)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    lab = tmp_path_factory.mktemp("labs") / "lab99-tiny"
    (lab / "kernels").mkdir(parents=True)
    (lab / "tests").mkdir()
    (lab / "kernels" / "tiny.cu").write_text(KERNEL)
    (lab / "lab.py").write_text(TABLE)
    (lab / "Makefile").write_text(f"include {ROOT / 'mk' / 'lab.mk'}\n")
    (lab / "tests" / "test_tiny.py").write_text(TEST)
    (lab / "grading").mkdir()
    (lab / "grading" / "parts.py").write_text(PARTS)
    return lab


def make(lab, *args, env=None, timeout=600):
    e = {**os.environ, **(env or {})}
    return subprocess.run(["make", "-s", "-C", str(lab), *args, f"PYTHON={sys.executable}"],
                          capture_output=True, text=True, timeout=timeout, env=e)


def test_make_builds_the_minimal_lab_for_every_architecture(tiny):
    proc = make(tiny, "build", "ARCH=all")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for arch in ("sm_80", "sm_86", "sm_89", "sm_90", "sm_120"):
        assert (tiny / "build" / arch / "tiny.cubin").exists()
    assert "Tiny lab: one kernel" in proc.stdout and "tiny_gemm" not in proc.stderr


def test_make_test_runs_the_minimal_labs_own_tests(tiny):
    proc = make(tiny, "test")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "passed" in proc.stdout


def test_make_sass_counts_the_minimal_labs_opcodes(tiny):
    needs_cuobjdump()
    proc = make(tiny, "sass", "ARCH=sm_90")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "FFMA" in proc.stdout and "k1" in proc.stdout


def test_make_sass_adds_the_builds_make_tune_recorded_for_the_architecture_shown(tiny, tmp_path):
    """A tuned record (results/<lab>-tuned_<gpu>.json) for an sm_90 GPU adds its build to `make sass
    ARCH=sm_90`, noted with the GPU and size class, and not to another architecture's table."""
    import json
    import shutil
    needs_cuobjdump()
    lab = tmp_path / tiny.name
    shutil.copytree(tiny, lab, ignore=shutil.ignore_patterns("build", "reports"))
    (lab / "results").mkdir(exist_ok=True)
    (lab / "results" / "lab99-tuned_test-gpu.json").write_text(json.dumps(
        {"gpu": "Test GPU", "arch": "sm_90", "best": {"fp32": {"large": {"kernel": "k1", "params": {"BM": 4}}}}}))
    proc = make(lab, "sass", "ARCH=sm_90")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "k1[BM4] (tuned: Test GPU large)" in proc.stdout
    counts = json.loads((lab / "reports" / "sass.json").read_text())["sm_90"]
    assert {"tiny_gemm", "tiny_gemm[BM4]"} <= set(counts) and counts["tiny_gemm[BM4]"]["FFMA"] >= 1
    proc = make(lab, "sass", "ARCH=sm_80")
    assert proc.returncode == 0 and "k1" in proc.stdout and "tuned" not in proc.stdout


def test_the_lab_is_read_from_its_own_folder_outside_labs(tiny):
    """The minimal lab lives in a temporary folder, not under labs/: its table and kernels are found
    there (tests/test_imports.py checks that common/ names no lab)."""
    from common.lab import load
    lab = load(tiny)
    assert lab.kernels_dir == tiny / "kernels" and list(lab.kernels) == ["k1"]


def test_the_minimal_labs_tests_run_on_the_simulated_gpu(tiny, tmp_path):
    """The same tests, with the course's simulated GPU (common/grading/simgpu: numpy behind the
    pycuda calls) in place of a real one: the GPU tests run instead of skipping, and pass."""
    from common.grading import simgpu
    proc = make(tiny, "test", env={"PYTHONPATH": os.pathsep.join([str(simgpu.PATH), str(ROOT)])})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "4 passed" in proc.stdout, proc.stdout


def test_the_minimal_labs_workspace_and_grade(tiny, tmp_path, monkeypatch):
    """make workspace turns the marked region into a TODO; the untouched workspace scores 0 and
    the reference full marks, the GPU check on the simulated GPU."""
    from common import grading
    from common.grading import simgpu
    from common.lab import load
    needs_cuobjdump()
    lab = load(tiny)
    monkeypatch.setenv("GRADE_BUILD", str(tmp_path / "grade-build"))
    grading.make_workspace(lab, tmp_path / "ws")
    assert "TODO(tiny-loop)" in (tmp_path / "ws" / "tiny.cu").read_text()
    untouched = grading.grade_workspace(lab, tmp_path / "ws", gpu=False)
    assert untouched.score == 0
    grading.make_workspace(lab, tmp_path / "ref", solution=True)
    simgpu.use(monkeypatch, tmp_path / "bin")
    ref = grading.grade_workspace(lab, tmp_path / "ref", env=simgpu.env(tmp_path / "work"))
    assert ref.score == ref.graded_max == 5, ref.text()
