"""The SQL views (views.py) that dashboards read say what dbarena's own summaries and
comparisons say: the same figure per point, the same pooling per label and key."""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import pytest

from dbarena import analysis, views
from dbarena.store import Store

STORES = Path(__file__).resolve().parent.parent / "fixtures" / "stores"


def two_hosts(folder: Path) -> Path:
    """A store with one historic store's runs twice, as measured on two machines."""
    path = folder / "all.db"
    shutil.copy(STORES / "v9.db", folder / "arm.db")
    shutil.copy(STORES / "v9.db", folder / "x86.db")
    from dbarena import store as store_mod

    with Store(folder / "x86.db") as db:
        facts = {**db.runs()[0]["host_facts"], "hostname": "x86-box", "cpu_model": "Xeon"}
        with db.db:
            fingerprint = db._host(facts)
            db.db.execute("UPDATE runs SET label = 'x86', host = 'x86-box', host_fingerprint = ?,"
                          " uuid = 'x86-' || uuid", (fingerprint,))
    with Store(folder / "arm.db") as db, db.db:
        db.db.execute("UPDATE runs SET label = 'arm'")
    with Store(path) as db:
        store_mod.merge(db, folder / "arm.db")
        store_mod.merge(db, folder / "x86.db")
    return path


def rows(db: Store, sql: str) -> list[dict]:
    cur = db.db.execute(sql)
    names = [d[0] for d in cur.description]
    return [dict(zip(names, r)) for r in cur.fetchall()]


def test_views_exist_in_both_dialects_with_the_same_names():
    for name in views.NAMES:
        assert f"CREATE VIEW {name} AS" in views.SQLITE and f"CREATE VIEW {name} AS" in views.POSTGRESQL


def test_points_view_has_no_value_until_dbarena_derived_it_then_the_same(tmp_path):
    path = two_hosts(tmp_path)
    with Store(path) as db:
        before = rows(db, "SELECT point_id, value, value_source FROM v_points")
        assert before and all(r["value"] is None and r["value_source"] is None for r in before)
        loaded = {r["point_id"]: r for r in analysis.load(db)}
        after = rows(db, "SELECT * FROM v_points")
    assert len(after) == len(loaded)
    for r in after:
        point = loaded[r["point_id"]]
        assert r["value"] == analysis.value(point)
        assert r["value_source"] == (None if point["status"] != "ok" else
                                     "steady-state mean" if point["steady_tps"] is not None else "tool")
        assert (r["label"], r["workload"], r["threads"], r["config_key"]) == \
            (point["label"], point["workload"], point["threads"], point["config_key"])


def test_summaries_view_pools_as_dbarena_does(tmp_path):
    path = two_hosts(tmp_path)
    with Store(path) as db:
        groups = {(g["label"], g["config_key"]): g for g in analysis.summaries(analysis.load(db))}
        viewed = rows(db, "SELECT * FROM v_summaries")
    assert len(viewed) == len(groups)
    for v in viewed:
        g = groups[(v["label"], v["config_key"])]
        assert (v["n"], v["failed"], v["workload"], v["threads"]) == (g["n"], g["failed"], g["workload"], g["threads"])
        if g["n"]:
            assert v["mean"] == pytest.approx(g["mean"], rel=1e-12)
        if g["n"] > 1:  # these runs had fixed repeats: the plain sample deviation
            assert v["stdev"] == pytest.approx(g["stdev"], rel=1e-9)


def test_comparisons_view_pairs_the_same_configuration_on_two_hosts(tmp_path):
    path = two_hosts(tmp_path)
    with Store(path) as db:
        compared = analysis.compare(analysis.load(db), "arm", "x86")
        viewed = rows(db, "SELECT * FROM v_comparisons WHERE a_label = 'arm' AND b_label = 'x86'")
    matched = [c for c in compared if c["ratio"] is not None]
    assert matched and len(viewed) == len(matched)
    for v in viewed:
        assert v["ratio"] == pytest.approx(1.0)  # the same measurements on both "hosts"
        assert v["a_host"] != v["b_host"] and bool(v["enough_repeats"]) == (min(v["a_n"], v["b_n"]) >= 3)
    assert {(c["workload"], c["threads"]) for c in matched} == {(v["workload"], v["threads"]) for v in viewed}


def test_samples_view_gives_wall_clock_times(tmp_path):
    path = two_hosts(tmp_path)
    with Store(path) as db:
        first = rows(db, "SELECT s.time, s.second, p.started_at FROM v_samples s JOIN points p ON p.id = s.point_id"
                         " ORDER BY s.point_id, s.second LIMIT 1")[0]
    from datetime import datetime, timedelta

    start = datetime.fromisoformat(first["started_at"]).replace(tzinfo=None)
    assert datetime.fromisoformat(first["time"]) == start + timedelta(seconds=math.floor(first["second"]))
