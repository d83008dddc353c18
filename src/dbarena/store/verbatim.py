"""Rows as another store held them, in and out: what a bundle carries of a point and
its run (exchange/), read from the store that publishes it and added, as it was, to
the throwaway store that verifies it.

Added verbatim: the run's and the point's ids, the run's UUID and host fingerprint,
the figures and the configuration key as the bundle gives them; nothing is made or
derived here (but a profile's summary, made from its stacks by Store.add_profile as
for every point). Nothing is checked as it is added either: the store's edge (edge.py)
checks these rows as every read does, and `dbarena import` brings them on into a
store by merge.py, whose edge leaves out what does not fit. The columns written are
schema.py's, the values the records' fields of the same names: a column a migration
adds is a field of StoredRun or StoredPoint already (every read makes them), so
nothing outside the store names a column."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Iterable, Protocol, Sequence

from dbarena.errors import StoreError
from dbarena.interfaces import SqlConnection
from dbarena.model import StudyRecord
from dbarena.records import JSON, JSONObject, ServerRecord, StoredPoint, StoredProfile, StoredRun
from dbarena.store.encoding import pack
from dbarena.store.schema import TABLES, Column


class _Store(Protocol):
    """What of store.database.Store this module uses (it imports this module)."""

    @property
    def db(self) -> SqlConnection: ...
    @property
    def location(self) -> str: ...
    def raw_output(self, point_id: int) -> tuple[str, str]: ...
    def latency_histograms(self, point_ids: Iterable[int]) -> dict[int, JSONObject]: ...
    def server_series(self, point_ids: Iterable[int], records: bool = True) -> dict[int, ServerRecord]: ...
    def profiles(self, point_ids: Iterable[int], folded: bool = False) -> dict[int, StoredProfile]: ...
    def add_profile(self, point_id: int, folded: str, frequency_hz: float, symbols: str) -> None: ...

__all__ = ["SeriesRows", "ServerRecord", "PointFiles", "Verbatim", "SERIES_TABLES", "series_columns",
           "point_files"]

# The per-second tables a point's series are kept in.
SERIES_TABLES = ("samples", "system_samples")
_COLUMNS: dict[str, tuple[Column, ...]] = {t.name: t.columns for t in TABLES}
# The points' columns that are no field of StoredPoint: the point's command and its end,
# the row's id (StoredPoint's point_id).
_POINT_OWN = ("id", "command", "exit_code")


def series_columns(table: str) -> dict[str, str]:
    """A per-second table's columns but its point, in the table's order, each with its
    logical type (schema.py's: "real", "integer", "bigint")."""
    if table not in SERIES_TABLES:
        raise ValueError(f"{table!r} is not a per-second table")
    return {c.name: c.type for c in _COLUMNS[table] if c.name != "point_id"}


@dataclass(frozen=True)
class SeriesRows:
    """A point's per-second rows of one table: the columns they give (some of
    series_columns', in any order) and a row a second, a value a column (None: none)."""

    columns: tuple[str, ...]
    rows: Sequence[Sequence[Any]]


@dataclass(frozen=True)
class PointFiles:
    """What a point keeps besides its figures: the command its tool ran and how it
    ended, and what it left (a bundle's files of the point). A series, histogram,
    server series or profile the store does not hold for it is None."""

    command: list[str]
    exit_code: int | None
    stdout: str
    stderr: str
    samples: SeriesRows | None
    system_samples: SeriesRows | None
    latency_histogram: JSONObject | None
    server: ServerRecord | None
    profile: str | None  # the folded stacks (their frequency and symbols are the point record's)


def _json(column: Column, value: Any) -> Any:
    """A value as its column keeps it: JSON as text (keys sorted), a nullable JSON
    column's None as NULL; any other value as it is."""
    if column.holds not in ("json", "json-list") or (value is None and not column.not_null):
        return value
    return json.dumps(value, sort_keys=True)


def _legacy(column: Column) -> str:
    """What a column kept empty since schema 11 (schema.py's `legacy`) is written as:
    SQLite declared it without a default, so a row names it."""
    return "{}" if column.holds == "json" else ""


class Verbatim:
    """The rows of one transaction (Store.verbatim), each added as given, none checked
    (the module's docstring). Each method writes one row or a point's rows of one
    table, so that a reader of a bundle adds them in the order it reads them."""

    def __init__(self, store: _Store, db: SqlConnection):
        self.store, self.db = store, db

    def study(self, study: StudyRecord) -> None:
        """A study's text (kept once: one already there stays)."""
        self.db.execute("INSERT OR IGNORE INTO studies (sha256, name, source, text) VALUES (?, ?, ?, ?)",
                        (study.sha256, study.name, study.source, study.text))

    def run(self, run: StoredRun) -> None:
        """A run with its id, UUID and host (its facts kept once, under the run's
        fingerprint as given)."""
        self.db.execute("INSERT OR IGNORE INTO hosts (fingerprint, facts) VALUES (?, ?)",
                        (run.host_fingerprint, json.dumps(run.host_facts, sort_keys=True)))
        columns = _COLUMNS["runs"]
        values = [_legacy(c) if c.legacy else _json(c, getattr(run, c.name)) for c in columns]
        self._insert("runs", [c.name for c in columns], values)

    def point(self, point: StoredPoint, command: JSON, exit_code: Any) -> None:
        """A point's row, its id `point.point_id` (what StoredPoint has of another
        run, its label, host and study, is its run's, not the point's)."""
        columns = _COLUMNS["points"]
        own = {"id": point.point_id, "command": command, "exit_code": exit_code}
        values = [_legacy(c) if c.legacy else _json(c, own[c.name] if c.name in _POINT_OWN else getattr(point, c.name))
                  for c in columns]
        self._insert("points", [c.name for c in columns], values)

    def raw_output(self, point_id: int, stdout: str, stderr: str) -> None:
        self.db.execute("INSERT INTO raw_outputs VALUES (?, 'zlib', ?, ?)", (point_id, pack(stdout), pack(stderr)))

    def series(self, table: str, point_id: int, series: SeriesRows) -> None:
        """A point's rows of a per-second table (SERIES_TABLES)."""
        known = series_columns(table)
        unknown = [c for c in series.columns if c not in known]
        if unknown:  # (the caller's to refuse first: no column is taken from outside the schema)
            raise StoreError(f"store {self.store.location}: {table} has no column {', '.join(unknown)}")
        self.db.executemany(f"INSERT INTO {table} (point_id, {', '.join(series.columns)}) VALUES "
                            f"({', '.join('?' * (len(series.columns) + 1))})",
                            [(point_id, *row) for row in series.rows])

    def latency_histogram(self, point_id: int, record: JSON) -> None:
        self.db.execute("INSERT INTO latency_histograms (point_id, record) VALUES (?, ?)",
                        (point_id, json.dumps(record, sort_keys=True)))

    def server_series(self, point_id: int, server: ServerRecord) -> None:
        self.db.execute("INSERT INTO server_series (point_id, bound, evidence, record, figures) VALUES (?, ?, ?, ?, ?)",
                        (point_id, server.bound, server.evidence, json.dumps(server.record, sort_keys=True),
                         json.dumps(server.figures, sort_keys=True) if server.figures is not None else None))

    def profile(self, point_id: int, folded: str, frequency_hz: float, symbols: str) -> None:
        """A point's on-CPU profile, its summary made from the stacks (Store.add_profile;
        stats.profiles.FoldedProblem where they are no folded stacks)."""
        self.store.add_profile(point_id, folded, frequency_hz, symbols)

    def _insert(self, table: str, columns: list[str], values: list[Any]) -> None:
        self.db.execute(f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})",
                        tuple(values))


