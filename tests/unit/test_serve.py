"""`dbarena serve`'s routes through Starlette's TestClient over real stores (the demo
store make demo wrote, and stores built with the library, tests/storebuild.py): Home's
runs, labels, studies and hosts; a running run's points done and left from its stored
study, and the live JSON in one query; Decide as `dbarena report` renders the decision;
a point's series, command, configuration and raw output, passwords masked; the token off
loopback; hostile labels as text; every store problem one line, never a traceback."""

from __future__ import annotations

import html
import json
import re
import shutil
import sqlite3
import sys
import zlib
from datetime import timedelta
from pathlib import Path

import pytest
from starlette.testclient import TestClient  # (the extra dbarena[serve]: make test installs it)

import storebuild
from conftest import invoke
from dbarena.model import PointSpec, RunInfo
from dbarena.report import assemble
from dbarena.report.decision import html as decision_html
from dbarena.serve import app as serve_app, live
from dbarena.store import live as store_live
from dbarena.store.database import Store

DEMO = Path(__file__).parent.parent / "fixtures" / "stores" / "demo-seed-a-quick.db"
EVIL = "<script>alert(1)</script>"
BIDI = "box\u202eevil\u2066x"
LONG = "L" * 10_000
TOKEN = "t0ken-for-the-tests-only-0123456789"


def client(store: Path | str, **options: object) -> TestClient:
    # A loopback host name: without a token the app answers only requests naming one.
    return TestClient(serve_app.create_app(store, **options), base_url="http://127.0.0.1:8642")


