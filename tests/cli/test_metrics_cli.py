from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

import agentgauge.cli.metrics  # noqa: F401  (registers the command on app)
from agentgauge.cli import app, main

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "examples" / "sample_trials.jsonl"


def run(args: list[str], monkeypatch: pytest.MonkeyPatch) -> tuple[int, str, str]:
    """Run the real console entry point, capturing exit code, stdout and stderr."""
    import sys
    from io import StringIO

    out, err = StringIO(), StringIO()
    monkeypatch.setattr(sys, "argv", ["agentgauge", *args])
    monkeypatch.setattr(sys, "stdout", out)
    monkeypatch.setattr(sys, "stderr", err)
    code = 0
    try:
        main()
    except SystemExit as exc:
        code = int(exc.code or 0)
    return code, out.getvalue(), err.getvalue()


def test_taubench_end_to_end_reproduces_published_pass_hat_k(
    shared_data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    src = shared_data / "taubench" / "taubench_v1_gpt-4o-airline.json"
    code, _, err = run(["import", "taubench", str(src), "--run-id", "tb"], monkeypatch)
    assert code == 0, err
    code, out, err = run(["metrics", "agentgauge.db:tb", "--k", "1,2,3,4", "--json"], monkeypatch)
    assert code == 0, err
    data = json.loads(out)
    assert data["schema"] == "agentgauge.metrics/1"
    (g,) = data["groups"]
    # tau-bench paper, gpt-4o airline: pass^1..4 = 0.420, 0.273, 0.220, 0.200
    got = [round(g["pass_hat_k"][k], 3) for k in ("1", "2", "3", "4")]
    assert got == [0.420, 0.273, 0.220, 0.200]
    assert (g["n_tasks"], g["n_trials"]) == (50, 200)
    # 50 tasks, no families, 4 trials: under 200 clusters -> Wilson on the effective n
    assert g["success_rate"]["ci_method"] == "wilson_design_effect"
    # tau-bench v1 results carry no agent cost: unknown, never $0
    assert g["cost"]["cost_of_pass"] is None and g["cost"]["missing"] == 200


def test_table_output_for_people(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "140")
    code, out, err = run(["metrics", str(SAMPLE)], monkeypatch)
    assert code == 0, err
    for text in ("careful", "hasty", "success rate", "pass^4", "cost of pass", "95% CI"):
        assert text in out
    assert "Wilson (deff)" in out
    assert "1 infra-error trial counted as failures" in err


def test_json_for_machines_matches_spec(monkeypatch: pytest.MonkeyPatch) -> None:
    code, out, _ = run(["metrics", str(SAMPLE), "--k", "1,2", "--json"], monkeypatch)
    assert code == 0
    data = json.loads(out)
    careful, hasty = data["groups"]
    assert careful["agent"] == "careful" and hasty["model"] == "llama-3.1-8b"
    assert hasty["infra_errors"] == 1 and careful["infra_errors"] == 0
    assert careful["n_clusters"] == 4 and careful["cluster_unit"] == "family"
    assert careful["cost"]["judge_total"] == pytest.approx(40 * 0.0015)
    assert hasty["cost"]["judge_total"] is None
    assert set(careful["pass_hat_k"]) == {"1", "2"}


def test_exclude_infra_errors_flag_warns_with_count(monkeypatch: pytest.MonkeyPatch) -> None:
    _, out, _ = run(["metrics", str(SAMPLE), "--json"], monkeypatch)
    code, out_ex, err = run(
        ["metrics", str(SAMPLE), "--json", "--exclude-infra-errors"], monkeypatch
    )
    assert code == 0
    assert "excluded 1 infra-error trial (of 80)" in err
    base, ex = json.loads(out)["groups"][1], json.loads(out_ex)["groups"][1]
    assert base["n_trials"] == 40 and ex["n_trials"] == 39
    assert ex["success_rate"]["value"] >= base["success_rate"]["value"]
    assert json.loads(out_ex)["warnings"][0].startswith("excluded 1 infra-error trial")


def test_null_reasons_reach_the_json(monkeypatch: pytest.MonkeyPatch) -> None:
    # One group for both agents: each task has 2 × 4 = 8 trials, so k = 8 is defined, 9 is not.
    code, out, _ = run(["metrics", str(SAMPLE), "--k", "8,9", "--json", "--by", ""], monkeypatch)
    assert code == 0
    (g,) = json.loads(out)["groups"]
    assert g["pass_hat_k"]["8"] is not None
    assert g["pass_hat_k"]["9"] is None and g["pass_at_k"]["9"] is None
    reason = g["null_reasons"]["pass_hat_k.9"]
    assert reason == "k=9 exceeds the trials of 10 of 10 tasks (fewest: 8)"
    assert g["agent"] is None  # two agents in one group: no single label


def test_pass_k_of_one_task_says_why_it_has_no_se(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # One task, three trials (pass, fail, fail): pass@1 = 1/3, pass@2 = 1 − C(2,2)/C(3,2)
    # = 2/3, but over one task there is no spread to estimate their SE from; the SEs were
    # null with no reason, while the success rate's SE said "one task".
    src = tmp_path / "one.jsonl"
    rows = [{"task_id": "t", "success": ok, "agent": "a"} for ok in (True, False, False)]
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    code, out, err = run(["metrics", str(src), "--k", "1,2,4", "--json"], monkeypatch)
    assert code == 0, err
    (g,) = json.loads(out)["groups"]
    assert g["pass_at_k"]["2"] == pytest.approx(2 / 3)
    why = "one task: no spread to estimate"
    for name in ("pass_at_k", "pass_hat_k"):
        assert g[f"{name}_se"] == {"1": None, "2": None, "4": None}
        assert g["null_reasons"][f"{name}_se.1"] == g["null_reasons"][f"{name}_se.2"] == why
        # k = 4 has no value at all, and its own reason: no second one for its SE.
        assert f"{name}_se.4" not in g["null_reasons"] and g["null_reasons"][f"{name}.4"]
    code, out, err = run(["metrics", str(src), "--k", "1,2"], monkeypatch)
    assert code == 0, err
    assert "pass_at_k_se.1, pass_at_k_se.2, pass_hat_k_se.1, pass_hat_k_se.2: " + why in out


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--k", "0"], "--k"),
        (["--k", "a,2"], "--k"),
        (["--by", "colour"], "--by"),
    ],
)
def test_bad_options_exit_2_with_one_line(
    args: list[str], needle: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    code, out, err = run(["metrics", str(SAMPLE), *args], monkeypatch)
    assert code == 2 and needle in err and out == ""
    assert "Traceback" not in err


def test_bad_source_exits_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    code, _, err = run(["metrics", str(tmp_path / "missing.jsonl")], monkeypatch)
    assert code == 2 and "SOURCE" in err
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"task_id": "a", "success": true}\n{"task_id": "b", "succes": true}\n')
    code, _, err = run(["metrics", str(bad)], monkeypatch)
    assert code == 2 and f"{bad}:2" in err


