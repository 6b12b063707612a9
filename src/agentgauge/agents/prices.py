"""Model prices, to put a cost on every model call that reports its tokens.

Where a call's price comes from, first match wins (docs/running-agents.md, "Prices"):

1. **The user's prices**: a JSON/YAML file (``--prices FILE``, or the
   ``AGENTGAUGE_PRICES`` environment variable naming one) or `PriceTable.update`,
   mapping a model name to ``{"input": USD per 1M prompt tokens, "output": USD
   per 1M completion tokens}``. Looked up by the exact name the provider
   reported, then the name that was requested, then each without a trailing
   date stamp (``gpt-4o-2024-08-06`` -> ``gpt-4o``, ``claude-sonnet-4-20250514``
   -> ``claude-sonnet-4``), never by prefix
   (``gpt-4o-mini`` must not be billed as ``gpt-4o``).
2. **genai-prices** (Pydantic's maintained price database across providers,
   https://github.com/pydantic/genai-prices): the snapshot bundled with the
   installed package, with its own model matching and its prices for cached
   prompt tokens (read and write) and reasoning tokens. agentgauge never starts
   its network auto-update (``genai_prices.UpdatePrices``), so a price depends
   only on the installed version, which is recorded with every priced call.
3. Otherwise the price is **unknown**: ``None``, never 0 (docs/metrics.md,
   "Cost, latency, tokens"): a free model would otherwise look like the
   cheapest per success.

Every quote says where its price came from (`Quote.source`): ``user prices
FILE: NAME``, ``genai-prices VERSION (bundled snapshot): PROVIDER/MODEL at
DATE``, or why the price is unknown (a model nobody prices, or counts genai-prices
refuses: ``unknown: genai-prices refused the token counts (cache_read_tokens 300 >
input_tokens 100)``).
"""

from __future__ import annotations

import math
import os
import re
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache
from importlib.metadata import version
from pathlib import Path
from typing import Any

from agentgauge.errors import InputError, shown_number, value_kind
from agentgauge.textio import loads_json, read_text
from agentgauge.yamlio import load_yaml

__all__ = [
    "Price",
    "PriceTable",
    "Quote",
    "default_prices",
    "genai_prices_version",
    "price_call",
]


@dataclass(frozen=True)
class Price:
    """A user's price: USD per one million tokens."""

    input: float
    output: float

    def cost(self, input_tokens: int, output_tokens: int) -> float:
        """``(input_tokens * input + output_tokens * output) / 1e6``."""
        return (input_tokens * self.input + output_tokens * self.output) / 1e6


@dataclass(frozen=True)
class Usage:
    """The token counts of one model call. ``input_tokens`` counts every prompt
    token, cached ones included (OpenAI's ``prompt_tokens``); ``cache_read_tokens``
    and ``cache_write_tokens`` say how many of them were read from or written to
    the provider's prompt cache. ``reasoning_tokens`` are part of ``output_tokens``."""

    input_tokens: int
    output_tokens: int
    cache_read_tokens: int | None = None
    cache_write_tokens: int | None = None
    reasoning_tokens: int | None = None


@dataclass(frozen=True)
class Quote:
    """The price of one call and where it came from."""

    usd: float | None
    """US dollars; ``None`` when unknown (never 0 for an unknown price)."""
    source: str
    """``user prices FILE: NAME``, ``genai-prices VERSION (bundled snapshot):
    PROVIDER/MODEL at DATE``, or why the price is unknown."""


#: A trailing date stamp: OpenAI's ``-2024-08-06`` and ``-0613``, Anthropic's ``-20250514``.
_DATE_SUFFIX = re.compile(r"-(\d{4}-\d{2}-\d{2}|\d{8}|\d{4})$")


