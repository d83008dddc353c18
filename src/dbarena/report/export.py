"""CSV and JSON: one record per label x engine x workload x threads, every figure.

Both are safe to open wherever they go: JSON is always valid JSON (a figure that is
not finite, which a store may hold from an older import, is null: JSON has no
Infinity or NaN), and a CSV text cell that a spreadsheet would run as a formula (one
starting with =, +, -, @, a tab or a carriage return: OWASP's "CSV injection" rule) is
written with a leading ' so that it shows as text; control characters are dropped.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Sequence
from typing import Any

from dbarena.limits import printable
from dbarena.records import JSON, JSONObject, json_object
from dbarena.report.data import PUBLIC_FIELDS, Report
from dbarena.report.levelprofiles import LevelProfile, ProfileDifference
from dbarena.report.levels import CAPACITY_FIELDS
from dbarena.stats import efficiency, repeats


# Significant digits of a derived figure in CSV: sums and means of printed figures carry
# binary noise (2885.7799999999997 for 2885.78) that no tool printed and no reader wants;
# 12 digits keep every digit a benchmark tool prints (pgbench: 6 decimals of a TPS).
DIGITS = 12


# What makes a spreadsheet (Excel, LibreOffice, Google Sheets) read a cell as a formula
# or a command: OWASP's list for CSV injection.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def neutral(text: str) -> str:
    """A CSV text cell a spreadsheet shows as text: a leading ' before a formula's first
    character (the spreadsheet hides the quote), control characters dropped."""
    return ("'" if text.startswith(FORMULA_STARTS) else "") + printable(text)


def _cell(value: object) -> object:
    """A CSV cell: a float without binary noise, and a whole one without '.0' (a mean
    count of transactions, 14431.0, is written 14431); one not finite left empty, as
    a figure not there; text neutralised (neutral)."""
    if isinstance(value, float):
        if not math.isfinite(value):
            return ""
        return format(value, f".{DIGITS}g") if abs(value) >= 1e-4 or value == 0 else repr(value)
    if isinstance(value, str):
        return neutral(value)
    return value


def finite(value: object) -> object:
    """The value with every float that is not finite as None (JSON's null), inside
    lists and objects too."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(v) for v in value]
    return value


def dumps(value: object, **options: Any) -> str:
    """JSON that is always JSON: non-finite figures as null, and allow_nan=False so that
    one slipping past raises here instead of printing Infinity or NaN."""
    return json.dumps(finite(value), allow_nan=False, **options)


def _plain(value: object) -> object:
    """JSON without binary noise: floats to DIGITS significant digits, inside lists and
    objects too (a JSON reader gets 2885.78, as the CSV has it)."""
    if isinstance(value, float) and math.isfinite(value):
        return float(format(value, f".{DIGITS}g"))
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def to_csv(report: Report) -> str:
    buf = io.StringIO()
    # (--slo's columns only where a level has a capacity: a report without one as before.)
    capacities = CAPACITY_FIELDS if any(level.slo is not None for s in report.sections for level in s.rows) else ()
    # (The costs per transaction likewise, only where a level has one.)
    costs = tuple(efficiency.FIGURES) if any(level.efficiency for s in report.sections for level in s.rows) else ()
    writer = csv.DictWriter(buf, fieldnames=[*PUBLIC_FIELDS, *capacities, "warnings", *repeats.FLAT_FIELDS, *costs],
                            lineterminator="\n", restval="")
    writer.writeheader()
    for section in report.sections:
        for level in section.rows:
            row = level.as_json()
            del row["over_repeats"]  # as flat columns, below
            row.update(json_object(row.pop("efficiency", None)))
            writer.writerow({k: _cell(v) for k, v in {**row, **repeats.flat(level.over_repeats)}.items()})
    return buf.getvalue()


def _codes(warnings: JSON) -> str:
    """A row's warnings (steadystate.Flag.as_dict of each) as their codes."""
    return ";".join(str(json_object(w).get("code")) for w in (warnings if isinstance(warnings, list) else []))


def rows_csv(rows: list[JSONObject], summary: bool = False) -> str:
    """`results --csv`: a record per point (or summary), every column of `results --json`
    in its order; nested facts (params, config, details ...) as JSON text, warnings as their
    codes; a summary's figures over its repeats as flat columns (repeats.flat)."""
    records: list[dict[str, object]] = []
    for row in rows:
        record: dict[str, object] = {
            k: (_codes(v) if k == "warnings" else
                json.dumps(finite(v), sort_keys=True) if isinstance(v, (dict, list)) else v)
            for k, v in row.items() if k != "over_repeats"}
        if summary:
            over = json_object(row.get("over_repeats"))
            record.update(repeats.flat({figure: json_object(figures) for figure, figures in over.items()}))
        records.append(record)
    fields = list(dict.fromkeys(k for r in records for k in r))
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=fields, lineterminator="\n")
    writer.writeheader()
    writer.writerows({k: _cell(v) for k, v in r.items()} for r in records)
    return buf.getvalue()


def to_json(report: Report, level_profiles: Sequence[LevelProfile] = (),
            profile_changes: Sequence[ProfileDifference] = ()) -> str:
    """The report's JSON (Report.as_json; its shape: docs/schema/report.schema.json),
    figures without binary noise; where a level was profiled, its pooled profile
    (`profiles`) and each label's against the baseline's (`profile_changes`:
    report/levelprofiles.py), a report without profiles as before."""
    out = report.as_json()
    if level_profiles:
        out["profiles"] = [p.as_json() for p in level_profiles]
        out["profile_changes"] = [d.as_json() for d in profile_changes]
    return dumps(_plain(out), indent=2)
