"""`dbarena bisect A B`: which of the differences between two stored configurations (two
labels, two runs, or a failed gate's baseline and candidate) makes B faster or slower
than A, found by measuring configurations in between here (docs/bisect.md). The search
itself is stats/bisection.py; this module gives it its inputs and its measurer.

- Each side is its newest run of the workload both measured (gate.side: a run id or a
  label), and the study that run followed, rebuilt as --resume rebuilds it
  (resume.stored_study), narrowed to that run's engine, workload and variant.
- The settable differences are those of the two studies as applied (a `Profile`: the
  engine's settings and cluster options with the variant's over them, the bindir, the
  flavour, the data directory, the dataset and tool options, duration, warm-up, clients
  per thread, the dataset lifecycle, the variant's cores and SMT, the latency
  sampling). The rest of what differs between the two runs (stats/environment.py: the
  server's version where no bindir tells it, the tools', the kernel, the machine, a
  setting the server reported that neither study set) is listed as not settable here,
  with why. A side measured on a --target has nothing settable: dbarena does not set a
  target's configuration.
- Each configuration measured is a study of its own, written out as a study file's
  text (so that it is stored whole and rebuilds as it ran: `dbarena run --resume` and
  `serve` read it like any other) with the levels both sides measured, under the label
  `bisect-N-a`, `bisect-N-b` or `bisect-N-stepK` (N: the bisect's number in the store,
  K: the configuration's, in the order first measured), its description saying which
  changes it applies (JSON), so that `--resume` reads every session measured back and
  the search, deterministic on the same figures, goes on where it stopped.
- A session's figure is the geometric mean over the levels of its points' figures
  (analysis.value: the steady-state mean), as speed (the inverse for seconds).
"""

from __future__ import annotations

import json
import math
import re
import shlex
import statistics
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import tomli_w

from dbarena import study as study_mod
from dbarena.errors import DbarenaError, ExitStatus, UsageError
from dbarena.interfaces import Reporter, ResultStore
from dbarena.limits import listed, quoted
from dbarena.records import AnalysedPoint, JSONObject, StoredRun, json_object
from dbarena.run import preflight, resume
from dbarena.stats import analysis, bisection, environment, metric
from dbarena.stats import gate as gating
from dbarena.stats.bisection import Axis, Configuration, Difference, Value
from dbarena.study import Study
from dbarena.study.model import SCHEMA_VERSION, check_name

PREFIX = "bisect-"
_LABEL = re.compile(r"bisect-([0-9]{1,9})-(a|b|step[0-9]{1,9})")
# What a difference of this name is, where a study file says it.
_NUMBERS = ("duration_s", "warmup_s", "clients_per_thread", "server cores")

# Facts of two runs that no study of dbarena sets, and why (stats/environment.py's names).
_MACHINE_WHY = "another machine's hardware: measure on that machine, or on one like it"
_WHY = {"kernel": "the kernel is the machine's", "cpu model": _MACHINE_WHY, "hardware threads": _MACHINE_WHY,
        "memory (GiB)": _MACHINE_WHY, "distribution": "the machine's operating system",
        "host": "another machine", "usable CPUs": "the CPUs the shell let dbarena use (taskset, a cgroup)",
        "CPU quota (cores)": "the cgroup's CPU quota", "target": "a --target's configuration is not dbarena's to set",
        "dbarena version": "dbarena's own version", "server version": "the server's binaries: no bindir tells them "
        "apart (run each side with --pg-bindir, or give the builds with --bindirs)"}

Profile = dict[str, Value]


@dataclass(frozen=True)
class Side:
    """One end of the bisect: how it was given, its newest run of the workload, the
    study that run followed, and that run's points of the workload."""

    spec: str
    what: str
    run: StoredRun
    study: Study
    points: tuple[AnalysedPoint, ...]


