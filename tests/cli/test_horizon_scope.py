"""``agentgauge horizon`` fits the base variant by default, as the report's "Time horizon
— base variant" does, and says so; ``--variants`` picks others. It once pooled every
variant of a run (a fault variant that fails every trial pulled p50 down) and printed
no scope, so the terminal and the report gave two numbers for one run.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.conftest import Cli

import agentgauge
from agentgauge.report.build import _horizon, _systems
from agentgauge.report.scope import SOME_BASE, base_trials
from agentgauge.sources import load_trials
from agentgauge.table import TrialTable


@pytest.fixture
def trials_file(tmp_path: Path) -> Path:
    """One agent: on the base variant it succeeds below 8 minutes (half the time at 8);
    under ``fault:timeout`` it fails every task."""
    lines = []
    for variant in ("base", "fault:timeout"):
        for minutes in (1.0, 2.0, 4.0, 8.0, 16.0):
            for k in range(4):
                ok = variant == "base" and (minutes < 8 or (minutes == 8 and k < 2))
                lines.append(
                    {
                        "task_id": f"t{minutes:g}",
                        "family": f"f{minutes:g}",
                        "agent": "good",
                        "variant": variant,
                        "human_minutes": minutes,
                        "success": ok,
                    }
                )
    path = tmp_path / "trials.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in lines))
    return path


def _fit(cli: Cli, *args: str) -> dict:  # type: ignore[type-arg]
    code, out, err = cli("horizon", *args, "--bootstrap", "0", "--json")
    assert code == 0, err
    return json.loads(out)  # type: ignore[no-any-return]


def test_the_default_is_the_base_variant_as_in_the_report(cli: Cli, trials_file: Path) -> None:
    out = _fit(cli, str(trials_file))
    assert out["scope"] == "base variant"
    assert out["variants"] == ["base"]
    (group,) = out["groups"]
    assert group["n_runs"] == 20
    assert group["p50_minutes"] == pytest.approx(8.0, rel=1e-3)
    # The report's horizon of the same trials: the same fit, the same number.
    trials = load_trials(trials_file)
    base, scope = base_trials(trials)
    table = TrialTable.from_trials(base)
    (in_report,), note = _horizon(table, _systems(table)[1], 0)
    assert (scope, note) == ("base variant", None)
    assert in_report["horizons"]["0.5"] == pytest.approx(group["p50_minutes"], rel=1e-9)


def test_all_variants_pool_and_say_so(cli: Cli, trials_file: Path) -> None:
    out = _fit(cli, str(trials_file), "--variants", "all")
    assert out["scope"] == "all variants"
    assert out["variants"] == ["base", "fault:timeout"]
    (group,) = out["groups"]
    assert group["n_runs"] == 40
    assert group["p50_minutes"] < 8.0  # the failing fault variant pulls it down


def test_a_kind_of_variant_is_read_as_run_and_show_read_it(cli: Cli, trials_file: Path) -> None:
    out = _fit(cli, str(trials_file), "--variants", "fault", "--by", "agent,variant")
    assert out["scope"] == "variant fault"
    assert [g["n_runs"] for g in out["groups"]] == [20]


def test_the_table_is_titled_with_its_scope(cli: Cli, trials_file: Path) -> None:
    code, out, err = cli("horizon", str(trials_file), "--bootstrap", "0")
    assert code == 0, err
    assert "Time horizon in human minutes — base variant" in out
    code, out, err = cli("horizon", str(trials_file), "--bootstrap", "0", "--variants", "all")
    assert "Time horizon in human minutes — all variants" in out


def test_a_variant_the_trials_lack_is_one_line_exit_2(cli: Cli, trials_file: Path) -> None:
    code, out, err = cli("horizon", str(trials_file), "--variants", "paraphrase")
    assert (code, out) == (2, "")
    assert err == (
        "agentgauge: error: --variants: no trials of variant paraphrase "
        "(the trials have: base, fault:timeout)\n"
    )


def test_without_a_base_variant_every_trial_is_fitted_and_titled_so(tmp_path: Path) -> None:
    trials = load_trials_of(tmp_path, variant="paraphrase:1")
    report = agentgauge.horizon(trials, bootstrap=0)
    assert report.scope == "all variants: no base variant in the data"
    assert report.groups[0].n_runs == 5


def load_trials_of(tmp_path: Path, *, variant: str) -> list[agentgauge.Trial]:
    path = tmp_path / "v.jsonl"
    path.write_text(
        "".join(
            json.dumps(
                {"task_id": f"t{m}", "variant": variant, "human_minutes": m, "success": m < 4}
            )
            + "\n"
            for m in (1, 2, 4, 8, 16)
        )
    )
    return load_trials(path)


def test_a_system_without_base_trials_is_fitted_on_all_of_them(tmp_path: Path) -> None:
    """The default is each system's base variant, as the report's: a source holding a
    system with base trials and one run on paraphrases only once dropped the second
    from the fit (its trials were not ``base``, and another system's were)."""
    rows = [
        {
            "task_id": f"t{m}",
            "agent": agent,
            "variant": variant,
            "human_minutes": m,
            "success": m < 4,
        }
        for agent, variants in (("a", ("base", "fault:timeout")), ("b", ("paraphrase:1",)))
        for variant in variants
        for m in (1, 2, 4, 8, 16)
    ]
    path = tmp_path / "two.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    report = agentgauge.horizon(load_trials(path), bootstrap=0)
    assert report.scope == SOME_BASE
    assert {g.labels["agent"]: g.n_runs for g in report.groups} == {"a": 5, "b": 5}
    assert report.variants == ["base", "paraphrase:1"]


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("--by", "agentt"), "agentgauge: error: --by: cannot group by 'agentt'; choose from "),
        (
            ("--regularization", "0"),
            "agentgauge: error: --regularization: regularization (C) must be a positive "
            "number, got 0.0",
        ),
    ],
)
def test_a_bad_option_is_named_as_the_option(
    cli: Cli, trials_file: Path, args: tuple[str, ...], said: str
) -> None:
    """They were named as the fit's parameters (``by:``, ``regularization:``)."""
    code, out, err = cli("horizon", str(trials_file), *args)
    assert (code, out) == (2, "")
    assert err.startswith(said)
