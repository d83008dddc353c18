"""What a dbarena process has started, written down where a later one can find it.

Every throwaway instance, every stored run that is in progress and the kernel's SMT
switch while a study has it changed (smt.py) have a record (a small JSON file) in
the state directory: its owner (pid and the kernel's start time of that pid, so a
recycled pid is not mistaken for the owner), the instance's directory and server
process group, the store and run, the switch's original state. Normal teardown removes the
record. When the owner dies without tearing down (SIGKILL, the OOM killer, a lost
SSH session), two things find the record:

- the owner's watchdog (watchdog.py), a process of its own session that waits for
  the owner to die and reaps within seconds (an owner that exits by itself collects
  it: _Watchdog.close);
- failing that (the watchdog was killed too), the next dbarena command, whatever it
  is (`reap_dead` runs before every command), and `dbarena cleanup`.

Reaping stops the server's process group, removes the instance's directory, sets SMT
back as it was, marks the run `interrupted` with the reason `killed` (so `run
--resume` continues it), and, for a run on an existing server (--target), says which
tables it may have left there and the command that drops them: dbarena never drops
a user's tables on its own.

What a record names is acted on as root, so a record proves what it names before
anything is done: records are read only from a directory no other user can write to
(`untrusted`), a process is stopped only while the one running with its pid is the one
recorded (its start time, executable and command line: `recorded_process`), a directory
removed only if dbarena made it (`foreign`), and the SMT switch written only if it is
the kernel's own (cleanup.py). Anything else is said in one line and left alone.

Why a watchdog rather than the kernel's parent-death signal (prctl PR_SET_PDEATHSIG):
that signal follows the thread that forked, is cleared when the server switches to
its unprivileged user, reaches only the one process (not the postmaster's children,
not the directories, not the store), and cannot tell the next command what happened.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import secrets
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

from dbarena.errors import EnvironmentProblem, Interrupted

ENV = "DBARENA_STATE_DIR"
STOP_GRACE_S = 5.0  # a fast shutdown first; then SIGKILL of the whole process group
EXEC_WAIT_S = 5.0  # what process_fields waits at most for a new program's command line
# What a directory dbarena makes and removes on its own is named (tempfile's prefix)
# and holds: reaping removes nothing else, whatever a state record names (a record
# naming a home directory or /etc must not make the next command delete it).
DIR_PREFIX = "dbarena-"
MARKER = ".dbarena-made"
SHM = Path("/dev/shm")
_WRITABLE_BY_OTHERS = stat.S_IWGRP | stat.S_IWOTH
# The fields each kind of record must have, and what they are: reaping reads them.
_FIELDS: dict[str, dict[str, type]] = {"instance": {"engine": str, "top": str}, "scratch": {"path": str},
                                       "smt": {"control": str, "original": str}, "run": {"store": str, "run_id": int}}


def state_dir() -> Path:
    """$DBARENA_STATE_DIR, else /var/lib/dbarena as root, else ~/.local/state/dbarena."""
    if os.environ.get(ENV):
        return Path(os.environ[ENV])
    if os.geteuid() == 0:
        return Path("/var/lib/dbarena")
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "dbarena"


def _stat(pid: int) -> list[str] | None:
    """The fields of /proc/PID/stat after the command name (the state first), None if
    the process is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses: split after its last ')'.
    return stat.rsplit(")", 1)[1].split()


def start_time(pid: int) -> int | None:
    """The kernel's start time of a process (clock ticks since boot), None if it is gone."""
    fields = _stat(pid)
    return int(fields[19]) if fields is not None else None


def alive(pid: int | None, started: int | None) -> bool:
    """Whether the process `pid` that started at `started` still runs. A zombie does not:
    it has ended, and only its exit status waits for a parent that may never collect it
    (a container's PID 1 that does not reap keeps a killed dbarena a zombie for good)."""
    fields = _stat(pid) if pid is not None else None
    return fields is not None and fields[0] != "Z" and int(fields[19]) == started