@dataclass(frozen=True)
class Plan:
    """What a bisect measures: its number, the sides, the workload and levels, the
    differences, and A's profile with the study shape every configuration shares."""

    number: int
    a: Side
    b: Side
    engine: str
    workload: str
    levels: tuple[int, ...]
    differences: tuple[Difference, ...]
    base: Profile  # A's settable values
    metric: str
    axis: Axis | None = None

    def label(self, step: str) -> str:
        return f"{PREFIX}{self.number}-{step}"

    def profile(self, configuration: Configuration) -> Profile:
        return {**self.base, **dict(configuration.changes)}

    def description(self, configuration: Configuration) -> str:
        """What a configuration's study says of itself: its bisect, its ends and its
        changes, as JSON (what --resume reads back)."""
        return json.dumps({"bisect": self.number, "a": self.a.spec, "b": self.b.spec, "workload": self.workload,
                           "changes": dict(configuration.changes)}, sort_keys=True)

    def study(self, configuration: Configuration, label: str, sessions: int) -> Study:
        """The configuration as a study of its own (see the module's docstring)."""
        text = study_text(self, self.profile(configuration), label, sessions, self.description(configuration))
        source = f"dbarena bisect {self.number}"
        return study_mod.rebuild(text, source, {})


# ------------------------------------------------------------------ sides and differences


def side(store: ResultStore, spec: str) -> gating.Side:
    """A RUN id or LABEL of the store (gate.side)."""
    return gating.side(store, spec)


def _workloads(points: Sequence[AnalysedPoint]) -> set[tuple[str, str]]:
    return {(p.engine, p.workload) for p in points if p.status == "ok" and p.phase == "measured"}


def choose(a: gating.Side, b: gating.Side, workload: str | None) -> tuple[str, str]:
    """The engine and workload both sides measured: `workload`, or the only one."""
    both = _workloads(a.points) & _workloads(b.points)
    if workload is not None:
        found = sorted(w for w in both if w[1] == workload)
        if not found:
            raise UsageError(f"--workload {workload}: not measured by both {a.what} and {b.what} (both measured: "
                             f"{listed(sorted({w for _, w in both})) or 'nothing'})")
        return found[0]
    if not both:
        raise UsageError(f"{a.what} and {b.what} measured no workload in common")
    if len(both) > 1:
        raise UsageError(f"{a.what} and {b.what} both measured {listed(sorted(f'{w} ({e})' for e, w in both))}: "
                         "give one with --workload")
    return next(iter(both))


def ended(store: ResultStore, given: gating.Side, engine: str, workload: str) -> Side:
    """The side's newest run of the workload and the study it followed, narrowed."""
    points = [p for p in given.points if (p.engine, p.workload) == (engine, workload) and p.phase == "measured"]
    runs = store.runs_by_id({p.run_id for p in points})
    if not runs:
        raise UsageError(f"{given.what} has no run of {workload}")
    run = max(runs.values(), key=lambda r: r.id)
    try:
        stored = resume.stored_study(store, run)
    except DbarenaError as exc:
        raise UsageError(f"{given.what}: {exc}; bisect needs the study each side followed") from None
    return Side(given.spec or given.name, given.what, run, stored, tuple(p for p in points if p.run_id == run.id))


def profile(side: Side, workload: str) -> Profile:
    """What of a side's study bisect can set, by name (a setting not set: absent)."""
    study, run = side.study, side.run
    engine = study.engine(run.engine)
    variant = next((v for v in study.variants if v.name == run.variant), None)
    entry = next((w for w in study.workloads if w.workload == workload and run.engine in w.engines), None)
    if entry is None:
        raise UsageError(f"{side.what}: the study of run {run.id} no longer holds {workload}")
    settings = {**dict(engine.settings), **(variant.settings_for(engine.name) if variant else {})}
    cluster = {**dict(engine.cluster), **(variant.cluster_for(engine.name) if variant else {})}
    out: Profile = {f"setting {k.lower()}": str(v) for k, v in settings.items()}
    out.update({f"cluster {k}": str(v) for k, v in cluster.items()})
    out["bindir"] = engine.bindir
    if engine.flavour != "auto":
        out["flavour"] = engine.flavour
    out["data_dir"] = engine.data_dir
    out.update({f"dataset {k}": str(v) for k, v in entry.params})
    out.update({f"option {k}": str(v) for k, v in entry.options})
    out.update({"duration_s": str(entry.duration_s), "warmup_s": str(entry.warmup_s),
                "clients_per_thread": str(entry.clients_per_thread), "datasets": entry.datasets,
                "restore": entry.restore,
                "server cores": str(variant.cores) if variant and variant.cores else None,
                "smt": variant.smt if variant else None,
                "latency_sampling": str(study.latency_sampling) if study.latency_sampling else None,
                "client_progress": "on" if study.client_progress else None})
    return {k: v for k, v in out.items() if v is not None}


