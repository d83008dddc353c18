"""A whole run of a study: open each target, record provenance, sweep, finish or mark
the run interrupted or failed, and say how it ended. The CLI only turns options into
a study, calls `run` and renders the outcome; Python code can do the same.

    from dbarena import session, study
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
import tempfile
import time
import uuid
from contextlib import AbstractContextManager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, Collection, Sequence

from dbarena import engines, execute, plan, provenance, resume, workloads
from dbarena.dataset_lifecycle import dataset_steps
from dbarena.stats import analysis
from dbarena.stats import configkey
from dbarena.stats import estimators
from dbarena.stats import steadystate
from dbarena.host import datadir
from dbarena.host import hostinfo
from dbarena.host import probe as probe_mod
from dbarena.stats import rounds
from dbarena.lifecycle import smt_switch
from dbarena.lifecycle import state
from dbarena.host import topology
from dbarena.errors import ExitStatus, Interrupted, StoreError, UsageError
from dbarena.interfaces import Engine, Executor, Reporter, ResultStore, Target, Tool
from dbarena.model import PointResult, PointSpec, RunInfo, Sample, StudyRecord
from dbarena.placement import Placement, kernel_smt, placements
from dbarena.runner import Bound, Sweep
from dbarena import study as study_mod
from dbarena.study import EngineEntry, Study


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


def estimate_s(spec: PointSpec) -> float:
    """Seconds a point is expected to take, warm-up included."""
    tool = workloads.WORKLOADS[spec.workload].tool
    return tool.estimate_s(spec) + (tool.estimate_s(_warmup(spec)) if spec.warmup_s else 0)


def _warmup(spec: PointSpec) -> PointSpec:
    return replace(spec, duration_s=spec.warmup_s)


def hardware_threads_for(host_facts: dict) -> Callable[[EngineEntry], int | None]:
    """What "N%" levels are a share of: this machine for a throwaway instance; the
    server a target runs on (as the study or --server-threads says), else unknown."""
    def threads(engine: EngineEntry) -> int | None:
        if engine.target is not None:
            return engine.server_threads
        # The CPUs this process may use (taskset, cpuset, quota), not the machine's total.
        return host_facts.get("effective_hardware_threads") or host_facts.get("hardware_threads") \
            or hostinfo.hardware_threads()
    return threads


def expand(study: Study, host_facts: dict | None = None) -> list[plan.EnginePlan]:
    return plan.expand(study, hardware_threads_for(host_facts or {"effective_hardware_threads":
                                                                  hostinfo.hardware_threads()}))


def check_settings(study: Study, executor: Executor = execute.LOCAL) -> None:
    """Every setting name of every engine and variant known to its server (PostgreSQL
    lists them; MySQL's server refuses unknown ones when it starts)."""
    for entry in study.engines:
        if entry.target is not None:
            continue
        engine = engines.get(entry.name, entry.flavour, bindir=_bindir(entry), executor=executor)
        groups = [(f"engines.{entry.name}.settings", dict(entry.settings))]
        groups += [(f"variants.{v.name}.{entry.name}", v.settings_for(entry.name)) for v in study.variants]
        for key, settings in groups:
            try:
                engine.check_settings(settings, executor, _bindir(entry))
            except UsageError as exc:
                if study.source == study_mod.FLAGS_SOURCE:
                    raise
                raise UsageError(f"{study.source}: {key}: {exc}") from None


@dataclass(frozen=True)
class Room:
    """What one file system must hold of the study's throwaway instances."""

    where: Path  # the directory their own directories are made in
    choice: str | None  # the engine's data_dir as given (None: the temporary directory)
    need_bytes: int  # with headroom (datadir.HEADROOM) for WAL and temporary files
    free_bytes: int  # for a RAM disk: also no more than the memory available
    largest: str  # the largest dataset and its engine, e.g. "pgbench scale 10000 on postgres"
    engine: str  # the engine whose servers need the most of it
    datasets: int  # how many datasets that engine's servers hold side by side

    @property
    def fits(self) -> bool:
        return self.need_bytes <= self.free_bytes


@dataclass(frozen=True)
class Estimate:
    """The whole study before it starts: its points, machine time and disk space."""

    study: Study
    plans: list[plan.EnginePlan]
    points: int  # as planned; with --precision, the first rounds only
    seconds: float  # machine time, dataset preparation included (rough: see studycheck)
    rooms: tuple[Room, ...] = ()  # one per file system that holds throwaway data
    max_points: int | None = None  # --precision: the most it may run
    max_seconds: float | None = None  # --precision: the most it may take (within the budget)
    stored: int = 0  # --resume: points of the plan stored already, not counted above
    probe_s: int = 0  # the host probe before the first point (counted in seconds); 0: none

    def line(self) -> str:
        """One line: what the study will take, said before anything starts."""
        points = (f"at least {points_words(self.points)}, up to {self.max_points}" if self.max_points is not None
                  else points_words(self.points))
        if self.stored:
            points += f" left ({self.stored} stored already)"
        time_ = (f"about {duration_words(self.seconds)} to {duration_words(self.max_seconds)}"
                 if self.max_seconds is not None and self.max_seconds > self.seconds
                 else f"about {duration_words(self.seconds)}")
        if self.rooms:
            disk = ", ".join(f"{size_words(r.need_bytes)} of disk in {r.where} ({size_words(r.free_bytes)} free)"
                             for r in self.rooms)
        else:
            disk = "no disk on this machine (the datasets live on the target)"
        probe = f" (a {self.probe_s} s host probe first)" if self.probe_s else ""
        return f"{who(self.study)}: {points}, {time_} of machine time{probe}, {disk}"

    def refusal(self) -> str | None:
        """Why the study cannot run here (its datasets do not fit), in one line; None if it fits."""
        for r in self.rooms:
            if r.fits:
                continue
            more = f" and {r.datasets - 1} more dataset(s)" if r.datasets > 1 else ""
            where = "the RAM disk" if r.choice == datadir.TMPFS else str(r.where)
            memory = " (or memory available)" if r.choice == datadir.TMPFS else ""
            return (f"{who(self.study)} needs about {size_words(r.need_bytes)} for {r.largest}{more}; {where} has "
                    f"{size_words(r.free_bytes)}{memory} free: set data_dir to a larger file system (a study file's "
                    f"[engines.{r.engine}] data_dir) or use --quick")
        return None


def points_words(n: int) -> str:
    return f"{n} point{'' if n == 1 else 's'}"


def who(study: Study) -> str:
    """How lines name the study: by its name, or "run" for one made of flags."""
    return "run" if study.source == study_mod.FLAGS_SOURCE else f"study {study.name}"


def duration_words(seconds: float | None) -> str:
    """3 h 24 min, 12 min, 40 s."""
    seconds = round(seconds or 0)
    if seconds < 120:
        return f"{seconds} s"
    minutes = round(seconds / 60)
    return f"{minutes // 60} h {minutes % 60} min" if minutes >= 60 else f"{minutes} min"


def size_words(n: float) -> str:
    """Bytes as people say them (decimal units, as df -H and disk vendors): 150 GB, 25 MB."""
    for unit, size in (("TB", 10 ** 12), ("GB", 10 ** 9), ("MB", 10 ** 6)):
        if n >= size:
            return f"{n / size:.0f} {unit}" if n >= 10 * size else f"{n / size:.1f} {unit}"
    return f"{n / 1000:.0f} kB"


def estimate(study: Study, *, host_facts: dict | None = None, executor: Executor = execute.LOCAL,
             keep: bool = False, stored: Collection[resume.Identity] = (), probe_s: int | None = None) -> Estimate:
    """The study's plan on this machine, its machine time and the disk space its
    throwaway instances need where they keep their data (whether or not data_dir was
    set: by default the temporary directory, $TMPDIR), after checking every setting
    name. Nothing is started. `Estimate.refusal()` says if it cannot fit. `stored`
    (--resume): resume.stored_points of the run continued, whose points are not
    counted (the plans keep them: the run itself skips what is stored). `probe_s`: the
    host probe's seconds as asked (0: none; None: probe.planned_seconds's share of the
    study), counted in the time; none when every engine is a --target (the server's
    machine is not this one)."""
    facts = host_facts if host_facts is not None else hostinfo.host_facts()
    plans = expand(study, facts)
    check_settings(study, executor)
    left = [replace(p, points=tuple(s for s in p.points if resume.identity(s) not in stored)) for p in plans] \
        if stored else plans
    seconds = sum(machine_s(p.points) for p in left)
    points = sum(len(p.points) for p in left)
    done = sum(len(p.points) for p in plans) - points
    max_points = max_seconds = None
    if study.precision is not None and points:
        # The plan holds the first rounds; rounds.Adaptive may add up to max_repeats.
        first = min(estimators.MIN_REPEATS, study.max_repeats)
        max_points = points * study.max_repeats // first
        max_seconds = seconds + sum(estimate_s(s) for p in plans for s in p.points) * (study.max_repeats - first) / first
        if study.budget_s is not None:
            max_seconds = max(seconds, min(max_seconds, float(study.budget_s)))
    # Automatic only before a study (a file or a bundled one) measured in earnest: not
    # before an ad-hoc run of flags, nor a --quick trial; --probe N asks for one anywhere.
    automatic_off = (study.quick or study.source == study_mod.FLAGS_SOURCE) and probe_s is None
    probing = probe_mod.planned_seconds(probe_s, seconds) if probe_where(study) is not None and not automatic_off \
        else 0
    return Estimate(study=study, plans=plans, points=points, seconds=seconds + probing, rooms=rooms(left, keep=keep),
                    max_points=max_points, max_seconds=None if max_seconds is None else max_seconds + probing,
                    stored=done, probe_s=probing)


def probe_where(study: Study) -> Path | None:
    """Where the host probe writes: the data directory of the study's first throwaway
    instance (its file system is the one measured); None when every engine is a
    --target, whose machine this is not."""
    for entry in study.engines:
        if entry.target is None:
            return datadir.resolve(entry.data_dir) or Path(tempfile.gettempdir())
    return None


def machine_s(points: Sequence[PointSpec]) -> float:
    """Seconds a part of the plan is expected to take: its points (warm-ups included)
    and the preparations of their datasets."""
    prepare = sum(workloads.WORKLOADS[spec.workload].tool.estimate_prepare_s(spec)
                  for before, _ in dataset_steps(points) for action, spec in before if action == "prepare")
    return sum(estimate_s(p) for p in points) + prepare


def rooms(plans: Sequence[plan.EnginePlan], *, keep: bool = False) -> tuple[Room, ...]:
    """The disk space of the throwaway instances, per file system: each engine's
    servers (one per variant) hold their datasets side by side; the engines run one
    after the other, each server removed before the next engine's start (with --keep
    they stay, and add up)."""
    by_fs: dict[int, list[Room]] = {}
    for p in plans:
        entry = p.engine
        if entry.target is not None:
            continue
        where = datadir.resolve(entry.data_dir) or Path(tempfile.gettempdir())
        # Each workload's dataset, its largest parameters. The size of each comes from
        # its tool (Tool.dataset_bytes: what its parameters mean).
        sizes = {(workloads.WORKLOADS[s.workload].tool.name, s.params):
                 workloads.WORKLOADS[s.workload].tool.dataset_bytes(dict(s.params)) for s in p.points}
        if not sizes:
            continue
        (tool, params), largest = max(sizes.items(), key=lambda item: item[1])
        # restore keeps a copy of the prepared data directory beside it (reflinked where
        # the file system can, which a RAM disk cannot).
        copies = 2 if any(s.restore for s in p.points) else 1
        need = int(sum(sizes.values()) * copies * len(p.variants) * datadir.HEADROOM)
        described = " ".join(f"{k} {v}" for k, v in params) or "its dataset"
        room = Room(where=where, choice=entry.data_dir, need_bytes=need, free_bytes=datadir.free_bytes(where,
                    entry.data_dir), largest=f"{tool} {described} on {entry.name}", engine=entry.name,
                    datasets=len(sizes))
        by_fs.setdefault(os.stat(where).st_dev, []).append(room)
    out = []
    for found in by_fs.values():
        biggest = max(found, key=lambda r: r.need_bytes)
        total = sum(r.need_bytes for r in found) if keep else biggest.need_bytes
        out.append(replace(biggest, need_bytes=total))
    return tuple(out)


def _bindir(entry: EngineEntry) -> Path | None:
    return Path(entry.bindir) if entry.bindir else None


def run(study: Study, *, store: ResultStore, executor: Executor = execute.LOCAL, reporter: Reporter | None = None,
        quiet: bool = False, keep: bool = False, init: bool = True, host_facts: dict | None = None,
        resume: str | None = None, clock: Callable[[], float] = time.monotonic, system_metrics: bool = True,
        estimated: Estimate | None = None, server_metrics: bool = True, probe_s: int | None = None) -> Outcome:
    """Run every engine's plan of the study, one stored run per engine and variant.

    Progress goes to `reporter`: by default the progress lines of `dbarena run` on
    stderr; quiet=True (or reporter=SILENT) says nothing. Before anything starts, the
    study's estimate (points, machine time, disk space) is said in one line, and a
    study whose datasets cannot fit where its throwaway instances keep their data is
    refused (UsageError, one line). `estimated`: the estimate the caller made and said
    already (the CLI asks before a long study), not made or said again.

    Finished points are stored as they finish. Ctrl-C (KeyboardInterrupt) and
    SIGTERM (errors.Interrupted) end the run: it is marked interrupted and the
    outcome says so (130 / 143); other errors mark it failed and propagate.
    `resume` (an invocation: see resumable) continues the runs of an earlier
    `dbarena run` of this study: points stored ok are not run again, new points
    join the same runs. `system_metrics` False: no once-a-second sampling of the
    machine's CPU, disk and memory (bench/overhead measures what it costs);
    `server_metrics` False: none of the server's own statistics over SQL (serverside/). `probe_s`:
    the host probe before the first point, as estimate takes it (with `estimated`, its
    probe_s instead): stored in every run's options["probe"].
    """
    reporter = SILENT if quiet else reporter or default_reporter()
    facts = host_facts if host_facts is not None else hostinfo.host_facts()
    if estimated is None:
        estimated = estimate(study, host_facts=facts, executor=executor, keep=keep, probe_s=probe_s)
        refused = estimated.refusal()
        if refused:
            raise UsageError(refused)
        reporter.stage(estimated.line())
    plans = estimated.plans
    refused = estimated.refusal()
    if refused:
        raise UsageError(refused)
    switching = kernel_smt(study, plans)
    where = placements(study, plans, kernel=switching)
    # (SMT mode, the engine's points in it): one part per engine, or per engine and
    # mode when the kernel switches SMT (machine-wide: one mode at a time).
    parts = [part for p in plans for part in (plan.by_smt(p) if switching else [(None, p)])]
    record = StudyRecord(name=study.name, source=study.source, text=study.text, sha256=study.sha256)
    label = study.label or facts.get("hostname") or "unlabelled"
    outcome = Outcome(invocation=resume or str(uuid.uuid4()))
    # A resumed run's own points are its to pool; what else the label holds was said when it began.
    pooled = None if resume else pooled_note(store, label, outcome.invocation, bool(study.label))
    for line in (quick_note(study, plans), together_note(study), pooled):
        if line:
            reporter.stage(line)
    previous = _previous_runs(store, resume)
    deadline = clock() + study.budget_s if study.budget_s is not None else None
    begin = _Begin(reporter, [spec for _, part in parts for spec in part.points])
    ctx = _Context(study=study, record=record, label=label, facts=facts, store=store, executor=executor,
                   reporter=reporter, keep=keep, init=init, outcome=outcome, begin=begin, previous=previous,
                   clock=clock, deadline=deadline, system_metrics=system_metrics, placements=where,
                   server_metrics=server_metrics, probe=_probe(study, estimated.probe_s, reporter))
    switch = smt_switch.Switch() if switching else None
    try:
        _run_parts(ctx, parts, switch)
    finally:
        # The machine's SMT as it was, whatever ended the parts (Ctrl-C included).
        _restore_smt(ctx, switch)
        if begin.shown:
            reporter.end()
    if outcome.exit_status == ExitStatus.OK and outcome.failed:
        outcome.exit_status = ExitStatus.POINTS_FAILED
    return outcome


def _probe(study: Study, seconds: int, reporter: Reporter) -> dict | None:
    """The host probe, before any server starts (nothing else of dbarena's running on
    the machine): said, and returned as its runs' options record it; None if none."""
    where = probe_where(study)
    if not seconds or where is None:
        return None
    if not all(engines.get(e.name, e.flavour, bindir=_bindir(e)).available(_bindir(e)) for e in study.engines
               if e.target is None):
        return None  # a server that cannot start: the run's first part says why, at once
    reporter.stage(f"probing this host for {seconds} s: CPU, memory, fsync in {where} (--no-probe: none)")
    measured = probe_mod.probe(seconds, where)
    reporter.stage(probe_mod.summary(measured))
    return measured.to_dict()


def short_for_steady_state(study: Study, plans: Sequence[plan.EnginePlan]) -> int | None:
    """The seconds of --quick's points when they are too short for steady-state
    figures (their short-series warning is dbarena's own choice: said once, see
    quick_note); None otherwise."""
    if not study.quick:
        return None
    durations = {p.duration_s for e in plans for p in e.points if workloads.WORKLOADS[p.workload].tool.timed}
    short = [d for d in durations if d < steadystate.ADVISED_DURATION_S]
    return max(short) if short else None


def quick_note(study: Study, plans: Sequence[plan.EnginePlan]) -> str | None:
    """--quick's short points, said once for the run rather than as a warning on each."""
    seconds = short_for_steady_state(study, plans)
    if seconds is None:
        return None
    return (f"--quick: {seconds} s points, too short for steady-state figures (a trial of the protocol; "
            f"points of {steadystate.ADVISED_DURATION_S} s or more give them)")


def together_note(study: Study) -> str | None:
    """A study for several load generators ([fleet] together) run on one host: said, so
    that nobody takes its points for the merged ones `fleet run` would store."""
    if not study.together:
        return None
    return (f"study {study.name} is for several load generators ([fleet] together = true): run here, this host "
            f"is its one load generator; `dbarena fleet run -i INVENTORY --study {study.name}` drives the server "
            "from every host at once")


def pooled_note(store: ResultStore, label: str, invocation: str, given: bool) -> str | None:
    """One line when the label already holds points of another `dbarena run` (not the
    one being resumed): summaries and comparisons pool them with this run's when their
    configurations match, which a label defaulting to the host name hides."""
    runs = {r["id"]: r for r in store.runs() if r["label"] == label and r.get("invocation") != invocation}
    if not runs:
        return None
    counts: dict[int, int] = {}
    for point in store.points(labels=(label,)):
        if point["run_id"] in runs:
            counts[point["run_id"]] = counts.get(point["run_id"], 0) + 1
    if not counts:
        return None
    days = sorted({str(runs[r].get("started_at") or "")[:10] for r in counts} - {""})
    when = f" from {days[0]}" if len(days) == 1 else f" from {days[0]} to {days[-1]}" if days else ""
    ids = sorted(counts)
    which = f"run {ids[0]}" if len(ids) == 1 else (f"runs {', '.join(map(str, ids))}" if len(ids) <= 4
                                                   else f"{len(ids)} runs, {ids[0]} to {ids[-1]}")
    how = "use another --label to keep them apart" if given else \
        "the label defaults to the host name: use --label to keep them apart"
    return (f"label {label!r} already holds {points_words(sum(counts.values()))}{when} ({which}); they are pooled with "
            f"these when the configurations match: {how}")


def _previous_runs(store: ResultStore, resume: str | None) -> dict[tuple[str, str], int]:
    """(engine, variant) -> the run id the earlier `dbarena run` stored, when resuming."""
    return {(r["engine"], r["variant"]): r["id"] for r in store.invocation_runs(resume)} if resume else {}


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
               switch: smt_switch.Switch | None) -> None:
    """Every part one after the other, until one ends the run (interrupted, or a point
    failed under fail_fast). The caller puts SMT back."""
    deadline = ctx.deadline
    index = 0
    for number, (mode, part) in enumerate(parts):
        later = [spec for _, other in parts[number + 1:] for spec in other.points]
        if switch is not None:
            _switch(ctx, switch, mode, part)
            if deadline is not None:
                ctx.deadline = _budget_share(deadline, ctx.clock, part, later)
        index = _run_engine(ctx, part, first_index=index, later=later)
        if ctx.outcome.exit_status != ExitStatus.OK or (ctx.study.fail_fast and ctx.outcome.failed):
            break


