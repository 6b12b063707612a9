"""What a run's model calls say about the run as a whole: the models the provider
served, and where the calls' prices came from.

A comparison names both (record line 1 folds a served model that changed into the
model component, line 9 says where each side's prices came from); neither needs the
transcripts. For a stored run they are counted in SQL (`Store.model_call_rows`),
which spares building every trial's transcript; otherwise from the trials' events.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agentgauge.store import Store

__all__ = ["ModelCalls", "price_source_name"]


def price_source_name(price_source: str | None, has_cost: bool) -> str:
    """Where one call's price came from, as the record counts it: the price source up
    to its ``:`` (``genai-prices``, ``user prices``), else ``as recorded`` when the call
    carries a cost, else ``unpriced``."""
    if price_source:
        return price_source.split(": ", 1)[0]
    return "as recorded" if has_cost else "unpriced"


@dataclass(frozen=True)
class ModelCalls:
    """The model calls of a set of trials, summed up."""

    served: list[str] = field(default_factory=list)
    """The model names the provider reported on the calls, sorted."""
    price_sources: dict[str, int] = field(default_factory=dict)
    """Calls by where their price came from (`price_source_name`), sorted by name."""

    @classmethod
    def of_rows(cls, rows: Iterable[tuple[str | None, str | None, bool, int]]) -> ModelCalls:
        """From ``(served model, price source, has a cost, calls)`` rows."""
        served: set[str] = set()
        counts: dict[str, int] = {}
        for model, source, has_cost, n in rows:
            if model:
                served.add(model)
            name = price_source_name(source, bool(has_cost))
            counts[name] = counts.get(name, 0) + int(n)
        return cls(sorted(served), dict(sorted(counts.items())))

    @classmethod
    def of_run(
        cls, store: Store, run_id: str, *, agent: str | None = None, model: str | None = None
    ) -> ModelCalls:
        """From a stored run's calls, counted in SQL; ``agent`` and ``model`` keep the
        trials of one configuration (a source's ``#agent=``, ``model=``)."""
        return cls.of_rows(
            (served, source, cost, n)
            for a, m, served, source, cost, n in store.model_call_rows(run_id)
            if (agent is None or a == agent) and (model is None or m == model)
        )

    @classmethod
    def of_trials(cls, trials: Iterable[Any]) -> ModelCalls:
        """From the model-call events of ``trials``."""
        from agentgauge.schema import ModelCallEvent

        return cls.of_rows(
            (e.model, e.price_source, e.cost_usd is not None, 1)
            for t in trials
            for e in getattr(t, "events", ())
            if isinstance(e, ModelCallEvent)
        )

    def prices_text(self) -> str:
        """``as recorded (5144 calls), unpriced (3 calls)``, or that there are none."""
        if not self.price_sources:
            return "no model calls recorded"
        return ", ".join(f"{name} ({n} calls)" for name, n in self.price_sources.items())
