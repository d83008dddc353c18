"""fleet/combine.py on real outputs: two pgbench runs captured side by side on this
machine against one PostgreSQL (tests/fixtures/together/pgbench/{alpha,beta}: stdout,
stderr with -P 1, the per-transaction log with -R 300, and when each was launched)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from points import point

from dbarena.fleet import combine
from dbarena.fleet.combine import Part
from dbarena.workloads import pgbench, pgbench_log

FIXTURES = Path(__file__).parent.parent / "fixtures" / "together" / "pgbench"
HOSTS = {"alpha": (1, 1), "beta": (1, 2)}  # threads, clients as captured


def _part(name: str) -> Part:
    folder = FIXTURES / name
    measurement, samples = pgbench.read((folder / "stdout.txt").read_text(), (folder / "stderr.txt").read_text())
    logs = sorted(folder.glob("pgbench_log.*"))
    with open(logs[0]) as lines:
        first = combine.first_transaction_start(lines, HOSTS[name][1])
    return Part(host=name, label=name, threads=HOSTS[name][0], clients=HOSTS[name][1],
                launched_at=float((folder / "launched_at.txt").read_text()), first_at=first,
                measurement=measurement, samples=samples, latencies=pgbench_log.read_files(logs))


def _log_rows(name: str) -> np.ndarray:
    return np.loadtxt(sorted((FIXTURES / name).glob("pgbench_log.*"))[0], dtype=np.int64)


def test_split_shares_threads_out_evenly_and_refuses_a_host_without_any():
    assert combine.split(5, 2) == [3, 2] and combine.split(4, 2) == [2, 2] and combine.split(3, 3) == [1, 1, 1]
    assert sum(combine.split(97, 7)) == 97
    with pytest.raises(ValueError, match="1 cannot be split over 2 load generators"):
        combine.split(1, 2)


def test_the_first_transaction_is_the_earliest_start_in_the_whole_log():
    for name in HOSTS:
        rows = _log_rows(name)
        # Every line: completion (epoch s + us) minus latency.
        exact = (rows[:, 4] * 1_000_000 + rows[:, 5] - rows[:, 2]).min() / 1e6
        assert _part(name).first_at == pytest.approx(exact, abs=1e-6)
    assert combine.first_transaction_start(["client_id transaction_no time", "0 1 skipped 0 1795489390 1"]) is None


def test_merged_transactions_are_the_sum_and_the_histogram_is_that_of_the_union_of_the_logs():
    parts = [_part("alpha"), _part("beta")]
    measurement, series, details = combine.combine(parts, duration_s=3)
    assert measurement.transactions == 876 + 912 == sum(p.measurement.transactions for p in parts)
    union = pgbench_log.read_files(sorted(FIXTURES.glob("*/pgbench_log.*")))
    merged = combine.merged_latencies(parts)
    assert merged is not None
    # Byte for byte: merging the hosts' histograms is the histogram of all their transactions.
    assert merged.encode()["hdr"] == union.encode()["hdr"]
    assert (merged.count, merged.sum_us, merged.min_us, merged.max_us) == \
        (union.count, union.sum_us, union.min_us, union.max_us) == (1788, union.sum_us, union.min_us, union.max_us)
    # The average weighted by transactions, the standard deviation pooled: those of the union.
    latencies_ms = np.concatenate([_log_rows(n)[:, 2] for n in HOSTS]) / 1000.0
    assert measurement.latency_avg_ms == pytest.approx(latencies_ms.mean(), abs=0.002)
    assert measurement.latency_stddev_ms == pytest.approx(latencies_ms.std(), rel=0.01)
    together = details["together"]
    assert [(p["host"], p["threads"], p["clients"]) for p in together["split"]] == [("alpha", 1, 1), ("beta", 1, 2)]
    assert [p["transactions"] for p in together["parts"]] == [876, 912]
    assert details["load_generators"] == 2 and measurement.details["load_generators"] == 2


def test_series_are_aligned_on_the_wall_clock_and_summed_over_the_common_window():
    alpha, beta = _part("alpha"), _part("beta")
    assert 0 < beta.launched_at - alpha.launched_at < 0.01  # launched together, beta a hair later
    _, series, details = combine.combine([alpha, beta], duration_s=3)
    common = min(len(alpha.samples), len(beta.samples))
    assert len(series) == common == 2
    for j, sample in enumerate(series):
        assert sample.second == beta.samples[j].second
        assert sample.tps == pytest.approx(alpha.samples[j].tps + beta.samples[j].tps)
        # The interval's average latency over both hosts' transactions.
        expected = ((alpha.samples[j].tps * alpha.samples[j].latency_ms + beta.samples[j].tps
                     * beta.samples[j].latency_ms) / sample.tps)
        assert sample.latency_ms == pytest.approx(expected)
    measurement, _, _ = combine.combine([alpha, beta], duration_s=3)
    assert measurement.tps == pytest.approx(sum(s.tps for s in series) / len(series))
    assert details["together"]["common_window_s"] == 2.0


def test_a_host_a_second_late_falls_out_of_the_common_window():
    alpha, beta = _part("alpha"), _part("beta")
    late = Part(**{**beta.__dict__, "launched_at": alpha.launched_at + 1.0})
    _, series, _ = combine.combine([alpha, late], duration_s=3)
    assert [s.second for s in series] == [1.0, 2.0]
    assert series[0].tps == pytest.approx(alpha.samples[1].tps + late.samples[0].tps)


def test_start_skew_is_the_spread_of_the_first_transactions_and_flagged_above_one_percent():
    alpha, beta = _part("alpha"), _part("beta")
    _, _, details = combine.combine([alpha, beta], duration_s=3)
    skew_ms = details["together"]["start_skew_ms"]
    assert skew_ms == pytest.approx(abs(beta.first_at - alpha.first_at) * 1000, abs=0.001)  # type: ignore[operator]
    assert details["together"]["start_skew_from"] == "first transaction"
    assert details["together"]["start_skew_limit_ms"] == 30.0
    assert details["together"]["start_skew_flagged"] == (skew_ms > 30.0)
    # Without a log, the tools' starts.
    blind = [Part(**{**p.__dict__, "first_at": None}) for p in (alpha, beta)]
    _, _, details = combine.combine(blind, duration_s=3)
    assert details["together"]["start_skew_from"] == "tool start"
    assert details["together"]["start_skew_ms"] == pytest.approx((beta.launched_at - alpha.launched_at) * 1000,
                                                                abs=0.001)
    assert not details["together"]["start_skew_flagged"]
    # One started 40 ms later: above 1 % of a 3 s point, flagged.
    late = Part(**{**blind[1].__dict__, "launched_at": alpha.launched_at + 0.040})
    _, _, details = combine.combine([blind[0], late], duration_s=3)
    assert details["together"]["start_skew_ms"] == pytest.approx(40.0, abs=0.001)
    assert details["together"]["start_skew_flagged"]


def _driven(busy: dict[str, float | None]) -> dict:
    """A stored point of the two captured parts (as analysis.load gives it), each part's
    host as busy as given (fleet/together.py records it from the host's samples)."""
    measurement, _, details = combine.combine([_part("alpha"), _part("beta")], duration_s=3)
    for part in details["together"]["parts"]:
        part["host_cpu_busy_pct"] = busy[part["host"]]
        part["loadgen_cpu_cores"] = 0.5
    return point(point_id=7, run_id=3, label="together", workload="pgbench-select-only", status="ok",
                 details={**measurement.details, **details}, threads=2)


def test_the_load_generators_or_the_server_bound_a_point_driven_together(capsys):
    from dbarena.report import listings
    from dbarena.stats import decision, loadgens

    idle = _driven({"alpha": 35.0, "beta": 41.5})
    assert loadgens.count(idle) == 2 and [p.host for p in loadgens.parts(idle)] == ["alpha", "beta"]
    assert loadgens.bound([idle]) == ("not the load generators (busiest: beta, 42 % busy, of 2): "
                                      "the server or the network")
    busy = _driven({"alpha": 97.0, "beta": 60.0})
    assert loadgens.bound([idle, busy]) == "load generators saturated (alpha 97 % busy, of 2 load generators)"
    assert loadgens.bound([_driven({"alpha": None, "beta": None})]) == \
        "2 load generators, their CPU not sampled: cannot tell"
    # A point of one load generator: not this module's to say.
    alone = point(status="ok", details={})
    assert loadgens.bound([alone]) is None and loadgens.count(alone) == 1
    # The decision's "why" says it for such points.
    assert decision.bound([busy]).startswith("load generators saturated")
    # What `results --parts` and the points table show.
    table = listings.parts_table([idle], wide=True)
    assert [row[3] for row in zip(*table.cells)] == ["alpha", "beta"]
    assert table.notes == ["point 7: not the load generators (busiest: beta, 42 % busy, of 2): the server or the "
                           "network"]
    assert listings.together_notes([idle, busy]) == [
        "run 3: 2 load generators drove each point at once (alpha, beta); `results --parts` shows each one's "
        "share and whether they were the bound"]


def test_an_offered_rate_is_split_in_the_steps_its_tool_takes():
    assert combine.split_rate(100, 2, whole=False) == ["50.0", "50.0"]
    assert combine.split_rate(0.3, 2, whole=False) == ["0.2", "0.1"]
    assert combine.split_rate(333, 2, whole=False) == ["166.5", "166.5"]
    assert combine.split_rate(7, 3, whole=True) == ["3", "2", "2"]
    with pytest.raises(ValueError, match=r"^the offered rate 1 TPS cannot be split over 2 load generators "
                                         r"\(each needs at least 1 TPS\)$"):
        combine.split_rate(1, 2, whole=True)
