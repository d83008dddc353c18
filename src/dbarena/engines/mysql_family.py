"""The MySQL family (MariaDB, MySQL): a throwaway server from the machine's own
binaries, or an existing server (self-managed or a managed service).

What the flavours share lives here; a flavour (mariadb.py, mysql.py) says how its
binaries are recognised and how a data directory is initialised. The throwaway
server lives in a fresh temporary directory, listens on 127.0.0.1 and a private
socket only, and is always stopped and removed (unless --keep). Once set up, its
root account is locked away (see _lock_root); benchmark tools connect over TCP as
user `dbarena`, whose random password lives in private files in each tool's own
format (sysbench --config-file, mysqlslap --defaults-extra-file), never on a
command line. Where the binaries are: mysql_binaries.py; the server once running
(MyTarget, with the tools' password files): mysql_target.py.
"""

from __future__ import annotations

import configparser
import contextlib
import ipaddress
import os
import secrets
import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Mapping, Sequence
from urllib.parse import unquote, urlsplit

from dbarena import execute
from dbarena.engines import instance, target_url, tls as tlsmod
from dbarena.engines.mysql_binaries import INSTALL_HINT, MyBinaries, search
from dbarena.engines.mysql_target import ENGINE, STOP_SIGNAL, MyTarget, log_reason, tls_options
from dbarena.errors import ConnectionFailed, DatabaseError, EnvironmentProblem, ToolMissing, UsageError
from dbarena.interfaces import Executor
from dbarena.lazy import lazy_import
from dbarena.lifecycle import state
from dbarena.limits import one_line
from dbarena.model import Connection, Tls

if TYPE_CHECKING:
    import pymysql
else:
    pymysql = lazy_import("pymysql")  # the driver: only a run or a --target needs it

# What creating the data directory decides (InnoDB's page size is fixed for the data
# directory's life): option -> what it takes.
CLUSTER_OPTIONS = {"innodb_page_size": "4k, 8k, 16k, 32k or 64k (InnoDB's page size) [default: 16k]"}
INNODB_PAGE_SIZES = ("4k", "8k", "16k", "32k", "64k", "4096", "8192", "16384", "32768", "65536")
# How long a throwaway server that never opened is given to stop before SIGKILL (throwaway()).
NOT_OPEN_GRACE_S = 5.0


def client_libraries() -> dict[str, str]:
    return {"pymysql": pymysql.__version__}


def _first(cur: pymysql.cursors.Cursor) -> Any:
    """The first value of a query that returns one row."""
    row = cur.fetchone()
    if row is None:
        raise DatabaseError("the query returned no row")
    return row[0]


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


# Server variables that make the server run a command, load code or run SQL of a file
# before anyone connects (MariaDB's and MySQL's server option references), and what
# each does: a study file holding one is refused unless the user consents
# (`--allow-commands`; study/consent.py). Names as the option files spell them, with
# dashes. Not here: init_connect (SQL for connections without SUPER; dbarena's user has
# every privilege, so it never runs for the workloads) and secure_file_priv (MariaDB's
# default already lets the server's own user write anywhere it may; the server runs as
# an unprivileged user).
CODE_SETTINGS: Mapping[str, str] = {
    "plugin-load": "loads plugins", "plugin-load-add": "loads plugins", "early-plugin-load": "loads plugins",
    "plugin-dir": "chooses where plugins are loaded from", "init-file": "runs the SQL of a file as root at start",
    "wsrep-provider": "loads a library", "wsrep-notify-cmd": "runs a command",
    "wsrep-sst-method": "runs a script (wsrep_sst_<method>)",
}
# Option prefixes my_getopt takes before any long option (--loose-plugin-load loads
# plugins as --plugin-load does).
_OPTION_PREFIXES = ("loose-", "enable-", "disable-", "skip-", "maximum-")


def code_setting(name: str) -> str | None:
    """What a server variable runs or loads (CODE_SETTINGS), or None for an ordinary
    one. Read as the server reads option names: case-insensitive, `_` and `-` alike,
    after any my_getopt prefix, and also as an abbreviation, since mysqld takes an
    unambiguous prefix of a long option (`init-fil` is `init-file`)."""
    key = name.strip().lower().replace("_", "-")
    for prefix in _OPTION_PREFIXES:
        if key.startswith(prefix) and len(key) > len(prefix):
            key = key[len(prefix):]
            break
    if key in CODE_SETTINGS:
        return CODE_SETTINGS[key]
    # An abbreviation of one of them (a prefix of at least a few letters: "plugin" is
    # ambiguous, which mysqld refuses anyway, but refusing it costs nothing).
    longer = [what for full, what in CODE_SETTINGS.items() if len(key) >= 4 and full.startswith(key)]
    return longer[0] if longer else None


