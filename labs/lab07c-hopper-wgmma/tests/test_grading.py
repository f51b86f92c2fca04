"""Lab 7c's grader, tested without a GPU.

Fast (no compiler): the table is consistent (regions in the kernels and in the shared header, probes,
gates), the workspace holds the header with its region cut and no answer anywhere, the probes'
verdicts on synthetic values (the right answer passes, each known mistake fails for its own reason,
naming what the value does, never the value to write), the pipeline model, the questions and the
predictions, the known-wrong patches, a workspace without the header is refused, a GPU that is not
Hopper grades as none, a hang's reason is the lab's, and the TMA launch hooks run the cubin they are
given (the grader's student kernel), not the row's own.
Slow (nvcc: 16 sm_90a kernels and their probes, several minutes on two cores): one no-GPU self-test
batch as `make grade-selftest NOGPU=1` runs it.
"""
import contextlib
import re
import threading
from pathlib import Path

import pytest

from common.errors import CourseError
from common.grading import gpu as gpumod
from common.grading import grader, selftest, static
from common.grading import workspace as W
from common.grading.spec import Grading
from common.testing import lab_of, needs_cuobjdump

LAB = lab_of(__file__)
G = Grading(LAB)
ARCH = "sm_90"
PROBES = LAB.module("grading.probes")
HEADER = LAB.kernels_dir / "hopper_ptx.cuh"


# ---------------------------------------------------------------------------------------------
# The table
# ---------------------------------------------------------------------------------------------

def test_every_region_has_a_marker_in_its_parts_file_or_the_header():
    found = {}
    for part, path in G.kernel_files().items():
        for m in W.regions(path.read_text(), path.name):
            found[m.id] = part
    for m in W.regions(HEADER.read_text(), HEADER.name):
        found[m.id] = G.regions[m.id].part
    assert set(found) == set(G.regions)
    for p in G.code_parts:
        assert set(p.regions) == {r for r, part in found.items() if part == p.name}
    assert G.headers == ["hopper_ptx.cuh"]


def test_every_gpu_check_is_gated_by_a_static_one_so_the_untouched_workspace_scores_zero():
    for p in G.code_parts:
        for c in p.checks:
            if c.needs_gpu:
                gate = c.requires
                while p.check(gate).requires:
                    gate = p.check(gate).requires
                assert not p.check(gate).needs_gpu, f"{p.name} {c.name}"


def test_the_shapes_cross_several_pipeline_rounds_and_every_edge():
    shapes = G.shapes["fp16_tensor"]
    assert all(k % 8 == 0 for _, _, k in shapes)                       # TMA's row pitch (lab.py's rule)
    assert max(k for _, _, k in shapes) // 64 >= 3 * 4                 # K-tiles: every stage filled 3+ times
    assert any(m % 128 and n % 128 for m, n, _ in shapes) and any(n % 8 for _, n, _ in shapes)


# ---------------------------------------------------------------------------------------------
# The workspace: the header with its region cut, no answer anywhere
# ---------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    dest = tmp_path_factory.mktemp("ws7c") / "workspace"
    W.generate(G, dest, quiet=True)
    return dest


def test_the_workspace_holds_the_graded_rungs_and_the_header(workspace):
    names = sorted(f.name for f in workspace.iterdir())
    assert names == sorted(["h1_wgmma_cp_async.cu", "h2_tma_mbarrier.cu", "h3_warp_specialized.cu",
                            "hopper_ptx.cuh", "answers.toml", "README.md"])
    assert "TODO(h1-desc)" in (workspace / "hopper_ptx.cuh").read_text()


def test_the_leak_check_finds_no_region_in_the_workspace(workspace):
    assert W.leaks(G, [f for f in workspace.iterdir() if f.suffix in (".cu", ".cuh")]) == []


def test_the_leak_check_would_find_the_reference_header():
    found = W.leaks(G, [HEADER])
    assert [rid for _, rid, _ in found] == ["h1-desc"]


# The answers in the forms a student could copy: the encoder's constants, the parities, the byte count.
ANSWERS = ["<< 62", "1) << 62", "16, 1024", "panel_bytes, 1024", "(t / STAGES) & 1", "^ 1;", "- 1) & 1",
           "sizeof(half);   // A's box", "(BN / 64) * (64 * BK)", "SBO = 1024", "LBO = BK", "layout type 1"]


