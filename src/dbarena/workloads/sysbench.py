"""sysbench OLTP: command lines and the output parser. Pure functions, no I/O.

Reads sysbench 1.0.x and 1.1 (`SQL statistics`, `Latency (ms)`, 1.1's `Throughput`
section, `[ 1s ] thds: ...` interval lines) and the legacy 0.5 / 0.4 formats
(`OLTP test statistics`, `response time` / `per-request statistics`, `[   2s]
threads: ...` interval lines). With `--histogram=on` sysbench prints the latency
distribution of the whole run; p50, p95 and p99 are read from it as every tool's
percentiles are (stats/latency.py: the first bucket whose cumulative count reaches
ceil(share x count)). sysbench's own printed percentile rounds the rank to the nearest
and is computed after the histogram is printed (events finishing in between move it),
so it can be a bucket or more apart (about 1.8 % each); it is kept in the details as
printed (percentile, latency_pct_ms).
A line that starts like a known field but cannot be read raises ParseError naming
the line; a figure the version does not print stays None.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Mapping, Sequence

from dbarena.errors import ParseError
from dbarena.stats import latency
from dbarena.interfaces import Client, PointInput
from dbarena.model import Measurement, PointSpec, Sample, Tls, ToolParam
from dbarena.workloads import series
from dbarena.workloads.base import ToolBase

TOOL = "sysbench"
ROW_BYTES = 250  # a sysbench row on disk with its index, rounded up (the data-size estimate)
PARAMS: tuple[ToolParam, ...] = (ToolParam("tables", 4, "sysbench tables"),
          ToolParam("table_size", 10000, "sysbench rows per table", quick=1000,
                    help_tail=" (the studies used 1000000 and 10000000)"))

_N = r"-?\d+(?:\.\d+)?"

_INTERVAL = re.compile(
    rf"^\[ *(?P<second>{_N})s \] thds: (?P<threads>\d+) tps: (?P<tps>{_N}) qps: (?P<qps>{_N}) "
    rf"\(r/w/o: (?P<r>{_N})/(?P<w>{_N})/(?P<o>{_N})\) lat \(ms,(?P<pct>{_N})%\): (?P<lat>{_N}) "
    rf"err/s:? (?P<err>{_N}) reconn/s: (?P<reconn>{_N})$"
)
_INTERVAL_05 = re.compile(
    rf"^\[ *(?P<second>{_N})s\] threads: (?P<threads>\d+), tps: (?P<tps>{_N}), reads: (?P<r>{_N}), "
    rf"writes: (?P<w>{_N}), response time: (?P<lat>{_N})ms \((?P<pct>{_N})%\), errors: (?P<err>{_N}), "
    rf"reconnects: +(?P<reconn>{_N})$"
)
# 0.5 as released in 2013 (MariaDB's series of that year): rates named reads/s and
# writes/s, no errors or reconnects.
_INTERVAL_05_EARLY = re.compile(
    rf"^\[ *(?P<second>{_N})s\] threads: (?P<threads>\d+), tps: (?P<tps>{_N}), reads/s: (?P<r>{_N}), "
    rf"writes/s: (?P<w>{_N}), response time: (?P<lat>{_N})ms \((?P<pct>{_N})%\)$"
)
_BANNER = re.compile(r"^sysbench (?P<version>\d+\.\d+(?:\.\d+)?)\b")
_THREADS = re.compile(r"^Number of threads: (?P<v>\d+)$")
_REPORT_EVERY = re.compile(r"^Report intermediate results every (?P<v>\d+) second\(s\)$")
_HIST_HEADER = "Latency histogram (values are in milliseconds)"
_HIST_ROW = re.compile(rf"^ *(?P<value>{_N}) \|\**\s+(?P<count>\d+)$")

_COUNT_RATE = re.compile(rf"^(?P<n>\d+)\s+\((?P<rate>{_N}) per sec\.\)$")
_SECONDS = re.compile(rf"^(?P<v>{_N})s?$")
_MS = re.compile(rf"^(?P<v>{_N})(?:ms)?$")
_INT = re.compile(r"^(?P<v>\d+)$")
_PERCENTILE_KEY = re.compile(r"^(?:(?P<a>\d+)th percentile|approx\. +(?P<b>\d+) percentile)$")

# "key:" (indentation stripped) -> (field name, value pattern)
_KEYS: dict[str, tuple[str, re.Pattern[str]]] = {
    "read": ("reads", _INT),
    "write": ("writes", _INT),
    "other": ("other", _INT),
    "total": ("queries", _INT),
    "transactions": ("transactions", _COUNT_RATE),
    "queries": ("queries_line", _COUNT_RATE),
    "ignored errors": ("errors", _COUNT_RATE),
    "reconnects": ("reconnects", _COUNT_RATE),
    "deadlocks": ("deadlocks", _COUNT_RATE),
    "read/write requests": ("rw_requests", _COUNT_RATE),
    "other operations": ("other_operations", _COUNT_RATE),
    "total time": ("total_time_s", _SECONDS),
    "time elapsed": ("total_time_s", _SECONDS),
    "total number of events": ("events", _INT),
    "events/s (eps)": ("events_per_s", _SECONDS),
    "min": ("latency_min_ms", _MS),
    "avg": ("latency_avg_ms", _MS),
    "max": ("latency_max_ms", _MS),
    "sum": ("latency_sum_ms", _MS),
}


@dataclass(frozen=True)
class SysbenchReport:
    transactions: int
    tps: float
    version: str | None = None
    threads: int | None = None
    report_interval_s: int | None = None
    reads: int | None = None
    writes: int | None = None
    other: int | None = None
    queries: int | None = None
    qps: float | None = None
    errors: int | None = None
    reconnects: int | None = None
    deadlocks: int | None = None
    total_time_s: float | None = None
    events: int | None = None
    latency_min_ms: float | None = None
    latency_avg_ms: float | None = None
    latency_max_ms: float | None = None
    latency_sum_ms: float | None = None
    percentile: float | None = None  # the one percentile sysbench printed (e.g. 95)
    latency_pct_ms: float | None = None  # its value
    # 0.4 / 0.5: "read/write requests", the queries without BEGIN/COMMIT (what MariaDB's
    # published sysbench 0.5 series call QPS).
    rw_requests_per_s: float | None = None
    histogram: tuple[tuple[float, int], ...] = ()
    samples: tuple[Sample, ...] = field(default=())

    def histogram_percentile(self, pct: float) -> float | None:
        return histogram_percentile(self.histogram, pct)

    def to_measurement(self) -> Measurement:
        # Percentiles from the printed histogram through an HDR histogram, as for
        # pgbench's log (so that points and pools of both tools are read one way);
        # without a histogram, only the one percentile sysbench printed is known. The
        # printed one stays in details (percentile, latency_pct_ms).
        latencies = latency.from_bucket_rows(self.histogram, "sysbench histogram") if self.histogram else None
        figures = latencies.percentiles_ms() if latencies is not None else {}

        def pct(name: str, p: float) -> float | None:
            if latencies is not None:
                return figures[name]
            return self.latency_pct_ms if self.percentile == p else None

        details = {
            k: getattr(self, k)
            for k in ("version", "threads", "reads", "writes", "other", "deadlocks", "total_time_s", "events",
                      "latency_sum_ms", "percentile", "latency_pct_ms", "rw_requests_per_s")
            if getattr(self, k) is not None
        }
        if self.histogram:
            details["histogram_ms"] = [list(row) for row in self.histogram]
        return Measurement(
            tps=self.tps, transactions=self.transactions, qps=self.qps, queries=self.queries,
            errors=self.errors, reconnects=self.reconnects, latency_avg_ms=self.latency_avg_ms,
            latency_min_ms=self.latency_min_ms, latency_max_ms=self.latency_max_ms,
            latency_p50_ms=pct("p50", 50), latency_p90_ms=pct("p90", 90), latency_p95_ms=pct("p95", 95),
            latency_p99_ms=pct("p99", 99), latency_p999_ms=pct("p999", 99.9), details=details,
            latency_histogram=latencies.encode() if latencies is not None else None,
        )


def histogram_percentile(histogram: Sequence[tuple[float, int]], pct: float) -> float | None:
    """The pct-th percentile of a bucketed distribution: the value of the first bucket
    at which the cumulative count reaches floor(total x pct / 100 + 0.5), the rule of
    sysbench's own sb_histogram_snapshot_get_pct."""
    total = sum(count for _, count in histogram)
    if total == 0:
        return None
    need = math.floor(total * pct / 100.0 + 0.5)
    cumulative = 0
    for value, count in histogram:
        cumulative += count
        if cumulative >= need:
            return value
    return histogram[-1][0]


