"""What the notebooks' explorers show: the models of hierarchy.py, fragments.py and banks.py as
text and matplotlib Figures (no pyplot: display(fig) in a notebook, fig.savefig elsewhere).

Hierarchy
    SLIDER_OPTIONS                   the values each tile-size slider offers
    hierarchy_view(lab, name, arch, **sizes) -> (text, Figure or None): one of the lab's kernels
                                     (hierarchy.tiling) with some sizes changed
    hierarchy_text(row), hierarchy_figure(row)   one hierarchy.explore() row as text / as a figure
    tilings_table(lab, arch)         every kernel the model describes on one architecture, one line each
Fragments
    FAMILIES                         "m16n8k16" (FP16) and "m16n8k8" (TF32): the A, B, C fragment names
    lane_text(lane, family), fragment_figure(lane, family)   which elements a lane holds, where
    ldmatrix_text(lane), ldmatrix_figure(lane)   which row address a lane supplies, what it receives
    ldmatrix_tf32_text(lane)         ldmatrix .b16 on FP32 data: the TF32 A fragment, and why not B
    wmma_vs_mma(layout)              WMMA as measured (fragments.wmma_layout_from_probe) against the
                                     mma.sync fragments that cover the same 16x16 tile: rows
    wmma_figure(layout, lane)        the measured WMMA layout, the lane's elements highlighted
Banks
    strided_access(stride_words, width, pad_words, swizzle) -> 32 addresses: lane l reads row l of a
                                     tile whose rows are stride_words (+ pad_words) 4-byte words long
    bank_text(addresses, access), bank_figure(addresses, access, title)
                                     per phase: banks and distinct words; per lane: the banks it touches
    access_view(lab, name), strided_view(...)   (text, figure) of one of the lab's accesses / a column read
    padding_vs_swizzle_table(lab=None, prefix="")   column reads padded and swizzled, then the lab's
                                     accesses whose names start with prefix
    main_loops_table(lab)            banks.predict_kernel for each kernel of the lab's BANK_MAIN_LOOPS
"""
from math import ceil

import numpy as np

from . import banks, fragments, hierarchy, report
from .errors import CourseError

# ---------------------------------------------------------------------------------------------
# Hierarchy
# ---------------------------------------------------------------------------------------------

SLIDER_OPTIONS = {
    "BM": [16, 32, 64, 128, 256], "BN": [16, 32, 64, 128, 256], "BK": [8, 16, 32, 64],
    "WM": [2, 4, 8, 16, 32, 64, 128], "WN": [8, 16, 32, 64, 128],
    "WNITER": [1, 2, 4, 8], "TM": [1, 2, 4, 8, 16], "TN": [1, 2, 4, 8, 16], "vector": [1, 2, 4],
}
_FFMA_ONLY = ("WNITER", "TM", "TN", "vector")


def _fmt(x, f=".3g"):
    return "-" if x is None else format(x, f)


def hierarchy_view(lab, name, arch, **sizes):
    """(text, figure) for the lab's kernel `name` with the given sizes (those equal to the kernel's
    are not changes; threads follow WM and WN). A tiling that does not fit together gives (message, None)."""
    base = hierarchy.tiling(lab, name)
    changes = {k: v for k, v in sizes.items() if getattr(base, k) != v}
    if base.mma:
        ignored = [k for k in _FFMA_ONLY if k in changes]
        changes = {k: v for k, v in changes.items() if k not in _FFMA_ONLY}
    else:
        ignored = []
    try:
        t = hierarchy.tiling(lab, name, **changes)
        row = hierarchy.explore(t, arch)
    except CourseError as e:
        return f"cannot show this: {e.message}\n(hint: {e.hint})", None
    text = hierarchy_text(row, changes)
    if ignored:
        text += f"\n({', '.join(ignored)} ignored: {name} is a tensor-core tiling, fragments are 16x16)"
    return text, hierarchy_figure(row)


