"""Result tables that choose their columns for the width they are printed at.

A cell is never cut or folded: numbers, names and codes stay whole (only free text, an
error or a verdict, wraps, and only at spaces). Where the default columns do not fit,
the lowest-priority ones are left out and a caption line says which; `--wide` shows
every column, however wide the table gets.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable, Sequence

from rich import box
from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, JustifyMethod, RenderResult
from rich.table import Table
from rich.text import Text

# Columns are 2 spaces apart, with no edge: a table of n columns is the sum of their
# widths plus 2 * (n - 1).
GAP = 2
WIDE_ONLY = None
# Free text up to this wide stays on one line where leaving out a low-priority column
# makes room (a verdict, a short error); longer text wraps at spaces.
ONE_LINE = 40


@dataclass(frozen=True)
class Column:
    """header: may hold a line break ("printed\\ntps") to stay narrow. drop: None shows
    the column only with --wide; 0 never leaves it out; otherwise the higher, the sooner
    it goes when the table is too wide. wraps: free text, wrapped at spaces."""

    header: str
    justify: JustifyMethod
    cell: Callable[[Any], str]  # of a row: a dict, or an object
    drop: int | None = 0
    wraps: bool = False


def _widths(column: Column, cells: Sequence[str]) -> tuple[int, int]:
    """The narrowest the column can be without breaking a cell (or, for free text, a
    word), and the width it asks for when columns are chosen."""
    header = max((cell_len(line) for line in Text.from_markup(column.header).plain.splitlines()), default=0)
    plain = [Text.from_markup(cell).plain for cell in cells]
    lines = [cell_len(line) for p in plain for line in p.splitlines()]
    if not column.wraps:
        return max([header, *lines]), max([header, *lines])
    narrowest = max([header, *(cell_len(word) for p in plain for word in p.split())])
    return narrowest, max(narrowest, min(max(lines, default=0), ONE_LINE))


class FittedTable:
    """A rich renderable: the title, the table with the columns that fit the console's
    width, and the caption lines (notes, the legend, which columns were left out)."""

    def __init__(self, title: str | None, columns: Sequence[Column], rows: Iterable[Any], wide: bool = False,
                 notes: Sequence[str] = ()):
        self.title = title
        self.rows = list(rows)
        self.wide = wide
        self.notes = list(notes)
        self.columns = [c for c in columns if wide or c.drop is not WIDE_ONLY]
        self.cells = [[c.cell(r) for r in self.rows] for c in self.columns]
        measured = [_widths(c, cells) for c, cells in zip(self.columns, self.cells)]
        self.widths = [narrowest for narrowest, _ in measured]
        self.wants = [wanted for _, wanted in measured]

    def choose(self, width: int) -> tuple[list[int], list[str]]:
        """Indexes of the columns shown at this width, and the headers left out. Columns
        go to keep free text on one line only where that makes it fit."""
        shown = self._fit(width, self.wants)
        if self._total(shown, self.wants) > width:
            shown = self._fit(width, self.widths)
        return shown, [Text.from_markup(c.header).plain.replace("\n", " ") for i, c in enumerate(self.columns)
                       if i not in shown]

    def _total(self, shown: Sequence[int], widths: Sequence[int]) -> int:
        return sum(widths[i] for i in shown) + GAP * (len(shown) - 1)

    def _fit(self, width: int, widths: Sequence[int]) -> list[int]:
        shown = list(range(len(self.columns)))
        while not self.wide and self._total(shown, widths) > width:
            droppable = [i for i in shown if self.columns[i].drop]
            if not droppable:
                break  # the essential columns alone are wider: shown whole all the same
            # The highest drop rank goes first; of equal ranks, the rightmost.
            shown.remove(max(droppable, key=lambda i: (self.columns[i].drop or 0, i)))
        return shown

    def table(self, shown: Sequence[int]) -> Table:
        table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, padding=(0, GAP - 1, 0, 0))
        for i in shown:
            c = self.columns[i]
            table.add_column(c.header, justify=c.justify, no_wrap=not c.wraps, overflow="fold")
        for n in range(len(self.rows)):
            table.add_row(*(self.cells[i][n] for i in shown))
        return table

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        shown, left_out = self.choose(options.max_width)
        if self.title:
            yield Text.from_markup(self.title)
        # Wider than the console (--wide, or essential columns): the table keeps its
        # width, and is printed uncropped (terminal.show).
        width = max(options.max_width, self._total(shown, self.widths))
        yield from console.render(self.table(shown), options.update(width=width, max_width=width))
        for note in self.notes:
            yield Text.from_markup(note)
        if left_out:
            yield Text(f"left out for the width: {', '.join(left_out)} (--wide shows every column)")
