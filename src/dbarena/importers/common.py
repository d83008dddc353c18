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

# Every line break str.splitlines() knows: \r\n, a lone \r (a file from an old Mac, or
# a line a terminal overwrote), \v, \f, the file and group separators, NEL, U+2028/9.
_LINE_BREAKS = re.compile(r"\r\n?|[\x0b\x0c\x1c-\x1e\x85\u2028\u2029]")


def one_line_break(text: str) -> str:
    """The text with every line break as \n. The readers split lines with splitlines()
    and find them with re.M's ^ and $, which know \n alone: where the text held another
    break, the two readings differed (a mysqlslap output with lone \r's was no tool's
    output to the one, three lines to the other; a line number named neither)."""
    return _LINE_BREAKS.sub("\n", text)


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
    flavour: str | None = None  # mariadb or mysql where the output names the server (serverversion.py)
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
