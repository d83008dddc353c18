"""How far the runs still running are: the points each plans (rebuilt once from its
stored study and the host it runs on), the per-second throughput of the point each is
measuring now or, between points, of the point it stored last, and the JSON a live page
polls once a second, made from one small query of the store (Store.run_progress).

A run stores a point whole when it ends (its row, its per-second series, its raw
output: Store.add_point). While it measures one, it publishes the point's seconds as
they come (store/live.py): on a PostgreSQL store in the store's table live_seconds, which
run_progress's one query reads with the rest; on an SQLite store in the sidecar file
STORE.live, read here read-only (a tiny file apart from the store) while a run is
running. Those seconds are shown while the run has stored no point since they began
(their `stored_before`); once it has, the point stored last is."""

from __future__ import annotations

import threading
from dataclasses import dataclass

from dbarena.errors import DbarenaError
from dbarena.records import JSONObject, LivePoint, RunProgress, StoredRun
from dbarena.store import live as store_live
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


# The seconds of a point's per-second throughput Home shows for a running run.
TAIL_S = 5


@dataclass(frozen=True)
class Latest:
    """The per-second throughput of the point a running run stored last: what it measured
    at, and its last TAIL_S seconds (oldest first; empty for a point without a series)."""

    point_id: int
    what: str
    status: str
    tps: tuple[float, ...]

    def text(self) -> str:
        if self.status != "ok":
            return f"{self.what}: {self.status}"
        if not self.tps:
            return f"{self.what}: no per-second series"
        mean = sum(self.tps) / len(self.tps)
        seconds = ", ".join(f"{v:,.0f}" for v in self.tps)
        return f"{self.what}: {mean:,.1f} TPS over its last {len(self.tps)} s ({seconds})"


def latest_of(store: Store, point_id: int) -> Latest | None:
    """The point's Latest, from the store's per-second series (None: not there)."""
    found = store.points(point_ids=(point_id,), warmups=True)
    if not found:
        return None
    point = found[0]
    series = store.tps_series([point_id]).get(point_id)
    tps = tuple(float(v) for v in series[1][-TAIL_S:]) if series is not None else ()
    what = f"{point.workload}, {point.threads} thread{'s' if point.threads != 1 else ''}"
    return Latest(point_id=point_id, what=what, status=point.status, tps=tps)


class Latests:
    """Each point's Latest, read once (its seconds never change once stored): a poll reads
    a point's series only when a run has stored a new one, one small query otherwise."""

    SIZE = 256

    def __init__(self) -> None:
        self._latest: dict[int, Latest | None] = {}
        self._lock = threading.Lock()

    def of(self, store: Store, point_id: int) -> Latest | None:
        with self._lock:
            if point_id in self._latest:
                return self._latest[point_id]
        made = latest_of(store, point_id)
        with self._lock:
            self._latest[point_id] = made
            while len(self._latest) > self.SIZE:  # the oldest first (dicts keep their order)
                del self._latest[next(iter(self._latest))]
        return made


def measuring_of(store: Store, found: dict[int, RunProgress]) -> dict[int, LivePoint]:
    """The point each running run of `found` is measuring now, where its seconds are
    published and no point was stored since they began: from the store's own rows
    (PostgreSQL, read by run_progress's query), or from an SQLite store's sidecar (read
    only when a run is running; a missing sidecar is nothing live)."""
    running = [run_id for run_id, p in found.items() if p.status == "running"]
    if not running:
        return {}
    points = {run_id: p.live for run_id, p in found.items() if p.live is not None}
    if store.path is not None:
        points.update(store_live.read_sidecar(store_live.sidecar(store.path), running))
    return {run_id: point for run_id, point in points.items()
            if run_id in running and point.stored_before == found[run_id].stored and point.seconds}


