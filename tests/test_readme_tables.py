"""The lab sheets' ladder tables are generated from the committed records (common/readme_tables.py),
never typed: each README's tables equal what the newest record gives, and a table typed or edited by
hand is caught. The generator itself is tested on a synthetic record, without a GPU."""
import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from common import readme_tables as rt
from common.errors import CourseError
from common.kernels import Kernel
from common.lab import load

ROOT = Path(__file__).resolve().parents[1]
LABS = sorted(p.parent for p in (ROOT / "labs").glob("*/lab.py"))


@pytest.mark.parametrize("folder", LABS, ids=[p.name for p in LABS])
def test_lab_readme_has_a_generated_ladder_table(folder):
    found = rt.blocks((folder / "README.md").read_text())
    assert found, (f"{folder.name}/README.md has no generated table: add a block "
                   "'<!-- generated: ladder record=<lab>-bench_*.json -->' ... '<!-- end generated -->'")


@pytest.mark.parametrize("folder", LABS, ids=[p.name for p in LABS])
def test_lab_readme_tables_equal_the_newest_committed_record(folder):
    lab = load(folder)
    stale = rt.stale(lab)
    assert not stale, (f"{folder.name}/README.md: the table(s) {[s for s, _, _ in stale]} differ from the newest "
                       f"record in results/: run `python -m common.readme_tables --lab labs/{folder.name}`")


# --- the generator, on synthetic data -------------------------------------------------------------

def _record(date="2026-12-04T10:00:00+00:00", v2_4096=87.25):
    res = []
    for size in (2048, 4096):
        res.append({"ladder": "fp32", "kernel": "cuBLAS", "size": size, "tflops": 50.0, "pct_of_cublas": 100.0})
        res.append({"ladder": "fp32", "kernel": "v1", "size": size, "tflops": 10.0, "pct_of_cublas": 20.0})
        if size == 4096:                                     # v2 timed at one size only
            res.append({"ladder": "fp32", "kernel": "v2", "size": size, "tflops": 40.0, "pct_of_cublas": v2_4096})
        res.append({"ladder": "fp32", "kernel": "lib", "size": size, "tflops": 45.0, "pct_of_cublas": 90.0})
        res.append({"ladder": "fp32", "kernel": "v1 (tuned)", "size": size, "tflops": 11.0, "pct_of_cublas": 22.0})
    return {"gpu": {"name": "Test GPU", "arch": "sm_99"}, "run": {"date": date, "commit": "0" * 40},
            "sizes": [2048, 4096], "ladders": {"fp32": {"precision": "fp32", "baseline_mode": "cuBLAS SGEMM, TF32 off"}},
            "results": res}


def _sweep(date="2026-12-04T10:00:00+00:00"):
    res = []
    for shape, pct in (("1x64x64", {"cuBLAS": 100.0, "gemv": 150.0, "splitk": 80.0, "tiles": 10.0}),
                       ("4x64x64", {"cuBLAS": 100.0, "gemv": 60.0, "splitk": 90.0}),
                       ("4x32x32", {"cuBLAS": 100.0, "gemv": 1.0, "splitk": 1.0})):     # another N: not in n=64
        for kernel, p in pct.items():
            res.append({"ladder": "fp32", "set": "decode", "shape": shape, "N": int(shape.split("x")[1]),
                        "kernel": kernel, "pct_of_cublas": p})
    res.append({"ladder": "fp32", "set": "decode", "shape": "1x64x64", "N": 64, "kernel": "splitk[splits=1]",
                "pct_of_cublas": 500.0})                                               # a build, not a row
    return {"gpu": {"name": "Test GPU", "arch": "sm_99"}, "run": {"date": date}, "copy": {"gbs": 1234.4},
            "ladders": {"fp32": {"precision": "fp32", "baseline_mode": "cuBLAS SGEMM, TF32 off"}}, "results": res}


def _fake_lab(tmp_path, records):
    results = tmp_path / "results"
    results.mkdir()
    for i, rec in enumerate(records):
        kind = "sweep" if "set" in rec["results"][0] else "bench"
        (results / f"fake-{kind}_test-gpu_{i}.json").write_text(json.dumps(rec))
    kernels = {"v1": Kernel("v1", "v1_plain.cu", {"": "v1"}, "fp32", title="one output per thread"),
               "v2": Kernel("v2", "v2_blocked.cu", {"": "v2"}, "fp32", title="a block of outputs per thread"),
               "lib": Kernel("lib", "lib.cu", {"": "lib"}, "fp32", title="a library's kernel", yardstick=True)}
    return SimpleNamespace(name="fake", dir=tmp_path, results_dir=results, kernels=kernels,
                           option=lambda name, default=None: default)


