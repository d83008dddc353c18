"""Terminal output: the console (its width on a terminal and in a pipe), the progress bar
over a sweep and a line per point. The tables printed on it: report/listings.py."""

from __future__ import annotations

import os
import re
import sys
from dataclasses import replace
from typing import IO, Any, Callable, Iterable, Sequence, cast

from rich.console import Console, RenderableType
from rich.markup import escape
from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn, TimeRemainingColumn

from dbarena.limits import printable
from dbarena.model import PointResult, PointSpec, Sample
from dbarena.report.fitting import Column, FittedTable

# Width of output that is not a terminal (a pipe, a log file), unless COLUMNS says: 100
# columns read whole in `less` and in an editor or a CI log beside another window, and
# every table fits it (report/fitting.py leaves columns out rather than fold cells).
# Wider would make every line of a log as long as its widest table.
PIPE_WIDTH = 100


class _Unpadded:
    """A stream that drops the spaces rich pads the ends of lines with (tables are
    padded to their width, wrapped text keeps the space it broke at), also where colour
    codes (FORCE_COLOR) stand between them: the codes are kept, the spaces go."""

    _CODE_BODY = re.compile(r"[0-9;]*")

    def __init__(self, file: IO[str]):
        self.file = file
        self.held = ""  # spaces at the end of a write: padding only if a line break follows

    def write(self, text: str) -> int:
        text = self.held + text
        kept = text.rstrip(" ")
        self.held = text[len(kept):]
        lines = kept.split("\n")
        # Every line a line break ends loses its padding; the last is still open.
        self.file.write("\n".join([*map(self._unpadded, lines[:-1]), lines[-1]]))
        return len(text)

    @classmethod
    def _unpadded(cls, line: str) -> str:
        """The line without the spaces at its end, those between colour codes too, the
        codes kept. Walked back from the end, once: a regular expression tried at every
        space of a wide row took time in the square of its width (a 20,000-character
        label: 48 s)."""
        end = len(line.rstrip(" "))
        codes: list[str] = []
        while end and line[end - 1] == "m":
            start = line.rfind("\x1b[", 0, end)
            if start < 0 or not cls._CODE_BODY.fullmatch(line, start + 2, end - 1):
                break
            codes.append(line[start:end])
            end = start
            while end and line[end - 1] == " ":  # (each space looked at once, then dropped)
                end -= 1
        return line[:end] + "".join(reversed(codes))

    def flush(self) -> None:
        self.file.flush()

    def isatty(self) -> bool:
        return False

    @property
    def encoding(self) -> str:
        return getattr(self.file, "encoding", None) or "utf-8"


def _isatty(stream: IO[str]) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # no such method, or a closed stream
        return False


def is_terminal(stderr: bool = False) -> bool:
    return _isatty(sys.stderr if stderr else sys.stdout)


def console(stderr: bool = False) -> Console:
    """A console on stdout (stderr): the terminal's width there; elsewhere (a pipe, a
    file, a CI log) PIPE_WIDTH or COLUMNS and no padding at the ends of lines, whatever
    rich makes of the environment (FORCE_COLOR or TTY_COMPATIBLE make it take a pipe
    for a terminal: colours then, as asked, but not a terminal's width and padding)."""
    stream = sys.stderr if stderr else sys.stdout
    if _isatty(stream):
        return Console(stderr=stderr)
    columns = os.environ.get("COLUMNS", "")
    width = int(columns) if columns.isdigit() and int(columns) > 0 else PIPE_WIDTH
    # stderr carries no table: its lines (the stages, a line per point) stay whole in a log.
    return Console(file=cast(IO[str], _Unpadded(stream)), width=width, soft_wrap=stderr)


def fitted(title: str | None, columns: Sequence[Column], rows: Iterable[Any], wide: bool = False,
            notes: Sequence[str] = ()) -> FittedTable:
    """A FittedTable whose every cell, title and note is printable (limits.printable):
    a label, host, error or warning holds whatever a user, a tool or another store put
    in it, and an ESC sequence printed raw would act on the terminal (retitle the window,
    clear the screen) instead of showing. Rich's markup is left as it is."""
    def clean(column: Column) -> Column:
        cell = column.cell
        return replace(column, header=printable(column.header, keep="\n"),
                       cell=lambda r: printable(cell(r), keep="\n"))

    return FittedTable(printable(title) if title is not None else None, [clean(c) for c in columns], rows, wide,
                       [printable(n) for n in notes])


