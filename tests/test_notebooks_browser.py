"""The notebooks in a real browser, as a new user opens them: JupyterLab (started here on 127.0.0.1,
stopped after) and headless Chromium driven by Playwright (common/browser.py). Each notebook is
opened, Run > Run All Cells, and once the kernel is idle:
  - no cell shows a traceback or an error output;
  - every explorer (a cell that uses ipywidgets) renders as widgets, not as a text repr such as
    `VBox(children=...)` (what a frontend without the widget manager shows);
  - in every explorer, moving one control per output (a slider by the keyboard, a dropdown to
    another option, ...) changes that output;
  - a screenshot of the whole notebook is kept: build/test-artifacts/notebooks-browser/.
The kernel sees no GPU (CUDA_VISIBLE_DEVICES=""): the notebooks show the recorded results, as in CI;
what they measure live is tests/test_notebooks.py's to check. Skips, saying why, without Playwright,
Chromium or JupyterLab (CI installs them: .ci/run)."""
import contextlib
import hashlib
import json
import re
import time

import pytest

from common import browser, notebooks

PATHS = notebooks.notebook_paths()
WHY = browser.missing() or browser.jupyterlab_missing()
pytestmark = pytest.mark.skipif(bool(WHY), reason=WHY or "")

RUN_TIMEOUT_S = 240          # Run All Cells of one notebook (recorded results: 5-35 s on 2 cores)
CHANGE_TIMEOUT_S = 30        # one control moved, its output redrawn
MAX_SHOT_PX = 16_000         # Chromium draws a screenshot up to about 16k pixels tall; a longer notebook is cut
ARTIFACT_NAME = "notebooks-browser"
# what a widget shows as text where no widget manager renders it: VBox(children=(...)), interactive(...)
TEXT_REPR = re.compile(r"^\s*[A-Za-z]\w*\((children|value|options|description|layout|outputs)=")
TRACEBACK = re.compile(r"Traceback \(most recent call last\)|^\w*(Error|Exception):", re.M)

CONTROLS = {          # ipywidgets 8 class names (the widget-* ones are the older aliases), best to move first
    "slider": ".jupyter-widget-slider, .widget-slider",
    "dropdown": ".jupyter-widget-dropdown, .widget-dropdown",
    "toggle-buttons": ".jupyter-widget-toggle-buttons, .widget-toggle-buttons",
    "checkbox": ".jupyter-widget-checkbox, .widget-checkbox",
}


def _tell(request, line):
    """A line on the terminal even where pytest captures output (make test): where the screenshots are."""
    capture = request.config.pluginmanager.getplugin("capturemanager")
    with capture.global_and_fixture_disabled():
        print(line)


@pytest.fixture(scope="module")
def artifacts(request):
    d = browser.artifact_dir(ARTIFACT_NAME)
    yield d
    _tell(request, f"\nscreenshots of the notebooks in JupyterLab (one .png and .json each): {d}")


@pytest.fixture(scope="module")
def jupyterlab():
    with browser.JupyterLab(browser.ROOT, env={"CUDA_VISIBLE_DEVICES": ""}) as lab:
        yield lab
    assert not lab.leftovers, f"processes of JupyterLab still alive after it stopped (killed): {lab.leftovers}"


@pytest.fixture(scope="module")
def chromium():
    """One browser context for every notebook: JupyterLab's scripts are loaded and compiled once."""
    with browser.chromium() as b:
        context = b.new_context(viewport={"width": 1400, "height": 900})
        yield context
        context.close()


# ---------------------------------------------------------------------------------------------
# What the page is asked (JavaScript run in it)
# ---------------------------------------------------------------------------------------------

KERNEL_IDLE = """() => [...document.querySelectorAll('.jp-StatusBar-TextItem')]
    .some(e => /\\| Idle$/.test(e.textContent.trim()) && !/No Kernel/.test(e.textContent))"""

# done: the kernel idle, no cell queued or running ([*]), at least one cell has run
RUN_FINISHED = """() => {
    const prompts = [...document.querySelectorAll('.jp-Notebook .jp-CodeCell .jp-InputArea-prompt')]
        .map(e => e.textContent);
    const idle = (%s)();
    return idle && prompts.some(t => /\\[\\d+\\]/.test(t)) && !prompts.some(t => t.includes('*'));
}""" % KERNEL_IDLE

