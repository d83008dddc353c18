"""Merging stores: another store's runs (points, series, raw outputs, profiles, studies, hosts)
brought into this one, each run once (by its UUID).

What is copied passes the store's edge first (edge.py), as every read does: another
store may have been edited by hand or written by another tool, and a merge must not
carry a value that does not fit its column into a clean store. A row that does not fit
is said once, one line naming the other store, the table, the row (its id there) and
the column, and not merged; a run's points go with their run, a point's rows with their
point; a host or study that does not fit leaves its runs merged without it.

Rows are read and written through the library, whatever the stores are; SQLite into
SQLite copies the per-second series (millions of rows) in SQL through ATTACH, Python
looking only at the rows SQL cannot vouch for (edge.sure_fit_sql)."""

from __future__ import annotations

import contextlib
import json
import sqlite3
import tempfile
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Sequence

from dbarena.errors import StoreError
from dbarena.limits import name_problem
from dbarena.store import edge, migrations
from dbarena.store import postgres as pgstore
from dbarena.stats import analysis
from dbarena.store.database import POINT_TABLES, Store
from dbarena.store.dialect import sqlite_copy
from dbarena.store.edge import Edge
from dbarena.store.encoding import chunks

Row = tuple[Any, ...]

# What a merge does with a row that does not fit, by table (the end of its line).
NOT_MERGED = {
    "runs": "that run and its points are not merged",
    "points": "that point is not merged",
    "samples": "that second is not merged",
    "system_samples": "that second is not merged",
    "raw_outputs": "that point's raw output is not merged",
    "point_derived": "those cached figures are not merged (a read computes them again)",
    "latency_histograms": "that histogram is not merged",
    "server_series": "that point's server figures are not merged",
    "profiles": "that point's profile is not merged",
    "hosts": "that host is not merged; its runs are, without their host facts",
    "studies": "that study is not merged; its runs are, without it",
    "imports": "that file's record of being imported is not merged",
    "forgotten_runs": "that run's forgetting is not merged (a merge may bring it back here)",
}
# Tables copied in SQL when both stores are SQLite (the others hold a row a point).
_SERIES = ("samples", "system_samples")


# What makes the directory an SQLite store is copied into: given `dbarena-merge-`, a
# new directory for the length of a with block. The commands pass state.temporary (the
# lifecycle layer, above this one), which records it so that a merge killed with
# SIGKILL does not leave the copy in TMPDIR for good.
Scratch = Callable[[str], contextlib.AbstractContextManager[Path]]


@contextlib.contextmanager
def _tempdir(prefix: str) -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        yield Path(tmp)


def merge(into: Store, other: str | Path, say: Callable[[str], None] | None = None,
          tell: Callable[[str], None] | None = None, store: bool = True,
          scratch: Scratch = _tempdir) -> tuple[int, int]:
    """Bring another store's runs (points, series, raw outputs, studies, hosts) into
    `into`; (runs, points) added. Runs already there (by UUID) are skipped, so merging a
    store twice adds nothing; so are runs forgotten in `into` (`store forget`), and the
    other store's forgotten runs are forgotten in `into` too (removed, with a tombstone)
    where `into` holds them because an earlier merge brought them from that very store
    (run_origins, by the other store's identity), each said in one line (`tell`,
    default stderr): a store's tombstone never removes a run it did not give. Either store may be SQLite or
    PostgreSQL. An SQLite file is read from a migrated copy (the file itself is left as
    it is); a newer schema is refused. All or nothing: one transaction. Rows that do not
    fit their columns are said (`say`, default stderr), one line each, and left out.
    `store`: whether `other` is a store its runs came from (False: a bundle's throwaway
    store, `import`: its runs are recorded as from no store, and its tombstones, which
    a bundle has none of, are not applied)."""
    if pgstore.is_url(other):
        if str(other) == into.location:
            raise StoreError(f"merge: {other} is the store being merged into")
        with Store(str(other), readonly=True) as source:  # a merge reads the other store, never writes it
            return _merge_from(into, source, str(other), say, tell, store=store)
    other = Path(other)
    if not other.is_file():
        raise StoreError(f"merge: no store {other}")
    if into.path is not None and other.resolve() == into.path.resolve():
        raise StoreError(f"merge: {other} is the store being merged into")
    with scratch("dbarena-merge-") as tmp:
        copy = tmp / "other.db"
        try:
            sqlite_copy(other, copy)  # (consistent even of a store being written)
            # Migrated to this dbarena's schema, or refused: a newer one, another
            # program's file, an empty one (create=False: not taken for a new store).
            Store(copy, create=False).close()
            source = Store(copy, readonly=True)
        except StoreError as exc:
            raise StoreError(str(exc).replace(str(copy), str(other))) from None
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"merge: {other}: {exc}") from None
        except OSError as exc:
            raise StoreError(f"merge: {other}: cannot copy it to {tmp}: {exc.strerror or exc}") from None
        with source:
            if not isinstance(into.db, sqlite3.Connection):
                return _merge_from(into, source, str(other), say, tell, store=store)
            db = into.db
            try:
                db.execute("ATTACH DATABASE ? AS src", (str(copy),))
            except sqlite3.DatabaseError as exc:
                raise StoreError(f"merge: {other}: {exc}") from None
            try:
                return _merge_from(into, source, str(other), say, tell, attached=True, store=store)
            finally:
                db.execute("DETACH DATABASE src")


