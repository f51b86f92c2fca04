"""compute-sanitizer from Python: find it, build its command line, count what it found per kernel.

    TOOLS                          memcheck, racecheck, synccheck, initcheck
    find_sanitizer()               -> path; CourseError (with what to do) when it is not installed
    sanitizer_version(exe)         -> '2025.3.1' or None
    command(exe, tool, program, padding=0)
                                   -> argv: --error-exitcode 1, a print limit, racecheck's analysis report,
                                      memcheck's guard bytes after every allocation (--padding)
    supports_padding(exe)          -> True if this compute-sanitizer lists --padding in its --help
    reports(text)                  -> ([(kind, report text)], summary lines): the output split into findings
    parse(text, kernels)           -> Findings: errors and warnings per kernel, the tool's own totals
    findings.status(kernel)        -> "clean", "3 errors", "1 warning"
    findings.problems()            -> [(kernel or None, errors, warnings)] for every kernel with a finding

How a finding is tied to a kernel: each report starts with an unindented line after the
"========= " prefix ("Invalid __global__ write of size 4 bytes", "Error: Race reported between
...") and goes on with indented lines that name the kernel ("at sgemm_v6_vec+0x1a0 in v6.cu:88").
The first of `kernels` named in a report owns it; failing that, any "at NAME+0x..." does; a
report that names no kernel (a CUDA API error) belongs to None. The tool's own summary line
("ERROR SUMMARY: 3 errors", "RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)") is the
total; reports past the print limit are counted there but never printed, so they belong to None.
"""
import functools
import glob
import os
import re
import shutil
import subprocess
from collections import Counter
from dataclasses import dataclass, field

from .errors import CourseError

TOOLS = ("memcheck", "racecheck", "synccheck", "initcheck")
PRINT_LIMIT = 1000          # reports printed per run; the summary still counts every one

_PREFIX = re.compile(r"^========= ?(.*)$")
_ERROR_SUMMARY = re.compile(r"ERROR SUMMARY: (\d+) errors?\b")
_NOT_PRINTED = re.compile(r"(\d+) errors? (?:was|were) not printed")
_RACE_SUMMARY = re.compile(r"RACECHECK SUMMARY: (\d+) hazards? displayed \((\d+) errors?, (\d+) warnings?\)")
# 'at NAME+0x..', 'at 0x.. in NAME+0x..', and racecheck's 'at void NAME<...>(int, ...)+0x..'
_AT_FUNCTION = re.compile(r"\bat (?:0x[0-9a-fA-F]+ in )?(?:void )?([A-Za-z_][\w:]*)(?:<[^>]*>)?(?:\([^)]*\))?\+0x[0-9a-fA-F]+")
# Unindented lines that are not a finding
_INFO = ("COMPUTE-SANITIZER", "ERROR SUMMARY", "RACECHECK SUMMARY", "LEAK SUMMARY", "Target application",
         "Process ID", "This tool", "Note:", "Saved host backtrace", "Printing limit")


def find_sanitizer():
    found = shutil.which("compute-sanitizer")
    if found:
        return found
    candidates = ["/usr/local/cuda/bin/compute-sanitizer",
                  *sorted(glob.glob("/usr/local/cuda-*/bin/compute-sanitizer"), reverse=True)]
    for home in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH")):
        if home:
            candidates.insert(0, os.path.join(home, "bin", "compute-sanitizer"))
    for c in candidates:
        if os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    raise CourseError("compute-sanitizer is not installed, or not on the PATH",
                      hint="it comes with the CUDA toolkit (/usr/local/cuda/bin/compute-sanitizer); "
                           "add that folder to PATH")


def sanitizer_version(exe):
    try:
        out = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    m = re.search(r"Version (\S+)", out)
    return m.group(1) if m else None


