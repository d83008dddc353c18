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
    Whatever garbage is made meanwhile is collected after."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
