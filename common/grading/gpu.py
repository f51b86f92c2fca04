"""The grader's GPU side. It always runs in worker processes, never in the grader itself: a kernel
that crashes (misaligned address, illegal access) leaves the CUDA context unusable, and a kernel
that hangs must be killable. A crash or a hang costs only the item it happened in; the parent
starts a new worker for the items that are left.

Worker modes (the parent runs them, `python -m common.grading.gpu MODE --lab LAB ...`; each reads a
JSON spec):
    parts --spec SPEC --out DIR     correctness, timing, the re-check
    sanitize-run --spec SPEC        the program compute-sanitizer runs
    measure --out FILE              the predictions' measurements

What a part's run does, for the student's kernel (K_s) and the reference kernel (K_r, the lab's kernels/):
  1. Every variant on every shape it serves (the lab's grading SHAPES for the kernel's precision),
     fresh inputs (the precision's random_inputs), C poisoned with NaN. A and B sit between guard
     zones of NaN and C between guard zones of a marker pattern: a read past the end of a row of A
     or B turns into NaN in C, a write past C changes the marker. Checked against float64 with the
     precision's tolerance (common.precision).
  2. If all are right: timing at TIMING_SIZE, K_r then K_s, twice, in one process on one GPU
     (common.timing: L2 flushed, median); C poisoned before each K_s block and checked after it.
  3. Fresh inputs copied into the same buffers, C poisoned, K_s once, checked: a kernel that
     returns an earlier result (keyed on pointers or shape) is caught here.
  4. For a part with a bandwidth or bitwise check: that measurement at the check's shape (measures.py).
K_s is launched with the reference row (threads, grid, shared memory from the reference kernel).

Parent side (grader.py calls these):
    turn(phases)                     a context: this process's turn on its GPU (a no-op unless
                                     `make grade-class` shares a GPU between workers, see turn)
    run_parts(lab, items, out_dir)   -> {item id: result dict}
    racecheck(lab, items, log_dir)   -> {item id: (status, reason)}
    measure(lab, out_file)           -> {"values": {prediction id: value}, ...}
"""
import argparse
import contextlib
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]          # the repository: what makes `common` importable
LOCK_VAR = "GRADE_GPU_LOCK"                         # set by grade-class for a worker that shares its GPU
LOCK_WAIT = "waiting for the GPU (another worker's turn)"   # turn()'s phase: time spent queued, not grading
WORKER = ["-m", "common.grading.gpu"]               # the worker program (tests put a fake one here)
GUARD_BEFORE = 256                  # bytes before each matrix (keeps 256-byte alignment)
GUARD_AFTER = 16384                 # bytes after: a row of K <= 4096 FP32 values
C_GUARD_BITS = 0x7FC0DEAD           # the marker around C (a NaN no kernel computes)
AB_GUARD_BITS = {"float32": 0x7FC0BAD0, "float16": 0x7E0B, "uint16": 0x7FC1}   # NaN around A and B, per
                                                    # input dtype (uint16: BF16 bits)
CRASH_EXIT = 3


# =============================================================================================
# Worker side (runs on the GPU machine)
# =============================================================================================


@contextlib.contextmanager
def turn(phases=None):
    """Hold this GPU for the GPU checks of one submission. `make grade-class` with more workers than
    GPUs gives the workers of one GPU a hard link each to the same lock file (GRADE_GPU_LOCK names
    this worker's link, inside its sandbox): an exclusive flock on it lets them compile side by side
    and run on the GPU one at a time, so no submission is timed, or profiled by ncu, beside another.
    Without the variable (make grade, the selftest, a worker alone on its GPU) it does nothing.
    phases: a grader's {phase: seconds}; the seconds spent waiting for the lock are added under
    LOCK_WAIT (grader.timed leaves them out of the phase that waited)."""
    path = os.environ.get(LOCK_VAR)
    if not path:
        yield
        return
    import fcntl
    with open(path, "rb") as f:
        start = time.perf_counter()
        fcntl.flock(f, fcntl.LOCK_EX)
        if phases is not None:
            phases[LOCK_WAIT] = round(phases.get(LOCK_WAIT, 0.0) + time.perf_counter() - start, 1)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)

