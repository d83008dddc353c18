"""The one place that starts subprocesses.

Everything dbarena runs (initdb, postgres, pgbench ...) goes through an Executor:
`run` (wait for it, capture its output verbatim) or `spawn` (a long-running server).
Both can drop privileges to another user, because PostgreSQL refuses to run as root.
LocalExecutor runs them on this machine; tests drive the sweep with a fake one, and a
later executor can run a study elsewhere, without the engines or the sweep changing.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import re
import signal
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, AnyStr, Callable, Mapping, Sequence, TypedDict

from dbarena.errors import ToolMissing

if TYPE_CHECKING:
    from dbarena.interfaces import Executor

LineCallback = Callable[[str], None]


@dataclass(frozen=True)
class Completed:
    argv: tuple[str, ...]
    returncode: int | None  # None when killed on timeout
    stdout: str
    stderr: str
    elapsed_s: float
    timed_out: bool = False
    # The child's CPU time (user + system, all its threads and the children it waited
    # for), read as it exited: what the tool itself cost the machine. None where it could
    # not be read (killed, or gone before).
    cpu_s: float | None = None


class _AsUser(TypedDict, total=False):
    """Popen's keyword arguments for the user a child runs as."""

    user: int
    group: int
    extra_groups: list[int]


def _as_user(user: str | None) -> _AsUser:
    """Popen keyword arguments that run the child as `user` (only when we are root)."""
    if user is None or os.geteuid() != 0:
        return {}
    pw = pwd.getpwnam(user)
    return {"user": pw.pw_uid, "group": pw.pw_gid, "extra_groups": []}


def _pump(stream: IO[bytes], sink: list[str], callback: LineCallback | None) -> None:
    # Bytes in, decoded line by line without newline translation, so the stored
    # output is the tool's output byte for byte (for UTF-8 text).
    for raw in iter(stream.readline, b""):
        line = raw.decode("utf-8", errors="replace")
        sink.append(line)
        if callback is not None:
            callback(line)
    stream.close()


def _feed(stream: IO[bytes], data: bytes) -> None:
    # A child that exits (or closes its input) before reading it all is not an error.
    try:
        stream.write(data)
    except (BrokenPipeError, OSError):
        pass
    finally:
        with contextlib.suppress(BrokenPipeError, OSError):
            stream.close()


def run(
    argv: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    timeout: float | None = None,
    user: str | None = None,
    cwd: str | Path | None = None,
    on_stdout_line: LineCallback | None = None,
    on_stderr_line: LineCallback | None = None,
    on_start: Callable[[int], None] | None = None,
    cpus: Sequence[int] | None = None,
    stdin: str | bytes | None = None,
    session: bool = False,
) -> Completed:
    """Run argv to completion and capture both streams; on `cpus` only, when given
    (the CPU affinity its children inherit); in `cwd`, when given; with `stdin` (str
    as UTF-8) on its standard input, else /dev/null; with `session`, as the leader of a
    session of its own, which a signal to dbarena's process group does not reach (a
    database's initialisation, whose children a SIGKILL would leave in RAM: see
    engines/instance.py initialising).

    The child is always gone when this returns or raises: on timeout, Ctrl-C or any
    exception it is terminated, then killed.
    """
    argv = tuple(str(a) for a in argv)
    started = time.monotonic()
    try:
        proc = subprocess.Popen(
            pinned(argv, cpus),
            stdin=subprocess.DEVNULL if stdin is None else subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            cwd=cwd,
            start_new_session=session,
            **_as_user(user),
        )
    except FileNotFoundError as exc:
        # (A missing cwd is an OSError of its own, not this: it names the directory.)
        if cwd is not None and exc.filename is not None and str(exc.filename) == str(cwd):
            raise
        raise ToolMissing(f"{argv[0]} not found") from exc
    if on_start is not None:
        on_start(proc.pid)  # e.g. to sample the child's CPU use
    out: list[str] = []
    err: list[str] = []
    pumps = [
        threading.Thread(target=_pump, args=(proc.stdout, out, on_stdout_line), daemon=True),
        threading.Thread(target=_pump, args=(proc.stderr, err, on_stderr_line), daemon=True),
    ]
    if stdin is not None:
        # Fed from a thread of its own, so that a child that writes much before it
        # reads (or never reads) cannot block us with a full pipe.
        data = stdin.encode("utf-8") if isinstance(stdin, str) else bytes(stdin)
        pumps.append(threading.Thread(target=_feed, args=(proc.stdin, data), daemon=True))
    for t in pumps:
        t.start()
    timed_out = False
    cpu_s: float | None = None
    try:
        try:
            cpu_s = _exited(proc, timeout)
            proc.wait()
        except subprocess.TimeoutExpired:
            timed_out = True
            stop(proc, grace_s=5)
    finally:
        if proc.poll() is None:
            stop(proc, grace_s=5)
        for t in pumps:
            t.join(timeout=5)
    return Completed(
        argv=argv,
        returncode=None if timed_out else proc.returncode,
        stdout="".join(out),
        stderr="".join(err),
        elapsed_s=time.monotonic() - started,
        timed_out=timed_out,
        cpu_s=cpu_s,
    )


