"""The seams of a run, as typed interfaces.

study -> plan -> session (Executor, Engine -> Target, Tool) -> store -> analysis -> report.
An engine flavour or a benchmark tool is one module implementing one of these and
one line in its registry (engines/__init__.py, workloads/__init__.py).
"""

from __future__ import annotations

import subprocess
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Protocol, Sequence, TypedDict

from dbarena.model import Connection, Measurement, PointResult, PointSpec, Room, RunInfo, Sample, StudyRecord, Tls, ToolParam
from dbarena.records import JSONObject, LentSession, RunProgress, ServerRecord, SessionSummary, StoredGroup, StoredPoint, StoredProfile, StoredRun, SystemSums

LineCallback = Callable[[str], None]



class Reader(Protocol):
    """What the server-side sampler asks of an engine's reader (serverside/postgres.py,
    serverside/mysql.py) once a second: its counters and gauges, the connections the
    server still lets the sampler's role open, and its notes (what it cannot read)."""

    engine: str
    gauges: frozenset[str]
    notes: tuple[str, ...]
    # The counter of committed transactions among what read() gives, if it has one: a
    # tool's per-second throughput where the tool does not report it (run/measure.py).
    commits: str | None

    def read(self) -> dict[str, float | None]: ...
    def room(self) -> Room | None: ...
    def close(self) -> None: ...


class LatencyDistribution(Protocol):
    """A point's latency distribution from a per-transaction log (stats.latency.Latencies
    is the one): what the runner stores of it."""

    @property
    def min_us(self) -> int | None: ...
    def percentiles_ms(self) -> dict[str, float | None]: ...
    def encode(self) -> JSONObject: ...


class Completed(Protocol):
    # Read-only, so that a frozen dataclass (execute.Completed) satisfies it.
    @property
    def argv(self) -> tuple[str, ...]: ...
    @property
    def returncode(self) -> int | None: ...
    @property
    def stdout(self) -> str: ...
    @property
    def stderr(self) -> str: ...
    @property
    def elapsed_s(self) -> float: ...
    @property
    def timed_out(self) -> bool: ...
    @property
    def cpu_s(self) -> float | None: ...  # the child's own CPU time, where it was read


class Executor(Protocol):
    """Where the subprocesses of a run start: every one of them goes through this."""

    def run(
        self,
        argv: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        timeout: float | None = None,
        user: str | None = None,
        cwd: str | Path | None = None,
        on_stdout_line: LineCallback | None = None,
        on_stderr_line: LineCallback | None = None,
        on_start: Callable[[int], None] | None = None,
        cpus: Sequence[int] | None = None,
        stdin: str | bytes | None = None,
        session: bool = False,
    ) -> Completed: ...
    # cwd: where it runs (a point's work directory: see PointInput); stdin: what it
    # reads on its standard input (str as UTF-8), None: nothing (/dev/null); session:
    # in a session (and process group) of its own, out of reach of a signal to dbarena's.

    def spawn(self, argv: Sequence[str], *, log_path: Path, env: Mapping[str, str] | None = None,
              user: str | None = None, cpus: Sequence[int] | None = None) -> subprocess.Popen[bytes]: ...


@dataclass(frozen=True)
class Client:
    """What a tool needs to reach a target: its executable, the password-free
    connection, and a private file holding the password in the tool's own format
    (None where the protocol's client library finds it alone, e.g. libpq's passfile)."""

    binary: str
    conn: Connection
    secret_file: str | None = None


@dataclass(frozen=True)
class PointInput:
    """What a point's command reads besides its argv: files the runner writes into the
    point's own work directory before it starts (the command's working directory, so
    that the argv names them relative: "script.lua"; removed when the point ends), and
    its standard input. Plain file names only, no directories."""

    files: Mapping[str, str | bytes] = field(default_factory=dict)
    stdin: str | bytes | None = None


class DbApiCursor(Protocol):
    """What a tool's check after a point reads with (a DB-API cursor: psycopg's or PyMySQL's)."""

    def execute(self, query: str) -> object: ...
    def fetchone(self) -> Sequence[Any] | None: ...  # a row: its values as the driver typed them
    def close(self) -> None: ...


class DbApiConnection(Protocol):
    """An open connection to a target (Target.connect's: psycopg's or PyMySQL's)."""

    def cursor(self) -> DbApiCursor: ...
    def close(self) -> None: ...


class ConsistencyCheck(TypedDict):
    """One condition a tool checks in the data after a point (Tool.verify), stored in
    the point's details ("consistency")."""

    condition: str  # what is checked, in words
    violations: int  # rows that break it
    ok: bool


