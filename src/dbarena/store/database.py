"""The results store: one SQLite file, a versioned schema, raw output kept verbatim.

Migrations are numbered SQL scripts applied in order; `PRAGMA user_version` holds
the version reached and `schema_migrations` records when each was applied. A store
written by a newer dbarena is refused rather than misread.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import sqlite3
import tempfile
import uuid
import zlib
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

import orjson

from dbarena.stats import configkey
from dbarena.store import postgres as pgstore
from dbarena.store import views
from dbarena import bulk
from dbarena.bulk import collector_paused
from dbarena.errors import StoreError
from dbarena.interfaces import SqlConnection
from dbarena.model import PointResult, RunInfo

MIGRATIONS: list[str] = [
    # 1: runs, points and their per-second samples.
    """
    CREATE TABLE runs (
        id              INTEGER PRIMARY KEY,
        label           TEXT NOT NULL,
        host            TEXT NOT NULL,
        engine          TEXT NOT NULL,
        target          TEXT NOT NULL,
        server_version  TEXT,
        tool_versions   TEXT NOT NULL,   -- JSON object: tool -> version line
        options         TEXT NOT NULL,   -- JSON object: the options used, no secrets
        host_facts      TEXT NOT NULL,   -- JSON object
        dbarena_version TEXT NOT NULL,
        started_at      TEXT NOT NULL,   -- UTC, ISO 8601
        ended_at        TEXT,
        status          TEXT NOT NULL    -- running | finished | interrupted | failed
    );
    CREATE TABLE points (
        id                     INTEGER PRIMARY KEY,
        run_id                 INTEGER NOT NULL REFERENCES runs(id),
        engine                 TEXT NOT NULL,
        workload               TEXT NOT NULL,
        threads                INTEGER NOT NULL,
        clients                INTEGER NOT NULL,
        duration_s             INTEGER NOT NULL,
        scale                  INTEGER,
        status                 TEXT NOT NULL CHECK (status IN ('ok', 'failed')),
        error                  TEXT,
        started_at             TEXT NOT NULL,
        ended_at               TEXT NOT NULL,
        command                TEXT NOT NULL,  -- JSON array, no secrets
        exit_code              INTEGER,
        tps                    REAL,
        transactions           INTEGER,
        failed_transactions    INTEGER,
        retried_transactions   INTEGER,
        retries                INTEGER,
        latency_avg_ms         REAL,
        latency_stddev_ms      REAL,
        initial_connection_ms  REAL,
        details                TEXT NOT NULL DEFAULT '{}',  -- JSON: tool-specific facts
        stdout                 TEXT NOT NULL,
        stderr                 TEXT NOT NULL
    );
    CREATE INDEX points_run ON points(run_id);
    CREATE TABLE samples (
        point_id           INTEGER NOT NULL REFERENCES points(id),
        second             REAL NOT NULL,
        tps                REAL NOT NULL,
        latency_ms         REAL,
        latency_stddev_ms  REAL,
        failed             INTEGER,
        lag_ms             REAL,
        skipped            INTEGER,
        retried            INTEGER,
        retries            INTEGER
    );
    CREATE INDEX samples_point ON samples(point_id);
    """,
    # 2: sysbench and mysqlslap figures, tool parameters, sysbench interval columns.
    """
    ALTER TABLE points ADD COLUMN params TEXT NOT NULL DEFAULT '{}';  -- JSON: tables, table_size ...
    ALTER TABLE points ADD COLUMN qps REAL;
    ALTER TABLE points ADD COLUMN queries INTEGER;
    ALTER TABLE points ADD COLUMN errors INTEGER;
    ALTER TABLE points ADD COLUMN reconnects INTEGER;
    ALTER TABLE points ADD COLUMN latency_min_ms REAL;
    ALTER TABLE points ADD COLUMN latency_max_ms REAL;
    ALTER TABLE points ADD COLUMN latency_p50_ms REAL;
    ALTER TABLE points ADD COLUMN latency_p95_ms REAL;
    ALTER TABLE points ADD COLUMN latency_p99_ms REAL;
    ALTER TABLE points ADD COLUMN run_avg_s REAL;
    ALTER TABLE points ADD COLUMN run_min_s REAL;
    ALTER TABLE points ADD COLUMN run_max_s REAL;
    UPDATE points SET params = json_object('scale', scale) WHERE scale IS NOT NULL;
    ALTER TABLE samples ADD COLUMN threads INTEGER;
    ALTER TABLE samples ADD COLUMN qps REAL;
    ALTER TABLE samples ADD COLUMN reads_per_s REAL;
    ALTER TABLE samples ADD COLUMN writes_per_s REAL;
    ALTER TABLE samples ADD COLUMN other_per_s REAL;
    ALTER TABLE samples ADD COLUMN latency_percentile REAL;
    ALTER TABLE samples ADD COLUMN latency_pct_ms REAL;
    ALTER TABLE samples ADD COLUMN errors_per_s REAL;
    ALTER TABLE samples ADD COLUMN reconnects_per_s REAL;
    """,
    # 3: repeats, target provenance, per-second system metrics.
    """
    ALTER TABLE points ADD COLUMN repeat INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE runs ADD COLUMN target_facts TEXT NOT NULL DEFAULT '{}';  -- JSON: settings, checksums, dataset
    CREATE TABLE system_samples (
        point_id                INTEGER NOT NULL REFERENCES points(id),
        second                  REAL NOT NULL,
        cpu_user_pct            REAL,
        cpu_system_pct          REAL,
        cpu_iowait_pct          REAL,
        cpu_steal_pct           REAL,
        cpu_idle_pct            REAL,
        context_switches_per_s  REAL,
        disk_read_bytes_per_s   REAL,
        disk_write_bytes_per_s  REAL,
        memory_used_bytes       INTEGER,
        server_cpu              REAL,   -- cores used by the database server's processes
        loadgen_cpu             REAL    -- cores used by the load generator
    );
    CREATE INDEX system_samples_point ON system_samples(point_id);
    """,
    # 4: the hourly price of what was measured (run --price-per-hour), for price/performance.
    """
    ALTER TABLE runs ADD COLUMN price_per_hour REAL;
    """,
    # 5: results imported from files measured elsewhere.
    """
    ALTER TABLE points ADD COLUMN source TEXT;  -- JSON for imported points: file, lines, sha256; NULL if measured
    CREATE TABLE imports (
        sha256       TEXT PRIMARY KEY,  -- of the file's content: the same file twice adds nothing
        file         TEXT NOT NULL,
        run_ids      TEXT NOT NULL,     -- JSON array
        points       INTEGER NOT NULL,
        imported_at  TEXT NOT NULL
    );
    """,
    # 6: warm-up runs (--warmup) are stored apart from the measured points.
    """
    ALTER TABLE points ADD COLUMN phase TEXT NOT NULL DEFAULT 'measured' CHECK (phase IN ('measured', 'warmup'));
    """,
    # 7: studies, variants, tool options and configuration keys (filled in for older
    # points by _backfill_config, from what they stored).
    """
    CREATE TABLE studies (
        sha256  TEXT PRIMARY KEY,   -- of the text
        name    TEXT NOT NULL,
        source  TEXT NOT NULL,      -- the file, a bundled study, or command-line flags
        text    TEXT NOT NULL       -- the study file (or the flags), verbatim
    );
    ALTER TABLE runs ADD COLUMN study_sha256 TEXT REFERENCES studies(sha256);
    ALTER TABLE runs ADD COLUMN variant TEXT NOT NULL DEFAULT '';
    ALTER TABLE runs ADD COLUMN flavour TEXT;      -- postgresql, mariadb, mysql
    ALTER TABLE runs ADD COLUMN currency TEXT;     -- of price_per_hour
    ALTER TABLE points ADD COLUMN variant TEXT NOT NULL DEFAULT '';
    ALTER TABLE points ADD COLUMN options TEXT NOT NULL DEFAULT '{}';  -- JSON: the study's tool options
    ALTER TABLE points ADD COLUMN warmup_s INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE points ADD COLUMN config TEXT;      -- JSON: the configuration key (configkey.py)
    ALTER TABLE points ADD COLUMN config_key TEXT;  -- its digest: points of one key may be pooled
    CREATE INDEX points_config ON points(config_key);
    """,
    # 8: the `dbarena run` a run belongs to (one per engine and variant), for --resume.
    """
    ALTER TABLE runs ADD COLUMN invocation TEXT;  -- a UUID; NULL before schema 8
    CREATE INDEX runs_invocation ON runs(invocation);
    """,
    # 9: why a run ended as it did (e.g. `killed`: its owner died without finishing it).
    """
    ALTER TABLE runs ADD COLUMN status_reason TEXT;
    """,
    # 10: each point's derived figures (steady state, interval, warnings), cached with the
    # version of the estimator that computed them (analysis.ESTIMATOR_VERSION): computed
    # from the stored series, never edited; recomputed when the estimator changes.
    """
    CREATE TABLE point_derived (
        point_id   INTEGER PRIMARY KEY REFERENCES points(id),
        estimator  INTEGER NOT NULL,
        fields     TEXT NOT NULL    -- JSON: analysis.analyse_point's figures
    );
    """,
    # 11: global identities and a lean points table. Runs get a UUID (so that stores
    # merge); host facts are kept once per host, by fingerprint; raw outputs move to a
    # table of their own, compressed, read only when asked. (_move_hosts_and_raw
    # fills the new tables from what older stores kept.)
    """
    ALTER TABLE runs ADD COLUMN uuid TEXT;   -- older runs: a UUID derived from the run (below)
    CREATE UNIQUE INDEX runs_uuid ON runs(uuid);
    CREATE TABLE hosts (
        fingerprint  TEXT PRIMARY KEY,   -- sha256 of the facts' canonical JSON
        facts        TEXT NOT NULL       -- JSON: hostinfo.host_facts()
    );
    ALTER TABLE runs ADD COLUMN host_fingerprint TEXT REFERENCES hosts(fingerprint);
    CREATE TABLE raw_outputs (
        point_id  INTEGER PRIMARY KEY REFERENCES points(id),
        codec     TEXT NOT NULL,   -- zlib
        stdout    BLOB NOT NULL,
        stderr    BLOB NOT NULL
    );
    """,
    # 12: per-second series keyed by (point, second), stored in that order (WITHOUT
    # ROWID: no row id, no second index); SQL views for dashboards (views.py).
    """
    CREATE TABLE samples_keyed (
        point_id           INTEGER NOT NULL REFERENCES points(id),
        second             REAL NOT NULL,
        tps                REAL NOT NULL,
        latency_ms         REAL,
        latency_stddev_ms  REAL,
        failed             INTEGER,
        lag_ms             REAL,
        skipped            INTEGER,
        retried            INTEGER,
        retries            INTEGER,
        threads            INTEGER,
        qps                REAL,
        reads_per_s        REAL,
        writes_per_s       REAL,
        other_per_s        REAL,
        latency_percentile REAL,
        latency_pct_ms     REAL,
        errors_per_s       REAL,
        reconnects_per_s   REAL,
        PRIMARY KEY (point_id, second)
    ) WITHOUT ROWID;
    INSERT INTO samples_keyed SELECT point_id, second, tps, latency_ms, latency_stddev_ms, failed, lag_ms, skipped,
        retried, retries, threads, qps, reads_per_s, writes_per_s, other_per_s, latency_percentile, latency_pct_ms,
        errors_per_s, reconnects_per_s FROM samples ORDER BY point_id, second;
    DROP TABLE samples;
    ALTER TABLE samples_keyed RENAME TO samples;
    CREATE TABLE system_samples_keyed (
        point_id                INTEGER NOT NULL REFERENCES points(id),
        second                  REAL NOT NULL,
        cpu_user_pct            REAL,
        cpu_system_pct          REAL,
        cpu_iowait_pct          REAL,
        cpu_steal_pct           REAL,
        cpu_idle_pct            REAL,
        context_switches_per_s  REAL,
        disk_read_bytes_per_s   REAL,
        disk_write_bytes_per_s  REAL,
        memory_used_bytes       INTEGER,
        server_cpu              REAL,
        loadgen_cpu             REAL,
        PRIMARY KEY (point_id, second)
    ) WITHOUT ROWID;
    INSERT INTO system_samples_keyed SELECT point_id, second, cpu_user_pct, cpu_system_pct, cpu_iowait_pct,
        cpu_steal_pct, cpu_idle_pct, context_switches_per_s, disk_read_bytes_per_s, disk_write_bytes_per_s,
        memory_used_bytes, server_cpu, loadgen_cpu FROM system_samples ORDER BY point_id, second;
    DROP TABLE system_samples;
    ALTER TABLE system_samples_keyed RENAME TO system_samples;
    """ + views.sqlite(12),
    # 13: latency percentiles p90 and p99.9; every point's latency histogram (an HDR
    # histogram's encoding with the exact count, sum, min and max: latency.py), so that
    # summaries take percentiles of merged histograms.
    """
    ALTER TABLE points ADD COLUMN latency_p90_ms REAL;
    ALTER TABLE points ADD COLUMN latency_p999_ms REAL;
    CREATE TABLE latency_histograms (
        point_id  INTEGER PRIMARY KEY REFERENCES points(id),
        record    TEXT NOT NULL
    );
    """,
    # 14: v_points shows every latency percentile a point stores, in order (p50, p90,
    # p95, p99, p99.9): 13 added p90 and p99.9 to the table but not to the view. Its
    # columns change, so the views are dropped and created again (views.py).
    views.DROP + views.sqlite(14),
]

SCHEMA_VERSION = len(MIGRATIONS)

_MEASUREMENT_COLUMNS = (
    "tps", "transactions", "qps", "queries", "failed_transactions", "retried_transactions", "retries",
    "errors", "reconnects", "latency_avg_ms", "latency_stddev_ms", "latency_min_ms", "latency_max_ms",
    "latency_p50_ms", "latency_p95_ms", "latency_p99_ms", "initial_connection_ms",
    "run_avg_s", "run_min_s", "run_max_s", "latency_p90_ms", "latency_p999_ms",
)
SYSTEM_COLUMNS = (
    "second", "cpu_user_pct", "cpu_system_pct", "cpu_iowait_pct", "cpu_steal_pct", "cpu_idle_pct",
    "context_switches_per_s", "disk_read_bytes_per_s", "disk_write_bytes_per_s", "memory_used_bytes",
    "server_cpu", "loadgen_cpu",
)
_SAMPLE_COLUMNS = (
    "second", "tps", "latency_ms", "latency_stddev_ms", "failed", "lag_ms", "skipped", "retried", "retries",
    "threads", "qps", "reads_per_s", "writes_per_s", "other_per_s", "latency_percentile", "latency_pct_ms",
    "errors_per_s", "reconnects_per_s",
)


_RUN_NAMESPACE = uuid.UUID("6f2b8a0e-5d1c-4e8f-9a3b-2c7d4e5f6a10")  # dbarena's, for runs older than schema 11


def _pack(text: str) -> bytes:
    return zlib.compress(text.encode(), 6)


def _unpack(codec: str, blob: bytes) -> str:
    if codec != "zlib":
        raise StoreError(f"raw output compressed with {codec!r}, which this dbarena cannot read: upgrade dbarena")
    return zlib.decompress(blob).decode()


@contextlib.contextmanager
def _busy_timeout_restored(db: sqlite3.Connection) -> Iterator[None]:
    try:
        yield
    finally:
        db.execute("PRAGMA busy_timeout = 60000")


def _chunks(ids: list[int], size: int = 900) -> Iterator[list[int]]:
    # Below SQLite's smallest default limit on bound parameters (999 before 3.32).
    for i in range(0, len(ids), size):
        yield ids[i:i + size]


def _decoder(then: Callable[[Any], Any] = lambda value: value) -> Callable[[str | None], Any]:
    """JSON text -> value, each distinct text decoded once: the points of one
    configuration share their params, options and config, so a read of 100 k points
    decodes a few hundred texts, not half a million. Rows share the decoded objects,
    which readers do not modify."""
    seen: dict[str, Any] = {}

    def decode(text: str | None) -> Any:
        if text is None:
            return None
        try:
            return seen[text]
        except KeyError:
            value = seen[text] = then(orjson.loads(text))
            return value

    return decode


def _ensure_sqrt(db: sqlite3.Connection) -> None:
    """The views use sqrt(), one of SQLite's optional math functions (on in Debian's and
    Python's builds since 3.35); where a build lacks it, dbarena supplies its own."""
    try:
        db.execute("SELECT sqrt(4)")
    except sqlite3.OperationalError:
        db.create_function("sqrt", 1, lambda x: None if x is None else float(x) ** 0.5, deterministic=True)