README = """# A lab

<!-- generated: ladder record=fake-bench_*.json -->
<!-- end generated -->

After the table.
"""


def test_generated_ladder_names_gpu_date_baseline_and_every_rung(tmp_path):
    lab = _fake_lab(tmp_path, [_record()])
    text = rt.render(lab, "ladder record=fake-bench_*.json ladder=fp32")
    assert "Test GPU (sm_99) on 2026-12-04" in text and "cuBLAS SGEMM, TF32 off" in text
    assert "| rung | the idea it adds | file | 2048³ | 4096³ |" in text
    assert "| v1 | one output per thread | `kernels/v1_plain.cu` | 20.0 % | 20.0 % |" in text
    assert "| v2 | a block of outputs per thread | `kernels/v2_blocked.cu` | – | 87.2 % |" in text
    assert "| lib (yardstick) | a library's kernel |" in text
    assert "| v1 (tuned) | v1 with the build `make tune` chose for this GPU |" in text
    assert "| cuBLAS |" not in text                     # the baseline is the 100 % every row is measured against


def test_generated_table_comes_from_the_newest_record_by_its_date(tmp_path):
    lab = _fake_lab(tmp_path, [_record("2026-12-05T00:00:00+00:00", 91.0), _record("2026-12-01T00:00:00+00:00", 50.0)])
    assert "| 91.0 % |" in rt.render(lab, "ladder record=fake-bench_*.json sizes=4096")


def test_a_table_typed_or_edited_by_hand_is_stale_and_refresh_rewrites_it(tmp_path):
    lab = _fake_lab(tmp_path, [_record()])
    readme = tmp_path / "README.md"
    readme.write_text(README)
    assert len(rt.stale(lab, readme)) == 1               # empty block: stale
    assert rt.refresh(lab, readme) == 1
    assert rt.stale(lab, readme) == [] and readme.read_text().endswith("After the table.\n")
    readme.write_text(readme.read_text().replace("87.2 %", "97.2 %"))     # a number typed over
    assert len(rt.stale(lab, readme)) == 1
    assert rt.refresh(lab, readme) == 1 and "87.2 %" in readme.read_text()
    assert rt.refresh(lab, readme) == 0                  # nothing left to change


def test_a_new_record_makes_the_readme_stale(tmp_path):
    lab = _fake_lab(tmp_path, [_record()])
    readme = tmp_path / "README.md"
    readme.write_text(README)
    rt.refresh(lab, readme)
    (lab.results_dir / "fake-bench_test-gpu_9.json").write_text(json.dumps(_record("2026-12-09T00:00:00+00:00", 99.0)))
    assert len(rt.stale(lab, readme)) == 1


@pytest.mark.parametrize("text, what", [
    ("<!-- generated: ladder record=x_*.json -->\n| typed |\n", "no '<!-- end generated -->'"),
    ("<!-- generated: ladder record=a -->\n<!-- generated: ladder record=b -->\n<!-- end generated -->\n", "not closed"),
])
def test_a_broken_marker_says_what_to_add(text, what):
    with pytest.raises(CourseError, match=what):
        rt.blocks(text)


@pytest.mark.parametrize("spec, what", [("table record=x", "first word"), ("ladder fp32", "key=value"),
                                        ("ladder ladder=fp32", "names no record")])
def test_a_bad_spec_says_what_is_wrong(spec, what):
    with pytest.raises(CourseError, match=what):
        rt.parse_spec(spec)


def test_a_marker_naming_no_record_says_which_target_writes_one(tmp_path):
    lab = _fake_lab(tmp_path, [])
    with pytest.raises(CourseError, match="no record matches results/none_\\*.json"):
        rt.render(lab, "ladder record=none_*.json")


def test_furthest_rung_is_the_best_rung_at_the_largest_size_never_a_yardstick_or_a_tuned_build(tmp_path):
    lab = _fake_lab(tmp_path, [_record()])           # lib (a yardstick, 90 %) and v1 (tuned) are not rungs
    assert rt.furthest(lab, "ladder record=fake-bench_*.json") == "v2: 87.2 % of cuBLAS SGEMM at 4096³ (Test GPU)"
    assert rt.furthest(lab, "ladder record=fake-bench_*.json sizes=2048") == "v1: 20.0 % of cuBLAS SGEMM at 2048³ (Test GPU)"


