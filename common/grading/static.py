"""The checks that need no GPU: compile a student's kernel, read ptxas's report and the SASS.

    student_row(lab, part, source)    the part's row of the lab's table, with the student's file as source
    compile_student(lab, part, source, arch, build_dir, headers=()) -> Compiled: resources per entry, cubin, or
                                      the nvcc error line ("does not compile: ...")
    sass_facts(compiled)              -> {entry: {"families": {...}, "fp16": Counter, "opcodes": Counter, ...}}
    after_counter(listing)            -> the opcodes after the first integer atomic (ordered-reduce reads them)
    run_check(kind, compiled, facts, check=None) -> (ok, reason) for the static kinds (common.grading.spec)
    bytes_in_flight(listing)          -> the most global-load bytes one thread issues between two math
                                      instructions (FFMA, HFMA2, HMMA, DFMA): what Little's law counts
    atomics(opcodes)                  -> (floating-point atomics, integer atomics): Counters of opcodes
    fp16_ops(text)                    -> {kernel: Counter}: FP16 arithmetic and conversions in SASS

The student's kernel is built with the course's own flags (common.build.NVCC_FLAGS), the row's own
flags and include directories (and the lab's kernels/, for the headers the reference includes), into
the grader's build folder, never into build/ where `make` puts the reference.
"""
import re
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path

from .. import build as nvbuild
from .. import sass as sassmod
from ..errors import CourseError
from . import fences

# FP16 (and BF16) arithmetic and conversions. HFMA2.MMA / HFMA2 with a zero product (`-RZ, RZ`) is how
# ptxas moves a constant into a register: not math, and every FP32 kernel has some.
_FP16_BASES = {"HADD2", "HMUL2", "HFMA2", "HSET2", "HSETP2", "HMNMX2", "HMMA", "F2FP", "HADD", "HMUL", "HFMA"}
_LINE = re.compile(r"^\s+/\*[0-9a-f]{4,}\*/\s+(@!?U?P[T0-9]\s+)?([A-Z][A-Z0-9_]*(?:\.[A-Z0-9_]+)*)\s*([^;]*);")
_FUNC = re.compile(r"^\s*Function\s*:\s*(\S+)")


def is_fp16_op(op, operands):
    base, mods = op.split(".")[0], op.split(".")[1:]
    if base == "F2F":
        return any(m in ("F16", "BF16") for m in mods)
    if base not in _FP16_BASES:
        return False
    if base.startswith("HFMA"):
        srcs = [s.strip().lstrip("-|") for s in operands.split(",")[1:3]]
        if srcs == ["RZ", "RZ"]:          # a constant move
            return False
    return True


def fp16_ops(text):
    """{kernel: Counter(op)} of the FP16 arithmetic and conversions in `cuobjdump -sass` text."""
    out, current = {}, None
    for line in text.splitlines():
        m = _FUNC.match(line)
        if m:
            current = out.setdefault(m.group(1), Counter())
            continue
        m = _LINE.match(line)
        if current is not None and m and (m.group(1) or "").strip() != "@!PT" and is_fp16_op(m.group(2), m.group(3)):
            current[m.group(2)] += 1
    return out


def student_row(lab, part, source):
    """The reference row of the lab's table with another source file to compile: same entries,
    flags, variant choice. (It is launched with the reference row itself: threads, tile and shared
    memory come from the reference kernel, never from the student's file.)"""
    source = Path(source)
    return replace(lab.kernel(part.kernel), source=source.name, path=str(source), tag="", defines={})


@dataclass
class Compiled:
    part: str
    source: Path
    row: object = None
    cubin: Path = None
    resources: dict = field(default_factory=dict)   # entry -> ptxas resources
    error: str = ""                                 # one line: why it is not gradable

    @property
    def ok(self):
        return not self.error


def _error_line(message, source):
    """nvcc's first error, paths shortened to file names; for an error inside a library header (a CuTe
    static_assert), the line of the student's file that led there, when nvcc names it."""
    lines = [l.strip() for l in message.splitlines()]
    errs = [l for l in lines if re.search(r"\berror\b", l, re.I) and not l.startswith("nvcc failed")]
    line = errs[0] if errs else (lines[1] if len(lines) > 1 else lines[0])
    line = re.sub(r"(?:/[^\s/():\"]+)+/([^\s/():\"]+)", r"\1", line)
    name = Path(source).name
    if name not in line:
        at = re.search(rf"at line (\d+) of [^\s]*{re.escape(name)}", message)
        if at:
            line += f" (from line {at.group(1)} of {name})"
    return line


