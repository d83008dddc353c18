"""The flame graphs in a real Chromium (Debian's, through Playwright, as
tests/e2e/test_report_browser.py launches it), over the fixture store of two real profiled
pgbench-tpcb points (tests/fixtures/stores/profiled-sync-async.db: synchronous_commit on
and off): a point's page in `dbarena serve` draws its flame graph, an SVG whose frames
are PostgreSQL's functions (a <title> each), with no script and nothing fetched from
elsewhere; the report's On CPU section draws each label's and the differential, red where
async spends more a transaction and blue where less. Over a store of several profiled
points a level (tests/profiledstore.py: the fixture's real stacks, two repeats a level),
the report and Decide draw each label's pooled flame graph, with what it pooled said
under it, and the pools' differential. And the screenshots docs/profiles.md shows
(docs/images/flame-graph.png, docs/images/flame-differential.png), written there with
DBARENA_UPDATE_SCREENSHOTS=1."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

import profiledstore
from conftest import cli_env
# `report` only reads the store and writes its file: run in this process (tests/inprocess.py),
# not as `python -m dbarena`, half a second of CPU to start. `serve` stays a process.
from inprocess import dbarena as dbarena_here
from test_serve_browser import _env, _start, _stop, _wait_listening, free_port

pytestmark = pytest.mark.e2e

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
        "--disable-component-update", "--disable-sync"]
FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "stores" / "profiled-sync-async.db"
SCREENSHOT = Path(__file__).resolve().parents[2] / "docs" / "images" / "flame-graph.png"
DIFFERENTIAL_SCREENSHOT = SCREENSHOT.with_name("flame-differential.png")
# Functions of PostgreSQL's own that a pgbench-tpcb backend spends time in (its exports:
# Debian's binary has dynamic symbols only).
POSTGRES_FUNCTIONS = {"PostgresMain", "exec_simple_query", "PortalRun", "hash_search_with_hash_value",
                      "ReleaseCatCache", "_bt_compare", "LWLockAcquire", "XLogInsertRecord", "heap_update",
                      "ExecutorRun", "standard_ExecutorRun", "pg_parse_query", "ReadBuffer_common"}


@pytest.fixture
def stored(tmp_path: Path) -> Path:
    copy = tmp_path / "profiled.db"
    shutil.copy(FIXTURE, copy)
    return copy


def test_a_points_flame_graph_in_chromium(stored: Path, tmp_path: Path) -> None:
    from playwright.sync_api import sync_playwright

    port = free_port()
    server, _ = _start(["--store", str(stored), "--port", str(port)], _env(tmp_path))
    served = f"http://127.0.0.1:{port}"
    try:
        _wait_listening("127.0.0.1", port)
        console, requests, page_errors = [], [], []
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.on("console", lambda m: console.append((m.type, m.text)))
            page.on("request", lambda r: requests.append(r.url))
            page.on("pageerror", lambda e: page_errors.append(str(e)))
            page.goto(served + "/point/1")
            graph = page.locator("#profile ~ div.flame svg.flamegraph")
            graph.scroll_into_view_if_needed()
            box = graph.bounding_box()
            frames = page.eval_on_selector_all(
                "div.flame svg.flamegraph g.frame",
                "els => els.map(g => ({title: g.querySelector('title').textContent,"
                " w: g.querySelector('rect').getBoundingClientRect().width,"
                " text: (g.querySelector('text') || {textContent: ''}).textContent}))")
            page.locator("div.flame").screenshot(path=str(tmp_path / "flame-graph.png"))
            browser.close()
    finally:
        err = _stop(server)
    assert "Traceback" not in err, err
    assert box is not None and box["width"] > 600 and box["height"] > 100
    names = {f["title"].split(":")[0] for f in frames}
    assert names & POSTGRES_FUNCTIONS, sorted(names)[:40]
    assert "postgres" in names  # the processes' row
    # Every frame drawn has a width; a name written is its function's, cut to fit.
    assert all(f["w"] > 0 for f in frames)
    assert any(f["text"] and f["title"].startswith(f["text"].rstrip(".")) for f in frames)
    assert page_errors == [] and [m for m in console if m[0] == "error"] == []
    assert all(url.startswith(served + "/") for url in requests)
    assert (tmp_path / "flame-graph.png").stat().st_size > 10_000
    if os.environ.get("DBARENA_UPDATE_SCREENSHOTS"):
        shutil.copy(tmp_path / "flame-graph.png", SCREENSHOT)


def test_the_reports_flame_graphs_and_differential_in_chromium(stored: Path, tmp_path: Path) -> None:
    from playwright.sync_api import sync_playwright

    out = tmp_path / "report.html"
    done = dbarena_here("report", "--store", str(stored), "-o", str(out), "--about", "settings", env=cli_env(tmp_path))
    assert done.returncode == 0, done.stderr
    requests, page_errors = [], []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.on("request", lambda r: requests.append(r.url))
        page.on("pageerror", lambda e: page_errors.append(str(e)))
        page.goto(out.as_uri())
        graphs = page.eval_on_selector_all("#profiles svg.flamegraph", GRAPHS)
        browser.close()
    assert [g["cls"] for g in graphs] == ["flamegraph", "flamegraph", "flamegraph differential"]
    assert all(g["w"] > 600 for g in graphs)
    assert [g["caption"] for g in graphs] == [
        "sync at 2 threads: 1 point pooled (point 1), 381 samples at 99 Hz over 6,617 transactions: "
        "581.6 us a transaction on CPU",
        "async at 2 threads: 1 point pooled (point 2), 525 samples at 99 Hz over 13,179 transactions: "
        "402.4 us a transaction on CPU",
        "async against sync at 2 threads: 1 point against 1 point pooled, 525 against 381 samples"]
    _red_where_more(graphs[2]["frames"])
    assert page_errors == [] and requests == [out.as_uri()]


# Each flame graph of a page: its class, drawn width, caption under it and frames (title, fill).
GRAPHS = ("els => els.map(e => ({cls: e.getAttribute('class'), w: e.getBoundingClientRect().width,"
          " caption: e.closest('figure').querySelector('figcaption').textContent,"
          " frames: [...e.querySelectorAll('g.frame')].map(g => [g.querySelector('title').textContent,"
          " g.querySelector('rect').getAttribute('fill')])}))")


def _red_where_more(differential: list[list[str]]) -> None:
    """Red where the label spends more a transaction than the baseline, blue where less;
    PostgreSQL's own functions among the frames."""
    for title, fill in differential:
        change = float(title.rsplit("change ", 1)[1].split(" ")[0].replace(",", ""))
        red, green, blue = (int(v) for v in fill[4:-1].split(","))
        if change > 0:
            assert red >= blue, (title, fill)
        elif change < 0:
            assert blue >= red, (title, fill)
    assert any(title.split(":")[0] in POSTGRES_FUNCTIONS for title, _ in differential)


