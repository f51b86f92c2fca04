#!/usr/bin/env python3
"""The notebooks in notebooks/: execute them, or strip their outputs before a commit.

    python3 scripts/notebooks.py run [--out DIR] [--timeout S] [NAME ...]
        execute each notebook top to bottom in a fresh kernel of this Python (no GPU: recorded
        results), print PASS/FAIL, the time, the cells tagged "summary" and any error; write the
        executed copies to DIR (the notebooks themselves are not touched). Exit 1 if one fails.
    python3 scripts/notebooks.py strip [--check]
        remove outputs, execution counts and widget state (the notebooks are committed without);
        with --check, change nothing and exit 1 if a notebook has any.

`make notebooks` and `make strip-notebooks` call this; the policy is in common/notebooks.py.
"""
import argparse
import sys
from pathlib import Path

# `common` comes from the environment, as for the notebooks' kernels: the virtualenv's .pth file,
# or PYTHONPATH as the Makefiles export it
from common import notebooks
from common.errors import user_errors

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK_LIMIT_S = 300   # one notebook, all cells: the walkthrough measures live in about 25 s on an H200


def run(args):
    paths = notebooks.notebook_paths()
    if args.names:
        wanted = {n if n.endswith(".ipynb") else n + ".ipynb" for n in args.names}
        paths = [p for p in paths if p.name in wanted]
        missing = wanted - {p.name for p in paths}
        if missing:
            print(f"no such notebook: {', '.join(sorted(missing))}", file=sys.stderr)
            return 2
    if not args.quiet:
        print(notebooks.python_note(), flush=True)
    failed = 0
    if len(paths) > 1:
        # one process per notebook: on the H200 (Python 3.12), a second notebook executed in the
        # process that ran the first hung at kernel start after the first kernel's event loop closed
        import subprocess
        for p in paths:
            argv = [sys.executable, __file__, "run", "--quiet", "--timeout", str(args.timeout),
                    *(["--out", str(args.out)] if args.out else []), p.stem]
            try:
                failed += subprocess.run(argv, timeout=NOTEBOOK_LIMIT_S).returncode != 0
            except subprocess.TimeoutExpired:
                failed += 1
                print(f"FAIL {p.name}: still running after {NOTEBOOK_LIMIT_S} s: stopped (run it alone with "
                      f"`python3 scripts/notebooks.py run {p.stem}` to see where it waits)", flush=True)
    else:
        for p in paths:
            result = notebooks.execute(p, out_dir=args.out, timeout=args.timeout)
            print(result, flush=True)
            failed += not result.ok
    if args.quiet:
        return 1 if failed else 0
    if args.out:
        print(f"executed copies: {args.out}")
    print(f"{len(paths) - failed} of {len(paths)} notebooks ran top to bottom")
    return 1 if failed else 0


def strip(args):
    dirty = 0
    for p in notebooks.notebook_paths():
        problems = notebooks.output_problems(p)
        if args.check:
            if problems:
                dirty += 1
                print(f"{p.relative_to(ROOT)}: {'; '.join(problems)}")
        elif notebooks.strip(p):
            print(f"stripped {p.relative_to(ROOT)}")
    if args.check and dirty:
        print("run `make strip-notebooks` (or python3 scripts/notebooks.py strip) before committing")
        return 1
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("run", help="execute the notebooks; print a summary")
    p.add_argument("names", nargs="*", help="notebook names (default: all)")
    p.add_argument("--out", default=None, help="folder for the executed copies")
    p.add_argument("--timeout", type=int, default=600, help="seconds per cell")
    p.add_argument("--quiet", action="store_true", help=argparse.SUPPRESS)   # one of several: no header/footer
    p = sub.add_parser("strip", help="remove outputs before a commit")
    p.add_argument("--check", action="store_true", help="only report; exit 1 if any notebook has outputs")
    args = parser.parse_args()
    with user_errors():
        return run(args) if args.command == "run" else strip(args)


if __name__ == "__main__":
    sys.exit(main())
