"""The JSON Schema of what dbarena exports, generated from the records that make it
(records.py), so that the documented shape cannot drift from the code: `results --json`
(AnalysedPoint.as_json), `results --summary --json` (LevelSummary.as_json), `compare
--json` (LevelComparison.as_json), `history --json` (stats/history.History.as_dict) and
the report's JSON (`report -o FILE.json`: report/data.Report.as_json). docs/schema/ holds
them as files; a test regenerates them and checks every export of a real store against them.

A field's JSON type follows its Python annotation: `float | None` is a number or null,
`list[str]` an array of strings, the records' `JSON` alias any JSON value (a document at
the store's edge: options, facts, a configuration key). A field a record leaves out of
its JSON (a private one, or one a row has only in some cases) is not required.
"""

from __future__ import annotations

import types
import typing
from dataclasses import fields
from typing import Any, ForwardRef, Mapping, Union

from dbarena.records import JSON, AnalysedPoint, JSONObject, LevelComparison, LevelSummary

__all__ = ["VERSION", "EXPORTS", "DOCUMENTS", "schema", "of_record"]

# Bumped when an export changes shape in a way a reader must know: a field removed,
# renamed or retyped (a field added keeps the version: readers ignore what they do not know).
VERSION = 1
BASE = "https://dbarena.dev/schema"  # an identifier, not a location: nothing is fetched from it

_SCALARS: dict[Any, str] = {type(None): "null", bool: "boolean", int: "integer", float: "number", str: "string"}
_JSON_MEMBERS = {type(None), bool, int, float, str}


def _is_json_value(args: tuple[Any, ...]) -> bool:
    """The records' JSON alias, as typing resolves it: a union of every JSON kind."""
    kinds = {typing.get_origin(a) or a for a in args}
    return _JSON_MEMBERS <= kinds and {list, dict} <= kinds


def _type(hint: Any) -> JSONObject:
    if hint in _SCALARS:
        return {"type": _SCALARS[hint]}
    if isinstance(hint, ForwardRef):  # (inside the JSON alias: any JSON value)
        return {}
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (Union, types.UnionType):
        if _is_json_value(args):
            return {}
        members = [_type(a) for a in args]
        simple: list[JSON] = [m["type"] for m in members if set(m) == {"type"} and isinstance(m["type"], str)]
        if len(simple) == len(members):
            return {"type": simple}
        return {"anyOf": list(members)}
    if origin is list:
        return {"type": "array", "items": _type(args[0])}
    if origin is dict:
        return {"type": "object", "additionalProperties": _type(args[1])}
    raise TypeError(f"no JSON type for {hint!r}")


def of_record(record: type, *, leave_out: frozenset[str] = frozenset(),
              optional: frozenset[str] = frozenset(), renamed: Mapping[str, str] | None = None,
              nested: Mapping[str, JSONObject] | None = None, added: Mapping[str, JSONObject] | None = None
              ) -> JSONObject:
    """The schema of one record's JSON object: its fields but `leave_out`, each
    required but those in `optional`; `renamed`: a field's name in the JSON where it
    differs; `nested`: the schema of a field whose value is another record's JSON (or
    whose annotation says less than its JSON does); `added`: what the JSON has besides
    the fields (a figure derived from them)."""
    # (JSON named for a record's module that imports only JSONObject, whose alias names it.)
    hints = typing.get_type_hints(record, localns={"JSON": JSON})
    names = [f.name for f in fields(record) if f.name not in leave_out]
    renamed, nested = renamed or {}, nested or {}
    properties: JSONObject = {renamed.get(name, name): nested[name] if name in nested else _type(hints[name])
                              for name in names}
    properties.update(added or {})
    required: list[JSON] = [renamed.get(name, name) for name in names if name not in optional]
    required += list((added or {}).keys())
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}


def _array_of(name: str, title: str, item: JSONObject) -> JSONObject:
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": f"{BASE}/v{VERSION}/{name}.json",
            "title": title, "type": "array", "items": item}


# A profiled point's profile (--profile), printed only where there is one.
PROFILE: JSONObject = {
    "type": "object", "additionalProperties": False, "required": ["samples", "top", "frequency_hz", "symbols"],
    "properties": {"samples": {"type": "integer"}, "frequency_hz": {"type": "number"}, "symbols": {"type": "string"},
                   "top": {"type": "array", "items": {
                       "type": "object", "additionalProperties": False, "required": ["function", "share"],
                       "properties": {"function": {"type": "string"}, "share": {"type": "number"}}}}}}

