"""An evaluator's verdicts in a trace (``gen_ai.evaluation.result`` span events, as the
GenAI conventions put them on the span evaluated) come across as grades, and one named
with ``--outcome-evaluation`` is the outcome of a trace that carries none. The traces
are made by the OpenTelemetry SDK and encoded by its own OTLP encoder."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from tests.fixtures.otel.otlp_json import write_lines

from agentgauge.store import Store

EVENT = "gen_ai.evaluation.result"
SUITE = Path(__file__).resolve().parents[1] / "fixtures" / "otel" / "suite.yaml"


def _evaluation(name: str | None, **values: Any) -> dict[str, Any]:
    keys = {
        "label": "gen_ai.evaluation.score.label",
        "score": "gen_ai.evaluation.score.value",
        "explanation": "gen_ai.evaluation.explanation",
        "error": "error.type",
    }
    attrs = {keys[k]: v for k, v in values.items()}
    return attrs if name is None else {"gen_ai.evaluation.name": name, **attrs}


def _trace(
    task: str,
    *,
    on_root: Sequence[dict[str, Any]] = (),
    on_chats: Sequence[Sequence[dict[str, Any]]] = ((),),
    answer: str = "Paris.",
) -> list[ReadableSpan]:
    """An agent span (task ``task``, no outcome) with a chat span per ``on_chats``
    item; each evaluation an event on its span."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("evaluated-agent")
    with tracer.start_as_current_span("invoke_agent helper") as root:
        root.set_attributes(
            {
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.agent.name": "helper",
                "agentgauge.task.id": task,
                "gen_ai.output.messages": json.dumps(
                    [{"role": "assistant", "parts": [{"type": "text", "content": answer}]}]
                ),
            }
        )
        for events in on_chats:
            with tracer.start_as_current_span("chat fake-model") as chat:
                chat.set_attributes(
                    {"gen_ai.operation.name": "chat", "gen_ai.request.model": "fake-model"}
                )
                for attrs in events:
                    chat.add_event(EVENT, attrs)
        for attrs in on_root:
            root.add_event(EVENT, attrs)
    return list(exporter.get_finished_spans())


def _file(tmp_path: Path, *traces: list[ReadableSpan]) -> Path:
    path = tmp_path / "traces.jsonl"
    write_lines(path, list(traces))
    return path


def _imported(cli: Any, db: Path, path: Path, *args: str) -> tuple[int, str]:
    """Exit code, and stdout and stderr together."""
    code, out, err = cli("import", "otel", str(path), "--store", str(db), "--run-id", "r", *args)
    return code, out + err


