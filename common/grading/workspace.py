"""`make workspace`: the student's workspace, generated from the lab's reference kernels (one source of truth).

    regions(text, name)               -> [Marker]: every BEGIN/END SOLUTION pair of a kernel file
    student_text(g, text, name)       -> the file with every region replaced by its TODO and stub
    generate(g, dest, solution=False, force=False, quiet=False) -> the files written
    answer_lines(g)                   -> {region id: the region's distinctive code lines}
    leaks(g, files)                   -> [(file, region id, lines found)]: a graded answer in the workspace
    copy_report(g, workspace)         -> a teacher's note when a submission repeats the reference regions

A region is marked in the reference kernel itself, one comment line each side:

    // BEGIN SOLUTION v4-inner-loop: per k, one Bs value b reused for the TM = 8 acc[i]
    ...the reference code...
    // END SOLUTION v4-inner-loop

The workspace has `// TODO(v4-inner-loop): <the same text>`, the Region's hint and its stub there.
It holds one .cu per code part, the lab's HEADERS (shared headers with regions of their own, cut
the same way), answers.toml (questions and predictions), a README, and under
given/ the lab's GIVEN rungs (parts.py: the ungraded rung before the first graded one, to read). It
never holds the answer to a graded region: a later rung that repeats an earlier part's code marks
that code as a region of its own (its stub a plain, working version, or nothing), and generate()
refuses a workspace in which leaks() finds the text of any region. With
solution=True the kernels are copied as they are and answers.toml is filled in from the models:
the reference workspace, which the grader's tests must score full marks.

A workspace is never overwritten: force=True moves the old one to <dest>.old/ first.
"""
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from ..errors import CourseError
from ..report import make_command

_BEGIN = re.compile(r"^(?P<indent>[ \t]*)(?P<c>//|#) BEGIN SOLUTION (?P<id>[a-z0-9][a-z0-9-]*): (?P<todo>.+?)\s*$")
_END = re.compile(r"^[ \t]*(//|#) END SOLUTION (?P<id>[a-z0-9][a-z0-9-]*)\s*$")   # `#`: a rules file (TOML)
_ANY = re.compile(r"\b(BEGIN|END) SOLUTION\b")


@dataclass
class Marker:
    id: str
    todo: str
    indent: str
    begin: int                # line index of the BEGIN line
    end: int                  # line index of the END line
    comment: str = "//"       # "#" in a rules file (TOML)


def regions(text, name="?"):
    """Every solution region of one file, in order. Raises CourseError on a malformed marker."""
    found, open_ = [], None
    for i, line in enumerate(text.split("\n")):
        b, e = _BEGIN.match(line), _END.match(line)
        if b:
            if open_:
                raise CourseError(f"{name}:{i + 1}: BEGIN SOLUTION {b['id']} inside region {open_.id}")
            open_ = Marker(b["id"], b["todo"], b["indent"], i, -1, b["c"])
        elif e:
            if not open_ or open_.id != e["id"]:
                raise CourseError(f"{name}:{i + 1}: END SOLUTION {e['id']} without its BEGIN")
            open_.end = i
            found.append(open_)
            open_ = None
        elif _ANY.search(line):
            raise CourseError(f"{name}:{i + 1}: a SOLUTION marker must be a whole comment line: "
                              "'// BEGIN SOLUTION <id>: <what goes here>' or '// END SOLUTION <id>'")
    if open_:
        raise CourseError(f"{name}: BEGIN SOLUTION {open_.id} is never closed")
    return found


def strip_markers(text):
    """The file without its SOLUTION marker lines (what the markers must not change)."""
    return "\n".join(l for l in text.split("\n") if not re.match(r"^\s*(//|#) (BEGIN|END) SOLUTION", l))


def student_text(g, text, name="?"):
    """The file with every region replaced by a TODO line, its hint and its stub (the lab's REGIONS)."""
    lines = text.split("\n")
    out, pos = [], 0
    for m in regions(text, name):
        if m.id not in g.regions:
            raise CourseError(f"{name}: region {m.id} is not in grading/parts.py REGIONS",
                              hint="add it there with its stub (what keeps the workspace compiling)")
        r = g.regions[m.id]
        out += lines[pos:m.begin]
        out.append(f"{m.indent}{m.comment} TODO({m.id}): {m.todo}")
        if r.hint:
            out.append(f"{m.indent}{m.comment}   {r.hint}")
        out += [f"{m.indent}{s}" for s in r.stub.split("\n") if s] if r.stub else []
        pos = m.end + 1
    out += lines[pos:]
    return "\n".join(out)


