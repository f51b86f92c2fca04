"""Lab 7d's grader, tested without a GPU: the regions and their stubs, the untouched workspace at zero,
the reference at full static marks, every known-wrong kernel applied to its reference and losing
exactly what it must here (and for its own reason), the spec's own consistency, the questions'
and predictions' keys against their near misses. The GPU half is `make grade-selftest` on a GPU (the
course's GPU test runs it for every graded lab); its verdicts are tested on synthetic data in the
course's tests/test_grading_measures.py."""
import math
from pathlib import Path
import pytest

from common.grading import grader, patches, selftest
from common.grading import workspace as W
from common.grading.spec import Grading
from common.testing import lab_of, needs_cuobjdump

LAB = lab_of(__file__)
G = Grading(LAB)
ARCH = "sm_90"
P = LAB.module("grading.parts")
Q = LAB.module("grading.questions")


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """One batch, as `make grade-selftest NOGPU=1` runs it: reference, untouched, every wrong kernel."""
    needs_cuobjdump()
    root = tmp_path_factory.mktemp("grading7d")
    g = Grading(LAB)
    g.build_dir = root / "build"
    env = grader.environment(g, gpu=False, arch=ARCH, seed=12345, work=root / "work")
    reports = grader.grade_many(g, selftest.jobs(g, root / "ws"), env, progress=False)
    return {"g": g, "env": env, "reports": reports, "root": root}


# ---------------------------------------------------------------------------------------------
# The spec
# ---------------------------------------------------------------------------------------------

def test_every_region_has_a_marker_and_a_stub_entry():
    found = {m.id for p in G.kernel_files().values() for m in W.regions(p.read_text(), p.name)}
    assert found == set(G.regions)


def test_the_markers_are_comments_only():
    for path in G.kernel_files().values():
        text = path.read_text()
        assert W.strip_markers(text).count("\n") == text.count("\n") - 2 * len(W.regions(text))


def test_every_part_has_two_known_wrong_kernels_that_lose_for_different_checks_or_reasons():
    for part in G.code_parts:
        ws = [w for w in G.wrong if w.part == part.name]
        assert len(ws) >= 2, part.name
        assert len({(w.key_check, w.reason) for w in ws}) == len(ws), part.name


def test_the_measured_checks_sit_where_their_mistakes_show():
    """bitwise needs several splits (with 2 the order cannot matter) and a layout no correctness shape
    uses (the reference's run there starts from a clean workspace); bandwidth runs where the GEMV is a
    copy (M = 1) and big enough to leave L2."""
    lab_launch = LAB.module("launch")
    k = LAB.kernel("skinny_fp16")
    bm, bn = k.tile

    def layout(M, N, K):
        return (math.ceil(M / bm) * math.ceil(N / bn), lab_launch.splits_of(k, M, N, K, 132))
    tiles, splits = layout(*P.BITWISE_SHAPE)
    assert splits >= 3
    assert (tiles, splits) not in {layout(*s) for s in P.SPLIT_SHAPES}
    assert max(layout(*s)[1] for s in P.SPLIT_SHAPES) >= 8 and any(s[1] % 8 for s in P.SPLIT_SHAPES)
    M, N, K = P.BANDWIDTH_SHAPE
    assert M == 1 and N * K * 4 > 4 * 50 * 2 ** 20          # far past the H200's 50 MB of L2


def test_gemv_shapes_cover_the_tail_odd_n_and_every_row_class():
    k = LAB.kernel("gemv_fp32")
    assert any(K % 8 for _, _, K in P.GEMV_SHAPES) and any(N % 4 for _, N, _ in P.GEMV_SHAPES)
    assert {k.variant_for(*s).split("_")[0] for s in P.GEMV_SHAPES} == {"m1", "m4", "m8", "m16"}


# ---------------------------------------------------------------------------------------------
# The batch without a GPU
# ---------------------------------------------------------------------------------------------

