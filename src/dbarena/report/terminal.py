"""Terminal output: the progress bar over a sweep, a line per point, result tables."""

from __future__ import annotations

from typing import Callable, Iterable, Sequence

from rich.console import Console, JustifyMethod
from rich.markup import escape
from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn, TimeRemainingColumn
from rich.table import Table

from dbarena import analysis
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
    return f"{low:,.{digits}f} .. {high:,.{digits}f}"


def _warnings(row: dict) -> str:
    return "; ".join(w["code"] for w in row.get("warnings", [])) or "-"


def points_table(rows: Iterable[dict], title: str | None = None) -> Table:
    """Stored points (analysis.load rows) as a table."""
    table = Table(title=title, title_justify="left")
    justify: JustifyMethod
    for name, justify in (
        ("run", "right"), ("label", "left"), ("engine", "left"), ("workload", "left"), ("threads", "right"),
        ("clients", "right"), ("rep", "right"), ("tps", "right"), ("qps", "right"), ("steady tps (95 % CI within the run)", "right"),
        ("lat avg ms", "right"), ("lat p95 ms", "right"), ("failed tx", "right"), ("errors", "right"),
        ("warnings", "left"), ("status", "left"),
    ):
        table.add_column(name, justify=justify)
    for r in rows:
        status = "ok" if r["status"] == "ok" else f"[red]failed[/]: {escape(r['error'] or '')}"
        steady = "-"
        if r.get("steady_tps") is not None:
            steady = f"{r['steady_tps']:,.1f} ({_interval(r['tps_ci_low'], r['tps_ci_high'])})"
        workload = r["workload"] + (f" [{r['variant']}]" if r.get("variant") else "")
        table.add_row(
            str(r["run_id"]), escape(r["label"]), r["engine"], escape(workload), str(r["threads"]), str(r["clients"]),
            str(r.get("repeat", 0) + 1), _fmt(r["tps"]), _fmt(r["qps"]), steady, _fmt(r["latency_avg_ms"], 3),
            _fmt(r["latency_p95_ms"], 3), _fmt(r["failed_transactions"]), _fmt(r["errors"]), _warnings(r), status,
        )
    return table


def summary_table(rows: Iterable[dict]) -> Table:
    """analysis.summaries rows: one per label and configuration key. Where the median
    is over steady-state means, the median of the tools' printed figures stands beside
    it (what a published table would show)."""
    rows = list(rows)
    variants = any(r.get("variant") for r in rows)
    printed = any(r.get("statistic") not in (None, analysis.PRINTED) for r in rows)
    table = Table(title="summary over repeats (one line per label and configuration)", title_justify="left")
    for name, justify in (
        ("label", "left"), ("engine", "left"), ("workload", "left"), ("threads", "right"),
        *((("variant", "left"),) if variants else ()), ("config", "left"), ("metric", "left"),
        ("n", "right"), ("median", "right"), *((("printed median", "right"),) if printed else ()),
        ("mean", "right"), ("stdev", "right"), ("95 % CI", "right"),
        ("CV", "right"), ("p99 ms", "right"), ("warnings", "left"),
    ):
        table.add_column(name, justify=justify)
    for r in rows:
        steady = r.get("statistic") not in (None, analysis.PRINTED)
        table.add_row(
            escape(r["label"]), r["engine"], r["workload"], str(r["threads"]),
            *((escape(r.get("variant") or "-"),) if variants else ()), (r.get("config_key") or "-")[:6], r["metric"],
            f"{r['n']}" + (f" (+{r['failed']} failed)" if r["failed"] else ""),
            _fmt(r["median"], 1) + ("†" if steady else ""),
            *((_fmt(r.get("printed_median"), 1) if steady else "=",) if printed else ()),
            _fmt(r["mean"], 1), _fmt(r["stdev"], 1),
            _interval(r["ci_low"], r["ci_high"]) + ("*" if r.get("interval") == "within one run" else ""),
            f"{r['cv']:.1%}" if r["cv"] is not None else "-", _fmt(r.get("latency_p99_ms"), 3), _warnings(r),
        )
    captions = []
    if printed:
        captions.append("† median and mean of each run's steady-state mean (warm-up excluded, from its "
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
