from __future__ import annotations

import httpx

from agentgauge.testing.openai_server import OpenAIServer, Reply, completion, tool_call


def test_server_speaks_chat_completions_over_a_real_socket() -> None:
    replies = iter(
        [
            Reply(status=429, body={"error": {"message": "slow down"}}),
            Reply(body=completion(tool_calls=[tool_call("f", {"x": 1})])),
        ]
    )
    with OpenAIServer(lambda req: next(replies)) as server:
        assert server.base_url.startswith("http://127.0.0.1:")
        with httpx.Client(base_url=server.base_url) as client:
            first = client.post("/chat/completions", json={"model": "m", "messages": []})
            second = client.post("/chat/completions", json={"model": "m", "messages": []})
    assert first.status_code == 429
    body = second.json()
    call = body["choices"][0]["message"]["tool_calls"][0]
    assert call["function"]["name"] == "f"
    assert body["usage"]["prompt_tokens"] == 10
    assert len(server.requests) == 2
