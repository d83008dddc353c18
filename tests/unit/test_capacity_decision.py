"""The decision where its levels compare capacities at a latency objective (--slo: rows
of analysis.compare with `slo` set): the same figures, intervals and verdicts as for
closed-loop throughput (the A/A rules hold: nothing here turns an inconclusive into a
verdict), in words that name the capacity; capacities and closed-loop throughputs never
combined into one figure; the views' lines name the objective."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
from points import comparison
from scipy import stats as scipy_stats

from dbarena.records import LevelComparison
from dbarena.report import decision as decision_text
from dbarena.stats import decision

SLO = "p99 <= 5 ms"


def _row(threads: int, ratio: float, log_se: float | None, log_df: float | None = 6, n: int = 3,
         workload: str = "pgbench-select-only", slo: str | None = SLO) -> LevelComparison:
    """A level's row as analysis.compare makes it (its verdict from its own interval)."""
    verdict = None
    if log_se is not None and log_df is not None:
        significant = abs(math.log(ratio)) / log_se > scipy_stats.t.ppf(0.975, log_df)
        verdict = ("faster" if ratio > 1 else "slower") if significant else "inconclusive"
    return comparison(a="big", b="small", engine="postgres", workload=workload, threads=threads, metric="tps",
                      ratio=ratio, log_se=log_se if verdict else None, log_df=log_df if verdict else None, a_n=n,
                      b_n=n, a_sessions=n, b_sessions=n, verdict=verdict, verdict_text="x", slo=slo)


SCENARIOS = {
    "faster": [_row(1, 1.25, 0.03), _row(2, 1.30, 0.03)],
    "slower": [_row(1, 0.80, 0.03), _row(2, 0.75, 0.03)],
    "same": [_row(1, 1.01, 0.005, 20), _row(2, 0.99, 0.005, 20)],
    "inconclusive": [_row(1, 1.10, 0.2), _row(2, 0.95, 0.2)],
    "one session a side": [_row(1, 1.60, None, n=1), _row(2, 1.50, None, n=1)],
    # Issue 52's A/A pair: four levels, each inconclusive.
    "four inconclusive levels": [_row(t, 0.8, 0.12, 4) for t in (1, 2, 3, 4)],
}


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_capacities_are_decided_by_the_same_rules_only_the_words_name_them(name: str) -> None:
    rows = SCENARIOS[name]
    (of_capacity,) = decision.decide(rows)
    (of_throughput,) = decision.decide([replace(r, slo=None) for r in rows])
    for field in ("verdict", "ratio", "ci_low", "ci_high", "p_value", "levels", "log_se", "log_df"):
        assert getattr(of_capacity, field) == getattr(of_throughput, field), field
    assert of_capacity.slo == SLO and of_throughput.slo is None
    assert SLO in of_capacity.text and SLO not in of_throughput.text
    assert of_capacity.as_dict()["slo"] == SLO and "slo" not in of_throughput.as_dict()
    line, plain = decision.overall([of_capacity]), decision.overall([of_throughput])
    assert line is not None and plain is not None
    assert (line.verdict, line.ratio, line.ci_low, line.ci_high) == (plain.verdict, plain.ratio, plain.ci_low,
                                                                     plain.ci_high)
    assert line.slo == SLO and SLO in line.text


def test_a_capacity_verdict_says_what_each_carries_within_the_objective() -> None:
    (d,) = decision.decide(SCENARIOS["faster"])
    assert d.verdict == decision.FASTER
    assert d.text.startswith(f"small carries {(d.ratio - 1) * 100:.1f} % more than big at {SLO} (its capacity "
                             "there; 95 % CI +")
    assert d.text.endswith("3 sessions a side)")
    (d,) = decision.decide(SCENARIOS["slower"])
    assert d.verdict == decision.SLOWER and f"% less than big at {SLO}" in d.text
    (d,) = decision.decide(SCENARIOS["same"])
    assert d.text.startswith(f"no difference in capacity at {SLO} between small and big")
    (d,) = decision.decide(SCENARIOS["one session a side"])
    assert d.verdict == decision.NO_VERDICT
    assert d.text.startswith(f"inconclusive on the capacity at {SLO}: one session a side at 2 of 2 level(s)")


