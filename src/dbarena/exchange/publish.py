"""`dbarena publish`: runs of a store -> one bundle (bundle.py), every secret masked
and checked absent before a byte is written, signed with an OpenSSH Ed25519 key
(sshsig.py) or marked unsigned.

What a bundle holds of each run is what the store holds of it, measured points only
(warm-ups are not published): the run's record (label, host, target, versions, tool
versions, options with the host probe and the server settings, host facts, target facts,
price, study), each point's record as `results --json` prints it, with its command and
exit status, and its files: raw output, per-second series, latency histogram, server
series, on-CPU profile (its folded stacks as text: flamegraph.pl reads them). Nothing in
it depends on when or where it is published: the same runs give the same bytes.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePath

from dbarena import __version__
from dbarena.errors import UsageError
from dbarena.exchange import bundle, sshsig
from dbarena.exchange.manifest import Manifest, PointEntry, Price, StudyText
from dbarena.masking import MASK, masked
from dbarena.records import JSON, AnalysedPoint, StoredRun
from dbarena.stats import analysis
from dbarena.store.database import Store
from dbarena.store.verbatim import PointFiles

__all__ = ["Published", "publish", "secrets_of", "SERIES_FILES", "PASSPHRASE_ENV"]

# Where an encrypted key's passphrase may come from besides a prompt (never argv).
PASSPHRASE_ENV = "DBARENA_KEY_PASSPHRASE"
# A point's per-second tables and their file in the bundle.
SERIES_FILES = {"samples": "samples.csv", "system_samples": "system_samples.csv"}
# Environment variables whose values are secrets: none may be in a bundle.
_SECRET_NAME = re.compile(r"(?i)password|passwd|_pwd$|secret|token|passphrase")
# A shorter value would be found in any figure (a password "12" in "3,412 tps"); such
# a value is not looked for, and the masking of every form a password is spelled in
# (masking.py) is what keeps it out.
_SHORTEST_SECRET = 4


@dataclass(frozen=True)
class Published:
    data: bytes
    runs: int
    points: int
    signed: bool
    key: str | None  # the signing key's fingerprint


def secrets_of(environ: Mapping[str, str], extra: Iterable[str] = ()) -> dict[str, str]:
    """What must not be in a bundle: the value of every environment variable named like
    a secret (PGPASSWORD, MYSQL_PWD, ...), and `extra` (the key's passphrase), by name."""
    found = {f"${name}": value for name, value in environ.items()
             if _SECRET_NAME.search(name) and len(value) >= _SHORTEST_SECRET}
    found.update(("the key's passphrase", value) for value in extra if len(value) >= _SHORTEST_SECRET)
    return found


# A string that ends in a password option with no value (`--pgsql-password=`, an
# argument of a command run without a password): as JSON text, `"--pgsql-password=",`,
# its closing quote reads as the start of a quoted password to the check of every line
# (first_unmasked_line), which would refuse the bundle. Such a string is written with
# the mask after it, as a password would be: nothing is hidden that was there.
_EMPTY_PASSWORD_AT_END = re.compile(r"(?i)[\w-]*(?:password|passwd|_pwd)=$")


def _masked_json(value: JSON) -> JSON:
    """Every string of a JSON value masked (masking.py), keys too."""
    if isinstance(value, str):
        value = masked(value)
        return value + MASK if _EMPTY_PASSWORD_AT_END.search(value) else value
    if isinstance(value, list):
        return [_masked_json(v) for v in value]
    if isinstance(value, dict):
        return {masked(k): _masked_json(v) for k, v in value.items()}
    return value


# A directory dbarena made for a run under its TMPDIR (dbarena-point-..., dbarena-pg-...):
# what is before it is that run's TMPDIR, which may not be the publisher's now.
_MADE_UNDER = re.compile(r"(/[^\s\"'=:,;]*?)/dbarena-[a-z]+-[A-Za-z0-9_]+")
# What a path of the machine is written as in a bundle, longest first.
TMPDIR, HOME, DATA_DIR = "$TMPDIR", "$HOME", "$DATA_DIR"


def machine_paths(manifest_text: str, runs: Sequence[StoredRun], environ: Mapping[str, str]) -> dict[str, str]:
    """The paths of the publisher's machine a bundle would hold (path -> what it is
    written as): its temporary directories (the publisher's, and each run's, found
    before the directories dbarena made in it: pgbench's --log-prefix, the server's
    unix_socket_directories), its home, each run's data directory. `/` is no such path."""
    found: dict[str, str] = {}

    def add(path: object, token: str) -> None:
        if isinstance(path, str) and path.startswith("/") and path.rstrip("/"):
            found[path.rstrip("/")] = token

    for run in runs:
        data_dir = run.options.get("data_dir")
        add(data_dir.get("path") if isinstance(data_dir, dict) else None, DATA_DIR)
        for where in (run.target_facts, run.target_facts.get("non_default_settings")):
            if isinstance(where, dict):
                add(where.get("data_directory"), DATA_DIR)
                add(where.get("datadir"), DATA_DIR)
    add(environ.get("HOME"), HOME)
    add(str(Path.home()), HOME)
    for m in _MADE_UNDER.finditer(manifest_text):
        add(m.group(1), TMPDIR)
    add(environ.get("TMPDIR"), TMPDIR)
    add(tempfile.gettempdir(), TMPDIR)
    return found


def _unpathed(paths: Mapping[str, str]) -> Callable[[str], str]:
    """A function writing each of `paths` in a text as what it is ($TMPDIR ...), a whole
    path only (/tmp, not the /tmp of /var/tmp or of /tmpfs), the longest first."""
    if not paths:
        return lambda text: text
    ordered = sorted(paths, key=len, reverse=True)
    pattern = re.compile(r"(?<![\w.-])(?:" + "|".join(map(re.escape, ordered)) + r")(?![\w.-])")
    return lambda text: pattern.sub(lambda m: paths[m.group(0)], text) if "/" in text else text


def _map_strings(value: JSON, change: Callable[[str], str]) -> JSON:
    if isinstance(value, str):
        return change(value)
    if isinstance(value, list):
        return [_map_strings(v, change) for v in value]
    if isinstance(value, dict):
        return {change(k): _map_strings(v, change) for k, v in value.items()}
    return value


def _selected(db: Store, labels: Sequence[str], run_ids: Sequence[int]) -> list[StoredRun]:
    runs = db.runs()
    known = {r.id for r in runs}
    for run_id in run_ids:
        if run_id not in known:
            raise UsageError(f"publish: no run {run_id} in {db.location}")
    names = {r.label for r in runs}
    for label in labels:
        if label not in names:
            raise UsageError(f"publish: no run labelled {label!r} in {db.location}")
    chosen = [r for r in runs if (not labels or r.label in labels) and (not run_ids or r.id in run_ids)]
    if not chosen:
        raise UsageError("publish: no run is both of the labels and among the runs given")
    running = [r.id for r in chosen if r.status not in bundle.PUBLISHED_STATUSES]
    if running:
        raise UsageError(f"publish: run {', '.join(map(str, running))} is still running or was interrupted "
                         "(`dbarena run --resume` finishes it); publish finished runs")
    return [_public(r) for r in chosen]


def _public(run: StoredRun) -> StoredRun:
    """A run as a bundle shows it: an imported run names its file, and a study run its
    study file, not where they were on the publisher's machine (the store keeps the
    whole path, where it says which file to look at again; in a bundle it tells strangers
    a home directory, and the study's text is all `run --like` reads)."""
    options = dict(run.options)
    imported, source = options.get("imported"), options.get("source")
    if isinstance(imported, dict) and isinstance(file := imported.get("file"), str):
        options["imported"] = {**imported, "file": PurePath(file).name}
    if isinstance(source, str) and "/" in source:  # a study file's path (a seed's name has none)
        options["source"] = PurePath(source).name
    return dataclasses.replace(run, options=options) if options != run.options else run


def _price(run: StoredRun) -> Price | None:
    """The run's price with where it came from and when it held: what the run stored
    (its study's [price], or --price-per-hour), on the day the run started."""
    if run.price_per_hour is None:
        return None
    source = run.options.get("source")
    per_month = run.options.get("price_per_month")
    return Price(run=run.uuid, per_hour=run.price_per_hour, currency=run.currency or "USD",
                 per_month=per_month if isinstance(per_month, (int, float)) and not isinstance(per_month, bool)
                 else None,
                 source=f"the run's study ({source})" if isinstance(source, str) and source else "the run's options",
                 date=run.started_at[:10])


def _point_files(found: PointFiles, record: AnalysedPoint) -> dict[str, bytes]:
    """A point's files in the bundle (names within its directory), each present only
    where the store holds it (but the raw output, which every point has). Its server
    series file gives the bound its record gives, derived from that series (the store
    keeps none for a point stored since ESTIMATOR_VERSION 8), which verify derives again."""
    files: dict[str, bytes] = {}
    files["stdout.txt"], files["stderr.txt"] = masked(found.stdout).encode(), masked(found.stderr).encode()
    for series, name in ((found.samples, SERIES_FILES["samples"]),
                         (found.system_samples, SERIES_FILES["system_samples"])):
        if series is not None:
            files[name] = bundle.series_csv(series.columns, series.rows)
    if found.latency_histogram is not None:
        files["latency-histogram.json"] = bundle.json_bytes(_masked_json(found.latency_histogram))
    if (server := found.server) is not None:
        files["server-series.json"] = bundle.json_bytes(_masked_json(
            {"bound": record.bound, "evidence": record.bound_evidence, "figures": server.figures,
             "record": server.record}))
    if found.profile is not None:  # (its frequency and symbols are in the point's record)
        files["profile.txt"] = masked(found.profile).encode()
    return files


def publish(db: Store, *, labels: Sequence[str] = (), run_ids: Sequence[int] = (), signer: sshsig.Signer | None,
            secrets: Mapping[str, str]) -> Published:
    """The bundle of the runs chosen (by label, by id, or both), signed by `signer` or
    marked unsigned (None). Refused in one line, nothing made, where a secret's value
    (`secrets`: what names it -> the value) would be in it after masking."""
    runs = _selected(db, labels, run_ids)
    files: dict[str, bytes] = {}
    points: list[PointEntry] = []
    studies: dict[str, StudyText] = {}
    for run in runs:
        if run.study_sha256 is not None and run.study_sha256 not in studies:
            study = db.study(run.study_sha256)
            if study is not None:
                # A study file by its name (its text is all a reader needs), as _public does.
                studies[run.study_sha256] = StudyText(sha256=run.study_sha256, name=study.name,
                                                      source=PurePath(study.source).name if "/" in study.source else study.source,
                                                      text=study.text)
        for record in analysis.load(db, run_id=run.id):
            pid = record.point_id
            stored = db.point_files(pid)
            own = _point_files(stored, record)
            names = {key.split(".")[0].replace("-", "_"): f"points/{pid}/{key}" for key in sorted(own)}
            files.update((f"points/{pid}/{key}", data) for key, data in own.items())
            result = record.as_json()
            if isinstance(found := result.get("source"), dict) and isinstance(path := found.get("path"), str):
                result["source"] = {**found, "path": PurePath(path).name}  # an imported point's file: as _public
            points.append(PointEntry(result=result, command=stored.command, exit_code=stored.exit_code,
                                     files=names))
    newest = max((r.ended_at or r.started_at for r in runs))
    digests = {name: bundle.sha256(data) for name, data in sorted(files.items())}
    sums = bundle.sums_text(digests)
    made = Manifest(
        format=bundle.FORMAT, format_version=bundle.FORMAT_VERSION,
        # The dbarena that wrote the bundle; each run keeps the one that measured it.
        published_by=f"dbarena {__version__}", signed=signer is not None, date=newest, runs=runs,
        studies=[studies[k] for k in sorted(studies)], prices=[p for p in map(_price, runs) if p is not None],
        points=points, files=digests, sha256sums=bundle.sha256(sums),
        # What the points' derived figures were computed with: a verify of another
        # version recomputes them and says so, rather than call them tampered.
        estimator_version=analysis.ESTIMATOR_VERSION)
    manifest = _masked_json(made.as_json())
    # No path of this machine (docs/exchange.md): its TMPDIR, home and data directories
    # written as $TMPDIR, $HOME, $DATA_DIR, in the manifest and in every file, before the
    # files' sha256 are taken.
    unpathed = _unpathed(machine_paths(json.dumps(manifest), runs, os.environ))
    files = {name: (unpathed(data.decode()).encode() if not name.endswith(".csv") else data)
             for name, data in files.items()}
    digests = {name: bundle.sha256(data) for name, data in sorted(files.items())}
    sums = bundle.sums_text(digests)
    manifest = _map_strings(manifest, unpathed)
    assert isinstance(manifest, dict)
    manifest.update(files=dict[str, JSON](digests), sha256sums=bundle.sha256(sums))
    members = {bundle.MANIFEST: bundle.json_bytes(manifest), bundle.SUMS: sums, **files}
    _check_secrets(members, secrets)
    key = None
    if signer is not None:
        members[bundle.SIGNATURE] = sshsig.sign(signer, members[bundle.MANIFEST], bundle.NAMESPACE)
        key = sshsig.fingerprint(signer.public_blob)
    data = bundle.write_tar(members, bundle.epoch_of(newest))
    return Published(data=data, runs=len(runs), points=len(points), signed=signer is not None, key=key)


def _check_secrets(members: Mapping[str, bytes], secrets: Mapping[str, str]) -> None:
    """Refuse, in one line naming the file and line, a bundle that would hold a secret's
    value, or a password spelled out in a form masking.py knows (none should be left:
    this is the check that it is so)."""
    for name, data in members.items():
        text = data.decode(errors="replace")
        for what, value in secrets.items():
            at = text.find(value)
            if at >= 0:
                raise UsageError(f"publish: nothing written: the value of {what} would be in {name} "
                                 f"(line {text.count(chr(10), 0, at) + 1})")
        if (line := first_unmasked_line(text)) is not None:
            raise UsageError(f"publish: nothing written: a password is spelled out in {name} (line {line})")


def first_unmasked_line(text: str) -> int | None:
    """The first line of `text` that masking would change (a password spelled out), or None."""
    covered = masked(text)
    if covered == text:
        return None
    for number, (a, b) in enumerate(zip(text.split("\n"), covered.split("\n")), 1):
        if a != b:
            return number
    return 1

