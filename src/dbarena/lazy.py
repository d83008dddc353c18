"""Modules imported on first use (importlib's LazyLoader recipe).

Every command imports the engine modules (their option names and URL rules are part of
the CLI), but only a run or a --target needs the database drivers: psycopg and
pymysql take about 0.2 s to import, which `dbarena results` would pay for nothing."""

from __future__ import annotations

import importlib.util
import sys
from importlib.abc import Loader
from importlib.machinery import ModuleSpec
from types import ModuleType

from dbarena import shield


class _Held(Loader):
    """The module's own loader, with Ctrl-C and SIGTERM held while it executes and
    delivered once it has (shield.py). A lazy module loads wherever it is first read,
    mid-run: interrupted halfway, it stayed half made, and the next read of it failed
    instead (`except psycopg.OperationalError` evaluated as a SIGTERM came during
    psycopg's import: AttributeError, in place of the interrupt; seen in
    tests/e2e/test_kill_anywhere.py)."""

    def __init__(self, loader: Loader) -> None:
        self.loader = loader

    def create_module(self, spec: ModuleSpec) -> ModuleType | None:
        return self.loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        with shield.shielded():
            self.loader.exec_module(module)


def lazy_import(name: str) -> ModuleType:
    """The module, loaded when one of its attributes is first read."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None:
        raise ModuleNotFoundError(f"No module named {name!r}", name=name)
    loader = importlib.util.LazyLoader(_Held(spec.loader))
    spec.loader = loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    loader.exec_module(module)
    return module