def _merge_from(into: Store, source: Store, name: str, say: Callable[[str], None] | None,
                tell: Callable[[str], None] | None = None, attached: bool = False, store: bool = True
                ) -> tuple[int, int]:
    """Every run of `source` not yet in `into` (nor forgotten there), with what belongs
    to it, and `source`'s tombstones, in one transaction. New ids come from the target's
    own sequence (or after its largest id), so that writers of a shared store never
    collide with a merge."""
    caught: tuple[type[Exception], ...] = (sqlite3.DatabaseError, *into.errors, *source.errors)
    edge_ = Edge(name, say)
    try:
        with into._writing():
            added = _Copy(into, source, edge_, attached, tell or edge_.say, store).runs()
    except caught as exc:  # a damaged file: nothing was added
        raise StoreError(f"merge: {name}: {pgstore._first_line(exc)}") from None
    if added[1]:
        # The merged runs' configurations summarised by session, as stored points are,
        # where their derived figures came with them (the others are summarised by the
        # first read, which computes those figures): the store's other runs, summarised
        # already, are only counted.
        analysis.summarise_cached(into, tuple(dict.fromkeys(run.label for run in into.runs())))
    return added


def _select(store: Store, sql: str, args: Iterable[Any] = ()) -> tuple[list[str], list[Row]]:
    cur = store.db.execute(sql, tuple(args))
    return [d[0] for d in cur.description], [tuple(r) for r in cur.fetchall()]


def _marks(values: Sequence[Any]) -> str:
    return ", ".join("?" * len(values))


def _first(row: Row) -> str:
    return str(row[0])


def _second_row(row: Row) -> str:
    return f"of point {row[0]} at second {edge.describe(row[1])}"  # (as a read names it)


# A row's name in its line, by table (the row as read, key first); a row a point by default.
_ROW_NAMES: dict[str, Callable[[Row], str]] = {
    "samples": _second_row, "system_samples": _second_row,
    "hosts": lambda row: str(row[0])[:12], "studies": lambda row: repr(row[0])[:16],
    "imports": lambda row: repr(row[0])[:16],
}


def _deeper(table: str, names: Sequence[str]) -> Callable[[Sequence[Any]], tuple[str, Any, str] | None]:
    """What readers check beyond a row's columns (the JSON records they compute with, a raw
    output that must read back): row (its JSON decoded) -> (column, value, why) or None."""
    at = {n: i for i, n in enumerate(names)}

    def check(row: Sequence[Any]) -> tuple[str, Any, str] | None:
        faults: list[tuple[str, Any, str | None]] = []
        if table == "latency_histograms":
            faults.append(("record", row[at["record"]], edge.histogram_fault(row[at["record"]])))
        elif table == "server_series":
            figures = row[at["figures"]]
            faults.append(("figures", figures, edge.figures_fault(figures) if figures is not None else None))
            faults.append(("record", row[at["record"]], edge.series_fault(row[at["record"]])))
        elif table == "profiles":
            faults.append(("top", row[at["top"]], edge.top_fault(row[at["top"]])))
            text = edge.unpacked(row[at["codec"]], row[at["folded"]])
            faults.append(("folded", row[at["folded"]],
                           text.reason if isinstance(text, edge.Misfit) else edge.folded_fault(text)))
        elif table == "runs":  # (a label is shown in every table: the rule of names, limits.py)
            label = row[at["label"]]
            faults.append(("label", label, name_problem(label) if isinstance(label, str) else None))
        elif table == "point_derived":
            faults.append(("fields", row[at["fields"]], edge.derived_fault(row[at["fields"]])))
        elif table == "raw_outputs":
            for column in ("stdout", "stderr"):
                text = edge.unpacked(row[at["codec"]], row[at[column]])
                faults.append((column, row[at[column]], text.reason if isinstance(text, edge.Misfit) else None))
        return next(((column, value, why) for column, value, why in faults if why is not None), None)
    return check


