#!/usr/bin/env python3
"""A black-box agent service (protocol agentgauge.http/1) in 30 lines, standard library only.

    python examples/http_agent_service.py 8770 &
    agentgauge run examples/counter-suite.yaml --agent http:http://127.0.0.1:8770/run

It keeps its own counter world and runs its own ``add`` tool; the reply tells the harness
the answer, the final state and the calls made, which the graders then check.
"""

import json
import re
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Agent(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        task = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        text = task["instruction"]  # also: task_id, trial, seed, policy, tools
        numbers = [int(n) for n in re.findall(r"-?\d+", text)]
        counter = numbers[0] if re.search(r"\bat -?\d+", text) else 0  # "it is at 10; add 5"
        counter += numbers[-1]  # our own tool, run here: add
        call = {"type": "tool_call", "name": "add", "arguments": {"amount": numbers[-1]}}
        reply = {
            "answer": f"Done: the counter is {counter}.",
            "state": {"counter": counter},
            "transcript": [{**call, "call_id": "1"}, {"type": "tool_result", "call_id": "1"}],
            "cost_usd": 0,  # no model behind it: free (without this, the cost is unknown)
        }
        body = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


if __name__ == "__main__":
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 8770
    ThreadingHTTPServer(("127.0.0.1", port), Agent).serve_forever()
