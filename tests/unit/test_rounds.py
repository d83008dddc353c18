"""Adaptive repeats without a server: rounds.Adaptive over scripted run figures, and
the sweep running its rounds through the fake executor of test_sweep."""

from __future__ import annotations

from types import SimpleNamespace

from dbarena.stats import rounds
from dbarena.model import PointSpec

from test_sweep import rig, spec  # noqa: F401  (a fixture and a helper)


def point(threads: int) -> PointSpec:
    return PointSpec(engine="postgres", workload="pgbench-select-only", threads=threads, clients=threads,
                     duration_s=10)


class Script:
    """Each point's figures in turn (None: that run failed)."""

    def __init__(self, figures: dict[int, list]):
        self.figures = {k: list(v) for k, v in figures.items()}

    def value(self, result) -> float | None:
        return result.figure

    def results(self, plan: list[PointSpec]) -> list:
        return [SimpleNamespace(spec=s, figure=self.figures[s.threads].pop(0)) for s in plan]


def drive(adaptive: rounds.Adaptive, script: Script, clock: list | None = None) -> list[list[tuple[int, int]]]:
    """Every round as (threads, repeat) pairs."""
    done: list = []
    out = []
    while plan := adaptive.next_round(done):
        out.append([(s.threads, s.repeat) for s in plan])
        done = script.results(plan)
        if clock is not None:
            clock[0] += 10.0 * len(plan)
    return out


def test_points_stop_at_different_repeat_counts_and_rounds_stay_interleaved():
    script = Script({1: [1000.0, 1001.0, 999.5], 2: [1000.0, 1100.0, 900.0, 1050.0, 950.0, 1020.0]})
    adaptive = rounds.Adaptive([point(1), point(2)], target=0.02, max_repeats=6, budget_s=None, value=script.value,
                               estimate_s=lambda s: 10.0)
    played = drive(adaptive, script)
    assert played == [[(1, 0), (2, 0)], [(1, 1), (2, 1)], [(1, 2), (2, 2)], [(2, 3)], [(2, 4)], [(2, 5)]]
    by = {s.spec.threads: s for s in adaptive.summary()}
    assert (by[1].status, len(by[1].values), by[1].half_width < 0.02) == ("reached", 3, True)
    assert (by[2].status, len(by[2].values), by[2].half_width > 0.02) == ("max repeats", 6, True)
    assert by[2].describe() == "not reached (max repeats)"


def test_no_round_starts_past_the_budget():
    clock = [0.0]
    script = Script({1: [1000.0, 1100.0, 900.0, 1000.0], 2: [1000.0, 1100.0, 900.0, 1000.0]})
    adaptive = rounds.Adaptive([point(1), point(2)], target=0.01, max_repeats=10, budget_s=45, value=script.value,
                               estimate_s=lambda s: 10.0, clock=lambda: clock[0])
    played = drive(adaptive, script, clock)
    # 20 s per round: two whole rounds; 5 s are left, less than any point takes.
    assert played == [[(1, 0), (2, 0)], [(1, 1), (2, 1)]]
    assert {s.status for s in adaptive.summary()} == {"budget"}


def test_a_round_is_cut_to_what_fits_the_budget():
    clock = [0.0]
    script = Script({1: [1000.0] * 3, 2: [1000.0] * 3})
    adaptive = rounds.Adaptive([point(1), point(2)], target=0.01, max_repeats=10, budget_s=50, value=script.value,
                               estimate_s=lambda s: 10.0, clock=lambda: clock[0])
    assert drive(adaptive, script, clock) == [[(1, 0), (2, 0)], [(1, 1), (2, 1)], [(1, 2)]]
    by = {s.spec.threads: s.status for s in adaptive.summary()}
    assert by == {1: "reached", 2: "budget"}


def test_a_point_that_fails_twice_stops_and_a_resumed_one_goes_on_from_its_history():
    script = Script({1: [None, None], 2: [1000.0, 1000.0, 1000.0]})
    adaptive = rounds.Adaptive([point(1), point(2)], target=0.02, max_repeats=10, budget_s=None, value=script.value,
                               estimate_s=lambda s: 10.0)
    drive(adaptive, script)
    by = {s.spec.threads: s for s in adaptive.summary()}
    assert (by[1].status, by[1].failures, by[1].next_repeat) == ("failed", 2, 2)
    history = {point(2): rounds.PointState(spec=point(2), values=[1000.0, 1001.0], next_repeat=2)}
    script = Script({2: [999.0]})
    resumed = rounds.Adaptive([point(2)], target=0.02, max_repeats=10, budget_s=None, value=script.value,
                              estimate_s=lambda s: 10.0, history=history)
    assert drive(resumed, script) == [[(2, 2)]]  # the third run, at the next repeat index
    assert resumed.summary()[0].status == "reached"


def test_the_forecast_follows_the_observed_spread():
    seen: list[list[PointSpec]] = []
    script = Script({1: [1000.0, 1001.0, 999.0], 2: [1000.0, 1060.0, 940.0] + [1000.0] * 7})
    adaptive = rounds.Adaptive([point(1), point(2)], target=0.02, max_repeats=10, budget_s=None, value=script.value,
                               estimate_s=lambda s: 10.0, on_forecast=seen.append)
    drive(adaptive, script)
    assert len(seen[0]) == 6  # at first: 3 runs of each point
    after_three = seen[3]  # after the third round: point 2 is far from +-2 %
    assert after_three and {s.threads for s in after_three} == {2} and len(after_three) > 1


def test_the_sweep_runs_rounds_and_keeps_a_run_long_dataset_between_them(rig):  # noqa: F811
    plan = [spec("sysbench-read-only", 1), spec("sysbench-read-only", 2)]
    from dbarena.stats import analysis

    adaptive = rounds.Adaptive(plan, target=0.02, max_repeats=5, budget_s=None, value=analysis.result_value,
                               estimate_s=lambda s: 10.0)
    results = rig.sweep().run_rounds(adaptive.next_round)
    # The same captured output every time: no spread, so 3 runs each reach the target.
    assert [(r.spec.threads, r.spec.repeat) for r in results] == [(1, 0), (2, 0), (1, 1), (2, 1), (1, 2), (2, 2)]
    assert rig.steps().count("prepare") == 1
    assert [r["repeat"] for r in rig.stored()] == [0, 0, 1, 1, 2, 2]
    assert rig.reporter.started == list(range(6))


def test_the_progress_bar_follows_the_adaptive_plan():
    import io

    from rich.console import Console

    from dbarena.report.terminal import TerminalReporter

    reporter = TerminalReporter(Console(file=io.StringIO(), width=120))
    plan = [point(1), point(2)] * 3
    reporter.begin(plan, lambda s: 10.0)
    total = lambda: reporter.progress.tasks[0].total  # noqa: E731
    assert total() == 60
    reporter.replan(4, [point(2)] * 5)  # after 4 points: point 2 needs 5 more runs
    assert total() == 90 and len(reporter.plan) == 9
    reporter.end()
