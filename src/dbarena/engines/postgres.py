"""PostgreSQL: a throwaway instance from the machine's own binaries, or an existing server.

The throwaway instance lives in a fresh temporary directory, listens on 127.0.0.1 and
a private socket directory only, uses a random password that is never printed or
stored (clients get it through a private passfile), and is always stopped and
removed: on success, on error, on Ctrl-C and on SIGTERM (unless --keep).
"""

from __future__ import annotations

import contextlib
import glob
import os
import re
import secrets
import shutil
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator, Mapping, Sequence
from urllib.parse import urlsplit

from dbarena import execute
from dbarena.lifecycle import state
from dbarena.engines import instance, target_url
from dbarena.errors import ConnectionFailed, DatabaseError, EnvironmentProblem, ToolMissing, UsageError
from dbarena.interfaces import Client, Executor, Tool
from dbarena.lazy import lazy_import
from dbarena.model import Connection

if TYPE_CHECKING:
    import psycopg
else:
    psycopg = lazy_import("psycopg")  # the driver: only a run or a --target needs it

ENGINE = "postgres"
INSTALL_HINT = "install PostgreSQL with `apt-get install postgresql postgresql-contrib`"

_VERSION = re.compile(r"\(PostgreSQL\) (?P<major>\d+)(?:\.(?P<minor>\d+))?")


@dataclass(frozen=True)
class PgBinaries:
    bindir: Path
    version: tuple[int, int]
    version_line: str

    def path(self, name: str) -> Path:
        return self.bindir / name


