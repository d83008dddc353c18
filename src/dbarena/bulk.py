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


# Whether keep() freezes: off in a process that serves request after request.
_freezing = True


def never_freeze() -> None:
    """For a long-lived process (`dbarena serve`): keep() freezes nothing. Each request
    reads its points and lets them go; a freeze would move whatever reference cycles
    earlier requests left for the collector into the permanent generation, where it is
    never collected, and the server's memory would grow request after request."""
    global _freezing
    _freezing = False


def keep(count: int, threshold: int = 10_000) -> None:
    """After a read of `count` rows that a command keeps to the end (a large store's
    points): freeze what the process holds, so that the collector does not walk those
    rows again and again (a fifth of `results --summary` on 100 k points). Only for
    large reads, which only the read commands make, and never in `serve`
    (never_freeze): a frozen object in a reference cycle is never collected, and a long
    `dbarena run` must not freeze its garbage point after point."""
    if count >= threshold and _freezing:
        gc.freeze()
