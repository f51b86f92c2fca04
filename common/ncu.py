"""Nsight Compute (ncu) from Python: find it, build its command line, run it, read its CSV.

    find_ncu()                       -> path; CourseError (with what to do) when it is not installed
    ncu_version(ncu)                 -> '2025.3.1.0'
    command(ncu, program, ...)       -> argv: always --clock-control none (the GPU's clocks are left alone)
    run(argv, cwd)                   -> Run(returncode, stdout, stderr); CourseError when counters are
                                        not permitted (ERR_NVGPUCTRPERM), the profiler library is
                                        missing (LibraryNotLoaded), or nothing was profiled
    failure(text, returncode, what)  -> the CourseError for an ncu output, or None when it worked;
                                        CountersUnavailable (a CourseError) when no kernel can be profiled
    parse_csv(text)                  -> [Launch(kernel, metrics, units, ...)] from `--csv --page raw`
                                        or `--csv --page details --print-metric-name name`
    to_microseconds(value, unit), to_gigabytes_per_second(value, unit), to_megahertz(value, unit)
    profiler_range()                 context manager: cuProfilerStart/Stop around the launches that
                                     `ncu --profile-from-start off` should see

The CSV: every field quoted; ncu's own lines (==PROF==, ==WARNING==, ==ERROR==) and the program's
output share stdout, so only lines that start with a quote are read. `--page raw` gives a header
row, a units row (empty ID), then one row per profiled launch; `--page details` gives one row per
metric with "Metric Name", "Metric Unit" and "Metric Value" columns.
"""
import contextlib
import csv
import glob
import os
import re
import shutil
import subprocess
from dataclasses import dataclass, field

from .errors import CourseError

# Strings ncu prints when it cannot read counters (ncu 2025.3.1, see tests/fixtures/ncu-2025.3.1/).
PERMISSION_ERROR = "ERR_NVGPUCTRPERM"
LIBRARY_NOT_LOADED = "LibraryNotLoaded"
NOTHING_PROFILED = "No kernels were profiled"

PERMISSION_HINT = ("run as root (e.g. `sudo -E env PATH=$PATH make ncu-table`); or, as an admin, allow "
                   "profiling for all users: `options nvidia NVreg_RestrictProfilingToAdminUsers=0` in "
                   "/etc/modprobe.d/nvidia-profiling.conf, rebuild the initramfs and reboot; in a container, "
                   "start it with --cap-add=SYS_ADMIN. See https://developer.nvidia.com/ERR_NVGPUCTRPERM")
FALLBACK_HINT = ("use `make sass` (instruction counts from the compiled code) and `make bench` (timings) "
                 "instead; ncu needs a machine that exposes the GPU's performance counters")


def find_ncu():
    found = shutil.which("ncu")
    if found:
        return found
    candidates = ["/usr/local/cuda/bin/ncu", *sorted(glob.glob("/opt/nvidia/nsight-compute/*/ncu"), reverse=True),
                  *sorted(glob.glob("/usr/local/cuda-*/bin/ncu"), reverse=True)]
    for home in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH")):
        if home:
            candidates.insert(0, os.path.join(home, "bin", "ncu"))
    for c in candidates:
        if os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    raise CourseError("Nsight Compute (ncu) is not installed, or not on the PATH",
                      hint="it comes with the CUDA toolkit (/usr/local/cuda/bin/ncu) or as the "
                           "nsight-compute package; add its folder to PATH. Without it, `make sass` "
                           "and `make bench` still work")


