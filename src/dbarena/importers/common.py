"""What every reader shares: the problem it raises (`FILE:LINE: what`), the point it
returns, a run's command line read with such problems, and what of a run is stored
(with any password it spells out masked)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timezone

from typing import Any

from dbarena.errors import ParseError, UsageError
from dbarena.importers.commandline import option
from dbarena.importers.durations import Duration
# masked: re-exported, as other parts of dbarena (fleet/failure.py) take it from here.
from dbarena.masking import masked as masked, masked_args
from dbarena.model import PointResult

_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


class ImportProblem(UsageError):
    """`FILE:LINE: what is wrong`; nothing from that file is stored."""

    def __init__(self, name: str, line: int | None, message: str):
        self.name, self.line = name, line
        # A message may quote the file (a value, a line): it never shows a password.
        message = masked(message)
        super().__init__(f"{name}:{line}: {message}" if line is not None else f"{name}: {message}")


@dataclass(frozen=True)
class ImportedPoint:
    result: PointResult
    label: str
    first_line: int
    last_line: int
    tool: str
    price_per_hour: float | None = None
    server_version: str | None = None
    note: str | None = None  # what the import could not tell, for the user
    duration: Duration | None = None  # how the asked duration was found (kept in the point's source)


def whole_number(value: str | None, name: str, line: int) -> int | None:
    if value is None:
        return None
    # ASCII digits only: str.isdigit() takes '²', which int() refuses. A count beyond
    # SQLite's INTEGER is no figure a tool printed.
    if re.fullmatch(r"[0-9]{1,18}", value) is None:
        raise ImportProblem(name, line, f"{value!r} is not a whole number" if re.fullmatch(r"[0-9]+", value) is None
                            else f"{value} is beyond what a tool can run")
    return int(value)


def parse_problem(name: str, first: int, exc: ParseError) -> ImportProblem:
    """A parser's complaint about the run starting at line `first`, at its line in the file."""
    return ImportProblem(name, first + (exc.lineno or 1) - 1, str(exc).split(" at line ")[0])


@dataclass(frozen=True)
class Command:
    """The command line echoed before a run (args None when none was), whose values are
    read as FILE:LINE problems at the run's first line when they are not numbers."""

    args: list[str] | None
    name: str
    line: int

    def value(self, *names: str) -> str | None:
        return option(self.args or [], *names)

    def number(self, *names: str) -> int | None:
        return whole_number(self.value(*names), self.name, self.line)


def _masked_args(tool: str, args: list[str] | None) -> tuple[str, ...]:
    return tuple(masked_args(tool, args or ()))


def result_fields(args: list[str] | None, tool: str, chunk: str) -> dict[str, Any]:
    """A PointResult's fields that say how the run was made: its command and output."""
    return dict(started_at=_EPOCH, ended_at=_EPOCH, command=(tool, *_masked_args(tool, args)), exit_code=None,
                stdout=masked(chunk), stderr="")
