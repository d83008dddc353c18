"""The decision: each label against the baseline as one figure per engine and workload,
with its uncertainty and a verdict, worst first; then one line per label across
workloads. Pure: comparison rows (analysis.compare) in, decisions out.

One figure per workload is the geometric mean of the per-level throughput ratios
(label / baseline; for mysqlslap, judged by its seconds, of the ratios of 1 / seconds, so
that + is faster everywhere) over the levels both measured with the same configuration: every
level counts alike, whatever its throughput (an arithmetic mean of TPS would let the
busiest level decide). Its interval combines the levels' intervals on the log scale
as if their errors were perfectly correlated (combine): the levels are measured in the
same sessions and share their drift. A workload none of whose levels alone shows a
difference is inconclusive whatever the combination says.

Each level's comparison is over sessions (stats/sessions.py); where a side's spread
between sessions is unknown (one session, no other of its configuration), the figure
is shown without an interval, with the reason and the run that would give one.

Where both sides searched for a capacity at one latency objective (--slo), the levels'
figures are those capacities (analysis.compare's rows with `slo` set): the decision is
of the throughput each carries within the objective, and says so ("beta carries 12.3 %
more than alpha at p99 <= 5 ms"); a workload's capacities and its closed-loop
throughputs are never combined into one figure (one line each). The words change, not
the rules: the same intervals, the same verdicts. So too where both were offered one
fixed rate (--rate): the levels' figures are their p95 latencies there (rows with
`offered_tps` set, stats/atrate.py), combined as speed (1 / latency) like mysqlslap's
seconds, and said as latency ("beta's p95 latency at 200 TPS offered is 11.0 % lower").
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace

from dbarena.records import AnalysedPoint, JSONObject, LevelComparison, Summarised
from dbarena.stats import bound as point_bound
from dbarena.stats import atrate, cpuladder, efficiency, interference, loadgens, metric, sessions, verdicts
from dbarena.stats.estimate import CONFIDENCE, t_dist

# The vocabulary's words, here too for the views that read decisions (re-exported).
from dbarena.stats.verdicts import FASTER as FASTER, INCONCLUSIVE as INCONCLUSIVE, NO_VERDICT as NO_VERDICT, \
    NOT_COMPARABLE as NOT_COMPARABLE, SAME as SAME, SLOWER as SLOWER


@dataclass(frozen=True)
class LevelRatio:
    """One level that a decision counts: its threads and the ratio label / baseline there
    (of speed, 1 / seconds, where the workload is judged by its seconds)."""

    threads: int
    ratio: float

    def as_dict(self) -> JSONObject:
        return {"threads": self.threads, "ratio": self.ratio}


@dataclass(frozen=True)
class Decision:
    label: str
    baseline: str
    engine: str | None  # None: the label's overall line, across workloads
    workload: str | None
    ratio: float | None  # geometric mean of the per-level ratios, label / baseline
    ci_low: float | None
    ci_high: float | None
    p_value: float | None
    verdict: str  # stats/verdicts.py: FASTER, SLOWER, SAME, INCONCLUSIVE, NO_VERDICT or NOT_COMPARABLE
    text: str  # the verdict in words, or why there is none and what to run for one
    levels: tuple[LevelRatio, ...] = ()  # every level that counts, threads ascending
    log_se: float | None = None  # of log(ratio), for combining workloads
    log_df: float | None = None
    why: str | None = None  # of a significant difference: what bound each side, as the stored data show it
    price: str | None = None  # price per 100 TPS of both sides, the cheaper named (the report adds it)
    # The levels' metric (stats/metric.py). For seconds (lower is better) every ratio
    # here is of speed, 1 / seconds: + is faster in every line, and the overall line
    # combines like with like.
    metric: str | None = None
    # --slo: the objective whose capacities the levels' ratios are of ("p99 <= 5 ms"; the
    # capacity each side carries within it), None for closed-loop throughput. An overall
    # line has one where every workload's line is of capacities at that one objective.
    slo: str | None = None
    # --rate: the offered rate whose p95 latencies the levels' ratios are of (as speed,
    # 1 / latency), None elsewhere; an overall line has one where every line is at it.
    offered_tps: float | None = None

    @property
    def change_pct(self) -> float | None:
        return None if self.ratio is None else (self.ratio - 1) * 100

    def as_dict(self) -> JSONObject:
        """The decision as the report's JSON exports it (its log-scale spread, which only
        combining workloads needs, left out; `slo` only where it has one)."""
        return {"label": self.label, "baseline": self.baseline, "engine": self.engine, "workload": self.workload,
                "ratio": self.ratio, "ci_low": self.ci_low, "ci_high": self.ci_high, "p_value": self.p_value,
                "verdict": self.verdict, "text": self.text, "why": self.why, "price": self.price,
                "metric": self.metric,
                "levels": [level.as_dict() for level in self.levels],
                **({"slo": self.slo} if self.slo is not None else {}),
                **({"offered_tps": self.offered_tps} if self.offered_tps is not None else {})}


@dataclass(frozen=True)
class _Log:
    """A ratio on the log scale: its value, standard error and degrees of freedom."""

    value: float
    se: float
    df: float


def combine(parts: Sequence[_Log]) -> tuple[float, float, float, float, _Log]:
    """The geometric mean of ratios (given on the log scale) measured in the same
    sessions: (ratio, low, high, p, the mean on the log scale) with the CONFIDENCE
    interval and the two-sided p-value of ratio = 1.

    A workload's levels (and a label's workloads) are measured minutes apart in the same
    server sessions and share their drift: their errors are not independent, and adding
    their variances as if they were made four inconclusive levels one "slower" workload
    in an A/A pair (issue 52). With correlations unknown, the standard error of the mean
    is taken at its largest, that of perfectly correlated parts: the mean of their
    standard errors (never less than sqrt(sum se^2) / k, whatever the correlations), and
    the fewest degrees of freedom of any part."""
    k = len(parts)
    mean = sum(p.value for p in parts) / k
    se = sum(p.se for p in parts) / k
    df = min((p.df for p in parts if p.df > 0), default=math.inf)
    log = _Log(mean, se, df)
    if se == 0:
        return math.exp(mean), math.exp(mean), math.exp(mean), 0.0 if mean else 1.0, log
    q = float(t_dist().ppf(0.5 + CONFIDENCE / 2, df))
    p_value = 2 * float(t_dist().sf(abs(mean / se), df))
    return math.exp(mean), math.exp(mean - q * se), math.exp(mean + q * se), p_value, log


# Said of a workload whose ratios are of 1 / seconds (Decision.metric).
INVERSE = "speed, 1 / seconds: fewer seconds is faster"
# ... or of 1 / latency at an offered rate.
INVERSE_LATENCY = "speed, 1 / p95 latency: a lower latency is faster"


def _inverse(judged_by: str | None) -> str | None:
    """What a line's ratios are of where its metric is lower-is-better (they are of speed,
    its inverse), said after it; None for throughput."""
    if judged_by is None or not metric.lower_is_better(judged_by):
        return None
    return INVERSE_LATENCY if judged_by == metric.P95 else INVERSE


def figure_words(slo: str | None, offered_tps: float | None) -> str:
    """What a decision's figure is where it is not closed-loop throughput, said after
    "inconclusive": a capacity at an objective (--slo), or the p95 latency at an offered
    rate (--rate); "" for closed-loop throughput."""
    if slo is not None:
        return capacity_words(slo)
    return f" on the p95 latency at {metric.rate_shown(offered_tps)} TPS offered" if offered_tps is not None else ""


def _verdict(ratio: float, low: float, high: float, p_value: float, label: str, baseline: str,
             inverse: str | None = None, said: str | None = None, slo: str | None = None,
             offered_tps: float | None = None) -> tuple[str, str]:
    """The verdict of a combined ratio and its words; `inverse`: what the ratio is of
    where it is the speed of a lower-is-better figure; `said`: the sessions behind it;
    `slo`: the objective whose capacities the ratio is of, `offered_tps` the rate whose
    latencies it is of (said in the words)."""
    change = (ratio - 1) * 100
    verdict = verdicts.of_interval(change > 0, low, high, p_value)
    if offered_tps is not None:
        return verdict, _latency_verdict(verdict, ratio, low, high, label, baseline, said, offered_tps)
    tail = (f"; {said}" if said else "") + (f"; {inverse}" if inverse else "")
    if verdict in (FASTER, SLOWER):
        interval = f"95 % CI {(low - 1) * 100:+.1f} % to {(high - 1) * 100:+.1f} %" + tail
        if slo is not None:
            more = "more" if verdict == FASTER else "less"
            return verdict, (f"{label} carries {abs(change):.1f} % {more} than {baseline} at {slo} (its capacity "
                             f"there; {interval})")
        return verdict, f"{label} is {abs(change):.1f} % {verdict} than {baseline} ({interval})"
    interval = verdicts.interval_words(low, high) + tail
    within = f" in capacity at {slo}" if slo is not None else ""
    if verdict == SAME:
        return SAME, f"no difference{within} between {label} and {baseline} ({change:+.1f} %, {interval})"
    return INCONCLUSIVE, f"inconclusive between {label} and {baseline}{within} ({change:+.1f} %, {interval})"


def _latency_verdict(verdict: str, ratio: float, low: float, high: float, label: str, baseline: str,
                     said: str | None, offered_tps: float) -> str:
    """A verdict on a ratio of speed (1 / p95 latency at an offered rate) in the words of
    the latency that was measured: its change and interval turned back (1 / ratio)."""
    latency, lat_low, lat_high = 1 / ratio, 1 / high, 1 / low
    change = (latency - 1) * 100
    tail = f"; {said}" if said else ""
    at = f"p95 latency at {metric.rate_shown(offered_tps)} TPS offered"
    if verdict in (FASTER, SLOWER):
        return (f"{label}'s {at} is {abs(change):.1f} % {'lower' if change < 0 else 'higher'} than {baseline}'s "
                f"(95 % CI {(lat_low - 1) * 100:+.1f} % to {(lat_high - 1) * 100:+.1f} %{tail})")
    interval = verdicts.interval_words(lat_low, lat_high) + tail
    if verdict == SAME:
        return f"no difference in {at} between {label} and {baseline} ({change:+.1f} % in latency, {interval})"
    return f"inconclusive between {label} and {baseline} in {at} ({change:+.1f} % in latency, {interval})"


def capacity_words(slo: str | None) -> str:
    """What a decision's figure is where it is a capacity (--slo), said after
    "inconclusive": "" for closed-loop throughput."""
    return f" on the capacity at {slo}" if slo is not None else ""


def _geomean(values: Iterable[float]) -> float | None:
    logs = [math.log(v) for v in values if v > 0]
    return math.exp(sum(logs) / len(logs)) if logs else None


def _without_interval(counted: list[LevelComparison], point: float, on: str, inverse: str | None) -> str | None:
    """Why a workload's levels give no interval, where some do not: sides that ran under
    different interference (stats/interference.py), or a spread between sessions unknown
    (stats/sessions.py); None where every level has one."""
    short = [r for r in counted if r.log_se is None]
    if not short:
        return None
    shown = f"({(point - 1) * 100:+.1f} % without an interval{f'; {inverse}' if inverse else ''})"
    unlike = next((r.reason for r in short if r.reason and (r.reason.startswith(interference.UNLIKE)
                                                            or atrate.QUEUE in r.reason)), None)
    if unlike is not None:
        return f"inconclusive{on} at {len(short)} of {len(counted)} level(s) {shown}: " \
            f"{unlike.removeprefix('inconclusive: ')}"
    a, b = min(r.a_sessions for r in short), min(r.b_sessions for r in short)
    one = "one session a side" if a == b == 1 else sessions.words(a, b)
    return (f"inconclusive{on}: {one} at {len(short)} of {len(counted)} level(s) {shown[:-1]}); between-session "
            f"variation unknown: run both with --sessions {sessions.MIN_SESSIONS}")


def _workload(label: str, baseline: str, engine: str, workload: str, rows: list[LevelComparison]) -> Decision:
    """One engine and workload of the label against the baseline, from its level rows
    (all of capacities at one objective, all of latencies at one offered rate, or all of
    closed-loop throughput: decide)."""
    slo = rows[0].slo if rows else None
    offered = rows[0].offered_tps if rows else None
    on = figure_words(slo, offered)
    judged_by = next((r.metric for r in rows if r.metric), None)
    inverse = _inverse(judged_by)
    if inverse:
        # b / a of seconds, turned into b / a of speed; the log-scale spread is the same.
        rows = [replace(r, ratio=1 / r.ratio) if r.ratio else r for r in rows]
    ratios = sorted(((r, r.ratio) for r in rows if r.ratio is not None and r.ratio > 0), key=lambda c: c[0].threads)
    counted = [r for r, _ in ratios]
    strip = tuple(LevelRatio(r.threads, ratio) for r, ratio in ratios)
    if not counted:
        why = next((r.verdict_text for r in rows if r.verdict_text), "no level measured by both")
        return Decision(label, baseline, engine, workload, None, None, None, None, NOT_COMPARABLE, why, (),
                        metric=judged_by, slo=slo, offered_tps=offered)
    point = _geomean(ratio for _, ratio in ratios)
    assert point is not None  # every counted ratio is positive
    held = _without_interval(counted, point, on, inverse)
    if held is not None:
        return Decision(label, baseline, engine, workload, point, None, None, None, NO_VERDICT, held, strip,
                        metric=judged_by, slo=slo, offered_tps=offered)
    ratio, low, high, p_value, log = combine([_Log(math.log(value), r.log_se, r.log_df or math.inf)
                                              for r, value in ratios if r.log_se is not None])
    said = sessions.words(min(r.a_sessions for r in counted), min(r.b_sessions for r in counted))
    verdict, text = _verdict(ratio, low, high, p_value, label, baseline, inverse, said, slo, offered)
    if verdict in (FASTER, SLOWER) and not any(r.verdict == verdict for r in counted):
        # Its levels share their sessions: a workload none of whose levels alone shows
        # the difference is not shown to differ by their combination either.
        verdict = INCONCLUSIVE
        text = (f"inconclusive between {label} and {baseline}{on}: {_change(ratio, low, high, offered, said)}, but "
                f"no level alone shows a difference{f'; {inverse}' if inverse and offered is None else ''}")
    return Decision(label, baseline, engine, workload, ratio, low, high, p_value, verdict, text, strip,
                    log_se=log.se, log_df=log.df, metric=judged_by, slo=slo, offered_tps=offered)


# What bound a side, from its points' once-a-second system samples (means over their
# steady state; analysis.system_view): the CPU ladder every view climbs (stats/cpuladder.py).
MIN_SAMPLES = 3  # steadystate.LOADGEN_MIN_SAMPLES: nothing is said from fewer


def bound(points: Sequence[AnalysedPoint]) -> str:
    """What bound one side at one level (its repeats, with their derived system view),
    in words with the figure that says so; where the points carry the bound from the
    server's own series, that too."""
    said = _machine_bound(points)
    per_point = point_bound.of_group(p.bound for p in points if p.status == "ok")
    return f"{said}; per point: {per_point}" if per_point else said


