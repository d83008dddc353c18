"""What a study with [slo] costs, said before it starts: `study check` and the run's
estimate line (preflight.estimate) count each point's closed-loop runs and then about
capacity.planned_rates offered rates a point (at most max_rates), each run as often as
the point, in every session."""

from __future__ import annotations

import json
import math

import pytest

from dbarena import study
from dbarena.run import preflight, studycheck
from dbarena.stats import capacity
from dbarena.stats.capacity import Judged, Objective, Search

FACTS = {"hardware_threads": 2, "effective_hardware_threads": 2, "hostname": "vm"}

# Two workloads at two levels, 10 s points with a 2 s warm-up, 2 repeats, 3 sessions:
# 8 closed-loop points a session, 24 in all, of 12 s each.
TEXT = """schema = 1
name = "capacity-check"
[sweep]
levels = [1, 2]
duration_s = 10
warmup_s = 2
repeats = 2
sessions = 3
[datasets]
scale = 1
[engines.postgres]
[[workloads]]
workload = "pgbench-select-only"
[[workloads]]
workload = "pgbench-tpcb"
[slo]
objective = "p99=5ms"
precision = "5%"
max_rates = 8
"""


@pytest.fixture(autouse=True)
def no_server_binaries(monkeypatch):
    # Setting names are checked against the server's binaries: not what these tests are about.
    monkeypatch.setattr(preflight, "check_settings", lambda study, executor=None: None)


def loaded(text: str = TEXT, **flags) -> study.Study:
    return study.apply(study.parse(text, "capacity-check.toml"), study.Overrides(**flags))


def test_the_planned_rates_are_what_a_search_takes_when_the_first_rate_misses_and_half_of_it_meets():
    # 5 %: [0.4 c, 0.8 c] (a ratio of 2) halved geometrically 4 times is within 2 ** (1/16) - 1 = 4.4 %.
    assert capacity.planned_rates(Objective("p99", 5.0, precision=0.05, max_rates=8)) == 6
    assert capacity.planned_rates(Objective("p99", 5.0)) == 8  # 2 %, the default: 6 halvings
    assert capacity.planned_rates(Objective("p99", 5.0, max_rates=4)) == 4  # never more than max_rates
    for precision in (0.01, 0.02, 0.05, 0.10):
        objective = Objective("p99", 5.0, precision=precision, max_rates=100)
        for carried, exact in ((6_000, True), (9_300, False)):  # TPS a server carries within 5 ms
            search = Search(objective, closed=[10_000.0])
            while (rate := search.next_rate()) is not None:
                search.add(Judged(rate, rate, 1.0 if rate <= carried else 50.0, 0.0, rate <= carried, ""))
            # Where the first rate meets, the bracket starts narrower: fewer rates.
            assert (len(search.tried) == capacity.planned_rates(objective)) if exact else \
                (len(search.tried) < capacity.planned_rates(objective)), (precision, carried)


def test_the_estimate_line_adds_the_search_to_the_closed_loop_points():
    s = loaded()
    assert s.slo == Objective("p99", 5.0, precision=0.05, max_rates=8)
    e = preflight.estimate(s, host_facts=FACTS, probe_s=0)
    # The closed-loop points, as without [slo]: 24 points of 12 s and one preparation a session.
    assert e.points == 24
    search = e.search
    assert search is not None
    assert (search.rates, search.points, search.max_points) == (6, 24 * 6, 24 * 8)
    assert (search.seconds, search.max_seconds) == (24 * 6 * 12, 24 * 8 * 12)
    assert e.line().endswith("; then a search for each point's capacity at p99 <= 5 ms: about 6 offered rates a "
                             "point (at most 8), about 144 points and 29 min of machine time more")
    assert e.line().startswith("study capacity-check: 24 points, about 5 min of machine time, ")
    # --slo over the file's: its precision and max_rates kept, the default 2 % plans 8 rates elsewhere.
    flagged = preflight.estimate(loaded(slo="p95=20ms"), host_facts=FACTS, probe_s=0)
    assert flagged.search is not None and flagged.search.rates == 6
    assert "capacity at p95 <= 20 ms: about 6 offered rates a point (at most 8)" in flagged.line()


def test_one_session_one_repeat_and_the_default_precision():
    text = TEXT.replace("repeats = 2", "repeats = 1").replace("sessions = 3", "sessions = 1").replace(
        'precision = "5%"\nmax_rates = 8\n', "")
    e = preflight.estimate(loaded(text), host_facts=FACTS, probe_s=0)
    assert e.points == 4 and e.search is not None
    assert (e.search.points, e.search.seconds, e.search.max_points) == (4 * 8, 4 * 8 * 12, 4 * 12)
    assert e.line().endswith("about 8 offered rates a point (at most 12), about 32 points and 6 min of machine "
                             "time more")


