"""Engines: where the database under test comes from.

Each engine module offers `throwaway(...)` (an instance of its own, always removed)
and `external(url, ...)` (an existing server); both are context managers that yield
a target with `url`, `description`, `server_version`, `client_env()`, `tool(name)`
and `problem()`. Adding an engine means one module and one line in ENGINES.
"""

from __future__ import annotations

from types import ModuleType

from dbarena.engines import postgres
from dbarena.errors import UsageError

ENGINES: dict[str, ModuleType] = {
    postgres.ENGINE: postgres,
}


def get(name: str) -> ModuleType:
    try:
        return ENGINES[name]
    except KeyError:
        raise UsageError(f"unknown engine {name!r} (known: {', '.join(ENGINES)})") from None