def _utc(ts: datetime) -> str:
    return ts.astimezone(timezone.utc).isoformat(timespec="seconds")


def now_utc() -> datetime:
    return datetime.now(timezone.utc)


class Store:
    """The results store: an SQLite file (a path) or a PostgreSQL database (a
    postgresql:// URL, its password from PGPASSWORD or ~/.pgpass). Both hold the same
    tables; the SQL below is written once, in SQLite's spelling, and pgstore.Connection
    translates it."""

    def __init__(self, location: str | Path):
        self.postgresql = pgstore.is_url(location)
        self.path: Path | None = None
        self.db: SqlConnection
        if self.postgresql:
            url = pgstore.check_url(str(location))
            self.location = url
            self.errors: tuple[type[Exception], ...] = pgstore.errors()
            self.db = pgstore.Connection(url)
            try:
                pgstore.migrate(self.db, SCHEMA_VERSION, _utc(now_utc()))
                self._after_migrations()
            except StoreError as exc:
                self.db.close()
                raise StoreError(f"store {url}: {exc}".replace(f"store {url}: store ", f"store {url}: ")) from None
            except self.errors as exc:
                self.db.close()
                raise StoreError(f"store {url}: {pgstore._first_line(exc)}") from None
            return
        self.path = Path(location)
        self.location = str(self.path)
        self.errors = (sqlite3.OperationalError,)
        if not self.path.parent.is_dir():
            raise StoreError(f"store {self.path}: directory {self.path.parent} does not exist")
        try:
            # A reader (`dbarena results` during a run) may hold the file for a while:
            # wait for it rather than stop a benchmark.
            self.db = sqlite3.connect(self.path, timeout=60)
            self.db.execute("PRAGMA foreign_keys = ON")
            _ensure_sqrt(self.db)
            self._migrate()
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"store {self.path}: {exc}") from None

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @property
    def version(self) -> int:
        if isinstance(self.db, pgstore.Connection):
            return pgstore.version(self.db)
        return self.db.execute("PRAGMA user_version").fetchone()[0]

    def _migrate(self) -> None:
        assert isinstance(self.db, sqlite3.Connection)
        current = self.version
        if current > SCHEMA_VERSION:
            raise StoreError(
                f"store {self.path} has schema version {current}, newer than this dbarena "
                f"understands ({SCHEMA_VERSION}): upgrade dbarena"
            )
        for number in range(current + 1, SCHEMA_VERSION + 1):
            # executescript commits first; each migration is then one transaction.
            self.db.executescript(
                "BEGIN;\n"
                "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL);\n"
                + MIGRATIONS[number - 1]
                + f"\nINSERT INTO schema_migrations VALUES ({number}, '{_utc(now_utc())}');"
                + f"\nPRAGMA user_version = {number};\nCOMMIT;"
            )
        self._after_migrations()

    def _after_migrations(self) -> None:
        # The data steps of migrations 7 and 11, also when an earlier open was stopped
        # half-way (each is one transaction, so it is either done or not begun).
        if self.version >= 7 and self.db.execute("SELECT 1 FROM points WHERE config_key IS NULL LIMIT 1").fetchone():
            self._backfill_config()
        if self.version >= 11 and self.db.execute(
                "SELECT 1 FROM runs WHERE host_fingerprint IS NULL OR uuid IS NULL LIMIT 1").fetchone():
            self._move_hosts_and_raw()

    def _move_hosts_and_raw(self) -> None:
        """Schema 11 for rows stored before it: host facts into `hosts`, raw outputs
        into `raw_outputs` (compressed), in one transaction."""
        with self.db:
            for run_id, facts, label, host, engine, target, started, variant in self.db.execute(
                    "SELECT id, host_facts, label, host, engine, target, started_at, variant FROM runs"
                    " WHERE host_fingerprint IS NULL").fetchall():
                fingerprint = self._host(json.loads(facts))
                # Derived from the run, not random: two copies of one old store migrate
                # to the same identities, so merging both adds the runs once.
                identity = uuid.uuid5(_RUN_NAMESPACE, json.dumps([run_id, label, host, engine, target, started,
                                                                  variant, fingerprint]))
                self.db.execute("UPDATE runs SET host_fingerprint = ?, host_facts = '{}', uuid = ? WHERE id = ?",
                                (fingerprint, str(identity), run_id))
            cur = self.db.execute("SELECT id, stdout, stderr FROM points WHERE id NOT IN "
                                  "(SELECT point_id FROM raw_outputs)")
            while batch := cur.fetchmany(500):
                self.db.executemany("INSERT INTO raw_outputs VALUES (?, 'zlib', ?, ?)",
                                    [(pid, _pack(out), _pack(err)) for pid, out, err in batch])
            self.db.execute("UPDATE points SET stdout = '', stderr = '' WHERE stdout != '' OR stderr != ''")

    def _host(self, facts: dict) -> str:
        """The fingerprint of these host facts, stored once (uncommitted)."""
        text = json.dumps(facts, sort_keys=True)
        fingerprint = hashlib.sha256(text.encode()).hexdigest()
        self.db.execute("INSERT OR IGNORE INTO hosts VALUES (?, ?)", (fingerprint, text))
        return fingerprint

    def _backfill_config(self) -> None:
        """Configuration keys for points stored before schema 7 and imported ones, from
        what they kept: the point's tool options, the run's options (settings, targets,
        --warmup), server version and host facts."""
        rows = self.db.execute(
            "SELECT p.id, p.engine, p.workload, p.threads, p.clients, p.duration_s, p.params, p.phase,"
            " p.options, p.variant, r.options, r.server_version, COALESCE(h.facts, r.host_facts), r.target_facts"
            " FROM points p JOIN runs r ON r.id = p.run_id LEFT JOIN hosts h ON h.fingerprint = r.host_fingerprint"
            " WHERE p.config_key IS NULL"
        ).fetchall()
        with self.db:
            for pid, engine, workload, threads, clients, duration_s, params, phase, point_options, variant, options, \
                    version, host, facts in rows:
                options, host, facts = json.loads(options), json.loads(host), json.loads(facts)
                target = (options.get("targets") or {}).get(engine)
                settings = {} if target else options.get({"postgres": "pg_settings"}.get(engine, "mysql_settings"), {})
                key = configkey.build(
                    engine=engine, workload=workload, threads=threads, clients=clients,
                    # Before schema 7 mysqlslap was the one tool bounded by queries, not seconds;
                    # an imported summary without a time has duration 0: unknown.
                    duration_s=None if workload == "mysqlslap" or not duration_s else duration_s,
                    warmup_s=0 if phase == "warmup" else int(options.get("warmup_s") or 0),
                    # The point's own tool options (an import's query mode, a sysbench
                    # script's --options); none before schema 7.
                    params=json.loads(params), options=json.loads(point_options or "{}"), settings=settings or {},
                    variant=variant or "",
                    server_version=version, flavour=configkey.flavour_of(engine, version),
                    host=configkey.host_identity(host, target, facts.get("server_physical_cores"),
                                                 facts.get("server_hardware_threads")),
                )
                self.db.execute("UPDATE points SET config = ?, config_key = ?, warmup_s = ? WHERE id = ?",
                                (json.dumps(key, sort_keys=True), configkey.digest(key), key["warmup_s"], pid))

    # ------------------------------------------------------------------ writing

    @contextlib.contextmanager
    def _writing(self) -> Iterator[None]:
        """One committed transaction; a store that cannot be written (disk full,
        read-only, locked by another writer) is a StoreError of one line."""
        try:
            with self.db:
                yield
        except self.errors as exc:
            raise StoreError(f"store {self.location} cannot be written: {pgstore._first_line(exc)}") from None

    def _insert_id(self, sql: str, args: tuple) -> int:
        """Insert one row; its new id (uncommitted)."""
        if isinstance(self.db, pgstore.Connection):
            return int(pgstore._scalar(self.db, sql + " RETURNING id", args))
        assert isinstance(self.db, sqlite3.Connection)
        cur = self.db.execute(sql, args)
        assert cur.lastrowid is not None
        return cur.lastrowid

    def begin_run(self, run: RunInfo, status: str = "running") -> int:
        with self._writing():
            return self._insert_run(run, status)

    def _insert_run(self, run: RunInfo, status: str, identity: str | None = None) -> int:
        """Uncommitted: the callers own the transaction."""
        from dbarena import __version__

        if run.study is not None:
            self.db.execute("INSERT OR IGNORE INTO studies (sha256, name, source, text) VALUES (?, ?, ?, ?)",
                            (run.study.sha256, run.study.name, run.study.source, run.study.text))
        return self._insert_id(
            "INSERT INTO runs (label, host, engine, target, server_version, tool_versions, options,"
            " host_facts, target_facts, dbarena_version, started_at, status, price_per_hour, currency, variant,"
            " flavour, study_sha256, invocation, uuid, host_fingerprint)"
            " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                run.label, run.host, run.engine, run.target, run.server_version,
                json.dumps(run.tool_versions, sort_keys=True), json.dumps(run.options, sort_keys=True),
                "{}", json.dumps(run.target_facts, sort_keys=True),
                __version__, _utc(run.started_at), status, run.price_per_hour, run.currency, run.variant,
                run.flavour, run.study.sha256 if run.study is not None else None, run.invocation,
                identity or str(uuid.uuid4()), self._host(run.host_facts),
            ),
        )

    def update_target_facts(self, run_id: int, facts: dict) -> None:
        """Merge facts learned during the run (dataset size after preparation)."""
        current = json.loads(self.db.execute("SELECT target_facts FROM runs WHERE id = ?", (run_id,)).fetchone()[0])
        with self._writing():
            self.db.execute("UPDATE runs SET target_facts = ? WHERE id = ?",
                            (json.dumps({**current, **facts}, sort_keys=True), run_id))

    def reopen_run(self, run_id: int, options: dict) -> None:
        """A run continued by --resume: running again, with the options of this session."""
        with self._writing():
            self.db.execute("UPDATE runs SET status = 'running', status_reason = NULL, ended_at = NULL, options = ?"
                            " WHERE id = ?",
                            (json.dumps(options, sort_keys=True), run_id))

    def invocation_runs(self, invocation: str) -> list[dict]:
        ids = [i for (i,) in self.db.execute("SELECT id FROM runs WHERE invocation = ? ORDER BY id", (invocation,))]
        return [r for r in map(self.run, ids) if r is not None]

    def finish_run(self, run_id: int, status: str, reason: str | None = None) -> None:
        with self._writing():
            self.db.execute("UPDATE runs SET status = ?, status_reason = ?, ended_at = ? WHERE id = ?",
                            (status, reason, _utc(now_utc()), run_id))

    def add_point(self, run_id: int, result: PointResult, config: dict | None = None) -> int:
        """Store one finished point, its configuration key and its samples, committed at once.
        StoreError (one line) when the store cannot be written: disk full, read-only, locked."""
        with self._writing():
            point_id = self._insert_point(run_id, result, config=config)
        if config is None:
            self._backfill_config()  # a key from what the point and its run hold
        return point_id

    def _insert_point(self, run_id: int, result: PointResult, source: dict | None = None,
                      config: dict | None = None) -> int:
        """Uncommitted: the callers own the transaction."""
        m = result.measurement
        values = {c: (getattr(m, c) if m is not None else None) for c in _MEASUREMENT_COLUMNS}
        spec = result.spec
        params = dict(spec.params)
        point_id = self._insert_id(
            "INSERT INTO points (run_id, engine, workload, threads, clients, duration_s, repeat, scale, params,"
            " status, error, started_at, ended_at, command, exit_code, details, stdout, stderr, source, phase, "
            " variant, options, warmup_s, config, config_key, "
            + ", ".join(_MEASUREMENT_COLUMNS)
            + ") VALUES (" + ", ".join("?" * (25 + len(_MEASUREMENT_COLUMNS))) + ")",
            (
                run_id, spec.engine, spec.workload, spec.threads, spec.clients, spec.duration_s, spec.repeat,
                params.get("scale"), json.dumps(params, sort_keys=True),
                result.status, result.error, _utc(result.started_at), _utc(result.ended_at),
                json.dumps(list(result.command)), result.exit_code,
                json.dumps(m.details if m is not None else {}, sort_keys=True),
                "", "", json.dumps(source, sort_keys=True) if source else None, result.phase,
                spec.variant, json.dumps(dict(spec.options), sort_keys=True), spec.warmup_s,
                json.dumps(config, sort_keys=True) if config is not None else None,
                configkey.digest(config) if config is not None else None,
                *values.values(),
            ),
        )
        self.db.execute("INSERT INTO raw_outputs VALUES (?, 'zlib', ?, ?)",
                        (point_id, _pack(result.stdout), _pack(result.stderr)))
        if m is not None and m.latency_histogram is not None:
            self.db.execute("INSERT INTO latency_histograms (point_id, record) VALUES (?, ?)",
                            (point_id, json.dumps(m.latency_histogram, sort_keys=True)))
        self.db.executemany(
            f"INSERT INTO samples (point_id, {', '.join(_SAMPLE_COLUMNS)}) VALUES (?, {', '.join('?' * len(_SAMPLE_COLUMNS))})",
            [(point_id, *(getattr(s, c) for c in _SAMPLE_COLUMNS)) for s in result.samples],
        )
        self.db.executemany(
            f"INSERT INTO system_samples (point_id, {', '.join(SYSTEM_COLUMNS)})"
            f" VALUES (?, {', '.join('?' * len(SYSTEM_COLUMNS))})",
            [(point_id, *(getattr(s, c) for c in SYSTEM_COLUMNS)) for s in result.system],
        )
        return point_id

    def import_points(self, sha256: str, file: str, runs: list[tuple[RunInfo, list[tuple[PointResult, dict]]]],
                      replace: str | None = None) -> tuple[list[int], int] | None:
        """Store one imported file's runs and points in one transaction (all or nothing):
        (run ids, points an earlier import of it brought and this one replaced). None if
        a file with this content was imported before, unless `replace` (a digest of the
        new import's options): then what it brought is deleted first, in the same
        transaction, and the new runs get ids of their own."""
        with self._writing():
            before = self.db.execute("SELECT run_ids, points FROM imports WHERE sha256 = ?", (sha256,)).fetchone()
            replaced = 0
            if before is not None:
                if replace is None:
                    return None
                self._delete_runs(json.loads(before[0]))
                self.db.execute("DELETE FROM imports WHERE sha256 = ?", (sha256,))
                replaced = before[1]
            run_ids, count = [], 0
            for position, (run, points) in enumerate(runs):
                # From the file's content: the same file imported into two stores gives the
                # same runs, which a merge then adds once. A replacement is another import
                # of the file (other options): other runs.
                name = f"{sha256}:{position}" + (f":{replace}" if replace else "")
                run_id = self._insert_run(run, "imported", str(uuid.uuid5(_RUN_NAMESPACE, name)))
                run_ids.append(run_id)
                for result, source in points:
                    self._insert_point(run_id, result, source)
                    count += 1
                self.db.execute("UPDATE runs SET ended_at = started_at WHERE id = ?", (run_id,))
            self.db.execute("INSERT INTO imports VALUES (?, ?, ?, ?, ?)",
                            (sha256, file, json.dumps(run_ids), count, _utc(now_utc())))
        self._backfill_config()  # keys from what the import knows (no host, no settings)
        return run_ids, replaced

    def _delete_runs(self, run_ids: list[int]) -> None:
        """Runs, their points and everything keyed by those points (uncommitted)."""
        for chunk in _chunks(run_ids):
            marks = ", ".join("?" * len(chunk))
            for table in _POINT_TABLES:
                self.db.execute(f"DELETE FROM {table} WHERE point_id IN (SELECT id FROM points WHERE run_id IN "
                                f"({marks}))", tuple(chunk))
            self.db.execute(f"DELETE FROM points WHERE run_id IN ({marks})", tuple(chunk))
            self.db.execute(f"DELETE FROM runs WHERE id IN ({marks})", tuple(chunk))

    # ------------------------------------------------------------------ reading

    def points(self, *, run_id: int | None = None, labels: tuple[str, ...] = (), warmups: bool = False,
               study: str | None = None, variants: tuple[str, ...] = (), point_ids: tuple[int, ...] = ()
               ) -> list[dict]:
        """Stored points with their run's label, host, target and study, oldest first;
        warm-up runs (--warmup) only when asked for. `study` matches a study's name
        or the start of its hash. `point_ids`: only these (at most a few hundred)."""
        where: list[str] = [] if warmups else ["p.phase = 'measured'"]
        args: list[int | str] = []
        if point_ids:
            where.append(f"p.id IN ({', '.join('?' * len(point_ids))})")
            args.extend(point_ids)
        if run_id is not None:
            where.append("p.run_id = ?")
            args.append(run_id)
        if labels:
            where.append(f"r.label IN ({', '.join('?' * len(labels))})")
            args.extend(labels)
        if study is not None:
            where.append("(st.name = ? OR st.sha256 LIKE ?)")
            args.extend([study, f"{study}%"])
        if variants:
            where.append(f"p.variant IN ({', '.join('?' * len(variants))})")
            args.extend(variants)
        sql = (
            "SELECT p.id AS point_id, p.run_id, r.label, r.host, r.target, r.server_version, p.engine, p.workload,"
            " p.threads, p.clients, p.duration_s, p.repeat, p.scale, p.params, p.status, p.error, p.started_at,"
            " p.ended_at, p.source, p.phase, p.details, p.variant, p.options, p.warmup_s, p.config, p.config_key,"
            " st.name AS study, "
            + ", ".join(f"p.{c}" for c in _MEASUREMENT_COLUMNS)
            + " FROM points p JOIN runs r ON r.id = p.run_id LEFT JOIN studies st ON st.sha256 = r.study_sha256"
            + (" WHERE " + " AND ".join(where) if where else "")
            + " ORDER BY p.id"
        )
        with collector_paused():
            cur = self.db.execute(sql, args)
            names = [d[0] for d in cur.description]
            rows = [dict(zip(names, row)) for row in cur.fetchall()]
            decode = _decoder()
            # The histogram stays in the store; results show the rest (tpm, mix, consistency ...).
            details = _decoder(lambda d: {k: v for k, v in d.items() if k != "histogram_ms"})
            for row in rows:
                row["params"] = decode(row["params"])
                row["options"] = decode(row["options"])
                row["config"] = decode(row["config"] or None)
                row["source"] = decode(row["source"] or None)
                row["details"] = details(row["details"])
        bulk.keep(len(rows))
        return rows

    def runs_by_id(self, run_ids: Iterable[int]) -> dict[int, dict]:
        """Many runs in one query per chunk (see run())."""
        out = {}
        for chunk in _chunks(sorted(set(run_ids))):
            cur = self.db.execute(self._RUNS + f" WHERE r.id IN ({', '.join('?' * len(chunk))})", chunk)
            names = [d[0] for d in cur.description]
            for row in cur.fetchall():
                record = self._run_record(names, row)
                out[record["id"]] = record
        return out

    def series_of(self, table: str, point_ids: Iterable[int]) -> dict[int, list[dict]]:
        """Per-second rows of many points in one query per chunk: table is 'samples' or
        'system_samples'."""
        columns = {"samples": _SAMPLE_COLUMNS, "system_samples": SYSTEM_COLUMNS}[table]
        out: dict[int, list[dict]] = {}
        with collector_paused():
            for chunk in _chunks(sorted(set(point_ids))):
                cur = self.db.execute(
                    f"SELECT point_id, {', '.join(columns)} FROM {table} WHERE point_id IN "
                    f"({', '.join('?' * len(chunk))}) ORDER BY point_id, second", chunk)
                for row in cur.fetchall():
                    out.setdefault(row[0], []).append(dict(zip(columns, row[1:])))
        return out

    def derived(self, point_ids: Iterable[int], estimator: int) -> dict[int, dict]:
        """Cached derived figures of these points made by this estimator version."""
        wanted = set(point_ids)
        with collector_paused():
            if len(wanted) > 5000:  # most of a big store: one scan beats many IN lists
                found = {pid: orjson.loads(fields) for pid, fields in self.db.execute(
                    "SELECT point_id, fields FROM point_derived WHERE estimator = ?", (estimator,)) if pid in wanted}
                bulk.keep(len(found))
                return found
            out = {}
            for chunk in _chunks(sorted(wanted)):
                for pid, fields in self.db.execute(
                        f"SELECT point_id, fields FROM point_derived WHERE estimator = ? AND point_id IN "
                        f"({', '.join('?' * len(chunk))})", [estimator, *chunk]):
                    out[pid] = orjson.loads(fields)
            return out

    def save_derived(self, figures: dict[int, dict], estimator: int) -> None:
        """Cache derived figures; a store that cannot be written now just stays uncached."""
        if not figures:
            return
        rows = [(pid, estimator, json.dumps(f, sort_keys=True)) for pid, f in figures.items()]
        if isinstance(self.db, pgstore.Connection):
            with contextlib.suppress(*self.errors), self.db:
                self.db.executemany("INSERT INTO point_derived (point_id, estimator, fields) VALUES (?,?,?)"
                                    " ON CONFLICT (point_id) DO UPDATE SET estimator = excluded.estimator,"
                                    " fields = excluded.fields", rows)
            return
        assert isinstance(self.db, sqlite3.Connection)
        self.db.execute("PRAGMA busy_timeout = 0")  # a busy store is not worth waiting for here
        with contextlib.suppress(sqlite3.OperationalError), _busy_timeout_restored(self.db):
            with self.db:
                self.db.executemany("INSERT OR REPLACE INTO point_derived (point_id, estimator, fields) VALUES (?,?,?)",
                                    rows)

    def latency_histograms(self, point_ids: Iterable[int]) -> dict[int, dict]:
        """point id -> its stored latency histogram record (latency.Latencies.decode
        reads it); points without one are left out."""
        out: dict[int, dict] = {}
        for chunk in _chunks(sorted(set(point_ids))):
            rows = self.db.execute(
                f"SELECT point_id, record FROM latency_histograms WHERE point_id IN ({', '.join('?' * len(chunk))})",
                tuple(chunk))
            out.update((pid, json.loads(record)) for pid, record in rows)
        return out

    def samples(self, point_id: int) -> list[dict]:
        cur = self.db.execute(
            f"SELECT {', '.join(_SAMPLE_COLUMNS)} FROM samples WHERE point_id = ? ORDER BY second", (point_id,)
        )
        return [dict(zip(_SAMPLE_COLUMNS, row)) for row in cur.fetchall()]

    def system_samples(self, point_id: int) -> list[dict]:
        cur = self.db.execute(
            f"SELECT {', '.join(SYSTEM_COLUMNS)} FROM system_samples WHERE point_id = ? ORDER BY second", (point_id,)
        )
        return [dict(zip(SYSTEM_COLUMNS, row)) for row in cur.fetchall()]

    _RUNS = ("SELECT r.*, h.facts AS _host_facts FROM runs r"
             " LEFT JOIN hosts h ON h.fingerprint = r.host_fingerprint")

    @staticmethod
    def _run_record(names: list[str], row: tuple) -> dict:
        record = dict(zip(names, row))
        host = record.pop("_host_facts")
        if host is not None:
            record["host_facts"] = host  # kept once per host since schema 11
        for key in ("tool_versions", "options", "host_facts", "target_facts"):
            record[key] = json.loads(record[key])
        return record

    def runs(self) -> list[dict]:
        cur = self.db.execute(self._RUNS + " ORDER BY r.id")
        names = [d[0] for d in cur.description]
        return [self._run_record(names, row) for row in cur.fetchall()]

    def run(self, run_id: int) -> dict | None:
        cur = self.db.execute(self._RUNS + " WHERE r.id = ?", (run_id,))
        row = cur.fetchone()
        return None if row is None else self._run_record([d[0] for d in cur.description], row)

    def study_text(self, sha256: str) -> dict | None:
        row = self.db.execute("SELECT name, source, text FROM studies WHERE sha256 = ?", (sha256,)).fetchone()
        return None if row is None else {"name": row[0], "source": row[1], "text": row[2], "sha256": sha256}

    def raw_output(self, point_id: int) -> tuple[str, str]:
        """The tool's stdout and stderr of a point, verbatim."""
        row = self.db.execute("SELECT codec, stdout, stderr FROM raw_outputs WHERE point_id = ?",
                              (point_id,)).fetchone()
        if row is None:
            raise StoreError(f"no point {point_id} in {self.location}")
        return _unpack(row[0], row[1]), _unpack(row[0], row[2])


