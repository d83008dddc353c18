"""`dbarena run --study FILE` of a study with [machines]: the estimate and the cost
guard (before any provider is called), the machines made, the fleet run that exists
on what was made (each managed database its engine's --target), and everything
deleted, on success, failure, Ctrl-C and SIGTERM alike (a SIGKILLed controller's
record is found by the next cloud command, machines.reap_orphans).

While the hosts run, the spend (from the resources' creation times, with the billing
granularity) is held against --max-cost after every poll, looking ahead to the next
poll and the deletion; when it would reach it, the hosts' stores are fetched as they
are (what was measured is kept) and everything is deleted.
Each run measured on a host carries in its options, under "machine", what it ran on:
provider, region, instance type, zone, image, the prices with their source and date,
and the times to create, be ready and delete its host.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Sequence

from dbarena import shield
from dbarena.cloud import estimate as estimate_mod
from dbarena.cloud import machines as machines_mod
from dbarena.cloud.provider import Provider, Resource
from dbarena.errors import DbarenaError, Interrupted, UsageError
from dbarena.study.model import Study

if TYPE_CHECKING:  # (imported when a run needs it: the fleet's Ansible is not loaded for an estimate)
    from dbarena.fleet import controller

Say = Callable[[str], None]
# How long deleting the machines is counted for when the guard looks ahead (an EC2
# instance is billed until it is terminated: about a minute): an allowance, not a
# measurement.
DELETE_ALLOWANCE_S = 120.0


@dataclass(frozen=True)
class Ended:
    status: int  # the fleet run's: 0 every host complete, else 1
    run: str  # the machines' run (its tags)
    stopped: str | None  # why the cost guard stopped it, or None
    delete_s: float


def check(study: Study, max_cost: float | None, max_instances: int | None) -> None:
    """What `run` checks of a study with [machines] before anything (no provider is
    called): the estimate against --max-cost and --max-instances, and what the
    on-demand run supports."""
    machines = study.machines
    assert machines is not None
    if study.together:
        raise UsageError(f"{study.source}: [fleet] together with [machines]: run --study runs the study on each "
                         "host; make them with `dbarena cloud up` and run `dbarena fleet run --together`")
    if len(machines.managed) > 1:
        raise UsageError(f"{study.source}: machines.managed: run --study gives one managed database as the --target "
                         "of the hosts' runs; with more, use `dbarena cloud up` and `fleet run` per engine")
    if not machines.instance_types:
        raise UsageError(f"{study.source}: machines.instance_types: run --study runs the study on hosts: give one")
    machines_mod.checked_estimate(study, max_cost, max_instances)


def _fetch_before_deleting(fleet: controller.Fleet | None, store: Path | str, run: str, say: Say,
                           how: str) -> None:
    """What the hosts measured fetched into a store file before their machines are
    deleted (a PostgreSQL store has it already), whatever fetching meets: an interrupt
    or a failure of the controller is not a reason to lose it."""
    if fleet is None or not isinstance(store, Path):
        say(f"stopped: deleting what run {run} made (the hosts' results are not fetched)"
            if how == "failed" else f"stopped: deleting what run {run} made")
        return
    say(f"{how}: fetching what the hosts measured, then deleting what run {run} made")
    with shield.shielded(), contextlib.suppress(Exception):
        fleet.fetch([h for h in fleet.hosts if fleet.states[h.name].fetched is None], store)


def run(study: Study, study_file: Path, run_args: Sequence[str], store: Path | str, say: Say, *,
        max_cost: float | None, max_instances: int | None, poll_s: float = 10.0) -> Ended:
    """Make the study's machines, run it on them as `fleet run` does, delete them."""
    from dbarena.fleet import controller, inventory as inventory_mod

    machines = study.machines
    assert machines is not None
    # Absolute, as `fleet run` gives it: Ansible's copy looks for a relative source
    # beside its playbook, not in this process's directory (`run --study local.toml`).
    study_file = study_file.resolve()
    estimated, cat = machines_mod.checked_estimate(study, max_cost, max_instances)
    machines_mod.reap_orphans(say)  # what killed controllers of this machine left, first
    provider = machines_mod.provider_for(machines.provider, machines.region)
    made = machines_mod.up(study, provider, estimated, cat, say, kept=False)
    delete_s = 0.0
    fleet = None
    measured: dict[str, list[str]] = {}
    left: str | None = None  # why the hosts' runs still running were ended: their machines deleted
    try:
        args = list(run_args)
        for engine, url in made.targets.items():
            say(f"{engine}: the managed database {url} is the hosts' --target")
            args += ["--target", url]

        def guard() -> str | None:
            return estimate_mod.would_pass(estimated, made.created, datetime.now(timezone.utc), cat, max_cost,
                                           poll_s + DELETE_ALLOWANCE_S)

        hosts = inventory_mod.load(made.inventory, None, controller.ansible_command("ansible-inventory"))
        fleet = controller.Fleet(inventory=made.inventory, hosts=hosts, say=say, poll_s=poll_s, stop=guard,
                                 passwords={**controller.passwords_from_environment(), **passwords_of(provider, made)},
                                 machines={h.name: machine_of(h, made, machines.image, None) for h in made.hosts})
        status = fleet.run(study, str(study_file), study_file, args, store, serial=False)
        stopped = fleet.stopped
        if stopped is not None:
            left = "its machine was deleted at --max-cost"
    except (KeyboardInterrupt, Interrupted) as exc:
        # What the hosts measured is fetched before their machines go (nothing measured
        # is lost); held against a second Ctrl-C, as the deletion is.
        left = f"its machine was deleted: {'SIGTERM' if isinstance(exc, Interrupted) else 'Ctrl-C'}"
        _fetch_before_deleting(fleet, store, made.run, say, "stopped")
        raise
    except Exception:
        # A failure of the controller's own (a play that would not start, a file of its
        # working directory gone) is not the hosts': what they measured is on them, and
        # is fetched before their machines go, as on an interrupt.
        _fetch_before_deleting(fleet, store, made.run, say, "failed")
        raise
    except BaseException:
        say(f"stopped: deleting what run {made.run} made (the hosts' results are not fetched)")
        raise
    finally:
        # Held against Ctrl-C and SIGTERM: a teardown cut half-way leaks money.
        with shield.shielded():
            if fleet is not None:
                # Read before the fleet's directory (where they were fetched) is removed.
                measured = {name: _uuids(state.fetched) for name, state in fleet.states.items()}
                fleet.close()
            started = time.monotonic()
            machines_mod.delete_run(provider, made.run, made.record, say)
            delete_s = time.monotonic() - started
            if isinstance(store, Path):
                _provenance(store, made, measured, machines.image, delete_s, left)
    if stopped is not None:
        say(f"stopped at --max-cost: the points measured until then are kept in {store}")
    return Ended(status=status, run=made.run, stopped=stopped, delete_s=delete_s)


