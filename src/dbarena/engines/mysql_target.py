"""A MySQL-family server to benchmark (MyTarget): its connection, the tools' private
password files, provenance and, for a throwaway server, its restart around a saved or
restored data directory; and the error-log reading its set-up shares with it."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, TypedDict

from dbarena import execute
from dbarena.engines import instance
from dbarena.engines.mysql_binaries import client_tool
from dbarena.errors import DatabaseError, EnvironmentProblem
from dbarena.interfaces import Client, Executor, Tool
from dbarena.lazy import lazy_import
from dbarena.lifecycle import state
from dbarena.limits import one_line
from dbarena.model import Connection, Tls
from dbarena.records import JSON, JSONObject

if TYPE_CHECKING:
    import pymysql
    from pymysql.cursors import Cursor

    from dbarena.interfaces import Reader
else:
    pymysql = lazy_import("pymysql")  # the driver: only a run or a --target needs it

ENGINE = "mysql"
STOP_SIGNAL = signal.SIGTERM  # mysqld's normal shutdown


class TlsOptions(TypedDict, total=False):
    """PyMySQL's TLS options (keyword arguments of pymysql.connect)."""

    ssl_ca: str
    ssl_verify_cert: bool
    ssl_verify_identity: bool


def tls_options(tls: Tls | None) -> TlsOptions:
    """PyMySQL's options for TLS required (model.Tls): with a CA it refuses a server
    that offers no TLS, and verifies the server's certificate against that one (no host
    name checked: the only certificate trusted is the server's own)."""
    if tls is None:
        return {}
    return {"ssl_ca": tls.ca, "ssl_verify_cert": True, "ssl_verify_identity": False}


