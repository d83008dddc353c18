"""stats/bisection.py: the search of `dbarena bisect` driven by a fake measurer whose
cause is known: a single cause among five changes, an interaction of two, two causes
each of a part, a difference that does not reproduce, an unsettable difference, a
budget hit, an ordered axis, and a search resumed from what was measured."""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence

import pytest

from dbarena.stats import bisection
from dbarena.stats.bisection import Axis, Configuration, Difference, Search

FIVE = [Difference("setting synchronous_commit", "on", "off"), Difference("setting work_mem", "4MB", "64MB"),
        Difference("setting random_page_cost", "4", "1.1"), Difference("setting effective_cache_size", None, "2GB"),
        Difference("setting log_min_duration_statement", None, "1000")]


class Fake:
    """A machine whose throughput is 1000 times the factor `effect` gives a set of
    applied changes, each session off by a lognormal spread (3 %), a session 10 s of a
    fake clock."""

    def __init__(self, effect: Callable[[Configuration], float], spread: float = 0.03, seed: int = 7):
        self.effect = effect
        self.random = random.Random(seed)
        self.spread = spread
        self.now = 0.0
        self.calls: list[tuple[Configuration, int]] = []

    def __call__(self, configuration: Configuration, sessions: int) -> Sequence[float]:
        self.calls.append((configuration, sessions))
        self.now += 10.0 * sessions
        mean = 1000 * self.effect(configuration)
        return [mean * math.exp(self.random.gauss(0, self.spread)) for _ in range(sessions)]

    def clock(self) -> float:
        return self.now


def _search(fake: Fake, **kwargs: object) -> Search:
    return Search(fake, clock=fake.clock, session_s=10.0, **kwargs)  # type: ignore[arg-type]


def _sync(c: Configuration) -> float:
    return 4.0 if dict(c.changes).get("setting synchronous_commit") == "off" else 1.0


def test_a_single_cause_among_five_is_named_and_only_it():
    fake = Fake(_sync)
    answer = _search(fake).run(FIVE)
    assert answer.status == bisection.FOUND
    assert [d.name for d in answer.cause] == ["setting synchronous_commit"]
    assert answer.effect is not None and answer.effect.significant and answer.effect.ratio == pytest.approx(4, rel=0.1)
    assert answer.share == pytest.approx(1, abs=0.1)
    assert answer.rest is not None and not answer.rest.significant
    lines = answer.lines()
    assert lines[0].startswith("reproduced here: B against A +")
    assert any(line.startswith("setting synchronous_commit on -> off: +") and "of the difference" in line
               for line in lines)
    assert any(line.startswith("the other 4 changes together: ") for line in lines)
    # ddmin's cost: far fewer steps than the 31 subsets of five changes.
    assert len(answer.steps) <= 8
    assert answer.as_json()["cause"] == [FIVE[0].as_json()]


def test_an_interaction_of_two_is_said_to_need_both():
    def together(c: Configuration) -> float:
        names = c.names
        return 0.5 if {"setting work_mem", "setting random_page_cost"} <= names else 1.0

    answer = _search(Fake(together)).run(FIVE)
    assert answer.status == bisection.FOUND
    assert {d.name for d in answer.cause} == {"setting work_mem", "setting random_page_cost"}
    assert answer.together_only is True
    assert all(j.outcome == bisection.LIKE_A for _, j in answer.alone)
    assert any(line.startswith("only together: setting work_mem 4MB -> 64MB and setting random_page_cost")
               for line in answer.lines())


def test_two_causes_each_of_a_part_are_both_in_the_set_and_not_together_only():
    def parts(c: Configuration) -> float:
        return (2.0 if "setting work_mem" in c.names else 1.0) * (2.0 if "setting effective_cache_size" in c.names
                                                                  else 1.0)

    answer = _search(Fake(parts)).run(FIVE)
    assert {d.name for d in answer.cause} == {"setting work_mem", "setting effective_cache_size"}
    assert answer.together_only is False
    assert all(j.outcome == bisection.PART for _, j in answer.alone)


