"""CSV files of summary rows -> points: one per row, with the columns CSV_COLUMNS."""

from __future__ import annotations

import csv
import io
import unicodedata
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import replace

from dbarena.errors import UsageError
from dbarena.importers import workloadnames
from dbarena.importers.common import ImportedPoint, ImportProblem, result_fields
from dbarena.importers.figures import MAX_COUNT, MAX_SECONDS, MAX_THREADS, number_problem
from dbarena.limits import MAX_NAME_CHARS, quoted
from dbarena.model import Measurement, PointResult, PointSpec

CSV_COLUMNS = ("label", "engine", "workload", "threads", "clients", "tps", "qps", "transactions", "queries",
               "time_s", "latency_avg_ms", "latency_p95_ms", "latency_p99_ms", "price_per_hour",
               # The configuration a tool's output states, each optional: pgbench's scale and
               # query mode, sysbench's tables and table size, the warm-up before the time.
               "scale", "tables", "table_size", "warmup_s", "protocol")
_TEXT = ("label", "engine", "workload", "protocol")
_NUMERIC = tuple(c for c in CSV_COLUMNS if c not in _TEXT)
# The tool parameters of a point's configuration key (as the readers of tool outputs store them).
_PARAMS = ("scale", "tables", "table_size")
# pgbench's query modes (-M): the configuration key holds one other than simple, as an option.
_PROTOCOLS = ("simple", "extended", "prepared")


# What each numeric column may hold (whole, minimum, maximum, above the minimum):
# figures a tool can print, and that the store and JSON can take.
_BOUNDS: dict[str, tuple[bool, float, float | None, bool]] = {
    "threads": (True, 1, MAX_THREADS, False), "clients": (True, 1, MAX_THREADS, False),
    "transactions": (True, 0, MAX_COUNT, False), "queries": (True, 0, MAX_COUNT, False),
    "time_s": (False, 0, MAX_SECONDS, False), "price_per_hour": (False, 0, None, True),
    "scale": (True, 1, MAX_COUNT, False), "tables": (True, 1, MAX_COUNT, False),
    "table_size": (True, 1, MAX_COUNT, False), "warmup_s": (True, 0, MAX_SECONDS, False),
}


def _number(value: str, column: str, name: str, line: int) -> float | None:
    value = value.strip()
    if not value:
        return None
    try:
        number = float(value)
    except ValueError:
        raise ImportProblem(name, line, f"column {column!r}: {value!r} is not a number") from None
    whole, minimum, maximum, above = _BOUNDS.get(column, (False, 0, None, False))
    problem = number_problem(number, whole=whole, minimum=minimum, maximum=maximum, above=above)
    if problem is not None:
        raise ImportProblem(name, line, f"column {column!r}: {value!r} {problem}")
    return number


def read_csv(name: str, text: str, label: str, engine: str | None, workload: str | None) -> list[ImportedPoint]:
    """One point per row; the first row that cannot be read raises ImportProblem at its line."""
    return list(stream_csv(name, io.StringIO(text), label, engine, workload))


def stream_csv(name: str, lines: Iterable[str], label: str, engine: str | None, workload: str | None
               ) -> Iterator[ImportedPoint]:
    """read_csv's points as its rows come, from the file's lines (each with its line
    break): one row is held at a time (a field is at most csv's field_size_limit)."""
    header: list[str] | None = None
    rows = 0
    for line, fields in _rows(name, lines):
        if header is None:
            header = _header(name, fields)
            continue
        if len(fields) != len(header):
            raise ImportProblem(name, line, f"{len(fields)} fields where the header has {len(header)} columns")
        rows += 1
        yield _point(name, line, header, dict(zip(header, fields)), label, engine, workload)
    if not rows:
        raise ImportProblem(name, None, "no rows")


def _rows(name: str, lines: Iterable[str]) -> Iterator[tuple[int, list[str]]]:
    """Each row that is not blank, with the line it starts on."""
    reader = csv.reader(lines, strict=True)
    while True:
        start = reader.line_num + 1
        try:
            fields = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            # strict: a quote never closed, or text after a closing quote, is an error,
            # not a field running to the end of the file.
            reason = ("a quote opened on this line is never closed" if "unexpected end of data" in str(exc)
                      else str(exc))
            raise ImportProblem(name, start, reason) from None
        if any(f.strip() for f in fields):
            yield start, fields


def _header(name: str, fieldnames: Sequence[str]) -> list[str]:
    header = [h.strip().lower() for h in fieldnames]
    unknown = [h for h in header if h not in CSV_COLUMNS]
    if unknown:
        raise ImportProblem(name, 1, f"unknown column(s) {', '.join(map(repr, unknown))} "
                                     f"(known: {', '.join(CSV_COLUMNS)})")
    repeated = sorted({h for h in header if header.count(h) > 1})
    if repeated:
        raise ImportProblem(name, 1, f"column(s) {', '.join(map(repr, repeated))} given twice")
    return header


