"""The kernel's SMT switch for a study's variants, with its safety record.

host/smt.py reads and writes the switch; this module makes a study's use of it safe:
a state record written before the first switch (so that a killed dbarena's reaper
puts it back), one switching study at a time, and the original state restored however
the study ends, shielded from a second Ctrl-C.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Sequence

from dbarena.errors import EnvironmentProblem
from dbarena.host import hostinfo, smt
from dbarena.lifecycle import state
from dbarena.shield import shielded


def refusal(modes: Sequence[str], control: Path | None = None, *, machine: str | None = None,
            root: bool | None = None) -> str | None:
    """Why this machine cannot switch between `modes` ("on", "off", "2" ...), or None.
    Asked before anything starts, so that a study is refused in one line."""
    control = control or smt.CONTROL
    why = smt.machine_refusal(modes, control, machine=machine, root=root)
    if why is not None:
        return why
    other = holder(control)
    if other is not None:
        # Its "original" would be our switched state: one study switches at a time.
        return f"another dbarena process (pid {other}) has switched SMT and not yet put it back"
    return None


def holder(control: Path) -> int | None:
    """The live dbarena process of this host that has `control` switched, if any."""
    for _, data in state.records():
        if data.get("kind") == "smt" and data.get("control") == str(control) and not state.orphaned(data) \
                and data.get("owner_pid") != os.getpid() and state.ours(data):
            return data.get("owner_pid")
    return None


class Switch:
    """Sets the kernel's SMT mode for a study's variants and puts the original back.

    Use as a context manager around the whole study, or call `restore` in a finally:
    `set` between variants, the original restored however the study ends."""

    def __init__(self, control: Path | None = None) -> None:
        self.control = control or smt.CONTROL
        self.original: str | None = None
        self._record: state.Record | None = None
        self._affinity: set[int] | None = None
        self._online: set[int] | None = None  # the CPUs online before the study
        self.changed = False  # whether it ever wrote the switch

    def __enter__(self) -> Switch:
        return self

    def __exit__(self, kind: type[BaseException] | None, *rest: object) -> None:
        problem = self.restore()
        if problem and kind is None:  # never in place of the error already on its way
            raise EnvironmentProblem(problem)

    @property
    def mode(self) -> str:
        return smt.read(self.control)

    def set(self, mode: str) -> None:
        if self.original is None:
            self.original = smt.read(self.control)
            self._affinity = smt.allowed_cpus()
            self._online = smt.online_cpus(self.control)
            # Written before the first switch: a killed dbarena leaves a record that
            # says what the machine's state was, and its reaper puts it back.
            self._record = state.smt(str(self.control), self.original,
                                     None if self._online is None else hostinfo.cpu_list(self._online))
        if smt.read(self.control) != mode:
            smt.write(self.control, mode)
            self.changed = True
            self._widen()

    def restore(self) -> str | None:
        """The original state back, shielded from a second Ctrl-C. None when it is (or
        nothing was switched); else why not, in one line, and the record stays, so
        that `dbarena cleanup` (and every later command) tries again."""
        if self.original is None:
            return None
        original = self.original
        with shielded():
            try:
                if smt.read(self.control) != original:
                    smt.write(self.control, original)
                    self._widen()
            except EnvironmentProblem as exc:
                return (f"{exc}; SMT is left {smt.read(self.control)}: put it back with "
                        f"`echo {original} > {self.control}`, or `dbarena cleanup`")
            stuck = smt.put_online_back(self.control, self._online) if self.changed and self._online is not None else []
            if stuck:
                return (f"SMT is {original} again, but CPU(s) {hostinfo.cpu_list(set(stuck))} could not be set "
                        f"online or offline as before the study (…/cpuN/online); `dbarena cleanup` tries again")
            if self._record is not None:
                self._record.remove()
            self.original, self._record = None, None
        return None

    def _widen(self) -> None:
        # CPUs taken offline drop out of what a process may use, and do not all come
        # back with them (cgroup v1 cpusets keep them out): the process gets every CPU
        # it had before the study again. The server and tools started later inherit it.
        if self._affinity:
            with contextlib.suppress(OSError):
                os.sched_setaffinity(0, self._affinity)
