"""One run of a point's tool, read: the one path every measurement takes.

The local sweep (runner.Sweep) and each load generator of `fleet run --together`
(fleet/loadgen.py) measure through `run_tool`: the tool's command and files built from
the target's client, its per-transaction log, the server's own statistics sampled over
SQL (serverside/), the machine's CPU (host/sysmetrics.py), the run under a timeout, and
the reading of its output by the tool's own parser. What differs lies around it: the
sweep verifies and stores the point; a load generator waits for the controller's start
time (`before_start`) and hands its part back to be combined with the others'.

`with_figures` adds to a point's server series the figures comparisons read, for both
(its bound is not decided here: stats/analysis derives it from the stored series).
A `profiler` (--profile: run/profiling.py) samples the server's processes from just
before the tool starts until it exits, and folds what it took after the samplers stop.
"""

from __future__ import annotations

import contextlib
import functools
import os
import time
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Callable, Mapping

from dbarena.errors import ParseError
from dbarena.host.sysmetrics import Sampler, SystemSample
from dbarena.interfaces import Completed, Executor, LatencyDistribution, Target, Tool
from dbarena.model import Measurement, PointResult, PointSpec, Profile, Sample
from dbarena.run.profiling import Profiler, Recording
from dbarena.serverside.sampler import TIMEOUT_S as SERVER_TIMEOUT_S, ServerSampler
from dbarena.serverside import throughput
from dbarena.serverside.series import ServerSeries
from dbarena.stats import bound as point_bound
from dbarena.store.database import now_utc
from dbarena.workloads import WORKLOADS, failure


def point_timeout_s(expected_s: float) -> float:
    # Generous: pgbench vacuums before it starts the clock, and a loaded 2-core
    # machine can be slow to connect many clients. Past this, the point is hung.
    return expected_s * 3 + 300


@dataclass(frozen=True)
class ToolRun:
    """What one run of a point's tool gave: the completed process, the machine's and the
    server's series over it, and its reading (`measurement`), or why there is none."""

    spec: PointSpec
    started_at: datetime  # when the tool was launched (after any wait for a start time)
    ended_at: datetime
    done: Completed
    system: tuple[SystemSample, ...] = ()
    server: ServerSeries | None = None
    measurement: Measurement | None = None
    samples: tuple[Sample, ...] = ()
    error: str | None = None  # why there is no measurement
    profile: Profile | None = None  # the server's on-CPU profile (a profiler given)
    profile_problem: str | None = None  # why a profiler given made none

    def point(self, *, status: str | None = None, error: str | None = None,
              measurement: Measurement | None = None) -> PointResult:
        """The run as a point's result (the sweep's verification may fail an ok run)."""
        return PointResult(
            spec=self.spec, status=status or ("ok" if self.error is None else "failed"),
            started_at=self.started_at, ended_at=self.ended_at, command=tuple(self.done.argv),
            exit_code=self.done.returncode, stdout=self.done.stdout, stderr=self.done.stderr,
            measurement=measurement if measurement is not None else self.measurement, samples=self.samples,
            error=error if error is not None else self.error,
            system=self.system, server=self.server, profile=self.profile)