def test_the_untouched_workspace_compiles_and_scores_zero(graded):
    untouched = graded["reports"][1]
    for p in untouched.parts:
        assert not any("does not compile" in (c.reason or "") for c in p.checks), p.name
        assert p.points == 0, f"{p.name}: {[c.check for c in p.checks if c.status == grader.PASS]}"


def test_the_untouched_workspace_holds_no_solution_text(graded):
    ws = graded["root"] / "ws" / "untouched"
    gemv, skinny = (ws / "gemv.cu").read_text(), (ws / "skinny_fp16.cu").read_text()
    assert "fmaf(a[m][u], b[u][i]" not in gemv and "TODO(gemv-step)" in gemv
    assert "s_last = atomicAdd(counter" not in skinny and "TODO(skinny-ordered-splits)" in skinny
    rules_text = (ws / "dispatch_rules.toml").read_text()
    assert "[[rule]]" not in rules_text.split("TODO(dispatch-rules)")[1] and "ceil(sms / tiles)" not in rules_text


def test_the_reference_gets_full_static_marks_on_its_code(graded):
    ref = graded["reports"][0]
    for part in G.code_parts:
        for c in ref.part(part.name).checks:
            needs_gpu = part.check(c.check).needs_gpu
            assert c.status == (grader.NEEDS_GPU if needs_gpu else grader.PASS), f"{part.name} {c.check}: {c.reason}"


def test_the_selftest_expectations_hold_without_a_gpu(graded):
    assert selftest.expectations(graded["g"], graded["reports"], graded["env"]) == []


def test_each_static_loss_names_its_symptom_not_the_model(graded):
    reports = dict(zip([w.name for w in G.wrong], graded["reports"][2:]))
    r = reports["gemv_one_row_at_a_time"].result("gemv", "in-flight")
    assert r.status == grader.FAIL and "at most 20 bytes" in r.reason
    r = reports["skinny_atomicadd_into_c"].result("splits", "ordered")
    assert r.status == grader.FAIL and "F32" in r.reason and "run to run" in r.reason
    # not the answer to atomic_c_before_launch (C must hold zero before the launch), nor its reason
    q = next(q for q in G.questions if q.id == "atomic_c_before_launch")
    assert "zero" not in r.reason.lower() and not any(w in r.reason for words in q.why for w in words), r.reason
    for rep in graded["reports"][2:]:
        for c in rep.lost():
            assert "reference" not in c.reason.lower() or "needs" in c.reason, c.reason


def test_without_a_gpu_every_student_is_graded_out_of_the_same_points(graded, tmp_path):
    """A walkthrough found the untouched workspace at "dispatch 0 of 4" (its empty rules file failed
    `speed` too) and "0 of 1 (3 need a GPU)" once it held one sane rule; a class's denominators were 12
    or 15. Without a GPU no GPU check is scored, whatever the file: a rules file that cannot be read, a
    kernel that does not compile, a missing answers.toml."""
    import shutil
    g, env = graded["g"], graded["env"]
    ws = {}
    for name in ("untouched", "bad_rules", "no_compile", "no_answers", "one_rule"):
        ws[name] = tmp_path / name
        shutil.copytree(graded["root"] / "ws" / "untouched", ws[name])
    (ws["bad_rules"] / "dispatch_rules.toml").write_text('[[rules]]\nwhen = "true"\nuse = "tiles"\n')
    (ws["no_compile"] / "gemv.cu").write_text((ws["no_compile"] / "gemv.cu").read_text() + "\nthis is not C++;\n")
    (ws["no_answers"] / "answers.toml").unlink()
    (ws["one_rule"] / "dispatch_rules.toml").write_text('[[rule]]\nwhen = "true"\nuse = "gemv"\n')
    jobs = [grader.workspace_job(g, graded["root"] / "ws" / "reference", name="reference")] + \
        [grader.workspace_job(g, w, name=n) for n, w in ws.items()]
    reports = grader.grade_many(g, jobs, env, progress=False)
    want = {p.name: (p.graded_max, p.pending) for p in reports[0].parts}
    assert want["dispatch"] == (1, 3) and want["gemv"] == (1, 5)
    for r in reports:
        assert {p.name: (p.graded_max, p.pending) for p in r.parts} == want, (r.name, r.text())
        assert r.graded_max == reports[0].graded_max
        for p in (p for p in r.parts if p.name not in ("questions", "predictions")):
            for c in p.checks:
                if g.part(p.name).check(c.check).needs_gpu:
                    assert c.status == grader.NEEDS_GPU, (r.name, p.name, c.check, c.status)
    bad = next(r for r in reports if r.name == "bad_rules")
    sane = bad.result("dispatch", "sane")
    assert sane.status == grader.FAIL and "named [[rule]]" in sane.reason and "what to do:" in sane.reason
    assert "what to do:" in bad.text() and any("what to do:" in l for l in bad.to_json()["lost"])
    assert "what to do:" in next(c for p in bad.to_json()["parts"] if p["part"] == "dispatch"
                                 for c in p["checks"] if c["check"] == "sane")["reason"]
    gone = next(r for r in reports if r.name == "no_answers")
    assert all("what to do:" in c.reason for c in gone.part("questions").checks), gone.lost_lines()
    assert "score: 0 of 12 points graded here (13 more need a GPU" in next(
        r for r in reports if r.name == "untouched").text()


