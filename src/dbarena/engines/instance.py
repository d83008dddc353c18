"""What every throwaway database instance needs, whatever the engine: a private
directory the server's unprivileged user can reach, a free loopback port, private
files for client passwords, and a teardown that a second Ctrl-C cannot interrupt."""

from __future__ import annotations

import contextlib
import os
import pwd
import secrets
import shutil
import signal
import socket
import stat
import subprocess
import tempfile
from pathlib import Path
from typing import Callable, Iterator

from dbarena import execute
from dbarena import shield
from dbarena.lifecycle import state
from dbarena.errors import EnvironmentProblem
from dbarena.interfaces import Executor


# A killed server closes its files (its sockets, the pipe its backends watch) before the
# kernel makes its exit waitable by its parent: the point's tool can see its connections
# end, fail and be reaped first, and on a loaded machine the server still looked alive
# when the failure was explained (seen in make test: "terminating connection due to
# unexpected postmaster exit", with no word of the server). A failed point waits this
# long for the server's exit before saying it runs.
SETTLE_S = 2.0


def exit_status(process: subprocess.Popen[bytes] | None, settle_s: float = SETTLE_S) -> int | None:
    """A throwaway server's exit status, once it has exited or does within `settle_s`;
    None while it runs (or where there is no process: a target of the user's)."""
    if process is None:
        return None
    try:
        return process.wait(timeout=settle_s)
    except subprocess.TimeoutExpired:
        return None


def unprivileged_user(preferred: str) -> str | None:
    """Database servers refuse to run as root: as root, run them as `preferred`
    (e.g. 'postgres', 'mysql') or 'nobody'. None when we are not root."""
    if os.geteuid() != 0:
        return None
    for name in (preferred, "nobody"):
        with contextlib.suppress(KeyError):
            pwd.getpwnam(name)
            return name
    raise EnvironmentProblem(f"running as root, but there is no {preferred!r} or 'nobody' user to run the server as")


def give_to(user: str | None, *paths: Path) -> None:
    if user is None:
        return
    pw = pwd.getpwnam(user)
    for path in paths:
        os.chown(path, pw.pw_uid, pw.pw_gid)


def check_reachable(path: Path, user: str | None) -> None:
    """Every parent of path must be searchable by user, or the server fails obscurely."""
    if user is None:
        return
    for parent in path.parents:
        mode = parent.stat().st_mode
        if not mode & stat.S_IXOTH:
            raise EnvironmentProblem(
                f"the temporary directory {path.parent} is not reachable by user {user!r} "
                f"({parent} is mode {stat.filemode(mode)}): set TMPDIR to a directory others can enter, e.g. /tmp"
            )


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]  # (host, port): typeshed types the address as Any
        return port


def private_file(path: Path, text: str) -> Path:
    """A file only its owner can read (passwords for client tools)."""
    path.touch(mode=0o600)
    path.chmod(0o600)
    path.write_text(text)
    return path


def stop_server(proc: subprocess.Popen[bytes], *, first_signal: int, grace_s: float = 60) -> int | None:
    """Ask the server to shut down with first_signal; if it hangs, SIGKILL its whole
    process group (it was spawned as a session leader, so that holds its children) and
    remove the shared memory segments it held (a killed PostgreSQL leaves them in RAM).
    Its exit status: -9 when it had to be killed."""
    segments = state.group_segments(proc.pid) if proc.poll() is None else set()
    status: int | None = proc.returncode
    if proc.poll() is None:
        status = execute.stop(proc, grace_s=grace_s, first_signal=first_signal)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    state.remove_segments(segments)
    return status


def new_top(prefix: str, engine: str, parent: Path | None = None,
            stop_signal: int = signal.SIGTERM) -> tuple[Path, state.Record]:
    """The instance's private directory (in `parent`, e.g. a RAM disk, else the
    temporary directory), recorded in the state directory before it is made, so that
    it is removed even if dbarena is killed at any moment (state.py). The name is
    chosen first (one that does not exist), then recorded, then made: mkdtemp would
    make it before the record, and a kill in between would leave it unknown."""
    base = parent if parent is not None else Path(tempfile.gettempdir())
    for _ in range(100):
        top = base / f"{prefix}{secrets.token_hex(5)}"
        if top.exists():
            continue
        record = state.instance(engine, top, stop_signal)
        try:
            top.mkdir(mode=0o700)
        except FileExistsError:
            record.remove()  # made by someone else since: never ours to remove
            continue
        except BaseException:
            record.remove()  # nothing made, nothing to record
            raise
        state.mark(top)  # dbarena's: reaping removes it (until marked, only while it is empty)
        return top, record
    raise EnvironmentProblem(f"cannot make a new directory in {base}: every name tried exists")


