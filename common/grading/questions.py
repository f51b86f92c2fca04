"""Questions and predictions: the row types a lab's grading/questions.py fills, and how answers are read.

    Question(id, text, expected, model, kind="number"|"words", rel_tol, abs_tol, accept, points)
    question.grade(raw)        -> (ok, reason): raw is what answers.toml holds
    Prediction(id, text, ladder="fp32")         a kernel's % of its ladder's cuBLAS at PREDICTION_SIZE
    Prediction(id, text, ratio=("fp16", "fp32"), unit="x")   cuBLAS TFLOP/s of one ladder over another's
    parse_number(raw), normalize_words(text)
    measured_from_record(predictions, record, size) -> ({id: value}, size used): from a bench record
    grade_prediction(p, raw, measured, factor)      -> (ok, reason)

Answers may be numbers (0.25), fractions as text ("9/8"), a number with a unit or a % after it
("33 %", "2 blocks"), or words for the few word questions ("registers"). A question's expected value
is a function (of the course's models), never a typed number: if a model changes, the key changes.
"""
import re
from dataclasses import dataclass
from typing import Callable

BASELINE = "cuBLAS"          # the bench records' name for the baseline row of a ladder


@dataclass(frozen=True)
class Question:
    id: str
    text: str
    expected: Callable
    model: str                      # where the answer comes from (the hint on a wrong answer)
    kind: str = "number"            # "number" or "words"
    rel_tol: float = 0.0
    abs_tol: float = 0.0
    accept: tuple = ()              # words: other accepted answers (normalized)
    points: int = 1

    def tolerance_text(self):
        if self.kind == "words":
            return "words, any case"
        if self.rel_tol:
            return f"within {100 * self.rel_tol:g} %"
        if self.abs_tol:
            return f"within ± {self.abs_tol:g}"
        return "exact"

    def answer(self):
        return self.expected()

    def grade(self, raw):
        """(ok, reason). raw: the TOML value (number or string), or None when missing."""
        if raw is None or (isinstance(raw, str) and raw.strip().upper() in ("", "TODO")):
            return False, "not answered"
        want = self.answer()
        if self.kind == "words":
            got = normalize_words(str(raw))
            ok = got in {normalize_words(w) for w in (want, *self.accept)}
            return ok, "" if ok else f"{raw!r} is not the answer (model: {self.model})"
        got = parse_number(raw)
        if got is None:
            return False, f"{raw!r} is not a number (write e.g. 0.25, \"9/8\" or \"33 %\")"
        tol = max(self.abs_tol, self.rel_tol * abs(want))
        ok = abs(got - want) <= tol + 1e-12 * max(1.0, abs(want))
        return ok, "" if ok else f"{raw!r} is not {self.tolerance_text()} of the model's value (model: {self.model})"


@dataclass(frozen=True)
class Prediction:
    id: str                   # a kernel of the lab (its % of cuBLAS), or any id with `ratio`
    text: str
    ladder: str = ""          # the kernel's ladder: its cuBLAS baseline
    unit: str = "% of cuBLAS"
    ratio: tuple = ()         # (ladder a, ladder b): cuBLAS TFLOP/s of a over b

    @property
    def ladders(self):
        return tuple(self.ratio) if self.ratio else ((self.ladder,) if self.ladder else ())


_NUMBER = re.compile(r"^\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*(?:/\s*((?:\d+\.?\d*|\.\d+)))?\s*(?:%|[A-Za-z][A-Za-z /]*)?\s*$")


def parse_number(raw):
    """A float from 0.25, 1, "9/8", "33 %", "2 blocks"; None if it is not one (booleans are not)."""
    if isinstance(raw, bool):
        return None
    if isinstance(raw, (int, float)):
        return float(raw)
    m = _NUMBER.match(str(raw))
    if not m:
        return None
    value = float(m.group(1))
    if m.group(2) is not None:
        den = float(m.group(2))
        if den == 0:
            return None
        value /= den
    return value


def normalize_words(text):
    t = re.sub(r"[-_]", " ", str(text).lower())
    t = re.sub(r"[^a-z0-9 ]", "", t)
    words = [w for w in t.split() if w not in ("the", "a", "an")]
    return " ".join(words)


def measured_from_record(predictions, record, size):
    """{prediction id: value} from a bench record (common.targets.bench's JSON), at `size` if it
    has it, else its largest size. Returns (values, size used)."""
    sizes = sorted({r["size"] for r in record.get("results", [])})
    if not sizes:
        return {}, None
    use = size if size in sizes else sizes[-1]
    rows = {(r["ladder"], r["kernel"]): r for r in record["results"] if r["size"] == use}
    out = {}
    for p in predictions:
        if p.ratio:
            a, b = (rows.get((ld, BASELINE)) for ld in p.ratio)
            if a and b and a.get("tflops") and b.get("tflops"):
                out[p.id] = float(a["tflops"]) / float(b["tflops"])
        elif p.ladder:
            r = rows.get((p.ladder, p.id))
            if r and r.get("pct_of_cublas") is not None:
                out[p.id] = float(r["pct_of_cublas"])
    return out, use


def grade_prediction(p, raw, measured, factor=2.0):
    """(ok, reason): within `factor` of the measurement (either way)."""
    if raw is None or (isinstance(raw, str) and raw.strip().upper() in ("", "TODO")):
        return False, "not predicted"
    got = parse_number(raw)
    if got is None:
        return False, f"{raw!r} is not a number"
    if measured is None:
        return False, "no measurement to compare with"
    if got <= 0:
        return False, f"{raw!r}: a prediction must be positive"
    ratio = measured / got
    ok = 1 / factor <= ratio <= factor
    return ok, "" if ok else (f"predicted {got:g} {p.unit}, measured {measured:.3g}: off by {max(ratio, 1 / ratio):.1f}x "
                              f"(within {factor:g}x scores)")
