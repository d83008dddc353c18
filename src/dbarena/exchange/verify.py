"""`dbarena verify`: a bundle checked part by part, the first part that does not hold
refused in one line (BundleProblem).

1. It reads as a bundle: a tar of plain files with a bundle's names, none twice, a
   manifest of this format that fits its JSON Schema (manifest.py), every field of the
   type the records it was written from give it.
2. The signature over manifest.json, with the key it names (sshsig.py); whose key that
   is, from an allowed-signers file where one is given (then an unsigned bundle, or a key
   the file does not allow, is refused). An unsigned bundle must say so in its manifest.
3. The files are the manifest's: none missing, none extra, each with its sha256, and
   SHA256SUMS the list of them whose own sha256 the manifest holds.
4. The file is byte for byte what dbarena writes of those files (bundle.canonical): no
   byte of a tar header or of the padding changed either.
5. No password is spelled out anywhere (masking.py's forms).
6. Every figure recomputed: each point's raw output read again by the importer
   (importers/reading.py, the parser `dbarena import` uses) and its latency histogram
   read again must give the figures the manifest holds; then the bundle's rows, stored
   in a throwaway store, read by stats.analysis as `results` reads any store, must give
   each point's record exactly (steady state, system view, warnings, the bound derived
   from its server series and system samples, and the profile's samples and top
   functions, made again from its folded stacks ...); and each server series file's
   bound and evidence must be the ones derived from its series.

The derived figures (a record's fields that stats.analysis computes, not the point's
stored ones, and a server series file's bound and evidence) depend on the estimator
(analysis.ESTIMATOR_VERSION), which the manifest records (`estimator_version`). Where it
is this dbarena's, any difference refuses the bundle. Where it is another, or none is
recorded (a bundle published before it was), a difference is no tampering: the figures
are recomputed with this estimator, the differences kept (`Verified.differences`) and
said in one line, and the bundle holds if nothing else fails. Everything else is checked
as for the same version: signature, files, bytes, passwords, the tool's figures read
again from its output, every stored field. Claiming an old version gains a forger
nothing: `import`, `site` and `run --like` never read a derived figure from the
manifest, they read the bundle's raw rows as any store is read, and so show the
recomputed figures whatever the manifest says; only the words of `verify` differ.
"""

from __future__ import annotations

import functools
import json
import math
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from dbarena.errors import StoreError, StoreUnwritable
from dbarena import inbound
from dbarena.exchange import bundle, sshsig
from dbarena.exchange import manifest as manifest_schema
from dbarena.exchange.bundle import BundleProblem
from dbarena.exchange.publish import SERIES_FILES, first_unmasked_line
from dbarena.importers import reading
from dbarena.lifecycle import state
from dbarena.limits import name_problem, quoted
from dbarena.model import StudyRecord
from dbarena.records import JSON, STORED_FIELDS, AnalysedPoint, JSONObject, StoredPoint, StoredRun
from dbarena.stats import analysis
from dbarena.stats.latency import Latencies
from dbarena.stats.profiles import FoldedProblem
from dbarena.store.database import Store
from dbarena.store.edge import Edge
from dbarena.records import ServerRecord
from dbarena.store.verbatim import SeriesRows, Verbatim, series_columns
from dbarena.workloads import WORKLOADS

__all__ = ["Verified", "Difference", "refused_json", "json_schema", "verify", "read_bundle", "Bundle",
           "throwaway_store", "FIGURES", "DERIVED"]

# The figures a tool prints, as a point record names them: what the importer must read
# again from the raw output, exactly.
FIGURES = ("tps", "transactions", "qps", "queries", "failed_transactions", "retried_transactions", "retries",
           "errors", "reconnects", "latency_avg_ms", "latency_stddev_ms", "latency_min_ms", "latency_max_ms",
           "latency_p50_ms", "latency_p90_ms", "latency_p95_ms", "latency_p99_ms", "latency_p999_ms",
           "initial_connection_ms", "run_avg_s", "run_min_s", "run_max_s")
_PERCENTILES = {"latency_p50_ms": "p50", "latency_p90_ms": "p90", "latency_p95_ms": "p95",
                "latency_p99_ms": "p99", "latency_p999_ms": "p999"}
# The fields of a point's record that stats.analysis derives from what the store keeps
# (and caches by ESTIMATOR_VERSION): another estimator may give others. The rest of a
# record is what the store keeps of the point (STORED_FIELDS), the same in every version.
DERIVED = frozenset(f.name for f in fields(AnalysedPoint)) - frozenset(STORED_FIELDS)
# The tools whose output the importer reads.
_READABLE = ("pgbench", "sysbench", "mysqlslap")


