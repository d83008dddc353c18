"""Results measured elsewhere -> points, ready to store. Pure: text in, points out.

Raw tool outputs (pgbench, sysbench, mysqlslap), one run or many appended in one file
(study A's habit: each run's output preceded by the command line that produced it),
and CSV files of summary rows. Where a command line precedes a run, the workload,
threads and clients come from it; otherwise from the output. The existing parsers
read the runs; any line that cannot be read raises ImportProblem `FILE:LINE: what`.

This module recognises the tool and hands the text to its reader; the readers are
in `dbarena.importers` (one module per input format). Callers import from here.
"""

from __future__ import annotations

import re
from dataclasses import replace

from dbarena.importers.commandline import command as _command
from dbarena.importers.commandline import option as _option
from dbarena.importers.common import ImportedPoint, ImportProblem, one_line_break
from dbarena.masking import masked
from dbarena.importers.csvrows import CSV_COLUMNS, read_csv
from dbarena.importers import pieces, workloadnames
from dbarena.importers.pieces import Skipped
from dbarena.importers.figures import check
from dbarena.importers.mysqlslap import read_mysqlslap
from dbarena.importers.pgbench import read_pgbench
from dbarena.importers.sysbench import UNNAMED_SYSBENCH, read_sysbench

__all__ = ["CSV_COLUMNS", "TOOLS", "UNNAMED_SYSBENCH", "ImportProblem", "ImportedPoint", "Skipped", "detect_tool",
           "masked",
           "read", "read_csv", "read_mysqlslap", "read_pgbench", "read_sysbench",
           "_command", "_option"]  # the last two: tests/unit/test_importer.py tests them here

TOOLS = ("pgbench", "sysbench", "mysqlslap", "csv")


def _is_csv(text: str) -> bool:
    first = next((l for l in text.splitlines() if l.strip()), "")
    fields = [f.strip().lower() for f in first.split(",")]
    return len(fields) > 1 and "threads" in fields


def _looks_like(text: str) -> list[str]:
    """The tools whose output the text looks like (in TOOLS' order)."""
    found = []
    # Each expression reads the whole text when nothing matches (an import of 10 000
    # runs: 36 MB, three times); a text holding none of its fixed words is skipped.
    # pgbench: a summary (or the figures of one whose header was cut off), progress
    # lines, the banner, or `pgbench -i` output.
    if re.search(r"^(transaction type:|progress: [\d.]+ s, [\d.]+ tps|pgbench \(|creating tables\.\.\.$|"
                 r"generating data |tps = \d|latency average = \d)", text, re.M):
        found.append("pgbench")
    if any(word in text for word in ("sysbench ", "SQL statistics:", "OLTP test statistics:", "] thds:", "] threads:")) \
            and re.search(r"^(sysbench \d|SQL statistics:|OLTP test statistics:|\[ *\d+s ?\] (thds|threads):)", text,
                          re.M):
        found.append("sysbench")
    if "Average number of seconds to run all queries:" in text \
            and re.search(r"^\s*Average number of seconds to run all queries:", text, re.M):
        found.append("mysqlslap")
    return found


def detect_tool(text: str) -> str | None:
    if _is_csv(text):
        return "csv"
    found = _looks_like(text)
    return found[0] if len(found) == 1 else None


def read(name: str, text: str, *, label: str, engine: str | None = None, tool: str = "auto",
         workload: str | None = None, skipped: list[Skipped] | None = None) -> list[ImportedPoint]:
    """Every point in one file. Raises ImportProblem naming the file and line.

    Pieces that carry a figure but hold no run that can be stored (a summary whose
    header was cut off) are appended to `skipped`; without that list, the first one is
    an ImportProblem. A file of such pieces only is one either way."""
    text = text.removeprefix("\ufeff")  # a byte-order mark, as Excel writes a UTF-8 CSV
    text = one_line_break(text)  # (one reading of its lines for every reader below)
    if workload is not None:
        workload = workloadnames.canonical(workload) or workload  # ImportOptions refused unknown names
    try:
        tool, points = _read(name, text, label=label, engine=engine, tool=tool, workload=workload)
    except ArithmeticError as exc:
        # The readers name the line of what they cannot read; a figure that still
        # overflows a tool's parser is said in one line too, never as a traceback.
        raise ImportProblem(name, None, f"a figure beyond what a tool prints ({exc})") from None
    left = pieces.skipped(tool, text.splitlines(), [(p.first_line, p.last_line) for p in points])
    if left and (skipped is None or not points):
        first = left[0]
        others = f" ({len(left) - 1} more such piece(s))" if len(left) > 1 else ""
        raise ImportProblem(name, first.line, first.message() + others)
    if skipped is not None:
        skipped.extend(left)
    if not points and tool != "csv":
        _nothing_of(name, text, tool)
    for point in points:
        check(name, point)
    # A tool's error may quote its connection string: it is stored masked, like its output.
    return [replace(p, result=replace(p.result, error=masked(p.result.error))) if p.result.error else p
            for p in points]


def _nothing_of(name: str, text: str, tool: str) -> None:
    """Raise ImportProblem when a file read as `tool`'s output holds nothing it wrote
    (a `pgbench -i` output read as pgbench's holds nothing to import, and says so)."""
    if tool in _looks_like(text):
        return
    others = [t for t in ("csv" if _is_csv(text) else None, *_looks_like(text)) if t]
    if others:
        looks = " or ".join("a CSV of summary rows" if t == "csv" else f"{t} output" for t in others)
        raise ImportProblem(name, None, f"no {tool} run found (the file looks like {looks}: try --tool {others[0]})")
    raise ImportProblem(name, None, f"no {tool} run found (nothing in it looks like what pgbench, sysbench or "
                                    "mysqlslap print)")


def _read(name: str, text: str, *, label: str, engine: str | None, tool: str, workload: str | None
          ) -> tuple[str, list[ImportedPoint]]:
    """The tool (recognised, when auto) and the points its reader found."""
    if tool == "auto":
        detected = detect_tool(text)
        if detected is None:
            raise ImportProblem(name, None, "cannot tell which tool wrote this (pgbench, sysbench, mysqlslap or a "
                                            "CSV with a header): pass --tool")
        tool = detected
    if tool == "pgbench":
        if engine not in (None, "postgres"):
            raise ImportProblem(name, None, "pgbench runs are PostgreSQL runs; --engine mysql does not apply")
        return tool, read_pgbench(name, text, label, workload)
    if tool == "sysbench":
        return tool, read_sysbench(name, text, label, engine, workload)
    if tool == "mysqlslap":
        return tool, read_mysqlslap(name, text, label, workload)
    return tool, read_csv(name, text, label, engine, workload)
