"""A `fleet run --together` controller SIGKILLed mid-point while the inventory's [server]
host (gamma, 127.0.0.4) runs its throwaway PostgreSQL: `fleet cleanup` stops what it left
at once, and without it the server stops itself by its lease. A module of its own (the
hosts and helpers are test_fleet_together_server.py's) so that `make test`'s fleet part,
a pytest-xdist worker per module, runs it beside that module's other tests, not after
them: together they were one worker's 17 minutes."""

from __future__ import annotations

import contextlib
import json
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import processes_mentioning
from sshd import ansible_env, missing, sshd
from test_fleet_together import STUDY
from test_fleet_together_server import _server_inventory, _wait_ready
from test_kill import _within

pytestmark = [pytest.mark.e2e, pytest.mark.fleet, pytest.mark.timeout(900)]


def _listening(port: int) -> bool:
    with contextlib.suppress(OSError), socket.create_connection(("127.0.0.4", port), timeout=2):
        return True
    return False


def _killed_mid_point(inv: Path, workdirs: dict, env: dict, name: str, duration: int, tmp: Path) -> int:
    """A together run of one level of `duration` s, SIGKILLed once both load generators'
    pgbench run: its server's port."""
    study = tmp / f"{name}.toml"
    # Offered 50 transactions a second (pgbench -R): what is looked at is what runs and
    # what stops, not how fast; at full speed the orphaned points' tools and server took
    # both CPUs for their 60 and 30 s, from the rest of make test.
    study.write_text(STUDY.format(name=name, levels=[2], duration=duration, sampling=0.01)
                     + "[workloads.options]\nrate = 50\n")
    run = subprocess.Popen([sys.executable, "-m", "dbarena", "fleet", "run", "-i", str(inv), "--study", str(study),
                            "--together", "--store", str(tmp / f"{name}.db")], env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)
    try:
        status = _wait_ready(workdirs["gamma"] / "server" / "status.json", run)
        port = int(status["url"].rsplit(":", 1)[1].split("/")[0])
        # Mid-point: both load generators' pgbench running.
        assert _within(240, lambda: all(any("pgbench" in line.split(" ", 2)[1] for line in
                                            processes_mentioning(str(workdirs[h] / "point")))
                                        for h in ("alpha", "beta"))), processes_mentioning("pgbench")
        time.sleep(2)
        assert _listening(port)
        run.send_signal(signal.SIGKILL)
        run.communicate(timeout=60)
    finally:
        run.kill()
    return port


def test_a_killed_controllers_server_stops_at_once_by_fleet_cleanup_else_by_its_lease(tmp_path_factory):
    """The controller SIGKILLed mid-point, twice on the same hosts (one set of hosts and
    installs for both: each costs most of a minute under `make test`).

    First `fleet cleanup` on the inventory: the server stops listening and both load
    generators' pgbench are gone within seconds of it, not at the lease's end or the
    point's (60 s); each host says what it stopped, and a second cleanup finds nothing.

    Then nothing: the controller no longer renews its server's lease, and the server on
    gamma stops itself, listening no more within a minute (its lease is 40 s), where it
    used to wait a point's length (30 s here) and 30 minutes."""
    from dbarena.fleet.togetherserver import LEASE_S, RENEW_S

    if missing():
        pytest.fail(missing())
    tmp = tmp_path_factory.mktemp("killed")
    tmp.chmod(0o755)
    with sshd(("127.0.0.2", "127.0.0.3", "127.0.0.4"), tmp) as hosts:
        inv, workdirs = _server_inventory(tmp, hosts)
        env = ansible_env(tmp)

        port = _killed_mid_point(inv, workdirs, env, "cleanup", 60, tmp)
        killed = time.monotonic()
        done = subprocess.run([sys.executable, "-m", "dbarena", "fleet", "cleanup", "-i", str(inv)], env=env,
                              capture_output=True, text=True, timeout=400, stdin=subprocess.DEVNULL)
        assert done.returncode == 0, done.stdout + done.stderr
        lines = done.stdout.splitlines()
        assert any(line.startswith("gamma: stopped the together server") for line in lines), done.stdout
        for name in ("alpha", "beta"):
            assert any(line.startswith(f"{name}: stopped the together point") for line in lines), done.stdout
        assert "Traceback" not in done.stdout + done.stderr
        # At once: before the lease would have stopped the server, and long before the
        # 60 s points would have ended.
        assert not _listening(port)
        assert _within(10, lambda: not any("pgbench" in line for h in ("alpha", "beta")
                                           for line in processes_mentioning(str(workdirs[h] / "point"))))
        assert time.monotonic() - killed < LEASE_S, "fleet cleanup took as long as the lease"
        again = subprocess.run([sys.executable, "-m", "dbarena", "fleet", "cleanup", "-i", str(inv)], env=env,
                               capture_output=True, text=True, timeout=400, stdin=subprocess.DEVNULL)
        assert again.returncode == 0 and "stopped" not in again.stdout, again.stdout
        assert _within(30, lambda: not processes_mentioning(str(hosts.scratch))), \
            processes_mentioning(str(hosts.scratch))

        port = _killed_mid_point(inv, workdirs, env, "lease", 30, tmp)
        killed = time.monotonic()
        assert _within(60, lambda: not _listening(port)), "the server still listens a minute after its controller died"
        gone_s = time.monotonic() - killed
        print(f"the server stopped listening {gone_s:.1f} s after its controller was killed (lease {LEASE_S:.0f} s)")
        # It was the lease, not something else, that stopped it: the last renewal was at most
        # RENEW_S and one renewal's time (a few seconds) before the kill.
        assert gone_s > LEASE_S - RENEW_S - 10
        assert _within(60, lambda: json.loads((workdirs["gamma"] / "server" / "status.json").read_text())
                       .get("state") == "stopped")
        status = json.loads((workdirs["gamma"] / "server" / "status.json").read_text())
        assert status["reason"].startswith("its lease was not renewed"), status
        # The load generators' orphaned points run out their 30 s before the hosts go.
        _within(60, lambda: not processes_mentioning(str(tmp / "hosts")))
    assert _within(30, lambda: not processes_mentioning(str(hosts.scratch))), processes_mentioning(str(hosts.scratch))
    assert _within(30, lambda: not processes_mentioning(str(tmp))), processes_mentioning(str(tmp))
