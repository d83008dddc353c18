"""What dbarena asks of a cloud (the Provider protocol), the records of what it made,
the tags on every resource, and what a run does with them: an Ansible inventory of
its hosts and the --target URL of each managed database.

A provider creates what a study's [machines] asks for, tagged; describes every
resource that carries dbarena's tags; deletes resources. It never takes credentials:
the provider's own tools read them from their standard places (environment,
profiles)."""

from __future__ import annotations

import getpass
import json
import socket
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Mapping, Protocol, Sequence

from dbarena.study.model import Machines

TAG_RUN = "dbarena-run"
TAG_OWNER = "dbarena-owner"
TAG_EXPIRES = "dbarena-expires"
TAG_HOST = "dbarena-host"  # the host's name in the inventory (m7g.large-1) or the database's engine


def owner() -> str:
    """Who made it: user@host of the controller (not a secret; says whom to ask)."""
    return f"{getpass.getuser()}@{socket.gethostname()}"


def utc(text: str) -> datetime:
    """An ISO time as the providers and the tags write it, as an aware UTC datetime."""
    when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return when if when.tzinfo else when.replace(tzinfo=timezone.utc)


def stamp(when: datetime) -> str:
    return when.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True)
class Resource:
    """One thing a provider made: an instance or a managed database."""

    kind: str  # "instance" or "database"
    id: str  # the provider's id (i-0abc..., the RDS identifier)
    name: str  # the dbarena-host tag: m7g.large-1, or the database's engine
    type: str  # instance type or instance class
    zone: str | None
    address: str | None  # an instance's SSH address; a database's endpoint
    port: int | None  # a database's port
    engine: str | None  # a database's engine (postgres, mysql)
    created: datetime | None
    state: str
    tags: Mapping[str, str] = field(default_factory=dict)

    @property
    def run(self) -> str | None:
        return self.tags.get(TAG_RUN)

    @property
    def expires(self) -> datetime | None:
        text = self.tags.get(TAG_EXPIRES)
        try:
            return utc(text) if text else None
        except ValueError:
            return None

    def line(self) -> str:
        expires = self.tags.get(TAG_EXPIRES, "no expiry tag")
        return (f"{self.kind} {self.id} ({self.name}, {self.type}, {self.state}) of run {self.run}, "
                f"owner {self.tags.get(TAG_OWNER, '?')}, expires {expires}")

    def as_json(self) -> dict[str, object]:
        return {"kind": self.kind, "id": self.id, "name": self.name, "type": self.type, "zone": self.zone,
                "address": self.address, "port": self.port, "engine": self.engine,
                "created": stamp(self.created) if self.created else None, "state": self.state,
                "tags": dict(self.tags)}

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> Resource:
        created = data.get("created")
        port = data.get("port")
        tags = data.get("tags")
        return cls(kind=str(data["kind"]), id=str(data["id"]), name=str(data["name"]), type=str(data["type"]),
                   zone=str(data["zone"]) if data.get("zone") else None,
                   address=str(data["address"]) if data.get("address") else None,
                   port=int(port) if isinstance(port, (int, str)) and str(port).isdigit() else None,
                   engine=str(data["engine"]) if data.get("engine") else None,
                   created=utc(created) if isinstance(created, str) else None, state=str(data.get("state", "")),
                   tags={str(k): str(v) for k, v in tags.items()} if isinstance(tags, dict) else {})


class Provider(Protocol):
    """A cloud, as dbarena uses one. Every call raises errors.EnvironmentProblem in one
    line when the cloud refuses (no credentials, no capacity, a quota)."""

    name: str

    def create(self, machines: Machines, tags: Mapping[str, str]) -> list[Resource]:
        """Every host and managed database of `machines`, each tagged with `tags` and its
        dbarena-host; returns once they are running (or available)."""
        ...

    def describe(self) -> list[Resource]:
        """Every resource in the region that carries a dbarena-run tag, whoever made it."""
        ...

    def delete(self, resources: Sequence[Resource]) -> None:
        """Delete these resources and wait until they are gone (or going: terminated)."""
        ...


def inventory(hosts: Sequence[Resource], machines: Machines,
              prices: Mapping[str, float | None], currency: str) -> str:
    """The Ansible inventory `fleet run` takes, as JSON (a YAML inventory is JSON too):
    each host labelled by its instance type, with its price per hour (compute and
    disk) for the report's price/performance."""
    entries: dict[str, dict[str, object]] = {}
    for host in hosts:
        variables: dict[str, object] = {"ansible_host": host.address, "ansible_user": machines.ssh_user,
                                        "dbarena_label": host.type}
        price = prices.get(host.name)
        if price is not None:
            variables.update({"dbarena_price_per_hour": round(price, 6), "dbarena_currency": currency})
        entries[host.name] = variables
    return json.dumps({"all": {"hosts": entries}}, indent=2)


def target(database: Resource, user: str) -> str:
    """The --target URL of a managed database (no password in it: PGPASSWORD or
    MYSQL_PWD, or the client's own files, give it)."""
    scheme = "postgresql" if database.engine == "postgres" else "mysql"
    name = "postgres" if database.engine == "postgres" else "mysql"
    return f"{scheme}://{user}@{database.address}:{database.port}/{name}"
