"""The grader is code under test (no GPU needed): the workspace it generates, the points it gives.

The reference solution must score full marks on what grades without a GPU (compile, ptxas, SASS,
questions, predictions against the recorded run), with every GPU check reported as needing a GPU;
the untouched workspace must score zero on every code part; each known-wrong kernel (a patch of its
reference, applied here) must lose exactly the points that can be taken off statically. The GPU side
is tested in test_grading_gpu.py; here its verdicts are turned into reasons from made-up worker
results, its crash handling is run against a fake worker, and the whole GPU path runs on the
simulated GPU of common/grading/simgpu.
"""
import argparse
import difflib
import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from types import SimpleNamespace

import pytest

from common import grading
from common.errors import CourseError
from common.grading import answers as answers_mod
from common.grading import gpu as gpumod
from common.grading import grader, patches, races, selftest, simgpu, static
from common.grading import questions as questions_mod
from common.grading import workspace as W
from common.grading.spec import Grading
from common.testing import lab_of, needs_cuobjdump

LAB = lab_of(__file__)
G = Grading(LAB)
Q = LAB.module("grading.questions")
ARCH = "sm_90"
ROOT = Path(__file__).resolve().parents[3]


def need_sass():
    """The static checks read SASS: without cuobjdump they would be 'skipped', not graded."""
    needs_cuobjdump()


def fresh_grading(build):
    """The lab's grading data with the grader's build folder in a temporary place."""
    g = Grading(LAB)
    g.build_dir = Path(build)
    return g


@pytest.fixture(scope="session")
def graded(tmp_path_factory):
    """One batch, as `make grade-selftest` runs it without a GPU: the reference solution, the
    untouched workspace and every known-wrong kernel, each kernel compiled once for sm_90."""
    need_sass()
    root = tmp_path_factory.mktemp("grading")
    g = fresh_grading(root / "build")
    env = grader.environment(g, gpu=False, arch=ARCH, seed=12345, work=root / "work")
    jobs = selftest.jobs(g, root / "ws")
    reports = grader.grade_many(g, jobs, env, progress=False)
    return {"g": g, "env": env, "reports": reports, "ref": reports[0], "untouched": reports[1],
            "wrong": dict(zip([w.patch for w in G.wrong], reports[2:])), "root": root}


# ---------------------------------------------------------------------------------------------
# One source of truth: the markers and the workspace
# ---------------------------------------------------------------------------------------------

def _marked_files():
    return G.kernel_files()


def test_every_region_in_the_kernels_has_a_stub_entry_and_every_entry_a_marker():
    found = {}
    for part, path in _marked_files().items():
        for m in W.regions(path.read_text(), path.name):
            assert m.id not in found, f"region {m.id} marked twice"
            found[m.id] = part
    assert set(found) == set(G.regions)
    for rid, part in found.items():
        assert G.regions[rid].part == part, f"{rid} is in {part}'s kernel but parts.py files it under {G.regions[rid].part}"
    for p in G.code_parts:
        assert set(p.regions) == {rid for rid, part in found.items() if part == p.name}


def test_markers_are_short_whole_comment_lines():
    for path in _marked_files().values():
        for line in path.read_text().splitlines():
            if "SOLUTION" in line:
                assert re.match(r"^\s*// (BEGIN SOLUTION [a-z0-9-]+: .+|END SOLUTION [a-z0-9-]+)$", line), line
                assert len(line.strip()) <= 100, f"{path.name}: marker longer than 100 characters: {line.strip()}"


def test_malformed_markers_are_refused():
    with pytest.raises(CourseError, match="never closed"):
        W.regions("// BEGIN SOLUTION a: x\nint i;\n")
    with pytest.raises(CourseError, match="without its BEGIN"):
        W.regions("int i;\n// END SOLUTION a\n")
    with pytest.raises(CourseError, match="inside region"):
        W.regions("// BEGIN SOLUTION a: x\n// BEGIN SOLUTION b: y\n// END SOLUTION b\n// END SOLUTION a\n")
    with pytest.raises(CourseError, match="whole comment line"):
        W.regions("int i; // BEGIN SOLUTION a: x\n")


_strip_markers = W.strip_markers


def test_solution_markers_do_not_change_the_compiled_code(tmp_path):
    """The markers are comments: with and without them every kernel compiles to the same SASS
    (no -lineinfo, so moved lines do not matter)."""
    need_sass()
    from concurrent.futures import ThreadPoolExecutor
    from common.build import find_nvcc
    from common.sass import disassemble

    def sass(src, tag):
        out = tmp_path / f"{Path(src).stem}_{tag}.cubin"
        subprocess.run([find_nvcc(), "-cubin", "-O3", "-std=c++17", f"-arch={ARCH}", "-o", str(out), str(src)],
                       check=True, capture_output=True)
        return disassemble(out).replace(out.name, "")

    jobs = []
    for path in _marked_files().values():
        bare = tmp_path / path.name
        bare.write_text(_strip_markers(path.read_text()))
        jobs += [(path, "marked"), (bare, "bare")]
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        out = list(pool.map(lambda j: sass(*j), jobs))
    for (path, _), marked, bare in zip(jobs[::2], out[::2], out[1::2]):
        assert marked == bare, f"{path.name}: the SOLUTION markers changed the SASS"


