"""The results store: an SQLite file or a PostgreSQL database holding runs, their points
and per-second series, raw output kept verbatim (compressed).

The schema is described in schema.py; SQLite reaches it by the numbered migrations of
migrations.py, PostgreSQL by postgres.py; what differs between the two is in dialect.py.
Merging stores is merge.py; `dbarena store info`, info.py.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import operator
import sqlite3
import uuid
from itertools import repeat
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Sequence

import orjson

from dbarena import bulk
from dbarena.bulk import collector_paused
from dbarena.errors import StoreError, StoreUnwritable
from dbarena.interfaces import SqlConnection
from dbarena.model import PointResult, RunInfo, Sample, StudyRecord
from dbarena.stats import configkey
from dbarena.stats import profiles as folding
from dbarena.store import live
from dbarena.store import migrations
from dbarena.store import postgres as pgstore
from dbarena.store import edge
from dbarena.store import verbatim
from dbarena.store.verbatim import PointFiles, Verbatim
from dbarena.store.dialect import Dialect, PostgreSQL, SQLite
from dbarena.store.edge import COLUMNS, Edge
from dbarena.records import STORED_FIELDS, JSONObject, ForgottenRun, ServerRecord, StoredProfile, StoredSystemSample, LentSession, RunProgress, SessionSummary, StoredGroup, StoredPoint, StoredRun, \
    SystemSums, stored_point
from dbarena.store import groups as group_rows
from dbarena.store import summaries as summary_rows
from dbarena.store.pointfiles import FileReads
from dbarena.store.seconds import SAMPLE_COLUMNS, SYSTEM_COLUMNS, Seconds
from dbarena.store.encoding import RUN_NAMESPACE, chunks, now_utc, pack, utc
from dbarena.store.migrations import MIGRATIONS, SCHEMA_VERSION

if TYPE_CHECKING:
    from dbarena.stats.steadystate import Floats

__all__ = ["Store", "now_utc", "MIGRATIONS", "SCHEMA_VERSION", "SYSTEM_COLUMNS", "POINT_TABLES"]

_MEASUREMENT_COLUMNS = (
    "tps", "transactions", "qps", "queries", "failed_transactions", "retried_transactions", "retries",
    "errors", "reconnects", "latency_avg_ms", "latency_stddev_ms", "latency_min_ms", "latency_max_ms",
    "latency_p50_ms", "latency_p95_ms", "latency_p99_ms", "initial_connection_ms",
    "run_avg_s", "run_min_s", "run_max_s", "latency_p90_ms", "latency_p999_ms",
)
_SAMPLE_VALUES = operator.attrgetter(*SAMPLE_COLUMNS)

# The columns of `points` a read checks (edge.py): all but the id and the legacy ones.
_POINT_CHECKED = (
    "run_id", "engine", "workload", "threads", "clients", "duration_s", "repeat", "scale", "params", "status", "error",
    "started_at", "ended_at", "source", "phase", "details", "variant", "options", "warmup_s", "config", "config_key",
    *_MEASUREMENT_COLUMNS)

# Tables whose rows belong to a point (deleted with it, copied with it by merge).
POINT_TABLES = ("samples", "system_samples", "raw_outputs", "point_derived", "latency_histograms", "server_series",
                "profiles")


class Store:
    """The results store: an SQLite file (a path) or a PostgreSQL database (a
    postgresql:// URL, its password from PGPASSWORD or ~/.pgpass). Both hold the same
    tables; the SQL below is written once, in SQLite's spelling, and pgstore.Connection
    translates it."""

    def __init__(self, location: str | Path, *, readonly: bool = False, create: bool = True, durable: bool = True):
        """Open (and migrate) the store at `location`. A file or database that holds
        something else than a dbarena store is refused (StoreError), untouched.

        readonly: for commands that only read (`results`, `compare`, `report`, `store
        info`): nothing is written, not even a cache of derived figures; an older
        SQLite store is migrated in a copy in memory (`migrated_from` then says its
        own version), an older PostgreSQL one refused with the command to run.
        create: whether an absent or empty file (or a database without dbarena's
        tables) becomes a new store; a reader never creates one.
        durable: False for a throwaway SQLite store (a bundle's, verify.py) nothing of
        which needs to survive a crash: no fsync per commit."""
        self.postgresql = pgstore.is_url(location)
        self.dialect: Dialect = (PostgreSQL(str(location), readonly=readonly, create=create) if self.postgresql
                                 else SQLite(Path(location), readonly=readonly, create=create))
        self.readonly = readonly
        self.path = self.dialect.path
        self.location = self.dialect.location
        self.errors = self.dialect.errors
        # Every value read is checked against its column (edge.py); misfits are said here.
        self.edge = Edge(str(self.location))
        self.dialect.migrate(SCHEMA_VERSION, self._after_migrations)
        self.db: SqlConnection = self.dialect.db  # (after migrate: a read-only store may be a copy in memory now)
        # Whether it has schema 19's live_seconds (every store a writer opens does, once
        # migrated; one held at an older schema, as the migration tests hold one, not).
        self.live_table = self.version >= 19
        self.profile_table = self.version >= 22  # (schema 22's profiles: likewise)
        self.seconds = Seconds(self.db, self.edge, self.dialect.name == "sqlite")
        self.files = FileReads(self.db, self.edge, str(self.location), self.profile_table)
        if not durable and self.dialect.name == "sqlite":
            self.db.execute("PRAGMA synchronous = OFF")

    @property
    def migrated_from(self) -> int | None:
        """A read-only store's own schema version when it was migrated in memory."""
        return self.dialect.migrated_from

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def version(self) -> int:
        return self.dialect.version()

    def _after_migrations(self) -> None:
        migrations.after_migrations(self.dialect.db, self.version)

    def _host(self, facts: dict[str, Any]) -> str:
        """The fingerprint of these host facts, stored once (uncommitted)."""
        return migrations.store_host(self.db, facts)

    def _backfill_config(self) -> None:
        """Configuration keys for points that have none yet (migrations.backfill_config)."""
        migrations.backfill_config(self.db)

    # ------------------------------------------------------------------ writing

    @contextlib.contextmanager
    def _writing(self) -> Iterator[None]:
        """One committed transaction; a store that cannot be written (disk full,
        read-only, locked by another writer, the file replaced, the server gone) is a
        StoreUnwritable of one line."""
        problem = self.dialect.replaced()
        if problem is not None:
            raise StoreUnwritable(f"store {self.location} cannot be written: {problem}")
        try:
            with self.db:
                yield
        except sqlite3.IntegrityError as exc:
            # Rows that break a constraint (a series with one second twice, from an
            # import): a bug upstream, but one line here, and nothing of it stored.
            raise StoreError(f"store {self.location}: nothing stored, the rows break a constraint: "
                             f"{pgstore._first_line(exc)}") from None
        except self.errors as exc:
            raise StoreUnwritable(f"store {self.location} cannot be written: {pgstore._first_line(exc)}") from None

    def _insert_id(self, sql: str, args: tuple[Any, ...]) -> int:
        """Insert one row; its new id (uncommitted)."""
        return self.dialect.insert_id(sql, args)

    def begin_run(self, run: RunInfo, status: str = "running") -> int:
        with self._writing():
            return self._insert_run(run, status)

    def _insert_run(self, run: RunInfo, status: str, identity: str | None = None) -> int:
        """Uncommitted: the callers own the transaction."""
        from dbarena import __version__

        if run.study is not None:
            self.db.execute("INSERT OR IGNORE INTO studies (sha256, name, source, text) VALUES (?, ?, ?, ?)",
                            (run.study.sha256, run.study.name, run.study.source, run.study.text))
        return self._insert_id(
            "INSERT INTO runs (label, host, engine, target, server_version, tool_versions, options,"
            " host_facts, target_facts, dbarena_version, started_at, status, price_per_hour, currency, variant,"
            " flavour, study_sha256, invocation, uuid, host_fingerprint)"
            " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                run.label, run.host, run.engine, run.target, run.server_version,
                json.dumps(run.tool_versions, sort_keys=True), json.dumps(run.options, sort_keys=True),
                "{}", json.dumps(run.target_facts, sort_keys=True),
                __version__, utc(run.started_at), status, run.price_per_hour, run.currency, run.variant,
                run.flavour, run.study.sha256 if run.study is not None else None, run.invocation,
                identity or str(uuid.uuid4()), self._host(run.host_facts),
            ),
        )

    def update_target_facts(self, run_id: int, facts: dict[str, Any]) -> None:
        """Merge facts learned during the run (dataset size after preparation)."""
        current = json.loads(self.db.execute("SELECT target_facts FROM runs WHERE id = ?", (run_id,)).fetchone()[0])
        with self._writing():
            self.db.execute("UPDATE runs SET target_facts = ? WHERE id = ?",
                            (json.dumps({**current, **facts}, sort_keys=True), run_id))

    def update_options(self, run_id: int, options: dict[str, Any]) -> None:
        """Merge keys into a run's options after it ended (a fleet's probe-outlier flag)."""
        current = json.loads(self.db.execute("SELECT options FROM runs WHERE id = ?", (run_id,)).fetchone()[0])
        with self._writing():
            self.db.execute("UPDATE runs SET options = ? WHERE id = ?",
                            (json.dumps({**current, **options}, sort_keys=True), run_id))

    def reopen_run(self, run_id: int, options: dict[str, Any]) -> None:
        """A run continued by --resume: running again, with the options of this session."""
        with self._writing():
            self.db.execute("UPDATE runs SET status = 'running', status_reason = NULL, ended_at = NULL, options = ?"
                            " WHERE id = ?",
                            (json.dumps(options, sort_keys=True), run_id))

    def invocation_runs(self, invocation: str) -> list[StoredRun]:
        ids = [i for (i,) in self.db.execute("SELECT id FROM runs WHERE invocation = ? ORDER BY id", (invocation,))]
        return [r for r in map(self.run, ids) if r is not None]

    def finish_run(self, run_id: int, status: str, reason: str | None = None) -> None:
        """The run ended (finished, interrupted, failed; or reaped by `cleanup`): what
        it was measuring is no longer live (store/live.py)."""
        with self._writing():
            self.db.execute("UPDATE runs SET status = ?, status_reason = ?, ended_at = ? WHERE id = ?",
                            (status, reason, utc(now_utc()), run_id))
            if self.live_table:
                self.db.execute("DELETE FROM live_seconds WHERE run_id = ?", (run_id,))
        if self.path is not None:
            live.clear_sidecar(self.path, [run_id])

    def add_point(self, run_id: int, result: PointResult, config: dict[str, Any] | None = None) -> int:
        """Store one finished point, its configuration key and its samples, committed at once.
        StoreError (one line) when the store cannot be written: disk full, read-only, locked."""
        with self._writing():
            point_id = self._insert_point(run_id, result, config=config)
            # Its live seconds go in the transaction that stores it (store/live.py; an
            # SQLite store's are in the sidecar, which its publisher clears next).
            if self.live_table:
                self.db.execute("DELETE FROM live_seconds WHERE run_id = ?", (run_id,))
        if config is None:
            self._backfill_config()  # a key from what the point and its run hold
        return point_id

    def _insert_point(self, run_id: int, result: PointResult, source: dict[str, Any] | None = None,
                      config: dict[str, Any] | None = None) -> int:
        """Uncommitted: the callers own the transaction."""
        m = result.measurement
        values = {c: (getattr(m, c) if m is not None else None) for c in _MEASUREMENT_COLUMNS}
        spec = result.spec
        params = dict(spec.params)
        point_id = self._insert_id(
            "INSERT INTO points (run_id, engine, workload, threads, clients, duration_s, repeat, scale, params,"
            " status, error, started_at, ended_at, command, exit_code, details, stdout, stderr, source, phase, "
            " variant, options, warmup_s, config, config_key, "
            + ", ".join(_MEASUREMENT_COLUMNS)
            + ") VALUES (" + ", ".join("?" * (25 + len(_MEASUREMENT_COLUMNS))) + ")",
            (
                run_id, spec.engine, spec.workload, spec.threads, spec.clients, spec.duration_s, spec.repeat,
                params.get("scale"), json.dumps(params, sort_keys=True),
                result.status, result.error, utc(result.started_at), utc(result.ended_at),
                json.dumps(list(result.command)), result.exit_code,
                json.dumps(m.details if m is not None else {}, sort_keys=True),
                "", "", json.dumps(source, sort_keys=True) if source else None, result.phase,
                spec.variant, json.dumps(dict(spec.options), sort_keys=True), spec.warmup_s,
                json.dumps(config, sort_keys=True) if config is not None else None,
                configkey.digest(config) if config is not None else None,
                *values.values(),
            ),
        )
        self.db.execute("INSERT INTO raw_outputs VALUES (?, 'zlib', ?, ?)",
                        (point_id, pack(result.stdout), pack(result.stderr)))
        if m is not None and m.latency_histogram is not None:
            self.db.execute("INSERT INTO latency_histograms (point_id, record) VALUES (?, ?)",
                            (point_id, json.dumps(m.latency_histogram, sort_keys=True)))
        if result.samples:
            # Only the columns the tool filled (pgbench: 4 of 18): each NULL bound costs as
            # much as a figure, and an import stores 600 000 rows (5x faster so).
            # (attrgetter: a sample's columns as one tuple, in C.)
            columns = list(zip(*map(_SAMPLE_VALUES, result.samples)))
            used = [k for k, values in enumerate(columns) if k < 2 or values.count(None) < len(values)]
            names = ", ".join(SAMPLE_COLUMNS[k] for k in used)
            self.db.executemany(
                f"INSERT INTO samples (point_id, {names}) VALUES (?, {', '.join('?' * len(used))})",
                zip(repeat(point_id), *(columns[k] for k in used)))
        if result.system:  # none in an import
            self.db.executemany(
                f"INSERT INTO system_samples (point_id, {', '.join(SYSTEM_COLUMNS)})"
                f" VALUES (?, {', '.join('?' * len(SYSTEM_COLUMNS))})",
                [(point_id, *(getattr(s, c) for c in SYSTEM_COLUMNS)) for s in result.system],
            )
        if result.server is not None:
            figures = result.server.figures
            # The series, not a verdict: the bound is derived from it on read (stats/analysis);
            # the bound and evidence columns are an older store's, left NULL.
            self.db.execute("INSERT INTO server_series (point_id, record, figures) VALUES (?, ?, ?)",
                            (point_id, result.server.encode(),
                             json.dumps(dict(figures), sort_keys=True) if figures is not None else None))
        if result.profile is not None:
            self.add_profile(point_id, result.profile.folded, result.profile.frequency_hz, result.profile.symbols)
        return point_id

    def add_profile(self, point_id: int, folded: str, frequency_hz: float, symbols: str) -> None:
        """A point's on-CPU profile (uncommitted: the callers own the transaction): its
        folded stacks compressed, and its summary made from them here, the one place it is
        made (a bundle's verify stores what it read through this too)."""
        stacks = folding.parse_folded(folded)
        self.db.execute("INSERT INTO profiles (point_id, codec, folded, frequency_hz, symbols, samples, top)"
                        " VALUES (?, 'zlib', ?, ?, ?, ?, ?)",
                        (point_id, pack(folded), frequency_hz, symbols, folding.samples(stacks),
                         json.dumps(folding.top(stacks))))

    @contextlib.contextmanager
    def verbatim(self) -> Iterator[Verbatim]:
        """Rows added as another store held them (verbatim.py: a bundle's, into the
        throwaway store that verifies it), in one transaction: all or nothing."""
        with self._writing():
            yield Verbatim(self, self.db)

    def record_import(self, sha256: str, file: str, run_ids: Sequence[int], points: int) -> None:
        """Record that a file (its content's sha256) brought these runs and points (`store
        info` lists it; a merge carries the record on with the runs)."""
        with self._writing():
            self.db.execute("INSERT INTO imports VALUES (?, ?, ?, ?, ?)",
                            (sha256, file, json.dumps(list(run_ids)), points, utc(now_utc())))

    @contextlib.contextmanager
    def importing(self, sha256: str, file: str, replace: str | None = None) -> Iterator["ImportBatch"]:
        """One imported file's runs and points, written as the file is read, in one
        transaction (all or nothing): committed when the block ends with at least one
        point written, rolled back on any exception (a line that cannot be read, the
        process killed: nothing of the file is stored) or when none was written.

        `batch.already`: a file with this content was imported before; then nothing may
        be written, unless `replace` (a digest of the new import's options): then what it
        brought is deleted first, in the same transaction, and the new runs get ids of
        their own; so is what earlier imports of the same source (`file`, as given)
        brought, whatever its content then (the file edited since), so that a source
        is in the store once. (SQLite: the store is locked for other writers until the end.)"""
        batch = ImportBatch(self, sha256, replace)
        try:
            with self._writing():
                before = self.db.execute("SELECT run_ids, points FROM imports WHERE sha256 = ?", (sha256,)).fetchone()
                if before is not None and replace is None:
                    batch.already = True
                elif replace is not None:
                    earlier = self.db.execute("SELECT sha256, run_ids, points FROM imports WHERE sha256 = ? OR file = ?",
                                              (sha256, file)).fetchall()
                    for digest, run_ids, points in earlier:
                        # Replaced is forgotten: a tombstone each, so that a merge of a store
                        # that still holds the old runs does not bring them back.
                        self._tombstones(self._forgettable(json.loads(run_ids), utc(now_utc())))
                        self._delete_runs(json.loads(run_ids))
                        self.db.execute("DELETE FROM imports WHERE sha256 = ?", (digest,))
                        batch.replaced += points
                yield batch
                if batch.already or not batch.points:
                    raise _NothingImported
                for run_id in batch.run_ids:
                    self.db.execute("UPDATE runs SET ended_at = started_at WHERE id = ?", (run_id,))
                self.db.execute("INSERT INTO imports VALUES (?, ?, ?, ?, ?)",
                                (sha256, file, json.dumps(batch.run_ids), batch.points, utc(now_utc())))
        except _NothingImported:
            batch.run_ids, batch.replaced = [], 0
            return
        self._backfill_config()  # keys from what the import knows (no host, no settings)
        self._number_repeats(batch.run_ids)

    def _number_repeats(self, run_ids: list[int]) -> None:
        """Repeats of imported points numbered per label and configuration key, in import
        order: after the points of that label and key already stored (an earlier import,
        the file before), in the order their files held them. Once their keys are made,
        which the numbering follows (a point without one keeps repeat 0)."""
        if not run_ids:
            return
        marks = ", ".join("?" * len(run_ids))
        rows = self.db.execute(
            "SELECT p.id, r.label, p.config_key, p.phase FROM points p JOIN runs r ON r.id = p.run_id"
            f" WHERE p.run_id IN ({marks}) AND p.config_key IS NOT NULL ORDER BY p.id", tuple(run_ids)).fetchall()
        counts: dict[tuple[str, str, str], int] = {}
        numbered = []
        for point_id, label, key, phase in rows:
            group = (label, key, phase)
            if group not in counts:  # the points of this label and key stored before
                counts[group] = self.db.execute(
                    "SELECT COUNT(*) FROM points p JOIN runs r ON r.id = p.run_id WHERE r.label = ? AND"
                    f" p.config_key = ? AND p.phase = ? AND p.run_id NOT IN ({marks})",
                    (label, key, phase, *run_ids)).fetchone()[0]
            numbered.append((counts[group], point_id))
            counts[group] += 1
        with self._writing():
            self.db.executemany("UPDATE points SET repeat = ? WHERE id = ?", numbered)

    def point_ids(self, run_id: int, page: int) -> Iterator[list[int]]:
        """A run's point ids, oldest first, `page` at a time (a run imported from a large
        file holds hundreds of thousands)."""
        after = 0
        while True:
            ids = [i for (i,) in self.db.execute("SELECT id FROM points WHERE run_id = ? AND id > ? ORDER BY id"
                                                 " LIMIT ?", (run_id, after, page))]
            if not ids:
                return
            yield ids
            after = ids[-1]

    def _delete_runs(self, run_ids: list[int]) -> None:
        """Runs, their points and everything keyed by those points (uncommitted)."""
        for chunk in chunks(run_ids):
            marks = ", ".join("?" * len(chunk))
            for table in POINT_TABLES:
                self.db.execute(f"DELETE FROM {table} WHERE point_id IN (SELECT id FROM points WHERE run_id IN "
                                f"({marks}))", tuple(chunk))
            self.db.execute(f"DELETE FROM points WHERE run_id IN ({marks})", tuple(chunk))
            if self.live_table:
                self.db.execute(f"DELETE FROM live_seconds WHERE run_id IN ({marks})", tuple(chunk))
            if self.version >= 21:
                self.db.execute(f"DELETE FROM run_origins WHERE uuid IN (SELECT uuid FROM runs WHERE id IN "
                                f"({marks}))", tuple(chunk))
            if self.version >= 23:
                self.db.execute(f"DELETE FROM session_summaries WHERE run_id IN ({marks})", tuple(chunk))
            self.db.execute(f"DELETE FROM runs WHERE id IN ({marks})", tuple(chunk))

    # ------------------------------------------------------------------ forgetting

    def label_run_ids(self, label: str) -> list[int]:
        """The ids of every run of `label`, oldest first (whether or not its other
        columns fit: a run edited by hand can be forgotten too)."""
        return [i for (i,) in self.db.execute("SELECT id FROM runs WHERE label = ? ORDER BY id", (label,))]

    def forget_runs(self, run_ids: Sequence[int]) -> list[ForgottenRun]:
        """Remove these runs, their points and every row hanging off them (per-second
        series, histograms, the server's series, raw outputs, cached derived figures,
        their ids in the record of imported files), in one transaction, leaving a
        tombstone for each (`forgotten_runs`, by UUID) so that a merge brings none of
        them back. An id the store does not hold is a StoreError, and nothing is removed.
        Whether a run may go (one still running) is the caller's to decide."""
        wanted = list(dict.fromkeys(run_ids))
        with self._writing():
            found = {run.run_id: run for run in self._forgettable(wanted, utc(now_utc()))}
            missing = [i for i in wanted if i not in found]
            if missing:
                total, first, last = self.db.execute("SELECT count(*), min(id), max(id) FROM runs").fetchone()
                held = f"it holds {total} run(s), ids {first} to {last}" if total else "it holds no run"
                raise StoreError(f"no run {', '.join(map(str, missing))} in {self.location} ({held})")
            gone = [found[i] for i in wanted]
            self._tombstones(gone)
            self._remove_runs({run.run_id: run.points for run in gone if run.run_id is not None})
        if self.path is not None:
            live.clear_sidecar(self.path, [run.run_id for run in gone if run.run_id is not None])
        return gone

    def _forgettable(self, run_ids: Sequence[int], at: str) -> list[ForgottenRun]:
        """These runs (those the store holds) as their tombstones would say them, with
        their points counted (warm-ups too). What is not text is left out of the
        description (a hand-edited row), never carried into a tombstone."""
        out = []
        for chunk in chunks(list(run_ids)):
            for run_id, identity, label, engine, started_at, points in self.db.execute(
                    "SELECT r.id, r.uuid, r.label, r.engine, r.started_at,"
                    " (SELECT count(*) FROM points p WHERE p.run_id = r.id) FROM runs r"
                    f" WHERE r.id IN ({', '.join('?' * len(chunk))})", tuple(chunk)):
                out.append(ForgottenRun(
                    run_id=run_id, uuid=identity if isinstance(identity, str) else None,
                    label=label if isinstance(label, str) else None,
                    engine=engine if isinstance(engine, str) else None,
                    started_at=started_at if edge.fault(COLUMNS["runs"]["started_at"], started_at) is None else None,
                    points=int(points), forgotten_at=at))
        return out

    def _tombstones(self, runs: Iterable[ForgottenRun]) -> None:
        """A tombstone for each run that has a UUID (uncommitted); one already there stays
        as it was (the first forgetting is the one kept)."""
        self.db.executemany(
            "INSERT OR IGNORE INTO forgotten_runs (uuid, forgotten_at, label, engine, started_at, points)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            [(r.uuid, r.forgotten_at, r.label, r.engine, r.started_at, r.points) for r in runs if r.uuid is not None])

    def _remove_runs(self, points_by_run: dict[int, int]) -> None:
        """Runs (id -> their points) deleted with everything keyed by them, and taken out
        of the record of imported files (uncommitted): a file whose runs are all gone is
        no longer imported, so that importing it again is not refused as done already; one
        that keeps some of its runs keeps its record, with those alone."""
        self._delete_runs(list(points_by_run))
        for sha256, text, count in self.db.execute("SELECT sha256, run_ids, points FROM imports").fetchall():
            try:
                ids = json.loads(text)
            except (TypeError, ValueError):
                continue  # a record that does not read (said where it is read): left as it is
            if not isinstance(ids, list):
                continue
            gone = [i for i in ids if type(i) is int and i in points_by_run]
            if not gone:
                continue
            kept = [i for i in ids if i not in gone]
            if not kept:
                self.db.execute("DELETE FROM imports WHERE sha256 = ?", (sha256,))
                continue
            left = count - sum(points_by_run[i] for i in gone) if type(count) is int else count
            self.db.execute("UPDATE imports SET run_ids = ?, points = ? WHERE sha256 = ?",
                            (json.dumps(kept), max(left, 0) if type(left) is int else left, sha256))

    def identity(self) -> str | None:
        """This store's own identity (schema 21: random, made with it, never exported),
        which run_origins names it by in the stores it is merged into; None in a store
        without one (a hand edit)."""
        row = self.db.execute("SELECT min(uuid) FROM store_identity").fetchone()
        return row[0] if row is not None and isinstance(row[0], str) and row[0] else None

    def origins(self, uuids: Iterable[str]) -> dict[str, str]:
        """Those of these runs that a merge brought here -> the identity of the store
        it brought each from."""
        out: dict[str, str] = {}
        for chunk in chunks(sorted(set(uuids))):
            out.update((u, str(src)) for u, src in self.db.execute(
                f"SELECT uuid, merged_from FROM run_origins WHERE uuid IN ({', '.join('?' * len(chunk))})",
                tuple(chunk)))
        return out

    def forgotten(self, uuids: Iterable[str]) -> dict[str, str]:
        """Those of these UUIDs that name a forgotten run -> when it was forgotten."""
        out: dict[str, str] = {}
        for chunk in chunks(sorted(set(uuids))):
            out.update((u, str(at)) for u, at in self.db.execute(
                f"SELECT uuid, forgotten_at FROM forgotten_runs WHERE uuid IN ({', '.join('?' * len(chunk))})",
                tuple(chunk)))
        return out

    # ------------------------------------------------------------------ reading

    def points(self, *, run_id: int | None = None, labels: tuple[str, ...] = (), warmups: bool = False,
               study: str | None = None, variants: tuple[str, ...] = (), point_ids: tuple[int, ...] = ()
               ) -> list[StoredPoint]:
        """Stored points with their run's label, host, target and study, oldest first;
        warm-up runs (--warmup) only when asked for. `study` matches a study's name
        or the start of its hash. `point_ids`: only these (at most a few hundred)."""
        values = self.point_values(run_id=run_id, labels=labels, warmups=warmups, study=study, variants=variants,
                                   point_ids=point_ids)
        with collector_paused():
            # Each row, a list in StoredPoint's field order, is made a record as it is: no
            # dict of 50 names a row (records.stored_point).
            points = list(map(stored_point, values))
        bulk.keep(len(points))
        return points

    def point_values(self, *, run_id: int | None = None, labels: tuple[str, ...] = (), warmups: bool = False,
                     study: str | None = None, variants: tuple[str, ...] = (), point_ids: tuple[int, ...] = ()
                     ) -> list[list[Any]]:
        """The points `points` reads, each as its fields' values in records.STORED_FIELDS'
        order, read and checked alike, not yet made records: for a reader that makes a
        record of its own of each (analysis.load, an AnalysedPoint), which would
        otherwise make each point twice (50 fields set one by one, 0.6 s for 100 k points)."""
        where: list[str] = [] if warmups else ["p.phase = 'measured'"]
        args: list[int | str] = []
        if point_ids:
            where.append(f"p.id IN ({', '.join('?' * len(point_ids))})")
            args.extend(point_ids)
        if run_id is not None:
            where.append("p.run_id = ?")
            args.append(run_id)
        if labels:
            where.append(f"r.label IN ({', '.join('?' * len(labels))})")
            args.extend(labels)
        if study is not None:
            where.append("(st.name = ? OR st.sha256 LIKE ?)")
            args.extend([study, f"{study}%"])
        if variants:
            where.append(f"p.variant IN ({', '.join('?' * len(variants))})")
            args.extend(variants)
        sql = (
            # (The server version is the run's as its checked record has it, set below: not read twice.)
            "SELECT p.id AS point_id, p.run_id, r.label, r.host, r.target, NULL AS server_version, p.engine, p.workload,"
            " p.threads, p.clients, p.duration_s, p.repeat, p.scale, p.params, p.status, p.error, p.started_at,"
            " p.ended_at, p.source, p.phase, p.details, p.variant, p.options, p.warmup_s, p.config, p.config_key,"
            " st.name AS study,"
            # Whether dbarena holds the point's transactions (a pgbench log, sysbench's
            # histogram): its percentiles are then computed, not printed (stats/repeats.py).
            " EXISTS (SELECT 1 FROM latency_histograms h WHERE h.point_id = p.id) AS _histogram, "
            + ", ".join(f"p.{c}" for c in _MEASUREMENT_COLUMNS)
            + " FROM points p JOIN runs r ON r.id = p.run_id LEFT JOIN studies st ON st.sha256 = r.study_sha256"
            + (" WHERE " + " AND ".join(where) if where else "")
            + " ORDER BY p.id"
        )
        with collector_paused():
            cur = self.db.execute(sql, args)
            names = ["histogram" if d[0] == "_histogram" else d[0] for d in cur.description]
            # The histogram stays in the store; results show the rest (tpm, mix, consistency ...).
            details = edge.decoder(COLUMNS["points"]["details"],
                                   lambda d: {k: v for k, v in d.items() if k != "histogram_ms"},
                                   edge.SHAPES[("points", "details")])
            fit = self.edge.check("points", names, cur.fetchall(), lambda row: str(row[0]),
                                  "that point is left out", decoders={"details": details}, columns=_POINT_CHECKED)
            # (The SELECT's columns are StoredPoint's fields, in its order.)
            if tuple(names) != STORED_FIELDS:
                raise AssertionError(f"points(): columns {names} are not StoredPoint's fields")
            at_run, at_version, at_study, at_histogram = (names.index(n) for n in (
                "run_id", "server_version", "study", "histogram"))
            # A point of a run that does not fit goes with its run (runs_by_id says so).
            runs = self.runs_by_id({row[at_run] for row in fit})
            points = []
            for row in fit:
                run = runs.get(row[at_run])
                if run is None:
                    continue
                row[at_version] = run.server_version  # (the run's columns as its checked record has them)
                if row[at_study] is not None and not isinstance(row[at_study], str):
                    self.edge.report("studies", f"of run {row[at_run]}", "name", row[at_study], "is not text",
                                     "its points are shown without a study name")
                    row[at_study] = None
                row[at_histogram] = bool(row[at_histogram])
                points.append(row)
        return points

    def runs_by_id(self, run_ids: Iterable[int]) -> dict[int, StoredRun]:
        """Many runs in one query per chunk (see run())."""
        out: dict[int, StoredRun] = {}
        for chunk in chunks(sorted(set(run_ids))):
            for record in self._run_records(
                    self.db.execute(self._RUNS + f" WHERE r.id IN ({', '.join('?' * len(chunk))})", chunk)):
                out[record.id] = record
        return out

    # ------------------------------------------------------------------ per second (seconds.py)

    def samples_of(self, point_ids: Iterable[int]) -> dict[int, list[Sample]]:
        """Many points' per-second samples; points without any are left out."""
        return self.seconds.samples_of(point_ids)

    def system_samples_of(self, point_ids: Iterable[int]) -> dict[int, list[StoredSystemSample]]:
        """Many points' system samples; points without any are left out."""
        return self.seconds.system_samples_of(point_ids)

    def tps_series(self, point_ids: Iterable[int]) -> dict[int, tuple[Sequence[float], Floats]]:
        """Each point's per-second (seconds, tps), the tps as a numpy array (Seconds.tps_series)."""
        return self.seconds.tps_series(point_ids)

    def system_sums(self, starts: dict[int, float | None], db: SqlConnection | None = None
                    ) -> dict[int, SystemSums]:
        """Counts and sums of each point's system samples' CPU figures (Seconds.system_sums);
        `db`: second_reader's connection, from another thread."""
        return self.seconds.system_sums(starts, db)

    def samples(self, point_id: int) -> list[Sample]:
        return self.samples_of([point_id]).get(point_id, [])

    def system_samples(self, point_id: int) -> list[StoredSystemSample]:
        return self.system_samples_of([point_id]).get(point_id, [])

    def second_reader(self) -> SqlConnection | None:
        """Another read-only connection to this SQLite store, for a thread of its own
        (system_sums's `db`); None for a PostgreSQL store or a copy migrated in memory."""
        if self.dialect.name != "sqlite" or self.path is None or self.dialect.migrated_from is not None:
            return None
        return sqlite3.connect(self.path.resolve().as_uri() + "?mode=ro", uri=True, check_same_thread=False)

    def derived(self, point_ids: Iterable[int], estimator: int) -> dict[int, dict[str, Any]]:
        """Cached derived figures of these points made by this estimator version."""
        wanted = set(point_ids)
        with collector_paused():
            if len(wanted) > 5000:  # most of a big store: one scan beats many IN lists
                found = {pid: fields for pid, fields in self.db.execute(
                    "SELECT point_id, fields FROM point_derived WHERE estimator = ?", (estimator,)) if pid in wanted}
            else:
                found = {}
                for chunk in chunks(sorted(wanted)):
                    found.update(self.db.execute(
                        f"SELECT point_id, fields FROM point_derived WHERE estimator = ? AND point_id IN "
                        f"({', '.join('?' * len(chunk))})", [estimator, *chunk]))
            # Cached, never trusted blindly: figures that do not read are computed again.
            out = {}
            for pid, fields in found.items():
                try:
                    out[pid] = orjson.loads(fields)
                except (orjson.JSONDecodeError, TypeError):
                    self.edge.report("point_derived", str(pid), "fields", fields, "is not valid JSON",
                                     "computed again")
            for pid, why in edge.derived_faults(out).items():
                self.edge.report("point_derived", str(pid), "fields", found[pid], why, "computed again")
                del out[pid]
            bulk.keep(len(out))
            return out

    def save_derived(self, figures: dict[int, dict[str, Any]], estimator: int) -> None:
        """Cache derived figures; a store that cannot be written now just stays uncached."""
        if not figures:
            return
        self.dialect.save_derived([(pid, estimator, orjson.dumps(f, option=orjson.OPT_SORT_KEYS).decode())
                                   for pid, f in figures.items()])

    def session_summaries(self, run_ids: Sequence[int], estimator: int, keys: Sequence[str] = ()
                          ) -> list[SessionSummary]:
        """The summaries kept of these runs' configurations (analysis.session_summaries)
        at this estimator version, with their points' figures, in the order of their
        first points; a row that does not read (or holds no figures: written before
        schema 25) is left out (its run is then short of points, and summarised again by
        the next read that needs it). `keys`: only those of these configuration keys."""
        if self.version < 25:
            return []
        out: list[SessionSummary] = []
        of_keys = f" AND s.config_key IN ({', '.join('?' * len(keys))})" if keys else ""
        for chunk in chunks(sorted(set(run_ids))):
            out.extend(summary_rows.with_figures(self.db.execute(
                "SELECT s.run_id, r.label, s.config_key, s.figures FROM session_summaries s JOIN runs r"
                f" ON r.id = s.run_id WHERE s.estimator = ? AND s.run_id IN ({', '.join('?' * len(chunk))}){of_keys}",
                [estimator, *chunk, *keys]).fetchall()))
        return sorted(out, key=lambda found: found.members[0].point_id)

    def summarised(self, run_ids: Sequence[int], estimator: int) -> tuple[list[SessionSummary], list[int]]:
        """session_summaries of the runs that hold one for each of their measured points;
        and the runs that do not (theirs missing, of another estimator version, short of
        points, or a row that does not read)."""
        wanted = sorted(set(run_ids))
        found = self.session_summaries(wanted, estimator)
        measured: dict[int, int] = {}
        for chunk in chunks(wanted):
            measured.update(self.db.execute(
                f"SELECT run_id, count(*) FROM points WHERE phase = 'measured' AND run_id IN ({', '.join('?' * len(chunk))})"
                " GROUP BY run_id", chunk).fetchall())
        held: dict[int, int] = {}
        for one in found:
            held[one.run_id] = held.get(one.run_id, 0) + len(one.members)
        stale = [run_id for run_id in wanted if held.get(run_id, 0) != measured.get(run_id, 0)]
        gone = set(stale)
        return [one for one in found if one.run_id not in gone], stale

    def save_session_summaries(self, run_ids: Sequence[int], found: Sequence[SessionSummary], estimator: int,
                               keys: Sequence[str] = ()) -> None:
        """These runs' summaries replaced by `found` (all of theirs, at this estimator
        version; with `keys`, those of these configuration keys); as the derived figures,
        a store that cannot be written now is not."""
        if self.version < 25:
            return  # (a store held at an older schema, as the migration tests hold one)
        self.dialect.save_summaries(list(run_ids), [summary_rows.encoded(one, estimator) for one in found], keys)

    def short_sessions(self, run_ids: Sequence[int], estimator: int) -> list[int]:
        """Of these runs, those whose session summaries at this estimator version do not
        hold each of their measured points (none kept, of another version, written before
        schema 25, or short of points): what summarised() finds stale, counted without
        reading the summaries' figures."""
        wanted = sorted(set(run_ids))
        if self.version < 26:
            return self.summarised(wanted, estimator)[1]
        measured: dict[int, int] = {}
        held: dict[int, int] = {}
        for chunk in chunks(wanted):
            marks = ", ".join("?" * len(chunk))
            measured.update(self.db.execute(
                f"SELECT run_id, count(*) FROM points WHERE phase = 'measured' AND run_id IN ({marks})"
                " GROUP BY run_id", chunk).fetchall())
            held.update(self.db.execute(
                "SELECT run_id, sum(points) FROM session_summaries WHERE estimator = ? AND figures IS NOT NULL"
                f" AND run_id IN ({marks}) GROUP BY run_id", [estimator, *chunk]).fetchall())
        return [run_id for run_id in wanted if held.get(run_id, 0) != measured.get(run_id, 0)]

    def group_summaries(self, labels: tuple[str, ...], estimator: int
                        ) -> tuple[list[StoredGroup], list[tuple[str, str]]]:
        """The summaries kept of these labels' configurations over their sessions (every
        label's without `labels`) at this estimator version, in the order of their first
        points; and the (label, configuration key) groups the labels' session summaries
        hold that have none kept (or one that does not read: store/groups.py)."""
        if self.version < 26:
            return [], []
        marks = ", ".join("?" * len(labels))
        of_labels = f" AND label IN ({marks})" if labels else ""
        held = self.db.execute(
            "SELECT DISTINCT r.label, s.config_key FROM session_summaries s JOIN runs r ON r.id = s.run_id"
            " WHERE s.estimator = ?" + (f" AND r.label IN ({marks})" if labels else ""), (estimator, *labels)).fetchall()
        kept: dict[tuple[str, str], StoredGroup] = {}
        for label, key, first_point, text in self.db.execute(
                f"SELECT label, config_key, first_point, summary FROM group_summaries WHERE estimator = ?{of_labels}",
                (estimator, *labels)).fetchall():
            found = group_rows.decoded(first_point, text)
            if found is not None and (found.summary.label, found.summary.config_key) == (label, key):
                kept[(label, key)] = found
        wanted = {(label, key) for label, key in held}
        return (sorted((g for k, g in kept.items() if k in wanted), key=operator.attrgetter("first_point")),
                sorted(wanted - kept.keys()))

    def group_generation(self) -> int | None:
        """How many times a session's row (or a run's label) was written: what a reader
        that makes groups reads before the sessions it makes them from (None: a store
        without group summaries)."""
        if self.version < 26:
            return None
        found = self.db.execute("SELECT n FROM group_generation").fetchone()
        return int(found[0]) if found is not None else None

    def save_group_summaries(self, found: Sequence[StoredGroup], estimator: int, generation: int | None) -> None:
        """These groups' summaries kept (those JSON gives back exactly: store/groups.py),
        as session summaries are, unless a session's row was written since `generation`
        (group_generation, read before the sessions they were made from)."""
        if self.version < 26 or generation is None:
            return
        rows = [row for one in found if (row := group_rows.encoded(one, estimator)) is not None]
        if rows:
            self.dialect.save_groups(rows, generation)

    def lent_sessions(self, labels: tuple[str, ...], estimator: int) -> tuple[list[LentSession], list[int]]:
        """What the runs of `labels` lend other labels' comparisons, from the summaries
        kept at this estimator version, in the order of their first points; and the runs
        of those labels whose summaries are missing, of another version or short of their
        measured points (analysis.lent_sessions summarises them from their points)."""
        if self.version < 23:
            return [], [run.id for run in self.runs() if run.label in labels]
        marks = ", ".join("?" * len(labels))
        measured = dict(self.db.execute(
            "SELECT p.run_id, count(*) FROM points p JOIN runs r ON r.id = p.run_id"
            f" WHERE p.phase = 'measured' AND r.label IN ({marks}) GROUP BY p.run_id", labels).fetchall())
        rows = self.db.execute(
            "SELECT r.label, s.config_key, s.run_id, s.first_point, s.runs, s.mean, s.points FROM session_summaries s"
            f" JOIN runs r ON r.id = s.run_id WHERE s.estimator = ? AND r.label IN ({marks}) ORDER BY s.first_point",
            (estimator, *labels)).fetchall()
        return summary_rows.lent(rows, measured)

    # ------------------------------------------------------------------ a point's files (pointfiles.py)

    def latency_histograms(self, point_ids: Iterable[int]) -> dict[int, JSONObject]:
        """point id -> its stored latency histogram (a JSON document: latency.Latencies.decode)."""
        return self.files.latency_histograms(point_ids)

    def server_series(self, point_ids: Iterable[int], records: bool = True) -> dict[int, ServerRecord]:
        """point id -> its server's figures, bound, and with `records` its series."""
        return self.files.server_series(point_ids, records)

    def profiles(self, point_ids: Iterable[int], folded: bool = False) -> dict[int, StoredProfile]:
        """point id -> its on-CPU profile's summary, and with `folded` its stacks."""
        return self.files.profiles(point_ids, folded)

    def point_command(self, point_id: int) -> list[str] | None:
        """The command line a point's tool ran (None: no point, or it does not read)."""
        return self.files.point_command(point_id)

    def raw_output(self, point_id: int) -> tuple[str, str]:
        """The tool's stdout and stderr of a point, verbatim (StoreError: they do not read)."""
        return self.files.raw_output(point_id)

    _RUNS = ("SELECT r.*, h.facts AS _host_facts FROM runs r"
             " LEFT JOIN hosts h ON h.fingerprint = r.host_fingerprint")

    def _run_records(self, cur: Any) -> list[StoredRun]:
        """The runs a query read that fit (edge.py), as records, JSON decoded; a run that
        does not fit is said once and left out, and so are its points (points())."""
        names = [d[0] for d in cur.description]
        host, legacy, fingerprint = (names.index(n) for n in ("_host_facts", "host_facts", "host_fingerprint"))
        facts = edge.decoder(COLUMNS["hosts"]["facts"], shape=edge.SHAPES[("hosts", "facts")])

        def host_facts(row: tuple[Any, ...]) -> Any:
            # Kept once per host since schema 11 (the run's own column holds '{}' then);
            # facts that do not read are said once per host, and its runs shown without.
            if row[host] is None:
                return row[legacy]
            if isinstance(facts(row[host]), edge.Misfit):
                self.edge.report("hosts", str(row[fingerprint])[:12], "facts", row[host],
                                 facts(row[host]).reason, "its runs are shown without their host facts")
                return "{}"
            return row[host]
        rows = [(*row[:legacy], host_facts(row), *row[legacy + 1:]) for row in cur.fetchall()]
        # Facts and options are shown, not what the run's points hang on: one that does
        # not read is left out (an empty object), the run kept.
        lenient: dict[str, tuple[Callable[[], Any], str]] = {
            name: (dict, f"that run is shown without its {name.replace('_', ' ')}")
            for name in ("tool_versions", "options", "host_facts", "target_facts")}
        # So are the facts that may be missing anyway (NULL in older stores).
        lenient.update((name, (lambda: None, f"that run is shown without its {name.replace('_', ' ')}"))
                       for name in ("server_version", "dbarena_version", "ended_at", "price_per_hour", "currency",
                                    "flavour", "invocation", "status_reason", "uuid", "study_sha256"))
        fit = self.edge.check("runs", names, rows, lambda row: str(row[0]), "that run and its points are left out",
                              lenient=lenient)
        # (By name: `r.*` is the table's order, which schema.py and records.py declare alike.)
        return [StoredRun(**{name: value for name, value in zip(names, row) if name != "_host_facts"})
                for row in fit]

    def runs(self) -> list[StoredRun]:
        return self._run_records(self.db.execute(self._RUNS + " ORDER BY r.id"))

    def run(self, run_id: int) -> StoredRun | None:
        found = self._run_records(self.db.execute(self._RUNS + " WHERE r.id = ?", (run_id,)))
        return found[0] if found else None

    def run_progress(self, run_ids: Iterable[int] = (), running: bool = False) -> dict[int, RunProgress]:
        """Each run's status and measured points (warm-ups left out), its points of
        every phase, and the seconds of the point it is measuring where this store holds
        them (PostgreSQL's live_seconds; an SQLite store's runs write theirs to the
        sidecar: store/live.py), in one query: of `run_ids` and, with `running`, of
        every run still running; of every run when neither is given. What a page that
        follows a run asks once a second (`dbarena serve`): an index scan of each run's
        points and live seconds, no point read. A row whose figures do not read (a
        status that is not text) is left out."""
        ids = sorted(set(run_ids))[:1000]  # (a page follows a few; SQLite allows 32766 parameters)
        where = [*([f"r.id IN ({', '.join('?' * len(ids))})"] if ids else []),
                 *(["r.status = 'running'"] if running else [])]
        measured = "p.phase = 'measured'"
        rows = self.db.execute(
            f"SELECT r.id, r.status, sum(CASE WHEN {measured} THEN 1 ELSE 0 END),"
            f" sum(CASE WHEN {measured} AND p.status = 'failed' THEN 1 ELSE 0 END),"
            f" max(CASE WHEN {measured} THEN p.id END), count(p.id),"
            f" CASE WHEN r.status = 'running' THEN {self.dialect.live_json if self.live_table else 'NULL'} END"
            " FROM runs r LEFT JOIN points p ON p.run_id = r.id"
            + (" WHERE " + " OR ".join(where) if where else "") + " GROUP BY r.id, r.status", ids).fetchall()
        return {int(run_id): RunProgress(run_id=int(run_id), status=status, points=int(points or 0),
                                         failed=int(failed or 0), last_point_id=None if last is None else int(last),
                                         stored=int(stored or 0), live=live.from_json(int(run_id), seconds))
                for run_id, status, points, failed, last, stored, seconds in rows
                if isinstance(run_id, int) and isinstance(status, str)}

    def data_version(self) -> tuple[Any, ...]:
        """What changes whenever what a reader shows could: the points' highest id and
        count (points are only ever added or deleted: a merge, an import) and every run's
        id, label, status, end and options (a run that ends, is relabelled or flagged),
        in two small queries (an index's count; the runs table, a row a run). A view
        cached under one version is the same view while it holds (`dbarena serve`)."""
        points = tuple(self.db.execute("SELECT max(id), count(*) FROM points").fetchone() or ())
        runs = self.db.execute("SELECT id, label, status, ended_at, options FROM runs ORDER BY id").fetchall()
        return points, hashlib.sha256(repr([tuple(r) for r in runs]).encode()).hexdigest()

    def point_files(self, point_id: int) -> PointFiles:
        """A point's command, end, raw output, series, histogram, server series and
        profile (verbatim.point_files)."""
        return verbatim.point_files(self, point_id)

    def run_ids(self) -> list[int]:
        """Every run's id, oldest first (whether or not its other columns fit)."""
        return [i for (i,) in self.db.execute("SELECT id FROM runs ORDER BY id")]

    def point_count(self) -> int:
        """How many points the store holds, warm-ups too."""
        return int(self.db.execute("SELECT count(*) FROM points").fetchone()[0])

    def study(self, sha256: str) -> StudyRecord | None:
        """The study of this sha256, or None (absent, or a row that does not fit)."""
        rows = self.db.execute("SELECT sha256, name, source, text FROM studies WHERE sha256 = ?", (sha256,)).fetchall()
        fit = self.edge.check("studies", ("sha256", "name", "source", "text"), rows, lambda row: repr(row[0])[:16],
                              "that study's name and text are left out")
        return StudyRecord(name=fit[0][1], source=fit[0][2], text=fit[0][3], sha256=sha256) if fit else None


class _NothingImported(Exception):
    """An import that wrote nothing (or may not): its transaction is rolled back."""


class ImportBatch:
    """What Store.importing writes in its transaction: runs, their points, and the
    run's facts known only once every point is read. Nothing is committed before the
    import's end."""

    def __init__(self, store: Store, sha256: str, replace: str | None):
        self.store, self.sha256, self.replace = store, sha256, replace
        self.already = False  # this content was imported before, and is not replaced: write nothing
        self.replaced = 0  # points of the earlier import deleted
        self.run_ids: list[int] = []
        self.points = 0

    def run(self, run: RunInfo) -> int:
        """A new run; its id."""
        assert not self.already
        # From the file's content: the same file imported into two stores gives the
        # same runs, which a merge then adds once. A replacement is another import of
        # the file (other options): other runs.
        name = f"{self.sha256}:{len(self.run_ids)}" + (f":{self.replace}" if self.replace else "")
        identity = str(uuid.uuid5(RUN_NAMESPACE, name))
        # A file imported again after its run was forgotten (`store forget`): the user
        # asked for it, so it is a run again, but a new one: the tombstone stays, and a
        # merge still keeps the forgotten run out (and two stores that did the same agree).
        again = 0
        while self.store.forgotten([identity]):
            again += 1
            identity = str(uuid.uuid5(RUN_NAMESPACE, f"{name}:again:{again}"))
        run_id = self.store._insert_run(run, "imported", identity)
        self.run_ids.append(run_id)
        return run_id

    def point(self, run_id: int, result: PointResult, source: dict[str, Any]) -> None:
        self.store._insert_point(run_id, result, source)
        self.points += 1

    def revise(self, run_id: int, run: RunInfo) -> None:
        """The facts of a run that its points give (server version and flavour, tools,
        price), once all are read."""
        self.store.db.execute("UPDATE runs SET server_version = ?, tool_versions = ?, options = ?,"
                              " price_per_hour = ?, flavour = ? WHERE id = ?",
                              (run.server_version, json.dumps(run.tool_versions, sort_keys=True),
                               json.dumps(run.options, sort_keys=True), run.price_per_hour, run.flavour, run_id))
