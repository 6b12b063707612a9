"""Agent evaluations inside pytest: the engine behind `agentgauge.pytest_plugin`.

An `Evaluator` (the ``agentgauge_eval`` fixture) runs an agent over tasks with
`agentgauge.run` into a store, computes `agentgauge.metrics` on the run, and
returns an `EvalResult`. Every check on a result — `EvalResult.check`,
`EvalResult.check_gates`, `EvalResult.assert_not_worse_than`, and the
thresholds of an ``@pytest.mark.agentgauge`` marker — is a gate config handed
to `agentgauge.api.run_gates`, the engine of ``agentgauge gate``: same
groups, same variants, same null-fails-closed rule, and failures worded as
that command words them (``gate failed: GATE (GROUP): DETAIL``, one line each).

The plugin module imports this one only when a test uses the fixture.
"""

from __future__ import annotations

import inspect
import os
import re
import secrets
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NoReturn

import pytest
from pydantic import ValidationError

from agentgauge.display import visible
from agentgauge.errors import (
    AgentgaugeError,
    InputError,
    RunEnded,
    RunInterrupted,
    first_error,
)
from agentgauge.report.formats import no_spread_count, no_spread_tasks
from agentgauge.report.gates import (
    K_METRICS,
    Gate,
    GateConfig,
    GateResult,
    gate_config,
    gate_defect,
    gate_ks,
)
from agentgauge.schema import Trial

__all__ = [
    "DEFAULT_TRIALS",
    "EvalResult",
    "Evaluator",
    "MarkerSettings",
    "marker_settings",
    "summary_lines",
]

DEFAULT_TRIALS = 5
"""Trials per task when neither the call, the marker nor ``--agentgauge-trials`` says."""

#: pass^k is reported at these k (as ``agentgauge metrics`` does) up to the trials per
#: task, plus any k the marker asks for.
_BASE_K = (1, 2, 4)

_MARKER_ARGS = (
    "trials",
    "min_success_rate",
    "bound",
    "pass_hat_k",
    "max_cost_of_pass",
    "gates",
    "baseline",
)

_NEEDS_BASELINE = (
    "a non_inferiority gate needs a baseline: pass baseline=... (a result or a SOURCE)"
)

GateSpec = GateConfig | Mapping[str, Any] | str | Path
"""A gate config: the model, its dict form, or the path of a gates YAML file."""


def _fail(message: str) -> NoReturn:
    # pytrace=False: the message is the whole story; a traceback into the plugin is noise.
    # `from None`: raised while handling an agentgauge error, it would otherwise come
    # with "During handling of the above exception, another exception occurred".
    raise pytest.fail.Exception(message, pytrace=False) from None


def _error(exc: AgentgaugeError, names: Mapping[str, str] | None = None) -> NoReturn:
    """Fail the test with the error; ``names`` maps a field the engine names (the
    option of the command it also serves: ``--trials``) to the argument the test
    passed (``trials``), as `agentgauge.cli.common.options_typed` maps the other way."""
    names = names or {}
    if isinstance(exc, InputError) and exc.field is not None and exc.field in names:
        exc = InputError(exc.reason, file=exc.file, line=exc.line, field=names[exc.field])
    _fail(f"agentgauge: error: {exc}")


#: The field `agentgauge.run_gates` names its ``baseline`` with, and the argument.
_BASELINE = {"--baseline": "baseline"}


def _run_arguments() -> dict[str, str]:
    """``--run-id`` -> ``run_id`` for every argument of `agentgauge.run` (``trials``,
    ``seed``, ``variants``, ``timeout``...): its refusals name the command's options."""
    from agentgauge.harness.runner import arun

    return {f"--{name.replace('_', '-')}": name for name in inspect.signature(arun).parameters}


def _ended(exc: RunEnded, store: Path) -> str:
    """Why a run stopped (the circuit breaker, Ctrl-C), with what ``agentgauge run``
    prints at its end: the errors by class, each with its most frequent messages and
    a trial that had them, and where the run is stored to look further. The stop
    alone ("the first 10 trials were all infra errors") named no cause."""
    return "\n".join([f"agentgauge: error: {exc.reason}", *_error_lines(store, exc.run_id)])


