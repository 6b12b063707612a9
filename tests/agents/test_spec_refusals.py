"""An agent or environment that cannot work is refused before any trial: one line
naming it, exit 2, no store written (docs/running-agents.md, "Before the first trial:
the preflight"). Real `agentgauge run` processes, from a folder holding the user's
modules, as a user runs them.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import agentgauge

ROOT = Path(__file__).resolve().parents[2]
SUITE = ROOT / "examples" / "counter-suite.yaml"
#: The folder holding the agentgauge under test, so the child runs this code.
PACKAGE_ROOT = str(Path(agentgauge.__file__).resolve().parents[1])


def agentgauge_run(tmp_path: Path, agent: str, *extra: str, suite: Path = SUITE) -> str:
    """``agentgauge run`` in ``tmp_path`` that must fail with one line and exit 2,
    writing nothing; that line."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([PACKAGE_ROOT, str(tmp_path)])}
    out = subprocess.run(
        [sys.executable, "-m", "agentgauge", "run", str(suite), "--agent", agent,
         "--store", "s.db", *extra],
        capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120,
    )  # fmt: skip
    assert out.returncode == 2, out.stdout + out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in out.stderr, out.stderr
    assert not (tmp_path / "s.db").exists()  # not even an empty store
    return lines[0]


BROKEN_MODULES = {
    "syntaxerr": ("def f(session:\n", "SyntaxError: '(' was never closed (syntaxerr.py, line 1)"),
    "importraise": (
        "import os\nraise RuntimeError('no key configured')\n",
        "RuntimeError: no key configured (importraise.py, line 2)",
    ),
}


@pytest.mark.parametrize("module", sorted(BROKEN_MODULES))
def test_an_agent_module_that_raises_at_import(tmp_path: Path, module: str) -> None:
    # Was a Python traceback and exit 1: only ImportError was caught.
    source, said = BROKEN_MODULES[module]
    (tmp_path / f"{module}.py").write_text(source)
    line = agentgauge_run(tmp_path, f"{module}:f")
    spec = f"{module}:f"
    assert (
        line == f"agentgauge: error: --agent: cannot import {module!r} for agent {spec!r}: {said}"
    )


@pytest.mark.parametrize("module", sorted(BROKEN_MODULES))
def test_an_environment_module_that_raises_at_import(tmp_path: Path, module: str) -> None:
    source, said = BROKEN_MODULES[module]
    (tmp_path / f"{module}.py").write_text(source)
    suite = tmp_path / "suite.yaml"
    suite.write_text(
        SUITE.read_text().replace("agentgauge.testing.worlds:make_counter_env", f"{module}:make")
    )
    line = agentgauge_run(tmp_path, "agentgauge.testing.worlds:counting_agent", suite=suite)
    # Where the first task naming it writes environment:, as the suite loader's errors say.
    assert line == (
        f"agentgauge: error: {suite}:10: environment: task 'add-small': cannot load "
        f"environment '{module}:make': {said}"
    )


def test_an_environment_module_without_the_factory_names_the_task_that_names_it(
    tmp_path: Path,
) -> None:
    (tmp_path / "worlds.py").write_text("def other(task, *, variant, seed):\n    pass\n")
    suite = tmp_path / "suite.yaml"
    suite.write_text(
        SUITE.read_text().replace("agentgauge.testing.worlds:make_counter_env", "worlds:make")
    )
    line = agentgauge_run(tmp_path, "agentgauge.testing.worlds:counting_agent", suite=suite)
    assert line.startswith(
        f"agentgauge: error: {suite}:10: environment: task 'add-small': cannot load "
        "environment 'worlds:make': "
    )
    assert "has no attribute 'make'" in line


def test_a_scenario_key_ones_own_world_refuses_names_the_task_and_the_field(
    tmp_path: Path,
) -> None:
    # The counter world declares its user_scenario (replies only): a typo was refused
    # with no file or line, then at the task's line; now at the field's.
    suite = tmp_path / "suite.yaml"
    suite.write_text(
        SUITE.read_text().replace("user_scenario: {replies:", "user_scenario: {replys:")
    )
    line = agentgauge_run(tmp_path, "agentgauge.testing.worlds:counting_agent", suite=suite)
    assert line.startswith(
        f"agentgauge: error: {suite}:20: user_scenario.replys: task 'add-large': unknown key"
    )


@pytest.mark.parametrize(
    ("spec", "said"),
    [
        ("cmd:python 'x", "cannot split cmd:python 'x into a program and its arguments "
         "(No closing quotation)"),
        ("cmd:   ", "cmd: needs a program after the prefix"),
    ],
)  # fmt: skip
def test_a_cmd_spec_without_a_program_to_run(tmp_path: Path, spec: str, said: str) -> None:
    # Was a ValueError traceback (from shlex, or from the adapter's own check), exit 1.
    line = agentgauge_run(tmp_path, spec)
    assert line.startswith("agentgauge: error: --agent: ") and said in line


@pytest.mark.parametrize("name", ["oracle", "careful", "hasty", "ablation"])
def test_a_reference_agent_on_a_suite_of_another_world(tmp_path: Path, name: str) -> None:
    # Each trial was the agent's error ("plays the built-in worlds") and the run a 0%
    # success, exit 0.
    line = agentgauge_run(tmp_path, f"builtin:{name}")
    assert line.startswith(
        f"agentgauge: error: --agent: builtin:{name} plays only the built-in worlds "
        "(retail, functions); task 'add-small' has environment "
        "'agentgauge.testing.worlds:make_counter_env' (and 2 more tasks)"
    )


GENERATORS = """\
import functools

def gen(session):
    yield session.say("hello")

async def agen(session):
    yield await session.say("hello")

class Yielding:
    def __call__(self, session):
        yield 1

obj = Yielding()
part = functools.partial(agen)
"""


@pytest.mark.parametrize(
    ("attr", "kind"),
    [
        ("gen", "a generator function"),
        ("agen", "an async generator function"),
        ("obj", "a generator function"),
        ("part", "an async generator function"),
    ],
)
def test_a_generator_function_as_the_agent(tmp_path: Path, attr: str, kind: str) -> None:
    # Its body never ran, and every trial was "completed" with no error.
    (tmp_path / "genagent.py").write_text(GENERATORS)
    line = agentgauge_run(tmp_path, f"genagent:{attr}")
    assert line.startswith(f"agentgauge: error: --agent: genagent:{attr} is {kind} (it yields)")


def test_an_environment_module_beside_the_suite_is_found_in_the_current_folder(
    tmp_path: Path,
) -> None:
    # An agent's module is looked for in the current folder too (the `agentgauge` script
    # does not put it on the path); a factory's was not: `my_world:make` beside the
    # suite was "No module named 'my_world'" unless PYTHONPATH named the folder.
    (tmp_path / "my_world.py").write_text(
        "from agentgauge.testing.worlds import make_counter_env as make\n"
    )
    suite = tmp_path / "suite.yaml"
    suite.write_text(
        SUITE.read_text().replace("agentgauge.testing.worlds:make_counter_env", "my_world:make")
    )
    env = {**os.environ, "PYTHONPATH": PACKAGE_ROOT}  # the folder is not on the path
    out = subprocess.run(
        # -P: as the `agentgauge` script runs, without the current folder on the path
        # (which `python -m` puts there).
        [sys.executable, "-P", "-m", "agentgauge", "run", str(suite), "--agent",
         "agentgauge.testing.worlds:counting_agent", "--store", "s.db", "--trials", "1",
         "--no-progress"],
        capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "3 trials, success 100.0%" in out.stdout
