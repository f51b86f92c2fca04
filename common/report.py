"""Output for people, data for files.

    print(table(rows, columns))          aligned text table; columns = [(key, header, fmt), ...]
    run_info(root)                       commit (and whether the tree was dirty), date, host
    write_json(path, record)             pretty JSON, folders created
    progress(i, n, what)                 one overwritten status line on a terminal, plain lines in a log
    make_command("grade-class SUBMISSIONS=d")  `make ...` as a next step, with LAB= when make ran from the top
"""
import datetime
import json
import os
import platform
import re
import subprocess
import sys
from pathlib import Path

from . import writes


def _fmt(value, fmt):
    if value is None:
        return "-"
    if callable(fmt):
        return fmt(value)
    return format(value, fmt) if fmt else str(value)


def table(rows, columns, title=None):
    """columns: (key, header, fmt); numbers right-aligned, text left-aligned."""
    cells = [[_fmt(r.get(k), f) for k, _, f in columns] for r in rows]
    heads = [h for _, h, _ in columns]
    widths = [max([len(h)] + [len(c[i]) for c in cells]) for i, h in enumerate(heads)]
    numeric = [all(isinstance(r.get(k), (int, float)) or r.get(k) is None for r in rows) for k, _, _ in columns]

    def line(vals):
        return "  ".join(v.rjust(w) if num else v.ljust(w) for v, w, num in zip(vals, widths, numeric)).rstrip()

    out = [title] if title else []
    out += [line(heads), line(["-" * w for w in widths])] + [line(c) for c in cells]
    return "\n".join(out)


def run_info(root="."):
    def git(*args):
        try:
            return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True,
                                  timeout=10).stdout.strip()
        except (OSError, subprocess.TimeoutExpired):
            return ""
    # COURSE_COMMIT names the commit where the checkout has no git history (a copied tree)
    given = os.environ.get("COURSE_COMMIT")
    commit = given or git("rev-parse", "HEAD")
    if not re.fullmatch(r"[0-9a-f]{40}", commit or ""):
        if given:
            print(f"note: COURSE_COMMIT={given!r} is not a full commit sha (40 hex digits, `git rev-parse "
                  f"<commit>`): this record names the commit 'unknown'", file=sys.stderr)
        commit = "unknown"
    dirty = bool(git("status", "--porcelain", "--untracked-files=no")) if not given else None
    return {"commit": commit, "dirty_tree": dirty,
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "host": platform.node(), "python": platform.python_version()}


def write_json(path, record):
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=1, sort_keys=False) + "\n")
    writes.note(path)
    return path


def progress(i, n, what, transient=False):
    """[i/n] what, on stderr: on a terminal, one line rewritten in place; in a log, a line each. A
    transient step (each kernel of a build) shows on a terminal only, so a log keeps the start and
    the end."""
    msg = f"[{i}/{n}] {what}"
    if sys.stderr.isatty() and not os.environ.get("CI"):
        print("\r\033[K" + msg, end="" if i < n else "\n", file=sys.stderr, flush=True)
    elif not transient:
        print(msg, file=sys.stderr, flush=True)


def make_command(args):
    """`make <args>` as a next step to print. From the course's top folder (the top Makefile gives each
    lab's make COURSE_TOP_LAB) it names the lab, LAB=...: there, without it, the command runs for every
    lab, each with a folder of its own under the one given, and stops at the first it does not fit."""
    lab = os.environ.get("COURSE_TOP_LAB")
    target, _, rest = args.partition(" ")
    return " ".join(w for w in ("make", target, f"LAB={lab}" if lab else "", rest) if w)
