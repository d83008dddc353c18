"""The sweep: for each point, build the command, run it, parse it, store it.

Stages per point: prepare the dataset when its lifecycle says so (once per run and
target, around each workload, or around each point: dataset_lifecycle.py), warm up
(a same-parameter run, then a checkpoint), the measured run, verification, cleanup.
Each finished point is committed to the store before the next starts, so a crash,
Ctrl-C or SIGTERM loses at most the point in flight. A failed point (the tool failed,
its output is unreadable, the server refused a CHECKPOINT or a verification query,
the dataset could not be prepared) is stored with its reason and the sweep goes on,
unless fail_fast. The measured run itself is measure.run_tool, the path each load
generator of `fleet run --together` measures its share by too. How a point's run is
measured is the sweep's strategy (Measure): on this machine by default, or, for
`fleet run --together`, by every load generator of the inventory at once
(fleet/togetherpoint.py); rounds, warm-ups, storing and the configuration key are the
sweep's either way.
Every subprocess starts through the Executor, so tests drive all of this with a fake.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
import time
import uuid
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Callable, Mapping, Protocol, Sequence

from dbarena.run.dataset_lifecycle import DatasetKey, Slot, dataset_key, dataset_steps, dataset_use
from dbarena.stats import analysis
from dbarena.stats import configkey
from dbarena.lifecycle import state
from dbarena.lifecycle import unsaved
from dbarena.errors import DatabaseError, EnvironmentProblem, Interrupted, StoreError
from dbarena.run import measure
from dbarena.run.profiling import Profiler
from dbarena.interfaces import Executor, Reporter, ResultStore, Target, Tool
from dbarena.model import Measurement, PointResult, PointSpec, Sample
from dbarena.records import JSON, JSONObject, json_object
from dbarena.store.database import now_utc
from dbarena.store.live import Publisher
from dbarena.workloads import WORKLOADS, failure


@dataclass(frozen=True)
class Bound:
    """A target the sweep runs on, the stored run its points belong to, and the
    run-level part of their configuration keys (settings, variant, server version,
    flavour, host: see configkey.build)."""

    target: Target | None  # None: its points are measured elsewhere (Sweep(measure=...))
    run_id: int
    context: Mapping[str, JSON] = field(default_factory=dict)  # provenance.key_context
    record: state.Record | None = None  # the run's state record: the tool running now goes in it
    loadgen_cpus: tuple[int, ...] | None = None  # the CPUs the tools run on ([cpus]); None: any
    # How its points measure beyond the bare tool (measure.run_tool): the tool's own
    # per-second report, the share of transactions logged. In their keys.
    client_progress: bool = False
    latency_sampling: float | None = None

    @property
    def local(self) -> Target:
        """The target on this machine's side (what the local strategy measures on and
        the datasets are prepared on); a sweep with another strategy has none."""
        if self.target is None:
            raise AssertionError("a bound with no target of its own is measured by its sweep's strategy only")
        return self.target

    def running(self, pid: int) -> None:
        """A tool started (prepare, warm-up or point): if dbarena is killed, whoever reaps
        the run kills it too, so it does not go on loading the server."""
        if self.record is not None:
            self.record.update(**state.process_fields("tool_pid", pid))

    def scratch(self, path: Path | None) -> None:
        """The work directory of the point in flight (the tool's files, pgbench's
        per-transaction log), or none any more: if dbarena is killed, whoever reaps
        the run removes it."""
        if self.record is not None:
            self.record.update(scratch=str(path) if path is not None else None)

    def config(self, spec: PointSpec) -> JSONObject:
        """The point's configuration key: the run's context (provenance.key_context; with
        `load_generators` where several hosts drove it at once) and the point's own."""
        tool = WORKLOADS[spec.workload].tool
        c = self.context
        settings, host, generators = json_object(c.get("settings")), c.get("host"), c.get("load_generators")
        return configkey.build(
            engine=spec.engine, workload=spec.workload, threads=spec.threads, clients=spec.clients,
            duration_s=spec.duration_s if tool.timed else None, warmup_s=spec.warmup_s, params=dict(spec.params),
            options=dict(spec.options), settings={k: v if isinstance(v, str) else str(v) for k, v in settings.items()},
            variant=spec.variant, server_version=_text(c.get("server_version")), flavour=_text(c.get("flavour")),
            host=host if isinstance(host, dict) else None,
            load_generators=generators if isinstance(generators, int) else 1,
            instruments=tool.instruments(self.client_progress, self.latency_sampling), tls=_text(c.get("tls")),
        )


