"""Stored points -> steady-state figures, summaries per point of the plan, comparisons.

Computed when asked, from what the store keeps verbatim (per-second series, system
samples), never stored as edited numbers: a better estimator re-reads old runs.
"""

from __future__ import annotations

import contextlib
import dataclasses
import operator
import statistics
from collections import defaultdict
from concurrent.futures import Future, ThreadPoolExecutor
from itertools import repeat
from typing import Any, Callable, Iterable, Mapping, Protocol, Sequence, TypedDict

import numpy as np

from dbarena.serverside import throughput
from dbarena.stats import atrate
from dbarena.stats import capacity
from dbarena.stats import efficiency
from dbarena.stats import bound
from dbarena.stats import configkey
from dbarena.stats import interference
from dbarena.stats import levelcompare
from dbarena.stats import levelmeans
from dbarena.stats import profiles
from dbarena.stats import latency
from dbarena.stats import metric
from dbarena.stats import repeats
from dbarena.stats import sessions
from dbarena.stats import estimators as stats
from dbarena.stats import steadystate
from dbarena.stats.steadystate import Floats
from dbarena import bulk
from dbarena.bulk import collector_paused
from dbarena.errors import UsageError
from dbarena.limits import listed, quoted
from dbarena.model import PointResult
from dbarena.interfaces import ResultStore
from dbarena.records import JSON, JSONObject, AnalysedPoint, AtRate, Interference, LentSession, LevelComparison, LevelMeans, LevelSummary, \
    ServerRecord, SessionSummary, ShownPoint, StoredGroup, StoredPoint, Summarised, SummaryPoint, StoredRun, SystemSums, analysed, SeriesKey, SERIES_KEY_AT, \
    STORED_FIELDS, stored_point

# Repeats are pooled per label and configuration key (configkey.py): a summary never
# mixes points whose engine, workload, parameters, settings, variant, server version
# or host differ. The other fields are carried along for display.
GROUP_KEY = ("label", "config_key")
SHOWN = ("engine", "workload", "threads", "clients", "variant", "config")

# The version of what analyse_point computes: bump it when stats.py's estimators or
# warnings change, and every store recomputes its cached figures on the next read.
ESTIMATOR_VERSION = 9  # 2: the system view (machine CPU, iowait, server and load-generator CPU);
# 3: no load-generator verdict from fewer than steadystate.LOADGEN_MIN_SAMPLES samples;
# 4: warnings count interval reports in their own unit ("3 intervals of 60 s", not "3 second(s)");
# 5: the dips and trend advice in the engine's own terms (InnoDB's settings for a MySQL point);
# 6: the neighbours' CPU and the steal (stats/interference.py), the neighbours warning, and
# load-generator-bound only where the load generator took more than the neighbours;
# 7: the machine's context switches and disk bytes a second (cost per transaction);
# 8: the point's bound (stats/bound.py) derived here from its stored server series and
# system samples, no longer decided once when it was stored: a threshold changed reaches
# every point stored before; 9: a pgbench series from the server's commit counter without
# its seconds within a second of pgbench's end (serverside/throughput.settled: they held
# its clients' last report of commits, which put a 10 s point 3-11 % high)
DERIVE_BATCH = 500  # points whose series are read at once when derived figures are computed
SERVER_BATCH = 50  # of those, points whose server series are read at once


def analyse_point(row: StoredPoint, samples: int, steady: steadystate.SteadyState | None,
                  system: SystemSums | None, hardware_threads: int, machine_threads: int | None = None,
                  server: bound.Readings | None = None) -> JSONObject:
    """The derived fields of one stored point (added to its results row): a JSON
    document, cached in the store (point_derived) by estimator version. `samples`: the
    length of its tps series; `steady`: that series' steady state (None without one);
    `system`: its system samples' counts and sums (store.system_sums from the steady
    start on); `hardware_threads`: those the server could use; `machine_threads`: the
    machine's, which its CPU shares are of [hardware_threads]; `server`: its server's
    series as stored (None where the server was not sampled), which with the system
    samples give its bound (BOUND: kind and evidence; absent without a series)."""
    machine = machine_threads or hardware_threads
    out: JSONObject = {"metric": metric.of_point(row), "samples": samples, "steady_start_s": None,
                           "steady_tps": None, "tps_ci_low": None, "tps_ci_high": None, "cv": None, "dips_s": [],
                           "trend_pct": None, "warnings": [], **dict.fromkeys(SYSTEM_FIELDS)}
    # (Of a failed point too, whose server was sampled while it ran; over all its system
    # samples, not its steady part: a bound says what limited the point as a whole.)
    found = bound.of_point(row, server, _means(system.whole) if system else {}, hardware_threads)
    if found is not None:
        out[BOUND] = {"kind": found.kind, "evidence": found.evidence}
    if row.status != "ok":
        return out
    flags: list[steadystate.Flag] = []
    if steady is not None:
        out.update(steady_start_s=steady.steady_start_s, steady_tps=steady.mean, tps_ci_low=steady.ci_low,
                   tps_ci_high=steady.ci_high, cv=steady.cv, dips_s=[*steady.dips_s], trend_pct=steady.trend_pct)
        flags.extend(steady.flags)
    whole: dict[str, tuple[int, float | None]] = system.whole if system else {}
    # A load-generator verdict only from figures with enough samples.
    flags.extend(steadystate.loadgen_verdict(
        _means({k: v for k, v in whole.items() if v[0] >= steadystate.LOADGEN_MIN_SAMPLES}),
        row.threads, hardware_threads, machine))
    out["warnings"] = [JSONObject(f.as_dict()) for f in flags]
    # The steady part's samples; every sample where none is at or after the start.
    out.update(_system_fields(_means(system.steady if system and system.steady_rows else whole), machine))
    return out


# Where the derived figures keep a point's bound: {"kind", "evidence"} (stats/bound.py).
BOUND = "bound"


def _means(sums: dict[str, tuple[int, float | None]]) -> dict[str, float | None]:
    """field -> its mean over the samples that have it (None without any)."""
    return {k: (total / count if count and total is not None else None) for k, (count, total) in sums.items()}


# The system view of a point (study D's discussion of where the CPU went): means over
# its steady state (the whole point without a series) of the 1 Hz system samples.
# The neighbours' CPU and the steal: what other processes and the hypervisor took
# (stats/interference.py), in CPUs.
# The machine's context switches and disk bytes a second: what cost per transaction
# divides (stats/efficiency.py).
SYSTEM_FIELDS = ("cpu_busy_pct", "cpu_iowait_pct", "server_cpu", "loadgen_cpu", "neighbour_cpu", "steal_cpu",
                 "context_switches_per_s", "disk_read_bytes_per_s", "disk_write_bytes_per_s")
_SAMPLED = ("cpu_idle_pct", "cpu_iowait_pct", "cpu_steal_pct", "server_cpu", "loadgen_cpu", "context_switches_per_s",
            "disk_read_bytes_per_s", "disk_write_bytes_per_s")


def _system_fields(means: dict[str, float | None], machine_threads: int) -> dict[str, float | None]:
    idle, iowait, steal = means.get("cpu_idle_pct"), means.get("cpu_iowait_pct"), means.get("cpu_steal_pct")
    server, loadgen = means.get("server_cpu"), means.get("loadgen_cpu")
    return {"cpu_busy_pct": 100 - idle if idle is not None else None, "cpu_iowait_pct": iowait,
            "server_cpu": server, "loadgen_cpu": loadgen,
            "neighbour_cpu": interference.neighbour_cpu(idle, iowait, steal, server, loadgen, machine_threads),
            "steal_cpu": interference.steal_cpu(steal, machine_threads),
            "context_switches_per_s": means.get("context_switches_per_s"),
            "disk_read_bytes_per_s": means.get("disk_read_bytes_per_s"),
            "disk_write_bytes_per_s": means.get("disk_write_bytes_per_s")}


def system_view(system: Sequence[Mapping[str, float | None]], steady_start_s: float | None,
                machine_threads: int = 1) -> dict[str, float | None]:
    """Machine CPU busy % (100 - idle), iowait %, the CPU the server's and the load
    generator's processes used, in cores (1.0 = one hardware thread busy), and what
    other processes and the hypervisor took (stats/interference.py) of the machine's
    `machine_threads`. `system`: a point's system samples, each with its second."""
    chosen = [s for s in system if steady_start_s is None or (s["second"] or 0.0) >= steady_start_s] or system

    def mean(values: Iterable[float | None]) -> float | None:
        present = [v for v in values if v is not None]
        return statistics.fmean(present) if present else None

    return _system_fields({k: mean(s.get(k) for s in chosen) for k in _SAMPLED}, machine_threads)


