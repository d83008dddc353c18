"""A report's on-CPU profiles per level: every profiled point of one label (as the
report names its series: a label's configurations apart), engine, workload and level
pooled into one profile, and the differential of each label's pool against the
baseline's at the same level. What the HTML report and Decide draw (report/profileview.py)
and what the Markdown and JSON reports list.

Pooled as `compare` pools a level's profiles (stats/profiles.pooled_differential): each
point's samples over its own frequency are CPU seconds, summed over the pool's points,
over the transactions they committed summed: microseconds a transaction. A point
without transactions (nothing to divide by), failed, or of an --slo search (no level's)
is left out of every pool.

`profiled` picks the points from the report's analysed points (no store read); `read`
reads their stacks in one go."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from dbarena.interfaces import ResultStore
from dbarena.records import Summarised, JSONObject
from dbarena.stats import profiles

__all__ = ["Key", "Profiled", "Pool", "LevelProfile", "ProfileDifference", "profiled", "read", "summaries",
           "differences", "TOP", "CHANGES"]

# (engine, workload, label as the report names its series, threads)
Key = tuple[str, str, str, int]
# Key -> the pool's points: (point id, transactions committed), ids ascending.
Profiled = dict[Key, tuple[tuple[int, float], ...]]

# How many functions the Markdown and JSON reports name a pool by, and a differential.
TOP = 10
CHANGES = 10


def profiled(points: Iterable[Summarised]) -> Profiled:
    """The profiled points of each level that can be pooled: ok, closed-loop, with a
    profile and transactions."""
    found: dict[Key, list[tuple[int, float]]] = {}
    for p in points:
        if p.status == "ok" and p.target_tps is None and p.profile and p.transactions:
            found.setdefault((p.engine, p.workload, p.label, p.threads), []).append((p.point_id, float(p.transactions)))
    return {key: tuple(sorted(members)) for key, members in sorted(found.items())}


@dataclass(frozen=True)
class Pool:
    """A level's pooled profile: each point's stacks, frequency and transactions (as
    profiles.pooled_differential takes them)."""

    key: Key
    parts: tuple[tuple[Mapping[str, int], float, float], ...]
    point_ids: tuple[int, ...]

    @property
    def samples(self) -> int:
        return sum(profiles.samples(stacks) for stacks, _, _ in self.parts)

    @property
    def transactions(self) -> float:
        return sum(committed for _, _, committed in self.parts)

    def counts(self) -> dict[str, int]:
        """The points' samples, summed stack by stack."""
        return profiles.merged(stacks for stacks, _, _ in self.parts)

    def us_per_tx(self) -> dict[str, float]:
        """Each stack's CPU microseconds a transaction over the pool."""
        out: dict[str, float] = {}
        for stacks, frequency_hz, _ in self.parts:
            for stack, count in stacks.items():
                out[stack] = out.get(stack, 0.0) + count * 1e6 / frequency_hz
        total = self.transactions
        return {stack: us / total for stack, us in out.items()}

    def frequencies(self) -> list[float]:
        return sorted({frequency_hz for _, frequency_hz, _ in self.parts})


def read(store: ResultStore, chosen: Profiled) -> list[Pool]:
    """The pools of `chosen`'s levels, their stacks read in one go (a point whose
    stacks the store no longer has, or whose frequency is unknown, left out)."""
    wanted = sorted({point_id for members in chosen.values() for point_id, _ in members})
    found = store.profiles(wanted, folded=True) if wanted else {}
    out = []
    for key, members in chosen.items():
        parts, ids = [], []
        for point_id, committed in members:
            profile = found.get(point_id)
            if profile is None or profile.folded is None:
                continue
            frequency_hz = float(profile.frequency_hz or 0)
            if frequency_hz <= 0:
                continue
            parts.append((profiles.parse_folded(profile.folded), frequency_hz, committed))
            ids.append(point_id)
        if parts:
            out.append(Pool(key, tuple(parts), tuple(ids)))
    return out


@dataclass(frozen=True)
class LevelProfile:
    """A pool's summary as the Markdown and JSON reports give it: its points, their
    samples and transactions, its on-CPU time a transaction, and the functions that took
    most of it themselves (self time): {function, share of the pool's samples, us_per_tx}."""

    engine: str
    workload: str
    label: str
    threads: int
    point_ids: list[int]
    samples: int
    transactions: float
    us_per_tx: float
    top: list[JSONObject]

    def as_json(self) -> JSONObject:
        return {"engine": self.engine, "workload": self.workload, "label": self.label, "threads": self.threads,
                "point_ids": list(self.point_ids), "samples": self.samples, "transactions": self.transactions,
                "us_per_tx": self.us_per_tx, "top": list(self.top)}


def _summary(pool: Pool, limit: int) -> LevelProfile:
    counts = pool.counts()
    total = profiles.samples(counts)
    own_samples: Counter[str] = Counter()
    own_us: dict[str, float] = {}
    for stack, us in pool.us_per_tx().items():
        name = stack.rsplit(";", 1)[-1]
        own_us[name] = own_us.get(name, 0.0) + us
    for stack, count in counts.items():
        own_samples[stack.rsplit(";", 1)[-1]] += count
    ranked = sorted(own_samples.items(), key=lambda item: (-item[1], item[0]))[:limit]
    top: list[JSONObject] = [{"function": name, "share": count / total if total else 0.0, "us_per_tx": own_us[name]}
                             for name, count in ranked]
    engine, workload, label, threads = pool.key
    return LevelProfile(engine, workload, label, threads, list(pool.point_ids), pool.samples, pool.transactions,
                        sum(own_us.values()), top)


def summaries(pools: Sequence[Pool], limit: int = TOP) -> list[LevelProfile]:
    return [_summary(pool, limit) for pool in pools]


@dataclass(frozen=True)
class ProfileDifference:
    """At one level, the functions whose CPU time a transaction (self time) changed most
    from the baseline's pool (a) to a label's (b), largest change first (Change.as_json
    each), and how many points and samples each side pooled."""

    engine: str
    workload: str
    threads: int
    a: str
    b: str
    a_points: int
    b_points: int
    a_samples: int
    b_samples: int
    changes: list[JSONObject]

    def as_json(self) -> JSONObject:
        return {"engine": self.engine, "workload": self.workload, "threads": self.threads, "a": self.a, "b": self.b,
                "a_points": self.a_points, "b_points": self.b_points, "a_samples": self.a_samples,
                "b_samples": self.b_samples, "changes": list(self.changes)}


def differences(pools: Sequence[Pool], baseline: str | None, compared: Callable[[str, str, str, int], bool],
                limit: int = CHANGES) -> list[ProfileDifference]:
    """Each label's pool against the baseline's at the same engine, workload and level,
    where the report compared them (`compared(engine, workload, label, threads)`:
    data.Report.compared; not where the configurations differ)."""
    if baseline is None:
        return []
    base = {(p.key[0], p.key[1], p.key[3]): p for p in pools if p.key[2] == baseline}
    out = []
    for pool in pools:
        engine, workload, label, threads = pool.key
        other = base.get((engine, workload, threads))
        if other is None or label == baseline or not compared(engine, workload, label, threads):
            continue
        changes = profiles.pooled_differential(other.parts, pool.parts, limit=limit)
        if changes:
            out.append(ProfileDifference(engine, workload, threads, baseline, label, len(other.parts), len(pool.parts),
                                         other.samples, pool.samples, [dict(c.as_json().items()) for c in changes]))
    return out

