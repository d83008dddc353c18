"""docs/capacity.md and the [slo] section of docs/studies.md say what the code does: the
search's constants, the judge's bars, the planned rates, the estimate's wording, the
keys' defaults and what is refused."""

from __future__ import annotations

import math
import re
import tomllib
from pathlib import Path

import pytest

from dbarena import study, workloads
from dbarena.run import preflight, studycheck
from dbarena.stats import capacity
from dbarena.stats.capacity import Objective

DOCS = Path(__file__).resolve().parents[2] / "docs"
CAPACITY = " ".join((DOCS / "capacity.md").read_text().split())  # one line: sentences wrap anywhere
STUDIES = (DOCS / "studies.md").read_text()


@pytest.fixture(autouse=True)
def no_server_binaries(monkeypatch):
    monkeypatch.setattr(preflight, "check_settings", lambda study, executor=None: None)


def test_the_search_and_the_judge_are_described_with_the_codes_constants():
    assert f"offer **{capacity.FIRST_SHARE:g} x C**" in CAPACITY
    assert f"else **{capacity.STEP_UP:g} x** it" in CAPACITY
    assert f"below {capacity.LOWEST_SHARE:.1%} of C".replace("%", " %") in CAPACITY
    assert f"(`ACHIEVED`)" in CAPACITY and f"at least {capacity.ACHIEVED:.0%}".replace("%", " %") in CAPACITY
    assert f"by no more than {capacity.POISSON_SIGMAS:g} standard deviations" in CAPACITY
    assert f"`max_rates` rates tried ({capacity.DEFAULT_MAX_RATES} by default)" in CAPACITY
    assert f"within the precision (`lowest missed / highest met - 1 <= precision`, " \
           f"{capacity.DEFAULT_PRECISION:.0%} by default)".replace("%", " %") in CAPACITY
    assert f"(`errors`, {capacity.DEFAULT_ERRORS:.1%} by default)".replace("%", " %") in CAPACITY
    # The Poisson bar's examples: 3 x sqrt(rate / seconds) as a share of the rate.
    for rate, seconds, said in ((1000, 4, "4.7 %"), (10_000, 60, "0.4 %")):
        share = capacity.POISSON_SIGMAS * math.sqrt(rate / seconds) / rate
        assert f"{share:.1%}".replace("%", " %") == said and f"{said} at {rate:,} TPS for {seconds} s" in CAPACITY


def test_the_planned_rates_table_is_planned_rates():
    (row,) = [line for line in CAPACITY.split("| planned rates a search |")[1:2]]
    said = [int(x) for x in re.findall(r"\d+", row.split("A search")[0])]
    assert said == [capacity.planned_rates(Objective("p99", 5.0, precision=p)) for p in (0.01, 0.02, 0.05, 0.10)]


def test_the_estimate_line_shown_is_the_one_run_prints():
    s = study.implicit(study.Overrides(workloads=("pgbench-select-only",), levels=(2,), duration_s=4,
                                       params={"scale": 1}, slo="p99=5ms"))
    line = preflight.estimate(s, probe_s=0).line()
    search = line.split("; then ", 1)[1]
    assert f"; then {search}" in CAPACITY and line.startswith("run: 1 point, about 6 s of machine time, ")


def test_capacity_es_figures_as_the_docs_give_them():
    s = study.load("capacity-e")
    e = preflight.estimate(s, probe_s=0)
    summary = studycheck.summarise(s, e.plans, e)
    text = " ".join(studycheck.render(summary).split())
    for said in ("then their searches: about 48 offered-rate points, ~48 min (at most 72, ~72 min)",
                 "about 8 offered rates a point (at most 12), about 96 points and ~96 min of machine time more "
                 "(at most 144 points, ~2.4 h)"):
        assert said in text and said in CAPACITY
    closed, searched = studycheck.duration(summary["in_all"]["estimated_s"]), \
        studycheck.duration(summary["slo"]["estimated_s"])
    assert f"about {closed} of closed-loop points and {searched} of search" in STUDIES


def test_the_slo_section_of_studies_md_gives_the_readers_defaults():
    section = STUDIES.split("## Capacity at a latency objective: `[slo]`")[1].split("\n## ")[0]
    block = "\n".join(line[4:] for line in section.splitlines() if line.startswith("    "))
    keys = tomllib.loads(block)
    s = study.parse('schema = 1\nname = "x"\n[[workloads]]\nworkload = "pgbench-tpcb"\n[slo]\n'
                    'objective = "p99=20ms"\n', "x.toml")
    parsed = study.parse('schema = 1\nname = "x"\n[[workloads]]\nworkload = "pgbench-tpcb"\n' + block, "x.toml")
    assert parsed.slo == s.slo == Objective("p99", 20.0)  # the values shown are the defaults
    assert set(keys["slo"]) == {"objective", "errors", "precision", "max_rates"}


def test_what_is_not_done_yet_is_what_is_refused():
    for name in ("tpcc-like", "mysqlslap"):
        assert workloads.WORKLOADS[name].tool.open_loop_refusal is not None
        assert f"- `{name}`: refused" in CAPACITY
    for name in ("pgbench-tpcb", "sysbench-read-only"):
        assert workloads.WORKLOADS[name].tool.open_loop_refusal is None
