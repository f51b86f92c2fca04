#!/usr/bin/env python3
"""Older runs out of the labs' results/ folders (git keeps them): every run but the newest of its kind
and GPU, less the records the course's code names by file name (common/runs.py says how runs are named
and ordered).

    .venv/bin/python scripts/prune-results.py            list what would go, and what stays
    .venv/bin/python scripts/prune-results.py --apply    `git rm` it
(the virtual environment's .pth makes `common` importable; with another Python: PYTHONPATH=.)
"""
import argparse
import subprocess
import sys
from pathlib import Path

from common import runs

ROOT = Path(__file__).resolve().parents[1]


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--apply", action="store_true", help="git rm the older runs (default: only list them)")
    args = p.parse_args()
    folders = sorted(ROOT.glob("labs/*/results")) + ([ROOT / "results"] if (ROOT / "results").is_dir() else [])
    gone = []
    for folder in folders:
        old = runs.superseded(folder, ROOT)
        kept = sum(1 for _ in folder.iterdir()) - len(old)
        print(f"{folder.relative_to(ROOT)}: {len(old)} files of older runs, {kept} kept")
        gone += old
    for path in gone:
        print(f"  {'removing' if args.apply else 'would remove'} {path.relative_to(ROOT)}")
    if args.apply and gone:
        subprocess.run(["git", "-C", str(ROOT), "rm", "-r", "-q", "--", *[str(p.relative_to(ROOT)) for p in gone]],
                       check=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
