"""Model prices in US dollars per million tokens, to put a cost on every model call.

A cost nobody knows is recorded as ``None``, never as 0 (docs/metrics.md,
"Cost, latency, tokens"): a free model would otherwise look like the cheapest
per success. The built-in table
holds a few common hosted models at list prices (as published by the
providers, late 2025) and prices the rubric judge's calls too; prices
change, so users extend or override it with `PriceTable.update`, a
JSON/YAML file (``--prices FILE``), or the
``AGENTGAUGE_PRICES`` environment variable naming such a file. The file maps a
model name to ``{"input": USD per 1M prompt tokens, "output": USD per 1M
completion tokens}``.

Lookup tries the exact name the provider reported, then the name that was
requested, then each with a trailing date stamp removed (``gpt-4o-2024-08-06``
-> ``gpt-4o``). It never matches by prefix: ``gpt-4o-mini`` must not be billed
as ``gpt-4o``.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentgauge.errors import InputError
from agentgauge.textio import loads_json, read_text
from agentgauge.yamlio import load_yaml

__all__ = ["BUILTIN_PRICES", "Price", "PriceTable", "default_prices"]


@dataclass(frozen=True)
class Price:
    """USD per one million tokens."""

    input: float
    output: float

    def cost(self, input_tokens: int, output_tokens: int) -> float:
        """``(input_tokens * input + output_tokens * output) / 1e6``."""
        return (input_tokens * self.input + output_tokens * self.output) / 1e6


#: List prices (USD per 1M tokens) published by the providers; override freely.
BUILTIN_PRICES: dict[str, Price] = {
    "gpt-4o": Price(2.50, 10.00),
    "gpt-4o-mini": Price(0.15, 0.60),
    "gpt-4.1": Price(2.00, 8.00),
    "gpt-4.1-mini": Price(0.40, 1.60),
    "gpt-4.1-nano": Price(0.10, 0.40),
    "o3-mini": Price(1.10, 4.40),
    "o4-mini": Price(1.10, 4.40),
    "claude-3-5-haiku": Price(0.80, 4.00),
    "claude-sonnet-4": Price(3.00, 15.00),
}

_DATE_SUFFIX = re.compile(r"-(\d{4}-\d{2}-\d{2}|\d{4})$")


class PriceTable:
    """Model name -> `Price`, with the lookup rules in the module docstring."""

    def __init__(self, prices: Mapping[str, Price] | None = None) -> None:
        self._prices: dict[str, Price] = dict(BUILTIN_PRICES if prices is None else prices)

    def update(self, prices: Mapping[str, Price | Mapping[str, Any]], *, source: str = "") -> None:
        """Add or replace prices; values are `Price` or ``{"input", "output"}`` mappings."""
        for name, value in prices.items():
            self._prices[str(name)] = _as_price(name, value, source)

    def load(self, path: str | Path) -> None:
        """Add the prices in a JSON or YAML file."""
        path = Path(path)
        if path.suffix == ".json":
            data = loads_json(read_text(path), file=path, line=None)
        else:
            data, _ = load_yaml(path)
        if not isinstance(data, dict):
            raise InputError("expected a mapping from model name to prices", file=path)
        self.update(data, source=str(path))

    def lookup(self, *names: str | None) -> Price | None:
        """The price of the first name that is known (exact, then without a date stamp)."""
        candidates = [n for n in names if n]
        for name in candidates:
            if name in self._prices:
                return self._prices[name]
        for name in candidates:
            bare = _DATE_SUFFIX.sub("", name)
            if bare in self._prices:
                return self._prices[bare]
        return None

    def cost(
        self,
        names: tuple[str | None, ...],
        input_tokens: int | None,
        output_tokens: int | None,
    ) -> float | None:
        """USD for one call, or ``None`` when the price or the token counts are unknown."""
        price = self.lookup(*names)
        if price is None or input_tokens is None or output_tokens is None:
            return None
        return price.cost(input_tokens, output_tokens)

    def __contains__(self, name: object) -> bool:
        return name in self._prices


def _as_price(name: object, value: Price | Mapping[str, Any], source: str) -> Price:
    if isinstance(value, Price):
        return value
    where = f"{name}"
    if not isinstance(value, Mapping) or set(value) != {"input", "output"}:
        raise InputError(
            "expected {input: USD per 1M tokens, output: USD per 1M tokens}",
            file=source or None,
            field=where,
        )
    out: list[float] = []
    for key in ("input", "output"):
        v = value[key]
        if isinstance(v, bool) or not isinstance(v, int | float) or not _finite(v) or v < 0:
            raise InputError(
                f"price must be a non-negative number, got {str(v)[:40]}",
                file=source or None,
                field=f"{where}.{key}",
            )
        out.append(float(v))
    return Price(out[0], out[1])


def _finite(value: int | float) -> bool:
    try:
        return math.isfinite(value)
    except OverflowError:  # an int no float can hold (10**400)
        return False


def default_prices(path: str | Path | None = None) -> PriceTable:
    """The built-in table, extended by ``AGENTGAUGE_PRICES`` and then by ``path``."""
    table = PriceTable()
    env = os.environ.get("AGENTGAUGE_PRICES")
    if env:
        table.load(env)
    if path is not None:
        table.load(path)
    return table
