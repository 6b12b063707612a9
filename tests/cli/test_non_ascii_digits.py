"""A number typed with a character that is a digit to ``str.isdigit`` but not to ``int``
("²", superscript two) or read by ``int`` as another script's digits ("١٢", Arabic-
Indic) is refused as the field's one-line error, exit 2: ``isdigit`` let "²" through to
``int()`` and a traceback in six parsers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.conftest import Cli

from agentgauge.textio import is_digits

SAMPLE = Path(__file__).resolve().parents[2] / "examples" / "sample_trials.jsonl"


@pytest.mark.parametrize(
    ("text", "digits"),
    [
        ("0", True),
        ("042", True),
        ("", False),
        ("²", False),
        ("١٢", False),
        ("1²", False),
        ("-1", False),
    ],
)
def test_is_digits_is_ascii_digits_only(text: str, digits: bool) -> None:
    assert is_digits(text) is digits


@pytest.mark.parametrize("bad", ["²", "١٢"])
@pytest.mark.parametrize(
    ("args", "field"),
    [
        (["metrics", str(SAMPLE), "--k", "{bad}"], "--k"),
        (["metrics", f"{SAMPLE}#grade={{bad}}"], "grade version"),
        (["gate", str(SAMPLE), "--config", "{tmp}/g.yaml"], "gates.0.metric"),
        (
            [
                "run",
                "builtin:functions",
                "--agent",
                "oracle",
                "--variants",
                "paraphrase:{bad}",
                "--store",
                "{tmp}/v.db",
            ],
            "--variants",
        ),
        (["import", "otel", "{tmp}/s.jsonl", "--store", "{tmp}/s.db"], "startTimeUnixNano"),
    ],
)
def test_a_non_ascii_digit_is_one_line_and_exit_2(
    cli: Cli, tmp_path: Path, args: list[str], field: str, bad: str
) -> None:
    (tmp_path / "g.yaml").write_text(
        f"gates:\n  - metric: pass_hat_k.{bad}\n    min: 0.1\n", encoding="utf-8"
    )
    span = {
        "traceId": "0af7651916cd43dd8448eb211c80319c",
        "spanId": "b7ad6b7169203331",
        "name": "invoke_agent",
        "startTimeUnixNano": bad,
        "endTimeUnixNano": "2000000000",
        "attributes": [{"key": "agentgauge.task.id", "value": {"stringValue": "t1"}}],
    }
    doc = {"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}
    (tmp_path / "s.jsonl").write_text(json.dumps(doc, ensure_ascii=False) + "\n", encoding="utf-8")
    code, _, err = cli(*[a.format(bad=bad, tmp=tmp_path) for a in args])
    assert code == 2, err
    assert "Traceback" not in err and field in err
    assert not (tmp_path / "v.db").exists() and not (tmp_path / "s.db").exists()