def test_the_workspace_has_a_todo_for_every_region_and_none_of_the_solution(tmp_path):
    W.generate(G, tmp_path / "ws", quiet=True)
    for part, path in _marked_files().items():
        ref = path.read_text()
        student = (tmp_path / "ws" / path.name).read_text()
        assert "SOLUTION" not in student
        lines = ref.split("\n")
        student_lines = set(student.split("\n"))
        for m in W.regions(ref, path.name):
            assert f"// TODO({m.id}): {m.todo}" in student
            body = [l for l in lines[m.begin + 1:m.end] if len(l.strip()) > 12 and not l.strip().startswith(("//", "#pragma"))]
            for l in body:
                if l not in set(lines[:m.begin] + lines[m.end + 1:]):      # a line only the region has
                    assert l not in student_lines, f"{path.name}: the solution line {l.strip()!r} is in the workspace"
    answers = answers_mod.load(tmp_path / "ws" / "answers.toml")
    assert set(answers["questions"]) == set(Q.QUESTION_IDS) | {q.why_key for q in Q.QUESTIONS if q.why}
    assert set(answers["predictions"]) == set(Q.PREDICTION_IDS)
    assert all(v == "TODO" for v in answers["questions"].values())
    assert all(v == "TODO" for v in answers["predictions"].values())


def test_make_workspace_never_overwrites_a_workspace(tmp_path):
    ws = tmp_path / "ws"
    W.generate(G, ws, quiet=True)
    (ws / "v4_1d_blocktiling.cu").write_text("// my work")
    with pytest.raises(CourseError, match="left alone"):
        W.generate(G, ws, quiet=True)
    assert (ws / "v4_1d_blocktiling.cu").read_text() == "// my work"
    W.generate(G, ws, force=True, quiet=True)
    assert (tmp_path / "ws.old" / "v4_1d_blocktiling.cu").read_text() == "// my work"
    assert "TODO(v4-inner-loop)" in (ws / "v4_1d_blocktiling.cu").read_text()


# ---------------------------------------------------------------------------------------------
# What the reference, the untouched workspace and the known-wrong kernels score here
# ---------------------------------------------------------------------------------------------

def test_the_reference_solution_scores_full_marks_on_everything_that_grades_without_a_gpu(graded):
    ref = graded["ref"]
    assert [p.name for p in ref.parts] == [p.name for p in G.parts]
    for p in ref.parts:
        for c in p.checks:
            if G.part(p.name).check(c.check).needs_gpu:
                assert c.status == grader.NEEDS_GPU and c.reason.startswith("needs a GPU"), (p.name, c.check, c.status)
            else:
                assert c.status == grader.PASS, f"reference lost {p.name} {c.check}: {c.reason}"
    assert ref.score == ref.graded_max > 0
    assert ref.pending == sum(c.points for p in G.code_parts for c in p.checks if c.needs_gpu)


def test_the_untouched_workspace_compiles_and_scores_zero_on_every_code_part(graded):
    untouched = graded["untouched"]
    for p in untouched.parts:
        assert p.points == 0, f"untouched {p.name}: {[c.check for c in p.checks if c.status == grader.PASS]} passed"
        for c in p.checks:
            assert "does not compile" not in c.reason, f"{p.name}: the untouched workspace must compile: {c.reason}"
            assert c.status in (grader.FAIL, grader.NEEDS_GPU)
            if c.status == grader.FAIL:
                assert c.reason, f"{p.name} {c.check} lost its point without a reason"
        assert any(c.status == grader.FAIL for c in p.checks), f"{p.name}: no static check caught the untouched part"


def test_requires_turns_a_missing_prerequisite_into_a_lost_point(graded):
    r = graded["untouched"].result("v5", "registers")
    assert r.status == grader.FAIL and r.reason == "needs computes first"
    r = graded["untouched"].result("t3", "registers")
    assert r.reason == "needs cp-async first"


@pytest.mark.parametrize("wrong", G.wrong, ids=[w.name for w in G.wrong])
def test_a_known_wrong_kernel_loses_exactly_its_static_points_here(graded, wrong):
    r = graded["wrong"][wrong.patch]
    lost = {c.check for c in r.lost()}
    assert lost == set(wrong.lose_here), f"{wrong.patch}: lost {sorted(lost)}, must lose {sorted(wrong.lose_here)}"
    if wrong.lose_here:
        key = r.result(wrong.part, wrong.key_check)
        assert wrong.said_in(key.reason), key.reason
    for c in r.part(wrong.part).checks:
        if G.part(wrong.part).check(c.check).needs_gpu:
            assert c.status == grader.NEEDS_GPU


