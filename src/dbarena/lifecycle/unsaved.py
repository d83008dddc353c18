"""A measured point the store could not take (disk full, read-only, locked), saved as
a file `dbarena import` reads: the tool's command line, then its output as printed.
Nothing measured is lost to a broken store.

The file may land in the shared temporary directory, so its name holds a random part
(another user cannot create it first, nor a symbolic link in its place to make
dbarena write elsewhere), it is created, never opened if it exists (O_EXCL), never
through a link (O_NOFOLLOW), and readable by its owner alone (a tool's output).
"""

from __future__ import annotations

import os
import secrets
import shlex
import tempfile
from pathlib import Path

from dbarena.errors import StoreError
from dbarena.model import PointResult


def text_of(result: PointResult) -> str:
    """The point as a terminal would have shown it: `$ command`, progress (stderr),
    then the tool's report (stdout)."""
    argv = list(result.command)
    shown = f"$ {shlex.join([Path(argv[0]).name, *argv[1:]])}\n" if argv else ""
    return shown + result.stderr + ("" if result.stderr.endswith("\n") or not result.stderr else "\n") + result.stdout


def save(result: PointResult, store_path: Path | None) -> Path:
    """Write the point beside the store (an SQLite file; None for a PostgreSQL store),
    else in the temporary directory, else home: a new file of its own in each."""
    spec = result.spec
    name = (f"dbarena-unsaved-{result.ended_at:%Y%m%dT%H%M%S}-{secrets.token_hex(4)}-{spec.engine}-{spec.workload}"
            f"-t{spec.threads}-r{spec.repeat}.txt")
    problems = []
    beside = [store_path.parent] if store_path is not None else []
    for folder in (*beside, Path(tempfile.gettempdir()), Path.home()):
        path = folder / name
        try:
            _write_new(path, text_of(result))
            return path
        except OSError as exc:
            problems.append(f"{folder}: {exc.strerror or exc}")
    raise StoreError(f"the point could not be saved anywhere ({'; '.join(problems)})")


def _write_new(path: Path, text: str) -> None:
    """Create `path` (0600) and write `text`; a file or link already there is left as it
    is (FileExistsError), a file half written (ENOSPC) is removed."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        with open(fd, "w", encoding="utf-8", closefd=True) as f:
            f.write(text)
    except BaseException:
        path.unlink(missing_ok=True)  # ours: O_EXCL made it
        raise