def test_the_pooled_flame_graphs_and_their_differential_in_chromium(tmp_path: Path) -> None:
    """Two profiled points a level, one at 50 Hz: the report at --at-threads 1 and Decide
    (at the highest level both labels measured, 2) draw each label's pool and the
    differential of the pools, and say what they pooled."""
    from playwright.sync_api import sync_playwright

    pooled = profiledstore.build(tmp_path / "pooled.db")
    out = tmp_path / "report.html"
    done = dbarena_here("report", "--store", str(pooled), "-o", str(out), "--at-threads", "1", "--about", "settings",
                        env=cli_env(tmp_path))
    assert done.returncode == 0, done.stderr
    port = free_port()
    server, _ = _start(["--store", str(pooled), "--port", str(port)], _env(tmp_path))
    served = f"http://127.0.0.1:{port}"
    try:
        _wait_listening("127.0.0.1", port)
        requests, page_errors = [], []
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.on("request", lambda r: requests.append(r.url))
            page.on("pageerror", lambda e: page_errors.append(str(e)))
            page.goto(out.as_uri())
            in_report = page.eval_on_selector_all("#profiles svg.flamegraph", GRAPHS)
            page.goto(served + "/decide?baseline=sync&label=sync&label=async&about=settings")
            on_decide = page.eval_on_selector_all("#profiles svg.flamegraph", GRAPHS)
            browser.close()
    finally:
        err = _stop(server)
    assert "Traceback" not in err, err
    for graphs, at, first in ((in_report, "1 thread", (1, 2)), (on_decide, "2 threads", (3, 4))):
        assert [g["cls"] for g in graphs] == ["flamegraph", "flamegraph", "flamegraph differential"]
        assert all(g["w"] > 600 and len(g["frames"]) > 50 for g in graphs)
        sync, async_, differential = (g["caption"] for g in graphs)
        assert sync.startswith(f"sync at {at}: 2 points pooled (points {first[0]}, {first[1]}), ")
        assert "samples at 50, 99 Hz over 13,000 transactions" in sync
        assert async_.startswith(f"async at {at}: 2 points pooled ")
        assert "over 25,000 transactions" in async_
        assert differential.startswith(f"async against sync at {at}: 2 points against 2 points pooled")
        # The pooled graph's frames in time a transaction; the failed point's profile in none.
        assert any(t.endswith(" %") and " us/tx, " in t for t, _ in graphs[0]["frames"])
        assert not any("failed_only_function" in t for g in graphs for t, _ in g["frames"])
        _red_where_more(graphs[2]["frames"])
    assert page_errors == []
    assert all(url == out.as_uri() or url.startswith(served + "/") for url in requests)


def test_decides_differential_screenshot(stored: Path, tmp_path: Path) -> None:
    """Decide's differential of the fixture's two real points, as docs/profiles.md shows it."""
    from playwright.sync_api import sync_playwright

    port = free_port()
    server, _ = _start(["--store", str(stored), "--port", str(port)], _env(tmp_path))
    try:
        _wait_listening("127.0.0.1", port)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(f"http://127.0.0.1:{port}/decide?baseline=sync&label=sync&label=async&about=settings")
            figure = page.locator("#profiles figure.flame").filter(has=page.locator("svg.differential"))
            figure.scroll_into_view_if_needed()
            figure.screenshot(path=str(tmp_path / "flame-differential.png"))
            browser.close()
    finally:
        err = _stop(server)
    assert "Traceback" not in err, err
    assert (tmp_path / "flame-differential.png").stat().st_size > 10_000
    if os.environ.get("DBARENA_UPDATE_SCREENSHOTS"):
        shutil.copy(tmp_path / "flame-differential.png", DIFFERENTIAL_SCREENSHOT)