def _is_exe(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def candidate_bindirs(path_env: str | None = None, executor: Executor = execute.LOCAL) -> list[Path]:
    """Directories that may hold PostgreSQL server binaries, in search order:
    pg_config --bindir, Debian/Ubuntu and RHEL install trees, then PATH."""
    dirs: list[Path] = []
    pg_config = shutil.which("pg_config", path=path_env)
    if pg_config:
        with contextlib.suppress(ToolMissing):
            done = executor.run([pg_config, "--bindir"], timeout=30)
            if done.returncode == 0 and done.stdout.strip():
                dirs.append(Path(done.stdout.strip()))
    for pattern in ("/usr/lib/postgresql/*/bin", "/usr/pgsql-*/bin", "/usr/local/pgsql/bin"):
        dirs.extend(Path(p) for p in sorted(glob.glob(pattern)))
    for entry in (path_env if path_env is not None else os.environ.get("PATH", "")).split(os.pathsep):
        if entry:
            dirs.append(Path(entry))
    seen: set[Path] = set()
    unique = []
    for d in dirs:
        key = d.resolve() if d.exists() else d
        if key not in seen:
            seen.add(key)
            unique.append(d)
    return unique


def parse_version(line: str) -> tuple[int, int] | None:
    """'postgres (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1)' -> (15, 18)."""
    m = _VERSION.search(line)
    if m is None:
        return None
    return int(m["major"]), int(m["minor"] or 0)


def find_server_binaries(bindir: Path | None = None, executor: Executor = execute.LOCAL) -> PgBinaries:
    """The newest PostgreSQL installation with initdb, postgres and pgbench."""
    dirs = [bindir] if bindir is not None else candidate_bindirs(executor=executor)
    found: list[PgBinaries] = []
    for d in dirs:
        if not all(_is_exe(d / n) for n in ("initdb", "postgres")):
            continue
        line = execute.version_line(d / "postgres", executor)
        version = parse_version(line)
        if version is not None:
            found.append(PgBinaries(d, version, line))
    if not found:
        where = f"in {bindir}" if bindir is not None else "(looked at pg_config, /usr/lib/postgresql/*/bin and PATH)"
        raise ToolMissing(f"no PostgreSQL server binaries (initdb, postgres) found {where}: {INSTALL_HINT}")
    return max(found, key=lambda b: b.version)


def find_client(name: str, bindir: Path | None = None, executor: Executor = execute.LOCAL) -> Path:
    """A client tool (pgbench, psql): from bindir, else the newest install, else PATH."""
    dirs = [bindir] if bindir is not None else candidate_bindirs(executor=executor)
    versioned = []
    for d in dirs:
        if _is_exe(d / name):
            line = execute.version_line(d / name, executor)
            versioned.append((parse_version(line) or (0, 0), d / name))
    if not versioned:
        raise ToolMissing(f"{name} not found: {INSTALL_HINT}")
    # Newest version wins; among equals, the first found (pg_config's bindir).
    return max(versioned, key=lambda v: v[0])[1]


def _connection(url: str) -> Connection:
    parts = urlsplit(url)
    return Connection(
        protocol="postgresql", host=parts.hostname or "localhost", port=parts.port or 5432,
        user=parts.username or os.environ.get("PGUSER") or "postgres",
        dbname=parts.path.lstrip("/") or parts.username or "postgres", url=url,
    )


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
    process: Any = field(default=None, repr=False)
    bindir: Path | None = None
    executor: Executor = field(default=execute.LOCAL, repr=False)
    engine: str = ENGINE
    flavour: str = "postgresql"
    _tools: dict = field(default_factory=dict, repr=False)
    record: Any = field(default=None, repr=False)  # a throwaway's state.Record
    server_argv: tuple[str, ...] = ()  # how a throwaway's postmaster is started (for a restart)
    server_user: str | None = None
    server_cpus: tuple[int, ...] | None = None  # the CPUs it is confined to ([cpus])

    def _restart(self, between: Callable[[], None], *, clean: bool) -> None:
        """Stop the throwaway server (fast shutdown; `clean`: refused if it had to be
        killed), do `between` to its stopped data directory, start it again on the
        same port and settings (also when `between` failed)."""
        if not self.throwaway or self.process is None or self.data_dir is None or not self.server_argv:
            raise EnvironmentProblem("only a throwaway PostgreSQL's data directory can be saved and restored")
        process = self.process
        stop = (lambda: instance.stopped_cleanly(process, first_signal=signal.SIGINT, grace_s=60, what="PostgreSQL")) \
            if clean else (lambda: instance.stop_server(process, first_signal=signal.SIGINT))
        instance.restarted(stop, between, self._start_again)

    def _start_again(self) -> None:
        self.process = self.executor.spawn(list(self.server_argv), log_path=self.log_path or Path(os.devnull),
                                           user=self.server_user, cpus=self.server_cpus)
        if self.record is not None:
            self.record.update(server_pgid=self.process.pid)
        admin = self.conn.url.rsplit("/", 1)[0] + "/postgres"
        assert self.passfile is not None and self.log_path is not None  # a throwaway has both
        if _wait_ready(self.process, admin, self.passfile, self.log_path, 120) is None:
            raise EnvironmentProblem(f"PostgreSQL did not start again: {_log_reason(self.log_path)}")
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

    def client_env(self) -> dict:
        env = dict(os.environ)
        if self.passfile is not None:
            # Our own instance: its private passfile, and nothing the user's
            # environment might set for other servers.
            env.pop("PGPASSWORD", None)
            env["PGPASSFILE"] = str(self.passfile)
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
        proc = self.process
        if proc is None or proc.poll() is None:
            return None
        return f"PostgreSQL server exited with status {proc.returncode}: {_log_reason(self.log_path)}"

    def server_pid(self) -> int | None:
        """The postmaster's pid, when the server runs here (our instance)."""
        return self.process.pid if self.process is not None else None

    def connect(self) -> psycopg.Connection:
        return _connect(self.url, passfile=self.passfile)

    def facts(self) -> dict:
        """Provenance of the server: version, settings that differ from the defaults
        (pg_settings where the source is not 'default'; per-connection sources left
        out), data checksums."""
        return _facts_or_error(self._facts)

    def _facts(self) -> dict:
        with self.connect() as conn:
            version = _first(conn.execute("SELECT version()"))
            rows = conn.execute(
                # current_setting() shows a value as SHOW does ('16MB'); setting || unit
                # would glue a count of 8kB pages to its unit ('20488kB').
                "SELECT name, current_setting(name), source FROM pg_settings"
                " WHERE source NOT IN ('default', 'override', 'client', 'session') ORDER BY name"
            ).fetchall()
            checksums = _first(conn.execute("SHOW data_checksums"))
        return {
            "version_string": version,
            "non_default_settings": {name: value for name, value, _ in rows},
            "settings_source": {name: source for name, _, source in rows},
            "data_checksums": checksums,
        }

    def checkpoint(self) -> None:
        """Write all dirty pages now (after a warm-up), as study B did before each run.
        A managed server may refuse it (PostgreSQL before 15 needs a superuser)."""
        try:
            with self.connect() as conn:
                conn.execute("CHECKPOINT")
        except psycopg.Error as exc:
            raise DatabaseError(f"CHECKPOINT failed: {_one_line(exc)}") from None

    def dataset_facts(self) -> dict:
        def size() -> dict:
            with self.connect() as conn:
                return {"database_bytes": _first(conn.execute("SELECT pg_database_size(current_database())"))}
        return _facts_or_error(size)

    def keep_note(self) -> str:
        assert self.data_dir is not None  # only throwaway instances are kept
        return (
            f"kept the throwaway PostgreSQL: {self.url} (pid {self.process.pid}), data in {self.data_dir}; "
            f"connect with PGPASSFILE={self.passfile} psql '{self.url}'; "
            f"remove with: dbarena cleanup (or kill {self.process.pid} && rm -rf {self.data_dir.parent})"
        )


def _facts_or_error(read) -> dict:
    # Provenance is worth having but never worth a failed benchmark.
    try:
        return read()
    except psycopg.Error as exc:
        return {"facts_error": _one_line(exc)}


def client_libraries() -> dict:
    """dbarena's own client (provenance checks, settings): psycopg and the libpq it
    loads, which its binary wheel bundles, often a newer one than the tools link (those
    are named per tool: execute.linked_libraries)."""
    version = psycopg.pq.version()
    return {"psycopg libpq": f"{version // 10000}.{version % 10000}", "psycopg": psycopg.__version__}


def client_tool(name: str, bindir: Path | None, executor: Executor = execute.LOCAL) -> Path:
    """pgbench from the PostgreSQL installation; other tools (sysbench) from PATH."""
    if name == "pgbench":
        return find_client("pgbench", bindir, executor)
    found = shutil.which(name)
    if found is None:
        raise ToolMissing(f"{name} not found: install it with `apt-get install {name}`")
    return Path(found)


def _log_reason(log_path: Path | None) -> str:
    """The server log's last FATAL/PANIC; for a bad setting, the line that names it."""
    reason = instance.log_reason(log_path, ("FATAL:", "PANIC:"))
    if "contains errors" in reason and log_path is not None:
        lines = [l.strip() for l in log_path.read_text(errors="replace").splitlines() if l.strip()]
        i = lines.index(reason)
        if i > 0:
            return f"{lines[i - 1]} ({reason})"
    return reason


def _one_line(exc: Exception) -> str:
    return " ".join(str(exc).split())


def _first(cur: psycopg.Cursor[Any]) -> Any:
    """The first value of a query that returns one row."""
    row = cur.fetchone()
    if row is None:
        raise DatabaseError("the query returned no row")
    return row[0]


def _connect(url: str, *, passfile: Path | None = None, dbname: str | None = None, timeout: int = 10):
    kwargs: dict[str, Any] = {"connect_timeout": timeout, "autocommit": True}
    if passfile is not None:
        # Our own instance: its password given outright, because libpq prefers a
        # PGPASSWORD in the environment (set for a --store or --target server) to a passfile.
        kwargs["password"] = passfile.read_text().strip().rsplit(":", 1)[1]
    if dbname is not None:
        kwargs["dbname"] = dbname
    return psycopg.connect(url, **kwargs)


# ---------------------------------------------------------------- external target


def check_target_url(url: str) -> str:
    """Validate a --target URL; refuse one that carries a password."""
    target_url.check(url, schemes=("postgresql", "postgres"), example="postgresql://user@host:port/dbname",
                     password_from="PGPASSWORD or ~/.pgpass")
    return url


@contextlib.contextmanager
def external(url: str, bindir: Path | None = None, executor: Executor = execute.LOCAL) -> Iterator[PgTarget]:
    """An existing server. The password comes from PGPASSWORD or ~/.pgpass (libpq)."""
    url = check_target_url(url)
    try:
        with _connect(url) as conn:
            version = conn.execute("SHOW server_version").fetchone()[0]
    except psycopg.Error as exc:
        raise ConnectionFailed(
            f"cannot connect to {url}: {_one_line(exc)} "
            "(check host, port and user; the password comes from PGPASSWORD or ~/.pgpass)"
        ) from None
    yield PgTarget(conn=_connection(url), description=url, server_version=version, throwaway=False, bindir=bindir,
                   executor=executor)


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
) -> Iterator[PgTarget]:
    """A fresh PostgreSQL cluster for the duration of the with-block, created with the
    cluster options given (CLUSTER_OPTIONS)."""
    settings = dict(settings or {})
    cluster = dict(cluster or {})
    check_cluster(cluster)
    binaries = find_server_binaries(bindir, executor)
    user = instance.unprivileged_user("postgres")
    check_settings(settings, executor, binaries.bindir)
    initdb_options = initdb_args(cluster, binaries.version)

    top, record = instance.new_top("dbarena-pg-", "postgres", data_parent)
    proc = None
    target = None
    try:
        instance.check_reachable(top, user)
        data, sock = top / "data", top / "socket"
        sock.mkdir()
        pwfile, passfile, log_path = top / "pwfile", top / "pgpass", top / "server.log"
        password = secrets.token_urlsafe(24)
        instance.private_file(pwfile, password + "\n")
        instance.private_file(passfile, f"127.0.0.1:*:*:dbarena:{password}\n")
        instance.give_to(user, top, sock, pwfile)
        auth = "scram-sha-256" if binaries.version >= (10, 0) else "md5"
        done = executor.run(
            [str(binaries.path("initdb")), "-D", str(data), "-U", "dbarena", f"--pwfile={pwfile}",
             f"--auth={auth}", *initdb_options, "--no-sync"],
            user=user, timeout=300,
        )
        pwfile.unlink()
        if done.returncode != 0:
            raise EnvironmentProblem(f"initdb failed: {done.stderr.strip().splitlines()[-1:]}")

        for attempt in range(3):
            port = instance.free_port()
            conf = {
                "listen_addresses": "127.0.0.1",
                "port": str(port),
                "unix_socket_directories": str(sock),
                "max_connections": str(max_connections),
                **settings,
            }
            # Appended last, so these win over initdb's defaults.
            with open(data / "postgresql.conf", "a") as f:
                f.write("\n# dbarena\n")
                f.writelines(f"{k} = {_quote_setting(v)}\n" for k, v in conf.items())
            proc = executor.spawn([str(binaries.path("postgres")), "-D", str(data)], log_path=log_path, user=user,
                                  cpus=cpus)
            record.update(server_pgid=proc.pid)  # a session leader: its group holds every backend
            url = f"postgresql://dbarena@127.0.0.1:{port}/postgres"
            version = _wait_ready(proc, url, passfile, log_path, ready_timeout_s)
            # The dynamic shared memory the postmaster made (/dev/shm/PostgreSQL.<n>):
            # recorded, so that it is removed even when the server dies before it can
            # (killed, out of memory), by release or by whoever reaps the instance.
            record.update(shm=sorted(str(p) for p in state.shm_segments(proc.pid)))
            if version is not None:
                break
            reason = _log_reason(log_path)
            if "contains errors" in reason and settings:
                raise UsageError(f"--pg-setting: PostgreSQL refused a setting: {reason}")
            if "could not bind" not in reason or attempt == 2:
                raise EnvironmentProblem(f"PostgreSQL did not start: {reason}")
        assert version is not None  # each attempt either started the server or raised
        with _connect(url, passfile=passfile) as conn:
            conn.execute("CREATE DATABASE dbarena")
        url = f"postgresql://dbarena@127.0.0.1:{port}/dbarena"
        target = PgTarget(
            conn=_connection(url),
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
        )
        yield target
    finally:
        # SIGINT is PostgreSQL's "fast" shutdown: abort sessions, checkpoint, exit. The
        # server may have been restarted (a restored data directory): the current one.
        instance.release(target.process if target is not None else proc, top, record,
                         keep=keep and target is not None, first_signal=signal.SIGINT)


