"""A whole run of a study: open each target, record provenance, sweep, finish or mark
the run interrupted or failed, and say how it ended. The CLI only turns options into
a study, calls `run` and renders the outcome; Python code can do the same.

    from dbarena import study
    from dbarena.run import session
    from dbarena.store.database import Store
    with Store("dbarena.db") as db:
        outcome = session.run(study.apply(study.load("seed-a"), study.Overrides(quick=True)), store=db)

It prints its progress on stderr as `dbarena run` does (quiet=True: nothing), and
refuses, before anything starts, a study whose datasets cannot fit where the
throwaway instances keep their data (estimate).
"""

from __future__ import annotations

import contextlib
import os
import time
import uuid
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping, Sequence

from dbarena import engines, execute, workloads
from dbarena.run import plan, provenance, resume, searching
from dbarena.run.profiling import Profiler
from dbarena.run.resume import session_of
from dbarena.records import JSONObject
from dbarena.stats import analysis
from dbarena.stats import capacity
from dbarena.stats import configkey
from dbarena.stats import estimators
from dbarena.host import datadir
from dbarena.host import hostinfo
from dbarena.host import probe as probe_mod
from dbarena.stats import rounds
from dbarena.lifecycle import cleanup, smt_switch
from dbarena.lifecycle import state
from dbarena.host import topology
from dbarena import shield
from dbarena.errors import EnvironmentProblem, ExitStatus, Interrupted, StoreError, StoreUnwritable, UsageError
from dbarena.interfaces import Engine, Executor, Reporter, ResultStore, Target, Tool
from dbarena.model import PointResult, PointSpec, RunInfo, Sample, StudyRecord
from dbarena.run.placement import Placement, kernel_smt, placements
from dbarena.store import postgres as pgstore
from dbarena.store.live import Publisher, refusal as live_refusal
from dbarena.run.runner import Bound, Sweep
from dbarena.study import Study
from dbarena.run.preflight import (Estimate, bindir_of, estimate, estimate_s, points_words, pooled_note, probe_where,
                               quick_note, together_note, who)


class SilentReporter:
    """A Reporter that tells nobody."""

    def begin(self, plan: Sequence[PointSpec], estimate_s: Callable[[PointSpec], float]) -> None:
        pass

    def replan(self, first_index: int, remaining: Sequence[PointSpec]) -> None:
        pass

    def stage(self, text: str) -> None:
        pass

    def point_started(self, index: int, spec: PointSpec) -> None:
        pass

    def sample(self, spec: PointSpec, sample: Sample) -> None:
        pass

    def point_finished(self, index: int, result: PointResult) -> None:
        pass

    def end(self) -> None:
        pass


SILENT = SilentReporter()  # run(..., reporter=SILENT) is run(..., quiet=True)


def default_reporter() -> Reporter:
    """What a run tells when the caller names no reporter: the progress lines of
    `dbarena run`, on stderr (a study can take hours; silence looks like a hang)."""
    from dbarena.report import terminal  # the library's own modules need no rich at import

    return terminal.TerminalReporter(terminal.console(stderr=True))


@dataclass
class Outcome:
    """How a run ended: its stored runs, every measured point, the exit status."""

    run_ids: list[int] = field(default_factory=list)
    results: list[PointResult] = field(default_factory=list)
    exit_status: ExitStatus = ExitStatus.OK
    notes: list[str] = field(default_factory=list)  # e.g. how to reach a --keep instance
    invocation: str = ""
    precision: list[rounds.PointState] = field(default_factory=list)  # adaptive repeats: where each point ended
    skipped: int = 0  # points a --resume found stored already

    @property
    def failed(self) -> int:
        return sum(not r.ok for r in self.results)



