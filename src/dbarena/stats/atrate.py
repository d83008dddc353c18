"""Latency at an offered rate: what two sides offered the same fixed rate (--rate, a
workload's options.rate; not a step of a --slo search) are compared by.

Offered a rate, a side carries about that throughput whatever it could do, so its TPS
tells nothing apart: what differs is how long its transactions took, counted from each
one's scheduled start (capacity.py). Each run's 95th-percentile latency (as the tool
printed it, or as dbarena computed it from the run's per-transaction log) is one
observation; a session's mean of its runs' is one per session, and the comparison is
over sessions as every other (stats/sessions.py), each side's spread between sessions
its own (two sessions a side give an interval).

A run that did not carry the rate (its throughput below capacity.carried_floor) has the
latency of a queue that grows with the run's length, not the rate's: the side says how
far short it fell, and a comparison of it is not decided. A run with too few
transactions for a p95 (capacity.TAIL_TRANSACTIONS above it) is not counted.

Pure: records in, records out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypeVar

from dbarena.records import AtRate, Summarised
from dbarena.stats import capacity, sessions

__all__ = ["fixed", "of_groups", "p95_of", "NEEDED", "QUEUE"]

# Why a comparison of a side that fell short of its offered rate is not decided (its
# reason says it; the decision's words find it there).
QUEUE = "a latency of a growing queue, not of the rate"
# The transactions a run needs for its p95 to count (TAIL_TRANSACTIONS above it).
NEEDED = capacity.needed(capacity.Objective("p95", 1.0))


def fixed(point: Summarised) -> bool:
    """Whether a point was offered a rate the user fixed (not a --slo search's step)."""
    return point.target_tps is not None and point.slo is None


def p95_of(point: Summarised) -> float | None:
    """The p95 (ms) a point offered a fixed rate counts for: an ok run's, on NEEDED
    transactions or more; None for any other point."""
    if not fixed(point) or point.status != "ok" or point.latency_p95_ms is None or point.latency_p95_ms <= 0 \
            or (point.transactions or 0) < NEEDED:
        return None
    return point.latency_p95_ms


Key = TypeVar("Key", bound=tuple[str, str])


def of_groups(groups: Mapping[Key, Sequence[Summarised]]) -> dict[Key, AtRate]:
    """Each group (a label and configuration key -> its points) offered a fixed rate,
    with its AtRate, from its own sessions alone. (Throughput's estimates borrow the
    spread between sessions of other groups of the configuration, where a view reads
    them; a latency's would then differ with the labels a view reads: `compare a b`
    against a report of a, b and c. Its own sessions give every view one answer.)"""
    out: dict[Key, AtRate] = {}
    for key, members in groups.items():
        # (A search's step at the same rate, were there one, is no run of a fixed rate.)
        ok = [m for m in members if fixed(m) and m.status == "ok"]
        if not any(fixed(m) for m in members):
            continue
        counted = [(m.run_id, p95) for m in ok if (p95 := p95_of(m)) is not None]
        found = sessions.of(counted)
        out[key] = AtRate(estimate=sessions.estimate(found) if found is not None else None, runs=len(counted),
                          short=_short(ok))
    return out


def _short(ok: Sequence[Summarised]) -> str | None:
    """How far the runs that did not carry their offered rate fell short, in words
    ("achieved 180 of 200 TPS offered in 1 of 4 runs"); None where every run carried it."""
    short = [m for m in ok if m.target_tps is not None and m.tps is not None
             and m.tps < capacity.carried_floor(m.target_tps, m.duration_s)]
    if not short:
        return None
    least = min(short, key=lambda m: m.tps or 0.0)
    assert least.tps is not None and least.target_tps is not None
    return (f"achieved {least.tps:,.0f} of {least.target_tps:,.0f} TPS offered"
            f"{f' (the least of {len(short)})' if len(short) > 1 else ''} in {len(short)} of {len(ok)} run(s)")
