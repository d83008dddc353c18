"""The tables `results`, `compare`, `run` and `probe` print on a terminal (points,
summaries over repeats, every figure, comparisons, load generators' parts, facts,
precision), the warning letters and the notes under them. Each fits the console's width
(report/fitting.py); the console itself: report/terminal.py."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any, Callable, Iterable, Sequence

from rich.markup import escape
from rich.table import Table

from dbarena.limits import printable
from dbarena.report import differing
from dbarena.report.fitting import WIDE_ONLY, Column, FittedTable
from dbarena.report.terminal import fitted, fmt
from dbarena.stats import analysis, efficiency, loadgens, metric, repeats
from dbarena.stats.rounds import PointState
from dbarena.stats.steadystate import Warning_
from dbarena.records import JSONObject, AnalysedPoint, LevelComparison, LevelSummary

# A line of a table: a point, or a summary over repeats (analysis.summaries).
Listed = AnalysedPoint | LevelSummary


def _interval(low: float | None, high: float | None, digits: int = 1) -> str:
    if low is None or high is None:
        return "-"
    return f"{max(low, 0.0):,.{digits}f} .. {high:,.{digits}f}"  # a throughput is never below 0


# ------------------------------------------------------------------ warnings

# A letter per warning in the tables' warning column; one legend line under a table
# names those that appear. JSON keeps the full codes and messages.
WARNING_LETTERS: dict[str, str] = {w.value: letter for w, letter in (
    (Warning_.SHORT_SERIES, "S"), (Warning_.LOADGEN_BOUND, "L"), (Warning_.NEIGHBOURS, "N"),
    (Warning_.HIGH_VARIATION, "V"),
    (Warning_.FEW_REPEATS, "R"), (Warning_.DIPS, "D"), (Warning_.TREND, "T"), (Warning_.LONG_WARMUP, "W"),
    (Warning_.FAILED_POINTS, "F"), (Warning_.SEVERAL_HOSTS, "H"),
)}
_ORDER = {code: i for i, code in enumerate(WARNING_LETTERS)}


def _codes(rows: Iterable[Listed]) -> list[str]:
    """The warning codes of the rows, in the legend's order (unknown codes last)."""
    found = {w["code"] for r in rows for w in r.warnings}
    return sorted(found, key=lambda code: (_ORDER.get(code, len(_ORDER)), code))


def _warnings(row: Listed) -> str:
    return "".join(WARNING_LETTERS.get(code, f" {code} ") for code in _codes([row])).strip() or "-"


def legend(rows: Iterable[Listed]) -> str | None:
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


def warning_lines(rows: Iterable[Listed]) -> list[str]:
    """Each distinct warning once, with the number of rows it applies to and its advice
    (messages that differ only in their figures are one warning)."""
    groups: dict[tuple[str, tuple[str, ...]], list[str]] = {}
    for r in rows:
        for w in r.warnings:
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


def _steady(r: AnalysedPoint) -> str:
    if r.steady_tps is None:
        return "-"
    return f"{r.steady_tps:,.1f}"


def _status(r: AnalysedPoint) -> str:
    return "ok" if r.status == "ok" else f"[red]failed[/]: {escape(r.error or '')}"


def _duration(r: AnalysedPoint) -> JSONObject:
    """How an imported point's duration was found (source.duration), if it says."""
    found = r.source.get("duration") if isinstance(r.source, dict) else None
    return found if isinstance(found, dict) else {}


