"""Capacity at a latency objective: the highest offered load a configuration carries
while a latency percentile stays within a limit (docs/capacity.md).

A closed-loop point (N clients sending as fast as the server answers) gives the
throughput reached with whatever latency came with it. An open-loop point offers a
rate (pgbench -R): transactions are scheduled on a Poisson clock whatever the server
does, and each one's latency counts from its scheduled start, so the time a request
waits behind a slow one is counted (no coordinated omission). A rate meets the
objective when
- the achieved throughput is at least 99 % of the offered rate, or short of it by no
  more than the Poisson noise of the schedule (3 standard deviations of the count of
  transactions scheduled in the point's seconds: 4.7 % at 1,000 TPS for 4 s, 0.4 % at
  10,000 TPS for 60 s; a server that falls behind shows it in its latency anyway,
  which counts the wait);
- the objective's latency statistic (from the point's per-transaction log, counted
  from each transaction's scheduled start) is within its limit;
- failed and skipped transactions are within the error budget.
The search (Search) brackets the capacity between the highest rate that met the
objective and the lowest that did not, narrowing until the two are within the
precision. Each session searches on its own; the capacity of a configuration is the
mean of its sessions' capacities, with an interval between sessions as every other
figure a comparison uses (stats/sessions.py).

Pure: numbers and records in, numbers and records out.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from dbarena.errors import UsageError
from dbarena.model import PointResult
from dbarena.records import JSON, JSONObject
from dbarena.stats import configkey, sessions
from dbarena.stats.estimate import Estimate

# The statistics an objective may name, as the point's latency fields spell them.
STATISTICS = {"p50": "latency_p50_ms", "p90": "latency_p90_ms", "p95": "latency_p95_ms", "p99": "latency_p99_ms",
              "p999": "latency_p999_ms", "avg": "latency_avg_ms"}
DEFAULT_ERRORS = 0.001  # failed and skipped transactions: 0.1 % of those scheduled
DEFAULT_PRECISION = 0.02  # the bracket's width, relative to its lower end
DEFAULT_MAX_RATES = 12  # offered rates a search tries at most, per session and point
ACHIEVED = 0.99  # the share of the offered rate a rate must achieve
POISSON_SIGMAS = 3.0  # or be short of it by no more than this much of the schedule's noise
FIRST_SHARE = 0.8  # the first offered rate: this share of the closed-loop throughput
STEP_UP = 1.25  # above a rate that met, with nothing missed yet (past the closed-loop figure)
LOWEST_SHARE = 0.001  # halving below this share of the closed-loop throughput: no rate meets
RATE_OPTION = "rate"  # the tool option an offered rate is (pgbench -R)
MIN_RATE = 0.1  # the least offered rate rate_text writes (one decimal: 0.04 would be "0.0")
# A percentile judged on a point rests on at least this many of its transactions above it
# (p99 of 1,000: the 10 slowest; p99 of 100 is the slowest one, a single stall).
TAIL_TRANSACTIONS = 10
AVERAGE_TRANSACTIONS = 100  # and an average on at least this many

_OBJECTIVE = re.compile(r"^\s*(?P<stat>p50|p90|p95|p99|p99\.9|p999|avg)\s*(?:=|<=)\s*"
                        r"(?P<value>\d+(?:\.\d+)?)\s*(?P<unit>us|ms|s)\s*$", re.IGNORECASE)
_UNIT_MS = {"us": 0.001, "ms": 1.0, "s": 1000.0}


@dataclass(frozen=True)
class Objective:
    """A latency objective: a statistic of the latency (from the scheduled start) and
    its limit, the share of failed or skipped transactions allowed, and how narrow the
    search's bracket must get."""

    statistic: str  # a key of STATISTICS
    limit_ms: float
    errors: float = DEFAULT_ERRORS
    precision: float = DEFAULT_PRECISION
    max_rates: int = DEFAULT_MAX_RATES

    @property
    def text(self) -> str:
        """'p99 <= 5 ms', as tables and verdicts say it."""
        name = "p99.9" if self.statistic == "p999" else self.statistic
        return f"{name} <= {_ms(self.limit_ms)} ms"

    @property
    def spec(self) -> str:
        """'p99=5ms', as --slo takes it."""
        name = "p99.9" if self.statistic == "p999" else self.statistic
        return f"{name}={_ms(self.limit_ms)}ms"

    def to_json(self) -> JSONObject:
        return {"objective": self.spec, "errors": self.errors, "precision": self.precision,
                "max_rates": self.max_rates}

    @classmethod
    def from_json(cls, raw: JSON) -> Objective | None:
        """An objective as a run's options record it; None for anything else (a store
        edited by hand, a run without one)."""
        if not isinstance(raw, dict):
            return None
        try:
            found = parse(str(raw.get("objective")))
            errors, precision, max_rates = raw.get("errors"), raw.get("precision"), raw.get("max_rates")
            return cls(found.statistic, found.limit_ms,
                       errors=float(errors) if isinstance(errors, (int, float)) else DEFAULT_ERRORS,
                       precision=float(precision) if isinstance(precision, (int, float)) else DEFAULT_PRECISION,
                       max_rates=int(max_rates) if isinstance(max_rates, int) else DEFAULT_MAX_RATES)
        except (UsageError, ValueError):
            return None


