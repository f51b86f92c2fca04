"""The graded exercises of labs 7 and 7a are passed by understanding, not by copying (issue 40):
no answer in the workspace, hints that say what to look at, a wrong result told by its symptom,
reasons graded beside the answers, predictions derived and never shown. No GPU, no nvcc: the
grader's pure-Python parts on the labs' own data and on synthetic input."""
import json
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from common.errors import CourseError
from common.grading import answers as answers_mod
from common.grading import grader, static
from common.grading import questions as Qm
from common.grading import workspace as W
from common.grading.spec import Grading
from common.lab import load

ROOT = Path(__file__).resolve().parents[1]
LABS = {"lab07": ROOT / "labs" / "lab07-matmul-registers", "lab07a": ROOT / "labs" / "lab07a-tf32-tensor-cores"}


@pytest.fixture(scope="module", params=sorted(LABS))
def g(request):
    return Grading(load(LABS[request.param]))


# ---------------------------------------------------------------------------------------------
# The workspace holds the previous rung and the spec, never an answer
# ---------------------------------------------------------------------------------------------

def test_no_file_of_the_workspace_holds_the_text_of_a_graded_region(g, tmp_path):
    files = W.generate(g, tmp_path / "ws", quiet=True)
    assert W.leaks(g, files) == []
    answers = W.answer_lines(g)
    assert all(answers[r] for r in g.regions), "every region has lines only it holds (else the check is empty)"
    have = {W._norm(l) for f in files for l in f.read_text().split("\n")}
    for rid, lines in answers.items():
        for line in lines:
            assert line not in have, f"the answer line {line!r} of region {rid} is in the workspace"


def test_the_workspace_gives_the_ungraded_rung_before_the_first_graded_one(g, tmp_path):
    W.generate(g, tmp_path / "ws", quiet=True)
    given = sorted(p.name for p in (tmp_path / "ws" / "given").iterdir())
    assert given == sorted(Path(g.lab.kernel(k).path).name for k in g.given) and given
    assert not set(g.given) & {p.kernel for p in g.code_parts}


def test_force_keeps_every_replaced_workspace_and_says_where(g, tmp_path, capsys):
    """make workspace FORCE=1 twice: the first one's work is in workspace.old, the second's in
    workspace.old-2; nothing a student wrote is deleted, and the output says where it went."""
    ws = tmp_path / "workspace"
    W.generate(g, ws, quiet=True)
    (ws / "answers.toml").write_text("# first attempt\n")
    with pytest.raises(CourseError, match="left alone"):
        W.generate(g, ws, quiet=True)
    W.generate(g, ws, force=True)
    assert "kept in " + str((tmp_path / "workspace.old").resolve()) in capsys.readouterr().out
    (ws / "answers.toml").write_text("# second attempt\n")
    W.generate(g, ws, force=True)
    assert "kept in " + str((tmp_path / "workspace.old-2").resolve()) in capsys.readouterr().out
    assert (tmp_path / "workspace.old" / "answers.toml").read_text() == "# first attempt\n"
    assert (tmp_path / "workspace.old-2" / "answers.toml").read_text() == "# second attempt\n"
    assert (ws / "answers.toml").read_text() != "# second attempt\n"


def test_the_workspace_listing_names_each_file_where_it_is(g, tmp_path, capsys):
    W.generate(g, tmp_path / "ws")
    listed = [l.strip() for l in capsys.readouterr().out.splitlines() if l.startswith("  ")]
    for name in listed:
        assert (tmp_path / "ws" / name).is_file(), f"{name} is listed but not there"
    assert any(n.startswith("given/") for n in listed)


def test_a_graded_kernel_as_a_given_rung_is_refused(g):
    g2 = Grading(g.lab)
    g2.given = [g2.code_parts[0].kernel]
    with pytest.raises(CourseError, match="graded part's kernel"):
        g2._validate()


def test_the_leak_check_finds_a_reference_kernel_and_generate_refuses_it(g, tmp_path):
    ref = next(iter(g.kernel_files().values()))
    found = W.leaks(g, [ref])
    assert found and {rid for _, rid, _ in found} <= set(g.regions)
    g2 = Grading(g.lab)
    g2.given = [g2.code_parts[0].kernel]          # a rung with its answer, copied whole
    with pytest.raises(CourseError, match="would hold graded answers"):
        W.generate(g2, tmp_path / "ws", quiet=True)
    assert not (tmp_path / "ws").exists(), "a refused workspace is not left behind"


def test_a_later_rung_marks_the_earlier_rungs_code_it_repeats_as_its_own_region():
    g7a = Grading(load(LABS["lab07a"]))
    assert len(g7a.code_parts) >= 4
    for part in ("k3", "k4", "k6"):
        assert f"{part}-swizzle" in g7a.part(part).regions, f"{part} repeats k2's swizzle"
    g7 = Grading(load(LABS["lab07"]))
    assert {"v7-float4-load", "v7-transposed-store"} <= set(g7.part("v7").regions)
    assert "t3-fragment-loop" in g7.part("t3").regions


def test_the_workspace_files_carry_no_commit_hash(g, tmp_path):
    for f in W.generate(g, tmp_path / "ws", quiet=True):
        assert not re.search(r"\bcommit [0-9a-f]{7,}", f.read_text()), f.name


# ---------------------------------------------------------------------------------------------
# Hints teach; every code part has two known-wrong kernels
# ---------------------------------------------------------------------------------------------

