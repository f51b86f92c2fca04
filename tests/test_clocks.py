"""common/clocks.py without a GPU: nvidia-smi faked by a script that prints clock samples until it is
stopped, and the clock line a bench table prints under each ladder (common/records.py)."""
import os
import stat
import time

import pytest

from common import clocks, records


def fake_smi(folder, body):
    exe = folder / "nvidia-smi"
    exe.write_text("#!/bin/sh\n" + body)
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    return exe


def test_parse_keeps_the_numbers_and_skips_the_rest():
    assert clocks.parse("1980\n[N/A]\n 1755 \nclocks.sm [MHz]\n\n1650\n") == [1980.0, 1755.0, 1650.0]


def test_summary_and_text():
    s = clocks.summary([1980, 1650, 1755, 1755])
    assert s == {"median_mhz": 1755.0, "min_mhz": 1650, "max_mhz": 1980, "samples": 4}
    assert clocks.clock_text(s) == "1755 MHz (1650-1980)"
    assert clocks.clock_text(clocks.summary([1980.0])) == "1980 MHz"
    assert clocks.summary([]) is None and clocks.clock_text(None) == "not sampled"


def test_the_sampler_collects_what_nvidia_smi_prints_while_the_block_runs(tmp_path, monkeypatch):
    # the fake records its arguments, then prints a sample every 20 ms until terminated
    fake_smi(tmp_path, f'echo "$@" > {tmp_path}/args\nwhile true; do echo 1755; sleep 0.02; done\n')
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    with clocks.ClockSampler("00000000:19:00.0", interval_ms=20) as s:
        deadline = time.monotonic() + 10         # a loaded CI machine may take a while to start the fake
        while not (tmp_path / "args").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.3)                          # then some 15 samples' worth
    assert len(s.samples) >= 3 and set(s.samples) == {1755.0}, s.samples
    assert s.summary()["median_mhz"] == 1755.0 and s.why == ""
    args = (tmp_path / "args").read_text()
    assert "--query-gpu=clocks.sm" in args and "--loop-ms=20" in args and "--id=00000000:19:00.0" in args


