"""The developers' scripts for a lent GPU machine (scripts/device/), checked without one: the pytest
plugin that writes failures and slow tests under $OUT as they happen, and the shell scripts' syntax."""
import importlib.util
import os
import shutil
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest

ROOT = Path(__file__).resolve().parents[1]
DEVICE = ROOT / "scripts" / "device"


def device_project(tmp_path, *scripts):
    """A project folder with a lab folder and copies of the device scripts named, with the two every
    one of them sources (snapshot.sh, names.sh): run there, a script tests the copied tree itself."""
    project = tmp_path / "project"
    (project / "scripts" / "device").mkdir(parents=True)
    (project / "labs" / "lab").mkdir(parents=True)
    for name in (*scripts, "snapshot.sh", "names.sh"):
        (project / "scripts" / "device" / name).write_text((DEVICE / name).read_text())
    return project


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
    """snapshot.sh, sourced: no gpu-snapshot.tar.gz beside the project, so the scripts run in the copied tree
    itself, and $OUT (default <project>/device-out) exists. (With a snapshot it unpacks into /tmp/course:
    a path of the lent machine, not exercised here.)"""
    project = device_project(tmp_path)
    r = subprocess.run(["bash", "-c", "source scripts/device/snapshot.sh && pwd && echo \"$OUT\""], cwd=project,
                       capture_output=True, text=True, env={"PATH": "/usr/bin:/bin"})
    assert r.returncode == 0, r.stderr
    where, out = r.stdout.split()
    assert Path(where) == project.resolve() and Path(out) == project.resolve() / "device-out" and Path(out).is_dir()


def test_new_kernels_sanitize_phase_runs_each_labs_new_kernels_and_packs_their_reports(tmp_path):
    """PHASE=sanitize of new-kernels.sh (the kernels written without a GPU): `make sanitize` once a lab,
    limited to the new kernels, a log each with make's exit status, and the labs' new sanitizer
    reports packed into $OUT/sanitize.tgz. make and nvidia-smi are stand-ins that record their calls."""
    import tarfile
    project = tmp_path / "project"
    (project / "scripts" / "device").mkdir(parents=True)
    for name in ("new-kernels.sh", "snapshot.sh", "names.sh"):
        (project / "scripts" / "device" / name).write_text((DEVICE / name).read_text())
    labs = ["lab07a-tf32-tensor-cores", "lab07c-hopper-wgmma", "lab07d-decode-shapes"]
    for lab in labs:
        (project / "labs" / lab / "results").mkdir(parents=True)
        (project / "labs" / lab / "reports" / "sanitize").mkdir(parents=True)
    (project / "labs" / labs[1] / "reports" / "sanitize" / "old.json").write_text("{}")   # before the run
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    calls = tmp_path / "calls.txt"
    (bin_ / "make").write_text(f"""#!/bin/bash
echo "$*" >> {calls}
if [ "$3" = sanitize ]; then mkdir -p "$2/reports/sanitize"; printf '{{"no_fused": "%s"}}' "$LAB07D_NO_FUSED" > "$2/reports/sanitize/sanitize_sm_90_new.json"; fi
""")
    (bin_ / "nvidia-smi").write_text("#!/bin/bash\necho 'name, clocks.sm'\n")
    for f in bin_.iterdir():
        f.chmod(0o755)
    out = tmp_path / "out"
    r = subprocess.run(["bash", "scripts/device/new-kernels.sh"], cwd=project, capture_output=True, text=True,
                       env={"PATH": f"{bin_}:/usr/bin:/bin", "OUT": str(out), "PHASE": "sanitize"})
    assert r.returncode == 0, r.stderr
    sanitize = [line for line in calls.read_text().splitlines() if " sanitize " in line]
    assert sanitize == ["-C labs/lab07c-hopper-wgmma sanitize KERNELS=h6,h6_tf32,h4_3xtf32,h6_3xtf32,h7 PYTHON=python3",
                        "-C labs/lab07d-decode-shapes sanitize KERNELS=wgmma_splitk PYTHON=python3",
                        "-C labs/lab07d-decode-shapes sanitize KERNELS=wgmma_splitk,h6 PYTHON=python3",
                        "-C labs/lab07a-tf32-tensor-cores sanitize KERNELS=k8 PYTHON=python3"]
    for lab in ("7a", "7c", "7d", "7d-two-launch"):
        assert (out / f"sanitize-{lab}.log").read_text().strip().endswith("exit status 0")
    with tarfile.open(out / "sanitize.tgz") as t:
        packed = sorted(t.getnames())
        two = t.extractfile("labs/lab07d-decode-shapes/reports/sanitize-two-launch/sanitize_sm_90_new.json").read()
        fused = t.extractfile("labs/lab07d-decode-shapes/reports/sanitize/sanitize_sm_90_new.json").read()
    assert packed == sorted([f"labs/{lab}/reports/sanitize/sanitize_sm_90_new.json" for lab in labs]
                            + ["labs/lab07d-decode-shapes/reports/sanitize-two-launch/sanitize_sm_90_new.json"])
    assert b'"no_fused": "1"' in two and b'"no_fused": ""' in fused       # the two-launch form, then as launched