# ------------------------------------------------------------------ merging stores

# Tables whose rows belong to a point, copied with the point's new id.
_POINT_TABLES = ("samples", "system_samples", "raw_outputs", "point_derived", "latency_histograms")


def merge(into: Store, other: str | Path) -> tuple[int, int]:
    """Bring another store's runs (points, series, raw outputs, studies, hosts) into
    `into`; (runs, points) added. Runs already there (by UUID) are skipped, so merging a
    store twice adds nothing. Either store may be SQLite or PostgreSQL. An SQLite file is
    read from a migrated copy (the file itself is left as it is); a newer schema is
    refused. All or nothing: one transaction."""
    if pgstore.is_url(other):
        if str(other) == into.location:
            raise StoreError(f"merge: {other} is the store being merged into")
        with Store(str(other)) as source:
            return _merge_from(into, source, str(other))
    other = Path(other)
    if not other.is_file():
        raise StoreError(f"merge: no store {other}")
    if into.path is not None and other.resolve() == into.path.resolve():
        raise StoreError(f"merge: {other} is the store being merged into")
    with tempfile.TemporaryDirectory(prefix="dbarena-merge-") as tmp:
        copy = Path(tmp) / "other.db"
        try:
            # SQLite's online backup: a consistent copy even of a store being written.
            with contextlib.closing(sqlite3.connect(f"file:{other}?mode=ro", uri=True, timeout=60)) as source, \
                    contextlib.closing(sqlite3.connect(copy)) as dest:
                source.backup(dest)
            Store(copy).close()  # migrated to this dbarena's schema (or refused)
        except StoreError as exc:
            raise StoreError(str(exc).replace(str(copy), str(other))) from None
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"merge: {other}: {exc}") from None
        except OSError as exc:
            raise StoreError(f"merge: {other}: cannot copy it to {tmp}: {exc.strerror or exc}") from None
        if not isinstance(into.db, sqlite3.Connection):
            with Store(copy) as source:
                return _merge_from(into, source, str(other))
        db = into.db
        try:
            db.execute("ATTACH DATABASE ? AS src", (str(copy),))
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"merge: {other}: {exc}") from None
        try:
            with into._writing():
                return _merge_attached(db)
        except sqlite3.DatabaseError as exc:  # a damaged file: nothing was added
            raise StoreError(f"merge: {other}: {exc}") from None
        finally:
            db.execute("DETACH DATABASE src")


