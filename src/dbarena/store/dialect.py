"""What differs between the store's two dialects, in one place: how a connection is
opened and its schema brought up to date, how a new row's id comes back, how a row is
replaced, where merged rows get their ids, how a store's size is measured. The Store's
SQL itself is written once, in SQLite's spelling (pgstore.Connection translates it)."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import stat
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence
from urllib.parse import quote

from dbarena import atomic
from dbarena.errors import StoreError
from dbarena.store import postgres as pgstore
from dbarena.store.encoding import chunks, now_utc, utc
from dbarena.store.groups import GROUP_COLUMNS
from dbarena.store.summaries import SUMMARY_COLUMNS
from dbarena.store.migrations import data_steps_pending, foreign_tables, migrate_sqlite

# point_derived: a point's figures replace those of an older estimator.
_DERIVED = "INTO point_derived (point_id, estimator, fields) VALUES (?,?,?)"


def summaries_replaced(db: Any, run_ids: list[int], rows: list[tuple[Any, ...]], keys: Sequence[str] = ()) -> None:
    """Every session summary of these runs deleted (with `keys`, those of these
    configuration keys only), these inserted (uncommitted)."""
    for chunk in chunks(run_ids):
        of_keys = f" AND config_key IN ({', '.join('?' * len(keys))})" if keys else ""
        db.execute(f"DELETE FROM session_summaries WHERE run_id IN ({', '.join('?' * len(chunk))}){of_keys}",
                   (*chunk, *keys))
    if rows:
        db.executemany("INSERT INTO session_summaries (" + ", ".join(SUMMARY_COLUMNS) + ") VALUES ("
                       + ", ".join("?" * len(SUMMARY_COLUMNS)) + ")", rows)


def groups_replaced(db: Any, rows: list[tuple[Any, ...]], generation: int, locked: str) -> None:
    """These groups' summaries (groups.encoded rows) in place of any kept of the same
    label and configuration key (uncommitted), unless a session's row was written since
    the reader that made them began (group_generation moved on from `generation`): they
    would say what those sessions said before. `locked`: the statement that reads the
    count and holds it until the transaction ends (each dialect's)."""
    found = db.execute(locked).fetchone()
    if found is None or found[0] != generation:
        return
    db.executemany("DELETE FROM group_summaries WHERE label = ? AND config_key = ?", [row[:2] for row in rows])
    if rows:
        db.executemany("INSERT INTO group_summaries (" + ", ".join(GROUP_COLUMNS) + ") VALUES ("
                       + ", ".join("?" * len(GROUP_COLUMNS)) + ")", rows)


# (SQLite: the count read in a transaction begun as a writer's, which no other writer
# can commit under; PostgreSQL: the count's row locked, as its triggers lock it first.)
_GENERATION_SQLITE = "SELECT n FROM group_generation"
_GENERATION_POSTGRESQL = "SELECT n FROM group_generation FOR UPDATE"


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


# The largest older SQLite store a reader copies into memory to read it migrated.
MAX_MEMORY_COPY = 1_000_000_000


def read_only_uri(path: Path) -> str:
    """SQLite's URI that opens a file read-only (a path with '?' or '#' quoted)."""
    return f"file:{quote(str(path.resolve()))}?mode=ro"


def sqlite_copy(source: Path, copy: Path) -> None:
    """A consistent copy of an SQLite store even while it is written (SQLite's online
    backup), the store opened read-only; sqlite3.Error or OSError where it cannot be made."""
    with contextlib.closing(sqlite3.connect(read_only_uri(source), uri=True, timeout=60)) as src, \
            contextlib.closing(sqlite3.connect(copy)) as dest:
        src.backup(dest)


def refuse_foreign(path: Path) -> None:
    """An SQLite file another program owns (or none dbarena can read) refused, a
    StoreError of one line; the file opened read-only and closed, nothing written nor
    migrated: what a command checks of --store before it says anything else."""
    SQLite(path, readonly=True).db.close()


def not_ours(path: Path | str, why: str) -> StoreError:
    return StoreError(f"{path} is not a dbarena store ({why}): give another --store")


def file_identity(path: Path, follow: bool = True) -> tuple[int, int] | None:
    """(device, inode) of the file at `path`, None if there is none; `follow`: of the
    file a symbolic link there points to, else of the link itself."""
    try:
        st = os.stat(path, follow_symlinks=follow)
    except OSError:
        return None
    return st.st_dev, st.st_ino


# A run's live seconds (store/live.py's columns but run_id) as one JSON text, in
# Store.run_progress's one query: r is the run.
_LIVE_ROW = ("l.phase, l.workload, l.threads, l.clients, l.variant, l.repeat, l.duration_s, l.stored_before, "
             "l.second, l.tps")


class SQLite:
    """An SQLite file. `readonly`: opened so that nothing can write it (SQLite's
    mode=ro), for the commands that only read; an older schema or unfinished data
    steps are then brought up to date in a copy in memory, the file left as it is.
    `create`: an absent or empty file becomes a new store (writers); otherwise such a
    file is refused, as is a file that holds anything but a dbarena store."""

    name = "sqlite"
    # (Empty in an SQLite store: its runs write their live seconds to the sidecar.)
    live_json = f"(SELECT json_group_array(json_array({_LIVE_ROW})) FROM live_seconds l WHERE l.run_id = r.id)"

    def __init__(self, path: Path, *, readonly: bool = False, create: bool = True):
        self.path: Path | None = path
        self.location = str(path)
        self.readonly = readonly
        self.migrated_from: int | None = None  # a read-only store's own version, when migrated in memory
        self.errors: tuple[type[Exception], ...] = (sqlite3.OperationalError,)
        if not path.parent.is_dir():
            raise StoreError(f"store {path}: directory {path.parent} does not exist")
        # Only a regular file (or none) is a store: SQLite would open /dev/null and make
        # /dev/null-journal beside it (as root, in /dev, mode 0666), or wait on a FIFO.
        with contextlib.suppress(OSError):
            mode = os.stat(path).st_mode
            if not stat.S_ISREG(mode):
                raise StoreError(f"store {path}: it is {atomic.kind_of(mode)}, not a regular file")
        if not path.exists() and (readonly or not create):
            raise StoreError(f"no results store at {path}")
        empty = not path.exists() or (path.is_file() and path.stat().st_size == 0)
        if empty and (readonly or not create):
            raise not_ours(path, "it is empty")
        self._file: tuple[int, int] | None = None  # (device, inode) of the file a writer opened
        try:
            # A reader (`dbarena results` during a run) may hold the file for a while:
            # wait for it rather than stop a benchmark.
            self.db = sqlite3.connect(read_only_uri(path) if readonly else path, timeout=60, uri=readonly)
            if not readonly:
                self._file = file_identity(path)
            if not empty:
                self._check_ours(new_allowed=create and not readonly)
            self.db.execute("PRAGMA foreign_keys = ON")
            _ensure_sqrt(self.db)
        except sqlite3.DatabaseError as exc:
            with contextlib.suppress(NameError, AttributeError):
                self.db.close()
            if "not a database" in str(exc) or "malformed" in str(exc):
                raise not_ours(path, "not an SQLite database") from None
            raise StoreError(f"store {path}: {exc}") from None

    def replaced(self) -> str | None:
        """Why the file at the store's path is not the one this writer opened (removed,
        or replaced: `mv`, a restored copy), or None. SQLite would go on writing into the
        file it holds open, which nobody can read any more: every write is checked first."""
        if self._file is None or self.path is None:
            return None
        now = file_identity(self.path)
        if now is None:
            return f"{self.path} was removed since dbarena opened it"
        return f"{self.path} was replaced by another file since dbarena opened it" if now != self._file else None

    def _check_ours(self, new_allowed: bool) -> None:
        """Refuse a file another program owns before a single byte is written to it,
        and one holding nothing at all unless it may become a new store."""
        found = foreign_tables(self.db)
        if found is None and not new_allowed and self.version() == 0:
            found = "it is empty"  # an SQLite file without a table (a copy of an empty file)
        if found is not None:
            self.db.close()
            raise not_ours(self.location, found)

    def migrate(self, target: int, after: Callable[[], None]) -> None:
        """Bring the schema to `target`, then run `after` (the data steps). Read-only:
        in a copy in memory, when there is anything to do."""
        try:
            if self.readonly:
                version = self.version()
                # (a newer store is refused before its data is asked anything: its tables
                # may not be this dbarena's)
                if version > target or (version == target and not data_steps_pending(self.db, version)):
                    migrate_sqlite(self.db, Path(self.location), target)  # (refuses a newer store; writes nothing)
                    return
                size = Path(self.location).stat().st_size
                if size > MAX_MEMORY_COPY:
                    raise StoreError(f"store {self.location} has schema version {version} (this dbarena: {target}): "
                                     f"run `dbarena store migrate --store {self.location}` (or any command that "
                                     f"writes to it) first; reading it through a copy in memory would take "
                                     f"{size / 1e9:.1f} GB")
                self._to_memory()
                self.migrated_from = version
            migrate_sqlite(self.db, Path(self.location), target)
            after()
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"store {self.location}: {exc}") from None

    def _to_memory(self) -> None:
        """The store copied into memory (SQLite's online backup: consistent even while
        a run writes it), the file closed: what a migration writes stays in memory."""
        memory = sqlite3.connect(":memory:")
        self.db.backup(memory)
        self.db.close()
        self.db = memory
        self.db.execute("PRAGMA foreign_keys = ON")
        _ensure_sqrt(self.db)

    def version(self) -> int:
        return int(self.db.execute("PRAGMA user_version").fetchone()[0])

    def insert_id(self, sql: str, args: tuple[Any, ...]) -> int:
        cur = self.db.execute(sql, args)
        assert cur.lastrowid is not None
        return cur.lastrowid

    def save_derived(self, rows: list[tuple[int, int, str]]) -> None:
        if self.migrated_from is not None:
            return  # a copy in memory: its figures are computed again next time
        if self.readonly:
            self._cache(rows)
            return
        self.db.execute("PRAGMA busy_timeout = 0")  # a busy store is not worth waiting for here
        with contextlib.suppress(sqlite3.OperationalError), _busy_timeout_restored(self.db):
            with self.db:
                self.db.executemany("INSERT OR REPLACE " + _DERIVED, rows)

    def save_summaries(self, run_ids: list[int], rows: list[tuple[Any, ...]], keys: Sequence[str] = ()) -> None:
        """Runs' session summaries replaced (summaries.encoded rows; with `keys`, those of
        these configuration keys only), as derived figures
        are saved: a copy in memory keeps none, a reader's go through a connection of their
        own, and a busy or unwritable store is not waited for."""
        self._write_cache(lambda db: summaries_replaced(db, run_ids, rows, keys))

    def save_groups(self, rows: list[tuple[Any, ...]], generation: int) -> None:
        """Groups' summaries replaced (groups.encoded rows) as session summaries are,
        while the sessions they were made from are as they were read (groups_replaced)."""
        def write(db: Any) -> None:
            db.execute("BEGIN IMMEDIATE")
            groups_replaced(db, rows, generation, _GENERATION_SQLITE)

        self._write_cache(write)

    def _write_cache(self, write: Callable[[Any], None]) -> None:
        if self.migrated_from is not None:
            return
        if self.readonly:
            assert self.path is not None
            with contextlib.suppress(sqlite3.Error):
                writer = sqlite3.connect(self.path, timeout=0)
                try:
                    with writer:
                        write(writer)
                finally:
                    writer.close()
            return
        self.db.execute("PRAGMA busy_timeout = 0")
        with contextlib.suppress(sqlite3.OperationalError), _busy_timeout_restored(self.db):
            with self.db:
                write(self.db)

    def _cache(self, rows: list[tuple[int, int, str]]) -> None:
        """A read's derived figures kept for the next read, in a connection of their own:
        the reader's stays read-only, and only a file already checked to be a dbarena
        store at this schema gets them (a 10 k-point store's figures cost seconds to
        compute). A file it may not write, or one busy, is simply not written."""
        assert self.path is not None
        with contextlib.suppress(sqlite3.Error):
            writer = sqlite3.connect(self.path, timeout=0)
            try:
                with writer:
                    writer.executemany("INSERT OR REPLACE " + _DERIVED, rows)
            finally:
                writer.close()

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
    ~/.pgpass). `readonly`: every transaction of the session read-only (the server
    refuses a write), the schema not migrated: an older one is refused with what to
    run. `create`: a database without dbarena's schema gets it (writers)."""

    name = "postgresql"
    live_json = (f"(SELECT json_agg(json_build_array({_LIVE_ROW}) ORDER BY l.second)::text FROM live_seconds l"
                 " WHERE l.run_id = r.id)")

    def __init__(self, url: str, *, readonly: bool = False, create: bool = True):
        self.path: Path | None = None
        self.location = pgstore.check_url(url)
        self.readonly = readonly
        self.create = create and not readonly
        self.migrated_from: int | None = None
        self.errors: tuple[type[Exception], ...] = pgstore.errors()
        self.db = pgstore.Connection(self.location)
        if readonly:
            self.db.execute("SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY")

    def migrate(self, target: int, after: Callable[[], None]) -> None:
        """Create the schema or bring it to `target`, then run `after` (the data steps);
        the connection is closed when either fails. Read-only: check only."""
        url = self.location
        try:
            if self.readonly or not self.create:
                # (A writer looks under migrate's advisory lock instead: a catalogue
                # lookup made before it would be cached, and miss the tables a writer
                # starting at the same moment creates.)
                found = pgstore.foreign(self.db)
                if found is not None:
                    raise not_ours(url, found)
                current = pgstore.version(self.db)
                if current == 0:
                    raise not_ours(url, "it holds no dbarena schema")
            if self.readonly:
                if current > target:
                    raise StoreError(f"store has schema version {current}, newer than this dbarena understands "
                                     f"({target}): upgrade dbarena")
                if current < target:
                    raise StoreError(f"store {url} has schema version {current}: run `dbarena store migrate --store "
                                     f"{url}` (or any command that writes to it) first, then read it")
                return
            pgstore.migrate(self.db, target, utc(now_utc()))
            after()
        except StoreError as exc:
            self.db.close()
            message = str(exc).removeprefix("store ")
            raise StoreError(message if message.startswith(url) else f"store {url}: {message}") from None
        except self.errors as exc:
            self.db.close()
            raise StoreError(f"store {url}: {pgstore._first_line(exc)}") from None

    def version(self) -> int:
        return pgstore.version(self.db)

    def replaced(self) -> str | None:
        """(A database is not a file that can be replaced under a connection.)"""
        return None

    def insert_id(self, sql: str, args: tuple[Any, ...]) -> int:
        return int(pgstore._scalar(self.db, sql + " RETURNING id", args))

    def save_derived(self, rows: list[tuple[int, int, str]]) -> None:
        # A read's figures are kept for the next read in a connection of their own (the
        # reader's stays read-only; a role that may not write them is simply not asked twice).
        sql = ("INSERT " + _DERIVED + " ON CONFLICT (point_id) DO UPDATE SET estimator = excluded.estimator,"
               " fields = excluded.fields")
        if not self.readonly:
            with contextlib.suppress(*self.errors), self.db:
                self.db.executemany(sql, rows)
            return
        with contextlib.suppress(*self.errors):
            writer = pgstore.Connection(self.location)
            try:
                with writer:
                    writer.executemany(sql, rows)
            finally:
                writer.close()

    def save_summaries(self, run_ids: list[int], rows: list[tuple[Any, ...]], keys: Sequence[str] = ()) -> None:
        self._write_cache(lambda db: summaries_replaced(db, run_ids, rows, keys))

    def save_groups(self, rows: list[tuple[Any, ...]], generation: int) -> None:
        self._write_cache(lambda db: groups_replaced(db, rows, generation, _GENERATION_POSTGRESQL))

    def _write_cache(self, write: Callable[[Any], None]) -> None:
        if not self.readonly:
            with contextlib.suppress(*self.errors), self.db:
                write(self.db)
            return
        with contextlib.suppress(*self.errors):
            writer = pgstore.Connection(self.location)
            try:
                with writer:
                    write(writer)
            finally:
                writer.close()

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
