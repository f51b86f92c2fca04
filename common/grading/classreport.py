"""The class report: every student's record merged into class.json, class.csv and class.html.

    merge(g, plan, records=None)       -> class.json's dict; writes OUT/class.json, class.csv, class.html
    merge_and_print(g, plan, ...)      the same, then the short table and the paths written
    student_page(plan, record, ...)    OUT/students/<name>.html: the report as the student would read it
    normalize(reason)                  a reason with its numbers and shapes taken out, for counting

class.csv: one row per student, one column per check (the points it earned; empty where it was not
graded: needs a GPU, skipped, or the submission was not graded), then total, of, needs-GPU points.
class.html (self-contained, no network): the score distribution (an inline SVG histogram), pass rates
per check, the most common reasons for lost points (one row per part and reason, its numbers and
shapes aside: "wrong element at (i, j) for shape MxNxK"), and every student's row linked to their page.
"""
import csv
import html
import json
import re
import statistics
from pathlib import Path

from .. import report as rep


def _checks(g, plan):
    wanted = plan.parts or [p.name for p in g.parts]
    return [{"part": p.name, "check": c.name, "max_points": c.points, "what": c.what,
             "column": f"{p.name}:{c.name}"} for p in g.parts if p.name in wanted for c in p.checks]


def normalize(reason):
    r = re.sub(r"\b\d+x\d+x\d+\b", "MxNxK", reason)
    r = re.sub(r"\(\d+, \d+\)", "(i, j)", r)
    r = re.sub(r"(?<![A-Za-z_.])[-+]?\d+(\.\d+)?(e[-+]?\d+)?(?![A-Za-z_\d])", "#", r)
    return r


def _student_row(rec, checks):
    by = {}
    for p in (rec.get("report") or {}).get("parts", []):
        for c in p["checks"]:
            by[f"{p['part']}:{c['check']}"] = {"status": c["status"], "points": c["points"], "reason": c["reason"]}
    return {"name": rec["name"], "status": rec.get("status", "missing"), "score": rec.get("score"),
            "graded_max": rec.get("graded_max"), "pending": rec.get("pending"), "max_total": rec.get("max_total"),
            "seconds": rec.get("seconds"), "seed": rec.get("seed"), "reason": rec.get("reason", ""),
            "flags": rec.get("flags", ""), "outside_writes": rec.get("outside_writes", []),
            "isolation": rec.get("isolation"), "host": rec.get("host"),
            "lost": (rec.get("report") or {}).get("lost", []),
            "checks": {c["column"]: by.get(c["column"]) for c in checks},
            "page": f"students/{rec['name']}.html"}


def load_records(plan):
    out = []
    for s in plan.students:
        path = plan.out_dir / "students" / f"{s['name']}.json"
        try:
            out.append(json.loads(path.read_text()))
        except (OSError, ValueError):
            out.append({"name": s["name"], "status": "missing",
                        "reason": "no report yet (not graded, or its Slurm task did not finish: see slurm/logs/)"})
    return out