@dataclass
class Bundle:
    """A bundle read (step 1): its members, manifest and where it came from."""

    name: str
    data: bytes
    members: dict[str, bytes]
    manifest: JSONObject
    mtime: int

    def text(self, member: str) -> str:
        return self.members[member].decode(errors="replace")

    @functools.cached_property
    def figure_lines(self) -> dict[int, dict[str, int]]:
        """Each point's record's keys by their line in manifest.json (_figure_lines)."""
        return _figure_lines(self.text(bundle.MANIFEST))


@dataclass(frozen=True, slots=True)
class Difference:
    """A derived figure of a bundle published with another estimator that this one's
    recomputation does not give: the point, the figure, both values and where the
    published one is (manifest.json:LINE, or a point's server series file)."""

    point: int
    figure: str
    published: JSON
    recomputed: JSON
    where: str

    def as_json(self) -> JSONObject:
        return {"point": self.point, "figure": self.figure, "published": self.published,
                "recomputed": self.recomputed, "where": self.where}


@dataclass
class Verified:
    """What verify found: the signer (None where unsigned), and how much was checked;
    the estimator the manifest says its figures were derived with (None where it says
    none), how many derived figures were compared, and, where that estimator is another,
    those that differ from this one's."""

    bundle: Bundle
    signed: bool
    key: str | None = None  # the key's fingerprint
    principals: list[str] = field(default_factory=list)  # whose, per the allowed-signers file
    files: int = 0
    points: int = 0
    from_output: int = 0  # points whose printed figures were read again from their raw output
    not_readable: list[str] = field(default_factory=list)  # workloads whose output the importer cannot read
    published_estimator: int | None = None
    derived: int = 0  # derived figures compared
    differences: list[Difference] = field(default_factory=list)

    @property
    def recomputed(self) -> bool:
        """The figures were published with another estimator (or an unrecorded one): they
        were recomputed with this one, and a difference is said, not refused."""
        return self.published_estimator != analysis.ESTIMATOR_VERSION

    def recomputation(self) -> str | None:
        """What was recomputed, None where the estimator is this dbarena's."""
        if not self.recomputed:
            return None
        published = "none recorded" if self.published_estimator is None else str(self.published_estimator)
        return (f"figures recomputed with estimator {analysis.ESTIMATOR_VERSION}; published with {published}: "
                f"{len(self.differences)} of {self.derived} differ")

    def recomputed_line(self) -> str | None:
        """The line saying so, None where the estimator is this dbarena's."""
        said = self.recomputation()
        if said is None:
            return None
        listed = "; `verify --json` lists them" if self.differences else ""
        return f"{self.bundle.name}: {said} (the recomputed ones are what import and site show{listed})"

    def lines(self) -> list[str]:
        """What `verify` and `import` say of the bundle: the summary, and the recomputed
        line where there is one."""
        return [self.summary(), *filter(None, [self.recomputed_line()])]

    def as_json(self) -> JSONObject:
        """The bundle as `verify --json` prints it."""
        return {"bundle": self.bundle.name, "verified": True, "error": None, "signed": self.signed,
                "key": self.key, "principals": list[JSON](self.principals), "files": self.files,
                "points": self.points, "runs": len(self.runs),
                "estimator": {"published": self.published_estimator, "recomputed_with": analysis.ESTIMATOR_VERSION,
                              "recomputed": self.recomputed, "figures": self.derived,
                              "differ": [d.as_json() for d in self.differences]}}

    @property
    def runs(self) -> list[JSONObject]:
        return [r for r in _list(self.bundle.manifest, "runs") if isinstance(r, dict)]

    def summary(self) -> str:
        if not self.signed:
            who = "UNSIGNED (published with --unsigned: nothing ties it to anyone)"
        elif self.principals:
            who = f"signed by {', '.join(self.principals)} (ED25519 key {self.key})"
        else:
            who = f"signed by ED25519 key {self.key} (whose: give --allowed-signers)"
        checked = f"{self.points} point(s) of {len(self.runs)} run(s)"
        also = ""
        if self.not_readable:
            also = (f"; {self.points - self.from_output} point(s) of {', '.join(sorted(set(self.not_readable)))} "
                    "checked from their series only (the importer does not read their tool's output)")
        # A run `dbarena import` made of a tool's output: its figures are what the tool
        # printed there, read again here, but nobody measured them with dbarena.
        imported = sum(1 for r in self.runs if r.get("status") == "imported")
        if imported:
            also += (f"; {imported} run(s) imported, not measured by dbarena (a tool's output read by "
                     "`dbarena import`)")
        equal = "every figure recomputed from the raw outputs and series equals the manifest's" \
            if not self.recomputed else ("every figure read again from the raw outputs equals the manifest's, the "
                                         "derived ones recomputed from the series")
        return (f"{self.bundle.name}: verified: {who}; {self.files} file(s) match their sha256; {checked}: "
                f"{equal}{also}")


