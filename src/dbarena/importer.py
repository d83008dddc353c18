"""Results measured elsewhere -> points, ready to store. Pure: text in, points out.

Raw tool outputs (pgbench, sysbench, mysqlslap), one run or many appended in one file
(study A's habit: each run's output preceded by the command line that produced it),
and CSV files of summary rows. Where a command line precedes a run, the workload,
threads and clients come from it; otherwise from the output. The existing parsers
read the runs; any line that cannot be read raises ImportProblem `FILE:LINE: what`.
"""

from __future__ import annotations

import csv
import io
import re
import shlex
from dataclasses import dataclass, replace
from datetime import datetime, timezone

from dbarena.errors import ParseError, UsageError
from dbarena.model import Measurement, PointResult, PointSpec
from dbarena.workloads import mysqlslap, pgbench, sysbench

TOOLS = ("pgbench", "sysbench", "mysqlslap", "csv")
CSV_COLUMNS = ("label", "engine", "workload", "threads", "clients", "tps", "qps", "transactions", "queries",
               "time_s", "latency_avg_ms", "latency_p95_ms", "latency_p99_ms", "price_per_hour")
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


class ImportProblem(UsageError):
    """`FILE:LINE: what is wrong`; nothing from that file is stored."""

    def __init__(self, name: str, line: int | None, message: str):
        self.name, self.line = name, line
        super().__init__(f"{name}:{line}: {message}" if line is not None else f"{name}: {message}")


@dataclass(frozen=True)
class ImportedPoint:
    result: PointResult
    label: str
    first_line: int
    last_line: int
    tool: str
    price_per_hour: float | None = None
    server_version: str | None = None
    note: str | None = None  # what the import could not tell, for the user


# ------------------------------------------------------------------ recognising


def _is_csv(text: str) -> bool:
    first = next((l for l in text.splitlines() if l.strip()), "")
    fields = [f.strip().lower() for f in first.split(",")]
    return len(fields) > 1 and "threads" in fields


def detect_tool(text: str) -> str | None:
    if _is_csv(text):
        return "csv"
    found = []
    # pgbench: a summary, progress lines, the banner, or `pgbench -i` output.
    if re.search(r"^(transaction type:|progress: [\d.]+ s, [\d.]+ tps|pgbench \(|creating tables\.\.\.$|"
                 r"generating data )", text, re.M):
        found.append("pgbench")
    if re.search(r"^(sysbench \d|SQL statistics:|OLTP test statistics:|\[ *\d+s ?\] (thds|threads):)", text, re.M):
        found.append("sysbench")
    if re.search(r"^\s*Average number of seconds to run all queries:", text, re.M):
        found.append("mysqlslap")
    return found[0] if len(found) == 1 else None


_PROMPT = r"^(?:.*?[$#>]\s+|\+\s+)?(?:sudo\s+(?:-u\s*\S+\s+)?)?(?:time\s+)?(?:[\w./~-]*/)?"


def _command(line: str, tool: str) -> list[str] | None:
    """The arguments of an echoed `tool ...` command line, or None."""
    m = re.match(_PROMPT + re.escape(tool) + r"(?:\s+(?P<args>.*))?$", line.strip())
    if m is None or line.lstrip().startswith((f"{tool}:", f"{tool} (")):
        return None
    args = m["args"] or ""
    if tool == "sysbench" and re.match(r"\d", args):  # the banner "sysbench 1.0.20 (...)"
        return None
    try:
        return shlex.split(args, comments=False)
    except ValueError:
        return args.split()


def _option(args: list[str], *names: str) -> str | None:
    """Value of -x V, -xV, --name=V or --name V (last one wins)."""
    value = None
    for i, arg in enumerate(args):
        for name in names:
            if arg == name and i + 1 < len(args):
                value = args[i + 1]
            elif name.startswith("--") and arg.startswith(name + "="):
                value = arg.split("=", 1)[1]
            elif not name.startswith("--") and arg.startswith(name) and len(arg) > len(name):
                value = arg[len(name):]
    return value