def needed(objective: Objective) -> int:
    """The transactions a point needs for its statistic to be judged (TAIL_TRANSACTIONS
    above a percentile, AVERAGE_TRANSACTIONS for an average)."""
    if objective.statistic == "avg":
        return AVERAGE_TRANSACTIONS
    share = float(objective.statistic.removeprefix("p").replace("999", "99.9")) / 100
    return math.ceil(round(TAIL_TRANSACTIONS / (1 - share), 6))


def _ms(value: float) -> str:
    return f"{value:g}"


def parse(text: str) -> Objective:
    """'p99=10ms' (also p50, p90, p95, p99.9, avg; us, ms or s) -> its Objective."""
    m = _OBJECTIVE.match(text)
    if m is None:
        raise UsageError(f"--slo {text!r}: expected a latency statistic and its limit, e.g. p99=10ms "
                         "(p50, p90, p95, p99, p99.9 or avg; us, ms or s)")
    stat = m["stat"].lower().replace("p99.9", "p999")
    limit = float(m["value"]) * _UNIT_MS[m["unit"].lower()]
    if not 0 < limit <= 3_600_000:
        raise UsageError(f"--slo {text!r}: the limit must be above 0 and at most an hour")
    return Objective(stat, limit)


def rate_text(rate: float, whole: bool = False) -> str:
    """An offered rate as the tool option takes it and the configuration key keeps it:
    a whole number of TPS from 100 on, one decimal below; a whole number, at least 1,
    for a tool whose option takes no other (`whole`: sysbench --rate, where 0 is no
    limit at all)."""
    if whole:
        return str(max(1, round(rate)))
    return str(round(rate)) if rate >= 100 else f"{rate:.1f}"


def offering(options: Iterable[tuple[str, str]], rate: str) -> tuple[tuple[str, str], ...]:
    """A point's options (sorted pairs, as a PointSpec keeps them) with the offered rate
    `rate` (the tool option's text: rate_text, or a share of it) in place of any other."""
    return tuple(sorted({**dict(options), RATE_OPTION: rate}.items()))


def offered(options: Mapping[str, JSON] | Iterable[tuple[str, str]]) -> float | None:
    """The offered rate of a point's options (None: a closed-loop point)."""
    found = dict(options).get(RATE_OPTION)
    try:
        return float(str(found)) if found is not None else None
    except ValueError:
        return None


# ------------------------------------------------------------------ judging a point


@dataclass(frozen=True)
class Judged:
    """One open-loop point against an objective: what it achieved, its latency
    statistic and error share, whether it meets the objective and why (not)."""

    offered: float
    achieved: float | None
    latency_ms: float | None
    errors: float | None
    meets: bool
    why: str


@dataclass(frozen=True)
class Figures:
    """What judging a point reads of it (a stored point or one just measured)."""

    ok: bool
    duration_s: float
    tps: float | None
    transactions: int | None
    failed: int | None
    skipped: int | None
    latency: Mapping[str, float | None]  # STATISTICS' field names -> ms
    error: str | None = None
    errors: int | None = None  # errors the tool counted and went on after (sysbench's ignored errors)


class _Latencies(Protocol):
    """The latency fields a point holds (a Measurement, a StoredPoint)."""

    @property
    def latency_p50_ms(self) -> float | None: ...
    @property
    def latency_p90_ms(self) -> float | None: ...
    @property
    def latency_p95_ms(self) -> float | None: ...
    @property
    def latency_p99_ms(self) -> float | None: ...
    @property
    def latency_p999_ms(self) -> float | None: ...
    @property
    def latency_avg_ms(self) -> float | None: ...


