"""Workloads: a name, the engines it runs on, and the tool module that builds its
command line and parses its output.

A tool module (pgbench.py ...) holds pure functions only: `prepare_argv`,
`point_argv` and `read` (raw output -> Measurement and Samples). Adding a workload
means one entry in WORKLOADS; adding a tool, one module next to pgbench.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import ModuleType

from dbarena.errors import UsageError
from dbarena.workloads import pgbench


@dataclass(frozen=True)
class Workload:
    name: str
    engines: tuple[str, ...]
    tool: ModuleType
    mode_args: tuple[str, ...]
    description: str


WORKLOADS: dict[str, Workload] = {
    w.name: w
    for w in (
        Workload("pgbench-tpcb", ("postgres",), pgbench, (), "pgbench's built-in TPC-B-like script"),
        Workload("pgbench-select-only", ("postgres",), pgbench, ("-S",), "pgbench -S: one primary-key SELECT"),
        Workload("pgbench-simple-update", ("postgres",), pgbench, ("-N",), "pgbench -N: TPC-B without the hot branch/teller updates"),
    )
}


def resolve(names: list[str], engine: str) -> list[Workload]:
    """Workloads by name, in the order given; a clear usage error for any unknown one
    or one the engine cannot run."""
    chosen = []
    for name in names:
        if name not in WORKLOADS:
            raise UsageError(f"unknown workload {name!r} (known: {', '.join(WORKLOADS)})")
        workload = WORKLOADS[name]
        if engine not in workload.engines:
            raise UsageError(f"workload {name!r} cannot run on engine {engine!r} (it runs on: {', '.join(workload.engines)})")
        if workload not in chosen:
            chosen.append(workload)
    return chosen


def default_names(engine: str) -> list[str]:
    return [w.name for w in WORKLOADS.values() if engine in w.engines]