def _exited(proc: subprocess.Popen[bytes], timeout: float | None) -> float | None:
    """Wait until the child exits, not reaping it, and its CPU time then: a zombie
    still holds its own and its threads' times, which are gone once it is reaped
    (Popen.wait, after this). TimeoutExpired past `timeout`. The wait blocks in a
    thread of its own (waitid cannot time out, and polling would wake this process
    tens of times a second while the benchmark runs)."""
    seen: list[float | None] = []
    done = threading.Event()

    def wait() -> None:
        try:
            os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT)
            seen.append(_cpu_of(proc.pid))
        except ChildProcessError:  # reaped elsewhere (a PID 1 that reaps everything)
            seen.append(None)
        finally:
            done.set()

    threading.Thread(target=wait, daemon=True, name="dbarena-exit").start()
    if not done.wait(timeout):
        raise subprocess.TimeoutExpired(proc.args, timeout or 0)
    return seen[0] if seen else None


def _cpu_of(pid: int) -> float | None:
    """A process's CPU time, its threads' and the children it waited for included."""
    import psutil  # (here: every command imports this module, few run a tool)

    try:
        times = psutil.Process(pid).cpu_times()
    except psutil.Error:
        return None
    return round(float(times.user + times.system + times.children_user + times.children_system), 3)


def pinned(argv: Sequence[str], cpus: Sequence[int] | None) -> tuple[str, ...]:
    """argv run under `taskset -c CPUS` (which execs it: the same process, the same
    pid), or argv itself. taskset rather than a preexec_fn: this process has threads,
    and Python's preexec_fn is not safe with threads."""
    if not cpus:
        return tuple(argv)
    return ("taskset", "-c", ",".join(str(c) for c in sorted(cpus)), *argv)


def spawn(
    argv: Sequence[str], *, log_path: Path, env: Mapping[str, str] | None = None, user: str | None = None,
    cpus: Sequence[int] | None = None,
) -> subprocess.Popen[bytes]:
    """Start a server in the background, its output appended to log_path.

    It gets a session of its own so that a Ctrl-C at the terminal reaches dbarena
    only; dbarena then shuts the server down in order.
    """
    argv = tuple(str(a) for a in argv)
    with open(log_path, "ab") as log:
        try:
            return subprocess.Popen(
                pinned(argv, cpus),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,
                **_as_user(user),
            )
        except FileNotFoundError as exc:
            raise ToolMissing(f"{argv[0]} not found") from exc


def stop(proc: subprocess.Popen[AnyStr], *, grace_s: float = 10, first_signal: int = signal.SIGTERM) -> int | None:
    """Signal proc, wait up to grace_s, then SIGKILL. Returns its exit status."""
    if proc.poll() is not None:
        return proc.returncode
    try:
        proc.send_signal(first_signal)
        return proc.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        return proc.wait()
    except ProcessLookupError:
        return proc.wait()


def version_line(binary: str | Path, executor: Executor | None = None) -> str:
    """First line of `binary --version`, stripped (e.g. 'pgbench (PostgreSQL) 15.18')."""
    done = (executor or LOCAL).run([str(binary), "--version"], timeout=30)
    text = (done.stdout or done.stderr).strip()
    if done.returncode != 0 or not text:
        raise ToolMissing(f"{binary} --version failed: {text or 'no output'}")
    return text.splitlines()[0]


# The client libraries a tool links that decide how it talks to a server (its wire
# protocol implementation): what provenance names beside the tool.
CLIENT_LIBRARIES = ("libpq", "libmysqlclient", "libmariadb")


def linked_libraries(binary: str | Path, executor: Executor | None = None) -> dict[str, str]:
    """The client libraries `binary` links, as the dynamic linker resolves them:
    {'libpq': 'libpq.so.5.15 (libpq5 15.18-0+deb12u1)'}; the Debian package's version
    where dpkg knows the file. Empty when ldd cannot tell (a static binary, no ldd):
    provenance is worth having, never worth a failed run."""
    run = (executor or LOCAL).run
    found: dict[str, str] = {}
    try:
        done = run(["ldd", str(binary)], timeout=30)
        for line in (done.stdout or "").splitlines() if done.returncode == 0 else ():
            m = re.match(r"^\s*(?P<name>(?P<lib>[\w+-]+)\.so[.\d]*)\s+=>\s+(?P<path>/\S+)", line)
            if m is None or m["lib"] not in CLIENT_LIBRARIES:
                continue
            real = run(["readlink", "-f", m["path"]], timeout=30)
            path = (real.stdout or "").strip() if real.returncode == 0 else m["path"]
            found[m["lib"]] = Path(path).name
            owner = run(["dpkg-query", "-S", path], timeout=30)
            package = (owner.stdout or "").split(":", 1)[0].strip() if owner.returncode == 0 else ""
            if package:
                version = run(["dpkg-query", "-W", "-f", "${Version}", package], timeout=30)
                if version.returncode == 0 and version.stdout.strip():
                    found[m["lib"]] += f" ({package} {version.stdout.strip()})"
    except Exception:  # noqa: BLE001 - no ldd or dpkg, a timeout: what was found is kept
        pass
    return found


class LocalExecutor:
    """Runs subprocesses on this machine (the interfaces.Executor of a normal run)."""

    # The module's functions are the implementation; one signature each, not two.
    run = staticmethod(run)
    spawn = staticmethod(spawn)

LOCAL = LocalExecutor()
