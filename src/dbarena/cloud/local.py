"""The local provider (`provider = "local"`): "instances" made on this machine, each an
sshd of its own on an address of the loopback range (127.77.x.y), so that a study's
[machines] runs the whole way (create, tag, describe, the fleet run over SSH, delete)
with no cloud. What it is for: trying a study's [machines] flow here, and testing it.

An instance is a directory, state_dir()/cloud/local/ID/, holding its state record
(instance.json: its tags, address, port, sshd's process, when it was created and when
it answered), its keys, its sshd's configuration and log, and everything run on it:
its sshd sets DBARENA_STATE_DIR and DBARENA_LOCAL_INSTANCE for every session, and the
fleet's working directory is under it. Its TMPDIR (where throwaway servers keep their
data) is a directory of its own in the system's temporary directory, as it must be
reachable by the servers' user (postgres) and the state directory is private. Deleting one stops every process that
carries its marker or names its directory (sshd, the fleet's detached runs, their
throwaway servers), removes the shared memory they held, and removes the directory:
as a cloud's instance takes everything on it when it is terminated.

The instance type is only a name (a label, a price's key): every instance is this
machine. The shared dependencies of the fleet's hosts (dbarena_deps_dir) are one
directory for all instances, kept between runs as an image's packages would be:
$DBARENA_LOCAL_DEPS_DIR, else state_dir()/cloud/local-deps.
"""

from __future__ import annotations

import contextlib
import getpass
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Mapping, Sequence

from dbarena.cloud.provider import TAG_HOST, TAG_RUN, Resource, stamp, utc
from dbarena.errors import EnvironmentProblem
from dbarena.lifecycle import state
from dbarena.study.model import Machines

SSHD = "/usr/sbin/sshd"  # sshd re-executes itself, which needs an absolute path
MARKER = "DBARENA_LOCAL_INSTANCE"
DEPS_ENV = "DBARENA_LOCAL_DEPS_DIR"
ZONE = "local"
# How long an sshd has to answer with its banner (a loaded machine takes a second or two).
READY_TIMEOUT_S = 30.0
# sshd's privilege separation directory, which it needs when started as root: made at
# boot by the ssh service (RuntimeDirectory), so missing where sshd never ran (a container).
PRIVSEP_DIR = Path("/run/sshd")


def root() -> Path:
    return state.state_dir() / "cloud" / "local"


def deps_dir() -> Path:
    return Path(os.environ[DEPS_ENV]) if os.environ.get(DEPS_ENV) else state.state_dir() / "cloud" / "local-deps"


def missing() -> str | None:
    """Why the local provider cannot make instances here, or None."""
    if not os.access(SSHD, os.X_OK):
        return f"the local provider runs {SSHD}, which is missing (Debian package openssh-server)"
    for tool in ("ssh-keygen", "ssh"):
        if not shutil.which(tool):
            return f"the local provider needs {tool} (Debian package openssh-client)"
    return None