def run(study: Study, *, store: ResultStore, executor: Executor = execute.LOCAL, reporter: Reporter | None = None,
        quiet: bool = False, keep: bool = False, init: bool = True, host_facts: JSONObject | None = None,
        resume: str | None = None, clock: Callable[[], float] = time.monotonic, system_metrics: bool = True,
        estimated: Estimate | None = None, server_metrics: bool = True, probe_s: int | None = None,
        machine: JSONObject | None = None) -> Outcome:
    """Run every engine's plan of the study, one stored run per engine and variant.

    Progress goes to `reporter`: by default the progress lines of `dbarena run` on
    stderr; quiet=True (or reporter=SILENT) says nothing. Before anything starts, the
    study's estimate (points, machine time, disk space) is said in one line, and a
    study whose datasets cannot fit where its throwaway instances keep their data is
    refused (UsageError, one line). `estimated`: the estimate the caller made and said
    already (the CLI asks before a long study), not made or said again.

    Finished points are stored as they finish. Ctrl-C (KeyboardInterrupt) and
    SIGTERM (errors.Interrupted) end the run: it is marked interrupted and the
    outcome says so (130 / 143). A store that stops taking writes ends it too
    (StoreUnwritable propagates): the point it could not take is saved in a file
    `dbarena import` reads, the targets are closed, and the run is marked interrupted
    (reason "store unwritable") if the store takes that write by then, else by the
    watchdog or the next dbarena command once it does; the error's one line says
    which. Other errors mark it failed and propagate.
    `resume` (an invocation: see resumable) continues the runs of an earlier
    `dbarena run` of this study: points stored ok are not run again, new points
    join the same runs. `system_metrics` False: no once-a-second sampling of the
    machine's CPU, disk and memory (bench/overhead measures what it costs);
    `server_metrics` False: none of the server's own statistics over SQL (serverside/). `probe_s`:
    the host probe before the first point, as estimate takes it (with `estimated`, its
    probe_s instead): stored in every run's options["probe"]. `machine`: the machine made
    for the run that this is one host of (a study's [machines]), in every run's
    options["machine"].
    """
    reporter = SILENT if quiet else reporter or default_reporter()
    facts = host_facts if host_facts is not None else hostinfo.host_facts()
    if estimated is None:
        estimated = estimate(study, host_facts=facts, executor=executor, keep=keep, probe_s=probe_s)
        _refuse(estimated)
        reporter.stage(estimated.line())
    _refuse(estimated)
    plans = estimated.plans
    switching = kernel_smt(study, plans)
    where = placements(study, plans, kernel=switching)
    # (SMT mode, the engine's points in it): one part per engine, or per engine and
    # mode when the kernel switches SMT (machine-wide: one mode at a time).
    parts = [part for p in plans for part in (plan.by_smt(p) if switching else [(None, p)])]
    record = StudyRecord(name=study.name, source=study.source, text=study.text, sha256=study.sha256)
    label = _label(study, facts)
    outcome = Outcome(invocation=resume or str(uuid.uuid4()))
    # A resumed run's own points are its to pool; what else the label holds was said when it began.
    pooled = None if resume else pooled_note(store, label, outcome.invocation, bool(study.label))
    for line in (quick_note(study, plans), together_note(study), pooled):
        if line:
            reporter.stage(line)
    previous = _previous_runs(store, resume)
    profiler, profiling = _profiler(study, executor, reporter)
    # Each session runs every part (stats/sessions.py): its servers started afresh, its
    # datasets prepared again. A resumed run's sessions each continue their own runs.
    sessions = [(number, _not_done(store, parts, _of_session(previous, number), outcome,
                                   resume if study.precision is None and study.slo is None else None, number))
                for number in range(study.sessions)]
    deadline = clock() + study.budget_s if study.budget_s is not None else None
    begin = _Begin(reporter, [spec for _, left in sessions for _, part in left for spec in part.points])
    ctx = _Context(study=study, record=record, label=label, facts=facts, store=store, executor=executor,
                   reporter=reporter, keep=keep, init=init, outcome=outcome, begin=begin,
                   previous=_of_session(previous, 0), clock=clock, deadline=deadline, system_metrics=system_metrics, placements=where,
                   server_metrics=server_metrics, probe=_probe(study, estimated.probe_s, reporter),
                   live=_publisher(store, reporter), profiler=profiler, profiling=profiling, machine=machine)
    switch = smt_switch.Switch() if switching else None
    try:
        _run_sessions(ctx, sessions, previous, switch)
        # The label's configurations summarised over all their sessions (the store's
        # group_summaries, which its points just stored dropped): the first view after a
        # nightly run reads them rather than making them from every session's rows.
        with contextlib.suppress(StoreError):
            analysis.stored_groups(store, (label,))
    finally:
        # The machine's SMT as it was, whatever ended the parts (Ctrl-C included).
        _restore_smt(ctx, switch)
        if ctx.live is not None:
            ctx.live.close()  # (its runs' live seconds gone with it)
        if begin.shown:
            reporter.end()
    if outcome.exit_status == ExitStatus.OK and outcome.failed:
        outcome.exit_status = ExitStatus.POINTS_FAILED
    return outcome


def _refuse(estimated: Estimate) -> None:
    """A study whose datasets cannot fit (preflight's refusal): one line, nothing started."""
    refused = estimated.refusal()
    if refused:
        raise UsageError(refused)


def _label(study: Study, facts: JSONObject) -> str:
    """The runs' label: the study's, else the host's name."""
    hostname = facts.get("hostname")
    return study.label or (hostname if isinstance(hostname, str) and hostname else "unlabelled")


