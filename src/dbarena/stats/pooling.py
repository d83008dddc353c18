"""The rules by which the parts of one point measured by several load generators at
once pool into its figures: counts summed, the average latency weighted by
transactions, the standard deviation pooled (the parallel-variance formula: Chan,
Golub, LeVeque 1979, in the population form pgbench prints), minimum and maximum over
the parts; a figure some part lacks is None, never a made-up zero. `fleet run
--together` (fleet/combine.py) and `import --together` (importers/together.py) pool by
these. Pure."""

from __future__ import annotations

import math
from typing import Any, Callable, Sequence

from dbarena.model import Measurement


def summed(values: Sequence[float | int | None]) -> Any:
    """The sum, or None when some part lacks the figure (never a made-up zero)."""
    present = [v for v in values if v is not None]
    return None if len(present) < len(values) else sum(present)


def weighted_mean(pairs: Sequence[tuple[float | None, int | None]]) -> float | None:
    """The mean of (value, weight) pairs weighted by their weights; None where some
    part lacks either, or no weight is above 0."""
    known = [(v, n) for v, n in pairs if v is not None and n is not None]
    if len(known) < len(pairs):
        return None
    total = sum(n for _, n in known)
    return sum(v * n for v, n in known) / total if total else None


def pooled_stddev(parts: Sequence[Measurement]) -> float | None:
    """Standard deviation of the union from each part's count, mean and standard
    deviation (parallel variance, Chan et al. 1979; population form, as pgbench prints)."""
    rows = [(m.transactions, m.latency_avg_ms, m.latency_stddev_ms) for m in parts]
    known = [(n, mu, sd) for n, mu, sd in rows if n is not None and mu is not None and sd is not None]
    total = sum(n for n, _, _ in known)
    if len(known) < len(rows) or not total:
        return None
    mean = sum(n * mu for n, mu, _ in known) / total
    return math.sqrt(sum(n * (sd ** 2 + (mu - mean) ** 2) for n, mu, sd in known) / total)


def all_or_none(values: Sequence[float | None], pick: Callable[[list[float]], float]) -> float | None:
    """`pick` of the parts' figures where every part has one, else None (a figure of
    some parts only would pass for the whole point's)."""
    known = [v for v in values if v is not None]
    return pick(known) if known and len(known) == len(values) else None


def pooled(ms: Sequence[Measurement], *, tps: float | None, qps: float | None,
           details: dict[str, Any]) -> Measurement:
    """The parts' measurements as one point's: counts summed, latencies pooled by the
    rules above. Its rates and details are the caller's: `fleet run --together` takes
    them over the parts' common window, `import --together` sums the parts' own."""
    return Measurement(
        tps=tps, transactions=summed([m.transactions for m in ms]), qps=qps, queries=summed([m.queries for m in ms]),
        failed_transactions=summed([m.failed_transactions for m in ms]),
        retried_transactions=summed([m.retried_transactions for m in ms]), retries=summed([m.retries for m in ms]),
        errors=summed([m.errors for m in ms]), reconnects=summed([m.reconnects for m in ms]),
        latency_avg_ms=weighted_mean([(m.latency_avg_ms, m.transactions) for m in ms]),
        latency_stddev_ms=pooled_stddev(ms),
        latency_min_ms=all_or_none([m.latency_min_ms for m in ms], min),
        latency_max_ms=all_or_none([m.latency_max_ms for m in ms], max),
        initial_connection_ms=all_or_none([m.initial_connection_ms for m in ms], max),
        details=details)
