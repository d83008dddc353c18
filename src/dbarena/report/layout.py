"""Where a chart's parts go (report.charts draws them): margins that just hold the texts
around the axes, measured without drawing (what bbox_inches="tight" did by laying the
figure out twice), and the legend below the axes, out of the lines' way, every series
named, in as many columns as the figure's width holds.

A figure is one axes (most charts) or a grid of small axes sharing x (the latency
percentiles): fit() lays either out from the figure's width and the height given when
it was made, the legend's rows added below."""

from __future__ import annotations

import math
import weakref
from collections.abc import Sequence
from typing import Any

import matplotlib
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.legend import Legend
from matplotlib.text import Text
from matplotlib.textpath import TextToPath

from dbarena.limits import printable

_text_size = TextToPath()  # measures text as the SVG writer lays it out, without a renderer
LEGEND_SIZE = 8.0  # points
PAD = 4.0
# The characters a line of a chart's text holds at most, the middle of a longer one left
# out. A label or workload comes from a store that an older dbarena or another tool may
# have written, at any length (limits.MAX_NAME_CHARS binds only what is typed or
# imported now), and matplotlib lays text out in time that grows faster than its length:
# one 100,000-character label made `report` draw for over two minutes (issue 46). The
# tables and the hover texts keep every value whole.
CHART_TEXT_CHARS = 80

# Figure -> its legend below the axes and that legend's height in points.
_LEGENDS: "weakref.WeakKeyDictionary[Figure, tuple[Legend, float]]" = weakref.WeakKeyDictionary()


def clipped(text: str, chars: int = CHART_TEXT_CHARS) -> str:
    """The text with each line of it at most `chars` characters: its start and its end
    kept (labels that differ only at the end, like variants, stay apart), an ellipsis
    between."""
    if len(text) <= chars:
        return text
    lines = []
    for line in text.split("\n"):
        if len(line) > chars:
            tail = (chars - 1) // 3
            line = line[:chars - 1 - tail] + "\u2026" + line[len(line) - tail:]
        lines.append(line)
    return "\n".join(lines)


def chart_text(text: str) -> str:
    """The text as a chart shows it: without the characters that act on a terminal or
    turn text around (limits.printable: matplotlib has no glyph for them, and ESC or BEL
    in an SVG's text makes it no XML, an image no browser shows), line breaks kept; each
    line clipped()."""
    return clipped(printable(text, keep="\n"))


def width_of(text: str, size: float) -> float:
    """Width of a text in points at `size` points (the default font)."""
    if not text:
        return 0.0
    font = matplotlib.font_manager.FontProperties(size=size)
    width, _, _ = _text_size.get_text_width_height_descent(text, font, ismath=False)
    return float(width)


def _width(text: Text) -> float:
    if not text.get_text():
        return 0.0
    width, _, _ = _text_size.get_text_width_height_descent(text.get_text(), text.get_fontproperties(), ismath=False)
    return float(width)