@pytest.fixture
def demo(tmp_path: Path) -> Path:
    copy = tmp_path / "demo.db"
    shutil.copy(DEMO, copy)
    return copy


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Labels a and b (three repeats at two levels: a decision with verdicts), then one
    run each under a hostile label."""
    path = storebuild.build(tmp_path_factory.mktemp("serve") / "built.db")
    with Store(path) as db:
        for day, name in enumerate((EVIL, BIDI, LONG), start=5):
            run_id = db.begin_run(RunInfo(label=name, host="box", engine="postgres", target="postgresql://x@h/d",
                                          started_at=storebuild.T0 + timedelta(days=day), server_version="17.2",
                                          tool_versions={}, options={}, host_facts=storebuild.HOST))
            db.add_point(run_id, storebuild._point(800.0, 1, 0, day=day))
            db.finish_run(run_id, "finished")
    return path


def _text(page: str) -> str:
    """What a reader sees of a page, roughly: its tags gone, entities as written."""
    import html

    return html.unescape(re.sub(r"<[^>]+>", " ", page))


def test_home_lists_studies_labels_hosts_and_runs_newest_first(demo: Path) -> None:
    with client(demo) as c:
        page = c.get("/")
    assert page.status_code == 200
    body = page.text
    assert "seed-a" in body and "AMD EPYC" in body and "23.5" in body  # study, host's CPU and memory (GiB)
    runs = re.findall(r'<tr data-run="(\d+)">', body.split('id="runs"')[1])
    assert runs == ["2", "1"]
    assert '<td class="points">12</td>' in body and '<td class="points">8</td>' in body
    assert 'href="/decide?baseline=vm"' in body and 'href="/run/1"' in body
    assert "No run is running." in body


def _running(demo: Path, keep: int) -> None:
    """Run 1 of the demo store (its study plans 12 points on this 2-thread host) made
    a run still running with only its first `keep` points stored."""
    Store(demo).close()  # the copy at today's schema, as a writer leaves it (the checked-in store is older)
    with sqlite3.connect(demo) as db:
        db.execute("PRAGMA foreign_keys = ON")
        db.execute("UPDATE runs SET status = 'running', ended_at = NULL WHERE id = 1")
        gone = [i for (i,) in db.execute("SELECT id FROM points WHERE run_id = 1 ORDER BY id")][keep:]
        for table in ("samples", "system_samples", "raw_outputs", "point_derived", "latency_histograms",
                      "server_series"):
            db.executemany(f"DELETE FROM {table} WHERE point_id = ?", [(i,) for i in gone])
        db.executemany("DELETE FROM points WHERE id = ?", [(i,) for i in gone])


def test_a_running_run_shows_its_points_done_and_left_from_its_stored_study(demo: Path) -> None:
    _running(demo, keep=10)
    with client(demo) as c:
        home = c.get("/").text
        polled = c.get("/live.json?runs=1").json()
    running = home.split('id="running"')[1].split("</section>")[0]
    assert 'data-live="1"' in home and '<tr data-run="1">' in running
    # seed-a --quick on a host of 2 hardware threads: 6 postgres workloads at levels 1 and 2.
    assert re.search(r'<td class="points">10 of 12 \(2 left, about \d+ s\)</td>', running), running
    assert polled["running"] == [1]
    assert polled["runs"]["1"] | {"left_s": 0} == {"status": "running", "points": 10, "failed": 0, "planned": 12,
                                                   "left": 2, "left_s": 0, "last_point_id": 10,
                                                   "text": polled["runs"]["1"]["text"],
                                                   "latest_tps": polled["runs"]["1"]["latest_tps"],
                                                   "latest_text": polled["runs"]["1"]["latest_text"],
                                                   "measuring": None,  # (nothing published: no point in flight)
                                                   "current_text": polled["runs"]["1"]["latest_text"],
                                                   "ended": None}  # (running: no end yet)
    assert polled["runs"]["1"]["left_s"] >= 10  # two points of 5 s, and their preparation
    # The point stored last, second by second: its stored series' last seconds, as drawn and polled.
    with Store(demo, readonly=True) as db:
        (last,) = db.points(point_ids=(10,))
        tps = [s.tps for s in db.samples(10)][-live.TAIL_S:]
    assert polled["runs"]["1"]["latest_tps"] == pytest.approx(tps) and len(tps) == live.TAIL_S
    said = polled["runs"]["1"]["latest_text"]
    assert said.startswith(f"{last.workload}, {last.threads} thread") and f"{sum(tps) / len(tps):,.1f} TPS" in said
    assert f'<td class="current">{html.escape(said)}</td>' in running


def test_a_poll_is_one_small_query(demo: Path) -> None:
    _running(demo, keep=4)
    plans, latests = live.Plans(), live.Latests()
    publisher = _measuring(demo, run_id=1, seconds=3)
    try:
        with Store(demo, readonly=True) as db:
            live.snapshot(db, plans, [1], latests)  # (the plan of a run first seen is made once, its last point read once)
            said: list[str] = []
            db.db.set_trace_callback(said.append)
            polled = live.snapshot(db, plans, [1], latests)
    finally:
        publisher.close()
    # One query of the store; the point in flight from the sidecar (a file of its own).
    assert len([s for s in said if s.lstrip().upper().startswith("SELECT")]) == 1, said
    assert polled["runs"]["1"]["points"] == 4 and polled["runs"]["1"]["left"] == 8
    assert polled["runs"]["1"]["latest_tps"]  # (the point stored last: read at the first poll, kept)
    assert polled["runs"]["1"]["measuring"]["tps"] == [100.0, 101.0, 102.0]


def _measuring(store: Path, run_id: int, seconds: int, repeat: int = 1) -> store_live.Publisher:
    """A publisher, as `dbarena run` has one, that has published `seconds` seconds of the
    point it measures in run `run_id` (100, 101 ... TPS), written when this returns."""
    publisher = store_live.Publisher(store)
    with Store(store, readonly=True) as db:
        stored = db.run_progress([run_id])[run_id].stored
    spec = PointSpec(engine="postgres", workload="pgbench-select-only", threads=2, clients=4, duration_s=10,
                     repeat=repeat)
    token = publisher.begin(run_id, spec, "measured", stored, 10)
    for second in range(seconds):
        publisher.second(token, second + 1.0, 100.0 + second)
    assert publisher.flush(60)
    assert publisher.broken is None
    return publisher


def test_home_shows_the_point_being_measured_then_the_one_stored_once_it_is(demo: Path) -> None:
    """A run's point in flight, published to the store's sidecar second by second, is what
    Home and the poll show of it; once the point is stored (its seconds removed with it),
    the point stored last again; seconds left behind by a point stored since never show."""
    _running(demo, keep=4)
    publisher = _measuring(demo, run_id=1, seconds=7)
    try:
        assert store_live.sidecar(demo).is_file()
        with client(demo) as c:
            home = c.get("/").text
            polled = c.get("/live.json?runs=1").json()["runs"]["1"]
        said = ("measuring: pgbench-select-only, 4 clients on 2 threads, repeat 2, 7 s of 10: "
                "104.0 TPS over its last 5 s (102, 103, 104, 105, 106)")
        assert polled["current_text"] == said and polled["measuring"]["second"] == 7.0
        assert polled["latest_text"] != said and polled["measuring"]["tps"] == [102.0, 103.0, 104.0, 105.0, 106.0]
        assert f'<td class="current">{html.escape(said)}</td>' in home
        # Another point stored (by another writer): the seconds published before it are a
        # point stored since, whatever the sidecar still holds.
        with Store(demo) as db:
            db.add_point(1, storebuild._point(500.0, 1, 9, day=9))
        with client(demo) as c:
            polled = c.get("/live.json?runs=1").json()["runs"]["1"]
        assert polled["measuring"] is None and polled["current_text"] == polled["latest_text"]
        assert polled["latest_text"].startswith("pgbench-tpcb, 1 thread")
    finally:
        publisher.close()
    assert not store_live.sidecar(demo).exists()  # (no run holds rows there any more)


def test_decide_shows_the_decision_exactly_as_the_report_renders_it(built: Path) -> None:
    with client(built) as c:
        page = c.get("/decide", params=[("baseline", "a"), ("label", "a"), ("label", "b")])
    assert page.status_code == 200
    with Store(built, readonly=True) as db:
        report = assemble.build(db, assemble.Selection(labels=("a", "b"), baseline="a"))
    expected = decision_html(report.decisions, report.overall)
    assert expected and expected in page.text
    assert "b against a" in _text(page.text) or "slower" in expected  # b is the slower label
    # The choice is in the form, as the address gave it.
    assert '<option value="a" selected>' in page.text
    assert '<input type="checkbox" name="label" value="b" checked>' in page.text
    assert "dbarena report --baseline a --label a --label b -o decide.html" in page.text


def test_decide_answers_first_and_folds_how_to_read_it(built: Path) -> None:
    """The page's first screen: the choice, then the report's decision (or the one line
    saying one label has nothing to decide), "How to read this" folded below it."""
    with client(built) as c:
        two = c.get("/decide", params=[("baseline", "a"), ("label", "a"), ("label", "b")]).text
        one = c.get("/decide", params=[("baseline", "a"), ("label", "a")]).text
    for page in (two, one):
        form, decision = page.index('<form class="choose"'), page.index('<section id="decision">')
        assert form < decision < page.index('<details id="reading">') < page.index("dbarena report --baseline a")
    assert "One label: nothing to decide." in one
    assert one.index("One label: nothing to decide.") < one.index("How to read this")


def test_decide_without_a_choice_takes_every_label_against_the_first(built: Path) -> None:
    with client(built) as c:
        page = c.get("/decide")
    assert page.status_code == 200 and '<option value="a" selected>' in page.text
    assert '<section id="decision">' in page.text


def test_decide_with_a_label_the_store_does_not_hold_is_one_line_and_the_form(built: Path) -> None:
    with client(built) as c:
        page = c.get("/decide?baseline=nope")
    assert page.status_code == 400
    (line,) = re.findall(r'<p class="error">(.*?)</p>', page.text)
    assert line.startswith("no results labelled &#x27;nope&#x27;") and "Traceback" not in page.text
    assert '<form class="choose"' in page.text


def test_a_point_shows_its_series_command_configuration_and_raw_output_masked(demo: Path) -> None:
    with sqlite3.connect(demo) as db:
        stdout = zlib.decompress(db.execute("SELECT stdout FROM raw_outputs WHERE point_id = 3").fetchone()[0])
        db.execute("UPDATE raw_outputs SET stdout = ? WHERE point_id = 3",
                   (zlib.compress(stdout + b"connecting to postgresql://bench:s3cret-pw@db:5432/x\n"),))
        db.execute("""UPDATE points SET command = '["pgbench", "postgresql://bench:s3cret-pw@db/x"]' WHERE id = 3""")
    with client(demo) as c:
        page = c.get("/point/3")
        raw = c.get("/point/3/raw.txt")
    assert page.status_code == 200 and raw.status_code == 200
    body = page.text
    assert "s3cret-pw" not in body and "s3cret-pw" not in raw.text
    assert "postgresql://bench:***@db" in body and "postgresql://bench:***@db" in raw.text
    assert "pgbench-select-only" in body and "number of transactions actually processed" in body
    (chart,) = [json.loads(html.unescape(text)) for text in re.findall(r'data-chart="([^"]*)"', body)
                if "Throughput per second" in html.unescape(text)]
    assert len(chart["series"][0]["points"]) >= 4  # one point a second
    with Store(demo, readonly=True) as db:
        (stored,) = db.points(point_ids=(3,))
    assert stored.config_key and f"<code>{stored.config_key}</code>" in body
    assert "Provenance of run 1" in body
    assert raw.headers["content-disposition"] == 'attachment; filename="dbarena-point-3.txt"'
    assert raw.text.startswith("# dbarena point 3: postgres pgbench-select-only threads=1")


def test_a_run_lists_its_points_linked(demo: Path) -> None:
    with client(demo) as c:
        page = c.get("/run/2")
    assert page.status_code == 200
    assert len(re.findall(r'<a href="/point/(\d+)">', page.text)) == 8
    assert "mysqlslap" in page.text and "Provenance of run 2" in page.text


@pytest.mark.parametrize("path, status", [("/run/99", 404), ("/point/99", 404), ("/point/99/raw.txt", 404),
                                          ("/nowhere", 404)])
def test_what_is_not_there_is_a_404_of_one_line(demo: Path, path: str, status: int) -> None:
    with client(demo) as c:
        page = c.get(path)
    assert page.status_code == status and "Traceback" not in page.text
    assert "no run 99" in page.text or "no point 99" in page.text or "Not Found" in page.text


def test_nothing_writes_no_method_but_get(demo: Path) -> None:
    before = demo.read_bytes()
    with client(demo) as c:
        for path in ("/", "/decide", "/point/3", "/live.json"):
            assert c.post(path).status_code == 405
            assert c.delete(path).status_code == 405
        c.get("/")
    assert demo.read_bytes() == before


def test_every_answer_carries_a_strict_content_security_policy(demo: Path) -> None:
    with client(demo) as c:
        answers = [c.get(path) for path in ("/", "/decide", "/point/3", "/live.json", "/static/serve.js",
                                             "/static/report.css", "/nowhere")]
    for answer in answers:
        policy = answer.headers["content-security-policy"]
        assert "default-src 'none'" in policy and "script-src 'self'" in policy and "unsafe" not in policy
        assert answer.headers["x-content-type-options"] == "nosniff"
    home = answers[0].text
    assert "<script>" not in home and "style=" not in home and "http://" not in home.split("</nav>")[1]


def test_hostile_labels_render_as_text(built: Path) -> None:
    with client(built) as c:
        home = c.get("/")
        decide = c.get("/decide", params=[("baseline", EVIL), ("label", EVIL), ("label", BIDI), ("label", LONG)])
        run = c.get("/run/4")  # (runs 1-3 are storebuild's; the hostile labels' are 4, 5, 6)
    for page in (home, decide, run):
        assert page.status_code == 200, page.text[:500]
        assert EVIL not in page.text and "&lt;script&gt;alert(1)&lt;/script&gt;" in page.text
    assert EVIL in _text(home.text) and BIDI in _text(home.text) and LONG in _text(home.text)
    # A label that turns text around stands in an element of its own.
    assert f"<bdi>{BIDI}</bdi>" in home.text
    assert f'<option value="{BIDI}"' in decide.text


@pytest.fixture
def guarded(demo: Path) -> TestClient:
    return TestClient(serve_app.create_app(demo, token=TOKEN, loopback_only=False), base_url="http://0.0.0.0:8642")


def test_with_a_token_a_request_without_it_is_refused(guarded: TestClient) -> None:
    with guarded as c:
        for path in ("/", "/decide", "/point/3", "/point/3/raw.txt", "/live.json", "/static/serve.js"):
            refused = c.get(path)
            assert refused.status_code == 401 and "Bearer" in refused.headers["www-authenticate"]
            assert "vm" not in refused.text
        assert c.get("/", params={"token": TOKEN[:-1] + "x"}).status_code == 401
        assert c.get("/", headers={"Authorization": "Bearer wrong-token-wrong-token"}).status_code == 401
        c.cookies.set(f"{serve_app.COOKIE}_8642", "wrong")
        assert c.get("/").status_code == 401


def test_with_a_token_the_first_visit_keeps_it_in_a_cookie_and_leaves_the_address(guarded: TestClient) -> None:
    with guarded as c:
        first = c.get("/decide", params=[("token", TOKEN), ("baseline", "vm")], follow_redirects=False)
        assert first.status_code == 303 and first.headers["location"] == "/decide?baseline=vm"
        cookie = first.headers["set-cookie"]
        assert "httponly" in cookie.lower() and "samesite=strict" in cookie.lower()
        assert c.get("/decide?baseline=vm").status_code == 200  # the cookie from now on
    with guarded as fresh:
        assert fresh.get("/", headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 200


@pytest.mark.parametrize("path", ["//evil.example/", "///evil.example/x", "/\\evil.example/", "/%2F%2Fevil.example/",
                                  "/%5C%5Cevil.example/", "//evil.example/a%0d%0aSet-Cookie:x=1"])
def test_the_first_visit_is_sent_on_only_to_a_path_of_this_server(guarded: TestClient, path: str) -> None:
    """A link `//evil.example/?token=T` must not send the browser (and its new cookie's
    visit) to another host: the Location is a path of this server, one slash first."""
    with guarded as c:
        # (The whole address: a path given alone that starts with // is another host to the client too.)
        first = c.get(f"http://0.0.0.0:8642{path}?token={TOKEN}&x=1", follow_redirects=False)
    where = first.headers["location"]
    assert first.status_code == 303 and where.startswith("/") and not where.startswith(("//", "/\\")), where
    assert "\r" not in where and "\n" not in where and "set-cookie" not in {k.lower() for k in first.headers
                                                                            if k.lower() != "set-cookie"}
    assert where.endswith("?x=1")


def _cookie(answer: object) -> tuple[str, str, str]:
    """The name, value and attributes of the one cookie an answer sets."""
    header = answer.headers["set-cookie"]  # type: ignore[attr-defined]
    pair, _, attributes = header.partition(";")
    name, _, value = pair.partition("=")
    return name.strip(), value.strip(), attributes.lower()


def test_two_servers_on_one_host_keep_their_own_cookies(demo: Path) -> None:
    """A browser sends a host's cookies to every port of it: the second server's visit
    must not replace the first's token, nor the first's be taken for the second's."""
    other = "another-token-for-the-tests-0123456789"
    jar: dict[str, str] = {}
    clients = [TestClient(serve_app.create_app(demo, token=token, loopback_only=False),
                          base_url=f"http://10.0.0.7:{port}") for token, port in ((TOKEN, 8642), (other, 8643))]
    for c, token in zip(clients, (TOKEN, other)):
        with c:
            name, value, _ = _cookie(c.get("/", params={"token": token}, follow_redirects=False))
            jar[name] = value  # (one jar: what the browser holds for the host 10.0.0.7)
    assert len(jar) == 2
    for c in clients:
        c.cookies.clear()
        for name, value in jar.items():
            c.cookies.set(name, value)
        with c:
            assert c.get("/").status_code == 200


