"""ansible-playbook run in forks of one process that has imported Ansible already.

Each play of a fleet run (a status poll, a --together step) cost the controller a new
ansible-playbook: about 0.8 s of CPU before anything reached a host, most of it Python
importing Ansible (0.5 s) and reading its plugins' documentation (config definitions,
YAML: 0.4 s), again at every play. Here one helper process (`python -m
dbarena.fleet.playforks`, started by PlayForks when the fleet's first play runs) does
that once; each play then runs as ansible-playbook would, in a fork of it: a process of
its own in a session of its own (a Ctrl-C on the controller reaches it only as the
controller decides: let end, then killed), its output in files of the controller's
private working directory, its exit code answered on the helper's pipe. Nothing of one
play's state reaches the next: a fork begins from the helper as it was before any play.
A play killed (no answer in time, or an interrupt it outlasts) is killed with all it
started (kill_play): Ansible's workers make sessions of their own, so its session alone
is not all of it.

Ansible reads its configuration (the ANSIBLE_* variables, an ansible.cfg of the working
directory) when it is imported: a helper serves one such environment, and PlayForks
starts another when a play's differs. The rest of a play's environment (the passwords
that the hosts' runs read through lookup('env')) is sent with the play, over the pipe,
never as an argument.

Where Ansible is not importable by this Python (an ansible-playbook found on PATH, not
beside it), or the helper does not start, PlayForks.play starts an ansible-playbook for
each play, as before."""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import selectors
import signal
import subprocess
import sys
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Mapping

# How long the helper may take to import Ansible and load its plugins (about a second).
READY_TIMEOUT_S = 120.0

# The plugins every play of the fleet loads, loaded once in the helper, with their
# configuration definitions (their documentation's YAML): (loader, name). Not the vars
# plugin host_group_vars: loaded as a class beforehand, Ansible 2.19's play then fails
# ("AnsiblePlugin.get_option() missing 1 required positional argument").
PLUGINS = (("connection_loader", "ssh"), ("connection_loader", "local"), ("shell_loader", "sh"),
           ("become_loader", "sudo"), ("become_loader", "su"), ("strategy_loader", "linear"),
           ("callback_loader", "dbarena_json"), ("callback_loader", "default"),
           ("action_loader", "normal"), ("action_loader", "raw"), ("action_loader", "command"),
           ("action_loader", "shell"), ("action_loader", "copy"), ("action_loader", "fetch"),
           ("action_loader", "async_status"), ("lookup_loader", "env"),
           ("inventory_loader", "ini"), ("inventory_loader", "yaml"), ("inventory_loader", "host_list"),
           ("inventory_loader", "script"), ("inventory_loader", "auto"), ("inventory_loader", "toml"),
           ("cache_loader", "memory"))


@dataclass(frozen=True)
class Played:
    """What one ansible-playbook did: its exit code and its output."""

    returncode: int
    stdout: str
    stderr: str


class HelperGone(Exception):
    """The helper ended or said something that is no answer."""


