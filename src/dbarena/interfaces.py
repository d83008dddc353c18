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
from typing import TYPE_CHECKING, Any, Callable, Mapping, Protocol, Sequence

from dbarena.model import Connection, Measurement, PointResult, PointSpec, Sample, ToolParam

LineCallback = Callable[[str], None]

if TYPE_CHECKING:
    from dbarena.stats.latency import Latencies


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


class Executor(Protocol):
    """Where the subprocesses of a run start: every one of them goes through this."""

    def run(
        self,
        argv: Sequence[str],
        *,
        env: dict | None = None,
        timeout: float | None = None,
        user: str | None = None,
        cwd: str | Path | None = None,
        on_stdout_line: LineCallback | None = None,
        on_stderr_line: LineCallback | None = None,
        on_start: Callable[[int], None] | None = None,
        cpus: Sequence[int] | None = None,
        stdin: str | bytes | None = None,
    ) -> Completed: ...
    # cwd: where it runs (a point's work directory: see PointInput); stdin: what it
    # reads on its standard input (str as UTF-8), None: nothing (/dev/null).

    def spawn(self, argv: Sequence[str], *, log_path: Path, env: dict | None = None,
              user: str | None = None, cpus: Sequence[int] | None = None) -> subprocess.Popen: ...


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


class Tool(Protocol):
    """A benchmark tool: builds its command lines and reads its output (pure)."""

    name: str  # "pgbench", "sysbench", ...
    binary: str  # the executable it runs
    params: tuple[ToolParam, ...]  # the PointSpec.params it reads (dataset and run size), declared once
    timed: bool  # runs for spec.duration_s (False: mysqlslap runs a number of queries)
    verifies: bool  # checks the data after each point (verify)

    def check_options(self, options: Mapping[str, Any], base_dir: Path | None = None) -> dict[str, str]: ...
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
    def read_latency_log(self, log_dir: Path, sampling_rate: float) -> "Latencies | None": ...
    def read(self, stdout: str, stderr: str, spec: PointSpec | None) -> tuple[Measurement, tuple[Sample, ...]]: ...
    def read_samples(self, stdout: str, stderr: str) -> tuple[Sample, ...]: ...
    def parse_progress_line(self, line: str, lineno: int | None = None) -> Sample | None: ...
    def verify(self, connection: Any) -> dict | None: ...
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

    @property
    def url(self) -> str: ...
    def client(self, tool: Tool) -> Client: ...
    def client_env(self) -> dict: ...
    def problem(self) -> str | None: ...
    def server_pid(self) -> int | None: ...
    def connect(self) -> Any: ...
    def facts(self) -> dict: ...
    def checkpoint(self) -> None: ...
    # Records the shared memory a throwaway server maps now, for its removal should
    # the server die before it can remove it (no-op where there is none).
    def remember_shared_memory(self) -> None: ...
    # A throwaway server's data directory copied aside while it is stopped (after a
    # dataset is prepared), and put back (before a point); EnvironmentProblem if not.
    def snapshot_data(self) -> None: ...
    def restore_data(self) -> None: ...
    def dataset_facts(self) -> dict: ...
    def keep_note(self) -> str: ...


class Engine(Protocol):
    """A database engine flavour (PostgreSQL, MariaDB, MySQL) and how to get a Target."""

    name: str  # the engine family the workloads name: "postgres" or "mysql"
    flavour: str  # "postgresql", "mariadb", "mysql"
    protocol: str  # the wire protocol: "postgresql" or "mysql"
    setting_option: str  # the command-line option that sets a server setting

    def available(self, bindir: Path | None = None, executor: Executor = ...) -> bool: ...
    def check_target_url(self, url: str) -> str: ...
    def check_settings(self, settings: Mapping[str, str], executor: Executor, bindir: Path | None = None) -> None: ...
    def throwaway(self, *, settings: Mapping[str, str], max_connections: int, bindir: Path | None,
                  keep: bool, executor: Executor, cluster: Mapping[str, str] | None = None,
                  data_parent: Path | None = None, cpus: Sequence[int] | None = None
                  ) -> AbstractContextManager[Target]: ...
    # A usage error for cluster options (what creating the data directory decides) that
    # this engine does not know.
    def check_cluster(self, cluster: Mapping[str, str]) -> None: ...
    def external(self, url: str, *, bindir: Path | None, executor: Executor) -> AbstractContextManager[Target]: ...
    def client_libraries(self) -> dict: ...


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