def _run_sessions(ctx: _Context, sessions: list[tuple[int, list[tuple[str | None, plan.EnginePlan]]]],
                  previous: Mapping[tuple[str, str, int], int], switch: smt_switch.Switch | None) -> None:
    """Each session's parts in turn, until one ends the run (an interrupt, a full store,
    a failure with fail_fast)."""
    study, reporter, outcome = ctx.study, ctx.reporter, ctx.outcome
    index = 0
    for number, left in sessions:
        ctx.session, ctx.previous = number, _of_session(previous, number)
        if study.sessions > 1 and left:
            reporter.stage(f"session {number + 1} of {study.sessions}: "
                           + ("servers started afresh, datasets prepared again" if number else
                              "each session starts its servers afresh and prepares its datasets again"))
        after = [spec for _, later in sessions[number + 1:] for _, part in later for spec in part.points]
        index = _run_parts(ctx, left, switch, first_index=index, after=after)
        if outcome.exit_status != ExitStatus.OK or (study.fail_fast and outcome.failed):
            break


def _profiler(study: Study, executor: Executor, reporter: Reporter) -> tuple[Profiler | None, JSONObject | None]:
    """The profiler of the study's points (--profile, [profile]) and what its runs record
    of it; none where none was asked for. Where perf is missing or may not sample, one
    line says so and the run goes on without profiles, or, where the study requires
    them, is refused before anything starts."""
    if study.profile is None:
        return None, None
    profiler = Profiler(executor, study.profile.frequency_hz)
    problem = profiler.check()
    facts: JSONObject = {**study.profile.to_json(), "perf": profiler.version or None, "problem": problem}
    if problem is None:
        return profiler, facts
    if study.profile.required:
        raise UsageError(f"on-CPU profiles are required ([profile] required = true), but {problem}")
    reporter.stage(f"no on-CPU profiles: {problem}; the run goes on without them")
    return None, facts


def _publisher(store: ResultStore, reporter: Reporter) -> Publisher | None:
    """The run's live publisher (store/live.py), beside the store: its sidecar file, or
    its PostgreSQL database (the URL names no password: the store found it in
    PGPASSWORD or ~/.pgpass, as the publisher's own connection does). None, said in one
    line, where the sidecar's name holds a file dbarena did not make (a symbolic link
    planted there): the run is measured without publishing."""
    if store.path is not None:
        refused = live_refusal(store.path)
        if refused is not None:
            reporter.stage(refused)
            return None
        return Publisher(store.path)
    return Publisher(store.location) if pgstore.is_url(store.location) else None


def _probe(study: Study, seconds: int, reporter: Reporter) -> JSONObject | None:
    """The host probe, before any server starts (nothing else of dbarena's running on
    the machine): said, and returned as its runs' options record it; None if none."""
    where = probe_where(study)
    if not seconds or where is None:
        return None
    if not all(engines.get(e.name, e.flavour, bindir=bindir_of(e)).available(bindir_of(e)) for e in study.engines
               if e.target is None):
        return None  # a server that cannot start: the run's first part says why, at once
    reporter.stage(f"probing this host for {seconds} s: CPU, memory, fsync in {where} (--no-probe: none)")
    measured = probe_mod.probe(seconds, where)
    reporter.stage(probe_mod.summary(measured))
    return measured.to_dict()



def _previous_runs(store: ResultStore, resume: str | None) -> dict[tuple[str, str, int], int]:
    """(engine, variant, session) -> the run id the earlier `dbarena run` stored, when
    resuming (a run stored before sessions were recorded is of the first)."""
    return {(r.engine, r.variant, session_of(r.options)): r.id for r in store.invocation_runs(resume)} \
        if resume else {}


def _of_session(previous: Mapping[tuple[str, str, int], int], number: int) -> dict[tuple[str, str], int]:
    return {(engine, variant): run_id for (engine, variant, session), run_id in previous.items() if session == number}


def _not_done(store: ResultStore, parts: list[tuple[str | None, plan.EnginePlan]],
              previous: dict[tuple[str, str], int], outcome: Outcome,
              invocation: str | None = None, session: int = 0) -> list[tuple[str | None, plan.EnginePlan]]:
    """The parts a resumed run has left: one whose every variant's earlier run finished
    every point is not run again, nor its server started (its runs and points count in
    the outcome as found stored). So is one whose runs stored every planned point ok
    but were stopped before they could say they finished (`invocation`: the resumed
    one; None for adaptive repeats, whose plan is not fixed): its runs are marked
    finished here. A part with no earlier run (an interrupt came before its engine
    began) runs whole."""
    # (Of this session's runs alone: every session plans the same points.)
    stored = resume.stored_points(store, invocation, session) if invocation else None
    left = []
    for mode, part in parts:
        ids = [previous.get((part.engine.name, v)) for v in part.variants]
        runs = [store.run(i) if i is not None else None for i in ids]
        complete = stored is not None and all(r is not None for r in runs) and \
            {resume.identity(p) for p in part.points} <= stored
        if complete:
            for r in runs:
                if r is not None and r.status != "finished":
                    store.finish_run(r.id, "finished")
        if complete or all(r is not None and not resume.left_to_do(store, r) for r in runs):
            outcome.run_ids += [r.id for r in runs if r is not None and r.id not in outcome.run_ids]
            outcome.skipped += sum(row.status == "ok" for r in runs if r is not None
                                   for row in store.points(run_id=r.id))
        else:
            left.append((mode, part))
    return left


