"""Device facts: is there a CUDA GPU, what it is, and what it can do at most.

    gpu_status()      -> (True, "NVIDIA H200 (sm_90)") or (False, why not): never raises
    init_gpu()        -> the CUDA device, PyCUDA's primary context made current; CourseError if none
    gpu_facts()       -> dict: name, arch, cc, sms, clocks, L2 bytes, driver, memory
    detect_arch()     -> "sm_90" from nvidia-smi (no PyCUDA needed), or None
    peak_tflops(facts)-> {"fp32", "fp16_tensor", "bf16_tensor", "tf32_tensor": TFLOP/s, "note"} at the boost clock
                         (None for a precision the GPU lacks: a T4, sm_75, has no BF16 or TF32)
    ARCH_PEAKS        the per-SM, per-clock rates behind those peaks (sources in the comments)
"""
import functools
import shutil
import subprocess

from .errors import CourseError

MIN_CC = (7, 5)   # Turing: WMMA on FP16 tensor cores. cp.async, mma.m16n8k16, BF16 and TF32 need sm_80:
                  # a row that needs them says so (Kernel.min_arch) and is skipped on sm_75

# Per SM per clock. fp32: 2 FLOP per FFMA lane (64 lanes on sm_80, 128 after).
# Tensor: dense FP16 inputs with FP32 accumulation. GeForce parts of sm_86/89/120 run FP32
# accumulation at half the rate of the pro/datacenter parts of the same chip (a product
# decision, GA102/AD102 whitepapers). sm_90's 4096 is the wgmma rate; mma.sync and WMMA reach
# about 65 % of it on Hopper. sm_120 pro parts: the full rate is assumed, not verified.
# sm_75 (Turing, the T4: 40 SMs at 1590 MHz, 8.1 TFLOP/s FP32 and 65 TFLOP/s FP16 with FP32
# accumulation in the T4 datasheet): 64 FP32 lanes and 8 tensor cores of 64 FP16 FMA per clock per SM;
# GeForce Turing (RTX 20xx) accumulates FP32 at half rate (Turing whitepaper). Turing has no BF16 or TF32.
# BF16 runs at the FP16 rate on every one of these chips from sm_80 on. TF32 runs at half the FP16-with-FP32-
# accumulation rate of the same part: A100 156 of 312 TFLOP/s (A100 datasheet), H100/H200 SXM 495 of
# 989 (H100 datasheet, dense), RTX 3090 35.6 of 71 (GA102 whitepaper, FP32 accumulate), RTX 4090 82.6
# of 165 (Ada whitepaper), RTX 5090 104.8 of 209.5 (Blackwell RTX whitepaper).
ARCH_PEAKS = {
    "sm_75":  {"fp32": 128, "tensor": 1024, "tensor_geforce": 512, "bf16_tf32": False},
    "sm_80":  {"fp32": 128, "tensor": 2048, "tensor_geforce": None},
    "sm_86":  {"fp32": 256, "tensor": 1024, "tensor_geforce": 512},
    "sm_89":  {"fp32": 256, "tensor": 1024, "tensor_geforce": 512},
    "sm_90":  {"fp32": 256, "tensor": 4096, "tensor_geforce": None},
    "sm_120": {"fp32": 256, "tensor": 1024, "tensor_geforce": 512},
}

_NO_PYCUDA_HINT = ("on a machine with an NVIDIA GPU and driver, `make test` installs PyCUDA into .venv; "
                   "with your own Python, `pip install pycuda`")


def _driver():
    try:
        import pycuda.driver as cuda
    except ImportError as e:
        if detect_arch() is None:
            # no brackets: gpu_status's text is quoted inside others' ("GPU: none (...)")
            raise CourseError("nvidia-smi finds no NVIDIA GPU on this machine",
                              hint="this needs a CUDA GPU: run it on a machine with an NVIDIA GPU; `make`, "
                                   "`make sass` and the CPU tests of `make test` work here") from None
        raise CourseError(f"PyCUDA is not installed: {e}", hint=_NO_PYCUDA_HINT) from None
    try:
        cuda.init()
    except Exception as e:  # pycuda raises its own types; any of them means no usable driver
        raise CourseError(f"the CUDA driver could not start: {e}",
                          hint="check `nvidia-smi`; install the NVIDIA driver, or run on a machine with a GPU") from None
    if cuda.Device.count() == 0:
        raise CourseError("no CUDA GPU found", hint="run on a machine with an NVIDIA GPU (check `nvidia-smi`)")
    return cuda


