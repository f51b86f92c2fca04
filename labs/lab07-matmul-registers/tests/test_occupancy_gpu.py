"""The hierarchy model's occupancy against the CUDA driver's own calculation, for every kernel of the
lab on this GPU (cuOccupancyMaxActiveBlocksPerMultiprocessor, called through ctypes on PyCUDA's
context). Skips without a GPU."""
import ctypes

import pytest

from common import hierarchy as h
from common.testing import lab_of, needs_gpu

LAB = lab_of(__file__)

CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES = 1
CU_FUNC_ATTRIBUTE_NUM_REGS = 4
CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8


class Driver:
    """The few driver calls the comparison needs, with their C signatures."""

    def __init__(self):
        lib = ctypes.CDLL("libcuda.so.1")
        P, I = ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_int)
        for name, args in (("cuModuleLoad", [P, ctypes.c_char_p]),
                           ("cuModuleGetFunction", [P, ctypes.c_void_p, ctypes.c_char_p]),
                           ("cuModuleUnload", [ctypes.c_void_p]),
                           ("cuFuncGetAttribute", [I, ctypes.c_int, ctypes.c_void_p]),
                           ("cuFuncSetAttribute", [ctypes.c_void_p, ctypes.c_int, ctypes.c_int]),
                           ("cuOccupancyMaxActiveBlocksPerMultiprocessor",
                            [I, ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t])):
            getattr(lib, name).argtypes = args
            getattr(lib, name).restype = ctypes.c_int
        self.lib = lib

    def call(self, name, *args):
        res = getattr(self.lib, name)(*args)
        assert res == 0, f"{name} returned CUresult {res}"

    def load(self, cubin):
        mod = ctypes.c_void_p()
        self.call("cuModuleLoad", ctypes.byref(mod), str(cubin).encode())
        return mod

    def function(self, mod, entry):
        fn = ctypes.c_void_p()
        self.call("cuModuleGetFunction", ctypes.byref(fn), mod, entry.encode())
        return fn

    def attribute(self, fn, attr):
        v = ctypes.c_int()
        self.call("cuFuncGetAttribute", ctypes.byref(v), attr, fn)
        return v.value

    def blocks_per_sm(self, fn, threads, dynamic_smem):
        if dynamic_smem > 48 * 1024:
            self.call("cuFuncSetAttribute", fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, dynamic_smem)
        n = ctypes.c_int()
        self.call("cuOccupancyMaxActiveBlocksPerMultiprocessor", ctypes.byref(n), fn, threads, dynamic_smem)
        return n.value


@pytest.fixture(scope="module")
def gpu():
    from common.device import gpu_facts
    facts = gpu_facts()                           # also makes PyCUDA's primary context current
    LAB.build(KERNELS, [facts["arch"]])
    return facts, Driver()


def _cases():
    out = [(k, entry, k.shared_bytes) for k in KERNELS for entry in k.entries.values()]
    t3 = LAB.kernel("t3")                         # dynamic shared memory walks the carveout steps
    out += [(t3, t3.entries["vec"], kb * 1024) for kb in (20, 60, 100, 150, 200)]
    return out


KERNELS = LAB.own()
CASES = _cases()


@needs_gpu
@pytest.mark.parametrize("k,entry,dynamic", CASES, ids=[f"{k.name}-{e}-{d}" for k, e, d in CASES])
def test_model_occupancy_is_the_drivers(gpu, k, entry, dynamic):
    facts, drv = gpu
    arch = LAB.build_arch(k, facts["arch"])
    if arch is None:
        pytest.skip(f"{k.name} does not run on {facts['arch']}")
    mod = drv.load(k.cubin(LAB.build_dir_of(k), arch))
    try:
        fn = drv.function(mod, entry)
        regs = drv.attribute(fn, CU_FUNC_ATTRIBUTE_NUM_REGS)
        static = drv.attribute(fn, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)
        limit = facts.get("shared_per_block_optin") or h.arch_limits(facts["arch"])["smem_per_block_optin"]
        if static + dynamic > limit:
            pytest.skip(f"{static + dynamic} B of shared memory is over this GPU's {limit} B per block")
        want = drv.blocks_per_sm(fn, k.threads, dynamic)
    finally:
        drv.call("cuModuleUnload", mod)
    got = h.occupancy(facts["arch"], k.threads, regs, static, dynamic, facts=facts)
    assert got.blocks_per_sm == want, (f"{entry}: {regs} registers, {static} + {dynamic} B shared: driver {want} "
                                       f"blocks/SM, model {got.blocks_per_sm} ({got.limits})")