def test_sweep_table_and_its_furthest_kernel_by_the_worst_shape(tmp_path):
    lab = _fake_lab(tmp_path, [_sweep()])
    spec = "sweep record=fake-sweep_*.json ladder=fp32 set=decode n=64"
    text = rt.render(lab, spec)
    assert "| kernel | what it is | file | 1x64x64 | 4x64x64 |" in text and "4x32x32" not in text
    assert "copy in the same run: 1234 GB/s" in text
    assert "| tiles | not in the lab's table | – | 10.0 % | – |" in text and "splits=1" not in text
    # gemv wins one shape by far, splitk is never below 80 %: the best worst case is splitk's
    assert rt.furthest(lab, spec) == "splitk: at least 80.0 % of cuBLAS SGEMM at M = 1, 4 (M x 64x64) (Test GPU)"


def test_labs_table_links_each_lab_with_its_furthest_rungs():
    text = rt.labs_markdown([("labs/lab09-x/README.md", "Lab 9, Things: one and two", ["a: 1 %", "b: 2 %"]),
                             ("labs/lab10-y/README.md", "Lab 10: no comma", [])])
    assert "| [Lab 9](labs/lab09-x/README.md) | Things: one and two | a: 1 %<br>b: 2 % |" in text
    assert "| [Lab 10: no comma](labs/lab10-y/README.md) | Lab 10: no comma | – |" in text


def test_top_level_readme_lab_table_equals_what_the_records_hold():
    assert rt.blocks((ROOT / "README.md").read_text()), "README.md has no generated '<!-- generated: labs -->' block"
    stale = rt.stale(None)
    assert not stale, "README.md: the labs table differs from the records: run `python -m common.readme_tables`"


def test_a_students_own_bench_record_never_replaces_the_committed_one(tmp_path):
    """make bench on the student's GPU writes a newer record beside the course's: the README's tables,
    and their test, read only what git tracks, so `make test` after `make bench` still passes."""
    import subprocess
    lab = _fake_lab(tmp_path, [_record("2026-12-01T00:00:00+00:00", 50.0)])
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    subprocess.run(["git", "-C", str(tmp_path), "add", "results"], check=True)
    (lab.results_dir / "fake-bench_my-gpu_9.json").write_text(json.dumps(_record("2026-12-24T00:00:00+00:00", 99.0)))
    assert [p.name for p in rt.committed(lab.results_dir, "fake-bench_*.json")] == ["fake-bench_test-gpu_0.json"]
    text = rt.render(lab, "ladder record=fake-bench_*.json sizes=4096")
    assert "| 50.0 % |" in text and "99.0 %" not in text and "2026-12-01" in text


def test_a_block_naming_no_ladder_shows_every_ladder_of_the_record(tmp_path):
    two = _record()
    two["results"] += [dict(r, ladder="fp16") for r in two["results"] if r["kernel"] in ("cuBLAS", "v2")]
    two["ladders"]["fp16"] = {"precision": "fp16_tensor", "baseline_mode": "cuBLAS GemmEx, FP16"}
    lab = _fake_lab(tmp_path, [two])
    text = rt.render(lab, "ladder record=fake-bench_*.json")
    assert text.count("| rung | the idea it adds |") == 2 and "% of cuBLAS GemmEx, FP16" in text
    assert rt.furthest(lab, "ladder record=fake-bench_*.json") == \
        "v2: 87.2 % of cuBLAS SGEMM at 4096³ (Test GPU)<br>v2: 87.2 % of cuBLAS HGEMM at 4096³ (Test GPU)"


def test_a_block_naming_a_ladder_takes_the_newest_record_that_times_it(tmp_path):
    """`make bench LADDER=fp16` writes a record of one ladder, newer than the whole bench before it: the
    fp32 block keeps the whole bench's table (and its furthest rung), the fp16 block takes the new one."""
    whole = _record("2026-12-01T00:00:00+00:00", 50.0)
    newer = _record("2026-12-05T00:00:00+00:00", 91.0)
    newer["results"] = [dict(r, ladder="fp16") for r in newer["results"]]
    newer["ladders"] = {"fp16": {"precision": "fp16_tensor", "baseline_mode": "cuBLAS GemmEx, FP16"}}
    lab = _fake_lab(tmp_path, [whole, newer])
    assert "| 50.0 % |" in rt.render(lab, "ladder record=fake-bench_*.json ladder=fp32 sizes=4096")
    assert "| 91.0 % |" in rt.render(lab, "ladder record=fake-bench_*.json ladder=fp16 sizes=4096")
    assert rt.furthest(lab, "ladder record=fake-bench_*.json ladder=fp32") == "v2: 50.0 % of cuBLAS SGEMM at 4096³ (Test GPU)"