def run_threads(run: StoredRun) -> int:
    """The hardware threads a run's server could use: the CPUs a [cpus] variant confined
    it to; else the run's CPU affinity and quota where recorded (since
    hostinfo.read_usable_cpus); else the machine's."""
    # (Counts where present: the store's edge checked them, edge.SHAPES.)
    placed = run.options.get("cpus")
    threads = placed.get("server_threads") if isinstance(placed, dict) else None
    if isinstance(threads, int) and threads:
        return threads
    for name in ("effective_hardware_threads", "hardware_threads"):
        if isinstance(found := run.host_facts.get(name), int) and found:
            return found
    return 1


def machine_threads(run: StoredRun) -> int:
    """The hardware threads of the machine a run measured on, which its system samples'
    CPU shares are of (/proc/stat counts all of them, whatever the run was confined to);
    the server's where the machine's are not recorded."""
    found = run.host_facts.get("hardware_threads")
    return found if isinstance(found, int) and found > 0 else run_threads(run)


# What names each point for a view (report.data.series_names): what names its series
# (records.Configured) in, the name each is shown under out, in their order.
Naming = Callable[[Sequence[SeriesKey]], Sequence[str]]

# Where load finds a point's fields among its values (records.STORED_FIELDS' order).
_AT = {name: STORED_FIELDS.index(name) for name in ("point_id", "run_id", "label", "tps", "run_avg_s", "options",
                                                     "status", "details")}
_series_key = operator.itemgetter(*SERIES_KEY_AT)
_point_id = operator.itemgetter(_AT["point_id"])
_run_id = operator.itemgetter(_AT["run_id"])


def load(store: ResultStore, *, run_id: int | None = None, labels: tuple[str, ...] = (), study: str | None = None,
         variants: tuple[str, ...] = (), named: Naming | None = None, point_ids: Sequence[int] = ()
         ) -> list[AnalysedPoint]:
    """Stored points with what is derived from them, once for every view: the figures
    of their series and their bound (stats/bound.py), from the cache where this
    estimator version made them, else computed from the stored series, read in batches,
    not a query per point, and cached. `named`: the
    name each point is shown under (a report's series, "a [config 1a2b3c]"), its
    `label`, the stored one kept as its series_label. Each point is made a record once,
    from its values as the store checked them (Store.point_values), under its name: not
    a StoredPoint first, nor a copy under another name after (50 and 70 fields set one
    by one, each time; a third of a report's model of 10 k points). `point_ids`: only
    these points."""
    # A record and its lists per point, no reference cycle among them: the collector's
    # passes over them were a tenth to a third of this function for 10 k points (and a
    # sixth of a `dbarena serve` Decide of 100 k points, where they ran while the points
    # were named).
    # (Objects made while it is paused are walked by its first pass after: one pause
    # for the whole read, but for figures to compute, which take long and many objects.)
    with contextlib.ExitStack() as paused:
        paused.enter_context(collector_paused())
        values = store.point_values(run_id=run_id, labels=labels, study=study, variants=variants,
                                    point_ids=tuple(point_ids))
        runs = store.runs_by_id(set(map(_run_id, values)))
        derived = store.derived(map(_point_id, values), ESTIMATOR_VERSION)
        # (Only the points whose figures are not cached yet are made StoredPoints, to compute them.)
        missing = [stored_point(v) for v in values if v[_AT["point_id"]] not in derived]
        if missing:
            paused.close()
            _compute(store, missing, runs, derived)
            paused.enter_context(collector_paused())
        names = named([SeriesKey._make(_series_key(v)) for v in values]) if named is not None else None
        out = _analysed(store, values, runs, derived, names)
        del values
    bulk.keep(len(out))  # (what a read command keeps to its end: bulk.keep)
    return out


# The derived figures that are a number or None, in the order analysed() takes them.
_NUMBERS = ("cpu_busy_pct", "cpu_iowait_pct", "cv", "loadgen_cpu", "neighbour_cpu", "server_cpu", "steady_start_s",
            "steady_tps", "steal_cpu", "tps_ci_high", "tps_ci_low", "trend_pct", "context_switches_per_s",
            "disk_read_bytes_per_s", "disk_write_bytes_per_s")
_numbers = operator.itemgetter(*_NUMBERS)
_NUMBER_TYPES = frozenset({int, float, type(None)})


def _analysed(store: ResultStore, values: Sequence[Sequence[Any]], runs: Mapping[int, StoredRun],
              derived: Mapping[int, JSONObject], names: Sequence[str] | None = None) -> list[AnalysedPoint]:
    """The points (each one's values in STORED_FIELDS' order) as records with their
    derived figures (`derived`: point id -> them) and their bound, each under its name
    in `names` where given."""
    # Only the server's figures (and the bound's columns), not the series (None where the
    # server was not sampled: imported, --no-server-metrics, or stored before schema 16).
    bounds = store.server_series(map(_point_id, values), records=False)
    # A profiled point's profile, its summary alone (the stacks stay in the store).
    profiled = store.profiles(map(_point_id, values))
    # A run's facts, read once a run rather than once a point: its number of repeats
    # was chosen by the stopping rule (--precision); the hardware threads its server
    # could use, what "saturated" is measured against.
    of_run = {run_id: (bool(run.options.get("precision")), run_threads(run), machine_threads(run),
                       slo if isinstance(slo := run.options.get("slo"), dict) else None)
              for run_id, run in runs.items()}
    no_bound = ServerRecord(bound=None, evidence=None, record=None, figures=None)
    at = operator.itemgetter(_AT["point_id"], _AT["run_id"], _AT["label"], _AT["tps"], _AT["run_avg_s"])
    out = []
    for row, name in zip(values, names if names is not None else repeat(None)):
        point_id, run_id, label, tps, run_avg_s = at(row)
        figures = derived[point_id]
        # Decided here, not read from the cache: figures cached before mysqlslap was
        # judged by its seconds said "qps".
        judged_by = metric.of_figures(tps, run_avg_s, row[_AT["details"]] if tps is None and run_avg_s is None
                                      else None)
        adaptive, threads, machine, slo = of_run[run_id]
        found = bounds.get(point_id) or no_bound
        server_figures = found.figures if isinstance(found.figures, dict) else None  # (the edge read an object)
        # The bound derived from the point's series (analyse_point). The verdict a store
        # kept in server_series.bound (before ESTIMATOR_VERSION 8 every point's was
        # decided once, when it was stored) is read only where no series derived one:
        # a row whose series does not read, or a bundle's point that holds none.
        kind, evidence = _bound(figures.get(BOUND), found)
        # (The cache's figures were checked at the store's edge: numbers or None, a list
        # of seconds, of {code, message} and a count; _figures and the rest only say so.)
        dips, warnings, samples = figures.get("dips_s"), figures.get("warnings"), figures.get("samples")
        (cpu_busy_pct, cpu_iowait_pct, cv, loadgen_cpu, neighbour_cpu, server_cpu, steady_start_s, steady_tps,
         steal_cpu, tps_ci_high, tps_ci_low, trend_pct, switches, reads, writes) = _figures(figures)
        out.append(analysed(
            # The stored point's own fields, typed by StoredPoint, of which AnalysedPoint is one.
            row, name,
            cpu_busy_pct=cpu_busy_pct, cpu_iowait_pct=cpu_iowait_pct, cv=cv, loadgen_cpu=loadgen_cpu,
            neighbour_cpu=neighbour_cpu, server_cpu=server_cpu, steady_start_s=steady_start_s,
            steady_tps=steady_tps, steal_cpu=steal_cpu, tps_ci_high=tps_ci_high,
            tps_ci_low=tps_ci_low, trend_pct=trend_pct,
            metric=judged_by,
            dips_s=[d for d in dips if isinstance(d, (int, float))] if isinstance(dips, list) else [],
            warnings=[{k: v for k, v in w.items() if isinstance(v, str)} for w in warnings if isinstance(w, dict)]
            if isinstance(warnings, list) else [],
            samples=samples if isinstance(samples, int) else 0,
            lower_is_better=metric.lower_is_better(judged_by),
            adaptive=adaptive, hardware_threads_usable=threads, machine_threads=machine,
            bound=kind, bound_evidence=evidence, server_figures=server_figures,
            series_label=label, target_tps=capacity.offered(options) if isinstance(options := row[_AT["options"]], dict)
            and capacity.RATE_OPTION in options else None, slo=slo,
            context_switches_per_s=switches, disk_read_bytes_per_s=reads, disk_write_bytes_per_s=writes,
            efficiency=efficiency.of_point(
                steady_tps if steady_tps is not None else tps, server_cpu=server_cpu, loadgen_cpu=loadgen_cpu,
                context_switches_per_s=switches, disk_read_bytes_per_s=reads, disk_write_bytes_per_s=writes,
                server_figures=server_figures) if row[_AT["status"]] == "ok" else None,
            profile=profile.summary() if (profile := profiled.get(point_id)) is not None else None))
    return out