def owner_alive(owner: dict[str, Any]) -> bool:
    """Whether the dbarena process a run records as its owner (its options' `owner`:
    pid, kernel start time, host name) runs now, on this machine. One on another
    machine cannot be told from here: False."""
    pid, start = owner.get("pid"), owner.get("start")
    return (owner.get("host") == socket.gethostname() and isinstance(pid, int) and not isinstance(pid, bool)
            and alive(pid, start if isinstance(start, int) else None))


def _program(pid: int) -> tuple[str | None, list[str] | None]:
    """A process's executable (None where it cannot be read: another user's, as a
    user) and command line (None: gone)."""
    import psutil

    try:
        process = psutil.Process(pid)
        cmdline = process.cmdline()
    except psutil.Error:
        return None, None
    try:
        exe: str | None = process.exe() or None
    except psutil.Error:
        exe = None
    return exe, cmdline


def _prefix(pid_key: str) -> str:
    return pid_key.rsplit("_", 1)[0]  # tool_pid -> tool, server_pgid -> server


def process_fields(pid_key: str, pid: int) -> dict[str, Any]:
    """What a record keeps of a process dbarena started, to stop it if dbarena is
    killed: its pid (as `pid_key`: tool_pid, init_pid, server_pgid) and what tells it
    from any process that gets the pid later (the kernel's start time, its executable
    and command line: tool_start, tool_exe, tool_cmdline). Taken as it starts: the
    program it runs then, or the one a wrapper (taskset: execute.pinned) then becomes."""
    prefix = _prefix(pid_key)
    exe, cmdline = _program(pid)
    # Popen returns as soon as the child's exec has begun (its close-on-exec pipe shut);
    # the kernel sets up the new program's arguments a moment later, and until then the
    # command line reads as empty: more often than not right after Popen, on an idle
    # machine too. Recorded empty, it would prove nothing, and a reaper would leave the
    # process running ("the record does not say which program it runs"): read again
    # until it is there, or the process is gone (None), within a bound that no exec
    # comes near (a process that empties its own command line is recorded as it reads).
    deadline = time.monotonic() + EXEC_WAIT_S
    while cmdline == [] and time.monotonic() < deadline:
        time.sleep(0.001)
        exe, cmdline = _program(pid)
    return {pid_key: pid, f"{prefix}_start": start_time(pid), f"{prefix}_exe": exe, f"{prefix}_cmdline": cmdline}


def recorded_process(data: dict[str, Any], pid_key: str) -> tuple[int | None, str | None]:
    """The process a record names (process_fields), if the one running with that pid now
    is it: (its pid, None). (None, None): no process has that pid now. (None, why not):
    another process has it, or the record cannot tell (a pid that names no single
    process, a record written before dbarena kept the program): not to be touched.

    The start time tells a recycled pid; the command line and executable, a record
    edited to name another process of the same age. A process may have become the end
    of its recorded command line since (a wrapper, taskset, exec'd it)."""
    pid = data.get(pid_key)
    if pid is None:
        return None, None
    if type(pid) is not int or pid <= 1 or pid == os.getpid():
        return None, f"{pid!r} is not a process of its own (0, 1, -1 and this process are not stopped)"
    now = start_time(pid)
    if now is None:
        return None, None
    prefix = _prefix(pid_key)
    if data.get(f"{prefix}_start") != now:
        return None, "another process has that pid now (it started at another time)"
    recorded, recorded_exe = data.get(f"{prefix}_cmdline"), data.get(f"{prefix}_exe")
    if not (isinstance(recorded, list) and recorded and all(isinstance(a, str) for a in recorded)):
        return None, "the record does not say which program it runs (an older dbarena's record)"
    exe, cmdline = _program(pid)
    if cmdline is None:
        return None, None  # ended in between
    shown = " ".join(cmdline)
    if cmdline == recorded:
        if exe is not None and recorded_exe is not None and exe != recorded_exe:
            return None, f"it runs {exe}, not {recorded_exe} as recorded"
    elif not (0 < len(cmdline) < len(recorded) and recorded[-len(cmdline):] == cmdline):
        return None, f"its command line ({shown[:80]}) is not the one recorded"
    return pid, None


