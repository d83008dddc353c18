"""The latency-throughput curve of a capacity search (--slo, docs/capacity.md): per
label, engine, workload and level whose points searched for a capacity at a latency
objective, each offered rate (x) with the throughput it achieved and its latency
percentiles (y), the closed-loop point the search started from, and the capacity the
search found (analysis.summaries' LevelSummary.capacity). The "hockey stick": latency
flat while the server keeps up, then steep once the offered rate passes what it
carries; the achieved throughput follows the offered rate up to the same place.

Each rate is judged as the capacity judged it (stats/capacity.py): its points' own
figures against the objective of the newest run that searched, the throughput each
printed (what an open-loop point achieved). Its percentiles are its summary's (over
repeats: of the merged histograms). Pure: records in, records out.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from dbarena.records import Summarised, JSONObject, LevelSummary
from dbarena.stats import capacity
from dbarena.stats.capacity import Objective


@dataclass(frozen=True)
class CurvePoint:
    """One offered rate of a search: what it achieved (the mean of the throughput its
    runs printed), its latency (its summary's percentiles, and the objective's own
    statistic), whether every run of it met the objective and why (not)."""

    offered: float
    tps: float | None
    latency_p50_ms: float | None
    latency_p95_ms: float | None
    latency_p99_ms: float | None
    latency_ms: float | None  # the objective's statistic (its summary's figure)
    meets: bool
    why: str
    n: int  # its runs (every session's), failed ones included
    point_ids: tuple[int, ...]  # its points, ok ones first (not exported: a view's links)

    def as_json(self) -> JSONObject:
        return {"offered": self.offered, "tps": self.tps, "latency_p50_ms": self.latency_p50_ms,
                "latency_p95_ms": self.latency_p95_ms, "latency_p99_ms": self.latency_p99_ms,
                "latency_ms": self.latency_ms, "meets": self.meets, "why": self.why, "n": self.n}


@dataclass(frozen=True)
class ClosedLoop:
    """The closed-loop point of a search (its clients as fast as the server answers):
    its throughput (the mean of what its runs printed, as the rates' is) and latency."""

    tps: float | None
    latency_p50_ms: float | None
    latency_p95_ms: float | None
    latency_p99_ms: float | None
    latency_ms: float | None
    point_ids: tuple[int, ...]

    def as_json(self) -> JSONObject:
        return {"tps": self.tps, "latency_p50_ms": self.latency_p50_ms, "latency_p95_ms": self.latency_p95_ms,
                "latency_p99_ms": self.latency_p99_ms, "latency_ms": self.latency_ms}


@dataclass(frozen=True)
class Curve:
    """A search's curve: its series (as the report names it), level, objective (its
    text, statistic and limit), its rates in ascending order, its closed-loop point and
    its capacity (Capacity.as_json: {slo, tps, ci_low, ci_high, met_by, failed_at,
    sessions, reason}; None where no closed-loop group of the search was found)."""

    label: str
    engine: str
    workload: str
    threads: int
    slo: str
    statistic: str  # a key of capacity.STATISTICS
    limit_ms: float
    points: tuple[CurvePoint, ...]
    closed: ClosedLoop | None
    capacity: JSONObject | None

    @property
    def capacity_tps(self) -> float | None:
        tps = (self.capacity or {}).get("tps")
        return float(tps) if isinstance(tps, (int, float)) and not isinstance(tps, bool) else None

    def bracket(self) -> tuple[float | None, float | None]:
        """The capacity's bracket: the rate that met the objective (met_by), the one that
        missed it above (failed_at); None where there is none."""
        found = self.capacity or {}
        met, failed = found.get("met_by"), found.get("failed_at")
        return (float(met) if isinstance(met, (int, float)) else None,
                float(failed) if isinstance(failed, (int, float)) else None)

    def closed_tip(self) -> str | None:
        """What the closed-loop point's star says when pointed at, in every chart that
        draws it (static and interactive); None without one."""
        closed = self.closed
        if closed is None or closed.tps is None:
            return None
        p99 = "-" if closed.latency_p99_ms is None else f"{closed.latency_p99_ms:,.3g}"
        return (f"{self.label}, {self.threads} threads: closed loop (no offered rate: each client as fast as the "
                f"server answers) {closed.tps:,.0f} TPS, p99 {p99} ms (from each transaction's actual start: no "
                "queue counted)")

    def as_json(self) -> JSONObject:
        return {"label": self.label, "engine": self.engine, "workload": self.workload, "threads": self.threads,
                "slo": self.slo, "statistic": self.statistic, "limit_ms": self.limit_ms,
                "points": [p.as_json() for p in self.points],
                "closed": self.closed.as_json() if self.closed is not None else None,
                "capacity": self.capacity}


def _mean(values: Iterable[float | None]) -> float | None:
    found = [v for v in values if v is not None]
    return statistics.fmean(found) if found else None


def _ids(members: Sequence[Summarised]) -> tuple[int, ...]:
    return tuple(m.point_id for m in sorted(members, key=lambda m: (m.status != "ok", m.repeat, m.point_id)))


def _statistic(summary: LevelSummary, objective: Objective) -> float | None:
    found = getattr(summary, capacity.STATISTICS[objective.statistic])
    return float(found) if isinstance(found, (int, float)) else None


def _rate(objective: Objective, summary: LevelSummary, members: Sequence[Summarised]) -> CurvePoint | None:
    measured = [m for m in members if m.phase == "measured" and m.target_tps is not None]
    if not measured or summary.target_tps is None:
        return None
    judged = [capacity.judge(objective, m.target_tps, capacity.of_point(m)) for m in measured
              if m.target_tps is not None]
    meets = capacity.rate_meets(judged)
    why = next((j.why for j in judged if not j.meets), judged[0].why)
    return CurvePoint(offered=summary.target_tps, tps=_mean(j.achieved for j in judged),
                      latency_p50_ms=summary.latency_p50_ms, latency_p95_ms=summary.latency_p95_ms,
                      latency_p99_ms=summary.latency_p99_ms, latency_ms=_statistic(summary, objective),
                      meets=meets, why=why, n=len(measured), point_ids=_ids(measured))


def _closed(objective: Objective, summary: LevelSummary, members: Sequence[Summarised]) -> ClosedLoop:
    ok = [m for m in members if m.status == "ok"]
    return ClosedLoop(tps=_mean(m.tps for m in ok), latency_p50_ms=summary.latency_p50_ms,
                      latency_p95_ms=summary.latency_p95_ms, latency_p99_ms=summary.latency_p99_ms,
                      latency_ms=_statistic(summary, objective), point_ids=_ids(members))


def curves(rows: Sequence[Summarised], summaries: Sequence[LevelSummary]) -> list[Curve]:
    """Every search's curve among the rows (analysis.load points, under the names the
    report gives their series), from their summaries (analysis.summaries of the same
    rows): one per label and closed-loop configuration whose open-loop points were
    searched under an objective, in the rows' order."""
    members: dict[tuple[str, str], list[Summarised]] = defaultdict(list)
    for r in rows:
        members[(r.label, r.config_key or f"point {r.point_id}")].append(r)
    # (label, search key) -> its closed-loop summary, and its open-loop ones
    closed: dict[tuple[str, str], LevelSummary] = {}
    opened: dict[tuple[str, str], list[LevelSummary]] = defaultdict(list)
    for s in summaries:
        if s.config is None:
            continue
        key = (s.label, capacity.search_key(s.config))
        if s.target_tps is None:
            closed[key] = s
        else:
            opened[key].append(s)
    out = []
    for key, steps in opened.items():
        points = [m for s in steps for m in members[(s.label, s.config_key)]]
        searched = [m for m in points if m.slo is not None]
        objective = Objective.from_json(max(searched, key=lambda m: m.run_id).slo) if searched else None
        if objective is None:
            continue  # rates offered by hand (a tool option), not a search: no objective to draw
        rates = [p for s in steps if (p := _rate(objective, s, members[(s.label, s.config_key)])) is not None]
        if not rates:
            continue
        base = closed.get(key)
        first = steps[0]
        out.append(Curve(
            label=first.label, engine=first.engine, workload=first.workload, threads=first.threads,
            slo=objective.text, statistic=objective.statistic, limit_ms=objective.limit_ms,
            points=tuple(sorted(rates, key=lambda p: p.offered)),
            closed=_closed(objective, base, members[(base.label, base.config_key)]) if base is not None else None,
            capacity=base.capacity if base is not None else None))
    return out