def _bound(derived: JSON, stored: ServerRecord) -> tuple[str | None, str | None]:
    """(kind, evidence) of a point's bound: the derived one where its series gave one
    (the cache's, text as analyse_point made it), else the stored columns' (text or None)."""
    if isinstance(derived, dict) and isinstance(kind := derived.get("kind"), str):
        evidence = derived.get("evidence")
        return kind, evidence if isinstance(evidence, str) else None
    kind, evidence = stored.bound, stored.evidence
    return kind if isinstance(kind, str) else None, evidence if isinstance(evidence, str) else None


def _figures(figures: Mapping[str, JSON]) -> tuple[float | None, ...]:
    """The derived figures that are numbers (_NUMBERS, in order), each None where it is
    not one: all twelve at once where they are (the store's edge saw to it for the cache),
    else one by one."""
    try:
        found: tuple[Any, ...] = _numbers(figures)
    except KeyError:  # (a figure missing from the cache: None)
        found = tuple(figures.get(name) for name in _NUMBERS)
    if _NUMBER_TYPES.issuperset(map(type, found)):
        return found
    return tuple(_number(figures, name) for name in _NUMBERS)


def _number(figures: Mapping[str, JSON], name: str) -> float | None:
    value = figures.get(name)
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def check_names(store: ResultStore, *, run_id: int | None = None, labels: tuple[str, ...] = (),
                study: str | None = None, variants: tuple[str, ...] = ()) -> bool:
    """Every name a filter gives matches something stored, or a UsageError in one line
    naming what the store holds: a typo is not an empty result. An empty store passes
    (False: its caller says nothing is stored yet)."""
    runs = store.runs()
    if not runs:
        return False
    if run_id is not None and run_id not in {r.id for r in runs}:
        raise UsageError(f"no run {run_id} in the store; stored: {_ranges(sorted(r.id for r in runs))}")
    stored_labels = list(dict.fromkeys(r.label for r in runs))
    for label in labels:
        if label not in stored_labels:
            raise UsageError(f"no label {quoted(label)} in the store; stored: {listed(stored_labels)}")
    if study is not None:
        studies = {sha: (found.name if (found := store.study(sha)) else None) or sha[:12]
                   for sha in dict.fromkeys(r.study_sha256 for r in runs if r.study_sha256)}
        if not any(name == study or sha.startswith(study) for sha, name in studies.items()):
            raise UsageError(f"no study {quoted(study)} in the store; stored: "
                             f"{listed(dict.fromkeys(studies.values())) or 'none (no run came from a study)'}")
    stored_variants = list(dict.fromkeys(r.variant for r in runs if r.variant))
    for variant in variants:
        if variant not in stored_variants:
            raise UsageError(f"no variant {quoted(variant)} in the store; stored: "
                             f"{listed(stored_variants) or 'none (no run had variants)'}")
    return True


def _ranges(ids: list[int]) -> str:
    """Run ids as ranges: 1-40, 42."""
    parts: list[str] = []
    start = prev = ids[0]
    for n in [*ids[1:], None]:
        if n is not None and n == prev + 1:
            prev = n
            continue
        parts.append(str(start) if start == prev else f"{start}-{prev}")
        if n is not None:
            start = prev = n
    return ", ".join(parts)


def _derived(store: ResultStore, rows: Sequence[StoredPoint], runs: Mapping[int, StoredRun]
             ) -> dict[int, JSONObject]:
    """The derived figures of these points: cached, or computed and cached."""
    derived: dict[int, JSONObject] = store.derived((r.point_id for r in rows), ESTIMATOR_VERSION)
    _compute(store, [r for r in rows if r.point_id not in derived], runs, derived)
    return derived


def _compute(store: ResultStore, missing: Sequence[StoredPoint], runs: Mapping[int, StoredRun],
             derived: dict[int, JSONObject]) -> None:
    """The derived figures of points that have none cached, computed from their series,
    cached, and added to `derived`."""
    # In batches: the series of 100 k points of 600 s would not fit in memory at once.
    batches = [missing[start:start + DERIVE_BATCH] for start in range(0, len(missing), DERIVE_BATCH)]
    no_series: tuple[Sequence[float], Floats] = ([], np.empty(0))

    def prepare(batch: Sequence[StoredPoint]) -> tuple[_Series, _Steady, dict[int, float | None]]:
        series = store.tps_series(r.point_id for r in batch)
        for r in batch:
            if (found := series.get(r.point_id)) is not None:
                own = throughput.settled(found[0], r.details.get("per_second"), r.duration_s)
                if own < len(found[0]):
                    series[r.point_id] = (found[0][:own], found[1][:own])
        # Computed together: numpy's work a call is shared by the batch's series.
        measured = [r for r in batch if r.status == "ok" and r.tps is not None and r.point_id in series]
        steady: dict[int, steadystate.SteadyState | None] = dict.fromkeys((r.point_id for r in batch), None)
        steady.update(zip((r.point_id for r in measured), steadystate.steady_states(
            [series[r.point_id][0] for r in measured], [series[r.point_id][1] for r in measured],
            [r.duration_s for r in measured], [r.engine for r in measured])))
        # The system view averages the steady part: summed once its start is known.
        starts = {r.point_id: s.steady_start_s if (s := steady[r.point_id]) else None
                  for r in batch if r.status == "ok"}
        return series, steady, starts

    def finish(batch: Sequence[StoredPoint], series: _Series, steady: _Steady,
               sums: Future[dict[int, SystemSums]]) -> None:
        system = sums.result()
        fresh: dict[int, JSONObject] = {}
        # The server's series (what its bound is derived from) a few points at a time:
        # a long point's is hundreds of names a second, too many for a whole batch at once.
        for start in range(0, len(batch), SERVER_BATCH):
            part = batch[start:start + SERVER_BATCH]
            servers = store.server_series(r.point_id for r in part)
            fresh.update((r.point_id, analyse_point(
                r, len(series.get(r.point_id, no_series)[1]), steady[r.point_id], system.get(r.point_id),
                run_threads(runs[r.run_id]), machine_threads(runs[r.run_id]),
                bound.readings(record) if (found := servers.get(r.point_id)) is not None
                and isinstance(record := found.record, dict)
                else None)) for r in part)
        store.save_derived(fresh, ESTIMATOR_VERSION)
        derived.update(fresh)

    # The system samples are summed by SQLite, which lets go of the interpreter meanwhile:
    # on a connection of their own in a thread, while the next batch's series are read
    # and analysed (a third of a first read). The worker is idle whenever figures are
    # saved (finish waits for it), so no read holds a lock while this process writes.
    reader = store.second_reader() if len(batches) > 1 else None
    with contextlib.ExitStack() as cleanup:
        pool = None
        if reader is not None:
            cleanup.callback(reader.close)
            pool = cleanup.enter_context(ThreadPoolExecutor(1, thread_name_prefix="system-sums"))
        pending = None
        for batch in batches:
            series, steady, starts = prepare(batch)
            if pending:
                finish(*pending)
            if pool is not None:
                sums = pool.submit(store.system_sums, starts, reader)
            else:
                sums = Future[dict[int, SystemSums]]()
                sums.set_result(store.system_sums(starts))
            pending = (batch, series, steady, sums)
        if pending:
            finish(*pending)


