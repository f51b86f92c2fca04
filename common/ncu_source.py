"""Where a kernel's time goes, instruction by instruction: ncu's warp-state samples per SASS line.

    summarize(text)  -> Summary of `ncu --import R --page source --csv --print-source sass` output
    report(summary)  -> text: the opcodes that hold the samples, the instructions that hold the most,
                        and the stretch from each barrier to the next math instruction

ncu samples each warp's state at a fixed interval (`--set full` turns it on: SourceCounters) and
charges the sample to the instruction the warp is at, with the reason it is not issuing (stall_*)
or "selected" when it is. A loop whose copies sit in a block of their own, after the barrier and
before the first FFMA or HMMA, shows up as a share of the samples in that stretch: lab 7's v8 had
9 % there, which its fast loop (FASTLOOP) gave back. A stall on one instruction names its cause:
long_sb on an instruction that overwrites a register an LDGSTS still has to read, for example.
"""
import csv
import io
import re
from dataclasses import dataclass, field

from .ncu import number

ALL = "Warp Stall Sampling (All Samples)"
NOT_ISSUED = "Warp Stall Sampling (Not-issued Samples)"
MATH = ("FFMA", "HMMA", "HGMMA", "IMMA", "DFMA")
_PRED = re.compile(r"^@!?U?P[T0-9]+\s+")


@dataclass
class Line:
    index: int
    address: str
    source: str
    opcode: str
    samples: float
    not_issued: float
    reasons: dict          # stall reason (issued or not) -> samples


@dataclass
class Summary:
    kernel: str
    lines: list
    total: float
    by_opcode: list = field(default_factory=list)     # [(opcode, % of samples, % not issued)]
    stretches: list = field(default_factory=list)     # [(barrier line index, instructions, % of samples)]

    def pct(self, x):
        return 100.0 * x / self.total if self.total else 0.0


def _number(text):
    """A sample count: ncu.number's reading, 0 for an empty or non-numeric cell."""
    v = number(text or "")
    return float(v) if isinstance(v, (int, float)) else 0.0


def opcode(source):
    """The opcode of a SASS line without its predicate: '@!P5 BRA 0x1a40' -> 'BRA'."""
    s = _PRED.sub("", source.strip())
    return s.split(" ")[0] if s else ""


def summarize(text):
    """The source page's CSV (one kernel) as a Summary; ValueError when it has no sampling columns."""
    rows = list(csv.reader(io.StringIO(text)))
    kernel = next((r[1] for r in rows if len(r) > 1 and r[0] == "Kernel Name"), "")
    head_at = next((i for i, r in enumerate(rows) if "Source" in (c.strip() for c in r)), None)
    if head_at is None:
        raise ValueError("no 'Source' column: not the output of ncu --page source --csv --print-source sass")
    head = [c.strip() for c in rows[head_at]]
    if ALL not in head:
        raise ValueError(f"no '{ALL}' column: the report was made without source counters (use --set full)")
    col = {name: i for i, name in enumerate(head)}
    reasons = [(name[len("stall_"):], i) for name, i in col.items()
               if name.startswith("stall_") and "Not Issued" not in name]
    lines = []
    for r in rows[head_at + 1:]:
        if len(r) != len(head) or not r[col["Source"]].strip():
            continue
        src = r[col["Source"]].strip()
        lines.append(Line(len(lines), r[col["Address"]].strip(), src, opcode(src), _number(r[col[ALL]]),
                          _number(r[col[NOT_ISSUED]]) if NOT_ISSUED in col else 0.0,
                          {name: _number(r[i]) for name, i in reasons if _number(r[i])}))
    s = Summary(kernel, lines, sum(x.samples for x in lines))
    ops = {}
    for x in lines:
        a, n = ops.get(x.opcode, (0.0, 0.0))
        ops[x.opcode] = (a + x.samples, n + x.not_issued)
    s.by_opcode = sorted(((op, s.pct(a), s.pct(n)) for op, (a, n) in ops.items()), key=lambda t: -t[1])
    for x in lines:
        if x.opcode.startswith("BAR"):
            j = x.index + 1
            while j < len(lines) and not lines[j].opcode.startswith(MATH):
                j += 1
            s.stretches.append((x.index, j - x.index, s.pct(sum(y.samples for y in lines[x.index:j]))))
    return s


def report(s, top=12, opcodes=10):
    """The summary as text (the tables `make ncu` prints)."""
    out = [f"{s.kernel or 'kernel'}: {len(s.lines)} SASS instructions, {s.total:.0f} warp-state samples",
           "", f"{'opcode':28s} {'% samples':>9s} {'% not issued':>12s}"]
    out += [f"{op:28s} {a:9.2f} {n:12.2f}" for op, a, n in s.by_opcode[:opcodes]]
    out += ["", f"{'line':>5s} {'% samples':>9s}  {'top reasons':34s} instruction"]
    for x in sorted(s.lines, key=lambda y: -y.samples)[:top]:
        why = ", ".join(f"{k} {s.pct(v):.1f}" for k, v in sorted(x.reasons.items(), key=lambda kv: -kv[1])[:2])
        out.append(f"{x.index:5d} {s.pct(x.samples):9.2f}  {why:34s} {x.source[:60]}")
    if s.stretches:
        out += ["", "from each barrier to the next math instruction (a copy block sits here when it has its own):"]
        out += [f"  BAR at line {i}: {n} instructions, {p:.2f} % of the samples" for i, n, p in s.stretches]
    return "\n".join(out)
