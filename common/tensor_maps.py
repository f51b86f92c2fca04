"""TMA tensor maps and kernel launches that pass them by value (Hopper and later).

    tiled_2d(ptr, dtype, rows, cols, box_rows, box_cols, pitch=None, swizzle=128) -> CUtensorMap
                                  a tensor map over a row-major 2-D device array (FP16/BF16/FP32)
    padded_pitch(cols, dtype)     -> row pitch in elements that TMA accepts (a multiple of 16 bytes)
    Module(cubin_path)            loads a cubin into the current context (PyCUDA's primary one)
      .function(name)             -> CUfunction
    set_dynamic_smem(func, bytes) raises a function's dynamic shared-memory limit (above 48 KB)
    launch(func, grid, block, args, smem=0, stream=0)
                                  cuLaunchKernel with args packed by value: a Python int is an
                                  int32, a float a float32, a CUtensorMap its 128 bytes, a PyCUDA
                                  allocation or GPUArray a device pointer, a ctypes value as is
    sm_count()                    multiprocessors of the current device (for persistent grids)
    max_active_clusters(func, block, smem)
                                  clusters of a kernel that declares __cluster_dims__ that fit on
                                  the device at once (for persistent grids of clusters)

Why this module: PyCUDA has no tensor maps (cuTensorMapEncodeTiled). cuda-python's driver
bindings (`cuda.bindings.driver`) have them, and they work on PyCUDA's device pointers as long as
both use the same context: import `pycuda.autoprimaryctx` first, and the calls here, made while
that primary context is current, see PyCUDA's allocations. The bindings are imported lazily, so
importing this module costs nothing on a machine without them.

Under compute-sanitizer, the bindings' lazy driver-symbol lookup is reported as "CUDA_ERROR_INVALID_VALUE
on CUDA API call to cuGetProcAddress_v2" (34 times in one run here; host side): not a
kernel error.

A tensor map describes a 2-D array to the TMA unit: its base address, sizes and row pitch (the
pitch must be a multiple of 16 bytes, the base 16-byte aligned), and the box that one
`cp.async.bulk.tensor` copies into shared memory, with its swizzle. Elements of a box outside the
array are filled with zeros, which is how TMA kernels handle matrix edges. With a 128-byte swizzle
a box row may be at most 128 bytes (64 halves, 32 floats); a box side is at most 256 elements.
"""
import ctypes

import numpy as np

_driver = None


def _drv():
    global _driver
    if _driver is None:
        try:
            from cuda.bindings import driver
        except ImportError as e:
            raise ImportError(
                "common.tensor_maps needs NVIDIA's cuda-python driver bindings (cuda.bindings.driver): "
                "`pip install cuda-bindings` (or `pip install cuda-python`), matching your CUDA driver"
            ) from e
        _driver = driver
    return _driver


def _check(result, what):
    """cuda.bindings calls return (CUresult, values...): raise on an error, return the values."""
    err, rest = result[0], result[1:]
    d = _drv()
    if err != d.CUresult.CUDA_SUCCESS:
        _, name = d.cuGetErrorName(err)
        raise RuntimeError(f"{what} failed: {name.decode() if isinstance(name, bytes) else name}")
    return rest[0] if len(rest) == 1 else rest


def _dtype_enum(dtype):
    T = _drv().CUtensorMapDataType
    table = {np.dtype(np.float16): T.CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
             np.dtype(np.float32): T.CU_TENSOR_MAP_DATA_TYPE_FLOAT32}
    name = np.dtype(dtype).name
    if name == "bfloat16":
        return T.CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
    if np.dtype(dtype) not in table:
        raise ValueError(f"tensor maps here cover float16, bfloat16 and float32, not {dtype}")
    return table[np.dtype(dtype)]


def padded_pitch(cols, dtype):
    """The smallest row pitch (in elements) >= cols whose byte size is a multiple of 16."""
    per16 = 16 // np.dtype(dtype).itemsize
    return (cols + per16 - 1) // per16 * per16


