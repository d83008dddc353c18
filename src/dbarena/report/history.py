"""The history view, results in, text out: each series of runs over time (stats/history.py)
as terminal lines, as Markdown, and as the HTML report's "History" section (the metric
against time, a chart per series drawn with matplotlib as report/charts.py draws, change
points marked and their causes written beside them).
"""

from __future__ import annotations

import hashlib
import io
import re
from datetime import datetime

from dbarena.bulk import collector_paused
from dbarena.report.escaping import html_text, md_text
from dbarena.stats import metric
from dbarena.stats.history import History, RunValue, Series

# A series is drawn in the report from this many runs on: fewer are not a history.
MIN_CHART_RUNS = 3
MAX_CHARTS = 40  # a report of a store with hundreds of series draws the first ones, and says so


def _value(value: float | None, judged_by: str) -> str:
    return metric.shown(value, judged_by)


def _interval(r: RunValue, judged_by: str) -> str:
    if r.ci_low is None or r.ci_high is None:
        return "-"
    return f"{_value(max(r.ci_low, 0.0), judged_by)} .. {_value(r.ci_high, judged_by)}"


def _marks(s: Series) -> dict[int, str]:
    return {c.run_id: f"{c.change_pct:+.1f} %" for c in s.change_points}


def _header(s: Series) -> str:
    return f"{s.name}: {len(s.runs)} run(s), {metric.MEANING[s.metric]}"


def text(history: History) -> str:
    """For the terminal: per series its runs (value, 95 % interval, repeats) oldest first,
    a change point marked on the run that starts the new level, and the change points'
    sizes and causes below."""
    if not history.series:
        return "no series to show"
    out: list[str] = []
    for s in history.series:
        out.append(_header(s))
        marks = _marks(s)
        out.append(f"  {'run':>5}  {'started (UTC)':16}  {'n':>3}  {'value':>12}  {'95 % interval':>24}  change")
        for r in s.runs:
            started = r.started_at[:16].replace("T", " ")
            failed = f" ({r.failed} failed)" if r.failed else ""
            out.append(f"  {r.run_id:>5}  {started:16}  {r.n:>3}  {_value(r.mean, s.metric):>12}  "
                       f"{_interval(r, s.metric):>24}  {marks.get(r.run_id, '')}{failed}".rstrip())
        for c in s.change_points:
            out.append(f"  change point: {c.summary()}")
            out.append(f"    {c.text}; {c.runs_before} run(s) before, {c.runs_after} after")
        if s.note:
            out.append(f"  {s.note}")
        elif not s.change_points:
            out.append("  no change point")
        out.append("")
    return "\n".join(out).rstrip() + "\n"


def markdown(history: History) -> str:
    """For a pull request or a wiki: per series a table of its runs and its change points.
    Series names, change points' causes (settings, versions) and notes come from the
    store: through md_text, so that none adds a row, a heading or markup."""
    if not history.series:
        return "No series to show.\n"
    out = ["## History", ""]
    for s in history.series:
        out += [f"### {md_text(_header(s))}", "", "| run | started (UTC) | n | value | 95 % interval | change |",
                "|---:|---|---:|---:|---|---|"]
        marks = _marks(s)
        for r in s.runs:
            out.append(f"| {r.run_id} | {r.started_at[:16].replace('T', ' ')} | {r.n} | {_value(r.mean, s.metric)} | "
                       f"{_interval(r, s.metric)} | {('**' + marks[r.run_id] + '**') if r.run_id in marks else ''} |")
        out.append("")
        for c in s.change_points:
            out.append(f"- **{md_text(c.summary())}**: {md_text(c.text)}; {c.runs_before} run(s) before, "
                       f"{c.runs_after} after")
        if s.note:
            out.append(f"- {md_text(s.note)}")
        elif not s.change_points:
            out.append("- no change point")
        out.append("")
    return "\n".join(out)


def _when(r: RunValue) -> datetime | None:
    try:
        return datetime.fromisoformat(r.started_at)
    except ValueError:
        return None


