"""A measured point the store could not take (disk full, read-only, locked), saved as
a file `dbarena import` reads: the tool's command line, then its output as printed.
Nothing measured is lost to a broken store."""

from __future__ import annotations

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
    else in the temporary directory, else home."""
    spec = result.spec
    name = (f"dbarena-unsaved-{result.ended_at:%Y%m%dT%H%M%S}-{spec.engine}-{spec.workload}-t{spec.threads}"
            f"-r{spec.repeat}.txt")
    problems = []
    beside = [store_path.parent] if store_path is not None else []
    for folder in (*beside, Path(tempfile.gettempdir()), Path.home()):
        path = folder / name
        try:
            path.write_text(text_of(result))
            return path
        except OSError as exc:
            path.unlink(missing_ok=True)
            problems.append(f"{folder}: {exc.strerror or exc}")
    raise StoreError(f"the point could not be saved anywhere ({'; '.join(problems)})")
