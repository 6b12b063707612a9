#!/usr/bin/env python3
"""An agent as an external program: the ``cmd:`` protocol (agentgauge.cmd/1) in 60 lines.

Run it with::

    agentgauge run examples/counter-suite.yaml --agent "cmd:python examples/cmd_agent.py"

The harness starts this program once per trial and exchanges one JSON object
per line: it sends ``start`` (policy, tools, instruction, seed), then a
``tool_result`` after each of our ``tool_call`` messages and a ``user`` reply
after each ``say``. We finish with ``done``. Stdout is the protocol only; write
logs to stderr. Any language works; this one uses only the standard library.

The policy here is deliberately simple: find the last number in the request,
add it to the counter with the ``add`` tool, tell the user, and stop.
"""

from __future__ import annotations

import json
import re
import sys
from typing import Any


def send(msg: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()  # the harness waits for each line


def receive() -> dict[str, Any]:
    line = sys.stdin.readline()
    if not line:
        sys.exit(0)  # the harness went away
    return dict(json.loads(line))


def main() -> None:
    start = receive()
    assert start["type"] == "start" and start["protocol"] == "agentgauge.cmd/1"
    tools = {t["function"]["name"] for t in start["tools"]}
    numbers = re.findall(r"-?\d+", start["instruction"])
    print(f"task {start['task_id']}: numbers {numbers}", file=sys.stderr)
    send({"type": "cost", "usd": 0})  # no model behind this program: free, and we say so

    if not numbers or "add" not in tools:
        send({"type": "control", "decision": "refuse", "reason": "no amount to add"})
        send({"type": "say", "content": "Sorry, I can only add a number to the counter."})
        receive()  # the user's reply (or null)
        send({"type": "done"})
        return

    amount = int(numbers[-1])
    send({"type": "tool_call", "id": "c1", "name": "add", "arguments": {"amount": amount}})
    result = receive()
    if result["is_error"]:
        send({"type": "say", "content": f"The counter service failed: {result['content']}"})
    else:
        send({"type": "say", "content": f"Added {amount}; the counter is now {result['content']}."})
    reply = receive()["content"]
    if reply is not None:
        send({"type": "say", "content": "Anything else I can do?"})
        receive()
    send({"type": "answer", "content": f"Added {amount}."})
    send({"type": "done"})


if __name__ == "__main__":
    main()