def _mean(figures: Iterable[float | None]) -> float | None:
    values = [v for v in figures if v is not None]
    return sum(values) / len(values) if values else None


def _machine_bound(points: Sequence[AnalysedPoint]) -> str:
    ok = [p for p in points if p.status == "ok"]
    # Points several load generators drove (fleet run --together): their hosts' CPU says it.
    if (together := loadgens.bound(ok)) is not None:
        return together
    if not ok or all(p.samples < MIN_SAMPLES or p.cpu_busy_pct is None for p in ok):
        return cpuladder.TOO_FEW
    busy, server = _mean(p.cpu_busy_pct for p in ok), _mean(p.server_cpu for p in ok)
    machine = max(p.machine_threads for p in ok)
    found = cpuladder.step(cpuladder.Figures(
        busy_pct=busy, iowait_pct=_mean(p.cpu_iowait_pct for p in ok), server_cpu=server,
        loadgen_cpu=_mean(p.loadgen_cpu for p in ok), server_threads=max(p.hardware_threads_usable or 1 for p in ok),
        loadgen_threads=max(p.threads or 1 for p in ok), loadgen_cores=machine))
    if found.kind in (point_bound.IO, point_bound.LOADGEN):
        return found.words()
    # A load generator the warning flagged that is not saturated competes for the CPU: in
    # the warning's own reason (steadystate.loadgen_verdict), not "saturated" at 0.2 cores.
    flagged = [w for p in ok for w in p.warnings if w.get("code") == "load-generator-bound"]
    if flagged:
        said = flagged[0].get("message", "").split(":", 1)[0].split(";", 1)[0]
        return f"load generator competes for the CPU ({said})" if said else "load generator bound"
    # Other processes, not the load generator, took the CPU (the neighbours warning,
    # steadystate.loadgen_verdict): said with their figure over the repeats, before the
    # machine's CPU (theirs is part of it).
    neighbours = [p.neighbour_cpu for p in ok if p.neighbour_cpu is not None]
    if found.kind != point_bound.SERVER_CPU and neighbours and \
            interference.notable(statistics.fmean(neighbours), machine):
        low, high = interference.cpus(min(neighbours)), interference.cpus(max(neighbours))
        took = low if low == high else f"{low}-{high}"
        return (f"neighbours took {took} of {machine} CPUs (machine CPU {busy:.0f} % busy"
                + (f", server {server:.1f} cores" if server is not None else "") + ")")
    return found.words()