class Tool(Protocol):
    """A benchmark tool: builds its command lines and reads its output (pure)."""

    name: str  # "pgbench", "sysbench", ...
    binary: str  # the executable it runs
    params: tuple[ToolParam, ...]  # the PointSpec.params it reads (dataset and run size), declared once
    timed: bool  # runs for spec.duration_s (False: mysqlslap runs a number of queries)
    interval_option: str | None  # the option that sets how often it reports, if a study may set it
    extra_connections: int  # connections a point holds besides one per client
    verifies: bool  # checks the data after each point (verify)
    # Why it cannot run an open-loop point for --slo (an offered rate, latency from each
    # transaction's scheduled start), in a few words; None: it can (option "rate").
    open_loop_refusal: str | None
    whole_rates: bool  # its rate option takes whole TPS only (sysbench --rate; pgbench -R takes fractions)

    def check_options(self, options: Mapping[str, Any], base_dir: Path | None = None) -> dict[str, str]: ...
    # What a checked option makes the tool run or load (a command, a client plugin),
    # or None: a study needs the user's consent for it (study/consent.py).
    def code_option(self, name: str, value: str) -> str | None: ...
    def secret_file(self, protocol: str, password: str) -> str | None: ...
    def prepare_argv(self, client: Client, spec: PointSpec) -> list[list[str]]: ...
    def cleanup_argv(self, client: Client, spec: PointSpec) -> list[list[str]]: ...
    def point_argv(self, client: Client, spec: PointSpec, mode_args: Sequence[str]) -> list[str]: ...
    # The files and standard input of the point's command (PointInput() where it needs none).
    def point_input(self, client: Client, spec: PointSpec, mode_args: Sequence[str]) -> PointInput: ...
    # How points of this mode use the dataset prepare_argv makes: "shared" (they run on
    # it and leave it fit for the next point, of any mode), "consumed" (they use it up:
    # it is prepared afresh before each such point and cleaned up after it), "own"
    # (they run on none: each point makes its own tables, through point_input).
    def dataset_use(self, mode_args: Sequence[str]) -> str: ...
    # Per-transaction latency logging (pgbench -l): the point's argv with the options
    # that write it into log_dir (argv unchanged where the tool has no such log), and
    # the distribution read back from there (None without one).
    def with_latency_log(self, argv: list[str], log_dir: Path, sampling_rate: float) -> list[str]: ...
    def read_latency_log(self, log_dir: Path, sampling_rate: float) -> LatencyDistribution | None: ...
    # The point's argv without the tool's own per-second report, where that report costs
    # throughput and the server's commit counter can stand in for it (pgbench: -P makes
    # it read the clock around every transaction); None where the tool keeps its report.
    def without_progress(self, argv: list[str]) -> list[str] | None: ...
    # What the tool measures beyond its bare run at a cost to its throughput, as options
    # on its command line ("-P 1", "-l", "--sampling-rate 0.1"), for a point run with its
    # own per-second report or not and that share logged: in a point's configuration key,
    # since they move its figures (configkey.instruments_in reads them off a stored
    # command line, as this writes them).
    def instruments(self, progress: bool, sampling: float | None) -> tuple[str, ...]: ...
    def read(self, stdout: str, stderr: str, spec: PointSpec | None) -> tuple[Measurement, tuple[Sample, ...]]: ...
    def read_samples(self, stdout: str, stderr: str) -> tuple[Sample, ...]: ...
    def parse_progress_line(self, line: str, lineno: int | None = None) -> Sample | None: ...
    def verify(self, connection: DbApiConnection) -> dict[str, ConsistencyCheck] | None: ...
    def estimate_s(self, spec: PointSpec) -> float: ...
    def estimate_prepare_s(self, spec: PointSpec) -> float: ...
    def quick_params(self, params: Mapping[str, int]) -> dict[str, int]: ...
    def dataset_bytes(self, params: Mapping[str, int]) -> int: ...


class Target(Protocol):
    """A database server under test: a throwaway instance or an existing server."""

    engine: str
    flavour: str
    throwaway: bool
    description: str
    server_version: str
    conn: Connection
    # A throwaway server listening for other hosts, asked for TLS: its certificate (PEM,
    # public), or None and why not (tls_problem).
    tls_cert: str | None
    tls_problem: str | None

    @property
    def url(self) -> str: ...
    def client(self, tool: Tool) -> Client: ...
    def client_env(self) -> dict[str, str]: ...
    def problem(self) -> str | None: ...
    def server_pid(self) -> int | None: ...
    # `timeout_s`: a client-side bound on connecting and, where the driver has one, on
    # every read and write (the server sampler's; None: the driver's defaults).
    def connect(self, timeout_s: float | None = None) -> DbApiConnection: ...
    # What the server sampler reads of a point over a connection of its own: each engine
    # declares its own.
    def server_reader(self, connection: DbApiConnection) -> Reader: ...
    def facts(self) -> JSONObject: ...
    def checkpoint(self) -> None: ...
    # Records the shared memory a throwaway server maps now, for its removal should
    # the server die before it can remove it (no-op where there is none).
    def remember_shared_memory(self) -> None: ...
    # A throwaway server's data directory copied aside while it is stopped (after a
    # dataset is prepared), and put back (before a point); EnvironmentProblem if not.
    def snapshot_data(self) -> None: ...
    def restore_data(self) -> None: ...
    def dataset_facts(self) -> JSONObject: ...
    def keep_note(self) -> str: ...


