"""dbarena as PID 1 of a PID namespace (a container's entrypoint), and under a PID 1 that
never reaps: no zombie of a run's stays, signals sent to PID 1 reach the command once
(lifecycle/pid1.py, state.py's watchdog). A new PID namespace per test (`unshare --pid
--fork --mount-proc`, as root), a real throwaway PostgreSQL, real pgbench."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest

from conftest import LIGHT, cli_env
from test_kill import _servers, _within
from test_run import _wait_for_line

pytestmark = pytest.mark.e2e

UNSHARE = ["unshare", "--pid", "--fork", "--mount-proc"]
# A zombie reaped within this is a child caught between its exit and its parent's
# wait; one seen over a longer span is one nobody collects.
LINGERING_S = 2.0


@pytest.fixture
def env(public_tmp, tmp_path):
    return cli_env(public_tmp, DBARENA_STATE_DIR=str(tmp_path / "state"))


def _start(argv: list[str], env: dict) -> subprocess.Popen:
    return subprocess.Popen([*UNSHARE, *argv], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            stdin=subprocess.DEVNULL, start_new_session=True)


def _pid1(unshare: subprocess.Popen) -> int:
    """The host's pid of the namespace's PID 1 (unshare's child)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        children = psutil.Process(unshare.pid).children()
        if children:
            return int(children[0].pid)
        time.sleep(0.01)
    raise AssertionError("unshare started no PID 1")


class Watch:
    """Every process of a PID namespace, sampled until stopped: how long each zombie
    stayed one, and the `sleep`s PID 1 adopted (their shell ended before them)."""

    def __init__(self, pid1: int):
        self.pid1 = pid1
        self.namespace = os.readlink(f"/proc/{pid1}/ns/pid")
        self.zombies: dict[tuple[int, float], list[float]] = {}  # (pid, start) -> [first seen, last seen]
        self.adopted: set[tuple[int, float]] = set()  # sleeps seen with PID 1 as their parent
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.done.is_set() and psutil.pid_exists(self.pid1):
            now = time.monotonic()
            for proc in psutil.process_iter(["pid", "ppid", "status", "create_time", "name"]):
                try:
                    if os.readlink(f"/proc/{proc.pid}/ns/pid") != self.namespace or proc.pid == self.pid1:
                        continue
                except OSError:
                    continue
                key = (proc.info["pid"], proc.info["create_time"])
                if proc.info["status"] == psutil.STATUS_ZOMBIE:
                    self.zombies.setdefault(key, [now, now])[1] = now
                elif proc.info["ppid"] == self.pid1 and proc.info["name"] == "sleep":
                    self.adopted.add(key)
            time.sleep(0.1)

    def stop(self) -> None:
        self.done.set()
        self.thread.join()

    def lingering(self) -> list[tuple[int, float]]:
        return [key for key, (first, last) in self.zombies.items() if last - first >= LINGERING_S]


def test_dbarena_as_pid_1_reaps_the_orphans_of_a_run(public_tmp, tmp_path, env):
    """A pgbench script whose `\\shell sleep 0.5 &` leaves an orphan each transaction,
    which the kernel hands to PID 1: dbarena, there, collects every one (before, they
    stayed zombies until the namespace ended, over a hundred in a 3 s point)."""
    (tmp_path / "orphans.sql").write_text("\\shell sleep 0.5 &\nSELECT 1;\n\\sleep 100 ms\n")
    (tmp_path / "orphans.toml").write_text(
        'schema = 1\nname = "orphans"\n[engines.postgres]\n[sweep]\nlevels = [1]\nduration_s = 3\n'
        '[datasets]\nscale = 1\n[[workloads]]\nworkload = "pgbench-custom"\noptions = { file = "orphans.sql" }\n')
    store = tmp_path / "r.db"
    proc = _start([sys.executable, "-m", "dbarena", "run", "--study", str(tmp_path / "orphans.toml"),
                   "--allow-commands", "--store", str(store)], env)
    watch = Watch(_pid1(proc))
    _, err = proc.communicate(timeout=300)
    watch.stop()
    assert proc.returncode == 0, err
    assert sqlite3.connect(store).execute("SELECT status FROM points").fetchall() == [("ok",)]
    assert len(watch.adopted) >= 3, "the script made no orphans: the test would show nothing"
    assert watch.lingering() == [], watch.zombies
    assert not _servers(public_tmp)


def test_a_signal_sent_to_pid_1_reaches_the_command_once(public_tmp, tmp_path, env):
    """`docker stop` sends SIGTERM to PID 1: the run is interrupted as by a SIGTERM
    anywhere (its points kept, its server gone, exit 143), and no zombie stays."""
    store = tmp_path / "r.db"
    proc = _start([sys.executable, "-m", "dbarena", "run", "--workload", "pgbench-select-only", "--threads", "1,2",
                   "--duration", "3", "--scale", "1", "--store", str(store), *LIGHT], env)
    pid1 = _pid1(proc)
    watch = Watch(pid1)
    _wait_for_line(proc, "ok     postgres pgbench-select-only threads=1")
    os.kill(pid1, signal.SIGTERM)
    _, err = proc.communicate(timeout=300)
    watch.stop()
    assert proc.returncode == 143, err
    assert "interrupted: 1 finished point(s) kept" in err and "Traceback" not in err, err
    assert sqlite3.connect(store).execute("SELECT status FROM runs").fetchall() == [("interrupted",)]
    assert _within(10, lambda: not _servers(public_tmp)) and list(public_tmp.iterdir()) == []
    assert watch.lingering() == [], watch.zombies


# PID 1 as a naive entrypoint is: it waits for its own child only, never for an orphan.
# Once its child has ended it waits until every other process of the namespace has
# ended too (or is a zombie), then says what is left.
NEVER_REAPS = """
import json, os, subprocess, sys, time

def state(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read()
    except OSError:
        return None, None
    name, rest = fields.split(" (", 1)[1].rsplit(") ", 1)
    return rest.split()[0], name

def others():
    return {p: state(p) for p in os.listdir("/proc") if p.isdigit() and p != "1"}

code = subprocess.Popen(sys.argv[1:]).wait()
deadline = time.monotonic() + 60
while time.monotonic() < deadline and any(s not in ("Z", None) for s, _ in others().values()):
    time.sleep(0.1)
print("PID1 " + json.dumps({"exit": code, "zombies": [n for s, n in others().values() if s == "Z"],
                            "running": [n for s, n in others().values() if s not in ("Z", None)]}), flush=True)
"""


def test_under_a_pid_1_that_never_reaps_no_zombie_of_a_run_stays(public_tmp, tmp_path, env):
    """dbarena's watchdog outlives nothing it need not: dbarena collects it when it
    exits, rather than leaving it to PID 1 (before, one zombie watchdog per run)."""
    store = tmp_path / "r.db"
    proc = _start([sys.executable, "-c", NEVER_REAPS, sys.executable, "-m", "dbarena", "run", "--workload",
                   "pgbench-select-only", "--threads", "1", "--duration", "2", "--scale", "1", "--store", str(store),
                   *LIGHT], env)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    said = json.loads(out.splitlines()[-1].removeprefix("PID1 "))
    assert said == {"exit": 0, "zombies": [], "running": []}, (said, err)
    assert sqlite3.connect(store).execute("SELECT status FROM runs").fetchall() == [("finished",)]
    assert Path(env["DBARENA_STATE_DIR"], "records").is_dir() and not list(
        Path(env["DBARENA_STATE_DIR"], "records").iterdir())
