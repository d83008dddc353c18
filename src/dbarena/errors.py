"""Exceptions and the exit status each one maps to.

The CLI turns every DbarenaError into one line on stderr and its exit status; no
traceback reaches the user for a condition we anticipated.
"""

from enum import IntEnum


class ExitStatus(IntEnum):
    OK = 0
    POINTS_FAILED = 1  # the run finished, but at least one point failed
    USAGE = 2  # bad option or input: nothing was started
    ENVIRONMENT = 3  # missing binaries, unreachable target, refused password
    INTERRUPTED = 130  # Ctrl-C (128 + SIGINT)
    TERMINATED = 143  # SIGTERM (128 + SIGTERM)


class DbarenaError(Exception):
    exit_status = ExitStatus.ENVIRONMENT


class UsageError(DbarenaError):
    """The user asked for something invalid; raised before anything starts."""

    exit_status = ExitStatus.USAGE


class EnvironmentProblem(DbarenaError):
    """Something outside dbarena is missing or refuses us; the message says what to do."""

    exit_status = ExitStatus.ENVIRONMENT


class ToolMissing(EnvironmentProblem):
    pass


class ConnectionFailed(EnvironmentProblem):
    pass


class DatabaseError(DbarenaError):
    """The server refused a statement dbarena needed (CHECKPOINT, a verification
    query): the point it belongs to fails with this reason; the sweep goes on."""


class StoreError(DbarenaError):
    exit_status = ExitStatus.USAGE


class StoreUnwritable(StoreError):
    """The store stopped taking writes (disk full, a read-only file or directory, the
    file removed or replaced, its PostgreSQL server gone): a run ends `interrupted`,
    the point it could not store saved in a file `dbarena import` reads."""


class ParseError(ValueError):
    """A tool's output could not be read. Names the tool, the line number and the line."""

    def __init__(self, tool: str, message: str, lineno: int | None = None, line: str | None = None):
        self.tool = tool
        self.reason = message
        self.lineno = lineno
        self.line = line
        where = f" at line {lineno}: {line!r}" if lineno is not None else ""
        super().__init__(f"{tool} output: {message}{where}")


class Interrupted(BaseException):
    """SIGTERM, raised in the main thread so cleanup runs as for Ctrl-C.

    A BaseException, like KeyboardInterrupt, so that `except Exception` in a point
    does not swallow it and record the point as failed.
    """

    exit_status = ExitStatus.TERMINATED
