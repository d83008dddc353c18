"""What dbarena asks of a cloud (the Provider protocol), the records of what it made,
the tags on every resource, and what a run does with them: an Ansible inventory of
its hosts and the --target URL of each managed database.

A provider creates what a study's [machines] asks for, tagged; describes every
resource that carries dbarena's tags; deletes resources. It never takes credentials:
the provider's own tools read them from their standard places (environment,
profiles)."""

from __future__ import annotations

import contextlib
import getpass
import json
import os
import re
import secrets
import socket
import stat
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Mapping, Protocol, Sequence

from dbarena.errors import EnvironmentProblem
from dbarena.study.model import Machines

TAG_RUN = "dbarena-run"
TAG_OWNER = "dbarena-owner"
TAG_OWNER_ID = "dbarena-owner-id"  # the installation that made it (owner_id()): what reaping goes by
TAG_EXPIRES = "dbarena-expires"
TAG_HOST = "dbarena-host"  # the host's name in the inventory (m7g.large-1) or the database's engine

OWNER_ID_FILE = "owner-id"
_OWNER_ID = re.compile(r"[0-9a-f]{32}")


def owner() -> str:
    """Who made it: user@host of the controller (not a secret; says whom to ask). Not
    who may delete it: two state directories (or containers) of one user and host have
    the same user@host, and each knows only its own runs (owner_id())."""
    return f"{getpass.getuser()}@{socket.gethostname()}"


def owner_id() -> str:
    """This installation's identity: random, made once in its state directory
    (state_dir()/cloud/owner-id, private) and tagged on everything it makes, so that
    `cloud reap` and `cloud down` act only on what this installation made. Two state
    directories, or two containers, never share one (user@host they may)."""
    from dbarena.lifecycle import state

    folder = state.state_dir() / "cloud"
    path = folder / OWNER_ID_FILE
    try:
        return _read_owner_id(path)
    except FileNotFoundError:
        pass
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    # Written whole under another name, then linked into place: two processes making it
    # at once end with one identity (the loser reads the winner's), never a half file.
    temporary = folder / f".{OWNER_ID_FILE}.{os.getpid()}.{secrets.token_hex(4)}"
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(secrets.token_hex(16) + "\n")
        with contextlib.suppress(FileExistsError):
            os.link(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)
    return _read_owner_id(path)


def _read_owner_id(path: Path) -> str:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)  # (a FIFO: no wait)
    except OSError as exc:
        if isinstance(exc, FileNotFoundError):
            raise
        raise EnvironmentProblem(f"{path}: cannot read dbarena's owner identity: {exc.strerror or exc}") from None
    with os.fdopen(fd, "rb") as f:
        info = os.fstat(f.fileno())
        text = f.read(64).decode("ascii", "replace").strip() if stat.S_ISREG(info.st_mode) else ""
    if not _OWNER_ID.fullmatch(text) or info.st_uid != os.geteuid():
        # Never made anew here: what this installation tagged with the old one would
        # be left to no one. The user removes it, knowing that.
        raise EnvironmentProblem(f"{path}: not an owner identity dbarena made (32 hex digits, a file of this "
                                 "user's): cloud commands refuse until it is repaired or removed")
    return text


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
    # When it answered (an instance's SSH, a database's endpoint), where the provider
    # says; else None and the caller counts the moment create() returned.
    ready: datetime | None = None

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
                "tags": dict(self.tags), "ready": stamp(self.ready) if self.ready else None}

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> Resource:
        created = data.get("created")
        port = data.get("port")
        tags = data.get("tags")
        ready = data.get("ready")
        return cls(kind=str(data["kind"]), id=str(data["id"]), name=str(data["name"]), type=str(data["type"]),
                   zone=str(data["zone"]) if data.get("zone") else None,
                   address=str(data["address"]) if data.get("address") else None,
                   port=int(port) if isinstance(port, (int, str)) and str(port).isdigit() else None,
                   engine=str(data["engine"]) if data.get("engine") else None,
                   created=utc(created) if isinstance(created, str) else None, state=str(data.get("state", "")),
                   tags={str(k): str(v) for k, v in tags.items()} if isinstance(tags, dict) else {},
                   ready=utc(ready) if isinstance(ready, str) else None)


class CapacityError(EnvironmentProblem):
    """The provider has no capacity for what was asked in that zone (AWS's
    InsufficientInstanceCapacity ...): another zone of the region may have it."""

    def __init__(self, message: str, zone: str | None):
        super().__init__(message)
        self.zone = zone


class Provider(Protocol):
    """A cloud, as dbarena uses one. Every call raises errors.EnvironmentProblem in one
    line when the cloud refuses (no credentials, a quota), CapacityError when a zone
    has no capacity for what was asked."""

    name: str
    @property
    def passwords(self) -> Mapping[str, str]:
        """The master password of each managed database it made (identifier ->
        password), for the run's clients only; empty for a provider of hosts."""

    def zones(self) -> list[str]:
        """The zones of the region a creation may be tried in, in order ([]: one try,
        where the provider chooses)."""
        ...

    def create(self, machines: Machines, tags: Mapping[str, str], zone: str | None = None) -> list[Resource]:
        """Every host and managed database of `machines`, each tagged with `tags` and its
        dbarena-host, in `zone` (None: where the provider chooses); returns once they
        are running (or available)."""
        ...

    def describe(self) -> list[Resource]:
        """Every resource in the region that carries a dbarena-run tag, whoever made it."""
        ...

    def delete(self, resources: Sequence[Resource]) -> None:
        """Delete these resources and wait until they are gone (or going: terminated)."""
        ...

    def host_vars(self, host: Resource, machines: Machines) -> dict[str, object]:
        """How Ansible reaches this host beyond its address (user, port, key, Python, the
        working directories): inventory variables."""
        ...


def inventory(hosts: Sequence[Resource], machines: Machines, prices: Mapping[str, float | None], currency: str,
              host_vars: Mapping[str, Mapping[str, object]] | None = None) -> str:
    """The Ansible inventory `fleet run` takes, as JSON (a YAML inventory is JSON too):
    each host labelled by its instance type, with its price per hour (compute and
    disk) for the report's price/performance, and the provider's `host_vars` of it."""
    entries: dict[str, dict[str, object]] = {}
    for host in hosts:
        variables: dict[str, object] = {"ansible_host": host.address, "ansible_user": machines.ssh_user,
                                        "dbarena_label": host.type, **(host_vars or {}).get(host.name, {})}
        price = prices.get(host.name)
        if price is not None:
            variables.update({"dbarena_price_per_hour": round(price, 6), "dbarena_currency": currency})
        entries[host.name] = variables
    return json.dumps({"all": {"hosts": entries}}, indent=2)


def target(database: Resource, user: str) -> str:
    """The --target URL of a managed database (no password in it: PGPASSWORD or
    MYSQL_PWD, or the client's own files, give it)."""
    from dbarena import engines  # (the engines' modules load psycopg: not for every cloud command)

    # (A database made: its engine, address and port known.)
    assert database.engine is not None and database.address is not None and database.port is not None
    return engines.first(database.engine).target_url(database.address, database.port, user)
