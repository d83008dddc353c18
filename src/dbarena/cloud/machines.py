"""Up, down and reap: a study's [machines] made (after the estimate and the cost
guard, before any cloud is called), deleted, and what is left found and deleted.

Every run that makes resources keeps a record in the state directory
(lifecycle.state.state_dir()/cloud/RUN.json: the provider, region, owner process, the
resources, the inventory). `cloud up` marks its record kept (deleted by `cloud down`);
a `run --study` owns its record for as long as it runs, so a record whose owner is
gone and was not kept is a controller that was killed: the next cloud command deletes
what it made (reap_orphans). What no record knows of is found by its tags (`cloud
reap`): expired, or made by a run this state directory no longer has; and only ever
what carries this installation's owner id (provider.owner_id()) and a valid expiry.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from dbarena.cloud import catalogue as catalogue_mod
from dbarena.cloud import estimate as estimate_mod
from dbarena.cloud.provider import (
    OWNER_ID_FILE, TAG_EXPIRES, TAG_OWNER, TAG_OWNER_ID, TAG_RUN, CapacityError, Provider, Resource, inventory,
    owner, owner_id, stamp, target,
)
from dbarena.errors import UsageError
from dbarena.lifecycle import state
from dbarena.study.model import Machines, Study

Say = Callable[[str], None]


def records_dir() -> Path:
    return state.state_dir() / "cloud"


def provider_for(name: str, region: str) -> Provider:
    """The provider of that name (a second one is a module and a line here)."""
    if name == "aws":
        from dbarena.cloud.aws import Aws

        return Aws(region)
    if name == "local":
        from dbarena.cloud.local import Local

        return Local(region)
    raise UsageError(f"provider {name!r}: dbarena knows aws and local")


@dataclass
class Made:
    """What one run made, and where its record, inventory and targets are."""

    run: str
    record: Path
    resources: list[Resource]
    inventory: Path
    targets: dict[str, str]  # engine -> --target URL of its managed database
    estimated: estimate_mod.CostEstimate
    catalogue: catalogue_mod.Catalogue
    # resource name -> {"create_s": ..., "ready_s": ...}: from the request to the
    # provider's creation time, and to when it answered (timings()).
    timings: dict[str, dict[str, float]] = field(default_factory=dict)
    # engine -> the private file (0600) holding its master password for the clients: a
    # libpq password file (PGPASSFILE) or a MySQL option file (--defaults-extra-file).
    secrets: dict[str, Path] = field(default_factory=dict)

    @property
    def hosts(self) -> list[Resource]:
        return [r for r in self.resources if r.kind == "instance"]

    @property
    def created(self) -> dict[str, datetime]:
        """resource name as the estimate names it -> when it was created."""
        out = {}
        for r in self.resources:
            if r.created is not None:
                out[r.name if r.kind == "instance" else f"{r.engine} (managed)"] = r.created
        return out


def _write(path: Path, data: dict[str, Any]) -> None:
    _write_private(path, json.dumps(data, indent=1))


def _write_private(path: Path, text: str) -> None:
    """Write a file only its owner can read, from its creation on (never a moment
    readable by others), whole or not at all."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    temporary = path.with_name(path.name + ".tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    temporary.replace(path)


def run_files(record: Path) -> list[Path]:
    """Every file the run of this record keeps: the record, its inventory, its password
    files (RUN.json, RUN.inventory.json, RUN.ENGINE.pgpass / .my.cnf)."""
    run = record.name.removesuffix(".json")
    return [record, *(p for p in record.parent.glob(f"{run}.*") if p != record)]


