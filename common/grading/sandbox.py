"""Where a submission's grading runs: its own folder, a scrubbed environment, and (with bubblewrap)
a read-only view of everything else.

    worker_env(private, extra)        -> the environment of a grading worker: HOME, TMPDIR and
                                      GRADE_BUILD inside its private folder, a short allow-list of
                                      the caller's variables (PATH, CUDA_*, LD_LIBRARY_PATH, ...)
    choose(isolate, gpu)              -> "bwrap" or "none": ISOLATE=auto takes bwrap where it works
    wrap(argv, mode, private, hide, readonly) -> argv run under bwrap: / read-only but /tmp (the
                                      tools' scratch files), the course read-only even under /tmp,
                                      the private folder writable, `hide` (other submissions, the
                                      class's reports) covered by empty folders, /dev as it is (the
                                      GPU), no network
    Snapshot(roots, exclude)          the files under `roots` (path -> size, mtime, ctime, inode);
                                      .changes(later) -> [paths created, changed or removed]

What it does not protect against (the grading README says the same): the GPU itself (a submission's
kernel runs on it, in the grader's CUDA context; the driver isolates processes, not kernels from
their own process); nvcc reading any header on the machine through #include (submissions.py refuses
absolute and `..` includes and the lab's reference kernels; a readable file is still readable);
CPU, memory and disk use (a time limit per submission, nothing else); /tmp and /dev/shm, writable
inside the sandbox as for any process; and without bubblewrap, writes anywhere the user may write:
they are then detected after the fact (in the course, the lab and the submissions), not prevented.
"""
import os
import shutil
import subprocess
from pathlib import Path

KEEP = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TERM", "TZ", "USER", "LOGNAME", "LD_LIBRARY_PATH",
        "CUDA_HOME", "CUDA_PATH", "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "NVIDIA_VISIBLE_DEVICES",
        "PYTHONPATH", "MPLBACKEND", "GRADE_TIMING_SIZE", "COURSE_COMMIT", "SLURM_JOB_ID", "SLURM_ARRAY_TASK_ID")


def worker_env(private, extra=None, environ=None):
    """The worker's environment: nothing of the teacher's but KEEP, and its own HOME and TMPDIR."""
    environ = os.environ if environ is None else environ
    private = Path(private)
    env = {k: environ[k] for k in KEEP if k in environ}
    for d in ("home", "tmp", "build"):
        (private / d).mkdir(parents=True, exist_ok=True)
    env.update(HOME=str(private / "home"), TMPDIR=str(private / "tmp"), GRADE_BUILD=str(private / "build"),
               PYTHONDONTWRITEBYTECODE="1", PYTHONNOUSERSITE="1", CI=environ.get("CI", ""))
    env.update(extra or {})
    return env


# ---------------------------------------------------------------------------------------------
# bubblewrap
# ---------------------------------------------------------------------------------------------

_PROBED = {}


def bwrap_base(private, hide=(), net=True, readonly=()):
    """/ read-only; /dev as it is (the GPU's device files, /dev/shm); /tmp writable as for any process
    (nvcc, compute-sanitizer and the profilers keep scratch and lock files there); `readonly` (the
    course) read-only again where it lies under /tmp; `hide` covered by empty folders; the private
    folder writable."""
    argv = [shutil.which("bwrap") or "bwrap", "--ro-bind", "/", "/", "--dev-bind", "/dev", "/dev",
            "--proc", "/proc", "--die-with-parent"]
    if not net:
        argv.append("--unshare-net")
    if Path("/tmp").is_dir():
        argv += ["--bind", "/tmp", "/tmp"]
    for r in sorted({str(Path(r).resolve()) for r in readonly if Path(r).exists()}, key=len):
        argv += ["--ro-bind", r, r]
    for h in sorted({str(Path(h).resolve()) for h in hide}, key=len):
        if Path(h).is_dir():
            argv += ["--tmpfs", h]           # an empty folder in its place (the private one is bound below)
    p = str(Path(private).resolve())
    argv += ["--bind", p, p]
    return argv


