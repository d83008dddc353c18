"""Sessions, the unit of replication of a comparison.

A session is one life of a server with its dataset on one host at one time: one stored
run (a `dbarena run` starts its throwaway servers once per run; `--sessions K` makes K
runs, each with servers started afresh and datasets prepared again). Repeats inside one
session share that server's start (buffer placement, a plan cache, hash seeds) and that
hour of the machine (its neighbours, its temperature); two labels are two sessions.
Kalibera and Jones ("Rigorous Benchmarking in Reasonable Time", ISMM 2013) show that
the variation between such higher-level repetitions is usually the larger one: an
interval from the repeats of one session is blind to it. On this project's shared
2-CPU machine, one configuration run twice as two labels was called 42 % slower and
63 % faster with run-level intervals (issue 52).

So every figure a comparison uses is over sessions: each session's mean of its runs is
one observation (a two-level, random-effects design analysed at its upper level, which
is exact for the mean whatever the number of runs per session). The spread between
sessions comes from the side's own sessions (two or more), or, for a side of one
session, from other groups of the very same configuration (same key, any label) with
two or more sessions in what was read: the store's history of that configuration on
that host. A side of one session with neither has no interval: "one session a side;
between-session variation unknown".

Pure: numbers in, numbers out.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from dbarena.stats.estimate import Estimate

MIN_SESSIONS = 2  # a side's own between-session spread needs two sessions


@dataclass(frozen=True)
class Sessions:
    """One group's figures (a label at one configuration) by session: each session's
    mean of its runs, and how many runs each had, in session order."""

    means: tuple[float, ...]
    runs: tuple[int, ...]

    @property
    def count(self) -> int:
        return len(self.means)

    @property
    def mean(self) -> float:
        """The mean of the session means: each session counts once, whatever its runs."""
        return statistics.fmean(self.means)


def of(values: Iterable[tuple[int, float]]) -> Sessions | None:
    """(session id, a run's figure) pairs -> the group's Sessions; None without any."""
    by_session: dict[int, list[float]] = {}
    for session, value in values:
        by_session.setdefault(session, []).append(value)
    if not by_session:
        return None
    ordered = [by_session[s] for s in sorted(by_session)]
    return Sessions(means=tuple(statistics.fmean(v) for v in ordered), runs=tuple(len(v) for v in ordered))


@dataclass(frozen=True)
class Between:
    """The spread between sessions of one configuration, on the log scale (a relative
    spread, so that groups of other means may be pooled): its variance, the degrees of
    freedom behind it, and the sessions it was found from."""

    log_variance: float
    df: int
    sessions: int
    groups: int


def between(groups: Iterable[Sessions]) -> Between | None:
    """The pooled variance of log session means over groups with MIN_SESSIONS or more
    sessions (each group's own mean removed: a one-way analysis of variance's
    within-group mean square, of session means); None where no group has two."""
    squares, df, sessions, count = 0.0, 0, 0, 0
    for g in groups:
        if g.count < MIN_SESSIONS or any(m <= 0 for m in g.means):
            continue
        logs = [math.log(m) for m in g.means]
        centre = math.fsum(logs) / len(logs)
        squares += math.fsum((x - centre) ** 2 for x in logs)
        df += len(logs) - 1
        sessions += len(logs)
        count += 1
    if df == 0:
        return None
    return Between(log_variance=squares / df, df=df, sessions=sessions, groups=count)


def estimate(group: Sessions, known: Between | None = None) -> Estimate:
    """The group's mean over sessions with its standard error: from its own session
    means when it has MIN_SESSIONS or more, pooled with `known` (the same
    configuration's spread between sessions elsewhere: its label's history) where there
    is one, on the relative scale; else from `known` alone; else without one (n = 1
    session: no comparison can have an interval). An estimate whose degrees of freedom
    exceed its own sessions' (n - 1) borrowed from a pool: estimators.over_sessions
    counts them once."""
    n = group.count
    mean = group.mean
    if n >= MIN_SESSIONS and known is not None and mean > 0 and all(m > 0 for m in group.means):
        own = between([group])
        assert own is not None  # two or more positive sessions
        df = own.df + known.df
        pooled = (own.df * own.log_variance + known.df * known.log_variance) / df
        return Estimate(mean=mean, se=mean * math.sqrt(pooled / n), df=df, n=n)
    if n >= MIN_SESSIONS:
        spread = statistics.stdev(group.means)
        return Estimate(mean=mean, se=spread / math.sqrt(n), df=n - 1, n=n)
    if known is not None and mean > 0:
        # A relative standard deviation s on the log scale is, to first order, s * mean.
        return Estimate(mean=mean, se=mean * math.sqrt(known.log_variance / n), df=known.df, n=n)
    return Estimate(mean=mean, se=None, df=None, n=n)


def known_for(key: str, own: Sessions, groups: Mapping[str, Sequence[Sessions]]) -> Between | None:
    """The between-session spread of the same configuration key in the other groups read
    (other labels of the same configuration, i.e. the same host facts, server and
    settings; for a gate, its sides' labels' other runs); None if none has two."""
    return between(g for g in groups.get(key, ()) if g is not own)


def words(a: int, b: int) -> str:
    """The sessions behind a comparison, in words: "2 sessions a side", "1 and 3 sessions"."""
    if a == b:
        return f"{a} session{'s' if a != 1 else ''} a side"
    return f"{a} and {b} sessions"