def test_a_difference_that_does_not_reproduce_stops_with_its_interval():
    fake = Fake(lambda c: 1.0)
    answer = _search(fake).run(FIVE)
    assert answer.status == bisection.NOT_REPRODUCED
    assert answer.reproduced is not None and answer.reproduced.ci_low is not None
    assert answer.lines()[0].startswith("does not reproduce here: B against A ")
    assert "95 % CI" in answer.lines()[0]
    # Only A and B were measured: no step of the search.
    assert {c for c, _ in fake.calls} == {Configuration(), Configuration.of({d.name: d.b for d in FIVE})}


def test_an_unsettable_difference_is_listed_and_never_measured():
    cpu = Difference("cpu model", "Xeon", "EPYC", settable=False, why="another machine's hardware")
    fake = Fake(_sync)
    answer = _search(fake).run([cpu, *FIVE])
    assert [d.name for d in answer.cause] == ["setting synchronous_commit"]
    assert all("cpu model" not in c.names for c, _ in fake.calls)
    assert "not settable here: cpu model Xeon -> EPYC (another machine's hardware)" in answer.lines()
    assert answer.as_json()["unsettable"] == [cpu.as_json()]


def test_nothing_settable_measures_nothing():
    fake = Fake(_sync)
    answer = _search(fake).run([Difference("kernel", "6.1", "6.8", settable=False)])
    assert answer.status == bisection.NOTHING_SETTABLE and fake.calls == []


def test_the_budget_stops_the_search_before_it_is_exceeded_and_says_how_far_it_got():
    fake = Fake(_sync)
    answer = _search(fake, budget_s=75.0).run(FIVE)
    assert answer.status == bisection.BUDGET
    assert answer.seconds <= 75.0 and fake.now <= 75.0
    # A and B (40 s) and one step of two sessions (20 s): the set narrowed, not minimal.
    assert 1 <= len(answer.cause) < len(FIVE)
    assert any("setting synchronous_commit" == d.name for d in answer.cause)
    assert any(line.startswith("the budget was reached: the difference is narrowed to") for line in answer.lines())


def test_a_budget_too_small_for_a_and_b_measures_nothing():
    fake = Fake(_sync)
    answer = _search(fake, budget_s=5.0).run(FIVE)
    assert answer.status == bisection.BUDGET and fake.calls == [] and answer.cause == ()


def test_an_unresolved_step_measures_more_sessions_up_to_the_cap():
    # A 6 % change under a 3 % spread: more sessions are needed than 2 to decide.
    fake = Fake(lambda c: 1.08 if "setting work_mem" in c.names else 1.0, seed=3)
    answer = _search(fake, max_sessions=6).run(FIVE[:2])
    assert all(step.sessions <= 6 for step in answer.steps)
    assert answer.status in (bisection.FOUND, bisection.NOT_REPRODUCED)


def test_an_ordered_axis_is_bisected_within_the_cause():
    builds = tuple(f"/builds/{i}" for i in range(9))
    diffs = [Difference("bindir", builds[0], builds[-1]), *FIVE[1:]]

    def regression(c: Configuration) -> float:
        build = dict(c.changes).get("bindir", builds[0])
        return 0.5 if build is not None and int(build.rsplit("/", 1)[1]) >= 5 else 1.0

    answer = _search(Fake(regression)).run(diffs, axis=Axis("bindir", builds))
    assert [d.name for d in answer.cause] == ["bindir"]
    assert answer.ordered == ("bindir", "/builds/4", "/builds/5")
    assert "  bindir: the change comes between /builds/4 (like A) and /builds/5 (like B)" in answer.lines()


def test_a_resumed_search_reads_what_was_measured_and_measures_only_the_rest():
    first = Fake(_sync)
    done = _search(first)
    answer = done.run(FIVE)
    again = Fake(_sync, seed=99)
    resumed = _search(again, known=done.values).run(FIVE)
    assert again.calls == []
    assert [d.name for d in resumed.cause] == [d.name for d in answer.cause]
    assert resumed.sessions == 0


@pytest.mark.parametrize("cause", [{3}, {1, 4}, {0, 2, 5}, {7}])
def test_ddmin_finds_a_one_minimal_set(cause):
    items = [str(i) for i in range(8)]
    wanted = {str(i) for i in cause}
    tested: list[frozenset[str]] = []

    def fails(chosen: Sequence[str]) -> bool:
        tested.append(frozenset(chosen))
        return wanted <= set(chosen)

    found = bisection._ddmin(items, fails, lambda reached: None)
    assert set(found) == wanted
    assert len(tested) <= len(items) ** 2