class _Copy:
    """One merge: what of `source` fits (`edge`, which says the rest), copied into `into`."""

    def __init__(self, into: Store, source: Store, edge: Edge, attached: bool, tell: Callable[[str], None],
                 store: bool = True):
        self.into, self.source, self.edge = into, source, edge
        self.attached = attached  # `source` is also ATTACHed to `into` as src (both SQLite)
        self.tell = tell  # the lines about forgotten runs
        self.origin: str | None = None  # the other store's identity (runs())
        self.store = store  # False: a bundle's throwaway store (no origin, no tombstones)

    def fitting(self, table: str, names: Sequence[str], rows: list[Row]) -> list[Row]:
        """The rows of `table` (as read) that fit, every column checked (and what
        readers check beyond: _deeper); each that does not is said and left out."""
        name = _ROW_NAMES.get(table, _first)
        # Each row carries its place, so that the rows given back are the ones read,
        # not their decoded JSON (the first name is no column: it is not checked).
        fit = self.edge.check(table, ["", *names], [(i, *row) for i, row in enumerate(rows)],
                              lambda row: name(row[1:]), NOT_MERGED[table])
        deeper = _deeper(table, names)
        kept = []
        for row in fit:
            if (misfit := deeper(row[1:])) is not None:
                column, value, why = misfit
                self.edge.report(table, name(rows[row[0]]), column, value, why, NOT_MERGED[table])
            else:
                kept.append(rows[row[0]])
        return kept

    def insert(self, table: str, columns: list[str], rows: list[Row], ignore: bool = False) -> None:
        if not rows:
            return
        if not ignore:
            self.into.dialect.insert_rows(table, columns, rows)  # PostgreSQL: COPY
            return
        self.into.db.executemany(f"INSERT OR IGNORE INTO {table} ({', '.join(columns)}) "
                                 f"VALUES ({_marks(columns)})", rows)

    def runs(self) -> tuple[int, int]:
        """(runs, points) merged."""
        # The other store's identity: what the runs merged from it are recorded as
        # coming from, and what its tombstones must match to remove a run here. A store
        # whose identity does not read (a hand edit) gives none: its tombstones remove
        # nothing, its runs are merged without an origin.
        self.origin = self.source.identity() if self.store else None
        if self.store:
            self.tombstones()
        names, runs = _select(self.source, "SELECT * FROM runs ORDER BY id")
        runs = self.fitting("runs", names, self.new_runs(names, runs))
        if not runs:
            return 0, 0
        runs = self.with_parents(names, runs)
        at = names.index("id")
        run_map = dict(zip((r[at] for r in runs), self.into.dialect.new_ids("runs", len(runs))))
        self.insert("runs", names, [(*r[:at], run_map[r[at]], *r[at + 1:]) for r in runs])
        if self.origin is not None and self.origin != self.into.identity():
            uuid_at = names.index("uuid")
            self.insert("run_origins", ["uuid", "merged_from"], [(r[uuid_at], self.origin) for r in runs],
                        ignore=True)
        points = self.points(run_map)
        self.imports(run_map)
        return len(run_map), points

    def new_runs(self, names: Sequence[str], runs: list[Row]) -> list[Row]:
        """The other store's runs (as read) this one neither holds (by UUID) nor has
        forgotten (each forgotten one said), with a UUID (each without one said)."""
        uuid_at = names.index("uuid")
        known: set[Any] = set()
        for chunk in chunks([r[uuid_at] for r in runs if r[uuid_at] is not None]):
            known.update(u for (u,) in self.into.db.execute(f"SELECT uuid FROM runs WHERE uuid IN ({_marks(chunk)})",
                                                            chunk))
        runs = [r for r in runs if r[uuid_at] not in known]
        # Forgotten here (or in the other store, whose tombstones are here now): not merged.
        gone = self.into.forgotten(r[uuid_at] for r in runs if isinstance(r[uuid_at], str))
        label_at = names.index("label")
        for run in runs:
            if run[uuid_at] in gone:
                label = f" (label {run[label_at]})" if isinstance(run[label_at], str) else ""
                self.tell(f"{self.edge.location}: run {run[0]}{label} was forgotten in {self.into.location} on "
                          f"{gone[run[uuid_at]]}: not merged")
        runs = [r for r in runs if r[uuid_at] not in gone]
        for run in runs:  # (a NULL fits the column, but a run is merged once by its UUID)
            if run[uuid_at] is None:
                self.edge.report("runs", str(run[0]), "uuid", None, "where a value must be (a run is merged once, "
                                 "by its UUID)", NOT_MERGED["runs"])
        return [r for r in runs if r[uuid_at] is not None]

    def with_parents(self, names: Sequence[str], runs: list[Row]) -> list[Row]:
        """The runs (as read), their studies and hosts copied (parents), each run whose
        study or host could not come pointing at none instead."""
        row_of = {n: i for i, n in enumerate(names)}
        runs = list(runs)
        for table, key, column in (("studies", "sha256", "study_sha256"),
                                   ("hosts", "fingerprint", "host_fingerprint")):
            there = self.parents(table, key, {r[row_of[column]] for r in runs} - {None})
            at = row_of[column]
            for i, run in enumerate(runs):
                if run[at] is not None and run[at] not in there:
                    # Without its study: none. Without its host facts: the host of no
                    # facts, as an old run that kept none migrated to (a run with none
                    # at all would be taken for one not yet migrated, and given another
                    # identity on the next open).
                    instead = None if table == "studies" else migrations.store_host(self.into.db, {})
                    runs[i] = (*run[:at], instead, *run[at + 1:])
        return runs

    def tombstones(self) -> None:
        """The other store's tombstones (runs forgotten there) applied here to the runs
        an earlier merge brought from that store (run_origins): each such run is
        forgotten here too, with the tombstone, said in one line; one running here is
        not (it is being measured into this store). A tombstone for a run this store
        holds from elsewhere (measured here, imported, merged from another store) is
        said and not applied, one for a run it does not hold is left there: run UUIDs
        are public (bundles carry them), so a store may not remove, nor keep out, a run
        it never gave."""
        cols, rows = _select(self.source, "SELECT * FROM forgotten_runs ORDER BY forgotten_at, uuid")
        rows = self.fitting("forgotten_runs", cols, rows)
        at = cols.index("uuid")
        here = self.into.forgotten(r[at] for r in rows)
        rows = [r for r in rows if r[at] not in here]
        if not rows:
            return
        when = {r[at]: r[cols.index("forgotten_at")] for r in rows}
        held: dict[str, tuple[int, Any]] = {}
        for chunk in chunks(sorted(when)):
            held.update((u, (i, status)) for i, u, status in self.into.db.execute(
                f"SELECT id, uuid, status FROM runs WHERE uuid IN ({_marks(chunk)})", chunk))
        came_from = self.into.origins(held)
        given = {u for u in held if self.origin is not None and came_from.get(u) == self.origin}
        for u in sorted(set(held) - given, key=lambda u: held[u][0]):
            self.tell(f"{self.edge.location}: run {held[u][0]} was forgotten there on {when[u]}, but did not come to "
                      f"{self.into.location} from there: kept here")
        running = {u for u in given if held[u][1] == "running"}
        for u in sorted(running, key=lambda u: held[u][0]):
            self.tell(f"{self.edge.location}: run {held[u][0]} was forgotten there on {when[u]}, but is running in "
                      f"{self.into.location}: kept here (forget it once it has ended)")
        applied = given - running
        self.insert("forgotten_runs", cols, [r for r in rows if r[at] in applied], ignore=True)
        doomed = self.into._forgettable(sorted(held[u][0] for u in applied), "")
        self.into._remove_runs({r.run_id: r.points for r in doomed if r.run_id is not None})
        for r in doomed:
            self.tell(f"{self.edge.location}: {r.named()} was forgotten there on {when[r.uuid]}: forgotten in "
                      f"{self.into.location} too ({r.points} point(s) removed)")

    def parents(self, table: str, key: str, wanted: set[str]) -> set[str]:
        """The studies or hosts (by key) the merged runs name, copied where they fit and
        are not there yet: the keys the runs may keep (the others are said, and their
        runs merged without them)."""
        there: set[str] = set()
        for chunk in chunks(sorted(wanted)):
            there.update(k for (k,) in self.into.db.execute(f"SELECT {key} FROM {table} WHERE {key} IN "
                                                            f"({_marks(chunk)})", chunk))
        missing = sorted(wanted - there)
        for chunk in chunks(missing):
            cols, rows = _select(self.source, f"SELECT * FROM {table} WHERE {key} IN ({_marks(chunk)})", chunk)
            fit = self.fitting(table, cols, rows)
            self.insert(table, cols, fit, ignore=True)
            there.update(row[cols.index(key)] for row in fit)
            found = {row[cols.index(key)] for row in rows}
            for gone in sorted(set(chunk) - found):  # named by a run, absent (a hand edit without foreign keys)
                self.edge.report(table, _ROW_NAMES[table]((gone,)), key, gone, "is named by runs but not in that "
                                 "store", NOT_MERGED[table])
        return there

    def points(self, run_map: dict[int, int]) -> int:
        """The points of the merged runs (source ids -> new) that fit, and their rows of
        every point table; how many points."""
        point_map: dict[int, int] = {}
        for run_chunk in chunks(list(run_map), 50):
            cols, rows = _select(self.source, f"SELECT * FROM points WHERE run_id IN ({_marks(run_chunk)}) "
                                 "ORDER BY id", run_chunk)
            rows = self.fitting("points", cols, rows)
            if not rows:
                continue
            pid, rid = cols.index("id"), cols.index("run_id")
            new = dict(zip((r[pid] for r in rows), self.into.dialect.new_ids("points", len(rows))))
            moved = []
            for r in rows:
                row = list(r)
                row[pid], row[rid] = new[r[pid]], run_map[r[rid]]
                moved.append(tuple(row))
            self.insert("points", cols, moved)
            point_map.update(new)
        if self.attached:
            self.into.db.execute("CREATE TEMP TABLE merge_points (old INTEGER PRIMARY KEY, new INTEGER NOT NULL)")
        try:
            if self.attached:
                self.into.db.executemany("INSERT INTO temp.merge_points VALUES (?, ?)", list(point_map.items()))
            for table in POINT_TABLES:
                if self.attached and table in _SERIES:
                    self.series_in_sql(table, point_map)
                    continue
                for point_chunk in chunks(list(point_map), 100):
                    cols, rows = _select(self.source, f"SELECT * FROM {table} WHERE point_id IN "
                                         f"({_marks(point_chunk)})", point_chunk)
                    at = cols.index("point_id")
                    self.insert(table, cols, [(*t[:at], point_map[t[at]], *t[at + 1:])
                                              for t in self.fitting(table, cols, rows)])
        finally:
            if self.attached:
                self.into.db.execute("DROP TABLE temp.merge_points")
        return len(point_map)

    def series_in_sql(self, table: str, point_map: dict[int, int]) -> None:
        """A per-second table of the merged points, SQLite into SQLite, in SQL but for the
        rows SQL cannot vouch for (edge.sure_fit_sql): those go through the edge."""
        db = self.into.db
        cols = [row[1] for row in db.execute(f"PRAGMA main.table_info({table})")]
        rest = [c for c in cols if c != "point_id"]
        merged = f"FROM src.{table} t JOIN temp.merge_points m ON m.old = t.point_id"
        doubtful = [tuple(r) for r in db.execute(
            f"SELECT {', '.join('t.' + c for c in cols)} {merged} WHERE NOT ({edge.sure_fit_sql(table, 't')})")]
        skip = ""
        if doubtful:  # (one evaluation of the condition a row: it costs what the copy does)
            db.execute("CREATE TEMP TABLE merge_doubtful (point_id, second, PRIMARY KEY (point_id, second))")
            db.executemany("INSERT OR IGNORE INTO temp.merge_doubtful VALUES (?, ?)", [r[:2] for r in doubtful])
            skip = (" WHERE NOT EXISTS (SELECT 1 FROM temp.merge_doubtful d WHERE d.point_id = t.point_id "
                    "AND d.second = t.second)")
        try:
            db.execute(f"INSERT INTO main.{table} (point_id, {', '.join(rest)}) SELECT m.new, "
                       f"{', '.join('t.' + c for c in rest)} {merged}{skip}")
        finally:
            if doubtful:
                db.execute("DROP TABLE temp.merge_doubtful")
        self.insert(table, cols, [(point_map[r[0]], *r[1:]) for r in self.fitting(table, cols, doubtful)])

    def imports(self, run_map: dict[int, int]) -> None:
        """Imported files stay imported once: their run ids follow the runs."""
        cols, rows = _select(self.source, "SELECT sha256, file, run_ids, points, imported_at FROM imports")
        for sha256, file, run_ids, count, at in self.fitting("imports", cols, rows):
            mapped = [run_map[r] for r in json.loads(run_ids) if type(r) is int and r in run_map]
            if mapped:
                self.into.db.execute("INSERT OR IGNORE INTO imports VALUES (?, ?, ?, ?, ?)",
                                     (sha256, file, json.dumps(mapped), count, at))
