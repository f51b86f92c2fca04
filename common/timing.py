"""Timing GPU work with CUDA events, the way the course asks benchmarks to be timed.

    flusher = L2Flusher(l2_bytes)      a buffer twice the L2, rewritten before every repetition
    t = time_gpu(run, flusher)         warm-up, then `reps` timed repetitions -> Timing
    t.median_ms, t.spread_pct, t.tflops(flops)

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
