"""A regression gate: does a candidate (a run, or a label's runs) make any workload that it
and the baseline both measured slower by more than a threshold?

Each side's points are pooled per configuration key as everywhere (analysis.summaries),
compared level by level as `compare` does (analysis.compare, estimators.compare over
independent runs), and judged per engine and workload as `compare` and the report judge
them (decision.decide: the geometric mean of the levels' ratios in speed, so + is faster
for mysqlslap's seconds too, with its interval and p-value on the log scale). The
comparison is about what a continuous benchmark changes between its runs: the machine,
the server's version and its settings (configkey.ABOUT "host", "server", "settings") may
differ; a level whose workload, dataset, duration or tool options differ is not
comparable, and listed as such.

A workload fails when it is significantly slower (p < 0.05) and its estimated slowdown is
more than the threshold. It passes when the 95 % interval of its change excludes a
slowdown beyond the threshold (its lower end is above -threshold). Otherwise it is
inconclusive: the interval reaches past the threshold, so the data can tell neither a
regression beyond it nor its absence (a noisy machine, too few sessions); "no difference"
with an interval of -41.6 % .. +63.7 % is not a pass of a 5 % gate. So is one without an
interval: a side of one session whose spread between sessions neither its label's other
runs of the same configuration nor the other side tell (stats/sessions.py). The gate's exit
status: 1 when a workload fails, else 3 when one is inconclusive, else 0; with nothing to
judge (no comparable level, or none with a verdict) the input cannot be gated (a
UsageError: exit 2).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields, replace

from dbarena.errors import UsageError
from dbarena.limits import listed, quoted
from dbarena.interfaces import ResultStore
from dbarena.records import AnalysedPoint, JSONObject, LentSession, LevelComparison
from dbarena.stats import analysis, decision, metric

FAIL, PASS, INCONCLUSIVE, NO_VERDICT, NOT_COMPARABLE, MISSING = \
    "fail", "pass", "inconclusive", "no verdict", "not comparable", "not measured"
JUDGED = (FAIL, INCONCLUSIVE, PASS)
# Exit statuses: 2 is every command's bad input.
EXIT_PASS, EXIT_FAIL, EXIT_INCONCLUSIVE = 0, 1, 3
ABOUT = ("server", "settings")  # besides the host, which a comparison of two labels ignores anyway


@dataclass(frozen=True)
class Side:
    """One side of the gate: its name as shown, and its points (analysis.load rows)."""

    name: str
    what: str  # "run 7" or "label 'nightly' (runs 3-9)"
    points: list[AnalysedPoint]
    spec: str | None = None  # as given: a run id or a label (what `dbarena bisect --from-gate` reads back)


@dataclass(frozen=True)
class Item:
    """One engine and workload of the gate (decision.decide's figure over the levels both
    sides measured alike), or one level that could not be counted (not comparable, or
    not measured by the candidate)."""

    engine: str
    workload: str
    metric: str | None
    levels: str  # each level: "1: 1,235.0 (3) -> 60.1 (3)", threads: baseline (runs) -> candidate (runs)
    speed_change_pct: float | None  # candidate against baseline in speed: + is faster
    ci_low_pct: float | None
    ci_high_pct: float | None
    p_value: float | None
    status: str  # FAIL, INCONCLUSIVE, PASS, NO_VERDICT, NOT_COMPARABLE, MISSING
    text: str

    def as_dict(self) -> JSONObject:
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass(frozen=True)
class Gate:
    baseline: Side
    candidate: Side
    max_regression: float  # 0.05 = 5 %
    items: tuple[Item, ...]

    @property
    def failed(self) -> tuple[Item, ...]:
        return tuple(i for i in self.items if i.status == FAIL)

    @property
    def inconclusive(self) -> tuple[Item, ...]:
        return tuple(i for i in self.items if i.status == INCONCLUSIVE)

    @property
    def judged(self) -> tuple[Item, ...]:
        return tuple(i for i in self.items if i.status in JUDGED)

    @property
    def unjudged(self) -> tuple[Item, ...]:
        return tuple(i for i in self.items if i.status not in JUDGED)

    @property
    def status(self) -> str:
        return FAIL if self.failed else INCONCLUSIVE if self.inconclusive else PASS

    @property
    def exit_status(self) -> int:
        return {FAIL: EXIT_FAIL, INCONCLUSIVE: EXIT_INCONCLUSIVE}.get(self.status, EXIT_PASS)

    def as_dict(self) -> JSONObject:
        return {"baseline": self.baseline.what, "candidate": self.candidate.what,
                "baseline_spec": self.baseline.spec, "candidate_spec": self.candidate.spec,
                "max_regression_pct": self.max_regression * 100, "status": self.status,
                "passed": self.status == PASS, "items": [i.as_dict() for i in self.items]}


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
    if spec.isdigit() and any(r.id == int(spec) for r in runs):
        rows = analysis.load(store, run_id=int(spec))
        return Side(f"run {spec}", f"run {spec} (label {rows[0].label!r})" if rows else f"run {spec}", rows, spec)
    labels = list(dict.fromkeys(r.label for r in runs))
    if spec in labels:
        ids = sorted(r.id for r in runs if r.label == spec)
        shown = ", ".join(map(str, ids)) if len(ids) <= 6 else f"{ids[0]} to {ids[-1]}"
        return Side(spec, f"label {spec!r} (run{'s' if len(ids) > 1 else ''} {shown})",
                    analysis.load(store, labels=(spec,)), spec)
    raise UsageError(f"{quoted(spec)} is neither a run nor a label in the store; labels: {listed(labels)}; runs: "
                     f"{runs[0].id} to {runs[-1].id}")


def side_of_runs(store: ResultStore, name: str, what: str, run_ids: list[int]) -> Side:
    """A side made of several runs (a run and the runs `gate --confirm` measured again
    for it)."""
    return Side(name, what, [p for run_id in run_ids for p in analysis.load(store, run_id=run_id)])


def _levels(rows: list[LevelComparison]) -> str:
    return "; ".join(f"{r.threads}: {metric.shown(r.a_mean, r.metric)} ({r.a_n}) -> "
                     f"{metric.shown(r.b_mean, r.metric)} ({r.b_n})"
                     for r in sorted(rows, key=lambda r: r.threads))


def _item(d: decision.Decision, rows: list[LevelComparison], threshold: float) -> Item:
    """A workload's decision as the gate's verdict. Its ratio and interval are of speed
    already (decision.py: 1 / seconds for mysqlslap), on the log scale where its p-value is."""
    change = d.change_pct
    low = (d.ci_low - 1) * 100 if d.ci_low is not None else None
    high = (d.ci_high - 1) * 100 if d.ci_high is not None else None
    if d.verdict == decision.NOT_COMPARABLE:
        status = NOT_COMPARABLE
    elif d.verdict == decision.NO_VERDICT:
        # A workload's figure without an interval: a side's spread between sessions is
        # unknown (stats/sessions.py). It may hide a regression: inconclusive, with why.
        status = INCONCLUSIVE
    elif d.verdict == decision.SLOWER and change is not None and change < -threshold * 100:
        status = FAIL
    elif d.verdict == decision.FASTER or (low is not None and low >= -threshold * 100):
        status = PASS
    else:
        status = INCONCLUSIVE
    beyond = {FAIL: f"; more than {threshold:.0%}",
              PASS: f"; within {threshold:.0%}" if d.verdict != decision.FASTER else "",
              INCONCLUSIVE: "" if d.verdict == decision.NO_VERDICT else
              f"; inconclusive: the interval reaches below -{threshold:.0%}, so a slowdown beyond "
              f"{threshold:.0%} is neither shown nor ruled out (more sessions narrow it)"}.get(status, "")
    return Item(engine=d.engine or "", workload=d.workload or "", metric=d.metric, levels=_levels(rows),
                speed_change_pct=change, ci_low_pct=low, ci_high_pct=high, p_value=d.p_value, status=status,
                text=d.text + beyond)


def history(store: ResultStore, *sides: Side) -> list[AnalysedPoint]:
    """The store's other runs (of any label, as `compare` and serve's /diff read them):
    what tells the spread between sessions of the sides' configurations where a side is
    one run (stats/sessions.py: only groups of the same configuration key lend), never
    compared."""
    taken = {p.point_id for s in sides for p in s.points}
    return [p for p in analysis.load(store) if p.point_id not in taken] if taken else []


@dataclass(frozen=True)
class Lenders:
    """What lends the sides of a gate their spread between sessions (gate's `history`
    and `lent`): the session summaries of the store's other runs, or (where such a run's
    label is named as a side is, and its points would join that side's groups) their points."""

    history: list[AnalysedPoint]
    lent: list[LentSession]


