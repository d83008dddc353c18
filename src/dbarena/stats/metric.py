"""The figure a point is judged by: one decision, here, that every view reads (results,
summaries, compare, the decision, the report and its exports; the SQL views say the same
in SQL, store/views.py).

A tool that counts transactions is judged by its throughput (TPS, higher is better). A
tool that runs a fixed amount of work is judged by the time it took: mysqlslap prints the
seconds it took to run all its queries (lower is better), as study A publishes it; its
QPS is only that amount divided by those seconds, shown beside it. A tool that printed
neither (an import of a query rate alone) is judged by its QPS. A TPC-C kit judged by its
new-order transactions per minute is judged by that figure, as the kit printed it: HammerDB's
NOPM and go-tpc's tpmC (in the point's details, `nopm` and `tpmC`): neither is TPS, and a
comparison of points judged by different metrics is "not comparable" (`comparable`).

A point offered a fixed rate (--rate: an open-loop point) carries the throughput it was
offered, so what tells two of them apart is how long their transactions took: a
comparison at an offered rate is of each side's 95th-percentile latency (P95, lower is
better; stats/levelcompare.py). No point is judged by it alone: its group keeps its TPS.
"""

from __future__ import annotations

from typing import Any, Mapping, Protocol

TPS, QPS, SECONDS, NOPM, TPMC = "tps", "qps", "seconds", "nopm", "tpmc"
P95 = "p95_ms"  # a comparison at an offered rate: the latency its runs printed or dbarena computed

# The point's stored column that holds each metric's figure (NOPM and tpmC: a key of
# its details, which the importers write; the SQL views know only the columns).
FIELD = {TPS: "tps", QPS: "qps", SECONDS: "run_avg_s", NOPM: "details.nopm", TPMC: "details.tpmC",
         P95: "latency_p95_ms"}
# The details' key of a metric kept there.
_DETAIL = {NOPM: "nopm", TPMC: "tpmC"}
DETAIL_KEYS = tuple(_DETAIL.values())  # the details a figure is read from

# Where it is read: what the figure is, and which way is better.
MEANING = {
    TPS: "transactions per second (higher is better)",
    QPS: "queries per second (higher is better)",
    SECONDS: "seconds to run all of mysqlslap's queries (lower is better)",
    NOPM: "new-order transactions per minute, HammerDB's NOPM (higher is better)",
    TPMC: "new-order transactions per minute, go-tpc's tpmC (higher is better)",
    P95: "95th-percentile latency in milliseconds at an offered rate (lower is better)",
}
# The short name a table or a message says.
NAME = {TPS: "TPS", QPS: "QPS", SECONDS: "seconds", NOPM: "NOPM", TPMC: "tpmC", P95: "p95 ms"}


class Printed(Protocol):
    """What a tool printed of a point (a stored point, or a Measurement before it is)."""

    @property
    def tps(self) -> float | None: ...
    @property
    def qps(self) -> float | None: ...
    @property
    def run_avg_s(self) -> float | None: ...
    @property
    def details(self) -> Mapping[str, Any]: ...


def of_point(row: Printed) -> str:
    """The metric of a point: what the tool printed decides it."""
    return of_figures(row.tps, row.run_avg_s, row.details)


def of_figures(tps: float | None, run_avg_s: float | None, details: Mapping[str, Any] | None = None) -> str:
    """of_point, from the printed figures that decide it (a point's values read before
    it is made a record: analysis.load): TPS, mysqlslap's seconds, a TPC-C kit's
    new-order rate (details), else QPS."""
    if tps is not None:
        return TPS
    if run_avg_s is not None:
        return SECONDS
    if details:
        for name, key in _DETAIL.items():
            if _number(details.get(key)) is not None:
                return name
    return QPS


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def lower_is_better(metric: str) -> bool:
    return metric in (SECONDS, P95)


def figure(row: Printed, metric: str | None = None) -> float | None:
    """The tool's printed figure of a point in its metric."""
    chosen = metric or of_point(row)
    if chosen in _DETAIL:
        return _number((row.details or {}).get(_DETAIL[chosen]))
    return row.tps if chosen == TPS else row.qps if chosen == QPS else row.run_avg_s


def comparable(a: str, b: str) -> str | None:
    """Why points judged by metric `a` cannot be compared with points judged by `b`
    (None when they can: the same metric). NOPM is no TPS: a ratio of the two is no
    figure."""
    if a == b:
        return None
    def said(m: str) -> str:
        return f"{NAME.get(m, m)} ({MEANING.get(m, m).split(' (')[0]})"

    return f"not comparable: {said(a)} against {said(b)}"


def shown(value: float | None, metric: str, digits: int = 1) -> str:
    """A figure for a table cell: seconds with three decimals and their unit (a mysqlslap
    run takes fractions of a second), throughput with `digits` and a thousands comma."""
    if value is None:
        return "-"
    if metric == SECONDS:
        return f"{value:,.3f} s"
    if metric == P95:
        return f"{value:,.2f} ms"
    return f"{value:,.{digits}f}"


def rate_shown(rate: float) -> str:
    """An offered rate in words' figures: whole TPS with a thousands comma from 100 on,
    as the tool option has it below ("2.5": --rate 2.5 is not "2 TPS")."""
    return f"{rate:,.0f}" if rate >= 100 else f"{rate:g}"


def change_words(change_pct: float, metric: str) -> str:
    """A significant change of b against a in words, for the metric's direction: more
    throughput is faster, fewer seconds is faster, a lower latency at one offered rate is faster."""
    if metric == P95:
        return f"{abs(change_pct):.1f} % {'lower' if change_pct < 0 else 'higher'} p95 latency: " \
               f"{'faster' if change_pct < 0 else 'slower'}"
    if lower_is_better(metric):
        return f"{abs(change_pct):.1f} % {'fewer' if change_pct < 0 else 'more'} seconds: " \
               f"{'faster' if change_pct < 0 else 'slower'}"
    return f"{abs(change_pct):.1f} % {'faster' if change_pct > 0 else 'slower'}"
