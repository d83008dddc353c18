"""Where PostgreSQL's binaries are: the server's (initdb, postgres) of the newest
installation, and the client tools (pgbench from that installation, others from PATH)."""

from __future__ import annotations

import contextlib
import glob
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from dbarena import execute
from dbarena.errors import ToolMissing
from dbarena.interfaces import Executor

INSTALL_HINT = "install PostgreSQL with `apt-get install postgresql postgresql-contrib`"

_VERSION = re.compile(r"\(PostgreSQL\) (?P<major>\d+)(?:\.(?P<minor>\d+))?")


@dataclass(frozen=True)
class PgBinaries:
    bindir: Path
    version: tuple[int, int]
    version_line: str

    def path(self, name: str) -> Path:
        return self.bindir / name


def _is_exe(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def candidate_bindirs(path_env: str | None = None, executor: Executor = execute.LOCAL) -> list[Path]:
    """Directories that may hold PostgreSQL server binaries, in search order:
    pg_config --bindir, Debian/Ubuntu and RHEL install trees, then PATH."""
    dirs: list[Path] = []
    pg_config = shutil.which("pg_config", path=path_env)
    if pg_config:
        with contextlib.suppress(ToolMissing):
            done = executor.run([pg_config, "--bindir"], timeout=30)
            if done.returncode == 0 and done.stdout.strip():
                dirs.append(Path(done.stdout.strip()))
    for pattern in ("/usr/lib/postgresql/*/bin", "/usr/pgsql-*/bin", "/usr/local/pgsql/bin"):
        dirs.extend(Path(p) for p in sorted(glob.glob(pattern)))
    for entry in (path_env if path_env is not None else os.environ.get("PATH", "")).split(os.pathsep):
        if entry:
            dirs.append(Path(entry))
    seen: set[Path] = set()
    unique = []
    for d in dirs:
        key = d.resolve() if d.exists() else d
        if key not in seen:
            seen.add(key)
            unique.append(d)
    return unique


def parse_version(line: str) -> tuple[int, int] | None:
    """'postgres (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1)' -> (15, 18)."""
    m = _VERSION.search(line)
    if m is None:
        return None
    return int(m["major"]), int(m["minor"] or 0)


def find_server_binaries(bindir: Path | None = None, executor: Executor = execute.LOCAL) -> PgBinaries:
    """The newest PostgreSQL installation with initdb, postgres and pgbench."""
    dirs = [bindir] if bindir is not None else candidate_bindirs(executor=executor)
    found: list[PgBinaries] = []
    for d in dirs:
        if not all(_is_exe(d / n) for n in ("initdb", "postgres")):
            continue
        line = execute.version_line(d / "postgres", executor)
        version = parse_version(line)
        if version is not None:
            found.append(PgBinaries(d, version, line))
    if not found:
        where = f"in {bindir}" if bindir is not None else "(looked at pg_config, /usr/lib/postgresql/*/bin and PATH)"
        raise ToolMissing(f"no PostgreSQL server binaries (initdb, postgres) found {where}: {INSTALL_HINT}")
    return max(found, key=lambda b: b.version)


def find_client(name: str, bindir: Path | None = None, executor: Executor = execute.LOCAL) -> Path:
    """A client tool (pgbench, psql): from bindir, else the newest install, else PATH."""
    dirs = [bindir] if bindir is not None else candidate_bindirs(executor=executor)
    versioned = []
    for d in dirs:
        if _is_exe(d / name):
            line = execute.version_line(d / name, executor)
            versioned.append((parse_version(line) or (0, 0), d / name))
    if not versioned:
        raise ToolMissing(f"{name} not found: {INSTALL_HINT}")
    # Newest version wins; among equals, the first found (pg_config's bindir).
    return max(versioned, key=lambda v: v[0])[1]


def client_tool(name: str, bindir: Path | None, executor: Executor = execute.LOCAL) -> Path:
    """pgbench from the PostgreSQL installation; other tools (sysbench) from PATH."""
    if name == "pgbench":
        return find_client("pgbench", bindir, executor)
    found = shutil.which(name)
    if found is None:
        raise ToolMissing(f"{name} not found: install it with `apt-get install {name}`")
    return Path(found)