def ncu_version(ncu):
    try:
        out = subprocess.run([ncu, "--version"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    m = re.search(r"Version (\S+)", out)
    return m.group(1) if m else None


def command(ncu, program, *, metrics=None, kernel=None, launch_skip=0, launch_count=1,
            profile_from_start=True, page="raw", section_set=None, export=None):
    """The ncu argv for profiling `program` (a list). kernel: an exact function name (-k);
    launch_skip counts matching launches only. With export, a report file instead of CSV."""
    argv = [ncu, "--clock-control", "none"]
    if not profile_from_start:
        argv += ["--profile-from-start", "off"]
    if kernel:
        argv += ["--kernel-name", kernel]
    if launch_skip:
        argv += ["--launch-skip", str(launch_skip)]
    if launch_count:
        argv += ["--launch-count", str(launch_count)]
    if section_set:
        argv += ["--set", section_set]
    if metrics:
        argv += ["--metrics", ",".join(metrics)]
    if export:
        argv += ["--import-source", "yes", "--export", str(export), "--force-overwrite"]
    else:
        argv += ["--csv", "--page", page, "--print-units", "base"]
        if page == "details":
            argv += ["--print-metric-name", "name"]
    return argv + [str(p) for p in program]


@dataclass
class Run:
    argv: list
    returncode: int
    stdout: str
    stderr: str

    @property
    def text(self):
        return self.stdout + ("\n" if self.stdout and self.stderr else "") + self.stderr

    def log(self):
        """Everything, for a file: the command line, stdout, stderr."""
        return (f"$ {' '.join(self.argv)}\n# exit status {self.returncode}\n{self.stdout}"
                + (f"\n# --- stderr ---\n{self.stderr}" if self.stderr else ""))


class CountersUnavailable(CourseError):
    """ncu cannot read performance counters on this machine at all: no point trying another kernel."""


def failure(text, returncode, what="the kernel"):
    """The CourseError an ncu run's output calls for, or None if it profiled something."""
    if PERMISSION_ERROR in text:
        return CountersUnavailable("ncu may not read the GPU's performance counters here (ERR_NVGPUCTRPERM)",
                           hint=PERMISSION_HINT)
    if LIBRARY_NOT_LOADED in text:
        return CountersUnavailable("hardware counters are unavailable on this machine "
                           "(ncu: 'Failed to initialize the profiler: LibraryNotLoaded')", hint=FALLBACK_HINT)
    errors = [l.strip() for l in text.splitlines() if l.startswith("==ERROR==")]
    if returncode != 0 or errors:
        shown = "; ".join(errors[:3]) or "\n".join(text.strip().splitlines()[-5:])
        return CourseError(f"ncu failed on {what} (exit status {returncode}): {shown}",
                           hint="the full output is in the .log file named above; run the same command by hand to see it")
    if NOTHING_PROFILED in text:
        return CourseError(f"ncu profiled nothing for {what}: no launch matched its filters",
                           hint="check the kernel name and that the program launched it (the .log file has its output)")
    return None


def run(argv, cwd=None, what="the kernel", env=None, timeout=None):
    """Run ncu; raise the CourseError that explains a failure, else return the Run."""
    full_env = dict(os.environ, PYTHONUNBUFFERED="1", **(env or {}))
    try:
        proc = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, env=full_env, timeout=timeout)
    except FileNotFoundError:
        raise CourseError(f"could not start {argv[0]}", hint="check that ncu is installed and on the PATH") from None
    except subprocess.TimeoutExpired:
        raise CourseError(f"ncu took longer than {timeout} s on {what}", hint="profile fewer kernels at once") from None
    result = Run(list(argv), proc.returncode, proc.stdout, proc.stderr)
    error = failure(result.text, result.returncode, what)
    if error:
        error.run = result
        raise error
    return result


# --- reading the CSV -------------------------------------------------------------------------

_FIXED = ("ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context", "Stream",
          "Block Size", "Grid Size", "Device", "CC")


@dataclass
class Launch:
    id: int
    kernel: str
    block: str = ""
    grid: str = ""
    device: str = ""
    cc: str = ""
    metrics: dict = field(default_factory=dict)    # metric name -> int, float, str or None (n/a)
    units: dict = field(default_factory=dict)      # metric name -> unit as ncu printed it


def number(text):
    """'1,234' -> 1234, '3.5' -> 3.5, 'n/a' or '' -> None, anything else stays text."""
    t = text.strip()
    if t in ("", "n/a", "N/A"):
        return None
    plain = t.replace(",", "")
    try:
        return int(plain)
    except ValueError:
        pass
    try:
        return float(plain)
    except ValueError:
        return t


def csv_lines(text):
    return [l for l in text.splitlines() if l.startswith('"')]


def parse_csv(text):
    """Every profiled launch in an ncu CSV output (raw or details page), in order."""
    rows = list(csv.reader(csv_lines(text)))
    launches, header, by_id, units = [], None, {}, {}
    for row in rows:
        if row and row[0] == "ID":
            header, units = row, {}
            continue
        if header is None or len(row) != len(header):
            continue
        rec = dict(zip(header, row))
        if "Metric Name" in header:                     # details page: one row per metric
            key = rec["ID"]
            if key not in by_id:
                by_id[key] = _launch(rec)
                launches.append(by_id[key])
            name = rec["Metric Name"]
            by_id[key].metrics[name] = number(rec["Metric Value"])
            by_id[key].units[name] = rec.get("Metric Unit", "")
        elif rec["ID"] == "":                           # raw page: the units row
            units = {k: v for k, v in rec.items() if k not in _FIXED}
        else:                                           # raw page: one launch
            launch = _launch(rec)
            launch.metrics = {k: number(v) for k, v in rec.items() if k not in _FIXED}
            launch.units = dict(units)
            launches.append(launch)
    return launches


def _launch(rec):
    return Launch(id=int(number(rec.get("ID", "0")) or 0), kernel=rec.get("Kernel Name", ""),
                  block=rec.get("Block Size", ""), grid=rec.get("Grid Size", ""),
                  device=rec.get("Device", ""), cc=rec.get("CC", ""))


# --- units -----------------------------------------------------------------------------------

_SI = {"": 1.0, "K": 1e3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}
_TIME = {"nsecond": 1e-9, "ns": 1e-9, "usecond": 1e-6, "us": 1e-6, "msecond": 1e-3, "ms": 1e-3,
         "second": 1.0, "s": 1.0}


def to_microseconds(value, unit):
    if value is None:
        return None
    if unit not in _TIME:
        raise CourseError(f"ncu printed a time in {unit!r}, a unit this course does not know",
                          hint="add it to common/ncu.py (_TIME)")
    return value * _TIME[unit] * 1e6


def to_gigabytes_per_second(value, unit):
    if value is None:
        return None
    m = re.fullmatch(r"([kKMGT]?)(?:byte|B)/(?:second|s)", unit or "")
    if not m:
        raise CourseError(f"ncu printed a bandwidth in {unit!r}, a unit this course does not know",
                          hint="add it to common/ncu.py (to_gigabytes_per_second)")
    return value * _SI[m.group(1)] / 1e9


def to_megahertz(value, unit):
    """A clock rate as ncu prints it (with --print-units base ncu 2025.3 prints "hz"; "cycle/second",
    "cycle/nsecond", "MHz" and the like too) in MHz."""
    if value is None:
        return None
    u = unit or ""
    m = re.fullmatch(r"cycle/(\w+)", u)
    if m and m.group(1) in _TIME:
        return value / _TIME[m.group(1)] / 1e6
    m = re.fullmatch(r"([kKMGT]?)(?:Hz|hz|hertz)", u)          # ncu 2025.3 prints "hz"
    if not m:
        raise CourseError(f"ncu printed a clock rate in {unit!r}, a unit this course does not know",
                          hint="add it to common/ncu.py (to_megahertz)")
    return value * _SI[m.group(1)] / 1e6


# --- marking the launches to profile ---------------------------------------------------------

@contextlib.contextmanager
def profiler_range():
    """Launches inside are the ones `ncu --profile-from-start off` profiles (cuProfilerStart/Stop
    on the current context). Outside ncu it changes nothing."""
    import ctypes
    try:
        libcuda = ctypes.CDLL("libcuda.so.1")
    except OSError as e:
        raise CourseError(f"the CUDA driver library could not be loaded ({e})",
                          hint="check the NVIDIA driver with `nvidia-smi`") from None
    status = libcuda.cuProfilerStart()
    if status != 0:
        raise CourseError(f"cuProfilerStart failed with CUDA error {status}",
                          hint="is a CUDA context current? (the driver's GPU must be initialised first)")
    try:
        yield
    finally:
        libcuda.cuProfilerStop()