def unsettable_why(side_a: Side, side_b: Side) -> str | None:
    """Why nothing can be set here (None: the settable differences can): a side
    measured a --target, whose configuration dbarena does not set."""
    for s in (side_a, side_b):
        if s.run.engine in json_object(s.run.options.get("targets")) or \
                any(e.target for e in s.study.engines if e.name == s.run.engine):
            return f"{s.what} measured a --target, whose configuration dbarena does not set"
    return None


def differences(a: Side, b: Side, workload: str) -> tuple[tuple[Difference, ...], Profile]:
    """Every difference between the two sides, the settable ones first (by name), then
    what their runs' facts say differs besides, not settable here; and A's profile."""
    pa, pb = profile(a, workload), profile(b, workload)
    blocked = unsettable_why(a, b)
    settable = [Difference(n, pa.get(n), pb.get(n), settable=blocked is None, why=blocked)
                for n in sorted(pa.keys() | pb.keys()) if pa.get(n) != pb.get(n)]
    covered = {d.name for d in settable} | {"duration_s", "warmup_s", "host"}
    bindir = any(d.name == "bindir" for d in settable)
    others = []
    key_a = a.points[0].config or {} if a.points else {}
    key_b = b.points[0].config or {} if b.points else {}
    for change in environment.changes(environment.of_run(a.run, key_a), environment.of_run(b.run, key_b)):
        fact = change.fact
        if fact in covered or fact.startswith("option "):
            continue
        if fact.startswith("setting "):
            why = "set by neither study: the server's own (another version's default, or one derived from another " \
                  "setting or the machine)"
        elif bindir and (fact == "server version" or fact.endswith(" version") and fact != "dbarena version"):
            why = "comes with the bindir"
        elif fact.endswith(" version") and fact not in _WHY:
            why = "the tool's binaries, which come with the server's or the machine's packages"
        else:
            why = _WHY.get(fact, "not dbarena's to set")
        others.append(Difference(fact, change.before, change.after, settable=False, why=why))
    return tuple(settable + others), pa


def levels_of(a: Side, b: Side, threads: Sequence[int] = ()) -> tuple[int, ...]:
    """The levels both sides measured (those of `threads`, where given)."""
    both = sorted({p.threads for p in a.points if p.status == "ok"} & {p.threads for p in b.points
                                                                        if p.status == "ok"})
    chosen = [t for t in both if not threads or t in threads]
    if not chosen:
        raise UsageError(f"{a.what} and {b.what} share no level of threads"
                         + (f" among {', '.join(map(str, threads))}" if threads else ""))
    return tuple(chosen)


def number_for(store: ResultStore, a: str, b: str, resuming: bool) -> tuple[int, dict[str, list[StoredRun]]]:
    """This bisect's number: a new one (one more than any in the store), or with
    `resuming` the newest bisect of these two ends; and, when resuming, its runs by label."""
    found: dict[int, dict[str, list[StoredRun]]] = {}
    for run in store.runs():
        m = _LABEL.fullmatch(run.label)
        if m:
            found.setdefault(int(m.group(1)), {}).setdefault(run.label, []).append(run)
    if not resuming:
        return max(found, default=0) + 1, {}
    for number in sorted(found, reverse=True):
        said = _said(store, next(r for runs in found[number].values() for r in runs))
        if said is not None and (said.get("a"), said.get("b")) == (a, b):
            return number, found[number]
    raise UsageError(f"--resume: no bisect of {quoted(a)} against {quoted(b)} in {store.location}")


