"""Which parameter sets a kernel accepts, asked of the compiler: a rule is said once, in the kernel.

    Legality(path)                 the rules of one kernel file (its static_asserts)
      .check(candidates)           -> [None or why]: one compile for the whole batch, cached on disk
      (params)                     -> None or why, for one candidate (a Tuning's `illegal`)
      .prefetch(candidates)        one compile for a batch the tuner will ask about one by one
      .parameters                  the names the file lets a -D override (its #ifndef defaults)
    parameter_block(path)          -> [(line number, text)]: the lines between the markers

A tunable kernel marks the lines that define its parameters, the constants derived from them and
the static_asserts they must keep:

    // BEGIN PARAMETERS
    #ifndef BM
    #define BM 128      // why 128
    #endif
    ...
    static_assert(BM % WM == 0, "v8: the block tile must split into whole warp tiles");
    // END PARAMETERS

(several such blocks may follow one another; what lies between them, such as an #include, is left out).
check() writes one translation unit that repeats the marked lines once per candidate, each copy in a
namespace of its own with the candidate's values #defined in front, and compiles it once (to PTX, the
cheapest step that evaluates static_asserts). The compiler names the line of every assert that fails;
the line names the candidate, and the first failure in file order is that candidate's reason: the
assert's own sentence, or, for another error (a division by zero in a derived constant), the
compiler's message. The results are kept in the kernel's build folder (build/legality/), keyed by a
hash of the marked lines and the candidate, so a second tune asks the compiler nothing.
"""
import hashlib
import json
import os
import re
import subprocess
import tempfile
from pathlib import Path

from . import writes
from .build import find_nvcc
from .errors import CourseError

BEGIN, END = "// BEGIN PARAMETERS", "// END PARAMETERS"
_PARAM = re.compile(r"^[ \t]*#ifndef[ \t]+(\w+)[ \t]*\n[ \t]*#define[ \t]+\1\b", re.M)
_DEFINED = re.compile(r"^[ \t]*#[ \t]*define[ \t]+(\w+)", re.M)
_SYSTEM_INCLUDE = re.compile(r"^[ \t]*#[ \t]*include[ \t]*<[^>]+>", re.M)
_ERROR = re.compile(r"^(?P<file>.*?)\((?P<line>\d+)\): error: (?P<msg>.*)$", re.M)
_ASSERT = re.compile(r'^static assertion failed with "(?P<why>.*)"$')
ARCH = "sm_90"                      # the rules do not depend on it; one target keeps the cache one
FLAGS = ["-x", "cu", "-std=c++17", "-ptx", "-Xcudafe", "--error_limit=1000000"]


def parameter_block(path):
    """[(line number, text)] of every marked line, or a CourseError that names the markers."""
    lines = Path(path).read_text().splitlines()
    out, inside = [], False
    for i, line in enumerate(lines, 1):
        mark = line.strip()
        if mark == BEGIN:
            if inside:
                raise CourseError(f"{path}:{i}: {BEGIN} inside another block", hint=f"close the first with {END}")
            inside = True
        elif mark == END:
            if not inside:
                raise CourseError(f"{path}:{i}: {END} without {BEGIN}")
            inside = False
        elif inside:
            out.append((i, line))
    if inside or not out:
        raise CourseError(f"{path} marks no complete block of parameters and static_asserts",
                          hint=f"put its #ifndef parameters, derived constants and static_asserts between "
                               f"`{BEGIN}` and `{END}` lines")
    return out


