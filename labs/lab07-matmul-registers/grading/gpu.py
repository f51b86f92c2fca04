#!/usr/bin/env python3
"""The grader's GPU side. It always runs in worker processes, never in the grader itself: a kernel
that crashes (misaligned address, illegal access) leaves the CUDA context unusable, and a kernel
that hangs must be killable. A crash or a hang costs only the item it happened in; the parent
starts a new worker for the items that are left.

Worker modes (the parent runs them; each reads a JSON spec):
    python3 grading/gpu.py parts --spec SPEC --out DIR     correctness, timing, the re-check
    python3 grading/gpu.py sanitize-run --spec SPEC        the program compute-sanitizer runs
    python3 grading/gpu.py measure --out FILE              the predictions' measurements

What a part's run does, for the student's kernel (K_s) and the reference kernel (K_r, kernels/):
  1. Every variant on every shape its rule allows (parts.FP32_SHAPES / FP16_SHAPES), fresh uniform
     inputs, C poisoned with NaN. A and B sit between guard zones of NaN and C between guard zones
     of a marker pattern: a read past the end of a row of A or B turns into NaN in C, a write past
     C changes the marker. Checked against float64 (common.check).
  2. If all are right: timing at TIMING_SIZE, K_r then K_s, twice, in one process on one GPU
     (common.timing: L2 flushed, median); C poisoned before each K_s block and checked after it.
  3. Fresh inputs copied into the same buffers, C poisoned, K_s once, checked: a kernel that
     returns an earlier result (keyed on pointers or shape) is caught here.

Parent side (grader.py calls these):
    run_parts(items, out_dir)        -> {item id: result dict}
    racecheck(items, log_dir)        -> {item id: (status, reason)}
    measure(out_file)                -> {"values": {prediction id: value}, ...}
"""
import argparse
import json
import os
import re
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

LAB = Path(__file__).resolve().parents[1]
if __name__ == "__main__":
    sys.path[:0] = [str(LAB), str(LAB.parents[1])]

from grading import parts as P     # noqa: E402

WORKER = Path(__file__).resolve()
GUARD_BEFORE = 256                  # bytes before each matrix (keeps 256-byte alignment)
GUARD_AFTER = 16384                 # bytes after: a row of K <= 4096 FP32 values
C_GUARD_BITS = 0x7FC0DEAD           # the marker around C (a NaN no kernel computes)
AB_GUARD_BITS = {4: 0x7FC0BAD0, 2: 0x7E0B}   # NaN around A and B, per element size
CRASH_EXIT = 3