# Point ids -> their whole records (analysis.load of those points), for what a decision
# says of the level it names: what a view holds of its points (records.Summarised) lacks
# their server's figures and load generators.
Records = Callable[[Sequence[int]], Sequence[AnalysedPoint]]
# (engine, workload, threads) -> the ids of the closed-loop points a view shows there,
# ascending: where a view holds its points' groups rather than the points (report/data.py).
Located = Callable[[str | None, str | None, int], Sequence[int]]


def _why(d: Decision, rows: Sequence[LevelComparison], points: Sequence[Summarised],
         records: Records | None, located: Located | None = None) -> str | None:
    """At the level whose ratio lies farthest from 1, what bound each side, and the cost
    per transaction they differ in most (its row's, stats/levelcompare.py). `records`:
    the whole records of `points` (or of those `located` gives) where they are not
    (None: they are AnalysedPoints)."""
    if d.verdict not in (FASTER, SLOWER) or not d.levels:
        return None
    threads = max(d.levels, key=lambda level: abs(math.log(level.ratio))).threads
    workload = d.workload.split(" [", 1)[0] if d.workload else None
    if located is not None:
        ids = located(d.engine, workload, threads)
        here: Sequence[AnalysedPoint] = records(ids) if records is not None and ids else []
    else:
        # (The line's own points: closed-loop, or offered its fixed rate; a --slo search's
        # steps are no level's.)
        found = [p for p in points if p.engine == d.engine and p.workload == workload and p.threads == threads
                 and p.target_tps == d.offered_tps and (d.offered_tps is None or p.slo is None)]
        here = records([p.point_id for p in found]) if records is not None else \
            [p for p in found if isinstance(p, AnalysedPoint)]
    # (Its stored label: a report may show the point under its series' name, analysis.sides.)
    of_side = [[p for p in here if name in (p.series_label, p.variant)] for name in (d.label, d.baseline)]
    sides = [f"{name}: {bound(side)}" for name, side in zip((d.label, d.baseline), of_side)]
    row = next((r for r in rows if r.threads == threads and r.slo is None and r.offered_tps == d.offered_tps
                and r.cost_difference is not None), None)
    cost = f"; {efficiency.Difference.of_json(row.cost_difference).words(d.baseline, d.label)}" \
        if row is not None and row.cost_difference is not None else ""
    return f"at {threads} thread(s), " + "; ".join(sides) + cost + _server_difference(d.label, d.baseline, *of_side)