def test_a_long_list_of_names_puts_its_reason_on_the_next_line_and_pads_no_other():
    """Ten unanswered questions share one lost line: their names must not widen the column that
    every other line's reason is padded to (lab 7's reasons started 190 spaces in)."""
    F = grader.FAIL
    many = [grader.CheckResult("questions", f"q{i}_occupancy_sm86_pct", "", 1, F, "not answered") for i in range(10)]
    parts = [grader.PartResult("v4", "", [grader.CheckResult("v4", "correct", "", 3, F, "wrong elements"),
                                          grader.CheckResult("v4", "ok", "", 1, grader.PASS)]),
             grader.PartResult("questions", "", many + [grader.CheckResult("questions", "x", "", 1, grader.PASS)])]
    lines = grader.Report("t", parts, {}).lost_lines()
    assert len(lines) == 2
    assert re.fullmatch(r" *-3  v4\s+correct  wrong elements", lines[0]), lines[0]
    first, second = lines[1].split("\n")
    assert first.startswith("-10  questions  q0_occupancy_sm86_pct, q1_") and second.strip() == "not answered"
    assert all(len(l) < 80 for l in lines[0].split("\n") + [second])


@pytest.mark.parametrize("lab", ["lab07-matmul-registers", "lab07a-tf32-tensor-cores", "lab07b-cute-sgemm",
                                 "lab07c-hopper-wgmma", "lab07d-decode-shapes"])
def test_no_workspace_hint_would_pass_as_a_questions_reason(lab):
    """A region's hint sits in the workspace: one that names every key idea of a question's reason
    (two ideas or more) hands the student that reason (lab 7c's h2 hint said TMA writes whole boxes,
    zeros past the edge: tx_edge_tile's reason, word for word)."""
    g = Grading(load(lab))
    for q in g.questions:
        if len(q.why) < 2:
            continue                 # a single key idea (bytes, memory) is a word, not a reason
        for rid, r in g.regions.items():
            assert q.ideas_named(r.hint or "") < len(q.why), f"{rid}'s hint names {q.id}'s reason"


def test_hints_say_what_to_look_at_never_where_to_copy_from(g):
    for p in g.parts:
        assert not re.search(r"\b(chapter|section \d|worklog)\b", p.title, re.I), p.title
    for q in g.questions:
        assert not re.search(r"\b(chapter|section \d|worklog)\b", q.text, re.I), q.text
    for r in g.regions.values():
        assert not re.search(r"\b(chapter|section \d|worklog)\b", r.hint, re.I), f"{r.id}: {r.hint}"
    for q in g.questions:
        assert q.hint, f"{q.id} has no hint"
        assert q.model not in q.hint and not re.search(r"\w+\.\w+\(", q.hint), f"{q.id}: the hint names a model call"
    for p in g.predictions:
        assert p.hint and not re.search(r"\w+\.\w+\(", p.hint), p.id


def test_every_code_part_has_two_known_wrong_kernels_with_bugs_of_their_own(g):
    for part in g.code_parts:
        wrongs = [w for w in g.wrong if w.part == part.name]
        assert len(wrongs) >= 2, f"{part.name}: {len(wrongs)} known-wrong kernel(s)"
        assert len({w.bug for w in wrongs}) == len(wrongs)


# ---------------------------------------------------------------------------------------------
# Questions: a reason beside the answer, graded by what it names
# ---------------------------------------------------------------------------------------------

def test_each_lab_asks_for_reasons_and_the_models_reason_passes(g):
    asked = [q for q in g.questions if q.why]
    assert len(asked) >= 4
    for q in asked:
        assert q.grade_reason(q.why_model) == (True, ""), q.id


def test_pasting_the_question_or_its_hint_never_passes_the_reason(g):
    for q in (q for q in g.questions if q.why):
        assert q.pasted_question_passes() == [], q.id
        for pasted in (q.text, q.hint, f"{q.text} {q.hint}", f"{q.text} {q.text}"):
            assert not q.grade_reason(pasted)[0], (q.id, pasted)


def test_a_question_whose_text_names_its_key_idea_is_refused(g):
    q = next(q for q in g.questions if q.why)
    idea = q.why[0][0]
    bad = Qm.Question(q.id, f"{q.text} (hint: {idea})", q.expected, q.model, why=q.why, why_model=q.why_model)
    g2 = Grading(g.lab)
    g2.questions = [bad]
    with pytest.raises(CourseError, match="pasting the question would pass"):
        g2._validate()


Q = Qm.Question("q", "How many loads per FMA does this loop issue?", lambda: 0.25, "model.call(x)", rel_tol=0.01,
                hint="count the loads of one step", why=((16, "sixteen"), (64, "sixty four")),
                why_model="Per step 16 values are loaded and multiplied in 64 FMAs.")


@pytest.mark.parametrize("reason,ok,says", [
    ("Per step 16 values are loaded and multiplied in 64 FMAs.", True, ""),
    ("sixteen loads feed sixty-four FMAs each step of the loop", True, ""),
    ("Per step 16 values are loaded, reused across the loop.", False, "does not say what decides"),
    ("16 64", False, "word(s)"),
    ("sixteen sixty four sixteen sixty four sixteen", False, "different word(s)"),
    ("TODO", False, "no reason given"),
    (None, False, "no reason given"),
    ("How many loads per FMA does this loop issue?", False, "does not say what decides"),
])
def test_a_reason_must_name_every_key_idea_in_a_sentence(reason, ok, says):
    got, why = Q.grade_reason(reason)
    assert got == ok and says in why
    assert "16" not in why and "64" not in why and "sixteen" not in why, "the key ideas are not told"
    assert " of the 2" not in why, "nor how many of them the reason names (a count guides a search)"


# the nonsense a red-team review put in every reason of labs 7 and 7a: it named every key idea of all of them
STUFFED = ("because of 4 5 6 8 9 10 16 32 64 128 256 26624 65536, half, sign, exponent, infinity, 4 bytes, "
           "b fragment, in flight, tile t")


