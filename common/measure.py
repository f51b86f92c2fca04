"""Measuring on the GPU, and the tuner's machinery: what the targets (common/targets.py), make compare,
make bounds, the shape sweep, the profilers and a lab's tools share.

    needs_gpu(target, lab)         this GPU's facts, or one message: which GPU the target needs
                                   (gpu_needed(lab): in words) and what works without one
    BASELINE                       "cuBLAS": the name of the baseline row in every record (records.py
                                   defines it)
    Measurer(lab, facts)           one session's kit: .measure(prec, entries, M, N, K) times cuBLAS and
                                   the entries interleaved (common.timing), each checked after its timing
                                   against the float64 reference; .rows(ladder, kernels, n) the bench rows
    ladder_info(lab, ladder, facts)   what a record says about a ladder (precision, baseline, peak)
    slug(name)                     a GPU's name as part of a file name
    Tuning(kernel, candidates, illegal, sizes)   what `make tune` searches for one ladder
    tune_candidates(lab, ladder, spec, arch)     -> (rows to time, [(name, why refused)])
    shape_class(n), tuned_path(lab, facts), tuned_kernel(lab, ladder, facts, size), tuned_builds(lab, arch),
    source_sha(kernel), stale_tuned(lab, ladder, facts, size)   which source a tuned record was timed on
    tuned_named(lab, "v8:tuned", facts, size), merge_tuned(recorded, best)   the tuned record: read, merged
    TUNED                          ":tuned", the suffix that names the build `make tune` recorded
    read_json(path)                a record, or {} when there is none
"""
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

import numpy as np

from . import check as checking
from . import clocks
from . import report
from .errors import CourseError
from .precision import precision
from .records import BASELINE  # noqa: F401  (the name of the baseline row: records.py says it once)


def gpu_needed(lab=None):
    """The GPUs a lab's own kernels run on, in words: 'an NVIDIA GPU of sm_80 or newer' (of sm_75 where rows
    run on Turing, naming those that need sm_80), or 'an NVIDIA
    Hopper GPU (sm_90)' for a lab whose every row is built for sm_90a only."""
    rows = lab.own() if lab is not None else []
    if rows and all(k.archs for k in rows):
        lowest = min((a for k in rows for a in k.archs), key=lambda a: int(re.sub(r"\D", "", a)))
        number = re.sub(r"\D", "", lowest)
        if lowest.endswith("a"):          # sm_90a: that architecture's GPUs only
            return f"an NVIDIA {'Hopper ' if number == '90' else ''}GPU (sm_{number})"
        return f"an NVIDIA GPU of sm_{number} or newer"
    from .build import arch_number
    lowest = min((k.min_arch for k in rows), key=arch_number, default="sm_80")
    newer = {}
    for k in rows:
        if k.archs or k.min_arch != lowest:
            newer.setdefault(k.archs[0] if k.archs else k.min_arch, []).append(k.name)
    return f"an NVIDIA GPU of {lowest} or newer" + "".join(f" ({', '.join(n)}: {a})" for a, n in newer.items())


def walkthrough_notebook(lab):
    """The lab's notebook (notebooks/<lab's short name>_*.ipynb), as a path from the repository root, or None."""
    from .notebooks import NOTEBOOKS_DIR
    found = sorted(NOTEBOOKS_DIR.glob(f"{lab.short}_*.ipynb")) if lab is not None else []
    return f"notebooks/{found[0].name}" if found else None


def needs_gpu(target, lab=None, command=None):
    """This GPU's facts, or one short message: which target needs a GPU (of which architecture), and
    what works without one. command: what to call it in that message when it is not `make <target>`
    (a lab's tool script)."""
    from .device import gpu_status
    ok, why = gpu_status()
    if not ok:
        where = f" {lab.dir.relative_to(lab.dir.parents[1])}/results/" if lab else " the lab's results/"
        notebook = walkthrough_notebook(lab)
        shows = f" and {notebook} shows them" if notebook else ""
        raise CourseError(f"`{command or 'make ' + target}` needs an NVIDIA GPU, and cannot use one here: {why}",
                          hint=f"run it on a machine with {gpu_needed(lab)}; the numbers recorded "
                               f"on one are in{where}{shows}; `make`, `make sass` and `make test` work here")
    from .device import gpu_facts
    return gpu_facts()


def slug(name):
    """A GPU's name as a file name's part: 'NVIDIA H200' -> 'nvidia-h200'."""
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


def ladder_info(lab, ladder, facts=None):
    """What a record says about one ladder: its precision, title, baseline, peak, and its yardstick rows."""
    p = lab.ladder_precision(ladder)
    return {"precision": p.name, "title": p.title, "baseline_mode": p.cublas_mode,
            "peak_tflops": p.peak((facts or {}).get("peaks")),
            "yardsticks": [k.name for k in lab.ladders.get(ladder, []) if k.yardstick]}


