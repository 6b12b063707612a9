"""agentgauge: measure AI agents honestly.

The public API: import from here; submodules are the engine. Every command has
a Python twin here (`agentgauge.api`: ``metrics``, ``compare``, ``horizon``,
``run_gates``, ``plan``, ``regrade``, ``calibrate``; ``run`` from the harness).

Names are loaded on first use (PEP 562): importing ``agentgauge`` — which pytest
does for every session once the plugin is installed — costs milliseconds, not
the second it takes to load scipy. ``agentgauge.metrics`` is both the metrics
subpackage and the callable ``agentgauge.metrics(trials, ...)`` (see
`agentgauge.metrics`). Any subpackage is an attribute the same way, loaded when first
named (``agentgauge.graders.ast_match``, ``agentgauge.api.compare_sources``).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from agentgauge._version import __version__
from agentgauge.errors import AgentgaugeError, InputError

if TYPE_CHECKING:
    from agentgauge.api import calibrate, compare, horizon, metrics, plan, regrade, run_gates
    from agentgauge.harness.runner import run
    from agentgauge.metrics.engine import MetricsReport
    from agentgauge.metrics.horizon import HorizonReport
    from agentgauge.metrics.passk import pass_at_k, pass_hat_k
    from agentgauge.schema import Event, Grade, Run, Task, Trial
    from agentgauge.sources import load_trials
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
    "calibrate",
    "compare",
    "horizon",
    "load_trials",
    "metrics",
    "pass_at_k",
    "pass_hat_k",
    "plan",
    "regrade",
    "run",
    "run_gates",
]

_LAZY: dict[str, tuple[str, str | None]] = {
    "Event": ("agentgauge.schema", "Event"),
    "Grade": ("agentgauge.schema", "Grade"),
    "Run": ("agentgauge.schema", "Run"),
    "Task": ("agentgauge.schema", "Task"),
    "Trial": ("agentgauge.schema", "Trial"),
    "Store": ("agentgauge.store", "Store"),
    "TrialTable": ("agentgauge.table", "TrialTable"),
    "load_trials": ("agentgauge.sources", "load_trials"),
    "MetricsReport": ("agentgauge.metrics.engine", "MetricsReport"),
    "pass_at_k": ("agentgauge.metrics.passk", "pass_at_k"),
    "pass_hat_k": ("agentgauge.metrics.passk", "pass_hat_k"),
    "HorizonReport": ("agentgauge.metrics.horizon", "HorizonReport"),
    "horizon": ("agentgauge.api", "horizon"),
    "compare": ("agentgauge.api", "compare"),
    "plan": ("agentgauge.api", "plan"),
    "run_gates": ("agentgauge.api", "run_gates"),
    "regrade": ("agentgauge.api", "regrade"),
    "calibrate": ("agentgauge.api", "calibrate"),
    "run": ("agentgauge.harness.runner", "run"),
    # The subpackage itself: it is callable as `agentgauge.metrics(...)`.
    "metrics": ("agentgauge.metrics", None),
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        module, attr = _LAZY[name]
        loaded = importlib.import_module(module)
        value = loaded if attr is None else getattr(loaded, attr)
    else:
        # A subpackage named as an attribute, as the docs name the functions in them
        # (`agentgauge.graders.ast_match`, `agentgauge.api.compare_sources`): Python
        # binds it only once something imports it, so after `import agentgauge` alone it
        # was "module 'agentgauge' has no attribute 'graders'". Loaded on first use too.
        value = _submodule(name)
    globals()[name] = value
    return value


def _submodule(name: str) -> Any:
    """The module ``agentgauge.<name>``, imported; `AttributeError` when there is none."""
    missing = AttributeError(f"module 'agentgauge' has no attribute {name!r}")
    if name.startswith("_") or not name.isidentifier():
        raise missing  # dunders asked for by tools (__wrapped__, __file__...), private names
    try:
        return importlib.import_module(f"{__name__}.{name}")
    except ModuleNotFoundError as exc:
        if exc.name != f"{__name__}.{name}":
            raise  # the module is there, but something it imports is not
        raise missing from None


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