# compare's functions whose time per transaction changed most (profiles.Change.as_json).
PROFILE_CHANGES: JSONObject = {
    "type": "array", "items": {
        "type": "object", "additionalProperties": False,
        "required": ["function", "a_us_per_tx", "b_us_per_tx", "change_us_per_tx"],
        "properties": {"function": {"type": "string"}, "a_us_per_tx": {"type": "number"},
                       "b_us_per_tx": {"type": "number"}, "change_us_per_tx": {"type": "number"}}}}

# A pooled profile's top functions in the report's JSON (report/levelprofiles.LevelProfile).
POOL_TOP: JSONObject = {
    "type": "object", "additionalProperties": False, "required": ["function", "share", "us_per_tx"],
    "properties": {"function": {"type": "string"}, "share": {"type": "number"}, "us_per_tx": {"type": "number"}}}

# stats/efficiency.Difference.as_json: the cost per transaction two sides differ in most.
COST_DIFFERENCE: JSONObject = {
    "type": "object", "additionalProperties": False, "required": ["figure", "a", "b", "p_value"],
    "properties": {"figure": {"type": "string"}, "a": {"type": "number"}, "b": {"type": "number"},
                   "p_value": {"type": ["number", "null"]}}}

# Export -> (the command that prints it, the schema of its items).
EXPORTS: dict[str, tuple[str, JSONObject]] = {
    # (--slo's fields are printed only where they hold something: a closed-loop point has no
    # target_tps, a group without a search no capacity, a closed-loop row no slo.)
    "results": ("dbarena results --json", of_record(AnalysedPoint, leave_out=frozenset({"histogram",
                                                                                       "series_label", "slo"}),
                                                    optional=frozenset({"target_tps", "profile"}),
                                                    nested={"profile": PROFILE})),
    "results-summary": ("dbarena results --summary --json",
                        of_record(LevelSummary, leave_out=frozenset({"estimate", "series_label", "interference",
                                                                     "capacity_estimate", "capacity_interference",
                                                                     "efficiency_sessions", "at_rate"}),
                                  optional=frozenset({"target_tps", "capacity", "efficiency"}))),
    # A level that is not comparable has no ratio, and without one no interval's terms.
    "compare": ("dbarena compare A B --json",
                of_record(LevelComparison, optional=frozenset({"unverified", "log_se", "log_df", "slo", "a_efficiency",
                                                               "b_efficiency", "profile_changes", "variant",
                                                               "cost_difference", "offered_tps"}),
                          nested={"profile_changes": PROFILE_CHANGES, "cost_difference": COST_DIFFERENCE})),
}


def _history() -> JSONObject:
    """`history --json`: {"series": [...]}, each series with its runs and change points
    (stats/history.py's records, as their as_dict writes them)."""
    from dbarena.stats.history import Cause, ChangePoint, RunValue, Series

    facts: JSONObject = {"type": "object", "additionalProperties": {"type": ["string", "null"]}}
    run = of_record(RunValue, renamed={"run_id": "run"}, nested={"environment": facts})
    cause = of_record(Cause, renamed={"run_id": "run"})
    change = of_record(ChangePoint, renamed={"run_id": "run"},
                       nested={"causes": {"type": "array", "items": cause}})
    series = of_record(Series, nested={"runs": {"type": "array", "items": run},
                                       "change_points": {"type": "array", "items": change}},
                       added={"lower_is_better": {"type": "boolean"}}, optional=frozenset({"offered_tps"}))
    return {"type": "object", "properties": {"series": {"type": "array", "items": series}},
            "required": ["series"], "additionalProperties": False}


