"""Building kernels: nvcc to a cubin per (source, architecture), `-Xptxas -v` parsed per kernel.

    ALL_ARCHS                      the architectures the course supports (sm_75, Turing, only for the
                                   rows that say they run there: Kernel.min_arch)
    arch_number("sm_90a")          -> 90, for comparing architectures
    resolve_archs(arch)            'sm_86' / 'all' / None (the GPU's own, else all) -> list
    check_arch(arch, several=True) ARCH as given, checked before anything is built or graded: an
                                   architecture the course does not build for is refused, naming them
    compile_cubin(src, out, arch, defines, flags, include_dirs) -> {kernel: resources}; rebuilds
                                   only when stale: the contents of the source or of a header it
                                   includes ("..."), the defines, the flags, the include directories
                                   or nvcc's version changed (contents, not mtimes: a cubin built from
                                   the same files elsewhere, at the same path, is up to date)
    COURSE_CUBIN_CACHE=folder      cubins (and the graders' host probes) kept by what they were built
                                   from, paths left out (the contents of the source and its headers,
                                   defines, flags, include directories, nvcc): a grader's fresh copy
                                   of a file built before, elsewhere, is served from it. Off unless
                                   set (the device scripts set it: scripts/device/prebuild.sh fills
                                   it here before a call). from_cache / to_cache / cache_key
    COURSE_NVCC_LOG=file           each nvcc run appended to it as a JSON line (its command, exit
                                   status and seconds; compile_cubin's arguments too): what a run
                                   compiled, and what it cost
    nvcc_version()                 nvcc's build line ("Build cuda_13.0.r13.0/compiler.36424714_0")
    included_headers(src, include_dirs)  the quoted #include files a source reads, recursively
    parse_ptxas(text)              -> {kernel: {"registers", "spill_stores", "spill_loads",
                                                "smem", "stack", "barriers"}}
"""
import hashlib
import json
import os
import re
import shutil
import subprocess
import threading
import time
from pathlib import Path

from . import writes
from .errors import CourseError

ALL_ARCHS = ["sm_75", "sm_80", "sm_86", "sm_89", "sm_90", "sm_120"]
# the architecture-specific ('a') builds the course makes: a row's Kernel.archs (wgmma's Hopper-only rows)
A_ARCHS = ["sm_90a"]
OLDEST_ARCH = ALL_ARCHS[0]
NVCC_FLAGS = ["-cubin", "-O3", "-std=c++17", "-lineinfo", "-Xptxas", "-v"]


def find_nvcc():
    nvcc = shutil.which("nvcc") or next((p for p in ("/usr/local/cuda/bin/nvcc",) if os.path.exists(p)), None)
    if not nvcc:
        raise CourseError("nvcc (the CUDA compiler) is not on the PATH",
                          hint="install the CUDA toolkit (12.4 or newer) and add its bin/ to PATH, "
                               "e.g. export PATH=/usr/local/cuda/bin:$PATH")
    return nvcc


_NVCC_VERSION = {}


def nvcc_version():
    """nvcc's own build line, part of every stamp: a new toolkit rebuilds everything, and a cubin
    carried from another machine is used only where the same nvcc would have built it. Its path is
    not part of it (the same toolkit installed elsewhere builds the same cubins). Asked once per
    process and nvcc; an nvcc that does not answer gives "unknown", asked again next time."""
    nvcc = find_nvcc()
    if nvcc not in _NVCC_VERSION:
        try:
            out = subprocess.run([nvcc, "--version"], capture_output=True, text=True, timeout=60).stdout
        except (OSError, subprocess.TimeoutExpired):
            return "unknown"
        lines = [l.strip() for l in out.splitlines() if l.strip()]
        _NVCC_VERSION[nvcc] = next((l for l in reversed(lines) if l.startswith("Build")),
                                   lines[-1] if lines else "unknown")
    return _NVCC_VERSION[nvcc]


def arch_number(arch):
    """'sm_75' -> 75, 'sm_90a' -> 90."""
    return int(re.sub(r"\D", "", arch))


def resolve_archs(arch=None):
    """ARCH=sm_XY builds for one, ARCH=all for all six; no ARCH: the GPU's own, or all without a GPU.
    A kernel whose row says it cannot run on an architecture is left out of that one's build."""
    from .device import detect_arch
    if arch in (None, ""):
        found = detect_arch()
        return [found] if found else list(ALL_ARCHS)
    return check_arch(arch)


