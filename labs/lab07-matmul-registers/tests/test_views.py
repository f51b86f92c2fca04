"""What lab 7's notebooks show (common/views.py and common/explorers.py on this lab), without a GPU:
the recorded-results banner, the register tables (needs nvcc), the inner loops (needs cuobjdump),
the bench's redirection to reports/notebook/, the probe's recorded outputs, and the explorers'
views of every kernel and shared access."""
import json

import numpy as np
import pytest

from common import banks, explorers, fragments, hierarchy, records, roofline, views
from common.errors import CourseError
from common.testing import lab_of, needs_cuobjdump

LAB = lab_of(__file__)


def built(fn, *args):
    """fn(*args), skipping the test where the kernels cannot be compiled (no nvcc)."""
    try:
        return fn(*args)
    except CourseError as e:
        pytest.skip(f"lab 7's kernels do not compile here: {e.message.splitlines()[0]}")


def test_recorded_results_exist_and_the_banner_says_whose_they_are():
    record, path = views.recorded(LAB)
    assert record is not None, "results/ holds no lab07-bench_*.json: the notebooks have nothing to show without a GPU"
    text = views.banner(LAB, False, False, "no GPU (test)", record, path, views.arch_for(LAB, False, record))
    assert "recorded, not measured now" in text
    assert record["gpu"]["name"] in text and record["run"]["commit"][:7] in text
    assert record["run"]["date"][:10] in text and path.name in text


def test_the_banner_without_anything_recorded_says_so():
    assert "No recorded results" in views.banner(LAB, False, False, "no GPU", None, None, "sm_90")
    assert views.arch_for(LAB, False, None) == views.DEFAULT_ARCH


def test_the_recorded_record_reads_as_the_chapters_comparisons():
    """The 2026-11-30 record has no "ladders" entry: each ladder's precision comes from the table."""
    record, _ = views.recorded(LAB)
    assert "TF32 off" in records.ladder_table(record, "fp32", LAB).splitlines()[0]
    assert "tensor cores" in records.ladder_table(record, "fp16", LAB).splitlines()[0]
    table = records.comparisons_table(record, lab=LAB)
    assert "/ cuBLAS SGEMM" in table and "/ cuBLAS HGEMM" in table and "cuBLAS HGEMM / cuBLAS SGEMM" in table
    got = records.predictions_rows(record, {"HGEMM/SGEMM": 10, "v7": 50}, 4096, LAB)
    assert all(r["measured"] is not None for r in got)
    rows = {r["kernel"]: r for r in roofline.points(record, lab=LAB) if r["ladder"] == "fp16"}
    assert rows["t3"]["intensity"] and rows["t3"]["peak"] == pytest.approx(record["gpu"]["peaks"]["fp16_tensor"])


def test_build_table_shows_ptxas_beside_the_estimate_for_every_entry_point():
    rows = built(views.build_rows, LAB, "sm_90")
    entries = sum(len(k.entries) for k in LAB.all_kernels if LAB.build_arch(k, "sm_90"))
    assert len(rows) == entries
    assert all(r["registers"] > 0 and r["blocks"] >= 1 for r in rows)
    assert all(r["estimate"] > 0 for r in rows if r["kernel"].split("/")[0] in hierarchy.tilings(LAB))


def test_estimate_vs_ptxas_is_within_the_tests_margin():
    rows = built(views.estimate_vs_ptxas, LAB, ["sm_90"])
    assert all(abs(r["estimate"] - r["sm_90"]) <= max(8, 0.2 * r["sm_90"]) for r in rows)


def test_inner_loops_show_what_the_walkthrough_points_at():
    needs_cuobjdump()
    loops = built(views.inner_loops, LAB, "sm_90", ["v5", "v6", "t2"])
    assert sum("LDS.128" in l for l in loops["v6"]) == 32          # 4 per k step, BK = 8
    assert any("STS.128" in l for l in loops["v6"]) and not any("STS.128" in l for l in loops["v5"])
    assert sum("HMMA.16816" in l for l in loops["t2"]) == 32
    assert sum("LDSM" in l for l in loops["t2"]) == 12


