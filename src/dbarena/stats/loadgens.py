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

from dataclasses import dataclass
from typing import Sequence

from dbarena.records import JSON, JSONObject, StoredPoint
from dbarena.stats import thresholds

# Of a load generator's host CPU: saturated as every view calls it (stats/thresholds.py).
SATURATED_PCT = thresholds.SATURATED_PCT


@dataclass(frozen=True, slots=True, kw_only=True)
class Part:
    """One load generator's part of a point driven together, as fleet/combine.py kept it
    in the point's details (`together.parts`; its series and histogram stay there), with
    the CPU fleet/together.py added: each figure None where the part holds none. A
    figure keeps the JSON number it was (an int prints without decimals)."""

    host: str | None
    threads: int | None
    clients: int | None
    tps: float | None
    qps: float | None
    latency_p95_ms: float | None
    loadgen_cpu_cores: float | None  # the tool's CPU, in cores
    host_cpu_busy_pct: float | None  # its host's busy share

    @classmethod
    def of_json(cls, part: JSONObject) -> "Part":
        host, threads, clients = part.get("host"), part.get("threads"), part.get("clients")
        return cls(host=host if isinstance(host, str) else None, threads=_count(threads), clients=_count(clients),
                   tps=_number(part.get("tps")), qps=_number(part.get("qps")),
                   latency_p95_ms=_number(part.get("latency_p95_ms")),
                   loadgen_cpu_cores=_number(part.get("loadgen_cpu_cores")),
                   host_cpu_busy_pct=_number(part.get("host_cpu_busy_pct")))


def _number(value: JSON) -> float | None:
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _count(value: JSON) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def parts(row: StoredPoint) -> list[Part]:
    """A point's parts, one per load generator ([] for a point of one), from the JSON
    objects fleet/combine.py wrote (the store's edge checked they are objects)."""
    together = row.details.get("together")
    found = together.get("parts") if isinstance(together, dict) else None
    return [Part.of_json(p) for p in found if isinstance(p, dict)] if isinstance(found, list) else []


def count(row: StoredPoint) -> int:
    """How many load generators drove the point."""
    n = row.details.get("load_generators")
    return n if isinstance(n, int) and n > 0 else 1


def busiest(points: Sequence[StoredPoint]) -> tuple[str, float, int] | None:
    """(host, its busy share, load generators) of the busiest load generator of these
    points (repeats of one level); None when none was driven together or none sampled."""
    found = [(p.host, float(p.host_cpu_busy_pct), count(row))
             for row in points for p in parts(row) if p.host_cpu_busy_pct is not None]
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