def show(out: Console, *renderables: RenderableType) -> None:
    """Print tables whole: one left wider than the console (--wide) is not cropped."""
    for renderable in renderables:
        out.print(renderable, crop=False)


def fmt(value: object, digits: int = 2) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:,.{digits}f}"
    return f"{value:,}" if isinstance(value, int) else str(value)


def point_line(result: PointResult) -> str:
    spec = result.spec
    head = f"{spec.engine} {spec.workload} threads={spec.threads} clients={spec.clients}"
    if spec.variant:
        head += f" variant={spec.variant}"
    rate = spec.option("rate")
    if rate is not None:  # an open-loop point (--slo's search)
        head += f" offered={rate} TPS"
    head = printable(head)  # (a variant's name, a tool's error: text that must not act on the terminal)
    if not result.ok:
        return f"[red]failed[/] {escape(head)}: {escape(printable(result.error or ''))}"
    m = result.measurement
    assert m is not None  # an ok point has its measurement
    figures = []
    if m.tps is not None:
        figures.append(f"{m.tps:,.1f} tps")
    if m.qps is not None:
        figures.append(f"{m.qps:,.1f} qps")
    if m.latency_avg_ms is not None:
        figures.append(f"latency avg {m.latency_avg_ms:.3f} ms")
    shown = [(name, v) for name, v in (("p50", m.latency_p50_ms), ("p95", m.latency_p95_ms),
                                         ("p99", m.latency_p99_ms)) if v is not None]
    if shown:
        figures.append(" ".join(f"{name} {v:.3f}" for name, v in shown) + " ms")
    if m.run_avg_s is not None:
        figures.append(f"{m.run_avg_s:.3f} s for all queries")
    return f"[green]ok[/]     {escape(head)}: {', '.join(figures)}"


class TerminalReporter:
    """A progress bar with ETA over the expected seconds of the whole plan, a line per
    finished point (interfaces.Reporter)."""

    def __init__(self, out: Console):
        self.out = out
        self.plan: list[PointSpec] = []
        self.estimate_s: Callable[[PointSpec], float] = lambda spec: spec.duration_s
        self.expected: dict[int, float] = {}
        self.done_s = 0.0
        self.progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            TaskProgressColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=out,
            transient=True,
            # Drawn by a thread of its own while a point runs, at the benchmark's
            # priority: at rich's 10 a second it was three quarters of dbarena's CPU
            # during a point (6 ms a second), even into a pipe, where nothing shows. Once
            # a second is what the bar's seconds move by; off where there is no terminal.
            refresh_per_second=1,
            disable=not out.is_terminal,
        )
        self.task = self.progress.add_task("starting", total=1)

    def begin(self, plan: Sequence[PointSpec], estimate_s: Callable[[PointSpec], float]) -> None:
        self.plan = list(plan)
        self.estimate_s = estimate_s
        self.expected = {i: estimate_s(p) for i, p in enumerate(plan)}
        self.progress.update(self.task, total=sum(self.expected.values()) or 1)
        self.progress.start()

    def replan(self, first_index: int, remaining: Sequence[PointSpec]) -> None:
        # Adaptive repeats: the points still to come changed; the bar and its ETA follow.
        self.plan = self.plan[:first_index] + list(remaining)
        self.expected = {i: s for i, s in self.expected.items() if i < first_index}
        self.expected.update({first_index + i: self.estimate_s(p) for i, p in enumerate(remaining)})
        self.progress.update(self.task, total=sum(self.expected.values()) or 1)

    def end(self) -> None:
        self.progress.stop()

    def stage(self, text: str) -> None:
        self.progress.console.print(f"[dim]{escape(text)}[/]")
        self.progress.update(self.task, description=escape(text))

    def point_started(self, index: int, spec: PointSpec) -> None:
        variant = f" [{spec.variant}]" if spec.variant else ""
        self.progress.update(
            self.task,
            description=f"[{index + 1}/{len(self.plan)}] {escape(spec.workload)} threads={spec.threads}{escape(variant)}"
                        + (f" offered={escape(rate)} TPS" if (rate := spec.option("rate")) is not None else ""),
        )

    def sample(self, spec: PointSpec, sample: Sample) -> None:
        self.progress.update(self.task, completed=self.done_s + min(sample.second, spec.duration_s))

    def point_finished(self, index: int, result: PointResult) -> None:
        self.done_s += self.expected.get(index, result.spec.duration_s)
        self.progress.update(self.task, completed=self.done_s)
        self.progress.console.print(point_line(result))
