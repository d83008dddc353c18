"""Whole-machine and per-process system metrics, sampled once a second during a point.

Study A ran the load generator on the database host and could not tell which one ran
out of CPU. Each second we record the machine's CPU split (user, system, iowait,
steal, idle), context switches, disk bytes and memory in use, and the CPU used by the
database server's processes and by the load generator, all from /proc: a few small
file reads per second, no extra process. The parsers are pure; `Sampler` is the
thread that reads.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

CLK_TCK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
SECTOR_BYTES = 512  # /proc/diskstats counts 512-byte sectors whatever the device


@dataclass(frozen=True)
class SystemSample:
    """One second of machine activity. CPU shares are percent of all hardware threads;
    server_cpu and loadgen_cpu are in cores (1.0 = one hardware thread busy)."""

    second: float
    cpu_user_pct: float
    cpu_system_pct: float
    cpu_iowait_pct: float
    cpu_steal_pct: float
    cpu_idle_pct: float
    context_switches_per_s: float
    disk_read_bytes_per_s: float | None
    disk_write_bytes_per_s: float | None
    memory_used_bytes: int | None
    server_cpu: float | None
    loadgen_cpu: float | None


def parse_proc_stat(text: str) -> tuple[dict[str, int], int]:
    """The aggregate 'cpu' line (ticks by state) and the 'ctxt' counter of /proc/stat."""
    cpu: dict[str, int] = {}
    ctxt = 0
    for line in text.splitlines():
        if line.startswith("cpu "):
            names = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")
            cpu = dict(zip(names, (int(v) for v in line.split()[1:9])))
        elif line.startswith("ctxt "):
            ctxt = int(line.split()[1])
    return cpu, ctxt


def cpu_split(before: dict[str, int], after: dict[str, int]) -> dict[str, float]:
    """Percent of all CPU time in each state between two /proc/stat readings.
    (guest time is already counted in user, so it is not added again)."""
    delta = {k: after.get(k, 0) - before.get(k, 0) for k in after}
    total = sum(delta.values()) or 1
    return {
        "user": 100.0 * (delta.get("user", 0) + delta.get("nice", 0)) / total,
        "system": 100.0 * (delta.get("system", 0) + delta.get("irq", 0) + delta.get("softirq", 0)) / total,
        "iowait": 100.0 * delta.get("iowait", 0) / total,
        "steal": 100.0 * delta.get("steal", 0) / total,
        "idle": 100.0 * delta.get("idle", 0) / total,
    }


def parse_diskstats(text: str, whole_disks: set[str]) -> tuple[int, int]:
    """Sectors read and written, summed over whole disks (partitions would count twice)."""
    read = written = 0
    for line in text.splitlines():
        fields = line.split()
        if len(fields) >= 10 and fields[2] in whole_disks:
            read += int(fields[5])
            written += int(fields[9])
    return read, written


def parse_meminfo_used(text: str) -> int | None:
    values = {}
    for line in text.splitlines():
        key, _, value = line.partition(":")
        parts = value.split()
        if parts:
            values[key] = int(parts[0]) * 1024
    if "MemTotal" in values and "MemAvailable" in values:
        return values["MemTotal"] - values["MemAvailable"]
    return None


def parse_pid_stat(text: str) -> tuple[int, int]:
    """(parent pid, utime + stime ticks) from /proc/<pid>/stat. The command name may
    hold spaces and parentheses, so fields are counted after its last ')'."""
    rest = text[text.rindex(")") + 2:].split()
    # rest[0] is field 3 (state): ppid is field 4, utime 14, stime 15.
    return int(rest[1]), int(rest[11]) + int(rest[12])


def tree_ticks(stats: dict[int, tuple[int, int]], root: int) -> int:
    """CPU ticks of root and all its descendants, given {pid: (ppid, ticks)}.

    By parent, not by session or process group: PostgreSQL's backends call setsid(),
    and a server may fork helpers; mysqld's threads are already in its own ticks."""
    children: dict[int, list[int]] = {}
    for pid, (ppid, _) in stats.items():
        children.setdefault(ppid, []).append(pid)
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        if pid in stats:
            total += stats[pid][1]
        todo.extend(children.get(pid, ()))
    return total


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text()
    except OSError:
        return None


def _whole_disks() -> set[str]:
    try:
        names = os.listdir("/sys/block")
    except OSError:
        return set()
    return {n for n in names if not n.startswith(("loop", "ram", "zram"))}


def all_process_stats() -> dict[int, tuple[int, int]]:
    stats = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            text = _read(f"/proc/{entry}/stat")
            if text is None:
                continue  # exited meanwhile
            try:
                stats[int(entry)] = parse_pid_stat(text)
            except (ValueError, IndexError):
                continue
    return stats


def process_ticks(pid: int) -> int | None:
    text = _read(f"/proc/{pid}/stat")
    if text is None:
        return None
    return parse_pid_stat(text)[1]


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

    def _snapshot(self) -> dict:
        cpu, ctxt = parse_proc_stat(_read("/proc/stat") or "")
        disk = _read("/proc/diskstats")
        return {
            "t": self.clock(),
            "cpu": cpu,
            "ctxt": ctxt,
            "disk": parse_diskstats(disk, self._disks) if disk is not None else None,
            "server": tree_ticks(all_process_stats(), self.server_pid) if self.server_pid else None,
            "loadgen": process_ticks(self.loadgen_pid) if self.loadgen_pid else None,
        }

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

            def rate(key, index=None, scale=1.0):
                a, b = previous[key], current[key]
                if a is None or b is None:
                    return None
                if index is not None:
                    a, b = a[index], b[index]
                return max(0.0, (b - a) * scale / dt)

            self.samples.append(SystemSample(
                second=round(current["t"] - start["t"], 3),
                cpu_user_pct=split["user"], cpu_system_pct=split["system"], cpu_iowait_pct=split["iowait"],
                cpu_steal_pct=split["steal"], cpu_idle_pct=split["idle"],
                context_switches_per_s=rate("ctxt"),
                disk_read_bytes_per_s=rate("disk", 0, SECTOR_BYTES),
                disk_write_bytes_per_s=rate("disk", 1, SECTOR_BYTES),
                memory_used_bytes=parse_meminfo_used(_read("/proc/meminfo") or ""),
                # Ticks of processes that exited within the second are lost: a slight
                # undercount when connections close (the end of a point, or pgbench -C).
                server_cpu=rate("server", scale=1.0 / CLK_TCK),
                loadgen_cpu=rate("loadgen", scale=1.0 / CLK_TCK),
            ))
            previous = current

    def start(self) -> "Sampler":
        self._thread.start()
        return self

    def stop(self) -> tuple[SystemSample, ...]:
        self._stop.set()
        self._thread.join(timeout=5)
        return tuple(self.samples)
