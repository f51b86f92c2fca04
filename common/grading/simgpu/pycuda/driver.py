"""A simulated GPU behind the few pycuda.driver calls the grader's GPU worker makes (common/grading/gpu.py).

Memory is host memory at made-up device addresses; a "kernel" is numpy. Which source a cubin was
built from is read from the first line of the .ptxas.log that common.build writes beside it (the
nvcc command); the entry point's parameter list in that source says which argument is which (M, N,
K, alpha, beta, A, B, C) and what A and B hold (float, __half, __nv_bfloat16). A launch reads A and B
where its pointers say and writes C = alpha A.B + beta C (C = A.B without alpha and beta), rounded
to FP32. What else it does is taken from its source:
  "TODO("                          computes nothing (the untouched workspace: C is never written)
  BUG [writes-past-c]              also writes one row of zeros past the end of C
  BUG [reads-past-a]               adds 0 x (the element just past the end of A) to C's last row: NaN
                                   when A sits before a guard zone of NaN
  BUG [caches-result]              a second launch with the same pointers and shape does nothing
  BUG [float4-unaligned]           rows of A or B not 16-byte aligned: a sticky "misaligned address"
  BUG [wrong-element]              one element of C wrong
  BUG [reads-past-b]               adds 0 x (the element just past the end of B) to C's first element
  BUG [accumulates-into-c]         C = C + A.B: what was there before stays in (NaN poison: NaN)
  BUG [order-varies]               every other launch, one element of C one ulp off (the order of a
                                   reduction changing from run to run)
  BUG [counter-left-set]           a launch with splits > 1 at a shape launched before writes nothing
  BUG [slow-loads]                 the launch takes 10 times as long (too few bytes in flight)
  BUG [hang]                       the launch never returns (a wait that never completes: the grader's
                                   per-part timeout must stop the worker and grade the next part)
  (BUG [race] is for the fake compute-sanitizer: common/grading/simgpu/__init__.py)
It simulates the grader's machinery, not the kernels: those run on a real GPU.
"""
import bisect
import re
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

    def pci_bus_id(self):
        return "0000:00:00.0"           # no nvidia-smi lists it: common/clocks.py samples nothing

    def get_attribute(self, attr):
        return self.get_attributes()[attr]

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


def memcpy_dtod(dst, src, nbytes):
    _check()
    _view(dst, nbytes)[:] = _view(src, nbytes)
    _spend_bytes(2 * nbytes)


def memcpy_dtod_async(dst, src, nbytes, stream=None):
    memcpy_dtod(dst, src, nbytes)


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


def _spend_bytes(nbytes):
    """A copy: 5 us plus its bytes (read + write) at 1 TB/s."""
    global _clock_ms
    _clock_ms += 0.005 + nbytes / 1e9


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


_EFFECT = re.compile(r"BUG \[([a-z0-9-]+)\]")
_ELEMENT = {"float": np.float32, "half": np.float16, "__half": np.float16, "__nv_bfloat16": "bf16",
            "nv_bfloat16": "bf16"}


class Module:
    def __init__(self, path):
        self.path = Path(path)
        log = self.path.with_suffix(".ptxas.log")
        self.source = Path(log.read_text().split("\n")[0].split()[-1]) if log.exists() else None
        self.text = self.source.read_text() if self.source and self.source.exists() else ""
        self.effects = set(_EFFECT.findall(self.text))

    def get_function(self, entry):
        return Function(self, entry)

    def _from_macro(self, entry):
        """The parameter list of an entry point a macro defines: `GEMV_ENTRY(entry, float, 1, true)`
        with `#define GEMV_ENTRY(NAME, T, ...) extern "C" ... NAME(int M, ..., const T* A, ...)`."""
        for call in re.finditer(r"\b(\w+)\(\s*" + re.escape(entry) + r"\s*,([^)]*)\)", self.text):
            d = re.search(r"#define\s+" + call.group(1) + r"\(([^)]*)\)((?:.*\\\n)*.*)", self.text)
            if not d:
                continue
            names = [x.strip() for x in d.group(1).split(",")]
            args = [entry] + [x.strip() for x in call.group(2).split(",")]
            body = d.group(2).replace("\\\n", " ")
            m = re.search(r'extern\s+"C".*?\b' + names[0] + r"\s*\(([^)]*)\)", body)
            if m:
                plist = m.group(1)
                for n_, a_ in zip(names, args):
                    plist = re.sub(r"\b" + re.escape(n_) + r"\b", a_, plist)
                return plist
        return None

    def parameters(self, entry):
        """[(name, element type or None)] of the entry point's parameters, from the source."""
        m = re.search(r'extern\s+"C"[^;{]*?\b' + re.escape(entry) + r"\s*\(([^)]*)\)", self.text, re.S)
        plist = m.group(1) if m else self._from_macro(entry)
        if plist is None:
            raise LogicError(f"named symbol not found (simulated: no entry point {entry} in {self.source})")
        out = []
        for p in plist.split(","):
            words = re.findall(r"[A-Za-z_]\w*", p)
            elem = next((_ELEMENT[w] for w in words[:-1] if w in _ELEMENT), None)
            out.append((words[-1], elem if "*" in p else None))
        return out


