import shutil
import sqlite3
from datetime import datetime, timezone
from pathlib import Path

import pytest

from dbarena.errors import StoreError
from dbarena.model import Measurement, PointResult, PointSpec, RunInfo, Sample
from dbarena.store.database import Store
from dbarena.store.migrations import MIGRATIONS, SCHEMA_VERSION

T0 = datetime(2026, 11, 21, 10, 0, tzinfo=timezone.utc)
SPEC = PointSpec(engine="postgres", workload="pgbench-tpcb", threads=2, clients=4, duration_s=3, params=(("scale", 1),))


def _run_info():
    return RunInfo(label="box-a", host="box-a", engine="postgres", target="postgresql://x@127.0.0.1:1/db",
                   started_at=T0, server_version="15.18", tool_versions={"pgbench": "pgbench 15.18"},
                   options={"duration_s": 3}, host_facts={"hardware_threads": 2})


def test_new_store_is_at_the_latest_schema(tmp_path):
    with Store(tmp_path / "r.db") as db:
        assert db.version == SCHEMA_VERSION
        applied = db.db.execute("SELECT version FROM schema_migrations").fetchall()
        assert [v for (v,) in applied] == list(range(1, SCHEMA_VERSION + 1))


def test_point_and_samples_round_trip_verbatim(tmp_path):
    raw_out = "pgbench (15.18)\r\ntps = 1.5 (without initial connection time)\n"
    with Store(tmp_path / "r.db") as db:
        run_id = db.begin_run(_run_info())
        ok = PointResult(
            spec=SPEC, status="ok", started_at=T0, ended_at=T0, command=("pgbench", "-T", "3"), exit_code=0,
            stdout=raw_out, stderr="progress: 1.0 s, 1.0 tps, lat 1.000 ms stddev nan\n",
            measurement=Measurement(tps=1.5, transactions=3, failed_transactions=None, latency_avg_ms=2.0),
            samples=(Sample(second=1.0, tps=1.0, latency_ms=1.0), Sample(second=2.0, tps=2.0)),
        )
        failed = PointResult(spec=SPEC, status="failed", started_at=T0, ended_at=T0, command=("pgbench",),
                             exit_code=2, stdout="", stderr="boom\n", error="exit status 2: boom")
        p1 = db.add_point(run_id, ok)
        db.add_point(run_id, failed)
        db.finish_run(run_id, "finished")
    with Store(tmp_path / "r.db") as db:  # reopened: committed, not cached
        rows = db.points()
        assert [r.status for r in rows] == ["ok", "failed"]
        assert rows[0].tps == 1.5 and rows[0].failed_transactions is None
        assert len(db.samples(p1)) == 2 and rows[1].tps is None
        assert rows[1].error == "exit status 2: boom"
        assert db.raw_output(p1) == (raw_out, ok.stderr)
        assert [s.latency_ms for s in db.samples(p1)] == [1.0, None]
        run = db.run(run_id)
        assert run is not None and run.status == "finished" and run.tool_versions == {"pgbench": "pgbench 15.18"}
        assert db.points(labels=("other",)) == []


def test_store_from_a_newer_dbarena_is_refused(tmp_path):
    path = tmp_path / "r.db"
    Store(path).close()
    con = sqlite3.connect(path)
    con.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    con.close()
    with pytest.raises(StoreError, match="newer"):
        Store(path)


def test_missing_directory_is_a_clear_error(tmp_path):
    with pytest.raises(StoreError, match="does not exist"):
        Store(tmp_path / "nope" / "r.db")


def test_not_a_database_is_a_clear_error(tmp_path):
    path = tmp_path / "r.db"
    path.write_text("this is not sqlite, it is a text file that is long enough " * 20)
    with pytest.raises(StoreError):
        Store(path)


def test_a_version_1_store_migrates_and_keeps_its_points(tmp_path):
    path = tmp_path / "old.db"
    # A store as the first release wrote it: schema 1 only, one pgbench point. Written
    # with sqlite3 directly, as that release did (today's Store backfills configuration
    # keys on opening, which a schema-1 store has no columns for).
    con = sqlite3.connect(path)
    con.executescript(
        "BEGIN;\n"
        "CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL);\n"
        + MIGRATIONS[0]
        + "\nINSERT INTO schema_migrations VALUES (1, '2026-01-01T00:00:00+00:00');\nPRAGMA user_version = 1;\nCOMMIT;"
    )
    run_id = con.execute(
        "INSERT INTO runs (label, host, engine, target, tool_versions, options, host_facts, dbarena_version,"
        " started_at, status) VALUES ('old', 'h', 'postgres', 't', '{}', '{}', '{}', '0.1.0', '2026-01-01T00:00:00+00:00',"
        " 'finished')"
    ).lastrowid
    con.execute(
        "INSERT INTO points (run_id, engine, workload, threads, clients, duration_s, scale, status, started_at,"
        " ended_at, command, tps, stdout, stderr) VALUES (?, 'postgres', 'pgbench-tpcb', 1, 2, 60, 10, 'ok',"
        " '2026-01-01T00:00:00+00:00', '2026-01-01T00:01:00+00:00', '[]', 123.5, 'raw', '')", (run_id,))
    con.commit()
    assert con.execute("PRAGMA user_version").fetchone()[0] == 1
    con.close()
    with Store(path) as db:
        assert db.version == len(MIGRATIONS)
        (row,) = db.points()
        assert row.tps == 123.5 and row.qps is None and row.params == {"scale": 10}
        assert db.raw_output(row.point_id) == ("raw", "")
        # Schema 7 gave the old point a configuration key, from what it stored.
        (config_key,) = db.db.execute("SELECT config_key FROM points").fetchone()
        assert config_key