# drop: None only with --wide; 0 always shown; otherwise the higher, the sooner left
# out when a table is too wide. The default columns fit 100 columns for usual names.
POINT_COLUMNS: tuple[Column, ...] = (
    Column("run", "right", lambda r: str(r.run_id), 3),
    Column("label", "left", lambda r: escape(r.label)),
    Column("engine", "left", lambda r: r.engine),
    Column("workload", "left", lambda r: escape(r.workload + (f" [{r.variant}]" if r.variant else ""))),
    Column("threads", "right", lambda r: str(r.threads)),
    Column("clients", "right", lambda r: str(r.clients), WIDE_ONLY),
    Column("rep", "right", lambda r: str(r.repeat + 1), WIDE_ONLY),
    Column("printed\nfigure", "right", lambda r: _figure(r, 2), 1),
    Column("qps", "right", lambda r: fmt(r.qps), WIDE_ONLY),
    Column("steady\ntps", "right", _steady),
    Column("95 % CI within\nthe run", "right", lambda r: _interval(r.tps_ci_low, r.tps_ci_high), WIDE_ONLY),
    Column("lat avg\nms", "right", lambda r: fmt(r.latency_avg_ms, 3), WIDE_ONLY),
    Column("p95 ms", "right", lambda r: fmt(r.latency_p95_ms, 3), WIDE_ONLY),
    Column("p99 ms", "right", lambda r: fmt(r.latency_p99_ms, 3), 2),
    Column("failed\ntx", "right", lambda r: fmt(r.failed_transactions), WIDE_ONLY),
    Column("errors", "right", lambda r: fmt(r.errors), WIDE_ONLY),
    Column("warn", "left", _warnings),
    Column("measured\ns", "right", lambda r: fmt(_duration(r).get("measured_s"), 2), WIDE_ONLY),
    # The CPUs other processes and the hypervisor took while it ran (stats/interference.py).
    Column("neighbours\nCPUs", "right", lambda r: fmt(r.neighbour_cpu, 2), WIDE_ONLY),
    Column("steal\nCPUs", "right", lambda r: fmt(r.steal_cpu, 2), WIDE_ONLY),
    # What one transaction cost (stats/efficiency.py): the server's and the load
    # generator's CPU, the machine's context switches and disk bytes, the server's WAL or
    # redo and its buffer reads (blocks read, InnoDB's pool reads).
    Column("server\nus/tx", "right", lambda r: _cost(r, "server_cpu_us_per_tx", 1), WIDE_ONLY),
    Column("loadgen\nus/tx", "right", lambda r: _cost(r, "loadgen_cpu_us_per_tx", 1), WIDE_ONLY),
    Column("ctx sw\n/tx", "right", lambda r: _cost(r, "context_switches_per_tx", 2), WIDE_ONLY),
    Column("read\nKB/tx", "right", lambda r: _cost(r, "read_kb_per_tx", 3), WIDE_ONLY),
    Column("write\nKB/tx", "right", lambda r: _cost(r, "write_kb_per_tx", 3), WIDE_ONLY),
    Column("WAL or\nredo B/tx", "right",
           lambda r: _cost(r, "wal_bytes_per_tx", 0) if r.engine == "postgres" else _cost(r, "redo_bytes_per_tx", 0),
           WIDE_ONLY),
    Column("buffer\nreads/tx", "right", lambda r: _cost(r, "buffer_reads_per_tx", 3), WIDE_ONLY),
    # What bound the point, from the server's own series and the machine's (stats/bound.py);
    # the first to go for the width (--wide shows it with its evidence).
    Column("bound", "left", lambda r: r.bound or "-", 4),
    Column("status", "left", _status, wraps=True),
    Column("bound evidence", "left", lambda r: r.bound_evidence or "-", WIDE_ONLY),
)


def _cost(r: AnalysedPoint, name: str, digits: int) -> str:
    """One of a point's costs per transaction (stats/efficiency.py), or "-"."""
    value = (r.efficiency or {}).get(name)
    return fmt(float(value), digits) if isinstance(value, (int, float)) else "-"


def _figure(r: AnalysedPoint, digits: int) -> str:
    """A point's figure in its metric, as the tool printed it: TPS, or mysqlslap's
    seconds with their unit."""
    return metric.shown(metric.figure(r, r.metric), r.metric, digits)


def _shown(r: LevelSummary, value: float | None, digits: int = 1) -> str:
    """One of a summary's figures in its metric."""
    return metric.shown(value, r.metric, digits)