def _text(row: dict[str, str], column: str, name: str, line: int) -> str:
    """A text column, stripped; control characters (a terminal's escapes, a newline in
    a quoted field) are refused: labels and names are printed and put in reports."""
    value = (row.get(column) or "").strip()
    if len(value) > MAX_NAME_CHARS:
        raise ImportProblem(name, line, f"column {column!r}: {quoted(value)} is {len(value):,} characters long "
                                        f"(at most {MAX_NAME_CHARS})")
    if any(unicodedata.category(c) == "Cc" for c in value):
        raise ImportProblem(name, line, f"column {column!r}: {value!r} holds control characters")
    return value


def _point(name: str, line: int, header: list[str], row: dict[str, str], label: str, engine: str | None,
           workload: str | None) -> ImportedPoint:
    """The point of the row on line `line`."""
    values = {c: _number(row.get(c, ""), c, name, line) for c in _NUMERIC}
    threads = _threads(values, name, line)
    tps, qps = _throughput(values, name, line)
    spec = PointSpec(engine=_engine(row, engine, name, line), workload=_workload(row, workload, name, line),
                     threads=threads, clients=int(values["clients"] or threads),
                     duration_s=round(values["time_s"] or 0),
                     params=tuple(sorted((p, int(v)) for p in _PARAMS if (v := values[p]) is not None)),
                     options=_protocol(row, name, line), warmup_s=int(values["warmup_s"] or 0))
    raw = ",".join(header) + "\n" + ",".join(row.get(h, "") for h in header) + "\n"
    result = PointResult(spec=spec, status="ok", measurement=_measurement(values, tps, qps),
                         **result_fields(None, "csv", raw))
    return ImportedPoint(result=replace(result, command=()), label=_text(row, "label", name, line) or label,
                         first_line=line, last_line=line, tool="csv", price_per_hour=values["price_per_hour"])


def _protocol(row: dict[str, str], name: str, line: int) -> tuple[tuple[str, str], ...]:
    """The query mode as a pgbench output's point holds it: an option, unless simple."""
    mode = _text(row, "protocol", name, line).lower()
    if mode and mode not in _PROTOCOLS:
        raise ImportProblem(name, line, f"column 'protocol': {mode!r} is no query mode ({', '.join(_PROTOCOLS)})")
    return (("protocol", mode),) if mode and mode != "simple" else ()


def _threads(values: dict[str, float | None], name: str, line: int) -> int:
    threads = values["threads"]  # bounded by _number
    if threads is None:
        raise ImportProblem(name, line, "column 'threads': a positive whole number is required")
    return int(threads)


def _throughput(values: dict[str, float | None], name: str, line: int) -> tuple[float | None, float | None]:
    """tps and qps as given, or from the counts and time_s."""
    tps, qps, time_s = values["tps"], values["qps"], values["time_s"]
    if tps is None and values["transactions"] is not None and time_s:
        tps = values["transactions"] / time_s
    if qps is None and values["queries"] is not None and time_s:
        qps = values["queries"] / time_s
    if tps is None and qps is None:
        raise ImportProblem(name, line, "no throughput: give tps (or transactions and time_s), or qps "
                                        "(or queries and time_s)")
    return tps, qps


def _engine(row: dict[str, str], engine: str | None, name: str, line: int) -> str:
    run_engine = _text(row, "engine", name, line) or engine
    if run_engine not in ("postgres", "mysql"):
        raise ImportProblem(name, line, f"engine {run_engine!r}: use postgres or mysql (column or --engine)")
    return run_engine


def _workload(row: dict[str, str], workload: str | None, name: str, line: int) -> str:
    given = _text(row, "workload", name, line)
    if not given:
        if not workload:
            raise ImportProblem(name, line, "no workload (column 'workload' or --workload)")
        return workload  # checked with the options
    try:
        return workloadnames.checked(given, "column 'workload'")
    except UsageError as exc:
        raise ImportProblem(name, line, str(exc)) from None


def _whole(value: float | None) -> int | None:
    return int(value) if value is not None else None


def _measurement(values: dict[str, float | None], tps: float | None, qps: float | None) -> Measurement:
    return Measurement(tps=tps, qps=qps, transactions=_whole(values["transactions"]),
                       queries=_whole(values["queries"]), latency_avg_ms=values["latency_avg_ms"],
                       latency_p95_ms=values["latency_p95_ms"], latency_p99_ms=values["latency_p99_ms"])
