"""CPU topology: which hardware threads make which physical cores on which sockets, and
which CPUs a server confined to N whole cores gets (study C: TPS against cores, one
curve per SMT mode). Parsers and choices are pure, tested on real `lscpu -p` captures
(tests/fixtures/topology); `read` asks this machine.

A physical core is (socket, core) as lscpu numbers them: core ids repeat across sockets
on some machines, never the pair. SMT siblings are the CPUs that share a core.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from dbarena import execute
from dbarena.errors import UsageError

@dataclass(frozen=True)
class Cpu:
    cpu: int
    core: int
    socket: int
    node: int = 0


def parse_lscpu_p(text: str) -> list[Cpu]:
    """`lscpu -p` (or `-p=CPU,CORE,SOCKET,NODE`): comment lines, then one line per
    CPU. The header comment names the columns; offline CPUs have empty fields and are
    left out."""
    columns = ["cpu", "core", "socket", "node"]
    cpus = []
    for line in text.splitlines():
        if line.startswith("#"):
            names = [c.strip().lower() for c in line.lstrip("#").split(",")]
            if "cpu" in names and "core" in names:
                columns = names
            continue
        if not line.strip():
            continue
        fields = dict(zip(columns, line.split(",")))
        try:
            cpus.append(Cpu(cpu=int(fields["cpu"]), core=int(fields["core"]), socket=int(fields.get("socket") or 0),
                            node=int(fields.get("node") or 0)))
        except (KeyError, ValueError):
            continue  # an offline CPU: no core, no socket
    return cpus


def parse_lscpu_e(text: str) -> list[Cpu]:
    """`lscpu -e` (`--extended`): a header line naming the columns (CPU NODE SOCKET
    CORE ...; A64FX names CLUSTER instead of SOCKET), then one row per CPU; an offline
    CPU's row has "-" and is left out."""
    lines = [l for l in text.splitlines() if l.strip()]
    if not lines:
        return []
    header = [h.lower() for h in lines[0].split()]
    socket = "socket" if "socket" in header else "cluster" if "cluster" in header else None
    cpus = []
    for line in lines[1:]:
        row = dict(zip(header, line.split()))
        try:
            cpus.append(Cpu(cpu=int(row["cpu"]), core=int(row["core"]),
                            socket=int(row[socket]) if socket else 0, node=int(row.get("node", "0"))))
        except (KeyError, ValueError):
            continue  # offline: "-"
    return cpus


def parse(text: str) -> list[Cpu]:
    """Either listing: `lscpu -p` (comment lines first) or `lscpu -e` (a header row)."""
    first = next((l for l in text.splitlines() if l.strip()), "")
    return parse_lscpu_p(text) if first.startswith("#") or "," in first else parse_lscpu_e(text)


def sockets(cpus: list[Cpu]) -> int:
    return len({c.socket for c in cpus})


def cores(cpus: list[Cpu]) -> dict[tuple[int, int], list[int]]:
    """Physical cores, (socket, core) -> its hardware threads in CPU order."""
    out: dict[tuple[int, int], list[int]] = {}
    for c in sorted(cpus, key=lambda c: c.cpu):
        out.setdefault((c.socket, c.core), []).append(c.cpu)
    return out


def threads_per_core(cpus: list[Cpu]) -> int:
    found = cores(cpus)
    return max((len(t) for t in found.values()), default=1)


def whole_cores(cpus: list[Cpu], n: int, *, smt: bool | int = True, usable: set[int] | None = None,
                avoid: frozenset[int] = frozenset()) -> list[int]:
    """The CPUs of n whole physical cores, spread over the sockets evenly (core 1 on
    socket 0, core 2 on socket 1, ...; study C compared cores, not sockets), each core
    with all its SMT siblings, or only its first thread when `smt` is False (SMT off,
    emulated by affinity), or its first `smt` threads when a number (POWER's SMT1, 2,
    4, 8: threads per core). Only cores whose threads are all usable (the process's
    affinity) count; cores holding a CPU of `avoid` (the load generator's) come last.
    A usage error when there are fewer such cores than n."""
    usable = set(c.cpu for c in cpus) if usable is None else usable
    per_socket: dict[int, list[tuple[tuple[int, int], list[int]]]] = {}
    for key, threads in cores(cpus).items():
        if all(t in usable for t in threads):
            per_socket.setdefault(key[0], []).append((key, threads))
    available = sum(len(v) for v in per_socket.values())
    if n > available:
        raise UsageError(f"{n} physical core(s) asked for; this machine lets dbarena use {available} whole core(s)")
    for found in per_socket.values():
        found.sort(key=lambda item: (any(t in avoid for t in item[1]), item[1][0]))
    picked: list[list[int]] = []
    sockets = sorted(per_socket)
    taken = dict.fromkeys(sockets, 0)
    while len(picked) < n:  # n <= available: every pass over the sockets takes at least one core
        for s in sockets:
            if len(picked) < n and taken[s] < len(per_socket[s]):
                picked.append(per_socket[s][taken[s]][1])
                taken[s] += 1
    if smt is True:
        per_core = None
    elif smt is False:
        per_core = 1
    else:
        per_core = int(smt)
        most = min(len(threads) for threads in picked)
        if per_core > most:
            raise UsageError(f"SMT{per_core} asked for; these cores have {most} hardware thread(s) each")
    return sorted(t for threads in picked for t in threads[:per_core])


def usable_cores(cpus: list[Cpu] | None = None, usable: set[int] | None = None) -> int:
    """How many whole physical cores this process may use (its affinity)."""
    cpus = read() if cpus is None else cpus
    if usable is None:
        usable = set(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else {c.cpu for c in cpus}
    return sum(1 for threads in cores(cpus).values() if all(t in usable for t in threads))


def read() -> list[Cpu]:
    """This machine's topology from lscpu (util-linux), else from sysfs."""
    try:
        done = execute.run(["lscpu", "-p=CPU,CORE,SOCKET,NODE"], timeout=30, env={**os.environ, "LC_ALL": "C"})
        if done.returncode == 0:
            found = parse_lscpu_p(done.stdout)
            if found:
                return found
    except Exception:  # noqa: BLE001 - no lscpu: sysfs below
        pass
    return read_sysfs() or [Cpu(cpu=i, core=i, socket=0) for i in range(os.cpu_count() or 1)]


def read_sysfs() -> list[Cpu]:
    """The online CPUs' (package, core) from /sys/devices/system/cpu: no subprocess."""
    out = []
    for path in sorted(Path("/sys/devices/system/cpu").glob("cpu[0-9]*/topology")):
        try:
            out.append(Cpu(cpu=int(path.parent.name[3:]), core=int((path / "core_id").read_text()),
                           socket=int((path / "physical_package_id").read_text())))
        except (OSError, ValueError):
            continue
    return out