# ---------------------------------------------------------------------------------------------
# The dispatcher's rules
# ---------------------------------------------------------------------------------------------

def _rules_of(path):
    from common.grading import rules
    return rules.load(path, P.RULES_FAMILIES, P.RULES_WITH_SPLITS)


@pytest.mark.parametrize("seed", [0, 1, 2, 3, 4, 5, 6, 7])
def test_the_reference_rules_are_sane_and_each_wrong_one_is_not_whatever_the_seed(seed, tmp_path):
    """The self-test draws a new seed every run: the verdicts must not depend on it."""
    from common.grading import rules
    spec = rules._spec(G)
    shapes = rules.hidden_shapes(P.RULES_HIDDEN, seed, P.RULES_PER_CLASS) + \
        rules.hidden_shapes(P.RULES_HIDDEN, seed + 1, P.RULES_SANE_PER_CLASS)
    ref = _rules_of(LAB.dir / "dispatch_rules.toml")
    assert rules.sane_verdict(ref, shapes, spec, P.RULES_SMS)[0] == grader.PASS
    for w in (w for w in G.wrong if w.part == "dispatch"):
        bad = patches.apply_file(G.wrong_file(w), LAB.dir / "dispatch_rules.toml", tmp_path / f"{w.name}.toml")
        status, reason, _ = rules.sane_verdict(_rules_of(bad), shapes, spec, P.RULES_SMS)
        assert status == grader.FAIL and w.reason in reason, (w.name, reason)


def test_every_family_is_a_row_of_the_lab_and_split_k_takes_its_splits():
    from common.grading import rules
    assert LAB.kernel("gemv_fp32") == P.RULES_FAMILIES["gemv"](0)
    assert P.RULES_FAMILIES["splitk"](7).launch_hook.splits == 7
    assert P.RULES_TILE == LAB.kernel("splitk_fp32").tile and P.RULES_FAMILIES["tiles"](0).name == "v8"
    s = rules.facts(128, 128, 65536, 132, P.RULES_TILE)
    assert rules.plan(_rules_of(LAB.dir / "dispatch_rules.toml"), s, P.RULES_SPLIT_MAX) == rules.Plan(2, "splitk", 132)


# ---------------------------------------------------------------------------------------------
# Questions and predictions
# ---------------------------------------------------------------------------------------------

def test_every_question_has_a_computed_answer_and_a_model_reason_that_pass():
    for q in G.questions:
        assert q.grade(q.answer())[0], q.id
        assert q.grade_reason(q.why_model)[0], q.id


