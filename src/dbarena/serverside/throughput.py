"""A point's per-second throughput from the server's commit counter, where the tool ran
without its own per-second report (pgbench without -P 1: run/measure.py).

The server sampler reads the counter once a second; each second of its series holds the
commits per second between two readings. The tool ran for its duration, ending when its
process did: the seconds wholly inside that window are the point's series, numbered from
the window's start as the tool numbers its own reports (the first and the last reading
intervals, partly before the tool's clock started or after it stopped, are left out:
their rate would read as a warm-up or a dip that is not the server's).

The counter counts every session's commits in the database: the sampler's own (two
statements a second), pgbench's vacuum before its clock starts, another client's, and a
script's statements outside an explicit transaction one commit each. So each second is
scaled by the tool's own transaction count over the server's commits of the whole
series: the series then sums to what the tool reported, and the scale is said in the
note wherever it is not 1 within half a percent. Pure.
"""

from __future__ import annotations

from dataclasses import dataclass

from dbarena.model import Sample
from dbarena.serverside.series import ServerSeries

# Where the scale is within this of 1, the note does not mention it.
_SCALE_SAID = 0.005


@dataclass(frozen=True)
class Derived:
    samples: tuple[Sample, ...]
    note: str  # how they were derived, for the point's details ("per_second")


def unread(tool: str, why: str | None) -> str:
    """The note of a point run without its tool's report whose server counter was not
    read (the sampler could not connect or read it, or was not asked to)."""
    return (f"no per-second series: {tool} ran without its own report and the server's commit counter was not "
            f"read ({why or 'not readable by this role'}); --client-progress gives {tool}'s own, at a cost")


def from_commits(series: ServerSeries, counter: str, *, first_s: float | None, end_s: float, duration_s: float,
                 transactions: int | None, tool: str) -> Derived:
    """The whole reading intervals within [end_s - duration_s, end_s] (seconds since the
    series' origin; end_s: when the tool's process ended), as Samples of transactions
    per second. `first_s`: when the reading before the series' first second was taken
    (the sampler's first, before the tool started; None: that second is not counted).
    `transactions`: the tool's own count over its run, the scale's numerator (None: not
    scaled)."""
    rates = series.series.get(counter, ())
    start_s = end_s - duration_s
    commits_total = 0.0
    kept: list[tuple[float, float]] = []  # (end of the interval since start_s, commits/s)
    for i in range(min(len(series.seconds), len(rates))):
        rate = rates[i]
        begin = series.seconds[i - 1] if i else first_s
        if rate is None or begin is None:
            continue
        end = series.seconds[i]
        commits_total += rate * (end - begin)
        if begin >= start_s and end <= end_s:
            kept.append((end - start_s, rate))
    source = f"the server's {counter}"
    if not kept:
        return Derived((), f"no per-second series: {source} covered no whole second of {tool}'s run")
    scale = transactions / commits_total if transactions is not None and commits_total > 0 else 1.0
    samples = tuple(Sample(second=round(second, 3), tps=round(rate * scale, 3)) for second, rate in kept)
    note = f"per-second throughput from {source} ({len(samples)} whole seconds of {tool}'s {duration_s:g} s"
    if abs(scale - 1) > _SCALE_SAID:
        note += f"; scaled by {scale:.3f}, {tool}'s transactions over the server's commits"
    return Derived(samples, note + f"), not {tool}'s own per-second report")
