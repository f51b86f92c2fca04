"""h7's stream-K tail without a GPU: the build and its SASS, the work split the kernel walks (the real
header, h7_schedule.cuh, compiled for the host by a probe and checked against a Python model of what
stream-K must do), and what the launch hook hands the kernel (the grid, dp_tiles, the workspace and a
new epoch at every launch). The GPU tests (test_gpu.py) check the results; these check the plan."""
import math
import subprocess
from pathlib import Path

import pytest

from common import targets
from common.build import find_nvcc
from common.testing import build_for_every_arch, lab_of, needs_cuobjdump

LAB = lab_of(__file__)
H7 = LAB.kernel("h7")
BM, BN = H7.tile
BK = H7.tiling.value("BK")
CONSUMERS = H7.tiling.value("CONSUMERS")
PROBE = Path(__file__).parent / "probes" / "h7_schedule.cu"
SMS = 132                       # the H200's


# --- the build and its SASS ---------------------------------------------------------------------
@pytest.fixture(scope="module")
def built():
    return build_for_every_arch(LAB, [H7])


def test_h7_builds_for_sm_90a_alone_without_spills_in_168_registers(built):
    """384 threads, one block per SM: 65536 / 384 rounds down to 168 registers a thread at the launch
    (setmaxnreg then moves them to the consumers), and not one byte of local memory."""
    assert sorted(built) == [("h7", "sm_90a")]
    r = built[("h7", "sm_90a")]["hgemm_h7_stream_k"]
    assert r["registers"] <= 168 and r["spill_stores"] == r["spill_loads"] == r["stack"] == 0, r


def test_ptxas_does_not_serialize_h7s_wgmmas(built):
    """C7509-C7515: ptxas could not prove the wgmma pipeline safe and waits after each wgmma. A main loop
    written t = k0 .. k1 - 1 gets C7515; the kernel counts from 0 (its comment says so)."""
    log = H7.cubin(LAB.build_dir, "sm_90a").with_suffix(".ptxas.log").read_text()
    bad = [line for line in log.splitlines() if "C75" in line or "serializ" in line]
    assert not bad, "\n".join(bad)


@pytest.fixture(scope="module")
def ops(built):
    needs_cuobjdump()
    return targets.sass_counts(LAB, "sm_90", [H7])["hgemm_h7_stream_k"]["opcodes"]


def n(ops, prefix):
    return sum(v for op, v in ops.items() if op.startswith(prefix))


def test_h7_keeps_h6s_main_loop_and_epilogue(ops):
    assert n(ops, "HGMMA.64x256x16.F32") > 0 and n(ops, "UTMALDG.2D") > 0, ops
    assert n(ops, "UTMASTG") == 8 and n(ops, "UTMACMDFLUSH") == 8 and n(ops, "STS.64") == 64, ops
    assert n(ops, "USETMAXREG") == 2 and n(ops, "LDL") == n(ops, "STL") == 0, ops


def test_h7s_fix_up_is_in_sass_as_its_header_says(ops):
    """The contributor: 32 float4 stores of its accumulators to L2 (__stcg), a GPU fence, the flag by a
    release store (MEMBAR.ALL.GPU, then a strong store). The finalizer: the acquire spin (a strong load,
    then an L1 invalidation), a nanosleep, the global timer, 32 float4 loads from L2 and 128 FADD. No
    CALL: the schedule's arithmetic is 32-bit (a 64-bit division would be a called subroutine)."""
    assert ops.get("STG.E.128.STRONG.GPU") == 32 and ops.get("LDG.E.128.STRONG.GPU") == 32, ops
    assert ops.get("FADD") == 128, ops
    assert ops.get("MEMBAR.SC.GPU") == 1 and ops.get("MEMBAR.ALL.GPU") == 1 and ops.get("STG.E.STRONG.GPU") == 1, ops
    assert ops.get("LDG.E.STRONG.GPU", 0) >= 1 and ops.get("CCTL.IVALL", 0) >= 2 and ops.get("NANOSLEEP") == 1, ops
    assert n(ops, "BPT.TRAP") == 1 and n(ops, "CALL") == 0, ops
    h6 = targets.sass_counts(LAB, "sm_90", [LAB.kernel("h6")])["hgemm_h6_tma_store"]["opcodes"]
    assert n(h6, "STG") == n(h6, "LDG") == n(h6, "NANOSLEEP") == n(h6, "MEMBAR.SC") == 0, h6   # h6 has none of it


