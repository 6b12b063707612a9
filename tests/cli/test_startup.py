"""The command starts with its own module only: a command does not pay for the others'
imports (the metrics and scipy for ``runs``, aiohttp for ``import``), and every command
is still found by its name, listed by ``--help`` and suggested for a misspelling."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import typer

from agentgauge.cli import _command_modules, _register_commands, app

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "fixtures" / "otel"
#: Modules a command should import only when it uses them.
HEAVY = ("aiohttp", "scipy.optimize", "scipy.stats", "agentgauge.api", "agentgauge.viewer")

_PROBE = """
import json, sys
from agentgauge.cli import main
heavy = json.loads(sys.argv[2])
sys.argv = ["agentgauge", *json.loads(sys.argv[1])]
code = 0
try:
    main()
except SystemExit as exc:
    code = exc.code or 0
print(json.dumps({"code": code, "loaded": sorted(m for m in heavy if m in sys.modules)}),
      file=sys.stderr)
"""


#: What help text needs none of: the numerics, the store, the trial models, YAML.
#: (``agentgauge.viewer`` itself is its constants: the app is `agentgauge.viewer.app`.)
NOT_FOR_HELP = (
    *(m for m in HEAVY if m != "agentgauge.viewer"),
    *("agentgauge.viewer.app", "starlette", "scipy", "numpy", "yaml"),
    *("agentgauge.schema", "agentgauge.store.database"),
)


def _probe(*args: str, heavy: tuple[str, ...] = HEAVY) -> tuple[int, list[str], str]:
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, json.dumps(args), json.dumps(heavy)],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "200"},
        timeout=120,
    )
    report = json.loads(done.stderr.strip().splitlines()[-1])
    return int(report["code"]), report["loaded"], done.stdout


def _commands() -> list[str]:
    """Every command, as the app has them once all command modules are imported."""
    _register_commands(["--help"])
    return sorted(typer.main.get_command(app).commands)  # type: ignore[attr-defined]


def test_every_command_is_listed_and_found_by_its_name() -> None:
    names = _commands()
    # One command per module, under the module's name but for the keyword "import".
    assert sorted(names) == sorted("import" if m == "imports" else m for m in _command_modules())
    # Help, the list or one command's, loads no command's machinery (0.9 s before).
    code, loaded, listing = _probe("--help", heavy=NOT_FOR_HELP)
    assert code == 0 and loaded == []
    for name in names:
        assert f"│ {name} " in listing
        code, loaded, out = _probe(name, "--help", heavy=NOT_FOR_HELP)
        assert code == 0, name
        assert f"Usage: agentgauge {name} " in out
        assert loaded == [], name


def test_a_misspelt_command_is_still_suggested() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "agentgauge", "improt"], capture_output=True, text=True
    )
    assert done.returncode == 2
    assert "Did you mean 'import'?" in done.stderr


@pytest.mark.parametrize(
    ("args", "allowed"),
    [
        (("runs", "--help"), ()),
        (("import", "--help"), ()),
        (("metrics", "--help"), ()),
    ],
)
def test_a_command_imports_only_what_it_uses(
    args: tuple[str, ...], allowed: tuple[str, ...]
) -> None:
    code, loaded, _ = _probe(*args)
    assert code == 0
    assert [m for m in loaded if m not in allowed] == []


def test_importing_a_trace_file_loads_no_http_client(tmp_path: Path) -> None:
    # The importer, the suite's code graders and the store: no aiohttp (the judge's
    # client imports it when a judge is configured), no scipy.optimize.
    code, loaded, _ = _probe(
        "import",
        "otel",
        str(FIXTURE / "genai.jsonl"),
        "--suite",
        str(FIXTURE / "suite.yaml"),
        "--store",
        str(tmp_path / "s.db"),
    )
    assert code == 0
    assert loaded == []
