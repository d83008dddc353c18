"""What a MariaDB or MySQL server is asked once a second: a subset of SHOW GLOBAL STATUS
and, where performance_schema is on, the wait time summed by event."""

from __future__ import annotations

from typing import Any

from dbarena.serverside.room import Room, tightest
from dbarena.serverside.waits import IO, LOCKS, Family, Found, Limits, Series, mean, pct

# A stuck server makes a reading fail after this long instead of stalling the sampler.
STATEMENT_TIMEOUT_S = 0.5

STATUS = ("Innodb_buffer_pool_reads", "Innodb_buffer_pool_read_requests", "Innodb_row_lock_waits",
          "Innodb_row_lock_time", "Innodb_row_lock_current_waits", "Innodb_data_fsyncs", "Innodb_data_written",
          "Innodb_os_log_written", "Threads_running", "Com_commit", "Com_rollback", "Questions")
# Read as they are, not as rates: how many at that instant.
GAUGES = frozenset({"status.Threads_running", "status.Innodb_row_lock_current_waits"})

_STATUS_SQL = ("SHOW GLOBAL STATUS WHERE Variable_name IN (" + ", ".join(f"'{n}'" for n in STATUS) + ")"
               " OR Variable_name LIKE 'Handler\\_%'")
# Picoseconds waited, by instrument; those never waited on left out (most of them).
_WAITS_SQL = ("SELECT EVENT_NAME, SUM_TIMER_WAIT / 1e12 FROM performance_schema.events_waits_summary_global_by_event_name"
              " WHERE SUM_TIMER_WAIT > 0 AND EVENT_NAME <> 'idle'")


def status_values(rows: list[tuple[str, str]]) -> dict[str, float | None]:
    """SHOW GLOBAL STATUS rows as numbers, named `status.<variable>`; a value that is not
    a number is left out."""
    out: dict[str, float | None] = {}
    for name, value in rows:
        try:
            out[f"status.{name}"] = float(value)
        except (TypeError, ValueError):
            continue
    return out


class MysqlReader:
    """Reads through a pymysql connection (Target.connect gives one)."""

    engine = "mysql"
    gauges = GAUGES
    commits: str | None = None  # its tools report each second at no measurable cost

    def __init__(self, connection: Any):
        self.connection = connection
        with connection.cursor() as cur:
            cur.execute("SELECT VERSION(), @@performance_schema")
            version, pfs = cur.fetchone()
            self.mariadb = "mariadb" in str(version).lower()
            # MariaDB's limit is in seconds and covers every statement; MySQL's in ms, SELECTs only.
            cur.execute(f"SET SESSION max_statement_time = {STATEMENT_TIMEOUT_S}" if self.mariadb
                        else f"SET SESSION MAX_EXECUTION_TIME = {int(STATEMENT_TIMEOUT_S * 1000)}")
        self.performance_schema = bool(int(pfs))
        self.notes: tuple[str, ...] = () if self.performance_schema else (
            "performance_schema is OFF on the server: no wait summaries (status counters only)",)
        connection.autocommit(True)

    def read(self) -> dict[str, float | None]:
        with self.connection.cursor() as cur:
            cur.execute(_STATUS_SQL)
            values = status_values(cur.fetchall())
            if self.performance_schema:
                cur.execute(_WAITS_SQL)
                # Seconds waited, summed over threads: as a rate, the threads waiting on it on average.
                values.update((f"pfs.{name}", float(seconds)) for name, seconds in cur.fetchall())
        return values

    def room(self) -> Room | None:
        """Connections this user may still open besides those open now (this one
        counted): max_connections less Threads_connected (the one more the server keeps
        for an administrator is not counted on), fewer where max_user_connections says
        so. Its session value is the account's MAX_USER_CONNECTIONS where that is set,
        else the global one (0: no limit); the user's own threads are all it sees of
        the process list without the PROCESS privilege, and those of its other
        accounts (user@host) count too: too many rather than too few."""
        with self.connection.cursor() as cur:
            cur.execute("SELECT @@max_connections, @@SESSION.max_user_connections")
            limit, per_user = cur.fetchone()
            cur.execute("SHOW GLOBAL STATUS LIKE 'Threads_connected'")
            row = cur.fetchone()
            mine = None
            if int(per_user) > 0:
                cur.execute("SELECT COUNT(*) FROM information_schema.PROCESSLIST"
                            " WHERE USER = SUBSTRING_INDEX(CURRENT_USER(), '@', 1)")
                (mine,) = cur.fetchone()
        return tightest(Room(int(limit) - int(row[1])) if row is not None else None,
                        Room(int(per_user) - int(mine), f"the user's max_user_connections {int(per_user)}")
                        if mine is not None else None)

    def close(self) -> None:
        self.connection.close()


# ------------------------------------------------------------------ what the waits say

def waits(series: Series, clients: int, limits: Limits) -> tuple[Found, list[str]]:
    """The clients waiting on row locks on average (Innodb_row_lock_time: ms waited per
    second), and reads that miss InnoDB's buffer pool."""
    found: Found = []
    notes: list[str] = []
    lock_ms = mean(series.get("status.Innodb_row_lock_time") or ())
    if lock_ms is not None and clients:
        waiting_ = lock_ms / 1000.0  # ms waited per second: clients waiting on average
        share = waiting_ / clients
        waits_per_s = mean(series.get("status.Innodb_row_lock_waits") or ()) or 0.0
        evidence = (f"row lock waits {waits_per_s:.0f}/s, {waiting_:.1f} of {clients} clients waiting on row locks "
                    f"on average ({pct(share)})")
        if share >= limits.wait_share:
            found.append((LOCKS, share, evidence))
        elif waits_per_s:
            notes.append(evidence)
    reads = mean(series.get("status.Innodb_buffer_pool_reads") or ())
    requests = mean(series.get("status.Innodb_buffer_pool_read_requests") or ())
    if reads is not None and requests and reads / requests >= limits.miss_share:
        found.append((IO, reads / requests, f"{pct(reads / requests)} of buffer pool reads missed it ({reads:.0f}/s)"))
    return found, notes


def waiting(series: Series, n: int) -> tuple[str, list[float | None]]:
    """The clients waiting on row locks on average, each second (ms per second / 1000)."""
    times = series.get("status.Innodb_row_lock_time") or [None] * n
    return "clients waiting on row locks", [v / 1000.0 if v is not None else None for v in times]


def recorded(series: Series) -> bool:
    return any(name.startswith("status.") for name in series)


FAMILY = Family(name="mysql", recorded=recorded, waits=waits, waiting=waiting)
