"""Grading: every part, every check, its points, and one reason for every check that lost points.

    grade(g, workspace, parts=None, gpu=None, arch=None, seed=None) -> Report   (g: spec.Grading)
    grade_many(g, jobs, env) -> [Report]       several workspaces or kernels in one GPU session
    workspace_job(g, workspace, parts=None, name=None) -> Job: a workspace's .cu files and answers.toml
    environment(g, gpu=None, arch=None, seed=None) -> Env: is there a GPU, which arch, which seed
    sass_arch(row, arch)   the architecture the static checks read (a newer one where the row loses its idea)
    Report.result(part, check), .score, .graded_max, .pending, .text(), .to_json(), .lost_lines()

A check ends in one of four states: pass (its points), fail (none, and a reason), needs-gpu
(neither: this machine has no GPU) or skipped (neither: a tool is missing, the reason says which).
A check with `requires` fails when the check it requires did not pass ("needs computes first").
Without a GPU a GPU check is needs-gpu whatever else went wrong (a file that does not compile, a rules
file that cannot be read): it is never scored there, so every student's "graded here" is the same.
A reason that comes from a CourseError carries its hint: "... (what to do: ...)".
"""
import contextlib
import os
import secrets
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from .. import report as rep
from ..errors import CourseError

from . import answers as answers_mod
from . import static
from .questions import grade_prediction
from .symptoms import mismatch_pattern   # noqa: F401  (re-exported: case_reason reads its summary)

DEFAULT_ARCH = "sm_90"        # SASS is read for this architecture where there is no GPU (a lab's GRADE_ARCH wins)

NAMES_COLUMN = 32        # characters: lost_lines' names column at its widest
PASS, FAIL, NEEDS_GPU, SKIPPED = "pass", "fail", "needs-gpu", "skipped"


# ---------------------------------------------------------------------------------------------
# Results
# ---------------------------------------------------------------------------------------------

@dataclass
class CheckResult:
    part: str
    check: str
    what: str
    max_points: int
    status: str
    reason: str = ""
    details: dict = field(default_factory=dict)

    @property
    def points(self):
        return self.max_points if self.status == PASS else 0

    @property
    def graded(self):
        return self.status in (PASS, FAIL)


@dataclass
class PartResult:
    name: str
    title: str
    checks: list
    source: str = ""
    note: str = ""

    @property
    def points(self):
        return sum(c.points for c in self.checks)

    @property
    def graded_max(self):
        return sum(c.max_points for c in self.checks if c.graded)

    @property
    def pending(self):
        return sum(c.max_points for c in self.checks if not c.graded)

    @property
    def max_points(self):
        return sum(c.max_points for c in self.checks)


HIDDEN = "(hidden: the answer key)"


