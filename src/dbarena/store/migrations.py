"""SQLite's numbered migrations: SQL scripts applied in order, `PRAGMA user_version`
holding the version reached and `schema_migrations` recording when each was applied. A
store written by a newer dbarena is refused rather than misread. A released migration's
SQL never changes (stores of every version exist: tests/fixtures/stores/); the schema it
leads to is described in schema.py, and tests/unit/test_schema.py holds the two together.

Also the data steps of migrations 7 and 11 (configuration keys, host facts and raw
outputs of older rows), which run for both dialects.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import uuid
from pathlib import Path
from typing import Any

from dbarena.errors import StoreError
from dbarena.interfaces import SqlConnection
from dbarena.stats import configkey
from dbarena.store import views
from dbarena.store.encoding import RUN_NAMESPACE, now_utc, pack, utc


# (migrations' 26: what drops a group's summary; PostgreSQL's twin in postgres.py.)
GROUP_TRIGGERS_SQLITE = """
    CREATE TRIGGER IF NOT EXISTS groups_session_inserted AFTER INSERT ON session_summaries BEGIN
        UPDATE group_generation SET n = n + 1;
        DELETE FROM group_summaries WHERE config_key = NEW.config_key;
    END;
    CREATE TRIGGER IF NOT EXISTS groups_session_updated AFTER UPDATE ON session_summaries BEGIN
        UPDATE group_generation SET n = n + 1;
        DELETE FROM group_summaries WHERE config_key IN (OLD.config_key, NEW.config_key);
    END;
    CREATE TRIGGER IF NOT EXISTS groups_session_deleted AFTER DELETE ON session_summaries BEGIN
        UPDATE group_generation SET n = n + 1;
        DELETE FROM group_summaries WHERE config_key = OLD.config_key;
    END;
    CREATE TRIGGER IF NOT EXISTS groups_run_relabelled AFTER UPDATE OF label ON runs BEGIN
        UPDATE group_generation SET n = n + 1;
        DELETE FROM group_summaries WHERE label IN (OLD.label, NEW.label);
    END;
    CREATE TRIGGER IF NOT EXISTS groups_run_deleted AFTER DELETE ON runs BEGIN
        UPDATE group_generation SET n = n + 1;
        DELETE FROM group_summaries WHERE label = OLD.label;
    END;
