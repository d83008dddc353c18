"""The seams of a run, as typed interfaces.

study -> plan -> session (Executor, Engine -> Target, Tool) -> store -> analysis -> report.
An engine flavour or a benchmark tool is one module implementing one of these and
one line in its registry (engines/__init__.py, workloads/__init__.py).
"""

from __future__ import annotations

import subprocess
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Protocol, Sequence

from dbarena.model import Connection, Measurement, PointResult, PointSpec, Sample

LineCallback = Callable[[str], None]


class Completed(Protocol):
    argv: tuple[str, ...]
    returncode: int | None
    stdout: str
    stderr: str
    elapsed_s: float
    timed_out: bool


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
    ) -> Completed: ...

    def spawn(self, argv: Sequence[str], *, log_path: Path, env: dict | None = None,
              user: str | None = None) -> subprocess.Popen: ...


@dataclass(frozen=True)
class Client:
    """What a tool needs to reach a target: its executable, the password-free
    connection, and a private file holding the password in the tool's own format
    (None where the protocol's client library finds it alone, e.g. libpq's passfile)."""

    binary: str
    conn: Connection
    secret_file: str | None = None


class Tool(Protocol):
    """A benchmark tool: builds its command lines and reads its output (pure)."""

    name: str  # "pgbench", "sysbench", ...
    binary: str  # the executable it runs
    params: tuple[str, ...]  # the PointSpec.params it reads (dataset and run size)
    timed: bool  # runs for spec.duration_s (False: mysqlslap runs a number of queries)
    verifies: bool  # checks the data after each point (verify)

    def check_options(self, options: Mapping[str, Any], base_dir: Path | None = None) -> dict[str, str]: ...
    def secret_file(self, protocol: str, password: str) -> str | None: ...
    def prepare_argv(self, client: Client, spec: PointSpec) -> list[list[str]]: ...
    def cleanup_argv(self, client: Client, spec: PointSpec) -> list[list[str]]: ...
    def point_argv(self, client: Client, spec: PointSpec, mode_args: Sequence[str]) -> list[str]: ...
    def read(self, stdout: str, stderr: str, spec: PointSpec | None) -> tuple[Measurement, tuple[Sample, ...]]: ...
    def read_samples(self, stdout: str, stderr: str) -> tuple[Sample, ...]: ...
    def parse_progress_line(self, line: str, lineno: int | None = None) -> Sample | None: ...
    def verify(self, connection: Any) -> dict | None: ...
    def estimate_s(self, spec: PointSpec) -> float: ...
    def estimate_prepare_s(self, spec: PointSpec) -> float: ...
    def quick_params(self, params: Mapping[str, int]) -> dict[str, int]: ...


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
    def dataset_facts(self) -> dict: ...
    def keep_note(self) -> str: ...


class Engine(Protocol):
    """A database engine flavour (PostgreSQL, MariaDB, MySQL) and how to get a Target."""

    name: str  # the engine family the workloads name: "postgres" or "mysql"
    flavour: str  # "postgresql", "mariadb", "mysql"
    protocol: str  # the wire protocol: "postgresql" or "mysql"
    setting_option: str  # the command-line option that sets a server setting

    def available(self, bindir: Path | None = None, executor: Executor | None = None) -> bool: ...
    def check_target_url(self, url: str) -> str: ...
    def check_settings(self, settings: Mapping[str, str], executor: Executor, bindir: Path | None = None) -> None: ...
    def throwaway(self, *, settings: Mapping[str, str], max_connections: int, bindir: Path | None,
                  keep: bool, executor: Executor) -> AbstractContextManager[Target]: ...
    def external(self, url: str, *, bindir: Path | None, executor: Executor) -> AbstractContextManager[Target]: ...
    def client_libraries(self) -> dict: ...


class Reporter(Protocol):
    """What a run tells its audience (a terminal progress bar, a log, or nobody)."""

    def begin(self, plan: Sequence[PointSpec], estimate_s: Callable[[PointSpec], float]) -> None: ...
    def stage(self, text: str) -> None: ...
    def point_started(self, index: int, spec: PointSpec) -> None: ...
    def sample(self, spec: PointSpec, sample: Sample) -> None: ...
    def point_finished(self, index: int, result: PointResult) -> None: ...
    def end(self) -> None: ...
