"""One list of a trial's fields (schema.TRIAL_FIELDS): the table follows it, and drift is caught."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from agentgauge.schema import TRIAL_FIELDS, TRIAL_LISTS, Trial, TrialField, infra_error
from agentgauge.table import COLUMNS, TrialTable, check_annotations, column_kinds


def test_every_trial_field_is_declared_once() -> None:
    names = [f.name for f in TRIAL_FIELDS] + list(TRIAL_LISTS)
    assert len(names) == len(set(names))
    assert set(names) == set(Trial.model_fields)


def test_table_columns_follow_the_declaration() -> None:
    assert {f.name for f in dataclasses.fields(TrialTable)} == set(COLUMNS)
    # The kinds the metrics rely on: a required integer stays an integer, an
    # optional one becomes a float (NaN when missing), text is a label.
    assert COLUMNS["trial"] == "int" and COLUMNS["input_tokens"] == "float"
    assert COLUMNS["task_id"] == "label" and COLUMNS["success"] == "bool"
    assert COLUMNS["infra_error"] == "bool" and "status" not in COLUMNS


def test_a_column_missing_from_the_table_or_of_the_wrong_kind_is_caught() -> None:
    with pytest.raises(TypeError, match="new_field"):
        check_annotations(column_kinds([*TRIAL_FIELDS, TrialField("new_field", "real")]))
    changed = [dataclasses.replace(f, required=False) if f.name == "trial" else f
               for f in TRIAL_FIELDS]  # fmt: skip
    with pytest.raises(TypeError, match="'trial'"):
        check_annotations(column_kinds(changed))
    with pytest.raises(TypeError, match="cannot be a table column"):
        column_kinds([TrialField("flag", "bool")])  # an optional bool has no array kind


def test_one_infra_error_rule() -> None:
    assert infra_error("error", "infra") and infra_error("timeout", None)
    assert not infra_error("error", "agent") and not infra_error("completed", None)
    trials = [
        Trial(task_id="a", success=False, status="error"),  # error_kind defaults to infra
        Trial(task_id="a", success=False, status="timeout", error_kind="agent"),
        Trial(task_id="a", success=True),
    ]
    assert [t.is_infra_error for t in trials] == [True, False, False]
    assert TrialTable.from_trials(trials).infra_error.tolist() == [True, False, False]


def test_from_columns_defaults_are_the_fields_defaults() -> None:
    table = TrialTable.from_columns(2, task_id=["a", "b"], success=[True, False])
    assert table.variant.tolist() == ["base", "base"]
    assert table.agent.tolist() == [None, None]
    assert table.trial.dtype == np.int64 and table.trial.tolist() == [0, 0]
    assert np.isnan(table.cost_usd).all() and table.score.tolist() == [1.0, 0.0]
    assert table.infra_error.tolist() == [False, False]
