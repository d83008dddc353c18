"""The read side of --slo in the report and `dbarena serve` (issue 54), on a store of real
runs (tests/fixtures/stores/capacity-two-labels.db: real pgbench, two labels, a search
at 1 and 2 threads each, prices): the open-loop points are steps of their closed-loop
point's search, not series of their own; each search's latency-throughput curve holds
every rate tried, judged as the capacity judged it; the capacity, its price per 1,000
TPS at the objective and per core beside the closed-loop figures; the decision compares
the capacities and says so, one session a side staying inconclusive; the exports and
their schema; the report's charts and Decide's, a point's page."""

from __future__ import annotations

import csv
import html
import io
import json
import math
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from dbarena.report import assemble, charts, chartspecs, export, schemas, tables
from dbarena.report.curves import Curve
from dbarena.stats import analysis, capacity, decision
from dbarena.store.database import Store
from test_serve import client

STORE = Path(__file__).resolve().parents[1] / "fixtures" / "stores" / "capacity-two-labels.db"
SLO = "p99 <= 5 ms"
PRICES = {"alpha": 0.10, "beta": 0.08}


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> Path:
    copy = tmp_path_factory.mktemp("capacity") / "capacity.db"
    shutil.copy(STORE, copy)
    return copy


@pytest.fixture(scope="module")
def report(stored: Path) -> assemble.data.Report:
    with Store(stored, readonly=True) as db:
        return assemble.build(db, assemble.Selection())


@pytest.fixture(scope="module")
def summary(stored: Path) -> dict[tuple[str, int], dict[str, Any]]:
    """`results --summary`'s capacity of each closed-loop group: (label, threads) -> it."""
    with Store(stored, readonly=True) as db:
        groups = analysis.summaries(analysis.load(db), histograms=db.latency_histograms)
    return {(s.label, s.threads): s.capacity for s in groups if s.capacity is not None}


def _curve(report: assemble.data.Report, label: str, threads: int) -> Curve:
    (section,) = report.sections
    (found,) = [c for c in section.curves if (c.label, c.threads) == (label, threads)]
    return found


def test_a_searchs_open_loop_points_are_its_curve_not_series_of_their_own(report, stored):
    assert report.labels == ["alpha", "beta"]
    (section,) = report.sections
    assert section.labels == ["alpha", "beta"]
    # One level row per label and level: the closed-loop points'.
    assert sorted((r.label, r.threads) for r in report.rows) == [("alpha", 1), ("alpha", 2), ("beta", 1), ("beta", 2)]
    with Store(stored, readonly=True) as db:
        points = db.points()
    closed = {(p.label, p.threads): p for p in points if capacity.offered(p.options) is None}
    for r in report.rows:
        assert r.printed_tps == pytest.approx(closed[(r.label, r.threads)].tps)
    # Every open-loop point in exactly one curve, at its offered rate.
    opened = [p for p in points if capacity.offered(p.options) is not None]
    assert len(opened) == 32
    assert sorted(i for c in section.curves for p in c.points for i in p.point_ids) == \
        sorted(p.point_id for p in opened)
    for p in opened:
        c = _curve(report, p.label, p.threads)
        (at,) = [q for q in c.points if p.point_id in q.point_ids]
        assert at.offered == capacity.offered(p.options)


def test_each_rate_is_judged_as_the_capacity_judged_it_and_the_capacity_sits_on_its_curve(report, stored, summary):
    with Store(stored, readonly=True) as db:
        points = {p.point_id: p for p in db.points()}
    objective = capacity.parse("p99=5ms")
    for (label, threads), found in summary.items():
        c = _curve(report, label, threads)
        assert (c.slo, c.statistic, c.limit_ms) == (SLO, "p99", 5.0)
        assert [p.offered for p in c.points] == sorted(p.offered for p in c.points)
        assert c.capacity == found  # the summary's own, as `results --summary --json` gives it
        for p in c.points:
            (only,) = p.point_ids  # one repeat a rate
            stored_point = points[only]
            judged = capacity.judge(objective, p.offered, capacity.of_point(stored_point))
            assert (p.meets, p.why, p.tps) == (judged.meets, judged.why, stored_point.tps)
            assert p.latency_p99_ms == pytest.approx(stored_point.latency_p99_ms)
            assert p.latency_ms == p.latency_p99_ms
            # The search's judgement, seen on the curve: within the limit where it met.
            assert p.meets == (p.latency_p99_ms <= 5.0 and p.tps >= min(0.99 * p.offered,
                                                                       p.offered - 3 * math.sqrt(p.offered / 4)))
        met, failed = c.bracket()
        at = {p.offered: p for p in c.points}
        assert at[met].meets and at[met].tps == pytest.approx(c.capacity_tps)
        assert failed is not None and not at[failed].meets and failed > met
        # Below the capacity's rate every rate met; nothing above it counts.
        assert all(p.meets for p in c.points if p.offered < met)
        assert c.closed is not None and c.closed.tps is not None and c.closed.tps > c.capacity_tps


