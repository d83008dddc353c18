"""The rows of session_summaries (schema 23): a configuration's points in one session
(records.SessionSummary, made by stats/analysis.session_summaries) as the store keeps
them, and back; and what a read of other labels takes of them (records.LentSession).

`figures` (schema 25) keeps what a summary reads of each point (records.SummaryPoint),
column by column (a list a field, in point order), with the fields every point of the
session shares once, and each warning code's text once: a view summarises a
configuration from these rows without reading its points' (analysis.stored_summaries).

The figures beside the members are the ones a view or an SQL query reads without
decoding them: the mean of the runs' figures as statistics.fmean makes it (what
stats/sessions.py takes a session's mean to be), their exact sum and the sum of their
squared deviations (the second moment of a session, for the two-level statistics), the
warnings and the bounds counted.
"""

from __future__ import annotations

import math
import statistics
from collections import Counter
from itertools import repeat
from typing import Any, Iterable, Mapping, Sequence

import orjson

from dbarena.records import JSON, LentSession, SessionSummary, SummaryPoint, SUMMARY_POINT_OWN

__all__ = ["SUMMARY_COLUMNS", "encoded", "figures", "with_figures", "lent"]

SUMMARY_COLUMNS = ("run_id", "config_key", "estimator", "first_point", "points", "runs", "failed", "mean", "total",
                   "squares", "warnings", "bounds", "members", "figures")


def encoded(summary: SessionSummary, estimator: int) -> tuple[Any, ...]:
    """A summary as its row, in SUMMARY_COLUMNS' order."""
    values = summary.values
    mean = statistics.fmean(values) if values else None
    bounds = Counter(m.bound for m in summary.members if m.bound is not None)
    return (summary.run_id, summary.config_key, estimator, summary.members[0].point_id, len(summary.members),
            len(values), summary.failed, mean, math.fsum(values) if values else None,
            math.fsum((v - mean) ** 2 for v in values) if mean is not None else None,
            summary.warnings,
            orjson.dumps(dict(sorted(bounds.items()))).decode(),
            orjson.dumps([[m.point_id, m.value, len(m.warnings), m.bound] for m in summary.members]).decode(),
            figures(summary))


# SummaryPoint's fields a row keeps once for all its points (its run's id, label and
# series label are the row's and its run's), and those kept a point at a time.
_SHARED = SummaryPoint._fields[SUMMARY_POINT_OWN + 3:]
_OWN = SummaryPoint._fields[:SUMMARY_POINT_OWN]
_WARNINGS = _OWN.index("warnings")
_DIPS = _OWN.index("dips_s")
_SECONDS = frozenset({int, float})
# What each point's own field may hold as JSON reads it (a row otherwise is not read).
_NONE: type = type(None)
_NUMBER = frozenset({int, float, _NONE})
_INT = frozenset({int, _NONE})
_TEXT = frozenset({str, _NONE})
_KINDS: dict[str, frozenset[type]] = {
    "point_id": frozenset({int}), "value": _NUMBER, "status": frozenset({str}), "error": _TEXT,
    "metric": frozenset({str}), "duration_s": frozenset({int}), "details": frozenset({dict}),
    "histogram": frozenset({bool}), "transactions": _INT, "failed_transactions": _INT, "errors": _INT,
    "warnings": frozenset({list}), "bound": _TEXT, "efficiency": frozenset({dict, _NONE}), "queries": _INT,
    "repeat": frozenset({int}), "dips_s": frozenset({list}), "profile": frozenset({dict, _NONE})}
_OBJECT = frozenset({dict, _NONE})
_SHARED_KINDS = tuple({"config_key": _TEXT, "host": frozenset({str}), "engine": frozenset({str}),
                       "workload": frozenset({str}), "threads": frozenset({int}), "clients": frozenset({int}),
                       "variant": frozenset({str}), "config": _OBJECT, "phase": frozenset({str}),
                       "adaptive": frozenset({bool}), "machine_threads": frozenset({int}), "slo": _OBJECT,
                       "target_tps": _NUMBER, "params": frozenset({dict})}[name] for name in _SHARED)