# Under a table that shows a figure in seconds: what it is and which way is better.
SECONDS_NOTE = "s: mysqlslap's figure in place of TPS, the seconds it took to run all its queries (lower is better)"


def _notes(rows: Sequence[Listed], *notes: str) -> list[str]:
    found = legend(rows)
    seconds = [SECONDS_NOTE] if any(r.metric == metric.SECONDS for r in rows) else []
    points = [r for r in rows if isinstance(r, AnalysedPoint)]
    return [*notes, *seconds, *together_notes(points), *duration_notes(points), *([found] if found else [])]


def duration_notes(rows: Iterable[AnalysedPoint]) -> list[str]:
    """Imported points whose asked duration was not printed: how it was found, once."""
    found: dict[str, int] = {}
    for r in rows:
        how = _duration(r).get("from")
        if isinstance(how, str) and how in ("inferred", "last progress line", "measured"):
            found[how] = found.get(how, 0) + 1
    words = {"inferred": "inferred from the measured time (600.55 s measured: 600 s asked)",
             "last progress line": "taken from the tool's last interval report",
             "measured": "the measured time (a run of a number of transactions)"}
    return [f"duration of {n} imported point{'s' if n > 1 else ''}: {words[how]}; `results --json` has the "
            "measured time beside it (source.duration)" for how, n in found.items()]


def together_notes(rows: Iterable[AnalysedPoint]) -> list[str]:
    """A line per run whose points several load generators drove at once."""
    runs: dict[int, tuple[int, list[str]]] = {}
    for r in rows:
        if loadgens.parts(r):
            runs.setdefault(r.run_id, (loadgens.count(r), [str(p.host) for p in loadgens.parts(r)]))
    return [f"run {run}: {n} load generators drove each point at once ({', '.join(hosts)}); "
            "`results --parts` shows each one's share and whether they were the bound"
            for run, (n, hosts) in runs.items()]


@dataclass(frozen=True)
class _PartLine:
    """A line of the parts table: one load generator's part of a point."""

    point: AnalysedPoint
    part: loadgens.Part
    first: bool  # the point's first part: the line that names the point


def parts_table(rows: Iterable[AnalysedPoint], wide: bool = False) -> FittedTable:
    """Each load generator's share of the points several drove together (`results
    --parts`): its threads and figures, its CPU, and what bound the point."""
    rows = list(rows)
    lines = [_PartLine(r, p, k == 0) for r in rows for k, p in enumerate(loadgens.parts(r))]

    def busy(line: _PartLine) -> str:
        pct = line.part.host_cpu_busy_pct
        return "-" if pct is None else f"{pct:.0f} %"

    columns: tuple[Column, ...] = (
        Column("point", "right", lambda r: str(r.point.point_id) if r.first else ""),
        Column("label", "left", lambda r: escape(r.point.label) if r.first else "", 3),
        Column("workload", "left", lambda r: escape(r.point.workload) if r.first else "", 2),
        Column("host", "left", lambda r: escape(str(r.part.host))),
        Column("threads", "right", lambda r: str(r.part.threads)),
        Column("clients", "right", lambda r: str(r.part.clients), WIDE_ONLY),
        Column("tps", "right", lambda r: fmt(r.part.tps, 1)),
        Column("qps", "right", lambda r: fmt(r.part.qps, 1), WIDE_ONLY),
        Column("p95 ms", "right", lambda r: fmt(r.part.latency_p95_ms, 3), 1),
        Column("load gen.\ncores", "right", lambda r: fmt(r.part.loadgen_cpu_cores, 2)),
        Column("host\nbusy", "right", busy),
    )
    bounds = [f"point {r.point_id}: {escape(loadgens.bound([r]) or '')}" for r in rows]
    return fitted("each load generator's share of the points driven together (fleet run --together)",
                   columns, lines, wide, bounds)


