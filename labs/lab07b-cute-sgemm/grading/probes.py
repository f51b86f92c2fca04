"""Lab 7b's host probes (common/grading/hostprobe.py): what CuTe computes for the student's layouts,
judged here with the course's bank model (common/banks.py). No GPU.

    PROBES                        {(part, check): Probe}: the programs in probes/ and their verdicts
    parse_sa(text) -> SaTile      probes/c4_sa_layout.cu's output: the offset of every (m, k, stage)
    sa_verdict(outputs)           c4 "banks": a permutation of each stage, 16-byte chunks whole, the
                                  worklog's 32-bit reads and the 16-byte copies free of bank conflicts
    parse_mma(text) -> MmaTile    probes/c5_mma_partition.cu's output: the (m, n) of every thread's values
    mma_verdict(outputs)          c5 "layout": every element of C once, each thread's values of a row in
                                  aligned groups of 4 adjacent columns, warp 0's reads of sB conflict-free

A verdict says what is wrong (which rows, lanes, columns or banks), never the layout to write.
The accesses are the kernel's own: the MMA layout puts thread t at m-index t / THR_N, n-index t % THR_N
(c4's and c5's TiledMma); the 16-byte copy of A puts thread t at row t / (BK/4), chunk t % (BK/4).
"""
import re
from dataclasses import dataclass, field

from common.banks import analyze
from common.grading.hostprobe import Probe


# ---------------------------------------------------------------------------------------------
# c4: the swizzled sA tile
# ---------------------------------------------------------------------------------------------

@dataclass
class SaTile:
    BM: int
    BK: int
    STAGES: int
    THR_M: int
    THR_N: int
    offsets: dict = field(default_factory=dict)     # (stage, m) -> [offset for k in 0..BK-1]

    def at(self, m, k, s=0):
        return self.offsets[(s, m)][k]


def parse_sa(text):
    head = re.search(r"^tile (\d+) (\d+) (\d+) (\d+) (\d+)$", text, re.M)
    if not head:
        raise ValueError("the probe printed no 'tile' line")
    tile = SaTile(*(int(x) for x in head.groups()))
    for m in re.finditer(r"^sA (\d+) (\d+):(.*)$", text, re.M):
        tile.offsets[(int(m.group(1)), int(m.group(2)))] = [int(x) for x in m.group(3).split()]
    return tile


def _permutation_problem(t):
    size = t.BM * t.BK
    for s in range(t.STAGES):
        seen = {}
        for m in range(t.BM):
            for k, o in enumerate(t.offsets[(s, m)]):
                if not s * size <= o < (s + 1) * size:
                    return (f"element (m={m}, k={k}) of stage {s} lies at offset {o}, outside the stage's "
                            f"{size} floats [{s * size}, {(s + 1) * size}): it lands in another stage's tile")
                if o in seen:
                    return (f"elements {seen[o]} and (m={m}, k={k}) of stage {s} share offset {o}: sA is not a "
                            "permutation, one copy overwrites the other")
                seen[o] = (m, k)
    return ""


def _chunk_problem(t):
    for m in range(t.BM):
        row = t.offsets[(0, m)]
        for k0 in range(0, t.BK, 4):
            o = row[k0]
            if o % 4 or row[k0:k0 + 4] != [o, o + 1, o + 2, o + 3]:
                return (f"the 16-byte chunk (m={m}, k={k0}..{k0 + 3}) lands at offsets {row[k0:k0 + 4]}: its 4 floats "
                        "are no longer one aligned 16-byte run, so the 16-byte copy cannot write it whole")
    return ""