def parse_progress_line(line: str, lineno: int | None = None) -> Sample | None:
    """An interval report line (1.0+, 0.5 or early 0.5 style) as a Sample; None for other
    lines."""
    line = line.rstrip("\r\n")
    if not line.startswith("["):
        return None
    m = _INTERVAL.match(line) or _INTERVAL_05.match(line) or _INTERVAL_05_EARLY.match(line)
    if m is None:
        if "thds:" in line or "threads:" in line:
            raise ParseError(TOOL, "unreadable interval report line", lineno, line)
        return None  # e.g. "[ 1s ] queue length: 0, concurrency: 0" with --rate
    g = m.groupdict()
    return Sample.read(
        second=float(g["second"]),
        threads=int(g["threads"]),
        tps=float(g["tps"]),
        qps=float(g["qps"]) if g.get("qps") is not None else None,
        reads_per_s=float(g["r"]),
        writes_per_s=float(g["w"]),
        other_per_s=float(g["o"]) if g.get("o") is not None else None,
        latency_percentile=float(g["pct"]),
        latency_pct_ms=float(g["lat"]),
        errors_per_s=float(g["err"]) if g.get("err") is not None else None,
        reconnects_per_s=float(g["reconn"]) if g.get("reconn") is not None else None,
    )


def parse(stdout: str, stderr: str = "") -> SysbenchReport:
    """Read a finished sysbench run. Raises ParseError when a known field is unreadable
    or there is no transactions line (sysbench did not finish)."""
    fields = _Fields()
    samples: list[Sample] = []
    histogram: list[tuple[float, int]] = []
    for text in (stdout, stderr):
        in_histogram = False
        for lineno, raw in enumerate(text.splitlines(), start=1):
            line = raw.rstrip("\r")
            if in_histogram:
                if not line.strip():
                    in_histogram = False
                    continue
                if line.strip().startswith("value") and "distribution" in line:
                    continue
                row = _HIST_ROW.match(line)
                if row is None:
                    raise ParseError(TOOL, "unreadable latency histogram row", lineno, line)
                histogram.append((float(row["value"]), int(row["count"])))
                continue
            if line.startswith(_HIST_HEADER):
                in_histogram = True
                continue
            sample = parse_progress_line(line, lineno)
            if sample is not None:
                samples.append(sample)
                continue
            for pattern, name in ((_BANNER, "version"), (_THREADS, "threads"), (_REPORT_EVERY, "report_interval_s")):
                m = pattern.match(line)
                if m:
                    if name == "version":
                        fields.texts[name] = m[1]
                    else:
                        fields.ints[name] = int(m[1])
                    break
            else:
                _read_key_line(line, lineno, fields)

    ints, floats, rates = fields.ints, fields.floats, fields.rates
    if "transactions" not in rates:
        raise ParseError(TOOL, "no 'transactions:' line (did sysbench finish?)")
    transactions, tps = rates["transactions"]
    queries = ints.get("queries")
    qps: float | None
    if "queries_line" in rates:
        queries, qps = rates["queries_line"]
    elif "rw_requests" in rates and "other_operations" in rates:
        # 0.4 / 0.5 split queries into read/write requests and other operations.
        # Both printed to 2 decimals: so is their sum (no float noise in the store).
        qps = round(rates["rw_requests"][1] + rates["other_operations"][1], 2)
    else:
        qps = None

    def count(name: str) -> int | None:
        return rates[name][0] if name in rates else None

    return SysbenchReport(
        transactions=transactions, tps=tps, version=fields.texts.get("version"), threads=ints.get("threads"),
        report_interval_s=ints.get("report_interval_s"), reads=ints.get("reads"), writes=ints.get("writes"),
        other=ints.get("other"), queries=queries, qps=qps, errors=count("errors"),
        reconnects=count("reconnects"), deadlocks=count("deadlocks"), total_time_s=floats.get("total_time_s"),
        events=ints.get("events"), latency_min_ms=floats.get("latency_min_ms"),
        latency_avg_ms=floats.get("latency_avg_ms"), latency_max_ms=floats.get("latency_max_ms"),
        latency_sum_ms=floats.get("latency_sum_ms"), percentile=floats.get("percentile"),
        latency_pct_ms=floats.get("latency_pct_ms"),
        rw_requests_per_s=rates["rw_requests"][1] if "rw_requests" in rates else None,
        histogram=tuple(histogram), samples=tuple(samples),
    )