class Legality:
    """The static_asserts of one kernel file, asked of the compiler for many parameter sets at once."""

    def __init__(self, path, cache_dir=None):
        self.path = Path(path)
        self.lines = parameter_block(self.path)
        text = "\n".join(line for _, line in self.lines)
        self.parameters = tuple(dict.fromkeys(_PARAM.findall(text)))
        self._defined = tuple(dict.fromkeys(_DEFINED.findall(text)))
        self._includes = _SYSTEM_INCLUDE.findall(self.path.read_text())
        self._hash = hashlib.sha256("\n".join(self._includes + [text] + FLAGS).encode()).hexdigest()[:16]
        self.cache_path = Path(cache_dir or self.path.parents[1] / "build" / "legality") / \
            f"{self.path.stem}-{self._hash}.json"
        self._known = None

    # --- the cache: {candidate key: None or why} -----------------------------------------------
    @staticmethod
    def _key(params):
        return ",".join(f"{k}={params[k]}" for k in sorted(params))

    def _cache(self):
        if self._known is None:
            try:
                self._known = json.loads(self.cache_path.read_text())
            except (OSError, ValueError):
                self._known = {}
        return self._known

    def _save(self):
        try:
            tmp = self.cache_path.with_suffix(f".{os.getpid()}.tmp")     # writers never share a file
            writes.note_temporary(tmp)      # the lab's build/ is watched while a class is graded
            self.cache_path.parent.mkdir(parents=True, exist_ok=True)
            tmp.write_text(json.dumps(self._known, indent=0, sort_keys=True))
            tmp.replace(self.cache_path)
            writes.note(self.cache_path)
        except OSError:
            pass                    # a read-only checkout: the answers are only not remembered

    # --- asking ---------------------------------------------------------------------------------
    def __call__(self, params):
        return self.check([params])[0]

    def prefetch(self, candidates):
        self.check(candidates)

    def check(self, candidates):
        """[None or why] for each parameter dict: why = the sentence of the first static_assert the
        candidate breaks (or the compiler's message), as the kernel file states it."""
        candidates = [dict(p) for p in candidates]
        known = self._cache()
        out = [None] * len(candidates)
        todo = {}
        for i, p in enumerate(candidates):
            unknown = sorted(set(p) - set(self.parameters))
            if unknown:
                out[i] = (f"{self.path.name} has no parameter {', '.join(unknown)} "
                          f"(it has {', '.join(self.parameters)})")
                continue
            key = self._key(p)
            if key in known:
                out[i] = known[key]
            else:
                todo.setdefault(key, p)
        if todo:
            known.update(self._compile(todo))
            self._save()
            for i, p in enumerate(candidates):
                if out[i] is None and self._key(p) in known:
                    out[i] = known[self._key(p)]
        return out

    def _compile(self, todo):
        """{key: None or why} for the candidates todo ({key: params}), in one nvcc run."""
        src, spans = self._unit(list(todo.values()))
        with tempfile.TemporaryDirectory(prefix="legality-") as tmp:
            unit = Path(tmp) / f"{self.path.stem}_legality.cu"
            unit.write_text(src)
            try:
                run = subprocess.run([find_nvcc(), f"-arch={ARCH}", *FLAGS, "-o", str(Path(tmp) / "out.ptx"),
                                      str(unit)], capture_output=True, text=True, timeout=600)
            except subprocess.TimeoutExpired:
                raise CourseError(f"nvcc took over 10 minutes to check {len(todo)} parameter sets of "
                                  f"{self.path.name}", hint="check fewer candidates at a time")
        why = {}
        for m in _ERROR.finditer(run.stdout + run.stderr):
            line = int(m["line"])
            for n, (first, last, where) in enumerate(spans):
                if first <= line <= last and n not in why:
                    a = _ASSERT.match(m["msg"].strip())
                    why[n] = a["why"] if a else f"{self.path.name}:{where[line]}: {m['msg'].strip()}"
        if run.returncode and not why:
            raise CourseError(f"nvcc could not check the parameters of {self.path.name}:\n"
                              + (run.stderr or run.stdout).strip()[-2000:],
                              hint=f"the lines between `{BEGIN}` and `{END}` must compile on their own")
        return {key: why.get(n) for n, key in enumerate(todo)}

    def _unit(self, candidates):
        """The translation unit: the file's system #includes, then for each candidate its -D values and
        a copy of the marked lines in a namespace of its own; and (first, last, where) per candidate:
        its lines in the unit, and {line in the unit: line in the kernel file}."""
        out = [f"// generated by common/legality.py from {self.path.name}: one namespace per candidate"]
        out += self._includes
        spans = []
        for n, p in enumerate(candidates):
            out.append(f"namespace candidate_{n} {{")
            out += [f"#define {k} {v}" for k, v in p.items()]
            first, where = len(out) + 1, {}
            for file_line, line in self.lines:
                out.append(line)
                where[len(out)] = file_line
            spans.append((first, len(out), where))
            out += [f"#undef {name}" for name in self._defined]
            out += [f"#undef {k}" for k in p if k not in self._defined]
            out.append(f"}}  // candidate_{n}")
        return "\n".join(out) + "\n", spans