def _server_difference(label: str, baseline: str, ours: Sequence[AnalysedPoint],
                       theirs: Sequence[AnalysedPoint]) -> str:
    """The server-side figure (point_bound.figures, each side's mean over its repeats)
    that differs most between the two sides, where both were sampled."""
    def mean_figures(points: Sequence[AnalysedPoint]) -> dict[str, float]:
        # (Numbers: the store's edge checked each point's figures.)
        sampled = [p.server_figures for p in points if p.status == "ok" and p.server_figures]
        names = {n for f in sampled for n in f}
        return {n: sum(float(v) for f in sampled if isinstance(v := f.get(n, 0.0), (int, float))) / len(sampled)
                for n in names}

    a, b = mean_figures(ours), mean_figures(theirs)
    found = point_bound.differs_most(a, b) if a and b else None
    if found is None:
        return ""
    name, x, y = found
    return (f"; the server's figure that differs most: {name.removeprefix('wait.')} "
            f"{point_bound.figure_text(name, x)} ({label}) against {point_bound.figure_text(name, y)} ({baseline})")


def decide(comparisons: Iterable[LevelComparison], points: Sequence[Summarised] = (),
           records: Records | None = None, located: Located | None = None) -> list[Decision]:
    """Rows of analysis.compare (b against a, level by level) -> one Decision per
    engine and workload, worst first (lowest ratio; those without a figure last).
    `points` (analysis.load rows, or what a view holds of them: `records` then reads
    the whole records of those a "why" names), or `located` with `records`: to say why
    each significant difference is there."""
    groups: dict[tuple[str, str, str, str, str | None, float | None], list[LevelComparison]] = {}
    for r in comparisons:
        # Two variants are compared within each host label: the label names the workload's line.
        workload = f"{r.workload} [{r.label}]" if r.by == "variant" and r.label else r.workload
        # Capacities at an objective (--slo), latencies at an offered rate (--rate) and
        # closed-loop throughputs: a line each.
        groups.setdefault((r.b, r.a, r.engine, workload, r.slo, r.offered_tps), []).append(r)
    out = [(_workload(label, baseline, engine, workload, rows), rows)
           for (label, baseline, engine, workload, _, _), rows in groups.items()]
    decided = [replace(d, why=_why(d, rows, points, records, located)) if points or located is not None else d
               for d, rows in out]
    return sorted(decided, key=lambda d: (d.ratio is None, d.ratio if d.ratio is not None else 0.0))