def _merge_from(into: Store, source: Store, name: str) -> tuple[int, int]:
    """merge() row by row, for a PostgreSQL store on either side (SQLite to SQLite goes
    through ATTACH, in SQL alone). New ids come from the target's own sequence (or after
    its largest id), so that writers of a shared store never collide with a merge."""
    caught: tuple[type[Exception], ...] = (sqlite3.DatabaseError, *into.errors, *source.errors)
    try:
        with into._writing():
            return _copy_runs(into, source)
    except caught as exc:
        raise StoreError(f"merge: {name}: {pgstore._first_line(exc)}") from None


def _select(store: Store, sql: str, args: Iterable = ()) -> tuple[list[str], list[tuple]]:
    cur = store.db.execute(sql, tuple(args))
    return [d[0] for d in cur.description], [tuple(r) for r in cur.fetchall()]


def _new_ids(into: Store, table: str, count: int) -> list[int]:
    if isinstance(into.db, pgstore.Connection):
        return pgstore.next_ids(into.db, table, count)
    top = into.db.execute(f"SELECT COALESCE(MAX(id), 0) FROM {table}").fetchone()[0]
    return list(range(top + 1, top + 1 + count))


def _insert_rows(into: Store, table: str, columns: list[str], rows: list[tuple], ignore: bool = False) -> None:
    if not rows:
        return
    if isinstance(into.db, pgstore.Connection) and not ignore:
        # COPY: a merged store brings hundreds of thousands of per-second rows.
        with into.db.raw.cursor() as cur, cur.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row)
        return
    into.db.executemany(f"INSERT {'OR IGNORE ' if ignore else ''}INTO {table} ({', '.join(columns)}) "
                        f"VALUES ({', '.join('?' * len(columns))})", rows)


