"""The point a run is measuring, second by second, while it measures it: written by the
run (`Publisher`), read by `dbarena serve` (Store.run_progress, or `read_sidecar`).

A point reaches the store whole when it ends (Store.add_point). Meanwhile its run
publishes its seconds here, as they come from the same source its series will be made
of (the tool's own progress lines, or the server's commit counter: run/measure.py), into
the table `live_seconds` (schema 19): which point (run, workload, threads, clients,
variant, repeat, phase), the second and its throughput, the last LIVE_KEEP_S seconds
of it. The rows are transient: removed in the transaction that stores the point, when
the run ends (however: Store.finish_run, which `cleanup` and the watchdog call too) and
when it is forgotten; never merged, exported or published.

Where they are written costs the benchmark nothing it would notice:
- PostgreSQL: the store's own table, UNLOGGED (no WAL, no fsync), written with
  synchronous_commit off by a connection of the publisher's own.
- SQLite: a sidecar database next to the store file, `STORE.live`, with the same table:
  the store's file is left alone (SQLite syncs it on every commit), the sidecar is
  written with synchronous OFF and its journal in memory; its loss is harmless (a
  damaged one is made anew, a missing one means nothing is live), and it is removed
  once no run holds rows in it.

One thread of the publisher's own writes, with its own connection (sqlite3's belong to
the thread that made them): the run only puts each second in a queue. A failure to
publish ends publishing, never the run.

The sidecar is a name beside the store, in a directory others may write (a shared
results folder), opened by a run that may be root's: dbarena writes it only where it
is its own (`foreign`): a regular file, not a symbolic link (a planted `STORE.live`
pointing at another SQLite file would have the live table written into that file, and
a dangling one a file made at its target), with a single link, owned by this user, and
holding no table but `live_seconds`; else it makes the file itself (O_CREAT | O_EXCL |
O_NOFOLLOW), and checks after opening that the name is still that file. A sidecar that
is not its own is neither written, cleared nor removed: the run goes on without
publishing and says so in one line.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import sqlite3
import stat
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Sequence
from urllib.parse import quote

from dbarena.model import PointSpec
from dbarena.records import LivePoint
from dbarena.store import postgres as pgstore
from dbarena.store.dialect import file_identity, read_only_uri
from dbarena.store.schema import TABLES, sqlite_ddl

# The seconds of a point kept (older ones deleted as new ones come): what a page shows
# of it, with room; the table stays a few rows a run.
LIVE_KEEP_S = 10
# How long the run waits for the seconds queued to be written before it stores the
# point (a publisher that cannot keep up is not worth waiting for).
FLUSH_WAIT_S = 2.0
# Writes that fail in a row before the publisher gives up (each loses its seconds).
MAX_FAILURES = 5

_TABLE = next(t for t in TABLES if t.name == "live_seconds")
COLUMNS = tuple(c.name for c in _TABLE.columns)
_INSERT = (f"INSERT INTO live_seconds ({', '.join(COLUMNS)}) VALUES ({', '.join('?' * len(COLUMNS))})"
           " ON CONFLICT (run_id, second) DO NOTHING")


def sidecar(path: Path) -> Path:
    """Where an SQLite store's live seconds are: STORE.live beside it."""
    return path.with_name(path.name + ".live")


def _uri(path: Path) -> str:
    """The sidecar's file URI for writing: its directory resolved, not its own name
    (a symbolic link there is refused, never followed: foreign)."""
    return f"file:{quote(str(path.parent.resolve() / path.name))}"


def _open_files() -> set[tuple[int, int, int]] | None:
    """(descriptor, device, inode) of each file this process has open; None where the
    system does not say (no /proc)."""
    try:
        fds = os.listdir("/proc/self/fd")
    except OSError:
        return None
    out = set()
    for name in fds:
        with contextlib.suppress(OSError, ValueError):
            st = os.stat(f"/proc/self/fd/{name}")
            out.add((int(name), st.st_dev, st.st_ino))
    return out


# What a file SQLite wrote begins with (an empty file is one just made, not yet written).
_SQLITE_HEADER = b"SQLite format 3\x00"


class NotOurs(Exception):
    """The sidecar's name holds something dbarena did not make: one line of why."""


