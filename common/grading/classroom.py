"""`make grade-class`: a whole class graded, one submission per worker, and the class report.

    run(g, args)                      the target: grade here (JOBS= workers), SLURM=1|print (slurm.py),
                                      MERGE=1 (the report from what is graded), --task I (one Slurm task)
    demo(g, dest, force=False)        `make grade-class-demo`: a class of the reference solution, the
                                      untouched workspace and one workspace per known-wrong kernel
    Plan.load(out) / plan.save()      the class's settings, kept in OUT/manifest.json (the seed too,
                                      so that a resumed run or a Slurm task grades with the same one)
    grade_one(plan, sub, ...)         -> record: unpack, check, run `python -m common grade ... --json`
                                      in a private folder under a time limit, read its report

Each submission is graded by the course's own `python -m common grade --json` (exactly `make grade`)
in a process of its own, in a private copy of the submission (submissions.py), with a scrubbed
environment and, where bubblewrap works, the rest of the machine read-only (sandbox.py). A crash or a
time-out costs that submission alone: its row says so with the end of its log. What is graded is
kept in OUT/students/<name>.json and not graded again unless the submission, the seed, the parts or
the GPU choice changed, a time-out gets a longer TIMEOUT=, or FORCE=1.

Seeds: one for the class (SEED=, else GRADE_SEED, else drawn once and kept in the manifest), the same
inputs for every student; SEEDS=student derives one per student from the class seed and the name.
"""
import hashlib
import json
import os
import queue
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

from .. import report as rep
from .. import writes
from ..errors import CourseError
from . import classreport, gpu as gpumod, sandbox, submissions
from . import workspace as workspace_mod

ROOT = Path(__file__).resolve().parents[2]        # the course: what makes `common` importable
FINISHED = ("graded", "crashed", "timed out", "refused")
DEFAULT_TIMEOUT_GPU = 900     # s per submission: the grader's own limits (120 s per part's GPU run,
DEFAULT_TIMEOUT_NOGPU = 300   # 300 s of racecheck) fit inside; without a GPU, compiling is all
LOG_TAIL = 1500               # characters of a failed worker's log kept in its row
_RUNNING, _RUNNING_LOCK = set(), threading.Lock()     # the workers now running (killed on Ctrl-C)
_STOPPED = threading.Event()                           # set on Ctrl-C: a killed worker's record is not kept


def student_seed(seed, name):
    """SEEDS=student: the class seed and the student's name, hashed; the same every run."""
    return int.from_bytes(hashlib.sha256(f"{seed}:{name}".encode()).digest()[:4], "big") & 0x7FFFFFFF


@dataclass
class Plan:
    lab: str                      # the lab's folder
    submissions: str
    out: str
    seed: int
    seed_policy: str = "class"    # "class" or "student"
    parts: list = None
    no_gpu: bool = False
    arch: str = None
    timeout: int = None
    isolate: str = "auto"
    students: list = field(default_factory=list)     # [Submission.to_json()]
    ignored: list = field(default_factory=list)

    @property
    def out_dir(self):
        return Path(self.out)

    @property
    def manifest(self):
        return self.out_dir / "manifest.json"

    def seed_for(self, name):
        return student_seed(self.seed, name) if self.seed_policy == "student" else self.seed

    def save(self):
        rep.write_json(self.manifest, {"what": "grade-class manifest", **asdict(self)})

    @classmethod
    def load(cls, out):
        path = Path(out) / "manifest.json"
        if not path.exists():
            raise CourseError(f"{path} is not there: nothing has been graded into {out}",
                              hint=f"run `{rep.make_command('grade-class SUBMISSIONS=dir')}` first (OUT= where it wrote)")
        data = json.loads(path.read_text())
        data.pop("what", None)
        data["out"] = str(Path(out).resolve())        # where it is now (a copied or moved report)
        return cls(**data)

    def key(self, name, sha):
        """What a kept record must match to be kept."""
        return {"sha256": sha, "seed": self.seed_for(name), "parts": self.parts, "no_gpu": self.no_gpu,
                "arch": self.arch}

    def subs(self):
        return [submissions.Submission(s["name"], Path(s["path"]), s["kind"]) for s in self.students]


