"""What bound one point, from the server's own series (serverside/) and the machine's
(host/sysmetrics.py), with the figures that say so.

decision.bound() reads only the machine (CPU, iowait, the load generator's CPU) over
a level's repeats; this reads one point and also what the server waited for, so that
it can say "locks" or "WAL or fsync" where the CPU says nothing. Where no wait decides,
both climb one CPU ladder (stats/cpuladder.py): the same steps, thresholds and words.
Pure: series in, (kind, evidence) out. Derived on read from what the store keeps (the
server's series, the system samples) like every other figure of a point
(stats/analysis.py, cached by its ESTIMATOR_VERSION), never decided once and stored:
a threshold changed here changes the bound of every point stored before.

What each engine family's waits say is declared beside its reader
(serverside/postgres.py: the share of active-backend samples in each class of wait
event; serverside/mysql.py: the clients waiting on row locks on average, buffer pool
misses), judged by the thresholds declared here; this module names no family.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Iterable, Mapping, Protocol, Sequence

from dbarena.records import JSON, StoredPoint, json_object
from dbarena.serverside.families import DEFAULT, FAMILIES
from dbarena.serverside.mysql import GAUGES
from dbarena.serverside.series import WAIT, ServerSeries
from dbarena.serverside.waits import IO, LOADGEN, LOCKS, SERVER_CPU, WAL, Found, Limits
from dbarena.stats import cpuladder, loadgens, thresholds

__all__ = ["LOCKS", "WAL", "IO", "LOADGEN", "SERVER_CPU", "MACHINE_CPU", "NONE", "KINDS", "CPU_KINDS", "GAUGES",
           "WAIT_SHARE", "MIN_WAIT_SAMPLES", "PointBound", "Readings", "readings", "classify", "classify_means",
           "of_point", "checkpoint_seconds",
           "most_frequent", "of_group", "waiting", "figures", "differs_most", "figure_text"]

MACHINE_CPU, NONE = cpuladder.MACHINE_CPU, cpuladder.NONE
KINDS = (LOCKS, WAL, IO, LOADGEN, SERVER_CPU, MACHINE_CPU, NONE)

# A class of waits that holds this share of the active-backend samples (or of the
# clients, waiting on row locks on average) bounds the point: below it the server
# spends most of its time elsewhere and no one wait decides the throughput.
WAIT_SHARE = 0.3
# iowait: the threshold every view judges by (stats/thresholds.IOWAIT_PCT, read where it
# is declared, when a point is judged); saturation is the CPU ladder's (stats/cpuladder.py).
# Reads that miss InnoDB's buffer pool, as a share of its read requests, past which
# the point reads from storage rather than memory.
MISS_SHARE = 0.05
# The server waiting for its clients (PostgreSQL's Client:ClientRead inside a
# transaction) in this share of the samples: the load generator is the bound.
CLIENT_SHARE = 0.5
# Fewer active-backend samples than this (a point of short transactions catches its
# backends busy in few of its once-a-second looks) say too little to decide from.
MIN_WAIT_SAMPLES = 10


def _limits() -> Limits:
    """The thresholds above as the families' readers take them, made when a point is
    judged (not once at import): a threshold changed is the one every point is judged by."""
    return Limits(wait_share=WAIT_SHARE, client_share=CLIENT_SHARE, miss_share=MISS_SHARE,
                  min_samples=MIN_WAIT_SAMPLES)


@dataclass(frozen=True)
class PointBound:
    kind: str       # one of KINDS
    evidence: str   # the figures, in words


class Readings(Protocol):
    """A point's server readings: `seconds` since it started and each name's values, one
    a second. serverside.series.ServerSeries is one; readings() reads one back from the
    JSON the store keeps."""

    @property
    def seconds(self) -> Sequence[float]: ...
    @property
    def series(self) -> Mapping[str, Sequence[float | None]]: ...


def readings(record: Mapping[str, JSON]) -> ServerSeries:
    """The readings of a stored server record (ServerSeries.encode's JSON; the store's
    edge checked its seconds and values are numbers or None)."""
    engine = record.get("engine")
    seconds = record.get("seconds")
    return ServerSeries(
        engine=engine if isinstance(engine, str) else "",
        seconds=tuple(n for s in seconds if (n := _number(s)) is not None) if isinstance(seconds, list) else (),
        series={name: tuple(_number(v) for v in values)
                for name, values in json_object(record.get("series")).items() if isinstance(values, list)})


def _number(value: JSON) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


# A once-a-second system sample's figures (host/sysmetrics.SystemSample, as a row).
Sample = Mapping[str, float | None]


def _mean(values: Iterable[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.fmean(present) if present else None


def checkpoint_seconds(series: Mapping[str, Sequence[float | None]], seconds: Sequence[float]) -> list[int]:
    """The seconds (rounded) in which a checkpoint began or ended (its counter moved)."""
    column = series.get("checkpoints") or ()
    return [round(s) for s, v in zip(seconds, column) if v]


def _checkpoint_note(series: Mapping[str, Sequence[float | None]], seconds: Sequence[float]) -> list[str]:
    checkpoints = checkpoint_seconds(series, seconds)
    if not checkpoints:
        return []
    return ["checkpoint at " + ", ".join(f"{s} s" for s in checkpoints[:3])
            + (f" and {len(checkpoints) - 3} more" if len(checkpoints) > 3 else "")]


def _cpu_bound(means: Mapping[str, float | None], hardware_threads: int, loadgen_threads: int,
               notes: list[str]) -> PointBound:
    """Where no wait decided: the CPU ladder (stats/cpuladder.py) over the means of the
    point's system samples, the notes after its figures."""
    idle = means.get("cpu_idle_pct")
    found = cpuladder.step(cpuladder.Figures(
        busy_pct=100 - idle if idle is not None else None, iowait_pct=means.get("cpu_iowait_pct"),
        server_cpu=means.get("server_cpu"), loadgen_cpu=means.get("loadgen_cpu"),
        server_threads=hardware_threads, loadgen_threads=loadgen_threads, loadgen_cores=hardware_threads))
    return PointBound(found.kind, "; ".join([p for p in (found.figures, *notes) if p]) or cpuladder.TOO_FEW)