_memo = set()
_launches = {}          # module -> launches so far (order-varies)


def _bf16(bits):
    return (bits.astype(np.uint32) << 16).view(np.float32)


class Function:
    def __init__(self, module, entry):
        self.module, self.entry = module, entry
        self.params = module.parameters(entry)

    def set_attribute(self, attr, value):
        pass

    def prepare(self, fmt):
        return self

    def prepared_async_call(self, grid, block, stream, *args, shared_size=0):
        global _sticky
        _check()
        v = {name: value for (name, _), value in zip(self.params, args)}
        elem = dict(self.params).get("A") or np.float32
        M, N, K = int(v["M"]), int(v["N"]), int(v["K"])
        a, b, c = int(v["A"]), int(v["B"]), int(v["C"])
        alpha, beta = float(v.get("alpha", 1.0)), float(v.get("beta", 0.0))
        fx = self.module.effects
        _spend(0)
        if "TODO(" in self.module.text:
            return
        if "hang" in fx:
            import time
            while True:
                time.sleep(1.0)
        el = 2 if elem is np.float16 or elem == "bf16" else 4
        if "float4-unaligned" in fx and (a % 16 or b % 16 or (K * el) % 16 or (N * el) % 16):
            _sticky = "misaligned address (simulated)"
            return
        if "caches-result" in fx:
            key = (a, b, c, M, N, K)
            if key in _memo:
                return
            _memo.add(key)

        def read(ptr, rows, cols):
            raw = _view(ptr, rows * cols * el)
            x = _bf16(raw.view(np.uint16)) if elem == "bf16" else raw.view(elem)
            return x.reshape(rows, cols).astype(np.float64)

        A, B = read(a, M, K), read(b, K, N)
        if "counter-left-set" in fx and int(v.get("splits", 1)) > 1:
            key = (str(self.module.path), M, N, K, int(v["splits"]))
            if key in _memo:
                return
            _memo.add(key)
        if "reads-past-b" in fx:
            A = A.copy()
            A[0, 0] = A[0, 0] + read(b + K * N * el, 1, 1)[0, 0] * 0.0
        if "reads-past-a" in fx:
            A = A.copy()
            A[M - 1, 0] = A[M - 1, 0] + read(a + M * K * el, 1, 1)[0, 0] * 0.0
        C = alpha * (A @ B)
        if beta != 0.0 or "accumulates-into-c" in fx:
            C = C + (beta or 1.0) * _view(c, M * N * 4).view(np.float32).reshape(M, N).astype(np.float64)
        C = C.astype(np.float32)
        _spend(2.0 * M * N * K * (10 if "slow-loads" in fx else 1))
        if "order-varies" in fx:
            n = _launches[self.module.path] = _launches.get(self.module.path, 0) + 1
            if n % 2:
                C[M // 2, N // 2] = np.nextafter(C[M // 2, N // 2], np.float32(np.inf))
        if "wrong-element" in fx and M * N > 1:
            C[M // 2, N // 2] += 1.0
        _view(c, M * N * 4).view(np.float32)[:] = C.ravel()
        if "writes-past-c" in fx:
            _view(c + M * N * 4, N * 4).view(np.float32)[:] = 0.0
