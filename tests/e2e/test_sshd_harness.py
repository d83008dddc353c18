"""The real-SSH harness of tests/sshd.py, through real Ansible: two "hosts" (this machine
on two loopback addresses) answer a ping; killing one leaves the other reachable and
the killed one unreachable; leaving the harness leaves no sshd behind."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import processes_mentioning
from sshd import ansible_env, inventory, missing, sshd

pytestmark = [pytest.mark.e2e, pytest.mark.fleet]

ANSIBLE = Path(sys.executable).parent / "ansible"


def _ping(inv: Path, env: dict) -> tuple[int, str]:
    done = subprocess.run([str(ANSIBLE), "all", "-i", str(inv), "-m", "ping", "--one-line"], env=env,
                          capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    return done.returncode, done.stdout + done.stderr


def _answered(output: str, name: str) -> bool:
    return re.search(rf"^{name} \| SUCCESS\b.*pong", output, re.M) is not None


def _unreachable(output: str, name: str) -> bool:
    return re.search(rf"^{name} \| UNREACHABLE!", output, re.M) is not None


def test_ansible_pings_both_hosts_then_one_after_the_other_is_killed(tmp_path):
    if missing():
        pytest.fail(f"{missing()} (scripts/install-deps installs it)")
    if not ANSIBLE.exists():
        pytest.fail(f"{ANSIBLE} is missing (ansible-core, installed by `make test`)")
    env = ansible_env(tmp_path)
    workdirs = {"alpha": tmp_path / "alpha", "beta": tmp_path / "beta"}

    with sshd(("127.0.0.2", "127.0.0.3"), tmp_path) as fleet:
        private = fleet.dir
        assert [h.name for h in fleet] == ["alpha", "beta"]
        inv = inventory(fleet.hosts, fleet.key, tmp_path / "hosts.ini", workdirs=workdirs)

        rc, out = _ping(inv, env)
        assert rc == 0, out
        assert _answered(out, "alpha") and _answered(out, "beta"), out
        # Each host's sessions have a TMPDIR and a state directory of that host's own: what
        # its runs make is told apart from what other tests make at the same time.
        said = subprocess.run([str(ANSIBLE), "all", "-i", str(inv), "-m", "command", "-a", "env"], env=env,
                              capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
        assert said.returncode == 0, said.stdout + said.stderr
        for host in fleet:
            block = said.stdout.split(f"{host.name} | CHANGED", 1)[1].split(" | CHANGED", 1)[0]
            assert f"TMPDIR={fleet.scratch / host.name}" in block.splitlines(), said.stdout
            assert f"DBARENA_STATE_DIR={private / 'state' / host.name}" in block.splitlines(), said.stdout
        assert fleet.scratch.parent == Path("/tmp") and (fleet.scratch / "alpha").stat().st_mode & 0o755 == 0o755

        fleet["beta"].kill()
        assert not fleet["beta"].alive and fleet["alpha"].alive

        rc, out = _ping(inv, env)
        assert rc != 0, out  # ansible exits 4 when a host is unreachable
        assert _answered(out, "alpha"), out
        assert _unreachable(out, "beta") and not _answered(out, "beta"), out

    left = [p for p in processes_mentioning(str(private)) if "sshd" in p]
    assert not left, left
    # Ansible kept its controller files and the hosts' remote temp under tmp_path
    assert not any(p.name.startswith("ansible-tmp-") for w in workdirs.values()
                   for p in (w / "ansible-tmp").glob("*")), "Ansible left a task's temp dir on a host"