def run_tool(spec: PointSpec, target: Target, executor: Executor, work_dir: Path, *,
             latency_sampling: float | None, sample_system: bool = True, sample_server: bool = True,
             server_clients: int | None = None, on_progress: Callable[[Sample], None] | None = None,
             on_start: Callable[[int], None] | None = None, before_start: Callable[[], bool] | None = None,
             cpus: tuple[int, ...] | None = None, client_progress: bool = False,
             profiler: Profiler | None = None) -> ToolRun | None:
    """Run the point's tool on `target` from `work_dir` (which exists and is the
    caller's to remove) and read it. `server_clients`: the connections of the whole
    point, where this run is one load generator's share of it (the server sampler
    counts them against the server's free slots). `before_start` is called once
    everything is ready, just before the clock starts; False: do not start (None).
    `client_progress`: the tool's own per-second report even where the server's commit
    counter could give the series at no cost to the tool (pgbench -P 1: its per-second
    client latency, for 5-6 % of a CPU-bound point's throughput). `profiler`: the
    server's on-CPU profile over the run (a server of this machine whose process dbarena
    knows, target.server_pid(); none otherwise), or why there is none (`profile_problem`)."""
    workload = WORKLOADS[spec.workload]
    tool = workload.tool
    client = target.client(tool)

    def on_second(second: float, values: Mapping[str, float | None]) -> None:
        rate = values.get(counter) if counter is not None else None
        if rate is not None and on_progress is not None:
            with contextlib.suppress(Exception):  # a display's failure is not the sampler's
                on_progress(Sample(second=second, tps=rate))

    # Its connection is made and its first reading taken before the point starts (a
    # few seconds at most: serverside/sampler.py), each wait of its driver bounded.
    server = ServerSampler(target.engine, functools.partial(target.connect, timeout_s=SERVER_TIMEOUT_S),
                           reader_for=target.server_reader).connect(
        clients=(server_clients or spec.clients) + tool.extra_connections) if sample_server else None
    argv = tool.point_argv(client, spec, workload.mode_args)
    # The tool's own per-second report where the user asks for it; else the server's
    # commit counter stands in for it (serverside/throughput.py) where the tool's report
    # costs throughput. Not the other way round when the counter cannot be read: what
    # the tool runs is what the point's key says (Tool.instruments), decided beforehand.
    quiet = None if client_progress else tool.without_progress(argv)
    counter = None
    if quiet is not None:
        argv = quiet
        counter = server.commits() if server is not None else None
        if server is not None and counter is not None:
            server.on_second = on_second  # (before start(): its thread reads it then)
    given = tool.point_input(client, spec, workload.mode_args)
    try:
        write_point_files(work_dir, given.files)
        if before_start is not None and not before_start():
            if server is not None:
                server.stop()
            return None
    except BaseException:
        if server is not None:
            server.stop()  # (its connection does not outlive the point that never began)
        raise
    if latency_sampling:
        argv = tool.with_latency_log(argv, work_dir, latency_sampling)

    def on_line(line: str) -> None:
        try:
            sample = tool.parse_progress_line(line)
        except ParseError:
            return  # the final parse reports it, with the line number
        if sample is not None and on_progress is not None:
            on_progress(sample)

    # perf attached to every process of the server before the tool connects (a backend
    # forked before would not be sampled): a second or less.
    recording, profile_problem = _start_profile(profiler, target, work_dir)
    try:
        origin = time.monotonic()
        started = now_utc()
        if server is not None:
            server.start(origin=origin)  # second 0 of both samplers: the system one starts now too
        sampler = Sampler(server_pid=target.server_pid()).start() if sample_system else None
    except BaseException:
        if recording is not None:
            recording.abandon()  # (perf does not outlive the point that never began)
        raise

    def started_tool(pid: int) -> None:
        if sampler is not None:
            sampler.loadgen_pid = pid
        if on_start is not None:
            on_start(pid)

    try:
        # pgbench reports progress on stderr, sysbench on stdout.
        done = executor.run(argv, env=target.client_env(), timeout=point_timeout_s(tool.estimate_s(spec)),
                            on_stdout_line=on_line, on_stderr_line=on_line, on_start=started_tool,
                            cpus=cpus, cwd=work_dir, stdin=given.stdin)
    finally:
        if recording is not None:
            recording.disable()  # (the samples end with the tool)
        end_s = time.monotonic() - origin
        try:
            system = tuple(sampler.stop()) if sampler is not None else ()
            series = server.stop(final=counter is not None) if server is not None else None
            ended = now_utc()
        finally:
            if recording is not None:
                recording.stop()  # (perf writes its file: a second or less, after the point's end)
    profile: Profile | None = None
    if recording is not None:
        read = recording.read()
        profile, profile_problem = (None, read) if isinstance(read, str) else (read, None)
    ran = ToolRun(spec=spec, started_at=started, ended_at=ended, done=done, system=system, server=series,
                  profile=profile, profile_problem=profile_problem)
    if done.returncode != 0:
        return replace(ran, error=_failure_reason(done, target.problem()),
                       samples=tuple(tool.read_samples(done.stdout, done.stderr)))
    commits = _Commits(server, counter, series, end_s) if quiet is not None else None
    return _read(ran, tool, work_dir, latency_sampling, commits)


@dataclass(frozen=True)
class _Commits:
    """The server's commit counter over a point run without the tool's per-second report:
    what its series is derived from (serverside/throughput.py), or why it cannot be."""

    server: ServerSampler | None
    counter: str | None
    series: ServerSeries | None
    end_s: float