def probe(gpu=False):
    """(works, with_network_namespace, why): does bwrap run here (and, with gpu, see the GPU)?"""
    key = bool(gpu)
    if key in _PROBED:
        return _PROBED[key]
    if not shutil.which("bwrap"):
        _PROBED[key] = (False, False, "bwrap (Debian's bubblewrap) is not installed")
        return _PROBED[key]
    import tempfile
    with tempfile.TemporaryDirectory(prefix="grade-probe-") as d:
        test = ["sh", "-c", f"echo ok > {d}/probe && cat {d}/probe"]
        if gpu and shutil.which("nvidia-smi"):
            test = ["sh", "-c", f"nvidia-smi -L > {d}/probe && cat {d}/probe"]
        why = ""
        for net in (False, True):
            try:
                proc = subprocess.run(bwrap_base(d, net=net) + test, capture_output=True, text=True, timeout=60)
            except (OSError, subprocess.TimeoutExpired) as e:
                why = str(e)
                continue
            if proc.returncode == 0 and proc.stdout.strip():
                _PROBED[key] = (True, not net, "")
                return _PROBED[key]
            why = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
            why = why[0]
    _PROBED[key] = (False, False, f"bwrap does not run here: {why}")
    return _PROBED[key]


def choose(isolate, gpu=False):
    """(mode, note): isolate is "auto", "bwrap" or "none"."""
    isolate = (isolate or "auto").lower()
    if isolate not in ("auto", "bwrap", "none"):
        from ..errors import CourseError
        raise CourseError(f"ISOLATE={isolate} is not a choice",
                          hint="ISOLATE=auto (bwrap where it works), bwrap or none")
    if isolate == "none":
        return "none", "no sandbox (ISOLATE=none): writes outside a submission's folder are detected, not prevented"
    ok, netns, why = probe(gpu)
    if ok:
        return "bwrap", ("bwrap: the machine read-only, the submission's folder writable, other submissions "
                         "hidden" + (", no network" if netns else ""))
    if isolate == "bwrap":
        from ..errors import CourseError
        raise CourseError(f"ISOLATE=bwrap was asked for: {why}",
                          hint="apt-get install bubblewrap, or ISOLATE=auto to fall back to detecting writes")
    return "none", f"no sandbox ({why}): writes outside a submission's folder are detected, not prevented"


def wrap(argv, mode, private, hide=(), gpu=False, readonly=()):
    if mode != "bwrap":
        return list(argv)
    netns = probe(gpu)[1]
    return (bwrap_base(private, hide, net=not netns, readonly=readonly) + ["--chdir", str(Path(private).resolve())]
            + list(argv))


# ---------------------------------------------------------------------------------------------
# What changed on disk
# ---------------------------------------------------------------------------------------------

class Snapshot:
    """Every file and folder under `roots` (symbolic links not followed), `exclude` left out, each file
    with a digest of its bytes: a file rewritten with the same bytes (a rebuild of the same cubin) has
    not changed. Digests are kept between snapshots for files whose size, times and inode are the same,
    so a snapshot reads only what changed since the last."""

    def __init__(self, roots, exclude=(), _digests=None):
        self.roots = [Path(r).resolve() for r in roots if Path(r).exists()]
        self.exclude = {str(Path(e).resolve()) for e in exclude}
        self._digests = {} if _digests is None else _digests     # path -> (stat key, digest)
        self.files = {}
        for r in self.roots:
            self._walk(str(r))

    def _walk(self, top):
        from ..writes import digest
        stack = [top]
        while stack:
            d = stack.pop()
            try:
                it = os.scandir(d)
            except OSError:
                continue
            with it:
                for e in it:
                    if e.path in self.exclude:
                        continue
                    try:
                        st = e.stat(follow_symlinks=False)
                    except OSError:
                        continue
                    if e.is_dir(follow_symlinks=False):
                        stack.append(e.path)
                        self.files[e.path + "/"] = None
                        continue
                    key = (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
                    known = self._digests.get(e.path)
                    if known is None or known[0] != key:
                        known = self._digests[e.path] = (key, digest(e.path) if e.is_file(follow_symlinks=False)
                                                         else f"link {key}")
                    self.files[e.path] = known[1]

    def again(self):
        return Snapshot(self.roots, self.exclude, self._digests)

    def changes(self, later):
        """Paths created, changed (other bytes) or removed between this snapshot and `later`."""
        out = []
        for p, v in later.files.items():
            if p not in self.files:
                out.append(("created", p))
            elif self.files[p] != v and not p.endswith("/"):
                out.append(("changed", p))
        out += [("removed", p) for p in self.files if p not in later.files]
        return sorted(out, key=lambda x: x[1])