@contextlib.contextmanager
def initialising(record: state.Record) -> Iterator[Callable[[int], None]]:
    """An on_start for the run of initdb or mariadb-install-db: the process recorded
    while it runs, so that reaping a killed dbarena stops it (and its children) before
    it removes the directory they write in; forgotten once it has ended. The run is
    a session of its own (executor.run's `session`): initdb's standalone postgres makes
    dynamic shared memory as a server does, and a SIGKILL to dbarena's process group
    (`kill -9 -PGID`) that took it too would leave that in RAM with nobody knowing its
    name; alone, it is stopped by whoever reaps the instance, who reads what it maps
    first (state.stop_initialisation)."""
    def started(pid: int) -> None:
        record.update(**state.process_fields("init_pid", pid))

    try:
        yield started
    finally:
        if record.data.get("init_pid") is not None:
            record.update(init_pid=None, init_start=None, init_exe=None, init_cmdline=None)


def release(proc: subprocess.Popen[bytes] | None, top: Path, record: state.Record, *, keep: bool,
            first_signal: int, grace_s: float = 60) -> None:
    """The end of a throwaway instance: left running for --keep (only if it got as far
    as running), otherwise stopped and its directory removed, shielded from Ctrl-C."""
    if keep and proc is not None and proc.poll() is None:
        record.disown()  # `dbarena cleanup` lists it; nobody reaps it as an orphan
        return  # the caller prints the target's keep_note()
    with shield.shielded():
        if proc is not None:
            stop_server(proc, first_signal=first_signal, grace_s=grace_s)
        state.remove_segments({Path(p) for p in record.data.get("shm", ())})
        shutil.rmtree(top, ignore_errors=True)
        record.remove()


# Restore between rounds (study B): the stopped data directory copied aside once the
# dataset is prepared, and put back before a point. cp rather than shutil: --reflink
# shares the blocks where the file system can (btrfs, XFS), and -a keeps the server
# user's ownership and the 0700 mode. The copy sits beside the data directory, in the
# instance's own directory, so it goes wherever the instance goes (and with it).


def _copy(executor: Executor, source: Path, destination: Path) -> None:
    done = executor.run(["cp", "-a", "--reflink=auto", str(source), str(destination)], timeout=24 * 3600)
    if done.returncode != 0:
        said = (done.stderr or done.stdout).strip().splitlines() or ["no output"]
        raise EnvironmentProblem(f"copying {source}: {said[-1][-300:]}")  # one line: cp may say one per file


def stopped_cleanly(proc: subprocess.Popen[bytes], *, first_signal: int, grace_s: float, what: str) -> None:
    """stop_server, and an error if the server had to be killed: a copy of its data
    directory would then be a crash image that every restore recovers from."""
    if stop_server(proc, first_signal=first_signal, grace_s=grace_s) == -signal.SIGKILL:
        raise EnvironmentProblem(f"{what} did not shut down within {grace_s:.0f} s and was killed: its data "
                                 "directory is not saved as it would need crash recovery")


def restarted(stop: Callable[[], object], between: Callable[[], None], start: Callable[[], None]) -> None:
    """Stop a server, do `between` to its data directory, start it again; started
    again also when `between` fails (a failed copy must not leave every later point
    without a server), the failure then raised."""
    stop()
    try:
        between()
    except BaseException:
        with contextlib.suppress(Exception):
            start()
        raise
    start()


class SavedData:
    """snapshot_data / restore_data of a throwaway target (the Target protocol's), for
    a target that has a data directory, an executor and a _restart of its own (how its
    server stops and starts)."""

    data_dir: Path | None
    executor: Executor

    def _restart(self, between: Callable[[], None], *, clean: bool) -> None:
        raise NotImplementedError

    def snapshot_data(self) -> None:
        """The data directory as prepared, copied aside while the server is stopped."""
        assert self.data_dir is not None
        data = self.data_dir
        self._restart(lambda: save_data(self.executor, data), clean=True)

    def restore_data(self) -> None:
        """The data directory put back as it was prepared (snapshot_data)."""
        assert self.data_dir is not None
        data = self.data_dir
        self._restart(lambda: put_back_data(self.executor, data), clean=False)


def save_data(executor: Executor, data: Path) -> None:
    """A stopped server's data directory, copied aside."""
    snapshot = data.parent / "snapshot"
    shutil.rmtree(snapshot, ignore_errors=True)
    _copy(executor, data, snapshot)


def put_back_data(executor: Executor, data: Path) -> None:
    """A stopped server's data directory, as save_data copied it."""
    snapshot = data.parent / "snapshot"
    if not snapshot.is_dir():
        raise EnvironmentProblem("no saved data directory to restore")
    shutil.rmtree(data)
    _copy(executor, snapshot, data)


def log_reason(log_path: Path | None, markers: tuple[str, ...]) -> str:
    """The most telling line of a server log: the last line holding one of markers,
    else the last line."""
    if log_path is None or not log_path.exists():
        return "no server log"
    lines = [l.strip() for l in log_path.read_text(errors="replace").splitlines() if l.strip()]
    for i in range(len(lines) - 1, -1, -1):
        if any(m in lines[i] for m in markers):
            return lines[i]
    return lines[-1] if lines else "empty server log"
