"""Terminal output: the progress bar over a sweep, a line per point, result tables."""

from __future__ import annotations

import os
import re
import sys
from dataclasses import replace
from typing import IO, Any, Callable, Iterable, Sequence, cast

from rich import box
from rich.console import Console, RenderableType
from rich.markup import escape
from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn, TimeRemainingColumn
from rich.table import Table

from dbarena.limits import printable
from dbarena.model import PointResult, PointSpec, Sample
from dbarena.report import differing
from dbarena.report.fitting import WIDE_ONLY, Column, FittedTable
from dbarena.stats import analysis, loadgens, metric, repeats
from dbarena.stats.steadystate import Warning_

# Width of output that is not a terminal (a pipe, a log file), unless COLUMNS says: 100
# columns read whole in `less` and in an editor or a CI log beside another window, and
# every table fits it (report/fitting.py leaves columns out rather than fold cells).
# Wider would make every line of a log as long as its widest table.
PIPE_WIDTH = 100


class _Unpadded:
    """A stream that drops the spaces rich pads the ends of lines with (tables are
    padded to their width, wrapped text keeps the space it broke at), also where colour
    codes (FORCE_COLOR) stand between them: the codes are kept, the spaces go."""

    _END_PADDING = re.compile(r"(?: |\x1b\[[0-9;]*m)*(?=\n)")
    _CODE = re.compile(r"\x1b\[[0-9;]*m")

    def __init__(self, file: IO[str]):
        self.file = file
        self.held = ""  # spaces at the end of a write: padding only if a line break follows

    def write(self, text: str) -> int:
        text = self.held + text
        kept = text.rstrip(" ")
        self.held = text[len(kept):]
        self.file.write(self._END_PADDING.sub(lambda m: "".join(self._CODE.findall(m[0])), kept))
        return len(text)

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