def hierarchy_text(row, changes=None):
    """One explore() row as the lines a student reads: registers, occupancy, traffic."""
    math = "FFMA" if row["math_instructions"] * 32 == row["fma_per_step"] else "HMMA"   # 32 lanes x 1 FMA, or an MMA
    changed = (" with " + ", ".join(f"{k}={v}" for k, v in changes.items())) if changes else ""
    warps = ceil(row["threads"] / 32)
    live = row["registers_estimate"] - row["reg_accumulators"] - row["reg_overhead"]
    lines = [
        f"{row['name']}{changed} on {row['arch']}: {row['threads']} threads ({warps} warps), "
        f"{row['smem_bytes']} B of shared memory per block",
        f"registers per thread ({row['registers_source']}): {row['registers']}"
        + (f"  = {row['reg_accumulators']} accumulators + {live} operands/staging + {row['reg_overhead']} overhead"
           if row["registers_source"] == "estimate" else f"  (estimate {row['registers_estimate']})")
        + ("  OVER 255: ptxas spills to local memory" if row["spills_expected"] else ""),
        f"occupancy: {row['blocks_per_sm']} block(s) x {warps} warps = {row['warps_per_sm']} warps per SM "
        f"({100 * row['occupancy']:.0f} %), limited by {row['binding']}",
        "  blocks per SM each resource allows: " + ", ".join(
            f"{k} {row['limit_' + k.replace(' ', '_')] if row['limit_' + k.replace(' ', '_')] < 10 ** 6 else 'any'}"
            for k in ("warps", "registers", "shared memory", "blocks")),
        f"shared loads per {math}: {row['loads_per_fma']:.4f}  ({row['shared_loads']} load instructions and "
        f"{row['math_instructions']} {math} per warp per k step, from {row['loads_from']} memory)",
        f"bytes requested per multiply-add: {row['shared_bytes_per_fma']:.3f}",
        f"bytes per output per unit of K: thread {_fmt(row['bytes_per_output_thread'])}, "
        f"warp {_fmt(row['bytes_per_output_warp'])}, block (from global) {_fmt(row['bytes_per_output_block'])}",
        f"global intensity if nothing hits in L2: {row['global_flop_per_byte']:.1f} FLOP/B",
    ]
    return "\n".join(lines)


def hierarchy_figure(row):
    """Left: the register estimate's parts (and ptxas's count if given). Right: blocks per SM that
    each resource allows, the binding one red."""
    from matplotlib.figure import Figure
    ptxas = row["registers_source"] == "ptxas"
    fig = Figure(figsize=(9.5, 2.2 if not ptxas else 2.6))
    ax1, ax2 = fig.subplots(1, 2, gridspec_kw={"width_ratios": [1.3, 1]})
    live = row["registers_estimate"] - row["reg_accumulators"] - row["reg_overhead"]
    left = 0
    for label, n, color in (("accumulators", row["reg_accumulators"], "tab:blue"),
                            ("operands / staging", live, "tab:orange"), ("overhead", row["reg_overhead"], "0.6")):
        ax1.barh(1, n, left=left, color=color, label=f"{label} {n}")
        left += n
    if ptxas:
        ax1.barh(0, row["registers"], color="tab:green", label=f"ptxas {row['registers']}")
    ax1.axvline(255, color="crimson", lw=1, ls="--")
    ax1.text(255, 1.45, " 255", color="crimson", fontsize=7, va="bottom")
    ax1.set_yticks([0, 1] if ptxas else [1])
    ax1.set_yticklabels(["ptxas", "estimate"] if ptxas else ["estimate"])
    ax1.set_xlim(0, max(280, left * 1.1, row["registers"] * 1.1))
    ax1.set_xlabel("registers per thread")
    ax1.legend(fontsize=7, loc="lower right" if ptxas else "upper right")
    names = ["warps", "registers", "shared memory", "blocks"]
    vals = [row["limit_" + n.replace(" ", "_")] for n in names]
    cap = row["limit_blocks"] * 1.15            # a limit above the architecture's block limit never binds
    shown = [min(v, cap) for v in vals]
    binding = row["binding"].split(", ")
    ax2.barh(names, shown, color=["crimson" if n in binding else "0.7" for n in names])
    for i, v in enumerate(vals):
        ax2.text(shown[i], i, f" {v if v < 10 ** 6 else 'any'}", va="center", fontsize=8)
    ax2.set_xlim(0, cap * 1.25)
    ax2.invert_yaxis()
    ax2.set_xlabel("blocks per SM allowed")
    ax2.set_title(f"{row['blocks_per_sm']} block(s) per SM: {100 * row['occupancy']:.0f} % occupancy", fontsize=9)
    fig.tight_layout()
    return fig


