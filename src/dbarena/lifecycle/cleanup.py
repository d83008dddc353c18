"""Undoing what a dead dbarena process left, from its state records (state.py says
what is recorded and why): stop and remove throwaway instances, remove scratch
directories, set SMT back, mark runs interrupted. Run by the watchdog, by every
command before it starts (`reap_dead`), and by `dbarena cleanup`."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from dbarena.host import hostinfo, smt
from dbarena.lifecycle import state
from dbarena.limits import one_line
from dbarena.records import json_object


def reap(path: Path, data: dict[str, Any], say: Callable[[str], None], dry_run: bool = False,
         tell_later: bool = False, give_up: bool = False) -> None:
    """Undo what a dead owner left: see the module's note. `tell_later` (the watchdog,
    which has nobody to tell): a run's record that names tables left on a target is
    kept, so that the next command can say so. A run's record whose store cannot be
    opened or written now is kept too, for the next try, unless `give_up` (`dbarena
    cleanup`: the user's word that the store is not coming back)."""
    if data["kind"] in ("instance", "scratch") and _refused(path, data, say, dry_run):
        return
    if data["kind"] == "smt" and _foreign_switch(path, data, say, dry_run):
        return
    undo = {"instance": _instance, "scratch": _scratch, "smt": _smt_back}.get(data["kind"], _run)
    owner = f"process {data.get('owner_pid')}" if not data.get("kept") else "--keep"
    if undo(_Undo(path, data, say, dry_run, tell_later, give_up, owner)):
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


@dataclass(frozen=True)
class _Undo:
    """One record being undone: what each kind's undoing is given."""

    path: Path
    data: dict[str, Any]
    say: Callable[[str], None]
    dry_run: bool
    tell_later: bool
    give_up: bool
    owner: str  # who left it, as the lines say


# Each kind's undoing: True when it is done and its record goes; False keeps the record
# (a dry run, or what the next command or `dbarena cleanup` must try again).

def _instance(u: _Undo) -> bool:
    data, say = u.data, u.say
    pgid, why = state.server_of(data)
    what = f"{data['engine']} instance in {data['top']}" + (f" (server pid {pgid})" if pgid else "")
    init, init_why = state.recorded_process(data, "init_pid")
    if u.dry_run:
        say(f"would stop and remove the {what}, left by {u.owner}")
        return False
    for key, refused in (("server_pgid", why), ("init_pid", init_why)):
        if refused is not None:
            say(f"left process {data.get(key)!r} alone: {refused}; it is not the one {u.path} recorded")
    # Its initialisation first (initdb, mariadb-install-db and their children go on
    # writing into the directory after their dbarena was killed), then its server.
    if data.get("init_pid") or not data.get("server_pgid"):  # killed before its server ran
        state.stop_initialisation(data["top"], init)
    if pgid:
        state.stop_group(pgid, _stop_signal(data.get("stop_signal")))
    state.remove_segments({Path(p) for p in data.get("shm", ())})  # also those of a server already dead
    shutil.rmtree(data["top"], ignore_errors=True)
    if Path(data["top"]).exists():
        # The record stays (the record goes after the directory, never before):
        # the next command or `dbarena cleanup` tries again, on a directory still
        # marked as dbarena's (rmtree may have taken the marker first).
        state.mark(Path(data["top"]))
        say(f"could not remove the {what}, left by {u.owner}; `dbarena cleanup` tries again")
        return False
    say(f"stopped and removed the {what}, left by {u.owner}")
    return True


def _stop_signal(recorded: Any) -> int:
    """The server's shutdown signal as its record names it; SIGTERM, every server's
    (PostgreSQL's slower "smart" shutdown: SIGKILL follows anyway), for a record made
    before engines declared theirs or naming what is not a shutdown signal."""
    return recorded if recorded in (signal.SIGINT, signal.SIGTERM, signal.SIGQUIT) else signal.SIGTERM


def _scratch(u: _Undo) -> bool:
    if u.dry_run:
        u.say(f"would remove {u.data['path']}, left by {u.owner}")
        return False
    shutil.rmtree(u.data["path"], ignore_errors=True)
    u.say(f"removed {u.data['path']}, left by {u.owner}")
    return True


def _smt_back(u: _Undo) -> bool:
    data, say, owner = u.data, u.say, u.owner
    control, original = Path(data["control"]), data["original"]
    if data.get("boot_id") != state.machine()["boot_id"]:
        # Rebooted since: the boot configuration decides SMT now, not the record.
        say(f"{'would forget' if u.dry_run else 'forgot'} that {owner} had switched SMT: the machine has "
            "rebooted since")
        return not u.dry_run
    if u.dry_run:
        say(f"would set SMT back to {original} ({control}), left switched by {owner}")
        return False
    try:
        if control.read_text().strip() != original:
            control.write_text(original)
    except OSError as exc:
        # The record stays: the next command (or `dbarena cleanup`) tries again.
        say(f"could not set SMT back to {original} ({control}), left switched by {owner}: "
            f"{exc.strerror or exc}; put it back with `echo {original} > {control}`")
        return False
    stuck = smt.put_online_back(control, hostinfo.parse_cpu_list(data["online"])) if data.get("online") else []
    if stuck:
        say(f"set SMT back to {original} ({control}), but CPU(s) {hostinfo.cpu_list(set(stuck))} could not "
            f"be set online or offline as before; left switched by {owner}")
        return False
    say(f"set SMT back to {original} ({control}), left switched by {owner}")
    return True


def _run(u: _Undo) -> bool:
    data, say = u.data, u.say
    where = f"run {data['run_id']} in {data['store']}"
    reason = data.get("reason") or "killed"  # (a run its dbarena could not mark: Record.leave)
    if u.dry_run:
        say(f"would mark {where} interrupted ({reason}), left by {u.owner}")
        return False
    tool, why = state.recorded_process(data, "tool_pid")
    if why is not None:
        say(f"left process {data.get('tool_pid')!r} alone: {why}; it is not the load generator of {where} "
            f"that {u.path} recorded")
    if tool is not None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(tool, signal.SIGKILL)  # the load generator of the dead run
        say(f"stopped the load generator (pid {tool}) of {where}")
    if data.get("scratch"):  # the point's work directory (its per-transaction log)
        refused = state.foreign(data["scratch"])
        if refused:
            say(f"left {data['scratch']} alone: {refused}, not a directory dbarena made (named by {u.path})")
        else:
            shutil.rmtree(data["scratch"], ignore_errors=True)
    marked, problem = mark_interrupted(data["store"], data["run_id"], data.get("owner_pid"), reason)
    if marked:
        say(f"marked {where} interrupted ({reason}); continue it with: "
            f"dbarena run --resume {data['run_id']} --store {data['store']}")
    elif problem is not None and not u.give_up:
        # The record stays: the next command (or `dbarena cleanup`) tries again, so
        # that the run does not show as running for good once the store is back.
        say(f"could not mark {where} interrupted ({reason}) yet: {problem}; the next dbarena command "
            f"tries again (`dbarena cleanup` gives up on it)")
        return False
    elif problem is not None:
        say(f"gave up marking {where} interrupted ({reason}): {problem}; it shows as running until "
            f"`dbarena run --resume {data['run_id']} --store {data['store']}` continues it")
    if u.tell_later and data.get("leftovers"):
        return False
    for line in data.get("leftovers") or []:
        say(f"{where} was killed on {data['target']}: {line}")
    return True


def _refused(path: Path, data: dict[str, Any], say: Callable[[str], None], dry_run: bool) -> bool:
    """A record whose directory is not one dbarena made (state.foreign) is said in one
    line and forgotten: nothing of it is stopped or removed (its server is found by the
    directory's name, so not that either)."""
    directory = data["top"] if data["kind"] == "instance" else data["path"]
    refused = state.foreign(directory)
    if refused is None:
        return False
    if dry_run:
        say(f"would leave {directory} alone: {refused}, not a directory dbarena made (named by {path})")
        return True
    say(f"left {directory} alone: {refused}, not a directory dbarena made; forgot its record {path}")
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
    return True


def _foreign_switch(path: Path, data: dict[str, Any], say: Callable[[str], None], dry_run: bool) -> bool:
    """An SMT record names a file to write as root and what to write: only the kernel's
    switch (smt.CONTROL, exactly), and only a state a study may have found it in (on,
    off, a number of threads on POWER). Any other is said in one line and forgotten."""
    control, original = data.get("control"), data.get("original")
    if control == str(smt.CONTROL) and isinstance(original, str) and smt.restorable(original):
        return False
    why = (f"{control!r} is not the kernel's SMT switch ({smt.CONTROL})" if control != str(smt.CONTROL)
           else f"{original!r} is not a state the kernel's SMT switch is set back to (on, off, a number)")
    if dry_run:
        say(f"would leave SMT alone: {why} (named by {path})")
        return True
    say(f"left SMT alone: {why}; forgot its record {path}")
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
    return True


def mark_interrupted(store: str, run_id: int, owner: int | None, reason: str) -> tuple[bool, str | None]:
    """Mark a run whose dbarena is gone (or could not mark it) interrupted, with `reason`:
    (whether it was marked, why it could not be now). Nothing to mark (the store or the
    run is gone, the run is not running, another process resumed it since) is (False,
    None); a store that cannot be opened or written now is (False, its one line)."""
    # Imported here: every command reaps before it starts, and most find nothing to mark.
    from dbarena.errors import StoreError
    from dbarena.store import postgres as pgstore
    from dbarena.store.database import Store

    if not pgstore.is_url(store) and not Path(store).is_file():
        return False, None
    try:
        with Store(store) as db:
            run = db.run(run_id)
            if run is None or run.status != "running":
                return False, None
            if json_object(run.options.get("owner")).get("pid") not in (None, owner):
                return False, None  # resumed since by another process: its run now
            db.finish_run(run_id, "interrupted", reason=reason)
            return True, None
    except StoreError as exc:
        return False, str(exc)
    except Exception as exc:  # a driver's error past the store's edge: said, tried again later
        return False, one_line(exc)


def reap_dead(say: Callable[[str], None]) -> int:
    """Reap every record whose owner is dead; how many."""
    count = 0
    for path, data in state.records(say):
        if data.get("kept") and not Path(data["top"]).exists():
            # A kept instance its user removed by hand (as the keep note says they may).
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
            continue
        if state.orphaned(data):
            reap(path, data, say)
            count += 1
    return count
