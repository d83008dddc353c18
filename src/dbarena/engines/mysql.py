"""MySQL / MariaDB: a throwaway server from the machine's own binaries, or an
existing server (self-managed or a managed service).

The throwaway server (MariaDB: mariadb-install-db + mariadbd; MySQL: mysqld
--initialize-insecure) lives in a fresh temporary directory, listens on 127.0.0.1
and a private socket only, and is always stopped and removed (unless --keep).
Once set up, its root account is locked away (see _lock_root); benchmark tools
connect over TCP as user `dbarena`, whose random password lives in private option
files (sysbench --config-file, mysqlslap --defaults-extra-file), never on a
command line.
"""

from __future__ import annotations

import configparser
import contextlib
import os
import secrets
import shutil
import signal
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator
from urllib.parse import unquote, urlsplit

import pymysql

from dbarena import execute
from dbarena.engines import instance, target_url
from dbarena.errors import ConnectionFailed, EnvironmentProblem, ToolMissing, UsageError
from dbarena.model import Connection

ENGINE = "mysql"
INSTALL_HINT = "install MariaDB with `apt-get install mariadb-server mariadb-client`"
_SBIN = ("/usr/sbin", "/usr/libexec", "/usr/local/mysql/bin", "/usr/local/bin")


@dataclass(frozen=True)
class MyBinaries:
    server: Path  # mariadbd or mysqld
    install_db: Path | None  # mariadb-install-db (MariaDB); None for MySQL (mysqld --initialize-insecure)
    version_line: str

    @property
    def mariadb(self) -> bool:
        return "mariadb" in self.version_line.lower()


def _which(names: tuple[str, ...], extra_dirs: tuple[str, ...] = ()) -> Path | None:
    path = os.pathsep.join([os.environ.get("PATH", ""), *extra_dirs])
    for name in names:
        found = shutil.which(name, path=path)
        if found:
            return Path(found)
    return None


def find_server_binaries(bindir: Path | None = None) -> MyBinaries:
    dirs = (str(bindir),) if bindir is not None else _SBIN
    search = (lambda names: _which(names, dirs)) if bindir is None else (
        lambda names: next((bindir / n for n in names if (bindir / n).is_file()), None))
    server = search(("mariadbd", "mysqld"))
    if server is None:
        raise ToolMissing(f"no MySQL or MariaDB server (mariadbd, mysqld) found: {INSTALL_HINT}")
    line = execute.version_line(server)
    install_db = None
    if "mariadb" in line.lower():
        install_db = search(("mariadb-install-db", "mysql_install_db"))
        if install_db is None:
            raise ToolMissing(f"mariadb-install-db not found next to {server}: {INSTALL_HINT}")
    return MyBinaries(server=server, install_db=install_db, version_line=line)


def client_tool(name: str) -> Path:
    """mysqlslap (or MariaDB's mariadb-slap), sysbench ... from PATH."""
    names = {"mysqlslap": ("mysqlslap", "mariadb-slap")}.get(name, (name,))
    found = _which(names)
    if found is None:
        package = "sysbench" if name == "sysbench" else "mariadb-client"
        raise ToolMissing(f"{name} not found: install it with `apt-get install {package}`")
    return found


@dataclass
class MyTarget:
    conn: Connection
    description: str
    server_version: str
    throwaway: bool
    secrets_dir: Path | None = None
    data_dir: Path | None = None
    log_path: Path | None = None
    process: object | None = field(default=None, repr=False)
    engine: str = ENGINE
    password: str | None = field(default=None, repr=False)  # in memory only, for provenance queries

    @property
    def url(self) -> str:
        return self.conn.url

    def client_env(self) -> dict:
        env = dict(os.environ)
        env.pop("MYSQL_PWD", None)  # the option files hold the password
        return env

    def tool(self, name: str) -> Path:
        return client_tool(name)

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

    def checkpoint(self) -> None:
        """MySQL's nearest to a checkpoint: close and flush all tables."""
        with contextlib.closing(self.connect()) as db, db.cursor() as cur:
            cur.execute("FLUSH TABLES")

    def dataset_facts(self) -> dict:
        def read(cur) -> dict:
            cur.execute("SELECT COALESCE(SUM(data_length + index_length), 0) FROM information_schema.tables"
                        " WHERE table_schema = DATABASE()")
            return {"database_bytes": int(cur.fetchone()[0])}
        return self._query(read)

    def keep_note(self) -> str:
        return (
            f"kept the throwaway MySQL server: {self.url} (pid {self.process.pid}), data in {self.data_dir}; "
            f"connect with mysql --defaults-extra-file={self.conn.mysql_defaults_file} -h 127.0.0.1 "
            f"-P {self.conn.port} -u {self.conn.user} {self.conn.dbname}; "
            f"remove with: kill {self.process.pid} && rm -rf {self.data_dir.parent}"
        )


