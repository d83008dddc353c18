"""The sweep: for each point, build the command, run it, parse it, store it.

Stages, in order: prepare each tool's dataset once (pgbench -i), then every point.
Each finished point is committed to the store before the next starts, so a crash,
Ctrl-C or SIGTERM loses at most the point in flight. A failed point is stored with
its reason and the sweep goes on, unless fail_fast.
"""

from __future__ import annotations

import contextlib
from dataclasses import replace
from typing import Protocol, Sequence

from dbarena import execute
from dbarena.errors import EnvironmentProblem, ParseError
from dbarena.model import PointResult, PointSpec, Sample
from dbarena.store import Store, now_utc
from dbarena.sysmetrics import Sampler
from dbarena.workloads import WORKLOADS, binary


class Reporter(Protocol):
    """What the sweep tells its audience (a terminal progress bar, or nobody)."""

    def stage(self, text: str) -> None: ...
    def point_started(self, index: int, spec: PointSpec) -> None: ...
    def sample(self, spec: PointSpec, sample: Sample) -> None: ...
    def point_finished(self, index: int, result: PointResult) -> None: ...


class SilentReporter:
    def stage(self, text: str) -> None:
        pass

    def point_started(self, index: int, spec: PointSpec) -> None:
        pass

    def sample(self, spec: PointSpec, sample: Sample) -> None:
        pass

    def point_finished(self, index: int, result: PointResult) -> None:
        pass


def point_timeout_s(duration_s: int) -> float:
    # Generous: pgbench vacuums before it starts the clock, and a loaded 2-core
    # machine can be slow to connect many clients. Past this, the point is hung.
    return duration_s * 3 + 300


def _failure_reason(done: execute.Completed, problem: str | None) -> str:
    if done.timed_out:
        reason = f"{done.argv[0]} did not finish within {done.elapsed_s:.0f} s and was killed"
    else:
        lines = [l.strip() for l in done.stderr.splitlines() if l.strip() and not l.startswith("progress:")]
        tail = " | ".join(lines[-2:]) if lines else "no error output"
        reason = f"exit status {done.returncode}: {tail}"
    return f"{reason}; {problem}" if problem else reason


def _binary(target, tool) -> str:
    return str(target.tool(binary(tool)))


def _commands(argv) -> list[list[str]]:
    """A tool's prepare step: None, one command, or a list of commands in order."""
    if not argv:
        return []
    return argv if isinstance(argv[0], list) else [argv]


def prepare(target, tool, spec: PointSpec, reporter: Reporter) -> None:
    """Create the tool's dataset once per run and target (pgbench -i, sysbench prepare)."""
    commands = _commands(tool.prepare_argv(_binary(target, tool), target.conn, spec))
    if not commands:
        return
    described = ", ".join(f"{k} {v}" for k, v in spec.params)
    reporter.stage(f"preparing the {tool.TOOL} dataset on {target.engine} ({described})")
    for argv in commands:
        done = execute.run(argv, env=target.client_env(), timeout=24 * 3600)
        if done.returncode != 0:
            lines = [l for l in (done.stderr + done.stdout).splitlines() if l.strip()]
            raise EnvironmentProblem(
                f"{tool.TOOL} could not prepare its dataset: "
                f"{lines[-1] if lines else 'exit status ' + str(done.returncode)}"
            )


def cleanup(target, tool, spec: PointSpec, reporter: Reporter) -> None:
    """Drop what prepare created (sysbench cleanup). Best effort: the results are
    already stored, and a throwaway instance is removed anyway."""
    argv = tool.cleanup_argv(_binary(target, tool), target.conn, spec)
    if argv is None:
        return
    reporter.stage(f"cleaning up the {tool.TOOL} dataset on {target.engine}")
    done = execute.run(argv, env=target.client_env(), timeout=3600)
    if done.returncode != 0:
        lines = [l for l in (done.stderr + done.stdout).splitlines() if l.strip()]
        reporter.stage(f"{tool.TOOL} cleanup failed: {lines[-1] if lines else done.returncode}")