def _error_lines(store: Path, run_id: str, *, always: bool = True) -> list[str]:
    """What ``agentgauge run`` prints at its end: the run's errors by class, each with
    its most frequent messages and a trial that had them, and where the run is stored
    to look further (unless no trial erred and not ``always``)."""
    from agentgauge.display import shell_command
    from agentgauge.harness.error_summary import (
        one_line,
        summarize_errors,
        summarize_ungraded,
        ungraded_lines,
    )
    from agentgauge.schema import Task
    from agentgauge.store import Store

    tasks: dict[str, Task] = {}
    try:
        with Store(store, readonly=True) as db:
            trials = db.trials(run_id, events=False, grades=True)
            tasks = {t.id: t for t in db.get_tasks(run_id)}
    except AgentgaugeError:  # nothing saved, or no store yet: the stop is the story
        trials = []
    lines = []
    for cls in summarize_errors(trials, per_class=3):
        lines.append(f"  {cls.counted}:")
        for m in cls.messages:
            lines.append(f"    {m.count} x {one_line(m.text)}  (e.g. {visible(m.example)})")
    # Trials counted as failures that no grader judged failed (a grader raised, a
    # required grade was unknown), as `agentgauge run` says them at its end.
    regrade = shell_command(["agentgauge", "grade", f"{store}:{run_id}", "--activate"])
    for header, messages, advice in ungraded_lines(*summarize_ungraded(trials, tasks), regrade):
        lines.append(f"  {header}:")
        for m in messages:
            lines.append(f"    {m.count} x {one_line(m.text)}  (e.g. {visible(m.example)})")
        lines.append(f"    {advice}")
    if trials and (lines or always):
        source = shell_command([f"{store}:{run_id}"])
        lines.append(f"  the run is stored: agentgauge show {source} --failed")
    return lines


def _gate(fields: Mapping[str, Any], names: Mapping[str, str] | None = None) -> Gate:
    """One gate from keyword arguments, checked by the rules of a gates file
    (`validate_gate_config`: the model, then `gate_defect`); a mistake fails the test
    naming the argument (``names`` maps a gate key to the argument that gave it; a
    mistake of the whole gate, which pydantic locates nowhere, is the argument's when
    one gave it all: ``pass_hat_k={2: None}`` is ``pass_hat_k[2]``)."""
    names = names or {}
    try:
        gate = Gate.model_validate(dict(fields))
    except ValidationError as exc:
        name, reason = first_error(exc, metadata_hint=False)
        given = set(names.values())
        if name is None and len(given) == 1:
            _error(InputError(reason, field=given.pop()))
        _error(InputError(reason, field=name), names)
    defect = gate_defect(gate, None)
    if defect is not None:
        key, reason = defect
        _error(InputError(reason, field=key), names)
    return gate


def _config(spec: GateSpec, argument: str = "config") -> GateConfig:
    """A `GateConfig` from any accepted form (`gate_config`), checked as `agentgauge
    gate` checks a gates file; bad input becomes a one-line test failure naming the
    ``argument`` that gave it."""
    try:
        return gate_config(spec)
    except AgentgaugeError as exc:
        _error(exc, {"--config": argument})


