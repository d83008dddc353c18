"""Interference: the CPU that other processes took while a point ran, and whether the two
sides of a comparison ran under different amounts of it.

Each point stores, once a second, the machine's CPU split (host/sysmetrics.py: user,
system, iowait, steal, idle, as percent of all its hardware threads) and the CPU of the
server's processes and of the load generator, in CPUs. What the machine spent beyond
those and dbarena's own (thresholds.HARNESS_CPU) went to other processes: the
neighbours. Steal is time the hypervisor gave to other guests, reported by the kernel
beside the rest (0 on bare metal). Neither is the benchmark's, and either can move its
throughput by more than the difference a comparison looks for (issue 52: neighbours
took 1.4-1.7 of 2 CPUs during one label and 1.1-1.4 during the other, and an A/A pair
was called 62.6 % faster). Pure: figures in, figures and words out.
"""

from __future__ import annotations

import statistics
from typing import Sequence

from dbarena.records import Interference, Summarised
from dbarena.stats import thresholds

__all__ = ["Interference", "neighbour_cpu", "steal_cpu", "notable", "of_points", "apart", "differs", "cpus"]


def neighbour_cpu(idle_pct: float | None, iowait_pct: float | None, steal_pct: float | None,
                  server_cpu: float | None, loadgen_cpu: float | None, machine_threads: int) -> float | None:
    """The CPUs other processes took on average: the machine's busy share (not idle, not
    waiting for I/O, not stolen) of its `machine_threads`, less the server's and the
    load generator's CPU and dbarena's own. None where the machine's idle share or the
    load generator's CPU is unknown (the load generator's would be counted as a
    neighbour's). A server that was not sampled (`server_cpu` None: a --target on
    another machine) took none of this machine's CPU."""
    if idle_pct is None or loadgen_cpu is None or machine_threads < 1:
        return None
    busy_pct = 100.0 - idle_pct - (iowait_pct or 0.0) - (steal_pct or 0.0)
    busy = max(0.0, busy_pct) / 100.0 * machine_threads
    return max(0.0, busy - (server_cpu or 0.0) - loadgen_cpu - thresholds.HARNESS_CPU)


def steal_cpu(steal_pct: float | None, machine_threads: int) -> float | None:
    """The CPUs the hypervisor gave to others (/proc/stat's steal) on average."""
    return None if steal_pct is None or machine_threads < 1 else steal_pct / 100.0 * machine_threads


def _floor(cpu: float, share: float, machine_threads: int) -> float:
    return max(cpu, share * machine_threads)


def notable(neighbours: float | None, machine_threads: int) -> bool:
    """Neighbours took enough to warn of (thresholds.NEIGHBOUR_CPU and NEIGHBOUR_SHARE)."""
    return neighbours is not None and neighbours >= _floor(thresholds.NEIGHBOUR_CPU, thresholds.NEIGHBOUR_SHARE,
                                                             machine_threads)


def cpus(value: float) -> str:
    """A figure in CPUs as the messages write it (one decimal)."""
    return f"{value:.1f}"


def of_points(points: Sequence[Summarised]) -> Interference | None:
    """The interference of a side's ok points that have a neighbour figure; None if none has."""
    found = [p for p in points if p.status == "ok" and p.neighbour_cpu is not None]
    if not found:
        return None
    neighbours = [p.neighbour_cpu for p in found if p.neighbour_cpu is not None]
    steal = [p.steal_cpu for p in found if p.steal_cpu is not None]
    return Interference(points=len(found), neighbour_mean=statistics.fmean(neighbours),
                        neighbour_low=min(neighbours), neighbour_high=max(neighbours),
                        steal_mean=statistics.fmean(steal) if steal else None,
                        machine_threads=max(p.machine_threads for p in found))


# How a comparison not decided for interference begins its reason (analysis.compare),
# which the decision reads to say why (decision._workload).
UNLIKE = "inconclusive: the sides ran under different interference"


def apart(a: Interference | None, b: Interference | None, a_name: str = "A", b_name: str = "B") -> str | None:
    """Why two sides cannot be compared for interference, or None: their neighbours'
    CPU (or their steal), on average over each side's points, lies at least
    thresholds.INTERFERENCE_CPU (and INTERFERENCE_SHARE of the machine) apart. Nothing
    is said where a side has no figure (imported points, a store without system samples)."""
    if a is None or b is None:
        return None
    threads = max(a.machine_threads, b.machine_threads)
    limit = _floor(thresholds.INTERFERENCE_CPU, thresholds.INTERFERENCE_SHARE, threads)
    said = []
    if abs(a.neighbour_mean - b.neighbour_mean) >= limit:
        said.append(f"neighbours took {a.range_text()} of {threads} CPUs during {a_name}, {b.range_text()} "
                    f"during {b_name} (means {cpus(a.neighbour_mean)} and {cpus(b.neighbour_mean)})")
    if a.steal_mean is not None and b.steal_mean is not None and abs(a.steal_mean - b.steal_mean) >= limit:
        said.append(f"the hypervisor took (steal) {cpus(a.steal_mean)} of {threads} CPUs during {a_name}, "
                    f"{cpus(b.steal_mean)} during {b_name}")
    if not said:
        return None
    return (f"the sides ran under different interference: {'; '.join(said)}; beyond the {limit:.2g}-CPU "
            "threshold (measure both under the same load)")


def differs(a: Sequence[Summarised], b: Sequence[Summarised], a_name: str = "A",
            b_name: str = "B") -> str | None:
    """Why two sides' points (each side's repeats at one level) ran under different
    interference (apart), or None."""
    return apart(of_points(a), of_points(b), a_name, b_name)
