"""Reading the interval series of a run that failed."""

from __future__ import annotations

from typing import Callable

from dbarena.errors import ParseError
from dbarena.model import Sample


def tolerant(text: str, parse_line: Callable[[str], Sample | None]) -> tuple[Sample, ...]:
    """Every readable interval line of text; unreadable ones are skipped, because the
    failure itself is the point's result."""
    samples = []
    for line in text.splitlines():
        try:
            sample = parse_line(line)
        except ParseError:
            continue
        if sample is not None:
            samples.append(sample)
    return tuple(samples)
