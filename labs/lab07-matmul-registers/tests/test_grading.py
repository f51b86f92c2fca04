"""The grader is code under test (no GPU needed): the workspace it generates, the points it gives.

The reference solution must score full marks on what grades without a GPU (compile, ptxas, SASS,
questions, predictions against the recorded run), with every GPU check reported as needing a GPU;
the untouched workspace must score zero on every code part; each known-wrong kernel must lose
exactly the points that can be taken off statically. The GPU side is tested in test_grading_gpu.py;
here its verdicts are turned into reasons from made-up worker results, and its crash handling is
run against a fake worker.
"""
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

import lab07
from common.errors import CourseError
from grading import answers as answers_mod
from grading import gpu as gpumod
from grading import grader, selftest, static
from grading import parts as P
from grading import questions as Q
from grading import workspace as W

LAB = Path(lab07.__file__).resolve().parent
WRONG_DIR = LAB / "grading" / "wrong"
ARCH = "sm_90"


def need_sass():
    """The static checks read SASS: without cuobjdump they would be 'skipped', not graded."""
    from common.sass import find_cuobjdump
    try:
        find_cuobjdump()
    except CourseError as e:
        pytest.skip(f"needs cuobjdump: {e}")


@pytest.fixture(scope="session")
def graded(tmp_path_factory):
    """One batch, as `make grade-selftest` runs it without a GPU: the reference solution, the
    untouched workspace and every known-wrong kernel, each kernel compiled once for sm_90."""
    need_sass()
    root = tmp_path_factory.mktemp("grading")
    saved = grader.GRADE_BUILD
    grader.GRADE_BUILD = root / "build"
    try:
        env = grader.environment(gpu=False, arch=ARCH, seed=12345, work=root / "work")
        jobs = selftest.jobs(root / "ws")
        reports = grader.grade_many(jobs, env, progress=False)
    finally:
        grader.GRADE_BUILD = saved
    return {"env": env, "reports": reports, "ref": reports[0], "untouched": reports[1],
            "wrong": dict(zip([w.file for w in P.WRONG], reports[2:])), "root": root}


# ---------------------------------------------------------------------------------------------
# One source of truth: the markers and the workspace
# ---------------------------------------------------------------------------------------------

def _marked_files():
    return W.kernel_files()


def test_every_region_in_the_kernels_has_a_stub_entry_and_every_entry_a_marker():
    found = {}
    for part, path in _marked_files().items():
        for m in W.regions(path.read_text(), path.name):
            assert m.id not in found, f"region {m.id} marked twice"
            found[m.id] = part
    assert set(found) == set(P.REGIONS)
    for rid, part in found.items():
        assert P.REGIONS[rid].part == part, f"{rid} is in {part}'s kernel but parts.py files it under {P.REGIONS[rid].part}"
    for p in P.CODE_PARTS:
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


def _strip_markers(text):
    return "\n".join(l for l in text.split("\n") if not re.match(r"^\s*// (BEGIN|END) SOLUTION", l))


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
    W.generate(tmp_path / "ws", quiet=True)
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
    assert set(answers["questions"]) == set(Q.QUESTION_IDS)
    assert set(answers["predictions"]) == set(Q.PREDICTION_IDS)
    assert all(v == "TODO" for v in answers["questions"].values())


def test_make_workspace_never_overwrites_a_workspace(tmp_path):
    ws = tmp_path / "ws"
    W.generate(ws, quiet=True)
    (ws / "v4_1d_blocktiling.cu").write_text("// my work")
    with pytest.raises(CourseError, match="left alone"):
        W.generate(ws, quiet=True)
    assert (ws / "v4_1d_blocktiling.cu").read_text() == "// my work"
    W.generate(ws, force=True, quiet=True)
    assert (tmp_path / "ws.old" / "v4_1d_blocktiling.cu").read_text() == "// my work"
    assert "TODO(v4-inner-loop)" in (ws / "v4_1d_blocktiling.cu").read_text()


# ---------------------------------------------------------------------------------------------
# What the reference, the untouched workspace and the known-wrong kernels score here
# ---------------------------------------------------------------------------------------------

def test_the_reference_solution_scores_full_marks_on_everything_that_grades_without_a_gpu(graded):
    ref = graded["ref"]
    assert [p.name for p in ref.parts] == [p.name for p in P.all_parts()]
    for p in ref.parts:
        for c in p.checks:
            if P.part(p.name).check(c.check).needs_gpu:
                assert c.status == grader.NEEDS_GPU and c.reason.startswith("needs a GPU"), (p.name, c.check, c.status)
            else:
                assert c.status == grader.PASS, f"reference lost {p.name} {c.check}: {c.reason}"
    assert ref.score == ref.graded_max > 0
    assert ref.pending == sum(c.points for p in P.CODE_PARTS for c in p.checks if c.needs_gpu)


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


