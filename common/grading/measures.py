"""The GPU check kinds that measure one property of a student's kernel at one shape (a Check's
`shape`), beside correctness: how close it comes to the copy bandwidth, and whether it gives the
same bits run after run.

Worker side (gpu.run_one_part calls these after the re-check, only for a part that has the kind;
`problem(shape)` makes the inputs and the guarded C, gpu.Problem's interface):
    measure_bandwidth(cuda, problem, func, shape, flusher, budget_s) -> dict
    measure_bitwise(problem, func, ref_func, shape, runs)           -> dict
Parent side (grader.py; plain functions of those dicts, tested on synthetic ones):
    bandwidth_verdict(res, check)   -> (status, reason, details)
    bitwise_verdict(res, check)     -> (status, reason, details)
    first_difference(a, b)          -> None, or ((i, j), got, want, ulps): the first element whose bits differ

bandwidth: the kernel's bytes (A and B read once, C written once) per second against a device-to-
device copy of as many bytes (read + write counted), timed interleaved in the same process, L2 flushed
before every repetition of BANDWIDTH_BATCH launches (or copies) back to back. A kernel that streams
its operands as fast as memory allows sits near 100 % (a little above: reads alone run faster than a
read-write mix). threshold: the % needed.
bitwise: the same inputs, `runs` launches, each on a C poisoned first; every run must give the same
bits, and the reference kernel's bits (the spec fixes the order of the additions, so the reference
is the only right set of bits). A reduction that adds in the order blocks arrive changes its low
bits between runs; one that adds in a fixed but other order gives other bits every time.
"""
from common import clocks

PASS, FAIL = "pass", "fail"      # grader.PASS, grader.FAIL (this module imports neither grader nor gpu)
BITWISE_RUNS = 20


# =============================================================================================
# Worker side
# =============================================================================================

CLOCK_RAMP_S = 0.3    # seconds of back-to-back launches before a memory-bound kernel is timed
BANDWIDTH_BATCH = 8   # launches (and copies) per timed repetition of the bandwidth check


def _raise_the_clock(cuda, run, seconds=None):
    """An idle GPU's SM clock is low (the H200 idles at 345 MHz) and takes a few hundred milliseconds of
    work to rise; a memory-bound kernel issued at that clock cannot keep HBM busy while the copy it is
    compared with (the copy engine) can. So the kernel runs back to back for `seconds` before the
    interleaved timing (whose two warm-up rounds take microseconds). (The H200's 31 % of copy that
    first looked like a slow clock was host stalls inside the events, at 1980 MHz: BANDWIDTH_BATCH.)"""
    import time
    t0 = time.perf_counter()
    seconds = CLOCK_RAMP_S if seconds is None else seconds
    while time.perf_counter() - t0 < seconds:
        for _ in range(16):
            run()
        cuda.Context.synchronize()


def measure_bandwidth(cuda, problem, func, shape, flusher, budget_s=0.25):
    """The student's kernel and a copy of as many bytes, interleaved: {"shape", "bytes", "student_ms",
    "copy_ms", "student_gbs", "copy_gbs", "pct_of_copy"}."""
    import numpy as np
    from common.timing import time_interleaved
    prob = problem(shape)
    M, N, K = shape
    nbytes = int(prob.A.nbytes + prob.B.nbytes + M * N * 4)
    src, dst = cuda.mem_alloc(nbytes), cuda.mem_alloc(nbytes)
    batch, launch = BANDWIDTH_BATCH, prob.bound(func)

    def kernels():
        for _ in range(batch):
            launch()

    def copies():
        for _ in range(batch):
            cuda.memcpy_dtod_async(dst, src, nbytes)
    try:
        _raise_the_clock(cuda, launch)
        # A batch per repetition: the GPU works through launches queued while the host queues the
        # next, so host stalls (a loaded CPU: on the H200, beside 16 compiling processes, a GEMV of 63 us
        # was timed at 200 us with one launch per repetition) stay outside the events. The weights
        # (268 MB) are 5x the L2: a launch after the first finds little of them there.
        with clocks.ClockSampler(_bus_id(cuda), interval_ms=20) as sampler:   # a verdict says the clock it ran at
            ts = time_interleaved({"kernel": kernels, "copy": copies}, flusher, budget_s=2 * budget_s)
        kernel_ms = max(float(np.median(ts["kernel"].times_ms)) / batch, 1e-6)
        copy_ms = max(float(np.median(ts["copy"].times_ms)) / batch, 1e-6)
    finally:
        src.free()
        dst.free()
        prob.free()
    student_gbs = nbytes / kernel_ms / 1e6
    copy_gbs = 2 * nbytes / copy_ms / 1e6
    return {"shape": list(shape), "bytes": nbytes, "batch": batch, "student_ms": kernel_ms, "copy_ms": copy_ms,
            "student_gbs": student_gbs, "copy_gbs": copy_gbs, "pct_of_copy": 100.0 * student_gbs / copy_gbs,
            "sm_clock": clocks.summary(sampler.samples), "sm_clock_why": sampler.why}