@functools.lru_cache(maxsize=None)
def supports_padding(exe):
    """Whether memcheck's --padding option is listed by `exe --help` (NVIDIA documents it as a
    memcheck option: "allocate padding buffers after every CUDA allocation"). Asked, not assumed,
    so an older compute-sanitizer still runs, without the guard."""
    try:
        proc = subprocess.run([exe, "--help"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return re.search(r"--padding\b", proc.stdout + proc.stderr) is not None


def command(exe, tool, program, padding=0):
    """The argv that runs `program` (a list) under one tool. API errors are left to the program
    (it checks every launch); the sanitizer reports what the kernels themselves do wrong.
    padding (memcheck only): bytes of guard that memcheck puts after every allocation. Without it
    cudaMalloc places buffers back to back, so an access just past the end of one buffer lands in
    the next one: valid memory, and memcheck says nothing."""
    if tool not in TOOLS:
        raise ValueError(f"tool must be one of {TOOLS}, not {tool!r}")
    if padding and tool != "memcheck":
        raise ValueError("--padding is a memcheck option")
    argv = [exe, "--tool", tool, "--error-exitcode", "1", "--print-limit", str(PRINT_LIMIT),
            "--report-api-errors", "no"]
    if padding:
        argv += ["--padding", str(int(padding))]
    if tool == "racecheck":
        argv += ["--racecheck-report", "analysis"]      # one report per race, not one per thread pair
    return argv + [str(p) for p in program]


@dataclass
class Findings:
    tool: str
    errors: Counter = field(default_factory=Counter)        # kernel (None: not named) -> reports
    warnings: Counter = field(default_factory=Counter)
    total_errors: int = None       # the tool's summary line; None when it never printed one
    total_warnings: int = 0

    @property
    def finished(self):
        return self.total_errors is not None

    @property
    def clean(self):
        return self.finished and self.total_errors == 0 and self.total_warnings == 0 \
            and not self.errors and not self.warnings

    def status(self, kernel):
        e, w = self.errors.get(kernel, 0), self.warnings.get(kernel, 0)
        parts = [f"{e} error{'s' * (e != 1)}"] * bool(e) + [f"{w} warning{'s' * (w != 1)}"] * bool(w)
        return ", ".join(parts) or "clean"

    def problems(self):
        names = list(dict.fromkeys([*self.errors, *self.warnings]))
        return [(k, self.errors.get(k, 0), self.warnings.get(k, 0)) for k in names]


def reports(text):
    """[(kind, text)] for every finding: kind 'error' or 'warning'; plus the summary lines."""
    reports, current, summaries = [], None, []
    for line in text.splitlines():
        m = _PREFIX.match(line)
        if not m:
            continue
        body = m.group(1)
        if not body.strip():
            current = None
        elif body[0].isspace():
            if current is not None:
                current[1].append(body.strip())
        elif body.startswith(_INFO):
            current = None
            summaries.append(body)
        else:
            kind = "warning" if body.lower().startswith("warning") else "error"
            current = (kind, [body])
            reports.append(current)
    return [(kind, "\n".join(lines)) for kind, lines in reports], summaries


_IN_FILE = re.compile(r"\bin (?:\S*/)?([\w.-]+\.cuh?):(\d+)")


def owner(report, kernels, files=None):
    """The kernel a report belongs to: the first of `kernels` it names; else, when the finding is
    in a device function that is not an entry point (racecheck prints e.g. 'at void
    sgemm_v6_body<(bool)1>(int, ...)+0xba0 in v6_vectorized.cu:178'), the label `files` gives its
    source file (the log has the lines); else any 'at NAME+0x..'."""
    for k in kernels:
        if re.search(rf"(?<![\w]){re.escape(k)}(?![\w])", report):
            return k
    m = _IN_FILE.search(report)
    if m and files and m.group(1) in files:
        return f"{files[m.group(1)]} ({m.group(1)})"
    m = _AT_FUNCTION.search(report)
    return m.group(1) if m else None


def parse(text, tool, kernels=(), files=None):
    """Findings of one sanitizer run: its whole output (stdout and stderr) as text. `files` maps a
    source file name to the kernel it holds, for reports that name no entry point."""
    found = Findings(tool)
    listed, summaries = reports(text)
    for kind, report in listed:
        (found.warnings if kind == "warning" else found.errors)[owner(report, kernels, files)] += 1
    not_printed = 0
    for line in summaries:
        m = _RACE_SUMMARY.search(line)
        if m:
            found.total_errors = (found.total_errors or 0) + int(m.group(2))
            found.total_warnings += int(m.group(3))
            continue
        m = _NOT_PRINTED.search(line)
        if m:
            not_printed += int(m.group(1))
            continue
        m = _ERROR_SUMMARY.search(line)
        if m:
            found.total_errors = (found.total_errors or 0) + int(m.group(1))
    if not_printed:
        found.errors[None] += not_printed
    if found.finished:      # reports the summary counts that no printed report accounts for
        missing = found.total_errors - sum(found.errors.values())
        if missing > 0:
            found.errors[None] += missing
    return found
