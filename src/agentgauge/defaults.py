"""Defaults the command line shows before it has loaded what uses them: a module of
constants only, so that ``agentgauge --help`` needs neither the store nor scipy."""

from __future__ import annotations

__all__ = ["DEFAULT_STORE", "DEFAULT_WITHIN_SHARE"]

#: The store every command reads and writes unless told (``--store``), in the current folder.
DEFAULT_STORE = "agentgauge.db"

#: Default share of a system's trial variance that lies within tasks. It matters
#: only with several trials per task or correlated systems. 0.5 is a middle
#: value: agent benchmarks range from nearly deterministic tasks (s near 0) to
#: coin flips (s near 1); gpt-4o on tau-bench airline (50 tasks × 4 trials)
#: gives s ≈ 0.60 (σ² = 0.147, τ² = 0.100). Estimate it from a pilot
#: (`--pilot`) rather than trust it.
DEFAULT_WITHIN_SHARE = 0.5