@dataclass
class MyTarget(instance.SavedData):
    conn: Connection
    description: str
    server_version: str
    throwaway: bool
    secrets_dir: Path | None = None
    data_dir: Path | None = None
    log_path: Path | None = None
    process: subprocess.Popen[bytes] | None = field(default=None, repr=False)
    engine: str = ENGINE
    flavour: str = "mysql"
    password: str | None = field(default=None, repr=False)  # in memory only, for provenance queries
    _clients: dict[str, Client] = field(default_factory=dict, repr=False)
    # How a throwaway's server is started again (restore between rounds).
    executor: Executor = field(default=execute.LOCAL, repr=False)
    record: state.Record | None = field(default=None, repr=False)  # a throwaway's
    server_argv: tuple[str, ...] = ()
    server_user: str | None = None
    server_env: dict[str, str] | None = field(default=None, repr=False)
    server_cpus: tuple[int, ...] | None = None  # the CPUs it is confined to ([cpus])
    # A server listening for other hosts with TLS: its certificate (PEM, public); or
    # why it has none although asked (engines/tls.py).
    tls_cert: str | None = field(default=None, repr=False)
    tls_problem: str | None = None

    @property
    def url(self) -> str:
        return self.conn.url

    def client_env(self) -> dict[str, str]:
        env = dict(os.environ)
        env.pop("MYSQL_PWD", None)  # the option files hold the password
        return env

    def tool(self, name: str) -> Path:
        return client_tool(name)

    def client(self, tool: Tool) -> Client:
        """The tool's binary and, where the server wants a password, a private file
        holding it in the tool's own format (written once per target and tool)."""
        if tool.name not in self._clients:
            secret = None
            content = tool.secret_file(self.conn.protocol, self.password) if self.password else None
            if content is not None and self.secrets_dir is not None:
                secret = str(instance.private_file(self.secrets_dir / f"{tool.name}.cnf", content))
            self._clients[tool.name] = Client(binary=str(self.tool(tool.binary)), conn=self.conn, secret_file=secret)
        return self._clients[tool.name]

    def defaults_file(self) -> Path | None:
        """A [client] option file with the password, for the mysql command-line client."""
        if self.password is None or self.secrets_dir is None:
            return None
        return _client_file(self.secrets_dir, self.password)

    def problem(self) -> str | None:
        status = instance.exit_status(self.process)
        if status is None:
            return None
        return f"MySQL server exited with status {status}: {log_reason(self.log_path)}"

    def server_pid(self) -> int | None:
        return self.process.pid if self.process is not None else None

    def server_reader(self, connection: Any) -> Reader:
        """What the server sampler reads of a point: the status counters and row lock
        waits (serverside/mysql.py)."""
        from dbarena.serverside.mysql import MysqlReader

        return MysqlReader(connection)

    def connect(self, timeout_s: float | None = None) -> pymysql.Connection[Cursor]:
        # PyMySQL's connect_timeout bounds the TCP connect only; read_timeout and
        # write_timeout bound the handshake and every query after it.
        return pymysql.connect(host=self.conn.host, port=self.conn.port, user=self.conn.user,
                               password=self.password or "", database=self.conn.dbname,
                               connect_timeout=10 if timeout_s is None else timeout_s,
                               read_timeout=timeout_s, write_timeout=timeout_s, **tls_options(self.conn.tls))

    def _query(self, read: Callable[[Cursor], JSONObject]) -> JSONObject:
        # Provenance is worth having but never worth a failed benchmark.
        try:
            with contextlib.closing(self.connect()) as db, db.cursor() as cur:
                return read(cur)
        except pymysql.MySQLError as exc:
            return {"facts_error": one_line(exc)}

    def facts(self) -> JSONObject:
        """Version and the server variables that decide OLTP throughput."""
        def read(cur: Cursor) -> JSONObject:
            cur.execute("SELECT VERSION(), @@version_comment")
            version, comment = _row(cur)
            placeholders = ", ".join(["%s"] * len(KEY_VARIABLES))
            cur.execute(f"SHOW GLOBAL VARIABLES WHERE Variable_name IN ({placeholders})", KEY_VARIABLES)
            variables: dict[str, JSON] = dict(cur.fetchall())
            facts: JSONObject = {
                "version_string": f"{version} ({comment})",
                "key_variables": variables,
                "data_checksums": variables.get("innodb_checksum_algorithm"),
            }
            if self.conn.tls is not None:
                # What this connection got, as the server saw it (empty: not encrypted).
                cur.execute("SHOW SESSION STATUS WHERE Variable_name IN ('Ssl_version', 'Ssl_cipher')")
                seen = {str(k): str(v) for k, v in cur.fetchall()}
                facts["tls"] = {"ssl": bool(seen.get("Ssl_cipher")), "version": seen.get("Ssl_version") or None,
                                "cipher": seen.get("Ssl_cipher") or None}
            return facts
        return self._query(read)

    def remember_shared_memory(self) -> None:
        """InnoDB keeps no POSIX shared memory: nothing to remember."""

    def _restart(self, between: Callable[[], None], *, clean: bool) -> None:
        """Stop the throwaway server (its normal shutdown, which leaves a data directory
        that needs no recovery; `clean`: refused if it had to be killed), do `between`
        to it, start it again on the same port and configuration (also when `between`
        failed)."""
        if not self.throwaway or self.process is None or self.data_dir is None or not self.server_argv:
            raise EnvironmentProblem("only a throwaway MySQL server's data directory can be saved and restored")
        process = self.process
        stop = (lambda: instance.stopped_cleanly(process, first_signal=STOP_SIGNAL, grace_s=120, what="mysqld")) \
            if clean else (lambda: instance.stop_server(process, first_signal=STOP_SIGNAL, grace_s=120))
        instance.restarted(stop, between, self._start_again)

    def _start_again(self, timeout_s: float = 120) -> None:
        assert self.data_dir is not None
        self.process = self.executor.spawn(list(self.server_argv), log_path=self.data_dir.parent / "stdout.log",
                                           user=self.server_user, env=self.server_env, cpus=self.server_cpus)
        if self.record is not None:
            self.record.update(**state.process_fields("server_pgid", self.process.pid))
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline and self.process.poll() is None:
            # root has a password nobody keeps now (_lock_root): ready when dbarena's
            # user gets in over TCP. A read timeout too: a server that accepts but never
            # greets must not hang the study.
            try:
                with contextlib.closing(pymysql.connect(
                        host=self.conn.host, port=self.conn.port, user=self.conn.user, password=self.password or "",
                        database=self.conn.dbname, connect_timeout=10, read_timeout=10, write_timeout=10,
                        **tls_options(self.conn.tls))) as db:
                    _await_buffer_pool(db, deadline)
                    return
            except pymysql.MySQLError:
                time.sleep(0.1)
        raise EnvironmentProblem(f"the MySQL server did not start again: {log_reason(self.log_path)}")

    def checkpoint(self) -> None:
        """MySQL's nearest to a checkpoint: close and flush all tables (a managed
        server may refuse it without the RELOAD privilege)."""
        try:
            with contextlib.closing(self.connect()) as db, db.cursor() as cur:
                cur.execute("FLUSH TABLES")
        except pymysql.MySQLError as exc:
            raise DatabaseError(f"FLUSH TABLES failed: {one_line(exc)}") from None

    def dataset_facts(self) -> JSONObject:
        def read(cur: Cursor) -> JSONObject:
            cur.execute("SELECT COALESCE(SUM(data_length + index_length), 0) FROM information_schema.tables"
                        " WHERE table_schema = DATABASE()")
            return {"database_bytes": int(_row(cur)[0])}
        return self._query(read)

    def keep_note(self) -> str:
        assert self.data_dir is not None and self.process is not None  # only throwaway instances are kept
        return (
            f"kept the throwaway MySQL server: {self.url} (pid {self.process.pid}), data in {self.data_dir}; "
            f"connect with mysql --defaults-extra-file={self.defaults_file()} -h 127.0.0.1 "
            f"-P {self.conn.port} -u {self.conn.user} {self.conn.dbname}; "
            f"remove with: dbarena cleanup (or kill {self.process.pid} && rm -rf {self.data_dir.parent})"
        )