class MySQLFamily:
    """A flavour of the MySQL family (interfaces.Engine). Subclasses say how their
    server binaries are recognised and how a data directory is initialised."""

    name = ENGINE
    flavour = ""  # "mariadb", "mysql"
    title = ""  # "MariaDB", "MySQL"
    protocol = "mysql"
    setting_option = "--mysql-setting"
    setting_help = "MySQL/MariaDB server variable for the throwaway instance (repeatable)."
    client_certificates = True
    code_settings = CODE_SETTINGS
    stop_signal: int = STOP_SIGNAL
    password_env = "MYSQL_PWD"  # what the MySQL family's client tools read a password from
    server_package = ""  # the Debian package of this flavour's server

    def host_packages(self, target: bool) -> set[str]:
        """The Debian packages a fleet host needs: the client tools (MariaDB's, which
        speak to either flavour) for a --target, this flavour's server too otherwise."""
        return {"mariadb-client"} | (set() if target else {self.server_package})
    server_names: tuple[str, ...] = ()
    install_hint = INSTALL_HINT

    def is_mine(self, version_line: str) -> bool:
        raise NotImplementedError

    def code_setting(self, name: str) -> str | None:
        return code_setting(name)

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
            server = search((name,), bindir)
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

    def target_url(self, host: str, port: int, user: str) -> str:
        return f"mysql://{user}@{host}:{port}/mysql"

    def password_file(self, host: str, port: int, user: str, password: str) -> tuple[str, str]:
        """An option file (--defaults-extra-file) of the [client] group: the password
        quoted, a backslash and a double quote escaped (MySQL's option files' escapes)."""
        quoted = password.replace("\\", "\\\\").replace('"', '\\"')
        return "my.cnf", f"[client]\nuser={user}\npassword=\"{quoted}\"\nhost={host}\nport={port}\n"

    def version_here(self, bindir: Path | None) -> str | None:
        # The server's --version line ("mariadbd  Ver 10.11.6-MariaDB-0+deb12u1 for ...")
        # is not the version() the server reports, which a bundle records: known once
        # it runs.
        return None

    def check_settings(self, settings: Mapping[str, str], executor: Executor, bindir: Path | None = None) -> None:
        """Names are checked by the server when it starts (mysqld has no list to ask)."""

    def client_libraries(self) -> dict[str, str]:
        return client_libraries()

    @contextlib.contextmanager
    def external(self, url: str, *, bindir: Path | None = None, executor: Executor = execute.LOCAL,
                 tls: Tls | None = None) -> Iterator[MyTarget]:
        """An existing server; its flavour is read from its version. `tls`: TLS required
        of it, its certificate verified (model.Tls)."""
        url = check_target_url(url)
        parts = urlsplit(url)
        conn_kw: dict[str, Any] = dict(host=parts.hostname, port=parts.port or 3306,
                                       user=unquote(parts.username or "root"), database=unquote(parts.path.strip("/")))
        password = _password_from_environment()
        try:
            with contextlib.closing(pymysql.connect(password=password or "", connect_timeout=10, **conn_kw,
                                                    **tls_options(tls))) as db:
                with db.cursor() as cur:
                    cur.execute("SELECT VERSION()")
                    version = _first(cur)
        except pymysql.MySQLError as exc:
            raise ConnectionFailed(
                f"cannot connect to {url}: {one_line(exc)} "
                "(check host, port and user; the password comes from MYSQL_PWD or ~/.my.cnf)"
            ) from None
        # Password files for the tools: recorded, so that a killed dbarena leaves none behind.
        secrets_dir, record = instance.new_top("dbarena-mysql-client-", "mysql client files")
        try:
            conn = Connection(protocol=self.protocol, host=str(conn_kw["host"]), port=int(conn_kw["port"]),
                              user=str(conn_kw["user"]), dbname=str(conn_kw["database"]), url=url, tls=tls)
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
        listen: str | None = None,
        password: str | None = None,
        clients: Sequence[str] = (),
        tls: bool = False,
        tls_client_certs: Sequence[str] = (),
    ) -> Iterator[MyTarget]:
        """A fresh server of this flavour for the duration of the with-block; cluster
        options go both to the data directory's initialisation and to the server's
        configuration (InnoDB refuses to open a data directory of another page size).
        `listen`: the address of this host it listens on instead of 127.0.0.1 (the server
        of a `fleet run --together` that other hosts drive): dbarena's user is then one
        account per IP address in `clients` with privileges on the tools' databases only
        (remote_grants), and nowhere else; `password`: that user's (default random).
        `tls` (with `listen`): a certificate made for this server (tls.py) and dbarena's
        user created REQUIRE SSL; `tls_client_certs`: the certificates it trusts from
        clients that present one (the server verifies any a client presents: sysbench 1.0
        always does). Where this build or this host cannot (no TLS in the server, no
        openssl command), the server goes on without and the target's tls_problem says why."""
        cluster = dict(cluster or {})
        grants = remote_grants(clients) if listen else local_grants()  # checked before anything is made
        self.check_cluster(cluster)
        settings = {**dict(settings or {}), **{k.replace("_", "-"): v for k, v in cluster.items()}}
        binaries = self.find_server_binaries(bindir, executor)
        user = instance.unprivileged_user("mysql")
        top, record = instance.new_top("dbarena-mysql-", self.name, data_parent, stop_signal=self.stop_signal)
        spawned: list[subprocess.Popen[bytes]] = []  # the server's process, once there is one (released below)
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

            self._initialise(binaries, data, cluster, user, top, server_env, record, executor)
            tls_options_cnf: dict[str, str] = {}
            tls_cert, tls_problem, tls_dir = None, None, top / "tls"
            if listen and tls:
                try:
                    tls_options_cnf = self._server_certificate(binaries, tls_dir, listen, tls_client_certs, user,
                                                               executor)
                    tls_cert = tlsmod.read_certificate(tls_dir / "server.crt")
                except tlsmod.TlsUnavailable as exc:
                    tls_problem = str(exc)

            proc, port, version = self._start(binaries, top, data, socket_path, log_path, cnf, listen,
                                              max_connections, {**tls_options_cnf, **settings}, bool(settings),
                                              user, server_env, cpus, record, ready_timeout_s, executor, spawned)

            password = password or secrets.token_urlsafe(24)
            address = listen or "127.0.0.1"
            tls_problem = self._create_user(socket_path, log_path, grants, password, tls_cert, tls_problem)
            tls_cert = None if tls_problem else tls_cert
            conn = Connection(protocol=self.protocol, host=address, port=port, user="dbarena", dbname="dbarena",
                              url=f"mysql://dbarena@{address}:{port}/dbarena",
                              tls=Tls(ca=str(tls_dir / "server.crt")) if tls_cert is not None else None)
            target = MyTarget(conn=conn, description=f"throwaway {self.title} {version} at {address}:{port}",
                              server_version=version, throwaway=True, secrets_dir=client_dir, data_dir=data,
                              log_path=log_path, process=proc, password=password, flavour=self.flavour,
                              executor=executor, record=record,
                              server_argv=(str(binaries.server), f"--defaults-file={cnf}"), server_user=user,
                              server_env=server_env, server_cpus=tuple(cpus) if cpus else None,
                              tls_cert=tls_cert, tls_problem=tls_problem)
            yield target
        finally:
            # SIGTERM is mysqld's normal shutdown. The server may have been restarted
            # (a restored data directory): the current one. One that never opened (a
            # Ctrl-C or SIGTERM while it starts, or a failed start) is given seconds, not
            # minutes: MariaDB 10.11 sent SIGTERM while it starts can hang for good (its
            # signal thread begins the shutdown before the startup is done; seen in
            # tests/e2e/test_kill_anywhere.py), and with nothing of it to keep, a Ctrl-C
            # would wait the whole grace for the SIGKILL.
            instance.release(target.process if target is not None else (spawned[-1] if spawned else None), top, record,
                             keep=keep and target is not None, first_signal=STOP_SIGNAL,
                             grace_s=120 if target is not None else NOT_OPEN_GRACE_S)

    def _initialise(self, binaries: MyBinaries, data: Path, cluster: Mapping[str, str], user: str | None, top: Path,
                    server_env: Mapping[str, str], record: state.Record, executor: Executor) -> None:
        """The data directory, made by the server's own initialisation (its cluster options
        given there too)."""
        init = self.init_argv(binaries, data) + [f"--{k.replace('_', '-')}={v}" for k, v in cluster.items()]
        with instance.initialising(record) as on_start:
            done = executor.run(init, user=user, timeout=600, cwd=top, env=dict(server_env), on_start=on_start,
                                session=True)
        if done.returncode != 0:
            lines = (done.stderr + done.stdout).strip().splitlines()
            errors = [l for l in lines if "[ERROR]" in l]
            raise EnvironmentProblem(
                f"initialising the MySQL data directory failed: {(errors or lines or ['no output'])[0].strip()}"
            )

    def _start(self, binaries: MyBinaries, top: Path, data: Path, socket_path: Path, log_path: Path, cnf: Path,
               listen: str | None, max_connections: int, extra: Mapping[str, str], has_settings: bool,
               user: str | None, server_env: Mapping[str, str], cpus: Sequence[int] | None, record: state.Record,
               ready_timeout_s: float, executor: Executor, spawned: list[subprocess.Popen[bytes]]
               ) -> tuple[subprocess.Popen[bytes], int, str]:
        """The server started on a free port (three tries: another process may take the
        port between its choice and the server's bind): its process, port and version.
        `extra`: the TLS options and the study's settings, last so that they win. Each
        process started goes in `spawned` at once, for the caller to stop whatever happens."""
        for attempt in range(3):
            port = instance.free_port()
            options: dict[str, str | None] = {
                "datadir": str(data),
                "socket": str(socket_path),
                "port": str(port),
                "bind-address": listen or "127.0.0.1",
                "pid-file": str(top / "mysqld.pid"),
                "tmpdir": str(top / "tmp"),
                "log-error": str(log_path),
                "skip-name-resolve": None,
                "max-connections": str(max_connections),
                **extra,
            }
            lines = ["[mysqld]"] + [k if v is None else f"{k} = {v}" for k, v in options.items()]
            cnf.write_text("\n".join(lines) + "\n")
            cnf.chmod(0o644)
            proc = executor.spawn([str(binaries.server), f"--defaults-file={cnf}"], log_path=top / "stdout.log",
                                  user=user, env=dict(server_env), cpus=cpus)
            spawned.append(proc)
            record.update(**state.process_fields("server_pgid", proc.pid))
            version = _wait_ready(proc, socket_path, ready_timeout_s, log_path)
            if version is not None:
                return proc, port, version
            reason = log_reason(log_path)
            if has_settings and ("unknown variable" in reason or "unknown option" in reason
                                 or "invalid" in reason.lower()):
                raise UsageError(f"--mysql-setting: the server refused a setting: {reason}")
            if "Address already in use" not in reason or attempt == 2:
                raise EnvironmentProblem(f"the MySQL server did not start: {reason}")
        raise AssertionError("unreachable: each attempt either started the server or raised")

    def _create_user(self, socket_path: Path, log_path: Path, grants: Sequence[tuple[str, str]], password: str,
                     tls_cert: str | None, tls_problem: str | None) -> str | None:
        """The dbarena database and user (one account per host of `grants`, REQUIRE SSL
        where the server has TLS), root locked; why TLS is off where the server refused
        it after all (else `tls_problem` as given)."""
        with contextlib.closing(pymysql.connect(unix_socket=str(socket_path), user="root", password="",
                                                connect_timeout=10, autocommit=True)) as db:
            with db.cursor() as cur:
                if tls_cert is not None:
                    tls_problem = _tls_refused(cur, log_path)
                    tls_cert = None if tls_problem else tls_cert
                cur.execute("CREATE DATABASE dbarena")
                # The host and the password as parameters, which pymysql quotes (a '%'
                # in the statement's own text would be taken for a format character).
                # REQUIRE SSL: a connection without TLS is refused, the right password or not.
                require = " REQUIRE SSL" if tls_cert is not None else ""
                for host in dict.fromkeys(host for host, _ in grants):
                    cur.execute(f"CREATE USER 'dbarena'@%s IDENTIFIED BY %s{require}", (host, password))
                for host, privileges in grants:
                    cur.execute(f"GRANT {privileges} TO 'dbarena'@%s", (host,))
                _lock_root(cur)
        return tls_problem

    def _server_certificate(self, binaries: MyBinaries, tls_dir: Path, listen: str, client_certs: Sequence[str],
                            user: str | None, executor: Executor) -> dict[str, str]:
        """A certificate and key for a listening server, made by its own user in a
        directory only that user reaches, and the file of the client certificates it
        trusts; the server options that name them. TlsUnavailable when this build has
        no TLS (its options list no ssl-cert: it would refuse to start with one)."""
        listed = executor.run([str(binaries.server), "--no-defaults", "--verbose", "--help"], user=user, timeout=60)
        if not any(line.split()[:1] == ["ssl-cert"] for line in listed.stdout.splitlines()):
            raise tlsmod.TlsUnavailable(f"this {self.title} server has no TLS (its --help lists no ssl-cert)")
        tls_dir.mkdir(mode=0o700)
        instance.give_to(user, tls_dir)
        cert, key = tls_dir / "server.crt", tls_dir / "server.key"
        tlsmod.make_pair(cert, key, f"dbarena together server {listen}", user=user, executor=executor)
        options = {"ssl-cert": str(cert), "ssl-key": str(key)}
        if client_certs:
            trusted = tls_dir / "clients.pem"
            trusted.write_text(tlsmod.certificates(client_certs))
            instance.give_to(user, trusted)
            options["ssl-ca"] = str(trusted)
        return options