@pytest.mark.parametrize("wrong", G.wrong, ids=[w.name for w in G.wrong])
def test_a_known_wrong_kernel_is_a_short_patch_of_its_reference_with_one_marked_bug(wrong, tmp_path):
    p = patches.parse(G.wrong_file(wrong).read_text(), wrong.patch)
    ref = G.kernel_files()[wrong.part]
    assert Path(p.old_path).name == ref.name
    assert p.preamble.startswith(f"{wrong.name}: "), "the patch says in its first line what its bug is"
    assert any("BUG" in line for line in p.added)
    text = patches.apply_file(G.wrong_file(wrong), ref, tmp_path / f"{wrong.name}.cu").read_text()

    def code(t):
        out = []
        for line in _strip_markers(t).split("\n"):
            line = re.sub(r"//.*$", "", line).rstrip()
            if line.strip():
                out.append(line)
        return out

    diff = [l for l in difflib.unified_diff(code(ref.read_text()), code(text), lineterm="", n=0)
            if l[:1] in "+-" and not l.startswith(("+++", "---"))]
    changed = max(sum(l.startswith("+") for l in diff), sum(l.startswith("-") for l in diff))
    assert 1 <= changed <= wrong.max_diff_lines, f"{wrong.patch}: {changed} code lines differ from {ref.name}:\n" + "\n".join(diff)
    ids = [m.id for m in W.regions(text, wrong.name)]
    assert ids == [m.id for m in W.regions(ref.read_text(), ref.name)], "a patch keeps the solution markers"


def test_selftest_expectations_hold_without_a_gpu(graded):
    assert selftest.expectations(graded["g"], graded["reports"], graded["env"]) == []
    rows = selftest.wrong_table(graded["g"], graded["reports"], graded["env"])
    assert [r["kernel"] for r in rows] == [w.patch for w in G.wrong]
    assert all(r["gpu"] == "needs a GPU" for r in rows)
    # where the batch spent its time (the selftest's JSON keeps it): no GPU phase without a GPU
    assert set(graded["env"].phases) == {"compile", "sass", "checks and reports"}
    assert all(v >= 0 for v in graded["env"].phases.values())


def test_a_kernel_that_does_not_compile_loses_every_point_graded_here_with_the_nvcc_error_line(tmp_path):
    """Its static checks fail with nvcc's line; its GPU checks stay needs-gpu without a GPU (never
    scored there: every student's "graded here" is the same, compiling or not)."""
    need_sass()
    ws = tmp_path / "ws"
    W.generate(G, ws, solution=True, quiet=True)
    src = ws / "v4_1d_blocktiling.cu"
    src.write_text(src.read_text().replace("const float b = Bs[k][threadCol];", "const float b = Bs[k][threadCol]"))
    (ws / "v5_2d_blocktiling.cu").write_text((ws / "v5_2d_blocktiling.cu").read_text()
                                            .replace("sgemm_v5_2d_blocktiling(", "sgemm_v5_renamed("))
    g = fresh_grading(tmp_path / "build")
    env = grader.environment(g, gpu=False, arch=ARCH, seed=1, work=tmp_path / "work")
    r = grader.grade_many(g, [grader.workspace_job(g, ws, parts=["v4", "v5"])], env, progress=False)[0]
    for c in r.part("v4").checks:
        if G.part("v4").check(c.check).needs_gpu:
            assert c.status == grader.NEEDS_GPU, (c.check, c.reason)
            continue
        assert c.status == grader.FAIL
        assert re.match(r"does not compile: v4_1d_blocktiling\.cu\(\d+\): error", c.reason), c.reason
    assert len([l for l in r.lost_lines() if "v4" in l]) == 1        # one line for one reason
    for c in r.part("v5").checks:
        if G.part("v5").check(c.check).needs_gpu:
            assert c.status == grader.NEEDS_GPU, (c.check, c.reason)
            continue
        assert c.status == grader.FAIL and "sgemm_v5_2d_blocktiling is missing" in c.reason
    assert r.graded_max == sum(c.points for p in ("v4", "v5") for c in G.part(p).checks if not c.needs_gpu)


# ---------------------------------------------------------------------------------------------
# SASS rules
# ---------------------------------------------------------------------------------------------

SASS_SNIPPET = """\
		Function : k
        /*0000*/                   HFMA2.MMA R5, -RZ, RZ, 0, 0 ;
        /*0010*/                   HFMA2 R6, -RZ, RZ, 1.875, 0 ;
        /*0020*/                   FFMA R1, R2, R3, R1 ;
        /*0030*/              @!PT HADD2 R1, R2, R3 ;
		Function : h
        /*0000*/                   HMUL2 R1, R2, R3 ;
        /*0010*/                   F2FP.F16.F32.PACK_AB R4, R5, R6 ;
        /*0020*/                   HADD2.F32 R7, -RZ, R8.H0_H0 ;
        /*0030*/                   F2F.F16.F32 R9, R10 ;
        /*0040*/                   HFMA2.MMA R1, R2, R3, R4 ;
"""


def test_fp16_math_is_told_from_the_constant_moves_every_fp32_kernel_has():
    found = static.fp16_ops(SASS_SNIPPET)
    assert set(found) == {"k", "h"}
    assert not found["k"], found["k"]
    assert set(found["h"]) == {"HMUL2", "F2FP.F16.F32.PACK_AB", "HADD2.F32", "F2F.F16.F32", "HFMA2.MMA"}


# ---------------------------------------------------------------------------------------------
# Questions and predictions
# ---------------------------------------------------------------------------------------------

