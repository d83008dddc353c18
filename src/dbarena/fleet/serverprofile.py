"""The server's on-CPU profile of each measured point of a `fleet run --together`, on
its [server] host (--profile, [profile]); togetherprofile.py is the controller's side.

perf samples the server as a one-host run samples its own (run/profiling.py: the same
Profiler, the same folding, the same symbol source): the server's processes are those
descended from its main process, whose pid host-server says in its status. A profile
outlives the steps that start and stop it, so it is a detached process of its own:

    host-profile       detached: perf started on the run's server and its events
                       enabled; says `sampling`; when told to stop, the events
                       disabled, perf stopped, its samples of the server folded, and
                       the stacks kept in the status (zlib, base64: messages.ProfileStatus)
    host-profile-ctl   check | wait-sampling | stop | discard: what the controller asks

A profile stops by itself (and reads nothing) once its server is no longer up or its
request's `max_s` has passed: a killed controller leaves no perf sampling the machine.
Its files (perf.data, the FIFOs, perf's log) are in <workdir>/profile/, removed when
the next profile starts; perf.data as soon as it is read.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from dbarena.fleet import serverhost
from dbarena.fleet.loadgen import STATUS_CHARS, alive
from dbarena.fleet.messages import ProfileRequest, ProfileStatus
from dbarena.fleet.progress import write_json
from dbarena.limits import one_line
from dbarena.records import JSONObject

PROFILE = "profile"
SAMPLING_WAIT_S = 60.0  # perf attaches within 30 s (run/profiling._ATTACH_S), or says why not
READ_WAIT_S = 540.0     # stopped and read: within a step's time (togethersteps.STEP_TIMEOUT_S)
FINAL = ("done", "failed", "stopped")


def folder_of(workdir: Path) -> Path:
    return workdir / PROFILE


def check(frequency_hz: int) -> JSONObject:
    """host-profile-ctl check: whether perf can sample here (run/profiling.Profiler.check),
    with its version."""
    from dbarena import execute
    from dbarena.run.profiling import Profiler

    profiler = Profiler(execute.LOCAL, frequency_hz)
    problem = profiler.check()
    return {"perf": profiler.version or None, "problem": problem}


def _said(folder: Path, status: ProfileStatus) -> None:
    write_json(folder / "status.json", replace(status, pid=os.getpid(), updated=time.time()).to_json())


def _server_pid(workdir: Path, server_id: str) -> int:
    """The main process of the run's server (host-server's, by its id), while it is up."""
    status = serverhost.read_status(serverhost.folder_of(workdir))
    pid = status.get("server_pid")
    if status.get("id") != server_id or status.get("state") != "ready":
        raise RuntimeError(f"the run's server is not up here ({status.get('state')})")
    if not isinstance(pid, int) or isinstance(pid, bool):
        raise RuntimeError("the run's server did not say its process")
    return pid


def _server_gone(workdir: Path, server_id: str) -> str | None:
    status = serverhost.read_status(serverhost.folder_of(workdir))
    if status.get("id") != server_id or status.get("state") != "ready" or not alive(status.get("pid")):
        return f"the run's server is no longer up ({status.get('state')})"
    return None


def _end_earlier(folder: Path) -> None:
    """A profile still going in the folder (one its controller could not stop) ended
    before another starts there: one perf at a time."""
    earlier = _read(folder)
    if earlier.final or earlier.state == "absent" or not alive(earlier.pid):
        return
    (folder / "discard").touch()
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and not _read(folder).final and alive(earlier.pid):
        time.sleep(0.1)


def record(workdir: Path, request_path: Path) -> int:
    """The detached process of one point's profile (see the module's docstring)."""
    from dbarena import execute
    from dbarena.run.profiling import Profiler

    folder = folder_of(workdir)
    request = ProfileRequest.from_json(request_path.read_text())
    _end_earlier(folder)
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(mode=0o700, parents=True)
    request_path.unlink(missing_ok=True)
    said = ProfileStatus("starting", id=request.id)
    _said(folder, said)
    stopping = {"signal": False}

    def on_signal(signum: int, frame: Any) -> None:
        stopping["signal"] = True

    signal.signal(signal.SIGTERM, on_signal)
    try:
        profiler = Profiler(execute.LOCAL, request.frequency_hz)
        profiler.version = request.perf
        found = profiler.start(_server_pid(workdir, request.server), folder)
        if isinstance(found, str):
            _said(folder, replace(said, state="failed", reason=found))
            return 1
        _said(folder, replace(said, state="sampling"))
        deadline = time.monotonic() + request.max_s
        why = None
        while not (folder / "stop").exists():
            why = ("SIGTERM" if stopping["signal"] else "told to discard it" if (folder / "discard").exists()
                   else _server_gone(workdir, request.server) or
                   (f"not stopped within {request.max_s:.0f} s" if time.monotonic() > deadline else None))
            if why is not None:
                break
            time.sleep(0.1)
        if why is not None:
            found.abandon()
            _said(folder, replace(said, state="stopped", reason=why))
            return 1
        found.disable()
        _said(folder, replace(said, state="reading"))
        found.stop()
        read = found.read()
        (folder / "perf.data").unlink(missing_ok=True)
        if isinstance(read, str):
            _said(folder, replace(said, state="failed", reason=read))
            return 1
        _said(folder, replace(said, state="done", folded=ProfileStatus.pack(read.folded),
                              frequency_hz=read.frequency_hz, symbols=read.symbols))
        return 0
    except Exception as exc:  # the controller reads the reason from the status
        _said(folder, replace(said, state="failed", reason=one_line(exc, STATUS_CHARS)))
        return 1


def _read(folder: Path) -> ProfileStatus:
    try:
        return ProfileStatus.from_json(json.loads((folder / "status.json").read_text()))
    except (OSError, ValueError):
        return ProfileStatus("absent")


def control(workdir: Path, action: str, profile_id: str) -> ProfileStatus:
    """What the controller asks of the profile it started (profile_id: its point's; the
    folder may still hold the one before, until host-profile replaces it): wait until it
    samples, or stop it (its stacks read) or discard it; its status."""
    folder = folder_of(workdir)

    def read() -> ProfileStatus:
        found = _read(folder)
        return found if found.id == profile_id else ProfileStatus("absent")

    if action in ("stop", "discard") and folder.is_dir():
        (folder / action).touch()
    wanted = ("sampling",) + FINAL if action == "wait-sampling" else FINAL
    deadline = time.monotonic() + (SAMPLING_WAIT_S if action == "wait-sampling" else READ_WAIT_S)
    while time.monotonic() < deadline:
        status = read()
        # (A profile absent when told to stop never started: wait-sampling said so.)
        if status.state in wanted or not alive(status.pid) or (status.state == "absent" and action != "wait-sampling"):
            break
        time.sleep(0.05)
    status = read()
    if status.state == "absent":
        return ProfileStatus("failed", reason="its host-profile did not start")
    if not status.final and not alive(status.pid):
        return replace(status, state="failed", reason="its dbarena process is gone")
    return status
