"""Lab 7c's host probes: what the student's file computes, printed on the CPU by probes/*.cu, judged here.

    PROBES                          {(part, check): Probe}: the programs in probes/ and their verdicts
    decode(d)                       -> {field: value} of a 64-bit wgmma shared-memory matrix descriptor
    desc_verdict(outputs)           the descriptors of the 128-byte-swizzled tiles (h1)
    tx_bytes(bm, bn, bk)            the bytes one stage's TMA boxes write (one A box, BN / 64 B panels)
    tx_verdict(outputs)             TX_BYTES at every tile the kernel's static_asserts allow (h2, h3)
    full_parity(t, stages), empty_parity(t, stages)   the model's own parities (the answer key)
    pipeline(stages, tiles, full, empty=None) -> None or (kind, words): the producer-consumer model
    parity_verdict(outputs)         full_parity (and empty_parity) through the model, STAGES = 4 and 3

Every reason names what the student's value does (which field holds what, which wait returns when),
never the value it should have.
"""
from common.grading.hostprobe import Probe

# ---------------------------------------------------------------------------------------------
# The descriptor (PTX ISA, wgmma "Matrix Descriptor"): the fields and the lab's two layouts
# ---------------------------------------------------------------------------------------------
FIELDS = {"start": (0, 14), "lbo": (16, 30), "sbo": (32, 46), "base": (49, 52), "mode": (62, 64)}
MODES = {0: "no swizzle", 1: "the 128-byte swizzle", 2: "the 64-byte swizzle", 3: "the 32-byte swizzle"}
SWIZZLE_128B = 1              # the mode of TMA's CU_TENSOR_MAP_SWIZZLE_128B layout, which h1 writes by hand
ROW_BYTES = 128               # one swizzled row: 64 halves
ATOM_ROWS = 8                 # 8 rows of 128 bytes: one swizzle atom, the step between 8-row groups
_USED = sum(((1 << (hi - lo)) - 1) << lo for lo, hi in FIELDS.values())


def decode(d):
    """{start, lbo, sbo, base, mode, stray}: the fields of descriptor d (start, lbo, sbo in 16-byte units)."""
    out = {name: (d >> lo) & ((1 << (hi - lo)) - 1) for name, (lo, hi) in FIELDS.items()}
    out["stray"] = d & ~_USED & ((1 << 64) - 1)
    return out


def expected_fields(addr, panel=None):
    """The fields the lab's layouts need: K-major (panel None; its LBO is not read by a 128-byte-swizzled
    K-major operand, whose instruction K never leaves a row) or MN-major with `panel` bytes between panels."""
    want = {"start": (addr >> 4) & 0x3FFF, "sbo": ATOM_ROWS * ROW_BYTES >> 4, "base": 0, "mode": SWIZZLE_128B}
    if panel is not None:
        want["lbo"] = panel >> 4
    return want


def _desc_problem(call, addr, got, want):
    """The first field of `got` that differs from `want`, in words (what the student's value does)."""
    if got["start"] != want["start"]:
        return (f"start address field: {call} holds {got['start']:#x}, which the tensor core reads as byte "
                f"address {16 * got['start']:#x} (the tile is at {addr:#x})")
    for name, words, step in (("sbo", "stride byte offset", "from one 8-row (8 K-row) group to the next"),
                              ("lbo", "leading byte offset", "from one 64-wide panel to the next")):
        if name in want and got[name] != want[name]:
            return (f"{words} field: {call} holds {16 * got[name]} bytes, the step the tensor core takes "
                    f"{step} of this operand")
    if got["base"]:
        return f"base offset field: {call} holds {got['base']}: the tiles start on 1024-byte boundaries"
    if got["mode"] != want["mode"]:
        return (f"swizzle mode field: {call} holds {got['mode']} ({MODES[got['mode']]}), but the tiles are "
                "stored as TMA's CU_TENSOR_MAP_SWIZZLE_128B writes them (h1's XOR over 8 rows of 128 bytes)")
    if got["stray"]:
        return f"{call} sets bits outside every field ({got['stray']:#x})"
    return None


def parse_desc(text):
    k, mn = [], []
    for line in text.split("\n"):
        f = line.split()
        if f and f[0] == "k" and len(f) == 3:
            k.append((int(f[1]), int(f[2])))
        elif f and f[0] == "mn" and len(f) == 4:
            mn.append((int(f[1]), int(f[2]), int(f[3])))
    return k, mn


