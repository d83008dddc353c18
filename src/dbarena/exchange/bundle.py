"""The bundle's format (docs/exchange.md): one tar file, written the same way every time
from the same runs, so that publishing them again gives the same bytes.

    manifest.json        the runs, their points (each the record `results --json` prints),
                         studies, host facts and probes, settings, tool versions, prices,
                         and the sha256 of every other file
    manifest.json.sig    the SSH signature of manifest.json (absent in an unsigned bundle,
                         which the manifest says it is)
    SHA256SUMS           the files' sha256 as `sha256sum -c` reads them (its own sha256 is
                         in the manifest, so the signature covers it too)
    points/ID/...        each point's raw tool output (stdout.txt, stderr.txt), per-second
                         series (samples.csv, system_samples.csv), latency histogram and
                         server series (JSON), on-CPU profile (profile.txt, folded stacks),
                         ID its id in the store it was published from

What keeps the bytes the same: the members in one order (the manifest, its signature,
the sums, then the files by name), POSIX ustar headers with owner 0, no owner names,
mode 0644, every mtime the newest run's end, JSON with sorted keys, no compression (a
compressor's header holds a time, and its output may change with its version), and an
Ed25519 signature, which is deterministic. A reader checks that the file is exactly what
this writer makes of its members (`canonical`), so that no byte of a header or of the
padding can change unnoticed either.
"""

from __future__ import annotations

import csv
import datetime
import hashlib
import io
import json
import re
import tarfile
from collections.abc import Mapping, Sequence
from typing import Any

from dbarena.errors import UsageError
from dbarena.records import JSON, JSONObject

__all__ = ["FORMAT", "FORMAT_VERSION", "NAMESPACE", "MANIFEST", "SIGNATURE", "SUMS", "BundleProblem",
           "json_bytes", "sha256", "sums_text", "write_tar", "read_tar", "order", "series_csv", "read_series_csv",
           "epoch_of", "PUBLISHED_STATUSES", "MAX_BUNDLE_BYTES", "MAX_MEMBERS", "MAX_JSON_DEPTH", "json_depth"]

FORMAT = "dbarena-bundle"
FORMAT_VERSION = 1
# The SSH signature's namespace (ssh-keygen -Y ... -n): a signature made for another
# purpose (git commits sign "git", e-mail "email") never passes for a bundle's.
NAMESPACE = "dbarena-bundle"
MANIFEST = "manifest.json"
SIGNATURE = "manifest.json.sig"
SUMS = "SHA256SUMS"
# The statuses of the runs a bundle may hold: runs that ended (a failed run too: its
# failure is a result). A run still running, or interrupted (which `run --resume` would
# go on with), is no result yet: publish refuses it, verify and import refuse a bundle
# that holds one.
PUBLISHED_STATUSES = ("finished", "failed", "imported")
# A bundle is read whole into memory: a bound, so that a hostile file is one line, not
# a machine out of memory (a published study's bundle is megabytes).
MAX_BUNDLE_BYTES = 2 * 2**30
# The members of a bundle: three at the top and at most seven a point. Each member read is
# a tarfile.TarInfo held until the file is read (hundreds of bytes each); past this many
# no bundle is meant (a million points' bundle is beyond MAX_BUNDLE_BYTES already).
MAX_MEMBERS = 1_000_000
# How deep a JSON member (the manifest, a histogram, a server series) may nest: dbarena
# writes at most 6 levels; each level is a frame of every recursive reader after
# (json, the schema's validator, the comparisons), whose stack ends in a RecursionError
# about a thousand frames down. Checked on the bytes before they are parsed.
MAX_JSON_DEPTH = 32
# A member's name: points/<id>/<file>, or one of the three at the top.
_NAME = re.compile(r"(?:manifest\.json(?:\.sig)?|SHA256SUMS|points/[0-9]{1,19}/[a-z_-]{1,40}\.(?:txt|csv|json))")


class BundleProblem(UsageError):
    """A bundle that cannot be read, or that does not verify: one line naming what."""


def json_bytes(value: JSON | Mapping[str, Any]) -> bytes:
    """JSON as a bundle holds it: sorted keys, one key a line (so that a line names a
    figure), UTF-8, a final newline. Floats as Python's repr, which reads back exactly."""
    return (json.dumps(value, sort_keys=True, indent=1, ensure_ascii=False, allow_nan=False) + "\n").encode()


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sums_text(files: Mapping[str, str]) -> bytes:
    """SHA256SUMS: `HASH  NAME` a line, by name, as sha256sum writes and -c reads it."""
    return "".join(f"{digest}  {name}\n" for name, digest in sorted(files.items())).encode()


def order(names: Sequence[str]) -> list[str]:
    """The members in the bundle's order: the manifest, its signature, the sums, then the rest by name."""
    first = [n for n in (MANIFEST, SIGNATURE, SUMS) if n in names]
    return first + sorted(n for n in names if n not in first)


