"""The thread that reads the server's statistics once a second during a point.

Everything that talks to the server happens in that thread, connecting included, so the
point never waits on the network: connect() waits at most CONNECT_WAIT_S for the
connection and its first reading, stop() at most STOP_WAIT_S + HANGUP_WAIT_S for the
thread. A stalled peer (one that takes the bytes and never answers: a proxy, a
firewall that drops silently) cannot be bounded by the server's statement timeout,
and PostgreSQL's driver has no client-side read timeout; so the sampler keeps a
duplicate of its connection's socket and, to give up, shuts it down from outside,
which wakes the thread blocked on it; the thread then closes the connection. The
drivers bound connecting themselves (TIMEOUT_S; PyMySQL every read and write too).
No connection outlives its point: one still being made when the point gives up on it
is closed as soon as it is made.

Any failure ends the sampling, never the point: the series keeps the seconds read and
why it stopped (`stopped`). Messages pass through masked(), so a driver error that
quotes a connection string shows no password.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import time
from typing import Any, Callable, Mapping

from dbarena.interfaces import Reader
from dbarena.limits import one_line
from dbarena.serverside.room import room_note
from dbarena.serverside.series import Builder, ServerSeries, rates

# The drivers' client-side bound on connecting (and PyMySQL's on every read and write):
# what a connection to a remote server over TLS needs, with room.
TIMEOUT_S = 4.0
# How long the point waits for the connection and the first reading before it starts
# without them.
CONNECT_WAIT_S = 5.0
# How long stop() waits for a reading in progress (the server's statement timeout is
# 0.5 s) before it cuts the connection, and then for the thread to end.
STOP_WAIT_S = 2.0
HANGUP_WAIT_S = 1.0


def socket_of(connection: Any) -> socket.socket | None:
    """A duplicate of the connection's socket (psycopg's fileno()), that another thread
    may shut down whatever the driver does; None where the driver shows none (PyMySQL:
    its own read and write timeouts bound it instead)."""
    fileno = getattr(connection, "fileno", None)
    if fileno is None:
        return None
    try:
        fd = os.dup(fileno())
    except Exception:  # OSError, or psycopg's OperationalError on a connection already closed
        return None
    try:
        return socket.socket(fileno=fd)
    except OSError:
        os.close(fd)
        return None


class ServerSampler:
    """Samples once a second in a thread of its own until stopped. `origin`: the clock
    reading the point's seconds count from (the system sampler's start)."""

    def __init__(self, engine: str, connect: Callable[[], Any], interval_s: float = 1.0,
                 clock: Callable[[], float] = time.monotonic, origin: float | None = None,
                 connect_wait_s: float = CONNECT_WAIT_S, *, reader_for: Callable[[Any], Reader],
                 on_second: Callable[[float, Mapping[str, float | None]], None] | None = None):
        self.engine = engine
        # Called in the sampler's thread with each second's values as stored (a live
        # display of the point's throughput where the tool does not report it).
        self.on_second = on_second
        self.reader_for = reader_for  # the engine's reader (interfaces.Engine.server_reader)
        self.interval_s = interval_s
        self.clock = clock
        self.origin = clock() if origin is None else origin
        self.connect_wait_s = connect_wait_s
        self.builder = Builder()
        self.stopped: str | None = None
        self.cpu_s: float | None = None  # the thread's own CPU time, once it ends
        self.reader: Reader | None = None
        self.notes: tuple[str, ...] = ()
        self._connect = connect
        self._clients: int | None = None
        self._connection: Any = None
        self._socket: socket.socket | None = None
        self._lock = threading.Lock()
        self._ready = threading.Event()  # connected and read once, or given up
        self._go = threading.Event()     # start() or stop()
        self._stop = threading.Event()
        self._reading_since: float | None = None
        self._given_up = False
        self._final = False
        self._first: tuple[float, dict[str, float | None]] | None = None
        self._thread = threading.Thread(target=self._run, daemon=True, name="dbarena-server-sampler")

    # -- the point's side: none of these waits longer than its bound ------------------

    def connect(self, clients: int | None = None) -> "ServerSampler":
        """Connect and take the first reading now, before the point starts, waiting at
        most connect_wait_s. A failure is kept in `stopped`, never raised. `clients`: the
        connections the point's load generator will open; where the server (its
        max_connections, or the role's, database's or user's own limit) would not take
        them beside the sampler's own, the sampler lets go of its connection and says
        so: the point is measured, not its server view."""
        if self._thread.ident is not None:
            return self
        self._clients = clients
        self._thread.start()
        if not self._ready.wait(self.connect_wait_s):
            self._given_up = True
            self._say(f"not sampled: the server did not answer the sampler within {self.connect_wait_s:g} s")
            self._stop.set()
            self._go.set()
            self._hang_up()
        return self

    def commits(self) -> str | None:
        """The name of the counter of committed transactions, once connected, where the
        first reading holds it (the role may read it); None otherwise."""
        first, reader = self._first, self.reader
        if not self._ready.is_set() or self.stopped is not None or first is None or reader is None:
            return None
        name = reader.commits
        return name if name is not None and first[1].get(name) is not None else None

    def first_reading_s(self) -> float | None:
        """When the first reading was taken, in seconds since the origin (negative: it is
        taken before the point starts); None without one."""
        first = self._first
        return round(first[0] - self.origin, 3) if first is not None else None

    def start(self, origin: float | None = None) -> "ServerSampler":
        """Sample in the background from now on (connected first if not yet), its
        seconds counted from `origin` (default: as given when made)."""
        if origin is not None:
            self.origin = origin
        self.connect()
        self._go.set()
        return self

    def stop(self, final: bool = False) -> ServerSeries:
        """The series read so far; sampling ends, its connection closed (a reading that
        does not come back within STOP_WAIT_S is cut). `final`: one more reading first,
        a second's part long, so that the series covers up to now (the point's end:
        its commits counted to the last, serverside/throughput.py)."""
        self._final = final
        self._stop.set()
        self._go.set()
        if self._thread.is_alive() and not self._given_up:
            since = self._reading_since
            if since is None or self.clock() - since < STOP_WAIT_S:  # else stalled long ago: no wait
                self._thread.join(timeout=STOP_WAIT_S)
            if self._thread.is_alive():
                since = self._reading_since
                self._say(self._stuck(since) if since is not None
                          else f"the sampler did not end within {STOP_WAIT_S:g} s at the end")
                self._hang_up()
                self._thread.join(timeout=HANGUP_WAIT_S)
        # A thread still making its connection is left to close it once made (a daemon;
        # the driver's connect timeout ends that).
        return self.builder.build(self.engine, self.notes, self.stopped, self.cpu_s)

    def _stuck(self, since: float) -> str:
        return (f"stopped at {round(since - self.origin)} s: the server did not answer a reading for "
                f"{self.clock() - since:.0f} s (its connection was cut)")

    def _say(self, why: str) -> None:
        """The first reason sampling ended is the one kept."""
        with self._lock:
            if self.stopped is None:
                self.stopped = why

    def _hang_up(self) -> None:
        """Shut the connection's socket down, from any thread: a read blocked on it
        returns at once (closing it would not wake that read)."""
        with self._lock:
            if self._socket is not None:
                with contextlib.suppress(OSError):
                    self._socket.shutdown(socket.SHUT_RDWR)

    # -- the sampler's thread ---------------------------------------------------------

    def _run(self) -> None:
        cpu_start = time.thread_time()
        try:
            if self._open():
                self._ready.set()
                self._go.wait()
                self._sample()
        except Exception as exc:  # the drivers' errors differ; none may fail the point
            if self._stop.is_set() and self._final and self._ready.is_set():
                # The reading at the point's end, which a series from the commit counter
                # needs (serverside/throughput.py): said, or its refusal would not say why.
                self._say(f"its reading at the point's end failed: {one_line(exc)}")
            elif not self._stop.is_set():
                if self._ready.is_set():
                    since = self._reading_since
                    second = round((since if since is not None else self.clock()) - self.origin)
                    self._say(f"stopped at {second} s: {one_line(exc)}")
                else:
                    self._say(f"could not read the server's statistics: {one_line(exc)}")
        finally:
            self._reading_since = None
            self._close()
            self.cpu_s = round(time.thread_time() - cpu_start, 6)
            self._ready.set()

    def _open(self) -> bool:
        """Connected and read once; False where the point's clients come first or the
        point gave up waiting."""
        connection = self._connect()
        with self._lock:
            self._connection = connection
            self._socket = socket_of(connection)
        if self._stop.is_set():
            return False
        self._reading_since = self.clock()
        # The engine's reader over a connection of its own (its first statements run
        # here: they set its statement timeout and read the version).
        reader: Reader = self.reader_for(connection)
        room = reader.room() if self._clients is not None else None
        if room is not None and self._clients is not None and room.free < self._clients:
            self._say(room_note(room, self._clients))
            return False
        self._first = (self.clock(), reader.read())
        self._reading_since = None
        self.reader, self.notes = reader, reader.notes
        return not self._stop.is_set()

    def _sample(self) -> None:
        # Lowest priority, as the system sampler: its work waits for an idle moment;
        # unless its seconds are the point's throughput (on_second), which a reading
        # late by a starved thread would skew (its CPU is a few ms a second either way).
        if self.on_second is None:
            with contextlib.suppress(OSError, AttributeError):
                os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)
        assert self.reader is not None and self._first is not None
        previous_t, previous = self._first
        while True:
            last = self._stop.wait(self.interval_s)
            if last and not self._final:
                break
            self._reading_since = self.clock()
            values = self.reader.read()
            t = self.clock()
            self._reading_since = None
            second = rates(previous, values, t - previous_t, self.reader.gauges)
            self.builder.add(round(t - self.origin, 3), second)
            previous_t, previous = t, values
            if self.on_second is not None:
                self.on_second(round(t - self.origin, 3), second)
            if last:
                break

    def _close(self) -> None:
        if self._connection is not None:
            with contextlib.suppress(Exception):
                self._connection.close()
        with self._lock:
            if self._socket is not None:
                with contextlib.suppress(OSError):
                    self._socket.close()
            self._socket = None
            self._connection = None