def _differing(columns: Sequence[Column], rows: Sequence[Listed], wide: bool,
               of: Callable[[Any], Listed] | None = None) -> tuple[Column, ...]:
    """The table's columns with, after threads, one for each fact of the configuration in
    which the rows differ (clients, dataset, duration ...: report/differing.py). `of`:
    the point or summary a line of the table shows, where a line is not one itself."""
    shown = [c.header.replace("\n", " ") for c in columns if wide or c.drop is not WIDE_ONLY]
    at = next(k for k, c in enumerate(columns) if c.header == "threads") + 1
    facts = differing.columns(rows, shown)
    if of is not None:
        facts = [_through(c, of) for c in facts]
    return (*columns[:at], *facts, *columns[at:])


def _through(column: Column, of: Callable[[Any], Listed]) -> Column:
    """A column of a point's or summary's that shows it on a line of another table."""
    cell = column.cell
    return replace(column, cell=lambda line: cell(of(line)))


def points_table(rows: Iterable[AnalysedPoint], title: str | None = None, wide: bool = False) -> FittedTable:
    """Stored points (analysis.load rows) as a table: the tool's printed figure (TPS, or
    mysqlslap's seconds) and dbarena's steady-state mean side by side."""
    rows = list(rows)
    # The bound columns only where a point has one (its server was sampled): none for imports.
    columns = POINT_COLUMNS if any(r.bound for r in rows) else \
        tuple(c for c in POINT_COLUMNS if c.header not in ("bound", "bound evidence"))
    return fitted(title, _differing(columns, rows, wide), rows, wide, _notes(rows))


def _half_width(r: LevelSummary) -> str:
    """The 95 % interval as +- a share of the mean: narrow enough for the default columns."""
    if r.ci_low is None or r.ci_high is None or not r.mean:
        return "-"
    return f"\u00b1{(r.ci_high - r.ci_low) / 2 / r.mean:.1%}"


def _steady_median(r: LevelSummary) -> bool:
    """Is the summary's median over steady-state means (not the tools' printed figures)?"""
    return r.statistic not in (None, analysis.PRINTED)


def summary_table(rows: Iterable[LevelSummary], wide: bool = False) -> FittedTable:
    """analysis.summaries rows: one per label and configuration key. Where the median
    is over steady-state means, --wide shows the median of the tools' printed figures
    beside it (what a published table would show)."""
    rows = list(rows)
    variants = any(r.variant for r in rows)
    printed = any(_steady_median(r) for r in rows)
    steady = _steady_median

    def within(r: LevelSummary) -> str:
        return "*" if r.interval == "within one run" else ""

    shown_percentile = "latency_p99_ms" if _has(rows, "latency_p99_ms") else "latency_p95_ms"
    columns: tuple[Column, ...] = (
        Column("label", "left", lambda r: escape(r.label)),
        Column("engine", "left", lambda r: r.engine),
        Column("workload", "left", lambda r: escape(r.workload)),
        Column("threads", "right", lambda r: str(r.threads)),
        *((Column("variant", "left", lambda r: escape(r.variant or "-")),) if variants else ()),
        Column("config", "left", lambda r: (r.config_key or "-")[:6], WIDE_ONLY),
        Column("metric", "left", lambda r: r.metric, WIDE_ONLY),
        # Runs, and the sessions (stored runs) they come from where more than one: what a
        # comparison replicates (stats/sessions.py); "6 in 2" is 6 runs in 2 sessions.
        Column("n", "right", lambda r: f"{r.n}" + (f" in {r.sessions}" if r.sessions > 1 else "")
               + (f" (+{r.failed} failed)" if r.failed else "")),
        Column("median", "right", lambda r: _shown(r, r.median) + ("\u2020" if steady(r) else "")),
        *((Column("printed\nmedian", "right", lambda r: _shown(r, r.printed_median) if steady(r) else "=",
                  WIDE_ONLY),) if printed else ()),
        Column("mean", "right", lambda r: _shown(r, r.mean), WIDE_ONLY),
        Column("stdev", "right", lambda r: _shown(r, r.stdev), WIDE_ONLY),
        Column("95 % CI", "right", lambda r: _half_width(r) + within(r), 3),
        Column("95 % interval", "right", lambda r: _interval(r.ci_low, r.ci_high, _digits(r)) + within(r),
               WIDE_ONLY),
        Column("CV", "right", lambda r: f"{r.cv:.1%}" if r.cv is not None else "-", 2),
        # One percentile by default, p99 where there is one (else the p95 sysbench prints).
        *(Column(f"{name} ms", "right", _percentile_of(column), 1 if column == shown_percentile else WIDE_ONLY)
          for column, name in (("latency_p95_ms", "p95"), ("latency_p99_ms", "p99"))
          if _has(rows, column)),
        *((Column("offered", "right", lambda r: fmt(r.target_tps, 0)),) if any(r.target_tps for r in rows) else ()),
        *((Column("capacity", "right", _capacity_cell),) if any(r.capacity for r in rows) else ()),
        Column("warn", "left", _warnings),
    )
    captions = []
    for r in rows:
        if r.capacity is not None:
            captions.append(_capacity_caption(r))
    if printed:
        captions.append("\u2020 median of each run's steady-state mean (warm-up excluded, from its per-second "
                        "series); " + ("'printed median': of the figures the tool printed ('=': the same)" if wide
                                       else "--wide adds the median of the figures the tool printed"))
    if any(_printed_percentiles(r) for r in rows):
        captions.append(f"{PRINTED_MARK} median of the percentile each run printed (there are no histograms to "
                        "merge): not a percentile of all their transactions; --figures shows its mean and spread")
    if any(r.interval == "within one run" for r in rows):
        captions.append("* one repeat: the interval within that run (its precision), blind to run-to-run "
                        "variation; a comparison's verdict needs sessions: --sessions 2")
    if any(r.sessions > 1 for r in rows):
        captions.append("n: runs, \"in N\" the sessions they come from (each a stored run: its servers started "
                        "once); comparisons are over sessions")
    return fitted("summary over repeats (one line per label and configuration; 95 % CI: \u00b1 a share of "
                       "the mean)", _differing(columns, rows, wide), rows, wide, _notes(rows, *captions))


