"""Charts as SVG text (matplotlib, no JavaScript): inlined in the HTML report, written
as files next to the Markdown one. Render only: figures come from report.data.

Drawing was most of a report's time on a 10,000-point store (130 series), so:
- each chart is laid out and drawn once: no bbox_inches="tight" (nor a layout engine),
  which lays the whole figure out a second time to measure it, lines included; layout.fit
  sets the margins from the few texts around the axes, measured without drawing;
- one Line2D per style, not per series (_Plot);
- the legend below the axes (report.layout), out of the lines' way, naming every series;
  no search for its "best" place among hundreds of lines (that was the dearest part of a
  draw). Beyond the ten colours of the cycle a series is told apart by its marker too;
- a 95 % interval is drawn from 0 at least (a throughput is never negative), as a band
  for up to MAX_BANDS labels and as error bars beyond, where bands merge into one mass;
- the latency percentiles (p50, p95, p99, p99.9) are one figure of four small axes
  sharing x: small multiples, a legend once;
- no pyplot: its import and figure registry are not needed to write SVG;
- the garbage collector paused while drawing (bulk.collector_paused).

Every element of a label's series (line, markers, band, fit, bars, per-second cut and
dips, hover points) carries the class label_class(label), and its legend entry that
class and "key": the HTML report hides a label in every chart with one CSS rule per
label (report/html.py), no script. Up to MAX_TOGGLED series a chart; beyond, lines are
merged per style as above and untagged (the report then offers no toggles).
"""

from __future__ import annotations

import hashlib
import io
import itertools
import math
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextvars import ContextVar
from typing import Any, Literal, TypedDict, Unpack

import matplotlib
import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Rectangle
from matplotlib.ticker import FuncFormatter, LogLocator, MaxNLocator, NullFormatter
from matplotlib.transforms import blended_transform_factory

from dbarena.bulk import collector_paused
from dbarena.model import Sample
from dbarena.records import JSON, JSONObject, json_object
from dbarena.report.curves import Curve
from dbarena.report.data import Section
from dbarena.report.levels import LevelRow
from dbarena.report.scaling import usl
from dbarena.report.layout import fit, legend_below, legend_order
from dbarena.stats import capacity
from dbarena.report.svgparts import (hover_layer, hover_tips, label_class as label_class, label_classes, label_tag,
                                      tag_artist, tag_labels, unique_ids)

matplotlib.rcParams.update({
    "svg.fonttype": "none",  # text stays text: smaller, selectable, searchable
    # The font the texts are measured in first, then a few alike: each SVG text names them
    # all (matplotlib's list of 12 made a third of a chart's bytes).
    "font.sans-serif": ["DejaVu Sans", "Verdana", "Arial", "Helvetica"],
    "font.size": 9,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "figure.dpi": 100,
    # Labels, settings and versions are drawn as written: "$...$" in one is not mathtext
    # (an unknown \command in it would fail the whole report).
    "text.parse_math": False,
})

COLORS: list[str] = list(matplotlib.rcParams["axes.prop_cycle"].by_key()["color"])
MAX_SERIES = len(COLORS)  # series told apart by colour alone; bars beyond this many labels are not drawn
MARKERS = ("o", "s", "^", "D", "v", "P")  # with the colour, a series' marker: 60 series told apart
MAX_BANDS = 5  # labels whose 95 % intervals are drawn as bands; beyond, error bars
# Series a chart tags for toggling (see the docstring): a line per series and style, not
# per style. Far beyond what a reader toggles one by one; a 130-series chart drawn a line
# per series took about 1.6 times as long (one measurement, 2 cores).
MAX_TOGGLED = 40
WIDTH = 7.0  # inches


def _axes(height: float, section: Section) -> Axes:
    ax = Figure(figsize=(WIDTH, height)).add_subplot()
    if len(section.labels) <= MAX_TOGGLED:
        tag_labels(ax, itertools.count(1))
    return ax