"""

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
    # 15: the views judge each tool by its own metric (mysqlslap by the seconds it took:
    # `metric` 'seconds', `value` those seconds, a `better` column saying 'lower') and
    # count repeats from 1 as every other output does; the tables are unchanged.
    views.DROP + views.sqlite(15),
    # 16: the server's own view of each point (serverside/): its per-second series over
    # SQL as one JSON record (a 600 s point is one row to read, whatever the names its
    # server reports), with the point's bound and the evidence for it (stats/bound.py)
    # and its figures (per transaction, or shares of the wait samples) for comparisons.
    """
    CREATE TABLE server_series (
        point_id  INTEGER PRIMARY KEY REFERENCES points(id),
        bound     TEXT,
        evidence  TEXT,
        record    TEXT NOT NULL,
        figures   TEXT
    );
    """,
    # 17: runs removed by `dbarena store forget`, by UUID (a tombstone each), so that a
    # merge does not bring them back and carries the forgetting to the store merged
    # into; what the run was (label, engine, start, points) for the line that says so.
    """
    CREATE TABLE forgotten_runs (
        uuid          TEXT PRIMARY KEY NOT NULL,
        forgotten_at  TEXT NOT NULL,
        label         TEXT,
        engine        TEXT,
        started_at    TEXT,
        points        INTEGER NOT NULL
    );
    """,
    # 18: a point's key says what its tool measured beyond the bare run (`instruments`:
    # pgbench's -P, its per-transaction log), which costs throughput: pgbench points
    # stored before keys held it ran with -P 1 and their log. The points whose command
    # line holds either are listed here; after_migrations gives their keys the options
    # read off the command (configkey.instruments_in) and its new digest, a page at a time.
    """
    CREATE TABLE pending_rekey (point_id INTEGER PRIMARY KEY);
    INSERT INTO pending_rekey SELECT id FROM points WHERE config IS NOT NULL AND command LIKE '%pgbench%'
        AND (command LIKE '%"-P%' OR command LIKE '%"--progress%' OR command LIKE '%"-l"%'
             OR command LIKE '%"--log"%');
    """,
    # 19: the point a run is measuring, second by second, while it measures it (`dbarena
    # serve` shows it live): transient rows, removed in the transaction that stores the
    # point and when the run ends. An SQLite store keeps this table empty: a run writes
    # them to the sidecar STORE.live (store/live.py), which holds the same table, so
    # that the store's file is not written (nor synced) every second.
    """
    CREATE TABLE live_seconds (
        run_id         INTEGER NOT NULL,
        phase          TEXT NOT NULL,
        workload       TEXT NOT NULL,
        threads        INTEGER NOT NULL,
        clients        INTEGER NOT NULL,
        variant        TEXT NOT NULL,
        repeat         INTEGER NOT NULL,
        duration_s     REAL NOT NULL,
        stored_before  INTEGER NOT NULL,
        second         REAL NOT NULL,
        tps            REAL NOT NULL,
        PRIMARY KEY (run_id, second)
    );
    """,
    # 20: a point's key says whether its tools' connections were encrypted (`tls`: TLS
    # costs CPU on both ends): the points of runs whose target facts recorded TLS (`fleet
    # run --together`'s server, since it requires it) are listed for schema 18's data step,
    # which now also gives a key the protocol and cipher its run's facts name.
    """
    INSERT OR IGNORE INTO pending_rekey SELECT p.id FROM points p JOIN runs r ON r.id = p.run_id
        WHERE p.config IS NOT NULL AND r.target_facts LIKE '%"tls"%';
    """,
    # 21: a merge applies another store's tombstones only to runs it brought from that
    # store (merge.py): each store has an identity of its own (a random one, made here,
    # never exported: a store's run UUIDs are public in its bundles, its identity is
    # not), and each run a merge brings records the identity of the store it came from.
    # Runs merged before have none recorded: no other store's tombstone removes them.
    """
    CREATE TABLE store_identity (
        uuid  TEXT PRIMARY KEY NOT NULL
    );
    INSERT INTO store_identity VALUES (lower(hex(randomblob(16))));
    CREATE TABLE run_origins (
        uuid         TEXT PRIMARY KEY NOT NULL,
        merged_from  TEXT NOT NULL
    );
    """,
    # 22: the server's on-CPU profile of a point (--profile: run/profiling.py): its folded
    # stacks compressed (stats/profiles.py's text, zlib), the frequency they were taken
    # at and where the functions' names came from; beside them its summary, what a read
    # of many points takes without opening the stacks: the samples and the functions
    # that took most of them (self time, a JSON list of {function, share}).
    """
    CREATE TABLE profiles (
        point_id      INTEGER PRIMARY KEY REFERENCES points(id),
        codec         TEXT NOT NULL,
        folded        BLOB NOT NULL,
        frequency_hz  REAL NOT NULL,
        symbols       TEXT NOT NULL,
        samples       INTEGER NOT NULL,
        top           TEXT NOT NULL
    );
    """,
    # 23: each configuration's points in each session summarised as they are stored
    # (stats/analysis.session_summaries): what a view reads of a label it does not show,
    # instead of every point's row. Empty here: each run is summarised by the first read
    # that needs it (a store's derived figures may be of another estimator version, or
    # not computed yet), and by every point stored after.
    """
    CREATE TABLE session_summaries (
        run_id       INTEGER NOT NULL REFERENCES runs(id),
        config_key   TEXT NOT NULL,
        estimator    INTEGER NOT NULL,
        first_point  INTEGER NOT NULL,
        points       INTEGER NOT NULL,
        runs         INTEGER NOT NULL,
        failed       INTEGER NOT NULL,
        mean         REAL,
        total        REAL,
        squares      REAL,
        warnings     INTEGER NOT NULL,
        bounds       TEXT NOT NULL,
        members      TEXT NOT NULL,
        PRIMARY KEY (run_id, config_key)
    );
    """,
    # 24: those summaries as SQL views (views.py: v_sessions, a row a session; v_levels,
    # the sessions of a label's configuration), for dashboards over a team's store.
    views.sessions_sqlite(),
    # 25: beside each session summary, what a summary reads of each of its points
    # (store/summaries.py: figures), so that a view summarises a configuration from its
    # sessions' rows rather than every point's. NULL in the rows written before: each
    # run's rows are written again by the first read that summarises it.
    # A point's row changed or deleted, its histogram or server series edited, its run's
    # host, facts (or its host's) or options changed, by dbarena or by hand: its run's summaries say what
    # the row said before, so they go, and the next read summarises the run again.
    # (Not on an insert: new points are folded in as they are stored, and a run whose
    # rows are short of its points is summarised again by the read that finds it so.)
    """
    ALTER TABLE session_summaries ADD COLUMN figures TEXT;
    CREATE TRIGGER IF NOT EXISTS summaries_point_updated AFTER UPDATE ON points BEGIN
        DELETE FROM session_summaries WHERE run_id IN (OLD.run_id, NEW.run_id);
    END;
    CREATE TRIGGER IF NOT EXISTS summaries_point_deleted AFTER DELETE ON points BEGIN
        DELETE FROM session_summaries WHERE run_id = OLD.run_id;
    END;
    CREATE TRIGGER IF NOT EXISTS summaries_run_updated AFTER UPDATE OF host, host_facts, host_fingerprint, options ON runs BEGIN
        DELETE FROM session_summaries WHERE run_id = OLD.id;
    END;
    CREATE TRIGGER IF NOT EXISTS summaries_host_updated AFTER UPDATE ON hosts BEGIN
        DELETE FROM session_summaries WHERE run_id IN
            (SELECT id FROM runs WHERE host_fingerprint IN (OLD.fingerprint, NEW.fingerprint));
    END;
    CREATE TRIGGER IF NOT EXISTS summaries_histogram_updated AFTER UPDATE ON latency_histograms BEGIN
        DELETE FROM session_summaries WHERE run_id IN (SELECT run_id FROM points WHERE id IN (OLD.point_id, NEW.point_id));
    END;
    CREATE TRIGGER IF NOT EXISTS summaries_histogram_deleted AFTER DELETE ON latency_histograms BEGIN
        DELETE FROM session_summaries WHERE run_id = (SELECT run_id FROM points WHERE id = OLD.point_id);
    END;
    CREATE TRIGGER IF NOT EXISTS summaries_server_updated AFTER UPDATE ON server_series BEGIN
        DELETE FROM session_summaries WHERE run_id IN (SELECT run_id FROM points WHERE id IN (OLD.point_id, NEW.point_id));
    END;
    CREATE TRIGGER IF NOT EXISTS summaries_server_deleted AFTER DELETE ON server_series BEGIN
        DELETE FROM session_summaries WHERE run_id = (SELECT run_id FROM points WHERE id = OLD.point_id);
    END;
    """,
    # 26: each label's configuration summarised over its sessions (store/groups.py), made
    # by the first read that finds it missing. A session's row of its configuration key
    # written, changed or dropped (the triggers above drop them when a row they came from
    # changes), or a run's label changed or the run gone: the groups it may have been part
    # of go too, every label's of that key (a row's label is its run's, which a trigger on
    # the session's row cannot read once the run is gone), and the next read makes them again.
    """
    CREATE TABLE group_summaries (
        label        TEXT NOT NULL,
        config_key   TEXT NOT NULL,
        estimator    INTEGER NOT NULL,
        first_point  INTEGER NOT NULL,
        summary      TEXT NOT NULL,
        PRIMARY KEY (label, config_key)
    );
    CREATE TABLE group_generation (n INTEGER NOT NULL);
    INSERT INTO group_generation VALUES (0);
    CREATE INDEX IF NOT EXISTS points_run_phase ON points(run_id, phase, status);
    """ + GROUP_TRIGGERS_SQLITE,
]

SCHEMA_VERSION = len(MIGRATIONS)


def migrate_sqlite(db: sqlite3.Connection, path: Path, target: int) -> None:
    """Bring an SQLite store to schema `target`, one transaction per migration; refuse
    a newer one."""
    current = db.execute("PRAGMA user_version").fetchone()[0]
    if current > target:
        raise StoreError(
            f"store {path} has schema version {current}, newer than this dbarena "
            f"understands ({target}): upgrade dbarena"
        )
    for number in range(current + 1, target + 1):
        # executescript commits first; each migration is then one transaction.
        db.executescript(
            "BEGIN;\n"
            "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL);\n"
            + MIGRATIONS[number - 1]
            + f"\nINSERT INTO schema_migrations VALUES ({number}, '{utc(now_utc())}');"
            + f"\nPRAGMA user_version = {number};\nCOMMIT;"
        )


# The tables every dbarena store has had since schema 1 (schema_migrations included:
# migration 1 creates it). A file or database holding other tables and not these, or
# these without schema_migrations, is another program's.
_OURS = ("schema_migrations", "runs", "points")


def foreign_tables(db: sqlite3.Connection) -> str | None:
    """Why an SQLite file that is not empty is not a dbarena store (None: it is one, or
    it holds nothing yet): what it holds instead, for the one-line refusal. Reads only
    the schema table, so that a foreign file is never written."""
    names = [n for (n,) in db.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')"
                                      " AND name NOT LIKE 'sqlite_%' ORDER BY name")]
    version = db.execute("PRAGMA user_version").fetchone()[0]
    if not names and version == 0:
        return None  # an SQLite file with nothing in it: a new store
    missing = [t for t in _OURS if t not in names]
    if not missing and version > 0:
        return None
    if not names:
        return f"it holds no table, and user_version {version}"
    shown = ", ".join(names[:6]) + (f" and {len(names) - 6} more" if len(names) > 6 else "")
    return f"it has tables {shown}" if missing else f"it has dbarena's tables but no schema version ({shown})"


def data_steps_pending(db: SqlConnection, version: int) -> bool:
    """Whether the data steps of migrations 7, 11 and 18 (and 20) have rows left to do."""
    return bool(
        (version >= 7 and db.execute("SELECT 1 FROM points WHERE config_key IS NULL LIMIT 1").fetchone())
        or (version >= 11 and db.execute(
            "SELECT 1 FROM runs WHERE host_fingerprint IS NULL OR uuid IS NULL LIMIT 1").fetchone())
        or (version >= 18 and db.execute("SELECT 1 FROM pending_rekey LIMIT 1").fetchone()))


def after_migrations(db: SqlConnection, version: int) -> None:
    """The data steps of migrations 7, 11 and 18 (and 20), also when an earlier open was stopped
    half-way (each is one transaction a page, so a page is either done or not begun)."""
    if version >= 7 and db.execute("SELECT 1 FROM points WHERE config_key IS NULL LIMIT 1").fetchone():
        backfill_config(db)
    if version >= 11 and db.execute(
            "SELECT 1 FROM runs WHERE host_fingerprint IS NULL OR uuid IS NULL LIMIT 1").fetchone():
        move_hosts_and_raw(db)
    if version >= 18 and db.execute("SELECT 1 FROM pending_rekey LIMIT 1").fetchone():
        rekey_instruments(db)


def rekey_instruments(db: SqlConnection) -> None:
    """The data step of schemas 18 and 20: the keys of the points listed in
    pending_rekey gain what their pgbench command line measured
    (configkey.instruments_in) and the TLS their run's connections had
    (configkey.tls_of of its target facts), and their new digest; a key that already
    holds either (a point stored by this dbarena) or a point with neither keeps its key.
    A page of points a transaction."""
    while True:
        rows = db.execute(
            "SELECT q.point_id, p.config, p.command, r.target_facts FROM pending_rekey q"
            " LEFT JOIN points p ON p.id = q.point_id LEFT JOIN runs r ON r.id = p.run_id"
            " ORDER BY q.point_id LIMIT ?", (_BACKFILL_PAGE,)).fetchall()
        if not rows:
            return
        with db:
            for pid, config, command, target_facts in rows:
                key = _facts(config)
                found = configkey.instruments_in(_words(command))
                tls = configkey.tls_of(_facts(target_facts))
                changed = False
                if key and found and "instruments" not in key:
                    key["instruments"] = list(found)
                    changed = True
                if key and tls is not None and "tls" not in key:
                    key["tls"] = tls
                    changed = True
                if changed:
                    db.execute("UPDATE points SET config = ?, config_key = ? WHERE id = ?",
                               (json.dumps(key, sort_keys=True), configkey.digest(key), pid))
                db.execute("DELETE FROM pending_rekey WHERE point_id = ?", (pid,))


def store_host(db: SqlConnection, facts: dict[str, Any]) -> str:
    """The fingerprint of these host facts, stored once (uncommitted)."""
    text = json.dumps(facts, sort_keys=True)
    fingerprint = hashlib.sha256(text.encode()).hexdigest()
    db.execute("INSERT OR IGNORE INTO hosts VALUES (?, ?)", (fingerprint, text))
    return fingerprint


def move_hosts_and_raw(db: SqlConnection) -> None:
    """Schema 11 for rows stored before it: host facts into `hosts`, raw outputs
    into `raw_outputs` (compressed), in one transaction."""
    with db:
        for run_id, facts, label, host, engine, target, started, variant in db.execute(
                "SELECT id, host_facts, label, host, engine, target, started_at, variant FROM runs"
                " WHERE host_fingerprint IS NULL").fetchall():
            fingerprint = store_host(db, _facts(facts))
            # Derived from the run, not random: two copies of one old store migrate
            # to the same identities, so merging both adds the runs once.
            identity = uuid.uuid5(RUN_NAMESPACE, json.dumps([run_id, label, host, engine, target, started,
                                                             variant, fingerprint]))
            db.execute("UPDATE runs SET host_fingerprint = ?, host_facts = '{}', uuid = ? WHERE id = ?",
                       (fingerprint, str(identity), run_id))
        cur = db.execute("SELECT id, stdout, stderr FROM points WHERE id NOT IN "
                         "(SELECT point_id FROM raw_outputs)")
        while batch := cur.fetchmany(500):
            db.executemany("INSERT INTO raw_outputs VALUES (?, 'zlib', ?, ?)",
                           [(pid, pack(_text(out)), pack(_text(err))) for pid, out, err in batch])
        db.execute("UPDATE points SET stdout = '', stderr = '' WHERE stdout != '' OR stderr != ''")


def _facts(text: Any) -> dict[str, Any]:
    """A run's own host facts (before schema 11), or none where they do not read as a
    JSON object (a store edited by hand): the run is then kept without them, as a read
    shows a run whose facts do not fit (edge.py), rather than the store not opening."""
    try:
        facts = json.loads(text)
    except (TypeError, ValueError):
        return {}
    return facts if isinstance(facts, dict) else {}


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""  # (an output that is not text: none)


def backfill_config(db: SqlConnection) -> None:
    """Configuration keys for points stored before schema 7 and imported ones, from
    what they kept: the point's tool options, the run's options (settings, targets,
    --warmup), server version and host facts. A page of points at a time: an import of a
    large file leaves hundreds of thousands without one."""
    after = 0
    while True:
        rows = db.execute(
            "SELECT p.id, p.engine, p.workload, p.threads, p.clients, p.duration_s, p.params, p.phase,"
            " p.options, p.variant, r.options, r.server_version, COALESCE(h.facts, r.host_facts), r.target_facts,"
            " p.warmup_s, r.flavour, p.command, p.details"
            " FROM points p JOIN runs r ON r.id = p.run_id LEFT JOIN hosts h ON h.fingerprint = r.host_fingerprint"
            " WHERE p.config_key IS NULL AND p.id > ? ORDER BY p.id LIMIT ?", (after, _BACKFILL_PAGE)
        ).fetchall()
        if not rows:
            return
        after = rows[-1][0]
        _backfill_rows(db, rows)


_BACKFILL_PAGE = 5000  # points given their configuration key at a time


def _words(command: str | None) -> list[str]:
    """A stored command (a JSON list of its words; the edge checks what is read back,
    not what a migration reads) as words; [] where it is not one."""
    try:
        words = json.loads(command or "[]")
    except ValueError:
        return []
    return [w for w in words if isinstance(w, str)] if isinstance(words, list) else []


def _load_generators(details: str | None) -> int:
    """The load generators a point's details name (import --together), else 1."""
    try:
        found = json.loads(details or "{}").get("load_generators")
    except (ValueError, AttributeError):
        return 1
    return found if isinstance(found, int) and not isinstance(found, bool) and found > 1 else 1