def _fitted(title: str | None, columns: Sequence[Column], rows: Iterable[Any], wide: bool = False,
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


# ------------------------------------------------------------------ warnings

# A letter per warning in the tables' warning column; one legend line under a table
# names those that appear. JSON keeps the full codes and messages.
WARNING_LETTERS: dict[str, str] = {w.value: letter for w, letter in (
    (Warning_.SHORT_SERIES, "S"), (Warning_.LOADGEN_BOUND, "L"), (Warning_.HIGH_VARIATION, "V"),
    (Warning_.FEW_REPEATS, "R"), (Warning_.DIPS, "D"), (Warning_.TREND, "T"), (Warning_.LONG_WARMUP, "W"),
    (Warning_.FAILED_POINTS, "F"), (Warning_.SEVERAL_HOSTS, "H"),
)}
_ORDER = {code: i for i, code in enumerate(WARNING_LETTERS)}


def _codes(rows: Iterable[dict]) -> list[str]:
    """The warning codes of the rows, in the legend's order (unknown codes last)."""
    found = {w["code"] for r in rows for w in r.get("warnings", [])}
    return sorted(found, key=lambda code: (_ORDER.get(code, len(_ORDER)), code))


def _warnings(row: dict) -> str:
    return "".join(WARNING_LETTERS.get(code, f" {code} ") for code in _codes([row])).strip() or "-"


def legend(rows: Iterable[dict]) -> str | None:
    codes = _codes(rows)
    if not codes:
        return None
    return "warnings: " + ", ".join(f"{WARNING_LETTERS[c]} {c}" for c in codes if c in WARNING_LETTERS)


# A figure in a warning's message: its own word, not part of a name ("ax41").
_FIGURE = re.compile(r"(?<![\w.])[+-]?\d+(?:,\d{3})*(?:\.\d+)?(?!\w)")


def _merged(messages: list[str]) -> str:
    """Messages that differ only in their figures, as one: a figure that varies is shown
    as its range ("used 0.1..0.5 of 2 hardware threads")."""
    texts = [_FIGURE.split(m) for m in messages]
    figures = [_FIGURE.findall(m) for m in messages]
    out = texts[0][0]
    for k, text in enumerate(texts[0][1:]):
        seen = sorted({f[k] for f in figures}, key=lambda f: float(f.replace(",", "")))
        out += seen[0] if len(seen) == 1 else f"{seen[0]}..{seen[-1]}"
        out += text
    return out


def warning_lines(rows: Iterable[dict]) -> list[str]:
    """Each distinct warning once, with the number of rows it applies to and its advice
    (messages that differ only in their figures are one warning)."""
    groups: dict[tuple[str, tuple[str, ...]], list[str]] = {}
    for r in rows:
        for w in r.get("warnings", []):
            groups.setdefault((w["code"], tuple(_FIGURE.split(w["message"]))), []).append(w["message"])
    lines = []
    for code, _ in sorted(groups, key=lambda g: _ORDER.get(g[0], len(_ORDER))):
        messages = groups[(code, _)]
        count = f"{len(messages)} row{'s' if len(messages) > 1 else ''}"
        letter = WARNING_LETTERS.get(code)
        lines.append(f"{f'{letter} ' if letter else ''}[yellow]{code}[/] ({count}): "
                     f"{escape(printable(_merged(messages)))}")
    return lines


# ------------------------------------------------------------------ tables


def _steady(r: dict) -> str:
    if r.get("steady_tps") is None:
        return "-"
    return f"{r['steady_tps']:,.1f}"


def _status(r: dict) -> str:
    return "ok" if r["status"] == "ok" else f"[red]failed[/]: {escape(r['error'] or '')}"


# drop: None only with --wide; 0 always shown; otherwise the higher, the sooner left
# out when a table is too wide. The default columns fit 100 columns for usual names.
POINT_COLUMNS: tuple[Column, ...] = (
    Column("run", "right", lambda r: str(r["run_id"]), 3),
    Column("label", "left", lambda r: escape(r["label"])),
    Column("engine", "left", lambda r: r["engine"]),
    Column("workload", "left", lambda r: escape(r["workload"] + (f" [{r['variant']}]" if r.get("variant") else ""))),
    Column("threads", "right", lambda r: str(r["threads"])),
    Column("clients", "right", lambda r: str(r["clients"]), WIDE_ONLY),
    Column("rep", "right", lambda r: str(r.get("repeat", 0) + 1), WIDE_ONLY),
    Column("printed\nfigure", "right", lambda r: _figure(r, 2), 1),
    Column("qps", "right", lambda r: _fmt(r["qps"]), WIDE_ONLY),
    Column("steady\ntps", "right", _steady),
    Column("95 % CI within\nthe run", "right", lambda r: _interval(r.get("tps_ci_low"), r.get("tps_ci_high")),
           WIDE_ONLY),
    Column("lat avg\nms", "right", lambda r: _fmt(r["latency_avg_ms"], 3), WIDE_ONLY),
    Column("p95 ms", "right", lambda r: _fmt(r["latency_p95_ms"], 3), WIDE_ONLY),
    Column("p99 ms", "right", lambda r: _fmt(r.get("latency_p99_ms"), 3), 2),
    Column("failed\ntx", "right", lambda r: _fmt(r["failed_transactions"]), WIDE_ONLY),
    Column("errors", "right", lambda r: _fmt(r["errors"]), WIDE_ONLY),
    Column("warn", "left", _warnings),
    Column("measured\ns", "right", lambda r: _fmt((((r.get("source") or {}).get("duration")) or {}).get("measured_s"),
                                                  2), WIDE_ONLY),
    # What bound the point, from the server's own series and the machine's (stats/bound.py);
    # the first to go for the width (--wide shows it with its evidence).
    Column("bound", "left", lambda r: r.get("bound") or "-", 4),
    Column("status", "left", _status, wraps=True),
    Column("bound evidence", "left", lambda r: r.get("bound_evidence") or "-", WIDE_ONLY),
)


def _figure(r: dict, digits: int, field: str | None = None) -> str:
    """A row's figure in its metric (`field`: which of the row's figures, the tool's
    printed one by default): TPS, or mysqlslap's seconds with their unit."""
    value = metric.figure(r, r["metric"]) if field is None else r.get(field)
    return metric.shown(value, r["metric"], digits)


# Under a table that shows a figure in seconds: what it is and which way is better.
SECONDS_NOTE = "s: mysqlslap's figure in place of TPS, the seconds it took to run all its queries (lower is better)"


def _notes(rows: list[dict], *notes: str) -> list[str]:
    found = legend(rows)
    seconds = [SECONDS_NOTE] if any(r.get("metric") == metric.SECONDS for r in rows) else []
    return [*notes, *seconds, *together_notes(rows), *duration_notes(rows), *([found] if found else [])]


def duration_notes(rows: Iterable[dict]) -> list[str]:
    """Imported points whose asked duration was not printed: how it was found, once."""
    found: dict[str, int] = {}
    for r in rows:
        how = (((r.get("source") or {}).get("duration")) or {}).get("from")
        if how in ("inferred", "last progress line", "measured"):
            found[how] = found.get(how, 0) + 1
    words = {"inferred": "inferred from the measured time (600.55 s measured: 600 s asked)",
             "last progress line": "taken from the tool's last interval report",
             "measured": "the measured time (a run of a number of transactions)"}
    return [f"duration of {n} imported point{'s' if n > 1 else ''}: {words[how]}; `results --json` has the "
            "measured time beside it (source.duration)" for how, n in found.items()]


def together_notes(rows: Iterable[dict]) -> list[str]:
    """A line per run whose points several load generators drove at once."""
    runs: dict[Any, tuple[int, list[str]]] = {}
    for r in rows:
        if loadgens.parts(r):
            runs.setdefault(r.get("run_id"), (loadgens.count(r), [str(p.get("host")) for p in loadgens.parts(r)]))
    return [f"run {run}: {n} load generators drove each point at once ({', '.join(hosts)}); "
            "`results --parts` shows each one's share and whether they were the bound"
            for run, (n, hosts) in runs.items()]


def parts_table(rows: Iterable[dict], wide: bool = False) -> FittedTable:
    """Each load generator's share of the points several drove together (`results
    --parts`): its threads and figures, its CPU, and what bound the point."""
    rows = list(rows)
    lines = [{**r, "_part": p, "_first": k == 0} for r in rows for k, p in enumerate(loadgens.parts(r))]
    columns: tuple[Column, ...] = (
        Column("point", "right", lambda r: str(r["point_id"]) if r["_first"] else ""),
        Column("label", "left", lambda r: escape(r["label"]) if r["_first"] else "", 3),
        Column("workload", "left", lambda r: escape(r["workload"]) if r["_first"] else "", 2),
        Column("host", "left", lambda r: escape(str(r["_part"].get("host")))),
        Column("threads", "right", lambda r: str(r["_part"].get("threads"))),
        Column("clients", "right", lambda r: str(r["_part"].get("clients")), WIDE_ONLY),
        Column("tps", "right", lambda r: _fmt(r["_part"].get("tps"), 1)),
        Column("qps", "right", lambda r: _fmt(r["_part"].get("qps"), 1), WIDE_ONLY),
        Column("p95 ms", "right", lambda r: _fmt(r["_part"].get("latency_p95_ms"), 3), 1),
        Column("load gen.\ncores", "right", lambda r: _fmt(r["_part"].get("loadgen_cpu_cores"), 2)),
        Column("host\nbusy", "right", lambda r: "-" if r["_part"].get("host_cpu_busy_pct") is None
               else f"{r['_part']['host_cpu_busy_pct']:.0f} %"),
    )
    bounds = [f"point {r['point_id']}: {escape(loadgens.bound([r]) or '')}" for r in rows]
    return _fitted("each load generator's share of the points driven together (fleet run --together)",
                   columns, lines, wide, bounds)


def _differing(columns: Sequence[Column], rows: list[dict], wide: bool) -> tuple[Column, ...]:
    """The table's columns with, after threads, one for each fact of the configuration in
    which the rows differ (clients, dataset, duration ...: report/differing.py)."""
    shown = [c.header.replace("\n", " ") for c in columns if wide or c.drop is not WIDE_ONLY]
    at = next(k for k, c in enumerate(columns) if c.header == "threads") + 1
    return (*columns[:at], *differing.columns(rows, shown), *columns[at:])


def points_table(rows: Iterable[dict], title: str | None = None, wide: bool = False) -> FittedTable:
    """Stored points (analysis.load rows) as a table: the tool's printed figure (TPS, or
    mysqlslap's seconds) and dbarena's steady-state mean side by side."""
    rows = list(rows)
    # The bound columns only where a point has one (its server was sampled): none for imports.
    columns = POINT_COLUMNS if any(r.get("bound") for r in rows) else \
        tuple(c for c in POINT_COLUMNS if c.header not in ("bound", "bound evidence"))
    return _fitted(title, _differing(columns, rows, wide), rows, wide, _notes(rows))


def _half_width(r: dict) -> str:
    """The 95 % interval as +- a share of the mean: narrow enough for the default columns."""
    if r["ci_low"] is None or r["ci_high"] is None or not r["mean"]:
        return "-"
    return f"\u00b1{(r['ci_high'] - r['ci_low']) / 2 / r['mean']:.1%}"


def summary_table(rows: Iterable[dict], wide: bool = False) -> FittedTable:
    """analysis.summaries rows: one per label and configuration key. Where the median
    is over steady-state means, --wide shows the median of the tools' printed figures
    beside it (what a published table would show)."""
    rows = list(rows)
    variants = any(r.get("variant") for r in rows)
    printed = any(r.get("statistic") not in (None, analysis.PRINTED) for r in rows)

    def steady(r: dict) -> bool:
        return r.get("statistic") not in (None, analysis.PRINTED)

    def within(r: dict) -> str:
        return "*" if r.get("interval") == "within one run" else ""

    shown_percentile = "latency_p99_ms" if _has(rows, "latency_p99_ms") else "latency_p95_ms"
    columns: tuple[Column, ...] = (
        Column("label", "left", lambda r: escape(r["label"])),
        Column("engine", "left", lambda r: r["engine"]),
        Column("workload", "left", lambda r: escape(r["workload"])),
        Column("threads", "right", lambda r: str(r["threads"])),
        *((Column("variant", "left", lambda r: escape(r.get("variant") or "-")),) if variants else ()),
        Column("config", "left", lambda r: (r.get("config_key") or "-")[:6], WIDE_ONLY),
        Column("metric", "left", lambda r: r["metric"], WIDE_ONLY),
        Column("n", "right", lambda r: f"{r['n']}" + (f" (+{r['failed']} failed)" if r["failed"] else "")),
        Column("median", "right", lambda r: _figure(r, 1, "median") + ("\u2020" if steady(r) else "")),
        *((Column("printed\nmedian", "right", lambda r: _figure(r, 1, "printed_median") if steady(r) else "=",
                  WIDE_ONLY),) if printed else ()),
        Column("mean", "right", lambda r: _figure(r, 1, "mean"), WIDE_ONLY),
        Column("stdev", "right", lambda r: _figure(r, 1, "stdev"), WIDE_ONLY),
        Column("95 % CI", "right", lambda r: _half_width(r) + within(r), 3),
        Column("95 % interval", "right", lambda r: _interval(r["ci_low"], r["ci_high"], _digits(r)) + within(r),
               WIDE_ONLY),
        Column("CV", "right", lambda r: f"{r['cv']:.1%}" if r["cv"] is not None else "-", 2),
        # One percentile by default, p99 where there is one (else the p95 sysbench prints).
        *(Column(f"{name} ms", "right", _percentile_of(column), 1 if column == shown_percentile else WIDE_ONLY)
          for column, name in (("latency_p95_ms", "p95"), ("latency_p99_ms", "p99"))
          if _has(rows, column)),
        Column("warn", "left", _warnings),
    )
    captions = []
    if printed:
        captions.append("\u2020 median of each run's steady-state mean (warm-up excluded, from its per-second "
                        "series); " + ("'printed median': of the figures the tool printed ('=': the same)" if wide
                                       else "--wide adds the median of the figures the tool printed"))
    if any(_printed_percentiles(r) for r in rows):
        captions.append(f"{PRINTED_MARK} median of the percentile each run printed (there are no histograms to "
                        "merge): not a percentile of all their transactions; --figures shows its mean and spread")
    if any(r.get("interval") == "within one run" for r in rows):
        captions.append("* one repeat: the interval within that run (its precision), blind to run-to-run "
                        "variation; no comparison verdict without 3 repeats")
    return _fitted("summary over repeats (one line per label and configuration; 95 % CI: \u00b1 a share of "
                       "the mean)", _differing(columns, rows, wide), rows, wide, _notes(rows, *captions))


# Beside a summary's percentile that is the median of the ones its runs printed.
PRINTED_MARK = "\u2021"


def _printed_percentiles(r: dict) -> bool:
    return any(r.get(c) is None and c in r.get("over_repeats", {}) for c in ("latency_p95_ms", "latency_p99_ms"))


def _percentile(r: dict, column: str) -> str:
    """A summary's percentile: of its merged histograms (or its one point); else the
    median of what each run printed, marked as such."""
    if r.get(column) is not None:
        return _fmt(r[column], 3)
    over = r.get("over_repeats", {}).get(column)
    return "-" if over is None else f"{_fmt(over['median'], 3)}{PRINTED_MARK}"


def _has(rows: list[dict], column: str) -> bool:
    """Does any summary have this percentile, pooled or printed?"""
    return any(r.get(column) is not None or column in r.get("over_repeats", {}) for r in rows)


def _percentile_of(column: str) -> Callable[[dict], str]:
    return lambda r: _percentile(r, column)


def figures_table(rows: Iterable[dict], wide: bool = False) -> FittedTable:
    """Every figure of each summary (analysis.summaries rows) over its repeats, a line per
    figure: median, mean, n and spread, and what it is (stats/repeats.py)."""
    lines = [{**r, "_figure": f} for r in rows for f in r.get("over_repeats", {}).values()]
    columns: tuple[Column, ...] = (
        Column("label", "left", lambda r: escape(r["label"])),
        Column("engine", "left", lambda r: r["engine"], 4),
        Column("workload", "left", lambda r: escape(r["workload"])),
        Column("threads", "right", lambda r: str(r["threads"])),
        *((Column("variant", "left", lambda r: escape(r.get("variant") or "-")),)
          if any(r.get("variant") for r in lines) else ()),
        Column("figure", "left", lambda r: f"{r['_figure']['source']} {_FIGURE_NAMES[r['_figure']['figure']]}"),
        Column("n", "right", lambda r: str(r["_figure"]["n"])),
        Column("median", "right", lambda r: _fmt(r["_figure"]["median"], 3)),
        Column("mean", "right", lambda r: _fmt(r["_figure"]["mean"], 3)),
        Column("stdev", "right", lambda r: _fmt(r["_figure"]["stdev"], 3), WIDE_ONLY),
        Column("min .. max", "right", lambda r: f"{_fmt(r['_figure']['min'], 3)} .. {_fmt(r['_figure']['max'], 3)}",
               2),
    )
    return _fitted("every figure over repeats (one line per figure; printed: as the tool printed it per run; "
                   "computed: by dbarena from each run's transactions)",
                   _differing(columns, lines, wide), lines, wide)


_FIGURE_NAMES = {column: name for column, name in repeats.FIGURES}


def _digits(r: dict) -> int:
    return 3 if r.get("metric") == metric.SECONDS else 1


def comparison_table(rows: Iterable[dict], wide: bool = False) -> FittedTable:
    rows = list(rows)
    a, b = rows[0]["a"], rows[0]["b"]
    by_variant = rows[0].get("by") == "variant"

    def verdict(r: dict) -> str:
        return ("[bold]" if r["significant"] else "") + escape(r["verdict_text"]) + ("[/]" if r["significant"] else "")

    columns: tuple[Column, ...] = (
        *((Column("label", "left", lambda r: escape(r.get("label") or "")),) if by_variant else ()),
        Column("engine", "left", lambda r: r["engine"]),
        Column("workload", "left", lambda r: escape(r["workload"])),
        Column("threads", "right", lambda r: str(r["threads"])),
        Column("metric", "left", lambda r: r["metric"], WIDE_ONLY),
        Column(escape(a), "right", lambda r: _figure(r, 1, "a_mean")),
        Column(escape(b), "right", lambda r: _figure(r, 1, "b_mean")),
        Column("n", "right", lambda r: f"{r['a_n']}/{r['b_n']}", 2),
        Column("ratio", "right", lambda r: f"{r['ratio']:.3f}" if r["ratio"] is not None else "-"),
        Column("95 % CI", "right", lambda r: _interval(r["ratio_ci_low"], r["ratio_ci_high"], 3), 1),
        Column("verdict", "left", verdict, wraps=True),
    )
    notes = [f"{SECONDS_NOTE}: a ratio below 1 is faster"] if any(r.get("metric") == metric.SECONDS
                                                                    for r in rows) else []
    return _fitted(f"{escape(b)} against {escape(a)} (ratio = {escape(b)} / {escape(a)}; n: runs of each)",
                       columns, rows, wide, notes)


def facts_table(facts: dict) -> Table:
    table = Table(show_header=False)
    table.add_column("fact")
    table.add_column("value")
    for key in sorted(facts):
        value = facts[key]
        if key.endswith("_bytes") and isinstance(value, int):
            value = f"{value / 1024 ** 3:.1f} GiB"
        table.add_row(key, escape(printable(str(value))))
    return table


def precision_table(states: Sequence, target: float | None) -> FittedTable:
    """Adaptive repeats: where each point of the plan ended (rounds.PointState)."""
    title = f"precision {f'+-{target:.1%} ' if target else ''}(95 % interval of the mean over runs, conservative)"
    variants = any(s.spec.variant for s in states)
    columns: tuple[Column, ...] = (
        Column("engine", "left", lambda s: s.spec.engine),
        Column("workload", "left", lambda s: escape(s.spec.workload)),
        Column("threads", "right", lambda s: str(s.spec.threads)),
        *((Column("variant", "left", lambda s: escape(s.spec.variant or "-")),) if variants else ()),
        Column("runs", "right", lambda s: str(len(s.values)) + (f" (+{s.failures} failed)" if s.failures else "")),
        Column("interval", "right", lambda s: f"+-{s.half_width:.1%}" if s.half_width is not None else "-"),
        Column("", "left", lambda s: "[green]reached[/]" if s.status == "reached"
               else f"[yellow]{escape(s.describe())}[/]", wraps=True),
    )
    return _fitted(title, columns, states)