@pytest.mark.parametrize("wrong", P.WRONG, ids=[w.file for w in P.WRONG])
def test_a_known_wrong_kernel_loses_exactly_its_static_points_here(graded, wrong):
    r = graded["wrong"][wrong.file]
    lost = {c.check for c in r.lost()}
    assert lost == set(wrong.lose_here), f"{wrong.file}: lost {sorted(lost)}, must lose {sorted(wrong.lose_here)}"
    if wrong.lose_here:
        key = r.result(wrong.part, wrong.key_check)
        assert wrong.reason.lower() in key.reason.lower(), key.reason
    for c in r.part(wrong.part).checks:
        if P.part(wrong.part).check(c.check).needs_gpu:
            assert c.status == grader.NEEDS_GPU


@pytest.mark.parametrize("wrong", P.WRONG, ids=[w.file for w in P.WRONG])
def test_a_known_wrong_kernel_is_its_reference_with_one_marked_bug(wrong):
    text = (WRONG_DIR / wrong.file).read_text()
    ref_name = re.search(r"kernels/(\S+\.cu)", text.splitlines()[0]).group(1)
    assert ref_name == lab07.KERNELS[P.part(wrong.part).kernel].source
    assert "BUG" in text and "The bug:" in text

    def code(t):
        out = []
        for line in _strip_markers(t).split("\n"):
            line = re.sub(r"//.*$", "", line).rstrip()
            if line.strip():
                out.append(line)
        return out

    diff = [l for l in difflib.unified_diff(code((lab07.KERNELS_DIR / ref_name).read_text()), code(text), lineterm="", n=0)
            if l[:1] in "+-" and not l.startswith(("+++", "---"))]
    changed = max(sum(l.startswith("+") for l in diff), sum(l.startswith("-") for l in diff))
    assert 1 <= changed <= wrong.max_diff_lines, f"{wrong.file}: {changed} code lines differ from {ref_name}:\n" + "\n".join(diff)


def test_selftest_expectations_hold_without_a_gpu(graded):
    assert selftest.expectations(graded["reports"], graded["env"]) == []
    rows = selftest.wrong_table(graded["reports"], graded["env"])
    assert [r["kernel"] for r in rows] == [w.file for w in P.WRONG]
    assert all(r["gpu"] == "needs a GPU" for r in rows)


def test_a_kernel_that_does_not_compile_loses_every_point_with_the_nvcc_error_line(tmp_path):
    need_sass()
    ws = tmp_path / "ws"
    W.generate(ws, solution=True, quiet=True)
    src = ws / "v4_1d_blocktiling.cu"
    src.write_text(src.read_text().replace("const float b = Bs[k][threadCol];", "const float b = Bs[k][threadCol]"))
    (ws / "v5_2d_blocktiling.cu").write_text((ws / "v5_2d_blocktiling.cu").read_text()
                                            .replace("sgemm_v5_2d_blocktiling(", "sgemm_v5_renamed("))
    saved = grader.GRADE_BUILD
    grader.GRADE_BUILD = tmp_path / "build"
    try:
        env = grader.environment(gpu=False, arch=ARCH, seed=1, work=tmp_path / "work")
        r = grader.grade_many([grader.workspace_job(ws, parts=["v4", "v5"])], env, progress=False)[0]
    finally:
        grader.GRADE_BUILD = saved
    for c in r.part("v4").checks:
        assert c.status == grader.FAIL
        assert re.match(r"does not compile: v4_1d_blocktiling\.cu\(\d+\): error", c.reason), c.reason
    assert len([l for l in r.lost_lines() if "v4" in l]) == 1        # one line for one reason
    for c in r.part("v5").checks:
        assert c.status == grader.FAIL and "sgemm_v5_2d_blocktiling is missing" in c.reason


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
    assert by["v4_loads_per_fma"] == pytest.approx(9 / 8)                  # "nine loads for eight FMAs"
    assert by["v5_loads_per_fma"] == pytest.approx(0.25)                   # "0.25 loads per FMA"
    assert by["v7_loads_per_fma"] == pytest.approx(6 / 128)                # "6 shared loads per 128 FFMA"
    assert round(by["ridge_fp16_geforce"]) == 92                           # "92 FLOP/B to be compute-bound"
    assert round(by["v5_occupancy_sm86_pct"]) == 33                        # "16 warps, 33% occupancy"
    assert by["v5_global_flop_per_byte"] == pytest.approx(32)              # "a global intensity of 32 FLOP/B"
    assert by["v7_accumulators"] == 128 and by["t2_a_fragment_reuse"] == 2  # "each A fragment is used twice"
    assert by["v7_occupancy_limit"] == "registers"