def _int(value: str | None, name: str, line: int) -> int | None:
    if value is None:
        return None
    if not value.isdigit():
        raise ImportProblem(name, line, f"{value!r} is not a whole number")
    return int(value)


# ------------------------------------------------------------------ pgbench


def _pgbench_workload(args: list[str] | None, transaction_type: str | None) -> str:
    if args is None and transaction_type is None:
        return "pgbench"  # progress lines only: nothing says which script ran
    if args is not None:
        builtin = _option(args, "-b", "--builtin")
        if "-S" in args or "--select-only" in args or (builtin or "").startswith("select"):
            return "pgbench-select-only"
        if "-N" in args or "--skip-some-updates" in args or (builtin or "").startswith("simple"):
            return "pgbench-simple-update"
        if _option(args, "-f", "--file") is not None:
            return "pgbench-custom"
        if transaction_type is None:
            return "pgbench-tpcb"
    t = (transaction_type or "").lower()
    if "tpc-b" in t:
        return "pgbench-tpcb"
    if "select only" in t:
        return "pgbench-select-only"
    if "simple update" in t or "update only" in t:
        return "pgbench-simple-update"
    return "pgbench-custom"


_PERF = re.compile(r"^\s*Performance counter stats for '(?P<cmd>.+)':\s*$")
_PERF_ELAPSED = re.compile(r"^\s*[\d.,]+ seconds time elapsed")
_PERF_AFTER = re.compile(r"^\s*[\d.,]+ seconds (?:user|sys)\s*$")


def _trailer(line: str, tool: str) -> list[str] | None:
    """The command of a `perf stat` report that follows a run (Percona's THP study ran
    every benchmark under perf stat, which names the command only after its output):
    `Performance counter stats for './pgbench db -T 600 -c 64':`. A sysbench Lua script
    run directly (`./tpcc.lua ... run`, sysbench in its #! line) counts as sysbench."""
    m = _PERF.match(line)
    if m is None:
        return None
    cmd = m["cmd"]
    args = _command(cmd, tool)
    if args is not None:
        return args
    if tool == "sysbench" and re.match(r"^(?:[\w./~-]*/)?[\w-]+\.lua(?:\s|$)", cmd):
        try:
            return shlex.split(cmd)
        except ValueError:
            return cmd.split()
    return None


def _chunks(lines: list[str], tool: str, is_end, is_continuation) -> list[tuple[int, int, list[str] | None]]:
    """Split a file into runs: at echoed command lines, after a finished run's summary,
    and after a `perf stat` report naming the run's command (which it then gives the
    run). Returns (first line, last line, command args) with 1-based lines."""
    chunks: list[tuple[int, int, list[str] | None]] = []
    start, args, finished, content = 1, None, False, False
    trailer = 0  # 1: inside a perf stat report, 2: after its "seconds time elapsed"
    for i, line in enumerate(lines, start=1):
        if trailer:
            if trailer == 1:
                if _PERF_ELAPSED.match(line):
                    trailer = 2
                continue
            if not line.strip() or _PERF_AFTER.match(line):
                continue
            chunks.append((start, i - 1, args))
            start, args, finished, content, trailer = i, None, False, False, 0
        perf = _trailer(line, tool)
        if perf is not None and content:
            args = args if args is not None else perf
            trailer = 1
            continue
        cmd = _command(line, tool)
        if cmd is not None or (finished and line.strip() and not is_continuation(line)):
            if content or args is not None:
                chunks.append((start, i - 1, args))
            start, args, finished, content = i, cmd, False, cmd is None and bool(line.strip())
            if cmd is not None:
                continue
        if line.strip():
            content = True
        if is_end(line):
            finished = True
    if content or args is not None:
        chunks.append((start, len(lines), args))
    return chunks


def _pg_continuation(line: str) -> bool:
    s = line.strip()
    return (not s or s.startswith(("tps =", "statement latencies", "pgbench:", "DETAIL:", "HINT:"))
            or re.match(r"^\s+-?[\d.]+\s", line) is not None)