# The variables the published MySQL studies tuned or argued about.
KEY_VARIABLES = (
    "innodb_buffer_pool_size", "innodb_flush_log_at_trx_commit", "sync_binlog", "innodb_flush_method",
    "innodb_log_file_size", "innodb_redo_log_capacity", "innodb_io_capacity", "innodb_doublewrite",
    "innodb_checksum_algorithm", "innodb_file_per_table", "max_connections", "log_bin", "binlog_format",
    "transaction_isolation", "tx_isolation", "thread_handling", "table_open_cache", "performance_schema",
    "innodb_page_size",  # a cluster option: fixed when the data directory is created
    "large_pages", "large_page_size",  # huge pages for the buffer pool (host/tuning.py: the kernel's pool)
)


def log_reason(log_path: Path | None) -> str:
    """The error log's last [ERROR] line that says why (the final one only says 'Aborting')."""
    if log_path is not None and log_path.exists():
        errors = [l.strip() for l in log_path.read_text(errors="replace").splitlines()
                  if "[ERROR]" in l and not l.rstrip().endswith("Aborting")]
        if errors:
            return errors[-1]
    return instance.log_reason(log_path, ("[ERROR]",))


def _client_file(directory: Path, password: str) -> Path:
    """A private [client] option file that carries the password to the mysql client."""
    escaped = password.replace("\\", "\\\\").replace('"', '\\"')
    return instance.private_file(directory / "client.cnf", f'[client]\npassword="{escaped}"\n')


def _row(cur: Cursor) -> tuple[Any, ...]:
    """The one row a query returns (a driver's row: its values as the server typed them)."""
    row = cur.fetchone()
    if row is None:
        raise DatabaseError("the query returned no row")
    return row


def _await_buffer_pool(db: pymysql.Connection[Cursor], deadline: float) -> None:
    """Until InnoDB has loaded the buffer pool it dumped at shutdown (on by default):
    it loads in the background, and would otherwise warm up during the next point's
    measurement instead of within the restore's time."""
    with db.cursor() as cur:
        while time.monotonic() < deadline:
            cur.execute("SHOW GLOBAL STATUS LIKE 'Innodb_buffer_pool_load_status'")
            row = cur.fetchone()
            status = (row[1] if row else "").lower()
            if not status or any(w in status for w in ("completed", "aborted", "not started", "disabled")):
                return
            time.sleep(0.1)
