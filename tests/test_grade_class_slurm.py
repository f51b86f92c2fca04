"""`make grade-class SLURM=1` on a real Slurm: a single-node cluster from Debian's packages
(munge, slurmctld, slurmd), started here in a temporary folder and stopped afterwards.

The class of tests/conftest.py goes in as a job array (one task per submission, NOGPU=1) and a
merge job that depends on it; the merged class.json must give every student the same status,
score and per-check points as grading the same class here (the `local_class` fixture). Skipped,
with the reason, where the packages are missing (apt-get install slurmctld slurmd slurm-client
munge; CI's .ci/run does) or the daemons cannot start (they run jobs as root: SlurmUser=root).
"""
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

NEEDED = ("munged", "slurmctld", "slurmd", "sbatch", "squeue", "sinfo")
MISSING = [b for b in NEEDED if not shutil.which(b)]

# decided before any fixture runs (a student's make test grades nothing here)
pytestmark = [
    pytest.mark.skipif(bool(MISSING), reason=f"Slurm is not installed here ({', '.join(MISSING)} missing): apt-get "
                       "install slurmctld slurmd slurm-client munge (CI's .ci/run does)"),
    pytest.mark.skipif(os.geteuid() != 0, reason="the test's single-node Slurm runs its jobs as root (SlurmUser=root): "
                       "run as root, as CI does"),
]


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _node_line():
    """This machine as slurmd sees it (CPUs, sockets, cores, memory), named localhost."""
    out = subprocess.run(["slurmd", "-C"], capture_output=True, text=True, timeout=30).stdout
    line = next((l for l in out.splitlines() if l.startswith("NodeName=")), "")
    if not line:
        return f"NodeName=localhost NodeAddr=127.0.0.1 CPUs={os.cpu_count() or 1} State=UNKNOWN"
    return re.sub(r"^NodeName=\S+", "NodeName=localhost NodeAddr=127.0.0.1", line) + " State=UNKNOWN"


CONF = """ClusterName=gradetest
SlurmctldHost=localhost
SlurmctldPort={ctld_port}
SlurmdPort={d_port}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={d}/munge/munge.sock
StateSaveLocation={d}/state
SlurmdSpoolDir={d}/spool
SlurmctldPidFile={d}/slurmctld.pid
SlurmdPidFile={d}/slurmd.pid
SlurmctldLogFile={d}/log/slurmctld.log
SlurmdLogFile={d}/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc={d}/log/jobcomp.txt
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
ReturnToService=2
{node}
PartitionName=grade Nodes=localhost Default=YES MaxTime=INFINITE State=UP
"""


def _stop(procs):
    for p in reversed(procs):
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    for p in reversed(procs):
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


@pytest.fixture(scope="module")
def slurm_cluster():
    d = Path(tempfile.mkdtemp(prefix="grade-slurm-"))
    d.chmod(0o755)                                          # munged: every folder above its socket searchable
    for sub in ("munge", "state", "spool", "log"):
        (d / sub).mkdir()
    (d / "munge").chmod(0o755)
    key = d / "munge" / "munge.key"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o600)
    conf = d / "slurm.conf"
    conf.write_text(CONF.format(d=d, ctld_port=_free_port(), d_port=_free_port(), node=_node_line()))
    env = {**os.environ, "SLURM_CONF": str(conf)}
    procs = []

    def start(argv, log):
        procs.append(subprocess.Popen(argv, stdout=open(d / "log" / log, "w"), stderr=subprocess.STDOUT, env=env,
                                      start_new_session=True))

    def logs():
        return "\n".join(f"--- {f.name}\n" + f.read_text()[-1500:] for f in sorted((d / "log").glob("*")))

    try:
        start(["munged", "-F", f"--key-file={key}", f"--socket={d}/munge/munge.sock", f"--pid-file={d}/munge/pid",
               f"--log-file={d}/log/munged.log", f"--seed-file={d}/munge/seed"], "munged.out")
        for _ in range(50):
            if (d / "munge" / "munge.sock").exists() or procs[0].poll() is not None:
                break
            time.sleep(0.2)
        if not (d / "munge" / "munge.sock").exists():
            pytest.skip(f"munged did not start:\n{logs()}")
        start(["slurmctld", "-D", "-i", "-f", str(conf)], "slurmctld.out")
        start(["slurmd", "-D", "-N", "localhost", "-f", str(conf)], "slurmd.out")
        state = ""
        for _ in range(60):
            state = subprocess.run(["sinfo", "-h", "-o", "%T"], capture_output=True, text=True, env=env).stdout.strip()
            if state in ("idle", "mixed", "allocated") or any(p.poll() is not None for p in procs):
                break
            time.sleep(0.5)
        if state not in ("idle", "mixed", "allocated"):
            pytest.skip(f"the single-node Slurm did not come up (sinfo says {state!r}):\n{logs()}")
        yield SimpleNamespace(env=env, dir=d, conf=conf, logs=logs)
    finally:
        _stop(procs)
        shutil.rmtree(d, ignore_errors=True)


def test_the_class_as_a_slurm_job_array_scores_what_it_scores_graded_here(slurm_cluster, small_class, local_class,
                                                                          grade_class_tools, tmp_path):
    tools = grade_class_tools
    out = tmp_path / "out-slurm"
    start = time.time()
    proc = tools.course("grade-class", "--lab", tools.lab_dir, "--submissions", small_class.folder, "--out", out,
                        "--no-gpu", "--parts", tools.parts, "--seed", tools.seed, "--slurm", "1", "--wait",
                        "--cpus", 1, "--time", "00:10:00", env={"SLURM_CONF": str(slurm_cluster.conf)}, timeout=400)
    took = time.time() - start
    print(proc.stdout)
    assert proc.returncode == 0, proc.stdout + proc.stderr + slurm_cluster.logs()
    ids = re.search(r"as job array (\d+) .* merge as job (\d+)", proc.stdout)
    assert ids, proc.stdout
    # every task and the merge ran under Slurm, and completed
    comp = (slurm_cluster.dir / "log" / "jobcomp.txt").read_text()
    tasks = re.findall(rf"ArrayJobId={ids[1]} ArrayTaskId=(\d+)", comp)
    assert sorted(map(int, tasks)) == list(range(4)), comp
    assert comp.count("JobState=COMPLETED") >= 5 and re.search(rf"JobId={ids[2]} .*JobState=COMPLETED", comp), comp
    logs = sorted((out / "slurm" / "logs").glob(f"grade-{ids[1]}_*.out"))
    assert len(logs) == 4 and all("grade-class task" in f.read_text() for f in logs)
    assert list((out / "slurm" / "logs").glob(f"merge-{ids[2]}.out"))
    # the merged report: the same as grading the class here
    merged = json.loads((out / "class.json").read_text())
    assert tools.scores_by_check(merged) == tools.scores_by_check(local_class.data)
    assert (out / "class.csv").read_text().splitlines()[1:] and (out / "class.html").exists()
    print(f"slurm: 4 tasks and the merge in {took:.0f} s; every student's score and checks as graded here")
