"""The PostgreSQL store end to end, on a real throwaway PostgreSQL that the test starts:
a run written there, results and a report read from it, SQLite stores merged into it
(and back out), the SQL views answering dashboard queries, two runs writing at once,
and the password kept out of everything."""

from __future__ import annotations

import json
import shutil
from datetime import datetime, timezone
from pathlib import Path

import psycopg
import pytest

from conftest import LIGHT, cli_env, dbarena
# results, report, merge, import and store only read and write stores and files: run in
# this process (tests/inprocess.py), not as `python -m dbarena`, half a second of CPU
# each to start; PGPASSWORD reaches libpq through the environment the helper sets. The
# runs stay processes of their own.
from inprocess import dbarena as dbarena_here
from dbarena.store import views
from dbarena.engines import postgres
from dbarena.model import Measurement, PointResult, PointSpec, Profile, RunInfo
from dbarena.records import StoredProfile
from dbarena.store.database import Store
from dbarena.store.migrations import SCHEMA_VERSION
from storebuild import assert_merged, assert_said, build, hostile

pytestmark = pytest.mark.e2e

STORES = Path(__file__).resolve().parent.parent / "fixtures" / "stores"


@pytest.fixture(scope="module")
def server():
    with postgres.throwaway(settings={"max_connections": "40"}) as target:
        password = target.passfile.read_text().strip().rsplit(":", 1)[1]
        yield target, password


@pytest.fixture
def database(server, request):
    """A fresh database on the server for one test: (URL, password)."""
    target, password = server
    name = "results_" + request.node.name.removeprefix("test_")[:40]
    with psycopg.connect(target.url, password=password, autocommit=True) as admin:
        admin.execute(f"DROP DATABASE IF EXISTS {name}")
        admin.execute(f"CREATE DATABASE {name}")
    base = target.url.rsplit("/", 1)[0]
    return f"{base}/{name}", password


def env_for(public_tmp: Path, password: str) -> dict:
    return cli_env(public_tmp, PGPASSWORD=password)


def holds(url: str, password: str, secret: str) -> bool:
    """Whether the database holds secret in any table (raw outputs decompressed)."""
    with Store(url.replace("://", "://", 1)) as db:
        for table in ("runs", "points", "samples", "system_samples", "studies", "hosts", "imports", "point_derived"):
            for (text,) in db.db.execute(f"SELECT t::text FROM {table} t"):
                if secret in text:
                    return True
        return any(secret in "".join(db.raw_output(r.point_id)) for r in db.points(warmups=True))


def query(url: str, password: str, sql: str) -> list[dict]:
    with psycopg.connect(url, password=password) as conn:
        cur = conn.execute(sql)
        names = [c.name for c in cur.description or []]
        return [dict(zip(names, row)) for row in cur.fetchall()]


