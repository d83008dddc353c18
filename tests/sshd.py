"""A real-SSH harness for end-to-end tests that drive Ansible: several "hosts" that are
really this machine, each reached through its own sshd on its own loopback address.

    from sshd import missing, sshd, inventory, ansible_env

    if missing():
        pytest.skip(missing())
    with sshd(("127.0.0.2", "127.0.0.3"), tmp_path) as fleet:
        inv = inventory(fleet.hosts, fleet.key, tmp_path / "hosts.ini")
        subprocess.run([ansible, "all", "-i", inv, "-m", "ping"], env=ansible_env(tmp_path))
        fleet["beta"].kill()        # that "host" goes away; the others stay

One sshd process per address (so that one host can be killed alone), each in the
foreground (-D) as a child of the test, logging to <dir>/sshd-<name>.log. Leaving the
context kills every sshd it started and their sessions, exceptions included.

Nothing is installed here: missing() says what is absent (Debian's openssh-server
provides /usr/sbin/sshd) so that a test can skip or fail with a clear reason.
Logging in as root needs root: missing() says so too.

Every host's sessions get a TMPDIR and a DBARENA_STATE_DIR of their own (sshd's SetEnv;
dbarena takes both from the environment on a real host too): TMPDIR under Fleet.scratch,
a fresh directory in /tmp that the servers' users can enter, state under the private
directory. So what a fleet's runs make (throwaway servers and their data directories,
scratch folders, the records of what they started) is found under its own two
directories, never among what other tests on this machine make in /tmp and
/var/lib/dbarena at the same time (`make test` runs the fleet tests two at a time), and
`fleet cleanup` on a host reaps that host's records only. env= may set others.

What Ansible leaves behind (with ansible_env() and per-host workdirs, all of it lands
under the test's own temporary directory; without them it is the defaults in brackets):
  controller: ANSIBLE_LOCAL_TEMP [~/.ansible/tmp], ANSIBLE_SSH_CONTROL_PATH_DIR
    [~/.ansible/cp] and the ControlPersist ssh masters there (they exit when their sshd
    dies, or after 60 s idle), ANSIBLE_HOME [~/.ansible] (galaxy cache etc.).
  hosts: ansible_remote_tmp [~/.ansible/tmp], removed after each task except while an
    async task runs; ansible_async_dir [~/.ansible_async], one job file per async task,
    never removed by Ansible itself (async_status mode=cleanup removes one).
  An async job (async_wrapper.py and its module, run from the remote tmp) detaches from
  its SSH session: it survives Host.kill() and this context, as on a real host. With a
  workdir its command line names that workdir, so processes_mentioning(workdir) finds it.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shlex
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Mapping, Sequence

SSHD = "/usr/sbin/sshd"  # sshd re-executes itself, which needs an absolute path
SSH_KEYGEN = "ssh-keygen"
PRIVSEP_DIR = Path("/run/sshd")
NAMES = ("alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta")
# Where inventory() puts the hosts' shared dependencies (dbarena_deps_dir) unless a test
# gives its own: the directory this variable names, one for the whole test session
# (conftest.py): every "host" is this machine, so one install of numpy, scipy and the
# rest serves every fleet test, as one serves every working directory of a real host
# (fleet/playbooks/venv_install.py). Unset: dbarena's default, under the workdir base.
DEPS_ENV = "DBARENA_TEST_FLEET_DEPS"


def missing() -> str | None:
    """A one-line reason why sshd() cannot run here, or None."""
    if not os.access(SSHD, os.X_OK):
        return f"{SSHD} is missing (Debian package openssh-server)"
    if not shutil.which(SSH_KEYGEN):
        return "ssh-keygen is missing (Debian package openssh-client)"
    if not shutil.which("ssh"):
        return "ssh is missing (Debian package openssh-client)"
    if os.geteuid() != 0:
        return "the sshd harness logs in as root, so it must run as root"
    return None


# --- processes ------------------------------------------------------------------------

def _children() -> dict[int, list[int]]:
    """ppid -> pids, from /proc."""
    tree: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        # the command name (2nd field) is in parentheses and may hold spaces
        ppid = int(stat[stat.rindex(")") + 2:].split()[1])
        tree.setdefault(ppid, []).append(int(entry))
    return tree


def _descendants(pid: int) -> list[int]:
    tree = _children()
    found, todo = [], [pid]
    while todo:
        for child in tree.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def _kill_tree(pid: int) -> None:
    """SIGKILL pid and all its descendants. They are stopped first, until no new one
    appears, so that none forks away or is reparented (out of sight) in between."""
    stopped = {pid}
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGSTOP)
    for _ in range(50):
        new = [p for p in _descendants(pid) if p not in stopped]
        if not new:
            break
        for p in new:
            with contextlib.suppress(ProcessLookupError):
                os.kill(p, signal.SIGSTOP)
            stopped.add(p)
    # A real host that goes away takes its RAM with it; this one shares the test
    # machine's: the shared memory its PostgreSQL held is removed with it.
    from dbarena.lifecycle import state

    segments = {seg for p in stopped for seg in state.shm_segments(p)}
    for p in stopped:
        with contextlib.suppress(ProcessLookupError):
            os.kill(p, signal.SIGKILL)
    state.remove_segments(segments)


# --- hosts ------------------------------------------------------------------------------

@dataclass
class Host:
    """One "host": an sshd listening on address:port."""

    name: str
    address: str
    port: int
    config: Path
    log: Path
    process: subprocess.Popen = field(repr=False)

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def alive(self) -> bool:
        return self.process.poll() is None

    def kill(self) -> None:
        """The host goes away: its sshd and every session under it die (SIGKILL).
        Processes that detached from their session (Ansible's async jobs) survive, as
        they would survive a dropped connection to a real host."""
        if self.process.poll() is None:
            _kill_tree(self.process.pid)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=10)

    def restart(self, timeout: float = 20) -> None:
        """The host comes back: its sshd again, on the same address and port."""
        self.kill()
        with open(self.log, "ab") as err:
            self.process = subprocess.Popen([SSHD, "-D", "-e", "-f", str(self.config)], stdin=subprocess.DEVNULL,
                                            stdout=err, stderr=err, start_new_session=True)
        _wait_accepting(self, time.monotonic() + timeout)

    def log_tail(self, lines: int = 20) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""


@dataclass
class Fleet:
    """What sshd() yields: the hosts, and the client key that logs in to all of them."""

    hosts: list[Host]
    key: Path  # private key; key.with_suffix(".pub") is in every host's authorized_keys
    dir: Path  # the private directory holding keys, configs, logs
    # The parent of the hosts' TMPDIRs (scratch/<name>, unless env= gave one): the data
    # directories of their runs' throwaway servers are under it, so processes_mentioning
    # (scratch) is what is left running of them. Removed when the test process exits
    # (not with the context: a test checks after it that nothing is left there).
    scratch: Path

    def __iter__(self) -> Iterator[Host]:
        return iter(self.hosts)

    def __len__(self) -> int:
        return len(self.hosts)

    def __getitem__(self, item: int | str) -> Host:
        if isinstance(item, int):
            return self.hosts[item]
        for host in self.hosts:
            if item in (host.name, host.address):
                return host
        raise KeyError(item)


def _free_port(address: str) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((address, 0))
        return s.getsockname()[1]


def _keygen(path: Path, comment: str) -> None:
    subprocess.run([SSH_KEYGEN, "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", str(path)],
                   check=True, capture_output=True, stdin=subprocess.DEVNULL, timeout=30)


def _config(address: str, port: int, private: Path, name: str, env: Mapping[str, str] | None = None) -> str:
    if any(c in f"{k}{v}" for k, v in (env or {}).items() for c in " \t\"'\n"):
        raise ValueError(f"an environment variable for sshd's SetEnv with a blank or a quote in it: {env}")
    return "\n".join([
        f"ListenAddress {address}:{port}",
        f"HostKey {private / 'ssh_host_ed25519_key'}",
        f"PidFile {private / f'sshd-{name}.pid'}",
        f"AuthorizedKeysFile {private / 'authorized_keys'}",
        "PermitRootLogin prohibit-password",
        "PubkeyAuthentication yes",
        "PasswordAuthentication no",
        "KbdInteractiveAuthentication no",
        "UsePAM no",
        "StrictModes no",
        "UseDNS no",
        # bash sources ~/.bashrc for a command run by sshd (Debian builds it so) unless
        # SHLVL says it is nested. This machine's root .bashrc runs `pyenv rehash`, which
        # waits 60 s for a lock that a test killing a "host" mid-login leaves behind: then
        # every Ansible task of every later test took a minute and the fleet tests hung.
        # The hosts' logins need nothing from an interactive shell's set-up.
        # (sshd takes the first SetEnv line only: a host's own variables go on it too.)
        " ".join(["SetEnv SHLVL=1", *(f"{k}={v}" for k, v in (env or {}).items())]),
        "PrintMotd no",
        "PrintLastLog no",
        "X11Forwarding no",
        "AllowTcpForwarding no",
        # Ansible opens several connections at once (forks, ControlMaster, retries)
        "MaxStartups 100:30:200",
        "MaxSessions 100",
        "Subsystem sftp internal-sftp",
        "LogLevel INFO",
        "",
    ])


def _wait_accepting(host: Host, deadline: float) -> None:
    """Until sshd answers with its banner on address:port, or it died, or time is up."""
    while True:
        if host.process.poll() is not None:
            raise RuntimeError(f"sshd for {host.address}:{host.port} exited with {host.process.returncode}:\n"
                               f"{host.log_tail()}")
        with contextlib.suppress(OSError):
            with socket.create_connection((host.address, host.port), timeout=2) as s:
                if s.recv(64).startswith(b"SSH-"):
                    return
        if time.monotonic() > deadline:
            raise RuntimeError(f"sshd for {host.address}:{host.port} is not accepting connections:\n"
                               f"{host.log_tail()}")
        time.sleep(0.05)


def _start(name: str, address: str, private: Path, deadline: float, env: Mapping[str, str] | None = None) -> Host:
    last: Exception | None = None
    for _attempt in range(5):  # the free port may be taken between the probe and sshd's bind
        port = _free_port(address)
        config = private / f"sshd-{name}.conf"
        config.write_text(_config(address, port, private, name, env))
        log = private / f"sshd-{name}.log"
        with open(log, "ab") as err:
            process = subprocess.Popen([SSHD, "-D", "-e", "-f", str(config)], stdin=subprocess.DEVNULL,
                                       stdout=err, stderr=err, start_new_session=True)
        host = Host(name, address, port, config, log, process)
        try:
            _wait_accepting(host, deadline)
            return host
        except RuntimeError as e:
            last = e
            host.kill()
            if "Address already in use" not in host.log_tail():
                raise
    raise RuntimeError(f"sshd for {address} never got a free port: {last}")


@contextlib.contextmanager
def sshd(addresses: Sequence[str] = ("127.0.0.2", "127.0.0.3"), tmp: Path | None = None,
         names: Sequence[str] | None = None, timeout: float = 20,
         env: Mapping[str, Mapping[str, str]] | None = None) -> Iterator[Fleet]:
    """Start one sshd per loopback address (named alpha, beta, ... unless names are
    given); yield a Fleet. Keys, configs and logs go to a fresh 0700 directory under
    tmp (or the system's temporary directory). env: host name -> environment variables
    its sessions get (sshd's SetEnv) besides, or instead of, the TMPDIR and
    DBARENA_STATE_DIR of that host's own that every host gets (see the module's
    docstring)."""
    reason = missing()
    if reason:
        raise RuntimeError(reason)
    names = list(names) if names is not None else list(NAMES[:len(addresses)])
    if len(names) != len(addresses):
        raise ValueError("one name per address")
    if tmp is not None:
        tmp.mkdir(parents=True, exist_ok=True)
    private = Path(tempfile.mkdtemp(prefix="sshd-", dir=tmp))  # mkdtemp makes it 0700
    # In /tmp, not under tmp: pytest's own folders are 0700, and PostgreSQL's and
    # MariaDB's users must reach their data directories.
    scratch = Path(tempfile.mkdtemp(prefix="dbarena-fleet-", dir="/tmp"))
    scratch.chmod(0o755)
    atexit.register(shutil.rmtree, scratch, True)
    own: dict[str, dict[str, str]] = {}
    for name in names:
        (scratch / name).mkdir()
        (scratch / name).chmod(0o755)  # whatever the umask
        own[name] = {"TMPDIR": str(scratch / name), "DBARENA_STATE_DIR": str(private / "state" / name),
                     **(env or {}).get(name, {})}
    # sshd's privilege separation directory: must exist, be owned by root, not writable by others
    PRIVSEP_DIR.mkdir(mode=0o755, exist_ok=True)
    _keygen(private / "ssh_host_ed25519_key", "dbarena-test-host")
    key = private / "id_ed25519"
    _keygen(key, "dbarena-test-client")
    (private / "authorized_keys").write_text(key.with_suffix(".pub").read_text())

    hosts: list[Host] = []
    try:
        deadline = time.monotonic() + timeout
        for name, address in zip(names, addresses):
            hosts.append(_start(name, address, private, deadline, own[name]))
        yield Fleet(hosts, key, private, scratch)
    finally:
        for host in hosts:
            host.kill()


# --- Ansible ------------------------------------------------------------------------------

def _ini_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    text = str(value)
    if text and not any(c in text for c in " \t'\"#;=\\"):
        return text
    return shlex.quote(text)  # Ansible's INI parser splits host lines like a shell would


def inventory(hosts: Sequence[Host], key: Path, path: Path,
              workdirs: Mapping[str, Path] | None = None,
              extra_vars: Mapping[str, Mapping[str, object]] | None = None,
              group: str = "fleet") -> Path:
    """Write an Ansible INI inventory at path (returned) with one line per host, in group.

    workdirs: host name -> a directory of that host's own: given to the play as var
      `workdir`, and holding that host's ansible_remote_tmp and ansible_async_dir, so that
      hosts sharing this one machine do not share Ansible's files and a test can clean up
      (or inspect) everything Ansible left on a "host".
    extra_vars: host name -> more host vars.
    Each host's dbarena_deps_dir is $DBARENA_TEST_FLEET_DEPS when set (DEPS_ENV), unless
    extra_vars gives one.
    """
    workdirs = workdirs or {}
    extra_vars = extra_vars or {}
    lines = [f"[{group}]"]
    for host in hosts:
        hostvars: dict[str, object] = {
            "ansible_host": host.address,
            "ansible_port": host.port,
            "ansible_user": "root",
            "ansible_ssh_private_key_file": key,
            # A connection to a killed host fails in seconds instead of hanging.
            "ansible_ssh_common_args": "-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null"
                                       " -o ConnectTimeout=10 -o ServerAliveInterval=5 -o ServerAliveCountMax=3",
            "ansible_python_interpreter": "/usr/bin/python3",
        }
        if host.name in workdirs:
            workdir = Path(workdirs[host.name])
            hostvars["workdir"] = workdir
            hostvars["ansible_remote_tmp"] = workdir / "ansible-tmp"
            hostvars["ansible_async_dir"] = workdir / "ansible-async"
        if os.environ.get(DEPS_ENV):
            hostvars["dbarena_deps_dir"] = os.environ[DEPS_ENV]
        hostvars.update(extra_vars.get(host.name, {}))
        lines.append(" ".join([host.name, *(f"{k}={_ini_value(v)}" for k, v in hostvars.items())]))
    path.write_text("\n".join(lines) + "\n")
    return path


def ansible_env(tmp: Path, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """An environment for the ansible commands that keeps the controller's files (local
    temp, ControlPersist sockets, ANSIBLE_HOME) under tmp instead of ~/.ansible, and
    turns off retry files, colour and host key checking. The control socket directory is
    a short one under /tmp when tmp's path is too long for unix sockets."""
    env = dict(os.environ if base is None else base)
    controller = tmp / "ansible-controller"
    controller.mkdir(parents=True, exist_ok=True)
    cp = controller / "cp"
    # a socket path, <dir>/<10 hex chars>.<ssh's 16-char temporary suffix>, must fit in
    # 108 bytes: a long tmp gets a short /tmp directory instead, removed at exit
    if len(str(cp)) > 70:
        cp = Path(tempfile.mkdtemp(prefix="ansible-cp-", dir="/tmp"))
        atexit.register(shutil.rmtree, cp, True)
    cp.mkdir(mode=0o700, exist_ok=True)
    env.update({
        "ANSIBLE_HOME": str(controller / "home"),
        "ANSIBLE_LOCAL_TEMP": str(controller / "tmp"),
        "ANSIBLE_SSH_CONTROL_PATH_DIR": str(cp),
        "ANSIBLE_HOST_KEY_CHECKING": "False",
        "ANSIBLE_RETRY_FILES_ENABLED": "False",
        "ANSIBLE_NOCOLOR": "1",
        "ANSIBLE_FORCE_COLOR": "0",
        "ANSIBLE_DEPRECATION_WARNINGS": "False",
    })
    env.pop("ANSIBLE_CONFIG", None)
    return env
