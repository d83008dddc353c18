"""One load generator's share of a point (`fleet run --together`), on its host.

The controller (together.py) drives each point through the hidden commands here, in
the host's working directory, through Ansible (playbooks/together.yml):

    host-prepare      before the first point, on one host: the run's provenance
                      (run_info, configuration-key context) and the datasets prepared
    host-point        detached: opens the target, builds its share's command with the
                      tool's own point_argv (and its per-transaction log), says `ready`,
                      waits for a start time (`go`), sleeps until it, runs the tool,
                      parses its output with the tool's own reader and writes its part
    host-point-ctl    wait-ready | go --at T | status | stop: what the controller asks
                      (go and status with --wait S: until the point ends, at most S)
    host-tls          before the server starts (a MySQL-family one): this host's client
                      certificate and key for the run, made here; the certificate (public)
                      as JSON, the key left in <workdir>/tls/

The current point lives in <workdir>/point/: request.json, status.json, go.json, stop,
part.json and the tool's files (removed when the next point starts). A `stop` kills
the tool at once (the controller stops the others when one host fails).

TLS: where the run's server offers it, the requests of host-prepare and host-point
carry its certificate (`tls`), which goes to <workdir>/tls/cacert.pem; the target is
then opened with TLS required and that certificate verified (model.Tls), by every
client: dbarena's own connections and the tools'.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import threading
import time
from dataclasses import asdict, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

from dbarena.errors import DatabaseError
from dbarena.fleet.messages import FINAL, Part, PointRequest, PrepareRequest, Status
from dbarena.fleet.progress import write_json
from dbarena.limits import one_line
from dbarena.model import Tls
from dbarena.records import JSON, JSONObject

if TYPE_CHECKING:
    # Only a type here: host-point-ctl, a play's command on every host several times a
    # point, imports this module and needs none of the run layer (its stores, tools).
    from dbarena.run.measure import ToolRun

POINT = "point"
TLS = "tls"
# The files of <workdir>/tls/, named as sysbench 1.0's MySQL driver wants them in its
# working directory (workloads/sysbench.mysql_tls_files), which prepare's is.
CA, CLIENT_CERT, CLIENT_KEY = "cacert.pem", "client-cert.pem", "client-key.pem"
READY_WAIT_S = 300.0  # how long host-point-ctl wait-ready waits
GO_WAIT_S = 600.0     # how long a ready host waits for its start time before it gives up


def point_dir(workdir: Path) -> Path:
    return workdir / POINT


def take_secrets(workdir: Path) -> None:
    """The passwords the controller sent, into this process's environment; the file removed."""
    from dbarena.fleet.host import sent_secrets as read

    os.environ.update(read(workdir))


# The longest reason a status file keeps: the controller shows it on one line.
STATUS_CHARS = 500


def _status(folder: Path, state: str, *, reason: str | None = None, tool_pid: int | None = None) -> None:
    point_id = json.loads((folder / "request.json").read_text()).get("id")
    write_json(folder / "status.json", Status(state=state, id=point_id, reason=reason, pid=os.getpid(),
                                              tool_pid=tool_pid, updated=time.time()).to_json())


# ------------------------------------------------------------------ TLS

def client_tls(workdir: Path) -> JSONObject:
    """host-tls: this load generator's client certificate and key for the run, made
    afresh here (engines/tls.py); the certificate, or why there is none."""
    from dbarena.engines import tls

    folder = workdir / TLS
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(mode=0o700, parents=True)
    try:
        tls.make_pair(folder / CLIENT_CERT, folder / CLIENT_KEY, f"dbarena load generator {os.uname().nodename}")
        return {"cert": tls.read_certificate(folder / CLIENT_CERT)}
    except tls.TlsUnavailable as exc:
        return {"error": str(exc)}


def _tls(workdir: Path, asked: Mapping[str, str] | None) -> Tls | None:
    """The Tls a request asks for (model.Tls: the server's certificate written where
    the clients read it, and this host's client pair where host-tls made one), or None."""
    from dbarena.engines import tls

    if not asked:
        return None
    folder = workdir / TLS
    folder.mkdir(mode=0o700, exist_ok=True)
    # The certificate is public; written whole (a point's host-point and the next one's
    # may overlap), and checked to be one certificate.
    scratch = folder / f".{CA}.{os.getpid()}"
    scratch.write_text(tls.certificates([asked["ca"]]))
    os.replace(scratch, folder / CA)
    pair = (folder / CLIENT_CERT).exists() and (folder / CLIENT_KEY).exists()
    return Tls(ca=str(folder / CA), cert=str(folder / CLIENT_CERT) if pair else None,
               key=str(folder / CLIENT_KEY) if pair else None)


def _tls_links(folder: Path, tls: Tls | None, protocol: str) -> None:
    """sysbench's MySQL TLS files, linked into the point's folder (its working directory)."""
    if tls is None or protocol != "mysql" or tls.cert is None:
        return
    from dbarena.workloads.sysbench import mysql_tls_files

    for name, path in mysql_tls_files(tls).items():
        (folder / name).symlink_to(path)