def foreign(path: Path) -> str | None:
    """Why the file at `path` is not a sidecar dbarena may write, clear or remove; None
    where it is one (or there is none yet: the publisher makes it itself)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"{path} cannot be examined ({exc.strerror or exc})"
    if stat.S_ISLNK(st.st_mode):
        return f"{path} is a symbolic link"
    if not stat.S_ISREG(st.st_mode):
        return f"{path} is not a regular file"
    if st.st_nlink != 1:
        return f"{path} has {st.st_nlink} links (another name shares the file)"
    if st.st_uid != os.geteuid():
        return f"{path} belongs to another user (uid {st.st_uid})"
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        return f"{path} cannot be read ({exc.strerror or exc})"
    try:
        opened = os.fstat(fd)
        if (opened.st_dev, opened.st_ino) != (st.st_dev, st.st_ino):
            return f"{path} was replaced while it was examined"
        head = os.read(fd, len(_SQLITE_HEADER))
    finally:
        os.close(fd)
    if head and head != _SQLITE_HEADER:
        return f"{path} is not an SQLite database"
    if head:
        # Another SQLite database with tables of its own (a store, an application's
        # file) is not a sidecar, whatever its name.
        try:
            db = sqlite3.connect(read_only_uri(path), uri=True, timeout=0.2)
            try:
                names = {r[0] for r in db.execute("SELECT name FROM sqlite_schema WHERE type = 'table'")}
            finally:
                db.close()
        except sqlite3.DatabaseError as exc:
            if "malformed" in str(exc) or "not a database" in str(exc):
                return None  # a sidecar damaged by a crash mid-write: its loss is harmless
            return f"{path} cannot be read ({' '.join(str(exc).split())})"
        others = sorted(names - {"live_seconds"})
        if others:
            return f"{path} holds tables other than live_seconds ({', '.join(others[:3])})"
    return None


def refusal(path: Path) -> str | None:
    """The one line a run says when an SQLite store's sidecar (`path`: the store file)
    is not dbarena's to write; None where it is."""
    why = foreign(sidecar(path))
    return f"no live seconds for serve: {why}; dbarena writes no file it did not make" if why else None


def live_point(run_id: int, rows: Iterable[Sequence[Any]]) -> LivePoint | None:
    """A run's rows (phase, workload, threads, clients, variant, repeat, duration_s,
    stored_before, second, tps) as one LivePoint: those of the point begun last (the
    highest stored_before), its seconds in order; None for none, or rows that do not
    read (a hand-edited table: nothing shown rather than a wrong figure)."""
    kept: list[Sequence[Any]] = []
    for row in rows:
        if len(row) != 10:
            return None
        phase, workload, threads, clients, variant, repeat, duration, before, second, tps = row
        if not (isinstance(phase, str) and isinstance(workload, str) and isinstance(variant, str)
                and all(type(v) is int and v >= 0 for v in (threads, clients, repeat, before))
                and all(isinstance(v, (int, float)) and not isinstance(v, bool) and 0 <= v < 1e308
                        for v in (duration, second, tps))):
            return None
        kept.append(row)
    if not kept:
        return None
    newest = max(int(r[7]) for r in kept)
    mine = sorted((r for r in kept if r[7] == newest), key=lambda r: float(r[8]))
    first = mine[-1]
    return LivePoint(run_id=run_id, phase=first[0], workload=first[1], threads=first[2], clients=first[3],
                     variant=first[4], repeat=first[5], duration_s=float(first[6]), stored_before=newest,
                     seconds=tuple((float(r[8]), float(r[9])) for r in mine))


def from_json(run_id: int, text: object) -> LivePoint | None:
    """A run's rows as Store.run_progress aggregates them (a JSON array of arrays)."""
    if not isinstance(text, str):
        return None
    try:
        rows = json.loads(text)
    except ValueError:
        return None
    if not isinstance(rows, list) or not all(isinstance(r, list) for r in rows):
        return None
    return live_point(run_id, rows)


def read_sidecar(path: Path, run_ids: Iterable[int]) -> dict[int, LivePoint]:
    """The live points of these runs in an SQLite store's sidecar (`path`: the sidecar),
    read-only; a missing, busy or damaged sidecar: none (nothing live this time)."""
    ids = sorted(set(run_ids))[:1000]
    if not ids or not path.is_file() or path.is_symlink():
        return {}

    rows: list[tuple[Any, ...]] = []
    with contextlib.suppress(sqlite3.Error):
        db = sqlite3.connect(read_only_uri(path), uri=True, timeout=0.2)
        try:
            rows = db.execute(f"SELECT {', '.join(COLUMNS)} FROM live_seconds WHERE run_id IN "
                              f"({', '.join('?' * len(ids))}) ORDER BY run_id, second", ids).fetchall()
        finally:
            db.close()
    by_run: dict[int, list[tuple[Any, ...]]] = {}
    for row in rows:
        if type(row[0]) is int:
            by_run.setdefault(row[0], []).append(row[1:])
    return {run_id: point for run_id, found in by_run.items() if (point := live_point(run_id, found)) is not None}


