"""A bundle's manifest.json as typed records, and its JSON Schema made from them.

publish.py builds a `Manifest` of these records and writes its JSON; the schema shipped
in the package (exchange/schema/manifest-1.json, JSON Schema draft 2020-12) is what
`schema()` makes of the same records, with a run as the store keeps it
(records.StoredRun) and a point's result as `results --json` prints it
(records.AnalysedPoint, report/schemas.py's "results" item). One source of truth: a
test regenerates the file and fails where a record gained, lost or retyped a field the
file does not say (tests/unit/test_exchange_manifest.py).

`verify` (and so `import`, `site`, `run --like`) checks every manifest against the
schema before anything else reads it, and refuses the first field that does not fit in
one line naming where it is (`check`).

`estimator_version` is the stats.analysis.ESTIMATOR_VERSION the points' derived figures
(steady state, system view, warnings, bound ...) were computed with: `verify` compares
them exactly where it is its own, and recomputes them and says how many differ where it
is another (docs/exchange.md). A bundle published before it was recorded has none: the
schema holds it optional, so that such a bundle still reads.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from dataclasses import dataclass, fields
from importlib import resources
from typing import TYPE_CHECKING, Any

from dbarena.records import JSON, JSONObject, StoredRun

if TYPE_CHECKING:
    from jsonschema.exceptions import ValidationError

__all__ = ["StudyText", "Price", "PointEntry", "Manifest", "RECORDS", "SCHEMA_FILE", "schema", "shipped",
           "check", "ManifestProblem"]

# The shipped schema's file in the package, by the bundle format version it describes.
SCHEMA_FILE = "schema/manifest-1.json"
# A point's files, by the key the manifest names each with (publish.py's names).
POINT_FILES = ("stdout", "stderr", "samples", "system_samples", "latency_histogram", "server_series", "profile")


class ManifestProblem(ValueError):
    """A manifest that does not fit the schema: one line naming the first field that does not."""


@dataclass(frozen=True, slots=True)
class StudyText:
    """A study the runs were made from, as the store keeps it (its text verbatim)."""

    sha256: str
    name: str
    source: str
    text: str


@dataclass(frozen=True, slots=True)
class Price:
    """A priced run's price: what the run stored, where it came from, the day it held."""

    run: str | None  # the run's UUID
    per_hour: float
    currency: str
    per_month: float | None
    source: str
    date: str


@dataclass(frozen=True, slots=True)
class PointEntry:
    """A measured point: its record as `results --json` prints it, its command (passwords
    masked) and exit status, and its files in the bundle (POINT_FILES -> member name)."""

    result: JSONObject
    command: list[str]
    exit_code: int | None
    files: dict[str, str]


@dataclass(frozen=True, slots=True)
class Manifest:
    format: str
    format_version: int
    published_by: str
    signed: bool
    date: str
    runs: list[StoredRun]
    studies: list[StudyText]
    prices: list[Price]
    points: list[PointEntry]
    files: dict[str, str]  # member name -> sha256
    sha256sums: str  # the sha256 of SHA256SUMS
    # The estimator the points' derived figures were computed with (analysis.ESTIMATOR_VERSION).
    estimator_version: int

    def as_json(self) -> JSONObject:
        def record(value: Any) -> JSONObject:
            return {f.name: getattr(value, f.name) for f in fields(value)}
        out = record(self)
        for name in ("runs", "studies", "prices", "points"):
            out[name] = [record(item) for item in getattr(self, name)]
        return out


# Each record, and where its objects are in a manifest (what the schema test walks).
RECORDS: dict[str, type] = {"": Manifest, "runs[]": StoredRun, "studies[]": StudyText, "prices[]": Price,
                            "points[]": PointEntry}


