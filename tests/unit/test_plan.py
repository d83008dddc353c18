import pytest

from dbarena import plan, workloads
from dbarena.errors import UsageError


@pytest.mark.parametrize(
    "hardware_threads, levels",
    [
        (1, [1, 2]),
        (2, [1, 2]),
        (4, [1, 2, 3]),  # 20 % of 4 = 0.8 -> 0, dropped; 40 % -> 1, 60 % -> 2, 80 %/99 % -> 3
        (16, [1, 2, 3, 6, 9, 12, 15]),
        (48, [1, 2, 9, 19, 28, 38, 47]),
        (128, [1, 2, 25, 51, 76, 102, 126]),  # study A's Ampere Altra Max
    ],
)
def test_default_levels(hardware_threads, levels):
    assert plan.default_levels(hardware_threads) == levels


@pytest.mark.parametrize("text, levels", [("1,4,16", [1, 4, 16]), ("16, 4,4,1", [1, 4, 16]), ("3", [3])])
def test_parse_levels(text, levels):
    assert plan.parse_levels(text) == levels


@pytest.mark.parametrize("text", ["0", "-3", "abc", "1,,2", "1.5", ""])
def test_parse_levels_rejects(text):
    with pytest.raises(UsageError):
        plan.parse_levels(text)


def test_build_multiplies_clients_for_pgbench_only_and_orders_by_workload():
    chosen = workloads.resolve(["pgbench-tpcb", "sysbench-read-only"], "postgres")
    params = {"scale": 3, "tables": 2, "table_size": 100, "iterations": 1, "queries": 10}
    points = plan.build(engine="postgres", workloads=chosen, levels=[4, 1], clients_per_thread=2,
                        duration_s=5, params=params)
    assert [(p.workload, p.threads, p.clients) for p in points] == [
        ("pgbench-tpcb", 1, 2), ("pgbench-tpcb", 4, 8), ("sysbench-read-only", 1, 1), ("sysbench-read-only", 4, 4),
    ]
    assert points[0].params == (("scale", 3),)
    assert points[2].params == (("table_size", 100), ("tables", 2))
    assert {(p.duration_s, p.engine) for p in points} == {(5, "postgres")}


@pytest.mark.parametrize("engine, names", [
    ("postgres", ["pgbench-tpcb", "pgbench-select-only", "pgbench-simple-update"]),
    ("mysql", ["sysbench-read-only", "sysbench-write-only", "sysbench-read-write", "mysqlslap"]),
])
def test_default_workloads(engine, names):
    assert workloads.default_names(engine) == names


@pytest.mark.parametrize("name, engine", [("pgbench-tpcb", "mysql"), ("mysqlslap", "postgres")])
def test_a_workload_the_engine_cannot_run_is_a_usage_error(name, engine):
    with pytest.raises(UsageError, match="cannot run on engine"):
        workloads.resolve([name], engine)
