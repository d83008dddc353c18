"""Reading a file that comes from outside (a bundle, an allowed-signers file, a signing
key, a price list, a tool's output to import): one helper for all of them, so that each
is refused in one line where it is not a regular file, and read only up to a bound.

Why both: a path may name /dev/zero, whose reading never ends (the memory fills, the
kernel's OOM killer ends the process), or a FIFO, whose open blocks until a writer comes
and whose reading blocks until it writes (for ever, in a results repository's CI where a
pull request made `bundles/x.tar` a FIFO). A regular file's size is known before it is
read, so a bound refuses an oversized one before a byte of it is held; the bound is
applied to what is read too, since a file may grow between the look and the read.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import BinaryIO

from dbarena.errors import UsageError

__all__ = ["Unreadable", "not_regular", "open_regular", "read_bytes", "read_text"]


class Unreadable(UsageError):
    """A file that is not read, and why (one line). `kind` names what it is where it is
    no regular file ("a FIFO"), else None."""

    def __init__(self, message: str, kind: str | None = None):
        super().__init__(message)
        self.kind = kind


_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def not_regular(mode: int) -> str | None:
    """What a file of this st_mode is, where it is no regular file (None: it is one)."""
    if stat.S_ISREG(mode):
        return None
    return next((kind for test, kind in _KINDS if test(mode)), "not a regular file")


def open_regular(path: Path, what: str = "") -> BinaryIO:
    """A regular file, open to read; Unreadable (one line, naming `what` and the path)
    for anything else. Opened without blocking (a FIFO without a writer blocks the open)
    and checked again on the descriptor, so that what is read is what was checked (a
    path swapped for a FIFO between the two is refused too)."""
    shown = f"{what} {path}" if what else str(path)
    try:
        kind = not_regular(path.stat().st_mode)  # (a socket cannot even be opened: say what it is)
        if kind is None:
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
            file = os.fdopen(fd, "rb")
            kind = not_regular(os.fstat(file.fileno()).st_mode)
            if kind is None:
                os.set_blocking(fd, True)
                return file
            file.close()
    except OSError as exc:
        raise Unreadable(f"{shown}: cannot be read ({exc.strerror or exc})") from None
    raise Unreadable(f"{shown}: {kind}, not a regular file", kind)


def read_bytes(path: Path, limit: int, what: str = "") -> bytes:
    """The whole of a regular file of at most `limit` bytes; Unreadable (one line) for
    another file, or a larger one, before more than `limit` bytes are held."""
    shown = f"{what} {path}" if what else str(path)
    with open_regular(path, what) as file:
        try:
            size = os.fstat(file.fileno()).st_size
            if size > limit:
                raise Unreadable(f"{shown}: {size:,} bytes, more than such a file may be ({limit:,} at most)")
            # Its size, not the bound: read(n) allocates n bytes before it reads one.
            data = file.read(size)
            more = file.read(1)
            if more:  # a file that grew since: read on a part at a time, up to the bound
                grown = bytearray(data + more)
                while len(grown) <= limit and (part := file.read(min(2**20, limit + 1 - len(grown)))):
                    grown += part
                if len(grown) > limit:
                    raise Unreadable(f"{shown}: more than {limit:,} bytes, more than such a file may be")
                data = bytes(grown)
        except OSError as exc:
            raise Unreadable(f"{shown}: cannot be read ({exc.strerror or exc})") from None
    return data


def read_text(path: Path, limit: int, what: str = "") -> str:
    """read_bytes as UTF-8 text; text that is not UTF-8 is Unreadable at its byte."""
    data = read_bytes(path, limit, what)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        shown = f"{what} {path}" if what else str(path)
        raise Unreadable(f"{shown}: not UTF-8 text (byte {exc.start:,})") from None
