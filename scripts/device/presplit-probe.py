"""Issue 44's pre-split comparison, like for like (a question for lab 7c's NOTES, not a test).

The bench times h4_3xtf32's whole call (its split pass, then its GEMM) beside three cuBLAS TF32 calls
on big and small parts, split in the call ("split included") or once beforehand ("pre-split"). A whole
call against pre-split calls puts the split on one side only. This probe adds the two rows that
compare like with like, in the same interleaved loop (common.timing: L2 flushed, a head start, CUDA
events, median):
  - h4_3xtf32's GEMM launch alone, on parts its own pass wrote beforehand (all of A and B: the pass
    with OVERLAP's share set to every band, so the GEMM's splitter warps and band counters sit idle);
  - that pass alone: what the whole call pays on top of the GEMM.
Every 3xTF32 row is checked against float64 with the course's 3xTF32 bound, and the GEMM alone must
give the whole call's C bit for bit (the same parts, the same arithmetic).

On the device machine, after `source .whl/gpu-env.sh`, in the snapshot's tree (snapshot.sh), lab 7c built;
`PHASE=bench ONLY=7c-presplit scripts/device/new-kernels.sh` does all that:
    python3 scripts/device/presplit-probe.py [SIZES] [OUT.json]
SIZES default 4096,8192; the record goes to lab 7c's results/ (lab07c-presplit-probe_<gpu>_<date>_<commit>.json)
unless OUT.json is given.
"""
import dataclasses
import datetime
import json
import sys
from pathlib import Path

import numpy as np

PROBE_ROW = "h4_3xtf32_presplit_probe"

def presplit_row(lab):
    """(h4_3xtf32, the probe's row, the lab's launch module): the probe's row is h4_3xtf32's cubin under
    another name (launch._run keeps its prepared launches apart), and from now on launch.split_share
    gives that row every band of A in the pass (the whole call keeps its own share)."""
    k = lab.kernel("h4_3xtf32")
    launch = sys.modules[k.launch_hook.__module__]          # the lab's launch.py
    k_pre = dataclasses.replace(k, name=PROBE_ROW)
    share = getattr(launch.split_share, "shared_by_the_pass", launch.split_share)

    def every_band_in_the_pass(kern, M, N, grid):
        bands, first = share(kern, M, N, grid)
        return (bands, bands) if kern.name == PROBE_ROW else (bands, first)
    every_band_in_the_pass.shared_by_the_pass = share
    launch.split_share = every_band_in_the_pass
    return k, k_pre, launch


