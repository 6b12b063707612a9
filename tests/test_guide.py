"""docs/guide-is-b-better.md says "every figure below is what the commands print on a
fresh make demo": each of its command blocks followed by an output block is run here,
against a real demo store, and every line of the output it quotes must be printed.

The quoted figures had drifted (a p-value's test renamed, a MOVER bound moved by a
tenth of a point, a gate's value printed to four digits) with nothing to notice.

docs/show.md's sample of one trial is checked on the same demo, line for line: it
had kept a grade's evidence out of the sample that the program printed raw.
"""

from __future__ import annotations

import io
import re
import shlex
import shutil
from pathlib import Path

import pytest
from rich.console import Console
from tests.conftest import ROOT, Cli

from agentgauge.demo import run_demo

GUIDE = ROOT / "docs" / "guide-is-b-better.md"

#: A fenced shell block, then (after blank lines only) a fenced block with no language:
#: the commands and what they print.
_PAIR = re.compile(r"```sh\n([^`]*)```\n\s*```\n([^`]*)```")


def _commands(block: str) -> list[list[str]]:
    """The block's commands as argument lists (continuation lines joined)."""
    joined = block.replace("\\\n", " ")
    return [shlex.split(line) for line in joined.splitlines() if line.strip()]


def _flat(text: str) -> str:
    return " ".join(text.split())


def test_the_guide_pairs_commands_with_outputs() -> None:
    pairs = _PAIR.findall(GUIDE.read_text())
    # compare, the seed-to-seed compare, the margin, two plans and the gate.
    assert len(pairs) == 6
    assert all(cmd.strip().startswith("agentgauge ") for cmd, _ in pairs)


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh demo, made once for the module (it takes a minute)."""
    # The guide's layout: the demo's folder beside a copy of examples/ (its gate reads
    # ../examples/gates.yaml from inside agentgauge-demo).
    root = tmp_path_factory.mktemp("guide")
    folder = root / "agentgauge-demo"
    run_demo(folder, console=Console(file=io.StringIO()), progress=False)
    shutil.copytree(ROOT / "examples", root / "examples")
    return folder


@pytest.mark.slow
def test_every_quoted_output_is_what_the_commands_print(
    demo: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(demo)
    monkeypatch.setenv("COLUMNS", "200")
    for commands, quoted in _PAIR.findall(GUIDE.read_text()):
        printed = ""
        for argv in _commands(commands):
            assert argv[0] == "agentgauge", argv
            code, out, err = cli(*argv[1:])
            assert code == 0, (argv, err)
            printed += out + err
        lines = {_flat(line) for line in printed.splitlines()}
        for line in quoted.splitlines():
            if line.strip():  # the whole line, not a prefix of one (0.813 of 0.8133)
                assert _flat(line) in lines, (commands, line, printed)


@pytest.mark.slow
def test_the_show_page_sample_is_what_show_prints(
    demo: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    page = (ROOT / "docs" / "show.md").read_text()
    section = page.split("## One task, one trial", 1)[1]
    assert "in a terminal 100 columns wide" in section.split("```", 1)[0]
    block = section.split("```\n", 2)[1]
    command, _, quoted = block.partition("\n")
    argv = shlex.split(command.removeprefix("$ "))
    assert argv[:2] == ["agentgauge", "show"] and argv[2].startswith("demo/")
    monkeypatch.chdir(demo.parent)
    monkeypatch.setenv("COLUMNS", "100")
    code, out, err = cli(*argv[1:2], argv[2].replace("demo/", "agentgauge-demo/", 1), *argv[3:])
    assert code == 0, err
    printed = [line.rstrip() for line in out.splitlines()]
    assert printed == quoted.splitlines()
