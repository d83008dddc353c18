"""The MySQL-family server an output names, where it names one: its version and flavour
(MariaDB or MySQL). Neither sysbench nor mysqlslap prints the server's version, but the
text around their runs often does: the `mysql` client's welcome (`Server version:
10.11.6-MariaDB-0+deb12u1 Debian 12`, `Server version: 8.0.36 MySQL Community Server -
GPL`), `mysqladmin version` (`Server version		10.11.6-MariaDB-0+deb12u1`), or the
result of `SELECT VERSION()` (a line holding only `10.11.6-MariaDB-0+deb12u1`, bare or
in a table's `| ... |`). pgbench names the server only where its version differs from
the client's (`pgbench (14.3, server 11.2)`), so an output of PostgreSQL 12 or 13, whose
pgbench printed no banner, names it only in a `SELECT version()` result: `PostgreSQL 13.4
(Debian 13.4-1.pgdg100+1) on x86_64-pc-linux-gnu, compiled by gcc ..., 64-bit`, bare or in
psql's table. A statement holds for the runs after it in the file, until another. Pure:
lines in, what they name out.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

# "Server version:" (the client's welcome) or "Server version" and tabs (mysqladmin),
# then the version and what the server says of itself after it.
_STATED = re.compile(r"^\s*Server version:?\s+(?P<version>\d+\.\d+\.\d+\S*)(?P<rest>.*)$")
# A line that is only a MariaDB version (SELECT VERSION()'s result, bare or in a table):
# a MySQL version alone ("8.0.36") says nothing of the flavour, and could be any figure.
_MARIADB_VALUE = re.compile(r"^\s*\|?\s*(?P<version>\d+\.\d+\.\d+-MariaDB\S*)\s*\|?\s*$")
# PostgreSQL's version(): the version, the packager's note in parentheses, the platform.
_POSTGRES_VALUE = re.compile(r"^\s*\|?\s*PostgreSQL (?P<version>\d+(?:\.\d+)*(?:beta\d+|rc\d+|devel)?"
                             r"(?: \([^)]*\))?) on \S+, compiled by ")


@dataclass(frozen=True)
class Server:
    version: str
    flavour: str  # mariadb, mysql or postgresql


def _flavour(text: str) -> str:
    return "mariadb" if "mariadb" in text.lower() else "mysql"


def named(line: str) -> Server | None:
    """The server one line names, or None."""
    if "ersion" not in line and "MariaDB" not in line and "PostgreSQL " not in line:
        return None  # most lines: no pattern to try
    if "compiled by" in line:
        found = _POSTGRES_VALUE.match(line)
        if found is not None:
            return Server(found["version"], "postgresql")
    m = _STATED.match(line)
    if m is not None:
        return Server(m["version"], _flavour(m["version"] + m["rest"]))
    m = _MARIADB_VALUE.match(line)
    return Server(m["version"], "mariadb") if m is not None else None


def last_named(lines: Iterable[str], before: Server | None = None) -> Server | None:
    """The server the last of these lines that names one names (`before` if none does)."""
    for line in lines:
        found = named(line)
        if found is not None:
            before = found
    return before