def write_secrets(record: Path, databases: Sequence[Resource], passwords: Mapping[str, str]) -> dict[str, Path]:
    """Each managed database's master password, in a private file beside the run's
    record that its clients read themselves (never in an argument or the output):
    PostgreSQL's password file (PGPASSFILE=FILE), MySQL's option file
    (--defaults-extra-file=FILE). engine -> the file."""
    from dbarena import engines  # (the engines' modules load psycopg: not for every cloud command)
    from dbarena.cloud.aws import MASTER_USER

    run = record.name.removesuffix(".json")
    out: dict[str, Path] = {}
    for r in databases:
        password = passwords.get(r.id)
        if password is None or r.engine is None or r.address is None or r.port is None:
            continue
        suffix, text = engines.first(r.engine).password_file(r.address, r.port, MASTER_USER, password)
        path = record.parent / f"{run}.{r.engine}.{suffix}"
        _write_private(path, text)
        out[r.engine] = path
    return out


RUN_NAME = re.compile(r"dbarena-[0-9]{14}-[0-9a-f]{6}")


def new_run() -> str:
    """A run's name, unique and valid as a tag, an RDS identifier's start and a file name."""
    return f"dbarena-{datetime.now(timezone.utc):%Y%m%d%H%M%S}-{secrets.token_hex(3)}"


def checked_estimate(study: Study, max_cost: float | None, max_instances: int | None
                     ) -> tuple[estimate_mod.CostEstimate, catalogue_mod.Catalogue]:
    """The estimate, refused in one line beyond --max-cost or --max-instances: before
    any cloud is called."""
    if study.machines is None:
        raise UsageError(f"{study.source}: no [machines]: nothing to create")
    if study.machines.provider == "local" and study.machines.managed:
        raise UsageError(f"{study.source}: machines.managed: the local provider makes hosts, not managed databases")
    cat = catalogue_mod.for_machines(study.machines, study.source)
    estimated = estimate_mod.estimate(study, cat)
    estimate_mod.check_max_instances(estimated, max_instances)
    estimate_mod.check_max_cost(estimated, max_cost)
    return estimated, cat


def up(study: Study, provider: Provider, estimated: estimate_mod.CostEstimate, cat: catalogue_mod.Catalogue,
       say: Say, *, kept: bool) -> Made:
    """Make the study's [machines], tagged, recorded before the first call; on any
    failure or interruption, delete what this run made before the error goes on."""
    machines = study.machines
    assert machines is not None  # (checked_estimate refused a study without)
    run = new_run()
    now = datetime.now(timezone.utc)
    lifetime = machines.lifetime_s or int(2 * estimated.longest_s + 3600)
    tags = {TAG_RUN: run, TAG_OWNER: owner(), TAG_OWNER_ID: owner_id(),
            TAG_EXPIRES: stamp(now + timedelta(seconds=lifetime))}
    record = records_dir() / f"{run}.json"
    data: dict[str, Any] = {"run": run, "provider": provider.name, "region": machines.region,
                            "owner_pid": os.getpid(), "owner_start": state.start_time(os.getpid()),
                            "kept": False, "study": study.source, "expires": tags[TAG_EXPIRES], "resources": []}
    _write(record, data)
    say(f"creating {len(estimated.resources)} resource(s) of run {run} on {provider.name} {machines.region} "
        f"(expires {tags[TAG_EXPIRES]})")
    try:
        resources, asked = _create(provider, machines, tags, run, record, say)
    except BaseException:
        say(f"creation failed or interrupted: deleting what run {run} made")
        delete_run(provider, run, record, say)
        raise
    made = _made(run, record, resources, machines, estimated, cat, provider)
    made.timings.update(timings(resources, asked, datetime.now(timezone.utc)))
    made.secrets.update(write_secrets(record, [r for r in resources if r.kind == "database"], provider.passwords))
    data.update({"resources": [r.as_json() for r in resources], "kept": kept, "inventory": str(made.inventory),
                 "targets": made.targets, "secrets": {k: str(v) for k, v in made.secrets.items()},
                 "timings": made.timings})
    _write(record, data)
    for name, t in made.timings.items():
        say(f"{name}: created in {t['create_s']:.1f} s, ready in {t['ready_s']:.1f} s")
    return made


