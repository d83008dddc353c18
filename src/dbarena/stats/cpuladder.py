"""The CPU ladder: what the machine's figures say bound a point or a level, where the
server's waits decided nothing. Its steps, their order, their thresholds
(stats/thresholds.py) and their words, declared once for the two views that say it: a
point's bound (stats/bound.py, derived whenever its figures are), and a side's "why" in the
decision (stats/decision.py).

From the top: storage (iowait past thresholds.IOWAIT_PCT), the load generator (its CPU
past SATURATED of the cores it could use), the server's CPU (past SATURATED of the
hardware threads it could use), the machine's CPU (busy past SATURATED); else no single
bound. Pure: figures in, a step out.
"""

from __future__ import annotations

from dataclasses import dataclass

from dbarena.serverside.waits import IO, LOADGEN, SERVER_CPU
from dbarena.stats import thresholds

__all__ = ["MACHINE_CPU", "NONE", "TOO_FEW", "Figures", "Step", "step"]

MACHINE_CPU = "machine CPU"
NONE = "no single bound"
# What a side without enough samples is said to be (no step is taken from nothing).
TOO_FEW = "too few samples to tell"

# Each step's words before its figures.
_HEADLINE = {IO: "I/O", LOADGEN: "load generator saturated", SERVER_CPU: "server CPU saturated",
             MACHINE_CPU: "machine CPU saturated", NONE: NONE}


@dataclass(frozen=True, slots=True, kw_only=True)
class Figures:
    """A point's (or a level's mean) machine figures, None where not sampled: the CPU
    busy and in iowait (% of the machine), the server's and the load generator's CPU
    (in cores, 1.0 = one hardware thread busy); the hardware threads the server could
    use, and the load generator's threads with the cores it could use (a thread cannot
    use more than a core, nor the threads more than the cores there are)."""

    busy_pct: float | None
    iowait_pct: float | None
    server_cpu: float | None
    loadgen_cpu: float | None
    server_threads: int
    loadgen_threads: int
    loadgen_cores: int

    def cpu_words(self) -> str:
        """The machine's CPU figures as the machine and no-single-bound steps give them."""
        parts = [f"CPU {self.busy_pct:.0f} % busy" if self.busy_pct is not None else "",
                 f"server {self.server_cpu:.1f} cores" if self.server_cpu is not None else "",
                 f"load generator {self.loadgen_cpu:.1f} cores" if self.loadgen_cpu is not None else ""]
        return ", ".join(p for p in parts if p)


@dataclass(frozen=True, slots=True)
class Step:
    """The step the figures stop at: its kind (bound.KINDS: IO, LOADGEN, SERVER_CPU,
    MACHINE_CPU or NONE) and the figures that say so, in words ("" where none was
    sampled)."""

    kind: str
    figures: str

    def words(self) -> str:
        """The step as a sentence: "server CPU saturated (1.9 of 2 hardware threads)"."""
        if not self.figures:
            return TOO_FEW if self.kind == NONE else _HEADLINE[self.kind]
        return f"{_HEADLINE[self.kind]} ({self.figures})"


def step(f: Figures) -> Step:
    """Where the ladder stops for these figures (see the module's docstring)."""
    if f.iowait_pct is not None and f.iowait_pct >= thresholds.IOWAIT_PCT:
        return Step(IO, f"iowait {f.iowait_pct:.0f} %")
    usable = max(1, min(f.loadgen_threads, f.loadgen_cores))
    if f.loadgen_cpu is not None and f.loadgen_cpu >= thresholds.SATURATED * usable:
        return Step(LOADGEN, f"{f.loadgen_cpu:.1f} cores for {f.loadgen_threads} thread(s)")
    if f.server_cpu is not None and f.server_cpu >= thresholds.SATURATED * f.server_threads:
        return Step(SERVER_CPU, f"{f.server_cpu:.1f} of {f.server_threads} hardware threads")
    if f.busy_pct is not None and f.busy_pct >= thresholds.SATURATED_PCT:
        return Step(MACHINE_CPU, f.cpu_words())
    return Step(NONE, f.cpu_words())
