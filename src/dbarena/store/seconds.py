"""A point's per-second rows as the store reads them: its samples and system samples as
records, its throughput as numpy for the derived figures, and its system samples summed
in SQL. Every row passes the store's edge (edge.py) first: one that does not fit is
said once and left out. Store (database.py) offers these as its own methods."""

from __future__ import annotations

import functools
from dataclasses import fields
from itertools import chain
from typing import TYPE_CHECKING, Any, Callable, Iterable, Sequence, TypeVar, cast, overload

from dbarena.bulk import collector_paused
from dbarena.interfaces import SqlConnection
from dbarena.model import Sample
from dbarena.records import StoredSystemSample, SystemSums
from dbarena.store import edge
from dbarena.store.edge import Edge
from dbarena.store.encoding import chunks

if TYPE_CHECKING:
    from dbarena.stats.steadystate import Floats

__all__ = ["Seconds", "LazySeconds", "SAMPLE_COLUMNS", "SYSTEM_COLUMNS", "SYSTEM_MEANS"]

# The per-second tables' columns are the records' fields, in their order: a row read is
# its record made from its values as they come (Sample.read, StoredSystemSample).
SYSTEM_COLUMNS = tuple(f.name for f in fields(StoredSystemSample))
# The system samples' figures a point's derived figures average (analysis.system_view).
SYSTEM_MEANS = ("cpu_idle_pct", "cpu_iowait_pct", "cpu_steal_pct", "server_cpu", "loadgen_cpu",
                "context_switches_per_s", "disk_read_bytes_per_s", "disk_write_bytes_per_s")
SAMPLE_COLUMNS = tuple(f.name for f in fields(Sample))

_Second = TypeVar("_Second", Sample, StoredSystemSample)  # a per-second row's record
# A second that is a number (a range, so that PostgreSQL and SQLite both read it: text
# and blobs sort after numbers in SQLite; NULL, NaN and infinity fall outside).
_SECOND_FITS = "second BETWEEN 0 AND 1e308"


class LazySeconds(Sequence[float]):
    """A point's seconds, read from the store when first indexed: most points' derived
    figures need none (only a warm-up cut, a dip or a missing duration names a second).
    Slices from an index to the end (what steadystate takes) stay lazy and share what
    one of them read."""

    def __init__(self, load: Callable[[], list[float]], length: int, offset: int = 0,
                 read: list[list[float]] | None = None):
        self._load, self._length, self._offset = load, length, offset
        self._read = read if read is not None else []

    def _values(self) -> list[float]:
        if not self._read:
            self._read.append(self._load())
        return self._read[0]

    def __len__(self) -> int:
        return self._length - self._offset

    @overload
    def __getitem__(self, index: int) -> float: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[float]: ...

    def __getitem__(self, index: int | slice) -> float | Sequence[float]:
        if isinstance(index, slice):
            start, stop, step = index.indices(len(self))
            if step == 1 and stop == len(self):
                return LazySeconds(self._load, self._length, self._offset + start, self._read)
            return self._values()[self._offset:][index]
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(index)
        return self._values()[self._offset + index]