def check_arch(arch, several=True):
    """ARCH as the user gave it -> the architectures it names ('all': every one; several=False, for
    grading, which reads one architecture's SASS: one name only). Anything else is a CourseError naming
    the ones the course builds for, raised before anything is compiled: nvcc's "Unsupported gpu
    architecture" would otherwise read as the student's compile error, and a name that is not one as
    the grader's crash."""
    valid = ", ".join(sorted(ALL_ARCHS + A_ARCHS, key=lambda a: (arch_number(a), a)))
    arch = (arch or "").strip()
    if arch == "all" and several:
        return list(ALL_ARCHS)
    archs = [a.strip() for a in arch.split(",")]
    if arch == "all" or (len(archs) > 1 and not several):
        raise CourseError(f"ARCH={arch} names more than one architecture; grading reads one architecture's SASS",
                          hint=f"give one of {valid}, or no ARCH (this GPU's, or the lab's default without one)")
    for a in archs:
        if not re.fullmatch(r"sm_\d{2,3}a?", a):
            raise CourseError(f"ARCH={a!r} is not an architecture name",
                              hint=f"use one of {valid}" + (", or ARCH=all" if several else ""))
        if arch_number(a) < arch_number(OLDEST_ARCH):
            raise CourseError(f"{a} is older than {OLDEST_ARCH}; the course's kernels need Turing (sm_75) or newer",
                              hint=f"use one of {valid}")
        if a not in ALL_ARCHS + A_ARCHS:
            raise CourseError(f"ARCH={a} is not an architecture the course builds for",
                              hint=f"use one of {valid}" + (", or ARCH=all" if several else ""))
    return archs


_ENTRY = re.compile(r"Compiling entry function '([^']+)' for '(\w+)'")
_PROPS = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED = re.compile(r"Used (\d+) registers")
_BARS = re.compile(r"used (\d+) barriers")
_SMEM = re.compile(r"(\d+) bytes smem")


def parse_ptxas(text):
    """Registers, spills, shared memory and stack per kernel from nvcc's `-Xptxas -v` output."""
    kernels, current = {}, None
    for line in text.splitlines():
        m = _ENTRY.search(line)
        if m:
            current = kernels.setdefault(m.group(1), {"registers": None, "spill_stores": 0, "spill_loads": 0,
                                                      "smem": 0, "stack": 0, "barriers": 0})
            continue
        if current is None:
            continue
        m = _PROPS.search(line)
        if m:
            current.update(stack=int(m.group(1)), spill_stores=int(m.group(2)), spill_loads=int(m.group(3)))
        m = _USED.search(line)
        if m:
            current["registers"] = int(m.group(1))
            b, s = _BARS.search(line), _SMEM.search(line)
            current["barriers"] = int(b.group(1)) if b else 0
            current["smem"] = int(s.group(1)) if s else 0
    return kernels


_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*"([^"]+)"', re.M)


def included_headers(src, include_dirs=()):
    """Every file a source includes with #include "..." (found beside the including file or in
    include_dirs), recursively. Angle-bracket headers (CUDA's, a library's) are not followed: their
    version is part of the stamp through the include directory's path."""
    seen, todo = [], [Path(src)]
    while todo:
        f = todo.pop()
        try:
            text = f.read_text(errors="replace")
        except OSError:
            continue
        for name in _INCLUDE.findall(text):
            for d in (f.parent, *map(Path, include_dirs)):
                cand = (d / name).resolve()
                if cand.is_file():              # a regular file: reading a pipe would wait for ever
                    if cand not in seen:
                        seen.append(cand)
                        todo.append(cand)
                    break
    return seen