def test_a_list_of_the_labs_terms_is_not_a_reason_and_every_reference_reason_still_passes(g):
    """A reason naming 3 or more key ideas of the lab's other questions is refused as a list of terms;
    every reference reason (why_model) names at most 2 and passes, beside the whole lab's questions."""
    asked = [q for q in g.questions if q.why]
    for q in asked:
        assert q.grade_reason(q.why_model, g.questions) == (True, ""), q.id
        assert len(q.foreign_ideas_named(q.why_model, g.questions)) < Qm.FOREIGN_IDEAS, q.id
        got, why = q.grade_reason(STUFFED, g.questions)
        assert not got and "lists terms" in why, (q.id, why)


def test_the_point_needs_the_answer_and_the_reason(tmp_path):
    g = Grading(load(LABS["lab07"]))
    q = next(q for q in g.questions if q.why)
    part = g.part("questions")
    cases = {"both": {q.id: q.answer(), q.why_key: q.why_model}, "answer only": {q.id: q.answer()},
             "reason only": {q.id: "TODO", q.why_key: q.why_model}}
    for name, given in cases.items():
        pr, table = grader._questions(g, part, {"questions": given}, "")
        c = next(c for c in pr.checks if c.check == q.id)
        assert (c.status == grader.PASS) == (name == "both"), (name, c.reason)
    row = next(r for r in table if r["id"] == q.id)
    assert "expected" not in row and "model" not in row, "the report (written to the student's folder) holds no key"


@pytest.mark.parametrize("text,alt,found", [
    ("the LDS.128 loads", "LDS.128", True), ("Registers limit it", "register", True), ("a 4-way conflict", 4, True),
    ("1/8 of it", 0.125, True), ("x4 and k2", 4, False), ("sixty four FMAs", "sixty four", True),
    ("outstanding groups", "standing", False), ("2^-11", -11, True)])
def test_mentions_matches_whole_words_and_numbers_as_written(text, alt, found):
    assert Qm.mentions(text, alt) == found


def test_a_wrong_answer_gets_the_hint_and_never_the_value_or_the_model():
    ok, why = Q.grade(0.3)
    assert not ok and Q.hint in why and "0.25" not in why and "model.call" not in why


# ---------------------------------------------------------------------------------------------
# Predictions: derived, within 15 %, never printed
# ---------------------------------------------------------------------------------------------

def test_predictions_are_derived_with_a_tolerance_a_guess_misses(g):
    assert len(g.predictions) >= 3
    for p in g.predictions:
        assert p.computed and p.rel_tol <= 0.15
        want = p.answer()
        assert Qm.grade_prediction(p, want, None)[0] and Qm.grade_prediction(p, want * 1.1, None)[0]
        for off in (0.75, 1.25, 2.0, 0.5):
            ok, why = Qm.grade_prediction(p, want * off, None)
            assert not ok and f"{want:g}" not in why and p.hint in why


def _forms(v):
    """How a text could write the number v: 81920, 8.19e+04, 42.7, 42.67, 3.22."""
    out = {f"{v:.3g}", f"{v:.4g}", f"{v:g}"}
    if float(v).is_integer():
        out.add(str(int(v)))
    if float(v).is_integer() and v % 1024 == 0:              # bytes: 61440 is also "60 KB"
        out |= {f"{int(v) // 1024} KB", f"{int(v) // 1024} KiB", f"{int(v) // 1024}KB"}
    return {s for s in out if len(s.replace(".", "").replace("e+0", "").lstrip("0")) >= 3}


def test_no_prediction_answer_is_printed_in_the_labs_texts_kernels_or_notebooks(g):
    texts = [g.lab.dir / "README.md", g.lab.dir / "NOTES.md", g.dir / "README.md", *g.lab.kernels_dir.glob("*.cu*"),
             *(ROOT / "notebooks").glob("*.ipynb")]
    for p in g.predictions:
        for s in _forms(p.answer()):
            pat = re.compile(rf"(?<![\w.]){re.escape(s)}(?![\w]|\.\d)")
            hits = [f.name for f in texts if f.exists() and pat.search(f.read_text())]
            assert hits == [], f"{p.id}: {s} is written in {hits}"


def test_a_measured_prediction_that_misses_is_not_told_the_measurement():
    p = Qm.Prediction("v4", "v4: % of cuBLAS", "fp32")
    ok, why = Qm.grade_prediction(p, 10, 31.7)
    assert not ok and "31.7" not in why and "3.2x" not in why and "2x" in why
    assert Qm.grade_prediction(p, 20, 31.7)[0]


def _values(g):
    """The distinctive answer values of a lab (those a text could not hold by chance)."""
    out = set()
    for v in [q.answer() for q in g.questions] + [p.answer() for p in g.predictions]:
        if isinstance(v, str):
            continue
        for s in {f"{v:g}", f"{v:.3g}", f"{v:.4g}", str(v)}:
            if len(s.replace(".", "").lstrip("0")) >= 3:
                out.add(s)
    return out