def make_plan(g, args):
    out = Path(args.out).resolve() if args.out else g.lab.reports_dir / "class"
    if not args.submissions:
        raise CourseError("grade-class needs SUBMISSIONS=dir (one folder or archive per student)",
                          hint="e.g. make grade-class SUBMISSIONS=~/class; `make grade-class-demo DEST=dir` "
                               "writes a demo class")
    folder = Path(args.submissions).expanduser().resolve()
    subs, ignored = submissions.find(folder)
    parts = [p.strip() for p in args.parts.split(",") if p.strip()] if args.parts else None
    for p in parts or []:
        g.part(p)
    old = None
    if (out / "manifest.json").exists():
        try:
            old = Plan.load(out)
        except (CourseError, TypeError, ValueError):
            old = None
    seed = args.seed if args.seed is not None else (int(os.environ["GRADE_SEED"]) if os.environ.get("GRADE_SEED")
                                                    else (old.seed if old else secrets.randbits(31)))
    policy = (args.seeds or "class").lower()
    if policy not in ("class", "student"):
        raise CourseError(f"SEEDS={args.seeds} is not a choice", hint="SEEDS=class (the default) or SEEDS=student")
    return Plan(lab=str(g.lab.dir), submissions=str(folder), out=str(out), seed=int(seed), seed_policy=policy,
                parts=parts, no_gpu=bool(args.no_gpu), arch=args.arch, timeout=args.timeout,
                isolate=args.isolate or "auto", students=[s.to_json() for s in subs], ignored=ignored)


# ---------------------------------------------------------------------------------------------
# GPUs and the reference kernels
# ---------------------------------------------------------------------------------------------

