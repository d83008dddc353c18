"""Where the MySQL family's binaries are: a flavour's server (mariadbd, mysqld) in the
system's sbin directories or a given bindir, and the client tools on PATH."""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from dbarena.errors import ToolMissing

INSTALL_HINT = "install MariaDB with `apt-get install mariadb-server mariadb-client`"
_SBIN = ("/usr/sbin", "/usr/libexec", "/usr/local/mysql/bin", "/usr/local/bin")


@dataclass(frozen=True)
class MyBinaries:
    server: Path  # mariadbd or mysqld
    install_db: Path | None  # mariadb-install-db (MariaDB); None for MySQL (mysqld --initialize-insecure)
    version_line: str


def _which(names: Sequence[str], extra_dirs: Sequence[str] = ()) -> Path | None:
    path = os.pathsep.join([os.environ.get("PATH", ""), *extra_dirs])
    for name in names:
        found = shutil.which(name, path=path)
        if found:
            return Path(found)
    return None


def search(names: Sequence[str], bindir: Path | None) -> Path | None:
    if bindir is None:
        return _which(names, _SBIN)
    return next((bindir / n for n in names if (bindir / n).is_file()), None)


def client_tool(name: str) -> Path:
    """mysqlslap (or MariaDB's mariadb-slap), sysbench ... from PATH."""
    names = {"mysqlslap": ("mysqlslap", "mariadb-slap")}.get(name, (name,))
    found = _which(names)
    if found is None:
        package = "sysbench" if name == "sysbench" else "mariadb-client"
        raise ToolMissing(f"{name} not found: install it with `apt-get install {package}`")
    return found
