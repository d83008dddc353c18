"""--rate: every point offered a rate through its tool's own option, as a study's
`options.rate` does; a tool that offers none, and --slo, refused in one line."""

from __future__ import annotations

import pytest

from dbarena import study
from dbarena.errors import UsageError
from dbarena.study import Overrides

BASE = """schema = 1
name = "rate"
[engines.postgres]
{mysql}[sweep]
levels = [1, 2]
duration_s = 10
"""


def _study(*names: str, options: str = ""):
    mysql = "[engines.mysql]\n" if "mysqlslap" in names else ""  # mysqlslap runs on MySQL only
    text = BASE.format(mysql=mysql) + "".join(f'[[workloads]]\nworkload = "{n}"\n{options}' for n in names)
    return study.parse(text, "s.toml")


def test_each_tool_gets_the_rate_as_its_option_takes_it():
    s = study.apply(_study("pgbench-select-only", "sysbench-read-only"), Overrides(rate=82.46))
    options = {w.workload: dict(w.options) for w in s.workloads}
    # pgbench -R takes a fraction; sysbench --rate a whole number only (it refuses 82.0).
    assert options["pgbench-select-only"]["rate"] == "82.5"
    assert options["sysbench-read-only"]["rate"] == "82"
    assert "pgbench-select-only rate: - -> 82.5 (--rate)" in s.changes
    # The flag is recorded with the run's flags, and read back by --resume.
    assert s.flags["rate"] == 82.46
    assert Overrides.from_flags(Overrides(rate=82.46).flags()).rate == 82.46


def test_the_flag_replaces_a_studys_own_rate_and_says_so():
    s = study.apply(_study("pgbench-tpcb", options="[workloads.options]\nrate = 500\nprotocol = \"prepared\"\n"),
                    Overrides(rate=120))
    assert dict(s.workloads[0].options) == {"rate": "120", "protocol": "prepared"}
    assert "pgbench-tpcb rate: 500 -> 120 (--rate)" in s.changes


def test_a_flags_only_run_offers_the_rate_too():
    s = study.implicit(Overrides(workloads=("pgbench-select-only",), rate=40))
    assert dict(s.workloads[0].options)["rate"] == "40.0"
    assert "rate = 40" in s.text


@pytest.mark.parametrize(("workload", "said"), [
    ("mysqlslap", "mysqlslap runs a number of queries as fast as it can and offers no rate"),
    ("tpcc-like", "tpcc-like cannot be offered a rate"),
])
def test_a_tool_without_a_rate_is_refused_not_run_closed_loop(workload, said):
    with pytest.raises(UsageError) as err:
        study.apply(_study("pgbench-select-only", workload), Overrides(rate=50))
    assert said in str(err.value) and "--workload" in str(err.value) and "\n" not in str(err.value)
    # Without it, the same study is fine.
    study.apply(_study("pgbench-select-only", workload), Overrides(rate=50, workloads=("pgbench-select-only",)))


def test_rate_and_slo_contradict_each_other():
    with pytest.raises(UsageError, match=r"--rate with a latency objective \(--slo\)"):
        study.apply(_study("pgbench-select-only"), Overrides(rate=50, slo="p99=5ms"))
    # The study's own objective too, said as such (not as an option the study set).
    with pytest.raises(UsageError, match=r"--rate with a latency objective \(\[slo\]\)"):
        study.apply(_study("pgbench-select-only", options='[slo]\nobjective = "p99=5ms"\n'), Overrides(rate=50))