def read_pgbench(name: str, text: str, label: str, workload: str | None) -> list[ImportedPoint]:
    lines = text.splitlines()
    points = []
    for first, last, args in _chunks(lines, "pgbench", lambda l: l.startswith("tps = "), _pg_continuation):
        chunk = "\n".join(lines[first - 1:last]) + "\n"
        if args is not None and ("-i" in args or "--initialize" in args):
            continue  # pgbench -i: creates the tables, measures nothing
        has_summary = "transaction type:" in chunk and re.search(r"^tps = ", chunk, re.M)
        try:
            samples = pgbench.parse_progress(chunk)
            report = pgbench.parse(chunk) if has_summary else None
        except ParseError as exc:
            raise ImportProblem(name, first + (exc.lineno or 1) - 1, str(exc).split(" at line ")[0]) from None
        if report is None and not samples and "transaction type:" not in chunk and "aborted" not in chunk:
            continue  # no run here (pgbench -i output, notes ...)
        threads = _int(_option(args or [], "-j", "--jobs"), name, first) or (report.threads if report else None) or 1
        clients = _int(_option(args or [], "-c", "--client"), name, first) or (report.clients if report else None) \
            or threads
        duration = _int(_option(args or [], "-T", "--time"), name, first) or (report.duration_s if report else None)
        if duration is None and report is not None and report.tps:
            duration = round(report.transactions / report.tps)
        ttype = report.transaction_type if report else next(
            (l.split(":", 1)[1].strip() for l in chunk.splitlines() if l.startswith("transaction type:")), None)
        scale = (report.scale if report and report.scale else None) or _int(_option(args or [], "-s", "--scale"),
                                                                           name, first)
        # The query mode is part of the configuration, as `-M` is of a measured point's
        # options (which name it only when it is not pgbench's default, simple).
        mode = (report.query_mode if report else None) or _option(args or [], "-M", "--protocol")
        spec = PointSpec(engine="postgres", workload=workload or _pgbench_workload(args, ttype), threads=threads,
                         clients=clients, duration_s=duration or (int(samples[-1].second) if samples else 0),
                         params=(("scale", scale),) if scale else (),
                         options=(("protocol", mode),) if mode and mode != "simple" else ())
        if report is not None and "Run was aborted" not in chunk:
            result = PointResult(spec=spec, status="ok", measurement=report.to_measurement(), samples=report.samples,
                                 **_common(args, "pgbench", chunk))
        else:
            errors = [l.strip() for l in chunk.splitlines() if re.match(r"^pgbench: (fatal|error)", l.strip())]
            reason = " | ".join(errors[-2:]) or "no summary: the output ends before pgbench finished"
            result = PointResult(spec=spec, status="failed", error=reason, samples=samples,
                                 **_common(args, "pgbench", chunk))
        points.append(ImportedPoint(result=result, label=label, first_line=first, last_line=last, tool="pgbench",
                                    server_version=report.server_version if report else None))
    return points


# A password written into an imported file (an echoed command line, a perf stat
# trailer) is not stored: the store, its reports and exports never hold one.
_SECRETS = (
    (re.compile(r"(--(?:[\w-]+-)?password=)(?!\*\*\*)[^\s'\"]+"), r"\1***"),
    (re.compile(r"\b((?:PGPASSWORD|MYSQL_PWD)=)(?!\*\*\*)[^\s'\"]+"), r"\1***"),
    (re.compile(r"(://[^/\s:@]+:)(?!\*\*\*)[^@\s/]+@"), r"\1***@"),
)


def masked(text: str) -> str:
    """The text with any password it spells out replaced by ***."""
    for pattern, replacement in _SECRETS:
        text = pattern.sub(replacement, text)
    return text


def _masked_args(tool: str, args: list[str] | None) -> tuple[str, ...]:
    out = [masked(a) for a in args or ()]
    if tool == "mysqlslap":  # -pSECRET (a bare -p prompts, and -p SECRET is not a password)
        out = ["-p***" if a.startswith("-p") and len(a) > 2 and a != "-p***" else a for a in out]
    return tuple(out)


def _common(args: list[str] | None, tool: str, chunk: str) -> dict:
    return dict(started_at=_EPOCH, ended_at=_EPOCH, command=(tool, *_masked_args(tool, args)), exit_code=None,
                stdout=masked(chunk), stderr="")