@pytest.mark.parametrize("answer", ANSWERS)
def test_no_workspace_file_names_an_answer(workspace, answer):
    for f in workspace.iterdir():
        assert answer not in f.read_text(), f"{f.name} names {answer!r}"


def test_a_workspace_without_the_header_is_not_compiled(workspace, tmp_path):
    lonely = tmp_path / "h1_wgmma_cp_async.cu"
    lonely.write_text((workspace / "h1_wgmma_cp_async.cu").read_text())
    c = static.compile_student(LAB, G.part("h1"), lonely, ARCH, tmp_path / "build", G.headers)
    assert not c.ok and "hopper_ptx.cuh is missing from the workspace" in c.error


# ---------------------------------------------------------------------------------------------
# The descriptor probe's verdict
# ---------------------------------------------------------------------------------------------

ADDRS = [0x0400, 0x0420, 0x2440, 0x8C60, 0x18800, 0x30C00]
PANELS = [8192, 4096, 16384]


def _encode(addr, lbo, sbo, mode=1, start_shift=4):
    return ((addr & 0x3FFFF) >> start_shift & 0x3FFF) | ((lbo >> 4) & 0x3FFF) << 16 | ((sbo >> 4) & 0x3FFF) << 32 \
        | mode << 62


def _desc_text(k_major, mn_major):
    lines = [f"k {a} {k_major(a)}" for a in ADDRS]
    lines += [f"mn {a} {p} {mn_major(a, p)}" for a in ADDRS for p in PANELS]
    return "\n".join(lines)


def _desc(k_major, mn_major):
    return PROBES.desc_verdict([({}, _desc_text(k_major, mn_major))])


def test_the_reference_descriptors_pass_and_any_k_major_lbo_too():
    assert _desc(lambda a: _encode(a, 16, 1024), lambda a, p: _encode(a, p, 1024)) == (True, "")
    assert _desc(lambda a: _encode(a, 4096, 1024), lambda a, p: _encode(a, p, 1024)) == (True, "")


def test_exchanged_offsets_name_the_stride_field_and_what_it_holds():
    ok, reason = _desc(lambda a: _encode(a, 1024, 16), lambda a, p: _encode(a, 1024, p))
    assert not ok and "stride byte offset field: desc_k_major(0x400) holds 16 bytes" in reason
    assert "MN-major (B): stride byte offset" in reason


def test_the_64_byte_swizzle_mode_is_named():
    ok, reason = _desc(lambda a: _encode(a, 16, 1024, mode=2), lambda a, p: _encode(a, p, 1024, mode=2))
    assert not ok and "swizzle mode field" in reason and "holds 2 (the 64-byte swizzle)" in reason


def test_a_start_address_in_bytes_is_named():
    ok, reason = _desc(lambda a: _encode(a, 16, 1024, start_shift=0), lambda a, p: _encode(a, p, 1024, start_shift=0))
    assert not ok and "start address field" in reason and "byte address 0x4000" in reason


def test_a_wrong_panel_step_is_named_for_the_mn_major_operand_only():
    ok, reason = _desc(lambda a: _encode(a, 16, 1024), lambda a, p: _encode(a, 2 * p, 1024))
    assert not ok and reason.startswith("MN-major (B): leading byte offset field")


def test_the_stubs_zero_and_stray_bits_fail():
    assert not _desc(lambda a: 0, lambda a, p: 0)[0]
    ok, reason = _desc(lambda a: _encode(a, 16, 1024) | 1 << 15, lambda a, p: _encode(a, p, 1024))
    assert not ok and "outside every field" in reason
    assert not PROBES.desc_verdict([({}, "")])[0]


def test_the_descriptor_verdicts_never_print_the_values_to_write():
    for k in (lambda a: _encode(a, 1024, 16), lambda a: _encode(a, 16, 1024, mode=3)):
        reason = _desc(k, lambda a, p: _encode(a, p, 1024))[1]
        assert "1024 bytes" not in reason and "holds 1 " not in reason and "should" not in reason


# ---------------------------------------------------------------------------------------------
# The expect_tx probe's verdict
# ---------------------------------------------------------------------------------------------

