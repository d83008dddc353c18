"""A PostgreSQL server to benchmark (PgTarget): its connection, clients, provenance and,
for a throwaway instance, its restart around a saved or restored data directory; and
the connection helpers the instance's set-up shares with it."""

from __future__ import annotations

import math
import os
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, TypedDict
from urllib.parse import urlsplit

from dbarena import execute
from dbarena.lifecycle import state
from dbarena.engines import instance
from dbarena.engines.postgres_binaries import client_tool
from dbarena.errors import DatabaseError, EnvironmentProblem
from dbarena.interfaces import Client, Executor, Tool
from dbarena.lazy import lazy_import
from dbarena.limits import one_line
from dbarena.model import Connection, Tls
from dbarena.records import JSONObject

# PostgreSQL's "fast" shutdown: the postmaster ends the sessions and checkpoints (SIGTERM
# would be "smart": it waits for every client to leave).
STOP_SIGNAL = signal.SIGINT

if TYPE_CHECKING:
    import psycopg
    from psycopg.rows import TupleRow

    from dbarena.interfaces import Reader
else:
    psycopg = lazy_import("psycopg")  # the driver: only a run or a --target needs it

ENGINE = "postgres"


def connection_from_url(url: str, tls: Tls | None = None) -> Connection:
    parts = urlsplit(url)
    return Connection(
        protocol="postgresql", host=parts.hostname or "localhost", port=parts.port or 5432,
        user=parts.username or os.environ.get("PGUSER") or "postgres",
        dbname=parts.path.lstrip("/") or parts.username or "postgres", url=url, tls=tls,
    )


class TlsOptions(TypedDict, total=False):
    """libpq's TLS connection parameters (keyword arguments of psycopg.connect)."""

    sslmode: str
    sslrootcert: str


def tls_options(tls: Tls | None) -> TlsOptions:
    """libpq's connection parameters for TLS required (model.Tls): encrypted or refused,
    the server verified against its own certificate (verify-ca: that one certificate is
    the only one trusted, so no host name needs checking)."""
    return {"sslmode": "verify-ca", "sslrootcert": tls.ca} if tls is not None else {}


# libpq's environment variable for each of tls_options' parameters: what pgbench and
# sysbench's pgsql driver read (neither takes them as options).
_TLS_ENVIRONMENT = {"sslmode": "PGSSLMODE", "sslrootcert": "PGSSLROOTCERT"}