def test_a_block_naming_sizes_takes_the_newest_record_that_times_them_all(tmp_path):
    """A later run at one small size (`make bench SIZES=1024`) is newer than the whole bench: a block whose
    columns are 2048 and 4096 keeps the bench that timed those, and says what is missing when none did."""
    whole = _record("2026-12-01T00:00:00+00:00", 50.0)
    small = _record("2026-12-05T00:00:00+00:00", 91.0)
    small["results"] = [dict(r, size=1024) for r in small["results"]]
    small["sizes"] = [1024]
    lab = _fake_lab(tmp_path, [whole, small])
    assert "| 50.0 % |" in rt.render(lab, "ladder record=fake-bench_*.json ladder=fp32 sizes=2048,4096")
    assert "1024³" in rt.render(lab, "ladder record=fake-bench_*.json ladder=fp32")
    assert rt.furthest(lab, "ladder record=fake-bench_*.json ladder=fp32 sizes=2048,4096") == \
        "v2: 50.0 % of cuBLAS SGEMM at 4096³ (Test GPU)"
    with pytest.raises(CourseError, match="fp32 timed at 4096, 8192"):
        rt.render(lab, "ladder record=fake-bench_*.json ladder=fp32 sizes=4096,8192")
    with pytest.raises(CourseError, match="whole numbers"):
        rt.render(lab, "ladder record=fake-bench_*.json ladder=fp32 sizes=4k")


def test_figures_are_the_numbers_the_block_shows(tmp_path):
    """figures() reads the record the block's table comes from (the same choice by date and sizes), so a
    lab's test of the sheet's sentences sees what the student sees."""
    whole = _record("2026-12-01T00:00:00+00:00", 50.0)
    small = _record("2026-12-05T00:00:00+00:00", 91.0)
    small["results"] = [dict(r, size=1024) for r in small["results"]]
    small["sizes"] = [1024]
    lab = _fake_lab(tmp_path, [whole, small])
    record, fig = rt.figures(lab, "ladder record=fake-bench_*.json ladder=fp32 sizes=2048,4096")
    assert record["run"]["date"].startswith("2026-12-01")
    assert fig["v2"][4096] == 50.0 and fig["cuBLAS"][2048] == 100.0
    assert set(rt.figures(lab, "ladder record=fake-bench_*.json ladder=fp32")[1]["v2"]) == {1024}
    with pytest.raises(CourseError, match="names its ladder"):
        rt.figures(lab, "ladder record=fake-bench_*.json")


def test_a_sentence_the_record_contradicts_is_named_with_its_figures(tmp_path):
    """contradiction(): None while the sheet says the sentence and the record bears it out; the figures
    where a newer record reorders the rungs; what to update where the sentence was rewritten."""
    lab = _fake_lab(tmp_path, [_record("2026-12-01T00:00:00+00:00", 50.0)])
    readme = tmp_path / "README.md"
    readme.write_text("# A lab\n\nWhat to notice: v2 more than\ndoubles v1 at 4096³.\n")
    def _v2_doubles_v1(fig, sizes):
        return all(fig["v2"][n] > 2 * fig["v1"][n] for n in sizes)
    claim = rt.Claim("v2 more than doubles v1 at 4096³", "ladder record=fake-bench_*.json ladder=fp32",
                     (4096,), _v2_doubles_v1)
    assert claim.name == "v2_doubles_v1"
    assert rt.contradiction(lab, claim, readme) is None          # 50.0 against 20.0; the line break is a space
    (tmp_path / "results" / "fake-bench_test-gpu_1.json").write_text(
        json.dumps(_record("2026-12-05T00:00:00+00:00", 35.0)))
    problem = rt.contradiction(lab, claim, readme)
    assert "Test GPU (sm_99), 2026-12-05" in problem and "'v2': {4096: 35.0}" in problem and "rewrite" in problem
    readme.write_text("# A lab\n\nv2 is faster than v1.\n")
    assert "no longer says" in rt.contradiction(lab, claim, readme)


def test_figures_of_a_sweep_block_are_its_shapes(tmp_path):
    lab = _fake_lab(tmp_path, [_sweep()])
    _, fig = rt.figures(lab, "sweep record=fake-sweep_*.json ladder=fp32 set=decode n=64")
    assert fig["gemv"] == {"1x64x64": 150.0, "4x64x64": 60.0}        # 4x32x32 has another N
    assert fig["splitk"]["4x64x64"] == 90.0 and "tiles" in fig
    assert not any("[" in k for k in fig)                              # builds are no rows of the table
