"""Every figure over repeats (stats/repeats.py), the columns that tell rows apart
(report/differing.py) and how `results --summary` shows both.

The store is made from real outputs: two sysbench 1.0.17 runs of oltp_read_write on
AWS (holdout-2/nidmgh-sysbench-clouddb in tests/fixtures/external-truth), imported
through the CLI. Their author published the mean over the two runs of the printed TPS,
QPS and p95 at each thread count; those must come back, named as means of printed
figures, never as a percentile of the pooled transactions.
"""

from __future__ import annotations

import csv
import io
import json
import math
import statistics
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import invoke
from points import point
from dbarena.report import differing
from dbarena.stats import repeats

AWS = Path(__file__).resolve().parent.parent / "fixtures" / "external-truth" / "holdout-2" / "nidmgh-sysbench-clouddb"


def test_over_repeats_labels_each_figure_with_what_it_is():
    rows = [point(point_id=1, tps=10.0, qps=200.0, latency_p95_ms=5.0, latency_p99_ms=7.0, histogram=False),
            point(point_id=2, tps=14.0, qps=280.0, latency_p95_ms=6.0, latency_p99_ms=None, histogram=False),
            point(point_id=3, tps=12.0, qps=None, latency_p95_ms=9.0, histogram=True)]
    found = repeats.over_repeats(rows)
    assert list(found) == ["tps", "qps", "latency_p95_ms", "latency_p99_ms"]
    tps = found["tps"].as_dict()
    assert (tps["n"], tps["median"], tps["mean"], tps["min"], tps["max"]) == (3, 12.0, 12.0, 10.0, 14.0)
    assert tps["stdev"] == pytest.approx(2.0)
    assert tps["median_is"] == "median of printed TPS over 3 runs"
    # A figure two of three points printed is over those two, and says so.
    assert found["qps"].n == 2 and found["qps"].mean == 240.0
    assert found["latency_p99_ms"].as_dict()["mean_is"] == "mean of printed p99 (ms) over 1 run"
    assert found["latency_p99_ms"].stdev is None
    # One point's percentile came from its transactions, the others' as printed.
    assert found["latency_p95_ms"].source == "printed or computed"
    assert repeats.over_repeats([rows[2]])["latency_p95_ms"].source == "computed"
    # TPS is never "computed": only percentiles are, from a histogram.
    assert repeats.over_repeats([rows[2]])["tps"].source == "printed"
    flat = repeats.flat({k: v.as_dict() for k, v in found.items()})
    assert list(flat) == list(repeats.FLAT_FIELDS)
    assert flat["qps_mean"] == 240.0 and flat["run_avg_s_median"] is None


def _row(**facts):
    config = {"clients": 4, "params": {"scale": 100}, "duration_s": 600, "warmup_s": 0}
    config.update(facts.pop("config", {}))
    return point(**{"label": "a", "engine": "postgres", "workload": "pgbench-tpcb", "threads": 4, "variant": "",
                    "config_key": "k", **facts, "config": config})


def test_only_the_facts_that_tell_rows_apart_get_a_column():
    headers = lambda rows, shown=(): [c.header for c in differing.columns(rows, shown)]  # noqa: E731
    # Clients that follow threads tell no rows apart.
    assert headers([_row(threads=2, config={"clients": 2}), _row(threads=4)]) == []
    assert headers([_row(config_key="k1"), _row(config={"params": {"scale": 1000}}, config_key="k2"),
                    _row(config={"params": {"scale": 10000}}, config_key="k3")]) == ["dataset"]
    assert headers([_row(config_key="k1"), _row(config={"clients": 8, "duration_s": 300}, config_key="k2")]) \
        == ["clients", "duration"]
    # Already in the table: not again.
    assert headers([_row(config_key="k1"), _row(config={"clients": 8}, config_key="k2")], ("clients",)) == []
    # What no column shows (tool options) still tells them apart: the key's digest.
    assert headers([_row(config_key="k1"), _row(config_key="k2")]) == ["config"]
    cell = differing.columns([_row(config_key="k1"),
                              _row(config={"params": {"tables": 10, "table_size": 100000}}, config_key="k2")])[0].cell
    assert cell(_row(config={"params": {"tables": 10, "table_size": 100000}})) == "10 tables x 100,000 rows"


@pytest.fixture(scope="module")
def aws(tmp_path_factory):
    store = tmp_path_factory.mktemp("aws") / "aws.db"
    from dbarena.cli import main

    for f in ("aws-2kiops-sysBench_result0", "aws-2kiops-sysBench_result1"):
        with pytest.raises(SystemExit) as done:
            main(["import", str(AWS / f), "--label", "aws", "--engine", "postgres", "--workload",
                  "sysbench-read-write", "--store", str(store)])
        assert done.value.code in (0, None)
    return str(store)


def _out(argv: list[str], capsys) -> str:
    code, out, err = invoke(argv, capsys)
    assert code == 0, err
    return out


