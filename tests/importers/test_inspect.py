"""Inspect AI logs -> trials, on logs Inspect itself wrote (tests/fixtures/inspect/,
made by make_logs.py with Inspect's mockllm model)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tracemalloc
import zipfile
import zlib
from io import StringIO
from pathlib import Path
from typing import Any

import pytest

from agentgauge import metrics
from agentgauge.errors import InputError
from agentgauge.importers import import_file, inspect_log, read_import
from agentgauge.importers.inspect import score_value
from agentgauge.schema import Trial
from agentgauge.store import Store

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "inspect"
EVAL = FIXTURES / "tiny.eval"
CHUNKED = FIXTURES / "tiny-chunked.eval"
JSON_LOG = FIXTURES / "tiny.json"
#: Inspect's own environment, when one is set up (see make_logs.py).
INSPECT_PYTHON = Path(os.environ.get("INSPECT_PYTHON", "/tmp/inspect-venv/bin/python"))


def _figures(trials: list[Trial], k: tuple[int, ...]) -> dict[str, Any]:
    """The metrics group of ``agentgauge metrics --json`` for these trials."""
    group: dict[str, Any] = metrics(trials, k=k).to_dict()["groups"][0]
    return group


def _by_cell(trials: list[Trial]) -> dict[tuple[str, int], Trial]:
    return {(t.task_id, t.trial or 0): t for t in trials}


def test_eval_log_becomes_one_trial_per_sample_and_epoch() -> None:
    run = read_import("inspect", EVAL)
    assert (run.agent, run.model, run.suite) == (
        "use_tools+generate",
        "mockllm/model",
        "inspect:tiny",
    )
    trials = _by_cell(run.trials)
    assert sorted(trials) == [
        (s, e) for s in ("add", "capital", "divide", "loop") for e in range(3)
    ]
    successes = {
        s: sum(trials[s, e].success for e in range(3)) for s in ("add", "capital", "divide", "loop")
    }
    assert successes == {"add": 3, "capital": 2, "divide": 1, "loop": 0}  # make_logs.py's script
    assert trials["capital", 1].answer == "Lyon" and not trials["capital", 1].success
    assert {t.id: t.instruction for t in run.tasks}["add"] == "What is 2 + 3? Use the add tool."


def test_tool_calls_errors_usage_and_timing_come_across() -> None:
    trial = _by_cell(read_import("inspect", EVAL).trials)["divide", 0]
    kinds = [e.type for e in trial.events]
    assert kinds == [
        "message",
        "model_call",
        "message",
        "tool_call",
        "tool_result",
        "model_call",
        "message",
    ]
    call, result = trial.events[3], trial.events[4]
    assert call.type == "tool_call" and result.type == "tool_result"
    assert (call.name, call.arguments) == ("divide", {"x": 1, "y": 0})
    assert (
        result.call_id == call.call_id and result.is_error and result.content == "division by zero"
    )
    # model_usage: 30 + 40 input tokens plus 2 cache reads each; 8 + 9 output; $1/M tokens.
    assert (trial.input_tokens, trial.output_tokens) == (74, 17)
    assert trial.cost_usd == pytest.approx(87e-6)
    assert trial.metadata["model_usage"]["mockllm/model"]["input_tokens_cache_read"] == 4
    model_calls = [e for e in trial.events if e.type == "model_call"]
    assert trial.model_calls == 2 and sum(e.cost_usd or 0 for e in model_calls) == pytest.approx(
        87e-6
    )
    assert trial.latency_s is not None and trial.latency_s > 0
    assert trial.tool_calls == 1
    grades = {g.grader: g for g in trial.grades}
    assert grades["match"].passed is False and grades["match"].evidence["value"] == "I"
    assert grades["brevity"].score == pytest.approx(0.1429)  # 1 / 7 words, rounded by the scorer


def test_a_model_call_is_timed_when_it_returned() -> None:
    # As the harness records a model call (once its answer is in): Inspect's
    # ``completed``, not the ``timestamp`` at which the call began.
    from datetime import datetime

    sample = json.loads(JSON_LOG.read_text(encoding="utf-8"))["samples"][0]
    start = datetime.fromisoformat(sample["started_at"])
    returned = [
        (datetime.fromisoformat(e["completed"]) - start).total_seconds()
        for e in sample["events"]
        if e.get("event") == "model"
    ]
    trial = _by_cell(read_import("inspect", JSON_LOG).trials)[
        str(sample["id"]), sample["epoch"] - 1
    ]
    calls = [e for e in trial.events if e.type == "model_call"]
    assert [c.t for c in calls] == pytest.approx(returned)


def test_a_sample_that_hit_a_limit_keeps_its_score_and_says_why() -> None:
    trial = _by_cell(read_import("inspect", EVAL).trials)["loop", 0]
    assert (trial.status, trial.error_kind, trial.success) == ("error", "agent", False)
    assert trial.error is not None and trial.error.startswith("message limit reached (6)")
    assert not trial.is_infra_error  # the agent ran out of its budget: a failure, not noise


def test_chunked_layout_reads_as_the_same_trials_as_the_monolith() -> None:
    # tiny-chunked.eval is tiny.eval converted by Inspect's own convert-chunked; its long
    # input is an attachment://0 reference into the attachments sequence.
    monolith = read_import("inspect", EVAL).trials
    chunked = read_import("inspect", CHUNKED).trials
    assert [t.model_dump() for t in chunked] == [t.model_dump() for t in monolith]
    first = _by_cell(chunked)["capital", 0].events[0]
    assert first.type == "message" and first.content is not None
    assert first.content.startswith("What is the capital of France?")


def test_json_log_gives_the_same_outcomes() -> None:
    # A separate run of the same scripted task, written as a .json log.
    def outcomes(trials: list[Trial]) -> list[Any]:
        return sorted(
            (t.task_id, t.trial, t.success, t.score, [e.type for e in t.events]) for t in trials
        )

    assert outcomes(read_import("inspect", JSON_LOG).trials) == outcomes(
        read_import("inspect", EVAL).trials
    )


@pytest.mark.parametrize("path", [EVAL, JSON_LOG, CHUNKED], ids=lambda p: p.name)
def test_pass_hat_k_equals_inspects_pass_k_reducer_recorded_in_the_log(path: Path) -> None:
    run = read_import("inspect", path)
    group = _figures(run.trials, (1, 2, 3))
    results = {
        r["reducer"]: r["metrics"] for r in run.config["inspect"]["results"] if r["name"] == "match"
    }
    # Inspect's pass_k(k) is C(c, k)/C(n, k) per sample (tau-bench's pass^k), its
    # pass_at(k) the unbiased pass@k; both averaged over samples by accuracy().
    assert group["pass_hat_k"]["2"] == pytest.approx(results["pass_k_2"]["accuracy"])  # 1/3
    assert group["pass_hat_k"]["3"] == pytest.approx(results["pass_k_3"]["accuracy"])  # 1/4
    assert group["pass_at_k"]["2"] == pytest.approx(results["pass_at_2"]["accuracy"])  # 2/3
    assert group["success_rate"]["value"] == pytest.approx(results["mean"]["accuracy"])  # 1/2
    # Hand-computed: add 3/3, capital 2/3, divide 1/3, loop 0/3.
    # pass^2 = (1 + C(2,2)/C(3,2) + 0 + 0) / 4 = (1 + 1/3) / 4 = 1/3.
    assert group["pass_hat_k"]["2"] == pytest.approx(1 / 3)


_REDUCE = """
import json, sys
from inspect_ai.log import read_eval_log
from inspect_ai.scorer import pass_k, pass_at
log = read_eval_log(sys.argv[1])
by_sample = {}
for s in log.samples:
    by_sample.setdefault(s.id, []).append(s.scores["match"])
