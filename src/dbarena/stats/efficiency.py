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
between points measured alike.

Which figure two sides differ in is said only where the data show it, as for the
throughput: each figure over sessions (a session's mean of its points is one
observation, stats/sessions.py), two or more a side, its ratio's p-value below 5 %
divided by the number of figures tried (Bonferroni: eight figures tried at 5 % each
name one in about a third of A/A pairs). An A/A pair on this machine (one
configuration, two labels) was otherwise said to differ by "32763 % more disk writes
per transaction: 0.132 against 0.000402 KB", one session's background flush. Pure.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from dbarena.records import JSON, JSONObject
from dbarena.stats import estimators, sessions

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


def of_group(points: Iterable[tuple[int, JSONObject | None]]) -> tuple[dict[str, float], dict[str, tuple[float, ...]]]:
    """(session id, a point's figures) pairs of a group's points -> each figure's mean
    over the points that have it, and its mean in each session (in session order): one
    pass over the points' figures for both (a summary's, analysis._summary)."""
    found: dict[str, tuple[list[int], list[float]]] = {}
    for session, figures in points:
        if not figures:
            continue
        for name, value in figures.items():
            # (A float first: nearly every figure is one.)
            if isinstance(value, float) or (isinstance(value, int) and not isinstance(value, bool)):
                if (held := found.get(name)) is None:
                    found[name] = held = ([], [])
                held[0].append(session)
                held[1].append(float(value))
    means = {name: sum(values) / len(values) for name, (_, values) in found.items()}
    by_session = {}
    for name, (of, values) in found.items():
        if (group := sessions.of(zip(of, values))) is not None:
            by_session[name] = group.means
    return means, by_session


# The family-wise error rate of the figures tried together (Bonferroni).
ALPHA = 0.05


@dataclass(frozen=True)
class Difference:
    """The figure whose two sides lie farthest apart as a ratio, among those that differ
    beyond their sessions' spread: each side's mean over sessions, and the p-value of
    their ratio."""

    name: str
    a: float
    b: float
    p_value: float | None = None

    @property
    def ratio(self) -> float:
        return self.b / self.a if self.a else float("inf")

    def words(self, a: str, b: str) -> str:
        """'beta uses 38 % more server CPU per transaction: 41.0 against 29.7 us'."""
        unit, what = FIGURES[self.name]
        more = self.b >= self.a
        # (A side below the figure's floor is about nothing: a percentage of it says less
        # than the two figures do.)
        change = (self.b / self.a - 1) * 100 if self.a >= _FLOOR[self.name] else None
        # (Counted things are fewer, amounts less.)
        amount = f"{abs(change):.0f} % {'more' if more else 'less' if unit else 'fewer'}" if change is not None \
            else "more" if more else "less" if unit else "fewer"
        return (f"{b} uses {amount} {what} per transaction: {_shown(self.b)} against {_shown(self.a)}"
                f"{f' {unit}' if unit else ''}")

    def as_json(self) -> JSONObject:
        return {"figure": self.name, "a": self.a, "b": self.b, "p_value": self.p_value}

    @classmethod
    def of_json(cls, found: JSONObject) -> Difference:
        name, a, b, p = found["figure"], found["a"], found["b"], found.get("p_value")
        assert isinstance(name, str) and isinstance(a, float) and isinstance(b, float)
        return cls(name, a, b, p if isinstance(p, float) else None)


def differs_most(a: Mapping[str, Sequence[float]], b: Mapping[str, Sequence[float]], *, one_host: bool,
                 among: Sequence[str] = tuple(FIGURES)) -> Difference | None:
    """`a`, `b`: each side's figures by session (by_session). Among the figures both
    sides have over two or more sessions each, at least one
    side at its floor, those whose ratio (estimators.over_sessions, spreads pooled where
    `one_host`) has a p-value below ALPHA over the number tried: the one farthest from 1
    on the log scale. None where none is (one session a side: the spread is unknown)."""
    tried = [name for name in among if len(a.get(name, ())) >= sessions.MIN_SESSIONS
             and len(b.get(name, ())) >= sessions.MIN_SESSIONS
             and max(statistics.fmean(a[name]), statistics.fmean(b[name])) >= _FLOOR[name]]
    best: tuple[float, Difference] | None = None
    for name in tried:
        sa, sb = (sessions.Sessions(means=tuple(side[name]), runs=(1,) * len(side[name])) for side in (a, b))
        x, y = sa.mean, sb.mean
        c = estimators.over_sessions(sessions.estimate(sa), sessions.estimate(sb), one_host=one_host)
        if c.p_value is None or c.p_value >= ALPHA / len(tried):
            continue
        floor = _FLOOR[name]
        spread = abs(math.log(max(y, floor) / max(x, floor)))
        if best is None or spread > best[0]:
            best = (spread, Difference(name, x, y, c.p_value))
    return None if best is None else best[1]


def _shown(value: float) -> str:
    return f"{value:.3g}" if value < 100 else f"{value:,.0f}"