def refused_json(name: str, error: str) -> JSONObject:
    """A bundle that did not verify as `verify --json` prints it: Verified.as_json's keys,
    the reason in `error`, nothing else known."""
    return {"bundle": name, "verified": False, "error": error, "signed": None, "key": None, "principals": [],
            "files": None, "points": None, "runs": None, "estimator": None}


def json_schema() -> JSONObject:
    """The JSON Schema of `verify --json` (docs/schema/verify.schema.json, which a test
    regenerates): an object per bundle (Verified.as_json, or refused_json), with the
    estimator its figures were published with and each derived figure that differs from
    this dbarena's (Difference.as_json)."""
    from dbarena.report.schemas import BASE, VERSION, of_record

    def maybe(kind: str) -> JSONObject:
        return {"type": [kind, "null"]}

    estimator: JSONObject = {
        "type": "object", "additionalProperties": False,
        "required": ["published", "recomputed_with", "recomputed", "figures", "differ"],
        "properties": {"published": maybe("integer"), "recomputed_with": {"type": "integer"},
                       "recomputed": {"type": "boolean"}, "figures": {"type": "integer"},
                       "differ": {"type": "array", "items": of_record(Difference)}}}
    item: JSONObject = {
        "type": "object", "additionalProperties": False,
        "required": ["bundle", "verified", "error", "signed", "key", "principals", "files", "points", "runs",
                     "estimator"],
        "properties": {"bundle": {"type": "string"}, "verified": {"type": "boolean"}, "error": maybe("string"),
                       "signed": maybe("boolean"), "key": maybe("string"),
                       "principals": {"type": "array", "items": {"type": "string"}}, "files": maybe("integer"),
                       "points": maybe("integer"), "runs": maybe("integer"),
                       "estimator": {"anyOf": [estimator, {"type": "null"}]}}}
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": f"{BASE}/v{VERSION}/verify.json",
            "title": f"dbarena verify --json (dbarena export schema version {VERSION})", "type": "array",
            "items": item}


def _list(obj: Mapping[str, JSON], key: str) -> list[JSON]:
    value = obj.get(key)
    if not isinstance(value, list):
        raise BundleProblem(f"manifest.json: {key!r} is not a list")
    return value


def read_bundle(path: Path) -> Bundle:
    """Step 1: the file read as a bundle."""
    name = str(path)
    try:  # (a FIFO, /dev/zero, a file beyond any bundle: refused before it is read)
        data = inbound.read_bytes(path, bundle.MAX_BUNDLE_BYTES)
    except inbound.Unreadable as exc:
        raise BundleProblem(str(exc)) from None
    members, mtime = bundle.read_tar(name, data)
    if bundle.MANIFEST not in members:
        raise BundleProblem(f"{name}: no manifest.json in it (not a dbarena bundle, or the manifest was removed)")
    manifest = bundle.json_document(f"{name}: manifest.json", members[bundle.MANIFEST])
    if manifest.get("format") != bundle.FORMAT:
        raise BundleProblem(f"{name}: manifest.json is not a dbarena bundle's (format {manifest.get('format')!r})")
    if manifest.get("format_version") != bundle.FORMAT_VERSION:
        raise BundleProblem(f"{name}: a bundle of format version {manifest.get('format_version')!r}, which this "
                            f"dbarena does not read (it reads {bundle.FORMAT_VERSION}): upgrade dbarena")
    try:
        manifest_schema.check(manifest)
    except manifest_schema.ManifestProblem as exc:
        raise BundleProblem(f"{name}: manifest.json does not fit the manifest's schema "
                            f"({manifest_schema.SCHEMA_FILE}): {exc}") from None
    _check_names(name, manifest)
    return Bundle(name, data, members, manifest, mtime)


