"""The MySQL family (MariaDB, MySQL): a throwaway server from the machine's own
binaries, or an existing server (self-managed or a managed service).

What the flavours share lives here; a flavour (mariadb.py, mysql.py) says how its
binaries are recognised and how a data directory is initialised. The throwaway
server lives in a fresh temporary directory, listens on 127.0.0.1 and a private
socket only, and is always stopped and removed (unless --keep). Once set up, its
root account is locked away (see _lock_root); benchmark tools connect over TCP as
user `dbarena`, whose random password lives in private files in each tool's own
format (sysbench --config-file, mysqlslap --defaults-extra-file), never on a
command line.
"""

from __future__ import annotations

import configparser
import contextlib
import os
import secrets
import shutil
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator, Mapping, Sequence
from urllib.parse import unquote, urlsplit

from dbarena import execute
from dbarena.engines import instance, target_url
from dbarena.errors import ConnectionFailed, DatabaseError, EnvironmentProblem, ToolMissing, UsageError
from dbarena.interfaces import Client, Executor, Tool
from dbarena.lazy import lazy_import
from dbarena.model import Connection

if TYPE_CHECKING:
    import pymysql
else:
    pymysql = lazy_import("pymysql")  # the driver: only a run or a --target needs it

ENGINE = "mysql"
INSTALL_HINT = "install MariaDB with `apt-get install mariadb-server mariadb-client`"
_SBIN = ("/usr/sbin", "/usr/libexec", "/usr/local/mysql/bin", "/usr/local/bin")



# What creating the data directory decides (InnoDB's page size is fixed for the data
# directory's life): option -> what it takes.
CLUSTER_OPTIONS = {"innodb_page_size": "4k, 8k, 16k, 32k or 64k (InnoDB's page size) [default: 16k]"}
INNODB_PAGE_SIZES = ("4k", "8k", "16k", "32k", "64k", "4096", "8192", "16384", "32768", "65536")

@dataclass(frozen=True)
class MyBinaries:
    server: Path  # mariadbd or mysqld
    install_db: Path | None  # mariadb-install-db (MariaDB); None for MySQL (mysqld --initialize-insecure)
    version_line: str


def _which(names: Sequence[str], extra_dirs: Sequence[str] = ()) -> Path | None:
    path = os.pathsep.join([os.environ.get("PATH", ""), *extra_dirs])
    for name in names:
        found = shutil.which(name, path=path)
        if found:
            return Path(found)
    return None


def _search(names: Sequence[str], bindir: Path | None) -> Path | None:
    if bindir is None:
        return _which(names, _SBIN)
    return next((bindir / n for n in names if (bindir / n).is_file()), None)


def client_tool(name: str) -> Path:
    """mysqlslap (or MariaDB's mariadb-slap), sysbench ... from PATH."""
    names = {"mysqlslap": ("mysqlslap", "mariadb-slap")}.get(name, (name,))
    found = _which(names)
    if found is None:
        package = "sysbench" if name == "sysbench" else "mariadb-client"
        raise ToolMissing(f"{name} not found: install it with `apt-get install {package}`")
    return found


