"""`dbarena bisect`'s search, pure: which of the differences between two configurations
A and B makes B faster or slower, found by measuring configurations in between.

The differences are named (`Difference`: "setting synchronous_commit on -> off"), each
settable here or not (another machine's CPU, the kernel: listed, never searched). A
`Configuration` is A's with some of B's changes applied; a `Measurer` measures one for
a number of sessions and returns each session's figure (stats/sessions.py: a session is
the unit of replication; higher is better: speed, so a caller turns seconds into their
inverse).

Every step is a verdict over sessions (estimators.over_sessions, one machine: the two
sides' spreads pooled), never over the runs of one session. A configuration C is judged
against both ends: it is *like B* when it differs from A in B's direction (p < 0.05) and
not from B (or lies beyond B), *like A* when it differs from B towards A and not from A,
*a part* when it lies significantly between them, *the other way* when it moves away
from B, and *unresolved* when neither comparison is significant. An unresolved step
measures C again, a session at a time, up to `max_sessions`, within the budget.

The search first reproduces the difference (A and B measured alternately, a session
each, until each has `sessions`; more while inconclusive): no significant difference
and it stops, saying so with the interval. Then delta debugging (Zeller and
Hildebrandt, "Simplifying and Isolating Failure-Inducing Input", IEEE TSE 2002: ddmin)
over the unordered settable changes, where a test "fails" when A with those changes is
like B: it finds a 1-minimal set of changes that accounts for the difference (no change
of it can be left out). A minimal set of two or more is then looked at change by change
(each alone: "only together: X and Y" when none alone moves A, else each one's part).
Where the minimal set holds an ordered axis (a list of server binaries built from
successive commits, given in order from A's to B's), that axis is bisected as `git
bisect` does, the rest of the set applied: the first value like B, and the last before
it. The answer: the set, its change against A with its interval and its share of the
whole difference (on the log scale), and the other changes together against B.

The budget is machine time: no measurement starts that would take the search past it
(a session's time is the caller's estimate until sessions have been measured, then
their mean). A search the budget stops says how far it got: the set it had narrowed the
difference to (a set that reproduces it, not yet minimal).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from dbarena.records import JSON, JSONObject
from dbarena.stats import estimators, sessions
from dbarena.stats.estimate import Estimate
from dbarena.stats.estimators import Comparison

# A step's outcome: where the configuration lies between A and B.
LIKE_B, LIKE_A, PART, OTHER_WAY, UNRESOLVED = "like B", "like A", "a part", "the other way", "unresolved"
# How the search ended.
FOUND, NOT_REPRODUCED, BUDGET, NOTHING_SETTABLE = "found", "not reproduced", "budget reached", "nothing settable"

Value = str | None  # a difference's value on one side, as text; None: not set (the default)


@dataclass(frozen=True)
class Difference:
    """One thing A and B differ in: its name ("setting work_mem", "bindir", "kernel"),
    each side's value, and whether it can be set here (why not, where not)."""

    name: str
    a: Value
    b: Value
    settable: bool = True
    why: str | None = None  # why it cannot be set here

    def words(self) -> str:
        return f"{self.name} {_shown(self.a)} -> {_shown(self.b)}"

    def as_json(self) -> JSONObject:
        return {"name": self.name, "a": self.a, "b": self.b, "settable": self.settable, "why": self.why}


def _shown(value: Value) -> str:
    return "default" if value is None else value


@dataclass(frozen=True)
class Configuration:
    """A's configuration with these of B's changes applied: (name, value) pairs, sorted
    by name; () is A itself. A value may be one of an ordered axis between A's and B's."""

    changes: tuple[tuple[str, Value], ...] = ()

    @classmethod
    def of(cls, changes: dict[str, Value]) -> Configuration:
        return cls(tuple(sorted(changes.items())))

    @property
    def names(self) -> frozenset[str]:
        return frozenset(name for name, _ in self.changes)

    def words(self) -> str:
        return ", ".join(f"{n} {_shown(v)}" for n, v in self.changes) or "A as it is"


class Measurer(Protocol):
    """Measures a configuration for `sessions` more sessions; each one's figure, in
    order (fewer where some failed; higher is better)."""

    def __call__(self, configuration: Configuration, sessions: int) -> Sequence[float]: ...


@dataclass(frozen=True)
class Axis:
    """An ordered axis of one settable difference: its values in order, A's first and B's
    last (`git bisect`'s commits: server binaries built from successive commits)."""

    name: str
    values: tuple[str, ...]