def test_metrics_does_not_write_to_the_store(
    shared_data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "s.db"
    src = shared_data / "taubench" / "taubench_v1_gpt-4o-airline.json"
    assert (
        run(["import", "taubench", str(src), "--store", str(db), "--run-id", "r"], monkeypatch)[0]
        == 0
    )
    before = sqlite3.connect(db).execute("SELECT count(*) FROM trials").fetchone()
    assert run(["metrics", f"{db}:r", "--json"], monkeypatch)[0] == 0
    assert sqlite3.connect(db).execute("SELECT count(*) FROM trials").fetchone() == before


def test_cli_runner_smoke() -> None:
    # The typer app itself, as other tools embed it.
    result = CliRunner().invoke(app, ["metrics", str(SAMPLE), "--json", "--k", "1"])
    assert result.exit_code == 0
    assert json.loads(result.stdout)["k"] == [1]


def test_many_groups_render_one_row_each(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "160")
    code, out, err = run(["metrics", str(SAMPLE), "--by", "agent,capability"], monkeypatch)
    assert code == 0, err
    assert "careful / refunds" in out and "hasty / orders" in out
    # one family per capability here: no interval, and the reason is printed once
    assert out.count("fewer than 2 clusters") == 1 and "(8 groups)" in out


def test_every_asked_for_k_is_in_the_table_with_many_groups(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Five variants make the one-row-per-group layout; --k 1,2,4 must show all six figures.
    path = tmp_path / "variants.jsonl"
    lines = []
    for variant in ("base", "paraphrase:1", "paraphrase:2", "fault:tool_error", "env:x"):
        for task in ("a", "b", "c"):
            for trial in range(4):
                success = (trial + len(task) + len(variant)) % 3 != 0
                lines.append(
                    json.dumps(
                        {"task_id": task, "trial": trial, "variant": variant, "success": success}
                    )
                )
    path.write_text("\n".join(lines) + "\n")
    code, out, err = run(["metrics", str(path), "--k", "1,2,4"], monkeypatch)
    assert code == 0, err
    for header in ("pass@1", "pass@2", "pass@4", "pass^1", "pass^2", "pass^4"):
        assert header in out, out
    assert "…" not in out, out


def test_the_api_takes_one_grouping_key_as_itself() -> None:
    # by="agent" was read as the letters of the string: "cannot group by 'a'".
    from pathlib import Path

    import agentgauge

    sample = Path(__file__).resolve().parents[2] / "examples" / "sample_trials.jsonl"
    one = agentgauge.metrics(sample, by="agent").to_dict()
    listed = agentgauge.metrics(sample, by=["agent"]).to_dict()
    assert one == listed
    assert sorted(g["agent"] for g in one["groups"]) == ["careful", "hasty"]
    assert agentgauge.metrics(sample, by="").to_dict()["groups"][0]["n_trials"] == sum(
        g["n_trials"] for g in one["groups"]
    )
    gates = sample.parent / "gates.yaml"
    if gates.exists():
        results = agentgauge.run_gates(str(sample), gates, by="agent", if_no_baseline="skip")
        assert any(r.checked for r in results)
