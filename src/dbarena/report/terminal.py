"""Terminal output: the progress bar over a sweep, a line per point, result tables."""

from __future__ import annotations

import os
from typing import Callable, Iterable, Sequence

from rich import box
from rich.console import Console, JustifyMethod
from rich.markup import escape
from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn, TimeRemainingColumn
from rich.table import Table

from dbarena.stats import analysis
from dbarena.model import PointResult, PointSpec, Sample


def console(stderr: bool = False) -> Console:
    c = Console(stderr=stderr)
    if not c.is_terminal:
        # A log file or a pipe: do not squeeze tables into 80 columns (COLUMNS, when set,
        # says how wide).
        columns = os.environ.get("COLUMNS", "")
        c = Console(stderr=stderr, width=int(columns) if columns.isdigit() and int(columns) > 0 else 200)
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
    if spec.variant:
        head += f" variant={spec.variant}"
    if not result.ok:
        return f"[red]failed[/] {escape(head)}: {escape(result.error or '')}"
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
            description=f"[{index + 1}/{len(self.plan)}] {escape(spec.workload)} threads={spec.threads}{escape(variant)}",
        )

    def sample(self, spec: PointSpec, sample: Sample) -> None:
        self.progress.update(self.task, completed=self.done_s + min(sample.second, spec.duration_s))

    def point_finished(self, index: int, result: PointResult) -> None:
        self.done_s += self.expected.get(index, result.spec.duration_s)
        self.progress.update(self.task, completed=self.done_s)
        self.progress.console.print(point_line(result))


def _interval(low, high, digits: int = 1) -> str:
    if low is None or high is None:
        return "-"
    return f"{max(low, 0.0):,.{digits}f} .. {high:,.{digits}f}"  # a throughput is never below 0


def _warnings(row: dict) -> str:
    return "; ".join(w["code"] for w in row.get("warnings", [])) or "-"


# A column of a results table: (header, justify, shown by default, cell). By default a
# table fits a 120-column terminal with names unbroken; --wide shows every column.
_Column = tuple[str, JustifyMethod, bool, Callable[[dict], str]]


def _table(title: str | None, columns: Sequence[_Column], rows: list[dict], wide: bool) -> Table:
    chosen = [c for c in columns if wide or c[2]]
    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False, padding=(0, 1))
    for header, justify, _, _ in chosen:
        # Names are never cut or broken; warnings and errors wrap instead.
        table.add_column(header, justify=justify, no_wrap=header in ("label", "workload", "engine"),
                         overflow="fold")
    for r in rows:
        table.add_row(*(cell(r) for _, _, _, cell in chosen))
    return table


def _steady(r: dict) -> str:
    if r.get("steady_tps") is None:
        return "-"
    return f"{r['steady_tps']:,.1f}"


def _status(r: dict) -> str:
    return "ok" if r["status"] == "ok" else f"[red]failed[/]: {escape(r['error'] or '')}"


POINT_COLUMNS: tuple[_Column, ...] = (
    ("run", "right", True, lambda r: str(r["run_id"])),
    ("label", "left", True, lambda r: escape(r["label"])),
    ("engine", "left", True, lambda r: r["engine"]),
    ("workload", "left", True, lambda r: escape(r["workload"] + (f" [{r['variant']}]" if r.get("variant") else ""))),
    ("threads", "right", True, lambda r: str(r["threads"])),
    ("clients", "right", False, lambda r: str(r["clients"])),
    ("rep", "right", False, lambda r: str(r.get("repeat", 0) + 1)),
    ("printed tps", "right", True, lambda r: _fmt(r["tps"])),
    ("qps", "right", False, lambda r: _fmt(r["qps"])),
    ("steady tps", "right", True, _steady),
    ("95 % CI within the run", "right", False, lambda r: _interval(r.get("tps_ci_low"), r.get("tps_ci_high"))),
    ("lat avg ms", "right", False, lambda r: _fmt(r["latency_avg_ms"], 3)),
    ("p95 ms", "right", False, lambda r: _fmt(r["latency_p95_ms"], 3)),
    ("p99 ms", "right", True, lambda r: _fmt(r.get("latency_p99_ms"), 3)),
    ("failed tx", "right", False, lambda r: _fmt(r["failed_transactions"])),
    ("errors", "right", False, lambda r: _fmt(r["errors"])),
    ("warnings", "left", True, _warnings),
    ("status", "left", True, _status),
)


def points_table(rows: Iterable[dict], title: str | None = None, wide: bool = False) -> Table:
    """Stored points (analysis.load rows) as a table: the tool's printed figure and
    dbarena's steady-state mean side by side."""
    return _table(title, POINT_COLUMNS, list(rows), wide)


