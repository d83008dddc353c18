"""A whole run of a study: open each target, record provenance, sweep, finish or mark
the run interrupted or failed, and say how it ended. The CLI only turns options into
a study, calls `run` and renders the outcome; Python code can do the same.

    from dbarena import session, study
    from dbarena.store.database import Store
    with Store("dbarena.db") as db:
        outcome = session.run(study.load("seed-a"), store=db)
"""

from __future__ import annotations

import contextlib
import os
import socket
import time
import uuid
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, Sequence

from dbarena import engines, execute, plan, workloads
from dbarena.stats import analysis
from dbarena.stats import configkey
from dbarena.host import datadir
from dbarena.host import hostinfo
from dbarena.stats import rounds
from dbarena.host import smt
from dbarena.lifecycle import smt_switch
from dbarena.lifecycle import state
from dbarena.host import topology
from dbarena.errors import ExitStatus, Interrupted, StoreError, UsageError
from dbarena.interfaces import Engine, Executor, Reporter, Target
from dbarena.model import PointResult, PointSpec, RunInfo, Sample, StudyRecord
from dbarena.runner import Bound, Sweep
from dbarena.store.database import Store, now_utc
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


def check_data_dirs(plans: Sequence[plan.EnginePlan]) -> None:
    """Every engine's data_dir can hold its datasets (a RAM disk: also in memory), said
    before anything starts."""
    for p in plans:
        entry = p.engine
        if entry.target is not None or entry.data_dir is None:
            continue
        parent = datadir.resolve(entry.data_dir)
        # The datasets of one server live side by side: each workload's, largest repeat.
        datasets = {(workloads.WORKLOADS[s.workload].tool.name, s.params) for s in p.points}
        need = sum(datadir.estimate_bytes(dict(params)) for _, params in datasets)
        # restore keeps a copy of the prepared data directory beside it (reflinked where
        # the file system can, which a RAM disk cannot).
        copies = 2 if any(s.restore for s in p.points) else 1
        datadir.check_room(parent, need * copies * len(p.variants), entry.data_dir)


@dataclass(frozen=True)
class Placement:
    """Where a variant's server and load generator run ([cpus]): CPU numbers."""

    server: tuple[int, ...]
    loadgen: tuple[int, ...]
    cores: int
    smt: str | None
    note: str = ""
    smt_by: str | None = None  # how the SMT mode was made: the kernel's switch, or affinity

    def facts(self) -> dict:
        return {"server": hostinfo.cpu_list(set(self.server)), "server_cores": self.cores,
                "server_threads": len(self.server), "load_generator": hostinfo.cpu_list(set(self.loadgen)),
                "smt": self.smt, "smt_by": self.smt_by, "note": self.note or None}

    def key(self) -> dict[str, str]:
        # Part of every point's configuration: the CPUs are what the variant is about.
        return {"cpus.server": hostinfo.cpu_list(set(self.server)),
                "cpus.load_generator": hostinfo.cpu_list(set(self.loadgen)),
                **({"cpus.smt": self.smt} if self.smt else {})}


def _smt_threads(smt: str | None) -> bool | int:
    """A [cpus] smt mode as whole_cores takes it: "on" every sibling, "off" one thread
    per core, "2", "4" ... that many threads per core (POWER's SMT modes)."""
    if smt is None or smt == "on":
        return True
    return False if smt == "off" else int(smt)


def kernel_smt(study: Study, plans: Sequence[plan.EnginePlan]) -> bool:
    """Whether the study's [cpus] smt axis is the kernel's switch (smt.py) rather than
    emulated by affinity; refused in one line, before anything starts, where this
    machine cannot switch (a VM, no root, a mode its kernel lacks)."""
    modes = sorted({mode for p in plans for _, mode in p.placement.values() if mode})
    if not modes or study.smt_emulate:
        return False
    why = smt_switch.refusal(modes)
    if why:
        raise UsageError(f"[cpus] smt: {why}; emulate it with [cpus] smt_emulate = true (the SMT modes by "
                         "affinity: that many threads of each core)")
    return True