class _Begin:
    """Shows the whole plan to the reporter once the first targets are open: nothing
    is shown before a start succeeds."""

    def __init__(self, reporter: Reporter, everything: list[PointSpec]) -> None:
        self.reporter = reporter
        self.everything = everything
        self.shown = False

    def __call__(self) -> None:
        if not self.shown:
            self.shown = True
            self.reporter.begin(self.everything, estimate_s)


def _run_parts(ctx: _Context, parts: Sequence[tuple[str | None, plan.EnginePlan]],
               switch: smt_switch.Switch | None, *, first_index: int = 0, after: Sequence[PointSpec] = ()) -> int:
    """Every part one after the other, until one ends the run (interrupted, or a point
    failed under fail_fast); the index of the next point. `after`: the points of the
    sessions after this one (for the ETA). The caller puts SMT back."""
    deadline = ctx.deadline
    index = first_index
    for number, (mode, part) in enumerate(parts):
        later = [spec for _, other in parts[number + 1:] for spec in other.points] + list(after)
        try:
            if switch is not None:
                _switch(ctx, switch, mode, part)
                if deadline is not None:
                    ctx.deadline = budget_share(deadline, ctx.clock, part.points, later)
            index = _run_engine(ctx, part, first_index=index, later=later)
        except (KeyboardInterrupt, Interrupted) as exc:
            # Between two parts, before the next one's runs begin (finding its engine
            # runs `mariadbd --version`; switching SMT): nothing of it to mark, the study
            # stops as an interrupt within a part stops it (_run_engine).
            ctx.outcome.exit_status = ExitStatus.TERMINATED if isinstance(exc, Interrupted) else ExitStatus.INTERRUPTED
        if ctx.outcome.exit_status != ExitStatus.OK or (ctx.study.fail_fast and ctx.outcome.failed):
            break
    return index


def budget_share(deadline: float, clock: Callable[[], float], part: Sequence[PointSpec],
                 later: Sequence[PointSpec]) -> float:
    """The deadline of a part of the budget (--budget, with --precision) run one after
    the other (SMT modes; a --together [server] host's variants): its share of what is
    left, by the points' estimates, or the first part would take it all (interleaved
    variants share it round by round)."""
    left = deadline - clock()
    mine = sum(estimate_s(p) for p in part)
    return clock() + left * mine / max(mine + sum(estimate_s(p) for p in later), 1e-9)


def _restore_smt(ctx: _Context, switch: smt_switch.Switch | None) -> None:
    """SMT back as the machine had it before the study, said (or why it could not be)."""
    if switch is None:
        return
    problem = switch.restore()
    if problem:
        ctx.reporter.stage(problem)
        ctx.outcome.notes.append(problem)
    elif switch.changed:
        ctx.reporter.stage(f"SMT is {switch.mode} again, as before the study ({switch.control})")


def _switch(ctx: _Context, switch: smt_switch.Switch, mode: str | None, part: plan.EnginePlan) -> None:
    """The kernel's SMT set for the part's variants (or back as the machine had it,
    for variants without a mode), then their CPUs chosen among those now online: the
    servers start after this, with an affinity the kernel will not change under them."""
    before = switch.mode
    if mode is None:
        switch.restore()
    else:
        switch.set(mode)
    if switch.mode != before:
        ctx.reporter.stage(f"SMT switched from {before} to {switch.mode} ({switch.control}); "
                           f"CPUs online: {hostinfo.cpu_list({c.cpu for c in topology.read()})}")
    ctx.placements.update(placements(ctx.study, [part], kernel=True, switched=True))


