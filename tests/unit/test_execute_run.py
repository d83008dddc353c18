"""execute.run: the child's own CPU time read as it exits (what a tool cost the machine,
bench/overhead's pgbench us/tx through dbarena), and a timeout that still stops it."""

from __future__ import annotations

import sys

from dbarena import execute

# About a fifth of a second of CPU in a thread of its own, then the main thread exits:
# the time of a thread that ended before the process counts too.
BUSY = ("import threading, time\n"
        "def spin():\n"
        "    end = time.process_time() + 0.2\n"
        "    while time.process_time() < end: pass\n"
        "t = threading.Thread(target=spin); t.start(); t.join()\n")


def test_the_childs_cpu_time_is_read_as_it_exits_its_threads_included():
    done = execute.run([sys.executable, "-c", BUSY])
    assert done.returncode == 0, done.stderr
    assert done.cpu_s is not None and 0.2 <= done.cpu_s < 0.2 + done.elapsed_s


def test_a_child_past_its_timeout_is_stopped_with_no_cpu_time_read():
    done = execute.run(["sleep", "30"], timeout=0.3)
    assert done.timed_out and done.returncode is None and done.cpu_s is None
    assert done.elapsed_s < 10
