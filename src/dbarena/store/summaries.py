"""The rows of session_summaries (schema 23): a configuration's points in one session
(records.SessionSummary, made by stats/analysis.session_summaries) as the store keeps
them, and back; and what a read of other labels takes of them (records.LentSession).

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
from typing import Any, Iterable, Mapping, Sequence

import orjson

from dbarena.records import LentSession, SessionMember, SessionSummary

__all__ = ["SUMMARY_COLUMNS", "encoded", "decoded", "lent"]

SUMMARY_COLUMNS = ("run_id", "config_key", "estimator", "first_point", "points", "runs", "failed", "mean", "total",
                   "squares", "warnings", "bounds", "members")


def encoded(summary: SessionSummary, estimator: int) -> tuple[Any, ...]:
    """A summary as its row, in SUMMARY_COLUMNS' order."""
    values = summary.values
    mean = statistics.fmean(values) if values else None
    bounds = Counter(m.bound for m in summary.members if m.bound is not None)
    return (summary.run_id, summary.config_key, estimator, summary.members[0].point_id, len(summary.members),
            len(values), summary.failed, mean, math.fsum(values) if values else None,
            math.fsum((v - mean) ** 2 for v in values) if mean is not None else None,
            sum(m.warnings for m in summary.members),
            orjson.dumps(dict(sorted(bounds.items()))).decode(),
            orjson.dumps([[m.point_id, m.value, m.warnings, m.bound] for m in summary.members]).decode())


def decoded(rows: Iterable[Sequence[Any]]) -> list[SessionSummary]:
    """Rows of (run_id, label, config_key, members) as summaries; a row whose members do
    not read as encoded() wrote them is left out."""
    out = []
    for run_id, label, config_key, members in rows:
        try:
            found = orjson.loads(members)
            held = tuple(SessionMember(point_id, value, warnings, bound) for point_id, value, warnings, bound in found
                         if type(point_id) is int and (value is None or type(value) in (int, float))
                         and type(warnings) is int and (bound is None or isinstance(bound, str)))
        except (orjson.JSONDecodeError, TypeError, ValueError):
            continue
        if held and len(held) == len(found) and isinstance(label, str) and isinstance(config_key, str):
            out.append(SessionSummary(run_id=run_id, label=label, config_key=config_key, members=held))
    return out


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