@dataclass
class MyTarget(instance.SavedData):
    conn: Connection
    description: str
    server_version: str
    throwaway: bool
    secrets_dir: Path | None = None
    data_dir: Path | None = None
    log_path: Path | None = None
    process: Any = field(default=None, repr=False)
    engine: str = ENGINE
    flavour: str = "mysql"
    password: str | None = field(default=None, repr=False)  # in memory only, for provenance queries
    _clients: dict = field(default_factory=dict, repr=False)
    # How a throwaway's server is started again (restore between rounds).
    executor: Executor = field(default=execute.LOCAL, repr=False)
    record: Any = field(default=None, repr=False)  # a throwaway's state.Record
    server_argv: tuple[str, ...] = ()
    server_user: str | None = None
    server_env: dict | None = field(default=None, repr=False)
    server_cpus: tuple[int, ...] | None = None  # the CPUs it is confined to ([cpus])

    @property
    def url(self) -> str:
        return self.conn.url

    def client_env(self) -> dict:
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
        proc = self.process
        if proc is None or proc.poll() is None:
            return None
        return f"MySQL server exited with status {proc.returncode}: {_log_reason(self.log_path)}"

    def server_pid(self) -> int | None:
        return self.process.pid if self.process is not None else None

    def connect(self):
        return pymysql.connect(host=self.conn.host, port=self.conn.port, user=self.conn.user,
                               password=self.password or "", database=self.conn.dbname, connect_timeout=10)

    def _query(self, read) -> dict:
        # Provenance is worth having but never worth a failed benchmark.
        try:
            with contextlib.closing(self.connect()) as db, db.cursor() as cur:
                return read(cur)
        except pymysql.MySQLError as exc:
            return {"facts_error": _one_line(exc)}

    def facts(self) -> dict:
        """Version and the server variables that decide OLTP throughput."""
        def read(cur) -> dict:
            cur.execute("SELECT VERSION(), @@version_comment")
            version, comment = cur.fetchone()
            placeholders = ", ".join(["%s"] * len(KEY_VARIABLES))
            cur.execute(f"SHOW GLOBAL VARIABLES WHERE Variable_name IN ({placeholders})", KEY_VARIABLES)
            variables = dict(cur.fetchall())
            return {
                "version_string": f"{version} ({comment})",
                "key_variables": variables,
                "data_checksums": variables.get("innodb_checksum_algorithm"),
            }
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
        stop = (lambda: instance.stopped_cleanly(process, first_signal=signal.SIGTERM, grace_s=120, what="mysqld")) \
            if clean else (lambda: instance.stop_server(process, first_signal=signal.SIGTERM, grace_s=120))
        instance.restarted(stop, between, self._start_again)

    def _start_again(self, timeout_s: float = 120) -> None:
        assert self.data_dir is not None
        self.process = self.executor.spawn(list(self.server_argv), log_path=self.data_dir.parent / "stdout.log",
                                           user=self.server_user, env=self.server_env, cpus=self.server_cpus)
        if self.record is not None:
            self.record.update(server_pgid=self.process.pid)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline and self.process.poll() is None:
            # root has a password nobody keeps now (_lock_root): ready when dbarena's
            # user gets in over TCP. A read timeout too: a server that accepts but never
            # greets must not hang the study.
            try:
                with contextlib.closing(pymysql.connect(
                        host=self.conn.host, port=self.conn.port, user=self.conn.user, password=self.password or "",
                        database=self.conn.dbname, connect_timeout=10, read_timeout=10, write_timeout=10)) as db:
                    _await_buffer_pool(db, deadline)
                    return
            except pymysql.MySQLError:
                time.sleep(0.1)
        raise EnvironmentProblem(f"the MySQL server did not start again: {_log_reason(self.log_path)}")

    def checkpoint(self) -> None:
        """MySQL's nearest to a checkpoint: close and flush all tables (a managed
        server may refuse it without the RELOAD privilege)."""
        try:
            with contextlib.closing(self.connect()) as db, db.cursor() as cur:
                cur.execute("FLUSH TABLES")
        except pymysql.MySQLError as exc:
            raise DatabaseError(f"FLUSH TABLES failed: {_one_line(exc)}") from None

    def dataset_facts(self) -> dict:
        def read(cur) -> dict:
            cur.execute("SELECT COALESCE(SUM(data_length + index_length), 0) FROM information_schema.tables"
                        " WHERE table_schema = DATABASE()")
            return {"database_bytes": int(cur.fetchone()[0])}
        return self._query(read)

    def keep_note(self) -> str:
        assert self.data_dir is not None  # only throwaway instances are kept
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
)


def client_libraries() -> dict:
    return {"pymysql": pymysql.__version__}


def _log_reason(log_path: Path | None) -> str:
    """The error log's last [ERROR] line that says why (the final one only says 'Aborting')."""
    if log_path is not None and log_path.exists():
        errors = [l.strip() for l in log_path.read_text(errors="replace").splitlines()
                  if "[ERROR]" in l and not l.rstrip().endswith("Aborting")]
        if errors:
            return errors[-1]
    return instance.log_reason(log_path, ("[ERROR]",))


