"""`make diff KERNEL=k6`: what one rung of a ladder changes, shown against the rung before it.

    previous_rung(lab, name) -> (previous row, this row, ladder): "previous" is the row before it in its
                                ladder, in the order of the lab's table (lab.py); a yardstick (a library's
                                kernel timed beside the ladder) is no rung and is skipped
    find_lab(name, labs)     -> the lab whose own table has a kernel `name` (make diff from the top)
    unified(old, new, ...)   -> lines of a unified diff with context, colored or plain
    side_by_side(old, new, width, ...) -> lines of the two files aligned in two columns, changes marked
    use_color(stream, choice) -> color on a terminal (not when piped, NO_COLOR set or TERM=dumb);
                                choice 'always' or 'never' decides instead
    diff(lab, args)          the target: a header naming both rungs and their files, then the diff

A rung's file is read whole, top to bottom, by a student; the diff is how the next one reads: only
what changed, with a few lines around it. A rung whose body lives in a header of its own beside it
(`#include "v8_pipelined.cuh"`: another lab includes the same body) is read with that header in place
of the include line, so the diff shows the rung's code, not its move into a header.
"""
import difflib
import os
import re
import shutil
import sys
from pathlib import Path

from .errors import CourseError

RED, GREEN, CYAN, BOLD, RESET = "\033[31m", "\033[32m", "\033[36m", "\033[1m", "\033[0m"


_LOCAL_HEADER = re.compile(r'^\s*#\s*include\s+"([^"/]+\.cuh)"')


def rung_lines(path):
    """The rung's source as a student reads it: its own headers (a quoted .cuh beside it) inlined once,
    each between marker comments."""
    path, out, seen = Path(path), [], set()
    for line in path.read_text().splitlines():
        m = _LOCAL_HEADER.match(line)
        header = path.parent / m.group(1) if m else None
        if header is not None and header.is_file() and header not in seen:
            seen.add(header)
            out.append(f"// ---- {header.name} (included here) ----")
            out += header.read_text().splitlines()
            out.append(f"// ---- end of {header.name} ----")
        else:
            out.append(line)
    return out


def _rungs(rows):
    return [k for k in rows if not k.yardstick]


def previous_rung(lab, name):
    """(previous row, this row, ladder name) for a rung of one of the lab's ladders."""
    found = [(ladder, rows) for ladder, rows in lab.ladders.items() if any(k.name == name for k in rows)]
    if not found:
        raise CourseError(f"{lab.name} has no kernel {name!r}",
                          hint="KERNEL= one of " + ", ".join(k.name for rows in lab.ladders.values() for k in _rungs(rows)))
    ladder, rows = found[0]
    k = next(k for k in rows if k.name == name)
    if k.yardstick:
        raise CourseError(f"{name} is no rung of the {ladder} ladder: it is a library's kernel, timed beside it",
                          hint="KERNEL= one of " + ", ".join(r.name for r in _rungs(rows)))
    rungs = _rungs(rows)
    i = rungs.index(k)
    if i == 0:
        raise CourseError(f"{name} is the first rung of {lab.name}'s {ladder} ladder: there is none before it",
                          hint=f"read {Path(k.path).name} whole; `make diff KERNEL={rungs[1].name}` shows the next"
                               if len(rungs) > 1 else f"read {Path(k.path).name} whole")
    return rungs[i - 1], k, ladder


def find_lab(name, labs):
    """The lab whose own rows include `name` (a borrowed row belongs to the lab it comes from)."""
    owners = [lab for lab in labs if any(k.name == name for k in lab.own())]
    if not owners:
        raise CourseError(f"no lab has a kernel {name!r}",
                          hint="KERNEL= a rung of a lab's ladder, e.g. " +
                               ", ".join(r.name for lab in labs for rows in lab.ladders.values() for r in _rungs(rows)[1:2]))
    return owners[0]


def use_color(stream=None, choice="auto"):
    if choice in ("always", "never"):
        return choice == "always"
    stream = stream or sys.stdout
    return bool(getattr(stream, "isatty", lambda: False)()) and "NO_COLOR" not in os.environ \
        and os.environ.get("TERM") != "dumb"


def unified(old, new, old_name, new_name, context=3, color=False):
    """A unified diff of two lists of lines (no newlines), `context` lines around each change."""
    out = []
    for line in difflib.unified_diff(old, new, old_name, new_name, n=context, lineterm=""):
        if not color:
            out.append(line)
        elif line.startswith(("---", "+++")):
            out.append(BOLD + line + RESET)
        elif line.startswith("@@"):
            out.append(CYAN + line + RESET)
        elif line.startswith("-"):
            out.append(RED + line + RESET)
        elif line.startswith("+"):
            out.append(GREEN + line + RESET)
        else:
            out.append(line)
    return out


def _cell(text, width):
    text = text.expandtabs(4)
    return text[:width - 1] + "…" if len(text) > width else text.ljust(width)