def test_the_cookie_is_secure_when_the_browser_came_over_tls(demo: Path) -> None:
    app = serve_app.create_app(demo, token=TOKEN, loopback_only=False)
    with TestClient(app, base_url="https://dbarena.example") as c:
        assert "secure" in _cookie(c.get("/", params={"token": TOKEN}, follow_redirects=False))[2].split("; ")
    with TestClient(app, base_url="http://10.0.0.7:8642") as c:
        plain = c.get("/", params={"token": TOKEN}, follow_redirects=False)
        assert "secure" not in _cookie(plain)[2]
        for header in ({"X-Forwarded-Proto": "https"}, {"Forwarded": "for=10.0.0.1;proto=https"}):
            # A proxy that terminates TLS says so.
            proxied = c.get("/", params={"token": TOKEN}, headers=header, follow_redirects=False)
            assert "secure" in _cookie(proxied)[2].split("; "), header


def test_without_a_token_only_requests_naming_a_loopback_host_are_answered(demo: Path) -> None:
    app = serve_app.create_app(demo)
    with TestClient(app, base_url="http://evil.example") as c:
        assert c.get("/").status_code == 400
    with TestClient(app, base_url="http://localhost:8642") as c:
        assert c.get("/").status_code == 200
    # IPv6's loopback, named in its brackets (`--host ::1`); and hosts that only look like one.
    with TestClient(app, base_url="http://[::1]:8642") as c:
        assert c.get("/").status_code == 200
        for host in ("[::1].evil.example", "[::1]evil.example:80", "[::2]:8642", "[::1", "evil.example:[::1]"):
            refused = c.get("/", headers={"Host": host})
            assert refused.status_code == 400 and len(refused.text.splitlines()) == 1, host