def _wait_ready(proc, url: str, passfile: Path, log_path: Path, timeout_s: float) -> str | None:
    """Server version once it accepts connections; None if it exited first."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return None
        try:
            with _connect(url, passfile=passfile, timeout=5) as conn:
                return conn.execute("SHOW server_version").fetchone()[0]
        except psycopg.OperationalError:
            time.sleep(0.1)
    execute.stop(proc)
    raise EnvironmentProblem(f"PostgreSQL did not accept connections within {timeout_s:.0f} s: {_log_reason(log_path)}")


class PostgresEngine:
    """PostgreSQL (interfaces.Engine): the machine's own binaries, or a server by URL."""

    name = ENGINE
    flavour = "postgresql"
    protocol = "postgresql"
    setting_option = "--pg-setting"

    def available(self, bindir: Path | None = None, executor: Executor = execute.LOCAL) -> bool:
        try:
            find_server_binaries(bindir, executor)
        except ToolMissing:
            return False
        return True

    def check_target_url(self, url: str) -> str:
        return check_target_url(url)

    def check_settings(self, settings: Mapping[str, str], executor: Executor, bindir: Path | None = None) -> None:
        check_settings(settings, executor, bindir)

    def throwaway(self, *, settings: Mapping[str, str], max_connections: int, bindir: Path | None, keep: bool,
                  executor: Executor, cluster: Mapping[str, str] | None = None, data_parent: Path | None = None,
                  cpus: Sequence[int] | None = None) -> contextlib.AbstractContextManager[PgTarget]:
        return throwaway(settings=settings, max_connections=max_connections, bindir=bindir, keep=keep,
                         executor=executor, cluster=cluster, data_parent=data_parent, cpus=cpus)

    def check_cluster(self, cluster: Mapping[str, str]) -> None:
        check_cluster(cluster)

    def external(self, url: str, *, bindir: Path | None, executor: Executor
                 ) -> contextlib.AbstractContextManager[PgTarget]:
        return external(url, bindir=bindir, executor=executor)

    def client_libraries(self) -> dict:
        return client_libraries()
