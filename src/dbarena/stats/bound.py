"""What bound one point, from the server's own series (serverside/) and the machine's
(host/sysmetrics.py), with the figures that say so.

decision.bound() reads only the machine (CPU, iowait, the load generator's CPU) over
a level's repeats; this reads one point and also what the server waited for, so that
it can say "locks" or "WAL or fsync" where the CPU says nothing. Pure: series in,
(kind, evidence) out.

PostgreSQL: each second counts the non-idle client backends by wait event
(pg_stat_activity); the share of those samples in each class of event says where
the backends spent their time. MariaDB/MySQL: the time spent waiting for row locks
(Innodb_row_lock_time, ms per second) is the clients waiting on average.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Iterable, Mapping, Protocol, Sequence

from dbarena.records import JSON, json_object
from dbarena.serverside.series import WAIT, ServerSeries
from dbarena.stats import thresholds

LOCKS = "locks"
WAL = "WAL or fsync"
IO = "I/O"
LOADGEN = "load generator"
SERVER_CPU = "server CPU"
MACHINE_CPU = "machine CPU"
NONE = "no single bound"
KINDS = (LOCKS, WAL, IO, LOADGEN, SERVER_CPU, MACHINE_CPU, NONE)

# A class of waits that holds this share of the active-backend samples (or of the
# clients, waiting on row locks on average) bounds the point: below it the server
# spends most of its time elsewhere and no one wait decides the throughput.
WAIT_SHARE = 0.3
# Saturation and iowait: the thresholds every view judges by (stats/thresholds.py).
SATURATED, IOWAIT_PCT = thresholds.SATURATED, thresholds.IOWAIT_PCT
# Reads that miss InnoDB's buffer pool, as a share of its read requests, past which
# the point reads from storage rather than memory.
MISS_SHARE = 0.05
# The server waiting for its clients (PostgreSQL's Client:ClientRead inside a
# transaction) in this share of the samples: the load generator is the bound.
CLIENT_SHARE = 0.5
# Fewer active-backend samples than this (a point of short transactions catches its
# backends busy in few of its once-a-second looks) say too little to decide from.
MIN_WAIT_SAMPLES = 10

# PostgreSQL wait events by class; other events (Activity, IPC, Timeout ...) count in
# the total only.
_WAL_EVENTS = {"LWLock:WALWrite", "LWLock:WALInsert", "LWLock:WALBufMapping", "IO:WALSync", "IO:WALWrite",
               "IO:WALInitSync", "IO:WALInitWrite", "IO:DataFileSync", "IO:DataFileImmediateSync"}
_IO_EVENTS = {"IO:DataFileRead", "IO:DataFilePrefetch", "IO:DataFileExtend", "IO:DataFileWrite", "IO:BufFileRead",
              "IO:BufFileWrite"}


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


def wait_class(event: str) -> str | None:
    """The class of a PostgreSQL wait event ('Lock:transactionid', 'CPU' ...)."""
    if event in _WAL_EVENTS:
        return WAL
    if event in _IO_EVENTS:
        return IO
    if event.startswith(("Lock:", "LWLock:", "BufferPin:")):
        return LOCKS
    if event == "CPU":
        return SERVER_CPU
    if event.startswith("Client:"):
        return LOADGEN
    return None


def _mean(values: Iterable[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.fmean(present) if present else None


def _pct(share: float) -> str:
    return f"{100 * share:.0f} %"


def checkpoint_seconds(series: Mapping[str, Sequence[float | None]], seconds: Sequence[float]) -> list[int]:
    """The seconds (rounded) in which a checkpoint began or ended (its counter moved)."""
    column = series.get("checkpoints") or ()
    return [round(s) for s, v in zip(seconds, column) if v]


# (kind, share, evidence) of a bound past its threshold, and notes said beside the answer.
_Found = list[tuple[str, float, str]]


def _backend_waits(series: Mapping[str, Sequence[float | None]]) -> tuple[_Found, list[str]]:
    """PostgreSQL: each class of wait event's share of the active-backend samples."""
    waits = {name[len(WAIT):]: sum(v or 0 for v in values) for name, values in series.items()
             if name.startswith(WAIT)}
    total = sum(waits.values())
    if not total:
        return [], []
    if total < MIN_WAIT_SAMPLES:
        return [], [f"only {total:.0f} active-backend sample(s): too few to tell from the waits"]
    found: _Found = []
    by_class: dict[str, float] = {}
    for event, count in waits.items():
        cls = wait_class(event)
        if cls is not None:
            by_class[cls] = by_class.get(cls, 0) + count
    top = sorted(((c, e) for e, c in waits.items() if e != "CPU" and not e.startswith("Client:")), reverse=True)
    for cls in (LOCKS, WAL, IO):
        share = by_class.get(cls, 0) / total
        if share >= WAIT_SHARE:
            named = [f"{e} {_pct(c / total)}" for c, e in top if wait_class(e) == cls][:2]
            found.append((cls, share, f"{' and '.join(named)} of {total:.0f} active-backend samples"))
    client = by_class.get(LOADGEN, 0) / total
    if client >= CLIENT_SHARE:
        found.append((LOADGEN, client, f"backends waited for the client in {_pct(client)} of {total:.0f} "
                                       "active-backend samples"))
    cpu_share = by_class.get(SERVER_CPU, 0) / total
    return found, [f"on CPU in {_pct(cpu_share)} of {total:.0f} active-backend samples"]