def side_by_side(old, new, width=160, context=3, color=False):
    """The two files in two columns of (width - 3) / 2 characters, aligned line by line; the middle
    column marks a changed pair '|', a line only on the left '<', only on the right '>'. Unchanged
    stretches longer than 2 * context lines are folded to one '...' line with their line numbers."""
    col = max((width - 3) // 2, 20)
    out = []

    def row(left, mark, right, lcol="", rcol=""):
        l, r = _cell(left, col), _cell(right, col)
        if color and lcol:
            l = lcol + l + RESET
        if color and rcol:
            r = rcol + r + RESET
        out.append(f"{l} {mark} {r}".rstrip())

    ops = difflib.SequenceMatcher(a=old, b=new, autojunk=False).get_opcodes()
    for n, (tag, i1, i2, j1, j2) in enumerate(ops):
        if tag == "equal":
            lines = list(zip(old[i1:i2], new[j1:j2]))
            head = context if n > 0 else 0
            tail = context if n < len(ops) - 1 else 0
            if len(lines) > head + tail + 1:
                for a, b in lines[:head]:
                    row(a, " ", b)
                skipped = len(lines) - head - tail
                marker = f"... {skipped} unchanged lines (left {i1 + head + 1}-{i1 + head + skipped}, " \
                         f"right {j1 + head + 1}-{j1 + head + skipped}) ..."
                out.append((CYAN + marker + RESET) if color else marker)
                for a, b in lines[len(lines) - tail:]:
                    row(a, " ", b)
            else:
                for a, b in lines:
                    row(a, " ", b)
        else:
            left, right = old[i1:i2], new[j1:j2]
            for m in range(max(len(left), len(right))):
                a = left[m] if m < len(left) else None
                b = right[m] if m < len(right) else None
                mark = "|" if a is not None and b is not None else ("<" if b is None else ">")
                row(a or "", mark, b or "", RED if a is not None else "", GREEN if b is not None else "")
    return out


def diff(lab, args, labs=None, stream=None):
    """`python -m common diff --kernel k6 [--lab L] [--side-by-side] [--context N] [--color auto]`."""
    stream = stream or sys.stdout
    if not getattr(args, "kernel", None):
        shown = [lab] if lab is not None else (labs or [])
        raise CourseError("make diff needs KERNEL=name: the rung whose change you want to see",
                          hint="KERNEL= a rung after the first of a ladder: " +
                               ", ".join(r.name for L in shown for rows in L.ladders.values() for r in _rungs(rows)[1:]))
    if lab is None:
        lab = find_lab(args.kernel, labs or [])
    before, k, ladder = previous_rung(lab, args.kernel)
    old_path, new_path = Path(before.path), Path(k.path)
    color = use_color(stream, getattr(args, "color", None) or "auto")
    context = 3 if getattr(args, "context", None) is None else int(args.context)
    root = lab.dir.parents[1]

    def shown(p):
        p = Path(p).resolve()
        return str(p.relative_to(root)) if p.is_relative_to(root) else str(p)
    title = f"{k.name}" + (f" ({k.title})" if k.title else "")
    head = [f"{lab.name}, {ladder} ladder: {title}",
            f"against the rung before it, {before.name}" + (f" ({before.title})" if before.title else ""),
            f"  - {shown(old_path)}", f"  + {shown(new_path)}"]
    if old_path == new_path:
        changed = {p: (before.defines.get(p), k.defines.get(p)) for p in {*before.defines, *k.defines}
                   if before.defines.get(p) != k.defines.get(p)}
        head.append("the same source, built with other parameters: " +
                    (", ".join(f"{p} {a or 'default'} -> {b or 'default'}" for p, (a, b) in sorted(changed.items()))
                     or "none"))
        print("\n".join(head), file=stream)
        return []
    old, new = rung_lines(old_path), rung_lines(new_path)
    if getattr(args, "side_by_side", False):
        width = getattr(args, "width", None) or shutil.get_terminal_size((160, 40)).columns
        body = side_by_side(old, new, width, context, color)
    else:
        body = unified(old, new, shown(old_path), shown(new_path), context, color)
    sm = difflib.SequenceMatcher(a=old, b=new, autojunk=False)
    removed = sum(i2 - i1 for tag, i1, i2, _, _ in sm.get_opcodes() if tag in ("replace", "delete"))
    added = sum(j2 - j1 for tag, _, _, j1, j2 in sm.get_opcodes() if tag in ("replace", "insert"))
    head.append(f"{added} lines added, {removed} removed ({len(old)} -> {len(new)} lines)")
    try:
        print("\n".join(head + [""] + body), file=stream)
        stream.flush()
    except BrokenPipeError:                  # `make diff | head`: the reader has seen enough
        os.dup2(os.open(os.devnull, os.O_WRONLY), stream.fileno())
    return body