# ------------------------------------------------------------------ sysbench


_SB_ENGINES = {"pgsql": "postgres", "mysql": "mysql"}


# What sysbench's output says when no script is named: nothing about which it was.
UNNAMED_SYSBENCH = "sysbench"


def _sysbench_workload(args: list[str] | None) -> str | None:
    """The workload of the script an echoed command line names; None when none is named.
    The read/write mix sysbench printed is no substitute: oltp_point_select, the
    random-points scripts and a TPC-C script print mixes like the standard ones'."""
    script = next((a for a in (args or []) if re.fullmatch(r"[\w./-]+\.lua|oltp_\w+|tpcc|select_random_\w+|"
                                                              r"bulk_insert", a)), None)
    if script is None and args:
        script = _option(args, "--test")
    if script:
        stem = re.sub(r"\.lua$", "", script.rsplit("/", 1)[-1])
        named = {"oltp_read_only": "sysbench-read-only", "oltp_write_only": "sysbench-write-only",
                 "oltp_read_write": "sysbench-read-write"}
        if stem in named:
            return named[stem]
        if stem != "oltp":  # "oltp" (0.4/0.5 and legacy scripts) says nothing about the mix
            return "sysbench-" + stem.replace("_", "-")
    return None


# Options of an echoed sysbench command line that are not part of a point's options:
# where it connected, what params and the spec hold, and what only changes the report.
_SB_NOT_OPTIONS = re.compile(r"^(?:(?:pgsql|mysql)-\w+|db-driver|threads|num-threads|time|max-time|tables|table-size|"
                             r"table_size|oltp-tables-count|oltp-table-size|scale|report-interval|histogram|"
                             r"percentile|config-file|verbosity|test)$")


def _sysbench_options(args: list[str] | None) -> tuple[tuple[str, str], ...]:
    """The --name=value options that shape what a sysbench run measured (--use_fk=0,
    --trx_level=RC, --range-size ...), as a measured point's options hold them."""
    found = {}
    for arg in args or ():
        m = re.fullmatch(r"--([\w-]+)=(.*)", arg)
        if m and not _SB_NOT_OPTIONS.match(m[1]):
            found[m[1]] = m[2]
    return tuple(sorted(found.items()))


