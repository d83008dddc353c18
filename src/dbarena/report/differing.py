"""The columns a table of points or summaries needs so that no two of its rows look alike
unless they are of one configuration.

A table shows label, engine, workload and threads; points of scale 100, 1000 and 10000,
of 8 and 16 clients, or of 300 s and 600 s would look identical there. Each fact of the
configuration key (stats/configkey.py) that differs among the listed rows gets its own
column; what still tells two rows apart unseen (tool options, server settings) shows as
the key's digest.
"""

from __future__ import annotations

from typing import Callable, Sequence

from rich.markup import escape

from dbarena.records import JSON, AnalysedPoint, LevelSummary, json_object
from dbarena.report.fitting import Column

# A row of such a table: a point, or a summary over repeats (analysis.summaries).
Row = AnalysedPoint | LevelSummary


def _fact(r: Row, name: str, own: JSON = None) -> JSON:
    """A fact of a row's configuration: its key's (summaries keep only the key), else
    `own`, the row's own column (a point stored before keys existed)."""
    config = r.config or {}
    return config[name] if name in config else own


def _point(r: Row) -> AnalysedPoint | None:
    return r if isinstance(r, AnalysedPoint) else None


def dataset(given: JSON) -> str:
    """A dataset in a few words: "scale 100", "10 tables x 100,000 rows", "-"."""
    params = json_object(given)
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


def _seconds(value: JSON) -> str:
    return "-" if value is None else f"{value:,} s"


# (header, cell) of each fact that may tell rows apart, in the order they are added.
FACTS: tuple[tuple[str, Callable[[Row], str]], ...] = (
    ("clients", lambda r: str(_fact(r, "clients", r.clients))),
    ("dataset", lambda r: escape(dataset(_fact(r, "params", p.params if (p := _point(r)) else None)))),
    ("duration", lambda r: _seconds(_fact(r, "duration_s", p.duration_s if (p := _point(r)) else None))),
    ("warm-up", lambda r: _seconds(_fact(r, "warmup_s", p.warmup_s if (p := _point(r)) else None))),
    ("server", lambda r: escape(str(_fact(r, "server_major") or "-"))),
    ("load\ngenerators", lambda r: str(_fact(r, "load_generators") or 1)),
)


def _identity(r: Row) -> tuple[str, str, str, int, str]:
    """What a row is shown by already, in every table that uses these columns."""
    return r.label, r.engine, r.workload, r.threads, r.variant


def columns(rows: Sequence[Row], shown: Sequence[str] = ()) -> list[Column]:
    """Columns for the facts in which rows of one label, engine, workload, threads and
    variant differ (clients that follow threads get none; those named in `shown` are in
    the table already), then the key's digest if rows of different keys still look alike."""
    out: list[Column] = []
    cells: list[Callable[[Row], str]] = []

    def alike(r: Row) -> tuple[object, ...]:
        return _identity(r) + tuple(c(r) for c in cells)

    for header, cell in FACTS:
        if header.replace("\n", " ") in shown:
            cells.append(cell)  # shown already: it tells rows apart all the same
            continue
        values: dict[tuple[object, ...], set[str]] = {}
        for r in rows:
            values.setdefault(_identity(r), set()).add(cell(r))
        if any(len(found) > 1 for found in values.values()):
            out.append(Column(header, "left" if header == "dataset" else "right", cell))
            cells.append(cell)
    keys: dict[tuple[object, ...], set[str]] = {}
    for r in rows:
        keys.setdefault(alike(r), set()).add(r.config_key or "")
    if "config" not in shown and any(len(found) > 1 for found in keys.values()):
        out.append(Column("config", "left", lambda r: (r.config_key or "-")[:6]))
    return out
