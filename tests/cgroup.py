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
    with contextlib.suppress(ProcessLookupError, FileNotFoundError, OSError):
        (root / path.lstrip("/") / "cgroup.procs").write_text(f"{pid}\n")


@contextlib.contextmanager
def throttled(pid: int, share: float) -> Iterator[Path]:
    """The process `pid` and its descendants (now, and those they start later) limited
    to `share` of one CPU; put back where they were afterwards."""
    reason = missing()
    if reason:
        raise RuntimeError(reason)
    found = _hierarchy()
    assert found is not None
    root, version = found
    group = root / f"dbarena-test-slow-{os.getpid()}-{pid}"
    group.mkdir()
    quota = int(PERIOD_US * share)
    if version == "v2":
        subtree = root / "cgroup.subtree_control"
        if "cpu" not in subtree.read_text().split():
            subtree.write_text("+cpu")
        (group / "cpu.max").write_text(f"{quota} {PERIOD_US}")
    else:
        (group / "cpu.cfs_period_us").write_text(str(PERIOD_US))
        (group / "cpu.cfs_quota_us").write_text(str(quota))
    tree = [psutil.Process(pid), *psutil.Process(pid).children(recursive=True)]
    before = {p.pid: _cgroup_of(p.pid, version) for p in tree}
    try:
        for p in tree:
            _move(group, "/", p.pid)
        yield group
    finally:
        # Everything in the group now (the tree and what it started), back where the
        # tree was; then the empty group is removed.
        home = before.get(pid, "/")
        for _ in range(50):
            inside = [int(x) for x in (group / "cgroup.procs").read_text().split()]
            if not inside:
                break
            for member in inside:
                _move(root, before.get(member, home), member)
            time.sleep(0.1)
        with contextlib.suppress(OSError):
            group.rmdir()