@dataclass
class EvalResult:
    """One evaluation run by the fixture: where it is stored and what it measured."""

    run_id: str
    """The run's id in the store."""
    store: Path
    """The SQLite store holding the run."""
    metrics: dict[str, Any]
    """The ``agentgauge.metrics/1`` object of the run (``metrics --json``)."""
    nodeid: str = ""
    """The test that produced it."""
    gate_results: list[GateResult] = field(default_factory=list)
    """Every gate checked on this result so far (shown in the terminal summary)."""
    _trials: list[Trial] | None = field(default=None, repr=False)

    @property
    def source(self) -> str:
        """``DB:RUN_ID``, the SOURCE that ``agentgauge metrics/report/gate`` accept."""
        return f"{self.store}:{self.run_id}"

    @property
    def trials(self) -> list[Trial]:
        """The stored trials, with transcripts and grades (read once, on first use)."""
        if self._trials is None:
            from agentgauge.sources import open_source

            self._trials = open_source(self.source).trials
        return self._trials

    # -- checks ---------------------------------------------------------------------------

    def evaluate(
        self, config: GateSpec, baseline: EvalResult | str | None = None
    ) -> list[GateResult]:
        """The gate results without failing the test (recorded for the summary)."""
        from agentgauge.api import run_gates

        cfg = _config(config)
        if baseline is None and any(g.type == "non_inferiority" for g in cfg.gates):
            _error(InputError(_NEEDS_BASELINE))
        base = baseline.source if isinstance(baseline, EvalResult) else baseline
        try:
            results = run_gates(self.source, cfg, baseline=base)
        except AgentgaugeError as exc:
            _error(exc, _BASELINE)
        self.gate_results.extend(results)
        return results

    def check_gates(self, config: GateSpec, baseline: EvalResult | str | None = None) -> EvalResult:
        """Fail the test with one line per failed gate of ``config`` (a gates file or its dict).

        ``baseline`` (another result or a SOURCE) is what non-inferiority gates compare with.
        """
        _raise_failed([(self, self.evaluate(config, baseline))])
        return self

    def check(
        self,
        metric: str,
        min: float | None = None,  # the gate file's own words
        max: float | None = None,
        bound: str = "value",
        k: int | None = None,
        where: Mapping[str, str] | None = None,
    ) -> EvalResult:
        """Fail the test unless ``metric`` (its point value or a CI bound) is within limits.

        ``metric`` is a dotted path into a metrics group (``success_rate``,
        ``cost.cost_of_pass``, ``latency_s.p95``); ``k`` picks pass^k or pass@k
        (``check("pass_hat_k", min=0.5, k=4)``). Returns the result, so checks chain.
        """
        if k is not None:
            if metric not in K_METRICS:
                what = "pass_hat_k and pass_at_k (and their _se)"
                _error(InputError(f"k applies to {what}, not {metric!r}"))
            if isinstance(k, bool) or not isinstance(k, int) or k < 1:
                _error(InputError(f"k must be a positive integer, got {k!r}", field="k"))
            metric = f"{metric}.{k}"
        elif metric in K_METRICS:
            _error(InputError(f"{metric!r} needs a k: check({metric!r}, k=K, ...)", field="k"))
        fields = {"metric": metric, "min": min, "max": max, "bound": bound}
        gate = _gate({**fields, "where": dict(where or {})})
        return self.check_gates(GateConfig(gates=[gate]))

    def assert_not_worse_than(self, baseline: EvalResult | str, margin: float = 0.05) -> EvalResult:
        """Fail unless this run is non-inferior to ``baseline`` by ``margin``.

        The paired difference B − A over the tasks both ran must have its 95%
        CI lower bound above −margin, the rule of `agentgauge.compare`, over at
        least 6 shared tasks (or families): fewer cannot show it at 95%.
        """
        gate = _gate({"type": "non_inferiority", "margin": margin})
        return self.check_gates(GateConfig(gates=[gate]), baseline=baseline)


def _raise_failed(checked: Sequence[tuple[EvalResult, Sequence[GateResult]]]) -> None:
    """Fail the test naming each failed gate of the ``(result, its gate results)``
    pairs; a failing result whose trials erred says so, with the errors' messages and
    where to look ("success_rate = 0" alone gave no cause)."""
    failed = [r for _, results in checked for r in results if not r.passed]
    if not failed:
        return
    total = sum(len(results) for _, results in checked)
    lines = [_failed_line(r) for r in failed]
    for evaluated, results in checked:
        if not all(r.passed for r in results):
            lines += _error_lines(evaluated.store, evaluated.run_id, always=False)
    _fail(f"{len(failed)} of {total} gate checks failed\n" + "\n".join(lines))


def _failed_line(r: GateResult) -> str:
    # As `agentgauge gate` prints a failed gate (agentgauge.cli.gate), controls in the
    # run's labels (a model's name) made visible.
    return visible(f"gate failed: {r.gate} ({r.group}): {r.detail}")


def _summary_line(r: GateResult) -> str:
    # As `agentgauge gate` prints every gate.
    return visible(f"{'PASS' if r.passed else 'FAIL'} {r.gate} — {r.group}: {r.detail}")


def _metrics(source: str, ks: Iterable[int]) -> dict[str, Any]:
    from agentgauge.api import metrics

    return metrics(source, k=sorted(ks)).to_dict()


# --------------------------------------------------------------------------- the marker


