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
    read_number(raw, unit="", what="question") -> (value in `unit`, "") or (None, what is wrong and what to do)
    as_written(raw)            what the student wrote, as TOML writes it ("maybe", true, 42): for messages
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

Units (read_number). A unit is never dropped silently: a prediction (and a question with `unit`) takes
its own unit, converts one of the same kind (bytes, seconds: UNITS) and refuses any other with a
message that names the unit it is in ("80 furlongs", "3 ms" for bytes). KB is 1024 bytes, as the
course writes shared memory (48 KB, 227 KB); MB, GB and TB are 10^6, 10^9 and 10^12 bytes, as it
writes DRAM traffic and bandwidth (lab 7's "GB (10^9 bytes)", lab 7d's MB in flight); KiB, MiB, GiB
and TiB are powers of 1024; case does not matter (kB is KB). A question without `unit` names its
unit in its text: a label after the number passes ("2 blocks", "33 %", "16 bytes"), a scaled unit
("3 KB", "2 ms") is refused, since the grader cannot know what to convert it to.

Wrong formats are told as such, never as wrong answers: a word question whose text lists its choices
("(yes / no)", "(one word: dram / ffma)") says "not one of the choices" and lists them (the text
shows them already), a number question whose text states a range ("(0..3)") says "outside the range",
and a number that is not one ("262,144") gets an example of a form that is.
"""
import json
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
    unit: str = ""                  # numbers: the answer's unit where another of its kind converts (read_number)

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

    @property
    def choices(self):
        """The answers a word question's text offers ("(yes / no)", "(one word: dram / ffma)"), else ()."""
        m = _CHOICES.search(self.text) if self.kind == "words" else None
        return tuple(c.strip() for c in m.group(1).split("/")) if m else ()

    @property
    def valid_range(self):
        """(low, high) of a number question whose text states it ("(0..3)"), else None."""
        m = _RANGE.search(self.text) if self.kind != "words" else None
        return (float(m.group(1)), float(m.group(2))) if m else None

    def miss_text(self):
        """What a wrong number is not: the exact value, or within the tolerance of the answer."""
        return "the exact value" if self.tolerance_text() == "exact" else f"{self.tolerance_text()} of the answer"

    def grade(self, raw):
        """(ok, reason). raw: the TOML value (number or string), or None when missing. A wrong
        answer's reason says it is wrong and what to look at (the hint), never the expected value; an
        answer in the wrong form (not one of the choices, outside the stated range, not a number) is
        told that, and what a valid one looks like."""
        if raw is None or (isinstance(raw, str) and raw.strip().upper() in ("", "TODO")):
            return False, "not answered"
        if self.kind == "words":
            return self._grade_words(raw)
        got, problem = read_number(raw, self.unit, "question")
        if problem:
            return False, problem
        span = self.valid_range
        if span and not span[0] <= got <= span[1]:
            return False, f"{as_written(raw)} is outside the range the question states ({span[0]:g}..{span[1]:g})"
        want = self.answer()
        tol = max(self.abs_tol, self.rel_tol * abs(want))
        ok = abs(got - want) <= tol + 1e-12 * max(1.0, abs(want))
        return ok, "" if ok else f"{_said(raw, got, self.unit)} is not {self.miss_text()}{self._look()}"

    def _grade_words(self, raw):
        """A word answer: right, not one of the choices its text offers (listed), or wrong (the hint)."""
        got = normalize_words(str(raw))
        if not isinstance(raw, bool) and got in {normalize_words(w) for w in (self.answer(), *self.accept)}:
            return True, ""
        choices = self.choices
        if choices and (isinstance(raw, bool) or got not in {normalize_words(c) for c in choices}):
            return False, (f"{as_written(raw)} is not one of the choices: write {_either(choices)} "
                           "(as text, in double quotes)")
        if isinstance(raw, bool):
            return False, f"{as_written(raw)} is not a word: write your answer as text, in double quotes"
        return False, f"{as_written(raw)} is not the answer{self._look()}"

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
# A number or a fraction, then its unit if any: a unit starts with a letter, % or × and holds no digit
_WITH_UNIT = re.compile(r"^\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*(?:/\s*((?:\d+\.?\d*|\.\d+)))?"
                        r"\s*((?:[^\W\d_]|[%×])[^\d]*?)?\s*$")
