"""Pieces of a file that carry a figure and were not stored: nothing is dropped in silence.

A reader stores runs; an article's code block may keep only a summary's last lines
(`tps = ...` without the header that says what ran), or a sysbench statistics block
without its run, or mysqlslap's figures without their `Benchmark` line. Such lines lie
outside every stored point's lines. `skipped` finds them, per tool, by the lines that
carry a tool's figures, and groups them into pieces (one summary each): each is
reported as `FILE:LINE: reason`. Text with no figure (shell prompts, perf stat output,
prose) is no piece.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable

# Lines that carry a figure of the tool's, and (closing) the line that ends a summary:
# a figure line after a closing one starts another piece.
_FIGURES = {
    "pgbench": re.compile(r"^(?:tps = \d|latency (?:average|stddev) = \d|number of transactions actually processed: \d|"
                          r"number of failed transactions: \d|initial connection time = \d|progress: [\d.]+ s, )"),
    "sysbench": re.compile(r"^(?:\s+(?:transactions|queries|read|write|other|total|total time|"
                           r"total number of events|events/s \(eps\)|min|avg|max|95th percentile|99th percentile|"
                           r"sum|events \(avg/stddev\)|execution time \(avg/stddev\)):\s+\d|\[ *\d+s ?\] (?:thds|threads):)"),
    "mysqlslap": re.compile(r"^\s*(?:(?:Average|Minimum|Maximum) number of seconds to run all queries|"
                            r"Number of clients running queries|Average number of queries per client):\s+[\d.]"),
}
_CLOSING = {
    "pgbench": re.compile(r"^tps = "),
    "sysbench": re.compile(r"^\s+execution time \(avg/stddev\):"),
    "mysqlslap": re.compile(r"^\s*Average number of queries per client:"),
}
_REASONS = {
    "pgbench": "a pgbench summary without its header ('transaction type:' and what follows), which says what ran",
    "sysbench": "sysbench figures without the start of their run (a command line, or the banner and "
                "'Number of threads:') or a 'Threads fairness' block, which would say how many threads ran",
    "mysqlslap": "mysqlslap figures without the 'Benchmark' line that starts their block",
}


@dataclass(frozen=True)
class Skipped:
    """A piece not stored: its first figure line, the other figure lines, and why."""

    line: int
    text: str  # the first figure line, stripped
    more: tuple[int, ...]
    reason: str

    def message(self) -> str:
        likewise = f" (its figures run to line {self.more[-1]})" if self.more else ""
        return f"{self.text!r} not stored: {self.reason}{likewise}"


def skipped(tool: str, lines: list[str], stored: Iterable[tuple[int, int]]) -> list[Skipped]:
    """The pieces of `tool`'s figures outside the stored points' lines (first, last)."""
    found = Pieces(tool)
    found.feed(1, lines, stored)
    return found.finish()


class Pieces:
    """`skipped` over a file read as a stream: fed its lines in order, a segment at a
    time with the lines its stored points cover (a point lies within one segment).
    Holds the piece being read, and those found."""

    def __init__(self, tool: str):
        self.tool = tool
        self.figure, self.closing = _FIGURES.get(tool), _CLOSING.get(tool)
        self.found: list[Skipped] = []
        self._lines: list[int] = []  # the figure lines of the piece being read
        self._text = ""  # its first line, stripped
        self._last_closes = False  # whether its last figure line closes a summary
        self._closed = True

    def _start(self) -> None:
        """A piece begins (the one before, if it holds a line, is found)."""
        if self._lines:
            self.found.append(Skipped(self._lines[0], self._text, tuple(self._lines[1:]), _REASONS[self.tool]))
        self._lines = []

    def feed(self, first: int, lines: list[str], stored: Iterable[tuple[int, int]]) -> None:
        """Lines `first`.. of the file, and the (first, last) lines of the points among them."""
        figure, closing = self.figure, self.closing
        if figure is None or closing is None:
            return
        covered = sorted(stored)
        k = 0
        for i, line in enumerate(lines, start=first):
            while k < len(covered) and covered[k][1] < i:
                k += 1
            if k < len(covered) and covered[k][0] <= i:
                if self._lines:
                    self._start()  # a stored run's line: what follows starts afresh
                self._closed = True
                continue
            if not figure.match(line):
                continue
            ends = closing.match(line) is not None
            if self._closed and not (ends and self._lines and self._last_closes):
                self._start()
            if not self._lines:
                self._text = line.strip()
            self._lines.append(i)
            self._last_closes = ends
            self._closed = ends

    def finish(self) -> list[Skipped]:
        """Every piece found, in the file's order."""
        self._start()
        return self.found
