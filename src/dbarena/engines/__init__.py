"""Engines: where the database under test comes from.

Each engine module offers `throwaway(...)` (an instance of its own, always removed),
`external(url, ...)` (an existing server) and `check_target_url(url)`; the context
managers yield a target with `conn` (a password-free model.Connection),
`description`, `server_version`, `client_env()`, `tool(name)` and `problem()`.
Adding an engine means one module and one line in ENGINES.
"""

from __future__ import annotations

from types import ModuleType
from urllib.parse import urlsplit

from dbarena.engines import mysql, postgres
from dbarena.errors import UsageError

ENGINES: dict[str, ModuleType] = {
    postgres.ENGINE: postgres,
    mysql.ENGINE: mysql,
}

# --target URL scheme -> engine
SCHEMES = {"postgresql": postgres.ENGINE, "postgres": postgres.ENGINE, "mysql": mysql.ENGINE}


def get(name: str) -> ModuleType:
    try:
        return ENGINES[name]
    except KeyError:
        raise UsageError(f"unknown engine {name!r} (known: {', '.join(ENGINES)})") from None


def engine_of_url(url: str) -> str:
    scheme = urlsplit(url).scheme
    if scheme not in SCHEMES:
        raise UsageError(f"--target {url!r}: expected postgresql://user@host:port/db or mysql://user@host:port/db")
    return SCHEMES[scheme]
