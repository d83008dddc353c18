"""A `fleet run --together` controller interrupted or killed at any moment (issue 45):
what it started on its hosts is stopped, by itself when it can (Ctrl-C, SIGTERM) and
otherwise by the next dbarena command, which also marks its run interrupted. Its steps
are replaced here; tests/e2e/test_fleet_kill_anywhere.py does it over real SSH."""

from __future__ import annotations

import os
from datetime import datetime, timezone

import pytest


@pytest.mark.parametrize("interrupt", [KeyboardInterrupt, "Interrupted"], ids=["Ctrl-C", "SIGTERM"])
def test_a_controller_interrupted_while_its_server_starts_stops_that_server(interrupt, monkeypatch, tmp_path):
    """Issue 45: the controller Ctrl-C'd (or sent SIGTERM) while the [server] host's
    server starts, detached there, left it running until its lease ran out or `fleet
    cleanup` came; it is stopped as at a run's end, and the interrupt goes on."""
    from dbarena.errors import Interrupted
    from dbarena.fleet import together
    from dbarena.fleet.inventory import Host
    from dbarena.study import arguments

    from types import SimpleNamespace

    from dbarena.fleet import togetherserver

    raised = Interrupted if interrupt == "Interrupted" else interrupt
    steps: list[str] = []
    run = object.__new__(together.Together)
    run.fleet = SimpleNamespace(ansible=SimpleNamespace(inventory=tmp_path / "hosts.ini", passwords={}, secrets=[]),
                                poll_s=0.01)
    run.study = arguments.study_from_args(["--engine", "postgres", "--workload", "pgbench-select-only"])
    run.hosts = [Host(name="alpha", label="alpha", price_per_hour=None, price_per_month=None, currency=None,
                      workdir="/w/alpha")]
    run.server = Host(name="gamma", label="gamma", price_per_hour=None, price_per_month=None, currency=None,
                      workdir="/w/gamma")
    run.store_arg, run.say = tmp_path / "r.db", lambda line: None
    monkeypatch.setattr(together, "check", lambda *args: None)
    monkeypatch.setattr(run, "install", lambda: True)

    def start(*args: object) -> bool:
        steps.append("start")
        raise raised()

    monkeypatch.setattr(togetherserver.ServerHost, "start", start)
    monkeypatch.setattr(togetherserver.ServerHost, "stop", lambda self: steps.append("stop"))
    with pytest.raises(raised):
        run.run()
    assert steps == ["start", "stop"]


def test_a_controller_interrupted_mid_point_stops_the_load_generators_shares(monkeypatch):
    """Issue 45: a Ctrl-C while a --together point runs left each load generator's
    share running detached on its host to the end of its time; they are stopped now."""
    from dbarena.fleet import togetherpoint
    from dbarena.fleet.inventory import Host
    from dbarena.fleet.togethersteps import Answer
    from dbarena.model import PointSpec
    from dbarena.study import arguments

    sent: list[tuple[list[str], str]] = []

    def step(hosts, args, **kwargs):
        action = next(a for a in args if a in ("wait-ready", "go", "status", "stop"))
        sent.append(([h.name for h in hosts], action))
        if action == "status":
            raise KeyboardInterrupt  # the Ctrl-C, while the point runs
        return {h.name: Answer({"state": "ready"}) for h in hosts}

    measure = togetherpoint.Together(
        step=step, study=arguments.study_from_args(["--engine", "postgres", "--workload", "pgbench-select-only"]),
        hosts=[Host(name=n, label=n, price_per_hour=None, price_per_month=None, currency=None, workdir=f"/w/{n}")
               for n in ("alpha", "beta")],
        target="postgresql://dbarena@db:5432/dbarena", tls_ca=None, poll_s=0.01)
    monkeypatch.setattr(togetherpoint, "GO_LEAD_MIN_S", 0.0)
    with pytest.raises(KeyboardInterrupt):
        measure.measure(PointSpec(engine="postgres", workload="pgbench-select-only", threads=2, clients=4,
                                  duration_s=60), None)
    assert [what for _, what in sent][-2:] == ["status", "stop"]
    assert sent[-1][0] == ["alpha", "beta"]


def test_a_together_run_is_the_controllers_so_that_a_killed_one_can_be_marked_interrupted(tmp_path):
    """The run's owner was the first host's host-prepare process (its provenance), so
    that nobody could mark the run of a controller killed outright: it showed as running
    until the next `fleet run`. It is the controller's."""
    from dbarena.fleet import together
    from dbarena.lifecycle import cleanup
    from dbarena.store.database import Store

    run = object.__new__(together.Together)
    run.hosts, run.server = [], None
    prepared = {"label": "together", "host": "alpha", "engine": "postgres", "target": "postgresql://db/dbarena",
                "started_at": datetime.now(timezone.utc).isoformat(), "server_version": "15", "tool_versions": {},
                "host_facts": {}, "options": {"owner": {"pid": 4_000_000, "start": 1, "host": "alpha"}}}
    info = run._run_info(prepared, "key")
    assert info.options["owner"]["pid"] == os.getpid()
    with Store(tmp_path / "r.db") as db:
        run_id = db.begin_run(info)
    assert cleanup.mark_interrupted(str(tmp_path / "r.db"), run_id, os.getpid(), "killed") == (True, None)
    with Store(tmp_path / "r.db") as db:
        assert db.run(run_id).status == "interrupted"


def test_a_warm_up_is_taken_with_a_server_host_as_with_a_target():
    """The checkpoint after a warm-up is the first load generator's to make: a [server]
    host's server grants dbarena's user the least privilege it needs (pg_checkpoint,
    RELOAD), so a warm-up is no longer refused there."""
    from dbarena.fleet import together
    from dbarena.fleet.inventory import Host
    from dbarena.study import arguments

    def host(name: str) -> Host:
        return Host(name=name, label=name, price_per_hour=None, price_per_month=None, currency=None,
                    workdir=f"/w/{name}")

    warm = ["--engine", "postgres", "--workload", "pgbench-select-only", "--warmup", "5"]
    together.check(arguments.study_from_args(warm), [host("alpha")], host("gamma"))
    together.check(arguments.study_from_args([*warm, "--target", "postgresql://dbarena@db:5432/dbarena"]),
                   [host("alpha")], None)
