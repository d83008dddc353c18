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
from conftest import cli_env, dbarena
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
        merged = dbarena("merge", str(built), "--store", url, env=cli_env(Path("/tmp"), PGPASSWORD=password))
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
