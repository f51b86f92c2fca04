"""The GPU check kind "bank-conflicts": shared-memory bank conflicts per shared load, measured by Nsight
Compute on the student's kernel and on the reference kernel, both launched in one program on the
check's shape (Check.shape; the variant that shape picks), and compared.

    METRICS                         the two counters read (ncu's names)
    measure(lab, items, shapes, log_dir, timeout) -> {item id: {"student": {...}, "reference": {...}}
                                    | {"error": line} | {"skipped": line}}; items as grader.py builds them
    verdict(result, check)          -> (status, reason, details): "pass" when the student's conflicts per
                                    shared load are at most the reference's + check.threshold
    per_load(metrics)               conflicts / shared-load instructions of one launch
    main(argv)                      the program ncu profiles: `python -m common.grading.bankcheck --lab L
                                    --spec S [--spec S2 ...]` (each item's kernels in turn)

Why per load and against the reference: a kernel's conflicts scale with its size; per shared-load
instruction they are a property of its access pattern, and the reference on the same GPU, shape and
ncu says what the pattern should cost. `threshold` is the lab's allowance, per load (its parts.py says
why that value). No ncu, or no permission to read counters: "skipped", with ncu's reason.
"""
import argparse
import json
from pathlib import Path

from ..ncu_metrics import LD_BANK_CONFLICTS as CONFLICTS, LDS_INST as LOADS   # the course's names for them

METRICS = (CONFLICTS, LOADS)
BATCH_S_PER_ITEM = 15           # what ncu's run over all items may take per item beyond one item's timeout


def per_load(metrics):
    loads = metrics.get(LOADS) or 0
    return (metrics.get(CONFLICTS) or 0) / loads if loads else None


def verdict(result, check):
    """(status, reason, details) for one item's measurement (None: not measured)."""
    if not result:
        return "fail", "bank conflicts were not measured (the GPU run stopped before)", {}
    if result.get("skipped"):
        return "skipped", result["skipped"], {}
    if result.get("error"):
        return "fail", result["error"], {}
    s, r = result["student"], result["reference"]
    s_per, r_per = per_load(s), per_load(r)
    if s_per is None:
        return "fail", "no shared loads were measured in your kernel (smsp__sass_inst_executed_op_shared_ld = 0)", result
    shape = "x".join(map(str, check.shape))
    if s_per <= (r_per or 0) + check.threshold:
        return "pass", "", result
    return "fail", (f"{s[CONFLICTS]:,} shared-load bank conflicts in {s[LOADS]:,} shared loads at {shape} "
                    f"({s_per:.4f} per load) against the reference's {r_per:.4f} (ncu, same GPU, same run; "
                    f"{check.threshold:g} per load allowed above it)"), result


# ---------------------------------------------------------------------------------------------
# Parent side
# ---------------------------------------------------------------------------------------------

def measure(lab, items, shapes, log_dir, timeout):
    """{item id: result}: ncu counts the conflicts of each item's kernel (the student's, then the
    reference's, one launch each at the part's shape). First one ncu run for all items (ncu's start
    costs more than the kernels it profiles); where that run fails or its launches do not pair up
    with the items, one run per item, so that one kernel's failure costs only its own item."""
    from common import ncu as ncumod
    from common.errors import CourseError
    try:
        exe = ncumod.find_ncu()
    except CourseError as e:
        return {it["id"]: {"skipped": f"bank conflicts not measured: {e.message}"} for it in items}
    log_dir = Path(log_dir)
    log_dir.mkdir(parents=True, exist_ok=True)
    jobs = []                                   # (item, entry, spec path)
    for it in items:
        k = lab.kernel(it["kernel"])
        shape = tuple(shapes[it["part"]])
        spec = log_dir / f"{it['id']}.spec.json"
        spec.write_text(json.dumps({**it, "shape": list(shape)}))
        jobs.append((it, k.entries[k.variant_for(*shape)], spec))
    if len(jobs) > 1:
        try:
            # a kernel that hangs under ncu costs this run one timeout (and a few seconds a kernel), then
            # the per-item runs find it
            together, _ = _run(exe, lab, jobs, log_dir / "all.log", timeout + BATCH_S_PER_ITEM * len(jobs))
        except ncumod.CountersUnavailable as e:
            return {it["id"]: {"skipped": f"bank conflicts not measured: {e.message}"} for it in items}
        if together is not None:
            return together
    out = {}
    for job in jobs:
        it = job[0]
        try:
            one, why = _run(exe, lab, [job], log_dir / f"{it['id']}.log", timeout)
        except ncumod.CountersUnavailable as e:
            return {x["id"]: {"skipped": f"bank conflicts not measured: {e.message}"} for x in items}
        out[it["id"]] = one[it["id"]] if one else {"error": f"ncu could not measure the kernel: {why}"}
    return out