# ------------------------------------------------------------------ host-prepare

def prepare(workdir: Path, asked: JSON) -> JSONObject:
    """The run's provenance and its datasets prepared, as one JSON document."""
    from dbarena import execute
    from dbarena.run import provenance
    from dbarena.engines import get as engine_get
    from dbarena.host import hostinfo
    from dbarena.study import arguments
    from dbarena.workloads import WORKLOADS

    request = PrepareRequest.from_json(asked)
    take_secrets(workdir)
    study = arguments.study_from_args(list(request.args))
    entry = study.engines[0]
    engine = engine_get(entry.name, entry.flavour, bindir=Path(entry.bindir) if entry.bindir else None)
    facts = hostinfo.host_facts()
    specs = request.datasets
    tls = _tls(workdir, request.tls)
    with engine.external(request.target, bindir=None, executor=execute.LOCAL, tls=tls) as target:
        tools = {WORKLOADS[s.workload].tool.name: WORKLOADS[s.workload].tool for s in specs}
        versions = provenance.tool_versions(target, engine, tools.values(), execute.LOCAL)
        settings = dict(entry.settings)
        info = provenance.run_info(study, session_record(study), request.label, facts, entry, target, "",
                                   settings, versions, True, request.invocation)
        context = provenance.key_context(entry, target, settings, "", facts, info.target_facts)
        env = target.client_env()
        for spec in specs:
            tool = WORKLOADS[spec.workload].tool
            client = target.client(tool)
            for argv in tool.prepare_argv(client, spec):
                # In the TLS folder, where sysbench's MySQL driver finds its files by name.
                done = execute.LOCAL.run(argv, env=env, timeout=3600, cwd=workdir / TLS if tls else None)
                if done.returncode != 0:
                    tail = (done.stderr.strip().splitlines() or done.stdout.strip().splitlines() or ["?"])[-1]
                    raise RuntimeError(f"preparing the dataset: {argv[0]} exit status {done.returncode}: {tail}")
    record: JSONObject = asdict(info)
    record["started_at"] = info.started_at.isoformat()
    return {"run_info": record, "context": context}


def session_record(study: Any) -> Any:
    from dbarena.model import StudyRecord

    return StudyRecord(name=study.name, source=study.source, text=study.text, sha256=study.sha256)


# ------------------------------------------------------------------ host-point

def point(workdir: Path, request_path: Path) -> int:
    """The detached process of one host's part (see the module's docstring)."""
    folder = point_dir(workdir)
    request = PointRequest.from_json(request_path.read_text())
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(mode=0o700, parents=True)
    os.replace(request_path, folder / "request.json")
    _status(folder, "starting")
    try:
        take_secrets(workdir)
        return _point(folder, request, _tls(workdir, request.tls))
    except Exception as exc:  # the controller reads the reason from the status
        _status(folder, "failed", reason=one_line(exc, STATUS_CHARS))
        return 1


def _point(folder: Path, request: PointRequest, tls: Tls | None) -> int:
    """The host's share, measured as a local point is (measure.run_tool), between the
    controller's `go` and its end; the first host's request asks it to sample the
    server too (`sample_server`), for the whole point."""
    from dbarena import execute
    from dbarena.run import measure
    from dbarena.engines import get as engine_get
    from dbarena.workloads import WORKLOADS

    spec = request.spec
    tool = WORKLOADS[spec.workload].tool
    if "no-vacuum" in getattr(tool, "known", {}):
        # pgbench vacuums its tables before it starts the clock, each load generator
        # on its own and at its own pace: the start would be skewed by it, and the
        # server vacuumed N times. The dataset was vacuumed when it was prepared.
        spec = replace(spec, options=tuple(sorted({**dict(spec.options), "no-vacuum": "on"}.items())))
    engine = engine_get(request.engine, request.flavour or "auto")
    start_at: list[float] = []
    pid: list[int] = []

    def ready() -> bool:
        _status(folder, "ready")
        at = _wait_for_go(folder)
        if at is None:
            return False
        start_at.append(at)
        time.sleep(max(0.0, at - time.time()))
        return True

    def on_start(child: int) -> None:
        pid.append(child)
        _status(folder, "running", tool_pid=child)

    stopper = threading.Thread(target=_stop_when_asked, args=(folder, pid), daemon=True)
    with engine.external(request.target, bindir=None, executor=execute.LOCAL, tls=tls) as target:
        _tls_links(folder, tls, target.conn.protocol)
        if request.checkpoint:
            # After a warm-up, before this point says it is ready (the controller asks the
            # first host): the warm-up's dirty pages are not the measured run's to write.
            try:
                target.checkpoint()
            except DatabaseError as exc:
                _status(folder, "failed", reason=f"after the warm-up: {exc}")
                return 1
        stopper.start()
        # Each with pgbench's own per-second report: the point's series is the sum of the
        # load generators' (combine.py), and only one of them reads the server's counter.
        ran = measure.run_tool(spec, target, execute.LOCAL, folder, latency_sampling=request.sampling,
                               sample_server=request.sample_server, server_clients=request.server_clients,
                               before_start=ready, on_start=on_start, client_progress=True)
    if ran is None:
        _status(folder, "stopped", reason="stopped before it started")
        return 1
    stopped = (folder / "stop").exists()
    done = ran.done
    part = Part(command=tuple(done.argv), exit=done.returncode, stdout=done.stdout, stderr=done.stderr,
                launched_at=ran.started_at.timestamp(), ended_at=ran.ended_at.timestamp(), start_at=start_at[0],
                system=ran.system, samples=ran.samples, server=ran.server.encode() if ran.server is not None else None,
                measurement=ran.measurement,
                first_at=_first_at(folder, spec.clients) if ran.measurement is not None else None)
    write_json(folder / "part.json", part.to_json())
    if ran.measurement is None:
        _status(folder, "stopped" if stopped else "failed",
                reason="stopped: another load generator failed" if stopped else _failure(ran))
        return 1
    _status(folder, "done")
    return 0