@dataclass
class PgTarget(instance.SavedData):
    """A PostgreSQL server to benchmark. Its connection never holds a password."""

    conn: Connection
    description: str
    server_version: str
    throwaway: bool
    passfile: Path | None = None
    data_dir: Path | None = None
    log_path: Path | None = None
    process: subprocess.Popen[bytes] | None = field(default=None, repr=False)
    bindir: Path | None = None
    executor: Executor = field(default=execute.LOCAL, repr=False)
    engine: str = ENGINE
    flavour: str = "postgresql"
    _tools: dict[str, Path] = field(default_factory=dict, repr=False)
    record: state.Record | None = field(default=None, repr=False)  # a throwaway's
    server_argv: tuple[str, ...] = ()  # how a throwaway's postmaster is started (for a restart)
    server_user: str | None = None
    server_cpus: tuple[int, ...] | None = None  # the CPUs it is confined to ([cpus])
    # A server listening for other hosts with TLS: its certificate (PEM, public); or
    # why it has none although asked (engines/tls.py).
    tls_cert: str | None = field(default=None, repr=False)
    tls_problem: str | None = None

    def _restart(self, between: Callable[[], None], *, clean: bool) -> None:
        """Stop the throwaway server (fast shutdown; `clean`: refused if it had to be
        killed), do `between` to its stopped data directory, start it again on the
        same port and settings (also when `between` failed)."""
        if not self.throwaway or self.process is None or self.data_dir is None or not self.server_argv:
            raise EnvironmentProblem("only a throwaway PostgreSQL's data directory can be saved and restored")
        process = self.process
        stop = (lambda: instance.stopped_cleanly(process, first_signal=STOP_SIGNAL, grace_s=60, what="PostgreSQL")) \
            if clean else (lambda: instance.stop_server(process, first_signal=STOP_SIGNAL))
        instance.restarted(stop, between, self._start_again)

    def _start_again(self) -> None:
        self.process = self.executor.spawn(list(self.server_argv), log_path=self.log_path or Path(os.devnull),
                                           user=self.server_user, cpus=self.server_cpus)
        if self.record is not None:
            self.record.update(**state.process_fields("server_pgid", self.process.pid))
        admin = self.conn.url.rsplit("/", 1)[0] + "/postgres"
        assert self.passfile is not None and self.log_path is not None  # a throwaway has both
        if wait_ready(self.process, admin, self.passfile, self.log_path, 120) is None:
            raise EnvironmentProblem(f"PostgreSQL did not start again: {log_reason(self.log_path)}")
        self.remember_shared_memory()

    def remember_shared_memory(self) -> None:
        """Add the dynamic shared memory the server's processes map now to its record
        (the statistics' segments appear while it runs, not at start), so that they are
        removed even if it dies before it can remove them itself."""
        if self.process is None or self.record is None or self.process.poll() is not None:
            return
        import psutil

        try:
            pids = [self.process.pid, *(c.pid for c in psutil.Process(self.process.pid).children(recursive=True))]
        except psutil.Error:
            return
        known = set(self.record.data.get("shm", ()))
        found = known | {str(p) for pid in pids for p in state.shm_segments(pid)}
        if found != known:
            self.record.update(shm=sorted(found))

    @property
    def url(self) -> str:
        return self.conn.url

    def client_env(self) -> dict[str, str]:
        env = dict(os.environ)
        if self.passfile is not None:
            # Our own instance: its private passfile, and nothing the user's
            # environment might set for other servers.
            env.pop("PGPASSWORD", None)
            env["PGPASSFILE"] = str(self.passfile)
        for name, value in tls_options(self.conn.tls).items():
            env[_TLS_ENVIRONMENT[name]] = str(value)  # (each is text: TlsOptions)
        return env

    def tool(self, name: str) -> Path:
        # Found once per target: discovery runs `--version` on every candidate.
        if name not in self._tools:
            self._tools[name] = client_tool(name, self.bindir, self.executor)
        return self._tools[name]

    def client(self, tool: Tool) -> Client:
        # libpq finds the password itself (PGPASSFILE, PGPASSWORD, ~/.pgpass), for
        # pgbench and for sysbench's pgsql driver alike: no file of the tool's own.
        return Client(binary=str(self.tool(tool.binary)), conn=self.conn)

    def problem(self) -> str | None:
        """Why the server is gone, if it is our instance and it died."""
        status = instance.exit_status(self.process)
        if status is None:
            return None
        return f"PostgreSQL server exited with status {status}: {log_reason(self.log_path)}"

    def server_pid(self) -> int | None:
        """The postmaster's pid, when the server runs here (our instance)."""
        return self.process.pid if self.process is not None else None

    def server_reader(self, connection: Any) -> Reader:
        """What the server sampler reads of a point: pg_stat_activity's waits, the
        statistics views (serverside/postgres.py)."""
        from dbarena.serverside.postgres import PostgresReader

        return PostgresReader(connection)

    def connect(self, timeout_s: float | None = None) -> psycopg.Connection[TupleRow]:
        if timeout_s is None:
            return open_connection(self.url, passfile=self.passfile, **tls_options(self.conn.tls))
        # libpq bounds connecting (whole seconds, 2 at least) and, with tcp_user_timeout,
        # data a vanished peer never acknowledges; a peer that acknowledges and never
        # answers is the caller's to cut (serverside/sampler.py shuts its socket down).
        # (tcp_user_timeout is libpq 12's: an older one would refuse the connection.)
        socket_bound: dict[str, Any] = {"tcp_user_timeout": int(timeout_s * 1000)} if psycopg.pq.version() >= 120000 else {}
        return open_connection(self.url, passfile=self.passfile, timeout=max(2, math.ceil(timeout_s)),
                               **socket_bound, **tls_options(self.conn.tls))

    def facts(self) -> JSONObject:
        """Provenance of the server: version, settings that differ from the defaults
        (pg_settings where the source is not 'default'; per-connection sources left
        out), data checksums, huge pages."""
        return _facts_or_error(self._facts)

    def _facts(self) -> JSONObject:
        with self.connect() as conn:
            version = first_value(conn.execute("SELECT version()"))
            rows = conn.execute(
                # current_setting() shows a value as SHOW does ('16MB'); setting || unit
                # would glue a count of 8kB pages to its unit ('20488kB').
                "SELECT name, current_setting(name), source FROM pg_settings"
                " WHERE source NOT IN ('default', 'override', 'client', 'session') ORDER BY name"
            ).fetchall()
            checksums = first_value(conn.execute("SHOW data_checksums"))
            # Huge pages as asked (huge_pages, huge_page_size from 14) and, from 17, as got
            # (huge_pages_status): 'try' alone does not say which.
            huge = conn.execute("SELECT name, current_setting(name) FROM pg_settings WHERE name IN"
                                " ('huge_pages', 'huge_page_size', 'huge_pages_status') ORDER BY name").fetchall()
            seen: JSONObject | None = None
            if self.conn.tls is not None:
                # What this connection got, as the server saw it (pg_stat_ssl, 9.5+).
                row = conn.execute("SELECT ssl, version, cipher FROM pg_stat_ssl WHERE pid = pg_backend_pid()"
                                   ).fetchone()
                seen = {"ssl": bool(row[0]), "version": row[1], "cipher": row[2]} if row else None
        facts: JSONObject = {
            "version_string": version,
            "non_default_settings": {name: value for name, value, _ in rows},
            "settings_source": {name: source for name, _, source in rows},
            "data_checksums": checksums,
            "huge_pages": {name: value for name, value in huge},
        }
        if seen is not None:
            facts["tls"] = seen
        return facts

    def checkpoint(self) -> None:
        """Write all dirty pages now (after a warm-up), as study B did before each run.
        A managed server may refuse it (PostgreSQL before 15 needs a superuser)."""
        try:
            with self.connect() as conn:
                conn.execute("CHECKPOINT")
        except psycopg.Error as exc:
            raise DatabaseError(f"CHECKPOINT failed: {one_line(exc)}") from None

    def dataset_facts(self) -> JSONObject:
        def size() -> JSONObject:
            with self.connect() as conn:
                return {"database_bytes": first_value(conn.execute("SELECT pg_database_size(current_database())"))}
        return _facts_or_error(size)

    def keep_note(self) -> str:
        assert self.data_dir is not None and self.process is not None  # only throwaway instances are kept
        return (
            f"kept the throwaway PostgreSQL: {self.url} (pid {self.process.pid}), data in {self.data_dir}; "
            f"connect with PGPASSFILE={self.passfile} psql '{self.url}'; "
            f"remove with: dbarena cleanup (or kill {self.process.pid} && rm -rf {self.data_dir.parent})"
        )


