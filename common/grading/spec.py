"""How a lab declares its graded exercises, and the loaded declaration the grader reads.

    Check, Part, Region, Wrong     the rows of a lab's grading/parts.py (below)
    Grading(lab)                   the lab's grading data, loaded: .code_parts, .parts (code parts,
                                   then questions and predictions), .part(name), .regions, .wrong,
                                   .questions, .predictions, .shapes_for(kernel), thresholds
    has_grading(lab)               does the lab have a grading/parts.py?

A lab's grading/ folder (data, no code; loaded as lab.module("grading.parts")):

    parts.py       PARTS    [Part]: the code parts, one reference kernel (a row of lab.py) each
                   REGIONS  [Region]: each `// BEGIN SOLUTION id: ...` region and its stub
                   WRONG    [Wrong]: the known-wrong kernels (wrong/*.patch) and what each must lose
                   SHAPES   {precision: [(M, N, K)]}: the awkward shapes "correct" runs, per
                            precision of common.precision (a Part's own `shapes` wins)
                   GIVEN    [row name]: optional, rungs copied whole into the workspace's given/ (the
                            ungraded rung before the first graded one; never a graded part's kernel)
                   HEADERS  [file name]: optional, headers of the lab's kernels/ that hold regions of
                            their own (a descriptor every kernel uses): the workspace holds each, its
                            regions cut; the kernels include it in quotes, so nvcc finds the
                            workspace's copy first, and a workspace without it is not graded
                   and optionally SPEED_PCT, TIMING_SIZE, TIMING_BUDGET_S, CHECK_ROWS,
                   GPU_TIMEOUT_S, SANITIZER_TIMEOUT_S, SANITIZE_SHAPES, HANG_HINT (DEFAULTS below)
    questions.py   QUESTIONS [Question], PREDICTIONS [Prediction] (common.grading.questions), and
                   optionally PREDICTION_SIZE, PREDICTION_FACTOR, ANSWERS_INTRO; no questions.py: no
                   questions and no predictions part
    wrong/*.patch  a unified diff against the reference kernel each (a few lines; a line that
                   carries the bug says `BUG`; `BUG [effect]` names what the simulated GPU does)

Check kinds: computes-fp32, computes-tensor, cp-async, registers, lds128, float4-global,
bytes-in-flight, ordered-reduce, float2-store (static.py, from ptxas and SASS); correct, race-free,
fast (the GPU; grader.py); bandwidth, bitwise (the GPU; measures.py: % of the copy bandwidth, the same bits run
after run). A Check's `shape` and `threshold` parametrize the kinds that need one (measures.py).
cp-async-fence (fences.py, SASS: a cp.async loop waits, then a barrier, before its shared loads);
probe (hostprobe.py: the lab's host program around the student's file, and the lab's verdict,
grading/probes.py PROBES); bank-conflicts (bankcheck.py, the GPU: ncu's shared-load bank
conflicts per load against the reference's, at the Check's shape, `threshold` allowed above).
A rules part (Part(rules="file.toml")) is a table of rules the student writes, not a kernel:
rules-sane (no GPU) and rules-speed (the GPU) grade it (rules.py says how, and what parts.py declares). GRADE_TIMING_SIZE overrides
TIMING_SIZE (the grader's tests on a simulated GPU set it small; nothing else should).
"""
import os
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import CourseError

STATIC_KINDS = ("computes-fp32", "computes-tensor", "cp-async", "registers", "lds128", "float4-global",
                "bytes-in-flight", "ordered-reduce", "float2-store",
                "cp-async-fence",   # fences.py: every cp.async loop waits, then a barrier, before its shared loads
                "probe")            # hostprobe.py: a lab's host program around the student's file, and its verdict
GPU_KINDS = ("correct", "race-free", "fast", "bandwidth", "bitwise", "rules-speed")
GPU_KINDS += ("bank-conflicts",)   # bankcheck.py: ncu, shared-load bank conflicts per load against the reference's
RULES_KINDS = ("rules-sane",)     # a rules part's check without a GPU (rules.py)

