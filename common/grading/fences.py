"""The fence of a cp.async pipeline, read from SASS: the static check kind "cp-async-fence".

    problems(listing)  -> [one line per problem]: empty when every loop that issues cp.async copies
                          waits for them and then passes a barrier before it reads shared memory

`listing` is common.sass.kernel_listing's output, one instruction per line ("/*0f90*/ DEPBAR.LE SB0, 0x1 ;").
Before any loop: the first shared load after the first cp.async must come after a wait and then a
barrier (the prologue's fence: the first tile has landed for every thread).
A loop is a backward branch's body (common.sass_loops.loops). In a loop that issues cp.async (LDGSTS):

  1. it waits for copies (DEPBAR): else nothing orders a buffer's copy before the reads of it;
  2. it has a barrier (BAR.SYNC): a thread's wait covers only its own copies, and only a barrier tells
     a thread that the others have both landed their copies and finished reading the buffer that the
     next copy overwrites;
  3. after each wait, going round the loop, the barrier comes before the next shared load (LDS, LDSM):
     a load between the wait and the barrier reads what other threads' copies may not have written.

Lines predicated on @!PT never run (ptxas's placeholders) and are skipped. What this cannot see: the
wait's count (DEPBAR.LE SB0, n) against the copies in flight, and which buffer a load reads; the GPU
checks (results, racecheck) see those.
"""
import re

from ..sass_loops import loops

_LINE = re.compile(r"^/\*([0-9a-f]+)\*/\s*(@!?U?P[T0-9]\s+)?([A-Z][A-Z0-9_]*(?:\.[A-Z0-9_]+)*)")


def _instructions(listing):
    """[(address, opcode)] of the lines that can run."""
    out = []
    for line in listing:
        m = _LINE.match(line.strip())
        if m and (m.group(2) or "").strip() != "@!PT":
            out.append((int(m.group(1), 16), m.group(3)))
    return out


def _base(op):
    return op.split(".")[0]


def _is_load(op):
    return _base(op) in ("LDS", "LDSM")


def _first_load_problem(insns):
    """The first shared load after the first cp.async: a wait, then a barrier, must come before it."""
    start = next((i for i, (_, op) in enumerate(insns) if _base(op) == "LDGSTS"), None)
    if start is None:
        return ""
    waited = False
    for a, op in insns[start:]:
        if _base(op) == "DEPBAR":
            waited = True
        elif op.startswith("BAR") and waited:
            return ""
        elif _is_load(op):
            return (f"the first shared load after the first cp.async copy ({op} at 0x{a:x}) comes before "
                    f"{'a barrier after the wait' if waited else 'any wait and barrier'}: it reads a tile that may "
                    "not have landed")
    return ""


def problems(listing):
    insns = _instructions(listing)
    first = _first_load_problem(insns)
    out = [first] if first else []
    for start, end in loops(listing):
        body = [(a, op) for a, op in insns if start <= a <= end]
        if not any(_base(op) == "LDGSTS" for _, op in body):
            continue
        where = f"the loop at 0x{start:x}-0x{end:x}"
        waits = [i for i, (_, op) in enumerate(body) if _base(op) == "DEPBAR"]
        bars = [i for i, (_, op) in enumerate(body) if op.startswith("BAR.SYNC") or op == "BAR"]
        if not waits:
            out.append(f"{where} issues cp.async copies (LDGSTS) and never waits for them (no DEPBAR): its shared "
                       "loads may read a tile that has not landed")
            continue
        if not bars:
            out.append(f"{where} issues cp.async copies and has no barrier (BAR.SYNC): its shared loads may read "
                       "parts of a tile that have not landed, and a copy may overwrite a buffer that other warps "
                       "still read")
            continue
        for w in waits:
            for a, op in body[w + 1:] + body[:w]:          # round the loop, from the wait back to it
                if op.startswith("BAR"):
                    break
                if _is_load(op):
                    out.append(f"a shared load ({op} at 0x{a:x}) follows the cp.async wait (DEPBAR at "
                               f"0x{body[w][0]:x}) before any barrier: it may read what other threads' copies "
                               "have not written yet")
                    break
    return out