# The variables the published MySQL studies tuned or argued about.
KEY_VARIABLES = (
    "innodb_buffer_pool_size", "innodb_flush_log_at_trx_commit", "sync_binlog", "innodb_flush_method",
    "innodb_log_file_size", "innodb_redo_log_capacity", "innodb_io_capacity", "innodb_doublewrite",
    "innodb_checksum_algorithm", "innodb_file_per_table", "max_connections", "log_bin", "binlog_format",
    "transaction_isolation", "tx_isolation", "thread_handling", "table_open_cache", "performance_schema",
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


def _client_files(directory: Path, password: str) -> tuple[Path, Path]:
    """Private option files that carry the password to sysbench and mysqlslap."""
    sb = instance.private_file(directory / "sysbench.cnf", f"mysql-password={password}\n")
    escaped = password.replace("\\", "\\\\").replace('"', '\\"')
    my = instance.private_file(directory / "client.cnf", f'[client]\npassword="{escaped}"\n')
    return sb, my


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


@contextlib.contextmanager
def external(url: str, bindir: Path | None = None) -> Iterator[MyTarget]:
    url = check_target_url(url)
    parts = urlsplit(url)
    conn_kw = dict(host=parts.hostname, port=parts.port or 3306, user=unquote(parts.username or "root"),
                   database=unquote(parts.path.strip("/")))
    password = _password_from_environment()
    try:
        with contextlib.closing(pymysql.connect(password=password or "", connect_timeout=10, **conn_kw)) as db:
            with db.cursor() as cur:
                cur.execute("SELECT VERSION()")
                version = cur.fetchone()[0]
    except pymysql.MySQLError as exc:
        raise ConnectionFailed(
            f"cannot connect to {url}: {_one_line(exc)} "
            "(check host, port and user; the password comes from MYSQL_PWD or ~/.my.cnf)"
        ) from None
    secrets_dir = Path(tempfile.mkdtemp(prefix="dbarena-mysql-client-"))
    try:
        sb, my = _client_files(secrets_dir, password) if password else (None, None)
        conn = Connection(engine=ENGINE, host=conn_kw["host"], port=conn_kw["port"], user=conn_kw["user"],
                          dbname=conn_kw["database"], url=url,
                          sysbench_config=str(sb) if sb else None, mysql_defaults_file=str(my) if my else None)
        yield MyTarget(conn=conn, description=url, server_version=version, throwaway=False, secrets_dir=secrets_dir,
                       password=password)
    finally:
        shutil.rmtree(secrets_dir, ignore_errors=True)


# ---------------------------------------------------------------- throwaway instance


@contextlib.contextmanager
def throwaway(
    *,
    settings: dict[str, str] | None = None,
    max_connections: int = 151,
    bindir: Path | None = None,
    keep: bool = False,
    ready_timeout_s: float = 120,
) -> Iterator[MyTarget]:
    """A fresh MariaDB/MySQL server for the duration of the with-block."""
    settings = dict(settings or {})
    binaries = find_server_binaries(bindir)
    user = instance.unprivileged_user("mysql")
    top = Path(tempfile.mkdtemp(prefix="dbarena-mysql-"))
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

        if binaries.mariadb:
            init = [binaries.install_db, "--no-defaults", f"--datadir={data}", "--skip-test-db",
                    "--auth-root-authentication-method=normal", "--skip-name-resolve"]
        else:
            init = [binaries.server, "--no-defaults", "--initialize-insecure", f"--datadir={data}"]
        done = execute.run(init, user=user, timeout=600, cwd=top, env=server_env)
        if done.returncode != 0:
            lines = (done.stderr + done.stdout).strip().splitlines()
            errors = [l for l in lines if "[ERROR]" in l]
            raise EnvironmentProblem(
                f"initialising the MySQL data directory failed: {(errors or lines or ['no output'])[0].strip()}"
            )

        for attempt in range(3):
            port = instance.free_port()
            options = {
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
            proc = execute.spawn([binaries.server, f"--defaults-file={cnf}"], log_path=top / "stdout.log",
                                 user=user, env=server_env)
            version = _wait_ready(proc, socket_path, ready_timeout_s, log_path)
            if version is not None:
                break
            reason = _log_reason(log_path)
            if settings and ("unknown variable" in reason or "unknown option" in reason or "invalid" in reason.lower()):
                raise UsageError(f"--mysql-setting: the server refused a setting: {reason}")
            if "Address already in use" not in reason or attempt == 2:
                raise EnvironmentProblem(f"the MySQL server did not start: {reason}")

        password = secrets.token_urlsafe(24)
        with contextlib.closing(pymysql.connect(unix_socket=str(socket_path), user="root", password="",
                                                connect_timeout=10, autocommit=True)) as db:
            with db.cursor() as cur:
                cur.execute("CREATE USER 'dbarena'@'127.0.0.1' IDENTIFIED BY %s", (password,))
                cur.execute("GRANT ALL PRIVILEGES ON *.* TO 'dbarena'@'127.0.0.1'")
                cur.execute("CREATE DATABASE dbarena")
                _lock_root(cur)
        sb, my = _client_files(client_dir, password)
        conn = Connection(engine=ENGINE, host="127.0.0.1", port=port, user="dbarena", dbname="dbarena",
                          url=f"mysql://dbarena@127.0.0.1:{port}/dbarena",
                          sysbench_config=str(sb), mysql_defaults_file=str(my))
        flavour = "MariaDB" if binaries.mariadb else "MySQL"
        target = MyTarget(conn=conn, description=f"throwaway {flavour} {version} at 127.0.0.1:{port}",
                          server_version=version, throwaway=True, secrets_dir=client_dir, data_dir=data,
                          log_path=log_path, process=proc, password=password)
        yield target
    finally:
        # SIGTERM is mysqld's normal shutdown.
        instance.release(proc, top, keep=keep and target is not None, first_signal=signal.SIGTERM, grace_s=120)


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
                        return cur.fetchone()[0]
            except pymysql.MySQLError:
                pass
        time.sleep(0.1)
    execute.stop(proc)
    raise EnvironmentProblem(f"the MySQL server did not accept connections within {timeout_s:.0f} s: {_log_reason(log_path)}")
