"""CSV and JSON: one record per label x engine x workload x threads, every figure."""

from __future__ import annotations

import csv
import io
import json

from dbarena.report.data import PUBLIC_FIELDS, Report, public_rows


# Significant digits of a derived figure in CSV: sums and means of printed figures carry
# binary noise (2885.7799999999997 for 2885.78) that no tool printed and no reader wants;
# 12 digits keep every digit a benchmark tool prints (pgbench: 6 decimals of a TPS).
DIGITS = 12


def _cell(value: object) -> object:
    """A CSV cell: a float without binary noise, and a whole one without '.0' (a mean
    count of transactions, 14431.0, is written 14431)."""
    if isinstance(value, float) and value == value and abs(value) != float("inf"):
        return format(value, f".{DIGITS}g") if abs(value) >= 1e-4 or value == 0 else repr(value)
    return value


def _plain(value: object) -> object:
    """JSON without binary noise: floats to DIGITS significant digits, inside lists and
    objects too (a JSON reader gets 2885.78, as the CSV has it)."""
    if isinstance(value, float) and value == value and abs(value) != float("inf"):
        return float(format(value, f".{DIGITS}g"))
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def to_csv(report: Report) -> str:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=[*PUBLIC_FIELDS, "warnings"], lineterminator="\n")
    writer.writeheader()
    writer.writerows({k: _cell(v) for k, v in row.items()} for row in public_rows(report))
    return buf.getvalue()


def to_json(report: Report) -> str:
    return json.dumps(_plain({
        "labels": report.labels, "baseline": report.baseline, "at_threads": report.at_threads,
        "decisions": [d.as_dict() for d in report.decisions],
        "overall": [d.as_dict() for d in report.overall],
        "rows": public_rows(report),
        "sections": [{"engine": s.engine, "workload": s.workload, "metric": s.metric, "ranking": s.ranking,
                      "usl": s.usl, "cheapest": s.cheapest} for s in report.sections],
    }), indent=2)
