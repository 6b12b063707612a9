from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.conftest import Cli

from agentgauge.errors import InputError
from agentgauge.sources import load_trials
from agentgauge.table import TrialTable


def write(tmp_path: Path, lines: list[str]) -> Path:
    path = tmp_path / "trials.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def good(**kw: object) -> str:
    rec = {"task_id": "t1", "success": True} | kw
    return json.dumps(rec)


def test_score_only_derives_success_with_tolerance(tmp_path: Path) -> None:
    path = write(tmp_path, [good(success=None, score=1 - 1e-7), good(success=None, score=0.5)])
    # Raw JSON null for success is not "absent": rewrite without it.
    path.write_text('{"task_id":"t1","score":0.9999999}\n{"task_id":"t1","score":0.5}\n')
    trials = load_trials(path)
    assert [t.success for t in trials] == [True, False]
    assert [t.trial for t in trials] == [0, 1]  # order of appearance


@pytest.mark.parametrize(
    ("line", "field", "reason"),
    [
        ('{"task_id": "t1", "success": tru}', None, "invalid JSON"),
        ('{"task_id": "t1", "score": "high"}', "score", "valid number"),
        ('{"task_id": "t1", "success": true, "sucess": true}', "sucess", "unknown key"),
        ('{"task_id": "t1", "score": 1.5}', "score", "less than or equal to 1"),
        ('{"task_id": "t1", "score": NaN}', None, "NaN is not allowed"),
        ('{"task_id": "t1"}', None, "one of 'success' or 'score' is required"),
        ('{"success": true}', "task_id", "required field is missing"),
        ('{"task_id": "t1", "success": true, "cost_usd": true}', "cost_usd", "boolean"),
        ("[1, 2]", None, "expected a JSON object"),
        # A key twice: Python's reader kept the last, so this read as a failure.
        ('{"task_id": "t1", "success": true, "success": false}', None, "key 'success' appears"),
        (
            '{"task_id": "t1", "success": true, "events": [{"type": "tool_call", "name": "a", '
            '"arguments": {"x": 1, "x": 2}}]}',
            None,
            "key 'x' appears twice",
        ),
    ],
)
def test_bad_line_names_file_line_field(
    tmp_path: Path, line: str, field: str | None, reason: str
) -> None:
    lines = [good(trial=i) for i in range(6)] + [line]
    path = write(tmp_path, lines)
    with pytest.raises(InputError) as info:
        load_trials(path)
    err = info.value
    assert err.file == str(path)
    assert err.line == 7
    assert err.field == field
    assert reason in err.reason
    assert str(err).startswith(f"{path}:7: ")


def test_duplicate_task_trial_within_group_is_rejected(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        [
            good(trial=0, agent="a"),
            good(trial=0, agent="b"),  # other group: fine
            good(trial=0, agent="a", variant="paraphrase:1"),  # other variant: fine
            good(trial=0, agent="a"),
        ],
    )
    with pytest.raises(InputError) as info:
        load_trials(path)
    assert info.value.line == 4
    assert info.value.field == "trial"
    assert "first seen on line 1" in info.value.reason


def test_events_are_validated_by_type(tmp_path: Path) -> None:
    events = [
        {"type": "message", "role": "user", "content": "hi"},
        {"type": "tool_call", "name": "f", "arguments": {"x": 1}, "call_id": "c1"},
        {"type": "tool_result", "call_id": "c1", "content": "ok"},
        {"type": "control", "decision": "transfer"},
    ]
    path = write(tmp_path, [good(events=events)])
    (trial,) = load_trials(path)
    assert [e.type for e in trial.events] == ["message", "tool_call", "tool_result", "control"]
    bad = [{"type": "control", "decision": "shrug"}]
    path = write(tmp_path, [good(events=bad)])
    with pytest.raises(InputError) as info:
        load_trials(path)
    assert info.value.field is not None and info.value.field.startswith("events.0")


@given(
    st.lists(
        st.tuples(st.sampled_from(["a", "b", None]), st.sampled_from(["m", "n", None])),
        max_size=40,
    )
)
def test_configurations_count_each_agent_and_model(
    pairs: list[tuple[str | None, str | None]],
) -> None:
    from collections import Counter

    from agentgauge.sources import configurations

    n = len(pairs)
    table = TrialTable.from_columns(
        n,
        task_id=[f"t{i}" for i in range(n)],
        success=[True] * n,
        agent=[a for a, _ in pairs],
        model=[m for _, m in pairs],
    )
    want = sorted(Counter(pairs).items(), key=lambda kv: str(kv[0]))
    assert configurations(table) == [(a, m, c) for (a, m), c in want]


def test_task_ids_differing_only_in_normalization_are_refused(tmp_path: Path) -> None:
    # "café" as one code point and as e + a combining accent: one id in every table,
    # two tasks to the metrics (a suite refuses the same).
    path = write(tmp_path, [good(task_id="caf\u00e9"), good(task_id="cafe\u0301")])
    with pytest.raises(InputError) as info:
        load_trials(path)
    assert info.value.line == 2
    assert info.value.field == "task_id"
    assert "'caf\\xe9' (line 1) and 'cafe\\u0301'" in info.value.reason
    # The same spelling twice is one task, as before.
    same = write(tmp_path, [good(task_id="caf\u00e9", trial=0), good(task_id="caf\u00e9", trial=1)])
    assert {t.task_id for t in load_trials(same)} == {"caf\u00e9"}