class PriceTable:
    """The user's prices laid over genai-prices' bundled snapshot (module docstring).

    ``fallback=False`` prices only from the user's entries (a table for tests, or
    for a user who wants no price they did not write)."""

    def __init__(self, prices: Mapping[str, Price] | None = None, *, fallback: bool = True) -> None:
        self._prices: dict[str, Price] = dict(prices or {})
        self._sources: dict[str, str] = dict.fromkeys(self._prices, "user prices")
        self.fallback = fallback
        # Quotes of names nobody prices, by (names, provider): genai-prices looks an
        # unknown model up anew across every provider each time (~0.1 ms a call), and
        # an import of a million calls of an in-house model would pay it a million times.
        self._unknown: dict[tuple[tuple[str, ...], str | None], Quote] = {}

    def update(self, prices: Mapping[str, Price | Mapping[str, Any]], *, source: str = "") -> None:
        """Add or replace prices; values are `Price` or ``{"input", "output"}`` mappings."""
        for name, value in prices.items():
            self._prices[str(name)] = _as_price(name, value, source)
            self._sources[str(name)] = f"user prices {source}" if source else "user prices"
        self._unknown.clear()

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
        """The user's price for the first name that has one (exact, then without a
        date stamp); genai-prices is not consulted (see `quote`)."""
        found = self._user_entry(names)
        return None if found is None else self._prices[found]

    def _user_entry(self, names: tuple[str | None, ...]) -> str | None:
        candidates = [n for n in names if n]
        for name in candidates:
            if name in self._prices:
                return name
        for name in candidates:
            bare = _DATE_SUFFIX.sub("", name)
            if bare in self._prices:
                return bare
        return None

    def known_unknown(self, names: tuple[str | None, ...], provider: str | None) -> Quote | None:
        """The quote of a model this table already found nobody prices, or ``None``:
        what `quote` answers for it whatever the tokens and the date, so that a caller
        with many calls of such a model can skip reading them."""
        return self._unknown.get((tuple(n for n in names if n), provider))

    def quote(
        self,
        names: tuple[str | None, ...],
        usage: Usage | None,
        *,
        provider: str | None = None,
        at: datetime | None = None,
    ) -> Quote:
        """The price of one call by the first of ``names`` that is priced.

        ``names``: the model as the provider reported it, then as requested.
        ``provider``: a genai-prices provider id (``openai``, ``anthropic``...) or
        ``litellm`` for ``provider/model`` names; guessed from the name when absent.
        ``at``: when the call was made, which picks the price in force then
        (default: now)."""
        if usage is None:
            return Quote(None, "unknown: the call did not record both its input and output tokens")
        known_unknown = self.known_unknown(names, provider)
        if known_unknown is not None:
            return known_unknown
        key = (tuple(n for n in names if n), provider)
        entry = self._user_entry(names)
        if entry is not None:
            price = self._prices[entry]
            return Quote(
                price.cost(usage.input_tokens, usage.output_tokens),
                f"{self._sources[entry]}: {entry}",
            )
        candidates = [n for n in names if n]
        if not candidates:
            return Quote(None, "unknown: the call names no model")
        if not self.fallback:
            return Quote(None, f"unknown: no user price for {candidates[0]!r}")
        refused: Quote | None = None
        for name in candidates:
            found = _genai_quote(name, provider, usage, at)
            if found is not None and found.usd is not None:
                return found
            refused = refused or found
        if refused is not None:
            # genai-prices knows the model and refused the counts: no verdict on the
            # model, and not remembered (other counts of it are priced).
            return refused
        unknown = Quote(
            None,
            f"unknown: neither the user's prices nor genai-prices {genai_prices_version()} "
            f"know {candidates[0]!r} (add it to a --prices file)",
        )
        self._unknown[key] = unknown
        return unknown

    def cost(
        self,
        names: tuple[str | None, ...],
        input_tokens: int | None,
        output_tokens: int | None,
    ) -> float | None:
        """USD for one call, or ``None`` when the price or the token counts are unknown."""
        if input_tokens is None or output_tokens is None:
            return None
        return self.quote(names, Usage(input_tokens, output_tokens)).usd

    def __contains__(self, name: object) -> bool:
        return name in self._prices


def price_call(
    model: str | None,
    provider: str | None = None,
    *,
    input_tokens: int | None,
    output_tokens: int | None,
    cache_read_tokens: int | None = None,
    cache_write_tokens: int | None = None,
    reasoning_tokens: int | None = None,
    at: datetime | None = None,
    prices: PriceTable | None = None,
) -> tuple[float | None, str]:
    """``(USD or None, source)`` for one model call that carries tokens and no cost.

    The one pricing rule for adapters and importers: ``prices`` (default: the
    user's files, `default_prices`) first, then genai-prices' bundled snapshot;
    an unknown model or missing token counts give ``None`` and the reason."""
    usage = (
        None
        if input_tokens is None or output_tokens is None
        else Usage(
            input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, reasoning_tokens
        )
    )
    table = default_prices() if prices is None else prices
    found = table.quote((model,), usage, provider=provider, at=at)
    return found.usd, found.source


@cache
def genai_prices_version() -> str:
    """The installed genai-prices version, which pins its bundled price snapshot."""
    return version("genai-prices")