@dataclass
class _Context:
    """What every engine's part of one session shares."""

    study: Study
    record: StudyRecord
    label: str
    facts: JSONObject
    store: ResultStore
    executor: Executor
    reporter: Reporter
    keep: bool
    init: bool
    outcome: Outcome
    begin: Callable[[], None]  # shows the plan, once the first targets are open
    previous: dict[tuple[str, str], int]  # (engine, variant) -> run id of this session, when resuming
    clock: Callable[[], float]
    deadline: float | None  # of the budget, on clock
    placements: dict[tuple[str, str], Placement] = field(default_factory=dict)  # [cpus]: (engine, variant) ->
    system_metrics: bool = True
    server_metrics: bool = True
    probe: JSONObject | None = None  # probe.Probe.to_dict() of the host probe before the study
    live: Publisher | None = None  # the point being measured, second by second, for `dbarena serve`
    session: int = 0  # which of the study's sessions is running (0, 1, ...)
    profiler: Profiler | None = None  # each point's server profiled on CPU (--profile), where perf can
    profiling: JSONObject | None = None  # what the runs record of the profiles asked for
    machine: JSONObject | None = None  # the machine made for the run, which it runs on ([machines])


@dataclass
class _EnginePart:
    """What the variants of one engine's part share while their targets open."""

    engine_plan: plan.EnginePlan
    engine: Engine
    tools: dict[str, Tool]  # every tool its points use, by name
    bindir: Path | None
    data_parent: Path | None  # where throwaway instances keep their data
    run_ids: list[int] = field(default_factory=list)  # its stored runs, as they begin


def _run_engine(ctx: _Context, engine_plan: plan.EnginePlan, *, first_index: int, later: list[PointSpec]) -> int:
    """One engine's plan (`later`: the points of the engines after it, for the ETA);
    the index of the next point of the session. Once its targets are closed, its runs
    are marked finished, or interrupted (Ctrl-C, SIGTERM: the outcome says so), or
    failed (the error propagates)."""
    entry = engine_plan.engine
    bindir = bindir_of(entry)
    part = _EnginePart(engine_plan=engine_plan,
                       engine=engines.get(entry.name, entry.flavour, bindir=bindir, executor=ctx.executor),
                       tools=_tools(engine_plan.points), bindir=bindir,
                       data_parent=datadir.resolve(entry.data_dir) if entry.target is None else None)
    next_index = first_index
    finished = False
    records: dict[int, state.Record] = {}  # run id -> its state record, when the store stopped taking writes
    done: list[int] = []  # runs marked finished
    try:
        with contextlib.ExitStack() as stack:
            bound: dict[str, Bound] = {}
            try:
                for variant in engine_plan.variants:
                    bound[variant] = _bind(ctx, part, variant, stack)
                next_index = _sweep(ctx, engine_plan, bound, first_index=first_index, later=later)
                # (A Ctrl-C between a run's "finished" and its being counted done would
                # have it marked interrupted below, every point of it measured: held.)
                with shield.shielded():
                    for run_id in part.run_ids:
                        ctx.store.finish_run(run_id, "finished")
                        done.append(run_id)
            except StoreUnwritable:
                # The runs' records outlive the targets' teardown: if the store cannot be
                # written once the targets are closed, whoever reaps them marks the runs.
                records = {b.run_id: b.record for b in bound.values()
                           if b.record is not None and b.run_id not in done}
                for record in records.values():
                    # (Nothing is left on a --target: the sweep dropped its datasets.)
                    with contextlib.suppress(EnvironmentProblem):
                        record.leave(reason=STORE_REASON, leftovers=[])
                raise
            finished = True
            if ctx.keep:
                ctx.outcome.notes += [b.local.keep_note() for b in bound.values() if b.local.throwaway]
    except (KeyboardInterrupt, Interrupted) as exc:
        # An interrupt while its targets close (held until they are: shield.py) stops
        # the study, but leaves runs that finished every point finished.
        if not finished:
            _end_runs(ctx.store, [run_id for run_id in part.run_ids if run_id not in done], "interrupted")
        ctx.outcome.exit_status = ExitStatus.TERMINATED if isinstance(exc, Interrupted) else ExitStatus.INTERRUPTED
    except StoreUnwritable as exc:
        if not part.run_ids:
            raise  # (the first run could not be begun: nothing else to say)
        left = [run_id for run_id in part.run_ids if run_id not in done]
        raise StoreUnwritable(f"{exc}; {_interrupted_by_store(ctx.store, left, records)}") from None
    except BaseException:
        _end_runs(ctx.store, part.run_ids, "failed")
        raise
    return next_index


# A run's status_reason when its store stopped taking writes during it.
STORE_REASON = "store unwritable"


