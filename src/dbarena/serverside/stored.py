"""The bound of stored points (stats/bound.py's, decided when each point was stored)
beside the rows `results` and the exports show."""

from __future__ import annotations

from typing import Any

from dbarena.interfaces import ResultStore


def attach_bounds(store: ResultStore, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each row (analysis.load's) with `bound`, `bound_evidence` and `server_figures`
    (stats/bound.figures, what compare's "why" reads): None for a point
    whose server was not sampled (imported, --no-server-metrics, or stored before
    schema 16). Reads only those two columns, not the series."""
    read = getattr(store, "server_series", None)
    found = read((r["point_id"] for r in rows), records=False) if read is not None else {}
    for row in rows:
        got = found.get(row["point_id"]) or {}
        row["bound"] = got.get("bound")
        row["bound_evidence"] = got.get("evidence")
        row["server_figures"] = got.get("figures")
    return rows
