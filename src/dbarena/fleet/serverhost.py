"""The throwaway server of a `fleet run --together` on the inventory's [server] host.

Without --target, the one host of the inventory's `server` group runs the study's engine
as a throwaway instance and the other hosts drive it over the network. The controller
(together.py) drives it through two hidden commands, in that host's working directory:

    host-server       detached: starts the throwaway instance listening on the host's
                      address as well as 127.0.0.1, dbarena's user (not a superuser)
                      allowed from the load generators' addresses only (clients_of),
                      by the password the controller sent (as a target's password
                      travels: a file only the user reads, removed once read), over TLS
                      only where the request asks for it and the engine and host can
                      (a certificate made here for this server, engines/tls.py); says
                      `ready` with its URL (no password in it), its certificate (or why
                      it has none) and the machine's cores and hardware threads; then
                      waits until it is told to stop, and the
                      instance is removed as every throwaway instance is (also on
                      SIGTERM; `dbarena cleanup` on that host reaps one whose process
                      was killed)
    host-server-ctl   wait-ready | status | stop

A lease keeps the server: the file LEASE in its folder, which the controller touches
every few seconds (togetherserver.Lease) and every host-server-ctl call touches too. A lease
older than the request's `lease_s` (the controller was killed, its machine or the
network went) makes the server stop itself: it outlives its controller by that and its
shutdown, well within a minute, whatever the length of a point.
"""

from __future__ import annotations

import ipaddress
import json
import os
import signal
import socket
import time
from pathlib import Path
from typing import Any

from dbarena.records import JSONObject
from dbarena.fleet.loadgen import alive
from dbarena.fleet.progress import write_json

SERVER = "server"
LEASE = "lease"  # touched by the controller while it is there; its age says how long it has been gone
READY_WAIT_S = 600.0  # initdb and the first start can take minutes on a slow disk
STOP_WAIT_S = 180.0   # a fast shutdown with a checkpoint, then the instance removed
FINAL = ("stopped", "failed")


def folder_of(workdir: Path) -> Path:
    return workdir / SERVER


def lease_path(workdir: Path) -> Path:
    return folder_of(workdir) / LEASE


def _status(folder: Path, state: str, **more: Any) -> None:
    write_json(folder / "status.json", {"state": state, "updated": time.time(), "pid": os.getpid(), **more})


def _said(folder: Path, server_id: str, state: str, **more: Any) -> None:
    _status(folder, state, id=server_id, **more)


def serve(workdir: Path, request_path: Path) -> int:
    """The detached process of the run's server (see the module's docstring)."""
    from dbarena import execute
    from dbarena.engines import FLAVOURS, get as engine_get
    from dbarena.fleet.loadgen import STATUS_CHARS, take_secrets
    from dbarena.limits import one_line
    from dbarena.host import hostinfo

    folder = folder_of(workdir)
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    for stale in ("stop", "status.json", LEASE):
        (folder / stale).unlink(missing_ok=True)
    request = json.loads(request_path.read_text())
    request_path.unlink(missing_ok=True)
    sid = str(request["id"])
    _said(folder, sid, "starting")
    stopping = {"signal": False}

    def on_signal(signum: int, frame: Any) -> None:
        stopping["signal"] = True

    signal.signal(signal.SIGTERM, on_signal)
    try:
        take_secrets(workdir)
        engine = engine_get(request["engine"], request.get("flavour") or "auto",
                            bindir=Path(request["bindir"]) if request.get("bindir") else None)
        password = os.environ.get(engine.password_env, "")
        # No password stays in this process's environment, which the server it starts
        # (run as the engine's own user, who may read its environment) would inherit.
        for sent in {e.password_env for flavours in FLAVOURS.values() for e in flavours.values()}:
            os.environ.pop(sent, None)
        if not password:
            raise RuntimeError("the controller sent no password for the server")
        clients = clients_of(request["clients"])
        tls = request.get("tls")  # None: not asked (the controller says why)
        with engine.throwaway(settings=request.get("settings") or {}, cluster=request.get("cluster") or {},
                              max_connections=int(request["max_connections"]),
                              bindir=Path(request["bindir"]) if request.get("bindir") else None, keep=False,
                              executor=execute.LOCAL, listen=request["listen"], password=password,
                              clients=sorted({ip for ips in clients.values() for ip in ips}),
                              tls=tls is not None, tls_client_certs=(tls or {}).get("client_certs") or ()) as target:
            url = f"{engine.protocol}://dbarena@{request['listen']}:{target.conn.port}/dbarena"
            facts = hostinfo.host_facts()
            _said(folder, sid, "ready", url=url, server_version=target.server_version,
                    physical_cores=facts.get("physical_cores"), hardware_threads=facts.get("hardware_threads"),
                    host_facts=facts, clients=clients, tls_cert=target.tls_cert, tls_problem=target.tls_problem,
                    server_pid=target.server_pid())  # (what host-profile samples: serverprofile.py)
            lease = folder / LEASE
            lease.touch()
            why = "asked to stop"
            while not stopping["signal"] and not (folder / "stop").exists():
                if time.time() - _mtime(lease) > float(request["lease_s"]):
                    why = f"its lease was not renewed for {float(request['lease_s']):.0f} s: the controller is gone"
                    break
                time.sleep(0.5)
            if stopping["signal"]:
                why = "SIGTERM"
            _said(folder, sid, "stopping", reason=why)
        _said(folder, sid, "stopped", reason=why)
        return 0
    except Exception as exc:  # the controller reads the reason from the status
        _said(folder, sid, "failed", reason=one_line(exc, STATUS_CHARS))
        return 1