# A batch's per-second throughput (seconds, numpy TPS) and steady state, by point id.
_Series = dict[int, tuple[Sequence[float], Floats]]
_Steady = dict[int, steadystate.SteadyState | None]


def derive(store: ResultStore, run_id: int, point_ids: Iterable[int]) -> None:
    """Compute and cache the derived figures of points just stored, so that the SQL
    views (views.py) show their `value` without a dbarena read first, and fold them into
    their run's summaries (session_summaries)."""
    ids = tuple(point_ids)
    values = store.point_values(run_id=run_id, warmups=True, point_ids=ids)
    if not values:
        return
    runs = store.runs_by_id([run_id])
    derived = _derived(store, [stored_point(v) for v in values], runs)
    # Their run's summaries kept up to date as they are stored (session_summaries).
    summarise_stored(store, run_id, _analysed(store, values, runs, derived))


def _value(row: Summarised) -> float | None:
    if type(row) is SummaryPoint:
        return row.value  # (value() of its point, kept when its session was summarised)
    # The steady-state mean where a series exists (warm-up excluded), else the tool's
    # figure in its metric (mysqlslap: its seconds).
    if row.steady_tps is not None and row.metric == metric.TPS:
        return row.steady_tps
    return metric.figure(row, row.metric)


def value(row: Summarised) -> float | None:
    """A loaded point's figure, as summaries and comparisons use it (None if failed)."""
    return _value(row) if row.status == "ok" else None


def result_value(result: PointResult) -> float | None:
    """The same figure for a point just measured, before it is read back from the
    store: what adaptive repeats judge their precision on."""
    m = result.measurement
    if not result.ok or m is None:
        return None
    if m.tps is not None and result.samples:
        steady = steadystate.steady_state([s.second for s in result.samples], [s.tps for s in result.samples],
                                    result.spec.duration_s, result.spec.engine)
        assert steady is not None  # the series is not empty
        return steady.mean
    return metric.figure(m)


def summaries(rows: Iterable[Summarised],
              histograms: Histograms | None = None, lent: Sequence[LentSession] = (),
              interleaved: bool = False) -> list[LevelSummary]:
    """One summary per label and configuration key over its repeats, with their latency
    (pooled_latency; percentiles of several repeats need `histograms`, i.e.
    store.latency_histograms). `lent`: the sessions of other labels' groups (in the order
    of their points: store.lent_sessions, lend), which lend only their spread between
    sessions, as those labels' points would: after `rows` (their points read after the
    rows'), or `interleaved` with them by their first points (read with the rows, in
    the points' order): the order the spread between sessions is pooled in, to the
    last bit."""
    groups = _groups_of(rows)
    valued_of = {key: _valued(members) for key, members in groups.items()}
    # Each group by session (a stored run is one session: stats/sessions.py).
    by_session = {key: sessions.of((m.run_id, v) for m, v in valued) for key, valued in valued_of.items()}
    of_config = _sessions_of_configs(groups, by_session, lent, interleaved)
    searched = _capacities(groups)
    at_rate = atrate.of_groups(groups)
    return [completed(_own_summary(key, members, valued_of[key], by_session[key], histograms), by_session[key],
                      of_config, searched, at_rate.get(key))
            for key, members in groups.items()]


def _groups_of(rows: Iterable[Summarised]) -> dict[tuple[str, str], list[Summarised]]:
    """The rows by summaries' key (label, configuration key), in the order of their first
    points; a point without a key (none should be) is never pooled with another."""
    groups: dict[tuple[str, str], list[Summarised]] = defaultdict(list)
    for row in rows:
        groups[(row.label, row.config_key or f"point {row.point_id}")].append(row)
    return groups


def _valued(members: Sequence[Summarised]) -> list[tuple[Summarised, float]]:
    """A group's ok points with their figures (those that have one)."""
    return [(m, v) for m in members if m.status == "ok" and (v := _value(m)) is not None]


def own_summaries(rows: Iterable[Summarised], histograms: Histograms | None = None) -> list[StoredGroup]:
    """summaries()' groups with what each takes from no other group (what the store keeps
    of a label's configuration over its sessions: store.save_group_summaries), and their
    sessions; `completed` makes the rest of each from every group read."""
    out = []
    for key, members in _groups_of(rows).items():
        valued = _valued(members)
        found = sessions.of((m.run_id, v) for m, v in valued)
        summary = _own_summary(key, members, valued, found, histograms)
        out.append(StoredGroup(first_point=members[0].point_id, summary=summary,
                               session_means=found.means if found is not None else (),
                               session_runs=found.runs if found is not None else (),
                               **_shown(summary, members)))
    return out


class _Shown(TypedDict):
    level: LevelMeans | None
    runs: tuple[tuple[int, int], ...]
    ok: int
    shown: ShownPoint | None
    links: tuple[int, ...]
    profiled: tuple[tuple[int, float], ...]


_REPEAT_ID = operator.attrgetter("repeat", "point_id")


def _shown(summary: LevelSummary, members: Sequence[Summarised]) -> _Shown:
    """What a report reads of a group's points (its points, in their order) besides its
    summary: records.StoredGroup's fields from `level` on (an offered rate's group is no
    level of its own: none of them)."""
    runs: dict[int, int] = {}
    for m in members:
        runs.setdefault(m.run_id, m.point_id)
    ok = [m for m in members if m.status == "ok"]
    if summary.target_tps is not None:
        return {"level": None, "runs": tuple(runs.items()), "ok": len(ok), "shown": None, "links": (), "profiled": ()}
    first = min(ok, key=_REPEAT_ID) if ok else None
    ordered = sorted(members, key=_REPEAT_ID)
    return {
        "level": levelmeans.of_group(summary, ok), "runs": tuple(runs.items()), "ok": len(ok),
        "shown": None if first is None else ShownPoint(first.point_id, first.threads, first.repeat,
                                                       first.steady_start_s, tuple(first.dips_s)),
        # (Serve's links of a level: its ok points first, each part by repeat and id.)
        "links": tuple(m.point_id for part in (True, False) for m in ordered if (m.status == "ok") is part),
        "profiled": tuple(sorted((m.point_id, float(m.transactions)) for m in ok if m.profile and m.transactions)),
    }


def _sessions_of_configs(groups: Mapping[tuple[str, str], list[Summarised]],
                         by_session: Mapping[tuple[str, str], sessions.Sessions | None],
                         lent: Sequence[LentSession], interleaved: bool) -> dict[str, list[sessions.Sessions]]:
    """Every configuration's groups by session, the rows' and the lent ones, whose spread
    between sessions a group of one session borrows, in the order it is pooled in."""
    of_config: dict[str, list[sessions.Sessions]] = defaultdict(list)
    own = [(members[0].point_id, key[1], of_group) for (key, members), of_group in zip(groups.items(),
                                                                                       by_session.values())
           if of_group is not None]
    borrowed = _lent_groups(lent, groups)
    for _, config_key, group in sorted([*own, *borrowed], key=operator.itemgetter(0)) if interleaved and borrowed \
            else [*own, *borrowed]:
        of_config[config_key].append(group)
    return of_config


Searched = Mapping[tuple[str, str], tuple[capacity.Capacity, Interference | None]]


def completed(own: LevelSummary, found: sessions.Sessions | None, of_config: Mapping[str, list[sessions.Sessions]],
              searched: Searched, at_rate: AtRate | None = None) -> LevelSummary:
    """A group's own summary (_own_summary) with what it takes from the other groups read:
    the spread between sessions of its configuration (`of_config`, every configuration's
    groups by session: summaries'), for a closed-loop group, the capacity its label's
    search found (`searched`: _capacities), and for a group offered a fixed rate, its
    latency there (`at_rate`: atrate.of_groups)."""
    known = sessions.known_for(own.config_key, found, of_config) if found is not None else None
    # --slo: an open-loop group's offered rate; a closed-loop group's capacity.
    found_capacity, stepped_under = searched.get((own.label, capacity.search_key(own.config)), (None, None)) \
        if searched and own.target_tps is None and own.config is not None else (None, None)
    return dataclasses.replace(
        own, between_sessions=_between_words(found, known),
        # What comparisons use: the mean over sessions, with the spread between them.
        estimate=sessions.estimate(found, known) if found is not None else None,
        capacity=found_capacity.as_json() if found_capacity is not None else None,
        capacity_estimate=found_capacity.estimate if found_capacity is not None else None,
        capacity_interference=stepped_under, at_rate=at_rate)