def _check_names(name: str, manifest: JSONObject) -> None:
    """Every label a bundle brings held to the rule of names a flag or a study is
    (limits.name_problem: a 100,000-character label, ESC, a line break or U+202E would
    reach every table that shows it), and every run one that ended (PUBLISHED_STATUSES):
    a running or interrupted run is no result, and `run --resume` of one imported would
    go on with a stranger's run."""
    for i, run in enumerate(_list(manifest, "runs")):
        if not isinstance(run, dict):
            continue
        label = run.get("label")
        if isinstance(label, str) and (problem := name_problem(label)) is not None:
            raise BundleProblem(f"{name}: manifest.json: runs[{i}].label {quoted(label)} {problem}")
        status = run.get("status")
        if status not in bundle.PUBLISHED_STATUSES:
            raise BundleProblem(f"{name}: manifest.json: runs[{i}] is {quoted(str(status))}, not a run that ended "
                                f"({', '.join(bundle.PUBLISHED_STATUSES)}): only those are published")
    for i, entry in enumerate(_list(manifest, "points")):
        record = entry.get("result") if isinstance(entry, dict) else None
        label = record.get("label") if isinstance(record, dict) else None
        if isinstance(label, str) and (problem := name_problem(label)) is not None:
            raise BundleProblem(f"{name}: manifest.json: points[{i}].result.label {quoted(label)} {problem}")


def verify(path: Path, allowed_signers: Path | None = None) -> Verified:
    """Every check of the module's docstring, in its order; the first that fails is a
    BundleProblem (or sshsig.SignatureProblem) of one line naming the bundle."""
    found = read_bundle(path)
    name, manifest = found.name, found.manifest
    estimator = manifest.get("estimator_version")  # (the schema saw to an integer, where there is one)
    result = Verified(found, signed=bool(manifest.get("signed")),
                      published_estimator=estimator if isinstance(estimator, int) else None)
    # 2. The signature.
    try:
        _signature(found, result, allowed_signers)
    except sshsig.SignatureProblem as exc:
        raise BundleProblem(f"{name}: {exc}") from None
    _files(found, result)
    _bytes(found)
    _no_password(found)
    _figures(found, result)
    return result


def _files(found: Bundle, result: Verified) -> None:
    """Step 3: the files, each as the manifest names it and its sha256, and no other."""
    name, members, manifest = found.name, found.members, found.manifest
    files = manifest.get("files")
    if not isinstance(files, dict) or not all(isinstance(v, str) for v in files.values()):
        raise BundleProblem(f"{name}: manifest.json: 'files' is not a map of names to sha256")
    expected = {bundle.MANIFEST, bundle.SUMS, *((bundle.SIGNATURE,) if result.signed else ()), *files}
    for member in bundle.order(list(expected)):
        if member not in members:
            raise BundleProblem(f"{name}: {member} is missing (manifest.json names it)")
    for member in members:
        if member not in expected:
            raise BundleProblem(f"{name}: {member} is not named by manifest.json (a file added to the bundle)")
    for member, digest in sorted(files.items()):
        if bundle.sha256(members[member]) != digest:
            raise BundleProblem(f"{name}: {member} does not match its sha256 in manifest.json (it was changed)")
    sums = {m: d for m, d in files.items() if isinstance(d, str)}
    if members[bundle.SUMS] != bundle.sums_text(sums) \
            or bundle.sha256(members[bundle.SUMS]) != manifest.get("sha256sums"):
        raise BundleProblem(f"{name}: {bundle.SUMS} is not the list of manifest.json's files and sha256")
    result.files = len(files)


def _bytes(found: Bundle) -> None:
    """Step 4: byte for byte as dbarena writes these files."""
    canonical = bundle.write_tar(found.members, bundle.epoch_of(_text(found.manifest.get("date"))))
    if canonical != found.data:
        at = next((i for i, (a, b) in enumerate(zip(canonical, found.data)) if a != b),
                  min(len(canonical), len(found.data)))
        raise BundleProblem(f"{found.name}: byte {at:,} is not what dbarena writes of these files (a tar header, "
                            "the padding or the file's end was changed)")


def _no_password(found: Bundle) -> None:
    """Step 5: no password spelled out in any file."""
    for member in bundle.order(list(found.members)):
        if (line := first_unmasked_line(found.text(member))) is not None:
            raise BundleProblem(f"{found.name}: {member}:{line}: a password is spelled out there")


