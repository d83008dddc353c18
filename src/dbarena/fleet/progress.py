"""A run's progress as a small JSON file that `dbarena fleet status` reads from the host."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Callable, Mapping, Sequence

from dbarena.interfaces import Reporter
from dbarena.model import PointResult, PointSpec, Sample


def write_json(path: Path, data: Mapping[str, object]) -> None:
    """Atomically: a reader never sees half a file."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, sort_keys=True))
    os.replace(tmp, path)


def describe(spec: PointSpec) -> str:
    variant = f" [{spec.variant}]" if spec.variant else ""
    return f"{spec.engine} {spec.workload} threads={spec.threads}{variant} repeat {spec.repeat + 1}"


class ProgressFile:
    """interfaces.Reporter: points done / planned, the current point and an ETA,
    rewritten at every step. A study with several engines calls begin once per engine:
    the counts add up.

    The ETA (eta_s) is None until there is a plan; until a first point has ended it is
    the plan's own estimate (eta_basis "estimate"); then those estimates scaled by how
    long the ended points took against their estimates (eta_basis "measured")."""

    def __init__(self, path: Path, clock: Callable[[], float] = time.time):
        self.path = path
        self.clock = clock
        self.planned_before = 0
        self.done_before = 0
        self.plan: list[PointSpec] = []
        self.estimate_s: Callable[[PointSpec], float] = lambda spec: float(spec.duration_s)
        self.done = 0
        self.failed = 0
        self.current: str | None = None
        self.current_started: float | None = None
        self.index = 0
        self.stage_text = "starting"
        self.took_s = 0.0        # wall time of the points that ended
        self.estimated_s = 0.0   # their estimates
        self.write()

    def _eta(self) -> tuple[float | None, str]:
        if not self.plan:
            return None, "unknown"
        pace = self.took_s / self.estimated_s if self.took_s > 0 and self.estimated_s > 0 else 1.0
        remaining = sum(self.estimate_s(p) for p in self.plan[self.index:]) * pace
        if self.current_started is not None and self.index < len(self.plan):
            remaining -= min(self.clock() - self.current_started, self.estimate_s(self.plan[self.index]) * pace)
        return max(remaining, 0.0), "measured" if self.took_s > 0 else "estimate"

    def write(self) -> None:
        eta, basis = self._eta()
        write_json(self.path, {
            "state": "running", "pid": os.getpid(), "updated": self.clock(),
            "planned": self.planned_before + len(self.plan), "done": self.done_before + self.done,
            "failed": self.failed, "current": self.current, "stage": self.stage_text,
            "eta_s": None if eta is None else round(eta), "eta_basis": basis,
        })

    def begin(self, plan: Sequence[PointSpec], estimate_s: Callable[[PointSpec], float]) -> None:
        self.planned_before += len(self.plan)
        self.done_before += self.done
        self.plan, self.estimate_s, self.done, self.index, self.current = list(plan), estimate_s, 0, 0, None
        self.write()

    def replan(self, first_index: int, remaining: Sequence[PointSpec]) -> None:
        self.plan = self.plan[:first_index] + list(remaining)
        self.write()

    def stage(self, text: str) -> None:
        self.stage_text = text
        self.write()

    def point_started(self, index: int, spec: PointSpec) -> None:
        self.index, self.current, self.current_started = index, describe(spec), self.clock()
        self.write()

    def sample(self, spec: PointSpec, sample: Sample) -> None:
        pass  # once a point is enough: the controller polls every few seconds

    def point_finished(self, index: int, result: PointResult) -> None:
        if self.current_started is not None and index < len(self.plan):
            self.took_s += max(self.clock() - self.current_started, 0.0)
            self.estimated_s += self.estimate_s(self.plan[index])
        self.done += 1
        self.failed += 0 if result.ok else 1
        self.index, self.current, self.current_started = index + 1, None, None
        self.write()

    def end(self) -> None:
        self.current = None
        self.write()


class Tee:
    """interfaces.Reporter: tells every reporter the same."""

    def __init__(self, *reporters: Reporter):
        self.reporters = reporters

    def begin(self, plan: Sequence[PointSpec], estimate_s: Callable[[PointSpec], float]) -> None:
        for r in self.reporters:
            r.begin(plan, estimate_s)

    def replan(self, first_index: int, remaining: Sequence[PointSpec]) -> None:
        for r in self.reporters:
            r.replan(first_index, remaining)

    def stage(self, text: str) -> None:
        for r in self.reporters:
            r.stage(text)

    def point_started(self, index: int, spec: PointSpec) -> None:
        for r in self.reporters:
            r.point_started(index, spec)

    def sample(self, spec: PointSpec, sample: Sample) -> None:
        for r in self.reporters:
            r.sample(spec, sample)

    def point_finished(self, index: int, result: PointResult) -> None:
        for r in self.reporters:
            r.point_finished(index, result)

    def end(self) -> None:
        for r in self.reporters:
            r.end()
