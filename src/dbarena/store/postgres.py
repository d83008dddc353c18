"""The PostgreSQL dialect of the results store: a shared database a team (or a fleet of
hosts) writes to, and Grafana or Superset reads.

Why two small dialect classes and not SQLAlchemy Core with Alembic: the store's SQL is
plain and nearly portable (placeholders, `INSERT OR IGNORE`, `RETURNING id` are the
differences, handled here); SQLite stores of schema 1 to 11 already exist in the wild
and migrate by `PRAGMA user_version` scripts that must keep working byte for byte;
psycopg is already a dependency (the PostgreSQL engine uses it). Alembic would add a
second history beside the first one for SQLite, and SQLAlchemy's import (about 0.2 s)
would be paid by every command. A new PostgreSQL store is created at `BASE_VERSION`
(`SCHEMA`, generated from the description in schema.py); one created by an older
dbarena (schema 12 or later: no PostgreSQL store is older) runs `MIGRATIONS` from its
version on, each the PostgreSQL twin of SQLite's.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Iterable, Sequence
from urllib.parse import parse_qs

from dbarena.store import schema, views
from dbarena.errors import StoreError, UsageError
from dbarena.limits import split_url
from dbarena.masking import masked

if TYPE_CHECKING:
    import psycopg

SCHEMES = ("postgresql", "postgres")


def errors() -> tuple[type[Exception], ...]:
    """psycopg's errors, imported only when a PostgreSQL store is used (the import
    costs about 0.2 s, which every SQLite command would otherwise pay)."""
    import psycopg

    return (psycopg.Error,)

# The whole schema at version BASE_VERSION, generated from its description (schema.py),
# the same tables and columns as an SQLite store of that version (so that one list of
# columns serves both and merge copies by name). Columns SQLite keeps from older schemas
# (points.stdout/stderr and runs.host_facts, empty since schema 11) are kept here too,
# for the same reason. Stores created at 12 (by dbarena before histograms) migrate by
# MIGRATIONS[13] and [14], those created at 13 (before v_points showed p90 and p99.9) by
# MIGRATIONS[14]; every store created before 15 (views by each tool's metric, repeats
# from 1) by MIGRATIONS[15]; every store created before 16 (the server's own series) by
# MIGRATIONS[16]; every store created before 17 (tombstones of forgotten runs) by
# MIGRATIONS[17]; every store created before 18 (keys with what pgbench measured) by
# MIGRATIONS[18]; every store created before 19 (the live seconds of a point being
# measured) by MIGRATIONS[19]; every store created before 20 (keys with the TLS their
# connections had) by MIGRATIONS[20]; every store created before 21 (each store's
# identity, merged runs' origins) by MIGRATIONS[21]; every store created before 22 (the
# points' on-CPU profiles) by MIGRATIONS[22]; every store created before 23 (the
# configurations' summaries by session) by MIGRATIONS[23]; every store created before 24
# (those summaries' views) by MIGRATIONS[24]; every store created before 25 (the summaries'
# points' figures, and the triggers that drop a run's summaries when its rows change) by
# MIGRATIONS[25]; every store created before 26 (each label's configurations summarised
# over their sessions) by MIGRATIONS[26].
BASE_VERSION = 26
SCHEMA = schema.postgresql_ddl()
# The store's own identity (schema 21, merge.py), made once: random, as SQLite's is.
_IDENTITY = "INSERT INTO store_identity VALUES (md5(random()::text || clock_timestamp()::text));\n"

# A run's session summaries go when a row they were made from changes (by dbarena or by
# hand: migrations.py's 25), and the next read summarises the run again.
SUMMARY_TRIGGERS = """
    CREATE OR REPLACE FUNCTION dbarena_summaries_of_point() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF TG_TABLE_NAME = 'points' THEN
            DELETE FROM session_summaries WHERE run_id = OLD.run_id;
            IF TG_OP = 'UPDATE' THEN DELETE FROM session_summaries WHERE run_id = NEW.run_id; END IF;
        ELSIF TG_TABLE_NAME = 'runs' THEN
            DELETE FROM session_summaries WHERE run_id = OLD.id;
        ELSIF TG_TABLE_NAME = 'hosts' THEN
            DELETE FROM session_summaries WHERE run_id IN
                (SELECT id FROM runs WHERE host_fingerprint IN (OLD.fingerprint, NEW.fingerprint));
        ELSE
            DELETE FROM session_summaries WHERE run_id IN (SELECT run_id FROM points WHERE id = OLD.point_id);
            IF TG_OP = 'UPDATE' THEN
                DELETE FROM session_summaries WHERE run_id IN (SELECT run_id FROM points WHERE id = NEW.point_id);
            END IF;
        END IF;
        RETURN NULL;
    END $$;
    DROP TRIGGER IF EXISTS summaries_point_changed ON points;
    CREATE TRIGGER summaries_point_changed AFTER UPDATE OR DELETE ON points
        FOR EACH ROW EXECUTE FUNCTION dbarena_summaries_of_point();
    DROP TRIGGER IF EXISTS summaries_run_updated ON runs;
    CREATE TRIGGER summaries_run_updated AFTER UPDATE OF host, host_facts, host_fingerprint, options ON runs
        FOR EACH ROW EXECUTE FUNCTION dbarena_summaries_of_point();
    DROP TRIGGER IF EXISTS summaries_host_updated ON hosts;
    CREATE TRIGGER summaries_host_updated AFTER UPDATE ON hosts
        FOR EACH ROW EXECUTE FUNCTION dbarena_summaries_of_point();
    DROP TRIGGER IF EXISTS summaries_histogram_changed ON latency_histograms;
    CREATE TRIGGER summaries_histogram_changed AFTER UPDATE OR DELETE ON latency_histograms
        FOR EACH ROW EXECUTE FUNCTION dbarena_summaries_of_point();
    DROP TRIGGER IF EXISTS summaries_server_changed ON server_series;
    CREATE TRIGGER summaries_server_changed AFTER UPDATE OR DELETE ON server_series
        FOR EACH ROW EXECUTE FUNCTION dbarena_summaries_of_point();
