"""The rows of group_summaries (schema 26): a label's configuration over all its
sessions (records.StoredGroup, made by stats/analysis.own_summaries) as the store keeps
it, and back.

A row holds the summary's fields as `results --summary --json` would print them and the
fields it keeps for comparisons (its interference, each cost's means by session), but
none a group takes from others (the spread between sessions it borrows, a search's
capacity: analysis makes those at read time from every group read), and its runs'
figures' means by session. A summary is kept only where JSON gives it back to the last
bit (a float that is not finite is not: that group is summarised from its sessions'
rows at each read instead); a row that does not read as one is made again.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

import orjson

from dbarena.records import JSON, Interference, LevelMeans, LevelSummary, ShownPoint, StoredGroup

__all__ = ["GROUP_COLUMNS", "encoded", "decoded", "CROSS_GROUP"]

GROUP_COLUMNS = ("label", "config_key", "estimator", "first_point", "summary")

# What a summary takes from other groups (analysis.completed): made at read time, never kept.
CROSS_GROUP = frozenset({"between_sessions", "estimate", "capacity", "capacity_estimate", "capacity_interference",
                         "at_rate"})
_KEPT = tuple(f.name for f in dataclasses.fields(LevelSummary) if f.name not in CROSS_GROUP)


def encoded(group: StoredGroup, estimator: int) -> tuple[Any, ...] | None:
    """A group as its row, in GROUP_COLUMNS' order; None where JSON would not give its
    figures back exactly."""
    summary = group.summary
    payload: dict[str, JSON] = {name: _plain(getattr(summary, name)) for name in _KEPT}
    payload["session_means"] = list(group.session_means)
    payload["session_runs"] = list(group.session_runs)
    payload["level"] = None if group.level is None else _plain(
        {f.name: getattr(group.level, f.name) for f in dataclasses.fields(LevelMeans)})
    payload["runs"] = [list(pair) for pair in group.runs]
    payload["ok"] = group.ok
    shown = group.shown
    payload["shown"] = None if shown is None else [shown.point_id, shown.threads, shown.repeat,
                                                    shown.steady_start_s, list(shown.dips_s)]
    payload["links"] = list(group.links)
    payload["profiled"] = [list(pair) for pair in group.profiled]
    try:
        text = orjson.dumps(payload)
    except TypeError:
        return None
    # (NaN and the infinities become null in JSON: such a group is not kept.)
    if orjson.loads(text) != payload:
        return None
    return (summary.label, summary.config_key, estimator, group.first_point, text.decode())


def _plain(value: Any) -> JSON:
    if isinstance(value, Interference):
        return {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise TypeError(f"not JSON: {type(value).__name__}")


def decoded(first_point: Any, text: Any) -> StoredGroup | None:
    """A row's group (its first point and summary column); None where it does not read
    as one (written by hand or by another program: the group is then made again)."""
    if not isinstance(first_point, int) or not isinstance(text, str):
        return None
    try:
        found = orjson.loads(text)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(found, dict) or set(found) != {*_KEPT, *_SHOWN}:
        return None
    means, runs = found.pop("session_means"), found.pop("session_runs")
    if not (isinstance(means, list) and all(type(m) is float for m in means)
            and isinstance(runs, list) and all(type(r) is int for r in runs) and len(means) == len(runs)):
        return None
    shown = _shown({name: found.pop(name) for name in _SHOWN[2:]})
    if shown is None:
        return None
    for name, check in _CHECKS.items():
        if not check(found[name]):
            return None
    interference = found["interference"]
    found["interference"] = None if interference is None else Interference(**interference)
    sessions = found["efficiency_sessions"]
    if sessions is not None:
        found["efficiency_sessions"] = {k: tuple(v) for k, v in sessions.items()}
    cross: dict[str, Any] = dict.fromkeys(CROSS_GROUP)
    return StoredGroup(first_point=first_point, summary=LevelSummary(**found, **cross),
                       session_means=tuple(means), session_runs=tuple(runs), **shown)


# What a report reads of the group's points (records.StoredGroup's fields from `level` on),
# after its sessions' means and runs.
_SHOWN = ("session_means", "session_runs", "level", "runs", "ok", "shown", "links", "profiled")
_MEANS = {f.name for f in dataclasses.fields(LevelMeans)}
_MEAN_TEXTS = ("bound", "bound_kind")
_MEAN_MAPS = ("tpcc_mix_pct", "tpcc_latency_ms")


def _shown(found: dict[str, Any]) -> dict[str, Any] | None:
    """StoredGroup's fields from `level` on, from their JSON (None: they do not read)."""
    level, runs, ok, shown = found["level"], found["runs"], found["ok"], found["shown"]
    links, profiled = found["links"], found["profiled"]
    if not (_level(level) and _pairs(runs, _int) and _int(ok) and isinstance(links, list) and all(map(_int, links))
            and _pairs(profiled, lambda x: type(x) is float) and _shown_point(shown)):
        return None
    return {"level": None if level is None else LevelMeans(**level),
            "runs": tuple((r[0], r[1]) for r in runs), "ok": ok,
            "shown": None if shown is None else ShownPoint(shown[0], shown[1], shown[2], shown[3], tuple(shown[4])),
            "links": tuple(links), "profiled": tuple((p[0], p[1]) for p in profiled)}