def _tls_refused(cur: pymysql.cursors.Cursor, log_path: Path) -> str | None:
    """Why a server given a certificate does not offer TLS (None: it does). MariaDB and
    MySQL go on without TLS when they cannot load their certificate, saying so in the
    error log; have_ssl says which (MySQL 8.4 dropped it: there, TLS is always on)."""
    cur.execute("SHOW GLOBAL VARIABLES LIKE 'have_ssl'")
    row = cur.fetchone()
    if row is None or str(row[1]).upper() == "YES":
        return None
    return f"the server did not enable TLS (have_ssl = {row[1]}): {log_reason(log_path)}"


# What dbarena's user may reach on a server other hosts drive: its database, mysqlslap's
# (workloads/mysqlslap.SCHEMA, which mysqlslap drops and makes again), the read-only
# statistics the server sampler reads (performance_schema), and one global privilege:
# RELOAD, the least that the FLUSH TABLES after a warm-up (the target's checkpoint) needs.
REMOTE_PRIVILEGES = ("ALL PRIVILEGES ON `dbarena`.*", "ALL PRIVILEGES ON `dbarena_mysqlslap`.*",
                     "SELECT ON performance_schema.*", "RELOAD ON *.*")


def local_grants() -> list[tuple[str, str]]:
    """dbarena's user on a server of this host only: every privilege (a local run
    checkpoints, saves and restores datasets), from 127.0.0.1."""
    return [("127.0.0.1", "ALL PRIVILEGES ON *.*")]


