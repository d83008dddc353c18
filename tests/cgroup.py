"""A process tree slowed by a CPU cgroup, for tests of a host that is slower than its
kind (a throttled or degraded machine): its processes, and everything they start
afterwards, get `share` of one CPU in every 100 ms. cgroup v2 (cpu.max) or v1's cpu
controller (cpu.cfs_quota_us), whichever this machine mounts; needs root.

    with throttled(sshd_pid, 0.25):
        ...  # every session of that sshd runs on a quarter of a CPU
"""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path
from typing import Iterator

import psutil

ROOT = Path("/sys/fs/cgroup")
PERIOD_US = 100_000


def _hierarchy() -> tuple[Path, str] | None:
    """(the hierarchy's root, "v2" or "v1") of the cpu controller, or None."""
    controllers = ROOT / "cgroup.controllers"
    if controllers.is_file() and "cpu" in controllers.read_text().split():
        return ROOT, "v2"
    if (ROOT / "cpu" / "cpu.cfs_quota_us").is_file():
        return ROOT / "cpu", "v1"
    return None


def missing() -> str | None:
    """Why a process cannot be throttled here; None when it can."""
    if os.geteuid() != 0:
        return "a CPU cgroup needs root"
    if _hierarchy() is None:
        return f"no cgroup cpu controller under {ROOT} (neither v2's cpu.max nor v1's cpu.cfs_quota_us)"
    return None


def _cgroup_of(pid: int, version: str) -> str:
    """The process's cgroup path in the cpu hierarchy (to put it back there)."""
    for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
        number, controllers, path = line.split(":", 2)
        if (version == "v2" and number == "0") or (version == "v1" and "cpu" in controllers.split(",")):
            return path
    return "/"


def _move(root: Path, path: str, pid: int) -> None:
    """Put a process in a cgroup; one that has ended meanwhile is left alone."""
    with contextlib.suppress(ProcessLookupError):
        (root / path.lstrip("/") / "cgroup.procs").write_text(f"{pid}\n")


def _members(group: Path) -> list[int]:
    with contextlib.suppress(FileNotFoundError):
        return [int(x) for x in (group / "cgroup.procs").read_text().split()]
    return []


@contextlib.contextmanager
def throttled(pid: int, share: float) -> Iterator[Path]:
    """The process `pid` and its descendants (now, and those they start later) limited
    to `share` of one CPU; put back where they were afterwards (an error if they cannot
    be: a machine left throttled would slow every later test)."""
    reason = missing()
    if reason:
        raise RuntimeError(reason)
    found = _hierarchy()
    assert found is not None
    root, version = found
    tree = [psutil.Process(pid), *psutil.Process(pid).children(recursive=True)]
    before = {p.pid: _cgroup_of(p.pid, version) for p in tree}
    group = root / f"dbarena-test-slow-{os.getpid()}-{pid}"
    quota = int(PERIOD_US * share)
    try:
        group.mkdir()
        if version == "v2":
            # (The root's cpu controller, once enabled, is left on: other groups may use it.)
            subtree = root / "cgroup.subtree_control"
            if "cpu" not in subtree.read_text().split():
                subtree.write_text("+cpu")
            (group / "cpu.max").write_text(f"{quota} {PERIOD_US}")
        else:
            (group / "cpu.cfs_period_us").write_text(str(PERIOD_US))
            (group / "cpu.cfs_quota_us").write_text(str(quota))
        for p in tree:
            _move(group, "/", p.pid)
        if pid not in _members(group):
            raise RuntimeError(f"process {pid} did not enter {group}")
        yield group
    finally:
        # Everything in the group now (the tree and what it started), back where the
        # tree was; then the empty group is removed.
        home = before.get(pid, "/")
        deadline = time.monotonic() + 10
        while _members(group) and time.monotonic() < deadline:
            for member in _members(group):
                _move(root, before.get(member, home), member)
            time.sleep(0.1)
        if group.exists():
            left = _members(group)
            if left:
                raise RuntimeError(f"processes {left} are still throttled in {group}")
            group.rmdir()