def tilings_table(lab, arch):
    """Every kernel of the lab the hierarchy model describes, on `arch`, with the estimate of registers."""
    rows = [hierarchy.explore(t, arch) for t in hierarchy.tilings(lab).values()]
    return report.table(rows, [
        ("name", "kernel", ""), ("threads", "threads", "d"), ("registers", "regs (est.)", "d"),
        ("smem_bytes", "smem B", "d"), ("blocks_per_sm", "blocks/SM", "d"), ("occupancy", "occupancy", ".0%"),
        ("binding", "limited by", ""), ("loads_per_fma", "loads/math", ".4f"),
        ("bytes_per_output_warp", "B/output (warp)", ".3f"), ("global_flop_per_byte", "FLOP/B (no L2)", ".1f")],
        title=f"{lab.title.split(':')[0]}: the kernels' tilings on {arch} (hierarchy model; registers estimated)")


# ---------------------------------------------------------------------------------------------
# Fragments
# ---------------------------------------------------------------------------------------------

FAMILIES = {
    "m16n8k16": ("m16n8k16.a", "m16n8k16.b", "m16n8k16.c"),
    "m16n8k8": ("m16n8k8.tf32.a", "m16n8k8.tf32.b", "m16n8k8.tf32.c"),
}


def _elements(name, lane):
    """{(row, col): element name} for one lane: a0..a7 for 16-bit operands (2 per register), a0..a3
    for 32-bit ones. C and D use c0..c3."""
    fn, _ = fragments.FRAGMENTS[name]
    letter = name[-1]
    out = {}
    for reg, half, r, c in fn(lane):
        i = reg if half is None else 2 * reg + half
        out[(r, c)] = f"{letter}{i}"
    return out


def lane_text(lane, family="m16n8k16"):
    """Which elements lane `lane` holds in each operand of one mma.sync, register by register."""
    g, t = fragments.lane_parts(lane)
    lines = [f"lane {lane}: groupID g = lane >> 2 = {g}, threadID_in_group t = lane & 3 = {t}"]
    for name in FAMILIES[family]:
        fn, shape = fragments.FRAGMENTS[name]
        per_reg = {}
        for reg, half, r, c in fn(lane):
            per_reg.setdefault(reg, []).append((r, c))
        op = name[-1].upper()
        what = {"A": "A (rows m, cols k)", "B": "B (rows k, cols n)", "C": "C and D (rows m, cols n)"}[op]
        regs = "; ".join(f"r{reg}: " + ", ".join(f"{op}[{r}][{c}]" for r, c in els) for reg, els in per_reg.items())
        lines.append(f"  {what}, {shape[0]}x{shape[1]}: {regs}")
    return "\n".join(lines)


def _draw_tile(ax, lanes, title, marks=None, color="crimson", outline=None):
    """A tile of lane numbers on a pale background by lane; `marks` {(r, c): label} filled in color;
    `outline` [(r, c0, c1)]: row segments drawn with a thick border."""
    from matplotlib.patches import Rectangle
    rows, cols = lanes.shape
    ax.imshow(np.where(lanes >= 0, lanes % 8, np.nan), cmap="Pastel2", vmin=0, vmax=7, alpha=0.55)
    marks = marks or {}
    for r in range(rows):
        for c in range(cols):
            if (r, c) in marks:
                ax.add_patch(Rectangle((c - 0.5, r - 0.5), 1, 1, color=color))
                ax.text(c, r, marks[(r, c)], ha="center", va="center", fontsize=6.5, color="white", weight="bold")
            elif lanes[r, c] >= 0:
                ax.text(c, r, str(lanes[r, c]), ha="center", va="center", fontsize=5.5, color="0.35")
    for r, c0, c1 in outline or []:
        ax.add_patch(Rectangle((c0 - 0.5, r - 0.5), c1 - c0 + 1, 1, fill=False, lw=2, ec="black"))
    ax.set_xticks(range(cols))
    ax.set_yticks(range(rows))
    ax.tick_params(labelsize=6, length=0)
    ax.set_xlim(-0.5, cols - 0.5)
    ax.set_ylim(rows - 0.5, -0.5)
    ax.set_title(title, fontsize=8.5)


