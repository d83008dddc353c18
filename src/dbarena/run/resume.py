"""Continuing a run (`dbarena run --resume`, the fleet's hosts): which stored run is
unfinished, and the plan it followed, checked against what the user gave."""

from __future__ import annotations

from collections.abc import Mapping

import os
from typing import Any

from dbarena.run import plan
from dbarena import study as study_mod
from dbarena.errors import UsageError
from dbarena.interfaces import ResultStore
from dbarena.lifecycle import state
from dbarena.model import PointSpec
from dbarena.records import StoredRun, json_object
from dbarena.study import Study


# An interrupt can fall between two engines of a study (the first engine's run
# finished, the next one's not yet begun: its server starting, or nothing yet), and a
# run's row exists only once its target is open. The runs of an invocation then all
# look finished, yet the study is not. Every run stores the study's text and the flags
# applied over it, which is the whole plan: rebuilt, it says which (engine, variant)
# runs the invocation should have (plan.planned_runs), so nothing more is recorded
# up front and stores written before this check resume the same way.


def incomplete(store: ResultStore, run: StoredRun) -> bool:
    """Whether a stored run left something to do: it did not finish, a point of it
    failed that no later repeat replaced, or its `dbarena run` never began a run its
    study plans (interrupted between engines). What --resume without a run continues."""
    if left_to_do(store, run):
        return True
    return run.invocation is not None and bool(never_begun(store, store.invocation_runs(run.invocation)))


def left_to_do(store: ResultStore, run: StoredRun) -> bool:
    """Whether this run itself is unfinished: not finished, or a failed point that no
    later repeat of the same configuration and index replaced."""
    if run.status != "finished":
        return True
    if run.options.get("precision"):
        return False  # adaptive: a failed run was retried under a new repeat index
    if run.options.get("slo"):
        return False  # a search over offered rates: a failed rate is one it missed, not one to measure again
    rows = store.points(run_id=run.id)
    ok = {(r.config_key, r.repeat) for r in rows if r.status == "ok"}
    return any(r.status == "failed" and (r.config_key, r.repeat) not in ok for r in rows)


def never_begun(store: ResultStore, runs: list[StoredRun]) -> list[tuple[str, str, int]]:
    """(engine, variant, session) that the study of `runs` (one invocation's) plans and
    that no run of them is for: the engines (or sessions) an interrupt between them left
    unstarted. [] when the stored study cannot be rebuilt any more (resumed_study says
    why)."""
    if not runs:
        return []
    try:
        study = stored_study(store, runs[0])
    except UsageError:
        return []
    begun = {(r.engine, r.variant, session_of(r.options)) for r in runs}
    return [(engine, variant, session) for session in range(study.sessions)
            for engine, variant in plan.planned_runs(study) if (engine, variant, session) not in begun]


def _unfinished(store: ResultStore, runs: list[StoredRun]) -> bool:
    """Whether the `dbarena run` these runs belong to left something to do."""
    return any(left_to_do(store, r) for r in runs) or bool(never_begun(store, runs))


def resumable(store: ResultStore, run_id: int | None) -> tuple[str, list[StoredRun]]:
    """The `dbarena run` to continue (its invocation) and its stored runs: the one run
    RUN belongs to, or the latest that did not finish every point or never began one
    of its engines. UsageError when there is none, or when its owner is still running it."""
    if run_id is not None:
        run = store.run(run_id)
        if run is None:
            raise UsageError(f"--resume {run_id}: no run {run_id} in {store.location}")
        if not run.invocation or "flags" not in run.options:
            raise UsageError(f"--resume {run_id}: run {run_id} was stored by an older dbarena (or imported) "
                             "without its plan; it cannot be resumed")
        invocation = run.invocation
    else:
        latest_first = dict.fromkeys(r.invocation for r in reversed(store.runs())
                                     if r.invocation and "flags" in r.options)
        invocation = next((i for i in latest_first if _unfinished(store, store.invocation_runs(i))), "")
        if not invocation:
            raise UsageError(f"--resume: no interrupted or partly failed run in {store.location}")
    runs = store.invocation_runs(invocation)
    for r in runs:
        owner = json_object(r.options.get("owner"))
        if r.status == "running" and owner.get("pid") != os.getpid() and state.owner_alive(owner):
            raise UsageError(f"--resume: run {r.id} is still running (process {owner.get('pid')})")
    return invocation, runs


def stored_study(store: ResultStore, first: StoredRun) -> Study:
    """The study a stored run followed, rebuilt from its text and flags."""
    record = store.study(first.study_sha256) if first.study_sha256 else None
    flags = first.options.get("flags")
    if record is None or not isinstance(flags, dict):
        raise UsageError(f"run {first.id} has no stored study (imported, or stored before runs kept theirs)")
    source = first.options.get("source")
    return study_mod.rebuild(record.text, source if isinstance(source, str) and source else record.source,
                             flags)


def resumed_study(store: ResultStore, run_id: int | None, given: Study | None = None) -> tuple[Study, str]:
    """The stored plan of the run to continue (run_id's, or the latest unfinished) and
    its invocation, for `run(..., resume=invocation)`. A `given` study (what the user
    typed with --resume) must describe the same plan."""
    invocation, runs = resumable(store, run_id)
    first = runs[0]
    try:
        stored = stored_study(store, first)
    except UsageError as exc:
        raise UsageError(f"--resume: {exc}") from None
    if given is not None:
        changed = study_mod.differences(stored, given)
        if changed:
            raise UsageError(f"--resume: the study differs from what run {first.id} ran: {'; '.join(changed)}")
    return stored, invocation


# A planned or stored point as identity() says it.
Identity = tuple[Any, ...]


def identity(spec: PointSpec) -> Identity:
    """What tells a planned point from the others of its plan, as a stored point says
    it too: for an estimate of what a resumed run has left (the run itself matches
    stored points by their full configuration key)."""
    return (spec.engine, spec.workload, spec.threads, spec.clients, spec.variant or "", spec.repeat,
            tuple(sorted((k, str(v)) for k, v in spec.params)))


def session_of(options: Mapping[str, object]) -> int:
    """The session (0, 1, ...) of a study a run's options record it was; 0 where none is
    recorded (a run stored before sessions were: its study had one)."""
    said = options.get("session")
    index = said.get("index") if isinstance(said, Mapping) else None
    return index - 1 if isinstance(index, int) and index >= 1 else 0


def stored_points(store: ResultStore, invocation: str, session: int | None = None) -> set[Identity]:
    """identity() of every point the runs of `invocation` stored ok (of one of its
    sessions: the same points are planned once per session)."""
    return {(r.engine, r.workload, r.threads, r.clients, r.variant or "", r.repeat,
             tuple(sorted((k, str(v)) for k, v in r.params.items())))
            for run in store.invocation_runs(invocation) if session is None or session_of(run.options) == session
            for r in store.points(run_id=run.id) if r.status == "ok"}


def stored_by_session(store: ResultStore, invocation: str) -> tuple[set[Identity], ...]:
    """stored_points of each session of `invocation`, in order (as many as its runs name)."""
    count = max((session_of(run.options) for run in store.invocation_runs(invocation)), default=0) + 1
    return tuple(stored_points(store, invocation, s) for s in range(count))