def point_files(store: _Store, point_id: int) -> PointFiles:
    """A point's command, end and files as stored (Store.point_files): the raw output
    (StoreError where it does not read back), the per-second rows as they are, and the
    histogram, server series and profile that fit (edge.py; one that does not is said
    and left out, as every read leaves it)."""
    row = store.db.execute("SELECT command, exit_code FROM points WHERE id = ?", (point_id,)).fetchone()
    if row is None:
        raise StoreError(f"no point {point_id} in {store.location}")
    command = json.loads(row[0]) if isinstance(row[0], str) else []
    stdout, stderr = store.raw_output(point_id)
    series: dict[str, SeriesRows | None] = {}
    for table in SERIES_TABLES:
        columns = tuple(series_columns(table))
        rows = store.db.execute(f"SELECT {', '.join(columns)} FROM {table} WHERE point_id = ? ORDER BY second",
                                (point_id,)).fetchall()
        series[table] = SeriesRows(columns, [tuple(r) for r in rows]) if rows else None
    histogram = store.latency_histograms([point_id]).get(point_id)
    server = store.server_series([point_id]).get(point_id)
    profile = store.profiles([point_id], folded=True).get(point_id)
    return PointFiles(command=[str(c) for c in command], exit_code=row[1], stdout=stdout, stderr=stderr,
                      samples=series["samples"], system_samples=series["system_samples"],
                      latency_histogram=histogram, server=server,
                      profile=profile.folded if profile is not None else None)