def _kinds(kinds: Sequence[tuple[str | None, float | None]]) -> str:
    """What an overall line's figures are where its workloads' lines differ in kind
    (capacities at objectives, latencies at offered rates, closed-loop throughput: each
    line's (slo, offered_tps)), said after it; "" for one kind."""
    if len(kinds) <= 1:
        return ""
    what = " and ".join([*(f"capacity at {slo}" for slo, _ in kinds if slo is not None),
                         *(f"p95 latency at {metric.rate_shown(rate)} TPS offered" for slo, rate in kinds
                           if slo is None and rate is not None)])
    where = "where searched" if all(rate is None for _, rate in kinds) else "where asked"
    return f"; {what} {where}, closed-loop throughput elsewhere" if (None, None) in kinds else f"; {what}"


def overall(decisions: Sequence[Decision]) -> Decision | None:
    """One label's line across its workloads: the geometric mean of the workloads'
    figures, each workload counting once; a verdict only where every workload has one."""
    figures = [d for d in decisions if d.ratio is not None]
    if not figures:
        return None
    label, baseline = figures[0].label, figures[0].baseline
    n = len(figures)
    point = _geomean(d.ratio for d in figures if d.ratio is not None)
    assert point is not None
    # --slo: every line of capacities at one objective, the overall line is too (and of
    # latencies at one offered rate, --rate); lines of several kinds (a workload
    # searched, another not) said so after the figure.
    kinds = list(dict.fromkeys((d.slo, d.offered_tps) for d in figures))
    slo, offered = kinds[0] if len(kinds) == 1 else (None, None)
    on = figure_words(slo, offered)
    if any(d.verdict == NO_VERDICT for d in figures):
        held = [d for d in figures if d.verdict == NO_VERDICT]
        short = [d for d in held if atrate.QUEUE in d.text]
        unlike = [d for d in held if "interference" in d.text and d not in short]
        said = (["some ran under different interference"] if unlike else []) \
            + (["some did not carry their offered rate"] if short else []) \
            + ([f"the spread between sessions is unknown for some (run both with --sessions {sessions.MIN_SESSIONS})"]
               if len(unlike) + len(short) < len(held) else [])
        why = "; ".join(said)
        text = (f"inconclusive{on} across {n} workload(s) ({(point - 1) * 100:+.1f} % without an interval): "
                f"{why}{_kinds(kinds)}")
        return Decision(label, baseline, None, None, point, None, None, None, NO_VERDICT, text, slo=slo,
                        offered_tps=offered)
    parts = []
    for d in figures:
        assert d.ratio is not None and d.log_se is not None and d.log_df is not None
        parts.append(_Log(math.log(d.ratio), d.log_se, d.log_df))
    ratio, low, high, p_value, log = combine(parts)
    verdict, text = _overall_verdict(figures, ratio, low, high, p_value, label, baseline, slo, offered)
    return Decision(label, baseline, None, None, ratio, low, high, p_value, verdict,
                    f"across {n} workload(s): {text}{_kinds(kinds)}", log_se=log.se, log_df=log.df, slo=slo,
                    offered_tps=offered)