def tiled_2d(ptr, dtype, rows, cols, box_rows, box_cols, pitch=None, swizzle=128):
    """A CUtensorMap over a row-major rows x cols array at device address `ptr` (int or PyCUDA
    allocation), row pitch `pitch` elements (default cols), copied in boxes of box_rows x box_cols
    with a `swizzle`-byte swizzle (0, 32, 64 or 128)."""
    d = _drv()
    item = np.dtype(dtype).itemsize
    pitch = cols if pitch is None else pitch
    if (pitch * item) % 16 or int(ptr) % 16:
        raise ValueError(f"TMA needs a 16-byte aligned base and row pitch; pitch is {pitch * item} bytes "
                         f"(use padded_pitch() and copy the array into a padded buffer)")
    S = d.CUtensorMapSwizzle
    sw = {0: S.CU_TENSOR_MAP_SWIZZLE_NONE, 32: S.CU_TENSOR_MAP_SWIZZLE_32B,
          64: S.CU_TENSOR_MAP_SWIZZLE_64B, 128: S.CU_TENSOR_MAP_SWIZZLE_128B}[swizzle]
    if swizzle and box_cols * item > swizzle:
        raise ValueError(f"a box row of {box_cols * item} bytes exceeds the {swizzle}-byte swizzle span")
    u64, u32 = d.cuuint64_t, d.cuuint32_t
    return _check(d.cuTensorMapEncodeTiled(
        _dtype_enum(dtype), 2, int(ptr),
        [u64(cols), u64(rows)],               # sizes, innermost (contiguous) dimension first
        [u64(pitch * item)],                  # byte stride of dimension 1 (rank - 1 entries)
        [u32(box_cols), u32(box_rows)],
        [u32(1), u32(1)],                     # element strides: every element
        d.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE, sw,
        d.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
        d.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE), "cuTensorMapEncodeTiled")


class Module:
    """A cubin loaded with the driver API into the current context."""

    def __init__(self, cubin_path):
        with open(cubin_path, "rb") as f:
            self._image = f.read()
        self.handle = _check(_drv().cuModuleLoadData(self._image), f"cuModuleLoadData({cubin_path})")

    def function(self, name):
        return _check(_drv().cuModuleGetFunction(self.handle, name.encode()), f"cuModuleGetFunction({name})")


def set_dynamic_smem(func, nbytes):
    d = _drv()
    A = d.CUfunction_attribute
    _check(d.cuFuncSetAttribute(func, A.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, int(nbytes)),
           "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)")


def sm_count():
    d = _drv()
    dev = _check(d.cuCtxGetDevice(), "cuCtxGetDevice")
    return _check(d.cuDeviceGetAttribute(d.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev),
                  "cuDeviceGetAttribute")


def max_active_clusters(func, block, smem):
    """cuOccupancyMaxActiveClusters for a kernel whose cluster shape is compiled in
    (__cluster_dims__); such a kernel is launched with launch() like any other, and the grid must
    be a multiple of the cluster shape. Not every SM may be usable: a GPC with an odd number of
    free SMs cannot host a whole 2-block cluster on its last one."""
    d = _drv()
    block = tuple(block) + (1,) * (3 - len(block))
    cfg = d.CUlaunchConfig()
    cfg.gridDimX, cfg.gridDimY, cfg.gridDimZ = 8 * sm_count(), 1, 1
    cfg.blockDimX, cfg.blockDimY, cfg.blockDimZ = block
    cfg.sharedMemBytes = int(smem)
    cfg.hStream = d.CUstream(0)
    cfg.numAttrs = 0
    return _check(d.cuOccupancyMaxActiveClusters(func, cfg), "cuOccupancyMaxActiveClusters")


def _as_param(a):
    """A ctypes object holding the argument's bytes, and that object's address."""
    d = _drv()
    if isinstance(a, d.CUtensorMap):
        return a, int(a.getPtr())             # the 128-byte map itself, copied by value
    if isinstance(a, ctypes._SimpleCData):
        return a, ctypes.addressof(a)
    if isinstance(a, bool) or not isinstance(a, (int, float)):
        ptr = a.gpudata if hasattr(a, "gpudata") else a   # GPUArray or DeviceAllocation
        c = ctypes.c_void_p(int(ptr))
    elif isinstance(a, int):
        c = ctypes.c_int32(a)
    else:
        c = ctypes.c_float(a)
    return c, ctypes.addressof(c)


def launch(func, grid, block, args, smem=0, stream=0):
    """Launch `func` on grid x block with `args` packed by value (see the module docstring)."""
    d = _drv()
    held = [_as_param(a) for a in args]        # keep every argument alive until the call returns
    params = (ctypes.c_void_p * max(1, len(held)))(*[addr for _, addr in held])
    grid = tuple(grid) + (1,) * (3 - len(grid))
    block = tuple(block) + (1,) * (3 - len(block))
    _check(d.cuLaunchKernel(func, *grid, *block, int(smem), d.CUstream(int(stream)),
                            ctypes.addressof(params), 0), "cuLaunchKernel")