def test_a_run_is_written_to_postgresql_and_every_command_reads_it(database, public_tmp, tmp_path, monkeypatch):
    url, password = database
    env = env_for(public_tmp, password)
    # (3 s points: one whole second of the server's commit counter each; a 2 s point's
    # one was the second its clients' last report of commits fell in, not its own.)
    done = dbarena("run", "--workload", "pgbench-select-only", *LIGHT, "--threads", "1,2", "--duration", "3", "--scale", "1",
                   "--repeat", "3", "--label", "pgstore", "--store", url, env=env)
    assert done.returncode == 0, done.stderr
    assert f"Results stored in {url}" in done.stdout
    # The run ends with its label's configurations summarised over their sessions (schema
    # 26), which the first view reads.
    assert query(url, password, "SELECT label, COUNT(*) AS n FROM group_summaries GROUP BY label") == \
        [{"label": "pgstore", "n": 2}]
    listed = json.loads(dbarena_here("results", "--json", "--store", url, env=env).stdout)
    assert len(listed) == 6 and {r["status"] for r in listed} == {"ok"}
    summary = json.loads(dbarena_here("results", "--summary", "--json", "--store", url, env=env).stdout)
    assert sorted((s["threads"], s["n"]) for s in summary) == [(1, 3), (2, 3)]
    # Made from the session summaries the store keeps (schema 25: their points' figures),
    # which an edit of a point by hand drops (the table's triggers), so that the next
    # summary is made from the points again: it sees the edit.
    assert query(url, password, "SELECT SUM(points) AS n FROM session_summaries WHERE figures IS NOT NULL") == \
        [{"n": 6}]
    with psycopg.connect(url, password=password, autocommit=True) as conn:
        conn.execute("UPDATE points SET status = 'failed' WHERE id = %s", (listed[0]["point_id"],))
    assert query(url, password, "SELECT COUNT(*) AS n FROM session_summaries") == [{"n": 0}]
    edited = json.loads(dbarena_here("results", "--summary", "--json", "--store", url, env=env).stdout)
    assert sorted((s["threads"], s["n"], s["failed"]) for s in edited) == \
        sorted((s["threads"], s["n"] - (s["threads"] == listed[0]["threads"]), int(s["threads"] == listed[0]["threads"]))
               for s in summary)
    with psycopg.connect(url, password=password, autocommit=True) as conn:
        conn.execute("UPDATE points SET status = 'ok' WHERE id = %s", (listed[0]["point_id"],))
    report = dbarena_here("report", "-o", str(tmp_path / "r.html"), "--store", url, env=env)
    assert report.returncode == 0, report.stderr
    assert "pgstore" in (tmp_path / "r.html").read_text()
    raw = dbarena_here("results", "--raw", str(listed[0]["point_id"]), "--store", url, env=env)
    assert "number of transactions actually processed" in raw.stdout
    info = json.loads(dbarena_here("store", "info", "--json", "--store", url, env=env).stdout)
    assert (info["backend"], info["schema_version"], info["runs"], info["points"]) == \
        ("postgresql", SCHEMA_VERSION, 1, 6)
    assert info["samples"] >= 1 and info["size_bytes"] > 0

    # The views answer a dashboard's queries with what `results --summary` says,
    # without a dbarena read in between (derived figures are cached as points are stored).
    rows = query(url, password, "SELECT threads, n, mean, stdev, value_count FROM v_summaries s, LATERAL "
                                "(SELECT COUNT(value) AS value_count FROM v_points p WHERE p.config_key = s.config_key)"
                                " v ORDER BY threads")
    by_threads = {s["threads"]: s for s in summary}
    for row in rows:
        assert row["n"] == 3 and row["value_count"] == 3
        assert row["mean"] == pytest.approx(by_threads[row["threads"]]["mean"], rel=1e-9)
    series = query(url, password, "SELECT time, tps FROM v_samples ORDER BY time LIMIT 3")
    assert series and series[0]["time"].tzinfo is not None

    monkeypatch.setenv("PGPASSWORD", password)
    assert not holds(url, password, password)
    assert password not in done.stdout + done.stderr


