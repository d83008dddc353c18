"""MySQL (Oracle's), a flavour of the MySQL family: mysqld, initialised by
`mysqld --initialize-insecure` (root without a password, locked away once set up)."""

from __future__ import annotations

from pathlib import Path

from dbarena.engines.mysql_binaries import MyBinaries
from dbarena.engines.mysql_family import MySQLFamily


class MySQL(MySQLFamily):
    flavour = "mysql"
    server_package = "mysql-server"
    title = "MySQL"
    server_names = ("mysqld",)
    # Debian ships MariaDB's server as mysqld too, which is_mine() tells apart.
    install_hint = ("install Oracle's MySQL server (its mysql-server package; Debian has none), "
                    "or choose the mariadb flavour")

    def is_mine(self, version_line: str) -> bool:
        return "mariadb" not in version_line.lower()

    def init_argv(self, binaries: MyBinaries, data: Path) -> list[str]:
        return [str(binaries.server), "--no-defaults", "--initialize-insecure", f"--datadir={data}"]
