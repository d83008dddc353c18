"""`dbarena run --study` of a study with [machines] provider = "local": its "instances"
are sshd processes of their own on loopback addresses (cloud/local.py), made, run on by
the real fleet (Ansible over SSH, real PostgreSQL and pgbench on each), their stores
merged into a real store, and deleted. Interrupted (SIGINT, SIGTERM) or killed (SIGKILL, then
the next command), nothing is left: no sshd, no host's run, no server, no directory.
--max-cost over the estimate refuses before anything is made."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import cli_env, error_line, processes_mentioning
from sshd import DEPS_ENV, ansible_env
from sshd import missing as sshd_missing
from test_kill import _within

pytestmark = [pytest.mark.e2e, pytest.mark.fleet, pytest.mark.timeout(900)]

STUDY = """schema = 1
name = "local-machines"
[sweep]
levels = {levels}
duration_s = {duration}
repeats = 1
[datasets]
scale = 1
[engines.postgres]
[[workloads]]
workload = "pgbench-select-only"
{options}[machines]
provider = "local"
region = "here"
instance_types = ["small", "large"]
[machines.prices]
compute.small = 0.5
compute.large = 2.0
"""


@pytest.fixture
def here(tmp_path: Path, public_tmp: Path) -> dict:
    if sshd_missing():
        pytest.fail(sshd_missing())
    state = tmp_path / "state"
    # TMPDIR: where each instance's own temporary directory is made, reachable by the
    # throwaway servers' user (postgres); the hosts' dependencies: the session's.
    env = cli_env(public_tmp, DBARENA_STATE_DIR=str(state), DBARENA_LOCAL_DEPS_DIR=os.environ[DEPS_ENV])
    env.update({k: v for k, v in ansible_env(tmp_path).items() if k.startswith("ANSIBLE_")})
    yield {"tmp": tmp_path, "state": state, "env": env, "public": public_tmp}
    # Nothing of any instance left running, whatever the test did.
    assert _within(20, lambda: not _left(state, public_tmp)), _left(state, public_tmp)


def _left(state: Path, public: Path) -> list[str]:
    return processes_mentioning(str(state)) + processes_mentioning(str(public)) + \
        processes_mentioning("dbarena-local-")


def _instances(state: Path) -> list[Path]:
    folder = state / "cloud" / "local"
    return sorted(folder.glob("local-*")) if folder.is_dir() else []


def _study(here: dict, levels: list[int], duration: int, rate: int | None = None) -> Path:
    """rate: each point offered that many transactions a second (pgbench -R), for a test
    that looks at what runs and what is left, not how fast: full speed on both "machines"
    took both CPUs from the rest of make test while it waited."""
    path = here["tmp"] / "s.toml"
    options = f"options = {{ rate = {rate} }}\n" if rate is not None else ""
    path.write_text(STUDY.format(levels=levels, duration=duration, options=options))
    return path


def _dbarena(here: dict, *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "dbarena", *args], env=here["env"], capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL)


def test_run_study_makes_the_machines_runs_on_them_and_deletes_them(here: dict) -> None:
    study, store = _study(here, [1, 2], 3), here["tmp"] / "r.db"
    done = _dbarena(here, "run", "--study", str(study), "--store", str(store), "--machines-poll", "2")
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    # Said: what it costs, each instance's times, the hosts' runs, the deletion.
    assert "estimated cost:" in out and "counted as zero (this machine; no price given in [machines.prices]): " \
                                      "storage gp3" in out
    assert "small-1: created in " in out and "large-1: created in " in out and ", ready in " in out
    assert "small-1 (small): complete; 2/2 points" in out and "large-1 (large): complete; 2/2 points" in out
    assert "2 resource(s) deleted in " in out
    db = sqlite3.connect(store)
    runs = db.execute("SELECT label, price_per_hour, currency, status, options FROM runs ORDER BY label").fetchall()
    assert [r[:4] for r in runs] == [("large", 2.0, "USD", "finished"), ("small", 0.5, "USD", "finished")]
    assert db.execute("SELECT COUNT(*) FROM points WHERE status = 'ok' AND phase = 'measured'").fetchone()[0] == 4
    for label, _, _, _, options in runs:
        machine = json.loads(options)["machine"]
        assert machine["provider"] == "local" and machine["instance_type"] == label and machine["zone"] == "local"
        assert machine["image"] == "this machine" and machine["host"] == f"{label}-1"
        compute = next(p for p in machine["prices"] if p["part"] == "compute")
        assert compute["price"] == {"small": 0.5, "large": 2.0}[label] and compute["source"] == str(study)
        storage = next(p for p in machine["prices"] if p["part"] == "storage")
        assert storage["price"] == 0 and "counted as zero" in storage["how"]
        assert 0 <= machine["create_s"] <= machine["ready_s"] < 60 and 0 <= machine["delete_s"] < 60
    # The report prices each level from what the runs carry, no price typed.
    report = _dbarena(here, "report", "-o", str(here["tmp"] / "r.md"), "--store", str(store), timeout=120)
    assert report.returncode == 0, report.stderr
    assert "per hour per 100 TPS" in (here["tmp"] / "r.md").read_text()
    # Deleted: no instance, no record, no temporary directory of one.
    assert _instances(here["state"]) == [] and not list((here["state"] / "cloud").glob("dbarena-*.json"))
    assert not list(here["public"].glob("dbarena-local-*"))


def _started(here: dict, study: Path) -> tuple[subprocess.Popen[str], list[str]]:
    """A run --study, read until both hosts run their study."""
    proc = subprocess.Popen([sys.executable, "-m", "dbarena", "run", "--study", str(study), "--store",
                             str(here["tmp"] / "r.db"), "--machines-poll", "1"], env=here["env"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, stdin=subprocess.DEVNULL)
    assert proc.stdout is not None
    lines: list[str] = []
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        lines.append(line)
        if sum(" running; " in seen for seen in lines) >= 2:
            return proc, lines
    proc.kill()
    raise AssertionError("".join(lines))


@pytest.mark.parametrize("signum, status", [(signal.SIGINT, 130), (signal.SIGTERM, 143)], ids=["SIGINT", "SIGTERM"])
def test_an_interrupted_run_study_leaves_nothing_and_keeps_what_was_measured(here: dict, signum: int,
                                                                            status: int) -> None:
    """Interrupted once each host has stored a point: the hosts' stores are fetched
    before their machines go (nothing measured is lost), their runs marked interrupted
    with why, and nothing is left."""
    proc, lines = _started(here, _study(here, [1, 2, 3, 4], 6, rate=50))
    assert len(_instances(here["state"])) == 2
    assert proc.stdout is not None
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and not all(
            any(re.search(rf"\({kind}\): running; [1-4]/4 points", seen) for seen in lines) for kind in ("small", "large")):
        line = proc.stdout.readline()
        if not line:
            break
        lines.append(line)
    proc.send_signal(signum)
    rest, _ = proc.communicate(timeout=180)
    out = "".join(lines) + rest
    assert proc.returncode == status, out
    assert "fetching what the hosts measured, then deleting what run" in out and "2 resource(s) deleted in " in out
    assert "interrupted: what it made is deleted; what the hosts had measured, if anything, was fetched" in out
    assert "Traceback" not in out and "aborted" not in out
    assert _instances(here["state"]) == [] and not list(here["public"].glob("dbarena-local-*"))
    assert (here["tmp"] / "r.db").is_file(), out  # the hosts' stores fetched and merged
    db = sqlite3.connect(here["tmp"] / "r.db")
    runs = db.execute("SELECT label, status, status_reason FROM runs ORDER BY label").fetchall()
    why = f"its machine was deleted: {'Ctrl-C' if signum == signal.SIGINT else 'SIGTERM'}"
    assert [r[0] for r in runs] == ["large", "small"], (runs, out)
    assert all(r[1] in ("interrupted", "finished") and (r[1] == "finished" or r[2] == why) for r in runs), runs
    kept = db.execute("SELECT r.label, COUNT(*) FROM points p JOIN runs r ON r.id = p.run_id "
                      "WHERE p.status = 'ok' AND p.phase = 'measured' GROUP BY r.label").fetchall()
    assert dict(kept).keys() == {"large", "small"}, (kept, out)
    assert _within(20, lambda: not _left(here["state"], here["public"])), _left(here["state"], here["public"])


def test_a_killed_run_study_is_cleaned_up_by_the_next_command(here: dict) -> None:
    proc, lines = _started(here, _study(here, [1, 2, 3, 4], 20, rate=50))
    proc.kill()
    proc.wait(timeout=30)
    assert len(_instances(here["state"])) == 2  # its hosts run on (a killed controller deletes nothing)
    # The next dbarena command, whatever it is, deletes what the killed one made.
    after = _dbarena(here, "study", "list", timeout=120)
    assert after.returncode == 0, after.stderr
    assert "controller (process" in after.stderr and "2 resource(s) deleted in " in after.stderr, after.stderr
    assert _instances(here["state"]) == [] and not list(here["public"].glob("dbarena-local-*"))
    assert _within(20, lambda: not _left(here["state"], here["public"])), _left(here["state"], here["public"])
    reap = _dbarena(here, "cloud", "reap", "--provider", "local", "--region", "here", timeout=120)
    assert reap.returncode == 0 and "nothing to reap" in reap.stdout, reap.stdout + reap.stderr


def test_max_cost_over_the_estimate_refuses_before_anything_is_made(here: dict) -> None:
    study = _study(here, [1, 2], 3)
    refused = _dbarena(here, "run", "--study", str(study), "--store", str(here["tmp"] / "r.db"), "--max-cost",
                       "0.01", timeout=120)
    assert refused.returncode == 2, refused.stdout + refused.stderr
    line = error_line(refused.stderr)
    assert line.startswith("dbarena: error: estimated ") and \
        line.endswith(" USD is over --max-cost 0.01 USD: nothing was created (`dbarena study check` itemises it)\n")
    assert not (here["state"] / "cloud").exists() and not (here["tmp"] / "r.db").exists()
    many = _dbarena(here, "run", "--study", str(study), "--max-instances", "1", timeout=120)
    assert many.returncode == 2 and "2 instances and databases to create, over --max-instances 1" in many.stderr


def test_a_study_as_the_docs_write_it_runs_from_its_own_directory(here: dict) -> None:
    """docs/cloud.md's local study: no region, no prices, named relative to the working
    directory (`dbarena run --study local.toml`): Ansible looked for a relative study
    beside its playbook, and the unpriced hosts' price of 0 was refused by the fleet
    after they were made."""
    study = here["tmp"] / "local.toml"
    study.write_text(STUDY.format(levels=[1], duration=3, options="").replace('region = "here"\n', "")
                     .split("[machines.prices]")[0])
    done = subprocess.run([sys.executable, "-m", "dbarena", "run", "--study", "local.toml", "--store", "r.db",
                           "--machines-poll", "2"], env=here["env"], capture_output=True, text=True, timeout=600,
                          stdin=subprocess.DEVNULL, cwd=here["tmp"])
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    assert "small-1 (small): complete; 1/1 points" in out and "large-1 (large): complete; 1/1 points" in out
    db = sqlite3.connect(here["tmp"] / "r.db")
    assert db.execute("SELECT label, price_per_hour FROM runs ORDER BY label").fetchall() == \
        [("large", None), ("small", None)]
    assert json.loads(db.execute("SELECT options FROM runs").fetchone()[0])["machine"]["region"] == "local"
    assert _instances(here["state"]) == [] and not list(here["public"].glob("dbarena-*"))


@pytest.mark.parametrize("signum", [signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL", "SIGTERM"])
def test_a_killed_cloud_up_leaves_nothing_in_tmpdir(here: dict, signum: int) -> None:
    """`cloud up` killed while it makes the instances: after SIGTERM, or SIGKILL and the
    next command, no instance, process or directory of it is left in TMPDIR."""
    study = _study(here, [1], 3)
    # The instances are made in a few hundredths of a second on a quiet machine: an
    # ssh-keygen that takes a second (the next step after an instance's directory in
    # TMPDIR) holds `cloud up` inside the making when the signal lands, rather than
    # after it, when its record says the machines are kept (seen: both made in 55 ms).
    slow = here["tmp"] / "slow-bin"
    slow.mkdir(exist_ok=True)
    (slow / "ssh-keygen").write_text(f"#!/bin/sh\nsleep 1\nexec {shutil.which('ssh-keygen')} \"$@\"\n")
    (slow / "ssh-keygen").chmod(0o755)
    env = {**here["env"], "PATH": f"{slow}{os.pathsep}{here['env'].get('PATH', os.environ['PATH'])}"}
    proc = subprocess.Popen([sys.executable, "-m", "dbarena", "cloud", "up", str(study)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, stdin=subprocess.DEVNULL)
    assert _within(60, lambda: list(here["public"].glob("dbarena-local-*"))), "no instance's directory seen"
    proc.send_signal(signum)
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode != 0, out
    after = _dbarena(here, "cloud", "reap", "--provider", "local", timeout=120)
    assert after.returncode == 0, after.stdout + after.stderr
    assert _within(20, lambda: not list(here["public"].glob("dbarena-*"))), list(here["public"].iterdir())
    assert _instances(here["state"]) == []
