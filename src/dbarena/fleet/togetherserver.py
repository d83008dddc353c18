"""The [server] host of a `fleet run --together`: its throwaway server's life, seen
from the controller (serverhost.py is the host's side).

The server is started per variant, with that variant's settings and cluster options,
listening on the host's inventory address and open to the load generators only; a
Lease keeps it while this controller is there, and it is stopped when the variant's
part ends, however it ends. Where the engine offers TLS, the server makes a
certificate and key for the run on its host (engines/tls.py; the key never leaves
it) and lets dbarena's user in over TLS only; each load generator then requires TLS
and verifies the server against that certificate (a MySQL-family server also trusts
each load generator's own client certificate, made first by host-tls). Where TLS is
ruled out, the run goes on unencrypted, says so in one line and records why.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shlex
import subprocess
import threading
import uuid
from pathlib import Path
from typing import Callable, Iterator, Mapping

from dbarena import engines
from dbarena.fleet import playforks, serverhost
from dbarena.fleet.controller import Ansible, ansible_command
from dbarena.fleet.inventory import Host
from dbarena.fleet.togethersteps import STEP_TIMEOUT_S, Step
from dbarena.records import JSON, JSONObject, json_object
from dbarena.study import Study

# The server stops itself once its lease is this old; the controller renews it every
# RENEW_S (a renewal that fails is tried again: three may fail in a row).
LEASE_S = 40.0
RENEW_S = 10.0


class ServerHost:
    """The [server] host's throwaway server, one variant's at a time."""

    def __init__(self, host: Host, clients: list[Host], study: Study, step: Step, say: Callable[[str], None],
                 inventory: Path):
        self.host, self.clients, self.study, self.step, self.say = host, clients, study, step, say
        self.inventory = inventory
        self.server_id = ""
        self.target = ""
        self.args: list[str] = []  # what the study's arguments gain on the hosts: this server as --target
        self.facts: JSONObject = {}  # the host's, once its server is up
        # The server's certificate (PEM) when it requires TLS; else why not.
        self.tls_ca: str | None = None
        self.tls_problem: str | None = None

    @contextlib.contextmanager
    def serving(self, settings: Mapping[str, str], cluster: Mapping[str, str], max_clients: int) -> Iterator[bool]:
        """The server with a variant's settings and cluster options (as a local run's
        throwaway instance of that variant), kept by its lease and stopped when the
        block ends, however it ends; True once it is up."""
        try:
            started = self.start(settings, cluster, max_clients)
        except BaseException:
            # Interrupted (Ctrl-C, SIGTERM) or failed while the server starts: it was
            # asked to start detached on its host and goes on without the controller,
            # until its lease or `fleet cleanup`; stopped now, as at a run's end.
            self.stop()
            raise
        if not started:
            yield False
            return
        try:
            with Lease(self.inventory, self.host):
                yield True
        finally:
            self.stop()

    def start(self, settings: Mapping[str, str], cluster: Mapping[str, str], max_clients: int) -> bool:
        """The study's engine as a throwaway instance on the host, listening on its
        address; the run then drives it as a --target."""
        entry = self.study.engines[0]
        tls, self.tls_problem = self._client_certificates()
        self.server_id = uuid.uuid4().hex[:12]
        request: JSONObject = {
            "id": self.server_id, "engine": entry.name, "flavour": entry.flavour,
            "settings": dict(settings), "cluster": dict(cluster), "bindir": entry.bindir,
            # Room for every client of the widest point, plus a few for dbarena itself.
            "max_connections": max(151, max_clients + 10),
            "listen": self.host.address,
            # Who may connect: the load generators, each by the address the inventory
            # gives it (the server host resolves a name: serverhost.clients_of).
            "clients": {h.name: h.address for h in self.clients},
            "lease_s": LEASE_S, "tls": tls}
        self.say(f"starting the server on {self.host.name} ({self.host.address}): a throwaway {entry.name}")
        answer = self.step([self.host], ["host-server-ctl", "--workdir", "{w}", "wait-ready",
                                         "--server", self.server_id],
                           request={self.host.name: json.dumps(request)}, detach=True, detached="host-server",
                           secrets=True, timeout_s=STEP_TIMEOUT_S + serverhost.READY_WAIT_S)[self.host.name]
        data = answer.data or {}
        if data.get("state") != "ready":
            self.say(f"{self.host.name}: the server did not start: "
                     f"{answer.problem or data.get('reason') or data.get('state')}")
            self.stop()
            return False
        self.facts = json_object(data.get("host_facts"))
        self.target = str(data["url"])
        cores, threads = data.get("physical_cores"), data.get("hardware_threads")
        self.args = ["--target", self.target, *(("--server-cores", str(cores)) if cores else ()),
                     *(("--server-threads", str(threads)) if threads else ())]
        opened = ", ".join(f"{name} ({' '.join(map(str, ips if isinstance(ips, list) else [ips]))})"
                           for name, ips in json_object(data.get("clients")).items())
        self.say(f"server on {self.host.name}: {data.get('server_version')} at {self.target}, "
                 f"open to {opened or 'no one'}")
        self._tls(data.get("tls_cert"), data.get("tls_problem"))
        return True

    def _tls(self, cert: JSON, problem: JSON) -> None:
        self.tls_ca = cert if isinstance(cert, str) and cert else None
        if self.tls_ca is not None:
            self.say(f"connections to the server: TLS required, its certificate (made on {self.host.name} for "
                     "this run) verified by each load generator")
            return
        self.tls_problem = self.tls_problem or (problem if isinstance(problem, str) and problem else
                                                "the server offers no TLS")
        self.say(f"connections to the server: NOT encrypted: {self.tls_problem}")

    def _client_certificates(self) -> tuple[JSONObject | None, str | None]:
        """What the server's request says of TLS ({"client_certs": [...]}), or None and
        why not. A MySQL-family server verifies the client certificate that sysbench
        presents: each load generator makes its own first (host-tls) and the server
        trusts those (Engine.client_certificates). PostgreSQL asks none."""
        if not engines.first(self.study.engines[0].name).client_certificates:
            return {"client_certs": []}, None
        answers = self.step(self.clients, ["host-tls", "--workdir", "{w}"])
        certs: list[JSON] = []
        for h in self.clients:
            answer = answers[h.name]
            cert = (answer.data or {}).get("cert")
            if not cert:
                why = answer.problem or (answer.data or {}).get("error") or "no answer"
                return None, f"{h.name} could not make its client certificate: {why}"
            certs.append(str(cert))
        return {"client_certs": certs}, None

    def tls_fact(self, seen: JSONObject | None) -> JSONObject:
        """The run's target fact `tls`: required and verified, with what the first load
        generator's connection got (`seen`: TLS version and cipher, as the server saw
        them); or not, and why."""
        if self.tls_ca is None:
            return {"required": False, "reason": self.tls_problem}
        return {"required": True, "verified": "against the server's own certificate, made for this run",
                **(seen or {})}

    def alive(self) -> str | None:
        """None while the server is up (and so told the controller is there), else why not."""
        answer = self.step([self.host], ["host-server-ctl", "--workdir", "{w}", "status",
                                         "--server", self.server_id])[self.host.name]
        data = answer.data or {}
        if data.get("state") == "ready":
            return None
        return f"{self.host.name}: the server is {answer.problem or data.get('reason') or data.get('state')}"

    def stop(self) -> None:
        answer = self.step([self.host], ["host-server-ctl", "--workdir", "{w}", "stop", "--server", self.server_id],
                           timeout_s=STEP_TIMEOUT_S + serverhost.STOP_WAIT_S)[self.host.name]
        state = (answer.data or {}).get("state")
        self.say(f"server on {self.host.name}: " + ("stopped and removed" if state in ("stopped", "absent") else
                                                    f"not confirmed stopped ({answer.problem or state}); "
                                                    f"`dbarena cleanup` on {self.host.name} removes it"))


class Lease:
    """Keeps the [server] host's server while this controller is there: a thread that
    every RENEW_S touches the server's lease file (serverhost.LEASE) over SSH, by
    Ansible's raw module, so that nothing but `touch` starts on the host being measured
    (no Python, no dbarena) and no play of the run waits for it. A controller that is
    killed stops renewing, and its server stops itself LEASE_S later."""

    def __init__(self, inventory: Path, host: Host):
        lease = str(serverhost.lease_path(Path(host.workdir)))
        self.argv = [ansible_command("ansible"), "-i", str(inventory), host.name, "-m", "raw",
                     "-a", f"touch -c {shell_path(lease)}"]
        # The passwords stay out of it (the raw module sends no environment, but why hand them on).
        self.env = {k: v for k, v in os.environ.items() if k not in engines.PASSWORD_VARIABLES}
        self.env.setdefault("ANSIBLE_TIMEOUT", str(int(RENEW_S)))
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._renew, name="dbarena-server-lease", daemon=True)

    def __enter__(self) -> "Lease":
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.done.set()
        self.thread.join(timeout=2 * RENEW_S)

    def _renew(self) -> None:
        while not self.done.wait(RENEW_S):
            try:
                proc = subprocess.Popen(self.argv, env=self.env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL, start_new_session=True)
            except OSError:
                continue
            try:
                proc.wait(timeout=2 * RENEW_S)
            except subprocess.TimeoutExpired:  # a connection that hangs: the next renewal tries again
                playforks.kill_play(proc.pid)  # with its worker, in a session of its own
                proc.wait()


def shell_path(path: str) -> str:
    """A host's path quoted for its shell, a leading ~/ left for the shell to expand (a
    working directory in the login user's home, as inventory.py's default is)."""
    if path == "~" or path.startswith("~/"):
        rest = path[2:]
        return "~/" + (shlex.quote(rest) if rest else "")
    return shlex.quote(path)


@contextlib.contextmanager
def server_password(ansible: Ansible, engine: str) -> Iterator[None]:
    """A password for the [server] host's throwaway server, made here and handed to the
    plays for the run as a --target's password is (Ansible.passwords: in the plays'
    environment only, written to a file only the host's user reads, removed once read;
    never an argument or a logged result, and masked in what a host says)."""
    variable = engines.first(engine).password_env
    before = ansible.passwords.get(variable)
    password = secrets.token_urlsafe(24)
    ansible.passwords[variable] = password
    ansible.secrets.append(password)
    try:
        yield
    finally:
        if before is None:
            ansible.passwords.pop(variable, None)
        else:
            ansible.passwords[variable] = before