def _backfill_rows(db: SqlConnection, rows: list[Any]) -> None:
    with db:
        for pid, engine, workload, threads, clients, duration_s, params, phase, point_options, variant, options, \
                version, host, facts, point_warmup, flavour, command, details in rows:
            options, host, facts = json.loads(options), json.loads(host), json.loads(facts)
            target = (options.get("targets") or {}).get(engine)
            settings = {} if target else options.get({"postgres": "pg_settings"}.get(engine, "mysql_settings"), {})
            key = configkey.build(
                engine=engine, workload=workload, threads=threads, clients=clients,
                # Before schema 7 mysqlslap was the one tool bounded by queries, not seconds;
                # an imported summary without a time has duration 0: unknown.
                duration_s=None if workload == "mysqlslap" or not duration_s else duration_s,
                # A run's --warmup, or an imported point's own (sysbench 1.1's `Warmup time`).
                warmup_s=0 if phase == "warmup" else int(options.get("warmup_s") or point_warmup or 0),
                # The point's own tool options (an import's query mode, a sysbench
                # script's --options); none before schema 7.
                params=json.loads(params), options=json.loads(point_options or "{}"), settings=settings or {},
                variant=variant or "",
                # The flavour an import read from the output (a MariaDB banner), else the
                # one the family's name and the version line tell.
                server_version=version, flavour=flavour or configkey.flavour_of(engine, version),
                host=configkey.host_identity(host, target, facts.get("server_physical_cores"),
                                             facts.get("server_hardware_threads")),
                # What its command line measured beyond the bare tool (pgbench -P, -l).
                instruments=configkey.instruments_in(_words(command)),
                tls=configkey.tls_of(facts),  # its connections' encryption, where its run recorded it
                # The load generators of a point imported --together (its details say).
                load_generators=_load_generators(details),
            )
            db.execute("UPDATE points SET config = ?, config_key = ?, warmup_s = ? WHERE id = ?",
                       (json.dumps(key, sort_keys=True), configkey.digest(key), key["warmup_s"], pid))