def lenders(store: ResultStore, *sides: Side) -> Lenders:
    """The store's other runs as `history` gives them, from the store's session
    summaries of them (analysis.lent_sessions) rather than their points: every label's,
    as `compare` and /diff lend (a label of another name that measured the same
    configuration on the same machine varies between sessions as the sides do)."""
    labels = tuple(dict.fromkeys(r.label for r in store.runs()))
    taken = {p.run_id for s in sides for p in s.points}  # (a side is whole runs)
    lent = [one for one in analysis.lent_sessions(store, labels) if one.run_id not in taken]
    if any(one.label in {s.name for s in sides} for one in lent):
        return Lenders(history(store, *sides), [])
    return Lenders([], lent)


def as_labels(*sides: tuple[str, Sequence[AnalysedPoint]]) -> list[AnalysedPoint]:
    """Each side's points as a label of its own, its name, so that two runs of one label
    compare like two labels (as stored, to the comparison: its series_label, analysis.sides)."""
    return [replace(p, label=name, series_label=name) for name, points in sides for p in points]


def gate(baseline: Side, candidate: Side, max_regression: float, history: Sequence[AnalysedPoint] = (),
         lent: Sequence[LentSession] = ()) -> Gate:
    """The gate of the candidate against the baseline (see the module's docstring);
    `history` (gate.history): the store's other runs, for the spread between
    sessions of a side of one run; or `lent`, what those runs' session summaries lend
    (gate.lenders), the same without their points."""
    if baseline.name == candidate.name:
        raise UsageError(f"--baseline and --candidate are both {baseline.what}")
    overlap = {p.point_id for p in baseline.points} & {p.point_id for p in candidate.points}
    if overlap:
        raise UsageError(f"{baseline.what} and {candidate.what} share {len(overlap)} point(s): give two runs, two "
                         "labels, or a label and a run of another label")
    for each in (baseline, candidate):
        if not each.points:
            raise UsageError(f"{each.what} holds no measured point")
    rows = as_labels((baseline.name, baseline.points), (candidate.name, candidate.points))
    compared = analysis.compare(rows, baseline.name, candidate.name, about=ABOUT, history=history, lent=lent,
                                interleaved=False)
    counted = [r for r in compared if not r.differs]
    items = [_item(d, [r for r in counted if (r.engine, r.workload) == (d.engine, d.workload)], max_regression)
             for d in decision.decide(counted)]
    # Levels that no figure counts, listed rather than dropped.
    items += [Item(r.engine, r.workload, r.metric, _levels([r]), None, None, None, None, NOT_COMPARABLE,
                   r.verdict_text) for r in compared if r.differs]
    seen = {(r.engine, r.workload, r.threads) for r in compared}
    for s in analysis.summaries(r for r in rows if r.label == baseline.name):
        if (s.engine, s.workload, s.threads) not in seen:
            seen.add((s.engine, s.workload, s.threads))
            items.append(Item(s.engine, s.workload, s.metric, f"{s.threads}", None, None, None, None,
                              MISSING, f"not measured by {candidate.what}"))
    if not any(i.status in JUDGED for i in items):
        reasons = "; ".join(sorted({f"{i.workload}: {i.text}" for i in items})[:3]) or \
            "they share no engine, workload and level"
        raise UsageError(f"nothing to gate: no point of {candidate.what} has a verdict against {baseline.what} "
                         f"({reasons})")
    return Gate(baseline, candidate, max_regression, tuple(sorted(items, key=lambda i: (i.engine, i.workload))))