def _create(provider: Provider, machines: Machines, tags: dict[str, str], run: str, record: Path,
            say: Say) -> tuple[list[Resource], datetime]:
    """provider.create, tried again in another zone of the region when one has no
    capacity (what the first try made deleted first); refused in one line when no zone
    has it. What was made, and when the try that made it was asked."""
    tried: list[str | None] = []
    zones: list[str] | None = None
    zone: str | None = None
    while True:
        asked = datetime.now(timezone.utc)
        try:
            return provider.create(machines, tags, zone), asked
        except CapacityError as exc:
            tried += [zone, exc.zone]
            where = exc.zone or zone or "the zone the provider chose"
            say(f"no capacity in {where}: {exc}")
            delete_run(provider, run, record, say, keep_record=True)
            if zones is None:
                zones = provider.zones()
            left = [z for z in zones if z not in tried]
            if not left:
                named = ", ".join(z for z in dict.fromkeys(tried) if z) or "the one the provider chose"
                raise CapacityError(f"{provider.name} {machines.region}: no capacity for the study's machines in any "
                                    f"zone tried ({named}); nothing is left running: try another instance type or "
                                    f"region", None) from None
            zone = left[0]
            say(f"trying again in {zone}")


def timings(resources: list[Resource], asked: datetime, now: datetime) -> dict[str, dict[str, float]]:
    """Each resource's time to be created (the provider's creation time) and to be
    ready (when it answered, or `now`: when create() returned), from `asked`. A
    provider's times have a second's resolution: a negative difference is 0."""
    out: dict[str, dict[str, float]] = {}
    for r in resources:
        created = r.created or now
        ready = r.ready or now
        out[r.name] = {"create_s": round(max(0.0, (created - asked).total_seconds()), 3),
                       "ready_s": round(max(0.0, (ready - asked).total_seconds()), 3)}
    return out


def _made(run: str, record: Path, resources: list[Resource], machines: Machines,
          estimated: estimate_mod.CostEstimate, cat: catalogue_mod.Catalogue, provider: Provider) -> Made:
    hosts = [r for r in resources if r.kind == "instance"]
    prices: dict[str, float | None] = {}
    for host in hosts:
        parts = [line.per_hour for line in estimated.lines if line.resource == host.name]
        total = None if any(p is None for p in parts) else sum(p for p in parts if p is not None)
        # A host priced at nothing (the local provider's prices not given: counted as
        # zero) has no price per hour for the report: none in the inventory, which takes
        # only a positive one (else the fleet refuses it after the machines are made).
        prices[host.name] = total if total is not None and total > 0 else None
    path = record.with_suffix(".inventory.json")
    _write(path, json.loads(inventory(hosts, machines, prices, cat.currency,
                                      {h.name: provider.host_vars(h, machines) for h in hosts})))
    from dbarena.cloud.aws import MASTER_USER

    targets = {r.engine: target(r, MASTER_USER) for r in resources if r.kind == "database" and r.engine}
    return Made(run=run, record=record, resources=resources, inventory=path, targets=targets, estimated=estimated,
                catalogue=cat)


def delete_run(provider: Provider, run: str, record: Path, say: Say, keep_record: bool = False) -> int:
    """Delete every resource tagged with `run` and this installation's owner id (found
    by its tags, not by the record: what a creation cut short made is in no record),
    then the run's record; say how long the deletion took. One tagged with the run but
    not with this owner id is not this installation's: said, and left."""
    mine = owner_id()
    tagged = [r for r in provider.describe() if r.run == run]
    found = [r for r in tagged if mine_to_reap(r, mine)]
    for r in tagged:
        if r not in found:
            say(f"left {r.line()} alone: not tagged with this installation's {TAG_OWNER_ID}")
    for r in found:
        say(f"deleting {r.line()}")
    started = time.monotonic()
    provider.delete(found)
    if found:
        say(f"run {run}: {len(found)} resource(s) deleted in {time.monotonic() - started:.1f} s")
    if not keep_record:
        for path in run_files(record):
            path.unlink(missing_ok=True)
    return len(found)


