"""One level of B against one of A: the comparison every view states of a pair of groups
(analysis.summaries), so that `compare`, the report's level tables and its decision,
serve's /diff and the gate give one figure, one interval and one verdict for one pair.

What it checks, in order: that the configurations match apart from what the comparison
is about (configkey.ABOUT: the host for two labels, the variant for two variants, more
where asked); else the row names what differs ("not comparable: clients 8 vs 32") and
has no ratio. Then the ratio of the sides' means over sessions, its interval and verdict
(estimators.over_sessions: pooled spreads where both ran on one machine); and where both
searched a capacity at one objective (--slo), of those capacities; and where both were
offered one fixed rate (--rate), of their p95 latency there (stats/atrate.py). Sides of one
configuration measured under different interference keep their ratio and interval but
no verdict (stats/interference.py).
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Callable, Iterable, Sequence

from dbarena.errors import UsageError
from dbarena.records import LevelComparison, LevelSummary
from dbarena.stats import atrate, configkey, efficiency, interference, metric
from dbarena.stats import estimators as stats

__all__ = ["against", "ignoring", "level", "same_objective"]


def ignoring(by: str, about: Iterable[str] = ()) -> set[str]:
    """The configuration's fields two sides may differ in: those of what the comparison
    is by ("label": the host; "variant": the variant and its settings) and of each
    field of `about` (configkey.ABOUT's names; another is a UsageError)."""
    ignore = {*configkey.ABOUT["host" if by == "label" else "variant"]}
    for field in about:
        if field not in configkey.ABOUT:
            raise UsageError(f"--about {field!r}: expected one of {', '.join(configkey.ABOUT)}")
        ignore.update(configkey.ABOUT[field])
    return ignore


def against(base: LevelSummary, other: LevelSummary, about: Iterable[str] = ()) -> LevelComparison | None:
    """`other`'s group against the baseline's at one level, as a report compares them:
    about the host where their labels as stored differ, about the variant where their
    variants do, and about each field of `about` (report --about); any other field of
    their configurations that differs makes them not comparable, and the row says which."""
    by = "label" if other.series_label != base.series_label else "variant"
    named = [name for name, differs in (("host", by == "label"), ("variant", other.variant != base.variant)) if differs]
    ignore = {field for name in [*named, *about] for field in configkey.ABOUT[name]}
    return level(base, [other], a=base.label, b=other.label, by=by, ignore=ignore)


def level(sa: LevelSummary, same_place: Sequence[LevelSummary], *, a: str, b: str, by: str,
          ignore: Iterable[str]) -> LevelComparison | None:
    """A's group `sa` against the first of B's groups at its engine, workload and threads
    (`same_place`, not empty) whose configuration matches apart from `ignore`; where none
    does, the row that says what differs from the first. `a`, `b`: the sides' names as
    the row and its words give them; `by`: what they are ("label" or "variant"). None
    where a side has no figure to compare (no ok point, or a capacity not found)."""
    ignore = set(ignore)
    a_config = sa.config or {}
    match = next((sb for sb in same_place if configkey.matches(a_config, sb.config or {}, ignore)), None)
    # (Two labels that hold variants have a row for each variant at one level: named.)
    row = functools.partial(LevelComparison, engine=sa.engine, workload=sa.workload, threads=sa.threads,
                            metric=sa.metric, lower_is_better=metric.lower_is_better(sa.metric), a=a, b=b, by=by,
                            label=sa.label if by == "variant" else None,
                            variant=(sa.variant or None) if by == "label" else None,
                            a_sessions=sa.sessions)
    if match is None:
        return _not_comparable(row, sa, same_place[0], ignore)
    b_config = match.config or {}
    if sa.at_rate is not None and match.at_rate is not None:
        return _at_rate(row, sa, match, a=a, b=b, ignore=ignore)
    # Where both searched for a capacity at one objective (--slo), the capacities are
    # what is compared: the throughput each carries within the objective.
    slo = same_objective(sa, match)
    if slo is None and (searched := searched_at(sa, match)) is not None:
        return _no_capacity(row, sa, match, searched, a=a, b=b, ignore=ignore)
    a_est, b_est = (sa.capacity_estimate, match.capacity_estimate) if slo else (sa.estimate, match.estimate)
    if a_est is None or b_est is None:
        return None
    one_host = configkey.same_host(a_config, b_config)
    c = stats.over_sessions(a_est, b_est, of=sa.metric, one_host=one_host)
    # Where the sides differ in their cost per transaction beyond their sessions' spread.
    cost = efficiency.differs_most(sa.efficiency_sessions or {}, match.efficiency_sessions or {}, one_host=one_host)
    if (unlike := _unlike(sa, match, slo, a=a, b=b)) is not None:
        said = f"inconclusive: {unlike}"
        c = dataclasses.replace(c, verdict=None, reason=said, text=said, log_se=None, log_df=None)
        # (The machine's context switches and disk bytes include the neighbours'.)
        cost = None
    return row(
        a_mean=a_est.mean if slo else sa.mean, a_n=a_est.n if slo else sa.n,
        b_mean=b_est.mean if slo else match.mean, b_n=b_est.n if slo else match.n,
        b_sessions=match.sessions, ratio=c.ratio, ratio_ci_low=c.ci_low,
        ratio_ci_high=c.ci_high, p_value=c.p_value, significant=c.significant, differs=[],
        unverified=configkey.unknown(a_config, b_config, ignore),
        verdict=c.verdict.value if c.verdict else None, reason=c.reason, verdict_text=c.text,
        log_se=c.log_se, log_df=c.log_df, slo=slo, a_efficiency=sa.efficiency, b_efficiency=match.efficiency,
        cost_difference=cost.as_json() if cost is not None else None)


def _at_rate(row: Callable[..., LevelComparison], sa: LevelSummary, sb: LevelSummary, *, a: str, b: str,
             ignore: set[str]) -> LevelComparison:
    """Both offered one fixed rate (their keys match, and the rate is in them): their p95
    latency there, over sessions (stats/atrate.py); not decided where a side did not
    carry the rate, or where they ran under different interference."""
    assert sa.at_rate is not None and sb.at_rate is not None
    rate = sa.target_tps
    at = f"{metric.rate_shown(rate)} TPS offered" if rate is not None else "the offered rate"
    a_config, b_config = sa.config or {}, sb.config or {}
    at_row = functools.partial(row, metric=metric.P95, lower_is_better=True, offered_tps=rate,
                               a_n=sa.at_rate.runs, b_n=sb.at_rate.runs, b_sessions=sb.sessions,
                               unverified=configkey.unknown(a_config, b_config, ignore),
                               a_efficiency=sa.efficiency, b_efficiency=sb.efficiency)
    a_est, b_est = sa.at_rate.estimate, sb.at_rate.estimate
    if a_est is None or b_est is None:
        missing = " and ".join(name for name, e in ((a, a_est), (b, b_est)) if e is None)
        reason = (f"no p95 latency at {at} for {missing} (no run with {atrate.NEEDED:,} transactions or more "
                  "and a p95: a longer --duration)")
        return at_row(a_mean=a_est.mean if a_est else None, b_mean=b_est.mean if b_est else None, ratio=None,
                      ratio_ci_low=None, ratio_ci_high=None, p_value=None, significant=False, differs=[],
                      verdict=None, reason=reason, verdict_text=reason, log_se=None, log_df=None)
    one_host = configkey.same_host(a_config, b_config)
    c = stats.over_sessions(a_est, b_est, of=metric.P95, one_host=one_host)
    cost = efficiency.differs_most(sa.efficiency_sessions or {}, sb.efficiency_sessions or {}, one_host=one_host)
    short = [f"{name} {s.at_rate.short}" for name, s in ((a, sa), (b, sb)) if s.at_rate is not None and s.at_rate.short]
    held = f"{'; '.join(short)} ({atrate.QUEUE})" if short else \
        _unlike(sa, sb, None, a=a, b=b)
    if held is not None:
        said = f"inconclusive: {held}"
        c = dataclasses.replace(c, verdict=None, reason=said, text=said, log_se=None, log_df=None)
        cost = None
    return at_row(a_mean=a_est.mean, b_mean=b_est.mean, ratio=c.ratio, ratio_ci_low=c.ci_low,
                  ratio_ci_high=c.ci_high, p_value=c.p_value, significant=c.significant, differs=[],
                  verdict=c.verdict.value if c.verdict else None, reason=c.reason, verdict_text=c.text,
                  log_se=c.log_se, log_df=c.log_df, cost_difference=cost.as_json() if cost is not None else None)


def _not_comparable(row: Callable[..., LevelComparison], sa: LevelSummary, sb: LevelSummary,
                    ignore: set[str]) -> LevelComparison:
    """The row of a level whose B side matches A's configuration nowhere: what differs
    from B's first group there, no ratio."""
    a_config, b_config = sa.config or {}, sb.config or {}
    fields = configkey.differing(a_config, b_config, ignore)
    reason = "not comparable: " + configkey.describe(a_config, b_config, fields)
    return row(a_mean=sa.mean, a_n=sa.n, b_mean=sb.mean, b_n=sb.n, b_sessions=sb.sessions, ratio=None,
               ratio_ci_low=None, ratio_ci_high=None, p_value=None, significant=False, differs=fields,
               unverified=None, verdict=None, reason=reason, verdict_text=reason, log_se=None, log_df=None)


def _no_capacity(row: Callable[..., LevelComparison], sa: LevelSummary, sb: LevelSummary, searched: str, *,
                 a: str, b: str, ignore: set[str]) -> LevelComparison:
    """Both searched at one objective and a side met it at no offered rate: there is no
    capacity to divide, and its closed-loop throughput is not what was asked."""
    why = "; ".join(f"{name}: {_text((s.capacity or {}).get('reason')) or 'no capacity found'}"
                    for name, s in ((a, sa), (b, sb)) if s.capacity_estimate is None)
    reason = f"no capacity at {searched} to compare ({why})"
    return row(a_mean=_capacity(sa), a_n=_sessions(sa), b_mean=_capacity(sb), b_n=_sessions(sb),
               b_sessions=sb.sessions, ratio=None, ratio_ci_low=None, ratio_ci_high=None, p_value=None,
               significant=False, differs=[], unverified=configkey.unknown(sa.config or {}, sb.config or {}, ignore),
               verdict=None, reason=reason, verdict_text=reason, log_se=None, log_df=None, slo=searched)


def _unlike(sa: LevelSummary, sb: LevelSummary, slo: str | None, *, a: str, b: str) -> str | None:
    """Why the sides were measured under different interference (other processes' CPU,
    steal), or None: their ratio and its interval are shown, but not decided, here nor
    where the decision combines levels (no log-scale spread to combine).

    Only between sides of one configuration (apart from the host): where what the
    comparison is about differs (settings, a variant, the server), so does the servers'
    appetite for CPU, and the CPU other processes got then says nothing of what they
    took from the server (a server waiting on its commits leaves the CPU to them:
    synchronous_commit on showed neighbours at 1.9 of 2 CPUs, off at 1.2)."""
    if not configkey.matches(sa.config or {}, sb.config or {}, configkey.ABOUT["host"]):
        return None
    return interference.apart(*((sa.capacity_interference, sb.capacity_interference) if slo
                                else (sa.interference, sb.interference)), a, b)


def searched_at(a: LevelSummary, b: LevelSummary) -> str | None:
    """The objective both groups searched a capacity at (--slo), found or not; None
    where one did not search, or they searched at different objectives."""
    if a.capacity is None or b.capacity is None:
        return None
    slo = a.capacity.get("slo")
    return slo if isinstance(slo, str) and slo == b.capacity.get("slo") else None


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _capacity(group: LevelSummary) -> float | None:
    """A group's capacity (None where its search met the objective at no rate)."""
    found = (group.capacity or {}).get("tps")
    return float(found) if isinstance(found, (int, float)) and not isinstance(found, bool) else None


def _sessions(group: LevelSummary) -> int:
    """The sessions a group's capacity search ran in."""
    found = (group.capacity or {}).get("sessions")
    return len(found) if isinstance(found, list) else 0


def same_objective(a: LevelSummary, b: LevelSummary) -> str | None:
    """The objective both groups' capacities are at (--slo), or None: compare their
    closed-loop throughput."""
    if a.capacity is None or b.capacity is None or a.capacity_estimate is None or b.capacity_estimate is None:
        return None
    slo = a.capacity.get("slo")
    return slo if isinstance(slo, str) and slo == b.capacity.get("slo") else None