# =============================================================================================
# Worker side (runs on the GPU machine)
# =============================================================================================

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
        import lab07
        self.cuda, self.k, self.M, self.N, self.K = cuda, k, M, N, K
        self.A, self.B = lab07.random_inputs(k, M, N, K, rng)
        elem = self.A.itemsize
        self.a = Guarded(cuda, self.A.nbytes, elem, AB_GUARD_BITS[elem])
        self.b = Guarded(cuda, self.B.nbytes, elem, AB_GUARD_BITS[elem])
        self.c = Guarded(cuda, M * N * 4, 4, C_GUARD_BITS)
        self.a.upload(self.A)
        self.b.upload(self.B)

    def new_inputs(self, rng):
        import lab07
        self.A, self.B = lab07.random_inputs(self.k, self.M, self.N, self.K, rng)
        self.a.upload(self.A)
        self.b.upload(self.B)

    def poison_c(self):
        from common.check import NAN_BITS
        self.cuda.memset_d32(self.c.ptr, NAN_BITS, self.M * self.N)

    def launch(self, func):
        self.k.launch(func, self.M, self.N, self.K, self.a.ptr, self.b.ptr, self.c.ptr)

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
    import lab07
    from common import check as checking
    bits = C.view(np.uint32)
    unwritten = bits == checking.NAN_BITS
    computed_nan = np.isnan(C) & ~unwritten
    A, B = problem.A, problem.B
    if rows is not None:
        ref, abs_ref = checking.reference(A[rows], B)
        sub = C[rows]
    else:
        ref, abs_ref = checking.reference(A, B)
        sub = C
    v = checking.compare(sub, ref, checking.tolerance(problem.K, abs_ref, lab07.tolerance_kind(problem.k)), label=label)
    worst = v.worst_index if rows is None else (int(rows[v.worst_index[0]]), v.worst_index[1])

    def first(mask):
        idx = np.argwhere(mask)
        return [int(idx[0][0]), int(idx[0][1])] if len(idx) else None

    ok = v.ok and not unwritten.any() and not computed_nan.any() and not changed_before and not changed_after
    return {"ok": bool(ok), "label": label, "when": when, "verdict": str(v), "worst_index": list(worst),
            "got": v.worst_got, "want": v.worst_want, "tol": v.worst_tol, "bad": v.bad,
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


def _shapes(k):
    return P.FP32_SHAPES if k.dtype == "fp32" else P.FP16_SHAPES


def _cases(k, shapes):
    """(variant, shape) pairs: every variant on every shape its rule allows (vec only where chosen)."""
    return [(v, s) for v in k.variants for s in shapes
            if k.refusal(*s) is None and (v != "vec" or k.variant_for(*s) == "vec")]


def _label(k, variant, shape):
    return f"{k.name}{'/' + variant if variant else ''} {'x'.join(map(str, shape))}"


def run_one_part(item, out_file):
    """Steps 1-3 of the module docstring for one item; the result file is rewritten after every
    step, so what was learnt before a crash is kept."""
    import numpy as np
    import lab07
    from common.device import gpu_facts
    from common.kernels import load_function
    from common.timing import L2Flusher, time_gpu
    import pycuda.driver as cuda

    ref_row = lab07.KERNELS[item["kernel"]]
    k = replace(ref_row, source=item["source"], tag="", defines={})
    seed = int(item["seed"])
    rng = np.random.default_rng(seed)
    res = {"id": item["id"], "part": item["part"], "seed": seed, "cases": [], "crash": None,
           "timing": None, "after_timing": None, "fresh": None, "stage": "correctness"}
    _write_json(out_file, res)

    def crash(stage, label, e):
        res["crash"] = {"stage": stage, "label": label, "error": str(e).strip().splitlines()[0] if str(e).strip() else repr(e)}
        _write_json(out_file, res)
        _exit_now()

    funcs = {v: load_function(item["cubin"], e, k.shared_bytes) for v, e in k.entries.items()}
    # 1. correctness
    for variant, shape in _cases(k, _shapes(k)):
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
    n = P.TIMING_SIZE
    variant = k.variant_for(n, n, n)
    f_stu = funcs[variant]
    f_ref = load_function(item["reference_cubin"], ref_row.entries[variant], ref_row.shared_bytes)
    res["stage"] = "timing"
    label = _label(k, variant, (n, n, n))
    try:
        flusher = L2Flusher(gpu_facts()["l2_bytes"])
        prob = Problem(cuda, k, n, n, n, rng)
        ref_times, stu_times = [], []
        rows = np.sort(rng.choice(n, size=min(P.CHECK_ROWS, n), replace=False))
        for _ in range(2):
            ref_times += time_gpu(lambda: prob.launch(f_ref), flusher, budget_s=P.TIMING_BUDGET_S).times_ms
            prob.poison_c()              # the reference's C must not count as the student's
            stu_times += time_gpu(lambda: prob.launch(f_stu), flusher, budget_s=P.TIMING_BUDGET_S).times_ms
            C, cb, ca = prob.read_c()
            res["after_timing"] = judge(prob, C, cb, ca, label, rows=rows, when="after timing")
            if not res["after_timing"]["ok"]:
                break
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
    res["stage"] = "done"
    _write_json(out_file, res)
    return res


def worker_parts(spec_file, out_dir):
    from common.device import init_gpu
    init_gpu()
    spec = json.loads(Path(spec_file).read_text())
    out_dir = Path(out_dir)
    for item in spec["items"]:
        out = out_dir / f"{item['id']}.json"
        if out.exists():
            continue                      # done by an earlier worker
        (out_dir / "current").write_text(item["id"])
        run_one_part(item, out)


def sanitize_run(spec_file):
    """Every item's entry points on SANITIZE_SHAPES, plainly allocated (the sanitizer watches the
    bounds), one line per launch: what the parent reads to know how far the run got."""
    import numpy as np
    import lab07
    from common import check as checking
    from common.device import init_gpu
    from common.kernels import load_function
    init_gpu()
    import pycuda.driver as cuda
    spec = json.loads(Path(spec_file).read_text())
    rng = np.random.default_rng(int(spec.get("seed", 0)))
    for item in spec["items"]:
        ref_row = lab07.KERNELS[item["kernel"]]
        k = replace(ref_row, source=item["source"], tag="", defines={})
        for variant, shape in _cases(k, P.SANITIZE_SHAPES):
            M, N, K = shape
            A, B = lab07.random_inputs(k, M, N, K, rng)
            a, b, c = cuda.to_device(A), cuda.to_device(B), cuda.mem_alloc(M * N * 4)
            try:
                cuda.memset_d32(c, checking.NAN_BITS, M * N)
                k.launch(load_function(item["cubin"], k.entries[variant], k.shared_bytes), M, N, K, a, b, c)
                cuda.Context.synchronize()
            except cuda.Error as e:
                print(f"grade-sanitize: FAILED {item['id']} {_label(k, variant, shape)}: {e}", flush=True)
                _exit_now()
            a.free(); b.free(); c.free()
            print(f"grade-sanitize: launched {item['id']} {_label(k, variant, shape)}", flush=True)
        print(f"grade-sanitize: done {item['id']}", flush=True)


def measure_predictions(out_file):
    """The reference ladder and cuBLAS at PREDICTION_SIZE: % of cuBLAS per kernel, HGEMM / SGEMM.
    Each result is checked on CHECK_ROWS rows after its timing."""
    import numpy as np
    import lab07
    from common.cublas import Cublas
    from common.device import gpu_facts
    from common.timing import L2Flusher, time_gpu
    import pycuda.driver as cuda
    facts = gpu_facts()
    arch = facts["arch"]
    lab07.build(lab07.FP32 + lab07.FP16, [arch])
    blas, flusher = Cublas(), L2Flusher(facts["l2_bytes"])
    n = P.PREDICTION_SIZE
    rng = np.random.default_rng()
    out = {"gpu": facts["name"], "arch": arch, "size": n, "values": {}, "ms": {}, "checks": {}}
    for ladder, kernels, call in (("fp32", lab07.FP32, blas.sgemm), ("fp16", lab07.FP16, blas.hgemm)):
        kinds = [k for k in kernels if k.name in {p.id for p in _predictions()}]
        probe = kinds[0]
        prob = Problem(cuda, probe, n, n, n, rng)
        rows = np.sort(rng.choice(n, size=64, replace=False))
        runs = [(f"cuBLAS-{ladder}", lambda: call(n, n, n, prob.a.ptr, prob.b.ptr, prob.c.ptr), probe)]
        for k in kinds:
            launch = lab07.launcher(k, n, n, n)
            runs.append((k.name, (lambda launch=launch: launch(prob.a.ptr, prob.b.ptr, prob.c.ptr)), k))
        for name, run, k in runs:
            prob.poison_c()
            t = time_gpu(run, flusher, budget_s=0.2)
            C, cb, ca = prob.read_c()
            prob.k = k
            out["checks"][name] = judge(prob, C, cb, ca, f"{name} {n}^3", rows=rows)["verdict"]
            out["ms"][name] = t.median_ms
        for k in kinds:
            out["values"][k.name] = 100.0 * out["ms"][f"cuBLAS-{ladder}"] / out["ms"][k.name]
        prob.free()
    out["values"]["hgemm_over_sgemm"] = out["ms"]["cuBLAS-fp32"] / out["ms"]["cuBLAS-fp16"]
    _write_json(out_file, out)


def _predictions():
    from grading.questions import PREDICTIONS
    return PREDICTIONS


def worker_main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("mode", choices=["parts", "sanitize-run", "measure"])
    ap.add_argument("--spec")
    ap.add_argument("--out")
    args = ap.parse_args(argv)
    if args.mode == "parts":
        worker_parts(args.spec, args.out)
    elif args.mode == "sanitize-run":
        sanitize_run(args.spec)
    else:
        measure_predictions(args.out)


# =============================================================================================
# Parent side (runs wherever the grader runs; only starts workers)
# =============================================================================================

def _python():
    return sys.executable or "python3"


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


def run_parts(items, out_dir, timeout_per_item=P.GPU_TIMEOUT_S):
    """Run every item (dicts: id, part, kernel, source, cubin, reference_cubin, seed) in workers,
    restarting after a crash or a hang. Returns {id: result dict}; an item whose worker died
    without a word gets {"crash": {...}} from the parent."""
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
        argv = [_python(), str(WORKER), "parts", "--spec", str(spec), "--out", str(out_dir)]
        with open(out_dir / "worker.log", "w") as logf:
            proc = subprocess.Popen(argv, cwd=LAB, stdout=logf, stderr=subprocess.STDOUT, text=True)
            status, text = _wait(proc, out_dir, timeout_per_item)
        if status in (0, CRASH_EXIT):
            continue
        if status is None:
            why = (f"did not finish in {timeout_per_item} s: a hang (a __syncthreads() that some threads "
                   "never reach? an endless loop?)")
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


# "... Write access at void sgemm_v6_body<(bool)1>(int, int, ...)+0xba0 in v6_vectorized.cu:178": the
# function is printed with its signature (spaces and all), so the file is the last " in " before "file:line"
_RACE_FIRST = re.compile(r"Race reported between (\w+) access at (.+?) in (\S+:\d+)")
_RACE_SECOND = re.compile(r"and (\w+) access at (.+?) in (\S+:\d+)")
_LAUNCHED = re.compile(r"^grade-sanitize: (launched|done|FAILED) (\S+)(.*)$", re.M)


def attribute_races(text, items):
    """{item id: [one line per race]}: a race belongs to the item whose source file its report names."""
    by_file = {Path(it["source"]).name: it["id"] for it in items}
    out = {}
    lines = text.splitlines()
    for i, first in enumerate(lines):
        m1 = _RACE_FIRST.search(first)
        if not m1:
            continue
        # the second half is on one of the next lines; the program's own output can land in between
        m2 = next((m for m in (_RACE_SECOND.search(l) for l in lines[i + 1:i + 6]) if m), None)
        if not m2:
            continue
        (kind1, at1, where1), (kind2, at2, where2) = m1.groups(), m2.groups()
        where1, where2 = Path(where1).name, Path(where2).name
        owner = by_file.get(where1.rsplit(":", 1)[0]) or by_file.get(where2.rsplit(":", 1)[0])
        func = re.match(r"(?:void\s+)?([\w:]+(?:<[^>]*>)?)", at1.split("+")[0])
        line = (f"{kind1.lower()} at {where1} races with {kind2.lower()} at {where2}"
                f" ({func.group(1) if func else at1.split('+')[0]})")
        out.setdefault(owner, []).append(line)
    return out


def unread_hazards(text, races):
    """Hazards racecheck counted in its summary that no report line above accounts for (a format
    this grader cannot read, or reports past the print limit): they must not pass silently."""
    from common import sanitizer
    found = sanitizer.parse(text, "racecheck")
    total = (found.total_errors or 0) + found.total_warnings
    return max(0, total - sum(len(v) for v in races.values()))


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


def racecheck(items, log_dir, timeout=P.SANITIZER_TIMEOUT_S):
    """{item id: (status, reason)}: status "pass", "fail" or "skipped" (no compute-sanitizer)."""
    from common import sanitizer
    from common.errors import CourseError
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
        left, attempt = list(batch), 0
        while left and attempt <= len(batch):
            attempt += 1
            spec = log_dir / f"racecheck_{bi}_{attempt}.spec.json"
            _write_json(spec, {"items": left, "seed": int(time.time())})
            argv = sanitizer.command(exe, "racecheck", [_python(), str(WORKER), "sanitize-run", "--spec", str(spec)])
            try:
                proc = subprocess.run(argv, cwd=LAB, capture_output=True, text=True, timeout=timeout)
                text = proc.stdout + proc.stderr
            except subprocess.TimeoutExpired as e:
                text = (e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")) + \
                       "\ngrade-sanitize: TIMEOUT"
            log = log_dir / f"racecheck_{bi}_{attempt}.txt"
            log.write_text(f"$ {' '.join(argv)}\n{text}")
            races = attribute_races(text, left)
            unread = races.get(None, []) + [f"{n} hazard(s) in racecheck's summary with no readable report"
                                           for n in [unread_hazards(text, races)] if n]
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


def measure(out_file, timeout=P.GPU_TIMEOUT_S):
    """The predictions' measurements on this GPU (a worker): the dict measure_predictions writes."""
    out_file = Path(out_file)
    if out_file.exists():
        out_file.unlink()
    argv = [_python(), str(WORKER), "measure", "--out", str(out_file)]
    try:
        proc = subprocess.run(argv, cwd=LAB, capture_output=True, text=True, timeout=timeout)
        if proc.returncode != 0 or not out_file.exists():
            return {"error": f"the measurement failed: {_last_line(proc.stdout + proc.stderr)}"}
    except subprocess.TimeoutExpired:
        return {"error": "the measurement did not finish in time"}
    return json.loads(out_file.read_text())


if __name__ == "__main__":
    from common.errors import user_errors
    with user_errors():
        worker_main()