def summary_table(rows: Iterable[dict], wide: bool = False) -> Table:
    """analysis.summaries rows: one per label and configuration key. Where the median
    is over steady-state means, the median of the tools' printed figures stands beside
    it (what a published table would show)."""
    rows = list(rows)
    variants = any(r.get("variant") for r in rows)
    printed = any(r.get("statistic") not in (None, analysis.PRINTED) for r in rows)

    def steady(r: dict) -> bool:
        return r.get("statistic") not in (None, analysis.PRINTED)

    columns: tuple[_Column, ...] = (
        ("label", "left", True, lambda r: escape(r["label"])),
        ("engine", "left", True, lambda r: r["engine"]),
        ("workload", "left", True, lambda r: escape(r["workload"])),
        ("threads", "right", True, lambda r: str(r["threads"])),
        *((("variant", "left", True, lambda r: escape(r.get("variant") or "-")),) if variants else ()),
        ("config", "left", False, lambda r: (r.get("config_key") or "-")[:6]),
        ("metric", "left", False, lambda r: r["metric"]),
        ("n", "right", True, lambda r: f"{r['n']}" + (f" (+{r['failed']} failed)" if r["failed"] else "")),
        ("median", "right", True, lambda r: _fmt(r["median"], 1) + ("\u2020" if steady(r) else "")),
        *((("printed median", "right", True,
            lambda r: _fmt(r.get("printed_median"), 1) if steady(r) else "="),) if printed else ()),
        ("mean", "right", False, lambda r: _fmt(r["mean"], 1)),
        ("stdev", "right", False, lambda r: _fmt(r["stdev"], 1)),
        ("95 % CI", "right", True, lambda r: _interval(r["ci_low"], r["ci_high"])
         + ("*" if r.get("interval") == "within one run" else "")),
        ("CV", "right", True, lambda r: f"{r['cv']:.1%}" if r["cv"] is not None else "-"),
        ("p99 ms", "right", True, lambda r: _fmt(r.get("latency_p99_ms"), 3)),
        ("warnings", "left", True, _warnings),
    )
    table = _table("summary over repeats (one line per label and configuration)", columns, rows, wide)
    captions = []
    if printed:
        captions.append("\u2020 median and mean of each run's steady-state mean (warm-up excluded, from its "
                        "per-second series); 'printed median': of the figures the tool printed ('=': the same)")
    if any(r.get("interval") == "within one run" for r in rows):
        captions.append("* one repeat: the interval within that run (its precision), blind to run-to-run "
                        "variation; no comparison verdict without 3 repeats")
    if captions:
        table.caption = "\n".join(captions)
        table.caption_justify = "left"
    return table


def warning_lines(rows: Iterable[dict]) -> list[str]:
    """The advice behind the warning codes of a table, one line each."""
    lines: list[str] = []
    for r in rows:
        where = f"{r['label']} {r['engine']} {r['workload']} threads={r['threads']}"
        if r.get("variant"):
            where += f" variant={r['variant']}"
        lines.extend(f"{escape(where)}: [yellow]{w['code']}[/]: {escape(w['message'])}" for w in r["warnings"])
    return lines


def comparison_table(rows: Iterable[dict]) -> Table:
    rows = list(rows)
    a, b = rows[0]["a"], rows[0]["b"]
    by_variant = rows[0].get("by") == "variant"
    table = Table(title=f"{escape(b)} against {escape(a)} (ratio = {escape(b)} / {escape(a)})", title_justify="left")
    for name, justify in (
        *((("label", "left"),) if by_variant else ()),
        ("engine", "left"), ("workload", "left"), ("threads", "right"), ("metric", "left"),
        (escape(a), "right"), (escape(b), "right"), ("ratio", "right"), ("95 % CI", "right"), ("verdict", "left"),
    ):
        table.add_column(name, justify=justify)
    for r in rows:
        table.add_row(
            *((escape(r.get("label") or ""),) if by_variant else ()),
            r["engine"], r["workload"], str(r["threads"]), r["metric"],
            f"{_fmt(r['a_mean'], 1)} (n={r['a_n']})", f"{_fmt(r['b_mean'], 1)} (n={r['b_n']})",
            f"{r['ratio']:.3f}" if r["ratio"] is not None else "-",
            _interval(r["ratio_ci_low"], r["ratio_ci_high"], 3),
            ("[bold]" if r["significant"] else "") + escape(r["verdict_text"]) + ("[/]" if r["significant"] else ""),
        )
    return table


def facts_table(facts: dict) -> Table:
    table = Table(show_header=False)
    table.add_column("fact")
    table.add_column("value")
    for key in sorted(facts):
        value = facts[key]
        if key.endswith("_bytes") and isinstance(value, int):
            value = f"{value / 1024 ** 3:.1f} GiB"
        table.add_row(key, escape(str(value)))
    return table


def precision_table(states: Sequence, target: float | None) -> Table:
    """Adaptive repeats: where each point of the plan ended (rounds.PointState)."""
    title = f"precision {f'+-{target:.1%} ' if target else ''}(95 % interval of the mean over runs, conservative)"
    table = Table(title=title, title_justify="left")
    variants = any(s.spec.variant for s in states)
    for name, justify in (("engine", "left"), ("workload", "left"), ("threads", "right"),
                          *((("variant", "left"),) if variants else ()), ("runs", "right"), ("interval", "right"),
                          ("", "left")):
        table.add_column(name, justify=justify)
    for s in states:
        table.add_row(
            s.spec.engine, s.spec.workload, str(s.spec.threads), *((escape(s.spec.variant or "-"),) if variants else ()),
            str(len(s.values)) + (f" (+{s.failures} failed)" if s.failures else ""),
            f"+-{s.half_width:.1%}" if s.half_width is not None else "-",
            "[green]reached[/]" if s.status == "reached" else f"[yellow]{escape(s.describe())}[/]",
        )
    return table
