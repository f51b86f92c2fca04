"""Unified diffs, applied in pure Python (no `patch` binary): how a known-wrong kernel is kept.

    parse(text, name)                 -> Patch: the files it names (--- / +++), its hunks, its preamble
    apply(patch, original, name)      -> the patched text; PatchError when a hunk does not match
    apply_file(patch_file, reference, dest) -> dest, written: reference with the patch applied
    PatchError                        a CourseError that names the patch, the hunk and the line

A patch is what `diff -u kernels/v4_1d_blocktiling.cu wrong.cu` prints, with any text before the
first `---` line kept as its description. A hunk applies where its context and removed lines match
the reference exactly: at the line it names, or, when the reference gained or lost lines above it,
at the nearest place they match (as `patch` does without fuzz). Nothing else is guessed: a reference
change that touches a hunk's lines fails loudly, naming the patch, so the known-wrong kernel is
remade (`diff -u`) instead of silently testing something else.
"""
import re
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import CourseError

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


class PatchError(CourseError):
    pass


@dataclass
class Hunk:
    old_start: int            # 1-based line of the reference where it starts
    old_count: int
    new_start: int
    new_count: int
    lines: list = field(default_factory=list)    # (" " | "-" | "+", text)
    header: str = ""

    @property
    def old(self):
        return [t for op, t in self.lines if op in " -"]

    @property
    def new(self):
        return [t for op, t in self.lines if op in " +"]


@dataclass
class Patch:
    name: str
    old_path: str
    new_path: str
    hunks: list
    preamble: str = ""

    @property
    def added(self):
        return [t for h in self.hunks for op, t in h.lines if op == "+"]

    @property
    def removed(self):
        return [t for h in self.hunks for op, t in h.lines if op == "-"]


def _path(line):
    return line[4:].split("\t")[0].strip()


def parse(text, name="?"):
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    i, pre = 0, []
    while i < len(lines) and not lines[i].startswith("--- "):
        pre.append(lines[i])
        i += 1
    if i + 1 >= len(lines) or not lines[i + 1].startswith("+++ "):
        raise PatchError(f"{name} is not a unified diff: no '--- file' and '+++ file' lines",
                         hint="make it with `diff -u kernels/<reference>.cu <wrong>.cu > wrong/<name>.patch`")
    old_path, new_path = _path(lines[i]), _path(lines[i + 1])
    i += 2
    hunks = []
    while i < len(lines):
        line = lines[i]
        m = _HUNK.match(line)
        if not m:
            if line.startswith("--- "):
                raise PatchError(f"{name}: a patch of more than one file", hint="one patch per known-wrong kernel")
            raise PatchError(f"{name}, line {i + 1}: expected a hunk ('@@ -l,n +l,n @@'), got {line[:60]!r}")
        h = Hunk(int(m[1]), int(m[2] if m[2] is not None else 1), int(m[3]), int(m[4] if m[4] is not None else 1),
                 header=line)
        i += 1
        old_n = new_n = 0
        while i < len(lines) and (old_n < h.old_count or new_n < h.new_count):
            body = lines[i]
            if body.startswith("\\"):              # "\ No newline at end of file"
                i += 1
                continue
            op, t = (body[0], body[1:]) if body else (" ", "")    # an editor may strip a blank context line
            if op not in " -+":
                raise PatchError(f"{name}, line {i + 1}: {body[:60]!r} is not a context, removed or added line "
                                 f"of hunk {h.header}")
            h.lines.append((op, t))
            old_n += op in " -"
            new_n += op in " +"
            i += 1
        if old_n != h.old_count or new_n != h.new_count:
            raise PatchError(f"{name}: hunk {h.header} is cut short ({old_n} of {h.old_count} old lines, "
                             f"{new_n} of {h.new_count} new)")
        while i < len(lines) and lines[i].startswith("\\"):
            i += 1
        hunks.append(h)
    if not hunks:
        raise PatchError(f"{name} changes nothing: it has no hunk")
    return Patch(name, old_path, new_path, hunks, "\n".join(pre).strip())


def _find(lines, want, expected, lo):
    """The index nearest to `expected` (at or after `lo`) where `want` matches, or None."""
    n = len(want)
    for delta in range(0, len(lines) + 1):
        for pos in ((expected,) if delta == 0 else (expected - delta, expected + delta)):
            if lo <= pos <= len(lines) - n and lines[pos:pos + n] == want:
                return pos
        if expected - delta < lo and expected + delta > len(lines) - n:
            break
    return None


def apply(patch, original, name=None):
    """The text of `original` with `patch` (a Patch or its text) applied."""
    if isinstance(patch, str):
        patch = parse(patch, name or "?")
    name = name or patch.name
    lines = original.split("\n")
    out, pos, offset = [], 0, 0
    for n, h in enumerate(patch.hunks, 1):
        expected = h.old_start - 1 + offset if h.old_count else h.old_start + offset
        at = _find(lines, h.old, max(expected, pos), pos)
        if at is None:
            raise PatchError(f"{name}: hunk {n} of {len(patch.hunks)} ({h.header}) does not apply to "
                             f"{Path(patch.old_path).name}: {_mismatch(lines, h, expected)}",
                             hint=f"the reference kernel changed under the known-wrong kernel {name}: make the "
                                  f"bug again in a copy of the reference and regenerate the patch with "
                                  f"`diff -u kernels/{Path(patch.old_path).name} <copy> > grading/wrong/{name}`")
        out += lines[pos:at]
        out += h.new
        pos = at + len(h.old)
        offset = at - (h.old_start - 1)
    out += lines[pos:]
    return "\n".join(out)


def _mismatch(lines, h, expected):
    """Where the hunk and the reference part, in words."""
    for j, want in enumerate(h.old):
        i = expected + j
        got = lines[i] if 0 <= i < len(lines) else None
        if got != want:
            return (f"at line {i + 1} the patch expects {want.strip()[:70]!r}, the reference has "
                    + (f"{got.strip()[:70]!r}" if got is not None else "no such line")
                    + ", and its lines match nowhere else")
    return "its lines match nowhere after the previous hunk"


def apply_file(patch_file, reference, dest):
    """Write `dest`: the reference file with the patch applied. The patch must name the reference
    (its --- line), so that a patch is never applied to another kernel."""
    patch_file, reference, dest = Path(patch_file), Path(reference), Path(dest)
    if not patch_file.exists():
        raise PatchError(f"the known-wrong kernel {patch_file.name} is missing from {patch_file.parent}")
    p = parse(patch_file.read_text(), patch_file.name)
    if Path(p.old_path).name != reference.name:
        raise PatchError(f"{patch_file.name} is a patch of {Path(p.old_path).name}, but its part's kernel is "
                         f"{reference.name}", hint="grade it as the part whose kernel it changes (parts.py WRONG)")
    text = apply(p, reference.read_text(), patch_file.name)
    dest.parent.mkdir(parents=True, exist_ok=True)
    if not dest.exists() or dest.read_text() != text:      # unchanged: keep its mtime (no rebuild)
        dest.write_text(text)
    return dest
