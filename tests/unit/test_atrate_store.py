"""Fixed-rate points of a real store (tests/fixtures/stores/fixed-rate-three-labels.db:
pgbench TPC-B and sysbench read-only at 200 TPS offered, two sessions a label; a and b
one configuration, async the same with synchronous_commit off) compared by their p95
latency: every figure derived from the stored runs' p95, the A/A pair never faster or
slower, the real difference found where it is (commits that wait for the WAL's flush),
and the views (compare, the report's decisions, serve's /diff) in one voice."""

from __future__ import annotations

import html
import json
import shutil
import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from conftest import invoke
from dbarena.report import data
from dbarena.stats import analysis, metric
from dbarena.store.database import Store
from test_serve import client

STORE = Path(__file__).resolve().parent.parent / "fixtures" / "stores" / "fixed-rate-three-labels.db"


@pytest.fixture
def store(tmp_path: Path) -> Path:
    copy = tmp_path / STORE.name
    shutil.copy(STORE, copy)
    return copy


def _json(capsys: pytest.CaptureFixture[str], *args: str) -> Any:
    status, out, err = invoke([*args, "--json"], capsys)
    assert status == 0, err
    return json.loads(out)


def test_each_side_is_the_mean_over_sessions_of_its_runs_p95(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    points = _json(capsys, "results", "--store", str(store))
    by: dict[tuple[str, str], dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    for p in points:
        assert p["status"] == "ok" and p["target_tps"] == 200.0 and p["transactions"] >= 200
        by[(p["label"], p["workload"])][p["run_id"]].append(p["latency_p95_ms"])
    rows = _json(capsys, "compare", "a", "b", "--store", str(store))
    assert {r["workload"] for r in rows} == {"pgbench-tpcb", "sysbench-read-only"}
    for r in rows:
        assert (r["metric"], r["offered_tps"], r["lower_is_better"]) == (metric.P95, 200.0, True)
        for side, label in (("a_mean", "a"), ("b_mean", "b")):
            sessions = by[(label, r["workload"])]
            assert r[side] == pytest.approx(statistics.fmean(statistics.fmean(v) for v in sessions.values()))
        # One configuration as two labels: never faster or slower.
        assert r["verdict"] not in ("faster", "slower"), r
        assert r["ratio_ci_low"] < 1 < r["ratio_ci_high"], r


def test_commits_that_do_not_wait_for_the_wal_have_a_lower_p95_at_the_same_rate(
        store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = {r["workload"]: r for r in _json(capsys, "compare", "a", "async", "--about", "settings", "--store",
                                             str(store))}
    tpcb, reads = rows["pgbench-tpcb"], rows["sysbench-read-only"]
    assert tpcb["verdict"] == "faster" and tpcb["ratio_ci_high"] < 1, tpcb
    assert tpcb["verdict_text"].startswith("19.7 % lower p95 latency: faster (significant, p = ")
    # A read-only workload commits nothing to wait for.
    assert reads["verdict"] not in ("faster", "slower"), reads
    status, out, err = invoke(["compare", "a", "async", "--about", "settings", "--store", str(store)], capsys)
    assert status == 0, err
    flat = " ".join(out.split())
    assert "postgres pgbench-tpcb alone is 19.7 % lower in p95 latency: faster" in flat
    # Why: the server's own samples name the wait the setting removes.
    assert "IO:WALSync 0 % of active-backend samples (async) against 50 % of active-backend samples (a)" in flat
    assert "† p95 latency at 200 TPS offered (ms; lower is better" in flat


def test_the_reports_decisions_and_diff_say_what_compare_says(store: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    printed = _json(capsys, "compare", "a", "b", "--store", str(store))
    with Store(store, readonly=True) as db:
        report = data.build(analysis.load(db), db.runs(), baseline="a", labels=["a", "b"])
    (line,) = [d for d in report.decisions if d.label == "b" and d.workload == "pgbench-tpcb"]
    assert line.offered_tps == 200.0 and line.verdict not in ("faster", "slower")
    assert "p95 latency at 200 TPS offered" in line.text
    # Its table of the levels at the rate: compare's ratio, interval and verdict for b.
    rates = {r.workload: r for r in report.rate_levels if r.label == "b"}
    for c in printed:
        row = rates[c["workload"]]
        assert (row.ratio_to_baseline, row.ratio_ci_low, row.ratio_ci_high, row.verdict_text) == \
            (pytest.approx(c["ratio"]), pytest.approx(c["ratio_ci_low"]), pytest.approx(c["ratio_ci_high"]),
             c["verdict_text"])
        assert row.p95_ms == pytest.approx(c["b_mean"]) and row.offered_tps == 200.0
    # What each run carried of the rate, as pgbench and sysbench printed it.
    points = _json(capsys, "results", "--store", str(store))
    for row in report.rate_levels:
        tps = [p["tps"] for p in points if (p["label"], p["workload"]) == (row.label, row.workload)]
        assert row.achieved_tps == pytest.approx(statistics.fmean(tps)), row
    # /diff of a's first run against b's first: one session a side, each lent the spread
    # of the other sessions of the configuration; its rows name the rate.
    with client(store) as browser:
        page = browser.get("/diff?before=1&after=3")
    assert page.status_code == 200
    text = html.unescape(page.text)
    assert text.count("p95_ms (at 200 TPS offered)") == len(printed)
    assert "faster" not in text.split("Levels both measured")[1].split("<details>")[0]