def _said(store: ResultStore, run: StoredRun) -> JSONObject | None:
    """A bisect run's description, read back from its stored study (None: not one)."""
    record = store.study(run.study_sha256) if run.study_sha256 else None
    if record is None:
        return None
    try:
        described = tomllib.loads(record.text).get("description", "")
        said = json.loads(described) if isinstance(described, str) else None
    except (tomllib.TOMLDecodeError, ValueError):
        return None
    return said if isinstance(said, dict) else None


def session_figure(points: Sequence[AnalysedPoint], levels: Sequence[int], workload: str) -> float | None:
    """A session's (a run's) figure: over the levels, the geometric mean of each
    level's mean figure, as speed; None where a level has none."""
    per_level = []
    for level in levels:
        values = [v for p in points if p.workload == workload and p.threads == level and p.phase == "measured"
                  and (v := analysis.value(p)) is not None and v > 0]
        if not values:
            return None
        mean = statistics.fmean(values)
        lower = any(p.lower_is_better for p in points if p.workload == workload)
        per_level.append(1 / mean if lower else mean)
    return math.exp(statistics.fmean(math.log(v) for v in per_level))


def known(store: ResultStore, plan: Plan, runs: Mapping[str, list[StoredRun]]) -> tuple[
        dict[Configuration, list[float]], dict[Configuration, str]]:
    """The sessions a bisect measured before (--resume): each configuration's figures,
    from its finished runs, and the label it was measured under."""
    values: dict[Configuration, list[float]] = {}
    labels: dict[Configuration, str] = {}
    for label, its in sorted(runs.items()):
        said = _said(store, its[0]) if its else None
        changes = json_object(said.get("changes")) if said else {}
        configuration = Configuration.of({k: v if isinstance(v, str) or v is None else str(v)
                                          for k, v in changes.items()})
        labels[configuration] = label
        for run in sorted(its, key=lambda r: r.id):
            if run.status != "finished":
                continue
            figure = session_figure(analysis.load(store, run_id=run.id), plan.levels, plan.workload)
            if figure is not None:
                values.setdefault(configuration, []).append(figure)
    return values, labels


def make_plan(store: ResultStore, a_spec: str, b_spec: str, *, workload: str | None = None,
              threads: Sequence[int] = (), resuming: bool = False, bindirs: Sequence[str] = ()) -> tuple[
        Plan, dict[str, list[StoredRun]]]:
    """The bisect of A against B as the store holds them (see the module's docstring);
    with `resuming`, the runs of the bisect it continues."""
    given_a, given_b = side(store, a_spec), side(store, b_spec)
    engine, chosen = choose(given_a, given_b, workload)
    a, b = ended(store, given_a, engine, chosen), ended(store, given_b, engine, chosen)
    if a.run.id == b.run.id:
        raise UsageError(f"{a.what} and {b.what} are the same run")
    diffs, base = differences(a, b, chosen)
    number, runs = number_for(store, a_spec, b_spec, resuming)
    check_name(f"{PREFIX}{number}-step999", "label")
    points = a.points + b.points
    plan = Plan(number, a, b, engine, chosen, levels_of(a, b, threads), diffs, base,
                metric.SECONDS if any(p.lower_is_better for p in points) else metric.TPS)
    if bindirs:
        plan = replace(plan, axis=axis_of(plan, bindirs))
    return plan, runs


def axis_of(plan: Plan, bindirs: Sequence[str]) -> Axis:
    """--bindirs: the builds between A's and B's, in order, as the ordered axis of the
    bindir difference (A's bindir first and B's last, added where not given)."""
    found = next((d for d in plan.differences if d.name == "bindir" and d.settable), None)
    if found is None or found.a is None or found.b is None:
        raise UsageError("--bindirs orders the builds between A's and B's bindir: both sides must have run with "
                         "a bindir of their own (--pg-bindir), and differ in it")
    values = [d for d in bindirs if d not in (found.a, found.b)]
    for d in values:
        if not Path(d).is_dir():
            raise UsageError(f"--bindirs: {d} is not a directory")
    return Axis("bindir", (found.a, *values, found.b))