# --- the schedule: the real header on the host, against a model ------------------------------------
@pytest.fixture(scope="module")
def probe(tmp_path_factory):
    exe = tmp_path_factory.mktemp("h7probe") / "h7_schedule"
    cmd = [find_nvcc(), "-std=c++17", "-O1", f"-I{Path(H7.path).parent}", "-o", str(exe), str(PROBE)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr

    def run(cases):
        """{case: {"ranges": {b: (begin, end)}, "units": {b: [(tile, k0, k1)]}, "waits": {(b, tile): [b'...]}}}"""
        text = "".join(f"{t} {kt} {g} {dp}\n" for t, kt, g, dp in cases)
        out = subprocess.run([str(exe)], input=text, capture_output=True, text=True, check=True).stdout
        res, cur = {}, None
        for line in out.splitlines():
            w = line.split()
            nums = list(map(int, w[1:]))
            if w[0] == "case":
                cur = res[tuple(nums)] = {"ranges": {}, "units": {}, "waits": {}}
            elif w[0] == "block":
                cur["ranges"][nums[0]] = (nums[1], nums[2])
                cur["units"][nums[0]] = []
            elif w[0] == "unit":
                cur["units"][nums[0]].append(tuple(nums[1:]))
            elif w[0] == "wait":
                cur["waits"][(nums[0], nums[1])] = nums[2:]
        assert sorted(res) == sorted(map(tuple, cases))
        return res
    return run


def model(tiles, kt, g, dp):
    """Stream-K as the design says it, in Python's integers: block b's data-parallel tiles b, b + G, ...
    below dp, all of K; then the range [b S KT / G, (b + 1) S KT / G) of the S = tiles - dp stream-K
    tiles' iterations, cut at tile boundaries."""
    total = (tiles - dp) * kt
    ranges = {b: (b * total // g, (b + 1) * total // g) for b in range(g)}
    units = {}
    for b in range(g):
        us = [(t, 0, kt) for t in range(b, dp, g)]
        pos, end = ranges[b]
        while pos < end:
            j, k0 = divmod(pos, kt)
            k1 = min(kt, k0 + end - pos)
            us.append((dp + j, k0, k1))
            pos += k1 - k0
        units[b] = us
    return ranges, units


def shapes_to_cases(shapes, sms=SMS):
    launch = LAB.module("launch")
    out = []
    for M, N, K in shapes:
        tiles, kt = math.ceil(M / BM) * math.ceil(N / BN), math.ceil(K / BK)
        grid, dp = launch.stream_k_plan(tiles, kt, sms)
        out.append((tiles, kt, grid, dp))
    return out


# the benchmark sizes, T < G (2048^3), T % G == 0 (12 x 11 tiles), K < BK, M or N of 1, ragged edges
SHAPES = [(2048, 2048, 2048), (4096, 4096, 4096), (8192, 8192, 8192), (1536, 2816, 4096), (4096, 4096, 40),
          (1, 4096, 4096), (4096, 1, 4096), (1, 1, 8), (2000, 3000, 1000), (300, 12644, 2048), (300, 2600, 1088),
          (4099, 129, 136), (1000, 3, 520), (12345, 6789, 1000)]


def all_cases():
    cases = set(shapes_to_cases(SHAPES))
    for tiles, kt in [(1, 1), (1, 5), (9, 5), (128, 32), (150, 32), (165, 16), (512, 64), (2048, 128), (200, 1),
                      (133, 3), (7, 1), (264, 17)]:
        for g in (1, 7, 66, 132, 133):
            cases.add((tiles, kt, g, tiles))                         # stream-K off
            cases.add((tiles, kt, g, 0))                             # every tile stream-K (forced)
            cases.add((tiles, kt, g, g * (tiles // g)))              # the hook's split when it is on
    return sorted(cases)


@pytest.fixture(scope="module")
def schedules(probe):
    return probe(all_cases())


def test_the_probe_walks_the_split_the_model_describes(schedules):
    """h7_schedule.cuh's 32-bit arithmetic gives the same ranges and units as exact integers."""
    for (tiles, kt, g, dp), s in schedules.items():
        ranges, units = model(tiles, kt, g, dp)
        assert s["ranges"] == ranges, (tiles, kt, g, dp)
        assert s["units"] == units, (tiles, kt, g, dp)


def test_every_tile_and_k_iteration_is_computed_exactly_once(schedules):
    for (tiles, kt, g, dp), s in schedules.items():
        seen = {}
        for b, us in s["units"].items():
            for tile, k0, k1 in us:
                assert 0 <= tile < tiles and 0 <= k0 < k1 <= kt, (tiles, kt, g, dp, b, tile, k0, k1)
                for k in range(k0, k1):
                    seen[(tile, k)] = seen.get((tile, k), 0) + 1
        assert len(seen) == tiles * kt and set(seen.values()) == {1}, (tiles, kt, g, dp)


def test_the_stream_k_shares_differ_by_at_most_one_iteration(schedules):
    for (tiles, kt, g, dp), s in schedules.items():
        sizes = [e - b for b, e in s["ranges"].values()]
        assert max(sizes) - min(sizes) <= 1 and sum(sizes) == (tiles - dp) * kt, (tiles, kt, g, dp)


def test_a_block_holds_at_most_one_partial_and_it_is_its_first_stream_k_segment(schedules):
    """Only a block's first stream-K segment can start inside a tile (k0 > 0): one workspace slot a block."""
    for case, s in schedules.items():
        dp = case[3]
        for b, us in s["units"].items():
            sk = [u for u in us if u[0] >= dp]
            assert all(k0 == 0 for _, k0, _ in sk[1:]), (case, b, us)
            assert all(k0 == 0 and k1 == case[1] for t, k0, k1 in us if t < dp), (case, b, us)
            assert [u for u in us if u[0] < dp] == us[:len(us) - len(sk)], (case, b)   # whole tiles first


def test_each_tile_has_one_finalizer_that_waits_for_exactly_its_contributors_in_order(schedules):
    """The k0 == 0 segment of a stream-K tile is its finalizer; the blocks whose first segment is a k0 > 0
    piece of it are its contributors; the finalizer's list (the kernel's next_contributor walk) is those
    blocks in increasing order, all numbered above the finalizer (no cycle: no deadlock), and the pieces
    cover the tile. Data-parallel tiles wait for nobody."""
    for (tiles, kt, g, dp), s in schedules.items():
        finalizer = {}
        for b, us in s["units"].items():
            for tile, k0, k1 in us:
                if k0 == 0:
                    assert tile not in finalizer, ((tiles, kt, g, dp), tile)
                    finalizer[tile] = b
        assert sorted(finalizer) == list(range(tiles)), (tiles, kt, g, dp)
        contributors = {}
        for b, us in s["units"].items():
            sk = [u for u in us if u[0] >= dp]
            if sk and sk[0][1] > 0:
                contributors.setdefault(sk[0][0], []).append(b)
        waits = s["waits"]
        assert sorted(t for _, t in waits) == list(range(dp, tiles)), (tiles, kt, g, dp)
        for (b, tile), who in waits.items():
            assert finalizer[tile] == b and who == contributors.get(tile, []), ((tiles, kt, g, dp), tile, who)
            assert all(x > b for x in who) and who == sorted(who)


def test_the_cases_include_tiles_split_over_three_blocks_and_empty_ranges(schedules):
    """The checks above mean something: some tiles have two or more contributors, and with more blocks
    than iterations some blocks have nothing to do (next_contributor must step over them)."""
    many = [c for c, s in schedules.items() if any(len(w) >= 2 for w in s["waits"].values())]
    empty = [c for c, s in schedules.items() if any(b == e for b, e in s["ranges"].values()) and c[3] < c[0]]
    assert many and empty


# --- the hook's plan ---------------------------------------------------------------------------------
@pytest.mark.parametrize("shape,plan", [
    ((2048, 2048, 2048), (128, 128)),       # 128 tiles: one round of 128, more than half full: off
    ((4096, 4096, 4096), (132, 512)),       # a last round of 116 of 132: off
    ((8192, 8192, 8192), (132, 2048)),      # a last round of 68: half full, off
    ((2304, 4352, 4096), (132, 264)),       # 18 x 17 = 306 tiles: 2 rounds, 42 tiles' 2688 iterations shared
    ((1024, 1024, 4096), (132, 0)),         # 8 x 4 = 32 tiles, a quarter of a round: every tile shared out
    ((1536, 2816, 4096), (132, 132)),       # 12 x 11 = 132 tiles: one full round, no tail
    ((4096, 4096, 40), (132, 512)),         # K < BK: 116 x 1 iterations, under 4 a block: off
    ((300, 520, 264), (9, 9)),              # 9 tiles x 5 iterations: 0.3 a block: off, h6's grid
    ((1, 1, 8), (1, 1)),
])
def test_stream_k_is_on_where_each_block_gets_at_least_min_sk_iters(shape, plan):
    assert shapes_to_cases([shape]) == [(math.ceil(shape[0] / BM) * math.ceil(shape[1] / BN),
                                         math.ceil(shape[2] / BK), *plan)]


def test_the_plan_turns_stream_k_off_before_32_bit_arithmetic_overflows():
    launch = LAB.module("launch")
    assert launch.stream_k_plan(150, 2 ** 27, 132) == (132, 150)     # 18 x 2^27 iterations: off
    assert launch.stream_k_plan(150, 2 ** 20, 132) == (132, 132)


# --- the hook, with the driver faked ----------------------------------------------------------------
@pytest.fixture
def faked(monkeypatch):
    launch = LAB.module("launch")
    log = []
    monkeypatch.setattr(launch, "function", lambda *a, **kw: "f")
    monkeypatch.setattr(launch, "cubin_for", lambda kernel, func=None: Path("h7.cubin"))
    monkeypatch.setattr(launch, "_sm_count", lambda: SMS)
    monkeypatch.setattr(launch, "_scratch", lambda purpose, nbytes, fill=None:
                        log.append(("scratch", purpose, nbytes, fill)) or 0x100000)
    monkeypatch.setattr(launch, "_map", lambda ptr, dtype, rows, cols, box_rows, box_cols, pitch:
                        ("map", ptr, dtype, rows, cols, box_rows, box_cols, pitch))
    monkeypatch.setattr(launch, "_copy_step", lambda *a: (lambda: log.append(("copy",) + a[:-1])))
    monkeypatch.setattr(launch, "_EPOCH", [0])

    def prepared(f, grid, block, args, smem, stream):
        # the values the driver would read at the launch (ctypes values are read then, not now)
        return lambda: log.append(("launch", grid, [getattr(x, "value", x) for x in args[6:]]))
    monkeypatch.setattr(launch, "prepared_launch", prepared)
    launch._PREPARED.clear()
    yield launch, log
    launch._PREPARED.clear()


def launches(log):
    return [e for e in log if e[0] == "launch"]


def test_h7s_hook_passes_the_plan_the_workspace_and_a_new_epoch(faked):
    launch, log = faked
    for _ in range(3):
        launch.tma_stream_k(H7, None, 2304, 4352, 4096, 0x1000, 0x2000, 0x3000, 1.0, 0.0, None)   # stream-K on
    flags = math.ceil(CONSUMERS * SMS * 4 / 256) * 256
    size = flags + SMS * BM * BN * 4
    assert [e for e in log if e[0] == "scratch"] == [("scratch", "stream-K workspace", size, 0)]
    assert launch.stream_k_workspace_bytes(H7, SMS) == (size, flags)
    assert launches(log) == [("launch", (132,), [264, 0x100000, 0x100000 + flags, e]) for e in (1, 2, 3)]


def test_h7s_epoch_runs_on_across_shapes_and_never_is_zero(faked):
    """Every shape's launches share the flags, so the epoch is one counter for all of them: a launch of
    another shape never reuses a value whose flags may still be set. After 2^32 - 1 it wraps to 1."""
    launch, log = faked
    launch._EPOCH[0] = 0xFFFFFFFE
    for shape in [(2304, 4352, 4096), (1024, 1024, 4096), (2304, 4352, 4096), (300, 520, 264)]:
        launch.tma_stream_k(H7, None, *shape, 0x1000, 0x2000, 0x3000, 1.0, 0.0, None)
    got = [(e[1], e[2][0], e[2][-1]) for e in launches(log)]
    assert got == [((132,), 264, 0xFFFFFFFF), ((132,), 0, 1), ((132,), 264, 2), ((9,), 9, 3)]


def test_h7s_hook_stores_through_a_padded_c_as_h6s(faked):
    """N % 4 != 0: C through the padded scratch and the copy after the launch, the epoch step before it."""
    launch, log = faked
    launch.tma_stream_k(H7, None, 300, 127, 1024, 0x1000, 0x2000, 0x3000, 1.0, 0.0, None)
    steps = [e for e in log if e[0] != "scratch"]
    assert [e[0] for e in steps] == ["copy", "launch", "copy"]       # B padded, the launch, C back
    assert launches(log)[0][2][-1] == 1


def test_the_hook_is_in_the_table_and_the_row_after_h6():
    assert H7.launch_hook is LAB.module("launch").tma_stream_k
    names = [k.name for k in LAB.ladders["fp16"]]
    assert names.index("h7") == names.index("h6") + 1


def test_make_sanitize_runs_h7_with_stream_k_on():
    """compute-sanitizer must see the fix-up (the partials' stores and loads, the flags): one of the lab's
    sanitize shapes turns stream-K on for the H200's 132 SMs."""
    launch = LAB.module("launch")
    on = [s for s in LAB.option("SANITIZE_SHAPES", []) if shapes_to_cases([s])[0][3] < shapes_to_cases([s])[0][0]]
    assert on, LAB.option("SANITIZE_SHAPES", [])
    assert launch.stream_k_plan(33, 17, 132) == (132, 0)