def _marker(i: int) -> str:
    """The marker of the i-th series: a new one each time the colours come round again."""
    return MARKERS[(i // len(COLORS)) % len(MARKERS)]



class LineStyle(TypedDict, total=False):
    """What a chart's line may set of matplotlib's style (the legend draws its entries
    with the same)."""

    color: str
    linestyle: Literal["-", "--", "-.", ":", "none"]
    linewidth: float
    marker: str
    zorder: int
    alpha: float
    markerfacecolor: str
    markersize: float


class _Plot:
    """A chart's lines, gathered and then drawn as one Line2D per style (colour, marker,
    dashes), the series of a style joined with NaN between them: the same picture (NaN
    breaks a line, markers sit on every point), but a chart of 130 series makes and draws
    ten artists, not 130, and an artist's fixed cost (creation, clipping, transforms, its
    SVG group) far exceeds that of a few dozen points. Up to MAX_SERIES series each style
    holds one series, drawn in label order as before. The legend names series through
    proxy lines of the same style. On a chart that tags its series (tag_labels) the label is
    part of the style: a line per series and style, whose group carries the label's class."""

    def __init__(self, ax: Axes) -> None:
        self.ax = ax
        # (style, tagged label) -> x, y
        self.lines: dict[tuple[tuple[tuple[str, Any], ...], str | None], tuple[list[float], list[float]]] = {}
        self.entries: list[tuple[str, str, LineStyle, str | None]] = []  # (series, text, style, label)

    def line(self, x: Iterable[float], y: Iterable[float], legend: str | None = None, series: str | None = None,
             tips: Iterable[str] | None = None, label: str | None = None, **style: Unpack[LineStyle]) -> None:
        """One series' line; `legend` its legend text, `series` the name it is counted
        under in the legend when one series has several entries (default: the text);
        `tips` the hover text of each point; `label` the label it belongs to (toggled
        with it in the HTML report)."""
        x, y = list(x), list(y)
        tag = label_tag(self.ax, label)
        xs, ys = self.lines.setdefault((tuple(sorted(style.items())), tag), ([], []))
        if xs:
            xs.append(math.nan)
            ys.append(math.nan)
        xs.extend(x)
        ys.extend(y)
        if legend is not None:
            self.entries.append((series or legend, legend, style, tag))
        if tips is not None:
            hover_tips(self.ax).extend((px, py, text, tag) for px, py, text in zip(x, y, tips))

    def draw(self) -> None:
        for (style, tag), (xs, ys) in self.lines.items():
            (drawn,) = self.ax.plot(xs, ys, **dict(style))
            tag_artist(self.ax, drawn, tag)
        self._legend()

    def _legend(self) -> None:
        """Every entry, below the axes (layout.legend_below)."""
        if not self.entries:
            return
        entries = [(text, style, tag) for _, text, style, tag in self.entries]
        handles = [Line2D([], [], **style) for _, style, _ in entries]
        fig = self.ax.figure
        assert isinstance(fig, Figure)
        legend = legend_below(fig, handles, [text for text, _, _ in entries])
        _tag_legend(self.ax, legend, [tag for _, _, tag in entries])


def _tag_legend(ax: Axes, legend: Any, labels: Sequence[str | None]) -> None:
    """Each legend entry (its handle and text) tagged as its label's key; `labels` in
    the order the entries were given."""
    ordered = [labels[i] for i in legend_order(legend)]
    for handle, text, label in zip(legend.legend_handles, legend.get_texts(), ordered):
        tag_artist(ax, handle, label, key=True)
        tag_artist(ax, text, label, key=True)


# PNG copies, when asked for (charts(png=...)): chart name -> PNG bytes. Many sites an
# article goes to take no SVG; 200 dpi is sharp on a high-density screen and in print.
_PNG: ContextVar[dict[str, bytes] | None] = ContextVar("dbarena_png", default=None)
PNG_DPI = 200


def _svg(ax: Axes, section: Section, name: str) -> str:
    """SVG text of the chart, its ids made unique by a key of section and chart name
    (so the same chart gives the same text, whatever else the process draws)."""
    fig = ax.figure
    assert isinstance(fig, Figure)
    for each in fig.axes:
        if each.get_xlabel() == "threads" or getattr(each, "_dbarena_threads", False):
            each.xaxis.set_major_locator(MaxNLocator(integer=True))  # no 1.25 threads
    fit(fig)
    key = "c" + hashlib.sha256(f"{section.engine}\0{section.workload}\0{name}".encode()).hexdigest()[:8]
    pngs = _PNG.get()
    if pngs is not None:
        raster = io.BytesIO()
        fig.savefig(raster, format="png", dpi=PNG_DPI)
        pngs[name] = raster.getvalue()
    buf = io.StringIO()
    with matplotlib.rc_context({"svg.hashsalt": key}):
        fig.savefig(buf, format="svg")
    text = buf.getvalue()
    # Drop the XML prologue and the RDF metadata block (a timestamp and namespace
    # identifiers): smaller, and the same chart gives the same text.
    text = re.sub(r"<metadata>.*?</metadata>", "", text[text.index("<svg"):], flags=re.S)
    hover = "".join(hover_layer(each) for each in fig.axes)
    if hover:
        end = text.rindex("</svg>")
        text = text[:end] + hover + text[end:]
    return unique_ids(label_classes(text), key)


def _by_label(section: Section, field: str) -> Iterator[tuple[int, str, list[tuple[LevelRow, float]]]]:
    """(index of the label among the section's, which sets its colour and marker in
    every chart; label; its rows with the field, each with its value)."""
    for i, label in enumerate(section.labels):
        rows = [(r, value) for r in section.rows if r.label == label and (value := r.figure(field)) is not None]
        if rows:
            yield i, label, rows


def _color(i: int) -> str:
    return COLORS[i % len(COLORS)]


def throughput(section: Section) -> str | None:
    """TPS (or QPS) against threads, a line per label, 95 % intervals where repeats give
    them (bands, or error bars beyond MAX_BANDS labels; from 0 at least), and the fitted
    USL curve dashed."""
    metric = section.metric if section.metric in ("tps", "seconds") else "qps"
    ax = _axes(3.6, section)
    plot = _Plot(ax)
    drawn = list(_by_label(section, metric))
    span = max((r.threads for _, _, rows in drawn for r, _ in rows), default=1)
    for i, label, rows in drawn:
        color = _color(i)
        x = [r.threads for r, _ in rows]
        y = [value for _, value in rows]
        plot.line(x, y, label, marker=_marker(i), color=color, tips=[_tip(label, r, metric) for r, _ in rows],
                  label=label)
        band = [(r.threads, max(low, 0.0), high) for r, _ in rows
                if metric == "tps" and (low := r.tps_ci_low) is not None and (high := r.tps_ci_high) is not None]
        if len(drawn) > MAX_BANDS and band:
            # Error bars, each label's a little aside (dodged) so that they do not cover
            # each other at a level.
            bx, lo, hi = zip(*band)
            dx = (i - (len(section.labels) - 1) / 2) * span * 0.006
            tag_artist(ax, ax.vlines([b + dx for b in bx], lo, hi, color=color, linewidth=1.2, alpha=0.7), label)
        elif len(band) >= 2:
            bx, lo, hi = zip(*band)
            tag_artist(ax, ax.fill_between(bx, lo, hi, color=color, alpha=0.15, linewidth=0), label)
        fit = section.usl.get(label)
        if fit and len(x) >= 3:
            xs = np.linspace(min(x), max(x), 100)
            plot.line(xs, usl(xs, fit.lambda_, fit.sigma, fit.kappa), linestyle="--", linewidth=0.8,
                      color=color, alpha=0.8, label=label)
    if not plot.lines:
        return None
    plot.draw()
    ax.set_xlabel("threads")
    ax.set_ylabel(_axis_label(metric))
    ax.set_title(f"{section.engine} {section.workload}: {_name(metric)} against threads"
                 + (" (dashed: USL fit)" if section.usl else ""))
    ax.set_ylim(bottom=0)
    return _svg(ax, section, "throughput")


def _tip(label: str, row: LevelRow, field: str, what: str = "", value: float | None = None) -> str:
    """A point's hover text: its series, level and exact figure (with its interval;
    `what`: which figure, said after it); `value`: the figure, where it is not the
    row's `field` (a bar's)."""
    if value is None:
        value = row.figure(field)
    unit = {"tps": "TPS", "qps": "QPS", "seconds": "s"}.get(field, "ms" if field.startswith("latency") else "")
    text = f"{label}, {row.threads} threads: {value:,.{3 if unit in ('s', 'ms') else 1}f} {unit}".rstrip()
    text += f" ({what})" if what else ""
    if field == "tps" and row.tps_ci_low is not None and row.tps_ci_high is not None:
        text += f" (95 % CI {max(row.tps_ci_low, 0):,.1f} .. {row.tps_ci_high:,.1f})"
    if row.n:
        text += f", {row.n} repeat(s)"
    return text


def _name(metric: str) -> str:
    return "seconds to run the queries" if metric == "seconds" else metric.upper()


def _axis_label(metric: str) -> str:
    return {"tps": "TPS (steady state)", "seconds": "seconds (lower is better)"}.get(metric, metric.upper())


def bars(section: Section) -> str | None:
    """Study A's view: a group of bars per thread level, one bar per label, of the
    tool's own figure (a bar where a label measured that level)."""
    metric = section.metric if section.metric in ("tps", "seconds") else "qps"
    levels = sorted({r.threads for r in section.rows if r.value is not None})
    labels = [label for label in section.labels if any(r.label == label and r.value is not None
                                                       for r in section.rows)]
    if not levels or not labels or len(labels) > MAX_SERIES:
        return None  # beyond one colour per label, bars cannot be told apart: the line chart stays
    ax = _axes(3.4, section)
    width = 0.8 / len(labels)
    for i, label in enumerate(labels):
        color = _color(section.labels.index(label))
        _label_bars(ax, section, label, levels, (i - (len(labels) - 1) / 2) * width, width, color, metric)
    ax.set_xticks(range(len(levels)), [str(n) for n in levels])
    ax.grid(axis="x", visible=False)
    ax.set_xlabel("thread level")  # categorical: not "threads", whose axis _svg makes numeric
    ax.set_ylabel(_axis_label(metric))
    ax.set_title(f"{section.engine} {section.workload}: {_name(metric)} per thread level, a bar per label")
    handles = [Rectangle((0, 0), 1, 1, color=_color(section.labels.index(label))) for label in labels]
    fig = ax.figure
    assert isinstance(fig, Figure)
    _tag_legend(ax, legend_below(fig, handles, labels), labels)
    ax.set_ylim(bottom=0)
    return _svg(ax, section, "bars")


def _label_bars(ax: Axes, section: Section, label: str, levels: list[int], offset: float, width: float,
                color: str, metric: str) -> None:
    """One label's bars (each tool's own figure, LevelRow.value), at `offset` in each
    level's group, and their hover tips."""
    values = {r.threads: value for r in section.rows if r.label == label and (value := r.value) is not None}
    xs = [j + offset for j, n in enumerate(levels) if n in values]
    heights = [values[n] for n in levels if n in values]
    for bar in ax.bar(xs, heights, width=width * 0.95, color=color, label=label):
        tag_artist(ax, bar, label)
    by_level = {r.threads: r for r in section.rows if r.label == label}
    hover_tips(ax).extend((x, h / 2, _tip(label, by_level[n], metric, value=values[n]), label_tag(ax, label))
                     for x, h, n in zip(xs, heights, [n for n in levels if n in values]))


def qps(section: Section) -> str | None:
    if section.metric == "qps" or not any(r.qps for r in section.rows):
        return None
    ax = _axes(3.2, section)
    plot = _Plot(ax)
    _lines(plot, section, "qps")
    plot.draw()
    ax.set_xlabel("threads")
    ax.set_ylabel("QPS")
    ax.set_title(f"{section.engine} {section.workload}: queries per second against threads")
    ax.set_ylim(bottom=0)
    return _svg(ax, section, "qps")


def _lines(plot: _Plot, section: Section, field: str, legend: bool = True, what: str = "") -> None:
    """A line per label of `field` against threads (`what`: said in each hover text)."""
    for i, label, rows in _by_label(section, field):
        plot.line([r.threads for r, _ in rows], [value for _, value in rows], label if legend else None,
                  marker=_marker(i), color=_color(i), label=label,
                  tips=[_tip(label, r, field, what) for r, _ in rows])


def latency(section: Section) -> str | None:
    """Average latency against threads, a line per label."""
    field = "latency_avg_ms"
    if not any(r.latency_avg_ms for r in section.rows):
        return None
    ax = _axes(3.2, section)
    plot = _Plot(ax)
    _lines(plot, section, field)
    plot.draw()
    ax.set_xlabel("threads")
    ax.set_ylabel("average latency (ms)")
    ax.set_title(f"{section.engine} {section.workload}: average latency against threads")
    ax.set_ylim(bottom=0)
    return _svg(ax, section, "latency")


# The latency percentiles (name, field, what): small multiples, one axes each.
PERCENTILE_CHARTS = (("p50", "latency_p50_ms", "median (p50)"), ("p95", "latency_p95_ms", "p95"),
                     ("p99", "latency_p99_ms", "p99"), ("p999", "latency_p999_ms", "p99.9"))


def percentiles(section: Section) -> str | None:
    """The latency percentiles against threads as small multiples: one figure, four axes
    (p50, p95, p99, p99.9) sharing x, a line per label in each (over repeats: of the
    merged histograms), one legend below them all. An axes without data says so."""
    if not any(r.figure(field) for _, field, _ in PERCENTILE_CHARTS for r in section.rows):
        return None
    fig = Figure(figsize=(WIDTH, 4.6))
    grid = fig.subplots(2, 2, sharex=True, squeeze=False)
    counter = itertools.count(1)  # one per figure: its group ids stay unique
    for ax, (name, field, what) in zip(grid.flat, PERCENTILE_CHARTS):
        if len(section.labels) <= MAX_TOGGLED:
            tag_labels(ax, counter)
        plot = _Plot(ax)
        _lines(plot, section, field, legend=False, what=what)
        plot.draw()
        ax.set_title(f"{what} latency (ms)", fontsize=9)
        ax._dbarena_threads = True
        if not plot.lines:
            ax.text(0.5, 0.5, "no distribution", transform=ax.transAxes, ha="center", va="center", color="#777")
        ax.set_ylim(bottom=0)
    for ax in grid[-1]:
        ax.set_xlabel("threads")
    first = grid.flat[0]
    fig.suptitle(f"{section.engine} {section.workload}: latency percentiles against threads", fontsize=10)
    names, handles = [], []
    for i, label in enumerate(section.labels):
        if any(r.label == label and r.figure(f) is not None for _, f, _ in PERCENTILE_CHARTS for r in section.rows):
            names.append(label)
            handles.append(Line2D([], [], marker=_marker(i), color=_color(i)))
    _tag_legend(first, legend_below(fig, handles, names), [label_tag(first, n) for n in names])
    return _svg(first, section, "latency_percentiles")


# Each label's point's per-second samples as the store reads them (store.samples_of).
Samples = Mapping[str, Sequence[Sample]]


def _at(value: float | None) -> float:
    """A per-second figure the store holds NOT NULL (a gap, were it ever null)."""
    return math.nan if value is None else value


def _numbers(value: JSON) -> list[float | None]:
    """A column of a server record (decoded JSON, checked by store/edge.py): its numbers,
    None where it holds none."""
    items = value if isinstance(value, list) else []
    return [v if isinstance(v, (int, float)) and not isinstance(v, bool) else None for v in items]


def per_second(section: Section, samples: Samples, server: Mapping[str, JSONObject] | None = None) -> str | None:
    """The per-second series of the chosen point of each label: warm-up cut dotted,
    dips marked; where `server` holds the point's server record (label -> it), what its
    server waited for on a second axis and its checkpoints as grey dashes, so that a dip
    lines up with its cause."""
    if not any(samples.values()):
        return None
    ax = _axes(3.2, section)
    plot = _Plot(ax)
    cuts: set[tuple[float, str, str | None]] = set()
    for i, label in enumerate(section.labels):
        color = _color(i)
        series = samples.get(label) or []
        if not series:
            continue
        info = section.series[label]
        assert info is not None  # samples are of a shown series' point (assemble.draw)
        dashes: Literal["-", "--", "-."] = ("-", "--", "-.")[(i // len(COLORS)) % 3]  # told apart beyond the colours
        plot.line([s.second for s in series], [s.tps for s in series],
                  f"{label} ({info.threads} threads)", series=label, color=color, linewidth=1, linestyle=dashes,
                  label=label)
        cut = info.steady_start_s
        # The same dotted line again would add nothing, unless it is toggled with another label.
        if cut and (cut, color, label_tag(ax, label)) not in cuts:
            cuts.add((cut, color, label_tag(ax, label)))
            tag_artist(ax, ax.axvline(cut, color=color, linestyle=":", linewidth=1), label)
        dips = set(info.dips_s)
        marked = [(s.second, s.tps) for s in series if s.second in dips]
        if marked:
            x, y = zip(*marked)
            plot.line(x, y, linestyle="none", marker="x", color="red", zorder=3, label=label)  # over every line
    plot.draw()
    ax.set_xlabel("second")
    ax.set_ylabel("TPS in that second")
    overlaid = _server_overlay(ax, section, server or {})
    ax.set_title(f"{section.engine} {section.workload}: per-second TPS (dotted: end of warm-up; x: dips"
                 + ("; thin: server waits; dashed: checkpoints)" if overlaid else ")"))
    ax.set_ylim(bottom=0)
    return _svg(ax, section, "per_second")


def _server_overlay(ax: Axes, section: Section, server: Mapping[str, JSONObject]) -> bool:
    """Each label's server-side waits (stats/bound.waiting) as a thin line on a second
    axis, in the label's colour, and its checkpoints; whether anything was drawn."""
    from dbarena.stats import bound as point_bound

    drawn, what = False, ""
    twin = None
    for i, label in enumerate(section.labels):
        record = server.get(label)
        if not record or not record.get("seconds"):
            continue
        seconds = [_at(s) for s in _numbers(record["seconds"])]
        series = {name: _numbers(column) for name, column in json_object(record.get("series")).items()}
        what, values = point_bound.waiting(point_bound.readings(record))
        if twin is None:
            twin = ax.twinx()
            setattr(twin, "_dbarena_twin_of", ax)  # layout.fit places it with ax
        twin.plot(seconds, [v if v is not None else math.nan for v in values], color=_color(i),
                  linewidth=0.7, alpha=0.6)
        for second in point_bound.checkpoint_seconds(series, seconds):
            ax.axvline(second, color="grey", linestyle="--", linewidth=0.8)
        drawn = True
    if twin is not None:
        twin.set_ylabel(what, fontsize="small")
        twin.set_ylim(bottom=0)
    return drawn


# The latency percentiles a curve draws (field, name, line style), and the objective's
# statistic besides where it is none of them (p90, p99.9, avg): dash-dotted.
Dashes = Literal["-", "--", ":", "-."]
CURVE_LATENCIES: tuple[tuple[str, str, Dashes], ...] = (
    ("latency_p50_ms", "p50", ":"), ("latency_p95_ms", "p95", "--"), ("latency_p99_ms", "p99", "-"))
OBJECTIVE_COLOR = "#d62728"


def _curve_tip(c: Curve, offered: float, tps: float | None, lat: Sequence[float | None], meets: bool,
               why: str) -> str:
    shown = " / ".join("-" if v is None else f"{v:,.3g}" for v in lat)
    return (f"{c.label}, {c.threads} threads: offered {offered:,.0f} TPS, achieved "
            f"{'-' if tps is None else f'{tps:,.0f}'} TPS; p50 / p95 / p99 {shown} ms; "
            f"{'met' if meets else 'missed'} {c.slo}: {why}")


def _thousands(value: float, _: object = None) -> str:
    return f"{value:,.0f}"


def _plain_log(value: float, _: object = None) -> str:
    """A log axis' tick as a plain number (mathtext is off: text.parse_math)."""
    return f"{value:g}"


def _capacity_mark(ax: Axes, c: Curve, color: str, top: bool) -> None:
    """The capacity's rate (met_by) as a dashed vertical line; above, its figure named."""
    met, _ = c.bracket()
    if met is None:
        return
    tag_artist(ax, ax.axvline(met, color=color, linestyle="--", linewidth=1, alpha=0.8), c.label)
    tps = c.capacity_tps
    if top and tps is not None:
        text = ax.text(met, 0.98, f" capacity {tps:,.0f}", transform=blended_transform_factory(ax.transData,
                                                                                                 ax.transAxes),
                       ha="left", va="top", fontsize=8, color=color)
        tag_artist(ax, text, c.label)


def _curve_achieved(plot: _Plot, c: Curve, i: int, color: str, tips: list[str]) -> None:
    """A search's achieved TPS against offered rate; a rate that missed, an open marker."""
    done = [(p.offered, p.tps) for p in c.points if p.tps is not None]
    plot.line([x for x, _ in done], [y for _, y in done], marker=_marker(i), color=color, label=c.label,
              tips=[t for p, t in zip(c.points, tips) if p.tps is not None])
    missed = [(p.offered, p.tps) for p in c.points if p.tps is not None and not p.meets]
    if missed:
        plot.line([x for x, _ in missed], [y for _, y in missed], linestyle="none", marker=_marker(i),
                  color=color, markerfacecolor="white", zorder=3, label=c.label)


def _curve_latency(plot: _Plot, c: Curve, i: int, color: str, tips: list[str]) -> None:
    """A search's p50 / p95 / p99 (and the objective's own statistic, if another) against
    offered rate, markers on the objective's; a rate that missed, an open marker."""
    fields: list[tuple[str, str, Dashes]] = [*CURVE_LATENCIES]
    own = capacity.STATISTICS[c.statistic]
    if own not in {f for f, _, _ in fields}:
        fields.append((own, c.slo.split(" ", 1)[0], "-."))
    for field, _, dashes in fields:
        pairs = [(p.offered, v, t) for p, t in zip(c.points, tips)
                 if (v := getattr(p, field, None) if field != own else p.latency_ms) is not None and v > 0]
        if pairs:
            plot.line([x for x, _, _ in pairs], [y for _, y, _ in pairs], linestyle=dashes,
                      marker=_marker(i) if field == own else "", markersize=4, color=color, label=c.label,
                      tips=[t for _, _, t in pairs] if field == own else None)
    missed_lat = [(p.offered, p.latency_ms) for p in c.points if not p.meets and p.latency_ms]
    if missed_lat:
        plot.line([x for x, _ in missed_lat], [y for _, y in missed_lat], linestyle="none",
                  marker=_marker(i), markersize=4, color=color, markerfacecolor="white", zorder=3,
                  label=c.label)


def _curve_closed(top_plot: _Plot, lat_plot: _Plot, c: Curve, color: str) -> float:
    """The closed-loop point of a search as a star in both plots; its TPS (0: none)."""
    closed, tip = c.closed, c.closed_tip()
    if closed is None or closed.tps is None or tip is None:
        return 0.0
    top_plot.line([closed.tps], [closed.tps], linestyle="none", marker="*", markersize=12, color=color,
                  zorder=4, label=c.label, tips=[tip])
    if closed.latency_ms:
        lat_plot.line([closed.tps], [closed.latency_ms], linestyle="none", marker="*", markersize=12,
                      color=color, zorder=4, label=c.label, tips=[tip])
    return closed.tps


def _curve_axes(tput: Axes, lat: Axes, found: list[Curve], highest: float) -> None:
    """The two plots' scales, ticks and titles; the diagonal of all offered carried, and
    each objective a named red line."""
    tput.plot([0, highest * 1.05], [0, highest * 1.05], color="#999", linestyle=":", linewidth=0.8)
    for slo, limit in dict.fromkeys((c.slo, c.limit_ms) for c in found):
        lat.axhline(limit, color=OBJECTIVE_COLOR, linewidth=1.2)
        lat.text(0.995, limit, f"objective {slo}", transform=blended_transform_factory(lat.transAxes, lat.transData),
                 ha="right", va="bottom", fontsize=8, color=OBJECTIVE_COLOR)
    lat.set_yscale("log")
    lat.yaxis.set_major_locator(LogLocator(base=10))
    lat.yaxis.set_major_formatter(FuncFormatter(_plain_log))
    lat.yaxis.set_minor_formatter(NullFormatter())
    tput.set_xlim(left=0, right=highest * 1.05)
    tput.set_ylim(bottom=0, top=highest * 1.1)
    for ax in (tput, lat):
        ax.xaxis.set_major_formatter(FuncFormatter(_thousands))
    tput.yaxis.set_major_formatter(FuncFormatter(_thousands))
    tput.set_title("achieved TPS (dotted: all that was offered)", fontsize=9)
    lat.set_title("latency (ms, log scale): p50 dotted, p95 dashed, p99 solid", fontsize=9)
    lat.set_xlabel("offered TPS (open loop)")


def _curve_legend(fig: Figure, tput: Axes, section: Section, found: list[Curve]) -> None:
    """The labels' markers, then what the open marker, the star, the dashed and the red
    lines mean."""
    names = list(dict.fromkeys(c.label for c in found))
    handles: list[Any] = [Line2D([], [], marker=_marker(section.labels.index(n) if n in section.labels else 0),
                                 color=_color(section.labels.index(n) if n in section.labels else 0)) for n in names]
    keys = [(Line2D([], [], color="#555", marker="o", markerfacecolor="white", linestyle="none"),
             "missed the objective"),
            (Line2D([], [], color="#555", marker="*", markersize=10, linestyle="none"), "closed loop"),
            (Line2D([], [], color="#555", linestyle="--"), "capacity"),
            (Line2D([], [], color=OBJECTIVE_COLOR), "objective")]
    legend = legend_below(fig, [*handles, *(h for h, _ in keys)], [*names, *(t for _, t in keys)])
    _tag_legend(tput, legend, [*(label_tag(tput, n) for n in names), *(None for _ in keys)])


def capacity_curve(section: Section, threads: int) -> str | None:
    """The searches of one level (--slo, report/curves.py), a label each: achieved TPS
    against offered rate above (the diagonal: all that was offered carried), latency
    p50 / p95 / p99 against it below on a log scale with the objective a red horizontal
    line, named; the capacity's rate a dashed vertical line in both, a rate that missed
    the objective an open marker, the closed-loop point a star."""
    found = [c for c in section.curves if c.threads == threads and c.points]
    if not found:
        return None
    fig = Figure(figsize=(WIDTH, 5.4))
    grid = fig.subplots(2, 1, sharex=True, squeeze=False)
    tput, lat = grid[0][0], grid[1][0]
    counter = itertools.count(1)
    if len(section.labels) <= MAX_TOGGLED:
        tag_labels(tput, counter)
        tag_labels(lat, counter)
    top_plot, lat_plot = _Plot(tput), _Plot(lat)
    highest = 0.0
    for c in found:
        i = section.labels.index(c.label) if c.label in section.labels else 0
        color = _color(i)
        lats = [(p.latency_p50_ms, p.latency_p95_ms, p.latency_p99_ms) for p in c.points]
        tips = [_curve_tip(c, p.offered, p.tps, lat_p, p.meets, p.why) for p, lat_p in zip(c.points, lats)]
        _curve_achieved(top_plot, c, i, color, tips)
        _curve_latency(lat_plot, c, i, color, tips)
        highest = max([highest, _curve_closed(top_plot, lat_plot, c, color), *(p.offered for p in c.points),
                       *(p.tps for p in c.points if p.tps is not None)])
        _capacity_mark(tput, c, color, top=True)
        _capacity_mark(lat, c, color, top=False)
    top_plot.draw()
    lat_plot.draw()
    _curve_axes(tput, lat, found, highest)
    # (The objective is named on its line: a title longer than a chart's text is clipped.)
    fig.suptitle(f"{section.engine} {section.workload} at {threads} thread{'' if threads == 1 else 's'}: latency "
                 "against offered rate", fontsize=10)
    _curve_legend(fig, tput, section, found)
    return _svg(tput, section, f"capacity_{threads}")


def capacity_curves(section: Section) -> dict[str, str]:
    """The section's curves (--slo), a chart per level searched: name -> SVG."""
    out = {}
    for threads in sorted({c.threads for c in section.curves}):
        drawn = capacity_curve(section, threads)
        if drawn:
            out[f"capacity_{threads}"] = drawn
    return out


def charts(section: Section, samples: Samples, png: dict[str, bytes] | None = None,
           server: Mapping[str, JSONObject] | None = None) -> dict[str, str]:
    """Every chart of a section that has data: name -> SVG text; and into `png`, when
    given, name -> the same chart as PNG."""
    token = _PNG.set(png)
    try:
        with collector_paused():  # see there: drawing allocates a lot
            drawn = [("throughput", throughput(section)), ("bars", bars(section)), ("qps", qps(section)),
                     ("latency", latency(section)), ("latency_percentiles", percentiles(section)),
                     ("per_second", per_second(section, samples, server)),
                     *capacity_curves(section).items()]
    finally:
        _PNG.reset(token)
    return {name: svg for name, svg in drawn if svg}