def digest(path):
    """A file's contents, as a stamp holds them."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:20]


def _stamp(src, arch, defines, flags, include_dirs):
    """What a cubin was built from. Each source by its contents: a file rewritten unchanged (a
    checkout, an unpacked archive, a grader's fresh copy) keeps its cubins; the paths stay in, as
    -lineinfo records them in the cubin."""
    files = [Path(src), *included_headers(src, include_dirs)]
    return {"sources": {str(f): digest(f) for f in files}, "arch": arch, "defines": defines,
            "flags": NVCC_FLAGS + list(flags), "include_dirs": [str(d) for d in include_dirs],
            "nvcc": nvcc_version(), **({"with_ptx": True} if embeds_ptx(arch) else {})}


def embeds_ptx(arch):
    """True when `arch`'s builds carry their PTX beside the SASS (COURSE_EMBED_PTX=sm_75, a comma list):
    a newer GPU, which cannot run sm_75's SASS, then runs sm_75's code path through the driver's JIT
    compiler. How the course tests a T4's code on an H200; the SASS and ptxas report stay sm_75's."""
    return arch in os.environ.get("COURSE_EMBED_PTX", "").split(",")


def _nvcc_flags(arch):
    """The course's flags and the architecture's: a cubin, or a fatbin with the PTX too (embeds_ptx)."""
    if embeds_ptx(arch):
        virtual = arch.replace("sm_", "compute_")
        return ["-fatbin", *NVCC_FLAGS[1:], f"-gencode=arch={virtual},code=[{arch},{virtual}]"]
    return [*NVCC_FLAGS, f"-arch={arch}"]


NVCC_TIMEOUT_S = 900          # the longest build of the course (a CUTLASS or CuTe kernel) takes under a minute


def nvcc_timeout_s():
    """Seconds one nvcc run may take before it is stopped (COURSE_NVCC_TIMEOUT_S overrides): a source
    that includes a file which never ends (a pipe) must not stall a build or a grade for ever."""
    try:
        return float(os.environ.get("COURSE_NVCC_TIMEOUT_S", NVCC_TIMEOUT_S))
    except ValueError:
        return NVCC_TIMEOUT_S


def run_nvcc(cmd, about=None):
    """subprocess.run(cmd) for nvcc, stopped after nvcc_timeout_s(): nvcc runs its stages (the host
    preprocessor, cicc, ptxas) as children that hold its output pipes, so on a timeout the whole
    process group is killed, not nvcc alone (else reading the pipes would wait for ever).
    Raises subprocess.TimeoutExpired. Each run that ends is logged to $COURSE_NVCC_LOG (_log_nvcc), with
    `about` (compile_cubin's arguments: what prebuild.sh needs to build it again)."""
    import signal
    started = time.monotonic()
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          start_new_session=True) as proc:
        try:
            out, err = proc.communicate(timeout=nvcc_timeout_s())
        except subprocess.TimeoutExpired:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except OSError:
                pass
            proc.communicate()
            raise
    _log_nvcc(cmd=cmd, status=proc.returncode, seconds=round(time.monotonic() - started, 2), **(about or {}))
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def compile_cubin(src, out, arch, defines=None, force=False, flags=(), include_dirs=()):
    """Compile `src` to `out` (a .cubin) for `arch`; the ptxas report is kept beside it as .json.
    (With embeds_ptx(arch), `out` is a fatbin holding the cubin and the PTX; the driver and cuobjdump
    read either kind.)

    Skips the compile when the cubin was built from the same source and headers (their contents), with
    the same defines, flags, include directories and nvcc. Returns the parsed ptxas resources per kernel.
    Raises CourseError on a compile error.
    """
    src, out = Path(src), Path(out)
    if not src.exists():
        raise CourseError(f"{src} does not exist", hint="the lab's table (lab.py) names a kernel file that is not there")
    defines = dict(defines or {})
    include_dirs = [str(d) for d in include_dirs]
    meta = out.with_suffix(".json")
    stamp = _stamp(src, arch, defines, flags, include_dirs)
    if not force and out.exists() and meta.exists():
        saved = json.loads(meta.read_text())
        if saved.get("stamp") == stamp:
            return saved["kernels"]
    command = lambda target: [find_nvcc(), *_nvcc_flags(arch), *flags, *[f"-I{d}" for d in include_dirs],
                              *[f"-D{k}={v}" for k, v in defines.items()], "-o", str(target), str(src)]
    products = {".cubin": out, ".ptxas.log": out.with_suffix(".ptxas.log")}
    cached = from_cache(stamp, products)
    if cached is not None:
        # the report's first line is the command, which names the source (readers take it from there:
        # the simulated GPU): this build's, not the one the cached cubin was first built from
        report = products[".ptxas.log"].read_text().split("\n", 1)
        _replace_text(products[".ptxas.log"], " ".join(command(out)) + "\n" + (report[1] if len(report) > 1 else ""))
        _replace_text(meta, json.dumps({"stamp": stamp, "kernels": cached["kernels"]}, indent=1))
        return cached["kernels"]
    # nvcc writes a private file that replaces the cubin in one step: two processes building the same
    # cubin at once (pytest -n 2) each leave a whole one, never a torn one. Noted before the folder
    # is made, so a watcher that sees a new folder finds the course's note of a file inside it.
    part = out.with_name(f".{out.name}.{os.getpid()}.{threading.get_ident()}.part")
    writes.note_temporary(part)
    out.parent.mkdir(parents=True, exist_ok=True)
    cmd = command(part)
    try:
        proc = run_nvcc(cmd, about=dict(src=str(src), out=str(out), arch=arch, defines=defines, flags=list(flags),
                                        include_dirs=include_dirs))
    except subprocess.TimeoutExpired:
        part.unlink(missing_ok=True)
        raise CourseError(f"nvcc ran past {nvcc_timeout_s():g} s on {src.name} for {arch} and was stopped",
                          hint="a file it reads may never end (an #include of a pipe or a device?); "
                               "COURSE_NVCC_TIMEOUT_S=<seconds> allows more on a slow machine") from None
    log = proc.stdout + proc.stderr
    shown = command(out)
    _replace_text(out.with_suffix(".ptxas.log"), " ".join(shown) + "\n" + log)
    if proc.returncode != 0:
        part.unlink(missing_ok=True)
        errors = "\n".join(l for l in log.splitlines() if "error" in l.lower())[:2000] or log[-2000:]
        raise CourseError(f"nvcc failed on {src.name} for {arch}:\n{errors}",
                          hint=f"the full log is in {out.with_suffix('.ptxas.log')}")
    kernels = parse_ptxas(log)
    os.replace(part, out)
    writes.note(out)
    _replace_text(meta, json.dumps({"stamp": stamp, "kernels": kernels}, indent=1))
    to_cache(stamp, products, {"kernels": kernels})
    return kernels


def cache_key(stamp):
    """A stamp without its paths: the same contents, defines, flags, include directories and nvcc give
    the same key wherever the source sits (a grader's temporary copy, a workspace, a snapshot).
    -lineinfo's file names are the one difference between two such cubins: a profiler's source view
    of a cached cubin names the file it was first built from."""
    keyed = {**stamp, "sources": sorted([Path(f).name, d] for f, d in stamp["sources"].items())}
    return hashlib.sha256(json.dumps(keyed, sort_keys=True).encode()).hexdigest()[:32]


def _cache_dir():
    d = os.environ.get("COURSE_CUBIN_CACHE")
    return Path(d) if d else None


def from_cache(stamp, files):
    """Copy COURSE_CUBIN_CACHE's entry for `stamp` (a key: cache_key) to `files` ({suffix: path}) and
    return what was kept with it (a dict); None when there is no entry or it cannot be read (a
    sandboxed grader's worker). Each file is linked (else copied) aside and renamed, and noted (writes.py)."""
    d = _cache_dir()
    if d is None:
        return None
    key = cache_key(stamp)
    try:
        kept = json.loads((d / f"{key}.json").read_text())
    except (OSError, ValueError):
        return None
    for suffix, path in files.items():
        path = Path(path)
        part = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.part")
        writes.note_temporary(part)
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            # a link, not a copy: a binary this process wrote could not be run while a child forked by
            # another thread still held it open for writing (ETXTBSY)
            os.link(d / f"{key}{suffix}", part)
        except OSError:
            try:
                shutil.copy(d / f"{key}{suffix}", part)
            except OSError:
                part.unlink(missing_ok=True)
                return None
        os.replace(part, path)
        writes.note(path)
    _log_nvcc(cached=key, src=next(iter(stamp["sources"])), out=str(next(iter(files.values()))))
    return kept


def to_cache(stamp, files, kept):
    """Keep `files` ({suffix: path}, just built) and `kept` (a dict) in COURSE_CUBIN_CACHE under
    cache_key(stamp): whole files or none (each written aside and renamed, the .json last: it marks the
    entry whole). A cache that cannot be written is left alone: the build already succeeded."""
    d = _cache_dir()
    if d is None:
        return
    key = cache_key(stamp)
    tag = f"{os.getpid()}.{threading.get_ident()}"
    try:
        d.mkdir(parents=True, exist_ok=True)
        for suffix, path in [*files.items(), (".json", None)]:
            tmp = d / f".{key}{suffix}.{tag}"
            if path is None:
                tmp.write_text(json.dumps(kept))
            else:
                shutil.copy(path, tmp)                 # the mode too: a probe is an executable
            os.replace(tmp, d / f"{key}{suffix}")
    except OSError:
        pass


def _log_nvcc(**run):
    """One line per nvcc run in $COURSE_NVCC_LOG (a device script's record of what it compiled: the
    compile_cubin lines are what scripts/device/prebuild.sh builds again before the next call). One
    write per line, appended."""
    path = os.environ.get("COURSE_NVCC_LOG")
    if path:
        try:
            with open(path, "a") as f:
                f.write(json.dumps(run) + "\n")
        except OSError:
            pass                     # a sandboxed grading worker may not write there: the log is a record only


def _replace_text(path, text):
    """Write a file whole or not at all (a reader in another process never sees half of it)."""
    part = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.part")
    writes.note_temporary(part)
    part.write_text(text)
    os.replace(part, path)
    writes.note(path)
