"""A killed dbarena leaves nothing running: SIGKILL during a point and during dataset
preparation on a real throwaway PostgreSQL; the watchdog, the next command and
`dbarena cleanup` (state.py)."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest

from conftest import LIGHT, cli_env, dbarena, left_in_ram, processes_mentioning, server_segments
# Only the full disk's test runs a command in this process (tests/inprocess.py): its
# import and results only read and write stores and files, and a `python -m dbarena`
# costs half a second of CPU to start. The commands after a kill stay processes: what the
# next process does of a killed one's leftovers is what those tests test.
from inprocess import dbarena as dbarena_here
from test_run import _start, _wait_for_line

pytestmark = pytest.mark.e2e


def _servers(tmpdir: Path) -> list[str]:
    return [line for line in processes_mentioning(str(tmpdir)) if "postgres" in line and " -D " in line]


def _within(seconds: float, condition) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.2)
    return condition()


def _watchdog_of(pid: int) -> int:
    out = subprocess.run(["pgrep", "-f", f"dbarena.lifecycle.watchdog {pid} "], capture_output=True, text=True).stdout.split()
    assert len(out) == 1, out
    return int(out[0])


@pytest.fixture
def env(public_tmp, tmp_path):
    # A state directory of the test's own, so that it sees only what it made.
    return cli_env(public_tmp, DBARENA_STATE_DIR=str(tmp_path / "state"))


def test_sigkill_during_a_point_stops_the_server_within_seconds_and_resume_finishes(public_tmp, tmp_path, env):
    store = tmp_path / "r.db"
    proc = _start(["run", "--workload", "pgbench-select-only", *LIGHT, "--threads", "1,2", "--duration", "4", "--scale", "1",
                   "--store", str(store)], env)
    _wait_for_line(proc, "ok     postgres pgbench-select-only threads=1")
    time.sleep(1.0)  # into the second point
    assert _servers(public_tmp)
    assert _within(3, lambda: store.with_name("r.db.live").exists())  # its seconds published, live
    segments = server_segments(str(public_tmp))  # the server's own: what it could leave in RAM
    assert segments
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
    # The watchdog: no server process of the run, no directory, the run marked.
    assert _within(10, lambda: not _servers(public_tmp)), _servers(public_tmp)
    assert _within(5, lambda: list(public_tmp.iterdir()) == []), list(public_tmp.iterdir())
    assert _within(5, lambda: not left_in_ram(segments)), left_in_ram(segments)  # no shared memory left in RAM
    db = sqlite3.connect(store)
    # The watchdog marks the run after it removed the instance: give it its moment.
    marked = [("interrupted", "killed")]
    assert _within(10, lambda: db.execute("SELECT status, status_reason FROM runs").fetchall() == marked), \
        db.execute("SELECT status, status_reason FROM runs").fetchall()
    # Its record removed last, once the run is marked (seen still there under make
    # test's load, at load 14, the moment the run was marked).
    records = tmp_path / "state" / "records"
    assert _within(5, lambda: list(records.iterdir()) == []), list(records.iterdir())
    # The point it was measuring is live no more: its seconds went as the run was marked.
    assert not store.with_name("r.db.live").exists()
    resumed = dbarena("run", "--resume", "--store", str(store), env=env, timeout=300)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert sorted(db.execute("SELECT threads FROM points WHERE status = 'ok'").fetchall()) == [(1,), (2,)]


def test_sigkill_of_dbarena_and_its_watchdog_during_preparation_is_reaped_by_the_next_command(
        public_tmp, tmp_path, env):
    store = tmp_path / "r.db"
    proc = _start(["run", "--workload", "pgbench-select-only", *LIGHT, "--threads", "1", "--duration", "2", "--scale", "30",
                   "--store", str(store)], env)
    _wait_for_line(proc, "preparing the pgbench dataset")
    watchdog = _watchdog_of(proc.pid)
    os.kill(watchdog, signal.SIGKILL)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
    assert _servers(public_tmp)  # nobody was left to stop it
    segments = server_segments(str(public_tmp))
    assert segments
    shown = dbarena("results", "--store", str(store), env=env)
    assert shown.returncode == 0, shown.stderr
    assert "dbarena: stopped and removed the postgres instance in " in shown.stderr
    assert f"marked run 1 in {store} interrupted (killed); continue it with: dbarena run --resume 1" in shown.stderr
    assert _within(10, lambda: not _servers(public_tmp)), _servers(public_tmp)
    assert list(public_tmp.iterdir()) == []
    assert _within(5, lambda: not left_in_ram(segments)), left_in_ram(segments)
    db = sqlite3.connect(store)
    # The watchdog marks the run after it removed the instance: give it its moment.
    marked = [("interrupted", "killed")]
    assert _within(10, lambda: db.execute("SELECT status, status_reason FROM runs").fetchall() == marked), \
        db.execute("SELECT status, status_reason FROM runs").fetchall()
    again = dbarena("results", "--store", str(store), env=env)
    assert "stopped and removed" not in again.stderr  # reaped once


def test_cleanup_lists_and_removes_a_kept_instance(public_tmp, tmp_path, env):
    kept = dbarena("run", "--workload", "pgbench-select-only", *LIGHT, "--threads", "1", "--duration", "1", "--scale", "1",
                   "--keep", "--store", str(tmp_path / "r.db"), env=env, timeout=300)
    assert kept.returncode == 0, kept.stderr[-2000:]
    assert _servers(public_tmp)
    (top,) = list(public_tmp.iterdir())
    listed = dbarena("cleanup", "--dry-run", env=env)
    assert listed.returncode == 0
    assert listed.stdout.startswith(f"would stop and remove the postgres instance in {top} (server pid ")
    assert "left by --keep" in listed.stdout and _servers(public_tmp) and top.exists()
    removed = dbarena("cleanup", env=env)
    assert removed.returncode == 0 and "stopped and removed the postgres instance" in removed.stdout
    assert _within(10, lambda: not _servers(public_tmp)) and not top.exists()
    assert "nothing to clean up" in dbarena("cleanup", env=env).stdout


def test_cleanup_kills_no_process_a_planted_record_names(public_tmp, tmp_path, env):
    """Issue 46: a state record names a process for root to SIGKILL. One edited to name a
    live process that is not dbarena's (its pid and start time, both readable by anyone
    in /proc), and one with every fact of it forged but in a directory another user can
    write to: `dbarena cleanup` kills neither, and says so."""
    import json
    import sys

    from dbarena.lifecycle import state

    victim = subprocess.Popen(["sleep", "300"])
    try:
        owner = subprocess.Popen([sys.executable, "-c", "pass"])
        owner_start = state.start_time(owner.pid)
        owner.wait()
        record = {"kind": "run", "store": str(tmp_path / "none.db"), "run_id": 1, "target": None, "leftovers": [],
                  "owner_pid": owner.pid, "owner_start": owner_start, **state.machine(),
                  "tool_pid": victim.pid, "tool_start": state.start_time(victim.pid),
                  "tool_cmdline": ["pgbench", "-c", "8"], "tool_exe": "/usr/bin/pgbench"}
        folder = Path(env["DBARENA_STATE_DIR"]) / "records"
        folder.mkdir(parents=True)
        (folder / "run-edited.json").write_text(json.dumps(record))
        done = dbarena("cleanup", env=env)
        assert done.returncode == 0, done.stderr
        # (every command reaps first, on stderr; `cleanup` then finds nothing left)
        assert f"left process {victim.pid} alone: its command line (sleep 300) is not the one recorded" in done.stderr
        assert victim.poll() is None
        shared = public_tmp / "shared-state"
        (shared / "records").mkdir(parents=True)
        (shared / "records").chmod(0o777)  # anyone may plant a record here
        forged = {**record, **state.process_fields("tool_pid", victim.pid)}
        (shared / "records" / "run-planted.json").write_text(json.dumps(forged))
        done = dbarena("cleanup", env={**env, "DBARENA_STATE_DIR": str(shared)})
        assert done.returncode == 0, done.stderr
        assert f"left every record in {shared / 'records'} alone: {shared / 'records'} is writable by others" \
            in done.stdout
        time.sleep(0.5)  # (a SIGKILL is delivered at once; nothing was sent)
        assert victim.poll() is None
    finally:
        victim.kill()
        victim.wait()


@pytest.fixture
def tiny_fs(tmp_path):
    """A 1 MB tmpfs the test mounts (the suite runs as root, as CI does)."""
    mount = tmp_path / "tiny"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount)], capture_output=True,
                          text=True)
    if done.returncode != 0:
        pytest.fail(f"cannot mount a tmpfs (the e2e tests run as root): {done.stderr.strip()}")
    yield mount
    subprocess.run(["umount", "-l", str(mount)], check=False)


def _fill(folder: Path) -> None:
    """Until the file system is full (ENOSPC ends the writing, or the closing)."""
    try:
        with open(folder / "filler", "wb", buffering=0) as f:
            while True:
                f.write(b"\0" * 4096)
    except OSError:
        pass


def test_a_store_that_fills_up_stops_the_run_in_one_line_and_the_point_is_saved(public_tmp, tmp_path, env, tiny_fs):
    store = tiny_fs / "r.db"
    proc = _start(["run", "--workload", "pgbench-select-only", *LIGHT, "--threads", "1,2", "--duration", "3", "--scale", "1",
                   "--store", str(store)], env)
    _wait_for_line(proc, " on postgres: ")  # the plan line: the run is stored; the first point is about to run
    _fill(tiny_fs)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 2, err
    lines = [l for l in err.splitlines() if l.startswith("dbarena: error:")]
    assert len(lines) == 1 and "cannot be written" in lines[0] and "Traceback" not in err
    assert _within(10, lambda: not _servers(public_tmp))
    (saved,) = list(public_tmp.glob("dbarena-unsaved-*.txt"))  # beside the store there was no room
    assert f"saved in {saved}" in lines[0]
    other = tmp_path / "other.db"
    imported = dbarena_here("import", str(saved), "--label", "rescued", "--store", str(other), env=env)
    assert imported.returncode == 0, imported.stderr
    row = sqlite3.connect(other).execute("SELECT workload, threads, status, tps FROM points").fetchone()
    assert row[:3] == ("pgbench-select-only", 1, "ok") and row[3] > 0
    assert f"{row[3]:.6f}" in saved.read_text()  # the figure pgbench printed
    saved.unlink()
    assert [p.name for p in public_tmp.iterdir()] == []
    # The disk was still full at the end: the run could not be marked, and says so; once
    # there is room again, the next command marks it (or the watchdog did, as dbarena
    # exited), so that it never shows as running for good.
    assert lines[0].endswith("; run 1 could not be marked interrupted (the store still cannot be written): "
                             "the next dbarena command marks it once it can"), lines[0]
    (tiny_fs / "filler").unlink()
    assert dbarena_here("results", "--store", str(store), env=env).returncode == 0
    assert sqlite3.connect(store).execute("SELECT status, status_reason FROM runs").fetchall() == [
        ("interrupted", "store unwritable")]