def _problem(page_text: str) -> str:
    (line,) = re.findall(r'<p class="error">(.*?)</p>', page_text)
    return line


def test_a_missing_store_is_one_line_and_is_read_once_it_appears(tmp_path: Path, demo: Path) -> None:
    where = tmp_path / "later.db"
    with client(where) as c:
        page = c.get("/")
        assert page.status_code == 503 and "Traceback" not in page.text
        assert _problem(page.text) == f"no results store at {where} (run `dbarena run` first, or pass --store)"
        assert c.get("/live.json").json() == {"error": _problem(page.text)}
        shutil.copy(demo, where)
        assert c.get("/").status_code == 200


def test_a_store_file_renamed_over_the_path_is_read_anew(tmp_path: Path, demo: Path) -> None:
    """A new store renamed over the path (as an import, or a copy restored, replaces it)
    is what the pages show next, not the file the server had open: Home, and a page kept
    by its data version, which the new file shares (only a host differs)."""
    Store(demo).close()  # (at today's schema: read from the file, not a copy in memory)
    other = tmp_path / "other.db"
    shutil.copy(demo, other)
    with sqlite3.connect(other) as db:
        db.execute("UPDATE runs SET host = 'replaced-host'")
    with client(demo, workers=1) as c:
        assert "replaced-host" not in c.get("/").text and "replaced-host" not in c.get("/hosts").text
        (tmp_path / "other.db").replace(demo)
        assert "replaced-host" in c.get("/").text
        assert "replaced-host" in c.get("/hosts").text


