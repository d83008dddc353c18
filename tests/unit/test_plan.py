import pytest

from dbarena import study, workloads
from dbarena.run import plan
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


@pytest.mark.parametrize("text, levels", [("1,4,16", [1, 4, 16]), ("16, 4,4,1", [1, 4, 16]), ("3", [3]),
                                          # shares of the server's hardware threads, as a study file takes them
                                          ("50%", ["50%"]), ("99%,1,2, 20%,020%", [1, 2, "20%", "99%"]),
                                          ("1000%", ["1000%"])])
def test_parse_levels(text, levels):
    assert study.parse_levels(text) == levels


@pytest.mark.parametrize("text", ["0", "-3", "abc", "1,,2", "1.5", "", "0%", "1001%", "%", "50 %", "2.5%"])
def test_parse_levels_rejects(text):
    with pytest.raises(UsageError, match="is neither a number of threads nor a percentage"):
        study.parse_levels(text)


def test_percent_levels_on_the_command_line_resolve_as_in_a_study_file():
    # 50 % of 8 hardware threads is 4, as the study file's "50%" is (plan.resolve_levels).
    assert plan.resolve_levels(study.parse_levels("1,50%,100%"), 8) == [1, 4, 8]


STUDY = """
schema = 1
name = "plan-test"

[sweep]
levels = [4, 1]
clients_per_thread = 2
duration_s = 5

[datasets]
scale = 3
tables = 2
table_size = 100
iterations = 1
queries = 10

[engines.postgres]

[[workloads]]
workload = "pgbench-tpcb"

[[workloads]]
workload = "sysbench-read-only"
"""


def _expand(text: str, hardware_threads: int | None = 8) -> list[plan.EnginePlan]:
    return plan.expand(study.parse(text, "plan-test.toml"), lambda engine: hardware_threads)


def test_expand_multiplies_clients_for_pgbench_only_and_orders_by_workload():
    (engine_plan,) = _expand(STUDY)
    points = engine_plan.points
    assert [(p.workload, p.threads, p.clients) for p in points] == [
        ("pgbench-tpcb", 1, 2), ("pgbench-tpcb", 4, 8), ("sysbench-read-only", 1, 1), ("sysbench-read-only", 4, 4),
    ]
    assert points[0].params == (("scale", 3),)
    assert points[2].params == (("table_size", 100), ("tables", 2))
    assert {(p.duration_s, p.engine) for p in points} == {(5, "postgres")}
    assert engine_plan.levels == (1, 4) and engine_plan.max_clients == 8
    assert engine_plan.variants == ("",) and engine_plan.settings == {"": {}}


def test_expand_resolves_percentages_against_the_engines_hardware_threads():
    text = STUDY.replace("levels = [4, 1]", 'levels = [1, 2, "20%", "40%", "60%", "80%", "99%"]')
    (engine_plan,) = _expand(text, 128)
    assert sorted({p.threads for p in engine_plan.points}) == [1, 2, 25, 51, 76, 102, 126]
    with pytest.raises(UsageError, match="server_threads"):
        _expand(text, None)  # a --target whose threads nobody gave


def test_expand_interleaves_repeats_and_variants_as_whole_passes():
    text = STUDY.replace("duration_s = 5", "duration_s = 5\nrepeats = 2") + """
[variants.a]
postgres = { work_mem = "8MB" }

[variants.b]
description = "the engine's settings only"
"""
    (engine_plan,) = _expand(text)
    one_pass = [("pgbench-tpcb", 1), ("pgbench-tpcb", 4), ("sysbench-read-only", 1), ("sysbench-read-only", 4)]
    expected = [(r, v, w, t) for r in (0, 1) for v in ("a", "b") for w, t in one_pass]
    assert [(p.repeat, p.variant, p.workload, p.threads) for p in engine_plan.points] == expected
    assert engine_plan.variants == ("a", "b")
    assert engine_plan.settings == {"a": {"work_mem": "8MB"}, "b": {}}


def test_resolve_levels_drops_zeros_and_duplicates():
    assert plan.resolve_levels([4, "50%", 1, "1%"], 8) == [1, 4]
    assert plan.resolve_levels([3, 1, 3], None) == [1, 3]


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
