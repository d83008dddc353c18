"""Files dbarena writes for the user (reports, their chart files, exports), written
whole or not at all: the text goes to a temporary file in the same directory, which
then replaces the file by rename (os.replace, atomic on POSIX). A write that fails or
is killed half-way leaves the previous file as it was and no temporary file behind
(one killed by SIGKILL may leave its `.NAME.*.tmp`, never a half-written NAME).

A write that fails is one line: a directory that does not exist is a usage error
(nothing was started), a full disk or a refused permission an environment problem.

What may be replaced: a regular file, or nothing. A destination that is anything else
is refused before anything is written: a device (`-o /dev/null` run as root would
replace the machine's /dev/null with a regular file), a FIFO, a socket, a symbolic link
(the rename would replace the link, never write through it to what it names, which is
what a user giving one may have meant; /proc/self/fd/1 is not a file to replace).
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from pathlib import Path

from dbarena.errors import EnvironmentProblem, UsageError


def write_text(path: Path, text: str) -> None:
    write_bytes(path, text.encode())


def write_bytes(path: Path, data: bytes) -> None:
    """`data` as the whole content of `path`, atomically (see the module's docstring)."""
    check_directory(path)
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    try:
        # os.open with 0o666: the new file gets the mode a plain open() would (the
        # umask applied), not tempfile's 0600; an existing file's own mode is kept.
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, _mode_of(path))
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(data)
                out.flush()
                os.fsync(out.fileno())  # on disk before the rename makes it the file
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        check_replaceable(path)  # again: the time it took to write is a time to swap one in
        os.replace(tmp, path)
    except UsageError:
        tmp.unlink(missing_ok=True)
        raise
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise _problem(path, exc) from None
    _sync_directory(path.parent)


def check_directory(path: Path) -> None:
    """A usage error of one line when `path` cannot be a file to write: its directory
    does not exist, or it is anything but a regular file (check_replaceable)."""
    if not path.parent.is_dir():
        raise UsageError(f"cannot write {path}: directory {path.parent} does not exist")
    check_replaceable(path)


def check_replaceable(path: Path) -> None:
    """A usage error of one line when `path` exists and is not a regular file dbarena
    may replace (the module's docstring says why)."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from None
    if stat.S_ISREG(mode):
        return
    if stat.S_ISDIR(mode):
        raise UsageError(f"cannot write {path}: it is a directory")
    if stat.S_ISLNK(mode):
        raise UsageError(f"cannot write {path}: it is a symbolic link (dbarena neither replaces one nor writes "
                         f"through it): give the file it names, or another path")
    raise UsageError(f"cannot write {path}: it is {kind_of(mode)}, not a regular file (dbarena replaces only "
                     f"those): give another path")


def kind_of(mode: int) -> str:
    """What a file is, as an error names it."""
    for test, kind in ((stat.S_ISREG, "a regular file"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"), (stat.S_ISLNK, "a symbolic link"),
                       (stat.S_ISDIR, "a directory")):
        if test(mode):
            return kind
    return "not a regular file"


def _mode_of(path: Path) -> int:
    with contextlib.suppress(OSError):
        return path.stat().st_mode & 0o7777
    return 0o666


def _sync_directory(directory: Path) -> None:
    """The rename itself on disk (a crash right after it keeps the new file); where a
    file system cannot sync a directory, the rename still happened."""
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _problem(path: Path, exc: OSError) -> EnvironmentProblem | UsageError:
    reason = exc.strerror or str(exc)
    if exc.errno == errno.ENOENT:
        return UsageError(f"cannot write {path}: directory {path.parent} does not exist")
    kept = " (the previous file is kept)" if path.exists() else ""
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return EnvironmentProblem(f"cannot write {path}: {reason}{kept}: free some space, or give another -o")
    return EnvironmentProblem(f"cannot write {path}: {reason}{kept}")