def read_sysbench(name: str, text: str, label: str, engine: str | None, workload: str | None) -> list[ImportedPoint]:
    lines = text.splitlines()

    def is_end(line: str) -> bool:
        return line.strip().startswith("execution time (avg/stddev):")

    points = []
    chunks = []
    # A banner also starts a run when no command line was echoed.
    for first, last, args in _chunks(lines, "sysbench", is_end, lambda l: not l.strip()):
        starts = [i for i in range(first, last + 1) if re.match(r"^sysbench \d", lines[i - 1]) and i > first
                  and any(l.strip() for l in lines[first - 1:i - 1])]
        bounds = [first, *starts, last + 1]
        for a, b in zip(bounds, bounds[1:]):
            chunks.append((a, b - 1, args if a == first else None))
    for first, last, args in chunks:
        chunk = "\n".join(lines[first - 1:last]) + "\n"
        if args is not None and args and args[-1] in ("prepare", "cleanup"):
            continue
        fatal = re.findall(r"^FATAL: (.+)$", chunk, re.M)
        if not re.search(r"^\s+transactions:", chunk, re.M) and not re.search(r"^\[ *\d+s ?\]", chunk, re.M):
            # A run that failed before its first report (sysbench printed its run header,
            # then FATAL) is a failed point with sysbench's reason; anything else without
            # figures is prepare/cleanup output or notes.
            if not (fatal and re.search(r"^Running the test with following options:", chunk, re.M)):
                continue
        try:
            report = sysbench.parse(chunk) if re.search(r"^\s+transactions:", chunk, re.M) else None
            samples = report.samples if report else sysbench.read_samples(chunk, "")
        except ParseError as exc:
            raise ImportProblem(name, first + (exc.lineno or 1) - 1, str(exc).split(" at line ")[0]) from None
        driver = _option(args or [], "--db-driver")
        run_engine = _SB_ENGINES.get(driver or "", engine)
        if run_engine is None:
            raise ImportProblem(name, first, "cannot tell whether this sysbench run was on PostgreSQL or MySQL "
                                             "(no --db-driver on a command line): pass --engine")
        printed_threads = re.search(r"^Number of threads: (\d+)$", chunk, re.M)
        threads = _int(_option(args or [], "--threads", "--num-threads"), name, first) or \
            (report.threads if report else None) or (int(printed_threads[1]) if printed_threads else 1)
        duration = _int(_option(args or [], "--time", "--max-time"), name, first) or \
            (round(report.total_time_s) if report and report.total_time_s else 0)
        params = tuple(sorted((k, v) for k, v in (
            ("tables", _int(_option(args or [], "--tables", "--oltp-tables-count"), name, first)),
            ("table_size", _int(_option(args or [], "--table-size", "--table_size", "--oltp-table-size"), name, first)),
            # sysbench-tpcc: warehouses per table.
            ("scale", _int(_option(args or [], "--scale"), name, first)),
        ) if v is not None))
        named = workload or _sysbench_workload(args)
        spec = PointSpec(engine=run_engine, workload=named or UNNAMED_SYSBENCH,
                         threads=threads, clients=threads, duration_s=duration, params=params,
                         options=_sysbench_options(args))
        if report is not None:
            result = PointResult(spec=spec, status="ok", measurement=report.to_measurement(), samples=samples,
                                 **_common(args, "sysbench", chunk))
        elif fatal and not samples:
            reasons = list(dict.fromkeys(fatal))  # sysbench repeats its FATAL lines per thread
            result = PointResult(spec=spec, status="failed", error="sysbench failed before the run started: "
                                 + " | ".join(reasons[:1] + reasons[-1:] if len(reasons) > 1 else reasons),
                                 samples=samples, **_common(args, "sysbench", chunk))
        else:
            result = PointResult(spec=spec, status="failed", error="no summary: the output ends before sysbench "
                                 "finished", samples=samples, **_common(args, "sysbench", chunk))
        note = None if named else (f"no sysbench script named (no command line echoed before the run): stored as "
                                   f"workload {UNNAMED_SYSBENCH!r}; name it with --workload (and --replace)")
        points.append(ImportedPoint(result=result, label=label, first_line=first, last_line=last, tool="sysbench",
                                    note=note))
    return points


# ------------------------------------------------------------------ mysqlslap


def read_mysqlslap(name: str, text: str, label: str, workload: str | None) -> list[ImportedPoint]:
    lines = text.splitlines()
    args = next((a for a in (_command(l, "mysqlslap") or _command(l, "mariadb-slap") for l in lines) if a is not None),
                None)
    starts = [i for i, l in enumerate(lines, start=1) if l.strip() == "Benchmark"]
    if not starts:
        raise ImportProblem(name, None, "no mysqlslap 'Benchmark' block")
    points = []
    for first, nxt in zip(starts, [*starts[1:], len(lines) + 1]):
        block = "\n".join(lines[first - 1:nxt - 1]) + "\n"
        try:
            (slap,) = mysqlslap.parse(block)
        except ParseError as exc:
            raise ImportProblem(name, first + (exc.lineno or 1) - 1, str(exc).split(" at line ")[0]) from None
        iterations = _int(_option(args or [], "--iterations", "-i"), name, first)
        params = (("iterations", iterations),) if iterations else ()
        spec = PointSpec(engine="mysql", workload=workload or "mysqlslap", threads=slap.clients, clients=slap.clients,
                         duration_s=round(slap.avg_s), params=(*params, ("queries", slap.queries)))
        measurement, _ = mysqlslap.read(block, "", None)
        result = PointResult(spec=spec, status="ok", measurement=measurement, **_common(args, "mysqlslap", block))
        points.append(ImportedPoint(result=result, label=label, first_line=first, last_line=nxt - 1, tool="mysqlslap"))
    return points


