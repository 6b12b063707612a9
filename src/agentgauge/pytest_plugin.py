"""agentgauge for teams that live in pytest: agents evaluated as tests (``docs/pytest.md``).

Installed with agentgauge and loaded by pytest through the ``pytest11`` entry
point. It adds:

- the ``agentgauge_eval`` fixture: ``agentgauge_eval.run(tasks, agent, trials=5)``
  runs the agent into a store and returns an `EvalResult` with ``.metrics``,
  ``.check(...)``, ``.check_gates(...)`` and ``.assert_not_worse_than(...)``;
- the ``@pytest.mark.agentgauge(...)`` marker: thresholds (``min_success_rate``
  on a ``bound``, ``pass_hat_k``, ``max_cost_of_pass``, a ``gates`` file and the
  ``baseline`` its non-inferiority gates compare with) checked on every result
  the test produced, after its body passed;
- ``--agentgauge-store PATH`` (keep every run in one SQLite store, for
  ``agentgauge report``/``gate`` later; default: a temporary store per test) and
  ``--agentgauge-trials N`` (trials per task for every evaluation, e.g. fewer in
  a quick CI lane);
- an ``agentgauge`` section in the terminal summary.

pytest imports this module in every session of anyone who has agentgauge
installed, so it imports nothing of agentgauge at module level: the engine
(`agentgauge.testing.pytest_eval`) is loaded by the fixture and the hooks
that need it.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from agentgauge.testing.pytest_eval import EvalResult, Evaluator, MarkerSettings

_RESULTS: pytest.StashKey[list[EvalResult]] = pytest.StashKey()
_EVALUATOR: pytest.StashKey[Evaluator] = pytest.StashKey()
_FIXTURE = "agentgauge_eval"
_MARKER = "agentgauge"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("agentgauge", "agent evaluations (agentgauge)")
    group.addoption(
        "--agentgauge-store",
        metavar="PATH",
        default=None,
        help="SQLite store for every evaluation's run (default: a temporary store per test); "
        "keep it to run `agentgauge report` or `agentgauge gate` on the runs later.",
    )
    group.addoption(
        "--agentgauge-trials",
        metavar="N",
        type=int,
        default=None,
        help="Trials per task for every evaluation, overriding the tests' own settings.",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{_MARKER}(trials=None, min_success_rate=None, bound='value', pass_hat_k=None, "
        "max_cost_of_pass=None, gates=None, baseline=None): agentgauge thresholds checked on "
        "every evaluation the test runs with the agentgauge_eval fixture (baseline: the SOURCE "
        "that the non_inferiority gates of gates compare with).",
    )
    trials = config.getoption("agentgauge_trials")
    if trials is not None and trials < 1:
        raise pytest.UsageError(f"--agentgauge-trials must be at least 1, got {trials}")
    config.stash[_RESULTS] = []


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # A marked test gets the fixture even if it does not name it, so its thresholds
    # are checked (and "ran no evaluation" is reported) instead of silently ignored.
    for item in items:
        names = getattr(item, "fixturenames", None)
        if names is not None and item.get_closest_marker(_MARKER) and _FIXTURE not in names:
            names.append(_FIXTURE)


def _marker_settings(node: pytest.Item | pytest.Collector) -> MarkerSettings | None:
    """The test's markers merged, closest first: a module's or class's
    ``@pytest.mark.agentgauge(min_success_rate=...)`` holds as well for a test with a
    marker of its own (``trials=2``), which replaces only the arguments it gives.
    ``get_closest_marker`` read the test's marker alone, silently dropping the rest.
    Relative paths in them are read from the directory pytest runs in, as the store's."""
    from agentgauge.testing.pytest_eval import marker_settings

    markers = list(node.iter_markers(_MARKER))  # the test's own first, the module's last
    if not markers:
        return None
    kwargs: dict[str, object] = {}
    for marker in reversed(markers):
        kwargs.update(marker.kwargs)
    root = node.config.invocation_params.dir
    return marker_settings([a for m in markers for a in m.args], kwargs, root=root)


@pytest.fixture
def agentgauge_eval(request: pytest.FixtureRequest) -> Evaluator:
    """Run agents over tasks and check the results: ``agentgauge_eval.run(tasks, agent)``."""
    from agentgauge.testing.pytest_eval import Evaluator

    config = request.config
    settings = _marker_settings(request.node)
    store_option = config.getoption("agentgauge_store")

    def store() -> Path:
        if store_option:
            return Path(config.invocation_params.dir, store_option).resolve()
        tmp: Path = request.getfixturevalue("tmp_path")
        return tmp / "agentgauge.db"

    evaluator = Evaluator(
        store=store,
        nodeid=request.node.nodeid,
        name=request.node.name,
        trials_override=config.getoption("agentgauge_trials"),
        marker=settings,
        registry=config.stash.get(_RESULTS, None),
    )
    request.node.stash[_EVALUATOR] = evaluator
    return evaluator


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> object:
    # The marker's thresholds are checked once the body has passed (a failing body
    # raises out of the yield and is reported as it is).
    outcome = yield
    evaluator = item.stash.get(_EVALUATOR, None)
    if evaluator is not None:
        evaluator.apply_marker()
    return outcome


def pytest_terminal_summary(
    terminalreporter: pytest.TerminalReporter, config: pytest.Config
) -> None:
    results = config.stash.get(_RESULTS, None)
    if not results:
        return
    from agentgauge.testing.pytest_eval import summary_lines

    terminalreporter.section("agentgauge")
    for line in summary_lines(results):
        terminalreporter.write_line(line)
