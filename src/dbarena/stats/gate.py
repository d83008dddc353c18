"""A regression gate: does a candidate (a run, or a label's runs) make any point that it
and the baseline both measured slower by more than a threshold?

Each side's points are pooled per configuration key as everywhere (analysis.summaries) and
compared level by level as `compare` does (analysis.compare: Welch's t over independent
runs, the ratio's interval by the delta method; estimators.compare), then gathered into
one figure per workload (decision.decide) for the summary. The comparison is about what a
continuous benchmark changes between its runs: the machine, the server's version and its
settings (configkey.ABOUT "host", "server", "settings") may differ; a level whose workload,
dataset, duration or tool options differ is not comparable, and said so.

A point fails when it is significantly slower (p < 0.05) and its estimated slowdown, in
speed (throughput; for mysqlslap 1 / seconds), is more than the threshold. A point with
fewer than MIN_REPEATS runs on a side has no verdict and is listed as such: it neither
passes nor fails. The gate's exit status: 1 when a point fails, else 0; with nothing to
judge (no comparable level, or none with a verdict) the input cannot be gated (a
UsageError: exit 2).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dbarena.errors import UsageError
from dbarena.interfaces import ResultStore
from dbarena.stats import analysis, decision, metric
from dbarena.stats.estimators import MIN_REPEATS

FAIL, PASS, NO_VERDICT, NOT_COMPARABLE, MISSING = "fail", "pass", "no verdict", "not comparable", "not measured"
ABOUT = ("server", "settings")  # besides the host, which a comparison of two labels ignores anyway


@dataclass(frozen=True)
class Side:
    """One side of the gate: its name as shown, and its points (analysis.load rows)."""

    name: str
    what: str  # "run 7" or "label 'nightly' (runs 3-9)"
    points: list[dict[str, Any]]


@dataclass(frozen=True)
class Level:
    engine: str
    workload: str
    threads: int
    metric: str
    baseline: float | None
    candidate: float | None
    baseline_n: int
    candidate_n: int
    speed_change_pct: float | None  # candidate against baseline in speed: + is faster
    ci_low_pct: float | None
    ci_high_pct: float | None
    p_value: float | None
    status: str  # FAIL, PASS, NO_VERDICT, NOT_COMPARABLE, MISSING
    text: str

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class Gate:
    baseline: Side
    candidate: Side
    max_regression: float  # 0.05 = 5 %
    levels: tuple[Level, ...]
    decisions: tuple[decision.Decision, ...]

    @property
    def failed(self) -> tuple[Level, ...]:
        return tuple(lv for lv in self.levels if lv.status == FAIL)

    @property
    def unjudged(self) -> tuple[Level, ...]:
        return tuple(lv for lv in self.levels if lv.status not in (FAIL, PASS))

    @property
    def exit_status(self) -> int:
        return 1 if self.failed else 0

    def as_dict(self) -> dict[str, Any]:
        return {"baseline": self.baseline.what, "candidate": self.candidate.what,
                "max_regression_pct": self.max_regression * 100, "passed": not self.failed,
                "levels": [lv.as_dict() for lv in self.levels], "decisions": [d.as_dict() for d in self.decisions]}


def parse_threshold(text: str) -> float:
    """'5%', '5' or '0.05' -> 0.05 (a bare number above 1 is taken as percent)."""
    raw = text.strip().removesuffix("%").strip()
    try:
        value = float(raw)
    except ValueError:
        raise UsageError(f"--max-regression {text!r}: expected a percentage such as 5%") from None
    share = value / 100 if text.strip().endswith("%") or value > 1 else value
    if not 0 <= share < 1:
        raise UsageError(f"--max-regression {text!r}: expected a percentage from 0 % to below 100 %")
    return share


def side(store: ResultStore, spec: str) -> Side:
    """A RUN id or a LABEL of the store, and its points; a UsageError naming what the
    store holds if it is neither."""
    runs = store.runs()
    if not runs:
        raise UsageError(f"no points stored yet in {store.location}")
    if spec.isdigit() and any(r["id"] == int(spec) for r in runs):
        rows = analysis.load(store, run_id=int(spec))
        return Side(f"run {spec}", f"run {spec} (label {rows[0]['label']!r})" if rows else f"run {spec}", rows)
    labels = list(dict.fromkeys(r["label"] for r in runs))
    if spec in labels:
        ids = sorted(r["id"] for r in runs if r["label"] == spec)
        shown = ", ".join(map(str, ids)) if len(ids) <= 6 else f"{ids[0]} to {ids[-1]}"
        return Side(spec, f"label {spec!r} (run{'s' if len(ids) > 1 else ''} {shown})",
                    analysis.load(store, labels=(spec,)))
    raise UsageError(f"{spec!r} is neither a run nor a label in the store; labels: {', '.join(labels)}; runs: "
                     f"{runs[0]['id']} to {runs[-1]['id']}")


def _speed(ratio: float | None, judged_by: str) -> float | None:
    if ratio is None or ratio <= 0:
        return None
    return 1 / ratio if metric.lower_is_better(judged_by) else ratio


def _level(row: dict[str, Any], threshold: float) -> Level:
    judged_by = row["metric"]
    speed = _speed(row.get("ratio"), judged_by)
    ends = sorted(e for e in (_speed(row.get("ratio_ci_low"), judged_by), _speed(row.get("ratio_ci_high"),
                                                                                  judged_by)) if e is not None)
    low, high = (ends[0], ends[1]) if len(ends) == 2 else (None, None)
    change = (speed - 1) * 100 if speed is not None else None
    if row.get("differs"):
        status, text = NOT_COMPARABLE, row["reason"]
    elif row.get("verdict") is None:
        status = NO_VERDICT
        fewest = min(int(row.get("a_n") or 0), int(row.get("b_n") or 0))
        text = (f"{fewest} run(s) on a side, {MIN_REPEATS} needed (baseline {row['a_n']}, candidate {row['b_n']}): "
                f"run both with --repeat {MIN_REPEATS}") if fewest < MIN_REPEATS else \
            (row.get("reason") or "no verdict").removeprefix("no verdict: ")
    elif row["verdict"] == "slower" and change is not None and change < -threshold * 100:
        status, text = FAIL, f"{abs(change):.1f} % slower, more than {threshold:.0%} (p = {row['p_value']:.3g})"
    else:
        status = PASS
        text = {"slower": f"{abs(change or 0):.1f} % slower, within {threshold:.0%} (p = {row['p_value']:.3g})",
                "faster": f"{abs(change or 0):.1f} % faster (p = {row['p_value']:.3g})"}.get(
            row["verdict"], f"no significant difference ({change:+.1f} %, p = {row['p_value']:.2f})")
    return Level(engine=row["engine"], workload=row["workload"], threads=int(row["threads"]), metric=judged_by,
                 baseline=row.get("a_mean"), candidate=row.get("b_mean"), baseline_n=int(row.get("a_n") or 0),
                 candidate_n=int(row.get("b_n") or 0), speed_change_pct=change,
                 ci_low_pct=(low - 1) * 100 if low is not None else None,
                 ci_high_pct=(high - 1) * 100 if high is not None else None, p_value=row.get("p_value"),
                 status=status, text=text)


def gate(baseline: Side, candidate: Side, max_regression: float) -> Gate:
    """The gate of the candidate against the baseline (see the module's docstring)."""
    if baseline.name == candidate.name:
        raise UsageError(f"--baseline and --candidate are both {baseline.what}")
    overlap = {p["point_id"] for p in baseline.points} & {p["point_id"] for p in candidate.points}
    if overlap:
        raise UsageError(f"{baseline.what} and {candidate.what} share {len(overlap)} point(s): give two runs, two "
                         "labels, or a label and a run of another label")
    for each in (baseline, candidate):
        if not each.points:
            raise UsageError(f"{each.what} holds no measured point")
    # Each side as a label of its own, so that two runs of one label compare like two labels.
    rows = [{**p, "label": baseline.name} for p in baseline.points] + \
           [{**p, "label": candidate.name} for p in candidate.points]
    compared = analysis.compare(rows, baseline.name, candidate.name, about=ABOUT)
    levels = [_level(r, max_regression) for r in compared]
    seen = {(lv.engine, lv.workload, lv.threads) for lv in levels}
    for s in analysis.summaries(r for r in rows if r["label"] == baseline.name):
        if (s["engine"], s["workload"], s["threads"]) not in seen:
            seen.add((s["engine"], s["workload"], s["threads"]))
            levels.append(Level(s["engine"], s["workload"], int(s["threads"]), s["metric"], s["mean"], None, s["n"],
                                0, None, None, None, None, MISSING, f"not measured by {candidate.what}"))
    if not any(lv.status in (PASS, FAIL) for lv in levels):
        reasons = "; ".join(sorted({f"{lv.workload} at {lv.threads}: {lv.text}" for lv in levels})[:3]) or \
            "they share no engine, workload and level"
        raise UsageError(f"nothing to gate: no point of {candidate.what} has a verdict against {baseline.what} "
                         f"({reasons})")
    return Gate(baseline, candidate, max_regression,
                tuple(sorted(levels, key=lambda lv: (lv.engine, lv.workload, lv.threads))),
                tuple(decision.decide(compared)))
