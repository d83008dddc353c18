"""How far the runs still running are: the points each plans (rebuilt once from its
stored study and the host it runs on) and the JSON a live page polls once a second,
made from one small query (Store.run_progress)."""

from __future__ import annotations

import threading
from dataclasses import dataclass

from dbarena.errors import DbarenaError
from dbarena.records import JSONObject, RunProgress, StoredRun
from dbarena.store.database import Store


@dataclass(frozen=True)
class Plan:
    """What a run plans: its points' expected seconds in the order it runs them (an
    estimate of the time left: the seconds of the points not yet stored)."""

    seconds: tuple[float, ...]

    @property
    def points(self) -> int:
        return len(self.seconds)

    def left_s(self, done: int) -> float:
        return sum(self.seconds[done:])


def plan_of(store: Store, run: StoredRun) -> Plan | None:
    """The points `run` plans, from the study it stored and the facts of its host (what
    its "N%" levels are a share of); None where that cannot be known: an imported run,
    one stored without its study, adaptive repeats (--precision: the stopping rule
    decides as results come), a study that no longer reads."""
    from dbarena.run import preflight, resume  # here: only a page with a running run needs them

    if run.options.get("precision"):
        return None
    try:
        study = resume.stored_study(store, run)
        plans = preflight.expand(study, run.host_facts or None)
    except (DbarenaError, ValueError, KeyError):
        return None
    seconds = tuple(preflight.estimate_s(p) for plan in plans if plan.engine.name == run.engine
                    for p in plan.points if (p.variant or "") == run.variant)
    return Plan(seconds) if seconds else None


class Plans:
    """Each run's plan, made once: a study rebuilt and expanded costs milliseconds and a
    few queries, a poll must cost one small query."""

    def __init__(self) -> None:
        self._plans: dict[int, Plan | None] = {}
        self._lock = threading.Lock()

    def of(self, store: Store, run: StoredRun) -> Plan | None:
        with self._lock:
            if run.id in self._plans:
                return self._plans[run.id]
        made = plan_of(store, run)
        with self._lock:
            self._plans[run.id] = made
        return made

    def known(self, run_id: int) -> Plan | None:
        with self._lock:
            return self._plans.get(run_id)

    def made(self, run_id: int) -> bool:
        with self._lock:
            return run_id in self._plans


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def progress_text(points: int, failed: int, plan: Plan | None, running: bool) -> str:
    """A run's points as Home shows them, and the live page rewrites them: done, and for
    a run still running with a known plan, of how many, how many left and about how long."""
    text = f"{points}"
    if plan is not None and running:
        left = max(plan.points - points, 0)
        text = f"{points} of {plan.points} ({left} left, about {_duration(plan.left_s(points))})"
    elif running:
        text = f"{points} so far"
    return text + (f", {failed} failed" if failed else "")


def progress_json(progress: RunProgress, plan: Plan | None) -> JSONObject:
    """One run's progress as the live page shows it: points done (ok or failed), and
    where the plan is known, the points and the seconds left (an estimate)."""
    left = max(plan.points - progress.points, 0) if plan is not None else None
    return {"status": progress.status, "points": progress.points, "failed": progress.failed,
            "planned": plan.points if plan is not None else None, "left": left,
            "left_s": round(plan.left_s(progress.points)) if plan is not None else None,
            "last_point_id": progress.last_point_id,
            "text": progress_text(progress.points, progress.failed, plan, progress.status == "running")}


def snapshot(store: Store, plans: Plans, watched: list[int]) -> JSONObject:
    """What a live page polls: the runs it watches (those running when it was drawn)
    and every run running now, with their progress; one query (a run first seen here
    has its plan made once)."""
    found = store.run_progress(watched, running=True)
    runs: JSONObject = {}
    for run_id, progress in sorted(found.items()):
        plan = plans.known(run_id)
        if progress.status == "running" and not plans.made(run_id):
            stored = store.run(run_id)
            plan = plans.of(store, stored) if stored is not None else None
        runs[str(run_id)] = progress_json(progress, plan)
    return {"runs": runs, "running": [run_id for run_id, p in sorted(found.items()) if p.status == "running"]}