def _own_summary(key: tuple[str, str], members: list[Summarised], valued: list[tuple[Summarised, float]],
                 found: sessions.Sessions | None, histograms: Histograms | None) -> LevelSummary:
    """One group's summary but what it takes from other groups (`completed`): `valued`
    its ok points with their figures, `found` its sessions."""
    ok = [m for m, _ in valued]
    low, high = (ok[0].tps_ci_low, ok[0].tps_ci_high) if len(ok) == 1 else (None, None)
    within = (low, high) if low is not None and high is not None else None
    adaptive = any(m.adaptive for m in ok)
    summary = stats.summarize([v for _, v in valued], failed=len(members) - len(ok), within_run=within,
                              adaptive=adaptive)
    judged_by = ok[0].metric if ok else members[0].metric
    first = members[0]
    printed = _statistic(ok)
    pooled = pooled_latency(ok, histograms)
    costs, costs_by_session = efficiency.of_group((m.run_id, m.efficiency) for m in ok)
    return LevelSummary(
        label=key[0], config_key=key[1], engine=first.engine, workload=first.workload, threads=first.threads,
        clients=first.clients, variant=first.variant, config=first.config,
        metric=judged_by, lower_is_better=metric.lower_is_better(judged_by),
        n=summary.n, failed=summary.failed, sessions=found.count if found is not None else 0,
        between_sessions=None, median=summary.median, mean=summary.mean,
        statistic=printed.statistic, printed_median=printed.printed_median,
        stdev=summary.stdev, ci_low=summary.ci_low, ci_high=summary.ci_high, cv=summary.cv,
        interval=_interval_words(summary, adaptive),
        warnings=[f.as_dict() for f in summary.flags] + _group_warnings(summary, ok, key[0]),
        bound=bound.of_group(m.bound for m in ok),  # where the server was sampled (analysis.load)
        latency_min_ms=pooled.latency_min_ms, latency_p50_ms=pooled.latency_p50_ms,
        latency_p90_ms=pooled.latency_p90_ms,
        latency_p95_ms=pooled.latency_p95_ms, latency_p99_ms=pooled.latency_p99_ms,
        latency_p999_ms=pooled.latency_p999_ms, latency_max_ms=pooled.latency_max_ms,
        latency_avg_ms=pooled.latency_avg_ms, latency_pooled=pooled.latency_pooled,
        # Every figure the repeats stored, each over them (median, mean, n, spread) and
        # labelled: what published tables give (a mean of printed p95s), named as such.
        over_repeats={column: figure.as_dict() for column, figure in repeats.over_repeats(ok).items()},
        estimate=None,
        # A group's points share their label, and so the series it was named from.
        series_label=first.series_label,
        interference=interference.of_points(ok),
        target_tps=first.target_tps,
        efficiency=dict(costs) or None,
        efficiency_sessions=costs_by_session or None,
    )


def _interval_words(summary: stats.Summary, adaptive: bool) -> str | None:
    """What a group's interval is: over repeats, or (one repeat) the precision of that run."""
    if summary.ci_low is None:
        return None
    if summary.within_run:
        return "within one run"
    return "between runs, conservative (adaptive repeats)" if adaptive else "between runs"


def _group_warnings(summary: stats.Summary, ok: list[Summarised], label: str) -> list[dict[str, str]]:
    """The point-level warnings that matter for the whole group (deduplicated by code,
    after the summary's own), and several hosts under one label."""
    seen = {f.code.value for f in summary.flags}
    point_flags: list[dict[str, str]] = []
    for m in ok:
        for w in m.warnings:
            if w["code"] not in seen:
                seen.add(w["code"])
                point_flags.append(w)
    hosts = sorted({m.host for m in ok if m.host and m.host != "imported"})
    if len(hosts) > 1:
        # Two machines under one label with the same CPU model, threads and memory have
        # one configuration key: pooled, but never silently.
        point_flags.append(steadystate.Flag(steadystate.Warning_.SEVERAL_HOSTS, (
            f"the repeats come from {len(hosts)} hosts ({', '.join(hosts)}) that share the label "
            f"{label!r} and identical hardware facts: give each host its own label to compare them")).as_dict())
    return point_flags


def _lent_groups(lent: Sequence[LentSession], shown: Mapping[tuple[str, str], object]
                 ) -> list[tuple[int, str, sessions.Sessions]]:
    """The lent sessions as groups (label, configuration key), each with its Sessions, in
    the order of its first point (where its points would have come among the rows: the
    order the pooled spread is summed in), each after its first point's id; a group the
    rows hold is theirs, not lent."""
    grouped: dict[tuple[str, str], list[LentSession]] = {}
    for one in lent:
        if (one.label, one.config_key) not in shown:
            grouped.setdefault((one.label, one.config_key), []).append(one)
    out = []
    for (_, config_key), found in grouped.items():
        valued = sorted((s for s in found if s.runs), key=operator.attrgetter("run_id"))
        if valued:
            out.append((min(s.first_point for s in found), config_key,
                        sessions.Sessions(means=tuple(s.mean for s in valued), runs=tuple(s.runs for s in valued))))
    return out


def session_summaries(rows: Iterable[Summarised]) -> list[SessionSummary]:
    """Each configuration's measured points by session (label, configuration key, run),
    as summaries groups them (a point without a key alone), in the order their first
    points come in `rows` (load's: the points' own): what the store keeps of them as they
    are stored (store.save_session_summaries)."""
    groups: dict[tuple[int, str], list[Summarised]] = {}
    for row in rows:
        if row.phase == "measured":
            groups.setdefault((row.run_id, row.config_key or f"point {row.point_id}"), []).append(row)
    return [SessionSummary(run_id=run_id, label=members[0].series_label, config_key=config_key,
                           members=tuple(map(summary_point, members)))
            for (run_id, config_key), members in groups.items()]


# Of a point's details, those a summary and a report's level read (metric.figure: a TPC-C
# kit's new-order rate; capacity.of_point: the transactions a rate-limited run skipped;
# report/levels.py: the TPC-C-like workload's own figures).
TPCC_DETAILS = ("tpm_new_order", "per_type", "rollbacks")  # (report/levels._tpcc_figures)
SUMMARY_DETAILS = (*metric.DETAIL_KEYS, capacity.SKIPPED, *TPCC_DETAILS)


def summary_point(point: Summarised) -> SummaryPoint:
    """What a session's summary keeps of an analysed point (records.SummaryPoint; a
    summary's point is one already)."""
    if isinstance(point, SummaryPoint):
        return point
    details = point.details
    return SummaryPoint(
        point.point_id, value(point), point.status, point.error, point.metric, point.steady_tps, point.tps_ci_low,
        point.tps_ci_high, point.duration_s, {k: details[k] for k in SUMMARY_DETAILS if k in details},
        point.histogram, point.tps, point.qps, point.run_avg_s, point.transactions, point.failed_transactions,
        point.errors, point.latency_min_ms, point.latency_avg_ms, point.latency_p50_ms, point.latency_p90_ms,
        point.latency_p95_ms, point.latency_p99_ms, point.latency_p999_ms, point.latency_max_ms, point.warnings,
        point.bound, point.neighbour_cpu, point.steal_cpu, point.efficiency, point.cpu_busy_pct,
        point.cpu_iowait_pct, point.server_cpu, point.loadgen_cpu, point.queries, point.repeat, point.steady_start_s,
        point.dips_s, point.profile,
        point.run_id, point.series_label, point.series_label, point.config_key, point.host, point.engine,
        point.workload, point.threads, point.clients, point.variant, point.config, point.phase, point.adaptive,
        point.machine_threads, point.slo, point.target_tps, point.params)


def lend(summary: SessionSummary) -> LentSession:
    """What a session's summary lends other labels' comparisons."""
    values = summary.values
    return LentSession(label=summary.label, config_key=summary.config_key, run_id=summary.run_id,
                       first_point=summary.members[0].point_id, runs=len(values),
                       mean=statistics.fmean(values) if values else 0.0)