def measuring_text(point: LivePoint) -> str:
    """The point being measured as Home shows it: what, how far, its last TAIL_S seconds."""
    clients = f"{point.clients} client{'s' if point.clients != 1 else ''}"
    threads = f" on {point.threads} thread{'s' if point.threads != 1 else ''}" if point.threads != point.clients else ""
    variant = f" [{point.variant}]" if point.variant else ""
    second = point.seconds[-1][0]
    tps = [v for _, v in point.seconds[-TAIL_S:]]
    head = (f"{'warming up' if point.phase == 'warmup' else 'measuring'}: {point.workload}{variant}, {clients}{threads}, "
            f"repeat {point.repeat + 1}, {second:.0f} s of {point.duration_s:g}")
    mean = sum(tps) / len(tps)
    return f"{head}: {mean:,.1f} TPS over its last {len(tps)} s ({', '.join(f'{v:,.0f}' for v in tps)})"


def measuring_json(point: LivePoint) -> JSONObject:
    return {"phase": point.phase, "workload": point.workload, "threads": point.threads, "clients": point.clients,
            "variant": point.variant, "repeat": point.repeat, "duration_s": point.duration_s,
            "second": point.seconds[-1][0], "tps": [v for _, v in point.seconds[-TAIL_S:]]}


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


def latest_text(latest: Latest | None) -> str:
    return latest.text() if latest is not None else "no point stored yet"


def when(stamp: str | None) -> str:
    """A stored UTC timestamp as the pages show it: date and time to the second."""
    return "-" if not stamp else stamp.replace("T", " ").removesuffix("+00:00")[:19]


def progress_json(progress: RunProgress, plan: Plan | None, latest: Latest | None = None,
                  measuring: LivePoint | None = None, ended: str | None = None) -> JSONObject:
    """One run's progress as the live page shows it: points done (ok or failed), where
    the plan is known the points and the seconds left (an estimate), the throughput of
    the point it is measuring, second by second, and of the point it stored last;
    `current_text`, the one the page shows (the point being measured, else the last)."""
    left = max(plan.points - progress.points, 0) if plan is not None else None
    return {"status": progress.status, "points": progress.points, "failed": progress.failed,
            "planned": plan.points if plan is not None else None, "left": left,
            "left_s": round(plan.left_s(progress.points)) if plan is not None else None,
            "last_point_id": progress.last_point_id,
            "latest_tps": list(latest.tps) if latest is not None else None,
            "latest_text": latest_text(latest),
            "measuring": measuring_json(measuring) if measuring is not None else None,
            "current_text": measuring_text(measuring) if measuring is not None else latest_text(latest),
            "text": progress_text(progress.points, progress.failed, plan, progress.status == "running"),
            "ended": ended}


def snapshot(store: Store, plans: Plans, watched: list[int], latests: Latests | None = None) -> JSONObject:
    """What a live page polls: the runs it watches (those running when it was drawn)
    and every run running now, with their progress and the point each is measuring; one
    query of the store (a run first seen here has its plan made once; a point stored
    since the last poll has its seconds read once; an SQLite store's sidecar is read
    while a run is running)."""
    found = store.run_progress(watched, running=True)
    measuring = measuring_of(store, found)
    runs: JSONObject = {}
    for run_id, progress in sorted(found.items()):
        plan = plans.known(run_id)
        if progress.status == "running" and not plans.made(run_id):
            stored = store.run(run_id)
            plan = plans.of(store, stored) if stored is not None else None
        last = progress.last_point_id
        latest = (latests.of(store, last) if latests is not None and last is not None
                  and progress.status == "running" else None)
        ended = None
        if progress.status != "running":
            # A run the page followed has ended: when, for its row in the list (asked once:
            # the page stops following it).
            stored = store.run(run_id)
            ended = when(stored.ended_at if stored is not None else None)
        runs[str(run_id)] = progress_json(progress, plan, latest, measuring.get(run_id), ended)
    return {"runs": runs, "running": [run_id for run_id, p in sorted(found.items()) if p.status == "running"]}