def machine() -> dict[str, str]:
    """This host and this boot: a pid means something only here, and only until reboot."""
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        boot = ""
    return {"hostname": socket.gethostname(), "boot_id": boot}


def _records() -> Path:
    return state_dir() / "records"


def _write(path: Path, record: dict[str, Any]) -> None:
    try:
        path.parent.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        path.parent.mkdir(mode=0o700, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        # This user's alone (0600 whatever the umask): a record another user could edit
        # would not be read (`records`).
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(json.dumps(record, sort_keys=True))
        tmp.replace(path)  # never a half-written record
    except OSError as exc:
        raise EnvironmentProblem(f"cannot write dbarena's state directory {path.parent.parent}: "
                                 f"{exc.strerror or exc}; set {ENV} to a writable directory") from None


@dataclass
class Record:
    """A record this process owns: updated as the instance or run progresses."""

    path: Path
    data: dict[str, Any]  # JSON: the record's fields as written
    left: bool = False  # kept for reaping when its owner's work with it ends (leave())

    def update(self, **fields: Any) -> None:
        self.data.update(fields)
        _write(self.path, self.data)

    def remove(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()

    def disown(self) -> None:
        """Left running on purpose (--keep): no owner to outlive, `dbarena cleanup` lists it."""
        self.update(owner_pid=None, owner_start=None, kept=True)

    def leave(self, **fields: Any) -> None:
        """Kept when its owner's work with it ends, with `fields` (a run's `reason`), for
        whoever reaps it: the watchdog once its owner exits, else the next command (a
        run its owner could not mark in a store that could not be written)."""
        self.left = True
        self.update(**fields)


def _new(kind: str, **fields: Any) -> Record:
    why = untrusted(_records())
    if why is not None:
        # Its records would not be read back (records()): nothing this process starts
        # could be cleaned up after a kill.
        raise EnvironmentProblem(f"dbarena's state directory cannot be trusted: {why}; "
                                 f"set {ENV} to a directory of your own")
    me = os.getpid()
    data: dict[str, Any] = {"kind": kind, "owner_pid": me, "owner_start": start_time(me), **machine(),
                            "created": time.time(), **fields}
    record = Record(path=_records() / f"{kind}-{uuid.uuid4().hex}.json", data=data)
    _write(record.path, data)
    _Watchdog.ensure()
    return record


def instance(engine: str, top: Path, stop_signal: int = signal.SIGTERM) -> Record:
    """A throwaway instance in `top`, recorded before the directory is made (a kill
    between the two must not leave a directory nobody knows of; instance.new_top marks
    it once made) until the caller removes the record after the directory (or disowns
    it: --keep). `top` is marked as dbarena's (mark()) if it exists already. Set
    `init_pid` and `init_start` while its data directory is initialised (initdb,
    mariadb-install-db: reaping stops them and their children before removing the
    directory they write in), `server_pgid` once its server runs. `stop_signal`: what
    asks its server to shut down, as its engine declares it."""
    mark(top)
    return _new("instance", engine=engine, top=str(top), server_pgid=None, stop_signal=int(stop_signal))


def scratch(path: Path) -> Record:
    """A working directory of this process (the fleet controller's wheel and variables),
    removed by reaping if the process is killed before it removes it; marked as
    dbarena's (mark()) if it exists already."""
    mark(path)
    return _new("scratch", path=str(path))


@contextlib.contextmanager
def temporary(prefix: str) -> Iterator[Path]:
    """A private directory in TMPDIR, named `prefix` (DIR_PREFIX...) and 16 random hex
    digits, for the length of the block (a bundle's throwaway store, a merge's copy):
    recorded (scratch()) before it is made, so that a process killed with SIGKILL in the
    block leaves nothing there either: its watchdog, or the next dbarena command, removes
    it once the process is gone (and only if it is dbarena's: foreign()); a live one is
    never touched. Removed here however the block ends.

    A state directory that cannot be written or trusted does not stop the command (a
    `verify` in a CI job with a read-only home reads bundles; it starts nothing that
    would outlive it): the directory is then made without a record, as tempfile would,
    and only a SIGKILL leaves it."""
    if not prefix.startswith(DIR_PREFIX):
        raise ValueError(f"{prefix!r}: a directory reaping may remove is named {DIR_PREFIX}...")
    path = Path(tempfile.gettempdir()).absolute() / f"{prefix}{secrets.token_hex(8)}"
    try:
        record: Record | None = scratch(path)
    except EnvironmentProblem:
        record = None
    try:
        make_dir(path)
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
        # The record goes after the directory, never before (a kill in between leaves a
        # record naming nothing, which reaping forgets).
        if record is not None and not path.exists():
            record.remove()


def make_dir(path: Path) -> None:
    """A private directory dbarena makes and may remove (a point's work directory):
    its name must start with DIR_PREFIX; it is marked at once."""
    path.mkdir(mode=0o700)
    mark(path)


def mark(path: Path) -> None:
    """Mark a directory dbarena just made (mkdtemp's, named DIR_PREFIX...) as one that
    reaping may remove (foreign()); nothing if it does not exist yet (recorded before
    it is made: then reaping removes it only while it is empty)."""
    with contextlib.suppress(FileNotFoundError, NotADirectoryError):
        os.close(os.open(path / MARKER, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600))


def foreign(path: str) -> str | None:
    """Why a directory a state record names is not one dbarena made and may remove (None:
    it is, or it is gone): a relative path or one with '..', a name without DIR_PREFIX,
    a symbolic link or not a directory, another user's, or one holding neither dbarena's
    marker (this user's) nor nothing at all (an empty one is what a kill right after its
    mkdir left). As root, the directory may be another user's: root gives an instance's
    directory to the server's unprivileged user (engines/instance.py), and its marker,
    which stays root's, is what says it is dbarena's."""
    where = Path(path)
    if not where.is_absolute() or ".." in where.parts or not where.name.startswith(DIR_PREFIX):
        return f"not named as dbarena names its directories ({DIR_PREFIX}...)"
    try:
        st = os.lstat(where)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"cannot be examined: {exc.strerror or exc}"
    if stat.S_ISLNK(st.st_mode):
        return "a symbolic link"
    if not stat.S_ISDIR(st.st_mode):
        return "not a directory"
    if st.st_uid != os.geteuid() and os.geteuid() != 0:
        return f"owned by uid {st.st_uid}, not by this user"
    try:
        marker = os.lstat(where / MARKER)
    except FileNotFoundError:
        with contextlib.suppress(OSError):
            if not any(os.scandir(where)):
                return None
        return f"it holds no {MARKER} file"
    except OSError as exc:
        return f"cannot be examined: {exc.strerror or exc}"
    if not stat.S_ISREG(marker.st_mode) or marker.st_uid != os.geteuid():
        return f"its {MARKER} is not a file of this user's"
    return None


def smt(control: str, original: str, online: str | None = None) -> Record:
    """The kernel's SMT switch (smt.py) about to be changed from `original`, with the
    CPUs `online` then: reaping writes both back."""
    return _new("smt", control=control, original=original, online=online)


@contextlib.contextmanager
def run(store: str, run_id: int, target: str | None, leftovers: list[str]) -> Iterator[Record]:
    """A stored run in progress in `store` (an SQLite file's absolute path, or a
    PostgreSQL URL without password). `leftovers`: for a run on an existing server, what
    it may leave there if killed, each with the command that removes it."""
    record = _new("run", store=str(store), run_id=run_id, target=target, leftovers=leftovers)
    try:
        yield record
    finally:
        if not record.left:
            record.remove()


# ------------------------------------------------------------------ reaping


def records(say: Callable[[str], None] | None = None) -> list[tuple[Path, dict[str, Any]]]:
    """The records of the state directory, each (its file, its fields). None at all
    from a directory another user could write to, and none of a file another user
    could have written or may edit: each refusal said (`say`) in one line."""
    out: list[tuple[Path, dict[str, Any]]] = []
    folder = _records()
    if not folder.is_dir():
        return out
    why = untrusted(folder)
    if why is not None:
        if say is not None:
            say(f"left every record in {folder} alone: {why}; set {ENV} to a directory of your own")
        return out
    for path in sorted(folder.glob("*.json")):
        with contextlib.suppress(OSError, ValueError):
            info = os.lstat(path)
            if not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid() or info.st_mode & _WRITABLE_BY_OTHERS:
                if say is not None:
                    say(f"left {path} alone: {_not_private(info, 'a file')}")
                continue
            data = json.loads(path.read_text())
            why = _malformed(data)
            if why is None:
                out.append((path, data))
            elif say is not None:
                say(f"left {path} alone: {why}")
    return out


def _malformed(data: Any) -> str | None:
    """Why a record's JSON is not a record reaping can read (None: it is)."""
    if not isinstance(data, dict):
        return "not a JSON object"
    kind = data.get("kind")
    fields = _FIELDS.get(kind) if isinstance(kind, str) else None
    if fields is None:
        return f"its kind {data.get('kind')!r} is none of dbarena's"
    for name, want in fields.items():
        if type(data.get(name)) is not want:
            return f"its {name} is not {'text' if want is str else 'an integer'}"
    return None


def _not_private(info: os.stat_result, what: str) -> str:
    if stat.S_ISLNK(info.st_mode):
        return "a symbolic link"
    if not stat.S_ISREG(info.st_mode) and what == "a file":
        return "not a regular file"
    if info.st_uid != os.geteuid():
        return f"owned by uid {info.st_uid}, not by this user (uid {os.geteuid()})"
    return f"writable by {'others' if info.st_mode & stat.S_IWOTH else 'its group'}"


def untrusted(folder: Path) -> str | None:
    """Why records in `folder` could be another user's (None: only this user, or root,
    could have put them there). Every existing component of its path, as given and
    where its links lead, is owned by root or this user and not writable by group or
    others, but for an ancestor that is root's and sticky (/tmp: no one else can remove
    or rename what is in it); the folder itself is this user's. The rules of a fleet
    host's working directory (fleet/playbooks/workdir_check.py, which runs alone on a
    host and cannot be imported here)."""
    me = os.geteuid()
    given = Path(os.path.abspath(folder))
    for path in dict.fromkeys((given, given.resolve())):
        for depth in range(len(path.parts)):
            current = Path(*path.parts[:depth + 1])
            try:
                info = os.lstat(current)
            except FileNotFoundError:
                break  # nothing below it yet: no record either
            except OSError as exc:
                return f"{current} cannot be examined: {exc.strerror or exc}"
            final = current == path
            if info.st_uid not in (0, me) or (final and info.st_uid != me):
                return f"{current} is {_not_private(info, 'a directory')}"
            if stat.S_ISLNK(info.st_mode):
                continue  # where it leads is walked too (the second path)
            if not stat.S_ISDIR(info.st_mode):
                return f"{current} is not a directory"
            if info.st_mode & _WRITABLE_BY_OTHERS and (final or not (info.st_uid == 0 and info.st_mode & stat.S_ISVTX)):
                return f"{current} is {_not_private(info, 'a directory')}"
    return None


def ours(data: dict[str, Any]) -> bool:
    """Made on this host since its last boot (a state directory on a shared home must
    not let one host reap another's runs). After a reboot nothing of it runs any more."""
    made_on: str | None = data.get("hostname")
    return made_on == machine()["hostname"]


def orphaned(data: dict[str, Any]) -> bool:
    """Its owner is gone (kept instances have none and are not orphans); records of
    another host are never judged here."""
    if data.get("kept") or not ours(data):
        return False
    if data.get("boot_id") != machine()["boot_id"]:
        return True  # rebooted since: its owner is gone
    return not alive(data.get("owner_pid"), data.get("owner_start"))


def server_of(data: dict[str, Any]) -> tuple[int | None, str | None]:
    """The instance's server process group, if it still runs there: the process
    recorded (recorded_process), whose command line names the instance's directory.
    (None, None): no server runs there; (None, why): what has its pid is left alone.
    (A record of an older dbarena, a --keep instance's, kept no program: its command
    line naming the directory, a checked one of dbarena's, is the proof then.)"""
    pgid = data.get("server_pgid")
    if not pgid:
        return None, None
    if "server_cmdline" in data:
        pgid, why = recorded_process(data, "server_pgid")
        if pgid is None:
            return None, why
    elif type(pgid) is not int or pgid <= 1 or pgid == os.getpid():
        return None, f"{pgid!r} is not a process of its own"
    try:
        cmdline = Path(f"/proc/{pgid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return None, None
    if data["top"] not in cmdline:
        return None, ("its command line does not name the instance's directory" if "server_cmdline" in data
                      else None)  # (an older record's: a recycled pid, as always)
    return pgid, None


def shm_segments(pid: int) -> set[Path]:
    """The POSIX shared memory segments a process maps (/dev/shm/...: PostgreSQL's
    dynamic shared memory, PostgreSQL.<n>). A server killed before it could shut down
    leaves them in RAM for good; whoever kills it removes them."""
    try:
        maps = Path(f"/proc/{pid}/maps").read_text()
    except OSError:
        return set()
    return {Path(line.split(None, 5)[5].removesuffix(" (deleted)")) for line in maps.splitlines()
            if len(line.split(None, 5)) == 6 and line.split(None, 5)[5].startswith("/dev/shm/")}


def group_segments(pgid: int) -> set[Path]:
    """The shared memory segments that the processes of a process group map (a server
    spawned as a session leader: the postmaster and its backends). A postmaster maps
    only its control segment; the statistics' (PostgreSQL 15's, made at start) and those
    made later are mapped by its children alone, and a SIGKILL leaves them in RAM too."""
    found = shm_segments(pgid)
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit() and int(proc.name) != pgid:
            fields = _stat(int(proc.name))
            if fields is not None and fields[2] == str(pgid):  # (the fields after the name: state, ppid, pgrp)
                found |= shm_segments(int(proc.name))
    return found


def remove_segments(segments: set[Path]) -> None:
    """Unlink shared memory segments: only files right in /dev/shm (a state record that
    names another path names no segment)."""
    for segment in segments:
        if segment.parent == SHM and segment.name not in ("", ".", ".."):
            with contextlib.suppress(OSError):
                segment.unlink()


def stop_group(pgid: int, stop_signal: int = signal.SIGTERM) -> None:
    """Stop an orphaned server: its own shutdown first (`stop_signal`, what its engine
    declares: PostgreSQL's fast shutdown is SIGINT to the postmaster), then SIGKILL of
    its whole process group; the shared memory it still held is removed."""
    segments = group_segments(pgid)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pgid, stop_signal)
        deadline = time.monotonic() + STOP_GRACE_S
        while time.monotonic() < deadline and start_time(pgid) is not None:
            time.sleep(0.1)
        os.killpg(pgid, signal.SIGKILL)
    remove_segments(segments)


def _running(pid: int) -> bool:
    """Alive and not a zombie (a zombie writes nothing more)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _naming(data_dir: str) -> list[int]:
    """Processes given `data_dir` as an argument (-D DIR, --datadir=DIR): those that
    initialise or serve it. A process that merely names a file in it is not one."""
    import psutil

    found = []
    for proc in psutil.process_iter(["pid", "cmdline"]):
        argv = proc.info.get("cmdline") or []
        if any(arg == data_dir or arg.endswith("=" + data_dir) for arg in argv):
            found.append(int(proc.info["pid"]))
    return found


def stop_initialisation(top: str, pid: int | None, grace_s: float = STOP_GRACE_S) -> None:
    """SIGKILL an instance's initialisation that outlived its dbarena, and wait until it
    is gone: it would go on writing into the directory reaping is about to remove. That
    is the recorded process (pid and start time) with its descendants (initdb's
    postgres), and whatever was given the instance's data directory: mariadb-install-db
    is a shell script that dies of SIGPIPE once nobody reads its output, and its
    mariadbd --bootstrap, reparented, goes on. Stopped first, so none forks a child
    between the listing and the kill; the shared memory they held is removed. `pid`: the
    initialisation as recorded_process found it (None: not running, or not provably it)."""
    members = set(_naming(str(Path(top) / "data")))
    if pid is not None:
        import psutil

        with contextlib.suppress(psutil.Error):
            members |= {pid, *(child.pid for child in psutil.Process(pid).children(recursive=True))}
    members.discard(os.getpid())
    segments: set[Path] = set()
    for how in (signal.SIGSTOP, signal.SIGKILL):
        for member in members:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(member, how)
        if how == signal.SIGSTOP:
            # What they map once stopped (no new one can come): initdb's postgres, a
            # standalone backend, makes dynamic shared memory as a server does, and
            # SIGKILLed leaves it in RAM for good (seen in tests/e2e/test_kill_anywhere.py).
            segments = set().union(*map(shm_segments, members))
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline and any(_running(p) for p in members):
        time.sleep(0.05)
    remove_segments(segments)


# ------------------------------------------------------------------ the watchdog


def collect_watchdog() -> None:
    """Close and collect this process's watchdog, as an exiting dbarena does (atexit:
    _Watchdog.close), for a process that ends without atexit (a multiprocessing worker
    runs its finalizers instead). Nothing if it started none."""
    _Watchdog.close()


class _Watchdog:
    """One watchdog process per dbarena process, started with its first record.

    Its owner collects it when it exits (close()): a process whose parent is gone is
    handed to PID 1 (or the nearest subreaper), and a container's PID 1 that does not
    reap would keep every watchdog a zombie. Only a killed owner leaves its watchdog to
    PID 1, as it must: the watchdog outlives it to reap."""

    proc: subprocess.Popen[bytes] | None = None
    pid: int | None = None  # of the process that started it (a fork must start its own)
    EXIT_WAIT_S = 10.0  # at exit, how long the owner waits for it (it has little to do then)

    @classmethod
    def ensure(cls) -> None:
        if cls.proc is not None and cls.pid == os.getpid() and cls.proc.poll() is None:
            return
        if cls.pid != os.getpid():
            atexit.register(cls.close)
        # The watchdog waits for EOF on its stdin: the write end is ours alone (not
        # inherited by servers or tools), so EOF means this process is gone, or done.
        cls.proc = subprocess.Popen(
            [sys.executable, "-m", "dbarena.lifecycle.watchdog", str(os.getpid()), str(start_time(os.getpid()))],
            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True, env={**os.environ, ENV: str(state_dir())},
        )
        cls.pid = os.getpid()

    @classmethod
    def close(cls) -> None:
        """At this process's exit: EOF to the watchdog, which reaps what records of ours
        are left (those left on purpose: Record.leave) and exits; it is collected here
        rather than by PID 1. One still busy after EXIT_WAIT_S goes on alone."""
        proc = cls.proc
        if proc is None or cls.pid != os.getpid():
            return
        with contextlib.suppress(OSError):
            if proc.stdin is not None:
                proc.stdin.close()
        # (A Ctrl-C or SIGTERM while exiting must not print a traceback from here.)
        with contextlib.suppress(subprocess.TimeoutExpired, KeyboardInterrupt, Interrupted):
            proc.wait(timeout=cls.EXIT_WAIT_S)
