"""A trace whose task the run holds under another family is refused by the receiver
with the readers' message (both families, and where each came from), and not stored:
every reader of the run would refuse the task after it."""

from __future__ import annotations

import json
from typing import Any

from tests.collect.test_receiver import Collector
from tests.importers.otlp_docs import request, span

from agentgauge.otel_record import RECORD_MARK
from agentgauge.store import Store


def _root(trace: str, trial: int, family: str) -> dict[str, Any]:
    """The root span of an exported trial record (``agentgauge.record``), which carries
    its family."""
    attrs = {
        RECORD_MARK: 1,
        "agentgauge.task.id": "fam-task",
        "agentgauge.trial": trial,
        "agentgauge.outcome.success": True,
        "agentgauge.status": "completed",
        "agentgauge.variant": "base",
        "agentgauge.family": family,
    }
    return span(trace[:16], "r", attrs, trace=trace)


def test_a_trace_under_a_second_family_is_refused_and_not_stored(collector: Collector) -> None:
    status, body = collector.post(
        json.dumps(request(_root("a" * 32, 0, "F1"))).encode(), "application/json"
    )
    assert status == 200 and "partialSuccess" not in json.loads(body or b"{}")
    status, body = collector.post(
        json.dumps(request(_root("b" * 32, 1, "F2"))).encode(), "application/json"
    )
    assert status == 200
    partial = json.loads(body)["partialSuccess"]
    assert int(partial["rejectedSpans"]) == 1
    message = partial["errorMessage"]
    assert f"trace {'b' * 32}: not stored:" in message
    assert (
        "task 'fam-task' is in family 'F2' here (trial 1, agent not recorded, model not "
        "recorded, variant 'base') and in family 'F1' (stored: trial 0, agent not recorded, "
        "model not recorded, variant 'base'); a task belongs to one family" in message
    )
    # The next trace of the task under its own family is stored as before.
    status, body = collector.post(
        json.dumps(request(_root("c" * 32, 2, "F1"))).encode(), "application/json"
    )
    assert status == 200 and "partialSuccess" not in json.loads(body or b"{}")
    code, _out, err = collector.stop()
    assert code == 0 and "family 'F2'" in err
    with Store(collector.db, readonly=True) as db:
        assert [(t.trial, t.family) for t in db.trials("live")] == [(0, "F1"), (2, "F1")]
