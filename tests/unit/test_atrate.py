"""Two sides offered one fixed rate (--rate, not a --slo search's step) are compared by
their p95 latency there (stats/atrate.py): each run's p95 one observation, a session's
mean of its runs' one per session, the verdict over sessions as every other; a side
that did not carry the rate is not decided; too few transactions for a p95 count for
nothing; the decision says it in latency; and an A/A pair drawn from one distribution
is called faster or slower no more often than the test's level allows."""

from __future__ import annotations

import random
from typing import Any

from points import point

from dbarena.records import AnalysedPoint
from dbarena.stats import analysis, atrate, decision, metric

RATE = 200.0
CONFIG: dict[str, Any] = {"engine": "postgres", "workload": "pgbench-tpcb", "threads": 2, "clients": 4,
                          "options": {"rate": "200"}}


def _runs(label: str, p95s: list[list[float]], *, first_run: int, tps: float = 200.4, transactions: int = 2000,
          rate: float | None = RATE, slo: dict[str, Any] | None = None) -> list[AnalysedPoint]:
    """A label's points at one configuration: a list of each session's runs' p95 (ms)."""
    out = []
    for s, session in enumerate(p95s):
        for r, p95 in enumerate(session):
            out.append(point(point_id=first_run * 100 + s * 10 + r, run_id=first_run + s, label=label, threads=2,
                             clients=4, duration_s=10, repeat=r, tps=tps, transactions=transactions,
                             latency_p95_ms=p95, target_tps=rate, slo=slo, config=CONFIG, config_key="k200"))
    return out


def test_two_labels_offered_one_rate_are_compared_by_their_p95_over_sessions() -> None:
    rows = [*_runs("a", [[10.0, 10.4], [11.0]], first_run=1), *_runs("b", [[5.0], [5.5, 5.3]], first_run=3)]
    (row,) = analysis.compare(rows, "a", "b")
    assert (row.metric, row.lower_is_better, row.offered_tps) == (metric.P95, True, RATE)
    # Each session's mean of its runs, then the mean of the sessions.
    assert row.a_mean == (10.2 + 11.0) / 2 and row.b_mean == (5.0 + 5.4) / 2
    assert (row.a_n, row.b_n, row.a_sessions, row.b_sessions) == (3, 3, 2, 2)
    assert row.ratio is not None and row.ratio < 0.5 and row.verdict == "faster", row
    assert "lower p95 latency" in row.verdict_text
    assert row.as_json()["offered_tps"] == RATE
    (d,) = decision.decide([row])
    assert d.offered_tps == RATE and d.verdict == decision.FASTER
    assert d.text.startswith("b's p95 latency at 200 TPS offered is 5") and "% lower than a's (95 % CI -" in d.text
    line = decision.overall([d])
    assert line is not None and line.offered_tps == RATE and "p95 latency at 200 TPS offered" in line.text


def test_a_side_that_did_not_carry_the_rate_is_not_decided() -> None:
    rows = [*_runs("a", [[10.0], [11.0]], first_run=1), *_runs("b", [[50.0], [80.0]], first_run=3, tps=150.0)]
    (row,) = analysis.compare(rows, "a", "b")
    assert row.ratio is not None and row.verdict is None
    assert row.reason == f"inconclusive: b achieved 150 of 200 TPS offered (the least of 2) in 2 of 2 run(s) " \
                         f"({atrate.QUEUE})"
    (d,) = decision.decide([row])
    assert d.verdict == decision.NO_VERDICT and atrate.QUEUE in d.text
    line = decision.overall([d])
    assert line is not None and "some did not carry their offered rate" in line.text
    assert "spread between sessions" not in line.text


def test_runs_with_too_few_transactions_for_a_p95_count_for_nothing() -> None:
    few = atrate.NEEDED - 1
    rows = [*_runs("a", [[10.0], [11.0]], first_run=1),
            *_runs("b", [[5.0], [5.5]], first_run=3, transactions=few)]
    (row,) = analysis.compare(rows, "a", "b")
    assert row.ratio is None and row.verdict is None and row.b_n == 0
    assert row.reason is not None and row.reason.startswith("no p95 latency at 200 TPS offered for b (no run with "
                                                            f"{atrate.NEEDED:,} transactions")


def test_a_search_step_is_no_fixed_rate() -> None:
    """An offered rate of a --slo search is compared through the capacity its search found,
    never as a level of its own."""
    slo = {"objective": "p99=5ms"}
    rows = [*_runs("a", [[10.0], [11.0]], first_run=1, slo=slo), *_runs("b", [[5.0], [5.5]], first_run=3, slo=slo)]
    assert analysis.compare(rows, "a", "b") == []


def test_one_session_a_side_has_no_interval_and_says_so() -> None:
    rows = [*_runs("a", [[10.0, 10.1]], first_run=1), *_runs("b", [[5.0, 5.1]], first_run=3)]
    (row,) = analysis.compare(rows, "a", "b")
    assert row.verdict is None and row.ratio_ci_low is None
    (d,) = decision.decide([row])
    assert d.verdict == decision.NO_VERDICT and "one session a side" in d.text


