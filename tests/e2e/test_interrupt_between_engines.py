"""Interrupts that fall where a study has no run in progress (issue 46): between one
engine's run and the next one's, and during mariadb-install-db. `cleanup` leaves no
server and no directory, and `run --resume` measures what was never begun."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

import cgroup
from conftest import LIGHT, cli_env, dbarena, processes_mentioning
from test_kill import _watchdog_of, _within
from test_run import _default_sigint

pytestmark = pytest.mark.e2e

# Both engines, one short point each, tiny datasets.
STUDY = ["run", "--engine", "postgres,mysql", "--workload", "sysbench-point-select", "--threads", "1",
         "--duration", "2", "--tables", "1", "--table-size", "100", "--no-probe", *LIGHT]


@pytest.fixture
def env(public_tmp, tmp_path):
    # A state directory of the test's own, so that it sees only what it made.
    return cli_env(public_tmp, DBARENA_STATE_DIR=str(tmp_path / "state"))


def _start(args: list[str], env: dict, log: Path) -> subprocess.Popen:
    # Output to a file (nobody reads a pipe while the test waits), in a session of its
    # own so that the test can kill its whole process group as a terminal would.
    with open(log, "w") as out:
        return subprocess.Popen([sys.executable, "-m", "dbarena", *args], env=env, stdout=out, stderr=out,
                                stdin=subprocess.DEVNULL, start_new_session=True, preexec_fn=_default_sigint)


def _runs(store: Path) -> list[tuple[str, str]]:
    if not store.exists():
        return []
    with sqlite3.connect(store, timeout=5) as db:
        try:
            return db.execute("SELECT engine, status FROM runs ORDER BY id").fetchall()
        except sqlite3.OperationalError:
            return []  # the schema is being made


@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGINT], ids=["SIGKILL", "Ctrl-C"])
def test_an_interrupt_between_engines_then_resume_measures_the_engine_never_begun(public_tmp, tmp_path, env, how):
    store = tmp_path / "r.db"
    proc = _start([*STUDY, "--store", str(store)], env, tmp_path / "run.log")
    # The moment: PostgreSQL's run finished in the store, MariaDB's not begun.
    assert _within(240, lambda: _runs(store) == [("postgres", "finished")] or proc.poll() is not None), \
        (tmp_path / "run.log").read_text()
    os.killpg(proc.pid, how)  # the whole process group, as a terminal's Ctrl-C
    assert proc.wait(timeout=60) == (-9 if how == signal.SIGKILL else 130)
    if how == signal.SIGINT:
        assert "continue with: dbarena run --resume" in (tmp_path / "run.log").read_text()
    assert _runs(store) == [("postgres", "finished")], (tmp_path / "run.log").read_text()  # the moment was hit
    with sqlite3.connect(store) as db:
        pg_points = db.execute("SELECT id, engine, status FROM points ORDER BY id").fetchall()
    assert [(e, s) for _, e, s in pg_points] == [("postgres", "ok")]

    cleaned = dbarena("cleanup", env=env)
    assert cleaned.returncode == 0, cleaned.stderr
    assert _within(10, lambda: processes_mentioning(str(public_tmp)) == []), processes_mentioning(str(public_tmp))
    assert list(public_tmp.iterdir()) == []

    resumed = dbarena("run", "--resume", "--store", str(store), env=env, timeout=300)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "no interrupted or partly failed run" not in resumed.stderr
    # PostgreSQL's part finished: not run again, its server not even started.
    assert "throwaway PostgreSQL" not in resumed.stderr and "throwaway MariaDB" in resumed.stderr
    assert "resumed: 1 point(s) were stored already and not run again" in resumed.stderr
    with sqlite3.connect(store) as db:
        runs = db.execute("SELECT engine, status, invocation FROM runs ORDER BY id").fetchall()
        points = db.execute("SELECT id, engine, status FROM points ORDER BY id").fetchall()
    assert [(e, s) for e, s, _ in runs] == [("postgres", "finished"), ("mysql", "finished")]
    assert runs[0][2] == runs[1][2]  # the same `dbarena run`, continued
    assert points[:1] == pg_points and [(e, s) for _, e, s in points[1:]] == [("mysql", "ok")]
    assert processes_mentioning(str(public_tmp)) == [] and list(public_tmp.iterdir()) == []
    again = dbarena("run", "--resume", "--store", str(store), env=env)
    assert again.returncode == 2 and "no interrupted or partly failed run" in again.stderr


def test_sigkill_during_mariadb_install_db_leaves_nothing_after_cleanup(public_tmp, tmp_path, env):
    if cgroup.missing():
        pytest.fail(f"this test slows mariadb-install-db with a CPU cgroup: {cgroup.missing()}")
    store = tmp_path / "r.db"
    proc = _start(["run", "--engine", "mysql", *STUDY[3:], "--store", str(store)], env, tmp_path / "run.log")
    assert _within(120, lambda: proc.poll() is not None or _installing(proc.pid))
    (installer,) = _installing(proc.pid) or [None]
    assert installer, (tmp_path / "run.log").read_text()
    # mariadb-install-db on a slow machine (a twentieth of a CPU), and dbarena and its
    # watchdog killed meanwhile (the OOM killer, a lost session): it goes on writing
    # its data directory with nobody left to stop it, until `cleanup`.
    with cgroup.throttled(installer, 0.05):
        os.kill(_watchdog_of(proc.pid), signal.SIGKILL)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        (top,) = list(public_tmp.iterdir())
        # Still at work when cleanup comes (mariadb-install-db itself may have died of
        # SIGPIPE with nobody reading its output; its mariadbd --bootstrap goes on).
        assert processes_mentioning(f"{top}/data"), (tmp_path / "run.log").read_text()
        cleaned = dbarena("cleanup", env=env)
    assert cleaned.returncode == 0, cleaned.stderr
    assert f"stopped and removed the mysql instance in {top}" in cleaned.stdout + cleaned.stderr
    # The initialisation stopped, not left to write again into a directory removed.
    assert processes_mentioning(str(public_tmp)) == []
    assert list(public_tmp.iterdir()) == []
    assert list((tmp_path / "state" / "records").iterdir()) == []
    assert _runs(store) == []  # killed before its run began: nothing stored


def _installing(parent: int) -> list[int]:
    """mariadb-install-db (a shell script: its interpreter's pid) that `parent` runs."""
    found = []
    for child in psutil.Process(parent).children():
        try:
            if any(Path(arg).name in ("mariadb-install-db", "mysql_install_db") for arg in child.cmdline()[:2]):
                found.append(child.pid)
        except psutil.Error:
            continue  # a short-lived tool (mariadbd --version) that has just ended
    return found


# A Ctrl-C the moment a run is marked finished: in `finish_run`, once its UPDATE is
# committed (as the terminal's signal can fall there), through dbarena's own main.
_CTRL_C_AS_MARKED = """
import os, signal, sys
from dbarena.store.database import Store
real = Store.finish_run
def finish_run(self, run_id, status, reason=None):
    real(self, run_id, status, reason)
    if status == "finished":
        os.kill(os.getpid(), signal.SIGINT)
Store.finish_run = finish_run
from dbarena.cli import main
sys.argv = ["dbarena", *sys.argv[1:]]
main()
"""


def test_a_ctrl_c_as_a_run_is_marked_finished_leaves_it_finished(public_tmp, tmp_path, env):
    """Seen in make test: the Ctrl-C between engines fell after PostgreSQL's run was marked
    finished but before the session counted it done, and the run, every point of it
    measured, was marked interrupted again. Held until it is counted now."""
    store = tmp_path / "r.db"
    done = subprocess.run([sys.executable, "-c", _CTRL_C_AS_MARKED, *STUDY, "--store", str(store)], env=env,
                          capture_output=True, text=True, timeout=240, stdin=subprocess.DEVNULL,
                          preexec_fn=_default_sigint)
    assert done.returncode == 130, done.stderr[-3000:]
    assert "continue with: dbarena run --resume" in done.stderr
    assert _runs(store) == [("postgres", "finished")], done.stderr[-3000:]
    assert processes_mentioning(str(public_tmp)) == [] and list(public_tmp.iterdir()) == []