# What each check kind looks at, in a few words (a file's header; the README lists each check's `what`).
# A threshold is read from the grading data, never typed here: {pct} is g.SPEED_PCT, {threshold} the Check's.
_SHORT = {"registers": "ptxas's register report", "probe": "a probe program built with it, run on the host",
          "rules-sane": "a sane plan for every shape drawn when you are graded",
          "correct": "correctness", "race-free": "races (racecheck)",
          "fast": "speed (at least {pct} % of the reference's)",
          "bandwidth": "bandwidth (at least {threshold:g} % of a device copy's)",
          "bitwise": "the same bits, run after run", "bank-conflicts": "bank conflicts (ncu)",
          "rules-speed": "speed (at least {threshold:g} % of the course's rules')"}


def _short(g, c):
    return _SHORT.get(c.kind, "its SASS").format(pct=g.SPEED_PCT, threshold=c.threshold)


def _and(words):
    words = list(dict.fromkeys(words))
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def graded_text(g, parts):
    """What `make grade` checks of the files of `parts` (Part rows), here and on a GPU, from their checks:
    "here: it compiles, and its SASS; on a GPU: correctness and bandwidth (at least 75 % of ...)"."""
    checks = [c for p in parts for c in p.checks]
    here = (["it compiles"] if any(not p.rules for p in parts) else []) + \
        [_short(g, c) for c in checks if not c.needs_gpu]
    gpu = [_short(g, c) for c in checks if c.needs_gpu]
    return "; ".join(x for x in (f"here: {_and(here)}" if here else "", f"on a GPU: {_and(gpu)}" if gpu else "") if x)


def _parts_of(g, src):
    """The parts whose answer is in file `src` (a kernel, a shared header, a rules file)."""
    files = g.kernel_files()
    ids = {m.id for m in regions(src.read_text(), src.name)}
    names = {name for name, f in files.items() if Path(f).name == src.name} | \
        {g.regions[i].part for i in ids if i in g.regions}
    return [p for p in g.parts if p.name in names]


def _header(g, src, solution, commit=None):
    kind = "the REFERENCE solution (for the grader's tests)" if solution else "your copy: fill in every TODO"
    c, where = ("#", src.name) if src.suffix == ".toml" else ("//", f"kernels/{src.name}")   # a rules file: TOML
    return (f"{c} {g.lab.title.split(':')[0]} workspace, generated by `make workspace` from {where}: "
            f"{kind}.\n"
            f"{c} Grade it with `make grade` ({graded_text(g, _parts_of(g, src))}).\n")


# ---------------------------------------------------------------------------------------------
# No answer in the workspace
# ---------------------------------------------------------------------------------------------

_TRIVIAL = re.compile(r"^(#pragma.*|[{}();,]*|else|else\{|return;|break;|continue;|\}else\{?|"
                      r"for\(.*\)\{?|if\(.*\)\{?|\}\s*//.*|__syncthreads\(\);|"
                      r"(const)?(float|int|unsigned|uint32_t|float2|float4)[\w\[\],]*;)$")   # a barrier, a bare declaration


def _norm(line):
    """A code line without its // comment and without whitespace ('' for a comment line)."""
    code = line.split("//", 1)[0]
    return re.sub(r"\s+", "", code)


def answer_lines(g):
    """{region id: [normalized code lines]} that only the region has: not a comment, not a brace,
    pragma or bare loop header, not a line of its kernel file outside every region (context the
    workspace keeps anyway), not a line of any stub (what the workspace puts there instead)."""
    stubs = {_norm(s) for r in g.regions.values() for s in r.stub.split("\n")}
    out = {}
    for src in [*g.kernel_files().values(), *g.header_files()]:
        text = src.read_text()
        lines = text.split("\n")
        marks = regions(text, src.name)
        inside = set()
        for m in marks:
            inside |= set(range(m.begin, m.end + 1))
        context = {_norm(l) for i, l in enumerate(lines) if i not in inside}
        for m in marks:
            body = [_norm(l) for l in lines[m.begin + 1:m.end]]
            out[m.id] = [l for l in dict.fromkeys(body) if len(l) >= 10 and not _TRIVIAL.match(l)
                         and l not in context and l not in stubs]
    return out


def leaks(g, files):
    """[(file, region id, [lines])] for every file that holds at least half the distinctive lines of
    a region (answer_lines), or one line of a region that has one or two."""
    answers = answer_lines(g)
    found = []
    for f in files:
        have = {_norm(l) for l in Path(f).read_text().split("\n")}
        for rid, lines in answers.items():
            hit = [l for l in lines if l in have]
            if lines and hit and len(hit) * 2 >= min(len(lines), max(2, len(lines))):
                found.append((Path(f), rid, hit))
    return found