def folded(kept: Iterable[SessionSummary], fresh: Iterable[Summarised]) -> list[SessionSummary]:
    """A run's summaries with points just stored (or figured again) folded in: each
    point replaces itself where it was held already. The same as session_summaries of
    all the run's points, without reading the others again."""
    members: dict[tuple[int, str], dict[int, SummaryPoint]] = {}
    labels: dict[tuple[int, str], str] = {}
    for summary in [*kept, *session_summaries(fresh)]:
        key = (summary.run_id, summary.config_key)
        labels[key] = summary.label
        members.setdefault(key, {}).update((m.point_id, m) for m in summary.members)
    out = [SessionSummary(run_id=key[0], label=labels[key], config_key=key[1],
                          members=tuple(sorted(held.values(), key=operator.attrgetter("point_id"))))
           for key, held in members.items()]
    return sorted(out, key=lambda s: s.members[0].point_id)


def lent_sessions(store: ResultStore, labels: Sequence[str]) -> list[LentSession]:
    """What the points of `labels` lend a comparison of others, from the summaries the
    store keeps (store.lent_sessions) rather than from every point: a run whose
    summaries are missing, of another estimator version or short of its points (a
    merged run, a store migrated, a point stored by an older dbarena) is summarised
    from its points, and its summaries saved for the next read."""
    if not labels:
        return []
    kept, stale = store.lent_sessions(tuple(labels), ESTIMATOR_VERSION)
    if not stale:
        return kept
    wanted = set(stale)
    # (One read of the labels whose runs are stale, not a read per run: after a
    # migration every run is.)
    points = [p for p in load(store, labels=tuple(dict.fromkeys(
        run.label for run in store.runs_by_id(wanted).values()))) if p.run_id in wanted]
    made = session_summaries(points)
    store.save_session_summaries(sorted(wanted), made, ESTIMATOR_VERSION)
    return sorted([*kept, *map(lend, made)], key=operator.attrgetter("first_point"))


def summarise_cached(store: ResultStore, labels: Sequence[str]) -> None:
    """Summarise the runs of `labels` that have no summaries yet (or stale ones) but
    whose points' derived figures are all cached (a merge brought them); the others
    are left for the first read that needs them, which computes their figures too."""
    if not labels:
        return
    _, stale = store.lent_sessions(tuple(labels), ESTIMATOR_VERSION)
    if not stale:
        return
    wanted = set(stale)
    with collector_paused():
        values = [v for v in store.point_values(labels=tuple(dict.fromkeys(
            run.label for run in store.runs_by_id(wanted).values()))) if v[_AT["run_id"]] in wanted]
        derived = store.derived(map(_point_id, values), ESTIMATOR_VERSION)
        missing = {v[_AT["run_id"]] for v in values if v[_AT["point_id"]] not in derived}
        ready = [v for v in values if v[_AT["run_id"]] not in missing]
        runs = store.runs_by_id({v[_AT["run_id"]] for v in ready})
        made = session_summaries(_analysed(store, ready, runs, derived))
    store.save_session_summaries(sorted(wanted - missing), made, ESTIMATOR_VERSION)


def stored_points(store: ResultStore, *, run_id: int | None = None, labels: tuple[str, ...] = (),
                  study: str | None = None, variants: tuple[str, ...] = (), named: Naming | None = None
                  ) -> list[SummaryPoint]:
    """What the summaries the store keeps of the sessions hold of the points load() would
    read with these filters (records.SummaryPoint: what a summary and a report's levels
    read of each), in the points' order, each under its name where `named` names them
    (load's `named`): a view's points without reading their rows. A run whose summaries
    are missing, of another estimator version or short of its points is summarised from
    its points first, and its summaries saved for the next read."""
    runs = [r for r in store.runs() if (run_id is None or r.id == run_id) and (not labels or r.label in labels)]
    if study is not None:
        runs = [r for r in runs if r.study_sha256 and (r.study_sha256.startswith(study) or (
            (found := store.study(r.study_sha256)) is not None and found.name == study))]
    # (Points made while the collector is paused, as load's: its passes over 100 k new
    # tuples and their lists cost more than making them.)
    with collector_paused():
        kept, stale = store.summarised([r.id for r in runs], ESTIMATOR_VERSION)
    if stale:
        kept = [*kept, *_summarised_again(store, stale, runs)]
    if variants:
        kept = [one for one in kept if one.members[0].variant in variants]  # (a session's points share theirs)
    with collector_paused():
        if named is not None:
            # A session's points share what names them (records.SeriesKey): named a session at a time.
            names = named([SeriesKey(one.label, *_SESSION_KEY(one.members[0])) for one in kept])
            kept = [one if name == one.label else dataclasses.replace(one, members=tuple(
                        SummaryPoint._make(m[:_LABEL_AT] + (name,) + m[_LABEL_AT + 1:]) for m in one.members))
                    for one, name in zip(kept, names)]
        out = sorted((m for one in kept for m in one.members), key=operator.attrgetter("point_id"))
    bulk.keep(len(out))  # (what a read command keeps to its end, as load's)
    return out


def _summarised_again(store: ResultStore, stale: Sequence[int], runs: Sequence[StoredRun]) -> list[SessionSummary]:
    """The session summaries of these runs made from their points, and saved."""
    wanted = set(stale)
    points = [p for p in load(store, labels=tuple(dict.fromkeys(r.label for r in runs if r.id in wanted)))
              if p.run_id in wanted]
    made = session_summaries(points)
    store.save_session_summaries(sorted(wanted), made, ESTIMATOR_VERSION)
    return made


_SESSION_KEY = operator.attrgetter(*SeriesKey._fields[1:])
_LABEL_AT = SummaryPoint._fields.index("label")


def summarise_all(store: ResultStore) -> int:
    """Summarise the sessions of every run whose summaries are missing, stale or short,
    and every label's configurations over their sessions where the store keeps none
    (`store migrate`: after a schema that changed what they hold); the number of runs
    whose sessions were summarised."""
    stale = store.short_sessions([r.id for r in store.runs()], ESTIMATOR_VERSION)
    stored_groups(store)  # (which summarises those runs' sessions first)
    return len(stale)


def stored_summaries(store: ResultStore, *, run_id: int | None = None, labels: tuple[str, ...] = (),
                     study: str | None = None, variants: tuple[str, ...] = ()) -> list[LevelSummary]:
    """summaries() of the points load() would read with these filters, made from the
    summaries the store keeps of each label's configurations (stored_groups), or where
    the filters cut groups apart (a run, a study) or a group is a search's offered rate
    (its capacity is made from its points), of their sessions (stored_points), rather than
    from every point's row: the same figures, to the last bit (the same function of the
    same values in the same order)."""
    if run_id is None and study is None:
        kept = stored_groups(store, labels)
        if kept is not None:
            # (A group's points share their variant: the groups of those variants are the
            # groups of those variants' points, and lend each other their spread as those would.)
            return of_groups([g for g in kept if not variants or g.summary.variant in variants])
    return summaries(stored_points(store, run_id=run_id, labels=labels, study=study, variants=variants),
                     histograms=store.latency_histograms)


def stored_groups(store: ResultStore, labels: tuple[str, ...] = ()) -> list[StoredGroup] | None:
    """What the store keeps of these labels' configurations over their sessions (every
    label's without `labels`), in the order of their first points: the runs whose session
    summaries are missing, stale or short are summarised first, and a group without a
    summary kept (a session of it stored, changed or forgotten since) is made from its
    sessions' summaries and kept for the next read. None where a group is an offered
    rate's (--slo: its label's capacity is made from the points of its search)."""
    # (Read first: groups made from sessions a writer changes meanwhile are not kept.)
    generation = store.group_generation()
    runs = [r for r in store.runs() if not labels or r.label in labels]
    stale = store.short_sessions([r.id for r in runs], ESTIMATOR_VERSION)
    # (Made here, and used as made: a store that cannot keep them, an older one read
    # through a copy in memory, still answers.)
    fresh = _summarised_again(store, stale, runs) if stale else []
    if fresh:  # (this read's own session rows moved the count on: read after them)
        generation = store.group_generation()
    kept, missing = store.group_summaries(labels, ESTIMATOR_VERSION)
    if fresh:
        remade = {(one.label, one.config_key) for one in fresh}
        kept = [g for g in kept if (g.summary.label, g.summary.config_key) not in remade]
        missing = sorted({*missing, *remade})
    if missing:
        made = _groups(store, missing, runs, fresh)
        store.save_group_summaries(made, ESTIMATOR_VERSION, generation)
        kept = sorted([*kept, *made], key=operator.attrgetter("first_point"))
    return None if any(g.summary.target_tps is not None for g in kept) else kept