def test_sqlite_stores_merge_into_postgresql_once_and_back_out(database, public_tmp, tmp_path, monkeypatch):
    url, password = database
    env = env_for(public_tmp, password)
    old = tmp_path / "v9.db"
    shutil.copy(STORES / "v9.db", old)  # schema 9: migrated on the way in
    first = dbarena_here("merge", str(old), "--store", url, env=env)
    assert first.returncode == 0, first.stderr
    assert first.stdout.strip() == f"{old}: 3 run(s), 13 point(s) merged into {url}"
    again = dbarena_here("merge", str(old), "--store", url, env=env)
    assert again.stdout.strip().endswith("(all its runs were here already)")
    monkeypatch.setenv("PGPASSWORD", password)
    with Store(old) as sqlite, Store(url) as pg:
        assert [(r.label, r.workload, r.threads, r.tps) for r in sqlite.points()] == \
            [(r.label, r.workload, r.threads, r.tps) for r in pg.points()]
        a, b = sqlite.points()[0], pg.points()[0]
        assert sqlite.raw_output(a.point_id) == pg.raw_output(b.point_id)
        assert sqlite.samples(a.point_id) == pg.samples(b.point_id)
    # A run written directly, next to the merged ones: ids never collide.
    done = dbarena("run", "--workload", "pgbench-select-only", *LIGHT, "--threads", "1", "--duration", "1", "--scale", "1",
                   "--label", "direct", "--store", url, env=env)
    assert done.returncode == 0, done.stderr
    # And out again, into a new SQLite file: the same counts.
    back = tmp_path / "back.db"
    out = dbarena_here("merge", url, "--store", str(back), env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == f"{url}: 4 run(s), 14 point(s) merged into {back}"
    pg_info = json.loads(dbarena_here("store", "info", "--json", "--store", url, env=env).stdout)
    back_info = json.loads(dbarena_here("store", "info", "--json", "--store", str(back), env=env).stdout)
    for field in ("runs", "points", "samples", "system_samples", "studies", "hosts", "labels"):
        assert pg_info[field] == back_info[field], field
    compared = dbarena_here("results", "--summary", "--json", "--store", str(back), env=env)
    assert compared.returncode == 0, compared.stderr


def test_a_hostile_sqlite_store_merges_into_postgresql_what_fits(database, public_tmp, tmp_path):
    """Values that do not fit their columns in every table (storebuild.HOSTILE), merged
    row by row into PostgreSQL: each said once and left out, every reader reads the
    PostgreSQL store without a word, and merged back out it holds every row that fits."""
    url, password = database
    env = env_for(public_tmp, password)
    source = hostile(build(tmp_path / "base.db"), tmp_path / "hostile.db")
    done = dbarena_here("merge", str(source), "--store", url, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"{source}: 2 run(s), 11 point(s) merged into {url}"
    assert_said(done.stderr, source)
    back = tmp_path / "back.db"  # (before a read caches the derived figures left out)
    out = dbarena_here("merge", url, "--store", str(back), env=env)
    assert out.returncode == 0 and out.stderr == "", out.stderr
    assert_merged(source, back)
    for argv in (("results",), ("results", "--summary"), ("compare", "a", "b"),
                 ("report", "-o", str(tmp_path / "r.html"))):
        read = dbarena_here(*argv, "--store", url, env=env)
        assert read.returncode == 0 and read.stderr == "", (argv, read.stderr)


def test_runs_are_forgotten_in_a_postgresql_store_and_merges_carry_it_both_ways(database, public_tmp, tmp_path):
    """`store forget` on PostgreSQL: the run and every row keyed by it or its points go
    in one transaction, a tombstone stays; a run that may be running on another host is
    refused; merged out into a store that got the run from it, it is forgotten there
    too (not in one that holds the run of its own), and a store holding it merged back
    in does not bring it back."""
    from dbarena.store.schema import TABLES

    url, password = database
    env = env_for(public_tmp, password)
    base = build(tmp_path / "base.db")
    assert dbarena_here("merge", str(base), "--store", url, env=env).returncode == 0
    (b,) = query(url, password, "SELECT id, uuid FROM runs WHERE label = 'b'")
    (a_first, a_last) = [r["id"] for r in query(url, password, "SELECT id FROM runs WHERE label = 'a' ORDER BY id")]

    def keyed(run_id: int) -> dict[str, int]:
        """Rows keyed by the run or its points, in every table that has such a key."""
        out = {}
        for table in TABLES:
            if table.name in ("pending_rekey", "live_seconds"):
                continue  # (transient: rows only while a data step, or a point being measured, is in progress)
            names = [c.name for c in table.columns]
            if "run_id" in names:
                where = f"run_id = {run_id}"
            elif "point_id" in names:
                where = f"point_id IN (SELECT id FROM points WHERE run_id = {run_id})"
            else:
                continue
            out[table.name] = query(url, password, f"SELECT count(*) AS n FROM {table.name} WHERE {where}")[0]["n"]
        return out

    assert all(keyed(b["id"]).values()), keyed(b["id"])
    kept = keyed(a_first)
    # A member's store that got its runs from this one (before run b is forgotten here).
    member = tmp_path / "member.db"
    assert dbarena_here("merge", url, "--store", str(member), env=env).returncode == 0
    # A run marked running by a dbarena on another machine: whether it still runs cannot
    # be told from here, and a shared store is where it would be writing.
    with psycopg.connect(url, password=password, autocommit=True) as conn:
        conn.execute("UPDATE runs SET status = 'running', options = %s WHERE id = %s",
                     (json.dumps({"owner": {"host": "elsewhere.example", "pid": 4242, "start": 1}}), a_last))
    refused = dbarena_here("store", "forget", "--run", str(b["id"]), "--run", str(a_last), "--store", url, env=env)
    assert refused.returncode == 2 and refused.stderr == (
        f"dbarena: error: run {a_last} is running on elsewhere.example (process 4242), which cannot be checked "
        "from here: forget it once it has ended there\n")
    assert all(keyed(b["id"]).values())
    done = dbarena_here("store", "forget", "--run", str(b["id"]), "--store", url, env=env)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert done.stdout.splitlines()[-1] == f"{url}: 1 run(s), 7 point(s) forgotten; a merge will not bring them back"
    assert keyed(b["id"]) == dict.fromkeys(kept, 0) and keyed(a_first) == kept
    (tomb,) = query(url, password, "SELECT uuid, label, points FROM forgotten_runs")
    assert tomb == {"uuid": b["uuid"], "label": "b", "points": 7}
    # Out into the member's store that holds it from here: forgotten there too.
    out = dbarena_here("merge", url, "--store", str(member), env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[0].startswith(f"{url}: run 2 (label b, postgres, started ")
    assert out.stdout.splitlines()[0].endswith(f"forgotten in {member} too (7 point(s) removed)")
    with Store(member, readonly=True) as db:
        assert [r.label for r in db.runs()] == ["a", "a"]
    # Into a store that holds it of its own (a copy of where it was measured): kept, said.
    holder = tmp_path / "holder.db"
    shutil.copy(base, holder)
    kept_there = dbarena_here("merge", url, "--store", str(holder), env=env)
    assert kept_there.returncode == 0, kept_there.stderr
    assert kept_there.stdout.splitlines()[0].endswith(f"but did not come to {holder} from there: kept here")
    with Store(holder, readonly=True) as db:
        assert [r.label for r in db.runs()] == ["a", "b", "a"]
    # And a store that holds it, merged in: not brought back.
    back = dbarena_here("merge", str(base), "--store", url, env=env)
    assert back.returncode == 0, back.stderr
    (at,) = query(url, password, "SELECT forgotten_at FROM forgotten_runs")
    assert back.stdout.splitlines() == [
        f"{base}: run 2 (label b) was forgotten in {url} on {at['forgotten_at']}: not merged",
        f"{base}: 0 run(s), 0 point(s) merged into {url}"]
    assert query(url, password, "SELECT count(*) AS n FROM runs WHERE label = 'b'") == [{"n": 0}]


def test_two_runs_write_to_one_new_postgresql_store_at_once(database, public_tmp):
    url, password = database
    env = env_for(public_tmp, password)
    import subprocess
    import sys

    args = ["--workload", "pgbench-select-only", *LIGHT, "--threads", "1", "--duration", "2", "--scale", "1", "--store", url]
    procs = [subprocess.Popen([sys.executable, "-m", "dbarena", "run", *args, "--label", f"host{i}"], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              stdin=subprocess.DEVNULL) for i in (1, 2)]
    for proc in procs:
        _, err = proc.communicate(timeout=240)
        assert proc.returncode == 0, err
    rows = query(url, password, "SELECT label, COUNT(*) AS n FROM v_points GROUP BY label ORDER BY label")
    assert rows == [{"label": "host1", "n": 1}, {"label": "host2", "n": 1}]
    # Points offered a rate are compared by their p95 there; 2 s at 50 TPS give too few
    # transactions for one, and compare says so.
    compared = dbarena_here("compare", "host1", "host2", "--json", "--store", url, env=env)
    assert compared.returncode == 0, compared.stderr
    (row,) = json.loads(compared.stdout)
    assert (row["metric"], row["offered_tps"], row["ratio"]) == ("p95_ms", 50.0, None), row
    assert row["verdict_text"].startswith("no p95 latency at 50 TPS offered for host1 and host2 (no run with 200 "), row
    versions = query(url, password, "SELECT version FROM schema_migrations")
    assert versions == [{"version": SCHEMA_VERSION}]


def test_bad_postgresql_stores_are_one_line_errors(database, server, public_tmp):
    url, password = database
    env = env_for(public_tmp, password)
    with_password = url.replace("dbarena@", f"dbarena:{password}@")
    refused = dbarena_here("results", "--store", with_password, env=env)
    assert refused.returncode == 2 and "must not contain a password" in refused.stderr
    assert password not in refused.stderr + refused.stdout
    unreachable = dbarena_here("store", "info", "--store", "postgresql://dbarena@127.0.0.1:1/results", env=env)
    assert unreachable.returncode != 0 and "cannot connect" in unreachable.stderr
    assert "Traceback" not in unreachable.stderr and len(unreachable.stderr.strip().splitlines()) == 1
    # A database that already has a table of that name is not dbarena's to take.
    with psycopg.connect(url, password=password, autocommit=True) as conn:
        conn.execute("CREATE TABLE runs (x integer)")
    foreign = dbarena_here("store", "info", "--store", url, env=env)
    assert foreign.returncode != 0 and "did not create" in foreign.stderr and "Traceback" not in foreign.stderr
    with psycopg.connect(url, password=password, autocommit=True) as conn:
        conn.execute("DROP TABLE runs")
        conn.execute("CREATE TABLE schema_migrations (version varchar)")  # Rails' table of that name
    rails = dbarena_here("merge", str(public_tmp / "none.db"), "--store", url, env=env)
    assert rails.returncode == 2 and "is not a dbarena store (its schema_migrations table is another program's" \
        in rails.stderr and len(rails.stderr.strip().splitlines()) == 1
    with psycopg.connect(url, password=password, autocommit=True) as conn:
        conn.execute("DROP TABLE schema_migrations")
    # An empty database: a reader refuses it (and writes nothing), a writer makes a store.
    empty = dbarena_here("store", "info", "--store", url, env=env)
    assert empty.returncode == 2 and "is not a dbarena store (it holds no dbarena schema)" in empty.stderr
    assert query(url, password, "SELECT to_regclass('schema_migrations') IS NULL AS none") == [{"none": True}]
    (public_tmp / "empty.db").touch()
    # (an empty source)
    assert dbarena_here("merge", str(public_tmp / "empty.db"), "--store", url, env=env).returncode == 2
    assert query(url, password, "SELECT to_regclass('schema_migrations') IS NULL AS none") != [{"none": True}]
    assert dbarena_here("store", "info", "--store", url, env=env).returncode == 0
    with psycopg.connect(url, password=password, autocommit=True) as conn:
        conn.execute("INSERT INTO schema_migrations VALUES (99, 'later')")
    newer = dbarena_here("results", "--store", url, env=env)
    assert newer.returncode != 0 and "newer than this dbarena" in newer.stderr
    assert len(newer.stderr.strip().splitlines()) == 1


def store_doc_queries() -> list[str]:
    """The example dashboard queries of docs/store.md's SQL views section (the README
    points there)."""
    text = (Path(__file__).resolve().parents[2] / "docs" / "store.md").read_text()
    section = text.split("## SQL views", 1)[1].split("\n## ", 1)[0]
    queries, current = [], []
    for line in section.splitlines():
        if line.startswith("    ") and (current or line.strip().startswith("SELECT")):
            current.append(line.strip())
            if line.rstrip().endswith(";"):
                queries.append(" ".join(current))
                current = []
    return queries


def test_the_dashboard_queries_of_the_store_docs_run(database, public_tmp):
    url, password = database
    env = env_for(public_tmp, password)
    done = dbarena("run", "--workload", "pgbench-select-only", *LIGHT, "--threads", "1", "--duration", "1", "--scale", "1",
                   "--label", "m6i", "--store", url, env=env)
    assert done.returncode == 0, done.stderr
    queries = store_doc_queries()
    assert len(queries) == 4
    for sql in queries:
        query(url, password, sql.replace("$__timeFilter(time)", "TRUE"))
    levels = query(url, password, queries[0].replace("AND study = 'seed-a'", ""))
    assert levels == [{"level": "1", "label": "m6i", "tps": pytest.approx(levels[0]["tps"])}]
    # The run's session, summarised as its point was stored: one session, its mean the
    # point's figure (a run of one point), no spread between sessions yet.
    (over_sessions,) = query(url, password, queries[3])
    assert over_sessions["sessions"] == 1 and over_sessions["between_sessions"] is None
    assert float(over_sessions["tps"]) == pytest.approx(levels[0]["tps"], abs=0.06)


def test_a_store_created_at_schema_12_migrates_to_the_latency_histograms(database, public_tmp, monkeypatch):
    """Stores created by the dbarena before histograms (base 12) gain the columns and the
    table (and schema 16's server_series, 17's forgotten_runs), and keep what they held."""
    url, password = database
    monkeypatch.setenv("PGPASSWORD", password)
    with Store(url):
        pass
    with psycopg.connect(url, password=password, autocommit=True) as conn:
        # what the base schema 12 was: without the two percentile columns and the table,
        # and with its own views (today's read the columns)
        conn.execute(views.DROP)
        conn.execute("DROP TABLE latency_histograms")
        conn.execute("DROP TABLE server_series")
        conn.execute("DROP TABLE forgotten_runs")
        conn.execute("DROP TABLE pending_rekey")
        conn.execute("DROP TABLE live_seconds")
        conn.execute("DROP TABLE store_identity")
        conn.execute("DROP TABLE run_origins")
        conn.execute("DROP VIEW v_levels")
        conn.execute("DROP VIEW v_sessions")
        conn.execute("DROP TABLE session_summaries")
        conn.execute("DROP TABLE group_summaries")
        conn.execute("DROP TABLE group_generation")
        conn.execute("DROP INDEX points_run_phase")
        conn.execute("DROP TABLE profiles")
        conn.execute("ALTER TABLE points DROP COLUMN latency_p90_ms, DROP COLUMN latency_p999_ms")
        conn.execute(views.postgresql(12))
        conn.execute("UPDATE schema_migrations SET version = 12")
    env = env_for(public_tmp, password)
    done = dbarena("run", "--workload", "pgbench-select-only", *LIGHT, "--threads", "1", "--duration", "2", "--scale", "1",
                   "--latency-sampling", "1", "--store", url, env=env)
    assert done.returncode == 0, done.stderr
    assert query(url, password, "SELECT version FROM schema_migrations ORDER BY version") == \
        [{"version": v} for v in range(12, SCHEMA_VERSION + 1)]
    assert len(query(url, password, "SELECT uuid FROM store_identity")) == 1  # (made by schema 21)
    (point,) = query(url, password, "SELECT p.latency_p90_ms, v.latency_p999_ms, h.record FROM points p "
                                    "JOIN latency_histograms h ON h.point_id = p.id "
                                    "JOIN v_points v ON v.point_id = p.id")
    assert point["latency_p90_ms"] > 0 and point["latency_p999_ms"] > 0 and json.loads(point["record"])["count"] > 0
    (server,) = query(url, password, "SELECT bound, record FROM server_series")
    # The series, not a verdict (the bound is derived from it on read: `results`).
    assert server["bound"] is None and json.loads(server["record"])["engine"] == "postgres"


def test_a_store_created_at_schema_13_migrates_to_views_with_p90_and_p999(database, tmp_path, monkeypatch):
    """Stores created at base 13 (views without p90 and p99.9) get today's views, with the
    columns SQLite's have, and keep their points."""
    url, password = database
    monkeypatch.setenv("PGPASSWORD", password)
    percentiles = ["latency_p50_ms", "latency_p90_ms", "latency_p95_ms", "latency_p99_ms", "latency_p999_ms"]
    figures = dict(zip(percentiles, (1.5, 2.5, 3.5, 4.5, 5.5)))
    spec = PointSpec(engine="postgres", workload="pgbench-select-only", threads=1, clients=1, duration_s=10)
    t0 = datetime(2026, 11, 21, 10, 0, tzinfo=timezone.utc)

    def add_point(db: Store) -> int:
        run_id = db.begin_run(RunInfo(label="l", host="h", engine="postgres", target="t", started_at=t0,
                                      server_version="15", tool_versions={}, options={}, host_facts={}))
        return db.add_point(run_id, PointResult(
            spec=spec, status="ok", started_at=t0, ended_at=t0, command=("pgbench",), exit_code=0, stdout="",
            stderr="", measurement=Measurement(tps=100.0, latency_avg_ms=1.0, **figures)))

    with Store(url) as db:
        old = add_point(db)
    with psycopg.connect(url, password=password, autocommit=True) as conn:
        # what the base schema 13 was: today's tables but schema 16's and 17's, the views of schema 12
        conn.execute(views.DROP)
        conn.execute("DROP TABLE server_series")
        conn.execute("DROP TABLE forgotten_runs")
        conn.execute("DROP TABLE pending_rekey")
        conn.execute("DROP TABLE live_seconds")
        conn.execute("DROP TABLE store_identity")
        conn.execute("DROP TABLE run_origins")
        conn.execute("DROP VIEW v_levels")
        conn.execute("DROP VIEW v_sessions")
        conn.execute("DROP TABLE session_summaries")
        conn.execute("DROP TABLE group_summaries")
        conn.execute("DROP TABLE group_generation")
        conn.execute("DROP INDEX points_run_phase")
        conn.execute("DROP TABLE profiles")
        conn.execute(views.postgresql(13))
        conn.execute("UPDATE schema_migrations SET version = 13")
    assert "latency_p90_ms" not in query(url, password, "SELECT * FROM v_points")[0]
    with Store(url) as db:
        assert db.version == SCHEMA_VERSION
        new = add_point(db)
    assert query(url, password, "SELECT version FROM schema_migrations ORDER BY version") == \
        [{"version": v} for v in range(13, SCHEMA_VERSION + 1)]
    viewed = query(url, password, f"SELECT point_id, {', '.join(percentiles)} FROM v_points ORDER BY point_id")
    assert viewed == [{"point_id": old, **figures}, {"point_id": new, **figures}]
    # Schema 15's views: repeats from 1, each point judged by its tool's metric.
    assert query(url, password, "SELECT DISTINCT repeat, metric, better FROM v_points") == \
        [{"repeat": 1, "metric": "tps", "better": "higher"}]
    with Store(tmp_path / "r.db") as lite:
        sqlite_columns = [d[0] for d in lite.db.execute("SELECT * FROM v_points LIMIT 0").description]
    assert list(query(url, password, "SELECT * FROM v_points LIMIT 1")[0]) == sqlite_columns


def test_a_store_created_at_schema_21_gains_the_profiles_table(database, monkeypatch):
    """A store created at base 21 (before on-CPU profiles) gains schema 22's table, and a
    point's profile goes in and comes back out: its folded stacks compressed (bytea),
    its summary beside them."""
    url, password = database
    monkeypatch.setenv("PGPASSWORD", password)
    with Store(url):
        pass
    with psycopg.connect(url, password=password, autocommit=True) as conn:
        conn.execute("DROP VIEW v_levels")
        conn.execute("DROP VIEW v_sessions")
        conn.execute("DROP TABLE session_summaries")
        conn.execute("DROP TABLE group_summaries")
        conn.execute("DROP TABLE group_generation")
        conn.execute("DROP INDEX points_run_phase")
        conn.execute("DROP TABLE profiles")
        conn.execute("DELETE FROM schema_migrations")
        conn.execute("INSERT INTO schema_migrations VALUES (21, '2026-11-27T00:00:00+00:00')")
    t0 = datetime(2026, 11, 27, 10, 0, tzinfo=timezone.utc)
    spec = PointSpec(engine="postgres", workload="pgbench-select-only", threads=1, clients=1, duration_s=10)
    folded = "postgres;main;PostgresMain;ExecScan 7\npostgres;main;PostgresMain;[postgres] 3\n"
    with Store(url) as db:
        assert db.version == SCHEMA_VERSION
        run_id = db.begin_run(RunInfo(label="l", host="h", engine="postgres", target="t", started_at=t0,
                                      server_version="15", tool_versions={}, options={}, host_facts={}))
        pid = db.add_point(run_id, PointResult(
            spec=spec, status="ok", started_at=t0, ended_at=t0, command=("pgbench",), exit_code=0, stdout="",
            stderr="", measurement=Measurement(tps=100.0, transactions=1000),
            profile=Profile(folded=folded, frequency_hz=99.0, symbols="perf; postgres: dynamic symbols only")))
        got = db.profiles([pid], folded=True)[pid]
    assert got == StoredProfile(samples=10, top=[{"function": "ExecScan", "share": 0.7},
                                                 {"function": "[postgres]", "share": 0.3}],
                                frequency_hz=99.0, symbols="perf; postgres: dynamic symbols only", folded=folded)
    assert [r["version"] for r in query(url, password, "SELECT version FROM schema_migrations ORDER BY version")] \
        == list(range(21, SCHEMA_VERSION + 1))


def test_a_postgresql_store_whose_connection_drops_between_points_loses_nothing(database, server, public_tmp,
                                                                                 tmp_path):
    """The store's server ends dbarena's connection between two points (a restart, a
    failover, an administrator): the point just measured is saved in a file `dbarena
    import` reads, the sweep stops and its server goes, one line says so, and the run is
    marked interrupted through a new connection."""
    from test_kill import _servers, _within
    from test_run import _start, _wait_for_line

    url, password = database
    target, _ = server
    env = {**env_for(public_tmp, password), "DBARENA_STATE_DIR": str(tmp_path / "state")}
    proc = _start(["run", "--workload", "pgbench-select-only", *LIGHT, "--threads", "1,2,3", "--duration", "3", "--scale", "1",
                   "--store", url], env)
    _wait_for_line(proc, "ok     postgres pgbench-select-only threads=1")
    with psycopg.connect(target.url, password=password, autocommit=True) as admin:
        ended = admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s"
                              " AND application_name = 'dbarena'", (url.rsplit("/", 1)[1],)).fetchall()
    assert ended == [(True,)]  # dbarena's one connection to its store
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 2, err
    lines = [line for line in err.splitlines() if line.startswith("dbarena: error:")]
    assert len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith(f"dbarena: error: store {url} cannot be written: "), lines[0]
    assert lines[0].endswith(f"; run 1 is marked interrupted (`dbarena run --resume 1 --store {url}` continues it)")
    stored = query(url, password, "SELECT threads FROM points ORDER BY id")
    (saved,) = public_tmp.glob("dbarena-unsaved-*.txt")  # a PostgreSQL store has no folder beside it
    assert f"saved in {saved} (dbarena import {saved} --label LABEL" in lines[0]
    assert saved.name.endswith(f"-postgres-pgbench-select-only-t{len(stored) + 1}-r0.txt"), (saved, stored)
    assert query(url, password, "SELECT status, status_reason FROM runs") == [
        {"status": "interrupted", "status_reason": "store unwritable"}]
    assert _within(10, lambda: not _servers(public_tmp)), _servers(public_tmp)
    imported = dbarena_here("import", str(saved), "--label", "rescued", "--store", url, env=env)
    assert imported.returncode == 0, imported.stderr
    assert query(url, password, "SELECT p.threads, p.status FROM points p JOIN runs r ON r.id = p.run_id "
                                "WHERE r.label = 'rescued'") == [{"threads": len(stored) + 1, "status": "ok"}]
    saved.unlink()
    assert list(public_tmp.iterdir()) == []


def test_groups_summarised_in_postgresql_are_kept_and_dropped_as_in_sqlite(database, public_tmp, tmp_path,
                                                                          monkeypatch):
    """A team's store keeps each label's configurations summarised over their sessions
    (schema 26) as SQLite does: made by the first read, the same summaries as every
    point's, dropped by PostgreSQL's triggers when a session's label changes."""
    from dbarena.stats import analysis

    url, password = database
    monkeypatch.setenv("PGPASSWORD", password)
    source = tmp_path / "two.db"
    shutil.copy(STORES / "report-two-labels.db", source)
    done = dbarena_here("merge", str(source), "--store", url, env=env_for(public_tmp, password))
    assert done.returncode == 0, done.stderr
    with Store(url) as db:
        want = analysis.summaries(analysis.load(db), histograms=db.latency_histograms)
        assert analysis.stored_summaries(db) == want
    kept = query(url, password, "SELECT label, config_key FROM group_summaries ORDER BY 1, 2")
    assert len(kept) == len(want)
    with Store(url) as db:
        assert analysis.stored_summaries(db) == want  # (from the kept groups)
        first = db.runs()[0]
    with psycopg.connect(url, password=password, autocommit=True) as conn:
        conn.execute("UPDATE runs SET label = 'renamed' WHERE id = %s", (first.id,))
    left = query(url, password, "SELECT label FROM group_summaries")
    assert all(row["label"] not in (first.label, "renamed") for row in left)
    with Store(url) as db:
        assert analysis.stored_summaries(db) == analysis.summaries(analysis.load(db), histograms=db.latency_histograms)