class PlayForks:
    """The controller's side: one helper at a time, a play at a time."""

    def __init__(self, forking: bool = True) -> None:
        # False: each play a new ansible-playbook (Ansible is not importable here, or its
        # helper did not start).
        self.forking = forking
        self.proc: subprocess.Popen[bytes] | None = None
        self.key: tuple[tuple[str, str], ...] = ()
        self.buffer = b""
        self.sequence = 0  # the last exchange's number (0: the helper's "ready")
        # Its helper ended with this process at the latest (the helper's pipe closes
        # then anyway, but a process that makes many, as a test's, lives on).
        atexit.register(self.close)

    def play(self, argv: list[str], env: Mapping[str, str], *, folder: Path, timeout_s: float | None,
             let_end_s: float, secret: frozenset[str] = frozenset()) -> Played | None:
        """argv (ansible-playbook's arguments, its own path first) run in a fork of the
        helper with env, its output kept in files in `folder` (a private directory) while
        it runs; None when it did not end within timeout_s (then killed with all it
        started). `secret`: the variables of env that are sent with the play only, never
        the helper's own. Interrupted here (Ctrl-C), the play is let end for let_end_s,
        then killed."""
        own = {k: v for k, v in env.items() if k not in secret}
        key = tuple(sorted(own.items())) + (("", _cwd()),)
        if self.forking and (self.proc is None or self.proc.poll() is not None or key != self.key):
            self.close()
            try:
                self._start(own, key)
            except (TimeoutError, HelperGone):
                self.close()
                self.forking = False
        if not self.forking:
            return _process(argv, env, timeout_s, let_end_s)
        out, err = folder / "play.out", folder / "play.err"
        # Numbered: the answers of an exchange that an interrupt cut short are known as
        # such when they come, and skipped.
        self.sequence += 1
        number = self.sequence
        try:
            self._send({"id": number, "argv": argv, "env": dict(env), "stdout": str(out), "stderr": str(err)})
        except HelperGone:  # it ended since the last play: this one as a process of its own
            self.close()
            return _process(argv, env, timeout_s, let_end_s)
        except BaseException:  # interrupted as it was sent: the helper may hold half a request
            self.close()
            raise
        pid: int | None = None
        try:
            pid = self._answer("pid", number, READY_TIMEOUT_S)
            code = self._answer("rc", number, timeout_s)
        except (TimeoutError, HelperGone):
            if pid is None:  # the helper does not answer: another one for the next play
                self.close()
            else:
                kill_play(pid)
            return None
        except BaseException:
            # Interrupted: let the play end (its session did not get the signal), then no longer.
            ends = time.monotonic() + let_end_s
            try:
                if pid is None:
                    pid = self._answer("pid", number, max(0.0, ends - time.monotonic()))
                self._answer("rc", number, max(0.0, ends - time.monotonic()))
            except BaseException:
                if pid is not None:
                    kill_play(pid)
                self.close()
            raise
        played = Played(code, _read(out), _read(err))
        for path in (out, err):
            path.unlink(missing_ok=True)
        return played

    def close(self) -> None:
        """The helper told to end (its pipe closed), and waited for."""
        proc, self.proc, self.buffer = self.proc, None, b""
        if proc is None:
            return
        with contextlib.suppress(OSError):
            assert proc.stdin is not None
            proc.stdin.close()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()

    def _start(self, env: dict[str, str], key: tuple[tuple[str, str], ...]) -> None:
        # Its own session: a Ctrl-C on the controller's terminal reaches neither it nor its plays.
        self.proc = subprocess.Popen([sys.executable, "-m", "dbarena.fleet.playforks"], env=env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     start_new_session=True)
        self.key = key
        self.sequence = 0
        self._answer("ready", 0, READY_TIMEOUT_S)

    def _send(self, message: Mapping[str, object]) -> None:
        assert self.proc is not None and self.proc.stdin is not None
        try:
            self.proc.stdin.write(json.dumps(message).encode() + b"\n")
            self.proc.stdin.flush()
        except OSError as e:
            raise HelperGone(str(e)) from None

    def _answer(self, field: str, number: int, timeout_s: float | None) -> int:
        """`field` of the next answer to exchange `number`, waited for up to timeout_s
        (TimeoutError); the helper gone or saying what is no answer: HelperGone."""
        assert self.proc is not None and self.proc.stdout is not None
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        fd = self.proc.stdout.fileno()
        with selectors.DefaultSelector() as waiting:
            waiting.register(fd, selectors.EVENT_READ)
            while True:
                while b"\n" not in self.buffer:
                    left = None if deadline is None else deadline - time.monotonic()
                    if left is not None and left <= 0:
                        raise TimeoutError(field)
                    if not waiting.select(left):
                        continue
                    chunk = os.read(fd, 65536)
                    if not chunk:
                        raise HelperGone("ended")
                    self.buffer += chunk
                line, self.buffer = self.buffer.split(b"\n", 1)
                try:
                    said = json.loads(line)
                    if said["id"] != number:
                        continue  # an earlier exchange's, cut short
                    value = said[field]
                except (ValueError, KeyError, TypeError):
                    raise HelperGone(line.decode(errors="replace")[:200]) from None
                if not isinstance(value, int) or isinstance(value, bool):
                    raise HelperGone(line.decode(errors="replace")[:200])
                return value


def for_playbook(playbook: str) -> PlayForks:
    """The plays of `playbook` (ansible-playbook's path): forks of a helper where it is
    installed beside this Python and the Ansible it runs is importable here, else each
    a new ansible-playbook."""
    import importlib.util

    beside = Path(playbook).parent == Path(sys.executable).parent
    return PlayForks(forking=beside and importlib.util.find_spec("ansible") is not None)


