"""Timing GPU work with CUDA events, the way the course asks benchmarks to be timed.

    flusher = L2Flusher(l2_bytes)      a buffer twice the L2, rewritten before every repetition
    t = time_gpu(run, flusher)         warm-up, then `reps` timed repetitions -> Timing
    ts = time_interleaved({"cuBLAS": run0, "v8": run1}, flusher)   -> {name: Timing}: every
                                       repetition runs each once, in a fresh random order
    t.median_ms, t.spread_pct, t.tflops(flops)

Why interleave. A big GPU runs GEMMs at its power limit: its clock drops after the first few
hundred milliseconds of back-to-back work and recovers when idle (the H200 measured 1.4-1.7 GHz
under a sustained GEMM, 1.98 GHz idle). Timed one after another, whichever kernel comes first after a
pause gets the higher clock: in our first H200 runs that was always cuBLAS, and a kernel level with it
per clock looked 10-15 % slower at 8192^3. Interleaving gives every row the same thermal history, so
the ratios to cuBLAS in one table compare like with like.

Each repetition: flush L2 (outside the timed region), record start, run, record end. The
median is reported; the spread is (p90 - p10) / median, so a noisy measurement shows itself.
"""
from dataclasses import dataclass, field

import numpy as np


class L2Flusher:
    """Overwrites a buffer of twice the L2 size, so no input or output stays cached between reps."""

    def __init__(self, l2_bytes):
        import pycuda.driver as cuda
        self.words = max(2 * int(l2_bytes), 1 << 20) // 4
        self.buf = cuda.mem_alloc(self.words * 4)
        self._flip = 0

    def flush(self):
        import pycuda.driver as cuda
        self._flip ^= 1   # a different value each time, so nothing can be skipped as unchanged
        cuda.memset_d32(self.buf, self._flip, self.words)


@dataclass
class Timing:
    times_ms: list = field(repr=False)

    @property
    def median_ms(self):
        return float(np.median(self.times_ms))

    @property
    def spread_pct(self):
        p10, p90 = np.percentile(self.times_ms, [10, 90])
        return float(100.0 * (p90 - p10) / self.median_ms)

    def tflops(self, flops):
        return flops / (self.median_ms * 1e-3) / 1e12

    def as_dict(self):
        return {"median_ms": self.median_ms, "min_ms": float(np.min(self.times_ms)),
                "max_ms": float(np.max(self.times_ms)), "spread_pct": self.spread_pct,
                "reps": len(self.times_ms)}


def time_gpu(run, flusher=None, warmup=3, reps=None, budget_s=1.0, max_reps=50, min_reps=10):
    """Time `run()` (which enqueues GPU work on stream 0). With `reps=None` the count is chosen
    from the warm-up so the timed part takes about `budget_s`, between min_reps and max_reps."""
    import pycuda.driver as cuda
    start, end = cuda.Event(), cuda.Event()
    warm = []
    for _ in range(warmup):
        if flusher:
            flusher.flush()
        start.record()
        run()
        end.record()
        end.synchronize()
        warm.append(end.time_since(start))
    if reps is None:
        per = max(min(warm), 1e-3) * 1e-3
        reps = int(min(max_reps, max(min_reps, budget_s / per)))
    times = []
    for _ in range(reps):
        if flusher:
            flusher.flush()
        start.record()
        run()
        end.record()
        end.synchronize()
        times.append(end.time_since(start))
    return Timing(times)


def time_interleaved(runs, flusher=None, warmup=2, reps=None, budget_s=1.0, max_reps=50, min_reps=10, seed=None):
    """{name: Timing} for every run(): after `warmup` rounds, each repetition runs every run() once
    in a new random order, L2 flushed before each, CUDA events around each. With reps=None the count
    is chosen so the timed part takes about budget_s per run, between min_reps and max_reps."""
    import random
    import pycuda.driver as cuda
    rng = random.Random(seed)
    names = list(runs)
    start, end = cuda.Event(), cuda.Event()

    def once(name):
        if flusher:
            flusher.flush()
        start.record()
        runs[name]()
        end.record()
        end.synchronize()
        return end.time_since(start)

    warm = {n: [] for n in names}
    for _ in range(warmup):
        for n in rng.sample(names, len(names)):
            warm[n].append(once(n))
    if reps is None:
        per = max(max(min(w) for w in warm.values()), 1e-3) * 1e-3
        reps = int(min(max_reps, max(min_reps, budget_s / per)))
    times = {n: [] for n in names}
    for _ in range(reps):
        for n in rng.sample(names, len(names)):
            times[n].append(once(n))
    return {n: Timing(times[n]) for n in names}
