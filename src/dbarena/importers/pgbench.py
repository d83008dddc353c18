"""pgbench outputs -> points: each run's workload, threads and clients from the command
line echoed before it (or the perf stat report after it), otherwise from its summary."""

from __future__ import annotations

import re

from dbarena.errors import ParseError
from dbarena.importers.commandline import option
from dbarena.importers.common import Command, ImportedPoint, parse_problem, result_fields
from dbarena.importers.runs import split_runs
from dbarena.importers import durations
from dbarena.importers.durations import Duration
from dbarena.importers.figures import seconds
from dbarena.model import PointResult, PointSpec, Sample
from dbarena.workloads import failure, pgbench
from dbarena.workloads.pgbench import PgbenchReport


def _workload(args: list[str] | None, transaction_type: str | None) -> str:
    if args is None and transaction_type is None:
        return "pgbench"  # progress lines only: nothing says which script ran
    if args is not None:
        named = _workload_of_args(args)
        if named is not None:
            return named
        if transaction_type is None:
            return "pgbench-tpcb"
    return _workload_of_type(transaction_type or "")


def _workload_of_args(args: list[str]) -> str | None:
    builtin = option(args, "-b", "--builtin")
    if "-S" in args or "--select-only" in args or (builtin or "").startswith("select"):
        return "pgbench-select-only"
    if "-N" in args or "--skip-some-updates" in args or (builtin or "").startswith("simple"):
        return "pgbench-simple-update"
    if option(args, "-f", "--file") is not None:
        return "pgbench-custom"
    return None


def _workload_of_type(transaction_type: str) -> str:
    t = transaction_type.lower()
    if "tpc-b" in t:
        return "pgbench-tpcb"
    if "select only" in t:
        return "pgbench-select-only"
    if "simple update" in t or "update only" in t:
        return "pgbench-simple-update"
    return "pgbench-custom"


def ends_run(line: str) -> bool:
    """Whether a line ends a run's summary."""
    return line.startswith("tps = ")


def continues_run(line: str) -> bool:
    """Whether a line after a run's `tps = ` line is still part of its summary."""
    s = line.strip()
    return (not s or s.startswith(("tps =", "statement latencies", "pgbench:", "DETAIL:", "HINT:"))
            or re.match(r"^\s+-?[\d.]+\s", line) is not None)


def read_pgbench(name: str, text: str, label: str, workload: str | None) -> list[ImportedPoint]:
    lines = text.splitlines()
    points = []
    for first, last, args in split_runs(lines, "pgbench", ends_run, continues_run):
        points.extend(read_run(name, lines[first - 1:last], first, args, label, workload))
    return points


def read_run(name: str, lines: list[str], first: int, args: list[str] | None, label: str,
             workload: str | None) -> list[ImportedPoint]:
    """The point of the run whose lines are `lines`, from line `first` on (none where
    they hold no run)."""
    last = first + len(lines) - 1
    chunk = "\n".join(lines) + "\n"
    if args is not None and ("-i" in args or "--initialize" in args):
        return []  # pgbench -i: creates the tables, measures nothing
    samples, report = _parse(name, chunk, first)
    if report is None and not samples and "transaction type:" not in chunk and "aborted" not in chunk:
        # No run here (pgbench -i output, notes ...), or a summary's last lines without
        # the header that says what ran: the importer reports those (importers/pieces.py).
        return []
    cmd = Command(args, name, first)
    duration = _duration(cmd, report, samples)
    spec = _spec(cmd, report, duration, chunk, workload)
    return [ImportedPoint(result=_result(spec, report, samples, args, chunk), label=label, first_line=first,
                          last_line=last, tool="pgbench", server_version=report.server_version if report else None,
                          duration=duration)]


def _parse(name: str, chunk: str, first: int) -> tuple[tuple[Sample, ...], PgbenchReport | None]:
    """The run's progress samples and its summary (None when it printed none)."""
    has_summary = "transaction type:" in chunk and (chunk.startswith("tps = ") or "\ntps = " in chunk)
    try:
        report = pgbench.parse(chunk) if has_summary else None
        # A summary's report holds the progress lines already: not read twice.
        samples = report.samples if report is not None else pgbench.parse_progress(chunk)
    except ParseError as exc:
        raise parse_problem(name, first, exc) from None
    return samples, report


def _spec(cmd: Command, report: PgbenchReport | None, duration: Duration | None, chunk: str,
          workload: str | None) -> PointSpec:
    threads = cmd.number("-j", "--jobs") or (report.threads if report else None) or 1
    clients = cmd.number("-c", "--client") or (report.clients if report else None) or threads
    params, options = _configuration(cmd, report)
    return PointSpec(engine="postgres", workload=workload or _workload(cmd.args, _transaction_type(report, chunk)),
                     threads=threads, clients=clients, duration_s=duration.asked_s if duration else 0, params=params,
                     options=options)


def _duration(cmd: Command, report: PgbenchReport | None, samples: tuple[Sample, ...]) -> Duration | None:
    """The duration asked (-T, or the `duration:` pgbench printed); else inferred from
    transactions / tps. A run of -t transactions per client was asked for no duration:
    its measured one, rounded, as before. A run cut short: how long it ran."""
    command_line = cmd.number("-T", "--time") or None
    printed = report.duration_s if report else None
    measured = None
    if command_line is None and printed is None and report is not None and report.tps:
        measured = seconds(report.transactions / report.tps, cmd.name, cmd.line, "transactions / tps")
        if report.transactions_per_client:
            return Duration(round(measured), "measured", measured)
    found = durations.asked(printed, command_line, measured)
    if found is None and samples:
        last = seconds(samples[-1].second, cmd.name, cmd.line, "the last progress line's time")
        found = Duration(int(last), "last progress line")
    return found


def _transaction_type(report: PgbenchReport | None, chunk: str) -> str | None:
    if report:
        return report.transaction_type
    return next((l.split(":", 1)[1].strip() for l in chunk.splitlines() if l.startswith("transaction type:")), None)


def _configuration(cmd: Command, report: PgbenchReport | None) -> tuple[tuple[tuple[str, int], ...], tuple[tuple[str, str], ...]]:
    """The run's params (scale) and options (query mode)."""
    scale = (report.scale if report and report.scale else None) or cmd.number("-s", "--scale")
    # The query mode is part of the configuration, as `-M` is of a measured point's
    # options (which name it only when it is not pgbench's default, simple).
    mode = (report.query_mode if report else None) or cmd.value("-M", "--protocol")
    return ((("scale", scale),) if scale else (),
            (("protocol", mode),) if mode and mode != "simple" else ())


def _result(spec: PointSpec, report: PgbenchReport | None, samples: tuple[Sample, ...], args: list[str] | None,
            chunk: str) -> PointResult:
    if report is not None and "Run was aborted" not in chunk:
        return PointResult(spec=spec, status="ok", measurement=report.to_measurement(), samples=report.samples,
                           **result_fields(args, "pgbench", chunk))
    # Its own line saying why, as a point measured here says it (workloads/failure.py).
    reason = failure.error_line("", chunk) or "no summary: the output ends before pgbench finished"
    return PointResult(spec=spec, status="failed", error=reason, samples=samples,
                       **result_fields(args, "pgbench", chunk))
