"""agentgauge: measure AI agents honestly.

Public API (SPEC 7). Import from here; submodules are the engine.
"""

from agentgauge._version import __version__
from agentgauge.comparison import compare
from agentgauge.errors import AgentgaugeError, InputError
from agentgauge.harness.runner import run
from agentgauge.loading import load_trials
from agentgauge.metrics import MetricsReport, pass_at_k, pass_hat_k
from agentgauge.metrics.horizon import HorizonReport, horizon
from agentgauge.schema import Event, Grade, Run, Task, Trial
from agentgauge.store import Store
from agentgauge.table import TrialTable

__all__ = [
    "AgentgaugeError",
    "Event",
    "Grade",
    "HorizonReport",
    "InputError",
    "MetricsReport",
    "Run",
    "Store",
    "Task",
    "Trial",
    "TrialTable",
    "__version__",
    "compare",
    "horizon",
    "load_trials",
    "metrics",
    "pass_at_k",
    "pass_hat_k",
    "run",
]

# The `metrics` function (SPEC 7) shares its name with the subpackage: bind it last,
# after every submodule import above, so `agentgauge.metrics` is the function.
from agentgauge.metrics.api import metrics
