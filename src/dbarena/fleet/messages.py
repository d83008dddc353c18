"""What the controller of `fleet run --together` and a load generator say to each other
about one point, as records on both sides: the request (controller -> host-point), the
host's part of the point (host-point -> part.json -> the controller) and the point's
status as host-point-ctl answers it; and what it says with the [server] host about the
server's profile of a point (--profile: the request, and the status host-profile-ctl
answers, with the folded stacks). JSON on the wire, since the playbooks carry text;
each record reads its JSON back through `from_json`, which refuses (ValueError, one
line) a document that does not fit, so a host running another dbarena says so instead
of failing deep in the controller.
"""

from __future__ import annotations

import base64
import json
import zlib
from dataclasses import MISSING, asdict, dataclass, fields
from typing import Callable, Mapping, TypeVar

from dbarena.host.sysmetrics import SystemSample
from dbarena.model import Measurement, PointSpec, Profile, Sample
from dbarena.records import JSON, JSONObject

# What a point's status is once it has ended (host-point-ctl waits for these).
FINAL = ("done", "failed", "stopped")

T = TypeVar("T")

# The JSON each declared type of a record's field is read from (the fields whose type is
# not here, a nested record or a tuple, are read by their record's from_json). A float
# field takes an integer too: JSON writes 2.0 as 2 in some encoders.
_NONE = type(None)
_KINDS: dict[str, tuple[type, ...]] = {
    "int": (int,), "float": (int, float), "str": (str,), "bool": (bool,),
    "int | None": (int, _NONE), "float | None": (int, float, _NONE), "str | None": (str, _NONE),
}


def _object(text: str | JSON, what: str) -> JSONObject:
    found = json.loads(text) if isinstance(text, str) else text
    if not isinstance(found, dict):
        raise ValueError(f"{what}: not a JSON object")
    return found


def _known(cls: type, record: JSONObject, what: str) -> dict[str, str]:
    """The declared type of each of `cls`'s fields; a field of `record` it does not have
    is refused (checked before any nested record is read, so that it is what is said)."""
    declared = {f.name: str(f.type) for f in fields(cls)}
    unknown = sorted(set(record) - set(declared))
    if unknown:
        raise ValueError(f"{what}: unknown field(s) {', '.join(unknown)} (another dbarena version on the host?)")
    return declared


def _record(make: Callable[..., T], cls: type, record: JSONObject, what: str, **read: object) -> T:
    """`cls` made from a JSON object: a field it does not know is refused (another
    dbarena on the host), each plain field is checked against its declared type, and
    the fields given in `read` (nested records, tuples) are taken as their caller read
    them. `make` is `cls` itself, typed as taking any arguments: the check here is the
    one the type checker cannot make of JSON."""
    declared = _known(cls, record, what)
    missing = [f.name for f in fields(cls) if f.default is MISSING and f.default_factory is MISSING
               and f.name not in record and f.name not in read]
    if missing:
        raise ValueError(f"{what}: no {', '.join(missing)}")
    values: dict[str, object] = {}
    for name, value in record.items():
        if name in read:
            continue
        kinds = _KINDS.get(declared[name])
        if kinds is None:
            raise ValueError(f"{what}: {name} cannot be read from JSON here")  # a field from_json must read
        if isinstance(value, bool) and bool not in kinds or not isinstance(value, kinds):
            raise ValueError(f"{what}: {name} is {type(value).__name__}, not {declared[name]}")
        values[name] = float(value) if "float" in declared[name] and isinstance(value, int) else value
    values.update(read)
    return make(**values)


def _pairs(value: JSON, kind: type, what: str) -> tuple[tuple[str, object], ...]:
    """A spec's params or options: a list of [name, value] pairs."""
    if not isinstance(value, list) or not all(
            isinstance(p, list) and len(p) == 2 and isinstance(p[0], str) and isinstance(p[1], kind)
            and not isinstance(p[1], bool) for p in value):
        raise ValueError(f"{what}: not a list of [name, {kind.__name__}] pairs")
    return tuple((str(p[0]), p[1]) for p in value if isinstance(p, list))