TILES = [(128, 128), (128, 64), (64, 256)]


def _tx(count):
    return PROBES.tx_verdict([({}, f"tx {bm} {bn} 64 {count(bm, bn, 64)}") for bm, bn in TILES])


def test_the_bytes_of_every_box_pass():
    assert _tx(lambda bm, bn, bk: (bm * bk + bk * bn) * 2) == (True, "")
    assert PROBES.tx_bytes(128, 128, 64) == 32768


@pytest.mark.parametrize("kernel", sorted(PROBES.TX_TILES))
def test_the_tx_probe_builds_exactly_the_tiles_the_kernel_allows(kernel, tmp_path):
    """TX_TILES against the kernel's own rule: of every BM in 64..256 and wgmma N, the tiles whose probe
    compiles with the reference file (its static_asserts) are the ones listed, no more, no fewer."""
    from concurrent.futures import ThreadPoolExecutor
    from common.build import find_nvcc
    from common.grading import hostprobe
    try:
        find_nvcc()
    except CourseError as e:
        pytest.skip(e.message)
    row = LAB.kernel(kernel)
    program = G.dir / "probes" / "tx.cu"
    includes = [LAB.kernels_dir, *LAB._include_dirs(row)]

    def compiles(tile):
        bm, bn = tile
        try:
            hostprobe.build(program, LAB.kernels_dir / row.source, tmp_path / f"tx-{bm}-{bn}", {"BM": bm, "BN": bn},
                            [f for f in row.nvcc_flags if f.startswith("-std")], includes)
            return True
        except CourseError:
            return False
    candidates = [(bm, bn) for bm in (64, 128, 192, 256) for bn in (64, 128, 256)]
    with ThreadPoolExecutor(max_workers=4) as pool:
        allowed = [tile for tile, ok in zip(candidates, pool.map(compiles, candidates)) if ok]
    assert allowed == PROBES.TX_TILES[kernel]


def test_elements_instead_of_bytes_is_half_everywhere():
    ok, reason = _tx(lambda bm, bn, bk: bm * bk + bk * bn)
    assert not ok and "exactly half" in reason


def test_the_a_box_alone_does_not_change_with_bn():
    ok, reason = _tx(lambda bm, bn, bk: bm * bk * 2)
    assert not ok and "does not change with BN" in reason


def test_four_bytes_an_element_never_completes():
    ok, reason = _tx(lambda bm, bn, bk: (bm * bk + bk * bn) * 4)
    assert not ok and "never completes" in reason and "hang" in reason


def test_the_placeholder_zero_announces_nothing():
    ok, reason = _tx(lambda bm, bn, bk: 0)
    assert not ok and "announces no bytes" in reason


def test_an_other_shortfall_completes_early():
    ok, reason = _tx(lambda bm, bn, bk: (bm * bk + bk * bn) * 2 - 16)
    assert not ok and "completes before" in reason
    assert "32768" not in reason                         # the right count is never printed


# ---------------------------------------------------------------------------------------------
# The phase parities through the pipeline model
# ---------------------------------------------------------------------------------------------

def _parity_text(stages, full, empty=None):
    tiles = 5 * stages
    rows = [f"{t} {full(t)}" + (f" {empty(t)}" if empty else "") for t in range(tiles)]
    return "\n".join([f"stages {stages}"] + rows)


def _parity(full, empty=None, stages=(4, 3)):
    return PROBES.parity_verdict([({"STAGES": s}, _parity_text(s, lambda t: full(t, s),
                                                              (lambda t: empty(t, s)) if empty else None))
                                  for s in stages])