# ------------------------------------------------------------------ a configuration as a study


def study_text(plan: Plan, values: Profile, label: str, sessions: int, description: str) -> str:
    """A configuration as the text of a study file (docs/studies.md's schema): one
    engine, one workload at the plan's levels, `sessions` sessions of one repeat."""
    def pick(prefix: str) -> dict[str, str]:
        return {k.removeprefix(prefix): v for k, v in values.items() if k.startswith(prefix) and v is not None}

    engine: dict[str, Any] = {}
    if settings := pick("setting "):
        engine["settings"] = settings
    if cluster := pick("cluster "):
        engine["cluster"] = cluster
    for key in ("bindir", "flavour", "data_dir"):
        if values.get(key) is not None:
            engine[key] = values[key]
    workload: dict[str, Any] = {"workload": plan.workload, "engines": [plan.engine]}
    for key in ("duration_s", "warmup_s", "clients_per_thread"):
        if values.get(key) is not None:
            workload[key] = int(str(values[key]))
    for key in ("datasets", "restore"):
        if values.get(key) is not None:
            workload[key] = values[key]
    workload.update({k: int(v) for k, v in pick("dataset ").items()})
    if options := pick("option "):
        workload["options"] = options
    sampling = values.get("latency_sampling")
    raw: dict[str, Any] = {
        "schema": SCHEMA_VERSION, "name": f"{PREFIX}{plan.number}",
        "title": f"dbarena bisect {plan.number}: {plan.a.spec} against {plan.b.spec}, {plan.workload}",
        "description": description, "label": label,
        "sweep": {"levels": list(plan.levels), "sessions": sessions, "repeats": 1,
                  "latency_sampling": float(sampling) if sampling else False,
                  "client_progress": values.get("client_progress") == "on"},
        "engines": {plan.engine: engine}, "workloads": [workload],
    }
    cores = values.get("server cores")
    if cores is not None:
        smt = values.get("smt")
        raw["cpus"] = {"server": [int(cores)], **({"smt": [int(smt) if smt.isdigit() else smt]} if smt else {}),
                       "smt_emulate": plan.a.study.smt_emulate, "load_generator": plan.a.study.load_generator}
    return tomli_w.dumps(raw)


# ------------------------------------------------------------------ measuring here


@dataclass
class StoreMeasurer:
    """bisection.Measurer: a configuration measured here as `dbarena run` measures a
    study, into the store, under its bisect label; each run's (session's) figure.
    `run`: session.run (a fake in the unit tests)."""

    store: ResultStore
    plan: Plan
    run: Callable[..., Any]
    labels: dict[Configuration, str] = field(default_factory=dict)
    say: Callable[[str], None] = lambda line: None
    reporter: Reporter | None = None

    def label_of(self, configuration: Configuration) -> str:
        if configuration not in self.labels:
            if configuration == Configuration():
                step = "a"
            elif configuration.names == {d.name for d in self.plan.differences if d.settable} and all(
                    dict(configuration.changes)[d.name] == d.b for d in self.plan.differences if d.settable):
                step = "b"
            else:
                taken = [int(m.group(2).removeprefix("step")) for label in self.labels.values()
                         if (m := _LABEL.fullmatch(label)) and m.group(2).startswith("step")]
                step = f"step{max(taken, default=0) + 1}"
            self.labels[configuration] = self.plan.label(step)
        return self.labels[configuration]

    def __call__(self, configuration: Configuration, sessions: int) -> list[float]:
        label = self.label_of(configuration)
        self.say(f"{label}: {configuration.words()}: {sessions} session(s)")
        study = self.plan.study(configuration, label, sessions)
        outcome = self.run(study, store=self.store, quiet=self.reporter is None, reporter=self.reporter)
        if outcome.exit_status in (ExitStatus.INTERRUPTED, ExitStatus.TERMINATED):
            raise BisectInterrupted(outcome.exit_status)
        figures = []
        for run_id in outcome.run_ids:
            figure = session_figure(analysis.load(self.store, run_id=run_id), self.plan.levels, self.plan.workload)
            if figure is not None:
                figures.append(figure)
        if outcome.failed:
            first = next((r.error for r in outcome.results if not r.ok and r.error), None)
            self.say(f"{label}: {outcome.failed} point(s) failed{f': {first}' if first else ''}")
        return figures