class Judgeable(_Latencies, Protocol):
    """What judging reads of a stored point (a StoredPoint, or a summary's point:
    records.Summarised)."""

    @property
    def status(self) -> str: ...
    @property
    def duration_s(self) -> int: ...
    @property
    def tps(self) -> float | None: ...
    @property
    def transactions(self) -> int | None: ...
    @property
    def failed_transactions(self) -> int | None: ...
    @property
    def details(self) -> JSONObject: ...
    @property
    def error(self) -> str | None: ...
    @property
    def errors(self) -> int | None: ...


def _latency(of: _Latencies) -> dict[str, float | None]:
    return {name: getattr(of, name) for name in STATISTICS.values()}


# Where a point's details keep the transactions a rate-limited run skipped (pgbench -L).
SKIPPED = "skipped_transactions"


def _skipped(details: Mapping[str, JSON]) -> int | None:
    found = details.get(SKIPPED)
    return found if isinstance(found, int) and not isinstance(found, bool) else None


def of_result(result: PointResult) -> Figures:
    """What judging reads of a point just measured."""
    m = result.measurement
    if m is None:
        return Figures(False, result.spec.duration_s, None, None, None, None, {}, result.error)
    return Figures(result.ok, result.spec.duration_s, m.tps, m.transactions, m.failed_transactions,
                   _skipped(m.details), _latency(m), result.error, m.errors)


def of_point(row: Judgeable) -> Figures:
    """What judging reads of a stored point."""
    return Figures(row.status == "ok", row.duration_s, row.tps, row.transactions, row.failed_transactions,
                   _skipped(row.details), _latency(row), row.error, row.errors)


def carried_floor(rate: float, duration_s: float) -> float:
    """The least throughput that carried an offered `rate` over `duration_s` seconds:
    ACHIEVED of it, or short by no more than POISSON_SIGMAS of the schedule's noise."""
    shortfall = POISSON_SIGMAS * math.sqrt(rate / duration_s) if duration_s > 0 else 0.0
    return min(ACHIEVED * rate, rate - shortfall)


def judge(objective: Objective, rate: float, point: Figures) -> Judged:
    """Whether a point offered `rate` met the objective, and why in a few words."""
    if not point.ok or point.tps is None:
        return Judged(rate, None, None, None, False, f"failed: {point.error or 'no throughput'}")
    stat = point.latency.get(STATISTICS[objective.statistic])
    done = point.transactions or 0
    lost = (point.failed or 0) + (point.skipped or 0) + (point.errors or 0)
    errors = lost / (done + lost) if done + lost else None
    missed = []
    if point.tps < carried_floor(rate, point.duration_s):
        missed.append(f"achieved {point.tps:,.0f} of {rate:,.0f} TPS offered ({point.tps / rate:.1%})")
    if done < needed(objective):
        missed.append(f"{done:,} transactions: too few for a {_name(objective)} (at least {needed(objective):,}; "
                      "a longer --duration)")
    elif stat is None:
        missed.append(f"no {objective.statistic} latency (the per-transaction log is needed)")
    elif stat > objective.limit_ms:
        missed.append(f"{_name(objective)} {stat:.3g} ms > {_ms(objective.limit_ms)} ms")
    if errors is not None and errors > objective.errors:
        missed.append(f"{errors:.2%} of transactions failed, skipped or in error (budget {objective.errors:.2%})")
    if missed:
        return Judged(rate, point.tps, stat, errors, False, "; ".join(missed))
    assert stat is not None
    return Judged(rate, point.tps, stat, errors, True,
                  f"{_name(objective)} {stat:.3g} ms <= {_ms(objective.limit_ms)} ms at {point.tps:,.0f} TPS")


def _name(objective: Objective) -> str:
    return "p99.9" if objective.statistic == "p999" else objective.statistic


def rate_meets(judged: Sequence[Judged]) -> bool:
    """A rate meets the objective when every run of it did."""
    return bool(judged) and all(j.meets for j in judged)


# ------------------------------------------------------------------ the search