@dataclass
class _Fields:
    """What a run's summary says, by field name (SysbenchReport's, or _KEYS'), a dict
    per type: a count and its rate per second ("transactions: 100 (10.00 per sec.)")."""

    texts: dict[str, str] = field(default_factory=dict)
    ints: dict[str, int] = field(default_factory=dict)
    floats: dict[str, float] = field(default_factory=dict)
    rates: dict[str, tuple[int, float]] = field(default_factory=dict)


def _read_key_line(line: str, lineno: int, values: _Fields) -> None:
    key, sep, rest = line.strip().partition(":")
    if not sep:
        return
    value = rest.strip()
    pct = _PERCENTILE_KEY.match(key)
    if pct:
        m = _MS.match(value)
        if m is None:
            raise ParseError(TOOL, f"unreadable '{key}' line", lineno, line)
        values.floats["percentile"] = float(pct["a"] or pct["b"])
        values.floats["latency_pct_ms"] = float(m["v"])
        return
    if key not in _KEYS or (key in ("min", "avg", "max", "sum") and not value):
        return
    name, pattern = _KEYS[key]
    m = pattern.match(value)
    if m is None:
        raise ParseError(TOOL, f"unreadable '{key}' line", lineno, line)
    if pattern is _COUNT_RATE:
        values.rates[name] = (int(m["n"]), float(m["rate"]))
    elif pattern is _INT:
        values.ints[name] = int(m["v"])
    else:
        values.floats[name] = float(m["v"])


