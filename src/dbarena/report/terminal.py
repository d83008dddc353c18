"""Terminal output: the progress bar over a sweep, a line per point, result tables."""

from __future__ import annotations

from typing import Iterable, Sequence

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn, TimeRemainingColumn
from rich.table import Table

from dbarena.model import PointResult, PointSpec, Sample


def console(stderr: bool = False) -> Console:
    c = Console(stderr=stderr)
    if not c.is_terminal:
        # A log file or a pipe: do not squeeze tables into 80 columns.
        c = Console(stderr=stderr, width=200)
    return c


def _fmt(value, digits: int = 2) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:,.{digits}f}"
    return f"{value:,}" if isinstance(value, int) else str(value)


def point_line(result: PointResult) -> str:
    spec = result.spec
    head = f"{spec.engine} {spec.workload} threads={spec.threads} clients={spec.clients}"
    if not result.ok:
        return f"[red]failed[/] {escape(head)}: {escape(result.error or '')}"
    m = result.measurement
    figures = []
    if m.tps is not None:
        figures.append(f"{m.tps:,.1f} tps")
    if m.qps is not None:
        figures.append(f"{m.qps:,.1f} qps")
    if m.latency_avg_ms is not None:
        figures.append(f"latency avg {m.latency_avg_ms:.3f} ms")
    if m.latency_p95_ms is not None:
        figures.append(f"p95 {m.latency_p95_ms:.3f} ms")
    if m.run_avg_s is not None:
        figures.append(f"{m.run_avg_s:.3f} s for all queries")
    return f"[green]ok[/]     {escape(head)}: {', '.join(figures)}"


class TerminalReporter:
    """A progress bar with ETA over the planned seconds of the whole sweep."""

    def __init__(self, out: Console, plan: Sequence[PointSpec]):
        self.out = out
        self.plan = plan
        self.done_s = 0
        self.progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            TaskProgressColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=out,
            transient=True,
        )
        self.task = self.progress.add_task("starting", total=sum(p.duration_s for p in plan) or 1)

    def __enter__(self) -> "TerminalReporter":
        self.progress.start()
        return self

    def __exit__(self, *exc) -> None:
        self.progress.stop()

    def stage(self, text: str) -> None:
        self.progress.console.print(f"[dim]{escape(text)}[/]")
        self.progress.update(self.task, description=escape(text))

    def point_started(self, index: int, spec: PointSpec) -> None:
        self.progress.update(
            self.task, description=f"[{index + 1}/{len(self.plan)}] {spec.workload} threads={spec.threads}"
        )

    def sample(self, spec: PointSpec, sample: Sample) -> None:
        self.progress.update(self.task, completed=self.done_s + min(sample.second, spec.duration_s))

    def point_finished(self, index: int, result: PointResult) -> None:
        self.done_s += result.spec.duration_s
        self.progress.update(self.task, completed=self.done_s)
        self.progress.console.print(point_line(result))


def points_table(rows: Iterable[dict], title: str | None = None) -> Table:
    """Stored points (Store.points rows) as a table."""
    table = Table(title=title, title_justify="left")
    for name, justify in (
        ("run", "right"), ("label", "left"), ("engine", "left"), ("workload", "left"), ("threads", "right"),
        ("clients", "right"), ("tps", "right"), ("qps", "right"), ("lat avg ms", "right"),
        ("lat p95 ms", "right"), ("lat stddev ms", "right"), ("transactions", "right"),
        ("failed tx", "right"), ("errors", "right"), ("status", "left"),
    ):
        table.add_column(name, justify=justify)
    for r in rows:
        status = "ok" if r["status"] == "ok" else f"[red]failed[/]: {escape(r['error'] or '')}"
        table.add_row(
            str(r["run_id"]), escape(r["label"]), r["engine"], r["workload"], str(r["threads"]), str(r["clients"]),
            _fmt(r["tps"]), _fmt(r["qps"]), _fmt(r["latency_avg_ms"], 3), _fmt(r["latency_p95_ms"], 3),
            _fmt(r["latency_stddev_ms"], 3), _fmt(r["transactions"]), _fmt(r["failed_transactions"]),
            _fmt(r["errors"]), status,
        )
    return table
