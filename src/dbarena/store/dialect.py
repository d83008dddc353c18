"""What differs between the store's two dialects, in one place: how a connection is
opened and its schema brought up to date, how a new row's id comes back, how a row is
replaced, where merged rows get their ids, how a store's size is measured. The Store's
SQL itself is written once, in SQLite's spelling (pgstore.Connection translates it)."""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path
from typing import Any, Callable, Iterator

from dbarena.errors import StoreError
from dbarena.store import postgres as pgstore
from dbarena.store.encoding import now_utc, utc
from dbarena.store.migrations import migrate_sqlite

# point_derived: a point's figures replace those of an older estimator.
_DERIVED = "INTO point_derived (point_id, estimator, fields) VALUES (?,?,?)"


def _ensure_sqrt(db: sqlite3.Connection) -> None:
    """The views use sqrt(), one of SQLite's optional math functions (on in Debian's and
    Python's builds since 3.35); where a build lacks it, dbarena supplies its own."""
    try:
        db.execute("SELECT sqrt(4)")
    except sqlite3.OperationalError:
        db.create_function("sqrt", 1, lambda x: None if x is None else float(x) ** 0.5, deterministic=True)


@contextlib.contextmanager
def _busy_timeout_restored(db: sqlite3.Connection) -> Iterator[None]:
    try:
        yield
    finally:
        db.execute("PRAGMA busy_timeout = 60000")


class SQLite:
    """An SQLite file."""

    name = "sqlite"

    def __init__(self, path: Path):
        self.path: Path | None = path
        self.location = str(path)
        self.errors: tuple[type[Exception], ...] = (sqlite3.OperationalError,)
        if not path.parent.is_dir():
            raise StoreError(f"store {path}: directory {path.parent} does not exist")
        try:
            # A reader (`dbarena results` during a run) may hold the file for a while:
            # wait for it rather than stop a benchmark.
            self.db = sqlite3.connect(path, timeout=60)
            self.db.execute("PRAGMA foreign_keys = ON")
            _ensure_sqrt(self.db)
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"store {path}: {exc}") from None

    def migrate(self, target: int, after: Callable[[], None]) -> None:
        """Bring the schema to `target`, then run `after` (the data steps)."""
        try:
            migrate_sqlite(self.db, Path(self.location), target)
            after()
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"store {self.location}: {exc}") from None

    def version(self) -> int:
        return int(self.db.execute("PRAGMA user_version").fetchone()[0])

    def insert_id(self, sql: str, args: tuple[Any, ...]) -> int:
        cur = self.db.execute(sql, args)
        assert cur.lastrowid is not None
        return cur.lastrowid

    def save_derived(self, rows: list[tuple[int, int, str]]) -> None:
        self.db.execute("PRAGMA busy_timeout = 0")  # a busy store is not worth waiting for here
        with contextlib.suppress(sqlite3.OperationalError), _busy_timeout_restored(self.db):
            with self.db:
                self.db.executemany("INSERT OR REPLACE " + _DERIVED, rows)

    def new_ids(self, table: str, count: int) -> list[int]:
        top = self.db.execute(f"SELECT COALESCE(MAX(id), 0) FROM {table}").fetchone()[0]
        return list(range(top + 1, top + 1 + count))

    def insert_rows(self, table: str, columns: list[str], rows: list[tuple[Any, ...]]) -> None:
        self.db.executemany(f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})",
                            rows)

    def size_bytes(self) -> int:
        assert self.path is not None
        return self.path.stat().st_size


class PostgreSQL:
    """A PostgreSQL database (a postgresql:// URL, its password from PGPASSWORD or
    ~/.pgpass)."""

    name = "postgresql"

    def __init__(self, url: str):
        self.path: Path | None = None
        self.location = pgstore.check_url(url)
        self.errors: tuple[type[Exception], ...] = pgstore.errors()
        self.db = pgstore.Connection(self.location)

    def migrate(self, target: int, after: Callable[[], None]) -> None:
        """Create the schema or bring it to `target`, then run `after` (the data steps);
        the connection is closed when either fails."""
        url = self.location
        try:
            pgstore.migrate(self.db, target, utc(now_utc()))
            after()
        except StoreError as exc:
            self.db.close()
            raise StoreError(f"store {url}: {exc}".replace(f"store {url}: store ", f"store {url}: ")) from None
        except self.errors as exc:
            self.db.close()
            raise StoreError(f"store {url}: {pgstore._first_line(exc)}") from None

    def version(self) -> int:
        return pgstore.version(self.db)

    def insert_id(self, sql: str, args: tuple[Any, ...]) -> int:
        return int(pgstore._scalar(self.db, sql + " RETURNING id", args))

    def save_derived(self, rows: list[tuple[int, int, str]]) -> None:
        with contextlib.suppress(*self.errors), self.db:
            self.db.executemany("INSERT " + _DERIVED + " ON CONFLICT (point_id) DO UPDATE SET"
                                " estimator = excluded.estimator, fields = excluded.fields", rows)

    def new_ids(self, table: str, count: int) -> list[int]:
        return pgstore.next_ids(self.db, table, count)

    def insert_rows(self, table: str, columns: list[str], rows: list[Any]) -> None:
        # COPY: a merged store brings hundreds of thousands of per-second rows.
        with self.db.raw.cursor() as cur, cur.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row)

    def size_bytes(self) -> int:
        return pgstore.size_bytes(self.db)


Dialect = SQLite | PostgreSQL