@dataclass(frozen=True)
class MarkerSettings:
    """What ``@pytest.mark.agentgauge(...)`` asks for."""

    trials: int | None
    thresholds: GateConfig | None
    """``min_success_rate``, ``pass_hat_k`` and ``max_cost_of_pass``: on the base
    variant always, whatever the ``gates`` file reads."""
    gates: GateConfig | None = None
    """The config of ``gates=``, with its own ``variants``."""
    baseline: str | None = None
    """The SOURCE that the non-inferiority gates of ``gates`` compare with."""

    @property
    def ks(self) -> set[int]:
        configs = (self.thresholds, self.gates)
        return {k for config in configs if config is not None for k in gate_ks(config)}


def _anchored(spec: Any, root: Path | None) -> Any:
    """A relative path in the marker (``gates``, ``baseline``: a file, ``DB:RUN_ID``, a
    selector after it) joined to ``root``, the directory pytest runs in; anything else
    as it is. Read when it is checked, it followed the working directory, which a test
    may have changed (``monkeypatch.chdir``): "cannot read file"."""
    if root is None or not isinstance(spec, str | Path) or os.path.isabs(spec):
        return spec
    # os.path.join, not Path: a SOURCE is text (``runs.db:RUN#agent=A``), kept as written.
    joined = os.path.join(root, spec)
    return Path(joined) if isinstance(spec, Path) else joined


def marker_settings(
    args: Sequence[Any], kwargs: Mapping[str, Any], *, root: Path | None = None
) -> MarkerSettings:
    """Validate the marker's arguments and turn its thresholds into `GateConfig`s.

    ``min_success_rate`` (on ``bound``: value, ci_lower or ci_upper),
    ``pass_hat_k={k: min}`` and ``max_cost_of_pass`` (one config, on the base
    variant) and the gates of ``gates`` (a gates file, dict or `GateConfig`, on the
    variants it names) all apply to every result the test produces; ``baseline`` (a
    SOURCE) is what their non-inferiority gates compare with. Two configs, not one:
    a file's ``variants: [all]`` made ``min_success_rate`` read every variant. Every
    threshold is checked by the rules of a gates file
    (`validate_gate_config`); a mistake is a one-line failure naming the argument.
    Relative ``gates`` and ``baseline`` paths are read from ``root`` (`_anchored`).
    """
    # The prefix every agentgauge mistake in a test has (`_error`), then what was wrong.
    where = "agentgauge: error: @pytest.mark.agentgauge"
    if args:
        _fail(f"{where}: takes keyword arguments only ({', '.join(_MARKER_ARGS)})")
    unknown = sorted(set(kwargs) - set(_MARKER_ARGS))
    if unknown:
        _fail(f"{where}: unknown argument {unknown[0]!r} (known: {', '.join(_MARKER_ARGS)})")
    trials = kwargs.get("trials")
    if trials is not None and (
        not isinstance(trials, int) or isinstance(trials, bool) or trials < 1
    ):
        _fail(f"{where}: trials must be a positive integer, got {trials!r}")
    bound = kwargs.get("bound", "value")
    gates: list[Gate] = []
    if kwargs.get("min_success_rate") is not None:
        fields = {"metric": "success_rate", "min": kwargs["min_success_rate"], "bound": bound}
        gates.append(_gate(fields, {"min": "min_success_rate"}))
    elif "bound" in kwargs:
        _fail(f"{where}: bound applies to min_success_rate, which is not given")
    pass_hat = kwargs.get("pass_hat_k") or {}
    if not isinstance(pass_hat, Mapping):
        _fail(f"{where}: pass_hat_k must be a dict {{k: minimum}}, got {pass_hat!r}")
    for k, minimum in pass_hat.items():
        if not isinstance(k, int) or isinstance(k, bool) or k < 1:
            _fail(f"{where}: pass_hat_k keys are k >= 1, got {k!r}")
        fields = {"metric": f"pass_hat_k.{k}", "min": minimum}
        gates.append(_gate(fields, {"min": f"pass_hat_k[{k}]"}))
    if kwargs.get("max_cost_of_pass") is not None:
        fields = {"metric": "cost.cost_of_pass", "max": kwargs["max_cost_of_pass"]}
        gates.append(_gate(fields, {"max": "max_cost_of_pass"}))
    gates_spec = kwargs.get("gates")
    extra = None if gates_spec is None else _config(_anchored(gates_spec, root), "gates")
    baseline = _anchored(kwargs.get("baseline"), root)
    if baseline is not None and not isinstance(baseline, str | Path):
        _fail(f"{where}: baseline is a SOURCE (a trials file or DB:RUN_ID), got {baseline!r}")
    comparing = extra is not None and any(g.type == "non_inferiority" for g in extra.gates)
    if comparing and baseline is None:
        # Said before the test runs, not after it: the marker is where the fix goes.
        _fail(
            f"{where}: a non_inferiority gate needs a baseline: "
            "add baseline=SOURCE (a trials file or DB:RUN_ID) to the marker"
        )
    if baseline is not None and not comparing:
        _fail(f"{where}: baseline is for non_inferiority gates, and gates= has none")
    return MarkerSettings(
        trials=trials,
        thresholds=GateConfig(gates=gates) if gates else None,
        gates=extra,
        baseline=None if baseline is None else str(baseline),
    )


