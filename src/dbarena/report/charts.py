"""Charts as SVG text (matplotlib, no JavaScript): inlined in the HTML report, written
as files next to the Markdown one. Render only: figures come from report.data.

Drawing was most of a report's time on a 10,000-point store (130 series), so:
- each chart is laid out and drawn once: no bbox_inches="tight" (nor a layout engine),
  which lays the whole figure out a second time to measure it, lines included; _fit
  sets the margins from the few texts around the axes, measured without drawing;
- one Line2D per style, not per series (_Plot);
- a legend naming at most MAX_SERIES series, one per colour of the cycle: laying out
  legend text and searching its "best" place among hundreds of lines were the dearest
  parts of a draw, and beyond ten series the colours repeat, so more entries could not
  tell the lines apart anyway. Every line is still drawn; the tables name every series;
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
import html
import io
import itertools
import math
import re
import weakref
from collections.abc import Iterable, Iterator, Sequence
from contextvars import ContextVar
from typing import Any, Literal

import matplotlib
import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.text import Text
from matplotlib.textpath import TextToPath
from matplotlib.ticker import MaxNLocator

from dbarena.bulk import collector_paused
from dbarena.report.data import Section, usl

matplotlib.rcParams.update({
    "svg.fonttype": "none",  # text stays text: smaller, selectable, searchable
    "font.size": 9,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "figure.dpi": 100,
})

COLORS = matplotlib.rcParams["axes.prop_cycle"].by_key()["color"]
MAX_SERIES = len(COLORS)  # series named in a legend; more are summed up in one line
LEGEND_ROWS = 10  # rows of a legend column: 10 entries fit in the 3.2 inch charts' axes
# Series a chart tags for toggling (see the docstring): a line per series and style, not
# per style. Far beyond what a reader toggles one by one; a 130-series chart drawn a line
# per series took about 1.6 times as long (one measurement, 2 cores).
MAX_TOGGLED = 40
WIDTH = 7.0  # inches

_text_size = TextToPath()  # measures text as the SVG writer lays it out, without a renderer


def _axes(height: float, section: Section) -> Axes:
    ax = Figure(figsize=(WIDTH, height)).add_subplot()
    if len(section.labels) <= MAX_TOGGLED:
        _TAGS[ax] = itertools.count(1)
    return ax


def label_class(label: str) -> str:
    """The class of a label's elements in every chart, and the name of its toggle in the
    HTML report: a digest, so that whatever text a label is (quotes, spaces, "<script>")
    the class is a valid, inert name, the same in every chart and section."""
    return "lbl-" + hashlib.sha256(label.encode()).hexdigest()[:12]


# Axes whose series are tagged with their label -> a counter that keeps the group ids of
# a chart unique (matplotlib writes an artist's gid as its group's id).
_TAGS: "weakref.WeakKeyDictionary[Axes, Iterator[int]]" = weakref.WeakKeyDictionary()


def _tag_of(ax: Axes, label: str | None) -> str | None:
    """The label a series of this chart is tagged with: None where the chart tags none."""
    return label if ax in _TAGS else None


def _tag(ax: Axes, artist: Any, label: str | None, key: bool = False) -> None:
    """Mark an artist as the label's (key: its legend entry): a gid that _classes turns
    into the SVG group's class. A no-op on charts that tag nothing."""
    counter = _TAGS.get(ax)
    if counter is not None and label is not None:
        kind = re.sub(r"[^a-z0-9]", "", type(artist).__name__.lower())
        artist.set_gid(f"{kind}-{label_class(label)}-{'k' if key else 's'}{next(counter)}")


_TAGGED = re.compile(r'<g id="(?P<id>[a-z0-9]+-(?P<cls>lbl-[0-9a-f]{12})-(?P<role>[ks])\d+)"')


def _classes(text: str) -> str:
    """Groups tagged by _tag get their label's class (and "key" for legend entries)."""
    return _TAGGED.sub(lambda m: f'<g id="{m["id"]}" class="{m["cls"]}{" key" if m["role"] == "k" else ""}"', text)


def _colors() -> Iterator[str]:
    return itertools.cycle(COLORS)


def _width(text: Text) -> float:
    """Width of a text in points."""
    if not text.get_text():
        return 0.0
    width, _, _ = _text_size.get_text_width_height_descent(text.get_text(), text.get_fontproperties(), ismath=False)
    return float(width)


