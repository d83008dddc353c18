"""[slo] and --slo: a study's latency objective read, and what cannot be searched for a
capacity refused in one line."""

from __future__ import annotations

import pytest

from dbarena import study
from dbarena.errors import UsageError
from dbarena.stats.capacity import Objective
from dbarena.study import Overrides, StudyError

BASE = """schema = 1
name = "slo"
[sweep]
levels = [1]
duration_s = 10
[[workloads]]
workload = "{workload}"
"""


def test_a_studys_slo_section_is_read_with_its_budget_and_precision():
    s = study.parse(BASE.format(workload="pgbench-select-only") + """
[slo]
objective = "p99.9=20ms"
errors = "1%"
precision = "5%"
max_rates = 8
""", "s.toml")
    assert s.slo == Objective("p999", 20.0, errors=0.01, precision=0.05, max_rates=8)
    # --slo replaces the objective and keeps the file's budget and precision; it turns the
    # per-transaction log on, which the latency from each scheduled start is read from.
    flagged = study.apply(s, Overrides(slo="p99=5ms"))
    assert flagged.slo == Objective("p99", 5.0, errors=0.01, precision=0.05, max_rates=8)
    assert flagged.latency_sampling == 1.0
    assert any(line.startswith("slo: p99.9=20ms -> p99=5ms") for line in flagged.changes)


@pytest.mark.parametrize(("section", "said"), [
    ('[slo]\nerrors = "1%"', "slo.objective: missing"),
    ('[slo]\nobjective = "p99"', "slo.objective"),
    ('[slo]\nobjective = "p99=5ms"\nprecision = "0%"', "slo.precision"),
    ('[slo]\nobjective = "p99=5ms"\nerrors = 0.1', "slo.errors"),
    ('[slo]\nobjective = "p99=5ms"\nmax_rates = 1', "slo.max_rates"),
    ('[slo]\nobjective = "p99=5ms"\nrate = 3', "slo.rate: unknown key"),
])
def test_a_bad_slo_section_names_its_key(section, said):
    with pytest.raises(StudyError) as err:
        study.parse(BASE.format(workload="pgbench-select-only") + section, "s.toml")
    assert said in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize(("workload", "said"), [
    ("tpcc-like", "tpcc-like runs a mix of five transaction kinds"),
    ("mysqlslap", "mysqlslap runs a number of queries"),
])
def test_a_tool_that_cannot_count_from_the_scheduled_start_is_refused_in_one_line(workload, said):
    text = BASE.format(workload=workload).replace('name = "slo"', 'name = "slo"\n[engines.mysql]')
    with pytest.raises(UsageError) as err:
        study.apply(study.parse(text, "s.toml"), Overrides(slo="p99=5ms"))
    assert f"--slo: {workload} cannot be searched for a capacity: {said}" in str(err.value)


def test_slo_refuses_what_it_would_contradict():
    s = study.parse(BASE.format(workload="pgbench-select-only"), "s.toml")
    with pytest.raises(UsageError, match="--latency-sampling 0"):
        study.apply(s, Overrides(slo="p99=5ms", latency_sampling=0))
    with pytest.raises(UsageError, match="--precision"):
        study.apply(s, Overrides(slo="p99=5ms", precision=0.02))
    rated = study.parse(BASE.format(workload="pgbench-select-only") + "[workloads.options]\nrate = 100\n", "s.toml")
    with pytest.raises(UsageError, match="sets the option 'rate'"):
        study.apply(rated, Overrides(slo="p99=5ms"))
    # A sampling the user gave is kept.
    assert study.apply(s, Overrides(slo="p99=5ms", latency_sampling=0.5)).latency_sampling == 0.5


def test_a_budget_bounds_a_search_for_capacity_as_it_bounds_adaptive_repeats():
    s = study.parse(BASE.format(workload="pgbench-select-only").replace("duration_s = 10", "duration_s = 10\nbudget = \"20m\"")
                    + '[slo]\nobjective = "p99=5ms"\n', "s.toml")
    assert study.apply(s, Overrides()).budget_s == 1200
    plain = study.parse(BASE.format(workload="pgbench-select-only"), "s.toml")
    assert study.apply(plain, Overrides(slo="p99=5ms", budget_s=600)).budget_s == 600
    with pytest.raises(UsageError, match="give --precision or --slo too"):
        study.apply(plain, Overrides(budget_s=600))
    with pytest.raises(StudyError, match="sweep.precision or \\[slo\\]"):
        study.parse(BASE.format(workload="pgbench-select-only").replace("duration_s = 10", "duration_s = 10\nbudget = \"20m\""),
                    "s.toml")