def test_the_question_bank_gives_the_chapters_own_numbers():
    by = {q.id: q.answer() for q in Q.QUESTIONS}
    # v4 and v5 are asked at half their rows (their headers state the chapter's counts); the model still
    # gives the chapter's own numbers for the kernels as built
    assert Q._traffic("v4", "loads_per_fma") == pytest.approx(9 / 8)      # "nine loads for eight FMAs"
    assert Q._traffic("v5", "loads_per_fma") == pytest.approx(0.25)       # "0.25 loads per FMA"
    assert by["v4_half_rows_loads_per_fma"] == pytest.approx(5 / 4)
    assert by["v5_half_rows_loads_per_fma"] == pytest.approx(12 / 32)
    assert by["v7_loads_per_fma"] == pytest.approx(6 / 128)                # "6 shared loads per 128 FFMA"
    assert round(by["ridge_fp16_geforce"]) == 92                           # "92 FLOP/B to be compute-bound"
    assert round(by["v5_occupancy_sm86_pct"]) == 33                        # "16 warps, 33% occupancy"
    assert by["v5_global_flop_per_byte"] == pytest.approx(32)              # "a global intensity of 32 FLOP/B"
    assert by["v7_accumulators"] == 128 and by["t2_a_fragment_reuse"] == 2  # "each A fragment is used twice"
    assert by["v7_occupancy_limit"] == "registers"


@pytest.mark.parametrize("raw,value", [(0.25, 0.25), (2, 2.0), ("9/8", 1.125), (" 33 % ", 33.0), ("2 blocks", 2.0),
                                       ("1e-1", 0.1), ("abc", None), (True, None), ("1/0", None), ("", None)])
def test_answers_may_be_numbers_fractions_or_numbers_with_a_unit(raw, value):
    got = questions_mod.parse_number(raw)
    assert got == (pytest.approx(value) if value is not None else None)


def test_a_wrong_answer_says_why_without_giving_the_answer_away():
    q = next(q for q in Q.QUESTIONS if q.id == "v5_half_rows_loads_per_fma")
    assert q.grade("12/32") == (True, "")
    ok, reason = q.grade(0.25)
    assert not ok and "0.375" not in reason and "12/32" not in reason and q.hint in reason
    assert "hierarchy" not in reason and q.model not in reason, "a wrong answer never names the model call"
    assert q.grade("TODO") == (False, "not answered") and q.grade(None) == (False, "not answered")
    words = next(q for q in Q.QUESTIONS if q.id == "outer_product_view")
    assert words.grade("The Outer-Product")[0] and not words.grade("dot product")[0]


def test_answers_toml_is_read_by_tomllib_or_its_backport_never_by_hand():
    text = answers_mod.template(G, solution=True) + '\n[extra]\na = "x # not a comment"  # a comment\nb = -1_000\n'
    data = answers_mod.parse_toml(text)
    assert data["extra"] == {"a": "x # not a comment", "b": -1000}
    assert not hasattr(answers_mod, "parse_simple_toml"), "the hand parser is gone (tomli on Python 3.10)"
    assert answers_mod.tomllib.__name__ in ("tomllib", "tomli")
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert re.search(r'"tomli[^"]*;\s*python_version\s*<\s*\\?"3\.11\\?""', pyproject), "tomli for Python < 3.11"


def test_a_broken_answers_file_loses_the_questions_with_the_line_that_broke(tmp_path, graded):
    bad = tmp_path / "answers.toml"
    bad.write_text("[questions]\nv4_half_rows_loads_per_fma = 5/4\n")
    with pytest.raises(CourseError, match="not valid TOML"):
        answers_mod.load(bad)


def test_predictions_are_derived_graded_here_within_15_percent_and_never_shown(graded):
    """lab 7's predictions are about v8, computed from its header: the reference scores without a
    GPU, a guess outside 15 % loses, and no value is written where the student reads."""
    assert all(p.computed and p.rel_tol == 0.15 for p in Q.PREDICTIONS)
    ref = graded["ref"]
    assert all(c.status == grader.PASS for c in ref.part("predictions").checks)
    assert ref.extra["predictions"]["measured_on"] is None
    for p in Q.PREDICTIONS:
        want = p.answer()
        assert questions_mod.grade_prediction(p, want * 1.14, None)[0]
        for off in (0.8, 1.2, 2.0, 0.5):                   # the near misses of the comment in questions.py
            ok, reason = questions_mod.grade_prediction(p, want * off, None)
            assert not ok and "15 %" in reason and f"{want:g}" not in reason and p.hint in reason
            assert not any(w in reason for w in ("high", "low", "more", "less")), "no direction"
    by = {p.id: p.answer() for p in Q.PREDICTIONS}
    assert round(by["v8_global_flop_per_byte"], 2) == 42.67                 # 2 x 128 x 256 / (4 x (128 + 256))
    assert by["v8_stages5_shared_bytes"] == 5 * 8 * (128 + 256) * 4         # 60 KB
    assert round(by["v8_global_gb_4096"], 2) == 3.22


# ---------------------------------------------------------------------------------------------
# The GPU side's verdicts, from made-up worker results (what a real run writes)
# ---------------------------------------------------------------------------------------------

def _case(**kw):
    base = {"ok": True, "label": "v6/scalar 257x129x513", "when": "", "verdict": "", "worst_index": [0, 0], "got": 1.0,
            "want": 1.0, "tol": 1e-5, "bad": 0, "unwritten": 0, "first_unwritten": None, "computed_nan": 0,
            "first_nan": None, "outside_before": 0, "outside_after": 0}
    base.update(kw)
    return base


