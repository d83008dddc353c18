"""`dbarena serve` over a team's store on a real PostgreSQL (a throwaway server): Home and
Decide read it, the decision as the report gives it from the same store, and a point
another connection stores while the pages are open shows in the live JSON at once (the
server's connection, kept between requests, sees every commit)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import psycopg
import pytest

import storebuild
from conftest import cli_env
# `merge` only reads and writes stores: run in this process (tests/inprocess.py), not as
# `python -m dbarena`, half a second of CPU to start.
from inprocess import dbarena as dbarena_here
from dbarena.engines import postgres
from dbarena.model import RunInfo
from dbarena.report import assemble
from dbarena.report.decision import html as decision_html
from dbarena.store.database import Store

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def team_store(tmp_path_factory: pytest.TempPathFactory):
    """A PostgreSQL store holding storebuild's labels a and b (merged from SQLite, as a
    team gathers its runs): (URL, password)."""
    with postgres.throwaway(settings={"max_connections": "40"}) as target:
        password = target.passfile.read_text().strip().rsplit(":", 1)[1]
        with psycopg.connect(target.url, password=password, autocommit=True) as admin:
            admin.execute("CREATE DATABASE team")
        url = target.url.rsplit("/", 1)[0] + "/team"
        built = storebuild.build(tmp_path_factory.mktemp("serve-pg") / "built.db")
        merged = dbarena_here("merge", str(built), "--store", url, env=cli_env(Path("/tmp"), PGPASSWORD=password))
        assert merged.returncode == 0, merged.stderr
        yield url, password


def test_home_decide_and_a_live_point_over_a_postgresql_store(team_store, monkeypatch: pytest.MonkeyPatch) -> None:
    from starlette.testclient import TestClient

    from dbarena.serve import app as serve_app

    url, password = team_store
    monkeypatch.setenv("PGPASSWORD", password)
    with TestClient(serve_app.create_app(url), base_url="http://127.0.0.1:8642") as c:
        home = c.get("/")
        decide = c.get("/decide", params=[("baseline", "a"), ("label", "a"), ("label", "b")])
        assert home.status_code == 200 and "Runs, newest first" in home.text
        assert decide.status_code == 200
        with Store(url, readonly=True) as db:
            report = assemble.build(db, assemble.Selection(labels=("a", "b"), baseline="a"))
        expected = decision_html(report.decisions, report.overall)
        assert expected and expected in decide.text

        with Store(url) as writer:
            run_id = writer.begin_run(RunInfo(label="live", host="box", engine="postgres", target="postgresql://x@h/d",
                                              started_at=storebuild.T0 + timedelta(days=9), server_version="17.2",
                                              tool_versions={}, options={}, host_facts=storebuild.HOST))
            assert c.get("/live.json").json()["running"] == [run_id]
            writer.add_point(run_id, storebuild._point(500.0, 1, 0, day=9))
            polled = c.get(f"/live.json?runs={run_id}").json()
            assert polled["runs"][str(run_id)]["points"] == 1 and polled["runs"][str(run_id)]["text"] == "1 so far"
            writer.finish_run(run_id, "finished")
            assert c.get(f"/live.json?runs={run_id}").json()["runs"][str(run_id)]["status"] == "finished"
        assert c.get(f"/run/{run_id}").status_code == 200
        # Decide was kept under the store's data version: a new label stored since makes it anew.
        again = c.get("/decide", params=[("baseline", "a"), ("label", "a"), ("label", "b")])
        assert '<input type="checkbox" name="label" value="live">' in again.text
        assert '<input type="checkbox" name="label" value="live">' not in decide.text
        for path in ("/history", "/hosts", "/workload?engine=postgres&workload=pgbench-tpcb&baseline=a",
                     f"/diff?before=1&after={run_id}", f"/point/{storebuild_first_point(url)}"):
            assert c.get(path).status_code == 200, path


def storebuild_first_point(url: str) -> int:
    with Store(url, readonly=True) as db:
        return min(p.point_id for p in db.points() if p.status == "ok")


def test_the_point_being_measured_lives_in_an_unlogged_table_and_goes_with_the_point(team_store,
                                                                                   monkeypatch: pytest.MonkeyPatch
                                                                                   ) -> None:
    """The live publisher over a PostgreSQL store (store/live.py): its seconds in the
    store's unlogged live_seconds, read by run_progress's one query and shown by the
    poll; removed in the transaction that stores the point, and when the run ends or its
    publisher closes (an interrupt)."""
    from starlette.testclient import TestClient

    from dbarena.model import PointSpec
    from dbarena.serve import app as serve_app
    from dbarena.store import live as store_live

    url, password = team_store
    monkeypatch.setenv("PGPASSWORD", password)
    spec = PointSpec(engine="postgres", workload="pgbench-select-only", threads=2, clients=4, duration_s=10, repeat=1)

    def rows() -> list[tuple[int, float]]:
        with psycopg.connect(url, password=password) as conn:
            return conn.execute("SELECT run_id, second FROM live_seconds ORDER BY run_id, second").fetchall()

    with psycopg.connect(url, password=password) as conn:
        assert conn.execute("SELECT relpersistence FROM pg_class WHERE relname = 'live_seconds'").fetchone() == ("u",)

    def publishers() -> int:
        with psycopg.connect(url, password=password) as conn:
            return int(conn.execute("SELECT count(*) FROM pg_stat_activity WHERE application_name = 'dbarena-live'"
                                    ).fetchone()[0])
    publisher = store_live.Publisher(url)
    try:
        with Store(url) as writer, TestClient(serve_app.create_app(url), base_url="http://127.0.0.1:8642") as c:
            run_id = writer.begin_run(RunInfo(label="flight", host="box", engine="postgres", target="postgresql://x@h/d",
                                              started_at=storebuild.T0 + timedelta(days=9), server_version="17.2",
                                              tool_versions={}, options={}, host_facts=storebuild.HOST))
            token = publisher.begin(run_id, spec, "measured", 0, 10)
            for second in range(1, 8):
                publisher.second(token, float(second), 200.0 + second)
            assert publisher.flush(60)
            assert publisher.broken is None
            assert rows() == [(run_id, float(s)) for s in range(1, 8)] and publishers() == 1
            progress = writer.run_progress([run_id])[run_id]
            assert progress.live is not None and progress.live.seconds[-1] == (7.0, 207.0)
            polled = c.get(f"/live.json?runs={run_id}").json()["runs"][str(run_id)]
            assert polled["current_text"] == ("measuring: pgbench-select-only, 4 clients on 2 threads, repeat 2, "
                                              "7 s of 10: 205.0 TPS over its last 5 s (203, 204, 205, 206, 207)")
            assert "measuring: pgbench-select-only" in c.get("/").text
            # Stored: its seconds gone in the same transaction, before the publisher is told.
            writer.add_point(run_id, storebuild._point(500.0, 1, 0, day=9))
            assert rows() == []
            polled = c.get(f"/live.json?runs={run_id}").json()["runs"][str(run_id)]
            assert polled["measuring"] is None and polled["current_text"].startswith("pgbench-tpcb, 1 thread")
            publisher.clear(run_id)
            token = publisher.begin(run_id, spec, "measured", 1, 10)
            publisher.second(token, 1.0, 300.0)
            assert publisher.flush(60)
            assert rows() == [(run_id, 1.0)]
            writer.finish_run(run_id, "interrupted")  # (the session's, or cleanup's, mark)
            assert rows() == []
            token = publisher.begin(run_id, spec, "measured", 1, 10)
            publisher.second(token, 1.0, 300.0)
            assert publisher.flush(60)
    finally:
        publisher.close()
    assert rows() == [] and publishers() == 0  # (its connection closed with it)