@pytest.mark.parametrize("raw,value", [(0.25, 0.25), (2, 2.0), ("9/8", 1.125), (" 33 % ", 33.0), ("2 blocks", 2.0),
                                       ("1e-1", 0.1), ("abc", None), (True, None), ("1/0", None), ("", None)])
def test_answers_may_be_numbers_fractions_or_numbers_with_a_unit(raw, value):
    got = Q.parse_number(raw)
    assert got == (pytest.approx(value) if value is not None else None)


def test_a_wrong_answer_says_why_without_giving_the_answer_away():
    q = next(q for q in Q.QUESTIONS if q.id == "v5_loads_per_fma")
    assert q.grade("1/4") == (True, "")
    ok, reason = q.grade(0.3)
    assert not ok and "0.25" not in reason and "hierarchy.traffic" in reason
    assert q.grade("TODO") == (False, "not answered") and q.grade(None) == (False, "not answered")
    words = next(q for q in Q.QUESTIONS if q.id == "outer_product_view")
    assert words.grade("The Outer-Product")[0] and not words.grade("dot product")[0]


def test_the_small_toml_parser_reads_what_tomllib_reads():
    text = answers_mod.template(solution=True) + '\n[extra]\na = "x # not a comment"  # a comment\nb = -1_000\nc = true\n'
    assert answers_mod.parse_simple_toml(text) == answers_mod.parse_toml(text)
    with pytest.raises(ValueError, match="line 2"):
        answers_mod.parse_simple_toml("[questions]\nv4 = nine eighths\n")


def test_a_broken_answers_file_loses_the_questions_with_the_line_that_broke(tmp_path, graded):
    bad = tmp_path / "answers.toml"
    bad.write_text("[questions]\nv4_loads_per_fma = 9/8\n")
    with pytest.raises(CourseError, match="not valid TOML"):
        answers_mod.load(bad)


def test_predictions_without_a_gpu_are_compared_with_the_newest_recorded_run_and_say_so(graded):
    pred = graded["ref"].extra["predictions"]
    values, size, path, gpu = answers_mod.recorded_measurements()
    assert path is not None, "results/ has no bench record"
    assert Path(path).name in pred["source"] and "no GPU here" in pred["source"] and gpu in pred["source"]
    p = Q.PREDICTIONS[0]
    assert Q.grade_prediction(p, 40, 30)[0] and not Q.grade_prediction(p, 10, 30)[0]
    assert "off by 3.0x" in Q.grade_prediction(p, 10, 30)[1]


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
    assert grader._fast(_good_run())[0] == grader.PASS
    s, why, _ = grader._fast(_good_run(timing={"size": 2048, "variant": "vec", "reference_ms": 1.0,
                                               "student_ms": 2.0, "pct_of_reference": 50.0}))
    assert s == grader.FAIL and why.startswith("50 % of the reference's speed at 2048³") and f"{P.SPEED_PCT} % needed" in why


def test_races_are_tied_to_the_kernel_whose_file_the_report_names():
    text = textwrap.dedent("""\
        ========= Error: Race reported between Write access at sgemm_v6_vec+0xa0 in v6_missing_syncthreads.cu:170
        =========     and Read access at sgemm_v6_vec+0xb0 in v6_missing_syncthreads.cu:185 [256 hazards]
        grade-sanitize: done 1-v6
        grade-sanitize: done 2-v6
        """)
    items = [{"id": "1-v6", "source": "/w/v6_missing_syncthreads.cu"}, {"id": "2-v6", "source": "/ws/v6_vectorized.cu"}]
    races = gpumod.attribute_races(text, items)
    assert list(races) == ["1-v6"]
    assert races["1-v6"][0] == ("write at v6_missing_syncthreads.cu:170 races with read at "
                                "v6_missing_syncthreads.cu:185 (sgemm_v6_vec)")
    fixture = (LAB / "tests" / "fixtures" / "sanitizer_racecheck_broken.txt")
    if fixture.exists():               # real racecheck output: the same report shape
        assert gpumod.attribute_races(fixture.read_text(), [{"id": "b", "source": "/x/broken_kernels.cu"}])["b"]