@dataclass
class Report:
    name: str
    parts: list
    meta: dict
    extra: dict = field(default_factory=dict)     # questions' answers, predictions' table

    def part(self, name):
        return next(p for p in self.parts if p.name == name)

    def without_key(self):
        """This report with the answers, reasons and predictions it was given shown as HIDDEN: what a
        self-test prints and records of the reference solution (its answers are the key, and the
        records sit in results/, where students read). The verdicts and the points stay."""
        import copy
        extra = copy.deepcopy(self.extra)
        for row in extra.get("questions") or []:
            for k in ("answer", "why"):
                if row.get(k) is not None:
                    row[k] = HIDDEN
        for row in (extra.get("predictions") or {}).get("rows") or []:
            if row.get("predicted") is not None:
                row["predicted"] = HIDDEN
        return Report(self.name, self.parts, self.meta, extra)

    def result(self, part, check):
        return next(c for c in self.part(part).checks if c.check == check)

    @property
    def score(self):
        return sum(p.points for p in self.parts)

    @property
    def graded_max(self):
        return sum(p.graded_max for p in self.parts)

    @property
    def pending(self):
        return sum(p.pending for p in self.parts)

    def lost(self):
        return [c for p in self.parts for c in p.checks if c.status == FAIL]

    def lost_lines(self):
        """One line per lost check; checks of one part that fail for the same reason share a line. The
        names' column is as wide as the longest list of at most NAMES_COLUMN characters: a longer list
        (ten unanswered questions) puts its reason on a second line rather than pad every other one."""
        lines = []
        for p in self.parts:
            groups = []
            for c in p.checks:
                if c.status != FAIL:
                    continue
                if groups and groups[-1][1] == c.reason:
                    groups[-1][0].append(c)
                else:
                    groups.append(([c], c.reason))
            for cs, reason in groups:
                names = f"all {len(cs)}" if len(cs) == len(p.checks) and len(cs) > 3 else ", ".join(c.check for c in cs)
                lines.append((f"-{sum(c.max_points for c in cs)}", p.name, names, reason))
        w = [max([len(l[i]) for l in lines] + [0]) for i in range(2)]
        w.append(max([len(l[2]) for l in lines if len(l[2]) <= NAMES_COLUMN] + [0]))
        out = []
        for a, b, c, d in lines:
            if len(c) <= w[2]:
                out.append(f"{a:>{w[0]}}  {b:<{w[1]}}  {c:<{w[2]}}  {d}")
            else:        # a long list of names (unanswered questions) has its reason on the next line
                out.append(f"{a:>{w[0]}}  {b:<{w[1]}}  {c}\n{'':>{w[0]}}  {'':<{w[1]}}  {d}")
        return out

    def text(self):
        m = self.meta
        out = [f"{m['lab_title']} grade: {m['what']}"]
        out.append(f"GPU: {m['gpu_text']}" + ("" if m["gpu"] else "; the GPU checks are reported as "
                                               "'needs a GPU' (neither passed nor failed)"))
        out.append(f"SASS and ptxas for {m['arch']}; inputs drawn with seed {m['seed']} (GRADE_SEED={m['seed']} repeats them)")
        for part, (arch, why) in (m.get("sass_elsewhere") or {}).items():     # sass_arch: t3 on sm_75
            out.append(f"{part}: SASS read for {arch}, where what it teaches shows ({m['arch']}: {why})")
        rows = [{"part": p.name, "points": p.points, "graded": p.graded_max, "pending": p.pending or None,
                 "title": p.title} for p in self.parts]
        rows.append({"part": "total", "points": self.score, "graded": self.graded_max, "pending": self.pending or None,
                     "title": ""})
        out += ["", rep.table(rows, [("part", "part", ""), ("points", "points", "d"), ("graded", "of", "d"),
                                     ("pending", "needs GPU", "d"), ("title", "what", "")])]
        lost = self.lost_lines()
        out += ["", "Lost points (one line per reason):" if lost else "Lost points: none."]
        out += ["  " + l.replace("\n", "\n  ") for l in lost]
        pred = self.extra.get("predictions")
        if pred and pred.get("rows"):
            cols = [("id", "prediction", ""), ("predicted", "yours", "")]
            cols += [("measured", "measured", ".3g")] if pred.get("measured_on") else []
            out += ["", rep.table(pred["rows"], cols + [("unit", "unit", ""), ("status", "", "")],
                                  title=(f"Predictions at {m['prediction_size']}³ against {pred['source']}"
                                         if pred.get("measured_on") else "Predictions (derived, graded here)"))]
        pending = {}                       # the checks that wait for a GPU -> the parts they belong to
        for p in self.parts:
            names = ", ".join(c.check for c in p.checks if c.status == NEEDS_GPU)
            if names:
                pending.setdefault(names, []).append(p.name)
        if pending:
            out += ["", "Needs a GPU (not graded here): " +
                    "; ".join(f"{names} of {', '.join(ps)}" for names, ps in pending.items())]
        skipped = [f"{c.part} {c.check}: {c.reason}" for c in (c for p in self.parts for c in p.checks)
                   if c.status == SKIPPED]
        if skipped:
            out += ["", "Skipped (neither passed nor failed):"] + ["  " + s for s in skipped]
        out += ["", f"score: {self.score} of {self.graded_max} points graded here"
                    + (f" ({self.pending} more need a GPU or a missing tool)" if self.pending else "")]
        return "\n".join(out)

    def to_json(self):
        return {**self.meta, "what": f"{self.meta['lab']} grade", "score": self.score, "graded_max": self.graded_max,
                "pending": self.pending, "max_total": sum(p.max_points for p in self.parts),
                "parts": [{"part": p.name, "title": p.title, "source": p.source, "note": p.note, "points": p.points,
                           "graded_max": p.graded_max, "pending": p.pending, "max_points": p.max_points,
                           "checks": [{"check": c.check, "what": c.what, "status": c.status, "points": c.points,
                                       "max_points": c.max_points, "reason": c.reason, "details": c.details}
                                      for c in p.checks]} for p in self.parts],
                "lost": self.lost_lines(), **self.extra}