def test_no_question_gives_away_its_reasons_key_ideas():
    for q in G.questions:
        assert q.why, f"{q.id} asks for no reason"
        assert q.pasted_question_passes() == [], q.id


def test_a_bare_answer_or_a_keyword_list_is_not_a_reason():
    q = next(q for q in G.questions if q.id == "own_partial_first_repeatable")
    assert not q.grade_reason("order changes")[0]
    assert not q.grade_reason("because the floating point sum is not the same every time you run it")[0]


def _pred(pid):
    return next(p for p in G.predictions if p.id == pid)


def test_the_predictions_are_computed_from_the_lab_and_their_near_misses_fail():
    """The 15 % tolerance (grading/questions.py says why) separates each derivation from its near misses."""
    tol = lambda p, v: abs(v - p.answer()) <= p.rel_tol * abs(p.answer())
    floor = _pred("gemv_fp16_floor_us")
    assert floor.computed and 10 < floor.answer() < 30
    assert not tol(floor, 2 * floor.answer()) and not tol(floor, floor.answer() / 2)
    part = _pred("skinny_partials_kib")
    bm, bn = LAB.kernel("skinny_fp16").tile
    tiles = math.ceil(16 / bm) * math.ceil(2048 / bn)
    per_split = tiles * bm * bn * 4 / 1024
    splits = round(part.answer() / per_split)
    assert splits * per_split == part.answer() and splits >= 2
    assert not tol(part, (splits + 1) * per_split) and not tol(part, (splits - 1) * per_split)
    assert not tol(part, part.answer() / 2)
    fpb = _pred("prefill_flop_per_byte")
    M, N, K = 256, 1024, 1024
    assert fpb.answer() == pytest.approx(2 * M * N * K / (2 * (M * K + K * N) + 4 * M * N))
    for miss in (M, 2 * M * N * K / (2 * (M * K + K * N)), 2 * M * N * K / (2 * K * N + 4 * M * N),
                 2 * M * N * K / (4 * (M * K + K * N) + 4 * M * N), fpb.answer() / 2):
        assert not tol(fpb, miss), miss      # "about M"; C, or A, left out; FP32 weights; 1 FLOP a multiply-add
    for p in G.predictions:
        assert p.rel_tol == pytest.approx(0.15)


def test_the_predictions_answers_are_not_in_what_a_student_reads(graded):
    ws = graded["root"] / "ws" / "untouched"
    readme = (LAB.dir / "README.md").read_text() + (LAB.dir / "grading" / "README.md").read_text()
    texts = readme + "".join(f.read_text() for f in ws.iterdir() if f.is_file())
    for p in G.predictions:
        v = p.answer()
        for shown in {f"{v:.0f}", f"{v:.1f}", f"{v:.2f}", f"{v:g}"} - {str(n) for n in range(10)}:
            assert f" {shown} " not in texts and f" {shown}\n" not in texts, (p.id, shown)


# ---------------------------------------------------------------------------------------------
# The GPU path on a simulated GPU (common/grading/simgpu: numpy behind the pycuda calls the worker makes)
# ---------------------------------------------------------------------------------------------

