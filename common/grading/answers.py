"""answers.toml: the student's answers to the questions and their predictions.

    load(path)            -> {"student": {...}, "questions": {...}, "predictions": {...}}; CourseError
                             with the file, the line as written and a valid line (syntax_error) when
                             the file is not valid TOML; dates and times as their text
    read_text(path)       a file a student edited: UTF-8 (a byte-order mark dropped), else Latin-1
    parse_toml(text)      tomllib (Python 3.11+), or tomli, its backport, on Python 3.10
    template(g, solution) the file `make workspace` writes (g: a spec.Grading): every question as a
                          comment over its key; with solution=True the model's answers and the newest
                          recorded measurements
    recorded_measurements(g) -> ({prediction id: value}, size, path, GPU name) from the lab's results/
"""
import json
import re
import sys
from pathlib import Path

from common.errors import CourseError

if sys.version_info >= (3, 11):
    import tomllib
else:                     # pragma: no cover - Python 3.10: the backport (pyproject.toml's dependency)
    import tomli as tomllib


def parse_toml(text):
    """answers.toml's text as a dict (tomllib, or its backport tomli on Python 3.10)."""
    return tomllib.loads(text)


def read_text(path):
    """A file a student edited, as text: UTF-8 with or without the byte-order mark some editors write,
    else Latin-1 (every byte decodes: a name typed in a Windows editor is no reason to lose points)."""
    raw = Path(path).read_bytes()
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        return raw.decode("latin-1")


def _plain(value):
    """TOML's dates and times as the text the student wrote: the grader compares numbers and words, and
    its reports are JSON."""
    import datetime
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, (datetime.date, datetime.time)):       # datetime is a date
        return value.isoformat()
    return value


_AT = re.compile(r"\s*\(at line (\d+), column (\d+)\)")
_VALID_LINE = 'write numbers as 0.25 and text in double quotes: key = "9/8"'


def _shown_path(path):
    """The file as the student finds it: relative to the current folder where it is under it."""
    try:
        return str(Path(path).resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def syntax_error(path, text, e):
    """The CourseError of a TOML syntax error: which file, which line (as written) and what a valid
    line looks like, with the student's own key and value (tomllib says only "Invalid value (at line
    32, column 17)"; the usual slip is a number with a unit not in quotes: key = 80 KiB)."""
    m = _AT.search(str(e))
    what = _AT.sub("", str(e)).strip() or "not valid"
    if not m:
        return CourseError(f"{_shown_path(path)} is not valid TOML: {what}", hint=_VALID_LINE)
    n = int(m.group(1))
    lines = text.splitlines()
    line = lines[n - 1].strip() if 0 < n <= len(lines) else ""
    key, eq, value = line.partition("=")
    value = value.split(" #")[0].strip().strip("\"'")
    hint = _VALID_LINE
    if eq and re.fullmatch(r"[A-Za-z0-9_-]+", key.strip()) and value:
        hint = f'write numbers as 0.25 and text in double quotes, as in: {key.strip()} = {json.dumps(value)}'
    shown = f": {line[:80]}" if line else ""
    return CourseError(f"{_shown_path(path)} is not valid TOML: {what} at line {n}, column {m.group(2)}{shown}",
                       hint=hint)


def load(path):
    path = Path(path)
    if not path.exists():
        raise CourseError(f"{path} does not exist", hint="`make workspace` writes it; copy it back if you moved it")
    text = read_text(path)
    try:
        data = parse_toml(text)
    except tomllib.TOMLDecodeError as e:   # it says where; syntax_error shows the line and a valid one
        raise syntax_error(path, text, e) from None
    for table in ("questions", "predictions"):
        if not isinstance(data.get(table, {}), dict):
            raise CourseError(f"{path.name}: [{table}] must be a table")
    return _plain(data)


# ---------------------------------------------------------------------------------------------
# The template
# ---------------------------------------------------------------------------------------------

def _fmt(value):
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, int) or float(value).is_integer():
        return str(int(value))
    return f"{value:.6g}"


