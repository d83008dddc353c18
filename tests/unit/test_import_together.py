"""`import --together`: the outputs of load generators that ran at once against one server
become one point, throughput summed and latency pooled as a fleet run's, each part kept.

The outputs: two pgbench processes that drove one PostgreSQL at once
(tests/fixtures/together/pgbench/{alpha,beta}/stdout.txt, real captures of a `fleet run
--together` point, 292.887645 and 306.244466 TPS). No public capture of two load
generators published as one result is in ../shared/corpus (the RDS example of issue 58,
7,079.73 + 6,946.35 TPS, is not among its files)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import cli_env
from inprocess import dbarena

from dbarena.importers import reading, together
from dbarena.importers.common import ImportProblem

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
ALPHA = FIXTURES / "together" / "pgbench" / "alpha" / "stdout.txt"
BETA = FIXTURES / "together" / "pgbench" / "beta" / "stdout.txt"


@pytest.fixture()
def env(tmp_path):
    return cli_env(tmp_path)


def _points(*paths: Path):
    return [(p.name, reading.read(p.name, p.read_text(), label="x")[0]) for p in paths]


def test_two_overlapping_pgbench_outputs_are_one_point_whose_tps_is_the_sum(tmp_path, env):
    store = str(tmp_path / "s.db")
    done = dbarena("import", "--together", str(ALPHA), str(BETA), "--label", "rds", "--store", store, env=env)
    assert done.returncode == 0, done.stderr
    assert "imported together as 1 point of 2 load generators" in done.stdout
    (row,) = json.loads(dbarena("results", "--json", "--store", store, env=env).stdout)
    assert row["tps"] == pytest.approx(292.887645 + 306.244466, abs=1e-9)
    assert (row["threads"], row["clients"]) == (2, 3)  # 1 + 1 threads, 1 + 2 clients
    assert row["details"]["load_generators"] == 2 and row["config"]["load_generators"] == 2
    parts = row["details"]["together"]["parts"]
    assert [(p["file"], p["tps"]) for p in parts] == [("stdout.txt", 292.887645), ("stdout.txt", 306.244466)]
    # Latency pooled by fleet run --together's rules: the average weighted by transactions.
    a, b = (p for p in parts)
    assert row["latency_avg_ms"] == pytest.approx(
        (a["latency_avg_ms"] * a["transactions"] + b["latency_avg_ms"] * b["transactions"])
        / (a["transactions"] + b["transactions"]))
    assert row["transactions"] == a["transactions"] + b["transactions"]
    # The same files together again add nothing.
    again = dbarena("import", "--together", str(BETA), str(ALPHA), "--label", "rds", "--store", store, env=env)
    assert again.returncode == 0 and "already imported together" in again.stdout
    # The summary's figure is the sum too, not a mean of two repeats.
    (summary,) = json.loads(dbarena("results", "--summary", "--json", "--store", store, env=env).stdout)
    assert summary["n"] == 1 and summary["printed_median"] == pytest.approx(599.132111)


def test_each_alone_is_another_configuration(tmp_path, env):
    store = str(tmp_path / "s.db")
    assert dbarena("import", "--together", str(ALPHA), str(BETA), "--label", "x", "--store", store,
                   env=env).returncode == 0
    assert dbarena("import", str(ALPHA), "--label", "x", "--store", store, env=env).returncode == 0
    rows = json.loads(dbarena("results", "--json", "--store", store, env=env).stdout)
    assert len({r["config_key"] for r in rows}) == 2


def test_runs_of_different_configurations_are_refused():
    other = FIXTURES / "pgbench" / "corpus" / "pg16.6-select-only-S-r.txt"
    with pytest.raises(ImportProblem, match="not of one configuration"):
        together.combine(_points(ALPHA, other), "a, b")


def test_a_failed_part_is_refused():
    aborted = FIXTURES / "pgbench" / "corpus" / "pg14.3-aborted-run-yugabyte-fragment.txt"
    with pytest.raises(ImportProblem, match="this run failed"):
        together.combine(_points(ALPHA, aborted), "a, b")


def test_one_file_is_not_together(tmp_path, env):
    done = dbarena("import", "--together", str(ALPHA), "--label", "x", "--store", str(tmp_path / "s.db"), env=env)
    assert done.returncode == 2 and "two or more" in done.stderr


def test_kits_nopm_is_summed_too():
    corpus = FIXTURES / "hammerdb" / "corpus"
    one = corpus / "hammerdbcli-4.x-tpcc-mysql-pkb.txt"
    point = together.combine([("a", reading.read("a", one.read_text(), label="x")[0]),
                              ("b", reading.read("b", one.read_text(), label="x")[0])], "a, b")
    assert point.result.measurement.details["nopm"] == 2 * 8153
    assert (point.result.spec.threads, point.result.measurement.details["load_generators"]) == (8, 2)