def chart(s: Series) -> str:
    """The metric against time: each run's value with its 95 % interval, each segment's
    mean as a step, a dashed line at each change point with its size and causes beside it."""
    # matplotlib (a third of a second to import) only where a chart is drawn: `dbarena
    # history` and `gate` print text, and `--help` lists the history command.
    import matplotlib
    from matplotlib import dates
    from matplotlib.figure import Figure

    from dbarena.report import charts  # noqa: F401  (its rcParams: the same fonts and grid as every chart)
    from dbarena.report.layout import fit
    from dbarena.report.svgparts import unique_ids

    runs = [r for r in s.runs if r.mean is not None and _when(r) is not None]
    with collector_paused():
        ax = Figure(figsize=(7.0, 3.2)).add_subplot()
        # matplotlib.dates has no annotations: date2num gives days since its epoch, a float.
        x = [float(dates.date2num(_when(r))) for r in runs]  # type: ignore[no-untyped-call]
        y = [r.mean or 0.0 for r in runs]
        low = [(r.mean or 0.0) - max(r.ci_low, 0.0) if r.ci_low is not None else 0.0 for r in runs]
        high = [(r.ci_high - (r.mean or 0)) if r.ci_high is not None else 0.0 for r in runs]
        ax.errorbar(x, y, yerr=[low, high], fmt="o-", ms=4, lw=1, capsize=2, color="#1f77b4", ecolor="#9ab")
        bounds = [0, *(next(i for i, r in enumerate(runs) if r.run_id == c.run_id) for c in s.change_points
                       if any(r.run_id == c.run_id for r in runs)), len(runs)]
        for a, b in zip(bounds, bounds[1:]):
            segment = y[a:b]
            if segment:
                ax.hlines(sum(segment) / len(segment), x[a], x[b - 1], colors="#555", linestyles="solid", lw=2,
                          alpha=0.5)
        top = max(y, default=1.0)
        for c in s.change_points:
            at = next((x[i] for i, r in enumerate(runs) if r.run_id == c.run_id), None)
            if at is None:
                continue
            ax.axvline(at, color="#b00020", ls="--", lw=1)
            causes = "\n".join(cause.text() for cause in c.causes[:4]) or "no recorded fact changed"
            ax.annotate(f"{c.change_pct:+.1f} % at run {c.run_id}\n{causes}", xy=(at, top), fontsize=7,
                        color="#b00020", va="top", ha="left", xytext=(4, 0), textcoords="offset points")
        ax.set_ylim(bottom=0)
        ax.set_ylabel(metric.MEANING[s.metric].split(" (")[0])
        ax.set_title(s.name, fontsize=9)
        ax.xaxis_date()
        fig = ax.figure
        assert isinstance(fig, Figure)
        fig.autofmt_xdate()
        fit(fig)
        key = "h" + hashlib.sha256(s.name.encode()).hexdigest()[:8]
        buf = io.StringIO()
        with matplotlib.rc_context({"svg.hashsalt": key}):
            fig.savefig(buf, format="svg")
    svg = buf.getvalue()
    # As charts._svg: no XML prologue nor metadata (a timestamp); ids unique per chart.
    svg = re.sub(r"<metadata>.*?</metadata>", "", svg[svg.index("<svg"):], flags=re.S)
    return unique_ids(svg, key)


def section(history: History) -> str:
    """The HTML report's History section: a chart per series of at least MIN_CHART_RUNS
    runs, the change points listed under it; empty when no series is that long."""
    shown = [s for s in history.series if len([r for r in s.runs if r.mean is not None]) >= MIN_CHART_RUNS]
    if not shown:
        return ""
    parts = ['<section id="history"><h2>History</h2>',
             f'<p class="note">Each series of runs of one label, workload, level and dataset over time: every '
             f"run's value with its 95 % interval, each level between change points as a grey line, change points "
             f"(Apache Otava, p &lt; 0.001) dashed with what changed there. Series of at least {MIN_CHART_RUNS} runs; "
             f"`dbarena history` lists them all.</p>"]
    for s in shown[:MAX_CHARTS]:
        items = "".join(f"<li><strong>{html_text(c.summary())}</strong>: {html_text(c.text)}</li>"
                        for c in s.change_points) or "<li>no change point</li>"
        parts.append(f'<figure class="chart chart-history">{chart(s)}</figure><ul class="note">{items}</ul>')
    if len(shown) > MAX_CHARTS:
        parts.append(f'<p class="note">{len(shown) - MAX_CHARTS} more series not drawn: see `dbarena history`.</p>')
    parts.append("</section>")
    return "\n".join(parts)
