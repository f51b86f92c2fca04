"""README tables generated from a lab's committed records, never typed: a README marks where a
table goes and which record it comes from, and this module writes it there or checks it.

    blocks(text)                    -> [Block]: the generated blocks of a README, each with its spec
    parse_spec(line)                -> {"kind": "ladder"|"sweep", "record": glob, ...}: one marker's spec
    committed(directory, pattern)   -> the records git tracks (a student's own bench never counts)
    render(lab, spec)               -> markdown: the table the spec asks for, from the newest committed record
    ladder_markdown(record, ladder, rows, sizes)   the ladder table of one record (no lab needed)
    sweep_markdown(record, ladder, rows, shapes)   % of cuBLAS per kernel at some shapes of a sweep
    figures(lab, spec)              -> (record, {kernel: {size or shape: % of cuBLAS}}): what a block shows,
                                       for a lab's tests to hold the sheet's sentences against its table
    Claim(sentence, spec, at, holds)     a sentence of the sheet that compares rungs, and what must hold
    contradiction(lab, claim)       -> None, or what to fix: the sentence is gone, or the block's record
                                       contradicts it (its figures named)
    furthest(lab, spec)             -> one line: the furthest rung of a block's record (no yardstick,
                                       no tuned build), or a sweep's kernel with the best worst case
    labs_markdown(entries)          the top-level README's table of labs: [(link, title, lines)]
    stale(lab, readme=None)         -> [(spec line, what the README has, what the record gives)]
    refresh(lab, readme=None)       rewrites the README's blocks from the records; returns how many changed
    (lab None: the top-level README, whose `labs` block lists every lab with its furthest rungs)

A block in a README (the lines between the markers are generated; edit the marker, not the table):

    <!-- generated: ladder record=lab07-bench_*.json ladder=fp32 -->
    ...
    <!-- end generated -->

Spec words: `labs` (the top-level README only: each lab, its title, and for each block of its README
the furthest rung, so that what the table claims is what the records hold), `ladder` (a bench record: each rung, the idea it adds and its file from the lab's table,
its % of cuBLAS at each size), or `sweep` (a shape-sweep record: % of cuBLAS per kernel at the shapes
of one `set`, optionally only those with `n=N`); `record=` a glob in the lab's results/ (the newest
committed one by its recorded date is read); `ladder=`, `sizes=1024,4096` (the table's columns: the newest
record that times the ladder at all of them is read), `set=`, `n=`.

    python -m common.readme_tables [--lab labs/<lab>] [--check]     (no --lab: every lab and the top README)
"""
import argparse
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from . import records
from .errors import CourseError

BEGIN = re.compile(r"^<!-- generated: (?P<spec>.*?) -->\s*$")
END = "<!-- end generated -->"
ROOT = Path(__file__).resolve().parents[1]   # the course's checkout: its README.md and labs/
TUNED = " (tuned)"                  # how bench names a tuned build (common/targets.py)


@dataclass
class Block:
    spec: str           # the marker's text, e.g. "ladder record=lab07-bench_*.json ladder=fp32"
    body: str           # the lines between the markers, as the README has them
    start: int          # index of the first body line
    end: int            # index of the END line


def parse_spec(spec):
    words = spec.split()
    if not words or words[0] not in ("ladder", "sweep", "labs"):
        raise CourseError(f"README marker '{spec}': the first word must be 'ladder', 'sweep' or 'labs'",
                          "write e.g. <!-- generated: ladder record=lab07-bench_*.json ladder=fp32 -->")
    out = {"kind": words[0]}
    for w in words[1:]:
        if "=" not in w:
            raise CourseError(f"README marker '{spec}': '{w}' is not key=value", "e.g. ladder=fp32")
        k, v = w.split("=", 1)
        out[k] = v
    if "record" not in out and out["kind"] != "labs":
        raise CourseError(f"README marker '{spec}' names no record", "add record=<glob in the lab's results/>")
    return out


