"""h6_3xtf32 (3xTF32 on h6_tf32's C^T = B^T A^T) without a GPU: its row, what its header claims about the
compiled code, the index arithmetic of its fragments and its epilogue at its own tile (128 x 128: two
epilogue steps where h6_tf32 has four), and its launch hook with the driver faked. Its arithmetic is
modelled in test_3xtf32.py (consumers owning columns); its GPU tests are there and in test_gpu.py."""
import re

import pytest

from common import banks
from common.precision import TF32_SPLIT
from common.sass import disassemble, kernel_listing
from common.testing import lab_of, needs_cuobjdump

from .test_h6_epilogue import fragment_loads, swizzled

LAB = lab_of(__file__)
ROW = LAB.kernel("h6_3xtf32")
P = ROW.tiling.params
BK = ROW.tiling.value("BK")
SLICES = BK // 8
ROWS, COLS = ROW.tiling.value("STORE_ROWS"), ROW.tiling.value("STORE_COLS")
launch = LAB.module("launch")


# --- the table ----------------------------------------------------------------------------------

def test_the_row_is_a_3xtf32_rung_that_takes_any_k():
    assert ROW.precision == "fp32_3xtf32" and ROW.roundoff == TF32_SPLIT == LAB.kernel("h4_3xtf32").roundoff
    assert ROW.helpers == {"split": "split_h6_3xtf32"}
    for shape in [(1, 1, 1), (77, 67, 45), (129, 3, 1001)]:
        assert ROW.refusal(*shape) is None, shape
    assert [k.name for k in LAB.ladders["3xtf32"]] == ["k8", "h4_3xtf32", "h6_3xtf32"]


def test_the_tile_and_shared_memory_are_the_headers():
    """128 x 128 (m64n128k8: 64 chain + 64 running floats a thread), 4 stages of A_big, A_small and B
    (48 KB), two 8 KB chunks per consumer for the epilogue, 1 KB for the alignment: 225 KB."""
    assert (ROW.threads, ROW.tile, BK) == (384, (128, 128), 32)
    stage = 2 * 128 * BK * 4 + BK * 128 * 4
    assert stage == 48 * 1024 and P["STAGES"] == 4
    assert ROW.shared_bytes == P["STAGES"] * stage + 2 * 2 * ROWS * COLS * 4 + 1024 <= 227 * 1024
    assert P["KCHUNK"] == LAB.kernel("h4_3xtf32").tiling.params["KCHUNK"] and P["KCHUNK"] % BK == 0


def test_the_split_pass_moves_half_of_h4_3xtf32s_bytes():
    """Per element of A: one read, two writes; h4_3xtf32 does the same for B as well. At 4096^3:
    192 MB against 384 MB (the numbers NOTES.md gives)."""
    n = 4096
    ours, h4 = 3 * n * n * 4, 3 * 2 * n * n * 4
    assert (ours / 2 ** 20, h4 / 2 ** 20) == (192, 384)


# --- the index arithmetic -------------------------------------------------------------------------

