"""A source with no trial is refused by every command that reads trials, with one line
naming the source and exit 2: "every trial passed" over zero trials is a claim nobody
measured (an empty file once printed it, exit 0; ``metrics`` printed nothing and
``report`` wrote a page). The Python API on an empty list measures nothing and says so.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.conftest import Cli

import agentgauge
from agentgauge.errors import InputError
from agentgauge.schema import Run
from agentgauge.sources import open_source
from agentgauge.store import Store, utc_now


@pytest.fixture
def empty(tmp_path: Path) -> Path:
    path = tmp_path / "empty.jsonl"
    path.write_text("")
    return path


@pytest.fixture
def started(tmp_path: Path) -> str:
    """A stored run that was started (as `collect` starts one) but has no trial yet."""
    db = tmp_path / "s.db"
    with Store(db) as store:
        store.create_run(Run(run_id="waiting", created_at=utc_now()))
    return f"{db}:waiting"


COMMANDS = [
    ["show"],
    ["show", "--json"],
    ["metrics"],
    ["metrics", "--json"],
    ["horizon"],
    ["report", "--html", "{out}"],
    ["compare", "{src}"],
]


def _args(cmd: list[str], src: str, tmp_path: Path) -> list[str]:
    out = str(tmp_path / "out.html")
    return [cmd[0], src, *(a.format(out=out, src=src) for a in cmd[1:])]


@pytest.mark.parametrize("cmd", COMMANDS, ids=lambda c: " ".join(c))
def test_an_empty_file_is_refused_by_every_command(
    cli: Cli, empty: Path, tmp_path: Path, cmd: list[str]
) -> None:
    code, out, err = cli(*_args(cmd, str(empty), tmp_path))
    assert code == 2
    assert out == ""
    assert err.strip() == f"agentgauge: error: {empty}: SOURCE: no trials in this file"
    assert not (tmp_path / "out.html").exists()


def test_blank_lines_only_are_no_trials(cli: Cli, tmp_path: Path) -> None:
    path = tmp_path / "blank.jsonl"
    path.write_text("\n\n   \n")
    code, out, err = cli("show", str(path))
    assert (code, out) == (2, "")
    assert "no trials in this file" in err
    assert "every trial passed" not in out + err


@pytest.mark.parametrize("cmd", COMMANDS, ids=lambda c: " ".join(c))
def test_a_started_run_with_no_trials_says_so(
    cli: Cli, started: str, tmp_path: Path, cmd: list[str]
) -> None:
    code, out, err = cli(*_args(cmd, started, tmp_path))
    assert code == 2
    assert out == ""
    assert err.count("\n") == 1
    assert "run 'waiting' has no trials yet" in err


def test_open_source_refuses_an_empty_source(empty: Path, started: str) -> None:
    with pytest.raises(InputError, match="no trials in this file"):
        open_source(str(empty))
    with pytest.raises(InputError, match="has no trials yet"):
        open_source(started)
    # The Python API reads a SOURCE as the CLI does.
    with pytest.raises(InputError, match="no trials in this file"):
        agentgauge.metrics(str(empty))


def test_the_api_on_no_trials_measures_nothing_and_says_so() -> None:
    report = agentgauge.metrics([]).to_dict()
    assert report["groups"] == []
    assert report["warnings"] == ["no trials: nothing was measured"]
    with pytest.raises(InputError, match="no trials to fit"):
        agentgauge.horizon([])