@dataclass(frozen=True)
class Judged:
    """A configuration judged against A and B: its outcome, each comparison (the
    configuration as b, the end as a), and the sessions behind it."""

    outcome: str
    vs_a: Comparison
    vs_b: Comparison
    sessions: int


@dataclass(frozen=True)
class Step:
    """One step of the search as it was taken: what it measured and how it came out."""

    number: int  # 0: the reproduction of A against B
    what: str  # "reproduce", "ddmin", "alone", "ordered"
    configuration: Configuration
    judged: Judged | None
    sessions: int

    def as_json(self) -> JSONObject:
        j = self.judged
        return {"step": self.number, "what": self.what, "changes": {n: v for n, v in self.configuration.changes},
                "sessions": self.sessions, "outcome": j.outcome if j else None,
                "against_a_pct": _pct(j.vs_a.ratio) if j else None,
                "against_b_pct": _pct(j.vs_b.ratio) if j else None}


def _pct(ratio: float | None) -> float | None:
    return None if ratio is None or not math.isfinite(ratio) else round((ratio - 1) * 100, 3)


class BudgetReached(Exception):
    """No measurement may start within the budget left."""


def estimate(values: Sequence[float]) -> Estimate:
    """Session figures as an estimate over sessions (stats/sessions.py)."""
    return sessions.estimate(sessions.Sessions(means=tuple(values), runs=tuple(1 for _ in values)))


def compared(a: Sequence[float], b: Sequence[float]) -> Comparison:
    """b against a over their sessions, on one machine (the spreads pooled)."""
    return estimators.over_sessions(estimate(a), estimate(b), one_host=True)


def _sign(ratio: float) -> int:
    return 0 if ratio == 1 or not math.isfinite(ratio) or ratio <= 0 else (1 if ratio > 1 else -1)


def judge(a: Sequence[float], b: Sequence[float], c: Sequence[float]) -> Judged:
    """Where C lies between A and B (the module's docstring), from their sessions."""
    vs_a, vs_b = compared(a, c), compared(b, c)
    direction = _sign(_ratio(a, b))
    toward_b = vs_a.significant and _sign(vs_a.ratio) == direction
    away_a = vs_a.significant and _sign(vs_a.ratio) == -direction
    toward_a = vs_b.significant and _sign(vs_b.ratio) == -direction
    if toward_b and not toward_a:
        outcome = LIKE_B
    elif toward_b and toward_a:
        outcome = PART
    elif away_a:
        outcome = OTHER_WAY
    elif toward_a:
        outcome = LIKE_A
    else:
        outcome = UNRESOLVED
    return Judged(outcome, vs_a, vs_b, len(c))


def _ratio(a: Sequence[float], b: Sequence[float]) -> float:
    """The ratio of the means over sessions, b / a."""
    ma, mb = math.fsum(a) / len(a), math.fsum(b) / len(b)
    return mb / ma if ma > 0 else math.inf