DEFAULTS = {
    "SPEED_PCT": 75,              # a correct kernel at >= 75 % of the reference's speed gets the point
    "TIMING_SIZE": 2048,          # M = N = K of the timing
    "TIMING_BUDGET_S": 0.25,      # per kernel and round; both kernels interleaved over two rounds' worth
    "CHECK_ROWS": 256,            # rows of C compared with float64 after timing
    "GPU_TIMEOUT_S": 120,         # one part's GPU run; a kernel that hangs is cut off
    "HANG_HINT": "a hang (a __syncthreads() that some threads never reach? an endless loop?)",   # its reason
    "SANITIZER_TIMEOUT_S": 300,
    "SANITIZE_SHAPES": [(130, 260, 104), (33, 65, 24)],
    "PREDICTION_SIZE": 4096,
    "PREDICTION_FACTOR": 2.0,
}


@dataclass(frozen=True)
class Check:
    name: str
    points: int
    what: str                 # what passing means, in one line
    kind: str                 # see the module docstring
    needs_gpu: bool = False
    requires: str = ""        # a check of the same part that must pass first (else this one fails too)
    shape: tuple = ()         # (M, N, K) the kind runs at (bandwidth, bitwise)
    threshold: float = 0.0    # bytes-in-flight: bytes per thread; bandwidth: % of the copy


@dataclass(frozen=True)
class Part:
    name: str
    title: str
    checks: tuple
    kernel: str = ""          # the lab's table row ("" for questions and predictions)
    regions: tuple = ()       # solution region ids in that kernel's file
    shapes: tuple = ()        # the shapes "correct" runs; () = the lab's SHAPES for the kernel's precision
    rules: str = ""           # a rules part: the lab's file (TOML) the student writes instead of a kernel

    @property
    def max_points(self):
        return sum(c.points for c in self.checks)

    def check(self, name):
        return next(c for c in self.checks if c.name == name)


@dataclass(frozen=True)
class Region:
    id: str
    part: str
    stub: str = ""            # code kept in place of the region (indented like the marker); "" = none
    hint: str = ""            # one more TODO line: what to look at (a count, a SASS line, a model), never where to copy from


@dataclass(frozen=True)
class Wrong:
    """A known-wrong kernel: wrong/<patch>, the part's reference kernel with one bug.
    `reason`: words the reason of the first check it must lose (lose_here, then lose_on_gpu) contains;
    "a | b" where the bug shows either way (an out-of-bounds write crashes a real GPU and only gives
    wrong elements on the simulated one)."""
    patch: str                # under grading/wrong/
    part: str                 # graded as this part
    bug: str                  # in a few words
    lose_here: tuple          # checks that must fail without a GPU (SASS, ptxas)
    lose_on_gpu: tuple        # checks that must fail on a GPU as well
    reason: str
    max_diff_lines: int = 4   # code lines (comments and blank lines aside) that differ from the reference
    file: str = ""            # the file the patch applies to when not the part's kernel: one of HEADERS

    @property
    def name(self):
        return Path(self.patch).stem

    @property
    def key_check(self):
        return (self.lose_here + self.lose_on_gpu + ("",))[0]

    def said_in(self, text):
        """Does a check's reason name this bug (one of `reason`'s alternatives)?"""
        return any(r.strip().lower() in text.lower() for r in self.reason.split(" | "))


def has_grading(lab):
    return (lab.dir / "grading" / "parts.py").exists()


