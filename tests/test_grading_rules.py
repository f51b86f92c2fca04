"""The grader's rules parts (common/grading/rules.py), tested without a GPU: the expression language
(what parses, what is refused), the rules file's checks, plans, the hidden shapes, and the verdicts of
rules-sane and rules-speed on synthetic plans and timings."""
import math
from types import SimpleNamespace

import pytest

from common.errors import CourseError
from common.grading import grader, rules

FAMILIES = {"gemv": None, "splitk": None, "tiles": None}
WITH = ("splitk",)
TILE = (128, 128)

GOOD = '''
[[rule]]
when = "M <= 16"
use = "gemv"
[[rule]]
when = "tiles * 2 <= sms and K >= 2048"
use = "splitk"
splits = "min(ceil(sms / tiles), K // 256)"
[[rule]]
when = "true"
use = "tiles"
'''


def _load(tmp_path, text):
    f = tmp_path / "rules.toml"
    f.write_text(text)
    return rules.load(f, FAMILIES, WITH)


def _plan(rs, M, N, K, sms=132):
    return rules.plan(rs, rules.facts(M, N, K, sms, TILE), lambda s: max(1, s.K // 256))


def test_the_verdict_states_are_the_graders():
    assert (rules.PASS, rules.FAIL, rules.NEEDS_GPU) == (grader.PASS, grader.FAIL, grader.NEEDS_GPU)


# ---------------------------------------------------------------------------------------------
# Expressions
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("text,want", [("M <= 16", True), ("min(ceil(sms / tiles), K // 256)", 44),
                                       ("not (M > 1 or N > 1)", False), ("1 < M <= 16", True), ("true", True),
                                       ("floor(K / 3) % 7", 3), ("-M + max(N, 2)", 3)])
def test_expressions_evaluate_like_python(text, want):
    assert rules.Expr(text).evaluate({"M": 5, "N": 8, "K": 30, "sms": 132, "tiles": 3}) == want or \
        rules.Expr(text).evaluate({"M": 5, "N": 8, "K": 11264, "sms": 132, "tiles": 3}) == want


@pytest.mark.parametrize("text,why", [("__import__('os').system('x')", "may be called"), ("M.real", "Attribute"),
                                      ("open('f')", "only min"), ("Q > 1", "no name"), ("'a' < 'b'", "only numbers"),
                                      ("[M]", "List"), ("M ** 2", "Pow"), ("lambda: 1", "Lambda"), ("M <=", "not an expression"),
                                      ("M" + " + M" * 300, "500 at most")])
def test_anything_but_the_small_language_is_refused_with_its_reason(text, why):
    with pytest.raises(CourseError) as e:
        rules.Expr(text, "rule 1")
    assert why in e.value.message or why in (e.value.hint or ""), e.value.message


# ---------------------------------------------------------------------------------------------
# Rules files and plans
# ---------------------------------------------------------------------------------------------

def test_plans_first_match_wins(tmp_path):
    rs = _load(tmp_path, GOOD)
    assert _plan(rs, 1, 4096, 4096) == rules.Plan(1, "gemv")
    assert _plan(rs, 128, 128, 65536) == rules.Plan(2, "splitk", 132)
    assert _plan(rs, 256, 256, 4096) == rules.Plan(2, "splitk", 16)         # K // 256 caps ceil(132 / 4) = 33
    assert _plan(rs, 4096, 4096, 4096) == rules.Plan(3, "tiles")
    assert _plan(rs, 128, 128, 65536).label == "splitk (splits=132), rule 2"


@pytest.mark.parametrize("text,why", [
    ("", "has no rules"),
    ("[[rule]]\nwhen = \"true\"\nuse = \"cublas\"\n", "no family 'cublas'"),
    ("[[rule]]\nwhen = \"true\"\nuse = \"splitk\"\n", "splitk needs `splits`"),
    ("[[rule]]\nwhen = \"true\"\nuse = \"gemv\"\nsplits = \"2\"\n", "gemv takes no `splits`"),
    ("[[rule]]\nuse = \"gemv\"\n", "a rule has `when`"),
    ("[[rule]]\nwhen = \"true\"\nuse = \"gemv\"\nnote = 1\n", "a rule has `when`"),
    ("[[rule]\n", "not valid TOML"),
    # what a red-team review wrote: each a traceback before ('int' object is not iterable, unhashable type)
    ("rule = 5\n", "not a list of [[rule]] tables"), ("rule = [1]\n", "not a list of [[rule]] tables"),
    ("[[rule]]\nwhen = \"true\"\nuse = []\n", "use must be text"),
    ("[[rule]]\nwhen = true\nuse = \"gemv\"\n", "when must be text"),
    ("[[rule]]\nwhen = {a = 1}\nuse = \"gemv\"\n", "when must be text"),
])
def test_a_bad_rules_file_says_what_is_wrong(tmp_path, text, why):
    with pytest.raises(CourseError) as e:
        _load(tmp_path, text)
    assert why in e.value.message


def test_a_plan_that_cannot_run_says_so(tmp_path):
    rs = _load(tmp_path, "[[rule]]\nwhen = \"M < 2\"\nuse = \"gemv\"\n")
    with pytest.raises(CourseError, match="no rule matches 4x4x4"):
        _plan(rs, 4, 4, 4)
    for splits, why in (("0", "whole number from 1 to"), ("K // 2", "from 1 to 16"), ("1.5", "whole number"),
                        ("K / (M - M)", "fails")):
        rs = _load(tmp_path, f"[[rule]]\nwhen = \"true\"\nuse = \"splitk\"\nsplits = \"{splits}\"\n")
        with pytest.raises(CourseError) as e:
            _plan(rs, 4, 4, 4096)
        assert why in e.value.message, (splits, e.value.message)


# ---------------------------------------------------------------------------------------------
# Hidden shapes
# ---------------------------------------------------------------------------------------------

CLASSES = [("decode", (1, 16), (1024, 8192), (1024, 8192)), ("few", (32, 256), (32, 512), (8192, 65536))]


def test_hidden_shapes_are_the_seeds_inside_their_ranges_and_differ_between_seeds():
    a = rules.hidden_shapes(CLASSES, 7, 20)
    assert a == rules.hidden_shapes(CLASSES, 7, 20) and a != rules.hidden_shapes(CLASSES, 8, 20)
    assert [c for c, _ in a] == ["decode"] * 20 + ["few"] * 20
    for cls, (M, N, K) in a:
        (_, rm, rn, rk), = [c for c in CLASSES if c[0] == cls]
        assert rm[0] <= M <= rm[1] and rn[0] - 8 <= N <= rn[1] and rk[0] - 8 <= K <= rk[1]
    assert any(N % 8 for _, (_, N, _) in a) and any(N % 8 == 0 and K % 8 == 0 for _, (_, N, K) in a)


# ---------------------------------------------------------------------------------------------
# Verdicts
# ---------------------------------------------------------------------------------------------

SANE = [("idle", lambda s: s.M > 16 and 4 * s.tiles <= s.sms and s.K >= 8192,
         lambda s, p: p.splits * s.tiles >= min(s.sms // 2, s.tiles * max(1, s.K // 256)), "SMs idle"),
        ("waves", lambda s: True, lambda s, p: p.family != "splitk" or s.tiles * p.splits <= 2 * s.sms, "waves")]
SPEC = {"tile": TILE, "sane": SANE, "split_max": lambda s: max(1, s.K // 256)}


def test_sane_rules_pass_and_a_tile_rule_before_split_k_names_the_shape(tmp_path):
    shapes = rules.hidden_shapes(CLASSES, 3, 30)
    assert rules.sane_verdict(_load(tmp_path, GOOD), shapes, SPEC, 132)[0] == grader.PASS
    bad = GOOD.replace('[[rule]]\nwhen = "tiles', '[[rule]]\nwhen = "M >= 32"\nuse = "tiles"\n[[rule]]\nwhen = "tiles')
    status, reason, details = rules.sane_verdict(_load(tmp_path, bad), shapes, SPEC, 132)
    assert status == grader.FAIL and "goes to tiles, rule 2: SMs idle" in reason and details["property"] == "idle"
    assert "such shapes" in reason


def test_sane_fails_on_a_shape_with_no_plan(tmp_path):
    rs = _load(tmp_path, "[[rule]]\nwhen = \"M <= 16\"\nuse = \"gemv\"\n")
    status, reason, _ = rules.sane_verdict(rs, rules.hidden_shapes(CLASSES, 3, 2), SPEC, 132)
    assert status == grader.FAIL and "no rule matches" in reason and reason.startswith("few shape")


def _row(shape, student_ms, reference_ms, cublas_ms, ok=True):
    return {"shape": shape, "student": "tiles, rule 3", "reference": "splitk (splits=132), rule 2", "ok": ok,
            "verdict": "PASS" if ok else "FAIL wrong element", "student_ms": student_ms, "reference_ms": reference_ms,
            "cublas_ms": cublas_ms}


CHECK = SimpleNamespace(threshold=85)


def test_speed_is_the_geometric_mean_against_the_reference_and_names_the_worst_shape():
    res = {"shapes": [_row("1x4096x4096", 1.0, 1.0, 1.2), _row("128x128x65536", 4.0, 0.4, 0.5),
                      _row("4096x4096x4096", 3.0, 3.0, 2.9)]}
    status, reason, d = rules.speed_verdict(res, CHECK)
    assert status == grader.FAIL and d["pct_of_reference"] == pytest.approx(100 * (0.1) ** (1 / 3))
    assert "128x128x65536 with tiles, rule 3, 12 % of cuBLAS where another choice reached 125 %" in reason
    same = {"shapes": [_row("a", 1.0, 1.02, 1.1), _row("b", 2.0, 1.9, 2.2)]}
    status, _, d = rules.speed_verdict(same, CHECK)
    assert status == grader.PASS and 95 < d["pct_of_reference"] < 105 and d["pct_of_cublas"] > 100


def test_speed_fails_on_a_wrong_result_or_no_result():
    res = {"shapes": [_row("1x4096x4096", 1.0, 1.0, 1.2, ok=False)]}
    assert "wrong result" in rules.speed_verdict(res, CHECK)[1]
    assert "did not run" in rules.speed_verdict({"error": "worker died"}, CHECK)[1]
    assert rules.speed_verdict(None, CHECK)[0] == grader.FAIL


# ---------------------------------------------------------------------------------------------
# What a student reads: what is accepted, and what to do (the grader keeps the hint)
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("text,says", [
    # a misspelled table name read as "no rules" with nothing more: the file's tables are named now
    ("[[rules]]\nwhen = \"true\"\nuse = \"tiles\"\n", ("has no rules", "it has [[rules]]", "named [[rule]]")),
    ("[Rule]\nwhen = \"true\"\n", ("it has [Rule]", "named [[rule]]")),
    ("", ("has no rules", "named [[rule]]")),
    ("[[rule]]\nwhen = \"true\"\nuse = \"cublas\"\n", ("no family 'cublas'", "gemv, splitk, tiles")),
    ("[[rule]]\nwhen = \"tile > 1\"\nuse = \"gemv\"\n", ("no name 'tile'", "M, N, K, sms, tiles")),
])
def test_a_bad_rules_file_says_what_is_accepted(tmp_path, text, says):
    with pytest.raises(CourseError) as e:
        _load(tmp_path, text)
    assert all(s in e.value.message for s in says), e.value.message
    assert e.value.hint and e.value.hint in e.value.line and e.value.message in e.value.line


def test_the_accepted_names_are_those_the_workspaces_rules_file_documents_already():
    """Listing the families and names gives nothing away: the file's header lists them all."""
    from pathlib import Path
    header = (Path(__file__).resolve().parents[1] / "labs" / "lab07d-decode-shapes" / "dispatch_rules.toml").read_text()
    header = header.split("BEGIN SOLUTION")[0]
    for word in [*FAMILIES, *rules.NAMES, *rules.FUNCS, "[[rule]]"]:
        assert word in header, word


def _verdicts(tmp_path, text, gpu=False):
    f = tmp_path / "dispatch_rules.toml"
    f.write_text(text)
    data = SimpleNamespace(RULES_FAMILIES=FAMILIES, RULES_TILE=TILE, RULES_SMS=132, RULES_HIDDEN=CLASSES,
                           RULES_PER_CLASS=2, RULES_SANE=SPEC["sane"], RULES_SANE_PER_CLASS=5,
                           RULES_SPLIT_MAX=lambda s: max(1, s.K // 256), RULES_WITH_SPLITS=WITH)
    g = SimpleNamespace(data=data, lab=SimpleNamespace(dir=tmp_path), GPU_TIMEOUT_S=1)
    part = SimpleNamespace(rules="dispatch_rules.toml", checks=(
        SimpleNamespace(name="sane", kind="rules-sane", needs_gpu=False, requires=""),
        SimpleNamespace(name="speed", kind="rules-speed", needs_gpu=True, requires="sane", threshold=85)))
    env = SimpleNamespace(gpu=gpu, gpu_text="none (no GPU here)", seed=3)
    return rules.verdicts(g, part, f, env, reference=f)


@pytest.mark.parametrize("text", ["", "[[rules]]\nwhen = \"true\"\nuse = \"tiles\"\n",
                                  "[[rule]]\nwhen = \"M <= 16\"\nuse = \"gemv\"\n", GOOD])
def test_without_a_gpu_speed_is_never_scored_and_a_file_error_keeps_its_hint(tmp_path, text):
    """Before: a file that could not be read failed `speed` too (0 of 4, where a sane file is 0 of 1 with 3
    needing a GPU), and its reason lost the hint the error carried."""
    raw = _verdicts(tmp_path, text)
    assert raw["speed"][0] == grader.NEEDS_GPU, raw
    if text != GOOD:
        assert raw["sane"][0] == grader.FAIL and "what to do:" in raw["sane"][1], raw["sane"]
    if "rules" in text:
        assert "named [[rule]]" in raw["sane"][1]
