"""A real browser for the tests: headless Chromium driven by Playwright, and a JupyterLab to open.

    missing()                 -> why a browser test cannot run here (one sentence and what to do), or None
    chromium_path()           Debian's Chromium binary (CHROMIUM=path picks another), or None
    launch(playwright)        a headless Chromium: Playwright pointed at that binary (executable_path)
    chromium()                the same as a context manager that also starts and stops Playwright
    ARTIFACTS                 build/test-artifacts/ at the repository root (git-ignored: build/)
    artifact_dir(name)        ARTIFACTS/name, emptied: screenshots and logs of one test
    jupyterlab_missing()      -> why JupyterLab cannot start here, or None
    JupyterLab(root, env)     a JupyterLab server, as a context manager: url(path), api(method, path),
                              wait_for_kernel(path), shutdown_kernels(), stop(); the class's docstring
                              says how it is kept apart from the machine's own Jupyter

Why Debian's Chromium: Playwright's own browser download (`playwright install`) does not work on the
machines the course runs on (no route to its CDN), and a student's `make test` must not download a
browser. Playwright (PyPI) drives any recent Chromium over CDP: `launch(executable_path=...)` is
all it needs, headless, no extra flags (checked: Playwright 1.65 with Debian's Chromium 156, as
root: Playwright starts Chromium without its sandbox by default). The browser tests skip, saying
this, where either is missing; CI installs both (.ci/run).
"""
import contextlib
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

from .errors import CourseError

ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = ROOT / "build" / "test-artifacts"
INSTALL_HINT = "pip install playwright; apt install chromium (never `playwright install`) — CI installs both: see .ci/run"
# Debian's wrapper (/usr/bin/chromium) reads /etc/chromium.d and execs the real binary; the binary itself
# starts faster and takes Playwright's flags unchanged. Other distributions name it otherwise.
CHROMIUM_CANDIDATES = ("/usr/lib/chromium/chromium", "/usr/bin/chromium", "/usr/bin/chromium-browser",
                       "/usr/lib64/chromium-browser/chromium-browser", "/snap/bin/chromium")


def chromium_path():
    """The Chromium to drive: $CHROMIUM if set, else the first of CHROMIUM_CANDIDATES that exists."""
    if os.environ.get("CHROMIUM"):
        return os.environ["CHROMIUM"] if os.access(os.environ["CHROMIUM"], os.X_OK) else None
    for p in CHROMIUM_CANDIDATES:
        if os.access(p, os.X_OK):
            return p
    return shutil.which("chromium")


def missing():
    """Why headless Chromium through Playwright cannot run here, or None when it can."""
    import importlib.util
    lacking = []
    if importlib.util.find_spec("playwright") is None:
        lacking.append("Playwright (Python package)")
    if chromium_path() is None:
        lacking.append("Chromium" + (f" (CHROMIUM={os.environ['CHROMIUM']} is not executable)"
                                     if os.environ.get("CHROMIUM") else ""))
    if not lacking:
        return None
    return f"needs a headless browser, missing: {', '.join(lacking)}. {INSTALL_HINT}"


def launch(playwright, **options):
    """A headless Chromium from `playwright` (sync_playwright()'s object), the Debian binary."""
    exe = chromium_path()
    if exe is None:
        raise CourseError("no Chromium found", hint=INSTALL_HINT)
    return playwright.chromium.launch(executable_path=exe, headless=True, **options)


@contextlib.contextmanager
def chromium(**options):
    """with chromium() as b: b.new_page() ... Playwright started, Chromium launched, both stopped after."""
    from playwright.sync_api import sync_playwright
    with sync_playwright() as p:
        b = launch(p, **options)
        try:
            yield b
        finally:
            b.close()


def artifact_dir(name):
    """ARTIFACTS/name, empty (what an earlier run left there removed)."""
    d = ARTIFACTS / name
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir(parents=True)
    return d


# ---------------------------------------------------------------------------------------------
# JupyterLab
# ---------------------------------------------------------------------------------------------

