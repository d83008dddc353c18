"""sysbench outputs -> points: the engine from `--db-driver` (or --engine), the
workload from the script a command line names, figures from sysbench's report."""

from __future__ import annotations

import re

from dbarena.errors import ParseError
from dbarena.importers.commandline import command, option
from dbarena.importers.common import Command, ImportedPoint, ImportProblem, parse_problem, result_fields, whole_number
from dbarena.importers.runs import Run, split_runs
from dbarena.importers.figures import seconds
from dbarena.importers import durations, workloadnames
from dbarena.model import PointResult, PointSpec, Sample
from dbarena.workloads import failure, sysbench
from dbarena.workloads.sysbench import SysbenchReport

_ENGINES = {"pgsql": "postgres", "mysql": "mysql"}


# What sysbench's output says when no script is named: nothing about which it was.
UNNAMED_SYSBENCH = "sysbench"


def _workload(args: list[str] | None) -> str | None:
    """The workload of the script an echoed command line names; None when none is named.
    The read/write mix sysbench printed is no substitute: oltp_point_select, the
    random-points scripts and a TPC-C script print mixes like the standard ones'."""
    script = next((a for a in (args or []) if re.fullmatch(r"[\w./-]+\.lua|oltp_\w+|tpcc|select_random_\w+|"
                                                              r"bulk_insert", a)), None)
    if script is None and args:
        script = option(args, "--test")
    if script:
        stem = re.sub(r"\.lua$", "", script.rsplit("/", 1)[-1])
        if stem != "oltp":  # "oltp" (0.4/0.5 and legacy scripts) says nothing about the mix
            return workloadnames.of_script(stem)
    return None


# Options of an echoed sysbench command line that are not part of a point's options:
# where it connected (and any password a script takes), what params and the spec hold,
# and what only changes the report.
_NOT_OPTIONS = re.compile(r"^(?:(?:pgsql|mysql)-\w+|(?i:[\w-]*(?:password|passwd|_pwd))|db-driver|threads|"
                          r"num-threads|time|max-time|warmup-time|tables|table-size|table_size|oltp-tables-count|oltp-table-size|scale|report-interval|histogram|"
                          r"percentile|config-file|verbosity|test)$")


def _options(args: list[str] | None) -> tuple[tuple[str, str], ...]:
    """The --name=value options that shape what a sysbench run measured (--use_fk=0,
    --trx_level=RC, --range-size ...), as a measured point's options hold them."""
    found = {}
    for arg in args or ():
        m = re.fullmatch(r"--([\w-]+)=(.*)", arg)
        if m and not _NOT_OPTIONS.match(m[1]):
            found[m[1]] = m[2]
    return tuple(sorted(found.items()))


def ends_run(line: str) -> bool:
    """Whether a line ends a run's summary."""
    return line.strip().startswith("execution time (avg/stddev):")


def continues_run(line: str) -> bool:
    """Whether a line after a run's summary is still part of it (a blank one)."""
    return not line.strip()


def _runs(lines: list[str], first: int, args: list[str] | None) -> list[Run]:
    """The runs among the lines of what the splitter found one, from line `first` on: a
    banner also starts a run when no command line was echoed."""
    last = first + len(lines) - 1
    echoed = command(lines[0], "sysbench") is not None
    bounds = [first, *_banners(lines, first, echoed), last + 1]
    return [(a, b - 1, args if a == first else None) for a, b in zip(bounds, bounds[1:])]


def _banners(lines: list[str], first: int, echoed: bool) -> list[int]:
    """The lines after `first` with a banner that has output before it (1-based): the
    command line echoed on line `first` (when `echoed`) is its run's, not output."""
    output = 1 if echoed else 0  # (index of the run's first line of output)
    return [first + k for k in range(1, len(lines)) if re.match(r"^sysbench \d", lines[k])
            and any(l.strip() for l in lines[output:k])]


def read_sysbench(name: str, text: str, label: str, engine: str | None, workload: str | None) -> list[ImportedPoint]:
    lines = text.splitlines()
    points = []
    for first, last, args in split_runs(lines, "sysbench", ends_run, continues_run):
        points.extend(read_run(name, lines[first - 1:last], first, args, label, engine, workload))
    return points


def read_run(name: str, lines: list[str], first: int, args: list[str] | None, label: str, engine: str | None,
             workload: str | None) -> list[ImportedPoint]:
    """The points of what the splitter found one run, whose lines are `lines` from line
    `first` on (none where they hold no run)."""
    points = []
    for a, b, run_args in _runs(lines, first, args):
        point = _point(name, lines[a - first:b - first + 1], a, run_args, label, engine, workload)
        if point is not None:
            points.append(point)
    return points