def _one_line(exc: Exception) -> str:
    return " ".join(str(exc).split())


def _first(cur: pymysql.cursors.Cursor) -> Any:
    """The first value of a query that returns one row."""
    row = cur.fetchone()
    if row is None:
        raise DatabaseError("the query returned no row")
    return row[0]


def _client_file(directory: Path, password: str) -> Path:
    """A private [client] option file that carries the password to the mysql client."""
    escaped = password.replace("\\", "\\\\").replace('"', '\\"')
    return instance.private_file(directory / "client.cnf", f'[client]\npassword="{escaped}"\n')


# ---------------------------------------------------------------- external target


def check_target_url(url: str) -> str:
    parts = target_url.check(url, schemes=("mysql",), example="mysql://user@host:port/dbname",
                             password_from="MYSQL_PWD or the [client] section of ~/.my.cnf")
    if not parts.path.strip("/"):
        raise UsageError(f"--target {url!r}: no database name (sysbench needs one for its tables)")
    return url


def _password_from_environment() -> str | None:
    """MYSQL_PWD, else the [client] password of ~/.my.cnf, else none."""
    if os.environ.get("MYSQL_PWD"):
        return os.environ["MYSQL_PWD"]
    cnf = Path.home() / ".my.cnf"
    if cnf.is_file():
        parser = configparser.ConfigParser(allow_no_value=True, interpolation=None, strict=False)
        with contextlib.suppress(configparser.Error, OSError):
            parser.read(cnf)
            value = parser.get("client", "password", fallback=None)
            if value is not None:
                return value.strip().strip('"').strip("'")
    return None