def blocks(text):
    lines = text.split("\n")
    found, i = [], 0
    while i < len(lines):
        m = BEGIN.match(lines[i])
        if m:
            j = i + 1
            while j < len(lines) and lines[j].strip() != END:
                if BEGIN.match(lines[j]):
                    raise CourseError(f"README: the block '{m['spec']}' is not closed before the next one",
                                      f"add a line '{END}'")
                j += 1
            if j == len(lines):
                raise CourseError(f"README: the block '{m['spec']}' has no '{END}' line", f"add a line '{END}'")
            found.append(Block(m["spec"], "\n".join(lines[i + 1:j]), i + 1, j))
            i = j
        i += 1
    return found


# --- what a table says ---------------------------------------------------------------------------

def _pct(x):
    return "–" if x is None else f"{x:.1f} %"


def _date(record):
    return (record.get("run", {}).get("date") or "?")[:10]


def _gpu(record):
    g = record.get("gpu", {})
    return f"{g.get('name', '?')} ({g.get('arch', '?')})"


def _pct_at(record, ladder, kernel, size):
    r = records.result(record, ladder, kernel, size)
    return None if r is None else r.get("pct_of_cublas")


def ladder_markdown(record, ladder, rows, sizes):
    """rows: [(kernel name in the record, the idea it adds, file or "", yardstick?)]. One line that
    says what was measured where, then the table: % of cuBLAS (the record's baseline) at each size."""
    info = (record.get("ladders") or {}).get(ladder) or {}
    mode = info.get("baseline_mode") or "cuBLAS"
    head = (f"Measured on an {_gpu(record)} on {_date(record)}, % of {mode}, at M = N = K "
            f"(the newest committed record of `make bench` in `results/`):")
    cols = "| rung | the idea it adds | file | " + " | ".join(f"{n}³" for n in sizes) + " |"
    rule = "| --- | --- | --- | " + " | ".join("---:" for _ in sizes) + " |"
    lines = [head, "", cols, rule]
    for name, idea, path, yardstick in rows:
        label = f"{name} (yardstick)" if yardstick else name
        where = f"`{path}`" if path else "–"
        lines.append(f"| {label} | {idea} | {where} | "
                     + " | ".join(_pct(_pct_at(record, ladder, name, n)) for n in sizes) + " |")
    return "\n".join(lines)


def sweep_markdown(record, ladder, rows, shapes):
    """rows: [(kernel name, idea, file)]; shapes: ["1x8192x8192", ...]. The best % of cuBLAS each
    kernel reached at each shape (its variants and builds are rows of their own in the record)."""
    info = (record.get("ladders") or {}).get(ladder) or {}
    mode = info.get("baseline_mode") or "cuBLAS"
    copy = (record.get("copy") or {}).get("gbs")
    head = (f"Measured on an {_gpu(record)} on {_date(record)}, % of {mode} at M x N x K "
            f"(the newest committed shape sweep in `results/`; – : not timed at that shape)"
            + (f". A device-to-device copy in the same run: {copy:.0f} GB/s, its read and its write counted:"
               if copy else ":"))
    lines = [head, "", "| kernel | what it is | file | " + " | ".join(shapes) + " |",
             "| --- | --- | --- | " + " | ".join("---:" for _ in shapes) + " |"]
    for name, idea, path in rows:
        vals = []
        for s in shapes:
            got = [r.get("pct_of_cublas") for r in record["results"]
                   if r["ladder"] == ladder and r["shape"] == s and r["kernel"] == name
                   and r.get("pct_of_cublas") is not None]
            vals.append(_pct(max(got) if got else None))
        lines.append(f"| {name} | {idea} | {f'`{path}`' if path else '–'} | " + " | ".join(vals) + " |")
    return "\n".join(lines)


# --- from the lab's table and records --------------------------------------------------------------