_CHOICES = re.compile(r"\((?:[^():]*:\s*)?([a-z0-9]+(?:\s*/\s*[a-z0-9]+)+)\)\s*\??\s*$")
_RANGE = re.compile(r"\((-?\d+(?:\.\d+)?)\s*\.\.\s*(-?\d+(?:\.\d+)?)\)")

_BYTES = {"b": 1, "byte": 1, "kb": 1024, "kib": 1024, "mb": 1e6, "mib": 2 ** 20, "gb": 1e9, "gib": 2 ** 30,
          "tb": 1e12, "tib": 2 ** 40}
_SECONDS = {"s": 1, "sec": 1, "second": 1, "ms": 1e-3, "millisecond": 1e-3, "us": 1e-6, "µs": 1e-6, "μs": 1e-6,
            "microsecond": 1e-6, "ns": 1e-9, "nanosecond": 1e-9}
# unit (lower case, singular) -> (kind, its size in the kind's first unit); the module docstring says why KB is 1024
UNITS = {**{u: ("bytes", f) for u, f in _BYTES.items()}, **{u: ("seconds", f) for u, f in _SECONDS.items()}}
KIND_NAMES = {"bytes": "B, KB, KiB, MB, MiB, GB, GiB (KB is 1024 bytes, MB 10^6)", "seconds": "s, ms, us, ns"}
_SAME = ({"x", "time", "×"}, {"%", "percent", "% of cublas"})      # words for one unit


def _unit_key(text):
    """A unit as the grader compares it: lower case, one word singular, "per" as "/" ("FLOPs per byte" -> "flop/b")."""
    parts = re.sub(r"\s+per\s+", "/", str(text).strip().lower()).split("/")
    out = []
    for part in (" ".join(p.split()) for p in parts):
        if part not in UNITS and len(part) > 2 and part.endswith("s") and " " not in part:   # not "% of cublas"
            part = part[:-1]
        out.append({"byte": "b"}.get(part, part))
    return "/".join(out)


def _same_unit(a, b):
    """Whether two units (as _unit_key writes them) are one: "bytes" and "B", "%" and "% of cuBLAS"."""
    if a == b or (UNITS.get(a) and UNITS.get(a) == UNITS.get(b)):
        return True
    return any(a in words and b in words for words in _SAME) or (a == "%" and b.startswith("%"))


def as_written(raw):
    """What the student wrote, as TOML writes it: "maybe" in double quotes, true, 42, 0.25 (a message
    shows the student's own text, never Python's repr: True, 'maybe')."""
    if isinstance(raw, bool):
        return "true" if raw else "false"
    if isinstance(raw, str):
        return json.dumps(raw, ensure_ascii=False)
    if isinstance(raw, (list, dict)):
        return json.dumps(raw, ensure_ascii=False, default=str)
    return str(raw)


def _either(choices):
    """ "yes" or "no";  "a", "b" or "c" """
    quoted = [json.dumps(c) for c in choices]
    return quoted[0] if len(quoted) == 1 else f"{', '.join(quoted[:-1])} or {quoted[-1]}"


def _examples(unit):
    """Forms a number may take, for a message (format only: none is near an answer, the tests check)."""
    if not unit:
        return '0.25, "9/8" or "40 %"'
    if unit.startswith("%"):
        return '40 or "40 %"'
    return f'0.25, "9/8" or "0.25 {unit}"'