def _copy_runs(into: Store, source: Store) -> tuple[int, int]:
    names, runs = _select(source, "SELECT * FROM runs ORDER BY id")
    uuid_at = names.index("uuid")
    known: set[str] = set()
    for chunk in _chunks([r[uuid_at] for r in runs]):
        known.update(u for (u,) in into.db.execute(
            f"SELECT uuid FROM runs WHERE uuid IN ({', '.join('?' * len(chunk))})", chunk))
    runs = [r for r in runs if r[uuid_at] not in known]
    if not runs:
        return 0, 0
    row_of = {n: i for i, n in enumerate(names)}
    for table, key, column in (("studies", "sha256", "study_sha256"), ("hosts", "fingerprint", "host_fingerprint")):
        wanted = sorted({r[row_of[column]] for r in runs if r[row_of[column]] is not None})
        for chunk in _chunks(wanted):
            cols, rows = _select(source, f"SELECT * FROM {table} WHERE {key} IN ({', '.join('?' * len(chunk))})",
                                 chunk)
            _insert_rows(into, table, cols, rows, ignore=True)
    at = row_of["id"]
    run_map = dict(zip((r[at] for r in runs), _new_ids(into, "runs", len(runs))))
    _insert_rows(into, "runs", names, [(*r[:at], run_map[r[at]], *r[at + 1:]) for r in runs])
    points = 0
    for run_chunk in _chunks(list(run_map), 50):
        cols, rows = _select(source, f"SELECT * FROM points WHERE run_id IN ({', '.join('?' * len(run_chunk))})"
                             " ORDER BY id", run_chunk)
        if not rows:
            continue
        pid, rid = cols.index("id"), cols.index("run_id")
        point_map = dict(zip((r[pid] for r in rows), _new_ids(into, "points", len(rows))))
        moved = []
        for r in rows:
            row = list(r)
            row[pid], row[rid] = point_map[r[pid]], run_map[r[rid]]
            moved.append(tuple(row))
        _insert_rows(into, "points", cols, moved)
        points += len(moved)
        for table in _POINT_TABLES:
            for point_chunk in _chunks(list(point_map), 100):
                tcols, trows = _select(source, f"SELECT * FROM {table} WHERE point_id IN "
                                       f"({', '.join('?' * len(point_chunk))})", point_chunk)
                at = tcols.index("point_id")
                _insert_rows(into, table, tcols, [(*t[:at], point_map[t[at]], *t[at + 1:]) for t in trows])
    # Imported files stay imported once: their run ids follow the runs.
    for sha256, file, run_ids, count, at in _select(source, "SELECT sha256, file, run_ids, points, imported_at"
                                                            " FROM imports")[1]:
        mapped = [run_map[r] for r in json.loads(run_ids) if r in run_map]
        if mapped:
            into.db.execute("INSERT OR IGNORE INTO imports VALUES (?, ?, ?, ?, ?)",
                            (sha256, file, json.dumps(mapped), count, at))
    return len(run_map), points


