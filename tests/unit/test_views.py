"""The SQL views (views.py) that dashboards read say what dbarena's own summaries and
comparisons say: the same figure per point, the same pooling per label and key."""

from __future__ import annotations

import math
import shutil
from datetime import datetime, timezone
from pathlib import Path

import pytest

from dbarena.stats import analysis
from dbarena.store import views
from dbarena.store import database as store_mod  # its SCHEMA_VERSION is what Store migrates to
from dbarena.store.merge import merge
from dbarena.store.migrations import MIGRATIONS, SCHEMA_VERSION
from dbarena.model import Measurement, PointResult, PointSpec, RunInfo
from dbarena.store.database import Store

STORES = Path(__file__).resolve().parent.parent / "fixtures" / "stores"


def two_hosts(folder: Path) -> Path:
    """A store with one historic store's runs twice, as measured on two machines."""
    path = folder / "all.db"
    shutil.copy(STORES / "v9.db", folder / "arm.db")
    shutil.copy(STORES / "v9.db", folder / "x86.db")
    with Store(folder / "x86.db") as db:
        facts = {**db.runs()[0].host_facts, "hostname": "x86-box", "cpu_model": "Xeon"}
        with db.db:
            fingerprint = db._host(facts)
            db.db.execute("UPDATE runs SET label = 'x86', host = 'x86-box', host_fingerprint = ?,"
                          " uuid = 'x86-' || uuid", (fingerprint,))
    with Store(folder / "arm.db") as db, db.db:
        db.db.execute("UPDATE runs SET label = 'arm'")
    with Store(path) as db:
        merge(db, folder / "arm.db")
        merge(db, folder / "x86.db")
    return path


def rows(db: Store, sql: str) -> list[dict]:
    cur = db.db.execute(sql)
    names = [d[0] for d in cur.description]
    return [dict(zip(names, r)) for r in cur.fetchall()]


def test_views_exist_in_both_dialects_with_the_same_names():
    for schema in (12, views.SESSIONS_SINCE - 1, SCHEMA_VERSION):
        # (v_sessions and v_levels came with schema 24.)
        for name in views.NAMES if schema >= views.SESSIONS_SINCE else views.NAMES[:4]:
            assert f"CREATE VIEW {name} AS" in views.sqlite(schema)
            assert f"CREATE VIEW {name} AS" in views.postgresql(schema)
        assert ("v_levels" in views.sqlite(schema)) == (schema >= views.SESSIONS_SINCE)
    with pytest.raises(ValueError):
        views.sqlite(11)


def test_a_released_migration_keeps_the_views_of_its_schema():
    # Migration 12 runs in stores of schema 11 and older today still: its views may not
    # name the columns that 13 adds, and the views it made must stay as they were.
    assert "latency_p90_ms" not in MIGRATIONS[11] and "latency_p50_ms" not in MIGRATIONS[11]
    assert views.sqlite(13) == views.sqlite(12) != views.sqlite(14) != views.sqlite(15)
    assert "better" not in views.sqlite(14) and "p.repeat + 1" not in views.postgresql(14)


PERCENTILES = ["latency_p50_ms", "latency_p90_ms", "latency_p95_ms", "latency_p99_ms", "latency_p999_ms"]
T0 = datetime(2026, 11, 21, 10, 0, tzinfo=timezone.utc)


def columns(db: Store, name: str) -> list[str]:
    return [d[0] for d in db.db.execute(f"SELECT * FROM {name} LIMIT 0").description]


def add_point(db: Store, **latencies: float) -> int:
    run_id = db.begin_run(RunInfo(label="l", host="h", engine="postgres", target="t", started_at=T0,
                                  server_version="15", tool_versions={}, options={}, host_facts={}))
    spec = PointSpec(engine="postgres", workload="pgbench-select-only", threads=1, clients=1, duration_s=10)
    return db.add_point(run_id, PointResult(spec=spec, status="ok", started_at=T0, ended_at=T0, command=("pgbench",),
                                            exit_code=0, stdout="", stderr="",
                                            measurement=Measurement(tps=100.0, latency_avg_ms=1.0, **latencies)))


