"""A lab's results/ holds the records the course reads and the newest run of each kind per GPU; the
older runs are in git's history, not in the tree (common/runs.py; scripts/prune-results.py prunes)."""
import subprocess
import sys
from pathlib import Path

import pytest

from common import runs

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = sorted(ROOT.glob("labs/*/results")) + ([ROOT / "results"] if (ROOT / "results").is_dir() else [])


@pytest.fixture(scope="module")
def named():
    return runs.named_in_code(ROOT)


@pytest.mark.parametrize("folder", FOLDERS, ids=[str(f.relative_to(ROOT)) for f in FOLDERS])
def test_a_results_folder_holds_only_the_newest_run_per_kind_and_gpu(folder, named):
    extra = runs.extra_runs(folder, ROOT, named)
    assert not extra, (f"{folder.relative_to(ROOT)} holds older runs: " +
                       "; ".join(f"{kind} on {gpu or 'no GPU named'}: {len(rs)} runs" for (kind, gpu), rs in extra.items()) +
                       ". Keep the newest (.venv/bin/python scripts/prune-results.py --apply: git keeps the others)")


def test_run_names_are_read_as_the_targets_write_them():
    assert runs.parse("lab07-bench_nvidia-h200_2026-12-03_19b1a27_fp32.png") == \
        runs.Run("lab07-bench", "nvidia-h200", "2026-12-03", "19b1a27", 1)
    assert runs.parse("lab07b-c6-compare_nvidia-h200_2026-12-02_8ded15d-3.json").n == 3
    assert runs.parse("lab07d-wgmma_decode-compare_nvidia-h200_2026-12-03_30fa616.json").kind == \
        "lab07d-wgmma_decode-compare"                                 # a kernel's name may hold an underscore
    assert runs.parse("lab07-copy-placement-tries_nvidia-h200_2026-12-01.json").commit == ""
    assert runs.parse("h200-labtests_2026-12-01_7283a6f.log").gpu == ""
    assert runs.parse("lab07-tuned_nvidia-h200.json") is None           # make tune's standing record: no run


def _folder(tmp_path):
    d = tmp_path / "results"
    d.mkdir()
    for name, date in (("labx-bench_gpu-a_2026-12-01_aaaaaaa", "2026-12-01T10:00:00"),
                       ("labx-bench_gpu-a_2026-12-03_bbbbbbb", "2026-12-03T10:00:00"),
                       ("labx-bench_gpu-b_2026-12-02_ccccccc", "2026-12-02T10:00:00"),
                       ("labx-sweep_gpu-a_2026-12-01_ddddddd", "2026-12-01T10:00:00"),
                       ("labx-sweep_gpu-a_2026-12-02_eeeeeee", "2026-12-02T10:00:00")):
        (d / f"{name}.json").write_text('{"run": {"date": "%s"}}' % date)
        (d / f"{name}_fp32.png").write_text("")
    (d / "labx-tuned_gpu-a.json").write_text("{}")
    return d


def test_the_older_runs_are_found_with_their_charts_and_a_record_named_in_code_stays(tmp_path):
    d = _folder(tmp_path)
    (tmp_path / "common").mkdir()
    (tmp_path / "common" / "reader.py").write_text('PINNED = "labx-sweep_gpu-a_2026-12-01_ddddddd.json"\n')
    gone = sorted(p.name for p in runs.superseded(d, tmp_path))
    assert gone == ["labx-bench_gpu-a_2026-12-01_aaaaaaa.json", "labx-bench_gpu-a_2026-12-01_aaaaaaa_fp32.png"]
    extra = runs.extra_runs(d, tmp_path)
    assert list(extra) == [("labx-bench", "gpu-a")] and len(extra[("labx-bench", "gpu-a")]) == 2
    for p in runs.superseded(d, tmp_path):
        p.unlink()
    assert runs.extra_runs(d, tmp_path) == {}


def test_newest_is_the_records_own_time_as_the_readers_order_them(tmp_path):
    d = tmp_path / "results"
    d.mkdir()
    (d / "labx-bench_gpu_2026-12-02_aaaaaaa.json").write_text('{"run": {"date": "2026-12-02T23:00:00"}}')
    (d / "labx-bench_gpu_2026-12-02_bbbbbbb.json").write_text('{"run": {"date": "2026-12-02T08:00:00"}}')
    assert [p.name for p in runs.superseded(d, tmp_path, keep_named=False)] == ["labx-bench_gpu_2026-12-02_bbbbbbb.json"]


def test_the_prune_script_lists_and_removes_nothing_by_default():
    import os
    p = subprocess.run([sys.executable, str(ROOT / "scripts" / "prune-results.py")], capture_output=True, text=True,
                       timeout=300, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert p.returncode == 0, p.stderr
    assert all(line.startswith(("labs/", "results:", "  would remove")) for line in p.stdout.splitlines()), p.stdout


def test_a_run_git_has_not_seen_yet_is_the_newest(tmp_path):
    """make test's records carry no run.date and name the day only: between two of the same day, the one
    just copied in from a GPU run (not committed yet) is the newer, never the one pruned."""
    d = tmp_path / "results"
    d.mkdir()
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t",
           "PATH": "/usr/bin:/bin"}
    git = lambda *a: subprocess.run(["git", "-C", str(tmp_path), *a], check=True, capture_output=True, env=env)
    git("init", "-q")
    (d / "make-test-part3_gpu_2026-12-06_fffffff.json").write_text('{"date": "2026-12-06"}')
    git("add", "-A")
    git("commit", "-q", "-m", "an older run")
    (d / "make-test-part3_gpu_2026-12-06_1111111.json").write_text('{"date": "2026-12-06"}')
    assert [p.name for p in runs.superseded(d, tmp_path, keep_named=False)] == \
        ["make-test-part3_gpu_2026-12-06_fffffff.json"]