def remote_grants(clients: Sequence[str]) -> list[tuple[str, str]]:
    """(host, privileges) of dbarena's user on a server other hosts drive: one account per
    client IP address (the server skips name resolution, so a host name would never
    match), each with REMOTE_PRIVILEGES only."""
    if not clients:
        raise ValueError("a server that listens for other hosts needs their addresses")
    hosts = sorted({str(ipaddress.ip_address(c)) for c in clients})
    return [(host, privileges) for host in hosts for privileges in REMOTE_PRIVILEGES]


def _lock_root(cur: pymysql.cursors.Cursor) -> None:
    """mariadb-install-db creates root at localhost, 127.0.0.1, ::1 and the host name,
    all without a password: anyone on the machine could log in over TCP. Drop all but
    root@localhost and give that one a random password nobody keeps; dbarena's own
    user has every privilege the tools need."""
    cur.execute("SELECT host FROM mysql.user WHERE user = 'root'")
    for (host,) in cur.fetchall():
        if host != "localhost":
            cur.execute("DROP USER 'root'@%s", (host,))
    cur.execute("ALTER USER 'root'@'localhost' IDENTIFIED BY %s", (secrets.token_urlsafe(24),))


def _wait_ready(proc: subprocess.Popen[bytes], socket_path: Path, timeout_s: float, log_path: Path) -> str | None:
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
                        return str(_first(cur))
            except pymysql.MySQLError:
                pass
        time.sleep(0.1)
    execute.stop(proc)
    raise EnvironmentProblem(f"the MySQL server did not accept connections within {timeout_s:.0f} s: {log_reason(log_path)}")