# ---------------------------------------------------------------------------------------------
# Where and how
# ---------------------------------------------------------------------------------------------

@dataclass
class Env:
    gpu: bool
    gpu_text: str
    arch: str
    seed: int
    work: Path          # scratch folder for the GPU workers' files and logs
    phases: dict = field(default_factory=dict)      # seconds per phase of the last grade_many (timed)


def environment(g, gpu=None, arch=None, seed=None, work=None):
    """gpu=None: use one if there is one; False: never; True: there must be one (CourseError)."""
    from common.device import gpu_status
    if gpu is False:
        ok, text = False, "not used (grading without a GPU was asked for)"
    else:
        ok, text = gpu_status()
        if gpu and not ok:
            raise CourseError(f"a GPU was asked for, and there is none: {text}")
        if not ok:
            text = f"none ({text})"
    if arch is None and ok:
        # a GPU none of the graded kernels runs on (lab 7c's sm_90a rows on an sm_80): graded as without a
        # GPU, on GRADE_ARCH's SASS, the GPU checks needs-gpu with the reason
        here = g.lab.gpu_arch()
        rows = [g.lab.kernel(p.kernel) for p in g.code_parts if p.kernel]
        if rows and all(g.lab.build_arch(k, here) is None for k in rows):
            if gpu:
                raise CourseError(f"a GPU was asked for, and this one ({here}) runs none of the graded kernels: "
                                  f"{rows[0].unsupported(here)}")
            ok, text = False, f"this GPU ({here}) runs none of the graded kernels: {rows[0].unsupported(here)}"
    if arch is None:
        arch = g.lab.gpu_arch() if ok else g.lab.option("GRADE_ARCH", DEFAULT_ARCH)
    seed = int(seed if seed is not None else os.environ.get("GRADE_SEED") or secrets.randbits(31))
    work = Path(work) if work else Path(tempfile.mkdtemp(prefix=f"{g.lab.short}-grade-"))
    return Env(ok, text, arch, seed, work)


@dataclass
class Job:
    name: str                         # what is graded, in words: a workspace folder, "wrong/<name>.patch"
    sources: dict                     # code part -> .cu file
    parts: list                       # part names to grade, in order
    answers: Path = None              # answers.toml (questions and predictions)


def workspace_job(g, workspace, parts=None, name=None):
    """A Job for a workspace folder: its kernels (the reference files' names) and answers.toml."""
    workspace = Path(workspace)
    if not workspace.is_dir():
        raise CourseError(f"there is no workspace at {workspace}",
                          hint=f"create it with `{rep.make_command('workspace')}` (or pass WORKSPACE=path to yours)")
    names = [p.name for p in g.parts]
    parts = list(parts or names)
    for p in parts:
        if p not in names:
            raise CourseError(f"there is no part {p!r}", hint=f"parts: {', '.join(names)}")
    files = g.kernel_files()
    return Job(name or str(workspace), {p: workspace / files[p].name for p in parts if p in files},
               parts, workspace / "answers.toml")


