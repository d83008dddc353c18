"""Escaping of every value a writer did not write itself (a label, a study, workload or
host name, a setting and its value, a server version, an error text, a note) for the two
formats dbarena writes that something renders: Markdown and HTML. One function per
format, and every Markdown and HTML writer calls it, so that what a store holds is shown
as text and never acts as markup.

Why it matters: Markdown from `gate`, `compare`, `history` and `report` is pasted into pull
requests, and GitHub renders what such text holds: a `|` splits a table row, a line break
ends it and starts a heading or a `<details open>`, `![x](url)` loads an image from
anywhere, `@someone` notifies someone. Labels and settings come from study files and
imports that are shared and copied; a value must not be able to do any of that.
"""

from __future__ import annotations

import html as _html
import re

from dbarena.limits import printable

# Line breaks of any kind: CommonMark ends a line only at LF and CR, but a value is one
# line of text wherever it goes (a table row, a list item, a heading), so every
# separator becomes a space; a tab too (printable would drop it, joining two words).
_BREAKS = re.compile(r"[\r\n\t\u2028\u2029\x0b\x0c\x85]+")
# Punctuation that is Markdown wherever it stands: emphasis (*, ~ in GFM), code spans (`),
# links and images ([ ]), the escape character itself and the table's cell separator.
# Escaped with a backslash, which GitHub renders as the character alone (a GFM table
# takes `\|` as a | inside the cell).
_ALWAYS = re.compile(r"([\\`*~\[\]|])")
# `_` is emphasis only at a word's edge (GFM: never between two letters or digits), so
# synchronous_commit stays as it is and only `_x_` is escaped.
_UNDERSCORE = re.compile(r"(?<![^\W_])_|_(?![^\W_])")
# What starts a block when it begins a line and a space or the line's end follows it: a
# heading (#), a list item (-, +, 1. or 1)), a thematic break or setext underline (---,
# ===), and a quote (>, whatever follows). A value can begin a line (a list item's text, a
# decision's sentence), so such a start is escaped; "-19.8 %" or "17.2" are not one.
# Elsewhere > does nothing (no tag without <), so "off -> on" stays as it is. Leading
# spaces are dropped: four of them start a code block.
_BLOCK_START = re.compile(r"^(?:>|(?:#{1,6}|\+|-+|=+|\d{1,9}[.)])(?=\s|$))")
# An entity (&lt; &#124;) in a value would be rendered as its character: `&` starting one
# is escaped so that the value shows as written. A bare & ("R&D") is left as it is.
_ENTITY = re.compile(r"&(?=#?\w+;)")
# A mention as GitHub finds it (@ after the start or a character that is not an ASCII
# letter, digit or _, then a letter or digit): a zero-width space after the @ keeps it
# from being one. Not an entity (&#64;) nor a backslash: GitHub looks for mentions in the
# rendered text, where those have become a plain @ again. user@host stays as it is.
_MENTION = re.compile(r"(?<![A-Za-z0-9_])@(?=[A-Za-z0-9])")
ZERO_WIDTH_SPACE = "\u200b"


def md_text(value: object) -> str:
    """`value` as inline Markdown text that shows as written and does nothing else: one
    line, fit for a table cell (no | splits it), a list item, a heading or a sentence
    (no heading, list, quote, HTML, link, image, code span, emphasis or mention starts
    in it). Characters that act on a terminal are dropped (limits.printable): Markdown
    is read with cat and less too. Text of no Markdown meaning is unchanged."""
    text = _BREAKS.sub(" ", printable(str(value), keep="\r\n\t\x0b\x0c\x85")).strip()
    text = _ALWAYS.sub(r"\\\1", text)
    text = _UNDERSCORE.sub(r"\\_", text)
    text = _ENTITY.sub("&amp;", text)
    # An entity rather than a backslash for <: GitHub passes raw HTML through, and an
    # entity is text however the HTML around it is read (no tag, comment or autolink).
    text = text.replace("<", "&lt;")
    text = _MENTION.sub("@" + ZERO_WIDTH_SPACE, text)
    return _BLOCK_START.sub(_inert_start, text)


def _inert_start(m: re.Match[str]) -> str:
    # "1." is a list marker by its dot: the backslash goes before the dot ("1\.").
    start = m.group(0)
    return f"{start[:-1]}\\{start[-1]}" if start[-1] in ".)" else "\\" + start


# What XML 1.0 allows in no document: the C0 controls but tab, line feed and carriage
# return, U+FFFE and U+FFFF, lone surrogates. HTML reads them as parse errors; an SVG
# chart holding one (in its hover texts) is no image at all, a browser shows an XML error
# where the "save as SVG" file or the Markdown report's chart file should show.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff\ud800-\udfff]")


def html_text(value: object) -> str:
    """`value` as HTML (or SVG) text or a quoted attribute's value: &, <, >, " and ' as
    entities (the standard library's html.escape, quotes included); the characters no
    XML document may hold dropped."""
    return _html.escape(_NOT_XML.sub("", str(value)), quote=True)