class Engine(Protocol):
    """A database engine flavour (PostgreSQL, MariaDB, MySQL) and how to get a Target."""

    name: str  # the engine family the workloads name: "postgres" or "mysql"
    flavour: str  # "postgresql", "mariadb", "mysql"
    protocol: str  # the wire protocol: "postgresql" or "mysql"
    setting_option: str  # the command-line option that sets a server setting
    setting_help: str  # its --help line: what a setting of this family is called
    # Whether its server verifies a client certificate that the tools present (the MySQL
    # family's, for sysbench over TLS): a --together server then trusts each host's own.
    client_certificates: bool
    # Settings that run a command or load code, and what each does (a study file needs
    # the user's consent for them: study/consent.py).
    code_settings: Mapping[str, str]
    stop_signal: int  # what asks its server to shut down (cleanup sends it to an orphan too)
    password_env: str  # the environment variable its client tools read a password from

    def code_setting(self, name: str) -> str | None: ...
    # The Debian packages a fleet host needs for it (target: an existing server).
    def host_packages(self, target: bool) -> set[str]: ...

    def available(self, bindir: Path | None = None, executor: Executor = ...) -> bool: ...
    def check_target_url(self, url: str) -> str: ...
    def check_settings(self, settings: Mapping[str, str], executor: Executor, bindir: Path | None = None) -> None: ...
    # listen: an address of this host the server listens on for other hosts, whose IP
    # addresses `clients` names (no other host is let in); password: dbarena's user's;
    # tls: those hosts let in over TLS only, with a certificate made for the server
    # (engines/tls.py), whose client certificates `tls_client_certs` it trusts.
    def throwaway(self, *, settings: Mapping[str, str], max_connections: int, bindir: Path | None,
                  keep: bool, executor: Executor, cluster: Mapping[str, str] | None = None,
                  data_parent: Path | None = None, cpus: Sequence[int] | None = None,
                  listen: str | None = None, password: str | None = None, clients: Sequence[str] = (),
                  tls: bool = False, tls_client_certs: Sequence[str] = ()
                  ) -> AbstractContextManager[Target]: ...
    # A usage error for cluster options (what creating the data directory decides) that
    # this engine does not know.
    def check_cluster(self, cluster: Mapping[str, str]) -> None: ...
    # tls: TLS required of the server by every client, its certificate verified.
    def external(self, url: str, *, bindir: Path | None, executor: Executor, tls: Tls | None = None
                 ) -> AbstractContextManager[Target]: ...
    def client_libraries(self) -> dict[str, str]: ...
    # The --target URL of a server of this engine at host:port for `user` (no password in
    # it: password_env or a password_file gives it).
    def target_url(self, host: str, port: int, user: str) -> str: ...
    # A private file holding a password its client tools read themselves (libpq's
    # password file, the MySQL family's option file): (a name's suffix, its text).
    def password_file(self, host: str, port: int, user: str, password: str) -> tuple[str, str]: ...
    # The version of the server binaries here (of `bindir`, or found on the PATH), as
    # the server reports it in its version(); None where that is known only once it runs.
    def version_here(self, bindir: Path | None) -> str | None: ...


class Reporter(Protocol):
    """What a run tells its audience (a terminal progress bar, a log, or nobody)."""

    def begin(self, plan: Sequence[PointSpec], estimate_s: Callable[[PointSpec], float]) -> None: ...
    # The rest of the plan from point `first_index` on changed (adaptive repeats).
    def replan(self, first_index: int, remaining: Sequence[PointSpec]) -> None: ...
    def stage(self, text: str) -> None: ...
    def point_started(self, index: int, spec: PointSpec) -> None: ...
    def sample(self, spec: PointSpec, sample: Sample) -> None: ...
    def point_finished(self, index: int, result: PointResult) -> None: ...
    def end(self) -> None: ...


class SqlCursor(Protocol):
    """What the store reads from a query, in either dialect (sqlite3 or psycopg)."""

    @property
    def description(self) -> Any: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...

    def fetchmany(self, size: int = ..., /) -> list[Any]: ...

    def __iter__(self) -> Any: ...


