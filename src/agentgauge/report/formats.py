"""How figures are written in every report: terminal, Markdown, HTML and the record.

One rule per kind of figure, so the same number reads the same everywhere.
"""

from __future__ import annotations

import math

__all__ = ["DASH", "money"]

#: What a figure nobody measured shows (the reason is printed beside or below it).
DASH = "—"


def money(x: float | None) -> str:
    """US dollars: cents from $1 (and for exactly 0), three significant figures below.

    Agent costs per trial are often fractions of a cent, where two decimals would
    print $0.00 for a figure that is not zero.
    """
    if x is None or math.isnan(x):
        return DASH
    if x == 0 or abs(x) >= 1:
        return f"${x:,.2f}"
    return f"${x:.3g}" if abs(x) >= 1e-4 else f"${x:.2e}"