def _figures(found: Bundle, result: Verified) -> None:
    """Step 6: every figure read again from the tools' outputs, and every record's
    figures recomputed from the bundle's data as a store holds it; of another estimator,
    a derived figure that differs is said (result.differences), not refused."""
    name = found.name
    points = [p for p in _list(found.manifest, "points")]
    for entry in points:
        _from_output(found, _entry(entry), result)
    with throwaway_store(found) as (db, said):
        recomputed = {p.point_id: json.loads(json.dumps(p.as_json())) for p in analysis.load(db)}
        if said:
            raise BundleProblem(f"{name}: {said[0]}")
    for entry in points:
        record = _record(_entry(entry))
        pid = record.get("point_id")
        mine = recomputed.get(pid) if isinstance(pid, int) else None
        if mine is None or not isinstance(pid, int):
            raise BundleProblem(f"{name}: manifest.json: point {pid} is not one its runs hold")
        for key in sorted(set(mine) | set(record)):
            derived = key in DERIVED
            result.derived += derived
            if not _same(record.get(key), mine.get(key)):
                line = _manifest_line(found, pid, key)
                if derived and result.recomputed:
                    # Another estimator's figure: said, not refused (the module's docstring).
                    result.differences.append(Difference(pid, key, record.get(key), mine.get(key),
                                                         f"manifest.json:{line}"))
                    continue
                source = _source_of(key, _entry(entry))
                raise BundleProblem(f"{name}: manifest.json:{line}: {key} of point {pid} is "
                                    f"{_shown(record.get(key))}, but {_shown(mine.get(key))} recomputed from "
                                    f"{source}")
        _server_bound(found, _entry(entry), pid, mine, result)
    result.points = len(points)


def _server_bound(found: Bundle, entry: JSONObject, pid: int, mine: JSONObject, result: Verified) -> None:
    """A point's server series file says the bound (and its evidence) derived again from
    its series: the store keeps no verdict of its own (_add_point), so a file's that
    differs would be a claim nothing here checked. Derived figures: of another estimator,
    a difference is said (result.differences), not refused."""
    member = _file(found, entry, "server_series")
    if member is None:
        return
    server = bundle.json_document(member, found.members[member])
    system = _file(found, entry, "system_samples")
    for key, figure in (("bound", "bound"), ("evidence", "bound_evidence")):
        result.derived += 1
        if not _same(server.get(key), mine.get(figure)):
            if result.recomputed:
                result.differences.append(Difference(pid, key, server.get(key), mine.get(figure), member))
                continue
            raise BundleProblem(f"{found.name}: {member}: {key} of point {pid} is {_shown(server.get(key))}, but "
                                f"{_shown(mine.get(figure))} recomputed from its record"
                                + (f" and {system}" if system is not None else ""))


def _signature(found: Bundle, result: Verified, allowed_signers: Path | None) -> None:
    """Step 2."""
    members = found.members
    if result.signed and bundle.SIGNATURE not in members:
        raise BundleProblem(f"{found.name}: {bundle.SIGNATURE} is missing (the manifest says the bundle is signed)")
    if not result.signed and bundle.SIGNATURE in members:
        raise BundleProblem(f"{found.name}: manifest.json says the bundle is unsigned, yet it holds "
                            f"{bundle.SIGNATURE}")
    if not result.signed:
        if allowed_signers is not None:
            raise BundleProblem(f"{found.name}: unsigned (published with --unsigned): no signer to find in "
                                f"{allowed_signers}")
        return
    checked = sshsig.verify(members[bundle.SIGNATURE], members[bundle.MANIFEST], bundle.NAMESPACE)
    result.key = sshsig.fingerprint(checked.public_blob)
    if allowed_signers is not None:
        result.principals = sshsig.principals(allowed_signers, checked.public_blob, bundle.NAMESPACE)
        if not result.principals:
            raise BundleProblem(f"{found.name}: signed by ED25519 key {result.key}, which {allowed_signers} does not "
                                f"allow for namespace {bundle.NAMESPACE!r}")


def _text(value: JSON) -> str | None:
    return value if isinstance(value, str) else None


def _entry(value: JSON) -> JSONObject:
    if not isinstance(value, dict):
        raise BundleProblem("manifest.json: a point that is not an object")
    return value


def _record(entry: JSONObject) -> JSONObject:
    record = entry.get("result")
    if not isinstance(record, dict) or not isinstance(record.get("point_id"), int):
        raise BundleProblem("manifest.json: a point without its record (result, point_id)")
    return record


def _file(found: Bundle, entry: JSONObject, key: str) -> str | None:
    """The member holding a point's file `key` (stdout, samples ...), or None."""
    files = entry.get("files")
    name = files.get(key) if isinstance(files, dict) else None
    if name is None:
        return None
    if not isinstance(name, str) or name not in found.members:
        raise BundleProblem(f"{found.name}: manifest.json: point {_record(entry).get('point_id')}: its {key} file "
                            f"{name!r} is not in the bundle")
    return name


