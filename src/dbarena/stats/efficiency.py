"""Cost per transaction: what one transaction of a point cost the server and the
machine, from what every point samples already (no profiler): the server's and the
load generator's CPU, the machine's context switches and disk bytes, and the server's
own counters (WAL or redo bytes, buffer reads).

Mark Callaghan's version-over-version reports explain a regression this way ("the
root cause is new CPU overhead": CPU microseconds, context switches and KB written per
operation); a throughput ratio alone says that B is slower, this says where B spends
what A does not.

The machine's figures are means over the point's steady state of its once-a-second
samples (analysis.system_view), divided by its steady-state throughput (the same
seconds); the server's counters are their mean rate over the point divided by the
throughput the tool printed (stats/bound.figures). Context switches and disk bytes are
the whole machine's (the load generator's and any neighbour's included): compare them
between points measured alike. Pure.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from dbarena.records import JSON, JSONObject

# The figures, in the order tables show them: name -> (unit, what it is).
FIGURES: dict[str, tuple[str, str]] = {
    "server_cpu_us_per_tx": ("us", "server CPU"),
    "loadgen_cpu_us_per_tx": ("us", "load-generator CPU"),
    "context_switches_per_tx": ("", "context switches"),
    "read_kb_per_tx": ("KB", "disk reads"),
    "write_kb_per_tx": ("KB", "disk writes"),
    "wal_bytes_per_tx": ("bytes", "WAL"),
    "redo_bytes_per_tx": ("bytes", "redo log"),
    "buffer_reads_per_tx": ("", "buffer reads"),
}
# The server's own counters (stats/bound.figures' names, per transaction already) each
# efficiency figure is.
_COUNTERS = {"wal_bytes_per_tx": ("wal_bytes",), "redo_bytes_per_tx": ("status.Innodb_os_log_written",),
             "buffer_reads_per_tx": ("blks_read", "status.Innodb_buffer_pool_reads")}
# Below these, a figure is too small for a ratio of two to say anything (a read in a
# thousand transactions, a tenth of a microsecond).
_FLOOR = {"server_cpu_us_per_tx": 0.1, "loadgen_cpu_us_per_tx": 0.1, "context_switches_per_tx": 0.01,
          "read_kb_per_tx": 0.001, "write_kb_per_tx": 0.001, "wal_bytes_per_tx": 1.0, "redo_bytes_per_tx": 1.0,
          "buffer_reads_per_tx": 0.001}


def of_point(tps: float | None, *, server_cpu: float | None, loadgen_cpu: float | None,
             context_switches_per_s: float | None, disk_read_bytes_per_s: float | None,
             disk_write_bytes_per_s: float | None, server_figures: Mapping[str, JSON] | None) -> JSONObject | None:
    """One point's cost per transaction (the figures it has), or None without a
    throughput to divide by. `tps`: its steady-state throughput, else the printed one;
    the CPU figures in cores (1.0: one hardware thread busy)."""
    if not tps or tps <= 0:
        return None
    out: JSONObject = {}
    for name, rate, scale in (("server_cpu_us_per_tx", server_cpu, 1e6), ("loadgen_cpu_us_per_tx", loadgen_cpu, 1e6),
                              ("context_switches_per_tx", context_switches_per_s, 1.0),
                              ("read_kb_per_tx", disk_read_bytes_per_s, 1 / 1024),
                              ("write_kb_per_tx", disk_write_bytes_per_s, 1 / 1024)):
        if rate is not None:
            out[name] = rate * scale / tps
    for name, counters in _COUNTERS.items():
        for counter in counters:
            value = (server_figures or {}).get(counter)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                out[name] = float(value)
                break
    return out or None


def mean(figures: Iterable[JSONObject | None]) -> dict[str, float]:
    """Each figure's mean over the points that have it (a side's repeats and sessions)."""
    sums: dict[str, list[float]] = {}
    for found in figures:
        for name, value in (found or {}).items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                sums.setdefault(name, []).append(float(value))
    return {name: sum(values) / len(values) for name, values in sums.items()}


@dataclass(frozen=True)
class Difference:
    """The figure whose two sides lie farthest apart as a ratio."""

    name: str
    a: float
    b: float

    @property
    def ratio(self) -> float:
        return self.b / self.a if self.a else float("inf")

    def words(self, a: str, b: str) -> str:
        """'beta uses 38 % more server CPU per transaction: 41.0 against 29.7 us'."""
        unit, what = FIGURES[self.name]
        more = self.b >= self.a
        change = (self.b / self.a - 1) * 100 if self.a else float("inf")
        # (Counted things are fewer, amounts less.)
        amount = f"{abs(change):.0f} % {'more' if more else 'less' if unit else 'fewer'}" if self.a else "more"
        return (f"{b} uses {amount} {what} per transaction: {_shown(self.b)} against {_shown(self.a)}"
                f"{f' {unit}' if unit else ''}")


def _shown(value: float) -> str:
    return f"{value:.3g}" if value < 100 else f"{value:,.0f}"


def differs_most(a: Mapping[str, float], b: Mapping[str, float],
                 among: Sequence[str] = tuple(FIGURES)) -> Difference | None:
    """The figure both sides have whose ratio is farthest from 1 (on the log scale),
    each side at least its floor; None where none is."""
    best: tuple[float, Difference] | None = None
    for name in among:
        x, y = a.get(name), b.get(name)
        if x is None or y is None:
            continue
        floor = _FLOOR[name]
        if max(x, y) < floor:
            continue
        spread = abs(math.log(max(y, floor) / max(x, floor)))
        if best is None or spread > best[0]:
            best = (spread, Difference(name, x, y))
    return None if best is None else best[1]
