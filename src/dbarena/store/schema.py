"""The store's schema, described once: its tables, columns, types, constraints and
indexes at the latest version (`SCHEMA_VERSION`). PostgreSQL's DDL for a new store is
generated from it (`postgresql_ddl`); SQLite gets there by its numbered migrations
(migrations.py), which must keep running as released, so they stay SQL text, and a unit
test (tests/unit/test_schema.py) proves that a fresh SQLite store, and an old one
migrated, hold exactly what is described here.

Types are logical: each has its SQLite and its PostgreSQL spelling (SQLite keeps every
integer as INTEGER; PostgreSQL tells counts that may pass 2^31, and ids, as bigint).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

from dbarena.store.migrations import MIGRATIONS, SCHEMA_VERSION

__all__ = ["Column", "Table", "Index", "TABLES", "INDEXES", "TYPES", "MIGRATIONS", "SCHEMA_VERSION",
           "postgresql_ddl", "sqlite_ddl"]

# logical type -> (SQLite's declared type, PostgreSQL's type)
TYPES: dict[str, tuple[str, str]] = {
    "text": ("TEXT", "text"),
    "integer": ("INTEGER", "integer"),
    "bigint": ("INTEGER", "bigint"),
    "real": ("REAL", "double precision"),
    "blob": ("BLOB", "bytea"),
}


@dataclass(frozen=True)
class Column:
    name: str
    type: str                       # a key of TYPES
    not_null: bool = False
    default: str | None = None      # an SQL literal
    check: str | None = None        # an SQL condition
    references: str | None = None   # "table(column)"
    primary_key: bool = False       # the table's key on its own
    identity: bool = False          # ids a new row is given (SQLite's INTEGER PRIMARY KEY)
    unique: bool = False
    # Kept empty since schema 11 (host facts and raw outputs moved to tables of their
    # own). SQLite declared it at schema 1 without a default and cannot add one since;
    # PostgreSQL's has `default`, so that a writer need not name it.
    legacy: bool = False
    # What a value must be beyond its type, checked as rows are read (edge.py): "json"
    # (an object), "json-list" (an array), "timestamp" (ISO 8601 text), "count" (an
    # integer >= 0), "figure" (a finite real >= 0: throughput, latency, seconds).
    holds: str | None = None


@dataclass(frozen=True)
class Table:
    name: str
    columns: tuple[Column, ...]
    primary_key: tuple[str, ...] = ()   # a key of several columns
    without_rowid: bool = False         # SQLite stores the rows in key order
    # PostgreSQL writes no WAL for it (nor syncs it): its rows are lost in a crash,
    # and are emptied then, which transient rows may be.
    unlogged: bool = False


@dataclass(frozen=True)
class Index:
    name: str
    table: str
    columns: tuple[str, ...]


_c = Column
_nn = partial(Column, not_null=True)

_J = "json"
_T = "timestamp"
_N = "count"
_F = "figure"


def _id() -> Column:
    return Column("id", "bigint", primary_key=True, identity=True)


def _point_key(primary_key: bool = False) -> Column:
    return Column("point_id", "bigint", not_null=not primary_key, primary_key=primary_key, references="points(id)")


_SAMPLES = (
    _point_key(), _nn("second", "real", holds=_F), _nn("tps", "real", holds=_F), _c("latency_ms", "real", holds=_F),
    _c("latency_stddev_ms", "real", holds=_F), _c("failed", "bigint", holds=_N), _c("lag_ms", "real", holds=_F),
    _c("skipped", "bigint", holds=_N), _c("retried", "bigint", holds=_N), _c("retries", "bigint", holds=_N),
    _c("threads", "integer", holds=_N), _c("qps", "real", holds=_F),
    _c("reads_per_s", "real", holds=_F), _c("writes_per_s", "real", holds=_F), _c("other_per_s", "real", holds=_F),
    _c("latency_percentile", "real", holds=_F), _c("latency_pct_ms", "real", holds=_F),
    _c("errors_per_s", "real", holds=_F), _c("reconnects_per_s", "real", holds=_F),
)
_SYSTEM_SAMPLES = (
    _point_key(), _nn("second", "real", holds=_F), _c("cpu_user_pct", "real", holds=_F),
    _c("cpu_system_pct", "real", holds=_F), _c("cpu_iowait_pct", "real", holds=_F),
    _c("cpu_steal_pct", "real", holds=_F), _c("cpu_idle_pct", "real", holds=_F),
    _c("context_switches_per_s", "real", holds=_F), _c("disk_read_bytes_per_s", "real", holds=_F),
    _c("disk_write_bytes_per_s", "real", holds=_F), _c("memory_used_bytes", "bigint", holds=_N),
    _c("server_cpu", "real", holds=_F),    # cores used by the database server's processes
    _c("loadgen_cpu", "real", holds=_F),   # cores used by the load generator
)

# In the order PostgreSQL creates them (a table after those it references); columns in
# the order SQLite's migrations added them, so that both dialects list them alike.
TABLES: tuple[Table, ...] = (
    Table("schema_migrations", (_c("version", "integer", primary_key=True), _nn("applied_at", "text"))),
    Table("studies", (
        _c("sha256", "text", primary_key=True),     # of the text
        _nn("name", "text"),
        _nn("source", "text"),                      # the file, a bundled study, or command-line flags
        _nn("text", "text"),                        # the study file (or the flags), verbatim
    )),
    Table("hosts", (
        _c("fingerprint", "text", primary_key=True),  # sha256 of the facts' canonical JSON
        _nn("facts", "text", holds=_J),               # JSON: hostinfo.host_facts()
    )),
    Table("runs", (
        _id(), _nn("label", "text"), _nn("host", "text"), _nn("engine", "text"), _nn("target", "text"),
        _c("server_version", "text"),
        _nn("tool_versions", "text", holds=_J),             # JSON object: tool -> version line
        _nn("options", "text", holds=_J),                   # JSON object: the options used, no secrets
        _nn("host_facts", "text", default="'{}'", legacy=True, holds=_J),
        _nn("dbarena_version", "text"),
        _nn("started_at", "text", holds=_T),                # UTC, ISO 8601
        _c("ended_at", "text", holds=_T),
        _nn("status", "text"),                              # running | finished | interrupted | failed | imported
        _nn("target_facts", "text", default="'{}'", holds=_J),  # JSON: settings, checksums, dataset
        _c("price_per_hour", "real", holds=_F),
        _c("study_sha256", "text", references="studies(sha256)"),
        _nn("variant", "text", default="''"),
        _c("flavour", "text"),                              # postgresql, mariadb, mysql
        _c("currency", "text"),                             # of price_per_hour
        _c("invocation", "text"),                           # the `dbarena run` (a UUID), for --resume
        _c("status_reason", "text"),                        # e.g. killed
        _c("uuid", "text", unique=True),                    # the run's identity across stores (merge)
        _c("host_fingerprint", "text", references="hosts(fingerprint)"),
    )),
    Table("points", (
        _id(), _nn("run_id", "bigint", references="runs(id)"),
        _nn("engine", "text"), _nn("workload", "text"), _nn("threads", "integer", holds=_N),
        _nn("clients", "integer", holds=_N), _nn("duration_s", "integer", holds=_N),
        _c("scale", "integer", holds=_N),
        _nn("status", "text", check="status IN ('ok', 'failed')"),
        _c("error", "text"), _nn("started_at", "text", holds=_T),
        _nn("ended_at", "text", holds=_T),
        _nn("command", "text", holds="json-list"),         # JSON array, no secrets
        _c("exit_code", "integer"), _c("tps", "real", holds=_F), _c("transactions", "bigint", holds=_N),
        _c("failed_transactions", "bigint", holds=_N), _c("retried_transactions", "bigint", holds=_N),
        _c("retries", "bigint", holds=_N), _c("latency_avg_ms", "real", holds=_F),
        _c("latency_stddev_ms", "real", holds=_F), _c("initial_connection_ms", "real", holds=_F),
        _nn("details", "text", default="'{}'", holds=_J),  # JSON: tool-specific facts
        _nn("stdout", "text", default="''", legacy=True),
        _nn("stderr", "text", default="''", legacy=True),
        _nn("params", "text", default="'{}'", holds=_J),   # JSON: scale, tables, table_size ...
        _c("qps", "real", holds=_F), _c("queries", "bigint", holds=_N), _c("errors", "bigint", holds=_N),
        _c("reconnects", "bigint", holds=_N), _c("latency_min_ms", "real", holds=_F),
        _c("latency_max_ms", "real", holds=_F), _c("latency_p50_ms", "real", holds=_F),
        _c("latency_p95_ms", "real", holds=_F), _c("latency_p99_ms", "real", holds=_F),
        _c("run_avg_s", "real", holds=_F), _c("run_min_s", "real", holds=_F), _c("run_max_s", "real", holds=_F),
        _nn("repeat", "integer", default="0", holds=_N),
        _c("source", "text", holds=_J),                              # JSON for imported points; NULL if measured
        _nn("phase", "text", default="'measured'", check="phase IN ('measured', 'warmup')"),
        _nn("variant", "text", default="''"),
        _nn("options", "text", default="'{}'", holds=_J),  # JSON: the study's tool options
        _nn("warmup_s", "integer", default="0", holds=_N),
        _c("config", "text", holds=_J),                     # JSON: the configuration key (configkey.py)
        _c("config_key", "text"),                           # its digest: points of one key may be pooled
        _c("latency_p90_ms", "real", holds=_F), _c("latency_p999_ms", "real", holds=_F),
    )),
    Table("samples", _SAMPLES, primary_key=("point_id", "second"), without_rowid=True),
    Table("system_samples", _SYSTEM_SAMPLES, primary_key=("point_id", "second"), without_rowid=True),
    Table("imports", (
        _c("sha256", "text", primary_key=True),  # of the file's content: the same file twice adds nothing
        _nn("file", "text"),
        _nn("run_ids", "text", holds="json-list"),  # JSON array
        _nn("points", "integer"),
        _nn("imported_at", "text", holds=_T),
    )),
    Table("point_derived", (
        _point_key(primary_key=True),
        _nn("estimator", "integer"),             # analysis.ESTIMATOR_VERSION
        _nn("fields", "text", holds=_J),         # JSON: analysis.analyse_point's figures
    )),
    Table("raw_outputs", (
        _point_key(primary_key=True),
        _nn("codec", "text"),                    # zlib
        _nn("stdout", "blob"),
        _nn("stderr", "blob"),
    )),
    Table("latency_histograms", (
        _point_key(primary_key=True),
        _nn("record", "text", holds=_J),         # JSON: latency.Latencies.encode
    )),
    Table("server_series", (
        _point_key(primary_key=True),
        # The verdict (stats/bound.py's kind: locks, I/O ...; the figures that say so) a store
        # of estimator version 7 or earlier decided when the point was stored: NULL since,
        # as the bound is derived from `record` on read, which reads these only where
        # `record` does not.
        _c("bound", "text"),
        _c("evidence", "text"),
        _nn("record", "text", holds=_J),         # JSON: serverside.series.ServerSeries.encode
        _c("figures", "text", holds=_J),         # JSON: stats/bound.figures, what comparisons read
    )),
    # The server's on-CPU profile of a point (schema 22, --profile): its folded stacks
    # compressed, and the summary a read of many points takes without them.
    Table("profiles", (
        _point_key(primary_key=True),
        _nn("codec", "text"),                    # zlib
        _nn("folded", "blob"),                   # stats/profiles.folded_text, compressed
        _nn("frequency_hz", "real", holds=_F),   # each sample 1/frequency_hz s of a CPU's time
        _nn("symbols", "text"),                  # perf's version; where the server's names came from
        _nn("samples", "bigint", holds=_N),      # the stacks' samples, all told
        _nn("top", "text", holds="json-list"),   # JSON: [{function, share}], stats/profiles.top
    )),
    # A tombstone a run forgotten (`dbarena store forget`) leaves: merge brings no run of
    # this UUID back, and carries the tombstone on (schema 17).
    Table("forgotten_runs", (
        _nn("uuid", "text", primary_key=True),   # the run's identity across stores (runs.uuid)
        _nn("forgotten_at", "text", holds=_T),   # UTC, ISO 8601: when it was forgotten, in whichever store
        _c("label", "text"),                     # what the run was, for the lines that name it
        _c("engine", "text"),
        _c("started_at", "text", holds=_T),
        _nn("points", "integer", holds=_N),      # its points when it was forgotten (warm-ups too)
    )),
    # This store's identity (schema 21): one row, random, made with the store and never
    # exported; what run_origins names a store by.
    Table("store_identity", (
        _nn("uuid", "text", primary_key=True),
    )),
    # Each run a merge brought here, by UUID, and the identity of the store it came
    # from (schema 21): that store's tombstones may remove it, no other's (merge.py).
    Table("run_origins", (
        _nn("uuid", "text", primary_key=True),   # runs.uuid
        _nn("merged_from", "text"),              # store_identity.uuid of the store merged from
    )),
    # Points whose keys are yet to hold what their command measured (schema 18's data
    # step, migrations.rekey_instruments): empty once it has run.
    Table("pending_rekey", (
        _c("point_id", "bigint", primary_key=True),
    )),
    # The seconds of the point a run is measuring now (schema 19), for `dbarena serve`:
    # written once a second by the run's publisher (store/live.py), removed in the
    # transaction that stores the point and when the run ends. Never merged, exported or
    # published. Unlogged on PostgreSQL (no WAL, no fsync); empty in an SQLite store,
    # whose runs write the same table in the sidecar file STORE.live instead.
    Table("live_seconds", (
        _nn("run_id", "bigint"),
        _nn("phase", "text"),                    # warmup or measured
        _nn("workload", "text"),
        _nn("threads", "integer", holds=_N),
        _nn("clients", "integer", holds=_N),
        _nn("variant", "text"),
        _nn("repeat", "integer", holds=_N),
        _nn("duration_s", "real", holds=_F),     # the run's planned length
        _nn("stored_before", "integer", holds=_N),  # the run's points (warm-ups too) stored when it began
        _nn("second", "real", holds=_F),         # since the tool started
        _nn("tps", "real", holds=_F),
    ), primary_key=("run_id", "second"), unlogged=True),
    # Each configuration's points in each session (schema 23): what every view reads of
    # them first, kept as points are stored (stats/analysis.session_summaries), by the
    # estimator version of their derived figures. A run without rows at the version a
    # reader computes, or with fewer members than measured points, is summarised again
    # from its points by the read that finds it so (analysis.lent_sessions).
    Table("session_summaries", (
        _nn("run_id", "bigint", references="runs(id)"),  # the session
        _nn("config_key", "text"),               # points.config_key ("point N" for a point without one)
        _nn("estimator", "integer"),             # analysis.ESTIMATOR_VERSION of the figures below
        _nn("first_point", "bigint"),            # its first point's id: the order points are read in
        _nn("points", "integer", holds=_N),      # its measured points
        _nn("runs", "integer", holds=_N),        # those with a figure (ok): the runs the mean is of
        _nn("failed", "integer", holds=_N),      # those without
        _c("mean", "real"),                      # the runs' figures' mean (statistics.fmean); NULL without one
        _c("total", "real"),                     # their exact sum (math.fsum)
        _c("squares", "real"),                   # the sum of their squared deviations from the mean
        _nn("warnings", "integer", holds=_N),    # the warnings derived for its points, counted
        _nn("bounds", "text", holds=_J),         # JSON: bound -> its points that the server's figures say so
        _nn("members", "text", holds="json-list"),  # JSON: [[point id, figure or null, warnings, bound], ...]
        # JSON (schema 25): what a summary reads of each point (records.SummaryPoint), column
        # by column, the fields its points share once (store/summaries.py); NULL in a row
        # written before, which the first read that summarises its run writes again.
        _c("figures", "text", holds=_J),
    ), primary_key=("run_id", "config_key")),
    # Each label's configuration over all its sessions (schema 26): its summary as a view
    # reads it first (records.StoredGroup, store/groups.py), made from its sessions' rows
    # by the first read that finds it missing, at that read's estimator version. Triggers
    # drop a label's rows when one of its sessions' rows changes, or the label does.
    Table("group_summaries", (
        _nn("label", "text"),
        _nn("config_key", "text"),               # session_summaries.config_key
        _nn("estimator", "integer"),             # analysis.ESTIMATOR_VERSION of its figures
        _nn("first_point", "bigint"),            # its first point's id: the order groups are read in
        _nn("summary", "text", holds=_J),        # JSON: store/groups.py
    ), primary_key=("label", "config_key")),
    # One row (schema 26): a count every write of a session's row (or a run's label) moves
    # on; a group made from sessions read at one count is kept only while it still holds
    # (a run storing points meanwhile: the group would say what they said before).
    Table("group_generation", (
        _nn("n", "bigint", holds=_N),
    )),
)

INDEXES: tuple[Index, ...] = (
    Index("runs_invocation", "runs", ("invocation",)),
    Index("points_run", "points", ("run_id",)),
    Index("points_config", "points", ("config_key",)),
    # (Schema 26: each run's measured points counted from the index alone, as a read that
    # checks its summaries against them does first, and its failed ones, as a page that
    # follows runs asks once a second: store.run_progress.)
    Index("points_run_phase", "points", ("run_id", "phase", "status")),
)


def _postgresql_column(column: Column) -> str:
    parts = [column.name, TYPES[column.type][1]]
    if column.identity:
        parts.append("GENERATED BY DEFAULT AS IDENTITY")
    if column.primary_key:
        parts.append("PRIMARY KEY")
    if column.not_null:
        parts.append("NOT NULL")
    if column.default is not None:
        parts.append(f"DEFAULT {column.default}")
    if column.check is not None:
        parts.append(f"CHECK ({column.check})")
    if column.unique:
        parts.append("UNIQUE")
    if column.references is not None:
        parts.append(f"REFERENCES {column.references}")
    return " ".join(parts)


def postgresql_ddl() -> str:
    """CREATE TABLE and CREATE INDEX statements of a new PostgreSQL store (no views:
    views.py has them)."""
    statements = []
    for table in TABLES:
        lines = [_postgresql_column(c) for c in table.columns]
        if table.primary_key:
            lines.append(f"PRIMARY KEY ({', '.join(table.primary_key)})")
        statements.append(f"CREATE {'UNLOGGED ' if table.unlogged else ''}TABLE {table.name} (\n    " + ",\n    ".join(lines) + "\n);\n")
        statements.extend(f"CREATE INDEX {i.name} ON {i.table}({', '.join(i.columns)});\n"
                          for i in INDEXES if i.table == table.name)
    return "".join(statements)


def sqlite_ddl(table: Table) -> str:
    """SQLite's CREATE TABLE of one table as described (what migrations.py creates it
    as, for a table without defaults, checks or references): the live sidecar's."""
    lines = [" ".join([c.name, TYPES[c.type][0], *(["PRIMARY KEY"] if c.primary_key else []),
                       *(["NOT NULL"] if c.not_null else [])]) for c in table.columns]
    if table.primary_key:
        lines.append(f"PRIMARY KEY ({', '.join(table.primary_key)})")
    return (f"CREATE TABLE IF NOT EXISTS {table.name} (" + ", ".join(lines) + ")"
            + (" WITHOUT ROWID" if table.without_rowid else ""))
