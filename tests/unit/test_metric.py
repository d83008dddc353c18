"""One metric per tool in every view (stats/metric.py): mysqlslap is judged by the
seconds it took to run its queries, lower is better, wherever its figure is read:
summaries, comparisons and their verdicts, the decision, the report and its exports."""

from __future__ import annotations

import csv
import io
import json
from datetime import datetime, timezone

import pytest

from dbarena.model import Measurement, PointResult, PointSpec, RunInfo
from dbarena.report import data, export
from dbarena.report import decision as decision_text
from dbarena.stats import analysis, decision, metric
from dbarena.store.database import Store

T0 = datetime(2026, 11, 21, 10, 0, tzinfo=timezone.utc)


def test_what_the_tool_printed_decides_the_metric():
    assert metric.of_point(Measurement(tps=10.0, qps=200.0)) == metric.TPS
    assert metric.of_point(Measurement(tps=None, qps=3802.3, run_avg_s=0.263)) == metric.SECONDS
    assert metric.of_point(Measurement(tps=None, qps=3802.3, run_avg_s=None)) == metric.QPS
    assert metric.lower_is_better(metric.SECONDS) and not metric.lower_is_better(metric.TPS)
    assert metric.figure(Measurement(tps=None, run_avg_s=0.263, qps=3802.3)) == 0.263
    assert metric.shown(0.263, metric.SECONDS) == "0.263 s" and metric.shown(6442.84, metric.TPS) == "6,442.8"
    assert "lower is better" in metric.MEANING[metric.SECONDS]


@pytest.fixture
def slap(tmp_path):
    """mysqlslap on two machines, three sessions (runs) of both levels each: fast takes 0.5
    and 0.2 s, slow 0.8 and 0.5 s (each session 1 % apart)."""
    db = Store(tmp_path / "slap.db")
    for label, levels in (("fast", {1: 0.5, 4: 0.2}), ("slow", {1: 0.8, 4: 0.5})):
        for session in range(3):
            run_id = db.begin_run(RunInfo(label=label, host=label, engine="mysql", target="mysql://b@127.0.0.1:1/b",
                                          started_at=T0, server_version="10.11.6-MariaDB", tool_versions={},
                                          options={"targets": {}}, host_facts={}, target_facts={}))
            for n, seconds in levels.items():
                spec = PointSpec(engine="mysql", workload="mysqlslap", threads=n, clients=n, duration_s=0,
                                 params=(("iterations", 1), ("queries", 1000)), repeat=0)
                took = seconds * (1 + 0.01 * (session - 1))
                db.add_point(run_id, PointResult(
                    spec=spec, status="ok", started_at=T0, ended_at=T0, command=("mysqlslap",), exit_code=0,
                    stdout="", stderr="", measurement=Measurement(qps=1000 / took, queries=1000, run_avg_s=took,
                                                                  run_min_s=took, run_max_s=took)))
            db.finish_run(run_id, "finished")
    yield db
    db.close()


def test_summaries_and_comparisons_are_of_seconds_and_fewer_is_faster(slap):
    rows = analysis.load(slap)
    assert {r.metric for r in rows} == {"seconds"} and all(r.lower_is_better for r in rows)
    assert sorted({r["repeat"] for r in (p.as_json() for p in rows)}) == [1]  # JSON counts from 1
    groups = {(g.label, g.threads): g for g in analysis.summaries(rows)}
    assert groups[("fast", 4)].mean == pytest.approx(0.2) and groups[("fast", 4)].metric == "seconds"
    compared = {r.threads: r for r in analysis.compare(rows, "slow", "fast")}
    assert compared[4].ratio == pytest.approx(0.4) and compared[4].lower_is_better
    assert compared[4].verdict == "faster" and compared[4].verdict_text.startswith("60.0 % fewer seconds: faster")
    assert analysis.compare(rows, "fast", "slow")[0].verdict == "slower"
    # The decision in speed: + is faster; 1 / geomean(0.625, 0.4) = 2.0.
    (d,) = decision.decide(analysis.compare(rows, "slow", "fast"))
    assert d.verdict == decision.FASTER and d.ratio == pytest.approx(2.0) and d.metric == "seconds"
    assert d.levels == (decision.LevelRatio(1, pytest.approx(1.6)), decision.LevelRatio(4, pytest.approx(2.5)))


def test_the_report_and_its_exports_say_the_same(slap):
    report = data.build(analysis.load(slap), slap.runs(), baseline="slow", at_threads=None)
    (section,) = report.sections
    rows = {(r.label, r.threads): r for r in section.rows}
    # The level rows' verdicts are of the same seconds as their ratio.
    assert rows[("fast", 4)].ratio_to_baseline == pytest.approx(0.4) and rows[("fast", 4)].verdict == "faster"
    (d,) = report.decisions
    assert d.verdict == decision.FASTER and d.text.startswith("fast is 100.0 % faster than slow")
    exported = json.loads(export.to_json(report))
    assert exported["decisions"][0]["metric"] == "seconds" and exported["decisions"][0]["verdict"] == "faster"
    table = list(csv.DictReader(io.StringIO(export.to_csv(report))))
    assert {(r["metric"], r["tps"]) for r in table} == {("seconds", "")}
    assert {r["verdict"] for r in table if r["label"] == "fast"} == {"faster"}
    md = decision_text.markdown(report.decisions, report.overall)
    assert "| mysql | mysqlslap | +100.0 % |" in md and "of 1 / seconds, so that + is faster" in md
