"""The GPU's SM clock while something runs, sampled in the background by nvidia-smi.

    ClockSampler(gpu=None, interval_ms=100)   context manager: `with ClockSampler(bus_id) as s: ...`;
                                  s.samples (MHz), s.summary() -> {"median_mhz", "min_mhz", "max_mhz",
                                  "samples"} or None, s.why (why there is none: no nvidia-smi ...)
    parse(text) -> [MHz]          nvidia-smi's `--format=csv,noheader,nounits` lines (others skipped)
    summary(samples) -> dict | None
    clock_text(summary) -> "1755 MHz (1650-1980)"

Why. A large GPU running GEMMs works at its power limit and lowers its clock to stay there: on the
H200 cuBLAS's own FP16 GEMM moved from 759 to 715 TFLOP/s at 8192^3 between two runs of one day. A
TFLOP/s figure is a figure at some clock; the bench records the clock it ran at beside it (per size),
so that two runs can be compared per cycle, and a kernel that "got slower" can be told from a GPU
that got hotter. nvidia-smi's `-lms` loop samples `clocks.sm` every `interval_ms` while the block runs;
a machine without nvidia-smi (or a GPU it does not list) gets None and a reason, never an error.
"""
import shutil
import statistics
import subprocess


def parse(text):
    out = []
    for line in text.splitlines():
        line = line.strip()
        try:
            out.append(float(line))
        except ValueError:
            continue                     # "[N/A]", a header, a warning: not a sample
    return out


def summary(samples):
    if not samples:
        return None
    return {"median_mhz": statistics.median(samples), "min_mhz": min(samples), "max_mhz": max(samples),
            "samples": len(samples)}


def clock_text(s):
    if not s:
        return "not sampled"
    lo, hi = s["min_mhz"], s["max_mhz"]
    return f"{s['median_mhz']:.0f} MHz" + (f" ({lo:.0f}-{hi:.0f})" if hi - lo >= 1 else "")


class ClockSampler:
    """Samples the SM clock of one GPU (`gpu`: an nvidia-smi id, best its PCI bus id, which CUDA and
    nvidia-smi number alike; None: the first GPU listed) while the `with` block runs."""

    def __init__(self, gpu=None, interval_ms=100, exe="nvidia-smi"):
        self.gpu, self.interval_ms, self.exe = gpu, int(interval_ms), exe
        self.samples, self.why, self._proc = [], "", None

    def __enter__(self):
        exe = shutil.which(self.exe)
        if exe is None:
            self.why = f"{self.exe} is not on PATH: the SM clock was not sampled"
            return self
        cmd = [exe, "--query-gpu=clocks.sm", "--format=csv,noheader,nounits", f"--loop-ms={self.interval_ms}"]
        if self.gpu is not None:
            cmd.append(f"--id={self.gpu}")
        try:
            self._proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        except OSError as e:
            self.why = f"{self.exe} did not start ({e}): the SM clock was not sampled"
        return self

    def __exit__(self, *exc):
        p, self._proc = self._proc, None
        if p is None:
            return False
        p.terminate()
        try:
            text, _ = p.communicate(timeout=5)
        except subprocess.TimeoutExpired:
            p.kill()
            text, _ = p.communicate()
        self.samples = parse(text or "")
        if not self.samples:
            self.why = f"{self.exe} gave no clock samples (a run shorter than {self.interval_ms} ms, or no such GPU)"
        return False

    def summary(self):
        return summary(self.samples)
