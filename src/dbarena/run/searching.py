"""--slo as a sweep: each point's closed-loop run, then its search over offered rates
(stats/capacity.py), round after round, every point's next rate in one round (so the
points of a level are interleaved, as repeats are). Each rate is a point of its own
(the tool's `rate` option: pgbench -R), run `repeats` times, stored as any point. A
resumed session continues its searches from what its runs stored."""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Callable, Mapping, Sequence

from dbarena.interfaces import Reporter, ResultStore
from dbarena.model import PointResult, PointSpec
from dbarena.run.runner import Bound, Sweep
from dbarena.stats import analysis, capacity, rounds
from dbarena.stats.capacity import Objective, Search
from dbarena.workloads import WORKLOADS


def with_rate(spec: PointSpec, rate: float, whole: bool = False) -> PointSpec:
    """The point offered `rate` TPS (the tool's `rate` option, in its configuration key;
    `whole`: a tool that takes whole TPS only)."""
    return replace(spec, options=capacity.offering(spec.options, capacity.rate_text(rate, whole)))


def closed_loop(spec: PointSpec) -> PointSpec:
    """The closed-loop point (repeat 0) whose search a point is a step of: the search's key."""
    return replace(spec, repeat=0, options=tuple(sorted((k, v) for k, v in spec.options
                                                         if k != capacity.RATE_OPTION)))


@dataclass
class Searches:
    """Every point's search in one session: what next_round gives Sweep.run_rounds."""

    objective: Objective
    repeats: int
    closed: list[PointSpec]  # the closed-loop points still to run (every repeat)
    searches: dict[PointSpec, Search] = field(default_factory=dict)  # base point (repeat 0) -> its search
    said: set[PointSpec] = field(default_factory=set)
    on_end: Callable[[PointSpec, Search], None] | None = None

    def take(self, result: PointResult) -> None:
        base = closed_loop(result.spec)
        search = self.searches.get(base)
        if search is None:
            return
        rate = capacity.offered(result.spec.options)
        if rate is None:
            figure = analysis.result_value(result)
            if figure is None:
                search.closed_failed = True
            else:
                search.closed.append(figure)
        else:
            search.add(capacity.judge(self.objective, rate, capacity.of_result(result)))

    def next_round(self, finished: list[PointResult]) -> Sequence[PointSpec]:
        for result in finished:
            self.take(result)
        if self.closed:
            out, self.closed = self.closed, []
            return out
        out = []
        for base, search in self.searches.items():
            rate = search.next_rate()
            if rate is None:
                if base not in self.said and self.on_end is not None:
                    self.said.add(base)
                    self.on_end(base, search)
                continue
            spec = with_rate(base, rate, search.whole_rates)
            out += [replace(spec, repeat=k) for k in range(self.repeats)]
        return out

    def closed_pending(self, specs: Sequence[PointSpec]) -> bool:
        """Whether a round is of closed-loop points (the plan's, which a budget does not cut)."""
        return all(capacity.offered(s.options) is None for s in specs)

    def forecast(self) -> list[PointSpec]:
        """The points expected after the round under way (the reporter's ETA): each open
        search's typical number of rates (capacity.planned_rates) less those it tried
        and the one it runs now."""
        typical = capacity.planned_rates(self.objective)
        out: list[PointSpec] = []
        for base, search in self.searches.items():
            if search.done() is None:
                out += [base] * (max(0, typical - len(search.tried) - 1) * self.repeats)
        return out


def searches(objective: Objective, points: Sequence[PointSpec], repeats: int, bound: Mapping[str, Bound],
             store: ResultStore, stored_ok: frozenset[tuple[PointSpec, int]], resumed: bool) -> Searches:
    """The session's searches: the planned closed-loop points not stored yet, and what
    its runs stored already (a resumed session) fed to each point's search."""
    found = Searches(objective=objective, repeats=repeats,
                     closed=[p for p in points if (rounds.base(p), p.repeat) not in stored_ok])
    bases = list(dict.fromkeys(closed_loop(p) for p in points))
    found.searches = {b: Search(objective, duration_s=float(b.duration_s),
                                whole_rates=WORKLOADS[b.workload].tool.whole_rates) for b in bases}
    if not resumed:
        return found
    of_key = {capacity.search_key(bound[b.variant].config(b)): b for b in bases}
    for b in bound.values():
        for row in analysis.load(store, run_id=b.run_id):
            base = of_key.get(capacity.search_key(row.config or {})) if row.config is not None else None
            if base is None or row.phase != "measured":
                continue
            rate = capacity.offered(row.options)
            if rate is None:
                figure = analysis.value(row)
                if figure is not None:
                    found.searches[base].closed.append(figure)
            else:
                found.searches[base].add(capacity.judge(objective, rate, capacity.of_point(row)))
    return found


def sweep(objective: Objective, points: Sequence[PointSpec], repeats: int, sweep: Sweep, store: ResultStore,
          reporter: Reporter, stored_ok: frozenset[tuple[PointSpec, int]], *, resumed: bool,
          later: Sequence[PointSpec], deadline: float | None = None,
          clock: Callable[[], float] = time.monotonic) -> list[PointResult]:
    """The session's closed-loop points, then every point's search; each search's end
    said in one line. `deadline` (of `clock`: --budget): no round of rates starts past
    it, and the searches it stops say where they had got to."""

    def said(base: PointSpec, search: Search) -> None:
        reporter.stage(end_line(objective, base, search))

    found = searches(objective, points, repeats, sweep.targets, store, stored_ok, resumed)
    found.on_end = said

    def next_round(finished: list[PointResult]) -> Sequence[PointSpec]:
        specs = found.next_round(finished)
        if specs and deadline is not None and clock() >= deadline and not found.closed_pending(specs):
            for base, search in found.searches.items():
                if search.done() is None:
                    reporter.stage(end_line(objective, base, search, "the budget was spent"))
            return []
        if specs:
            reporter.replan(sweep.next_index, [*specs, *found.forecast(), *later])
        return specs

    return sweep.run_rounds(next_round)


def end_line(objective: Objective, base: PointSpec, search: Search, stopped: str | None = None) -> str:
    """How one point's search ended (or was `stopped`), in one line."""
    where = f"{base.workload} at {base.threads} threads{f' [{base.variant}]' if base.variant else ''}"
    lo, hi = search.bracket()
    why = stopped or search.done() or ""
    if lo is None:
        return f"capacity of {where} at {objective.text}: none ({why})"
    achieved = [j.achieved for j in search.tried[lo] if j.achieved is not None]
    figure = f"{sum(achieved) / len(achieved):,.0f} TPS" if achieved else f"{capacity.rate_text(lo)} TPS offered"
    above = f", missed at {capacity.rate_text(hi)} ({next(j.why for j in search.tried[hi] if not j.meets)})" \
        if hi is not None else ""
    return f"capacity of {where} at {objective.text}: {figure} (met at {capacity.rate_text(lo)} offered{above}; " \
           f"{len(search.tried)} rates, {why})"