def legend_below(fig: Figure, handles: Sequence[Any], texts: Sequence[str]) -> Legend:
    """A legend naming every entry, below the axes, in the columns the figure's width
    holds (entries fill a row, then the next): placed by fit()."""
    width = fig.get_size_inches()[0] * 72 - 2 * PAD
    em = LEGEND_SIZE
    texts = [chart_text(t) for t in texts]
    # matplotlib's defaults: handle 2 em, handle to text 0.8 em, between columns 2 em.
    column = 2 * em + 0.8 * em + max(width_of(t, LEGEND_SIZE) for t in texts) + 2 * em
    ncols = max(1, min(len(texts), int((width + 2 * em) // column)))
    rows = math.ceil(len(texts) / ncols)
    # Row-major order (matplotlib fills columns first): rows read left to right.
    order = [i for c in range(ncols) for i in range(c, len(texts), ncols)]
    legend = fig.legend([handles[i] for i in order], [texts[i] for i in order], loc="upper center",
                        ncols=ncols, fontsize=LEGEND_SIZE, frameon=False, borderaxespad=0)
    height = rows * em * 1.2 + (rows - 1) * em * 0.5 + 2 * 0.4 * em + PAD
    _LEGENDS[fig] = (legend, height)
    legend._dbarena_order = order  # type: ignore[attr-defined]
    return legend


def legend_order(legend: Legend) -> list[int]:
    """The index, among the entries given, of each entry in the legend's order."""
    return list(getattr(legend, "_dbarena_order", range(len(legend.get_texts()))))


def fit(fig: Figure) -> None:
    """Margins of the figure's axes (one, or a grid of rows x columns sharing x) from
    their measured tick labels, axis labels and titles; the legend below them. Call once."""
    rc = matplotlib.rcParams
    # Every text the chart holds (titles, annotations, tick labels; the legend's were
    # made so), as a chart shows it, before anything measures or draws it.
    for text in fig.findobj(Text):
        shown = chart_text(text.get_text())
        if shown != text.get_text():
            text.set_text(shown)
    axes = [ax for ax in fig.axes if ax.get_visible()]
    # A second y axis on the right (charts._server_overlay marks it with the axes it
    # twins): placed with that one, its tick labels and label in the right margin.
    twins = [ax for ax in axes if getattr(ax, "_dbarena_twin_of", None) is not None]
    axes = [ax for ax in axes if ax not in twins]
    legend, legend_h = _LEGENDS.get(fig, (None, 0.0))
    fig.set_size_inches(fig.get_size_inches()[0], fig.get_size_inches()[1] + legend_h / 72)
    width, height = fig.get_size_inches()[0] * 72, fig.get_size_inches()[1] * 72
    line = rc["font.size"] * 1.2  # height of a line of tick or axis label text
    ticks = rc["xtick.major.size"] + rc["xtick.major.pad"]
    suptitle = fig._suptitle  # type: ignore[attr-defined]
    top = PAD + (_size(suptitle) * 1.3 + PAD if suptitle is not None else 0.0)
    bottom_of_axes = legend_h + ticks + line + rc["axes.labelpad"] + line + PAD
    grid = _grid(axes)
    nrows, ncols = len(grid), len(grid[0])
    title_h = max(rc["axes.titlepad"] + _size(ax.title) * 1.2 for ax in axes)
    right = 14.0  # half of the last x tick label
    if twins:
        twin_w = max(_width(t) for tw in twins for t in [*tw.get_yticklabels(), Text()])
        right = max(right, ticks + twin_w + rc["axes.labelpad"] + line + PAD)
    inner_h = (height - top - bottom_of_axes - nrows * title_h - (nrows - 1) * (ticks + PAD)) / nrows

    def place(lefts: list[float]) -> None:
        inner_w = (width - sum(lefts) - ncols * right) / ncols
        for r in range(nrows):
            for c in range(ncols):
                x0 = sum(lefts[:c + 1]) + c * (inner_w + right)
                y0 = bottom_of_axes + (nrows - 1 - r) * (inner_h + title_h + ticks + PAD)
                grid[r][c].set_position((x0 / width, y0 / height, inner_w / width, inner_h / height))

    place([50.0] * ncols)  # the heights first: the y ticks depend on them
    lefts = []
    for c in range(ncols):
        tick_w = max(_width(t) for r in range(nrows) for t in [*grid[r][c].get_yticklabels(), Text()])
        label = any(grid[r][c].get_ylabel() for r in range(nrows))
        lefts.append(ticks + tick_w + (rc["axes.labelpad"] + line if label else 0.0) + PAD)
    place(lefts)
    for tw in twins:
        tw.set_position(getattr(tw, "_dbarena_twin_of").get_position())
    if suptitle is not None:
        suptitle.set_y(1 - PAD / height)
        suptitle.set_va("top")
        _shrink(suptitle, width - 2 * PAD)
    for ax in axes:
        # A title is centred on its axes; it may reach to PAD of the figure's edges.
        box = ax.get_position()
        centre = (box.x0 + box.x1) / 2 * width
        _shrink(ax.title, 2 * (min(centre, width - centre) - PAD))
    if legend is not None:
        legend.set_bbox_to_anchor((0.5, (legend_h - PAD) / height), transform=fig.transFigure)


def _size(text: Text) -> float:
    return float(text.get_fontproperties().get_size_in_points())


def _shrink(text: Text, room: float) -> None:
    if _width(text) > room:
        text.set_fontsize(_size(text) * room / _width(text))


def _grid(axes: list[Axes]) -> list[list[Axes]]:
    """The axes as rows of columns, from their subplot specs (one axes: 1 x 1)."""
    spec = axes[0].get_subplotspec()
    if spec is None or len(axes) == 1:
        return [[axes[0]]]
    nrows, ncols = spec.get_gridspec().get_geometry()
    grid: list[list[Axes]] = [[axes[0]] * ncols for _ in range(nrows)]
    for ax in axes:
        s = ax.get_subplotspec()
        assert s is not None
        grid[s.rowspan.start][s.colspan.start] = ax
    return grid
