"""Teardown that a Ctrl-C cannot interrupt halfway, and that does not lose it."""

from __future__ import annotations

import contextlib
import signal
import threading
from types import FrameType
from typing import Iterator


@contextlib.contextmanager
def shielded() -> Iterator[None]:
    """Hold Ctrl-C and SIGTERM while tearing down, so that neither can leave a
    half-removed instance behind; once it is done, the first one held is delivered
    (KeyboardInterrupt, errors.Interrupted), unless the teardown ends in an error of
    its own. Held rather than ignored: a Ctrl-C that falls in the teardown between two
    engines of a study must stop the study, not vanish. Signals can only be set in
    the main thread."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held: list[int] = []

    def hold(signum: int, frame: FrameType | None) -> None:
        held.append(signum)

    old = {s: signal.signal(s, hold) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)
    if held:
        signal.raise_signal(held[0])