def sass_arch(row, arch):
    """The architecture whose SASS the static checks read: `arch`, unless the row loses its idea there
    (Kernel.arch_notes), then the oldest newer one that keeps it (sm_75's t3: sm_80, for its cp.async)."""
    if not row.arch_note(arch):
        return arch
    from common.build import ALL_ARCHS, arch_number
    return next((a for a in ALL_ARCHS if arch_number(a) > arch_number(arch) and row.builds_for(a)
                 and not row.arch_note(a)), arch)


def build_dir_for(g, source):
    """The grader's own build folder for a source file: one per folder, never the lab's build/<arch>."""
    import hashlib
    folder = Path(source).resolve().parent
    digest = hashlib.sha1(str(folder).encode()).hexdigest()[:10]
    return g.build_dir / f"{folder.name}-{digest}"


# ---------------------------------------------------------------------------------------------
# Grading
# ---------------------------------------------------------------------------------------------

def grade(g, workspace, parts=None, gpu=None, arch=None, seed=None, progress=True):
    env = environment(g, gpu, arch, seed)
    return grade_many(g, [workspace_job(g, workspace, parts)], env, progress=progress)[0]


def _say(progress, text):
    if progress:
        print(f"[grade] {text}", file=sys.stderr, flush=True)


@contextlib.contextmanager
def timed(env, phase):
    """Adds the seconds spent in the block to env.phases[phase] (the selftest's JSON keeps them: where
    a slow batch spends its time, compiling, racecheck or ncu). Seconds the block spent waiting for
    its turn on a shared GPU (gpu.turn) are left out: they are the phase gpu.LOCK_WAIT's."""
    from .gpu import LOCK_WAIT
    start, waited = time.perf_counter(), env.phases.get(LOCK_WAIT, 0.0)
    try:
        yield
    finally:
        queued = env.phases.get(LOCK_WAIT, 0.0) - waited
        env.phases[phase] = round(env.phases.get(phase, 0.0) + time.perf_counter() - start - queued, 1)



def _on_the_gpu(g, jobs, env, lab, items, by_item, progress):
    """The GPU checks of a batch: correctness and timing, racecheck, bank conflicts under ncu, and the
    predictions' measurements. Returns (results, races, measured), keyed as grade_many reads them."""
    from . import gpu as gpumod
    gpu_results, races, measured = {}, {}, None
    if items:
        _say(progress, f"GPU: correctness, timing and the re-check of {len(items)} kernel(s)")
        with timed(env, "gpu: correctness and timing"):
            results = gpumod.run_parts(lab, items, env.work / "parts", g.GPU_TIMEOUT_S, g.HANG_HINT)
        # racecheck only for the parts that grade it (a kernel that hangs would hang there too)
        raced = [it for it in items if any(c.kind == "race-free" for c in g.part(it["part"]).checks)]
        if raced:
            _say(progress, f"GPU: compute-sanitizer racecheck on {len(raced)} kernel(s)")
        with timed(env, "gpu: racecheck"):
            race = gpumod.racecheck(lab, raced, env.work / "racecheck", g.SANITIZER_TIMEOUT_S) if raced else {}
        gpu_results = {key: results[iid] for key, iid in by_item.items()}
        races = {key: race.get(iid) for key, iid in by_item.items()}
        shapes = {p.name: c.shape for p in g.code_parts for c in p.checks if c.kind == "bank-conflicts"}
        banked = [it for it in items if it["part"] in shapes]
        if banked:                    # bankcheck.py: ncu on the student's kernel and on the reference
            from . import bankcheck
            _say(progress, f"GPU: shared-memory bank conflicts under ncu, {len(banked)} kernel(s)")
            with timed(env, "gpu: ncu bank conflicts"):
                conflicts = bankcheck.measure(lab, banked, shapes, env.work / "ncu", g.GPU_TIMEOUT_S)
            for key, iid in by_item.items():
                if iid in conflicts and isinstance(gpu_results.get(key), dict):
                    gpu_results[key]["bank_conflicts"] = conflicts[iid]
    if any(not p.computed for p in g.predictions) and any("predictions" in job.parts for job in jobs):
        _say(progress, f"GPU: the reference ladder and cuBLAS at {g.PREDICTION_SIZE}³ (for the predictions)")
        with timed(env, "gpu: predictions"):
            measured = gpumod.measure(lab, env.work / "measure.json", g.GPU_TIMEOUT_S)
    return gpu_results, races, measured