def main():
    sizes = [int(s) for s in (sys.argv[1] if len(sys.argv) > 1 else "4096,8192").split(",")]

    import pycuda.driver as cuda
    from common import check, clocks
    from common.cublas import Cublas
    from common.device import gpu_facts
    from common.lab import load
    from common.measure import slug
    from common.precision import precision
    from common.report import run_info, table
    from common.timing import L2Flusher, time_interleaved

    lab = load("lab07c-hopper-wgmma")

    facts = gpu_facts()
    if facts["arch"] != "sm_90":
        sys.exit(f"h4_3xtf32 needs a Hopper GPU (sm_90); this one is {facts['name']} ({facts['arch']})")
    blas, flusher, rng = Cublas(), L2Flusher(facts["l2_bytes"]), np.random.default_rng()
    prec = precision("fp32_3xtf32")
    k, k_pre, launch = presplit_row(lab)

    record = {"what": "issue 44: h4_3xtf32's GEMM alone on operands split beforehand, beside the three cuBLAS "
                      "TF32 calls split included and pre-split, interleaved (scripts/device/presplit-probe.py)",
              "gpu": facts["name"], "facts": facts, **run_info(), "sizes": {}}
    for n in sizes:
        A, B = prec.random_inputs(n, n, n, rng)
        ref, abs_ref = check.reference(*prec.reference_inputs(A, B))
        tol = prec.tolerance(n, abs_ref, k.roundoff)
        a, b = cuda.to_device(A), cuda.to_device(B)
        rows = {"cuBLAS SGEMM": precision("fp32").cublas(blas),
                "cuBLAS TF32, one pass": precision("tf32_tensor").cublas(blas),
                "cuBLAS 3xTF32, split included": precision("tf32x3_cublas").cublas(blas),
                "cuBLAS 3xTF32, pre-split": precision("tf32x3_cublas_presplit").cublas(blas)}
        cs = {name: cuda.mem_alloc(n * n * 4) for name in [*rows, "h4_3xtf32", "h4_3xtf32 GEMM alone, pre-split",
                                                           "h4_3xtf32 split pass alone"]}
        for c in cs.values():
            cuda.memset_d32(c, check.NAN_BITS, n * n)
        whole = lab.launcher(k, n, n, n, "")
        runs = {name: (lambda call=call, c=cs[name]: call(n, n, n, a, b, c)) for name, call in rows.items()}
        runs["h4_3xtf32"] = lambda: whole(a, b, cs["h4_3xtf32"])
        # the pass over all of A and B, then the GEMM, once: the parts are written; then each step alone
        pre_launch = lab.launcher(k_pre, n, n, n, "")
        pre_launch(a, b, cs["h4_3xtf32 GEMM alone, pre-split"])
        steps = [v for key, v in launch._PREPARED.items() if key[0] == k_pre.name and key[2:5] == (n, n, n)][-1]
        split_step, gemm_step = steps
        runs["h4_3xtf32 GEMM alone, pre-split"] = gemm_step
        runs["h4_3xtf32 split pass alone"] = split_step
        with clocks.ClockSampler(facts.get("pci_bus_id")) as sampler:
            timings = time_interleaved(runs, flusher, budget_s=1.0)
        C, checks = np.empty((n, n), np.float32), {}
        results = {}
        for name in [*rows, "h4_3xtf32", "h4_3xtf32 GEMM alone, pre-split"]:
            cuda.memcpy_dtoh(C, cs[name])
            results[name] = C.copy()
            if name.startswith(("cuBLAS 3xTF32", "h4_3xtf32")):
                checks[name] = str(check.compare(C, ref, tol, label=f"{name} {n}^3"))
        same_bits = bool(np.array_equal(results["h4_3xtf32"].view(np.uint32),
                                        results["h4_3xtf32 GEMM alone, pre-split"].view(np.uint32)))
        sgemm_ms = timings["cuBLAS SGEMM"].median_ms
        flops = 2.0 * n ** 3
        entry = {"sm_clock": clocks.summary(sampler.samples), "gemm_alone_bitwise_equal_to_whole_call": same_bits,
                 "checks": checks, "rows": {}}
        for name, t in timings.items():
            entry["rows"][name] = {**t.as_dict(), "effective_fp32_tflops": t.tflops(flops),
                                   "x_cublas_sgemm": sgemm_ms / t.median_ms}
        record["sizes"][str(n)] = entry
        print(table([{"row": name, **r} for name, r in entry["rows"].items()],
                    [("row", "row", ""), ("median_ms", "ms", ".4f"), ("spread_pct", "spread %", ".1f"),
                     ("effective_fp32_tflops", "TFLOP/s", ".1f"), ("x_cublas_sgemm", "x SGEMM", ".2f")],
                    title=f"{n}^3 on {facts['name']}, SM clock {clocks.clock_text(entry['sm_clock'])}; "
                          f"GEMM alone = whole call bit for bit: {same_bits}"))
        for v in checks.values():
            print(f"  {v}")
        for c in cs.values():
            c.free()
        a.free(); b.free()
    out_path = Path(sys.argv[2]) if len(sys.argv) > 2 else lab.results_dir / (
        f"{lab.short}-presplit-probe_{slug(facts['name'])}_{datetime.date.today().isoformat()}_{record['commit'][:7]}.json")
    out_path.parent.mkdir(parents=True, exist_ok=True)
    out_path.write_text(json.dumps(record, indent=1) + "\n")
    print(f"wrote {out_path}")


if __name__ == "__main__":
    main()