def _fit(ax: Axes) -> None:
    """Margins that just hold the tick labels, axis labels and title (what bbox_inches=
    "tight" did by laying the figure out twice), in points from the measured texts. A
    title wider than the figure is set smaller."""
    fig = ax.figure
    assert isinstance(fig, Figure)
    rc = matplotlib.rcParams
    width, height = WIDTH * 72, fig.get_size_inches()[1] * 72
    line = rc["font.size"] * 1.2  # height of a line of tick or axis label text
    pad = 4.0
    ticks = rc["xtick.major.size"] + rc["xtick.major.pad"]
    bottom = ticks + line + rc["axes.labelpad"] + line + pad
    title = ax.title
    title_size = title.get_fontproperties().get_size_in_points()
    top = rc["axes.titlepad"] + title_size * 1.2 + pad
    fig.subplots_adjust(bottom=bottom / height, top=1 - top / height)  # y ticks depend on the axes height
    tick_width = max((_width(t) for t in ax.get_yticklabels()), default=0.0)
    left = ticks + tick_width + rc["axes.labelpad"] + line + pad
    right = 14.0  # half of the last x tick label
    fig.subplots_adjust(left=left / width, right=1 - right / width)
    # The title is centred on the axes; it may reach to `pad` of the figure's edges.
    centre = (left + width - right) / 2
    room = 2 * (min(centre, width - centre) - pad)
    if _width(title) > room:
        title.set_fontsize(title_size * room / _width(title))


class _Plot:
    """A chart's lines, gathered and then drawn as one Line2D per style (colour, marker,
    dashes), the series of a style joined with NaN between them: the same picture (NaN
    breaks a line, markers sit on every point), but a chart of 130 series makes and draws
    ten artists, not 130, and an artist's fixed cost (creation, clipping, transforms, its
    SVG group) far exceeds that of a few dozen points. Up to MAX_SERIES series each style
    holds one series, drawn in label order as before. The legend names series through
    proxy lines of the same style. On a chart that tags its series (_TAGS) the label is
    part of the style: a line per series and style, whose group carries the label's class."""

    def __init__(self, ax: Axes) -> None:
        self.ax = ax
        # (style, tagged label) -> x, y
        self.lines: dict[tuple[tuple, str | None], tuple[list[float], list[float]]] = {}
        self.entries: list[tuple[str, str, dict[str, Any], str | None]] = []  # (series, text, style, label)

    def line(self, x: Iterable[float], y: Iterable[float], legend: str | None = None, series: str | None = None,
             tips: Iterable[str] | None = None, label: str | None = None, **style: Any) -> None:
        """One series' line; `legend` its legend text, `series` the name it is counted
        under in the legend when one series has several entries (default: the text);
        `tips` the hover text of each point; `label` the label it belongs to (toggled
        with it in the HTML report)."""
        x, y = list(x), list(y)
        tag = _tag_of(self.ax, label)
        xs, ys = self.lines.setdefault((tuple(sorted(style.items())), tag), ([], []))
        if xs:
            xs.append(math.nan)
            ys.append(math.nan)
        xs.extend(x)
        ys.extend(y)
        if legend is not None:
            self.entries.append((series or legend, legend, style, tag))
        if tips is not None:
            _tips(self.ax).extend((px, py, text, tag) for px, py, text in zip(x, y, tips))

    def draw(self) -> None:
        for (style, tag), (xs, ys) in self.lines.items():
            (drawn,) = self.ax.plot(xs, ys, **dict(style))
            _tag(self.ax, drawn, tag)
        self._legend()

    def _legend(self) -> None:
        """The entries of the first MAX_SERIES - 1 series and a line saying how many more
        the chart draws, when it draws more than MAX_SERIES; columns of at most
        LEGEND_ROWS entries."""
        if not self.entries:
            return
        series = list(dict.fromkeys(name for name, _, _, _ in self.entries))
        entries = [(text, style, tag) for _, text, style, tag in self.entries]
        loc: Literal["best", "lower right"] = "best"
        if len(series) > MAX_SERIES:
            shown = set(series[:MAX_SERIES - 1])
            entries = [(text, style, tag) for name, text, style, tag in self.entries if name in shown]
            entries.append((f"... and {len(series) - len(shown)} more series (see the tables)", {"linestyle": "none"},
                            None))
            # "best" weighs every vertex of every line against each candidate place: dear
            # with hundreds of series, which then cover most of the axes anyway. Every
            # chart's y axis starts at 0 and its lines run above: the lower right is the
            # likeliest free.
            loc = "lower right"
        handles = [Line2D([], [], **style) for _, style, _ in entries]
        legend = self.ax.legend(handles, [text for text, _, _ in entries], fontsize=8, loc=loc,
                                ncols=math.ceil(len(entries) / LEGEND_ROWS))
        _tag_legend(self.ax, legend, [tag for _, _, tag in entries])


