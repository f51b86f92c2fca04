"""The ncu and sanitizer parsers and tables, on real output recorded on a GPU (no GPU needed here).

The fixtures are what `make ncu-table`, `make ncu-tensor` and `make sanitize` themselves saw on the
H200, plus compute-sanitizer on planted bugs (fixtures/broken_kernels.cu), all written by
capture_fixtures.sh. Until it has run, these tests skip and say so. Every expected value is derived
(from the problem size, the kernel table, or the sanitizer's own summary line), never typed in."""
import re
from pathlib import Path
from types import SimpleNamespace

import pytest

from common.testing import lab_of
from common import profiling
from common import banks, hierarchy, ncu, report
from common import ncu_metrics as nm
from common import sanitizer
from common.kernels import Kernel

LAB = lab_of(__file__)

FIXTURES = Path(__file__).parent / "fixtures"
SIZE = profiling.PROFILE_SIZE        # what the fixtures were profiled at (make ncu-table's default)


def fixture(name):
    path = FIXTURES / name
    if not path.exists():
        pytest.skip(f"fixture {name} not captured yet: run capture_fixtures.sh on a GPU machine (see its header)")
    return path.read_text()


def launches_of(name):
    found = ncu.parse_csv(fixture(name))
    assert found, f"{name}: no CSV rows"
    return found


def requested_metrics(text):
    m = re.search(r"--metrics (\S+)", text)
    return m.group(1).split(",")


def arch_of(launch):
    return "sm_" + launch.cc.replace(".", "")


def entry_at_profile_size(name):
    k = LAB.kernels[name]
    return k.entries[k.variant_for(SIZE, SIZE, SIZE)]


# --- ncu --------------------------------------------------------------------------------------

# (fixture file, the profile name it was captured for: cuBLAS is profiled as cublas-<precision>)
NCU_FIXTURES = [("ncu_fp32_v6.log", "v6"), ("ncu_fp32_cublas-sgemm.log", "cublas-fp32"),
                ("ncu_tensor_t3.log", "t3"), ("ncu_tensor_cublas-hgemm.log", "cublas-fp16_tensor")]


@pytest.mark.parametrize("fixture_name,name", NCU_FIXTURES, ids=[n for _, n in NCU_FIXTURES])
def test_every_requested_metric_comes_back_as_a_number(fixture_name, name):
    text = fixture(fixture_name)
    for launch in launches_of(fixture_name):
        for metric in requested_metrics(text):
            assert isinstance(launch.metrics.get(metric), (int, float)), f"{launch.kernel}: {metric} = {launch.metrics.get(metric)!r}"


@pytest.mark.parametrize("fixture_name,name", NCU_FIXTURES, ids=[n for _, n in NCU_FIXTURES])
def test_the_metrics_requested_are_the_ones_chosen_for_the_chip(fixture_name, name):
    launch = launches_of(fixture_name)[0]
    chosen = nm.fp32_metrics if "fp32" in fixture_name else nm.tensor_metrics
    assert requested_metrics(fixture(fixture_name)) == chosen(arch_of(launch))


@pytest.mark.parametrize("fixture_name,name", NCU_FIXTURES, ids=[n for _, n in NCU_FIXTURES])
def test_units_in_recorded_output_are_understood(fixture_name, name):
    for launch in launches_of(fixture_name):
        us = ncu.to_microseconds(launch.metrics[nm.DURATION], launch.units.get(nm.DURATION) or "nsecond")
        assert 1 < us < 10e6, f"{launch.kernel}: {us} us for a {SIZE}^3 GEMM"
        if nm.DRAM_BYTES_PER_S in launch.metrics:
            assert ncu.to_gigabytes_per_second(launch.metrics[nm.DRAM_BYTES_PER_S],
                                               launch.units.get(nm.DRAM_BYTES_PER_S) or "byte/second") > 0


@pytest.mark.parametrize("fixture_name,name", [f for f in NCU_FIXTURES if "cublas" not in f[1]],
                         ids=[n for _, n in NCU_FIXTURES if "cublas" not in n])
def test_lab_kernels_are_profiled_once_by_entry_name(fixture_name, name):
    launches = launches_of(fixture_name)
    assert [l.kernel for l in launches] == [entry_at_profile_size(name)]


def test_v6_performs_every_product_once():
    launch = launches_of("ncu_fp32_v6.log")[0]
    assert launch.metrics[nm.FFMA_THREAD_INST] == SIZE ** 3       # one FFMA per multiply-add, 2048 is edge-free


def test_cublas_sgemm_is_one_fp32_gemm_of_the_profiled_size():
    launches = launches_of("ncu_fp32_cublas-sgemm.log")
    assert 1 <= len(launches) <= profiling.CUBLAS_MAX_KERNELS
    ours = {e for k in LAB.all_kernels for e in k.entries.values()}
    assert not ours & {l.kernel for l in launches}
    ffma = sum(l.metrics[nm.FFMA_THREAD_INST] for l in launches)
    assert ffma == pytest.approx(SIZE ** 3, rel=0.01)              # FP32 FFMA, not TF32 tensor cores


