"""What a run knows before anything starts: the study's plan on this machine, its
machine time and the disk space its throwaway instances need (`estimate`, refused
before anything starts when it cannot fit), every setting name checked, and the notes
said once before the first point (--quick's short points, a label that already holds
points, a study meant for several load generators). Nothing here starts a server or
writes to a store; `session.run` acts on it.
"""

from __future__ import annotations

import math
import os
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable, Collection, Sequence

from dbarena import engines, execute, workloads
from dbarena.run import plan, resume
from dbarena.run.dataset_lifecycle import dataset_steps
from dbarena.errors import UsageError
from dbarena.host import datadir, hostinfo
from dbarena.host import probe as probe_mod
from dbarena.interfaces import Executor, ResultStore
from dbarena.model import PointSpec
from dbarena.records import JSONObject
from dbarena.stats import capacity, estimators, steadystate
from dbarena import study as study_mod
from dbarena.study import EngineEntry, Study


def estimate_s(spec: PointSpec) -> float:
    """Seconds a point is expected to take, warm-up included."""
    tool = workloads.WORKLOADS[spec.workload].tool
    return tool.estimate_s(spec) + (tool.estimate_s(_warmup(spec)) if spec.warmup_s else 0)


def _warmup(spec: PointSpec) -> PointSpec:
    return replace(spec, duration_s=spec.warmup_s)


def hardware_threads_for(host_facts: JSONObject) -> Callable[[EngineEntry], int | None]:
    """What "N%" levels are a share of: this machine for a throwaway instance; the
    server a target runs on (as the study or --server-threads says), else unknown."""
    def threads(engine: EngineEntry) -> int | None:
        if engine.target is not None:
            return engine.server_threads
        # The CPUs this process may use (taskset, cpuset, quota), not the machine's total.
        for name in ("effective_hardware_threads", "hardware_threads"):
            counted = host_facts.get(name)
            if isinstance(counted, int) and counted:
                return counted
        return hostinfo.hardware_threads()
    return threads


def expand(study: Study, host_facts: JSONObject | None = None) -> list[plan.EnginePlan]:
    return plan.expand(study, hardware_threads_for(host_facts or {"effective_hardware_threads":
                                                                  hostinfo.hardware_threads()}))


def check_settings(study: Study, executor: Executor = execute.LOCAL) -> None:
    """Every setting name of every engine and variant known to its server (PostgreSQL
    lists them; MySQL's server refuses unknown ones when it starts)."""
    for entry in study.engines:
        if entry.target is not None:
            continue
        engine = engines.get(entry.name, entry.flavour, bindir=bindir_of(entry), executor=executor)
        groups = [(f"engines.{entry.name}.settings", dict(entry.settings))]
        groups += [(f"variants.{v.name}.{entry.name}", v.settings_for(entry.name)) for v in study.variants]
        for key, settings in groups:
            try:
                engine.check_settings(settings, executor, bindir_of(entry))
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
    # --slo: the search over offered rates after the closed-loop points, not counted in
    # points and seconds: about capacity.planned_rates rates a point, at most max_rates.
    search: SearchCost | None = None

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
        search = f"; then {self.search.words()}" if self.search is not None else ""
        return f"{who(self.study)}: {points}, {time_} of machine time{probe}, {disk}{search}"

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


@dataclass(frozen=True)
class SearchCost:
    """What --slo's search over offered rates adds to a study: each point's closed-loop
    runs are followed by about capacity.planned_rates offered rates (at most max_rates),
    each run as often as the point (--repeat), in every session. Rough as the adaptive
    repeats' maximum is: a rate takes what its point takes (warm-up included), and a
    dataset prepared again between rounds is not counted."""

    objective: capacity.Objective
    rates: int  # offered rates a search typically tries (capacity.planned_rates)
    points: int  # about this many offered-rate points in all (every repeat and session)
    seconds: float  # and this much machine time
    max_points: int  # at most (max_rates a search)
    max_seconds: float
    budget_s: float | None = None  # --budget, where it cuts the figures above (within)
    cut: bool = False  # the budget cuts even the typical search

    def within(self, budget_s: float | None, closed_s: float) -> SearchCost:
        """The search as --budget bounds it: no round of offered rates starts once the run
        has taken `budget_s` (its closed-loop points, `closed_s`, are never cut), so about
        what is left of the budget after them (a round under way runs on)."""
        if budget_s is None or self.max_seconds <= 0:
            return self
        room = max(0.0, budget_s - closed_s)
        if self.max_seconds <= room:
            return self

        def cut(points: int, seconds: float) -> tuple[int, float]:
            return (points, seconds) if seconds <= room else (math.ceil(points * room / seconds), room)

        points, seconds = cut(self.points, self.seconds)
        max_points, max_seconds = cut(self.max_points, self.max_seconds)
        return replace(self, points=points, seconds=seconds, max_points=max_points, max_seconds=max_seconds,
                       budget_s=budget_s, cut=seconds < self.seconds)

    def words(self) -> str:
        """'a search for each point's capacity at p99 <= 5 ms: about 6 offered rates a point
        (at most 12), about 12 points and 48 s of machine time more'."""
        budget = f" (--budget {duration_words(self.budget_s)} stops it sooner)" if self.cut else ""
        return (f"a search for each point's capacity at {self.objective.text}: about {self.rates} offered rates "
                f"a point (at most {self.objective.max_rates}), about {points_words(self.points)} and "
                f"{duration_words(self.seconds)} of machine time more{budget}")