def _facts_or_error(read: Callable[[], JSONObject]) -> JSONObject:
    # Provenance is worth having but never worth a failed benchmark.
    try:
        return read()
    except psycopg.Error as exc:
        return {"facts_error": one_line(exc)}


def log_reason(log_path: Path | None) -> str:
    """The server log's last FATAL/PANIC; for a bad setting, the line that names it."""
    reason = instance.log_reason(log_path, ("FATAL:", "PANIC:"))
    if "contains errors" in reason and log_path is not None:
        lines = [l.strip() for l in log_path.read_text(errors="replace").splitlines() if l.strip()]
        i = lines.index(reason)
        if i > 0:
            return f"{lines[i - 1]} ({reason})"
    return reason


def first_value(cur: psycopg.Cursor[Any]) -> Any:
    """The first value of a query that returns one row."""
    row = cur.fetchone()
    if row is None:
        raise DatabaseError("the query returned no row")
    return row[0]


def open_connection(url: str, *, passfile: Path | None = None, dbname: str | None = None, timeout: int = 10,
                    **options: Any) -> psycopg.Connection[TupleRow]:
    kwargs: dict[str, Any] = {"connect_timeout": timeout, "autocommit": True, **options}
    if passfile is not None:
        # Our own instance: its password given outright, because libpq prefers a
        # PGPASSWORD in the environment (set for a --store or --target server) to a passfile.
        kwargs["password"] = passfile.read_text().strip().rsplit(":", 1)[1]
    if dbname is not None:
        kwargs["dbname"] = dbname
    return psycopg.connect(url, **kwargs)


def wait_ready(proc: subprocess.Popen[bytes], url: str, passfile: Path, log_path: Path, timeout_s: float) -> str | None:
    """Server version once it accepts connections; None if it exited first."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return None
        try:
            with open_connection(url, passfile=passfile, timeout=5) as conn:
                return str(first_value(conn.execute("SHOW server_version")))
        except psycopg.OperationalError:
            time.sleep(0.1)
    execute.stop(proc)
    raise EnvironmentProblem(f"PostgreSQL did not accept connections within {timeout_s:.0f} s: {log_reason(log_path)}")