def _process(argv: list[str], env: Mapping[str, str], timeout_s: float | None, let_end_s: float) -> Played | None:
    """A play as a new ansible-playbook, in a session of its own: PlayForks.play's way
    where no helper can be."""
    proc = subprocess.Popen(argv, env=dict(env), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        stdout, stderr = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        kill_play(proc.pid)
        proc.communicate()
        return None
    except BaseException:
        try:
            proc.communicate(timeout=let_end_s)
        except BaseException:
            kill_play(proc.pid)
            proc.communicate()
        raise
    return Played(proc.returncode, stdout, stderr)


def kill_play(pid: int) -> None:
    """A play's process killed with everything it started: its session (pid leads it)
    and its descendants, which are not all in it (Ansible's workers each make a session
    of their own, and their ssh clients or local commands are in those). Each is stopped
    as it is found, so that none starts another meanwhile, then all are killed."""
    import psutil

    found: dict[int, psutil.Process] = {}
    with contextlib.suppress(psutil.Error):
        found[pid] = psutil.Process(pid)
    new = list(found.values())
    while new:
        for process in new:
            with contextlib.suppress(psutil.Error):
                process.suspend()
        below = []
        for process in new:
            with contextlib.suppress(psutil.Error):
                below += [c for c in process.children(recursive=True) if c.pid not in found]
        found.update((c.pid, c) for c in below)
        new = below
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)
    for process in found.values():
        with contextlib.suppress(psutil.Error):
            process.kill()


def _cwd() -> str:
    """This process's working directory (whose ansible.cfg a helper read), or "" where it
    is gone: a play runs there as ansible-playbook would, not a traceback."""
    try:
        return os.getcwd()
    except OSError:
        return ""


def _read(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except FileNotFoundError:
        return ""


# ------------------------------------------------------------------ the helper


def _warm() -> None:
    """Ansible imported, and the plugins every play loads, with their configuration."""
    from ansible.cli.playbook import PlaybookCLI  # noqa: F401  (what a play runs)
    from ansible.executor import playbook_executor, task_queue_manager  # noqa: F401
    from ansible.plugins import loader

    # The collection loader as each play's CLI sets it up (no --collections-path), and
    # ansible.builtin's routing table read (a 0.15 s YAML): a play finds both made.
    loader.init_plugin_loader([])
    warnings.filterwarnings("ignore", "AnsibleCollectionFinder has already been configured")
    with contextlib.suppress(Exception):
        from ansible.utils.collection_loader._collection_finder import _get_collection_metadata

        _get_collection_metadata("ansible.builtin")
    for name, plugin in PLUGINS:
        with contextlib.suppress(Exception):  # one that this Ansible lacks is loaded by the play, if it needs it
            getattr(loader, name).get(plugin, class_only=True)


def _play(request: Mapping[str, object], out: IO[str]) -> None:
    """In the fork: ansible-playbook's main with the request's arguments; never returns."""
    code = 250
    try:
        os.setsid()
        argv, env = request["argv"], request["env"]
        assert isinstance(argv, list) and isinstance(env, dict)
        os.environ.clear()
        os.environ.update({str(k): str(v) for k, v in env.items()})
        for fd, path in ((1, request["stdout"]), (2, request["stderr"])):
            opened = os.open(str(path), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            os.dup2(opened, fd)
            os.close(opened)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
        out.close()
        from ansible.cli.playbook import main

        sys.argv = [str(a) for a in argv]
        try:
            main(sys.argv)
            code = 0
        except SystemExit as done:
            code = done.code if isinstance(done.code, int) else 1
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)


def serve() -> int:
    """The helper: a JSON request a line on stdin, its answers a line each on stdout."""
    out = os.fdopen(os.dup(1), "w")
    # What Ansible or a plugin prints while loading goes nowhere: stdout is the answers' pipe.
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    os.close(null)
    try:
        _warm()
    except Exception as e:  # noqa: BLE001  (said on the pipe: the controller starts ansible-playbook instead)
        print(json.dumps({"id": 0, "error": str(e)[:200]}), file=out, flush=True)
        return 1
    print(json.dumps({"id": 0, "ready": 0}), file=out, flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            _play(request, out)
        print(json.dumps({"id": request["id"], "pid": pid}), file=out, flush=True)
        _, status = os.waitpid(pid, 0)
        print(json.dumps({"id": request["id"], "rc": os.waitstatus_to_exitcode(status)}), file=out, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(serve())
