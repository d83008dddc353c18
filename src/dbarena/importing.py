"""Bringing results measured elsewhere into a store: read a file (importer.py, pure),
group its points into runs (one per label and engine), store them once per content.

The command line's `import` prints what `import_file` returns; Python code calls it
the same way:

    from dbarena.importing import ImportOptions, import_file
    with Store("dbarena.db") as db:
        outcome = import_file(db, Path("run.txt"), ImportOptions(label="vm"))
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import stat
import unicodedata
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dbarena import importer
from dbarena.bulk import collector_paused
from dbarena.errors import UsageError
from dbarena.importers import workloadnames
from dbarena.limits import MAX_IMPORT_BYTES, MAX_NAME_CHARS, quoted
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
            if any(unicodedata.category(c) == "Cc" for c in value):
                raise UsageError(f"{flag}: {value!r} holds control characters")
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


def _runs(path: Path, sha256: str, points: list[importer.ImportedPoint], price_per_hour: float | None
          ) -> list[tuple[RunInfo, list[tuple[PointResult, dict[str, Any]]]]]:
    """One run per label and engine of the file's points."""
    groups: dict[tuple[str, str], list[importer.ImportedPoint]] = {}
    for p in points:
        groups.setdefault((p.label, p.result.spec.engine), []).append(p)
    runs = []
    for (run_label, run_engine), members in groups.items():
        tools = sorted({p.tool for p in members})
        runs.append((RunInfo(
            label=run_label, host="imported", engine=run_engine, target=f"imported from {path.name}",
            started_at=now_utc(), server_version=next((p.server_version for p in members if p.server_version), None),
            tool_versions={t: "imported" for t in tools},
            options={"imported": {"file": str(path), "sha256": sha256, "tool": list(tools)}},
            host_facts={}, price_per_hour=next((p.price_per_hour for p in members if p.price_per_hour), None)
            or price_per_hour,
        ), [(p.result, _source(p, path, sha256)) for p in members]))
    return runs


def _source(point: importer.ImportedPoint, path: Path, sha256: str) -> dict[str, Any]:
    """Where a point comes from (file, lines, content), and how its duration was found:
    the one asked and the one measured, which the configuration key does not hold."""
    source: dict[str, Any] = {"file": path.name, "lines": [point.first_line, point.last_line], "sha256": sha256}
    if point.duration is not None:
        source["duration"] = point.duration.source()
    return source


def import_file(store: Store, path: Path, options: ImportOptions) -> FileOutcome:
    """Read one file and store its runs; a file that cannot be read stores nothing."""
    # A file of 10 000 runs makes 600 000 interval reports, none in a reference cycle;
    # each collection they set off would walk all made so far (a fifth of the import).
    with collector_paused():
        return _import_file(store, path, options)


class _Unreadable(Exception):
    """A file import does not read, and why (one line)."""


# What a file is that is not one: import reads regular files only (a FIFO would block
# it for ever, /dev/zero fill the memory).
_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def _not_regular(mode: int) -> str | None:
    if stat.S_ISREG(mode):
        return None
    return next((kind for test, kind in _KINDS if test(mode)), "not a regular file")


def read_bounded(path: Path, limit: int = MAX_IMPORT_BYTES) -> bytes:
    """The bytes of a regular file of at most `limit` bytes; _Unreadable (one line)
    for anything else. The file is opened without blocking (a FIFO without a writer
    would block the open) and checked on the descriptor read, so what is read is what
    was checked; a file that grows past the limit while read is refused too."""
    try:
        kind = _not_regular(path.stat().st_mode)  # (a socket cannot even be opened: say what it is)
        if kind is None:
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
            with os.fdopen(fd, "rb") as file:
                info = os.fstat(file.fileno())
                kind = _not_regular(info.st_mode)
                if kind is None:
                    if info.st_size > limit:
                        raise _Unreadable(_too_big(path, info.st_size, limit))
                    data = file.read(limit + 1)
                    if len(data) > limit:
                        raise _Unreadable(_too_big(path, len(data), limit))
                    return data
    except OSError as exc:
        raise _Unreadable(f"{path.name}: cannot be read ({exc.strerror or exc})") from None
    raise _Unreadable(f"{path}: {kind}, not a regular file: import reads files")


def _too_big(path: Path, size: int, limit: int) -> str:
    return (f"{path}: {size:,} bytes, more than import reads ({limit:,} bytes, {limit / 2**20:g} MiB: the file is "
            "read whole, at about 9 times its size in memory): split it at run boundaries and import the parts")


def _import_file(store: Store, path: Path, options: ImportOptions) -> FileOutcome:
    try:
        raw = read_bounded(path)
    except _Unreadable as exc:
        return FileOutcome(path, error=str(exc))
    sha256 = hashlib.sha256(raw).hexdigest()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return FileOutcome(path, error=f"{path.name}: not UTF-8 text (byte {exc.start})")
    del raw  # (the text is all that is read from here: one copy of the file less in memory)
    skipped: list[importer.Skipped] = []
    try:
        points = importer.read(path.name, text, label=options.label, engine=options.engine,
                               tool=options.tool, workload=options.workload, skipped=skipped)
    except importer.ImportProblem as exc:
        return FileOutcome(path, error=str(exc))
    outcome = FileOutcome(path, points=len(points), ok=sum(p.result.ok for p in points),
                          skipped=[f"{path.name}:{piece.line}: {piece.message()}" for piece in skipped])
    if not points:
        return outcome
    runs = _runs(path, sha256, points, options.price_per_hour)
    # The options a --replace import is keyed by: the same file imported with other
    # options replaces what it brought before.
    given = json.dumps([options.label, options.engine, options.tool, options.workload, options.price_per_hour])
    stored = store.import_points(sha256, str(path), runs,
                                 replace=hashlib.sha256(given.encode()).hexdigest()[:16] if options.replace else None)
    if stored is None:
        outcome.already = True
        return outcome
    outcome.run_ids, outcome.replaced = list(stored[0]), stored[1]
    for run_id in outcome.run_ids:  # derived figures cached now: the SQL views show them
        analysis.load(store, run_id=run_id)
    outcome.labels = sorted({run.label for run, _ in runs})
    notes = [p.note for p in points if p.note]
    # A duration inferred from the measured time is the importer's reading, not the file's:
    # said once per figure, with where both are kept.
    notes += [f"duration {p.duration.asked_s} s inferred from the measured time (the output names no asked "
              f"duration; the point's source keeps both)" for p in points
              if p.duration is not None and p.duration.how == "inferred"]
    outcome.notes = list(Counter(notes).items())
    return outcome