class MySQLFamily:
    """A flavour of the MySQL family (interfaces.Engine). Subclasses say how their
    server binaries are recognised and how a data directory is initialised."""

    name = ENGINE
    flavour = ""  # "mariadb", "mysql"
    title = ""  # "MariaDB", "MySQL"
    protocol = "mysql"
    setting_option = "--mysql-setting"
    server_names: tuple[str, ...] = ()
    install_hint = INSTALL_HINT

    def is_mine(self, version_line: str) -> bool:
        raise NotImplementedError

    def init_argv(self, binaries: MyBinaries, data: Path) -> list[str]:
        raise NotImplementedError

    def check_cluster(self, cluster: Mapping[str, str]) -> None:
        for name, value in cluster.items():
            if name not in CLUSTER_OPTIONS:
                raise UsageError(f"unknown {self.title} cluster option {name!r} (known: {', '.join(CLUSTER_OPTIONS)})")
            if name == "innodb_page_size" and value.lower() not in INNODB_PAGE_SIZES:
                raise UsageError(f"cluster option innodb_page_size: {CLUSTER_OPTIONS[name]}, not {value!r}")

    def install_db(self, server: Path, bindir: Path | None) -> Path | None:
        return None

    def find_server_binaries(self, bindir: Path | None = None, executor: Executor = execute.LOCAL) -> MyBinaries:
        for name in self.server_names:
            server = _search((name,), bindir)
            if server is None:
                continue
            line = execute.version_line(server, executor)
            if self.is_mine(line):
                return MyBinaries(server=server, install_db=self.install_db(server, bindir), version_line=line)
        where = f" in {bindir}" if bindir is not None else ""
        raise ToolMissing(f"no {self.title} server ({', '.join(self.server_names)}) found{where}: {self.install_hint}")

    def available(self, bindir: Path | None = None, executor: Executor = execute.LOCAL) -> bool:
        try:
            self.find_server_binaries(bindir, executor)
        except ToolMissing:
            return False
        return True

    def check_target_url(self, url: str) -> str:
        return check_target_url(url)

    def check_settings(self, settings: Mapping[str, str], executor: Executor, bindir: Path | None = None) -> None:
        """Names are checked by the server when it starts (mysqld has no list to ask)."""

    def client_libraries(self) -> dict:
        return client_libraries()

    @contextlib.contextmanager
    def external(self, url: str, *, bindir: Path | None = None, executor: Executor = execute.LOCAL
                 ) -> Iterator[MyTarget]:
        """An existing server; its flavour is read from its version."""
        url = check_target_url(url)
        parts = urlsplit(url)
        conn_kw: dict[str, Any] = dict(host=parts.hostname, port=parts.port or 3306,
                                       user=unquote(parts.username or "root"), database=unquote(parts.path.strip("/")))
        password = _password_from_environment()
        try:
            with contextlib.closing(pymysql.connect(password=password or "", connect_timeout=10, **conn_kw)) as db:
                with db.cursor() as cur:
                    cur.execute("SELECT VERSION()")
                    version = _first(cur)
        except pymysql.MySQLError as exc:
            raise ConnectionFailed(
                f"cannot connect to {url}: {_one_line(exc)} "
                "(check host, port and user; the password comes from MYSQL_PWD or ~/.my.cnf)"
            ) from None
        # Password files for the tools: recorded, so that a killed dbarena leaves none behind.
        secrets_dir, record = instance.new_top("dbarena-mysql-client-", "mysql client files")
        try:
            conn = Connection(protocol=self.protocol, host=str(conn_kw["host"]), port=int(conn_kw["port"]),
                              user=str(conn_kw["user"]), dbname=str(conn_kw["database"]), url=url)
            flavour = "mariadb" if "mariadb" in version.lower() else "mysql"
            yield MyTarget(conn=conn, description=url, server_version=version, throwaway=False, secrets_dir=secrets_dir,
                           password=password, flavour=flavour)
        finally:
            shutil.rmtree(secrets_dir, ignore_errors=True)
            record.remove()

    @contextlib.contextmanager
    def throwaway(
        self,
        *,
        settings: Mapping[str, str] | None = None,
        max_connections: int = 151,
        bindir: Path | None = None,
        keep: bool = False,
        executor: Executor = execute.LOCAL,
        ready_timeout_s: float = 120,
        cluster: Mapping[str, str] | None = None,
        data_parent: Path | None = None,
        cpus: Sequence[int] | None = None,
    ) -> Iterator[MyTarget]:
        """A fresh server of this flavour for the duration of the with-block; cluster
        options go both to the data directory's initialisation and to the server's
        configuration (InnoDB refuses to open a data directory of another page size)."""
        cluster = dict(cluster or {})
        self.check_cluster(cluster)
        settings = {**dict(settings or {}), **{k.replace("_", "-"): v for k, v in cluster.items()}}
        binaries = self.find_server_binaries(bindir, executor)
        user = instance.unprivileged_user("mysql")
        top, record = instance.new_top("dbarena-mysql-", self.name, data_parent)
        proc = None
        target = None
        try:
            instance.check_reachable(top, user)
            data, sock_dir, client_dir, tmp = top / "data", top / "socket", top / "client", top / "tmp"
            for d in (sock_dir, client_dir, tmp):
                d.mkdir(mode=0o700)
            log_path, cnf = top / "error.log", top / "my.cnf"
            instance.give_to(user, top, sock_dir, tmp)
            socket_path = sock_dir / "mysqld.sock"
            # The server writes temporary files to $TMPDIR, which its user may not own.
            server_env = dict(os.environ, TMPDIR=str(tmp))

            init = self.init_argv(binaries, data) + [f"--{k.replace('_', '-')}={v}" for k, v in cluster.items()]
            done = executor.run(init, user=user, timeout=600, cwd=top, env=server_env)
            if done.returncode != 0:
                lines = (done.stderr + done.stdout).strip().splitlines()
                errors = [l for l in lines if "[ERROR]" in l]
                raise EnvironmentProblem(
                    f"initialising the MySQL data directory failed: {(errors or lines or ['no output'])[0].strip()}"
                )

            for attempt in range(3):
                port = instance.free_port()
                options: dict[str, str | None] = {
                    "datadir": str(data),
                    "socket": str(socket_path),
                    "port": str(port),
                    "bind-address": "127.0.0.1",
                    "pid-file": str(top / "mysqld.pid"),
                    "tmpdir": str(tmp),
                    "log-error": str(log_path),
                    "skip-name-resolve": None,
                    "max-connections": str(max_connections),
                    **settings,
                }
                lines = ["[mysqld]"] + [k if v is None else f"{k} = {v}" for k, v in options.items()]
                cnf.write_text("\n".join(lines) + "\n")
                cnf.chmod(0o644)
                proc = executor.spawn([str(binaries.server), f"--defaults-file={cnf}"], log_path=top / "stdout.log",
                                     user=user, env=server_env, cpus=cpus)
                record.update(server_pgid=proc.pid)
                version = _wait_ready(proc, socket_path, ready_timeout_s, log_path)
                if version is not None:
                    break
                reason = _log_reason(log_path)
                if settings and ("unknown variable" in reason or "unknown option" in reason or "invalid" in reason.lower()):
                    raise UsageError(f"--mysql-setting: the server refused a setting: {reason}")
                if "Address already in use" not in reason or attempt == 2:
                    raise EnvironmentProblem(f"the MySQL server did not start: {reason}")
            assert version is not None  # each attempt either started the server or raised

            password = secrets.token_urlsafe(24)
            with contextlib.closing(pymysql.connect(unix_socket=str(socket_path), user="root", password="",
                                                    connect_timeout=10, autocommit=True)) as db:
                with db.cursor() as cur:
                    cur.execute("CREATE USER 'dbarena'@'127.0.0.1' IDENTIFIED BY %s", (password,))
                    cur.execute("GRANT ALL PRIVILEGES ON *.* TO 'dbarena'@'127.0.0.1'")
                    cur.execute("CREATE DATABASE dbarena")
                    _lock_root(cur)
            conn = Connection(protocol=self.protocol, host="127.0.0.1", port=port, user="dbarena", dbname="dbarena",
                              url=f"mysql://dbarena@127.0.0.1:{port}/dbarena")
            target = MyTarget(conn=conn, description=f"throwaway {self.title} {version} at 127.0.0.1:{port}",
                              server_version=version, throwaway=True, secrets_dir=client_dir, data_dir=data,
                              log_path=log_path, process=proc, password=password, flavour=self.flavour,
                              executor=executor, record=record,
                              server_argv=(str(binaries.server), f"--defaults-file={cnf}"), server_user=user,
                              server_env=server_env, server_cpus=tuple(cpus) if cpus else None)
            yield target
        finally:
            # SIGTERM is mysqld's normal shutdown. The server may have been restarted
            # (a restored data directory): the current one.
            instance.release(target.process if target is not None else proc, top, record, keep=keep and target is not None, first_signal=signal.SIGTERM,
                             grace_s=120)


