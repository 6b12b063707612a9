"""Tables that fit the terminal they are printed on.

Rich fits a table wider than the console by shrinking every column alike: a figure
is cut (``18.6% [11.4–29.…``), a number wraps mid-number (``1,02`` / ``0 in``) or a
column gets no width at all and vanishes, with nothing said. `fitted` prints such a
table's rows as blocks of ``header: value`` lines instead (docs/reports.md, "Narrow
terminals").
"""

from __future__ import annotations

from typing import Any

from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text

from agentgauge.display import terminal_text

__all__ = ["fitted"]


def _lays_out(console: Console, table: Table, wrap_width: int | None = None) -> bool:
    """Whether ``table`` fits the console with no word cut or broken: its ``no_wrap``
    columns at their full width, the others at their longest word (or ``wrap_width``,
    where a longer word may fold: a transcript's JSON). Narrower, Rich shrinks every
    column alike and cuts figures (``18.6% [11.4–29.…``) or gives a column no width at
    all, silently (horizon's p50 at 40 columns)."""
    # Rich's own column measure (with padding) and border width, as its layout uses.
    options = console.options.update_width(1_000_000)
    need = table._extra_width
    for column in table.columns:
        measured = table._measure_column(console, options, column)
        if column.no_wrap:
            need += measured.maximum
        elif wrap_width is None:
            need += measured.minimum
        else:
            padding = table._get_padding_width(column._index)
            need += min(measured.minimum, wrap_width + padding)
    return need <= console.width


def _plain(cell: Any, style: str = "") -> Text:
    """A table cell as one line (its line breaks read as spaces)."""
    text = cell.copy() if isinstance(cell, Text) else terminal_text(cell, keep="\n")
    joined = Text(" ").join(line for line in text.split("\n") if line.plain)
    joined.stylize(style)
    return joined


def fitted(
    console: Console, table: Table, *, head: int = 1, wrap_width: int | None = None
) -> RenderableType:
    """``table`` itself where it lays out (`_lays_out`); on a console too narrow for it,
    its rows as blocks instead, each the row's first ``head`` cells on a line and then
    one line per other column, ``header: value``, wrapped between words (a table of two
    columns, a figure per row for one group, as the group's header and a ``figure:
    value`` line a row). Nothing is cut: a number is never broken and no column is
    dropped (docs/reports.md, "Narrow terminals")."""
    if _lays_out(console, table, wrap_width):
        return table
    lines: list[Text] = []
    if table.title is not None:
        lines.append(_plain(table.title, "bold"))
    columns = table.columns
    if len(columns) == 2 and head == 1:  # a figure per row for one group: the group heads
        lines.append(_plain(columns[1].header, "bold"))
        for name, value in zip(columns[0]._cells, columns[1]._cells, strict=True):
            lines.append(Text.assemble("  ", _plain(name), ": ", _plain(value)))
        return Group(*lines)
    for row in range(table.row_count):
        cells = [c._cells[row] for c in columns]
        first = Text("  ").join(_plain(c) for c in cells[:head])
        first.stylize("bold")
        lines.append(first)
        for column, cell in zip(columns[head:], cells[head:], strict=True):
            header = _plain(column.header)
            lines.append(Text.assemble("  ", header, ": " if header.plain else "", _plain(cell)))
    return Group(*lines)
