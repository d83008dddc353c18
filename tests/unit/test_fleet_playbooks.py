"""The --together steps' playbooks, run by the real ansible-playbook over a local
connection against a working directory whose venv's `dbarena` is a stand-in that says
how it was started: step.yml's one task runs the step's command in the checked working
directory, and nothing in a refused one."""

from __future__ import annotations

import json
import stat
import sys
from pathlib import Path

import pytest

from dbarena.fleet import controller
from dbarena.fleet.inventory import Host

pytestmark = pytest.mark.timeout(300)

PASSWORD = "playbook-test-password"

# The stand-in: the detached command (host-point) records itself and takes the passwords'
# file as host-point does; a step prints how it was started, waiting for that record
# first when it is `wait-ready`.
STAND_IN = """#!{python}
import json, os, sys, time
w = sys.argv[sys.argv.index("--workdir") + 1]
if sys.argv[2] == "host-point":
    mask = os.umask(0)
    secrets = os.path.join(w, "secrets.json")
    taken = open(secrets).read() if os.path.exists(secrets) else None
    if taken is not None:
        os.remove(secrets)
    record = {{"argv": sys.argv[1:], "pid": os.getpid(), "sid": os.getsid(0), "umask": mask,
              "stdin": os.readlink("/proc/self/fd/0"), "stdout": os.readlink("/proc/self/fd/1"),
              "request": open(sys.argv[sys.argv.index("--request") + 1]).read(), "secrets": taken}}
    print("the detached command's own output")
    with open(os.path.join(w, "detached.new"), "w") as out:
        json.dump(record, out)
    os.replace(os.path.join(w, "detached.new"), os.path.join(w, "detached.json"))
    sys.exit(0)
if sys.argv[-1] == "wait-ready":
    deadline = time.monotonic() + 60
    while not os.path.exists(os.path.join(w, "detached.json")) and time.monotonic() < deadline:
        time.sleep(0.05)
print(json.dumps({{"argv": sys.argv[1:], "sid": os.getsid(0)}}))
"""


@pytest.fixture
def fleet(tmp_path: Path) -> dict:
    """One local host whose working directory is asked through a symbolic link (so that
    the checked path differs from the asked one), with the stand-in installed."""
    tmp_path.chmod(0o755)
    real = tmp_path / "real" / "alpha"
    program = real / "venv" / "bin" / "dbarena"
    program.parent.mkdir(parents=True)
    program.write_text(STAND_IN.format(python=sys.executable))
    program.chmod(0o755)
    (tmp_path / "link").symlink_to(tmp_path / "real")
    inventory = tmp_path / "inventory.json"
    inventory.write_text(json.dumps({"all": {"hosts": {"h1": {"ansible_connection": "local",
                                                               "ansible_python_interpreter": sys.executable}}}}))
    host = Host(name="h1", label="h1", price_per_hour=None, price_per_month=None, currency=None,
                workdir=str(tmp_path / "link" / "alpha"))
    work = tmp_path / "controller"
    ansible = controller.Ansible(inventory, work, forks=1, passwords={"PGPASSWORD": PASSWORD})
    return {"ansible": ansible, "host": host, "w": real, "controller": work}


def test_a_plain_step_is_one_task_in_the_checked_working_directory(fleet):
    host, w = fleet["host"], fleet["w"]
    results = fleet["ansible"].play("step.yml", [host], {"args": {"h1": ["host-point-ctl", "--workdir", host.workdir,
                                                                         "status", "--point", "p1"]}})
    result = results["h1"]
    assert not result.failed and not result.unreachable, result.failure
    assert list(result.tasks) == ["step"]
    said = json.loads(str(result.task("step")["stdout"]).strip())
    assert said["argv"] == ["fleet", "host-point-ctl", "--workdir", str(w), "status", "--point", "p1"]


def test_a_refused_working_directory_runs_no_step(fleet, tmp_path):
    (tmp_path / "real").chmod(0o777)  # a parent others may write to
    results = fleet["ansible"].play("step.yml", [fleet["host"]], {"args": {"h1": ["host-status"]}})
    assert results["h1"].failed and list(results["h1"].tasks) == ["step"]
    (line,) = results["h1"].failure.output  # (cut at failure.MAX_WIDTH)
    assert line.startswith(f"unsafe working directory: {tmp_path / 'real'} is writable by others")