def _await_buffer_pool(db, deadline: float) -> None:
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


def _lock_root(cur) -> None:
    """mariadb-install-db creates root at localhost, 127.0.0.1, ::1 and the host name,
    all without a password: anyone on the machine could log in over TCP. Drop all but
    root@localhost and give that one a random password nobody keeps; dbarena's own
    user has every privilege the tools need."""
    cur.execute("SELECT host FROM mysql.user WHERE user = 'root'")
    for (host,) in cur.fetchall():
        if host != "localhost":
            cur.execute("DROP USER 'root'@%s", (host,))
    cur.execute("ALTER USER 'root'@'localhost' IDENTIFIED BY %s", (secrets.token_urlsafe(24),))


def _wait_ready(proc, socket_path: Path, timeout_s: float, log_path: Path) -> str | None:
    """Server version once it accepts connections; None if it exited first."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return None
        if socket_path.exists():
            try:
                with contextlib.closing(pymysql.connect(unix_socket=str(socket_path), user="root", password="",
                                                        connect_timeout=5)) as db:
                    with db.cursor() as cur:
                        cur.execute("SELECT VERSION()")
                        return _first(cur)
            except pymysql.MySQLError:
                pass
        time.sleep(0.1)
    execute.stop(proc)
    raise EnvironmentProblem(f"the MySQL server did not accept connections within {timeout_s:.0f} s: {_log_reason(log_path)}")
