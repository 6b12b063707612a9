"""Each chat span repeats the conversation so far in ``gen_ai.input.messages``: a
call's history is read once per trace, and what is read is what a reading of every
call's whole list gives (the same events, the same faults, named at the same place)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.importers.otlp_docs import AGENT_ROOT, request, span

from agentgauge.errors import InputError
from agentgauge.importers import dialects, read_import
from agentgauge.schema import MessageEvent, ToolCallEvent

SYSTEM = {"role": "system", "parts": [{"type": "text", "content": "Be brief."}]}


def _text(role: str, text: str) -> dict[str, Any]:
    return {"role": role, "parts": [{"type": "text", "content": text}]}


def _call(n: int, inputs: str | list[Any], output: dict[str, Any]) -> dict[str, Any]:
    return span(
        f"{0xB00 + n:016x}",
        "chat m",
        {
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": "m",
            "gen_ai.usage.input_tokens": 5,
            "gen_ai.usage.output_tokens": 2,
            "gen_ai.input.messages": inputs if isinstance(inputs, str) else json.dumps(inputs),
            "gen_ai.output.messages": json.dumps([output]),
        },
        parent="00000000000000a1",
        start=1_100_000_000 + n * 100_000_000,
        end=1_150_000_000 + n * 100_000_000,
    )


def _conversation(turns: int) -> list[dict[str, Any]]:
    """Chat spans of a conversation of ``turns`` calls, each given all before it."""
    history: list[Any] = [SYSTEM, _text("user", "q0")]
    calls = []
    for n in range(turns):
        answer = _text("assistant", f"a{n}")
        calls.append(_call(n, list(history), answer))
        history += [answer, _text("user", f"q{n + 1}")]
    return calls


def _read(tmp_path: Path, *spans: dict[str, Any]) -> Any:
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps(request(AGENT_ROOT, *spans)) + "\n", encoding="utf-8")
    (trial,) = read_import("otel", path).trials
    return trial


def _said(trial: Any) -> list[tuple[str, str | None]]:
    return [(e.role, e.content) for e in trial.events if isinstance(e, MessageEvent)]


def test_each_message_of_a_conversation_is_read_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Call k repeats the 2k messages before it: reading each call's whole list read
    k^2 messages for a conversation of k calls."""
    read: list[Any] = []
    real = dialects._message

    def counted(span: Any, key: str, raw: Any, where: str) -> Any:
        read.append(raw)
        return real(span, key, raw, where)

    monkeypatch.setattr(dialects, "_message", counted)
    trial = _read(tmp_path, *_conversation(6))
    # Each call's input brings two new messages (the first, the system's and the
    # user's), and its output one.
    assert len(read) == 6 * 2 + 6
    said = _said(trial)
    assert said[:3] == [("system", "Be brief."), ("user", "q0"), ("assistant", "a0")]
    assert said[-1] == ("assistant", "a5") and len(said) == 2 + 6 * 2 - 1


def test_a_history_changed_by_a_later_call_is_read_whole(tmp_path: Path) -> None:
    """A later call whose history is not the earlier one's text followed by more (the
    system prompt rewritten, or the list written with spaces) gives its messages as a
    reading of the whole list does."""
    first = [SYSTEM, _text("user", "q0")]
    answer = _text("assistant", "a0")
    rewritten = [_text("system", "Be very brief."), _text("user", "q0"), answer]
    spaced = json.dumps([*first, answer, _text("user", "q1")], indent=1)
    trial = _read(
        tmp_path,
        _call(0, first, answer),
        _call(1, rewritten, _text("assistant", "a1")),
        _call(2, spaced, _text("assistant", "a2")),
    )
    assert _said(trial) == [
        ("system", "Be brief."),
        ("user", "q0"),
        ("assistant", "a0"),
        ("system", "Be very brief."),
        ("assistant", "a1"),
        ("user", "q1"),
        ("assistant", "a2"),
    ]


def test_a_fault_after_a_known_history_is_named_at_its_place_in_the_whole_list(
    tmp_path: Path,
) -> None:
    calls = _conversation(1)
    text = json.dumps([SYSTEM, _text("user", "q0")])
    calls.append(_call(1, text[:-1] + ', {"role": 7}]', _text("assistant", "a1")))
    with pytest.raises(InputError, match=r"'gen_ai.input.messages': \[2\].role: expected a string"):
        _read(tmp_path, *calls)


@pytest.mark.parametrize("tail", [",]", ", ]", ",,{}]", ', {"role": "user"}] x', ", [}]"])
def test_a_history_followed_by_no_message_is_no_json(tmp_path: Path, tail: str) -> None:
    """``[A,]`` is no JSON although ``[A]`` and ``[]`` are."""
    text = json.dumps([SYSTEM, _text("user", "q0")])
    calls = [*_conversation(1), _call(1, text[:-1] + tail, _text("assistant", "a1"))]
    with pytest.raises(InputError, match=r"'gen_ai\.input\.messages': expected JSON text"):
        _read(tmp_path, *calls)


def test_a_long_integer_after_a_known_history_is_read_exactly(tmp_path: Path) -> None:
    """Python's parser reads a list holding an integer past 64 bits (orjson would make
    it a float): the history's messages are read with it, not taken from before."""
    big = 2**70 + 1
    history = [SYSTEM, _text("user", "q0")]
    call = {"type": "tool_call", "name": "f", "id": "c1", "arguments": {"n": big}}
    calls = [
        _call(0, history, _text("assistant", "a0")),
        _call(1, [*history, {"role": "assistant", "parts": [call]}], _text("assistant", "a1")),
    ]
    trial = _read(tmp_path, *calls)
    (made,) = [e for e in trial.events if isinstance(e, ToolCallEvent)]
    assert made.arguments == {"n": big} and type(made.arguments["n"]) is int