def _run(exe, lab, jobs, log, timeout):
    """One ncu run over jobs [(item, entry, spec)]: ({item id: result}, ""), or (None, why) where ncu
    failed or profiled other launches than the program's student, reference pairs (the log has it all)."""
    from common import ncu as ncumod
    from common.errors import CourseError
    from . import gpu
    entries = sorted({entry for _, entry, _ in jobs})
    kernel = entries[0] if len(entries) == 1 else "regex:^(" + "|".join(entries) + ")$"
    program = [gpu._python(), "-m", "common.grading.bankcheck", "--lab", str(lab.dir)]
    for _, _, spec in jobs:
        program += ["--spec", str(spec)]
    argv = ncumod.command(exe, program, metrics=METRICS, kernel=kernel, launch_count=2 * len(jobs))
    what = jobs[0][0]["id"] if len(jobs) == 1 else f"{len(jobs)} kernels"
    try:
        run = ncumod.run(argv, cwd=gpu.ROOT, what=what, env={"PYTHONPATH": gpu.worker_env()["PYTHONPATH"]},
                         timeout=timeout)
    except ncumod.CountersUnavailable:
        raise
    except CourseError as e:
        failed = getattr(e, "run", None)
        log.write_text(failed.log() if failed else e.message)
        return None, e.message
    log.write_text(run.log())
    launches = ncumod.parse_csv(run.stdout)
    expected = [entry for _, entry, _ in jobs for _ in (0, 1)]      # student, reference, per item
    if [l.kernel for l in launches] != expected:
        with open(log, "a") as f:
            f.write(f"\nbankcheck: expected the launches {expected}, ncu profiled {[l.kernel for l in launches]}\n")
        return None, f"ncu profiled {len(launches)} launch(es), not the {len(expected)} expected (the log: {log})"
    out = {}
    for n, (it, _, spec) in enumerate(jobs):
        student, reference = launches[2 * n], launches[2 * n + 1]
        out[it["id"]] = {"student": {m: student.metrics.get(m) for m in METRICS},
                         "reference": {m: reference.metrics.get(m) for m in METRICS},
                         "shape": json.loads(spec.read_text())["shape"]}
    return out, ""


# ---------------------------------------------------------------------------------------------
# The program ncu runs
# ---------------------------------------------------------------------------------------------

def main(argv=None):
    ap = argparse.ArgumentParser(description="launch a student's kernel, then the reference, once each")
    ap.add_argument("--lab", required=True)
    ap.add_argument("--spec", required=True, action="append", help="an item's spec (repeat: launched in order)")
    args = ap.parse_args(argv)
    import numpy as np
    from common.device import init_gpu
    from common.kernels import load_function
    from common.lab import load
    init_gpu()
    import pycuda.driver as cuda
    lab = load(args.lab)
    for spec in args.spec:
        item = json.loads(Path(spec).read_text())
        k = lab.kernel(item["kernel"])
        M, N, K = item["shape"]
        variant = k.variant_for(M, N, K)
        rng = np.random.default_rng(int(item.get("seed", 0)))
        A, B = k.prec.random_inputs(M, N, K, rng)
        a, b, c = cuda.to_device(A), cuda.to_device(B), cuda.mem_alloc(M * N * 4)
        for cubin in (item["cubin"], item["reference_cubin"]):
            k.launch(load_function(cubin, k.entries[variant], k.shared_bytes, k.signature), M, N, K, a, b, c)
            cuda.Context.synchronize()
        print(f"bankcheck: launched {item['id']} and the reference, {variant} {M}x{N}x{K}", flush=True)
        a.free(), b.free(), c.free()


if __name__ == "__main__":
    main()
