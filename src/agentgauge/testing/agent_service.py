"""A small agent service for tests: it speaks ``agentgauge.http/1`` and runs its own tools.

`CounterService` keeps its own counter world (as `agentgauge.testing.worlds.CounterEnv`
does): asked to "add 3", it calls its own ``add`` tool and replies with the answer,
the final state and, when ``transcript`` is on, the calls it made. ``mode`` makes it
misbehave the ways a real service does: ``"error"`` answers 500 to the first
``failures`` requests, ``"malformed"`` replies ``reply`` verbatim (with HTTP
``status``, and a ``Location`` header when ``location`` is set), ``"slow"`` sleeps
``delay`` seconds first. Every request's headers and body are kept in ``requests``.

With ``tracer_provider`` (an OpenTelemetry SDK ``TracerProvider``), each tool call is
also an ``execute_tool`` span in the trace the request's ``traceparent`` names, and
the provider is flushed before the reply, so the spans reach their exporter first. The
span is made in every mode: a service that fails (500, a malformed reply) has done its
work first.
"""

from __future__ import annotations

import asyncio
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiohttp import web

from agentgauge.agents.provider import RetryPolicy
from agentgauge.schema import Task, Trial
from agentgauge.testing.worlds import COUNTER_TOOLS

__all__ = ["FAST_RETRY", "CounterService", "ServiceRequest", "counter_tasks", "run_against"]

#: Retries that do not slow a test down.
FAST_RETRY = RetryPolicy(max_retries=2, base_delay=0.01, max_delay=0.02)


@dataclass
class ServiceRequest:
    """One request the service received."""

    headers: dict[str, str]
    body: dict[str, Any]


@dataclass
class CounterService:
    """The service's behaviour and what it saw (see the module docstring)."""

    mode: str = "ok"
    transcript: bool = True
    failures: int = 10**9
    delay: float = 0.0
    reply: bytes = b""
    status: int = 200
    location: str | None = None
    tracer_provider: Any = None
    record: bool = True
    """Keep every request in ``requests`` (a benchmark's service does not)."""
    requests: list[ServiceRequest] = field(default_factory=list)
    served: int = 0
    _runner: web.AppRunner | None = None

    async def start(self) -> str:
        """Serve on a free port of 127.0.0.1; the URL of the agent's route."""
        app = web.Application()
        app.router.add_post("/run", self._run)
        app.router.add_get("/moved", self._moved)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        return f"http://127.0.0.1:{port}/run"

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    async def _run(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.served += 1
        if self.record:
            self.requests.append(ServiceRequest(dict(request.headers), body))
        if self.mode == "slow":
            await asyncio.sleep(self.delay)
        amount = int(re.findall(r"-?\d+", body["instruction"])[-1])
        counter = 0
        counter += amount  # the service's own tool: add
        result = {"counter": counter}
        self._span(request, amount, result)  # its work is done (and traced), whatever it replies
        if self.mode == "error" and self.served <= self.failures:
            return web.Response(status=500, text="internal error")
        if self.mode == "malformed":
            headers = {"Location": self.location} if self.location else None
            return web.Response(
                body=self.reply,
                status=self.status,
                headers=headers,
                content_type="application/json",
            )
        reply: dict[str, Any] = {
            "answer": f"The counter is now {counter}.",
            "state": {"counter": counter},
            "cost_usd": 0.0,
        }
        if self.transcript:
            reply["transcript"] = [
                {
                    "type": "tool_call",
                    "name": "add",
                    "arguments": {"amount": amount},
                    "call_id": "c1",
                },
                {"type": "tool_result", "call_id": "c1", "name": "add", "content": result},
            ]
        return web.json_response(reply)

    async def _moved(self, request: web.Request) -> web.StreamResponse:
        """Where a redirect points (``location="/moved"``): a GET that never saw the task."""
        self.requests.append(ServiceRequest(dict(request.headers), {}))
        return web.json_response({"answer": "I never saw a task"})

    def _span(self, request: web.Request, amount: int, result: dict[str, Any]) -> None:
        if self.tracer_provider is None:
            return
        from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

        parent = TraceContextTextMapPropagator().extract(dict(request.headers))
        tracer = self.tracer_provider.get_tracer("counter-service")
        with tracer.start_as_current_span("execute_tool add", context=parent) as span:
            span.set_attribute("gen_ai.operation.name", "execute_tool")
            span.set_attribute("gen_ai.tool.name", "add")
            span.set_attribute("gen_ai.tool.call.id", "c1")
            span.set_attribute("gen_ai.tool.call.arguments", json.dumps({"amount": amount}))
            span.set_attribute("gen_ai.tool.call.result", json.dumps(result))
        self.tracer_provider.force_flush()


def counter_tasks(*amounts: int) -> list[Task]:
    """Tasks the service solves by adding the amount; graded on state, answer key
    (tool calls, AST) and trajectory, so all three graders read the service's calls."""
    return [
        Task(
            id=f"add-{n}",
            family="add",
            instruction=f"Please add {n}",
            environment="agentgauge.testing.worlds:make_counter_env",
            expectations={
                "final_state": {"counter": n},
                "functions": [t["function"] for t in COUNTER_TOOLS],
                "answer_key": [{"add": {"amount": [n]}}],
                "reference_calls": [{"name": "add", "arguments": {"amount": n}}],
            },
        )
        for n in amounts
    ]


def run_against(svc: CounterService, folder: Path, tasks: list[Task], **kwargs: Any) -> list[Trial]:
    """Serve ``svc`` on 127.0.0.1, run ``tasks`` against it as run ``r`` of
    ``folder/s.db`` (retrying fast), and read the trials back."""
    options = {"retry": FAST_RETRY, **kwargs.pop("agent_options", {})}

    from agentgauge.harness.runner import arun

    async def go() -> None:
        url = await svc.start()
        try:
            await arun(
                tasks,
                f"http:{url}",
                store=folder / "s.db",
                run_id="r",
                progress=False,
                agent_options=options,
                **kwargs,
            )
        finally:
            await svc.stop()

    asyncio.run(go())
    from agentgauge.store import Store

    with Store(folder / "s.db", readonly=True) as db:
        return db.trials("r")


def main(argv: list[str] | None = None) -> None:
    """Serve a `CounterService` that answers after ``--latency`` seconds, in its own
    process (a benchmark keeps the service off the harness's interpreter). Prints the
    URL on the first line of stdout, then serves until killed."""
    import argparse
    import sys

    parser = argparse.ArgumentParser(prog="python -m agentgauge.testing.agent_service")
    parser.add_argument("--latency", type=float, default=0.05, help="seconds per reply")
    args = parser.parse_args(argv)

    async def serve() -> None:
        service = CounterService(mode="slow", delay=args.latency, record=False)
        print(await service.start(), flush=True)
        sys.stdout.close()
        await asyncio.Event().wait()

    asyncio.run(serve())


if __name__ == "__main__":
    main()