class BisectInterrupted(DbarenaError):
    """A measurement was interrupted (Ctrl-C, SIGTERM): what was stored is kept for --resume."""

    def __init__(self, status: ExitStatus):
        super().__init__("interrupted")
        self.exit_status = status


# ------------------------------------------------------------------ the estimate


@dataclass(frozen=True)
class Estimate:
    """What a bisect will take, said before it starts: a session's points and machine
    time (preflight.estimate of A's configuration, as `study check` states it), the
    reproduction's sessions, and the search's steps for one cause (about 2 log2 k of
    k changes) and at most (ddmin's k squared, then each change of the set alone)."""

    settable: int
    points_per_session: int
    session_s: float
    sessions: int  # per step
    max_sessions: int
    reproduce_sessions: int
    steps: int
    max_steps: int
    budget_s: float | None
    stored: int = 0  # sessions read back (--resume)

    @property
    def seconds(self) -> float:
        return (self.reproduce_sessions + self.steps * self.sessions) * self.session_s

    @property
    def max_seconds(self) -> float:
        worst = (2 * self.max_sessions + self.max_steps * self.max_sessions) * self.session_s
        return min(worst, self.budget_s) if self.budget_s is not None else worst

    def line(self, number: int) -> str:
        words = preflight.duration_words
        budget = f"; budget {words(self.budget_s)}" if self.budget_s is not None else ""
        stored = f"; {self.stored} session(s) stored already, not measured again" if self.stored else ""
        return (f"bisect {number}: {self.settable} settable difference(s); a configuration is "
                f"{preflight.points_words(self.points_per_session)} a session, about {words(self.session_s)}; "
                f"reproducing A and B: {self.reproduce_sessions} sessions; then about {self.steps} step(s) of "
                f"{self.sessions} sessions for one cause (at most {self.max_steps}, each up to {self.max_sessions} "
                f"sessions while unresolved): about {words(self.seconds)} of machine time, at most "
                f"{words(self.max_seconds)}{budget}{stored}")

    def as_json(self) -> JSONObject:
        return {"settable": self.settable, "points_per_session": self.points_per_session,
                "session_s": round(self.session_s, 1), "sessions_per_step": self.sessions,
                "reproduce_sessions": self.reproduce_sessions, "steps": self.steps, "max_steps": self.max_steps,
                "seconds": round(self.seconds, 1), "max_seconds": round(self.max_seconds, 1),
                "budget_s": self.budget_s, "stored_sessions": self.stored}


def estimate(plan: Plan, sessions: int, max_sessions: int, budget_s: float | None,
             known_values: Mapping[Configuration, list[float]] | None = None,
             host_facts: JSONObject | None = None) -> Estimate:
    """The bisect's estimate (Estimate); a UsageError where A's configuration cannot
    run here (its datasets do not fit, a setting this server does not know)."""
    settable = sum(d.settable for d in plan.differences)
    once = preflight.estimate(plan.study(Configuration(), plan.label("a"), 1), host_facts=host_facts)
    refused = once.refusal()
    if refused:
        raise UsageError(refused)
    k = max(settable, 1)
    steps = 0 if settable <= 1 else 2 * math.ceil(math.log2(k))
    max_steps = 0 if settable <= 1 else k * k + k
    if plan.axis is not None:
        steps += math.ceil(math.log2(max(len(plan.axis.values), 2)))
        max_steps += len(plan.axis.values)
    return Estimate(settable, once.points, once.seconds, sessions, max_sessions, 2 * sessions, steps, max_steps,
                    budget_s, sum(len(v) for v in (known_values or {}).values()))


