"""Lab 7b's grader, tested without a GPU.

Fast (no compiler): the table is consistent (regions, markers, probes), the workspace holds no
answer, the probes' verdicts on synthetic layouts and partitions (the right answer and other right
answers pass, each known mistake fails for its own reason), the questions and the prediction.
Slow (nvcc, 6-12 minutes on two cores; every kernel is CuTe): one no-GPU self-test batch as
`make grade-selftest` runs it: the reference gets every static point, the untouched workspace none,
each known-wrong kernel loses exactly its `lose_here` checks, for the reason its row names.
"""
import math
import re

import pytest

from common.grading import grader, selftest
from common.grading import workspace as W
from common.grading.questions import parse_number
from common.grading.spec import Grading
from common.testing import lab_of, needs_cuobjdump

LAB = lab_of(__file__)
G = Grading(LAB)
ARCH = "sm_90"
PROBES = LAB.module("grading.probes")
QUESTIONS = LAB.module("grading.questions")


# ---------------------------------------------------------------------------------------------
# The table
# ---------------------------------------------------------------------------------------------

def test_every_region_has_a_marker_in_its_parts_kernel_and_an_entry():
    found = {}
    for part, path in G.kernel_files().items():
        for m in W.regions(path.read_text(), path.name):
            found[m.id] = part
    assert set(found) == set(G.regions)
    assert all(G.regions[r].part == part for r, part in found.items())
    for p in G.code_parts:
        assert set(p.regions) == {r for r, part in found.items() if part == p.name}


def test_the_markers_are_comment_lines_only():
    for path in G.kernel_files().values():
        text = path.read_text()
        assert W.strip_markers(text).count("\n") == text.count("\n") - 2 * len(W.regions(text))


def test_the_gates_make_the_untouched_workspace_score_zero():
    """Every GPU check requires a static check that the untouched workspace fails, except the measured
    bank conflicts: the untouched c4 is c3's plain tile, whose conflicts are what it measures."""
    for p in G.code_parts:
        for c in p.checks:
            if c.needs_gpu and c.kind != "bank-conflicts":
                gate = c.requires
                while p.check(gate).requires:
                    gate = p.check(gate).requires
                assert not p.check(gate).needs_gpu, f"{p.name} {c.name}"


# ---------------------------------------------------------------------------------------------
# The workspace holds no answer
# ---------------------------------------------------------------------------------------------

def _code_lines(text):
    out = set()
    for line in text.split("\n"):
        s = re.sub(r"\s+", " ", line.strip())
        if len(s) >= 16 and not s.startswith("// TODO") and "SOLUTION" not in s:
            out.add(s)
    return out


ANSWERS = ["Swizzle<1, 2, log2i(BK) - 2>", "Swizzle<3, 2, log2i(BM) - 2>", "log2(BM) - 2", "Swizzle<1,2,3>", "Swizzle<1, 2, 3>", "log2(BK) - 2", "Stride<_4, _1, Int<4 * THR_N>>",
           "(4, 1, 4 THR_N)", "(16,4,2):(4,1,64)", "cp_async_wait<STAGES - 2>"]


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    dest = tmp_path_factory.mktemp("ws7b") / "workspace"
    W.generate(G, dest, quiet=True)
    return dest


def test_no_workspace_file_holds_a_line_of_any_region(workspace):
    answers = set()
    for path in G.kernel_files().values():
        lines = path.read_text().split("\n")
        for m in W.regions("\n".join(lines), path.name):
            answers |= _code_lines("\n".join(lines[m.begin + 1:m.end]))
    for f in workspace.glob("*.cu"):
        leaked = answers & _code_lines(f.read_text())
        assert not leaked, f"{f.name} holds the answer line(s) {sorted(leaked)}"


@pytest.mark.parametrize("answer", ANSWERS)
def test_no_workspace_file_names_an_answer(workspace, answer):
    for f in list(workspace.glob("*.cu")) + [workspace / "answers.toml", workspace / "README.md"]:
        assert answer not in f.read_text(), f"{f.name} names {answer!r}"


def test_the_workspace_holds_the_graded_rungs_only(workspace):
    assert sorted(f.name for f in workspace.glob("*.cu")) == sorted(p.name for p in G.kernel_files().values())


# ---------------------------------------------------------------------------------------------
# The probes' verdicts on synthetic data
# ---------------------------------------------------------------------------------------------