def desc_verdict(outputs):
    k, mn = parse_desc(outputs[0][1])
    if not k or not mn:
        return False, "the descriptor probe printed nothing to read (are desc_k_major and desc_mn_major defined?)"
    problems = []
    for addr, d in k:
        p = _desc_problem(f"desc_k_major({addr:#x})", addr, decode(d), expected_fields(addr))
        if p:
            problems.append(f"K-major (A): {p}")
            break
    for addr, panel, d in mn:
        p = _desc_problem(f"desc_mn_major({addr:#x}, {panel})", addr, decode(d), expected_fields(addr, panel))
        if p:
            problems.append(f"MN-major (B): {p}")
            break
    return (not problems), "; ".join(problems)


# ---------------------------------------------------------------------------------------------
# expect_tx
# ---------------------------------------------------------------------------------------------
HALF_BYTES = 2


def tx_bytes(bm, bn, bk):
    """What TMA writes into one stage: the A box (BK x BM) and BN / 64 B boxes (64 x BK), FP16, whole boxes
    (zeros past the matrix edge count too)."""
    return (bk * bm + (bn // 64) * 64 * bk) * HALF_BYTES


def parse_tx(text):
    for line in text.split("\n"):
        f = line.split()
        if f and f[0] == "tx" and len(f) == 5:
            return tuple(int(x) for x in f[1:])
    return None


def tx_verdict(outputs):
    rows = [parse_tx(out) for _, out in outputs]
    if any(r is None for r in rows):
        return False, "the expect_tx probe printed nothing to read (is TX_BYTES defined as a constant?)"
    got = {(bm, bn): tx for bm, bn, bk, tx in rows}
    want = {(bm, bn): tx_bytes(bm, bn, bk) for bm, bn, bk, _ in rows}
    bad = [k for k in got if got[k] != want[k]]
    if not bad:
        return True, ""
    shapes = ", ".join(f"{got[k]} at BM = {k[0]}, BN = {k[1]}" for k in got)
    if all(got[k] <= 0 for k in got):
        return False, (f"TX_BYTES is {got[bad[0]]}: the arrival announces no bytes, so each phase completes on the "
                       "arrival alone, before TMA has written anything, and the bytes that land count against the "
                       "next phase")
    if all(2 * got[k] == want[k] for k in got):
        return False, (f"TX_BYTES ({shapes}) is exactly half the bytes a stage's loads write at every tile shape: "
                       "each phase completes while half the stage is still in flight")
    same_bm = [(a, b) for a in got for b in got if a[0] == b[0] and a[1] < b[1]]
    for a, b in same_bm:
        if got[a] == got[b] and want[a] != want[b]:
            return False, (f"TX_BYTES ({shapes}) does not change with BN (BM = {a[0]}, BN = {a[1]} and {b[1]}), "
                           "though the B panels a stage loads do: each phase completes before B has landed")
    k = bad[0]
    if got[k] > want[k]:
        return False, (f"TX_BYTES ({shapes}) is more than the bytes a stage's loads write at BM = {k[0]}, BN = {k[1]}: "
                       "the phase waits for bytes that never come and never completes (a hang)")
    return False, (f"TX_BYTES ({shapes}) is less than the bytes a stage's loads write at BM = {k[0]}, BN = {k[1]}: "
                   "the phase completes before all of the stage has landed (stale or half-written tiles)")


# ---------------------------------------------------------------------------------------------
# The phase parities, through a model of the pipeline
# ---------------------------------------------------------------------------------------------

def _passes(completed, parity):
    """mbarrier.try_wait.parity: true once the phase of that parity is over, i.e. the barrier's current
    (incomplete) phase, number `completed`, has the other parity. A fresh barrier (0 completed) passes a
    wait on parity 1 at once."""
    return (completed & 1) != parity


def full_parity(t, stages):
    """The model's FULL parity: tile t is fill t / STAGES of its stage, which completes that phase."""
    return (t // stages) & 1


def empty_parity(t, stages):
    """The model's EMPTY parity: fill j needs release j - 1, whose phase has parity (j - 1) & 1; for j = 0
    that is the parity of the phase "before" phase 0 (1), which a fresh barrier passes at once."""
    return ((t // stages) - 1) & 1


def pipeline(stages, tiles, full, empty=None):
    """Run the producer-consumer loop of h2 / h3 with the student's parities; None if every wait behaves,
    else (kind, words): kind "early-full" (consumers read a stage before its fill landed), "early-empty"
    (the producer refills a stage still being read), "hang" (no one can move), "not-a-parity".
    full[t], empty[t]: the parities for tile t; empty None: the reference's EMPTY wait (h2, whose
    producer refills only after a barrier, is h3 with a right EMPTY wait).

    The schedule is the adversary of early returns: the producer runs as far ahead as its waits let it,
    the consumers next, and a fill lands only when nothing else can move (oldest first)."""
    for name, seq in (("full_parity", full), ("empty_parity", empty or [])):
        for t, p in enumerate(seq):
            if p not in (0, 1):
                return "not-a-parity", f"{name}({t}) = {p}: a phase parity is 0 or 1"
    if empty is None:
        empty = [empty_parity(t, stages) for t in range(tiles)]
    full_done = [0] * stages          # completed phases of FULL[s] = fills of s that have landed
    empty_done = [0] * stages         # completed phases of EMPTY[s] = releases of s by the consumers
    in_flight = []                    # (tile, stage) fills issued, not landed, oldest first
    tp = tc = 0                       # the producer's and the consumers' next tile
    while tc < tiles:
        moved = False
        if tp < tiles:
            s, j = tp % stages, tp // stages
            if _passes(empty_done[s], empty[tp]):
                if empty_done[s] < j:
                    return "early-empty", (
                        f"tile {tp} (stage {s}, its fill {j}): the producer's EMPTY wait on parity {empty[tp]} "
                        f"returns before the consumers released tile {tp - stages}: TMA overwrites a stage "
                        "still being read")
                in_flight.append((tp, s))
                tp += 1
                moved = True
        if not moved:
            s, j = tc % stages, tc // stages
            if _passes(full_done[s], full[tc]):
                if full_done[s] <= j:
                    before = f"tile {tc - stages}'s data" if tc >= stages else "what the stage held before"
                    return "early-full", (
                        f"tile {tc} (stage {s}, its fill {j}): the consumers' FULL wait on parity {full[tc]} "
                        f"returns before that fill has landed: they read the stage while TMA still writes it, "
                        f"or {before}: wrong results that come and go")
                if tc > 0:
                    empty_done[(tc - 1) % stages] += 1      # both consumers release the previous stage
                tc += 1
                moved = True
        if not moved and in_flight:
            _, s = in_flight.pop(0)
            full_done[s] += 1
            moved = True
        if not moved:
            s_p, s_c = tp % stages, tc % stages
            who = (f"the producer waits on EMPTY[{s_p}] (parity {empty[tp]}) for tile {tp}, " if tp < tiles else "")
            return "hang", (f"hang: {who}the consumers wait on FULL[{s_c}] (parity {full[tc]}) for tile {tc}, and "
                            "nothing else can move: a wait that never completes")
    return None


def parse_parity(text):
    lines = [l.split() for l in text.split("\n") if l.strip()]
    if not lines or lines[0][0] != "stages":
        return None
    stages = int(lines[0][1])
    rows = [[int(x) for x in l[1:]] for l in lines[1:]]
    full = [r[0] for r in rows]
    empty = [r[1] for r in rows] if rows and len(rows[0]) > 1 else None
    return stages, full, empty


def parity_verdict(outputs):
    for _, out in outputs:
        parsed = parse_parity(out)
        if parsed is None:
            return False, "the parity probe printed nothing to read (are full_parity / empty_parity defined?)"
        stages, full, empty = parsed
        problem = pipeline(stages, len(full), full, empty)
        if problem:
            return False, f"STAGES = {stages}: {problem[1]}"
    return True, ""


# The expect_tx probe builds every tile (BM, BN) the kernel's static_asserts allow (BK is 64 in both),
# so a table of the three values once probed no longer passes: only the count itself does. Which tiles
# compile is the kernels' rule; tests/test_grading.py compiles every candidate and holds these lists to it.
TX_TILES = {"h2": [(64, 64), (64, 128), (64, 256), (128, 64), (128, 128), (192, 64), (256, 64)],
            "h3": [(128, 64), (128, 128), (128, 256), (256, 64), (256, 128)]}


def _tiles(kernel):
    return tuple({"BM": bm, "BN": bn} for bm, bn in TX_TILES[kernel])


PROBES = {
    ("h1", "desc"): Probe("desc.cu", desc_verdict),
    ("h2", "tx"): Probe("tx.cu", tx_verdict, builds=_tiles("h2")),
    ("h2", "parity"): Probe("parity.cu", parity_verdict, builds=({}, {"STAGES": 3})),
    ("h3", "tx"): Probe("tx.cu", tx_verdict, builds=_tiles("h3")),
    ("h3", "parity"): Probe("parity.cu", parity_verdict, builds=({"PROBE_EMPTY": 1}, {"PROBE_EMPTY": 1, "STAGES": 3})),
}
