"""The cmd: adapter: external programs speaking JSON lines, well and badly."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from agentgauge.harness.runner import run
from agentgauge.schema import Task, Trial
from agentgauge.store import Store
from agentgauge.testing.worlds import make_counter_env

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "cmd_agent.py"


def tasks() -> list[Task]:
    return [
        Task(
            id="a",
            instruction="Add 250 to the counter",
            user_scenario={"replies": ["thanks"]},
            expectations={"final_state": {"counter": 250}},
        ),
        Task(id="b", instruction="please add 4", expectations={"final_state": {"counter": 4}}),
        Task(id="c", instruction="hello", expectations={"final_state": {"counter": 0}}),
    ]


def go(tmp_path: Path, program: str, **kw: object) -> list[Trial]:
    header = run(
        tasks(),
        f"cmd:{sys.executable} {program}",
        store=tmp_path / "s.db",
        env_factory=make_counter_env,
        progress=False,
        concurrency=3,
        **kw,  # type: ignore[arg-type]
    )
    with Store(tmp_path / "s.db") as db:
        return sorted(db.trials(header.run_id), key=lambda t: t.task_id)


def script(tmp_path: Path, body: str) -> str:
    path = tmp_path / "agent.py"
    path.write_text("import json, sys, time\n" + textwrap.dedent(body))
    return str(path)


def test_example_program_runs_through_the_protocol(tmp_path: Path) -> None:
    trials = go(tmp_path, str(EXAMPLE), variants=["base", "fault:tool_error@1.0"])
    a, b, c = [t for t in trials if t.variant == "base"]
    assert a.success and b.success and c.success
    assert a.answer == "Added 250." and a.control == "act"
    kinds = [e.type for e in a.events]
    assert kinds == [
        "message",
        "tool_call",
        "tool_result",
        "message",
        "message",
        "message",
        "message",
    ]
    assert c.control == "refuse" and c.tool_calls == 0
    faulted = [t for t in trials if t.variant != "base"]
    # Injected tool errors reach the program, which reports them; state is unchanged.
    assert all(not t.success and t.status == "completed" for t in faulted if t.task_id != "c")


@pytest.mark.parametrize(
    ("body", "status", "error"),
    [
        (
            'print("hello, I am not JSON", flush=True)\n',
            "error",
            "ProtocolError: stdout line is not JSON",
        ),
        (
            'sys.stdin.readline(); print("crashing", file=sys.stderr); sys.exit(3)\n',
            "error",
            "ProtocolError: program exited with code 3 before sending 'done'; stderr: crashing",
        ),
        (
            'sys.stdin.readline(); print(json.dumps({"type": "dance"}), flush=True)\n',
            "error",
            "ProtocolError: unknown message type 'dance'",
        ),
        (
            "sys.stdin.readline()\n"
            'print(json.dumps({"type": "tool_call", "name": "add", "arguments": [1]}))\n'
            "sys.stdout.flush()\n",
            "error",
            "ProtocolError: tool_call arguments must be an object",
        ),
        (
            "sys.stdin.readline()\n"
            'print(json.dumps({"type": "control", "decision": "panic"}), flush=True)\n',
            "error",
            "ProtocolError: unknown control decision 'panic'",
        ),
        (
            # It stops reading first: the broken pipe on the next write is not the
            # story, the line it printed is (a race the first case can also hit).
            "sys.stdin.readline()\n"
            'print(json.dumps({"type": "tool_call", "name": "add", "arguments": {"n": 1}}))\n'
            "sys.stdout.flush(); sys.stdin.close(); import os; os.close(0)\n"
            'print("oops, not JSON", flush=True); time.sleep(0.5)\n',
            "error",
            "ProtocolError: stdout line is not JSON: b'oops",
        ),
        (
            "sys.stdin.readline(); sys.stdin.close(); import os; os.close(0)\n"
            'print(json.dumps({"type": "say", "content": "hi"}), flush=True)\n'
            'print("leaving", file=sys.stderr); time.sleep(0.3); sys.exit(4)\n',
            "error",
            "ProtocolError: program closed its input before the conversation ended "
            "(it exited with code 4); stderr: leaving",
        ),
        (
            # A traceback: its last line, the exception, comes first.
            'sys.stdin.readline(); raise RuntimeError("boom: the agent crashed")\n',
            "error",
            "ProtocolError: program exited with code 1 before sending 'done'; stderr's last "
            "line: RuntimeError: boom: the agent crashed; stderr ends: Traceback",
        ),
        ("sys.stdin.readline(); time.sleep(60)\n", "timeout", "timed out after 1.0s in the agent"),
        # Each was a raw Python error (ValueError: Separator is not found..., a
        # RecursionError, ValueError: Exceeds the limit...), not the protocol's.
        (
            'sys.stdin.readline(); sys.stdout.write("x" * (17 * 2**20)); sys.stdout.flush()\n',
            "error",
            "ProtocolError: stdout line longer than 16 MiB: each message is one JSON line "
            'of at most 16 MiB (docs/running-agents.md, "An external program")',
        ),
        (
            'sys.stdin.readline(); print("[" * 100000 + "]" * 100000, flush=True)\n',
            "error",
            "ProtocolError: stdout line is JSON nested too deeply",
        ),
        (
            "sys.stdin.readline()\n"
            'print(\'{"type": "say", "n": \' + "9" * 5000 + "}", flush=True)\n',
            "error",
            "ProtocolError: stdout line has a number that cannot be read",
        ),
        # A number past any float was "OverflowError: int too large to convert to
        # float", naming no field; UTF-8 that is not was called "not JSON".
        (
            "sys.stdin.readline()\n"
            'print(\'{"type": "cost", "usd": 1\' + "0" * 400 + "}", flush=True)\n',
            "error",
            "ProtocolError: cost.usd must be a finite non-negative number, got 1000000000",
        ),
        (
            "sys.stdin.readline()\n"
            'print(\'{"type": "confidence", "value": 1\' + "0" * 400 + "}", flush=True)\n',
            "error",
            "ProtocolError: confidence.value must be a number in [0, 1], got 1000000000",
        ),
        # A reason that was not text was dropped without a word.
        (
            "sys.stdin.readline()\n"
            'print(\'{"type": "control", "decision": "refuse", "reason": 5}\', flush=True)\n',
            "error",
            "ProtocolError: control.reason must be a string, got 5",
        ),
        (
            "sys.stdin.readline()\n"
            'sys.stdout.buffer.write(b\'{"type": "say", "content": "caf\\xe9"}\\n\')\n'
            "sys.stdout.flush()\n",
            "error",
            "ProtocolError: stdout line: byte 31 is not valid UTF-8 (each line must be UTF-8 JSON)",
        ),
    ],
)
def test_misbehaving_programs_are_the_agents_error(
    tmp_path: Path, body: str, status: str, error: str
) -> None:
    # Only the hanging program needs a short timeout; the others get time to start even
    # on a loaded machine, so a slow interpreter start is not mistaken for a hang.
    limit = 1.0 if status == "timeout" else 30.0
    for t in go(tmp_path, script(tmp_path, body), timeout=limit):
        assert t.status == status and t.error_kind == "agent"
        assert t.error is not None and t.error.startswith(error), t.error


def test_program_can_report_its_own_model_calls(tmp_path: Path) -> None:
    body = """
    start = json.loads(sys.stdin.readline())
    out = lambda m: print(json.dumps(m), flush=True)
    out({"type": "model_call", "model": "m", "input_tokens": 7, "output_tokens": 3,
         "cost_usd": 0.002, "latency_s": 0.1})
    out({"type": "answer", "content": "ok"})
    out({"type": "confidence", "value": 0.75})
    out({"type": "done"})
    """
    for t in go(tmp_path, script(tmp_path, body)):
        assert t.status == "completed" and t.answer == "ok" and t.confidence == 0.75
        assert (t.input_tokens, t.output_tokens, t.cost_usd, t.model_calls) == (7, 3, 0.002, 1)


def test_the_line_limit_is_documented_where_its_error_points() -> None:
    # The error named docs/running-agents.md, which never mentioned the 16 MiB limit.
    from agentgauge.agents.cmd import LIMITS_SECTION

    doc = (ROOT / "docs" / "running-agents.md").read_text()
    heading = next(line for line in doc.splitlines() if line.startswith("### " + LIMITS_SECTION))
    section = doc.split(heading, 1)[1].split("\n### ", 1)[0]
    assert "at most **16 MiB**" in section


def test_a_non_zero_exit_after_done_keeps_the_answer_and_is_said(tmp_path: Path) -> None:
    # The trial was recorded as completed with no trace of the exit code: a program
    # that crashed while cleaning up (or exits 1 to say "I failed") went unnoticed.
    body = """
    sys.stdin.readline()
    out = lambda m: print(json.dumps(m), flush=True)
    out({"type": "answer", "content": "ok"})
    out({"type": "done"})
    print("cleanup went wrong", file=sys.stderr)
    raise SystemExit(5)
    """
    with pytest.warns(UserWarning, match=r"exited with code 5 after sending 'done'") as caught:
        trials = go(tmp_path, script(tmp_path, body))
    from agentgauge.errors import Note

    assert all(issubclass(w.category, Note) for w in caught if "after sending" in str(w.message))
    for t in trials:
        # The answer was given: the trial stays completed and graded as usual.
        assert t.status == "completed" and t.error is None and t.answer == "ok"
        assert t.metadata["cmd_exit"] == {"code": 5, "stderr": "cleanup went wrong"}


def test_a_clean_exit_after_done_records_nothing(tmp_path: Path) -> None:
    body = """
    sys.stdin.readline()
    print(json.dumps({"type": "done"}), flush=True)
    """
    for t in go(tmp_path, script(tmp_path, body)):
        assert t.status == "completed" and "cmd_exit" not in t.metadata
