"""The figure a point is judged by: one decision, here, that every view reads (results,
summaries, compare, the decision, the report and its exports; the SQL views say the same
in SQL, store/views.py).

A tool that counts transactions is judged by its throughput (TPS, higher is better). A
tool that runs a fixed amount of work is judged by the time it took: mysqlslap prints the
seconds it took to run all its queries (lower is better), as study A publishes it; its
QPS is only that amount divided by those seconds, shown beside it. A tool that printed
neither (an import of a query rate alone) is judged by its QPS.
"""

from __future__ import annotations

from typing import Protocol

TPS, QPS, SECONDS = "tps", "qps", "seconds"

# The point's stored column that holds each metric's figure.
FIELD = {TPS: "tps", QPS: "qps", SECONDS: "run_avg_s"}

# Where it is read: what the figure is, and which way is better.
MEANING = {
    TPS: "transactions per second (higher is better)",
    QPS: "queries per second (higher is better)",
    SECONDS: "seconds to run all of mysqlslap's queries (lower is better)",
}


class Printed(Protocol):
    """What a tool printed of a point (a stored point, or a Measurement before it is)."""

    @property
    def tps(self) -> float | None: ...
    @property
    def qps(self) -> float | None: ...
    @property
    def run_avg_s(self) -> float | None: ...


def of_point(row: Printed) -> str:
    """The metric of a point: what the tool printed decides it."""
    return of_figures(row.tps, row.run_avg_s)


def of_figures(tps: float | None, run_avg_s: float | None) -> str:
    """of_point, from the two printed figures that decide it (a point's values read
    before it is made a record: analysis.load)."""
    if tps is not None:
        return TPS
    if run_avg_s is not None:
        return SECONDS
    return QPS


def lower_is_better(metric: str) -> bool:
    return metric == SECONDS


def figure(row: Printed, metric: str | None = None) -> float | None:
    """The tool's printed figure of a point in its metric."""
    chosen = metric or of_point(row)
    return row.tps if chosen == TPS else row.qps if chosen == QPS else row.run_avg_s


def shown(value: float | None, metric: str, digits: int = 1) -> str:
    """A figure for a table cell: seconds with three decimals and their unit (a mysqlslap
    run takes fractions of a second), throughput with `digits` and a thousands comma."""
    if value is None:
        return "-"
    if metric == SECONDS:
        return f"{value:,.3f} s"
    return f"{value:,.{digits}f}"


def change_words(change_pct: float, metric: str) -> str:
    """A significant change of b against a in words, for the metric's direction: more
    throughput is faster, fewer seconds is faster."""
    if lower_is_better(metric):
        return f"{abs(change_pct):.1f} % {'fewer' if change_pct < 0 else 'more'} seconds: " \
               f"{'faster' if change_pct < 0 else 'slower'}"
    return f"{abs(change_pct):.1f} % {'faster' if change_pct > 0 else 'slower'}"
