"""mysqlslap (or mariadb-slap) outputs -> points: one per Benchmark block."""

from __future__ import annotations

from dbarena.errors import ParseError
from dbarena.importers.commandline import command
from dbarena.importers.common import Command, ImportedPoint, ImportProblem, parse_problem, result_fields
from dbarena.importers.figures import seconds
from dbarena.model import PointResult, PointSpec
from dbarena.workloads import mysqlslap


def read_mysqlslap(name: str, text: str, label: str, workload: str | None) -> list[ImportedPoint]:
    lines = text.splitlines()
    args = next((a for a in (command(l, "mysqlslap") or command(l, "mariadb-slap") for l in lines) if a is not None),
                None)
    starts = [i for i, l in enumerate(lines, start=1) if l.strip() == "Benchmark"]
    if not starts:
        if "Average number of seconds to run all queries" not in text:
            return []  # nothing mysqlslap wrote (the importer says what the file looks like)
        raise ImportProblem(name, None, "no mysqlslap 'Benchmark' block")
    points = []
    for first, nxt in zip(starts, [*starts[1:], len(lines) + 1]):
        block = "\n".join(lines[first - 1:nxt - 1]) + "\n"
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
        last = next((i for i in range(first, nxt) if "Average number of queries per client:" in lines[i - 1]), nxt - 1)
        points.append(ImportedPoint(result=result, label=label, first_line=first, last_line=last, tool="mysqlslap"))
    return points