# The system samples' figures the bound reads, as means over the point.
MEANS = ("cpu_idle_pct", "cpu_iowait_pct", "server_cpu", "loadgen_cpu")


def classify(server: Readings | None, system: Sequence[Sample], *, hardware_threads: int,
             loadgen_threads: int, clients: int) -> PointBound:
    """The bound of one point. `server`: its server readings (None: not sampled);
    `system`: its system_samples rows;
    `hardware_threads`: those the server could use; `loadgen_threads`: the tool's
    threads; `clients`: its connections. What the server waited for decides first (the
    largest share past its threshold), then the CPU."""
    return classify_means(server, {name: _mean(s.get(name) for s in system) for name in MEANS},
                          hardware_threads=hardware_threads, loadgen_threads=loadgen_threads, clients=clients)


def classify_means(server: Readings | None, means: Mapping[str, float | None], *, hardware_threads: int,
                   loadgen_threads: int, clients: int) -> PointBound:
    """classify, from the means of the point's system samples (MEANS: each None where
    none was sampled) rather than the samples: what the store sums for every point
    (store.system_sums) is all it reads."""
    series: Mapping[str, Sequence[float | None]] = server.series if server is not None else {}
    seconds: Sequence[float] = server.seconds if server is not None else ()
    found: Found = []
    notes: list[str] = []
    limits = _limits()
    for family in FAMILIES:
        more, said = family.waits(series, clients, limits)
        found, notes = found + more, notes + said
    iowait = means.get("cpu_iowait_pct")
    if iowait is not None and iowait >= thresholds.IOWAIT_PCT and not any(k == IO for k, _, _ in found):
        found.append((IO, iowait / 100, f"iowait {iowait:.0f} %"))
    notes += _checkpoint_note(series, seconds)
    if found:
        kind, _, evidence = max(found, key=lambda f: f[1])
        return PointBound(kind, "; ".join([evidence, *notes]))
    return _cpu_bound(means, hardware_threads, loadgen_threads, notes)


def of_point(row: StoredPoint, server: Readings | None, means: Mapping[str, float | None],
             hardware_threads: int) -> PointBound | None:
    """The bound of a stored point from what the store keeps of it: its server readings
    (None where the server was not sampled: then no bound), the means of its system
    samples (MEANS), the hardware threads its server could use. A point several load
    generators drove together (fleet --together) keeps no system samples of its own:
    its first load generator's share (threads, clients) and that host's load-generator
    CPU (stats/loadgens.Part, from its details) are what its server was sampled beside;
    the machine's other figures there are that host's, not the server's."""
    if server is None:
        return None
    parts = loadgens.parts(row)
    if parts:
        first = parts[0]
        return classify_means(server, {"loadgen_cpu": first.loadgen_cpu_cores}, hardware_threads=hardware_threads,
                              loadgen_threads=first.threads or row.threads, clients=first.clients or row.clients)
    return classify_means(server, means, hardware_threads=hardware_threads, loadgen_threads=row.threads,
                          clients=row.clients)


