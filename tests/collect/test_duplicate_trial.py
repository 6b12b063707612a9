"""A trace that claims a trial the run holds already is refused with a message that
names its configuration as ``show`` does: an agent or model nobody recorded is "not
recorded", never Python's ``None``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.collect.test_receiver import Collector
from tests.importers.otlp_docs import request, span

from agentgauge.errors import InputError
from agentgauge.sources import load_trials

ROOT = {
    "agentgauge.task.id": "dupe-trial",
    "agentgauge.trial": 0,
    "agentgauge.outcome.success": True,
}


def test_a_duplicate_trial_names_what_is_not_recorded(collector: Collector) -> None:
    first = request(span("00000000000000a1", "r", ROOT, trace="a" * 32))
    status, _ = collector.post(json.dumps(first).encode(), "application/json")
    assert status == 200
    again = request(span("00000000000000c1", "r", ROOT, trace="c" * 32))
    status, body = collector.post(json.dumps(again).encode(), "application/json")
    message = json.loads(body)["partialSuccess"]["errorMessage"]
    assert status == 200 and "None" not in message
    assert (
        "trial 0 of task 'dupe-trial' (agent not recorded, model not recorded) is already "
        "stored in this run" in message
    )
    code, _out, err = collector.stop()
    assert code == 0 and "None" not in err


def test_an_import_duplicate_names_the_agent_it_has_and_the_model_it_lacks(
    tmp_path: Path,
) -> None:
    path = tmp_path / "t.jsonl"
    line = {"task_id": "t", "trial": 0, "success": True, "agent": "a"}
    path.write_text(json.dumps(line) + "\n" + json.dumps(line) + "\n")
    with pytest.raises(InputError) as info:
        load_trials(path)
    assert "for agent 'a', model not recorded, variant 'base' (first seen on line 1)" in (
        info.value.reason
    )
