"""The columns a table of points or summaries needs so that no two of its rows look alike
unless they are of one configuration.

A table shows label, engine, workload and threads; points of scale 100, 1000 and 10000,
of 8 and 16 clients, or of 300 s and 600 s would look identical there. Each fact of the
configuration key (stats/configkey.py) that differs among the listed rows gets its own
column; what still tells two rows apart unseen (tool options, server settings) shows as
the key's digest.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

from rich.markup import escape

from dbarena.records import AnalysedPoint
from dbarena.report.fitting import Column


def _config(r: AnalysedPoint | Mapping[str, Any]) -> Mapping[str, Any]:
    return r.get("config") or {}


def _fact(r: AnalysedPoint | Mapping[str, Any], name: str) -> Any:
    """A fact of a row's configuration: its key's (summaries keep only the key), else the
    row's own column (a point stored before keys existed)."""
    config = _config(r)
    return config[name] if name in config else r.get(name)


def dataset(params: Mapping[str, Any] | None) -> str:
    """A dataset in a few words: "scale 100", "10 tables x 100,000 rows", "-"."""
    if not params:
        return "-"
    words = []
    if params.get("scale") is not None:
        words.append(f"scale {params['scale']:,}")
    if params.get("tables") is not None or params.get("table_size") is not None:
        words.append(f"{params.get('tables', '?')} tables x {params['table_size']:,} rows"
                     if isinstance(params.get("table_size"), int) else f"{params.get('tables')} tables")
    rest = {k: v for k, v in params.items() if k not in ("scale", "tables", "table_size")}
    words.extend(f"{k} {v}" for k, v in sorted(rest.items()))
    return ", ".join(words) or "-"


def _seconds(value: Any) -> str:
    return "-" if value is None else f"{value:,} s"


# (header, cell) of each fact that may tell rows apart, in the order they are added.
FACTS: tuple[tuple[str, Callable[[AnalysedPoint | Mapping[str, Any]], str]], ...] = (
    ("clients", lambda r: str(_fact(r, "clients"))),
    ("dataset", lambda r: escape(dataset(_fact(r, "params")))),
    ("duration", lambda r: _seconds(_fact(r, "duration_s"))),
    ("warm-up", lambda r: _seconds(_fact(r, "warmup_s"))),
    ("server", lambda r: escape(str(_fact(r, "server_major") or "-"))),
    ("load\ngenerators", lambda r: str(_fact(r, "load_generators") or 1)),
)
# What a row is shown by already, in every table that uses these columns.
IDENTITY = ("label", "engine", "workload", "threads", "variant")


def columns(rows: Sequence[AnalysedPoint | Mapping[str, Any]], shown: Sequence[str] = ()) -> list[Column]:
    """Columns for the facts in which rows of one label, engine, workload, threads and
    variant differ (clients that follow threads get none; those named in `shown` are in
    the table already), then the key's digest if rows of different keys still look alike."""
    out: list[Column] = []
    cells: list[Callable[[AnalysedPoint | Mapping[str, Any]], str]] = []

    def alike(r: AnalysedPoint | Mapping[str, Any]) -> tuple:
        return tuple(r.get(k) for k in IDENTITY) + tuple(c(r) for c in cells)

    for header, cell in FACTS:
        if header.replace("\n", " ") in shown:
            cells.append(cell)  # shown already: it tells rows apart all the same
            continue
        values: dict[tuple, set[str]] = {}
        for r in rows:
            values.setdefault(tuple(r.get(k) for k in IDENTITY), set()).add(cell(r))
        if any(len(found) > 1 for found in values.values()):
            out.append(Column(header, "left" if header == "dataset" else "right", cell))
            cells.append(cell)
    keys: dict[tuple, set[str]] = {}
    for r in rows:
        keys.setdefault(alike(r), set()).add(r.get("config_key") or "")
    if "config" not in shown and any(len(found) > 1 for found in keys.values()):
        out.append(Column("config", "left", lambda r: (r.get("config_key") or "-")[:6]))
    return out
