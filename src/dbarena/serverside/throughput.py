"""A point's per-second throughput from the server's commit counter, where the tool ran
without its own per-second report (pgbench without -P 1: run/measure.py).

The server sampler reads the counter once a second; each second of its series holds the
commits per second between two readings. The tool ran for its duration, ending when its
process did: the seconds wholly inside that window are the point's series, numbered from
the window's start as the tool numbers its own reports (the first and the last reading
intervals, partly before the tool's clock started or after it stopped, are left out:
their rate would read as a warm-up or a dip that is not the server's). So is every
reading interval that ends within FLUSH_S of the tool's end: a PostgreSQL backend
reports its commits to the shared counters at most once a second (PGSTAT_MIN_INTERVAL),
and all it holds when it disconnects, so the interval in which the tool's clients
disconnected, just before it ended, holds up to a second of commits more than its own.
Measured on this project's 2-CPU machine (10 s points of pgbench TPC-B and
simple-update, bare): that interval ended 0-11 ms before pgbench's end and read 1.3-2.0
times the median second, and with it the series' mean was 3-11 % above what pgbench
printed; without it, within 1.5 %. The interval before it, a second earlier, is the
run's own.

The counter counts every session's commits in the database: the sampler's own (two
statements a second), pgbench's vacuum before its clock starts, another client's, and a
script's statements outside an explicit transaction one commit each. So each second is
scaled by the tool's own transaction count over the server's commits of the whole
series: the series then sums to what the tool reported, and the scale is said in the
note wherever it is not 1 within half a percent.

The scale is a ratio of two counts over the same window, so it is taken only where the
counter was read without a gap from before the tool started to after it ended. A series
that stopped early (the sampler's connection was cut or terminated mid-point), began
late, or lost a second (the counter went down: statistics reset) holds the commits of a
part of the run against the tool's transactions of all of it: scaled, its seconds would
read as a multiple of the true rate (a series cut at 4 s of a 10 s point, 2.5 times), and
unscaled they count others' commits. Such a series is refused, and said to be: the point
then has no per-second series and its figure is the tool's own (stats/analysis.py). Pure.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from dbarena.model import Sample
from dbarena.serverside.series import ServerSeries

# Where the scale is within this of 1, the note does not mention it.
_SCALE_SAID = 0.005
# How long before the tool's end (its process reaped) its clients may have disconnected,
# reporting every commit they held: a reading interval ending this close to the end may
# hold that report (0-11 ms measured; the margin is for a loaded machine).
FLUSH_S = 0.5
# How a series derived here begins its note (the point's details' "per_second").
DERIVED = "per-second throughput from the server's "


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
    """The whole reading intervals within [end_s - duration_s, end_s - FLUSH_S] (seconds
    since the series' origin; end_s: when the tool's process ended), as Samples of transactions
    per second. `first_s`: when the reading before the series' first second was taken
    (the sampler's first, before the tool started; None: that second is not counted).
    `transactions`: the tool's own count over its run, the scale's numerator (None: not
    scaled)."""
    rates = series.series.get(counter, ())
    start_s = end_s - duration_s
    commits_total = 0.0
    kept: list[tuple[float, float]] = []  # (end of the interval since start_s, commits/s)
    read_from: float | None = None  # where the gapless run of readings began
    read_to: float | None = None    # and where it ended (the last reading)
    gap = False  # a second without a rate after the first reading
    for i in range(min(len(series.seconds), len(rates))):
        rate = rates[i]
        begin = series.seconds[i - 1] if i else first_s
        if begin is None:
            continue  # the first interval's start unknown: the series begins at its end
        if rate is None:
            gap = True
            continue
        end = series.seconds[i]
        commits_total += rate * (end - begin)
        read_from = begin if read_from is None else read_from
        read_to = end
        if begin >= start_s and end <= end_s - FLUSH_S:
            kept.append((end - start_s, rate))
    source = f"the server's {counter}"  # (DERIVED's words)
    if not kept:
        return Derived((), f"no per-second series: {source} covered no whole second of {tool}'s run")
    if gap or read_from is None or read_to is None or read_from > start_s or read_to < end_s:
        return Derived((), _partial(source, tool, duration_s, start_s, end_s, read_from, read_to, gap,
                                    series.stopped))
    scale = transactions / commits_total if transactions is not None and commits_total > 0 else 1.0
    samples = tuple(Sample(second=round(second, 3), tps=round(rate * scale, 3)) for second, rate in kept)
    note = f"per-second throughput from {source} ({len(samples)} whole seconds of {tool}'s {duration_s:g} s"
    if abs(scale - 1) > _SCALE_SAID:
        note += f"; scaled by {scale:.3f}, {tool}'s transactions over the server's commits"
    return Derived(samples, note + f"), not {tool}'s own per-second report")


def settled(seconds: Sequence[float], note: object, duration_s: float) -> int:
    """How many of a stored series' first seconds are its own: a series derived here
    (its point's `per_second` note begins with DERIVED) stored before the seconds within
    FLUSH_S of the tool's end were left out kept them, and a view reads it without them
    (stats/analysis.py, estimator version 9); every other series whole. `seconds`: its
    seconds, ascending."""
    if not (isinstance(note, str) and note.startswith(DERIVED)):
        return len(seconds)
    last = duration_s - FLUSH_S
    return sum(1 for second in seconds if second <= last + 1e-9)


def _partial(source: str, tool: str, duration_s: float, start_s: float, end_s: float, read_from: float | None,
             read_to: float | None, gap: bool, stopped: str | None) -> str:
    """The note of a series that does not cover the tool's run without a gap."""
    if read_to is not None and read_to < end_s:
        covered = max(0.0, min(read_to, end_s) - max(read_from if read_from is not None else start_s, start_s))
        # (A last reading just before the end would read "for only 10 s of 10 s".)
        what = (f"was last read {end_s - read_to:.2f} s before {tool}'s end" if round(covered) >= duration_s
                else f"was read for only {covered:.0f} s of {tool}'s {duration_s:g} s")
    elif gap:
        what = f"has a gap in its readings within {tool}'s {duration_s:g} s"
    else:
        what = f"was not read from the start of {tool}'s {duration_s:g} s"
    why = f" ({stopped})" if stopped else ""
    return (f"no per-second series: {source} {what}{why}; its commits over a part cannot be scaled to {tool}'s "
            f"transactions over the whole, so the point's figure is {tool}'s own; --client-progress gives "
            f"{tool}'s own per-second report, at a cost")