def test_the_reference_parities_pass_for_h2_and_h3():
    assert _parity(lambda t, s: (t // s) & 1) == (True, "")
    assert _parity(lambda t, s: (t // s) & 1, lambda t, s: ((t // s) & 1) ^ 1) == (True, "")
    assert _parity(PROBES.full_parity, PROBES.empty_parity) == (True, "")


def test_a_parity_that_flips_every_tile_returns_before_the_fill_lands():
    ok, reason = _parity(lambda t, s: t & 1)
    assert not ok and "tile 1 (stage 1, its fill 0)" in reason and "before that fill has landed" in reason


def test_a_full_parity_that_never_flips_returns_early_at_the_wrap():
    ok, reason = _parity(lambda t, s: 0)
    assert not ok and "tile 4 (stage 0, its fill 1)" in reason and "tile 0's data" in reason


def test_fulls_parity_for_empty_deadlocks_on_the_first_fill():
    ok, reason = _parity(lambda t, s: (t // s) & 1, lambda t, s: (t // s) & 1)
    assert not ok and reason.startswith("STAGES = 4: hang:") and "never completes" in reason


def test_an_empty_parity_that_never_flips_overwrites_a_stage_being_read():
    ok, reason = _parity(lambda t, s: (t // s) & 1, lambda t, s: 1)
    assert not ok and "still being read" in reason and "tile 4" in reason


def test_a_value_that_is_no_parity_is_named():
    ok, reason = _parity(lambda t, s: t // s)
    assert not ok and "is 0 or 1" in reason


def test_the_model_parities_are_the_kernels_rule_at_every_stage_count():
    for s in (2, 3, 4, 7):
        tiles = 6 * s
        full = [PROBES.full_parity(t, s) for t in range(tiles)]
        empty = [PROBES.empty_parity(t, s) for t in range(tiles)]
        assert PROBES.pipeline(s, tiles, full, empty) is None
        assert empty[:s] == [1] * s                        # a fresh barrier passes the first round at once


# ---------------------------------------------------------------------------------------------
# Questions and predictions
# ---------------------------------------------------------------------------------------------

def test_every_question_has_a_computed_answer_and_a_reason_that_passes():
    for q in G.questions:
        assert q.grade(q.answer())[0]
        if q.why:
            assert q.grade_reason(q.why_model)[0] and not q.pasted_question_passes()
            assert not q.grade_reason(q.text)[0]


def test_the_predictions_are_exact_and_their_near_misses_fail():
    by = {p.id: p for p in G.predictions}
    tx, loads = by["h5_tx_bytes"], by["h4_tma_loads"]
    assert tx.answer() == PROBES.tx_bytes(128, 128, 64) and loads.answer() == (4096 // 64) * (1 + 256 // 64)
    assert tx.answer() != PROBES.tx_bytes(128, 256, 64)     # not h5 as built: its header states that stage's bytes
    from common.grading.questions import grade_prediction
    assert grade_prediction(tx, str(int(tx.answer())), None)[0]
    own_loads_only = PROBES.tx_bytes(128, 64, 64)           # A + the half of B a block issues itself
    for miss in (own_loads_only, tx.answer() / 2, tx.answer() + 2):
        ok, reason = grade_prediction(tx, miss, None)
        assert not ok and str(int(tx.answer())) not in reason
    for miss in ((4096 // 64) * 2, 4096 // 64, loads.answer() + 1):
        assert not grade_prediction(loads, miss, None)[0]


def test_no_answer_is_in_a_text_the_student_reads(workspace):
    texts = [(LAB.dir / "grading" / "README.md").read_text(), (LAB.dir / "README.md").read_text()]
    texts += [f.read_text() for f in workspace.iterdir()]
    for p in G.predictions:
        for t in texts:
            assert str(int(p.answer())) not in t, p.id


# ---------------------------------------------------------------------------------------------
# The known-wrong kernels
# ---------------------------------------------------------------------------------------------


def test_each_part_has_at_least_two_known_wrong_kernels_with_distinct_reasons_and_one_the_gpu_catches():
    for p in G.code_parts:
        ws = [w for w in G.wrong if w.part == p.name]
        assert len({w.reason for w in ws}) >= 2, p.name
        assert any("correct" in w.lose_on_gpu for w in ws), p.name


def test_a_header_patch_gets_its_own_folder_with_the_reference_kernel(tmp_path):
    out = selftest.wrong_sources(G, tmp_path)
    w = next(w for w in G.wrong if w.file)
    src = out[w]
    assert src.parent.name == w.name and (src.parent / "hopper_ptx.cuh").read_text() != HEADER.read_text()
    assert src.read_text() == G.kernel_files()[w.part].read_text()
    plain = next(w for w in G.wrong if not w.file)
    assert (out[plain].parent / "hopper_ptx.cuh").read_text() == HEADER.read_text()


# ---------------------------------------------------------------------------------------------
# Where the GPU checks run
# ---------------------------------------------------------------------------------------------

def test_a_gpu_that_is_not_hopper_grades_as_none_saying_why(monkeypatch, tmp_path):
    import common.device
    monkeypatch.setattr(common.device, "gpu_status", lambda: (True, "an NVIDIA A100 (sm_80)"))
    monkeypatch.setattr(type(LAB), "gpu_arch", lambda self: "sm_80")
    env = grader.environment(G, gpu=None, work=tmp_path)
    assert not env.gpu and env.arch == "sm_90"
    assert "sm_80" in env.gpu_text and "Hopper" in env.gpu_text
    with pytest.raises(CourseError):
        grader.environment(G, gpu=True, work=tmp_path)


def test_a_hang_costs_its_item_only_and_says_why(monkeypatch, tmp_path):
    monkeypatch.setattr(gpumod.subprocess, "Popen", lambda *a, **k: None)
    monkeypatch.setattr(gpumod, "_wait", lambda proc, out_dir, timeout: (None, ""))
    items = [{"id": f"0-{p}", "part": p} for p in ("h2", "h3")]
    res = gpumod.run_parts(LAB, items, tmp_path, G.GPU_TIMEOUT_S, G.HANG_HINT)
    assert set(res) == {"0-h2", "0-h3"}
    for r in res.values():
        assert r["crash"]["error"].startswith(f"did not finish in {G.GPU_TIMEOUT_S} s: hung: a wait that never "
                                              "completes (phase parity?")


def test_the_tma_hooks_launch_the_cubin_of_the_function_they_are_given(monkeypatch, tmp_path):
    """The grader loads a student's cubin (common.kernels.load_function) and passes its function to the
    row's hook, then times it against the reference's in the same process: each must run its own."""
    from common import kernels
    launch = LAB.module("launch")
    student, reference = tmp_path / "student.cubin", tmp_path / "reference.cubin"
    student.write_bytes(b"s")
    reference.write_bytes(b"r")
    f_stu, f_ref = object(), object()
    monkeypatch.setitem(kernels._cubin_of, id(f_stu), str(student))
    monkeypatch.setitem(kernels._cubin_of, id(f_ref), str(reference))
    ran = []
    monkeypatch.setattr(launch, "_fp16_steps", lambda k, cubin, *a, **kw: [lambda: ran.append(Path(cubin).name)])
    monkeypatch.setattr(launch, "_sm_count", lambda: 132)
    monkeypatch.setattr(launch, "clusters_that_fit", lambda k, cubin=None: 66)
    monkeypatch.setattr(launch, "_scratch", lambda purpose, nbytes, fill=None: 4096)     # h7's workspace
    launch._PREPARED.clear()
    hooks = (("h2", launch.tma_grid), ("h4", launch.tma_persistent), ("h5", launch.tma_clusters),
             ("h6", launch.tma_persistent_store), ("h7", launch.tma_stream_k))
    for name, hook in hooks:
        k = LAB.kernel(name)
        for f in (f_stu, f_ref, f_stu):
            hook(k, f, 256, 256, 256, 1, 2, 3, 1.0, 0.0, None)
    assert ran == ["student.cubin", "reference.cubin", "student.cubin"] * len(hooks)
    assert launch.cubin_for(LAB.kernel("h2"), None) == launch.cubin_of(LAB.kernel("h2"))
    launch._PREPARED.clear()


# ---------------------------------------------------------------------------------------------
# The self-test without a GPU (slow: 16 sm_90a kernels and their probes)
# ---------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    needs_cuobjdump()
    root = tmp_path_factory.mktemp("grading7c")
    g = Grading(LAB)
    g.build_dir = root / "build"
    env = grader.environment(g, gpu=False, arch=ARCH, seed=12345, work=root / "work")
    with _probes_watched() as probes:
        reports = grader.grade_many(g, selftest.jobs(g, root / "ws"), env, progress=False)
    env.probes_at_once = probes["most"]
    return g, reports, env


@contextlib.contextmanager
def _probes_watched():
    """hostprobe.run counted while it runs: the most calls in flight at once. The first call waits (up
    to 60 s) for a second to start, so probes run one after the other show as 1."""
    from common.grading import hostprobe
    real, seen, lock, second = hostprobe.run, {"now": 0, "most": 0, "calls": 0}, threading.Lock(), threading.Event()

    def run(*args):
        with lock:
            seen["now"] += 1
            seen["calls"] += 1
            seen["most"] = max(seen["most"], seen["now"])
            first = seen["calls"] == 1
        if not first:
            second.set()
        elif not second.wait(60):
            pass
        try:
            return real(*args)
        finally:
            with lock:
                seen["now"] -= 1
    hostprobe.run = run
    try:
        yield seen
    finally:
        hostprobe.run = real


def test_the_selftest_expectations_hold_without_a_gpu(graded):
    g, reports, env = graded
    assert selftest.expectations(g, reports, env) == []


def test_the_host_probes_of_a_batch_run_side_by_side(graded):
    """Each probe is an nvcc run; one after the other they took 236 s of lab 7b's selftest on the H200."""
    assert graded[2].probes_at_once >= 2


def test_the_reference_gets_every_static_point_and_the_gpu_checks_wait(graded):
    g, reports, _ = graded
    for p in reports[0].parts:
        for c in p.checks:
            assert c.status in (grader.PASS, grader.NEEDS_GPU), (p.name, c.check, c.reason)


def test_each_static_loss_names_its_symptom_not_the_model(graded):
    g, reports, _ = graded
    for w, r in zip(g.wrong, reports[2:]):
        reason = r.result(w.part, w.key_check).reason
        assert w.reason.lower() in reason.lower(), (w.name, reason)
        assert not re.search(r"\bshould\b|reference", reason), (w.name, reason)


# ---------------------------------------------------------------------------------------------
# The GPU path on a simulated GPU (common/grading/simgpu): h1, whose launch is the course's default
# (h2 and h3 launch through cuda-python's driver calls, which the simulated GPU does not have)
# ---------------------------------------------------------------------------------------------

def test_h1s_gpu_path_and_a_hang_that_costs_its_own_part_only(tmp_path, monkeypatch):
    """Three workspaces graded in one batch on the simulated GPU, each compiled with its own header:
    the reference, one whose kernel never returns (`BUG [hang]`), the reference again. The hang is
    stopped after GPU_TIMEOUT_S and told with the lab's HANG_HINT; the workspaces before and after it
    keep every point. The limit is 20 s: a healthy item takes about 3 s alone, and 8 s was overrun
    under a 16-worker make test (H100 machine, 2026-12-06)."""
    from common.grading import simgpu
    needs_cuobjdump()
    simgpu.use(monkeypatch, tmp_path / "bin")
    g = Grading(LAB)
    g.build_dir = tmp_path / "build"
    g.GPU_TIMEOUT_S = 20
    folders = []
    for name in ("first", "hung", "last"):
        W.generate(g, tmp_path / name, solution=True, quiet=True)
        folders.append(tmp_path / name)
    f = folders[1] / "h1_wgmma_cp_async.cu"
    f.write_text(f.read_text() + "\n// BUG [hang]: (simulated) the launch never returns\n")
    env = grader.Env(True, "a simulated GPU (common/grading/simgpu)", ARCH, 7, tmp_path / "work")
    reports = grader.grade_many(g, [grader.workspace_job(g, d, parts=["h1"]) for d in folders], env, progress=False)
    for r in (reports[0], reports[2]):
        assert [(c.check, c.status) for c in r.part("h1").checks] == [("desc", grader.PASS), ("correct", grader.PASS),
                                                                      ("fast", grader.PASS)], r.lost_lines()
    c = reports[1].result("h1", "correct")
    assert c.status == grader.FAIL and f"did not finish in {g.GPU_TIMEOUT_S} s: hung: a wait that never completes" \
        in c.reason, c.reason
    assert reports[1].result("h1", "desc").status == grader.PASS


def test_the_class_demo_gives_each_header_patch_its_patched_header(tmp_path):
    from common.grading import classroom
    made = {m.name: m for m in classroom.demo(G, tmp_path / "class", quiet=True)}
    for w in G.wrong:
        header = (made[w.name] / "hopper_ptx.cuh").read_text()
        kernel = (made[w.name] / G.kernel_files()[w.part].name).read_text()
        assert ("BUG" in header) == bool(w.file) and ("BUG" in kernel) == (not w.file), w.name