@dataclass(frozen=True)
class Answer:
    """What the search found (its `status`, one of FOUND ...), and everything behind it."""

    status: str
    differences: tuple[Difference, ...]
    reproduced: Comparison | None  # B against A
    cause: tuple[Difference, ...] = ()  # the smallest set found (with BUDGET: the set reached so far)
    effect: Comparison | None = None  # A with the cause against A
    share: float | None = None  # the cause's share of the difference, on the log scale (1 = all of it)
    rest: Comparison | None = None  # B against A with the cause: the other changes together
    together_only: bool | None = None  # a cause of two or more whose changes alone do not move A
    alone: tuple[tuple[Difference, Judged], ...] = ()  # each change of a cause of two or more, alone
    ordered: tuple[str, Value, Value] | None = None  # an axis bisected: its name, the last value like A, the first like B
    steps: tuple[Step, ...] = ()
    sessions: int = 0  # sessions measured by this search (not those read back on --resume)
    seconds: float = 0.0
    note: str | None = None

    @property
    def unsettable(self) -> tuple[Difference, ...]:
        return tuple(d for d in self.differences if not d.settable)

    @property
    def settable(self) -> tuple[Difference, ...]:
        return tuple(d for d in self.differences if d.settable)

    def lines(self) -> list[str]:
        """The answer in words, a line each: what it found, then what it could not set."""
        out: list[str] = []
        if self.reproduced is not None:
            out.append(f"reproduced here: B against A {_change(self.reproduced)}"
                       if self.status != NOT_REPRODUCED else
                       f"does not reproduce here: B against A {_change(self.reproduced)}: {self.reproduced.text}")
        if self.status == NOTHING_SETTABLE:
            out.append("nothing to search: no difference between A and B can be set here")
        if self.cause and self.status in (FOUND, BUDGET):
            names = " and ".join(d.words() for d in self.cause)
            if self.status == BUDGET:
                out.append(f"the budget was reached: the difference is narrowed to {len(self.cause)} change(s) "
                           f"(not yet the fewest): {names}")
            elif self.together_only:
                out.append(f"only together: {names}")
            effect = f": {_change(self.effect)}" if self.effect is not None else ""
            share = f"; {self.share * 100:.0f} % of the difference" if self.share is not None else ""
            if self.status != BUDGET:
                out.append(f"{names}{effect}{share}")
            for d, j in self.alone:
                out.append(f"  {d.words()} alone: {_change(j.vs_a)} ({j.outcome})")
            if self.ordered is not None:
                name, before, first = self.ordered
                out.append(f"  {name}: the change comes between {_shown(before)} (like A) and {_shown(first)} "
                           "(like B)")
            others = len(self.settable) - len(self.cause)
            if self.rest is not None and others > 0:
                out.append(f"the other {others} change{'s' if others > 1 else ''} together: {_rest(self.rest)}")
        if self.note:
            out.append(self.note)
        for d in self.unsettable:
            out.append(f"not settable here: {d.words()}{f' ({d.why})' if d.why else ''}")
        return out

    def as_json(self) -> JSONObject:
        def comparison(c: Comparison | None) -> JSONObject | None:
            if c is None:
                return None
            return {"change_pct": _pct(c.ratio), "ci_low_pct": _pct(c.ci_low), "ci_high_pct": _pct(c.ci_high),
                    "p_value": c.p_value, "verdict": c.verdict.value if c.verdict else None, "text": c.text}

        return {"status": self.status, "reproduced": comparison(self.reproduced),
                "cause": [d.as_json() for d in self.cause], "effect": comparison(self.effect),
                "share": self.share, "rest": comparison(self.rest), "together_only": self.together_only,
                "alone": [{"difference": d.as_json(), "outcome": j.outcome, "against_a": comparison(j.vs_a)}
                          for d, j in self.alone],
                "ordered": {"name": self.ordered[0], "last_like_a": self.ordered[1], "first_like_b": self.ordered[2]}
                if self.ordered else None,
                "differences": [d.as_json() for d in self.differences],
                "unsettable": [d.as_json() for d in self.unsettable],
                "steps": [s.as_json() for s in self.steps], "sessions": self.sessions,
                "seconds": round(self.seconds, 1), "note": self.note, "lines": list[JSON](self.lines())}


def _change(c: Comparison | None) -> str:
    """'+412.0 % (95 % CI +380.1 % to +446.9 %)', or the change without an interval."""
    if c is None:
        return "-"
    interval = (f" (95 % CI {(c.ci_low - 1) * 100:+.1f} % to {(c.ci_high - 1) * 100:+.1f} %)"
                if c.ci_low is not None and c.ci_high is not None else " (no interval)")
    return f"{(c.ratio - 1) * 100:+.1f} %{interval}"


def _rest(c: Comparison) -> str:
    """The other changes together (B against A with the cause), in words."""
    verdict = c.verdict.value if c.verdict is not None else "no verdict"
    change = f"{(c.ratio - 1) * 100:+.1f} %"
    if c.ci_low is not None and c.ci_high is not None:
        change += f", 95 % CI {(c.ci_low - 1) * 100:+.1f} % to {(c.ci_high - 1) * 100:+.1f} %"
    if verdict in ("faster", "slower"):
        return f"a difference of their own, {verdict}: {change}"
    return f"{verdict} ({change})"