# --------------------------------------------------------------------------- the fixture


class Evaluator:
    """The ``agentgauge_eval`` fixture: runs evaluations for one test and keeps their results."""

    def __init__(
        self,
        *,
        store: Callable[[], Path],
        nodeid: str,
        name: str,
        trials_override: int | None = None,
        marker: MarkerSettings | None = None,
        registry: list[EvalResult] | None = None,
    ) -> None:
        self._store = store
        self.nodeid = nodeid
        self.name = name
        self.trials_override = trials_override
        self.marker = marker
        self.results: list[EvalResult] = []
        self._registry = registry if registry is not None else []

    def run(
        self,
        tasks_or_suite: Any,
        agent: Any,
        trials: int | None = None,
        variants: Sequence[str] | str = ("base",),
        seed: int = 0,
        **kwargs: Any,
    ) -> EvalResult:
        """Run ``agent`` over ``tasks_or_suite`` and return the measured `EvalResult`.

        ``tasks_or_suite``: a list of `Task` objects or dicts, a suite, or a
        suite path/spec (as `agentgauge.run` takes). ``agent``: a Python
        function of a session, or an agent spec. Trials per task:
        ``--agentgauge-trials`` if given, else ``trials``, else the marker's,
        else 5. Other keyword arguments go to `agentgauge.run` (``timeout``,
        ``concurrency``, ``grader``, ``env_factory``, ``run_id``, ``store``...).
        """
        from agentgauge.harness.runner import TrialErrorsWarning, run
        from agentgauge.suite import Suite, as_suite

        n = self.trials_override or trials
        if n is None:
            n = (self.marker.trials if self.marker else None) or DEFAULT_TRIALS
        store = Path(kwargs.pop("store", None) or self._store())
        run_id = kwargs.pop("run_id", None) or self._new_run_id()
        try:
            suite = as_suite(tasks_or_suite)
            if isinstance(suite, Suite) and suite.name == "python":
                # Tasks written in the test: name the suite after it (`agentgauge runs` shows it).
                suite = replace(suite, name=self.name)
            # The test's own report shows the errors (`_error_lines`): not twice.
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", TrialErrorsWarning)
                run(
                    suite,
                    agent,
                    trials=n,
                    variants=variants,
                    seed=seed,
                    store=store,
                    run_id=run_id,
                    progress=False,
                    **kwargs,
                )
            # pass^4 of 3 trials a task is null by construction: the summary read "pass^4 -".
            ks = {k for k in _BASE_K if k <= n} | (self.marker.ks if self.marker else set())
            measured = _metrics(f"{store}:{run_id}", ks)
        except RunInterrupted as exc:
            # Ctrl-C ends the session, as it does any test: failing this one let pytest
            # go on to run every evaluation left. pytest reports the interrupt with
            # this message and exits 2.
            raise KeyboardInterrupt(_ended(exc, store)) from None
        except RunEnded as exc:
            _fail(_ended(exc, store))
        except AgentgaugeError as exc:
            _error(exc, _run_arguments())
        result = EvalResult(run_id=run_id, store=store, metrics=measured, nodeid=self.nodeid)
        self.results.append(result)
        self._registry.append(result)
        return result

    def apply_marker(self) -> None:
        """Check the marker's thresholds on every result of the test (after its body passed);
        a marked test that ran no evaluation fails, with thresholds or without (a marker
        of ``trials=`` alone let it pass)."""
        if self.marker is None:
            return
        if not self.results:
            _fail(
                "agentgauge: error: marked @pytest.mark.agentgauge but ran no evaluation: "
                "call agentgauge_eval.run(...) in the test"
            )
        marker = self.marker
        checks: list[tuple[GateConfig, str | None]] = []
        if marker.thresholds is not None:
            checks.append((marker.thresholds, None))
        if marker.gates is not None:
            checks.append((marker.gates, marker.baseline))
        if not checks:
            return
        _raise_failed(
            [
                (result, [r for c, base in checks for r in result.evaluate(c, base)])
                for result in self.results
            ]
        )

    def _new_run_id(self) -> str:
        # The test's name, then time and randomness: unique across sessions sharing a
        # --agentgauge-store, where a repeated id would resume (and skip) an old run.
        slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", self.name).strip("-")[:60] or "test"
        return f"{slug}-{datetime.now(UTC):%Y%m%d-%H%M%S}-{secrets.token_hex(3)}"