class Measurer:
    """One GPU session's measuring kit: cuBLAS, the L2 flusher, fresh inputs per size. `rows(...)`
    times cuBLAS of the ladder's precision first, then each kernel, and checks each result after
    its timing loop against the float64 reference."""

    def __init__(self, lab, facts):
        from .cublas import Cublas
        from .timing import L2Flusher
        self.lab, self.facts = lab, facts
        self.blas = Cublas()
        self.flusher = L2Flusher(facts["l2_bytes"])
        self.rng = np.random.default_rng()

    def measure(self, prec, entries, M, N, K, progress=None, deadline=None, budget_s=1.0, group=None):
        """[(entry, Timing, Verdict, cuBLAS ms)] for cuBLAS of `prec` and each entry ({"name", "kernel",
        "variant"}; kernel None = a cuBLAS call of entry["precision"]), timed interleaved (common.timing
        says why), each with its own output buffer, poisoned first and checked after the timing against
        the float64 reference. With `group`, entries are timed `group` at a time, each group with cuBLAS
        again, and with a deadline (time.monotonic()) the groups after it are left out."""
        import time
        import pycuda.driver as cuda
        from .timing import time_interleaved
        lab = self.lab
        A, B = prec.random_inputs(M, N, K, self.rng)
        ref, abs_ref = checking.reference(*prec.reference_inputs(A, B))
        a, b = cuda.to_device(A), cuda.to_device(B)
        base = {"name": BASELINE, "kernel": None, "variant": "", "precision": prec}
        entries = list(entries)
        group = group or max(len(entries), 1)
        out, Cout, cs = [], np.empty((M, N), np.float32), {}
        self.clock_samples = []                   # the SM clock during this call's timing loops (common/clocks.py)
        try:
            for g in range(0, max(len(entries), 1), group):
                if deadline is not None and g and time.monotonic() > deadline:
                    print(f"time budget spent: {len(entries) - g} row(s) at {M}x{N}x{K} not timed")
                    break
                chunk = list(enumerate([base] + entries[g:g + group]))     # keyed by position: names may repeat
                runs, tols = {}, {}
                for i, e in chunk:
                    if progress and (i or not g):      # cuBLAS again for a later group: not a new row
                        progress(e.get("label", e["name"]))
                    c = cs[i] = cuda.mem_alloc(M * N * 4)
                    cuda.memset_d32(c, checking.NAN_BITS, M * N)
                    k = e["kernel"]
                    if k is None:
                        call = precision(e.get("precision", prec)).cublas(self.blas)
                        runs[i] = (lambda call=call, c=c: call(M, N, K, a, b, c))
                        tols[i] = precision(e.get("precision", prec)).tolerance(K, abs_ref)
                    else:
                        launch = lab.launcher(k, M, N, K, e["variant"])
                        runs[i] = (lambda launch=launch, c=c: launch(a, b, c))
                        tols[i] = k.prec.tolerance(K, abs_ref, k.roundoff)
                with clocks.ClockSampler(self.facts.get("pci_bus_id")) as sampler:   # the timing only: not the
                    timings = time_interleaved(runs, self.flusher, budget_s=budget_s)   # reference's idle GPU
                self.clock_samples += sampler.samples
                for i, e in chunk[1:] if g else chunk:     # a later group's cuBLAS is for its ratios only
                    cuda.memcpy_dtoh(Cout, cs[i])           # the result of its last timed repetition
                    v = checking.compare(Cout, ref, tols[i], label=f"{e.get('label', e['name'])} {M}x{N}x{K}")
                    out.append((e, timings[i], v, timings[0].median_ms))
                for c in cs.values():
                    c.free()
                cs.clear()
        finally:
            a.free(); b.free()
            for c in cs.values():
                c.free()
        return out

    def baseline_unavailable(self, name):
        """Why the extra baseline `name` cannot run here (cublas_unavailable), asked once per run and said
        once; None when it can."""
        cache = self.__dict__.setdefault("_unavailable", {})
        if name not in cache:
            cache[name] = cublas_unavailable(precision(name), self.blas)
            if cache[name]:
                print(f"skipping {precision(name).baseline}: {cache[name]}")
        return cache[name]

    def rows(self, ladder, kernels, n, extra_baselines=(), progress=None, deadline=None, budget_s=1.0):
        """The bench's result rows of one ladder at M = N = K = n: cuBLAS of the ladder's precision,
        the extra baselines, then the kernels (measure() says how they are timed and checked)."""
        prec = self.lab.ladder_precision(ladder)
        peak = prec.peak(self.facts["peaks"])
        usable = [x for x in extra_baselines if not self.baseline_unavailable(x)]
        entries = [{"name": precision(x).baseline, "kernel": None, "variant": "", "precision": precision(x)}
                   for x in usable]
        entries += [{"name": k.name, "kernel": k, "variant": k.variant_for(n, n, n)} for k in kernels]
        flops = 2.0 * n ** 3
        out = []
        measured = self.measure(prec, entries, n, n, n, progress, deadline, budget_s,
                                group=6 if deadline is not None else None)
        clock = clocks.summary(self.clock_samples)                         # the clock the figures ran at
        for e, t, v, cublas_ms in measured:
            k, tf = e["kernel"], t.tflops(flops)
            out.append({"ladder": ladder, "kernel": e["name"], "variant": e["variant"], "size": n, **t.as_dict(),
                        "tflops": tf, "pct_of_peak": 100 * tf / peak if peak else None,
                        "pct_of_cublas": 100 * cublas_ms / t.median_ms, "check": str(v), "check_ok": v.ok,
                        "sm_clock": clock,
                        **({"params": k.tiling.params} if k is not None and k.tag else {})})
        return out


