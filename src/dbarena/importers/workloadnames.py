"""The workload names an import may store, and the tools' own names for them: the one
table `--workload`, a CSV's `workload` column and a sysbench command line's script are
read through. Two names for one workload would put its points in two configurations
that never pool (configuration keys hold the workload's name), and a name no workload
has (`--workload foo`, a typo) would be a configuration of its own.

Known names: the registry's (dbarena.workloads: what `run` and `study` measure), and a
few that only imports have, for scripts dbarena does not run itself (IMPORTED_ONLY).
"""

from __future__ import annotations

from dbarena import workloads
from dbarena.errors import UsageError

# Workloads dbarena does not run but published results measured, named as the importer
# names them when a command line (or perf stat report) names their script.
IMPORTED_ONLY: dict[str, str] = {
    "sysbench-tpcc": "Percona-Lab's sysbench-tpcc (tpcc.lua), read from its command line or given",
    "hammerdb-tprocc": "HammerDB's TPROC-C (derived from TPC-C), read from its output",
    "go-tpc-tpcc": "go-tpc's TPC-C (tiup bench tpcc), read from its output",
    "go-tpc-ch": "go-tpc's CH-benCHmark (TPC-C with TPC-H queries alongside: tiup bench ch), read from its output",
}

# What the importer stores when the output does not say which script ran (progress
# lines only, a sysbench run without a command line): never given with --workload.
UNNAMED = ("pgbench", "sysbench")

# The tools' own names -> dbarena's: sysbench's scripts (oltp_read_write), pgbench's
# built-in scripts (`-b tpcb-like`), tpcc.lua's name for sysbench-tpcc.
_PGBENCH_BUILTINS = {"tpcb-like": "pgbench-tpcb", "simple-update": "pgbench-simple-update",
                     "select-only": "pgbench-select-only"}


def _tool_names() -> dict[str, str]:
    names = {w.mode_args[0]: w.name for w in workloads.WORKLOADS.values()
             if w.tool.name == "sysbench" and w.mode_args}
    names.update(_PGBENCH_BUILTINS)
    names["tpcc"] = "sysbench-tpcc"
    names["tpcc_like"] = "tpcc-like"
    return names


TOOL_NAMES: dict[str, str] = _tool_names()


def known() -> list[str]:
    """Every name a workload may be given by: dbarena's, then the tools' own."""
    return [*workloads.WORKLOADS, *IMPORTED_ONLY, *TOOL_NAMES]


def canonical(name: str) -> str | None:
    """dbarena's name for a workload named `name` (its own, or the tool's), or None."""
    if name in workloads.WORKLOADS or name in IMPORTED_ONLY:
        return name
    return TOOL_NAMES.get(name)


def of_script(stem: str) -> str:
    """dbarena's name for a sysbench script a command line names (oltp_point_select ->
    sysbench-point-select, tpcc -> sysbench-tpcc). A script no workload is known for (a
    study's own .lua) keeps its name, as `sysbench-` and its stem: the file says what
    ran, and two such scripts must not pool; only a name typed with --workload must be
    a known one."""
    return TOOL_NAMES.get(stem) or "sysbench-" + stem.replace("_", "-")


def checked(name: str, what: str = "--workload") -> str:
    """dbarena's name for `name`; a UsageError of one line listing the known names."""
    found = canonical(name)
    if found is None:
        raise UsageError(f"{what}: unknown workload {name!r} (known: {', '.join([*workloads.WORKLOADS, *IMPORTED_ONLY])};"
                         f" or the tool's own name: {', '.join(TOOL_NAMES)})")
    return found