def test_a_race_report_split_by_the_programs_own_output_is_still_read():
    text = ("========= Error: Race reported between Write access at k+0xa0 in v6_missing_syncthreads.cu:170\n"
            "grade-sanitize: done 1-v6\n"
            "=========     and Read access at k+0xb0 in v6_missing_syncthreads.cu:185 [256 hazards]\n")
    races = gpumod.attribute_races(text, [{"id": "1-v6", "source": "/w/v6_missing_syncthreads.cu"}])
    assert list(races) == ["1-v6"]


def test_a_real_h200_racecheck_batch_blames_only_the_kernel_without_its_barrier():
    """Recorded on the H200: the reference kernels and the known-wrong ones in one racecheck run.
    racecheck prints the function with its signature ("void sgemm_v6_body<(bool)1>(int, ...)")."""
    text = (LAB / "tests" / "fixtures" / "grader_racecheck_batch_h200.txt").read_text()
    wrong = LAB / "grading" / "wrong"
    items = ([{"id": f"0-{p}", "source": f"/ref/{f}"} for p, f in
              [("v4", "v4_1d_blocktiling.cu"), ("v5", "v5_2d_blocktiling.cu"), ("v6", "v6_vectorized.cu"),
               ("v7", "v7_warptiling.cu"), ("t2", "t2_wmma_smem.cu"), ("t3", "t3_wmma_cp_async.cu")]]
             + [{"id": f"w-{f.stem}", "source": str(f)} for f in sorted(wrong.glob("*.cu"))])
    races = gpumod.attribute_races(text, items)
    assert list(races) == ["w-v6_missing_syncthreads"]
    assert gpumod.unread_hazards(text, races) == 0
    assert "(sgemm_v6_body<(bool)1>)" in races["w-v6_missing_syncthreads"][0]


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
    res = gpumod.racecheck(items, tmp_path)
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
    monkeypatch.setattr(gpumod, "WORKER", worker)
    items = [{"id": i} for i in ("ok-1", "crash-2", "ok-3", "die-4", "hang-5", "ok-6")]
    res = gpumod.run_parts(items, tmp_path / "out", timeout_per_item=3)
    assert all(res[i]["crash"] is None for i in ("ok-1", "ok-3", "ok-6"))
    assert res["crash-2"]["crash"]["error"] == "misaligned address"
    assert "exit status 139" in res["die-4"]["crash"]["error"] and "Segmentation fault" in res["die-4"]["crash"]["error"]
    assert "did not finish in 3 s" in res["hang-5"]["crash"]["error"]


# ---------------------------------------------------------------------------------------------
# The report and `make grade`
# ---------------------------------------------------------------------------------------------

def test_the_report_has_a_line_per_lost_reason_and_json_for_teachers(graded):
    u = graded["untouched"]
    lines = u.lost_lines()
    assert len(lines) == sum(1 for p in u.parts for i, c in enumerate(p.checks) if c.status == grader.FAIL and
                             (i == 0 or p.checks[i - 1].status != grader.FAIL or p.checks[i - 1].reason != c.reason))
    assert all(re.match(r"^ *-\d+ ", l) for l in lines)
    text = u.text()
    assert "score: 0 of" in text and "Needs a GPU (not graded here)" in text
    data = json.loads(json.dumps(u.to_json()))
    assert data["score"] == 0 and data["pending"] > 0 and data["seed"] == 12345
    assert {p["part"] for p in data["parts"]} == {p.name for p in P.CODE_PARTS}
    for p in data["parts"]:
        for c in p["checks"]:
            assert c["status"] in ("pass", "fail", "needs-gpu", "skipped")