def run_point(target, spec: PointSpec, reporter: Reporter) -> PointResult:
    workload = WORKLOADS[spec.workload]
    tool = workload.tool
    argv = tool.point_argv(_binary(target, tool), target.conn, spec, workload.mode_args)

    def on_line(line: str) -> None:
        try:
            sample = tool.parse_progress_line(line)
        except ParseError:
            return  # the final parse reports it, with the line number
        if sample is not None:
            reporter.sample(spec, sample)

    started = now_utc()
    sampler = Sampler(server_pid=target.server_pid()).start()
    try:
        # pgbench reports progress on stderr, sysbench on stdout.
        done = execute.run(argv, env=target.client_env(), timeout=point_timeout_s(spec.duration_s),
                           on_stdout_line=on_line, on_stderr_line=on_line,
                           on_start=lambda pid: setattr(sampler, "loadgen_pid", pid))
    finally:
        system = sampler.stop()
    ended = now_utc()
    common = dict(
        spec=spec, started_at=started, ended_at=ended, command=done.argv,
        exit_code=done.returncode, stdout=done.stdout, stderr=done.stderr, system=system,
    )
    if done.returncode != 0:
        return PointResult(status="failed", error=_failure_reason(done, target.problem()),
                           samples=tool.read_samples(done.stdout, done.stderr), **common)
    try:
        measurement, samples = tool.read(done.stdout, done.stderr, spec)
    except ParseError as exc:
        return PointResult(status="failed", error=str(exc), samples=tool.read_samples(done.stdout, done.stderr), **common)
    verify = getattr(tool, "verify", None)
    if verify is not None:
        # A run that corrupts data is not a benchmark result.
        with contextlib.closing(target.connect()) as connection:
            checks = verify(connection)
        measurement = replace(measurement, details={**measurement.details, "consistency": checks})
        broken = [f"{n} ({c['condition']}: {c['violations']} violation(s))" for n, c in checks.items() if not c["ok"]]
        if broken:
            return PointResult(status="failed", error=f"consistency condition(s) failed: {'; '.join(broken)}",
                               measurement=measurement, samples=samples, **common)
    return PointResult(status="ok", measurement=measurement, samples=samples, **common)


def run_sweep(
    *,
    target,
    plan: Sequence[PointSpec],
    store: Store,
    run_id: int,
    reporter: Reporter,
    fail_fast: bool = False,
    init: bool = True,
    warmup_s: int = 0,
) -> list[PointResult]:
    """Run every point of the plan in order; return the results, each already stored.

    Each tool's dataset is prepared before its first point and cleaned up after
    the last point (not after Ctrl-C: leaving then should be quick).
    """
    prepared: dict[str, PointSpec] = {}
    results: list[PointResult] = []
    try:
        for index, spec in enumerate(plan):
            tool = WORKLOADS[spec.workload].tool
            if init and tool.TOOL not in prepared:
                prepare(target, tool, spec, reporter)
                prepared[tool.TOOL] = spec
            reporter.point_started(index, spec)
            if warmup_s:
                warm(target, spec, warmup_s, store, run_id, reporter)
            result = run_point(target, spec, reporter)
            store.add_point(run_id, result)
            results.append(result)
            reporter.point_finished(index, result)
            if fail_fast and not result.ok:
                break
    except Exception:
        _cleanup_all(target, prepared, reporter)
        raise
    if prepared:
        # Measured before cleanup drops the tables on an external target.
        datasets = {tool: dict(spec.params) for tool, spec in prepared.items()}
        store.update_target_facts(run_id, {"datasets": datasets, **target.dataset_facts()})
    _cleanup_all(target, prepared, reporter)
    return results


def warm(target, spec: PointSpec, warmup_s: int, store: Store, run_id: int, reporter: Reporter) -> None:
    """Study B's round: a run with the same parameters for warmup_s seconds, stored
    apart (phase 'warmup'), then a checkpoint so that the measured run does not pay
    for the warm-up's dirty pages."""
    reporter.stage(f"warming up {spec.workload} at {spec.threads} threads for {warmup_s} s")
    result = run_point(target, replace(spec, duration_s=warmup_s), SilentReporter())
    store.add_point(run_id, replace(result, phase="warmup"))
    target.checkpoint()


def _cleanup_all(target, prepared: dict[str, PointSpec], reporter: Reporter) -> None:
    if target.throwaway:
        return  # the whole instance goes away
    for spec in prepared.values():
        cleanup(target, WORKLOADS[spec.workload].tool, spec, reporter)
