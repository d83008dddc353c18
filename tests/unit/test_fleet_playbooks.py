"""The --together steps' playbooks, run by the real ansible-playbook over a local
connection against a working directory whose venv's `dbarena` is a stand-in that says
how it was started: step.yml's one task runs the step's command in the checked working
directory; together.yml writes the request and the passwords, starts the detached
command in a session of its own (as Ansible's async jobs did: umask 022, no terminal,
its output in a private file) and then the step; the passwords are in no result and no
process's arguments."""

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


def test_a_points_first_step_writes_the_request_and_starts_the_detached_command_first(fleet):
    host, w = fleet["host"], fleet["w"]
    request = json.dumps({"point": "p1", "folder": f"{host.workdir}/point"})
    results = fleet["ansible"].play("together.yml", [host], {
        "args": {"h1": ["host-point-ctl", "--workdir", host.workdir, "--point", "p1", "wait-ready"]},
        "dbarena_request": {"h1": request}, "dbarena_detach": True, "dbarena_detached": "host-point",
        "dbarena_secrets": True})
    result = results["h1"]
    assert not result.failed and not result.unreachable, result.failure
    step = json.loads(str(result.task("step")["stdout"]).strip())
    assert step["argv"] == ["fleet", "host-point-ctl", "--workdir", str(w), "--point", "p1", "wait-ready"]
    detached = json.loads((w / "detached.json").read_text())
    assert detached["argv"] == ["fleet", "host-point", "--workdir", str(w), "--request", f"{w}/request.json"]
    # The request as the controller wrote it, the asked directory rewritten; the passwords
    # in their file, for the detached command to take.
    assert detached["request"] == request.replace(host.workdir, str(w))
    assert json.loads(detached["secrets"]) == {"PGPASSWORD": PASSWORD, "MYSQL_PWD": ""}
    # Detached as an async job was: a session of its own, umask 022, nothing of the step's.
    assert detached["sid"] == detached["pid"] != step["sid"]
    assert detached["umask"] == 0o022
    assert detached["stdin"] == "/dev/null" and detached["stdout"] == str(w / "host-point.out")
    assert stat.S_IMODE((w / "host-point.out").stat().st_mode) == 0o600
    assert (w / "host-point.out").read_text() == "the detached command's own output\n"
    # The passwords: in no task's result and no argument.
    assert PASSWORD not in json.dumps(result.tasks, default=str)
    assert PASSWORD not in json.dumps(detached["argv"]) and PASSWORD not in json.dumps(step["argv"])
    assert not (w / "secrets.json").exists()


def test_a_step_with_a_request_and_nothing_detached(fleet):
    """host-prepare's step: the request written, nothing started before the step."""
    host, w = fleet["host"], fleet["w"]
    results = fleet["ansible"].play("together.yml", [host], {
        "args": {"h1": ["host-prepare", "--workdir", host.workdir, "--request", f"{host.workdir}/request.json"]},
        "dbarena_request": {"h1": "{}"}, "dbarena_detach": False, "dbarena_secrets": False})
    result = results["h1"]
    assert not result.failed, result.failure
    step = json.loads(str(result.task("step")["stdout"]).strip())
    assert step["argv"] == ["fleet", "host-prepare", "--workdir", str(w), "--request", f"{w}/request.json"]
    assert (w / "request.json").read_text() == "{}"
    assert not (w / "detached.json").exists() and not (w / "host-point.out").exists()
    assert not (w / "secrets.json").exists()
