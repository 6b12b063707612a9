"""A reader that goes away (``agentgauge show ... | head -1``) ends any command quietly
with 141, 128 + SIGPIPE, as a shell reports a program that signal ended.

It exited 1, the code of a failed gate, without a word (rich's handler and click's
both exit 1 on a closed pipe); output still buffered at exit printed "Exception
ignored ... BrokenPipeError" and exited 120. Each command runs in its own process
with its stdout a pipe whose reading end is already closed, so that its first
write to it fails whatever the size of its output.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentgauge.harness.runner import run

ROOT = Path(__file__).resolve().parents[2]
SUITE = ROOT / "examples" / "counter-suite.yaml"


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("pipe") / "s.db"
    agent = "agentgauge.testing.worlds:counting_agent"  # the counter world's own agent
    run(str(SUITE), agent, trials=2, store=path, run_id="r", progress=False)
    return path


def closed_stdout(*args: str) -> tuple[int, str]:
    """Run the command with nobody reading its stdout; its exit code and stderr."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "agentgauge", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # the only reader: the command's first write finds the pipe closed
    err = proc.stderr.read().decode()
    return proc.wait(timeout=120), err


@pytest.mark.parametrize(
    "args",
    [
        ["show", "{db}:r", "--task", "add-small", "--trial", "1"],  # rich tables
        ["runs", "--store", "{db}", "--json"],  # JSON, written at exit
        ["metrics", "{db}:r"],
        ["--help"],  # typer's help, printed while the arguments are parsed
        ["show", "--help"],
        # A file option naming the pipe: it said "cannot write here: Broken pipe", exit 2.
        ["export", "{db}:r", "--jsonl", "/dev/stdout"],
        ["report", "{db}:r", "--markdown", "/dev/stdout"],
    ],
    ids=lambda args: " ".join(args[:2]),
)
def test_a_closed_pipe_exits_141_without_a_word(db: Path, args: list[str]) -> None:
    code, err = closed_stdout(*(a.format(db=db) for a in args))
    assert (code, err) == (141, "")


def test_output_that_is_read_is_untouched(db: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "agentgauge", "runs", "--store", str(db), "--json"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
    )
    assert done.returncode == 0 and done.stderr == "" and '"run_id": "r"' in done.stdout


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full (Linux)")
@pytest.mark.parametrize("args", [["runs", "--store", "{db}"], ["metrics", "{db}:r", "--json"]])
def test_a_full_disk_is_one_line_and_exit_4(db: Path, args: list[str]) -> None:
    # stdout on a full disk (`> /dev/full`) ended in a traceback: OSError ENOSPC.
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    with open("/dev/full", "w") as full:
        proc = subprocess.run(
            [sys.executable, "-m", "agentgauge", *(a.format(db=db) for a in args)],
            stdout=full,
            stderr=subprocess.PIPE,
            env=env,
            text=True,
            check=False,
        )
    assert proc.returncode == 4  # as a full disk under the store
    assert proc.stderr == (
        "agentgauge: error: the output: cannot write (No space left on device)\n"
    )