def _same(a: JSON, b: JSON) -> bool:
    """Equal as JSON values, a float and an int of one value alike (JSON does not tell them)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b or (isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b))
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return a == b


def _shown(value: JSON) -> str:
    text = json.dumps(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _manifest_line(found: Bundle, point_id: JSON, key: str) -> int:
    """The line of manifest.json holding `key` of point `point_id`'s record (json_bytes
    writes a key a line, the records' keys at an indent of four); its point_id line, or
    1, where it holds none."""
    lines = found.figure_lines.get(point_id) if isinstance(point_id, int) and not isinstance(point_id, bool) \
        else None
    if lines is None:
        return 1
    return lines.get(key, lines["point_id"])


def _figure_lines(text: str) -> dict[int, dict[str, int]]:
    """Each point's record's keys by their line in manifest.json (json_bytes' layout: a
    record opens with `   "result": {`, its keys at an indent of four, and closes at
    `   }`), by point id; the first record of a point id where two claim it. Made once
    per bundle: another estimator's bundle may name a line for every figure it holds."""
    found: dict[int, dict[str, int]] = {}
    keys: dict[str, int] | None = None  # (inside a record)
    pid: int | None = None
    for number, line in enumerate(text.split("\n"), 1):
        if line == '   "result": {':
            keys, pid = {}, None
        elif keys is not None and line.startswith("   }"):
            if pid is not None:
                found.setdefault(pid, keys)
            keys = None
        elif keys is not None and line.startswith('    "'):
            name, sep, value = line[5:].partition('": ')
            if sep and name not in keys:
                keys[name] = number
                if name == "point_id" and value.rstrip(",").isdigit():
                    pid = int(value.rstrip(","))
    return found


def _source_of(key: str, entry: JSONObject) -> str:
    """The file a recomputed figure comes from, for the line that names it."""
    files = entry.get("files") if isinstance(entry.get("files"), dict) else {}
    assert isinstance(files, dict)
    system = ("cpu_busy_pct", "cpu_iowait_pct", "server_cpu", "loadgen_cpu")
    series = ("cv", "dips_s", "samples", "steady_start_s", "steady_tps", "tps_ci_high", "tps_ci_low", "trend_pct",
              "warnings")
    if key in system and files.get("system_samples"):
        return str(files["system_samples"])
    if key in series and files.get("samples"):
        return str(files["samples"])
    if key in ("bound", "bound_evidence", "server_figures") and files.get("server_series"):
        return str(files["server_series"])
    if key == "profile" and files.get("profile"):
        return str(files["profile"])
    return "the bundle's runs and points (manifest.json)"


def _from_output(found: Bundle, entry: JSONObject, result: Verified) -> None:
    """A point's printed figures read again from its raw output by the importer (and
    its percentiles from its latency histogram), each equal to the record's."""
    record = _record(entry)
    pid, workload = record.get("point_id"), record.get("workload")
    if record.get("status") != "ok":
        return  # a failed point has no figures
    stdout = _file(found, entry, "stdout")
    known = WORKLOADS.get(workload) if isinstance(workload, str) else None
    tool = known.tool.name if known is not None else None
    figures: dict[str, float | int] = {}
    lines: dict[str, int] = {}
    text = ""
    if stdout is not None and tool is None:
        # An imported output under a workload dbarena does not run (Percona's sysbench
        # TPC-C): read again as the tool `import` found it to be, as `import` read it.
        survey = reading.Survey()
        survey.feed(found.text(stdout))
        tool = survey.tool()
    if stdout is not None and tool in _READABLE:
        text = found.text(stdout)
        engine = record.get("engine")
        try:
            read = reading.read(stdout, text, label="bundle", tool=str(tool), workload=str(workload),
                                engine=engine if isinstance(engine, str) else None)
        except reading.ImportProblem as exc:
            raise BundleProblem(f"{found.name}: {exc} (point {pid}'s output no longer reads as {tool}'s)") from None
        if len(read) != 1:
            raise BundleProblem(f"{found.name}: {stdout}: {len(read)} runs of {tool} in it, not the point's one")
        measured = read[0].result.measurement
        if tool in ("pgbench", "sysbench"):  # (they print their threads and clients; mysqlslap's are its command's)
            spec = read[0].result.spec
            for key, count in (("threads", spec.threads), ("clients", spec.clients)):
                figures[key] = count
                lines[key] = _line_of(text, count, read[0].first_line, read[0].last_line)
        if measured is not None:
            for key in FIGURES:
                value = getattr(measured, key)
                if value is not None:
                    figures[key] = value
                    lines[key] = _line_of(text, value, read[0].first_line, read[0].last_line)
        result.from_output += 1
    elif isinstance(workload, str):
        result.not_readable.append(workload)
    histogram = _file(found, entry, "latency_histogram")
    if histogram is not None:
        latencies = Latencies.decode(bundle.json_document(histogram, found.members[histogram]))
        percentiles = latencies.percentiles_ms()
        for key, name in _PERCENTILES.items():
            if key not in figures and (percentile := percentiles[name]) is not None:
                figures[key], lines[key] = percentile, 0
        # (the tool's printed minimum and maximum stand; pgbench prints none: the log's)
        if "latency_min_ms" not in figures and latencies.min_us is not None:
            figures["latency_min_ms"], lines["latency_min_ms"] = latencies.min_us / 1000.0, 0
        if "latency_max_ms" not in figures and percentiles["max"] is not None:
            figures["latency_max_ms"], lines["latency_max_ms"] = percentiles["max"], 0
    for key in ("threads", "clients", *FIGURES):
        if key in figures and not _same(record.get(key), figures[key]):
            where = f"{stdout}:{lines[key]}" if lines[key] else histogram
            raise BundleProblem(f"{found.name}: manifest.json:{_manifest_line(found, pid, key)}: {key} of point {pid} "
                                f"is {_shown(record.get(key))}, but {where} gives {_shown(figures[key])}")


