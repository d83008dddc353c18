"""Whole-machine and per-process system metrics, sampled once a second during a point.

Study A ran the load generator on the database host and could not tell which one ran
out of CPU. Each second we record the machine's CPU split (user, system, iowait,
steal, idle), context switches, disk bytes and memory in use, and the CPU used by the
database server's processes and by the load generator, through psutil (which reads
/proc: a few small file reads per second, no extra process). `cpu_split` and
`tree_seconds` are pure; `Sampler` is the thread that reads.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from typing import Callable, TypedDict

from dbarena.lazy import lazy_import
from dbarena.model import SystemSample

# Imported when the sampler first reads: every command imports the runner, and psutil
# would add about 10 ms to each start.
psutil = lazy_import("psutil")

__all__ = ["Sampler", "SystemSample", "cpu_split"]



def cpu_split(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    """Percent of all CPU time in each state between two readings of the machine's CPU
    times (psutil.cpu_times: user, nice, system, idle, iowait, irq, softirq, steal;
    guest time is already counted in user, so it is not added again)."""
    delta = {k: after.get(k, 0) - before.get(k, 0) for k in after if k not in ("guest", "guest_nice")}
    total = sum(delta.values()) or 1
    return {
        "user": 100.0 * (delta.get("user", 0) + delta.get("nice", 0)) / total,
        "system": 100.0 * (delta.get("system", 0) + delta.get("irq", 0) + delta.get("softirq", 0)) / total,
        "iowait": 100.0 * delta.get("iowait", 0) / total,
        "steal": 100.0 * delta.get("steal", 0) / total,
        "idle": 100.0 * delta.get("idle", 0) / total,
    }


def tree_seconds(stats: dict[int, tuple[int, float]], root: int) -> float:
    """CPU seconds of root and all its descendants, given {pid: (ppid, seconds)}.

    By parent, not by session or process group: PostgreSQL's backends call setsid(),
    and a server may fork helpers; mysqld's threads are already in its own time."""
    children: dict[int, list[int]] = {}
    for pid, (ppid, _) in stats.items():
        children.setdefault(ppid, []).append(pid)
    total, todo = 0.0, [root]
    while todo:
        pid = todo.pop()
        if pid in stats:
            total += stats[pid][1]
        todo.extend(children.get(pid, ()))
    return total


def _whole_disks() -> set[str]:
    # psutil counts partitions as disks of their own: summed with their disk they would
    # count twice. /sys/block lists the whole ones.
    try:
        names = os.listdir("/sys/block")
    except OSError:
        return set()
    return {n for n in names if not n.startswith(("loop", "ram", "zram"))}


def all_process_seconds() -> dict[int, tuple[int, float]]:
    """{pid: (parent pid, user + system CPU seconds)} of every process, in one pass."""
    stats = {}
    for proc in psutil.process_iter(["ppid", "cpu_times"]):
        info = proc.info
        times = info.get("cpu_times")
        if times is not None and info.get("ppid") is not None:  # None: it exited or is not ours to read
            stats[proc.pid] = (info["ppid"], times.user + times.system)
    return stats


_TICK = os.sysconf("SC_CLK_TCK")


def server_tree_seconds(root: int) -> float | None:
    """CPU seconds of root and all its descendants, as tree_seconds counts them, read by
    walking down from root (each process's /proc/PID/task/TID/children) rather than
    through every process on the machine: a second's reading of a server with a few
    backends costs a few stat files, not all of /proc (2.6 ms of CPU a second on a
    quiet machine of 64 processes, a quarter of the harness's share of a CPU-bound
    point). None where the kernel has no children files (the caller reads all of
    /proc then)."""
    total, todo, seen = 0.0, [root], set()
    while todo:
        pid = todo.pop()
        if pid in seen:
            continue
        seen.add(pid)
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
            tasks = os.listdir(f"/proc/{pid}/task")
        except (FileNotFoundError, ProcessLookupError, IndexError):
            continue  # exited meanwhile: its time goes with it, as tree_seconds loses it
        # After the command's closing parenthesis: state is field 3, utime 14, stime 15.
        total += (int(fields[11]) + int(fields[12])) / _TICK
        for tid in tasks:
            try:
                with open(f"/proc/{pid}/task/{tid}/children", "rb") as f:
                    todo.extend(int(c) for c in f.read().split())
            except FileNotFoundError:
                if not os.path.isdir(f"/proc/{pid}/task/{tid}"):
                    continue  # the thread ended
                return None  # the kernel keeps no children files (CONFIG_PROC_CHILDREN)
            except ProcessLookupError:
                continue
    return total