COPY_SHARE, COPY_MIN_LINES = 0.8, 6     # copy_report: what share of how many distinctive lines is a copy


def copy_report(g, workspace):
    """A teacher's note, or "": the workspace's graded regions hold COPY_SHARE or more of the distinctive
    lines of the lab's reference regions (answer_lines), COPY_MIN_LINES of them at least, line for line.
    Nothing is deducted: a one-line answer is rightly the same as the reference's (so fewer lines
    than COPY_MIN_LINES tell nothing), and the reference kernels are the lab's reading; over many
    lines, someone who wrote the code has lines of their own, and a copy has none."""
    answers = answer_lines(g)
    have = set()
    for f in sorted(Path(workspace).rglob("*")):
        if f.is_file() and f.suffix in (".cu", ".cuh", ".toml") and "given" not in f.relative_to(workspace).parts:
            have |= {_norm(l) for l in f.read_bytes().decode("utf-8", "replace").split("\n")}
    total = sum(len(lines) for lines in answers.values())
    hit = sum(1 for lines in answers.values() for l in lines if l in have)
    if total < COPY_MIN_LINES or hit < COPY_SHARE * total:
        return ""
    whole = [rid for rid, lines in answers.items() if lines and all(l in have for l in lines)]
    return (f"its graded regions repeat {hit} of the {total} distinctive lines of the lab's reference kernels "
            f"line for line ({len(whole)} of {len(answers)} regions whole): copied? (no points deducted; read it)")


def generate(g, dest=None, solution=False, force=False, quiet=False):
    """Write the workspace into `dest` (default: the lab's workspace/). Refuses to overwrite an
    existing one unless `force`; then the old one is kept, never deleted: moved to <dest>.old, or
    <dest>.old-2, -3, ... when that is taken (a second FORCE=1 must not lose the first one's work).
    Returns the files written."""
    from . import answers as answers_mod
    dest = Path(dest) if dest else g.lab.dir / "workspace"
    kept = None
    if dest.exists() and any(dest.iterdir()):
        if not force:
            raise CourseError(f"{dest} exists already: it may hold your work, so it is left alone",
                              hint=f"grade it with `{make_command('grade')}`; to start again, "
                                   f"`{make_command('workspace FORCE=1')}` "
                                   f"(the old one is kept: moved to {dest.name}.old/, or {dest.name}.old-2/ ... "
                                   "when that is taken)")
        kept = _free_old_name(dest)
        dest.rename(kept)
    dest.mkdir(parents=True, exist_ok=True)
    commit = None
    written, covered = [], set()
    for name, src in g.kernel_files().items():
        text = src.read_text()
        covered |= {m.id for m in regions(text, src.name)}
        body = text if solution else student_text(g, text, src.name)
        out = dest / src.name
        out.write_text(_header(g, src, solution, commit) + body)
        written.append(out)
    for src in g.header_files():          # shared headers with regions: cut as the kernels are
        text = src.read_text()
        covered |= {m.id for m in regions(text, src.name)}
        out = dest / src.name
        out.write_text(_header(g, src, solution, commit) + (text if solution else student_text(g, text, src.name)))
        written.append(out)
    missing = set(g.regions) - covered
    if missing:
        raise CourseError(f"regions in grading/parts.py with no marker in the kernels: {', '.join(sorted(missing))}")
    for name in g.given:
        src = Path(g.lab.kernel(name).path)
        out = dest / "given" / src.name
        out.parent.mkdir(exist_ok=True)
        out.write_text(f"// Given, not graded: {name}, the rung before the first graded one (read it, build on it).\n"
                       + src.read_text())
        written.append(out)
    if not solution:
        found = leaks(g, written)
        if found:
            shutil.rmtree(dest)
            raise CourseError("the workspace would hold graded answers: " + "; ".join(
                f"{f.name} has region {rid} ({len(lines)} line(s), e.g. {lines[0]!r})" for f, rid, lines in found),
                hint="mark that code as a region of the rung that repeats it too (grading/parts.py REGIONS)")
    if g.questions or g.predictions:
        ans = dest / "answers.toml"
        ans.write_text(answers_mod.template(g, solution=solution))
        written.append(ans)
    readme = dest / "README.md"
    readme.write_text(_readme(g, solution))
    written.append(readme)
    if not quiet:
        print(f"workspace: {len(written)} files in {dest.resolve()}" + (" (the reference solution)" if solution else ""))
        for f in written:
            print(f"  {f.relative_to(dest)}")
        if kept:
            print(f"your previous workspace is kept in {kept.resolve()}")
        if not solution:
            own = dest.resolve() == (g.lab.dir / "workspace").resolve()
            print("next: fill in the TODOs" + (" and answers.toml" if g.questions or g.predictions else "")
                  + f", then `{make_command('grade' + ('' if own else f' WORKSPACE={dest.resolve()}'))}`")
    return written


