"""The same point over time: each series of runs of one host label, workload, level and
dataset, its run-to-run values with their intervals, where its level changed (change
points) and what else changed there (the environment diff between the runs on both sides).

A series is what stays the same (label, engine, workload, threads, clients, the tool's
dataset parameters, the variant); whatever else differs from run to run (server and tool
versions, the kernel, the server's settings, the duration, the machine) is the run's
environment, which is what a change point is explained by.

Change points are found by Apache Otava (Fleming et al., "Hunter: Using Change Point
Detection to Hunt for Performance Regressions", ICPE 2023): e-divisive candidates in
sliding windows, kept where Student's t between the segments on both sides has
p < MAX_PVALUE. Chosen over MongoDB's e-divisive by bench/changepoints (docs/history.md).
Each change point's size and 95 % interval are then dbarena's own (estimators.compare,
Welch over the runs of both segments, in the metric's direction): the interval of a
change point the detector chose is optimistic (the split maximises the difference), so
it says how large, not whether.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from dataclasses import dataclass, field, replace
from typing import Callable, Iterable, Sequence

from dbarena.errors import ToolMissing, UsageError
from dbarena.limits import listed, quoted
from dbarena.interfaces import ResultStore
from dbarena.records import JSONObject, StoredRun, Summarised
from dbarena.stats import analysis, atrate, environment, metric
from dbarena.stats import estimators as stats

# Otava's significance for a change point (its own default): on histories simulated with
# this machine's noise it raised 0.06 to 0.09 false alarms per 100 runs (bench/changepoints).
MAX_PVALUE = 0.001
# Otava's sliding window (runs): its default; longer histories are split in windows of it.
WINDOW = 50
# A change point needs this many runs with a figure in its series, at least 2 a side.
MIN_RUNS = 4
# How far from the change point an environment change may lie and still be named (the
# detector places a step within a run or two of the truth when noise is high).
NEAR = 2

SERIES_FIELDS = ("engine", "workload", "threads", "clients", "params", "variant")
@dataclass(frozen=True)
class RunValue:
    """One run's figure in a series: the mean over its repeats there, with a 95 % interval
    (over the repeats; of one repeat, that run's own batch-means interval)."""

    run_id: int
    started_at: str
    n: int
    failed: int
    mean: float | None
    ci_low: float | None
    ci_high: float | None
    interval: str | None  # "between runs", "within one run" or None
    environment: environment.Environment

    def as_dict(self) -> JSONObject:
        return {"run": self.run_id, "started_at": self.started_at, "n": self.n, "failed": self.failed,
                "mean": self.mean, "ci_low": self.ci_low, "ci_high": self.ci_high, "interval": self.interval,
                "environment": dict(self.environment.facts)}


@dataclass(frozen=True)
class Cause:
    """One fact of the environment that changed between two consecutive runs."""

    fact: str
    before: str | None
    after: str | None
    run_id: int  # the first run with the new value

    def text(self) -> str:
        return f"{self.fact} {self.before if self.before is not None else '-'} -> " \
               f"{self.after if self.after is not None else '-'}"


@dataclass(frozen=True)
class ChangePoint:
    index: int  # position in the series' runs of the first run after the change
    run_id: int
    started_at: str
    runs_before: int  # runs in the segment before (since the previous change point)
    runs_after: int
    mean_before: float
    mean_after: float
    change_pct: float  # of the metric (seconds for mysqlslap): after / before - 1
    ci_low_pct: float | None
    ci_high_pct: float | None
    p_value: float | None  # Otava's t test between the two segments
    text: str  # "12.3 % slower (95 % CI ...)", in the metric's direction
    causes: tuple[Cause, ...] = ()

    def as_dict(self) -> JSONObject:
        return {"index": self.index, "run": self.run_id, "started_at": self.started_at,
                "runs_before": self.runs_before, "runs_after": self.runs_after, "mean_before": self.mean_before,
                "mean_after": self.mean_after, "change_pct": self.change_pct, "ci_low_pct": self.ci_low_pct,
                "ci_high_pct": self.ci_high_pct, "p_value": self.p_value, "text": self.text,
                "causes": [{"fact": c.fact, "before": c.before, "after": c.after, "run": c.run_id}
                           for c in self.causes]}

    def summary(self) -> str:
        """'-18.0 % at run 7: setting synchronous_commit off -> on; server version 17.2 -> 17.4'."""
        causes = "; ".join(c.text() + (f" (at run {c.run_id})" if c.run_id != self.run_id else "")
                           for c in self.causes) or "no recorded fact changed here"
        return f"{self.change_pct:+.1f} % at run {self.run_id}: {causes}"


@dataclass(frozen=True)
class Series:
    label: str
    engine: str
    workload: str
    threads: int
    clients: int
    dataset: JSONObject  # the tool's dataset parameters, as the configuration key holds them
    variant: str
    metric: str
    runs: tuple[RunValue, ...]
    change_points: tuple[ChangePoint, ...] = ()
    note: str | None = None  # why no change point was looked for
    # The rate its points were offered (--rate): each run's figure is then its p95
    # latency there (metric.P95, stats/atrate.py); None: closed-loop throughput.
    offered_tps: float | None = None

    @property
    def name(self) -> str:
        dataset = ", ".join(f"{k} {v}" for k, v in self.dataset.items())
        variant = f" [{self.variant}]" if self.variant else ""
        rate = f" at {metric.rate_shown(self.offered_tps)} TPS offered" if self.offered_tps is not None else ""
        return (f"{self.label} {self.engine} {self.workload}{variant} at {self.threads} thread(s){rate}"
                + (f", {dataset}" if dataset else ""))

    def as_dict(self) -> JSONObject:
        return {"label": self.label, "engine": self.engine, "workload": self.workload, "threads": self.threads,
                "clients": self.clients, "dataset": dict(self.dataset), "variant": self.variant,
                "metric": self.metric, "lower_is_better": metric.lower_is_better(self.metric),
                "runs": [r.as_dict() for r in self.runs],
                "change_points": [c.as_dict() for c in self.change_points], "note": self.note,
                **({"offered_tps": self.offered_tps} if self.offered_tps is not None else {})}


def _diff(before: environment.Environment, after: environment.Environment, run_id: int) -> list[Cause]:
    return [Cause(c.fact, c.before, c.after, run_id) for c in environment.changes(before, after)]


def causes(runs: Sequence[RunValue], index: int) -> tuple[Cause, ...]:
    """The facts that changed where runs[index] begins a new segment; if none changed
    right there, those that changed within NEAR runs of it (the nearest first)."""
    here = _diff(runs[index - 1].environment, runs[index].environment, runs[index].run_id)
    if here:
        return tuple(here)
    for distance in range(1, NEAR + 1):
        for i in (index - distance, index + distance):
            if 1 <= i < len(runs):
                near = _diff(runs[i - 1].environment, runs[i].environment, runs[i].run_id)
                if near:
                    return tuple(near)
    return ()


def detect(values: Sequence[float]) -> list[tuple[int, float]]:
    """(index, p-value) of each change point in a series of run figures, by Otava, on the
    log scale: run-to-run noise is a share of the level (the same CV at 80 TPS as at 1600),
    so the logs have the same spread on both sides of a step, as Otava's Student's t
    assumes; on the raw scale a 20-fold drop shrinks one side's spread 20-fold, and a step
    from 600 +- 250 to 69 +- 1 over 4 + 4 runs came out at p = 0.008, not found."""
    if len(values) < MIN_RUNS:
        return []
    try:
        from otava.analysis import compute_change_points  # about 0.5 s to import: only here
    except ImportError:
        raise ToolMissing("change points need Apache Otava, an optional part of dbarena: "
                          "pip install 'dbarena[history]' (make demo and make test install it)") from None

    series = [math.log(v) for v in values] if all(v > 0 for v in values) else list(values)
    found, _ = compute_change_points(series, window_len=WINDOW, max_pvalue=MAX_PVALUE)
    return [(int(c.index), float(c.stats.pvalue)) for c in found if 2 <= c.index <= len(values) - 2]


def _change_point(runs: Sequence[RunValue], index: int, start: int, end: int, p_value: float,
                  judged_by: str) -> ChangePoint:
    before = [r.mean for r in runs[start:index] if r.mean is not None]
    after = [r.mean for r in runs[index:end] if r.mean is not None]
    a, b = stats.repeats(before), stats.repeats(after)
    assert a is not None and b is not None  # segments hold runs with a figure
    c = stats.compare(a, b, min_repeats=2, of=judged_by)
    change = (c.ratio - 1) * 100
    low = (c.ci_low - 1) * 100 if c.ci_low is not None else None
    high = (c.ci_high - 1) * 100 if c.ci_high is not None else None
    interval = f" (95 % CI {low:+.1f} % to {high:+.1f} %)" if low is not None and high is not None else ""
    return ChangePoint(index=index, run_id=runs[index].run_id, started_at=runs[index].started_at,
                       runs_before=len(before), runs_after=len(after), mean_before=a.mean, mean_after=b.mean,
                       change_pct=change, ci_low_pct=low, ci_high_pct=high, p_value=p_value,
                       text=metric.change_words(change, judged_by) + interval, causes=causes(runs, index))


def _run_value(run: StoredRun, points: Sequence[Summarised], at_rate: bool = False) -> RunValue:
    """A run's figure over its points: their throughput, or (`at_rate`: points offered a
    fixed rate) their p95 latency there, which no interval within one run is of."""
    figure: Callable[[Summarised], float | None] = atrate.p95_of if at_rate else analysis.value
    ok = [p for p in points if figure(p) is not None]
    values = [v for p in ok if (v := figure(p)) is not None]
    low, high = (ok[0].tps_ci_low, ok[0].tps_ci_high) if len(ok) == 1 and not at_rate else (None, None)
    within = (low, high) if low is not None and high is not None else None
    summary = stats.summarize(values, failed=len(points) - len(ok), within_run=within,
                              adaptive=any(p.adaptive for p in ok))
    interval = None if summary.ci_low is None else "within one run" if summary.within_run else "between runs"
    return RunValue(run_id=run.id, started_at=run.started_at, n=summary.n,
                    failed=summary.failed, mean=summary.mean, ci_low=summary.ci_low, ci_high=summary.ci_high,
                    interval=interval, environment=environment.of_run(run, points[0].config or {}))


SeriesKey = tuple[str, str, str, int, int, str, str, float | None]


def series_key(point: Summarised) -> SeriesKey:
    config = point.config or {}
    dataset = config.get("params") if config.get("params") is not None else point.params or {}
    return (point.label, point.engine, point.workload, point.threads, point.clients,
            json.dumps(dataset, sort_keys=True), point.variant or "", point.target_tps)


def build(points: Iterable[Summarised], runs: Iterable[StoredRun]) -> list[Series]:
    """Every series in these points (analysis.load or stored_points rows) with the runs they came from
    (store.runs()), oldest run first, with its change points."""
    by_id = {r.id: r for r in runs}
    grouped: dict[SeriesKey, dict[int, list[Summarised]]] = defaultdict(lambda: defaultdict(list))
    for p in points:
        if p.target_tps is not None and not atrate.fixed(p):
            continue  # an offered rate of --slo's search: a step, not the run's figure at its level
        grouped[series_key(p)][p.run_id].append(p)
    out = []
    for key, of_run in grouped.items():
        label, engine, workload, threads, clients, dataset, variant, rate = key
        ordered = sorted(of_run, key=lambda rid: (by_id[rid].started_at, rid))
        values = tuple(_run_value(by_id[rid], of_run[rid], at_rate=rate is not None) for rid in ordered)
        judged_by = metric.P95 if rate is not None else \
            next((p.metric for pts in of_run.values() for p in pts if p.metric), metric.TPS)
        out.append(_with_change_points(Series(
            label=label, engine=engine, workload=workload, threads=int(threads), clients=int(clients or 0),
            dataset=json.loads(dataset), variant=variant, metric=judged_by, runs=values, offered_tps=rate)))
    return sorted(out, key=lambda s: (s.label, s.engine, s.workload, s.variant, s.threads, s.clients,
                                      json.dumps(dict(s.dataset), sort_keys=True), s.offered_tps or 0.0))


def _with_change_points(series: Series) -> Series:
    measured = [r for r in series.runs if r.mean is not None]
    if len(measured) < MIN_RUNS:
        return replace(series, note=f"{len(measured)} run(s) with a figure: change points need {MIN_RUNS}")
    found = detect([r.mean for r in measured if r.mean is not None])
    bounds = [0, *(i for i, _ in found), len(measured)]
    points = tuple(_change_point(measured, index, bounds[k], bounds[k + 2], p, series.metric)
                   for k, (index, p) in enumerate(found))
    return replace(series, change_points=points)


@dataclass(frozen=True)
class Filter:
    """Which series `history` shows: all, or those of a label, workload, level."""

    labels: tuple[str, ...] = ()
    workloads: tuple[str, ...] = ()
    threads: tuple[int, ...] = ()
    min_runs: int = 1

    def keep(self, s: Series) -> bool:
        return ((not self.workloads or s.workload in self.workloads)
                and (not self.threads or s.threads in self.threads) and len(s.runs) >= self.min_runs)


@dataclass(frozen=True)
class History:
    series: tuple[Series, ...] = field(default_factory=tuple)

    def as_dict(self) -> JSONObject:
        return {"series": [s.as_dict() for s in self.series]}


def of_store(store: ResultStore, selection: Filter = Filter()) -> History:
    """The history of a store (interfaces.ResultStore), filtered. A label or workload the
    store does not hold is a UsageError naming what it holds (analysis.check_names)."""
    if not analysis.check_names(store, labels=selection.labels):
        return History()
    # (What the store's summaries of the sessions hold of the points: a run's figure at a
    # level is made of its points' figures, which those rows keep, not of their rows.)
    rows = analysis.stored_points(store, labels=selection.labels)
    if selection.workloads:
        stored = sorted({r.workload for r in rows})
        for w in selection.workloads:
            if w not in stored:
                raise UsageError(f"no workload {quoted(w)} in the store; stored: {listed(stored)}")
    wanted = [r for r in rows if (not selection.workloads or r.workload in selection.workloads)
              and (not selection.threads or r.threads in selection.threads)]
    return History(tuple(s for s in build(wanted, store.runs_by_id({r.run_id for r in wanted}).values())
                         if selection.keep(s)))
