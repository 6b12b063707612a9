"""The local web viewer (``agentgauge view``): runs, a run's summary and tasks, a
trial's transcript with its grades and trajectory timeline, and two runs side by
side, served read-only from one store on 127.0.0.1 (docs/viewer.md).

`create_app` and `serve` load Starlette, uvicorn and plotly when first used, so
that importing the command line does not.
"""

from __future__ import annotations

from typing import Any

__all__ = ["DEFAULT_PORT", "create_app", "serve"]

DEFAULT_PORT = 8765


def __getattr__(name: str) -> Any:
    if name == "create_app":
        from agentgauge.viewer.app import create_app

        return create_app
    if name == "serve":
        from agentgauge.viewer.serve import serve

        return serve
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