def process_seconds(pid: int) -> float | None:
    try:
        times = psutil.Process(pid).cpu_times()
    except psutil.Error:
        return None
    return float(times.user + times.system)


class _Snapshot(TypedDict):
    """One reading of the counters (Sampler._snapshot): rates come from two of them."""

    t: float
    cpu: dict[str, float]  # psutil.cpu_times() by state
    ctxt: int
    disk_read: int | None  # bytes, by the whole disks (None: no disk psutil can read)
    disk_write: int | None
    memory: int
    server: float | None
    loadgen: float | None


class Sampler:
    """Samples once a second in a thread of its own until stopped.

    `server_pid` is the database server's main process (None for a remote target);
    the load generator's pid is set once it has started.
    """

    def __init__(self, server_pid: int | None, interval_s: float = 1.0,
                 clock: Callable[[], float] = time.monotonic):
        self.server_pid = server_pid
        self.loadgen_pid: int | None = None
        self.interval_s = interval_s
        self.clock = clock
        self.samples: list[SystemSample] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._disks = _whole_disks()

    def _snapshot(self) -> _Snapshot:
        disks = psutil.disk_io_counters(perdisk=True, nowrap=True) or {}
        whole = [d for name, d in disks.items() if name in self._disks]
        memory = psutil.virtual_memory()
        return {
            "t": self.clock(),
            "cpu": psutil.cpu_times()._asdict(),
            "ctxt": psutil.cpu_stats().ctx_switches,
            "disk_read": sum(d.read_bytes for d in whole) if whole else None,
            "disk_write": sum(d.write_bytes for d in whole) if whole else None,
            "memory": memory.total - memory.available,
            "server": self._server_seconds() if self.server_pid else None,
            "loadgen": process_seconds(self.loadgen_pid) if self.loadgen_pid else None,
        }

    def _server_seconds(self) -> float:
        assert self.server_pid is not None
        walked = server_tree_seconds(self.server_pid)
        return walked if walked is not None else tree_seconds(all_process_seconds(), self.server_pid)

    def _loop(self) -> None:
        # This thread alone at the lowest priority (Linux nices threads one by one): on a
        # machine the benchmark saturates, its reads of /proc wait for an idle moment
        # instead of taking CPU time from the server or the load generator.
        with contextlib.suppress(OSError, AttributeError):
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)
        start = previous = self._snapshot()
        while not self._stop.wait(self.interval_s):
            current = self._snapshot()
            dt = current["t"] - previous["t"]
            if dt <= 0:
                continue
            split = cpu_split(previous["cpu"], current["cpu"])

            def rate(a: float | None, b: float | None) -> float | None:
                if a is None or b is None:
                    return None
                return max(0.0, (b - a) / dt)

            self.samples.append(SystemSample(
                second=round(current["t"] - start["t"], 3),
                cpu_user_pct=split["user"], cpu_system_pct=split["system"], cpu_iowait_pct=split["iowait"],
                cpu_steal_pct=split["steal"], cpu_idle_pct=split["idle"],
                context_switches_per_s=max(0.0, (current["ctxt"] - previous["ctxt"]) / dt),
                disk_read_bytes_per_s=rate(previous["disk_read"], current["disk_read"]),
                disk_write_bytes_per_s=rate(previous["disk_write"], current["disk_write"]),
                memory_used_bytes=current["memory"],
                # The time of processes that exited within the second is lost: a slight
                # undercount when connections close (the end of a point, or pgbench -C).
                server_cpu=rate(previous["server"], current["server"]),
                loadgen_cpu=rate(previous["loadgen"], current["loadgen"]),
            ))
            previous = current

    def start(self) -> "Sampler":
        self._thread.start()
        return self

    def stop(self) -> tuple[SystemSample, ...]:
        self._stop.set()
        self._thread.join(timeout=5)
        return tuple(self.samples)
