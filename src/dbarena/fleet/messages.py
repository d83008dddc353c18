"""What the controller of `fleet run --together` and a load generator say to each other
about one point, as records on both sides: the request (controller -> host-point), the
host's part of the point (host-point -> part.json -> the controller) and the point's
status as host-point-ctl answers it. JSON on the wire, since the playbooks carry text;
each record reads its JSON back through `from_json`, which refuses (ValueError, one
line) a document that does not fit, so a host running another dbarena says so instead
of failing deep in the controller.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields
from typing import Any, Mapping

from dbarena.host.sysmetrics import SystemSample
from dbarena.model import Measurement, PointSpec, Sample
from dbarena.records import JSONObject

# What a point's status is once it has ended (host-point-ctl waits for these).
FINAL = ("done", "failed", "stopped")


def spec_of(record: Mapping[str, Any]) -> PointSpec:
    return PointSpec(**{**record, "params": tuple(tuple(p) for p in record.get("params", ())),
                        "options": tuple(tuple(o) for o in record.get("options", ()))})


def spec_record(spec: PointSpec) -> JSONObject:
    record: JSONObject = asdict(spec)
    return record


def _object(text: str | Mapping[str, Any], what: str) -> Mapping[str, Any]:
    found = json.loads(text) if isinstance(text, str) else text
    if not isinstance(found, Mapping):
        raise ValueError(f"{what}: not a JSON object")
    return found


def _known(cls: type, record: Mapping[str, Any], what: str) -> dict[str, Any]:
    """The record's fields the class has; a field it does not know is refused."""
    names = {f.name for f in fields(cls)}
    unknown = sorted(set(record) - names)
    if unknown:
        raise ValueError(f"{what}: unknown field(s) {', '.join(unknown)} (another dbarena version on the host?)")
    return dict(record)


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
        record = _known(cls, _object(text, "a point's request"), "a point's request")
        return cls(**{**record, "spec": spec_of(record["spec"])})


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
    def from_json(cls, record: Mapping[str, Any]) -> "Part":
        found = _known(cls, _object(record, "a host's part"), "a host's part")
        measurement = found.get("measurement")
        return cls(**{**found, "command": tuple(found["command"]),
                      "system": tuple(SystemSample(**s) for s in found.get("system") or ()),
                      "samples": tuple(Sample(**s) for s in found.get("samples") or ()),
                      "measurement": Measurement(**measurement) if measurement is not None else None})


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

    @property
    def final(self) -> bool:
        return self.state in FINAL

    def to_json(self) -> JSONObject:
        record: JSONObject = {"state": self.state}
        for name in ("id", "reason", "pid", "tool_pid", "updated"):
            if getattr(self, name) is not None:
                record[name] = getattr(self, name)
        if self.part is not None:
            record["part"] = self.part.to_json()
        return record

    @classmethod
    def from_json(cls, record: Mapping[str, Any]) -> "Status":
        found = _object(record, "a point's status")
        if not isinstance(found.get("state"), str):
            raise ValueError("a point's status: no state")
        part = found.get("part")
        return cls(state=found["state"], id=found.get("id"), reason=found.get("reason"), pid=found.get("pid"),
                   tool_pid=found.get("tool_pid"), updated=found.get("updated"),
                   part=Part.from_json(part) if part else None)