def _interrupted_by_store(store: ResultStore, run_ids: Sequence[int], records: dict[int, state.Record]) -> str:
    """The runs of a part whose store stopped taking writes, marked interrupted once its
    targets are closed: through the store's own connection if it takes writes again,
    else a new one (a PostgreSQL store whose connection dropped, a file replaced by a
    copy that holds the run); what was done, in words. A run neither can mark keeps
    its state record: the watchdog (once this process exits) or the next dbarena
    command marks it when the store can be written, so it does not show as running
    for good."""
    location = str(store.path.resolve()) if store.path else store.location
    marked: list[int] = []
    pending: list[int] = []  # the store cannot be written yet: their records stay
    gone: list[int] = []  # the store there now does not hold them running (a file replaced by another)
    for run_id in run_ids:
        problem = None
        try:
            store.finish_run(run_id, "interrupted", reason=STORE_REASON)
            done = True
        except StoreError:
            done, problem = cleanup.mark_interrupted(location, run_id, os.getpid(), STORE_REASON)
        (marked if done else pending if problem is not None else gone).append(run_id)
        if problem is None and run_id in records:
            records[run_id].remove()
    said = []
    if marked:
        said.append(f"{_runs_words(marked)} {'is' if len(marked) == 1 else 'are'} marked interrupted "
                    f"(`dbarena run --resume {marked[0]} --store {location}` continues it)")
    if pending:
        said.append(f"{_runs_words(pending)} could not be marked interrupted (the store still cannot be written): "
                    f"the next dbarena command marks {'it' if len(pending) == 1 else 'them'} once it can")
    if gone:
        said.append(f"{location} no longer holds {_runs_words(gone)} as running: nothing to mark")
    return "; ".join(said)


def _runs_words(run_ids: Sequence[int]) -> str:
    return f"run {run_ids[0]}" if len(run_ids) == 1 else f"runs {', '.join(map(str, run_ids))}"


def _tools(points: Sequence[PointSpec]) -> dict[str, Tool]:
    return {workloads.WORKLOADS[p.workload].tool.name: workloads.WORKLOADS[p.workload].tool for p in points}


def _end_runs(store: ResultStore, run_ids: Sequence[int], status: str) -> None:
    for run_id in run_ids:
        # A store that cannot be written says so in the error being raised.
        with contextlib.suppress(StoreError):
            store.finish_run(run_id, status)


def _bind(ctx: _Context, part: _EnginePart, variant: str, stack: contextlib.ExitStack) -> Bound:
    """A variant's target opened (closed by `stack`), its run begun (or reopened when
    resuming) and recorded until the run ends here: what the sweep runs on."""
    engine_plan, entry = part.engine_plan, part.engine_plan.engine
    settings = engine_plan.settings[variant]
    cluster = engine_plan.cluster.get(variant, {})
    placed = ctx.placements.get((entry.name, variant))
    target = stack.enter_context(_open(ctx, part, settings, cluster, placed))
    _say_target(ctx.reporter, target, variant, placed)
    versions = provenance.tool_versions(target, part.engine, part.tools.values(), ctx.executor)
    info = provenance.run_info(ctx.study, ctx.record, ctx.label, ctx.facts, entry, target, variant, settings,
                               versions, ctx.init, ctx.outcome.invocation, cluster,
                               placed.facts() if placed else None, part.data_parent, ctx.probe,
                               session=(ctx.session, ctx.study.sessions), profiling=ctx.profiling,
                               machine=ctx.machine)
    if ctx.profiler is not None and target.server_pid() is None:
        ctx.reporter.stage(f"no on-CPU profile of {target.description}: perf samples only a server dbarena "
                           "started on this machine (a throwaway instance), not a --target")
    store = ctx.store
    # The run begun, known to its part and recorded as one step that a Ctrl-C or
    # SIGTERM cannot split (held until the record is made: shield.py): one that fell
    # after the run was stored and before the part knew of it left the run `running`
    # for good, with no record for the next command to mark it by (kill tests, CI).
    with shield.shielded():
        run_id = _begin_run(ctx, info, (entry.name, variant))
        part.run_ids.append(run_id)
        ctx.outcome.run_ids.append(run_id)
        # Recorded until the run ends here: if dbarena is killed, the next command
        # marks it interrupted and names what it may have left on a target.
        record = stack.enter_context(state.run(str(store.path.resolve()) if store.path else store.location, run_id,
                                               None if target.throwaway else target.url,
                                               provenance.leftovers(target, engine_plan.points, variant)))
    # Cluster options are part of the configuration as settings are (named
    # "cluster.NAME" in the key's settings, apart from the server's own).
    context = provenance.key_context(entry, target, {**settings, **{f"cluster.{k}": v for k, v in cluster.items()},
                                                     **(placed.key() if placed else {})}, variant, ctx.facts,
                                     info.target_facts)
    return Bound(target=target, run_id=run_id, context=context, record=record,
                 loadgen_cpus=placed.loadgen if placed else None,
                 client_progress=_client_progress(ctx), latency_sampling=ctx.study.latency_sampling)