def bracket(tried: Mapping[float, Sequence[Judged]]) -> tuple[float | None, float | None]:
    """(the highest rate that met the objective below the lowest that missed it, that
    lowest): a rate that met above one that missed (noise) does not count."""
    missed = [r for r, j in tried.items() if not rate_meets(j)]
    hi = min(missed) if missed else None
    met = [r for r, j in tried.items() if rate_meets(j) and (hi is None or r < hi)]
    return (max(met) if met else None), hi


@dataclass
class Search:
    """The search of one point (a workload at a level, in one session): first the
    closed-loop throughput, then offered rates, FIRST_SHARE of it first; up by STEP_UP
    (or to the closed-loop figure) while every rate meets, halving while none does,
    then the geometric middle of the bracket until it is within the precision, at most
    max_rates rates."""

    objective: Objective
    closed: list[float] = field(default_factory=list)  # the closed-loop runs' throughput
    closed_failed: bool = False
    tried: dict[float, list[Judged]] = field(default_factory=dict)
    duration_s: float | None = None  # a point's; no rate is offered that gives too few transactions to judge
    whole_rates: bool = False  # the tool's rate option takes whole TPS only (rate_text)

    def add(self, judged: Judged) -> None:
        self.tried.setdefault(judged.offered, []).append(judged)

    @property
    def closed_tps(self) -> float | None:
        return sum(self.closed) / len(self.closed) if self.closed else None

    def bracket(self) -> tuple[float | None, float | None]:
        return bracket(self.tried)

    def next_rate(self) -> float | None:
        """The next rate to offer; None when the search is done (why: `done`)."""
        return self._step()[0]

    def done(self) -> str | None:
        """Why the search ends, or None while it goes on."""
        return self._step()[1]

    def _step(self) -> tuple[float | None, str | None]:
        closed = self.closed_tps
        if closed is None or closed <= 0:
            return None, "no closed-loop throughput to start from" if self.closed_failed or self.closed else \
                "the closed-loop point is not measured yet"
        lo, hi = self.bracket()
        if lo is not None and hi is not None and hi / lo - 1 <= self.objective.precision:
            return None, f"bracketed within {hi / lo - 1:.1%}"
        if len(self.tried) >= self.objective.max_rates:
            return None, f"stopped at {self.objective.max_rates} rates (the most a search tries)"
        if lo is None and hi is None:
            return self._new(FIRST_SHARE * closed)
        if lo is None:
            assert hi is not None
            if hi / 2 < LOWEST_SHARE * closed:
                return None, f"no rate met the objective (down to {rate_text(hi)} TPS)"
            if self.duration_s and hi / 2 * self.duration_s < needed(self.objective):
                return None, (f"no rate met the objective down to {rate_text(hi)} TPS, and a lower one gives a "
                              f"{self.duration_s:g} s point too few transactions for its {_name(self.objective)} "
                              "(a longer --duration)")
            return self._new(hi / 2)
        if hi is None:
            return self._new(closed if lo < closed * (1 - self.objective.precision) else lo * STEP_UP)
        if hi / lo - 1 <= self.objective.precision:
            return None, f"bracketed within {hi / lo - 1:.1%}"
        return self._new(math.sqrt(lo * hi))

    def _new(self, rate: float) -> tuple[float | None, str | None]:
        step = float(rate_text(rate, self.whole_rates))
        if step in self.tried or step <= 0:
            return None, "bracketed as finely as the rate's rounding allows"
        return step, None


# ------------------------------------------------------------------ the capacity


@dataclass(frozen=True)
class SessionCapacity:
    """One session's result: the highest rate that met the objective with nothing
    below it missed (met_by), what it achieved (tps), and the lowest rate that missed
    (failed_at); tps None with the reason where no rate met."""

    session: int
    tps: float | None
    met_by: float | None
    failed_at: float | None
    rates: int
    reason: str | None = None


@dataclass(frozen=True)
class Capacity:
    """A configuration's capacity at an objective over its sessions: the mean of the
    sessions' capacities, its interval between sessions (None with one session), the
    bracket (the least met_by and the greatest failed_at of the sessions: what every
    session's bracket lies within), or None with the reason."""

    slo: str
    tps: float | None
    ci_low: float | None
    ci_high: float | None
    met_by: float | None
    failed_at: float | None
    sessions: tuple[SessionCapacity, ...]
    reason: str | None = None
    estimate: Estimate | None = None  # over sessions, for comparisons (stats/sessions.py)

    def as_json(self) -> JSONObject:
        return {"slo": self.slo, "tps": self.tps, "ci_low": self.ci_low, "ci_high": self.ci_high,
                "met_by": self.met_by, "failed_at": self.failed_at,
                "sessions": [{"session": s.session, "tps": s.tps, "met_by": s.met_by, "failed_at": s.failed_at,
                              "rates": s.rates, **({"reason": s.reason} if s.reason else {})}
                             for s in self.sessions],
                "reason": self.reason}