def _groups(store: ResultStore, wanted: Sequence[tuple[str, str]], runs: Sequence[StoredRun],
            fresh: Sequence[SessionSummary]) -> list[StoredGroup]:
    """These (label, configuration key) groups made from their sessions' summaries:
    `fresh` those just made, the others read (a run whose rows do not all read is
    summarised from its points again first)."""
    keys: dict[str, set[str]] = defaultdict(set)
    for label, key in wanted:
        keys[label].add(key)
    made = {one.run_id for one in fresh}
    members: list[SummaryPoint] = []
    for label, of_label in keys.items():
        with collector_paused():
            found, stale = store.summarised([r.id for r in runs if r.label == label and r.id not in made],
                                            ESTIMATOR_VERSION)
        if stale:
            found = [*found, *_summarised_again(store, stale, runs)]
        found = [*found, *(one for one in fresh if one.label == label)]
        members.extend(m for one in found if one.config_key in of_label for m in one.members)
    members.sort(key=operator.attrgetter("point_id"))
    return own_summaries(members, histograms=store.latency_histograms)


def of_groups(groups: Sequence[StoredGroup], lent: Sequence[LentSession] = (),
              interleaved: bool = False) -> list[LevelSummary]:
    """summaries() of the groups' points, from what the store keeps of the groups
    (stored_groups): each group's own summary completed with the spread between sessions
    the others of its configuration lend it, and those `lent` lends, in the order
    summaries() pools them (`lent` and `interleaved` as its)."""
    found = [sessions.Sessions(means=g.session_means, runs=g.session_runs) if g.session_means else None
             for g in groups]
    own = [(g.first_point, g.summary.config_key, of_group) for g, of_group in zip(groups, found) if of_group is not None]
    borrowed = _lent_groups(lent, {(g.summary.label, g.summary.config_key): g for g in groups})
    of_config: dict[str, list[sessions.Sessions]] = defaultdict(list)
    for _, config_key, of_group in sorted([*own, *borrowed], key=operator.itemgetter(0)) if interleaved and borrowed \
            else [*own, *borrowed]:
        of_config[config_key].append(of_group)
    return [completed(group.summary, of_group, of_config, {}) for group, of_group in zip(groups, found)]


def summarise_stored(store: ResultStore, run_id: int, points: Sequence[AnalysedPoint]) -> None:
    """Fold points just stored in a run (with their derived figures) into the summaries
    the store keeps of its configurations (session_summaries)."""
    # Only the rows of the configurations these points are of: a run's other rows (a
    # study's other levels and workloads) are neither read nor written again.
    keys = sorted({one.config_key for one in session_summaries(points)})
    if not keys:
        return
    kept = store.session_summaries([run_id], ESTIMATOR_VERSION, keys)
    store.save_session_summaries([run_id], folded(kept, points), ESTIMATOR_VERSION, keys)


def _capacities(groups: Mapping[tuple[str, str], list[Summarised]]
                ) -> dict[tuple[str, str], tuple[capacity.Capacity, Interference | None]]:
    """(label, search key) -> the capacity its open-loop points found (--slo), at the
    objective of the latest run that searched (its runs' objectives may differ: one
    capacity is of one objective, and the newest is what was asked last); and what its
    offered-rate points ran under (stats/interference.py), which its comparisons check."""
    by_search: dict[tuple[str, str], list[Summarised]] = defaultdict(list)
    for (label, _), members in groups.items():
        first = members[0]
        if first.target_tps is not None and first.config is not None:
            by_search[(label, capacity.search_key(first.config))] += members
    out = {}
    for key, members in by_search.items():
        searched = [m for m in members if m.slo is not None]
        if not searched:
            continue
        objective = capacity.Objective.from_json(max(searched, key=lambda m: m.run_id).slo)
        if objective is None:
            continue
        stepped = [m for m in members if m.target_tps is not None and m.phase == "measured"]
        out[key] = (capacity.capacity(objective, [
            capacity.RatePoint(m.run_id, capacity.judge(objective, m.target_tps, capacity.of_point(m)))
            for m in stepped if m.target_tps is not None]), interference.of_points(stepped))
    return out


def _between_words(found: sessions.Sessions | None, known: sessions.Between | None) -> str | None:
    """Where a group's spread between sessions comes from, in words (None: nowhere)."""
    if found is None:
        return None
    if found.count >= sessions.MIN_SESSIONS and known is not None:
        return (f"its own {found.count} sessions, pooled with {known.sessions} of the same configuration in "
                f"{known.groups} other group(s)")
    if found.count >= sessions.MIN_SESSIONS:
        return f"its own {found.count} sessions"
    if known is not None:
        return (f"{known.sessions} sessions of the same configuration in {known.groups} other group(s) "
                "(other labels, same host facts, server and settings)")
    return None


# What a summary's median and mean are over: each repeat's steady-state mean (warm-up
# excluded, from its per-second series), or the figure the tool printed (a run without
# a series); beside them, the median of the printed figures, the statistic published
# studies use, so that theirs can be reproduced exactly.
STEADY = "steady-state mean per run"
PRINTED = "figure the tool printed per run"


@dataclasses.dataclass(frozen=True)
class _Statistic:
    statistic: str | None
    printed_median: float | None


def _statistic(ok: list[Summarised]) -> _Statistic:
    steady = [m.steady_tps is not None for m in ok]
    printed = [v for m in ok if (v := metric.figure(m, m.metric)) is not None]
    return _Statistic(
        statistic=(STEADY if all(steady) else PRINTED if not any(steady) else
                   f"mixed: {sum(steady)} steady-state mean(s), {len(steady) - sum(steady)} printed figure(s)")
        if ok else None,
        printed_median=statistics.median(printed) if printed else None,
    )


# point ids -> each one's stored latency histogram record (store.latency_histograms).
Histograms = Callable[[list[int]], Mapping[int, JSONObject]]


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class PooledLatency:
    """A group's latency over its repeats (pooled_latency): the LevelSummary fields of
    the same names. `latency_pooled`: how its percentiles were found, or why there are
    none (None for a group without an ok point)."""

    latency_min_ms: float | None = None
    latency_p50_ms: float | None = None
    latency_p90_ms: float | None = None
    latency_p95_ms: float | None = None
    latency_p99_ms: float | None = None
    latency_p999_ms: float | None = None
    latency_max_ms: float | None = None
    latency_avg_ms: float | None = None
    latency_pooled: str | None = None


def pooled_latency(ok: Sequence[Summarised], histograms: Histograms | None) -> PooledLatency:
    """Latency over a group's repeats. Percentiles: of their merged histograms, never an
    average of percentiles; repeats without a histogram each (imports of tools that
    print one percentile, stores older than schema 13) get none, and `latency_pooled`
    says why. The average: of what the tool printed, weighted by transactions (a
    sampled log's mean is only an estimate of it). One point: its own figures."""
    if not ok:
        return PooledLatency()
    # The minimum: the least of the minima each repeat printed (the pooled transactions'
    # own minimum, exact where a histogram's would be rounded to its bucket), when all
    # printed one.
    minima = [m.latency_min_ms for m in ok if m.latency_min_ms is not None]
    least = min(minima) if minima and len(minima) == len(ok) else None
    if len(ok) == 1:
        (m,) = ok
        return PooledLatency(latency_min_ms=least, latency_p50_ms=m.latency_p50_ms, latency_p90_ms=m.latency_p90_ms,
                             latency_p95_ms=m.latency_p95_ms, latency_p99_ms=m.latency_p99_ms,
                             latency_p999_ms=m.latency_p999_ms, latency_max_ms=m.latency_max_ms,
                             latency_avg_ms=m.latency_avg_ms, latency_pooled="one point")
    means = [(m.latency_avg_ms, m.transactions or 0) for m in ok if m.latency_avg_ms is not None]
    weighted = len(means) == len(ok) and all(n for _, n in means)
    average = sum(v * n for v, n in means) / sum(n for _, n in means) if weighted else None
    records = histograms([m.point_id for m in ok]) if histograms is not None else {}
    pool: latency.Latencies | None = None
    figures: dict[str, float | None] = {}
    try:
        # (The store's edge checked each record's figures; an HDR encoding that does not
        # decode, from a store edited by hand, is known only here: no pooled percentiles.)
        if len(records) == len(ok):
            pool = latency.merged(latency.Latencies.decode(records[m.point_id]) for m in ok)
            figures = pool.percentiles_ms() if pool is not None else {}
    except Exception:  # noqa: BLE001 - whatever hdrh makes of garbage
        pool, records = None, {}
    if pool is not None:
        return PooledLatency(latency_min_ms=least, latency_p50_ms=figures["p50"], latency_p90_ms=figures["p90"],
                             latency_p95_ms=figures["p95"], latency_p99_ms=figures["p99"],
                             latency_p999_ms=figures["p999"], latency_max_ms=figures["max"],
                             latency_avg_ms=average if average is not None else pool.mean_ms,
                             latency_pooled=f"merged histograms of {len(ok)} points")
    maxima = [m.latency_max_ms for m in ok if m.latency_max_ms is not None]
    return PooledLatency(latency_min_ms=least, latency_max_ms=max(maxima) if len(maxima) == len(ok) else None,
                         latency_avg_ms=average,
                         latency_pooled=f"no pooled percentiles: {len(ok) - len(records)} of {len(ok)} points "
                                        "have no latency histogram to merge (over_repeats: the median and mean "
                                        "of the percentiles each run printed)")


