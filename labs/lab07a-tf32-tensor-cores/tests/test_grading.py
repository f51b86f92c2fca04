"""Lab 7a's grader, tested without a GPU (a subset of lab 7's test_grading.py; the grader's own
machinery is tested there): the workspace compiles, the untouched workspace scores zero, the
reference full static marks, every known-wrong kernel applies to its reference and loses exactly
what it must without a GPU. The models the questions and the wrong kernels rest on are checked too."""
import json
import shutil
from pathlib import Path

import pytest

from common import fragments as F
from common.grading import grader, selftest
from common.grading import workspace as W
from common.grading.spec import Grading
from common.testing import lab_of, legality_drift, needs_cuobjdump

LAB = lab_of(__file__)
G = Grading(LAB)
ARCH = "sm_90"


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """One batch, as `make grade-selftest --no-gpu` runs it: reference, untouched, every wrong kernel."""
    needs_cuobjdump()
    root = tmp_path_factory.mktemp("grading7a")
    g = Grading(LAB)
    g.build_dir = root / "build"
    env = grader.environment(g, gpu=False, arch=ARCH, seed=12345, work=root / "work")
    reports = grader.grade_many(g, selftest.jobs(g, root / "ws"), env, progress=False)
    return {"g": g, "env": env, "reports": reports}


def test_every_region_has_a_marker_and_a_stub_entry():
    found = {m.id for p in G.kernel_files().values() for m in W.regions(p.read_text(), p.name)}
    assert found == set(G.regions)


def test_the_markers_are_comments_only():
    for path in G.kernel_files().values():
        text = path.read_text()
        assert W.strip_markers(text).count("\n") == text.count("\n") - 2 * len(W.regions(text))


def test_the_untouched_workspace_compiles_and_scores_zero(graded):
    untouched = graded["reports"][1]
    for p in untouched.parts:
        assert not any("does not compile" in (c.reason or "") for c in p.checks), p.name
        assert p.points == 0, f"{p.name}: {[c.check for c in p.checks if c.status == grader.PASS]}"


def test_the_reference_gets_full_static_marks(graded):
    ref = graded["reports"][0]
    for p in ref.parts:
        for c in p.checks:
            needs_gpu = graded["g"].part(p.name).check(c.check).needs_gpu
            assert c.status == (grader.NEEDS_GPU if needs_gpu else grader.PASS), f"{p.name} {c.check}: {c.reason}"


def test_the_selftest_expectations_hold_without_a_gpu(graded):
    assert selftest.expectations(graded["g"], graded["reports"], graded["env"]) == []