def _free_old_name(dest):
    """Where a replaced workspace goes: <dest>.old, else the first free <dest>.old-N (N = 2, 3, ...)."""
    old = dest.with_name(dest.name + ".old")
    n = 2
    while old.exists():
        old = dest.with_name(f"{dest.name}.old-{n}")
        n += 1
    return old


def _checks_table(g):
    """Each part's checks, here and on a GPU, with points; then what each check asks (its `what`, the
    thresholds of the grading data), one line per check of a name and meaning."""
    rows = ["| part | here (no GPU) | on a GPU |", "| --- | --- | --- |"]
    said = {}
    for p in g.parts:
        if p.name in ("questions", "predictions"):
            continue
        cell = lambda gpu: ", ".join(f"`{c.name}` ({c.points})" for c in p.checks if c.needs_gpu == gpu) or "-"
        rows.append(f"| {p.name} | {cell(False)} | {cell(True)} |")
        for c in p.checks:
            said.setdefault((c.name, c.what), []).append(p.name)
    lines = [f"- `{name}` ({', '.join(ps)}): {what}" for (name, what), ps in said.items()]
    req = {}
    for p in g.parts:
        for c in p.checks:
            if c.requires:
                req.setdefault((c.name, c.requires), []).append(p.name)
    needs = [f"`{c}` needs `{r}` ({', '.join(ps)})" for (c, r), ps in req.items()]
    return "\n".join(rows), "\n".join(lines), needs


def _readme(g, solution):
    files = g.kernel_files()
    rows = [f"| {p.name} | `{files[p.name].name}` | {p.title} | {p.max_points} |" for p in g.code_parts]
    rows += [f"| {p.name} | `answers.toml` [{p.name}] | {p.title} | {p.max_points} |"
             for p in g.parts if p.name in ("questions", "predictions")]
    rows = "\n".join(rows)
    names = ", ".join(f"`{h}`" for h in g.headers)
    shared = (f"\n{names}: the header the kernels include, with TODOs of its own (the parts above say which): "
              "keep it beside them, they are compiled against your copy." if g.headers else "")
    table, meanings, needs = _checks_table(g)
    read = [f"`{Path(f).name}`" for f in files.values()] + [f"`{h}`" for h in g.headers] + \
        (["`answers.toml`"] if g.questions or g.predictions else [])
    rules = [f"`{Path(files[p.name]).name}`" for p in g.code_parts if p.rules]
    kernels = [f"`{Path(files[p.name]).name}`" for p in g.code_parts if not p.rules]
    how_rules = (f"\n{_and(rules)} {'is' if len(rules) == 1 else 'are'} read as data (TOML), never run."
                 if rules else "")
    needs_text = (f"\nA check that needs another fails while that one does not pass ({'; '.join(needs)})."
                  if needs else "")
    given = "".join(f"\n`given/{Path(g.lab.kernel(k).path).name}` is {k}, the rung before the first graded one, whole: "
                    "read it, build on it (it is not graded)." for k in g.given)
    return f"""# {g.lab.title.split(':')[0]} workspace{' (reference solution)' if solution else ''}

Fill in every `TODO(...)` in the kernels below, answer the questions in `answers.toml`, predict
before you measure, then run `make grade` in the lab folder (or `make grade WORKSPACE=path`).

| part | file | what you write | points |
| --- | --- | --- | --- |
{rows}

Until you fill a region in, its kernel still compiles (the placeholder computes nothing), so the
grader can tell you "wrong result" rather than "does not compile". Where a later rung repeats an
earlier one's code, its TODO says so: bring your own earlier work.{given}{shared}
A question with a `<id>_why` key in `answers.toml` wants your reason in a sentence too: the point
needs the answer and a reason that names what decides it.

How it is graded (the lab's grading/README.md says more): {_and(kernels)} {'is' if len(kernels) == 1 else 'are'}
compiled into the grader's own build folder and launched with the reference kernel's launch shape
(from the lab's table, `lab.py`).{how_rules}
The checks of each part, with their points:

{table}

{meanings}

Without a GPU the GPU checks say "needs a GPU": neither passed nor failed, and not in the score
graded here.{needs_text}
What is read: {_and(read)}; nothing else of the workspace.
"""
