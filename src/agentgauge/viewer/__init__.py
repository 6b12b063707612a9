"""The local web viewer (``agentgauge view``): runs, a run's summary and tasks, a
trial's transcript with its grades and trajectory timeline, and two runs side by
side, served read-only from one store on 127.0.0.1 (docs/viewer.md)."""

from agentgauge.viewer.app import create_app
from agentgauge.viewer.serve import serve

__all__ = ["create_app", "serve"]
