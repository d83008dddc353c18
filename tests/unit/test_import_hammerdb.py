"""HammerDB outputs imported: every file of the public corpus (tests/fixtures/hammerdb/corpus)
imports with the figures of its own result line, or is refused in one line saying what
it holds; a point is judged by NOPM, which is no TPS."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import cli_env
from inprocess import dbarena

from dbarena.importers import reading
from dbarena.stats import metric

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
CORPUS = FIXTURES / "hammerdb" / "corpus"
PUBLISHED = FIXTURES / "hammerdb" / "published"


def _read(name: str, **options: str) -> list[reading.ImportedPoint]:
    return reading.read(name, (CORPUS / name).read_text(), label="hdb", **options)


# file -> (engine, flavour, NOPM, TPM, virtual users, clients, warehouses, duration s, warm-up s)
EXPECTED = {
    "hammerdbcli-4.x-tpcc-mysql-pkb.txt": ("mysql", "mysql", 8153, 24772, 4, 4, 20, 600, 300),
    "hammerdbcli-4.x-tpcc-mysql-timeprofile-pkb.txt": ("mysql", "mysql", 5614, 17145, 4, 4, 20, 600, 300),
    "hammerdb-6.0-cli-tprocc-mariadb-run-with-tpm-counter.txt": ("mysql", "mariadb", 128176, 298394, 24, 24, 120,
                                                                  300, 120),
    "hammerdb-6.0-cli-jobs-result-json.txt": ("mysql", "mariadb", 128176, 298394, 24, 24, None, 0, 0),
    "hammerdb-4.x-pg-async-timeprofile-fragment-docs.txt": ("postgres", None, 53, 399, 5, 50, None, 0, 0),
    "hammerdb-3.x-tpcc-tpch-mssql-pkb.txt": ("mssql", None, 13122, 60301, 1, 1, None, 0, 0),
}
REFUSED = {
    "hammerdb-4.3-timeprofile-report.txt": "time profile report",
    "hammerdb-4.3-transaction-counter-pg.txt": "transaction counter log",
}


def test_every_corpus_file_is_expected_here():
    assert {p.name for p in CORPUS.glob("*.txt")} == {*EXPECTED, *REFUSED}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_a_run_is_one_point_with_the_figures_of_its_result_line(name):
    assert reading.detect_tool((CORPUS / name).read_text()) == "hammerdb"
    (point,) = _read(name)
    engine, flavour, nopm, tpm, vus, clients, warehouses, duration, warmup = EXPECTED[name]
    spec, m = point.result.spec, point.result.measurement
    assert point.result.ok and point.tool == "hammerdb" and spec.workload == "hammerdb-tprocc"
    assert (spec.engine, point.flavour) == (engine, flavour)
    assert (m.details["nopm"], m.details["tpm"]) == (nopm, tpm)
    assert f"{nopm} NOPM" in m.details["result_line"] and f"{tpm} " in m.details["result_line"]
    assert (spec.threads, spec.clients) == (vus, clients)
    assert dict(spec.params).get("scale") == warehouses
    assert (spec.duration_s, spec.warmup_s) == (duration, warmup)
    # Its metric is its own: NOPM, never TPS.
    assert m.tps is None and metric.of_point(m) == metric.NOPM and metric.figure(m) == nopm


def test_the_server_version_where_the_output_names_it():
    (point,) = _read("hammerdb-6.0-cli-tprocc-mariadb-run-with-tpm-counter.txt")
    assert (point.server_version, point.flavour) == ("11.8.1", "mariadb")
    assert dict(point.result.spec.options) == {"all_warehouses": "true"}
    assert len(point.result.measurement.details["tpm_counter"]) == 43


def test_per_transaction_latencies_from_the_jobs_response_times():
    (point,) = _read("hammerdb-6.0-cli-jobs-result-json.txt")
    m = point.result.measurement
    types = m.details["transaction_types"]
    assert set(types) == {"NEWORD", "PAYMENT", "DELIVERY", "OSTAT", "SLEV"}
    assert types["PAYMENT"] == {"elapsed_ms": 414691.5, "calls": 1812876, "min_ms": 0.419, "avg_ms": 3.696,
                                "max_ms": 101.212, "total_ms": 6701684.17, "p99_ms": 8.856, "p95_ms": 6.463,
                                "p50_ms": 3.422, "sd": 1702.923, "ratio_pct": 33.668}
    # The point's own latencies are NEWORD's, the transaction NOPM counts.
    assert (m.latency_avg_ms, m.latency_p50_ms, m.latency_p95_ms, m.latency_p99_ms, m.latency_max_ms) == \
        (5.765, 5.354, 9.818, 13.309, 108.869)
    series = m.details["tpm_series"]
    assert series[0] == ["2025-04-14 17:09:41", 0] and series[-1] == ["2025-04-14 17:16:42", 305400]


def test_the_documentation_prints_one_run_twice_and_both_give_one_figure():
    (console,) = _read("hammerdb-6.0-cli-tprocc-mariadb-run-with-tpm-counter.txt")
    (jobs,) = _read("hammerdb-6.0-cli-jobs-result-json.txt")
    a, b = console.result.measurement.details, jobs.result.measurement.details
    assert (a["nopm"], a["tpm"]) == (b["nopm"], b["tpm"])
    # The console's transaction counter is the jobs' TRANSACTION COUNT, value by value.
    assert a["tpm_counter"] == [tpm for _, tpm in b["tpm_series"]]


def test_a_time_profile_report_appended_to_its_run_gives_the_summary_latencies():
    report = (CORPUS / "hammerdb-4.3-timeprofile-report.txt").read_text()
    log = (CORPUS / "hammerdbcli-4.x-tpcc-mysql-pkb.txt").read_text()
    (point,) = reading.read("appended.txt", log + report, label="x")
    m = point.result.measurement
    assert m.details["nopm"] == 8153
    assert m.details["transaction_types"]["NEWORD"] == {
        "calls": 322104, "min_ms": 2.269, "avg_ms": 9.236, "max_ms": 36.366, "total_ms": 2975206.25,
        "p99_ms": 14.197, "p95_ms": 12.399, "p50_ms": 9.087, "sd": 1808.882, "ratio_pct": 41.115}
    assert (m.latency_avg_ms, m.latency_p99_ms) == (9.236, 14.197)


def test_4x_interval_percentiles_give_calls_minimum_and_maximum():
    (point,) = _read("hammerdbcli-4.x-tpcc-mysql-timeprofile-pkb.txt")
    neword = point.result.measurement.details["transaction_types"]["NEWORD"]
    assert neword["intervals"] > 80 and neword["calls"] > 0
    assert neword["min_ms"] <= neword["max_ms"]


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_a_file_without_a_result_is_refused_in_one_line_saying_what_it_is(name):
    with pytest.raises(reading.ImportProblem) as caught:
        _read(name)
    message = str(caught.value)
    assert "\n" not in message and REFUSED[name] in message and "holds no result" in message


def test_pkb_published_figures(tmp_path):
    """PerfKitBenchmarker's tests expect these NOPM and TPM of its HammerDB logs."""
    env = cli_env(tmp_path)
    files = {"hammerdbcli_tpcc.log": CORPUS / "hammerdbcli-4.x-tpcc-mysql-pkb.txt",
             "hammerdbcli_tpcc_timeprofile.log": CORPUS / "hammerdbcli-4.x-tpcc-mysql-timeprofile-pkb.txt"}
    store = tmp_path / "s.db"
    published = [line.split("\t") for line in (PUBLISHED / "pkb-hammerdb_test-expected.txt").read_text().splitlines()]
    for data_file, path in files.items():
        done = dbarena("import", str(path), "--label", data_file, "--store", str(store), env=env)
        assert done.returncode == 0, done.stderr
    rows = json.loads(dbarena("results", "--json", "--store", str(store), env=env).stdout)
    by_label = {r["label"]: r for r in rows}
    for data_file, what, figure in published:
        row = by_label[data_file]
        assert row["metric"] == "nopm"
        assert float(row["details"]["nopm" if what == "NOPM" else "tpm"]) == float(figure)


def test_nopm_against_a_pgbench_tps_is_not_comparable(tmp_path):
    env = cli_env(tmp_path)
    store = str(tmp_path / "s.db")
    for label, path in (("hdb", CORPUS / "hammerdbcli-4.x-tpcc-mysql-pkb.txt"),
                        ("pg", FIXTURES / "pgbench" / "corpus" / "pg15.3-tpcb-progress-j8.txt")):
        assert dbarena("import", str(path), "--label", label, "--store", store, env=env).returncode == 0
    done = dbarena("compare", "pg", "hdb", "--store", store, env=env)
    assert done.returncode == 2
    assert "not comparable: TPS (transactions per second) against NOPM (new-order transactions per minute" \
        in done.stderr
    summary = json.loads(dbarena("results", "--summary", "--json", "--store", store, env=env).stdout)
    assert {s["label"]: s["metric"] for s in summary} == {"hdb": "nopm", "pg": "tps"}
    assert next(s for s in summary if s["label"] == "hdb")["median"] == 8153
