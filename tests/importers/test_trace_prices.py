"""Model calls that carry tokens and no cost are priced when traces are read (``import
otel|openinference|inspect``, ``collect``), as the harness prices its own calls
(docs/running-agents.md, "Prices"): the user's ``--prices`` file, then genai-prices'
bundled snapshot; a model neither knows stays unknown, never $0, and a cost the trace
states is kept as stated."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import Cli, metrics_json
from tests.importers.otlp_docs import value

from agentgauge.agents.prices import genai_prices_version
from agentgauge.schema import ModelCallEvent, Trial
from agentgauge.store import Store

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
TRACE = "1" * 32


def _span(span_id: str, parent: str | None, start_s: float, end_s: float, **attrs: Any) -> dict:
    span: dict[str, Any] = {
        "traceId": TRACE,
        "spanId": span_id,
        "name": str(attrs.get("gen_ai.operation.name", "span")),
        "startTimeUnixNano": str(int(start_s * 1e9)),
        "endTimeUnixNano": str(int(end_s * 1e9)),
        "attributes": [{"key": k, "value": value(v)} for k, v in attrs.items()],
    }
    if parent is not None:
        span["parentSpanId"] = parent
    return span


#: 2025-05-01, a day genai-prices has gpt-4o-mini's price for.
DAY = 1746057600.0


def _genai_file(path: Path, *calls: dict[str, Any]) -> Path:
    root = _span(
        "a" * 16,
        None,
        DAY,
        DAY + 10,
        **{
            "gen_ai.operation.name": "invoke_agent",
            "agentgauge.task.id": "t",
            "agentgauge.outcome.success": True,
        },
    )
    spans = [root] + [
        _span(f"{i + 1:016x}", "a" * 16, DAY + i + 1, DAY + i + 2, **call)
        for i, call in enumerate(calls)
    ]
    doc = {"resourceSpans": [{"resource": {}, "scopeSpans": [{"spans": spans}]}]}
    path.write_text(json.dumps(doc) + "\n")
    return path


def _chat(model: str, tokens_in: int = 1000, tokens_out: int = 100, **more: Any) -> dict:
    return {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": model,
        "gen_ai.usage.input_tokens": tokens_in,
        "gen_ai.usage.output_tokens": tokens_out,
        **more,
    }


def _calls(db: Path, run: str) -> tuple[Trial, list[ModelCallEvent]]:
    with Store(db) as store:
        (trial,) = store.trials(run)
    return trial, [e for e in trial.events if isinstance(e, ModelCallEvent)]


def test_import_otel_prices_a_call_with_tokens_and_no_cost(cli: Cli, tmp_path: Path) -> None:
    """The hunter's file: cost was null (missing 1); now genai-prices' price of
    gpt-4o-mini on the day of the call, and where it came from on the call."""
    path = _genai_file(tmp_path / "t.jsonl", _chat("gpt-4o-mini"))
    db = tmp_path / "e.db"
    code, _out, err = cli("import", "otel", str(path), "--store", str(db), "--run-id", "x")
    assert code == 0, err
    cost = metrics_json(cli, f"{db}:x")["groups"][0]["cost"]
    # $0.15 per 1M prompt tokens, $0.60 per 1M completion tokens.
    assert cost["per_trial"] == pytest.approx(1000 * 0.15e-6 + 100 * 0.6e-6)
    assert cost["missing"] == 0
    trial, (call,) = _calls(db, "x")
    assert call.cost_usd == trial.cost_usd == pytest.approx(0.00021)
    assert call.price_source == (
        f"genai-prices {genai_prices_version()} (bundled snapshot): "
        "openai/gpt-4o-mini at 2025-05-01"
    )


def test_the_users_prices_file_wins(cli: Cli, tmp_path: Path) -> None:
    path = _genai_file(tmp_path / "t.jsonl", _chat("gpt-4o-mini"))
    prices = tmp_path / "prices.yaml"
    prices.write_text("gpt-4o-mini: {input: 1.0, output: 2.0}\n")
    db = tmp_path / "e.db"
    code, _out, err = cli(
        "import", "otel", str(path), "--store", str(db), "--run-id", "x", "--prices", str(prices)
    )
    assert code == 0, err
    _trial, (call,) = _calls(db, "x")
    assert call.cost_usd == pytest.approx(1000e-6 + 200e-6)
    assert call.price_source == f"user prices {prices}: gpt-4o-mini"


def test_a_missing_prices_file_is_one_line(cli: Cli, tmp_path: Path) -> None:
    path = _genai_file(tmp_path / "t.jsonl", _chat("gpt-4o-mini"))
    code, _out, err = cli(
        "import", "otel", str(path), "--store", str(tmp_path / "e.db"), "--prices", "nope.yaml"
    )
    assert code == 2 and "nope.yaml" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "e.db").exists()


def test_prices_is_refused_by_a_format_whose_calls_it_cannot_price(
    cli: Cli, tmp_path: Path
) -> None:
    (tmp_path / "t.jsonl").write_text('{"task_id": "t", "success": true}\n')
    code, _out, err = cli(
        "import", "jsonl", str(tmp_path / "t.jsonl"), "--prices", "p.yaml",
        "--store", str(tmp_path / "e.db"),
    )  # fmt: skip
    # The option is named (it said "jsonl: format 'jsonl' takes no options").
    assert code == 2 and err.startswith("agentgauge: error: --prices: applies only to the ")
    assert "otel" in err and "tau2" in err


def test_a_model_nobody_prices_stays_unknown_never_zero(tmp_path: Path) -> None:
    from agentgauge.importers import read_import

    path = _genai_file(tmp_path / "t.jsonl", _chat("in-house-model-7"), _chat("gpt-4o-mini", 10, 1))
    (trial,) = read_import("otel", path).trials
    calls = [e for e in trial.events if isinstance(e, ModelCallEvent)]
    assert calls[0].cost_usd is None and calls[0].price_source is not None
    assert calls[0].price_source.startswith("unknown:") and "in-house-model-7" in (
        calls[0].price_source
    )
    assert calls[1].cost_usd is not None and calls[1].cost_usd > 0
    assert trial.cost_usd is None  # one call's price is unknown: so is the trial's


def test_a_stated_cost_is_kept_and_a_response_model_is_priced_first(tmp_path: Path) -> None:
    from agentgauge.importers import read_import

    stated = {
        "openinference.span.kind": "LLM",
        "llm.model_name": "gpt-4o-mini",
        "llm.token_count.prompt": 1000,
        "llm.token_count.completion": 100,
        "llm.cost.total": 0.5,
    }
    unpriced = {k: v for k, v in stated.items() if k != "llm.cost.total"}
    root = {
        "openinference.span.kind": "AGENT",
        "agentgauge.task.id": "t",
        "agentgauge.outcome.success": True,
    }
    spans = [
        _span("a" * 16, None, DAY, DAY + 9, **root),
        _span("b" * 16, "a" * 16, DAY + 1, DAY + 2, **stated),
        _span("c" * 16, "a" * 16, DAY + 3, DAY + 4, **unpriced, **{"llm.provider": "openai"}),
    ]
    path = tmp_path / "oi.jsonl"
    path.write_text(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}) + "\n")
    (trial,) = read_import("openinference", path).trials
    first, second = [e for e in trial.events if isinstance(e, ModelCallEvent)]
    assert (first.cost_usd, first.price_source) == (0.5, None)
    assert second.price_source is not None and "openai/gpt-4o-mini" in second.price_source
    assert trial.cost_usd == pytest.approx(0.5 + 0.00021)


def test_cached_prompt_tokens_are_priced_at_the_cache_price(tmp_path: Path) -> None:
    from agentgauge.importers import read_import

    plain = _genai_file(tmp_path / "plain.jsonl", _chat("gpt-4o-mini"))
    cached = _genai_file(
        tmp_path / "cached.jsonl",
        _chat("gpt-4o-mini", **{"gen_ai.usage.cache_read.input_tokens": 800}),
    )
    full = read_import("otel", plain).trials[0].cost_usd
    less = read_import("otel", cached).trials[0].cost_usd
    assert full is not None and less is not None
    # 800 of the 1000 prompt tokens at gpt-4o-mini's cache-read price, $0.075 per 1M.
    assert less == pytest.approx(full - 800 * (0.15e-6 - 0.075e-6))


def test_a_file_whose_calls_state_their_cost_does_not_load_genai_prices(tmp_path: Path) -> None:
    """genai-prices' data takes about a second to load: an import pays it only when a
    call needs a price."""
    root = {
        "openinference.span.kind": "AGENT",
        "agentgauge.task.id": "t",
        "agentgauge.outcome.success": True,
    }
    llm = {
        "openinference.span.kind": "LLM",
        "llm.model_name": "gpt-4o-mini",
        "llm.token_count.prompt": 1000,
        "llm.token_count.completion": 100,
        "llm.cost.total": 0.1,
    }
    spans = [_span("a" * 16, None, 1, 9, **root), _span("b" * 16, "a" * 16, 2, 3, **llm)]
    path = tmp_path / "oi.jsonl"
    path.write_text(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}) + "\n")
    script = (
        "import sys; from agentgauge.importers import read_import; "
        f"t = read_import('openinference', {str(path)!r}).trials[0]; "
        "print(t.cost_usd, 'genai_prices.data' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    ).stdout
    assert out.split() == ["0.1", "False"]


def test_an_exported_run_keeps_its_costs_through_export_and_import(
    cli: Cli, tmp_path: Path
) -> None:
    """A call an agentgauge export says nothing of a cost for stays unknown on the way
    back: the record is what it was, and so are its metrics."""
    trial = {
        "task_id": "t",
        "success": True,
        "events": [
            {"type": "model_call", "model": "gpt-4o-mini", "input_tokens": 1000,
             "output_tokens": 100, "t": 1.0},
            {"type": "model_call", "model": "gpt-4o-mini", "input_tokens": 10,
             "output_tokens": 1, "cost_usd": 0.25, "t": 2.0},
        ],
    }  # fmt: skip
    (tmp_path / "t.jsonl").write_text(json.dumps(trial) + "\n")
    db = tmp_path / "e.db"
    assert (
        cli("import", "jsonl", str(tmp_path / "t.jsonl"), "--store", str(db), "--run-id", "a")[0]
        == 0
    )
    before = metrics_json(cli, f"{db}:a")
    code, _out, err = cli("export", f"{db}:a", "--otel", str(tmp_path / "o.jsonl"))
    assert code == 0, err
    code, _out, err = cli("import", "otel", str(tmp_path / "o.jsonl"), "--store", str(db),
                          "--run-id", "b")  # fmt: skip
    assert code == 0, err
    after = metrics_json(cli, f"{db}:b")
    assert after["groups"][0]["cost"] == before["groups"][0]["cost"]
    assert after["groups"][0]["cost"]["per_trial"] is None
    _trial, calls = _calls(db, "b")
    assert [(c.cost_usd, c.price_source) for c in calls] == [(None, None), (0.25, None)]


def _inspect_log(tmp_path: Path, model: str) -> Path:
    """The tiny Inspect log with its model renamed and every ``total_cost`` taken out."""
    data = json.loads((FIXTURES / "inspect" / "tiny.json").read_text())

    def strip(node: Any) -> Any:
        if isinstance(node, dict):
            out = {k: strip(v) for k, v in node.items() if k != "total_cost"}
            if "mockllm/model" in out.get("model_usage", {}):
                out["model_usage"] = {model: out["model_usage"]["mockllm/model"]}
            if out.get("model") == "mockllm/model":
                out["model"] = model
            return out
        if isinstance(node, list):
            return [strip(v) for v in node]
        return node

    path = tmp_path / "log.json"
    path.write_text(json.dumps(strip(data)))
    return path


def test_import_inspect_prices_model_usage_without_total_cost(cli: Cli, tmp_path: Path) -> None:
    from agentgauge.importers import read_import

    path = _inspect_log(tmp_path, "openai/gpt-4o-mini")
    trials = read_import("inspect", path).trials
    assert trials and all(t.cost_usd is not None and t.cost_usd > 0 for t in trials)
    usage = trials[0].metadata["model_usage"]["openai/gpt-4o-mini"]
    assert usage["price_source"].startswith(f"genai-prices {genai_prices_version()}")
    calls = [e for t in trials for e in t.events if isinstance(e, ModelCallEvent)]
    assert calls and all(c.price_source and c.cost_usd is not None for c in calls)
    # An unknown model, priced by the user's file.
    path = _inspect_log(tmp_path, "mockllm/model")
    assert all(t.cost_usd is None for t in read_import("inspect", path).trials)
    prices = tmp_path / "p.json"
    prices.write_text('{"mockllm/model": {"input": 1, "output": 1}}')
    db = tmp_path / "e.db"
    code, _out, err = cli("import", "inspect", str(path), "--store", str(db), "--run-id", "i",
                          "--prices", str(prices))  # fmt: skip
    assert code == 0, err
    cost = metrics_json(cli, f"{db}:i")["groups"][0]["cost"]
    assert cost["missing"] == 0 and cost["per_trial"] > 0


def test_collect_prices_live_spans(tmp_path: Path) -> None:
    """``collect --prices``: a trace received live is priced as its import would be."""
    from tests.collect.test_receiver import Collector

    prices = tmp_path / "p.yaml"
    prices.write_text("gpt-4o-mini: {input: 1.0, output: 2.0}\n")
    collector = Collector(tmp_path / "live.db", "--prices", str(prices))
    try:
        body = _genai_file(tmp_path / "t.jsonl", _chat("gpt-4o-mini")).read_bytes()
        status, _reply = collector.post(body, "application/json")
        assert status == 200
        code, _out, err = collector.stop()
    finally:
        collector.kill()
    assert code == 0, err
    trial, (call,) = _calls(tmp_path / "live.db", "live")
    assert call.cost_usd == trial.cost_usd == pytest.approx(0.0012)
    assert call.price_source == f"user prices {prices}: gpt-4o-mini"


# ----------------------------------------------------------------- totals that overflow


@pytest.mark.parametrize(
    ("attrs", "key", "words"),
    [
        ({"llm.cost.total": 1e308}, "llm.cost.total", "costs add up past the largest finite"),
        (
            {"llm.token_count.prompt": 2**63 - 1, "llm.token_count.completion": 1},
            "llm.token_count.prompt",
            "input tokens add up past 9223372036854775807",
        ),
    ],
)
def test_a_sum_that_overflows_names_the_span_that_carries_it_over(
    cli: Cli, tmp_path: Path, attrs: dict[str, Any], key: str, words: str
) -> None:
    root = {
        "openinference.span.kind": "AGENT",
        "agentgauge.task.id": "t",
        "agentgauge.outcome.success": True,
    }
    llm = {"openinference.span.kind": "LLM", "llm.model_name": "m", **attrs}
    spans = [
        _span("a" * 16, None, 1, 9, **root),
        _span("b" * 16, "a" * 16, 2, 3, **llm),
        _span("c" * 16, "a" * 16, 4, 5, **llm),
    ]
    path = tmp_path / "h.jsonl"
    path.write_text(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}) + "\n")
    code, _out, err = cli("import", "openinference", str(path), "--store", str(tmp_path / "e.db"))
    assert code == 2
    assert err.strip().splitlines() == [
        f"agentgauge: error: {path}:1: resourceSpans[0].scopeSpans[0].spans[2]: {key}: "
        f"the trace's model-call {words}" + err.split(words, 1)[1].rstrip()
    ]
