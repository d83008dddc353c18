"""`dbarena fleet`: one study on many hosts through Ansible, and the hidden commands
the fleet runs on each host."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import click

from dbarena.cli.app import cli, store_option
from dbarena.errors import StoreError, UsageError
from dbarena.limits import one_line


@cli.group("fleet")
def fleet_group() -> None:
    """One study on many hosts through Ansible (docs/fleet.md)."""


inventory_option = click.option("-i", "--inventory", "inventory", required=True,
                                type=click.Path(dir_okay=False, path_type=Path),
                                help="An Ansible inventory; host vars dbarena_label, dbarena_price_per_hour or "
                                     "dbarena_price_per_month, dbarena_currency, dbarena_workdir [default: "
                                     "dbarena_workdir_base/<inventory name>, base ~/.dbarena-fleet on the host]; "
                                     "set ansible_python_interpreter too (docs/fleet.md).")
limit_option = click.option("--limit", metavar="PATTERN",
                            help="Only these hosts or groups (comma-separated; shell-style patterns).")


# The options every command a fleet's host runs takes (hidden: the playbooks' own).
workdir_option = click.option("--workdir", required=True, type=click.Path(file_okay=False, path_type=Path),
                              help="The host's fleet working directory (dbarena_workdir).")
request_option = click.option("--request", "request_path", required=True,
                              type=click.Path(dir_okay=False, path_type=Path),
                              help="The controller's request (JSON), removed once read.")


@fleet_group.command("run", context_settings={"ignore_unknown_options": False})
@inventory_option
@limit_option
@click.option("--study", "study_name", required=True, metavar="FILE|NAME",
              help="The study every host runs: a file (copied to the hosts) or a bundled study.")
@click.option("--quick", is_flag=True, help="The study's --quick trial on every host.")
@click.option("--serial", is_flag=True, help="One host at a time [default: all hosts at once].")
@click.option("--poll", "poll_s", type=click.FloatRange(min=0.5), default=10.0, show_default=True, metavar="SECONDS",
              help="How often the hosts' progress is read (--together: a point's hosts are asked to "
                   "answer when it ends, or after this long).")
@click.option("--unreachable-timeout", type=click.FloatRange(min=0), default=300.0, show_default=True,
              metavar="SECONDS", help="Stop waiting for a host that has been unreachable this long "
                                      "(its run goes on there; run again to collect it).")
@click.option("--target", metavar="URL", help="The server every host's study runs against (as `run --target`).")
@click.option("--together", is_flag=True,
              help="Every host a load generator of the same point against one server: --target, or a throwaway "
                   "server on the inventory's [server] host; each level's threads and clients split over the load "
                   "generators, one merged point stored per level (docs/fleet.md).")
@click.option("--label", metavar="LABEL", help="With --together: the label of the run [default: the study's label, else together].")
@store_option
@click.argument("run_args", nargs=-1, type=click.UNPROCESSED, metavar="[-- RUN OPTIONS...]")
def fleet_run(inventory: Path, limit: str | None, study_name: str, quick: bool, serial: bool, poll_s: float,
              unreachable_timeout: float, target: str | None, together: bool, label: str | None,
              store: Path | str, run_args: tuple[str, ...]) -> int:
    """Run a study on every host of an Ansible inventory at once, and bring every host's
    results into the store.

    Each host gets the Debian packages the study needs and dbarena itself (a wheel built
    here, in a virtual environment there), runs the study under its label and price,
    detached from the SSH session, and its store is fetched and merged here (with
    --store postgresql://..., hosts write to it themselves). Options after `--` go to
    every host's `dbarena run` (e.g. `-- --duration 30 --repeat 3`). Running the same
    command again continues: complete hosts are skipped, a host that stopped half-way
    runs only what it has not stored. A host that fails or cannot be reached is shown
    with the task and its own last lines of output.

    Exit status: 0 every host complete, 1 some host failed or unreachable, 2 bad input.
    """
    # Here, not at the top: the hosts' `dbarena fleet host-status` of every poll loads
    # this module too, and `run`'s (the whole run layer) took it from 1 s to 3 s there.
    from dbarena.cli.running import run
    from dbarena.fleet import controller, inventory as inventory_mod
    from dbarena.study import arguments, consent
    from dbarena.study.apply import check_profile_targets
    from dbarena.study.model import check_name

    if label is not None:
        check_name(label, "label")  # (as run --label: not empty, not too long, no control characters)
    hosts = inventory_mod.load(inventory, limit, controller.ansible_command("ansible-inventory"))
    args = [*(("--quick",) if quick else ()), *(("--target", target) if target else ()), *run_args]
    for bad in ("--store", "--label", "--study", "--resume", "--keep", "--progress-file"):
        if bad in args:
            raise UsageError(f"{bad} is not a run option for `fleet run` (the fleet sets it per host)")
    # Checked here, as a host would read it: a bad study or option starts nothing.
    with run.make_context("run", ["--study", study_name, *args], resilient_parsing=False) as ctx:
        params = dict(ctx.params)
    for key in ("store", "no_init", "keep", "resume", "progress_file", "no_system_metrics", "no_server_metrics",
                "probe_s", "no_probe"):
        params.pop(key)
    the_study = arguments.study_from_values(params)
    # A study that runs commands or loads code is refused here, before any host is
    # touched (a --together server host never runs `dbarena run`); `-- --allow-commands`
    # allows it, and reaches every host's `dbarena run` with the other run options.
    consent.check(the_study, params.pop("allow_commands"))
    # A --target is not profiled (a --together run's [server] host profiles its own server).
    check_profile_targets(the_study)
    together = together or the_study.together  # the study's [fleet] together = true
    if label is not None and not together:
        raise UsageError("--label is the label of a --together run (or of a study with [fleet] together = true); "
                         "other hosts take theirs from the inventory")
    if together and serial:
        raise UsageError("--together (or the study's [fleet] together = true) runs every host at once: "
                         "--serial does not go with it")
    study_file = Path(study_name) if Path(study_name).is_file() else None
    fleet = controller.Fleet(inventory=inventory, hosts=hosts, say=lambda line: click.echo(line, nl=True),
                             poll_s=poll_s, unreachable_timeout_s=unreachable_timeout)
    try:
        if together:
            from dbarena.fleet import together as together_mod

            # The inventory's [server] host, if any, runs a throwaway server the others drive.
            servers = [h for h in hosts if inventory_mod.SERVER_GROUP in h.groups]
            if len(servers) > 1:
                raise UsageError(f"inventory: the [{inventory_mod.SERVER_GROUP}] group holds {len(servers)} hosts "
                                 f"({', '.join(h.name for h in servers)}): a --together run has one server")
            server = servers[0] if servers else None
            together_mod.check(the_study, [h for h in hosts if h != server], server)
            controller_run = together_mod.Together(
                fleet, the_study, study_name, study_file.resolve() if study_file else None, list(args), store,
                label or the_study.label or "together", server)
            try:
                return controller_run.run()
            finally:
                if controller_run.outcome.precision:
                    # Where each point's adaptive repeats ended, as `dbarena run` shows it.
                    from dbarena.report import listings, terminal

                    terminal.show(terminal.console(),
                                  listings.precision_table(controller_run.outcome.precision, the_study.precision))
        status = fleet.run(the_study, study_name, study_file.resolve() if study_file else None, list(args), store,
                           serial)
    finally:
        fleet.close()
    return status


@fleet_group.command("status")
@inventory_option
@limit_option
def fleet_status(inventory: Path, limit: str | None) -> int:
    """Where each host's run is: points done / planned, the current point, ETA; for a
    host that failed or cannot be reached, why (its own last lines of output).

    Exit status: 0 no host unreachable or failed (running, complete, or not started),
    1 some host unreachable, failed, stopped half-way or not readable, 2 bad input.
    """
    from dbarena.fleet import controller, inventory as inventory_mod

    hosts = inventory_mod.load(inventory, limit, controller.ansible_command("ansible-inventory"))
    fleet = controller.Fleet(inventory=inventory, hosts=hosts, say=click.echo)
    try:
        fleet.poll(hosts)
        for state in fleet.states.values():
            click.echo(state.block(this_run=False))
        return 1 if any(state.in_trouble for state in fleet.states.values()) else 0
    finally:
        fleet.close()


@fleet_group.command("cleanup")
@inventory_option
@limit_option
def fleet_cleanup(inventory: Path, limit: str | None) -> int:
    """Stop and remove what fleet runs left on the hosts: the throwaway server and the
    load generators' points of a `fleet run --together` whose controller was killed
    (its server would stop itself within a minute, its points run to their end), and
    what dead dbarena processes left there (throwaway instances, scratch directories).
    A host's own study (`fleet run` without --together) needs no controller and is left
    running. Do not run it while a --together run is going: it stops that run's server.

    Exit status: 0 every host answered, 1 some host unreachable or failed, 2 bad input.
    """
    from dbarena.fleet import controller, inventory as inventory_mod

    hosts = inventory_mod.load(inventory, limit, controller.ansible_command("ansible-inventory"))
    fleet = controller.Fleet(inventory=inventory, hosts=hosts, say=click.echo)
    try:
        return fleet.cleanup(hosts)
    finally:
        fleet.close()


@fleet_group.command("host-cleanup", hidden=True)
@workdir_option
def fleet_host_cleanup(workdir: Path) -> None:
    """On a host, for `fleet cleanup`: stop and reap (fleet/hostcleanup.py)."""
    from dbarena.fleet import hostcleanup

    hostcleanup.cleanup(workdir.expanduser(), click.echo)


@fleet_group.command("host-run", hidden=True, context_settings={"ignore_unknown_options": True})
@workdir_option
@click.argument("run_args", nargs=-1, type=click.UNPROCESSED)
def fleet_host_run(workdir: Path, run_args: tuple[str, ...]) -> int:
    """On a host (started by `fleet run`): the study, started, resumed or skipped."""
    from dbarena.fleet import host

    return host.run(workdir.expanduser(), list(run_args))


@fleet_group.command("host-status", hidden=True)
@workdir_option
@click.option("--wait", "wait_s", type=click.FloatRange(min=0), default=0.0,
              help="Wait up to this many seconds for the run to end.")
def fleet_host_status(workdir: Path, wait_s: float) -> None:
    """On a host: its run's state as one JSON line."""
    from dbarena.fleet import host

    click.echo(json.dumps(host.status_when_ended(workdir.expanduser(), wait_s), sort_keys=True))


@fleet_group.command("host-snapshot", hidden=True)
@workdir_option
def fleet_host_snapshot(workdir: Path) -> None:
    """On a host: a consistent copy of its store, to be fetched."""
    from dbarena.fleet import host

    try:
        click.echo(host.snapshot(workdir.expanduser()))
    except (OSError, sqlite3.Error) as exc:
        raise StoreError(f"snapshot of the store in {workdir}: {exc}") from None




@fleet_group.command("host-prepare", hidden=True)
@workdir_option
@request_option
def fleet_host_prepare(workdir: Path, request_path: Path) -> None:
    """On one host of a --together run: the run's provenance and its datasets, as JSON."""
    from dbarena.fleet import loadgen

    try:
        request = json.loads(request_path.read_text())
        request_path.unlink(missing_ok=True)
        answer = loadgen.prepare(workdir.expanduser(), request)
    except Exception as exc:  # said by the controller, in one line
        answer = {"error": one_line(exc, loadgen.STATUS_CHARS)}
    click.echo(json.dumps(answer, default=str))


@fleet_group.command("host-point", hidden=True)
@workdir_option
@request_option
def fleet_host_point(workdir: Path, request_path: Path) -> int:
    """On a host of a --together run, detached: its share of one point."""
    from dbarena.fleet import loadgen

    return loadgen.point(workdir.expanduser(), request_path)


@fleet_group.command("host-tls", hidden=True)
@workdir_option
def fleet_host_tls(workdir: Path) -> None:
    """On a load generator of a --together run: its client certificate for the run, as JSON."""
    from dbarena.fleet import loadgen

    click.echo(json.dumps(loadgen.client_tls(workdir.expanduser())))


@fleet_group.command("host-point-ctl", hidden=True)
@workdir_option
@click.argument("action", type=click.Choice(["wait-ready", "go", "status", "stop"]))
@click.option("--point", "point_id", required=True, help="The point's id, as its request gave it.")
@click.option("--at", type=float, help="go: the common start time (Unix seconds).")
@click.option("--wait", "wait_s", type=click.FloatRange(min=0), default=0.0,
              help="go, status: wait up to this many seconds for the point to end.")
def fleet_host_point_ctl(workdir: Path, action: str, point_id: str, at: float | None, wait_s: float) -> None:
    """On a host of a --together run: the point in flight, asked or told; its status as JSON."""
    from dbarena.fleet import loadgen

    click.echo(json.dumps(loadgen.control(workdir.expanduser(), action, point_id, at, wait_s).to_json()))


@fleet_group.command("host-server", hidden=True)
@workdir_option
@request_option
def fleet_host_server(workdir: Path, request_path: Path) -> int:
    """On the [server] host of a --together run, detached: the run's throwaway server."""
    from dbarena.fleet import serverhost

    return serverhost.serve(workdir.expanduser(), request_path)


@fleet_group.command("host-server-ctl", hidden=True)
@workdir_option
@click.argument("action", type=click.Choice(["wait-ready", "status", "stop"]))
@click.option("--server", "server_id", required=True, help="The server's id, as its request gave it.")
def fleet_host_server_ctl(workdir: Path, action: str, server_id: str) -> None:
    """On the [server] host of a --together run: the server asked or told; its status as JSON."""
    from dbarena.fleet import serverhost

    click.echo(json.dumps(serverhost.control(workdir.expanduser(), action, server_id), default=str))


@fleet_group.command("host-profile", hidden=True)
@workdir_option
@request_option
def fleet_host_profile(workdir: Path, request_path: Path) -> int:
    """On the [server] host of a --together run, detached: its server's profile of one point."""
    from dbarena.fleet import serverprofile

    return serverprofile.record(workdir.expanduser(), request_path)


@fleet_group.command("host-profile-ctl", hidden=True)
@workdir_option
@click.argument("action", type=click.Choice(["check", "wait-sampling", "stop", "discard"]))
@click.option("--point", "point_id", help="The point's id, as the profile's request gave it.")
@click.option("--frequency", type=click.IntRange(min=1), help="check: the samples a second asked for.")
def fleet_host_profile_ctl(workdir: Path, action: str, point_id: str | None, frequency: int | None) -> None:
    """On the [server] host of a --together run: whether perf can sample there, or a
    point's profile asked or told; as JSON."""
    from dbarena.fleet import serverprofile

    if action == "check":
        click.echo(json.dumps(serverprofile.check(frequency or 1)))
        return
    if point_id is None:
        raise UsageError(f"host-profile-ctl {action} needs --point")
    click.echo(json.dumps(serverprofile.control(workdir.expanduser(), action, point_id).to_json()))