def test_points_view_shows_every_latency_percentile_the_points_table_holds(tmp_path):
    with Store(tmp_path / "r.db") as db:
        shown = [c for c in columns(db, "v_points") if c.startswith("latency_")]
        stored = {c for c in columns(db, "points") if c.startswith("latency_p")}
    assert shown == ["latency_avg_ms", *PERCENTILES, "latency_max_ms"]
    assert stored == set(PERCENTILES)  # a new percentile column belongs in the view too


def test_a_schema_13_store_migrates_to_views_with_p90_and_p999(tmp_path, monkeypatch):
    path = tmp_path / "r.db"
    # A store as dbarena wrote it at schema 13 (its views without p50, p90 and p99.9),
    # holding a point with every percentile.
    monkeypatch.setattr(store_mod, "SCHEMA_VERSION", 13)
    figures = dict(zip(PERCENTILES, (1.5, 2.5, 3.5, 4.5, 5.5)))
    with Store(path) as db:
        assert db.version == 13
        old = add_point(db, **figures)
        assert not set(PERCENTILES[:2] + PERCENTILES[-1:]) & set(columns(db, "v_points"))
    monkeypatch.undo()
    with Store(path) as db:
        assert db.version == SCHEMA_VERSION
        assert [c for c in columns(db, "v_points") if c in PERCENTILES] == PERCENTILES
        new = add_point(db, latency_p90_ms=7.0, latency_p999_ms=9.0)
        viewed = rows(db, f"SELECT point_id, {', '.join(PERCENTILES)} FROM v_points ORDER BY point_id")
        # The views that read v_points were made again with it, and still answer.
        analysis.load(db)  # the points' values
        assert rows(db, "SELECT n, mean FROM v_summaries") == [{"n": 2, "mean": 100.0}]
        assert rows(db, "SELECT COUNT(*) AS n FROM v_comparisons") == [{"n": 0}]
    assert viewed == [{"point_id": old, **figures},
                      {"point_id": new, **dict.fromkeys(PERCENTILES), "latency_p90_ms": 7.0,
                       "latency_p999_ms": 9.0}]


def test_points_view_has_no_value_until_dbarena_derived_it_then_the_same(tmp_path):
    path = two_hosts(tmp_path)
    with Store(path) as db:
        before = rows(db, "SELECT point_id, value, value_source FROM v_points")
        assert before and all(r["value"] is None and r["value_source"] is None for r in before)
        loaded = {r.point_id: r for r in analysis.load(db)}
        after = rows(db, "SELECT * FROM v_points")
    assert len(after) == len(loaded)
    for r in after:
        point = loaded[r["point_id"]]
        assert r["value"] == analysis.value(point)
        assert r["value_source"] == (None if point.status != "ok" else
                                     "steady-state mean" if point.steady_tps is not None else "tool")
        assert (r["label"], r["workload"], r["threads"], r["config_key"]) == \
            (point.label, point.workload, point.threads, point.config_key)


def test_summaries_view_pools_as_dbarena_does(tmp_path):
    path = two_hosts(tmp_path)
    with Store(path) as db:
        groups = {(g.label, g.config_key): g for g in analysis.summaries(analysis.load(db))}
        viewed = rows(db, "SELECT * FROM v_summaries")
    assert len(viewed) == len(groups)
    for v in viewed:
        g = groups[(v["label"], v["config_key"])]
        assert (v["n"], v["failed"], v["workload"], v["threads"]) == (g.n, g.failed, g.workload, g.threads)
        if g.n:
            assert v["mean"] == pytest.approx(g.mean, rel=1e-12)
        if g.n > 1:  # these runs had fixed repeats: the plain sample deviation
            assert v["stdev"] == pytest.approx(g.stdev, rel=1e-9)


def test_comparisons_view_pairs_the_same_configuration_on_two_hosts(tmp_path):
    path = two_hosts(tmp_path)
    with Store(path) as db:
        compared = analysis.compare(analysis.load(db), "arm", "x86")
        viewed = rows(db, "SELECT * FROM v_comparisons WHERE a_label = 'arm' AND b_label = 'x86'")
    matched = [c for c in compared if c.ratio is not None]
    assert matched and len(viewed) == len(matched)
    for v in viewed:
        assert v["ratio"] == pytest.approx(1.0)  # the same measurements on both "hosts"
        assert v["a_host"] != v["b_host"] and bool(v["enough_repeats"]) == (min(v["a_n"], v["b_n"]) >= 3)
    assert {(c.workload, c.threads) for c in matched} == {(v["workload"], v["threads"]) for v in viewed}


