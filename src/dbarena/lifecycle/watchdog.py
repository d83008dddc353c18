"""python -m dbarena.lifecycle.watchdog OWNER_PID OWNER_START: wait for the owner to end, then
reap what it left (cleanup.py). Started by the owner, in a session of its own, so that
neither Ctrl-C at the terminal nor a hang-up of the owner's session reaches it. An owner
that exits by itself closes the pipe first and collects the watchdog (state._Watchdog):
only a killed owner's watchdog is left to PID 1."""

from __future__ import annotations

import signal
import sys

from dbarena.lifecycle import cleanup, state


def main() -> None:
    owner, started = int(sys.argv[1]), int(sys.argv[2])
    for sig in (signal.SIGINT, signal.SIGHUP, signal.SIGTERM):
        signal.signal(sig, signal.SIG_IGN)
    # EOF: the owner exited or was killed; its write end of this pipe closed with it.
    while sys.stdin.buffer.read(4096):
        pass
    for path, data in state.records():
        if data.get("owner_pid") == owner and data.get("owner_start") == started:
            try:
                cleanup.reap(path, data, say=lambda line: None, tell_later=True)
            except Exception:  # the next command reaps what is left
                continue


if __name__ == "__main__":
    main()