def jupyterlab_missing():
    import importlib.util
    if importlib.util.find_spec("jupyterlab") is None:
        return (f"needs JupyterLab in this Python ({sys.executable}): pip install 'jupyterlab>=4' "
                "(or the course's extra: pip install \".[jupyter]\") — CI installs it: see .ci/run")
    return None


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# Settings of the JupyterLab the tests start (a user settings folder of its own): no autosave, so a
# notebook opened and run is never written; every cell rendered (not only those on screen), so the
# checks and the screenshots see all of them, and no blank screen after the last cell; no news or
# update check (there is no network).
LAB_SETTINGS = {
    "@jupyterlab/docmanager-extension/plugin": {"autosave": False},
    "@jupyterlab/notebook-extension/tracker": {"windowingMode": "none", "scrollPastEnd": False},
    "@jupyterlab/apputils-extension/notification": {"checkForUpdates": False, "fetchNews": "false"},
    "@jupyterlab/extensionmanager-extension/plugin": {"enabled": False},
}


class JupyterLab:
    """`jupyter lab` on 127.0.0.1, a free port and a random token, serving `root`, as a new user
    starts it (`--allow-root` where this runs as root, as in a container), but kept apart from the
    machine's own Jupyter: config, data, runtime, IPython, settings and checkpoint folders are a
    temporary folder of its own, and its "python3" kernel is this interpreter (a kernelspec of its
    own, first on JUPYTER_PATH: the policy of common.notebooks.kernel_manager). `env` is added to
    the server's environment, which its kernels inherit. stop() (also on leaving the `with`) shuts
    the server down, then kills whatever it started that is still alive (its process group, and any
    process carrying its tag: kernels run in sessions of their own), and removes the temporary folder."""

    def __init__(self, root, env=None, startup_timeout=90):
        self.root = Path(root).resolve()
        self.extra_env = dict(env or {})
        self.startup_timeout = startup_timeout
        self.proc = None
        self.tmp = None
        self.port = None
        self.token = secrets.token_hex(16)
        self.tag = f"course-jupyterlab-{self.token[:12]}"
        self.leftovers = []          # pids stop() had to kill after the server had gone
        self._clients = {}           # kernel id -> our own client of it (wait_for_kernel)

    # -- start and stop -------------------------------------------------------------------------
    def start(self):
        why = jupyterlab_missing()
        if why:
            raise CourseError(why)
        self.tmp = Path(tempfile.mkdtemp(prefix="course-jupyterlab-"))
        dirs = {k: self.tmp / k for k in ("config", "data", "runtime", "ipython", "settings", "workspaces", "path",
                                          "checkpoints")}
        for d in dirs.values():
            d.mkdir()
        kernel = dirs["path"] / "kernels" / "python3"
        kernel.mkdir(parents=True)
        (kernel / "kernel.json").write_text(json.dumps({
            "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}",
                     "--IPKernelApp.log_level=ERROR"],
            "display_name": "Python 3 (ipykernel)", "language": "python"}))
        for name, values in LAB_SETTINGS.items():
            f = dirs["settings"] / f"{name}.jupyterlab-settings"
            f.parent.mkdir(parents=True, exist_ok=True)
            f.write_text(json.dumps(values))
        env = dict(os.environ, JUPYTER_CONFIG_DIR=str(dirs["config"]), JUPYTER_DATA_DIR=str(dirs["data"]),
                   JUPYTER_RUNTIME_DIR=str(dirs["runtime"]), IPYTHONDIR=str(dirs["ipython"]),
                   JUPYTER_PATH=str(dirs["path"]), JUPYTER_PLATFORM_DIRS="1", COURSE_JUPYTERLAB_TAG=self.tag,
                   PYTHONUNBUFFERED="1")
        env.update(self.extra_env)
        self.port = free_port()
        cmd = [sys.executable, "-m", "jupyterlab", "--no-browser", "--ip=127.0.0.1", f"--port={self.port}",
               "--ServerApp.port_retries=0", f"--IdentityProvider.token={self.token}",
               f"--ServerApp.root_dir={self.root}", f"--LabApp.user_settings_dir={dirs['settings']}",
               f"--LabApp.workspaces_dir={dirs['workspaces']}", "--ServerApp.terminals_enabled=False",
               # the checkpoint JupyterLab makes of a notebook it opens: here, not in .ipynb_checkpoints/ beside it
               f"--FileCheckpoints.checkpoint_dir={dirs['checkpoints']}"]
        if os.geteuid() == 0:
            cmd.append("--allow-root")
        self.log_path = self.tmp / "server.log"
        with open(self.log_path, "wb") as log:
            self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                         env=env, cwd=self.root, start_new_session=True)
        deadline = time.monotonic() + self.startup_timeout
        while True:
            if self.proc.poll() is not None:
                log = self.log_tail()
                self.stop()
                raise CourseError(f"JupyterLab exited at start (status {self.proc.returncode}):\n{log}",
                                  hint=f"run the command by hand to see why: {' '.join(cmd)}")
            try:
                self.api("GET", "/api/status", timeout=2)
                break
            except (OSError, urllib.error.URLError):
                pass
            if time.monotonic() > deadline:
                log = self.log_tail()
                self.stop()
                raise CourseError(f"JupyterLab did not answer on port {self.port} within "
                                  f"{self.startup_timeout} s:\n{log}")
            time.sleep(0.25)
        return self

    def log_tail(self, lines=30):
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def _tagged_pids(self):
        """Processes whose environment carries this server's tag: the server and what it started."""
        pids = []
        needle = f"COURSE_JUPYTERLAB_TAG={self.tag}".encode()
        for d in Path("/proc").iterdir():
            if not d.name.isdigit() or int(d.name) == os.getpid():
                continue
            try:
                if needle in (d / "environ").read_bytes().split(b"\0"):
                    pids.append(int(d.name))
            except OSError:
                continue
        return pids

    def stop(self, timeout=20):
        """Shut the server down (SIGTERM: it stops its kernels), then kill what is left."""
        for kc in self._clients.values():
            kc.stop_channels()
        self._clients.clear()
        if self.proc is not None and self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                pass
        if self.proc is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(5)
        if Path("/proc/self/environ").exists():
            deadline = time.monotonic() + 5          # kernels notice their parent has gone within a second
            while (left := self._tagged_pids()) and time.monotonic() < deadline:
                time.sleep(0.2)
            for pid in left:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            self.leftovers = left
        if self.tmp is not None:
            shutil.rmtree(self.tmp, ignore_errors=True)
            self.tmp = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    # -- talking to it ----------------------------------------------------------------------------
    def url(self, path=""):
        """The browser's URL of `path` under /lab (e.g. "tree/notebooks/x.ipynb"), token included."""
        return f"http://127.0.0.1:{self.port}/lab/{path}?reset&token={self.token}"

    def api(self, method, path, timeout=10):
        """Call the server's REST API; the decoded JSON answer (None when empty)."""
        req = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", method=method,
                                     headers={"Authorization": f"token {self.token}"})
        with urllib.request.urlopen(req, timeout=timeout) as r:
            body = r.read()
        return json.loads(body) if body else None

    def _session_kernel(self, path):
        for s in self.api("GET", "/api/sessions") or []:
            if s.get("path") == path and s.get("kernel"):
                return s["kernel"]["id"]
        raise CourseError(f"no kernel is running for {path}")

    def wait_for_kernel(self, path, timeout=60):
        """Return once the kernel of the notebook at `path` (relative to root) has finished what it was
        doing: a silent, empty execute request sent over a client of our own, whose reply comes after
        everything queued before it. The kernel's busy/idle status cannot say this: a widget callback
        (ipywidgets' interactive_output) runs on after the kernel reports idle (seen with ipykernel 7)."""
        from jupyter_client import BlockingKernelClient
        kid = self._session_kernel(path)
        kc = self._clients.get(kid)
        if kc is None:
            kc = BlockingKernelClient(connection_file=str(self.tmp / "runtime" / f"kernel-{kid}.json"))
            kc.load_connection_file()
            kc.start_channels()
            kc.wait_for_ready(timeout=timeout)
            self._clients[kid] = kc
        msg_id = kc.execute("", silent=True, store_history=False)
        deadline = time.monotonic() + timeout
        while True:
            reply = kc.get_shell_msg(timeout=max(0.1, deadline - time.monotonic()))
            if reply["parent_header"].get("msg_id") == msg_id:
                return

    def shutdown_kernels(self):
        """Stop every running kernel (a notebook's, once the test is done with it); how many."""
        for kc in self._clients.values():
            kc.stop_channels()
        self._clients.clear()
        kernels = self.api("GET", "/api/kernels") or []
        for k in kernels:
            with contextlib.suppress(urllib.error.HTTPError):
                self.api("DELETE", f"/api/kernels/{k['id']}", timeout=30)
        return len(kernels)
