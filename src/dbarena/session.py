"""A whole run of a study: open each target, record provenance, sweep, finish or mark
the run interrupted or failed, and say how it ended. The CLI only turns options into
a study, calls `run` and renders the outcome; Python code can do the same.

    from dbarena import session, study
    from dbarena.store import Store
    with Store("dbarena.db") as db:
        outcome = session.run(study.load("seed-a"), store=db)
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, Sequence

from dbarena import configkey, engines, execute, hostinfo, plan, workloads
from dbarena.errors import ExitStatus, Interrupted, UsageError
from dbarena.interfaces import Engine, Executor, Reporter, Target
from dbarena.model import PointResult, PointSpec, RunInfo, Sample, StudyRecord
from dbarena.runner import Bound, Sweep
from dbarena.store import Store, now_utc
from dbarena import study as study_mod
from dbarena.study import EngineEntry, Study


class SilentReporter:
    """A Reporter that tells nobody."""

    def begin(self, plan: Sequence[PointSpec], estimate_s: Callable[[PointSpec], float]) -> None:
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


@dataclass
class Outcome:
    """How a run ended: its stored runs, every measured point, the exit status."""

    run_ids: list[int] = field(default_factory=list)
    results: list[PointResult] = field(default_factory=list)
    exit_status: ExitStatus = ExitStatus.OK
    notes: list[str] = field(default_factory=list)  # e.g. how to reach a --keep instance

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
        return host_facts.get("hardware_threads") or hostinfo.hardware_threads()
    return threads


def expand(study: Study, host_facts: dict | None = None) -> list[plan.EnginePlan]:
    return plan.expand(study, hardware_threads_for(host_facts or {"hardware_threads": hostinfo.hardware_threads()}))


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


def _bindir(entry: EngineEntry) -> Path | None:
    return Path(entry.bindir) if entry.bindir else None


def run(study: Study, *, store: Store, executor: Executor = execute.LOCAL, reporter: Reporter | None = None,
        keep: bool = False, init: bool = True, host_facts: dict | None = None) -> Outcome:
    """Run every engine's plan of the study, one stored run per engine and variant.

    Finished points are stored as they finish. Ctrl-C (KeyboardInterrupt) and
    SIGTERM (errors.Interrupted) end the run: it is marked interrupted and the
    outcome says so (130 / 143); other errors mark it failed and propagate.
    """
    reporter = reporter or SilentReporter()
    facts = host_facts if host_facts is not None else hostinfo.host_facts()
    plans = expand(study, facts)
    check_settings(study, executor)
    record = StudyRecord(name=study.name, source=study.source, text=study.text, sha256=study.sha256)
    label = study.label or facts.get("hostname") or "unlabelled"
    outcome = Outcome()
    everything = plan.all_points(plans)
    begun: list[bool] = []

    def begin() -> None:
        # Once the first targets are open: nothing is shown before a start succeeds.
        if not begun:
            begun.append(True)
            reporter.begin(everything, estimate_s)
    index = 0
    try:
        for engine_plan in plans:
            _run_engine(engine_plan, study=study, record=record, label=label, facts=facts, store=store,
                        executor=executor, reporter=reporter, keep=keep, init=init, outcome=outcome,
                        first_index=index, begin=begin)
            index += len(engine_plan.points)
            if outcome.exit_status != ExitStatus.OK or (study.fail_fast and outcome.failed):
                break
    finally:
        if begun:
            reporter.end()
    if outcome.exit_status == ExitStatus.OK and outcome.failed:
        outcome.exit_status = ExitStatus.POINTS_FAILED
    return outcome


def _run_engine(engine_plan: plan.EnginePlan, *, study: Study, record: StudyRecord, label: str, facts: dict,
                store: Store, executor: Executor, reporter: Reporter, keep: bool, init: bool, outcome: Outcome,
                first_index: int, begin: Callable[[], None]) -> None:
    entry = engine_plan.engine
    bindir = _bindir(entry)
    engine = engines.get(entry.name, entry.flavour, bindir=bindir, executor=executor)
    tools = {workloads.WORKLOADS[p.workload].tool.name: workloads.WORKLOADS[p.workload].tool
             for p in engine_plan.points}
    run_ids: list[int] = []
    try:
        with contextlib.ExitStack() as stack:
            bound: dict[str, Bound] = {}
            for variant in engine_plan.variants:
                settings = engine_plan.settings[variant]
                if entry.target is not None:
                    opened = engine.external(entry.target, bindir=bindir, executor=executor)
                else:
                    # Room for every client of the widest point, plus a few for dbarena itself.
                    max_connections = max(151, engine_plan.max_clients + 10)
                    opened = engine.throwaway(settings=settings, max_connections=max_connections, bindir=bindir,
                                              keep=keep, executor=executor)
                target = stack.enter_context(opened)
                reporter.stage(f"target: {target.description}{f' (variant {variant})' if variant else ''}")
                # Every tool found now, not at the first point (and its version recorded).
                tool_versions = {t.binary: execute.version_line(target.client(t).binary, executor)
                                 for t in tools.values()}
                tool_versions.update(engine.client_libraries())
                run_id = store.begin_run(_run_info(study, record, label, facts, entry, engine, target, variant,
                                                   settings, tool_versions, init))
                run_ids.append(run_id)
                outcome.run_ids.append(run_id)
                context = _key_context(entry, target, settings, variant, facts)
                bound[variant] = Bound(target=target, run_id=run_id, context=context)
            levels = ", ".join(map(str, engine_plan.levels))
            begin()
            reporter.stage(f"study {study.name}{' --quick' if study.quick else ''}: {len(engine_plan.points)} points on {entry.name}: "
                           f"{', '.join(dict.fromkeys(p.workload for p in engine_plan.points))} at threads {levels}"
                           f"{f', {study.repeats} repeats interleaved' if study.repeats > 1 else ''}"
                           f"{f', variants ' + ', '.join(engine_plan.variants) if engine_plan.variants != ('',) else ''}")
            sweep = Sweep(targets=bound, store=store, reporter=reporter, executor=executor,
                          fail_fast=study.fail_fast, init=init, first_index=first_index)
            outcome.results += sweep.run(engine_plan.points)
            for run_id in run_ids:
                store.finish_run(run_id, "finished")
            if keep:
                outcome.notes += [b.target.keep_note() for b in bound.values() if b.target.throwaway]
    except (KeyboardInterrupt, Interrupted) as exc:
        for run_id in run_ids:
            store.finish_run(run_id, "interrupted")
        outcome.exit_status = ExitStatus.TERMINATED if isinstance(exc, Interrupted) else ExitStatus.INTERRUPTED
    except BaseException:
        for run_id in run_ids:
            store.finish_run(run_id, "failed")
        raise


def _key_context(entry: EngineEntry, target: Target, settings: dict, variant: str, facts: dict) -> dict:
    """The run-level part of every point's configuration key."""
    return {
        "settings": settings, "variant": variant, "server_version": target.server_version,
        "flavour": target.flavour,
        "host": configkey.host_identity(facts, None if target.throwaway else target.url, entry.server_cores,
                                        entry.server_threads),
    }


def _run_info(study: Study, record: StudyRecord, label: str, facts: dict, entry: EngineEntry, engine: Engine,
              target: Target, variant: str, settings: dict, tool_versions: dict, init: bool) -> RunInfo:
    target_facts = target.facts()
    if not target.throwaway:
        if entry.server_cores:
            target_facts["server_physical_cores"] = entry.server_cores
        if entry.server_threads:
            target_facts["server_hardware_threads"] = entry.server_threads
    options = {
        "study": study.name, "quick": study.quick, "changes": list(study.changes), "settings": settings,
        "init": init, "repeats": study.repeats,
        # What older runs recorded, so that report and analysis read both alike.
        "targets": {entry.name: entry.target} if entry.target else {},
    }
    return RunInfo(
        label=label, host=facts.get("hostname", ""), engine=entry.name, target=target.url, started_at=now_utc(),
        server_version=target.server_version, tool_versions=tool_versions, options=options, host_facts=facts,
        target_facts=target_facts, price_per_hour=study.price_per_hour, currency=study.currency, variant=variant,
        flavour=target.flavour, study=record,
    )