def _change(ratio: float, low: float, high: float, offered_tps: float | None, said: str | None = None) -> str:
    """A combined change with its interval, "+10.0 % (95 % CI -13.1 % to +39.2 %)"; of
    the latency it was judged by where the ratio is of speed at an offered rate
    ("-9.1 % in latency (95 % CI ...)"). `said`: the sessions behind it, added inside."""
    tail = f"; {said}" if said else ""
    if offered_tps is None:
        return f"{(ratio - 1) * 100:+.1f} % (95 % CI {(low - 1) * 100:+.1f} % to {(high - 1) * 100:+.1f} %{tail})"
    return (f"{(1 / ratio - 1) * 100:+.1f} % in latency (95 % CI {(1 / high - 1) * 100:+.1f} % to "
            f"{(1 / low - 1) * 100:+.1f} %{tail})")


def _alone(d: Decision) -> str:
    """A workload's significant change in a few words: of throughput ("12.0 % faster"),
    or of the latency it was judged by at an offered rate ("19.7 % lower p95 latency:
    faster")."""
    if d.offered_tps is not None and d.ratio:
        latency = (1 / d.ratio - 1) * 100
        return f"{abs(latency):.1f} % {'lower' if latency < 0 else 'higher'} in p95 latency: {d.verdict}"
    return f"{abs(d.change_pct or 0):.1f} % {d.verdict}"