def figures(summary: SessionSummary) -> str | None:
    """The `figures` column of a summary (None where its points do not share the
    session's fields: no such configuration should exist, and its points are read)."""
    first = summary.members[0]
    shared = [getattr(first, name) for name in _SHARED]
    if any([getattr(m, name) for name in _SHARED] != shared for m in summary.members[1:]):
        return None
    texts: dict[str, dict[str, str]] = {}
    # Each code's text where it first appears among the points with a figure (the ones
    # a summary names warnings of), else where it first appears at all.
    for m in sorted(summary.members, key=lambda m: m.value is None):
        for w in m.warnings:
            texts.setdefault(w["code"], w)
    columns: list[list[JSON]] = [list(column) for column in zip(*(m[:SUMMARY_POINT_OWN] for m in summary.members))]
    columns[_WARNINGS] = [[w["code"] for w in m.warnings] for m in summary.members]
    return orjson.dumps({"shared": shared, "texts": texts, "columns": columns}).decode()


def with_figures(rows: Iterable[Sequence[Any]]) -> list[SessionSummary]:
    """Rows of (run_id, label, config_key, figures) as summaries whose members are the
    points as their figures keep them; a row whose figures do not read as figures()
    wrote them (none, a row of schema 23 or 24, a store edited) is left out."""
    out = []
    for run_id, label, config_key, found in rows:
        members = _members(run_id, label, found)
        if members and isinstance(config_key, str):
            out.append(SessionSummary(run_id=run_id, label=label, config_key=config_key, members=members))
    return out


def _members(run_id: int, label: Any, found: Any) -> tuple[SummaryPoint, ...] | None:
    if not isinstance(found, str) or not isinstance(label, str):
        return None
    try:
        decoded = orjson.loads(found)
        shared, texts, columns = decoded["shared"], decoded["texts"], decoded["columns"]
    except (orjson.JSONDecodeError, KeyError, TypeError):
        return None
    if not (isinstance(shared, list) and len(shared) == len(_SHARED) and isinstance(texts, dict)
            and isinstance(columns, list) and len(columns) == len(_OWN) and all(isinstance(c, list) for c in columns)):
        return None
    count = len(columns[0])
    # Each column checked whole (its values' types at once), not point by point.
    if not count or any(len(c) != count or not _KINDS.get(name, _NUMBER).issuperset(map(type, c))
                        for name, c in zip(_OWN, columns)):
        return None
    if not all(isinstance(t, dict) and all(isinstance(v, str) for v in t.values()) for t in texts.values()):
        return None
    if not all(type(value) in kinds for value, kinds in zip(shared, _SHARED_KINDS)):
        return None
    # (The seconds of each point's dips, which a chart marks, numbers too.)
    if not all(_SECONDS.issuperset(map(type, dips)) for dips in columns[_DIPS] if dips):
        return None
    try:
        columns[_WARNINGS] = [[texts[code] for code in codes] if codes else [] for codes in columns[_WARNINGS]]
    except (KeyError, TypeError):
        return None
    return tuple(map(SummaryPoint._make, zip(*columns, repeat(run_id), repeat(label), repeat(label),
                                             *map(repeat, shared))))


def lent(rows: Iterable[Sequence[Any]], measured: Mapping[int, int]) -> tuple[list[LentSession], list[int]]:
    """Rows of (label, config_key, run_id, first_point, runs, mean, points), in the order
    of their first points, as what they lend, for the runs whose summaries hold all their
    measured points (`measured`: run id -> that count); and the runs that do not (theirs
    missing, short, or a row that does not read)."""
    held: dict[int, int] = {}
    out: dict[int, list[LentSession]] = {}
    broken: set[int] = set()
    for label, config_key, run_id, first_point, runs, mean, points in rows:
        held[run_id] = held.get(run_id, 0) + (points if type(points) is int else 0)
        if not (isinstance(label, str) and isinstance(config_key, str) and type(first_point) is int
                and type(runs) is int and runs >= 0 and (runs == 0 or (isinstance(mean, float) and math.isfinite(mean)))):
            broken.add(run_id)
            continue
        out.setdefault(run_id, []).append(LentSession(label=label, config_key=config_key, run_id=run_id,
                                                      first_point=first_point, runs=runs,
                                                      mean=mean if runs else 0.0))
    stale = sorted(run_id for run_id, count in measured.items() if held.get(run_id) != count or run_id in broken)
    wanted = set(measured) - set(stale)
    kept = [one for run_id, found in out.items() if run_id in wanted for one in found]
    return sorted(kept, key=lambda one: one.first_point), stale