def warp_phases(name):
    """Warps x main-loop phases of one launch at SIZE^3: (SIZE/BM)(SIZE/BN) blocks x threads/32 warps
    x SIZE/BK phases (the tiling common/hierarchy.py derives from the kernel file and models.py)."""
    t = hierarchy.tiling(LAB, name)
    return (SIZE // t.BM) * (SIZE // t.BN) * (t.threads // 32) * (SIZE // t.BK)


def model_loads(name):
    """common/banks.py's shared loads of one warp in one main-loop phase: (instructions, unique bytes)."""
    loads = [(banks.evaluate(LAB, access), count) for access, count, op in banks.main_loops(LAB)[name] if op == "ld"]
    return sum(count for _, count in loads), sum(count * a.unique_bytes for a, count in loads)


def test_v6_shared_load_bytes_are_counted_after_broadcast():
    """v6 has only LDS.128 (test_sass), yet ncu's shared-load bytes come to 4.5 per lane, not 16:
    sm__sass_data_bytes_mem_shared_op_ld counts each distinct address once per instruction. A warp's
    32 lanes are 2 thread rows (trow) x 16 thread columns (tcol). Per phase it runs 16 LDS.128 of
    As[k][trow*8 + i ..]: 2 distinct trow, 2 distinct 16-byte chunks = 32 unique bytes; and 16 of
    Bs[k][tcol*8 + j ..]: 16 distinct tcol = 256 unique bytes. (32 + 256) / (2 x 32 lanes) = 4.5.
    The ideal after broadcast is then (32 + 256) / 128 = 2.25 wavefronts per pair of loads. The
    expected values come from common/banks.py's access functions, which give the same 32 and 256."""
    m = launches_of("ncu_fp32_v6.log")[0].metrics
    instructions, unique = model_loads("v6")
    phases = warp_phases("v6")
    assert m[nm.LDS_INST] == instructions * phases                 # deterministic counts: exact
    assert m[nm.LD_BYTES] == unique * phases
    assert nm.shared_load_unique_bytes_per_lane(m) == pytest.approx(unique / (32 * instructions))   # 4.5
    _, ideal = nm.excess_wavefronts(m, "ld")
    assert ideal == pytest.approx(unique * phases / nm.WAVEFRONT_BYTES)


BANK_MODEL = [("ncu_fp32_v6.log", "v6"), ("ncu_tensor_t3.log", "t3")]


@pytest.mark.parametrize("fixture_name,name", BANK_MODEL, ids=[n for _, n in BANK_MODEL])
def test_the_bank_model_predicts_ncus_load_wavefronts_per_instruction(fixture_name, name):
    """common/banks.py against the hardware (issue 5): ncu's shared-load wavefronts per LDS + LDSM
    instruction = banks.predict_kernel's per instruction of the main loop. v6: 16 As reads at 2
    wavefronts (two distinct chunks; the quarter warps merge) and 16 Bs reads at 8 (2-way inside
    each quarter warp): 5.0. t3: conflict-free ldmatrix.x4: 4.0. First the model must have ncu's
    instruction count (exact), so that the two averages are over the same instructions. 1 %:
    MAIN_LOOPS leaves out what runs outside the main loop, a small part at 2048^3. If this fails,
    the model (or the kernel) is wrong: fix that, never the tolerance."""
    m = launches_of(fixture_name)[0].metrics
    instructions = m[nm.LDS_INST] + m[nm.LDSM_INST]
    predicted = banks.predict_kernel(LAB, name)["ld"]
    assert instructions == predicted["instructions"] * warp_phases(name)
    assert m[nm.LD_WAVEFRONTS] / instructions == pytest.approx(predicted["per_instruction"], rel=0.01)


def test_ncu_decides_for_the_merge_rule_of_the_bank_model():
    """Without the merge rule v6's As read would be four quarter-warp phases, 4 wavefronts, and the
    kernel 6.0 per instruction (banks.predict_kernel(merge=False)); ncu measures 5.0."""
    m = launches_of("ncu_fp32_v6.log")[0].metrics
    measured = m[nm.LD_WAVEFRONTS] / (m[nm.LDS_INST] + m[nm.LDSM_INST])
    assert measured != pytest.approx(banks.predict_kernel(LAB, "v6", merge=False)["ld"]["per_instruction"], rel=0.01)


def test_v6_shared_loads_per_ffma_match_the_chapter_model():
    m = launches_of("ncu_fp32_v6.log")[0].metrics
    model = LAB.kernels["v6"].model["smem_loads_per_ffma"]
    assert nm.shared_loads_per_warp_ffma(m) == pytest.approx(model, rel=0.1)


def _may_be_empty(row, key):
    """Columns that have no value by nature: cuBLAS has no chapter model, and a kernel that never
    runs LDS/LDSM (or STS: cp.async and wgmma fill and read shared memory without them) has no ideal."""
    return (key == "model_lds_per_ffma" and row["kernel"].startswith("cuBLAS")) or \
        (key == "ld_excess_pct" and not row["ld_ideal_M"]) or (key == "st_excess_pct" and not row["st_ideal_M"]) or \
        (key == "lds_unique_bytes_per_lane" and not row["lds_inst_M"])


def test_fp32_table_rows_have_every_column():
    rows = [profiling.fp32_row(LAB, name, l, SIZE) for fx, name in NCU_FIXTURES[:2] for l in launches_of(fx)]
    for r in rows:
        for _, cols in profiling.FP32_TABLES:
            for key, _, _ in cols:
                assert r[key] is not None or _may_be_empty(r, key), f"{r['kernel']}: no {key}"
    text = "\n".join(report.table(rows, cols) for _, cols in profiling.FP32_TABLES)
    assert "v6/vec" in text and "cuBLAS SGEMM" in text


def test_t3_runs_on_the_tensor_pipe():
    launch = launches_of("ncu_tensor_t3.log")[0]
    chip = nm.chip_for(arch_of(launch))
    hmma = launch.metrics[nm.tensor_fp_inst(chip)]
    # one HMMA.16816 does 16 x 8 x 16 multiply-adds; on sm_90 the counter also counts HFMA2.MMA moves
    assert SIZE ** 3 / (16 * 8 * 16) <= hmma <= 2 * SIZE ** 3 / (16 * 8 * 16)
    assert launch.metrics[nm.tensor_fp_pct(chip)] > 0


def test_tensor_table_rows_have_every_column():
    rows = []
    for fx, name in NCU_FIXTURES[2:]:
        for l in launches_of(fx):
            rows.append(profiling.tensor_row(LAB, name, l, SIZE, nm.chip_for(arch_of(l))))
    for r in rows:
        for _, cols in profiling.TENSOR_TABLES:
            for key, _, _ in cols:
                assert r[key] is not None or _may_be_empty(r, key), f"{r['kernel']}: no {key}"
    assert r["tensor_fp_pct"] > 0          # cuBLAS HGEMM uses the tensor cores too


# --- compute-sanitizer ------------------------------------------------------------------------

CLEAN_KERNELS = ["v6", "t3"]           # what capture_fixtures.sh sanitizes


def test_clean_runs_are_clean_for_every_tool_and_every_launch():
    plan = profiling.sanitize_plan(LAB, [LAB.kernels[n] for n in CLEAN_KERNELS])
    entries = [e for _, _, e, _ in plan]
    results = {}
    for tool in sanitizer.TOOLS:
        text = fixture(f"sanitizer_{tool}_clean.txt")
        found = sanitizer.parse(text, tool, entries)
        assert found.finished and found.clean, f"{tool}: {found.problems()}"
        results[tool] = (found, profiling.launched_entries(text), 0, tool)
    rows, problems = profiling.summarize(plan, results)
    assert problems == []
    assert all(r[t] == "clean" for r in rows for t in sanitizer.TOOLS)


BROKEN = [("memcheck", "broken_oob_write"), ("racecheck", "broken_smem_race"), ("initcheck", "broken_uninit_read")]


@pytest.mark.parametrize("tool,kernel", BROKEN, ids=[t for t, _ in BROKEN])
def test_a_planted_bug_is_found_and_owned_by_its_kernel(tool, kernel):
    text = fixture(f"sanitizer_{tool}_broken.txt")
    found = sanitizer.parse(text, tool, ["clean_copy", kernel])
    assert found.finished and found.total_errors >= 1
    assert found.errors[kernel] == found.total_errors          # every finding tied to the broken kernel
    assert found.status("clean_copy") == "clean"
    assert re.search(r"^# exit status 1$", text, re.M)         # --error-exitcode 1


@pytest.mark.parametrize("tool,kernel", BROKEN, ids=[t for t, _ in BROKEN])
def test_a_planted_bug_fails_the_summary_naming_kernel_and_tool(tool, kernel):
    text = fixture(f"sanitizer_{tool}_broken.txt")
    found = sanitizer.parse(text, tool, ["clean_copy", kernel])
    plan = [(Kernel(k, "broken_kernels.cu", {"": k}, "fp32"), "", k, [None]) for k in ("clean_copy", kernel)]
    rows, problems = profiling.summarize(plan, {tool: (found, {"clean_copy": 1, kernel: 1}, 1, "log")})
    assert len(problems) == 1 and problems[0].startswith(f"{tool}: {kernel}: ")
    assert next(r for r in rows if r["entry"] == "clean_copy")[tool] == "clean"
