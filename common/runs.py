"""The runs a results/ folder holds, by kind and GPU: what the course keeps and what git alone keeps.

A run's files are named <kind>_<gpu>_<date>[_<commit>][-n][_<part>].<ext> by the targets that write
them (make bench: lab07-bench_nvidia-h200_2026-12-03_19b1a27.json, and its charts ..._fp32.png);
a standing record without a date (lab07-tuned_nvidia-h200.json, make tune's best per GPU) is no run.
The course keeps the newest run of each kind per GPU (the notebooks, the grader's reference
predictions and the README tables read the newest), and any record its code names by file name;
older runs are removed from the tree (git keeps them: `git log --all -- <lab>/results/<name>`).

    parse(name)                 -> Run(kind, gpu, date, commit, n) or None (a standing record)
    runs(folder)                -> {(kind, gpu): {Run: [paths]}}
    named_in_code(root)         -> every string constant of the course's Python files (a record read by name)
    superseded(folder, root)    -> [paths]: the files of every run but the newest of its kind and GPU,
                                   less those named in code (scripts/prune-results.py removes them)
    extra_runs(folder, root)    -> {(kind, gpu): [Run]}: kinds holding more than their newest run and the
                                   runs named in code (a test keeps every results/ folder at none)
"""
import ast
import re
import subprocess
from collections import namedtuple
from pathlib import Path

Run = namedtuple("Run", "kind gpu date commit n")

_NAME = re.compile(r"^(?P<kind>[A-Za-z0-9._-]+?)(?:_(?P<gpu>[a-z0-9-]+))?_(?P<date>\d{4}-\d{2}-\d{2})"
                   r"(?:_(?P<commit>[0-9a-f]{7,40}))?(?P<n>-\d+)?(?:_[^.]*)?(?:\.[A-Za-z0-9.]+)?$")


def parse(name):
    m = _NAME.match(name)
    if not m:
        return None
    return Run(m["kind"], m["gpu"] or "", m["date"], m["commit"] or "", int(m["n"][1:]) if m["n"] else 1)


def runs(folder):
    out = {}
    for p in sorted(Path(folder).iterdir()) if Path(folder).is_dir() else []:
        r = parse(p.name)
        if r is not None:
            out.setdefault((r.kind, r.gpu), {}).setdefault(r, []).append(p)
    return out


def named_in_code(root):
    """String constants of the course's own Python files (common/, labs/, scripts/), where a file read by
    its name would be named: COPY_RECORD = "lab07d-sweep_..._7283a6f.json"."""
    found = set()
    root = Path(root)
    for d in ("common", "labs", "scripts"):
        for py in (root / d).rglob("*.py"):
            try:
                tree = ast.parse(py.read_text())
            except (SyntaxError, UnicodeDecodeError, OSError):
                continue
            found.update(n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str))
    return found


def _recorded_time(paths):
    """When the run was made, as well as its files say: a JSON record's run.date."""
    import json
    for p in paths:
        if p.suffix == ".json" and p.is_file():
            try:
                return str(json.loads(p.read_text()).get("run", {}).get("date") or "")
            except (OSError, ValueError, AttributeError):
                pass
    return ""


def _git_added(paths, root):
    """The time git first saw any of the run's files (seconds). A run git has not seen yet is the newest:
    records copied in from a GPU run and not yet committed must never be the ones pruned."""
    times = []
    for p in paths:
        try:
            out = subprocess.run(["git", "-C", str(root), "log", "--diff-filter=A", "--format=%ct", "--", str(p)],
                                 capture_output=True, text=True, timeout=60).stdout.split()
        except (OSError, subprocess.TimeoutExpired):
            out = []
        times += [int(t) for t in out]
    return min(times) if times else float("inf")


def order_key(run, paths, root):
    """Newest last, as the readers order records (common.records.newest: the record's own run.date),
    then by the date in the name, then by when git first saw the run's files."""
    return (_recorded_time(paths) or run.date, run.date, _git_added(paths, root), run.n)


def superseded(folder, root, keep_named=True):
    """The files of every run older than the newest of its kind and GPU, less those the code names."""
    named = named_in_code(root) if keep_named else set()
    out = []
    for group in runs(folder).values():
        if len(group) < 2:
            continue
        ordered = sorted(group, key=lambda r: order_key(r, group[r], root))
        for r in ordered[:-1]:
            if not any(p.name in named for p in group[r]):
                out += group[r]
    return out


def extra_runs(folder, root, named=None):
    """{(kind, gpu): runs}: each kind that holds more than one run not named in code. No ordering
    is needed to count: a folder the course keeps has at most one such run per kind and GPU."""
    named = named_in_code(root) if named is None else named
    out = {}
    for key, group in runs(folder).items():
        unnamed = [r for r, paths in group.items() if not any(p.name in named for p in paths)]
        if len(unnamed) > 1:
            out[key] = sorted(unnamed)
    return out