def clear_sidecar(path: Path, run_ids: Iterable[int]) -> None:
    """These runs' rows removed from an SQLite store's sidecar (`path`: the store file),
    and the sidecar itself once no run holds rows there (removed under its exclusive
    lock, so that no writer is between two writes; a publisher that had it open opens
    the new one). Best effort: a sidecar is never worth failing a command for."""
    live = sidecar(path)
    ids = sorted(set(run_ids))
    if not live.is_file() or foreign(live) is not None:
        return  # (not dbarena's: left as it is)
    with contextlib.suppress(sqlite3.Error, OSError):
        identity = file_identity(live, follow=False)
        db = sqlite3.connect(_uri(live), uri=True, timeout=1, isolation_level=None)
        try:
            db.execute("BEGIN EXCLUSIVE")
            try:
                if file_identity(live, follow=False) != identity:
                    return  # replaced since it was examined
                for start in range(0, len(ids), 500):
                    chunk = ids[start:start + 500]
                    db.execute(f"DELETE FROM live_seconds WHERE run_id IN ({', '.join('?' * len(chunk))})", chunk)
                if db.execute("SELECT 1 FROM live_seconds LIMIT 1").fetchone() is None:
                    live.unlink()
            finally:
                db.execute("COMMIT")
        finally:
            db.close()


@dataclass(frozen=True)
class _Point:
    token: int
    run_id: int
    row: tuple[Any, ...]  # phase, workload, threads, clients, variant, repeat, duration_s, stored_before