def _report() -> JSONObject:
    """The report's JSON: what was asked (labels, baseline, --at-threads), the decisions
    (each label against the baseline per engine and workload, and across workloads), one
    row per label x engine x workload x threads, and each engine x workload section's
    ranking, USL fits and cheapest label (report/data.py's records, as their as_json
    writes them; stats/decision.py's Decision as its as_dict)."""
    from dbarena.report.curves import ClosedLoop, Curve, CurvePoint
    from dbarena.report.data import Cheapest, Ranking, Report, Section
    from dbarena.report.levelprofiles import LevelProfile, ProfileDifference
    from dbarena.report.levels import CAPACITY_FIELDS, PUBLIC_FIELDS, LevelRow
    from dbarena.report.ratelevels import RateLevel
    from dbarena.report.scaling import UslFit
    from dbarena.stats import verdicts
    from dbarena.stats.decision import Decision, LevelRatio

    def array(item: JSONObject) -> JSONObject:
        return {"type": "array", "items": item}

    words: list[JSON] = [verdicts.FASTER, verdicts.SLOWER, verdicts.SAME, verdicts.INCONCLUSIVE,
                         verdicts.NO_VERDICT, verdicts.NOT_COMPARABLE]
    # (--slo's fields are exported only where they hold something, as in the other exports:
    # a decision of closed-loop throughput has no slo, a level without a search no
    # capacity, a section without one no curves.)
    decision = array(of_record(Decision, leave_out=frozenset({"log_se", "log_df"}), optional=frozenset({"slo", "offered_tps"}),
                               nested={"verdict": {"type": "string", "enum": words},
                                       "levels": array(of_record(LevelRatio))}))
    # A row exports its public figures, its warnings' codes joined by ";" and every figure
    # over its repeats (stats/repeats.OverRepeats.as_dict, by figure).
    # Its costs per transaction where known (stats/efficiency.FIGURES' names, each a number).
    exported = {*PUBLIC_FIELDS, *CAPACITY_FIELDS, "warnings", "over_repeats", "efficiency"}
    row = of_record(LevelRow, leave_out=frozenset(f.name for f in fields(LevelRow) if f.name not in exported),
                    optional=frozenset({*CAPACITY_FIELDS, "efficiency"}),
                    nested={"warnings": {"type": "string"},
                            "efficiency": {"type": "object", "additionalProperties": {"type": "number"}}})
    closed = of_record(ClosedLoop, leave_out=frozenset({"point_ids"}))
    curve = of_record(Curve, nested={
        "points": array(of_record(CurvePoint, leave_out=frozenset({"point_ids"}))),
        "closed": {"anyOf": [closed, {"type": "null"}]},
        # LevelSummary.capacity: stats/capacity.Capacity.as_json
        "capacity": {"anyOf": [{"type": "object"}, {"type": "null"}]}})
    cheapest = of_record(Cheapest, optional=frozenset({"currencies"}),
                         nested={"currencies": array({"type": "string"})})
    section = of_record(Section, leave_out=frozenset({"labels", "rows", "series"}), optional=frozenset({"curves"}),
                        nested={
        "curves": array(curve),
        "ranking": array(of_record(Ranking)),
        "usl": {"type": "object", "additionalProperties": of_record(UslFit, renamed={"lambda_": "lambda"})},
        "cheapest": {"anyOf": [cheapest, {"type": "null"}]}})
    # Where a level was offered a fixed rate (--rate): report/ratelevels.py's rows (a
    # report without one has none).
    out = of_record(Report, leave_out=frozenset({"provenance"}), optional=frozenset({"rate_levels"}),
                    nested={"decisions": decision, "overall": decision, "rows": array(row),
                            "sections": array(section), "rate_levels": array(of_record(RateLevel))})
    # Where a level was profiled (--profile): each label's pooled profile a level and
    # each label's against the baseline's (report/levelprofiles.py); a report without
    # profiles has neither.
    properties = out["properties"]
    assert isinstance(properties, dict)
    properties["profiles"] = array(of_record(LevelProfile, nested={"top": array(POOL_TOP)}))
    properties["profile_changes"] = array(of_record(ProfileDifference, nested={"changes": PROFILE_CHANGES}))
    return out


# Exports that are one JSON object rather than an array of records: name -> (command, schema).
DOCUMENTS: dict[str, tuple[str, typing.Callable[[], JSONObject]]] = {
    "history": ("dbarena history --json", _history),
    "report": ("dbarena report -o FILE.json", _report),
}


def schema(name: str) -> JSONObject:
    """The whole schema of one export (a key of EXPORTS or DOCUMENTS)."""
    if name in DOCUMENTS:
        command, make = DOCUMENTS[name]
        return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": f"{BASE}/v{VERSION}/{name}.json",
                "title": f"{command} (dbarena export schema version {VERSION})", **make()}
    command, item = EXPORTS[name]
    return _array_of(name, f"{command} (dbarena export schema version {VERSION})", item)