def _swizzle(o, B, M, S):
    mask = ((1 << B) - 1) << (M + S)
    return o ^ ((o & mask) >> S)


def _sa_text(offset, BK, BM=128, STAGES=3):
    """What probes/c4_sa_layout.cu prints for a layout offset(m, k) of stage 0 (stages follow)."""
    lines = [f"tile {BM} {BK} {STAGES} 16 16"]
    for s in range(STAGES):
        for m in range(BM):
            lines.append(f"sA {s} {m}: " + " ".join(str(s * BM * BK + offset(m, k, BK)) for k in range(BK)))
    return "\n".join(lines)


def _sa(offset, bks=(32, 64)):
    return PROBES.sa_verdict([({"BK": bk}, _sa_text(offset, bk)) for bk in bks])


def _log2(x):
    return x.bit_length() - 1


def test_the_reference_swizzle_passes_for_every_bk():
    ok, reason = _sa(lambda m, k, BK: _swizzle(BK * m + k, 1, 2, _log2(BK) - 2), bks=(16, 32, 64))
    assert ok, reason


@pytest.mark.parametrize("bms", [(2, 2, 3), (3, 2, 3), (1, 3, 2)], ids=str)
def test_other_conflict_free_swizzles_pass_at_bk_32(bms):
    assert _sa(lambda m, k, BK: _swizzle(BK * m + k, *bms), bks=(32,)) == (True, "")


def test_the_plain_tile_has_the_2_way_conflict():
    ok, reason = _sa(lambda m, k, BK: BK * m + k)
    assert not ok and "2-way bank conflicts in the 32-bit reads" in reason and "rows 0, 1" in reason
    assert "Swizzle" not in reason


def test_a_swizzle_that_misses_the_row_bit_fails_at_bk_32():
    ok, reason = _sa(lambda m, k, BK: _swizzle(BK * m + k, 2, 3, 3))
    assert not ok and "2-way" in reason and "(BK = 32)" in reason


def test_a_constant_shift_fails_at_bk_64_only():
    assert _sa(lambda m, k, BK: _swizzle(BK * m + k, 1, 2, 3), bks=(32,)) == (True, "")
    ok, reason = _sa(lambda m, k, BK: _swizzle(BK * m + k, 1, 2, 3))
    assert not ok and "(BK = 64)" in reason


def test_single_floats_moved_split_the_16_byte_chunks():
    ok, reason = _sa(lambda m, k, BK: _swizzle(BK * m + k, 1, 0, _log2(BK)))
    assert not ok and "16-byte chunk" in reason


