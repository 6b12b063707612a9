"""``agentgauge show`` prints what an agent, a task or a grader wrote as text: no
terminal escape reaches the terminal, no Rich markup becomes a link or a style, no
bidirectional override reorders a line (the idea of test_hostile_text.py, for show)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from tests.conftest import Cli

CLEAR = "\x1b[2J"
#: An OSC 8 hyperlink if printed raw, a Rich hyperlink if read as markup.
OSC_LINK = "\x1b]8;;https://example.com/osc\x1b\\osc\x1b]8;;\x1b\\"
RICH = "[link=https://example.com/rich]rich[/link][bold red]loud[/]"
BIDI = "\u202e"
HOSTILE = f"{CLEAR}{OSC_LINK}{RICH}{BIDI}txt.exe\r"

TASK = f"task{CLEAR}{RICH}{BIDI}"


def _trials(path: Path) -> Path:
    events = [
        {"type": "message", "role": "user", "content": f"hello {HOSTILE}"},
        {"type": "tool_call", "name": f"tool{RICH}", "arguments": {"q": HOSTILE}, "call_id": "c1"},
        {"type": "tool_result", "call_id": "c1", "content": HOSTILE, "is_error": True},
        {"type": "control", "decision": "stop", "reason": HOSTILE},
    ]
    grades = [
        {"grader": f"judge{RICH}", "passed": False, "score": 0.0, "status": f"s{CLEAR}",
         "evidence": {"quotes": [HOSTILE], "reason": HOSTILE}},
        {"grader": "custom", "passed": None, "evidence": {f"k{CLEAR}": HOSTILE}},
    ]  # fmt: skip
    rows = [
        {"task_id": TASK, "trial": 0, "agent": f"agent{RICH}", "success": False,
         "status": "error", "error_kind": "agent", "error": f"boom {HOSTILE}",
         "answer": HOSTILE, "events": events, "grades": grades},
        {"task_id": TASK, "trial": 1, "agent": f"agent{RICH}", "success": True},
    ]  # fmt: skip
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _no_raw_controls(out: str) -> None:
    assert "\x1b" not in out and BIDI not in out and "\r" not in out
    assert "\\x1b[2J" in out and "\\u202e" in out  # shown, as escapes


@pytest.mark.parametrize("view", [[], ["--task", TASK], ["--task", TASK, "--trial", "0"]])
def test_show_prints_hostile_text_as_text(cli: Cli, tmp_path: Path, view: list[str]) -> None:
    code, out, err = cli("show", str(_trials(tmp_path / "t.jsonl")), *view)
    assert code == 0, err
    _no_raw_controls(out)
    assert "[link=https://example.com/rich]rich[/link]" in out  # literal, not a link
    if view:
        # Message, call, result, control, error, answer, evidence: each literal (spaces
        # removed, since a long cell wraps inside its column).
        assert re.sub(r"\s", "", out).count("[boldred]loud[/]") >= 10


def test_show_with_colours_emits_only_its_own_styles(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A colour terminal: show's own styles are SGR sequences (ESC [ ... m); nothing else.
    monkeypatch.setenv("FORCE_COLOR", "1")
    monkeypatch.delenv("NO_COLOR", raising=False)
    code, out, _ = cli("show", str(_trials(tmp_path / "t.jsonl")), "--task", TASK)
    assert code == 0
    assert "\x1b[" in out  # styled, so the check below is not vacuous
    assert re.findall(r"\x1b(?!\[[0-9;]*m)", out) == []
    assert "\x1b]8;" not in out and BIDI not in out


def test_show_json_keeps_the_text_as_written(cli: Cli, tmp_path: Path) -> None:
    code, out, _ = cli("show", str(_trials(tmp_path / "t.jsonl")), "--task", TASK, "--json")
    assert code == 0
    doc = json.loads(out)
    # JSON escapes controls itself; a consumer gets the data unchanged.
    assert doc["task_id"] == TASK and doc["trials"][0]["error"] == f"boom {HOSTILE}"
    assert doc["trials"][0]["events"][1]["text"] == json.dumps({"q": HOSTILE}, ensure_ascii=False)


def test_the_command_show_suggests_runs_as_given(cli: Cli, tmp_path: Path) -> None:
    # A task id with a newline was suggested as --task 'line\x0abreak', which a shell
    # passes as a backslash and "x0a": "no task". Now it is ANSI-C quoted, and runs.
    import subprocess

    src = tmp_path / "n.jsonl"
    rows = [{"task_id": "line\nbreak", "success": False}, {"task_id": "ok", "success": True}]
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    code, out, err = cli("show", str(src))
    assert code == 0, err
    found = re.search(r"agentgauge show (.*?--trial 0)", " ".join(out.split()))
    assert found is not None, out
    assert "$'line\\x0abreak'" in found.group(1)
    said = subprocess.run(
        ["bash", "-c", "printf '%s\\0' " + found.group(1)], capture_output=True, check=True
    ).stdout.split(b"\0")
    assert said[:7] == [
        str(src).encode(),
        b"--task",
        b"line\nbreak",
        b"--variant",
        b"base",
        b"--trial",
        b"0",
    ]


def test_show_json_keeps_a_long_text_whole_and_the_terminal_cuts_it(
    cli: Cli, tmp_path: Path
) -> None:
    # `show --json` cut a 5,003-character message to 2,000 and a note, though the JSON
    # is documented to keep the text exactly as recorded.
    long = "A" * 5_000 + "END"
    row = {
        "task_id": "long",
        "success": False,
        "answer": long,
        "events": [{"type": "message", "role": "assistant", "content": long, "t": 0.0}],
    }
    path = tmp_path / "l.jsonl"
    path.write_text(json.dumps(row) + "\n", encoding="utf-8")
    code, out, err = cli("show", str(path), "--task", "long", "--trial", "0", "--json")
    assert code == 0, err
    (trial,) = json.loads(out)["trials"]
    assert trial["events"][0]["text"] == long and trial["answer"] == long
    code, out, err = cli("show", str(path), "--task", "long", "--trial", "0")
    assert code == 0, err
    flat = re.sub(r"\s", "", out)
    assert flat.count("…[3,003morecharacters]") == 2  # the message and the answer
    assert "END" not in flat
