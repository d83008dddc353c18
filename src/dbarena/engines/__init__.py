"""Engines: where the database under test comes from.

An engine family (the name workloads use: postgres, mysql) has one or more flavours
(PostgreSQL; MariaDB and MySQL), each an interfaces.Engine: a throwaway instance of
its own from the machine's binaries, always removed, or an existing server by URL.
Adding a flavour means one module and one line in FLAVOURS.
"""

from __future__ import annotations

from pathlib import Path

from dbarena import execute
from dbarena.engines import target_url
from dbarena.engines.mariadb import MariaDB
from dbarena.engines.mysql import MySQL
from dbarena.engines.postgres import PostgresEngine
from dbarena.errors import UsageError
from dbarena.interfaces import Engine, Executor
from dbarena.masking import masked

# family -> flavour -> engine; "auto" picks the first installed, in this order.
FLAVOURS: dict[str, dict[str, Engine]] = {
    "postgres": {"postgresql": PostgresEngine()},
    "mysql": {"mariadb": MariaDB(), "mysql": MySQL()},
}
ENGINES = tuple(FLAVOURS)
AUTO = "auto"

# The environment variables the engines' client tools read a password from: what a
# fleet's controller hands to its hosts (in a private file) and keeps out of the rest.
PASSWORD_VARIABLES: tuple[str, ...] = tuple(dict.fromkeys(
    e.password_env for flavours in FLAVOURS.values() for e in flavours.values()))

# --target URL scheme -> engine
SCHEMES = {"postgresql": "postgres", "postgres": "postgres", "mysql": "mysql"}


def check_name(name: str) -> str:
    if name not in FLAVOURS:
        raise UsageError(f"unknown engine {name!r} (known: {', '.join(ENGINES)})")
    return name


def check_flavour(name: str, flavour: str) -> str:
    check_name(name)
    if flavour != AUTO and flavour not in FLAVOURS[name]:
        raise UsageError(f"unknown {name} flavour {flavour!r} (known: {', '.join((AUTO, *FLAVOURS[name]))})")
    return flavour


def first(name: str) -> Engine:
    """The family's first flavour, for what all flavours share (URL rules, option names)
    without looking for binaries."""
    return next(iter(FLAVOURS[check_name(name)].values()))


def get(name: str, flavour: str = AUTO, *, bindir: Path | None = None,
        executor: Executor = execute.LOCAL) -> Engine:
    """The engine of a family and flavour; for "auto", the first flavour installed
    (or the first of all, whose throwaway() then says what to install)."""
    flavours = FLAVOURS[check_name(name)]
    if check_flavour(name, flavour) != AUTO:
        return flavours[flavour]
    for engine in flavours.values():
        if engine.available(bindir, executor):
            return engine
    return next(iter(flavours.values()))


def engine_of_url(url: str) -> str:
    scheme = target_url.split(url).scheme
    if scheme not in SCHEMES:
        # Masked: a mistyped scheme or a keyword connection string may hold a password.
        raise UsageError(f"--target {masked(url)!r}: expected postgresql://user@host:port/db or "
                         "mysql://user@host:port/db")
    return SCHEMES[scheme]
