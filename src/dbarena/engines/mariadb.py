"""MariaDB, a flavour of the MySQL family: mariadbd, initialised by mariadb-install-db."""

from __future__ import annotations

from pathlib import Path

from dbarena.engines.mysql_binaries import INSTALL_HINT, MyBinaries, search
from dbarena.engines.mysql_family import MySQLFamily
from dbarena.errors import ToolMissing


class MariaDB(MySQLFamily):
    flavour = "mariadb"
    server_package = "mariadb-server"
    title = "MariaDB"
    # Debian's /usr/sbin/mysqld is MariaDB too; the version line tells.
    server_names = ("mariadbd", "mysqld")

    def is_mine(self, version_line: str) -> bool:
        return "mariadb" in version_line.lower()

    def install_db(self, server: Path, bindir: Path | None) -> Path | None:
        found = search(("mariadb-install-db", "mysql_install_db"), bindir)
        if found is None:
            raise ToolMissing(f"mariadb-install-db not found next to {server}: {INSTALL_HINT}")
        return found

    def init_argv(self, binaries: MyBinaries, data: Path) -> list[str]:
        assert binaries.install_db is not None
        return [str(binaries.install_db), "--no-defaults", f"--datadir={data}", "--skip-test-db",
                "--auth-root-authentication-method=normal", "--skip-name-resolve"]
