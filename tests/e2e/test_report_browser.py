"""`dbarena report` from real runs, opened in a real headless Chromium (Debian's
chromium, driven by Playwright): charts present and drawn, no console errors, no
network requests, a label with <script> shown as text, a screenshot taken."""

from __future__ import annotations

import json
import shutil

import pytest

from conftest import cli_env, dbarena

pytestmark = pytest.mark.e2e

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
EVIL = "<script>alert(1)</script>"


@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    import tempfile
    from pathlib import Path

    public = Path(tempfile.mkdtemp(prefix="dbarena-test-", dir="/tmp"))
    public.chmod(0o755)
    store = tmp_path_factory.mktemp("report") / "r.db"
    for label, price in (("box-a", "0.192"), (EVIL, "0.154")):
        done = dbarena("run", "--workload", "pgbench-select-only", "--threads", "1,2", "--duration", "8",
                       "--scale", "1", "--label", label, "--price-per-hour", price, "--store", str(store),
                       env=cli_env(public))
        assert done.returncode == 0, done.stderr
    shutil.rmtree(public, ignore_errors=True)
    return store


def test_report_in_headless_chromium(stored, tmp_path):
    from playwright.sync_api import sync_playwright

    out = tmp_path / "report.html"
    done = dbarena("report", "--store", str(stored), "--baseline", "box-a", "--at-threads", "2", "-o", str(out),
                   env=cli_env("/tmp"))
    assert done.returncode == 0, done.stderr
    console, requests, dialogs, page_errors = [], [], [], []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=[
            "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
            "--disable-component-update", "--disable-sync"])
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
    for chart in charts:
        assert chart["w"] > 300 and chart["h"] > 150 and chart["paths"] > 5 and chart["lines"] >= 2
    assert EVIL in cells and EVIL in title  # shown as text ...
    assert dialogs == [] and page_errors == []  # ... and never run
    assert [m for m in console if m[0] == "error"] == []
    assert loaded == [out.as_uri()]  # the file itself, nothing from the network
    assert (tmp_path / "report.png").stat().st_size > 20_000


def test_report_formats_from_the_cli(stored, tmp_path):
    md = tmp_path / "article.md"
    assert dbarena("report", "--store", str(stored), "-o", str(md), env=cli_env("/tmp")).returncode == 0
    assert "![postgres pgbench-select-only throughput](article_files/" in md.read_text()
    assert any((tmp_path / "article_files").glob("*.svg"))
    js = tmp_path / "r.json"
    assert dbarena("report", "--store", str(stored), "--price", "box-a=1.0", "-o", str(js), env=cli_env("/tmp")).returncode == 0
    rows = json.loads(js.read_text())["rows"]
    box_a = [r for r in rows if r["label"] == "box-a"]
    assert all(r["price_per_hour"] == 1.0 and r["price_per_100_tps"] == pytest.approx(100 / r["tps"]) for r in box_a)
    assert all(r["tps_per_core"] and r["scaling_efficiency"] for r in box_a)
    bad = dbarena("report", "--store", str(stored), "--baseline", "nope", env=cli_env("/tmp"))
    assert bad.returncode == 2 and "no results labelled 'nope'" in bad.stderr
    bad = dbarena("report", "--store", str(stored), "--price", "box-a=free", env=cli_env("/tmp"))
    assert bad.returncode == 2 and "is not a price" in bad.stderr and "Traceback" not in bad.stderr