def _capacity_cell(r: LevelSummary) -> str:
    """A closed-loop group's capacity at its objective (--slo): its TPS, or why none."""
    found = r.capacity
    if found is None:
        return ""
    tps = found.get("tps")
    return f"{tps:,.0f}" if isinstance(tps, (int, float)) else "none"


def _capacity_caption(r: LevelSummary) -> str:
    """What a capacity is, in one line: its objective, bracket, interval or reason."""
    found = r.capacity or {}
    tps, low, high = found.get("tps"), found.get("ci_low"), found.get("ci_high")
    met, failed = found.get("met_by"), found.get("failed_at")
    head = f"capacity of {escape(r.label)} {escape(r.workload)} at {r.threads} threads at {found.get('slo')}"
    if not isinstance(tps, (int, float)):
        return f"{head}: none ({escape(str(found.get('reason') or ''))})"
    said = [f"{tps:,.0f} TPS"]
    if isinstance(low, (int, float)) and isinstance(high, (int, float)):
        said.append(f"95 % CI {low:,.0f} to {high:,.0f} between sessions")
    if isinstance(met, (int, float)):
        said.append(f"met at {met:,.0f} offered" + (f", missed at {failed:,.0f}" if isinstance(failed, (int, float))
                                                     else ""))
    reason = found.get("reason")
    return f"{head}: {'; '.join(said)}" + (f" ({escape(str(reason))})" if reason else "")


# Beside a summary's percentile that is the median of the ones its runs printed.
PRINTED_MARK = "\u2021"

# The percentiles a summary table may show, by column: their pooled figure.
_PERCENTILES: dict[str, Callable[[LevelSummary], float | None]] = {
    "latency_p95_ms": lambda r: r.latency_p95_ms,
    "latency_p99_ms": lambda r: r.latency_p99_ms,
}


def _printed_percentiles(r: LevelSummary) -> bool:
    return any(pooled(r) is None and column in r.over_repeats for column, pooled in _PERCENTILES.items())


