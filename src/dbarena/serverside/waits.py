"""What a family's server readings say about where a point's time went, declared by the
family beside what its reader asks (postgres.py, mysql.py): how its waits classify, what
its readings show on the report's per-second chart. stats/bound.py weighs these against
the machine's CPU and decides one bound per point; it knows no family by name, so a new
family adds its reader and a `Family` here (FAMILIES, in families.py).

Pure: series in, (kind, share, evidence) out.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

# The kinds of bound a server's waits can show (stats/bound.py adds the CPU's).
LOCKS = "locks"
WAL = "WAL or fsync"
IO = "I/O"
LOADGEN = "load generator"
SERVER_CPU = "server CPU"

Series = Mapping[str, Sequence[float | None]]
# (kind, share, evidence) of a bound past its threshold.
Found = list[tuple[str, float, str]]


@dataclass(frozen=True)
class Limits:
    """The thresholds a family's waits are judged by (stats/bound.py declares them)."""

    wait_share: float  # a class of waits holding this share of the time bounds the point
    client_share: float  # the server waiting for its client this share of the time: the load generator
    miss_share: float  # reads missing the server's cache past this share: I/O
    min_samples: int  # fewer active samples than this say too little to decide from


@dataclass(frozen=True)
class Family:
    """One engine family's reading of its own series."""

    name: str  # the engine family (interfaces.Engine.name)
    # Whether these series are this family's reader's (by what it records, not by a name
    # the store may lack: series stored before readings kept their engine).
    recorded: Callable[[Series], bool]
    # The bounds its waits show past `limits`, and notes said beside the answer.
    waits: Callable[[Series, int, Limits], tuple[Found, list[str]]]
    # What the report's per-second chart overlays: (what it is, one value per second).
    waiting: Callable[[Series, int], tuple[str, list[float | None]]]


def mean(values: Sequence[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.fmean(present) if present else None


def pct(share: float) -> str:
    return f"{100 * share:.0f} %"