out = {}
for name, reducer in (("pass_k_2", pass_k(2)), ("pass_k_3", pass_k(3)), ("pass_at_2", pass_at(2))):
    values = [reducer(scores).value for scores in by_sample.values()]
    out[name] = sum(values) / len(values)
print(json.dumps(out))
"""


def test_pass_hat_k_equals_inspects_reducer_run_by_inspect() -> None:
    if not INSPECT_PYTHON.exists():
        pytest.skip(f"Inspect's environment not found at {INSPECT_PYTHON} (see make_logs.py)")
    proc = subprocess.run(
        [str(INSPECT_PYTHON), "-c", _REDUCE, str(EVAL)], capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    inspect_says = json.loads(proc.stdout)
    group = _figures(read_import("inspect", EVAL).trials, (2, 3))
    assert group["pass_hat_k"]["2"] == pytest.approx(inspect_says["pass_k_2"])
    assert group["pass_hat_k"]["3"] == pytest.approx(inspect_says["pass_k_3"])
    assert group["pass_at_k"]["2"] == pytest.approx(inspect_says["pass_at_2"])


def test_scorer_option_picks_the_outcome() -> None:
    trials = _by_cell(read_import("inspect", EVAL, scorer="brevity").trials)
    # brevity is 1 for a one-word answer: "5" and "Paris" pass, "Lyon" too.
    assert trials["capital", 1].success and trials["capital", 1].score == 1.0
    assert not trials["divide", 0].success and trials["divide", 0].score == pytest.approx(0.1429)
    with pytest.raises(InputError) as info:
        read_import("inspect", EVAL, scorer="accuracy")
    assert info.value.field == "--scorer" and "match, brevity" in info.value.reason


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("C", 1.0),
        ("P", 0.5),
        ("I", 0.0),
        ("N", 0.0),
        ("Yes", 1.0),
        ("false", 0.0),
        ("0.25", 0.25),
        (True, 1.0),
        (3, 3.0),
        ("c", None),  # value_to_float matches the sentinels case-sensitively
        ("maybe", None),
        ({"a": 1}, None),
        ([1], None),
        (10**400, None),
        ("nan", None),
    ],
)
def test_score_values_are_read_as_inspects_value_to_float(
    value: Any, expected: float | None
) -> None:
    assert score_value(value) == expected


# --------------------------------------------------------------------------- bad input


def _json_log() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(JSON_LOG.read_text())
    return data


def _write_eval(path: Path, members: dict[str, Any]) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, value in members.items():
            archive.writestr(name, value if isinstance(value, bytes) else json.dumps(value))
    return path


def _header_and_sample() -> tuple[dict[str, Any], dict[str, Any]]:
    data = _json_log()
    header = {k: v for k, v in data.items() if k != "samples"}
    return header, data["samples"][0]


def test_a_sample_without_transcript_has_unknown_tool_calls_not_zero(tmp_path: Path) -> None:
    """A sample whose messages and events are empty carries no transcript: its tool
    calls, like its model calls, are unknown rather than 0."""
    data = _json_log()
    data["samples"][0]["messages"] = []
    data["samples"][0]["events"] = []
    path = tmp_path / "bare.json"
    path.write_text(json.dumps(data))
    trials = read_import("inspect", path).trials
    bare = trials[0]
    assert (bare.events, bare.tool_calls, bare.model_calls) == ([], None, None)
    assert all(t.tool_calls is not None for t in trials[1:])


def test_json_log_element_errors_name_the_element(tmp_path: Path) -> None:
    data = _json_log()
    data["samples"][2]["messages"][1]["role"] = 7
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    with pytest.raises(InputError) as info:
        read_import("inspect", path)
    assert (info.value.file, info.value.field) == (str(path), "samples[2].messages[1].role")
    assert info.value.reason == "expected a string, got a number"


def test_eval_member_errors_name_the_member_and_element(tmp_path: Path) -> None:
    header, sample = _header_and_sample()
    sample["model_usage"]["mockllm/model"]["input_tokens"] = "70"
    path = _write_eval(
        tmp_path / "bad.eval", {"header.json": header, "samples/add_epoch_1.json": sample}
    )
    with pytest.raises(InputError) as info:
        read_import("inspect", path)
    assert info.value.file == f"{path} [samples/add_epoch_1.json]"
    assert info.value.field == "model_usage.mockllm/model.input_tokens"
    assert "expected an integer, got a string" in info.value.reason


def test_a_duplicate_sample_names_both_elements(tmp_path: Path) -> None:
    """Two samples with one id and epoch: the error named no sample (it said only
    ``trial: duplicate trial 0 ...``)."""
    data = _json_log()
    data["samples"][2]["id"] = data["samples"][0]["id"]
    data["samples"][2]["epoch"] = data["samples"][0]["epoch"]
    path = tmp_path / "dup.json"
    path.write_text(json.dumps(data))
    with pytest.raises(InputError) as info:
        read_import("inspect", path)
    assert (info.value.file, info.value.field) == (str(path), "samples[2].epoch")
    assert info.value.reason.startswith("duplicate trial ")
    assert info.value.reason.endswith("(first seen at samples[0].epoch)")


def test_a_duplicate_sample_in_an_eval_log_names_both_members(tmp_path: Path) -> None:
    header, sample = _header_and_sample()
    members = {"header.json": header, "samples/a_epoch_1.json": sample}
    members["samples/b_epoch_1.json"] = sample  # the same id and epoch inside
    path = _write_eval(tmp_path / "dup.eval", members)
    with pytest.raises(InputError) as info:
        read_import("inspect", path)
    assert (info.value.file, info.value.field) == (f"{path} [samples/b_epoch_1.json]", "epoch")
    assert info.value.reason.endswith(f"(first seen at {path} [samples/a_epoch_1.json]: epoch)")


@pytest.mark.parametrize(
    ("members", "reason"),
    [
        ({"summaries.json": []}, "missing member header.json"),
        ({"header.json": b"\xff\xfe{}"}, "not a UTF-8 text file"),
        ({"header.json": b"{"}, "invalid JSON"),
        ({"header.json": b"[" * 5000 + b"]" * 5000}, "nested too deeply"),
        ({"header.json": []}, "expected an object, got a list"),
    ],
)
def test_broken_members_are_one_error(tmp_path: Path, members: dict[str, Any], reason: str) -> None:
    with pytest.raises(InputError) as info:
        read_import("inspect", _write_eval(tmp_path / "bad.eval", members))
    assert reason in str(info.value)


def test_a_file_that_is_not_a_zip_or_json_is_one_error(tmp_path: Path) -> None:
    path = tmp_path / "log.eval"
    path.write_bytes(b"PK\x03\x04" + b"\x00" * 40)
    with pytest.raises(InputError, match=r"not a readable \.eval log"):
        read_import("inspect", path)


@pytest.mark.parametrize(
    ("name", "out"), [("tiny.eval", "decompressed-tiny.eval"), ("tiny.json.gz", "tiny.json")]
)
def test_a_compressed_log_says_how_to_decompress_it(tmp_path: Path, name: str, out: str) -> None:
    """A gzip file named .eval was told "an Inspect log: agentgauge import inspect reads
    it" by ``agentgauge import inspect`` itself. The command it is told instead writes
    beside the file, as every other importer's hint does: it named a bare ``tiny.json``,
    which run from another folder was written there, not beside the log."""
    import gzip

    folder = tmp_path / "logs dir"  # a space: the command must quote the paths
    folder.mkdir()
    path = folder / name
    path.write_bytes(gzip.compress(JSON_LOG.read_bytes()))
    with pytest.raises(InputError) as info:
        read_import("inspect", path)
    reason = info.value.reason
    assert reason.startswith(
        "the file is gzip-compressed, but an Inspect log is a ZIP archive (.eval) or JSON "
        "text (.json): decompress it ("
    ), reason
    assert reason.endswith(") and import what it holds"), reason
    command = reason.split("decompress it (", 1)[1].rsplit(") and import", 1)[0]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    subprocess.run(command, shell=True, cwd=elsewhere, check=True)
    assert list(elsewhere.iterdir()) == []
    assert len(read_import("inspect", folder / out).trials) == 12


def test_a_damaged_zstd_member_is_one_error(tmp_path: Path) -> None:
    raw = bytearray(EVAL.read_bytes())
    with zipfile.ZipFile(EVAL) as archive:
        info = archive.getinfo("samples/add_epoch_1.json")
    start = info.header_offset + 30 + len(info.filename) + len(info.extra) + 20
    raw[start : start + 200] = b"\x00" * 200
    path = tmp_path / "damaged.eval"
    path.write_bytes(bytes(raw))
    with pytest.raises(InputError) as info_err:
        read_import("inspect", path)
    assert info_err.value.file == f"{path} [samples/add_epoch_1.json]"
    assert "damaged" in info_err.value.reason


def test_zstd_without_zstandard_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "zstandard", None)  # import zstandard -> ImportError
    if hasattr(zipfile, "ZIP_ZSTANDARD"):
        pytest.skip("this Python reads zstd members itself")
    with pytest.raises(InputError) as info:
        read_import("inspect", EVAL)
    assert "pip install 'agentgauge[inspect]'" in info.value.reason


def test_chunked_refs_outside_the_messages_are_one_error(tmp_path: Path) -> None:
    header, sample = _header_and_sample()
    shell = {k: v for k, v in sample.items() if k not in ("messages", "events", "attachments")}
    shell["message_refs"] = [[0, 99]]
    members = {
        "header.json": header,
        "samples/add_epoch_1/sample.json": shell,
        "samples/add_epoch_1/messages/0.json": sample["messages"],
    }
    with pytest.raises(InputError) as info:
        read_import("inspect", _write_eval(tmp_path / "bad.eval", members))
    assert info.value.file == f"{tmp_path / 'bad.eval'} [samples/add_epoch_1/sample.json]"
    assert info.value.field == "message_refs[0]" and "outside the 4 messages" in info.value.reason


def test_errored_sample_is_an_infra_error_not_a_wrong_answer(tmp_path: Path) -> None:
    data = _json_log()
    sample = data["samples"][0]
    sample["error"] = {"message": "RateLimitError('429')", "traceback": "Traceback ..."}
    del sample["scores"]
    path = tmp_path / "errored.json"
    path.write_text(json.dumps(data))
    trial = read_import("inspect", path).trials[0]
    assert (trial.status, trial.error, trial.success) == ("error", "RateLimitError('429')", False)
    assert trial.is_infra_error


def test_cli_exit_2_one_line_and_the_store_unchanged(tmp_path: Path) -> None:
    store = tmp_path / "s.db"
    with Store(store) as db:
        import_file("inspect", EVAL, db, "good")
    data = _json_log()
    data["samples"][0]["epoch"] = 0
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data))
    proc = subprocess.run(
        [sys.executable, "-m", "agentgauge", "import", "inspect", str(bad), "--store", str(store)],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        f"agentgauge: error: {bad}: samples[0].epoch: must be an integer from 1 to 2^63 - 1, got 0"
    ]
    with Store(store, readonly=True) as db:
        assert [r.run_id for r in db.list_runs()] == ["good"]


def test_a_log_whose_every_sample_errored_imports_as_infra_errors(tmp_path: Path) -> None:
    data = _json_log()
    del data["results"]  # Inspect writes no results when the eval errored
    for sample in data["samples"]:
        sample["error"] = {"message": "ConnectionError", "traceback": ""}
        del sample["scores"]
    path = tmp_path / "all-errored.json"
    path.write_text(json.dumps(data))
    trials = read_import("inspect", path).trials
    assert len(trials) == 12 and all(t.is_infra_error and not t.success for t in trials)
    with pytest.raises(InputError, match="has no scorer 'match'"):
        read_import("inspect", path, scorer="match")


# --------------------------------------------------------------------------- dict scores


def _dict_scored_log() -> dict[str, Any]:
    """The test log as Inspect writes it for one scorer ``combo`` whose value is a dict,
    ``Score(value={"correct": <match>, "brevity": <brevity>})`` with metrics
    ``{"correct": [accuracy(), stderr()], "brevity": [mean()]}`` (made by hand:
    Inspect is not installed here). Inspect reduces and measures a dict key by key
    (``_compute_dict_stat``, ``scorers_from_metric_dict``), so each key's results are
    the ones Inspect recorded for the scorer it replaces, named after the key with
    ``scorer`` naming ``combo``, reducer by reducer."""
    data = _json_log()
    for sample in data["samples"]:
        match, brevity = sample["scores"]["match"], sample["scores"]["brevity"]
        sample["scores"] = {
            "combo": {
                "value": {"correct": match["value"], "brevity": brevity["value"]},
                "answer": match.get("answer"),
                "explanation": match.get("explanation"),
            }
        }
    scores = data["results"]["scores"]
    by = {(s["name"], s["reducer"]): s for s in scores}
    renamed = []
    for reducer in dict.fromkeys(s["reducer"] for s in scores):
        for key, scorer in (("correct", "match"), ("brevity", "brevity")):
            renamed.append({**by[scorer, reducer], "name": key, "scorer": "combo"})
    data["results"]["scores"] = renamed
    data["reductions"] = [
        {
            "scorer": "combo",
            "reducer": match["reducer"],
            "samples": [
                {
                    "value": {"correct": m["value"], "brevity": b["value"]},
                    "sample_id": m["sample_id"],
                }
                for m, b in zip(match["samples"], brevity["samples"], strict=True)
            ],
        }
        for match, brevity in zip(data["reductions"][:4], data["reductions"][4:], strict=True)
    ]
    return data


def _dict_log_file(tmp_path: Path, container: str, data: dict[str, Any] | None = None) -> Path:
    data = data or _dict_scored_log()
    if container == "json":
        path = tmp_path / "dict.json"
        path.write_text(json.dumps(data))
        return path
    members: dict[str, Any] = {
        "header.json": {k: v for k, v in data.items() if k not in ("samples", "reductions")},
        "reductions.json": data["reductions"],
    }
    for sample in data["samples"]:
        members[f"samples/{sample['id']}_epoch_{sample['epoch']}.json"] = sample
    return _write_eval(tmp_path / "dict.eval", members)


@pytest.mark.parametrize("container", ["json", "eval"])
def test_a_dict_valued_scorer_reads_each_key_as_inspect_reports_it(
    tmp_path: Path, container: str
) -> None:
    path = _dict_log_file(tmp_path, container)
    run = read_import("inspect", path)
    # The default outcome is the first of the log's results: Inspect's "correct".
    assert run.config["inspect"]["outcome_scorer"] == "combo/correct"
    assert not any(t.is_infra_error for t in run.trials)  # each was "not scored by 'correct'"
    group = _figures(run.trials, (1, 2, 3))
    results = {
        r["reducer"]: r["metrics"]
        for r in run.config["inspect"]["results"]
        if (r["name"], r.get("scorer")) == ("correct", "combo")
    }
    assert group["success_rate"]["value"] == pytest.approx(results["mean"]["accuracy"])  # 1/2
    assert group["pass_hat_k"]["2"] == pytest.approx(results["pass_k_2"]["accuracy"])  # 1/3
    assert group["pass_hat_k"]["3"] == pytest.approx(results["pass_k_3"]["accuracy"])  # 1/4
    assert group["pass_at_k"]["2"] == pytest.approx(results["pass_at_2"]["accuracy"])  # 2/3
    # The same outcomes as the log whose scorers were separate.
    plain = _by_cell(read_import("inspect", JSON_LOG).trials)
    for cell, trial in _by_cell(run.trials).items():
        assert (trial.success, trial.score) == (plain[cell].success, plain[cell].score)
        grades = {g.grader: g for g in trial.grades}
        assert set(grades) == {"combo", "combo/correct", "combo/brevity"}
        assert grades["combo/correct"].passed == plain[cell].success
        assert (
            grades["combo/brevity"].score
            == {g.grader: g for g in plain[cell].grades}["brevity"].score
        )


@pytest.mark.parametrize("name", ["brevity", "combo/brevity"])
def test_scorer_option_takes_inspects_name_for_a_dict_key_or_scorer_slash_key(
    tmp_path: Path, name: str
) -> None:
    run = read_import("inspect", _dict_log_file(tmp_path, "json"), scorer=name)
    trials = _by_cell(run.trials)
    assert run.config["inspect"]["outcome_scorer"] == "combo/brevity"
    assert trials["capital", 1].success and trials["capital", 1].score == 1.0
    assert not trials["divide", 0].success and trials["divide", 0].score == pytest.approx(0.1429)


def test_scorer_option_naming_a_dict_scorer_lists_its_keys(tmp_path: Path) -> None:
    path = _dict_log_file(tmp_path, "json")
    with pytest.raises(InputError) as info:
        read_import("inspect", path, scorer="combo")
    assert info.value.field == "--scorer"
    assert "choose one of correct, brevity (or combo/KEY)" in info.value.reason
    with pytest.raises(InputError) as info:
        read_import("inspect", path, scorer="match")
    assert info.value.reason == "the log has no scorer 'match'; choose one of correct, brevity"


def test_a_key_two_dict_scorers_share_is_chosen_as_scorer_slash_key(tmp_path: Path) -> None:
    data = _dict_scored_log()
    for sample in data["samples"]:
        sample["scores"]["other"] = {"value": {"correct": 1, "brevity": 0}}
    data["results"]["scores"] += [
        {"name": key, "scorer": "other", "reducer": "mean", "metrics": {}}
        for key in ("correct", "brevity")
    ]
    path = _dict_log_file(tmp_path, "json", data)
    with pytest.raises(InputError) as info:
        read_import("inspect", path, scorer="correct")
    assert info.value.reason == (
        "'correct' is a score of several scorers; choose one of combo/correct, other/correct"
    )
    trials = read_import("inspect", path, scorer="other/correct").trials
    assert all(t.success for t in trials)


def test_a_dict_key_unscored_or_unreadable(tmp_path: Path) -> None:
    data = _dict_scored_log()
    data["samples"][0]["scores"]["combo"]["value"]["correct"] = None  # Inspect's NaN
    path = _dict_log_file(tmp_path, "json", data)
    trial = read_import("inspect", path).trials[0]
    assert trial.is_infra_error and trial.error == "not scored by 'combo/correct'"
    data["samples"][1]["scores"]["combo"]["value"]["correct"] = "maybe"
    path = _dict_log_file(tmp_path, "json", data)
    with pytest.raises(InputError) as info:
        read_import("inspect", path)
    assert info.value.field == "samples[1].scores.combo.value.correct"
    assert "cannot be read as a number ('maybe')" in info.value.reason


def test_a_dict_scored_log_without_results_takes_its_first_key(tmp_path: Path) -> None:
    data = _dict_scored_log()
    del data["results"]  # a log still being written
    run = read_import("inspect", _dict_log_file(tmp_path, "json", data))
    assert run.config["inspect"]["outcome_scorer"] == "combo/correct"
    assert sum(t.success for t in run.trials) == 6


# --------------------------------------------------------------------------- ZIP bombs


def _bomb(path: Path, samples: int, mib: int, *, zstd_declaring: int | None = None) -> Path:
    """A ``.eval`` whose samples each carry ``mib`` MiB of one repeated byte in a
    message: deflated (a few KB each), or zstd-compressed declaring an uncompressed
    size of ``zstd_declaring`` bytes (a ZIP entry's sizes are whatever its writer says)."""
    header, _ = _header_and_sample()
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("header.json", json.dumps(header))
        for i in range(samples):
            name = f"samples/{i}_epoch_1.json"
            data = json.dumps(
                {
                    "id": i,
                    "epoch": 1,
                    "scores": {"match": {"value": "C"}},
                    "messages": [{"role": "assistant", "content": "a" * (mib << 20)}],
                }
            ).encode()
            if zstd_declaring is None:
                archive.writestr(name, data)
                continue
            zstandard = pytest.importorskip("zstandard")
            info = zipfile.ZipInfo(name, date_time=(2026, 12, 1, 0, 0, 0))
            archive.writestr(info, zstandard.ZstdCompressor().compress(data))
            written = archive.getinfo(name)  # stored as written; made zstd in both headers
            written.compress_type, written.CRC = 93, zlib.crc32(data)
            written.file_size = zstd_declaring
            assert archive.fp is not None
            end = archive.fp.tell()
            for offset, value in ((8, (93).to_bytes(2, "little")), (14, written.CRC)):
                archive.fp.seek(written.header_offset + offset)
                archive.fp.write(value if isinstance(value, bytes) else value.to_bytes(4, "little"))
            archive.fp.seek(end)
    return path


def test_a_log_inflating_past_the_total_cap_is_one_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Each member is under the per-member cap; together they are over the total.
    monkeypatch.setattr(inspect_log, "MAX_TOTAL_BYTES", 3 << 20)
    path = _bomb(tmp_path / "bomb.eval", 4, 1)
    with pytest.raises(InputError) as info:
        read_import("inspect", path)
    assert info.value.file == f"{path} [samples/2_epoch_1.json]"
    assert info.value.reason.startswith("the log is larger than 3 MiB uncompressed")


def test_the_total_cap_counts_what_is_inflated_not_what_is_declared(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(inspect_log, "MAX_TOTAL_BYTES", 3 << 20)
    path = _bomb(tmp_path / "bomb.eval", 4, 1, zstd_declaring=100)
    with pytest.raises(InputError) as info:
        read_import("inspect", path)
    assert info.value.file == f"{path} [samples/2_epoch_1.json]"
    assert info.value.reason.startswith("the log is larger than 3 MiB uncompressed")


def test_a_log_inflating_a_thousandfold_is_refused_as_a_zip_bomb(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(inspect_log, "INFLATION_FLOOR_BYTES", 1 << 20)
    path = _bomb(tmp_path / "bomb.eval", 4, 2)
    with pytest.raises(InputError) as info:
        read_import("inspect", path)
    assert info.value.file == f"{path} [samples/0_epoch_1.json]"
    assert "inflates more than 100 times" in info.value.reason
    assert "ZIP bomb" in info.value.reason
    # Inspect's own logs are far from it, from the first byte on.
    monkeypatch.setattr(inspect_log, "INFLATION_FLOOR_BYTES", 0)
    assert len(read_import("inspect", EVAL).trials) == 12


def test_the_cli_refuses_a_zip_bomb_and_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agentgauge.cli import main

    monkeypatch.setattr(inspect_log, "INFLATION_FLOOR_BYTES", 1 << 20)
    bomb = _bomb(tmp_path / "bomb.eval", 2, 2)
    store = tmp_path / "s.db"
    err = StringIO()
    monkeypatch.setattr(
        sys, "argv", ["agentgauge", "import", "inspect", str(bomb), "--store", str(store)]
    )
    monkeypatch.setattr(sys, "stderr", err)
    with pytest.raises(SystemExit) as exited:
        main()
    assert exited.value.code == 2
    assert err.getvalue().startswith(f"agentgauge: error: {bomb} [samples/0_epoch_1.json]: ")
    assert "ZIP bomb" in err.getvalue() and len(err.getvalue().splitlines()) == 1
    assert not store.exists()


def test_samples_are_read_one_at_a_time(tmp_path: Path) -> None:
    """A raw sample is dropped once converted: the peak is about one sample's, not
    the log's (most of a sample can be events, which the trial does not keep)."""
    header, _ = _header_and_sample()
    members: dict[str, Any] = {"header.json": header}
    for i in range(12):
        events = [{"event": "info", "data": f"{j} " + "x" * 1000} for j in range(1000)]
        members[f"samples/{i}_epoch_1.json"] = {
            "id": i,
            "epoch": 1,
            "scores": {"match": {"value": "C"}},
            "events": events,
        }
    size = len(json.dumps(members["samples/0_epoch_1.json"]))  # ~1 MB
    path = _write_eval(tmp_path / "events.eval", members)
    del members, events
    tracemalloc.start()
    try:
        run = read_import("inspect", path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(run.trials) == 12
    assert peak < 6 * size  # every sample held at once: some 19 times one


def test_the_total_counts_the_members_read_not_those_left_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # tiny-chunked.eval inflates to 218 KB; Inspect's calls/ chunks (raw provider
    # requests, which agentgauge does not read) can be far larger than the rest.
    path = tmp_path / "calls.eval"
    path.write_bytes(CHUNKED.read_bytes())
    with zipfile.ZipFile(path, "a", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("samples/add_epoch_1/calls/9000.json", json.dumps(["x" * (2 << 20)]))
    monkeypatch.setattr(inspect_log, "MAX_TOTAL_BYTES", 1 << 20)
    assert len(read_import("inspect", path).trials) == 12
    # Chunks that are read count, from the size they declare on.
    monkeypatch.setattr(inspect_log, "MAX_TOTAL_BYTES", 100_000)
    with pytest.raises(InputError) as info:
        read_import("inspect", path)
    assert "/messages/" in str(info.value.file) or "/events/" in str(info.value.file)
    assert "its members declare more" in info.value.reason


# --------------------------------------------------------------------------- NaN


@pytest.mark.parametrize("container", ["json", "eval"])
def test_nan_as_inspect_writes_it_is_no_value_not_a_refused_log(
    tmp_path: Path, container: str
) -> None:
    """Inspect writes its logs with pydantic's ``to_json``, which puts a float NaN as
    the bare ``NaN`` (Inspect's own tests read a log holding one: tests/log/
    test_eval_log/log_with_nan.txt): an unscored sample's value, a metric of no
    scores. The whole log was refused ("NaN is not allowed"); NaN is no value."""
    data = _json_log()
    data["results"]["scores"][0]["metrics"]["stderr"]["value"] = float("nan")
    data["samples"][0]["scores"]["match"]["value"] = float("nan")  # unscored
    data["samples"][1]["scores"]["brevity"]["value"] = float("nan")
    if container == "json":
        path = tmp_path / "nan.json"
        path.write_text(json.dumps(data))  # NaN as the bare token, as Inspect writes it
        assert '"value": NaN' in path.read_text()
    else:
        header = {k: v for k, v in data.items() if k != "samples"}
        members: dict[str, Any] = {"header.json": header}
        for sample in data["samples"]:
            members[f"samples/{sample['id']}_epoch_{sample['epoch']}.json"] = sample
        path = _write_eval(tmp_path / "nan.eval", members)
    run = read_import("inspect", path)
    first = run.trials[0]
    assert first.is_infra_error and first.error == "not scored by 'match'"
    brevity = next(g for g in run.trials[1].grades if g.grader == "brevity")
    assert (brevity.score, brevity.passed, brevity.evidence["value"]) == (None, None, None)
    assert run.config["inspect"]["results"][0]["metrics"]["stderr"] is None
    # Through the store too: the run is written whole.
    import_file("inspect", path, tmp_path / "s.db", "nan")


def test_infinity_in_an_inspect_log_is_still_refused(tmp_path: Path) -> None:
    """Infinity is a value, not the absence of one: refused in one line, not read as null."""
    data = _json_log()
    data["samples"][0]["total_time"] = float("inf")
    path = tmp_path / "inf.json"
    path.write_text(json.dumps(data))
    with pytest.raises(InputError, match="Infinity is not allowed"):
        read_import("inspect", path)