def _good_run(**kw):
    res = {"cases": [_case()], "crash": None, "after_timing": _case(), "fresh": _case(),
           "timing": {"size": 2048, "variant": "vec", "reference_ms": 1.0, "student_ms": 1.1, "pct_of_reference": 90.9}}
    res.update(kw)
    return res


def test_gpu_results_become_one_line_reasons():
    assert grader._correct(_good_run())[0] == grader.PASS
    s, why, _ = grader._correct(_good_run(cases=[_case(), _case(ok=False, worst_index=[129, 4], got=2.5, want=1.5, bad=33)]))
    assert s == grader.FAIL and why.startswith("wrong element at (129, 4) for shape 257x129x513 (v6/scalar): got 2.5, want 1.5")
    why = grader._correct(_good_run(cases=[_case(ok=False, outside_after=65)]))[1]
    assert why.startswith("wrote outside C for shape") and "65 word(s) after its end" in why
    why = grader._correct(_good_run(cases=[_case(ok=False, computed_nan=129, first_nan=[256, 0])]))[1]
    assert why.startswith("NaN at (256, 0)") and "a read past the end of A or B" in why
    why = grader._correct(_good_run(cases=[_case(ok=False, unwritten=5, first_unwritten=[1, 2])]))[1]
    assert why.startswith("never wrote (1, 2)")
    why = grader._correct(_good_run(fresh=_case(ok=False, unwritten=4096, first_unwritten=[0, 0],
                                                when="after timing, on fresh inputs in the same buffers")))[1]
    assert "after timing" in why and "no cached result" in why
    crash = {"stage": "correctness", "label": "v6/scalar 17x33x9", "error": "misaligned address"}
    why = grader._correct(_good_run(cases=[], crash=crash))[1]
    assert why == "crashed on the GPU at v6/scalar 17x33x9: misaligned address"
    assert grader._fast(_good_run(), G.SPEED_PCT)[0] == grader.PASS
    s, why, _ = grader._fast(_good_run(timing={"size": 2048, "variant": "vec", "reference_ms": 1.0,
                                               "student_ms": 2.0, "pct_of_reference": 50.0}), G.SPEED_PCT)
    assert s == grader.FAIL and why.startswith("50 % of the reference's speed at 2048³") and f"{G.SPEED_PCT} % needed" in why


def test_races_are_tied_to_the_kernel_whose_file_the_report_names():
    text = textwrap.dedent("""\
        ========= Error: Race reported between Write access at sgemm_v6_vec+0xa0 in v6_missing_syncthreads.cu:170
        =========     and Read access at sgemm_v6_vec+0xb0 in v6_missing_syncthreads.cu:185 [256 hazards]
        grade-sanitize: done 1-v6
        grade-sanitize: done 2-v6
        """)
    items = [{"id": "1-v6", "source": "/w/v6_missing_syncthreads.cu"}, {"id": "2-v6", "source": "/ws/v6_vectorized.cu"}]
    found, unread = races.read(text, items)
    assert list(found) == ["1-v6"] and unread == []
    assert found["1-v6"][0] == ("write at v6_missing_syncthreads.cu:170 races with read at "
                                "v6_missing_syncthreads.cu:185 (sgemm_v6_vec)")
    fixture = (LAB.dir / "tests" / "fixtures" / "sanitizer_racecheck_broken.txt")
    if fixture.exists():               # real racecheck output: the same report shape
        assert races.read(fixture.read_text(), [{"id": "b", "source": "/x/broken_kernels.cu"}])[0]["b"]


def test_a_race_report_split_by_the_programs_own_output_is_still_read():
    text = ("========= Error: Race reported between Write access at k+0xa0 in v6_missing_syncthreads.cu:170\n"
            "grade-sanitize: done 1-v6\n"
            "=========     and Read access at k+0xb0 in v6_missing_syncthreads.cu:185 [256 hazards]\n")
    found, _ = races.read(text, [{"id": "1-v6", "source": "/w/v6_missing_syncthreads.cu"}])
    assert list(found) == ["1-v6"] and "races with read at v6_missing_syncthreads.cu:185" in found["1-v6"][0]


def test_a_real_h200_racecheck_batch_blames_only_the_kernel_without_its_barrier():
    """Recorded on the H200: the reference kernels and the known-wrong ones in one racecheck run.
    racecheck prints the function with its signature ("void sgemm_v6_body<(bool)1>(int, ...)")."""
    text = (LAB.dir / "tests" / "fixtures" / "grader_racecheck_batch_h200.txt").read_text()
    items = ([{"id": f"0-{p}", "source": f"/ref/{f.name}"} for p, f in G.kernel_files().items()]
             + [{"id": f"w-{w.name}", "source": f"/wrong/{w.name}.cu"} for w in G.wrong])
    found, unread = races.read(text, items)
    assert list(found) == ["w-v6_missing_syncthreads"]
    assert unread == [], "every hazard racecheck's summary counts is read and tied to a kernel"
    assert "(sgemm_v6_body<(bool)1>)" in found["w-v6_missing_syncthreads"][0]


def test_hazards_in_the_summary_that_no_report_explains_are_not_passed():
    text = "grade-sanitize: done 1-v4\n========= RACECHECK SUMMARY: 2 hazards displayed (2 errors, 0 warnings)\n"
    found, unread = races.read(text, [{"id": "1-v4", "source": "/r/v4_1d_blocktiling.cu"}])
    assert found == {} and unread == ["2 hazard(s) in racecheck's summary with no readable report"]