@dataclass(frozen=True)
class RatePoint:
    """A stored open-loop point, judged: its session and its Judged."""

    session: int
    judged: Judged


def of_session(session: int, points: Sequence[Judged]) -> SessionCapacity:
    """One session's capacity from its judged open-loop points."""
    tried: dict[float, list[Judged]] = {}
    for judged in points:
        tried.setdefault(judged.offered, []).append(judged)
    lo, hi = bracket(tried)
    rates = len(tried)
    if lo is None:
        lowest = min(tried) if tried else None
        why = f"no offered rate met the objective (the lowest, {rate_text(lowest)} TPS: " \
              f"{next(j.why for j in tried[lowest] if not j.meets)})" if lowest is not None else \
            "no offered rate measured"
        return SessionCapacity(session, None, None, hi, rates, why)
    achieved = [j.achieved for j in tried[lo] if j.achieved is not None]
    reason = None if hi is not None else f"not bracketed above: every rate tried met it (up to {rate_text(lo)} TPS)"
    return SessionCapacity(session, sum(achieved) / len(achieved), lo, hi, rates, reason)


def capacity(objective: Objective, points: Iterable[RatePoint]) -> Capacity:
    """A configuration's capacity from its open-loop points (any sessions)."""
    by_session: dict[int, list[Judged]] = {}
    for p in points:
        by_session.setdefault(p.session, []).append(p.judged)
    found = tuple(of_session(s, by_session[s]) for s in sorted(by_session))
    values = [(s.session, s.tps) for s in found if s.tps is not None]
    if not values:
        reasons = [s.reason for s in found if s.reason]
        return Capacity(objective.text, None, None, None, None, None, found,
                        reasons[0] if reasons else "no offered rate measured")
    group = sessions.of((s, v) for s, v in values if v is not None)
    assert group is not None
    est = sessions.estimate(group)
    interval = est.interval()
    # (No capacity is below nothing: a t interval of two sessions far apart can reach under 0.)
    low, high = (max(0.0, interval[0]), interval[1]) if interval is not None else (None, None)
    met = [s.met_by for s in found if s.met_by is not None]
    failed = [s.failed_at for s in found if s.failed_at is not None]
    unmet = len(found) - len(values)
    reason = None
    if unmet:
        reason = f"{unmet} of {len(found)} sessions met the objective at no rate: the capacity is of the others"
    elif any(s.failed_at is None for s in found):
        reason = next(s.reason for s in found if s.failed_at is None)
    return Capacity(objective.text, est.mean, low, high, min(met), max(failed) if failed else None, found, reason,
                    est)


def closed_loop(config: Mapping[str, JSON]) -> JSONObject:
    """A point's configuration key without its offered rate: the key of the closed-loop
    point whose search it is a step of (itself, for a closed-loop point)."""
    options = config.get("options")
    if isinstance(options, dict) and RATE_OPTION in options:
        return {**config, "options": {k: v for k, v in options.items() if k != RATE_OPTION}}
    return dict(config)


def search_key(config: Mapping[str, JSON]) -> str:
    """The digest of closed_loop(config): what groups a search's points."""
    return configkey.digest(closed_loop(config))


def planned_rates(objective: Objective) -> int:
    """The offered rates a search typically tries (`study check`'s estimate): the first
    rate, which misses, and half of it, which meets, then halving the bracket between
    them (a factor of 2) until it is within the precision; at most max_rates. Where the
    first rate meets, the bracket is 1 / FIRST_SHARE wide and a search takes two rates
    fewer; where half of it misses too, one or two more (bench/capacity-search measured
    10 a search at 2 % on a busy 2-CPU machine, the simulation 7.6)."""
    halvings = math.ceil(math.log2(math.log(2.0) / math.log1p(objective.precision)))
    return min(objective.max_rates, 2 + max(0, halvings))