def _bus_id(cuda):
    """The PCI bus id of the current context's GPU (nvidia-smi's --id), or None (the first GPU)."""
    try:
        return cuda.Context.get_device().pci_bus_id()
    except Exception:                     # a simulated GPU, or a driver without the call
        return None


def measure_bitwise(problem, func, ref_func, shape, runs=BITWISE_RUNS):
    """The reference once, then the student's kernel `runs` times on the same inputs (C poisoned
    before each): {"shape", "runs", "differing_runs", "first_run_diff", "reference_diff", "unwritten"}.
    The reference runs first: a student's kernel that leaves shared state (counters) behind must not
    spoil the reference's bits."""
    import numpy as np
    from common import check as checking
    prob = problem(shape)
    try:
        prob.poison_c()
        prob.launch(ref_func)
        ref, _, _ = prob.read_c()
        first, differing, unwritten = None, 0, 0
        first_diff = None
        for r in range(runs):
            prob.poison_c()
            prob.launch(func)
            C, _, _ = prob.read_c()
            unwritten += int((C.view(np.uint32) == checking.NAN_BITS).sum())
            if first is None:
                first = C
                continue
            d = first_difference(C, first)
            if d is not None:
                differing += 1
                if first_diff is None:
                    first_diff = {"run": r + 1, **_diff_dict(d)}
        vs_ref = first_difference(first, ref)
    finally:
        prob.free()
    return {"shape": list(shape), "runs": runs, "differing_runs": differing, "first_run_diff": first_diff,
            "reference_diff": _diff_dict(vs_ref) if vs_ref else None,
            "reference_bad": int((first.view(np.uint32) != ref.view(np.uint32)).sum()), "unwritten": unwritten}


def first_difference(a, b):
    """None if a and b (float32 arrays) have the same bits, else ((i, j), a value, b value, ulps apart)."""
    import numpy as np
    ua, ub = a.view(np.uint32), b.view(np.uint32)
    diff = ua != ub
    if not diff.any():
        return None
    idx = tuple(int(x) for x in np.argwhere(diff)[0])
    ia, ib = int(ua[idx]), int(ub[idx])
    ulps = abs(_ordered(ia) - _ordered(ib))
    return idx, float(a[idx]), float(b[idx]), ulps


def _ordered(bits):
    """A float32's bits as an integer that is monotonic in the value (for ulp distances)."""
    return bits if bits < 0x80000000 else 0x80000000 - bits


def _diff_dict(d):
    (idx, got, want, ulps) = d
    return {"index": list(idx), "got": got, "want": want, "ulps": ulps}


# =============================================================================================
# Parent side: the verdicts
# =============================================================================================

def _shape_text(res):
    return "x".join(map(str, res.get("shape", []))) or "?"


def bandwidth_verdict(res, check):
    """(status, reason, details) of a bandwidth check from the worker's result (res["bandwidth"])."""
    b = (res or {}).get("bandwidth")
    if not b:
        return FAIL, "the bandwidth was not measured", {}
    if b.get("error"):
        return FAIL, f"the bandwidth measurement failed: {b['error']}", b
    ok = b["pct_of_copy"] >= check.threshold
    reason = "" if ok else (f"{b['pct_of_copy']:.0f} % of the copy bandwidth at {_shape_text(b)} "
                            f"({b['student_gbs']:.0f} GB/s against a device copy's {b['copy_gbs']:.0f} GB/s, "
                            f"same GPU, same run, SM clock {clocks.clock_text(b.get('sm_clock'))}; "
                            f"{check.threshold:g} % needed): too few bytes in flight?")
    return (PASS if ok else FAIL), reason, b


def bitwise_verdict(res, check):
    """(status, reason, details) of a bitwise check from the worker's result (res["bitwise"])."""
    b = (res or {}).get("bitwise")
    if not b:
        return FAIL, "the repeated runs did not happen", {}
    if b.get("error"):
        return FAIL, f"the repeated runs failed: {b['error']}", b
    where = f"at {_shape_text(b)}"
    if b.get("unwritten"):
        return FAIL, (f"{where}: {b['unwritten']} element(s) of C never written over {b['runs']} runs on the same "
                      "inputs (state left behind by one launch spoils the next?)"), b
    d = b.get("first_run_diff")
    if b.get("differing_runs"):
        i, j = d["index"]
        return FAIL, (f"{where}: {b['differing_runs']} of {b['runs']} runs on the same inputs gave other bits than the "
                      f"first, e.g. run {d['run']} at ({i}, {j}): {d['got']!r} against {d['want']!r}, {d['ulps']} ulp "
                      "apart: the order of the additions changes from run to run"), b
    r = b.get("reference_diff")
    if r:
        i, j = r["index"]
        return FAIL, (f"{where}: the same bits on every run, but {b.get('reference_bad', '?')} element(s) differ from "
                      f"the sum in the order the spec fixes, e.g. ({i}, {j}): {r['got']!r} against {r['want']!r}, "
                      f"{r['ulps']} ulp apart: the partial sums are added in another order"), b
    return PASS, "", b
