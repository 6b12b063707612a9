"""Ctrl-C in a command other than ``run``: one line saying so, exit 130.

typer turned a KeyboardInterrupt into a silent exit 130, so `grade`, `report`,
`import` and the rest stopped without a word; a Ctrl-C after `grade` had committed
said nothing of the grade version it had written.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, NoReturn

import pytest
from tests.conftest import ROOT, Cli

from agentgauge.store import Store

COUNTER = ROOT / "examples" / "counter-suite.yaml"


def _ctrl_c(*_: Any, **__: Any) -> NoReturn:
    raise KeyboardInterrupt


def _versions(db: Path) -> list[int]:
    with Store(db, readonly=True) as store:
        return [v.version for v in store.grade_versions("r")]


@pytest.fixture
def db(tmp_path: Path, cli: Cli) -> Path:
    path = tmp_path / "s.db"
    agent = "agentgauge.testing.worlds:counting_agent"  # the counter world's own agent
    code, _, err = cli("run", str(COUNTER), "--agent", agent, "--store", str(path),
                       "--run-id", "r", "--trials", "2", "--no-progress")  # fmt: skip
    assert code == 0, err
    return path


def test_grade_interrupted_before_it_commits_writes_nothing_and_says_so(
    db: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    regrade = sys.modules["agentgauge.graders.regrade"]  # the package's name is the function

    calls = 0
    grade = regrade._grade

    def ctrl_c_at_the_third(*args: Any, **kwargs: Any) -> Any:
        nonlocal calls
        calls += 1
        if calls == 3:
            raise KeyboardInterrupt
        return grade(*args, **kwargs)

    monkeypatch.setattr(regrade, "_grade", ctrl_c_at_the_third)
    code, out, err = cli("grade", f"{db}:r")
    assert (code, out) == (130, "")
    assert err == "interrupted: nothing written (the re-grade was rolled back)\n"
    assert _versions(db) == [1]


def test_grade_interrupted_after_it_commits_says_the_version_was_written(
    db: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    import agentgauge.cli.grade as grade_cli

    monkeypatch.setattr(grade_cli, "_print_result", _ctrl_c)
    code, out, err = cli("grade", f"{db}:r")
    assert (code, out) == (130, "")
    assert err == (
        f"interrupted: grade version 2 was already written; see it with: agentgauge grade "
        f"{db}:r --list\n"
    )
    assert _versions(db) == [1, 2]


@pytest.mark.parametrize(
    "command",
    [
        ["report", "{db}:r", "--markdown", "{tmp}/r.md"],
        ["export", "{db}:r", "--jsonl", "{tmp}/r.jsonl"],
        ["import", "jsonl", "{tmp}/in.jsonl", "--store", "{tmp}/new.db"],
    ],
)
def test_other_commands_say_they_were_interrupted(
    db: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch, command: list[str]
) -> None:
    import agentgauge.store

    (db.parent / "in.jsonl").write_text('{"task_id": "t1", "success": true}\n')
    monkeypatch.setattr(agentgauge.store.Store, "trials", _ctrl_c)
    # A report of a stored run reads its columns, building no trial until it shows one.
    monkeypatch.setattr(agentgauge.store.Store, "columns", _ctrl_c)
    monkeypatch.setattr(agentgauge.store.Store, "add_trials", _ctrl_c)
    args = [a.format(db=db, tmp=db.parent) for a in command]
    code, out, err = cli(*args)
    assert (code, out, err) == (130, "", "agentgauge: interrupted\n")
    assert not (db.parent / "r.md").exists() and not (db.parent / "r.jsonl").exists()


_CTRL_C_ON_IMPORT = """
import os, signal, sys

MODULE = sys.argv[1]

class CtrlC:  # sends Ctrl-C to this process when the named module starts loading
    def find_spec(self, name, path=None, target=None):
        if name == MODULE:
            sys.meta_path.remove(self)
            os.kill(os.getpid(), signal.SIGINT)
        return None

sys.meta_path.insert(0, CtrlC())
sys.argv = ["agentgauge", *sys.argv[2:]]
from agentgauge.cli import main
main()
"""


@pytest.mark.parametrize(
    "module",
    [
        "typer",  # while agentgauge.cli itself loads
        "agentgauge.cli.metrics",  # while main loads the command's module
    ],
)
def test_ctrl_c_while_loading_is_one_line_not_a_traceback(module: str) -> None:
    # Python's handler raised KeyboardInterrupt wherever the import stood, and the
    # traceback ran through typing.py or jinja2 (a Ctrl-C in the first half-second).
    import subprocess
    import sys

    sample = Path(__file__).resolve().parents[2] / "examples" / "sample_trials.jsonl"
    out = subprocess.run(
        [sys.executable, "-c", _CTRL_C_ON_IMPORT, module, "metrics", str(sample)],
        capture_output=True, text=True, check=False, timeout=60,
    )  # fmt: skip
    assert out.returncode == 130, out.stderr
    assert out.stderr == "agentgauge: interrupted\n" and out.stdout == ""


def test_loading_the_cli_leaves_pythons_ctrl_c_handler_in_place() -> None:
    import signal

    import agentgauge.cli  # already loaded or not: either way

    assert signal.getsignal(signal.SIGINT) is not agentgauge.cli._interrupted_while_loading
