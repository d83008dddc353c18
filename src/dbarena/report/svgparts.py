"""The SVG side of report.charts: each label's elements tagged with its class (toggled
by the HTML report's CSS), group ids made unique across the charts of a page, and the
hover layer of invisible points whose <title>s give each point's exact values."""

from __future__ import annotations

import hashlib
import math
import re
import weakref
from collections.abc import Iterator
from typing import Any

from matplotlib.axes import Axes
from matplotlib.figure import Figure

from dbarena.report.escaping import html_text


def label_class(label: str) -> str:
    """The class of a label's elements in every chart, and the name of its toggle in the
    HTML report: a digest, so that whatever text a label is (quotes, spaces, "<script>")
    the class is a valid, inert name, the same in every chart and section."""
    return "lbl-" + hashlib.sha256(label.encode()).hexdigest()[:12]


# Axes whose series are tagged with their label -> a counter that keeps the group ids of
# a chart unique (matplotlib writes an artist's gid as its group's id).
_TAGS: "weakref.WeakKeyDictionary[Axes, Iterator[int]]" = weakref.WeakKeyDictionary()


def tag_labels(ax: Axes, counter: Iterator[int]) -> None:
    """Tag this chart's series with their labels (label_tag, tag_artist), numbering
    their groups by `counter` (one counter for the charts of one figure)."""
    _TAGS[ax] = counter


def label_tag(ax: Axes, label: str | None) -> str | None:
    """The label a series of this chart is tagged with: None where the chart tags none."""
    return label if ax in _TAGS else None


def tag_artist(ax: Axes, artist: Any, label: str | None, key: bool = False) -> None:
    """Mark an artist as the label's (key: its legend entry): a gid that label_classes turns
    into the SVG group's class. A no-op on charts that tag nothing."""
    counter = _TAGS.get(ax)
    if counter is not None and label is not None:
        kind = re.sub(r"[^a-z0-9]", "", type(artist).__name__.lower())
        artist.set_gid(f"{kind}-{label_class(label)}-{'k' if key else 's'}{next(counter)}")


_TAGGED = re.compile(r'<g id="(?P<id>[a-z0-9]+-(?P<cls>lbl-[0-9a-f]{12})-(?P<role>[ks])\d+)"')


def label_classes(text: str) -> str:
    """Groups tagged by tag_artist get their label's class (and "key" for legend entries)."""
    return _TAGGED.sub(lambda m: f'<g id="{m["id"]}" class="{m["cls"]}{" key" if m["role"] == "k" else ""}"', text)


def unique_ids(text: str, suffix: str) -> str:
    """The SVG with `-suffix` appended to its group ids. matplotlib salts the ids it
    refers to (clip paths, markers, hatches: svg.hashsalt, set per chart by _svg), but
    its group ids (figure_1, axes_1, line2d_1 ...) are the same in every chart and would
    clash once several charts are inlined in one HTML page. Nothing refers to a group,
    so renaming them is enough; appended, not prepended, an id still starts with its kind.
    (A literal-prefixed pattern: scanning a 2 MB chart for any id takes ten times longer.)"""
    return re.sub(r'<g id="([^"]+)"', rf'<g id="\1-{suffix}"', text)


# Hover texts of a chart's points, by axes: added to the SVG as <title>s of invisible
# circles, which browsers show on hover with no script.
# Each point: x, y, text, and the label it is toggled with (None: untagged).
_TIPS: "weakref.WeakKeyDictionary[Axes, list[tuple[float, float, str, str | None]]]" = weakref.WeakKeyDictionary()
MAX_TIPS = 2000  # a chart with more points gets none: its SVG would grow by ~100 bytes each


def hover_tips(ax: Axes) -> list[tuple[float, float, str, str | None]]:
    return _TIPS.setdefault(ax, [])


def hover_layer(ax: Axes) -> str:
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
                         f"<title>{html_text(text)}</title></circle>")
    parts.append("</g>")
    return "".join(parts)
