"""`dbarena serve` as people use it: the real command started as a process on a free
loopback port, driven by a real headless Chromium (Debian's, through Playwright, as
tests/e2e/test_report_browser.py launches it). Home, a link to Decide, another baseline,
the back button, a copied address reloaded, a point opened; a running run's points
appearing on Home within 2 s of another process storing one; no console error, no
request elsewhere. And the token: served on 127.0.0.2, a request from there without it
is refused."""

from __future__ import annotations

import http.client
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

import storebuild
from conftest import LIGHT, cli_env
from dbarena.model import RunInfo
from dbarena.serve import live
from dbarena.store import live as store_live
from dbarena.store.database import Store

pytestmark = pytest.mark.e2e

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
        "--disable-component-update", "--disable-sync"]
TESTS = Path(__file__).parent.parent
# What another process runs to store one more point of the running run (the library's
# own write, as `dbarena run` stores a point).
WRITE_POINT = """
import sys
import storebuild
from dbarena.store.database import Store
with Store(sys.argv[1]) as db:
    db.add_point(int(sys.argv[2]), storebuild._point(500.0, 1, int(sys.argv[3]), day=9))
"""


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int]:
    """Labels a and b, finished (a decision), and a run of label `live` still running
    with two points."""
    path = storebuild.build(tmp_path_factory.mktemp("serve") / "served.db")
    with Store(path) as db:
        run_id = db.begin_run(RunInfo(label="live", host="box", engine="postgres", target="postgresql://x@h/d",
                                      started_at=storebuild.T0 + timedelta(days=9), server_version="17.2",
                                      tool_versions={}, options={}, host_facts=storebuild.HOST))
        for repeat in range(2):
            db.add_point(run_id, storebuild._point(500.0, 1, repeat, day=9))
    return path, run_id


def _env(tmp: Path, **extra: str) -> dict[str, str]:
    env = cli_env(tmp, **extra)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(TESTS), env.get("PYTHONPATH", "")]))
    return env


