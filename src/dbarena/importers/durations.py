"""The duration a run was asked for, as the configuration key holds it.

A point's duration is part of its configuration key: two repeats of `--time=600` pool
only if both are stored as 600 s. A tool's measured time is not that figure (sysbench's
`total time: 600.5517s`, 601 s, 606 s on a loaded server), so the asked one is taken
from what the file says, in this order: a figure the tool printed (pgbench's `duration:
600 s`), the echoed command line (`-T 600`, `--time=600`), and otherwise it is inferred
from the measured time as a person would (`nominal`), bounded below by the last
progress line's second where sysbench printed them (`[ 600s ]`: the run was still going
then), less what a run overruns while its threads finish their last transactions (a
600 s run of Percona's reports `[ 601s ]` and `[ 602s ]` with all 64 threads, 607.78 s
measured). How it was found is kept in the point's source (`Duration.source`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

# The round figures a duration is asked in, roundest first: whole minutes, then tens,
# fives, single seconds.
STEPS = (60, 10, 5, 1)


def _over(asked: float) -> float:
    """How far a run may overrun the time it was asked for: 2 % (threads finishing their
    last transaction, a report written late), at least 1.5 s (sysbench 0.5 prints 51.0026 s
    for --max-time=50: its last report `[  50s]`, then a second more)."""
    return max(0.02 * asked, 1.5)


def _under(asked: float) -> float:
    """How far short of it a measured time may fall: sysbench and pgbench stop at the
    time asked, so only a clock's or a rounding's worth (59.98 s of a 60 s run), 0.5 %,
    at least 0.1 s."""
    return max(0.005 * asked, 0.1)


def nominal(measured: float, at_least: float = 0) -> int:
    """The duration asked of a run that measured `measured` seconds: the roundest figure
    (a multiple of 60 s, else 10 s, else 5 s, else 1 s) within `_over` below it or
    `_under` above it, and not below `at_least` (the last progress line's second) by more
    than a run overruns (`_over`: reports go on while the threads finish).
    600.55 -> 600, 606 -> 600, 300.2 -> 300, 59.98 -> 60, 7.3 -> 7, 3600.9 -> 3600;
    3599.8 -> 3600 (the nearer of the two a step allows);
    607.78 after a report at 602 -> 600, 905 after one at 902 -> 900; 65 -> 65 (5 s over
    60 is too much); a time none fits is rounded to the second."""
    for step in STEPS:
        below, above = math.floor(measured / step) * step, math.ceil(measured / step) * step
        # The nearer first: 3599.8 s is 3600 s (0.2 s short), not 3540 s overrun by 59.8 s.
        for candidate in sorted((below, above), key=lambda c: abs(measured - c)):
            if candidate <= 0 or candidate + _over(candidate) < at_least:
                continue
            if -_under(candidate) <= measured - candidate <= _over(candidate):
                return int(candidate)
    return max(round(measured), math.ceil(at_least))


@dataclass(frozen=True)
class Duration:
    """A run's asked duration, how it was found, and the time it measured (if printed)."""

    asked_s: int
    how: str  # "printed", "command line", "last progress line", "inferred", "measured", "its configuration"
    measured_s: float | None = None

    def source(self) -> dict[str, Any]:
        """What a point's source says of its duration."""
        out: dict[str, Any] = {"asked_s": self.asked_s, "from": self.how}
        if self.measured_s is not None:
            out["measured_s"] = self.measured_s
        return out


def asked(printed: int | None, command_line: int | None, measured: float | None,
          last_progress: float | None = None) -> Duration | None:
    """The asked duration from what a run's output says (None when it says nothing of
    time)."""
    if command_line is not None:
        return Duration(command_line, "command line", measured)
    if printed is not None:
        return Duration(printed, "printed", measured)
    if measured is None:
        if last_progress is None:
            return None
        return Duration(int(last_progress), "last progress line")
    found = nominal(measured, last_progress or 0)
    how = "last progress line" if last_progress is not None and found == last_progress else "inferred"
    return Duration(found, how, measured)