def visible_gpus():
    """The GPU ids a worker may be given (CUDA_VISIBLE_DEVICES, else nvidia-smi -L); [] without."""
    exe = shutil.which("nvidia-smi")
    if not exe:
        return []
    try:
        out = subprocess.run([exe, "-L"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return []
    n = len([l for l in out.stdout.splitlines() if l.startswith("GPU ")]) if out.returncode == 0 else 0
    if not n:
        return []
    env = os.environ.get("CUDA_VISIBLE_DEVICES")
    if env is not None:
        return [x.strip() for x in env.split(",") if x.strip()][:n]
    return [str(i) for i in range(n)]


def prebuild(g, plan, gpus):
    """With a GPU, the reference kernels of the graded parts are built here, once, before any
    worker runs: workers then find them up to date (under bwrap they could not write them), and
    parallel workers or Slurm tasks never build the same cubin at once (a lock file serializes it).
    A rules part's kernels too (rules.kernels: every family it may launch): on the H200 lab 7d's
    class built splitk_fp32 inside a worker, and the four submissions graded then were told they
    wrote outside their folders."""
    if plan.no_gpu or not gpus:
        return
    import fcntl
    from ..device import detect_arch
    arch = plan.arch or detect_arch()
    if not arch:
        return
    wanted = set(plan.parts or [p.name for p in g.parts])
    kernels = sorted({p.kernel for p in g.code_parts if p.name in wanted and p.kernel})   # rules parts have none
    rows = [g.lab.kernel(k) for k in kernels]
    if any(p.rules for p in g.parts if p.name in wanted):
        from . import rules
        rows += [k for k in rules.kernels(g) if getattr(k, "base_name", k.name) not in kernels]
    lock = plan.out_dir / ".build.lock"
    lock.parent.mkdir(parents=True, exist_ok=True)
    with open(lock, "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        g.lab.build(rows, [arch])


# ---------------------------------------------------------------------------------------------
# Writes outside a submission's folder
# ---------------------------------------------------------------------------------------------

# how long a change the journal does not explain yet waits for its note: the course notes a file right
# after it is in place, so a snapshot can fall between the two
NOTE_GRACE_S = 0.5


class Watch:
    """Snapshots of what grading trusts, at every worker's start and end: the grader (common/, mk/),
    the lab (its table, kernels/, grading/, build/ with the reference cubins; not its reports/) and
    the submissions. A change between two snapshots is laid at the door of every worker running in
    between, unless another process of the course explains it:
      - a file rewritten with the same bytes has not changed (Snapshot compares digests);
      - a file the course's own code wrote outside any grading worker (a build, a benchmark, another
        grading job: common/writes.py's journal holds its path and digest) is theirs;
      - Python's byte-code cache (__pycache__/*.pyc) that matches its source, as any Python process
        importing the course writes it (the workers themselves write none).
    Anything else that writes there meanwhile (a teacher editing the lab) is still laid at the door of
    the workers then running, so the row says "changed while it ran"."""

    def __init__(self, plan, work_root):
        lab = Path(plan.lab)
        roots = [ROOT / "common", ROOT / "mk", lab, plan.submissions]
        exclude = [plan.out, work_root, lab / "reports"]
        self.lock = threading.Lock()
        self.journal = writes.Journal()
        self.snap = sandbox.Snapshot(roots, exclude)
        self.active = set()
        self.found = {}
        self.fresh = True            # nothing ran since self.snap was taken

    def explained(self, what, path, later):
        if what == "removed":
            return self.journal.explains(path, None)
        if _is_valid_bytecode(path):
            return True
        return self.journal.explains(path, later.files.get(path))

    def _step(self):
        if self.fresh and not self.active:
            return
        later = self.snap.again()
        unexplained = [(w, p) for w, p in self.snap.changes(later) if not self.explained(w, p, later)]
        if unexplained:                 # a course process notes a write just after making it: ask again
            time.sleep(NOTE_GRACE_S)
            unexplained = [(w, p) for w, p in unexplained if not self.explained(w, p, later)]
        for what, path in unexplained:
            for name in self.active:
                self.found.setdefault(name, []).append(f"{what} {path}")
        self.snap = later
        self.fresh = True

    def begin(self, name):
        with self.lock:
            self._step()
            self.active.add(name)
            self.found[name] = []
            self.fresh = False

    def end(self, name):
        with self.lock:
            self.fresh = False
            self._step()
            self.active.discard(name)
            return self.found.pop(name, [])


def _is_valid_bytecode(path):
    """A __pycache__/<module>.<tag>.pyc whose header matches its source's size and modification time:
    what Python writes when it imports that source (and what it would ignore were it stale)."""
    import importlib.util
    p = Path(path)
    if p.parent.name != "__pycache__" or p.suffix != ".pyc":
        return False
    try:
        source = Path(importlib.util.source_from_cache(str(p)))
        st = source.stat()
        head = p.read_bytes()[:16]
    except (OSError, ValueError, NotImplementedError):
        return False
    if len(head) < 16 or head[:4] != importlib.util.MAGIC_NUMBER or int.from_bytes(head[4:8], "little") != 0:
        return False
    return (int.from_bytes(head[8:12], "little") == int(st.st_mtime) & 0xFFFFFFFF
            and int.from_bytes(head[12:16], "little") == st.st_size & 0xFFFFFFFF)


# ---------------------------------------------------------------------------------------------
# One submission
# ---------------------------------------------------------------------------------------------

def _tail(text, n=LOG_TAIL):
    text = text.strip()
    return text if len(text) <= n else "..." + text[-n:]


def _read(path):
    try:
        return Path(path).read_text(errors="replace")
    except OSError:
        return ""


def gpu_lock(work_root, gpu):
    """The lock file of one GPU when more workers than GPUs grade a class (gpu.turn says how it is used);
    it holds the number of workers that share the GPU, by which each one's time limit is multiplied."""
    return Path(work_root) / f"gpu-{gpu}.lock"


def grade_one(g, plan, sub, work_root, mode, gpu=None, watch=None):
    """Grade one submission; returns its record (what OUT/students/<name>.json holds)."""
    start = time.time()
    students = plan.out_dir / "students"
    students.mkdir(parents=True, exist_ok=True)
    sha = submissions.digest(sub)
    seed = plan.seed_for(sub.name)
    record = {"name": sub.name, "submission": sub.to_json(), "key": plan.key(sub.name, sha), "seed": seed,
              "isolation": mode, "gpu_id": gpu, "host": os.uname().nodename, "outside_writes": [],
              "reason": "", "log_tail": "", "report": None}
    private = Path(tempfile.mkdtemp(prefix=f"{sub.name}-", dir=work_root))
    turns = 1                           # workers taking turns on this submission's GPU
    try:
        try:
            ws = submissions.stage(g, sub, private)
        except submissions.Refused as e:
            record.update(status="refused", reason=str(e), seconds=round(time.time() - start, 2))
            return _finish(plan, record, "", "")
        record["copied"] = workspace_mod.copy_report(g, ws)    # read before the student's code runs
        (private / "out").mkdir()
        report_json = private / "out" / "report.json"
        argv = [sys.executable, "-m", "common", "grade", "--lab", str(plan.lab), "--workspace", str(ws),
                "--json", str(report_json), "--seed", str(seed)]
        argv += ["--no-gpu"] if plan.no_gpu else []
        argv += ["--parts", ",".join(plan.parts)] if plan.parts else []
        argv += ["--arch", plan.arch] if plan.arch else []
        pythonpath = os.pathsep.join([str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep)
                                                    if p and Path(p).resolve() != ROOT])
        extra = {"PYTHONPATH": pythonpath, writes.WORKER_VAR: sub.name}
        if gpu is not None:
            extra["CUDA_VISIBLE_DEVICES"] = gpu
            shared = gpu_lock(work_root, gpu)
            if shared.exists():         # workers share this GPU: each its own link to the GPU's lock
                os.link(shared, private / "gpu.lock")
                extra[gpumod.LOCK_VAR] = str(private / "gpu.lock")
                # its turn may come after every other worker's on this GPU: that wait is not its time
                turns = int(shared.read_text() or 1)
        env = sandbox.worker_env(private, extra)
        hide = [plan.submissions, plan.out, work_root]
        cmd = sandbox.wrap(argv, mode, private, hide=hide, gpu=not plan.no_gpu,
                           readonly=[ROOT, plan.lab, Path(sys.executable).parent])
        timeout = plan_timeout(plan) * turns
        record["timeout"] = timeout
        if watch:
            watch.begin(sub.name)
        rc, timed_out = None, False
        try:
            with open(private / "stdout.txt", "w") as so, open(private / "stderr.txt", "w") as se:
                proc = subprocess.Popen(cmd, cwd=str(private if mode == "bwrap" else ROOT), env=env,
                                        stdin=subprocess.DEVNULL, stdout=so, stderr=se, start_new_session=True)
                with _RUNNING_LOCK:
                    _RUNNING.add(proc)
                try:
                    rc = proc.wait(timeout=timeout)
                except subprocess.TimeoutExpired:
                    timed_out = True
                    _kill(proc)
                finally:
                    with _RUNNING_LOCK:
                        _RUNNING.discard(proc)
        finally:
            if watch:
                record["outside_writes"] = watch.end(sub.name)
        if _STOPPED.is_set():
            return None                              # interrupted: graded again by the next run
        out, err = _read(private / "stdout.txt"), _read(private / "stderr.txt")
        record["seconds"] = round(time.time() - start, 2)
        if timed_out:
            record.update(status="timed out", reason=f"did not finish in {timeout} s (TIMEOUT={timeout}); killed",
                          log_tail=_tail(err + out))
        elif rc == 0 and report_json.exists():
            try:
                record.update(status="graded", report=json.loads(report_json.read_text()))
            except ValueError as e:
                record.update(status="crashed", reason=f"its report is not JSON: {e}", log_tail=_tail(err + out))
        else:
            why = f"killed by signal {-rc}" if rc is not None and rc < 0 else f"exit status {rc}"
            last = [l for l in err.strip().splitlines() if l.strip()][-1:] or ["no output"]
            record.update(status="crashed", reason=f"the grader's worker failed ({why}): {last[0][:300]}",
                          log_tail=_tail(err + out))
        return _finish(plan, record, out, err)
    finally:
        shutil.rmtree(private, ignore_errors=True)


def kill_running():
    """Every worker still running, with its process group (a Ctrl-C of the class run)."""
    _STOPPED.set()
    with _RUNNING_LOCK:
        procs = list(_RUNNING)
    for p in procs:
        _kill(p)


def _kill(proc):
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        proc.kill()
    proc.wait()


def _public_text(text, record):
    """The report as the student reads it, with the worker's temporary folders (deleted once it is
    graded) replaced by what stays: the submission's path and the student's JSON in the class report."""
    lines = (text or "").split("\n")
    for i, line in enumerate(lines):
        if i == 0 and " grade: " in line:
            lines[i] = line.split(" grade: ")[0] + " grade: " + str(record["submission"]["path"])
        elif line.startswith("JSON report (for teachers): "):
            lines[i] = f"JSON report (for teachers): students/{record['name']}.json"
    return "\n".join(lines)


def _finish(plan, record, out, err):
    students = plan.out_dir / "students"
    name = record["name"]
    out = _public_text(out, record) if out else out
    (students / f"{name}.txt").write_text(out or f"{record['status']}: {record['reason']}\n")
    (students / f"{name}.log").write_text(err)
    r = record.get("report") or {}
    record.update(score=r.get("score"), graded_max=r.get("graded_max"), pending=r.get("pending"),
                  max_total=r.get("max_total"))
    flags = [record.get("copied") or ""]
    if record["outside_writes"]:
        flags.insert(0, f"wrote outside its folder: {len(record['outside_writes'])} path(s) changed while it ran, "
                        f"e.g. {record['outside_writes'][0]}")
    if any(flags):
        record["flags"] = "; ".join(f for f in flags if f)
    rep.write_json(students / f"{name}.json", record)
    classreport.student_page(plan, record, out, err)
    return record


def kept_record(plan, sub):
    """The record of an earlier run when it may be kept (same submission and settings), else None."""
    path = plan.out_dir / "students" / f"{sub.name}.json"
    if not path.exists():
        return None
    try:
        rec = json.loads(path.read_text())
    except ValueError:
        return None
    if rec.get("status") not in FINISHED:
        return None
    if rec.get("key") != plan.key(sub.name, submissions.digest(sub)):
        return None
    if rec["status"] == "timed out" and plan_timeout(plan) > rec.get("timeout", 0):
        return None                                  # a longer TIMEOUT= gives it another chance
    return rec


def plan_timeout(plan):
    return plan.timeout or (DEFAULT_TIMEOUT_NOGPU if plan.no_gpu else DEFAULT_TIMEOUT_GPU)


# ---------------------------------------------------------------------------------------------
# The whole class here
# ---------------------------------------------------------------------------------------------

def score_text(rec):
    if rec.get("status") != "graded":
        return rec.get("status", "?")
    s = f"{rec['score']}/{rec['graded_max']}"
    return s + (f" (+{rec['pending']} need a GPU)" if rec.get("pending") else "")


def grade_here(g, plan, jobs=None, force=False, quiet=False):
    """Every submission of the plan, JOBS at a time; returns the records in the plan's order."""
    subs = plan.subs()
    gpus = [] if plan.no_gpu else visible_gpus()
    mode, note = sandbox.choose(plan.isolate, gpu=bool(gpus))
    jobs = int(jobs) if jobs else (len(gpus) if gpus else (os.cpu_count() or 1))
    jobs = max(1, min(jobs, len(subs)))
    todo, records = [], {}
    for s in subs:
        rec = None if force else kept_record(plan, s)
        if rec:
            records[s.name] = rec
        else:
            todo.append(s)
    if not quiet:
        where = (f"{len(gpus)} GPU(s): {', '.join(gpus)}" if gpus else
                 "no GPU used (NOGPU=1)" if plan.no_gpu else "no GPU here (the GPU checks say needs-gpu)")
        print(f"grade-class: {len(subs)} submission(s) in {plan.submissions}; {len(records)} kept from an earlier "
              f"run{' (FORCE=1 grades them again)' if records else ''}, {len(todo)} to grade, {jobs} at a time; "
              f"{where}")
        if plan.ignored:
            print("grade-class: ignored (neither a folder nor a .tar.gz/.tgz/.tar/.zip): "
                  + ", ".join(plan.ignored[:10]))
        print(f"grade-class: seed {plan.seed}" + (" per student, derived from the name (SEEDS=student)"
                                                  if plan.seed_policy == "student" else " for every student")
              + f"; isolation: {note}")
    plan.out_dir.mkdir(parents=True, exist_ok=True)
    plan.save()
    prebuild(g, plan, gpus)
    n, done, lock = len(subs), [0], threading.Lock()
    width = max(len(s.name) for s in subs)

    def say(rec, kept=False):
        with lock:
            done[0] += 1
            if quiet:
                return
            extra = ("kept (graded before)" if kept else f"{rec.get('seconds', 0):6.1f} s")
            flag = f"  {classreport.flag_words(rec)}" if rec.get("flags") else ""
            print(f"[{done[0]:>{len(str(n))}}/{n}] {rec['name']:<{width}}  {score_text(rec):<24} {extra}{flag}",
                  flush=True)

    for s in subs:
        if s.name in records:
            say(records[s.name], kept=True)
    if todo:
        work_root = Path(tempfile.mkdtemp(prefix="grade-class-"))
        watch = Watch(plan, work_root)
        free = queue.Queue()
        for i in range(jobs):
            free.put(gpus[i % len(gpus)] if gpus else None)
        if gpus and jobs > len(gpus):   # a GPU serves several workers: they take turns on it
            for i, gid in enumerate(gpus):      # the lock file holds how many
                gpu_lock(work_root, gid).write_text(str(len(range(i, jobs, len(gpus)))))

        def one(s):
            gpu = free.get()
            try:
                rec = grade_one(g, plan, s, work_root, mode, gpu=gpu, watch=watch)
            finally:
                free.put(gpu)
            if rec is not None:
                say(rec)
            return rec

        pool = ThreadPoolExecutor(max_workers=jobs)
        try:
            for rec in pool.map(one, todo):
                records[rec["name"]] = rec
        except KeyboardInterrupt:
            pool.shutdown(wait=False, cancel_futures=True)
            kill_running()
            print("grade-class: interrupted; what was graded is kept, the next run goes on from there",
                  file=sys.stderr)
            raise
        finally:
            pool.shutdown(wait=True)
            shutil.rmtree(work_root, ignore_errors=True)
    return [records[s.name] for s in subs]


def grade_task(g, out, index):
    """One Slurm array task: the index-th line of OUT/slurm/tasks.txt, graded as grade_here does."""
    plan = Plan.load(out)
    lines = (plan.out_dir / "slurm" / "tasks.txt").read_text().splitlines()
    if not 0 <= index < len(lines):
        raise CourseError(f"task {index} is not in {plan.out_dir / 'slurm' / 'tasks.txt'} ({len(lines)} lines)")
    name = lines[index].split("\t")[0]
    sub = next(s for s in plan.subs() if s.name == name)
    gpus = [] if plan.no_gpu else visible_gpus()
    mode, note = sandbox.choose(plan.isolate, gpu=bool(gpus))
    print(f"grade-class task {index}: {name} ({sub.path}); seed {plan.seed_for(name)}; isolation: {note}", flush=True)
    prebuild(g, plan, gpus)
    scratch = os.environ.get("TMPDIR") or tempfile.gettempdir()
    work_root = Path(tempfile.mkdtemp(prefix="grade-class-", dir=scratch))
    try:
        watch = Watch(plan, work_root)
        rec = grade_one(g, plan, sub, work_root, mode, gpu=gpus[0] if gpus else None, watch=watch)
    finally:
        shutil.rmtree(work_root, ignore_errors=True)
    print(f"grade-class task {index}: {name}: {score_text(rec)} in {rec.get('seconds', 0):.1f} s"
          + (f"; {rec['reason']}" if rec.get("reason") else "") + (f"; {rec['flags']}" if rec.get("flags") else ""))
    return 0


# ---------------------------------------------------------------------------------------------
# The target
# ---------------------------------------------------------------------------------------------

def _on_sigterm(*_):
    kill_running()
    sys.exit(143)


def run(g, args):
    # SIGTERM (kill, scancel, a Slurm time limit): the workers, each a session of its own, go too
    signal.signal(signal.SIGTERM, _on_sigterm)
    if getattr(args, "task", None) is not None:
        return grade_task(g, args.out or g.lab.reports_dir / "class", args.task)
    if args.merge:
        plan = Plan.load(args.out or g.lab.reports_dir / "class")
        classreport.merge_and_print(g, plan)
        return 0
    plan = make_plan(g, args)
    if args.slurm:
        from . import slurm
        kept, todo = [], []
        for s in plan.subs():
            (todo if args.force or not kept_record(plan, s) else kept).append(s)
        return slurm.run(g, plan, args, todo, kept, plan_timeout(plan))
    start = time.time()
    records = grade_here(g, plan, jobs=args.jobs, force=args.force)
    classreport.merge_and_print(g, plan, wall=time.time() - start, records=records)
    return 0


# ---------------------------------------------------------------------------------------------
# The demo class
# ---------------------------------------------------------------------------------------------

def demo(g, dest, force=False, quiet=False):
    """dest/reference, dest/untouched and dest/<known-wrong kernel> for each of the lab's WRONG: the
    reference workspace with that part's file replaced by the patched kernel. -> [folders]"""
    from . import selftest
    from .workspace import generate
    dest = Path(dest).expanduser().resolve()
    if dest.exists() and any(dest.iterdir()):
        if not force:
            raise CourseError(f"{dest} exists already and is not empty",
                              hint="DEST=another folder, or FORCE=1 to replace it")
        shutil.rmtree(dest)
    dest.mkdir(parents=True, exist_ok=True)
    generate(g, dest / "reference", solution=True, quiet=True)
    generate(g, dest / "untouched", solution=False, quiet=True)
    made = [dest / "reference", dest / "untouched"]
    files = g.kernel_files()
    with tempfile.TemporaryDirectory() as tmp:
        wrong = selftest.wrong_sources(g, tmp)
        for w, src in wrong.items():
            ws = dest / w.name
            shutil.copytree(dest / "reference", ws)
            (ws / files[w.part].name).write_text(Path(src).read_text())
            if w.file:                    # a header's patch (spec.Wrong.file): the patched header too
                (ws / w.file).write_text((Path(src).parent / w.file).read_text())
            (ws / "BUG.txt").write_text(f"{w.patch}: {w.bug}\npart {w.part}; without a GPU it must lose "
                                        f"{', '.join(w.lose_here) or 'nothing'}; on a GPU also "
                                        f"{', '.join(w.lose_on_gpu) or 'nothing'}\n")
            made.append(ws)
    if not quiet:
        print(f"grade-class-demo: {len(made)} workspaces in {dest}: the reference solution, the untouched "
              f"workspace, and {len(made) - 2} known-wrong kernels (each the reference with one part's file "
              "replaced by grading/wrong/<name>.patch applied)")
        for m in made:
            print(f"  {m.name}")
        wanted = ",".join(sorted({w.part for w in g.wrong}))
        print(f"next: {rep.make_command(f'grade-class SUBMISSIONS={dest}')}" + (f"  (PARTS={wanted} grades only the parts the "
                                                               "known-wrong kernels touch)" if wanted else ""))
    return made
