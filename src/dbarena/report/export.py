"""CSV and JSON: one record per label x engine x workload x threads, every figure."""

from __future__ import annotations

import csv
import io
import json

from dbarena.report.data import PUBLIC_FIELDS, Report, public_rows


def to_csv(report: Report) -> str:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=[*PUBLIC_FIELDS, "warnings"], lineterminator="\n")
    writer.writeheader()
    writer.writerows(public_rows(report))
    return buf.getvalue()


def to_json(report: Report) -> str:
    return json.dumps({
        "labels": report.labels, "baseline": report.baseline, "at_threads": report.at_threads,
        "rows": public_rows(report),
        "sections": [{"engine": s.engine, "workload": s.workload, "metric": s.metric, "ranking": s.ranking,
                      "usl": s.usl, "cheapest": s.cheapest} for s in report.sections],
    }, indent=2)
