"""The symptom of a wrong C, in words for the student (which rows, columns and block tiles hold the
wrong elements, and any pattern they repeat), never the fix. numpy only: the GPU worker (gpu.judge)
and the parent (grader.case_reason) both use it.

    mismatch_pattern(bad, tile=None) -> {"bad", "rows", "cols", "tiles", "summary"}
"""


def _ranges(idx):
    """[3, 4, 5, 9] -> '3-5, 9'."""
    out, start, prev = [], None, None
    for i in list(idx) + [None]:
        if start is None:
            start = prev = i
        elif i is not None and i == prev + 1:
            prev = i
        else:
            out.append(f"{start}" if start == prev else f"{start}-{prev}")
            start = prev = i
    return ", ".join(out)


def _lines(mask, n, what, tile):
    """Which rows (or columns) of C hold a wrong element, in words: all, a few, or a pattern that
    repeats with a period of the tile (every tile's rows 8-15, every other column, ...)."""
    idx = [i for i in range(n) if mask[i]]
    if len(idx) == n:
        return f"every {what}"
    if len(idx) == 1:
        return f"{what} {idx[0]}"
    if len(idx) <= 6:
        return f"{what}s {_ranges(idx)}"
    for period in (2, 4, 8, 16, 32, 64, 128, 256):
        if period >= n or (tile and period > tile):
            break
        pattern = [mask[i] for i in range(period)]
        if all(mask[i] == pattern[i % period] for i in range(n)) and 0 < sum(pattern) < period:
            if period == 2:
                return f"{'even' if pattern[0] else 'odd'} {what}s"
            return f"{what}s {_ranges([i for i in range(period) if pattern[i]])} of every {period}"
    return f"{len(idx)} of {n} {what}s"


def mismatch_pattern(bad, tile=None):
    """The symptom of a wrong C, for the student: which rows, columns and block tiles hold the wrong
    elements, and any pattern they repeat. `bad`: a boolean (M, N) array (wrong, unwritten or NaN
    elements); `tile`: the kernel's (BM, BN) block tile, or None. Returns {"bad", "rows", "cols",
    "tiles", "summary"}; summary is one phrase ("rows 8-15 of every 16, every column, all 4 of 4 block
    tiles") that names no fix. The GPU worker's judge() may put it in its verdict as "pattern"."""
    import numpy as np
    bad = np.asarray(bad, dtype=bool)
    M, N = bad.shape
    out = {"bad": int(bad.sum()), "rows": int(bad.any(1).sum()), "cols": int(bad.any(0).sum()), "tiles": None}
    if not out["bad"]:
        return {**out, "summary": "no wrong element"}
    bm, bn = tile if tile else (None, None)
    parts = [_lines(bad.any(1), M, "row", bm), _lines(bad.any(0), N, "column", bn)]
    if tile:
        tm, tn = -(-M // bm), -(-N // bn)
        hit = [(i, j) for i in range(tm) for j in range(tn) if bad[i * bm:(i + 1) * bm, j * bn:(j + 1) * bn].any()]
        out["tiles"] = len(hit)
        edge = all(i == tm - 1 or j == tn - 1 for i, j in hit)
        where = ", only edge ones (the last row or column of tiles)" if edge and len(hit) < tm * tn else ""
        parts.append(f"{len(hit)} of {tm * tn} block tiles{where}")
    return {**out, "summary": ", ".join(parts)}
