"""Prices from genai-prices' bundled snapshot, under the user's own prices."""

from __future__ import annotations

import socket
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from agentgauge.agents.prices import (
    Price,
    PriceTable,
    Usage,
    default_prices,
    genai_prices_version,
    price_call,
)


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any attempt to open a connection or resolve a name fails the test."""

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError(f"network use during pricing: {args!r}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


def test_known_models_are_priced_from_the_bundled_snapshot(no_network: None) -> None:
    # gpt-4.1-mini: $0.40 in, $1.60 out per 1M -> (1000·0.40 + 500·1.60) / 1e6 = 1.2e-3
    usd, source = price_call("gpt-4.1-mini-2025-04-14", input_tokens=1000, output_tokens=500)
    assert usd == pytest.approx(1.2e-3)
    assert source.startswith(f"genai-prices {genai_prices_version()} (bundled snapshot): ")
    assert "openai/gpt-4.1-mini" in source


def test_litellm_style_names_are_split_into_provider_and_model(no_network: None) -> None:
    # claude-sonnet-4: $3 in per 1M -> 1e6 · 3 / 1e6 = 3.0
    usd, source = price_call("anthropic/claude-sonnet-4", input_tokens=1_000_000, output_tokens=0)
    assert usd == pytest.approx(3.0) and "anthropic/" in source


def test_cached_prompt_tokens_are_billed_at_the_cache_price(no_network: None) -> None:
    # gpt-4o: $2.50 per 1M input, $1.25 per 1M cached input:
    # 500k uncached · 2.50 + 500k cached · 1.25 = 1.25 + 0.625 = 1.875
    usd, _ = price_call(
        "gpt-4o", input_tokens=1_000_000, output_tokens=0, cache_read_tokens=500_000
    )
    assert usd == pytest.approx(1.875)
    full, _ = price_call("gpt-4o", input_tokens=1_000_000, output_tokens=0)
    assert full == pytest.approx(2.50)


def test_unknown_model_is_none_with_a_reason_never_zero(no_network: None) -> None:
    usd, source = price_call("my-local-llama", input_tokens=10, output_tokens=10)
    assert usd is None
    assert "unknown" in source and "my-local-llama" in source and "--prices" in source
    usd, source = price_call("gpt-4o", input_tokens=None, output_tokens=10)
    assert usd is None and "did not record both its input and output tokens" in source
    assert price_call(None, input_tokens=1, output_tokens=1)[0] is None


def test_the_users_file_wins_and_is_named(tmp_path: Path, no_network: None) -> None:
    path = tmp_path / "prices.yaml"
    path.write_text("gpt-4o: {input: 1, output: 2}\nlocal-llama: {input: 0, output: 0}\n")
    table = default_prices(path)
    # (1000·1 + 500·2) / 1e6 = 2e-3, not genai-prices' $2.50/$10
    quote = table.quote(("gpt-4o",), Usage(1000, 500))
    assert quote.usd == pytest.approx(2e-3)
    assert quote.source == f"user prices {path}: gpt-4o"
    # a known zero price is a price
    assert table.quote(("local-llama",), Usage(1000, 500)).usd == 0.0
    usd, source = price_call("gpt-4o", input_tokens=1000, output_tokens=500, prices=table)
    assert (usd, source) == (pytest.approx(2e-3), f"user prices {path}: gpt-4o")


def test_environment_file_is_a_users_price(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "p.json"
    path.write_text('{"gpt-4o-mini": {"input": 10, "output": 10}}')
    monkeypatch.setenv("AGENTGAUGE_PRICES", str(path))
    # (1000 + 1000) · 10 / 1e6 = 0.02
    usd, source = price_call("gpt-4o-mini", input_tokens=1000, output_tokens=1000)
    assert usd == pytest.approx(0.02) and source.startswith("user prices")


def test_without_fallback_only_the_users_prices_count() -> None:
    assert PriceTable(fallback=False).quote(("gpt-4o",), Usage(1, 1)).usd is None


def test_the_call_date_picks_the_price_in_force_and_is_recorded(no_network: None) -> None:
    at = datetime(2025, 6, 1, tzinfo=UTC)
    usd, source = price_call("gpt-4o-mini", input_tokens=1_000_000, output_tokens=0, at=at)
    assert usd == pytest.approx(0.15) and source.endswith("at 2025-06-01")


def test_pricing_never_starts_genai_prices_updater(no_network: None) -> None:
    import genai_prices.data_snapshot as snapshot

    price_call("gpt-4o", input_tokens=1, output_tokens=1)
    # The updater installs a fetched snapshot; the bundled one is what priced the call.
    assert snapshot.get_snapshot().from_auto_update is False


def test_a_users_price_is_found_for_a_name_with_an_eight_digit_date(
    tmp_path: Path, no_network: None
) -> None:
    # Anthropic dates its models -YYYYMMDD: the user's claude-sonnet-4 was passed over
    # for genai-prices' $3 per 1M input tokens.
    path = tmp_path / "p.yaml"
    path.write_text("claude-sonnet-4: {input: 1.0, output: 1.0}\n")
    usd, source = price_call(
        "claude-sonnet-4-20250514", input_tokens=1_000_000, output_tokens=0,
        prices=default_prices(path),
    )  # fmt: skip
    assert (usd, source) == (pytest.approx(1.0), f"user prices {path}: claude-sonnet-4")
    # Still never by prefix: the bare name must be the user's entry.
    mine = PriceTable({"claude-sonnet": Price(1.0, 1.0)}, fallback=False)
    assert mine.lookup("claude-sonnet-4-20250514") is None


def test_counts_genai_prices_refuses_are_named_not_read_as_an_unknown_model(
    no_network: None,
) -> None:
    # 300 tokens read from the cache of a 100-token prompt: genai-prices knows
    # gpt-4o-mini and refuses the counts. The reason said nobody knew the model.
    usd, source = price_call(
        "gpt-4o-mini", input_tokens=100, output_tokens=50, cache_read_tokens=300
    )
    assert usd is None
    assert source == (
        "unknown: genai-prices refused the token counts (cache_read_tokens 300 > input_tokens 100)"
    )
    # The same model with counts it takes is priced: the refusal was not remembered.
    assert price_call("gpt-4o-mini", input_tokens=100, output_tokens=50)[0] is not None


def test_an_imported_call_with_refused_counts_names_them(tmp_path: Path) -> None:
    # The hunter's span: 300 cache-read tokens of a 100-token prompt, imported.
    from tests.importers.test_trace_prices import _chat, _genai_file

    from agentgauge.importers import read_import
    from agentgauge.schema import ModelCallEvent

    span = _chat("gpt-4o-mini", 100, 50, **{"gen_ai.usage.cache_read.input_tokens": 300})
    path = _genai_file(tmp_path / "t.jsonl", span, _chat("gpt-4o-mini", 100, 50))
    (trial,) = read_import("otel", path).trials
    refused, priced = [e for e in trial.events if isinstance(e, ModelCallEvent)]
    assert refused.cost_usd is None and trial.cost_usd is None
    assert refused.price_source == (
        "unknown: genai-prices refused the token counts (cache_read_tokens 300 > input_tokens 100)"
    )
    assert priced.cost_usd is not None
