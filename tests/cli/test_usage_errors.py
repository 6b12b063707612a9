"""A usage error click finds is one line, ``agentgauge: error: ...`` and exit 2, as
every other bad input is: typer drew it as a usage line, a hint and a boxed panel."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.conftest import Cli

SUITE = Path(__file__).resolve().parents[2] / "examples" / "counter-suite.yaml"


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (
            ["run", str(SUITE), "--agent", "builtin:oracle", "--trails", "3"],
            "agentgauge: error: No such option: --trails (Possible options: --prices, "
            "--trials); see 'agentgauge run --help'",
        ),
        (
            ["runz"],
            "agentgauge: error: No such command 'runz'. Did you mean 'run', 'runs'? "
            "See 'agentgauge --help'.",
        ),
        (
            ["metrics"],
            "agentgauge: error: Missing argument 'SOURCE'; see 'agentgauge metrics --help'",
        ),
        (
            ["metrics", "a.jsonl", "--seed", "-1"],
            "agentgauge: error: Invalid value for '--seed': Input should be greater than or "
            "equal to 0; see 'agentgauge metrics --help'",
        ),
    ],
)
def test_a_usage_error_is_one_line_and_exit_2(cli: Cli, args: list[str], line: str) -> None:
    code, out, err = cli(*args)
    assert code == 2 and out == ""
    assert err == line + "\n"


def test_a_bare_command_still_prints_its_help(cli: Cli) -> None:
    _, out, err = cli()
    assert "Usage: agentgauge" in out + err and "error" not in err