def _columns(db: sqlite3.Connection, table: str) -> list[str]:
    return [row[1] for row in db.execute(f"PRAGMA main.table_info({table})")]


def _merge_attached(db: sqlite3.Connection) -> tuple[int, int]:
    run_offset = db.execute("SELECT COALESCE(MAX(id), 0) FROM main.runs").fetchone()[0]
    point_offset = db.execute("SELECT COALESCE(MAX(id), 0) FROM main.points").fetchone()[0]
    db.execute("CREATE TEMP TABLE run_map AS SELECT id AS old, id + ? AS new FROM src.runs s "
               "WHERE NOT EXISTS (SELECT 1 FROM main.runs r WHERE r.uuid = s.uuid)", (run_offset,))
    db.execute("CREATE TEMP TABLE point_map AS SELECT p.id AS old, p.id + ? AS new, m.new AS run FROM src.points p "
               "JOIN temp.run_map m ON m.old = p.run_id", (point_offset,))
    try:
        merged = "SELECT {} FROM src.runs r JOIN temp.run_map m ON m.old = r.id"
        db.execute("INSERT OR IGNORE INTO main.studies SELECT * FROM src.studies WHERE sha256 IN "
                   f"({merged.format('r.study_sha256')})")
        db.execute("INSERT OR IGNORE INTO main.hosts SELECT * FROM src.hosts WHERE fingerprint IN "
                   f"({merged.format('r.host_fingerprint')})")
        runs = [c for c in _columns(db, "runs") if c != "id"]
        db.execute(f"INSERT INTO main.runs (id, {', '.join(runs)}) SELECT m.new, {', '.join('r.' + c for c in runs)} "
                   "FROM src.runs r JOIN temp.run_map m ON m.old = r.id")
        points = [c for c in _columns(db, "points") if c not in ("id", "run_id")]
        db.execute(f"INSERT INTO main.points (id, run_id, {', '.join(points)}) SELECT m.new, m.run, "
                   f"{', '.join('p.' + c for c in points)} FROM src.points p JOIN temp.point_map m ON m.old = p.id")
        for table in _POINT_TABLES:
            rest = [c for c in _columns(db, table) if c != "point_id"]
            db.execute(f"INSERT INTO main.{table} (point_id, {', '.join(rest)}) SELECT m.new, "
                       f"{', '.join('t.' + c for c in rest)} FROM src.{table} t JOIN temp.point_map m ON m.old = t.point_id")
        # Imported files stay imported once: their run ids follow the runs.
        new_run = dict(db.execute("SELECT old, new FROM temp.run_map").fetchall())
        for sha256, file, run_ids, count, at in db.execute("SELECT * FROM src.imports").fetchall():
            mapped = [new_run[r] for r in json.loads(run_ids) if r in new_run]
            if mapped:
                db.execute("INSERT OR IGNORE INTO main.imports VALUES (?, ?, ?, ?, ?)",
                           (sha256, file, json.dumps(mapped), count, at))
        added = (db.execute("SELECT COUNT(*) FROM temp.run_map").fetchone()[0],
                 db.execute("SELECT COUNT(*) FROM temp.point_map").fetchone()[0])
    finally:
        db.execute("DROP TABLE temp.run_map")
        db.execute("DROP TABLE temp.point_map")
    return added


def info(store: Store) -> dict:
    """What `dbarena store info` shows."""
    counts = {t: int(store.db.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0])
              for t in ("runs", "points", "samples", "system_samples", "studies", "hosts", "imports")}
    raw = store.db.execute("SELECT COALESCE(SUM(LENGTH(stdout) + LENGTH(stderr)), 0) FROM raw_outputs").fetchone()
    if isinstance(store.db, pgstore.Connection):
        size = pgstore.size_bytes(store.db)
    else:
        assert store.path is not None
        size = store.path.stat().st_size
    return {"path": store.location, "backend": "postgresql" if store.postgresql else "sqlite",
            "schema_version": store.version, "size_bytes": size,
            **counts, "raw_output_bytes_compressed": int(raw[0]),
            "labels": [l for (l,) in store.db.execute("SELECT DISTINCT label FROM runs ORDER BY label")]}