def compile_student(lab, part, source, arch, build_dir, headers=()):
    """`headers`: the lab's HEADERS (spec.py), which must sit beside the source: without one, nvcc
    would find the lab's own copy, the reference's answer."""
    source = Path(source).resolve()
    if not source.exists():
        return Compiled(part.name, source, error=f"{source.name} is missing from the workspace")
    for h in headers:
        if not (source.parent / h).is_file():
            return Compiled(part.name, source, error=f"{h} is missing from the workspace (beside {source.name}): "
                                                     "it holds part of your answer; `make workspace` made it")
    row = student_row(lab, part, source)
    build_arch = lab.build_arch(row, arch)
    if build_arch is None:
        return Compiled(part.name, source, row, error=f"{row.unsupported(arch)}, not {arch}")
    cubin = row.cubin(build_dir, build_arch)
    includes = [*lab._include_dirs(row), lab.kernels_dir]
    try:
        resources = nvbuild.compile_cubin(source, cubin, build_arch, row.defines, flags=row.nvcc_flags,
                                          include_dirs=includes)
    except CourseError as e:
        if "not on the PATH" in e.message:
            raise
        return Compiled(part.name, source, row, error=f"does not compile: {_error_line(e.message, source)}")
    missing = [e for e in row.entries.values() if e not in resources]
    if missing:
        return Compiled(part.name, source, row, cubin, resources,
                        error=f"entry point {', '.join(missing)} is missing: keep the extern \"C\" "
                              f"kernels of {source.name} as they are")
    return Compiled(part.name, source, row, cubin, resources)


def sass_facts(compiled):
    text = sassmod.disassemble(compiled.cubin)
    counts, half = sassmod.opcode_counts(text), fp16_ops(text)
    return {entry: {"families": sassmod.family_counts(counts.get(entry, Counter())),
                    "opcodes": counts.get(entry, Counter()), "fp16": half.get(entry, Counter()),
                    "bytes_in_flight": bytes_in_flight(sassmod.kernel_listing(text, entry)),
                    "fence_problems": fences.problems(sassmod.kernel_listing(text, entry)),
                    "after_counter": after_counter(sassmod.kernel_listing(text, entry))}
            for entry in compiled.row.entries.values()}


def after_counter(listing):
    """The opcode bases (a Counter) that follow the first integer atomic in address order: what a block
    does once it has counted itself in. The last block of an ordered split-K reduction reads the other
    splits' partials (LDG) and adds them (FADD) there; a kernel that only counts and returns has neither."""
    ops = []
    for line in listing:
        code = re.sub(r"^\s*/\*[0-9a-f]+\*/\s*", "", line)
        code = re.sub(r"^@!?U?P\w+\s+", "", code).split()
        if code:
            ops.append(code[0].rstrip(";"))
    first = next((i for i, op in enumerate(ops)
                  if op.split(".")[0] in ("RED", "ATOM", "ATOMG", "REDG") and not set(op.split(".")[1:]) & _FLOAT_MODS), None)
    return Counter(op.split(".")[0] for op in ops[first + 1:]) if first is not None else Counter()


_MATH_BASES = {"FFMA", "HFMA2", "HMMA", "DFMA"}
_LOAD_WIDTH = {"128": 16, "64": 8, "U16": 2, "S16": 2, "U8": 1, "S8": 1}


def bytes_in_flight(listing):
    """The most bytes of global loads (LDG, any width; 4 bytes unless .128/.64/.U16/.U8 say otherwise)
    that one thread issues with no math instruction between them: loads issued before the first
    instruction that could use them are in flight together. A loop that loads one value, then uses
    it, then loads the next, keeps one load in flight whatever its trip count. `listing`: lines as
    common.sass.kernel_listing gives them ("/*0530*/ LDG.E.128.CONSTANT R4, ... ;")."""
    best = run = 0
    for line in listing:
        m = re.match(r"^/\*[0-9a-f]+\*/\s*(@!?U?P[T0-9]\s+)?([A-Z][A-Z0-9_]*(?:\.[A-Za-z0-9_]+)*)", line.strip())
        if not m or (m.group(1) or "").strip() == "@!PT":
            continue
        op = m.group(2)
        base, mods = op.split(".")[0], op.split(".")[1:]
        if base in _MATH_BASES:
            run = 0
        elif base == "LDG":
            run += next((w for mod, w in _LOAD_WIDTH.items() if mod in mods), 4)
            best = max(best, run)
    return best


_FLOAT_MODS = {"F32", "F16", "BF16", "F64", "F16x2", "BF16x2", "F32x2", "FTZ"}


def atomics(opcodes):
    """(floating-point atomics, integer atomics) among the opcodes (a Counter): RED, ATOM, ATOMG, ATOMS."""
    fl, it = Counter(), Counter()
    for op, n in opcodes.items():
        base, mods = op.split(".")[0], set(op.split(".")[1:])
        if base in ("RED", "ATOM", "ATOMG", "ATOMS", "REDG"):
            (fl if mods & _FLOAT_MODS else it)[op] += n
    return fl, it


