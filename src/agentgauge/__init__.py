"""agentgauge: measure AI agents honestly.

Public API (SPEC 7). Import from here; submodules are the engine.
"""

from agentgauge._version import __version__
from agentgauge.errors import AgentgaugeError, InputError
from agentgauge.harness.runner import run
from agentgauge.loading import load_trials
from agentgauge.schema import Event, Grade, Run, Task, Trial
from agentgauge.store import Store
from agentgauge.table import TrialTable

__all__ = [
    "AgentgaugeError",
    "Event",
    "Grade",
    "InputError",
    "Run",
    "Store",
    "Task",
    "Trial",
    "TrialTable",
    "__version__",
    "load_trials",
    "run",
]