def cublas_unavailable(prec, blas):
    """None, or why this cuBLAS or GPU cannot make the optional call of `prec` (Precision.optional: an
    emulation mode NVIDIA ships for some GPUs only): the call is looked up and, when found, made once
    at 16 x 16 x 16 and synchronized, so that a refusal is a line in the table's notes, never a stopped
    benchmark. A required call is never probed: its failure is an error."""
    if not prec.optional:
        return None
    try:
        call = prec.cublas(blas)
    except (AttributeError, CourseError) as e:
        return getattr(e, "message", None) or f"this cuBLAS binding has no {prec.cublas_call}"
    why = getattr(blas, "unavailable", lambda name: None)(prec.cublas_call)
    if why:
        return why
    import pycuda.driver as cuda
    n = 16
    bufs = [cuda.mem_alloc(n * n * max(prec.element_bytes, 4)) for _ in range(3)]
    try:
        for x in bufs:
            cuda.memset_d32(x, 0, n * n)
        call(n, n, n, *bufs)
        cuda.Context.synchronize()
    except CourseError as e:
        return e.message
    except cuda.Error as e:
        return f"cuBLAS failed on the GPU: {e}"
    finally:
        for x in bufs:
            x.free()
    return None


@dataclass(frozen=True)
class Tuning:
    """What `make tune` searches for one ladder (a lab's TUNING = {ladder: Tuning(...)}).
    kernel      the row whose parameters are searched ("v8")
    candidates  parameter dicts ({} = the file's defaults, the taught configuration), or a callable
                returning them
    illegal     params -> None, or why the configuration breaks the kernel's static_asserts: checked
                before anything is compiled (common.legality.Legality asks the compiler, all at once)
    sizes       the squares it is timed at; the best per size class is recorded (of a class timed at
                two sizes, the first size's best)"""
    kernel: str
    candidates: object
    illegal: Optional[Callable] = None
    sizes: tuple = (4096,)

    def configs(self):
        c = self.candidates() if callable(self.candidates) else self.candidates
        return [dict(p) for p in c]


def shape_class(n):
    """The size class a square's best configuration is recorded under."""
    return "small" if n < 1536 else ("medium" if n < 3072 else "large")


def tuned_path(lab, facts):
    return lab.results_dir / f"{lab.short}-tuned_{slug(facts['name'])}.json"


def tuned_kernel(lab, ladder, facts, size=4096):
    """The best configuration `make tune` recorded for this GPU, ladder and size class, as a row, or None."""
    return _tuned_row(lab, _recorded_best(lab, ladder, facts, size))


def _recorded_best(lab, ladder, facts, size):
    return (read_json(tuned_path(lab, facts)).get("best") or {}).get(ladder, {}).get(shape_class(size))


def _stale(best, base):
    """Whether a recorded best was timed on another version of its kernel's source (records made before
    source_sha was recorded count as current)."""
    return best.get("source_sha") not in (None, source_sha(base))


def source_sha(kernel):
    """The first 16 hex digits of the sha256 of a kernel's source file (None where it has none): a tuned
    record names the source it was timed on, and a record made for another version of it is not used."""
    import hashlib
    path = getattr(kernel, "path", "")
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16] if path else None
    except OSError:
        return None