def _tag_legend(ax: Axes, legend: Any, labels: Sequence[str | None]) -> None:
    """Each legend entry (its handle and text) tagged as its label's key."""
    for handle, text, label in zip(legend.legend_handles, legend.get_texts(), labels):
        _tag(ax, handle, label, key=True)
        _tag(ax, text, label, key=True)


def _unique_ids(text: str, suffix: str) -> str:
    """The SVG with `-suffix` appended to its group ids. matplotlib salts the ids it
    refers to (clip paths, markers, hatches: svg.hashsalt, set per chart by _svg), but
    its group ids (figure_1, axes_1, line2d_1 ...) are the same in every chart and would
    clash once several charts are inlined in one HTML page. Nothing refers to a group,
    so renaming them is enough; appended, not prepended, an id still starts with its kind.
    (A literal-prefixed pattern: scanning a 2 MB chart for any id takes ten times longer.)"""
    return re.sub(r'<g id="([^"]+)"', rf'<g id="\1-{suffix}"', text)


# Hover texts of a chart's points, by axes: added to the SVG as <title>s of invisible
# circles, which browsers show on hover with no script (the report's CSP allows none).
# Each point: x, y, text, and the label it is toggled with (None: untagged).
_TIPS: "weakref.WeakKeyDictionary[Axes, list[tuple[float, float, str, str | None]]]" = weakref.WeakKeyDictionary()
MAX_TIPS = 2000  # a chart with more points gets none: its SVG would grow by ~100 bytes each


def _tips(ax: Axes) -> list[tuple[float, float, str, str | None]]:
    return _TIPS.setdefault(ax, [])


def _hover_layer(ax: Axes) -> str:
    """<circle> elements at the chart's points, each with its exact values as <title>.
    SVG coordinates are points (72 per inch) from the top left; matplotlib's display
    coordinates are pixels at the figure's dpi from the bottom left."""
    tips = _TIPS.pop(ax, [])
    if not tips or len(tips) > MAX_TIPS:
        return ""
    fig = ax.figure
    assert isinstance(fig, Figure)
    scale = 72 / fig.dpi
    height = fig.get_size_inches()[1] * 72
    xy = ax.transData.transform([(x, y) for x, y, _, _ in tips])
    parts = ['<g class="hover" fill="#000" fill-opacity="0" stroke="none">']
    for (px, py), (_, _, text, label) in zip(xy, tips):
        if math.isfinite(px) and math.isfinite(py):
            cls = f' class="{label_class(label)}"' if label is not None else ""
            parts.append(f'<circle{cls} cx="{px * scale:.1f}" cy="{height - py * scale:.1f}" r="5">'
                         f"<title>{html.escape(text)}</title></circle>")
    parts.append("</g>")
    return "".join(parts)


# PNG copies, when asked for (charts(png=...)): chart name -> PNG bytes. Many sites an
# article goes to take no SVG; 200 dpi is sharp on a high-density screen and in print.
_PNG: ContextVar[dict[str, bytes] | None] = ContextVar("dbarena_png", default=None)
PNG_DPI = 200


def _svg(ax: Axes, section: Section, name: str) -> str:
    """SVG text of the chart, its ids made unique by a key of section and chart name
    (so the same chart gives the same text, whatever else the process draws)."""
    fig = ax.figure
    assert isinstance(fig, Figure)
    if ax.get_xlabel() == "threads":
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # no 1.25 threads
    _fit(ax)
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
    hover = _hover_layer(ax)
    if hover:
        end = text.rindex("</svg>")
        text = text[:end] + hover + text[end:]
    return _unique_ids(_classes(text), key)


def _by_label(section: Section, field: str):
    for label in section.labels:
        rows = [r for r in section.rows if r["label"] == label and r[field] is not None]
        if rows:
            yield label, rows


