"""Questions and predictions: the row types a lab's grading/questions.py fills, and how answers are read.

    Question(id, text, expected, model, kind="number"|"words", rel_tol, abs_tol, accept, points,
             hint="", why=(), why_model="", why_min_words=6)
    question.grade(raw)        -> (ok, reason): raw is what answers.toml holds
    question.grade_reason(raw) -> (ok, reason): the reason the student gave (`<id>_why` in answers.toml)
    Prediction(id, text, ladder="fp32")         a kernel's % of its ladder's cuBLAS at PREDICTION_SIZE
    Prediction(id, text, ratio=("fp16", "fp32"), unit="x")   cuBLAS TFLOP/s of one ladder over another's
    Prediction(id, text, expected=fn, rel_tol=0.15, unit="loads/FFMA", hint="...")   computed, no GPU:
                               a number the student derives from the kernel and the models (below)
    parse_number(raw), normalize_words(text), numbers_in(text), mentions(text, alternative)
    measured_from_record(predictions, record, size) -> ({id: value}, size used): from a bench record
    grade_prediction(p, raw, measured, factor)      -> (ok, reason)

What a student is told on a wrong answer: that it is wrong, and the question's `hint` (what to look
at: a SASS line, a model's output, a count), never the expected value, its direction or the model
call that computes it (`model` is for teachers: the answer key's provenance, in grading/questions.py).

Reasons. A question with `why` asks for a reason beside the answer (`<id>_why = "..."`): the point
needs both. `why` is a tuple of key ideas, each a tuple of alternatives (a word or phrase, matched
as whole words with an optional plural s; or a number, matched against the numbers the reason
writes, fractions included); every idea must be named. The question's own text must name none of
them (Grading checks it), so pasting the question never passes; `why_min_words` different words
stop a bare or repeated list of keywords, and a reason that names FOREIGN_IDEAS key ideas of the
lab's other questions is refused as a list of terms (named by a word, or by a number that is not a
power of two: 4 bytes and 32 lanes are in every reason about a GPU). A miss never says how many ideas
were named.
`why_model` is the reference's reason (the reference workspace's answers.toml).

Computed predictions. A Prediction with `expected` is graded against that function of the course's
models with a relative tolerance (`rel_tol`, 15 % unless the row says otherwise): the lab's
grading/questions.py says why that tolerance separates the right derivation from the near misses.
Its value is never written where a student reads before submitting: not in the workspace, not in
`make grade`'s output (a miss says "not within 15 %", no value and no direction).

Answers may be numbers (0.25), fractions as text ("9/8"), a number with a unit or a % after it
("33 %", "2 blocks"), or words for the few word questions ("registers"). A question's expected value
is a function (of the course's models), never a typed number: if a model changes, the key changes.
"""
import re
from dataclasses import dataclass
from typing import Callable

BASELINE = "cuBLAS"          # the bench records' name for the baseline row of a ladder
FOREIGN_IDEAS = 3            # other questions' key ideas that make a reason a list of terms (references: <= 2)


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
    hint: str = ""                  # what to look at when the answer is wrong (never the answer)
    why: tuple = ()                 # key ideas the reason must name: ((alternative, ...), ...)
    why_model: str = ""             # a reason that names them all (the reference's)
    why_min_words: int = 6

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

    @property
    def why_key(self):
        return f"{self.id}_why"

    def _look(self):
        return f" (look at: {self.hint})" if self.hint else ""

    def grade(self, raw):
        """(ok, reason). raw: the TOML value (number or string), or None when missing. A wrong
        answer's reason says it is wrong and what to look at (the hint), never the expected value."""
        if raw is None or (isinstance(raw, str) and raw.strip().upper() in ("", "TODO")):
            return False, "not answered"
        want = self.answer()
        if self.kind == "words":
            got = normalize_words(str(raw))
            ok = got in {normalize_words(w) for w in (want, *self.accept)}
            return ok, "" if ok else f"{raw!r} is not the answer{self._look()}"
        got = parse_number(raw)
        if got is None:
            return False, f"{raw!r} is not a number (write e.g. 0.25, \"9/8\" or \"33 %\")"
        tol = max(self.abs_tol, self.rel_tol * abs(want))
        ok = abs(got - want) <= tol + 1e-12 * max(1.0, abs(want))
        return ok, "" if ok else f"{raw!r} is not {self.tolerance_text()} of the answer{self._look()}"

    def ideas_named(self, text):
        """How many of the key ideas `text` names (each idea: any of its alternatives)."""
        return sum(any(mentions(text, alt) for alt in idea) for idea in self.why)

    def foreign_ideas_named(self, text, others):
        """The key ideas of the other questions (`others`) that `text` names and this question has none
        of: a reason that decides this answer names its own things, not every term of the lab."""
        own = {alt for idea in self.why for alt in idea}
        return [(q.id, idea[0]) for q in others if q.id != self.id for idea in q.why
                if not own.intersection(idea) and any(mentions(text, alt) for alt in idea if telling(alt))]

    def grade_reason(self, raw, others=()):
        """(ok, reason) of the reason given for the answer; (True, "") when the question asks none.
        others: the lab's other questions; a reason that names FOREIGN_IDEAS or more of their key
        ideas is a list of terms, not a reason (the references name at most 2). The message never
        says how many of the key ideas a reason names: that count would guide a search."""
        if not self.why:
            return True, ""
        if raw is None or not isinstance(raw, str) or raw.strip().upper() in ("", "TODO"):
            return False, f"no reason given: write it as {self.why_key} = \"...\" (a sentence: what decides it, and why)"
        words = len(set(normalize_words(raw).split()))
        if words < self.why_min_words:
            return False, (f"the reason has {words} different word(s): say in a sentence what decides the answer, "
                           "and why")
        if len(self.foreign_ideas_named(raw, others)) >= FOREIGN_IDEAS:
            return False, ("the reason lists terms that decide other questions: say in a sentence what decides "
                           f"this one{self._look()}")
        if self.ideas_named(raw) < len(self.why):
            return False, f"the reason does not say what decides the answer{self._look()}"
        return True, ""

    def pasted_question_passes(self):
        """The key ideas that the question's own text or its hint names (pasting them would help:
        Grading refuses such a question)."""
        return [idea for idea in self.why if any(mentions(f"{self.text} {self.hint}", alt) for alt in idea)]


