"""Workloads: a name, the engines it runs on, the tool that runs it and the tool's
mode arguments. The one registry that `run`, `study` and `import` share.

A tool is a module next to these (pgbench.py, sysbench.py, mysqlslap.py, tpcc.py)
holding pure parsers and a class implementing interfaces.Tool (workloads.base has
the defaults). Adding a tool: one module and one line in TOOLS; adding a workload of
an existing tool (another sysbench Lua script, a pgbench built-in): one line in
WORKLOADS.
"""

from __future__ import annotations

from dataclasses import dataclass

from dbarena.errors import UsageError
from dbarena.interfaces import Tool
from dbarena.workloads import mysqlslap, pgbench, sysbench, tpcc

PG, MY = "postgres", "mysql"

TOOLS: dict[str, Tool] = {t.name: t for t in (pgbench.TOOL_IMPL, sysbench.TOOL_IMPL, mysqlslap.TOOL_IMPL,
                                                tpcc.TOOL_IMPL)}


@dataclass(frozen=True)
class Workload:
    name: str
    engines: tuple[str, ...]
    tool: Tool
    mode_args: tuple[str, ...]
    description: str
    default_on: tuple[str, ...]  # engines whose default plan includes it
    multiplies_clients: bool = False  # clients = threads x clients_per_thread (pgbench)
    required_options: tuple[str, ...] = ()


WORKLOADS: dict[str, Workload] = {
    w.name: w
    for w in (
        Workload("pgbench-tpcb", (PG,), TOOLS["pgbench"], (), "pgbench's built-in TPC-B-like script", (PG,), True),
        Workload("pgbench-select-only", (PG,), TOOLS["pgbench"], ("-S",), "pgbench -S: one primary-key SELECT",
                 (PG,), True),
        Workload("pgbench-simple-update", (PG,), TOOLS["pgbench"], ("-N",),
                 "pgbench -N: TPC-B without the hot branch/teller updates", (PG,), True),
        Workload("pgbench-custom", (PG,), TOOLS["pgbench"], (), "pgbench with the study's script files (option file)",
                 (), True, ("file",)),
        Workload("sysbench-read-only", (PG, MY), TOOLS["sysbench"], ("oltp_read_only",), "sysbench oltp_read_only",
                 (MY,)),
        Workload("sysbench-write-only", (PG, MY), TOOLS["sysbench"], ("oltp_write_only",),
                 "sysbench oltp_write_only", (MY,)),
        Workload("sysbench-read-write", (PG, MY), TOOLS["sysbench"], ("oltp_read_write",),
                 "sysbench oltp_read_write", (MY,)),
        Workload("sysbench-point-select", (PG, MY), TOOLS["sysbench"], ("oltp_point_select",),
                 "sysbench oltp_point_select: one primary-key SELECT", ()),
        Workload("sysbench-insert", (PG, MY), TOOLS["sysbench"], ("oltp_insert",),
                 "sysbench oltp_insert: one INSERT (the tables grow)", ()),
        Workload("sysbench-delete", (PG, MY), TOOLS["sysbench"], ("oltp_delete",),
                 "sysbench oltp_delete: one DELETE (rows are not put back: fresh tables at each point)",
                 ()),
        Workload("sysbench-update-index", (PG, MY), TOOLS["sysbench"], ("oltp_update_index",),
                 "sysbench oltp_update_index: one UPDATE of an indexed column", ()),
        Workload("sysbench-update-non-index", (PG, MY), TOOLS["sysbench"], ("oltp_update_non_index",),
                 "sysbench oltp_update_non_index: one UPDATE of a column without index", ()),
        Workload("sysbench-select-random-points", (PG, MY), TOOLS["sysbench"], ("select_random_points",),
                 "sysbench select_random_points: SELECT ... WHERE k IN (10 random values), on sbtest1", ()),
        Workload("sysbench-select-random-ranges", (PG, MY), TOOLS["sysbench"], ("select_random_ranges",),
                 "sysbench select_random_ranges: count(k) over 10 random BETWEEN ranges, on sbtest1", ()),
        Workload("sysbench-bulk-insert", (PG, MY), TOOLS["sysbench"], ("bulk_insert",),
                 "sysbench bulk_insert: multi-row INSERTs into an empty table per thread (a transaction is a row)",
                 ()),
        Workload("mysqlslap", (MY,), TOOLS["mysqlslap"], (), "mysqlslap --auto-generate-sql", (MY,)),
        Workload("tpcc-like", (PG, MY), TOOLS["tpcc-like"], (), "TPC-C-like mix on sysbench (tpcc_like.lua)", ()),
    )
}


def get(name: str) -> Workload:
    if name not in WORKLOADS:
        raise UsageError(f"unknown workload {name!r} (known: {', '.join(WORKLOADS)})")
    return WORKLOADS[name]


def resolve(names: list[str], engine: str) -> list[Workload]:
    """Workloads by name, in the order given; a clear usage error for any unknown one
    or one the engine cannot run."""
    chosen = []
    for name in names:
        workload = get(name)
        if engine not in workload.engines:
            raise UsageError(
                f"workload {name!r} cannot run on engine {engine!r} (it runs on: {', '.join(workload.engines)})"
            )
        if workload not in chosen:
            chosen.append(workload)
    return chosen


def default_names(engine: str) -> list[str]:
    return [w.name for w in WORKLOADS.values() if engine in w.default_on]
