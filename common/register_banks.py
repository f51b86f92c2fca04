"""Register-bank conflicts of FFMA, counted statically in SASS (`make sass` prints them per kernel).

    ffma_bank_conflicts(text) -> {kernel: {"ffma", "bank_conflicts", "pct_conflicting", "three_reads"}}
    reads_of(operands, cache) -> the register numbers an FFMA reads from the banks (not the reuse cache)

The model. An FFMA reads three source registers. The register file serves them from two banks,
register numbers even and odd (microbenchmarks of Volta and later GPUs found two banks; the course's
H200 measurements agree, see below), one read per bank per cycle: an FFMA whose bank reads fall two
in one bank waits one more cycle, and three bank reads always do. A read is saved by the operand
reuse cache: `.reuse` on an operand keeps that register for the next instruction that reads the same
operand slot. The model keeps one cached register per (slot, bank): ptxas alternates two flagged
registers of different banks in one slot (`R34.reuse`, `R35.reuse`) only if both are kept. A branch or
barrier empties the cache.

What it is for: comparing two builds of one kernel (an FFMA order, a tile, an epilogue). It is static
(an instruction in a loop counts once; the unrolled main loop dominates), and it is a model: the
reuse cache's real capacity is not documented. On the H200 (sm_90) the count follows ncu's dispatch stalls
(lab 7 README, "Register banks"): lab 7's v7 with its float4 epilogue 86 % conflicting FFMA and 0.19
dispatch stalls per instruction, its scalar variant 7 % and 0.11; v8 with FMAORDER 1 30 % and 0.17,
with FMAORDER 2 23 % and 0.14. The count is not a time: other stalls (shared-memory latency, barriers)
move the same kernels the other way, and a build with fewer conflicts can still be slower (v8 with
FMAORDER 3: 24 %, and 4 % slower than FMAORDER 2). Each architecture's ptxas schedules differently:
compare builds for one architecture only.
"""
import re

_FUNC = re.compile(r"^\s*Function\s*:\s*(\S+)")
_LINE = re.compile(r"^\s+/\*[0-9a-f]{4,}\*/\s+(.*?)\s*;")
_FFMA = re.compile(r"^(@!?U?P[T0-9]\s+)?FFMA(\.[A-Z0-9_.]+)?\s+(R\d+|RZ),\s*(.*)$")
_REG = re.compile(r"^-?\|?R(\d+)\|?(\.reuse)?$")
_FLUSH = re.compile(r"^(@!?U?P[T0-9]\s+)?(BRA|BAR|EXIT|RET|CALL|BSYNC|WARPSYNC|JMP)\b")
BANKS = 2


def reads_of(operands, cache):
    """Register numbers read from the banks by one FFMA with these source operands (strings such as
    'R12.reuse', '-R3', 'RZ', '0x3f800000'); updates `cache` ({(slot, bank): register})."""
    reads = []
    for slot, text in enumerate(operands):
        m = _REG.match(text.strip())
        if not m:                          # RZ, an immediate or a constant: no register read
            continue
        reg, flagged = int(m.group(1)), bool(m.group(2))
        key = (slot, reg % BANKS)
        hit = cache.get(key) == reg
        if flagged:
            cache[key] = reg
        else:
            cache.pop(key, None)
        if not hit:
            reads.append(reg)
    return reads


def _conflicts(reads):
    banks = [r % BANKS for r in reads]
    return len(banks) - len(set(banks))


def ffma_bank_conflicts(text):
    """Per kernel of a `cuobjdump -sass` listing: FFMA count, FFMA whose bank reads conflict (each costs
    one cycle in the model), and FFMA that read all three operands from the banks."""
    out, current, cache = {}, None, {}
    for line in text.splitlines():
        f = _FUNC.match(line)
        if f:
            current, cache = out.setdefault(f.group(1), {"ffma": 0, "bank_conflicts": 0, "three_reads": 0}), {}
            continue
        m = _LINE.match(line)
        if current is None or not m:
            continue
        insn = m.group(1)
        if _FLUSH.match(insn):
            cache = {}
            continue
        ff = _FFMA.match(insn)
        if not ff or (ff.group(1) or "").strip() == "@!PT":
            continue                       # other instructions neither read nor clear FFMA operand slots
        reads = reads_of(ff.group(4).split(","), cache)
        current["ffma"] += 1
        current["bank_conflicts"] += _conflicts(reads) > 0
        current["three_reads"] += len(reads) == 3
    for r in out.values():
        r["pct_conflicting"] = 100.0 * r["bank_conflicts"] / r["ffma"] if r["ffma"] else None
    return out