def test_a_damaged_store_is_one_line(tmp_path: Path) -> None:
    where = tmp_path / "damaged.db"
    where.write_bytes(b"this is not an SQLite file at all" * 100)
    with client(where) as c:
        page = c.get("/")
    assert page.status_code == 503 and "not an SQLite database" in _problem(page.text)


def test_a_store_of_a_newer_dbarena_is_one_line(demo: Path) -> None:
    with sqlite3.connect(demo) as db:
        db.execute("PRAGMA user_version = 999")
    with client(demo) as c:
        page = c.get("/decide")
    assert page.status_code == 503 and "999" in _problem(page.text)


def test_a_store_locked_by_a_writer_is_waited_for_not_a_traceback(demo: Path) -> None:
    """A run committing holds SQLite's lock for a moment: the page waits for it."""
    import threading

    writer = sqlite3.connect(demo, timeout=5, check_same_thread=False)
    writer.execute("BEGIN EXCLUSIVE")
    threading.Timer(0.5, writer.rollback).start()
    with client(demo) as c:
        page = c.get("/")
    writer.close()
    assert page.status_code == 200


def test_without_the_extra_serve_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str], demo: Path) -> None:
    monkeypatch.setitem(sys.modules, "uvicorn", None)  # (import uvicorn now fails as if not installed)
    code, out, err = invoke(["serve", "--store", str(demo)], capsys)
    assert code == 2 and out == ""
    assert err == "dbarena: error: dbarena serve needs its extra: pip install 'dbarena[serve]'\n"


def test_a_short_token_is_refused(capsys: pytest.CaptureFixture[str], demo: Path,
                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DBARENA_SERVE_TOKEN", "short")
    code, _, err = invoke(["serve", "--store", str(demo), "--host", "0.0.0.0"], capsys)
    assert code == 2 and "--token: at least 16 characters" in err and "short" not in err.replace("--token", "")
