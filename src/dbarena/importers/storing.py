"""Bringing results measured elsewhere into a store: read a file (reading.py, pure),
group its points into runs (one per label and engine), store them once per content.

The command line's `import` prints what `import_file` returns; Python code calls it
the same way:

    from dbarena.importers.storing import ImportOptions, import_file
    with Store("dbarena.db") as db:
        outcome = import_file(db, Path("run.txt"), ImportOptions(label="vm"))
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import stat
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any, BinaryIO

from dbarena import inbound
from dbarena.importers import reading
from dbarena.bulk import collector_paused
from dbarena.errors import UsageError
from dbarena.importers import workloadnames
from dbarena.importers.durations import Duration
from dbarena.limits import MAX_IMPORT_RUN_CHARS, MAX_NAME_CHARS, name_problem, quoted
from dbarena.model import PointResult, RunInfo
from dbarena.stats import analysis
from dbarena.store.database import Store, now_utc


@dataclass(frozen=True)
class ImportOptions:
    label: str
    engine: str | None = None  # of runs whose output does not say
    tool: str = "auto"
    workload: str | None = None  # of runs whose output does not say
    price_per_hour: float | None = None
    replace: bool = False  # import a file imported before again, in place of what it brought

    def __post_init__(self) -> None:
        """Refuse, before any file is read or store opened, what a study refuses too: a
        label (or workload name) without text, or with control characters (a terminal's
        escapes: labels are printed and put in reports), a price that is no price."""
        for flag, value in (("--label", self.label), ("--workload", self.workload)):
            if value is None:
                continue
            if not value.strip():
                raise UsageError(f"{flag}: expected a non-empty text, not {value!r}")
            if len(value) > MAX_NAME_CHARS:
                raise UsageError(f"{flag}: {quoted(value)} is {len(value):,} characters long (at most "
                                 f"{MAX_NAME_CHARS})")
            if (problem := name_problem(value)) is not None:  # (the one rule of names: limits.py)
                raise UsageError(f"{flag}: {quoted(value)} {problem}")
        if self.price_per_hour is not None and not (math.isfinite(self.price_per_hour) and self.price_per_hour > 0):
            raise UsageError(f"--price-per-hour: {self.price_per_hour} is not a price above 0")
        if self.workload is not None:
            # dbarena's name for it (oltp_read_write -> sysbench-read-write), or one line
            # listing the known ones: a name no workload has would pool with nothing.
            object.__setattr__(self, "workload", workloadnames.checked(self.workload))


@dataclass
class FileOutcome:
    path: Path
    error: str | None = None  # one line: the file could not be read (nothing stored)
    points: int = 0
    ok: int = 0
    run_ids: list[int] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)
    already: bool = False  # the same content was imported before: nothing added
    replaced: int = 0  # points of an earlier import removed (--replace)
    notes: list[tuple[str, int]] = field(default_factory=list)  # what the reader noted, with how many runs
    skipped: list[str] = field(default_factory=list)  # `FILE:LINE: why` of each piece with figures not stored


class _Run:
    """One run of an import (its points' label and engine) while the file is read: its
    id, and the facts its points give, which the run is stored with at the end."""

    def __init__(self, run_id: int, label: str, engine: str, started_at: datetime):
        self.run_id, self.label, self.engine, self.started_at = run_id, label, engine, started_at
        self.tools: set[str] = set()
        self.server_version: str | None = None  # the first point's that has one
        self.flavour: str | None = None  # likewise (MariaDB or MySQL, where the output names it)
        self.price_per_hour: float | None = None  # likewise (a CSV's column)

    def add(self, point: reading.ImportedPoint) -> None:
        self.tools.add(point.tool)
        self.server_version = self.server_version or point.server_version
        self.flavour = self.flavour or point.flavour
        self.price_per_hour = self.price_per_hour or point.price_per_hour

    def info(self, path: Path, sha256: str, price_per_hour: float | None) -> RunInfo:
        tools = sorted(self.tools)
        return RunInfo(
            label=self.label, host="imported", engine=self.engine, target=f"imported from {path.name}",
            started_at=self.started_at, server_version=self.server_version,
            tool_versions={t: "imported" for t in tools},
            options={"imported": {"file": str(path), "sha256": sha256, "tool": list(tools)}},
            host_facts={}, price_per_hour=self.price_per_hour or price_per_hour, flavour=self.flavour)


def _source(point: reading.ImportedPoint, path: Path, sha256: str) -> dict[str, Any]:
    """Where a point comes from (file, lines, content), and how its duration was found:
    the one asked and the one measured, which the configuration key does not hold."""
    # `file` names it; `path` is the path as given (relative where the user typed it so:
    # archives reuse one file name in many directories), and `sha256` its content's.
    source: dict[str, Any] = {"file": path.name, "path": str(path), "lines": [point.first_line, point.last_line],
                              "sha256": sha256}
    if point.duration is not None:
        source["duration"] = point.duration.source()
    return source


def import_file(store: Store, path: Path, options: ImportOptions, *, max_run_chars: int = MAX_IMPORT_RUN_CHARS
                ) -> FileOutcome:
    """Read one file and store its runs; a file that cannot be read stores nothing. A
    file of any size is read as a stream, one run at a time: a run (or a line) of more
    than `max_run_chars` is refused in one line, where it starts."""
    # A file of 10 000 runs makes 600 000 interval reports, none in a reference cycle;
    # each collection they set off would walk all made so far (a fifth of the import).
    with collector_paused():
        return _import_file(store, path, options, max_run_chars)


class _Unreadable(Exception):
    """A file import does not read, and why (one line)."""


def open_regular(path: Path) -> BinaryIO:
    """A regular file, open to read (inbound.open_regular, the one check of every file
    read from outside: a FIFO would block import for ever, /dev/zero fill the memory);
    _Unreadable (one line) for anything else."""
    try:
        return inbound.open_regular(path)
    except inbound.Unreadable as exc:
        if exc.kind is None:
            raise _Unreadable(f"{path.name}: {str(exc).removeprefix(f'{path}: ')}") from None
        raise _Unreadable(f"{path}: {exc.kind}, not a regular file: import reads files") from None


# Bytes read at a time. The text goes on in parts that end at a line break: a part holds
# a whole number of lines, so no reader sees half a line (or half a character).
CHUNK_BYTES = 2**20


class _LineTooLong(Exception):
    """A line longer than import holds (its number is the caller's to say)."""


def _parts(file: BinaryIO, path: Path, digest: Any, max_line: int) -> Iterator[str]:
    """The file's text, in parts of about `chunk` bytes that end at a line break (\n, or
    a \r not followed by \n), hashed into `digest` as read. Not UTF-8: _Unreadable at
    the byte. A line of more than `max_line` bytes: _LineTooLong (it would be held whole)."""
    held = bytearray()
    offset = 0  # of held's first byte in the file
    chunk = CHUNK_BYTES  # (read when called: a test makes it small)
    while True:
        data = file.read(chunk)
        digest.update(data)
        searched = max(0, len(held) - 1)  # (what was held has no break, but a \r at its end)
        held += data
        if data:
            newline = held.rfind(b"\n", searched)
            ret = held.rfind(b"\r", searched, len(held) - 1)  # a \r with its next byte read
            cut = max(newline, ret) + 1
            if not cut:
                if len(held) > max_line:
                    raise _LineTooLong
                continue
        else:
            cut = len(held)
        if cut:
            try:
                yield held[:cut].decode("utf-8")
            except UnicodeDecodeError as exc:
                raise _Unreadable(f"{path.name}: not UTF-8 text (byte {offset + exc.start})") from None
            del held[:cut]
            offset += cut
        if not data:
            return


def _survey(path: Path, max_run_chars: int) -> tuple[str, reading.Survey]:
    """The first reading of a file: its content's sha256, and what reading.Survey says
    of its text (which tool wrote it). Holds one part of the file at a time."""
    survey = reading.Survey()
    digest = hashlib.sha256()
    with open_regular(path) as file:
        try:
            for text in reading.texts(_parts(file, path, digest, max_run_chars)):
                survey.feed(text)
        except _LineTooLong:
            raise _Unreadable(f"{path.name}:{survey.lines + 1}: a line of more than {max_run_chars:,} bytes: import "
                              "holds one run in memory at a time and reads no line that long") from None
    return digest.hexdigest(), survey


def _import_file(store: Store, path: Path, options: ImportOptions, max_run_chars: int) -> FileOutcome:
    # Read twice: once to hash the content (a file imported before adds nothing) and to
    # tell which tool wrote it, then run by run into the store, in one transaction that
    # a line that cannot be read (or the process killed) leaves without a trace.
    try:
        sha256, survey = _survey(path, max_run_chars)
    except _Unreadable as exc:
        return FileOutcome(path, error=str(exc))
    # The options a --replace import is keyed by: the same file imported with other
    # options replaces what it brought before.
    given = json.dumps([options.label, options.engine, options.tool, options.workload, options.price_per_hour])
    outcome = FileOutcome(path)
    skipped: list[reading.Skipped] = []
    runs: dict[tuple[str, str], _Run] = {}
    notes: Counter[str] = Counter()
    inferred: Counter[str] = Counter()
    # A failed run's output may end before it says how long it was asked to run: such a
    # point is stored once the file is read, with the duration its configuration's runs
    # were asked for (in this file, else stored before under its label), so that it counts
    # on its configuration's row ("+1 failed"), not on a row of its own.
    asked: dict[tuple[Any, ...], int] = {}
    undated: list[reading.ImportedPoint] = []

    def put(point: reading.ImportedPoint) -> None:
        key = (point.label, point.result.spec.engine)
        run = runs.get(key)
        if run is None:
            run = runs[key] = _Run(0, *key, now_utc())
            run.add(point)
            run.run_id = batch.run(run.info(path, sha256, options.price_per_hour))
        else:
            run.add(point)
        batch.point(run.run_id, point.result, _source(point, path, sha256))
    try:
        with store.importing(sha256, str(path), replace=hashlib.sha256(given.encode()).hexdigest()[:16]
                             if options.replace else None) as batch, open_regular(path) as file:
            digest = hashlib.sha256()
            for point in reading.stream(path.name, reading.texts(_parts(file, path, digest, max_run_chars)), survey,
                                         label=options.label, engine=options.engine, tool=options.tool,
                                         workload=options.workload, skipped=skipped, max_run_chars=max_run_chars):
                outcome.points += 1
                outcome.ok += point.result.ok
                if point.note:
                    notes[point.note] += 1
                if point.duration is not None and point.duration.how == "inferred":
                    # A duration inferred from the measured time is the importer's reading, not
                    # the file's: said once per figure, with where both are kept.
                    inferred[f"duration {point.duration.asked_s} s inferred from the measured time (the output "
                             f"names no asked duration; the point's source keeps both)"] += 1
                if batch.already:
                    continue  # (read all the same: what the file holds is said as before)
                if point.result.ok and point.duration is not None:
                    asked.setdefault(_shape(point), point.duration.asked_s)
                elif not point.result.ok and point.duration is None and not point.result.spec.duration_s:
                    undated.append(point)  # stored at the file's end, with its configuration's duration
                    continue
                put(point)
            for point in undated:
                put(_dated(point, asked.get(_shape(point)) or _stored_duration(store, point)))
            if digest.hexdigest() != sha256:
                raise _Unreadable(f"{path.name}: changed while it was imported; nothing stored (import it again)")
            for run in runs.values():  # the facts all its points give
                batch.revise(run.run_id, run.info(path, sha256, options.price_per_hour))
    except (reading.ImportProblem, _Unreadable) as exc:
        return FileOutcome(path, error=str(exc))
    outcome.skipped = [f"{path.name}:{piece.line}: {piece.message()}" for piece in skipped]
    if not outcome.points:
        return outcome
    if batch.already:
        outcome.already = True
        return outcome
    outcome.run_ids, outcome.replaced = list(batch.run_ids), batch.replaced
    for run_id in outcome.run_ids:  # derived figures cached now: the SQL views show them
        for page in store.point_ids(run_id, DERIVE_PAGE):
            analysis.derive(store, run_id, page)
    outcome.labels = sorted({run.label for run in runs.values()})
    notes.update(inferred)
    outcome.notes = list(notes.items())
    return outcome


def _shape(point: reading.ImportedPoint) -> tuple[Any, ...]:
    """A point's configuration apart from its duration, as an import knows it."""
    spec = point.result.spec
    return (point.label, spec.engine, spec.workload, spec.threads, spec.clients, tuple(sorted(spec.params)),
            tuple(sorted(spec.options)), spec.warmup_s)


def _stored_duration(store: Store, point: reading.ImportedPoint) -> int | None:
    """The duration the stored ok points of the failed point's label and configuration
    (apart from the duration) were asked for, where they agree on one."""
    spec = point.result.spec
    found = {p.duration_s for p in store.points(labels=(point.label,))
             if p.status == "ok" and p.duration_s and (p.engine, p.workload, p.threads, p.clients, p.warmup_s) ==
             (spec.engine, spec.workload, spec.threads, spec.clients, spec.warmup_s)
             and dict(p.params) == dict(spec.params) and dict(p.options) == dict(spec.options)}
    return found.pop() if len(found) == 1 else None


def _dated(point: reading.ImportedPoint, duration_s: int | None) -> reading.ImportedPoint:
    """A failed point given its configuration's duration (as it is, where none is known)."""
    if not duration_s:
        return point
    spec = replace(point.result.spec, duration_s=duration_s)
    return replace(point, result=replace(point.result, spec=spec),
                   duration=Duration(duration_s, "its configuration"))


# Points whose derived figures are computed at a time after an import (their series in
# memory together: analysis reads them in batches of DERIVE_BATCH within a page).
DERIVE_PAGE = 4 * analysis.DERIVE_BATCH


def import_together(store: Store, paths: list[Path], options: ImportOptions, *,
                    max_run_chars: int = MAX_IMPORT_RUN_CHARS) -> FileOutcome:
    """`import --together`: the outputs of load generators that ran at once against one
    server (one run per file, one configuration) stored as the one point they measured
    (importers/together.py), in one transaction; nothing is stored where a file cannot
    be read or the runs do not go together. The same files imported together again add
    nothing."""
    from dbarena.importers import together

    with collector_paused():
        outcome = FileOutcome(paths[0])
        parts: list[tuple[str, reading.ImportedPoint]] = []
        digests: list[str] = []
        try:
            for path in paths:
                sha256, survey = _survey(path, max_run_chars)
                with open_regular(path) as file:
                    digest = hashlib.sha256()
                    points = list(reading.stream(path.name, reading.texts(_parts(file, path, digest, max_run_chars)),
                                                 survey, label=options.label, engine=options.engine, tool=options.tool,
                                                 workload=options.workload, max_run_chars=max_run_chars))
                if digest.hexdigest() != sha256:
                    raise _Unreadable(f"{path.name}: changed while it was imported; nothing stored (import it again)")
                if len(points) != 1:
                    raise _Unreadable(f"{path.name}: {len(points)} runs: --together takes one run per file (each load "
                                      "generator's output)")
                parts.append((path.name, points[0]))
                digests.append(sha256)
            point = together.combine(parts, ", ".join(p.name for p in paths))
            reading.check(paths[0].name, point)
        except (reading.ImportProblem, _Unreadable) as exc:
            return FileOutcome(paths[0], error=str(exc))
        # The content imported: these files, together (in any order).
        sha256 = hashlib.sha256(("together\n" + "\n".join(sorted(digests))).encode()).hexdigest()
        given = json.dumps([options.label, options.engine, options.tool, options.workload, options.price_per_hour,
                            "together"])
        shown = " + ".join(str(p) for p in paths)
        with store.importing(sha256, shown, replace=hashlib.sha256(given.encode()).hexdigest()[:16]
                             if options.replace else None) as batch:
            if not batch.already:
                run = _Run(0, point.label, point.result.spec.engine, now_utc())
                run.add(point)
                run.run_id = batch.run(run.info(paths[0], sha256, options.price_per_hour))
                source: dict[str, Any] = {
                    "file": " + ".join(p.name for p in paths), "path": shown, "sha256": sha256,
                    "together": [{"file": p.name, "path": str(p), "sha256": d, "lines": [q.first_line, q.last_line]}
                                 for p, d, (_, q) in zip(paths, digests, parts)]}
                if point.duration is not None:
                    source["duration"] = point.duration.source()
                batch.point(run.run_id, point.result, source)
        outcome.points, outcome.ok = 1, 1
        if point.note:
            outcome.notes = [(point.note, 1)]
        if batch.already:
            outcome.already = True
            return outcome
        outcome.run_ids, outcome.replaced = list(batch.run_ids), batch.replaced
        for run_id in outcome.run_ids:
            for page in store.point_ids(run_id, DERIVE_PAGE):
                analysis.derive(store, run_id, page)
        outcome.labels = [point.label]
        return outcome