def test_each_level_has_its_capacity_its_price_per_1000_tps_there_and_per_core(report, summary):
    for r in report.rows:
        found = summary[(r.label, r.threads)]
        assert r.slo == SLO and r.capacity_tps == found["tps"]
        assert (r.capacity_ci_low, r.capacity_ci_high) == (None, None)  # one session: no interval between sessions
        price = PRICES[r.label]
        assert r.price_per_hour == price
        assert r.price_per_1000_tps_at_slo == pytest.approx(price / (found["tps"] / 1000))
        # Beside it, price per 100 TPS at saturation: of the closed-loop throughput.
        assert r.price_per_100_tps == pytest.approx(price / (r.tps / 100))
        assert r.physical_cores and r.capacity_per_core == pytest.approx(found["tps"] / r.physical_cores)
        assert r.hardware_threads and r.capacity_per_thread == pytest.approx(found["tps"] / r.hardware_threads)


def test_the_decision_compares_the_capacities_says_so_and_one_session_a_side_stays_inconclusive(report, summary):
    (d,) = report.decisions
    assert (d.label, d.baseline, d.slo) == ("beta", "alpha", SLO)
    ratios = {t: summary[("beta", t)]["tps"] / summary[("alpha", t)]["tps"] for t in (1, 2)}
    assert [(level.threads, level.ratio) for level in d.levels] == [(t, pytest.approx(ratios[t])) for t in (1, 2)]
    assert d.ratio == pytest.approx(math.sqrt(ratios[1] * ratios[2]))
    # +60 % between two runs of one configuration on one machine: no verdict, and why: the
    # neighbours' CPU during the two searches (their offered-rate points') set them apart,
    # and there is one session a side anyway.
    assert d.verdict == decision.NO_VERDICT and d.ci_low is None
    assert d.text.startswith(f"inconclusive on the capacity at {SLO}")
    assert "the sides ran under different interference" in d.text and "during alpha" in d.text
    (line,) = report.overall
    assert line.verdict == decision.NO_VERDICT and line.slo == SLO
    assert line.text.startswith(f"inconclusive on the capacity at {SLO} across 1 workload(s)")
    # What the same work costs: of the capacities, within the objective.
    assert d.price is not None and f"within {SLO}" in d.price and f"capacity at {SLO} beta / alpha" in d.price
    assert json.loads(export.to_json(report))["decisions"][0]["slo"] == SLO


def test_the_tables_give_the_capacity_and_its_price_beside_the_closed_loop_figures(report):
    (section,) = report.sections
    found = tables.capacity(section)
    assert found is not None and found.title == "Capacity at the objective"
    by_level = {(r[0], r[1]): dict(zip(found.headers, r)) for r in found.rows}
    assert len(by_level) == 4
    alpha = by_level[("alpha", "1")]
    c = _curve(report, "alpha", 1)
    met, failed = c.bracket()
    assert alpha["objective"] == SLO and alpha["capacity TPS (95 % CI)"] == f"{c.capacity_tps:,.0f}"
    assert (alpha["met at (offered)"], alpha["missed at (offered)"]) == (f"{met:,.0f}", f"{failed:,.0f}")
    assert alpha["rates tried"] == "8"
    price = tables.price(section, report)
    assert price is not None
    assert price.headers[4:6] == ["per hour per 100 TPS at saturation", f"per hour per 1,000 TPS at {SLO}"]
    rows = {(r[0], r[1]): r for r in price.rows}
    level = next(r for r in report.rows if (r.label, r.threads) == ("beta", 2))
    assert rows[("beta", "2")][5] == f"{level.price_per_1000_tps_at_slo:.3g} USD"
    core = tables.per_core(section)
    assert core is not None and core.headers[-2:] == [f"capacity at {SLO} per physical core", "per hardware thread"]


def test_the_json_export_fits_its_schema_and_carries_the_curves(report):
    document = json.loads(export.to_json(report))
    errors = list(Draft202012Validator(schemas.schema("report")).iter_errors(document))
    assert not errors, errors[0].message
    (section,) = document["sections"]
    assert [(c["label"], c["threads"]) for c in section["curves"]] == [("alpha", 1), ("alpha", 2), ("beta", 1),
                                                                       ("beta", 2)]
    first = section["curves"][0]
    assert first["slo"] == SLO and len(first["points"]) == 8 and "point_ids" not in first["points"][0]
    assert set(first["points"][0]) == {"offered", "tps", "latency_p50_ms", "latency_p95_ms", "latency_p99_ms",
                                       "latency_ms", "meets", "why", "n"}
    row = document["rows"][0]
    assert row["slo"] == SLO and row["price_per_1000_tps_at_slo"] > row["price_per_100_tps"] > 0
    table = list(csv.DictReader(io.StringIO(export.to_csv(report))))
    assert table[0]["slo"] == SLO and float(table[0]["capacity_tps"]) == pytest.approx(row["capacity_tps"])