def committed(directory, pattern):
    """The files of `directory` matching `pattern` that git tracks: a record a student's own `make bench`
    wrote beside the course's never stands in for the course's. Every match where the folder is no git
    checkout (an unpacked copy)."""
    import subprocess
    files = sorted(Path(directory).glob(pattern))
    try:
        out = subprocess.run(["git", "-C", str(directory), "ls-files", "-z", "--", pattern],
                             capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return files
    if out.returncode != 0:
        return files
    tracked = {Path(directory, name).resolve() for name in out.stdout.split("\0") if name}
    return [f for f in files if f.resolve() in tracked]


def _times(record, ladder, sizes):
    """Whether the record times `ladder` (any ladder: None) at every one of `sizes`."""
    have = {r.get("size") for r in record["results"] if ladder is None or r["ladder"] == ladder}
    return set(sizes) <= have


def _newest(lab, pattern, ladder=None, sizes=None):
    """The newest committed record by its recorded date (records.newest's order, on committed files);
    with `ladder`, the newest that times that ladder (`make bench LADDER=tf32` writes lab07a-bench-tf32_*,
    a whole `make bench` lab07a-bench_*: a marker's glob may take both); with `sizes`, the newest that
    times it at each of them (a later run of one small size does not replace the table's columns)."""
    import json
    found = [(json.loads(f.read_text()), f) for f in committed(lab.results_dir, pattern)]
    if ladder is not None:
        found = [(r, f) for r, f in found if ladder in records.ladders(r)]
    if sizes:
        found = [(r, f) for r, f in found if _times(r, ladder, sizes)]
    found.sort(key=lambda rp: (rp[0].get("run", {}).get("date", ""), rp[1].stat().st_mtime))
    record = found[-1][0] if found else None
    if record is None:
        raise CourseError(f"{lab.name}: no record matches results/{pattern}"
                          + (f" with {ladder or 'a ladder'} timed at {', '.join(map(str, sizes))}" if sizes else ""),
                          "run the target that writes it on a GPU (make bench), or fix the README's marker")
    return record


def _file(lab, kernel):
    if not kernel.path:
        return f"kernels/{kernel.source}"
    return os.path.relpath(kernel.path, lab.dir).replace(os.sep, "/")


def _row_facts(lab, name):
    """(the idea it adds, its file) of a kernel the record names: the lab's row (a tuned build
    "v8[...]" by its base name), or a library call."""
    if name.endswith(TUNED):
        k = lab.kernels.get(name[:-len(TUNED)])
        if k is not None:
            return f"{k.name} with the build `make tune` chose for this GPU", _file(lab, k), k.yardstick
    k = lab.kernels.get(name.split("[")[0])
    if k is not None:
        return k.title, _file(lab, k), k.yardstick
    if name in (lab.option("DISPATCHERS", {}) or {}):
        return "the dispatcher: the kernel its rules pick for the shape", "dispatch.py", False
    if name.startswith(records.BASELINE):
        return "a library call timed in the same run, not a rung", "", False
    return "not in the lab's table", "", False


def _sizes(spec):
    """The sizes a block's `sizes=` names, as ints; None where it names none."""
    if "sizes" not in spec:
        return None
    try:
        return [int(x) for x in spec["sizes"].split(",")]
    except ValueError:
        raise CourseError(f"README marker: sizes={spec['sizes']} is not a list of whole numbers",
                          "write e.g. sizes=2048,4096,8192") from None


def _sweep_shapes(record, s):
    """The shapes a sweep block shows: those of its ladder in its `set` (and with N = `n`), in record order."""
    shapes = []
    for r in record["results"]:
        if r["ladder"] == s["ladder"] and r.get("set") == s.get("set", r.get("set")) and r["shape"] not in shapes:
            if "n" not in s or r["N"] == int(s["n"]):
                shapes.append(r["shape"])
    return shapes


def render(lab, spec):
    """The block's table; a spec that names no ladder gives one table per ladder of the record, so a
    ladder added to the lab shows up with the record that first times it."""
    s = parse_spec(spec) if isinstance(spec, str) else spec
    record = _newest(lab, s["record"], s.get("ladder"), _sizes(s))
    if "ladder" not in s:
        return "\n\n".join(render(lab, {**s, "ladder": ladder}) for ladder in records.ladders(record))
    ladder = s["ladder"]
    if s["kind"] == "ladder":
        sizes = _sizes(s) or records.sizes(record)
        rows = []
        for name in records.kernels(record, ladder):
            if name == records.BASELINE:
                continue
            idea, path, yardstick = _row_facts(lab, name)
            rows.append((name, idea, path, yardstick))
        return ladder_markdown(record, ladder, rows, sizes)
    shapes = _sweep_shapes(record, s)
    names = []
    for r in record["results"]:
        if r["ladder"] == ladder and r["shape"] in shapes and r["kernel"] != records.BASELINE \
                and "[" not in r["kernel"] and r["kernel"] not in names:
            names.append(r["kernel"])
    rows = [(n, *_row_facts(lab, n)[:2]) for n in names]
    return sweep_markdown(record, ladder, rows, shapes)


def figures(lab, spec):
    """The record a block's marker picks and the numbers its table shows: % of cuBLAS by kernel and size
    (a ladder block) or by kernel and shape, the best of the kernel's rows (a sweep block). A sentence of
    the sheet that compares rungs can be checked against them."""
    s = parse_spec(spec) if isinstance(spec, str) else spec
    if s["kind"] not in ("ladder", "sweep") or "ladder" not in s:
        raise CourseError(f"README marker '{spec}': figures() reads a ladder or sweep block that names its ladder",
                          "pass a spec such as 'ladder record=<lab>-bench_*.json ladder=fp32'")
    record = _newest(lab, s["record"], s["ladder"], _sizes(s))
    out = {}
    if s["kind"] == "sweep":
        shapes = _sweep_shapes(record, s)
        for r in record["results"]:
            if r["ladder"] == s["ladder"] and r["shape"] in shapes and r.get("pct_of_cublas") is not None \
                    and "[" not in r["kernel"]:          # a build (splitk[splits=1]) is no row of the table
                best = out.setdefault(r["kernel"], {})
                best[r["shape"]] = max(best.get(r["shape"], r["pct_of_cublas"]), r["pct_of_cublas"])
        return record, out
    for r in record["results"]:
        if r["ladder"] == s["ladder"] and r.get("pct_of_cublas") is not None:
            out.setdefault(r["kernel"], {}).setdefault(r["size"], r["pct_of_cublas"])   # the first, as the table
    return record, out


@dataclass
class Claim:
    """A sentence of a lab sheet that compares rungs (written by hand, beside a generated table), the
    block it speaks of, the sizes (a ladder) or shapes (a sweep) it speaks of, and what must hold:
    holds(fig, at) -> bool on figures()."""
    sentence: str
    spec: str
    at: tuple
    holds: object

    @property
    def name(self):
        return self.holds.__name__.strip("_")


def contradiction(lab, claim, readme=None):
    """None where the sheet still says the claim's sentence and the block's record bears it out; else
    what to do: a new record that reorders two rungs changes the table, not the sentence beside it."""
    path = _readme(lab, readme)
    if claim.sentence not in re.sub(r"\s+", " ", path.read_text()):
        return (f"{path.parent.name}/README.md no longer says \"{claim.sentence}\": where it was rewritten, "
                f"update the lab's CLAIMS (tests/test_readme_claims.py) with the new sentence and what it claims")
    record, fig = figures(lab, claim.spec)
    if claim.holds(fig, claim.at):
        return None
    shown = {k: {n: round(v[n], 1) for n in claim.at if n in v} for k, v in fig.items()}
    return (f"{path.parent.name}/README.md says \"{claim.sentence}\", but its table's record ({_gpu(record)}, "
            f"{_date(record)}) has {shown}: rewrite the sentence to what the record shows")


# --- the top-level README: every lab, and how far its ladders went ----------------------------------

def _is_rung(lab, name):
    if name.startswith(records.BASELINE) or "[" in name or name.endswith(TUNED):
        return False
    k = lab.kernels.get(name)
    return k is None or not k.yardstick


def furthest(lab, spec):
    """One line that says how far a README block's record went: the ladder's furthest rung at the
    largest size, or, for a sweep, the kernel whose worst % of cuBLAS over the block's shapes is best."""
    s = parse_spec(spec) if isinstance(spec, str) else spec
    record = _newest(lab, s["record"], s.get("ladder"), _sizes(s))
    if "ladder" not in s:
        return "<br>".join(furthest(lab, {**s, "ladder": ladder}) for ladder in records.ladders(record))
    ladder = s["ladder"]
    base = records.ladder_info(record, ladder, lab)["baseline"]
    gpu = record.get("gpu", {}).get("name", "?")
    if s["kind"] == "ladder":
        size = (_sizes(s) or records.sizes(record))[-1]
        rows = [r for r in record["results"] if r["ladder"] == ladder and r["size"] == size
                and _is_rung(lab, r["kernel"]) and r.get("pct_of_cublas") is not None]
        if not rows:
            return f"{ladder}: no rung recorded at {size}³"
        best = max(rows, key=lambda r: r["pct_of_cublas"])
        return f"{best['kernel']}: {best['pct_of_cublas']:.1f} % of {base} at {size}³ ({gpu})"
    table = render(lab, s).split("\n")
    shapes = [c.strip() for c in table[2].strip("|").split("|")[3:]]
    worst = {}
    for line in table[4:]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        vals = [float(v.split()[0]) for v in cells[3:] if v != "–"]
        if len(vals) == len(shapes):
            worst[cells[0]] = min(vals)
    if not worst:
        return f"{ladder}: no kernel timed at every shape"
    name = max(worst, key=worst.get)
    return f"{name}: at least {worst[name]:.1f} % of {base} at {_shapes_text(shapes)} ({gpu})"


def _shapes_text(shapes):
    """"M = 1, 4 of 1 x 8192 x 8192" when the shapes differ only in M, else them all."""
    parts = [sh.split("x", 1) for sh in shapes]
    if len(parts) > 1 and all(len(p) == 2 for p in parts) and len({p[1] for p in parts}) == 1:
        return f"M = {', '.join(p[0] for p in parts)} (M x {parts[0][1]})"
    return ", ".join(shapes)


def labs_markdown(entries):
    """entries: [(link, title, [lines])]: one row per lab."""
    lines = ["| lab | what it teaches | its furthest rungs, as recorded |", "| --- | --- | --- |"]
    for link, title, found in entries:
        name, _, what = title.partition(", ") if ":" not in title.split(",")[0] else (title, "", title)
        lines.append(f"| [{name}]({link}) | {what or title} | {'<br>'.join(found) or '–'} |")
    return "\n".join(lines)


def render_labs(root):
    from .lab import load
    entries = []
    for folder in sorted(p.parent for p in (root / "labs").glob("*/lab.py")):
        lab = load(folder)
        readme = folder / "README.md"
        specs = [b.spec for b in blocks(readme.read_text())] if readme.exists() else []
        entries.append((f"labs/{folder.name}/README.md", lab.title, [furthest(lab, sp) for sp in specs]))
    return labs_markdown(entries)


def _readme(lab, readme):
    if readme is not None:
        return readme
    return lab.dir / "README.md" if lab is not None else ROOT / "README.md"


def _render(lab, spec):
    return render_labs(ROOT) if parse_spec(spec)["kind"] == "labs" else render(lab, spec)


def stale(lab, readme=None):
    text = _readme(lab, readme).read_text()
    return [(b.spec, b.body, want) for b in blocks(text) if b.body != (want := _render(lab, b.spec))]


def refresh(lab, readme=None):
    path = _readme(lab, readme)
    lines = path.read_text().split("\n")
    changed = 0
    for b in reversed(blocks("\n".join(lines))):
        want = _render(lab, b.spec)
        if b.body != want:
            lines[b.start:b.end] = want.split("\n")
            changed += 1
    if changed:
        path.write_text("\n".join(lines))
    return changed


def main(argv=None):
    from .lab import load
    p = argparse.ArgumentParser(prog="python -m common.readme_tables", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--lab", action="append", help="a lab's folder (more than once for several; none: every lab "
                                                  "and the top-level README)")
    p.add_argument("--check", action="store_true", help="only say which tables differ from the records")
    a = p.parse_args(argv)
    labs = [load(f) for f in a.lab] if a.lab else \
        [load(p.parent) for p in sorted((ROOT / "labs").glob("*/lab.py"))] + [None]
    bad = 0
    for lab in labs:
        where = f"{lab.name}/README.md" if lab is not None else "README.md"
        if a.check:
            for spec, _, _ in stale(lab):
                print(f"STALE {where}: <!-- generated: {spec} -->")
                bad += 1
        else:
            print(f"{where}: {refresh(lab)} table(s) rewritten")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