@pytest.mark.parametrize(
    ("first", "second", "reason"),
    [
        # A zero-width space inside: "task" in every table, two tasks to the metrics.
        ("task", "ta\u200bsk", "task ids 'task' (line 1) and 'ta\\u200bsk' differ only in "
         "invisible characters"),
    ],
)  # fmt: skip
def test_task_ids_differing_only_in_invisible_characters_are_refused(
    tmp_path: Path, cli: Cli, first: str, second: str, reason: str
) -> None:
    path = write(tmp_path, [good(task_id=first), good(task_id=second)])
    code, out, err = cli("metrics", str(path))
    assert code == 2 and out == ""
    (line,) = err.splitlines()
    assert f"{path}:2: task_id: {reason}" in line


@pytest.mark.parametrize("task_id", ["task ", " task", "task\t"])
def test_a_task_id_with_whitespace_at_an_end_is_refused_at_its_line(
    tmp_path: Path, cli: Cli, task_id: str
) -> None:
    # "task" and "task " were two tasks that `show --task` listed as "task , task".
    path = write(tmp_path, [good(task_id="task"), good(task_id=task_id)])
    code, out, err = cli("metrics", str(path))
    assert code == 2 and out == ""
    (line,) = err.splitlines()
    assert f"{path}:2: task_id: {task_id!r} begins or ends with whitespace" in line


@pytest.mark.parametrize("field", ["agent", "model", "variant"])
def test_names_differing_only_in_normalization_are_one_system(
    tmp_path: Path, cli: Cli, field: str
) -> None:
    # "José" as NFC and as NFD made two systems under one header: "┃ José ┃ José ┃".
    lines = [good(task_id=t, **{field: name}) for name in ("Jos\u00e9", "Jose\u0301") for t in "ab"]
    path = write(tmp_path, lines)
    code, out, err = cli("metrics", str(path))
    assert code == 2 and out == ""
    (line,) = err.splitlines()
    assert (
        f"{path}:3: {field}: {field} names 'Jos\\xe9' (line 1) and 'Jose\\u0301' differ only "
        f"in Unicode normalization: they print the same but would count as two {field}s"
    ) in line


def test_a_configuration_list_quotes_names_that_print_alike() -> None:
    # Two agents a JSONL file cannot hold any more, as an older store's run may: the
    # list to pick one from named "agent José" twice.
    from agentgauge.sources import require_one_configuration

    table = TrialTable.from_columns(
        4,
        task_id=["a", "b", "a", "b"],
        success=[True] * 4,
        agent=["Jos\u00e9"] * 2 + ["Jose\u0301"] * 2,
        model=[None, None, "m", "m"],
    )
    with pytest.raises(InputError) as info:
        require_one_configuration(table, "x.jsonl")
    assert "(agent 'Jos\\xe9', model not recorded, 2 trials)" in info.value.reason
    assert "(agent 'Jose\\u0301', model 'm', 2 trials)" in info.value.reason


@pytest.mark.parametrize(
    ("lines", "line", "reason"),
    [
        # The next index after it (a trial given none) would not fit SQLite's INTEGER.
        ([good(trial=2**63 - 1), good()], 1, "past the largest trial index"),
        ([good(trial=2**63 - 2), good()], 2, "no trial index is left"),
    ],
)
def test_a_trial_index_whose_successor_overflows_the_store_is_refused(
    tmp_path: Path, cli: Cli, lines: list[str], line: int, reason: str
) -> None:
    path = write(tmp_path, lines)
    db = tmp_path / "s.db"
    code, _out, err = cli("import", "jsonl", str(path), "--store", str(db))
    assert code == 2, err
    assert f"{path}:{line}: trial: " in err
    assert reason in err
    assert "Traceback" not in err
    assert not db.exists()  # nothing half-written
    # The largest index with no trial after it is read.
    assert [t.trial for t in load_trials(write(tmp_path, [good(trial=2**63 - 2)]))] == [2**63 - 2]


@pytest.mark.parametrize("command", [("metrics",), ("horizon",), ("show",), ("compare", "a.jsonl")])
def test_an_empty_source_is_named_empty(cli: Cli, command: tuple[str, ...]) -> None:
    """``""`` read as the path ``.`` and was named as the working folder (``.: SOURCE: a
    directory SOURCE is a Parquet export...``)."""
    code, out, err = cli(*command, "")
    field = "B" if command[0] == "compare" else "SOURCE"
    assert (code, out) == (2, "")
    assert err == (
        f"agentgauge: error: {field}: is empty; give a file of trials, DB:RUN_ID or a "
        "Parquet export's folder\n"
    )
    with pytest.raises(InputError, match="SOURCE: is empty"):
        load_trials("  ")