def merge(g, plan, records=None, wall=None):
    records = records if records is not None else load_records(plan)
    checks = _checks(g, plan)
    rows = [_student_row(r, checks) for r in records]
    graded = [r for r in rows if r["status"] == "graded"]
    scores = [r["score"] for r in graded]
    secs = [r["seconds"] for r in rows if r.get("seconds") is not None and r["status"] != "refused"]
    rates = []
    for c in checks:
        sts = [r["checks"][c["column"]]["status"] for r in graded if r["checks"].get(c["column"])]
        passed, failed = sts.count("pass"), sts.count("fail")
        rates.append({**c, "passed": passed, "failed": failed, "not_graded": len(graded) - passed - failed,
                      "rate": passed / (passed + failed) if passed + failed else None})
    reasons = {}                     # (part, reason without its numbers) -> who lost which checks for it
    points_of = {c["column"]: c["max_points"] for c in checks}
    for r in graded:
        for col, c in r["checks"].items():
            if c and c["status"] == "fail":
                part, check = col.split(":", 1)
                key = (part, normalize(c["reason"]))
                e = reasons.setdefault(key, {"part": part, "checks": [], "reason": key[1], "example": c["reason"],
                                             "count": 0, "points": 0, "students": []})
                e["points"] += points_of[col]
                if check not in e["checks"]:
                    e["checks"].append(check)
                if r["name"] not in e["students"]:
                    e["students"].append(r["name"])
                    e["count"] += 1
    statuses = [r["status"] for r in rows]
    summary = {"students": len(rows), **{s.replace(" ", "_"): statuses.count(s)
                                         for s in ("graded", "crashed", "timed out", "refused", "missing")},
               "flagged": sum(1 for r in rows if r["outside_writes"]),
               "graded_max": max((r["graded_max"] for r in graded), default=None),
               "mean": round(statistics.mean(scores), 2) if scores else None,
               "median": round(statistics.median(scores), 2) if scores else None,
               "min": min(scores, default=None), "max": max(scores, default=None),
               "seconds_mean": round(statistics.mean(secs), 1) if secs else None,
               "seconds_max": max(secs, default=None), "wall_seconds": round(wall, 1) if wall else None}
    data = {"what": f"{g.lab.short} class grade", "lab": g.lab.short, "lab_title": g.lab.title.split(":")[0],
            "submissions": plan.submissions, "seed": plan.seed, "seed_policy": plan.seed_policy,
            "parts": plan.parts, "no_gpu": plan.no_gpu, "arch": plan.arch, "run": rep.run_info(g.lab.dir),
            # the GPUs the workers graded on, as their reports name them ("NVIDIA H200 (sm_90)")
            "gpus": sorted({(r.get("report") or {}).get("gpu_text") for r in records} - {None}),
            "summary": summary, "checks": checks, "pass_rates": rates,
            "reasons": sorted(reasons.values(), key=lambda e: (-e["count"], -e["points"], e["part"], e["reason"])),
            "students": rows}
    out = plan.out_dir
    rep.write_json(out / "class.json", data)
    _csv(out / "class.csv", rows, checks)
    (out / "class.html").write_text(_html(data))
    return data


def _csv(path, rows, checks):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["student", "status"] + [c["column"] for c in checks] + ["total", "of", "needs_gpu", "seconds",
                                                                            "note"])
        for r in rows:
            cells = []
            for c in checks:
                v = r["checks"].get(c["column"])
                cells.append(v["points"] if v and v["status"] in ("pass", "fail") else "")
            note = "; ".join(x for x in (r["reason"], r["flags"]) if x)
            w.writerow([r["name"], r["status"]] + cells + [_blank(r["score"]), _blank(r["graded_max"]),
                                                           _blank(r["pending"]), _blank(r["seconds"]), note])


def _checks_text(names):
    return ", ".join(names) if len(names) <= 3 else f"{len(names)} checks ({', '.join(names[:2])}, ...)"


def _secs(v):
    return "" if v is None else f"{v:.1f}"


def _blank(v):
    return "" if v is None else v


# ---------------------------------------------------------------------------------------------
# HTML
# ---------------------------------------------------------------------------------------------

_STYLE = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px auto;max-width:1100px;
     color:#1d1d1f;padding:0 16px}
