"""The Python twins (`agentgauge.api`, ``agentgauge.run``) refuse what their commands
refuse, in the same one line naming the option: the CLI holds no logic of its own, so a
check made only by its parser let the twin run on (or fail deep inside with a bare
ValueError or TypeError)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import agentgauge
from agentgauge import api
from agentgauge.errors import InputError
from agentgauge.report.gates import GateConfig

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two stored runs of the built-in retail suite: ``careful`` and ``hasty``."""
    db = tmp_path_factory.mktemp("api") / "s.db"
    for agent in ("careful", "hasty"):
        agentgauge.run("builtin:retail", f"builtin:{agent}", trials=2, store=db, run_id=agent,
                       progress=False)  # fmt: skip
    return db


@pytest.fixture(scope="module")
def labels(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("labels") / "labels.jsonl"
    rows = [
        {"task_id": f"t{i}", "trial": 0, "criterion": "c", "rater": rater, "label": label}
        for i in range(6)
        for rater, label in (("judge", "pass" if i % 2 else "fail"), ("ana", "pass"))
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def refused(call: Any, message: str) -> None:
    with pytest.raises(InputError) as caught:
        call()
    assert str(caught.value) == message


def test_options_the_cli_parser_checks_are_checked_by_the_twins(store: Path, labels: Path) -> None:
    src = f"{store}:careful"
    seed = "--seed: must be a whole number >= 0, got -1"
    keys = "agent, model, variant, capability, split, family"
    by = f"--by: cannot group by 'agentt'; choose from {keys}"
    gates = ROOT / "examples" / "gates.yaml"
    for call, message in [
        (lambda: agentgauge.metrics(src, by="agentt"), by),
        (lambda: agentgauge.metrics(src, k=0), "--k: expected positive integers like 1,2,4, got 0"),
        (lambda: agentgauge.metrics(src, k=[]), "--k: give at least one k, like 1,2,4"),
        (lambda: agentgauge.metrics(src, k=""), "--k: give at least one k, like 1,2,4"),
        (
            lambda: agentgauge.metrics(src, k="1,x"),
            "--k: expected positive integers like 1,2,4, got 'x'",
        ),
        (
            lambda: agentgauge.metrics(src, k="1,-2"),
            "--k: expected positive integers like 1,2,4, got -2",
        ),
        (lambda: agentgauge.horizon(src, by="agentt"), by),
        (lambda: agentgauge.metrics(src, seed=-1), seed),
        (lambda: agentgauge.horizon(src, seed=-1), seed),
        (lambda: api.run_gates(src, gates, by="agentt"), by),
        (
            lambda: api.compare_sources(src, f"{store}:hasty", deployment_k=0),
            "--k: must be a whole number >= 1, got 0",
        ),
        (
            lambda: api.calibrate(labels, n_boot=-5),
            "--bootstrap: must be a whole number >= 0, got -5",
        ),
        (lambda: api.calibrate(labels, seed=-1), seed),
    ]:
        refused(call, message)


def test_a_bare_string_where_a_list_goes_is_one_item(store: Path, labels: Path) -> None:
    # Each was iterated by character: "unknown grader(s) s, t, a, t, e", "rater(s) a, n
    # have no labels", "n: SOURCE: no such file".
    assert agentgauge.regrade(f"{store}:careful", "state").graders == ["state"]
    one = api.calibrate(labels, against="ana", n_boot=0)
    assert one == api.calibrate(labels, against=["ana"], n_boot=0)
    src, base = f"{store}:hasty", f"{store}:careful"
    result = api.compare_sources(base, src, baselines=f"previous={base}")
    assert "previous" in result.baselines


def test_compare_names_the_option_or_the_side_that_is_wrong(store: Path, cli: Any) -> None:
    # Every refusal was put on B: "B: margin must be ...", and for an empty list as A
    # "B: A and s.db:hasty have no task in common".
    a, b = f"{store}:careful", f"{store}:hasty"
    margin = "--margin: must be a rate difference from 0 to 1, e.g. 0.02, got "
    for call, message in [
        (lambda: agentgauge.compare(a, b, margin=5), margin + "5"),
        (lambda: agentgauge.compare(a, b, margin=float("nan")), margin + "nan"),
        (lambda: agentgauge.compare(a, b, margin="0.1"), "--margin: must be a number, got '0.1'"),
        (lambda: agentgauge.compare(a, b, alpha=2), "--alpha: must be in (0, 1), got 2"),
        (lambda: agentgauge.compare(a, b, seed=-1), "--seed: must be a whole number >= 0, got -1"),
        (lambda: agentgauge.compare([], b), "A: no trials to compare"),
        (lambda: agentgauge.compare(a, []), "B: no trials to compare"),
    ]:
        refused(call, message)
    # The command says the same, from the same check.
    code, _, err = cli("compare", a, b, "--margin", "5")
    assert code == 2 and err.strip() == f"agentgauge: error: {margin}5"


def test_a_source_may_be_a_path(store: Path, tmp_path: Path) -> None:
    # Each raised "TypeError: argument of type 'PosixPath' is not iterable".
    from agentgauge.exporters import export_parquet, export_run

    src = Path(f"{store}:careful")
    gates = ROOT / "examples" / "gates.yaml"
    assert api.run_gates(src, gates, if_no_baseline="skip")
    assert export_run(src, "jsonl", tmp_path / "x.jsonl").trials > 0
    assert export_parquet(src, tmp_path / "pq").trials > 0
    assert api.grade_versions(src)[0].version == 1
    assert api.compare_sources(src, Path(f"{store}:hasty")).comparison.label_a == str(src)


def test_run_gates_refuses_trials_in_one_line(store: Path) -> None:
    # A list of trials as SOURCE: "TypeError: expected str, bytes or os.PathLike object".
    from agentgauge.sources import load_trials

    trials = load_trials(f"{store}:careful")
    gates = ROOT / "examples" / "gates.yaml"
    refused(
        lambda: api.run_gates(trials, gates, baseline=f"{store}:hasty"),  # type: ignore[arg-type]
        "SOURCE: expected a SOURCE (a path or DB:RUN_ID, as a str or pathlib.Path), got list",
    )


def test_run_gates_takes_a_config_in_dict_form(store: Path) -> None:
    # A dict was read as a path: "TypeError: expected str, bytes or os.PathLike object,
    # not dict" (None and a number alike), where check_gates in pytest takes one.
    src = f"{store}:careful"
    config = {"gates": [{"metric": "success_rate", "min": 0.0}]}
    [result] = api.run_gates(src, config)
    assert result.passed and result.gate == "success_rate >= 0"
    assert result == api.run_gates(src, GateConfig.model_validate(config))[0]
    refused(
        lambda: api.run_gates(src, {"gates": [{"metric": "success_rate", "mn": 0.5}]}),
        "<gates>: gates.0.mn: unknown key",
    )
    expected = "--config: expected a gates file (a path), its dict form or a GateConfig"
    refused(lambda: api.run_gates(src, None), f"{expected}, got NoneType")  # type: ignore[arg-type]
    refused(lambda: api.run_gates(src, 3), f"{expected}, got int")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("kwargs", "field", "said"),
    [
        ({"baseline": 0.8, "delta": 0.03, "trials": 2.5}, "--trials", "got 2.5"),
        ({"baseline": 0.8, "tasks": True}, "--tasks", "got True"),
        ({"baseline": "0.8", "delta": 0.03}, "--baseline", "must be a number, got '0.8'"),
        ({"baseline": 0.8, "delta": "0.03"}, "--delta", "must be a number"),
        ({"baseline": 0.8, "delta": 0.03, "power": None}, "--power", "must be a number"),
    ],
)
def test_plan_checks_types_as_its_command_does(
    kwargs: dict[str, Any], field: str, said: str
) -> None:
    # trials=2.5 planned for two and a half trials a task; tasks=True printed "True
    # task"; baseline="0.8" was a TypeError from a comparison deep inside.
    with pytest.raises(InputError) as caught:
        agentgauge.plan(**kwargs)
    assert caught.value.field == field and said in str(caught.value)


def test_a_grade_version_that_is_no_whole_number_is_named(store: Path) -> None:
    # "1" was looked up as text: "run 'careful' has no grade version 1 (it has 1)".
    for version in ("1", 1.0, True):
        with pytest.raises(InputError) as caught:
            agentgauge.metrics(f"{store}:careful", grade_version=version)  # type: ignore[arg-type]
        assert caught.value.field == "grade_version"
        assert f"must be a whole number >= 1, got {version!r}" in str(caught.value)
    assert agentgauge.metrics(f"{store}:careful", grade_version=1).groups


@pytest.mark.parametrize("version", [0, -1])
def test_a_grade_version_below_1_is_one_check_named_as_the_caller_typed_it(
    store: Path, tmp_path: Path, cli: Any, version: int
) -> None:
    # Python said "run 'careful' has no grade version -1 (it has 1)" where the command
    # said "Invalid value for '--grade-version': Input should be greater than or equal
    # to 1"; a trials file took -1 without a word.
    said = f"must be a whole number >= 1, got {version}"
    jsonl = tmp_path / "t.jsonl"
    jsonl.write_text('{"task_id": "t", "success": true}\n')
    for source in (f"{store}:careful", str(jsonl)):
        refused(
            lambda s=source: agentgauge.metrics(s, grade_version=version), f"grade_version: {said}"
        )
        code, out, err = cli("metrics", source, "--grade-version", str(version))
        assert (code, out, err) == (2, "", f"agentgauge: error: --grade-version: {said}\n")
    code, _, err = cli("grade", f"{store}:careful", "--activate-version", str(version))
    assert code == 2 and f"--activate-version: {said}" in err
    code, _, err = cli(
        "export",
        f"{store}:careful",
        "--grade-version",
        str(version),
        "--jsonl",
        str(tmp_path / "x.jsonl"),
    )
    assert code == 2 and f"--grade-version: {said}" in err
    with pytest.raises(InputError) as caught:
        api.activate_grade_version(f"{store}:careful", version)
    assert caught.value.field == "grade_version" and said in str(caught.value)


def test_compare_gives_the_verdict_the_command_prints(store: Path) -> None:
    # The twin said "B is worse" where `agentgauge compare --json` said "B is worse;
    # not attributable: model and agent version both changed".
    a, b = f"{store}:careful", f"{store}:hasty"
    twin = agentgauge.compare(a, b).verdict
    assert twin == api.compare_sources(a, b).comparison.verdict
    assert "not attributable" in twin


def test_k_as_text_is_split_as_the_cli_splits_it(store: Path) -> None:
    """``k="1,2,4"`` was refused ("got '1,2,4'") although ``--k 1,2,4`` is the CLI's."""
    src = f"{store}:careful"
    as_text = agentgauge.metrics(src, k="1, 2,4").to_dict()
    assert as_text == agentgauge.metrics(src, k=[1, 2, 4]).to_dict()


def test_by_as_text_is_split_as_the_cli_splits_it(store: Path) -> None:
    """``by="agent,model"`` was refused ("cannot group by 'agent,model'") although
    ``--by agent,model`` is the CLI's; one key stays one key, ``""`` one group."""
    src = f"{store}:careful"
    gates = ROOT / "examples" / "gates.yaml"
    as_text = api.run_gates(src, gates, by=" agent, model", if_no_baseline="skip")
    assert as_text == api.run_gates(src, gates, by=["agent", "model"], if_no_baseline="skip")
    for text, keys in [("agent,model", ["agent", "model"]), ("agent", ["agent"]), ("", [])]:
        assert (
            agentgauge.metrics(src, by=text).to_dict() == agentgauge.metrics(src, by=keys).to_dict()
        )
    assert api.check_by("agent,model") == ("agent", "model") and api.check_by("") == ()


def _timed_trials() -> list[Any]:
    """Two agents on eight tasks of 1 to 128 minutes, the longer ones failed more."""
    from agentgauge.schema import Trial

    return [
        Trial(task_id=f"t{i}", trial=k, agent=agent, success=(i + k) % 8 < 8 - i // 2 - shift,
              human_minutes=float(2**i), variant="base" if k < 2 else "paraphrase:1")
        for agent, shift in (("a", 0), ("b", 2))
        for i in range(8)
        for k in range(3)
    ]  # fmt: skip


def test_horizon_reads_text_as_its_command_does() -> None:
    """``q="0.5,0.8"`` was read character by character ("could not convert string to
    float: '.'"), ``regularization="1"`` was a TypeError deep in the fit, and
    ``variants="base,paraphrase"`` was one variant of that name; each is split at its
    commas, or refused naming the option, as ``--q``, ``--regularization`` and
    ``--variants`` are."""
    trials = _timed_trials()
    as_list = agentgauge.horizon(trials, q=[0.5, 0.8], bootstrap=20).to_dict()
    assert agentgauge.horizon(trials, q=" 0.5, 0.8", bootstrap=20).to_dict() == as_list
    assert agentgauge.horizon(trials, q="0.5", bootstrap=20).q == (0.5,)
    pooled = agentgauge.horizon(trials, variants="base,paraphrase", bootstrap=20)
    pooled_all = agentgauge.horizon(trials, variants="all", bootstrap=20)
    assert pooled.to_dict()["groups"] == pooled_all.to_dict()["groups"]
    assert pooled.scope == "variants base, paraphrase"
    assert pooled.variants == ["base", "paraphrase:1"]
    for kwargs, message in [
        ({"q": "0.5,x"}, "--q: not a number: 'x'"),
        ({"q": "0.5,1.5"}, "--q: each q must lie strictly between 0 and 1, got 1.5"),
        ({"q": 1.5}, "--q: each q must lie strictly between 0 and 1, got 1.5"),
        ({"q": [0.5, True]}, "--q: must be a number, got True"),
        ({"q": ""}, "--q: give at least one q, e.g. --q 0.5,0.8"),
        ({"q": []}, "--q: give at least one q, e.g. --q 0.5,0.8"),
        ({"regularization": "1"}, "--regularization: must be a number, got '1'"),
        ({"variants": ","}, "--variants: give a variant, a kind of variant or all"),
    ]:
        refused(lambda kwargs=kwargs: agentgauge.horizon(trials, bootstrap=0, **kwargs), message)


def test_a_single_k_that_is_no_whole_number_is_named() -> None:
    """``k=2.0`` was "'float' object is not iterable"."""
    refused(
        lambda: agentgauge.metrics([], k=2.0), "--k: expected positive integers like 1,2,4, got 2.0"
    )


def test_the_subpackages_the_docs_name_are_attributes_after_import_agentgauge() -> None:
    """README names ``agentgauge.graders.ast_match`` beside ``agentgauge.load_trials``,
    and the docs ``agentgauge.api.compare_sources``, ``agentgauge.store.Store``...; after
    ``import agentgauge`` alone each was "module 'agentgauge' has no attribute
    'graders'". They load on first use, so importing agentgauge still loads none."""
    import subprocess
    import sys

    code = """
import sys, agentgauge
assert "agentgauge.graders" not in sys.modules and "agentgauge.api" not in sys.modules
print(agentgauge.graders.ast_match.__name__, agentgauge.api.compare_sources.__name__,
      agentgauge.store.Store.__name__, agentgauge.exporters.export_run.__name__)
for name in ("nothing", "_private", "__wrapped__"):
    assert not hasattr(agentgauge, name), name
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["ast_match", "compare_sources", "Store", "export_run"]


def test_regrade_refuses_an_empty_list_of_graders_as_grade_does(
    store: Path, tmp_path: Path
) -> None:
    """``regrade(src, [])`` re-graded with the default graders and stored a grade
    version nobody asked for, where ``grade --graders ''`` is refused; ``regrade(src,
    "")`` said ``graders: unknown grader(s) ; known: ...``. Text is split at its commas
    as ``--graders`` is, and a misspelt grader names ``--graders``."""
    import shutil

    db = tmp_path / "s.db"
    shutil.copy(store, db)
    src = f"{db}:careful"
    before = [v.version for v in api.grade_versions(src)]
    empty = "--graders: names no grader; leave --graders out for each task's enabled code graders"
    for graders in ([], (), "", " , "):
        refused(lambda graders=graders: agentgauge.regrade(src, graders), empty)
    with pytest.raises(InputError) as caught:
        agentgauge.regrade(src, ["stat"])
    assert str(caught.value).startswith("--graders: unknown grader(s) stat; known: answer,")
    assert [v.version for v in api.grade_versions(src)] == before  # nothing written
    assert agentgauge.regrade(src, "state, answer").graders == ["state", "answer"]


def test_a_plan_pilot_is_a_source_as_text(store: Path) -> None:
    """A ``pathlib.Path`` pilot made a plan whose ``to_dict()`` held the Path, so the
    ``agentgauge.plan/1`` object was no JSON; a list of trials was named by its whole
    repr in each message about it."""
    from agentgauge.sources import load_trials

    as_path = agentgauge.plan(pilot=Path(f"{store}:careful"), delta=0.1).to_dict()
    assert as_path == agentgauge.plan(pilot=f"{store}:careful", delta=0.1).to_dict()
    assert json.loads(json.dumps(as_path))["pilot"] == f"{store}:careful"
    trials = load_trials(f"{store}:careful")
    for kwargs, option in [({"pilot": trials}, "--pilot"), ({"pilot_b": trials}, "--pilot-b")]:
        refused(
            lambda kwargs=kwargs: agentgauge.plan(delta=0.1, **{"pilot": str(store), **kwargs}),
            f"{option}: expected a SOURCE (a path or DB:RUN_ID, as a str or pathlib.Path), "
            "got list",
        )


def test_a_trial_twice_in_a_list_is_refused_not_counted_twice(store: Path) -> None:
    """``metrics(trials + trials)`` read each trial as two attempts: 236 trials of 59
    tasks, pass^2 0.195 where the run's is 0.153, and a pass^4 from two trials a task;
    ``compare(t, t + t)`` compared "2 (A) / 4 (B) trials". A JSONL file with a line
    twice is refused, and so is a glob of two runs of one configuration."""
    from agentgauge.schema import Trial
    from agentgauge.sources import load_trials

    trials = load_trials(f"{store}:hasty")
    first = trials[0]
    twice = (
        f"duplicate trial 0 of task {first.task_id!r} for agent 'builtin:hasty', model not "
        f"recorded, variant 'base' (items 0 and {len(trials)} of the list): counted twice, "
        "it reads as two attempts. Keep one; two runs of one configuration are two SOURCEs "
        "to compare, not one list"
    )
    refused(lambda: agentgauge.metrics(trials + trials), f"trials: {twice}")
    refused(lambda: agentgauge.compare(trials, trials + trials), f"B: {twice}")
    refused(lambda: agentgauge.horizon(trials + trials), f"trials: {twice}")
    refused(
        lambda: agentgauge.metrics([{"task_id": "t", "success": True}]),  # type: ignore[list-item]
        "trials: item 0 is a dict, not a Trial: build each with agentgauge.Trial(...), or "
        "give the file's path as a SOURCE",
    )
    # Trials without an index are each an attempt, as a file's lines without one are.
    unnumbered = [Trial(task_id="t", success=ok) for ok in (True, False, True)]
    assert agentgauge.metrics(unnumbered).groups[0].outcome.n_trials == 3
    assert agentgauge.metrics(trials).to_dict() == agentgauge.metrics(f"{store}:hasty").to_dict()