def _wrap_comment(text, width=98):
    words, lines, cur = text.split(), [], "#"
    for w in words:
        if len(cur) + 1 + len(w) > width:
            lines.append(cur)
            cur = "#  "
        cur += " " + w
    lines.append(cur)
    return "\n".join(lines)


def recorded_measurements(g):
    """The predictions' values from the newest bench record in the lab's results/:
    ({id: value}, size, path, GPU name), or ({}, None, None, None) when there is none."""
    from common.roofline import newest_record
    from .questions import measured_from_record
    record, path = newest_record(g.lab.results_dir, f"{g.lab.short}-bench_*.json")
    if record is None:
        return {}, None, None, None
    values, size = measured_from_record(g.predictions, record, g.PREDICTION_SIZE)
    return values, size, path, record.get("gpu", {}).get("name", "?")


def template(g, solution=False):
    """The answers.toml `make workspace` writes. solution=True (the reference workspace, for the
    grader's tests): the model's answers, reasons and computed predictions, and the recorded
    measurements for measured predictions. Without it, no expected value appears anywhere."""
    out = [f"# {g.lab.title.split(':')[0]}: check your understanding, and your predictions. "
           "`make grade` checks this file.",
           "# Write numbers (0.25), fractions or numbers with a unit as text (\"9/8\", \"40 %\"), words as text",
           "# (\"registers\"). A unit of bytes or time is converted to the unit a line asks for (\"2 KiB\", \"3 ms\";",
           "# KB is 1024 bytes, MB 10^6), any other unit is refused. Leave \"TODO\" where you have no answer yet.",
           "# A `<id>_why` key asks for your reason in a sentence: the point needs the answer and a reason that",
           "# names what decides it."]
    out += [_wrap_comment(line) for line in g.answers_intro.splitlines() if line.strip()]
    out += ["", "[student]", 'name = ""', "", "[questions]"]
    for i, q in enumerate(g.questions, 1):
        unit = f", in {q.unit}" if q.unit else ""
        out.append(_wrap_comment(f"{i}. {q.text} ({q.tolerance_text()}{unit})"))
        out.append(f"{q.id} = {_fmt(q.answer()) if solution else json.dumps('TODO')}")
        if q.why:
            out.append(f"{q.why_key} = {json.dumps(q.why_model if solution else 'TODO')}")
    if not g.predictions:
        return "\n".join(out) + "\n"
    measured_kind = [p for p in g.predictions if not p.computed]
    measured, size, path, _ = recorded_measurements(g) if (solution and measured_kind) else ({}, None, None, None)
    out += ["", "[predictions]"]
    if measured_kind:
        out.append(_wrap_comment(f"Predict BEFORE you run `make bench`: each kernel's speed as a % of cuBLAS at "
                                 f"{g.PREDICTION_SIZE}³ on the GPU you will grade on. Within {g.PREDICTION_FACTOR:g}x "
                                 f"of the measurement scores."))
    if len(measured_kind) < len(g.predictions):
        tols = sorted({f"within {100 * p.rel_tol:g} % of the answer" if p.rel_tol else "exact"
                       for p in g.predictions if p.computed})
        out.append(_wrap_comment(f"Derive BEFORE you measure: each number below follows from the kernel's header and "
                                 f"the chapter's models. A prediction scores when it is {' / '.join(tols)}; a miss "
                                 f"is told neither the answer nor its direction."))
    if solution and path:
        out.append(f"# (the reference: the measurements of {Path(path).name} at {size}³)")
    for p in g.predictions:
        out.append(f"# {p.text}" + (f" ({p.unit})" if p.computed else ""))
        value = p.answer() if p.computed else measured.get(p.id)
        out.append(f"{p.id} = {_fmt(round(value, 6)) if solution and value is not None else json.dumps('TODO')}")
    return "\n".join(out) + "\n"
