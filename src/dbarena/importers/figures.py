"""The figures an imported point may hold: what a tool can print, and what the store,
the statistics and JSON can take. Checked once for every point a reader returns (and
cell by cell in CSV), so that nothing past the import meets an infinite tps, a
negative latency or a thread count SQLite cannot store."""

from __future__ import annotations

import math
import operator
from dataclasses import fields
from typing import Any

from dbarena.importers.common import ImportedPoint, ImportProblem
# The bounds are shared with flags and study files (limits.py); csvrows.py reads them here.
from dbarena.limits import MAX_COUNT, MAX_SECONDS, MAX_THREADS, number_problem
from dbarena.model import Measurement, Sample

__all__ = ["MAX_COUNT", "MAX_SECONDS", "MAX_THREADS", "number_problem", "seconds", "check"]


def seconds(value: float, name: str, line: int, what: str) -> float:
    """A duration a run printed (or one derived from its figures), checked before it is
    rounded: one no tool could print is a problem at the run's first line, not an
    OverflowError."""
    problem = number_problem(value, maximum=MAX_SECONDS)
    if problem is not None:
        raise ImportProblem(name, line, f"{what} {value:g} s {problem}")
    return value


def check(name: str, point: ImportedPoint) -> None:
    """Raise ImportProblem at the run's first line for a figure outside those bounds."""
    spec, result = point.result.spec, point.result
    found = [(f"{n} {v}", number_problem(v, whole=True, minimum=1, maximum=MAX_THREADS))
             for n, v in (("threads", spec.threads), ("clients", spec.clients))]
    found.append((f"duration {spec.duration_s} s", number_problem(spec.duration_s, whole=True, maximum=MAX_SECONDS)))
    found += [(f"{k} {v}", number_problem(v, whole=True, maximum=MAX_COUNT)) for k, v in spec.params]
    if result.measurement is not None:
        found += _fields(result.measurement, "")
        found += _nested(result.measurement.details, "details")
        found += _nested(result.measurement.latency_histogram, "latency histogram")
    if not _samples_in_bounds(result.samples):
        for i, sample in enumerate(result.samples, start=1):
            found += _fields(sample, f"interval report {i}: ")
    for what, problem in found:
        if problem is not None:
            raise ImportProblem(name, point.first_line, f"the run on lines {point.first_line}-{point.last_line}: "
                                                        f"{what} {problem}")


def _fields(record: Measurement | Sample, prefix: str) -> list[tuple[str, str | None]]:
    """The figures of a measurement or an interval report that are out of bounds (none
    is negative, infinite or beyond a count), described. Only those: an import checks
    every figure of every interval report (60 000 for 1 000 runs of 60), so the
    description is written only for a figure that has a problem."""
    out: list[tuple[str, str | None]] = []
    for name in _NAMES.get(type(record)) or _names(type(record)):
        value = getattr(record, name)
        if value.__class__ is float:
            # In bounds (the common case) without a call: finite, not negative, a count.
            if 0 <= value <= MAX_COUNT:
                continue
        elif value.__class__ is not int:
            continue  # None, text, a flag (bool is no figure here)
        problem = number_problem(value, whole=isinstance(value, int), maximum=MAX_COUNT)
        if problem is not None:
            out.append((f"{prefix}{name} {value:g}" if isinstance(value, float) else f"{prefix}{name} {value}",
                        problem))
    return out


_SAMPLE_FIGURES = operator.attrgetter(*(f.name for f in fields(Sample)))


def _samples_in_bounds(samples: tuple[Sample, ...]) -> bool:
    """All interval reports' figures at once, in C: finite, none negative, none beyond a
    count (then none needs _fields' look, figure by figure; an import of 1 000 runs of
    600 reports checks 10 M figures). False sends them to that look, which names the one."""
    values = [v for figures in map(_SAMPLE_FIGURES, samples) for v in figures if v is not None]
    if not values:
        return True
    try:
        total = sum(values)
    except TypeError:
        return False  # text where a figure belongs: said by _fields
    # A NaN or an infinity makes the sum so; bounds by min and max.
    return math.isfinite(total) and min(values) >= 0 and max(values) <= MAX_COUNT


_NAMES: dict[type, tuple[str, ...]] = {}


def _names(cls: type) -> tuple[str, ...]:
    """The field names of a dataclass, read once per class."""
    _NAMES[cls] = tuple(f.name for f in fields(cls))
    return _NAMES[cls]


def _nested(value: Any, where: str) -> list[tuple[str, str | None]]:
    """Figures in details and histograms: finite, and counts SQLite can store (JSON
    has no Infinity or NaN)."""
    if isinstance(value, dict):
        return [found for k, v in value.items() for found in _nested(v, f"{where} {k}")]
    if isinstance(value, (list, tuple)):
        return [found for v in value for found in _nested(v, where)]
    if isinstance(value, float):
        return [(f"{where} {value:g}", None if math.isfinite(value) else "is not a finite number")]
    if isinstance(value, int) and not isinstance(value, bool):
        return [(f"{where} {value}", None if abs(value) <= MAX_COUNT else "is beyond what a tool can print")]
    return []
