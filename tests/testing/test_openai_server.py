from __future__ import annotations

import http.client
import json
from urllib.parse import urlsplit

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
        url = urlsplit(server.base_url)
        # One kept-alive connection for both requests, as a client pool would use it.
        conn = http.client.HTTPConnection(url.netloc, timeout=10)
        try:
            answers = []
            for _ in range(2):
                body = json.dumps({"model": "m", "messages": []})
                conn.request(
                    "POST",
                    url.path + "/chat/completions",
                    body,
                    {"Content-Type": "application/json"},
                )
                response = conn.getresponse()
                answers.append((response.status, response.read()))
        finally:
            conn.close()
    first, second = answers
    assert first[0] == 429
    body = json.loads(second[1])
    call = body["choices"][0]["message"]["tool_calls"][0]
    assert call["function"]["name"] == "f"
    assert body["usage"]["prompt_tokens"] == 10
    assert len(server.requests) == 2
