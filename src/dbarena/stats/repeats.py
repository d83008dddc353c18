"""Every stored figure of a configuration over its repeats: median, mean, n and spread.

A summary's headline is one figure (stats/metric.py: TPS, or mysqlslap's seconds), over
each repeat's steady-state mean where a series exists. Published studies report more: the
mean or median over two or three runs of the TPS, QPS, average latency and percentiles
the tool printed. This module gives each of those its statistics over the repeats, each
labelled with what it is ("median of printed p95 over 2 runs"), so that such a table can be
reproduced and nobody mistakes a mean of percentiles for a percentile of the pooled
transactions (stats/analysis.pooled_latency gives that one, from merged histograms).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from operator import attrgetter
from typing import Callable, Iterable, Mapping

from dbarena.records import JSONObject, Summarised
from dbarena.stats.estimate import exact_stdev

# The stored figures, in the order views show them: (column, its name in a label).
FIGURES: tuple[tuple[str, str], ...] = (
    ("tps", "TPS"),
    ("qps", "QPS"),
    ("run_avg_s", "seconds"),
    ("latency_min_ms", "min latency (ms)"),
    ("latency_avg_ms", "average latency (ms)"),
    ("latency_p50_ms", "p50 (ms)"),
    ("latency_p90_ms", "p90 (ms)"),
    ("latency_p95_ms", "p95 (ms)"),
    ("latency_p99_ms", "p99 (ms)"),
    ("latency_p999_ms", "p99.9 (ms)"),
    ("latency_max_ms", "max latency (ms)"),
)
STATISTICS = ("n", "median", "mean", "stdev", "min", "max")
PERCENTILES = frozenset(column for column, _ in FIGURES if column[8:9] == "p" and column.startswith("latency_"))


@dataclass(frozen=True)
class OverRepeats:
    """One figure over the repeats that have it."""

    column: str
    name: str
    source: str  # "printed" (what the tool printed), or where dbarena computed it from
    values: tuple[float, ...]

    @property
    def n(self) -> int:
        return len(self.values)

    @property
    def median(self) -> float:
        return statistics.median(self.values)

    @property
    def mean(self) -> float:
        return statistics.fmean(self.values)

    @property
    def stdev(self) -> float | None:
        # (statistics.stdev's own float, computed faster: estimate.exact_stdev.)
        return exact_stdev(self.values) if self.n > 1 else None

    def label(self, statistic: str) -> str:
        """What `statistic` of this figure is, in words: "mean of printed p95 (ms) over 2 runs"."""
        runs = f"{self.n} run{'' if self.n == 1 else 's'}"
        return f"{statistic} of {self.source} {self.name} over {runs}"

    def as_dict(self) -> JSONObject:
        return {"figure": self.column, "source": self.source, "n": self.n, "median": self.median,
                "mean": self.mean, "stdev": self.stdev, "min": min(self.values), "max": max(self.values),
                "median_is": self.label("median"), "mean_is": self.label("mean")}


def source(column: str, from_log: bool) -> str:
    """Where a point's figure came from. A percentile of a point that has a latency
    histogram was computed by dbarena from its transactions (a pgbench log, sysbench's
    histogram); every other figure is the one the tool printed."""
    return "computed" if from_log and column in PERCENTILES else "printed"


def over_repeats(ok: Iterable[Summarised]) -> dict[str, OverRepeats]:
    """Each stored figure of these repeats (ok points of one configuration; `histogram`
    is true where the point has a latency histogram) over those that have it. A figure some points printed and others did not is
    over those that did, and its n says so."""
    rows = list(ok)
    out: dict[str, OverRepeats] = {}
    if not rows:
        return out
    # Every figure of every repeat in one pass (attrgetter, in C), then figure by figure:
    # a getattr a figure and repeat cost more than the statistics (100 k points).
    columns = zip(*map(_FIGURE_VALUES, rows))
    histograms = [r.histogram for r in rows]
    for (column, name), values in zip(FIGURES, columns):
        have = [(value, histogram) for value, histogram in zip(values, histograms) if value is not None]
        if not have:
            continue
        sources = {source(column, histogram) for histogram in {histogram for _, histogram in have}}
        out[column] = OverRepeats(column, name, sources.pop() if len(sources) == 1 else "printed or computed",
                                  tuple(float(value) for value, _ in have))
    return out


_FIGURE_VALUES: Callable[[Summarised], tuple[float | None, ...]] = attrgetter(*(column for column, _ in FIGURES))


def flat(figures: Mapping[str, JSONObject]) -> JSONObject:
    """Figures as as_dict gives them, as flat columns for CSV: `qps_median`,
    `latency_p95_ms_mean`, ... (every figure and statistic, empty where absent)."""
    out: JSONObject = {}
    for column, _ in FIGURES:
        found = figures.get(column) or {}
        for statistic in STATISTICS:
            out[f"{column}_{statistic}"] = found.get(statistic)
    return out


FLAT_FIELDS = tuple(f"{column}_{statistic}" for column, _ in FIGURES for statistic in STATISTICS)