def test_the_gpu_path_of_the_kernel_parts_on_a_simulated_gpu(graded, tmp_path, monkeypatch):
    """Correctness, the re-check, the bandwidth against a copy and the repeated runs, run by the
    grader's workers with every kernel simulated: each known-wrong kernel's `BUG [effect]` makes it
    misbehave as the real one does (simgpu/pycuda/driver.py), and must lose its GPU checks for its own
    reason. This checks the grader's machinery on this lab's parts, not the kernels (a GPU does that:
    `make grade-selftest`). The dispatch part's GPU check needs cuBLAS: its verdicts are tested on
    synthetic timings (tests/test_grading_rules.py)."""
    from common.grading import simgpu
    needs_cuobjdump()
    simgpu.use(monkeypatch, tmp_path / "bin")
    monkeypatch.setenv("GRADE_MEASURE_DIV", "4")       # 1 x 2048 x 2048 and 16 x 256 x 4096
    g = Grading(LAB)
    g.build_dir = graded["g"].build_dir                # the kernels graded[] compiled
    env = grader.Env(True, "a simulated GPU", ARCH, 99, tmp_path / "work")
    jobs = selftest.jobs(g, graded["root"] / "ws")
    kernel_parts = [p.name for p in g.code_parts if not p.rules]
    jobs[0].parts = kernel_parts
    jobs[1].parts = kernel_parts
    jobs = jobs[:2] + [j for j, w in zip(jobs[2:], G.wrong) if w.part in kernel_parts]
    ref, untouched, *wrong = grader.grade_many(g, jobs, env, progress=False)
    for name in kernel_parts:
        for c in ref.part(name).checks:
            assert c.status == grader.PASS, (name, c.check, c.reason)
        assert untouched.part(name).points == 0
    assert ref.result("gemv", "bandwidth").details["pct_of_copy"] > 100
    assert ref.result("splits", "bitwise").details["runs"] == 20
    want = {"gemv_one_row_at_a_time": ("bandwidth", "of the copy bandwidth at 1x2048x2048"),
            "gemv_tail_reads_past_k": ("correct", "NaN at"),
            "skinny_atomicadd_into_c": ("correct", "NaN"),        # NaN + x is the poison: "never wrote"
            "skinny_last_block_own_first": ("bitwise", "the order of the additions changes from run to run"),
            "skinny_counter_left_set": ("correct", "never wrote")}    # the scalar entry after the vec one
    for job, r in zip(jobs[2:], wrong):
        check, words = want[Path(job.name).stem]
        part = r.parts[0].name
        c = r.result(part, check)
        assert c.status == grader.FAIL and words in c.reason, (job.name, c.reason, r.lost_lines())
        w = next(w for w in G.wrong if w.name == Path(job.name).stem)
        assert {x.check for x in r.lost()} >= set(w.lose_here) | set(w.lose_on_gpu), (job.name, r.lost_lines())


def test_ordered_reduce_needs_the_partials_read_and_added_after_the_counter():
    """A red-team review earned `ordered` with `if (tid == 0) atomicAdd(counter, 1u); return;` in place
    of the reduction: an integer atomic and no float atomic, but nothing after it. The check now reads
    what follows the counter in SASS: the last block's loads and adds of the partial tiles."""
    from collections import Counter
    from common.grading import static
    ref = ["/*0100*/ HMMA.16816.F32 R4, R8, R12, R4 ;", "/*0200*/ @P2 ATOMG.E.ADD.STRONG.GPU PT, R14, desc[UR8][R6.64], R11 ;",
           "/*0210*/ LDG.E.128.STRONG.GPU R20, desc[UR8][R2.64] ;", "/*0220*/ FADD R4, R4, R20 ;",
           "/*0230*/ STG.E.128 desc[UR8][R8.64], R4 ;", "/*0240*/ EXIT ;"]
    stub = ref[:2] + ["/*0210*/ EXIT ;"]
    float_first = ["/*0100*/ RED.E.ADD.F32.FTZ.RN.STRONG.GPU desc[UR8][R2.64], R5 ;"] + ref[1:]
    assert static.after_counter(ref) == Counter({"LDG": 1, "FADD": 1, "STG": 1, "EXIT": 1})
    assert static.after_counter(stub) == Counter({"EXIT": 1})
    assert static.after_counter(float_first)["LDG"] == 1           # the first INTEGER atomic counts
    assert static.after_counter(ref[:1]) == Counter()
    def facts(listing):
        return {"families": {}, "fp16": Counter(), "after_counter": static.after_counter(listing),
                "opcodes": Counter(l.split()[1] if not l.split()[1].startswith("@") else l.split()[2] for l in listing)}
    assert static._problems("ordered-reduce", "", None, facts(ref)) == []
    problems = static._problems("ordered-reduce", "", None, facts(stub))
    assert problems and "never sums the splits" in problems[0]