@dataclass
class Search:
    """One search (the module's docstring). `measure`: the Measurer; `sessions`: a step's
    sessions; `max_sessions`: at most this many of one configuration while its step is
    unresolved; `budget_s`: the machine time it may take (None: unbounded);
    `session_s`: a session's estimated machine time, until some are measured; `known`:
    session figures measured before (--resume), used before anything is measured."""

    measure: Measurer
    sessions: int = sessions.MIN_SESSIONS
    max_sessions: int = 6
    budget_s: float | None = None
    session_s: float = 60.0
    clock: Callable[[], float] = time.monotonic
    known: dict[Configuration, list[float]] = field(default_factory=dict)
    say: Callable[[str], None] = lambda line: None

    def __post_init__(self) -> None:
        self.values: dict[Configuration, list[float]] = {k: list(v) for k, v in self.known.items()}
        self.steps: list[Step] = []
        self.measured = 0  # sessions measured by this search
        self.spent = 0.0  # their machine time
        self.judged: dict[Configuration, Judged] = {}

    # ------------------------------------------------------------------ measuring

    def _take(self, configuration: Configuration, count: int) -> None:
        """`count` more sessions of the configuration, within the budget (BudgetReached)."""
        each = self.spent / self.measured if self.measured else self.session_s
        if self.budget_s is not None and self.spent + count * each > self.budget_s:
            raise BudgetReached()
        began = self.clock()
        got = list(self.measure(configuration, count))
        self.spent += self.clock() - began
        self.measured += count
        self.values.setdefault(configuration, []).extend(got)

    def _fill(self, configuration: Configuration, count: int) -> list[float]:
        """The configuration's sessions, measured up to `count` (a session that gave no
        figure is tried again, up to max_sessions attempts in all)."""
        for _ in range(self.max_sessions):
            have = self.values.get(configuration, [])
            if len(have) >= count:
                break
            self._take(configuration, count - len(have))
        return self.values.get(configuration, [])

    # ------------------------------------------------------------------ the steps

    def reproduce(self, a: Configuration, b: Configuration) -> tuple[Comparison | None, str | None]:
        """A and B measured alternately, a session at a time, until each has `sessions`;
        then more of each while their comparison is neither significant nor "no
        difference", up to max_sessions and within the budget. B against A (None where
        a side has no figure), and why it stopped short, if it did."""
        for _ in range(self.max_sessions):
            short = [c for c in (a, b) if len(self.values.get(c, [])) < self.sessions]
            if not short:
                break
            for c in short:
                self._take(c, 1)
        if not self.values.get(a) or not self.values.get(b):
            return None, "no session of A or B gave a figure"
        why = None
        while True:
            found = compared(self.values[a], self.values[b])
            done = found.significant or (found.verdict is not None and found.verdict.value == "no difference")
            if done or min(len(self.values[a]), len(self.values[b])) >= self.max_sessions:
                break
            try:
                for c in (a, b):
                    self._take(c, 1)
            except BudgetReached:
                why = "the budget was reached while A and B were still inconclusive"
                break
        self.steps.append(Step(0, "reproduce", b, None, len(self.values[b])))
        return found, why

    def test(self, configuration: Configuration, what: str, a: Configuration, b: Configuration) -> Judged:
        """The configuration judged against A and B (measured a session at a time while
        unresolved, up to max_sessions); once judged, the same judgement."""
        if configuration in (a, b):
            raise ValueError("A and B are the ends of the search, not its steps")
        if configuration in self.judged:
            return self.judged[configuration]
        values = self._fill(configuration, self.sessions)
        judged = judge(self.values[a], self.values[b], values) if values else None
        attempts = len(values)
        while (judged is None or judged.outcome == UNRESOLVED) and attempts < self.max_sessions:
            self._take(configuration, 1)
            attempts += 1
            values = self.values.get(configuration, [])
            judged = judge(self.values[a], self.values[b], values) if values else None
        if judged is None:  # no session of it gave a figure
            nothing = compared(self.values[a], self.values[a])
            judged = Judged(UNRESOLVED, nothing, nothing, 0)
        self.judged[configuration] = judged
        self.steps.append(Step(len(self.steps), what, configuration, judged, len(values)))
        self.say(f"step {len(self.steps) - 1}: {configuration.words()}: {judged.outcome} "
                 f"(against A {_change(judged.vs_a)})")
        return judged

    # ------------------------------------------------------------------ the whole search

    def run(self, differences: Sequence[Difference], axis: Axis | None = None) -> Answer:
        """The whole search over the settable differences (the unsettable ones are
        listed in the answer, never searched); `axis`: an ordered axis of one of them."""
        diffs = tuple(differences)
        settable = [d for d in diffs if d.settable]
        if not settable:
            return self._answer(NOTHING_SETTABLE, diffs, None)
        a = Configuration()
        b = Configuration.of({d.name: d.b for d in settable})
        try:
            reproduced, why = self.reproduce(a, b)
        except BudgetReached:
            return self._answer(BUDGET, diffs, None, note="the budget was reached before A and B were measured")
        if reproduced is None or not reproduced.significant:
            return self._answer(NOT_REPRODUCED, diffs, reproduced, note=why)
        by_name = {d.name: d for d in settable}

        def config(names: Sequence[str]) -> Configuration:
            return Configuration.of({n: by_name[n].b for n in names})

        def fails(names: Sequence[str]) -> bool:
            if set(names) == set(by_name):
                return True
            if not names:
                return False
            return self.test(config(names), "ddmin", a, b).outcome == LIKE_B

        reached: list[str] = [d.name for d in settable]

        def narrowed(found: list[str]) -> None:
            reached[:] = found

        try:
            current = _ddmin(list(reached), fails, narrowed)
        except BudgetReached:
            return self._answer(BUDGET, diffs, reproduced, cause=tuple(by_name[n] for n in reached))
        cause = tuple(by_name[n] for n in current)
        whole = len(current) == len(settable)
        effect = reproduced if whole else compared(self.values[a], self.values[config(current)])
        rest = None if whole else compared(self.values[config(current)], self.values[b])
        alone: list[tuple[Difference, Judged]] = []
        together_only = None
        ordered = None
        note = None
        try:
            if len(cause) > 1:
                for d in cause:
                    alone.append((d, self.test(config([d.name]), "alone", a, b)))
                together_only = all(j.outcome == LIKE_A for _, j in alone)
            if axis is not None and axis.name in current and len(axis.values) > 2:
                ordered = self._ordered(axis, [n for n in current if n != axis.name], by_name, a, b)
        except BudgetReached:
            note = "the budget was reached before the changes of the set were looked at one by one"
        return self._answer(FOUND, diffs, reproduced, cause=cause, effect=effect, share=_share(reproduced, effect),
                            rest=rest, together_only=together_only, alone=tuple(alone), ordered=ordered, note=note)

    def _ordered(self, axis: Axis, others: list[str], by_name: dict[str, Difference], a: Configuration,
                 b: Configuration) -> tuple[str, Value, Value]:
        """`git bisect` over the axis, the other changes of the set applied: the last
        value not like B and the first like B. Unresolved values are skipped, as `git
        bisect skip` does: the next value towards the upper end is tried."""
        base = {n: by_name[n].b for n in others}
        values = list(axis.values)
        low, high = 0, len(values) - 1  # low: not like B (A's value); high: like B (B's value)
        while high - low > 1:
            middle = (low + high) // 2
            tried = middle
            outcome = UNRESOLVED
            while tried < high:
                configuration = Configuration.of({**base, axis.name: values[tried]})
                if configuration == b:
                    outcome = LIKE_B
                    break
                outcome = self.test(configuration, "ordered", a, b).outcome
                if outcome != UNRESOLVED:
                    break
                tried += 1
            if tried == high:  # every value up to the upper end unresolved: the change is among them
                break
            if outcome in (LIKE_B, PART):
                high = tried
            else:
                low = tried
        return axis.name, values[low], values[high]

    def _answer(self, status: str, diffs: tuple[Difference, ...], reproduced: Comparison | None, *,
                cause: tuple[Difference, ...] = (), effect: Comparison | None = None, share: float | None = None,
                rest: Comparison | None = None, together_only: bool | None = None,
                alone: tuple[tuple[Difference, Judged], ...] = (), ordered: tuple[str, Value, Value] | None = None,
                note: str | None = None) -> Answer:
        return Answer(status, diffs, reproduced, cause=cause, effect=effect, share=share, rest=rest,
                      together_only=together_only, alone=alone, ordered=ordered, steps=tuple(self.steps),
                      sessions=self.measured, seconds=self.spent, note=note)


