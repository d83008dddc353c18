"""Workloads: a name, the engines it runs on, and the tool module that builds its
command lines and parses its output.

A tool module (pgbench.py, sysbench.py, mysqlslap.py) holds pure functions with
one interface: TOOL, PARAMS (the PointSpec.params it reads), `prepare_argv` and
`cleanup_argv` (the dataset, once per run and target: one command, a list of
commands, or None), optional BINARY (the executable, when not TOOL) and `verify`
(checks on the data after each point),
`point_argv`, `read` (raw output -> Measurement and Samples), `read_samples` and
`parse_progress_line`. Adding a workload means one entry in WORKLOADS; adding a
tool, one module next to these.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import ModuleType

from dbarena.errors import UsageError
from dbarena.workloads import mysqlslap, pgbench, sysbench, tpcc

PG, MY = "postgres", "mysql"


@dataclass(frozen=True)
class Workload:
    name: str
    engines: tuple[str, ...]
    tool: ModuleType
    mode_args: tuple[str, ...]
    description: str
    default_on: tuple[str, ...]  # engines whose default plan includes it
    multiplies_clients: bool = False  # clients = threads x --clients-per-thread (pgbench)


WORKLOADS: dict[str, Workload] = {
    w.name: w
    for w in (
        Workload("pgbench-tpcb", (PG,), pgbench, (), "pgbench's built-in TPC-B-like script", (PG,), True),
        Workload("pgbench-select-only", (PG,), pgbench, ("-S",), "pgbench -S: one primary-key SELECT", (PG,), True),
        Workload("pgbench-simple-update", (PG,), pgbench, ("-N",),
                 "pgbench -N: TPC-B without the hot branch/teller updates", (PG,), True),
        Workload("sysbench-read-only", (PG, MY), sysbench, ("oltp_read_only",), "sysbench oltp_read_only", (MY,)),
        Workload("sysbench-write-only", (PG, MY), sysbench, ("oltp_write_only",), "sysbench oltp_write_only", (MY,)),
        Workload("sysbench-read-write", (PG, MY), sysbench, ("oltp_read_write",), "sysbench oltp_read_write", (MY,)),
        Workload("mysqlslap", (MY,), mysqlslap, (), "mysqlslap --auto-generate-sql", (MY,)),
        Workload("tpcc-like", (PG, MY), tpcc, (), "TPC-C-like mix on sysbench (tpcc_like.lua)", ()),
    )
}


def binary(tool: ModuleType) -> str:
    """The executable a tool module runs (tpcc-like runs sysbench)."""
    return getattr(tool, "BINARY", tool.TOOL)


def resolve(names: list[str], engine: str) -> list[Workload]:
    """Workloads by name, in the order given; a clear usage error for any unknown one
    or one the engine cannot run."""
    chosen = []
    for name in names:
        if name not in WORKLOADS:
            raise UsageError(f"unknown workload {name!r} (known: {', '.join(WORKLOADS)})")
        workload = WORKLOADS[name]
        if engine not in workload.engines:
            raise UsageError(
                f"workload {name!r} cannot run on engine {engine!r} (it runs on: {', '.join(workload.engines)})"
            )
        if workload not in chosen:
            chosen.append(workload)
    return chosen


def default_names(engine: str) -> list[str]:
    return [w.name for w in WORKLOADS.values() if engine in w.default_on]
