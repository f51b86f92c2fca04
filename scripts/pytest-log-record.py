"""A GPU run of the tests, as a record: the outcome of every test in a `pytest -v` log (xdist's
"[gwN] [ p%] PASSED node" lines), the tests that started and never finished (a run cut by a time
limit), and each failure's last line from an instafail file ("===== node (when)" then the report).

    python scripts/pytest-log-record.py LOG [--failures FILE] --gpu "NVIDIA H200" --commit SHA
        --date 2026-12-04 --what "..." --out results/<kind>_<gpu>_<date>_<commit>.json
"""
import argparse
import json
import re
from collections import Counter
from pathlib import Path

DONE = re.compile(r"^\[gw\d+\] \[ *\d+%\] (PASSED|FAILED|SKIPPED|ERROR|XFAIL|XPASS) (.+?)\s*$")
COLLECTED = re.compile(r"^(\d+) workers \[(\d+) items\]")


def parse(log_text):
    outcomes, items = {}, None
    for line in log_text.splitlines():
        m = DONE.match(line)
        if m:
            outcomes[m[2]] = m[1]
            continue
        m = COLLECTED.match(line)
        if m:
            items = int(m[2])
    return outcomes, items


def failures(text):
    out = {}
    for block in re.split(r"^===== ", text, flags=re.M)[1:]:
        head, _, body = block.partition("\n")
        node = head.split(" (")[0]
        errors = [l for l in body.splitlines() if l.startswith("E ")]
        out.setdefault(node, (errors[0][1:].strip() if errors else body.strip().splitlines()[-1])[:300])
    return out


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("log")
    ap.add_argument("--failures")
    for k in ("gpu", "commit", "date", "what", "out"):
        ap.add_argument(f"--{k}", required=True)
    ap.add_argument("--note", default="")
    a = ap.parse_args(argv)
    outcomes, items = parse(Path(a.log).read_text())
    why = failures(Path(a.failures).read_text()) if a.failures else {}
    counts = Counter(outcomes.values())
    by_file = {}
    for node, status in outcomes.items():
        f = node.split("::")[0]
        by_file.setdefault(f, Counter())[status.lower()] += 1
    record = {"what": a.what, "gpu": a.gpu, "commit": a.commit, "date": a.date, "collected": items,
              "finished": len(outcomes), "unfinished": (items - len(outcomes)) if items else None,
              "counts": {k.lower(): v for k, v in sorted(counts.items())},
              "failed": [{"test": n, "reason": why.get(n, "")} for n, s in sorted(outcomes.items()) if s == "FAILED"],
              "note": a.note, "by_file": {f: dict(c) for f, c in sorted(by_file.items())}}
    Path(a.out).write_text(json.dumps(record, indent=1) + "\n")
    print(f"{a.out}: {record['counts']}, {record['unfinished']} unfinished")


if __name__ == "__main__":
    main()
