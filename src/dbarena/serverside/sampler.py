"""The thread that reads the server's statistics once a second during a point.

Its connection is opened before the point starts (a server that cannot be reached is
said once, in the series' `stopped`, and the point runs anyway); each reading is
bounded by a statement timeout, and stop() waits at most STOP_WAIT_S for the thread, so
a stuck server never stalls the point. Any failure ends the sampling, never the point:
the series keeps the seconds read and why it stopped. Messages pass through masked(),
so a driver error that quotes a connection string shows no password.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from typing import Any, Callable, Protocol

from dbarena.masking import masked
from dbarena.serverside.series import Builder, ServerSeries, rates

STOP_WAIT_S = 2.0


class Reader(Protocol):
    engine: str
    gauges: frozenset[str]
    notes: tuple[str, ...]

    def read(self) -> dict[str, float | None]: ...
    def free_connections(self) -> int | None: ...
    def close(self) -> None: ...


def open_reader(engine: str, connect: Callable[[], Any]) -> Reader:
    """A reader for the target's engine over a new connection of its own."""
    connection = connect()
    try:
        if engine == "postgres":
            from dbarena.serverside.postgres import PostgresReader
            return PostgresReader(connection)
        from dbarena.serverside.mysql import MysqlReader
        return MysqlReader(connection)
    except BaseException:
        with contextlib.suppress(Exception):
            connection.close()
        raise


def _one_line(exc: BaseException) -> str:
    return masked(" ".join(str(exc).split()) or type(exc).__name__)


class ServerSampler:
    """Samples once a second in a thread of its own until stopped. `origin`: the clock
    reading the point's seconds count from (the system sampler's start)."""

    def __init__(self, engine: str, connect: Callable[[], Any], interval_s: float = 1.0,
                 clock: Callable[[], float] = time.monotonic, origin: float | None = None):
        self.engine = engine
        self.interval_s = interval_s
        self.clock = clock
        self.origin = clock() if origin is None else origin
        self.builder = Builder()
        self.stopped: str | None = None
        self.cpu_s: float | None = None  # the thread's own CPU time, once it ends
        self.reader: Reader | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True, name="dbarena-server-sampler")
        self._connect = connect

    def connect(self, clients: int | None = None) -> "ServerSampler":
        """Connect and take the first reading now, before the point starts. A failure
        is kept in `stopped`, never raised. `clients`: the connections the point's load
        generator will open; where the server would not take them beside the sampler's
        own (a target whose max_connections the benchmark fills), the sampler lets go
        of its connection and says so: the point is measured, not its server view."""
        try:
            self.reader = open_reader(self.engine, self._connect)
            free = self.reader.free_connections() if clients is not None else None
            if free is not None and clients is not None and free < clients:
                room = f"takes {free} more connection(s)" if free > 0 else "takes no more connection"
                self.stopped = (f"not sampled: the server {room} beside the sampler's, and the point opens "
                                f"{clients}: its clients come first")
                self._close()
                self.reader = None
                return self
            self._first = (self.clock(), self.reader.read())
        except Exception as exc:  # the drivers' errors differ; none may fail the point
            self.stopped = f"could not read the server's statistics: {_one_line(exc)}"
            self._close()
            self.reader = None
        return self

    def start(self, origin: float | None = None) -> "ServerSampler":
        """Sample in the background from now on (connected first if not yet), its
        seconds counted from `origin` (default: as given when made)."""
        if self.reader is None and self.stopped is None:
            self.connect()
        if origin is not None:
            self.origin = origin
        if self.reader is not None:
            self._thread.start()
        return self

    def _loop(self) -> None:
        # Lowest priority, as the system sampler: its work waits for an idle moment.
        with contextlib.suppress(OSError, AttributeError):
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)
        assert self.reader is not None
        previous_t, previous = self._first
        cpu_start = time.thread_time()
        try:
            while not self._stop.wait(self.interval_s):
                values = self.reader.read()
                t = self.clock()
                self.builder.add(round(t - self.origin, 3), rates(previous, values, t - previous_t,
                                                                 self.reader.gauges))
                previous_t, previous = t, values
        except Exception as exc:
            if not self._stop.is_set():
                second = round(self.clock() - self.origin)
                self.stopped = f"stopped at {second} s: {_one_line(exc)}"
        finally:
            self._close()
            self.cpu_s = round(time.thread_time() - cpu_start, 6)

    def _close(self) -> None:
        if self.reader is not None:
            with contextlib.suppress(Exception):
                self.reader.close()

    def stop(self) -> ServerSeries:
        """The series read so far; sampling ends."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=STOP_WAIT_S)
            if self._thread.is_alive() and self.stopped is None:
                self.stopped = f"the server did not answer a reading within {STOP_WAIT_S:.0f} s at the end"
        notes = self.reader.notes if self.reader is not None else ()  # (kept after it closes)
        return self.builder.build(self.engine, notes, self.stopped, self.cpu_s)