def _unit_help(unit):
    """What to write for a number in `unit`: the unit's kind's names where it has one."""
    kind = UNITS.get(_unit_key(unit))
    if kind:
        return f"write a number of {unit}, or one with a unit of {kind[0]}: {KIND_NAMES[kind[0]]}"
    return f"write the number alone, or followed by \"{unit}\""


def read_number(raw, unit="", what="question"):
    """(value, "") where raw is a number in `unit`, converted from a unit of the same kind ("80 KiB" for
    B is 81920); (None, what is wrong and what to do) where it is not a number or its unit is another
    (`what`: "question" or "prediction", for the message). unit="": a question whose text names its
    unit; a label after the number passes ("2 blocks"), a scaled unit ("3 KB") is refused."""
    m = None if isinstance(raw, bool) else _WITH_UNIT.match(str(raw))
    if m is None or (m.group(2) is not None and float(m.group(2)) == 0):
        if isinstance(raw, str) and re.search(r"\d,\d", raw):
            return None, (f"{as_written(raw)} is not a number: write it without a thousands separator, and with "
                          "a decimal point, not a comma (e.g. 1234.5)")
        return None, f"{as_written(raw)} is not a number (write e.g. {_examples(unit)})"
    value = float(m.group(1)) / (float(m.group(2)) if m.group(2) is not None else 1.0)
    written = m.group(3)
    if not written:
        return value, ""
    have, want = _unit_key(written), _unit_key(unit)
    if not unit:
        if UNITS.get(have, ("", 1))[1] != 1:
            return None, (f"{as_written(raw)}: this question takes the number in the unit its text names: "
                          f"write it without {written.strip()}")
        return value, ""
    if _same_unit(have, want):
        return value, ""
    if UNITS.get(have) and UNITS.get(want) and UNITS[have][0] == UNITS[want][0]:
        return value * UNITS[have][1] / UNITS[want][1], ""
    kind = UNITS[want][0] if UNITS.get(want) else ""
    kind = f" ({kind})" if kind and unit.strip().lower().rstrip("s") != kind.rstrip("s") else ""
    why = (f"is in {UNITS[have][0]}" if UNITS.get(have) else f"has a unit the grader does not know ({written.strip()})")
    return None, f"{as_written(raw)} {why}, and the {what} is in {unit}{kind}: {_unit_help(unit)}"


def _said(raw, value, unit):
    """A number as a message repeats it: 80 B; "80 KiB" (81920 B) where the student's unit was converted."""
    m = None if isinstance(raw, (bool, int, float)) else _WITH_UNIT.match(str(raw))
    if m and m.group(3) and unit and not _same_unit(_unit_key(m.group(3)), _unit_key(unit)):
        return f"{as_written(raw)} ({value:g} {unit})"
    if not unit:
        return as_written(raw)
    return f"{value:g} {unit}"


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
    its direction or by how much: the student derives it again (the hint says what to look at). A
    number in another unit of p.unit's kind is converted (read_number); any other unit is refused."""
    if raw is None or (isinstance(raw, str) and raw.strip().upper() in ("", "TODO")):
        return False, "not predicted"
    got, problem = read_number(raw, p.unit, "prediction")
    if problem:
        return False, problem
    look = f" (look at: {p.hint})" if p.hint else ""
    if p.computed:
        want = p.answer()
        ok = abs(got - want) <= p.rel_tol * abs(want) + 1e-12 * max(1.0, abs(want))
        miss = "not the exact value" if p.rel_tol == 0 else f"not within {100 * p.rel_tol:g} % of the answer"
        return ok, "" if ok else f"predicted {_said(raw, got, p.unit)}: {miss}{look}"
    if measured is None:
        return False, "no measurement to compare with"
    if got <= 0:
        return False, f"{as_written(raw)}: a prediction must be positive"
    ratio = measured / got
    ok = 1 / factor <= ratio <= factor
    return ok, "" if ok else f"predicted {_said(raw, got, p.unit)}: not within {factor:g}x of the measurement{look}"