# --------------------------------------------------------------------------- the summary


def _task_average(
    value: float | None, se: float | None, n_tasks: int | None, why: str | None = None
) -> str:
    """pass^k ± its SE across tasks, or the count of tasks where there is no spread;
    ``-`` and why (the metrics' reason) where it is null."""
    if value is None:
        return "-" + (f" ({why})" if why else "")
    count = no_spread_tasks(value, se, n_tasks)
    if count is not None:
        return f"{value:.2f} {count}"
    return f"{value:.2f}" if se is None else f"{value:.2f} ± {se:.2f}"


def _success(group: Mapping[str, Any]) -> str:
    """The success rate as the terminal's tables give it: ± its SE; the count of trials
    where the SE is 0 (``0.000 (0/4)``: no spread, not certainty); the value alone where
    nobody could estimate an SE (one task), not ``± -``."""
    sr = group.get("success_rate") or {}
    value, se = sr.get("value"), sr.get("se")
    if value is None:
        return "-"
    count = no_spread_count(se, group.get("n_successes"), group.get("n_trials"))
    if count is not None:
        return f"{value:.3f} {count}"
    return f"{value:.3f}" if se is None else f"{value:.3f} ± {se:.3f}"


def _interval(group: Mapping[str, Any]) -> str:
    """``95% CI LO–HI``, or, where none could be estimated, ``no 95% CI`` and why (the
    metrics' own reason: ``fewer than 2 clusters: ...``), not ``95% CI -–-``."""
    ci = (group.get("success_rate") or {}).get("ci95")
    if ci is not None:
        return f"95% CI {ci[0]:.3f}–{ci[1]:.3f}"
    why = (group.get("null_reasons") or {}).get("ci95")
    return "no 95% CI" + (f": {why}" if why else "")


def _count(n: int | None, unit: str) -> str:
    return f"{'-' if n is None else n} {unit}{'' if n == 1 else 's'}"


def summary_lines(results: Sequence[EvalResult]) -> list[str]:
    """The terminal summary: per result and group, success ± SE, CI, pass^k and gates."""
    lines: list[str] = []
    for res in results:
        lines.append(f"{res.nodeid}  {res.source}")
        for g in res.metrics.get("groups", []):
            labels = visible(
                ", ".join(
                    f"{key}={g[key]}"
                    for key in ("agent", "model", "variant")
                    if g.get(key) is not None
                )
            )
            trials = g.get("n_trials")
            tasks = g.get("n_tasks")
            ses = g.get("pass_hat_k_se", {})
            why = g.get("null_reasons") or {}
            pass_hat = "  ".join(
                f"pass^{k} {_task_average(v, ses.get(k), tasks, why.get(f'pass_hat_k.{k}'))}"
                for k, v in sorted(g.get("pass_hat_k", {}).items(), key=lambda kv: int(kv[0]))
            )
            lines.append(
                f"  {labels}: success {_success(g)} "
                f"({_interval(g)}; {_count(tasks, 'task')}, {_count(trials, 'trial')})"
                f"  {pass_hat}"
            )
        for gr in res.gate_results:
            lines.append(f"  {_summary_line(gr)}")
    return lines