@cache
def _load_snapshot() -> None:
    from genai_prices import data_snapshot

    data_snapshot.get_snapshot()


def _genai_quote(
    name: str, provider: str | None, usage: Usage, at: datetime | None
) -> Quote | None:
    # Imported here: genai-prices' data module is large and only priced calls need it.
    from genai_prices import Usage as GenaiUsage
    from genai_prices import calc_price

    refused: Quote | None = None
    when = at or datetime.now(tz=UTC)
    counts: dict[str, int] = {
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
    }
    for key, value in (
        ("cache_read_tokens", usage.cache_read_tokens),
        ("cache_write_tokens", usage.cache_write_tokens),
        ("output_reasoning_tokens", usage.reasoning_tokens),
    ):
        if value:
            counts[key] = value
    for model_ref, provider_id in _genai_refs(name, provider):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # its notes on unpriced usage keys
                calc = calc_price(
                    GenaiUsage(**counts),
                    model_ref,
                    provider_id=provider_id,
                    genai_request_timestamp=when,
                )
        except LookupError:  # the model is unknown under this name
            continue
        except ValueError as exc:  # it knows the model and refuses the counts
            refused = refused or Quote(None, _refused(usage, exc))
            continue
        origin = (
            f"prices fetched {calc.auto_update_timestamp:%Y-%m-%d}"
            if calc.auto_update_timestamp is not None  # someone else started its updater
            else "bundled snapshot"
        )
        return Quote(
            float(calc.total_price),
            f"genai-prices {genai_prices_version()} ({origin}): "
            f"{calc.provider.id}/{calc.model.id} at {when:%Y-%m-%d}",
        )
    return refused


def _refused(usage: Usage, exc: ValueError) -> str:
    """Why genai-prices refused a call's counts, naming them: ``unknown: genai-prices
    refused the token counts (cache_read_tokens 300 > input_tokens 100)``; its own
    words when none of the counts is larger than the count it is part of."""
    parts = (
        ("cache_read_tokens", usage.cache_read_tokens, "input_tokens", usage.input_tokens),
        ("cache_write_tokens", usage.cache_write_tokens, "input_tokens", usage.input_tokens),
        ("reasoning_tokens", usage.reasoning_tokens, "output_tokens", usage.output_tokens),
    )
    over = [f"{a} {n} > {b} {whole}" for a, n, b, whole in parts if n is not None and n > whole]
    said = "; ".join(over) or str(exc).removeprefix("Invalid usage data: ")[:200]
    return f"unknown: genai-prices refused the token counts ({said})"


def _genai_refs(name: str, provider: str | None) -> list[tuple[str, str | None]]:
    """``(model_ref, provider_id)`` pairs to try: a ``provider/model`` name is split."""
    refs: list[tuple[str, str | None]] = [(name, provider)]
    head, sep, tail = name.partition("/")
    if sep and tail:
        refs += [(tail, head), (tail, None)]
    if provider is not None:
        refs.append((name, None))
    return refs


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
                f"price must be a non-negative number, got {_shown_price(v)}",
                file=source or None,
                field=f"{where}.{key}",
            )
        out.append(float(v))
    return Price(out[0], out[1])


def _shown_price(value: object) -> str:
    """A refused price as the refusal names it: a number as written (``-1``, ``inf``),
    text as text (``the string '0.15' (write it unquoted)`` when it reads as a number,
    as `import jsonl` says of a quoted number), anything else by its kind."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return shown_number(value)
    if not isinstance(value, str):
        return value_kind(value)
    shown = f"the string {value[:40]!r}"
    try:
        number = float(value)
    except ValueError:
        return shown
    # Only where unquoting it would make it a price.
    return f"{shown} (write it unquoted)" if _finite(number) and number >= 0 else shown


def _finite(value: int | float) -> bool:
    try:
        return math.isfinite(value)
    except OverflowError:  # an int no float can hold (10**400)
        return False


def default_prices(path: str | Path | None = None, *, warm: bool = True) -> PriceTable:
    """genai-prices, overlaid by ``AGENTGAUGE_PRICES`` and then by ``path`` (which wins).

    ``warm``: load genai-prices' snapshot now (about a second, once per process), so
    that the first priced call of a run does not stall its event loop. An importer
    passes ``False``: the snapshot is then loaded by the first call that needs it, and
    a file whose calls all state their cost never pays for it."""
    if warm:
        _load_snapshot()
    table = PriceTable()
    env = os.environ.get("AGENTGAUGE_PRICES")
    if env:
        table.load(env)
    if path is not None:
        table.load(path)
    return table
