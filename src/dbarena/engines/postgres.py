"""PostgreSQL: a throwaway instance from the machine's own binaries, or an existing server.

The throwaway instance lives in a fresh temporary directory, listens on 127.0.0.1 and
a private socket directory only, uses a random password that is never printed or
stored (clients get it through a private passfile), and is always stopped and
removed: on success, on error, on Ctrl-C and on SIGTERM (unless --keep).

Here: the settings and cluster options checked before a start, the existing server,
the throwaway instance's set-up and the engine. Where the binaries are:
postgres_binaries.py; the server once running (PgTarget): postgres_target.py.
"""

from __future__ import annotations

import contextlib
import ipaddress
import secrets
import signal
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Mapping, Sequence

from dbarena import execute
from dbarena.lifecycle import state
from dbarena.engines import instance, target_url, tls as tlsmod
from dbarena.engines.postgres_binaries import PgBinaries, find_server_binaries
from dbarena.engines.postgres_target import (ENGINE, STOP_SIGNAL, PgTarget, first_value, connection_from_url, log_reason,
                                             open_connection, tls_options, wait_ready)
from dbarena.errors import ConnectionFailed, EnvironmentProblem, ToolMissing, UsageError
from dbarena.interfaces import Executor
from dbarena.lazy import lazy_import
from dbarena.limits import one_line
from dbarena.model import Tls

if TYPE_CHECKING:
    import psycopg
else:
    psycopg = lazy_import("psycopg")  # the driver: only a run or a --target needs it


def client_libraries() -> dict[str, str]:
    """dbarena's own client (provenance checks, settings): psycopg and the libpq it
    loads, which its binary wheel bundles, often a newer one than the tools link (those
    are named per tool: execute.linked_libraries)."""
    version = psycopg.pq.version()
    return {"psycopg libpq": f"{version // 10000}.{version % 10000}", "psycopg": psycopg.__version__}


# ---------------------------------------------------------------- external target


def check_target_url(url: str) -> str:
    """Validate a --target URL; refuse one that carries a password."""
    target_url.check(url, schemes=("postgresql", "postgres"), example="postgresql://user@host:port/dbname",
                     password_from="PGPASSWORD or ~/.pgpass")
    return url


@contextlib.contextmanager
def external(url: str, bindir: Path | None = None, executor: Executor = execute.LOCAL,
             tls: Tls | None = None) -> Iterator[PgTarget]:
    """An existing server. The password comes from PGPASSWORD or ~/.pgpass (libpq).
    `tls`: TLS required of it, its certificate verified (model.Tls)."""
    url = check_target_url(url)
    try:
        with open_connection(url, **tls_options(tls)) as conn:
            version = str(first_value(conn.execute("SHOW server_version")))
    except psycopg.Error as exc:
        raise ConnectionFailed(
            f"cannot connect to {url}: {one_line(exc)} "
            "(check host, port and user; the password comes from PGPASSWORD or ~/.pgpass)"
        ) from None
    yield PgTarget(conn=connection_from_url(url, tls), description=url, server_version=version, throwaway=False,
                   bindir=bindir, executor=executor)


# ---------------------------------------------------------------- throwaway instance