def test_samples_view_gives_wall_clock_times(tmp_path):
    path = two_hosts(tmp_path)
    with Store(path) as db:
        first = rows(db, "SELECT s.time, s.second, p.started_at FROM v_samples s JOIN points p ON p.id = s.point_id"
                         " ORDER BY s.point_id, s.second LIMIT 1")[0]
    from datetime import datetime, timedelta

    start = datetime.fromisoformat(first["started_at"]).replace(tzinfo=None)
    assert datetime.fromisoformat(first["time"]) == start + timedelta(seconds=math.floor(first["second"]))


DEMO = STORES / "demo-seed-a-quick.db"  # `make demo`: mysqlslap among its workloads


def test_views_judge_mysqlslap_by_its_seconds_and_count_repeats_from_1(tmp_path):
    shutil.copy(DEMO, tmp_path / "demo.db")
    with Store(tmp_path / "demo.db") as db:
        loaded = {r.point_id: r for r in analysis.load(db)}
        viewed = rows(db, "SELECT * FROM v_points")
        groups = rows(db, "SELECT workload, threads, metric, better, mean FROM v_summaries "
                          "WHERE workload = 'mysqlslap'")
        samples = rows(db, "SELECT DISTINCT repeat FROM v_samples")
    assert len(viewed) == len(loaded) == 20
    for v in viewed:
        point = loaded[v["point_id"]]
        # The figure and the repeat number dbarena's own outputs show.
        assert (v["metric"], v["value"], v["repeat"]) == (point.metric, analysis.value(point),
                                                           point.as_json()["repeat"])
        assert v["repeat"] == 1 and v["better"] == ("lower" if v["workload"] == "mysqlslap" else "higher")
    slap = [v for v in viewed if v["workload"] == "mysqlslap"]
    assert len(slap) == 2 and all(v["metric"] == "seconds" and v["value"] == v["run_avg_s"] for v in slap)
    assert sorted((g["threads"], g["metric"], g["better"], g["mean"]) for g in groups) == \
        sorted((v["threads"], "seconds", "lower", v["run_avg_s"]) for v in slap)
    assert samples == [{"repeat": 1}]


def test_sessions_and_levels_views_say_what_the_summaries_and_the_estimate_over_sessions_say(tmp_path):
    path = two_hosts(tmp_path)
    with Store(path) as db:
        labels = [r.label for r in db.runs()]
        analysis.lent_sessions(db, sorted(set(labels)))  # (summarises every run of them)
        made = analysis.session_summaries(analysis.load(db))
        sessions_rows = rows(db, "SELECT * FROM v_sessions")
        groups = {(g.label, g.config_key): g for g in analysis.summaries(analysis.load(db))}
        levels = rows(db, "SELECT * FROM v_levels")
    assert len(sessions_rows) == len(made) > 0
    by_key = {(s.run_id, s.config_key): s for s in made}
    for v in sessions_rows:
        s = by_key[(v["run_id"], v["config_key"])]
        assert (v["label"], v["runs"], v["failed"], v["estimator"]) == \
            (s.label, len(s.values), s.failed, analysis.ESTIMATOR_VERSION)
        if s.values:
            assert v["mean"] == pytest.approx(sum(s.values) / len(s.values), rel=1e-12)
        if len(s.values) > 1:
            mean = sum(s.values) / len(s.values)
            assert v["stdev"] == pytest.approx(math.sqrt(sum((x - mean) ** 2 for x in s.values)
                                                         / (len(s.values) - 1)), rel=1e-9)
    assert len(levels) == len(groups)
    for v in levels:
        g = groups[(v["label"], v["config_key"])]
        assert (v["sessions"], v["workload"], v["threads"]) == (g.sessions, g.workload, g.threads)
        if g.estimate is not None:  # the mean over sessions every verdict rests on
            assert v["mean"] == pytest.approx(g.estimate.mean, rel=1e-12)