def _percentile(r: LevelSummary, column: str) -> str:
    """A summary's percentile: of its merged histograms (or its one point); else the
    median of what each run printed, marked as such."""
    pooled = _PERCENTILES[column](r)
    if pooled is not None:
        return fmt(pooled, 3)
    over = r.over_repeats.get(column)
    return "-" if over is None else f"{fmt(over['median'], 3)}{PRINTED_MARK}"


def _has(rows: list[LevelSummary], column: str) -> bool:
    """Does any summary have this percentile, pooled or printed?"""
    return any(_PERCENTILES[column](r) is not None or column in r.over_repeats for r in rows)


def _percentile_of(column: str) -> Callable[[LevelSummary], str]:
    return lambda r: _percentile(r, column)


@dataclass(frozen=True)
class _FigureLine:
    """A line of the figures table: one figure of a summary over its repeats."""

    summary: LevelSummary
    figure: JSONObject  # repeats.OverRepeats.as_dict


def figures_table(rows: Iterable[LevelSummary], wide: bool = False) -> FittedTable:
    """Every figure of each summary (analysis.summaries rows) over its repeats, a line per
    figure: median, mean, n and spread, and what it is (stats/repeats.py)."""
    rows = list(rows)
    lines = [_FigureLine(r, f) for r in rows for f in r.over_repeats.values()]
    columns: tuple[Column, ...] = (
        Column("label", "left", lambda r: escape(r.summary.label)),
        Column("engine", "left", lambda r: r.summary.engine, 4),
        Column("workload", "left", lambda r: escape(r.summary.workload)),
        Column("threads", "right", lambda r: str(r.summary.threads)),
        *((Column("variant", "left", lambda r: escape(r.summary.variant or "-")),)
          if any(r.summary.variant for r in lines) else ()),
        Column("figure", "left", lambda r: f"{r.figure['source']} {_FIGURE_NAMES[r.figure['figure']]}"),
        Column("n", "right", lambda r: str(r.figure["n"])),
        Column("median", "right", lambda r: fmt(r.figure["median"], 3)),
        Column("mean", "right", lambda r: fmt(r.figure["mean"], 3)),
        Column("stdev", "right", lambda r: fmt(r.figure["stdev"], 3), WIDE_ONLY),
        Column("min .. max", "right", lambda r: f"{fmt(r.figure['min'], 3)} .. {fmt(r.figure['max'], 3)}", 2),
    )
    # The facts that tell lines apart are their summaries' (a summary with lines).
    summarised = [r for r in rows if r.over_repeats]
    return fitted("every figure over repeats (one line per figure; printed: as the tool printed it per run; "
                   "computed: by dbarena from each run's transactions)",
                   _differing(columns, summarised, wide, of=lambda line: line.summary), lines, wide)


_FIGURE_NAMES = {column: name for column, name in repeats.FIGURES}


def _digits(r: LevelSummary) -> int:
    return 3 if r.metric == metric.SECONDS else 1


def profile_change_lines(rows: Iterable[LevelComparison]) -> list[str]:
    """After compare's table, per level both sides profiled: the functions whose CPU time
    per transaction changed most (self time, us a transaction), as plain lines."""
    out: list[str] = []
    for r in rows:
        if not r.profile_changes:
            continue
        where = f"{r.engine} {r.workload} threads={r.threads}" + (f" [{r.label}]" if r.label else "")
        out += ["", f"on CPU, {r.b} against {r.a} at {where}: the functions whose time per transaction changed most "
                    "(self time, us a transaction)"]
        width = min(60, max(len(str(c["function"])) for c in r.profile_changes))
        out.append(f"  {'function':<{width}}  {r.a[:10]:>10}  {r.b[:10]:>10}  {'change':>10}")
        for c in r.profile_changes:
            name = str(c["function"])
            name = name if len(name) <= width else name[:width - 1] + "…"
            us = [v if isinstance(v := c[k], (int, float)) else 0.0 for k in ("a_us_per_tx", "b_us_per_tx",
                                                                          "change_us_per_tx")]
            out.append(f"  {name:<{width}}  {us[0]:>10.2f}  {us[1]:>10.2f}  {us[2]:>+10.2f}")
    return out