class Seconds:
    """The per-second reads of one store: its connection, its edge, and whether it is
    SQLite (a query a point there, a round trip a chunk of points on a server)."""

    def __init__(self, db: SqlConnection, edge_: Edge, sqlite: bool):
        self.db, self.edge, self.sqlite = db, edge_, sqlite

    def samples_of(self, point_ids: Iterable[int]) -> dict[int, list[Sample]]:
        """Many points' per-second samples, in one query per chunk; points without any
        are left out, and so is a row that does not fit (said once)."""
        return self._series("samples", SAMPLE_COLUMNS, Sample.read, point_ids)

    def system_samples_of(self, point_ids: Iterable[int]) -> dict[int, list[StoredSystemSample]]:
        """Many points' system samples, as samples_of."""
        return self._series("system_samples", SYSTEM_COLUMNS, StoredSystemSample, point_ids)

    def _series(self, table: str, columns: Sequence[str], record: Callable[..., _Second],
                point_ids: Iterable[int]) -> dict[int, list[_Second]]:
        """Per-second rows of many points (`columns`: the fields of `record`, in order)."""
        out: dict[int, list[_Second]] = {}
        with collector_paused():
            for chunk in chunks(sorted(set(point_ids))):
                cur = self.db.execute(
                    f"SELECT point_id, {', '.join(columns)} FROM {table} WHERE point_id IN "
                    f"({', '.join('?' * len(chunk))}) ORDER BY point_id, second", chunk)
                for row in self._series_rows(table, ("point_id", *columns), cur.fetchall()):
                    out.setdefault(row[0], []).append(record(*row[1:]))
        return out

    def _series_rows(self, table: str, names: Sequence[str], rows: list[tuple[Any, ...]]) -> list[list[Any]]:
        """Per-second rows (point_id, second first) that fit; the others said and left out."""
        return self.edge.check(table, names, rows, lambda row: f"of point {row[0]} at second {edge.describe(row[1])}",
                               "that second is left out")

    def tps_series(self, point_ids: Iterable[int]) -> dict[int, tuple[Sequence[float], Floats]]:
        """Each point's per-second (seconds, tps), the tps as a numpy array: what its
        derived figures are computed from, without a dict of 18 columns a row (a 10 k-
        point store holds 6 M rows). Points without samples are left out."""
        import numpy as np  # here: most commands read no series

        out: dict[int, tuple[Sequence[float], Floats]] = {}
        wanted = sorted(set(point_ids))
        def fits(tps: Floats) -> bool:  # (NaN fails both comparisons)
            return bool((tps >= 0).all() and (tps < np.inf).all())

        if self.sqlite:
            # A query a point, its tps alone: the primary key (point_id, second) hands
            # them over in order, and the seconds are read only if a figure needs them.
            # (Seconds that are not numbers are left out by the range, in both queries.)
            for pid in wanted:
                try:
                    tps = np.fromiter(chain.from_iterable(self.db.execute(
                        f"SELECT tps FROM samples WHERE point_id = ? AND {_SECOND_FITS} ORDER BY second", (pid,))),
                        dtype=float)
                except (TypeError, ValueError):  # text or a blob among them
                    tps = np.array([-1.0])
                if not fits(tps):
                    self._checked_tps(pid, out)
                elif len(tps):
                    out[pid] = (LazySeconds(functools.partial(self._seconds, pid), len(tps)), tps)
            return out
        for chunk in chunks(wanted):  # a server: one round trip a chunk
            rows = np.fromiter(chain.from_iterable(self.db.execute(
                f"SELECT point_id, second, tps FROM samples WHERE point_id IN ({', '.join('?' * len(chunk))}) "
                f"AND {_SECOND_FITS} ORDER BY point_id, second", chunk)), dtype=float).reshape(-1, 3)
            firsts = cast(list[int], np.flatnonzero(np.diff(rows[:, 0], prepend=-1.0)).tolist())
            for first, end in zip(firsts, [*firsts[1:], len(rows)]):
                pid, tps = int(rows[first, 0]), rows[first:end, 2].copy()
                if fits(tps):
                    out[pid] = (cast(list[float], rows[first:end, 1].tolist()), tps)
                else:
                    self._checked_tps(pid, out)
        return out

    def _checked_tps(self, point_id: int, out: dict[int, tuple[Sequence[float], Floats]]) -> None:
        """A point's (seconds, tps) when some of its samples do not fit: those said and
        left out, row by row."""
        import numpy as np

        rows = self.db.execute("SELECT point_id, second, tps FROM samples WHERE point_id = ? ORDER BY second",
                               (point_id,)).fetchall()
        fit = self._series_rows("samples", ("point_id", "second", "tps"), rows)
        if fit:
            out[point_id] = ([row[1] for row in fit], np.array([row[2] for row in fit], dtype=float))

    def _seconds(self, point_id: int) -> list[float]:
        return [second for second, in self.db.execute(
            f"SELECT second FROM samples WHERE point_id = ? AND {_SECOND_FITS} ORDER BY second", (point_id,))]

    def system_sums(self, starts: dict[int, float | None], db: SqlConnection | None = None
                    ) -> dict[int, SystemSums]:
        """Counts and sums of the system samples' CPU figures (SYSTEM_MEANS) of each
        point, summed in SQL (records.SystemSums): over all its samples, and over those
        from its steady start on (all of them where the start is None). Points without system samples are left out. `db`: the connection to read
        them with (second_reader's, from another thread), else the store's. A point
        with a sample that does not fit (text, NaN, a negative figure) is summed here
        instead, without that sample (said once)."""
        db = db or self.db
        sums = ", ".join(f"count({c}), sum({c})" for c in SYSTEM_MEANS)
        # Whether any sample of the point does not fit, in the same scan (NULL is none).
        misfit = "max(CASE WHEN " + " OR ".join(
            f"NOT ({c} BETWEEN 0 AND 1e308)" for c in ("second", *SYSTEM_MEANS)) + " THEN 1 ELSE 0 END)"

        def figures(row: Sequence[Any]) -> dict[str, tuple[int, float | None]]:
            return {c: (row[2 * i], row[2 * i + 1]) for i, c in enumerate(SYSTEM_MEANS)}
        out: dict[int, SystemSums] = {}
        cut: list[int] = []
        for chunk in chunks(sorted(starts)):
            for pid, bad, rows, first, *rest in db.execute(
                    f"SELECT point_id, {misfit}, count(*), min(second), {sums} FROM system_samples WHERE point_id IN "
                    f"({', '.join('?' * len(chunk))}) GROUP BY point_id", chunk):
                if bad:
                    self._checked_sums(db, pid, starts[pid], out)
                    continue
                whole = figures(rest)
                out[pid] = SystemSums(whole=whole, steady=whole, steady_rows=rows)
                start = starts[pid]
                if start is not None and start > first:
                    cut.append(pid)
        # A warm-up cut: the steady part summed on its own (a range of the primary key).
        for pid in cut:
            rows, *rest = db.execute(
                f"SELECT count(*), {sums} FROM system_samples WHERE point_id = ? AND second >= ?",
                (pid, starts[pid])).fetchone()
            out[pid] = SystemSums(whole=out[pid].whole, steady=figures(rest), steady_rows=rows)
        return out

    def _checked_sums(self, db: SqlConnection, point_id: int, start: float | None,
                      out: dict[int, SystemSums]) -> None:
        """system_sums of one point whose samples do not all fit: those left out."""
        names = ("point_id", "second", *SYSTEM_MEANS)
        rows = self._series_rows("system_samples", names, db.execute(
            f"SELECT {', '.join(names)} FROM system_samples WHERE point_id = ? ORDER BY second",
            (point_id,)).fetchall())
        if not rows:
            return

        def figures(part: list[list[Any]]) -> dict[str, tuple[int, float | None]]:
            columns = {c: [row[k] for row in part if row[k] is not None] for k, c in enumerate(names) if k > 1}
            return {c: (len(v), float(sum(v)) if v else None) for c, v in columns.items()}
        steady = [row for row in rows if start is None or row[1] >= start]
        out[point_id] = SystemSums(whole=figures(rows), steady=figures(steady), steady_rows=len(steady))