class Local:
    name = "local"

    def __init__(self, region: str):
        self.region = region
        self.passwords: dict[str, str] = {}  # (it makes no managed database)
        self._children: dict[str, subprocess.Popen[bytes]] = {}  # instance id -> its sshd, to reap

    def zones(self) -> list[str]:
        return []  # one machine: nowhere else to try

    def create(self, machines: Machines, tags: Mapping[str, str], zone: str | None = None) -> list[Resource]:
        reason = missing()
        if reason:
            raise EnvironmentProblem(reason)
        if machines.managed:
            raise EnvironmentProblem("the local provider makes hosts, not managed databases")
        _privsep()
        used = {r.address for r in self.describe()}
        made = []
        for name, instance_type in machines.hosts:
            made.append(self._one(name, instance_type, {**tags, TAG_HOST: name}, used))
            used.add(made[-1].address)
        return made

    def _one(self, name: str, instance_type: str, tags: Mapping[str, str], used: set[str | None]) -> Resource:
        ident = f"local-{os.urandom(4).hex()}"
        folder = root() / ident
        folder.mkdir(parents=True, mode=0o700)
        created = datetime.now(timezone.utc)
        address = _address(used)
        record: dict[str, Any] = {"id": ident, "name": name, "type": instance_type, "address": address,
                                  "created": created.isoformat(), "state": "pending", "tags": dict(tags)}
        # Written before anything starts: a controller killed from here on leaves an
        # instance that describe() finds by its tags, and the next command deletes.
        _write(folder, record)
        for sub in ("state", "work"):
            (folder / sub).mkdir(mode=0o700)
        # Named and recorded before it is made: a `cloud up` killed in between leaves a
        # record naming it, and deleting the instance removes it (never a directory in
        # TMPDIR that nothing names).
        scratch = Path(tempfile.gettempdir()) / f"dbarena-{ident}-{os.urandom(4).hex()}"
        record["tmp"] = str(scratch)
        _write(folder, record)
        scratch.mkdir(mode=0o700)
        scratch.chmod(0o755)  # (the throwaway servers' user makes its directories in it)
        _keygen(folder / "host_key")
        _keygen(folder / "client_key")
        (folder / "authorized_keys").write_text((folder / "client_key.pub").read_text())
        last = ""
        for _attempt in range(5):  # the free port may be taken between the probe and sshd's bind
            port = _free_port(address)
            config = folder / "sshd.conf"
            config.write_text(_config(folder, ident, address, port, scratch))
            with open(folder / "sshd.log", "ab") as log:
                proc = subprocess.Popen([SSHD, "-D", "-e", "-f", str(config)], stdin=subprocess.DEVNULL,
                                        stdout=log, stderr=log, start_new_session=True)
            self._children[ident] = proc
            record.update({"port": port, "pid": proc.pid, "pid_start": state.start_time(proc.pid)})
            _write(folder, record)
            if _answers(address, port, proc, time.monotonic() + READY_TIMEOUT_S):
                record.update({"state": "running", "ready": datetime.now(timezone.utc).isoformat()})
                _write(folder, record)
                return _resource(record)
            last = _tail(folder / "sshd.log")
            _stop(ident, [folder, scratch])
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=5)
            if "Address already in use" not in last:
                break
        raise EnvironmentProblem(f"local: the sshd of {name} ({address}) did not answer: {last or 'no output'}")

    def describe(self) -> list[Resource]:
        folder = root()
        found = []
        for path in sorted(folder.glob("local-*/instance.json")) if folder.is_dir() else []:
            try:
                record = json.loads(path.read_text())
            except (OSError, ValueError):
                continue
            if not isinstance(record, dict) or TAG_RUN not in (record.get("tags") or {}):
                continue
            if record.get("state") == "running" and not state.alive(record.get("pid"), record.get("pid_start")):
                record["state"] = "stopped"  # its sshd is gone (this machine restarted)
            found.append(_resource(record))
        return found

    def delete(self, resources: Sequence[Resource]) -> None:
        for r in resources:
            folder = root() / r.id
            if r.kind != "instance" or not r.id.startswith("local-") or folder.parent != root():
                continue
            scratch = _scratch(folder)
            _stop(r.id, [folder, *([scratch] if scratch else [])])
            child = self._children.pop(r.id, None)
            if child is not None:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    child.wait(timeout=10)
            if scratch is not None:
                shutil.rmtree(scratch, ignore_errors=True)
            shutil.rmtree(folder, ignore_errors=True)

    def host_vars(self, host: Resource, machines: Machines) -> dict[str, object]:
        folder = root() / host.id
        return {
            "ansible_port": host.port,
            "ansible_user": getpass.getuser(),
            "ansible_ssh_private_key_file": str(folder / "client_key"),
            # A throwaway host key on a loopback address: nothing to verify it against.
            "ansible_ssh_common_args": "-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null "
                                       "-o ConnectTimeout=10 -o ServerAliveInterval=5 -o ServerAliveCountMax=3",
            "ansible_python_interpreter": "/usr/bin/python3" if os.access("/usr/bin/python3", os.X_OK)
            else shutil.which("python3") or "python3",
            "dbarena_workdir_base": str(folder / "work"),
            "dbarena_deps_dir": str(deps_dir()),
        }


def _privsep() -> None:
    """As root, sshd refuses to start without its privilege separation directory (root's,
    not writable by others): made as the ssh service would make it."""
    if os.geteuid() != 0:
        return
    try:
        PRIVSEP_DIR.mkdir(mode=0o755, parents=True, exist_ok=True)
    except OSError as exc:
        raise EnvironmentProblem(f"local: sshd needs {PRIVSEP_DIR}, which cannot be made: "
                                 f"{exc.strerror or exc}") from None


def _scratch(folder: Path) -> Path | None:
    """The instance's TMPDIR, as its record names it (only a directory named as this
    provider names them: dbarena-local-ID-...)."""
    try:
        text = json.loads((folder / "instance.json").read_text()).get("tmp")
    except (OSError, ValueError, AttributeError):
        return None
    path = Path(text) if isinstance(text, str) else None
    return path if path is not None and path.is_absolute() and path.name.startswith(f"dbarena-{folder.name}-") \
        else None


def _write(folder: Path, record: Mapping[str, Any]) -> None:
    temporary = folder / "instance.json.tmp"
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump(record, f, indent=1)
    temporary.replace(folder / "instance.json")