def test_hazards_nobody_can_read_send_each_kernel_to_racecheck_alone(monkeypatch, tmp_path):
    """A batch whose summary counts hazards that no report line explains is split: each kernel is
    run alone, so the racy one fails and the clean ones pass (no kernel is blamed for another)."""
    items = [{"id": "1-v4", "source": "/r/v4_1d_blocktiling.cu"}, {"id": "2-v6", "source": "/w/v6_bad.cu"}]
    calls = []

    def fake_run(argv, **kw):
        spec = json.loads(Path(argv[argv.index("--spec") + 1]).read_text())
        ids = [it["id"] for it in spec["items"]]
        calls.append(ids)
        racy = "2-v6" in ids
        out = "".join(f"grade-sanitize: done {i}\n" for i in ids)
        out += f"========= RACECHECK SUMMARY: {3 if racy else 0} hazards displayed ({3 if racy else 0} errors, 0 warnings)\n"
        return SimpleNamespace(stdout=out, stderr="", returncode=1 if racy else 0)

    from common import sanitizer
    monkeypatch.setattr(sanitizer, "find_sanitizer", lambda: "compute-sanitizer")
    monkeypatch.setattr(gpumod.subprocess, "run", fake_run)
    res = gpumod.racecheck(LAB, items, tmp_path, timeout=60)
    assert calls == [["1-v4", "2-v6"], ["1-v4"], ["2-v6"]]
    assert res["1-v4"][0] == "pass" and res["2-v6"][0] == "fail"


def test_racecheck_batches_never_hold_two_files_of_one_name():
    items = [{"id": i, "source": s} for i, s in enumerate(["/a/v6.cu", "/b/v6.cu", "/a/v5.cu", "/c/v6.cu", "/b/v5.cu"])]
    batches = gpumod.racecheck_batches(items)
    assert sorted(i["id"] for b in batches for i in b) == list(range(5))
    for b in batches:
        names = [Path(i["source"]).name for i in b]
        assert len(names) == len(set(names))


FAKE_WORKER = textwrap.dedent("""\
    import json, sys, time
    from pathlib import Path
    spec, out = json.loads(Path(sys.argv[sys.argv.index("--spec") + 1]).read_text()), Path(sys.argv[sys.argv.index("--out") + 1])
    for item in spec["items"]:
        f = out / (item["id"] + ".json")
        if f.exists():
            continue
        (out / "current").write_text(item["id"])
        kind = item["id"].split("-")[0]
        if kind == "ok":
            f.write_text(json.dumps({"id": item["id"], "stage": "done", "cases": [], "crash": None}))
        elif kind == "crash":      # what run_one_part does on a CUDA error: its file says so, exit 3
            f.write_text(json.dumps({"id": item["id"], "stage": "correctness", "cases": [],
                                     "crash": {"stage": "correctness", "label": "x", "error": "misaligned address"}}))
            sys.exit(3)
        elif kind == "die":        # a segfault: no word
            f.write_text(json.dumps({"id": item["id"], "stage": "correctness", "cases": []}))
            print("Segmentation fault"); sys.exit(139)
        elif kind == "hang":
            time.sleep(600)
    """)


def test_a_crash_or_a_hang_costs_only_its_own_item(tmp_path, monkeypatch):
    worker = tmp_path / "fake_worker.py"
    worker.write_text(FAKE_WORKER)
    monkeypatch.setattr(gpumod, "WORKER", [str(worker)])
    items = [{"id": i} for i in ("ok-1", "crash-2", "ok-3", "die-4", "hang-5", "ok-6")]
    res = gpumod.run_parts(LAB, items, tmp_path / "out", timeout_per_item=3)
    assert all(res[i]["crash"] is None for i in ("ok-1", "ok-3", "ok-6"))
    assert res["crash-2"]["crash"]["error"] == "misaligned address"
    assert "exit status 139" in res["die-4"]["crash"]["error"] and "Segmentation fault" in res["die-4"]["crash"]["error"]
    assert "did not finish in 3 s" in res["hang-5"]["crash"]["error"]


# ---------------------------------------------------------------------------------------------
# The patches the known-wrong kernels are kept as
# ---------------------------------------------------------------------------------------------

REFERENCE = "".join(f"line {i}\n" for i in range(1, 21))
PATCH = textwrap.dedent("""\
    demo: line 10 is wrong.

    --- kernels/demo.cu
    +++ grading/wrong/demo.cu
    @@ -8,5 +8,6 @@
     line 8
     line 9
    -line 10
    +line 10 // BUG: changed
    +an added line
     line 11
     line 12
    """)


def test_a_patch_applies_where_its_context_matches(tmp_path):
    out = patches.apply(PATCH, REFERENCE, "demo.patch").split("\n")
    assert out[7:12] == ["line 8", "line 9", "line 10 // BUG: changed", "an added line", "line 11"]
    assert len(out) == len(REFERENCE.split("\n")) + 1
    p = patches.parse(PATCH, "demo.patch")
    assert p.preamble == "demo: line 10 is wrong." and p.removed == ["line 10"] and len(p.added) == 2
    # the reference grew above the hunk: it still applies, at the lines it names
    moved = "a new first line\n" + REFERENCE
    assert "line 10 // BUG: changed" in patches.apply(PATCH, moved, "demo.patch").split("\n")[10]