def _text(value: JSON) -> str | None:
    return value if isinstance(value, str) else None


class Measure(Protocol):
    """How a sweep measures one run of a point (a warm-up's or the measured one): the
    sweep's own on this machine (measure.run_tool), or a strategy given to it."""

    def measure(self, spec: PointSpec, reporter: Reporter | None, phase: str = "measured") -> PointResult:
        """The run, read (and verified), as a PointResult; a failed one with why."""
        ...

    def checkpoint(self, spec: PointSpec) -> str | None:
        """After the point's warm-up, before its measured run: the server's dirty pages
        written; why the point cannot go on, if it cannot."""
        ...


class Sweep:
    """Runs a plan on its targets (one per variant) through an executor, or with
    another way of measuring each point (`measure`)."""

    def __init__(self, *, targets: Mapping[str, Bound], store: ResultStore, reporter: Reporter, executor: Executor,
                 fail_fast: bool = False, init: bool = True, sample_system: bool = True, first_index: int = 0,
                 latency_sampling: float | None = 1.0,  # (a study's default: study.DEFAULT_LATENCY_SAMPLING)
                 sample_server: bool = True, live: Publisher | None = None, profiler: Profiler | None = None,
                 measure: Measure | None = None):
        self.targets = targets
        self.measuring: Measure = measure if measure is not None else self
        self.store = store
        self.reporter = reporter
        self.executor = executor
        self.fail_fast = fail_fast
        self.init = init
        self.sample_system = sample_system
        self.sample_server = sample_server  # the server's own statistics over SQL (serverside/)
        # The share of transactions a tool with a per-transaction log (pgbench -l) logs
        # for the percentiles; None: no log.
        self.latency_sampling = latency_sampling
        self.next_index = first_index  # of the next point, over the whole session (for the reporter)
        self.prepared: dict[DatasetKey, PointSpec] = {}  # dataset key -> a spec that prepared it
        self.broken: dict[DatasetKey, str] = {}  # dataset key -> why it could not be prepared
        self.restore_s: dict[str, float] = {}  # variant -> seconds the last restore took, for its point
        # The point being measured, second by second, published for `dbarena serve`
        # (store/live.py); None: not published.
        self.live = live
        # The server's on-CPU profile of each measured run (--profile; not of a warm-up):
        # None, none.
        self.profiler = profiler

    def run(self, plan: Sequence[PointSpec]) -> list[PointResult]:
        """Every point of the plan in order; the results, each already stored."""
        rounds = iter([plan])
        return self.run_rounds(lambda finished: next(rounds, []))

    def run_rounds(self, next_round: Callable[[list[PointResult]], Sequence[PointSpec]]) -> list[PointResult]:
        """Rounds of points until next_round(results of the last round) is empty (the
        adaptive plan of rounds.Adaptive decides each round from the one before).
        Datasets prepared once per run stay prepared from one round to the next."""
        results: list[PointResult] = []
        current: dict[Slot, tuple[DatasetKey, PointSpec]] = {}
        finished: list[PointResult] = []
        try:
            while plan := next_round(finished):
                finished = []
                for spec, (before, after) in zip(plan, dataset_steps(plan, current)):
                    index = self.next_index
                    self.next_index += 1
                    if self.init:
                        for action, step_spec in before:
                            self._dataset(action, step_spec)
                    self.reporter.point_started(index, spec)
                    result = self.point(spec)
                    self._store(result)
                    finished.append(result)
                    results.append(result)
                    self.reporter.point_finished(index, result)
                    if self.init:
                        for action, step_spec in after:
                            self._dataset(action, step_spec)
                    if self.fail_fast and not result.ok:
                        return self._finish(results)
        except (KeyboardInterrupt, Interrupted):
            raise  # leaving should be quick: a throwaway instance goes away whole anyway
        except Exception:
            self._record_datasets()
            self._cleanup_left()
            raise
        return self._finish(results)

    def _finish(self, results: list[PointResult]) -> list[PointResult]:
        self._record_datasets()
        self._cleanup_left()
        return results

    def _store(self, result: PointResult) -> None:
        """Commit a finished point; if the store cannot take it, save it where `dbarena
        import` can read it and stop the run with one line that says where."""
        bound = self.targets[result.spec.variant]
        if bound.target is not None:
            bound.target.remember_shared_memory()
        restored = self.restore_s.pop(result.spec.variant, None)
        if restored is not None and result.measurement is not None:
            # Stored apart from what was measured: the point's details, not its time.
            result = replace(result, measurement=replace(result.measurement, details={
                **result.measurement.details, "restore_s": round(restored, 3)}))
        measured = result
        try:
            if result.server is not None:
                result = replace(result, server=measure.with_figures(result))
            point_id = self.store.add_point(bound.run_id, result, bound.config(result.spec))
        except StoreError as exc:
            raise type(exc)(f"{exc}; {self._unsaved(measured)}") from None
        if self.live is not None:
            self.live.clear(bound.run_id)  # (its seconds left the store's table as it was stored)
        # Cached now so that the SQL views show the point's value at once; a store that
        # cannot take the cache right now does not stop the run (reads recompute it).
        with contextlib.suppress(*self.store.errors):
            analysis.derive(self.store, bound.run_id, [point_id])

    def _unsaved(self, result: PointResult) -> str:
        """The point saved where `dbarena import` reads it, said in words (or why it
        could not be saved anywhere either)."""
        try:
            saved = unsaved.save(result, self.store.path)
        except StoreError as exc:
            return str(exc)
        return f"the point just measured is saved in {saved} (dbarena import {saved} --label LABEL --store OTHER.db)"

    # ------------------------------------------------------------ datasets

    def _dataset(self, action: str, spec: PointSpec) -> None:
        key = dataset_key(spec)
        if action in ("snapshot", "restore"):
            if key in self.prepared:
                self._snapshot_or_restore(action, spec)
            return
        if action == "prepare":
            self.broken.pop(key, None)
            problem = self.prepare(spec)
            if problem is None:
                self.prepared[key] = spec
            else:
                self.broken[key] = problem
        elif key in self.prepared:
            self.cleanup(spec)
            del self.prepared[key]

    def _snapshot_or_restore(self, action: str, spec: PointSpec) -> None:
        """Copy the stopped data directory aside after a prepare, or put that copy back
        before a point; the seconds it took are shown and stored with the point, apart
        from its measurement. A failure breaks the dataset: its points fail, with why."""
        target = self.targets[spec.variant].local
        started = time.monotonic()
        try:
            if action == "snapshot":
                target.snapshot_data()
            else:
                target.restore_data()
        except EnvironmentProblem as exc:
            key = dataset_key(spec)
            self.broken[key] = f"the dataset could not be {'saved' if action == 'snapshot' else 'restored'}: {exc}"
            self.prepared.pop(key, None)
            self.reporter.stage(self.broken[key])
            return
        seconds = time.monotonic() - started
        self.reporter.stage(f"{'saved' if action == 'snapshot' else 'restored'} the prepared data directory in "
                            f"{seconds:.1f} s")
        if action == "restore":
            self.restore_s[spec.variant] = seconds

    def _run_steps(self, spec: PointSpec, commands: list[list[str]], timeout: float) -> str | None:
        target = self.targets[spec.variant].local
        for argv in commands:
            done = self.executor.run(argv, env=target.client_env(), timeout=timeout,
                                     on_start=self.targets[spec.variant].running,
                                     cpus=self.targets[spec.variant].loadgen_cpus)
            if done.returncode != 0:
                return failure.error_line(done.stdout, done.stderr) or failure.failure_reason(
                    done.returncode, done.stdout, done.stderr)
        return None

    def prepare(self, spec: PointSpec) -> str | None:
        """Create the tool's dataset (pgbench -i, sysbench prepare); why not, if it failed."""
        target = self.targets[spec.variant].local
        tool = WORKLOADS[spec.workload].tool
        commands = tool.prepare_argv(target.client(tool), spec)
        if not commands:
            return None
        described = ", ".join(f"{k} {v}" for k, v in spec.params)
        self.reporter.stage(f"preparing the {tool.name} dataset on {target.engine}"
                            f"{f' ({spec.variant})' if spec.variant else ''} ({described})")
        problem = self._run_steps(spec, commands, timeout=24 * 3600)
        if problem is not None:
            problem = f"{tool.name} could not prepare its dataset: {problem}"
            self.reporter.stage(problem)
        return problem

    def cleanup(self, spec: PointSpec) -> None:
        """Drop what prepare created (sysbench cleanup). Best effort: the results are
        already stored."""
        target = self.targets[spec.variant].local
        tool = WORKLOADS[spec.workload].tool
        commands = tool.cleanup_argv(target.client(tool), spec)
        if not commands:
            return
        self.reporter.stage(f"cleaning up the {tool.name} dataset on {target.engine}")
        problem = self._run_steps(spec, commands, timeout=3600)
        if problem is not None:
            self.reporter.stage(f"{tool.name} cleanup failed: {problem}")

    def _record_datasets(self) -> None:
        # Measured before the last cleanup drops the tables on an external target.
        by_variant: dict[str, JSONObject] = {}
        for spec in self.prepared.values():
            by_variant.setdefault(spec.variant, {})[WORKLOADS[spec.workload].tool.name] = dict(spec.params)
        for variant, datasets in by_variant.items():
            bound = self.targets[variant]
            with contextlib.suppress(Exception):
                self.store.update_target_facts(bound.run_id, {"datasets": datasets, **bound.local.dataset_facts()})

    def _cleanup_left(self) -> None:
        """What is still prepared at the end (after an error too): dropped, except on a
        throwaway instance, which goes away whole."""
        for key, spec in list(self.prepared.items()):
            if self.init and not self.targets[spec.variant].local.throwaway:
                self.cleanup(spec)
            del self.prepared[key]

    # ------------------------------------------------------------ points

    def point(self, spec: PointSpec) -> PointResult:
        """Warm-up (if any), the measured run, verification; a failed PointResult
        with the reason for anything that went wrong on the way."""
        problem = self.broken.get(dataset_key(spec)) if self.init and dataset_use(spec) != "own" else None
        if problem is not None:
            return _failed(spec, problem)
        if spec.warmup_s:
            problem = self.warm(spec)
            if problem is not None:
                return _failed(spec, problem)
        return self.measuring.measure(spec, self.reporter)

    def warm(self, spec: PointSpec) -> str | None:
        """Study B's round: a run with the same parameters for warmup_s seconds, stored
        apart (phase 'warmup'), then a checkpoint so that the measured run does not pay
        for the warm-up's dirty pages. Why the point cannot go on, if it cannot."""
        bound = self.targets[spec.variant]
        self.reporter.stage(f"warming up {spec.workload} at {spec.threads} threads for {spec.warmup_s} s")
        result = self.measuring.measure(replace(spec, duration_s=spec.warmup_s), None, phase="warmup")
        try:
            self.store.add_point(bound.run_id, replace(result, phase="warmup"), bound.config(result.spec))
        except StoreError as exc:
            # Not saved for import: a warm-up is no result, and import would take it for one.
            raise type(exc)(f"{exc}; the warm-up just run is not kept (nothing measured was lost)") from None
        if self.live is not None:
            self.live.clear(bound.run_id)
        return self.measuring.checkpoint(spec)

    def checkpoint(self, spec: PointSpec) -> str | None:
        try:
            self.targets[spec.variant].local.checkpoint()
        except DatabaseError as exc:
            return f"after the warm-up: {exc}"
        return None

    def measure(self, spec: PointSpec, reporter: Reporter | None, phase: str = "measured") -> PointResult:
        """The point's tool run and read (measure.run_tool: the one measuring path),
        then verified. Its seconds go to the reporter (if any) and, as they come, to
        the live publisher (`phase`: warmup or measured)."""
        bound = self.targets[spec.variant]
        token = self._live_begin(bound.run_id, spec, phase)

        def on_progress(sample: Sample) -> None:
            if reporter is not None:
                reporter.sample(spec, sample)
            if token is not None and self.live is not None and sample.tps is not None:
                self.live.second(token, sample.second, sample.tps)

        # Each point (and warm-up run) has a work directory of its own: the tool's files
        # (PointInput.files) and its per-transaction log go there, and the tool runs in
        # it. Removed when the point ends (also on Ctrl-C and SIGTERM: finally).
        # Its name is known before it exists, so that a Ctrl-C between its creation and
        # the try cannot leave it behind.
        work_dir = Path(tempfile.gettempdir()) / f"dbarena-point-{uuid.uuid4().hex[:12]}"
        try:
            bound.scratch(work_dir)
            state.make_dir(work_dir)  # marked: a reaper removes only what dbarena made
            ran = measure.run_tool(
                spec, bound.local, self.executor, work_dir, latency_sampling=self.latency_sampling,
                client_progress=bound.client_progress,
                sample_system=self.sample_system, sample_server=self.sample_server,
                on_progress=on_progress if reporter is not None or token is not None else None,
                on_start=bound.running, cpus=bound.loadgen_cpus,
                profiler=self.profiler if phase == "measured" else None)
        finally:
            shutil.rmtree(work_dir, ignore_errors=True)
            bound.scratch(None)
        if token is not None and self.live is not None:
            # Its seconds written before the point is stored (the transaction that stores
            # it removes them: none may land after it). Not on an interrupt: the run's end
            # removes them then, without a wait.
            self.live.flush()
            if self.live.refused is not None:
                # The sidecar's name became something dbarena did not make: said once,
                # and the run goes on without publishing.
                self.reporter.stage(self.live.refused)
                self.live.close()
                self.live = None
        assert ran is not None  # (it is asked to wait for nothing)
        if ran.profile_problem is not None:
            self.reporter.stage(f"no on-CPU profile of this point: {ran.profile_problem}")
        if ran.error is not None or ran.measurement is None:
            return ran.point()
        problem, measurement = _verify(WORKLOADS[spec.workload].tool, bound.local, ran.measurement)
        return ran.point(status="ok" if problem is None else "failed", error=problem, measurement=measurement)

    def _live_begin(self, run_id: int, spec: PointSpec, phase: str) -> int | None:
        """The point announced to the live publisher: what it measures and how many of
        the run's points are stored before it (so that a reader can tell its seconds
        from those of a point stored since); None where nothing is published."""
        if self.live is None:
            return None
        try:
            found = self.store.run_progress([run_id]).get(run_id)
        except self.store.errors:
            return None  # the store cannot be read now: storing the point will say so
        if found is None:
            return None
        return self.live.begin(run_id, spec, phase, found.stored, spec.duration_s)


def _verify(tool: Tool, target: Target, measurement: Measurement) -> tuple[str | None, Measurement]:
    """A run that corrupts data is not a benchmark result; a verification the server
    refuses fails the point too."""
    if not tool.verifies:
        return None, measurement
    try:
        with contextlib.closing(target.connect()) as connection:
            checks = tool.verify(connection)
    except Exception as exc:  # the driver's own error classes differ per engine
        if isinstance(exc, DatabaseError) or type(exc).__module__.split(".")[0] in ("psycopg", "pymysql"):
            return f"verification failed: {' '.join(str(exc).split())}", measurement
        raise
    if checks is None:
        return None, measurement
    measurement = replace(measurement, details={**measurement.details, "consistency": checks})
    broken = [f"{n} ({c['condition']}: {c['violations']} violation(s))" for n, c in checks.items() if not c["ok"]]
    if broken:
        return f"consistency condition(s) failed: {'; '.join(broken)}", measurement
    return None, measurement


def _failed(spec: PointSpec, reason: str) -> PointResult:
    now: datetime = now_utc()
    return PointResult(spec=spec, status="failed", started_at=now, ended_at=now, command=(), exit_code=None,
                       stdout="", stderr="", error=reason)
