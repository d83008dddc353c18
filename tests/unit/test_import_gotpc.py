"""go-tpc outputs imported: every file of the public corpus (tests/fixtures/go-tpc/corpus)
imports with its summary's figures, or is refused in one line; a point is judged by
tpmC, which is no TPS."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import cli_env
from inprocess import dbarena

from dbarena.importers import gotpc, reading
from dbarena.stats import metric

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
CORPUS = FIXTURES / "go-tpc" / "corpus"
PUBLISHED = FIXTURES / "go-tpc" / "published"

# file -> (workload, tpmC, tpmTotal, efficiency, warehouses, threads, duration, transactions, failed)
EXPECTED = {
    "go-tpc-2020-tpcc-current-and-summary-tidbdocs.txt": ("go-tpc-tpcc", 38.6, None, None, None, 1, 490, 737, 1),
    "go-tpc-ch-benchmark-summary-tidbdocs.txt": ("go-tpc-ch", 93826.9, None, 729.6, 1000, 50, 3600, 12512616, 47),
    "go-tpc-tpcc-full-run-maxprocs-line-riscv.txt": ("go-tpc-tpcc", 4398.2, 9715.3, 68.4, 500, 1, 600, 97124, 0),
    "go-tpc-tpcc-full-run-with-err-rows-x86.txt": ("go-tpc-tpcc", 1577.2, 3507.9, 3066.2, 4, 1, 600, 35073, 9),
}
REFUSED = {"go-tpc-ch-benchmark-current-tidbdocs.txt": "interval reports only"}


def _read(name: str, text: str | None = None) -> list[reading.ImportedPoint]:
    return reading.read(name, text if text is not None else (CORPUS / name).read_text(), label="tidb",
                        engine="mysql")


def test_every_corpus_file_is_expected_here():
    assert {p.name for p in CORPUS.glob("*.txt")} == {*EXPECTED, *REFUSED}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_a_run_is_one_point_with_its_summary_figures(name):
    assert reading.detect_tool((CORPUS / name).read_text()) == "go-tpc"
    (point,) = _read(name)
    workload, tpmc, total, efficiency, warehouses, threads, duration, transactions, failed = EXPECTED[name]
    spec, m = point.result.spec, point.result.measurement
    assert point.result.ok and spec.workload == workload and spec.engine == "mysql"
    assert m.details["tpmC"] == tpmc and m.details.get("tpmTotal") == total
    assert m.details.get("efficiency_pct") == efficiency
    assert dict(spec.params).get("scale") == warehouses
    assert (spec.threads, spec.duration_s) == (threads, duration)
    assert (m.transactions, m.failed_transactions) == (transactions, failed)
    # NEW_ORDER's latencies are the point's; every type's summary is kept.
    new_order = m.details["transaction_types"]["NEW_ORDER"]
    assert m.latency_avg_ms == new_order["avg_ms"] and m.latency_p99_ms == new_order["p99_ms"]
    assert m.tps is None and metric.of_point(m) == metric.TPMC and metric.figure(m) == tpmc


def test_ch_benchmark_keeps_each_tpch_query():
    (point,) = _read("go-tpc-ch-benchmark-summary-tidbdocs.txt")
    queries = point.result.measurement.details["tpch_queries"]
    assert len(queries) == 20  # the documentation's block stops after Q7 (no Q8, Q9)
    assert queries["Q1"] == {"count": 11, "sum_ms": 42738.2, "avg_ms": 3885.3}
    assert dict(point.result.spec.options) == {"olap_workers": "1"}


def test_interval_reports_only_are_refused_in_one_line():
    with pytest.raises(reading.ImportProblem) as caught:
        _read("go-tpc-ch-benchmark-current-tidbdocs.txt")
    assert "\n" not in str(caught.value) and "no single figure" in str(caught.value)


def test_without_a_command_line_the_engine_must_be_given():
    with pytest.raises(reading.ImportProblem, match="pass --engine"):
        reading.read("x.txt", (CORPUS / "go-tpc-tpcc-full-run-with-err-rows-x86.txt").read_text(), label="x")


def test_an_echoed_command_line_gives_threads_warehouses_duration_and_driver():
    command = "./go-tpc tpcc -H localhost -P 4000 -D tpcc --warehouses 4 --threads 10 --time 10m run\n"
    (point,) = _read("x.txt", command + (CORPUS / "go-tpc-tpcc-full-run-with-err-rows-x86.txt").read_text())
    spec = point.result.spec
    assert (spec.threads, spec.clients, dict(spec.params), spec.duration_s) == (10, 10, {"scale": 4}, 600)
    assert point.duration.how == "command line" and point.note is None
    pg = "go-tpc tpcc -d postgres --warehouses 4 -T 8 run\n"
    (point,) = reading.read("y.txt", pg + (CORPUS / "go-tpc-tpcc-full-run-with-err-rows-x86.txt").read_text(),
                            label="x")
    assert (point.result.spec.engine, point.result.spec.threads) == ("postgres", 8)


@pytest.mark.parametrize("tpmc, efficiency, warehouses", [
    (1577.2, 3066.2, 4), (4398.2, 68.4, 500), (93826.9, 729.6, 1000), (10.0, 0.1, None)])
def test_warehouses_follow_from_the_efficiency_where_its_digits_allow_one(tpmc, efficiency, warehouses):
    assert gotpc.warehouses_of(tpmc, efficiency) == warehouses


def test_the_authors_published_table(tmp_path):
    """KevinMX/PLCT-Works' TiDB.md publishes the x86_64 run's summary, from the raw log
    imported here with the author's command line (--warehouses 4 --threads 10 --time 10m)."""
    env = cli_env(tmp_path)
    store = tmp_path / "s.db"
    published = (PUBLISHED / "TiDB.md-x86_64-excerpt.txt").read_text().splitlines()
    command, summary = published[0], published[1:]
    raw = tmp_path / "tpcc_result.log"
    raw.write_text(command + "\n" + (CORPUS / "go-tpc-tpcc-full-run-with-err-rows-x86.txt").read_text())
    done = dbarena("import", str(raw), "--label", "x86", "--store", str(store), env=env)
    assert done.returncode == 0, done.stderr
    (row,) = json.loads(dbarena("results", "--json", "--store", str(store), env=env).stdout)
    tpmc_line = next(l for l in summary if l.startswith("tpmC: "))
    assert tpmc_line == (f"tpmC: {row['details']['tpmC']}, tpmTotal: {row['details']['tpmTotal']}, "
                         f"efficiency: {row['details']['efficiency_pct']}%")
    for line in summary:
        if line.startswith("[Summary] "):
            name = line.split()[1]
            kept = row["details"]["transaction_types"][name]
            assert f"Count: {kept['count']}, TPM: {kept['tpm']}, Sum(ms): {kept['sum_ms']}, Avg(ms): {kept['avg_ms']}" \
                in line
    assert row["metric"] == "tpmc" and (row["threads"], row["scale"], row["duration_s"]) == (10, 4, 600)
    # Without the command line, the warehouses follow from the efficiency: the author's 4.
    (bare,) = _read("go-tpc-tpcc-full-run-with-err-rows-x86.txt")
    assert dict(bare.result.spec.params) == {"scale": 4}
