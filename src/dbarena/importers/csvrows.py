"""CSV files of summary rows -> points: one per row, with the columns CSV_COLUMNS."""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from dataclasses import replace

from dbarena.importers.common import ImportedPoint, ImportProblem, result_fields
from dbarena.model import Measurement, PointResult, PointSpec

CSV_COLUMNS = ("label", "engine", "workload", "threads", "clients", "tps", "qps", "transactions", "queries",
               "time_s", "latency_avg_ms", "latency_p95_ms", "latency_p99_ms", "price_per_hour")
_NUMERIC = tuple(c for c in CSV_COLUMNS if c not in ("label", "engine", "workload"))


def _number(value: str, column: str, name: str, line: int) -> float | None:
    value = value.strip()
    if not value:
        return None
    try:
        return float(value)
    except ValueError:
        raise ImportProblem(name, line, f"column {column!r}: {value!r} is not a number") from None


def read_csv(name: str, text: str, label: str, engine: str | None, workload: str | None) -> list[ImportedPoint]:
    reader = csv.DictReader(io.StringIO(text))
    header = _header(name, reader.fieldnames)
    reader.fieldnames = header
    points = []
    for row in reader:
        points.append(_point(name, reader.line_num, header, row, label, engine, workload))
    if not points:
        raise ImportProblem(name, None, "no rows")
    return points


def _header(name: str, fieldnames: Sequence[str] | None) -> list[str]:
    header = [h.strip().lower() for h in (fieldnames or [])]
    unknown = [h for h in header if h not in CSV_COLUMNS]
    if unknown:
        raise ImportProblem(name, 1, f"unknown column(s) {', '.join(map(repr, unknown))} "
                                     f"(known: {', '.join(CSV_COLUMNS)})")
    return header


def _point(name: str, line: int, header: list[str], row: dict[str, str], label: str, engine: str | None,
           workload: str | None) -> ImportedPoint:
    """The point of the row on line `line`."""
    row = {k: (v or "") for k, v in row.items() if k is not None}
    values = {c: _number(row.get(c, ""), c, name, line) for c in _NUMERIC}
    threads = _threads(values, name, line)
    tps, qps = _throughput(values, name, line)
    spec = PointSpec(engine=_engine(row, engine, name, line), workload=_workload(row, workload, name, line),
                     threads=threads, clients=int(values["clients"] or threads),
                     duration_s=round(values["time_s"] or 0))
    raw = ",".join(header) + "\n" + ",".join(row.get(h, "") for h in header) + "\n"
    result = PointResult(spec=spec, status="ok", measurement=_measurement(values, tps, qps),
                         **result_fields(None, "csv", raw))
    return ImportedPoint(result=replace(result, command=()), label=(row.get("label") or "").strip() or label,
                         first_line=line, last_line=line, tool="csv", price_per_hour=values["price_per_hour"])


def _threads(values: dict[str, float | None], name: str, line: int) -> int:
    threads = values["threads"]
    if threads is None or threads < 1 or threads != int(threads):
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
    run_engine = (row.get("engine") or "").strip() or engine
    if run_engine not in ("postgres", "mysql"):
        raise ImportProblem(name, line, f"engine {run_engine!r}: use postgres or mysql (column or --engine)")
    return run_engine


def _workload(row: dict[str, str], workload: str | None, name: str, line: int) -> str:
    name_of_workload = (row.get("workload") or "").strip() or workload
    if not name_of_workload:
        raise ImportProblem(name, line, "no workload (column 'workload' or --workload)")
    return name_of_workload


def _whole(value: float | None) -> int | None:
    return int(value) if value is not None else None


def _measurement(values: dict[str, float | None], tps: float | None, qps: float | None) -> Measurement:
    return Measurement(tps=tps, qps=qps, transactions=_whole(values["transactions"]),
                       queries=_whole(values["queries"]), latency_avg_ms=values["latency_avg_ms"],
                       latency_p95_ms=values["latency_p95_ms"], latency_p99_ms=values["latency_p99_ms"])