def test_a_patch_the_reference_no_longer_matches_fails_loudly_with_its_name(tmp_path):
    broken = REFERENCE.replace("line 10\n", "line ten\n")
    with pytest.raises(patches.PatchError) as e:
        patches.apply(PATCH, broken, "demo.patch")
    msg = e.value.message + e.value.hint
    assert "demo.patch" in msg and "does not apply to demo.cu" in msg and "'line 10'" in msg and "diff -u" in msg
    ref = tmp_path / "kernels" / "other.cu"
    ref.parent.mkdir()
    ref.write_text(REFERENCE)
    (tmp_path / "demo.patch").write_text(PATCH)
    with pytest.raises(patches.PatchError, match="is a patch of demo.cu, but its part's kernel is other.cu"):
        patches.apply_file(tmp_path / "demo.patch", ref, tmp_path / "out.cu")
    with pytest.raises(patches.PatchError, match="not a unified diff"):
        patches.parse("just words\n", "words.patch")


def test_a_reference_kernel_changed_under_a_known_wrong_kernel_stops_the_selftest(tmp_path, monkeypatch):
    w = next(w for w in G.wrong if w.name == "v4_edge_guard_off_by_one")
    ref = G.kernel_files()["v4"]
    changed = tmp_path / ref.name
    changed.write_text(ref.read_text().replace("if (row < M && col < N)", "if (row < M && col < N && acc[i] == acc[i])"))
    files = {**G.kernel_files(), "v4": changed}
    monkeypatch.setattr(G, "kernel_files", lambda: files)
    with pytest.raises(patches.PatchError, match=r"v4_edge_guard_off_by_one\.patch: hunk 1 of 1 .* does not apply"):
        selftest.wrong_sources(G, tmp_path / "wrong")


# ---------------------------------------------------------------------------------------------
# The report, `make workspace` and `make grade`
# ---------------------------------------------------------------------------------------------

def test_the_report_has_a_line_per_lost_reason_and_json_for_teachers(graded):
    u = graded["untouched"]
    lines = u.lost_lines()
    assert len(lines) == sum(1 for p in u.parts for i, c in enumerate(p.checks) if c.status == grader.FAIL and
                             (i == 0 or p.checks[i - 1].status != grader.FAIL or p.checks[i - 1].reason != c.reason))
    assert all(re.match(r"^ *-\d+ ", l) for l in lines)
    text = u.text()
    assert text.startswith(f"{LAB.title.split(':')[0]} grade: untouched workspace")
    assert "score: 0 of" in text and "Needs a GPU (not graded here)" in text
    data = json.loads(json.dumps(u.to_json()))
    assert data["score"] == 0 and data["pending"] > 0 and data["seed"] == 12345 and data["what"] == "lab07 grade"
    assert {p["part"] for p in data["parts"]} == {p.name for p in G.code_parts}
    for p in data["parts"]:
        for c in p["checks"]:
            assert c["status"] in ("pass", "fail", "needs-gpu", "skipped")


def _course(*args, env=None):
    return subprocess.run([sys.executable, "-m", "common", *args], cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, timeout=300)


def test_make_workspace_says_the_full_path_of_the_workspace_it_made(tmp_path):
    dest = tmp_path / "ws"
    proc = _course("workspace", "--lab", str(LAB.dir), "--dest", str(dest))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    n = len(list(dest.iterdir()))
    assert proc.stdout.splitlines()[0] == f"workspace: {n} files in {dest.resolve()}"


def test_a_lab_without_graded_exercises_says_so_in_one_line(tmp_path):
    lab = tmp_path / "lab99-plain"
    (lab / "kernels").mkdir(parents=True)
    (lab / "lab.py").write_text('TITLE = "Lab 99"\nLADDERS = {}\n')
    for target in ("workspace", "grade", "grade-selftest"):
        proc = _course(target, "--lab", str(lab))
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert proc.stdout.strip().splitlines() == [f"lab99-plain has no graded exercises (no grading/parts.py): "
                                                    f"nothing to do for {target}"]


def test_make_grade_prints_only_the_score_report(tmp_path):
    """`make grade` runs pytest over the workspace, quietly: no progress line, no "40 failed, 18
    skipped" summary (a lost point is a failed test there); what it prints is the score report."""
    need_sass()
    ws = tmp_path / "ws"
    W.generate(G, ws, solution=True, quiet=True)
    out = tmp_path / "grade.json"
    proc = _course("grade", "--lab", str(LAB.dir), "--workspace", str(ws), "--no-gpu", "--parts", "v4,questions",
                   "--json", str(out), env={"GRADE_BUILD": str(tmp_path / "build")})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.startswith(f"{LAB.title.split(':')[0]} grade: "), proc.stdout[:300]
    assert not re.search(r"\d+ (passed|failed|skipped|deselected)|^[.sFE]+ +\[", proc.stdout, re.M), proc.stdout
    assert "Lost points: none." in proc.stdout and "score: 19 of 19 points graded here" in proc.stdout
    assert "[grade] compiling" in proc.stderr, "what the grader does shows on stderr as it does it"
    assert proc.stdout.rstrip().endswith(f"JSON report (for teachers): {out}")
    data = json.loads(out.read_text())
    assert [p["part"] for p in data["parts"]] == ["v4", "questions"] and data["score"] == 19
    assert (tmp_path / "build").is_dir(), "GRADE_BUILD is where the grader compiles"


