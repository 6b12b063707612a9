from __future__ import annotations

from pathlib import Path

import pytest

from agentgauge.agents.prices import Price, PriceTable, default_prices
from agentgauge.errors import InputError


def test_cost_is_tokens_times_price_per_million() -> None:
    table = PriceTable({"m": Price(input=3.0, output=15.0)})
    # 1000 * 3 / 1e6 + 500 * 15 / 1e6 = 0.003 + 0.0075 = 0.0105
    assert table.cost(("m",), 1000, 500) == pytest.approx(0.0105)


def test_unknown_model_or_tokens_give_none_never_zero() -> None:
    table = PriceTable({"m": Price(1.0, 1.0)})
    assert table.cost(("other",), 10, 10) is None
    assert table.cost(("m",), None, 10) is None
    assert table.cost((None,), 10, 10) is None


def test_lookup_strips_date_stamps_but_never_matches_prefixes() -> None:
    # Rewritten from the hand-written table to genai-prices' bundled snapshot (the
    # same list prices: gpt-4o $2.50/$10, gpt-4o-mini $0.15/$0.60 per 1M tokens).
    table = PriceTable()
    dated = table.cost(("gpt-4o-2024-08-06",), 1_000_000, 0)
    assert dated == table.cost(("gpt-4o",), 1_000_000, 0) == pytest.approx(2.50)
    assert table.cost(("gpt-4o-mini",), 1_000_000, 0) == pytest.approx(0.15)
    assert table.cost(("gpt-4o-turbo-preview",), 10, 10) is None
    # the reported name wins over the requested one: 1e6 output tokens · $0.60 / 1e6
    assert table.cost(("gpt-4o-mini", "gpt-4o"), 0, 1_000_000) == pytest.approx(0.60)
    # and the user's own table keeps its rules: date stamps stripped, no prefixes
    mine = PriceTable({"gpt-4o": Price(1.0, 2.0)}, fallback=False)
    assert mine.lookup("gpt-4o-2024-08-06") == Price(1.0, 2.0)
    assert mine.lookup("gpt-4o-mini") is None


def test_files_and_environment_extend_the_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    yaml_file = tmp_path / "p.yaml"
    yaml_file.write_text("local-llama: {input: 0, output: 0}\ngpt-4o: {input: 1, output: 2}\n")
    json_file = tmp_path / "p.json"
    json_file.write_text('{"mine": {"input": 0.5, "output": 1.5}}')
    monkeypatch.setenv("AGENTGAUGE_PRICES", str(json_file))
    table = default_prices(yaml_file)
    assert table.lookup("local-llama") == Price(0.0, 0.0)  # a known zero price is a price
    assert table.lookup("gpt-4o") == Price(1.0, 2.0)
    assert table.lookup("mine") == Price(0.5, 1.5)


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("m: {input: 1}\n", r"p.yaml: m: expected \{input"),
        ("m: {input: -1, output: 1}\n", "p.yaml: m.input: price must be a non-negative number"),
        (
            "m: {input: true, output: 1}\n",
            "m.input: price must be a non-negative number, got a boolean",
        ),
        # A quoted price read "must be a non-negative number, got 0.15".
        (
            "m: {input: '0.15', output: 0.6}\n",
            r"m.input: price must be a non-negative number, got the string '0.15' "
            r"\(write it unquoted\)",
        ),
        (
            "m: {input: 1, output: cheap}\n",
            "m.output: price must be a non-negative number, got the string 'cheap'$",
        ),
        ("m: {input: 1, output: .inf}\n", "m.output: price must be a non-negative number, got inf"),
        (
            "m: {input: 1, output: null}\n",
            "m.output: price must be a non-negative number, got null",
        ),
        ("- 1\n", "expected a mapping"),
        # YAML keeps the last of two keys: the first price vanished without a word.
        ("m: {input: 1, output: 2}\nm: {input: 3, output: 4}\n", "p.yaml:2: m: key appears twice"),
    ],
)
def test_bad_price_files_name_the_field(tmp_path: Path, text: str, match: str) -> None:
    path = tmp_path / "p.yaml"
    path.write_text(text)
    with pytest.raises(InputError, match=match):
        PriceTable().load(path)


def test_a_call_with_one_token_count_is_unknown_and_says_which() -> None:
    """The callers pass no usage when either count is missing; the reason said "no
    token counts" for a call that recorded its input tokens."""
    table = PriceTable({"m": Price(1.0, 1.0)})
    quote = table.quote(("m",), None)
    assert quote.usd is None
    assert quote.source == "unknown: the call did not record both its input and output tokens"