def stale_tuned(lab, ladder, facts, size=4096):
    """A sentence where `make tune`'s record for this GPU, ladder and size class was timed on another
    version of its kernel's source (so `make bench` leaves it out), else None."""
    best = _recorded_best(lab, ladder, facts, size)
    base = lab.kernels.get((best or {}).get("kernel"))
    if not best or not best.get("params") or base is None or not _stale(best, base):
        return None
    return (f"{ladder} {size}^3: {base.name}'s tuned build is left out: `make tune` timed it on another version "
            f"of kernels/{base.source}; run `make tune` again to time this one")


def _tuned_row(lab, best):
    """A recorded best ({kernel, params, source_sha, ...}) as a row of the lab's table, or None (no
    parameters: the defaults won; a kernel or parameter the table no longer has; a record timed on
    another version of the kernel's source)."""
    if not best or not best.get("params"):
        return None
    base = lab.kernels.get(best.get("kernel"))
    if base is None or _stale(best, base):
        return None
    try:
        return base.with_params(**best["params"])
    except CourseError:
        return None


TUNED = ":tuned"            # NAME:tuned, for the profilers: the build `make tune` recorded for this GPU


def tuned_builds(lab, arch):
    """{name: (row, note)}: each distinct build `make tune` recorded in results/ for a GPU of `arch`,
    noted with the GPUs and size classes it won ("tuned: NVIDIA H200 large"). No GPU needed."""
    found = {}
    for path in sorted(lab.results_dir.glob(f"{lab.short}-tuned_*.json")):
        record = read_json(path)
        if record.get("arch") != arch:
            continue
        for classes in (record.get("best") or {}).values():
            for cls, best in classes.items():
                k = _tuned_row(lab, best)
                if k is not None:
                    found.setdefault(k.name, (k, []))[1].append(f"{record.get('gpu', path.stem)} {cls}")
    return {name: (k, "tuned: " + ", ".join(where)) for name, (k, where) in found.items()}


def tuned_named(lab, name, facts, size):
    """The row NAME:tuned stands for on this GPU at size^3 (make tune's record for NAME's ladder and the
    size class), or a CourseError that says what to run."""
    base = lab.kernel(name[:-len(TUNED)])
    ladder = lab.ladder_of(base)
    k = tuned_kernel(lab, ladder, facts, size) if ladder else None
    if k is None or k.base_name != base.name:
        raise CourseError(f"`make tune` recorded no configuration of {base.name} for {facts['name']} "
                          f"at {size}^3 ({shape_class(size)} squares)",
                          hint=f"run `make tune` on this GPU first, or profile {base.name} itself")
    return k


def read_json(path):
    """A JSON file's content, or {} when it is missing or unreadable."""
    import json
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


def merge_tuned(recorded, best):
    """The tuned record after a run: the classes this run timed take its best, the others keep what
    an earlier run recorded (`make tune SIZE=4096` must not forget the 2048^3 winner)."""
    merged = {ladder: dict(classes) for ladder, classes in (recorded.get("best") or {}).items()}
    for ladder, classes in best.items():
        merged.setdefault(ladder, {}).update(classes)
    return merged


def as_tuning(spec):
    return spec if isinstance(spec, Tuning) else Tuning(spec[0], spec[1])


def tune_candidates(lab, ladder, spec, arch, jobs=None):
    """(kept rows, rejected [(name, why)]): illegal configurations are refused before compiling,
    the rest compiled in parallel, and any that spills or fails to compile is rejected."""
    from concurrent.futures import ThreadPoolExecutor
    import os
    base = lab.kernel(spec.kernel)
    rows, rejected = [], []
    configs = spec.configs()
    if hasattr(spec.illegal, "check"):     # common.legality.Legality: one compile for the whole batch
        spec.illegal.check([p for p in configs if p])
    for p in configs:
        why = spec.illegal(p) if spec.illegal and p else None
        k = base.with_params(**p) if p else base
        if why:
            rejected.append((k.name, f"illegal: {why}"))
        else:
            rows.append(k)
    build_arch = lab.build_arch(base, arch)

    def compile_one(k):
        try:
            res = lab.build([k], [arch], jobs=1)[(k.name, build_arch)]
        except CourseError as e:
            return k, f"did not compile: {e.message.splitlines()[-1][:160]}"
        spilled = [e for e, r in res.items() if r["spill_stores"] or r["spill_loads"] or r["stack"]]
        return k, (f"spills in {', '.join(spilled)}" if spilled else None)

    from .lab import check_shared_memory
    kept, done = [], 0
    with ThreadPoolExecutor(max_workers=jobs or os.cpu_count() or 2) as pool:
        for k, why in pool.map(compile_one, rows):
            done += 1
            report.progress(done, len(rows), f"{ladder}: compiled {k.name}")
            if not why:
                try:
                    check_shared_memory(k)
                except CourseError as e:
                    why = e.message
            if why:
                rejected.append((k.name, why))
            else:
                kept.append(k)
    return kept, rejected