def read(stdout: str, stderr: str, spec: PointSpec | None = None) -> tuple[Measurement, tuple[Sample, ...]]:
    report = parse(stdout, stderr)
    return report.to_measurement(), report.samples


# sysbench --db-driver for each wire protocol.
DRIVERS = {"postgresql": "pgsql", "mysql": "mysql"}
# Rows loaded per second and table by `prepare` (one loading thread per table), for estimates.
_LOAD_ROWS_PER_S = 100_000


def connection_args(client: Client) -> list[str]:
    """sysbench's driver options for a target (the tpcc-like workload shares them)."""
    conn = client.conn
    driver = DRIVERS[conn.protocol]
    args = [
        f"--db-driver={driver}",
        f"--{driver}-host={conn.host}",
        f"--{driver}-port={conn.port}",
        f"--{driver}-user={conn.user}",
        f"--{driver}-db={conn.dbname}",
    ]
    if client.secret_file:
        # The password is in this private file, not on the command line.
        args.insert(0, f"--config-file={client.secret_file}")
    if conn.tls is not None and driver == "mysql":
        # Its files come from the working directory (mysql_tls_files). The pgsql driver's
        # libpq reads TLS from the environment (PgTarget.client_env).
        args.append("--mysql-ssl=on")
    return args


def mysql_tls_files(tls: Tls) -> dict[str, str]:
    """What sysbench 1.0's MySQL driver needs in its working directory for
    --mysql-ssl=on, by name, and where each is: it hands the client library these fixed
    names (drv_mysql.c), a missing one failing every connection, and has no option to
    name others. The CA verifies the server; the client pair it always presents (the
    server refuses one it cannot verify)."""
    if tls.cert is None or tls.key is None:
        raise ValueError("sysbench's MySQL driver presents a client certificate over TLS: it needs one")
    return {"cacert.pem": tls.ca, "client-cert.pem": tls.cert, "client-key.pem": tls.key}


def reserved_options() -> dict[str, str]:
    """Options dbarena sets on every sysbench command line."""
    reserved = {
        "threads": "the sweep's levels", "time": "duration_s", "events": "duration_s",
        "db-driver": "the engine", "config-file": "the target's private password file",
        "histogram": "always on (the percentiles come from it)", "tables": "the dataset's tables",
        "table-size": "the dataset's table_size", "table_size": "the dataset's table_size",
    }
    for driver in DRIVERS.values():
        for part in ("host", "port", "user", "password", "db", "socket"):
            reserved[f"{driver}-{part}"] = "the target"
    return reserved


def option_args(spec: PointSpec, defaults: Mapping[str, str]) -> list[str]:
    """--name=value for the study's options over dbarena's defaults."""
    merged = {**defaults, **dict(spec.options)}
    return [f"--{name}={value}" for name, value in merged.items()]


# sysbench's scripts that use up the shared sbtest tables: oltp_delete deletes rows
# and never puts them back (a second point, or another workload after it, would run on
# what is left), so each of its points gets the tables prepared afresh.
CONSUMES = frozenset({"oltp_delete"})

# sysbench's scripts that do not run on oltp_common's sbtest tables: each point makes
# its own tables, through a script of dbarena's that it gets in its work directory
# (file name, content). bulk_insert inserts ids from 1 into one table per thread, so
# its tables must be new and empty at each point, as many as the point's threads.
OWN_TABLES: dict[str, tuple[str, str]] = {
    "bulk_insert": ("dbarena_bulk_insert.lua", """\
-- Written by dbarena into the work directory of one point: sysbench's own
-- bulk_insert.lua, run on tables of its own (sbbulk1..N rather than the sbtest tables
-- the other sysbench workloads share), one per thread, dropped and created empty
-- before the threads start (init) and dropped after them (done).
local path = assert(package.searchpath("bulk_insert", package.path), "sysbench's bulk_insert.lua not found")
local file = assert(io.open(path, "r"))
local source = file:read("*a")
file:close()
local renamed, count = source:gsub("sbtest", "sbbulk")
assert(count > 0, path .. " names no sbtest table")
assert(loadstring(renamed, "@" .. path))()

function init()
   cleanup()
   prepare()
end

function done()
   cleanup()
end
"""),
}