class Publisher:
    """A run's live seconds written by a thread of its own (started by the first point).
    `location`: the store's (an SQLite file's path, or a postgresql:// URL without a
    password: the store's own connection found it in PGPASSWORD or ~/.pgpass)."""

    def __init__(self, location: str | Path):
        self.postgresql = pgstore.is_url(location)
        self.location = location
        self.store_path = None if self.postgresql else Path(location)
        self.path = sidecar(self.store_path) if self.store_path is not None else None
        self.broken: str | None = None  # why publishing stopped, once it has
        self.refused: str | None = None  # why, where the sidecar is not dbarena's (the run says it)
        self._queue: queue.SimpleQueue[tuple[Any, ...]] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._tokens = 0
        self._runs: set[int] = set()
        self._db: Any = None
        self._identity: tuple[int, int] | None = None

    # -- the run's side: none of these waits, but flush (at most FLUSH_WAIT_S) --------

    def begin(self, run_id: int, spec: PointSpec, phase: str, stored_before: int, duration_s: float) -> int:
        """A point (or its warm-up) starts: its earlier seconds go, its own come under
        the token returned."""
        self._tokens += 1
        self._runs.add(run_id)
        self._put(("begin", _Point(self._tokens, run_id, (
            phase, spec.workload, spec.threads, spec.clients, spec.variant, spec.repeat, float(duration_s),
            stored_before))))
        return self._tokens

    def second(self, token: int, second: float, tps: float) -> None:
        """A second of the point begun under `token` (from any thread)."""
        self._put(("second", token, float(second), float(tps)))

    def flush(self, wait_s: float = FLUSH_WAIT_S) -> bool:
        """Wait until what was queued is written (before the point is stored, so that
        none of its seconds lands after the transaction that removes them), at most
        `wait_s`; whether it was. A run does not wait longer for a publisher at the
        lowest priority on a loaded machine; a reader that needs the rows may."""
        if self._thread is None or not self._thread.is_alive():
            return True
        done = threading.Event()
        self._put(("flush", done))
        return done.wait(wait_s)

    def clear(self, run_id: int) -> None:
        """The run's point was stored (its seconds went in that transaction on
        PostgreSQL; from the sidecar now)."""
        self._put(("clear", run_id))

    def close(self) -> None:
        """Every run's rows removed, the thread ended, its connection closed."""
        if self._thread is None:
            return
        for run_id in sorted(self._runs):
            self._put(("clear", run_id))
        self._queue.put(("close",))
        self._thread.join(FLUSH_WAIT_S * 2)
        self._thread = None
        if self.store_path is not None and self._runs:
            clear_sidecar(self.store_path, self._runs)  # (and the sidecar itself, once no run holds rows)

    def _put(self, item: tuple[Any, ...]) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, daemon=True, name="dbarena-live")
            self._thread.start()
        self._queue.put(item)

    # -- the publisher's thread ---------------------------------------------------------

    def _run(self) -> None:
        # Lowest priority: a few rows a second, which may wait for an idle moment.
        with contextlib.suppress(OSError, AttributeError):
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)
        points: dict[int, _Point] = {}  # run id -> the point it is measuring
        failures = 0
        try:
            while True:
                batch = [self._queue.get()]
                with contextlib.suppress(queue.Empty):
                    while len(batch) < 1000:
                        batch.append(self._queue.get_nowait())
                closing = any(item[0] == "close" for item in batch)
                if self.broken is None:
                    try:
                        self._write(batch, points)
                        failures = 0
                    except NotOurs as exc:
                        # Not a passing failure: nothing is written there, from now on.
                        self._close()
                        self.refused = self.broken = (f"no live seconds for serve: {exc}; dbarena writes no file "
                                                      f"it did not make")
                    except Exception as exc:  # the drivers' errors differ; none may reach the run
                        # A reader holding the sidecar a moment too long, a connection
                        # dropped: those seconds are lost, the next ones tried on a new
                        # connection; publishing ends after MAX_FAILURES in a row.
                        failures += 1
                        self._close()
                        if failures >= MAX_FAILURES:
                            self.broken = " ".join(str(exc).split()) or type(exc).__name__
                for item in batch:
                    if item[0] == "flush":
                        item[1].set()
                if closing:
                    return
        finally:
            self._close()

    def _write(self, batch: list[tuple[Any, ...]], points: dict[int, _Point]) -> None:
        rows: list[tuple[Any, ...]] = []
        cleared: set[int] = set()
        latest: dict[int, float] = {}
        by_token = {p.token: p for p in points.values()}
        for item in batch:
            if item[0] == "begin":
                point = item[1]
                points[point.run_id] = point
                by_token = {p.token: p for p in points.values()}
                cleared.add(point.run_id)
                rows = [r for r in rows if r[0] != point.run_id]
            elif item[0] == "second":
                found = by_token.get(item[1])
                if found is not None:  # (a second of a point already stored: dropped)
                    rows.append((found.run_id, *found.row, item[2], item[3]))
                    latest[found.run_id] = max(latest.get(found.run_id, 0.0), item[2])
            elif item[0] == "clear":
                points.pop(item[1], None)
                by_token = {p.token: p for p in points.values()}
                cleared.add(item[1])
                rows = [r for r in rows if r[0] != item[1]]
                latest.pop(item[1], None)
        if not rows and not cleared:
            return
        db = self._connection()
        with db:
            for run_id in sorted(cleared):
                db.execute("DELETE FROM live_seconds WHERE run_id = ?", (run_id,))
            if rows:
                db.executemany(_INSERT, rows)
            for run_id, second in latest.items():
                db.execute("DELETE FROM live_seconds WHERE run_id = ? AND second < ?", (run_id, second - LIVE_KEEP_S))

    def _connection(self) -> Any:
        """The publisher's connection: the store's (PostgreSQL), or the sidecar's, made
        anew when the file there is not the one it opened (removed by a run that ended)."""
        if self.path is not None and self._db is not None and file_identity(self.path, follow=False) != self._identity:
            self._close()
        if self._db is not None:
            return self._db
        if self.path is None:
            db: Any = pgstore.Connection(str(self.location))
            # Unlogged rows write no WAL; nor does a commit wait for any. Named apart from
            # the run's own connection to the store (pg_stat_activity).
            db.execute("SET synchronous_commit = off")
            db.execute("SET application_name = 'dbarena-live'")
            self._db = db
            return db
        why = foreign(self.path)
        if why is not None:
            raise NotOurs(why)
        try:
            self._db = self._sqlite(self.path)
        except sqlite3.DatabaseError as exc:
            if "malformed" not in str(exc) and "not a database" not in str(exc):
                raise
            # Damaged (a crash mid-write): its loss is harmless; removed only as the
            # file just examined (foreign: a regular file of this user's, one link).
            self.path.unlink(missing_ok=True)
            self._db = self._sqlite(self.path)
        return self._db

    def _sqlite(self, path: Path) -> sqlite3.Connection:
        # Made here where there is none: O_EXCL and O_NOFOLLOW fail on any name already
        # there, a dangling symbolic link included.
        with contextlib.suppress(FileExistsError):
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644))
        identity = file_identity(path, follow=False)
        why = foreign(path)
        if why is not None or identity is None:
            raise NotOurs(why or f"{path} vanished as it was made")
        before = _open_files()
        db = sqlite3.connect(_uri(path), uri=True, timeout=1)
        try:
            # SQLite opens a name, following a symbolic link (it has no URI parameter to
            # refuse one): the name may have been swapped between the check and the
            # open. Before anything is written, the file SQLite opened (a descriptor new
            # since) is checked to be the one examined, and the name to be it still.
            after = _open_files()
            opened = before is None or after is None or any(
                (dev, ino) == identity for fd, dev, ino in after - before)
            if not opened or file_identity(path, follow=False) != identity:
                raise NotOurs(f"{path} was replaced as it was opened")
            # Nothing here is worth a sync: a crash loses seconds shown once.
            db.execute("PRAGMA synchronous = OFF")
            db.execute("PRAGMA journal_mode = MEMORY")
            with db:
                db.execute(sqlite_ddl(_TABLE))
        except BaseException:
            db.close()
            raise
        self._identity = identity
        return db

    def _close(self) -> None:
        if self._db is not None:
            with contextlib.suppress(Exception):
                self._db.close()
        self._db = None
        self._identity = None