def test_a_layout_that_is_no_permutation_fails():
    ok, reason = _sa(lambda m, k, BK: BK * (m // 2 * 2) + k)
    assert not ok and "share offset" in reason


def test_a_layout_that_leaves_its_stage_fails():
    ok, reason = _sa(lambda m, k, BK: 2 * BK * m + k)          # rows two apart: half the tile lands in the next stage
    assert not ok and "outside the stage" in reason


def _mma_text(perm, BM=128, BN=128, THR_M=16, THR_N=16):
    """What probes/c5_mma_partition.cu prints when the MMA's n-index x lands on column perm(x) (the
    thread's n-index t % THR_N is x's fastest part, its value index j the next: x = t % THR_N + THR_N j)."""
    lines = [f"tile {BM} {BN} 32 {THR_M} {THR_N}"]
    for t in range(THR_M * THR_N):
        for i in range(BM // THR_M):
            m = t // THR_N + THR_M * i
            lines.append(f"C {t} {m}: " + " ".join(f"{m},{perm(t % THR_N + THR_N * j)}" for j in range(BN // THR_N)))
    for t in range(32):
        lines.append(f"B {t}: " + " ".join(f"{perm(t % THR_N + THR_N * j)},0" for j in range(BN // THR_N)))
    return "\n".join(lines)


def _layout(shape, stride):
    def f(x):
        o = 0
        for s, d in zip(shape, stride):
            o += (x % s) * d
            x //= s
        return o
    return f


def test_the_reference_permutation_passes():
    assert PROBES.mma_verdict([({}, _mma_text(_layout((16, 4, 2), (4, 1, 64))))]) == (True, "")


def test_the_identity_is_not_in_groups_of_4():
    ok, reason = PROBES.mma_verdict([({}, _mma_text(_layout((16, 4, 2), (1, 16, 64))))])
    assert not ok and "groups of 4" in reason and "thread 0's values in row 0 are at columns 0, 16, 32" in reason


def test_a_map_that_is_not_one_to_one_names_the_missing_columns():
    ok, reason = PROBES.mma_verdict([({}, _mma_text(_layout((16, 4, 2), (4, 1, 16))))])
    assert not ok and "computed by no thread" in reason and "80..127" in reason and "more than one" in reason


def test_eight_adjacent_columns_per_thread_conflict_on_sb():
    ok, reason = PROBES.mma_verdict([({}, _mma_text(_layout((16, 4, 2), (8, 1, 4))))])
    assert not ok and "2-way bank conflicts in warp 0's 128-bit reads of sB" in reason


def test_the_verdicts_never_print_a_layout_to_write():
    texts = [_mma_text(_layout((16, 4, 2), s)) for s in ((1, 16, 64), (4, 1, 16), (8, 1, 4))]
    for t in texts:
        reason = PROBES.mma_verdict([({}, t)])[1]
        assert "Stride" not in reason and "(4, 1, 64)" not in reason and "PermN" not in reason


# ---------------------------------------------------------------------------------------------
# Questions and the prediction
# ---------------------------------------------------------------------------------------------

def test_every_question_has_a_computed_answer_and_a_reason_that_passes():
    for q in G.questions:
        assert q.answer() is not None
        assert q.grade(q.answer())[0]
        if q.why:
            assert q.grade_reason(q.why_model)[0] and not q.pasted_question_passes()


def test_a_bare_keyword_list_or_the_question_pasted_is_no_reason():
    for q in (q for q in G.questions if q.why):
        assert not q.grade_reason(q.text)[0]
        assert not q.grade_reason(" ".join(alt for idea in q.why for alt in idea[:1] if isinstance(alt, str)))[0]


def test_the_prediction_separates_the_derivation_from_the_near_misses():
    (p,) = G.predictions
    want = p.answer()
    assert math.isclose(want, (64 * 2 + 64 * 4) / (32 * 64))       # A: 64 LDS.128 x 2, B: 64 LDS.128 x 4 per tile
    instructions_only = (64 + 64) / (32 * 64)
    unmerged = (64 * 4 + 64 * 4) / (32 * 64)
    for miss in (instructions_only, unmerged, 2 * want, want / 2):
        assert abs(miss - want) > p.rel_tol * want
    assert parse_number("0.19") and abs(0.19 - want) <= p.rel_tol * want


def test_no_answer_is_in_a_text_the_student_reads():
    readme = (LAB.dir / "grading" / "README.md").read_text()
    for q in G.questions:
        if q.kind == "number":
            assert f"= {q.answer()}" not in readme
    assert "0.1875" not in readme and "0.19" not in readme


# ---------------------------------------------------------------------------------------------
# The known-wrong kernels
# ---------------------------------------------------------------------------------------------


def test_each_part_has_at_least_two_known_wrong_kernels_with_distinct_reasons():
    for p in G.code_parts:
        reasons = {w.reason for w in G.wrong if w.part == p.name}
        assert len(reasons) >= 2, p.name


# ---------------------------------------------------------------------------------------------
# The self-test without a GPU (slow: 13 CuTe compiles and their probes)
# ---------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    needs_cuobjdump()
    root = tmp_path_factory.mktemp("grading7b")
    g = Grading(LAB)
    g.build_dir = root / "build"
    env = grader.environment(g, gpu=False, arch=ARCH, seed=12345, work=root / "work")
    reports = grader.grade_many(g, selftest.jobs(g, root / "ws"), env, progress=False)
    return {"g": g, "env": env, "reports": reports}


def test_the_reference_gets_full_static_marks(graded):
    for p in graded["reports"][0].parts:
        for c in p.checks:
            check = graded["g"].part(p.name).check(c.check)
            assert c.status == (grader.NEEDS_GPU if check.needs_gpu else grader.PASS), f"{p.name} {c.check}: {c.reason}"


def test_the_untouched_workspace_compiles_and_scores_zero(graded):
    for p in graded["reports"][1].parts:
        assert not any("does not compile" in (c.reason or "") for c in p.checks), p.name
        assert p.points == 0, f"{p.name}: {[c.check for c in p.checks if c.status == grader.PASS]}"


def test_the_selftest_expectations_hold_without_a_gpu(graded):
    assert selftest.expectations(graded["g"], graded["reports"], graded["env"]) == []
