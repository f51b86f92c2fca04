"""The developers' scripts for a lent GPU machine (scripts/device/), checked without one: the pytest
plugin that writes failures and slow tests under $OUT as they happen, and the shell scripts' syntax."""
import importlib.util
import os
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest

ROOT = Path(__file__).resolve().parents[1]
DEVICE = ROOT / "scripts" / "device"


def plugin():
    spec = importlib.util.spec_from_file_location("instafail", DEVICE / "instafail.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def report(nodeid, outcome, duration, when="call", text=""):
    return SimpleNamespace(nodeid=nodeid, outcome=outcome, failed=outcome == "failed", duration=duration,
                           when=when, longreprtext=text)


def test_the_plugin_writes_each_failure_and_each_slow_phase_as_it_ends(tmp_path, monkeypatch):
    monkeypatch.setenv("OUT", str(tmp_path))
    p = plugin()
    p.pytest_runtest_logreport(report("t.py::fast", "passed", 0.2))
    p.pytest_runtest_logreport(report("t.py::slow", "passed", 12.34))
    p.pytest_runtest_logreport(report("t.py::bad", "failed", 3.0, text="AssertionError: 1 != 2"))
    p.pytest_runtest_logreport(report("t.py::setup", "passed", 40.0, when="setup"))
    assert (tmp_path / "durations.tsv").read_text().splitlines() == [
        "12.3\tpassed\tcall\tt.py::slow", "3.0\tfailed\tcall\tt.py::bad", "40.0\tpassed\tsetup\tt.py::setup"]
    failures = (tmp_path / "failures.txt").read_text()
    assert "===== t.py::bad (call)" in failures and "AssertionError: 1 != 2" in failures and "slow" not in failures


@pytest.mark.parametrize("script", sorted(DEVICE.glob("*.sh")), ids=lambda p: p.name)
def test_the_shell_scripts_parse(script):
    r = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_snapshot_without_a_snapshot_tests_the_tree_itself_and_makes_out(tmp_path):
    """snapshot.sh, sourced: no gpu-snapshot.tar beside the project, so the scripts run in the copied tree
    itself, and $OUT (default <project>/device-out) exists. (With a snapshot it unpacks into /tmp/course:
    a path of the lent machine, not exercised here.)"""
    project = tmp_path / "project"
    (project / "scripts" / "device").mkdir(parents=True)
    (project / "scripts" / "device" / "snapshot.sh").write_text((DEVICE / "snapshot.sh").read_text())
    r = subprocess.run(["bash", "-c", "source scripts/device/snapshot.sh && pwd && echo \"$OUT\""], cwd=tmp_path / "project",
                       capture_output=True, text=True, env={"PATH": "/usr/bin:/bin"})
    assert r.returncode == 0, r.stderr
    where, out = r.stdout.split()
    assert Path(where) == project.resolve() and Path(out) == project.resolve() / "device-out" and Path(out).is_dir()


def test_chain_runs_each_step_in_its_own_out_packs_them_and_skips_what_time_does_not_allow(tmp_path):
    import tarfile
    out = tmp_path / "out"
    out.mkdir()
    steps = ["echo one > $OUT/a.txt", "sleep 3; exit 3", "echo never > $OUT/b.txt"]
    r = subprocess.run(["bash", str(DEVICE / "chain.sh"), "4", *steps], capture_output=True, text=True,
                       env={**os.environ, "OUT": str(out), "MIN_S": "2"}, timeout=60)
    assert r.returncode == 0, r.stderr
    with tarfile.open(out / "steps.tgz") as t:
        names = t.getnames()
        chain = t.extractfile("./chain.txt").read().decode()
        assert t.extractfile("./1/a.txt").read() == b"one\n"
    assert "./2/step.log" in names and "./3/b.txt" not in names
    assert "step 1: exit status 0" in chain and "step 2: exit status 3" in chain
    assert "step 3 skipped" in chain, chain
