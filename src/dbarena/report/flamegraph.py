"""Flame graphs drawn by dbarena: folded stacks (stats/profiles.py) -> an SVG, no script.

An icicle layout: the processes on the top row, each frame below its caller, a frame's
width its samples' share of the profile's (its inclusive time), siblings by name left to
right as flamegraph.pl orders them; a function's name written within its frame, cut to
fit (none in a frame too narrow for three characters), and a <title> per frame that a
browser shows on hover: the function, its samples and share (`per_transaction_svg`, a
level's pooled profile: its microseconds a transaction and share; differential: each
side's microseconds a transaction and the change). A frame narrower than MIN_WIDTH
pixels is left out (with what it called), as flamegraph.pl's --minwidth leaves it.

`differential_svg`: two sides' stacks on one layout, each frame's width its time a
transaction on both sides together (so a frame only one side ran on is drawn), coloured
by the change in microseconds a transaction from A to B: red where B spends more, blue
where less, white where the same, the deeper the colour the larger the change against
the largest.

Pure: stacks in, text out; every name escaped (escaping.html_text).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from dbarena.report.escaping import html_text

__all__ = ["flame_svg", "per_transaction_svg", "differential_svg", "clipped", "MIN_WIDTH"]

WIDTH = 1200
ROW = 17  # a frame's height, pixels
MIN_WIDTH = 0.5  # pixels
_CHAR = 6.6  # the width of a character at the frames' font size, about
_PAD = 3
_TOP = 24  # the caption's height


@dataclass
class _Node:
    name: str
    value: float = 0.0
    a: float = 0.0  # differential: each side's us per transaction
    b: float = 0.0
    children: dict[str, "_Node"] = field(default_factory=dict)


def _tree(sides: list[tuple[Mapping[str, float], float]]) -> _Node:
    """The stacks of each side, each sample weighted by its side's weight, as one tree:
    a node's value the sum over its sides, `a` and `b` each side's (sides[0], sides[1])."""
    root = _Node("all")
    for at, (stacks, weight) in enumerate(sides):
        for stack, count in stacks.items():
            value = count * weight
            node = root
            for depth, name in enumerate(("", *stack.split(";"))):
                if depth:
                    node = node.children.setdefault(name, _Node(name))
                node.value += value
                if at == 0:
                    node.a += value
                else:
                    node.b += value
    return root


# A caption's characters at most (report/layout.py's CHART_TEXT_CHARS, without its matplotlib).
CAPTION_CHARS = 80


def clipped(text: str, chars: int = CAPTION_CHARS) -> str:
    """The text at most `chars` characters: its start and end kept, an ellipsis between."""
    if len(text) <= chars:
        return text
    head = (chars - 1) // 2
    return text[:head] + "\u2026" + text[len(text) - (chars - 1 - head):]


def _fits(name: str, width: float) -> str:
    """The function's name cut to the frame's width ("" where not three characters fit)."""
    chars = int((width - 2 * _PAD) / _CHAR)
    if chars < 3:
        return ""
    return name if len(name) <= chars else name[:chars - 2] + ".."


def _warm(name: str) -> str:
    """flamegraph.pl's colours: a warm hue, the same for the same name."""
    digest = hashlib.sha256(name.encode()).digest()
    return f"rgb({205 + digest[0] % 50},{digest[1] % 230},{digest[2] % 55})"


def _cool_or_hot(change: float, largest: float) -> str:
    """Red where B spends more (change > 0), blue where less, white where the same."""
    if largest <= 0 or change == 0:
        return "rgb(250,250,250)"
    strength = min(1.0, abs(change) / largest)
    fade = round(250 - 200 * strength)
    return f"rgb(250,{fade},{fade})" if change > 0 else f"rgb({fade},{fade},250)"


