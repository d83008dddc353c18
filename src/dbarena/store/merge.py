"""Merging stores: another store's runs (points, series, raw outputs, studies, hosts)
brought into this one, each run once (by its UUID). SQLite into SQLite goes through
ATTACH, in SQL alone; a PostgreSQL store on either side, row by row."""

from __future__ import annotations

import contextlib
import json
import sqlite3
import tempfile
from pathlib import Path
from typing import Any, Iterable

from dbarena.errors import StoreError
from dbarena.store import postgres as pgstore
from dbarena.store.database import POINT_TABLES, Store
from dbarena.store.dialect import read_only_uri
from dbarena.store.encoding import chunks


def merge(into: Store, other: str | Path) -> tuple[int, int]:
    """Bring another store's runs (points, series, raw outputs, studies, hosts) into
    `into`; (runs, points) added. Runs already there (by UUID) are skipped, so merging a
    store twice adds nothing. Either store may be SQLite or PostgreSQL. An SQLite file is
    read from a migrated copy (the file itself is left as it is); a newer schema is
    refused. All or nothing: one transaction."""
    if pgstore.is_url(other):
        if str(other) == into.location:
            raise StoreError(f"merge: {other} is the store being merged into")
        with Store(str(other), readonly=True) as source:  # a merge reads the other store, never writes it
            return _merge_from(into, source, str(other))
    other = Path(other)
    if not other.is_file():
        raise StoreError(f"merge: no store {other}")
    if into.path is not None and other.resolve() == into.path.resolve():
        raise StoreError(f"merge: {other} is the store being merged into")
    with tempfile.TemporaryDirectory(prefix="dbarena-merge-") as tmp:
        copy = Path(tmp) / "other.db"
        try:
            # SQLite's online backup: a consistent copy even of a store being written.
            with contextlib.closing(sqlite3.connect(read_only_uri(other), uri=True, timeout=60)) as source, \
                    contextlib.closing(sqlite3.connect(copy)) as dest:
                source.backup(dest)
            # Migrated to this dbarena's schema, or refused: a newer one, another
            # program's file, an empty one (create=False: not taken for a new store).
            Store(copy, create=False).close()
        except StoreError as exc:
            raise StoreError(str(exc).replace(str(copy), str(other))) from None
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"merge: {other}: {exc}") from None
        except OSError as exc:
            raise StoreError(f"merge: {other}: cannot copy it to {tmp}: {exc.strerror or exc}") from None
        if not isinstance(into.db, sqlite3.Connection):
            with Store(copy) as source:
                return _merge_from(into, source, str(other))
        db = into.db
        try:
            db.execute("ATTACH DATABASE ? AS src", (str(copy),))
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"merge: {other}: {exc}") from None
        try:
            with into._writing():
                return _merge_attached(db)
        except sqlite3.DatabaseError as exc:  # a damaged file: nothing was added
            raise StoreError(f"merge: {other}: {exc}") from None
        finally:
            db.execute("DETACH DATABASE src")


def _merge_from(into: Store, source: Store, name: str) -> tuple[int, int]:
    """merge() row by row, for a PostgreSQL store on either side (SQLite to SQLite goes
    through ATTACH, in SQL alone). New ids come from the target's own sequence (or after
    its largest id), so that writers of a shared store never collide with a merge."""
    caught: tuple[type[Exception], ...] = (sqlite3.DatabaseError, *into.errors, *source.errors)
    try:
        with into._writing():
            return _copy_runs(into, source)
    except caught as exc:
        raise StoreError(f"merge: {name}: {pgstore._first_line(exc)}") from None


def _select(store: Store, sql: str, args: Iterable[Any] = ()) -> tuple[list[str], list[tuple[Any, ...]]]:
    cur = store.db.execute(sql, tuple(args))
    return [d[0] for d in cur.description], [tuple(r) for r in cur.fetchall()]


def _insert_rows(into: Store, table: str, columns: list[str], rows: list[tuple[Any, ...]], ignore: bool = False) -> None:
    if not rows:
        return
    if not ignore:
        into.dialect.insert_rows(table, columns, rows)  # PostgreSQL: COPY
        return
    into.db.executemany(f"INSERT OR IGNORE INTO {table} ({', '.join(columns)}) "
                        f"VALUES ({', '.join('?' * len(columns))})", rows)


def _copy_runs(into: Store, source: Store) -> tuple[int, int]:
    names, runs = _select(source, "SELECT * FROM runs ORDER BY id")
    uuid_at = names.index("uuid")
    known: set[str] = set()
    for chunk in chunks([r[uuid_at] for r in runs]):
        known.update(u for (u,) in into.db.execute(
            f"SELECT uuid FROM runs WHERE uuid IN ({', '.join('?' * len(chunk))})", chunk))
    runs = [r for r in runs if r[uuid_at] not in known]
    if not runs:
        return 0, 0
    row_of = {n: i for i, n in enumerate(names)}
    for table, key, column in (("studies", "sha256", "study_sha256"), ("hosts", "fingerprint", "host_fingerprint")):
        wanted = sorted({r[row_of[column]] for r in runs if r[row_of[column]] is not None})
        for chunk in chunks(wanted):
            cols, rows = _select(source, f"SELECT * FROM {table} WHERE {key} IN ({', '.join('?' * len(chunk))})",
                                 chunk)
            _insert_rows(into, table, cols, rows, ignore=True)
    at = row_of["id"]
    run_map = dict(zip((r[at] for r in runs), into.dialect.new_ids("runs", len(runs))))
    _insert_rows(into, "runs", names, [(*r[:at], run_map[r[at]], *r[at + 1:]) for r in runs])
    points = sum(_copy_points(into, source, run_map, run_chunk) for run_chunk in chunks(list(run_map), 50))
    # Imported files stay imported once: their run ids follow the runs.
    for sha256, file, run_ids, count, at in _select(source, "SELECT sha256, file, run_ids, points, imported_at"
                                                            " FROM imports")[1]:
        mapped = [run_map[r] for r in json.loads(run_ids) if r in run_map]
        if mapped:
            into.db.execute("INSERT OR IGNORE INTO imports VALUES (?, ?, ?, ?, ?)",
                            (sha256, file, json.dumps(mapped), count, at))
    return len(run_map), points