def passwords_of(provider: Provider, made: machines_mod.Made) -> dict[str, str]:
    """The managed databases' master passwords (what the provider made them with), by
    the variable their engine's clients read one from: handed to the fleet, which gives
    them to its plays and, in a private file, to the hosts' runs, as a password a user
    exports would be; never put in this process's environment."""
    from dbarena import engines  # (the engines' modules load psycopg: not for every cloud command)

    return {engines.first(r.engine).password_env: provider.passwords[r.id] for r in made.resources
            if r.kind == "database" and r.engine in engines.ENGINES and r.id in provider.passwords}


def machine_of(host: Resource, made: machines_mod.Made, image: str | None, delete_s: float | None) -> dict[str, Any]:
    """What a run measured on `host` ran on, and what it cost: its options' "machine"
    (`delete_s` None: not deleted yet, as the run begins)."""
    machines = made.estimated
    prices = [{"part": line.part, "name": line.name, "quantity": line.quantity, "per_hour": line.per_hour,
               "price": line.price.amount if line.price else None, "unit": line.price.unit if line.price else None,
               "source": line.price.source if line.price else None, "date": line.price.date if line.price else None,
               "how": line.price.how if line.price else None}
              for line in machines.lines if line.resource == host.name]
    timing = made.timings.get(host.name, {})
    return {"provider": machines.provider, "region": machines.region, "instance_type": host.type,
            "zone": host.zone,
            "image": image or ("this machine" if machines.provider == "local" else None), "host": host.name, "resource": host.id, "cloud_run": made.run,
            "currency": machines.currency, "catalogue": machines.catalogue, "prices": prices,
            "create_s": timing.get("create_s"), "ready_s": timing.get("ready_s"),
            "delete_s": round(delete_s, 3) if delete_s is not None else None}


def _uuids(fetched: Path | None) -> list[str]:
    """The runs of a store fetched from a host (none when nothing arrived)."""
    from dbarena.store.database import Store

    if fetched is None or not fetched.exists():
        return []
    with Store(fetched, readonly=True) as source:
        return [r.uuid for r in source.runs() if r.uuid]


def _provenance(store: Path, made: machines_mod.Made, measured: dict[str, list[str]], image: str | None,
                delete_s: float, left: str | None = None) -> None:
    """Each host's runs (found by the UUIDs of the store fetched from it, as the
    fleet's outlier flags are) get the time their machine took to delete in their
    options' "machine" (recorded as they began, but for that; a run of a host that
    did not record it gets it whole); those still running when their machines were
    deleted (`left`: why) are marked interrupted, their points kept: no host is left
    to finish them."""
    from dbarena.store.database import Store

    if not store.exists():
        return
    with Store(store) as db:
        by_uuid = {r.uuid: r for r in db.runs()}
        for host in made.hosts:
            for uuid in measured.get(host.name, []):
                if uuid in by_uuid:
                    recorded = by_uuid[uuid].options.get("machine")
                    machine = {**recorded, "delete_s": round(delete_s, 3)} if isinstance(recorded, dict) \
                        else machine_of(host, made, image, delete_s)
                    db.update_options(by_uuid[uuid].id, {"machine": machine})
                    if left is not None and by_uuid[uuid].status == "running":
                        db.finish_run(by_uuid[uuid].id, "interrupted", reason=left)