def _line_of(text: str, value: float | int, first: int, last: int) -> int:
    """The line of the run (first..last) that prints `value`: the first that holds it
    as Python writes the number; the run's first line where none does."""
    spelled = {repr(value), str(value), f"{value:g}"}
    if isinstance(value, float) and value.is_integer():
        spelled.add(str(int(value)))
    lines = text.split("\n")
    for number in range(max(first, 1), min(last, len(lines)) + 1):
        if any(s in lines[number - 1] for s in spelled):
            return number
    return max(first, 1)


# ---------------------------------------------------------------- the bundle as rows


_template_bytes: list[bytes] = []


def _template(directory: Path) -> bytes:
    """An empty store's bytes, made once per process (in `directory`, a throwaway
    store's, and removed there) and written for each throwaway store: creating one runs
    every migration (a third of a second, most of verifying a small bundle), writing it
    a millisecond; `dbarena site` verifies a thousand. Kept in memory, not as a file: a
    file would outlive a forked worker of `site`, which ends without running atexit (a
    worker forked after it was made inherits it)."""
    if not _template_bytes:
        empty = directory / "empty.db"
        Store(empty).close()
        _template_bytes.append(empty.read_bytes())
        empty.unlink()
    return _template_bytes[0]


@contextmanager
def throwaway_store(found: Bundle, provenance: JSONObject | None = None
                    ) -> Iterator[tuple[Store, list[str]]]:
    """The bundle's runs and points as rows of a new SQLite store in a temporary
    directory (removed after), each run's options with `provenance` under "bundle"
    where given; and the list of what the store's edge said of rows that do not fit.
    A manifest whose runs or points lack what a row needs is a BundleProblem. The
    directory is recorded in the state directory (state.temporary): a `verify`,
    `import`, `site` or `run --like` killed with SIGKILL leaves it to its watchdog or
    the next dbarena command to remove."""
    with state.temporary("dbarena-bundle-") as tmp:
        said: list[str] = []
        (tmp / "bundle.db").write_bytes(_template(tmp))
        # Throwaway: nothing of it needs to survive a crash, so no fsync per commit.
        db = Store(tmp / "bundle.db", durable=False)
        db.edge = Edge(found.name, said.append)
        try:
            _fill(db, found, provenance)
            yield db, said
        finally:
            db.close()


def _fill(db: Store, found: Bundle, provenance: JSONObject | None) -> None:
    manifest = found.manifest
    try:
        with db.verbatim() as add:
            for study in _list(manifest, "studies"):
                assert isinstance(study, dict)
                add.study(StudyRecord(sha256=_string(study["sha256"]), name=_string(study["name"]),
                                      source=_string(study["source"]), text=_string(study["text"])))
            for run in _list(manifest, "runs"):
                assert isinstance(run, dict)
                add.run(_run(run, provenance))
            for entry in _list(manifest, "points"):
                _add_point(add, found, _entry(entry))
    except (KeyError, AssertionError, TypeError, ValueError) as exc:
        raise BundleProblem(f"{found.name}: manifest.json: a run or point lacks what the store needs ({exc!r})") \
            from None
    except StoreUnwritable:
        raise  # (the temporary store's disk, not the bundle)
    except StoreError as exc:
        # A row the store's constraints refuse (a run with a null dbarena_version): the
        # bundle's fault, said as such (verify, import and site refuse the bundle alike).
        said = " ".join(str(exc).split())
        raise BundleProblem(f"{found.name}: manifest.json: a run or point the store refuses "
                            f"({said.split(': ', 1)[1] if ': ' in said else said})") from None