# every output of the notebook: its cell, mime type, text; nested ones (inside a widget's Output) too
OUTPUTS = """() => [...document.querySelectorAll('.jp-Notebook .jp-Cell')].flatMap((cell, i) =>
    [...cell.querySelectorAll('.jp-OutputArea-output')].map(o => ({
        cell: i, mime: o.dataset.mimeType || '', text: o.innerText,
        widget: !!o.querySelector('.jupyter-widgets'), inWidget: !!o.closest('.widget-output')})))"""

# The explorers: each top-level output that holds widgets ("view"). Inside it, in document order,
# its Output widgets and its controls; the control for an output is the best kind among those between
# it and the previous output. Marks them (data-course-*) for the locators below; returns the plan.
PLAN = """(kinds) => {
    const views = [...document.querySelectorAll('.jp-Notebook .jp-Cell')].flatMap((cell, c) =>
        [...cell.querySelectorAll('.jp-OutputArea-output')]
            .filter(o => o.querySelector('.jupyter-widgets') && !o.closest('.widget-output'))
            .map(o => ({o, cell: c})));
    return views.map(({o, cell}, v) => {
        const sel = ['.widget-output', ...Object.values(kinds)].join(', ');
        const items = [...o.querySelectorAll(sel)].filter(e => !e.parentElement.closest(sel));
        const outputs = [];
        let pending = [];
        for (const e of items) {
            if (e.matches('.widget-output')) {
                const j = outputs.length;
                e.dataset.courseOut = `${v}-${j}`;
                const kind = Object.keys(kinds).find(k => pending.some(p => p.matches(kinds[k])));
                const ctl = kind && pending.find(p => p.matches(kinds[kind]));
                if (ctl) ctl.dataset.courseCtl = `${v}-${j}`;
                const label = ctl && ctl.querySelector('.widget-label, .jupyter-widget-label');
                outputs.push({id: `${v}-${j}`, kind: kind || null,
                              control: label ? label.textContent.trim() : ''});
                pending = [];
            } else {
                pending.push(e);
            }
        }
        return {cell, view: v, outputs};
    });
}"""

# what an output shows: its text and a hash of each image (a redrawn figure is a new PNG)
SIGNATURE = """(id) => {
    const o = document.querySelector(`[data-course-out="${id}"]`);
    if (!o) return null;
    const h = s => { let x = 5381; for (let i = 0; i < s.length; i++) x = (x * 33 + s.charCodeAt(i)) | 0; return x; };
    return o.innerText + '|' + [...o.querySelectorAll('img')].map(i => h(i.src)).join(',');
}"""

# the value a control shows now
VALUE = """(id) => {
    const c = document.querySelector(`[data-course-ctl="${id}"]`);
    const r = c.querySelector('.widget-readout, .jupyter-widget-readout');
    if (r) return r.textContent.trim();
    const s = c.querySelector('select');
    if (s) return s.value;
    const b = c.querySelector('button.mod-active');
    if (b) return b.textContent.trim();
    const i = c.querySelector('input[type=checkbox]');
    return i ? String(i.checked) : '';
}"""


def _signature(page, out_id):
    return page.evaluate(SIGNATURE, out_id)


def _settle(page, lab, rel, out_id, quiet_s=0.3):
    """Wait until the notebook's kernel has finished (lab.wait_for_kernel: its idle status comes too
    early for a widget callback) and the output has not changed for quiet_s (the last messages drawn)."""
    lab.wait_for_kernel(rel, timeout=CHANGE_TIMEOUT_S)
    deadline = time.monotonic() + CHANGE_TIMEOUT_S
    last, since = None, time.monotonic()
    while time.monotonic() < deadline:
        now = _signature(page, out_id)
        if now != last:
            last, since = now, time.monotonic()
        elif time.monotonic() - since >= quiet_s:
            return
        page.wait_for_timeout(100)
    raise AssertionError(f"output {out_id} still changing {CHANGE_TIMEOUT_S} s after its kernel finished")