def down(run: str, say: Say) -> int:
    """Delete what a run made (`cloud down RUN`); the number of resources deleted."""
    record = records_dir() / f"{run}.json"
    data = _read(record)
    if data is None:
        raise UsageError(f"no run {run!r} here (records in {records_dir()}); `dbarena cloud reap` finds "
                         "resources by their tags")
    return delete_run(provider_for(str(data["provider"]), str(data["region"])), run, record, say)


def _read(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and isinstance(data.get("run"), str) else None


def records() -> list[dict[str, Any]]:
    folder = records_dir()
    found = [_read(p) for p in sorted(folder.glob("*.json")) if not p.name.endswith(".inventory.json")] \
        if folder.is_dir() else []
    return [d for d in found if d is not None]


def orphaned(data: dict[str, Any]) -> bool:
    """A record of a run whose controller is gone and that was not kept (`cloud up`)."""
    pid, start = data.get("owner_pid"), data.get("owner_start")
    return not data.get("kept") and not state.alive(pid if isinstance(pid, int) else None,
                                                    start if isinstance(start, int) else None)


def reap_orphans(say: Say) -> int:
    """Delete what killed controllers made (their records: not kept, owner gone)."""
    deleted = 0
    for data in records():
        if orphaned(data):
            say(f"run {data['run']}'s controller (process {data.get('owner_pid')}) is gone: deleting what it made")
            provider = provider_for(str(data["provider"]), str(data["region"]))
            deleted += delete_run(provider, str(data["run"]), records_dir() / f"{data['run']}.json", say)
    return deleted


def mine_to_reap(r: Resource, mine: str) -> bool:
    """Whether reaping may touch `r` at all: it carries this installation's owner id.
    user@host (TAG_OWNER) is not enough: another state directory or container of the
    same user and host has it too, and runs this one has no record of."""
    return r.tags.get(TAG_OWNER_ID) == mine


def reapable(resources: Sequence[Resource], now: datetime) -> list[tuple[Resource, str]]:
    """The resources `cloud reap` deletes, each with why: among those this installation
    made (its owner id) and tagged with a valid expiry, those past it, or whose run
    this installation has no live record of. Nothing else, whoever's it is: another
    installation's, or one without a valid expiry (a hand-made `dbarena-run` tag on a
    production database), is never ours to delete."""
    live = {str(d["run"]) for d in records() if not orphaned(d)}
    mine = owner_id()
    out = []
    for r in resources:
        expires = r.expires
        if not mine_to_reap(r, mine) or expires is None:
            continue
        if expires <= now:
            out.append((r, f"expired at {r.tags.get(TAG_EXPIRES)}"))
        elif r.run not in live:
            out.append((r, "its run is gone"))
    return out


def reap(provider: Provider, yes: bool, say: Say, now: datetime | None = None) -> int:
    """List what is reapable; delete it with `yes`. The number listed."""
    described = provider.describe()
    found = reapable(described, now or datetime.now(timezone.utc))
    for r, why in found:
        say(f"{'deleting' if yes else 'would delete'} {r.line()}: {why}")
    mine = owner_id()
    others = sum(1 for r in described if not mine_to_reap(r, mine) or r.expires is None)
    if others:
        say(f"left {others} tagged resource(s) alone: not made by this installation (tagged with its "
            f"{TAG_OWNER_ID}, {records_dir() / OWNER_ID_FILE}) with a valid expiry tag")
    if not found:
        say("nothing to reap")
    elif yes:
        provider.delete([r for r, _ in found])
        runs = {r.run for r, _ in found}
        for run in runs:
            # (A tag names the record: only a run name as new_run() makes them, never a path.)
            if run is not None and RUN_NAME.fullmatch(run):
                for path in run_files(records_dir() / f"{run}.json"):
                    path.unlink(missing_ok=True)
    else:
        say(f"{len(found)} resource(s) listed: nothing deleted (--yes deletes them)")
    return len(found)