class Sysbench(ToolBase):
    """sysbench OLTP: one `prepare` serves all the OLTP scripts (they share
    oltp_common's schema; select_random_* read sbtest1 only); each point runs the
    workload's script at T threads with an interval report and the latency histogram.
    A script in OWN_TABLES (bulk_insert) keeps no dataset: its point makes its own
    tables; one in CONSUMES (oltp_delete) gets the dataset afresh at each point.
    Other --name=value options of the study (--skip-trx, --percentile,
    --report-interval, --range-size ...) are passed through."""

    name = TOOL
    binary = "sysbench"
    # --rate=N: events queued on a schedule, each one's latency counted from its place in
    # the queue (sysbench.c: sb_timer_stop adds the queue_time sb_more_events measured).
    open_loop_refusal: str | None = None
    whole_rates = True  # --rate=N takes an integer ("Invalid value for the 'rate' option: '82.0'"), 0 is no limit
    params = PARAMS
    reserved = reserved_options()
    passthrough = True
    defaults = {"report-interval": "1", "percentile": "95"}
    interval_option: str | None = "report-interval"

    def secret_file(self, protocol: str, password: str) -> str | None:
        return f"{DRIVERS[protocol]}-password={password}\n"

    def _common(self, client: Client, spec: PointSpec) -> list[str]:
        return [*connection_args(client), f"--tables={spec.param('tables')}",
                f"--table-size={spec.param('table_size')}"]

    def prepare_argv(self, client: Client, spec: PointSpec) -> list[list[str]]:
        """Create and load the sbtest tables, one loading thread per table."""
        return [[client.binary, "oltp_read_write", *self._common(client, spec),
                 f"--threads={spec.param('tables')}", "prepare"]]

    def cleanup_argv(self, client: Client, spec: PointSpec) -> list[list[str]]:
        return [[client.binary, "oltp_read_write", *self._common(client, spec), "cleanup"]]

    def point_argv(self, client: Client, spec: PointSpec, mode_args: Sequence[str]) -> list[str]:
        """One point: the OLTP script (mode_args[0]) at spec.threads for spec.duration_s,
        an interval report (every second unless the study says otherwise) and the
        latency histogram at the end. A script that makes its own tables runs through
        dbarena's script for it (point_input), without the dataset's sizes."""
        script, *rest = mode_args
        if script in OWN_TABLES:
            return [client.binary, OWN_TABLES[script][0], *rest, *connection_args(client),
                    f"--threads={spec.threads}", f"--time={spec.duration_s}", "--histogram=on",
                    *option_args(spec, self.defaults), "run"]
        return [
            client.binary, *mode_args, *self._common(client, spec),
            f"--threads={spec.threads}",
            f"--time={spec.duration_s}",
            "--histogram=on",
            *option_args(spec, self.defaults),
            "run",
        ]

    def point_input(self, client: Client, spec: PointSpec, mode_args: Sequence[str]) -> PointInput:
        own = OWN_TABLES.get(mode_args[0]) if mode_args else None
        return PointInput(files={own[0]: own[1]}) if own else PointInput()

    def dataset_use(self, mode_args: Sequence[str]) -> str:
        script = mode_args[0] if mode_args else ""
        return "own" if script in OWN_TABLES else "consumed" if script in CONSUMES else "shared"

    def read(self, stdout: str, stderr: str, spec: PointSpec | None) -> tuple[Measurement, tuple[Sample, ...]]:
        return read(stdout, stderr, spec)

    def read_samples(self, stdout: str, stderr: str) -> tuple[Sample, ...]:
        return read_samples(stdout, stderr)

    def parse_progress_line(self, line: str, lineno: int | None = None) -> Sample | None:
        return parse_progress_line(line, lineno)

    def estimate_prepare_s(self, spec: PointSpec) -> float:
        return 2 + spec.param("table_size") / _LOAD_ROWS_PER_S

    def dataset_bytes(self, params: Mapping[str, int]) -> int:
        return params.get("tables", 4) * params.get("table_size", 10000) * ROW_BYTES


def read_samples(stdout: str, stderr: str) -> tuple[Sample, ...]:
    """The interval series of a run that failed."""
    return series.tolerant(stdout + stderr, parse_progress_line)


TOOL_IMPL = Sysbench()
