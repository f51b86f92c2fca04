"""The roofline on a synthetic bench record (no GPU). Lab 7's kernels at their model intensities:
labs/lab07-matmul-registers/tests/test_models_vs_lab.py."""
import json

import pytest

from common import roofline

H200 = {"name": "NVIDIA H200", "arch": "sm_90", "sms": 132, "sm_clock_max_mhz": 1980,
        "memory_clock_max_mhz": 3201, "memory_bus_bits": 6144}


def synthetic_record(tflops=None, date="2026-12-01T10:00:00+00:00"):
    tflops = tflops or {("fp32", "cuBLAS"): 50.0, ("fp32", "v3"): 5.0, ("fp32", "v5"): 30.0, ("fp32", "v7"): 45.0,
                        ("fp16", "cuBLAS"): 600.0, ("fp16", "t1"): 40.0, ("fp16", "t3"): 300.0}
    results = [{"ladder": l, "kernel": k, "variant": "", "size": n, "tflops": t * n / 4096}
               for (l, k), t in tflops.items() for n in (1024, 4096)]
    return {"what": "lab07-bench", "gpu": H200, "run": {"date": date, "commit": "abc"}, "sizes": [1024, 4096],
            "ladders": {"fp32": {"precision": "fp32"}, "fp16": {"precision": "fp16_tensor"}}, "results": results}


# FLOP/B if nothing hits in L2: 128 x 128 FP32 tiles 32, 16 x 16 ones 4 (lab 7's v5 and v3)
INTENSITIES = {"v3": 4.0, "v5": 32.0, "v7": 32.0, "t1": 8.0, "t3": 64.0}


def test_bandwidth_from_memory_clock_and_bus_width():
    gbs, how = roofline.bandwidth_gbs(H200)
    assert gbs == pytest.approx(4917, rel=0.01) and "bits" in how


def test_bandwidth_falls_back_to_the_data_sheet_by_name():
    assert roofline.bandwidth_gbs({"name": "NVIDIA GeForce RTX 4090"})[0] == 1008
    assert roofline.bandwidth_gbs({"name": "NVIDIA H100 PCIe"})[0] == 2000     # longest match wins
    assert roofline.bandwidth_gbs({"name": "mystery"}) == (None, "unknown")


def test_roofs_and_ridge_points():
    r = roofline.roofs(H200)
    assert r["fp32"] == pytest.approx(66.9, abs=0.1)
    assert r["ridge_fp32"] == pytest.approx(66.9 / 4.917, rel=0.01)
    assert r["ridge_fp16_tensor"] > r["ridge_fp32"]


def test_attainable_is_the_lower_roof():
    assert roofline.attainable(1.0, 60.0, 5.0) == 5.0
    assert roofline.attainable(100.0, 60.0, 5.0) == 60.0


def test_points_place_each_kernel_at_its_model_intensity():
    rows = {(r["ladder"], r["kernel"]): r for r in roofline.points(synthetic_record(), intensities=INTENSITIES)}
    assert all(r["size"] == 4096 for r in rows.values())
    v5 = rows[("fp32", "v5")]
    assert v5["intensity"] == pytest.approx(32) and v5["bound"] == "compute"
    assert v5["pct_of_roof"] == pytest.approx(100 * 30 / v5["roof"])
    v3 = rows[("fp32", "v3")]
    assert v3["intensity"] == pytest.approx(4.0)
    assert v3["bound"] == "memory" and v3["roof"] == pytest.approx(4 * 4.917, rel=0.01)
    assert rows[("fp32", "cuBLAS")]["intensity"] is None
    assert rows[("fp16", "t3")]["peak"] == pytest.approx(roofline.roofs(H200)["fp16_tensor"])   # its precision's roof


def test_roofs_cover_every_precisions_peak():
    r = roofline.roofs(H200)
    assert {"fp32", "fp16_tensor", "tf32_tensor", "bf16_tensor"} <= set(r)


def test_newest_record_picks_the_latest_date(tmp_path):
    for i, date in enumerate(["2026-12-01T10:00:00+00:00", "2026-12-03T10:00:00+00:00", "2026-12-02T10:00:00+00:00"]):
        (tmp_path / f"lab07-bench_gpu_{i}.json").write_text(json.dumps(synthetic_record(date=date)))
    rec, path = roofline.newest_record(tmp_path)
    assert rec["run"]["date"].startswith("2026-12-03") and path.name == "lab07-bench_gpu_1.json"
    assert roofline.newest_record(tmp_path / "nothing") == (None, None)


def test_plot_writes_a_png(tmp_path):
    fig = roofline.plot(synthetic_record(), path=tmp_path / "roofline.png", intensities=INTENSITIES)
    assert (tmp_path / "roofline.png").stat().st_size > 10_000
    ax = fig.axes[0]
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    labels = {t.get_text() for t in ax.texts}
    assert {"v5", "v7", "t3"} <= labels
