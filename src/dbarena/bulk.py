"""Pausing Python's cyclic garbage collector while a command builds many objects."""

from __future__ import annotations

import contextlib
import gc
from typing import Iterator


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """The cyclic garbage collector paused for the with-block. Reading 100 k points, or
    building a report of 10 k, allocates objects by the hundred thousand (row dicts,
    figures, artists) that hold no reference cycles; each full collection these set off
    walks every object made so far, which more than doubles the time of such a step.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def keep(count: int, threshold: int = 10_000) -> None:
    """After a read of `count` rows that a command keeps to the end (a large store's
    points): freeze what the process holds, so that the collector does not walk those
    rows again and again (a fifth of `results --summary` on 100 k points). Only for
    large reads, which only the read commands make: a frozen object is never freed, and
    a long `dbarena run` must not freeze its garbage point after point."""
    if count >= threshold:
        gc.freeze()