def throughput(section: Section) -> str | None:
    """TPS (or QPS) against threads, a line per label, 95 % bands where repeats give
    them, and the fitted USL curve dashed."""
    metric = section.metric if section.metric in ("tps", "seconds") else "qps"
    ax = _axes(3.6, section)
    plot = _Plot(ax)
    for color, (label, rows) in zip(_colors(), _by_label(section, metric)):
        x = [r["threads"] for r in rows]
        y = [r[metric] for r in rows]
        plot.line(x, y, label, marker="o", color=color, tips=[_tip(label, r, metric) for r in rows], label=label)
        band = [(r["threads"], r["tps_ci_low"], r["tps_ci_high"]) for r in rows
                if metric == "tps" and r["tps_ci_low"] is not None and r["tps_ci_high"] is not None]
        if len(band) >= 2:
            bx, lo, hi = zip(*band)
            _tag(ax, ax.fill_between(bx, lo, hi, color=color, alpha=0.15, linewidth=0), label)
        fit = section.usl.get(label)
        if fit and len(x) >= 3:
            xs = np.linspace(min(x), max(x), 100)
            plot.line(xs, usl(xs, fit["lambda"], fit["sigma"], fit["kappa"]), linestyle="--", linewidth=0.8,
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


def _tip(label: str, row: dict, field: str) -> str:
    """A point's hover text: its series, level and exact figure (with its interval)."""
    value = row[field]
    unit = {"tps": "TPS", "qps": "QPS", "seconds": "s"}.get(field, "ms" if field.startswith("latency") else "")
    text = f"{label}, {row['threads']} threads: {value:,.{3 if unit in ('s', 'ms') else 1}f} {unit}".rstrip()
    if field == "tps" and row.get("tps_ci_low") is not None and row.get("tps_ci_high") is not None:
        text += f" (95 % CI {max(row['tps_ci_low'], 0):,.1f} .. {row['tps_ci_high']:,.1f})"
    if row.get("n"):
        text += f", {row['n']} repeat(s)"
    return text


def _name(metric: str) -> str:
    return "seconds to run the queries" if metric == "seconds" else metric.upper()


def _axis_label(metric: str) -> str:
    return {"tps": "TPS (steady state)", "seconds": "seconds (lower is better)"}.get(metric, metric.upper())


def bars(section: Section) -> str | None:
    """Study A's view: a group of bars per thread level, one bar per label, of the
    tool's own figure (a bar where a label measured that level)."""
    metric = section.metric if section.metric in ("tps", "seconds") else "qps"
    field = "value"
    levels = sorted({r["threads"] for r in section.rows if r[field] is not None})
    labels = [label for label in section.labels if any(r["label"] == label and r[field] is not None
                                                       for r in section.rows)]
    if not levels or not labels or len(labels) > MAX_SERIES:
        return None  # beyond one colour per label, bars cannot be told apart: the line chart stays
    ax = _axes(3.4, section)
    width = 0.8 / len(labels)
    for i, (color, label) in enumerate(zip(_colors(), labels)):
        _label_bars(ax, section, label, levels, (i - (len(labels) - 1) / 2) * width, width, color, field, metric)
    ax.set_xticks(range(len(levels)), [str(n) for n in levels])
    ax.grid(axis="x", visible=False)
    ax.set_xlabel("thread level")  # categorical: not "threads", whose axis _svg makes numeric
    ax.set_ylabel(_axis_label(metric))
    ax.set_title(f"{section.engine} {section.workload}: {_name(metric)} per thread level, a bar per label")
    _tag_legend(ax, ax.legend(fontsize=8, ncols=math.ceil(len(labels) / LEGEND_ROWS)), labels)
    ax.set_ylim(bottom=0)
    return _svg(ax, section, "bars")


def _label_bars(ax: Axes, section: Section, label: str, levels: list[int], offset: float, width: float,
                color: str, field: str, metric: str) -> None:
    """One label's bars, at `offset` in each level's group, and their hover tips."""
    values = {r["threads"]: r[field] for r in section.rows if r["label"] == label and r[field] is not None}
    xs = [j + offset for j, n in enumerate(levels) if n in values]
    heights = [values[n] for n in levels if n in values]
    for bar in ax.bar(xs, heights, width=width * 0.95, color=color, label=label):
        _tag(ax, bar, label)
    by_level = {r["threads"]: r for r in section.rows if r["label"] == label}
    _tips(ax).extend((x, h / 2, _tip(label, {**by_level[n], metric: values[n]}, metric), _tag_of(ax, label))
                     for x, h, n in zip(xs, heights, [n for n in levels if n in values]))


def qps(section: Section) -> str | None:
    if section.metric == "qps" or not any(r["qps"] for r in section.rows):
        return None
    ax = _axes(3.2, section)
    plot = _Plot(ax)
    for color, (label, rows) in zip(_colors(), _by_label(section, "qps")):
        plot.line([r["threads"] for r in rows], [r["qps"] for r in rows], label, marker="o", color=color,
                  tips=[_tip(label, r, "qps") for r in rows], label=label)
    plot.draw()
    ax.set_xlabel("threads")
    ax.set_ylabel("QPS")
    ax.set_title(f"{section.engine} {section.workload}: queries per second against threads")
    ax.set_ylim(bottom=0)
    return _svg(ax, section, "qps")


def latency(section: Section) -> str | None:
    """Average latency against threads, a line per label."""
    return _latency_chart(section, "latency_avg_ms", "average latency", "latency")


# The percentile charts (name, field, what): one chart each, a line per label.
PERCENTILE_CHARTS = (("p50", "latency_p50_ms", "median (p50) latency"), ("p95", "latency_p95_ms", "p95 latency"),
                     ("p99", "latency_p99_ms", "p99 latency"), ("p999", "latency_p999_ms", "p99.9 latency"))


def percentile(section: Section, name: str) -> str | None:
    """One latency percentile against threads, a line per label (over repeats: of the
    merged histograms)."""
    _, field, what = next(c for c in PERCENTILE_CHARTS if c[0] == name)
    return _latency_chart(section, field, what, f"latency_{name}")


def _latency_chart(section: Section, field: str, what: str, key: str) -> str | None:
    if not any(r.get(field) for r in section.rows):
        return None
    ax = _axes(3.2, section)
    plot = _Plot(ax)
    for color, label in zip(_colors(), section.labels):
        rows = [r for r in section.rows if r["label"] == label and r.get(field) is not None]
        if rows:
            plot.line([r["threads"] for r in rows], [r[field] for r in rows], label, marker="o", color=color,
                      tips=[_tip(label, r, field) for r in rows], label=label)
    plot.draw()
    ax.set_xlabel("threads")
    ax.set_ylabel(f"{what} (ms)")
    ax.set_title(f"{section.engine} {section.workload}: {what} against threads")
    ax.set_ylim(bottom=0)
    return _svg(ax, section, key)


def per_second(section: Section, samples: dict[str, list[dict]]) -> str | None:
    """The per-second series of the chosen point of each label: warm-up cut dotted,
    dips marked."""
    if not any(samples.values()):
        return None
    ax = _axes(3.2, section)
    plot = _Plot(ax)
    colors = _colors()
    cuts: set[tuple[float, str, str | None]] = set()
    for label in section.labels:
        color = next(colors)
        series = samples.get(label) or []
        if not series:
            continue
        info = section.series[label]
        plot.line([s["second"] for s in series], [s["tps"] for s in series], f"{label} ({info['threads']} threads)",
                  series=label, color=color, linewidth=1, label=label)
        cut = info.get("steady_start_s")
        # The same dotted line again would add nothing, unless it is toggled with another label.
        if cut and (cut, color, _tag_of(ax, label)) not in cuts:
            cuts.add((cut, color, _tag_of(ax, label)))
            _tag(ax, ax.axvline(cut, color=color, linestyle=":", linewidth=1), label)
        dips = set(info.get("dips_s") or [])
        marked = [(s["second"], s["tps"]) for s in series if s["second"] in dips]
        if marked:
            x, y = zip(*marked)
            plot.line(x, y, linestyle="none", marker="x", color="red", zorder=3, label=label)  # over every line
    plot.draw()
    ax.set_xlabel("second")
    ax.set_ylabel("TPS in that second")
    ax.set_title(f"{section.engine} {section.workload}: per-second TPS (dotted: end of warm-up; x: dips)")
    ax.set_ylim(bottom=0)
    return _svg(ax, section, "per_second")


def charts(section: Section, samples: dict[str, list[dict]], png: dict[str, bytes] | None = None) -> dict[str, str]:
    """Every chart of a section that has data: name -> SVG text; and into `png`, when
    given, name -> the same chart as PNG."""
    token = _PNG.set(png)
    try:
        with collector_paused():  # see there: drawing allocates a lot
            drawn = [("throughput", throughput(section)), ("bars", bars(section)), ("qps", qps(section)),
                     ("latency", latency(section)),
                     *((f"latency_{n}", percentile(section, n)) for n, _, _ in PERCENTILE_CHARTS),
                     ("per_second", per_second(section, samples))]
    finally:
        _PNG.reset(token)
    out = {name: svg for name, svg in drawn if svg}
    return out
