"""Every help text reaches the screen whole. Under typer's "rich" markup a "[base]" or
"[on a TTY]" in an option's help was read as a style tag and silently dropped, and a
docstring's line breaks were kept, leaving ragged half-lines in the command list."""

from __future__ import annotations

import re
from typing import Any

import pytest
import typer
from tests.conftest import Cli
from typer.testing import CliRunner

from agentgauge.cli import _register_commands, app


def _words(text: str) -> str:
    return " ".join(re.sub(r"[│╭╮╰╯─]", " ", text).split())


def _commands() -> list[tuple[list[str], Any]]:
    """Each command and subcommand (``import otel``...), as click objects (typer's own
    copy of click, so by what they have, not their class)."""
    _register_commands(None)  # every command module
    group: Any = typer.main.get_command(app)
    out: list[tuple[list[str], Any]] = []
    for name, command in sorted(group.commands.items()):
        out.append(([name], command))
        for sub, c in sorted(getattr(command, "commands", {}).items()):
            out.append(([name, sub], c))
    return out


def test_every_option_help_is_shown_whole() -> None:
    runner = CliRunner()
    checked = 0
    for path, command in _commands():
        result = runner.invoke(app, [*path, "--help"], env={"COLUMNS": "400"})
        assert result.exit_code == 0, (path, result.output)
        shown = _words(result.output)
        for param in command.params:
            help_text = getattr(param, "help", None)
            if help_text:
                # Backticks are markdown's code marks: shown as code, not as characters.
                assert _words(help_text.replace("`", "")) in shown, (path, param.name)
                checked += 1
    assert checked > 100  # every command's options, not a few


def test_the_command_list_shows_each_summary_on_its_own_lines() -> None:
    result = CliRunner().invoke(app, ["--help"], env={"COLUMNS": "400"})
    assert result.exit_code == 0
    for path, command in _commands():
        if len(path) > 1:
            continue
        summary = _words((command.help or "").split("\n\n")[0].replace("`", ""))
        # At 400 columns a summary is one row of the table: no break where the
        # docstring had one.
        [row] = [line for line in result.output.splitlines() if f" {path[0]} " in line[:20]]
        assert summary in _words(row), path


@pytest.mark.parametrize("columns", ["60", "80"])
def test_every_option_name_is_shown_whole_on_a_narrow_terminal(
    cli: Cli, monkeypatch: pytest.MonkeyPatch, columns: str
) -> None:
    # typer's boxed help shrank its columns alike: at 80 columns `run --help` read
    # "--include-held…", at 60 "--concurr…" and "openai:MOD…". Below 100 columns a
    # command's help is click's plain one, which wraps and never cuts.
    monkeypatch.setenv("COLUMNS", columns)
    for path, command in _commands():
        code, out, err = cli(*path, "--help")
        assert code == 0, (path, err)
        assert "…" not in out, path
        for param in command.params:
            for name in [n for n in (*param.opts, *param.secondary_opts) if n[0] == "-"]:
                assert re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", out), (path, name)
    code, out, _ = cli("--help")  # the command list stays boxed: summaries wrap whole
    listing = out[out.index("╭─ Commands") :]
    assert code == 0 and "..." not in listing and "…" not in listing
