"""Frozen records passed between planning, running, storing and reporting. No I/O here.

Units are in the field names (`_ms`, `_s`); times are UTC.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from datetime import datetime
from typing import Any

from dbarena.records import JSONObject

# The TPC-C-like workload's transaction types, in the specification's order (its Lua
# script's and parser's, workloads/tpcc.py; a report's mix, stats/levelmeans.py).
TPCC_KINDS = ("new_order", "payment", "order_status", "delivery", "stock_level")


@dataclass(frozen=True)
class SystemSample:
    """One second of machine activity. CPU shares are percent of all hardware threads;
    server_cpu and loadgen_cpu are in cores (1.0 = one hardware thread busy)."""

    second: float
    cpu_user_pct: float
    cpu_system_pct: float
    cpu_iowait_pct: float
    cpu_steal_pct: float
    cpu_idle_pct: float
    context_switches_per_s: float
    disk_read_bytes_per_s: float | None
    disk_write_bytes_per_s: float | None
    memory_used_bytes: int | None
    server_cpu: float | None
    loadgen_cpu: float | None


@dataclass(frozen=True)
class ToolParam:
    """A dataset or run parameter a tool reads from PointSpec.params, declared by the
    tool's module: the flag, study key, --quick value and data-size estimate come from
    here and nowhere else."""

    name: str  # the study key and the PointSpec.params key ("scale")
    default: int
    help: str  # what it is, for --help and the docs
    quick: int | None = None  # --quick: at most this (None: unchanged)
    bytes_per_unit: int = 0  # on disk per unit, for the data-size estimate (0: not a size of its own)
    flag_name: str = ""  # the flag's name [default: the name, - for _]
    help_tail: str = ""  # said after the default in --help

    @property
    def flag(self) -> str:
        return f"--{self.flag_name or self.name.replace('_', '-')}"


@dataclass(frozen=True)
class Sample:
    """One interval report of a benchmark tool (pgbench -P 1, sysbench
    --report-interval=1: one per second).

    `second` is the tool's elapsed time at the end of the interval. A figure the
    tool does not print is None; a latency printed as NaN (an interval without a
    finished transaction) is None too. pgbench prints the interval's average
    latency (`latency_ms`); sysbench prints one percentile of it
    (`latency_pct_ms`, at `latency_percentile`).
    """

    second: float
    tps: float
    latency_ms: float | None = None
    latency_stddev_ms: float | None = None
    failed: int | None = None
    lag_ms: float | None = None
    skipped: int | None = None
    retried: int | None = None
    retries: int | None = None
    threads: int | None = None
    qps: float | None = None
    reads_per_s: float | None = None
    writes_per_s: float | None = None
    other_per_s: float | None = None
    latency_percentile: float | None = None
    latency_pct_ms: float | None = None
    errors_per_s: float | None = None
    reconnects_per_s: float | None = None

    @classmethod
    def read(cls, *values: float | None, **named: float | None) -> "Sample":
        """Sample(*values, **named), as the parsers make hundreds of thousands of them:
        equal in every way, without the frozen dataclass's setattr per field (a third of
        an import's time went there). Figures not given are not written at all: the
        dataclass keeps each field's default (None) on the class, where reading falls
        back to."""
        if len(values) > len(_SAMPLE_FIELDS) or (named and not named.keys() <= _SAMPLE_DEFAULTS.keys()):
            raise TypeError(f"Sample has no field {sorted(named.keys() - _SAMPLE_DEFAULTS.keys())}")
        sample = _new(cls)
        figures = sample.__dict__  # frozen against setattr, not against its own dict
        figures.update(zip(_SAMPLE_FIELDS, values))
        if named:
            figures.update(named)
        if len(values) < 2 and not {"second", "tps"} <= figures.keys():
            raise TypeError("Sample needs its second and tps")  # the two without a default
        return sample


_new = object.__new__
_SAMPLE_FIELDS = tuple(f.name for f in fields(Sample))
_SAMPLE_DEFAULTS = {f.name: f.default for f in fields(Sample)}


@dataclass(frozen=True)
class Measurement:
    """The figures of one finished point, tool-independent.

    A figure the tool (or its version) does not print is None, never 0: mysqlslap
    has no transactions (tps None) but queries per second; pgbench has no
    percentiles. `details` keeps tool-specific facts (transaction type, query
    mode, the latency histogram ...).
    """

    tps: float | None = None
    transactions: int | None = None
    qps: float | None = None
    queries: int | None = None
    failed_transactions: int | None = None
    retried_transactions: int | None = None
    retries: int | None = None
    errors: int | None = None
    reconnects: int | None = None
    latency_avg_ms: float | None = None
    latency_stddev_ms: float | None = None
    latency_min_ms: float | None = None
    latency_max_ms: float | None = None
    latency_p50_ms: float | None = None
    latency_p90_ms: float | None = None
    latency_p95_ms: float | None = None
    latency_p99_ms: float | None = None
    latency_p999_ms: float | None = None
    initial_connection_ms: float | None = None
    # mysqlslap: seconds to run all queries, over its --iterations.
    run_avg_s: float | None = None
    run_min_s: float | None = None
    run_max_s: float | None = None
    # A JSON document, as stored. (Typed JSONObject once its readers narrow what they
    # read of it: fleet/togetherpoint.outcome indexes its parts; runner._verify puts
    # interfaces.ConsistencyCheck records, not JSON, into it.)
    details: dict[str, Any] = field(default_factory=dict)
    # The latency distribution the percentiles came from (latency.Latencies.encode()):
    # pgbench's per-transaction log, sysbench's histogram. Stored apart from details.
    latency_histogram: JSONObject | None = None


DATASET_LIFECYCLES = ("run", "workload", "point")


@dataclass(frozen=True)
class PointSpec:
    """One point of a plan: which workload, at which concurrency, for how long, under
    which variant.

    `params` are the tool's dataset and run parameters (pgbench: scale; sysbench:
    tables, table_size; mysqlslap: iterations, queries), `options` the tool options
    the study gave (pgbench's query mode, sysbench's --skip-trx ...), both as sorted
    pairs so that the spec stays hashable. `datasets` says when the dataset is
    (re)created: once per run and target, around each workload, or around each point.
    """

    engine: str
    workload: str
    threads: int
    clients: int
    duration_s: int
    params: tuple[tuple[str, int], ...] = ()
    repeat: int = 0  # 0-based; repeats are interleaved across points (--repeat)
    options: tuple[tuple[str, str], ...] = ()
    warmup_s: int = 0
    variant: str = ""  # "" when the study has no variants
    datasets: str = "run"  # one of DATASET_LIFECYCLES
    restore: str | None = None  # "point" / "level": the prepared dataset put back before each

    def param(self, name: str) -> int:
        for key, value in self.params:
            if key == name:
                return value
        raise KeyError(f"{self.workload} point has no parameter {name!r}")

    def option(self, name: str, default: str | None = None) -> str | None:
        return dict(self.options).get(name, default)


@dataclass(frozen=True)
class Tls:
    """TLS that every client of a target requires: a connection that is not encrypted,
    or whose server does not hold the key of the certificate in `ca`, is refused. `ca`
    is a PEM file holding the server's own self-signed certificate (the server of a
    `fleet run --together` makes one for each run): with that one certificate trusted,
    the chain check alone says it is that server, so no host name is checked (libpq's
    sslmode=verify-ca). `cert` and `key`: a client certificate and its key, which
    authorise nothing (the password does) but which sysbench 1.0's MySQL driver always
    presents when it uses TLS, and which the server must therefore trust. Paths only:
    never a key's content."""

    ca: str
    cert: str | None = None
    key: str | None = None