def _move(page, ctl, kind):
    """Move one control as a user would: a slider by the keyboard, a dropdown to the next option,
    another toggle button, the checkbox flipped."""
    if kind == "slider":
        handle = ctl.locator(".noUi-handle").first
        now, top = (float(handle.get_attribute(a) or 0) for a in ("aria-valuenow", "aria-valuemax"))
        handle.focus()
        handle.press("ArrowRight" if now < top else "ArrowLeft")
    elif kind == "dropdown":
        select = ctl.locator("select")
        n = select.locator("option").count()
        i = select.evaluate("s => s.selectedIndex")
        select.select_option(index=(i + 1) % n)
    elif kind == "toggle-buttons":
        ctl.locator("button:not(.mod-active)").first.click()
    elif kind == "checkbox":
        ctl.locator("input[type=checkbox]").click()
    else:
        raise AssertionError(f"no way to move a {kind}")


def _open_and_run(page, lab, rel):
    """Open the notebook, wait for its kernel, Run > Run All Cells, wait until no cell is queued or running."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
    step = "open it"
    try:
        page.goto(lab.url(f"tree/{rel}"))
        page.wait_for_selector(".jp-Notebook .jp-CodeCell", timeout=60_000)
        step = "start its kernel"
        page.wait_for_function(KERNEL_IDLE, timeout=90_000)        # started and connected: Run All is not lost
        step = "Run All Cells"
        page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Run$")).click()
        page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Run All Cells$")).click()
        page.wait_for_function(RUN_FINISHED, timeout=RUN_TIMEOUT_S * 1000, polling=250)
    except PlaywrightTimeout:
        prompts = page.evaluate("() => [...document.querySelectorAll('.jp-Notebook .jp-CodeCell .jp-InputArea-prompt')]"
                                ".map(e => e.textContent.trim()).join(' ')")
        raise AssertionError(f"{rel}: JupyterLab could not {step} in time (cell prompts: {prompts or 'none'}); "
                             f"the end of JupyterLab's log:\n{lab.log_tail(15)}") from None


def _screenshot(page, path):
    """The whole notebook in one picture: the left sidebar closed, the window as tall as the notebook
    (JupyterLab's notebook scrolls inside a fixed layout, so a full-page screenshot alone shows one screen)."""
    page.keyboard.press("Escape")
    if page.locator(".jp-SideBar.jp-mod-left .lm-TabBar-tab.lm-mod-current").count():
        page.locator(".jp-SideBar.jp-mod-left .lm-TabBar-tab.lm-mod-current").click()   # closes the file browser
    inner = page.evaluate("() => { const p = document.querySelector('.jp-NotebookPanel .jp-WindowedPanel-outer');"
                          " if (!p) return [0, 0]; p.scrollTop = 0; return [p.scrollHeight, p.clientHeight]; }")
    width = page.viewport_size["width"]
    want = page.viewport_size["height"] + max(0, inner[0] - inner[1]) + 40
    height = min(want, MAX_SHOT_PX)
    page.set_viewport_size({"width": width, "height": height})
    page.wait_for_timeout(300)                       # one layout and paint at the new size
    page.screenshot(path=str(path), full_page=True)
    return height, want > height


def _sha(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("path", PATHS, ids=[p.name for p in PATHS])
def test_notebook_runs_in_jupyterlab_its_explorers_render_and_respond(path, jupyterlab, chromium, artifacts):
    rel = path.relative_to(browser.ROOT).as_posix()
    before = _sha(path)
    source = json.loads(path.read_text())
    explorer_cells = sum(c["cell_type"] == "code" and "ipywidgets" in "".join(c["source"]) for c in source["cells"])
    start = time.monotonic()
    page = chromium.new_page()
    result = {"notebook": path.name, "explorer_cells": explorer_cells, "moves": []}
    try:
        _open_and_run(page, jupyterlab, rel)
        result["run_s"] = round(time.monotonic() - start, 1)
        outputs = page.evaluate(OUTPUTS)

        # (a) no traceback anywhere, nested outputs included
        errors = [o for o in outputs if o["mime"] == "application/vnd.jupyter.stderr" and TRACEBACK.search(o["text"])]
        assert not errors, f"{path.name}: cell {errors[0]['cell']} shows an error:\n{errors[0]['text'][-3000:]}"

        # (b) widgets, not their text repr; nothing the widget manager could not show
        reprs = [o for o in outputs if TEXT_REPR.match(o["text"]) and not o["widget"]]
        assert not reprs, (f"{path.name}: cell {reprs[0]['cell']} shows a widget as text "
                           f"({reprs[0]['text'][:120]!r}): the widget manager (jupyterlab_widgets) is not rendering")
        broken = [o for o in outputs if "Error displaying widget" in o["text"] or "Loading widget..." in o["text"]]
        assert not broken, f"{path.name}: cell {broken[0]['cell']}: {broken[0]['text'][:200]!r}"
        plan = page.evaluate(PLAN, CONTROLS)
        assert len(plan) >= explorer_cells, (f"{path.name}: {explorer_cells} cell(s) use ipywidgets but "
                                             f"{len(plan)} output(s) render widgets")

        # (c) one control per explorer output moved: that output changes
        for view in plan:
            assert view["outputs"], f"{path.name}: the widgets of cell {view['cell']} have no Output to watch"
            for out in view["outputs"]:
                assert out["kind"], f"{path.name}: cell {view['cell']}: no control to move before output {out['id']}"
                page.wait_for_function(f"() => ({SIGNATURE})('{out['id']}').length > 1", timeout=CHANGE_TIMEOUT_S * 1000)
                _settle(page, jupyterlab, rel, out["id"])       # drawn in full before the control moves
                was = _signature(page, out["id"])
                ctl = page.locator(f'[data-course-ctl="{out["id"]}"]')
                ctl.scroll_into_view_if_needed()
                value_before = page.evaluate(VALUE, out["id"])
                t = time.monotonic()
                _move(page, ctl, out["kind"])
                try:
                    page.wait_for_function(
                        "([id, was]) => { const s = (%s)(id); return s && s !== was && s.length > 1; }" % SIGNATURE,
                        arg=[out["id"], was], timeout=CHANGE_TIMEOUT_S * 1000, polling=200)
                except Exception:
                    raise AssertionError(
                        f"{path.name}: cell {view['cell']}: moving the {out['kind']} {out['control']!r} "
                        f"({value_before} -> {page.evaluate(VALUE, out['id'])}) did not change its output "
                        f"within {CHANGE_TIMEOUT_S} s") from None
                _settle(page, jupyterlab, rel, out["id"])
                move = {"cell": view["cell"], "control": f"{out['kind']} {out['control']}".strip(),
                        "from": value_before, "to": page.evaluate(VALUE, out["id"]),
                        "seconds": round(time.monotonic() - t, 2)}
                result["moves"].append(move)
                # nothing the move drew is an error
                late = [o for o in page.evaluate(OUTPUTS) if o["mime"] == "application/vnd.jupyter.stderr"
                        and TRACEBACK.search(o["text"])]
                assert not late, f"{path.name}: after moving {move['control']}: {late[0]['text'][-3000:]}"
        result["explorers"] = len(plan)
    finally:
        # (d) the screenshot, whatever happened above
        shot = artifacts / f"{path.stem}.png"
        try:
            result["screenshot_height"], result["screenshot_clipped"] = _screenshot(page, shot)
            result["screenshot"] = str(shot)
        except Exception as e:                       # the page may be gone; the failure above says why
            result["screenshot_error"] = str(e)[:300]
        result["seconds"] = round(time.monotonic() - start, 1)
        page.close()
        with contextlib.suppress(OSError):            # a server that has died: the failure above says so
            jupyterlab.shutdown_kernels()
        (artifacts / f"{path.stem}.json").write_text(json.dumps(result, indent=1) + "\n")
        moves = ", ".join(f"{m['control']} {m['from']}->{m['to']}" for m in result["moves"]) or "no explorer"
        print(f"{path.name:28s} run {result.get('run_s', '-'):>5} s, total {result['seconds']:>5} s; {moves}; "
              f"screenshot {shot}{' (cut at %d px)' % MAX_SHOT_PX if result.get('screenshot_clipped') else ''}")
    assert _sha(path) == before, f"{path.name} was written while open in JupyterLab (autosave must be off)"