def test_evaluations_are_grades_and_the_named_one_is_the_outcome(tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    done = _evaluation("task_completion", label="pass", score=1.0, explanation="booked")
    relevance = _evaluation("Relevance", label="relevant", score=4.0)  # a 1-5 rating
    broken = _evaluation("Groundedness", error="TimeoutError")
    failed = _evaluation("task_completion", label="Fail")
    partial = _evaluation("task_completion", score=0.5)
    path = _file(
        tmp_path,
        _trace("a", on_root=[done], on_chats=[[relevance, broken]]),
        _trace("b", on_root=[failed]),
        _trace("c", on_chats=[[partial]]),  # not on the root, but the only one
    )
    db = tmp_path / "e.db"
    code, text = _imported(cli, db, path, "--outcome-evaluation", "task_completion")
    assert code == 0, text
    with Store(db, readonly=True) as store:
        trials = {t.task_id: t for t in store.trials("r")}
    a, b, c = trials["a"], trials["b"], trials["c"]
    assert (a.success, b.success, c.success) == (True, False, False)
    assert (a.score, b.score, c.score) == (1.0, 0.0, 0.5)
    grades = {g.grader: g for g in a.grades}
    assert set(grades) == {"task_completion", "Relevance", "Groundedness"}
    assert grades["task_completion"].passed is True and grades["task_completion"].score == 1.0
    assert grades["task_completion"].evidence == {
        "label": "pass",
        "score": 1.0,
        "explanation": "booked",
        "span": "invoke_agent helper",
    }
    # A label that is no verdict and a score off [0, 1] are unknown, kept as evidence.
    rel = grades["Relevance"]
    assert (rel.passed, rel.score) == (None, None)
    assert rel.evidence == {"label": "relevant", "score": 4.0, "span": "chat fake-model"}
    ground = grades["Groundedness"]
    assert (ground.passed, ground.status) == (None, "grader_error")
    assert ground.evidence["error_type"] == "TimeoutError"


def test_without_the_option_evaluations_are_grades_and_the_outcome_comes_from_elsewhere(
    tmp_path: Path,
    cli,  # type: ignore[no-untyped-def]
) -> None:
    verdict = _evaluation("task_completion", label="fail")
    path = _file(tmp_path, _trace("capital-france", on_root=[verdict]))
    db = tmp_path / "s.db"
    # No outcome anywhere: refused, as before, and the store is not made.
    code, text = _imported(cli, db, path)
    assert code == 2 and "has no outcome" in text and not db.exists()
    # The suite's graders decide it; the trace's own evaluation is kept beside theirs.
    code, text = _imported(cli, db, path, "--suite", str(SUITE))
    assert code == 0, text
    with Store(db, readonly=True) as store:
        (trial,) = store.trials("r")
    assert trial.success is True  # the answer contains "Paris"
    grades = {g.grader: g for g in trial.grades}
    assert "answer" in grades and grades["task_completion"].passed is False


def test_an_evaluation_that_cannot_be_the_outcome_is_refused(tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    name = "task_completion"
    cases = {
        "not named": (
            _trace("a", on_root=[_evaluation("other", label="pass")]),
            f"no 'gen_ai.evaluation.result' event named '{name}'",
        ),
        "two off the root": (
            _trace("a", on_chats=[[_evaluation(name, label="pass")], [_evaluation(name)]]),
            "2 'gen_ai.evaluation.result' events named",
        ),
        "no verdict": (
            _trace("a", on_root=[_evaluation(name, label="relevant", score=3.0)]),
            "its label 'relevant' is not one of pass/fail",
        ),
        "errored": (
            _trace("a", on_root=[_evaluation(name, error="TimeoutError")]),
            "it failed (TimeoutError)",
        ),
        "nameless": (
            _trace("a", on_root=[_evaluation(None, label="pass")]),
            "attribute 'gen_ai.evaluation.name': expected the evaluation's name",
        ),
        "score not a number": (
            _trace("a", on_root=[_evaluation(name, score="high")]),
            "attribute 'gen_ai.evaluation.score.value': expected a number",
        ),
    }
    for case, (spans, words) in cases.items():
        db = tmp_path / f"{case}.db"
        code, text = _imported(cli, db, _file(tmp_path, spans), "--outcome-evaluation", name)
        assert code == 2, (case, text)
        assert words in " ".join(text.split()), (case, text)
        assert not db.exists(), case


@pytest.mark.parametrize(
    ("fmt", "words"), [("jsonl", "--outcome-evaluation: applies only to"), ("inspect", "outcome")]
)
def test_formats_without_spans_refuse_the_option(tmp_path: Path, cli, fmt: str, words: str) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "x.jsonl"
    path.write_text('{"task_id": "t", "success": true}\n')
    code, _, err = cli("import", fmt, str(path), "--outcome-evaluation", "x")
    assert code == 2 and words in err, err


def test_an_empty_evaluation_name_is_refused_before_reading(tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    path = _file(tmp_path, _trace("a"))
    code, text = _imported(cli, tmp_path / "e.db", path, "--outcome-evaluation", " ")
    assert code == 2 and "--outcome-evaluation: give the name of an evaluation" in text
    db = tmp_path / "live.db"
    code, _, err = cli("collect", "--port", "0", "--store", str(db), "--outcome-evaluation", "")
    assert code == 2 and "--outcome-evaluation" in err and not db.exists()
