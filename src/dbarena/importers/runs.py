"""Where one tool's runs start and end in a file (one run's output or many appended,
each with or without the command line that produced it)."""

from __future__ import annotations

import re
import shlex
from typing import Callable, Iterable, Iterator

from dbarena.importers.commandline import command
from dbarena.importers.common import ImportProblem

# A run's first and last line (1-based) and the arguments of its command line, if known.
Run = tuple[int, int, list[str] | None]
# Consecutive lines of a file read as a stream: the number of the first, the lines, and
# the runs among them (lines outside every run belong to a segment too: what is not
# stored is reported from them, importers/pieces.py).
Segment = tuple[int, list[str], list[Run]]

_PERF = re.compile(r"^\s*Performance counter stats for '(?P<cmd>.+)':\s*$")
_PERF_ELAPSED = re.compile(r"^\s*[\d.,]+ seconds time elapsed")
_PERF_AFTER = re.compile(r"^\s*[\d.,]+ seconds (?:user|sys)\s*$")


def trailer(line: str, tool: str) -> list[str] | None:
    """The command of a `perf stat` report that follows a run (Percona's THP study ran
    every benchmark under perf stat, which names the command only after its output):
    `Performance counter stats for './pgbench db -T 600 -c 64':`. A sysbench Lua script
    run directly (`./tpcc.lua ... run`, sysbench in its #! line) counts as sysbench."""
    if "Performance counter stats" not in line:
        return None  # nearly every line: no expression to try
    m = _PERF.match(line)
    if m is None:
        return None
    cmd = m["cmd"]
    args = command(cmd, tool)
    if args is not None:
        return args
    if tool == "sysbench" and re.match(r"^(?:[\w./~-]*/)?[\w-]+\.lua(?:\s|$)", cmd):
        try:
            return shlex.split(cmd)
        except ValueError:
            return cmd.split()
    return None


class _Splitter:
    """Reads a file line by line and closes a run where the next one starts."""

    def __init__(self, tool: str, is_end: Callable[[str], bool], is_continuation: Callable[[str], bool]):
        self.tool, self.is_end, self.is_continuation = tool, is_end, is_continuation
        self.runs: list[Run] = []
        self.trailer = 0  # 1: inside a perf stat report, 2: after its "seconds time elapsed"
        self._begin(1, None)

    def _begin(self, line: int, args: list[str] | None) -> None:
        self.start, self.args, self.finished, self.content = line, args, False, False

    def close(self, last: int) -> None:
        """The run so far ends at line `last` (if it holds anything)."""
        if self.content or self.args is not None:
            self.runs.append((self.start, last, self.args))

    def _in_trailer(self, line: str) -> bool:
        """Whether the line still belongs to the perf stat report after the run."""
        if self.trailer == 1:
            if _PERF_ELAPSED.match(line):
                self.trailer = 2
            return True
        return not line.strip() or _PERF_AFTER.match(line) is not None

    def feed(self, i: int, line: str) -> None:
        """Line `i` (1-based)."""
        if self.trailer:
            if self._in_trailer(line):
                return
            self.close(i - 1)
            self._begin(i, None)
            self.trailer = 0
        perf = trailer(line, self.tool)
        if perf is not None and self.content:
            if self.args is None:
                self.args = perf
            self.trailer = 1
            return
        cmd = command(line, self.tool)
        if cmd is not None:
            self.close(i - 1)
            self._begin(i, cmd)
            return
        text = line.strip()
        if self.finished and text and not self.is_continuation(line):
            self.close(i - 1)
            self._begin(i, None)
        if text:
            self.content = True
        if self.is_end(line):
            self.finished = True


def split_runs(lines: list[str], tool: str, is_end: Callable[[str], bool],
               is_continuation: Callable[[str], bool]) -> list[Run]:
    """Split a file into runs: at echoed command lines, after a finished run's summary
    (`is_end`) unless the next line still belongs to it (`is_continuation`), and after a
    `perf stat` report naming the run's command (which it then gives the run)."""
    splitter = _Splitter(tool, is_end, is_continuation)
    for i, line in enumerate(lines, start=1):
        splitter.feed(i, line)
    splitter.close(len(lines))
    return splitter.runs


def stream_runs(name: str, lines: Iterable[str], tool: str, is_end: Callable[[str], bool],
                is_continuation: Callable[[str], bool], max_chars: int) -> Iterator[Segment]:
    """split_runs over lines as they come, without the whole file: the splitter only
    ever closes a run where the next one begins, so the lines before a beginning are
    final and go out as a segment with the runs they hold. What is held is the lines
    since the last beginning: the run being read (and the lines after its summary).
    More than `max_chars` of them is an ImportProblem at the first held line (text
    that no run boundary splits would be held whole otherwise)."""
    splitter = _Splitter(tool, is_end, is_continuation)
    held: list[str] = []
    first, chars, i = 1, 0, 0
    for i, line in enumerate(lines, start=1):
        splitter.feed(i, line)
        if splitter.start == i > first:  # a run begins here: what came before is final
            yield first, held, splitter.runs
            held, first, chars, splitter.runs = [], i, 0, []
        held.append(line)
        chars += len(line) + 1
        if chars > max_chars:
            raise ImportProblem(name, first, too_long(max_chars))
    splitter.close(i)
    if held:
        yield first, held, splitter.runs


def too_long(max_chars: int) -> str:
    """Why a run is not read (the problem's line is where it starts)."""
    return (f"a run of more than {max_chars:,} characters ({max_chars / 2**20:g} MiB) from this line on, with no "
            "command line, banner or summary that ends it: import holds one run in memory at a time and reads "
            "none that long")
