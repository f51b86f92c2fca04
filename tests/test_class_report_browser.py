"""The class report of `make grade-class` in a real browser (headless Chromium through Playwright,
common/browser.py), opened from disk as a teacher opens it: the class of tests/conftest.py graded
here (`local_class`: the reference, the untouched workspace and two known-wrong kernels, NOGPU).
What the page draws is checked against class.json: the score histogram has a size and one student
per graded submission, the pass-rate table a row and a bar as wide as the rate per check, the lost-
points table the class's reasons; every student's link opens their own page, which links back.
Screenshots: build/test-artifacts/class-report/. Skips, saying why, without Playwright or Chromium."""
import json
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest

from common import browser

WHY = browser.missing()
pytestmark = pytest.mark.skipif(bool(WHY), reason=WHY or "")
WIDTH = 1280                 # a laptop's window: the report must fit it without scrolling sideways


def _tell(request, line):
    """A line on the terminal even where pytest captures output (make test): where the screenshots are."""
    capture = request.config.pluginmanager.getplugin("capturemanager")
    with capture.global_and_fixture_disabled():
        print(line)


@pytest.fixture(scope="module")
def shots(request):
    d = browser.artifact_dir("class-report")
    yield d
    _tell(request, f"\nscreenshots of the class report and each student's page: {d}")


@pytest.fixture(scope="module")
def page():
    with browser.chromium() as b:
        yield b.new_page(viewport={"width": WIDTH, "height": 900})


@pytest.fixture(scope="module")
def report(local_class, page, shots):
    page.goto((local_class.out / "class.html").as_uri())
    page.wait_for_load_state("load")
    page.screenshot(path=str(shots / "class.png"), full_page=True)
    return local_class.data


def _section_table(page, anchor):
    """The rows (cell texts) of the first table after the heading with id `anchor`."""
    return page.evaluate("""(id) => {
        let e = document.getElementById(id);
        while (e && e.tagName !== 'TABLE') e = e.nextElementSibling;
        return e ? [...e.rows].slice(1).map(r => [...r.cells].map(c => c.innerText.trim())) : null;
    }""", anchor)


def test_the_score_histogram_is_drawn_with_one_student_per_graded_submission(page, report):
    svg = page.locator("svg[aria-label='score distribution']")
    assert svg.count() == 1, "class.html has no score histogram (an <svg aria-label='score distribution'>)"
    box = svg.bounding_box()
    assert box and box["width"] > 100 and box["height"] > 50, f"the histogram is drawn {box}"
    bars = page.evaluate("""() => [...document.querySelectorAll("svg[aria-label='score distribution'] rect")]
        .map(r => ({h: r.getBoundingClientRect().height, title: r.textContent}))""")
    counted = sum(int(b["title"].split(": ")[1].split()[0]) for b in bars)
    graded = report["summary"]["graded"]
    assert counted == graded, f"the histogram counts {counted} students, class.json {graded} graded"
    assert sum(b["h"] > 0 for b in bars) == sum(int(b["title"].split(": ")[1].split()[0]) > 0 for b in bars) >= 1


def test_the_pass_rate_table_has_a_row_per_check_and_bars_as_wide_as_the_rates(page, report):
    rows = _section_table(page, "checks")
    assert rows is not None, "class.html has no pass-rate table after its #checks heading"
    assert [(r[0], r[1]) for r in rows] == [(c["part"], c["check"]) for c in report["pass_rates"]]
    widths = page.evaluate("""() => {
        let e = document.getElementById('checks');
        while (e && e.tagName !== 'TABLE') e = e.nextElementSibling;
        return [...e.rows].slice(1).map(r => { const bar = r.querySelector('.bar'), fill = bar && bar.querySelector('span');
            return bar ? fill.getBoundingClientRect().width / bar.getBoundingClientRect().width : null; });
    }""")
    for c, w in zip(report["pass_rates"], widths):
        if c["rate"] is None:
            assert w is None, f"{c['column']} is not graded, but draws a bar"
        else:
            assert w is not None and abs(w - c["rate"]) < 0.02, f"{c['column']}: bar {w}, rate {c['rate']}"
    assert any(c["rate"] is not None for c in report["pass_rates"]), "no check graded at all"


def test_the_most_common_lost_points_reasons_are_listed(page, report):
    assert report["reasons"], "the class has known-wrong kernels: class.json must list reasons for lost points"
    rows = _section_table(page, "reasons")
    assert rows is not None, "class.html has no lost-points table after its #reasons heading"
    shown = report["reasons"][:20]
    assert len(rows) == len(shown)
    for r, e in zip(rows, shown):
        assert r[0] == str(e["count"]) and r[2] == e["part"] and e["example"] in r[4], (r, e)


def test_the_page_fits_a_laptop_window(page, report):
    wide = page.evaluate("() => document.documentElement.scrollWidth")
    assert wide <= WIDTH, f"class.html is {wide} px wide at a {WIDTH} px window: it scrolls sideways"


def test_each_students_link_opens_their_report_which_links_back(page, report, shots):
    names = [s["name"] for s in report["students"]]
    links = page.evaluate("""() => { let e = document.getElementById('students');
        while (e && e.tagName !== 'TABLE') e = e.nextElementSibling;
        return e ? [...e.querySelectorAll('a')].map(a => a.textContent) : []; }""")
    assert links == names, f"the students table links {links}, class.json has {names}"
    home = page.url
    for s in report["students"]:
        page.locator("#students ~ table a", has_text=s["name"]).first.click()
        page.wait_for_load_state("load")
        assert page.url.endswith(f"students/{s['name']}.html"), page.url
        assert page.locator("h1").inner_text().strip() == s["name"]
        meta = page.locator(".meta").inner_text()
        assert f"status: {s['status']}" in meta, meta
        if s["score"] is not None:
            assert f"score {s['score']} of {s['graded_max']}" in meta, meta
        page.screenshot(path=str(shots / f"student-{s['name']}.png"), full_page=True)
        page.locator("a", has_text="the class").first.click()
        page.wait_for_load_state("load")
        assert page.url == home
    # the reasons table links students too: every link of the page leads to a file that is there
    hrefs = page.evaluate("() => [...document.querySelectorAll('a[href]')].map(a => a.href)")
    gone = [h for h in hrefs if h.startswith("file:") and not Path(unquote(urlparse(h).path)).exists()]
    assert not gone, f"class.html links files that do not exist: {gone}"
    (shots / "class.json").write_text(json.dumps(report["summary"], indent=1) + "\n")