"""

# A label's configuration summarised over its sessions goes when one of those sessions'
# rows (or the label) changes (migrations.py's 26), and the next read makes it again.
GROUP_TRIGGERS = """
    CREATE OR REPLACE FUNCTION dbarena_groups_of_session() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        -- (The count first: a reader keeping groups takes it first too, then the groups' rows.)
        UPDATE group_generation SET n = n + 1;
        IF TG_TABLE_NAME = 'runs' THEN
            DELETE FROM group_summaries WHERE label = OLD.label;
            IF TG_OP = 'UPDATE' THEN DELETE FROM group_summaries WHERE label = NEW.label; END IF;
        ELSE
            IF TG_OP <> 'INSERT' THEN DELETE FROM group_summaries WHERE config_key = OLD.config_key; END IF;
            IF TG_OP <> 'DELETE' THEN DELETE FROM group_summaries WHERE config_key = NEW.config_key; END IF;
        END IF;
        RETURN NULL;
    END $$;
    DROP TRIGGER IF EXISTS groups_session_changed ON session_summaries;
    CREATE TRIGGER groups_session_changed AFTER INSERT OR UPDATE OR DELETE ON session_summaries
        FOR EACH ROW EXECUTE FUNCTION dbarena_groups_of_session();
    DROP TRIGGER IF EXISTS groups_run_changed ON runs;
    CREATE TRIGGER groups_run_changed AFTER UPDATE OF label OR DELETE ON runs
        FOR EACH ROW EXECUTE FUNCTION dbarena_groups_of_session();
"""

# Migrations of stores created at an older base: number -> SQL (each paired with the
# SQLite one). A new store is created at BASE_VERSION and runs none of them.
MIGRATIONS: dict[int, str] = {
    13: """
    ALTER TABLE points ADD COLUMN latency_p90_ms double precision;
    ALTER TABLE points ADD COLUMN latency_p999_ms double precision;
    CREATE TABLE latency_histograms (
        point_id  bigint PRIMARY KEY REFERENCES points(id),
        record    text NOT NULL
    );
    """,
    14: views.DROP + views.postgresql(14),
    15: views.DROP + views.postgresql(15),
    16: """
    CREATE TABLE server_series (
        point_id  bigint PRIMARY KEY REFERENCES points(id),
        bound     text,
        evidence  text,
        record    text NOT NULL,
        figures   text
    );
    """,
    17: """
    CREATE TABLE forgotten_runs (
        uuid          text PRIMARY KEY NOT NULL,
        forgotten_at  text NOT NULL,
        label         text,
        engine        text,
        started_at    text,
        points        integer NOT NULL
    );
    """,
    18: """
    CREATE TABLE pending_rekey (point_id bigint PRIMARY KEY);
    INSERT INTO pending_rekey SELECT id FROM points WHERE config IS NOT NULL AND command LIKE '%pgbench%'
        AND (command LIKE '%"-P%' OR command LIKE '%"--progress%' OR command LIKE '%"-l"%'
             OR command LIKE '%"--log"%');
    """,
    19: """
    CREATE UNLOGGED TABLE live_seconds (
        run_id         bigint NOT NULL,
        phase          text NOT NULL,
        workload       text NOT NULL,
        threads        integer NOT NULL,
        clients        integer NOT NULL,
        variant        text NOT NULL,
        repeat         integer NOT NULL,
        duration_s     double precision NOT NULL,
        stored_before  integer NOT NULL,
        second         double precision NOT NULL,
        tps            double precision NOT NULL,
        PRIMARY KEY (run_id, second)
    );
    """,
    20: """
    INSERT INTO pending_rekey SELECT p.id FROM points p JOIN runs r ON r.id = p.run_id
        WHERE p.config IS NOT NULL AND r.target_facts LIKE '%"tls"%' ON CONFLICT DO NOTHING;
    """,
    21: """
    CREATE TABLE store_identity (uuid text PRIMARY KEY NOT NULL);
    CREATE TABLE run_origins (uuid text PRIMARY KEY NOT NULL, merged_from text NOT NULL);
    """ + _IDENTITY,
    22: """
    CREATE TABLE profiles (
        point_id      bigint PRIMARY KEY REFERENCES points(id),
        codec         text NOT NULL,
        folded        bytea NOT NULL,
        frequency_hz  double precision NOT NULL,
        symbols       text NOT NULL,
        samples       bigint NOT NULL,
        top           text NOT NULL
    );
    """,
    23: """
    CREATE TABLE session_summaries (
        run_id       bigint NOT NULL REFERENCES runs(id),
        config_key   text NOT NULL,
        estimator    integer NOT NULL,
        first_point  bigint NOT NULL,
        points       integer NOT NULL,
        runs         integer NOT NULL,
        failed       integer NOT NULL,
        mean         double precision,
        total        double precision,
        squares      double precision,
        warnings     integer NOT NULL,
        bounds       text NOT NULL,
        members      text NOT NULL,
        PRIMARY KEY (run_id, config_key)
    );
    """,
    24: views.sessions_postgresql(),
    # (migrations.py's 25: a run's summaries go when a row they were made from changes.)
    25: "ALTER TABLE session_summaries ADD COLUMN figures text;\n" + SUMMARY_TRIGGERS,
    # (migrations.py's 26: each label's configuration summarised over its sessions.)
    26: """
    CREATE TABLE group_summaries (
        label        text NOT NULL,
        config_key   text NOT NULL,
        estimator    integer NOT NULL,
        first_point  bigint NOT NULL,
        summary      text NOT NULL,
        PRIMARY KEY (label, config_key)
    );
    CREATE TABLE group_generation (n bigint NOT NULL);
    INSERT INTO group_generation VALUES (0);
    CREATE INDEX IF NOT EXISTS points_run_phase ON points(run_id, phase, status);
    """ + GROUP_TRIGGERS,
}

# One lock for every dbarena that opens this database: hosts of a fleet that start at
# once must not create the schema twice.
_LOCK = 0x6462_6172_656E_6131 & 0x7FFF_FFFF_FFFF_FFFF


def is_url(location: object) -> bool:
    return isinstance(location, str) and location.split("://", 1)[0] in SCHEMES and "://" in location


def check_url(url: str) -> str:
    """The URL, refused with one line if it carries a password (it would show in process
    lists, state records and messages: PGPASSWORD or ~/.pgpass carry it instead)."""
    parts = split_url(url, "--store")
    if parts.password is not None or "password" in parse_qs(parts.query):
        raise UsageError("--store must not contain a password (it would show in process lists and logs): "
                         "put it in PGPASSWORD or ~/.pgpass")
    if not parts.path.strip("/") and "dbname" not in parse_qs(parts.query):
        raise UsageError(f"--store {masked(url)!r}: name the database, e.g. postgresql://user@host/results")
    return url


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


class Connection:
    """A psycopg connection that speaks the store's SQL: `?` placeholders and SQLite's
    `INSERT OR IGNORE` are translated; `with connection:` is one transaction (a savepoint
    when nested), as with sqlite3. Outside a transaction it autocommits, so that a
    long run holds no locks between its writes (a migration by another host would
    otherwise wait on it)."""

    def __init__(self, url: str):
        import psycopg

        try:
            self.raw = psycopg.connect(url, autocommit=True, connect_timeout=10, application_name="dbarena")
        except psycopg.Error as exc:
            raise StoreError(f"store {masked(url)}: cannot connect: {masked(_first_line(exc))}") from None
        self._transactions: list[Any] = []

    @staticmethod
    def translate(sql: str) -> str:
        sql = sql.replace("%", "%%").replace("?", "%s")
        if re.match(r"\s*INSERT OR IGNORE", sql):
            sql = re.sub(r"INSERT OR IGNORE", "INSERT", sql, count=1) + " ON CONFLICT DO NOTHING"
        return sql

    def execute(self, sql: str, args: Sequence[Any] = (), /) -> "psycopg.Cursor[Any]":
        return self.raw.execute(self.translate(sql), tuple(args))

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]], /) -> None:
        with self.raw.cursor() as cur:
            cur.executemany(self.translate(sql), list(rows))

    def __enter__(self) -> "Connection":
        tx = self.raw.transaction()
        tx.__enter__()
        self._transactions.append(tx)
        return self

    def __exit__(self, *exc: Any) -> None:
        self._transactions.pop().__exit__(*exc)

    def close(self) -> None:
        self.raw.close()


def _scalar(db: Connection, sql: str, args: Sequence[Any] = ()) -> Any:
    row = db.execute(sql, args).fetchone()
    assert row is not None  # an aggregate or a function call: always one row
    return row[0]


def version(db: Connection) -> int:
    if _scalar(db, "SELECT to_regclass('schema_migrations')") is None:
        return 0
    return int(_scalar(db, "SELECT COALESCE(MAX(version), 0) FROM schema_migrations"))


# The tables of a dbarena store (schema.py's): one of them without schema_migrations, or
# a schema_migrations without `runs` (Rails and golang-migrate keep a table of that
# name too), is another program's.
_TABLES = ("runs", "points", "samples", "system_samples", "studies", "hosts", "imports", "point_derived",
           "raw_outputs", "latency_histograms", "server_series", "forgotten_runs", "profiles", "session_summaries",
           "group_summaries", "group_generation")


def foreign(db: Connection) -> str | None:
    """Why this database (its search path) is not a dbarena store, for a one-line
    refusal; None: it is one, or it holds none of dbarena's tables (a new store goes
    there). Reads the catalogue only."""
    present = [t for t in ("schema_migrations", *_TABLES) if _scalar(db, "SELECT to_regclass(?)", (t,)) is not None]
    if not present:
        return None
    if "schema_migrations" not in present:
        return (f"it has tables named as dbarena's ({', '.join(present)}) that dbarena did not create: use another "
                "database or schema (options=-csearch_path=...)")
    applied_at = _scalar(db, "SELECT count(*) FROM information_schema.columns WHERE table_name = 'schema_migrations'"
                             " AND column_name = 'applied_at' AND table_schema = ANY (current_schemas(false))")
    if "runs" not in present or not applied_at:
        return ("its schema_migrations table is another program's: use another database or schema "
                "(options=-csearch_path=...)")
    return None


def db_name(db: Connection) -> str:
    return str(_scalar(db, "SELECT current_database()"))


def migrate(db: Connection, target: int, applied_at: str) -> None:
    """Create the schema in an empty database, or bring it to `target`; refuse a newer one.
    One transaction under an advisory lock (PostgreSQL's DDL is transactional)."""
    with db:
        db.execute("SELECT pg_advisory_xact_lock(?)", (_LOCK,))
        found = foreign(db)  # (after the lock: what another writer just created is seen)
        if found is not None:
            raise StoreError(f"{db_name(db)} is not a dbarena store ({found}): give another --store")
        current = version(db)
        if current > target:
            raise StoreError(f"store has schema version {current}, newer than this dbarena understands "
                             f"({target}): upgrade dbarena")
        if current == 0:
            if _scalar(db, "SELECT to_regclass('runs')") is not None:
                raise StoreError("the database has a table `runs` that dbarena did not create: "
                                 "use another database or schema (options=-csearch_path=...)")
            db.raw.execute(SCHEMA)
            db.raw.execute(_IDENTITY)
            db.raw.execute(views.postgresql(BASE_VERSION))
            db.raw.execute(SUMMARY_TRIGGERS)
            db.raw.execute(GROUP_TRIGGERS)
            db.raw.execute("INSERT INTO group_generation VALUES (0);\n")
            db.execute("INSERT INTO schema_migrations VALUES (?, ?)", (BASE_VERSION, applied_at))
            current = BASE_VERSION
        for number in range(current + 1, target + 1):  # (a store created at 12 runs 13 to 17)
            db.raw.execute(MIGRATIONS[number])
            db.execute("INSERT INTO schema_migrations VALUES (?, ?)", (number, applied_at))


def size_bytes(db: Connection) -> int:
    """The store's tables with their indexes and TOAST."""
    return int(_scalar(
        db, "SELECT COALESCE(SUM(pg_total_relation_size(c.oid)), 0) FROM pg_class c"
        " WHERE c.relkind = 'r' AND c.relname IN ('runs', 'points', 'samples', 'system_samples', 'studies', 'hosts',"
        " 'imports', 'point_derived', 'raw_outputs', 'schema_migrations',"
        " 'latency_histograms', 'server_series', 'forgotten_runs', 'profiles', 'session_summaries',"
        " 'group_summaries', 'group_generation')"
        " AND pg_table_is_visible(c.oid)"))


def next_ids(db: Connection, table: str, count: int) -> list[int]:
    """`count` new ids from the table's identity sequence (merge assigns them itself)."""
    if count == 0:
        return []
    return [i for (i,) in db.execute(
        f"SELECT nextval(pg_get_serial_sequence('{table}', 'id')) FROM generate_series(1, ?)", (count,))]