def test_without_an_objective_nothing_is_added():
    text = TEXT.split("[slo]")[0]
    e = preflight.estimate(loaded(text), host_facts=FACTS, probe_s=0)
    assert e.search is None and "search" not in e.line()
    summary = studycheck.summarise(loaded(text), e.plans, e)
    assert summary["slo"] is None and summary["engines"][0]["search"] is None
    assert "capacity at" not in studycheck.render(summary) and "search" not in studycheck.render(summary)


def test_study_check_states_the_searchs_cost():
    s = loaded()
    e = preflight.estimate(s, host_facts=FACTS, probe_s=0)
    summary = studycheck.summarise(s, e.plans, e)
    assert summary["sessions"] == 3
    # One session's plan, as the engines' figures are; in_all: the whole study's.
    assert summary["points"] == 8 and summary["in_all"]["points"] == 24
    assert summary["in_all"]["estimated_s"] == 3 * summary["estimated_s"]
    assert summary["slo"] == {"objective": "p99=5ms", "text": "p99 <= 5 ms", "errors": 0.001, "precision": 0.05,
                              "max_rates": 8, "planned_rates": 6, "points": 144, "estimated_s": 1728,
                              "max_points": 192, "max_estimated_s": 2304, "budget_s": None}
    (engine,) = summary["engines"]
    assert engine["search"] == {"points": 48, "estimated_s": 576, "max_points": 64, "max_estimated_s": 768}
    json.dumps(summary)  # what --json prints
    text = studycheck.render(summary)
    lines = text.splitlines()
    assert ("  capacity at p99 <= 5 ms: after each point's closed-loop runs, a search over offered rates (the first "
            "80% of its closed-loop throughput) until the bracket is within 5.0%: about 6 rates a point (at most 8), "
            "each run 2 times as the point is; failed, skipped or in error: at most 0.1% of transactions") in lines
    assert "  sessions: 3 (each runs the whole plan below again: its servers started afresh, its datasets prepared " \
           "again)" in lines
    assert "  then their searches: about 48 offered-rate points, ~10 min (at most 64, ~13 min)" in lines
    total = next(line for line in lines if line.startswith("8 points a session"))
    assert total.startswith("8 points a session, 24 in 3 sessions, estimated machine time ~")
    assert ("then a search for each point's capacity at p99 <= 5 ms: about 6 offered rates a point (at most 8), "
            "about 144 points and ~29 min of machine time more (at most 192 points, ~38 min)") in lines


def test_the_host_probe_is_a_share_of_the_whole_study_search_included():
    from dbarena.host import probe

    s = loaded()
    without = preflight.estimate(s, host_facts=FACTS, probe_s=0)
    e = preflight.estimate(s, host_facts=FACTS)
    assert without.search is not None
    assert e.probe_s == probe.planned_seconds(None, without.seconds + without.search.seconds)


def test_a_budget_cuts_the_search_not_the_closed_loop_points():
    # 24 closed-loop points of 12 s (288 s) and 3 preparations; the search would take 29 min.
    s = loaded(budget_s=900)
    e = preflight.estimate(s, host_facts=FACTS, probe_s=0)
    search = e.search
    assert search is not None and e.points == 24
    room = 900 - e.seconds
    assert search.seconds == pytest.approx(room) and search.max_seconds == pytest.approx(room)
    assert search.points == math.ceil(144 * room / 1728) and search.cut and search.budget_s == 900
    assert e.line().endswith(f"about {search.points} points and {preflight.duration_words(room)} of machine time "
                             "more (--budget 15 min stops it sooner)")
    summary = studycheck.summarise(s, e.plans, e)
    assert summary["slo"]["budget_s"] == 900 and summary["slo"]["points"] == search.points
    assert "no round of rates starts after ~15 min, which cuts them)" in studycheck.render(summary)
    # A budget that holds the typical search but not the longest cuts the longest only.
    roomy = preflight.estimate(loaded(budget_s=2400), host_facts=FACTS, probe_s=0)
    assert roomy.search is not None and not roomy.search.cut and roomy.search.points == 144
    assert roomy.search.max_seconds == pytest.approx(2400 - roomy.seconds) and "--budget" not in roomy.line()
    # One that holds the longest changes nothing.
    assert preflight.estimate(loaded(budget_s=36000), host_facts=FACTS, probe_s=0).search == \
        preflight.estimate(loaded(), host_facts=FACTS, probe_s=0).search