def search_of(study: Study, plans: Sequence[plan.EnginePlan], *, sessions: int | None = None) -> SearchCost | None:
    """The search --slo adds after the closed-loop points of `plans` in `sessions`
    sessions (by default the study's: each session runs them all and searches on its
    own); None without an objective. A resumed run's searches continue from the rates
    they stored, which this does not count."""
    if study.slo is None:
        return None
    rates = capacity.planned_rates(study.slo)
    runs = study.sessions if sessions is None else sessions
    points = sum(len(p.points) for p in plans) * runs
    seconds = sum(estimate_s(s) for p in plans for s in p.points) * runs
    return SearchCost(objective=study.slo, rates=rates, points=points * rates, seconds=seconds * rates,
                  max_points=points * study.slo.max_rates, max_seconds=seconds * study.slo.max_rates)


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


def estimate(study: Study, *, host_facts: JSONObject | None = None, executor: Executor = execute.LOCAL,
             keep: bool = False, stored: Sequence[Collection[resume.Identity]] = (),
             probe_s: int | None = None) -> Estimate:
    """The study's plan on this machine, its machine time and the disk space its
    throwaway instances need where they keep their data (whether or not data_dir was
    set: by default the temporary directory, $TMPDIR), after checking every setting
    name. Nothing is started. `Estimate.refusal()` says if it cannot fit. `stored`
    (--resume): resume.stored_points of the run continued, whose points are not
    counted (the plans keep them: the run itself skips what is stored), one collection
    per session (resume.stored_by_session). `probe_s`: the
    host probe's seconds as asked (0: none; None: probe.planned_seconds's share of the
    study), counted in the time; none when every engine is a --target (the server's
    machine is not this one)."""
    facts = host_facts if host_facts is not None else hostinfo.host_facts()
    plans = expand(study, facts)
    check_settings(study, executor)
    # Every session runs the whole plan again, its datasets prepared again; a resumed
    # run's sessions each have what their own runs did not store.
    done_of = [set(stored[s]) if s < len(stored) else set() for s in range(study.sessions)]
    lefts = [[replace(p, points=tuple(s for s in p.points if resume.identity(s) not in done)) for p in plans]
             if done else plans for done in done_of]
    seconds = sum(machine_s(p.points) for left in lefts for p in left)
    points = sum(len(p.points) for left in lefts for p in left)
    done = sum(len(p.points) for p in plans) * study.sessions - points
    left = next((left for left in lefts if any(p.points for p in left)), lefts[0])
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
    search = search_of(study, plans)
    if search is not None:
        search = search.within(study.budget_s, seconds)
    automatic_off = (study.quick or study.source == study_mod.FLAGS_SOURCE) and probe_s is None
    # (The probe's share is of the whole study, the search's expected rates included.)
    probing = probe_mod.planned_seconds(probe_s, seconds + (search.seconds if search else 0)) \
        if probe_where(study) is not None and not automatic_off else 0
    return Estimate(study=study, plans=plans, points=points, seconds=seconds + probing, rooms=rooms(left, keep=keep),
                    max_points=max_points, max_seconds=None if max_seconds is None else max_seconds + probing,
                    stored=done, probe_s=probing, search=search)


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


def bindir_of(entry: EngineEntry) -> Path | None:
    return Path(entry.bindir) if entry.bindir else None

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
    runs = {r.id: r for r in store.runs() if r.label == label and r.invocation != invocation}
    if not runs:
        return None
    counts: dict[int, int] = {}
    for point in store.points(labels=(label,)):
        if point.run_id in runs:
            counts[point.run_id] = counts.get(point.run_id, 0) + 1
    if not counts:
        return None
    days = sorted({runs[r].started_at[:10] for r in counts} - {""})
    when = f" from {days[0]}" if len(days) == 1 else f" from {days[0]} to {days[-1]}" if days else ""
    ids = sorted(counts)
    which = f"run {ids[0]}" if len(ids) == 1 else (f"runs {', '.join(map(str, ids))}" if len(ids) <= 4
                                                   else f"{len(ids)} runs, {ids[0]} to {ids[-1]}")
    how = "use another --label to keep them apart" if given else \
        "the label defaults to the host name: use --label to keep them apart"
    return (f"label {label!r} already holds {points_words(sum(counts.values()))}{when} ({which}); they are pooled with "
            f"these when the configurations match: {how}")