def fragment_figure(lane, family="m16n8k16"):
    """A, B and C of one mma.sync with every element's lane number, lane `lane`'s elements filled."""
    from matplotlib.figure import Figure
    names = FAMILIES[family]
    shapes = [fragments.FRAGMENTS[n][1] for n in names]
    fig = Figure(figsize=(11, 4.4))
    axes = fig.subplots(1, 3, gridspec_kw={"width_ratios": [s[1] for s in shapes]})
    labels = {"a": "A (m x k)", "b": "B (k x n)", "c": "C, D (m x n)"}
    for ax, name, shape in zip(axes, names, shapes):
        lanes, _, _ = fragments.lane_tile(name)
        marks = _elements(name, lane)
        _draw_tile(ax, lanes, f"{labels[name[-1]]} {shape[0]}x{shape[1]}: lane {lane} holds {len(marks)}", marks)
    fig.suptitle(f"mma.sync.{family}: every cell shows the lane that holds it; lane {lane}'s are filled", fontsize=10)
    fig.tight_layout()
    return fig


def ldmatrix_text(lane):
    """The standard ldmatrix addressing of an A tile (.x4) and a B tile (.x2.trans): which row address
    lane `lane` supplies and which elements it receives (the mma.sync fragment, by construction)."""
    a_row, a_col = fragments.ldmatrix_a_x4_address(lane)
    lines = [f"lane {lane}, ldmatrix.x4 on a 16x16 A tile: supplies &As[{a_row}][{a_col}], "
             f"row {lane % 8} of matrix {lane // 8} (its 8 halves, 16 bytes)"]
    got = fragments.simulate_ldmatrix(fragments.ldmatrix_a_x4_address, 4)
    lines.append("  receives " + ", ".join(f"r{reg}.{'hi' if half else 'lo'} = A[{r}][{c}]"
                                            for (l, reg, half), (r, c) in sorted(got.items()) if l == lane))
    who = fragments.ldmatrix_row_of_lane(lane, 2)
    if who is None:
        lines.append(f"lane {lane}, ldmatrix.x2.trans on a 16x8 B tile (Bs[k][n]): its address is ignored "
                     "(.x2 reads the addresses of lanes 0-15)")
    else:
        k, n = fragments.ldmatrix_b_x2_trans_address(lane)
        lines.append(f"lane {lane}, ldmatrix.x2.trans on a 16x8 B tile (Bs[k][n]): supplies &Bs[{k}][{n}], "
                     f"row {who[1]} of matrix {who[0]}")
    got = fragments.simulate_ldmatrix(fragments.ldmatrix_b_x2_trans_address, 2, trans=True)
    lines.append("  receives " + ", ".join(f"r{reg}.{'hi' if half else 'lo'} = B[{r}][{c}]"
                                            for (l, reg, half), (r, c) in sorted(got.items()) if l == lane))
    return "\n".join(lines)