def _write_json(path, data):
    tmp = Path(str(path) + ".tmp")
    tmp.write_text(json.dumps(data, indent=1))
    os.replace(tmp, path)


class Guarded:
    """One matrix in device memory with guard zones before and after it."""

    def __init__(self, cuda, nbytes, elem, fill_bits):
        self.cuda, self.nbytes, self.elem, self.fill_bits = cuda, nbytes, elem, fill_bits
        self.total = GUARD_BEFORE + nbytes + GUARD_AFTER
        self.buf = cuda.mem_alloc(self.total)
        self.base = int(self.buf)
        self.ptr = self.base + GUARD_BEFORE
        self.fill_all()

    def fill_all(self):
        if self.elem == 4:
            self.cuda.memset_d32(self.base, self.fill_bits, self.total // 4)
        else:
            self.cuda.memset_d16(self.base, self.fill_bits, self.total // 2)

    def upload(self, host):
        self.cuda.memcpy_htod(self.ptr, host)

    def download_all(self):
        import numpy as np
        raw = np.empty(self.total // 4, np.uint32)
        self.cuda.memcpy_dtoh(raw, self.base)
        return raw

    def free(self):
        self.buf.free()


class Problem:
    """Inputs and guarded buffers for one shape; C read back with its guards checked."""

    def __init__(self, cuda, k, M, N, K, rng):
        self.cuda, self.k, self.M, self.N, self.K = cuda, k, M, N, K
        self.A, self.B = k.prec.random_inputs(M, N, K, rng)
        guard = AB_GUARD_BITS[self.A.dtype.name]
        self.a = Guarded(cuda, self.A.nbytes, self.A.itemsize, guard)
        self.b = Guarded(cuda, self.B.nbytes, self.B.itemsize, guard)
        self.c = Guarded(cuda, M * N * 4, 4, C_GUARD_BITS)
        self.a.upload(self.A)
        self.b.upload(self.B)

    def new_inputs(self, rng):
        self.A, self.B = self.k.prec.random_inputs(self.M, self.N, self.K, rng)
        self.a.upload(self.A)
        self.b.upload(self.B)

    def poison_c(self):
        from common.check import NAN_BITS
        self.cuda.memset_d32(self.c.ptr, NAN_BITS, self.M * self.N)

    def launch(self, func):
        self.bound(func)()

    def bound(self, func):
        """run(): this problem's launch of func with the Python work (grid, arguments) done now, so a
        timed call is the launch alone (the timing's head start covers that much host work, not more)."""
        run, a, b, c = self.k.bound_launch(func, self.M, self.N, self.K), self.a.ptr, self.b.ptr, self.c.ptr
        return lambda: run(a, b, c)

    def read_c(self):
        """(C as float32, guard words changed before C, guard words changed after C)."""
        raw = self.c.download_all()       # synchronizes: a launch error surfaces here
        before, after = GUARD_BEFORE // 4, GUARD_BEFORE // 4 + self.M * self.N
        changed_before = int((raw[:before] != C_GUARD_BITS).sum())
        changed_after = int((raw[after:] != C_GUARD_BITS).sum())
        C = raw[before:after].view("float32").reshape(self.M, self.N).copy()
        return C, changed_before, changed_after

    def free(self):
        for g in (self.a, self.b, self.c):
            g.free()


def judge(problem, C, changed_before, changed_after, label, rows=None, when=""):
    """The verdict on one result: float64 comparison (of `rows` only, if given), never-written
    elements, NaN computed from the guards, writes outside C. A dict the parent turns into a reason."""
    import numpy as np
    from common import check as checking
    k = problem.k
    bits = C.view(np.uint32)
    unwritten = bits == checking.NAN_BITS
    computed_nan = np.isnan(C) & ~unwritten
    A, B = k.prec.reference_inputs(problem.A, problem.B)
    if rows is not None:
        ref, abs_ref = checking.reference(A[rows], B)
        sub = C[rows]
    else:
        ref, abs_ref = checking.reference(A, B)
        sub = C
    tol = k.prec.tolerance(problem.K, abs_ref, k.roundoff)
    v = checking.compare(sub, ref, tol, label=label)
    worst = v.worst_index if rows is None else (int(rows[v.worst_index[0]]), v.worst_index[1])

    def first(mask):
        idx = np.argwhere(mask)
        return [int(idx[0][0]), int(idx[0][1])] if len(idx) else None

    ok = v.ok and not unwritten.any() and not computed_nan.any() and not changed_before and not changed_after
    pattern = None
    if not ok:
        from ..errors import CourseError
        from .symptoms import mismatch_pattern
        sub64 = np.asarray(sub, dtype=np.float64)
        bad = ~np.isfinite(sub64) | (np.abs(sub64 - ref) > tol)
        try:
            tile = tuple(k.tile)[:2]
        except CourseError:        # a row whose source names no block tile: the pattern without tiles
            tile = None
        pattern = mismatch_pattern(bad, tile if rows is None else None)
    return {"ok": bool(ok), "label": label, "when": when, "verdict": str(v), "worst_index": [int(x) for x in worst],
            "pattern": pattern,
            "got": float(v.worst_got), "want": float(v.worst_want), "tol": float(v.worst_tol), "bad": v.bad,
            "unwritten": int(unwritten.sum()), "first_unwritten": first(unwritten),
            "computed_nan": int(computed_nan.sum()), "first_nan": first(computed_nan),
            "outside_before": changed_before, "outside_after": changed_after,
            "rows_checked": "all" if rows is None else len(rows)}


def _exit_now():
    """After a CUDA error the context is unusable, and pycuda's exit handlers may fail on it: leave
    at once with CRASH_EXIT (what had to be said is written already)."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(CRASH_EXIT)


def _label(k, variant, shape):
    return f"{k.label(variant)} {'x'.join(map(str, shape))}"


def run_one_part(lab, g, item, out_file):
    """Steps 1-3 of the module docstring for one item; the result file is rewritten after every
    step, so what was learnt before a crash is kept."""
    import numpy as np
    from common.device import gpu_facts
    from common.kernels import load_function
    from common.timing import L2Flusher, time_interleaved
    import pycuda.driver as cuda

    part = g.part(item["part"])
    k = lab.kernel(item["kernel"])          # the reference row: the launch shape is the reference's
    seed = int(item["seed"])
    rng = np.random.default_rng(seed)
    res = {"id": item["id"], "part": item["part"], "seed": seed, "cases": [], "crash": None,
           "timing": None, "after_timing": None, "fresh": None, "stage": "correctness"}
    _write_json(out_file, res)

    def crash(stage, label, e):
        res["crash"] = {"stage": stage, "label": label, "error": str(e).strip().splitlines()[0] if str(e).strip() else repr(e)}
        _write_json(out_file, res)
        _exit_now()

    funcs = {v: load_function(item["cubin"], e, k.shared_bytes, k.signature) for v, e in k.entries.items()}
    # 1. correctness
    for variant, shape in k.cases(g.shapes_for(part)):
        label = _label(k, variant, shape)
        prob = None
        try:
            prob = Problem(cuda, k, *shape, rng)
            prob.poison_c()
            prob.launch(funcs[variant])
            C, cb, ca = prob.read_c()
        except cuda.Error as e:
            crash("correctness", label, e)
        res["cases"].append(judge(prob, C, cb, ca, label))
        prob.free()
        _write_json(out_file, res)
    if not all(c["ok"] for c in res["cases"]):
        res["stage"] = "done"
        _write_json(out_file, res)
        return res

    # 2. timing against the reference, same process, same buffers
    n = g.TIMING_SIZE
    variant = k.variant_for(n, n, n)
    f_stu = funcs[variant]
    f_ref = load_function(item["reference_cubin"], k.entries[variant], k.shared_bytes, k.signature)
    res["stage"] = "timing"
    label = _label(k, variant, (n, n, n))
    try:
        flusher = L2Flusher(gpu_facts()["l2_bytes"])
        prob = Problem(cuda, k, n, n, n, rng)
        rows = np.sort(rng.choice(n, size=min(g.CHECK_ROWS, n), replace=False))
        # Interleaved (common.timing says why): every repetition runs both kernels, in a random order,
        # so both see the same clock. Timed one after the other, the first ran slower on a GPU just
        # out of idle (the H200 idles at 345 MHz): the reference itself once measured at 127 % of
        # the reference, past the self-test's noise bound.
        ts = time_interleaved({"reference": prob.bound(f_ref), "student": prob.bound(f_stu)},
                              flusher, budget_s=2 * g.TIMING_BUDGET_S)
        ref_times, stu_times = ts["reference"].times_ms, ts["student"].times_ms
        prob.poison_c()                  # the reference's C must not count as the student's
        prob.launch(f_stu)               # ... so the student's kernel runs once more, after all the timing
        C, cb, ca = prob.read_c()
        res["after_timing"] = judge(prob, C, cb, ca, label, rows=rows, when="after timing")
        ref_ms, stu_ms = float(np.median(ref_times)), max(float(np.median(stu_times)), 1e-6)
        res["timing"] = {"size": n, "variant": variant, "reference_ms": ref_ms, "student_ms": stu_ms,
                         "pct_of_reference": 100.0 * ref_ms / stu_ms, "reps": [len(ref_times), len(stu_times)]}
        _write_json(out_file, res)
        # 3. fresh inputs in the same buffers
        res["stage"] = "fresh"
        prob.new_inputs(rng)
        prob.poison_c()
        prob.launch(f_stu)
        C, cb, ca = prob.read_c()
        res["fresh"] = judge(prob, C, cb, ca, label, rows=rows,
                             when="after timing, on fresh inputs in the same buffers")
        prob.free()
        flusher.buf.free()
    except cuda.Error as e:
        crash(res["stage"], label, e)
    # 4. the measured kinds (measures.py) at their Check's shape: bandwidth, bitwise
    for c in part.checks:
        if c.kind in ("bandwidth", "bitwise"):
            res["stage"] = c.kind
            _write_json(out_file, res)
            try:
                res[c.kind] = _measure(lab, g, k, c, funcs, item, rng)
            except cuda.Error as e:
                crash(c.kind, _label(k, k.variant_for(*measure_shape(c.shape)), measure_shape(c.shape)), e)
    res["stage"] = "done"
    _write_json(out_file, res)
    return res


def _measure(lab, g, k, check, funcs, item, rng):
    """One measured kind (measures.py) at check.shape, with the variant the shape picks."""
    from common.device import gpu_facts
    from common.kernels import load_function
    from common.timing import L2Flusher
    import pycuda.driver as cuda
    from . import measures
    shape = measure_shape(check.shape)
    variant = k.variant_for(*shape)
    problem = lambda shape: Problem(cuda, k, *shape, rng)
    if check.kind == "bandwidth":
        flusher = L2Flusher(gpu_facts()["l2_bytes"])
        try:
            return measures.measure_bandwidth(cuda, problem, funcs[variant], shape, flusher, g.TIMING_BUDGET_S)
        finally:
            flusher.buf.free()
    ref = load_function(item["reference_cubin"], k.entries[variant], k.shared_bytes, k.signature)
    return measures.measure_bitwise(problem, funcs[variant], ref, shape)


def measure_shape(shape):
    """A measured check's shape; N and K divided by GRADE_MEASURE_DIV when it is set (the grader's
    tests on a simulated GPU set it; nothing else should)."""
    div = int(os.environ.get("GRADE_MEASURE_DIV") or 1)
    M, N, K = shape
    return (M, max(1, N // div), max(1, K // div))


def worker_parts(lab, g, spec_file, out_dir):
    from common.device import init_gpu
    init_gpu()
    spec = json.loads(Path(spec_file).read_text())
    out_dir = Path(out_dir)
    for item in spec["items"]:
        out = out_dir / f"{item['id']}.json"
        if out.exists():
            continue                      # done by an earlier worker
        (out_dir / "current").write_text(item["id"])
        run_one_part(lab, g, item, out)


def sanitize_run(lab, g, spec_file):
    """Every item's entry points on SANITIZE_SHAPES, plainly allocated (the sanitizer watches the
    bounds), one line per launch: what the parent reads to know how far the run got."""
    import numpy as np
    from common import check as checking
    from common.device import init_gpu
    from common.kernels import load_function
    init_gpu()
    import pycuda.driver as cuda
    spec = json.loads(Path(spec_file).read_text())
    rng = np.random.default_rng(int(spec.get("seed", 0)))
    for item in spec["items"]:
        k = lab.kernel(item["kernel"])
        for variant, shape in k.cases(g.SANITIZE_SHAPES):
            M, N, K = shape
            A, B = k.prec.random_inputs(M, N, K, rng)
            a, b, c = cuda.to_device(A), cuda.to_device(B), cuda.mem_alloc(M * N * 4)
            try:
                cuda.memset_d32(c, checking.NAN_BITS, M * N)
                k.launch(load_function(item["cubin"], k.entries[variant], k.shared_bytes, k.signature), M, N, K, a, b, c)
                cuda.Context.synchronize()
            except cuda.Error as e:
                print(f"grade-sanitize: FAILED {item['id']} {_label(k, variant, shape)}: {e}", flush=True)
                _exit_now()
            a.free(); b.free(); c.free()
            print(f"grade-sanitize: launched {item['id']} {_label(k, variant, shape)}", flush=True)
        print(f"grade-sanitize: done {item['id']}", flush=True)


def measure_predictions(lab, g, out_file):
    """Each predicted ladder's kernels and its cuBLAS (the ladder's precision) at PREDICTION_SIZE:
    % of cuBLAS per kernel, and the ratios of cuBLAS TFLOP/s between ladders. A ladder's runs are
    timed interleaved (each repetition runs cuBLAS and every kernel once, in a new random order), so
    the GPU's clock, which falls under the power limit, is the same for all of them; each result is
    then computed once more on a poisoned C and checked on 64 rows."""
    import numpy as np
    from common.cublas import Cublas
    from common.device import gpu_facts
    from common.timing import L2Flusher, time_interleaved
    import pycuda.driver as cuda
    facts = gpu_facts()
    arch = facts["arch"]
    wanted = {p.id for p in g.predictions}
    ladders = [ld for ld in lab.ladders if ld in {x for p in g.predictions for x in p.ladders}]
    kernels = {ld: [k for k in lab.ladders[ld] if k.name in wanted and lab.build_arch(k, arch)] for ld in ladders}
    lab.build([k for ks in kernels.values() for k in ks], [arch])
    blas, flusher = Cublas(), L2Flusher(facts["l2_bytes"])
    n = g.PREDICTION_SIZE
    rng = np.random.default_rng()
    out = {"gpu": facts["name"], "arch": arch, "size": n, "values": {}, "ms": {}, "checks": {}}
    for ladder in ladders:
        probe = lab.ladders[ladder][0]
        prec = lab.ladder_precision(ladder)
        prob = Problem(cuda, probe, n, n, n, rng)
        rows = np.sort(rng.choice(n, size=64, replace=False))
        call = prec.cublas(blas)
        runs = [(f"cuBLAS-{ladder}", lambda: call(n, n, n, prob.a.ptr, prob.b.ptr, prob.c.ptr), probe)]
        for k in kernels[ladder]:
            launch = lab.launcher(k, n, n, n)
            runs.append((k.name, (lambda launch=launch: launch(prob.a.ptr, prob.b.ptr, prob.c.ptr)), k))
        ts = time_interleaved({name: run for name, run, _ in runs}, flusher, budget_s=0.2)
        for name, run, k in runs:
            prob.poison_c()
            run()
            cuda.Context.synchronize()
            C, cb, ca = prob.read_c()
            prob.k = k
            out["checks"][name] = judge(prob, C, cb, ca, f"{name} {n}^3", rows=rows)["verdict"]
            out["ms"][name] = ts[name].median_ms
        for k in kernels[ladder]:
            out["values"][k.name] = 100.0 * out["ms"][f"cuBLAS-{ladder}"] / out["ms"][k.name]
        prob.free()
    for p in g.predictions:
        if p.ratio:
            a, b = p.ratio
            out["values"][p.id] = out["ms"][f"cuBLAS-{b}"] / out["ms"][f"cuBLAS-{a}"]
    _write_json(out_file, out)


def worker_main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("mode", choices=["parts", "sanitize-run", "measure"])
    ap.add_argument("--lab", required=True)
    ap.add_argument("--spec")
    ap.add_argument("--out")
    args = ap.parse_args(argv)
    from common.lab import load
    from .spec import Grading
    lab = load(args.lab)
    g = Grading(lab)
    if args.mode == "parts":
        worker_parts(lab, g, args.spec, args.out)
    elif args.mode == "sanitize-run":
        sanitize_run(lab, g, args.spec)
    else:
        measure_predictions(lab, g, args.out)


# =============================================================================================
# Parent side (runs wherever the grader runs; only starts workers)
# =============================================================================================

def _python():
    return sys.executable or "python3"


def worker_argv(lab, mode, *args):
    return [_python(), *WORKER, mode, "--lab", str(lab.dir), *map(str, args)]


def worker_env():
    """The environment of a worker: the repository first on PYTHONPATH (for `common`), then the
    caller's PYTHONPATH (a simulated pycuda in the grader's tests)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    return env


