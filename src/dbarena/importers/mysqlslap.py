"""mysqlslap (or mariadb-slap) outputs -> points: one per Benchmark block."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from dbarena.errors import ParseError
from dbarena.importers.commandline import command
from dbarena.importers.common import Command, ImportedPoint, ImportProblem, parse_problem, result_fields
from dbarena.importers.figures import seconds
from dbarena.importers.runs import Segment, too_long
from dbarena.model import PointResult, PointSpec
from dbarena.workloads import mysqlslap


def read_mysqlslap(name: str, text: str, label: str, workload: str | None) -> list[ImportedPoint]:
    lines = text.splitlines()
    args = first_command(lines)
    points, found = [], False
    for first, held, blocks in segments(name, lines, args, len(text) + 1):
        found = found or bool(blocks)
        for _, _, block_args in blocks:
            points.extend(read_run(name, held, first, block_args, label, workload))
    if not found:
        if "Average number of seconds to run all queries" not in text:
            return []  # nothing mysqlslap wrote (the importer says what the file looks like)
        raise no_benchmark(name)
    return points


def first_command(lines: Iterable[str]) -> list[str] | None:
    """The arguments of the first mysqlslap (or mariadb-slap) command line: every block's."""
    return next((a for a in (command(l, "mysqlslap") or command(l, "mariadb-slap") for l in lines) if a is not None),
                None)


def no_benchmark(name: str) -> ImportProblem:
    """A file with mysqlslap's figures and no block they belong to."""
    return ImportProblem(name, None, "no mysqlslap 'Benchmark' block")


def segments(name: str, lines: Iterable[str], args: list[str] | None, max_chars: int) -> Iterator[Segment]:
    """The lines before the first `Benchmark` line, then each block from one `Benchmark`
    line to the next (a run each, with `args`), as they come. A block of more than
    `max_chars` is an ImportProblem at its first line: it would be held whole."""
    held: list[str] = []
    first, chars, i, in_block = 1, 0, 0, False
    for i, line in enumerate(lines, start=1):
        if line.strip() == "Benchmark":
            if held:
                yield first, held, [(first, i - 1, args)] if in_block else []
            held, first, chars, in_block = [], i, 0, True
        held.append(line)
        chars += len(line) + 1
        if chars > max_chars:
            raise ImportProblem(name, first, too_long(max_chars))
    if held:
        yield first, held, [(first, i, args)] if in_block else []


def read_run(name: str, lines: list[str], first: int, args: list[str] | None, label: str,
             workload: str | None) -> list[ImportedPoint]:
    """The point of the block whose lines are `lines` (its `Benchmark` line first), from
    line `first` on."""
    block = "\n".join(lines) + "\n"
    try:
        (slap,) = mysqlslap.parse(block)
    except ParseError as exc:
        raise parse_problem(name, first, exc) from None
    iterations = Command(args, name, first).number("--iterations", "-i")
    params = (("iterations", iterations),) if iterations else ()
    spec = PointSpec(engine="mysql", workload=workload or "mysqlslap", threads=slap.clients, clients=slap.clients,
                     duration_s=round(seconds(slap.avg_s, name, first, "the average run time")),
                     params=(*params, ("queries", slap.queries)))
    try:
        measurement, _ = mysqlslap.read(block, "", None)
    except OverflowError:  # queries / seconds, with more queries than a float holds
        raise ImportProblem(name, first, "a figure beyond what mysqlslap can print") from None
    result = PointResult(spec=spec, status="ok", measurement=measurement, **result_fields(args, "mysqlslap", block))
    # The block ends with its last figure: figures after it (another block whose
    # `Benchmark` line was cut off) are no part of this point, and are reported.
    last = first + next((k for k, line in enumerate(lines) if "Average number of queries per client:" in line),
                        len(lines) - 1)
    return [ImportedPoint(result=result, label=label, first_line=first, last_line=last, tool="mysqlslap")]
