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

import contextlib
import os
import platform
from pathlib import Path
from typing import Sequence

from dbarena import state
from dbarena.errors import EnvironmentProblem

CONTROL = Path("/sys/devices/system/cpu/smt/control")

_CANNOT = {
    "notsupported": "the kernel says notsupported (a VM, or a CPU without SMT)",
    "notimplemented": "the kernel says notimplemented (no SMT switch on this architecture)",
    "forceoff": "SMT is forced off at boot (nosmt=force)",
}


def read(control: Path | None = None) -> str:
    """The switch's state: on, off, a number (POWER), forceoff, notsupported,
    notimplemented; "unknown" without the file (an old kernel, another OS)."""
    try:
        return (control or CONTROL).read_text().strip() or "unknown"
    except OSError:
        return "unknown"


def refusal(modes: Sequence[str], control: Path | None = None, *, machine: str | None = None,
            root: bool | None = None) -> str | None:
    """Why this machine cannot switch between `modes` ("on", "off", "2" ...), or None.
    Asked before anything starts, so that a study is refused in one line."""
    control = control or CONTROL
    now = read(control)
    if now == "unknown":
        return f"{control} is missing (a kernel without SMT control)"
    if now in _CANNOT:
        return f"this machine cannot switch SMT ({_CANNOT[now]})"
    if not (os.geteuid() == 0 if root is None else root) or not os.access(control, os.W_OK):
        return f"switching SMT writes {control}, which needs root"
    numbers = [m for m in modes if m.isdigit()]
    arch = machine if machine is not None else platform.machine()
    if numbers and not (arch.startswith("ppc") or now.isdigit()):
        return (f"threads per core ({', '.join(numbers)}) are a POWER kernel's SMT modes; this {arch} kernel "
                "switches SMT on and off only")
    return None


class Switch:
    """Sets the kernel's SMT mode for a study's variants and puts the original back.

    Use as a context manager around the whole study: `set` between variants, the
    original restored on leaving however the study ends."""

    def __init__(self, control: Path | None = None) -> None:
        self.control = control or CONTROL
        self.original: str | None = None
        self._record: state.Record | None = None
        self._affinity: set[int] | None = None

    def __enter__(self) -> Switch:
        return self

    def __exit__(self, *exc: object) -> None:
        self.restore()

    @property
    def mode(self) -> str:
        return read(self.control)

    def set(self, mode: str) -> None:
        if self.original is None:
            self.original = read(self.control)
            # Written before the first switch: a killed dbarena leaves a record that
            # says what the machine's state was, and its reaper puts it back.
            self._record = state.smt(str(self.control), self.original)
            self._affinity = set(os.sched_getaffinity(0))
        if read(self.control) != mode:
            write(self.control, mode)
            self._widen()

    def restore(self) -> None:
        if self.original is None:
            return
        try:
            if read(self.control) != self.original:
                write(self.control, self.original)
                self._widen()
        finally:
            if self._record is not None:
                self._record.remove()
            self.original, self._record = None, None


    def _widen(self) -> None:
        # A CPU taken offline can drop out of this process's affinity for good (cgroup
        # v1 cpusets do that); CPUs back online belong to it again, as before the study.
        if self._affinity:
            with contextlib.suppress(OSError):
                os.sched_setaffinity(0, self._affinity)


def write(control: Path, mode: str) -> None:
    """One write; the kernel takes the CPUs offline or online before it returns."""
    try:
        control.write_text(mode)
    except OSError as exc:
        raise EnvironmentProblem(f"could not set SMT to {mode} through {control}: {exc.strerror or exc}") from None