def _point(name: str, lines: list[str], first: int, args: list[str] | None, label: str,
           engine: str | None, workload: str | None) -> ImportedPoint | None:
    """The point of the run on `lines` (from line `first` on); None where they hold no run."""
    last = first + len(lines) - 1
    chunk = "\n".join(lines) + "\n"
    if args is not None and args and args[-1] in ("prepare", "cleanup"):
        return None
    fatal = re.findall(r"^FATAL: (.+)$", chunk, re.M)
    if not _is_run(chunk, fatal):
        return None
    report, samples = _parse(name, chunk, first)
    cmd = Command(args, name, first)
    run_engine = _engine(cmd, engine)
    threads = _threads(cmd, report, chunk)
    if threads is None:
        if report is not None:
            # A statistics block without the run it closes (no command line, banner or
            # `Number of threads:`): nothing says what ran. The importer reports it.
            return None
        threads = 1
    measured = seconds(report.total_time_s, name, first, "total time") if report and report.total_time_s else None
    # The last interval report of a finished run with all its threads running was
    # written while it still ran: the time asked is at least its second (`[ 600s ]`).
    # Reports with fewer threads (`thds: 61` of 64) come while the threads finish their
    # last transactions after the time asked (a 900 s run's reach `[ 902s ]`). A run
    # cut short says nothing of it.
    running = [s for s in samples if s.threads is None or s.threads >= threads]
    last_report = running[-1].second if report is not None and running else None
    asked = durations.asked(None, cmd.number("--time", "--max-time") or None, measured, last_report)
    duration = asked.asked_s if asked is not None else 0
    params = _params(cmd)
    named = workload or _workload(args)
    spec = PointSpec(engine=run_engine, workload=named or UNNAMED_SYSBENCH,
                     threads=threads, clients=threads, duration_s=duration, params=params,
                     options=_options(args), warmup_s=_warmup(cmd, chunk))
    note = None if named else (f"no sysbench script named (no command line echoed before the run): stored as "
                               f"workload {UNNAMED_SYSBENCH!r}; name it with --workload (and --replace)")
    return ImportedPoint(result=_result(spec, report, samples, fatal, args, chunk), label=label, first_line=first,
                         last_line=last, tool="sysbench", note=note, duration=asked)


def _is_run(chunk: str, fatal: list[str]) -> bool:
    if re.search(r"^\s+transactions:", chunk, re.M) or re.search(r"^\[ *\d+s ?\]", chunk, re.M):
        return True
    # A run that failed before its first report (sysbench printed its run header,
    # then FATAL) is a failed point with sysbench's reason; anything else without
    # figures is prepare/cleanup output or notes.
    return bool(fatal and re.search(r"^Running the test with following options:", chunk, re.M))


def _parse(name: str, chunk: str, first: int) -> tuple[SysbenchReport | None, tuple[Sample, ...]]:
    """The run's report (None when it printed none) and its interval samples."""
    try:
        report = sysbench.parse(chunk) if re.search(r"^\s+transactions:", chunk, re.M) else None
        samples = report.samples if report else sysbench.read_samples(chunk, "")
    except ParseError as exc:
        raise parse_problem(name, first, exc) from None
    return report, samples


def _engine(cmd: Command, engine: str | None) -> str:
    run_engine = _ENGINES.get(cmd.value("--db-driver") or "", engine)
    if run_engine is None:
        raise ImportProblem(cmd.name, cmd.line, "cannot tell whether this sysbench run was on PostgreSQL or MySQL "
                                                "(no --db-driver on a command line): pass --engine")
    return run_engine


def _threads(cmd: Command, report: SysbenchReport | None, chunk: str) -> int | None:
    printed_threads = re.search(r"^Number of threads: (\d+)$", chunk, re.M)
    return cmd.number("--threads", "--num-threads") or \
        (report.threads if report else None) or (int(printed_threads[1]) if printed_threads else None) or \
        _fairness_threads(report, chunk)


def _fairness_threads(report: SysbenchReport | None, chunk: str) -> int | None:
    """The thread count a summary pasted without its run's start still says: its events
    over the events per thread of `Threads fairness` (14807 / 14807.0000 -> 1), when
    that is a whole number."""
    m = re.search(r"^\s+events \(avg/stddev\):\s+([\d.]+)/", chunk, re.M)
    if report is None or not report.events or m is None or not float(m[1]):
        return None
    ratio = report.events / float(m[1])
    return round(ratio) if round(ratio) >= 1 and abs(ratio - round(ratio)) < 0.01 else None


# sysbench 1.1's run header, when --warmup-time was given (src/sysbench.c,
# print_run_mode: "Warmup time: %ds"). Its interval reports and summary leave the
# warm-up out (the statistics are reset after it).
_WARMUP = re.compile(r"^Warmup time: (\d+)s$", re.M)


def _warmup(cmd: Command, chunk: str) -> int:
    """The warm-up the run was asked for: the echoed --warmup-time, else the header's."""
    given = cmd.number("--warmup-time")
    if given is not None:
        return given
    printed = _WARMUP.search(chunk)
    return whole_number(printed[1], cmd.name, cmd.line) or 0 if printed else 0


def _params(cmd: Command) -> tuple[tuple[str, int], ...]:
    return tuple(sorted((k, v) for k, v in (
        ("tables", cmd.number("--tables", "--oltp-tables-count")),
        ("table_size", cmd.number("--table-size", "--table_size", "--oltp-table-size")),
        # sysbench-tpcc: warehouses per table.
        ("scale", cmd.number("--scale")),
    ) if v is not None))


def _result(spec: PointSpec, report: SysbenchReport | None, samples: tuple[Sample, ...], fatal: list[str],
            args: list[str] | None, chunk: str) -> PointResult:
    if report is not None:
        return PointResult(spec=spec, status="ok", measurement=report.to_measurement(), samples=samples,
                           **result_fields(args, "sysbench", chunk))
    if fatal and not samples:
        # Its own line saying why, as a point measured here says it (workloads/failure.py).
        return PointResult(spec=spec, status="failed", error="sysbench failed before the run started: "
                           + (failure.error_line(chunk, "") or fatal[0]),
                           samples=samples, **result_fields(args, "sysbench", chunk))
    return PointResult(spec=spec, status="failed", error="no summary: the output ends before sysbench "
                       "finished", samples=samples, **result_fields(args, "sysbench", chunk))