def grade_many(g, jobs, env, progress=True):
    """Grade every job; the GPU work of all of them in one batch (one racecheck run per batch of
    distinct file names). Returns one Report per job, in order."""
    # 1. compile every code part of every job (the grader's own build folders)
    lab = g.lab
    tasks = [(ji, name, Path(src)) for ji, job in enumerate(jobs) for name, src in job.sources.items()
             if name in job.parts and not g.part(name).rules]
    _say(progress, f"compiling {len(tasks)} kernel(s) for {env.arch}")
    with timed(env, "compile"), ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        futures = {(ji, name): pool.submit(static.compile_student, lab, g.part(name), src, env.arch,
                                           build_dir_for(g, src), g.headers)
                   for ji, name, src in tasks}
        compiled = {key: f.result() for key, f in futures.items()}
    # 1b. the host probes (hostprobe.py), all at once: each is an nvcc run of a few seconds (lab 7b's
    # include CuTe), and one after the other they took 236 s of lab 7b's selftest on the H200
    probes = [(key, chk) for key, c in compiled.items() if c.ok for chk in g.part(key[1]).checks if chk.kind == "probe"]
    probed = {}
    if probes:
        from . import hostprobe
        _say(progress, f"running {len(probes)} host probe(s)")
        with timed(env, "host probes"), ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
            futures = {(key, chk.name): pool.submit(hostprobe.run, g, g.part(key[1]), chk, compiled[key])
                       for key, chk in probes}
            probed = {k: f.result() for k, f in futures.items()}
    # 2. SASS. A part whose kernel loses its idea on this architecture (Kernel.arch_notes: t3 has no
    # cp.async on sm_75) is read in the SASS of the oldest newer one that keeps it; it runs on this one.
    facts, sass_error = {}, ""
    with timed(env, "sass"):
        for key, c in compiled.items():
            if not c.ok:
                continue
            try:
                shown = sass_arch(c.row, env.arch)
                if shown != env.arch:
                    _say(progress, f"{key[1]}: SASS read for {shown} ({c.row.arch_note(env.arch)})")
                    c = static.compile_student(lab, g.part(key[1]), c.source, shown, build_dir_for(g, c.source), g.headers)
                facts[key] = static.sass_facts(c) if c.ok else None
                sass_error = sass_error or c.error
            except CourseError as e:
                sass_error = e.message
    # 3. the GPU
    gpu_results, races, measured = {}, {}, None
    if env.gpu:
        items, by_item = [], {}
        kernels = sorted({g.part(name).kernel for _, name, _ in tasks})
        _say(progress, f"building the reference kernels ({', '.join(kernels)}) for {env.arch}")
        lab.build([lab.kernel(k) for k in kernels], [env.arch])
        for (ji, name), c in compiled.items():
            if not c.ok:
                continue
            part = g.part(name)
            ref = lab.kernel(part.kernel)
            iid = f"{ji}-{name}"
            items.append({"id": iid, "part": name, "kernel": part.kernel, "source": str(c.source),
                          "cubin": str(c.cubin),
                          "reference_cubin": str(ref.cubin(lab.build_dir_of(ref), lab.build_arch(ref, env.arch))),
                          "seed": env.seed + 7919 * len(items)})
            by_item[(ji, name)] = iid
        from . import gpu as gpumod
        with gpumod.turn(env.phases):
            gpu_results, races, measured = _on_the_gpu(g, jobs, env, lab, items, by_item, progress)
    # 4. the reports
    with timed(env, "checks and reports"):
        reports = []
        for ji, job in enumerate(jobs):
            parts_out, extra = [], {}
            answers, answers_error = None, ""
            if any(p in ("questions", "predictions") for p in job.parts):
                try:
                    answers = answers_mod.load(job.answers)
                except CourseError as e:
                    answers_error = e.line             # one line, with its hint: what to do (a valid line)
            for name in job.parts:
                part = g.part(name)
                if name == "questions":
                    pr, extra["questions"] = _questions(g, part, answers, answers_error)
                elif name == "predictions":
                    pr, extra["predictions"] = _predictions(g, part, answers, answers_error, env, measured)
                elif part.rules:
                    pr = _rules_part(g, part, job.sources.get(name), env)
                else:
                    key = (ji, name)
                    c = compiled.get(key) or static.Compiled(name, Path(job.sources.get(name, "?")),
                                                             error=f"no source file for {name}")
                    pr = _code_part(g, part, c, facts.get(key), sass_error, gpu_results.get(key), races.get(key), env,
                                    {chk: v for (k, chk), v in probed.items() if k == key})
                parts_out.append(pr)
            meta = {"lab": lab.short, "lab_title": lab.title.split(":")[0], "workspace": job.name, "what": job.name,
                    "gpu": env.gpu, "gpu_text": env.gpu_text, "arch": env.arch, "seed": env.seed,
                    "run": rep.run_info(lab.dir), "speed_pct": g.SPEED_PCT, "timing_size": g.TIMING_SIZE,
                    "prediction_size": g.PREDICTION_SIZE,
                    "sass_elsewhere": {name: (sass_arch(c.row, env.arch), c.row.arch_note(env.arch))
                                       for (ji2, name), c in compiled.items()
                                       if ji2 == ji and c.row is not None and sass_arch(c.row, env.arch) != env.arch}}
            reports.append(Report(job.name, parts_out, meta, extra))
    return reports


