"""What `dbarena fleet` runs on each host, in the host's working directory:

- `host-run`: the study, as `dbarena run` (a child process, its output in run.log),
  started fresh, resumed where a previous session stopped (`--resume RUN`: only what is
  not stored yet), or skipped when the store holds it complete already. One at a time
  (a lock): a second start while the first still runs does nothing.
- `host-status`: where it is, as one JSON line (progress.json while it runs, status.json
  once it ended; `stopped` when its process is gone without saying how it ended).
- `host-snapshot`: a consistent copy of the store to fetch (SQLite's online backup).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator

from dbarena.lifecycle import state as state_mod
from dbarena.fleet.progress import write_json
from dbarena.limits import one_line
from dbarena.records import JSONObject, json_object

PROGRESS = "progress.json"
STATUS = "status.json"
LOCK = "host-run.lock"
OWNER = "host-run.json"  # pid and start time of the host-run holding the lock
# Touched by start.yml just before it detaches a host-run: until that host-run writes
# OWNER (Python starting and importing dbarena, seconds on a loaded host), the last
# run's progress, status or dead owner are not this one's.
ASKED = "host-run.asked"
ASKED_GRACE_S = 120.0  # a host-run asked for that never wrote OWNER by then is stopped
LOG = "run.log"
STORE = "dbarena.db"
SNAPSHOT = "snapshot.db"
SECRETS = "secrets.json"  # passwords from the controller (0600), for this run's environment only


@contextlib.contextmanager
def _locked(workdir: Path) -> Iterator[bool]:
    """True when this process holds the host's run lock (no other host-run is going)."""
    with open(workdir / LOCK, "a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _store_of(args: list[str], workdir: Path) -> str:
    if "--store" in args:
        return args[args.index("--store") + 1]
    return str(workdir / STORE)


def plan_state(store: str, args: list[str]) -> tuple[str, int | None]:
    """('new', None), ('resume', RUN) or ('complete', RUN): whether the store already
    holds the `dbarena run` these arguments describe, whole or in part."""
    from dbarena import study as study_mod
    from dbarena.errors import UsageError
    from dbarena.run import resume
    from dbarena.store import postgres as pgstore
    from dbarena.store.database import Store
    from dbarena.study import arguments

    if not pgstore.is_url(store) and not Path(store).is_file():
        return "new", None
    given = arguments.study_from_args(args)
    with Store(store) as db:
        seen: set[str] = set()
        for run in reversed(db.runs()):
            if not run.invocation or run.invocation in seen:
                continue
            seen.add(run.invocation)
            try:
                stored = resume.stored_study(db, run)  # as --resume rebuilds it
            except UsageError:
                continue  # a run without its study (imported, or stored before runs kept it)
            if study_mod.differences(stored, given):
                continue
            runs = db.invocation_runs(run.invocation)
            if any(resume.incomplete(db, r) for r in runs):
                return "resume", runs[0].id
            return "complete", runs[0].id
    return "new", None


def sent_secrets(workdir: Path) -> dict[str, str]:
    """The passwords the controller sent (engines.PASSWORD_VARIABLES), read once and removed."""
    from dbarena import engines

    path = workdir / SECRETS
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    finally:
        path.unlink(missing_ok=True)
    return {k: str(v) for k, v in data.items() if k in engines.PASSWORD_VARIABLES and v}


def run(workdir: Path, args: list[str]) -> int:
    """host-run: the exit status of `dbarena run` (0 when there was nothing to do)."""
    workdir.mkdir(parents=True, exist_ok=True)
    secrets = sent_secrets(workdir)
    os.environ.update(secrets)  # for the store this process opens, and the run it starts
    with _locked(workdir) as mine:
        if not mine:
            print("dbarena fleet: a run is going on this host already; not starting another")
            return 0
        started = time.time()
        write_json(workdir / OWNER, {"pid": os.getpid(), "start": state_mod.start_time(os.getpid())})
        (workdir / STATUS).unlink(missing_ok=True)
        store = _store_of(args, workdir)
        argv = [a for a in args]
        if "--store" not in argv:
            argv += ["--store", store]
        try:
            state, run_id = plan_state(store, argv)
        except Exception as exc:  # reported through the status, where the controller reads it
            write_json(workdir / STATUS, {"state": "failed", "exit": 2, "error": one_line(exc),
                                          "updated": time.time()})
            return 2
        if state == "complete":
            write_json(workdir / STATUS, {"state": "complete", "skipped": True, "run": run_id, "exit": 0,
                                          "updated": time.time(), **_counts(workdir)})
            return 0
        command = [sys.executable, "-m", "dbarena", "run", *argv, "--progress-file", str(workdir / PROGRESS)]
        if state == "resume":
            command += ["--resume", str(run_id)]
        with open(workdir / LOG, "a") as log:
            log.write(f"--- {time.strftime('%Y-%m-%dT%H:%M:%S%z')}: {state}: dbarena run {' '.join(argv)}\n")
            log.flush()
            begins = log.tell()
            done = subprocess.run(command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        final = "complete" if done.returncode == 0 else "failed"
        # A failed run's last lines go with its status: the controller shows why it failed.
        tail = {"output": _tail(workdir / LOG, begins)} if final == "failed" else {}
        write_json(workdir / STATUS, {"state": final, "exit": done.returncode, "resumed": state == "resume",
                                      "started": started, "updated": time.time(), **_counts(workdir), **tail})
        return done.returncode


def _tail(path: Path, offset: int, lines: int = 10) -> list[str]:
    """The last non-blank lines written to a file from offset on."""
    try:
        with open(path, "rb") as handle:
            handle.seek(max(offset, os.path.getsize(path) - 64 * 1024))
            text = handle.read().decode("utf-8", "replace")
    except OSError:
        return []
    return [line.rstrip() for line in text.splitlines() if line.strip()][-lines:]


def _counts(workdir: Path) -> JSONObject:
    """The last progress figures (points done / planned), if the run wrote any."""
    with contextlib.suppress(OSError, ValueError):
        data = json_object(json.loads((workdir / PROGRESS).read_text()))
        return {k: data.get(k) for k in ("planned", "done", "failed")}
    return {}


def status(workdir: Path) -> JSONObject:
    """host-status: the final status if the run ended, else its progress; 'idle' before
    any run, 'stopped' when the run's process is gone without a final status."""
    if not workdir.is_dir():
        return {"state": "idle"}
    if _asked_since(workdir) and not _owner_alive(workdir):
        return {"state": "starting"}
    with contextlib.suppress(OSError, ValueError):
        final: JSONObject = json_object(json.loads((workdir / STATUS).read_text()))
        if final:
            return final
    try:
        progress = json.loads((workdir / PROGRESS).read_text())
    except (OSError, ValueError):
        progress = {}
    if _owner_alive(workdir):
        return {**progress, "state": "running"} if progress else {"state": "starting"}
    return {**progress, "state": "stopped"} if progress else {"state": "idle"}


def status_when_ended(workdir: Path, wait_s: float) -> JSONObject:
    """host-status --wait: the status once the run has ended (or never began), at most
    wait_s from now; its progress then if it goes on."""
    deadline = time.monotonic() + wait_s
    while True:
        found = status(workdir)
        if found.get("state") not in ("running", "starting") or time.monotonic() >= deadline:
            return found
        time.sleep(0.2)


def _owner_alive(workdir: Path) -> bool:
    # Not by taking the lock, even briefly: a host-run starting that moment would
    # think another one is going and not start.
    try:
        owner = json.loads((workdir / OWNER).read_text())
    except (OSError, ValueError):
        return False
    return isinstance(owner, dict) and state_mod.alive(owner.get("pid"), owner.get("start"))


def _asked_since(workdir: Path) -> bool:
    """A host-run was asked for (ASKED) after the last one wrote OWNER or STATUS, lately:
    it is starting. Else a poll in that moment read the last run's files: 'stopped'
    (its owner dead) or its final status, and the controller stopped waiting for a run
    that was about to begin (seen in the fleet tests on a loaded machine)."""
    try:
        asked = (workdir / ASKED).stat().st_mtime
    except OSError:
        return False
    for name in (OWNER, STATUS):
        with contextlib.suppress(OSError):
            if (workdir / name).stat().st_mtime >= asked:
                return False
    return time.time() - asked < ASKED_GRACE_S


def snapshot(workdir: Path) -> Path:
    """host-snapshot: a consistent copy of the host's store, even while it is written."""
    # (Here, not at the top: host-status, every poll's command on every host, imports
    # this module and needs no store.)
    from dbarena.store.dialect import sqlite_copy

    source, copy = workdir / STORE, workdir / SNAPSHOT
    if not source.is_file():
        raise FileNotFoundError(f"no store at {source}")
    copy.unlink(missing_ok=True)
    sqlite_copy(source, copy)
    os.chmod(copy, 0o600)
    return copy