def _draw(root: _Node, caption: str, title_of: Callable[[_Node], str], fill_of: Callable[[_Node], str], width: int,
          css_class: str) -> str:
    frames: list[str] = []
    depth_seen = 0
    scale = (width - 2 * _PAD) / root.value if root.value > 0 else 0.0

    def walk(node: _Node, x: float, depth: int) -> None:
        nonlocal depth_seen
        w = node.value * scale
        if w < MIN_WIDTH:
            return
        depth_seen = max(depth_seen, depth)
        y = _TOP + depth * ROW
        tip = html_text(title_of(node))
        text = _fits(node.name, w)
        label = (f'<text x="{x + _PAD:.1f}" y="{y + ROW - 5}">{html_text(text)}</text>' if text else "")
        frames.append(f'<g class="frame"><title>{tip}</title><rect x="{x:.1f}" y="{y}" width="{w:.1f}" '
                      f'height="{ROW - 1}" rx="2" fill="{fill_of(node)}"/>{label}</g>')
        at = x
        for child in sorted(node.children.values(), key=lambda c: c.name):
            walk(child, at, depth + 1)
            at += child.value * scale

    walk(root, float(_PAD), 0)
    height = _TOP + (depth_seen + 1) * ROW + _PAD
    return (f'<svg xmlns="http://www.w3.org/2000/svg" class="{css_class}" width="100%" viewBox="0 0 {width} {height}" '
            f'role="img" aria-label="{html_text(caption)}" font-family="monospace" font-size="11">'
            f'<text x="{_PAD}" y="16" font-size="13">{html_text(clipped(caption))}</text>'
            + "".join(frames) + "</svg>")


def flame_svg(stacks: Mapping[str, int], caption: str = "on CPU", width: int = WIDTH) -> str:
    """A profile's folded stacks (stack -> samples) as an icicle flame graph, its frames'
    widths their samples."""
    root = _tree([(stacks, 1.0)])
    total = root.value or 1.0

    def title(node: _Node) -> str:
        return (f"{node.name}: {node.value:,.0f} sample{'' if node.value == 1 else 's'}, "
                f"{100 * node.value / total:.2f} %")

    return _draw(root, caption, title, lambda node: _warm(node.name) if node is not root else "rgb(230,230,230)",
                 width, "flamegraph")


def per_transaction_svg(stacks: Mapping[str, float], caption: str = "on CPU", width: int = WIDTH) -> str:
    """A pooled profile (stack -> microseconds a transaction: report/levelprofiles.py)
    as an icicle flame graph, its frames' widths their time a transaction."""
    root = _tree([(stacks, 1.0)])
    total = root.value or 1.0

    def title(node: _Node) -> str:
        return f"{node.name}: {node.value:,.2f} us/tx, {100 * node.value / total:.2f} %"

    return _draw(root, caption, title, lambda node: _warm(node.name) if node is not root else "rgb(230,230,230)",
                 width, "flamegraph")


def differential_svg(a_stacks: Mapping[str, float], b_stacks: Mapping[str, float], a_per_sample_us: float,
                     b_per_sample_us: float, a: str = "A", b: str = "B", width: int = WIDTH) -> str:
    """Two profiles as one flame graph, coloured by the change of each frame's time a
    transaction (inclusive) from A to B: red where B spends more, blue where less.
    `a_per_sample_us`, `b_per_sample_us`: a sample's microseconds a transaction on each
    side (1e6 / frequency / transactions), or 1.0 for stacks in microseconds a
    transaction already (a pool's: report/levelprofiles.Pool.us_per_tx)."""
    root = _tree([(a_stacks, a_per_sample_us), (b_stacks, b_per_sample_us)])
    largest = max((abs(n.b - n.a) for n in _nodes(root) if n is not root), default=0.0)

    def title(node: _Node) -> str:
        return (f"{node.name}: {a} {node.a:,.2f} us/tx, {b} {node.b:,.2f} us/tx, change {node.b - node.a:+,.2f} us/tx")

    short_a, short_b = clipped(a, 24), clipped(b, 24)
    caption = f"{short_b} against {short_a} a transaction: red {short_b} more, blue less"
    return _draw(root, caption, title, lambda node: _cool_or_hot(node.b - node.a, largest), width,
                 "flamegraph differential")


def _nodes(root: _Node) -> list[_Node]:
    out, todo = [], [root]
    while todo:
        node = todo.pop()
        out.append(node)
        todo.extend(node.children.values())
    return out