def test_make_grade_of_an_untouched_workspace_exits_0_with_its_score(tmp_path):
    need_sass()
    ws = tmp_path / "ws"
    W.generate(G, ws, quiet=True)
    proc = _course("grade", "--lab", str(LAB.dir), "--workspace", str(ws), "--no-gpu", "--parts", "v4",
                   "--json", str(tmp_path / "grade.json"), env={"GRADE_BUILD": str(tmp_path / "build")})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "score: 0 of 2 points graded here" in proc.stdout
    assert not re.search(r"\d+ (failed|passed|skipped)", proc.stdout), proc.stdout


def test_make_grade_without_a_workspace_is_one_error_line(tmp_path):
    proc = _course("grade", "--lab", str(LAB.dir), "--workspace", str(tmp_path / "nowhere"), "--no-gpu")
    assert proc.returncode != 0
    assert "there is no workspace at" in proc.stdout + proc.stderr and "Traceback" not in proc.stderr


def test_a_failure_of_the_grader_itself_shows(tmp_path, monkeypatch, capsys):
    """A crash inside the grading is not a score: pytest's output is printed and the status is 2."""
    ws = tmp_path / "ws"
    W.generate(G, ws, quiet=True)
    from common.grading import plugin

    def broken(*a, **kw):
        raise RuntimeError("a bug in the grader")

    monkeypatch.setattr(plugin.grader, "grade_many", broken)
    args = argparse.Namespace(workspace=str(ws), parts="v4", no_gpu=True, arch=ARCH, seed=1, json=None)
    assert plugin.run_grade(G, args) == 2
    out = capsys.readouterr()
    assert "a bug in the grader" in out.out and "the grader itself failed" in out.err


# ---------------------------------------------------------------------------------------------
# The whole GPU path on a simulated GPU (common/grading/simgpu: numpy behind the pycuda calls the worker makes)
# ---------------------------------------------------------------------------------------------

def test_the_gpu_path_end_to_end_on_a_simulated_gpu(graded, tmp_path, monkeypatch):
    """Workers, guard zones, poison, timing against the reference, the re-check on fresh inputs,
    crash recovery, racecheck's bookkeeping and the reasons, with every kernel simulated
    (common/grading/simgpu/pycuda/driver.py says how a `BUG [effect]` marker makes a known-wrong
    kernel misbehave there, and its fake compute-sanitizer reports a race in the kernel that lost its
    barrier). This checks the grader's machinery, not the kernels: those are test_grading_gpu.py's."""
    need_sass()
    simgpu.use(monkeypatch, tmp_path / "bin")
    g = fresh_grading(graded["g"].build_dir)            # the kernels graded[] compiled: no second build
    assert g.TIMING_SIZE == 192
    env = grader.Env(True, "a simulated GPU", ARCH, 99, tmp_path / "work")
    jobs = selftest.jobs(g, graded["root"] / "ws")
    jobs[0].parts = [p.name for p in g.code_parts]
    wanted = {"v4_edge_guard_off_by_one": ("correct", "wrote outside C"), "v5_reads_past_k": ("correct", "NaN at"),
              "v6_unaligned_float4": ("correct", "crashed on the GPU"),
              "v5_caches_result": ("correct", "after timing"),
              "v6_wrong_transposed_index": ("correct", "wrong element"),
              "v6_missing_syncthreads": ("race-free", "racecheck: 1 race: write at v6_missing_syncthreads.cu:"),
              "v4_same_a_row": ("correct", "wrong element"), "v7_strip_offset_missing": ("correct", "wrong element"),
              "v7_lane_map_transposed": ("correct", "wrong element"), "t2_a_from_global": ("correct", "NaN at"),
              "t2_b_k_offset_as_column": ("correct", "wrong element"), "t3_write_stage_stuck": ("correct", "wrong element")}
    jobs = jobs[:2] + [j for j in jobs[2:] if Path(j.name).stem in wanted]
    assert len(jobs) == 2 + len(wanted)
    ref, untouched, *wrong = grader.grade_many(g, jobs, env, progress=False)
    for p in ref.parts:
        for c in p.checks:
            assert c.status == grader.PASS, (p.name, c.check, c.reason)
        assert ref.result(p.name, "fast").details["pct_of_reference"] == pytest.approx(100)   # simulated time
    for p in untouched.parts:
        assert p.points == 0 and untouched.result(p.name, "correct").status == grader.FAIL
    for job, r in zip(jobs[2:], wrong):
        check, words = wanted[Path(job.name).stem]
        c = r.result(r.parts[0].name, check)
        assert c.status == grader.FAIL and words in c.reason, (job.name, c.reason)
        if check == "correct":
            assert r.result(r.parts[0].name, "fast").reason == "needs correct first"
    crashed = next(r for j, r in zip(jobs[2:], wrong) if "unaligned" in j.name)
    assert "crashed under racecheck" in crashed.result("v6", "race-free").reason     # its own run, not the batch's
