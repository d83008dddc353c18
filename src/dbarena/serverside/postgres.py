"""What a PostgreSQL server is asked once a second (one query for the counters, one for
the wait events), by the server's version: pg_stat_checkpointer replaced the
checkpoint columns of pg_stat_bgwriter in 17, pg_stat_wal exists from 14, pg_stat_io
from 16."""

from __future__ import annotations

from typing import Any

from dbarena.serverside.room import Room, tightest
from dbarena.serverside.series import WAIT

# A stuck server makes a reading fail after this long instead of stalling the sampler.
STATEMENT_TIMEOUT_MS = 500

# Counters of pg_stat_database, for the benchmark's database only.
DATABASE = ("xact_commit", "xact_rollback", "blks_hit", "blks_read", "temp_bytes", "deadlocks")


def counters_sql(version_num: int) -> str:
    """One row of every counter this server version has, each column named as stored."""
    parts = [f"d.{c}::float8 AS {c}" for c in DATABASE]
    if version_num >= 170000:
        parts += ["(SELECT (num_timed + num_requested)::float8 FROM pg_stat_checkpointer) AS checkpoints",
                  "(SELECT buffers_written::float8 FROM pg_stat_checkpointer) AS checkpoint_buffers",
                  "(SELECT buffers_clean::float8 FROM pg_stat_bgwriter) AS bgwriter_buffers"]
    else:
        parts += ["(SELECT (checkpoints_timed + checkpoints_req)::float8 FROM pg_stat_bgwriter) AS checkpoints",
                  "(SELECT buffers_checkpoint::float8 FROM pg_stat_bgwriter) AS checkpoint_buffers",
                  "(SELECT buffers_clean::float8 FROM pg_stat_bgwriter) AS bgwriter_buffers",
                  "(SELECT buffers_backend::float8 FROM pg_stat_bgwriter) AS backend_buffers"]
    if version_num >= 140000:
        parts += ["(SELECT wal_bytes::float8 FROM pg_stat_wal) AS wal_bytes",
                  "(SELECT wal_records::float8 FROM pg_stat_wal) AS wal_records"]
    if version_num >= 160000:
        # Summed over backend types, objects and contexts: the whole server's I/O calls.
        parts += ["(SELECT COALESCE(sum(reads), 0)::float8 FROM pg_stat_io) AS io_reads",
                  "(SELECT COALESCE(sum(writes), 0)::float8 FROM pg_stat_io) AS io_writes",
                  "(SELECT COALESCE(sum(fsyncs), 0)::float8 FROM pg_stat_io) AS io_fsyncs"]
    return f"SELECT {', '.join(parts)} FROM pg_stat_database d WHERE d.datname = current_database()"


# Client backends that are not idle, this sampler's own left out; an active backend
# with no wait event is on the CPU (or in a wait PostgreSQL does not instrument).
WAITS_SQL = (
    "SELECT COALESCE(wait_event_type, 'CPU'), COALESCE(wait_event, ''), count(*)::float8 FROM pg_stat_activity"
    " WHERE pid <> pg_backend_pid() AND backend_type = 'client backend' AND state IS NOT NULL AND state <> 'idle'"
    " GROUP BY 1, 2"
)


def wait_name(event_type: str, event: str) -> str:
    return f"{WAIT}{event_type}:{event}" if event else f"{WAIT}{event_type}"


# Open client connections: a role without pg_read_all_stats sees other roles' rows
# with backend_type NULL, counted when they have a user and a database (background
# processes lack one or both: the logical replication launcher has a user, no
# database); a parallel worker would count too: too many rather than too few. Reserved
# slots (superuser_reserved_connections, and 16's reserved_connections) are not a
# role's unless it is a superuser. Beside the server's: the login role's CONNECTION
# LIMIT (its own backends, which it always sees) and the database's (every role's
# backends in it), neither of which binds a superuser; NULL where there is none.
FREE_SQL = """
WITH me AS (SELECT oid, rolsuper, rolconnlimit FROM pg_roles WHERE rolname = session_user),
     db AS (SELECT oid, datconnlimit FROM pg_database WHERE datname = current_database()),
     clients AS (SELECT usesysid, datid FROM pg_stat_activity
                 WHERE backend_type = 'client backend'
                    OR (backend_type IS NULL AND usesysid IS NOT NULL AND datid IS NOT NULL))
SELECT current_setting('max_connections')::int
       - CASE WHEN me.rolsuper THEN 0
              ELSE current_setting('superuser_reserved_connections')::int
                   + coalesce(current_setting('reserved_connections', true)::int, 0) END
       - (SELECT count(*) FROM clients)::int,
       CASE WHEN NOT me.rolsuper AND me.rolconnlimit >= 0
            THEN me.rolconnlimit - (SELECT count(*) FROM clients WHERE usesysid = me.oid)::int END,
       CASE WHEN NOT me.rolsuper AND db.datconnlimit >= 0
            THEN db.datconnlimit - (SELECT count(*) FROM clients WHERE datid = db.oid)::int END,
       me.rolconnlimit, db.datconnlimit
FROM me, db
"""


def room_of(row: tuple[Any, ...] | None) -> Room | None:
    """FREE_SQL's row as the tightest of the server's, the role's and the database's room."""
    if row is None:
        return None
    server, role, database, role_limit, database_limit = row
    return tightest(Room(int(server)) if server is not None else None,
                    Room(int(role), f"the role's CONNECTION LIMIT {role_limit}") if role is not None else None,
                    Room(int(database), f"the database's CONNECTION LIMIT {database_limit}")
                    if database is not None else None)


class PostgresReader:
    """Reads through a psycopg connection in autocommit (Target.connect gives one)."""

    engine = "postgres"
    gauges: frozenset[str] = frozenset()

    def __init__(self, connection: Any):
        self.connection = connection
        connection.execute(f"SET statement_timeout = {STATEMENT_TIMEOUT_MS}")
        connection.execute("SET application_name = 'dbarena-sampler'")
        row = connection.execute("SHOW server_version_num").fetchone()
        self.version_num = int(row[0])
        self.counters = counters_sql(self.version_num)
        self.notes: tuple[str, ...] = ()
        if self.version_num < 160000:
            self.notes += (f"PostgreSQL {self.version_num // 10000} has no pg_stat_io: no I/O call counts",)
        if self.version_num < 140000:
            self.notes += (f"PostgreSQL {self.version_num // 10000} has no pg_stat_wal: no WAL bytes",)

    def read(self) -> dict[str, float | None]:
        cur = self.connection.execute(self.counters)
        row = cur.fetchone()
        values: dict[str, float | None] = {}
        if row is not None:
            values.update(zip((d[0] for d in cur.description), row))
        for event_type, event, count in self.connection.execute(WAITS_SQL).fetchall():
            values[wait_name(event_type, event)] = count
        return values

    def room(self) -> Room | None:
        """Client connections this role may still open besides those open now (this one
        counted): max_connections less the open client backends, less the slots kept
        for superusers unless this role is one; fewer where the role's or the
        database's CONNECTION LIMIT says so."""
        return room_of(self.connection.execute(FREE_SQL).fetchone())

    def close(self) -> None:
        self.connection.close()