def _copy_points(into: Store, source: Store, run_map: dict[int, int], run_chunk: list[int]) -> int:
    """The points of these runs (source ids) and their rows of every point table, with new
    ids; how many points."""
    cols, rows = _select(source, f"SELECT * FROM points WHERE run_id IN ({', '.join('?' * len(run_chunk))})"
                         " ORDER BY id", run_chunk)
    if not rows:
        return 0
    pid, rid = cols.index("id"), cols.index("run_id")
    point_map = dict(zip((r[pid] for r in rows), into.dialect.new_ids("points", len(rows))))
    moved = []
    for r in rows:
        row = list(r)
        row[pid], row[rid] = point_map[r[pid]], run_map[r[rid]]
        moved.append(tuple(row))
    _insert_rows(into, "points", cols, moved)
    for table in POINT_TABLES:
        for point_chunk in chunks(list(point_map), 100):
            tcols, trows = _select(source, f"SELECT * FROM {table} WHERE point_id IN "
                                   f"({', '.join('?' * len(point_chunk))})", point_chunk)
            at = tcols.index("point_id")
            _insert_rows(into, table, tcols, [(*t[:at], point_map[t[at]], *t[at + 1:]) for t in trows])
    return len(moved)


def _columns(db: sqlite3.Connection, table: str) -> list[str]:
    return [row[1] for row in db.execute(f"PRAGMA main.table_info({table})")]


def _merge_attached(db: sqlite3.Connection) -> tuple[int, int]:
    run_offset = db.execute("SELECT COALESCE(MAX(id), 0) FROM main.runs").fetchone()[0]
    point_offset = db.execute("SELECT COALESCE(MAX(id), 0) FROM main.points").fetchone()[0]
    db.execute("CREATE TEMP TABLE run_map AS SELECT id AS old, id + ? AS new FROM src.runs s "
               "WHERE NOT EXISTS (SELECT 1 FROM main.runs r WHERE r.uuid = s.uuid)", (run_offset,))
    db.execute("CREATE TEMP TABLE point_map AS SELECT p.id AS old, p.id + ? AS new, m.new AS run FROM src.points p "
               "JOIN temp.run_map m ON m.old = p.run_id", (point_offset,))
    try:
        merged = "SELECT {} FROM src.runs r JOIN temp.run_map m ON m.old = r.id"
        db.execute("INSERT OR IGNORE INTO main.studies SELECT * FROM src.studies WHERE sha256 IN "
                   f"({merged.format('r.study_sha256')})")
        db.execute("INSERT OR IGNORE INTO main.hosts SELECT * FROM src.hosts WHERE fingerprint IN "
                   f"({merged.format('r.host_fingerprint')})")
        runs = [c for c in _columns(db, "runs") if c != "id"]
        db.execute(f"INSERT INTO main.runs (id, {', '.join(runs)}) SELECT m.new, {', '.join('r.' + c for c in runs)} "
                   "FROM src.runs r JOIN temp.run_map m ON m.old = r.id")
        points = [c for c in _columns(db, "points") if c not in ("id", "run_id")]
        db.execute(f"INSERT INTO main.points (id, run_id, {', '.join(points)}) SELECT m.new, m.run, "
                   f"{', '.join('p.' + c for c in points)} FROM src.points p JOIN temp.point_map m ON m.old = p.id")
        for table in POINT_TABLES:
            rest = [c for c in _columns(db, table) if c != "point_id"]
            db.execute(f"INSERT INTO main.{table} (point_id, {', '.join(rest)}) SELECT m.new, "
                       f"{', '.join('t.' + c for c in rest)} FROM src.{table} t JOIN temp.point_map m ON m.old = t.point_id")
        # Imported files stay imported once: their run ids follow the runs.
        new_run = dict(db.execute("SELECT old, new FROM temp.run_map").fetchall())
        for sha256, file, run_ids, count, at in db.execute("SELECT * FROM src.imports").fetchall():
            mapped = [new_run[r] for r in json.loads(run_ids) if r in new_run]
            if mapped:
                db.execute("INSERT OR IGNORE INTO main.imports VALUES (?, ?, ?, ?, ?)",
                           (sha256, file, json.dumps(mapped), count, at))
        added = (db.execute("SELECT COUNT(*) FROM temp.run_map").fetchone()[0],
                 db.execute("SELECT COUNT(*) FROM temp.point_map").fetchone()[0])
    finally:
        db.execute("DROP TABLE temp.run_map")
        db.execute("DROP TABLE temp.point_map")
    return added