def _level(v: Any) -> bool:
    """records.LevelMeans as JSON, or null."""
    return v is None or (
        isinstance(v, dict) and set(v) == _MEANS and all(_text_or_none(v[n]) for n in _MEAN_TEXTS)
        and all(m is None or (isinstance(m, dict) and all(_number_or_none(x) for x in m.values()))
                for m in (v[n] for n in _MEAN_MAPS))
        and all(_number_or_none(v[n]) for n in _MEANS.difference(_MEAN_TEXTS, _MEAN_MAPS)))


def _pairs(v: Any, second: Callable[[Any], bool]) -> bool:
    """A list of [id, x] pairs, each x passing `second`."""
    return isinstance(v, list) and all(isinstance(p, list) and len(p) == 2 and _int(p[0]) and second(p[1])
                                       for p in v)


def _shown_point(v: Any) -> bool:
    """records.ShownPoint as JSON ([id, threads, repeat, steady start, dips]), or null."""
    return v is None or (isinstance(v, list) and len(v) == 5 and all(map(_int, v[:3])) and _number_or_none(v[3])
                         and isinstance(v[4], list) and all(type(d) in (int, float) for d in v[4]))


def _text(v: Any) -> bool:
    return isinstance(v, str)


def _text_or_none(v: Any) -> bool:
    return v is None or isinstance(v, str)


def _int(v: Any) -> bool:
    return type(v) is int


def _number_or_none(v: Any) -> bool:
    return v is None or type(v) in (int, float)


def _object_or_none(v: Any) -> bool:
    return v is None or isinstance(v, dict)


def _warnings(v: Any) -> bool:
    return isinstance(v, list) and all(isinstance(w, dict) and all(isinstance(x, str) for x in (*w, *w.values()))
                                       for w in v)


def _objects(v: Any) -> bool:
    return isinstance(v, dict) and all(isinstance(x, dict) for x in v.values())


def _by_session(v: Any) -> bool:
    return v is None or (isinstance(v, dict) and all(
        isinstance(x, list) and all(type(n) in (int, float) for n in x) for x in v.values()))


_INTERFERENCE = {f.name: f.type for f in dataclasses.fields(Interference)}


def _interference(v: Any) -> bool:
    if v is None:
        return True
    return (isinstance(v, dict) and set(v) == set(_INTERFERENCE) and _int(v["points"]) and _int(v["machine_threads"])
            and all(type(v[n]) in (int, float) for n in ("neighbour_mean", "neighbour_low", "neighbour_high"))
            and _number_or_none(v["steal_mean"]))


# Each kept field's check, by what LevelSummary declares it holds.
_CHECKS: dict[str, Callable[[Any], bool]] = {
    "label": _text, "config_key": _text, "engine": _text, "workload": _text, "threads": _int, "clients": _int,
    "variant": _text, "config": _object_or_none, "metric": _text, "lower_is_better": lambda v: isinstance(v, bool),
    "n": _int, "failed": _int, "sessions": _int, "median": _number_or_none, "mean": _number_or_none,
    "statistic": _text_or_none, "printed_median": _number_or_none, "stdev": _number_or_none,
    "ci_low": _number_or_none, "ci_high": _number_or_none, "cv": _number_or_none, "interval": _text_or_none,
    "warnings": _warnings, "bound": _text_or_none, "latency_min_ms": _number_or_none,
    "latency_p50_ms": _number_or_none, "latency_p90_ms": _number_or_none, "latency_p95_ms": _number_or_none,
    "latency_p99_ms": _number_or_none, "latency_p999_ms": _number_or_none, "latency_max_ms": _number_or_none,
    "latency_avg_ms": _number_or_none, "latency_pooled": _text_or_none, "over_repeats": _objects,
    "target_tps": _number_or_none, "efficiency": _object_or_none, "series_label": _text,
    "interference": _interference, "efficiency_sessions": _by_session,
}
assert set(_CHECKS) == set(_KEPT), "every kept field is checked"
