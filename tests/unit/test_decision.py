"""The decision: per-level ratios combined into one figure per workload and one per
label, checked against figures computed by hand."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
from points import comparison, point
from scipy import stats as scipy_stats

from dbarena.records import AnalysedPoint, LevelComparison
from dbarena.stats import decision


def _row(threads: int, ratio: float | None, log_se: float | None, log_df: float | None, n: int = 3,
         workload: str = "pgbench-tpcb", metric: str = "tps") -> LevelComparison:
    """A level's row as analysis.compare makes it, its verdict from its own interval (n
    sessions a side, each of one run)."""
    verdict = None
    if ratio is not None and log_se is not None and log_df is not None:
        significant = abs(math.log(ratio)) / log_se > scipy_stats.t.ppf(0.975, log_df)
        faster = (ratio > 1) != (metric == "seconds")
        verdict = ("faster" if faster else "slower") if significant else "inconclusive"
    return comparison(a="big", b="small", engine="postgres", workload=workload, threads=threads, metric=metric,
                      ratio=ratio, log_se=log_se, log_df=log_df, a_n=n, b_n=n, a_sessions=n, b_sessions=n,
                      verdict=verdict, verdict_text="not comparable: params.scale 1 vs 10" if ratio is None else "x")


def test_two_levels_combine_as_computed_by_hand():
    (d,) = decision.decide([_row(1, 0.5, 0.1, 4), _row(2, 0.6, 0.1, 4)])
    # By hand: the mean of the log ratios; the levels share their sessions, so its
    # standard error is that of perfectly correlated levels, the mean of theirs (0.1, not
    # sqrt(0.1^2 + 0.1^2) / 2 as if independent), with the fewest degrees of freedom (4).
    mean = (math.log(0.5) + math.log(0.6)) / 2
    se = (0.1 + 0.1) / 2
    q = scipy_stats.t.ppf(0.975, 4)
    assert d.ratio == pytest.approx(math.sqrt(0.3))
    assert d.ci_low == pytest.approx(math.exp(mean - q * se)) and d.ci_high == pytest.approx(math.exp(mean + q * se))
    assert (round(d.ci_low, 4), round(d.ci_high, 4)) == (0.4149, 0.7230)
    assert d.verdict == decision.SLOWER and d.text.startswith("small is 45.2 % slower than big (95 % CI -58.5 % to")
    assert "3 sessions a side" in d.text
    assert d.levels == (decision.LevelRatio(1, 0.5), decision.LevelRatio(2, 0.6))


def test_one_session_a_side_is_inconclusive_and_says_what_to_run():
    (d,) = decision.decide([_row(1, 0.9, None, None, n=1), _row(2, 1.0, 0.05, 4)])
    assert d.verdict == decision.NO_VERDICT and d.ci_low is None and d.ratio == pytest.approx(math.sqrt(0.9))
    assert d.text.startswith("inconclusive: one session a side at 1 of 2 level(s)")
    assert "between-session variation unknown" in d.text and "--sessions 2" in d.text


def test_a_workload_none_of_whose_levels_alone_differs_is_inconclusive():
    """Issue 52's alpha/beta pair: four levels each inconclusive (p 0.17-0.32) were one
    "slower" workload once combined as independent. Combined as levels of the same
    sessions, and guarded, the workload is inconclusive."""
    rows = [_row(t, 0.8, 0.12, 4) for t in (1, 2, 3, 4)]
    assert all(r.verdict == "inconclusive" for r in rows)
    (d,) = decision.decide(rows)
    assert d.verdict == decision.INCONCLUSIVE and d.ci_low is not None and d.ci_low < 1
    # Its interval is no narrower than the narrowest level's: the levels share their sessions.
    assert math.log(d.ci_high / d.ci_low) >= 2 * scipy_stats.t.ppf(0.975, 4) * 0.12 - 1e-9


def test_not_comparable_and_worst_first_and_overall():
    rows = [_row(1, 1.2, 0.05, 10, workload="fast"), _row(1, 0.7, 0.05, 10, workload="slow"),
            _row(1, None, None, None, workload="other")]
    decided = decision.decide(rows)
    assert [d.workload for d in decided] == ["slow", "fast", "other"]
    assert decided[-1].verdict == decision.NOT_COMPARABLE and "params.scale" in decided[-1].text
    line = decision.overall(decided)
    assert line is not None and line.ratio == pytest.approx(math.sqrt(1.2 * 0.7))
    # Two workloads of log se 0.05 each, measured in the same sessions: the se of their
    # mean is 0.05 (perfectly correlated), with 10 degrees of freedom.
    assert line.ci_high / line.ci_low == pytest.approx(math.exp(2 * scipy_stats.t.ppf(0.975, 10) * 0.05))
    assert line.verdict == decision.INCONCLUSIVE
    assert line.text.startswith("across 2 workload(s): inconclusive: -8.3 %")
    assert line.text.endswith("but postgres slow alone is 30.0 % slower")


def test_a_difference_within_the_noise_is_no_difference_only_when_its_interval_lies_within_the_margin():
    """Not significant, with an interval inside +-5 %: no difference. Not significant,
    with one reaching past it: inconclusive, never "no difference"."""
    (d,) = decision.decide([_row(1, 1.002, 0.005, 6), _row(2, 0.999, 0.005, 6)])
    assert d.verdict == decision.SAME and 0.95 < d.ci_low < 1 < d.ci_high < 1.05
    assert d.text.startswith("no difference between") and "within ±5%" in d.text
    (d,) = decision.decide([_row(1, 1.02, 0.05, 6), _row(2, 0.99, 0.05, 6)])
    assert d.verdict == decision.INCONCLUSIVE and d.ci_low < 0.95 and d.ci_high > 1.05
    assert d.text.startswith("inconclusive between") and "reaches past ±5%" in d.text


def test_no_difference_overall_is_inconclusive_while_one_workload_is_significantly_slower():
    """The issue's case: the geometric mean across workloads shows nothing while one
    workload alone is significantly 27.5 % slower; the line says so, not "no difference"."""
    rows = [_row(1, 0.725, 0.02, 6, workload="slow"), _row(1, 1.38, 0.3, 6, workload="noisy")]
    decided = decision.decide(rows)
    assert {d.workload: d.verdict for d in decided}["slow"] == decision.SLOWER
    line = decision.overall(decided)
    assert line is not None and line.verdict == decision.INCONCLUSIVE
    assert line.text.startswith("across 2 workload(s): inconclusive: ")
    assert line.text.endswith("but postgres slow alone is 27.5 % slower")


def _point(label: str, **fields) -> AnalysedPoint:
    return point(**{"label": label, "engine": "postgres", "workload": "pgbench-tpcb", "threads": 2, "status": "ok",
                    "samples": 60, "hardware_threads_usable": 2, **fields})


COMPETE = "the machine had 0 % idle CPU while the server used 0.6 of 2 hardware threads: the load generator competes with the database for CPU; run it on another machine"


@pytest.mark.parametrize("fields, said", [
    ({"cpu_busy_pct": 99.0, "server_cpu": 1.9, "loadgen_cpu": 0.1}, "server CPU saturated (1.9 of 2 hardware threads)"),
    # The load-generator warning's own reason, never "saturated" at 0.65 of a core a thread.
    ({"cpu_busy_pct": 100.0, "server_cpu": 0.6, "loadgen_cpu": 1.3,
      "warnings": [{"code": "load-generator-bound", "message": COMPETE}]},
     "load generator competes for the CPU (the machine had 0 % idle CPU while the server used 0.6 of 2 "
     "hardware threads)"),
    ({"cpu_busy_pct": 100.0, "server_cpu": 0.2, "loadgen_cpu": 1.8,
      "warnings": [{"code": "load-generator-bound", "message": "the load generator used 90% of a core per thread: "
                                                                "it may be the bottleneck"}]},
     "load generator saturated (1.8 cores for 2 thread(s))"),
    ({"cpu_busy_pct": 40.0, "cpu_iowait_pct": 35.0, "server_cpu": 0.5}, "I/O (iowait 35 %)"),
    ({"cpu_busy_pct": 30.0, "server_cpu": 0.4}, "no single bound (CPU 30 % busy, server 0.4 cores)"),
    ({"cpu_busy_pct": 99.0, "samples": 2}, "too few samples to tell"),
])
def test_what_bound_a_side_is_said_with_its_figure(fields, said):
    assert decision.bound([_point("big", **fields)]) == said


def test_a_significant_difference_says_what_bound_each_side_at_its_farthest_level():
    points = [_point("big", cpu_busy_pct=99.0, server_cpu=1.9),
              _point("small", cpu_busy_pct=100.0, server_cpu=0.2, loadgen_cpu=1.7,
                     warnings=[{"code": "load-generator-bound", "message": "the load generator used 85% of a core "
                                                                           "per thread: it may be the bottleneck"}]),
              _point("big", cpu_busy_pct=10.0, threads=1)]
    (d,) = decision.decide([_row(1, 0.9, 0.02, 8), _row(2, 0.5, 0.02, 8)], points)
    assert d.verdict == decision.SLOWER
    assert d.why == ("at 2 thread(s), small: load generator saturated (1.7 cores for 2 thread(s)); "
                     "big: server CPU saturated (1.9 of 2 hardware threads)")
    (same,) = decision.decide([_row(1, 1.0, 0.05, 8)], points)
    assert same.why is None  # no difference: nothing to explain


def test_each_point_s_bound_from_the_server_s_view_is_said_beside_the_machine_s():
    points = [_point("big", cpu_busy_pct=99.0, server_cpu=1.9, bound="locks"),
              _point("big", cpu_busy_pct=99.0, server_cpu=1.9, bound="machine CPU"),
              _point("big", cpu_busy_pct=99.0, server_cpu=1.9, bound="locks")]
    assert decision.bound(points) == "server CPU saturated (1.9 of 2 hardware threads); per point: locks 2/3, " \
                                     "machine CPU 1/3"


def test_the_why_names_the_server_s_figure_that_differs_most():
    points = [_point("big", cpu_busy_pct=99.0, server_cpu=1.9, server_figures={"wait.CPU": 0.9, "blks_read": 0.5}),
              _point("small", cpu_busy_pct=99.0, server_cpu=1.9,
                     server_figures={"wait.CPU": 0.2, "wait.Lock:transactionid": 0.7, "blks_read": 0.5})]
    (d,) = decision.decide([_row(1, 0.9, 0.02, 8), _row(2, 0.5, 0.02, 8)], points)
    assert d.why.endswith("; the server's figure that differs most: Lock:transactionid 70 % of active-backend "
                          "samples (small) against 0 % of active-backend samples (big)")


def test_no_overall_verdict_that_no_workload_supports():
    """Two workloads each within their noise (+6 %, +8 %), combined as if independent:
    the combined interval excludes 1, but runs of one session share its drift, so the
    overall line reports the figure without a verdict."""
    rows = [_row(1, 1.06, 0.04, 6, workload="one"), _row(1, 1.08, 0.04, 6, workload="two")]
    decided = decision.decide(rows)
    assert [d.verdict for d in decided] == [decision.INCONCLUSIVE, decision.INCONCLUSIVE]
    line = decision.overall(decided)
    # Combined as workloads of the same sessions, the interval is as wide as theirs.
    assert line is not None and line.ci_low < 1 < line.ci_high
    assert line.verdict == decision.INCONCLUSIVE
    # Had the combination been narrower, the guard would still hold the verdict back.
    narrow = [replace(d, log_se=0.005) for d in decided]
    line = decision.overall(narrow)
    assert line is not None and line.ci_low > 1
    assert line.verdict == decision.NO_VERDICT and "no workload alone shows a difference" in line.text


def test_mysqlslap_seconds_are_decided_as_speed_so_fewer_seconds_is_faster():
    # b took 0.8 and 0.5 of a's seconds: 1.25 and 2 times a's speed, geometric mean sqrt(2.5).
    rows = [_row(1, 0.8, 0.05, 10, workload="mysqlslap", metric="seconds"),
            _row(2, 0.5, 0.05, 10, workload="mysqlslap", metric="seconds")]
    (d,) = decision.decide(rows)
    assert d.metric == "seconds" and d.ratio == pytest.approx(math.sqrt(2.5))
    assert d.levels == (decision.LevelRatio(1, pytest.approx(1.25)), decision.LevelRatio(2, pytest.approx(2.0)))
    assert d.verdict == decision.FASTER and d.text.startswith("small is 58.1 % faster than big")
    assert decision.INVERSE in d.text
    # Combined with a throughput workload like with like: + is faster in both.
    line = decision.overall([d, *decision.decide([_row(1, 1.25, 0.05, 10)])])
    assert line is not None and line.ratio > 1 and line.verdict == decision.FASTER


def test_a_reason_for_no_verdict_is_said_once_for_the_rows_it_holds_for():
    from dbarena.report import decision as shown

    rows = [_row(t, 0.9 + w / 100, None, None, n=1, workload=f"w{w}") for w in range(24) for t in (1, 2)]
    rows += [_row(1, None, None, None, workload="other")]
    decided = decision.decide(rows)
    grouped = shown.reasons(decided)
    # 24 workloads of one run a side at both levels: one reason, without each one's
    # own change (the change column has it); the not comparable one apart.
    assert [(text, len(held)) for text, held in grouped] == [
        ("inconclusive: one session a side at 2 of 2 level(s); between-session variation unknown: run both with "
         "--sessions 2", 24),
        ("not comparable: params.scale 1 vs 10", 1)]
    lines = shown.lines(decided, [])
    assert " ".join(line.strip() for line in lines).count(
        "24 workloads: inconclusive: one session a side at 2 of 2 level(s); between-session variation unknown: "
        "run both with --sessions 2") == 1
    assert "  postgres other: not comparable: params.scale 1 vs 10" in lines
    assert sum("--sessions 2" in line for line in lines) == 1
    # The HTML table shows the first SHOWN_ROWS rows; the rest are folded below them.
    page = shown.html(decided, [])
    head, folded = page.split("<details>")
    assert head.count("<tr class=") == shown.SHOWN_ROWS and folded.count("<tr class=") == 25 - shown.SHOWN_ROWS
    assert "<summary>5 more rows" in folded and page.split('<ul class="why">')[1].count("--sessions 2") == 1


def test_workloads_that_differ_both_ways_are_mixed_across_workloads():
    rows = [_row(1, 1.107, 0.01, 4, workload="fast"), _row(1, 0.95, 0.005, 4, workload="slow")]
    decided = decision.decide(rows)
    assert {d.workload: d.verdict for d in decided} == {"fast": decision.FASTER, "slow": decision.SLOWER}
    line = decision.overall(decided)
    assert line is not None and line.verdict == decision.INCONCLUSIVE
    assert line.text.startswith("across 2 workload(s): mixed: +2.5 %")
    assert line.text.endswith("but postgres fast faster and postgres slow slower")