def test_the_reports_curve_chart_draws_every_rate_the_objective_and_the_capacity(report):
    (section,) = report.sections
    drawn = charts.capacity_curves(section)
    assert sorted(drawn) == ["capacity_1", "capacity_2"]
    svg = drawn["capacity_1"]
    assert svg.startswith("<svg") and "objective p99 &lt;= 5 ms" in svg
    tips = [html.unescape(t) for t in re.findall(r"<title>([^<]*)</title>", svg)]
    c = _curve(report, "alpha", 1)
    for p in c.points:
        said = f"alpha, 1 threads: offered {p.offered:,.0f} TPS, achieved {p.tps:,.0f} TPS"
        assert any(t.startswith(said) and ("met" if p.meets else "missed") + f" {SLO}: {p.why}" in t for t in tips)
    assert any("closed loop" in t for t in tips)
    assert f"capacity {c.capacity_tps:,.0f}" in svg
    # The label toggles reach the curves too.
    assert charts.label_class("alpha") in svg and charts.label_class("beta") in svg


def test_decides_curve_specs_link_each_rate_to_its_point(report):
    (section,) = report.sections
    tps, latency = chartspecs.capacity(section, 2)
    assert latency["ylog"] is True and latency["hlines"] == [{"y": 5.0, "text": f"objective {SLO}"}]
    assert tps["xmin"] == 0 and tps["xmax"] == latency["xmax"]
    c = _curve(report, "beta", 2)
    (series,) = [s for s in tps["series"] if s["name"] == "beta"]
    assert [p[0] for p in series["points"]] == [p.offered for p in c.points]
    assert [p[3] for p in series["points"]] == [f"/point/{p.point_ids[0]}" for p in c.points]
    assert [p[4] for p in series["points"]] == [0 if p.meets else 1 for p in c.points]
    (star,) = [s for s in tps["series"] if s["name"] == "beta closed loop"]
    assert star["star"] and star["line"] is False and star["points"][0][3] == f"/point/{c.closed.point_ids[0]}"
    met, _ = c.bracket()
    assert any(m["x"] == met and m["label"] == f"beta: {c.capacity_tps:,.0f}" for m in tps["marks"])
    json.dumps(tps, allow_nan=False)  # what the page's attribute holds


def _specs(page: str) -> list[dict[str, Any]]:
    return [json.loads(html.unescape(t)) for t in re.findall(r'<div class="chart" data-chart="([^"]*)"', page)]


def test_an_open_loop_points_page_says_its_offered_rate_and_whether_it_met_the_objective(stored, report):
    c = _curve(report, "alpha", 1)
    met, failed = c.bracket()
    at = {p.offered: p for p in c.points}
    shown = {}
    with client(stored) as served:
        for rate in (met, failed):
            found = served.get(f"/point/{at[rate].point_ids[0]}")
            assert found.status_code == 200
            shown[rate] = html.unescape(found.text)
        assert c.closed is not None
        closed_page = html.unescape(served.get(f"/point/{c.closed.point_ids[0]}").text)
    assert f"{met:.0f} TPS offered" in shown[met] and f"{SLO}: met ({at[met].why})" in shown[met]
    assert f"{failed:.0f} TPS offered" in shown[failed] and f"{SLO}: missed ({at[failed].why})" in shown[failed]
    assert "started the search of its capacity" in closed_page and "TPS offered" not in closed_page


def test_decide_draws_each_searchs_curve_and_prices_the_capacity(stored, report):
    with client(stored) as served:
        page = served.get("/decide", params={"per": "price"})
    assert page.status_code == 200
    specs = _specs(page.text)
    titles = [s["title"] for s in specs]
    assert any(t.startswith("postgres pgbench-select-only at 1 threads: latency against offered rate")
               for t in titles)
    assert sum("achieved TPS against offered rate" in t for t in titles) == 2
    text = html.unescape(page.text)
    assert f"per hour per 1,000 TPS at {SLO}" in text and f"pgbench-select-only (capacity at {SLO})" in text
    # The sweep's levels open closed-loop points only.
    (sweep,) = [s for s in specs if s["x"] == "threads"]
    opened = {i for p in _curve(report, "alpha", 1).points for i in p.point_ids}
    assert not any(p[3] == f"/point/{i}" for s in sweep["series"] for p in s["points"] for i in opened)