def test_make_grade_runs_pytest_on_the_workspace_and_prints_the_score(tmp_path):
    need_sass()
    ws = tmp_path / "ws"
    W.generate(ws, solution=True, quiet=True)
    out = tmp_path / "grade.json"
    env = {**os.environ, "LAB07_GRADE_BUILD": str(tmp_path / "build")}
    proc = subprocess.run([sys.executable, str(LAB / "grading" / "grade.py"), "--workspace", str(ws), "--no-gpu",
                           "--parts", "v4,questions", "--json", str(out)], cwd=LAB, capture_output=True, text=True,
                          env=env, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert re.search(r"\d+ passed, \d+ skipped, \d+ deselected", proc.stdout), proc.stdout
    assert "Lost points: none." in proc.stdout and "score: 19 of 19 points graded here" in proc.stdout
    data = json.loads(out.read_text())
    assert [p["part"] for p in data["parts"]] == ["v4", "questions"] and data["score"] == 19


# ---------------------------------------------------------------------------------------------
# The whole GPU path on a simulated GPU (tests/simgpu: numpy behind the pycuda calls the worker makes)
# ---------------------------------------------------------------------------------------------

FAKE_SANITIZER = textwrap.dedent("""\
    import json, subprocess, sys
    from pathlib import Path
    i = sys.argv.index("sanitize-run")
    proc = subprocess.run(sys.argv[i - 2:], capture_output=True, text=True)
    print(proc.stdout + proc.stderr, end="")
    spec = json.loads(Path(sys.argv[sys.argv.index("--spec") + 1]).read_text())
    racy = [it for it in spec["items"] if "missing_syncthreads" in it["source"] and f"done {it['id']}" in proc.stdout]
    for it in racy:                    # what racecheck's analysis report looks like (tests/fixtures)
        name = Path(it["source"]).name
        print(f"========= Error: Race reported between Write access at sgemm_v6_vec+0x1a0 in {name}:180")
        print(f"=========     and Read access at sgemm_v6_vec+0x2b0 in {name}:190 [512 hazards]")
    print(f"========= RACECHECK SUMMARY: {len(racy)} hazards displayed ({len(racy)} errors, 0 warnings)")
    sys.exit(1 if racy or proc.returncode else 0)
    """)


def test_the_gpu_path_end_to_end_on_a_simulated_gpu(tmp_path, monkeypatch):
    """Workers, guard zones, poison, timing against the reference, the re-check on fresh inputs,
    crash recovery, racecheck's bookkeeping and the reasons, with every kernel simulated
    (tests/simgpu/pycuda/driver.py says how each known-wrong kernel misbehaves there, and a fake
    compute-sanitizer reports a race in the kernel that lost its barrier). This checks the grader's
    machinery, not the kernels: those are test_grading_gpu.py's."""
    need_sass()
    from common import sanitizer
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(LAB / "tests" / "simgpu"), os.environ.get("PYTHONPATH", "")]))
    monkeypatch.setenv("LAB07_GRADE_TIMING_SIZE", "192")
    fake = tmp_path / "compute-sanitizer"
    fake.write_text(f"#!{sys.executable}\n" + FAKE_SANITIZER)
    fake.chmod(0o755)
    monkeypatch.setattr(sanitizer, "find_sanitizer", lambda: str(fake))
    monkeypatch.setattr(grader, "GRADE_BUILD", tmp_path / "build")
    env = grader.Env(True, "a simulated GPU", ARCH, 99, tmp_path / "work")
    jobs = selftest.jobs(tmp_path / "ws")
    jobs[0].parts = [p.name for p in P.CODE_PARTS]
    wanted = {"v4_edge_guard_off_by_one.cu": ("correct", "wrote outside C"), "v5_reads_past_k.cu": ("correct", "NaN at"),
              "v6_unaligned_float4.cu": ("correct", "crashed on the GPU"),
              "v5_caches_result.cu": ("correct", "after timing"),
              "v6_wrong_transposed_index.cu": ("correct", "wrong element"),
              "v6_missing_syncthreads.cu": ("race-free", "racecheck: 1 race: write at v6_missing_syncthreads.cu:180")}
    jobs = jobs[:2] + [j for j in jobs[2:] if j.name.split("/")[-1] in wanted]
    ref, untouched, *wrong = grader.grade_many(jobs, env, progress=False)
    for p in ref.parts:
        for c in p.checks:
            assert c.status == grader.PASS, (p.name, c.check, c.reason)
        assert ref.result(p.name, "fast").details["pct_of_reference"] == pytest.approx(100)   # simulated time
    for p in untouched.parts:
        assert p.points == 0 and untouched.result(p.name, "correct").status == grader.FAIL
    for job, r in zip(jobs[2:], wrong):
        check, words = wanted[job.name.split("/")[-1]]
        c = r.result(r.parts[0].name, check)
        assert c.status == grader.FAIL and words in c.reason, (job.name, c.reason)
        if check == "correct":
            assert r.result(r.parts[0].name, "fast").reason == "needs correct first"
    crashed = next(r for j, r in zip(jobs[2:], wrong) if "unaligned" in j.name)
    assert "crashed under racecheck" in crashed.result("v6", "race-free").reason     # its own run, not the batch's