@dataclass(frozen=True)
class Prediction:
    id: str                   # a kernel of the lab (its % of cuBLAS), or any id with `ratio`
    text: str
    ladder: str = ""          # the kernel's ladder: its cuBLAS baseline
    unit: str = "% of cuBLAS"
    ratio: tuple = ()         # (ladder a, ladder b): cuBLAS TFLOP/s of a over b
    expected: Callable = None # computed from the course's models: graded here, no GPU, no record
    rel_tol: float = 0.15     # computed predictions: the relative tolerance (the lab says why)
    hint: str = ""            # what to look at when it is off (never the value)

    @property
    def ladders(self):
        return tuple(self.ratio) if self.ratio else ((self.ladder,) if self.ladder else ())

    @property
    def computed(self):
        return self.expected is not None

    def answer(self):
        return float(self.expected())


_NUMBER = re.compile(r"^\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*(?:/\s*((?:\d+\.?\d*|\.\d+)))?\s*(?:%|[A-Za-z][A-Za-z /]*)?\s*$")


def telling(alternative):
    """Whether naming this alternative of another question's key idea says anything about that question: a
    word does; a power of two (4 bytes, 32 lanes, 128 threads, 64 KB) is in every reason about a GPU and
    does not."""
    if isinstance(alternative, str):
        return True
    n = abs(alternative)
    return not (float(n).is_integer() and n >= 1 and int(n) & (int(n) - 1) == 0)


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


_NUM_IN_TEXT = re.compile(r"(?<![\w.])[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?(?:\s*/\s*(?:\d+\.?\d*|\.\d+))?")


def numbers_in(text):
    """Every number a text writes (0.25, 1/8, 2e-3, 33 %), as floats."""
    out = []
    for m in _NUM_IN_TEXT.finditer(str(text)):
        v = parse_number(m.group(0))
        if v is not None:
            out.append(v)
    return out


def mentions(text, alternative):
    """Does `text` name `alternative`: a number among the numbers it writes (int or float given), or
    a word or phrase as whole words (any case, an optional plural s; hyphens and underscores are spaces)?"""
    if isinstance(alternative, (int, float)) and not isinstance(alternative, bool):
        return any(abs(v - alternative) <= 1e-9 * max(1.0, abs(alternative)) for v in numbers_in(text))
    phrase = normalize_words(alternative)
    if not phrase:
        return False
    words = r"\s+".join(re.escape(w) + ("s?" if i == len(phrase.split()) - 1 else "")
                       for i, w in enumerate(phrase.split()))
    return re.search(rf"(?<![a-z0-9]){words}(?![a-z0-9])", normalize_words(text)) is not None


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
    """(ok, reason): a computed prediction within p.rel_tol of p.answer() (`measured` is not used);
    a measured one within `factor` of the measurement (either way). A miss never says the value,
    its direction or by how much: the student derives it again (the hint says what to look at)."""
    if raw is None or (isinstance(raw, str) and raw.strip().upper() in ("", "TODO")):
        return False, "not predicted"
    got = parse_number(raw)
    if got is None:
        return False, f"{raw!r} is not a number"
    look = f" (look at: {p.hint})" if p.hint else ""
    if p.computed:
        want = p.answer()
        ok = abs(got - want) <= p.rel_tol * abs(want) + 1e-12 * max(1.0, abs(want))
        return ok, "" if ok else f"predicted {got:g} {p.unit}: not within {100 * p.rel_tol:g} % of the answer{look}"
    if measured is None:
        return False, "no measurement to compare with"
    if got <= 0:
        return False, f"{raw!r}: a prediction must be positive"
    ratio = measured / got
    ok = 1 / factor <= ratio <= factor
    return ok, "" if ok else f"predicted {got:g} {p.unit}: not within {factor:g}x of the measurement{look}"