# ---------------------------------------------------------------------------------------------
# One code part
# ---------------------------------------------------------------------------------------------

def case_reason(case):
    """One line for a wrong result, from the worker's verdict dict."""
    where = f"for shape {case['label'].split()[-1]} ({case['label'].split()[0]})"
    if case.get("when"):
        where += f", {case['when']}"
    if case.get("outside_before") or case.get("outside_after"):
        side = "after its end" if case.get("outside_after") else "before its start"
        n = case.get("outside_after") or case.get("outside_before")
        return f"wrote outside C {where}: {n} word(s) {side} changed (a store guard off by one?)"
    if case.get("computed_nan"):
        i, j = case["first_nan"]
        return (f"NaN at ({i}, {j}) {where}: a read past the end of A or B (the grader surrounds them with NaN), "
                f"or of memory never written; {case['computed_nan']} NaN element(s)")
    if case.get("unwritten"):
        i, j = case["first_unwritten"]
        return f"never wrote ({i}, {j}) {where}: {case['unwritten']} element(s) still hold the NaN poison"
    i, j = case["worst_index"]
    pattern = (case.get("pattern") or {}).get("summary")
    return (f"wrong element at ({i}, {j}) {where}: got {case['got']:.6g}, want {case['want']:.6g} "
            f"(tol {case['tol']:.1e}); {case['bad']} bad element(s)" + (f" in {pattern}" if pattern else ""))