def test_derived_figures_are_cached_by_estimator_version_and_read_in_batches(tmp_path, monkeypatch):
    from dbarena.stats import analysis

    store = tmp_path / "r.db"
    with Store(store) as db:
        run_id = db.begin_run(RunInfo(label="l", host="h", engine="postgres", target="t", started_at=T0,
                                      server_version="15", tool_versions={}, options={}, host_facts={}))
        spec = PointSpec(engine="postgres", workload="pgbench-select-only", threads=1, clients=1, duration_s=40)
        samples = tuple(Sample(second=float(i + 1), tps=1000.0 + (i % 7)) for i in range(40))
        for _ in range(3):
            db.add_point(run_id, PointResult(spec=spec, status="ok", started_at=T0, ended_at=T0, command=("pgbench",),
                                             exit_code=0, stdout="", stderr="",
                                             measurement=Measurement(tps=1003.0), samples=samples))
    calls: list[str] = []
    real_series, real_sums = Store.tps_series, Store.system_sums

    def series(self, ids):
        calls.append("samples")
        return real_series(self, ids)

    def sums(self, starts):
        calls.append("system_samples")
        return real_sums(self, starts)

    monkeypatch.setattr(Store, "tps_series", series)
    monkeypatch.setattr(Store, "system_sums", sums)
    with Store(store) as db:
        first = analysis.load(db)
        assert calls == ["samples", "system_samples"]  # one batch for all three points
        assert len(first) == 3 and all(r.steady_tps and r.samples == 40 for r in first)
        again = analysis.load(db)
        assert calls == ["samples", "system_samples"]  # cached: no series read
        assert [r.steady_tps for r in again] == [r.steady_tps for r in first]
    monkeypatch.setattr(analysis, "ESTIMATOR_VERSION", analysis.ESTIMATOR_VERSION + 1)
    with Store(store) as db:
        analysis.load(db)
    assert calls.count("samples") == 2  # a new estimator recomputes


HISTORIC = sorted((Path(__file__).resolve().parent.parent / "fixtures" / "stores").glob("v*.db"),
                  key=lambda p: int(p.stem[1:]))


def test_there_is_a_historic_store_of_every_released_schema_version():
    versions = [int(p.stem[1:]) for p in HISTORIC]
    assert versions == list(range(1, len(versions) + 1)) and len(versions) >= 9


@pytest.mark.parametrize("path", HISTORIC, ids=lambda p: p.stem)
def test_every_historic_store_migrates_and_reads(path, tmp_path):
    """Stores written by each released schema (made by that version's own code: see
    tests/fixtures/stores/README.md) open, migrate to today's and read back alike."""
    from dbarena.stats import analysis

    copy = tmp_path / path.name
    shutil.copy(path, copy)
    before = sqlite3.connect(copy)
    assert before.execute("PRAGMA user_version").fetchone()[0] == int(path.stem[1:])
    counts = [before.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in ("runs", "points", "samples")]
    tps = before.execute("SELECT id, tps FROM points ORDER BY id").fetchall()
    before.close()
    with Store(copy) as db:
        assert db.version == SCHEMA_VERSION
        assert [db.db.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in ("runs", "points", "samples")] \
            == counts
        assert db.db.execute("SELECT id, tps FROM points ORDER BY id").fetchall() == tps
        # The views of today's schema (12 made them, 14 made them again with p90 and p99.9).
        shown = [d[0] for d in db.db.execute("SELECT * FROM v_points LIMIT 0").description]
        assert {"latency_p90_ms", "latency_p999_ms"} <= set(shown)
        rows = analysis.load(db)
        assert rows and all(r.config_key for r in rows)
        assert any(r.steady_tps for r in rows if r.samples)
        groups = analysis.summaries(rows)
        assert groups and all(g.n >= 1 for g in groups)


def test_a_store_file_removed_or_replaced_under_a_writer_is_not_written_into_the_void(tmp_path):
    """SQLite writes on into the file it holds open: once the path names another file
    (`mv`, a copy restored) or none, what it wrote would be read by nobody. Each write
    checks first, and says so in one line."""
    from dbarena.errors import StoreUnwritable

    path = tmp_path / "r.db"
    ok = PointResult(spec=SPEC, status="ok", started_at=T0, ended_at=T0, command=("pgbench",), exit_code=0,
                     stdout="", stderr="", measurement=Measurement(tps=1.5, transactions=3, failed_transactions=None))
    with Store(path) as db:
        run_id = db.begin_run(_run_info())
        db.add_point(run_id, ok)
        shutil.copy(path, tmp_path / "copy.db")
        (tmp_path / "copy.db").replace(path)
        with pytest.raises(StoreUnwritable) as replaced:
            db.add_point(run_id, ok)
        path.unlink()
        with pytest.raises(StoreUnwritable) as removed:
            db.finish_run(run_id, "finished")
    assert str(replaced.value) == f"store {path} cannot be written: {path} was replaced by another file since " \
                                  f"dbarena opened it"
    assert str(removed.value) == f"store {path} cannot be written: {path} was removed since dbarena opened it"
