"""What a store gives back, as frozen typed records: a run, a stored point, a point
with the figures derived from its series (its steady state, system view and bound), and
the summary of a level's repeats and the comparison of two such summaries.

Every view (results, compare, history, gate, the decision, the report) reads these,
never a row of its own: a field is named once here, typed once, and an answer derived
from it (store/edge.py checked each value before a record is made) is derived once,
in stats/analysis.py, before any view sees the point.

`JSON` types what is a JSON document at the edge (options, facts, the configuration
key's parts): what the store decoded, no more is known of it.

Every record is read by its attributes only, never by a field's name as a string (issue
40): a misspelt or removed field is then an error mypy finds, not a None at run time.
`as_json` is what the exports print, in the order the golden files
(tests/fixtures/golden/) hold.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from operator import attrgetter
from typing import Any, Callable, NamedTuple, Protocol, Sequence, TypeAlias, Union

JSON: TypeAlias = Union[None, bool, int, float, str, list["JSON"], dict[str, "JSON"]]
JSONObject: TypeAlias = dict[str, JSON]

__all__ = ["JSON", "JSONObject", "json_object", "StoredRun", "StoredPoint", "STORED_FIELDS", "stored_point", "AnalysedPoint", "analysed",
           "relabelled", "renamed", "DERIVED_FIELDS", "Configured", "SeriesKey", "SERIES_KEY_AT",
           "SystemSums", "MeanEstimate", "AtRate", "Interference", "LevelSummary", "LevelMeans", "ShownPoint", "StoredGroup", "LevelComparison", "RunProgress", "LivePoint", "ForgottenRun",
           "Summarised", "SummaryPoint", "SUMMARY_POINT_OWN", "SessionSummary", "LentSession"]


def json_object(value: JSON) -> JSONObject:
    """`value` where it is a JSON object, else an empty one: a part of a document (a
    run's options, its facts) that a reader looks into, absent or not an object there."""
    return value if isinstance(value, dict) else {}


@dataclass(frozen=True, slots=True)
class StoredRun:
    """A run as the store keeps it (schema.py's `runs`, in its order), its JSON columns
    decoded and its host's facts joined. Where one of its facts does not read
    (store/edge.py says which), a JSON column is an empty object and another fact None
    (dbarena_version too, NOT NULL as stored); a run whose identity does not read (its
    id, label, host, engine, target, start, status, variant, host fingerprint) is left
    out, not made."""

    id: int
    label: str
    host: str
    engine: str
    target: str
    server_version: str | None
    tool_versions: JSONObject
    options: JSONObject
    host_facts: JSONObject
    dbarena_version: str | None
    started_at: str
    ended_at: str | None
    status: str  # running | finished | interrupted | failed | imported
    target_facts: JSONObject
    price_per_hour: float | None
    study_sha256: str | None
    variant: str
    flavour: str | None
    currency: str | None
    invocation: str | None
    status_reason: str | None
    uuid: str | None
    host_fingerprint: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class StoredPoint:
    """A measured (or imported) point with its run's label, host, target and study.
    `repeat` counts from 0 as stored; `histogram`: the store holds its latency histogram
    (its percentiles over repeats are then computed, not printed: stats/repeats.py)."""

    point_id: int
    run_id: int
    label: str
    host: str
    target: str
    server_version: str | None
    engine: str
    workload: str
    threads: int
    clients: int
    duration_s: int
    repeat: int
    scale: int | None
    params: JSONObject
    status: str  # ok | failed
    error: str | None
    started_at: str
    ended_at: str
    source: JSON
    phase: str  # measured | warmup
    details: JSONObject
    variant: str
    options: JSONObject
    warmup_s: int
    config: JSONObject | None
    config_key: str | None
    study: str | None
    histogram: bool
    # What the tool printed (None where it printed no such figure).
    tps: float | None
    transactions: int | None
    qps: float | None
    queries: int | None
    failed_transactions: int | None
    retried_transactions: int | None
    retries: int | None
    errors: int | None
    reconnects: int | None
    latency_avg_ms: float | None
    latency_stddev_ms: float | None
    latency_min_ms: float | None
    latency_max_ms: float | None
    latency_p50_ms: float | None
    latency_p95_ms: float | None
    latency_p99_ms: float | None
    initial_connection_ms: float | None
    run_avg_s: float | None
    run_min_s: float | None
    run_max_s: float | None
    latency_p90_ms: float | None
    latency_p999_ms: float | None


# The figures analysis.analyse_point derives from a point's series and caches, in the
# order the exports print them (the cache's, by name).
DERIVED_FIELDS = ("cpu_busy_pct", "cpu_iowait_pct", "cv", "dips_s", "loadgen_cpu", "metric", "neighbour_cpu", "samples",
                  "server_cpu", "steady_start_s", "steady_tps", "steal_cpu", "tps_ci_high", "tps_ci_low", "trend_pct",
                  "warnings")


@dataclass(frozen=True, slots=True, kw_only=True)
class AnalysedPoint(StoredPoint):
    """A stored point with what is derived from it once, for every view: its steady
    state, its system view, the warnings on it, and its bound, derived from its stored
    server series and system samples (stats/bound.py; None for a point whose server
    was not sampled)."""

    cpu_busy_pct: float | None
    cpu_iowait_pct: float | None
    cv: float | None
    dips_s: list[float]
    loadgen_cpu: float | None
    metric: str  # stats/metric.py: tps, qps, seconds, nopm or tpmc
    # The CPUs other processes took on average over its steady state (stats/interference.py),
    # and the hypervisor's steal, in CPUs of the machine's machine_threads.
    neighbour_cpu: float | None
    samples: int  # the length of its per-second series
    server_cpu: float | None
    steady_start_s: float | None
    steady_tps: float | None
    steal_cpu: float | None
    tps_ci_high: float | None
    tps_ci_low: float | None
    trend_pct: float | None
    warnings: list[dict[str, str]]  # steadystate.Flag.as_dict of each: its code and message
    lower_is_better: bool
    adaptive: bool  # its repeats were chosen by the stopping rule (--precision)
    hardware_threads_usable: int  # what "saturated" is measured against
    machine_threads: int  # the machine's hardware threads, which its CPU shares are of
    bound: str | None
    bound_evidence: str | None
    server_figures: JSONObject | None
    # The label of the series it belongs to as stored, where a view shows it under
    # another name (a report's "label [variant]"); the stored label otherwise.
    series_label: str
    # An open-loop point's offered rate (its `rate` option: --slo's search), None for a
    # closed-loop point; and the latency objective its run searched for (stats/capacity.py's
    # Objective.to_json), None for a run without one.
    target_tps: float | None = None
    slo: JSONObject | None = None
    # The machine's context switches and disk bytes a second over its steady state, and
    # what one transaction cost (stats/efficiency.py: server CPU us, context switches, KB
    # read and written, WAL or redo bytes, buffer reads); None where it has no throughput.
    context_switches_per_s: float | None = None
    disk_read_bytes_per_s: float | None = None
    disk_write_bytes_per_s: float | None = None
    efficiency: JSONObject | None = None
    # The server's on-CPU profile of a profiled point (--profile), its summary as the
    # store keeps it beside the stacks: {samples, top: [{function, share}], frequency_hz,
    # symbols}; None for a point without one (its exports as they were before).
    profile: JSONObject | None = None

    def as_json(self) -> JSONObject:
        """The point as the exports print it: every field but the private ones, its
        `repeat` counted from 1 as every view shows it."""
        out: JSONObject = {}
        for f in fields(self):
            if f.name in _PRIVATE:
                continue
            value = getattr(self, f.name)
            if value is None and f.name in ("target_tps", "slo", "profile"):
                continue  # (a closed-loop point's exports as they were before --slo)
            out[f.name] = value + 1 if f.name == "repeat" else value
        return out


_PRIVATE = frozenset({"histogram", "series_label", "slo"})
# Fields of --slo's points and groups, cost per transaction, and a profiled point's
# profile, printed only where they hold something.
_OPEN_LOOP = frozenset({"target_tps", "capacity", "slo", "efficiency", "a_efficiency", "b_efficiency", "profile",
                        "profile_changes", "cost_difference"})
_STORED_FIELDS = tuple(f.name for f in fields(StoredPoint))
_ANALYSED_FIELDS = tuple(f.name for f in fields(AnalysedPoint))
_stored_values: Callable[[StoredPoint], tuple[Any, ...]] = attrgetter(*_STORED_FIELDS)
_analysed_values: Callable[[AnalysedPoint], tuple[Any, ...]] = attrgetter(*_ANALYSED_FIELDS)
# Each field's slot setter (a frozen record's fields are set once, here, as its generated
# __init__ sets them: object.__setattr__ on the slot).
_analysed_slots = tuple(getattr(AnalysedPoint, name).__set__ for name in _ANALYSED_FIELDS)
_stored_slots, _derived_slots = _analysed_slots[:len(_STORED_FIELDS)], _analysed_slots[len(_STORED_FIELDS):]
_set_label = _analysed_slots[_ANALYSED_FIELDS.index("label")]


STORED_FIELDS = _STORED_FIELDS  # (the order stored_point takes a point's values in)
_stored_point_slots = tuple(getattr(StoredPoint, name).__set__ for name in _STORED_FIELDS)


def stored_point(values: Sequence[Any]) -> StoredPoint:
    """A stored point from its fields' values in STORED_FIELDS' order, as the store read
    and checked them (store/edge.py), made slot by slot: StoredPoint's generated
    __init__ of 50 keyword arguments costs 3x (store.points of 10 k points, bench/serve)."""
    made = object.__new__(StoredPoint)
    for put, value in zip(_stored_point_slots, values, strict=True):
        put(made, value)
    return made


def analysed(point: StoredPoint | Sequence[Any], label: str | None = None, *, cpu_busy_pct: float | None, cpu_iowait_pct: float | None, cv: float | None,
             dips_s: list[float], loadgen_cpu: float | None, metric: str, neighbour_cpu: float | None,
             samples: int, server_cpu: float | None, steady_start_s: float | None, steady_tps: float | None,
             steal_cpu: float | None, tps_ci_high: float | None,
             tps_ci_low: float | None, trend_pct: float | None, warnings: list[dict[str, str]],
             lower_is_better: bool, adaptive: bool, hardware_threads_usable: int, machine_threads: int,
             bound: str | None,
             bound_evidence: str | None, server_figures: JSONObject | None, series_label: str,
             target_tps: float | None = None, slo: JSONObject | None = None,
             context_switches_per_s: float | None = None, disk_read_bytes_per_s: float | None = None,
             disk_write_bytes_per_s: float | None = None, efficiency: JSONObject | None = None,
             profile: JSONObject | None = None) -> AnalysedPoint:
    """The stored point with what analysis.load derives from it: the record
    AnalysedPoint(**the point's fields, **these) makes, made slot by slot. The generated
    __init__ takes 70 keyword arguments and sets each through object.__setattr__: 3x the
    time, a third of load() for 10 k points (bench/serve). The arguments are the
    record's own fields in their order (tests/unit/test_report_build.py checks it).
    `point`: a stored point, or its fields' values in STORED_FIELDS' order as the store
    read and checked them (Store.point_values: no StoredPoint made first, only to be
    copied). `label`: the name it is shown under instead of its stored label (a
    report's series, report.data.series_names; series_label keeps the stored one), set
    here rather than in a copy made after (records.relabelled: the cost of making it
    again)."""
    made = object.__new__(AnalysedPoint)
    for put, value in zip(_stored_slots, _stored_values(point) if isinstance(point, StoredPoint) else point,
                          strict=True):
        put(made, value)
    if label is not None:
        _set_label(made, label)
    for put, value in zip(_derived_slots, (
            cpu_busy_pct, cpu_iowait_pct, cv, dips_s, loadgen_cpu, metric, neighbour_cpu, samples, server_cpu,
            steady_start_s, steady_tps, steal_cpu, tps_ci_high, tps_ci_low, trend_pct, warnings, lower_is_better,
            adaptive, hardware_threads_usable, machine_threads, bound, bound_evidence, server_figures,
            series_label, target_tps, slo, context_switches_per_s, disk_read_bytes_per_s, disk_write_bytes_per_s,
            efficiency, profile), strict=True):
        put(made, value)
    return made


def relabelled(point: AnalysedPoint, label: str) -> AnalysedPoint:
    """A copy of the point under another label (a report's series name), made slot by
    slot: dataclasses.replace walks the 70 fields' descriptions and runs the generated
    __init__ each call, 3x the time (0.25 s for the 10 k points of a report, bench/serve).
    The record has no __post_init__, so the copy is the one replace would make."""
    copy = object.__new__(AnalysedPoint)
    for put, value in zip(_analysed_slots, _analysed_values(point)):
        put(copy, value)
    _set_label(copy, label)
    return copy


def renamed(point: Summarised, label: str) -> Summarised:
    """A point of a view (an AnalysedPoint, or a session summary's SummaryPoint) under
    another label: relabelled's copy, or the summary's point with its label replaced."""
    if isinstance(point, SummaryPoint):
        return point._replace(label=label)
    assert isinstance(point, AnalysedPoint)
    return relabelled(point, label)


class Configured(Protocol):
    """What names a point's series in a report (report.data.series_names): its label,
    engine, workload and variant, its configuration and that configuration's key. A
    StoredPoint is one; so is a SeriesKey."""

    @property
    def label(self) -> str: ...
    @property
    def engine(self) -> str: ...
    @property
    def workload(self) -> str: ...
    @property
    def variant(self) -> str: ...
    @property
    def config(self) -> JSONObject | None: ...
    @property
    def config_key(self) -> str | None: ...


class SeriesKey(NamedTuple):
    """A point's Configured fields alone (analysis.load names the points from these,
    before any record of them is made)."""

    label: str
    engine: str
    workload: str
    variant: str
    config: JSONObject | None
    config_key: str | None


SERIES_KEY_AT = tuple(_STORED_FIELDS.index(name) for name in SeriesKey._fields)  # (in STORED_FIELDS)


@dataclass(frozen=True, slots=True)
class LivePoint:
    """The point a run is measuring now, as its publisher wrote it (store/live.py): what
    it measures, and its latest seconds (second since the tool started, throughput),
    oldest first. `stored_before`: the run's points (warm-ups too) stored when it began;
    once the run has stored more, these seconds are those of a point stored since."""

    run_id: int
    phase: str  # warmup or measured
    workload: str
    threads: int
    clients: int
    variant: str
    repeat: int
    duration_s: float
    stored_before: int
    seconds: tuple[tuple[float, float], ...]


@dataclass(frozen=True, slots=True)
class RunProgress:
    """How far a run is, as the store says it in one small query (Store.run_progress):
    its status, its measured points (ok and failed) and the newest one's id (None
    before the first), its points of every phase (warm-ups too), and the point it is
    measuring now where the store holds its seconds (a PostgreSQL store; an SQLite
    store's are in its sidecar: store/live.py)."""

    run_id: int
    status: str
    points: int
    failed: int
    last_point_id: int | None
    stored: int = 0
    live: LivePoint | None = None


@dataclass(frozen=True, slots=True)
class ForgottenRun:
    """A run removed from a store by `dbarena store forget` (or by a merge that carried
    its tombstone in): its id in that store (None: a tombstone of a run the store never
    held), its UUID (None for a run that had none: no tombstone could name it), what it
    was, and how many points went with it."""

    run_id: int | None
    uuid: str | None
    label: str | None
    engine: str | None
    started_at: str | None
    points: int
    forgotten_at: str

    def named(self) -> str:
        """The run as a line names it: `run 3 (label a, postgres, started 2026-11-01 ...)`."""
        facts = [f"label {self.label}" if self.label is not None else None, self.engine,
                 f"started {self.started_at}" if self.started_at is not None else None]
        shown = ", ".join(f for f in facts if f)
        head = f"run {self.run_id}" if self.run_id is not None else f"run {self.uuid}"
        return f"{head} ({shown})" if shown else head


@dataclass(frozen=True, slots=True)
class StoredSystemSample:
    """One second of a point's machine activity as the store keeps it (Store.system_samples):
    model.SystemSample's figures, by the same names, each None where the store holds
    none (its columns allow it: a sampler that could not read one, an older store)."""

    second: float
    cpu_user_pct: float | None
    cpu_system_pct: float | None
    cpu_iowait_pct: float | None
    cpu_steal_pct: float | None
    cpu_idle_pct: float | None
    context_switches_per_s: float | None
    disk_read_bytes_per_s: float | None
    disk_write_bytes_per_s: float | None
    memory_used_bytes: int | None
    server_cpu: float | None
    loadgen_cpu: float | None


@dataclass(frozen=True, slots=True)
class StoredProfile:
    """A point's on-CPU profile as the store keeps it (Store.profiles): its summary (the
    samples, the top functions [{function, share}] as stats/profiles.top made them, the
    sampling frequency, how symbols were resolved), and its folded stacks as text where
    they were asked for (a summary alone reads no stacks)."""

    samples: int
    top: JSON
    frequency_hz: float
    symbols: str
    folded: str | None = None

    def summary(self) -> JSONObject:
        """The summary as an analysed point carries it and the exports print it."""
        return {"samples": self.samples, "top": self.top, "frequency_hz": self.frequency_hz, "symbols": self.symbols}


@dataclass(frozen=True, slots=True)
class SystemSums:
    """A point's system samples' CPU figures as the store sums them (store.system_sums):
    figure -> (the samples that have it, their sum; None without any), over all its
    samples (`whole`) and over those from its steady start on (`steady`, `steady_rows`
    of them; all of them where it has no steady start)."""

    whole: dict[str, tuple[int, float | None]]
    steady: dict[str, tuple[int, float | None]]
    steady_rows: int


class Summarised(Protocol):
    """What a configuration's summary reads of each of its points (analysis.summaries):
    an analysed point (AnalysedPoint) has it all, and so has what the store keeps of a
    point beside its session's summary (SummaryPoint), from which a summary is made
    without reading the points' rows: one derivation for both."""

    @property
    def point_id(self) -> int: ...
    @property
    def run_id(self) -> int: ...
    @property
    def label(self) -> str: ...
    @property
    def series_label(self) -> str: ...
    @property
    def config_key(self) -> str | None: ...
    @property
    def host(self) -> str: ...
    @property
    def engine(self) -> str: ...
    @property
    def workload(self) -> str: ...
    @property
    def threads(self) -> int: ...
    @property
    def clients(self) -> int: ...
    @property
    def variant(self) -> str: ...
    @property
    def config(self) -> JSONObject | None: ...
    @property
    def phase(self) -> str: ...
    @property
    def adaptive(self) -> bool: ...
    @property
    def machine_threads(self) -> int: ...
    @property
    def slo(self) -> JSONObject | None: ...
    @property
    def target_tps(self) -> float | None: ...
    @property
    def params(self) -> JSONObject: ...
    @property
    def status(self) -> str: ...
    @property
    def error(self) -> str | None: ...
    @property
    def metric(self) -> str: ...
    @property
    def steady_tps(self) -> float | None: ...
    @property
    def tps_ci_low(self) -> float | None: ...
    @property
    def tps_ci_high(self) -> float | None: ...
    @property
    def duration_s(self) -> int: ...
    @property
    def details(self) -> JSONObject: ...
    @property
    def histogram(self) -> bool: ...
    @property
    def tps(self) -> float | None: ...
    @property
    def qps(self) -> float | None: ...
    @property
    def run_avg_s(self) -> float | None: ...
    @property
    def transactions(self) -> int | None: ...
    @property
    def failed_transactions(self) -> int | None: ...
    @property
    def errors(self) -> int | None: ...
    @property
    def latency_min_ms(self) -> float | None: ...
    @property
    def latency_avg_ms(self) -> float | None: ...
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
    def latency_max_ms(self) -> float | None: ...
    @property
    def warnings(self) -> list[dict[str, str]]: ...
    @property
    def bound(self) -> str | None: ...
    @property
    def neighbour_cpu(self) -> float | None: ...
    @property
    def steal_cpu(self) -> float | None: ...
    @property
    def efficiency(self) -> JSONObject | None: ...
    # What a report shows of a level besides its summary (report/levels.py, data.py): its
    # points' system view, queries, repeats, steady state and profile.
    @property
    def cpu_busy_pct(self) -> float | None: ...
    @property
    def cpu_iowait_pct(self) -> float | None: ...
    @property
    def server_cpu(self) -> float | None: ...
    @property
    def loadgen_cpu(self) -> float | None: ...
    @property
    def queries(self) -> int | None: ...
    @property
    def repeat(self) -> int: ...
    @property
    def steady_start_s(self) -> float | None: ...
    @property
    def dips_s(self) -> list[float]: ...
    @property
    def profile(self) -> JSONObject | None: ...


class SummaryPoint(NamedTuple):
    """A point as its session's summary keeps it (session_summaries.figures, schema 25):
    the fields of Summarised, its figure (analysis.value) beside them. The first fields
    are the point's own; the rest (from `label` on) its session's and configuration's,
    the same for every point of a session summary (the store keeps them once a row).
    `details`: of the point's details, those a summary reads (the TPC-C kit's new-order
    rates that are its figure, the transactions a rate-limited run skipped); `warnings`:
    its warnings' codes, each with the text of its first appearance in the session (a
    summary names a code once, by its first appearance among its points); `profile`: its
    on-CPU profile's summary, where it was profiled."""

    point_id: int
    value: float | None
    status: str
    error: str | None
    metric: str
    steady_tps: float | None
    tps_ci_low: float | None
    tps_ci_high: float | None
    duration_s: int
    details: JSONObject
    histogram: bool
    tps: float | None
    qps: float | None
    run_avg_s: float | None
    transactions: int | None
    failed_transactions: int | None
    errors: int | None
    latency_min_ms: float | None
    latency_avg_ms: float | None
    latency_p50_ms: float | None
    latency_p90_ms: float | None
    latency_p95_ms: float | None
    latency_p99_ms: float | None
    latency_p999_ms: float | None
    latency_max_ms: float | None
    warnings: list[dict[str, str]]
    bound: str | None
    neighbour_cpu: float | None
    steal_cpu: float | None
    efficiency: JSONObject | None
    cpu_busy_pct: float | None
    cpu_iowait_pct: float | None
    server_cpu: float | None
    loadgen_cpu: float | None
    queries: int | None
    repeat: int
    steady_start_s: float | None
    dips_s: list[float]
    profile: JSONObject | None
    # The session's and its configuration's.
    run_id: int
    label: str
    series_label: str
    config_key: str | None
    host: str
    engine: str
    workload: str
    threads: int
    clients: int
    variant: str
    config: JSONObject | None
    phase: str
    adaptive: bool
    machine_threads: int
    slo: JSONObject | None
    target_tps: float | None
    params: JSONObject  # its dataset's (a configuration's, so its session's: history's series)


# How many of SummaryPoint's fields are the point's own (the rest its session's).
SUMMARY_POINT_OWN = SummaryPoint._fields.index("run_id")


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionSummary:
    """One configuration (a label and configuration key) in one session (a stored run):
    its measured points in point order, and what the views read of them first, kept in
    the store as points are stored (store table session_summaries, by estimator version)."""

    run_id: int
    label: str
    config_key: str  # "point N" for a point stored without a key, as summaries group it
    members: tuple[SummaryPoint, ...]

    @property
    def values(self) -> list[float]:
        return [m.value for m in self.members if m.value is not None]

    @property
    def failed(self) -> int:
        return sum(1 for m in self.members if m.value is None)

    @property
    def warnings(self) -> int:
        return sum(len(m.warnings) for m in self.members)


@dataclass(frozen=True, slots=True)
class LentSession:
    """What a configuration's session lends a comparison of other labels (its spread
    between sessions: stats/sessions.py): the mean of its runs' figures and how many
    there were; `first_point` orders the groups as the points would have been read."""

    label: str
    config_key: str
    run_id: int
    first_point: int
    runs: int
    mean: float


class MeanEstimate(Protocol):
    """A mean over independent runs with what a comparison's t interval needs: what a
    summary keeps for comparisons (stats.estimate.Estimate is one; declared here so that
    a record needs nothing of stats/)."""

    @property
    def mean(self) -> float: ...
    @property
    def se(self) -> float | None: ...
    @property
    def df(self) -> int | None: ...
    @property
    def n(self) -> int: ...  # observations behind it (repeats, or batches)


@dataclass(frozen=True, slots=True)
class Interference:
    """What one side's points (a level's ok repeats) ran under (stats/interference.py):
    the neighbours' CPU over its points (mean, least, most), the steal's mean (None where
    no point has one), and the machine's hardware threads these are CPUs of (the most of
    its points')."""

    points: int
    neighbour_mean: float
    neighbour_low: float
    neighbour_high: float
    steal_mean: float | None
    machine_threads: int

    def range_text(self) -> str:
        """The neighbours' CPU as the messages write it: "1.4-1.7", or "1.4" where one."""
        low, high = f"{self.neighbour_low:.1f}", f"{self.neighbour_high:.1f}"
        return low if low == high else f"{low}-{high}"


@dataclass(frozen=True, slots=True, kw_only=True)
class LevelSummary:
    """The repeats of one label and configuration key pooled (analysis.summaries): their
    median, mean and interval, the warnings on the group, its bound, its latency over the
    repeats (pooled_latency) and every figure over them (stats/repeats.py). The fields
    from `label` to `over_repeats` are what `results --summary --json` prints, in order."""

    label: str
    config_key: str  # "point N" for a point stored without a key: never pooled
    engine: str
    workload: str
    threads: int
    clients: int
    variant: str
    config: JSONObject | None
    metric: str  # stats/metric.py: tps, qps, seconds, nopm or tpmc
    lower_is_better: bool
    n: int
    failed: int
    # The stored runs (sessions: stats/sessions.py) its ok repeats come from, and where
    # the spread between sessions that comparisons use comes from (None: unknown).
    sessions: int
    between_sessions: str | None
    median: float | None
    mean: float | None
    statistic: str | None  # what median and mean are over (analysis.STEADY, PRINTED or mixed)
    printed_median: float | None
    stdev: float | None
    ci_low: float | None
    ci_high: float | None
    cv: float | None
    interval: str | None  # what the interval is: "within one run", "between runs" ...
    warnings: list[dict[str, str]]  # steadystate.Flag.as_dict of each: its code and message
    bound: str | None
    latency_min_ms: float | None  # the least any repeat printed (the pooled transactions' minimum)
    latency_p50_ms: float | None
    latency_p90_ms: float | None
    latency_p95_ms: float | None
    latency_p99_ms: float | None
    latency_p999_ms: float | None
    latency_max_ms: float | None
    latency_avg_ms: float | None
    latency_pooled: str | None  # how its percentiles were found, or why there are none
    over_repeats: dict[str, JSONObject]  # figure -> repeats.OverRepeats.as_dict
    # --slo: the offered rate of a group of open-loop points; and, on the closed-loop
    # group whose search they are, its capacity at the objective (stats/capacity.py's
    # Capacity.as_json: {slo, tps, ci_low, ci_high, met_by, failed_at, sessions, reason}).
    target_tps: float | None = None
    capacity: JSONObject | None = None
    # Each cost per transaction's mean over its ok points (stats/efficiency.py); None: none.
    efficiency: JSONObject | None = None
    # Not exported: what comparisons use (None without a figure), and the label its
    # points' series had as stored (AnalysedPoint.series_label).
    estimate: MeanEstimate | None
    series_label: str
    # What its ok points ran under (stats/interference.py; None without a figure): a
    # comparison of two sides that differ in it is not decided (analysis.compare).
    interference: Interference | None = None
    # The capacity's mean over sessions with its spread, for comparisons (None: no capacity),
    # and what its search's offered-rate points ran under (a comparison of capacities checks it).
    capacity_estimate: MeanEstimate | None = None
    capacity_interference: Interference | None = None
    # Each cost per transaction's mean in each session (stats/efficiency.by_session): what
    # a comparison tests a difference in cost against.
    efficiency_sessions: dict[str, tuple[float, ...]] | None = None
    # A group offered a rate the user fixed (--rate; not a step of a --slo search): what a
    # comparison at that rate uses (stats/atrate.py); None for every other group.
    at_rate: AtRate | None = None

    def as_json(self) -> JSONObject:
        """The summary as `results --summary --json` prints it."""
        return {f.name: value for f in fields(self) if f.name not in _SUMMARY_PRIVATE
                and ((value := getattr(self, f.name)) is not None or f.name not in _OPEN_LOOP)}


_SUMMARY_PRIVATE = frozenset({"estimate", "series_label", "interference", "capacity_estimate",
                              "capacity_interference", "efficiency_sessions", "at_rate"})


@dataclass(frozen=True, slots=True)
class AtRate:
    """What a group offered a fixed rate (--rate, not a step of a --slo search) is
    compared by (stats/atrate.py): its runs' 95th-percentile latency over sessions, and
    whether every run carried the rate."""

    estimate: MeanEstimate | None  # of the p95 in ms (metric.P95); None: no run gave one on enough transactions
    runs: int  # the runs it rests on
    short: str | None  # where a run fell short of the rate, how far (its latency is then a growing queue's)


@dataclass(frozen=True, slots=True, kw_only=True)
class LevelMeans:
    """What a report's level row (report/levels.py) shows of a closed-loop group besides
    its summary: each figure's mean over its ok repeats (stats/levelmeans.py)."""

    seconds: float | None  # mysqlslap's: the seconds a run of its queries took (where the metric is not tps)
    printed_tps: float | None  # the figure the tool printed, beside the steady-state mean
    tpm_new_order: float | None  # the TPC-C-like workload's (None for the others) ...
    tpcc_mix_pct: dict[str, float | None] | None
    tpcc_latency_ms: dict[str, float | None] | None
    rollbacks: float | None
    cpu_busy_pct: float | None
    cpu_iowait_pct: float | None
    server_cpu: float | None
    loadgen_cpu: float | None
    bound: str | None  # stats/bound.of_group of its points'
    bound_kind: str | None  # the most frequent of them
    qps: float | None
    transactions: float | None
    queries: float | None
    time_s: float | None


@dataclass(frozen=True, slots=True)
class ShownPoint:
    """A group's point a report's per-second chart may show: its ok point of the least
    repeat (then id), what the chart marks on its series."""

    point_id: int
    threads: int
    repeat: int
    steady_start_s: float | None
    dips_s: tuple[float, ...]


@dataclass(frozen=True, slots=True)
class StoredGroup:
    """A label's configuration over all its sessions as the store keeps it (table
    group_summaries, schema 26; store/groups.py): its summary with what it takes from no
    other group (analysis.summaries' own part: between_sessions, estimate and the capacity
    fields left None, made at read time from every group read), and its runs' figures'
    means by session (stats/sessions.Sessions: what the spread between sessions is made
    of); `first_point` orders the groups as their points would have been read."""

    first_point: int
    summary: LevelSummary
    session_means: tuple[float, ...]
    session_runs: tuple[int, ...]
    # What a report reads of its points besides the summary (None, empty: none of it, an
    # offered rate's group): the means its level row shows, its runs with each one's first
    # point (the order a label's runs are met in), its ok points, the one its chart shows,
    # every point's id (the ok ones first, each part by repeat and id: what a level links
    # to), and its profiled ok points with their transactions (a level's pooled profile).
    level: LevelMeans | None = None
    runs: tuple[tuple[int, int], ...] = ()
    ok: int = 0
    shown: ShownPoint | None = None
    links: tuple[int, ...] = ()
    profiled: tuple[tuple[int, float], ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class LevelComparison:
    """B against A at one engine, workload and level (analysis.compare): the ratio of
    their means, its interval and verdict; or, where no group of B matches A's
    configuration, the fields that differ (`differs`) and no ratio. What `compare
    --json` prints, in order."""

    engine: str
    workload: str
    threads: int
    metric: str
    lower_is_better: bool
    a: str
    b: str
    by: str  # what A and B are: "label" or "variant"
    label: str | None  # the label both variants are of (by "variant")
    a_mean: float | None
    a_n: int
    b_mean: float | None
    b_n: int
    a_sessions: int  # the stored runs each side's repeats come from (stats/sessions.py)
    b_sessions: int
    ratio: float | None  # b / a
    ratio_ci_low: float | None
    ratio_ci_high: float | None
    p_value: float | None
    significant: bool
    differs: list[str]  # the configuration's fields that differ: not comparable
    # The fields one side does not know, so could not be checked; None where the
    # configurations differ (not comparable), and then neither are the log figures.
    unverified: list[str] | None
    verdict: str | None
    reason: str | None  # why there is no verdict
    verdict_text: str
    log_se: float | None  # the ratio's standard error and degrees of freedom on the log
    log_df: float | None  # scale, which the decision combines levels with
    # --slo: the objective whose capacities the row compares (its means are capacities,
    # in TPS at it); None: the closed-loop throughput's row.
    slo: str | None = None
    # Each side's cost per transaction at this level (LevelSummary.efficiency), where known.
    a_efficiency: JSONObject | None = None
    b_efficiency: JSONObject | None = None
    # The cost per transaction the sides differ in most beyond their sessions' spread
    # (stats/efficiency.differs_most's Difference.as_json: figure, a, b, p_value); None:
    # none does, or it cannot be told (one session a side, different interference).
    cost_difference: JSONObject | None = None
    # Where both sides' points were profiled (--profile): the functions whose CPU time per
    # transaction changed most, each side's profiles pooled (stats/profiles.py's
    # pooled_differential, Change.as_json each); None: a side without profiles.
    profile_changes: list[JSONObject] | None = None
    # A's group's variant, where it has one: two labels that hold variants are compared
    # variant by variant, a row each at one level (printed only where there is one).
    variant: str | None = None
    # The rate both sides were offered (--rate), where the row compares their latency at
    # it (its means are p95 latencies in ms, metric.P95); None: a closed-loop row.
    offered_tps: float | None = None

    @property
    def comparable(self) -> bool:
        return self.unverified is not None

    def as_json(self) -> JSONObject:
        """The row as `compare --json` prints it: a row that is not comparable without
        the figures only a ratio has."""
        return {f.name: getattr(self, f.name) for f in fields(self)
                if (self.comparable or f.name not in ("unverified", "log_se", "log_df"))
                and not (f.name in _WHERE_SET and getattr(self, f.name) is None)}


# A comparison's fields printed only where they hold something.
_WHERE_SET = _OPEN_LOOP | {"variant", "offered_tps"}


@dataclass(frozen=True)
class ServerRecord:
    """A point's server series as stored (server_series): the series
    (serverside.series.ServerSeries.encode; None where it was not read), the figures
    comparisons read, and the bound and its evidence an older store decided when the
    point was stored (None since: stats/analysis derives the bound from the series)."""

    bound: JSON  # text (or None) as stored; checked as it is read
    evidence: JSON
    record: JSON
    figures: JSON
