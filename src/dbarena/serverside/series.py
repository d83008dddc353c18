"""A point's server-side series, and how counters become per-second rates.

Counters (commits, blocks read, WAL bytes ...) only grow, so each second stores the
difference to the second before divided by the time between the two readings: a rate
per second. A reading lower than the one before (the server's statistics were reset, or
it restarted) gives no rate for that second rather than a negative one. Gauges (threads
running, row lock waits in progress) and wait-event samples (backends seen waiting on
each event at that instant) are stored as read.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

import orjson

# Name prefixes: `wait.` backends seen on a wait event at the sample (PostgreSQL's
# `Lock:transactionid`; `CPU` for an active backend with no wait event); every other
# name is a rate per second, or a gauge where the engine's reader says so.
WAIT = "wait."


@dataclass(frozen=True)
class ServerSeries:
    """Once-a-second readings of one point: `seconds` since the point started (the
    system sampler's clock), and for each name its values, one per second (None where
    that second has none). `notes` say what could not be read and why (e.g.
    performance_schema off); `stopped` why sampling ended before the point did."""

    engine: str
    seconds: tuple[float, ...] = ()
    series: Mapping[str, tuple[float | None, ...]] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    stopped: str | None = None
    sampler_cpu_s: float | None = None  # CPU time of the sampling thread itself (its cost, in dbarena)
    # stats/bound.figures, filled in when the point is stored (run/measure.with_figures).
    # (No bound: stats/analysis derives it from the stored series whenever it is read.)
    figures: Mapping[str, float] | None = None

    def encode(self) -> str:
        return orjson.dumps({"engine": self.engine, "seconds": list(self.seconds),
                             "series": {k: list(v) for k, v in sorted(self.series.items())},
                             "notes": list(self.notes), "stopped": self.stopped,
                             "sampler_cpu_s": self.sampler_cpu_s}).decode()

    @classmethod
    def decode(cls, text: str | bytes) -> "ServerSeries":
        raw: dict[str, Any] = orjson.loads(text)
        return cls(engine=raw["engine"], seconds=tuple(raw.get("seconds") or ()),
                   series={k: tuple(v) for k, v in (raw.get("series") or {}).items()},
                   notes=tuple(raw.get("notes") or ()), stopped=raw.get("stopped"),
                   sampler_cpu_s=raw.get("sampler_cpu_s"))


def rates(before: Mapping[str, float | None], after: Mapping[str, float | None], dt: float,
          gauges: frozenset[str] = frozenset()) -> dict[str, float | None]:
    """One second's values from two readings `dt` seconds apart: counters as their rate
    per second (None where either reading lacks it or it went down), gauges as read
    in `after`."""
    out: dict[str, float | None] = {}
    for name, value in after.items():
        if name in gauges or name.startswith(WAIT):
            out[name] = value
            continue
        previous = before.get(name)
        if value is None or previous is None or dt <= 0 or value < previous:
            out[name] = None
        else:
            out[name] = (value - previous) / dt
    return out


class Builder:
    """Collects seconds of values whose names may come and go (a wait event seen only
    in some seconds): a name first seen late is None before it, a wait event absent
    from a second was seen 0 times, any other absent name is None."""

    def __init__(self) -> None:
        self.seconds: list[float] = []
        self.series: dict[str, list[float | None]] = {}

    def add(self, second: float, values: Mapping[str, float | None]) -> None:
        n = len(self.seconds)
        self.seconds.append(second)
        for name, value in values.items():
            column = self.series.get(name)
            if column is None:
                column = self.series[name] = [0.0 if name.startswith(WAIT) else None] * n
            column.append(value)
        for name, column in self.series.items():
            if len(column) == n:
                column.append(0.0 if name.startswith(WAIT) else None)

    def build(self, engine: str, notes: tuple[str, ...], stopped: str | None,
              sampler_cpu_s: float | None = None) -> ServerSeries:
        return ServerSeries(engine=engine, seconds=tuple(self.seconds),
                            series={k: tuple(v) for k, v in self.series.items()}, notes=notes, stopped=stopped,
                            sampler_cpu_s=sampler_cpu_s)