# ------------------------------------------------------------------ the bisect


@dataclass(frozen=True)
class Result:
    plan: Plan
    answer: bisection.Answer
    labels: tuple[str, ...]

    @property
    def exit_status(self) -> int:
        """0 a cause found; 3 otherwise (not reproduced, nothing settable, the budget)."""
        return 0 if self.answer.status == bisection.FOUND else 3

    def lines(self) -> list[str]:
        p = self.plan
        head = (f"bisect {p.number}: {p.b.what} (B) against {p.a.what} (A), {p.workload} on {p.engine} at "
                f"{', '.join(map(str, p.levels))} thread(s)")
        stored = f"stored as {', '.join(self.labels)}" if self.labels else "nothing stored"
        return [head, *self.answer.lines(),
                f"{self.answer.sessions} session(s) measured, {preflight.duration_words(self.answer.seconds)}; "
                f"{stored}"]

    def as_json(self) -> JSONObject:
        p = self.plan
        return {"bisect": p.number, "a": {"spec": p.a.spec, "what": p.a.what, "run": p.a.run.id},
                "b": {"spec": p.b.spec, "what": p.b.what, "run": p.b.run.id}, "engine": p.engine,
                "workload": p.workload, "levels": list(p.levels), "labels": list(self.labels),
                **self.answer.as_json()}


def bisect(store: ResultStore, plan: Plan, measurer: StoreMeasurer, *, sessions: int, max_sessions: int,
           budget_s: float | None, session_s: float, known_values: Mapping[Configuration, list[float]] | None = None,
           say: Callable[[str], None] = lambda line: None) -> Result:
    """The search over the plan's differences, measured by `measurer` (see bisection.Search)."""
    search = bisection.Search(measurer, sessions=sessions, max_sessions=max_sessions, budget_s=budget_s,
                              session_s=session_s, known=dict(known_values or {}), say=say)
    answer = search.run(plan.differences, axis=plan.axis)
    used = {label for label in measurer.labels.values()}
    measured = set(search.values)
    labels = tuple(sorted((measurer.labels[c] for c in measured if c in measurer.labels and
                           measurer.labels[c] in used), key=_order))
    return Result(plan, answer, labels)


def _order(label: str) -> tuple[int, int]:
    m = _LABEL.fullmatch(label)
    step = m.group(2) if m else ""
    return (0 if step == "a" else 1 if step == "b" else 2, int(step[4:]) if step.startswith("step") else 0)


def from_gate(path: Path) -> tuple[str, str, str | None]:
    """A gate's --json result: its baseline and candidate (as `gate` was given them: a
    run id or a label) and the workload it failed on (the first, where several)."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise UsageError(f"--from-gate {path}: not a gate's JSON result ({exc})") from None
    if not isinstance(data, dict) or not isinstance(data.get("baseline_spec"), str) or \
            not isinstance(data.get("candidate_spec"), str):
        raise UsageError(f"--from-gate {path}: not a gate's JSON result (`dbarena gate --json`, with its "
                         "baseline_spec and candidate_spec)")
    items = data.get("items")
    failed = [i.get("workload") for i in items if isinstance(i, dict) and i.get("status") == gating.FAIL] \
        if isinstance(items, list) else []
    workload = next((w for w in failed if isinstance(w, str)), None)
    return data["baseline_spec"], data["candidate_spec"], workload


def commands(found: gating.Gate, store: Path | str, budget: str = "1h") -> list[str]:
    """The `dbarena bisect` command that would explain each workload a gate failed on
    (what `gate --confirm` prints when it still fails): the baseline as A, the candidate
    as B, as the gate was given them."""
    a, b = found.baseline.spec, found.candidate.spec
    if a is None or b is None:
        return []
    return [" ".join(shlex.quote(word) for word in ("dbarena", "bisect", a, b, "--workload", workload, "--budget",
                                                     budget, "--store", str(store)))
            for workload in dict.fromkeys(i.workload for i in found.failed)]