def _client_progress(ctx: _Context) -> bool:
    """Whether the tools report each second themselves (pgbench -P 1): asked for, or
    the server's commit counter, which stands in for it, is not read (--no-server-metrics).
    Decided before the run, as its points' keys are."""
    return ctx.study.client_progress or not ctx.server_metrics


def _open(ctx: _Context, part: _EnginePart, settings: Mapping[str, str], cluster: Mapping[str, str],
          placed: Placement | None) -> AbstractContextManager[Target]:
    """The engine's target for a variant: the existing server, or a throwaway instance
    with the variant's settings, cluster options and CPUs."""
    entry = part.engine_plan.engine
    if entry.target is not None:
        return part.engine.external(entry.target, bindir=part.bindir, executor=ctx.executor)
    # Room for every client of the widest point, plus a few for dbarena itself.
    max_connections = max(151, part.engine_plan.max_clients + 10)
    return part.engine.throwaway(settings=settings, max_connections=max_connections, bindir=part.bindir,
                                 keep=ctx.keep, executor=ctx.executor, cluster=cluster,
                                 data_parent=part.data_parent, cpus=placed.server if placed else None)


def _say_target(reporter: Reporter, target: Target, variant: str, placed: Placement | None) -> None:
    reporter.stage(f"target: {target.description}{f' (variant {variant})' if variant else ''}"
                   + (f" on CPUs {hostinfo.cpu_list(set(placed.server))}, load generator on "
                      f"{hostinfo.cpu_list(set(placed.loadgen))}" if placed else ""))
    if placed and placed.note:
        reporter.stage(placed.note)


def _begin_run(ctx: _Context, info: RunInfo, key: tuple[str, str]) -> int:
    """The stored run of an engine and variant: the earlier one when resuming (running
    again, with this session's options), else a new one."""
    if key in ctx.previous:
        run_id = ctx.previous[key]
        ctx.store.reopen_run(run_id, info.options)
        return run_id
    return ctx.store.begin_run(info)


def _sweep(ctx: _Context, engine_plan: plan.EnginePlan, bound: dict[str, Bound], *, first_index: int,
           later: list[PointSpec]) -> int:
    """The engine's points on its bound targets (those stored ok already skipped when
    resuming): the index of the next point of the session."""
    study = ctx.study
    found = stored(ctx.store, bound, engine_plan.points) if ctx.previous else Stored()
    if found.other_instruments:
        ctx.reporter.stage(f"resumed: {found.other_instruments} point(s) stored with other instruments (an earlier "
                           "dbarena ran pgbench with -P 1 and its log by default) are another configuration: "
                           "measured again as planned (--client-progress and --latency-sampling ask for them)")
    ctx.begin()
    # (Profiled where dbarena started the server: a --target's was said not to be.)
    profiled = any(b.local.server_pid() is not None for b in bound.values())
    ctx.reporter.stage(_plan_line(study, engine_plan, ctx.profiler if profiled else None))
    sweep = Sweep(targets=bound, store=ctx.store, reporter=ctx.reporter, executor=ctx.executor,
                  fail_fast=study.fail_fast, init=ctx.init, first_index=first_index,
                  latency_sampling=study.latency_sampling, sample_system=ctx.system_metrics,
                  sample_server=ctx.server_metrics, live=ctx.live, profiler=ctx.profiler)
    if study.slo is not None:
        # Each point's closed-loop runs, then its search over offered rates (--slo).
        ctx.outcome.skipped += sum((rounds.base(p), p.repeat) in found.ok for p in engine_plan.points)
        ctx.outcome.results += searching.sweep(study.slo, engine_plan.points, study.repeats, sweep, ctx.store,
                                               ctx.reporter, found.ok, resumed=bool(ctx.previous), later=later,
                                               deadline=ctx.deadline, clock=ctx.clock)
    else:
        sweep_points(sweep, engine_plan.points, found, ctx.outcome, study=study, reporter=ctx.reporter,
                     deadline=ctx.deadline, clock=ctx.clock, first_index=first_index, later=later,
                     resumed=bool(ctx.previous))
    return sweep.next_index


