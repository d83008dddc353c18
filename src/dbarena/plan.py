"""From options to the concrete list of points to run. Pure functions."""

from __future__ import annotations

from dataclasses import replace
from typing import Iterable

from dbarena.errors import UsageError
from dbarena.model import PointSpec
from dbarena.workloads import Workload

# Study A's levels: 1 and 2 threads, then these shares of the hardware threads,
# rounded down (128 threads -> 1 2 25 51 76 102 126).
SWEEP_PERCENTS = (20, 40, 60, 80, 99)


def default_levels(hardware_threads: int) -> list[int]:
    """1, 2, then floor(p % of N) for p in 20, 40, 60, 80, 99; no zeros or duplicates."""
    if hardware_threads < 1:
        raise ValueError(f"hardware_threads must be >= 1, not {hardware_threads}")
    # Integer arithmetic: floor(0.2 * 5) must be 1, never 0.99999.
    levels = {1, 2} | {hardware_threads * p // 100 for p in SWEEP_PERCENTS}
    levels.discard(0)
    return sorted(levels)


def parse_levels(text: str) -> list[int]:
    """'1,4,16' -> [1, 4, 16]; each a positive integer, duplicates dropped, ascending."""
    levels = set()
    for item in text.split(","):
        item = item.strip()
        if not item.isdigit() or int(item) < 1:
            raise UsageError(f"--threads: {item!r} is not a positive whole number (expected e.g. 1,4,16)")
        levels.add(int(item))
    return sorted(levels)


def build(
    *,
    engine: str,
    workloads: Iterable[Workload],
    levels: Iterable[int],
    clients_per_thread: int,
    duration_s: int,
    params: dict[str, int],
    repeats: int = 1,
) -> list[PointSpec]:
    """Every workload at every level, workload by workload, levels ascending; with
    repeats, the whole list again for each repeat, so that repeats of a point are
    interleaved with the other points rather than run back to back (drift over time
    then spreads over all points instead of masquerading as a difference).

    pgbench gets `clients_per_thread` clients per thread (-j T -c C); sysbench and
    mysqlslap run one client per thread. Each point carries the parameters its
    tool reads (its PARAMS) out of `params`.
    """
    levels = sorted(levels)
    points = []
    for w in workloads:
        own = tuple(sorted((k, params[k]) for k in w.tool.PARAMS))
        for t in levels:
            clients = t * clients_per_thread if w.multiplies_clients else t
            points.append(PointSpec(engine=engine, workload=w.name, threads=t, clients=clients,
                                    duration_s=duration_s, params=own))
    return [replace(p, repeat=r) for r in range(repeats) for p in points]
