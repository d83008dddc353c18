"""[cpus]: which CPUs each variant's server and load generator run on, chosen (and
refused, in one line) before anything starts; and whether the study's SMT axis is
the kernel's switch or emulated by affinity."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Sequence

from dbarena.run import plan
from dbarena.errors import UsageError
from dbarena.host import hostinfo, smt, topology
from dbarena.lifecycle import smt_switch
from dbarena.records import JSONObject
from dbarena.study import Study


@dataclass(frozen=True)
class Placement:
    """Where a variant's server and load generator run ([cpus]): CPU numbers."""

    server: tuple[int, ...]
    loadgen: tuple[int, ...]
    cores: int
    smt: str | None
    note: str = ""
    smt_by: str | None = None  # how the SMT mode was made: the kernel's switch, or affinity

    def facts(self) -> JSONObject:
        return {"server": hostinfo.cpu_list(set(self.server)), "server_cores": self.cores,
                "server_threads": len(self.server), "load_generator": hostinfo.cpu_list(set(self.loadgen)),
                "smt": self.smt, "smt_by": self.smt_by, "note": self.note or None}

    def key(self) -> dict[str, str]:
        # Part of every point's configuration: the CPUs are what the variant is about.
        return {"cpus.server": hostinfo.cpu_list(set(self.server)),
                "cpus.load_generator": hostinfo.cpu_list(set(self.loadgen)),
                **({"cpus.smt": self.smt} if self.smt else {})}


def _smt_threads(smt: str | None) -> bool | int:
    """A [cpus] smt mode as whole_cores takes it: "on" every sibling, "off" one thread
    per core, "2", "4" ... that many threads per core (POWER's SMT modes)."""
    if smt is None or smt == "on":
        return True
    return False if smt == "off" else int(smt)


def kernel_smt(study: Study, plans: Sequence[plan.EnginePlan]) -> bool:
    """Whether the study's [cpus] smt axis is the kernel's switch (smt.py) rather than
    emulated by affinity; refused in one line, before anything starts, where this
    machine cannot switch (a VM, no root, a mode its kernel lacks)."""
    modes = sorted({mode for p in plans for _, mode in p.placement.values() if mode})
    if not modes or study.smt_emulate:
        return False
    why = smt_switch.refusal(modes)
    if why:
        raise UsageError(f"[cpus] smt: {why}; emulate it with [cpus] smt_emulate = true (the SMT modes by "
                         "affinity: that many threads of each core)")
    return True


def placements(study: Study, plans: Sequence[plan.EnginePlan], *, kernel: bool = False,
               switched: bool = False) -> dict[tuple[str, str], Placement]:
    """The CPUs of every [cpus] variant, chosen (and refused, in one line) before
    anything starts: N whole physical cores of the CPUs this process may use, spread
    over the sockets; the load generator on the rest, or on the same CPUs when asked
    or when nothing is left. `kernel`: the SMT mode is the kernel's switch; once it is
    `switched`, a core's online threads are the mode's (before, the check counts the
    threads the mode will leave online)."""
    wanted = [(p.engine.name, v, cores, mode) for p in plans for v, (cores, mode) in p.placement.items() if cores]
    if not wanted:
        return {}
    cpus = topology.read()
    usable = set(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else {c.cpu for c in cpus}
    out: dict[tuple[str, str], Placement] = {}
    for engine, variant, cores, mode in wanted:
        server = topology.whole_cores(cpus, cores, smt=True if switched else _smt_threads(mode), usable=usable)
        rest = sorted(usable - set(server))
        note = ""
        if study.load_generator == "same" or not rest:
            if study.load_generator == "rest":
                note = "no CPU left for the load generator: it shares the server's"
            loadgen = sorted(usable)
        else:
            loadgen = rest
        by = None
        if mode and kernel:
            by = f"kernel ({smt.CONTROL})"
        elif mode:
            by = "affinity ({})".format({"off": "one thread per core", "on": "every thread of each core"}.get(
                mode, f"{mode} threads per core"))
        out[(engine, variant)] = Placement(server=tuple(server), loadgen=tuple(loadgen), cores=cores, smt=mode,
                                           note=note, smt_by=by)
    return out