def test_no_nvidia_smi_gives_none_and_says_why(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    with clocks.ClockSampler() as s:
        pass
    assert s.summary() is None and "not on PATH" in s.why


def test_an_nvidia_smi_that_prints_nothing_gives_none_and_says_why(tmp_path, monkeypatch):
    fake_smi(tmp_path, "exit 6\n")
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    with clocks.ClockSampler(interval_ms=50) as s:
        time.sleep(0.1)
    assert s.summary() is None and "no clock samples" in s.why


def test_the_ladder_table_ends_with_the_clock_of_each_size_when_the_record_has_it():
    def row(n, clock):
        return {"ladder": "fp16", "kernel": "cuBLAS", "variant": "", "size": n, "tflops": 700.0, "pct_of_cublas": 100.0,
                "pct_of_peak": 70.0, "check_ok": True, "sm_clock": clock}
    record = {"results": [row(2048, clocks.summary([1980])), row(4096, clocks.summary([1650, 1755, 1980]))],
              "sizes": [2048, 4096], "gpu": {}, "ladders": {}}
    assert records.clock_line(record, "fp16") == "\nSM clock while timed: 2048³ 1980 MHz, 4096³ 1755 MHz (1650-1980)"
    assert records.clock_line(record, "tf32") == ""
    for r in record["results"]:
        del r["sm_clock"]
    assert records.clock_line(record, "fp16") == ""          # an older record: no line


@pytest.fixture
def simulated_pycuda(monkeypatch):
    """common/grading/simgpu's pycuda in this process for one test, and gone after it: left in
    sys.modules, it made later tests in the same worker find a "GPU" (lab 7's test that matmul without a
    GPU says one is needed failed after these tests)."""
    import sys
    from common.grading import simgpu

    def ours():
        return [m for m in sys.modules if m == "pycuda" or m.startswith("pycuda.")]
    for name in ours():
        monkeypatch.delitem(sys.modules, name)          # a real pycuda comes back when monkeypatch undoes
    monkeypatch.syspath_prepend(str(simgpu.PATH))
    yield
    for name in ours():
        del sys.modules[name]


def bare_measurer():
    """A Measurer without a lab or a GPU's facts, its cuBLAS SGEMM a no-op (the tests fake the timing)."""
    import numpy as np
    from common import measure

    class Blas:
        def sgemm(self, M, N, K, a, b, c):
            pass
    m = measure.Measurer.__new__(measure.Measurer)
    m.lab, m.facts, m.blas, m.flusher, m.rng = None, {"pci_bus_id": None}, Blas(), None, np.random.default_rng(1)
    return m


def test_the_bench_samples_the_clock_while_timing_not_while_it_computes_the_reference(monkeypatch, simulated_pycuda):
    """Measurer.measure on the simulated GPU (common/grading/simgpu's pycuda, in this process). The float64
    reference is computed while the GPU idles at its top clock: a sampler around the whole call would
    mix those samples in. The fake clock ticks 1980 MHz during the reference and 1650 MHz during the
    timing loop; the samples the bench keeps must be the timing's alone. And an optional baseline this
    cuBLAS lacks is asked about once per run and said once, not once per size."""
    import numpy as np
    from common import measure, timing
    from common.precision import precision
    ticks = []                             # the GPU's clock over time, one sample per tick

    class Sampler:                         # keeps the ticks between its start and its stop
        def __init__(self, gpu=None):
            self.samples = []

        def __enter__(self):
            self.start = len(ticks)
            return self

        def __exit__(self, *exc):
            self.samples = ticks[self.start:]
            return False
    monkeypatch.setattr(clocks, "ClockSampler", Sampler)

    def reference(A, B):
        ticks.extend([1980.0] * 5)         # the CPU works, the GPU idles at its top clock
        return A @ B, np.abs(A) @ np.abs(B)

    def timed(runs, flusher, budget_s=1.0):
        for run in runs.values():
            run()
        ticks.extend([1650.0] * 3)         # under load, at its power limit
        return {i: timing.Timing([1.0, 1.0, 1.0]) for i in runs}
    monkeypatch.setattr(measure.checking, "reference", reference)
    monkeypatch.setattr(timing, "time_interleaved", timed)
    m = bare_measurer()
    m.measure(precision("fp32"), [], 8, 8, 8)
    assert m.clock_samples == [1650.0] * 3 and clocks.summary(m.clock_samples)["max_mhz"] == 1650.0

    asked = []
    monkeypatch.setattr(measure, "cublas_unavailable", lambda prec, blas: asked.append(prec.name) or "no emulation here")
    assert m.baseline_unavailable("fp32_bf16x9") == m.baseline_unavailable("fp32_bf16x9") == "no emulation here"
    assert asked == ["fp32_bf16x9"]


def test_the_progress_counts_cublas_once_when_rows_are_timed_in_groups(monkeypatch, simulated_pycuda):
    """make tune times its configurations in groups, each with cuBLAS again for its ratios: the progress
    line counted each repeat as a new row and ran past its total ([34/33] on the H100, 2026-12-05)."""
    import numpy as np
    from common import measure, timing
    from common.precision import precision
    monkeypatch.setattr(measure.checking, "reference", lambda A, B: (A @ B, np.abs(A) @ np.abs(B)))
    monkeypatch.setattr(timing, "time_interleaved",
                        lambda runs, flusher, budget_s=1.0: {i: timing.Timing([1.0, 1.0, 1.0]) for i in runs})
    m = bare_measurer()
    fp32 = precision("fp32")
    entries = [{"name": f"row{i}", "kernel": None, "variant": "", "precision": fp32} for i in range(5)]
    seen = []
    rows = m.measure(fp32, entries, 8, 8, 8, progress=seen.append, group=2)
    assert seen == ["cuBLAS", "row0", "row1", "row2", "row3", "row4"]       # 1 + 5: what the caller's total says
    assert [e["name"] for e, *_ in rows] == ["cuBLAS", "row0", "row1", "row2", "row3", "row4"]