def _budget_share(deadline: float, clock: Callable[[], float], part: plan.EnginePlan,
                  later: Sequence[PointSpec]) -> float:
    """One SMT mode after the other: each gets its share of what is left of the budget,
    or the first would take it all (interleaved variants share it round by round)."""
    left = deadline - clock()
    mine = sum(estimate_s(p) for p in part.points)
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
    facts: dict
    store: ResultStore
    executor: Executor
    reporter: Reporter
    keep: bool
    init: bool
    outcome: Outcome
    begin: Callable[[], None]  # shows the plan, once the first targets are open
    previous: dict[tuple[str, str], int]  # (engine, variant) -> run id, when resuming
    clock: Callable[[], float]
    deadline: float | None  # of the budget, on clock
    placements: dict[tuple[str, str], Placement] = field(default_factory=dict)  # [cpus]: (engine, variant) ->
    system_metrics: bool = True
    server_metrics: bool = True
    probe: dict | None = None  # probe.Probe.to_dict() of the host probe before the study


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
    bindir = _bindir(entry)
    part = _EnginePart(engine_plan=engine_plan,
                       engine=engines.get(entry.name, entry.flavour, bindir=bindir, executor=ctx.executor),
                       tools=_tools(engine_plan.points), bindir=bindir,
                       data_parent=datadir.resolve(entry.data_dir) if entry.target is None else None)
    next_index = first_index
    try:
        with contextlib.ExitStack() as stack:
            bound: dict[str, Bound] = {}
            for variant in engine_plan.variants:
                bound[variant] = _bind(ctx, part, variant, stack)
            next_index = _sweep(ctx, engine_plan, bound, first_index=first_index, later=later)
            for run_id in part.run_ids:
                ctx.store.finish_run(run_id, "finished")
            if ctx.keep:
                ctx.outcome.notes += [b.target.keep_note() for b in bound.values() if b.target.throwaway]
    except (KeyboardInterrupt, Interrupted) as exc:
        _end_runs(ctx.store, part.run_ids, "interrupted")
        ctx.outcome.exit_status = ExitStatus.TERMINATED if isinstance(exc, Interrupted) else ExitStatus.INTERRUPTED
    except BaseException:
        _end_runs(ctx.store, part.run_ids, "failed")
        raise
    return next_index


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
                               placed.facts() if placed else None, part.data_parent, ctx.probe)
    run_id = _begin_run(ctx, info, (entry.name, variant))
    part.run_ids.append(run_id)
    ctx.outcome.run_ids.append(run_id)
    # Recorded until the run ends here: if dbarena is killed, the next command
    # marks it interrupted and names what it may have left on a target.
    store = ctx.store
    record = stack.enter_context(state.run(str(store.path.resolve()) if store.path else store.location, run_id,
                                           None if target.throwaway else target.url,
                                           provenance.leftovers(target, engine_plan.points, variant)))
    # Cluster options are part of the configuration as settings are (named
    # "cluster.NAME" in the key's settings, apart from the server's own).
    context = provenance.key_context(entry, target, {**settings, **{f"cluster.{k}": v for k, v in cluster.items()},
                                                     **(placed.key() if placed else {})}, variant, ctx.facts)
    return Bound(target=target, run_id=run_id, context=context, record=record,
                 loadgen_cpus=placed.loadgen if placed else None)