def test_capacities_and_closed_loop_throughput_are_never_one_figure() -> None:
    """A level where only one side searched compares closed-loop throughput: a line of its
    own, not a factor of the capacities' geometric mean."""
    rows = [_row(1, 1.25, 0.03), _row(2, 1.30, 0.03), _row(4, 0.90, 0.03, slo=None)]
    decided = decision.decide(rows)
    assert sorted((d.slo or "", [level.threads for level in d.levels]) for d in decided) == \
        [("", [4]), (SLO, [1, 2])]
    (capacities,) = [d for d in decided if d.slo]
    assert capacities.ratio == pytest.approx(math.sqrt(1.25 * 1.30))
    line = decision.overall(decided)
    assert line is not None and line.slo is None
    assert line.text.endswith(f"; capacity at {SLO} where searched, closed-loop throughput elsewhere")
    # Its verdict as without the words: the lines' own rules (one faster, one slower: mixed).
    plain = decision.overall(decision.decide([replace(r, slo=None, workload=f"w{r.threads}") for r in rows[1:]]))
    assert plain is not None and line.verdict == plain.verdict == decision.INCONCLUSIVE


def test_the_views_name_the_objective_of_a_capacity_line() -> None:
    decided = decision.decide([*SCENARIOS["faster"], _row(1, 1.0, 0.01, 20, workload="pgbench-tpcb", slo=None)])
    overall = [line for line in (decision.overall(decided),) if line is not None]
    md = decision_text.markdown(decided, overall)
    assert f"| postgres | pgbench-select-only (capacity at {SLO}) |" in md.replace("&lt;", "<")
    assert "| postgres | pgbench-tpcb |" in md
    assert "of each level's capacity ratio" in md
    lines = decision_text.lines(decided, overall, width=300)
    assert any(line.startswith(f"  postgres pgbench-select-only (capacity at {SLO}): +") for line in lines)
    page = decision_text.html(decided, overall)
    assert "pgbench-select-only (capacity at p99 &lt;= 5 ms)" in page
    plain = decision.decide([replace(r, slo=None) for r in SCENARIOS["faster"]])
    assert "capacity" not in decision_text.change_note(plain)


def test_a_side_that_met_the_objective_at_no_rate_is_no_capacity_and_no_throughput_verdict(tmp_path) -> None:
    """Both labels searched at one objective (the real searches of the fixture store) and
    one met it at no offered rate: its level row says so, with no ratio, rather than
    comparing the closed-loop throughputs (what was not asked) as it did."""
    from pathlib import Path

    from dbarena.stats import analysis
    from dbarena.store.database import Store

    path = tmp_path / "cap.db"
    path.write_bytes((Path(__file__).parents[1] / "fixtures" / "stores" / "capacity-two-labels.db").read_bytes())
    with Store(path) as db:
        rows = analysis.load(db)
        groups = analysis.summaries(rows, histograms=db.latency_histograms)
    why = "no offered rate met the objective (the lowest, 4,000 TPS: p99 8.1 ms > 5 ms)"
    unmet = [replace(g, capacity={**g.capacity, "tps": None, "reason": why}, capacity_estimate=None)
             if g.label == "beta" and g.threads == 1 and g.target_tps is None and g.capacity else g for g in groups]
    found = {r.threads: r for r in analysis.compare(rows, "alpha", "beta", groups=unmet)}
    assert found[1].slo == SLO and found[1].ratio is None and found[1].verdict is None
    assert found[1].reason == f"no capacity at {SLO} to compare (beta: {why})"
    assert found[1].a_mean == pytest.approx(8892.928509) and found[1].b_mean is None
    assert found[2].slo == SLO and found[2].ratio is not None  # (the other level's capacities, as before)
    (line,) = decision.decide(found.values())
    assert line.slo == SLO and line.verdict != decision.FASTER and line.verdict != decision.SLOWER
