"""Fragment model: which lane of a warp holds which element of a tensor-core tile. No GPU needed.

    lane_parts(lane) -> (g, t)               groupID = lane >> 2, threadID_in_group = lane & 3
    mma_m16n8k16_a(lane) -> [(reg, half, row, col), ...]   its 8 halves of A (16x16, row-major)
    mma_m16n8k16_b(lane)                     its 4 halves of B (16x8, K x N: "col" operand)
    mma_m16n8k16_c(lane)                     its 4 floats of C and D (16x8); half is None
    mma_m16n8k8_tf32_a/_b/_c(lane)           TF32: A 16x8, B 8x8, C 16x8, one value per register
    FRAGMENTS                                name -> (function, tile shape), e.g. "m16n8k16.a"
    owner_of(name, row, col) -> (lane, reg, half)   and owner_of_a / _b / _c for m16n8k16
    lane_tile(name) -> (lanes, regs, halves) numpy arrays in the tile's shape (half -1: none)
    lane_tile_text(lanes) -> the lane numbers as an aligned text grid
    ldmatrix_row_of_lane(lane, num) -> (matrix, row) or None   whose row address a lane supplies
    ldmatrix_dest(lane, num, trans) -> [(reg, half, matrix, row, col), ...]   what it receives
    simulate_ldmatrix(row_start, num, trans) -> {(lane, reg, half): (tile_row, tile_col)}
    ldmatrix_a_x4_address(lane), ldmatrix_b_x2_trans_address(lane), ldmatrix_b_x2_address(lane)
                                             the standard addressing of A and B tiles (tile row, col)
    simulate_ldmatrix_b32(row_start, num, trans) -> {(lane, reg): (row, col) or None}   ldmatrix .b16 on
                                             32-bit data (TF32 kept as FP32): None = halves of two values
    ldmatrix_tf32_a_x4_address(lane)         lane l -> (l % 16, (l / 16) * 4): the m16n8k8 TF32 A fragment
    ldmatrix_b32_mismatches(address, fragment, num, trans) -> lines where it differs from the mma's
    GPU probe (kernels/probe_fragments.cu in lab 7; the lab's GPU test runs it, these compare).
    PROBE_SIZES / PROBE_DTYPES: each entry point's output length and type; one warp, one launch.
    check_ldmatrix_probe(words), check_mma_f16_probe(words), check_mma_tf32_probe(words)
        -> list of mismatches, one line each; [] means every lane matches the model
    wmma_layout_from_probe(values) -> {fragment: {"per_lane", "holders", "lanes"}}: WMMA as measured
    check_wmma_probe(values) -> list of problems (an element nobody holds, a value that is no tag)
    model_probe_output(name) -> the words the model predicts for probe `name` (not probe_wmma)
    check_probe(entry, output) -> the right check for that entry point; PROBE_DTYPES says how to read it

Sources: PTX ISA, "Matrix fragments for mma.m16n8k16 / mma.m16n8k8" and "ldmatrix"; the closed
forms below are those of tooling-facts section 3, derived from CUTLASS's cute/atom/mma_traits_sm80.hpp
and copy_traits_sm75.hpp (NVIDIA), which encode the same figures as (thread, value) layouts.
Conventions: a 16-bit operand register j holds elements 2j (low 16 bits, half 0) and 2j+1 (high,
half 1). Rows and columns are those of the operand as the instruction sees it: B is K x N.
"""
import numpy as np

# ---------------------------------------------------------------------------------------------
# mma.sync fragments
# ---------------------------------------------------------------------------------------------


def lane_parts(lane):
    """The PTX ISA's names: groupID g picks the row (0..7), threadID_in_group t picks the column pair."""
    if not 0 <= lane < 32:
        raise ValueError(f"lane {lane} is not 0..31")
    return lane >> 2, lane & 3