def _wait(proc, out_dir, timeout_per_item):
    """Wait for a parts worker; kill it when one item has run longer than `timeout_per_item`.
    Returns (exit status or None if killed, output text)."""
    current, log = out_dir / "current", out_dir / "worker.log"
    while True:
        try:
            proc.wait(timeout=1.0)
            break
        except subprocess.TimeoutExpired:
            started = current.stat().st_mtime if current.exists() else None
            if started is not None and time.time() - started > timeout_per_item:
                proc.kill()
                proc.wait()
                return None, log.read_text(errors="replace") if log.exists() else ""
    return proc.returncode, log.read_text(errors="replace") if log.exists() else ""


def run_parts(lab, items, out_dir, timeout_per_item, hang_hint=None):
    """Run every item (dicts: id, part, kernel, source, cubin, reference_cubin, seed) in workers,
    restarting after a crash or a hang. Returns {id: result dict}; an item whose worker died
    without a word gets {"crash": {...}} from the parent. `hang_hint`: what a hang's reason says
    after "did not finish in N s: " (the lab's HANG_HINT)."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    for f in out_dir.glob("*.json"):
        f.unlink()
    spec = out_dir / "spec.json"
    _write_json(spec, {"items": items})
    for attempt in range(len(items) + 1):
        left = [it for it in items if not (out_dir / f"{it['id']}.json").exists()]   # a file is final
        if not left:
            break
        current = out_dir / "current"
        if current.exists():
            current.unlink()
        argv = worker_argv(lab, "parts", "--spec", spec, "--out", out_dir)
        with open(out_dir / "worker.log", "w") as logf:
            proc = subprocess.Popen(argv, cwd=ROOT, env=worker_env(), stdout=logf, stderr=subprocess.STDOUT, text=True)
            status, text = _wait(proc, out_dir, timeout_per_item)
        if status in (0, CRASH_EXIT):
            continue
        if status is None:
            why = f"did not finish in {timeout_per_item} s: " + (hang_hint or (
                "a hang (a __syncthreads() that some threads never reach? an endless loop?)"))
        else:
            why = f"the GPU worker stopped (exit status {status}): {_last_line(text)}"
        who = current.read_text().strip() if current.exists() else left[0]["id"]
        target = out_dir / f"{who}.json"
        partial = json.loads(target.read_text()) if target.exists() else {"id": who, "cases": []}
        partial["crash"] = partial.get("crash") or {"stage": partial.get("stage", "start"), "label": "", "error": why}
        partial["stage"] = "done"
        _write_json(target, partial)
    results = {}
    for it in items:
        f = out_dir / f"{it['id']}.json"
        results[it["id"]] = json.loads(f.read_text()) if f.exists() else \
            {"id": it["id"], "cases": [], "crash": {"stage": "start", "label": "", "error": "the GPU worker never ran it"}}
    return results


def _last_line(text):
    """What a worker said last: its `error: ...` line (a CourseError) if it printed one."""
    lines = [l.strip() for l in (text or "").strip().splitlines() if l.strip()]
    errors = [l for l in lines if l.startswith("error:")]
    line = errors[-1][len("error:"):].strip() if errors else (lines[-1] if lines else "(no output)")
    return line[:300]


_LAUNCHED = re.compile(r"^grade-sanitize: (launched|done|FAILED) (\S+)(.*)$", re.M)


def _first_report(text):
    """The first hazard line racecheck printed, for the reason (', first: ...'), or ''."""
    for line in text.splitlines():
        if "Race reported" in line or "hazard detected" in line.lower():
            return ", first: " + line.strip("= ").strip()[:160]
    return ""


def racecheck_batches(items):
    """Items split so that no two in a batch share a source file name (races are attributed by it)."""
    batches = []
    for it in items:
        name = Path(it["source"]).name
        for b in batches:
            if name not in {Path(x["source"]).name for x in b}:
                b.append(it)
                break
        else:
            batches.append([it])
    return batches


def racecheck(lab, items, log_dir, timeout):
    """{item id: (status, reason)}: status "pass", "fail" or "skipped" (no compute-sanitizer)."""
    from common import sanitizer
    from common.errors import CourseError
    from . import races as race_reader
    try:
        exe = sanitizer.find_sanitizer()
    except CourseError as e:
        return {it["id"]: ("skipped", f"racecheck not run: {e.message}") for it in items}
    log_dir = Path(log_dir)
    log_dir.mkdir(parents=True, exist_ok=True)
    results = {}
    queue = list(racecheck_batches(items))
    bi = -1
    while queue:
        batch = queue.pop(0)
        bi += 1
        left, attempt, text, log = list(batch), 0, "", log_dir / f"racecheck_{bi}_1.txt"
        while left and attempt <= len(batch):
            attempt += 1
            spec = log_dir / f"racecheck_{bi}_{attempt}.spec.json"
            _write_json(spec, {"items": left, "seed": int(time.time())})
            argv = sanitizer.command(exe, "racecheck", worker_argv(lab, "sanitize-run", "--spec", spec))
            try:
                proc = subprocess.run(argv, cwd=ROOT, env=worker_env(), capture_output=True, text=True, timeout=timeout)
                text = proc.stdout + proc.stderr
            except subprocess.TimeoutExpired as e:
                text = (e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")) + \
                       "\ngrade-sanitize: TIMEOUT"
            log = log_dir / f"racecheck_{bi}_{attempt}.txt"
            log.write_text(f"$ {' '.join(argv)}\n{text}")
            races, unread = race_reader.read(text, left)
            done = {m.group(2) for m in _LAUNCHED.finditer(text) if m.group(1) == "done"}
            failed = {m.group(2): m.group(3).strip(" :") for m in _LAUNCHED.finditer(text) if m.group(1) == "FAILED"}
            if unread and len(left) > 1:
                # hazards this grader cannot tie to a file: run each kernel of the batch on its own,
                # where any hazard can only be its own (costs a few runs, only when something raced)
                queue.extend([it] for it in left)
                left = []
                break
            progressed = False
            for it in list(left):
                iid = it["id"]
                if iid in races:
                    n = len(races[iid])
                    results[iid] = ("fail", f"racecheck: {n} race{'s' * (n != 1)}: {races[iid][0]}")
                elif iid in failed:
                    results[iid] = ("fail", f"crashed under racecheck at {failed[iid]}")
                elif iid in done and unread:
                    results[iid] = ("fail", f"racecheck: {unread[0]}{_first_report(text)}; log: {log}")
                elif iid in done:
                    results[iid] = ("pass", "")
                else:
                    continue
                left.remove(it)
                progressed = True
            if not progressed:
                break
        for it in left:
            results[it["id"]] = ("fail", f"the racecheck run did not finish ({_last_line(text)}); log: {log}")
    return results


def measure(lab, out_file, timeout):
    """The predictions' measurements on this GPU (a worker): the dict measure_predictions writes."""
    out_file = Path(out_file)
    if out_file.exists():
        out_file.unlink()
    argv = worker_argv(lab, "measure", "--out", out_file)
    try:
        proc = subprocess.run(argv, cwd=ROOT, env=worker_env(), capture_output=True, text=True, timeout=timeout)
        if proc.returncode != 0 or not out_file.exists():
            return {"error": f"the measurement failed: {_last_line(proc.stdout + proc.stderr)}"}
    except subprocess.TimeoutExpired:
        return {"error": "the measurement did not finish in time"}
    return json.loads(out_file.read_text())


if __name__ == "__main__":
    from common.errors import user_errors
    with user_errors():
        worker_main()