def _quote_setting(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def known_settings(binaries: PgBinaries, user: str | None, executor: Executor = execute.LOCAL) -> set[str]:
    """Names of every server setting, from `postgres --describe-config`."""
    done = executor.run([str(binaries.path("postgres")), "--describe-config"], user=user, timeout=60)
    if done.returncode != 0:
        raise EnvironmentProblem(f"postgres --describe-config failed: {done.stderr.strip()}")
    return {line.split("\t", 1)[0].lower() for line in done.stdout.splitlines() if line}


# What initdb decides once for a cluster's life, which no setting changes afterwards
# (study B compares data checksums off and on): option -> what it takes. A study gives
# them as `cluster = { data_checksums = true }` of the engine or of a variant, and each
# variant gets its own cluster.
CLUSTER_OPTIONS = {
    "data_checksums": "true or false (initdb --data-checksums; PostgreSQL 18 turns them on by default)",
    "wal_segsize": "the WAL segment size in MB, a power of 2 from 1 to 1024 (initdb --wal-segsize, 11+)",
    "locale": "a locale, e.g. C.UTF-8 (initdb --locale) [default: none, --no-locale]",
    "encoding": "a server encoding, e.g. UTF8 or LATIN1 (initdb -E) [default: UTF8]",
}
# Settings that read a cluster option: asked for as settings, they get the way to set them.
_CLUSTER_SETTINGS = {"data_checksums": "data_checksums", "wal_segment_size": "wal_segsize",
                     "lc_collate": "locale", "lc_ctype": "locale", "server_encoding": "encoding"}


def check_cluster(cluster: Mapping[str, str]) -> None:
    """A usage error for an unknown cluster option or a value initdb would refuse."""
    for name, value in cluster.items():
        if name not in CLUSTER_OPTIONS:
            raise UsageError(f"unknown PostgreSQL cluster option {name!r} (known: {', '.join(CLUSTER_OPTIONS)})")
        if name == "data_checksums" and value not in ("on", "off"):
            raise UsageError(f"cluster option data_checksums: {CLUSTER_OPTIONS[name]}, not {value!r}")
        if name == "wal_segsize" and (not value.isdigit() or int(value) not in [2 ** i for i in range(11)]):
            raise UsageError(f"cluster option wal_segsize: {CLUSTER_OPTIONS[name]}, not {value!r}")


def initdb_args(cluster: Mapping[str, str], version: tuple[int, int]) -> list[str]:
    """initdb's options for a cluster: UTF8 without a locale unless the cluster says
    otherwise, data checksums as asked (off before PostgreSQL 18 needs no flag, and
    --no-data-checksums exists only from 18, where they are on by default)."""
    args = ["-E", cluster.get("encoding", "UTF8")]
    args += ["--locale", cluster["locale"]] if "locale" in cluster else ["--no-locale"]
    checksums = cluster.get("data_checksums")
    if checksums == "on":
        args.append("--data-checksums")
    elif checksums == "off" and version >= (18, 0):
        args.append("--no-data-checksums")
    if "wal_segsize" in cluster:
        if version < (11, 0):
            raise UsageError("cluster option wal_segsize needs PostgreSQL 11 or later")
        args += ["--wal-segsize", cluster["wal_segsize"]]
    return args


# Settings that make the server run a command or load code (PostgreSQL's docs, "Server
# Configuration", versions 9.6 to 18), and what each does: a study file holding one is
# refused unless the user consents (`--allow-commands`; study/consent.py). Names as
# PostgreSQL spells them; it reads them case-insensitively.
CODE_SETTINGS: Mapping[str, str] = {
    "archive_command": "runs a shell command", "archive_cleanup_command": "runs a shell command",
    "restore_command": "runs a shell command", "recovery_end_command": "runs a shell command",
    "ssl_passphrase_command": "runs a shell command",
    "archive_library": "loads a library", "shared_preload_libraries": "loads libraries",
    "session_preload_libraries": "loads libraries", "local_preload_libraries": "loads libraries",
    "dynamic_library_path": "chooses where libraries are loaded from", "jit_provider": "loads a library",
    # Configuration-file directives, not settings: they would read other files' settings,
    # which nothing here checks.
    "include": "reads another configuration file", "include_if_exists": "reads another configuration file",
    "include_dir": "reads other configuration files",
}


def code_setting(name: str) -> str | None:
    """What a setting runs or loads (CODE_SETTINGS), or None for an ordinary one."""
    return CODE_SETTINGS.get(name.strip().lower())


def check_settings(settings: Mapping[str, str], executor: Executor = execute.LOCAL,
                   bindir: Path | None = None) -> None:
    """A usage error for a setting name this PostgreSQL does not know (values are
    checked by the server when it starts), or one that initdb decides."""
    if not settings:
        return
    for name in settings:
        option = _CLUSTER_SETTINGS.get(name.lower())
        if option is not None:
            raise UsageError(f"{name} is decided when the cluster is created, not by a setting: give it as "
                             f"cluster = {{ {option} = ... }} in the study's [engines.postgres] or a variant")
    binaries = find_server_binaries(bindir, executor)
    unknown = sorted(set(k.lower() for k in settings) - known_settings(binaries, instance.unprivileged_user("postgres"),
                                                                       executor))
    if unknown:
        raise UsageError(f"--pg-setting: unknown PostgreSQL setting(s): {', '.join(unknown)}")


@contextlib.contextmanager
def throwaway(
    *,
    settings: Mapping[str, str] | None = None,
    max_connections: int = 100,
    bindir: Path | None = None,
    keep: bool = False,
    ready_timeout_s: float = 60,
    executor: Executor = execute.LOCAL,
    cluster: Mapping[str, str] | None = None,
    data_parent: Path | None = None,
    cpus: Sequence[int] | None = None,
    listen: str | None = None,
    password: str | None = None,
    clients: Sequence[str] = (),
    tls: bool = False,
) -> Iterator[PgTarget]:
    """A fresh PostgreSQL cluster for the duration of the with-block, created with the
    cluster options given (CLUSTER_OPTIONS). `listen`: an address of this host it also
    listens on (the server of a `fleet run --together` that other hosts drive; see
    _remote_access): dbarena's user is then an ordinary role that owns its database,
    allowed by `password` from the IP addresses in `clients` only, and the yielded
    target is the local administrator's; `password`: dbarena's user's (default: a
    random one). `tls` (with `listen`): a certificate made for this server (tls.py),
    ssl on, and dbarena's user let in over TLS only (hostssl); where this build or this
    host cannot (no OpenSSL in the server, no openssl command), the server goes on
    without and the target's tls_problem says why."""
    settings = dict(settings or {})
    cluster = dict(cluster or {})
    check_cluster(cluster)
    binaries = find_server_binaries(bindir, executor)
    user = instance.unprivileged_user("postgres")
    check_settings(settings, executor, binaries.bindir)
    initdb_options = initdb_args(cluster, binaries.version)
    auth = "scram-sha-256" if binaries.version >= (10, 0) else "md5"
    if listen:
        remote_hba(clients, auth)  # checked before anything is made

    top, record = instance.new_top("dbarena-pg-", "postgres", data_parent, stop_signal=PostgresEngine.stop_signal)
    proc = None
    target = None
    try:
        instance.check_reachable(top, user)
        data, sock = top / "data", top / "socket"
        sock.mkdir()
        pwfile, passfile, log_path = top / "pwfile", top / "pgpass", top / "server.log"
        password = password or secrets.token_urlsafe(24)
        # A listening server's superuser is a local administrator with a password of its
        # own that never leaves this host; dbarena's user is made an ordinary role below.
        superuser = REMOTE_ADMIN if listen else "dbarena"
        superuser_password = secrets.token_urlsafe(24) if listen else password
        instance.private_file(pwfile, superuser_password + "\n")
        instance.private_file(passfile, f"127.0.0.1:*:*:{superuser}:{superuser_password}\n")
        instance.give_to(user, top, sock, pwfile)
        with instance.initialising(record) as on_start:
            done = executor.run(
                [str(binaries.path("initdb")), "-D", str(data), "-U", superuser, f"--pwfile={pwfile}",
                 f"--auth={auth}", *initdb_options, "--no-sync"],
                user=user, timeout=300, on_start=on_start, session=True,
            )
        pwfile.unlink()
        if done.returncode != 0:
            raise EnvironmentProblem(f"initdb failed: {done.stderr.strip().splitlines()[-1:]}")
        tls_cert, tls_problem = None, None
        if listen and tls:
            try:
                tls_cert = _server_certificate(binaries, data, listen, user, executor)
            except tlsmod.TlsUnavailable as exc:
                tls_problem = str(exc)
        if listen:
            (data / "pg_hba.conf").write_text(remote_hba(clients, auth, ssl=tls_cert is not None))

        for attempt in range(3):
            port = instance.free_port()
            conf = {
                "listen_addresses": "127.0.0.1" + (f",{listen}" if listen and listen != "127.0.0.1" else ""),
                "port": str(port),
                "unix_socket_directories": str(sock),
                "max_connections": str(max_connections),
                # ssl_cert_file and ssl_key_file: their defaults, server.crt and server.key
                # in the data directory (_server_certificate).
                **({"ssl": "on"} if tls_cert is not None else {}),
                **settings,
            }
            # Appended last, so these win over initdb's defaults.
            with open(data / "postgresql.conf", "a") as f:
                f.write("\n# dbarena\n")
                f.writelines(f"{k} = {_quote_setting(v)}\n" for k, v in conf.items())
            proc = executor.spawn([str(binaries.path("postgres")), "-D", str(data)], log_path=log_path, user=user,
                                  cpus=cpus)
            record.update(**state.process_fields("server_pgid", proc.pid))  # a session leader: its group holds every backend
            url = f"postgresql://{superuser}@127.0.0.1:{port}/postgres"
            version = wait_ready(proc, url, passfile, log_path, ready_timeout_s)
            # The dynamic shared memory the postmaster made (/dev/shm/PostgreSQL.<n>):
            # recorded, so that it is removed even when the server dies before it can
            # (killed, out of memory), by release or by whoever reaps the instance.
            record.update(shm=sorted(str(p) for p in state.shm_segments(proc.pid)))
            if version is not None:
                break
            reason = log_reason(log_path)
            if "contains errors" in reason and settings:
                raise UsageError(f"--pg-setting: PostgreSQL refused a setting: {reason}")
            if "could not bind" not in reason or attempt == 2:
                raise EnvironmentProblem(f"PostgreSQL did not start: {reason}")
        assert version is not None  # each attempt either started the server or raised
        with open_connection(url, passfile=passfile) as conn:
            if listen:
                _remote_access(conn, password, auth)
            else:
                conn.execute("CREATE DATABASE dbarena")
        url = f"postgresql://{superuser}@127.0.0.1:{port}/dbarena"
        target = PgTarget(
            conn=connection_from_url(url),
            description=f"throwaway PostgreSQL {version} at 127.0.0.1:{port}",
            server_version=version,
            bindir=binaries.bindir,
            throwaway=True,
            passfile=passfile,
            data_dir=data,
            log_path=log_path,
            process=proc,
            record=record,
            executor=executor,
            server_argv=(str(binaries.path("postgres")), "-D", str(data)),
            server_user=user,
            server_cpus=tuple(cpus) if cpus else None,
            tls_cert=tls_cert,
            tls_problem=tls_problem,
        )
        yield target
    finally:
        # SIGINT is PostgreSQL's "fast" shutdown: abort sessions, checkpoint, exit. The
        # server may have been restarted (a restored data directory): the current one.
        instance.release(target.process if target is not None else proc, top, record,
                         keep=keep and target is not None, first_signal=STOP_SIGNAL)


# A listening server's superuser: reached from this host only (remote_hba).
REMOTE_ADMIN = "dbarena_admin"


def remote_hba(clients: Sequence[str], auth: str, ssl: bool = False) -> str:
    """pg_hba.conf of a server other hosts drive (the server of a `fleet run --together`),
    in place of initdb's: its administrator from this host only (the private socket
    directory, 127.0.0.1), dbarena's user to its own database from each client address
    (an IP address: a host name in pg_hba needs reverse DNS that names it back, which
    cloud and container networks seldom give) and from nowhere else; with `ssl`, over
    TLS only (hostssl: a connection without it matches no line and is refused before
    any password is asked)."""
    if not clients:
        raise ValueError("a server that listens for other hosts needs their addresses")
    lines = ["# dbarena: the server of a fleet run (fleet/serverhost.py); its administrator on this host only,",
             "# dbarena's user from its load generators only",
             f"local all {REMOTE_ADMIN} {auth}",
             f"host all {REMOTE_ADMIN} 127.0.0.1/32 {auth}"]
    # One host each (ip_address refuses a network such as 10.0.0.0/8).
    for address in sorted({ipaddress.ip_address(c) for c in clients}, key=lambda a: (a.version, a)):
        lines.append(f"{'hostssl' if ssl else 'host'} dbarena dbarena {address}/{address.max_prefixlen} {auth}")
    return "\n".join(lines) + "\n"


def _server_certificate(binaries: PgBinaries, data: Path, listen: str, user: str | None,
                        executor: Executor) -> str:
    """A certificate and key for a listening server, made by its own user into its data
    directory (server.crt, server.key: ssl_cert_file's and ssl_key_file's defaults;
    initdb made the directory 0700, so no one else ever reaches the key); the
    certificate's text. TlsUnavailable when this build has no TLS: the server, asked
    for `ssl = on`, says so (PostgreSQL's check of the setting: "SSL is not supported
    by this build") without starting."""
    done = executor.run([str(binaries.path("postgres")), "-D", str(data), "-C", "ssl", "-c", "ssl=on"],
                        user=user, timeout=60)
    if done.returncode != 0 or done.stdout.strip() != "on":
        why = (done.stderr.strip().splitlines() or ["ssl = on refused"])[-1]
        raise tlsmod.TlsUnavailable(f"this PostgreSQL has no TLS: {why}")
    cert, key = data / "server.crt", data / "server.key"
    tlsmod.make_pair(cert, key, f"dbarena together server {listen}", user=user, executor=executor)
    return tlsmod.read_certificate(cert)


def _remote_access(conn: psycopg.Connection, password: str, auth: str) -> None:
    """dbarena's user on a server other hosts drive: not a superuser. It owns its
    database, so the workloads create, fill, vacuum and drop their tables there (the
    public schema is the database owner's from PostgreSQL 15, open to every role
    before), and is in pg_monitor, the read-only statistics role, so the server
    sampler sees every session as it does on a local server; from PostgreSQL 15 it is
    in pg_checkpoint too, the least privilege the CHECKPOINT after a warm-up needs
    (before 15 only a superuser may: that checkpoint fails its point, saying so). The
    password goes to the server as its hash (libpq's PQencryptPasswordConn), so that
    no statement log holds it."""
    from psycopg import sql

    verifier = conn.pgconn.encrypt_password(password.encode(), b"dbarena", auth.encode()).decode()
    conn.execute(sql.SQL("CREATE ROLE dbarena LOGIN PASSWORD {}").format(sql.Literal(verifier)))
    conn.execute("CREATE DATABASE dbarena OWNER dbarena")
    conn.execute("GRANT pg_monitor TO dbarena")
    if conn.info.server_version >= CHECKPOINT_ROLE_SINCE:
        conn.execute("GRANT pg_checkpoint TO dbarena")


# The server version (server_version_num) from which the pg_checkpoint role exists.
CHECKPOINT_ROLE_SINCE = 150000


class PostgresEngine:
    """PostgreSQL (interfaces.Engine): the machine's own binaries, or a server by URL."""

    name = ENGINE
    flavour = "postgresql"
    protocol = "postgresql"
    setting_option = "--pg-setting"
    setting_help = "PostgreSQL setting for the throwaway instance (repeatable)."
    client_certificates = False
    code_settings = CODE_SETTINGS
    stop_signal: int = STOP_SIGNAL
    password_env = "PGPASSWORD"  # what libpq's tools read a password from

    def host_packages(self, target: bool) -> set[str]:
        """The Debian packages a fleet host needs: the client tools for a --target,
        the server too for a throwaway instance."""
        return {"postgresql-client" if target else "postgresql"}

    def code_setting(self, name: str) -> str | None:
        return code_setting(name)

    def available(self, bindir: Path | None = None, executor: Executor = execute.LOCAL) -> bool:
        try:
            find_server_binaries(bindir, executor)
        except ToolMissing:
            return False
        return True

    def check_target_url(self, url: str) -> str:
        return check_target_url(url)

    def target_url(self, host: str, port: int, user: str) -> str:
        return f"postgresql://{user}@{host}:{port}/postgres"

    def password_file(self, host: str, port: int, user: str, password: str) -> tuple[str, str]:
        """libpq's password file (PGPASSFILE): host:port:database:user:password, ":" and
        a backslash escaped ("The Password File")."""
        escaped = password.replace("\\", "\\\\").replace(":", "\\:")
        return "pgpass", f"{host}:{port}:*:{user}:{escaped}\n"

    def version_here(self, bindir: Path | None) -> str | None:
        try:
            major, minor = find_server_binaries(bindir).version
        except ToolMissing:  # (the run says what is missing, in its own words)
            return None
        return f"{major}.{minor}"

    def check_settings(self, settings: Mapping[str, str], executor: Executor, bindir: Path | None = None) -> None:
        check_settings(settings, executor, bindir)

    def throwaway(self, *, settings: Mapping[str, str], max_connections: int, bindir: Path | None, keep: bool,
                  executor: Executor, cluster: Mapping[str, str] | None = None, data_parent: Path | None = None,
                  cpus: Sequence[int] | None = None, listen: str | None = None, password: str | None = None,
                  clients: Sequence[str] = (), tls: bool = False,
                  tls_client_certs: Sequence[str] = ()) -> contextlib.AbstractContextManager[PgTarget]:
        # tls_client_certs: PostgreSQL asks no client for a certificate (no ssl_ca_file).
        return throwaway(settings=settings, max_connections=max_connections, bindir=bindir, keep=keep,
                         executor=executor, cluster=cluster, data_parent=data_parent, cpus=cpus, listen=listen,
                         password=password, clients=clients, tls=tls)

    def check_cluster(self, cluster: Mapping[str, str]) -> None:
        check_cluster(cluster)

    def external(self, url: str, *, bindir: Path | None, executor: Executor, tls: Tls | None = None
                 ) -> contextlib.AbstractContextManager[PgTarget]:
        return external(url, bindir=bindir, executor=executor, tls=tls)

    def client_libraries(self) -> dict[str, str]:
        return client_libraries()