def ldmatrix_tf32_text(lane):
    """ldmatrix.x4 .b16 on a 16x8 FP32 A tile (TF32 operands kept as FP32): the row address lane
    `lane` supplies, the four 32-bit values it receives, and whether they are its m16n8k8 TF32 A
    fragment; then why the B fragment cannot be loaded so (with or without .trans)."""
    r, c = fragments.ldmatrix_tf32_a_x4_address(lane)
    got = fragments.simulate_ldmatrix_b32(fragments.ldmatrix_tf32_a_x4_address, 4)
    want = {reg: (row, col) for reg, _, row, col in fragments.mma_m16n8k8_tf32_a(lane)}
    lines = [f"lane {lane}: supplies &As[{r}][{c}] (row {lane % 8} of matrix {lane // 8}: 4 FP32 values = 8 halves)",
             "  receives " + ", ".join(f"r{reg} = A[{got[(lane, reg)][0]}][{got[(lane, reg)][1]}]" for reg in range(4))
             + "  (the mma's a0..a3: " + ", ".join(f"A[{want[reg][0]}][{want[reg][1]}]" for reg in range(4)) + ")"]
    bad = fragments.ldmatrix_b32_mismatches(fragments.ldmatrix_tf32_a_x4_address)
    lines.append(f"  all 32 lanes: {'every register is the mma A fragment' if not bad else f'{len(bad)} mismatches'}")
    b_rows = lambda l: (l % 8, 4 * ((l // 8) % 2))       # Bs[k][n] rows: k = l % 8, n group (l / 8) % 2
    for trans in (False, True):
        bad = fragments.ldmatrix_b32_mismatches(b_rows, "m16n8k8.tf32.b", 2, trans)
        lines.append(f"B (Bs[k][n], FP32) by ldmatrix.x2{'.trans' if trans else ''}: {len(bad)} of 64 registers wrong; "
                     f"e.g. {bad[0] if bad else '-'}")
    return "\n".join(lines)

def _supplier_tile(shape, address, num):
    """A tile whose cells show the lane whose row address covers them (-1: nobody)."""
    tile = np.full(shape, -1, dtype=int)
    for l in range(8 * num):
        r, c = address(l)
        tile[r, c:c + 8] = l
    return tile


def ldmatrix_figure(lane):
    """Left: the A tile, each 8-half row segment labeled with the lane that supplies its address
    (ldmatrix.x4); right: the same for B (ldmatrix.x2.trans). The lane's own row is outlined, the
    elements it receives are filled."""
    from matplotlib.figure import Figure
    fig = Figure(figsize=(9, 4.6))
    ax1, ax2 = fig.subplots(1, 2, gridspec_kw={"width_ratios": [16, 8]})
    for ax, shape, address, num, trans, name in (
            (ax1, (16, 16), fragments.ldmatrix_a_x4_address, 4, False, "A, ldmatrix.x4"),
            (ax2, (16, 8), fragments.ldmatrix_b_x2_trans_address, 2, True, "B, ldmatrix.x2.trans")):
        tile = _supplier_tile(shape, address, num)
        got = fragments.simulate_ldmatrix(address, num, trans)
        marks = {(r, c): f"r{reg}{'h' if half else 'l'}" for (l, reg, half), (r, c) in got.items() if l == lane}
        outline = []
        if lane < 8 * num:
            r, c = address(lane)
            outline = [(r, c, c + 7)]
        _draw_tile(ax, tile, f"{name}: who supplies each row's address", marks, color="tab:purple", outline=outline)
    fig.suptitle(f"lane {lane}: its row address outlined, the halves it receives filled (r0l = register 0, low half)",
                 fontsize=9.5)
    fig.tight_layout()
    return fig


def _mma_equivalent(fragment, lane):
    """The elements of a 16x16 WMMA fragment that mma.m16n8k16 fragments hold in lane `lane`:
    A is one A fragment; B (16x16) and the accumulator (16x16) are two n8 fragments side by side."""
    if fragment.startswith("matrix_a"):
        return {(r, c) for _, _, r, c in fragments.mma_m16n8k16_a(lane)}
    fn = fragments.mma_m16n8k16_b if fragment.startswith("matrix_b") else fragments.mma_m16n8k16_c
    return {(r, c + 8 * j) for _, _, r, c in fn(lane) for j in (0, 1)}


def wmma_vs_mma(layout):
    """Rows, one per WMMA fragment: values per lane, distinct elements per lane, lanes per element,
    and how many lanes hold exactly the elements of the equivalent mma.m16n8k16 fragments."""
    rows = []
    for name, frag in layout.items():
        per_lane = frag["per_lane"]
        holders = [len(v) for v in frag["holders"].values()]
        same = sum(set(per_lane[l]) == _mma_equivalent(name, l) for l in range(32))
        rows.append({"fragment": name, "values": len(per_lane[0]), "distinct": len(set(per_lane[0])),
                     "holders": f"{min(holders)}-{max(holders)}" if holders else "-",
                     "missing": int((frag["lanes"] < 0).sum()), "same_as_mma": f"{same}/32"})
    return rows


def wmma_table(layout):
    return report.table(wmma_vs_mma(layout), [
        ("fragment", "WMMA fragment", ""), ("values", "values/lane", "d"), ("distinct", "distinct", "d"),
        ("holders", "lanes/element", ""), ("missing", "held by none", "d"),
        ("same_as_mma", "lanes = mma.m16n8k16's", "")])


def wmma_figure(layout, lane):
    """The measured WMMA layouts: the lowest lane holding each element, lane `lane`'s elements filled
    (labeled x0.. by their index in the fragment's x[] array)."""
    from matplotlib.figure import Figure
    fig = Figure(figsize=(12, 3.6))
    axes = fig.subplots(1, len(layout))
    for ax, (name, frag) in zip(axes, layout.items()):
        marks = {}
        for i, (r, c) in enumerate(frag["per_lane"][lane]):
            marks.setdefault((r, c), f"x{i}")
        _draw_tile(ax, frag["lanes"], name, marks, color="tab:green")
    fig.suptitle(f"WMMA 16x16x16 as measured: lowest lane holding each element; lane {lane}'s elements filled",
                 fontsize=9.5)
    fig.tight_layout()
    return fig


# ---------------------------------------------------------------------------------------------
# Banks
# ---------------------------------------------------------------------------------------------

def strided_access(stride_words, width=4, pad_words=0, swizzle=False):
    """Lane l reads `width` bytes at the start of row l of a tile with rows of stride_words +
    pad_words 4-byte words: a column read, the access padding and swizzling are made for. With
    swizzle, banks.xor_swizzle on the row length (a multiple of 128 bytes, no padding)."""
    row = (stride_words + pad_words) * banks.BANK_BYTES
    if row % width:
        raise CourseError(f"rows of {row} bytes do not keep {width}-byte accesses aligned",
                          hint=f"make stride + pad a multiple of {width // 4} words")
    if swizzle and (pad_words or row % banks.WAVEFRONT_BYTES):
        raise CourseError(f"the XOR swizzle works on rows of a multiple of 128 bytes, unpadded (rows are {row} B)",
                          hint="set pad to 0 and the stride to a multiple of 32 words")
    return [banks.xor_swizzle(l * row, row) if swizzle else l * row for l in range(32)]


def _lane_banks(addresses, width):
    return {l: [banks.bank_of(a + 4 * i) for i in range(max(1, width // 4))]
            for l, a in enumerate(addresses) if a is not None}


def bank_text(addresses, access):
    """The verdict, each phase's worst bank, and each lane's address and banks."""
    lines = [str(access)]
    for lanes, per_bank in access.detail:
        bank, words = max(per_bank.items(), key=lambda kv: len(kv[1]))
        lines.append(f"  lanes {lanes[0]}-{lanes[-1]}: {len(per_bank)} banks used; worst bank {bank}: "
                     f"{len(words)} distinct word(s) at byte {', '.join(str(w) for w in words[:8])}"
                     + (" ..." if len(words) > 8 else ""))
    lb = _lane_banks(addresses, access.width)
    cells = [f"{l:2d}: {addresses[l]:5d} B, bank {b[0]}" + (f"-{b[-1]}" if len(b) > 1 else "")
             for l, b in lb.items()]
    for i in range(0, len(cells), 4):
        lines.append("  " + "   ".join(c.ljust(24) for c in cells[i:i + 4]).rstrip())
    return "\n".join(lines)


def bank_figure(addresses, access, title=""):
    """Top: for each phase, the distinct words asked of each bank (more than 1: a conflict).
    Bottom: the banks each lane touches, colored by the phase that serves it."""
    from matplotlib.figure import Figure
    phases = access.detail
    top = 0.9 + 0.3 * len(phases)
    fig = Figure(figsize=(10, top + 4.2))
    ax1, ax2 = fig.subplots(2, 1, gridspec_kw={"height_ratios": [top, 4.2]})
    grid = np.zeros((len(phases), banks.BANKS))
    for i, (_, per_bank) in enumerate(phases):
        for b, words in per_bank.items():
            grid[i, b] = len(words)
    from matplotlib.colors import BoundaryNorm, ListedColormap
    cmap = ListedColormap(["#a6d96a", "#fdae61", "#f46d43", "#d73027"])     # 1 word: fine; 2, 3-4, 5+: conflicts
    ax1.imshow(np.where(grid > 0, grid, np.nan), cmap=cmap, norm=BoundaryNorm([0.5, 1.5, 2.5, 4.5, 33], 4),
               aspect="auto")
    for i in range(grid.shape[0]):
        for b in range(banks.BANKS):
            if grid[i, b]:
                ax1.text(b, i, int(grid[i, b]), ha="center", va="center", fontsize=7)
    ax1.set_yticks(range(len(phases)))
    ax1.set_yticklabels([f"lanes {l[0]}-{l[-1]}" for l, _ in phases], fontsize=7)
    ax1.set_xticks(range(0, banks.BANKS, 4))
    ax1.set_xlim(-0.5, banks.BANKS - 0.5)
    ax1.set_title(f"{title}: {access}", fontsize=9)
    ax1.set_xlabel("bank: distinct 4-byte words each phase asks of it (1 = fine, more = conflict)", fontsize=8)
    hit = np.full((32, banks.BANKS), np.nan)
    phase_of = {l: i for i, (lanes, _) in enumerate(phases) for l in lanes}
    for l, bs in _lane_banks(addresses, access.width).items():
        for b in bs:
            hit[l, b] = phase_of.get(l, 0)
    ax2.imshow(hit, cmap="tab10", vmin=0, vmax=9, aspect="auto", interpolation="nearest")
    ax2.set_xlabel("bank", fontsize=8)
    ax2.set_ylabel("lane", fontsize=8)
    ax2.set_xticks(range(0, banks.BANKS, 4))
    ax2.set_yticks(range(0, 32, 4))
    ax2.tick_params(labelsize=7)
    ax2.set_title("banks each lane touches (color: the phase that serves it)", fontsize=9)
    ax2.grid(True, lw=0.2, color="0.8")
    fig.tight_layout()
    return fig


def access_view(lab, name, merge=True):
    """(text, figure) for one of the lab's shared accesses (its BANK_ACCESSES)."""
    acc = banks.access(lab, name)
    addresses = acc.addresses()
    access = acc.evaluate(merge)
    return f"{name}: {acc.instruction}, {acc.what}\n" + bank_text(addresses, access), bank_figure(addresses, access, name)


def strided_view(stride_words, width=4, pad_words=0, swizzle=False, merge=True):
    """(text, figure) for a column read (strided_access); (message, None) if the numbers don't fit."""
    try:
        addresses = strided_access(stride_words, width, pad_words, swizzle)
        access = banks.analyze(addresses, width, merge)
    except (CourseError, ValueError) as e:
        return f"not an access: {getattr(e, 'message', e)}" + (f"\n(hint: {e.hint})" if getattr(e, "hint", None) else ""), None
    title = (f"{width}-byte reads down a column, rows of {stride_words}" + (f"+{pad_words}" if pad_words else "")
             + " words" + (", XOR swizzle" if swizzle else ""))
    return title + "\n" + bank_text(addresses, access), bank_figure(addresses, access, title)


def padding_vs_swizzle_rows(stride_words=32, lab=None, prefix=""):
    """A column of 4- and 16-byte reads over rows of stride_words words: as is, padded by one
    16-byte chunk, and XOR-swizzled; then the lab's accesses whose names start with `prefix`
    (lab 7: "t2", its fragment loads and tile stores padded, unpadded and swizzled)."""
    rows = []
    for label, pad, swz in (("as is", 0, False), ("padded by 16 B", 4, False), ("XOR swizzle", 0, True)):
        for width in (16, 4):
            a = banks.analyze(strided_access(stride_words, width, pad, swz), width)
            rows.append({"access": f"column of {width}-byte reads, rows of {stride_words * 4} B, {label}",
                         "instruction": f"LDS{'.128' if width == 16 else ''}", "wavefronts": a.wavefronts,
                         "ideal": a.ideal, "conflicts": a.conflicts, "ways": a.ways})
    if lab is not None:
        rows += banks.access_rows(lab, prefix=prefix)
    return rows


def padding_vs_swizzle_table(stride_words=32, lab=None, prefix=""):
    return report.table(padding_vs_swizzle_rows(stride_words, lab, prefix), [
        ("access", "access", ""), ("instruction", "instruction", ""), ("wavefronts", "wavefronts", "d"),
        ("ideal", "ideal", "d"), ("conflicts", "extra", "d"), ("ways", "worst n-way", "d")])


def main_loops_table(lab, merge=True):
    """banks.predict_kernel for every kernel of the lab's BANK_MAIN_LOOPS: shared loads and stores
    of one main-loop phase per warp, wavefronts per instruction (what ncu's ratio measures)."""
    rows = []
    for kernel in banks.main_loops(lab):
        for op, d in banks.predict_kernel(lab, kernel, merge).items():
            rows.append({"kernel": kernel, "op": {"ld": "loads", "st": "stores"}[op], "instructions": d["instructions"],
                         "wavefronts": d["wavefronts"], "ideal": d["ideal"], "per_instruction": d["per_instruction"],
                         "ideal_per": d["ideal"] / d["instructions"]})
    return report.table(rows, [
        ("kernel", "kernel", ""), ("op", "shared", ""), ("instructions", "instructions", "d"),
        ("wavefronts", "wavefronts", "d"), ("ideal", "ideal", "d"), ("per_instruction", "wavefronts/instr", ".2f"),
        ("ideal_per", "ideal/instr", ".2f")], title="One main-loop phase per warp, as the bank model predicts it")