def comparison_table(rows: Iterable[LevelComparison], wide: bool = False) -> FittedTable:
    rows = list(rows)
    a, b = rows[0].a, rows[0].b
    by_variant = rows[0].by == "variant"
    # Two labels that hold variants: a row per variant at one level, each named.
    variants = any(r.variant for r in rows)

    def verdict(r: LevelComparison) -> str:
        return ("[bold]" if r.significant else "") + escape(r.verdict_text) + ("[/]" if r.significant else "")

    columns: tuple[Column, ...] = (
        *((Column("label", "left", lambda r: escape(r.label or "")),) if by_variant else ()),
        Column("engine", "left", lambda r: r.engine),
        Column("workload", "left", lambda r: escape(r.workload) + ("§" if r.slo else "")
               + ("†" if r.offered_tps is not None else "")),
        *((Column("variant", "left", lambda r: escape(r.variant or "")),) if variants else ()),
        Column("threads", "right", lambda r: str(r.threads)),
        Column("metric", "left", lambda r: r.metric, WIDE_ONLY),
        Column(escape(a), "right", lambda r: metric.shown(r.a_mean, r.metric)),
        Column(escape(b), "right", lambda r: metric.shown(r.b_mean, r.metric)),
        Column("n", "right", lambda r: f"{r.a_n}/{r.b_n}", 2),
        Column("sessions", "right", lambda r: f"{r.a_sessions}/{r.b_sessions}", 4),
        Column("ratio", "right", lambda r: f"{r.ratio:.3f}" if r.ratio is not None else "-"),
        Column("95 % CI", "right", lambda r: _interval(r.ratio_ci_low, r.ratio_ci_high, 3), 1),
        Column("verdict", "left", verdict, wraps=True),
    )
    notes = [f"{SECONDS_NOTE}: a ratio below 1 is faster"] if any(r.metric == metric.SECONDS for r in rows) else []
    notes += [line for r in rows if (line := _cost_line(r))]
    notes += [f"§ capacity at {escape(slo)}: the highest offered rate that met it (its TPS achieved), each "
              "session's own search; not the closed-loop throughput" for slo in dict.fromkeys(r.slo for r in rows if r.slo)]
    notes += [f"† p95 latency at {metric.rate_shown(rate)} TPS offered (ms; lower is better, a ratio below 1 is faster): each "
              "session's mean of its runs' p95, counted from each transaction's scheduled start"
              for rate in dict.fromkeys(r.offered_tps for r in rows if r.offered_tps is not None)]
    # Which statistic it shows, said: `results --summary` shows medians, this means.
    return fitted(f"{escape(b)} against {escape(a)} (each side's mean over its sessions, a session's over its "
                  f"runs; ratio = {escape(b)} / {escape(a)}; n: runs of each)", columns, rows, wide, notes)


def _cost_line(r: LevelComparison) -> str:
    """What one transaction of B cost against A's at a level, where it differs most
    beyond the sessions' spread (stats/efficiency.differs_most): '' where none does."""
    if r.cost_difference is None:
        return ""
    found = efficiency.Difference.of_json(r.cost_difference)
    return f"cost per transaction, {escape(r.workload)} at {r.threads} threads: {escape(found.words(r.a, r.b))}"


def facts_table(facts: JSONObject) -> Table:
    table = Table(show_header=False)
    table.add_column("fact")
    table.add_column("value")
    for key in sorted(facts):
        value = facts[key]
        if key.endswith("_bytes") and isinstance(value, int):
            value = f"{value / 1024 ** 3:.1f} GiB"
        table.add_row(key, escape(printable(str(value))))
    return table


def precision_table(states: Sequence[PointState], target: float | None) -> FittedTable:
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
    return fitted(title, columns, states)