def _share(whole: Comparison, part: Comparison | None) -> float | None:
    """The part's change as a share of the whole's, on the log scale (1: all of it)."""
    if part is None or whole.ratio <= 0 or part.ratio <= 0 or whole.ratio == 1:
        return None
    return math.log(part.ratio) / math.log(whole.ratio)


def _ddmin(changes: list[str], fails: Callable[[Sequence[str]], bool],
           reached: Callable[[list[str]], None]) -> list[str]:
    """Zeller's ddmin: a 1-minimal subset of `changes` for which `fails` holds (it holds
    for all of them). `reached` is told each smaller failing set as it is found, so
    that a search stopped by its budget knows how far it got."""
    n = 2
    current = list(changes)
    while len(current) >= 2:
        chunks = _split(current, n)
        reduced = False
        for chunk in chunks:
            if fails(chunk):
                current, n, reduced = chunk, 2, True
                break
        if not reduced and n > 2:
            for chunk in chunks:
                complement = [c for c in current if c not in chunk]
                if fails(complement):
                    current, n, reduced = complement, max(n - 1, 2), True
                    break
        if reduced:
            reached(list(current))
            continue
        if n >= len(current):
            break
        n = min(len(current), 2 * n)
    return current


def _split(items: list[str], n: int) -> list[list[str]]:
    """items in n chunks of nearly equal size, in order."""
    size, extra = divmod(len(items), n)
    out, start = [], 0
    for i in range(n):
        end = start + size + (1 if i < extra else 0)
        out.append(items[start:end])
        start = end
    return [chunk for chunk in out if chunk]