def test_an_aa_pair_is_called_faster_or_slower_no_more_often_than_the_tests_level() -> None:
    """One configuration as two labels, each session's p95 drawn from one log-normal
    (15 % between sessions, 5 % between its runs), 2 sessions of 2 runs a side: the
    share of pairs with a verdict of faster or slower stays near the 5 % the test
    allows (binomial: at 5 %, 400 pairs give more than 8 % with probability 0.005)."""
    rng = random.Random(52)
    called = 0
    pairs = 400
    for _ in range(pairs):
        def sessions() -> list[list[float]]:
            return [[centre * rng.lognormvariate(0, 0.05) for _ in range(2)]
                    for centre in (10 * rng.lognormvariate(0, 0.15) for _ in range(2))]

        (row,) = analysis.compare([*_runs("a", sessions(), first_run=1), *_runs("b", sessions(), first_run=3)],
                                  "a", "b")
        called += row.verdict in ("faster", "slower")
    assert called / pairs <= 0.08, called


def test_a_rate_logs_every_pgbench_transaction_unless_told_otherwise() -> None:
    """pgbench gives percentiles only from its per-transaction log: a point offered a
    rate, judged by its p95, has it on as --slo's do; --latency-sampling still decides."""
    from dbarena.study import arguments

    assert arguments.study_from_args(["--workload", "pgbench-tpcb", "--rate", "100"]).latency_sampling == 1.0
    assert arguments.study_from_args(["--workload", "pgbench-tpcb"]).latency_sampling is None
    assert arguments.study_from_args(["--workload", "pgbench-tpcb", "--rate", "100", "--latency-sampling",
                                      "0.1"]).latency_sampling == 0.1
    assert arguments.study_from_args(["--workload", "pgbench-tpcb", "--rate", "100", "--latency-sampling",
                                      "0"]).latency_sampling is None


def test_history_follows_a_fixed_rates_p95_and_finds_where_it_rose(tmp_path: Any) -> None:
    """Eight nightly runs offered 200 TPS: p95 near 1 ms, then near 2 ms from the fifth
    (a setting changed there). history's series is the p95 at that rate, lower is
    better, and its change point says the latency rose: slower."""
    from datetime import datetime, timedelta, timezone

    from dbarena.model import Measurement, PointResult, PointSpec, RunInfo
    from dbarena.stats import configkey, history
    from dbarena.store.database import Store

    t0 = datetime(2026, 11, 1, tzinfo=timezone.utc)
    host = {"cpu_model": "x", "hardware_threads": 2}
    with Store(tmp_path / "h.db") as db:
        for night in range(8):
            sync = "off" if night < 4 else "on"
            run_id = db.begin_run(RunInfo(
                label="nightly", host="box", engine="postgres", target="postgresql://dbarena@127.0.0.1:1/dbarena",
                started_at=t0 + timedelta(days=night), server_version="17.2", tool_versions={},
                options={"targets": {}}, host_facts=host))
            config = configkey.build(
                engine="postgres", workload="pgbench-tpcb", threads=2, clients=4, duration_s=60, warmup_s=0,
                params={"scale": 1}, options={"rate": "200"}, settings={"synchronous_commit": sync}, variant="",
                server_version="17.2", flavour="postgresql", host=configkey.host_identity(host))
            for repeat, wobble in enumerate((0.97, 1.0, 1.03)):
                p95 = (1.0 if night < 4 else 2.0) * wobble
                spec = PointSpec(engine="postgres", workload="pgbench-tpcb", threads=2, clients=4, duration_s=60,
                                 params=(("scale", 1),), options=(("rate", "200"),), repeat=repeat)
                db.add_point(run_id, PointResult(
                    spec=spec, status="ok", started_at=t0, ended_at=t0, command=("pgbench",), exit_code=0,
                    stdout="", stderr="", measurement=Measurement(tps=200.1, transactions=12006,
                                                                  latency_p95_ms=p95)), config=config)
            db.finish_run(run_id, "finished")
        (series,) = history.build(analysis.load(db), db.runs())
    assert (series.metric, series.offered_tps) == (metric.P95, 200.0)
    assert "at 200 TPS offered" in series.name and series.as_dict()["offered_tps"] == 200.0
    assert [round(r.mean or 0, 3) for r in series.runs] == [1.0] * 4 + [2.0] * 4
    (step,) = series.change_points
    assert step.index == 4 and step.text.startswith("100.0 % higher p95 latency: slower")


def test_an_offered_rate_is_said_as_the_tool_option_has_it() -> None:
    """--rate 2.5 is not "3 TPS offered"; from 100 on, whole TPS with a comma."""
    assert [metric.rate_shown(r) for r in (0.1, 2.5, 50.0, 200.0, 12500.0)] == ["0.1", "2.5", "50", "200", "12,500"]
    rows = [*_runs("a", [[10.0], [11.0]], first_run=1, rate=2.5), *_runs("b", [[5.0], [5.5]], first_run=3, rate=2.5)]
    (row,) = analysis.compare(rows, "a", "b")
    (d,) = decision.decide([row])
    assert "at 2.5 TPS offered" in d.text, d.text