class Grading:
    """A lab's grading data, loaded through the lab's package (never through sys.path)."""

    def __init__(self, lab):
        if not has_grading(lab):
            raise CourseError(f"{lab.name} has no graded exercises (no grading/parts.py)")
        self.lab = lab
        self.dir = lab.dir / "grading"
        self.wrong_dir = self.dir / "wrong"
        self.data = lab.module("grading.parts")
        self.qdata = lab.module("grading.questions") if (self.dir / "questions.py").exists() else None
        for name, value in DEFAULTS.items():
            setattr(self, name, getattr(self.data, name, getattr(self.qdata, name, value)))
        if os.environ.get("GRADE_TIMING_SIZE"):
            self.TIMING_SIZE = int(os.environ["GRADE_TIMING_SIZE"])
        self.shapes = getattr(self.data, "SHAPES", {})
        self.code_parts = list(self.data.PARTS)
        self.regions = {r.id: r for r in getattr(self.data, "REGIONS", [])}
        self.wrong = list(getattr(self.data, "WRONG", []))
        self.given = list(getattr(self.data, "GIVEN", []))
        self.headers = list(getattr(self.data, "HEADERS", []))
        self.questions = list(getattr(self.qdata, "QUESTIONS", []))
        self.predictions = list(getattr(self.qdata, "PREDICTIONS", []))
        self.answers_intro = getattr(self.qdata, "ANSWERS_INTRO", "")
        self.build_dir = Path(os.environ.get("GRADE_BUILD") or lab.build_dir / "grade")   # never build/<arch>
        self.reports_dir = lab.reports_dir / "grade"
        self._validate()

    def _validate(self):
        names = [p.name for p in self.code_parts]
        for p in self.code_parts:
            if p.rules:
                if not (self.lab.dir / p.rules).exists():
                    raise CourseError(f"grading/parts.py: {p.name}: no rules file {p.rules} in the lab")
            else:
                self.lab.kernel(p.kernel)         # CourseError naming the kernels when it is not a row
            for c in p.checks:
                if c.kind not in STATIC_KINDS + GPU_KINDS + RULES_KINDS:
                    raise CourseError(f"grading/parts.py: {p.name} {c.name}: no check kind {c.kind!r}",
                                      hint=f"kinds: {', '.join(STATIC_KINDS + GPU_KINDS)}")
                if c.kind == "probe":
                    from .hostprobe import probe_for
                    probe = probe_for(self, p.name, c.name)      # CourseError when PROBES lacks the row
                    if not (self.dir / "probes" / probe.program).exists():
                        raise CourseError(f"grading/probes.py: {p.name} {c.name}: no program probes/{probe.program}")
        for name in self.given:
            self.lab.kernel(name)
            if name in {p.kernel for p in self.code_parts}:
                raise CourseError(f"grading/parts.py GIVEN: {name} is a graded part's kernel: the workspace "
                                  "would hold its answer")
        for q in self.questions:
            pasted = q.pasted_question_passes()
            if pasted:
                raise CourseError(f"grading/questions.py {q.id}: the question's text names the key idea(s) "
                                  f"{pasted} its reason must name: pasting the question would pass",
                                  hint="ask without naming it, or choose another key idea")
            if q.why and not q.grade_reason(q.why_model, self.questions)[0]:
                raise CourseError(f"grading/questions.py {q.id}: why_model does not pass its own key ideas: "
                                  f"{q.grade_reason(q.why_model, self.questions)[1]}")
        for h in self.headers:
            if not (self.lab.kernels_dir / h).is_file():
                raise CourseError(f"grading/parts.py HEADERS: there is no {h} in {self.lab.kernels_dir}")
        for w in self.wrong:
            if w.file and w.file not in self.headers:
                raise CourseError(f"grading/parts.py WRONG: {w.patch} patches {w.file}, which is not in HEADERS")
            if w.part not in names:
                raise CourseError(f"grading/parts.py WRONG: {w.patch} is graded as {w.part!r}, which is no part",
                                  hint=f"parts: {', '.join(names)}")

    # --- parts ---------------------------------------------------------------------------------
    @property
    def parts(self):
        out = list(self.code_parts)
        if self.questions:
            out.append(Part("questions", "check your understanding (answers.toml [questions])",
                            checks=tuple(Check(q.id, q.points, q.text, "question") for q in self.questions)))
        if self.predictions:
            title = ("predictions, derived from the kernels and the models (answers.toml [predictions])"
                     if all(p.computed for p in self.predictions) else
                     f"predictions against measurements at {self.PREDICTION_SIZE}³ (answers.toml [predictions])")
            out.append(Part("predictions", title,
                            checks=tuple(Check(p.id, 1, p.text, "prediction") for p in self.predictions)))
        return out

    def part(self, name):
        for p in self.parts:
            if p.name == name:
                return p
        raise CourseError(f"there is no part {name!r}", hint=f"parts: {', '.join(p.name for p in self.parts)}")

    def kernel_files(self):
        """{code part: the reference .cu file (a rules part: its rules file)}."""
        return {p.name: (self.lab.dir / p.rules) if p.rules else Path(self.lab.kernel(p.kernel).path)
                for p in self.code_parts}

    def shapes_for(self, part):
        if part.shapes:
            return [tuple(s) for s in part.shapes]
        k = self.lab.kernel(part.kernel)
        if k.precision not in self.shapes:
            raise CourseError(f"grading/parts.py SHAPES has no shapes for {k.precision} (part {part.name})",
                              hint="add SHAPES[precision] = [(M, N, K), ...], or give the Part its own shapes")
        return [tuple(s) for s in self.shapes[k.precision]]

    def wrong_file(self, w):
        return self.wrong_dir / w.patch

    def header_files(self):
        """[the lab's kernels/<header>] of HEADERS: copied into the workspace with their regions cut."""
        return [self.lab.kernels_dir / h for h in self.headers]