def _failure(ran: ToolRun) -> str:
    """Why the share has no measurement, the tool named (the controller adds the host)."""
    if ran.done.timed_out:
        return f"{ran.done.argv[0]} did not finish in time and was killed"
    # The tool's own error line, wherever it printed it (a local point's failure says the same).
    return f"{Path(ran.done.argv[0]).name} {ran.error}"


def _first_at(folder: Path, clients: int) -> float | None:
    """When the first transaction began, from pgbench's per-transaction log (None without one)."""
    from dbarena.fleet.combine import first_transaction_start
    from dbarena.workloads.pgbench import LOG_PREFIX

    starts = []
    for path in sorted(folder.glob(f"{LOG_PREFIX}.*")):
        with open(path, errors="replace") as lines:
            found = first_transaction_start(lines, clients)
        if found is not None:
            starts.append(found)
    return min(starts) if starts else None


def _wait_for_go(folder: Path) -> float | None:
    """The start time the controller sends, None when it says stop (or never answers)."""
    deadline = time.monotonic() + GO_WAIT_S
    while time.monotonic() < deadline:
        if (folder / "stop").exists():
            return None
        with contextlib.suppress(OSError, ValueError, KeyError):
            return float(json.loads((folder / "go.json").read_text())["at"])
        time.sleep(0.01)
    return None


def _stop_when_asked(folder: Path, pid: list[int]) -> None:
    """Kill the tool when the controller asks (another host failed)."""
    while True:
        if (folder / "stop").exists() and pid:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid[0], signal.SIGTERM)
            return
        if (folder / "status.json").exists():
            with contextlib.suppress(OSError, ValueError):
                if json.loads((folder / "status.json").read_text()).get("state") in FINAL:
                    return
        time.sleep(0.05)


# ------------------------------------------------------------------ host-point-ctl

def control(workdir: Path, action: str, point_id: str, at: float | None = None, wait_s: float = 0.0) -> Status:
    """What the controller asks of the point in flight (point_id: the one it started;
    the folder may still hold the one before, until host-point replaces it); the
    point's status (with its part when it has ended). go and status wait up to wait_s
    for the point to end (a long poll: one play of the controller's for a short point's
    start and its end, where a poll every few seconds took three or more, each some
    seconds of CPU on every host while it measured); an answer comes at once when it
    ends, fails or its process is gone."""
    folder = point_dir(workdir)
    go_seen = None

    def read() -> Status:
        found = _read_status(folder)
        return found if found.id == point_id else Status("absent")

    if action == "go":
        write_json(folder / "go.json", {"at": at})
        go_seen = time.time()
    elif action == "stop":
        (folder / "stop").touch()
    if action in ("wait-ready", "stop"):
        deadline = time.monotonic() + (READY_WAIT_S if action == "wait-ready" else 15.0)
        while time.monotonic() < deadline:
            state = read().state
            if state in (("ready",) if action == "wait-ready" else ()) + FINAL:
                break
            time.sleep(0.05)
    elif wait_s > 0:
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            found = read()
            if found.final or found.state == "absent" or not alive(found.pid):
                break
            time.sleep(0.1)
    status = replace(read(), go_seen=go_seen)
    if status.final and (folder / "part.json").exists():
        status = replace(status, part=Part.from_json(json.loads((folder / "part.json").read_text())))
    elif status.state == "absent" and action != "wait-ready":
        status = Status("failed", reason="its host-point did not start")
    elif not status.final and not alive(status.pid):
        status = replace(status, state="failed", reason="its dbarena process is gone")
    return status


def _read_status(folder: Path) -> Status:
    try:
        return Status.from_json(json.loads((folder / "status.json").read_text()))
    except (OSError, ValueError):
        return Status("absent")


def alive(pid: JSON) -> bool:
    if not isinstance(pid, int):
        return True  # not started yet: not known to be gone
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