def test_the_fragment_loads_cover_each_consumers_64_columns_of_b_once():
    """h6_tf32's fragment offsets (same B tile: 4 panels of 32 columns): consumer c's panel base is
    (2 c + warp / 2) 4 KB; per slice its 128 threads x 4 values read B's (k, n) for k < 8 and its 64 n
    exactly once, and slice j reads rows 8 j.. of the panel."""
    for c in range(2):
        seen = set()
        for warp in range(4):
            for lane in range(32):
                for addr, (k, n) in fragment_loads(warp, lane):
                    addr += 2 * c * 4096                                     # panel 2 c + warp / 2
                    panel, inside = divmod(addr, 4096)
                    row, byte = divmod(banks.xor_swizzle(inside), 128)
                    assert (row, panel * 32 + byte // 4) == (k, 64 * c + n)
                    seen.add((k, 64 * c + n))
        assert seen == {(k, 64 * c + n) for k in range(8) for n in range(64)}
    # slice j: rows 8 j .. 8 j + 7 of the panel; the swizzle's row term is row % 8, the same for every j
    for j in range(SLICES):
        assert swizzled(8 * j + 3, 17) - swizzled(3, 17) == 8 * j * 128


def test_the_epilogue_writes_each_element_of_the_tile_once():
    """Sum register d[j] (j < 64) of thread (warp, lane) of consumer c is C^T's (n, m): n = 64 c + 16 warp +
    lane / 4 + 8 ((j/2)%2), m = 8 (j/4) + 2 (lane%4) + j%2 (hopper_ptx.cuh's accumulator layout at N = 128).
    Step mq = j / 32 stores it at row r = m - 64 mq of chunk warp / 2 of the consumer's pair, column
    16 (warp%2) + lane/4 + 8 ((j/2)%2); TMA stores chunk nq at C's (64 mq + row, 64 c + 32 nq + column).
    Over both consumers and both steps every element of the 128 x 128 tile is written exactly once."""
    written = {}
    for c in range(2):
        for warp in range(4):
            for lane in range(32):
                g, q = lane // 4, lane % 4
                for j in range(ROW.tile[0] // 2):
                    mq, jj = divmod(j, 32)
                    r = 8 * (jj // 4) + 2 * q + j % 2
                    cc = 16 * (warp % 2) + g + 8 * ((j // 2) % 2)
                    row, byte = divmod(banks.xor_swizzle(swizzled(r, cc)), 128)
                    place = (mq * ROWS + row, c * 64 + (warp // 2) * COLS + byte // 4)
                    n, m = 64 * c + 16 * warp + g + 8 * ((j // 2) % 2), 8 * (j // 4) + 2 * q + j % 2
                    assert place == (m, n), (c, warp, lane, j)
                    written[place] = written.get(place, 0) + 1
    assert set(written) == {(m, n) for m in range(128) for n in range(128)} and set(written.values()) == {1}


# --- the compiled code --------------------------------------------------------------------------

@pytest.fixture(scope="module")
def listing():
    needs_cuobjdump()
    LAB.build([ROW], ["sm_90"])
    text = disassemble(LAB.cubin(ROW, "sm_90"))
    return {v: [re.sub(r"^/\*[0-9a-f]+\*/\s*", "", line).rstrip(" ;") for line in kernel_listing(text, e)]
            for v, e in ROW.all_entries.items()}


def ops(lines, prefix):
    return [line for line in lines if re.match(r"(@!?U?P\w+\s+)?" + re.escape(prefix), line)]


def test_twelve_register_a_wgmmas_per_stage_one_starting_a_chain(listing):
    """3 per slice (split B fragments in registers R.., A's parts by descriptor), 4 slices, one loop body;
    only the chain's first has the scale-d predicate."""
    hg = ops(listing[""], "HGMMA")
    assert len(hg) == 3 * SLICES == 12, hg
    assert all(re.match(r"HGMMA\.64x128x8\.F32\.TF32 R\d+, R\d+, gdesc\[UR\d+\]", line) for line in hg), hg[:3]
    assert sum(bool(re.search(r",\s*!?UP\d", line)) for line in hg) == 1, hg
    # two fragment buffers: the first and third wgmma of a slice read big, the second small; slices alternate
    frags = [re.match(r"\S+ R\d+, (R\d+)", line).group(1) for line in hg]
    for j in range(SLICES):
        big, small, big2 = frags[3 * j: 3 * j + 3]
        assert big == big2 != small, frags
    assert frags[0] != frags[3] and frags[0] == frags[6], frags


def test_each_slice_is_its_own_group_and_a_chain_ends_with_wait_0_then_the_promotion(listing):
    lines = listing[""]
    waits = [i for i, line in enumerate(lines) if line.startswith("WARPGROUP.DEPBAR.LE")]
    assert [lines[i].split()[-1] for i in waits] == ["0x1"] * SLICES + ["0x0"], [lines[i] for i in waits]
    fadds = [i for i, line in enumerate(lines) if line.startswith("FADD")]
    promotion = [i for i in fadds if i > waits[-1]]
    assert len(promotion) == ROW.tile[0] // 2                       # 64 chain values into the sums
    assert len(fadds) - len(promotion) == 4 * SLICES                # the split's x - big, one per value


def test_b_is_loaded_raw_and_split_in_registers(listing):
    """16 LDS a stage (4 slices x 4 values), each value clamped (FSEL for the limit, 2 FMNMX); 6 TMA boxes
    a stage (A_big, A_small, 4 of B): a multiple of 6 where ptxas unrolls the producer."""
    lines = listing[""]
    assert len(ops(lines, "LDS")) == len(ops(lines, "FSEL")) == 4 * SLICES and len(ops(lines, "FMNMX")) == 2 * 4 * SLICES
    n = len(ops(lines, "UTMALDG.2D"))
    assert n > 0 and n % 6 == 0, n
    assert ops(lines, "USETMAXREG.DEALLOC") and ops(lines, "USETMAXREG.TRY_ALLOC")


def test_c_leaves_by_tma_store_through_the_chunks(listing):
    """One STS per sum value (64), 2 steps x 2 chunks of UTMASTG, two named barriers a step; no STG."""
    lines = listing[""]
    steps = ROW.tile[0] // ROWS
    assert len(ops(lines, "STS")) == ROW.tile[0] // 2 and len(ops(lines, "UTMASTG")) == 2 * steps
    assert len([line for line in lines if "BAR.SYNC" in line and "0x80" in line]) == 2 * steps
    assert not ops(lines, "STG") and not ops(lines, "ST.") and not ops(lines, "LDL") and not ops(lines, "STL")


def test_the_split_pass_splits_a_alone_in_place(listing):
    """E = SPLIT_TILE^2 / 256 elements of A a thread: per element FSEL, 2 FMNMX and one FADD, one LDG and two
    STG, every LDG before the first STG (h4_3xtf32's SplitTile); nothing through shared memory (no
    transpose), no tensor core."""
    s, e = listing["split"], P["SPLIT_TILE"] ** 2 // 256
    assert len(ops(s, "FMNMX")) == 2 * len(ops(s, "FADD")) == 2 * len(ops(s, "FSEL")) == 2 * e
    assert len(ops(s, "LDG")) == e and len(ops(s, "STG")) == 2 * e
    first_store = min(i for i, l in enumerate(s) if re.search(r"\bSTG\.", l))
    assert max(i for i, l in enumerate(s) if re.search(r"\bLDG\.", l)) < first_store
    assert not ops(s, "STS") and not ops(s, "LDS") and not ops(s, "HGMMA")


# --- the hook, with the driver faked -------------------------------------------------------------

@pytest.mark.parametrize("shape", [(1, 1, 1), (77, 67, 45), (300, 520, 264), (300, 129, 1000), (4096, 4096, 4096)],
                         ids=lambda s: "x".join(map(str, s)))
def test_the_hook_splits_a_and_maps_b_and_c_as_stored(monkeypatch, shape):
    M, N, K = shape
    got = {"scratch": {}, "maps": [], "launches": [], "copies": []}
    bases = {"A split": 1 << 20, "B padded": 1 << 36, "C padded": 1 << 38}

    def scratch(purpose, nbytes, fill=None):
        got["scratch"][purpose] = (nbytes, fill)
        return bases[purpose]

    def tmap(ptr, dtype, rows, cols, box_rows, box_cols, pitch):
        got["maps"].append((ptr, dtype, rows, cols, box_rows, box_cols, pitch))
        return f"map{len(got['maps'])}"

    def prepared(f, grid, block, args, smem, stream):
        got["launches"].append((f, grid, block, args, smem))
        return lambda: None

    monkeypatch.setattr(launch, "cubin_for", lambda kernel, func: "cubin")
    monkeypatch.setattr(launch, "function", lambda kernel, entry, smem, cubin=None: entry)
    monkeypatch.setattr(launch, "_scratch", scratch)
    monkeypatch.setattr(launch, "_map", tmap)
    monkeypatch.setattr(launch, "_copy_step", lambda *a: got["copies"].append(a[:-1]) or (lambda: None))
    monkeypatch.setattr(launch, "prepared_launch", prepared)
    monkeypatch.setattr(launch, "_ints", lambda *xs: list(xs))
    monkeypatch.setattr(launch, "_ptr", lambda x: ("ptr", int(x)))
    monkeypatch.setattr(launch, "_sm_count", lambda: 132)
    monkeypatch.setattr(launch, "_PREPARED", {})
    launch.split_a_registers_persistent(ROW, None, M, N, K, 0x1000, 0x2000, 0x3000, 1.0, 0.0, None)

    pk, pn = -(-K // 4) * 4, -(-N // 4) * 4                  # 16-byte rows for TMA
    a2 = bases["A split"]
    b = 0x2000 if pn == N else bases["B padded"]
    c = 0x3000 if pn == N else bases["C padded"]
    want = {"A split": (2 * M * pk * 4, None)}
    if pn != N:
        want.update({"B padded": (K * pn * 4, None), "C padded": (M * pn * 4, 0xFF)})
    assert got["scratch"] == want
    assert got["maps"] == [(a2, "float32", M, K, 128, 32, pk), (a2 + M * pk * 4, "float32", M, K, 128, 32, pk),
                           (b, "float32", K, N, BK, 32, pn), (c, "float32", M, N, ROWS, COLS, pn)]
    (split, sgrid, sblock, sargs, ssmem), (gemm, grid, block, args, smem) = got["launches"]
    assert split == "split_h6_3xtf32" and sblock == (32, 8) and ssmem == 0
    t = P["SPLIT_TILE"]
    assert sgrid == (-(-K // t) * -(-M // t),)                         # a t x t tile of A per block
    assert sargs == [M, K, ("ptr", 0x1000), ("ptr", a2), pk]
    tiles = -(-M // 128) * -(-N // 128)
    assert gemm == "sgemm_h6_3xtf32" and grid == (min(tiles, 132),) and block == (384,)
    assert args == [M, N, K, "map1", "map2", "map3", "map4"] and smem == ROW.shared_bytes
    if pn == N:
        assert got["copies"] == []
    else:                                                               # B in before, C out after
        assert got["copies"] == [(b, pn * 4, 0x2000, N * 4, N * 4, K), (0x3000, N * 4, c, pn * 4, N * 4, M)]
