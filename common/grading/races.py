"""racecheck's output, read for the grader: which graded kernel each race belongs to, in one line.

    read(text, items)      -> (races {item id: [one line per race]}, unread [lines])
    race_line(report)      "write at v6.cu:170 races with read at v6.cu:185 (sgemm_v6_vec)"

The output is parsed by common.sanitizer (its reports, their owners, the tool's summary): nothing
here reads the sanitizer's framing again. Several kernels of one batch may share entry-point names
(a student's v6 and the reference v6), so a report belongs to the item whose source file it names
("... in v6_missing_syncthreads.cu:170"); a batch never holds two files of one name (gpu.py).
`unread`: reports that name no graded file, and hazards the summary counts that no printed report
accounts for (past the print limit, or a format this grader cannot read): they must not pass silently.
"""
import re
from pathlib import Path

from .. import sanitizer

_FIRST = re.compile(r"Race reported between (\w+) access at (.+?) in (?:\S*/)?(\S+:\d+)")
_SECOND = re.compile(r"and (\w+) access at (.+?) in (?:\S*/)?(\S+:\d+)")


def race_line(report):
    """One line for a racecheck report (its text as common.sanitizer groups it)."""
    m1, m2 = _FIRST.search(report), _SECOND.search(report)
    if not (m1 and m2):
        return report.splitlines()[0].strip()[:160]
    (kind1, at1, where1), (kind2, _, where2) = m1.groups(), m2.groups()
    func = re.match(r"(?:void\s+)?([\w:]+(?:<[^>]*>)?)", at1.split("+")[0])
    return (f"{kind1.lower()} at {where1} races with {kind2.lower()} at {where2}"
            f" ({func.group(1) if func else at1.split('+')[0]})")


def _is_hazard(report):
    """A race or hazard report (not the tool's word on a crashed program, an API error, ...)."""
    head = report.splitlines()[0].lower()
    return "race reported" in head or "hazard" in head


def read(text, items):
    files = {Path(it["source"]).name: it["id"] for it in items}
    labels = {f"{iid} ({name})": iid for name, iid in files.items()}    # common.sanitizer.owner's label
    races, unread = {}, []
    # common.sanitizer.reports is the one splitter of the sanitizer's output into reports
    reports = [r for _, r in sanitizer.reports(text)[0] if _is_hazard(r)]
    for report in reports:
        who = labels.get(sanitizer.owner(report, (), files))
        if who is None:
            unread.append(f"a hazard in no graded file: {race_line(report)}")
        else:
            races.setdefault(who, []).append(race_line(report))
    found = sanitizer.parse(text, "racecheck", files=files)
    total = (found.total_errors or 0) + found.total_warnings
    missing = total - len(reports)
    if missing > 0:
        unread.append(f"{missing} hazard(s) in racecheck's summary with no readable report")
    return races, unread