def schema() -> JSONObject:
    """The manifest's JSON Schema, from the records (report/schemas.py's of_record, as
    every export's schema is made)."""
    from dbarena.exchange import bundle
    from dbarena.report.schemas import BASE, EXPORTS, of_record

    sha256: JSONObject = {"type": "string", "pattern": "^[0-9a-f]{64}$"}
    member: JSONObject = {"type": "string", "pattern": "^points/[0-9]{1,19}/[a-z_-]{1,40}\\.(txt|csv|json)$"}
    point = of_record(PointEntry, nested={
        "result": EXPORTS["results"][1],
        "files": {"type": "object", "propertyNames": {"enum": list(POINT_FILES)}, "additionalProperties": member}})
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": f"{BASE}/bundle/v{bundle.FORMAT_VERSION}/manifest.json",
        "title": f"manifest.json of a dbarena bundle, format version {bundle.FORMAT_VERSION} (docs/exchange.md)",
        **of_record(Manifest, optional=frozenset({"estimator_version"}), nested={
            "format": {"const": bundle.FORMAT},
            "format_version": {"const": bundle.FORMAT_VERSION},
            "runs": {"type": "array", "items": of_record(StoredRun)},
            "studies": {"type": "array", "items": of_record(StudyText, nested={"sha256": sha256})},
            "prices": {"type": "array", "items": of_record(Price)},
            "points": {"type": "array", "items": point},
            "files": {"type": "object", "propertyNames": member, "additionalProperties": sha256},
            "sha256sums": sha256,
            "estimator_version": {"type": "integer", "minimum": 1}}),
    }


def shipped() -> str:
    """The schema file shipped in the package, as text."""
    return (resources.files("dbarena.exchange") / SCHEMA_FILE).read_text()


@functools.cache
def _validator() -> Any:
    # Made once per process: `dbarena site` checks a thousand manifests.
    from jsonschema import Draft202012Validator

    return Draft202012Validator(json.loads(shipped()))


def _where(path: Sequence[Any]) -> str:
    """A path in the manifest as a reader writes it: points[3].result.tps."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{_name(part)}" if out else _name(part))
    return out or "the manifest"


def _name(text: Any) -> str:
    """A key from the document (hostile): escaped as JSON escapes it, and cut short."""
    said = json.dumps(str(text), ensure_ascii=True)[1:-1]
    return said if len(said) <= 60 else said[:57] + "..."


def _shown(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=True, default=str)
    return text if len(text) <= 40 else text[:37] + "..."


def _said(error: ValidationError) -> str:
    """One error as a line naming the field (never the whole of a hostile value)."""
    where, value, kind = _where(error.absolute_path), error.instance, error.validator
    if "propertyNames" in error.schema_path:  # (the instance is then the key itself)
        return f"{where} names a file {_shown(value)} no bundle has"
    if kind == "required" and isinstance(value, dict):
        missing = [n for n in error.validator_value if n not in value]
        return f"{where}.{missing[0]} is missing" if where != "the manifest" else f"{missing[0]} is missing"
    if kind == "additionalProperties" and isinstance(value, dict):
        known = error.schema.get("properties", {})
        extra = sorted(str(n) for n in value if n not in known)
        field = f"{where}.{_name(extra[0])}" if where != "the manifest" else _name(extra[0])
        return f"{field} is no field of a manifest"
    if kind == "type":
        wanted = error.validator_value if isinstance(error.validator_value, list) else [error.validator_value]
        return f"{where} is {_shown(value)}, not {' or '.join(map(str, wanted))}"
    if kind in ("const", "enum"):
        return f"{where} is {_shown(value)}, not one of {_shown(error.validator_value)}"
    return f"{where} is {_shown(value)}, which does not fit ({kind})"


def check(document: JSON) -> None:
    """The manifest against the shipped schema: a ManifestProblem naming the first field
    (in the manifest's order: a key's path, the points by index) that does not fit."""
    errors = list(_validator().iter_errors(document))
    if errors:
        first = min(errors, key=lambda e: [(0, p, "") if isinstance(p, int) else (1, 0, str(p))
                                           for p in e.absolute_path])
        raise ManifestProblem(_said(first))
