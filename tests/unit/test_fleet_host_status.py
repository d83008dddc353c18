"""`fleet host-status` between start.yml's detaching a host-run and that host-run saying
it is the owner: the last run's files (its progress and dead owner, or its final status)
are not the new run's, which is starting. Seen in the fleet tests on a loaded machine: a
second `fleet run` on a host whose first run had been killed read 'stopped; 1/3 points'
at its first poll, before the new host-run had imported dbarena, and stopped waiting."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from dbarena.fleet import host
from dbarena.lifecycle import state


def _at(path: Path, when: float) -> None:
    os.utime(path, (when, when))


def _dead_owner(workdir: Path) -> None:
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True, check=True)
    (workdir / host.OWNER).write_text(json.dumps({"pid": int(gone.stdout), "start": 1}))


def test_a_run_asked_for_after_a_killed_one_is_starting_not_stopped(tmp_path: Path) -> None:
    now = time.time()
    (tmp_path / host.PROGRESS).write_text(json.dumps({"planned": 3, "done": 1}))
    _dead_owner(tmp_path)
    _at(tmp_path / host.OWNER, now - 60)
    assert host.status(tmp_path) == {"planned": 3, "done": 1, "state": "stopped"}

    (tmp_path / host.ASKED).touch()
    assert host.status(tmp_path) == {"state": "starting"}
    # The new host-run writes its owner: its own progress from then on.
    (tmp_path / host.OWNER).write_text(json.dumps({"pid": os.getpid(), "start": state.start_time(os.getpid())}))
    assert host.status(tmp_path) == {"planned": 3, "done": 1, "state": "running"}


def test_the_last_runs_final_status_is_not_the_new_runs(tmp_path: Path) -> None:
    now = time.time()
    final = {"state": "failed", "exit": 1}
    (tmp_path / host.STATUS).write_text(json.dumps(final))
    _at(tmp_path / host.STATUS, now - 30)
    (tmp_path / host.ASKED).touch()
    assert host.status(tmp_path) == {"state": "starting"}
    # Written after it was asked for: the new run's own end.
    (tmp_path / host.STATUS).write_text(json.dumps({"state": "complete", "exit": 0}))
    assert host.status(tmp_path)["state"] == "complete"


def test_a_run_asked_for_that_never_started_is_stopped_after_the_grace(tmp_path: Path) -> None:
    (tmp_path / host.PROGRESS).write_text(json.dumps({"planned": 3, "done": 1}))
    _dead_owner(tmp_path)
    (tmp_path / host.ASKED).touch()
    _at(tmp_path / host.OWNER, time.time() - host.ASKED_GRACE_S - 60)
    _at(tmp_path / host.ASKED, time.time() - host.ASKED_GRACE_S - 1)
    assert host.status(tmp_path)["state"] == "stopped"


def test_a_run_going_on_when_another_is_asked_for_is_still_running(tmp_path: Path) -> None:
    """A second start while the first runs does nothing (host-run's lock): the first is
    what the host does, not 'starting'."""
    (tmp_path / host.PROGRESS).write_text(json.dumps({"planned": 3, "done": 2}))
    (tmp_path / host.OWNER).write_text(json.dumps({"pid": os.getpid(), "start": state.start_time(os.getpid())}))
    _at(tmp_path / host.OWNER, time.time() - 30)
    (tmp_path / host.ASKED).touch()
    assert host.status(tmp_path) == {"planned": 3, "done": 2, "state": "running"}


def test_a_long_poll_answers_when_the_run_ends_and_waits_no_longer_than_asked(tmp_path: Path) -> None:
    """host-status --wait: the controller's poll of a run that goes on comes back after
    the wait; one that ends meanwhile (its final status written) comes back then."""
    import threading

    (tmp_path / host.PROGRESS).write_text(json.dumps({"planned": 2, "done": 1}))
    (tmp_path / host.OWNER).write_text(json.dumps({"pid": os.getpid(), "start": state.start_time(os.getpid())}))
    began = time.monotonic()
    assert host.status_when_ended(tmp_path, 0.5) == {"planned": 2, "done": 1, "state": "running"}
    assert 0.5 <= time.monotonic() - began < 5

    ends = threading.Timer(0.5, lambda: (tmp_path / host.STATUS).write_text(json.dumps({"state": "complete"})))
    ends.start()
    began = time.monotonic()
    assert host.status_when_ended(tmp_path, 60)["state"] == "complete"
    assert time.monotonic() - began < 30
    ends.join()


def test_a_long_poll_of_a_host_that_never_ran_answers_at_once(tmp_path: Path) -> None:
    began = time.monotonic()
    assert host.status_when_ended(tmp_path / "none", 60) == {"state": "idle"}
    assert host.status_when_ended(tmp_path, 60) == {"state": "idle"}
    assert time.monotonic() - began < 5