# The kinds that say the CPU (the server's, the machine's, the load generator's) bound a point.
CPU_KINDS = frozenset({LOADGEN, SERVER_CPU, MACHINE_CPU})


def most_frequent(kinds: Iterable[str | None]) -> str | None:
    """The bound most of a level's repeats had (ties: in KINDS' order); None if none has one."""
    counts: dict[str, int] = {}
    for k in kinds:
        if k:
            counts[k] = counts.get(k, 0) + 1
    if not counts:
        return None
    return min(counts, key=lambda k: (-counts[k], KINDS.index(k) if k in KINDS else len(KINDS)))


def of_group(kinds: Iterable[str | None]) -> str | None:
    """The bound of a level's repeats: their one bound where they agree, else each with
    its count, most frequent first ("locks 2/3, machine CPU 1/3"); None if none has one."""
    known = [k for k in kinds if k]
    if not known:
        return None
    counts: dict[str, int] = {}
    for k in known:
        counts[k] = counts.get(k, 0) + 1
    if len(counts) == 1:
        return known[0]
    ranked = sorted(counts.items(), key=lambda kc: (-kc[1], KINDS.index(kc[0]) if kc[0] in KINDS else len(KINDS)))
    return ", ".join(f"{k} {c}/{len(known)}" for k, c in ranked)


def waiting(record: Readings) -> tuple[str, list[float | None]]:
    """What the report's per-second chart overlays on the throughput, from a point's
    server readings: (what it is, one value per second), as the family whose reader
    recorded them says (serverside/waits.Family.waiting)."""
    series = record.series
    family = next((f for f in FAMILIES if f.recorded(series)), DEFAULT)
    return family.waiting(series, len(record.seconds))


# GAUGES (serverside/mysql.py): read as they are (how many at an instant), not as rates,
# so never divided by throughput.


def figures(record: Readings, tps: float | None) -> dict[str, float]:
    """A point's server figures that two points can be compared by, whatever their
    throughput: each wait event's share of the active-backend samples (`wait.`), each
    counter per transaction (its mean rate / the tool's TPS; left out without a TPS), each
    gauge's mean. Names never seen move are left out."""
    series = record.series
    waits = {n: sum(v or 0 for v in values) for n, values in series.items() if n.startswith(WAIT)}
    total = sum(waits.values())
    out: dict[str, float] = {n: c / total for n, c in waits.items() if total and c}
    for name, values in series.items():
        if name.startswith(WAIT):
            continue
        mean = _mean(values)
        if not mean:
            continue
        if name in GAUGES:
            out[name] = mean
        elif tps:
            out[name] = mean / tps
    return out


# Below these, a figure is too small for its ratio to mean anything (a wait seen in
# 1 % of the samples; a counter moving once in a thousand transactions).
_MIN_FIGURE = {"wait": 0.01, "rate": 0.001}


def differs_most(a: Mapping[str, float], b: Mapping[str, float]) -> tuple[str, float, float] | None:
    """The figure (of figures()) whose two sides lie farthest apart as a ratio, with
    both values; None where nothing comparable is large enough on either side. A figure
    one side lacks counts as 0 there (that wait never seen, that counter never moved)."""
    best: tuple[float, str, float, float] | None = None
    for name in set(a) | set(b):
        x, y = a.get(name, 0.0), b.get(name, 0.0)
        floor = _MIN_FIGURE["wait" if name.startswith(WAIT) else "rate"]
        if max(x, y) < floor:
            continue
        spread = abs(math.log(max(x, floor) / max(y, floor)))
        if best is None or spread > best[0]:
            best = (spread, name, x, y)
    return None if best is None else (best[1], best[2], best[3])


def figure_text(name: str, value: float) -> str:
    if name.startswith(WAIT):
        return f"{100 * value:.0f} % of active-backend samples"
    if name in GAUGES:
        return f"{value:.3g} on average"
    return f"{value:.3g} per transaction"
