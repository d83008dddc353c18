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
           "postgresql_ddl"]

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


@dataclass(frozen=True)
class Table:
    name: str
    columns: tuple[Column, ...]
    primary_key: tuple[str, ...] = ()   # a key of several columns
    without_rowid: bool = False         # SQLite stores the rows in key order


@dataclass(frozen=True)
class Index:
    name: str
    table: str
    columns: tuple[str, ...]


_c = Column
_nn = partial(Column, not_null=True)


def _id() -> Column:
    return Column("id", "bigint", primary_key=True, identity=True)


def _point_key(primary_key: bool = False) -> Column:
    return Column("point_id", "bigint", not_null=not primary_key, primary_key=primary_key, references="points(id)")


_SAMPLES = (
    _point_key(), _nn("second", "real"), _nn("tps", "real"), _c("latency_ms", "real"),
    _c("latency_stddev_ms", "real"), _c("failed", "bigint"), _c("lag_ms", "real"), _c("skipped", "bigint"),
    _c("retried", "bigint"), _c("retries", "bigint"), _c("threads", "integer"), _c("qps", "real"),
    _c("reads_per_s", "real"), _c("writes_per_s", "real"), _c("other_per_s", "real"),
    _c("latency_percentile", "real"), _c("latency_pct_ms", "real"), _c("errors_per_s", "real"),
    _c("reconnects_per_s", "real"),
)
_SYSTEM_SAMPLES = (
    _point_key(), _nn("second", "real"), _c("cpu_user_pct", "real"), _c("cpu_system_pct", "real"),
    _c("cpu_iowait_pct", "real"), _c("cpu_steal_pct", "real"), _c("cpu_idle_pct", "real"),
    _c("context_switches_per_s", "real"), _c("disk_read_bytes_per_s", "real"),
    _c("disk_write_bytes_per_s", "real"), _c("memory_used_bytes", "bigint"),
    _c("server_cpu", "real"),    # cores used by the database server's processes
    _c("loadgen_cpu", "real"),   # cores used by the load generator
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
        _nn("facts", "text"),                         # JSON: hostinfo.host_facts()
    )),
    Table("runs", (
        _id(), _nn("label", "text"), _nn("host", "text"), _nn("engine", "text"), _nn("target", "text"),
        _c("server_version", "text"),
        _nn("tool_versions", "text"),                       # JSON object: tool -> version line
        _nn("options", "text"),                             # JSON object: the options used, no secrets
        _nn("host_facts", "text", default="'{}'", legacy=True),
        _nn("dbarena_version", "text"),
        _nn("started_at", "text"),                          # UTC, ISO 8601
        _c("ended_at", "text"),
        _nn("status", "text"),                              # running | finished | interrupted | failed | imported
        _nn("target_facts", "text", default="'{}'"),        # JSON: settings, checksums, dataset
        _c("price_per_hour", "real"),
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
        _nn("engine", "text"), _nn("workload", "text"), _nn("threads", "integer"), _nn("clients", "integer"),
        _nn("duration_s", "integer"), _c("scale", "integer"),
        _nn("status", "text", check="status IN ('ok', 'failed')"),
        _c("error", "text"), _nn("started_at", "text"), _nn("ended_at", "text"),
        _nn("command", "text"),                             # JSON array, no secrets
        _c("exit_code", "integer"), _c("tps", "real"), _c("transactions", "bigint"),
        _c("failed_transactions", "bigint"), _c("retried_transactions", "bigint"), _c("retries", "bigint"),
        _c("latency_avg_ms", "real"), _c("latency_stddev_ms", "real"), _c("initial_connection_ms", "real"),
        _nn("details", "text", default="'{}'"),             # JSON: tool-specific facts
        _nn("stdout", "text", default="''", legacy=True),
        _nn("stderr", "text", default="''", legacy=True),
        _nn("params", "text", default="'{}'"),              # JSON: scale, tables, table_size ...
        _c("qps", "real"), _c("queries", "bigint"), _c("errors", "bigint"), _c("reconnects", "bigint"),
        _c("latency_min_ms", "real"), _c("latency_max_ms", "real"), _c("latency_p50_ms", "real"),
        _c("latency_p95_ms", "real"), _c("latency_p99_ms", "real"),
        _c("run_avg_s", "real"), _c("run_min_s", "real"), _c("run_max_s", "real"),
        _nn("repeat", "integer", default="0"),
        _c("source", "text"),                               # JSON for imported points; NULL if measured
        _nn("phase", "text", default="'measured'", check="phase IN ('measured', 'warmup')"),
        _nn("variant", "text", default="''"),
        _nn("options", "text", default="'{}'"),             # JSON: the study's tool options
        _nn("warmup_s", "integer", default="0"),
        _c("config", "text"),                               # JSON: the configuration key (configkey.py)
        _c("config_key", "text"),                           # its digest: points of one key may be pooled
        _c("latency_p90_ms", "real"), _c("latency_p999_ms", "real"),
    )),
    Table("samples", _SAMPLES, primary_key=("point_id", "second"), without_rowid=True),
    Table("system_samples", _SYSTEM_SAMPLES, primary_key=("point_id", "second"), without_rowid=True),
    Table("imports", (
        _c("sha256", "text", primary_key=True),  # of the file's content: the same file twice adds nothing
        _nn("file", "text"),
        _nn("run_ids", "text"),                  # JSON array
        _nn("points", "integer"),
        _nn("imported_at", "text"),
    )),
    Table("point_derived", (
        _point_key(primary_key=True),
        _nn("estimator", "integer"),             # analysis.ESTIMATOR_VERSION
        _nn("fields", "text"),                   # JSON: analysis.analyse_point's figures
    )),
    Table("raw_outputs", (
        _point_key(primary_key=True),
        _nn("codec", "text"),                    # zlib
        _nn("stdout", "blob"),
        _nn("stderr", "blob"),
    )),
    Table("latency_histograms", (
        _point_key(primary_key=True),
        _nn("record", "text"),                   # JSON: latency.Latencies.encode
    )),
    Table("server_series", (
        _point_key(primary_key=True),
        _c("bound", "text"),                     # stats/bound.py's kind: locks, I/O, server CPU ...
        _c("evidence", "text"),                  # the figures that say so, in words
        _nn("record", "text"),                   # JSON: serverside.series.ServerSeries.encode
        _c("figures", "text"),                   # JSON: stats/bound.figures, what comparisons read
    )),
)

INDEXES: tuple[Index, ...] = (
    Index("runs_invocation", "runs", ("invocation",)),
    Index("points_run", "points", ("run_id",)),
    Index("points_config", "points", ("config_key",)),
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
        statements.append(f"CREATE TABLE {table.name} (\n    " + ",\n    ".join(lines) + "\n);\n")
        statements.extend(f"CREATE INDEX {i.name} ON {i.table}({', '.join(i.columns)});\n"
                          for i in INDEXES if i.table == table.name)
    return "".join(statements)