def placements(study: Study, plans: Sequence[plan.EnginePlan], *, kernel: bool = False,
               switched: bool = False) -> dict[tuple[str, str], Placement]:
    """The CPUs of every [cpus] variant, chosen (and refused, in one line) before
    anything starts: N whole physical cores of the CPUs this process may use, spread
    over the sockets; the load generator on the rest, or on the same CPUs when asked
    or when nothing is left. `kernel`: the SMT mode is the kernel's switch; once it is
    `switched`, a core's online threads are the mode's (before, the check counts the
    threads the mode will leave online)."""
    wanted = [(p.engine.name, v, cores, mode) for p in plans for v, (cores, mode) in p.placement.items() if cores]
    if not wanted:
        return {}
    cpus = topology.read()
    usable = set(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else {c.cpu for c in cpus}
    out: dict[tuple[str, str], Placement] = {}
    for engine, variant, cores, mode in wanted:
        server = topology.whole_cores(cpus, cores, smt=True if switched else _smt_threads(mode), usable=usable)
        rest = sorted(usable - set(server))
        note = ""
        if study.load_generator == "same" or not rest:
            if study.load_generator == "rest":
                note = "no CPU left for the load generator: it shares the server's"
            loadgen = sorted(usable)
        else:
            loadgen = rest
        by = None
        if mode and kernel:
            by = f"kernel ({smt.CONTROL})"
        elif mode:
            by = "affinity ({})".format({"off": "one thread per core", "on": "every thread of each core"}.get(
                mode, f"{mode} threads per core"))
        out[(engine, variant)] = Placement(server=tuple(server), loadgen=tuple(loadgen), cores=cores, smt=mode,
                                           note=note, smt_by=by)
    return out


def _bindir(entry: EngineEntry) -> Path | None:
    return Path(entry.bindir) if entry.bindir else None


def run(study: Study, *, store: Store, executor: Executor = execute.LOCAL, reporter: Reporter | None = None,
        keep: bool = False, init: bool = True, host_facts: dict | None = None, resume: str | None = None,
        clock: Callable[[], float] = time.monotonic, system_metrics: bool = True) -> Outcome:
    """Run every engine's plan of the study, one stored run per engine and variant.

    Finished points are stored as they finish. Ctrl-C (KeyboardInterrupt) and
    SIGTERM (errors.Interrupted) end the run: it is marked interrupted and the
    outcome says so (130 / 143); other errors mark it failed and propagate.
    `resume` (an invocation: see resumable) continues the runs of an earlier
    `dbarena run` of this study: points stored ok are not run again, new points
    join the same runs. `system_metrics` False: no once-a-second sampling of the
    machine's CPU, disk and memory (bench/overhead measures what it costs).
    """
    reporter = reporter or SilentReporter()
    facts = host_facts if host_facts is not None else hostinfo.host_facts()
    plans = expand(study, facts)
    check_settings(study, executor)
    check_data_dirs(plans)
    switching = kernel_smt(study, plans)
    where = placements(study, plans, kernel=switching)
    # (SMT mode, the engine's points in it): one part per engine, or per engine and
    # mode when the kernel switches SMT (machine-wide: one mode at a time).
    parts = [part for p in plans for part in (plan.by_smt(p) if switching else [(None, p)])]
    record = StudyRecord(name=study.name, source=study.source, text=study.text, sha256=study.sha256)
    label = study.label or facts.get("hostname") or "unlabelled"
    outcome = Outcome(invocation=resume or str(uuid.uuid4()))
    previous = {(r["engine"], r["variant"]): r["id"] for r in store.invocation_runs(resume)} if resume else {}
    deadline = clock() + study.budget_s if study.budget_s is not None else None
    everything = [spec for _, part in parts for spec in part.points]
    begun: list[bool] = []

    def begin() -> None:
        # Once the first targets are open: nothing is shown before a start succeeds.
        if not begun:
            begun.append(True)
            reporter.begin(everything, estimate_s)
    ctx = _Context(study=study, record=record, label=label, facts=facts, store=store, executor=executor,
                   reporter=reporter, keep=keep, init=init, outcome=outcome, begin=begin, previous=previous,
                   clock=clock, deadline=deadline, system_metrics=system_metrics, placements=where)
    index = 0
    switch = smt_switch.Switch() if switching else None
    try:
        for number, (mode, part) in enumerate(parts):
            later = [spec for _, other in parts[number + 1:] for spec in other.points]
            if switch is not None:
                _switch(ctx, switch, mode, part)
                if deadline is not None:
                    # One SMT mode after the other: each gets its share of what is left
                    # of the budget, or the first would take it all (interleaved
                    # variants share it round by round).
                    left = deadline - clock()
                    mine = sum(estimate_s(p) for p in part.points)
                    ctx.deadline = clock() + left * mine / max(mine + sum(estimate_s(p) for p in later), 1e-9)
            index = _run_engine(ctx, part, first_index=index, later=later)
            if outcome.exit_status != ExitStatus.OK or (study.fail_fast and outcome.failed):
                break
    finally:
        problem = switch.restore() if switch is not None else None
        if problem:
            reporter.stage(problem)
            outcome.notes.append(problem)
        elif switch is not None and switch.changed:
            reporter.stage(f"SMT is {switch.mode} again, as before the study ({switch.control})")
        if begun:
            reporter.end()
    if outcome.exit_status == ExitStatus.OK and outcome.failed:
        outcome.exit_status = ExitStatus.POINTS_FAILED
    return outcome


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
    store: Store
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


def _run_engine(ctx: _Context, engine_plan: plan.EnginePlan, *, first_index: int, later: list[PointSpec]) -> int:
    """One engine's plan (`later`: the points of the engines after it, for the ETA);
    the index of the next point of the session."""
    study, store, executor, reporter, outcome = ctx.study, ctx.store, ctx.executor, ctx.reporter, ctx.outcome
    keep, init, previous, clock, deadline = ctx.keep, ctx.init, ctx.previous, ctx.clock, ctx.deadline
    entry = engine_plan.engine
    bindir = _bindir(entry)
    engine = engines.get(entry.name, entry.flavour, bindir=bindir, executor=executor)
    tools = {workloads.WORKLOADS[p.workload].tool.name: workloads.WORKLOADS[p.workload].tool
             for p in engine_plan.points}
    run_ids: list[int] = []
    next_index = first_index
    data_parent = datadir.resolve(entry.data_dir) if entry.target is None else None
    try:
        with contextlib.ExitStack() as stack:
            bound: dict[str, Bound] = {}
            for variant in engine_plan.variants:
                settings = engine_plan.settings[variant]
                cluster = engine_plan.cluster.get(variant, {})
                placed = ctx.placements.get((entry.name, variant))
                if entry.target is not None:
                    opened = engine.external(entry.target, bindir=bindir, executor=executor)
                else:
                    # Room for every client of the widest point, plus a few for dbarena itself.
                    max_connections = max(151, engine_plan.max_clients + 10)
                    opened = engine.throwaway(settings=settings, max_connections=max_connections, bindir=bindir,
                                              keep=keep, executor=executor, cluster=cluster, data_parent=data_parent,
                                              cpus=placed.server if placed else None)
                target = stack.enter_context(opened)
                reporter.stage(f"target: {target.description}{f' (variant {variant})' if variant else ''}"
                               + (f" on CPUs {hostinfo.cpu_list(set(placed.server))}, load generator on "
                                  f"{hostinfo.cpu_list(set(placed.loadgen))}" if placed else ""))
                if placed and placed.note:
                    reporter.stage(placed.note)
                # Every tool found now, not at the first point (and its version recorded).
                tool_versions = {t.binary: execute.version_line(target.client(t).binary, executor)
                                 for t in tools.values()}
                # The client library each tool links speaks the wire protocol the numbers
                # went through: "pgbench libpq", "sysbench libmariadb" ...
                for t in tools.values():
                    for lib, text in execute.linked_libraries(target.client(t).binary, executor).items():
                        tool_versions[f"{t.binary} {lib}"] = text
                tool_versions.update(engine.client_libraries())
                info = _run_info(study, ctx.record, ctx.label, ctx.facts, entry, engine, target, variant, settings,
                                 tool_versions, init, outcome.invocation, cluster, placed, data_parent)
                if (entry.name, variant) in previous:
                    run_id = previous[(entry.name, variant)]
                    store.reopen_run(run_id, info.options)
                else:
                    run_id = store.begin_run(info)
                run_ids.append(run_id)
                outcome.run_ids.append(run_id)
                # Recorded until the run ends here: if dbarena is killed, the next command
                # marks it interrupted and names what it may have left on a target.
                record = stack.enter_context(state.run(str(store.path.resolve()) if store.path else store.location, run_id,
                                                       None if target.throwaway else target.url,
                                                       _leftovers(target, engine_plan.points, variant)))
                # Cluster options are part of the configuration as settings are (named
                # "cluster.NAME" in the key's settings, apart from the server's own).
                context = _key_context(entry, target, {**settings, **{f"cluster.{k}": v for k, v in cluster.items()},
                                                       **(placed.key() if placed else {})}, variant, ctx.facts)
                bound[variant] = Bound(target=target, run_id=run_id, context=context, record=record,
                                       loadgen_cpus=placed.loadgen if placed else None)
            stored = _stored(store, bound, engine_plan.points) if previous else {}
            levels = ", ".join(map(str, engine_plan.levels))
            ctx.begin()
            how = (f", repeats until +-{study.precision:.1%} (at most {study.max_repeats})" if study.precision
                   else f", {study.repeats} repeats interleaved" if study.repeats > 1 else "")
            reporter.stage(f"study {study.name}{' --quick' if study.quick else ''}: {len(engine_plan.points)} points on {entry.name}: "
                           f"{', '.join(dict.fromkeys(p.workload for p in engine_plan.points))} at threads {levels}"
                           f"{how}"
                           f"{f', variants ' + ', '.join(engine_plan.variants) if engine_plan.variants != ('',) else ''}")
            sweep = Sweep(targets=bound, store=store, reporter=reporter, executor=executor,
                          fail_fast=study.fail_fast, init=init, first_index=first_index,
                          latency_sampling=study.latency_sampling, sample_system=ctx.system_metrics)
            if study.precision is None:
                todo = [p for p in engine_plan.points if (rounds.base(p), p.repeat) not in stored.get("ok", {})]
                outcome.skipped += len(engine_plan.points) - len(todo)
                if previous:
                    reporter.replan(first_index, todo + later)
                outcome.results += sweep.run(todo)
            else:
                adaptive = rounds.Adaptive(
                    engine_plan.points, target=study.precision, max_repeats=study.max_repeats,
                    budget_s=None if deadline is None else deadline - clock(), value=analysis.result_value,
                    estimate_s=estimate_s, history=stored.get("states"), clock=clock,
                    on_forecast=lambda remaining: reporter.replan(sweep.next_index, remaining + later))
                outcome.skipped += sum(len(s.values) for s in adaptive.summary())
                try:
                    outcome.results += sweep.run_rounds(adaptive.next_round)
                finally:
                    outcome.precision += adaptive.summary()
            next_index = sweep.next_index
            for run_id in run_ids:
                store.finish_run(run_id, "finished")
            if keep:
                outcome.notes += [b.target.keep_note() for b in bound.values() if b.target.throwaway]
    except (KeyboardInterrupt, Interrupted) as exc:
        for run_id in run_ids:
            with contextlib.suppress(StoreError):
                store.finish_run(run_id, "interrupted")
        outcome.exit_status = ExitStatus.TERMINATED if isinstance(exc, Interrupted) else ExitStatus.INTERRUPTED
    except BaseException:
        for run_id in run_ids:
            # A store that cannot be written says so in the error being raised.
            with contextlib.suppress(StoreError):
                store.finish_run(run_id, "failed")
        raise
    return next_index


def _leftovers(target: Target, points: Sequence[PointSpec], variant: str) -> list[str]:
    """What a killed run may leave on an existing server, each with the command that
    removes it (never run by dbarena on its own)."""
    if target.throwaway:
        return []
    out: list[str] = []
    secret = None
    for spec in points:
        if spec.variant != variant:
            continue
        tool = workloads.WORKLOADS[spec.workload].tool
        client = target.client(tool)
        secret = str(client.secret_file) if client.secret_file else None
        for argv in tool.cleanup_argv(client, spec):
            # The password file dbarena wrote is gone by then: the user supplies the password.
            shown = " ".join(a for a in argv if not (secret and secret in a))
            line = f"{tool.name} tables may remain; drop them with: {shown}"
            if line not in out:
                out.append(line)
        if tool.name == "pgbench":
            line = (f"pgbench tables (pgbench_*) remain, as after any run on a target; drop them with: "
                    f"pgbench -i -I d -h {target.conn.host} -p {target.conn.port} -U {target.conn.user} "
                    f"{target.conn.dbname}")
            if line not in out:
                out.append(line)
    return out


def _stored(store: Store, bound: dict[str, Bound], points: Sequence[PointSpec]) -> dict:
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


def _key_context(entry: EngineEntry, target: Target, settings: dict, variant: str, facts: dict) -> dict:
    """The run-level part of every point's configuration key."""
    return {
        "settings": settings, "variant": variant, "server_version": target.server_version,
        "flavour": target.flavour,
        "host": configkey.host_identity(facts, None if target.throwaway else target.url, entry.server_cores,
                                        entry.server_threads),
    }


def _run_info(study: Study, record: StudyRecord, label: str, facts: dict, entry: EngineEntry, engine: Engine,
              target: Target, variant: str, settings: dict, tool_versions: dict, init: bool,
              invocation: str, cluster: dict | None = None, placed: Placement | None = None,
              data_parent: Path | None = None) -> RunInfo:
    target_facts = target.facts()
    if not target.throwaway:
        if entry.server_cores:
            target_facts["server_physical_cores"] = entry.server_cores
        if entry.server_threads:
            target_facts["server_hardware_threads"] = entry.server_threads
    options = {
        "study": study.name, "quick": study.quick, "changes": list(study.changes), "settings": settings,
        "cluster": cluster or {},
        "cpus": placed.facts() if placed else None,  # [cpus]: where the server and the tools ran
        # Where the data lived (a RAM disk, an NVMe mount, the temporary directory): its
        # file system, device and mount options.
        "data_dir": datadir.facts(data_parent, entry.data_dir) if target.throwaway else None,
        "init": init, "repeats": study.repeats,
        # What --resume rebuilds the plan from: the study's text (stored apart) and these flags.
        "flags": dict(study.flags), "source": study.source,
        "precision": study.precision, "max_repeats": study.max_repeats, "budget_s": study.budget_s,
        "owner": {"pid": os.getpid(), "start": state.start_time(os.getpid()), "host": facts.get("hostname", "")},
        # What older runs recorded, so that report and analysis read both alike.
        "targets": {entry.name: entry.target} if entry.target else {},
    }
    return RunInfo(
        label=label, host=facts.get("hostname", ""), engine=entry.name, target=target.url, started_at=now_utc(),
        server_version=target.server_version, tool_versions=tool_versions, options=options, host_facts=facts,
        target_facts=target_facts, price_per_hour=study.price_per_hour, currency=study.currency, variant=variant,
        flavour=target.flavour, study=record, invocation=invocation,
    )


def _incomplete(store: Store, run: dict) -> bool:
    if run["status"] != "finished":
        return True
    if run["options"].get("precision"):
        return False  # adaptive: a failed run was retried under a new repeat index
    # A failed point that no later repeat of the same configuration and index replaced.
    rows = store.points(run_id=run["id"])
    ok = {(r["config_key"], r["repeat"]) for r in rows if r["status"] == "ok"}
    return any(r["status"] == "failed" and (r["config_key"], r["repeat"]) not in ok for r in rows)


def resumable(store: Store, run_id: int | None) -> tuple[str, list[dict]]:
    """The `dbarena run` to continue (its invocation) and its stored runs: the one run
    RUN belongs to, or the latest that did not finish every point. UsageError when
    there is none, or when its owner is still running it."""
    if run_id is not None:
        run = store.run(run_id)
        if run is None:
            raise UsageError(f"--resume {run_id}: no run {run_id} in {store.location}")
        if not run.get("invocation") or "flags" not in run["options"]:
            raise UsageError(f"--resume {run_id}: run {run_id} was stored by an older dbarena (or imported) "
                             "without its plan; it cannot be resumed")
        invocation = run["invocation"]
    else:
        candidates = [r for r in reversed(store.runs()) if r.get("invocation") and "flags" in r["options"]]
        invocation = next((r["invocation"] for r in candidates if _incomplete(store, r)), "")
        if not invocation:
            raise UsageError(f"--resume: no interrupted or partly failed run in {store.location}")
    runs = store.invocation_runs(invocation)
    for r in runs:
        owner = r["options"].get("owner") or {}
        if r["status"] == "running" and owner.get("host") == socket.gethostname() \
                and owner.get("pid") != os.getpid() and state.alive(owner.get("pid"), owner.get("start")):
            raise UsageError(f"--resume: run {r['id']} is still running (process {owner['pid']})")
    return invocation, runs