def _start(argv: list[str], env: dict[str, str]) -> tuple[subprocess.Popen[str], list[str]]:
    """`dbarena serve ARGV` running, and the lines it printed at start (two)."""
    server = subprocess.Popen([sys.executable, "-m", "dbarena", "serve", *argv], env=env, text=True,
                              stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert server.stderr is not None
    said = [server.stderr.readline(), server.stderr.readline()]
    assert all(line.startswith("dbarena serve: ") for line in said), said + [server.stderr.read()]
    return server, said


def _wait_listening(host: str, port: int) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex((host, port)) == 0:
                return
        time.sleep(0.1)
    raise AssertionError(f"nothing listens on {host}:{port}")


def _stop(server: subprocess.Popen[str]) -> str:
    server.terminate()
    _, err = server.communicate(timeout=30)
    return err


@pytest.fixture(scope="module")
def served(store: tuple[Path, int], tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    path, _ = store
    port = free_port()
    server, said = _start(["--store", str(path), "--port", str(port)], _env(tmp_path_factory.mktemp("tmp")))
    assert said[0] == f"dbarena serve: http://127.0.0.1:{port}/\n"
    _wait_listening("127.0.0.1", port)
    yield f"http://127.0.0.1:{port}"
    err = _stop(server)
    assert "Traceback" not in err, err


def _decision(page: object) -> str:
    return page.inner_text("#decision")  # type: ignore[attr-defined, no-any-return]


def test_home_decide_back_reload_and_a_point_in_chromium(served: str, store: tuple[Path, int],
                                                         tmp_path: Path) -> None:
    from playwright.sync_api import sync_playwright

    path, run_id = store
    console, requests, page_errors = [], [], []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.on("console", lambda m: console.append((m.type, m.text)))
        page.on("request", lambda r: requests.append(r.url))
        page.on("pageerror", lambda e: page_errors.append(str(e)))
        page.goto(served + "/")
        assert page.title() == "Home · dbarena"
        runs = page.eval_on_selector_all("#runs tr[data-run]", "rows => rows.map(r => r.dataset.run)")
        assert runs == [str(run_id), "3", "2", "1"]  # newest first
        assert page.inner_text(f'#running tr[data-run="{run_id}"] .points') == "2 so far"

        # Home -> Decide (every label against the first), then another baseline: the
        # select shows it at once (serve.js), the address holds it.
        page.click("nav.top >> text=Decide")
        page.wait_for_url(served + "/decide")
        first = _decision(page)
        assert "each label against the baseline" in first.lower()
        with page.expect_navigation():
            page.select_option("form.choose select[name=baseline]", "b")
        assert page.url == served + "/decide?baseline=b"
        second = _decision(page)
        assert second != first and page.eval_on_selector("select[name=baseline]", "s => s.value") == "b"
        copied = page.url
        page.screenshot(path=str(tmp_path / "decide.png"), full_page=True)

        # Back: the view before, as it was.
        page.go_back()
        page.wait_for_url(served + "/decide")
        assert _decision(page) == first and page.eval_on_selector("select[name=baseline]", "s => s.value") == "a"

        # The copied address, in a new page: the same view.
        other = browser.new_page()
        other.on("pageerror", lambda e: page_errors.append(str(e)))
        other.goto(copied)
        assert _decision(other) == second
        other.close()

        # A run, then one of its points: its series drawn, its raw output shown.
        page.goto(served + "/run/1")
        page.click("table.points a >> nth=0")
        page.wait_for_url(re.compile(r".*/point/\d+$"))
        drawn = page.eval_on_selector("div.chart svg.drawn polyline", "e => e.getBoundingClientRect().width")
        assert drawn > 300 and "tps = 1" in page.inner_text("pre.raw >> nth=0")

        # Live: another process stores a point of the running run; Home shows it within 2 s,
        # and the per-second throughput of that point (its last seconds as stored).
        page.goto(served + "/")
        current = f'#running tr[data-run="{run_id}"] .current'
        before = page.inner_text(current)
        with Store(path, readonly=True) as db:
            last = live.latest_of(db, max(p.point_id for p in db.points(run_id=run_id)))
        assert last is not None and before == last.text() and " TPS over its last " in before
        time.sleep(1.5)  # (a poll or two first: the page is following the run)
        written = subprocess.run([sys.executable, "-c", WRITE_POINT, str(path), str(run_id), "2"],
                                 env=_env(tmp_path), capture_output=True, text=True, timeout=60)
        assert written.returncode == 0, written.stderr
        stored = time.monotonic()
        page.wait_for_function(
            f"() => document.querySelector('#running tr[data-run=\"{run_id}\"] .points').textContent === '3 so far'",
            timeout=2000)
        shown = time.monotonic() - stored
        with Store(path, readonly=True) as db:
            new = live.latest_of(db, max(p.point_id for p in db.points(run_id=run_id)))
        assert new is not None and new.text() != before and len(new.tps) == 4  # the new point's 4 seconds
        assert page.inner_text(current) == new.text()
        browser.close()
    assert shown <= 2.0
    assert page_errors == [] and [m for m in console if m[0] == "error"] == [], console
    assert all(url.startswith(served + "/") for url in requests), requests  # nothing from elsewhere
    assert (tmp_path / "decide.png").stat().st_size > 20_000


CURRENT = "document.querySelector('#running tr[data-run] .current')"


def _measured_second(page: object) -> int | None:
    """The second of the point in flight Home shows ("measuring: ..., N s of 8: ..."), if any."""
    text = page.evaluate(f"() => {{ const c = {CURRENT}; return c ? c.textContent : ''; }}")  # type: ignore[attr-defined]
    found = re.match(r"measuring: pgbench-select-only, 2 clients on 1 thread, repeat \d, (\d+) s of 8: ", text)
    return int(found[1]) if found else None


def test_a_real_runs_point_in_flight_shows_its_seconds_before_it_is_stored_in_chromium(public_tmp: Path,
                                                                                       tmp_path: Path) -> None:
    """A real `dbarena run` (a throwaway PostgreSQL, pgbench bare: its seconds from the
    server's commit counter) writes the store while Home is open: the run appears, then
    the point it is measuring, second by second, its seconds growing while the store holds
    none of its points; then the next repeat's. The store's file is an SQLite one: the
    seconds come from its sidecar, which is gone once the run ends."""
    from playwright.sync_api import sync_playwright

    path = tmp_path / "flight.db"
    Store(path).close()
    port = free_port()
    server, _ = _start(["--store", str(path), "--port", str(port)], _env(tmp_path))
    run: subprocess.Popen[str] | None = None
    page_errors: list[str] = []
    try:
        _wait_listening("127.0.0.1", port)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            page = browser.new_page()
            page.on("pageerror", lambda e: page_errors.append(str(e)))
            page.goto(f"http://127.0.0.1:{port}/")
            assert "No run is running." in page.inner_text("#running")
            run = subprocess.Popen(
                [sys.executable, "-m", "dbarena", "run", "--workload", "pgbench-select-only", "--threads", "1",
                 "--clients-per-thread", "2", "--duration", "8", "--scale", "1", "--repeat", "2", "--no-probe",
                 "--store", str(path), *LIGHT],
                env=_env(public_tmp, DBARENA_STATE_DIR=str(tmp_path / "state")), text=True,
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            # The run starts (the page reloads to follow it), then its first point's seconds.
            page.wait_for_function(f"() => {{ const c = {CURRENT}; return c && /^measuring: .* repeat [12], [1-4] s of 8: /"
                                   ".test(c.textContent); }", timeout=180_000)
            first = _measured_second(page)
            repeat = int(page.inner_text("#running .current").split("repeat ")[1][0])
            with Store(path, readonly=True) as db:
                (progress,) = db.run_progress().values()
            assert first is not None and progress.status == "running" and progress.stored == repeat - 1, progress
            page.wait_for_function(f"() => {{ const m = {CURRENT}.textContent.match(/, (\\d+) s of 8: /); "
                                   f"return m && +m[1] > {first}; }}", timeout=3000)  # within 2 s, and a poll
            grown = _measured_second(page)
            with Store(path, readonly=True) as db:
                (progress,) = db.run_progress().values()
            # Still in flight: nothing of it stored, yet its seconds shown and growing.
            assert grown is not None and grown > first and progress.stored == repeat - 1 == progress.points
            assert re.search(r": [\d,.]+ TPS over its last \d s \(", page.inner_text("#running .current"))
            if repeat == 1:
                # Stored, then the second repeat measured: shown the same way.
                page.wait_for_function(f"() => /^measuring: .* repeat 2, [1-7] s of 8: /.test({CURRENT}.textContent)",
                                       timeout=60_000)
                assert page.inner_text("#running .points").startswith("1 ")
            # The run ends with the page left open: it leaves "Running now" by itself (no
            # reload: the mark set here stays), its row in the list finished, with its end.
            (run_id,) = page.eval_on_selector_all("#running tr[data-run]", "rows => rows.map(r => r.dataset.run)")
            page.evaluate("() => { window.followed = true; }")
            assert run.wait(timeout=120) == 0, run.stderr.read() if run.stderr else ""
            ended = time.monotonic()
            page.wait_for_function("() => !document.querySelector('#running tr[data-run]')", timeout=3000)
            moved = time.monotonic() - ended
            assert page.inner_text("#running").split() == "Running now No run is running.".split()
            row = f'#runs tr[data-run="{run_id}"]'
            assert page.inner_text(f"{row} .status") == "finished" and page.inner_text(f"{row} .points") == "2"
            with Store(path, readonly=True) as db:
                stored = db.run(int(run_id))
            assert stored is not None and stored.ended_at
            assert page.inner_text(f"{row} .ended") == stored.ended_at.replace("T", " ")[:19]
            assert page.evaluate("() => window.followed === true")  # the same page, not reloaded
            browser.close()
        assert moved <= 2.5
    finally:
        if run is not None and run.poll() is None:
            run.terminate()
            run.wait(timeout=60)
        err = _stop(server)
    assert "Traceback" not in err, err
    assert page_errors == []
    assert not store_live.sidecar(path).exists()  # (transient: gone with the run)


def test_served_beyond_127_0_0_1_a_request_without_the_token_is_refused(store: tuple[Path, int],
                                                                         tmp_path: Path) -> None:
    path, _ = store
    host = "127.0.0.2"
    port = free_port(host)
    server, said = _start(["--store", str(path), "--host", host, "--port", str(port)], _env(tmp_path))
    try:
        _wait_listening(host, port)
        (token,) = re.findall(rf"http://{re.escape(host)}:{port}/\?token=(\S+) ", said[0])

        def get(headers: dict[str, str]) -> tuple[int, str]:
            # From another address of the loopback range, as a second machine would.
            connection = http.client.HTTPConnection(host, port, timeout=30, source_address=(host, 0))
            connection.request("GET", "/", headers=headers)
            answer = connection.getresponse()
            body = answer.read().decode()
            connection.close()
            return answer.status, body

        refused, body = get({})
        assert refused == 401 and "token" in body and "<html" not in body
        assert get({"Authorization": "Bearer not-the-token-at-all-0000"})[0] == 401
        allowed, body = get({"Authorization": f"Bearer {token}"})
        assert allowed == 200 and "Runs, newest first" in body
    finally:
        err = _stop(server)
    assert "Traceback" not in err, err
    # A token given in the environment is not printed.
    port = free_port(host)
    server, said = _start(["--store", str(path), "--host", host, "--port", str(port)],
                          _env(tmp_path, DBARENA_SERVE_TOKEN="given-token-0123456789"))
    _stop(server)
    assert "given-token" not in "".join(said) and said[0] == f"dbarena serve: http://{host}:{port}/ (every request " \
                                                             "needs the token)\n"


def test_served_on_ipv6_loopback_it_answers_requests_to_it(store: tuple[Path, int], tmp_path: Path) -> None:
    """`--host ::1`: served without a token, as 127.0.0.1 is, and answers requests that
    name [::1] (a browser's Host header holds the address in brackets)."""
    path, _ = store
    with socket.socket(socket.AF_INET6) as probe:
        probe.bind(("::1", 0))  # (a machine without IPv6's loopback: an error here, not a skip)
        port = int(probe.getsockname()[1])
    server, said = _start(["--store", str(path), "--host", "::1", "--port", str(port)], _env(tmp_path))
    try:
        assert said[0] == f"dbarena serve: http://[::1]:{port}/\n"
        deadline = time.monotonic() + 30
        while True:
            try:
                connection = http.client.HTTPConnection("::1", port, timeout=30)
                connection.request("GET", "/")  # Host: [::1]:PORT, as a browser sends it
                break
            except ConnectionRefusedError:
                assert time.monotonic() < deadline, "nothing listens on [::1]"
                time.sleep(0.1)
        answer = connection.getresponse()
        body = answer.read().decode()
        connection.close()
        assert answer.status == 200 and "Runs, newest first" in body, (answer.status, body)
        connection = http.client.HTTPConnection("::1", port, timeout=30)
        connection.request("GET", "/", headers={"Host": "evil.example"})
        assert connection.getresponse().status == 400  # (another name for it is still refused)
        connection.close()
    finally:
        err = _stop(server)
    assert "Traceback" not in err, err


EVIL = "<script>alert(1)</script>"
BIDI = "box\u202eevil\u2066x"
PROBES = (("p1", 1000.0), ("p2", 1040.0), ("p3", 980.0), ("slow", 520.0))


@pytest.fixture(scope="module")
def rich(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`dbarena serve` over a store of labels a and b, a history with a step (label
    nightly: synchronous_commit off, then on), four probed hosts (one slow), and hostile
    labels; its address."""
    from unit.test_history_and_gate import add_run

    path = storebuild.build(tmp_path_factory.mktemp("rich") / "rich.db")
    with Store(path) as db:
        for day in range(10):
            level = (800.0 if day >= 5 else 1000.0) * (1 + 0.01 * ((day * 7) % 3 - 1))
            add_run(db, "nightly", day, level, sync="on" if day >= 5 else "off")
        for day, (host, cpu) in enumerate(PROBES):
            probe = {"cpu_events_per_s": cpu, "cpu_best_events_per_s": cpu, "memory_mib_per_s": 9000.0,
                     "fsync_p99_ms": 2.0}
            name = EVIL if host == "slow" else host
            run_id = db.begin_run(RunInfo(label=name, host=host if host != "p3" else BIDI, engine="postgres",
                                          target="postgresql://x@h/d", started_at=storebuild.T0 + timedelta(days=day),
                                          server_version="17.2", tool_versions={}, options={"probe": probe},
                                          host_facts=storebuild.HOST))
            db.add_point(run_id, storebuild._point(700.0 + day, 1, 0, day=day))
            db.finish_run(run_id, "finished")
    port = free_port()
    server, _ = _start(["--store", str(path), "--port", str(port)], _env(tmp_path_factory.mktemp("tmp")))
    _wait_listening("127.0.0.1", port)
    yield f"http://127.0.0.1:{port}"
    err = _stop(server)
    assert "Traceback" not in err, err


def _ticks(page: object, n: int = 0) -> list[str]:
    return page.eval_on_selector(  # type: ignore[attr-defined, no-any-return]
        f"div.chart >> nth={n}", "c => [...c.querySelectorAll('g.axes text')].map(t => t.textContent)")


def test_workload_point_zoom_history_diff_and_hosts_in_chromium(rich: str) -> None:
    """Every new page as a user goes through them: Decide's chart and its workload link,
    a level's point clicked and back, a label hidden in the charts, a point's series
    zoomed together and back, a change point clicked to the diff of its runs, the hosts
    with the slow one flagged, a copied address reloaded; hostile labels as text."""
    from playwright.sync_api import sync_playwright

    console, requests, errors, dialogs = [], [], [], []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.on("console", lambda m: console.append((m.type, m.text)))
        page.on("request", lambda r: requests.append(r.url))
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))

        # Decide a against b: the decision first, the section's sweep drawn, then its workload.
        page.goto(rich + "/decide?baseline=a&label=a&label=b")
        assert page.eval_on_selector("#decision", "e => e.getBoundingClientRect().top") < 400
        assert page.is_visible("#postgres-pgbench-tpcb div.chart svg.drawn polyline")
        page.click("#postgres-pgbench-tpcb >> text=the sweep level by level")
        page.wait_for_url(re.compile(r".*/workload\?engine=postgres&workload=pgbench-tpcb&baseline=a&label=a&label=b$"))
        workload = page.url
        assert page.locator("div.chart svg.drawn").count() == 2
        lines = page.locator("div.chart >> nth=0 >> polyline.line")
        assert lines.count() >= 2
        # A label hidden in the charts by the report's own toggles (the rules from /toggles.css).
        first_cls = page.eval_on_selector("div.chart >> nth=0 >> polyline.line",
                                          "e => [...e.classList].find(c => c.startsWith('lbl-'))")
        page.uncheck(f"#show-{first_cls}")
        assert page.eval_on_selector(f"div.chart polyline.{first_cls}", "e => getComputedStyle(e).display") == "none"
        page.check(f"#show-{first_cls}")
        # A level's point opens the first point measured there; back returns to the sweep.
        href = page.eval_on_selector("div.chart >> nth=0 >> a circle", "c => c.parentNode.getAttribute('href')")
        page.click("div.chart >> nth=0 >> a circle >> nth=0", force=True)
        page.wait_for_url(rich + href)
        assert page.title().startswith("Point ")
        page.go_back()
        page.wait_for_url(workload)
        assert page.locator("div.chart svg.drawn").count() == 2

        # The point's charts zoom together: drag across the first, every one follows.
        page.goto(rich + href)
        charts = page.locator("div.chart svg.drawn")
        assert charts.count() == 5
        before = [_ticks(page, n) for n in range(5)]
        box = charts.nth(0).bounding_box()
        assert box is not None
        y = box["y"] + box["height"] / 2
        page.mouse.move(box["x"] + box["width"] * 0.35, y)
        page.mouse.down()
        page.mouse.move(box["x"] + box["width"] * 0.55, y, steps=5)
        page.mouse.up()
        zoomed = [_ticks(page, n) for n in range(5)]
        assert all(z != b for z, b in zip(zoomed, before)), (before, zoomed)
        assert page.is_visible("div.chart >> nth=0 >> button.reset")
        page.click("div.chart >> nth=0 >> button.reset")
        assert [_ticks(page, n) for n in range(5)] == before

        # History: the step of nightly, its change point clicked: the diff of the runs around it.
        page.click("nav.top >> text=History")
        page.wait_for_url(rich + "/history")
        section = page.locator("section.series", has_text="nightly")
        # Its runs named on the x axis by their ids, as the tips, the links and `dbarena
        # history` name them (the store's first runs are a's and b's: not 1, 2, 3 ...).
        ids = section.locator("div.chart a circle").evaluate_all(
            "cs => cs.map(c => c.parentNode.getAttribute('href').replace('/run/', ''))")
        ticks = section.locator("div.chart g.axes text.xtick").evaluate_all("ts => ts.map(t => t.textContent)")
        assert ticks == ids and len(ids) == 10 and ids != [str(n) for n in range(1, 11)], (ticks, ids)
        assert "run id, oldest first" in section.locator("div.chart g.axes").text_content()
        section.locator("a.mark-link line.hit").click(force=True)
        page.wait_for_url(re.compile(r".*/diff\?before=\d+&after=\d+$"))
        assert "setting synchronous_commit" in page.inner_text("table.diff >> nth=0")
        page.go_back()
        page.wait_for_url(rich + "/history")

        # Hosts: the slow one flagged among its kind; a hostile label and host as text.
        page.click("nav.top >> text=Hosts")
        page.wait_for_url(rich + "/hosts")
        flagged = page.locator("table.hosts tr.flagged td >> nth=0").all_inner_texts()
        assert flagged == ["slow"]
        assert EVIL in page.inner_text("table.hosts") and BIDI in page.inner_text("table.hosts")

        # A hostile label's workload, copied and opened anew: its name as text in the legend.
        other = browser.new_page()
        other.on("pageerror", lambda e: errors.append(str(e)))
        other.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        other.goto(rich + "/workload?" + f"engine=postgres&workload=pgbench-tpcb&baseline={EVIL}&label={EVIL}&label=a"
                   .replace("<", "%3C").replace(">", "%3E").replace("(", "%28").replace(")", "%29"))
        assert EVIL in other.locator("div.chart >> nth=0 >> ul.legend").inner_text()
        other.goto(workload)
        assert other.locator("div.chart svg.drawn").count() == 2
        other.close()
        browser.close()
    assert errors == [] and dialogs == [] and [m for m in console if m[0] == "error"] == [], (errors, console)
    assert all(url.startswith(rich + "/") for url in requests), requests


def test_decide_per_core_and_per_price_views_keep_the_choice_and_go_back_in_chromium(rich: str,
                                                                                  tmp_path: Path) -> None:
    """Decide's views: from the throughput to per core and per price by their links, each
    keeping the baseline and labels; another baseline keeps the view; back returns
    through each view as it was; a copied address reloads it; the hostile label, which
    has no price, said so as text."""
    from urllib.parse import parse_qsl, urlsplit

    from playwright.sync_api import sync_playwright

    def query(url: str) -> list[tuple[str, str]]:
        return parse_qsl(urlsplit(url).query)

    choice = [("baseline", "a"), ("label", "a"), ("label", "b"), ("label", EVIL)]
    console, requests, errors, dialogs = [], [], [], []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.on("console", lambda m: console.append((m.type, m.text)))
        page.on("request", lambda r: requests.append(r.url))
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        page.goto(rich + "/decide?baseline=a&label=a&label=b&label=%3Cscript%3Ealert%281%29%3C%2Fscript%3E")
        assert page.locator("#per-core, #per-price").count() == 0
        throughput = page.url

        page.click("nav.views >> text=per core")
        page.wait_for_url(re.compile(r".*per=core$"))
        assert query(page.url) == [*choice, ("per", "core")]
        per_core = page.inner_text("#per-core")
        assert "TPS per hardware thread" in per_core and "postgres pgbench-tpcb" in per_core

        page.click("nav.views >> text=per price")
        page.wait_for_url(re.compile(r".*per=price$"))
        assert query(page.url) == [*choice, ("per", "price")]
        per_price = page.inner_text("#per-price")
        assert f"No price stored for {EVIL}" in per_price  # as text, not 0
        assert "a is the cheaper for the same work" in per_price and "per hour per 100 TPS" in per_price
        page.screenshot(path=str(tmp_path / "decide-per-price.png"), full_page=True)

        # Another baseline: the view stays (the form keeps it).
        with page.expect_navigation():
            page.select_option("form.choose select[name=baseline]", "b")
        assert dict(query(page.url))["baseline"] == "b" and ("per", "price") in query(page.url)
        rebased = page.url
        assert page.locator("#per-price").count() == 1

        # Back, through each view as it was.
        page.go_back()
        page.wait_for_url(re.compile(r".*per=price$"))
        assert query(page.url) == [*choice, ("per", "price")] and page.inner_text("#per-price") == per_price
        page.go_back()
        page.wait_for_url(re.compile(r".*per=core$"))
        assert page.inner_text("#per-core") == per_core
        page.go_back()
        page.wait_for_url(throughput)
        assert page.locator("#per-core, #per-price").count() == 0

        # A copied address: the same view.
        other = browser.new_page()
        other.on("pageerror", lambda e: errors.append(str(e)))
        other.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        other.goto(rebased)
        assert other.locator("#per-price").count() == 1 and ("per", "price") in query(other.url)
        other.close()
        browser.close()
    assert errors == [] and dialogs == [] and [m for m in console if m[0] == "error"] == [], (errors, console)
    assert all(url.startswith(rich + "/") for url in requests), requests
    assert (tmp_path / "decide-per-price.png").stat().st_size > 20_000
