"""What a PostgreSQL server is asked once a second (one query for the counters, one for
the wait events), by the server's version: pg_stat_checkpointer replaced the
checkpoint columns of pg_stat_bgwriter in 17, pg_stat_wal exists from 14, pg_stat_io
from 16, pg_stat_lock from 19."""

from __future__ import annotations

from typing import Any

from dbarena.serverside.room import Room, tightest
from dbarena.serverside.series import WAIT
from dbarena.serverside.waits import IO, LOADGEN, LOCKS, SERVER_CPU, WAL, Family, Found, Limits, Series, pct

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
    if version_num >= 190000:
        parts += LOCK_STATS
    return f"SELECT {', '.join(parts)} FROM pg_stat_database d WHERE d.datname = current_database()"


# pg_stat_lock (19), summed over lock types: the waits it counts (those that outlasted
# deadlock_timeout) and the locks that found no free fast-path slot, so went to the
# shared lock table (LWLock:LockManager's contention). Read through to_jsonb so that a
# column it lacks gives no figure rather than failing every other counter of the second.
LOCK_STATS = tuple(f"(SELECT sum((to_jsonb(l) ->> '{column}')::float8) FROM pg_stat_lock l) AS {name}"
                   for column, name in (("waits", "lock_waits"), ("fastpath_exceeded", "lock_fastpath_exceeded")))


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
    # Every backend's committed transactions in this database (the sampler's own
    # readings, two statements a second, among them).
    commits: str | None = "xact_commit"

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


# ------------------------------------------------------------------ what the waits say

# Wait events by class, as pg_stat_activity names them (type:event); other events
# (Activity, IPC, Timeout ...) count in the total only. Up to 16 the names were written
# by hand (IO:WALSync); from 17 those of every type but LWLock and Lock are generated
# from wait_event_names.txt, each word of the enum camel-cased (WAL_SYNC -> IO:WalSync,
# BUFFILE_READ -> IO:BuffileRead): both spellings are kept, a store holds runs of both.
# LWLock names did not change. The names are held to excerpts of that file
# (tests/fixtures/serverside/README.md).
WAL_EVENTS = frozenset({
    "LWLock:WALWrite", "LWLock:WALInsert", "LWLock:WALBufMapping",
    "IO:WALSync", "IO:WALWrite", "IO:WALInitSync", "IO:WALInitWrite",  # up to 16
    "IO:WalSync", "IO:WalWrite", "IO:WalInitSync", "IO:WalInitWrite",  # 17 on
    "IO:DataFileSync", "IO:DataFileImmediateSync",
    # 19: WAIT FOR LSN waiting for WAL to be flushed, written or replayed to a point (IPC;
    # Client in 19's first betas, which must not read as waiting for the load generator),
    # and commit_delay's sleep before a WAL flush (before 19 it showed as CPU).
    "IPC:WaitForWalFlush", "IPC:WaitForWalWrite", "IPC:WaitForWalReplay",
    "Client:WaitForWalFlush", "Client:WaitForWalWrite", "Client:WaitForWalReplay",
    "Timeout:CommitDelay",
})
IO_EVENTS = frozenset({
    "IO:DataFileRead", "IO:DataFilePrefetch", "IO:DataFileExtend", "IO:DataFileWrite",
    "IO:BufFileRead", "IO:BufFileWrite",  # up to 16
    "IO:BuffileRead", "IO:BuffileWrite",  # 17 on
    # 18 on: a backend waiting for the reads an I/O worker (io_method = worker, the
    # default) or io_uring does for it, which it no longer waits for as DataFileRead.
    "IO:AioIoCompletion", "IO:AioIoUringSubmit", "IO:AioIoUringExecution",
})
# Lock waits by type: heavyweight locks, lightweight locks, and waits for a buffer's pin
# (the type BufferPin up to 18) or its content lock (LWLock:BufferContent up to 18):
# PostgreSQL 19 put both under the type Buffer (BufferCleanup, BufferShared,
# BufferShareExclusive, BufferExclusive).
LOCK_TYPES = ("Lock:", "LWLock:", "BufferPin:", "Buffer:")


def wait_class(event: str) -> str | None:
    """The class of a wait event ('Lock:transactionid', 'CPU' ...)."""
    if event in WAL_EVENTS:
        return WAL
    if event in IO_EVENTS:
        return IO
    if event.startswith(LOCK_TYPES):
        return LOCKS
    if event == "CPU":
        return SERVER_CPU
    if event.startswith("Client:"):
        return LOADGEN
    return None


def waits(series: Series, clients: int, limits: Limits) -> tuple[Found, list[str]]:
    """Each class of wait event's share of the active-backend samples (each second counts
    the non-idle client backends by wait event: where they spent their time)."""
    counts = {name[len(WAIT):]: sum(v or 0 for v in values) for name, values in series.items()
              if name.startswith(WAIT)}
    total = sum(counts.values())
    if not total:
        return [], []
    if total < limits.min_samples:
        return [], [f"only {total:.0f} active-backend sample(s): too few to tell from the waits"]
    found: Found = []
    by_class: dict[str, float] = {}
    for event, count in counts.items():
        cls = wait_class(event)
        if cls is not None:
            by_class[cls] = by_class.get(cls, 0) + count
    top = sorted(((c, e) for e, c in counts.items() if e != "CPU" and not e.startswith("Client:")), reverse=True)
    for cls in (LOCKS, WAL, IO):
        share = by_class.get(cls, 0) / total
        if share >= limits.wait_share:
            named = [f"{e} {pct(c / total)}" for c, e in top if wait_class(e) == cls][:2]
            found.append((cls, share, f"{' and '.join(named)} of {total:.0f} active-backend samples"))
    client = by_class.get(LOADGEN, 0) / total
    if client >= limits.client_share:
        found.append((LOADGEN, client, f"backends waited for the client in {pct(client)} of {total:.0f} "
                                       "active-backend samples"))
    cpu_share = by_class.get(SERVER_CPU, 0) / total
    return found, [f"on CPU in {pct(cpu_share)} of {total:.0f} active-backend samples"]


def waiting(series: Series, n: int) -> tuple[str, list[float | None]]:
    """The backends seen waiting on locks, WAL or I/O, each second."""
    chosen = [v for name, v in series.items() if name.startswith(WAIT)
              and wait_class(name[len(WAIT):]) in (LOCKS, WAL, IO)]
    return "backends waiting on locks, WAL or I/O", [float(sum(c[i] or 0 for c in chosen)) for i in range(n)]


def recorded(series: Series) -> bool:
    return any(name.startswith(WAIT) for name in series)


FAMILY = Family(name="postgres", recorded=recorded, waits=waits, waiting=waiting)