def test_measure_writes_to_reports_not_results(monkeypatch, tmp_path):
    from common import targets
    assert views.notebook_dir(LAB).is_relative_to(LAB.reports_dir)
    seen = {}

    def fake_bench(lab, args, kernels_by_ladder=None, sizes=None, stem=None, out_dir=None, **_):
        seen["dir"], seen["lab"] = out_dir, lab
        print("a table nobody sees")
        (out_dir / f"{stem}_gpu_2026-12-01_abc.json").write_text(json.dumps(
            {"gpu": {"name": "fake"}, "run": {"date": "2026-12-01"}, "sizes": sizes, "results": []}))
    monkeypatch.setattr(targets, "bench", fake_bench)
    record, path = views.measure(LAB, [256], out_dir=tmp_path / "notebook")
    assert seen == {"dir": tmp_path / "notebook", "lab": LAB}
    assert record["sizes"] == [256] and path.parent == tmp_path / "notebook"


def test_probe_outputs_come_from_the_newest_recorded_probe(tmp_path):
    assert views.probe_outputs(LAB, False, results_dir=tmp_path)[0] is None
    outputs = {e: fragments.model_probe_output(e).tolist() for e in ("probe_ldmatrix", "probe_mma_f16", "probe_mma_tf32")}
    (tmp_path / "fragments-probe_gpu_2026-12-01_abc.json").write_text(json.dumps(
        {"gpu": {"name": "fake", "arch": "sm_90"}, "run": {"date": "2026-12-01", "commit": "abc"}, "outputs": outputs}))
    got, source = views.probe_outputs(LAB, False, results_dir=tmp_path)
    assert source.startswith("recorded") and got["probe_mma_f16"].dtype == np.uint32
    assert all(line.startswith("PASS") for line in views.probe_verdicts(got))


def test_the_probe_is_the_labs_own_module():
    probe = LAB.module("probe")
    assert probe.SOURCE == LAB.kernels_dir / "probe_fragments.cu" and probe.ENTRIES


# --- the explorers on lab 7 --------------------------------------------------------------------

NAMES = [k.name for k in hierarchy.modelled(LAB)]


@pytest.mark.parametrize("name", NAMES)
def test_every_kernel_has_a_view_with_a_figure(name):
    text, fig = explorers.hierarchy_view(LAB, name, "sm_90")
    assert fig is not None and text.startswith(name)
    assert "limited by" in text and "FLOP/B" in text


def test_sliders_offer_every_kernels_values():
    for t in hierarchy.tilings(LAB).values():
        for k, options in explorers.SLIDER_OPTIONS.items():
            assert getattr(t, k) in options, f"{t.name}.{k} = {getattr(t, k)} is not a slider value"


def test_a_change_is_named_and_moves_the_numbers():
    text, _ = explorers.hierarchy_view(LAB, "v7", "sm_90", BM=256)
    assert "v7 with BM=256" in text and "256 threads" in text


def test_a_tiling_that_does_not_fit_is_refused_with_the_reason():
    text, fig = explorers.hierarchy_view(LAB, "v5", "sm_90", WM=8)       # 8 x 128 is not 32 lanes x 8 x 8
    assert fig is None and text.startswith("cannot show this") and "cover the warp tile" in text


def test_a_change_to_the_sources_parameters_is_the_kernel_with_those_parameters():
    """v5's THREADS = (BM / TM) x (BN / TN): 16 x 16 thread tiles make it 64 threads, each warp 4 thread
    rows of 8 = a 64 x 128 strip; the explorer shows that kernel instead of refusing it."""
    text, fig = explorers.hierarchy_view(LAB, "v5", "sm_90", TM=16, TN=16)
    assert fig is not None and "64 threads" in text


def test_tensor_core_kernels_ignore_the_thread_tile_sliders():
    text, fig = explorers.hierarchy_view(LAB, "t2", "sm_90", TM=4)
    assert fig is not None and "TM ignored" in text


def test_the_tilings_table_has_a_line_per_kernel():
    text = explorers.tilings_table(LAB, "sm_86")
    assert all(f"\n{n} " in text for n in NAMES)


@pytest.mark.parametrize("name", list(banks.accesses(LAB)))
def test_every_lab_access_has_a_view(name):
    text, fig = explorers.access_view(LAB, name)
    assert text.startswith(name) and "wavefront" in text and fig is not None


def test_the_comparison_tables_cover_the_lab():
    assert "t2 A fragment, swizzled" in explorers.padding_vs_swizzle_table(lab=LAB, prefix="t2")
    table = explorers.main_loops_table(LAB)
    assert all(f"\n{k} " in table for k in banks.main_loops(LAB))