def _read(ran: ToolRun, tool: Tool, work_dir: Path, latency_sampling: float | None,
          commits: _Commits | None) -> ToolRun:
    """A finished tool's output read into its measurement and series: the latency log's
    percentiles, the series from the commit counter where the tool printed none, and
    the tool's own CPU time. Output that does not read: the run failed, saying why."""
    done, spec = ran.done, ran.spec
    try:
        measurement, samples = tool.read(done.stdout, done.stderr, spec)
        if latency_sampling:
            measurement = with_latencies(measurement, tool.read_latency_log(work_dir, latency_sampling))
        if commits is not None:
            server = commits.server
            if commits.counter is not None and commits.series is not None and server is not None:
                derived = throughput.from_commits(
                    commits.series, commits.counter, first_s=server.first_reading_s(), end_s=commits.end_s,
                    duration_s=spec.duration_s, transactions=measurement.transactions, tool=tool.name)
            else:
                derived = throughput.Derived((), throughput.unread(tool.name, server.stopped if server else None))
            samples = derived.samples
            measurement = replace(measurement, details={**measurement.details, "per_second": derived.note})
        if done.cpu_s is not None:
            # What the tool cost the machine it ran on (its own CPU time, all its threads):
            # per transaction, the figure bench/overhead compares with the bare tool's.
            measurement = replace(measurement, details={**measurement.details, "tool_cpu_s": done.cpu_s})
    except ParseError as exc:
        # A tool that exits 0 after an error (mysqlslap whose query the server refused):
        # its own line says why there is nothing to read.
        said = failure.error_line(done.stdout, done.stderr)
        return replace(ran, error=f"{said} ({exc})" if said else str(exc),
                       samples=tuple(tool.read_samples(done.stdout, done.stderr)))
    return replace(ran, measurement=measurement, samples=tuple(samples))


def _start_profile(profiler: Profiler | None, target: Target, work_dir: Path) -> tuple[Recording | None, str | None]:
    """perf attached to the server's processes (its pid known: a server of this machine),
    or why it could not be; nothing without a profiler."""
    server_pid = target.server_pid() if profiler is not None else None
    if profiler is None or server_pid is None:
        return None, None
    found = profiler.start(server_pid, work_dir)
    return (None, found) if isinstance(found, str) else (found, None)


def _failure_reason(done: Completed, problem: str | None) -> str:
    if done.timed_out:
        reason = f"{done.argv[0]} did not finish within {done.elapsed_s:.0f} s and was killed"
    else:
        reason = failure.failure_reason(done.returncode, done.stdout, done.stderr)
    return f"{reason}; {problem}" if problem else reason


def write_point_files(work_dir: Path, files: Mapping[str, str | bytes]) -> None:
    """A tool's files for its point (PointInput.files), private to this user; a plain
    name each, so that none lands outside the work directory."""
    for name, content in files.items():
        if not name or name in (".", "..") or "/" in name or "\\" in name or "\0" in name:
            raise ValueError(f"a point's file must have a plain name, not {name!r}")
        data = content.encode("utf-8") if isinstance(content, str) else bytes(content)
        fd = os.open(work_dir / name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as out:
            out.write(data)


def with_latencies(measurement: Measurement, latencies: LatencyDistribution | None) -> Measurement:
    """The percentiles of a per-transaction log in a measurement, with the histogram
    they came from; the tool's printed minimum and maximum stay where it printed
    them (pgbench prints none: the log's exact ones fill in)."""
    if latencies is None:
        return measurement
    figures = latencies.percentiles_ms()
    return replace(
        measurement,
        latency_p50_ms=figures["p50"], latency_p90_ms=figures["p90"], latency_p95_ms=figures["p95"],
        latency_p99_ms=figures["p99"], latency_p999_ms=figures["p999"],
        latency_min_ms=measurement.latency_min_ms if measurement.latency_min_ms is not None
        else (latencies.min_us / 1000.0 if latencies.min_us is not None else None),
        latency_max_ms=measurement.latency_max_ms if measurement.latency_max_ms is not None else figures["max"],
        latency_histogram=latencies.encode(),
    )


def with_figures(result: PointResult) -> ServerSeries | None:
    """The point's server series with the figures comparisons read (stats/bound.figures:
    per transaction, so the throughput with them), as it is stored; None where the server
    was not sampled. No bound: what bound the point is a verdict derived from the stored
    series and system samples each time the derived figures are (stats/analysis.py), so
    that thresholds changed later judge it again."""
    series: ServerSeries | None = result.server
    if series is None:
        return None
    tps = result.measurement.tps if result.measurement is not None else None
    return replace(series, figures=point_bound.figures(series, tps))