class SqlConnection(Protocol):
    """A store's connection: sqlite3's, or pgstore.Connection, which speaks the same SQL.
    `with connection:` is one transaction."""

    def execute(self, sql: str, parameters: Any = ..., /) -> SqlCursor: ...

    def executemany(self, sql: str, parameters: Any, /) -> Any: ...

    def __enter__(self) -> Any: ...

    def __exit__(self, *exc: Any) -> Any: ...

    def close(self) -> None: ...


class ResultStore(Protocol):
    """The results store as the run and the analysis use it (store.database.Store, in
    its SQLite and PostgreSQL dialects): runs, points and their series in; rows out.
    The session, the runner, the analysis and the report take this, not the class."""

    @property
    def path(self) -> Path | None: ...  # the SQLite file; None for a PostgreSQL store
    @property
    def location(self) -> str: ...  # what messages call it (the file, or the URL without a password)
    @property
    def errors(self) -> tuple[type[Exception], ...]: ...  # what the driver raises when a write cannot be taken

    def begin_run(self, run: RunInfo, status: str = "running") -> int: ...
    def update_target_facts(self, run_id: int, facts: dict[str, Any]) -> None: ...
    def reopen_run(self, run_id: int, options: dict[str, Any]) -> None: ...
    def invocation_runs(self, invocation: str) -> list[StoredRun]: ...
    def finish_run(self, run_id: int, status: str, reason: str | None = None) -> None: ...
    def add_point(self, run_id: int, result: PointResult, config: dict[str, Any] | None = None) -> int: ...
    def points(self, *, run_id: int | None = None, labels: tuple[str, ...] = (), warmups: bool = False,
               study: str | None = None, variants: tuple[str, ...] = (), point_ids: tuple[int, ...] = ()
               ) -> list[StoredPoint]: ...
    def point_values(self, *, run_id: int | None = None, labels: tuple[str, ...] = (), warmups: bool = False,
                     study: str | None = None, variants: tuple[str, ...] = (), point_ids: tuple[int, ...] = ()
                     ) -> list[list[Any]]: ...  # points() before each is made a record (analysis.load)
    def server_series(self, point_ids: Iterable[int], records: bool = True) -> dict[int, ServerRecord]: ...
    def runs_by_id(self, run_ids: Iterable[int]) -> dict[int, StoredRun]: ...
    def samples_of(self, point_ids: Iterable[int]) -> dict[int, list[Sample]]: ...
    def tps_series(self, point_ids: Iterable[int]) -> dict[int, tuple[Sequence[float], Any]]: ...  # numpy tps
    def system_sums(self, starts: dict[int, float | None], db: SqlConnection | None = None
                    ) -> dict[int, SystemSums]: ...
    def second_reader(self) -> SqlConnection | None: ...
    def derived(self, point_ids: Iterable[int], estimator: int) -> dict[int, dict[str, Any]]: ...
    def save_derived(self, figures: dict[int, dict[str, Any]], estimator: int) -> None: ...
    def latency_histograms(self, point_ids: Iterable[int]) -> dict[int, JSONObject]: ...
    def session_summaries(self, run_ids: Sequence[int], estimator: int, keys: Sequence[str] = ()
                          ) -> list[SessionSummary]: ...
    def summarised(self, run_ids: Sequence[int], estimator: int
                   ) -> tuple[list[SessionSummary], list[int]]: ...
    def save_session_summaries(self, run_ids: Sequence[int], found: Sequence[SessionSummary],
                               estimator: int, keys: Sequence[str] = ()) -> None: ...
    def lent_sessions(self, labels: tuple[str, ...], estimator: int) -> tuple[list[LentSession], list[int]]: ...
    def short_sessions(self, run_ids: Sequence[int], estimator: int) -> list[int]: ...
    def group_summaries(self, labels: tuple[str, ...], estimator: int
                        ) -> tuple[list[StoredGroup], list[tuple[str, str]]]: ...
    def group_generation(self) -> int | None: ...
    def save_group_summaries(self, found: Sequence[StoredGroup], estimator: int, generation: int | None) -> None: ...
    def profiles(self, point_ids: Iterable[int], folded: bool = False) -> dict[int, StoredProfile]: ...
    def samples(self, point_id: int) -> list[Sample]: ...
    def runs(self) -> list[StoredRun]: ...
    def run(self, run_id: int) -> StoredRun | None: ...
    def study(self, sha256: str) -> StudyRecord | None: ...
    def raw_output(self, point_id: int) -> tuple[str, str]: ...
    def run_progress(self, run_ids: Iterable[int] = (), running: bool = False) -> dict[int, RunProgress]: ...