.title{font-size:22px;margin:0 0 4px}
.section{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #ddd;padding-bottom:4px}
.meta{color:#555} table{border-collapse:collapse;width:100%}
th,td{padding:4px 8px;border-bottom:1px solid #eee;text-align:left;vertical-align:top}
th{background:#f6f6f8;font-weight:600} td.n{text-align:right;font-variant-numeric:tabular-nums}
th.n{text-align:right}
.bar{background:#e8e8ee;height:12px;width:110px;display:inline-block;vertical-align:middle;border-radius:2px;
     margin-right:6px}
td.rate,td.status{white-space:nowrap}
.bar span{display:block;height:12px;background:#3b7ddd;border-radius:2px}
.st-graded{color:#17692f} .st-crashed,.st-timed-out,.st-refused,.st-missing{color:#b3261e;font-weight:600}
.flag{color:#b3261e} pre{background:#f6f6f8;padding:10px;overflow-x:auto;font-size:12.5px;border-radius:4px}
.cards{display:flex;gap:12px;flex-wrap:wrap;margin:12px 0} .card{background:#f6f6f8;border-radius:6px;padding:8px 14px}
.card b{display:block;font-size:20px} small{color:#666}
"""


def _h(level, text, anchor=""):
    """A heading of the page (level 1 or 2), styled by class."""
    at = f" id='{anchor}'" if anchor else ""
    return f"<h{level} class='{('title', 'section')[level - 1]}'{at}>{_e(text)}</h{level}>"


def _e(x):
    return html.escape("" if x is None else str(x))


def histogram_svg(scores, top):
    """An inline SVG histogram of the scores (0..top), one bar per bin."""
    top = max(top or 0, max(scores, default=0), 1)
    nbins = min(top + 1, 20)
    width = top / nbins if nbins < top + 1 else 1
    bins = [0] * nbins
    for s in scores:
        bins[min(int(s / width), nbins - 1)] += 1
    W, H, pad, base = 640, 236, 36, 190
    bw = (W - 2 * pad) / nbins
    peak = max(bins + [1])
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" '
           f'role="img" aria-label="score distribution">',
           f'<line x1="{pad}" y1="{base}" x2="{W - pad}" y2="{base}" stroke="#888"/>']
    for i, n in enumerate(bins):
        h = (base - 20) * n / peak
        x = pad + i * bw
        lo = round(i * width)
        hi = round((i + 1) * width) - 1 if width > 1 else lo
        label = f"{lo}" if hi <= lo else f"{lo}-{hi}"
        out.append(f'<rect x="{x + 2:.1f}" y="{base - h:.1f}" width="{bw - 4:.1f}" height="{h:.1f}" fill="#3b7ddd">'
                   f'<title>{label} points: {n} student(s)</title></rect>')
        if n:
            out.append(f'<text x="{x + bw / 2:.1f}" y="{base - h - 4:.1f}" font-size="11" '
                       f'text-anchor="middle">{n}</text>')
        if len(label) * 7 < bw or i % 2 == 0:
            out.append(f'<text x="{x + bw / 2:.1f}" y="{base + 14}" font-size="11" text-anchor="middle">{label}</text>')
    out.append(f'<text x="{W / 2}" y="{H - 8}" font-size="12" text-anchor="middle">points (of {top})</text>')
    out.append('</svg>')
    return "\n".join(out)


def _html(d):
    s = d["summary"]
    rows = d["students"]
    scores = [r["score"] for r in rows if r["status"] == "graded"]
    gpu = ("no GPU (NOGPU=1): the GPU checks are not graded" if d["no_gpu"]
           else "GPU checks graded on " + (", ".join(d.get("gpus") or []) or "the GPU found"))
    seed = (f"seed {d['seed']} for every student" if d["seed_policy"] == "class"
            else f"one seed per student, from class seed {d['seed']} and the name")
    cards = [("students", s["students"]), ("graded", s["graded"]), ("mean", s["mean"]), ("median", s["median"]),
             ("of", s["graded_max"]), ("crashed / timed out", f"{s['crashed']} / {s['timed_out']}"),
             ("refused", s["refused"]), ("wrote outside", s["flagged"]), ("s per submission", s["seconds_mean"])]
    out = ["<!doctype html><html lang='en'><head><meta charset='utf-8'>",
           f"<title>{_e(d['lab_title'])}: class report</title><style>{_STYLE}</style></head><body>",
           _h(1, f"{d['lab_title']}: class report"),
           f"<div class='meta'>{_e(len(rows))} submissions from <code>{_e(d['submissions'])}</code>; parts: "
           f"{_e(', '.join(d['parts']) if d['parts'] else 'all')}; {_e(gpu)}; {_e(seed)}; commit "
           f"{_e(d['run']['commit'][:10])}, {_e(d['run']['date'])}</div>",
           "<div class='cards'>" + "".join(f"<div class='card'><small>{_e(k)}</small>"
                                           f"<b>{_e('-' if v is None else v)}</b></div>" for k, v in cards) + "</div>",
           _h(2, "Score distribution", "distribution"),
           histogram_svg(scores, s["graded_max"]) if scores else "<p>No submission was graded.</p>",
           _h(2, "Pass rate per check", "checks"),
           "<table><tr><th>part</th><th>check</th><th class='n'>points</th><th class='n'>passed</th>"
           "<th class='n'>failed</th><th class='n'>not graded</th>"
           "<th>pass rate</th><th>what passing means</th></tr>"]
    for c in d["pass_rates"]:
        rate = c["rate"]
        bar = (f"<span class='bar'><span style='width:{100 * rate:.0f}%'></span></span> {100 * rate:.0f} %"
               if rate is not None else "<small>not graded</small>")
        out.append(f"<tr><td>{_e(c['part'])}</td><td>{_e(c['check'])}</td><td class='n'>{c['max_points']}</td>"
                   f"<td class='n'>{c['passed']}</td><td class='n'>{c['failed']}</td>"
                   f"<td class='n'>{c['not_graded']}</td>"
                   f"<td class='rate'>{bar}</td><td><small>{_e(c['what'])}</small></td></tr>")
    out.append("</table>" + _h(2, "Most common reasons for lost points", "reasons"))
    if d["reasons"]:
        out.append("<table><tr><th class='n'>students</th><th class='n'>points lost</th><th>part</th><th>checks</th><th>reason "
                   "(an example)</th><th>who</th></tr>")
        for e in d["reasons"][:20]:
            who = ", ".join(f"<a href='students/{_e(n)}.html'>{_e(n)}</a>" for n in e["students"][:8])
            who += f" and {len(e['students']) - 8} more" if len(e["students"]) > 8 else ""
            out.append(f"<tr><td class='n'>{e['count']}</td><td class='n'>{e['points']}</td><td>{_e(e['part'])}</td>"
                       f"<td>{_e(_checks_text(e['checks']))}</td><td>{_e(e['example'])}</td><td>{who}</td></tr>")
        out.append("</table>")
    else:
        out.append("<p>No points were lost.</p>")
    out.append(_h(2, "Students", "students") + "<table><tr><th>student</th><th>status</th><th class='n'>score</th>"
               "<th class='n'>of</th><th class='n'>needs GPU</th><th class='n'>seconds</th><th>note</th></tr>")
    for r in rows:
        note = _e(r["reason"]) + (f" <span class='flag'>{_e(r['flags'])}</span>" if r["flags"] else "")
        out.append(f"<tr><td><a href='{_e(r['page'])}'>{_e(r['name'])}</a></td>"
                   f"<td class='status st-{r['status'].replace(' ', '-')}'>{_e(r['status'])}</td>"
                   f"<td class='n'>{_e(r['score'] if r['score'] is not None else '-')}</td>"
                   f"<td class='n'>{_e(r['graded_max'] if r['graded_max'] is not None else '-')}</td>"
                   f"<td class='n'>{_e(r['pending'] or '')}</td><td class='n'>{_secs(r['seconds'])}</td>"
                   f"<td><small>{note}</small></td></tr>")
    out.append("</table><p><small>class.csv has a column per check; class.json has everything; each student's "
               "page has the report they would read from <code>make grade</code>.</small></p></body></html>")
    return "\n".join(out)


def student_page(plan, rec, out_text="", err_text=""):
    path = plan.out_dir / "students" / f"{rec['name']}.html"
    st = rec.get("status", "?")
    parts = ["<!doctype html><html lang='en'><head><meta charset='utf-8'>",
             f"<title>{_e(rec['name'])}: grade report</title><style>{_STYLE}</style></head><body>",
             "<p><a href='../class.html'>&larr; the class</a></p>",
             _h(1, rec["name"]),
             f"<div class='meta'>status: <span class='st-{st.replace(' ', '-')}'>{_e(st)}</span>"
             + (f"; score {_e(rec.get('score'))} of {_e(rec.get('graded_max'))}"
                if rec.get("score") is not None else "")
             + f"; seed {_e(rec.get('seed'))}; {_e(rec.get('seconds'))} s; isolation {_e(rec.get('isolation'))}; "
             f"submission <code>{_e(rec['submission']['path'])}</code></div>"]
    if rec.get("reason"):
        parts.append(f"<p class='flag'>{_e(rec['reason'])}</p>")
    if rec.get("outside_writes"):
        parts.append(_h(2, "Wrote outside its folder") + "<pre>" + _e("\n".join(rec["outside_writes"][:50])) + "</pre>")
    if st == "graded":
        parts.append(_h(2, "Report") + "<pre>" + _e(out_text) + "</pre>")
    if rec.get("log_tail") or st in ("crashed", "timed out"):
        parts.append(_h(2, "End of the worker's log") + "<pre>" + _e(rec.get("log_tail") or
                     "(empty: the worker printed nothing before it ended)") + "</pre>")
    parts.append(f"<p><small>{_e(rec['name'])}.json (everything), {_e(rec['name'])}.txt (the report), "
                 f"{_e(rec['name'])}.log (the grader's progress)</small></p></body></html>")
    path.write_text("\n".join(parts))


def merge_and_print(g, plan, wall=None, records=None):
    return print_summary(merge(g, plan, records=records, wall=wall), plan.out_dir)


NOTE_CHARS = 60        # the summary table's note column: the whole text is in class.html and class.json


def _note(r):
    """A student's reason and flags in a few words for the summary table: each flag by its name
    ("wrote outside its folder (3 paths)", "copied?"), a long text cut at a word with "..." (never
    mid-word, never silently)."""
    flags = flag_words(r) if r.get("flags") else ""
    reason = r.get("reason") or ""
    return "; ".join(x for x in (_cut(reason, NOTE_CHARS - len(flags) - 2 * bool(flags)), flags) if x)


def flag_words(r):
    """A record's flags in a few words (a submission's progress line, the summary's note): each flag by
    its name ("wrote outside its folder (3 paths)", "copied?"); other flag text cut at a word."""
    words = []
    if r.get("outside_writes"):
        words.append(f"wrote outside its folder ({len(r['outside_writes'])} paths)")
    if r.get("copied") or "copied?" in (r.get("flags") or ""):
        words.append("copied?")
    return "; ".join(words) or _cut(r.get("flags") or "", NOTE_CHARS // 2)


def _cut(text, room):
    if len(text) <= room:
        return text
    return text[:max(room - 3, 0)].rsplit(" ", 1)[0].rstrip(" ,;:(") + "..."


def print_summary(d, out):
    """The short table of class.json's students, the class's numbers, and the paths."""
    out = Path(out)
    rows = [{"student": r["name"], "status": r["status"], "score": r["score"], "of": r["graded_max"],
             "pending": r["pending"] or None, "s": r["seconds"],
             "note": _note(r)} for r in d["students"]]
    print()
    print(rep.table(rows, [("student", "student", ""), ("status", "status", ""), ("score", "score", "d"),
                           ("of", "of", "d"), ("pending", "needs GPU", "d"), ("s", "s", ".1f"), ("note", "note", "")]))
    s = d["summary"]
    print()
    if s["graded"]:
        print(f"graded {s['graded']} of {s['students']}: mean {s['mean']}, median {s['median']}, "
              f"min {s['min']}, max {s['max']} of {s['graded_max']}")
    bad = [f"{s[k]} {k.replace('_', ' ')}" for k in ("crashed", "timed_out", "refused", "missing") if s[k]]
    if bad or s["flagged"]:
        print("not graded: " + ", ".join(bad) if bad else "", end="")
        print((("; " if bad else "") + f"{s['flagged']} wrote outside its folder") if s["flagged"] else "")
    if s["seconds_mean"] is not None:
        print(f"time per submission: mean {s['seconds_mean']} s, max {s['seconds_max']} s"
              + (f"; {s['wall_seconds']} s for the whole class" if s["wall_seconds"] else ""))
    print(f"class report: {out / 'class.html'}\n  {out / 'class.csv'} (a column per check)\n  "
          f"{out / 'class.json'} (everything)\n  {out / 'students'}/ (one .json, .html, .txt, .log per student)")
    return d
