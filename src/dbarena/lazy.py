"""Modules imported on first use (importlib's LazyLoader recipe).

Every command imports the engine modules (their option names and URL rules are part of
the CLI), but only a run or a --target needs the database drivers: psycopg and
pymysql take about 0.2 s to import, which `dbarena results` would pay for nothing."""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType


def lazy_import(name: str) -> ModuleType:
    """The module, loaded when one of its attributes is first read."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None:
        raise ModuleNotFoundError(f"No module named {name!r}", name=name)
    loader = importlib.util.LazyLoader(spec.loader)
    spec.loader = loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    loader.exec_module(module)
    return module