def _read32_problem(t):
    """The worklog's operand read: lane l of warp w reads sA(m, k), m = (32 w + l) / THR_N + THR_M i, 32 bits."""
    warps, bad, worst = t.THR_M * t.THR_N // 32, 0, None
    total = 0
    for w in range(warps):
        for i in range(t.BM // t.THR_M):
            for k in range(t.BK):
                rows = [(32 * w + l) // t.THR_N + t.THR_M * i for l in range(32)]
                acc = analyze([4 * t.at(m, k) for m in rows], width=4)
                total += 1
                if acc.ways > 1:
                    bad += 1
                    if worst is None or acc.ways > worst[0]:
                        worst = (acc.ways, w, k, sorted(set(rows)), acc)
    if not bad:
        return ""
    ways, w, k, rows, acc = worst
    banks = sorted({(4 * t.at(m, k) // 4) % 32 for m in rows})
    return (f"{ways}-way bank conflicts in the 32-bit reads of sA by the MMA layout: warp {w} at k = {k} reads rows "
            f"{', '.join(map(str, rows))}, and their words fall in bank(s) {', '.join(map(str, banks))}; "
            f"{bad} of {total} (warp, row, k) reads conflict")


def _copy_problem(t):
    """The 16-byte cp.async of A: thread t writes chunk t % (BK/4) of row t / (BK/4) (+ THREADS / (BK/4) per pass)."""
    per_row, threads = t.BK // 4, t.THR_M * t.THR_N
    for w in range(threads // 32):
        for p in range(t.BM // (threads // per_row)):
            lanes = [32 * w + l for l in range(32)]
            addr = [4 * t.at(x // per_row + p * threads // per_row, 4 * (x % per_row)) for x in lanes]
            acc = analyze(addr, width=16)
            if acc.ways > 1:
                rows = sorted({x // per_row + p * threads // per_row for x in lanes})
                return (f"{acc.ways}-way bank conflicts in the 16-byte copies into sA: warp {w} writes rows "
                        f"{rows[0]}..{rows[-1]} and a quarter warp's chunks share banks")
    return ""


def sa_verdict(outputs):
    """c4 "banks": (ok, reason) over every build of the probe (the default BK, then the others)."""
    for defines, text in outputs:
        t = parse_sa(text)
        where = f" (BK = {t.BK})"
        for check in (_permutation_problem, _chunk_problem, _read32_problem, _copy_problem):
            problem = check(t)
            if problem:
                return False, problem + where
    return True, ""


# ---------------------------------------------------------------------------------------------
# c5: the tiled MMA's partition of C and of sB
# ---------------------------------------------------------------------------------------------

@dataclass
class MmaTile:
    BM: int
    BN: int
    BK: int
    THR_M: int
    THR_N: int
    c_rows: dict = field(default_factory=dict)      # (thread, i) -> [(m, n) for j]
    b_cols: dict = field(default_factory=dict)      # lane -> [n for j] at k = 0


def parse_mma(text):
    head = re.search(r"^tile (\d+) (\d+) (\d+) (\d+) (\d+)$", text, re.M)
    if not head:
        raise ValueError("the probe printed no 'tile' line")
    tile = MmaTile(*(int(x) for x in head.groups()))
    counts = {}
    for m in re.finditer(r"^C (\d+) (-?\d+):(.*)$", text, re.M):
        t = int(m.group(1))
        i = counts[t] = counts.get(t, -1) + 1
        tile.c_rows[(t, i)] = [tuple(int(v) for v in p.split(",")) for p in m.group(3).split()]
    for m in re.finditer(r"^B (\d+):(.*)$", text, re.M):
        tile.b_cols[int(m.group(1))] = [int(p.split(",")[0]) for p in m.group(2).split()]
    return tile


def _spans(values):
    """'64..127' style summary of a sorted list of ints."""
    values, out, start = sorted(values), [], None
    for i, v in enumerate(values):
        if start is None:
            start = v
        if i + 1 == len(values) or values[i + 1] != v + 1:
            out.append(f"{start}..{v}" if v > start else f"{v}")
            start = None
    return ", ".join(out[:4]) + (", ..." if len(out) > 4 else "")


def _coverage_problem(t):
    owners = {}
    for (thread, _), row in t.c_rows.items():
        for mn in row:
            owners.setdefault(mn, []).append(thread)
    tile = {(m, n) for m in range(t.BM) for n in range(t.BN)}
    missing = tile - set(owners)
    twice = [mn for mn, who in owners.items() if len(who) > 1]
    outside = set(owners) - tile
    if not (missing or twice or outside):
        return ""
    parts = []
    if missing:
        cols = [n for (m, n) in missing if m == min(mm for mm, _ in missing)]
        parts.append(f"{len(missing)} element(s) of the {t.BM} x {t.BN} tile are computed by no thread (row "
                     f"{min(mm for mm, _ in missing)}: columns {_spans(cols)})")
    if twice:
        m0 = min(m for m, _ in twice)
        parts.append(f"{len(twice)} by more than one (row {m0}: columns {_spans([n for m, n in twice if m == m0])})")
    if outside:
        parts.append(f"{len(outside)} value(s) fall outside the tile")
    return "the MMA's values are not one per element of C: " + "; ".join(parts)


def _groups_problem(t):
    for (thread, i), row in sorted(t.c_rows.items()):
        ns = [n for _, n in row]
        for q in range(0, len(ns), 4):
            g = ns[q:q + 4]
            if len(g) < 4 or g[0] % 4 or g != list(range(g[0], g[0] + 4)):
                return (f"thread {thread}'s values in row {row[0][0]} are at columns {', '.join(map(str, ns))}: "
                        "not aligned groups of 4 adjacent columns in value order, so the epilogue cannot move "
                        "them as float4 (128-bit loads and stores of C)")
    return ""


def _b_read_problem(t):
    """Warp 0's reads of sB (n-contiguous, offset n + BN k) at k = 0: 16 bytes per group of 4 values where
    they are 4 adjacent, aligned columns, else 4 bytes per value."""
    lanes = range(32)
    n_values = len(t.b_cols[0])
    for q in range(0, n_values, 4):
        groups = [t.b_cols[l][q:q + 4] for l in lanes]
        wide = all(len(g) == 4 and g[0] % 4 == 0 and g == list(range(g[0], g[0] + 4)) for g in groups)
        reads = [(16, [4 * g[0] for g in groups])] if wide else \
            [(4, [4 * g[r] for g in groups]) for r in range(min(len(g) for g in groups))]
        for width, addr in reads:
            acc = analyze(addr, width=width)
            if acc.conflicts:
                return (f"{acc.ways}-way bank conflicts in warp 0's {8 * width}-bit reads of sB at one k (values "
                        f"{q}..{q + 3}: lanes 0..7 read columns {', '.join(str(a // 4) for a in addr[:8])})")
    return ""


def mma_verdict(outputs):
    """c5 "layout": (ok, reason)."""
    for defines, text in outputs:
        t = parse_mma(text)
        if not t.c_rows or not t.b_cols:
            return False, "the probe printed no partition (does c5::TiledMma still exist?)"
        for check in (_coverage_problem, _groups_problem, _b_read_problem):
            problem = check(t)
            if problem:
                return False, problem
    return True, ""


# c4's swizzle must hold for every BK its static_asserts allow: the default (32), and 64, where the
# bit that tells row m from row m + 1 is another one. (BK = 16 needs no swizzle at all: rows m and m+1
# are 16 floats apart, in different banks; any swizzle that keeps the checks above passes it.)
PROBES = {
    ("c4", "banks"): Probe("c4_sa_layout.cu", sa_verdict, builds=({}, {"BK": 64})),
    ("c5", "layout"): Probe("c5_mma_partition.cu", mma_verdict),
}
