"""Where a throwaway instance keeps its data: the temporary directory (the default), a
RAM disk ("tmpfs", study C: `pgbench -S` with no disk in the way), or a path (an NVMe
mount). The parsers are pure; `resolve` and `facts` read the machine.

The RAM disk is /dev/shm, the tmpfs every Linux mounts: dbarena mounts nothing, so a
killed run leaves no mount behind, and the instance directory in it is reaped like any
other (state.py).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from dbarena.errors import UsageError

TMPFS = "tmpfs"
RAM_DISK = Path("/dev/shm")
HEADROOM = 1.5  # WAL, temporary files, a checkpoint's worth of growth


def mount_of(path: str, proc_mounts: str) -> dict[str, str]:
    """The mount holding path (the longest mount point that is a prefix of it), from
    /proc/mounts text: its device, file system type and options."""
    best: tuple[str, str, str, str] | None = None
    for line in proc_mounts.splitlines():
        fields = line.split()
        if len(fields) < 4:
            continue
        device, point, fstype, options = fields[:4]
        point = point.replace("\\040", " ")
        inside = path == point or path.startswith(point.rstrip("/") + "/")
        if inside and (best is None or len(point) >= len(best[1])):
            best = (device, point, fstype, options)
    if best is None:
        return {}
    return {"device": best[0], "mount_point": best[1], "fs": best[2], "mount_options": best[3]}


def resolve(choice: str | None) -> Path | None:
    """The directory the instance's own directory is created in: None for the
    temporary directory; a usage error, before anything starts, for a choice that
    cannot hold it."""
    if choice is None:
        return None
    if choice == TMPFS:
        if not RAM_DISK.is_dir() or mount_of(str(RAM_DISK), _mounts()).get("fs") != "tmpfs":
            raise UsageError(f"data_dir = \"tmpfs\": {RAM_DISK} is not a tmpfs RAM disk on this machine")
        return RAM_DISK
    path = Path(choice)
    if not path.is_absolute():
        raise UsageError(f"data_dir {choice!r}: give \"tmpfs\" or an absolute path")
    if not path.is_dir():
        raise UsageError(f"data_dir {choice!r}: no such directory")
    if not os.access(path, os.W_OK | os.X_OK):
        raise UsageError(f"data_dir {choice!r}: not writable by dbarena")
    return path


def free_bytes(where: Path, choice: str | None) -> int:
    """Room for data in a directory: its file system's space available to dbarena (for
    a RAM disk: no more than the machine's available memory either). Whether the
    study's datasets fit is preflight.estimate's to say."""
    stat = os.statvfs(where)
    free = stat.f_bavail * stat.f_frsize
    if choice == TMPFS:
        free = min(free, _mem_available() or free)
    return free


def facts(parent: Path | None, choice: str | None) -> dict[str, str]:
    """What the run records of where its data lived: the choice, the directory and its
    mount (device, file system type, options)."""
    where = str(parent or Path(tempfile.gettempdir()))
    return {"choice": choice or "temporary directory", "path": where, **mount_of(where, _mounts())}


def _mounts() -> str:
    try:
        return Path("/proc/mounts").read_text()
    except OSError:
        return ""


def _mem_available() -> int | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None
