"""The report's levels offered a fixed rate (--rate; not a --slo search's steps): each
label's p95 latency at each rate and level, against the baseline's at the same
configuration, with the ratio, interval and verdict `compare` gives the pair
(levelcompare.against). The report's sections show closed-loop levels, whose throughput
is what a fixed rate sets; these levels get a table of their own."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields, replace

from dbarena.records import JSONObject, LevelSummary
from dbarena.stats import levelcompare

__all__ = ["RateLevel", "rate_levels"]


@dataclass(frozen=True)
class RateLevel:
    """One label's group at an offered rate and level, and how its p95 there compares
    with the baseline's (None: the baseline's own row, or none to compare with)."""

    label: str
    engine: str
    workload: str
    threads: int
    offered_tps: float
    achieved_tps: float | None  # the mean over its runs of the throughput each printed it carried
    p95_ms: float | None  # each session's mean of its runs' p95, then their mean (stats/atrate.py)
    runs: int  # the runs its p95 rests on
    sessions: int
    short: str | None  # where a run fell short of the rate, how far
    ratio_to_baseline: float | None = None
    ratio_ci_low: float | None = None
    ratio_ci_high: float | None = None
    verdict: str | None = None
    verdict_text: str | None = None

    def as_json(self) -> JSONObject:
        return {f.name: getattr(self, f.name) for f in fields(self)}


def rate_levels(groups: Sequence[LevelSummary], order: Sequence[str], baseline: str | None,
                about: Sequence[str] = ()) -> list[RateLevel]:
    """The groups offered a fixed rate (those with `at_rate`), of the labels of `order`
    in that order, each against the baseline's group at its engine, workload, level and
    rate where the baseline has one."""
    fixed = [g for g in groups if g.at_rate is not None and g.target_tps is not None and g.label in order]
    base = {(g.engine, g.workload, g.threads, g.target_tps): g for g in fixed if g.label == baseline}
    out = []
    for g in sorted(fixed, key=lambda g: (g.engine, g.workload, g.target_tps or 0.0, g.threads, order.index(g.label))):
        assert g.at_rate is not None and g.target_tps is not None
        row = RateLevel(label=g.label, engine=g.engine, workload=g.workload, threads=g.threads,
                        offered_tps=g.target_tps, achieved_tps=_printed_tps(g),
                        p95_ms=g.at_rate.estimate.mean if g.at_rate.estimate is not None else None,
                        runs=g.at_rate.runs, sessions=g.sessions, short=g.at_rate.short)
        theirs = base.get((g.engine, g.workload, g.threads, g.target_tps))
        found = levelcompare.against(theirs, g, about) if theirs is not None and theirs is not g else None
        if found is not None:
            row = replace(row, ratio_to_baseline=found.ratio, ratio_ci_low=found.ratio_ci_low,
                          ratio_ci_high=found.ratio_ci_high, verdict=found.verdict, verdict_text=found.verdict_text)
        out.append(row)
    return out


def _printed_tps(group: LevelSummary) -> float | None:
    """The mean over a group's runs of the TPS the tool printed (repeats.over_repeats'
    "tps"): what each run carried of the rate, the figure capacity.py judges a rate by.
    (Its steady-state mean of the server's seconds is another figure: at 200 TPS offered
    for 10 s, 211.4 against the 207.5 pgbench printed.)"""
    mean = (group.over_repeats.get("tps") or {}).get("mean")
    return float(mean) if isinstance(mean, (int, float)) and not isinstance(mean, bool) else None