@dataclass(frozen=True)
class Connection:
    """How client tools reach a target. Never holds a password: that lives in the
    environment (PGPASSWORD / PGPASSFILE) or in private files (interfaces.Client).
    `protocol` is the wire protocol ("postgresql" or "mysql"): it chooses a tool's
    driver (sysbench --db-driver), not the engine's name. `tls`: TLS required of the
    server (None: whatever the URL and the client's defaults say)."""

    protocol: str
    host: str
    port: int
    user: str
    dbname: str
    url: str
    tls: Tls | None = None


@dataclass(frozen=True)
class Profile:
    """The server's on-CPU profile over a point's measured run (--profile: run/profiling.py):
    its samples as folded stacks (stats/profiles.folded_text: `root;...;leaf COUNT` a
    line), the frequency they were taken at (each sample 1/frequency_hz s of a CPU's
    time) and where the functions' names came from (perf's version, the server binary's
    symbols)."""

    folded: str
    frequency_hz: float
    symbols: str


@dataclass(frozen=True)
class PointResult:
    """What happened when a point ran. `measurement` is None when it failed."""

    spec: PointSpec
    status: str  # "ok" or "failed"
    started_at: datetime
    ended_at: datetime
    command: tuple[str, ...]
    exit_code: int | None
    stdout: str
    stderr: str
    measurement: Measurement | None = None
    samples: tuple[Sample, ...] = ()
    error: str | None = None
    system: tuple[SystemSample, ...] = ()  # one per second
    # serverside.series.ServerSeries: the server's own view (None: not sampled). (Any: a
    # foundation imports no serverside/; measure.with_figures reads it as that type.)
    server: Any = None
    phase: str = "measured"  # or "warmup": a --warmup run, kept apart from the results
    profile: Profile | None = None  # the server's on-CPU profile (--profile), None: not profiled

    @property
    def ok(self) -> bool:
        return self.status == "ok"


@dataclass(frozen=True)
class RunInfo:
    """One target of one `dbarena run` (an engine, under one variant), as stored
    (never holds a secret)."""

    label: str
    host: str
    engine: str
    target: str
    started_at: datetime
    server_version: str | None
    tool_versions: dict[str, str]  # "pgbench", "pgbench libpq" ... -> its version (run/provenance.py)
    options: JSONObject
    host_facts: JSONObject
    target_facts: JSONObject = field(default_factory=dict)
    price_per_hour: float | None = None  # per hour of what was measured, in `currency`
    currency: str | None = None
    variant: str = ""
    flavour: str | None = None  # postgresql, mariadb, mysql
    study: "StudyRecord | None" = None
    invocation: str | None = None  # the `dbarena run` it belongs to (a UUID): --resume continues them all


@dataclass(frozen=True)
class StudyRecord:
    """The study a run followed, as stored with it: its name, the file's text
    (or the flags that made an implicit study) and a hash of that text."""

    name: str
    source: str
    text: str
    sha256: str


@dataclass(frozen=True)
class Room:
    """Connections the server still lets this role/user open, the sampler's own counted,
    and the tightest limit that says so (None: the server's max_connections)."""

    free: int
    limit: str | None = None
