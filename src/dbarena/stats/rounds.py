"""Adaptive repeats (--precision): which points run in the next round.

The plan runs in rounds; each round runs every unfinished point once, in plan order
(so repeats stay interleaved, as with a fixed --repeat). After a round, a point stops
when stats.precision says the 95 % interval of its mean over runs is within the
target (never before stats.MIN_REPEATS runs), when it has run max_repeats times, or
when it failed twice; no round starts past the budget. Every run is a complete run of
the tool, stored as it printed it: only the number of runs adapts.

Pure apart from the clock, which is injected, so tests drive it without a server.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Callable, Iterable, Sequence

from dbarena.stats import estimators as stats
from dbarena.model import PointResult, PointSpec

MAX_FAILURES = 2  # a point that keeps failing is not retried until max_repeats


def base(spec: PointSpec) -> PointSpec:
    """A point of the plan apart from which repeat it is."""
    return replace(spec, repeat=0)


@dataclass
class PointState:
    """How far one point of the plan has come."""

    spec: PointSpec  # repeat 0
    values: list[float] = field(default_factory=list)  # each ok run's figure (steady-state mean, or the tool's)
    failures: int = 0
    next_repeat: int = 0
    status: str = "running"  # running | reached | max repeats | budget | failed
    half_width: float | None = None  # relative, of the conservative 95 % interval

    @property
    def runs(self) -> int:
        return len(self.values) + self.failures

    def stored(self, repeat: int, figure: float | None) -> None:
        """A run of this point found stored (a resumed sweep's): the next repeat comes
        after it, and its figure counts where it has one."""
        self.next_repeat = max(self.next_repeat, repeat + 1)
        if figure is not None:
            self.values.append(figure)

    def describe(self) -> str:
        if self.status == "reached":
            return "reached"
        if self.status == "running":
            return "running"
        return f"not reached ({self.status})"


class Adaptive:
    """Rounds of a plan until every point reached its precision, ran max_repeats
    times, failed, or the budget ran out.

    value(result) is a finished run's figure (analysis.result_value); estimate_s(spec)
    what a run is expected to take; history holds what earlier sessions of the same
    run stored (--resume): per point, its values, failures and next repeat index.
    """

    def __init__(self, points: Sequence[PointSpec], *, target: float, max_repeats: int, budget_s: float | None,
                 value: Callable[[PointResult], float | None], estimate_s: Callable[[PointSpec], float],
                 history: dict[PointSpec, PointState] | None = None, clock: Callable[[], float] = time.monotonic,
                 on_forecast: Callable[[list[PointSpec]], None] | None = None):
        self.target = target
        self.max_repeats = max_repeats
        self.value = value
        self.estimate_s = estimate_s
        self.clock = clock
        self.deadline = clock() + budget_s if budget_s is not None else None
        self.on_forecast = on_forecast
        self.states: dict[PointSpec, PointState] = {}
        for spec in points:
            key = base(spec)
            if key not in self.states:
                state = (history or {}).get(key) or PointState(spec=key)
                state.failures = 0  # a resumed run tries its failed points again
                self.states[key] = state
                self._judge(state)

    def _judge(self, state: PointState) -> None:
        if state.values:
            p = stats.precision(state.values, self.target)
            state.half_width = p.half_width
            if p.reached:
                state.status = "reached"
                return
        if state.runs >= self.max_repeats:
            state.status = "max repeats"
        elif state.failures >= MAX_FAILURES:
            state.status = "failed"

    def record(self, results: Iterable[PointResult]) -> None:
        for result in results:
            state = self.states.get(base(result.spec))
            if state is None:
                continue
            value = self.value(result)
            if value is None:
                state.failures += 1
            else:
                state.values.append(value)
            state.next_repeat = max(state.next_repeat, result.spec.repeat + 1)
            self._judge(state)

    def next_round(self, finished: Sequence[PointResult]) -> list[PointSpec]:
        """The points of the next round, given the results of the last one ([] at the
        start); [] when nothing is left to run."""
        self.record(finished)
        running = [s for s in self.states.values() if s.status == "running"]
        chosen = [replace(s.spec, repeat=s.next_repeat) for s in running]
        if self.deadline is not None:
            left = self.deadline - self.clock()
            fits, spent = [], 0.0
            for spec in chosen:
                spent += self.estimate_s(spec)
                if spent > left:
                    break
                fits.append(spec)
            if not fits:
                for s in running:
                    s.status = "budget"
            chosen = fits
        if self.on_forecast is not None:
            self.on_forecast(chosen + self.forecast(after=chosen))
        return chosen

    def forecast(self, after: Sequence[PointSpec] = ()) -> list[PointSpec]:
        """The rounds expected after `after` (the round about to run), if each point's
        spread stays as observed so far (for the ETA)."""
        counted = {base(s) for s in after}
        wanted = {}
        for key, s in self.states.items():
            if s.status != "running":
                continue
            done = len(s.values) + (key in counted)
            need = stats.repeats_needed(s.values, self.target, self.max_repeats) if len(s.values) >= 2 else \
                min(stats.MIN_REPEATS, self.max_repeats)
            wanted[key] = max(0, need - done)
        out = []
        for r in range(max(wanted.values(), default=0)):
            out += [replace(k, repeat=self.states[k].next_repeat + (k in counted) + r)
                    for k, n in wanted.items() if n > r]
        return out

    def summary(self) -> list[PointState]:
        return list(self.states.values())