def _resource(record: Mapping[str, Any]) -> Resource:
    created, ready = record.get("created"), record.get("ready")
    port = record.get("port")
    return Resource(kind="instance", id=str(record["id"]), name=str(record.get("name", record["id"])),
                    type=str(record.get("type", "")), zone=ZONE, address=record.get("address"),
                    port=port if isinstance(port, int) else None, engine=None,
                    created=utc(created) if isinstance(created, str) else None, state=str(record.get("state", "")),
                    tags={str(k): str(v) for k, v in (record.get("tags") or {}).items()},
                    ready=utc(ready) if isinstance(ready, str) else None)


def _address(used: set[str | None]) -> str:
    """An address of the loopback range no other local instance has (127.77.x.y: far
    from 127.0.0.x, which other programs and tests take)."""
    for _ in range(1000):
        address = f"127.77.{random.randint(0, 255)}.{random.randint(1, 254)}"
        if address not in used:
            return address
    raise EnvironmentProblem("local: no free loopback address left for another instance")


def _free_port(address: str) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((address, 0))
        port: int = s.getsockname()[1]
        return port


def _keygen(path: Path) -> None:
    try:
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "dbarena-local", "-f", str(path)],
                       check=True, capture_output=True, stdin=subprocess.DEVNULL, timeout=30)
    except (OSError, subprocess.SubprocessError) as exc:
        raise EnvironmentProblem(f"local: ssh-keygen failed: {exc}") from None


def _config(folder: Path, ident: str, address: str, port: int, scratch: Path) -> str:
    env = {"SHLVL": "1", MARKER: ident, "TMPDIR": str(scratch), state.ENV: str(folder / "state")}
    return "\n".join([
        f"ListenAddress {address}:{port}",
        f"HostKey {folder / 'host_key'}",
        f"PidFile {folder / 'sshd.pid'}",
        f"AuthorizedKeysFile {folder / 'authorized_keys'}",
        "PermitRootLogin prohibit-password",
        "PubkeyAuthentication yes",
        "PasswordAuthentication no",
        "KbdInteractiveAuthentication no",
        "UsePAM no",
        # The keys are this controller's own files (its state directory's modes).
        "StrictModes no",
        "UseDNS no",
        # Every session on the instance works in its directory and carries its marker
        # (what delete() finds its processes by). SHLVL=1: bash then does not source
        # ~/.bashrc for a command, whose set-up (pyenv's) can wait a minute on a lock.
        "SetEnv " + " ".join(f"{k}={v}" for k, v in env.items()),
        "PrintMotd no",
        "PrintLastLog no",
        "X11Forwarding no",
        "AllowTcpForwarding no",
        # Ansible opens several connections at once (forks, ControlMaster, retries).
        "MaxStartups 100:30:200",
        "MaxSessions 100",
        "Subsystem sftp internal-sftp",
        "LogLevel INFO",
        "",
    ])


def _answers(address: str, port: int, proc: subprocess.Popen[bytes], deadline: float) -> bool:
    """Until sshd answers with its banner, or it died, or time is up."""
    while proc.poll() is None and time.monotonic() < deadline:
        with contextlib.suppress(OSError):
            with socket.create_connection((address, port), timeout=2) as s:
                if s.recv(64).startswith(b"SSH-"):
                    return True
        time.sleep(0.05)
    return False


def _tail(log: Path) -> str:
    try:
        lines = log.read_text(errors="replace").strip().splitlines()
    except OSError:
        return ""
    return lines[-1] if lines else ""


def _on_instance(ident: str, folders: list[Path]) -> list[int]:
    """The processes of an instance: those carrying its marker, or naming its directories."""
    marker = b"\0" + f"{MARKER}={ident}".encode() + b"\0"
    needles = [str(folder).encode() for folder in folders]
    me = os.getpid()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == me:
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            environ = Path(f"/proc/{entry}/environ").read_bytes()
        except OSError:
            continue
        if any(needle in cmdline for needle in needles) or marker in b"\0" + environ + b"\0":
            found.append(int(entry))
    return found


def _stop(ident: str, folders: list[Path]) -> None:
    """Every process of the instance stopped (SIGSTOP, until no new one appears, so that
    none forks away in between), then killed; the shared memory they held removed (a
    real machine's RAM goes with it; this one's stays)."""
    stopped: set[int] = set()
    for _ in range(50):
        new = [p for p in _on_instance(ident, folders) if p not in stopped]
        if not new:
            break
        for pid in new:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGSTOP)
            stopped.add(pid)
    segments = {seg for pid in stopped for seg in state.shm_segments(pid)}
    for pid in stopped:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
    state.remove_segments(segments)