def _innodb(series: Mapping[str, Sequence[float | None]], clients: int) -> tuple[_Found, list[str]]:
    """MariaDB/MySQL: the clients waiting on row locks on average, and buffer pool misses."""
    found: _Found = []
    notes: list[str] = []
    lock_ms = _mean(series.get("status.Innodb_row_lock_time") or ())
    if lock_ms is not None and clients:
        waiting = lock_ms / 1000.0  # ms waited per second: clients waiting on average
        share = waiting / clients
        waits_per_s = _mean(series.get("status.Innodb_row_lock_waits") or ()) or 0.0
        evidence = (f"row lock waits {waits_per_s:.0f}/s, {waiting:.1f} of {clients} clients waiting on row locks "
                    f"on average ({_pct(share)})")
        if share >= WAIT_SHARE:
            found.append((LOCKS, share, evidence))
        elif waits_per_s:
            notes.append(evidence)
    reads = _mean(series.get("status.Innodb_buffer_pool_reads") or ())
    requests = _mean(series.get("status.Innodb_buffer_pool_read_requests") or ())
    if reads is not None and requests and reads / requests >= MISS_SHARE:
        found.append((IO, reads / requests, f"{_pct(reads / requests)} of buffer pool reads missed it ({reads:.0f}/s)"))
    return found, notes


def _checkpoint_note(series: Mapping[str, Sequence[float | None]], seconds: Sequence[float]) -> list[str]:
    checkpoints = checkpoint_seconds(series, seconds)
    if not checkpoints:
        return []
    return ["checkpoint at " + ", ".join(f"{s} s" for s in checkpoints[:3])
            + (f" and {len(checkpoints) - 3} more" if len(checkpoints) > 3 else "")]


def _cpu_bound(system: Sequence[Sample], hardware_threads: int, loadgen_threads: int,
               notes: list[str]) -> PointBound:
    """Where no wait decided: the CPU of the load generator, the server or the machine,
    saturated as every view calls it (stats/thresholds.py), or no single bound."""
    server_cpu = _mean(s.get("server_cpu") for s in system)
    loadgen_cpu = _mean(s.get("loadgen_cpu") for s in system)
    idle = _mean(s.get("cpu_idle_pct") for s in system)
    busy = 100 - idle if idle is not None else None
    cpu = ", ".join(part for part in (
        f"machine CPU {busy:.0f} % busy" if busy is not None else "",
        f"server {server_cpu:.1f}" + (" cores" if loadgen_cpu is None else "") if server_cpu is not None else "",
        f"load generator {loadgen_cpu:.1f} cores" if loadgen_cpu is not None else "") if part)
    usable_loadgen = max(1, min(loadgen_threads, hardware_threads))
    if loadgen_cpu is not None and loadgen_cpu >= SATURATED * usable_loadgen:
        return PointBound(LOADGEN, "; ".join([f"load generator {loadgen_cpu:.1f} cores for {loadgen_threads} "
                                              "thread(s)", *notes]))
    if server_cpu is not None and server_cpu >= SATURATED * hardware_threads:
        return PointBound(SERVER_CPU, "; ".join([f"server {server_cpu:.1f} of {hardware_threads} hardware threads",
                                                 *notes]))
    if busy is not None and busy >= 100 * SATURATED:
        return PointBound(MACHINE_CPU, "; ".join([cpu, *notes]))
    return PointBound(NONE, "; ".join([p for p in (cpu, *notes) if p]) or "too few samples to tell")


def classify(server: Readings | None, system: Sequence[Sample], *, hardware_threads: int,
             loadgen_threads: int, clients: int) -> PointBound:
    """The bound of one point. `server`: its server readings (None: not sampled);
    `system`: its system_samples rows;
    `hardware_threads`: those the server could use; `loadgen_threads`: the tool's
    threads; `clients`: its connections. What the server waited for decides first (the
    largest share past its threshold), then the CPU."""
    series: Mapping[str, Sequence[float | None]] = server.series if server is not None else {}
    seconds: Sequence[float] = server.seconds if server is not None else ()
    found, notes = _backend_waits(series)
    more, said = _innodb(series, clients)
    found, notes = found + more, notes + said
    iowait = _mean(s.get("cpu_iowait_pct") for s in system)
    if iowait is not None and iowait >= IOWAIT_PCT and not any(k == IO for k, _, _ in found):
        found.append((IO, iowait / 100, f"iowait {iowait:.0f} %"))
    notes += _checkpoint_note(series, seconds)
    if found:
        kind, _, evidence = max(found, key=lambda f: f[1])
        return PointBound(kind, "; ".join([evidence, *notes]))
    return _cpu_bound(system, hardware_threads, loadgen_threads, notes)


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
    server readings: (what it is, one value per second). PostgreSQL: the backends seen
    waiting on locks, WAL or I/O; MariaDB/MySQL: the clients waiting on row locks on
    average (Innodb_row_lock_time, ms per second / 1000)."""
    series = record.series
    n = len(record.seconds)
    # By what the engine's reader recorded, not by its name: the MySQL family's reads
    # SHOW GLOBAL STATUS (its series are "status."), PostgreSQL's each backend's wait.
    if not any(name.startswith("status.") for name in series):
        chosen = [v for name, v in series.items() if name.startswith(WAIT)
                  and wait_class(name[len(WAIT):]) in (LOCKS, WAL, IO)]
        return ("backends waiting on locks, WAL or I/O",
                [float(sum(c[i] or 0 for c in chosen)) for i in range(n)])
    times = series.get("status.Innodb_row_lock_time") or [None] * n
    return "clients waiting on row locks", [v / 1000.0 if v is not None else None for v in times]


# Read as they are (how many at an instant), not as rates: never divided by throughput.
GAUGES = frozenset({"status.Threads_running", "status.Innodb_row_lock_current_waits"})


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
