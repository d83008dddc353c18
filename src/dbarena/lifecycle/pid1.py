"""dbarena as PID 1 (a container's entrypoint, `unshare --pid --fork`): a process whose
parent is gone is handed to PID 1, which must collect its exit status or keep it a
zombie for good. A run makes such orphans: the postmaster's backends when reaping kills
its process group, a `mariadbd --bootstrap` whose script died, what a pgbench script's
`\\shell cmd &` leaves, a killed run's watchdog. So when dbarena finds itself PID 1, it
first forks: the child runs the command as any dbarena would (signals, exit status and
the watchdog as elsewhere), and PID 1 does only what an init does (tini, dumb-init):
collect every child, pass on the signals it is sent, and exit with the command's status.

Why a fork rather than collecting orphans beside the command in one process: Python's
subprocess collects the exit status of each child it started itself (waitpid on its
pid); a SIGCHLD handler that collected any child (waitpid(-1)) would take those
statuses first, and a tool's failure would read as success.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

# Passed on to the command: what `docker stop`, `kill` or an orchestrator sends PID 1.
# The command has a process group of its own, the terminal's foreground one when there
# is a terminal: a Ctrl-C there reaches the command alone, and a signal sent to PID 1 (or
# its group) reaches the command once, from here.
FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2,
             signal.SIGWINCH)
# After the command ends: how long PID 1 waits for a killed command's watchdog to finish
# reaping (stopping a server takes up to 5 s each) before it exits, which kills every
# process left in its namespace.
WATCHDOG_WAIT_S = 120.0


def become_init() -> None:
    """When this process is PID 1: fork, return in the child (the command runs there,
    as PID 2), and in PID 1 collect children until the command has ended, then exit
    with its status (128 + N when killed by signal N). Elsewhere: nothing."""
    if os.getpid() != 1:
        return
    waited = {*FORWARDED, signal.SIGCHLD}
    # Blocked before the fork, so that none is lost in between; the child unblocks them.
    before = signal.pthread_sigmask(signal.SIG_BLOCK, waited)
    command = os.fork()
    if command == 0:
        signal.pthread_sigmask(signal.SIG_SETMASK, before)
        _own_group()
        return
    status = _serve(command, waited)
    _wait_for_watchdogs()
    os._exit(status)


def _serve(command: int, waited: set[signal.Signals]) -> int:
    """Collect children and pass on signals until the command ends; its exit status."""
    while True:
        info = signal.sigwaitinfo(waited)
        if info.si_signo == signal.SIGCHLD:
            status = _collect(command)
            if status is not None:
                return status
        else:
            with contextlib.suppress(ProcessLookupError):
                os.kill(command, info.si_signo)


def _own_group() -> None:
    """The command in a process group of its own, made the terminal's foreground group
    if there is a terminal (as tini does)."""
    os.setpgid(0, 0)
    if not os.isatty(0):
        return
    # A background group that sets the foreground is sent SIGTTOU, which would stop it.
    previous = signal.signal(signal.SIGTTOU, signal.SIG_IGN)
    try:
        with contextlib.suppress(OSError):  # not this session's terminal: nothing to take
            os.tcsetpgrp(0, os.getpgrp())
    finally:
        signal.signal(signal.SIGTTOU, previous)


def _collect(command: int) -> int | None:
    """Every child that has ended (several may end under one SIGCHLD); the command's
    exit status if it is one of them."""
    found = None
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return found
        if pid == 0:
            return found
        if pid == command:
            code = os.waitstatus_to_exitcode(status)
            found = 128 - code if code < 0 else code


def _wait_for_watchdogs() -> None:
    """A command killed (by the OOM killer, say) leaves its watchdog to reap after it:
    PID 1's exit would kill it half-way, so PID 1 collects children until none is a
    watchdog (at most WATCHDOG_WAIT_S). A command that ended by itself collected its
    own watchdog already. Servers kept with --keep do not hold PID 1 here: they end
    with the namespace, as everything in it does."""
    deadline = time.monotonic() + WATCHDOG_WAIT_S
    while _watchdogs() and time.monotonic() < deadline:
        signal.sigtimedwait({signal.SIGCHLD}, 0.5)
        _collect(-1)


def _watchdogs() -> list[int]:
    """Children of this process that run dbarena's watchdog. Read from /proc/self (not
    by comparing parent pids): a /proc not remounted in the new namespace numbers every
    process as the host does, this one included."""
    found = []
    for task in Path("/proc/self/task").iterdir():
        try:
            children = (task / "children").read_text().split()
        except OSError:
            continue
        for child in children:
            try:
                argv = Path(f"/proc/{child}/cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if b"dbarena.lifecycle.watchdog" in argv:
                found.append(int(child))
    return found