def _mtime(path: Path) -> float:
    """When the lease was last renewed (0, long ago, if someone removed it)."""
    try:
        return path.stat().st_mtime
    except FileNotFoundError:
        return 0.0


def clients_of(hosts: dict[str, str]) -> dict[str, list[str]]:
    """The IP addresses the server lets dbarena's user in from: per load generator (its
    inventory name: its Host.address), that address if it is one, else what it resolves
    to here, every address of it (IPv4 and IPv6). Resolved on this host, because its
    resolver is the one of the network where the load generators meet the server (the
    controller may be a laptop elsewhere), and resolved once, at the start: pg_hba would
    take a host name, but matches it by reverse DNS of the client's address, which
    cloud and container networks seldom give back, and MariaDB, which skips name
    resolution, never matches one. The server sees a load generator by the address it
    connects from: where that is not the address others reach it by (several
    interfaces, NAT), the inventory says which with dbarena_server_address."""
    out: dict[str, list[str]] = {}
    for name, address in hosts.items():
        try:
            out[name] = [str(ipaddress.ip_address(address))]
            continue
        except ValueError:
            pass
        try:
            found = socket.getaddrinfo(address, None, proto=socket.IPPROTO_TCP)
        except OSError as exc:
            raise RuntimeError(f"load generator {name}'s address {address} does not resolve on the server host "
                               f"({exc.strerror or exc}): give it dbarena_server_address=<its IP address> "
                               "in the inventory") from None
        out[name] = sorted({str(ipaddress.ip_address(str(info[4][0]).split("%")[0])) for info in found})
    return out


def read_status(folder: Path) -> JSONObject:
    try:
        found = json.loads((folder / "status.json").read_text())
    except (OSError, ValueError):
        return {"state": "absent"}
    return found if isinstance(found, dict) else {"state": "absent"}


def control(workdir: Path, action: str, server_id: str) -> JSONObject:
    """What the controller asks of the server it started (server_id: its request's id;
    the folder may still hold the status of one before, until host-server replaces it)."""
    folder = folder_of(workdir)

    def read() -> JSONObject:
        found = read_status(folder)
        return found if found.get("id") == server_id else {"state": "absent"}

    if action == "stop":
        (folder / "stop").touch()
    wait = {"wait-ready": READY_WAIT_S, "stop": STOP_WAIT_S}.get(action)
    if wait is not None:
        deadline = time.monotonic() + wait
        wanted = (("ready",) if action == "wait-ready" else ()) + FINAL
        while time.monotonic() < deadline and read().get("state") not in wanted:
            if not alive(read().get("pid")):
                break
            time.sleep(0.2)
    status = read()
    if (folder / LEASE).exists():
        (folder / LEASE).touch()  # the controller is still there
    if status.get("state") not in FINAL and status.get("state") != "absent" and not alive(status.get("pid")):
        status = {**status, "state": "failed", "reason": "its dbarena process is gone"}
    return status
