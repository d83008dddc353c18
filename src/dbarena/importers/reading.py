"""Results measured elsewhere -> points, ready to store. Pure: text in, points out.

Raw tool outputs (pgbench, sysbench, mysqlslap), one run or many appended in one file
(study A's habit: each run's output preceded by the command line that produced it),
and CSV files of summary rows. Where a command line precedes a run, the workload,
threads and clients come from it; otherwise from the output. The existing parsers
read the runs; any line that cannot be read raises ImportProblem `FILE:LINE: what`.

This module recognises the tool and hands the text to its reader; the readers are
its neighbours in `dbarena.importers` (one module per input format). Callers import
from here.

A file of any size is read as a stream (`stream`): a first reading (`Survey`) says
which tool wrote it, then its text goes to the reader one run at a time, so that what
is held is the run being read, never the file. `read` is the same over one text.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace

from dbarena.importers.commandline import command as _command
from dbarena.importers.commandline import option as _option
from dbarena.importers.common import ImportedPoint, ImportProblem, one_line_break
from dbarena.masking import masked
from dbarena.importers.csvrows import CSV_COLUMNS, read_csv, stream_csv
from dbarena.importers import (gotpc, hammerdb, mysqlslap, pgbench, pgbenchlog, pieces, serverversion, sysbench,
                               workloadnames)
from dbarena.importers.pieces import Skipped
from dbarena.importers.figures import check
from dbarena.importers.mysqlslap import read_mysqlslap
from dbarena.importers.pgbench import read_pgbench
from dbarena.importers.runs import Segment, stream_runs
from dbarena.importers.sysbench import UNNAMED_SYSBENCH, read_sysbench
from dbarena.limits import MAX_IMPORT_RUN_CHARS

__all__ = ["CSV_COLUMNS", "TOOLS", "UNNAMED_SYSBENCH", "ImportProblem", "ImportedPoint", "Skipped", "Survey", "check",
           "detect_tool", "masked", "stream", "texts",
           "read", "read_csv", "read_mysqlslap", "read_pgbench", "read_sysbench",
           "_command", "_option"]  # the last two: tests/unit/test_importer.py tests them here

TOOLS = ("pgbench", "sysbench", "mysqlslap", "hammerdb", "go-tpc", "pgbench-log", "csv")
# The TPC-C kits, whose readers are Reader objects (a file of no result is refused
# saying what it holds).
_KITS = {"hammerdb": hammerdb, "go-tpc": gotpc}


def _is_csv_line(line: str) -> bool:
    fields = [f.strip().lower() for f in line.split(",")]
    return len(fields) > 1 and "threads" in fields


def _looks_like(text: str, known: Iterable[str] = ()) -> list[str]:
    """The tools whose output the text looks like (in TOOLS' order); those `known`
    already (from an earlier part of the file) are not looked for again."""
    found = []
    # Each expression reads the whole text when nothing matches (an import of 10 000
    # runs: 36 MB, three times); a text holding none of its fixed words is skipped.
    # pgbench: a summary (or the figures of one whose header was cut off), progress
    # lines, the banner, or `pgbench -i` output.
    if "pgbench" not in known and re.search(
            r"^(transaction type:|progress: [\d.]+ s, [\d.]+ tps|pgbench \(|creating tables\.\.\.$|"
            r"generating data |tps = \d|latency average = \d)", text, re.M):
        found.append("pgbench")
    if "sysbench" not in known \
            and any(word in text for word in ("sysbench ", "SQL statistics:", "OLTP test statistics:", "] thds:",
                                              "] threads:")) \
            and re.search(r"^(sysbench \d|SQL statistics:|OLTP test statistics:|\[ *\d+s ?\] (thds|threads):)", text,
                          re.M):
        found.append("sysbench")
    if "mysqlslap" not in known and "Average number of seconds to run all queries:" in text \
            and re.search(r"^\s*Average number of seconds to run all queries:", text, re.M):
        found.append("mysqlslap")
    if "hammerdb" not in known and any(word in text for word in ("Vuser ", "Hammerdb ", "HammerDB ", "TEST RESULT : "))\
            and re.search(r"^(?:Vuser \d+:|HammerDB CLI v|\w* ?Hammerdb (?:Transaction Counter Log|Time Profile "
                          r"Report) @|\s*\"?TEST RESULT : System achieved \d+ )", text, re.M):
        found.append("hammerdb")
    if "go-tpc" not in known and any(word in text for word in ("[Summary] ", "[Current] ", "tpmC: ")) \
            and re.search(r"^(?:\[(?:Current|Summary)\] [A-Z][A-Z_0-9]* +- (?:Takes\(s\)|Count):|tpmC: \d)", text,
                          re.M):
        found.append("go-tpc")
    if "pgbench-log" not in known and pgbenchlog.looks_like(text.lstrip("\n")):
        found.append("pgbench-log")
    return found


class Survey:
    """What a first reading of a whole file says, fed its text in parts that end at
    line breaks (`texts`): which tools' output it looks like, whether its first line
    that is not blank is a CSV header, and what a reader needs from anywhere in the file
    before its first run (the command line mysqlslap's blocks share). Holds no text."""

    def __init__(self) -> None:
        self.first_line: str | None = None  # the first line that is not blank
        self.looks: set[str] = set()
        self.slap_args: list[str] | None = None
        self.slap_figures = False  # "Average number of seconds to run all queries" anywhere
        self.lines = 0  # lines fed so far

    def feed(self, text: str) -> None:
        if self.first_line is None:
            self.first_line = next((l for l in text.splitlines() if l.strip()), None)
        self.looks.update(_looks_like(text, self.looks))
        if self.slap_args is None and "slap" in text:
            self.slap_args = mysqlslap.first_command(text.splitlines())
        self.slap_figures = self.slap_figures or "Average number of seconds to run all queries" in text
        self.lines += text.count("\n")

    @property
    def is_csv(self) -> bool:
        return _is_csv_line(self.first_line or "")

    def looks_like(self) -> list[str]:
        return [t for t in TOOLS if t in self.looks]

    def tool(self) -> str | None:
        """The tool that wrote the file, when one alone can have (detect_tool)."""
        if self.is_csv:
            return "csv"
        found = self.looks_like()
        return found[0] if len(found) == 1 else None


def detect_tool(text: str) -> str | None:
    survey = Survey()
    survey.feed(text)
    return survey.tool()


def texts(parts: Iterable[str]) -> Iterator[str]:
    """A file's text, given in parts that end at line breaks (the last one may not),
    as the readers take it: without a byte-order mark (as Excel writes a UTF-8 CSV) and
    with every line break as \n (one reading of its lines for every reader)."""
    first = True
    for part in parts:
        if first:
            part, first = part.removeprefix("\ufeff"), False
        yield one_line_break(part)


def read(name: str, text: str, *, label: str, engine: str | None = None, tool: str = "auto",
         workload: str | None = None, skipped: list[Skipped] | None = None,
         max_run_chars: int = MAX_IMPORT_RUN_CHARS) -> list[ImportedPoint]:
    """Every point in one file. Raises ImportProblem naming the file and line.

    Pieces that carry a figure but hold no run that can be stored (a summary whose
    header was cut off) are appended to `skipped`; without that list, the first one is
    an ImportProblem. A file of such pieces only is one either way."""
    (text,) = texts([text])
    survey = Survey()
    survey.feed(text)
    return list(stream(name, [text], survey, label=label, engine=engine, tool=tool, workload=workload,
                       skipped=skipped, max_run_chars=max_run_chars))


def stream(name: str, parts: Iterable[str], survey: Survey, *, label: str, engine: str | None = None,
           tool: str = "auto", workload: str | None = None, skipped: list[Skipped] | None = None,
           max_run_chars: int = MAX_IMPORT_RUN_CHARS) -> Iterator[ImportedPoint]:
    """`read` over a file's text given in parts that end at line breaks (`texts`), the
    `survey` of the whole file made first: its points as each run is read, holding one
    run at a time (a run of more than `max_run_chars` is an ImportProblem at its first
    line). An ImportProblem may come after points: then none of them is the file's
    (the caller stores them in one transaction that the problem undoes)."""
    if workload is not None:
        workload = workloadnames.canonical(workload) or workload  # ImportOptions refused unknown names
    if tool == "auto":
        detected = survey.tool()
        if detected is None:
            raise ImportProblem(name, None, "cannot tell which tool wrote this (pgbench, sysbench, mysqlslap, "
                                            "HammerDB, go-tpc or a CSV with a header): pass --tool")
        tool = detected
    if tool == "pgbench" and engine not in (None, "postgres"):
        raise ImportProblem(name, None, "pgbench runs are PostgreSQL runs; --engine mysql does not apply")
    if tool == "pgbench-log":
        def nothing(found: int) -> None:
            if not found:
                _nothing_of(name, survey, tool)

        yield from _checked(name, _arithmetic(name, pgbenchlog.read(name, parts, label, workload)), nothing)
        return
    if tool == "csv":
        points: Iterator[ImportedPoint] = _arithmetic(name, stream_csv(name, _lines(parts, ends=True), label, engine,
                                                                      workload))
        yield from _checked(name, points, lambda found: None)
        return
    left = pieces.Pieces(tool)
    kit = _KITS[tool].Reader(name, label, engine, workload) if tool in _KITS else None
    runs = _arithmetic(name, _runs(name, tool, parts, survey, label=label, engine=engine, workload=workload,
                                   max_run_chars=max_run_chars, left=left, kit=kit))

    def finish(found: int) -> None:
        """What is decided at the file's end (`found` points read), in read's order: the
        first piece not stored (fatal without `skipped`, or without a point), then a
        file of nothing the tool wrote."""
        found_left = left.finish()
        if found_left and (skipped is None or not found):
            first = found_left[0]
            others = f" ({len(found_left) - 1} more such piece(s))" if len(found_left) > 1 else ""
            raise ImportProblem(name, first.line, first.message() + others)
        if skipped is not None:
            skipped.extend(found_left)
        if not found:
            _nothing_of(name, survey, tool)
            if kit is not None:  # a file of that kit's that holds no result: what it is, in one line
                raise ImportProblem(name, None, kit.nothing())

    yield from _checked(name, runs, finish)


def _lines(parts: Iterable[str], ends: bool = False) -> Iterator[str]:
    """The lines of a text given in parts that end at line breaks (with their \n: `ends`)."""
    for part in parts:
        yield from part.splitlines(keepends=ends)


def _arithmetic(name: str, points: Iterator[ImportedPoint]) -> Iterator[ImportedPoint]:
    """The readers name the line of what they cannot read; a figure that still
    overflows a tool's parser is said in one line too, never as a traceback."""
    try:
        yield from points
    except ArithmeticError as exc:
        raise ImportProblem(name, None, f"a figure beyond what a tool prints ({exc})") from None


def _checked(name: str, points: Iterator[ImportedPoint], finish: Callable[[int], None]) -> Iterator[ImportedPoint]:
    """The points whose figures are in bounds (figures.check), with any error masked.
    A point out of bounds is the file's problem once it is read to its end: a line
    that cannot be read, and what `finish` decides there, are said first (as when the
    file was read whole), so no point after it goes out."""
    out_of_bounds: ImportProblem | None = None
    counted = 0
    for point in points:
        counted += 1
        if out_of_bounds is not None:
            continue
        try:
            check(name, point)
        except ImportProblem as exc:
            out_of_bounds = exc
            continue
        # A tool's error may quote its connection string: it is stored masked, like its output.
        yield replace(point, result=replace(point.result, error=masked(point.result.error))) \
            if point.result.error else point
    finish(counted)
    if out_of_bounds is not None:
        raise out_of_bounds


def _runs(name: str, tool: str, parts: Iterable[str], survey: Survey, *, label: str, engine: str | None,
          workload: str | None, max_run_chars: int, left: pieces.Pieces,
          kit: hammerdb.Reader | gotpc.Reader | None = None) -> Iterator[ImportedPoint]:
    """The points of a tool's output, a segment (a run and what surrounds it) at a
    time; `left` is fed every segment with the lines its points cover."""
    lines = _lines(parts)
    segments: Iterator[Segment]
    read_run: Callable[[list[str], int, list[str] | None], list[ImportedPoint]]
    if tool == "pgbench":
        segments = stream_runs(name, lines, tool, pgbench.ends_run, pgbench.continues_run, max_run_chars)
        read_run = lambda held, first, args: pgbench.read_run(name, held, first, args, label, workload)  # noqa: E731
    elif kit is not None:
        module = _KITS[tool]
        segments = stream_runs(name, lines, tool, module.ends_run, module.continues_run, max_run_chars)
        read_run = kit.read_run
    elif tool == "sysbench":
        segments = stream_runs(name, lines, tool, sysbench.ends_run, sysbench.continues_run, max_run_chars)
        read_run = lambda held, first, args: sysbench.read_run(  # noqa: E731
            name, held, first, args, label, engine, workload)
    else:
        segments = mysqlslap.segments(name, lines, survey.slap_args, max_run_chars)
        read_run = lambda held, first, args: mysqlslap.read_run(name, held, first, args, label, workload)  # noqa: E731
    blocks = 0
    # The MySQL-family server the text names (a client's welcome, SELECT VERSION()),
    # for the runs after it: sysbench and mysqlslap print no server version themselves.
    server: serverversion.Server | None = None
    for first, held, runs in segments:
        found: list[ImportedPoint] = []
        seen = first  # the segment's next line not yet looked at for a server
        for a, b, args in runs:
            server = serverversion.last_named(held[seen - first:a - first], server)
            read = read_run(held[a - first:b - first + 1], a, args)
            # A server named within the run's own lines (a `SELECT version()` result the
            # splitter kept with a pgbench run that has no command line), or text the
            # splitter took for a run but that holds none (a client's output).
            server = serverversion.last_named(held[a - first:b - first + 1], server)
            found.extend(_on_server(p, server) for p in read)
            seen = b + 1
        server = serverversion.last_named(held[seen - first:], server)
        blocks += len(runs)
        left.feed(first, held, [(p.first_line, p.last_line) for p in found])
        yield from found
    if tool == "mysqlslap" and not blocks and survey.slap_figures:
        raise mysqlslap.no_benchmark(name)


def _on_server(point: ImportedPoint, server: serverversion.Server | None) -> ImportedPoint:
    """A point with the server of its family the text named before it (where the point
    says none of its own): a MySQL-family server for a MySQL point, PostgreSQL's
    version() for a PostgreSQL one."""
    if server is None or point.server_version is not None:
        return point
    family = "postgres" if server.flavour == "postgresql" else "mysql"
    if point.result.spec.engine != family:
        return point
    return replace(point, server_version=server.version, flavour=None if family == "postgres" else server.flavour)


def _nothing_of(name: str, survey: Survey, tool: str) -> None:
    """Raise ImportProblem when a file read as `tool`'s output holds nothing it wrote
    (a `pgbench -i` output read as pgbench's holds nothing to import, and says so)."""
    looks = survey.looks_like()
    if tool in looks:
        return
    others = [t for t in ("csv" if survey.is_csv else None, *looks) if t]
    if others:
        said = " or ".join("a CSV of summary rows" if t == "csv" else f"{t} output" for t in others)
        raise ImportProblem(name, None, f"no {tool} run found (the file looks like {said}: try --tool {others[0]})")
    raise ImportProblem(name, None, f"no {tool} run found (nothing in it looks like what pgbench, sysbench, "
                                    "mysqlslap, HammerDB or go-tpc print)")