def _records(value: JSON, cls: type[T], what: str) -> tuple[T, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise ValueError(f"{what}: {cls.__name__} records are not a list")
    return tuple(_record(cls, cls, _object(v, what), what) for v in value)


def _tls(value: JSON, what: str) -> dict[str, str] | None:
    """A request's TLS: {"ca": the server's certificate (PEM)}, or None."""
    if value is None:
        return None
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise ValueError(f"{what}: tls is not an object of texts")
    return {k: str(v) for k, v in value.items()}


def spec_of(record: JSON, what: str = "a point's spec") -> PointSpec:
    found = _object(record, what)
    return _record(PointSpec, PointSpec, found, what,
                   **{name: _pairs(found[name], kind, what) for name, kind in (("params", int), ("options", str))
                      if name in found})


def spec_record(spec: PointSpec) -> JSONObject:
    record: JSONObject = asdict(spec)
    return record


@dataclass(frozen=True)
class PrepareRequest:
    """What the controller asks of the first load generator before the first point
    (host-prepare): the run's provenance, and its datasets prepared on the server."""

    args: tuple[str, ...]  # the host's `dbarena run` arguments (its study and flags)
    label: str
    target: str
    invocation: str  # the run's key (resume finds the run again by it)
    datasets: tuple[PointSpec, ...]  # one spec per dataset to prepare
    tls: Mapping[str, str] | None = None  # {"ca": PEM}, where the server requires TLS

    def to_json(self) -> str:
        return json.dumps({"args": list(self.args), "label": self.label, "target": self.target,
                           "invocation": self.invocation, "datasets": [spec_record(s) for s in self.datasets],
                           "tls": dict(self.tls) if self.tls is not None else None})

    @classmethod
    def from_json(cls, record: JSON) -> "PrepareRequest":
        what = "a run's preparation"
        found = _object(record, what)
        _known(cls, found, what)
        args, datasets = found.get("args"), found.get("datasets")
        if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
            raise ValueError(f"{what}: its args are not a list of texts")
        if not isinstance(datasets, list):
            raise ValueError(f"{what}: its datasets are not a list")
        return _record(cls, cls, found, what, args=tuple(str(a) for a in args),
                       datasets=tuple(spec_of(d, what) for d in datasets), tls=_tls(found.get("tls"), what))


@dataclass(frozen=True)
class PointRequest:
    """One host's share of a point, as the controller asks for it."""

    id: str  # the point's, so that a late answer about the one before is not taken for it
    engine: str
    flavour: str | None
    target: str
    spec: PointSpec  # this host's share (its threads and clients)
    sampling: float | None = None  # the per-transaction log's share (None: no log)
    tls: Mapping[str, str] | None = None  # {"ca": PEM}: the server's certificate, where it requires TLS
    sample_server: bool = False  # sample the server's own statistics over the point (the first host)
    server_clients: int | None = None  # the whole point's connections (for the sampler's free slots)
    checkpoint: bool = False  # a checkpoint before saying ready (after a warm-up; the first host)

    def to_json(self) -> str:
        return json.dumps({**{f.name: getattr(self, f.name) for f in fields(self)}, "spec": spec_record(self.spec)})

    @classmethod
    def from_json(cls, text: str) -> "PointRequest":
        what = "a point's request"
        record = _object(text, what)
        _known(cls, record, what)
        tls = _tls(record.get("tls"), what)
        return _record(cls, cls, record, what, spec=spec_of(record.get("spec"), what), tls=tls)


@dataclass(frozen=True)
class Part:
    """One host's part of a point: what its tool printed and how it was read."""

    command: tuple[str, ...]
    exit: int | None
    stdout: str
    stderr: str
    launched_at: float  # when its tool started (epoch seconds, the host's clock)
    ended_at: float
    start_at: float  # the start time the controller sent
    system: tuple[SystemSample, ...] = ()
    samples: tuple[Sample, ...] = ()
    server: str | None = None  # the server's series (ServerSeries.encode), where this host sampled it
    measurement: Measurement | None = None  # None: the tool failed or was stopped
    first_at: float | None = None  # the first transaction's start, from pgbench's log

    def to_json(self) -> JSONObject:
        record: JSONObject = {f.name: getattr(self, f.name) for f in fields(self)}
        record.update(command=list(self.command), system=[asdict(s) for s in self.system],
                      samples=[asdict(s) for s in self.samples],
                      measurement=asdict(self.measurement) if self.measurement is not None else None)
        return record

    @classmethod
    def from_json(cls, record: JSON) -> "Part":
        what = "a host's part"
        found = _object(record, what)
        _known(cls, found, what)
        command = found.get("command")
        if not isinstance(command, list) or not all(isinstance(c, str) for c in command):
            raise ValueError(f"{what}: its command is not a list of texts")
        measurement = found.get("measurement")
        return _record(cls, cls, found, what, command=tuple(str(c) for c in command),
                       system=_records(found.get("system"), SystemSample, what),
                       samples=_records(found.get("samples"), Sample, what),
                       measurement=(_measurement(measurement, what) if measurement is not None else None))


@dataclass(frozen=True)
class Status:
    """Where one host's share of a point is, as host-point-ctl answers."""

    state: str  # starting, ready, running, or one of FINAL; "absent": no such point there
    id: str | None = None
    reason: str | None = None  # why it failed or stopped
    pid: int | None = None  # host-point's own process
    tool_pid: int | None = None
    updated: float | None = None
    part: Part | None = None  # once it has ended, where it got as far as running its tool
    go_seen: float | None = None  # a go's answer: when the host had the start time (its clock)

    @property
    def final(self) -> bool:
        return self.state in FINAL

    def to_json(self) -> JSONObject:
        record: JSONObject = {"state": self.state}
        for name in ("id", "reason", "pid", "tool_pid", "updated", "go_seen"):
            if getattr(self, name) is not None:
                record[name] = getattr(self, name)
        if self.part is not None:
            record["part"] = self.part.to_json()
        return record

    @classmethod
    def from_json(cls, record: JSON) -> "Status":
        what = "a point's status"
        found = _object(record, what)
        if not isinstance(found.get("state"), str):
            raise ValueError(f"{what}: no state")
        part = found.get("part")
        return _record(cls, cls, found, what, part=Part.from_json(part) if part else None)


def _measurement(record: JSON, what: str) -> Measurement:
    """A part's measurement: its figures checked as any record's; its details and
    histogram are JSON documents the controller reads as such."""
    found = _object(record, what)
    extra: dict[str, object] = {}
    for name in ("details", "latency_histogram"):
        if name in found:
            value = found[name]
            if not (isinstance(value, dict) or (value is None and name == "latency_histogram")):
                raise ValueError(f"{what}: its measurement's {name} is not a JSON object")
            extra[name] = value
    return _record(Measurement, Measurement, found, what, **extra)


# ------------------------------------------------------------------ the server host's profiles

# What a [server] host may send of one point's profile (fleet/serverprofile.py): its
# folded stacks zlib-compressed and in base64, and their text once decompressed. A
# profile of a 10-minute point on 64 CPUs at 99 Hz folds to some 15 MB of text, about
# 2 MB sent; beyond these a host's answer is refused, not held in memory.
MAX_PROFILE_SENT_CHARS = 32 * 2**20
MAX_PROFILE_CHARS = 256 * 2**20


@dataclass(frozen=True)
class ProfileRequest:
    """What the controller asks of the [server] host around one point's measured part:
    its server (by id, as host-server started it) sampled by perf at `frequency_hz`,
    for at most `max_s` (a controller that is gone stops it no later)."""

    id: str  # the point's
    server: str  # the server's id
    frequency_hz: int
    perf: str  # perf's version line, as the run's check read it (the profile's symbols name it)
    max_s: float

    def to_json(self) -> str:
        return json.dumps({f.name: getattr(self, f.name) for f in fields(self)})

    @classmethod
    def from_json(cls, text: str) -> "ProfileRequest":
        what = "a profile's request"
        return _record(cls, cls, _object(text, what), what)


@dataclass(frozen=True)
class ProfileStatus:
    """Where the [server] host's profile of a point is, as host-profile-ctl answers:
    once done, the server's folded stacks (`folded`: zlib, base64) with where their
    names came from, as run/profiling.py made them there."""

    state: str  # starting, sampling, reading, done, failed, stopped; "absent": no such profile there
    id: str | None = None
    reason: str | None = None  # why it failed or stopped
    pid: int | None = None
    updated: float | None = None
    folded: str | None = None
    frequency_hz: float | None = None
    symbols: str | None = None

    @property
    def final(self) -> bool:
        return self.state in FINAL

    def to_json(self) -> JSONObject:
        return {f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name) is not None}

    @classmethod
    def from_json(cls, record: JSON) -> "ProfileStatus":
        what = "a profile's status"
        found = _object(record, what)
        if not isinstance(found.get("state"), str):
            raise ValueError(f"{what}: no state")
        folded = found.get("folded")
        if isinstance(folded, str) and len(folded) > MAX_PROFILE_SENT_CHARS:
            raise ValueError(f"{what}: its folded stacks are {len(folded) / 2**20:.0f} MiB sent, above the "
                             f"{MAX_PROFILE_SENT_CHARS // 2**20} MiB a host may send")
        return _record(cls, cls, found, what)

    @staticmethod
    def pack(text: str) -> str:
        return base64.b64encode(zlib.compress(text.encode(), 6)).decode("ascii")

    def profile(self) -> Profile:
        """The profile it holds, read and checked as the store would take it; ValueError
        (one line) where it holds none that reads."""
        from dbarena.stats import profiles

        if self.folded is None or self.frequency_hz is None or self.symbols is None:
            raise ValueError("a profile's status: done, but it holds no profile")
        if not self.frequency_hz > 0:
            raise ValueError(f"a profile's status: its frequency is {self.frequency_hz} Hz")
        try:
            inflate = zlib.decompressobj()
            data = inflate.decompress(base64.b64decode(self.folded, validate=True), MAX_PROFILE_CHARS)
            if not inflate.eof:
                raise ValueError(f"its folded stacks are above the {MAX_PROFILE_CHARS // 2**20} MiB read"
                                 if len(data) >= MAX_PROFILE_CHARS else "its folded stacks are cut short")
            text = data.decode()
            profiles.parse_folded(text)
        except (ValueError, zlib.error, profiles.FoldedProblem) as exc:  # (binascii.Error, UnicodeDecodeError too)
            raise ValueError(f"a profile's folded stacks do not read: {' '.join(str(exc).split())}") from None
        return Profile(folded=text, frequency_hz=self.frequency_hz, symbols=self.symbols)