def _plan_line(study: Study, engine_plan: plan.EnginePlan, profiler: Profiler | None = None) -> str:
    """What the reporter is told of an engine's plan before its first point: what it
    will run, counted as it will run it (and profiled, where `profiler`)."""
    points = engine_plan.points
    levels = ", ".join(map(str, engine_plan.levels))
    if study.precision:
        # The plan holds the first rounds; more follow until the interval is narrow enough.
        first = min(estimators.MIN_REPEATS, study.max_repeats)
        count = (f"at least {points_words(len(points))} on {engine_plan.engine.name}, up to "
                 f"{len(points) * study.max_repeats // first} (repeats until the 95 % interval is within "
                 f"+-{study.precision:.1%}, {first} to {study.max_repeats} a point)")
    else:
        count = f"{points_words(len(points))} on {engine_plan.engine.name}"
    how = f", {study.repeats} repeats interleaved" if study.repeats > 1 and not study.precision else ""
    if study.slo is not None:
        how += (f", then each point's capacity at {study.slo.text}: about {capacity.planned_rates(study.slo)} "
                f"offered rates a point (at most {study.slo.max_rates}) until the bracket is within "
                f"{study.slo.precision:.0%}")
    if profiler is not None:
        how += f", the server profiled on CPU by perf at {profiler.frequency_hz} Hz"
    return (f"{who(study)}{' --quick' if study.quick else ''}: {count}: "
            f"{', '.join(dict.fromkeys(p.workload for p in points))} at threads {levels}{how}"
            f"{f', variants ' + ', '.join(engine_plan.variants) if engine_plan.variants != ('',) else ''}")


def sweep_points(sweep: Sweep, points: Sequence[PointSpec], stored: Stored, outcome: Outcome, *, study: Study,
                 reporter: Reporter, deadline: float | None, clock: Callable[[], float], first_index: int = 0,
                 later: Sequence[PointSpec] = (), resumed: bool = False) -> None:
    """The points of one sweep (its strategy measures them: this machine's, or
    `fleet run --together`'s load generators), what the results go in `outcome`.
    A fixed number of repeats: every point not stored ok already, in one round.
    With --precision, adaptive repeats: round after round until every point is as
    precise as asked, at most max_repeats, within the budget (`deadline`, on `clock`);
    where each point ended goes in the outcome even when the sweep is interrupted.
    `later`: the points after these (for the reporter's ETA)."""
    if study.precision is None:
        todo = [p for p in points if (rounds.base(p), p.repeat) not in stored.ok]
        outcome.skipped += len(points) - len(todo)
        if resumed:
            reporter.replan(first_index, [*todo, *later])
        outcome.results += sweep.run(todo)
        return
    adaptive = rounds.Adaptive(
        points, target=study.precision, max_repeats=study.max_repeats,
        budget_s=None if deadline is None else deadline - clock(), value=analysis.result_value,
        estimate_s=estimate_s, history=stored.states or None, clock=clock,
        on_forecast=lambda remaining: reporter.replan(sweep.next_index, [*remaining, *later]))
    outcome.skipped += sum(len(s.values) for s in adaptive.summary())
    try:
        outcome.results += sweep.run_rounds(adaptive.next_round)
    finally:
        outcome.precision += adaptive.summary()


@dataclass(frozen=True)
class Stored:
    """What earlier sessions of these runs stored: the points stored ok (point, repeat),
    and where each point's adaptive repeats had got to."""

    ok: frozenset[tuple[PointSpec, int]] = frozenset()
    states: dict[PointSpec, rounds.PointState] = field(default_factory=dict)
    # Points stored under a key that differs from a planned point's in what the tool
    # measured beyond its bare run alone (configkey's `instruments`: an earlier dbarena
    # ran pgbench with -P 1 and its log by default): not this configuration, measured again.
    other_instruments: int = 0


def stored(store: ResultStore, bound: Mapping[str, Bound], points: Sequence[PointSpec]) -> Stored:
    """What earlier sessions of these runs stored (--resume, a --together run's next
    session), matched to the plan by configuration key (so a point measured under another server version or setting
    is not taken for this one)."""
    by_key: dict[str, PointSpec] = {}
    bare: set[str] = set()  # the planned keys without their instruments
    for p in points:
        key = rounds.base(p)
        config = bound[p.variant].config(key)
        by_key[configkey.digest(config)] = key
        bare.add(configkey.digest(configkey.ignoring(config, ("instruments",))))
    ok: set[tuple[PointSpec, int]] = set()
    states: dict[PointSpec, rounds.PointState] = {}
    other_instruments = 0
    for b in bound.values():
        for row in analysis.load(store, run_id=b.run_id):
            spec = by_key.get(row.config_key or "")
            if spec is None:
                if row.config is not None and row.status == "ok" and \
                        configkey.digest(configkey.ignoring(row.config, ("instruments",))) in bare:
                    other_instruments += 1
                continue
            figure = analysis.value(row)
            states.setdefault(spec, rounds.PointState(spec=spec)).stored(row.repeat, figure)
            if figure is not None:
                ok.add((spec, row.repeat))
    return Stored(ok=frozenset(ok), states=states, other_instruments=other_instruments)
