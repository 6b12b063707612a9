"""What a run's model calls say about the run as a whole: the models the provider
served, and where the calls' prices came from.

A comparison names both (record line 1 folds a served model that changed into the
model component, line 9 says where each side's prices came from); neither needs the
transcripts. For a stored run they are counted in SQL (`Store.model_call_rows`),
which spares building every trial's transcript; otherwise from the trials' events.

And what a trial's model calls add up to (`known_sum`, `figures_after`): one rule for
the trace importers and for events added to a stored trial later, so that spans that
come late leave a trial as ``import otel`` of all its spans would have made it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agentgauge.report.formats import counted

if TYPE_CHECKING:
    from agentgauge.schema import Event
    from agentgauge.store import Store

__all__ = ["FIGURES", "ModelCalls", "figures_after", "known_sum", "price_source_name"]

#: The trial fields its transcript decides: counts of calls, and usage.
FIGURES = ("tool_calls", "model_calls", "input_tokens", "output_tokens", "cost_usd")


def known_sum(values: Sequence[int | None] | Sequence[float | None]) -> Any:
    """The sum when every call reported the value; unknown (``None``) otherwise, and
    for no calls at all (nobody measured it: never 0)."""
    if not values or any(v is None for v in values):
        return None
    return sum(v for v in values if v is not None)


def figures_after(
    before: Mapping[str, Any],
    known: Sequence[Event],
    added: Sequence[Event],
    *,
    from_spans: bool,
) -> dict[str, Any]:
    """A stored trial's `FIGURES` once ``added`` follows its transcript ``known``, for
    those that change (none when ``added`` holds no call and the trial had events
    already). ``before``: its figures now.

    Counts are recounted; tokens are the sums over every model call (`known_sum`, as
    the importers and the harness reckon them). A trial stored without a transcript
    has its tool calls unknown (the importers' rule: no events, no count); its first
    events make the count known, 0 when none of them is a tool call. The cost is the
    trial's cost plus the added calls' (unknown when either is), except for a trial
    without model calls until now: one made from spans (``from_spans``) had its agent
    span's own figure, which the calls now stand for (as ``import otel`` of all its
    spans would say); a run's trial had only the spend its agent reported beyond model
    calls (``record_cost``, an ``http:`` reply's ``cost_usd``), which still adds up."""
    from agentgauge.schema import ModelCallEvent, ToolCallEvent

    out: dict[str, Any] = {}
    first = not known and before.get("tool_calls") is None
    if any(isinstance(e, ToolCallEvent) for e in added) or (added and first):
        out["tool_calls"] = sum(isinstance(e, ToolCallEvent) for e in (*known, *added))
    new = [e for e in added if isinstance(e, ModelCallEvent)]
    if not new:
        return out
    old = [e for e in known if isinstance(e, ModelCallEvent)]
    calls = [*old, *new]
    out["model_calls"] = len(calls)
    out["input_tokens"] = known_sum([c.input_tokens for c in calls])
    out["output_tokens"] = known_sum([c.output_tokens for c in calls])
    spent = known_sum([c.cost_usd for c in new])
    cost = before.get("cost_usd")
    if not old and from_spans:
        out["cost_usd"] = spent
    elif not old:
        out["cost_usd"] = None if spent is None else spent + (cost or 0.0)
    else:
        out["cost_usd"] = None if spent is None or cost is None else cost + spent
    return out


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
        from agentgauge.sources import picks

        return cls.of_rows(
            (served, source, cost, n)
            for a, m, served, source, cost, n in store.model_call_rows(run_id)
            if picks(a, agent) and picks(m, model)
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
        return ", ".join(f"{name} ({counted(n, 'call')})" for name, n in self.price_sources.items())