def _correct(res):
    if res is None:
        return FAIL, "not run on the GPU", {}
    if res.get("crash") and res["crash"].get("stage") in ("start", "correctness"):
        cr = res["crash"]
        at = f" at {cr['label']}" if cr.get("label") else ""
        return FAIL, f"crashed on the GPU{at}: {cr['error']}", {"crash": cr}
    cases = res.get("cases", [])
    bad = [c for c in cases if not c["ok"]]
    if bad:
        more = f" ({len(bad)} of {len(cases)} runs wrong)" if len(bad) > 1 else ""
        return FAIL, case_reason(bad[0]) + more, {"cases": [c["verdict"] for c in cases]}
    for key in ("after_timing", "fresh"):
        c = res.get(key)
        if c and not c["ok"]:
            return FAIL, case_reason(c) + " (a kernel must compute every call: no cached result)", {key: c}
    if res.get("crash"):
        cr = res["crash"]
        return FAIL, f"crashed on the GPU during {cr['stage']} at {cr.get('label') or '?'}: {cr['error']}", {"crash": cr}
    if not res.get("fresh"):
        return FAIL, "the re-check after timing did not run", {}
    return PASS, "", {"cases": len(cases)}


def _fast(res, speed_pct):
    t = (res or {}).get("timing")
    if not t:
        return FAIL, "not timed", {}
    ok = t["pct_of_reference"] >= speed_pct
    reason = "" if ok else (f"{t['pct_of_reference']:.0f} % of the reference's speed at {t['size']}³ "
                            f"({t['student_ms']:.3f} ms against {t['reference_ms']:.3f} ms, same GPU, same run; "
                            f"{speed_pct} % needed)")
    return (PASS if ok else FAIL), reason, t


def _code_part(g, part, compiled, facts, sass_error, gpu_res, race, env, probed):
    """One part's checks from what the batch found (probed: {probe check: (ok, reason)}, run already)."""
    raw = {}
    for c in part.checks:
        if c.needs_gpu and not env.gpu:    # never scored without a GPU, not even when the file does not
            raw[c.name] = (NEEDS_GPU, f"needs a GPU: {env.gpu_text}", {})   # compile: the same "graded
        elif not compiled.ok:                                                 # here" for every student
            raw[c.name] = (FAIL, compiled.error, {})
        elif c.kind == "correct":
            raw[c.name] = _correct(gpu_res)
        elif c.kind == "fast":
            raw[c.name] = _fast(gpu_res, g.SPEED_PCT)
        elif c.kind in ("bandwidth", "bitwise"):
            from . import measures
            raw[c.name] = getattr(measures, f"{c.kind}_verdict")(gpu_res, c)
        elif c.kind == "bank-conflicts":  # bankcheck.py
            from . import bankcheck
            raw[c.name] = bankcheck.verdict((gpu_res or {}).get("bank_conflicts"), c)
        elif c.kind == "race-free":
            status, reason = race or (FAIL, "racecheck did not run")
            raw[c.name] = (status, reason, {})
        elif c.kind == "probe":           # hostprobe.py, run for the whole batch in step 1b
            ok, reason = probed[c.name]
            raw[c.name] = (PASS if ok else FAIL, reason, {})
        elif facts is None:
            raw[c.name] = (SKIPPED, f"SASS not read: {sass_error}", {})
        else:
            ok, reason = static.run_check(c.kind, compiled, facts, c)
            raw[c.name] = (PASS if ok else FAIL, reason, {})
    out = []
    for c in part.checks:
        status, reason, details = raw[c.name]
        if compiled.ok and c.requires and raw[c.requires][0] != PASS and status != NEEDS_GPU:
            dep = raw[c.requires][0]
            status, reason = (dep, raw[c.requires][1]) if dep in (SKIPPED, NEEDS_GPU) else \
                (FAIL, f"needs {c.requires} first")
        out.append(CheckResult(part.name, c.name, c.what, c.points, status, reason, details))
    source = str(compiled.source) if compiled.source else ""
    return PartResult(part.name, part.title, out, source)


