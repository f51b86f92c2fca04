"""The main loop of a kernel's SASS, made short enough to read side by side with another's.

    loops(listing)                   -> [(start, end)]: every backward branch's body, by address
    main_loop(listing, math=...)     -> the instruction lines of the loop with the most math
                                        instructions (FFMA, HMMA): a GEMM's k loop
    condense(lines, keep=KEEP)       -> the loop with memory, barrier, branch and tensor lines kept
                                        verbatim and each run of other lines (never-executed `@!PT`
                                        placeholders too) folded into one count line: "   ... 48 FFMA, 6 other"
    side_by_side(columns, titles)    -> text: listings next to each other, one column each

`listing` is common.sass.kernel_listing's output: lines "/*0f00*/  LDS.128 R24, [R3+UR6] ;".
A loop is found the way a reader finds it: a branch whose target is an earlier address. Unrolled
loops have one body; a k loop of a GEMM is the one that holds the FFMA or HMMA instructions.
"""
import re

_ADDR = re.compile(r"^/\*([0-9a-f]+)\*/\s*(.*)$")
_OP = re.compile(r"^(@!?U?P[T0-9]\s+)?([A-Z][A-Z0-9_]*(?:\.[A-Z0-9_]+)*)")

MATH = ("FFMA", "HMMA")
# opcode bases shown verbatim by condense(): what moves data, waits, branches or uses tensor cores
KEEP = ("LDS", "LDSM", "STS", "LDG", "STG", "LDGSTS", "LDGDEPBAR", "DEPBAR", "BAR", "BRA", "HMMA", "LDL", "STL")


def _parse(line):
    """(address, text, opcode) of one listing line, or None."""
    m = _ADDR.match(line.strip())
    if not m:
        return None
    text = m.group(2).rstrip(" ;").strip()
    op = _OP.match(text)
    return int(m.group(1), 16), text, (op.group(2) if op else "")


def _base(op):
    return op.split(".")[0]


def loops(listing):
    """(start, end) address pairs: a branch at `end` back to `start` <= end."""
    found = []
    for line in listing:
        p = _parse(line)
        if not p or _base(p[2]) != "BRA":
            continue
        target = re.findall(r"0x([0-9a-f]+)", p[1])
        if target and int(target[-1], 16) <= p[0]:
            found.append((int(target[-1], 16), p[0]))
    return found


def main_loop(listing, math=MATH):
    """The lines of the loop with the most `math` instructions; [] if the kernel has no loop with any."""
    parsed = [p for p in (_parse(l) for l in listing) if p]
    best, best_n = [], 0
    for start, end in loops(listing):
        body = [p for p in parsed if start <= p[0] <= end]
        n = sum(_base(op) in math for _, _, op in body)
        if n > best_n:
            best, best_n = body, n
    return [f"/*{a:04x}*/ {text}" for a, text, _ in best]


def condense(lines, keep=KEEP):
    """Keep the lines whose opcode base is in `keep`; fold each run of the others into a count line."""
    out, run = [], {}

    def flush():
        if run:
            parts = [f"{n} {op}" for op, n in sorted(run.items(), key=lambda kv: -kv[1]) if op != "other"]
            if run.get("other"):
                parts.append(f"{run['other']} other")
            out.append("    ... " + ", ".join(parts))
            run.clear()

    for line in lines:
        p = _parse(line)
        if not p:
            continue
        base = _base(p[2])
        if base in keep and not p[1].startswith("@!PT"):      # @!PT: a never-executed placeholder
            flush()
            out.append(line)
        else:
            key = base if base in MATH else "other"
            run[key] = run.get(key, 0) + 1
    flush()
    return out


def side_by_side(columns, titles=None, gap=4):
    """Columns of text lines next to each other, each as wide as its longest line."""
    titles = titles or [""] * len(columns)
    cols = [[t, "-" * max([len(t)] + [len(l) for l in c])] + list(c) for t, c in zip(titles, columns)]
    widths = [max(len(l) for l in c) for c in cols]
    height = max(len(c) for c in cols)
    lines = []
    for i in range(height):
        cells = [(c[i] if i < len(c) else "").ljust(w) for c, w in zip(cols, widths)]
        lines.append((" " * gap).join(cells).rstrip())
    return "\n".join(lines)