def test_k4s_ldmatrix_address_delivers_the_tf32_a_fragment_and_the_wrong_one_does_not():
    assert F.ldmatrix_b32_mismatches(F.ldmatrix_tf32_a_x4_address) == []
    reading_order = lambda l: (l % 8 + 8 * (l // 16), ((l // 8) % 2) * 4)      # the known-wrong patch's rows
    assert F.ldmatrix_b32_mismatches(reading_order)
    src = G.kernel_files()["k4"].read_text()
    assert "(lane % 16)" in src and "(lane / 16) * 4" in src, "models.py mirrors k4's addressing"


def test_ldmatrix_cannot_deliver_the_b_fragment_with_or_without_trans():
    rows = lambda l: (l % 8, 4 * ((l // 8) % 2))
    for trans in (False, True):
        assert F.ldmatrix_b32_mismatches(rows, "m16n8k8.tf32.b", 2, trans)


def test_k2s_swizzle_removes_the_fragment_load_conflicts_in_the_bank_model():
    acc = LAB.module("models").BANK_ACCESSES
    for name in ("k2 A fragment LDS (a0)", "k2 B fragment LDS (b0)", "k4 A fragment LDSM.x4", "k2 A tile STS.128",
                 "k2 B tile STS.128"):
        assert acc[name].evaluate().conflicts == 0, name
    for name in ("k2 A fragment LDS, no swizzle", "k2 B fragment LDS, no swizzle", "k4 A fragment LDSM.x4, no swizzle"):
        assert acc[name].evaluate().ways >= 4, name


def test_the_models_mirror_the_kernels_swizzle_text():
    """models.a_off / b_off are k2's: the expressions in the .cu file are the ones mirrored."""
    src = G.kernel_files()["k2"].read_text()
    assert "m * BK + ((((k >> 2) ^ ((m / A_SWZ_DIV) & A_SWZ_MASK))) << 2) + (k & 3)" in src
    assert "k * BN + (n ^ ((k & 3) << 3))" in src


def test_every_question_has_an_answer_from_the_models():
    for q in G.questions:
        want = q.answer()
        assert want is not None and q.grade(want)[0], q.id


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
def test_tunings_legality_is_k7s_static_asserts_asked_of_the_compiler():
    """The verdicts and candidates of the Python copy of k7's rules it replaced (recorded in
    fixtures/legality_k7.json before that copy was deleted); a refused candidate gets k7's sentence."""
    t = LAB.module("tuning")
    record = Path(__file__).parent / "fixtures" / "legality_k7.json"
    assert legality_drift(t.reason_illegal, record) == []
    recorded = json.loads(record.read_text())["candidates"]
    assert t.candidates() == recorded["default"] and t.candidates(truncate=True) == recorded["truncate"]
    why = t.reason_illegal(dict(STAGES=3))
    assert why == "k7: STAGES must be 2, 4 or 8: the stage index advances by a mask toggle"
    assert why in (LAB.kernels_dir / "k7_unroll_xor_stages.cu").read_text()
    assert "def reason_illegal" not in Path(t.__file__).read_text()


def test_the_gpu_path_on_a_simulated_gpu_loses_what_each_marked_bug_must(graded, tmp_path, monkeypatch):
    """The reference scores every GPU check, the untouched workspace none, and each known-wrong kernel
    whose bug the simulated GPU can play (`BUG [effect]`, common/grading/simgpu) loses `correct` for
    its own reason: a crash for a misaligned float4 or float2, a wrong element for the others."""
    from pathlib import Path as _P
    from common.grading import simgpu
    needs_cuobjdump()
    simgpu.use(monkeypatch, tmp_path / "bin")
    g = Grading(LAB)
    g.build_dir = graded["g"].build_dir                     # the kernels the fixture compiled
    env = grader.Env(True, "a simulated GPU", ARCH, 7, tmp_path / "work")
    wanted = {"k2_swizzle_splits_float4": "crashed on the GPU", "k3_no_wait": "wrong element",
              "k3_prologue_one_tile": "wrong element", "k6_float2_in_scalar": "crashed on the GPU",
              "k6_pair_swapped": "wrong element", "k4_ldmatrix_wrong_lane_rows": "wrong element"}
    jobs = selftest.jobs(g, tmp_path / "ws")
    jobs[0].parts = [p.name for p in g.code_parts]
    jobs = jobs[:2] + [j for j in jobs[2:] if _P(j.name).stem in wanted]
    assert len(jobs) == 2 + len(wanted)
    ref, untouched, *wrong = grader.grade_many(g, jobs, env, progress=False)
    for p in ref.parts:
        for c in p.checks:
            if g.part(p.name).check(c.check).kind == "bank-conflicts" and c.status == grader.SKIPPED:
                assert "ncu" in c.reason      # the simulated GPU has no Nsight Compute (bankcheck's own tests fake it)
                continue
            assert c.status == grader.PASS, (p.name, c.check, c.reason)
    for p in untouched.parts:
        assert p.points == 0, (p.name, [c.check for c in p.checks if c.status == grader.PASS])
    for job, r in zip(jobs[2:], wrong):
        c = r.result(r.parts[0].name, "correct")
        assert c.status == grader.FAIL and wanted[_P(job.name).stem] in c.reason, (job.name, c.reason)