class _Sided(Protocol):
    """What sides() reads of a point, or of a group of points (LevelSummary)."""

    @property
    def series_label(self) -> str: ...

    @property
    def variant(self) -> str | None: ...


def sides(rows: Iterable[_Sided], a: str, b: str) -> str:
    """What `compare A B` compares: two labels, or two variants (within each label).
    The labels as stored: a point a report shows under its series' name ("a [config
    1a2b3c]") is still of label "a" (its series_label). `rows`: the points, or their
    groups (a group's points share its label and variant)."""
    rows = list(rows)
    labels = set(map(operator.attrgetter("series_label"), rows))
    variants = {v for v in map(operator.attrgetter("variant"), rows) if v}
    if a in labels and b in labels:
        return "label"
    if a in variants and b in variants:
        return "variant"
    for name in (a, b):
        if name not in labels and name not in variants:
            raise UsageError(f"no points labelled {quoted(name)} and no variant of that name "
                             f"(labels: {listed(sorted(labels)) or '-'}; variants: {listed(sorted(variants)) or '-'})")
    raise UsageError(f"{quoted(a)} and {quoted(b)} are not both labels or both variants")


def compare(rows: Iterable[Summarised], a: str, b: str, about: Iterable[str] = (),
            groups: list[LevelSummary] | None = None, history: Sequence[Summarised] = (),
            profile_store: ResultStore | None = None, lent: Sequence[LentSession] = (),
            interleaved: bool = True, profiled_groups: Mapping[tuple[str, str], Profiled] | None = None
            ) -> list[LevelComparison]:
    """B against A at every configuration both measured. A and B are labels (a host
    comparison: keys must match apart from the host) or variants (an A/B: apart
    from the variant and its settings, within each label). `about` names more fields
    the comparison is about (server, settings, host, variant). A verdict rests on the
    variation between runs: with fewer than stats.MIN_REPEATS repeats on a side the row
    has the ratio, `verdict` None and the reason. `history`: other points of the store
    (none of A's or B's), read only for the spread between sessions of the sides'
    configurations (stats/sessions.py), never compared. Where a group of A has
    no matching group in B at its engine, workload and threads, the row says which
    fields differ instead of giving a ratio. `groups`: summaries(rows), when the caller
    has them (a report comparing every label with the baseline). `profile_store`: the store,
    to read the stacks of levels both sides profiled (profile_changes: level_profiles).
    `lent`: what the sessions of labels not among the rows lend (lent_sessions), as
    their points would: among the rows' (`interleaved`, the rows read in the points'
    order with them), or after them as `history` (summaries' order). `profiled_groups`:
    each group's profiled points (label, configuration key -> StoredGroup.profiled), where
    the caller has the groups rather than the rows."""
    rows = list(rows)
    # (From the caller's groups of the rows where it has them: a group a label and
    # configuration, so the same labels and variants as the rows', a few hundred, not
    # 100 k points read again for each pair.)
    by = sides(rows if groups is None else groups, a, b)
    ignore = levelcompare.ignoring(by, about)
    # The caller's, when it compares many pairs; history's groups lend only their spread.
    groups = summaries([*rows, *history], lent=lent, interleaved=interleaved) if groups is None else groups
    side_of: Callable[[LevelSummary], str] = (lambda s: s.label) if by == "label" else (lambda s: s.variant)
    # (An open-loop group is a step of its closed-loop group's search, whose capacity is
    # compared; or offered a rate the user fixed: its latency there is, at_rate.)
    left = [s for s in groups if side_of(s) == a and (s.target_tps is None or s.at_rate is not None)]
    right = [s for s in groups if side_of(s) == b and (s.target_tps is None or s.at_rate is not None)]
    out = []
    pairs: dict[int, tuple[Profiled, Profiled]] = {}
    members = profiled_groups  # (made from the rows at the first pair that needs it)
    for sa in sorted(left, key=lambda s: (s.engine, s.workload, s.threads, s.label)):
        same_place = [sb for sb in right if (sb.engine, sb.workload, sb.threads) ==
                      (sa.engine, sa.workload, sa.threads) and (by == "label" or sb.label == sa.label)]
        if not same_place:
            continue
        row = levelcompare.level(sa, same_place, a=a, b=b, by=by, ignore=ignore)
        if row is None:
            continue
        out.append(row)
        if row.comparable and profile_store is not None:
            match = next(sb for sb in same_place if configkey.matches(sa.config or {}, sb.config or {}, ignore))
            members = _profiled_groups(rows) if members is None else members
            pairs[len(out) - 1] = (members.get((sa.label, sa.config_key), ()),
                                   members.get((match.label, match.config_key), ()))
    if profile_store is not None and pairs:
        changed = level_profiles(profile_store, pairs.values())
        for at, found in zip(pairs, changed):
            if found is not None:
                out[at] = dataclasses.replace(out[at], profile_changes=[dict(c.as_json().items()) for c in found])
    return out


def _profiled_groups(rows: Sequence[Summarised]) -> dict[tuple[str, str], Profiled]:
    """Each group's profiled ok points, by summaries' key (its label and configuration
    key): one pass over the rows for every pair of levels (a pass for each was most of
    `compare` of 50 k points)."""
    return {key: profiled(r for r in members if r.status == "ok") for key, members in _groups_of(rows).items()}


# How many functions compare names a level's change in time per transaction by.
PROFILE_CHANGES = 10


# A level's profiled points: (point id, transactions committed), in the points' order.
Profiled = Sequence[tuple[int, float]]


def profiled(points: Iterable[Summarised]) -> list[tuple[int, float]]:
    """Of these points, those with a profile and transactions: what a level's profile pools."""
    return [(p.point_id, float(p.transactions)) for p in points if p.profile and p.transactions]


def level_profiles(store: ResultStore, pairs: Iterable[tuple[Profiled, Profiled]],
                   limit: int = PROFILE_CHANGES) -> list[list[profiles.Change] | None]:
    """For each (A's profiled points, B's: `profiled`) of a level, the functions whose CPU
    time per transaction changed most from A to B (profiles.pooled_differential: each
    side's points pooled), or None where a side has no such point. One read of the store
    for every pair's stacks, of the profiled points alone."""
    pairs = list(pairs)
    wanted = {point_id for a, b in pairs if a and b for point_id, _ in (*a, *b)}
    stacks = store.profiles(wanted, folded=True) if wanted else {}

    def side(points: Profiled) -> list[tuple[dict[str, int], float, float]]:
        out = []
        for point_id, transactions in points:
            found = stacks.get(point_id)
            if found is not None and found.folded is not None:
                out.append((profiles.parse_folded(found.folded), float(found.frequency_hz), transactions))
        return out

    result: list[list[profiles.Change] | None] = []
    for a, b in pairs:
        sides = (side(a), side(b)) if a and b else ([], [])
        changes = profiles.pooled_differential(*sides, limit=limit) if sides[0] and sides[1] else []
        result.append(changes or None)
    return result

