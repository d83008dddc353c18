"""Points that several load generators drove together (`fleet run --together`): how many,
each one's share, and whether they or the server were the bound.

The merged point keeps each host's part in its details (fleet/combine.py: `together.parts`,
with the load generator's CPU in cores and its host's busy share, fleet/together.py). A
load generator whose host was busy at SATURATED or more could not give more load: its
point measures the load generators, as a one-host point with the load-generator-bound
warning does. Otherwise the load generators had room to spare, and the bound lies with
the server (or the network between them), which is what adding load generators is for.
Pure functions of analysed points (records.AnalysedPoint).
"""

from __future__ import annotations

from typing import Any, Sequence

from dbarena.records import StoredPoint
from dbarena.stats import thresholds

# Of a load generator's host CPU: saturated as every view calls it (stats/thresholds.py).
SATURATED_PCT = thresholds.SATURATED_PCT


def parts(row: StoredPoint) -> list[dict[str, Any]]:
    """A point's parts, one per load generator ([] for a point of one): JSON objects
    fleet/combine.py wrote (the store's edge checked they are objects)."""
    together = row.details.get("together")
    found = together.get("parts") if isinstance(together, dict) else None
    return [p for p in found if isinstance(p, dict)] if isinstance(found, list) else []


def count(row: StoredPoint) -> int:
    """How many load generators drove the point."""
    n = row.details.get("load_generators")
    return n if isinstance(n, int) and n > 0 else 1


def busiest(points: Sequence[StoredPoint]) -> tuple[str, float, int] | None:
    """(host, its busy share, load generators) of the busiest load generator of these
    points (repeats of one level); None when none was driven together or none sampled."""
    found = [(p.get("host"), float(p["host_cpu_busy_pct"]), count(row))
             for row in points for p in parts(row) if p.get("host_cpu_busy_pct") is not None]
    if not found:
        return None
    host, busy, n = max(found, key=lambda f: f[1])
    return str(host), busy, n


def bound(points: Sequence[StoredPoint]) -> str | None:
    """Were the load generators or the server the bound, in words with the figure that
    says so; None for points of one load generator (stats/decision.bound says theirs)."""
    if not any(parts(p) for p in points):
        return None
    top = busiest(points)
    n = max(count(p) for p in points)
    if top is None:
        return f"{n} load generators, their CPU not sampled: cannot tell"
    host, busy, _ = top
    if busy >= SATURATED_PCT:
        return f"load generators saturated ({host} {busy:.0f} % busy, of {n} load generators)"
    return (f"not the load generators (busiest: {host}, {busy:.0f} % busy, of {n}): "
            "the server or the network")
