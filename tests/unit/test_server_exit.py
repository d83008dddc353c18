"""A throwaway server's exit, as a failed point explains it (engines/instance.py
exit_status): a killed process is seen exited, with its status, even when asked the
moment its clients noticed; a running one is not, after the bounded wait."""

from __future__ import annotations

import signal
import subprocess
import time

from dbarena.engines import instance


def test_a_killed_server_is_seen_exited_when_asked_at_once():
    server = subprocess.Popen(["sleep", "60"])
    server.send_signal(signal.SIGKILL)  # asked before the kernel has made the exit waitable
    assert instance.exit_status(server) == -signal.SIGKILL


def test_a_running_server_is_not_after_the_bounded_wait():
    server = subprocess.Popen(["sleep", "60"])
    try:
        began = time.monotonic()
        assert instance.exit_status(server, settle_s=0.2) is None
        assert 0.2 <= time.monotonic() - began < 5
    finally:
        server.kill()
        server.wait()


def test_no_process_is_no_exit():
    assert instance.exit_status(None) is None