def _overall_verdict(figures: list[Decision], ratio: float, low: float, high: float, p_value: float,
                     label: str, baseline: str, slo: str | None, offered: float | None = None) -> tuple[str, str]:
    """The verdict across workloads and its words, held to what the workloads' own
    verdicts support: none that hides a workload that differs, none across workloads
    that differ both ways, and none that no single workload shows."""
    on = figure_words(slo, offered)
    verdict, text = _verdict(ratio, low, high, p_value, label, baseline, slo=slo, offered_tps=offered)
    significant = [d for d in figures if d.verdict in (FASTER, SLOWER)]
    apart = significant or [d for d in figures if d.verdict == INCONCLUSIVE]
    if (verdict == SAME and apart) or (verdict == INCONCLUSIVE and significant):
        # "No difference" (or an unqualified "inconclusive") across workloads while one of
        # them is significantly slower, or cannot be told, would hide what that
        # workload's own data show: the line names it.
        verdict = INCONCLUSIVE
        worst = min(apart, key=lambda d: (d.verdict != SLOWER, d.verdict != FASTER, d.ratio or 1.0))
        alone = _alone(worst) if worst in significant else "inconclusive"
        text = f"inconclusive{on}: {_change(ratio, low, high, offered)}, but {worst.engine} {worst.workload} alone " \
            f"is {alone}"
    faster, slower = ([d for d in figures if d.verdict == v] for v in (FASTER, SLOWER))
    if verdict in (FASTER, SLOWER) and faster and slower:
        # Workloads that differ both ways: one figure across them would say the label is
        # faster where the reader's workload may be one that is slower.
        verdict = INCONCLUSIVE
        text = (f"mixed{on}: {_change(ratio, low, high, offered)}, but "
                f"{', '.join(f'{d.engine} {d.workload}' for d in faster)} faster and "
                f"{', '.join(f'{d.engine} {d.workload}' for d in slower)} slower")
    if verdict in (FASTER, SLOWER) and not any(d.verdict == verdict for d in figures):
        # Combining workloads narrows the interval as if their errors were independent;
        # runs of one label made in one session share its drift (another load on the
        # machine, a warmer cache), which no workload's own interval sees. An overall
        # verdict that no single workload supports claims more than the data do.
        verdict = NO_VERDICT
        text = (f"{_change(ratio, low, high, offered)}, but no workload alone shows a difference: not a verdict "
                "(the labels' sessions may differ in load)")
    return verdict, text
