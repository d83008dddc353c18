"""`dbarena fleet host-cleanup` on a host: what a fleet run's controller left going there
when it was killed, stopped, and what dead dbarena processes left, reaped.

A `fleet run --together` controller drives its hosts step by step: killed, it leaves a
throwaway server (which its lease stops within a minute anyway), the load
generators' points of the moment (which run to the end of their point) and the
server's profile of the moment (--profile: which ends with its server). All are
detached processes of this working directory (fleet/serverhost.py, fleet/loadgen.py,
fleet/serverprofile.py), stopped here the way the controller stops them. A study
started by `fleet run` without --together (host-run) is the host's own run, which goes
on without its controller and which a later `fleet run` fetches: it is left running and
said so. Then every record of a dbarena process that is gone (fleet/lifecycle state:
throwaway instances, scratch directories) is reaped, as `dbarena cleanup` does on one
machine.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

from dbarena.records import JSONObject
from dbarena.fleet import host, loadgen, messages, serverhost, serverprofile


def _status(path: Path) -> JSONObject:
    try:
        found = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}


def _stop(what: str, status: JSONObject, stop: Callable[[str], JSONObject], final: tuple[str, ...],
          say: Callable[[str], None]) -> None:
    if not status or status.get("state") in final or not status.get("id"):
        return
    ended = stop(str(status["id"]))
    say(f"stopped the {what} (pid {status.get('pid')}): {ended.get('state', 'unknown')}")


def cleanup(workdir: Path, say: Callable[[str], None]) -> int:
    """Stop and reap (see the module's docstring); how many things were done."""
    from dbarena.lifecycle import cleanup as reaper, state

    done: list[str] = []

    def said(line: str) -> None:
        done.append(line)
        say(line)

    if workdir.is_dir():
        _stop("together point", _status(loadgen.point_dir(workdir) / "status.json"),
              lambda pid: loadgen.control(workdir, "stop", pid).to_json(), messages.FINAL, said)
        _stop("server's profile", _status(serverprofile.folder_of(workdir) / "status.json"),
              lambda pid: serverprofile.control(workdir, "discard", pid).to_json(), serverprofile.FINAL, said)
        _stop("together server", _status(serverhost.folder_of(workdir) / "status.json"),
              lambda sid: serverhost.control(workdir, "stop", sid), serverhost.FINAL, said)
        if host.status(workdir).get("state") in ("running", "starting"):
            say("a study of `fleet run` is running here: left running (it needs no controller; "
                "`dbarena fleet status` follows it)")
    for path, data in state.records(said):
        if state.orphaned(data):
            # `fleet cleanup` is the user's word, as `dbarena cleanup` is: a run whose
            # store cannot be written is given up on (said), not retried by every
            # later cleanup for good.
            reaper.reap(path, data, said, give_up=True)
    if not done:
        say("nothing to clean up")
    return len(done)
