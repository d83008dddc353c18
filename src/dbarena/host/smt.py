"""The kernel's SMT switch, /sys/devices/system/cpu/smt/control, for a study's [cpus]
smt axis (study C: one curve per SMT mode).

Writing "off" takes every core's sibling threads offline, "on" brings them back; on
POWER (Linux 6.7+, powerpc's dynamic SMT) a number leaves that many threads per core.
The switch is machine-wide, so the session runs one SMT mode's variants at a time
and starts their servers after the switch (a server started before it would keep an
affinity naming CPUs that went away).

Whatever happens, the machine gets its original state back: at the end of the study,
on an error, on Ctrl-C; and if dbarena is killed, its watchdog or the next command
does it from the record written before the first switch (state.py, kind "smt").
"""

from __future__ import annotations

import os
import platform
import re
from pathlib import Path
from typing import Sequence

from dbarena.host import hostinfo
from dbarena.errors import EnvironmentProblem

CONTROL = Path("/sys/devices/system/cpu/smt/control")

_CANNOT = {
    "notsupported": "the kernel says notsupported (a VM, or a CPU without SMT)",
    "notimplemented": "the kernel says notimplemented (no SMT switch on this architecture)",
    "forceoff": "SMT is forced off at boot (nosmt=force)",
}


def restorable(state: str) -> bool:
    """Whether `state` is one the switch may be found in and set back to: on, off, or a
    number of threads per core (not forceoff: once written, only a reboot undoes it)."""
    return state in ("on", "off") or re.fullmatch(r"[1-9][0-9]?", state) is not None


def read(control: Path | None = None) -> str:
    """The switch's state: on, off, a number (POWER), forceoff, notsupported,
    notimplemented; "unknown" without the file (an old kernel, another OS)."""
    try:
        return (control or CONTROL).read_text().strip() or "unknown"
    except OSError:
        return "unknown"


def machine_refusal(modes: Sequence[str], control: Path | None = None, *, machine: str | None = None,
            root: bool | None = None) -> str | None:
    """Why this machine cannot switch between `modes` ("on", "off", "2" ...), or None:
    the kernel, root, /sys and the architecture (the SMT switch's own refusal adds
    another dbarena process holding the switch)."""
    control = control or CONTROL
    now = read(control)
    if now == "unknown":
        return f"{control} is missing (a kernel without SMT control)"
    if now in _CANNOT:
        return f"this machine cannot switch SMT ({_CANNOT[now]})"
    if not (os.geteuid() == 0 if root is None else root):
        return f"switching SMT writes {control}, which needs root"
    if not os.access(control, os.W_OK):
        return f"{control} cannot be written (a read-only /sys, as in a container)"
    numbers = [m for m in modes if m.isdigit()]
    arch = machine if machine is not None else platform.machine()
    if numbers and not (arch.startswith("ppc") or now.isdigit()):
        return (f"threads per core ({', '.join(numbers)}) are a POWER kernel's SMT modes; this {arch} kernel "
                "switches SMT on and off only")
    return None


def online_cpus(control: Path) -> set[int] | None:
    """The CPUs online now (the kernel's list beside the switch's directory), None
    where there is no such list."""
    try:
        return hostinfo.parse_cpu_list((control.parent.parent / "online").read_text())
    except (OSError, ValueError):
        return None


def put_online_back(control: Path, online: set[int]) -> list[int]:
    """Each CPU online or offline as it was before the study: writing "on" brings every
    present CPU online, also one an administrator had taken offline. The CPUs that
    could not be set."""
    now = online_cpus(control)
    if now is None:
        return []
    stuck = []
    for cpu, value in [(c, "0") for c in sorted(now - online)] + [(c, "1") for c in sorted(online - now)]:
        try:
            (control.parent.parent / f"cpu{cpu}" / "online").write_text(value)
        except OSError:
            stuck.append(cpu)
    return stuck


def allowed_cpus() -> set[int]:
    """The CPUs this process may run on, offline ones included (the kernel's
    sched_getaffinity leaves those out: with SMT off, the siblings)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Cpus_allowed_list:"):
                return hostinfo.parse_cpu_list(line.split(":", 1)[1])
    except (OSError, ValueError):
        pass
    return set(os.sched_getaffinity(0))


def write(control: Path, mode: str) -> None:
    """One write; the kernel takes the CPUs offline or online before it returns."""
    try:
        control.write_text(mode)
    except OSError as exc:
        raise EnvironmentProblem(f"could not set SMT to {mode} through {control}: {exc.strerror or exc}") from None