def test_summary_gives_every_published_figure_named(aws, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")
    groups = json.loads(_out(["results", "--summary", "--json", "--store", aws], capsys))
    two = next(g for g in groups if g["threads"] == 2)
    # The author's table (published/AWS_PG15_Sysbench.md): 2 threads, TPS 244.96, QPS
    # 4899.12, P95 11.96 ms: means over the two runs of what sysbench printed.
    figures = two["over_repeats"]
    assert figures["tps"]["mean"] == pytest.approx(244.955) and figures["tps"]["n"] == 2  # published 244.96
    assert figures["qps"]["mean"] == pytest.approx(4899.12)
    assert figures["latency_p95_ms"]["mean"] == pytest.approx(11.96)
    assert figures["latency_p95_ms"]["mean_is"] == "mean of printed p95 (ms) over 2 runs"
    # No histograms: the summary's own p95 (of all transactions) is not made up.
    assert two["latency_p95_ms"] is None and "no pooled percentiles" in two["latency_pooled"]

    text = _out(["results", "--summary", "--store", aws], capsys)
    assert "11.960\u2021" in text and "\u2021 median of the percentile each run printed" in text
    shown = _out(["results", "--summary", "--figures", "--store", aws], capsys)
    assert "printed p95 (ms)" in shown and "4,899.120" in shown

    table = list(csv.DictReader(io.StringIO(_out(["results", "--summary", "--csv", "--store", aws], capsys))))
    first = next(r for r in table if r["threads"] == "2")
    assert float(first["qps_mean"]) == pytest.approx(4899.12) and first["latency_p95_ms_n"] == "2"


def test_figures_needs_summary_and_one_format(aws, capsys):
    from conftest import error_line

    code, _, err = invoke(["results", "--figures", "--store", aws], capsys)
    assert code == 2 and "--figures goes with --summary" in error_line(err)
    code, _, err = invoke(["results", "--json", "--csv", "--store", aws], capsys)
    assert code == 2 and "not both" in error_line(err)


def test_a_duration_the_output_did_not_print_is_said_where_it_came_from(aws, capsys, monkeypatch):
    """sysbench printed no command line: the asked 600 s comes from its last interval
    report (600.5517 s measured at 64 threads), and the table says so once."""
    monkeypatch.setenv("COLUMNS", "100")
    points = json.loads(_out(["results", "--json", "--store", aws], capsys))
    at64 = [p for p in points if p["threads"] == 64]
    assert [p["duration_s"] for p in at64] == [600, 600]
    assert sorted(p["source"]["duration"]["measured_s"] for p in at64) == [600.0647, 600.5517]
    text = _out(["results", "--store", aws], capsys)
    assert "duration of 14 imported points: taken from the tool's last interval report" in " ".join(text.split())
    assert "600.55" in _out(["results", "--wide", "--store", aws], capsys)


def test_warnings_count_interval_reports_in_their_own_unit():
    """sysbench reporting every 60 s: a dip is one interval of 60 s, not "1 second(s)"."""
    from dbarena.stats import steadystate

    assert steadystate.reports(1, 60.0) == "1 interval of 60 s"
    assert steadystate.reports(3, 1.0) == "3 seconds" and steadystate.reports(1, 1.0) == "1 second"
    seconds = [60.0 * k for k in range(1, 11)]
    values = [900.0, 1000.0, 1010.0, 990.0, 1005.0, 200.0, 1000.0, 995.0, 1002.0, 998.0]
    found = steadystate.steady_state(seconds, values, 600)
    (dips,) = [f for f in found.flags if f.code == steadystate.Warning_.DIPS]
    assert dips.message.startswith("1 interval of 60 s with throughput far below the rest")
    assert steadystate.report_interval(seconds) == 60.0 and steadystate.report_interval([5.0]) == 1.0


# estimate.exact_stdev: statistics.stdev's own float (what the figures over repeats
# print, byte for byte in the golden exports), from integer sums instead of fractions.
_FINITE = st.floats(allow_nan=False, allow_infinity=False)


@settings(max_examples=400, deadline=None)
@given(st.lists(_FINITE, min_size=2, max_size=40)
       | st.lists(st.floats(min_value=0, max_value=1e6, allow_nan=False), min_size=2, max_size=40)
       | st.lists(st.sampled_from([0.0, -0.0, 5e-324, 1e-300, 1.5, 1e300, -2.25]), min_size=2, max_size=12))
def test_exact_stdev_is_statistics_stdev_bit_for_bit(values):
    from dbarena.stats.estimate import exact_stdev

    try:
        expected = statistics.stdev(values)
    except OverflowError:  # (a variance beyond the floats: statistics says so, and so must this)
        with pytest.raises(OverflowError):
            exact_stdev(values)
        return
    assert exact_stdev(values).hex() == expected.hex()


def test_exact_stdev_leaves_what_is_not_finite_floats_to_statistics():
    from dbarena.stats.estimate import exact_stdev

    def outcome(stdev, values):
        try:
            return stdev(values).hex()
        except Exception as exc:  # noqa: BLE001 - whatever statistics raises (3.11: AttributeError on NaN)
            return type(exc)

    for values in ([1.0, math.nan, 2.0], [1.0, math.inf], [1, 2, 4], [1.0], [], [2.0, 3]):
        assert outcome(exact_stdev, values) == outcome(statistics.stdev, values)