def _rules_part(g, part, source, env):
    """A part whose answer is a rules file, not a kernel (rules.py grades it, here and on a GPU)."""
    from . import gpu as gpumod, rules
    with gpumod.turn(env.phases):               # its speed is measured on the GPU (rules.py)
        raw = rules.verdicts(g, part, source, env)
    return PartResult(part.name, part.title, [CheckResult(part.name, c.name, c.what, c.points, *raw[c.name])
                                              for c in part.checks], str(source or ""))


# ---------------------------------------------------------------------------------------------
# Questions and predictions
# ---------------------------------------------------------------------------------------------

def _questions(g, part, answers, error):
    """One check per question: the answer, and the reason where the question asks for one. The
    table in the report holds what the student wrote and the verdict, never the expected value
    (the report is written into the student's lab folder)."""
    given = (answers or {}).get("questions", {})
    out, table = [], []
    for q, c in zip(g.questions, part.checks):
        if error:
            status, reason = FAIL, error
        else:
            ok, reason = q.grade(given.get(q.id))
            if ok:
                ok, reason = q.grade_reason(given.get(q.why_key), g.questions)
            status = PASS if ok else FAIL
        out.append(CheckResult(part.name, q.id, q.text, c.points, status, reason))
        row = {"id": q.id, "answer": given.get(q.id), "tolerance": q.tolerance_text(), "ok": status == PASS}
        if q.why:
            row["why"] = given.get(q.why_key)
        table.append(row)
    return PartResult(part.name, part.title, out, note=""), table


def _predictions(g, part, answers, error, env, measured):
    given = (answers or {}).get("predictions", {})
    source, values, measured_on = None, {}, None
    if measured and not measured.get("error"):
        values, measured_on = measured["values"], measured["gpu"]
        source = f"this run on {measured['gpu']} ({measured['size']}³, reference kernels and cuBLAS timed just now)"
    else:
        rec, size, path, gpu_name = answers_mod.recorded_measurements(g)
        if rec:
            values, measured_on = rec, gpu_name
            why = "no GPU here" if not env.gpu else (measured or {}).get("error", "not measured")
            source = f"the newest recorded run, results/{Path(path).name} ({gpu_name}, {size}³): {why}"
    out, rows = [], []
    for p, c in zip(g.predictions, part.checks):
        m = values.get(p.id)
        if not p.computed and source is None:     # first: not scored here, whatever answers.toml holds
            status, reason = NEEDS_GPU, "needs a GPU (and no recorded run in results/ to compare with)"
        elif error:
            status, reason = FAIL, error
        elif p.computed:
            ok, reason = grade_prediction(p, given.get(p.id), None)
            status = PASS if ok else FAIL
        else:
            ok, reason = grade_prediction(p, given.get(p.id), m, g.PREDICTION_FACTOR)
            status = PASS if ok else FAIL
        out.append(CheckResult(part.name, p.id, p.text, c.points, status, reason))
        # The measurement is shown once the prediction scored, never before (it would be the answer);
        # a computed prediction's value is never shown.
        shown = m if (status == PASS and not p.computed) else None
        rows.append({"id": p.id, "predicted": given.get(p.id), "measured": shown, "unit": p.unit,
                     "status": {PASS: "ok", FAIL: "off", NEEDS_GPU: "-"}.get(status, status)})
    if source is None and g.predictions and all(p.computed for p in g.predictions):
        source = "the course's models (computed, no GPU needed)"
    note = f"measured: {source}" if source else ""
    return PartResult(part.name, part.title, out, note=note), {"source": source or "nothing", "measured_on": measured_on,
                                                              "rows": rows}


def finite(value):
    """The value with NaN and infinities as strings, so the JSON is strict (teachers' tools choke on NaN)."""
    if isinstance(value, float) and value != value or value in (float("inf"), float("-inf")):
        return str(value)
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(v) for v in value]
    return value


def write_json(g, report, path=None):
    path = Path(path) if path else g.reports_dir / f"{Path(report.name).name or 'workspace'}.json"
    return rep.write_json(path, finite(report.to_json()))