@pytest.mark.parametrize("snapshot, tar, pack", [(None, "gpu-snapshot.tar.gz", ".prebuilt"),
                                                  ("gpu-next", "gpu-next.tar.gz", ".prebuilt-gpu-next")])
def test_a_named_snapshot_has_its_own_tar_and_prebuilt_pack(tmp_path, snapshot, tar, pack):
    """Two commits prepared here (main and a branch) travel side by side: SNAPSHOT=name picks name.tar.gz
    and .prebuilt-name/, the default is gpu-snapshot.tar.gz with .prebuilt/."""
    env = {"PATH": "/usr/bin:/bin", **({"SNAPSHOT": snapshot} if snapshot else {})}
    r = subprocess.run(["bash", "-c", f"here={tmp_path}; source {DEVICE / 'names.sh'}; echo $tarball $pre"],
                       capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == [str(tmp_path / tar), str(tmp_path / pack)]


@pytest.mark.parametrize("bad", ["../x", "a b", "x/y"])
def test_a_snapshot_name_that_is_not_a_file_name_is_refused_with_what_to_use(tmp_path, bad):
    r = subprocess.run(["bash", "-c", f"here={tmp_path}; source {DEVICE / 'names.sh'}; echo reached"],
                       capture_output=True, text=True, env={"PATH": "/usr/bin:/bin", "SNAPSHOT": bad})
    assert r.returncode == 2 and "reached" not in r.stdout
    assert f"SNAPSHOT={bad}" in r.stderr and "letters, digits" in r.stderr


def test_chain_runs_each_step_in_its_own_out_packs_them_and_skips_what_time_does_not_allow(tmp_path):
    import tarfile
    out = tmp_path / "out"
    out.mkdir()
    # seconds with room on both sides: step 2 starts with at least 10 - 3 s left, more than its 6 s
    # (a CI run of 4 s total, sleep 3, lost a second to the clock's tick and timed step 2 out: exit
    # 124, 2026-12-07), and ends with at most 4 s left, under MIN_S, so step 3 is skipped
    steps = ["echo one > $OUT/a.txt", "sleep 6; exit 3", "echo never > $OUT/b.txt"]
    r = subprocess.run(["bash", str(DEVICE / "chain.sh"), "10", *steps], capture_output=True, text=True,
                       env={**os.environ, "OUT": str(out), "MIN_S": "5"}, timeout=60)
    assert r.returncode == 0, r.stderr
    with tarfile.open(out / "steps.tgz") as t:
        names = t.getnames()
        chain = t.extractfile("./chain.txt").read().decode()
        assert t.extractfile("./1/a.txt").read() == b"one\n"
    assert "./2/step.log" in names and "./3/b.txt" not in names
    assert "step 1: exit status 0" in chain and "step 2: exit status 3" in chain
    assert "step 3 skipped" in chain, chain


def test_chain_cuts_a_step_that_outruns_the_time_left_and_still_packs_its_log(tmp_path):
    import tarfile
    out = tmp_path / "out"
    out.mkdir()
    r = subprocess.run(["bash", str(DEVICE / "chain.sh"), "3", "echo started; sleep 30"], capture_output=True,
                       text=True, env={**os.environ, "OUT": str(out), "MIN_S": "1"}, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "step 1: exit status 124" in r.stdout, r.stdout
    with tarfile.open(out / "steps.tgz") as t:
        assert t.extractfile("./1/step.log").read() == b"started\n"


def test_a_chain_run_inside_a_chains_step_leaves_the_outer_steps_files_alone(tmp_path):
    # make test runs the test above inside a device call's chain.sh step: a steps folder shared by the
    # two runs was emptied under the outer step, and its test log was lost (2026-12-05)
    import tarfile
    out = tmp_path / "out"
    out.mkdir()
    inner = f"mkdir -p {tmp_path}/inner && OUT={tmp_path}/inner bash {DEVICE / 'chain.sh'} 20 'echo inner > $OUT/i.txt'"
    step = f"echo before > $OUT/log.txt; {inner} > /dev/null; echo after >> $OUT/log.txt"
    r = subprocess.run(["bash", str(DEVICE / "chain.sh"), "30", step], capture_output=True, text=True,
                       env={**os.environ, "OUT": str(out), "MIN_S": "2"}, timeout=60)
    assert r.returncode == 0, r.stderr
    with tarfile.open(out / "steps.tgz") as t:
        assert t.extractfile("./1/log.txt").read() == b"before\nafter\n"
    with tarfile.open(tmp_path / "inner" / "steps.tgz") as t:
        assert t.extractfile("./1/i.txt").read() == b"inner\n"


@pytest.mark.parametrize("dist, expected", [(None, "loadfile"), ("load", "load")])
def test_make_test_hands_pytest_the_dist_mode_loadfile_unless_told(tmp_path, dist, expected):
    """DIST=load spreads a file's tests over the workers (the notebooks ran one after another on one
    worker, 2026-12-05); make, nvidia-smi and python3 are stand-ins that record their arguments."""
    project = device_project(tmp_path, "make-test.sh")
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    for tool in ("make", "nvidia-smi", "python3"):
        (bin_ / tool).write_text(f'#!/bin/sh\necho "{tool} $*" >> {tmp_path}/calls.txt\n')
        (bin_ / tool).chmod(0o755)
    env = {"PATH": f"{bin_}:/usr/bin:/bin", "OUT": str(tmp_path / "out"), **({"DIST": dist} if dist else {})}
    r = subprocess.run(["bash", "scripts/device/make-test.sh", "tests/x.py"], cwd=project, capture_output=True,
                       text=True, env=env, timeout=60)
    assert r.returncode == 0, r.stderr
    pytest_call = [l for l in (tmp_path / "calls.txt").read_text().splitlines() if l.startswith("python3 -m pytest")]
    assert len(pytest_call) == 1 and f"--dist {expected} " in pytest_call[0] and pytest_call[0].endswith("tests/x.py")


@pytest.mark.parametrize("phase, target, made, logs, pack", [
    ("ncu", "ncu-tensor", ["-C labs/lab07c-hopper-wgmma ncu-tensor KERNELS=h6,cublas-fp16_tensor,h6_tf32,"
                           "cublas-tf32_tensor,h4_3xtf32,h6_3xtf32 SIZE=4096 PYTHON=python3"],
     ["ncu-7c.log"], "ncu.tgz"),
    ("accuracy", "accuracy", ["-C labs/lab07c-hopper-wgmma accuracy PYTHON=python3",
                              "-C labs/lab07a-tf32-tensor-cores accuracy PYTHON=python3"],
     ["accuracy-7c.log", "accuracy-7a.log"], "accuracy.tgz")])
def test_new_kernels_ncu_and_accuracy_phases_run_their_target_and_pack_what_it_wrote(tmp_path, phase, target, made,
                                                                                     logs, pack):
    """PHASE=ncu of new-kernels.sh: one `make ncu-tensor` at 4096^3 on lab 7c's h6 and h6_tf32 beside cuBLAS's
    kernels and on the 3xTF32 rows;
    PHASE=accuracy: `make accuracy` in labs 7c and 7a. A log each with make's exit status, and what the
    targets wrote (only that) packed under $OUT."""
    import tarfile
    project = tmp_path / "project"
    (project / "scripts" / "device").mkdir(parents=True)
    for name in ("new-kernels.sh", "snapshot.sh", "names.sh"):
        (project / "scripts" / "device" / name).write_text((DEVICE / name).read_text())
    for name in ("lab07c-hopper-wgmma", "lab07a-tf32-tensor-cores"):
        for d in ("reports", "results"):
            (project / "labs" / name / d).mkdir(parents=True)
        (project / "labs" / name / "results" / "old.json").write_text("{}")   # from before the run: not packed
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    calls = tmp_path / "calls.txt"
    (bin_ / "make").write_text(f"""#!/bin/bash
echo "$*" >> {calls}
if [ "$3" = {target} ]; then echo '{{}}' > "$2/results/{target}_new.json"; fi
""")
    (bin_ / "nvidia-smi").write_text("#!/bin/bash\necho 'name, clocks.sm'\n")
    for f in bin_.iterdir():
        f.chmod(0o755)
    import time
    time.sleep(1)                                                    # old.json older than the run's gpu.txt
    out = tmp_path / "out"
    r = subprocess.run(["bash", "scripts/device/new-kernels.sh"], cwd=project, capture_output=True, text=True,
                       env={"PATH": f"{bin_}:/usr/bin:/bin", "OUT": str(out), "PHASE": phase})
    assert r.returncode == 0, r.stderr
    assert [line for line in calls.read_text().splitlines() if f" {target} " in line] == made
    for log in logs:
        assert (out / log).read_text().strip().endswith("exit status 0")
    with tarfile.open(out / pack) as t:
        assert sorted(t.getnames()) == sorted(f"{line.split()[1]}/results/{target}_new.json" for line in made)


def test_new_kernels_bench_phase_leaves_at_most_eight_files_so_its_records_come_back(tmp_path):
    """A device call brings back 8 files of $OUT at most: PHASE=bench's five logs, gpu.txt, the build's
    tail, nvcc's log and records.tgz were 9, and records.tgz was left out (2026-12-06). The build's
    two logs now travel packed in build.tgz, and the steps' logs (seven since 2026-12-07) in bench-logs.tgz."""
    import tarfile
    import time
    project = tmp_path / "project"
    (project / "scripts" / "device").mkdir(parents=True)
    for name in ("new-kernels.sh", "snapshot.sh", "names.sh"):
        (project / "scripts" / "device" / name).write_text((DEVICE / name).read_text())
    for name in ("lab07a-tf32-tensor-cores", "lab07c-hopper-wgmma", "lab07d-decode-shapes"):
        (project / "labs" / name / "results").mkdir(parents=True)
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    (bin_ / "make").write_text("""#!/bin/bash
if [ "$3" = bench ]; then echo '{}' > "$2/results/bench_$RANDOM$RANDOM.json"; fi
if [ "$1" = -C ] && [ "$3" = build ]; then echo built; fi
""")
    (bin_ / "nvidia-smi").write_text("#!/bin/bash\necho 'name, clocks.sm'\n")
    for f in bin_.iterdir():
        f.chmod(0o755)
    time.sleep(1)
    out = tmp_path / "out"
    env = {"PATH": f"{bin_}:/usr/bin:/bin", "OUT": str(out), "PHASE": "bench"}
    r = subprocess.run(["bash", "scripts/device/new-kernels.sh"], cwd=project, capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    files = sorted(p.name for p in out.iterdir())
    assert len(files) <= 8, files
    assert "records.tgz" in files and "build.tgz" in files and "build.log" not in files
    with tarfile.open(out / "records.tgz") as t:
        assert len([n for n in t.getnames() if n.endswith(".json")]) == 6       # one record per bench run
    with tarfile.open(out / "bench-logs.tgz") as t:                             # and a log per step, the probe's too
        assert sorted(t.getnames()) == sorted(f"bench-{s}.log" for s in
                                              ("7c-fp16", "7c-tf32", "7c-3xtf32", "7a-3xtf32", "7a-tf32", "7d", "7c-presplit"))
    # lab 7d's whole sweep runs only when named, and then alone, with no SHAPES
    (bin_ / "make").write_text('#!/bin/bash\nif [ "$3" = bench ]; then echo "$*" > "$2/results/bench_$RANDOM.json"; fi\n')
    for record in project.glob("labs/*/results/*"):
        record.unlink()
    shutil.rmtree(out)
    r = subprocess.run(["bash", "scripts/device/new-kernels.sh"], cwd=project, capture_output=True, text=True,
                       env={**env, "ONLY": "7d-all"})
    assert r.returncode == 0, r.stderr
    records = list(project.glob("labs/*/results/*.json"))
    assert [p.read_text().split() for p in records] == [["-C", "labs/lab07d-decode-shapes", "bench", "PYTHON=python3"]]


def test_make_test_leaves_at_most_eight_files_even_with_failures_and_a_notebook_log(tmp_path):
    """A device call brings back 8 files of $OUT at most. make-test.sh's own (gpu.txt, test.log,
    times.txt, durations.tsv, selftests.tgz, and failures.txt when a test fails) with the build's log,
    nvcc's log, prebuilt.txt and notebooks.log would be 10: the build's three travel in build.tgz.
    The stand-in pytest writes what instafail and the notebooks would."""
    import tarfile
    project = device_project(tmp_path, "make-test.sh")
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    (bin_ / "make").write_text("#!/bin/sh\necho built\n")
    (bin_ / "nvidia-smi").write_text("#!/bin/sh\necho name\n")
    (bin_ / "python3").write_text('#!/bin/sh\nfor f in failures.txt durations.tsv notebooks.log nvcc.jsonl prebuilt.txt; '
                                  'do echo x > "$OUT/$f"; done\nexit 1\n')
    for f in bin_.iterdir():
        f.chmod(0o755)
    out = tmp_path / "out"
    env = {"PATH": f"{bin_}:/usr/bin:/bin", "OUT": str(out)}
    r = subprocess.run(["bash", "scripts/device/make-test.sh", "tests/x.py"], cwd=project, capture_output=True,
                       text=True, env=env, timeout=60)
    assert r.returncode == 0, r.stderr
    files = sorted(p.name for p in out.iterdir())
    assert len(files) <= 8, files
    assert {"failures.txt", "notebooks.log", "test.log", "build.tgz"} <= set(files), files
    with tarfile.open(out / "build.tgz") as t:
        assert sorted(t.getnames()) == ["build.log", "nvcc.jsonl", "prebuilt.txt"]


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
@pytest.mark.parametrize("probe", sorted(p.name for p in DEVICE.glob("*-probe.cu")))
def test_the_probes_build_as_their_headers_say(probe, tmp_path):
    """A probe is run once on the GPU machine, by hand (scripts/device/README.md): it must still build there
    when that day comes, as its header says to build it (nvcc for sm_90)."""
    r = subprocess.run(["nvcc", "-O3", "-arch=sm_90", "-o", str(tmp_path / "probe"), str(DEVICE / probe)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_the_presplit_probe_gives_its_own_row_every_band_and_leaves_h4_3xtf32s_share_alone():
    """presplit-probe.py times h4_3xtf32's GEMM alone on parts split beforehand: its row's pass must split every
    band of A (a GEMM that still waited for splitter warps would hang when timed alone), while the whole call
    it is timed beside keeps the share OVERLAP gives it. CPU only: the rows' tilings come from the source."""
    import importlib.util
    from common.lab import load
    spec = importlib.util.spec_from_file_location("presplit_probe", DEVICE / "presplit-probe.py")
    probe = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(probe)
    lab = load("lab07c-hopper-wgmma")
    k, k_pre, launch = probe.presplit_row(lab)
    original = launch.split_share.shared_by_the_pass
    try:
        assert k_pre.cubin(k_pre.build_dir, "sm_90a") == k.cubin(k.build_dir, "sm_90a")     # the same build
        bands, first = original(k, 4096, 4096, 132)
        assert first < bands                                       # OVERLAP: the GEMM splits A's later bands
        assert launch.split_share(k, 4096, 4096, 132) == (bands, first)
        assert launch.split_share(k_pre, 4096, 4096, 132) == (bands, bands)
        probe.presplit_row(lab)                                    # twice: wraps the original, not itself
        assert launch.split_share.shared_by_the_pass is original
    finally:
        launch.split_share = original
