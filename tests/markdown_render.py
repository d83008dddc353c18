"""Markdown read back as a renderer reads it, for the tests of what dbarena writes in
Markdown: markdown-it-py (a dependency of rich) as CommonMark with GFM's tables and
strikethrough, raw HTML passed through as GitHub passes it to its sanitiser. What came
out: every tag, the cells of each table row, and the text a reader sees."""

from __future__ import annotations

from dataclasses import dataclass, field
from html.parser import HTMLParser

from markdown_it import MarkdownIt

_MD = MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])


@dataclass
class Rendered:
    html: str
    tags: list[str] = field(default_factory=list)  # every start tag, in order
    rows: list[list[str]] = field(default_factory=list)  # each table row's cells, as text
    tables: list[list[list[str]]] = field(default_factory=list)  # the rows of each table
    text: str = ""  # what shows, tags left out

    def whole_tables(self) -> bool:
        """Every row of each table has as many cells as its header."""
        return all(len({len(r) for r in t}) == 1 for t in self.tables)


class _Reader(HTMLParser):
    def __init__(self, out: Rendered) -> None:
        super().__init__(convert_charrefs=True)
        self.out = out
        self.cell: list[str] | None = None  # the text of the cell being read
        self.texts: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.out.tags.append(tag)
        if tag == "table":
            self.out.tables.append([])
        elif tag == "tr":
            self.out.rows.append([])
            self.out.tables[-1].append(self.out.rows[-1])
        elif tag in ("td", "th"):
            self.cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self.cell is not None:
            self.out.rows[-1].append("".join(self.cell))
            self.cell = None

    def handle_data(self, data: str) -> None:
        self.texts.append(data)
        if self.cell is not None:
            self.cell.append(data)


def read(markdown: str) -> Rendered:
    out = Rendered(_MD.render(markdown))
    reader = _Reader(out)
    reader.feed(out.html)
    reader.close()
    out.text = "".join(reader.texts)
    return out
