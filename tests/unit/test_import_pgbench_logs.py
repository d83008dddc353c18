"""pgbench's log files imported: a per-transaction log (with skipped and failed
transactions, sampled or not) gives percentiles and the per-second series; an aggregate
log (--aggregate-interval) the series, mean, standard deviation, minimum and maximum.
The public examples are tests/fixtures/pgbench-logs/corpus (../shared/corpus/pgbench-logs,
byte for byte, SOURCES.tsv there); the captures beside them are pgbench 15's own."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import cli_env
from inprocess import dbarena

from dbarena.importers import reading

LOGS = Path(__file__).resolve().parent.parent / "fixtures" / "pgbench-logs"
CORPUS = LOGS / "corpus"


def _one(path: Path, text: str | None = None) -> reading.ImportedPoint:
    (point,) = reading.read(path.name, text if text is not None else path.read_text(), label="x")
    return point


def test_every_corpus_log_is_recognised():
    for path in CORPUS.glob("*.txt"):
        assert reading.detect_tool(path.read_text()) == "pgbench-log", path.name


def test_the_documentation_s_aggregate_log():
    point = _one(CORPUS / "DOCEXAMPLE-pg-aggregate-interval-log.txt")
    m, samples = point.result.measurement, point.result.samples
    assert point.tool == "pgbench-log" and m.details["interval_s"] == 2
    assert m.transactions == 5601 + 7884 + 7208 + 7685 + 7073
    assert m.tps == pytest.approx(m.transactions / 10)
    assert m.latency_avg_ms == pytest.approx((1542744 + 1979812 + 1979422 + 1980268 + 1979779) / m.transactions / 1000)
    assert (m.latency_min_ms, m.latency_max_ms) == (0.059, 2.573)
    assert [s.tps for s in samples] == [2800.5, 3942.0, 3604.0, 3842.5, 3536.5]
    assert samples[0].latency_ms == pytest.approx(1542744 / 5601 / 1000)
    assert m.latency_p50_ms is None and "no percentiles" in point.note


def test_the_documentation_s_per_transaction_log_with_skipped_transactions():
    point = _one(CORPUS / "DOCEXAMPLE-pg-per-transaction-log-rate-latency-limit-skipped.txt")
    m = point.result.measurement
    assert m.transactions == 5 and m.details["outcomes"] == {"skipped": 2}
    assert (m.latency_min_ms, m.latency_max_ms) == (2.465, 6.173)
    assert m.latency_avg_ms == pytest.approx((4621 + 6173 + 4722 + 4142 + 2465) / 5 / 1000)
    assert m.latency_p50_ms == pytest.approx(4.621, rel=1e-3) and m.latency_histogram["count"] == 5


def test_a_log_with_the_header_line_of_an_unreleased_patch():
    m = _one(CORPUS / "pg17devel-log-file-with-log-header-patch.txt").result.measurement
    assert m.transactions == 2 and (m.latency_min_ms, m.latency_max_ms) == (1.13, 8.435)


def test_pgbench_15_log_with_failures_and_the_per_second_series():
    point = _one(LOGS / "pg15-max-tries-detailed.thread0.log")
    m = point.result.measurement
    assert m.details["outcomes"] == {"serialization": 24} and m.failed_transactions == 24
    assert sum(s.tps for s in point.result.samples) == m.transactions
    assert m.latency_p99_ms is not None and m.latency_p50_ms <= m.latency_p99_ms


def test_a_sampled_log_is_scaled_by_the_share_its_transaction_numbers_say():
    full = LOGS / "pg15-rate-latency-limit.thread0.log"
    whole = _one(full).result.measurement
    # Every fourth line, as --sampling-rate 0.25 would have logged about as many.
    lines = full.read_text().splitlines(keepends=True)
    sampled = _one(full, "".join(lines[::4]))
    m = sampled.result.measurement
    assert 0.2 < m.details["sampling_rate_estimated"] < 0.3 and "sampled pgbench log" in sampled.note
    assert m.transactions == pytest.approx(whole.transactions, rel=0.05)
    assert m.latency_histogram["sampling_rate"] == m.details["sampling_rate_estimated"]


def test_a_run_s_thread_logs_together_are_one_point_with_merged_percentiles(tmp_path):
    env, store = cli_env(tmp_path), str(tmp_path / "s.db")
    logs = [str(LOGS / "pg15-select-only.thread0.log"), str(LOGS / "pg15-select-only.thread1.log")]
    done = dbarena("import", "--together", *logs, "--label", "logs", "--store", store, env=env)
    assert done.returncode == 0, done.stderr
    (row,) = json.loads(dbarena("results", "--json", "--store", store, env=env).stdout)
    parts = [_one(Path(p)).result.measurement for p in logs]
    assert row["transactions"] == sum(p.transactions for p in parts)
    assert row["latency_p99_ms"] is not None and row["threads"] == 2


def test_imported_through_the_cli(tmp_path):
    env, store = cli_env(tmp_path), str(tmp_path / "s.db")
    files = [str(p) for p in sorted(CORPUS.glob("*.txt"))]
    done = dbarena("import", *files, "--label", "docs", "--store", store, env=env)
    assert done.returncode == 0, done.stderr
    rows = json.loads(dbarena("results", "--json", "--store", store, env=env).stdout)
    assert len(rows) == 3 and {r["workload"] for r in rows} == {"pgbench"}
