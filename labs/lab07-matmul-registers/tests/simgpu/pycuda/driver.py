"""A simulated GPU behind the few pycuda.driver calls the grader's GPU worker makes.

Memory is host memory at made-up device addresses; a "kernel" is numpy: it reads A and B where the
launch's pointers say, and writes C = A.B there, in FP32 (FP16 inputs for hgemm_* entry points).
What the kernel does is taken from its source file (the first line of the .ptxas.log that
common.build writes beside the cubin names it), so the grader's bookkeeping can be exercised:
  "TODO(" in the source             computes nothing (the untouched workspace: C is never written)
  v4_edge_guard_off_by_one          also writes one row of zeros past the end of C
  v5_reads_past_k                   last row of C from A's guard zone when K % 8 != 0 (NaN)
  v5_caches_result                  a second launch with the same pointers and shape does nothing
  v6_unaligned_float4 (scalar)      K % 4 or N % 4: a sticky "misaligned address" error
  v6_wrong_transposed_index         one element wrong
It simulates the grader's machinery, not the kernels: those run on a real GPU (test_grading_gpu.py).
"""
import bisect
from pathlib import Path

import numpy as np


class Error(Exception):
    pass


class LaunchError(Error):
    pass


class LogicError(Error):
    pass


_sticky = None


def _check():
    if _sticky:
        raise LaunchError(_sticky)


def init(flags=0):
    pass


def get_driver_version():
    return 13000


class device_attribute:
    MULTIPROCESSOR_COUNT = "sms"
    CLOCK_RATE = "clock"
    MEMORY_CLOCK_RATE = "mclock"
    GLOBAL_MEMORY_BUS_WIDTH = "bus"
    L2_CACHE_SIZE = "l2"
    MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = "optin"
    MAX_REGISTERS_PER_MULTIPROCESSOR = "regs"
    MAX_THREADS_PER_MULTIPROCESSOR = "threads"


class function_attribute:
    MAX_DYNAMIC_SHARED_SIZE_BYTES = "max_dyn_smem"


class Device:
    def __init__(self, i):
        self.i = i

    @staticmethod
    def count():
        return 1

    def compute_capability(self):
        return (9, 0)

    def name(self):
        return "Simulated GPU"

    def total_memory(self):
        return 1 << 34

    def get_attributes(self):
        return {"sms": 4, "clock": 1_000_000, "mclock": 1_000_000, "bus": 256, "l2": 1 << 20,
                "optin": 232448, "regs": 65536, "threads": 2048}


class Context:
    @staticmethod
    def synchronize():
        _check()


# ---- memory ----------------------------------------------------------------------------------

_bases, _blocks = [], {}
_next = 1 << 20


class DeviceAllocation:
    def __init__(self, nbytes):
        global _next
        self.base, self.nbytes = _next, int(nbytes)
        _next += (self.nbytes + 511) // 256 * 256 + 256
        _blocks[self.base] = np.zeros(self.nbytes, np.uint8)
        bisect.insort(_bases, self.base)

    def __int__(self):
        return self.base

    __index__ = __int__

    def free(self):
        pass


def _view(ptr, nbytes):
    ptr = int(ptr)
    i = bisect.bisect_right(_bases, ptr) - 1
    base = _bases[i]
    block = _blocks[base]
    off = ptr - base
    if off < 0 or off + nbytes > len(block):
        raise LaunchError(f"an illegal memory access was encountered (simulated: {nbytes} B at +{off})")
    return block[off:off + nbytes]


def mem_alloc(nbytes):
    _check()
    return DeviceAllocation(nbytes)


def memset_d32(ptr, value, count):
    _check()
    _view(ptr, 4 * count).view(np.uint32)[:] = value


def memset_d16(ptr, value, count):
    _check()
    _view(ptr, 2 * count).view(np.uint16)[:] = value


def memcpy_htod(ptr, host):
    _check()
    host = np.ascontiguousarray(host)
    _view(ptr, host.nbytes)[:] = host.view(np.uint8).ravel()


def memcpy_dtoh(host, ptr):
    _check()
    host.view(np.uint8).ravel()[:] = _view(ptr, host.nbytes)


def to_device(host):
    a = mem_alloc(host.nbytes)
    memcpy_htod(a, host)
    return a


# Time is simulated too, so that timings are the same on every run: a launch costs 5 us plus its
# multiply-adds at 1 TFLOP/s; a launch that does nothing costs the 5 us.
_clock_ms = 0.0


def _spend(flops):
    global _clock_ms
    _clock_ms += 0.005 + flops / 1e9


class Event:
    def record(self, stream=None):
        self.t = _clock_ms

    def synchronize(self):
        _check()

    def time_since(self, other):
        return self.t - other.t


# ---- modules and kernels -----------------------------------------------------------------------

def module_from_file(path):
    return Module(path)


class Module:
    def __init__(self, path):
        self.path = Path(path)
        log = self.path.with_suffix(".ptxas.log")
        self.source = Path(log.read_text().split("\n")[0].split()[-1]) if log.exists() else None
        self.text = self.source.read_text() if self.source and self.source.exists() else ""

    def get_function(self, entry):
        return Function(self, entry)


_memo = set()


class Function:
    def __init__(self, module, entry):
        self.module, self.entry = module, entry

    def set_attribute(self, attr, value):
        pass

    def prepare(self, fmt):
        return self

    def prepared_async_call(self, grid, block, stream, M, N, K, a, b, c, shared_size=0):
        global _sticky
        _check()
        M, N, K = int(M), int(N), int(K)
        _spend(0)
        name = self.module.source.name if self.module.source else ""
        if "TODO(" in self.module.text:
            return
        if "unaligned_float4" in name and self.entry.endswith("scalar") and (K % 4 or N % 4):
            _sticky = "misaligned address (simulated)"
            return
        if "caches_result" in name:
            key = (int(a), int(b), int(c), M, N, K)
            if key in _memo:
                return
            _memo.add(key)
        dt, el = (np.float16, 2) if self.entry.startswith("hgemm") else (np.float32, 4)
        A = _view(a, M * K * el).view(dt).reshape(M, K).astype(np.float64)
        B = _view(b, K * N * el).view(dt).reshape(K, N).astype(np.float64)
        if "reads_past_k" in name and K % 8:
            past = _view(int(a) + M * K * el, 4).view(np.float32)[0]
            A = A.copy()
            A[M - 1, 0] = A[M - 1, 0] + past * 0.0
        C = (A @ B).astype(np.float32)
        _spend(2.0 * M * N * K)
        if "wrong_transposed_index" in name and M * N > 1:
            C[M // 2, N // 2] += 1.0
        _view(c, M * N * 4).view(np.float32)[:] = C.ravel()
        if "edge_guard_off_by_one" in name and M % 64:
            _view(int(c) + M * N * 4, N * 4).view(np.float32)[:] = 0.0