# ------------------------------------------------------------------ CSV


def _number(value: str, column: str, name: str, line: int) -> float | None:
    value = value.strip()
    if not value:
        return None
    try:
        return float(value)
    except ValueError:
        raise ImportProblem(name, line, f"column {column!r}: {value!r} is not a number") from None


def read_csv(name: str, text: str, label: str, engine: str | None, workload: str | None) -> list[ImportedPoint]:
    reader = csv.DictReader(io.StringIO(text))
    header = [h.strip().lower() for h in (reader.fieldnames or [])]
    unknown = [h for h in header if h not in CSV_COLUMNS]
    if unknown:
        raise ImportProblem(name, 1, f"unknown column(s) {', '.join(map(repr, unknown))} "
                                     f"(known: {', '.join(CSV_COLUMNS)})")
    reader.fieldnames = header
    points = []
    for row in reader:
        line = reader.line_num
        row = {k: (v or "") for k, v in row.items() if k is not None}
        values = {c: _number(row.get(c, ""), c, name, line) for c in CSV_COLUMNS
                  if c not in ("label", "engine", "workload")}
        threads = values["threads"]
        if threads is None or threads < 1 or threads != int(threads):
            raise ImportProblem(name, line, "column 'threads': a positive whole number is required")
        tps, qps, time_s = values["tps"], values["qps"], values["time_s"]
        if tps is None and values["transactions"] is not None and time_s:
            tps = values["transactions"] / time_s
        if qps is None and values["queries"] is not None and time_s:
            qps = values["queries"] / time_s
        if tps is None and qps is None:
            raise ImportProblem(name, line, "no throughput: give tps (or transactions and time_s), or qps "
                                            "(or queries and time_s)")
        run_engine = (row.get("engine") or "").strip() or engine
        if run_engine not in ("postgres", "mysql"):
            raise ImportProblem(name, line, f"engine {run_engine!r}: use postgres or mysql (column or --engine)")
        name_of_workload = (row.get("workload") or "").strip() or workload
        if not name_of_workload:
            raise ImportProblem(name, line, "no workload (column 'workload' or --workload)")
        spec = PointSpec(engine=run_engine, workload=name_of_workload, threads=int(threads),
                         clients=int(values["clients"] or threads), duration_s=round(time_s or 0))
        measurement = Measurement(
            tps=tps, qps=qps,
            transactions=int(values["transactions"]) if values["transactions"] is not None else None,
            queries=int(values["queries"]) if values["queries"] is not None else None,
            latency_avg_ms=values["latency_avg_ms"], latency_p95_ms=values["latency_p95_ms"],
            latency_p99_ms=values["latency_p99_ms"],
        )
        raw = ",".join(header) + "\n" + ",".join(row.get(h, "") for h in header) + "\n"
        result = PointResult(spec=spec, status="ok", measurement=measurement, **_common(None, "csv", raw))
        points.append(ImportedPoint(result=replace(result, command=()), label=(row.get("label") or "").strip() or label,
                                    first_line=line, last_line=line, tool="csv",
                                    price_per_hour=values["price_per_hour"]))
    if not points:
        raise ImportProblem(name, None, "no rows")
    return points


def read(name: str, text: str, *, label: str, engine: str | None = None, tool: str = "auto",
         workload: str | None = None) -> list[ImportedPoint]:
    """Every point in one file. Raises ImportProblem naming the file and line."""
    if tool == "auto":
        detected = detect_tool(text)
        if detected is None:
            raise ImportProblem(name, None, "cannot tell which tool wrote this (pgbench, sysbench, mysqlslap or a "
                                            "CSV with a header): pass --tool")
        tool = detected
    if tool == "pgbench":
        if engine not in (None, "postgres"):
            raise ImportProblem(name, None, "pgbench runs are PostgreSQL runs; --engine mysql does not apply")
        return read_pgbench(name, text, label, workload)
    if tool == "sysbench":
        return read_sysbench(name, text, label, engine, workload)
    if tool == "mysqlslap":
        return read_mysqlslap(name, text, label, workload)
    return read_csv(name, text, label, engine, workload)