def _fmt_ops(counter, n=4):
    return ", ".join(f"{op} x{c}" for op, c in counter.most_common(n))


def run_check(kind, compiled, facts, check=None):
    """(ok, reason) for one static check kind (parts.py's docstring lists them). Entry points with
    the same problem share one reason: "sgemm_v6_vec, sgemm_v6_scalar: no FFMA: ..."."""
    found = {}                               # problem -> [entries]
    threshold = check.threshold if check is not None else 0
    for variant, entry in compiled.row.entries.items():
        for problem in _problems(kind, variant, compiled.resources[entry], facts[entry], threshold):
            found.setdefault(problem, []).append(entry)
    reason = "; ".join(f"{', '.join(entries)}: {problem}" for problem, entries in found.items())
    return not found, reason


def _problems(kind, variant, r, facts, threshold=0):
    f, half = facts["families"], facts["fp16"]
    if kind == "bytes-in-flight":
        got = facts.get("bytes_in_flight", 0)
        if got >= threshold:
            return []
        return [f"at most {got} bytes of global loads in flight per thread before math uses them "
                f"({threshold:g} needed): each load waits for the math of the one before it (Little's law: "
                "bandwidth = bytes in flight / latency)"]
    if kind == "ordered-reduce":
        fl, it = atomics(facts["opcodes"])
        if fl:
            return [f"floating-point atomics ({_fmt_ops(fl)}): partial sums added in whatever order the blocks "
                    "arrive, so the low bits change from run to run"]
        if not it:
            return ["no atomic counter: no block can tell when the other splits' partial tiles are written, "
                    "so the partials are never added (or added before they exist)"]
        after = facts.get("after_counter", Counter())
        if not after["LDG"] or not after["FADD"]:
            return ["after the arrival counter no partial tile is read (LDG) and added (FADD): the block that "
                    "arrives last never sums the splits"]
        return []
    if kind == "cp-async-fence":          # fences.py
        return facts["fence_problems"]
    if kind == "computes-fp32":
        if half:
            return [f"FP16 math in an FP32 kernel: {_fmt_ops(half)}" + ("; and no FFMA" if f["FFMA"] == 0 else "")]
        return ["no FFMA: the loop that does the math is missing"] if f["FFMA"] == 0 else []
    if kind == "computes-tensor":
        if f["HMMA"] == 0:
            return ["no HMMA: no tensor-core math (mma_sync) is left"]
        return ["no LDSM: the fragments do not come from shared memory"] if f["LDSM"] == 0 else []
    if kind == "cp-async":
        if f["LDGSTS"] == 0:
            return ["no LDGSTS: no tile is copied with cp.async (is issue() ever called?)"]
        if f["DEPBAR"] == 0:
            return ["no DEPBAR: nothing waits for the copies (cp.async.wait_group, __pipeline_wait_prior)"]
        return ["no HMMA: no tensor-core math is left"] if f["HMMA"] == 0 else []
    if kind == "registers":
        if r["spill_stores"] or r["spill_loads"]:
            return [f"spills: {r['spill_stores']} B stored, {r['spill_loads']} B loaded at {r['registers']} registers "
                    "(ptxas -v)"]
        if r["stack"] or f["LDL/STL"]:
            return [f"local memory: a {r['stack']} B stack frame, {f['LDL/STL']} LDL/STL (an array indexed at run "
                    "time: a loop over acc that is not unrolled?)"]
        return []
    if kind == "lds128":
        if f["LDS.128"] == 0:
            return ["no 128-bit shared loads (LDS.128): read regM and regN as float4"]
        return [f"{f['LDS']} narrow shared loads (LDS) besides the LDS.128"] if f["LDS"] else []
    if kind == "float4-global":
        if variant == "vec" and f["LDG.128"] == 0:
            return ["no 128-bit global loads (LDG.E.128): with VEC, load4 must load a float4"]
        if variant == "scalar" and f["LDG.128"]:
            return [f"{f['LDG.128']} 128-bit global loads (LDG.E.128) in the variant that runs when K or N is not "
                    "a multiple of 4: those rows are not 16-byte aligned"]
        return []
    if kind == "float2-store":
        if variant == "vec" and f["STG.64"] == 0:
            return ["no 64-bit stores of C (STG.E.64): with VEC, a lane's two neighbouring values leave as one float2"]
        if variant == "scalar" and f["STG.64"]:
            return [f"{f['STG.64']} 64-bit stores (STG.E.64) in the variant that runs when N is not a multiple of 4: "
                    "a pair there need not be 8-byte aligned"]
        return []
    raise ValueError(f"not a static check kind: {kind}")