def write_tar(members: Mapping[str, bytes], mtime: int) -> bytes:
    """The bundle's bytes: the members in `order`, every header fixed but name and size."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for name in order(list(members)):
            info = tarfile.TarInfo(name)
            info.size, info.mtime, info.mode = len(members[name]), mtime, 0o644
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            tar.addfile(info, io.BytesIO(members[name]))
    return out.getvalue()


def read_tar(name: str, data: bytes) -> tuple[dict[str, bytes], int]:
    """A bundle's members (name -> bytes, in the file's order) and the first one's mtime.
    Only plain files with the names a bundle has; none twice."""
    members: dict[str, bytes] = {}
    mtime = 0
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:") as tar:
            for info in tar:
                # A plain file as write_tar writes it and nothing else: no sparse member
                # (a few bytes of header that read as gigabytes of zeros), no PAX or GNU
                # extension headers, no size beyond the bytes the file has left.
                if info.type != tarfile.REGTYPE or info.sparse is not None:
                    raise BundleProblem(f"{name}: {info.name[:80]!r} is not a plain file (a bundle holds files only)")
                if info.pax_headers:
                    raise BundleProblem(f"{name}: {info.name[:80]!r} has extended (PAX) headers, which no bundle has")
                if info.offset_data + info.size > len(data):
                    raise BundleProblem(f"{name}: {info.name[:80]!r} says it is {info.size:,} bytes, more than the "
                                        "file holds after it")
                if len(members) >= MAX_MEMBERS:
                    raise BundleProblem(f"{name}: more than {MAX_MEMBERS:,} files, more than any bundle holds")
                if _NAME.fullmatch(info.name) is None:
                    raise BundleProblem(f"{name}: {info.name[:80]!r}: no file a bundle holds has such a name")
                if info.name in members:
                    raise BundleProblem(f"{name}: {info.name} is in it twice")
                if not members:
                    mtime = int(info.mtime)
                extracted = tar.extractfile(info)
                assert extracted is not None  # (a regular file always has its content)
                members[info.name] = extracted.read(info.size)
    except (tarfile.TarError, EOFError) as exc:
        raise BundleProblem(f"{name}: not a dbarena bundle (not a tar file that reads: {exc})") from None
    if not members:
        raise BundleProblem(f"{name}: not a dbarena bundle (an empty tar file)")
    return members, mtime


def epoch_of(timestamp: str | None) -> int:
    """A run's ISO 8601 UTC time as seconds since the epoch (the members' mtime); 0 without one."""
    if not timestamp:
        return 0
    try:
        at = datetime.datetime.fromisoformat(timestamp.replace("Z", "+00:00"))
    except ValueError:
        return 0
    if at.tzinfo is None:
        at = at.replace(tzinfo=datetime.timezone.utc)
    return max(0, int(at.timestamp()))


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return repr(value)  # reads back as the same float
    return str(value)


def series_csv(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> bytes:
    """A per-second series as CSV: a header, then a row a second; an empty cell is no value."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(columns)
    writer.writerows([_cell(v) for v in row] for row in rows)
    return out.getvalue().encode()


def read_series_csv(name: str, data: bytes, types: Mapping[str, str]) -> tuple[list[str], list[list[Any]]]:
    """A series written by series_csv, each cell read as its column's type (`types`:
    column -> "real" or "integer"/"bigint"); a cell that does not read is a
    BundleProblem naming the file and line."""
    try:
        rows = list(csv.reader(io.StringIO(data.decode())))
    except (UnicodeDecodeError, csv.Error) as exc:
        raise BundleProblem(f"{name}: not a CSV series ({exc})") from None
    if not rows:
        raise BundleProblem(f"{name}: an empty file (no header)")
    columns = rows[0]
    unknown = [c for c in columns if c not in types]
    if unknown or len(set(columns)) != len(columns):
        raise BundleProblem(f"{name}:1: columns {unknown or columns} are not a series' columns")
    out = []
    for number, row in enumerate(rows[1:], 2):
        if len(row) != len(columns):
            raise BundleProblem(f"{name}:{number}: {len(row)} cells, not {len(columns)}")
        values: list[Any] = []
        for column, cell in zip(columns, row):
            try:
                values.append(None if cell == "" else float(cell) if types[column] == "real" else int(cell))
            except ValueError:
                raise BundleProblem(f"{name}:{number}: {column} {cell[:40]!r} is not a number") from None
        out.append(values)
    return columns, out


# A JSON string (its escapes included): what json_depth leaves out before counting.
_JSON_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")


def json_depth(data: bytes, limit: int = MAX_JSON_DEPTH) -> int:
    """How deep JSON text nests (its arrays and objects), counted on its bytes without
    parsing them, and no further than `limit` + 1: so that text nested too deep is
    refused before any recursive reader sees it."""
    brackets = _JSON_STRING.sub(b"", data).translate(None, _NOT_BRACKETS)
    depth = deepest = 0
    for byte in brackets:
        depth += 1 if byte in b"[{" else -1
        if depth > deepest:
            deepest = depth
            if deepest > limit:
                break
    return deepest


def json_document(name: str, data: bytes) -> JSONObject:
    """A JSON object member; one that does not read, or nests deeper than
    MAX_JSON_DEPTH, is a BundleProblem naming it."""
    if (depth := json_depth(data)) > MAX_JSON_DEPTH:
        raise BundleProblem(f"{name}: JSON nested more than {MAX_JSON_DEPTH} deep (dbarena writes at most 6)")
    try:
        value = json.loads(data.decode())
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise BundleProblem(f"{name}: not JSON ({str(exc)[:200]})") from None
    if not isinstance(value, dict):
        raise BundleProblem(f"{name}: not a JSON object")
    return value