@functools.lru_cache(maxsize=1)
def init_gpu():
    """Device 0 with PyCUDA's primary context current (cuBLAS shares it). Raises CourseError."""
    cuda = _driver()
    dev = cuda.Device(0)
    cc = dev.compute_capability()
    if cc < MIN_CC:
        raise CourseError(f"{dev.name()} is sm_{cc[0]}{cc[1]}; the course's kernels need sm_75 or newer "
                          "(FP16 tensor cores; most labs need sm_80)",
                          hint="use a Turing, Ampere, Ada, Hopper or Blackwell GPU (Colab's free T4 is Turing)")
    import pycuda.autoprimaryctx  # noqa: F401  (retains and pushes the primary context)
    return dev


def gpu_status():
    """(available, text). Text names the GPU, or says why there is none. Never raises."""
    try:
        dev = init_gpu()
    except CourseError as e:
        return False, e.message
    cc = dev.compute_capability()
    return True, f"{dev.name()} (sm_{cc[0]}{cc[1]})"


def _nvidia_smi(*fields):
    exe = shutil.which("nvidia-smi")
    if not exe:
        return None
    try:
        out = subprocess.run([exe, f"--query-gpu={','.join(fields)}", "--format=csv,noheader,nounits"],
                             capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if out.returncode != 0 or not out.stdout.strip():
        return None
    return [v.strip() for v in out.stdout.splitlines()[0].split(",")]


def detect_arch():
    """The first GPU's architecture as 'sm_XY' from nvidia-smi, or None without a GPU."""
    vals = _nvidia_smi("compute_cap")
    if not vals or "." not in vals[0]:
        return None
    major, minor = vals[0].split(".")
    return f"sm_{major}{minor}"


def gpu_facts():
    """Everything a results file should say about the GPU it was measured on."""
    cuda = _driver()
    dev = init_gpu()
    a = cuda.device_attribute
    attr = dev.get_attributes()
    cc = dev.compute_capability()
    facts = {
        "name": dev.name(),
        "arch": f"sm_{cc[0]}{cc[1]}",
        "compute_capability": f"{cc[0]}.{cc[1]}",
        "sms": attr[a.MULTIPROCESSOR_COUNT],
        "sm_clock_max_mhz": attr[a.CLOCK_RATE] / 1000,
        "memory_clock_max_mhz": attr[a.MEMORY_CLOCK_RATE] / 1000,
        "memory_bus_bits": attr[a.GLOBAL_MEMORY_BUS_WIDTH],
        "l2_bytes": attr[a.L2_CACHE_SIZE],
        "memory_bytes": dev.total_memory(),
        "shared_per_block_optin": attr.get(a.MAX_SHARED_MEMORY_PER_BLOCK_OPTIN),
        "registers_per_sm": attr.get(a.MAX_REGISTERS_PER_MULTIPROCESSOR),
        "threads_per_sm": attr.get(a.MAX_THREADS_PER_MULTIPROCESSOR),
        "cuda_driver_api": cuda.get_driver_version(),
        "pci_bus_id": dev.pci_bus_id(),          # the id nvidia-smi and CUDA share (common/clocks.py)
    }
    smi = _nvidia_smi("driver_version", "clocks.sm", "clocks.max.sm", "clocks.mem")
    if smi:
        facts.update(driver=smi[0], sm_clock_now_mhz=_num(smi[1]), sm_clock_max_smi_mhz=_num(smi[2]),
                     memory_clock_now_mhz=_num(smi[3]))
    facts["peaks"] = peak_tflops(facts)
    return facts


def _num(s):
    try:
        return float(s)
    except ValueError:
        return None


def is_geforce(name):
    return "geforce" in name.lower()


def peak_tflops(facts):
    """FP32 FFMA peak and dense FP16-input/FP32-accumulate tensor peak at the max SM clock."""
    rates = ARCH_PEAKS.get(facts["arch"])
    if rates is None:
        return {"fp32": None, "fp16_tensor": None, "bf16_tensor": None, "tf32_tensor": None,
                "note": f"no peak table for {facts['arch']}"}
    tensor = rates["tensor"]
    note = "datacenter/pro rate"
    if is_geforce(facts["name"]) and rates["tensor_geforce"]:
        tensor, note = rates["tensor_geforce"], "GeForce: FP32 accumulation at half rate"
    if facts["arch"] == "sm_90":
        note = "wgmma rate; mma.sync/WMMA top out near 65 % of it on Hopper"
    scale = facts["sms"] * facts["sm_clock_max_mhz"] * 1e6 / 1e12
    newer = rates.get("bf16_tf32", True)     # no BF16 or TF32 tensor cores before sm_80
    return {"fp32": rates["fp32"] * scale, "fp16_tensor": tensor * scale,
            "bf16_tensor": tensor * scale if newer else None,
            "tf32_tensor": tensor / 2 * scale if newer else None, "note": note}

