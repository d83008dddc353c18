"""`dbarena report` from real runs, opened in a real headless Chromium (Debian's
chromium, driven by Playwright): charts present and drawn, no console errors, no
network requests, a label with <script> shown as text, a screenshot taken; a label
hidden and shown again in every chart by its checkbox (CSS only).
The page's one script (save as SVG) runs; a script in a label never does."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import cli_env
# `report` only reads the store and writes its file: run in this process
# (tests/inprocess.py), not as `python -m dbarena`, half a second of CPU each to start.
from inprocess import dbarena as dbarena_here

pytestmark = pytest.mark.e2e

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
EVIL = "<script>alert(1)</script>"


# The real runs the report is made of: two runs of pgbench-select-only at 1 and 2 threads,
# labelled box-a and EVIL, with prices (tests/fixtures/stores/README.md says how they were
# made), read from a copy of the committed store: the pages, not the runs, are what this
# module tests; tests/e2e/test_run.py and others make such runs live.
STORE = Path(__file__).resolve().parents[1] / "fixtures" / "stores" / "report-two-labels.db"


@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    store = tmp_path_factory.mktemp("report") / "r.db"
    shutil.copy(STORE, store)
    return store


ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
        "--disable-component-update", "--disable-sync"]


def test_report_in_headless_chromium(stored, tmp_path):
    from playwright.sync_api import sync_playwright

    out = tmp_path / "report.html"
    done = dbarena_here("report", "--store", str(stored), "--baseline", "box-a", "--at-threads", "2", "-o", str(out),
                        env=cli_env("/tmp"))
    assert done.returncode == 0, done.stderr
    console, requests, dialogs, page_errors = [], [], [], []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.on("console", lambda m: console.append((m.type, m.text)))
        page.on("request", lambda r: requests.append(r.url))
        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        page.on("pageerror", lambda e: page_errors.append(str(e)))
        page.goto(out.as_uri())
        charts = page.eval_on_selector_all(
            "figure.chart svg",
            "els => els.map(e => ({w: e.getBoundingClientRect().width, h: e.getBoundingClientRect().height,"
            " paths: e.querySelectorAll('path').length, lines: e.querySelectorAll('g[id^=line2d] path').length}))")
        cells = page.eval_on_selector_all("td", "els => els.map(e => e.textContent)")
        # The charts of a section in a grid: two side by side on a wide screen, one
        # under the other on a narrow one.
        boxes = "els => els.map(e => { const r = e.getBoundingClientRect(); return {x: r.x, y: r.y}; })"
        wide = page.eval_on_selector_all("section[id^=postgres] figure.chart", boxes)
        page.set_viewport_size({"width": 800, "height": 900})
        narrow = page.eval_on_selector_all("section[id^=postgres] figure.chart", boxes)
        page.set_viewport_size({"width": 1280, "height": 900})
        title = page.title()
        # Hover: each point of a chart carries its exact values (an SVG <title>).
        tips = page.eval_on_selector_all("figure.chart-throughput svg g.hover title", "els => els.map(e => e.textContent)")
        # The last circle: drawn over the others, it is never covered (two labels' points
        # can sit at one spot).
        page.locator("figure.chart-throughput svg g.hover circle").last.hover()
        page.screenshot(path=str(tmp_path / "report.png"), full_page=True)
        loaded = list(requests)
        # A chart saved for an article: the link downloads the SVG as a file.
        with page.expect_download() as download:
            page.click("figure.chart-throughput a.save")
        saved = download.value.path().read_text()
        browser.close()
    assert any(t.startswith("box-a, 2 threads: ") and " TPS" in t for t in tips), tips
    assert saved.startswith("<svg") and "box-a, 1 threads" in saved
    assert len(charts) >= 3  # throughput, latency, per-second
    assert wide[0]["y"] == wide[1]["y"] and wide[1]["x"] > wide[0]["x"] + 300
    assert narrow[0]["x"] == narrow[1]["x"] and narrow[1]["y"] > narrow[0]["y"] + 150
    for chart in charts:
        assert chart["w"] > 300 and chart["h"] > 150 and chart["paths"] > 5 and chart["lines"] >= 2
    assert EVIL in cells and EVIL in title  # shown as text ...
    assert dialogs == [] and page_errors == []  # ... and never run
    assert [m for m in console if m[0] == "error"] == []
    assert loaded == [out.as_uri()]  # the file itself, nothing from the network
    assert (tmp_path / "report.png").stat().st_size > 20_000


# Per chart, how many of a label's elements (lines, markers, bands, bars, cuts, hover
# points; not its legend entries) the page shows, and how many it has.
SHOWN = """cls => [...document.querySelectorAll('figure.chart svg')].map(svg => {
    const els = [...svg.querySelectorAll('.' + cls + ':not(.key)')];
    // Drawn: not display: none (itself or above) and laid out; checkVisibility() says
    // true for an SVG group hidden so.
    const drawn = e => getComputedStyle(e).display !== 'none' && e.getClientRects().length > 0;
    return {all: els.length, shown: els.filter(drawn).length};
})"""


def test_a_label_is_hidden_and_shown_again_in_every_chart(stored, tmp_path):
    from playwright.sync_api import sync_playwright

    from dbarena.report.charts import label_class

    out = tmp_path / "report.html"
    done = dbarena_here("report", "--store", str(stored), "-o", str(out), env=cli_env("/tmp"))
    assert done.returncode == 0, done.stderr
    box_a, evil = label_class("box-a"), label_class(EVIL)
    requests, page_errors = [], []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.on("request", lambda r: requests.append(r.url))
        page.on("pageerror", lambda e: page_errors.append(str(e)))
        page.goto(out.as_uri())
        before = page.evaluate(SHOWN, box_a), page.evaluate(SHOWN, evil)
        checkbox = page.get_by_role("checkbox", name="box-a")
        checkbox.click()
        assert not checkbox.is_checked()
        hidden = page.evaluate(SHOWN, box_a), page.evaluate(SHOWN, evil)
        key_opacity = page.eval_on_selector_all(f"figure.chart svg .{box_a}.key",
                                                "els => els.map(e => getComputedStyle(e).opacity)")
        page.locator("nav.toggles label", has_text="box-a").click()  # its text toggles it too
        assert checkbox.is_checked()
        again = page.evaluate(SHOWN, box_a), page.evaluate(SHOWN, evil)
        browser.close()
    charts = len(before[0])
    assert charts >= 4  # throughput, bars, latency, per-second at least
    # Every chart has box-a's elements, all shown; hidden, none is; shown again, all are.
    assert all(c["all"] > 0 and c["shown"] == c["all"] for c in before[0]), before
    assert all(c["all"] > 0 and c["shown"] == 0 for c in hidden[0]), hidden
    assert again == before
    # The other label is never touched.
    assert all(c["all"] > 0 and c["shown"] == c["all"] for c in (*before[1], *hidden[1])), hidden
    assert key_opacity and set(key_opacity) == {"0.3"}  # its legend entries dimmed, not gone
    assert page_errors == []
    assert requests == [out.as_uri()]  # toggling loads nothing


def test_report_formats_from_the_cli(stored, tmp_path):
    md = tmp_path / "article.md"
    assert dbarena_here("report", "--store", str(stored), "-o", str(md), env=cli_env("/tmp")).returncode == 0
    assert "![postgres pgbench-select-only throughput](article_files/" in md.read_text()
    assert any((tmp_path / "article_files").glob("*.svg"))
    js = tmp_path / "r.json"
    assert dbarena_here("report", "--store", str(stored), "--price", "box-a=1.0", "-o", str(js),
                        env=cli_env("/tmp")).returncode == 0
    rows = json.loads(js.read_text())["rows"]
    box_a = [r for r in rows if r["label"] == "box-a"]
    assert all(r["price_per_hour"] == 1.0 and r["price_per_100_tps"] == pytest.approx(100 / r["tps"]) for r in box_a)
    assert all(r["tps_per_core"] and r["scaling_efficiency"] for r in box_a)
    bad = dbarena_here("report", "--store", str(stored), "--baseline", "nope", env=cli_env("/tmp"))
    assert bad.returncode == 2 and "no results labelled 'nope'" in bad.stderr
    bad = dbarena_here("report", "--store", str(stored), "--price", "box-a=free", env=cli_env("/tmp"))
    assert bad.returncode == 2 and "is not a price" in bad.stderr and "Traceback" not in bad.stderr


def test_the_first_screen_holds_the_decision_above_the_first_chart(stored, tmp_path):
    """The answer first: at 1400 x 900, the decision table and its verdict text are on
    the first screen, above the first chart; the page asks the network for nothing."""
    from playwright.sync_api import sync_playwright

    out = tmp_path / "report.html"
    done = dbarena_here("report", "--store", str(stored), "--baseline", "box-a", "-o", str(out), env=cli_env("/tmp"))
    assert done.returncode == 0, done.stderr
    requests: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        page.on("request", lambda r: requests.append(r.url))
        page.goto(out.as_uri())
        table = page.locator("table.decision").bounding_box()
        chart = page.locator("figure.chart svg").first.bounding_box()
        verdicts = page.locator("table.decision td:nth-child(7)").all_inner_texts()
        why = page.locator("#decision .why").inner_text()
        browser.close()
    assert table is not None and chart is not None
    assert table["y"] + table["height"] <= 900 and table["y"] + table["height"] <= chart["y"]
    # One session a side: a figure without a verdict, and what to run to get one.
    # (Or, where the neighbours' CPU set the two runs apart, that reason.)
    assert verdicts == ["inconclusive"] and ("--sessions 2" in why or "different interference" in why), why
    assert requests == [out.as_uri()]


FIXED_RATE = Path(__file__).resolve().parents[1] / "fixtures" / "stores" / "fixed-rate-three-labels.db"


def test_the_levels_offered_a_fixed_rate_are_a_table_reached_from_the_top(tmp_path):
    """A store whose points were all offered 200 TPS (no closed-loop level to chart):
    the decision, then the table of each label's p95 at that rate, which the page's
    contents link to, with compare's verdicts."""
    from playwright.sync_api import sync_playwright

    store = tmp_path / "fixed.db"
    shutil.copy(FIXED_RATE, store)
    out = tmp_path / "fixed.html"
    done = dbarena_here("report", "--store", str(store), "--about", "settings", "-o", str(out), env=cli_env("/tmp"))
    assert done.returncode == 0, done.stderr
    errors: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.goto(out.as_uri())
        page.click("nav a[href='#at-rate']")
        table = page.locator("#at-rate table")
        top = table.bounding_box()
        shown = table.is_visible()
        headers = page.eval_on_selector_all("#at-rate th", "els => els.map(e => e.textContent)")
        rows = page.eval_on_selector_all("#at-rate tbody tr",
                                         "rows => rows.map(r => [...r.cells].map(c => c.textContent))")
        decision_y = page.locator("#decision").bounding_box()
        browser.close()
    assert errors == []
    assert shown and top is not None and 0 <= top["y"] < 900  # scrolled to by its link
    assert decision_y is not None  # the decision is still the first thing on the page
    assert headers[:8] == ["label", "engine", "workload", "threads", "offered TPS", "achieved TPS", "p95 ms",
                           "runs/sessions"]
    assert len(rows) == 6 and {r[0] for r in rows} == {"a", "b", "async"}
    (tpcb_async,) = [r for r in rows if r[0] == "async" and r[2] == "pgbench-tpcb"]
    assert tpcb_async[4] == "200" and tpcb_async[-1].startswith("19.7 % lower p95 latency: faster")