def mma_m16n8k16_a(lane):
    """A (16x16 f16, row-major): element i -> row g + 8*((i>>1)&1), col 2t + (i&1) + 8*(i>>2).
    a0,a1 = A[g][2t..2t+1]; a2,a3 = A[g+8][2t..]; a4,a5 = A[g][2t+8..]; a6,a7 = A[g+8][2t+8..]."""
    g, t = lane_parts(lane)
    return [(i // 2, i % 2, g + 8 * ((i >> 1) & 1), 2 * t + (i & 1) + 8 * (i >> 2)) for i in range(8)]


def mma_m16n8k16_b(lane):
    """B (16x8 f16, K x N): element i -> k = 2t + (i&1) + 8*(i>>1), n = g.
    b0,b1 = B[2t..2t+1][g]; b2,b3 = B[2t+8..2t+9][g]: a lane holds a piece of one column."""
    g, t = lane_parts(lane)
    return [(i // 2, i % 2, 2 * t + (i & 1) + 8 * (i >> 1), g) for i in range(4)]


def mma_m16n8k16_c(lane):
    """C and D (16x8 f32): element i -> row g + 8*(i>>1), col 2t + (i&1). c0,c1 = C[g][2t..]; c2,c3 = C[g+8][2t..]."""
    g, t = lane_parts(lane)
    return [(i, None, g + 8 * (i >> 1), 2 * t + (i & 1)) for i in range(4)]


def mma_m16n8k8_tf32_a(lane):
    """A (16x8 tf32): element i -> row g + 8*(i&1), col t + 4*(i>>1). Rows first, unlike C:
    a0 = A[g][t], a1 = A[g+8][t], a2 = A[g][t+4], a3 = A[g+8][t+4]."""
    g, t = lane_parts(lane)
    return [(i, None, g + 8 * (i & 1), t + 4 * (i >> 1)) for i in range(4)]


def mma_m16n8k8_tf32_b(lane):
    """B (8x8 tf32, K x N): element i -> k = t + 4*i, n = g. b0 = B[t][g], b1 = B[t+4][g]."""
    g, t = lane_parts(lane)
    return [(i, None, t + 4 * i, g) for i in range(2)]


def mma_m16n8k8_tf32_c(lane):
    """C and D of m16n8k8: the same layout as m16n8k16's."""
    return mma_m16n8k16_c(lane)


FRAGMENTS = {
    "m16n8k16.a": (mma_m16n8k16_a, (16, 16)),
    "m16n8k16.b": (mma_m16n8k16_b, (16, 8)),
    "m16n8k16.c": (mma_m16n8k16_c, (16, 8)),
    "m16n8k8.tf32.a": (mma_m16n8k8_tf32_a, (16, 8)),
    "m16n8k8.tf32.b": (mma_m16n8k8_tf32_b, (8, 8)),
    "m16n8k8.tf32.c": (mma_m16n8k8_tf32_c, (16, 8)),
}


def _fragment(name):
    if name not in FRAGMENTS:
        raise ValueError(f"no fragment {name!r}; choose one of {', '.join(FRAGMENTS)}")
    return FRAGMENTS[name]


def owner_of(name, row, col):
    """(lane, reg, half) that holds element (row, col) of fragment `name`'s tile."""
    fn, _ = _fragment(name)
    for lane in range(32):
        for reg, half, r, c in fn(lane):
            if (r, c) == (row, col):
                return lane, reg, half
    raise ValueError(f"({row}, {col}) is outside the {name} tile")


def owner_of_a(row, col):
    return owner_of("m16n8k16.a", row, col)


def owner_of_b(row, col):
    return owner_of("m16n8k16.b", row, col)


def owner_of_c(row, col):
    return owner_of("m16n8k16.c", row, col)


def lane_tile(name):
    """Three int arrays in the tile's shape: the lane, register and half (-1: a 32-bit register)
    holding each element. lanes is the picture the fragment explorer draws; -1 would mean nobody."""
    fn, shape = _fragment(name)
    lanes, regs, halves = (np.full(shape, -1, dtype=int) for _ in range(3))
    for lane in range(32):
        for reg, half, r, c in fn(lane):
            lanes[r, c], regs[r, c], halves[r, c] = lane, reg, -1 if half is None else half
    return lanes, regs, halves


def lane_tile_text(lanes):
    """A tile of lane numbers as text, one row per line (-1 prints as '.')."""
    return "\n".join(" ".join(f"{int(x):2d}" if x >= 0 else " ." for x in row) for row in np.asarray(lanes))


# ---------------------------------------------------------------------------------------------
# ldmatrix.sync.aligned.m8n8.{x1,x2,x4}{.trans}.shared.b16
# ---------------------------------------------------------------------------------------------
# Each of the num 8x8 matrices is 8 rows of 8 b16 values (16 bytes). Lane l supplies the address
# of row l%8 of matrix l/8; .x1 reads lanes 0-7, .x2 lanes 0-15, .x4 all 32 (the other lanes'
# addresses are ignored on sm_80+). Register j of every lane receives a piece of matrix j:
#   no .trans: lane l gets M_j[l/4][2(l%4)] (low half) and M_j[l/4][2(l%4)+1] (high half)
#   .trans:    lane l gets M_j[2(l%4)][l/4] (low half) and M_j[2(l%4)+1][l/4] (high half)
# where M_j[r][c] is element c of the row whose address lane 8j + r supplied.

def ldmatrix_row_of_lane(lane, num):
    """(matrix, row) whose address `lane` supplies to an ldmatrix .x{num}, or None if ignored."""
    if num not in (1, 2, 4):
        raise ValueError("ldmatrix loads 1, 2 or 4 matrices")
    return (lane // 8, lane % 8) if lane < 8 * num else None


def ldmatrix_dest(lane, num, trans=False):
    """[(reg, half, matrix, row, col)]: which element of which addressed matrix lands in each half."""
    g, t = lane_parts(lane)
    out = []
    for j in range(num):
        for half in (0, 1):
            r, c = (2 * t + half, g) if trans else (g, 2 * t + half)
            out.append((j, half, j, r, c))
    return out


def simulate_ldmatrix(row_start, num, trans=False):
    """What an ldmatrix delivers when lane l's address points at tile position row_start(l) =
    (tile_row, tile_col) and the 8 elements of that row are tile_col .. tile_col+7 of tile_row.
    Returns {(lane, reg, half): (tile_row, tile_col)} for every lane and register."""
    supplier = {ldmatrix_row_of_lane(l, num): l for l in range(32) if ldmatrix_row_of_lane(l, num) is not None}
    got = {}
    for lane in range(32):
        for reg, half, m, r, c in ldmatrix_dest(lane, num, trans):
            tr, tc = row_start(supplier[(m, r)])
            got[(lane, reg, half)] = (tr, tc + c)
    return got


def ldmatrix_a_x4_address(lane):
    """Standard .x4 addressing of a 16x16 row-major A tile: lane l -> &As[l%16][(l/16)*8].
    Matrices 0..3 are then the tile's quarters (rows 0-7 | 8-15) x (cols 0-7 | 8-15), in the
    order of a0a1, a2a3, a4a5, a6a7 (tooling-facts 3.3)."""
    return lane % 16, (lane // 16) * 8


def ldmatrix_b_x2_trans_address(lane):
    """Standard .x2.trans addressing of a 16x8 B tile stored K-major (Bs[k][n], n contiguous):
    lane l -> &Bs[l%16][0]; r0 = b0b1, r1 = b2b3."""
    return lane % 16, 0


def ldmatrix_b_x2_address(lane):
    """Standard .x2 addressing of B stored N-major (Bs[n][k], k contiguous): lane l -> &Bs[l%8][((l/8)%2)*8]."""
    return lane % 8, ((lane // 8) % 2) * 8



# ldmatrix .b16 on 32-bit data (TF32 operands kept as FP32 in shared memory): a 16-byte row is 4
# 32-bit values, and the two halves a lane receives in one register are 2c and 2c+1 of the row, i.e.
# both halves of value c. Without .trans every register is one whole 32-bit value; with .trans a
# register's halves come from two different rows: half of one value and half of another.

def simulate_ldmatrix_b32(row_start, num, trans=False):
    """What an ldmatrix .b16 delivers when lane l's row address points at 32-bit element
    row_start(l) = (tile_row, tile_col) and the row's 4 values are tile_col .. tile_col+3.
    Returns {(lane, reg): (tile_row, tile_col)} for a register that holds one whole 32-bit value,
    or None where its two halves come from different values (.trans on 32-bit data)."""
    halves = simulate_ldmatrix(lambda l: (row_start(l)[0], 2 * row_start(l)[1]), num, trans)
    out = {}
    for lane in range(32):
        for reg in range(num):
            (r0, c0), (r1, c1) = halves[(lane, reg, 0)], halves[(lane, reg, 1)]
            whole = r0 == r1 and c0 % 2 == 0 and c1 == c0 + 1
            out[(lane, reg)] = (r0, c0 // 2) if whole else None
    return out


def ldmatrix_tf32_a_x4_address(lane):
    """The .x4 addressing that makes ldmatrix .b16 deliver the m16n8k8 TF32 A fragment of a 16x8
    row-major FP32 tile: lane l -> &As[l % 16][(l / 16) * 4] (matrices: rows 0-7 | 8-15 of k 0-3,
    then of k 4-7, the order of a0, a1, a2, a3)."""
    return lane % 16, (lane // 16) * 4


def ldmatrix_b32_mismatches(address, fragment="m16n8k8.tf32.a", num=4, trans=False):
    """Lines, one per register that differs from the mma fragment, when ldmatrix .b16 with the given
    addressing loads a 32-bit operand tile; [] means the addressing delivers the fragment."""
    fn, _ = _fragment(fragment)
    got = simulate_ldmatrix_b32(address, num, trans)
    bad = []
    for lane in range(32):
        for reg, _half, row, col in fn(lane):
            if (lane, reg) not in got:
                bad.append(f"lane {lane} r{reg}: an .x{num} loads no register {reg}")
                continue
            have = got[(lane, reg)]
            if have != (row, col):
                bad.append(f"lane {lane} r{reg}: gets {'two halves of different values' if have is None else f'[{have[0]}][{have[1]}]'}, "
                           f"the mma wants [{row}][{col}]")
    return bad

# ---------------------------------------------------------------------------------------------
# The GPU probe: output layouts of kernels/probe_fragments.cu, and the comparisons
# ---------------------------------------------------------------------------------------------
# probe_ldmatrix(unsigned* out): out[variant][lane][4 regs], variants in LDMATRIX_VARIANTS order.
#   Shared tile of 40 rows x 8 b16: rows 0..31 hold tag R*8 + c, rows 32..39 ("poison") hold
#   0x8000 | (R*8 + c). Lane l points at row l if it supplies an address (l < 8*num), else at
#   poison row 32 + l%8: a lane whose address the hardware should ignore shows up as poison.
#   Registers an .x1/.x2 does not write are left 0xFFFFFFFF.
# probe_mma_f16(unsigned* out): out[lane][18] = a0..a3, b0 b1 (raw f16x2, from ldmatrix .x4 and
#   .x2.trans with the standard addressing), then three m16n8k16 results (4 f32 bits each):
#   A.S0, A.S1 with A[r][k] = r*16 + k and selectors S0[k][n] = (k == n), S1[k][n] = (k == n+8),
#   and I.B with I the 16x16 identity and B[k][n] = k*8 + n.
# probe_mma_tf32(unsigned* out): out[lane][14] = a0..a3, b0 b1 (f32 bits, ldmatrix on 32-bit data),
#   then A.I8 and J.B (4 f32 each): A[r][k] = r*8 + k (16x8), B[k][n] = k*8 + n (8x8),
#   I8 the 8x8 identity, J[m][k] = (m % 8 == k).
# probe_wmma(float* out): out[fragment][lane][16 slots], fragments in WMMA_FRAGMENTS order, x[i]
#   after load_matrix_sync of a 16x16 tile whose element (r, c) is r*16 + c; unused slots -1.
LDMATRIX_VARIANTS = [(1, False), (2, False), (4, False), (1, True), (2, True), (4, True)]
LDMATRIX_POISON = 0x8000
MMA_F16_WORDS = 18
MMA_TF32_WORDS = 14
WMMA_FRAGMENTS = ["matrix_a.row_major", "matrix_b.row_major", "matrix_b.col_major", "accumulator.row_major"]
WMMA_SLOTS = 16
PROBE_DTYPES = {"probe_ldmatrix": np.uint32, "probe_mma_f16": np.uint32, "probe_mma_tf32": np.uint32,
                "probe_wmma": np.float32}
PROBE_SIZES = {"probe_ldmatrix": len(LDMATRIX_VARIANTS) * 32 * 4, "probe_mma_f16": 32 * MMA_F16_WORDS,
               "probe_mma_tf32": 32 * MMA_TF32_WORDS, "probe_wmma": len(WMMA_FRAGMENTS) * 32 * WMMA_SLOTS}


def probe_ldmatrix_row(lane, num):
    """The tile row the probe's lane points at (mirrors the kernel)."""
    return lane if lane < 8 * num else 32 + lane % 8


def _tag_text(tag):
    if tag & LDMATRIX_POISON:
        return f"poison row {(tag & 0x7FFF) // 8} (an ignored lane's address was used)"
    return f"row {tag // 8} col {tag % 8}"


def check_ldmatrix_probe(words):
    """Compare probe_ldmatrix's output with the ldmatrix model; [] if every lane matches."""
    w = np.asarray(words, dtype=np.uint32).reshape(len(LDMATRIX_VARIANTS), 32, 4)
    bad = []
    for v, (num, trans) in enumerate(LDMATRIX_VARIANTS):
        name = f"ldmatrix.x{num}{'.trans' if trans else ''}"
        want = simulate_ldmatrix(lambda l: (probe_ldmatrix_row(l, num), 0), num, trans)
        for (lane, reg, half), (r, c) in sorted(want.items()):
            got = (int(w[v, lane, reg]) >> (16 * half)) & 0xFFFF
            if got != r * 8 + c:
                bad.append(f"{name} lane {lane} reg {reg} {'high' if half else 'low'}: holds {_tag_text(got)}, "
                           f"model says row {r} col {c}")
    return bad


def _halves(word):
    """The two f16 values of a 32-bit register, as floats (low, high)."""
    return np.array([word], dtype=np.uint32).view(np.float16).astype(float).tolist()


def _float(word):
    return float(np.array([word], dtype=np.uint32).view(np.float32)[0])


def _compare(bad, what, lane, got, want):
    if got != want:
        bad.append(f"{what} lane {lane}: got {got:g}, model says {want:g}")


def check_mma_f16_probe(words):
    """Compare probe_mma_f16's output with the m16n8k16 model; [] if every lane matches."""
    w = np.asarray(words, dtype=np.uint32).reshape(32, MMA_F16_WORDS)
    bad = []
    for lane in range(32):
        for reg, half, r, k in mma_m16n8k16_a(lane):        # A[r][k] = r*16 + k
            _compare(bad, f"A reg {reg} half {half} (ldmatrix.x4)", lane, _halves(w[lane, reg])[half], r * 16 + k)
        for reg, half, k, n in mma_m16n8k16_b(lane):        # B[k][n] = k*8 + n
            _compare(bad, f"B reg {reg} half {half} (ldmatrix.x2.trans)", lane, _halves(w[lane, 4 + reg])[half], k * 8 + n)
        for i, _, r, n in mma_m16n8k16_c(lane):
            _compare(bad, f"D=A.S0 element {i}", lane, _float(w[lane, 6 + i]), r * 16 + n)
            _compare(bad, f"D=A.S1 element {i}", lane, _float(w[lane, 10 + i]), r * 16 + n + 8)
            _compare(bad, f"D=I.B element {i}", lane, _float(w[lane, 14 + i]), r * 8 + n)
    return bad


def check_mma_tf32_probe(words):
    """Compare probe_mma_tf32's output with the m16n8k8 TF32 model; [] if every lane matches."""
    w = np.asarray(words, dtype=np.uint32).reshape(32, MMA_TF32_WORDS)
    bad = []
    for lane in range(32):
        for reg, _, r, k in mma_m16n8k8_tf32_a(lane):       # A[r][k] = r*8 + k
            _compare(bad, f"A reg {reg}", lane, _float(w[lane, reg]), r * 8 + k)
        for reg, _, k, n in mma_m16n8k8_tf32_b(lane):       # B[k][n] = k*8 + n
            _compare(bad, f"B reg {reg}", lane, _float(w[lane, 4 + reg]), k * 8 + n)
        for i, _, r, n in mma_m16n8k8_tf32_c(lane):
            _compare(bad, f"D=A.I element {i}", lane, _float(w[lane, 6 + i]), r * 8 + n)
            _compare(bad, f"D=J.B element {i}", lane, _float(w[lane, 10 + i]), (r % 8) * 8 + n)
    return bad


def wmma_layout_from_probe(values):
    """WMMA's fragment layout as measured: for each fragment type,
    per_lane[lane] = [(row, col) of x[0], x[1], ...], holders[(row, col)] = [(lane, i), ...] and
    lanes = 16x16 array of the lowest lane holding each element (-1: nobody)."""
    v = np.asarray(values, dtype=np.float32).reshape(len(WMMA_FRAGMENTS), 32, WMMA_SLOTS)
    out = {}
    for f, name in enumerate(WMMA_FRAGMENTS):
        per_lane, holders, lanes = [], {}, np.full((16, 16), -1, dtype=int)
        for lane in range(32):
            elems = []
            for i in range(WMMA_SLOTS):
                x = float(v[f, lane, i])
                if x < 0:                                    # slot beyond num_elements
                    break
                r, c = divmod(int(x), 16)
                elems.append((r, c))
                holders.setdefault((r, c), []).append((lane, i))
                if lanes[r, c] < 0:
                    lanes[r, c] = lane
            per_lane.append(elems)
        out[name] = {"per_lane": per_lane, "holders": holders, "lanes": lanes}
    return out


def check_wmma_probe(values):
    """What must hold whatever WMMA's (unspecified) layout is: every value a tag 0..255 and every
    element of each 16x16 tile held by at least one lane. [] if so."""
    v = np.asarray(values, dtype=np.float32).reshape(len(WMMA_FRAGMENTS), 32, WMMA_SLOTS)
    bad = []
    for f, name in enumerate(WMMA_FRAGMENTS):
        used = v[f][v[f] >= 0]
        if not np.all((used == np.round(used)) & (used <= 255)):
            bad.append(f"{name}: values that are no tag: {sorted(set(used[(used != np.round(used)) | (used > 255)].tolist()))[:5]}")
    if not bad:
        for name, lay in wmma_layout_from_probe(values).items():
            missing = int((lay["lanes"] < 0).sum())
            if missing:
                bad.append(f"{name}: {missing} of 256 elements held by no lane")
    return bad


def _f16_pair(lo, hi):
    return int(np.array([lo, hi], dtype=np.float16).view(np.uint32)[0])


def _f32_bits(x):
    return int(np.array([x], dtype=np.float32).view(np.uint32)[0])


def model_probe_output(name):
    """The output the model predicts for probe `name` ("probe_ldmatrix", "probe_mma_f16",
    "probe_mma_tf32"), word for word: for a side-by-side view, and to test the checks."""
    if name == "probe_ldmatrix":
        w = np.full((len(LDMATRIX_VARIANTS), 32, 4), 0xFFFFFFFF, dtype=np.uint32)
        for v, (num, trans) in enumerate(LDMATRIX_VARIANTS):
            got = simulate_ldmatrix(lambda l: (probe_ldmatrix_row(l, num), 0), num, trans)
            for lane in range(32):
                for reg in range(num):
                    lo, hi = (r * 8 + c for r, c in (got[(lane, reg, 0)], got[(lane, reg, 1)]))
                    w[v, lane, reg] = lo | (hi << 16)
        return w.reshape(-1)
    if name == "probe_mma_f16":
        w = np.zeros((32, MMA_F16_WORDS), dtype=np.uint32)
        for lane in range(32):
            a = {(reg, half): r * 16 + k for reg, half, r, k in mma_m16n8k16_a(lane)}
            b = {(reg, half): k * 8 + n for reg, half, k, n in mma_m16n8k16_b(lane)}
            w[lane, 0:4] = [_f16_pair(a[(j, 0)], a[(j, 1)]) for j in range(4)]
            w[lane, 4:6] = [_f16_pair(b[(j, 0)], b[(j, 1)]) for j in range(2)]
            for i, _, r, n in mma_m16n8k16_c(lane):
                w[lane, 6 + i], w[lane, 10 + i], w[lane, 14 + i] = (
                    _f32_bits(r * 16 + n), _f32_bits(r * 16 + n + 8), _f32_bits(r * 8 + n))
        return w.reshape(-1)
    if name == "probe_mma_tf32":
        w = np.zeros((32, MMA_TF32_WORDS), dtype=np.uint32)
        for lane in range(32):
            for reg, _, r, k in mma_m16n8k8_tf32_a(lane):
                w[lane, reg] = _f32_bits(r * 8 + k)
            for reg, _, k, n in mma_m16n8k8_tf32_b(lane):
                w[lane, 4 + reg] = _f32_bits(k * 8 + n)
            for i, _, r, n in mma_m16n8k8_tf32_c(lane):
                w[lane, 6 + i], w[lane, 10 + i] = _f32_bits(r * 8 + n), _f32_bits((r % 8) * 8 + n)
        return w.reshape(-1)
    raise ValueError(f"the model predicts nothing for {name!r} (WMMA's layout is unspecified)")


def check_probe(entry, output):
    """The comparison for one probe entry point's output (PROBE_SIZES[entry] values of
    PROBE_DTYPES[entry]): a list of mismatches, [] if every lane matches the model."""
    checks = {"probe_ldmatrix": check_ldmatrix_probe, "probe_mma_f16": check_mma_f16_probe,
              "probe_mma_tf32": check_mma_tf32_probe, "probe_wmma": check_wmma_probe}
    if entry not in checks:
        raise ValueError(f"no probe {entry!r}; the probes are {', '.join(checks)}")
    output = np.asarray(output).reshape(-1)
    if output.size != PROBE_SIZES[entry]:
        return [f"{entry}: {output.size} values, the probe writes {PROBE_SIZES[entry]}"]
    return checks[entry](output.view(PROBE_DTYPES[entry]) if output.dtype != PROBE_DTYPES[entry] else output)