def _string(value: JSON) -> str:
    """A value the manifest's schema holds to be text (a TypeError, which _fill says, if not)."""
    if not isinstance(value, str):
        raise TypeError(f"{value!r} is not text")
    return value


def _run(run: JSONObject, provenance: JSONObject | None) -> StoredRun:
    """A run of the manifest as the store keeps it, its options with `provenance`
    under "bundle" where given; each value as the manifest holds it (the store's edge
    checks them as they are read)."""
    facts = run["host_facts"]
    fingerprint = run["host_fingerprint"]
    options = dict(run["options"]) if isinstance(run["options"], dict) else {}
    if provenance is not None:
        options["bundle"] = provenance
    values: dict[str, Any] = {f.name: run[f.name] for f in fields(StoredRun)}
    values.update(options=options, host_facts=facts, host_fingerprint=fingerprint)
    return StoredRun(**values)


def _add_point(add: Verbatim, found: Bundle, entry: JSONObject) -> None:
    record = _record(entry)
    pid = record["point_id"]
    assert isinstance(pid, int)  # (_record saw to it)
    repeat = record["repeat"]
    values: dict[str, Any] = {name: record.get(name) for name in STORED_FIELDS}
    run_id, command, exit_code = record["run_id"], entry["command"], entry["exit_code"]
    values.update(
        point_id=pid, run_id=run_id, details=record["details"], params=record["params"], options=record["options"],
        repeat=repeat - 1 if isinstance(repeat, int) else repeat,  # (printed from 1, stored from 0)
        source=record["source"], config=record["config"])
    add.point(StoredPoint(**values), command, exit_code)
    texts = [found.text(name) if (name := _file(found, entry, key)) is not None else ""
             for key in ("stdout", "stderr")]
    add.raw_output(pid, texts[0], texts[1])
    for table, file_name in SERIES_FILES.items():
        member = _file(found, entry, file_name.split(".")[0])
        if member is None:
            continue
        columns, rows = bundle.read_series_csv(member, found.members[member], series_columns(table))
        add.series(table, pid, SeriesRows(tuple(columns), rows))
    if (member := _file(found, entry, "latency_histogram")) is not None:
        add.latency_histogram(pid, bundle.json_document(member, found.members[member]))
    _add_profile(add, found, entry, record)
    if (member := _file(found, entry, "server_series")) is not None:
        server = bundle.json_document(member, found.members[member])
        # The raw series, as a store keeps it since ESTIMATOR_VERSION 8: the bound is
        # derived from it (and checked against the file's, _server_bound). The file's
        # verdict is kept only where it holds no series, as an older store's is read.
        series = server.get("record")
        add.server_series(pid, ServerRecord(bound=None if series is not None else server.get("bound"),
                                            evidence=None if series is not None else server.get("evidence"),
                                            record=series, figures=server.get("figures")))


def _add_profile(add: Verbatim, found: Bundle, entry: JSONObject, record: JSONObject) -> None:
    """A point's on-CPU profile: its folded stacks from its file, its frequency and symbols
    from its record (what no file holds); its samples and top functions made again from
    the stacks as the store makes them (Store.add_profile), for the record to match."""
    member = _file(found, entry, "profile")
    profile = record.get("profile")
    pid = record["point_id"]
    assert isinstance(pid, int)  # (_record saw to it)
    if member is None and profile is None:
        return
    if member is None or not isinstance(profile, dict):
        held = f"a profile file ({member}) but no profile in its record" if member is not None \
            else "a profile in its record but no profile file"
        raise BundleProblem(f"{found.name}: manifest.json: point {pid} has {held}")
    frequency, symbols = profile.get("frequency_hz"), profile.get("symbols")
    if not isinstance(frequency, (int, float)) or isinstance(frequency, bool) or not isinstance(symbols, str):
        raise BundleProblem(f"{found.name}: manifest.json: point {pid}'s profile lacks its frequency or symbols")
    try:
        add.profile(pid, found.text(member), float(frequency), symbols)
    except FoldedProblem as exc:
        raise BundleProblem(f"{found.name}: {member}: not folded stacks ({exc})") from None