def _open(ctx: _Context, part: _EnginePart, settings: dict, cluster: dict,
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
    stored = _stored(ctx.store, bound, engine_plan.points) if ctx.previous else {}
    ctx.begin()
    ctx.reporter.stage(_plan_line(study, engine_plan))
    sweep = Sweep(targets=bound, store=ctx.store, reporter=ctx.reporter, executor=ctx.executor,
                  fail_fast=study.fail_fast, init=ctx.init, first_index=first_index,
                  latency_sampling=study.latency_sampling, sample_system=ctx.system_metrics,
                  sample_server=ctx.server_metrics)
    if study.precision is None:
        _sweep_repeats(ctx, engine_plan, sweep, stored, first_index=first_index, later=later)
    else:
        _sweep_adaptive(ctx, engine_plan, sweep, stored, precision=study.precision, later=later)
    return sweep.next_index


def _plan_line(study: Study, engine_plan: plan.EnginePlan) -> str:
    """What the reporter is told of an engine's plan before its first point: what it
    will run, counted as it will run it."""
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
    return (f"{who(study)}{' --quick' if study.quick else ''}: {count}: "
            f"{', '.join(dict.fromkeys(p.workload for p in points))} at threads {levels}{how}"
            f"{f', variants ' + ', '.join(engine_plan.variants) if engine_plan.variants != ('',) else ''}")


def _sweep_repeats(ctx: _Context, engine_plan: plan.EnginePlan, sweep: Sweep, stored: dict, *, first_index: int,
                   later: list[PointSpec]) -> None:
    """A fixed number of repeats: every point not stored ok already."""
    todo = [p for p in engine_plan.points if (rounds.base(p), p.repeat) not in stored.get("ok", {})]
    ctx.outcome.skipped += len(engine_plan.points) - len(todo)
    if ctx.previous:
        ctx.reporter.replan(first_index, todo + later)
    ctx.outcome.results += sweep.run(todo)


def _sweep_adaptive(ctx: _Context, engine_plan: plan.EnginePlan, sweep: Sweep, stored: dict, *, precision: float,
                    later: list[PointSpec]) -> None:
    """Adaptive repeats: round after round until every point is as precise as asked, at
    most max_repeats, within the budget; where each point ended goes in the outcome
    even when the sweep is interrupted."""
    study, deadline, clock = ctx.study, ctx.deadline, ctx.clock
    adaptive = rounds.Adaptive(
        engine_plan.points, target=precision, max_repeats=study.max_repeats,
        budget_s=None if deadline is None else deadline - clock(), value=analysis.result_value,
        estimate_s=estimate_s, history=stored.get("states"), clock=clock,
        on_forecast=lambda remaining: ctx.reporter.replan(sweep.next_index, remaining + later))
    ctx.outcome.skipped += sum(len(s.values) for s in adaptive.summary())
    try:
        ctx.outcome.results += sweep.run_rounds(adaptive.next_round)
    finally:
        ctx.outcome.precision += adaptive.summary()


def _stored(store: ResultStore, bound: dict[str, Bound], points: Sequence[PointSpec]) -> dict:
    """What earlier sessions of these runs stored (--resume), matched to the plan by
    configuration key (so a point measured under another server version or setting
    is not taken for this one): {"ok": {(point, repeat)}, "states": {point: PointState}}."""
    by_key: dict[str, PointSpec] = {}
    for p in points:
        key = rounds.base(p)
        by_key[configkey.digest(bound[p.variant].config(key))] = key
    ok: set[tuple[PointSpec, int]] = set()
    states: dict[PointSpec, rounds.PointState] = {}
    for b in bound.values():
        for row in analysis.load(store, run_id=b.run_id):
            spec = by_key.get(row["config_key"])
            if spec is None:
                continue
            state = states.setdefault(spec, rounds.PointState(spec=spec))
            state.next_repeat = max(state.next_repeat, row["repeat"] + 1)
            figure = analysis.value(row)
            if figure is not None:
                ok.add((spec, row["repeat"]))
                state.values.append(figure)
    return {"ok": ok, "states": states}