def test_make_grade_without_a_gpu_prints_no_answer_before_or_after_submitting(g, tmp_path):
    """The untouched workspace and one with every answer wrong: `make grade`'s output and its JSON
    report hold none of the expected values (the questions' and the predictions')."""
    ws = tmp_path / "ws"
    W.generate(g, ws, quiet=True)
    wrong = answers_mod.template(g, solution=True)
    wrong = re.sub(r"(?m)^(\w+) = (-?[\d.e+-]+)$", lambda m: f"{m[1]} = {float(m[2]) * 3 + 1:g}", wrong)
    wrong = re.sub(r'(?m)^(\w+_why) = ".*"$', r'\1 = "it is so because the loop says so, clearly"', wrong)
    wrong = re.sub(r'(?m)^(\w+(?<!_why)(?<!^name)) = "[^"]+"$', r'\1 = "nothing"', wrong)
    for name, text in (("untouched", None), ("all wrong", wrong)):
        if text:
            (ws / "answers.toml").write_text(text)
        out = tmp_path / f"{name}.json"
        proc = subprocess.run([sys.executable, "-m", "common", "grade", "--lab", str(g.lab.dir), "--workspace", str(ws),
                               "--no-gpu", "--parts", "questions,predictions", "--json", str(out)],
                              cwd=ROOT, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        seen = (proc.stdout + out.read_text()).replace(str(tmp_path), "<tmp>")   # pytest-123 is no answer
        # a value not inside a word: a commit's hash (1734c9f0ce37e124d...) holds any digits
        leaked = [v for v in _values(g) if re.search(rf"(?<![\w.]){re.escape(v)}(?!\d)", seen)
                  and not any(v in q.text for q in g.questions) and not any(v in p.text for p in g.predictions)]
        assert leaked == [], f"{name}: `make grade` shows answer values {leaked}"
        assert "score: 0 of" in proc.stdout, proc.stdout[-400:]


def test_the_reference_answers_score_and_only_there_are_the_values(g, tmp_path):
    text = answers_mod.template(g, solution=True)
    data = answers_mod.parse_toml(text)
    for p in g.predictions:
        assert Qm.grade_prediction(p, data["predictions"][p.id], None)[0]
    for q in g.questions:
        assert q.grade(data["questions"][q.id])[0] and q.grade_reason(data["questions"].get(q.why_key))[0]
    student = answers_mod.template(g)
    assert not [v for v in _values(g) if re.search(rf"(?<![\d.]){re.escape(v)}(?![\d])", student)
                and not any(v in q.text for q in g.questions) and not any(v in p.text for p in g.predictions)]


# ---------------------------------------------------------------------------------------------
# A wrong C is told by its symptom
# ---------------------------------------------------------------------------------------------

def _mask(shape, fill):
    m = np.zeros(shape, bool)
    fill(m)
    return m


@pytest.mark.parametrize("shape,fill,tile,summary", [
    ((256, 256), lambda m: m.__setitem__((slice(None), slice(0, None, 2)), True), (128, 128),
     "every row, even columns, 4 of 4 block tiles"),
    ((257, 129), lambda m: m.__setitem__(np.arange(257) % 8 != 0, True), (128, 128),
     "rows 1-7 of every 8, every column, 4 of 6 block tiles"),
    ((130, 260), lambda m: m.__setitem__(slice(128, None), True), (128, 128),
     "rows 128-129, every column, 3 of 6 block tiles, only edge ones (the last row or column of tiles)"),
    ((64, 64), lambda m: m.__setitem__((3, 5), True), None, "row 3, column 5"),
    ((64, 64), lambda m: None, (32, 32), "no wrong element"),
])
def test_a_wrong_c_is_described_by_the_rows_columns_and_tiles_it_hits(shape, fill, tile, summary):
    assert grader.mismatch_pattern(_mask(shape, fill), tile)["summary"] == summary


def test_the_reason_of_a_wrong_element_carries_its_pattern_and_no_fix():
    case = {"ok": False, "label": "k6/vec 256x256x64", "when": "", "worst_index": [0, 1], "got": 2.0, "want": 1.0,
            "tol": 1e-3, "bad": 32768, "unwritten": 0, "computed_nan": 0, "outside_before": 0, "outside_after": 0}
    plain = grader.case_reason(case)
    assert plain.startswith("wrong element at (0, 1) for shape 256x256x64 (k6/vec)")
    case["pattern"] = grader.mismatch_pattern(_mask((256, 256), lambda m: m.__setitem__((slice(None), slice(0, None, 2)), True)),
                                              (256, 128))
    assert grader.case_reason(case) == plain + " in every row, even columns, 2 of 2 block tiles"


# ---------------------------------------------------------------------------------------------
# float2-store, the static check of k6
# ---------------------------------------------------------------------------------------------

def _compiled(vec_stg64, scalar_stg64):
    entries = {"vec": "k_vec", "scalar": "k_scalar"}
    res = {e: {"spill_stores": 0, "spill_loads": 0, "stack": 0, "registers": 100} for e in entries.values()}
    facts = {"k_vec": {"families": {"STG.64": vec_stg64}, "fp16": {}},
             "k_scalar": {"families": {"STG.64": scalar_stg64}, "fp16": {}}}
    return SimpleNamespace(row=SimpleNamespace(entries=entries), resources=res), facts


@pytest.mark.parametrize("vec,scalar,ok,says", [(64, 0, True, ""), (0, 0, False, "k_vec: no 64-bit stores"),
                                                (64, 64, False, "k_scalar: 64 64-bit stores")])
def test_float2_store_wants_64_bit_stores_in_vec_and_none_in_scalar(vec, scalar, ok, says):
    c, facts = _compiled(vec, scalar)
    got, why = static.run_check("float2-store", c, facts)
    assert got == ok and says in why


# ---------------------------------------------------------------------------------------------
# answers.toml as students' editors save it
# ---------------------------------------------------------------------------------------------

def test_answers_toml_saved_with_a_byte_order_mark_or_in_latin_1_is_read(tmp_path):
    """Notepad writes a UTF-8 byte-order mark; an older Windows editor writes Latin-1. Neither may cost a
    student the file's points (before: 'not valid TOML at line 1, column 1', or a UnicodeDecodeError)."""
    text = 'name = "José"\n[questions]\nv4_loads_per_fma = "9/8"\n'
    bom, latin = tmp_path / "bom.toml", tmp_path / "latin.toml"
    bom.write_bytes(b"\xef\xbb\xbf" + text.encode())
    latin.write_bytes(text.encode("latin-1"))
    for path in (bom, latin):
        data = answers_mod.load(path)
        assert data["name"] == "José" and data["questions"]["v4_loads_per_fma"] == "9/8", path.name


def test_a_toml_date_is_graded_as_text_and_the_report_stays_json(tmp_path):
    """`key = 2024-01-01` is valid TOML (a date): it reaches the grader as the text written, is not a number,
    and the answers still serialize (before: the score printed, then a TypeError, and grade-class said crashed)."""
    path = tmp_path / "answers.toml"
    path.write_text("[questions]\nq = 2024-01-01\nt = 07:32:00\n[predictions]\np = 1979-05-27T07:32:00Z\n")
    data = answers_mod.load(path)
    assert data["questions"] == {"q": "2024-01-01", "t": "07:32:00"}
    assert data["predictions"]["p"].startswith("1979-05-27T07:32:00")
    json.dumps(data)
    q = Qm.Question("q", "how many?", expected=lambda: 4, model="m")
    ok, why = q.grade(data["questions"]["q"])
    assert not ok and "not a number" in why


# ---------------------------------------------------------------------------------------------
# Units, choices, ranges and forms: an answer in the wrong form is told so, never marked wrong
# ---------------------------------------------------------------------------------------------

ALL_LABS = {p.name.split("-")[0]: p for p in sorted((ROOT / "labs").glob("lab07*"))}


@pytest.fixture(scope="module")
def labs_g():
    return {name: Grading(load(path)) for name, path in ALL_LABS.items()}


def _row(labs_g, lab, rid):
    g = labs_g[lab]
    return next(r for r in [*g.questions, *g.predictions] if r.id == rid)


def _grade(row, raw):
    """(ok, reason) of a question's or a computed prediction's answer."""
    return row.grade(raw) if isinstance(row, Qm.Question) else Qm.grade_prediction(row, raw, None)


@pytest.mark.parametrize("lab,pid,form", [
    ("lab07a", "k3_stages5_shared_bytes", lambda v: f"{v / 1024:g} KiB"),     # the walkthrough: was "predicted 80 B"
    ("lab07a", "k3_stages5_shared_bytes", lambda v: f"{v / 1024:g} KB"),      # KB is 1024 bytes, as the course has it
    ("lab07a", "k3_stages5_shared_bytes", lambda v: f"{v / 1024:g}kB"),
    ("lab07a", "k3_stages5_shared_bytes", lambda v: f"{v:g} bytes"),
    ("lab07", "v8_global_gb_4096", lambda v: f"{v * 1000:.0f} MB"),           # GB here is 10^9 bytes
    ("lab07", "v8_global_gb_4096", lambda v: f"{v * 1e9 / 2 ** 30:.2f} GiB"),
    ("lab07c", "h5_tx_bytes", lambda v: f"{v / 1024:g} KiB"),                  # exact: the conversion is exact too
    ("lab07d", "gemv_fp16_floor_us", lambda v: f"{v / 1000:.4f} ms"),
    ("lab07d", "gemv_fp16_floor_us", lambda v: f"{v:.1f} µs"),
    ("lab07d", "skinny_partials_kib", lambda v: f"{v / 1024:g} MiB"),
    ("lab07d", "prefill_flop_per_byte", lambda v: f"{v:.1f} FLOPs per byte"),
    ("lab07b", "c5_load_wavefronts_per_ffma", lambda v: f"{v:g} wavefronts per FFMA"),
    ("lab07d", "littles_law_mb", lambda v: f"{v * 1000:.0f} kB"),              # a question with its unit
])
def test_a_number_with_a_unit_of_the_right_kind_is_converted_to_the_rows_unit(labs_g, lab, pid, form):
    row = _row(labs_g, lab, pid)
    raw = form(row.answer())
    ok, why = _grade(row, raw)
    assert ok, f"{raw}: {why}"


@pytest.mark.parametrize("lab,pid,raw,says", [
    # the walkthrough's: each converted, then wrong; the message repeats the conversion, never the answer
    ("lab07", "v8_global_gb_4096", "1100 MB", ['"1100 MB" (1.1 GB)', "not within 15 %"]),
    ("lab07c", "h5_tx_bytes", "24 KiB", ['"24 KiB" (24576 bytes)', "not the exact value"]),
])
def test_a_converted_number_that_is_wrong_is_told_with_its_conversion(labs_g, lab, pid, raw, says):
    p = _row(labs_g, lab, pid)
    ok, why = Qm.grade_prediction(p, raw, None)
    assert not ok and all(s in why for s in says), why
    assert "0 %" not in why and f"{p.answer():g}" not in why and p.hint in why


@pytest.mark.parametrize("lab,pid,raw,says", [
    ("lab07a", "k3_stages5_shared_bytes", "80 furlongs", ["(furlongs)", "the prediction is in B (bytes)", "KiB"]),
    ("lab07a", "k3_stages5_shared_bytes", "3 ms", ["is in seconds", "the prediction is in B (bytes)"]),
    ("lab07a", "k6_stg64_in_grid_4096", "80 KiB", ["is in bytes", 'the prediction is in instructions',
                                                   'followed by "instructions"']),
    ("lab07c", "h4_tma_loads", "11 TMA loads", ["(TMA loads)", "the prediction is in loads"]),
    ("lab07d", "gemv_fp16_floor_us", "18 GB", ["is in bytes", "the prediction is in us (seconds)", "ms"]),
    ("lab07d", "littles_law_mb", "3 ms", ["is in seconds", "the question is in MB (bytes)"]),
    ("lab07", "v7_accumulators", "3 KB", ["takes the number in the unit its text names", "without KB"]),
])
def test_a_unit_that_cannot_be_converted_is_refused_with_the_unit_expected(labs_g, lab, pid, raw, says):
    """Before: the unit was dropped ("80 furlongs" graded as 80 B): a wrong kind is a form to fix, not a miss."""
    row = _row(labs_g, lab, pid)
    ok, why = _grade(row, raw)
    assert not ok and all(s in why for s in says), why
    assert "within" not in why and "exact" not in why and "not the answer" not in why


def test_a_label_after_a_number_still_passes_where_the_question_names_no_unit(labs_g):
    q = _row(labs_g, "lab07", "v7_accumulators")
    assert q.grade(f"{q.answer():g} registers")[0] and q.grade(f"{q.answer():g}")[0]
    occ = _row(labs_g, "lab07", "v5_occupancy_sm86_pct")
    assert occ.grade(f"{occ.answer():.0f} %")[0]
    pct = Qm.Prediction("v4", "v4: % of cuBLAS", "fp32")
    for raw in ("20 %", "20 % of cuBLAS", "20 percent", 20):
        assert Qm.grade_prediction(pct, raw, 31.7)[0], raw
    ratio = Qm.Prediction("r", "fp16 over fp32", ratio=("fp16", "fp32"), unit="x")
    assert all(Qm.grade_prediction(ratio, raw, 3.0)[0] for raw in ("2.5x", "2.5 x", "2.5 times", 2.5))


@pytest.mark.parametrize("raw,shown", [(42, "42"), ("maybe", '"maybe"'), (True, "true"), ("compute", '"compute"')])
def test_an_answer_that_is_not_one_of_the_choices_is_told_so_with_the_choices(labs_g, raw, shown):
    """Before: `gemv_m1_limit = 42` said "42 is not the answer", "maybe" said "'maybe' is not the answer"."""
    q = _row(labs_g, "lab07d", "gemv_m1_limit")
    ok, why = q.grade(raw)
    assert not ok and why.startswith(f"{shown} is not one of the choices") and '"dram" or "ffma"' in why, why
    assert "is not the answer" not in why and "True" not in why and "'" not in why


def test_the_choices_message_is_the_same_whatever_the_answer(labs_g):
    """It lists what the question's text lists, in its order: the same for a question whose answer is yes
    as for one whose answer is no (it gives away nothing)."""
    yes = _row(labs_g, "lab07d", "own_partial_first_two_splits")
    no = _row(labs_g, "lab07d", "own_partial_first_repeatable")
    assert yes.answer() != no.answer() and yes.choices == no.choices == ("yes", "no")
    for raw in ("maybe", True, 1):
        assert yes.grade(raw) == no.grade(raw) and '"yes" or "no"' in yes.grade(raw)[1]


def test_a_wrong_choice_is_the_answer_missed_and_true_for_an_open_word_is_a_form(labs_g):
    q = _row(labs_g, "lab07d", "gemv_m1_limit")
    wrong = next(c for c in q.choices if c != q.answer())
    ok, why = q.grade(wrong)
    assert not ok and why == f'"{wrong}" is not the answer (look at: {q.hint})'
    assert all(q.grade(a)[0] for a in q.accept), "an accepted word that is not one of the choices still passes"
    open_word = _row(labs_g, "lab07d", "atomic_c_before_launch")
    assert not open_word.choices and open_word.grade(True) == (
        False, "true is not a word: write your answer as text, in double quotes")


def test_every_stated_choice_and_range_holds_its_questions_answer(labs_g):
    """The choices and ranges are read from the questions' texts: each lab's key is among them."""
    found = {}
    for lab, g in labs_g.items():
        for q in g.questions:
            if q.choices:
                assert Qm.normalize_words(q.answer()) in q.choices, q.id
                found.setdefault("choices", []).append(q.id)
            if q.valid_range:
                assert q.valid_range[0] <= q.answer() <= q.valid_range[1], q.id
                found.setdefault("range", []).append(q.id)
    assert "gemv_m1_limit" in found["choices"] and found["range"] == ["ldmatrix_register_of_a_10_5"]


@pytest.mark.parametrize("raw", [7, -1, "4", 3.5])
def test_a_number_outside_the_questions_range_is_told_so(labs_g, raw):
    """Before: register 7 of 0..3 said "7 is not exact of the answer"."""
    q = _row(labs_g, "lab07a", "ldmatrix_register_of_a_10_5")
    assert q.valid_range == (0, 3)
    ok, why = q.grade(raw)
    assert not ok and why.endswith("is outside the range the question states (0..3)"), why


def test_a_wrong_exact_number_is_not_the_exact_value_and_a_wrong_one_keeps_its_hint(labs_g):
    q = _row(labs_g, "lab07", "v7_accumulators")
    assert q.grade(q.answer() + 11) == (False, f"{q.answer() + 11:g} is not the exact value (look at: {q.hint})")
    rel = _row(labs_g, "lab07", "v7_loads_per_fma")
    ok, why = rel.grade("1/3")
    assert not ok and why.startswith('"1/3" is not within 1 % of the answer'), why
    p = _row(labs_g, "lab07c", "h4_tma_loads")
    ok, why = Qm.grade_prediction(p, p.answer() + 1, None)
    assert not ok and why == f"predicted {p.answer() + 1:g} loads: not the exact value (look at: {p.hint})"


@pytest.mark.parametrize("raw,says", [
    ("262,144", "without a thousands separator"), ("1,5", "decimal point"), ("about 80", "e.g."),
    (True, "e.g."), ("80 KiB (81920 B)", "e.g."), ("1/0", "e.g.")])
def test_what_is_not_a_number_is_told_so_with_an_example_of_a_number(labs_g, raw, says):
    """Before: a prediction's "262,144 is not a number" gave no example (a question's did)."""
    for row in (_row(labs_g, "lab07a", "k6_stg64_in_grid_4096"), _row(labs_g, "lab07", "v7_accumulators")):
        ok, why = _grade(row, raw)
        assert not ok and "is not a number" in why and says in why and "True" not in why, why
        assert why.startswith(Qm.as_written(raw)), why


def test_the_examples_in_messages_are_forms_never_near_an_answer(labs_g):
    """A message's example numbers ("write e.g. 0.25 ...") are within no row's tolerance of its answer."""
    for g in labs_g.values():
        for row in [*g.questions, *g.predictions]:
            if getattr(row, "kind", "number") == "words":
                continue
            why = _grade(row, "about")[1]
            want, tol = row.answer(), max(getattr(row, "abs_tol", 0), row.rel_tol * abs(row.answer()))
            assert "e.g." in why and all(abs(v - want) > tol for v in Qm.numbers_in(why)), (row.id, why)


def test_messages_show_what_the_student_wrote_as_toml_writes_it():
    assert [Qm.as_written(v) for v in (True, False, "maybe", 42, 0.25, "9/8")] == [
        "true", "false", '"maybe"', "42", "0.25", '"9/8"']


def test_a_toml_syntax_error_names_the_file_the_line_and_a_valid_line(tmp_path):
    """Before: "answers.toml is not valid TOML: Invalid value (at line 4, column 19)", and `make grade`
    dropped the hint: a number with a unit not in quotes is the usual slip."""
    path = tmp_path / "answers.toml"
    path.write_text('[student]\nname = ""\n[questions]\nv7_accumulators = 80 KiB  # a guess\n')
    with pytest.raises(CourseError) as e:
        answers_mod.load(path)
    assert "not valid TOML" in e.value.message and str(path) in e.value.message
    assert "at line 4, column" in e.value.message and e.value.message.endswith(": v7_accumulators = 80 KiB  # a guess")
    assert e.value.hint.endswith('as in: v7_accumulators = "80 KiB"')
    path.write_text('[questions\n')
    with pytest.raises(CourseError) as e:
        answers_mod.load(path)
    assert "line 1" in e.value.message and e.value.hint.endswith('key = "9/8"')


def test_make_grade_shows_the_toml_errors_hint_on_the_lost_questions(g, tmp_path):
    ws = tmp_path / "ws"
    W.generate(g, ws, quiet=True)
    (ws / "answers.toml").write_text(f"[questions]\n{g.questions[0].id} = 80 KiB\n")
    report = grader.grade(g, ws, parts=["questions", "predictions"], gpu=False, progress=False)
    reasons = {c.reason for p in report.parts for c in p.checks}
    assert len(reasons) == 1, reasons
    reason = reasons.pop()
    assert "not valid TOML" in reason and f"what to do: write numbers as 0.25" in reason and "\n" not in reason
    assert f'{g.questions[0].id} = "80 KiB"' in reason


def test_the_template_says_exactly_where_a_prediction_is_exact(labs_g):
    """Before: lab 7c's answers.toml said "Within 0 % of the answer scores"."""
    text = re.sub(r"\n#\s+", " ", answers_mod.template(labs_g["lab07c"]))
    assert not re.search(r"(?<![\d.])0 %", text) and "A prediction scores when it is exact;" in text
    text = re.sub(r"\n#\s+", " ", answers_mod.template(labs_g["lab07a"]))
    assert "A prediction scores when it is within 15 % of the answer;" in text


def test_lab_7ds_rules_file_with_a_byte_order_mark_is_read(tmp_path):
    from common.grading import rules
    path = tmp_path / "rules.toml"
    path.write_bytes(b"\xef\xbb\xbf" + b'[[rule]]\nwhen = "K >= 4096"\nuse = "split-k"\n')
    assert rules._toml(path) == {"rule": [{"when": "K >= 4096", "use": "split-k"}]}


def test_a_selftest_prints_and_records_the_reference_without_its_key():
    """The reference solution's answers, reasons and predictions are the key: a self-test's report of it
    (printed, and recorded in results/ where students read) shows them hidden; verdicts and points stay."""
    rep = grader.Report("reference", [], {"lab": "l"}, {
        "questions": [{"id": "q", "answer": 42, "why": "because", "ok": True}, {"id": "r", "answer": None}],
        "predictions": {"rows": [{"id": "p", "predicted": 3.5, "status": "ok"}]}})
    hidden = rep.without_key()
    assert hidden.extra["questions"][0] == {"id": "q", "answer": grader.HIDDEN, "why": grader.HIDDEN, "ok": True}
    assert hidden.extra["questions"][1]["answer"] is None                    # unanswered stays unanswered
    assert hidden.extra["predictions"]["rows"][0] == {"id": "p", "predicted": grader.HIDDEN, "status": "ok"}
    assert rep.extra["questions"][0]["answer"] == 42, "the report graded is not changed"


def test_no_committed_grading_record_holds_the_key():
    """Every grade-selftest and grade-class record under labs/*/results/: no answer, reason or prediction
    in the clear (a red-team review read the whole key of labs 7-7d from these files)."""
    def rows(node):
        if isinstance(node, dict):
            for k, v in node.items():
                if k in ("answer", "why", "predicted") and not isinstance(v, (dict, list)):
                    yield k, v
                else:
                    yield from rows(v)
        elif isinstance(node, list):
            for v in node:
                yield from rows(v)
    records = sorted(ROOT.glob("labs/*/results/*grade-*.json"))
    assert records
    for path in records:
        clear = [(k, v) for k, v in rows(json.loads(path.read_text())) if v not in (None, grader.HIDDEN)]
        assert not clear, f"{path.name}: {clear[:3]}"


def test_a_compile_error_inside_a_library_header_names_the_students_line():
    """Lab 7b's known-wrong c5_perm_not_one_to_one fails in a CuTe static_assert: the reason used to begin
    with the header's whole path; it now names the header and the line of the student's file nvcc gives."""
    message = ('nvcc failed on c5_wide_epilogue.cu for sm_90:\n'
               '/opt/x/cutlass/include/cute/layout.hpp(1234): error: static assertion failed with "Non-injective"\n'
               '          detected during:\n'
               '            instantiation of "auto cute::complement(...)" at line 88 of /tmp/ws/c5_wide_epilogue.cu')
    assert static._error_line(message, "/tmp/ws/c5_wide_epilogue.cu") == (
        'layout.hpp(1234): error: static assertion failed with "Non-injective" (from line 88 of c5_wide_epilogue.cu)')
    assert static._error_line("nvcc failed\n/tmp/ws/v4.cu(82): error: expected a \";\"", "/tmp/ws/v4.cu") == \
        'v4.cu(82): error: expected a ";"'


# ---------------------------------------------------------------------------------------------
# What the workspace says about grading is what the grader does (every graded lab)
# ---------------------------------------------------------------------------------------------

GRADED_LABS = sorted(p.parents[1] for p in (ROOT / "labs").glob("*/grading/parts.py"))


def _thresholds(g, c):
    """The % a check needs, read from the grading data (None: the check has no % threshold)."""
    return {"fast": g.SPEED_PCT, "bandwidth": c.threshold, "rules-speed": c.threshold}.get(c.kind)


@pytest.mark.parametrize("lab_dir", GRADED_LABS, ids=[p.name for p in GRADED_LABS])
def test_the_workspace_states_each_checks_threshold_and_every_file_it_reads(lab_dir, tmp_path):
    """Lab 7d's README once said "speed against the reference (75 % of it earns the point)" where its
    dispatch part needs 85 % of the course's rules, "Only your .cu files and answers.toml are read"
    beside a graded dispatch_rules.toml, and "races" in the header of files no racecheck reads. The
    texts are generated from the checks now; this reads the thresholds from the grading code."""
    g = Grading(load(lab_dir))
    ws = tmp_path / "ws"
    W.generate(g, ws, quiet=True)
    readme = (ws / "README.md").read_text()
    pcts = {float(v) for p in g.parts for c in p.checks if (v := _thresholds(g, c)) is not None}
    files = {f.name: f for f in ws.iterdir() if f.is_file()}
    texts = {"README.md": readme, **{n: "\n".join(f.read_text().split("\n")[:2]) for n, f in files.items()
                                     if n != "README.md" and n != "answers.toml"}}
    for name, text in texts.items():           # no % that no check needs ("75 %" of an 85 % check)
        said = {float(m) for m in re.findall(r"(?:at least|reach|earns?)\D{0,20}?(\d+(?:\.\d+)?) %", text)}
        said |= {float(m) for m in re.findall(r"\((\d+(?:\.\d+)?) % of it earns", text)}
        assert said <= pcts, (name, said - pcts, pcts)
    for p in g.code_parts:
        for c in p.checks:
            line = next(l for l in readme.split("\n") if l.startswith(f"- `{c.name}` (") and c.what in l)
            assert p.name in line.split(":")[0], (p.name, c.name, line)
            if _thresholds(g, c) is not None:
                assert f"{_thresholds(g, c):g} %" in line, (p.name, c.name, line)
    for p in g.code_parts:                      # each file's header: its own parts' checks, nothing else
        f = ws / g.kernel_files()[p.name].name
        head = f.read_text().split("\n")[1]
        kinds = {c.kind for q in W._parts_of(g, f) for c in q.checks}
        assert ("races" in head) == ("race-free" in kinds), (f.name, head)
        for c in p.checks:
            if _thresholds(g, c) is not None:
                assert f"{_thresholds(g, c):g} %" in head, (f.name, c.name, head)
        assert "REFERENCE" not in head and "exercise's reference" not in f.read_text(), f.name
    read = next(l for l in readme.split("\n") if l.startswith("What is read:"))
    graded = [f.name for f in g.kernel_files().values()] + list(g.headers) + \
        (["answers.toml"] if g.questions or g.predictions else [])
    assert all(f"`{n}`" in read for n in graded) and set(graded) <= set(files), (read, graded)


def test_lab_7ds_rules_file_states_the_speed_its_check_needs(tmp_path):
    """The workspace's dispatch_rules.toml (its header is the lab's file's): the % of the course's
    rules' speed that `speed` needs, read from grading/parts.py, and the table's name, [[rule]]."""
    g = Grading(load(ROOT / "labs" / "lab07d-decode-shapes"))
    W.generate(g, tmp_path / "ws", quiet=True)
    text = (tmp_path / "ws" / "dispatch_rules.toml").read_text()
    speed = g.part("dispatch").check("speed")
    assert speed.threshold == g.lab.module("grading.parts").RULES_SPEED_PCT
    said = {float(m) for m in re.findall(r"(\d+(?:\.\d+)?) % of the course's rules", text)}
    assert said == {speed.threshold}, said
    assert "named [[rule]]" in text.split("TODO(dispatch-rules)")[0]


def test_a_selftest_record_names_its_files_relative_to_the_batch_folder(tmp_path):
    """The batch's temporary folder is new every run: the record keeps the paths under it relative to
    it, in a reason's text as well, and leaves other paths and values alone."""
    from common.grading import selftest
    work = tmp_path / "lab07-grade-x1y2"
    record = {"reference": {"parts": [{"source": f"{work}/selftest/reference/v4.cu", "points": 2.0}]},
              "wrong": [{"first reason": f"nvcc failed: {work}/selftest/wrong/v4_bug.cu(12): error"}],
              "elsewhere": "/usr/local/cuda/bin/nvcc", "spread": float("nan")}
    out = selftest.within(work, record)
    assert out["reference"]["parts"][0] == {"source": "selftest/reference/v4.cu", "points": 2.0}
    assert out["wrong"][0]["first reason"] == "nvcc failed: selftest/wrong/v4_bug.cu(12): error"
    assert out["elsewhere"] == "/usr/local/cuda/bin/nvcc" and str(work) not in json.dumps(out)
    assert out["spread"] == "nan"                                  # grader.finite: strict JSON
